"""The gradient tape's state for executors without native autograd (MLX): who has a history, who records.

A tensor on such an executor carries its autograd state in a :class:`Meta` (requires grad, ``.grad``, the
node that made it, its hooks); a history torch forbids using is an :class:`Invalid` node. Per thread, the
tape knows whether a recorded op is running (its own ops are then not recorded again) and whether a backward
replay runs (:func:`differentiating`, which the executors read to take torch's exact derivative at a kink).
:data:`ACTIVE` turns on once a tape tensor requires grad: until then no facade op consults the tape at all.

The facade records its calls on this state and replays them for their gradients (:mod:`tdx._tensor.recording`:
a node is a facade call, so recording and replay live with the facade). This module must never import the
facade or a framework, and never touch executors that record natively (torch).
"""

from __future__ import annotations

import threading
import weakref

from .._errors import TdxRuntimeError
from .grad_mode import MODE, _local as _grad_local  # noqa: F401 - MODE: the gate in front of the tape

ACTIVE = [False]  # set once a tape tensor requires grad; never reset  # mutate: equivalent (speed only: gates wants())
class _TapeState(threading.local):
    """This thread's tape state. The class attributes are a new thread's defaults, so that reading
    one is a plain attribute read (a ``getattr`` default on a missing attribute costs ~0.4 us)."""

    suspended = None
    differentiating = False
    pass_ = None


_local = _TapeState()
STATE = _local  # the per-op paths read ``STATE.differentiating`` (an attribute read; the call costs a frame)


class Meta:
    """Autograd state of one tensor on a tape executor."""

    __slots__ = ("requires_grad", "grad", "node", "index", "retain", "hooks", "grad_hooks")

    def __init__(self, requires_grad=False, node=None,
                 index=0):  # mutate: equivalent (a meta with a node is always given its index)
        self.requires_grad = requires_grad
        self.grad = None
        self.node = node
        self.index = index
        self.retain = False
        self.hooks = None  # post-accumulate-grad hooks of a leaf: {key: (weakref to tensor, hook)}
        self.grad_hooks = None  # register_hook's hooks on this tensor's gradient: {key: hook}


class Invalid:
    """The history of a tensor torch forbids using: one of several views of a function (split,
    unbind...) whose base was written in place. Using it while recording raises ``message``."""

    __slots__ = ("message",)
    fn = None
    n_out = 1
    metas = natives = inputs = ()
    name = "InvalidViewBackward"

    def __init__(self, message: str):
        self.message = message


def meta(t):
    """The tape state of ``t``, or None."""
    return getattr(t, "_ag", None)


class _Suspension:
    """The mark of one running recorded op: alive exactly as long as that op's frame."""

    __slots__ = ("__weakref__",)


def _suspended() -> bool:
    """Whether a recorded op is running in this thread (its ops are not recorded again).

    The thread holds a weak reference to the running op's mark, not a flag: were a KeyboardInterrupt
    to land inside the ``finally`` that restores the previous state, the mark dies with the unwound
    frame and recording resumes by itself, instead of staying off for the thread's life.
    """
    ref = getattr(_local, "suspended", None)
    return ref is not None and ref() is not None


def _recording() -> bool:
    """Whether this thread records: grad mode on and no recorded op running."""
    return not _suspended() and getattr(_grad_local, "enabled", True)


def _differentiable(t) -> bool:
    d = t.dtype
    return d.is_floating_point or d.is_complex


def _run_suspended(fn, args, kwargs):
    prev = getattr(_local, "suspended", None)
    mark = _Suspension()  # (see _suspended: held by this frame only)
    try:  # set inside the try: a KeyboardInterrupt right after it must still restore the state
        _local.suspended = weakref.ref(mark)
        return fn(*args, **kwargs)
    finally:
        _local.suspended = prev


def set_requires_grad(t, flag: bool) -> None:
    """``requires_grad_`` for a tape tensor (leaf rules as torch)."""
    m = getattr(t, "_ag", None)
    if m is not None and m.node is not None:
        if not flag:
            raise TdxRuntimeError("you can only change requires_grad flags of leaf variables. If you want to "
                                  "use a computed variable in a subgraph that doesn't require differentiation "
                                  "use var_no_grad = var.detach().")
        return
    if flag and not _differentiable(t):
        raise TdxRuntimeError(f"only Tensors of floating point and complex dtype can require gradients "
                              f"(got {t.dtype!r})")
    if m is None:
        t._ag = Meta(flag)
    else:
        m.requires_grad = flag
    if flag:
        ACTIVE[0] = True


_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after they "
          "have already been freed). Saved intermediate values of the graph are freed when you call .backward() "
          "or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time "
          "or if you need to access saved tensors after calling backward.")


def differentiating() -> bool:
    """Whether ops now run inside a backward pass's replay (traced for their derivative).

    Executors whose framework's derivative of an op differs from torch's at a corner (MLX's
    maximum on ties) take a slower exact form only then, and their fast form otherwise.
    """
    return _local.differentiating


def current_pass() -> tuple:
    """``(retain_graph, accumulating into every leaf's .grad)`` of the backward pass now running."""
    return getattr(_local, "pass_", None) or (False, False)  # mutate: equivalent (read only inside a pass)


def add_grad_hook(t, hook):
    """Register ``hook(grad)`` on the gradient of ``t`` (``Tensor.register_hook``); returns a remover.

    Raises:
        TdxRuntimeError: ``t`` does not require grad (torch's error).
    """
    m = meta(t)
    if m is None or not m.requires_grad:
        raise TdxRuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if m.grad_hooks is None:
        m.grad_hooks = {}
    key = object()
    m.grad_hooks[key] = hook
    return lambda: m.grad_hooks.pop(key, None)


def add_post_accumulate_hook(t, hook):
    """Register ``hook(t)`` to run after ``t.grad`` is accumulated by a backward; returns a remover."""
    import weakref

    m = meta(t)
    if m is None or not m.requires_grad or m.node is not None:
        raise TdxRuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    if m.hooks is None:
        m.hooks = {}
    key = object()
    m.hooks[key] = (weakref.ref(t), hook)
    return lambda: m.hooks.pop(key, None)


