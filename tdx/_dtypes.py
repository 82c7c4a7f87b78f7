"""tdx dtypes and torch's type-promotion rules, in pure Python.

Executors map these objects to their native dtypes; this module knows no
framework and must never import one. Promotion here is the single source of
truth for executors that do not promote like torch (MLX); the torch executor
lets torch promote natively, and the test suite checks the two agree.
"""

from __future__ import annotations

from ._errors import DtypeError, TdxRuntimeError

_BOOL, _INT, _FLOAT, _COMPLEX = 0, 1, 2, 3


class dtype:
    """A tensor element type (``tdx.float32`` etc.), compared by identity."""

    __slots__ = ("name", "itemsize", "_cat", "is_signed", "_rank")

    def __init__(self, name: str, itemsize: int, cat: int, is_signed: bool, rank: int):
        self.name = name
        self.itemsize = itemsize
        self._cat = cat
        self.is_signed = is_signed
        self._rank = rank

    @property
    def is_floating_point(self) -> bool:
        return self._cat == _FLOAT

    @property
    def is_complex(self) -> bool:
        return self._cat == _COMPLEX

    def to_real(self) -> "dtype":
        return {"complex32": float16, "complex64": float32, "complex128": float64}.get(self.name, self)

    def to_complex(self) -> "dtype":
        return {"float16": complex32, "float32": complex64, "float64": complex128}.get(self.name, self)

    def __repr__(self) -> str:
        return f"{_state['prefix']}.{self.name}"

    def __reduce__(self):
        return "bool_" if self.name == "bool" else self.name  # the module attribute holding it

    # hashed by identity (object's own C-level hash: a dict keyed by dtypes is on every op's path); a dtype is
    # one object per name, unpickled to the module attribute that holds it


bool_ = dtype("bool", 1, _BOOL, False, 0)
uint8 = dtype("uint8", 1, _INT, False, 1)
int8 = dtype("int8", 1, _INT, True, 1)
int16 = dtype("int16", 2, _INT, True, 2)
int32 = dtype("int32", 4, _INT, True, 3)
int64 = dtype("int64", 8, _INT, True, 4)
float16 = dtype("float16", 2, _FLOAT, True, 1)
bfloat16 = dtype("bfloat16", 2, _FLOAT, True, 1)
float32 = dtype("float32", 4, _FLOAT, True, 2)
float64 = dtype("float64", 8, _FLOAT, True, 3)
complex64 = dtype("complex64", 8, _COMPLEX, True, 2)
complex128 = dtype("complex128", 16, _COMPLEX, True, 3)

ALL_DTYPES = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
              complex64, complex128)

# torch's barebones unsigned and low-precision float dtypes: names with finfo/iinfo and torch's
# promotion refusals; no executor holds tensors of them (making one raises DtypeError)
uint16 = dtype("uint16", 2, _INT, False, 2)
uint32 = dtype("uint32", 4, _INT, False, 3)
uint64 = dtype("uint64", 8, _INT, False, 4)
float8_e4m3fn = dtype("float8_e4m3fn", 1, _FLOAT, True, 0)
float8_e4m3fnuz = dtype("float8_e4m3fnuz", 1, _FLOAT, True, 0)
float8_e5m2 = dtype("float8_e5m2", 1, _FLOAT, True, 0)
float8_e5m2fnuz = dtype("float8_e5m2fnuz", 1, _FLOAT, True, 0)
float8_e8m0fnu = dtype("float8_e8m0fnu", 1, _FLOAT, False, 0)
float4_e2m1fn_x2 = dtype("float4_e2m1fn_x2", 1, _FLOAT, True, 0)
complex32 = dtype("complex32", 4, _COMPLEX, True, 1)  # torch's chalf: two float16s
_UNSIGNED_WIDE = (uint16, uint32, uint64)
_LOW_FLOAT = (float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu, float4_e2m1fn_x2)
EXTRA_DTYPES = _UNSIGNED_WIDE + _LOW_FLOAT + (complex32,)
BY_NAME = {d.name: d for d in ALL_DTYPES + EXTRA_DTYPES}
ALIASES = {"bool": bool_, "half": float16, "float": float32, "double": float64,
           "short": int16, "int": int32, "long": int64, "cfloat": complex64, "chalf": complex32,
           "cdouble": complex128}

# prefix: the namespace reprs name ("torch" while the torch import alias is active)
_state = {"default_float": float32, "prefix": "tdx"}
# called after the default float dtype changes: the torch executor's module adds the sync of torch's own default
# when it loads (torch computes some result dtypes, int / int, from it), and each executor syncs when built
DEFAULT_FOLLOWERS: list = []


def get_default_dtype() -> dtype:
    """The dtype Python floats become (torch's ``get_default_dtype``)."""
    return _state["default_float"]


def set_default_dtype(d: dtype) -> None:
    """Set the dtype Python floats become; only floating dtypes are accepted, as in torch."""
    if d.__class__ is type or isinstance(d, str):  # torch takes only a dtype object here, not ``float``
        raise DtypeError(f"invalid dtype object: only floating-point types are supported as the default type, "
                         f"got {d!r}")
    d = as_dtype(d)
    if d._cat != _FLOAT:
        raise DtypeError(f"only floating-point types are supported as the default type, got {d!r}")
    _state["default_float"] = d
    for follow in DEFAULT_FOLLOWERS:
        follow()


def default_complex() -> dtype:
    return complex128 if _state["default_float"] is float64 else complex64


# Python's scalar types as dtypes, as torch reads them: fixed widths, whatever the default dtype
PYTHON_TYPES = {bool: bool_, int: int64, float: float64, complex: complex128}


def as_dtype(obj) -> dtype:
    """A ``dtype=`` argument as torch reads it: the one place user-given dtype-likes become tdx dtypes.

    A tdx dtype is itself; Python's ``bool``/``int``/``float``/``complex`` are torch's ``bool``,
    ``int64``, ``float64`` and ``complex128`` (never the default dtype: ``dtype=float`` is float64 in
    torch whatever the default); a torch, MLX or NumPy dtype object is the tdx dtype of its name.
    Strings are refused as torch refuses them (internal code reading a name uses :func:`by_name`).

    Raises:
        DtypeError: ``obj`` is a string or names no dtype tdx knows.
    """
    if type(obj) is dtype:
        return obj
    if obj.__class__ is type:
        d = PYTHON_TYPES.get(obj)
        if d is not None:
            return d
    if isinstance(obj, str):
        raise DtypeError(f"argument 'dtype' must be torch.dtype, not str (got {obj!r}; accepted: a dtype such as "
                         f"{_state['prefix']}.float32, or Python's bool, int, float, complex)")
    name = getattr(obj, "name", None)
    if not isinstance(name, str):  # torch and MLX dtypes: "torch.float32", "mlx.core.float32"
        name = str(obj)
    d = BY_NAME.get(name.rsplit(".", 1)[-1])
    if d is None:
        raise DtypeError(f"argument 'dtype' must be torch.dtype, not {type(obj).__name__} (got {obj!r}); accepted: "
                         + ", ".join(d.name for d in ALL_DTYPES) + ", or Python's bool, int, float, complex")
    return d


def by_name(name: str) -> dtype:
    """The tdx dtype a name means: ``"float32"``, torch's aliases (``"float"``, ``"long"``...), or a
    qualified name (``"torch.float32"``, ``"mlx.core.float32"``); for names tdx itself reads (array
    dtypes, pickles), never for a user's ``dtype=`` argument (see :func:`as_dtype`).

    Raises:
        DtypeError: ``name`` names no dtype tdx knows.
    """
    key = name.rsplit(".", 1)[-1]
    d = BY_NAME.get(key) or ALIASES.get(key)
    if d is None:
        raise DtypeError(f"unknown dtype {name!r}; accepted: " + ", ".join(d.name for d in ALL_DTYPES))
    return d


def promote_types(a: dtype, b: dtype) -> dtype:
    """torch.promote_types for two dtypes (or Python's scalar types, as torch reads them)."""
    if a is b:
        return a
    if a.__class__ is not dtype or b.__class__ is not dtype:
        a, b = as_dtype(a), as_dtype(b)
        if a is b:
            return a
    if a in EXTRA_DTYPES or b in EXTRA_DTYPES:
        return _promote_extra(a, b)
    if a._cat < b._cat:
        a, b = b, a
    # now a's category >= b's
    if b is bool_:
        return a
    if a._cat == _INT:  # both integral
        if a.is_signed != b.is_signed:  # uint8 with a signed int
            signed = a if a.is_signed else b
            return int16 if signed is int8 else signed
        return a if a._rank >= b._rank else b
    if a._cat == _FLOAT:
        if b._cat == _INT:
            return a
        if {a.name, b.name} == {"float16", "bfloat16"}:
            return float32
        return a if a._rank >= b._rank else b
    # a is complex
    if b._cat == _COMPLEX:
        return a if a._rank >= b._rank else b
    if b is float64:
        return complex128
    return a


def _promote_extra(a: dtype, b: dtype) -> dtype:
    """torch's rule for two distinct dtypes, one of them in :data:`EXTRA_DTYPES`: mostly a refusal."""
    def torch_name(d):
        return _TORCH_SCALAR_NAMES[d.name]

    if a in _LOW_FLOAT or b in _LOW_FLOAT:
        raise TdxRuntimeError(f"Promotion for Float8 Types is not supported, attempted to promote "
                         f"{torch_name(a)} and {torch_name(b)}")
    if complex32 in (a, b):  # torch's: complex32 with a wider float or complex widens to that width's complex
        other = b if a is complex32 else a
        if other._cat < _FLOAT or other is float16:
            return complex32
        if other._cat == _COMPLEX:
            return other
        return complex128 if other is float64 else complex64
    wide, other = (a, b) if a in _UNSIGNED_WIDE else (b, a)
    if other._cat >= _FLOAT:
        return other
    raise TdxRuntimeError(f"Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
                     f"{torch_name(a)} and {torch_name(b)}")


# c10's ScalarType names, which torch's promotion errors print
_TORCH_SCALAR_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
                       "int64": "Long", "float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
                       "float64": "Double", "complex64": "ComplexFloat", "complex32": "ComplexHalf", "complex128": "ComplexDouble",
                       "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64", "float8_e4m3fn": "Float8_e4m3fn",
                       "float8_e4m3fnuz": "Float8_e4m3fnuz", "float8_e5m2": "Float8_e5m2",
                       "float8_e5m2fnuz": "Float8_e5m2fnuz", "float8_e8m0fnu": "Float8_e8m0fnu",
                       "float4_e2m1fn_x2": "Float4_e2m1fn_x2"}


def _combine(higher: dtype | None, lower: dtype | None) -> dtype | None:
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher._cat == _COMPLEX:
        return higher
    if lower._cat == _COMPLEX:
        if higher._cat == _FLOAT:
            if higher in (float16, bfloat16):
                raise DtypeError(f"complex promotion of {higher!r} is not supported by tdx")
            return higher.to_complex()
        return lower
    if higher._cat == _FLOAT:
        return higher
    if higher is bool_ or lower._cat == _FLOAT:
        return promote_types(higher, lower)
    return higher


def scalar_dtype(value) -> dtype:
    """The dtype a Python scalar takes part in promotion with."""
    t = type(value)
    if t is bool:
        return bool_
    if t is int:
        return int64
    if t is float:
        return _state["default_float"]
    if t is complex:
        return default_complex()
    raise DtypeError(f"expected a Python bool, int, float or complex scalar, got {t.__name__}")


def result_type(dims: tuple, zeros: tuple = (), scalars: tuple = ()) -> dtype:
    """torch's result type from dtypes of dim>0 tensors, 0-d tensors and Python scalars."""
    dim_r = zero_r = wrap_r = None
    for d in dims:
        dim_r = d if dim_r is None else promote_types(dim_r, d)
    for d in zeros:
        zero_r = d if zero_r is None else promote_types(zero_r, d)
    for s in scalars:
        d = scalar_dtype(s)
        wrap_r = d if wrap_r is None else promote_types(wrap_r, d)
    r = _combine(dim_r, _combine(zero_r, wrap_r))
    if r is None:
        raise DtypeError("result_type needs at least one operand")
    return r


def is_floating(d: dtype) -> bool:
    return d._cat == _FLOAT


def is_complex(d: dtype) -> bool:
    return d._cat == _COMPLEX


def is_integral(d: dtype, include_bool: bool = False) -> bool:
    return d._cat == _INT or (include_bool and d._cat == _BOOL)


def can_cast(src: dtype, dst: dtype) -> bool:
    """torch's canCast (what an in-place result may be written as): no complex->real, float->int, or
    non-bool->bool."""
    if src.is_complex and not dst.is_complex:
        return False
    if src.is_floating_point and not (dst.is_floating_point or dst.is_complex):
        return False
    return not (src is not bool_ and dst is bool_)


def float_for(d: dtype) -> dtype:
    """The dtype an int/bool input becomes in a float-valued op (exp, mean, true division)."""
    return d if d._cat >= _FLOAT else _state["default_float"]


def scalar_name(d: dtype) -> str:
    """c10's name of ``d`` (``Float``, ``Long``...), as torch's dtype errors print it."""
    return _TORCH_SCALAR_NAMES[d.name]
