"""``tdx.autograd.Function``: custom differentiable operations with a user-written backward.

On executors with native autograd (torch) a user's Function runs inside a ``torch.autograd.Function``
built for it once, over native tensors: torch's engine records it, calls its backward and does
higher-order gradients itself. On tape executors (MLX) it becomes one :class:`FunctionNode` of tdx's
tape whose backward calls the user's ``backward`` with tdx Tensors, recorded when ``create_graph``
is set, so second derivatives go through it too.

This module must never import a framework at module level, and never differentiate a Function
by re-running its forward: the user's backward is the only derivative it has.
"""

from __future__ import annotations

import functools

from .._errors import TdxRuntimeError
from .._tensor import recording as _recording
from . import tape as _tape
from .grad_mode import is_grad_enabled, no_grad

__all__ = ["Function", "FunctionCtx", "NestedIOFunction", "once_differentiable"]


def _is_tensor(x) -> bool:
    return x.__class__ is _recording._tensor_class() or isinstance(x, _recording._tensor_class())


class FunctionCtx:
    """The ``ctx`` a Function's forward and backward share (torch's ``FunctionCtx``).

    Attributes set on it in forward are there in backward. ``needs_input_grad`` says, per
    argument of ``apply``, whether it is a tensor that requires grad.
    """

    def __init__(self):
        self.to_save = ()
        self.saved_for_forward = ()
        self.non_differentiable = ()
        self.dirty_tensors = ()
        self.materialize_grads = True
        self.needs_input_grad = ()
        self._node = None
        self._snapshot = ()

    def save_for_backward(self, *tensors) -> None:
        """Keep ``tensors`` (tensors or None) for backward; read them back as ``saved_tensors``.

        Raises:
            TdxTypeError: an argument is neither a tensor nor None.
        """
        from .._errors import TdxTypeError

        for t in tensors:
            if t is not None and not _is_tensor(t):
                raise TdxTypeError(f"save_for_backward can only save variables, but argument {tensors.index(t)} is "
                                   f"of type {type(t).__name__}")
        self.to_save = tensors

    def save_for_forward(self, *tensors) -> None:
        """Keep ``tensors`` for a forward-mode ``jvp`` (kept; tdx has no forward-mode AD to call it)."""
        self.saved_for_forward = tensors

    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to ``save_for_backward``, as they were when saved.

        Raises:
            TdxRuntimeError: the graph was freed by an earlier backward, or a saved tensor was
                modified in place since (torch's version-counter error).
        """
        node = self._node
        if node is not None and node.fn is None:
            raise TdxRuntimeError(_tape._FREED)
        for t, native in zip(self.to_save, self._snapshot):
            if t is not None and t._n is not native:
                raise TdxRuntimeError("one of the variables needed for gradient computation has been modified by "
                                      f"an inplace operation: [{t.dtype} {list(t.shape)}]")
        return tuple(self.to_save)

    def mark_dirty(self, *tensors) -> None:
        """Declare the tensors the forward modified in place (they must be returned as outputs)."""
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        """Declare outputs that have no gradient (they do not require grad)."""
        self.non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """Whether backward receives zeros (True, default) or None for outputs that got no gradient."""
        self.materialize_grads = bool(value)


class _TorchCtx(FunctionCtx):
    """A ctx over torch's own: saving, marking and ``needs_input_grad`` go to torch, in natives."""

    def __init__(self, tctx, ex):
        super().__init__()
        self._t, self._ex = tctx, ex
        self.needs_input_grad = tuple(tctx.needs_input_grad[1:])  # torch's, less the spec argument

    def save_for_backward(self, *tensors) -> None:
        super().save_for_backward(*tensors)
        self._t.save_for_backward(*[None if t is None else t._n for t in tensors])

    @property
    def saved_tensors(self) -> tuple:
        from .._tensor.wrapping import wrap

        try:
            saved = self._t.saved_tensors
        except RuntimeError as err:
            raise self._ex.native_error(err) from None
        return tuple(None if s is None else wrap(s, self._ex) for s in saved)

    def mark_dirty(self, *tensors) -> None:
        super().mark_dirty(*tensors)
        self._t.mark_dirty(*[t._n for t in tensors])

    def mark_non_differentiable(self, *tensors) -> None:
        super().mark_non_differentiable(*tensors)
        self._t.mark_non_differentiable(*[t._n for t in tensors])

    def set_materialize_grads(self, value: bool) -> None:
        super().set_materialize_grads(value)
        self._t.set_materialize_grads(bool(value))


class Function:
    """Base class of a custom differentiable operation, as ``torch.autograd.Function``.

    Subclass it with two static methods, ``forward(ctx, *args)`` and ``backward(ctx, *grads)``
    (one gradient per output in, one per forward argument out, None for non-tensors), or with
    ``forward(*args)`` and ``setup_context(ctx, inputs, output)``; call it as ``MyFn.apply(*args)``.
    """

    @staticmethod
    def forward(*args, **kwargs):
        """The computation: tdx ops on the arguments; override it."""
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Fill ``ctx`` from ``inputs`` and ``output`` when forward takes no ctx; override it."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """The vector-Jacobian product: one gradient per argument of forward; override it."""
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        """Forward-mode derivative: tdx has no forward-mode AD, so this is never called."""
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it "
                                  "with forward mode AD.")

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        raise TdxRuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use "
                              "new-style autograd function with static forward method. (Example: "
                              "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run forward on ``args`` and record the op so that backward calls ``cls.backward``."""
        first = next((a for a in args if _is_tensor(a)), None)
        if first is not None and first._ex.caps.native_autograd:
            return _apply_torch(cls, first._ex, args, kwargs)
        return _apply_tape(cls, args, kwargs)


def _uses_setup_context(cls) -> bool:
    return getattr(cls.setup_context, "__func__", cls.setup_context) is not \
        getattr(Function.setup_context, "__func__", Function.setup_context)


def _user_backward(cls):
    b, v = cls.backward, cls.vjp
    own_b, own_v = b is not Function.backward, v is not Function.vjp and v is not Function.backward
    if own_b and own_v and b is not v:
        raise TdxRuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You "
                              "should only implement one of them.")
    return v if own_v else b


def _forward(cls, ctx, args, kwargs):
    if _uses_setup_context(cls):
        out = cls.forward(*args, **kwargs)
        cls.setup_context(ctx, tuple(args), out)
        return out
    return cls.forward(ctx, *args, **kwargs)


# torch executor ------------------------------------------------------------------------------
def _bridge(cls):
    """The ``torch.autograd.Function`` that runs ``cls`` over natives (built once per class)."""
    bridge = cls.__dict__.get("_tdx_torch_bridge")
    if bridge is not None:
        return bridge
    import torch

    from .._tensor.wrapping import wrap

    def forward(tctx, spec, *natives):
        ex, kwargs = spec
        ctx = _TorchCtx(tctx, ex)
        tctx._tdx = ctx
        tensors = [wrap(n, ex) if isinstance(n, torch.Tensor) else n for n in natives]
        out = _forward(cls, ctx, tensors, kwargs)
        ctx._out_tuple = isinstance(out, tuple)
        outs = out if isinstance(out, tuple) else (out,)
        return tuple(o._n if _is_tensor(o) else o for o in outs) if ctx._out_tuple else outs[0]._n \
            if _is_tensor(outs[0]) else outs[0]

    def backward(tctx, *grads):
        ctx = tctx._tdx
        ex = ctx._ex
        gs = [None if g is None else wrap(g, ex) for g in grads]
        res = _user_backward(cls)(ctx, *gs)
        res = res if isinstance(res, tuple) else (res,)
        return (None, *[r._n if _is_tensor(r) else r for r in res])

    bridge = type(torch.autograd.Function)(cls.__name__, (torch.autograd.Function,),
                                           {"forward": staticmethod(forward), "backward": staticmethod(backward),
                                            "__module__": cls.__module__})
    setattr(cls, "_tdx_torch_bridge", bridge)
    return bridge


def _apply_torch(cls, ex, args, kwargs):
    from .._tensor.wrapping import wrap

    by_native = {}
    natives = []
    for a in args:
        if _is_tensor(a):
            if a._ex is not ex:
                from .._errors import mismatch

                raise mismatch(f"{cls.__name__}.apply", ex.device, a._ex.device)
            by_native[id(a._n)] = a
            natives.append(a._n)
        else:
            natives.append(a)
    try:
        out = _bridge(cls).apply((ex, kwargs), *natives)
    except (RuntimeError, TypeError, ValueError) as err:
        if hasattr(err, "__module__") and "tdx" in type(err).__module__:
            raise
        raise ex.native_error(err) from None

    def back(o):
        import torch

        if not isinstance(o, torch.Tensor):
            return o
        same = by_native.get(id(o))  # an input marked dirty comes back as itself
        return same if same is not None else wrap(o, ex)

    return tuple(back(o) for o in out) if isinstance(out, tuple) else back(out)


# tape executors ------------------------------------------------------------------------------
class FunctionNode:
    """One application of a Function on the tape: its backward is the user's."""

    __slots__ = ("fn", "ctx", "inputs", "metas", "natives", "where", "n_args", "n_out", "_label", "outs",
                 "__weakref__")

    def __init__(self, cls, ctx, inputs, where, n_args, outs):
        self.fn, self.ctx, self.inputs, self.where, self.n_args = cls, ctx, inputs, where, n_args
        self.metas = [t._ag for t in inputs]
        self.natives = [t._n for t in inputs]
        self.outs = [(o._n.shape, o._n.dtype, o._ex) if _is_tensor(o) else None for o in outs]
        self.n_out = len(outs)
        self._label = cls.__name__ + "Backward"

    def __repr__(self) -> str:
        return f"<{self._label} node>"

    def name(self) -> str:
        """The node's name, as torch's ``grad_fn.name()`` (e.g. ``MulBackward``)."""
        return self._label

    def backward_of(self, slots, create_graph):
        """The gradients of the node's inputs from the cotangents ``slots`` (None: no gradient)."""
        import mlx.core as mx

        from .._tensor.wrapping import wrap

        ctx, cls = self.ctx, self.fn
        grads = []
        for s, spec in zip(slots, self.outs):
            if s is None:
                if spec is None or not ctx.materialize_grads:
                    grads.append(None)
                    continue
                s = mx.zeros(spec[0], spec[1])
                s = wrap(s, spec[2])
            elif not hasattr(s, "_n"):
                s = wrap(s, self.inputs[0]._ex)
            grads.append(s)
        res = _user_backward(cls)(ctx, *grads)
        res = res if isinstance(res, tuple) else (res,)
        if len(res) < self.n_args or any(r is not None for r in res[self.n_args:]):
            raise TdxRuntimeError(f"function {self._label} returned an incorrect number of gradients (expected "
                                  f"{self.n_args}, got {len(res)})")
        out = [None] * len(self.inputs)
        for pos, k in self.where:
            g = res[pos]
            if g is None:
                continue
            if not _is_tensor(g):
                raise TdxRuntimeError(f"function {self._label} returned a gradient different than None at position "
                                      f"{pos + 1}, but the corresponding forward input was not a Variable")
            t = self.inputs[k]
            if tuple(g.shape) != tuple(t.shape) and _expandable(tuple(t.shape), tuple(g.shape)):
                g = _sum_to(g, tuple(t.shape))  # torch sums a broadcast gradient back to the input's shape
            if tuple(g.shape) != tuple(t.shape):
                raise TdxRuntimeError(f"Function {self._label} returned an invalid gradient at index {pos} - got "
                                      f"{list(g.shape)} but expected shape compatible with {list(t.shape)}")
            if g._ex is not t._ex:
                from .._errors import mismatch

                raise mismatch(self._label, t._ex.device, g._ex.device)
            g = g if create_graph else g._n
            out[k] = g if out[k] is None else out[k] + g
        return out


def _expandable(shape, to) -> bool:
    if len(shape) > len(to):
        return False
    return all(a == b or a == 1 for a, b in zip(shape[::-1], to[::-1]))


def _sum_to(g, shape):
    lead = g.ndim - len(shape)
    if lead:
        g = g.sum(tuple(range(lead)))
    dims = tuple(i for i, (a, b) in enumerate(zip(shape, g.shape)) if a == 1 and b != 1)
    return g.sum(dims, keepdim=True) if dims else g


def _apply_tape(cls, args, kwargs):
    ctx = FunctionCtx()
    ctx.needs_input_grad = tuple(_is_tensor(a) and a.requires_grad for a in args)
    record = any(ctx.needs_input_grad) and is_grad_enabled() and not _tape._suspended()
    before = {id(a): a._n for a in args if _is_tensor(a)}  # MLX arrays are immutable: the values before forward
    with no_grad():
        out = _tape._run_suspended(_forward, (cls, ctx, list(args), kwargs), {})
    ctx._snapshot = tuple(None if t is None else t._n for t in ctx.to_save)
    if not record:
        return out
    inputs, where, index = [], [], {}
    for pos, a in enumerate(args):
        if _is_tensor(a) and a.requires_grad:
            if id(a) not in index:
                index[id(a)] = len(inputs)
                inputs.append(a)
            where.append((pos, index[id(a)]))
    dirty = {id(t) for t in ctx.dirty_tensors}
    for t in ctx.dirty_tensors:
        m = _tape.meta(t)
        if m is not None and m.requires_grad and m.node is None:
            raise TdxRuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
    # the inputs as they were before forward (a dirty one's new value belongs to its output)
    olds = []
    for t in inputs:
        old = _recording._wrap(before[id(t)], t._ex)
        old._ag = t._ag
        olds.append(old)
    outs = list(out) if isinstance(out, tuple) else [out]
    node = FunctionNode(cls, ctx, olds, where, len(args), outs)
    ctx._node = node
    non_diff = {id(t) for t in ctx.non_differentiable}
    arg_ids = {id(a) for a in args}
    for i, o in enumerate(outs):
        if not _is_tensor(o) or id(o) in non_diff or not _tape._differentiable(o):
            continue
        if id(o) in arg_ids and id(o) not in dirty:  # an input returned as is: a new tensor sharing its value
            o = outs[i] = _recording._wrap(o._n, o._ex)
        o._ag = _tape.Meta(True, node, i)
    return tuple(outs) if isinstance(out, tuple) else outs[0]


def once_differentiable(fn):
    """Decorate a backward that is not itself differentiable: it runs with gradients off."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            return fn(ctx, *args)

    return wrapper


class NestedIOFunction(Function):
    """torch's legacy Function with nested inputs, kept for compatibility: use :class:`Function`."""

    def forward_extended(self, *inputs):
        raise NotImplementedError("forward_extended is not implemented")

    def backward_extended(self, *grad_output):
        raise NotImplementedError("backward_extended is not implemented")
