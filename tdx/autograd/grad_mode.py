"""Grad-mode context managers mirroring torch's, per thread.

Each switch sets tdx's thread-local flag and, when torch is already imported, torch's
own grad mode; both are restored in ``finally``. Must never import a framework.
"""

from __future__ import annotations

import functools
import sys
import threading

_local = threading.local()


def is_grad_enabled() -> bool:
    """Whether gradients are recorded in this thread."""
    return getattr(_local, "enabled", True)


def _set(mode: bool) -> None:
    _local.enabled = mode
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_grad_enabled(mode)


class _GradMode:
    """A context manager and decorator that sets grad mode and restores it on exit."""

    _mode = True

    def __enter__(self):
        self._prev = is_grad_enabled()
        _set(self._mode)
        return self

    def __exit__(self, *exc) -> None:
        _set(self._prev)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)

        return wrapper


class _BareDecorator(_GradMode):
    """A switch that also decorates without parentheses (``@no_grad`` as ``@no_grad()``), as torch's."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)

    def __init__(self, orig_func=None):
        pass


class no_grad(_BareDecorator):  # noqa: N801 - torch's name
    """Disable gradient recording inside the block."""

    _mode = False


class enable_grad(_BareDecorator):  # noqa: N801 - torch's name
    """Enable gradient recording inside the block."""

    _mode = True


def is_inference_mode_enabled() -> bool:
    """Whether this thread is inside ``inference_mode()`` (``torch.is_inference_mode_enabled``)."""
    return getattr(_local, "inference", False)


class inference_mode(_GradMode):  # noqa: N801 - torch's name
    """Like ``no_grad`` for gradients (tdx makes no inference tensors); ``is_inference_mode_enabled()``
    reads its state, and ``inference_mode(False)`` leaves grad mode as it is."""

    def __init__(self, mode: bool = True):
        self._mode = not mode if mode else is_grad_enabled()
        self._inference = bool(mode)

    def __enter__(self):
        self._prev_inference = is_inference_mode_enabled()
        _local.inference = self._inference
        return super().__enter__()

    def __exit__(self, *exc) -> None:
        try:
            super().__exit__(*exc)
        finally:
            _local.inference = self._prev_inference

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with inference_mode(not self._mode):
                return fn(*args, **kwargs)

        return wrapper


class set_grad_enabled(_GradMode):  # noqa: N801 - torch's name
    """Set grad mode now (as a call) and restore it on exit (as a context manager)."""

    def __init__(self, mode: bool):
        self._prev = is_grad_enabled()
        self._mode = bool(mode)
        _set(self._mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        _set(self._prev)
