"""``python -m tdx`` (and the ``tdx`` console script): ``run`` (an unmodified PyTorch program on tdx),
``info`` (devices, versions, config and its sources, interop matrix), ``demo`` (the main job on every
device, checked against an oracle) and ``catalog`` (per-function conformance).

This module must never import a framework at import time; ``info`` must never end in a traceback.
"""

from __future__ import annotations

import argparse
import platform
import sys


def _section(title: str, body) -> bool:
    """Print one section of ``info``; an error is reported in place of it. False when one happened."""
    from ._errors import ConfigError

    try:
        body()
        return True
    except ConfigError as err:
        print(f"{title}: config error: {err}")
    except BrokenPipeError:  # the reader went away (``| head``): nothing more to report to
        raise
    except Exception as err:  # noqa: BLE001 - info reports every failure instead of a traceback
        print(f"{title}: error: {type(err).__name__}: {err}")
    return False


def info(verbose: bool = False) -> int:
    """Print the report; 0, or 1 when a section failed (a bad config, an executor that would not load).

    Args:
        verbose: print the whole DLPack matrix with its reasons; by default only the routes between
            available endpoints, one short line each.
    """
    import tdx
    from . import backends, config

    print(f"tdx {tdx.__version__}  python {platform.python_version()}  {platform.system()} {platform.machine()}")

    def frameworks():
        import numpy

        versions = [f"numpy {numpy.__version__}"]
        for provider in backends.providers().values():
            versions.append(f"{provider.framework} {provider.version() or 'not installed'}")
        print("frameworks: " + ", ".join(versions))
        print(f"cpu capability: {backends.cpu.get_cpu_capability()}")

    def devices():
        print("\ndevices:")
        for row in backends.available():
            state = "available" if row.available else f"unavailable ({row.reason})"
            print(f"  {row.device:<10} {row.provider:<6} {state}")

    def default():
        print(f"default device: {backends.get_default_device()}")
        stream = config.current()["random.stream"]
        torch_ok = any(r.device == "cpu" and r.available and r.provider == "torch" for r in backends.available())
        why = ("torch's CPU generator draws every executor's numbers" if stream == "torch" and torch_ok else
               "torch is not installed: MLX draws from its own generator" if stream == "torch" else
               "MLX draws from its own generator (other numbers than torch's)")
        print(f"random stream: {stream} ({why})")
        order = config.current()["backends.mlx.summation"]
        print(f"MLX float32 sums: {order} (" + ("torch's order of additions where verified against torch on this "
                                                "CPU, torch's last bit"
                                                if order == "torch" else "MLX's own order: faster, may differ from "
                                                "torch's in the last bit") + ")")

    def effective():
        print("\neffective config (value  <- source):")
        for key, value, origin in config.current().items():
            print(f"  {key:<30} {value!r:<40} <- {origin}")

    def matrix():
        from . import interop

        rows = interop.matrix()
        if verbose:
            print("\nDLPack exchange matrix (source -> target):")
            print(interop.format_matrix(rows))
            return
        shown = [r for r in rows if r.mode != "unavailable"]
        print(f"\nDLPack exchange between available endpoints ({len(rows) - len(shown)} routes with an "
              "absent endpoint hidden; --verbose shows every route and why):")
        width = max((len(r.source) for r in shown), default=0)
        for r in shown:
            print(f"  {r.source:<{width}} -> {r.target:<{width}}  {r.mode}")

    ok = [_section(t, f) for t, f in (("frameworks", frameworks), ("devices", devices), ("config", effective),
                                       ("default device", default), ("interop", matrix))]
    return 0 if all(ok) else 1


def _prog() -> str:
    """The program's name as it was invoked: ``tdx`` for the console script, else ``python -m tdx``."""
    import os

    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return "python -m tdx" if name in ("", "__main__.py", "-m", "-c") else name


def _parser() -> argparse.ArgumentParser:
    import tdx

    parser = argparse.ArgumentParser(prog=_prog(), description="tdx command line")
    parser.add_argument("--version", action="version", version=f"tdx {tdx.__version__}")
    sub = parser.add_subparsers(dest="cmd")
    sub.add_parser("run", help="run an unmodified PyTorch program on tdx: run [--device DEV] script.py [args]",
                   add_help=False)
    info_parser = sub.add_parser("info", help="executors, devices, versions, effective config with sources")
    info_parser.add_argument("--verbose", "-v", action="store_true",
                             help="the whole DLPack exchange matrix, every route with its reason")
    sub.add_parser("demo", help="run the main job on every available device, checked against an oracle")
    sub.add_parser("catalog", help="conformance of each torch function per device, as a Markdown table",
                   add_help=False)
    return parser


def main(argv=None) -> int:
    """The command line; returns the exit status (141, as a shell reports SIGPIPE, when the reader of
    the output went away, as ``tdx info | head`` does)."""
    try:
        return _main(argv)
    except BrokenPipeError:
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        return 141


def _main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "run":  # everything after the program name belongs to the program
        from ._cli.run import main as run

        return run(argv[1:])
    parser = _parser()
    if not argv:
        parser.print_help()
        return 0
    args, rest = parser.parse_known_args(argv)
    if rest and args.cmd != "catalog":
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.cmd == "info":
        return info(verbose=args.verbose)
    if args.cmd == "catalog":
        from ._cli.catalog import main as catalog

        return catalog(rest)
    from ._cli.demo import main as demo

    return demo()


if __name__ == "__main__":
    sys.exit(main())
