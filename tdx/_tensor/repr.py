"""torch-style printing of tensors: ``tensor([1., 2.], device='mlx:cpu', dtype=tdx.int32)`` (``torch.int32`` under the torch alias).

Formats from a host NumPy copy; must never import a framework.
"""

from __future__ import annotations

import numpy as np

from .. import _dtypes as D
from .formats import PRINT_OPTIONS


def _float_formatter(arr: np.ndarray):
    finite = (arr[np.isfinite(arr)] if arr.size else arr).astype(np.float64)  # float16 would overflow in the tests
    if finite.size == 0:
        return None
    amax, amin = np.abs(finite).max(), np.abs(finite).min()
    p, sci = PRINT_OPTIONS["precision"], PRINT_OPTIONS["sci_mode"]
    if np.all(finite == np.round(finite)) and amax < 1e8 and not sci:
        return lambda v: f"{v:.0f}." if np.isfinite(v) else str(v)
    if sci or (sci is None and (amax >= 1e8 or (amin > 0 and amax / amin > 1000) or (0 < amax < 1e-4))):
        return lambda v: f"{v:.{p}e}"
    return lambda v: f"{v:.{p}f}" if np.isfinite(v) else str(v)


def _grad_suffix(t) -> list:
    """torch's last field: ``grad_fn=<MulBackward0>`` for a result of recorded ops (its node's name, on every
    executor), ``requires_grad=True`` for a leaf that requires grad, nothing otherwise."""
    if not t.requires_grad:
        return []
    node = t.grad_fn
    if node is None:
        return ["requires_grad=True"]
    name = node.name() if callable(node.name) else node.name  # a forbidden view's history names itself
    return [f"grad_fn=<{name}>"]


def format_tensor(t) -> str:
    cls = type(t)
    # a subclass prints under its name, as torch's (tdx's own Parameter and Buffer print as tensors)
    head = "tensor(" if (cls.__module__ or "").startswith("tdx.") else f"{cls.__name__}("
    dtype = t.dtype
    if t._ex.device.type == "meta":  # no data to print: torch's form
        named = "" if dtype is D.get_default_dtype() else f", dtype={dtype!r}"
        grad = "".join(", " + s for s in _grad_suffix(t))
        return f"{head}..., device='meta', size={tuple(t.shape)}{named}{grad})"
    arr = t._ex.host_numpy(t._n)
    threshold = PRINT_OPTIONS["threshold"]
    opts = {"separator": ", ", "prefix": head, "edgeitems": PRINT_OPTIONS["edgeitems"],
            "threshold": threshold if threshold != float("inf") else 2 ** 62}
    if PRINT_OPTIONS["linewidth"] != 80:  # numpy's own width otherwise, as before set_printoptions
        opts["max_line_width"] = PRINT_OPTIONS["linewidth"]
    if arr.dtype.kind == "f":
        fmt = _float_formatter(arr)
        if fmt is not None:
            width = max(len(fmt(v)) for v in arr.flat)
            opts["formatter"] = {"float_kind": lambda v: fmt(v).rjust(width)}
    elif arr.dtype.kind == "b":
        pad = 5 if not arr.all() else 4  # torch pads True only beside a False
        opts["formatter"] = {"bool": lambda v: ("True" if v else "False").rjust(pad)}
    body = np.array2string(arr, **opts) if arr.size else "[]"
    if arr.dtype.kind == "b" and arr.ndim == 0:
        body = body.strip()
    suffix = []
    if t._ex.device.type != "cpu":
        suffix.append(f"device='{t._ex.device}'")
    if arr.size == 0 and arr.ndim > 1:
        suffix.append(f"size={tuple(arr.shape)}")
    # torch's: the default float, its complex counterpart, int64 and bool go unnamed
    default = {D.get_default_dtype(), D.complex128 if D.get_default_dtype() is D.float64 else D.complex64,
               D.int64, D.bool_}
    if dtype not in default or (arr.size == 0 and dtype is not D.get_default_dtype()):
        suffix.append(f"dtype={dtype!r}")
    suffix.extend(_grad_suffix(t))
    return head + body + "".join(", " + s for s in suffix) + ")"
