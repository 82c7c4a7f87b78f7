"""Autocast's per-op cast policy on executors without a native autocast (MLX), in tdx's own form.

torch's "Autocast Op Reference" sorts the ops autocast touches into three lists per device type:
ops that run in the region's lower precision (float16/bfloat16: the matmul family, linear,
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
  function of that name on the natives (``namespace_call``): :mod:`.autocast_state` has turned torch's
  autocast on for the region, so torch casts exactly as torch does, even for ops tdx composes;
- elsewhere, when a region covers that executor (its own device type, or a device type the config
  or a pin resolves to it), casts the floating arguments as the policy says (tdx casts, so MLX's tape
  differentiates through them), runs the op with the policy suspended (ops inside a listed op are
  not cast again, as torch's dispatcher skips autocast below an autocast kernel), and caches the
  lower-precision casts of leaf tensors that require grad while ``cache_enabled`` (weights cast once
  per region, dropped when the outermost region exits).

Ops given an explicit ``dtype=`` or ``out=`` are not eligible, as torch's; on a taped executor, ops run inside
an op the tape records as one node (or inside a backward replay) are not cast, so a replay recomputes exactly
the forward. This module must never import a framework.
"""

from __future__ import annotations

import functools
import threading

from ... import _dtypes as D
from ...autograd import tape as _tape

__all__ = ["TABLES", "ON", "install", "install_module", "wrapped", "activate", "policy_of", "clear_cache"]

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
_local = threading.local()


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
    from . import autocast_state

    for kind in autocast_state.enabled_types():
        if autocast_state.covers(kind, ex):
            return kind, autocast_state.get_autocast_dtype(kind)
    return None


def _eligible(t, Tensor) -> bool:
    return isinstance(t, Tensor) and t.dtype.is_floating_point and t.dtype is not D.float64


def _cast(a, to, cacheable: bool, Tensor):
    if isinstance(a, Tensor):
        if not _eligible(a, Tensor) or a.dtype is to:
            return a
        if cacheable and a.requires_grad and a.grad_fn is None:
            from . import autocast_state

            if autocast_state.is_autocast_cache_enabled():
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
    cache = getattr(_local, "cache", None)
    if cache is None:
        cache = _local.cache = {}
    return cache


def clear_cache() -> None:
    """Drop this thread's cached weight casts (the outermost region's exit)."""
    _local.cache = {}


def _apply(home, name, fn, args, kwargs):
    """The slow path: ``fn(*args, **kwargs)`` with the policy of ``name`` for the region in force."""
    if getattr(_local, "suspended", False) or kwargs.get("out") is not None or kwargs.get("dtype") is not None:
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
    _local.suspended = True
    try:
        return fn(*args, **kwargs)
    finally:
        _local.suspended = False


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
    from . import autocast_state
    from ..._errors import NATIVE_ERRORS, UnsupportedOpError
    from ..._tensor.kernels import wrapped

    if home is None or not autocast_state.is_autocast_enabled(ex.device.type):
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
        setattr(owner, name, wrapped if on else fn)
