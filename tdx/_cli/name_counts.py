"""How many of torch's public callables tdx offers, and how many of those are refusals.

``python -m tdx catalog`` appends :func:`render` of :func:`count` to its report, and
``tools/coverage.py`` prints the same figures: a name tdx has is either built (it runs with
torch's meaning) or refused (``tdx.aliasing.refused``: present so code that mentions it imports,
raising ``UnsupportedOpError`` when called), and the two are counted apart so the figures stay
honest. This module imports torch only inside :func:`count`; it must never count a refusal
as a built name.
"""

from __future__ import annotations

import inspect

NAMESPACES = (("torch", "tdx"), ("torch.Tensor", "tdx.Tensor"), ("torch.linalg", "tdx.linalg"),
              ("torch.fft", "tdx.fft"), ("torch.special", "tdx.special"), ("torch.optim", "tdx.optim"),
              ("torch.autograd", "tdx.autograd"), ("torch.nn.functional", "tdx.nn.functional"))


def _resolve(path: str):
    import importlib

    head, _, attr = path.rpartition(".")
    if attr == "Tensor":
        return getattr(importlib.import_module(head), "Tensor")
    return importlib.import_module(path)


def public_callables(ns) -> list:
    """The public callable names of a module or class that are not modules, sorted."""
    names = []
    for n in dir(ns):
        if n.startswith("_"):
            continue
        obj = getattr(ns, n, None)
        if callable(obj) and not inspect.ismodule(obj):
            names.append(n)
    return sorted(names)


def count(namespaces=NAMESPACES) -> dict:
    """``{torch namespace: {"total", "built", "refused", "missing": [names]}}`` for each pair.

    Raises:
        ImportError: torch is not installed.
    """
    from ..aliasing.refused import is_refused

    out = {}
    for torch_path, tdx_path in namespaces:
        names = public_callables(_resolve(torch_path))
        ours = _resolve(tdx_path)
        missing = [n for n in names if not hasattr(ours, n)]
        refused = [n for n in names if n not in missing and is_refused(getattr(ours, n))]
        out[torch_path] = {"total": len(names), "built": len(names) - len(missing) - len(refused),
                           "refused": len(refused), "missing": missing}
    return out


def line(path: str, c: dict) -> str:
    """One namespace's figures as a sentence."""
    have = c["built"] + c["refused"]
    total = max(c["total"], 1)
    return (f"{path}: {have} of {c['total']} names present ({100.0 * have / total:.1f}%): {c['built']} built "
            f"({100.0 * c['built'] / total:.1f}%), {c['refused']} refused")


def render(counts: dict) -> str:
    """The Markdown section of the catalog report."""
    lines = ["", "## torch's public names", "",
             "Refused names exist so code mentioning them imports; calling one raises UnsupportedOpError.", ""]
    lines += [f"- {line(path, c)}" for path, c in counts.items()]
    return "\n".join(lines) + "\n"
