"""Shares of torch's public callables that tdx offers, built and refused counted apart.

Usage: ``python tools/coverage.py [NAMESPACE]`` (run from the repository root with tdx importable):
prints one line per namespace (torch, torch.Tensor, torch.linalg...); with a namespace such as
``torch`` or ``torch.Tensor``, also the names tdx lacks there. Then the share per namespace of the
369 torch names of the TorchDevice migration plan's function catalog (``tools/torchdevice_names.txt``):
built (runs with torch's meaning), refused (a reason tdx cannot mean it), placeholder (present so
programs import, not built yet: it refuses at use) and absent (torch 2.13 itself has no such name, or
tdx lacks it).
"""

from __future__ import annotations

import importlib
import pathlib
import sys

from tdx._cli import name_counts

NAMES = pathlib.Path(__file__).with_name("torchdevice_names.txt")


def _catalog() -> list:
    rows = []
    for line in NAMES.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            namespace, *names = line.split()
            rows.append((namespace, names))
    return rows


def torchdevice() -> dict:
    """``{namespace: {"total", "built", "refused", "placeholder", "absent": [names], "importable"}}``."""
    from tdx.aliasing import refused, torch_paths

    out = {}
    for namespace, names in _catalog():
        c = {"total": len(names), "built": 0, "refused": 0, "placeholder": 0, "absent": [], "importable": True}
        try:
            module = importlib.import_module(torch_paths.tdx_path(namespace))
        except ImportError:
            c["importable"], c["absent"] = False, list(names)
            out[namespace] = c
            continue
        for name in names:
            try:
                obj = getattr(module, name)
            except AttributeError:
                c["absent"].append(name)
                continue
            why = getattr(obj, "__tdx_refused__", None) if refused.is_refused(obj) else None
            key = "built" if why is None else "placeholder" if why == refused.NOT_BUILT else "refused"
            c[key] += 1
        out[namespace] = c
    return out


def torchdevice_lines(counts: dict) -> list:
    """One line per namespace and the total."""
    lines = []
    tot = {"total": 0, "built": 0, "refused": 0, "placeholder": 0, "absent": 0}
    for namespace, c in counts.items():
        have = c["built"] + c["refused"] + c["placeholder"]
        lines.append(f"{namespace}: {have}/{c['total']} resolve ({100.0 * have / c['total']:.0f}%): "
                     f"{c['built']} built, {c['refused']} refused, {c['placeholder']} placeholders"
                     + (f"; absent: {' '.join(c['absent'])}" if c["absent"] else "")
                     + ("" if c["importable"] else " (NOT IMPORTABLE)"))
        for k in tot:
            tot[k] += len(c[k]) if k == "absent" else c[k]
    have = tot["built"] + tot["refused"] + tot["placeholder"]
    lines.append(f"TorchDevice catalog: {have}/{tot['total']} resolve under tdx ({100.0 * have / tot['total']:.1f}%): "
                 f"{tot['built']} built ({100.0 * tot['built'] / tot['total']:.1f}%), {tot['refused']} refused, "
                 f"{tot['placeholder']} placeholders, {tot['absent']} absent")
    return lines


def main(argv: list) -> int:
    counts = name_counts.count()
    for path, c in counts.items():
        print(name_counts.line(path, c))
    if argv:
        if argv[0] not in counts:
            print(f"unknown namespace {argv[0]!r}; known: {', '.join(counts)}", file=sys.stderr)
            return 2
        print(f"missing from {argv[0]}:", " ".join(counts[argv[0]]["missing"]))
        return 0
    print()
    print("\n".join(torchdevice_lines(torchdevice())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
