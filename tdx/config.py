"""Configuration: discovery, validation and precedence of tdx settings.

Precedence, highest first: explicit calls (``tdx.set_default_device``, handled by the
caller) > environment (``TDX_DEVICE`` and ``TDX_RUN_DEVICE``, then the file named by ``TDX_CONFIG``) >
``./tdx.toml`` > ``[tool.tdx]`` of the nearest ``pyproject.toml`` > the user file
(``$XDG_CONFIG_HOME/tdx/config.toml``, default ``~/.config/tdx/config.toml``) > built-in
defaults. Values merge key by key and each remembers its source.

This module reads files and validates; it must never import a framework and never
check device availability (that belongs to ``tdx.backends``).
"""

from __future__ import annotations

import errno
import os
import reprlib
import stat
import sys
import warnings
from pathlib import Path

from ._device import device as _device
from ._errors import ConfigError, InvalidDeviceError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

BUILTIN = "built-in default"
DEFAULT_FALLBACK = ("cuda", "mps", "mlx:gpu", "cpu", "mlx:cpu")
SDPA_KERNELS = ("flash", "efficient", "cudnn", "math", "mlx_fused", "chunked", "bridge")
DEVICE_HELP = "'auto', 'cpu', 'cuda', 'cuda:N', 'mps', 'mlx', 'mlx:gpu', 'mlx:cpu'"


def _check_device(value, allow_auto=False):
    if not isinstance(value, str):
        return f"expected a device string ({DEVICE_HELP})"
    if allow_auto and value == "auto":
        return None
    try:
        _device(value)
    except (InvalidDeviceError, ValueError):
        return f"unknown device; allowed: {DEVICE_HELP if allow_auto else DEVICE_HELP[8:]}"
    return None


def _check_device_list(value):
    if not isinstance(value, list) or not value:
        return f"expected a non-empty list of device strings ({DEVICE_HELP[8:]})"
    for item in value:
        err = _check_device(item)
        if err:
            return f"entry {short(item)}: {err}"
    return None


def _check_device_map(value):
    if not isinstance(value, dict):
        return "expected a table of device = device, e.g. {cuda = \"mlx\"}"
    for k, v in value.items():
        for item in (k, v):
            err = _check_device(item)
            if err:
                return f"entry {short(item)}: {err}"
    return None


def _check_bool(value):
    return None if isinstance(value, bool) else "expected true or false"


MAX_THREADS = 2**31 - 1  # torch.set_num_threads takes a C int


def _check_threads(value):
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_THREADS:
        return f"expected a positive integer, at most {MAX_THREADS} (what torch.set_num_threads takes)"
    return None


def _check_priority(value):
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return f"expected a list of kernel names from {', '.join(SDPA_KERNELS)}"
    bad = [v for v in value if v not in SDPA_KERNELS]
    if bad:
        return f"unknown kernel {short(bad[0])}; allowed: {', '.join(SDPA_KERNELS)}"
    return None


RANDOM_STREAMS = ("torch", "native")
SUMMATION_ORDERS = ("auto", "torch", "native")


def _one_of(allowed: tuple, meaning: str):
    """A check that a value is one of ``allowed``; its error lists them and says what they mean."""
    def check(value):
        if value not in allowed:
            return f"expected one of {', '.join(repr(s) for s in allowed)} ({meaning})"
        return None

    return check


_check_stream = _one_of(RANDOM_STREAMS, "torch: torch's CPU generator's numbers on every executor; native: MLX's "
                                        "own, faster, other numbers")
_check_summation = _one_of(SUMMATION_ORDERS, "torch: float32 sums on MLX's CPU add in torch's order, torch's last "
                                             "bit; native: MLX's own order, faster, may differ in the last bit; "
                                             "auto: torch's while the random stream is torch's, else MLX's")


# dotted key -> (validator, built-in default)
SCHEMA = {
    "default_device": (lambda v: _check_device(v, allow_auto=True), "auto"),
    "device_map": (_check_device_map, {}),
    "fallback": (_check_device_list, list(DEFAULT_FALLBACK)),
    "strict": (_check_bool, False),
    "auto_transfer": (_check_bool, False),
    "attention.priority": (_check_priority, []),
    "backends.torch.allow_tf32": (_check_bool, None),
    "backends.torch.num_threads": (_check_threads, None),
    "backends.mlx.fused_sdpa": (_check_bool, True),
    "backends.mlx.downcast_float64": (_check_bool, False),
    # float32 sums on MLX's CPU: torch's order or MLX's; auto follows random.stream (torch's numbers or MLX's)
    "backends.mlx.summation": (_check_summation, "auto"),
    "run.device": (_check_device, None),  # python -m tdx run: every tensor on this device
    "random.stream": (_check_stream, "torch"),  # whose generator MLX draws from: torch's CPU one or MLX's
}
# environment variable -> (the key it sets, its check), in increasing precedence
_ENVIRONMENT = (("TDX_DEVICE", "default_device", lambda v: _check_device(v, allow_auto=True)),
                ("TDX_RUN_DEVICE", "run.device", _check_device),
                ("TDX_RANDOM_STREAM", "random.stream", _check_stream),
                ("TDX_MLX_SUMMATION", "backends.mlx.summation", _check_summation))
_SECTIONS = {"attention", "backends", "backends.torch", "backends.mlx", "run", "random"}


_SHORT = 80  # characters of a bad value an error message shows


def short(value) -> str:
    """``repr(value)`` cut to about 80 characters, safe for huge or deeply nested values."""
    if isinstance(value, str):
        text = repr(value[:_SHORT + 1])
    else:
        brief = reprlib.Repr()
        brief.maxlevel, brief.maxstring, brief.maxother = 3, _SHORT, _SHORT
        text = brief.repr(value)
    return text if len(text) <= _SHORT else text[:_SHORT] + "..."


def _flatten(table: dict, where: str, prefix: str = "") -> dict:
    """Validate a parsed TOML table and flatten it to dotted keys."""
    out = {}
    for key, value in table.items():
        dotted = f"{prefix}{key}"
        if dotted in SCHEMA:
            err = SCHEMA[dotted][0](value)
            if err:
                raise ConfigError(f"{where}: key '{dotted}' has bad value {short(value)}: {err}")
            out[dotted] = value
        elif dotted in _SECTIONS and isinstance(value, dict):
            out.update(_flatten(value, where, dotted + "."))
        else:
            allowed = sorted(SCHEMA)
            import difflib  # only for this message

            # a key of 200+ characters is never close to one of at most 29 (ratio <= 2*29/229 < 0.6, the cutoff)
            huge = len(dotted) >= 200  # mutate: equivalent (speed only: difflib would find nothing either)
            near = [] if huge else difflib.get_close_matches(dotted, allowed, n=1)
            hint = f" (did you mean '{near[0]}'?)" if near else ""
            raise ConfigError(f"{where}: unknown key {short(dotted)}{hint}; allowed keys: {', '.join(allowed)}")
    return out


def _read_toml(path: Path, where=None) -> dict:
    """Parse ``path``; every failure is a ConfigError naming the file (``where`` if given)."""
    where = where or str(path)
    _check_regular(path, where)
    if os.path.realpath(path) == os.devnull:
        return {}  # TDX_CONFIG=/dev/null: no settings, the usual way to switch a config file off
    try:
        with open(path, "rb") as f:
            data = f.read()
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise ConfigError(f"{where}: not valid UTF-8 (byte {data[e.start]:#04x} at line {line}, "
                          f"offset {e.start}); TOML files are UTF-8") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{where}: not valid TOML: {e}") from None
    except RecursionError:
        raise ConfigError(f"{where}: values are nested too deeply to parse") from None
    except OSError as e:
        raise ConfigError(f"{where}: cannot be read: {e.strerror}") from None


def _check_regular(path: Path, where: str) -> None:
    """Refuse what is there but cannot be a config file: a directory, a dangling link, a link loop."""
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        if os.path.islink(path):
            why = "a symlink loop" if e.errno == errno.ELOOP else f"a symlink to {os.readlink(path)!r}, which does not exist"
            raise ConfigError(f"{where}: is {why}") from None
        raise ConfigError(f"{where}: cannot be read: {e.strerror}") from None
    if stat.S_ISDIR(mode):
        raise ConfigError(f"{where}: is a directory, not a TOML file")
    if not stat.S_ISREG(mode) and os.path.realpath(path) != os.devnull:
        raise ConfigError(f"{where}: is not a regular file (a device, socket or pipe); expected a TOML file")


def _present(path: Path) -> bool:
    """Whether anything (even a dangling symlink) sits at ``path``."""
    return os.path.lexists(path)


def _nearest_pyproject(start: Path):
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _read_pyproject(path: Path) -> dict:
    """The nearest ``pyproject.toml``, parsed; ``{}`` (with a warning) for one that cannot be parsed or
    read and never mentions tdx.

    tdx reads only ``[tool.tdx]`` of that file, which usually belongs to another project (a parent
    folder's): its syntax errors are not tdx's to enforce. A file that mentions ``tdx`` anywhere
    may hold tdx's table, and dropping that silently would run with other settings than written:
    it stays a ConfigError naming the file.
    """
    try:
        return _read_toml(path)
    except ConfigError as err:
        try:
            with open(path, "rb") as f:
                mentions = b"tdx" in f.read()
        except OSError:
            mentions = False  # unreadable: nothing of it can be used either way
        if mentions:
            raise ConfigError(f"{err}; it mentions tdx, so its [tool.tdx] settings cannot be ignored") from None
        warnings.warn(f"tdx ignores {path}: {str(err).removeprefix(str(path) + ': ')} (tdx reads only its "
                      f"[tool.tdx] table, which it does not mention)", UserWarning, stacklevel=3)
        return {}


def _user_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "tdx" / "config.toml"


def sources(cwd=None) -> list:
    """The config layers, lowest precedence first, as ``(source name, flat dict)`` pairs."""
    cwd = Path(cwd or os.getcwd())
    layers = [(BUILTIN, {k: v[1] for k, v in SCHEMA.items()})]
    user = _user_file()
    if _present(user):
        layers.append((str(user), _flatten(_read_toml(user), str(user))))
    pyproject = _nearest_pyproject(cwd)
    if pyproject is not None:
        tool = _read_pyproject(pyproject).get("tool", {})
        if not isinstance(tool, dict):
            raise ConfigError(f"{pyproject}: key 'tool' has bad value {short(tool)}: expected a table")
        table = tool.get("tdx")
        if table is not None:
            where = f"{pyproject} [tool.tdx]"
            if not isinstance(table, dict):
                raise ConfigError(f"{where}: bad value {short(table)}: expected a table")
            layers.append((where, _flatten(table, where)))
    local = cwd / "tdx.toml"
    if _present(local):
        layers.append((str(local), _flatten(_read_toml(local), str(local))))
    env_file = os.environ.get("TDX_CONFIG")
    if env_file:
        path = Path(env_file)
        where = f"{env_file if len(env_file) <= 4096 else short(env_file)} (TDX_CONFIG)"  # PATH_MAX
        if not _present(path):
            raise ConfigError(f"{where}: no such file")
        layers.append((where, _flatten(_read_toml(path, where), where)))
    for var, key, check in _ENVIRONMENT:
        value = os.environ.get(var)
        if value:
            err = check(value)
            if err:
                raise ConfigError(f"environment variable {var} has bad value {short(value)}: {err}")
            layers.append((var, {key: value}))
    return layers


class Config:
    """The effective configuration: each key's value and where it came from."""

    __slots__ = ("values", "origin")

    def __init__(self, layers: list):
        self.values: dict = {}
        self.origin: dict = {}
        for name, flat in layers:
            for key, value in flat.items():
                self.values[key] = value
                self.origin[key] = name

    def __getitem__(self, key: str):
        return self.values[key]

    def items(self):
        return ((k, self.values[k], self.origin[k]) for k in sorted(self.values))


_cache: list = []
_listeners: list = []


def current() -> Config:
    """The effective config, read once and kept until :func:`reload`."""
    if not _cache:
        _cache.append(Config(sources()))
    return _cache[0]


def reload() -> Config:
    """Read every config source again (after changing files or environment)."""
    _cache.clear()
    cfg = current()
    for fn in _listeners:
        fn()
    return cfg


def on_reload(fn) -> None:
    """Register ``fn()`` to run after each :func:`reload` (caches that derive from config)."""
    _listeners.append(fn)
