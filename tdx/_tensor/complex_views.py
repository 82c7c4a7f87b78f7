"""Complex numbers and reinterpretation: ``real``/``imag``/``angle``, ``complex``/``polar``,
``view_as_real``/``view_as_complex``, ``conj_physical``, ``resolve_neg``, ``isreal``, the ``H``/``mH``
properties and the complex casts (``cfloat``, ``cdouble``, ``chalf``); ``view(dtype)`` is
:mod:`.shape`'s ``view``.

Executors with a kernel of torch's signature run it; elsewhere the composites here build each from
tdx ops (``real``/``imag`` of a complex tensor come from the executor's ``real``/``imag``; a complex
tensor is assembled as ``re + 1j * im``). This module must never import a framework.
"""

from __future__ import annotations

import math

from .. import _dtypes as D
from .._errors import TdxRuntimeError, TdxTypeError
from . import recording as _tape
from ..autograd.tape import ACTIVE as _TAPE, MODE as _MODE
from .kernels import install
from .tensor import Tensor
from .wrapping import wrap

__all__: list = []


def _part(which):
    def fn(input):  # noqa: A002
        ex = input._ex
        if not input.dtype.is_complex:
            if which == "imag":
                raise TdxRuntimeError("imag is not implemented for tensors with non-complex dtypes.")
            return input
        # the executor's own real/imag: one tape node, differentiated
        if _TAPE[0] and _MODE.enabled and _tape.wants(input):
            return _tape.call(fn, input)
        return wrap(getattr(ex, "complex_" + which)(input._n), ex)

    fn.__name__ = which
    fn.__doc__ = f"The {which} part of a complex tensor (a real tensor is its own real part)."
    return fn


def angle(input):  # noqa: A002
    """The argument of each element: atan2(imag, real); 0 or pi for real tensors (NaN kept)."""
    if input.dtype.is_complex:
        return _part("imag")(input).atan2(_part("real")(input))
    x = input if input.dtype.is_floating_point else input.to(D.get_default_dtype())
    out = (x * 0).where(x >= 0, math.pi)
    return out.where(x.isnan().logical_not(), x)


def complex(real, imag):  # noqa: A001 - torch's name
    """The complex tensor ``real + 1j * imag`` (float32 -> complex64, float64 -> complex128)."""
    if real.dtype is not imag.dtype:
        raise TdxRuntimeError(f"Expected object of scalar type {real.dtype.name} but got scalar type "
                              f"{imag.dtype.name} for second argument")
    if real.dtype not in (D.float32, D.float64, D.float16):
        raise TdxRuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                              f"{real.dtype.name} and {imag.dtype.name}")
    ct = D.complex128 if real.dtype is D.float64 else D.complex64
    return real.to(ct) + imag.to(ct) * 1j


def polar(abs, angle):  # noqa: A002 - torch's names
    """The complex tensor with modulus ``abs`` and argument ``angle``."""
    return complex(abs * angle.cos(), abs * angle.sin())


def view_as_real(input):  # noqa: A002
    """A complex tensor as a real one with a trailing dim of 2 (real, imag)."""
    if not input.dtype.is_complex:
        raise TdxRuntimeError("view_as_real is only supported for complex tensors")
    from .shape import stack

    return stack([_part("real")(input), _part("imag")(input)], -1)


def view_as_complex(input):  # noqa: A002
    """A real tensor with a trailing dim of 2 as a complex one."""
    if input.dtype not in (D.float32, D.float64, D.float16):
        raise TdxRuntimeError(f"view_as_complex is only supported for float, double and half tensors, but got a "
                              f"tensor of scalar type: {input.dtype.name}")
    if input.ndim == 0 or input.shape[-1] != 2:
        raise TdxRuntimeError("Tensor must have a last dimension of size 2")
    return complex(input[..., 0], input[..., 1])


def conj_physical(input):  # noqa: A002
    """The complex conjugate, materialized."""
    return input.conj().resolve_conj() if input.dtype.is_complex else input.clone()


def resolve_neg(input):  # noqa: A002
    """The tensor with a lazy negation materialized (tdx never negates lazily: the tensor itself)."""
    return input


def isreal(input):  # noqa: A002
    """Whether each element is real (a zero imaginary part)."""
    if not input.dtype.is_complex:
        return input.new_ones(input.shape, dtype=D.bool_)
    return _part("imag")(input) == 0


_TABLE = {
    "real": (_part("real"), "The real part."), "imag": (_part("imag"), "The imaginary part."),
    "angle": (angle, angle.__doc__), "complex": (complex, complex.__doc__), "polar": (polar, polar.__doc__),
    "view_as_real": (view_as_real, view_as_real.__doc__), "view_as_complex": (view_as_complex,
                                                                             view_as_complex.__doc__),
    "conj_physical": (conj_physical, conj_physical.__doc__), "resolve_neg": (resolve_neg, resolve_neg.__doc__),
    "isreal": (isreal, isreal.__doc__),
}
install(globals(), __all__, _TABLE, methods=("angle", "conj_physical", "resolve_neg", "isreal"),
        inplace=("conj_physical",))


class ComplexViewMethods:
    """``real``/``imag``/``H``/``mH`` properties, ``view(dtype)`` and the complex casts."""

    __slots__ = ()

    @property
    def real(self):
        return globals()["real"](self)

    @property
    def imag(self):
        return globals()["imag"](self)

    @property
    def H(self):  # noqa: N802 - torch's name
        if self.ndim > 2:
            raise TdxRuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor.")
        return self.t().conj() if self.ndim == 2 else self.conj()

    @property
    def mH(self):  # noqa: N802 - torch's name
        if self.ndim < 2:
            raise TdxRuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. Got "
                                  f"{self.ndim}-D tensor.")
        return self.transpose(-2, -1).conj()

    def adjoint(self):
        """The conjugate transpose of the last two dims."""
        return self.mH

    def cfloat(self, memory_format=None):
        return self.to(D.complex64, memory_format=memory_format)

    def cdouble(self, memory_format=None):
        return self.to(D.complex128, memory_format=memory_format)

    def chalf(self):
        raise TdxTypeError("chalf(): complex32 is not supported by tdx")


for _name, _member in vars(ComplexViewMethods).items():
    if not _name.startswith("__"):
        setattr(Tensor, _name, _member)
