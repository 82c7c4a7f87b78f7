"""The facade's calls on the gradient tape (executors without native autograd: MLX): record, replay, backward.

Every facade entry point starts with ``if ACTIVE[0] and MODE.enabled and wants(...)``: until the first
tape-executor tensor asks for gradients, that is one list lookup. Once recording, an op
runs with recording suspended, and a :class:`Node` keeps the facade callable and its
arguments; backward differentiates each node by the executor's own vector-Jacobian
product of a re-execution of that callable (``mx.vjp`` on MLX). So every facade op,
present or future, is differentiable without a per-op rule, and gradients are exactly
what the executor's kernels give.

Per-op rules were the alternative; they would duplicate each op's semantics a second
time and drift. A node is a facade call and backward hands out Tensors (``.grad``, hooks), so this half of
the tape lives with the facade; the state it records on (:class:`Meta`, the thread's recording and replay
state) is :mod:`tdx.autograd.tape`'s, which the executors and autograd read without the facade. This module
must never import a framework at module level and never touch executors that record natively (torch).
"""

from __future__ import annotations

import sys

from .. import _dtypes
from .._errors import NATIVE_ERRORS, CastError, TdxRuntimeError, TdxTypeError, UnsupportedOpError, mismatch
from . import versions
# the facade's op families reach the tape through this one module: its state is re-exported here
from ..autograd import anomaly
from ..autograd.grad_mode import MODE, enable_grad, is_grad_enabled, no_grad  # noqa: F401
from ..autograd.tape import (_FREED, ACTIVE, Invalid, Meta, _differentiable, _local, _recording,  # noqa: F401
                             _run_suspended, _suspended, add_grad_hook, add_post_accumulate_hook, current_pass,
                             differentiating, meta, set_requires_grad)


class Node:
    """One recorded op: ``fn(*args, **kwargs)`` whose tensor inputs are ``inputs``.

    ``metas`` and ``natives`` are the inputs as they were when the op ran: an in-place op
    later gives the same Tensor object a new version, and this node must keep the old one. ``stale`` is
    None, or the error its backward raises: torch's "modified by an inplace operation", where the op wrote
    a tensor its own backward reads (:func:`_stale`).
    """

    __slots__ = ("fn", "args", "kwargs", "inputs", "metas", "natives", "n_out", "_label", "plan", "stale",
                 "__weakref__")

    def __init__(self, fn, args, kwargs, inputs, n_out):
        self.fn, self.args, self.kwargs, self.inputs, self.n_out = fn, args, kwargs, inputs, n_out
        self.stale = None
        self.metas = [t._ag for t in inputs]
        self.natives = [t._n for t in inputs]
        fn_name = getattr(fn, "__name__", "op")
        name = _NAMES.get(fn_name)
        if name is None:
            name = _NAMES[fn_name] = fn_name.strip("_").capitalize() + "Backward0"
        self._label = name
        self.plan = _plan(args, kwargs, inputs)

    def __repr__(self) -> str:
        return f"<{self._label} node>"

    def name(self) -> str:
        """The node's name, as torch's ``grad_fn.name()`` (e.g. ``MulBackward0``: the op's name, and torch's
        overload number, 0)."""
        return self._label

    def outputs_like(self):
        """Arrays shaped and typed as the outputs (zero cotangents for unused outputs are built from them)."""
        return self.replay(self.natives)

    def replay(self, natives):
        """Re-run the op with ``natives`` standing in for the inputs; returns output natives."""
        plan = self.plan
        if plan is not None:  # the inputs are plain positional arguments: swap them in place
            args, inputs = list(self.args), self.inputs
            for pos, k in plan:
                args[pos] = _wrap(natives[k], inputs[k]._ex)
            out = _run_suspended(self.fn, args, self.kwargs)
            return [o._n for o in out] if isinstance(out, (tuple, list)) else [out._n]
        it = iter(natives)
        swap = {id(t): _wrap(next(it), t._ex) for t in self.inputs}

        def sub(a):
            if id(a) in swap:
                return swap[id(a)]
            if isinstance(a, (list, tuple)) and any(id(x) in swap for x in a):
                return type(a)(sub(x) for x in a) if not hasattr(a, "_fields") else type(a)(*map(sub, a))
            return a

        out = _run_suspended(self.fn, [sub(a) for a in self.args], {k: sub(v) for k, v in self.kwargs.items()})
        outs = out if isinstance(out, (tuple, list)) else (out,)
        return [o._n for o in outs]


# an op's __name__ -> its node's name (torch's "<Op>Backward0"), built once per name; where torch's node is
# named after another op than the method's, torch's name (the recurrent gates kernels: torch's fused cells')
_NAMES: dict = {"__truediv__": "DivBackward0", "_lstm_gates": "ThnnFusedLstmCellBackward0",
                "_gru_gates": "ThnnFusedGruCellBackward0"}

# the in-place ops (by their out-of-place form's name) whose backward reads the values of their tensor operands,
# as torch's saves them: such an op whose operand shares memory with the tensor it writes (``y.mul_(y)``,
# ``y[0].mul_(y[1])``, ``y.mul_(y.detach())``) wrote a value its backward needs, and torch's backward raises.
# Linear ones (add_, sub_, copy_, masked_fill_, a write through an index, lerp_ by a number) read none.
_READS_OPERANDS = frozenset((
    "mul", "multiply", "__mul__", "div", "divide", "true_divide", "__truediv__", "remainder", "__remainder__", "fmod",
    "pow", "__pow__", "clamp", "clip", "clamp_min", "clamp_max", "atan2", "arctan2", "hypot", "xlogy",
    "addcmul", "addcdiv", "addmm", "addmv", "baddbmm", "addbmm", "addr"))


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


def _mlx():
    """``mlx.core``: loaded by the MLX executor before its first tensor, so before anything is recorded (this module
    never loads a framework itself; reading it here spares the backward pass an import statement per node)."""
    mx = sys.modules.get("mlx.core")
    if mx is None:
        import mlx.core as mx
    return mx


def _tensor_class():
    cls = _CLASS[0]
    if cls is None:
        from . import wrapping

        cls = _CLASS[0] = wrapping.Tensor
    return cls


_CLASS = [None]


def _tensors(args, kwargs) -> list:
    """The Tensors among the arguments, in order: each argument, and each item of a list or tuple argument."""
    Tensor = _CLASS[0] or _tensor_class()
    found = []
    for a in (*args, *kwargs.values()) if kwargs else args:
        if a.__class__ is Tensor:
            found.append(a)
        elif isinstance(a, (list, tuple)):
            for x in a:
                if x.__class__ is Tensor:
                    found.append(x)
    return found


def wants(*args, **kwargs) -> bool:
    """Whether an op on these arguments must be recorded (the per-op hot path: no generator, one pass;
    the thread's grad mode is read only once a taped tensor that requires grad is among them)."""
    Tensor = _CLASS[0] or _tensor_class()
    for a in (*args, *kwargs.values()) if kwargs else args:
        if a.__class__ is Tensor:
            if a._ex.taped:
                m = getattr(a, "_ag", None)
                if m is not None and m.requires_grad:
                    return _recording()
        elif isinstance(a, (list, tuple)):
            for x in a:
                if x.__class__ is Tensor and x._ex.taped:
                    m = getattr(x, "_ag", None)
                    if m is not None and m.requires_grad:
                        return _recording()
    return False


def _grad_inputs(args, kwargs, tensors=None) -> list:
    """The tensors among the arguments (``tensors``, where the caller has them) that require grad, each once, in
    first-seen order."""
    seen, unique = set(), []
    for t in _tensors(args, kwargs) if tensors is None else tensors:
        m = getattr(t, "_ag", None)
        if m is not None and m.requires_grad and id(t) not in seen:
            seen.add(id(t))
            unique.append(t)
    return unique


def call(fn, *args, **kwargs):
    """Run ``fn`` without recording inside it, then record it as one node."""
    given = _tensors(args, kwargs)
    unique = _grad_inputs(args, kwargs, given)
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
    given = {id(t) for t in given}  # an input returned as is (atleast_1d) stays what it was
    for i, o in enumerate(outs):
        if o.__class__ is Tensor and _differentiable(o) and id(o) not in given:
            o._ag = Meta(True, node, i)
    return out


def written_as(out, dtype, op: str):
    """Tensor ``out`` cast to ``dtype`` where torch's in-place cast rule allows, as torch writes an in-place
    result into its tensor (here for a recorded in-place op; the facade's composite in-place ops use it too).

    Raises:
        CastError: torch refuses that cast (complex to real, float to integer, anything to bool).
    """
    if not _dtypes.can_cast(out.dtype, dtype):
        raise CastError(f"{op}: result type {out.dtype.name} can't be cast to the desired output type "
                        f"{dtype.name}")
    return out._cast(dtype)


def _cast_to(fn, dtype):
    """``fn`` whose result is :func:`written_as` ``dtype``, recorded as one call, so the replay differentiates
    through the cast."""
    def cast_result(*args, **kwargs):
        return written_as(fn(*args, **kwargs), dtype, cast_result.__name__)

    cast_result.__name__ = getattr(fn, "__name__", "op")
    return cast_result


def record_inplace(t, fn, args, kwargs):
    """Record an in-place op on ``t``: ``t`` becomes the output of a node fed by its old value.

    When ``t`` is a view, its root becomes ``copy_slices(old root, new value)`` (differentiable
    in both), and every live view of the root, ``t`` included, becomes ``as_strided(root)``:
    the gradient reaches the root's other elements and the written values' inputs, as torch's.
    """
    m = getattr(t, "_ag", None)
    if m is not None and m.requires_grad and m.node is None:
        raise TdxRuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    from . import views as _views

    _views.rehome_before_write(t)
    lay = getattr(t, "_view", None)
    root = t if lay is None else lay.root
    anchor = t if lay is None else _views.anchor(root)  # whose history stands for the root's values
    if anchor is not t:
        am = getattr(anchor, "_ag", None)
        if am is not None and am.requires_grad and am.node is None:
            raise TdxRuntimeError("a view of a leaf Variable that requires grad is being used in an in-place "
                                  "operation.")
        if lay.multi is not None:
            raise TdxRuntimeError(_views.multi_view_error(lay, base_written=False))
        _views.write_index(lay)  # refuse overlapping (expanded) views before anything changes
    old = _wrap(t._n, t._ex)
    if m is not None:
        old._ag = m
    new_args = tuple(old if a is t else a for a in args)
    out = _run_suspended(fn, new_args, kwargs)
    want = t._ex.dtype(t._n)
    if out.dtype is not want:  # torch writes the result in self's dtype, where the cast is allowed
        out = _run_suspended(written_as, (out, want, getattr(fn, "__name__", "op")), {})
        fn = _cast_to(fn, want)  # the node replays fn and the cast as one call
    node = Node(fn, new_args, kwargs, _grad_inputs(new_args, kwargs), 1)
    node.stale = _stale(t, root, fn, args, kwargs)
    out._ag = Meta(True, node, 0)
    # everything is computed first and published in one step Ctrl-C cannot split (views.publish)
    updates = []
    if m is not None and m.retain:  # retain_grad() follows the tensor to its new version, as torch's
        out._ag.retain, out._ag.grad = True, m.grad
        updates.append((m, "retain", False))  # mutate: equivalent (memory only: the old version's .grad is unreachable)
    if anchor is t:  # the root itself, or the owner of a history-free root: its own new version
        new_root, new_meta = out._n, out._ag
        updates += [(t, "_n", new_root), (t, "_ag", new_meta)]
        if t is not root:
            updates.append((root, "_n", new_root))
    else:
        base = _wrap(anchor._n, anchor._ex)
        am = getattr(anchor, "_ag", None)
        if am is not None:
            base._ag = am
        pieces = (base, out, lay)
        new_root = _run_suspended(_views.copy_slices, pieces, {})._n
        new_meta = Meta(True, Node(_views.copy_slices, pieces, {}, _grad_inputs(pieces, {}), 1), 0)
        updates += [(root, "_n", new_root), (anchor, "_ag", new_meta)]
        if anchor is not root:
            updates.append((anchor, "_n", new_root))
    versions.written(t, root)  # one in-place write in the version counter (Tensor._version)
    for v in _views.family(root):  # every view shows the new values, read from the new root
        if v is anchor:
            continue
        updates.append((v, "_n", _views.gathered(new_root, v)))
        if v._view.detached:  # detach() shares the values, never the history
            continue
        if v._view.multi is not None:
            node = Invalid(_views.multi_view_error(v._view, True))
        else:  # fed by the anchor's new version, which is published only below
            node = Node(_views.as_strided, (anchor, v._view), {}, [anchor], 1)
            node.metas, node.natives = [new_meta], [new_root]
        updates.append((v, "_ag", Meta(True, node, 0)))
    _views.publish(updates)
    return t


def _stale(t, root, fn, args, kwargs):
    """The error the backward of the in-place op ``fn`` on ``t`` (of family ``root``) raises, as torch's, where
    the op reads an operand that shares ``t``'s memory (torch saved it, then the write changed it); else None."""
    name = getattr(fn, "__name__", "op")
    Tensor = _tensor_class()
    if name not in _READS_OPERANDS and not (  # lerp_ by a tensor weight reads all three (by a number, none)
            name == "lerp" and isinstance(args[2] if len(args) > 2 else kwargs.get("weight"), Tensor)):
        return None
    for a in (*args[1:], *kwargs.values()):
        if isinstance(a, Tensor):
            lay = getattr(a, "_view", None)
            if (a if lay is None else lay.root) is root:
                return (f"one of the variables needed for gradient computation has been modified by an inplace "
                        f"operation: [{a.type()} {list(a.shape)}], an operand of {name.strip('_')}_ that shares "
                        "memory with the tensor it wrote, so its backward cannot read the operand's value. Hint: "
                        "clone() the operand before the in-place operation.")
    return None


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


def _vjp(node, cotangents, primals=None):
    mx = _mlx()
    if node.__class__ is Invalid:
        raise TdxRuntimeError(node.message)
    if node.fn is None:
        raise TdxRuntimeError(_FREED)
    primals = node.natives if primals is None else primals
    prev = getattr(_local, "differentiating", False)
    try:  # set inside the try, so an interrupt right after it still restores the flag
        _local.differentiating = True
        _, grads = mx.vjp(lambda *xs: _distinct(node.replay(xs)), list(primals), list(cotangents))
    except NATIVE_ERRORS as err:
        raise node.inputs[0]._ex.native_error(err) from None
    finally:
        _local.differentiating = prev
    return grads


def _distinct(outs):
    """``outs`` with every output after the first copied: ``mx.vjp`` keeps only one cotangent of an
    array returned twice (a vjp of ``a + b`` returns its cotangent for both inputs, as one array under
    two Python objects), and the sum is wanted. Single-output ops, the common case, pay nothing."""
    if len(outs) < 2:
        return outs
    mx = _mlx()
    return [outs[0], *(mx.array(o) for o in outs[1:])]


def _node_vjp(node, k, *tensors):
    """The vector-Jacobian product of ``node`` as a facade op: ``tensors`` are its ``k`` inputs then the
    cotangents of its outputs. Recorded through :func:`call` when ``create_graph`` is set, so its own
    backward differentiates the vjp (``mx.vjp`` of ``mx.vjp``): second derivatives."""
    natives = [t._n for t in tensors]
    grads = _vjp(node, natives[k:], natives[:k])
    return tuple(_wrap(g, t._ex) for g, t in zip(grads, tensors))


def run_backward(roots, grad_roots,
                 retain_graph=False,  # mutate: equivalent (every caller passes it)
                 inputs=None, create_graph=False, accumulate=True):
    """Propagate ``grad_roots`` (natives, or Tensors when ``create_graph``) from ``roots`` to the leaves.

    With ``create_graph`` every vector-Jacobian product is itself recorded (a node whose backward
    differentiates it), so the gradients can be differentiated again.

    Args:
        inputs: the tensors whose gradients are wanted; None for every leaf.
        accumulate: accumulate into ``.grad`` (``backward``) rather than return (``autograd.grad``).

    Returns:
        With ``accumulate`` false, the gradients of ``inputs`` (natives, Tensors when ``create_graph``,
        or None); otherwise None, with ``.grad`` of the leaves (or of ``inputs``) accumulated as torch does.
    """
    prev = getattr(_local, "pass_", None)
    _local.pass_ = (bool(retain_graph or create_graph), accumulate and inputs is None)
    try:
        with (enable_grad() if create_graph else no_grad()):
            return _propagate(roots, grad_roots, retain_graph or create_graph, inputs, create_graph, accumulate)
    finally:
        _local.pass_ = prev


def _propagate(roots, grad_roots, retain_graph, inputs, create_graph, accumulate):
    pending = {}  # id(node) -> [cotangent per output]
    # the metas whose gradient is wanted: returned (autograd.grad) or accumulated into .grad (backward(inputs=))
    wanted = {id(t._ag): None for t in inputs if meta(t) is not None} if inputs is not None else None
    hooked = {}  # id(meta) -> meta, for leaves with post-accumulate-grad hooks, in delivery order
    held = {}  # id(meta) -> [meta, gradient so far, tensor]: leaves with gradient hooks, delivered once complete
    hooked_outputs = {}  # id(node) -> {id(meta): (meta, tensor)}: non-leaves with gradient hooks, by producer
    tensor_of = {id(t._ag): t for t in inputs if meta(t) is not None} if inputs is not None else {}
    nodes = []
    for root, g in zip(roots, grad_roots):
        m = meta(root)
        if m is None or not m.requires_grad:
            raise TdxRuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        if m.node is None:  # a leaf: its gradient is the given one
            if m.grad_hooks:
                _hold(held, m, g, root, wanted)
                continue
            _deliver(m, g, wanted, accumulate, create_graph, root)
            if accumulate and m.hooks:
                hooked[id(m)] = m
            continue
        if m.grad_hooks:
            hooked_outputs.setdefault(id(m.node), {})[id(m)] = (m, root)
        elif wanted is not None and id(m) in wanted:
            _deliver(m, g, wanted, accumulate, create_graph, root)
        slots = pending.setdefault(id(m.node), [None] * m.node.n_out)
        slots[m.index] = _plus(slots[m.index], g)
        nodes.append(m.node)
    order = []
    seen = set()
    for n in nodes:
        for x in _topo(n):
            if id(x) not in seen:
                seen.add(id(x))
                order.append(x)
    check = anomaly.is_anomaly_enabled()
    # reverse topological order: a node runs after every user of its outputs
    for node in reversed(order):
        slots = pending.pop(id(node), None)
        if slots is None:
            continue
        if node.fn is None:
            raise TdxRuntimeError(_FREED)
        if getattr(node, "stale", None) is not None:
            raise TdxRuntimeError(node.stale)
        for m, t in hooked_outputs.pop(id(node), {}).values():  # the output's gradient is complete: hook it
            if slots[m.index] is None:
                continue
            g = slots[m.index] = _run_grad_hooks(m, slots[m.index], t._ex, create_graph)
            if wanted is not None and id(m) in wanted:
                _deliver(m, g, wanted, accumulate, create_graph, tensor_of.get(id(m), t))
            if m.retain and accumulate and wanted is None:
                m.grad = (g if create_graph else _wrap(g, t._ex)) if m.grad is None else m.grad + g
        grads = _grads_of(node, slots, create_graph)
        if check:
            anomaly.check_grads(node, grads)
        for m, native, g, t in zip(node.metas, node.natives, grads, node.inputs):
            if g is None:
                continue
            g = _cast(g, native)
            if m.node is None and m.grad_hooks:
                _hold(held, m, g, tensor_of.get(id(m), t), wanted)
            elif m.node is None or (wanted is not None and id(m) in wanted and not m.grad_hooks):
                _deliver(m, g, wanted, accumulate, create_graph, tensor_of.get(id(m), t))
                if accumulate and m.node is None and m.hooks:
                    hooked[id(m)] = m
            if m.node is not None:
                if m.grad_hooks:
                    hooked_outputs.setdefault(id(m.node), {})[id(m)] = (m, t)
                elif m.retain and accumulate and wanted is None:  # torch's retain_grad hook: out of place
                    m.grad = (g if create_graph else _wrap(g, t._ex)) if m.grad is None else m.grad + g
                s = pending.setdefault(id(m.node), [None] * m.node.n_out)
                s[m.index] = _plus(s[m.index], g)
        if not retain_graph:
            _release(node)
    for m, g, t in held.values():  # the leaves' complete gradients, through their hooks
        _deliver(m, _run_grad_hooks(m, g, t._ex, create_graph), wanted, accumulate, create_graph, t)
        if accumulate and m.hooks:
            hooked[id(m)] = m
    if wanted is not None and not accumulate:
        return [wanted.get(id(meta(t))) for t in inputs]
    _fire_post_accumulate_hooks(hooked.values())
    return None


def _hold(held, m, g, t, wanted) -> None:
    """Sum a leaf's gradient contributions; its hooks see the total, as torch's (before AccumulateGrad)."""
    if wanted is not None and id(m) not in wanted:
        return
    entry = held.get(id(m))
    if entry is None:
        held[id(m)] = [m, g, t]
    else:
        entry[1] = _plus(entry[1], g)


def _run_grad_hooks(m, g, ex, create_graph):
    """``g`` passed through ``m``'s gradient hooks in registration order; a hook returning a tensor
    replaces the gradient.

    Raises:
        TdxTypeError: a hook returned something that is neither a tensor nor None (torch's TypeError).
        TdxRuntimeError: a hook returned a tensor of another shape.
    """
    for hook in list(m.grad_hooks.values()):
        given = g if create_graph else _wrap(g, ex)
        out = hook(given)
        if out is None:
            continue
        _need_tensor(out, "register_hook", "hook_result")  # torch's TypeError, as on torch executors
        if tuple(out.shape) != tuple(given.shape):
            raise TdxRuntimeError(f"hook '{getattr(hook, '__name__', hook)}' has changed the size of value: "
                                  f"expected {list(given.shape)}, got {list(out.shape)}")
        g = out if create_graph else out._n
    return g


def _release(node) -> None:
    """Free what only this backward needed: a node's saved arguments and its links to the graph above
    (a later backward through it raises torch's "backward through the graph a second time"). Every
    node kind (this module's, ``Function``'s, a cross-executor move's) holds ``fn``, ``inputs``,
    ``metas`` and ``natives``."""
    node.fn = None
    node.inputs = node.metas = node.natives = ()
    if isinstance(node, Node):
        node.args = node.kwargs = node.plan = None


def _fire_post_accumulate_hooks(metas) -> None:
    """Call each leaf's post-accumulate-grad hooks once its gradient of this backward is complete
    (torch calls them as ``hook(tensor)`` after AccumulateGrad)."""
    for m in list(metas):
        for ref, hook in list(m.hooks.values()):
            t = ref()
            if t is not None:
                hook(t)


def _plus(a, b):
    return b if a is None else a + b


def _cast(g, native):
    """``g`` (a native, or a Tensor when creating a graph) in the dtype of the input's ``native``."""
    if hasattr(g, "_n"):
        return g if g._n.dtype == native.dtype else g.to(g._ex.dtype(native))
    return g if g.dtype == native.dtype else g.astype(native.dtype)


def _grads_of(node, slots, create_graph):
    """The gradients of ``node``'s inputs for the cotangents ``slots`` of its outputs (None: unused)."""
    custom = getattr(node, "backward_of", None)
    if custom is not None:  # a tdx.autograd.Function: the user's backward
        return custom(slots, create_graph)
    mx = _mlx()
    if any(s is None for s in slots):  # mutate: equivalent (speed only: a pending node has a set slot)
        outs = node.outputs_like()
        ex = node.inputs[0]._ex
        slots = [s if s is not None else (_wrap(mx.zeros_like(outs[i]), ex) if create_graph else
                                          mx.zeros_like(outs[i])) for i, s in enumerate(slots)]
    if not create_graph:
        return _vjp(node, slots)
    prims = []
    for m, native, t in zip(node.metas, node.natives, node.inputs):
        p = _wrap(native, t._ex)
        p._ag = m  # the input as it was when the op ran, with its history
        prims.append(p)
    args = (node, len(prims), *prims, *slots)
    if any(getattr(a, "_ag", None) is not None and a._ag.requires_grad for a in args[2:]):
        return list(call(_node_vjp, *args))
    return list(_node_vjp(*args))


def _wrap(native, ex):
    """:func:`wrapping.wrap` (wrapping imports this module: bound at the first call, not per call)."""
    wrap = _WRAP[0]
    if wrap is None:
        from .wrapping import wrap

        _WRAP[0] = wrap
    return wrap(native, ex)


_WRAP = [None]


def _need_tensor(*args):
    from .wrapping import need_tensor

    return need_tensor(*args)


def _accumulate(m, g, ex, create_graph) -> None:
    """Add ``g`` to ``m.grad`` as torch's AccumulateGrad: the first gradient becomes ``.grad``; later ones
    are added in place into that same Tensor (its views see them), or out of place when a graph is
    being created (the new ``.grad`` then has a history). A leaf that stopped requiring grad after the
    forward pass (``requires_grad_(False)``) takes nothing, as torch's."""
    if not m.requires_grad:
        return
    old = m.grad
    if old is None:
        m.grad = g if create_graph else _wrap(g, ex)
        return
    if create_graph or hasattr(g, "_n"):
        m.grad = old + g
        return
    from . import views as _views

    _views.assign(old, old._ex.astype(old._ex.add(old._n, g), old.dtype))


def _deliver(m, g, wanted, accumulate, create_graph, t):
    if wanted is not None:
        if id(m) not in wanted:
            return
        if not accumulate:
            wanted[id(m)] = _plus(wanted[id(m)], g)
            return
    if accumulate:
        _accumulate(m, g, t._ex, create_graph)


def set_grad(t, value) -> None:
    """``t.grad = value``: ``t.grad`` is then ``value`` itself (torch's checks of size, dtype, device).

    Raises:
        TdxTypeError: ``value`` is neither a Tensor nor None.
        TdxRuntimeError: its size, dtype or device differs from ``t``'s.
    """
    ex = t._ex
    if value is None and ex.caps.native_autograd:  # the hot ``p.grad = None`` of training loops
        t._n.grad = None
        m = getattr(t, "_ag", None)
        if m is not None:
            m.grad = None
        return
    if ex.caps.native_autograd and isinstance(value, _tensor_class()) and value._ex is ex:
        try:  # torch checks size, dtype (its grad_dtype) and device itself, with its own words
            t._n.grad = value._n
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None
        m = meta(t)
        if m is None:
            m = t._ag = Meta()
        m.grad = value  # the wrapper ``.grad`` returns: ``value`` itself
        return
    if value is not None:
        if not isinstance(value, _tensor_class()):
            raise TdxTypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                               f"{type(value).__name__}")
        if value._ex is not ex:
            raise TdxRuntimeError(f"attempting to assign a gradient located on device '{value.device}' to a tensor "
                                  f"located on device '{t.device}'. Please ensure that the gradient and the tensor "
                                  "are on the same device")
        if tuple(value.shape) != tuple(t.shape):
            raise TdxRuntimeError(f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor of "
                                  f"size '{list(t.shape)}'. Please ensure that the gradient and the tensor are the "
                                  "same size")
        if value.dtype is not t.dtype:
            raise TdxRuntimeError(f"attempting to assign a gradient with dtype '{value.dtype}' to a tensor with "
                                  f"dtype '{t.dtype}'. The gradient must match the tensor's dtype")
    m = meta(t)  # a tape executor's (a torch executor's grad is set above, or refused)
    if m is None:
        if value is None:
            return
        m = t._ag = Meta()
    m.grad = value


def backward(t, gradient=None, retain_graph=None,
             create_graph=False, inputs=None) -> None:  # mutate: equivalent (Tensor.backward passes all)
    """``Tensor.backward`` for a tape tensor."""
    if gradient is None:
        if t.numel() != 1:
            raise TdxRuntimeError("grad can be implicitly created only for scalar outputs")
        mx = _mlx()
        g = mx.ones(t._n.shape, t._n.dtype)
        if create_graph:
            g = _wrap(g, t._ex)
    else:
        if gradient._ex is not t._ex:
            raise mismatch("backward", t._ex.device, gradient._ex.device)
        g = gradient if create_graph else gradient._n
    retain = create_graph if retain_graph is None else bool(retain_graph)
    run_backward([t], [g], retain_graph=retain, inputs=inputs, create_graph=create_graph)
