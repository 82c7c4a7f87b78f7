"""torch's legacy tensor API: ``tdx.Tensor(...)`` itself (for its subclasses too), the typed tensor classes
(``tdx.FloatTensor``, ``tdx.LongTensor``...), ``Tensor.new``, ``tdx.set_default_tensor_type`` and the removed
or foreign-device methods (``reinforce``, ``xpu``, ``ipu``, ``mtia``).

``tdx.FloatTensor(2, 3)`` builds an uninitialised float32 tensor of that shape on the default
device, ``tdx.FloatTensor([1, 2])`` one holding the data; ``isinstance(x, tdx.FloatTensor)``
holds for a float32 tensor that is not on CUDA (torch's ``torch.FloatTensor`` is the CPU type).
This module must never import a framework.
"""

from __future__ import annotations

from .. import _dtypes as D
from .._errors import TdxRuntimeError, TdxTypeError, TdxValueError
from ..backends._flags import BackendUnavailableError
from .tensor import Tensor
from .wrapping import Size, attach

__all__ = ["LEGACY_TENSORS", "set_default_tensor_type"]


def _sizes(args) -> tuple | None:
    if len(args) == 1 and isinstance(args[0], Size):
        return tuple(args[0])
    if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        return tuple(args)
    return None


def _build(dtype, args, device):
    from . import creation

    if not args:
        return creation.empty(0, dtype=dtype, device=device)
    shape = _sizes(args)
    if shape is not None:
        return creation.empty(shape, dtype=dtype, device=device)
    if len(args) == 1:
        data = args[0]
        if isinstance(data, Tensor):
            if data.dtype is not dtype:
                raise TdxTypeError(f"expected {dtype} (got {data.dtype})")
            return data
        return creation.tensor(data, dtype=dtype, device=device)
    raise TdxTypeError(f"new(): expected sizes (ints), a Size, a sequence of data or a tensor, got {args!r}")


def _construct(cls, *args, device=None):
    """``Tensor(...)``, torch's legacy constructor, for ``Tensor`` and its subclasses (``super().__new__(cls, x)``
    in a subclass's ``__new__``): no argument gives an empty tensor, sizes an uninitialised one, data a tensor of
    the default dtype, all on the default device (or ``device``); a tensor gives a ``cls`` alias of it, attached
    to its autograd graph, of its dtype (torch's ``as_subclass``).

    Raises:
        TdxTypeError: the arguments are none of those forms (torch's ``new()`` error), or ``cls`` is no Tensor.
    """
    if len(args) == 1 and isinstance(args[0], Tensor):
        return args[0].as_subclass(cls)
    out = _build(D.get_default_dtype(), args, device)
    if cls is not Tensor:
        return out.as_subclass(cls)
    return out


class _LegacyTensorMeta(type):
    """The metaclass of the typed tensor classes: calling builds a tensor; ``isinstance`` checks dtype."""

    def __call__(cls, *args, device=None):
        return _build(cls.dtype, args, device)

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.device.type != "cuda"

    def __repr__(cls) -> str:
        return f"<class 'tdx.{cls.__name__}'>"


def _legacy(name: str, dtype):
    return _LegacyTensorMeta(name, (), {"dtype": dtype, "is_cuda": False, "is_sparse": False, "__module__": "tdx",
                                        "__doc__": f"Legacy typed tensor class of {dtype} (``torch.{name}``)."})


LEGACY_TENSORS = {f"{n}Tensor": _legacy(f"{n}Tensor", getattr(D, d)) for n, d in (
    ("Float", "float32"), ("Double", "float64"), ("Half", "float16"), ("BFloat16", "bfloat16"),
    ("Long", "int64"), ("Int", "int32"), ("Short", "int16"), ("Char", "int8"), ("Byte", "uint8"),
    ("Bool", "bool_"))}


def type_name(t) -> str:
    """torch's ``x.type()`` for ``t``: ``tdx.FloatTensor``, ``tdx.cuda.DoubleTensor``, ``tdx.mps.LongTensor``...,
    named ``torch.*`` under the torch alias, as the program comparing it with torch's names expects."""
    name = next((n for n, cls in LEGACY_TENSORS.items() if cls.dtype is t.dtype), None)
    if name is None:
        name = {"complex64": "ComplexFloatTensor", "complex128": "ComplexDoubleTensor"}.get(t.dtype.name,
                                                                                         f"{t.dtype.name}Tensor")
    kind = t.device.type
    return f"{D._state['prefix']}.{kind + '.' if kind in ('cuda', 'mps') else ''}{name}"


def dtype_of(spec):
    """The dtype a ``Tensor.type(spec)`` casts to: a dtype, a legacy class, or a legacy class's name.

    Raises:
        TdxValueError: an unknown type name.
    """
    if isinstance(spec, _LegacyTensorMeta):
        return spec.dtype
    if isinstance(spec, str):
        cls = LEGACY_TENSORS.get(spec.rpartition(".")[2]) if spec.endswith("Tensor") else None
        if cls is None:
            raise TdxValueError(f"invalid type: '{spec}'")
        return cls.dtype
    if spec.__class__ is type and spec in D.PYTHON_TYPES:  # torch's type() takes no Python type
        raise TdxValueError(f"invalid type: '{spec.__name__}'")
    return D.as_dtype(spec)


def set_default_tensor_type(t, /) -> None:
    """Set the default dtype from a floating typed tensor class or its name (``"torch.DoubleTensor"``);
    ``"torch.cuda.FloatTensor"`` also makes cuda the default device.

    Raises:
        TdxTypeError: not a floating-point tensor type, or an unknown name.
    """
    from .. import backends

    name = t if isinstance(t, str) else getattr(t, "__name__", None)
    if name is None:
        raise TdxTypeError(f"set_default_tensor_type(): expected a tensor type or its name, got {t!r}")
    cuda = ".cuda." in name
    cls = LEGACY_TENSORS.get(name.rpartition(".")[2])
    if cls is None:
        raise TdxTypeError(f"invalid type: '{name}'")
    if not cls.dtype.is_floating_point:
        raise TdxTypeError("only floating-point types are supported as the default type")
    D.set_default_dtype(cls.dtype)
    if cuda:
        backends.set_default_device("cuda")


class _LegacyMethods:
    def type(self, dtype=None, non_blocking=False):
        """With no argument, the legacy type name (``"tdx.FloatTensor"``, ``"tdx.cuda.LongTensor"``); else
        this tensor cast to ``dtype`` (a dtype, a legacy class such as ``tdx.DoubleTensor`` or its name)."""
        if dtype is None:
            return type_name(self)
        return self.to(dtype_of(dtype))

    def new(self, *args, device=None):
        """torch's legacy constructor: ``new()`` empty, ``new(2, 3)``/``new(Size)`` uninitialised of that
        shape, ``new([..])`` from data; in this tensor's dtype and (by default) device."""
        return _build(self.dtype, args, self.device if device is None else device)

    def reinforce(self, reward):
        """Removed from torch: raises torch's error pointing to ``torch.distributions``.

        Raises:
            TdxRuntimeError: always.
        """
        raise TdxRuntimeError("reinforce() was removed.\nUse tdx.distributions instead (e.g. "
                              "m = Categorical(probs); loss = -m.log_prob(action) * reward; loss.backward()).")

    def xpu(self, device=None, non_blocking=False, memory_format=None):
        """Move to an Intel XPU: tdx has no XPU executor, so this raises torch's error for a build without one.

        Raises:
            BackendUnavailableError: always (also an AssertionError, as torch's).
        """
        raise BackendUnavailableError("Torch not compiled with XPU enabled (tdx has no XPU executor)")

    def mtia(self, device=None, non_blocking=False, memory_format=None):
        """Move to an MTIA device: absent in tdx.

        Raises:
            BackendUnavailableError: always (also an AssertionError, as torch's).
        """
        raise BackendUnavailableError("Torch not compiled with MTIA enabled (tdx has no MTIA executor)")

    def ipu(self, device=None, non_blocking=False, memory_format=None):
        """Move to a Graphcore IPU: absent in tdx.

        Raises:
            TdxRuntimeError: always, as torch's.
        """
        raise TdxRuntimeError("PyTorch is not linked with support for ipu devices (tdx has no IPU executor)")


attach(_LegacyMethods)

Tensor.__new__ = staticmethod(_construct)
