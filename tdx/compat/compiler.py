"""``tdx.compiler`` and ``tdx.compile``: compile a training or inference step per executor.

``tdx.compile(fn_or_module, ...)`` has ``torch.compile``'s signature. What it does depends on
the executor of the tensors the call sees:

- MLX: the whole call (forward, tdx's tape backward, optimizer update) is traced once by
  ``mx.compile``. Tensors the step reads and writes but does not take as arguments (the
  parameters, the optimizer's state, their ``.grad``) are its *state*: they are passed to
  the compiled function as inputs and their new values come back as outputs, then are
  rebound to the same ``tdx.Tensor`` objects. A Module's parameters and buffers are state
  by default, and so are the tensors, modules and optimizers the function names directly
  (its closure, the globals its code reads); anything else is declared with
  ``options={"state": [...]}`` (tensors, modules, optimizers). The state is gathered again
  at every call, and a change in its structure (an optimizer creating its state on the first
  step) traces again. The step may
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
import threading
import warnings

from .._errors import TdxTypeError, TdxValueError

__all__ = ["compile", "is_compiling", "is_dynamo_compiling", "is_exporting", "disable", "reset", "allow_in_graph",
           "assume_constant_result", "cudagraph_mark_step_begin", "set_stance"]

class _Tracing(threading.local):
    """Whether this thread traces a step (``tracing``): a class default, so reading it in a thread that never
    traced is a plain attribute read (``is_compiling`` runs on every attention call and in library code)."""

    tracing = False


_local = _Tracing()


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
    import tdx

    if isinstance(obj, tdx.Tensor):
        out.append(obj)
    elif hasattr(obj, "parameters") and hasattr(obj, "buffers"):
        out.extend(obj.parameters())
        out.extend(b for b in obj.buffers() if b is not None)
    elif hasattr(obj, "param_groups") and hasattr(obj, "state"):
        for group in obj.param_groups:
            out.extend(group["params"])
        for st in obj.state.values():
            out.extend(v for v in st.values() if isinstance(v, tdx.Tensor))
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors_of(o, out)
    else:
        raise TdxTypeError(f"compile(): state entries must be tensors, modules or optimizers, got "
                           f"{type(obj).__name__}")


def _named_by(fn) -> list:
    """The tensors, modules and optimizers ``fn`` names directly: its closure's cells, the module globals its code
    reads, a bound method's object. A step that trains a global model with a global optimizer
    (``@tdx.compile def step(x, y): ... opt.step()``) writes them as torch.compile's would see them, without
    declaring them as state; what it reaches only through other functions must still be declared."""
    import tdx

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
    return [o for o in found if isinstance(o, tdx.Tensor) or (not isinstance(o, type) and (
        (hasattr(o, "parameters") and hasattr(o, "buffers")) or (hasattr(o, "param_groups") and hasattr(o, "state"))))]


class _Compiled:
    """The callable ``tdx.compile`` returns."""

    def __init__(self, fn, state, torch_switches):
        self.fn, self.state = fn, state
        self._cache = {}
        self._warned = False
        self._torch_switches = torch_switches
        self._torch_fn = None  # torch.compile(fn), made on the first call on a torch executor
        functools.update_wrapper(self, fn, updated=())

    @property
    def _orig_mod(self):
        """The function or module compiled (``torch.compile(module)._orig_mod``)."""
        return self.fn

    def _eager(self, why: str, args, kwargs):
        if not self._warned:
            self._warned = True
            warnings.warn(f"tdx.compile: {getattr(self.fn, '__name__', type(self.fn).__name__)} runs eagerly ({why})",
                          UserWarning, stacklevel=3)
        return self.fn(*args, **kwargs)

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
        import tdx

        if _STANCE[0] == "force_eager":
            return self.fn(*args, **kwargs)
        state = self._state_tensors()
        flat_args = [a for a in list(args) + list(kwargs.values()) if isinstance(a, tdx.Tensor)]
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
        if named:  # the tensors the step names on its executor are state too (a trace would keep them as constants)
            seen = {id(t) for t in state}
            for t in named:
                if t._ex is ex and id(t) not in seen:
                    seen.add(id(t))
                    state.append(t)
        return self._mlx_call(ex, state, args, kwargs)

    def _mlx_call(self, ex, state, args, kwargs):
        import mlx.core as mx

        import tdx

        from .._tensor.wrapping import wrap

        arg_pos = [i for i, a in enumerate(args) if isinstance(a, tdx.Tensor)]
        kw_keys = [k for k, v in kwargs.items() if isinstance(v, tdx.Tensor)]
        key = (tuple(id(t) for t in state), tuple(arg_pos), tuple(kw_keys))
        entry = self._cache.get(key)
        if entry is None:
            entry = self._cache[key] = self._trace(ex, state, args, kwargs, arg_pos, kw_keys)
        compiled, layout = entry
        state_in = [t._n for t in state]
        grads_in = [g._n if (g := t.grad) is not None else mx.array(0.0) for t in state]
        outs, state_out, grads_out = compiled(state_in, grads_in, [args[i]._n for i in arg_pos],
                                              [kwargs[k]._n for k in kw_keys])
        for t, n in zip(state, state_out):
            t._n = n
            t._dt = None  # the traced step may have given it another dtype
        for t, has, g in zip(state, layout["grads"], grads_out):
            t.grad = wrap(g, ex) if has else None
        return _rebuild(layout["out"], [wrap(o, ex) for o in outs])

    def _trace(self, ex, state, args, kwargs, arg_pos, kw_keys):
        import mlx.core as mx

        from .._tensor.wrapping import wrap

        layout = {"grads": [], "out": None}
        fn = self.fn

        def pure(state_in, grads_in, arg_natives, kw_natives):
            saved = [(t._n, t.grad) for t in state]
            _local.tracing = True
            try:
                for t, n, g, (_, old_g) in zip(state, state_in, grads_in, saved):
                    t._n = n
                    t._dt = None
                    t.grad = wrap(g, ex) if old_g is not None else None
                call_args = list(args)
                for i, n in zip(arg_pos, arg_natives):
                    call_args[i] = wrap(n, ex)
                call_kw = dict(kwargs)
                for k, n in zip(kw_keys, kw_natives):
                    call_kw[k] = wrap(n, ex)
                outs = []
                layout["out"] = _flatten(fn(*call_args, **call_kw), outs)
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


def _flatten(out, leaves: list):
    """``out``'s structure, with each tdx tensor in it appended to ``leaves`` (rebuilt by :func:`_rebuild`)."""
    import tdx

    if isinstance(out, tdx.Tensor):
        leaves.append(out)
        return ("leaf", len(leaves) - 1)
    if isinstance(out, dict):  # dict, OrderedDict, transformers' ModelOutput: a copy gets the new values
        return ("map", out, [(k, _flatten(v, leaves)) for k, v in out.items()])
    if isinstance(out, (tuple, list)):
        return ("seq", out, [_flatten(v, leaves) for v in out])
    return ("const", out)


def _rebuild(spec, values: list):
    """The output :func:`_flatten` described, with ``values`` (the compiled step's tensors) in its leaves."""
    kind, obj = spec[0], spec[1]
    if kind == "leaf":
        return values[obj]
    if kind == "const":
        return obj
    if kind == "map":
        new = copy.copy(obj)
        for k, sub in spec[2]:
            new[k] = _rebuild(sub, values)
        return new
    items = [_rebuild(sub, values) for sub in spec[2]]
    if hasattr(obj, "_fields"):  # a named tuple
        return type(obj)(*items)
    return type(obj)(items)
