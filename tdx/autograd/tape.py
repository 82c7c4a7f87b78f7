"""The gradient tape for executors without native autograd (MLX).

Every facade entry point starts with ``if ACTIVE[0] and wants(...)``: until the first
tape-executor tensor asks for gradients, that is one list lookup. Once recording, an op
runs with recording suspended, and a :class:`Node` keeps the facade callable and its
arguments; backward differentiates each node by the executor's own vector-Jacobian
product of a re-execution of that callable (``mx.vjp`` on MLX). So every facade op,
present or future, is differentiable without a per-op rule, and gradients are exactly
what the executor's kernels give.

Per-op rules were the alternative; they would duplicate each op's semantics a second
time and drift. This module must never import a framework at module level and never
touch executors that record natively (torch).
"""

from __future__ import annotations

import threading

from .._errors import NATIVE_ERRORS, TdxRuntimeError, UnsupportedOpError
from .grad_mode import is_grad_enabled

ACTIVE = [False]  # set once any tape tensor requires grad; never reset (cheap to check)
_local = threading.local()


class Meta:
    """Autograd state of one tensor on a tape executor."""

    __slots__ = ("requires_grad", "grad", "node", "index", "retain")

    def __init__(self, requires_grad=False, node=None, index=0):
        self.requires_grad = requires_grad
        self.grad = None
        self.node = node
        self.index = index
        self.retain = False


class Node:
    """One recorded op: ``fn(*args, **kwargs)`` whose tensor inputs are ``inputs``.

    ``metas`` and ``natives`` are the inputs as they were when the op ran: an in-place op
    later gives the same Tensor object a new version, and this node must keep the old one.
    """

    __slots__ = ("fn", "args", "kwargs", "inputs", "metas", "natives", "n_out", "name", "plan", "__weakref__")

    def __init__(self, fn, args, kwargs, inputs, n_out):
        self.fn, self.args, self.kwargs, self.inputs, self.n_out = fn, args, kwargs, inputs, n_out
        self.metas = [t._ag for t in inputs]
        self.natives = [t._n for t in inputs]
        self.name = getattr(fn, "__name__", "op").strip("_").capitalize() + "Backward"
        self.plan = _plan(args, kwargs, inputs)

    def __repr__(self) -> str:
        return f"<{self.name} node>"

    def name_(self) -> str:
        return self.name

    def replay(self, natives):
        """Re-run the op with ``natives`` standing in for the inputs; returns output natives."""
        from .._tensor.wrapping import wrap

        plan = self.plan
        if plan is not None:  # the inputs are plain positional arguments: swap them in place
            args, inputs = list(self.args), self.inputs
            for pos, k in plan:
                args[pos] = wrap(natives[k], inputs[k]._ex)
            out = _run_suspended(self.fn, args, self.kwargs)
            return [o._n for o in out] if isinstance(out, (tuple, list)) else [out._n]
        it = iter(natives)
        swap = {id(t): wrap(next(it), t._ex) for t in self.inputs}

        def sub(a):
            if id(a) in swap:
                return swap[id(a)]
            if isinstance(a, (list, tuple)) and any(id(x) in swap for x in a):
                return type(a)(sub(x) for x in a) if not hasattr(a, "_fields") else type(a)(*map(sub, a))
            return a

        out = _run_suspended(self.fn, [sub(a) for a in self.args], {k: sub(v) for k, v in self.kwargs.items()})
        outs = out if isinstance(out, (tuple, list)) else (out,)
        return [o._n for o in outs]


def _plan(args, kwargs, inputs):
    """``(argument position, input number)`` for each input passed as a plain positional
    argument, or None when an input sits in a list or a keyword (replayed the general way)."""
    where = {id(t): k for k, t in enumerate(inputs)}
    plan = []
    for pos, a in enumerate(args):
        k = where.get(id(a))
        if k is not None:
            plan.append((pos, k))
        elif isinstance(a, (list, tuple)) and any(id(x) in where for x in a):
            return None
    if any(id(v) in where or (isinstance(v, (list, tuple)) and any(id(x) in where for x in v))
           for v in kwargs.values()):
        return None
    return tuple(plan)


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


def _tensor_class():
    cls = _CLASS[0]
    if cls is None:
        from .._tensor import wrapping

        cls = _CLASS[0] = wrapping.Tensor
    return cls


_CLASS = [None]


def meta(t):
    """The tape state of ``t``, or None."""
    return getattr(t, "_ag", None)


def _suspended() -> bool:
    return getattr(_local, "suspended", False)


def _tensors(args, kwargs):
    Tensor = _tensor_class()
    for a in (*args, *kwargs.values()):
        if a.__class__ is Tensor:
            yield a
        elif isinstance(a, (list, tuple)):
            yield from (x for x in a if x.__class__ is Tensor)


def wants(*args, **kwargs) -> bool:
    """Whether an op on these arguments must be recorded."""
    if _suspended() or not is_grad_enabled():
        return False
    for t in _tensors(args, kwargs):
        m = getattr(t, "_ag", None)
        if m is not None and m.requires_grad and not t._ex.caps.native_autograd:
            return True
    return False


def _differentiable(t) -> bool:
    d = t.dtype
    return d.is_floating_point or d.is_complex


def _run_suspended(fn, args, kwargs):
    prev = _suspended()
    _local.suspended = True
    try:
        return fn(*args, **kwargs)
    finally:
        _local.suspended = prev


def _grad_inputs(args, kwargs) -> list:
    """The tensors among the arguments that require grad, each once, in first-seen order."""
    seen, unique = set(), []
    for t in _tensors(args, kwargs):
        m = getattr(t, "_ag", None)
        if m is not None and m.requires_grad and id(t) not in seen:
            seen.add(id(t))
            unique.append(t)
    return unique


def call(fn, *args, **kwargs):
    """Run ``fn`` without recording inside it, then record it as one node."""
    unique = _grad_inputs(args, kwargs)
    for t in unique:
        if t._ag.node.__class__ is Invalid:
            raise TdxRuntimeError(t._ag.node.message)
    out = _run_suspended(fn, args, kwargs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    node = Node(fn, args, kwargs, unique, len(outs))
    Tensor = _tensor_class()
    if any(o.__class__ is Tensor and o._ex is not unique[0]._ex for o in outs):
        raise UnsupportedOpError(f"{getattr(fn, '__name__', 'this op')}: moving a tensor that requires grad "
                                 f"from {unique[0]._ex.device} to another executor is not differentiable; "
                                 "detach() it first, or move it before requires_grad_()")
    for i, o in enumerate(outs):
        if o.__class__ is Tensor and _differentiable(o) and all(o is not a for a in args):
            o._ag = Meta(True, node, i)
    return out


def record_inplace(t, fn, args, kwargs):
    """Record an in-place op on ``t``: ``t`` becomes the output of a node fed by its old value.

    When ``t`` is a view, its root becomes ``copy_slices(old root, new value)`` (differentiable
    in both), and every live view of the root, ``t`` included, becomes ``as_strided(root)``:
    the gradient reaches the root's other elements and the written values' inputs, as torch's.
    """
    m = getattr(t, "_ag", None)
    if m is not None and m.requires_grad and m.node is None:
        raise TdxRuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    from .._tensor import views as _views
    from .._tensor.wrapping import wrap

    lay = getattr(t, "_view", None)
    root = t if lay is None else lay.root
    if lay is not None:
        rm = getattr(root, "_ag", None)
        if rm is not None and rm.requires_grad and rm.node is None:
            raise TdxRuntimeError("a view of a leaf Variable that requires grad is being used in an in-place "
                                  "operation.")
        if lay.multi is not None:
            raise TdxRuntimeError(_views.multi_view_error(lay, base_written=False))
        _views.write_index(lay)  # refuse overlapping (expanded) views before anything changes
    old = wrap(t._n, t._ex)
    if m is not None:
        old._ag = m
    new_args = tuple(old if a is t else a for a in args)
    out = _run_suspended(fn, new_args, kwargs)
    out._ag = Meta(True, Node(fn, new_args, kwargs, _grad_inputs(new_args, kwargs), 1), 0)
    if lay is None:
        t._n, t._ag = out._n, out._ag
    else:
        base = wrap(root._n, root._ex)
        rm = getattr(root, "_ag", None)
        if rm is not None:
            base._ag = rm
        pieces = (base, out, lay)
        root._n = _run_suspended(_views.copy_slices, pieces, {})._n
        root._ag = Meta(True, Node(_views.copy_slices, pieces, {}, _grad_inputs(pieces, {}), 1), 0)
    for v in _views.family(root):  # every view shows the new values, read from the new root
        _views.refresh_one(v)
        if v._view.detached:  # detach() shares the values, never the history
            continue
        node = Invalid(_views.multi_view_error(v._view, True)) if v._view.multi is not None else \
            Node(_views.as_strided, (root, v._view), {}, [root], 1)
        v._ag = Meta(True, node, 0)
    return t


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


def _topo(root_node):
    order, seen, stack = [], set(), [(root_node, False)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for m in node.metas:
            if m.node is not None and id(m.node) not in seen:
                stack.append((m.node, False))
    return order  # inputs before users


def _vjp(node, cotangents):
    import mlx.core as mx

    if node.__class__ is Invalid:
        raise TdxRuntimeError(node.message)
    if node.fn is None:
        raise TdxRuntimeError("Trying to backward through the graph a second time (or directly access saved "
                              "tensors after they have already been freed). Specify retain_graph=True if you "
                              "need to backward through the graph a second time.")
    primals = node.natives
    _local.differentiating = True
    try:
        _, grads = mx.vjp(lambda *xs: node.replay(xs), primals, cotangents)
    except NATIVE_ERRORS as err:
        raise node.inputs[0]._ex.native_error(err) from None
    finally:
        _local.differentiating = False
    return grads


def differentiating() -> bool:
    """Whether ops now run inside a backward pass's replay (traced for their derivative).

    Executors whose framework's derivative of an op differs from torch's at a corner (MLX's
    maximum on ties) take a slower exact form only then, and their fast form otherwise.
    """
    return getattr(_local, "differentiating", False)


def run_backward(roots, grad_roots, retain_graph=False, inputs=None):
    """Propagate ``grad_roots`` from ``roots`` back to the leaves.

    Returns:
        When ``inputs`` is given, their gradients (natives or None) and no ``.grad`` is touched;
        otherwise None, with leaf ``.grad`` accumulated as torch does.
    """
    import mlx.core as mx

    pending = {}  # id(node) -> [cotangent per output]
    wanted = {id(t._ag): None for t in inputs if meta(t) is not None} if inputs is not None else None
    nodes = []
    for root, g in zip(roots, grad_roots):
        m = meta(root)
        if m is None or not m.requires_grad:
            raise TdxRuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        if m.node is None:  # a leaf: its gradient is the given one
            _deliver(m, g, wanted)
            continue
        slots = pending.setdefault(id(m.node), [None] * m.node.n_out)
        slots[m.index] = g if slots[m.index] is None else slots[m.index] + g
        nodes.append(m.node)
    order = []
    seen = set()
    for n in nodes:
        for x in _topo(n):
            if id(x) not in seen:
                seen.add(id(x))
                order.append(x)
    # reverse topological order: a node runs after every user of its outputs
    for node in reversed(order):
        slots = pending.pop(id(node), None)
        if slots is None:
            continue
        if node.fn is None:
            _vjp(node, [])  # raises torch's "backward through the graph a second time"
        outs = node.replay(node.natives) if any(s is None for s in slots) else None
        cots = [s if s is not None else mx.zeros_like(outs[i]) for i, s in enumerate(slots)]
        grads = _vjp(node, cots)
        for m, native, g in zip(node.metas, node.natives, grads):
            if g.dtype != native.dtype:
                g = g.astype(native.dtype)
            if m.node is None or (wanted is not None and id(m) in wanted):
                _deliver(m, g, wanted)
            if m.node is not None:
                if m.retain and wanted is None:
                    m.grad = g if m.grad is None else m.grad + g
                s = pending.setdefault(id(m.node), [None] * m.node.n_out)
                s[m.index] = g if s[m.index] is None else s[m.index] + g
        if not retain_graph:  # free what only this backward needed: saved inputs, and the graph above
            node.fn = node.args = node.kwargs = node.plan = None
            node.inputs, node.metas, node.natives = (), (), ()
    if wanted is not None:
        return [wanted.get(id(meta(t))) for t in inputs]
    return None


def _deliver(m, g, wanted):
    if wanted is not None:
        if id(m) in wanted:
            wanted[id(m)] = g if wanted[id(m)] is None else wanted[id(m)] + g
        return
    m.grad = g if m.grad is None else m.grad + g


def backward(t, gradient=None, retain_graph=None, create_graph=False) -> None:
    """``Tensor.backward`` for a tape tensor."""
    if create_graph:
        raise UnsupportedOpError(f"create_graph=True is not supported on {t._ex.device} (higher-order "
                                 "gradients need the torch executor)")
    if gradient is None:
        if t.numel() != 1:
            raise TdxRuntimeError("grad can be implicitly created only for scalar outputs")
        import mlx.core as mx

        g = mx.ones(t._n.shape, t._n.dtype)
    else:
        if gradient._ex is not t._ex:
            from .._errors import mismatch

            raise mismatch("backward", t._ex.device, gradient._ex.device)
        g = gradient._n
    run_backward([t], [g], retain_graph=bool(retain_graph))
