"""Autocast's state and its per-op policy: torch's top-level autocast functions (``tdx.is_autocast_enabled``,
``tdx.set_autocast_dtype``, ``tdx.autocast``...), per device type and per thread, and the casts they make on
executors without a native autocast (MLX). One module, as torch keeps both in ``autocast_mode``: the state turns
the policy's wrappers on when the first region of the process opens, and the policy asks the state which region
covers an executor.

The state: whether autocast is on for a device type, its lower-precision dtype, the weight-cast cache switch and
the nesting depth. Every change to a torch device type's state (``cpu``, ``cuda``, ``mps``, ``xpu``) is mirrored
into torch's own autocast state when torch is loaded, so ops on the torch executor are cast by torch itself,
exactly as torch casts them; ops on other executors (MLX) consult the policy below, which asks
:func:`enabled_types` and :func:`covers` which region applies.

The policy, in tdx's own form: torch's "Autocast Op Reference" sorts the ops autocast touches into three lists
per device type: ops that run in the region's lower precision (float16/bfloat16: the matmul family, linear,
convolutions, attention), ops that run in float32 (reductions, exp/log/pow, norms, losses on CUDA;
losses, 3-D pools, linear algebra and FFTs on CPU), and ops that run in the widest floating dtype of
their inputs (``cat``, ``stack``, ``addcmul``, ``index_put``...). The tables below write those lists as
tdx entry points: ``TABLES[table][policy]`` names the ``Tensor`` methods, ``tdx.*`` functions and
``tdx.nn.functional`` / ``tdx.linalg`` / ``tdx.fft`` functions of each policy. A region named ``"cpu"``
uses the ``"cpu"`` table; every other device type (``cuda``, ``mps``, ``mlx``...) the ``"cuda"`` one.

How ops consult it: the listed functions of ``tdx.nn.functional``, ``tdx.linalg`` and ``tdx.fft`` are
wrapped once, at import (:func:`install_module`); the listed ``Tensor`` methods and ``tdx.*`` functions,
the hot paths, are wrapped only while some region is on (:func:`activate`, called when the first region of
the process opens and the last one closes), so they cost nothing while autocast is off. A wrapper's only
work while no region is on anywhere is one read of :data:`ON` (a one-element list); inside a region it
finds the executor of the first tensor argument, and:

- on an executor with ``native_autocast`` (torch), inside a region for its device type, runs torch's own
  function of that name on the natives (``namespace_call``): the state has turned torch's
  autocast on for the region, so torch casts exactly as torch does, even for ops tdx composes;
- elsewhere, when a region covers that executor (its own device type, or a device type the config
  or a pin resolves to it), casts the floating arguments as the policy says (tdx casts, so MLX's tape
  differentiates through them), runs the op with the policy suspended (ops inside a listed op are
  not cast again, as torch's dispatcher skips autocast below an autocast kernel), and caches the
  lower-precision casts of leaf tensors that require grad while ``cache_enabled`` (weights cast once
  per region, dropped when the outermost region exits).

Ops given an explicit ``dtype=`` or ``out=`` are not eligible, as torch's; on a taped executor, ops run inside
an op the tape records as one node (or inside a backward replay) are not cast, so a replay recomputes exactly
the forward. This module must never import a framework (torch is touched only once something has
loaded it).
"""

from __future__ import annotations

import functools
import sys
import threading
import warnings

from ... import _dtypes as D
from ..._errors import TdxRuntimeError, TdxTypeError, TdxValueError
from ...autograd import tape as _tape

__all__ = ["autocast", "is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype",
           "is_autocast_cpu_enabled", "set_autocast_cpu_enabled", "get_autocast_cpu_dtype", "set_autocast_cpu_dtype",
           "get_autocast_gpu_dtype", "set_autocast_gpu_dtype", "is_autocast_ipu_enabled", "set_autocast_ipu_enabled",
           "get_autocast_ipu_dtype", "set_autocast_ipu_dtype", "is_autocast_xla_enabled", "set_autocast_xla_enabled",
           "get_autocast_xla_dtype", "set_autocast_xla_dtype", "is_autocast_cache_enabled",
           "set_autocast_cache_enabled", "clear_autocast_cache", "autocast_increment_nesting",
           "autocast_decrement_nesting"]

_TORCH_TYPES = ("cpu", "cuda", "mps", "xpu")  # mirrored into torch's own autocast state
_DEVICE_TYPES = ("cpu", "cuda", "mps", "mlx", "xpu", "ipu", "xla", "hpu", "mtia", "maia", "privateuseone")
_DEFAULT_DTYPE = {"cuda": "float16", "mps": "float16", "mlx": "float16", "xpu": "bfloat16"}
_local = threading.local()
_on_lock = threading.Lock()


def _torch():
    """torch when something has loaded it (the torch executor, the caller), else None."""
    return sys.modules.get("torch")


def _state() -> dict:
    st = getattr(_local, "state", None)
    if st is None:
        st = _local.state = {"enabled": {}, "dtype": {}, "cache": True, "nesting": 0}
    return st


def _device_type(device_type, api: str) -> str:
    if not isinstance(device_type, str):
        raise TdxTypeError(f"{api}(): argument 'device_type' must be str, not {type(device_type).__name__}")
    kind = device_type.split(":")[0]
    if kind not in _DEVICE_TYPES:
        raise TdxRuntimeError(f"{api}(): unsupported device type {device_type!r}; expected one of "
                              f"{', '.join(_DEVICE_TYPES)}")
    return kind


def is_autocast_enabled(device_type="cuda") -> bool:
    """Whether autocast is on for ``device_type`` (default ``"cuda"``, as torch's no-argument form)."""
    return _state()["enabled"].get(_device_type(device_type, "is_autocast_enabled"), False)


def set_autocast_enabled(device_type, enabled=None) -> None:
    """``set_autocast_enabled(device_type, enabled)``, or the legacy ``set_autocast_enabled(enabled)`` for cuda."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    if not isinstance(enabled, bool):
        raise TdxTypeError(f"set_autocast_enabled(): argument 'enabled' must be bool, not {type(enabled).__name__}")
    kind = _device_type(device_type, "set_autocast_enabled")
    table = _state()["enabled"]
    if table.get(kind, False) != enabled:
        with _on_lock:  # threads enter and leave regions at once: the count must not lose an update
            before = ON[0]
            ON[0] += 1 if enabled else -1
            if (before == 0) != (ON[0] == 0):
                activate(ON[0] > 0)
    table[kind] = enabled
    torch = _torch()
    if torch is not None and kind in _TORCH_TYPES:
        torch.set_autocast_enabled(kind, enabled)


def enabled_types() -> list:
    """The device types autocast is on for in this thread."""
    return [k for k, on in _state()["enabled"].items() if on]


def covers(kind: str, ex) -> bool:
    """Whether a region for device type ``kind`` applies to executor ``ex``: ``kind`` is ``ex``'s own device
    type, or the config (a ``device_map``, a ``python -m tdx run --device`` pin) resolves ``kind`` to ``ex``
    and ``ex`` is an accelerator exactly when ``kind`` names one (under a pin to ``mlx:cpu``, a program's
    ``autocast("cpu")`` covers MLX tensors and its ``autocast("cuda")`` does not, as on a machine without CUDA).
    """
    dev = ex.device
    if kind == dev.type:
        return True
    from ... import backends
    from ..._errors import TdxError
    from ..cuda import is_accelerator

    try:
        resolved = backends.get(kind)
    except TdxError:
        return False
    return resolved is ex and (kind != "cpu") == is_accelerator(dev)


def get_autocast_dtype(device_type):
    """The lower-precision dtype autocast uses on ``device_type`` (float16 on GPUs, bfloat16 on cpu)."""
    kind = _device_type(device_type, "get_autocast_dtype")
    return _state()["dtype"].get(kind) or getattr(D, _DEFAULT_DTYPE.get(kind, "bfloat16"))


def set_autocast_dtype(device_type, dtype) -> None:
    """Set autocast's lower-precision dtype for ``device_type``.

    Raises:
        TdxTypeError: ``dtype`` is not a tdx dtype.
    """
    if dtype.__class__ is type and dtype in D.PYTHON_TYPES:  # Python's float is float64, as torch reads it
        dtype = D.as_dtype(dtype)
    if not isinstance(dtype, D.dtype):
        raise TdxTypeError(f"set_autocast_dtype(): argument 'dtype' must be torch.dtype, not {type(dtype).__name__}")
    kind = _device_type(device_type, "set_autocast_dtype")
    _state()["dtype"][kind] = dtype
    torch = _torch()
    if torch is not None and kind in _TORCH_TYPES and dtype.is_floating_point:
        torch.set_autocast_dtype(kind, getattr(torch, dtype.name))


def _pair(kind: str):
    def is_enabled() -> bool:
        return is_autocast_enabled(kind)

    def set_enabled(enabled) -> None:
        set_autocast_enabled(kind, enabled)

    def get_dtype():
        return get_autocast_dtype(kind)

    def set_dtype(dtype) -> None:
        set_autocast_dtype(kind, dtype)

    for fn, what in ((is_enabled, "Whether autocast is on"), (set_enabled, "Turn autocast on or off"),
                     (get_dtype, "Autocast's dtype"), (set_dtype, "Set autocast's dtype")):
        fn.__doc__ = f"{what} for {kind} (torch's device-specific form)."
    return is_enabled, set_enabled, get_dtype, set_dtype


is_autocast_cpu_enabled, set_autocast_cpu_enabled, get_autocast_cpu_dtype, set_autocast_cpu_dtype = _pair("cpu")
is_autocast_ipu_enabled, set_autocast_ipu_enabled, get_autocast_ipu_dtype, set_autocast_ipu_dtype = _pair("ipu")
is_autocast_xla_enabled, set_autocast_xla_enabled, get_autocast_xla_dtype, set_autocast_xla_dtype = _pair("xla")
_, _, get_autocast_gpu_dtype, set_autocast_gpu_dtype = _pair("cuda")


def is_autocast_cache_enabled() -> bool:
    """Whether autocast caches the casts of weights inside an autocast region."""
    return _state()["cache"]


def set_autocast_cache_enabled(enabled) -> None:
    """Turn autocast's weight-cast cache on or off."""
    if not isinstance(enabled, bool):
        raise TdxTypeError(f"set_autocast_cache_enabled(): argument 'enabled' must be bool, "
                           f"not {type(enabled).__name__}")
    _state()["cache"] = enabled
    torch = _torch()
    if torch is not None:
        torch.set_autocast_cache_enabled(enabled)


def clear_autocast_cache() -> None:
    """Drop autocast's cached weight casts (tdx's, and torch's when torch is loaded)."""
    clear_cache()
    torch = _torch()
    if torch is not None:
        torch.clear_autocast_cache()


def autocast_increment_nesting() -> int:
    """Enter one autocast level; returns the new depth."""
    st = _state()
    st["nesting"] += 1
    torch = _torch()
    if torch is not None:
        torch.autocast_increment_nesting()
    return st["nesting"]


def autocast_decrement_nesting() -> int:
    """Leave one autocast level; returns the new depth."""
    st = _state()
    st["nesting"] -= 1
    torch = _torch()
    if torch is not None:
        torch.autocast_decrement_nesting()
    return st["nesting"]


def is_autocast_available(device_type) -> bool:
    """Whether autocast can be used with ``device_type`` (every device type tdx names, as torch's list)."""
    if not isinstance(device_type, str):
        raise TdxTypeError(f"is_autocast_available(): argument 'device_type' must be str, "
                           f"not {type(device_type).__name__}")
    return device_type.split(":")[0] in _DEVICE_TYPES


_SUPPORTED = (D.bfloat16, D.float16)


def _load_torch_for(kind: str) -> None:
    """Load torch before a region for a torch device type starts, so its state is mirrored (not under a pin to
    another executor, whose tensors torch never computes)."""
    if kind not in _TORCH_TYPES or _torch() is not None:
        return
    from ... import backends
    from ...backends import _flags

    pin = backends.pinned()
    if pin is None or pin[0].device.type in _TORCH_TYPES:
        _flags.torch_module()


class autocast:  # noqa: N801 - torch's name
    """``torch.autocast``: inside the block or decorated function, ops on ``device_type``'s tensors run in
    the dtype torch's autocast policy gives them (``dtype``, float16 or bfloat16, for the matmul family;
    float32 for the ops torch keeps there; the widest input dtype for the promoting ops).

    ``enabled=False`` opens a region with autocast off (nested inside an enabled one); ``cache_enabled``
    keeps one lower-precision cast of each weight per outermost region. As torch: an unsupported ``dtype``
    on cpu/mps/mlx warns and disables the region, and a ``cuda`` region without CUDA warns and is disabled.

    Raises:
        TdxValueError: ``device_type`` is not a string.  TdxRuntimeError: an unknown device type.
        TdxTypeError: a non-dtype ``dtype``.
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise TdxValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if not is_autocast_available(device_type):
            raise TdxRuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.device = device_type
        if dtype.__class__ is type and dtype in D.PYTHON_TYPES:  # dtype=float: float64, refused below with a warning
            dtype = D.as_dtype(dtype)
        if dtype is not None and not isinstance(dtype, D.dtype):
            raise TdxTypeError(f"autocast(): argument 'dtype' must be torch.dtype, not {type(dtype).__name__}")
        self.fast_dtype = dtype if dtype is not None else get_autocast_dtype(self.device)
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else bool(cache_enabled)
        if enabled:
            if self.device == "cuda":
                from ..cuda import is_available

                if not is_available():
                    warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.",
                                  stacklevel=2)
                    enabled = False
            elif self.fast_dtype not in _SUPPORTED:
                name = self.device.upper()
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                              f"{name} Autocast only supports dtypes of {D._state['prefix']}.bfloat16, "
                              f"{D._state['prefix']}.float16 currently.", stacklevel=2)
                enabled = False
        self._enabled = bool(enabled)
        self._saved = []

    def __enter__(self):
        _load_torch_for(self.device)
        self._saved.append((is_autocast_enabled(self.device), get_autocast_dtype(self.device),
                            is_autocast_cache_enabled()))
        set_autocast_enabled(self.device, self._enabled)
        set_autocast_dtype(self.device, self.fast_dtype)
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, *exc) -> None:
        enabled, dtype, cache = self._saved.pop()
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        set_autocast_enabled(self.device, enabled)
        set_autocast_dtype(self.device, dtype)
        set_autocast_cache_enabled(cache)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return fn(*args, **kwargs)

        return wrapper


# autocast's per-op policy on executors without a native autocast

ON = [0]
"""How many (thread, device type) autocast regions are enabled now, process-wide: the wrapper's one check."""

_MATMULS = ("matmul", "__matmul__", "__rmatmul__", "mm", "bmm", "addmm", "addbmm", "baddbmm", "chain_matmul",
            "einsum", "multi_dot", "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
            "conv_transpose3d", "prelu", "scaled_dot_product_attention")
_LOSSES = ("binary_cross_entropy_with_logits", "cosine_embedding_loss", "cross_entropy", "hinge_embedding_loss",
           "kl_div", "l1_loss", "margin_ranking_loss", "mse_loss", "multilabel_margin_loss", "multi_margin_loss",
           "nll_loss", "poisson_nll_loss", "smooth_l1_loss", "soft_margin_loss", "triplet_margin_loss")

TABLES = {
    "cuda": {
        "lower": frozenset(_MATMULS + ("addmv", "addr", "mv")),
        "float32": frozenset(_LOSSES + (
            "__pow__", "__rpow__", "__rtruediv__", "pow", "acos", "asin", "cosh", "sinh", "tan", "exp", "expm1",
            "log", "log10", "log1p", "log2", "erfinv", "reciprocal", "rsqrt", "cumprod", "cumsum", "prod", "sum",
            "norm", "dist", "renorm", "cdist", "softmax", "log_softmax", "softmin", "softplus", "cosine_similarity",
            "group_norm", "layer_norm", "normalize", "pdist")),
        "promote": frozenset(("addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "grid_sample", "index_put",
                              "scatter_add", "tensordot")),
    },
    "cpu": {
        "lower": frozenset(_MATMULS + ("vecdot",)),
        "float32": frozenset(_LOSSES + (
            "binary_cross_entropy", "huber_loss", "ctc_loss", "avg_pool3d", "max_pool3d", "adaptive_avg_pool3d",
            "adaptive_max_pool3d", "max_unpool2d", "max_unpool3d", "fractional_max_pool2d", "fractional_max_pool3d",
            "grid_sample", "prod", "cdist", "trace", "polar", "quantile", "nanquantile", "stft", "view_as_complex",
            "cholesky", "cholesky_inverse", "cholesky_solve", "inverse", "pinverse", "qr", "svd", "triangular_solve",
            "lu_solve", "geqrf", "orgqr", "ormqr", "inv", "inv_ex", "cholesky_ex", "eig", "eigh", "eigvals",
            "eigvalsh", "lstsq", "svdvals", "solve", "det", "slogdet", "matrix_norm", "vector_norm", "matrix_rank",
            "fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn",
            "hfft", "ihfft")),
        "promote": frozenset(("cat", "concat", "concatenate", "stack", "index_copy")),
    },
}

# the names wrapped on each object: Tensor methods, tdx.* functions, and the namespaces' functions
_ALL = frozenset().union(*(names for table in TABLES.values() for names in table.values()))
_POLICY = {table: {name: pol for pol, names in by_policy.items() for name in names}
           for table, by_policy in TABLES.items()}
_policy_local = threading.local()


def policy_of(table: str, name: str):
    """``"lower"``, ``"float32"``, ``"promote"`` or None: what ``table`` (``"cpu"``/``"cuda"``) does to op ``name``."""
    return _POLICY[table].get(name)


def _first_tensor(args, kwargs, Tensor):
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor):
            return a
        if a.__class__ is list or a.__class__ is tuple:
            for x in a:
                if isinstance(x, Tensor):
                    return x
    return None


def _region_for(ex):
    """``(device type, dtype)`` of the enabled region covering executor ``ex`` in this thread, or None."""
    for kind in enabled_types():
        if covers(kind, ex):
            return kind, get_autocast_dtype(kind)
    return None


def _eligible(t, Tensor) -> bool:
    return isinstance(t, Tensor) and t.dtype.is_floating_point and t.dtype is not D.float64


def _cast(a, to, cacheable: bool, Tensor):
    if isinstance(a, Tensor):
        if not _eligible(a, Tensor) or a.dtype is to:
            return a
        if cacheable and a.requires_grad and a.grad_fn is None:
            if is_autocast_cache_enabled():
                cache = _cache()
                hit = cache.get(id(a))
                if hit is not None and hit[0] is a and hit[1].dtype is to:
                    return hit[1]
                out = a.to(to)
                cache[id(a)] = (a, out)
                return out
        return a.to(to)
    if a.__class__ is list or a.__class__ is tuple:
        return a.__class__(_cast(x, to, cacheable, Tensor) for x in a)
    return a


def _widest(args, kwargs, Tensor):
    widest = None
    for a in (*args, *kwargs.values()):
        for x in (a if a.__class__ is list or a.__class__ is tuple else (a,)):
            if isinstance(x, Tensor) and x.dtype.is_floating_point and not x.dtype.is_complex:
                if widest is None or x.dtype.itemsize > widest.itemsize:
                    widest = x.dtype
    return widest


def _cache() -> dict:
    cache = getattr(_policy_local, "cache", None)
    if cache is None:
        cache = _policy_local.cache = {}
    return cache


def clear_cache() -> None:
    """Drop this thread's cached weight casts (the outermost region's exit)."""
    _policy_local.cache = {}


def _apply(home, name, fn, args, kwargs):
    """The slow path: ``fn(*args, **kwargs)`` with the policy of ``name`` for the region in force."""
    if getattr(_policy_local, "suspended", False) or kwargs.get("out") is not None or kwargs.get("dtype") is not None:
        return fn(*args, **kwargs)
    from ..._tensor.tensor import Tensor

    t = _first_tensor(args, kwargs, Tensor)
    if t is None:
        return fn(*args, **kwargs)
    ex = t._ex
    if ex.native_autocast:
        return _torch_own(home, name, fn, ex, args, kwargs, Tensor)
    if ex.taped and (_tape._suspended() or _tape.differentiating()):
        # inside an op the tape records as one node, or its backward replay: the outermost op was cast (or
        # not) already, and the replay must recompute exactly what the forward computed
        return fn(*args, **kwargs)
    region = _region_for(ex)
    if region is None:
        return fn(*args, **kwargs)
    kind, low = region
    policy = _POLICY["cpu" if kind == "cpu" else "cuda"].get(name)
    if policy is None:  # a kernel of its own for this device type: what it calls inside is not cast again
        return _suspended(fn, args, kwargs)
    if policy == "lower":
        to = low
    elif policy == "float32":
        to = D.float32
    else:
        to = _widest(args, kwargs, Tensor)
        if to is None:
            return fn(*args, **kwargs)
    cacheable = policy == "lower"
    args = tuple(_cast(a, to, cacheable, Tensor) for a in args)
    kwargs = {k: _cast(v, to, cacheable, Tensor) for k, v in kwargs.items()}
    return _suspended(fn, args, kwargs)


def _suspended(fn, args, kwargs):
    _policy_local.suspended = True
    try:
        return fn(*args, **kwargs)
    finally:
        _policy_local.suspended = False


def _native(a, ex, Tensor):
    if isinstance(a, Tensor):
        return a._n if a._ex is ex else _MIXED
    if a.__class__ is list or a.__class__ is tuple:
        out = [_native(x, ex, Tensor) for x in a]
        return _MIXED if any(x is _MIXED for x in out) else a.__class__(out)
    if isinstance(a, D.dtype):
        return ex.native_dtype(a)
    return a


_MIXED = object()


def _torch_own(home, name, fn, ex, args, kwargs, Tensor):
    """On an executor with its own autocast, inside a region for its device type: its function ``name`` of
    ``home`` on the natives (so ops tdx composes are cast as torch casts them); else ``fn`` as it is."""
    from ..._errors import NATIVE_ERRORS, UnsupportedOpError
    from ..._tensor.kernels import wrapped

    if home is None or not is_autocast_enabled(ex.device.type):
        return fn(*args, **kwargs)
    nargs = [_native(a, ex, Tensor) for a in args]
    nkw = {k: _native(v, ex, Tensor) for k, v in kwargs.items()}
    if any(a is _MIXED for a in nargs) or any(v is _MIXED for v in nkw.values()):
        return fn(*args, **kwargs)  # tensors of several executors: tdx's path raises torch's error
    try:
        out = ex.namespace_call(home, name, nargs, nkw)
    except UnsupportedOpError:  # torch has no function of that name there: tdx's own path
        return fn(*args, **kwargs)
    except NATIVE_ERRORS as err:
        raise ex.native_error(err) from None
    return wrapped(out, ex, name)


def _wrap(home, name, fn):
    if getattr(fn, "_autocast_policy", False):
        return fn

    @functools.wraps(fn)
    def op(*args, **kwargs):
        if ON[0]:
            return _apply(home, name, fn, args, kwargs)
        return fn(*args, **kwargs)

    op._autocast_policy = True
    return op


_HOMES = {"tdx": "torch", "tdx.compat.nn.functional": "nn.functional", "tdx.compat.linalg": "linalg",
          "tdx.compat.fft": "fft"}


def install_module(module) -> None:
    """Wrap the listed functions found in ``module`` (``tdx``, ``tdx.nn.functional``, ``tdx.linalg``...)."""
    for name in _ALL:
        fn = module.__dict__.get(name)
        if fn is not None:
            setattr(module, name, wrapped(module.__name__, name, fn))


def wrapped(module_name: str, name: str, fn):
    """``fn`` as :func:`install_module` leaves it as ``name`` of module ``module_name``: wrapped when listed (for a
    function a module resolves on first use)."""
    if name in _ALL and callable(fn) and not isinstance(fn, type):
        return _wrap(_HOMES.get(module_name), name, fn)
    return fn


_SWAPPED: list = []  # (owner, name, original, wrapped): the entries wrapped only while a region is on


def install(tdx_module, tensor_class) -> None:
    """Prepare the wrappers of the listed ``Tensor`` methods and ``tdx.*`` functions (called once by
    ``import tdx``); :func:`activate` puts them in place while any region is on."""
    for owner, home in ((tensor_class, "Tensor"), (tdx_module, "torch")):
        for name in _ALL:
            fn = owner.__dict__.get(name)
            if fn is not None and callable(fn) and not isinstance(fn, type):
                _SWAPPED.append((owner, name, fn, _wrap(home, name, fn)))


def activate(on: bool) -> None:
    """Put the wrappers of ``Tensor``'s methods and ``tdx.*``'s functions in place (``on``), or the originals
    back (the first region of the process opens, the last one closes): those hot paths cost nothing while
    autocast is off. The functions of ``tdx.nn.functional``, ``tdx.linalg`` and ``tdx.fft`` keep their
    wrappers for good, so a name bound by ``from torch.nn.functional import ...`` is cast too."""
    for owner, name, fn, wrapped in _SWAPPED:
        source, target = (fn, wrapped) if on else (wrapped, fn)
        current = owner.__dict__.get(name)
        if current is source:
            setattr(owner, name, target)
        elif getattr(current, "__tdx_dispatch__", False) and getattr(current, "__wrapped__", None) is source:
            # a Tensor subclass took part since (tdx._tensor.subclassing): its __torch_function__ dispatch sits
            # outermost, so it stays outermost, around the target; each pair is made once and kept
            key = (id(owner), name)
            pair = _DISPATCHED.get(key)
            if pair is None or pair[0 if on else 1] is not current:
                made = current.__tdx_redispatch__(target)
                pair = _DISPATCHED[key] = (current, made) if on else (made, current)
            setattr(owner, name, pair[1 if on else 0])
        # anything else was put there by the program (a patch of its own): left as it is


_DISPATCHED: dict = {}  # (id(owner), name) -> (the dispatcher around the original, the one around the wrapper)
