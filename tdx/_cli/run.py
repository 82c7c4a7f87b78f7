"""``python -m tdx run [--device DEV] script.py [args...]`` and ``python -m tdx run -m module [args...]``.

Runs an unmodified PyTorch program as ``__main__`` (through :mod:`runpy`) with its own
``sys.argv``, ``__file__``, ``sys.path[0]`` and exit code, with the torch import alias active
(:mod:`tdx.aliasing.torch_alias`: every ``torch.*`` import of the program is tdx's) and, when a
device is given, every tensor pinned to it (:func:`tdx.backends.pin`). The device comes from
``--device``, else the ``TDX_RUN_DEVICE`` environment variable, else ``[run] device`` in the
config; with none, devices resolve as the config says. Children started with multiprocessing's
``spawn``/``forkserver`` and pytest-xdist's workers (``-m pytest -n N``) run under the alias and the
pin too (:mod:`tdx.aliasing.inherit`). A program's uncaught exception prints
the traceback Python would print for ``python script.py`` (the runner's own frames left out)
and exits 1.

This module must never import a framework itself, and never changes what the program sees
beyond the alias and the pin.
"""

from __future__ import annotations

import builtins
import os
import runpy
import sys
import types
import zipfile

USAGE = """usage: python -m tdx run [--device DEV] script.py [args ...]
       python -m tdx run [--device DEV] -m package.module [args ...]

Run an unmodified PyTorch program on tdx: every `import torch...` it makes resolves to tdx.

options:
  --device DEV   put every tensor the program creates or moves on DEV (cpu, cuda, cuda:N, mps,
                 mlx, mlx:gpu, mlx:cpu), whatever device the program names; default: the
                 TDX_RUN_DEVICE environment variable, else [run] device in the config, else none
  -m MODULE      run a module as `python -m MODULE` would
  -h, --help     show this help
"""


class UsageError(Exception):
    """A bad command line (reported with the usage, exit status 2)."""


def parse(argv: list) -> tuple:
    """``(device or None, target, is_module, program args)`` from the arguments after ``run``.

    Raises:
        UsageError: no program named, or an option without its value.
    """
    device, i = None, 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-h", "--help"):
            raise SystemExit(_help())
        if arg == "--device" or arg.startswith("--device="):
            if "=" in arg:
                device = arg.partition("=")[2]
            elif i + 1 < len(argv):
                i += 1
                device = argv[i]
            else:
                raise UsageError("--device needs a device, e.g. --device mlx:cpu")
            i += 1
            continue
        if arg == "-m" or (arg.startswith("-m") and len(arg) > 2):
            module = arg[2:] or (argv[i + 1] if i + 1 < len(argv) else None)
            if not module:
                raise UsageError("-m needs a module name")
            rest = argv[i + (1 if arg[2:] else 2):]
            return device, module, True, rest
        if arg == "--":
            i += 1
            if i >= len(argv):
                break
            return device, argv[i], False, argv[i + 1:]
        if arg.startswith("-"):
            raise UsageError(f"unknown option {arg!r} before the program; options: --device DEV, -m MODULE")
        return device, arg, False, argv[i + 1:]
    raise UsageError("no program given: name a script (script.py) or a module (-m package.module)")


def _help() -> int:
    sys.stdout.write(USAGE)
    return 0


def pin_source(device):
    """``(device, where it came from)`` of the run's pin, or ``(None, None)`` when there is none.

    Raises:
        ConfigError: ``--device``, ``TDX_RUN_DEVICE`` or ``[run] device`` holds a bad value.
    """
    from .. import config
    from .._errors import ConfigError

    if device is not None:
        err = config._check_device(device)
        if err:
            raise ConfigError(f"--device has bad value {device!r}: {err}")
        return device, "--device"
    cfg = config.current()
    value = cfg["run.device"]
    if value is None:
        return None, None
    origin = cfg.origin["run.device"]
    return value, origin if origin == "TDX_RUN_DEVICE" else f"[run] device in {origin}"


def _program_traceback(tb, filename):
    """``tb`` from the first frame of the program on (the runner's and runpy's frames left out)."""
    start = tb
    while start is not None and start.tb_frame.f_code.co_filename != filename:
        start = start.tb_next
    return start or tb


def _run_file(filename: str) -> None:
    """Execute a script as ``python script.py`` does: a fresh ``__main__`` with an absolute ``__file__``.

    (``runpy.run_path`` would also rewrite ``sys.argv[0]`` to the path; Python keeps it as typed.)
    """
    with open(filename, "rb") as fh:
        code = compile(fh.read(), filename, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=filename, __cached__=None, __loader__=None, __package__=None,
                         __spec__=None, __builtins__=builtins)
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


def tdx_cause(err: BaseException):
    """The deepest tdx refusal (``NotProvidedError``, ``UnsupportedOpError``) in ``err``'s chain, or None.

    Libraries re-raise import failures as their own errors (transformers: "Could not import module
    'GPT2LMHeadModel'"), which buries the torch name tdx lacks under chained tracebacks.
    """
    from .._errors import NotProvidedError, UnsupportedOpError

    found, seen = None, set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, (NotProvidedError, UnsupportedOpError)):
            found = err
        err = err.__cause__ or err.__context__
    return found


def run(target: str, is_module: bool, args: list, device=None) -> int:
    """Run the program with the torch alias on (and the pin, when a device is known); its exit status.

    Args:
        target: the script path, or the module name when ``is_module``.
        is_module: run ``target`` as ``python -m target`` would.
        args: the program's own arguments (``sys.argv[1:]``).
        device: the ``--device`` value, or None to take the environment's or config's.
    """
    from .. import backends
    from ..aliasing import inherit, torch_alias

    dev, source = pin_source(device)
    if is_module:
        import importlib.util

        spec = importlib.util.find_spec(target)
        if spec is None:
            sys.stderr.write(f"{sys.executable}: No module named {target}\n")
            return 1
        filename = spec.origin
        sys.argv = [filename or target, *args]
        sys.path[0] = os.getcwd()
    else:
        if not os.path.exists(target):
            sys.stderr.write(f"{sys.executable}: can't open file {os.path.abspath(target)!r}: "
                             "[Errno 2] No such file or directory\n")
            return 2
        filename = os.path.abspath(target)
        sys.argv = [target, *args]
        sys.path[0] = os.path.dirname(filename)
    if dev is not None:
        backends.pin(dev, source)
    torch_alias.activate()
    exported = inherit.export()  # pytest-xdist's workers, started with ``python -c``, adopt it
    try:
        if is_module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        elif os.path.isfile(filename) and not zipfile.is_zipfile(filename):
            _run_file(filename)
        else:  # a directory or zip archive with a __main__.py
            runpy.run_path(filename, run_name="__main__")
    except SystemExit:
        raise
    except BaseException as err:  # noqa: BLE001 - the program's own exception: print it as Python would
        tb = _program_traceback(err.__traceback__, filename)
        sys.excepthook(type(err), err.with_traceback(tb), tb)
        cause = tdx_cause(err)
        if cause is not None and cause is not err:  # a library wrapped it (transformers' lazy imports do)
            sys.stderr.write(f"\ntdx: the underlying cause: {type(cause).__name__}: {cause}\n")
        return 130 if isinstance(err, KeyboardInterrupt) else 1
    finally:
        inherit.restore(exported)
        torch_alias.deactivate()
        if dev is not None:
            backends.unpin()
    return 0


def main(argv: list) -> int:
    """``python -m tdx run ...``: parse, then :func:`run`; 2 on a bad command line or config."""
    from .._errors import ConfigError, DeviceUnavailableError, InvalidDeviceError

    try:
        device, target, is_module, args = parse(list(argv))
    except UsageError as err:
        sys.stderr.write(f"{USAGE}\npython -m tdx run: error: {err}\n")
        return 2
    try:
        return run(target, is_module, args, device)
    except (ConfigError, DeviceUnavailableError, InvalidDeviceError) as err:
        sys.stderr.write(f"python -m tdx run: {type(err).__name__}: {err}\n")
        return 2
