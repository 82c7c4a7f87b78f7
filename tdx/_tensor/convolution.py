"""Convolutions: ``torch.conv1d``/``conv2d``/``conv3d`` and ``conv_transpose1d``/``2d``/``3d`` (also
``tdx.nn.functional``'s), with torch's argument forms (ints or tuples; ``padding='same'``/``'valid'``).

Each normalizes its arguments to per-dim tuples and calls the executor's kernel of torch's
signature (torch's own on torch devices; ``mx.conv_general`` on MLX, channels moved last and back).
This module must never import a framework.
"""

from __future__ import annotations

from .._errors import TdxRuntimeError
from .kernels import kernel_op

__all__: list = []


def _tuple(v, n: int, name: str):
    if isinstance(v, int):
        return (v,) * n
    v = tuple(v)
    if len(v) == 1:
        return v * n
    if len(v) != n:
        raise TdxRuntimeError(f"expected {name} to be a single integer value or a list of {n} values to match the "
                              f"convolution dimensions, but got {name}={list(v)}")
    return v


def _conv(n: int):
    name = f"conv{n}d"
    kernel = kernel_op(name, None, f"The {n}-D convolution (cross-correlation) of ``input`` with ``weight``.")

    def fn(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
        if input.ndim not in (n + 1, n + 2):
            raise TdxRuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {name}, but got "
                                  f"input of size: {list(input.shape)}")
        stride, dilation = _tuple(stride, n, "stride"), _tuple(dilation, n, "dilation")
        if not isinstance(padding, str):
            padding = _tuple(padding, n, "padding")
        elif padding not in ("same", "valid"):
            raise TdxRuntimeError(f"Invalid padding string '{padding}', should be one of ['valid', 'same']")
        return kernel(input, weight, bias, stride, padding, dilation, groups)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = kernel.__doc__
    return fn


def _conv_transpose(n: int):
    name = f"conv_transpose{n}d"
    kernel = kernel_op(name, None, f"The {n}-D transposed convolution of ``input`` with ``weight``.")

    def fn(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):  # noqa: A002
        if input.ndim not in (n + 1, n + 2):
            raise TdxRuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {name}, but got "
                                  f"input of size: {list(input.shape)}")
        return kernel(input, weight, bias, _tuple(stride, n, "stride"), _tuple(padding, n, "padding"),
                      _tuple(output_padding, n, "output_padding"), groups, _tuple(dilation, n, "dilation"))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = kernel.__doc__
    return fn


for _n in (1, 2, 3):
    for _make in (_conv, _conv_transpose):
        _fn = _make(_n)
        globals()[_fn.__name__] = _fn
        __all__.append(_fn.__name__)
