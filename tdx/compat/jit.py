"""``torch.jit`` (minimal, eager): the queries and decorators torch's Python code calls when it is
not being scripted. tdx never scripts or traces, so ``is_scripting``/``is_tracing`` answer False
and ``script_if_tracing``/``ignore``/``unused`` return the function unchanged, as torch's do in
eager code; ``fork``/``wait`` are tdx's eager futures. This module must never import a framework.
"""

from __future__ import annotations

from .control_flow import Future, fork, wait

__all__ = ["is_scripting", "is_tracing", "script_if_tracing", "ignore", "unused", "fork", "wait", "Future"]


def is_scripting() -> bool:
    """False: tdx code is never being compiled by TorchScript."""
    return False


def is_tracing() -> bool:
    """False: tdx never runs a TorchScript trace."""
    return False


def script_if_tracing(fn):
    """``fn`` itself: torch scripts it only under a trace, and tdx never traces."""
    return fn


def ignore(drop=False, **kwargs):
    """``@torch.jit.ignore`` (with or without arguments): the function unchanged."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    """``@torch.jit.unused``: the function unchanged."""
    return fn
