"""Which of torch's CPU orders of float32 arithmetic the MLX executor reproduces on this machine, found by
asking torch's own kernels on the running CPU.

The last bit of a float32 sum, dot product or multiply-add depends on the order of its additions and
on where it rounds, and torch's CPU kernels choose both by CPU vendor and instruction set (aten's
vectorized kernels by ``ATEN_CPU_CAPABILITY``, MKL's BLAS by its own dispatch and
``MKL_ENABLE_INSTRUCTIONS``). So no order is assumed: each op class's emulation is checked once per
process, on first need, against torch on fixed probe inputs covering the shapes it claims, and it is
used only where it gives torch's bits. The op classes (:data:`OP_CLASSES`):

* ``"sum"``: float32 ``sum``/``mean`` and the gradient of a broadcast ``+``/``-`` in aten's cascade
  order (:mod:`._summation_order`); unverified, MLX's own order.
* ``"dot"``: a 1-D float32 ``dot`` in MKL's ``sdot`` order (:mod:`._summation_order`); unverified,
  MLX's own.
* ``"multiply_add"``: ``add``/``sub`` with ``alpha``, ``addcmul``, ``lerp`` and the Adam kernel round
  once (``"fused"``, torch's kernels compiled with FMA) or round the product and the sum apart
  (``"rounded"``, torch's kernels without FMA: ``ATEN_CPU_CAPABILITY=default``), whichever torch
  does here (:mod:`._cpu_rounding`); neither, MLX's own (``"rounded"``) and no claim.
* ``"prod"``: a float16/bfloat16 ``prod`` in aten's order of half-precision multiplications
  (:mod:`._product_order`), under the same config switch as ``"sum"``; unverified, MLX's own.
* ``"tanh"``: float32 ``tanh`` correctly rounded (computed in float64, on every machine: MLX's own
  misses in 1 element of 5), which is torch's value but for rare 1-ulp misses of its kernel (at most
  :data:`TANH_MISSES` of the probes), and its derivative ``grad * (1 - y * y)`` fused or rounded
  apart as torch's ``tanh_backward`` is here; else no claim (the derivative is then MLX's own).

The MLX executor asks :func:`in_force` (``"sum"``, ``"dot"``: the config's choice too), :func:`fused`
and :func:`order` before it builds a kernel; :func:`report` gives every verdict with its reason.

Must never import torch (it reaches the torch executor through the registry, as
:mod:`._torch_stream` does), never draw from a random generator, and never change torch's state (its
threads, its grad mode, its generators): the probes are fixed values through torch's plain
functions. Without torch no order is verified and every class keeps MLX's own.
"""

from __future__ import annotations

import functools
import threading
import time
from typing import NamedTuple

import mlx.core as mx
import numpy as np

from . import _product_order as product_order
from . import _summation_order as summation
from ._cpu_rounding import fma, tanh_derivative

OP_CLASSES = ("sum", "dot", "multiply_add", "tanh", "prod")
TANH_MISSES = 1 / 500  # the share of probes where torch's tanh may miss the correctly rounded value


class Verdict(NamedTuple):
    """What the MLX executor does for one op class on this machine.

    Attributes:
        op: the op class (one of :data:`OP_CLASSES`).
        torch_bits: whether its results equal torch's CPU kernels' bit for bit here (verified).
        order: what it runs: ``"torch"`` (torch's order), ``"native"`` (MLX's own), or for
            ``"multiply_add"`` and ``tanh``'s derivative ``"fused"``/``"rounded"``.
        reason: why, in words (what the probe found, and torch's CPU capability).
    """

    op: str
    torch_bits: bool
    order: str
    reason: str


_VERDICTS: dict = {}
_LOCK = threading.RLock()
_COST: dict = {}  # op -> seconds its probe took


def verdict(op: str) -> Verdict:
    """The verdict for op class ``op``, probed on first call (once per process) and cached.

    Args:
        op: one of :data:`OP_CLASSES`.

    Returns:
        The :class:`Verdict`.

    Raises:
        KeyError: ``op`` is not an op class.
    """
    found = _VERDICTS.get(op)
    if found is not None:
        return found
    probe = _PROBES[op]
    with _LOCK:
        found = _VERDICTS.get(op)
        if found is None:
            start = time.perf_counter()
            found = _decide(op, probe)
            _COST[op] = time.perf_counter() - start
            _VERDICTS[op] = found
    return found


def verified(op: str) -> bool:
    """Whether op class ``op`` gives torch's CPU bits on this machine (:func:`verdict`)."""
    found = _VERDICTS.get(op)
    return (found if found is not None else verdict(op)).torch_bits


def order(op: str) -> str:
    """The order op class ``op`` runs in here (:attr:`Verdict.order`)."""
    found = _VERDICTS.get(op)
    return (found if found is not None else verdict(op)).order


def in_force(op: str) -> bool:
    """Whether the MLX executor adds ``"sum"`` or ``"dot"`` (multiplies ``"prod"``) in torch's order now: chosen by the config
    (``[backends.mlx] summation = "torch"``, the default: :func:`._summation_order.chosen`) and verified
    on this machine (probed on the first call)."""
    return summation.chosen() and verified(op)


def fused() -> bool:
    """Whether torch's CPU kernels round a multiply-add once on this machine (the ``"multiply_add"`` order)."""
    return order("multiply_add") == "fused"


def report() -> dict:
    """Every op class's :class:`Verdict` (probing the ones not yet decided), by op class."""
    return {op: verdict(op) for op in OP_CLASSES}


def probe_seconds() -> dict:
    """The seconds each decided op class's probe took, by op class."""
    return dict(_COST)


def _host():
    """The torch executor on cpu and the torch module it runs, or ``(None, None)`` without torch."""
    from .. import _flags, host_torch

    host = host_torch()
    torch = _flags.torch_loaded() if host is not None else None
    if torch is None:
        return None, None
    return host, torch


def _decide(op, probe) -> Verdict:
    host, torch = _host()
    if host is None:
        return Verdict(op, False, "native" if op in ("sum", "dot", "prod") else "rounded",
                       "torch is not installed: nothing to compare with, MLX's own arithmetic")
    capability = torch.backends.cpu.get_cpu_capability()
    return probe(host, torch, f"torch's CPU capability {capability}")


# --- probe inputs: fixed values, no generator ----------------------------------------------------------------

def values(n: int, salt: int = 0, spread: int = 6) -> np.ndarray:
    """``n`` (at most 16384) fixed float32 values with full mantissas and magnitudes over
    ``2**-spread..2**spread`` (sums whose every order of additions rounds differently): a slice, picked
    by ``salt``, of a Weyl sequence computed once per ``spread``; no random generator."""
    return _pool(spread)[(salt * 1013) % 8192:][:n]


@functools.lru_cache(maxsize=None)
def _pool(spread: int) -> np.ndarray:
    i = np.arange(16384 + 8192, dtype=np.int64)
    frac = (i * 0.6180339887498949) % 1.0
    return np.ldexp(frac - 0.5, (i * 37) % (2 * spread + 1) - spread).astype(np.float32)


def _same_bits(got, expect) -> bool:
    got, expect = np.asarray(got, np.float32), np.asarray(expect, np.float32)
    return got.shape == expect.shape and bool(np.array_equal(got.view(np.uint32), expect.view(np.uint32)))


def _torch(host, arr):
    """``arr`` as a torch cpu tensor in torch's own (aligned) memory, as tensors torch creates are: MKL's
    ``sdot`` adds a vector starting elsewhere in another order."""
    return host.from_host(arr, None).clone()


# sums over the layouts the emulation claims: rows (under, at and past a vector of 8, the 4-way
# interleave, the 16-chunk cascade and its second level: 8192 elements and more), several rows at once, columns (narrow, in
# blocks of 32, with a remainder), a batch over two leading dims and a column of one
SUM_PROBES = (((1, 5), (1,)), ((1, 8), (1,)), ((1, 13), (1,)), ((6, 37), (1,)), ((1, 100), (1,)),
              ((3, 256), (1,)), ((1, 1003), (1,)), ((8200,), (0,)), ((16, 8), (0,)), ((7, 33), (0,)),
              ((100, 5), (0,)), ((64, 40), (0,)), ((2, 16, 8), (0, 1)), ((300, 1), (0,)), ((4, 7, 9), (1, 2)))
DOT_PROBES = (4, 12, 16, 28, 44, 100, 1000, 4092, 8000)  # every tail modulo 16 of sdot's order, up to MAX_DOT


def _probe_sum(host, torch, why) -> Verdict:
    s = mx.default_stream(mx.cpu)
    got, expect = [], []
    for k, (shape, axes) in enumerate(SUM_PROBES):
        a = values(int(np.prod(shape)), k).reshape(shape)
        out = summation.over_axes(mx.array(a), axes, s)
        if out is None:
            return Verdict("sum", False, "native", f"the emulation declines the probe shape {shape}")
        got.append(mx.reshape(out, [d for i, d in enumerate(shape) if i not in axes], stream=s))
        expect.append(host.host_numpy(_torch(host, a).sum(axes)))
    mx.eval(got)
    bad = [SUM_PROBES[i][0] for i, (g, e) in enumerate(zip(got, expect)) if not _same_bits(np.array(g), e)]
    if bad:
        return Verdict("sum", False, "native", f"torch adds in another order here ({why}; shapes {bad} differ): "
                                               "MLX's own order, float tolerance")
    return Verdict("sum", True, "torch", f"aten's cascade order verified against torch ({why})")


def _probe_dot(host, torch, why) -> Verdict:
    s = mx.default_stream(mx.cpu)
    got, expect = [], []
    for k, n in enumerate(DOT_PROBES):
        a, b = values(n, 2 * k + 1), values(n, 2 * k + 2)
        got.append(summation.dot(mx.array(a), mx.array(b), s))
        expect.append(host.host_numpy(_torch(host, a).dot(_torch(host, b))))
    mx.eval(got)
    bad = [n for n, g, e in zip(DOT_PROBES, got, expect) if not _same_bits(np.array(g), e)]
    if bad:
        return Verdict("dot", False, "native", f"torch's BLAS adds in another order here ({why}; lengths {bad} "
                                               "differ): MLX's own order, float tolerance")
    return Verdict("dot", True, "torch", f"MKL's sdot order verified against torch ({why})")


def _rounded_forms(a, b, c, alpha, w, s):
    """The probe ops with the product and the sum rounded apart, in MLX float32."""
    scale = mx.array(np.float32(alpha))
    coeff = mx.array(w if abs(w) < 0.5 else w - np.float32(1))
    return [mx.add(a, mx.multiply(b, scale, stream=s), stream=s),
            mx.subtract(a, mx.multiply(b, scale, stream=s), stream=s),
            mx.add(a, mx.multiply(mx.multiply(b, mx.array(np.float32(0.3)), stream=s), c, stream=s), stream=s),
            mx.add(a if abs(w) < 0.5 else b, mx.multiply(coeff, mx.subtract(b, a, stream=s), stream=s), stream=s)]


def _fused_forms(a, b, c, alpha, w, s):
    """The probe ops with one rounding (through float64, as :mod:`._cpu_rounding` computes them)."""
    scale = mx.array(np.float32(alpha))
    coeff = mx.array(w if abs(w) < 0.5 else w - np.float32(1))
    return [fma(b, scale, a, s), fma(b, mx.negative(scale, stream=s), a, s),
            fma(mx.multiply(b, mx.array(np.float32(0.3)), stream=s), c, a, s),
            fma(coeff, mx.subtract(b, a, stream=s), a if abs(w) < 0.5 else b, s)]


def _probe_multiply_add(host, torch, why) -> Verdict:
    s = mx.default_stream(mx.cpu)
    expect, rounded, fused = [], [], []
    for n, alpha, w in ((515, 0.37, np.float32(0.3)), (64, -1.3e-3, np.float32(0.8))):  # a vector tail, lerp's branches
        a, b, c = values(n, 11, 3), values(n, 12, 3), values(n, 13, 3)
        ta, tb, tc = _torch(host, a), _torch(host, b), _torch(host, c)
        expect += [host.host_numpy(t) for t in (ta.add(tb, alpha=alpha), ta.sub(tb, alpha=alpha),
                                                ta.addcmul(tb, tc, value=0.3), ta.lerp(tb, float(w)))]
        xa, xb, xc = mx.array(a), mx.array(b), mx.array(c)
        rounded += _rounded_forms(xa, xb, xc, alpha, w, s)
        fused += _fused_forms(xa, xb, xc, alpha, w, s)
    col, row = values(8, 14, 3).reshape(8, 1), values(5, 15, 3)  # broadcasting takes another loop
    expect.append(host.host_numpy(_torch(host, col).add(_torch(host, row), alpha=0.37)))
    rounded.append(mx.add(mx.array(col), mx.multiply(mx.array(row), mx.array(np.float32(0.37)), stream=s), stream=s))
    fused.append(fma(mx.array(row), mx.array(np.float32(0.37)), mx.array(col), s))
    mx.eval(rounded, fused)
    if all(_same_bits(np.array(g), e) for g, e in zip(fused, expect)):
        return Verdict("multiply_add", True, "fused", f"torch's kernels round a multiply-add once ({why})")
    if all(_same_bits(np.array(g), e) for g, e in zip(rounded, expect)):
        return Verdict("multiply_add", True, "rounded", f"torch's kernels round the product and the sum apart ({why})")
    return Verdict("multiply_add", False, "rounded", f"torch's multiply-adds round neither once nor apart on "
                                                     f"every probe ({why}): MLX's own, float tolerance")


def _probe_tanh(host, torch, why) -> Verdict:
    s = mx.default_stream(mx.cpu)
    x = np.concatenate([values(4096, 21, 3) * np.float32(2), values(515, 22, 8)])  # a vector tail, tiny and saturated
    # in pieces: one call over thousands of elements may go to torch's thread pool (costly on a loaded machine)
    y = np.concatenate([host.host_numpy(_torch(host, x[i:i + 512]).tanh()) for i in range(0, x.size, 512)])
    ours = mx.tanh(mx.array(x).astype(mx.float64, stream=s), stream=s).astype(mx.float32, stream=s)
    g = values(x.size, 23, 2)
    ty = _torch(host, y)
    expect = np.concatenate([host.host_numpy(torch.ops.aten.tanh_backward(_torch(host, g[i:i + 512]), ty[i:i + 512]))
                             for i in range(0, x.size, 512)])
    xy, xg = mx.array(y), mx.array(g)
    fused, rounded = tanh_derivative(xy, xg, True, s), tanh_derivative(xy, xg, False, s)
    mx.eval(ours, fused, rounded)
    ours = np.array(ours)
    misses = ours != y
    ulps = np.abs(ours.view(np.int32).astype(np.int64) - y.view(np.int32).astype(np.int64))
    if misses.mean() > TANH_MISSES or ulps.max() > 1:
        return Verdict("tanh", False, "rounded", f"torch's tanh is not within 1 ulp of the correctly rounded value "
                                                 f"but for {TANH_MISSES:.1%} of the probes ({why}; "
                                                 f"{misses.mean():.2%} differ, up to {int(ulps.max())} ulp)")
    for name, got in (("fused", fused), ("rounded", rounded)):
        if _same_bits(np.array(got), expect):
            return Verdict("tanh", True, name, f"torch's tanh correctly rounded but for {int(misses.sum())} of "
                                               f"{x.size} probes, its derivative {name} ({why})")
    return Verdict("tanh", False, "rounded", f"torch's tanh_backward rounds neither once nor apart ({why})")


# half-precision products: a row past 64 (vectors of 16 in 4 accumulators, a tail), a short row, columns, all
PROD_PROBES = (((300,), None), ((3, 100), 1), ((2, 40), 1), ((7, 33), 0), ((2, 3, 70), None))


def _probe_prod(host, torch, why) -> Verdict:
    s = mx.default_stream(mx.cpu)
    got, expect = [], []
    for name in ("float16", "bfloat16"):
        for k, (shape, dim) in enumerate(PROD_PROBES):
            a = (1 + values(int(np.prod(shape)), 31 + k, 0) / 8).reshape(shape)  # near 1: no overflow
            t = _torch(host, a).to(getattr(torch, name))
            expect.append(host.host_numpy(t.prod() if dim is None else t.prod(dim)).astype(np.float32))
            out = product_order.prod(mx.array(a).astype(getattr(mx, name)), dim, False, s)
            got.append(out.astype(mx.float32, stream=s))
    mx.eval(got)
    if all(_same_bits(np.array(g), e) for g, e in zip(got, expect)):
        return Verdict("prod", True, "torch", f"aten's order of half-precision products verified against torch ({why})")
    return Verdict("prod", False, "native", f"torch multiplies half-precision values in another order here ({why}): "
                                            "MLX's own order, float tolerance")


_PROBES = {"sum": _probe_sum, "dot": _probe_dot, "multiply_add": _probe_multiply_add, "tanh": _probe_tanh,
           "prod": _probe_prod}


def _forget() -> None:
    """Drop every verdict (tests only: the next question probes again)."""
    _VERDICTS.clear()
    _COST.clear()
