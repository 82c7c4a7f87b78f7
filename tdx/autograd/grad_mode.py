"""Grad-mode context managers mirroring torch's, per thread.

Each switch sets tdx's thread-local flag and, when torch is already imported, torch's
own grad mode; both are restored in ``finally``. Must never import a framework.
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading



class _Mode(threading.local):
    """This thread's grad mode; the class attributes are each new thread's defaults.

    ``enabled`` is read directly on the op path (``MODE.enabled``) as the gate in front of the tape's
    per-op check: under ``no_grad``/``inference_mode`` no op consults the tape at all.
    """

    enabled = True
    inference = False


MODE = _Mode()
_local = MODE


def is_grad_enabled() -> bool:
    """Whether gradients are recorded in this thread."""
    return getattr(_local, "enabled", True)


def _set(mode: bool) -> None:
    _local.enabled = mode
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_grad_enabled(mode)


def _wrap_generator(make_ctx, fn):
    """``fn`` (a generator function) with each step of its generators run inside ``make_ctx()``, the
    caller's mode restored between steps (as torch wraps generators)."""

    @functools.wraps(fn)
    def generator(*args, **kwargs):
        gen = fn(*args, **kwargs)
        try:
            with make_ctx():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with make_ctx():
                        gen.close()
                    raise
                except BaseException:  # noqa: B036 - thrown into the generator, as torch forwards it
                    with make_ctx():
                        response = gen.throw(*sys.exc_info()[1:2])
                else:
                    with make_ctx():
                        response = gen.send(request)
        except StopIteration as stop:
            return stop.value

    return generator


def decorate(make_ctx, fn):
    """``fn`` run inside a fresh ``make_ctx()`` on every call (each step, for a generator function).

    Raises:
        TdxRuntimeError: ``fn`` is a class (torch refuses the ambiguity of decorating one).
    """
    if inspect.isclass(fn):
        from .._errors import TdxRuntimeError

        raise TdxRuntimeError(f"Cannot decorate class {fn.__name__!r} with a grad mode; decorate each of its "
                              "methods instead")
    if inspect.isgeneratorfunction(fn):
        return _wrap_generator(make_ctx, fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with make_ctx():
            return fn(*args, **kwargs)

    return wrapper


class _GradMode:
    """A context manager and decorator that sets grad mode and restores it on exit.

    Used as ``@no_grad()`` or bare ``@no_grad`` (the class called on the function), as torch's."""

    _mode = True

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)

    def __enter__(self) -> None:
        self._prev = is_grad_enabled()
        _set(self._mode)

    def __exit__(self, *exc) -> None:
        _set(self._prev)

    def clone(self):
        """A fresh manager of the same mode (each decorated call enters its own)."""
        return self.__class__()

    def __call__(self, fn):
        return decorate(self.clone, fn)


class no_grad(_GradMode):  # noqa: N801 - torch's name
    """Disable gradient recording inside the block (``with no_grad():``, ``@no_grad()`` or ``@no_grad``)."""

    _mode = False


class enable_grad(_GradMode):  # noqa: N801 - torch's name
    """Enable gradient recording inside the block (``with enable_grad():``, ``@enable_grad()``, ``@enable_grad``)."""

    _mode = True


def is_inference_mode_enabled() -> bool:
    """Whether this thread is inside ``inference_mode()`` (``torch.is_inference_mode_enabled``)."""
    return getattr(_local, "inference", False)


class inference_mode(_GradMode):  # noqa: N801 - torch's name
    """Like ``no_grad`` for gradients (tdx makes no inference tensors); ``is_inference_mode_enabled()``
    reads its state; as torch's, ``inference_mode(mode)`` sets grad mode to ``not mode``. Bare ``@inference_mode``
    decorates, as torch's."""

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return object.__new__(cls)
        return cls()(mode)

    def __init__(self, mode: bool = True):
        self.mode = mode

    def __enter__(self) -> None:
        self._prev_inference = is_inference_mode_enabled()
        self._prev = is_grad_enabled()
        _local.inference = bool(self.mode)
        _set(not self.mode)

    def __exit__(self, *exc) -> None:
        try:
            _set(self._prev)
        finally:
            _local.inference = self._prev_inference

    def clone(self):
        return self.__class__(self.mode)


class set_grad_enabled(_GradMode):  # noqa: N801 - torch's name
    """Set grad mode now (as a call) and restore it on exit (as a context manager); as a decorator
    (``@set_grad_enabled(False)``) it restores the mode at once and sets it around each call."""

    def __new__(cls, mode):
        return object.__new__(cls)

    def __init__(self, mode: bool):
        if not isinstance(mode, bool):
            from .._errors import TdxTypeError

            raise TdxTypeError(f"set_grad_enabled(): argument 'mode' must be bool, not {type(mode).__name__}")
        self._prev = is_grad_enabled()
        self.mode = mode
        _set(mode)

    def __call__(self, fn):
        _set(self._prev)
        return decorate(self.clone, fn)

    def __enter__(self) -> None:
        _set(self.mode)

    def __exit__(self, *exc) -> None:
        _set(self._prev)

    def clone(self):
        return self.__class__(self.mode)
