"""What a tensor is and how it relates to others: ``is_neg``, ``is_nonzero``, ``is_same_size``,
``is_signed``, ``is_inference``, ``is_distributed``, ``get_device``, ``dim_order``, ``as_subclass``,
``module_load``, ``record_stream``, the strided answers of ``to_dense``/``dense_dim``/``sparse_dim``
(their ``torch.*`` forms are :mod:`.namespace`'s forwarders); the size and view metadata torch's tensors
carry (``itemsize``, ``nbytes``, ``_base``, ``_is_view``, ``output_nr``, ``retains_grad``, the ``is_<device>``
flags of devices tdx has no executor for).

tdx keeps no lazy negation bit and no inference-mode tensors on MLX, so there those answer
False; on a torch executor they are torch's answers. This module must never import a framework.
"""

from __future__ import annotations

from .. import _dtypes
from .._errors import NATIVE_ERRORS, TdxRuntimeError, TdxTypeError, UnsupportedOpError
from . import recording as _tape
from .tensor import Tensor
from .wrapping import attach, need_tensor, wrap

__all__: list = []  # methods only: the torch.* forms are namespace.py's forwarders


class _IdentityMethods:
    def is_neg(self) -> bool:
        """Whether the negation bit is set (torch's lazy ``_neg_view``; never on MLX)."""
        return bool(self._n.is_neg()) if self._ex.name == "torch" else False

    def is_nonzero(self) -> bool:
        """Whether a one-element tensor is not zero.

        Raises:
            TdxRuntimeError: the tensor has no element or more than one.
        """
        n = self.numel()
        if n == 0:
            raise TdxRuntimeError("Boolean value of Tensor with no values is ambiguous")
        if n > 1:
            raise TdxRuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item() != 0)

    def is_same_size(self, other) -> bool:
        """Whether ``other`` has the same shape."""
        need_tensor(other, "is_same_size", "other")
        return tuple(self.shape) == tuple(other.shape)

    def is_signed(self) -> bool:
        """Whether the dtype is signed (everything but uint8 and bool)."""
        return self.dtype.name not in ("uint8", "uint16", "uint32", "uint64", "bool")

    def is_inference(self) -> bool:
        """Whether the tensor was made under ``inference_mode`` (torch executors; False on MLX)."""
        return bool(self._n.is_inference()) if self._ex.name == "torch" else False

    def is_distributed(self) -> bool:
        """False, as torch's (no tensor is distributed)."""
        return False

    def get_device(self) -> int:
        """The device index: -1 on the CPU (``cpu``, ``mlx:cpu``), else the accelerator's index."""
        dev = self.device
        if dev.type == "cpu" or str(dev) == "mlx:cpu":
            return -1
        return dev.index if dev.index is not None else 0

    def dim_order(self, *, ambiguity_check=False) -> tuple:
        """The dims from outermost to innermost in memory, as torch's: a row-major tensor gives
        ``(0, 1, ...)``; otherwise an insertion sort by decreasing stride in which a dim of stride 0
        (expanded) never moves past another, and equal strides order by size.

        Raises:
            TdxRuntimeError: ``ambiguity_check`` and two dims share a stride (torch's check).
        """
        if not isinstance(ambiguity_check, (bool, list)):
            raise TdxTypeError("The ambiguity_check argument must be a bool or a list of memory formats.")
        strides, shape = self.stride(), tuple(self.shape)
        if ambiguity_check and len(set(strides)) != len(strides):
            raise TdxRuntimeError("The tensor does not have unique dim order, or cannot map to exact one of "
                                  "the given memory formats.")
        ndim = len(shape)
        if ndim < 2 or self.is_contiguous():
            return tuple(range(ndim))

        def should_swap(a, b):
            if strides[a] == 0 or strides[b] == 0:
                return 0
            if strides[a] != strides[b]:
                return -1 if strides[a] < strides[b] else 1
            return 1 if shape[a] > shape[b] else 0

        perm = list(reversed(range(ndim)))  # sorted back to front, reversed on return (torch's order)
        for i in range(1, ndim):
            d1 = i
            for d0 in reversed(range(i)):
                c = should_swap(perm[d0], perm[d1])
                if c > 0:
                    perm[d0], perm[d1] = perm[d1], perm[d0]
                    d1 = d0
                elif c < 0:
                    break
        return tuple(reversed(perm))

    def as_subclass(self, cls):
        """This tensor's data as an instance of ``cls`` (a subclass of Tensor), sharing memory.

        Raises:
            TdxTypeError: ``cls`` is not a subclass of Tensor.
        """
        if not isinstance(cls, type) or not issubclass(cls, Tensor):
            raise TdxTypeError(f"as_subclass(): argument 'cls' must be a subclass of Tensor, not {cls!r}")
        out = object.__new__(cls)
        out._n, out._ex = self._n, self._ex
        out._ag = getattr(self, "_ag", None)
        out._view = getattr(self, "_view", None)
        out._dt = self._dt
        return out

    @staticmethod
    def _make_subclass(cls, data, require_grad=False, dispatch_sizes_strides_policy=None, dispatch_device=False,
                       dispatch_layout=False):
        """A new ``cls`` instance (a subclass of Tensor) sharing ``data``'s memory, a leaf without its history,
        requiring grad when ``require_grad`` (how ``Parameter``-like subclasses are built, as torch's).

        Raises:
            TdxTypeError: ``cls`` is not a subclass of Tensor or ``data`` is not a Tensor.
        """
        if not isinstance(cls, type) or not issubclass(cls, Tensor):
            raise TdxTypeError(f"_make_subclass(): argument 'cls' must be a subclass of Tensor, not {cls!r}")
        need_tensor(data, "_make_subclass", "data")
        out = object.__new__(cls)
        ex = data._ex
        out._n, out._ex = (data._n.detach() if ex.caps.native_autograd else data._n), ex
        out._ag = out._view = out._dt = None
        if require_grad:
            out.requires_grad_(True)
        return out

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """torch's default ``__torch_function__``: ``func(*args, **kwargs)``. tdx ops call no override, so this is
        what a subclass's override reaches through ``super()`` (and what ``is_tensor_like`` looks for)."""
        return func(*args, **(kwargs or {}))

    def module_load(self, other, assign=False):
        """What ``Module.load_state_dict`` stores for this parameter: ``other`` detached (``assign``),
        else this tensor with ``other`` copied in, detached (torch's default)."""
        need_tensor(other, "module_load", "other")
        if assign:
            return other.detach()
        return self.copy_(other).detach()

    def to_dense(self, dtype=None, *, masked_grad=None):
        """This tensor (every tdx tensor is dense), cast to ``dtype`` when given, as torch's for strided."""
        return self if dtype is None else self.to(dtype)

    def dense_dim(self) -> int:
        """The number of dense dims: all of them (torch's answer for a strided tensor)."""
        return self.dim()

    def sparse_dim(self) -> int:
        """The number of sparse dims: 0 (torch's answer for a strided tensor)."""
        return 0

    def record_stream(self, stream) -> None:
        """Mark the memory as used by ``stream`` (torch's CUDA caching allocator).

        Raises:
            UnsupportedOpError: not a CUDA tensor (torch raises NotImplementedError there too).
            TdxError: ``stream`` is no CUDA stream (torch's error, of its builtin kind).
        """
        if self.device.type != "cuda":
            raise UnsupportedOpError(f"record_stream is only available for CUDA tensors, not {self.device}")
        try:
            self._n.record_stream(getattr(stream, "native", stream))
        except NATIVE_ERRORS as err:  # not a Stream: torch's error, typed
            raise self._ex.native_error(err) from None


class _MetadataMethods:
    @property
    def itemsize(self) -> int:
        """The size of one element in bytes (``element_size()``)."""
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """The bytes the elements take (``numel() * itemsize``; a view counts its own elements, as torch's)."""
        return self.numel() * self.dtype.itemsize

    @property
    def retains_grad(self) -> bool:
        """Whether ``retain_grad()`` made this non-leaf tensor keep its ``.grad`` (False for leaves)."""
        if self._ex.caps.native_autograd:
            return self._n.retains_grad
        m = _tape.meta(self)
        return bool(m is not None and m.node is not None and m.retain)

    @property
    def output_nr(self) -> int:
        """Which output of its ``grad_fn`` this tensor is (0 for a leaf)."""
        if self._ex.caps.native_autograd:
            return self._n.output_nr
        m = _tape.meta(self)
        return 0 if m is None or m.node is None else m.index

    @property
    def _base(self):
        """The tensor this one is a view of (the first non-view one up the chain), or None."""
        if self._ex.caps.native_autograd:
            base = self._n._base
            return None if base is None else wrap(base, self._ex)
        lay = self._view
        return None if lay is None or lay.detached or lay.root is self else lay.root

    def _is_view(self) -> bool:
        """Whether this tensor is a view of another (``_base`` is not None)."""
        if self._ex.caps.native_autograd:
            return self._n._is_view()
        return self._base is not None  # on a tape executor the base is the view root itself: no new tensor

    @property
    def _grad(self):
        """``.grad`` without the non-leaf warning's checks (torch's private alias)."""
        return Tensor.grad.fget(self)

    @_grad.setter
    def _grad(self, value) -> None:
        Tensor.grad.fset(self, value)

    @property
    def _grad_fn(self):
        """``.grad_fn`` (torch's private alias)."""
        return self.grad_fn

    @property
    def name(self):
        """None: torch's tensors carry no name unless a graph tracer gives one."""
        return None

    def _is_zerotensor(self) -> bool:
        """False: tdx has no lazily-zero tensors."""
        return False

    def _conj(self):
        """``conj()`` (torch's private form, a view for complex tensors)."""
        return self.conj()

    def _neg_view(self):
        """``neg()``: tdx keeps no lazy negation bit, so the values are negated at once."""
        return self.neg()

    def _is_all_true(self):
        """``all()`` of a bool tensor, as a 0-dim bool tensor (torch's internal form of ``all``).

        Raises:
            TdxRuntimeError: the tensor is not bool (torch asserts it).
        """
        return self._truth("_is_all_true").all()

    def _is_any_true(self):
        """``any()`` of a bool tensor, as a 0-dim bool tensor.

        Raises:
            TdxRuntimeError: the tensor is not bool (torch asserts it).
        """
        return self._truth("_is_any_true").any()

    def _truth(self, op: str):
        if self.dtype is not _dtypes.bool_:
            raise TdxRuntimeError(f"{op}(): expected a bool tensor, got {self.dtype}")
        return self

    def __reversed__(self):
        """``reversed(t)``: ``t`` flipped along its first dim (``t`` itself when it has none), as torch's."""
        return self if self.dim() == 0 else self.flip(0)

    def __delitem__(self, index) -> None:
        raise TdxTypeError("Tensor does not support deleting items")


for _flag in ("is_xla", "is_xpu", "is_ipu", "is_maia", "is_mtia", "is_vulkan"):
    setattr(_MetadataMethods, _flag, property(lambda self: False, doc=f"``{_flag}``: False (no such executor)."))

attach(_IdentityMethods)
attach(_MetadataMethods)

