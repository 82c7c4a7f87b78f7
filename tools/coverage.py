"""Shares of torch's public callables that tdx offers, built and refused counted apart.

Usage: ``python tools/coverage.py [NAMESPACE]`` (run from the repository root with tdx importable):
prints one line per namespace (torch, torch.Tensor, torch.linalg...); with a namespace such as
``torch`` or ``torch.Tensor``, also the names tdx lacks there.
"""

from __future__ import annotations

import sys

from tdx._cli import name_counts


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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
