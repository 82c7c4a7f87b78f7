"""``torch.fx.Tracer`` and ``symbolic_trace`` for tdx modules and functions.

torch's tracer finds the calls to trace through ``torch.nn.Module`` patches and the
``__torch_function__`` protocol of its ``Proxy``; tdx has neither, so :class:`Tracer` (a subclass
of torch's) traces the same program shape its own way: while ``trace`` runs it patches
``tdx.nn.Module.__call__``/``__getattr__`` (a leaf module becomes one ``call_module`` node, a
parameter or buffer read a ``get_attr`` node) and wraps every public function of tdx's torch
namespaces (``torch.*``, ``torch.nn.functional.*``, ``torch.special/linalg/fft.*``), wherever the
traced code's globals hold it, so a call with a ``Proxy`` argument becomes a ``call_function``
node whose target is that tdx function. Tensor methods and operators on a ``Proxy`` are torch's
own ``call_method``/``call_function`` nodes. The graph and its nodes are torch's classes.

This module must never hand a real torch tensor to traced code; every patch is undone when
``trace`` returns or raises.
"""

from __future__ import annotations

import functools
import inspect
import math
import types

import torch.fx as _fx
from torch.fx import _symbolic_trace as _torch_trace
from torch.fx.graph import Graph

import tdx

from ..._errors import TdxTypeError
from ..nn.modules.container import Sequential
from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from .graph_module import GraphModule, TdxCodeGen, torch_names

__all__ = ["Tracer", "symbolic_trace", "wrap"]

wrap = _fx.wrap
_LEAF_PACKAGES = ("tdx.compat.nn.", "tdx.nn.")
_SEARCHED = ("tdx", "tdx.nn.functional", "tdx.special", "tdx.linalg", "tdx.fft")
_LITERALS = (tdx.dtype, tdx.device, tdx.memory_format, tdx.layout)


class Tracer(_fx.Tracer):
    """torch's ``Tracer`` for tdx: ``trace(root)`` of a ``tdx.nn.Module`` or a function gives an fx
    ``Graph``. Subclass it and override ``is_leaf_module`` (or ``call_module``, ``create_arg``...) as
    with torch's."""

    def __init__(self, autowrap_modules=(math,), autowrap_functions=(), param_shapes_constant: bool = False):
        super().__init__(autowrap_modules=autowrap_modules, autowrap_functions=autowrap_functions,
                         param_shapes_constant=param_shapes_constant)
        import importlib

        self._tdx_function_ids = {key for key, (obj, _) in torch_names().items() if not isinstance(obj, type)}
        self._tdx_search = [importlib.import_module(p) for p in _SEARCHED]

    def is_leaf_module(self, m, module_qualified_name: str) -> bool:
        """tdx's own ``nn`` modules (torch.nn's, under tdx) are leaves, except ``Sequential``."""
        return type(m).__module__.startswith(_LEAF_PACKAGES) and not isinstance(m, Sequential)

    def path_of_module(self, mod) -> str:
        """The qualified name of submodule ``mod`` in the root.

        Raises:
            NameError: ``mod`` is not a submodule of the root (torch's error kind).
        """
        paths = getattr(self, "submodule_paths", None)
        if paths:
            path = paths.get(mod)
            if path is not None:
                return path
        for name, candidate in self.root.named_modules():
            if candidate is mod:
                return name
        raise NameError("module is not installed as a submodule")

    def getattr(self, attr: str, attr_val, parameter_proxy_cache: dict):
        """A parameter or buffer read during tracing is a ``get_attr`` node (one per name)."""
        if isinstance(attr_val, tdx.Tensor):
            pool = self.root.named_parameters() if isinstance(attr_val, Parameter) else self.root.named_buffers()
            for name, value in pool:
                if value is attr_val:
                    if name not in parameter_proxy_cache:
                        parameter_proxy_cache[name] = self.create_proxy("get_attr", name, (), {})
                    return parameter_proxy_cache[name]
        return attr_val

    def create_arg(self, a):
        """Node arguments: tdx parameters and tensors become ``get_attr`` nodes (a tensor that is no
        attribute is kept on the root as ``_tensor_constant<N>``); dtypes and devices are literals."""
        if isinstance(a, Parameter):
            for name, p in self.root.named_parameters():
                if p is a:
                    return self.create_node("get_attr", name, (), {})
            raise NameError("parameter is not a member of this module")
        if isinstance(a, tdx.Tensor):
            name = self.tensor_attrs.get(a)
            if name is None:
                i = 0
                while hasattr(self.root, f"_tensor_constant{i}"):
                    i += 1
                name = f"_tensor_constant{i}"
                self.root.register_buffer(name, a)
                self.tensor_attrs[a] = name
            return self.create_node("get_attr", name, (), {})
        if isinstance(a, _LITERALS):
            return a
        return super().create_arg(a)

    def trace(self, root, concrete_args=None) -> Graph:
        """The fx ``Graph`` of ``root``'s ``forward`` (a ``tdx.nn.Module``) or of function ``root``.

        Raises:
            TdxTypeError: ``root`` is neither a tdx module nor a Python function.
        """
        if isinstance(root, Module):
            self.root = root
            fn = getattr(type(root), self.traced_func_name)
            self.root_module_name = type(root).__name__
            self.submodule_paths = {mod: name for name, mod in root.named_modules()}
        elif isinstance(root, types.FunctionType):
            self.root = Module()
            fn = root
        else:
            raise TdxTypeError(f"symbolic_trace: expected a tdx.nn.Module or a function, not {type(root).__name__}")
        self.graph = Graph(tracer_cls=type(self))
        self.graph.set_codegen(TdxCodeGen())
        self.tensor_attrs = {}
        self._collect_tensor_attrs(self.root, [])
        fn_globals = fn.__globals__
        fn, args = self.create_args_for_root(fn, isinstance(root, Module), concrete_args)
        cache: dict = {}
        original_getattr, original_call = Module.__getattr__, Module.__call__

        @functools.wraps(original_getattr)
        def module_getattr(mod, attr):
            return self.getattr(attr, original_getattr(mod, attr), cache)

        @functools.wraps(original_call)
        def module_call(mod, *args, **kwargs):
            def forward(*a, **k):
                return original_call(mod, *a, **k)

            scope = getattr(getattr(mod, "forward", mod), "__globals__", {})
            _torch_trace._autowrap_check(patcher, scope, self._autowrap_function_ids)
            self._wrap_tdx_functions(patcher, scope, visited)
            return self.call_module(mod, forward, args, kwargs)

        visited: set = set()
        try:
            with _torch_trace._new_patcher() as patcher:
                patcher.patch_method(Module, "__getattr__", module_getattr, deduplicate=False)
                patcher.patch_method(Module, "__call__", module_call, deduplicate=False)
                _torch_trace._patch_wrapped_functions(patcher)
                _torch_trace._autowrap_check(patcher, fn_globals, self._autowrap_function_ids)
                for module in self._autowrap_search:
                    _torch_trace._autowrap_check(patcher, module.__dict__, self._autowrap_function_ids)
                for scope in [fn_globals] + [m.__dict__ for m in self._tdx_search]:
                    self._wrap_tdx_functions(patcher, scope, visited)
                returns = inspect.get_annotations(inspect.unwrap(fn)).get("return")
                self.create_node("output", "output", (self.create_arg(fn(*args)),), {}, type_expr=returns)
        finally:
            self.submodule_paths = None
        return self.graph

    def _wrap_tdx_functions(self, patcher, scope: dict, visited: set) -> None:
        """Patch, in ``scope`` (a globals dict), every tdx torch-namespace function with one that records
        a ``call_function`` node when an argument is a Proxy (torch's functions do this through
        ``__torch_function__``)."""
        if id(scope) in visited:
            return
        visited.add(id(scope))
        for name, value in list(scope.items()):
            if not name.startswith("_") and id(value) in self._tdx_function_ids:
                patcher.patch(scope, name, _recording(value))

    def _collect_tensor_attrs(self, module, prefix: list) -> None:
        for key, value in vars(module).items():
            if isinstance(value, tdx.Tensor):
                self.tensor_attrs[value] = ".".join(prefix + [key])
        for key, child in module.named_children():
            self._collect_tensor_attrs(child, prefix + [key])


_FORMS: dict = {}


def _torch_form(fn):
    """How torch's graph records a call of the torch function that tdx's ``fn`` stands for: a Python
    function of torch's (``torch.nn.functional.relu``...) reaches ``__torch_function__`` with its
    required parameters positional and the others, defaults filled, as keywords; a builtin as called.
    Returns that Python function's signature, or None."""
    if id(fn) not in _FORMS:
        import importlib

        form = None
        path = torch_names()[id(fn)][1]
        module_path, _, name = path.rpartition(".")
        real = getattr(importlib.import_module(module_path), name, None)
        from torch._jit_internal import boolean_dispatched

        if real in boolean_dispatched:  # max_pool2d...: one of two functions, by a flag argument
            real = boolean_dispatched[real]["if_false"]
        if inspect.isfunction(real):
            sig = inspect.signature(real)
            kinds = {p.kind for p in sig.parameters.values()}
            if not kinds & {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD}:
                form = sig
        _FORMS[id(fn)] = form
    return _FORMS[id(fn)]


def _recording(fn):
    """``fn``, recording a ``call_function`` node of target ``fn`` when called with a Proxy argument
    (its arguments in the form torch's graph records them, see :func:`_torch_form`)."""
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        proxy = _torch_trace._find_proxy(args, kwargs)
        if proxy is None:
            return fn(*args, **kwargs)
        form = _torch_form(fn)
        if form is not None:
            try:
                bound = form.bind(*args, **kwargs)
            except TypeError:
                bound = None
            if bound is not None:
                bound.apply_defaults()
                params = form.parameters
                args = tuple(v for k, v in bound.arguments.items() if params[k].default is inspect.Parameter.empty)
                kwargs = {k: v for k, v in bound.arguments.items() if params[k].default is not inspect.Parameter.empty}
        return proxy.tracer.create_proxy("call_function", fn, args, kwargs)

    return wrapped


def symbolic_trace(root, concrete_args=None) -> GraphModule:
    """``torch.fx.symbolic_trace``: the ``GraphModule`` of a tdx module or function, traced by :class:`Tracer`."""
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)
