"""float32 ops on MLX's CPU rounded as torch's CPU kernels round them: ``tanh`` (forward and
derivative), ``a + alpha * b`` (``add``/``sub`` with ``alpha``) and ``a + b * c`` (``addcmul``,
``lerp``, the Adam kernel), each with one fused multiply-add where torch's kernels fuse it.

MLX's CPU ``tanh`` is a fast approximation: on float32 it misses the correctly rounded value
in about one element of five (1 ulp), while torch's CPU ``tanh`` (SLEEF's 1-ulp kernel) gives
the correctly rounded value in all but about 1 in 2000. A network with a tanh layer therefore
drifts from torch by an ulp per element per step on MLX. On a CPU stream (where MLX has float64)
the function here computes float32 ``tanh`` in float64 and rounds once, so it equals torch's
wherever torch's is correctly rounded. Its derivative is torch's ``tanh_backward``:
``grad * (1 - y * y)``. MLX GPUs (no float64) keep MLX's own ``tanh``.

Whether torch's kernels fuse a multiply-add depends on how they were compiled for the running CPU
(with FMA for AVX2 and AVX512, without for ``ATEN_CPU_CAPABILITY=default``): the multiply-adds
and ``tanh``'s derivative here take the form :mod:`._torch_order` found torch taking on this
machine (``"multiply_add"``, ``"tanh"``; the callers ask it and pass the answer, outside any trace
before a kernel is built): one
rounding (``1 - y * y`` formed by one fused multiply-add, exact in float64 for a float32 ``y``)
or the product and the sum rounded apart (MLX's own float32 arithmetic).

Must never import torch or the tdx facade; used only by the MLX executor.
"""

from __future__ import annotations

import functools

from threading import get_ident, main_thread

import mlx.core as mx


def tanh_derivative(y, g, fused: bool, s):
    """``g * (1 - y * y)`` of float32 arrays, ``1 - y * y`` rounded once when ``fused`` (torch's
    ``tanh_backward`` built with FMA: exact in float64 for a float32 ``y``), else each step rounded."""
    if fused:
        wide = y.astype(mx.float64, stream=s)
        one_minus = mx.subtract(1.0, mx.multiply(wide, wide, stream=s), stream=s).astype(mx.float32, stream=s)
    else:
        one_minus = mx.subtract(mx.array(1.0, mx.float32), mx.multiply(y, y, stream=s), stream=s)
    return mx.multiply(g, one_minus, stream=s)


@functools.lru_cache(maxsize=None)
def tanh(stream, fused_derivative: bool):
    """float32 ``tanh`` on the CPU ``stream``, correctly rounded, with torch's derivative.

    Args:
        stream: an MLX CPU stream (float64 must be available on it).
        fused_derivative: whether ``1 - y * y`` rounds once (:func:`tanh_derivative`), as torch's
            ``tanh_backward`` does on this machine (:func:`._torch_order.order` of ``"tanh"``).

    Returns:
        An ``mx.custom_function`` of one float32 array.
    """
    s = stream

    @mx.custom_function
    def fn(x):
        return mx.tanh(x.astype(mx.float64, stream=s), stream=s).astype(mx.float32, stream=s)

    @fn.vjp
    def fn_vjp(primals, cotangent, output):
        y = output[0] if isinstance(output, (list, tuple)) else output
        g = cotangent[0] if isinstance(cotangent, (list, tuple)) else cotangent
        return (tanh_derivative(y, g, fused_derivative, s),)

    return fn


_KERNELS: dict = {}  # key -> the compiled (or, without a JIT toolchain, the plain) kernel


_MAIN_THREAD = main_thread().ident
_PLAIN: dict = {}  # key -> the uncompiled kernel, for threads other than the main one (see compiled)


def compiled(key, build):
    """The kernel cached under ``key``; on the first call ``build()`` gives ``(fn, probe_args)`` and the
    kernel is ``mx.compile(fn)`` where MLX can compile kernels on this machine (its CPU compiler needs a
    C++ toolchain at run time; ``fn(*probe_args)`` is compiled to find out), else ``fn`` itself (equal
    results, unfused). Called while an outer trace runs (``mx.compile``, ``vmap``), it returns ``fn``
    uncached and probes on a later call.

    Outside the main thread it is always ``fn``: MLX keeps a compiled function's cache per thread and
    frees it when the thread ends, taking the GIL; a thread ending while the interpreter finalizes
    then aborts the process."""
    if get_ident() != _MAIN_THREAD:
        plain = _PLAIN.get(key)
        if plain is None:
            plain = _PLAIN[key] = build()[0]
        return plain
    kernel = _KERNELS.get(key)
    if kernel is not None:
        return kernel
    fn, probe_args = build()
    kernel = mx.compile(fn)
    try:
        mx.eval(kernel(*probe_args))
    except (RuntimeError, ValueError) as err:
        if "transformation" in str(err):
            return fn
        kernel = fn
    _KERNELS[key] = kernel
    return kernel


def fma(a, b, c, s):
    """``a * b + c`` of float32 values through float64 (where the product is exact), rounded once to
    float32: a fused multiply-add but for rare double-rounding ties."""
    product = mx.multiply(a.astype(mx.float64, stream=s), b.astype(mx.float64, stream=s), stream=s)
    return mx.add(product, c.astype(mx.float64, stream=s), stream=s).astype(mx.float32, stream=s)


def rounded_apart(a, b, c, s):
    """``a * b + c`` of float32 values in MLX's float32 arithmetic: the product rounded, then the sum."""
    return mx.add(mx.multiply(a, b, stream=s), c, stream=s)


def _multiply_add_kernel(stream):
    """``a + b * c`` on ``stream`` as one fused kernel (float64 arithmetic and casts are slow on MLX's
    CPU: unfused, the op takes ~20x a float32 add)."""
    return compiled(("multiply_add", stream), lambda: (
        lambda a, b, c: fma(b, c, a, stream),
        (mx.ones(2, mx.float32), mx.ones(2, mx.float32), mx.array(0.5, mx.float64))))


def multiply_add(a, b, c, stream, fused: bool):
    """float32 ``a + b * c`` as torch's CPU ``addcmul`` kernel rounds it: once where it fuses the
    multiply-add on this machine (``fused``: :func:`._torch_order.fused`), else the product and then
    the sum.

    Args:
        a, b, c: float32 arrays (broadcastable).
        stream: an MLX CPU stream (float64 must be available on it).
        fused: round once (else the product, then the sum).

    Returns:
        The float32 result.
    """
    if not fused:
        return rounded_apart(b, c, a, stream)
    return _multiply_add_kernel(stream)(a, b, c)


def add_scaled(a, b, alpha, subtract: bool, stream, fused: bool):
    """float32 ``a + alpha * b`` (``a - alpha * b`` when ``subtract``) as torch's CPU ``add``/``sub``
    kernels round it with ``alpha`` as a float32: once where they fuse the multiply-add on this
    machine (``fused``: :func:`._torch_order.fused`), else the product and then the sum.

    The product of two float32 numbers is exact in float64, so the float64 sum rounds once to
    float64 and once to float32 (equal to the fused result but for rare double-rounding ties).

    Args:
        a, b: float32 arrays (broadcastable).
        alpha: a Python number, taken as a float32 as torch's kernel takes it.
        subtract: ``a - alpha * b`` instead (``-alpha`` is exact, so it rounds alike).
        stream: an MLX CPU stream (float64 must be available on it).
        fused: round once (else the product, then the sum).

    Returns:
        The float32 result.
    """
    if not fused:
        scale = mx.array(alpha, mx.float32)
        return rounded_apart(b, mx.negative(scale, stream=stream) if subtract else scale, a, stream)
    scale = mx.array(alpha, mx.float32).astype(mx.float64, stream=stream)
    return _multiply_add_kernel(stream)(a, b, mx.negative(scale, stream=stream) if subtract else scale)
