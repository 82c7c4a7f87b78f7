"""``python -m tdx``: ``info`` (devices, versions, config and its sources, interop matrix), ``demo``
(the main job on every device, checked against torch) and ``catalog`` (per-function conformance)."""

from __future__ import annotations

import argparse
import platform
import sys


def info() -> int:
    import tdx
    from . import backends, config

    print(f"tdx {tdx.__version__}  python {platform.python_version()}  {platform.system()} {platform.machine()}")
    import numpy

    versions = [f"numpy {numpy.__version__}"]
    for provider in backends.providers().values():
        versions.append(f"{provider.framework} {provider.version() or 'not installed'}")
    print("frameworks: " + ", ".join(versions))
    print(f"cpu capability: {backends.cpu.get_cpu_capability()}")
    print("\ndevices:")
    for row in backends.available():
        state = "available" if row.available else f"unavailable ({row.reason})"
        print(f"  {row.device:<10} {row.provider:<6} {state}")
    print(f"default device: {backends.get_default_device()}")
    print("\neffective config (value  <- source):")
    for key, value, origin in config.current().items():
        print(f"  {key:<30} {value!r:<40} <- {origin}")
    from . import interop

    print("\nDLPack exchange matrix (source -> target):")
    print(interop.format_matrix())
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tdx", description="tdx command line")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info", help="executors, devices, versions, effective config with sources")
    sub.add_parser("demo", help="run the main job on every available device, checked against torch")
    sub.add_parser("catalog", help="conformance of each torch function per device, as a Markdown table",
                   add_help=False)
    args, rest = parser.parse_known_args(argv)
    if rest and args.cmd != "catalog":
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.cmd == "info":
        return info()
    if args.cmd == "catalog":
        from ._cli.catalog import main as catalog

        return catalog(rest)
    from ._cli.demo import main as demo

    return demo()


if __name__ == "__main__":
    sys.exit(main())
