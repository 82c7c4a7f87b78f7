"""``tdx.compiler`` and ``tdx.compile``: compile a training or inference step per executor.

``tdx.compile(fn_or_module, ...)`` has ``torch.compile``'s signature. What it does depends on
the executor of the tensors the call sees:

- MLX: the whole call (forward, tdx's tape backward, optimizer update) is traced once by
  ``mx.compile``. Tensors the step reads and writes but does not take as arguments (the
  parameters, the optimizer's state, their ``.grad``) are its *state*: they are passed to
  the compiled function as inputs and their new values come back as outputs, then are
  rebound to the same ``tdx.Tensor`` objects. A Module's parameters and buffers are state
  by default, and so are the tensors, modules and optimizers the function names directly
  (its closure, the globals its code reads) and the tensors its arguments hold (a KV cache
  object's buffers, written in place by the step); anything else is declared with
  ``options={"state": [...]}`` (tensors, modules, optimizers). The state is gathered again
  at every call, and a change in its structure (an optimizer creating its state on the first
  step) traces again. A step whose arguments hold tensors runs eagerly until a call leaves
  those tensors as it found them (a cache allocating its buffers on its first call, as
  transformers' static cache does, allocates them eagerly; one that replaces them at every
  call, a cache grown by ``cat``, keeps running eagerly, with one warning): a trace runs the
  step's Python once, so it must find the tensors it writes already in place. Calls that pass
  other plain values (ints, floats, strings, None) trace again for each new value, as
  TorchDynamo guards on them. The step may
  return tensors in tuples, lists, named tuples and dicts (transformers' ``ModelOutput``
  included), nested, beside values that are not tensors (kept as the trace saw them).
- torch executors: ``torch.compile`` with the caller's switches (``fullgraph``, ``dynamic``,
  ``backend``, ``mode``): TorchDynamo traces tdx's facade like any Python code down to the
  torch calls it makes; :func:`is_compiling` is True while Dynamo traces, so library code takes
  its traceable path, and :func:`reset` drops Dynamo's compiled code. Where torch.compile fails
  (no C++ toolchain for inductor, a construct Dynamo refuses under ``fullgraph=True``...), the
  step runs eagerly from then on, with one warning per compiled function that says why.
- tensors on several executors: eagerly, with one warning.

Under an MLX trace nothing may be evaluated: ``.item()``, ``bool(t)`` and printing raise
MLX's error. :func:`is_compiling` is true then, and tdx skips the checks that would read
values (``cross_entropy``'s target bounds). This module must never import a framework at
module level.
"""

from __future__ import annotations

import copy
import functools
import itertools
import threading
import warnings
import weakref

from .._errors import TdxTypeError, TdxValueError
from .._device import device as _Device
from .._tensor.tensor import Tensor as _Tensor
from .._tensor.tracing import TRACE as _local  # whether this thread traces a step (the facade reads it too)
from .._tensor.wrapping import wrap as _wrap

__all__ = ["compile", "is_compiling", "is_dynamo_compiling", "is_exporting", "disable", "reset", "allow_in_graph",
           "assume_constant_result", "cudagraph_mark_step_begin", "set_stance"]


_DYNAMO = [None]  # real torch's torch.compiler.is_compiling, set when tdx.compile first hands a step to torch.compile


def is_compiling() -> bool:
    """Whether the current thread is tracing a step for ``tdx.compile`` (as ``torch.compiler.is_compiling``):
    MLX's trace, or TorchDynamo's on a torch executor (real torch's own answer, which Dynamo reads as True while
    it traces this function, so library code that branches on it takes its traceable path)."""
    if _local.tracing:
        return True
    dynamo = _DYNAMO[0]
    return dynamo is not None and dynamo()


def is_dynamo_compiling() -> bool:
    """Whether TorchDynamo is tracing: the same question as :func:`is_compiling` in tdx."""
    return is_compiling()


def is_exporting() -> bool:
    """False: tdx has no ``torch.export`` tracer (torch answers True only inside ``torch.export``)."""
    return False


def allow_in_graph(fn):
    """``fn`` itself: tdx traces whole steps, so every function is already in the graph (torch's signature)."""
    return fn


def assume_constant_result(fn):
    """``fn`` itself: a tracing hint with no effect on what tdx computes (torch's signature)."""
    return fn


def cudagraph_mark_step_begin() -> None:
    """Nothing to mark: tdx records no CUDA graphs (torch's signature)."""


def disable(fn=None, recursive=True):
    """``fn`` itself: tdx compiles whole steps, so there is nothing to exclude (torch's signature)."""
    if fn is None:
        return lambda f: f
    return fn


_STANCE = ["default"]  # torch.compiler.set_stance's: "force_eager" runs every compiled function eagerly


class set_stance:  # noqa: N801 - torch's name
    """Set how compiled functions run from now on (``"force_eager"``: eagerly; ``"default"``, ``"eager_on_recompile"``,
    ``"fail_on_recompile"``: compiled, as tdx compiles per shape), as ``torch.compiler.set_stance``; as a context
    manager or decorator, only within the block or the decorated function.

    Args:
        stance: the stance's name.
        skip_guard_eval_unsafe, force_backend: torch's switches; no effect in tdx.
    """

    def __init__(self, stance: str = "default", *, skip_guard_eval_unsafe: bool = False, force_backend=None):
        self.stance, self.prev = stance, _STANCE[0]
        _STANCE[0] = stance

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _STANCE[0] = self.prev
        return False

    def __call__(self, fn):
        _STANCE[0] = self.prev  # as a decorator: the stance holds only while fn runs

        @functools.wraps(fn)
        def within(*args, **kwargs):
            prev, _STANCE[0] = _STANCE[0], self.stance
            try:
                return fn(*args, **kwargs)
            finally:
                _STANCE[0] = prev

        return within


def reset() -> None:
    """Forget TorchDynamo's compiled code (``torch.compiler.reset``) when a step was handed to ``torch.compile``;
    tdx's MLX steps keep their cache in each compiled function, which nothing else reaches (torch's signature)."""
    if _DYNAMO[0] is not None:
        import torch

        torch.compiler.reset()


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None,  # noqa: A001
            options=None, disable=False):  # noqa: A002 - torch's names
    """Compile ``model`` (a function or a Module) for the executor its tensors live on.

    Args:
        model: the function or Module; None returns a decorator.
        fullgraph, dynamic, backend, mode: torch's switches, passed to ``torch.compile`` on torch
            executors (MLX traces the whole step whatever they say).
        options: ``{"state": [...]}`` names the tensors, modules and optimizers the step reads and
            writes besides its arguments; any other key raises.
        disable: return ``model`` unchanged.

    Raises:
        TdxTypeError: ``model`` is not callable.
        TdxValueError: an unknown key in ``options``.
    """
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, disable=disable)
    if not callable(model):
        raise TdxTypeError(f"compile(): expected a function or Module, got {type(model).__name__}")
    options = dict(options or {})
    unknown = set(options) - {"state"}
    if unknown:
        raise TdxValueError(f"compile(): unknown options {sorted(unknown)}; tdx accepts 'state'")
    if disable:
        return model
    return _Compiled(model, list(options.get("state", ())),
                     {"fullgraph": fullgraph, "dynamic": dynamic, "backend": backend, "mode": mode})


def _tensors_of(obj, out: list) -> None:
    """Append the state tensors ``obj`` stands for (a Tensor, a Module, an Optimizer or a list)."""
    if isinstance(obj, _Tensor):
        out.append(obj)
    elif isinstance(getattr(obj, "_modules", None), dict) and isinstance(getattr(obj, "_parameters", None), dict):
        _module_tensors(obj, out, set())
    elif hasattr(obj, "parameters") and hasattr(obj, "buffers"):
        out.extend(obj.parameters())
        out.extend(b for b in obj.buffers() if b is not None)
    elif hasattr(obj, "param_groups") and hasattr(obj, "state"):
        for group in obj.param_groups:
            out.extend(group["params"])
        for st in obj.state.values():
            out.extend(v for v in st.values() if isinstance(v, _Tensor))
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors_of(o, out)
    else:
        raise TdxTypeError(f"compile(): state entries must be tensors, modules or optimizers, got "
                           f"{type(obj).__name__}")


_WALKS: dict = {}  # id(module) -> (a weak reference to it, the dicts of its tree, their values' ids, its tensors)


def _module_tensors(module, out: list, seen: set) -> None:
    """Append a Module's parameters and buffers, its own then its submodules' (each module once), as
    ``parameters()`` and ``buffers()`` give them. Every call of a compiled step gathers them: the walk is kept
    while the ids of the values of every ``_parameters``/``_buffers``/``_modules`` dict of the tree are the same
    (read in one pass of C, where walking the tree in Python takes many times longer)."""
    entry = _WALKS.get(id(module))
    if entry is not None and entry[0]() is module and _values_ids(entry[1]) == entry[2]:
        out.extend(entry[3])
        return
    dicts, tensors = [], []
    _walk(module, dicts, tensors, seen)
    try:
        ref = weakref.ref(module)
    except TypeError:  # a module class without weak references: walked at every call
        out.extend(tensors)
        return
    if len(_WALKS) >= 64:  # a bound, not a policy: a program compiles a few models
        _WALKS.clear()
    _WALKS[id(module)] = (ref, dicts, _values_ids(dicts), tensors)
    out.extend(tensors)


def _values_ids(dicts: list) -> tuple:
    return tuple(map(id, itertools.chain.from_iterable(map(dict.values, dicts))))


def _walk(module, dicts: list, out: list, seen: set) -> None:
    seen.add(id(module))
    dicts += (module._parameters, module._buffers, module._modules)
    out.extend(p for p in module._parameters.values() if p is not None)
    out.extend(b for b in module._buffers.values() if b is not None)
    for child in module._modules.values():
        if child is not None and id(child) not in seen:
            _walk(child, dicts, out, seen)


def _named_by(fn) -> list:
    """The tensors, modules and optimizers ``fn`` names directly: its closure's cells, the module globals its code
    reads, a bound method's object. A step that trains a global model with a global optimizer
    (``@tdx.compile def step(x, y): ... opt.step()``) writes them as torch.compile's would see them, without
    declaring them as state; what it reaches only through other functions must still be declared."""
    owner = getattr(fn, "__self__", None)
    func = getattr(fn, "__func__", fn)
    code = getattr(func, "__code__", None)
    if code is None:
        return []
    found = [] if owner is None else [owner]
    for cell in getattr(func, "__closure__", None) or ():
        try:
            found.append(cell.cell_contents)
        except ValueError:  # a cell not yet bound
            continue
    names = getattr(func, "__globals__", {})
    found += [names[n] for n in code.co_names if n in names]
    return [o for o in found if isinstance(o, _Tensor) or (not isinstance(o, type) and (
        (hasattr(o, "parameters") and hasattr(o, "buffers")) or (hasattr(o, "param_groups") and hasattr(o, "state"))))]


_PLAIN = (int, float, bool, str, bytes, complex, type(None))
_PLAIN_CLASSES = frozenset(_PLAIN)
_NO_GRAD = [None]  # MLX's 0.0, the compiled step's input for a state tensor without .grad (made on first use)
_MX = [None]  # mlx.core, imported by the first MLX step


def _mlx():
    mx = _MX[0]
    if mx is None:
        import mlx.core as mx

        _MX[0] = mx
    return mx


_HELD_DEPTH = 4  # how deep into argument objects held tensors are looked for (a cache, its layers, their buffers)
_UNSETTLED_WARN = 3  # eager calls in a row whose held tensors were replaced, before the one warning says so


def _held(values, out: list, seen: set, depth: int = _HELD_DEPTH) -> bool:
    """Append the tdx tensors ``values`` hold inside objects, lists, tuples and dicts (not the tensors among
    ``values`` themselves: those are the step's arguments). Modules, optimizers, classes and functions are not
    looked into: a Module's tensors are state when it is the step or is declared. Returns whether an object's
    attributes were looked into (one that holds no tensor yet, a cache before its first call, may make some).
    Runs at every call of a compiled step: the common classes are told apart by identity first."""
    holder = False
    for v in values:
        cls = v.__class__
        if cls in _PLAIN_CLASSES or cls is _Tensor or id(v) in seen:
            continue
        seen.add(id(v))
        if cls is list or cls is tuple or isinstance(v, (list, tuple)):
            inner = v
        elif isinstance(v, dict):
            inner = v.values()
        elif isinstance(v, (type, _Device)) or callable(v) or hasattr(v, "param_groups") or hasattr(v, "parameters"):
            continue
        else:
            inner = getattr(v, "__dict__", None)
            if inner is None:
                continue
            inner = inner.values()
            holder = True
        for x in inner:
            if x.__class__ is _Tensor:
                if id(x) not in seen:
                    seen.add(id(x))
                    out.append(x)
            elif depth > 1 and x.__class__ not in _PLAIN_CLASSES:
                holder = _held((x,), out, seen, depth - 1) or holder
    return holder


def _plain_key(args, kwargs) -> tuple:
    """The plain values among the arguments (ints, strings, None...), with their places: a trace keeps them as
    constants, so another value traces again."""
    key = [(i, a) for i, a in enumerate(args) if isinstance(a, _PLAIN)]
    key += [(k, v) for k, v in kwargs.items() if isinstance(v, _PLAIN)]
    return tuple(key)


class _Compiled:
    """The callable ``tdx.compile`` returns."""

    def __init__(self, fn, state, torch_switches):
        self.fn, self.state = fn, state
        self._cache = {}
        self._settled = set()  # keys of calls whose held tensors one eager call left in place: the next one traces
        self._live = threading.local()  # .call: the state, args and kwargs of the call running the compiled step
        self._unsettled = 0  # eager calls in a row that replaced held tensors
        self._warned = False
        self._torch_switches = torch_switches
        self._torch_fn = None  # torch.compile(fn), made on the first call on a torch executor
        functools.update_wrapper(self, fn, updated=())

    @property
    def _orig_mod(self):
        """The function or module compiled (``torch.compile(module)._orig_mod``)."""
        return self.fn

    def _eager(self, why: str, args, kwargs):
        self._eager_warning(why, stacklevel=4)
        return self.fn(*args, **kwargs)

    def _eager_warning(self, why: str, stacklevel: int) -> None:
        """Say once why this step runs eagerly (``stacklevel``: the frames up to the caller's call)."""
        if not self._warned:
            self._warned = True
            warnings.warn(f"tdx.compile: {getattr(self.fn, '__name__', type(self.fn).__name__)} runs eagerly ({why})",
                          UserWarning, stacklevel=stacklevel)

    def _torch_call(self, args, kwargs):
        """The call through ``torch.compile``; on its failure, eagerly from then on (one warning)."""
        if self._torch_fn is False:
            return self.fn(*args, **kwargs)
        import torch
        from torch._dynamo.exc import TorchDynamoException

        if self._torch_fn is None:
            _DYNAMO[0] = torch.compiler.is_compiling
            self._torch_fn = torch.compile(self.fn, **self._torch_switches)
        try:
            return self._torch_fn(*args, **kwargs)
        except TorchDynamoException as err:  # raised while tracing or compiling, before the step ran
            self._torch_fn = False
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            return self._eager(f"torch.compile failed: {type(err).__name__}: {first}", args, kwargs)

    def _state_tensors(self) -> list:
        out = []
        _tensors_of([self.fn] + self.state if hasattr(self.fn, "parameters") else self.state, out)
        seen, unique = set(), []
        for t in out:
            if id(t) not in seen:
                seen.add(id(t))
                unique.append(t)
        return unique

    def __call__(self, *args, **kwargs):
        if _STANCE[0] == "force_eager":
            return self.fn(*args, **kwargs)
        state = self._state_tensors()
        flat_args = [a for a in list(args) + list(kwargs.values()) if isinstance(a, _Tensor)]
        ex = getattr((flat_args or state or [None])[0], "_ex", None)
        named = []  # looked for only where a trace needs them (torch.compile sees the function's names itself)
        if ex is None or not ex.caps.native_autograd:
            _tensors_of(_named_by(self.fn), named)
            if ex is None and named:
                ex = named[0]._ex
        if ex is None:
            return self._eager("it takes no tensors and declares no state: nothing says which executor", args, kwargs)
        if any(t._ex is not ex for t in state + flat_args):
            return self._eager("its tensors live on several executors; tdx compiles steps on one", args, kwargs)
        if ex.caps.native_autograd:
            return self._torch_call(args, kwargs)
        held = []
        holder = _held((*args, *kwargs.values()), held, set())
        if any(t._ex is not ex for t in held):  # a trace would write another executor's tensor only once
            return self._eager("its arguments hold tensors on several executors; tdx compiles steps on one", args,
                               kwargs)
        seen = {id(t) for t in state}
        for t in named + held:  # named: a trace would keep them as constants; held: the step writes them
            if t._ex is ex and id(t) not in seen:
                seen.add(id(t))
                state.append(t)
        return self._mlx_call(ex, state, args, kwargs, held, holder)

    def _mlx_call(self, ex, state, args, kwargs, held=(), holder=False):
        mx = _mlx()
        arg_pos = [i for i, a in enumerate(args) if isinstance(a, _Tensor)]
        kw_keys = [k for k, v in kwargs.items() if isinstance(v, _Tensor)]
        # the state by identity, except the tensors argument objects hold, by count: a new cache object of the
        # same structure (transformers makes one per generate call) hands its buffers to the same trace
        held_ids = {id(t) for t in held}
        key = (tuple(id(t) for t in state if id(t) not in held_ids), len(held), tuple(arg_pos), tuple(kw_keys),
               _plain_key(args, kwargs))
        entry = self._cache.get(key)
        if entry is None:
            if holder and key not in self._settled:
                return self._settling_call(key, held, args, kwargs)
            entry = self._cache[key] = self._trace(ex, arg_pos, kw_keys)
        compiled, layout = entry
        self._live.call = (state, args, kwargs)  # what a retrace (MLX's, on new shapes) runs the step on
        state_in = [t._n for t in state]
        before = [None if getattr(t, "_ag", None) is None else t.grad for t in state]  # MLX: .grad lives in _ag
        if _NO_GRAD[0] is None:
            _NO_GRAD[0] = mx.array(0.0)  # the stand-in of a missing .grad (one array, never written)
        grads_in = [_NO_GRAD[0] if g is None else g._n for g in before]
        outs, state_out, grads_out = compiled(state_in, grads_in, [args[i]._n for i in arg_pos],
                                              [kwargs[k]._n for k in kw_keys])
        for t, n in zip(state, state_out):
            t._n = n
            t._dt = None  # the traced step may have given it another dtype
        for t, has, g, old in zip(state, layout["grads"], grads_out, before):
            if has:
                t.grad = _wrap(g, ex)
            elif old is not None:
                t.grad = None
        return _rebuild(layout["out"], [_wrap(o, ex) for o in outs], args, kwargs)

    def _settling_call(self, key, held, args, kwargs):
        """Run the step eagerly; where it left the tensors its arguments hold in place, the next call with the
        same key traces it (a trace runs the step's Python once and cannot see a buffer made or replaced)."""
        out = self.fn(*args, **kwargs)
        after = []
        _held((*args, *kwargs.values()), after, set())
        if [id(t) for t in after] == [id(t) for t in held]:
            self._settled.add(key)
            self._unsettled = 0
        else:
            self._unsettled += 1
            if self._unsettled == _UNSETTLED_WARN and not self._cache:  # never traced: say why
                self._eager_warning("the tensors its arguments hold are replaced at every call (a cache grown by "
                                    "cat): a trace needs them written in place", stacklevel=5)
        return out

    def _trace(self, ex, arg_pos, kw_keys):
        mx = _mlx()
        layout = {"grads": [], "out": None}
        fn = self.fn

        def pure(state_in, grads_in, arg_natives, kw_natives):
            state, args, kwargs = self._live.call  # this call's tensors and objects, not the first trace's
            saved = [(t._n, t.grad) for t in state]
            _local.tracing = True
            try:
                for t, n, g, (_, old_g) in zip(state, state_in, grads_in, saved):
                    t._n = n
                    t._dt = None
                    t.grad = _wrap(g, ex) if old_g is not None else None
                call_args = list(args)
                for i, n in zip(arg_pos, arg_natives):
                    call_args[i] = _wrap(n, ex)
                call_kw = dict(kwargs)
                for k, n in zip(kw_keys, kw_natives):
                    call_kw[k] = _wrap(n, ex)
                outs = []
                given = {id(v): ("arg", i) for i, v in enumerate(args) if not isinstance(v, _PLAIN)}
                given.update({id(v): ("kwarg", k) for k, v in kwargs.items() if not isinstance(v, _PLAIN)})
                layout["out"] = _flatten(fn(*call_args, **call_kw), outs, given)
                grads = [t.grad for t in state]
                layout["grads"] = [g is not None for g in grads]
                return ([o._n for o in outs], [t._n for t in state],
                        [g._n if g is not None else mx.array(0.0) for g in grads])
            finally:
                _local.tracing = False
                for t, (n, g) in zip(state, saved):
                    t._n = n
                    t._dt = None
                    t.grad = g

        return mx.compile(pure), layout


def _flatten(out, leaves: list, given: dict):
    """``out``'s structure, with each tdx tensor in it appended to ``leaves`` (rebuilt by :func:`_rebuild`); an
    argument returned as it was (a cache object in a model's output) is its place among the arguments (``given``:
    id -> place), so a later call returns its own."""
    if isinstance(out, _Tensor):
        leaves.append(out)
        return ("leaf", len(leaves) - 1)
    place = given.get(id(out))
    if place is not None:
        return place
    if isinstance(out, dict):  # dict, OrderedDict, transformers' ModelOutput: a copy gets the new values
        return ("map", out, [(k, _flatten(v, leaves, given)) for k, v in out.items()])
    if isinstance(out, (tuple, list)):
        return ("seq", out, [_flatten(v, leaves, given) for v in out])
    return ("const", out)


def _rebuild(spec, values: list, args: tuple, kwargs: dict):
    """The output :func:`_flatten` described, with ``values`` (the compiled step's tensors) in its leaves and this
    call's ``args``/``kwargs`` in an argument's places."""
    kind, obj = spec[0], spec[1]
    if kind == "leaf":
        return values[obj]
    if kind == "const":
        return obj
    if kind == "arg":
        return args[obj]
    if kind == "kwarg":
        return kwargs[obj]
    if kind == "map":
        new = copy.copy(obj)
        for k, sub in spec[2]:
            new[k] = _rebuild(sub, values, args, kwargs)
        return new
    items = [_rebuild(sub, values, args, kwargs) for sub in spec[2]]
    if hasattr(obj, "_fields"):  # a named tuple
        return type(obj)(*items)
    return type(obj)(items)
