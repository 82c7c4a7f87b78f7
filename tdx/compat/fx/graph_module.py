"""``torch.fx.GraphModule`` for tdx: a ``tdx.nn.Module`` whose ``forward`` is the Python code of an
fx ``Graph`` (torch's own ``Graph``/``Node`` classes, which know nothing of tensors).

The module copies from its root the submodules, parameters and buffers that the graph's
``get_attr``/``call_module`` nodes name, so it holds tdx tensors and runs on every executor;
``recompile`` regenerates ``forward`` from the graph with :class:`TdxCodeGen`, which writes each
tdx function by the name torch's fx gives the torch function it stands for (``torch.relu``,
``torch._C._nn.linear``) and binds ``torch`` in the code's globals to :class:`TorchPaths`, which
resolves those names to tdx's objects, so ``.code`` reads as torch's.

This module must never put a real torch tensor or module into a GraphModule; it imports torch's
``torch.fx`` (pure graph machinery) only when first used through :mod:`tdx.fx`.
"""

from __future__ import annotations

import itertools
import linecache

from torch.fx.graph import CodeGen

import tdx

from ..._errors import TdxTypeError
from ..nn.modules.module import Module
from ..nn.parameter import Parameter

__all__ = ["GraphModule", "TdxCodeGen", "TorchPaths", "torch_names"]

_NAMESPACES = (("torch", "tdx"), ("torch.nn.functional", "tdx.nn.functional"), ("torch.special", "tdx.special"),
               ("torch.linalg", "tdx.linalg"), ("torch.fft", "tdx.fft"))
_NAMES: dict = {}
_COUNTER = itertools.count()


def torch_names() -> dict:
    """``{id(tdx object): (object, name)}`` for the public functions and the Tensor class of tdx's torch
    namespaces, ``name`` being how torch's own fx code names the torch object they stand for
    (``torch.relu``, ``torch.nn.functional.relu``, ``torch._C._nn.gelu``...). Built once."""
    if not _NAMES:
        import importlib

        from torch.fx.node import _get_qualified_name

        for torch_path, tdx_path in _NAMESPACES:
            module = importlib.import_module(tdx_path)
            real_module = importlib.import_module(torch_path)
            for name in getattr(module, "__all__", None) or dir(module):
                if name.startswith("_"):
                    continue
                value = getattr(module, name, None)
                if callable(value) and not isinstance(value, type) and id(value) not in _NAMES:
                    _NAMES[id(value)] = (value, _qualified(getattr(real_module, name, None), f"{torch_path}.{name}",
                                                           _get_qualified_name))
        _NAMES[id(tdx.Tensor)] = (tdx.Tensor, "torch.Tensor")
        _NAMES[id(Parameter)] = (Parameter, "torch.nn.Parameter")
        _PATHS.update({name: obj for obj, name in _NAMES.values()})
    return _NAMES


def _qualified(real, path: str, qualify) -> str:
    """torch's fx name of ``real`` (the torch object at ``path``), or ``path`` where it has none."""
    if real is None or isinstance(real, type):
        return path
    try:
        name = qualify(real)
    except (AttributeError, RuntimeError, TypeError):
        return path
    return name if name.startswith("torch.") else path


_PATHS: dict = {}


class TorchPaths:
    """The ``torch`` of generated code: ``torch.<dotted path>`` is the tdx object that torch name stands
    for (``torch._C._nn.gelu`` is tdx's ``gelu``), else the tdx attribute of the same path."""

    __slots__ = ("_path",)

    def __init__(self, path: str = "torch"):
        self._path = path

    def __getattr__(self, name: str):
        full = f"{self._path}.{name}"
        found = _PATHS.get(full)
        if found is not None:
            return found
        if any(key.startswith(full + ".") for key in _PATHS):
            return TorchPaths(full)
        import importlib

        parts = full.split(".")[1:]
        obj = tdx
        for i, atom in enumerate(parts):
            try:
                obj = getattr(obj, atom)
            except AttributeError:
                obj = importlib.import_module(".".join(["tdx", *parts[:i + 1]]))
        return obj

    def __repr__(self) -> str:
        return f"<tdx names for {self._path}>"


class TdxCodeGen(CodeGen):
    """torch's code generator, naming tdx's functions as torch's fx names torch's (``torch.relu(x)``)."""

    def _gen_python_code(self, nodes, root_module, namespace, **kwargs):
        names = torch_names()
        for node in nodes:
            for obj in (node.target if node.op == "call_function" else None, node.type):
                entry = names.get(id(obj))
                if entry is not None and entry[0] is obj:
                    namespace.associate_name_with_obj(entry[1], obj)
        code = super()._gen_python_code(nodes, root_module, namespace, **kwargs)
        code.globals.update(torch=TorchPaths(), tdx=tdx, device=tdx.device)
        return code


def _walk(module, path: list, create: bool):
    for atom in path:
        child = getattr(module, atom, None)
        if child is None:
            if not create:
                return None
            child = Module()
            setattr(module, atom, child)
        module = child
    return module


def _copy_attr(src, dst, target: str) -> None:
    """Copy ``src.<target>`` (a dotted path) to ``dst``, making the empty modules on the way."""
    *prefix, field = target.split(".")
    holder = src
    for atom in prefix:
        holder = getattr(holder, atom)
    value = getattr(holder, field)
    _assign(dst, target, value)


def _assign(dst, target: str, value) -> None:
    *prefix, field = target.split(".")
    owner = _walk(dst, prefix, create=True)
    if isinstance(value, tdx.Tensor) and not isinstance(value, Parameter) and not isinstance(value, Module):
        owner.register_buffer(field, value)
    else:
        setattr(owner, field, value)


class GraphModule(Module):
    """A tdx module generated from an fx ``Graph`` (``torch.fx.GraphModule``).

    Args:
        root: a ``tdx.nn.Module`` whose attributes the graph names, or a dict ``{qualified name: value}``.
        graph: the ``torch.fx.Graph``.
        class_name: the class name shown by ``print``/``print_readable``.

    Raises:
        TdxTypeError: ``root`` is neither a module nor a dict.
    """

    def __new__(cls, *args, **kwargs):
        # every instance gets its own class, so recompile() can set forward on it (as torch's does)
        if "_tdx_graph_module_class" not in cls.__dict__:
            cls = type(cls.__name__, (cls,), {"_tdx_graph_module_class": True, "__module__": cls.__module__})
        return super().__new__(cls)

    def __init__(self, root, graph, class_name: str = "GraphModule"):
        super().__init__()
        type(self).__name__ = class_name
        if isinstance(root, Module):
            self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise TdxTypeError(f"GraphModule: node {node.name} names {node.target!r}, which is not "
                                           f"a key of the root dict")
                    _assign(self, node.target, root[node.target])
        else:
            raise TdxTypeError(f"GraphModule: root must be a tdx.nn.Module or a dict, not {type(root).__name__}")
        self.graph = graph

    @property
    def graph(self):
        """The fx ``Graph``; setting it recompiles ``forward``."""
        return self.__dict__["_graph"]

    @graph.setter
    def graph(self, graph) -> None:
        self.__dict__["_graph"] = graph
        graph.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The Python source of ``forward``."""
        return self.__dict__["_code"]

    def recompile(self):
        """Regenerate ``forward`` from the graph (after editing it); returns torch's ``PythonCode``."""
        graph = self.graph
        if type(graph._codegen) is CodeGen:
            graph.set_codegen(TdxCodeGen())
        python_code = graph.python_code(root_module="self")
        self.__dict__["_code"] = python_code.src
        key = f"<eval_with_key>.{next(_COUNTER)}"
        linecache.cache[key] = (len(python_code.src), None, python_code.src.splitlines(True), key)
        namespace = dict(python_code.globals)
        exec(compile(python_code.src, key, "exec"), namespace)  # noqa: S102 - the graph's own generated code
        type(self).forward = namespace["forward"]
        return python_code

    def print_readable(self, print_output: bool = True, include_stride: bool = False, include_device: bool = False,
                       colored: bool = False, **kwargs) -> str:
        """The module as annotated Python source (``class <name>(torch.nn.Module): def forward...``)."""
        code = self.graph.python_code(root_module="self", verbose=True, include_stride=include_stride,
                                      include_device=include_device, colored=colored).src.lstrip("\n")
        body = "\n".join("    " + line if line.strip() else line for line in code.split("\n"))
        text = f"class {type(self).__name__}(torch.nn.Module):\n{body}"
        if print_output:
            print(text)
        return text

    def add_submodule(self, target: str, module) -> bool:
        """Set ``module`` at dotted ``target``, making empty modules on the way; False if a non-module blocks."""
        *prefix, field = target.split(".")
        owner = self
        for atom in prefix:
            child = getattr(owner, atom, None)
            if child is None:
                child = Module()
                setattr(owner, atom, child)
            elif not isinstance(child, Module):
                return False
            owner = child
        setattr(owner, field, module)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Remove the submodule at dotted ``target``; False if there is none."""
        *prefix, field = target.split(".")
        owner = _walk(self, prefix, create=False)
        if owner is None or field not in owner._modules:
            return False
        del owner._modules[field]
        return True

    def delete_all_unused_submodules(self) -> None:
        """Drop every submodule no ``call_module``/``get_attr`` node uses."""
        used = set()
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr"):
                atoms = node.target.split(".")
                used.update(".".join(atoms[:i]) for i in range(1, len(atoms) + 1))
        for name, _ in list(self.named_modules()):
            if name and name not in used and not any(u.startswith(name + ".") for u in used):
                self.delete_submodule(name)

    def __str__(self) -> str:
        return "\n".join([super().__str__(), self.code,
                          "# To see more debug info, please use `graph_module.print_readable()`"])

    def __deepcopy__(self, memo):
        import copy

        fresh = Module()
        fresh.__dict__.update(copy.deepcopy({k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code")},
                                            memo))
        return GraphModule(fresh, copy.deepcopy(self.graph, memo), type(self).__name__)


