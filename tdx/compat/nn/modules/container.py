"""The containers of torch.nn: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``,
``ParameterDict``, with torch's indexing, renumbering and repr.

Must never import torch or mlx.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections import abc as container_abcs
from itertools import chain, islice

import tdx

from .... import _dtypes
from ...._errors import TdxRuntimeError
from ..parameter import Parameter
from .module import Module, _addindent

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]

_LEGACY_TYPES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
                 "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor",
                 "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor",
                 "complex64": "ComplexFloatTensor", "complex128": "ComplexDoubleTensor"}


def _index_error(message: str):
    return tdx.TdxIndexError(message)


def _tensor_typename(t) -> str:
    """torch.typename for a tensor: ``tdx.FloatTensor``, ``tdx.cuda.FloatTensor`` (``torch.*`` under the alias)."""
    name = _LEGACY_TYPES.get(t.dtype.name, "Tensor")
    kind = t.device.type
    prefix = _dtypes._state["prefix"]
    return f"{prefix}.{name}" if kind == "cpu" else f"{prefix}.{kind}.{name}"


def _device_suffix(t) -> str:
    # torch names the device for cuda and out-of-tree (privateuse1) backends; MLX is tdx's out-of-tree one
    return f" ({t.device})" if t.device.type in ("cuda", "mlx") else ""


class Sequential(Module):
    """Modules chained in order: ``forward`` feeds each one's output to the next.

    Args:
        *args: the modules, named "0", "1"...; or one ``OrderedDict`` of named modules.
    """

    def __init__(self, *args) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def _get_item_by_idx(self, iterator, idx):
        size = len(self)
        idx = operator.index(idx)
        if not -size <= idx < size:
            raise _index_error(f"index {idx} is out of range")
        idx %= size
        return next(islice(iterator, idx, None))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return self.__class__(OrderedDict(list(self._modules.items())[idx]))
        return self._get_item_by_idx(self._modules.values(), idx)

    def __setitem__(self, idx, module) -> None:
        key = self._get_item_by_idx(self._modules.keys(), idx)
        setattr(self, key, module)

    def __delitem__(self, idx) -> None:
        if isinstance(idx, slice):
            for key in list(self._modules.keys())[idx]:
                delattr(self, key)
        else:
            delattr(self, self._get_item_by_idx(self._modules.keys(), idx))
        self._modules = OrderedDict(zip([str(i) for i in range(len(self._modules))], self._modules.values()))

    def __len__(self) -> int:
        return len(self._modules)

    def __add__(self, other) -> "Sequential":
        if not isinstance(other, Sequential):
            raise tdx.TdxValueError(f"add operator supports only objects of Sequential class, but {type(other)} "
                                    "is given.")
        ret = Sequential()
        for layer in chain(self, other):
            ret.append(layer)
        return ret

    def pop(self, key):
        """Remove the module at ``key`` (an index or slice) and return it."""
        v = self[key]
        del self[key]
        return v

    def __iadd__(self, other) -> "Sequential":
        if not isinstance(other, Sequential):
            raise tdx.TdxValueError(f"add operator supports only objects of Sequential class, but {type(other)} "
                                    "is given.")
        offset = len(self)
        for i, module in enumerate(other):
            self.add_module(str(i + offset), module)
        return self

    def _check_factor(self, other) -> None:
        if not isinstance(other, int):
            raise tdx.TdxTypeError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise tdx.TdxValueError(f"Non-positive multiplication factor {other} for {type(self)}")

    def __mul__(self, other) -> "Sequential":
        self._check_factor(other)
        combined = Sequential()
        offset = 0
        for _ in range(other):
            for module in self:
                combined.add_module(str(offset), module)
                offset += 1
        return combined

    def __rmul__(self, other) -> "Sequential":
        return self.__mul__(other)

    def __imul__(self, other) -> "Sequential":
        self._check_factor(other)
        n = len(self)
        offset = n
        for _ in range(other - 1):
            for i in range(n):
                self.add_module(str(i + offset), self._modules[str(i)])
            offset += n
        return self

    def __dir__(self):
        return [key for key in super().__dir__() if not key.isdigit()]

    def __iter__(self):
        return iter(self._modules.values())

    def forward(self, input):
        for module in self:
            input = module(input)
        return input

    def append(self, module) -> "Sequential":
        """Append ``module`` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module) -> "Sequential":
        """Insert ``module`` before position ``index`` (negative counts from the end); returns self.

        Raises:
            TdxTypeError: ``module`` is not a Module.
            TdxIndexError: ``index`` is outside ``[-len, len]``.
        """
        if not isinstance(module, Module):
            raise tdx.TdxTypeError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not (-n <= index <= n):
            raise _index_error(f"Index out of range: {index}")
        if index < 0:
            index += n
        for i in range(n, index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module
        return self

    def extend(self, sequential) -> "Sequential":
        """Append every module of ``sequential`` (any iterable of modules); returns self."""
        for layer in sequential:
            self.append(layer)
        return self


class ModuleList(Module):
    """A list of modules, registered as submodules "0", "1"...

    Args:
        modules (iterable, optional): the initial modules.
    """

    def __init__(self, modules=None) -> None:
        super().__init__()
        if modules is not None:
            self += modules

    def _get_abs_string_index(self, idx) -> str:
        idx = operator.index(idx)
        if not (-len(self) <= idx < len(self)):
            raise _index_error(f"index {idx} is out of range")
        if idx < 0:
            idx += len(self)
        return str(idx)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return self.__class__(list(self._modules.values())[idx])
        return self._modules[self._get_abs_string_index(idx)]

    def __setitem__(self, idx, module) -> None:
        setattr(self, self._get_abs_string_index(idx), module)

    def __delitem__(self, idx) -> None:
        if isinstance(idx, slice):
            for k in range(len(self._modules))[idx]:
                delattr(self, str(k))
        else:
            delattr(self, self._get_abs_string_index(idx))
        self._modules = OrderedDict(zip([str(i) for i in range(len(self._modules))], self._modules.values()))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules) -> "ModuleList":
        return self.extend(modules)

    def __add__(self, other) -> "ModuleList":
        combined = ModuleList()
        for i, module in enumerate(chain(self, other)):
            combined.add_module(str(i), module)
        return combined

    def __repr__(self) -> str:
        """torch's ModuleList repr: runs of identical children fold into ``(i-j): n x child``."""
        reprs = [repr(item) for item in self]
        if not reprs:
            return self._get_name() + "()"
        spans, blocks = [[0, 0]], [reprs[0]]
        for i, r in enumerate(reprs[1:], 1):
            if r == blocks[-1]:
                spans[-1][1] += 1
                continue
            spans.append([i, i])
            blocks.append(r)
        lines = []
        for (start, end), block in zip(spans, blocks):
            local = f"({start}): {block}" if start == end else f"({start}-{end}): {end - start + 1} x {block}"
            lines.append(_addindent(local, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def __dir__(self):
        return [key for key in super().__dir__() if not key.isdigit()]

    def insert(self, index: int, module) -> None:
        """Insert ``module`` before position ``index``."""
        for i in range(len(self._modules), index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module

    def append(self, module) -> "ModuleList":
        """Append ``module``; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key):
        """Remove the module at ``key`` (an index or slice) and return it."""
        v = self[key]
        del self[key]
        return v

    def extend(self, modules) -> "ModuleList":
        """Append the modules of an iterable; returns self.

        Raises:
            TdxTypeError: ``modules`` is not iterable.
        """
        if not isinstance(modules, container_abcs.Iterable):
            raise tdx.TdxTypeError("ModuleList.extend should be called with an iterable, but got "
                                   + type(modules).__name__)
        offset = len(self)
        for i, module in enumerate(modules):
            self.add_module(str(offset + i), module)
        return self


class ModuleDict(Module):
    """An ordered dict of named submodules.

    Args:
        modules (mapping or iterable of pairs, optional): the initial modules.
    """

    def __init__(self, modules=None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str):
        return self._modules[key]

    def __setitem__(self, key: str, module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key) -> bool:
        return key in self._modules

    def clear(self) -> None:
        """Remove every module."""
        self._modules.clear()

    def pop(self, key: str):
        """Remove ``key`` and return its module."""
        v = self[key]
        del self[key]
        return v

    def keys(self):
        """The names."""
        return self._modules.keys()

    def items(self):
        """The ``(name, module)`` pairs."""
        return self._modules.items()

    def values(self):
        """The modules."""
        return self._modules.values()

    def update(self, modules) -> None:
        """Add or overwrite entries from a mapping or an iterable of ``(name, module)`` pairs.

        Raises:
            TdxTypeError: ``modules`` (or one of its elements) is not iterable.
            TdxValueError: an element is not a pair.
        """
        if not isinstance(modules, container_abcs.Iterable):
            raise tdx.TdxTypeError("ModuleDict.update should be called with an iterable of key/value pairs, but got "
                                   + type(modules).__name__)
        if isinstance(modules, (OrderedDict, ModuleDict, container_abcs.Mapping)):
            for key, module in modules.items():
                self[key] = module
            return
        for j, m in enumerate(modules):
            if not isinstance(m, container_abcs.Iterable):
                raise tdx.TdxTypeError(f"ModuleDict update sequence element #{j} should be Iterable; is"
                                       + type(m).__name__)
            if not len(m) == 2:
                raise tdx.TdxValueError(f"ModuleDict update sequence element #{j} has length {len(m)}; 2 is required")
            self[m[0]] = m[1]


class ParameterList(Module):
    """A list of parameters (tensors added are wrapped as Parameters; other objects are kept as is).

    Args:
        values (iterable, optional): the initial values.
    """

    def __init__(self, values=None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _get_abs_string_index(self, idx) -> str:
        idx = operator.index(idx)
        if not (-len(self) <= idx < len(self)):
            raise _index_error(f"index {idx} is out of range")
        if idx < 0:
            idx += len(self)
        return str(idx)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            start, stop, step = idx.indices(len(self))
            out = self.__class__()
            for i in range(start, stop, step):
                out.append(self[i])
            return out
        return getattr(self, self._get_abs_string_index(idx))

    def __setitem__(self, idx, param) -> None:
        idx = self._get_abs_string_index(idx)
        if isinstance(param, tdx.Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, idx, param)

    def __len__(self) -> int:
        return self._size

    def __iter__(self):
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, parameters) -> "ParameterList":
        return self.extend(parameters)

    def __dir__(self):
        return [key for key in super().__dir__() if not key.isdigit()]

    def append(self, value) -> "ParameterList":
        """Append ``value`` (a tensor becomes a Parameter); returns self."""
        new_idx = len(self)
        self._size += 1
        self[new_idx] = value
        return self

    def extend(self, values) -> "ParameterList":
        """Append every value of an iterable (not a tensor); returns self.

        Raises:
            TdxTypeError: ``values`` is not iterable, or is a tensor.
        """
        if not isinstance(values, container_abcs.Iterable) or isinstance(values, tdx.Tensor):
            raise tdx.TdxTypeError("ParameterList.extend should be called with an iterable, but got "
                                   + type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        lines = []
        for k, p in enumerate(self):
            if isinstance(p, tdx.Tensor):
                size = "x".join(str(s) for s in p.size())
                kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
                lines.append(f"  ({k}): {kind} containing: [{p.dtype} of size {size}{_device_suffix(p)}]")
            else:
                lines.append(f"  ({k}): Object of type: {type(p).__name__}")
        return "\n".join(lines)

    def __call__(self, *args, **kwargs):
        raise TdxRuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of parameters (tensors set are wrapped as Parameters).

    Args:
        parameters (mapping or iterable of pairs, optional): the initial entries; a plain
            (unordered) mapping is added in sorted key order, as torch.
    """

    def __init__(self, parameters=None) -> None:
        super().__init__()
        self._keys: dict = {}
        if parameters is not None:
            self.update(parameters)

    def _key_to_attr(self, key) -> str:
        if not isinstance(key, str):
            raise tdx.TdxTypeError("Index given to ParameterDict cannot be used as a key as it is not a string "
                                   f"(type is '{type(key).__name__}'). Open an issue on github if you need "
                                   "non-string keys.")
        return key

    def __getitem__(self, key):
        return getattr(self, self._key_to_attr(key))

    def __setitem__(self, key, value) -> None:
        self._keys[key] = None
        attr = self._key_to_attr(key)
        if isinstance(value, tdx.Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, attr, value)

    def __delitem__(self, key) -> None:
        del self._keys[key]
        delattr(self, self._key_to_attr(key))

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(self._keys)

    def copy(self) -> "ParameterDict":
        """A new ParameterDict holding the same parameters."""
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def __contains__(self, key) -> bool:
        return key in self._keys

    def setdefault(self, key, default=None):
        """``self[key]``, first setting it to ``default`` when missing."""
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        """Remove every entry."""
        for k in self._keys.copy():
            del self[k]

    def pop(self, key):
        """Remove ``key`` and return its value."""
        v = self[key]
        del self[key]
        return v

    def popitem(self):
        """Remove and return the last inserted ``(key, value)`` pair."""
        k, _ = self._keys.popitem()
        self._keys[k] = None
        val = self[k]
        del self[k]
        return k, val

    def get(self, key, default=None):
        """``self[key]`` when present, else ``default``."""
        return self[key] if key in self else default

    def fromkeys(self, keys, default=None) -> "ParameterDict":
        """A new ParameterDict with ``keys``, each set to ``default``."""
        return ParameterDict((k, default) for k in keys)

    def keys(self):
        """The keys, in insertion order."""
        return self._keys.keys()

    def items(self):
        """The ``(key, value)`` pairs."""
        return ((k, self[k]) for k in self._keys)

    def values(self):
        """The values."""
        return (self[k] for k in self._keys)

    def update(self, parameters) -> None:
        """Add or overwrite entries from a mapping or an iterable of pairs.

        Raises:
            TdxTypeError: ``parameters`` (or one of its elements) is not iterable.
            TdxValueError: an element is not a pair.
        """
        if not isinstance(parameters, container_abcs.Iterable):
            raise tdx.TdxTypeError("ParametersDict.update should be called with an iterable of key/value pairs, "
                                   "but got " + type(parameters).__name__)
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            for key, parameter in parameters.items():
                self[key] = parameter
        elif isinstance(parameters, container_abcs.Mapping):
            for key, parameter in sorted(parameters.items()):
                self[key] = parameter
        else:
            for j, p in enumerate(parameters):
                if not isinstance(p, container_abcs.Iterable):
                    raise tdx.TdxTypeError(f"ParameterDict update sequence element #{j} should be Iterable; is"
                                           + type(p).__name__)
                if not len(p) == 2:
                    raise tdx.TdxValueError(f"ParameterDict update sequence element #{j} has length {len(p)}; 2 is "
                                            "required")
                self[p[0]] = p[1]

    def extra_repr(self) -> str:
        lines = []
        for k, p in self.items():
            if isinstance(p, tdx.Tensor):
                size = "x".join(str(s) for s in p.size())
                kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
                lines.append(f"  ({k}): {kind} containing: [{_tensor_typename(p)} of size {size}"
                             f"{_device_suffix(p)}]")
            else:
                lines.append(f"  ({k}): Object of type: {type(p).__name__}")
        return "\n".join(lines)

    def __call__(self, input):
        raise TdxRuntimeError("ParameterDict should not be called.")

    def __or__(self, other) -> "ParameterDict":
        copy = self.copy()
        copy.update(other)
        return copy

    def __ror__(self, other) -> "ParameterDict":
        copy = other.copy()
        copy.update(self)
        return copy

    def __ior__(self, other) -> "ParameterDict":
        self.update(other)
        return self
