"""The bridge from ``tdx.nn.functional``'s convolution, pooling, resampling and normalization
functions to executor kernels.

Two routes, chosen by capability: an executor with ``nn_functional`` (the torch executor) runs
torch's own ``torch.nn.functional`` kernel on the native tensors, so results, gradients (torch's
autograd) and errors are torch's bit for bit; an executor with ``conv_nd`` (MLX) runs its
convolution kernel, recorded as one node of tdx's tape (the backward re-runs it under the
executor's vjp). Everything else is composed from tdx ops by the calling module.

Like :mod:`._native_rnn`, this module touches tensor internals (``Tensor._n``, ``Tensor._ex``,
``tdx._tensor.wrapping``); it must never import torch or mlx.
"""

from __future__ import annotations

import functools
import weakref

import tdx
from ..._errors import NATIVE_ERRORS, mismatch
from ..._tensor.wrapping import typed_function, wrap
from ...autograd.tape import ACTIVE as _TAPE, MODE as _MODE
from ..amp.autocast_state import ON as _AUTOCAST
from ..compiler import is_compiling as _is_compiling
from .parameter import Parameter as _Parameter

__all__ = ["native", "fast", "linear_kernel", "torch_kernel", "NOT_NATIVE", "fused_linear", "conv_nd", "has_conv", "rows_cross_entropy", "has_rows_cross_entropy",
           "fused_lstm_gates", "fused_gru_gates"]

NOT_NATIVE = object()
"""What :func:`native` returns when the tensors' executor has no ``nn_functional`` kernel."""

_Tensor = tdx.Tensor
_F32 = tdx.float32
_new = object.__new__


_MIXED = object()  # an argument list holding tensors of two executors


def _unwrap(a, ex):
    """``(native, executor)`` for one argument: a Tensor (or a list/tuple of them) as natives, with the
    executor seen so far (``ex``) or :data:`_MIXED` when a Tensor lives on another one."""
    if isinstance(a, _Tensor):
        if ex is None or a._ex is ex:
            return a._n, a._ex
        return a, _MIXED
    if (a.__class__ is list or a.__class__ is tuple) and any(isinstance(x, _Tensor) for x in a):
        out = []
        for x in a:
            x, ex = _unwrap(x, ex)
            if ex is _MIXED:
                return a, _MIXED
            out.append(x)
        return type(a)(out), ex
    return a, ex


def native(name: str, *args, **kwargs):
    """``torch.nn.functional.<name>(*args, **kwargs)`` on the executor's natives, or :data:`NOT_NATIVE`.

    Runs only when every tensor argument lives on one executor that has ``nn_functional``;
    tensors on several executors fall through to the composed path (which raises torch's
    mixed-device error). One pass over the arguments: this is the per-call path of every routed
    function on torch executors.

    Raises:
        TdxError: the kernel's error, translated to the TdxError of the same builtin kind.
    """
    return _native(name, args, kwargs)


def _native(name: str, args: tuple, kwargs: dict):
    """:func:`native` on its arguments as they came (no repacking: :func:`fast` passes its own)."""
    ex = None
    nargs = []
    for a in args:
        if a.__class__ is _Tensor:  # the common argument, inline (Parameters report Tensor as their class)
            if ex is None:
                ex = a._ex
            elif a._ex is not ex:
                return NOT_NATIVE
            nargs.append(a._n)
            continue
        if a.__class__ in _PLAIN:  # a flag or a number (embedding's padding_idx, max_norm, ...): as it is
            nargs.append(a)
            continue
        a, ex = _unwrap(a, ex)
        if ex is _MIXED:
            return NOT_NATIVE
        nargs.append(a)
    if kwargs:
        nkw = {}
        for k, v in kwargs.items():
            v, ex = _unwrap(v, ex)
            if ex is _MIXED:
                return NOT_NATIVE
            nkw[k] = v
    else:
        nkw = kwargs
    call = getattr(ex, "nn_functional", None)
    if call is None:
        return NOT_NATIVE
    try:
        out = call(name, nargs, nkw)
    except NATIVE_ERRORS as err:
        raise ex.native_error(err) from None
    if out.__class__ is tuple:
        return tuple(wrap(o, ex) for o in out)
    return wrap(out, ex)


def fast(name: str, *args, **kwargs):
    """As :func:`native`, for the hot path taken before the caller checks its arguments: where the
    kernel refuses them, :data:`NOT_NATIVE` (the caller's composed path then raises tdx's own typed
    error for the same input)."""
    x = args[0] if args else None
    if not isinstance(x, _Tensor) or not hasattr(x._ex, "nn_functional"):
        return NOT_NATIVE
    try:
        return _native(name, args, kwargs)
    except tdx.TdxError:
        return NOT_NATIVE


def linear_kernel(x, weight, bias):
    """``linear`` by the executor's ``linear_kernel`` (torch's own), or its ``linear_last``, or :data:`NOT_NATIVE`.

    The per-call path of ``nn.Linear`` and ``F.linear``: on torch executors tensors of one executor go to
    the kernel as they are, nothing repacked; on a taped executor (MLX), where the tape records nothing
    (grad mode off, or no tensor ever required grad), the float32 cases :func:`fused_linear` takes go to
    ``linear_last`` at once (:func:`untaped_linear`). Anything else (another executor, a tensor on another
    device, an autocast region in force, an input the kernel refuses) is :data:`NOT_NATIVE`: the caller's
    full path then casts, raises torch's mixed-device error or tdx's typed error.
    """
    if type(x) is _Tensor and (type(weight) is _Parameter or type(weight) is _Tensor):  # no subclass's override
        ex = x._ex
        k = ex.linear_kernel
        if k is None:  # a taped executor: its fused kernel where the tape records nothing (no_grad, inference)
            return NOT_NATIVE if _AUTOCAST[0] else untaped_linear(x, weight, bias, ex)
        if weight._ex is ex and not _AUTOCAST[0]:
            if bias is None:
                try:
                    return wrap(k(x._n, weight._n), ex)
                except NATIVE_ERRORS:
                    return NOT_NATIVE
            if (type(bias) is _Parameter or type(bias) is _Tensor) and bias._ex is ex:
                try:
                    return wrap(k(x._n, weight._n, bias._n), ex)
                except NATIVE_ERRORS:
                    return NOT_NATIVE
    return NOT_NATIVE


# id(weight array) -> [weak reference to it, its executor, in_features, out_features, a bias array checked with it,
# its product once the executor has laid it out (linear_prepared) or None]: the weights whose checks for linear_last
# passed (2-D, float32, not empty); an entry goes with its array
_FIT: dict = {}


def untaped_linear(x, weight, bias, ex):
    """``linear`` by a taped executor's ``linear_last`` where its tape records nothing, or :data:`NOT_NATIVE`.

    The caller has checked that ``x`` is a plain tensor on ``ex`` (which has no ``linear_kernel``), ``weight`` a
    plain tensor or Parameter, and that no autocast region is in force. :func:`_fusable`'s checks: the weight's
    (2-D, float32, not empty) once per weight array, the bias's (float32, 1-D of the output size) once per bias
    array beside it, the input's (float32, at least 2-D, not empty, ``in_features`` wide) every call: every
    ``nn.Linear`` of an MLX model in inference.
    """
    if (_TAPE[0] and _MODE.enabled) or weight._ex is not ex:
        return NOT_NATIVE
    wn = weight._n
    fit = _FIT.get(id(wn))
    if fit is None or fit[0]() is not wn or fit[1] is not ex:
        fit = _fit_weight(weight, ex)
        if fit is None:
            return NOT_NATIVE
    xn = x._n
    xs = xn.shape
    if len(xs) < 2 or xs[-1] != fit[2] or 0 in xs or (x._dt or x.dtype) is not _F32:
        return NOT_NATIVE
    if bias is None:
        bn = None
    elif (type(bias) is _Tensor or type(bias) is _Parameter) and bias._ex is ex:
        bn = bias._n
        if bn is not fit[4]:
            if (bias._dt or bias.dtype) is not _F32 or bn.ndim != 1 or bn.shape[0] != fit[3]:
                return NOT_NATIVE
            fit[4] = bn
    else:
        return NOT_NATIVE
    product = fit[5]
    if product is not None:  # the weight laid out by an earlier call: its product in one call
        try:
            n = product(xn, bn)
        except NATIVE_ERRORS:
            return NOT_NATIVE
    else:
        try:  # _linear's: the same kernel without the tape's wrapper
            n = ex.linear_last(xn, wn, bn, _OFFER if weight._view is None else None)
        except NATIVE_ERRORS:
            _OFFER.clear()
            return NOT_NATIVE
        if _OFFER:  # the executor relaid the weight for its products (its first product): rebind it
            _take_offer(weight)
        else:
            fit[5] = ex.linear_prepared(wn)
    out = _new(_Tensor)  # wrap's, inlined
    out._n = n
    out._ex = ex
    out._ag = out._view = None
    out._dt = _F32  # float32 operands, a float32 product: the next op reads no dtype
    return out


def _fit_weight(weight, ex):
    """The :data:`_FIT` entry of ``weight``'s array, made now, or None where ``linear_last`` does not take it."""
    wn = weight._n
    ws = wn.shape
    if len(ws) != 2 or 0 in ws or (weight._dt or weight.dtype) is not _F32 or getattr(ex, "linear_last", None) is None:
        return None
    key = id(wn)
    fit = [weakref.ref(wn, lambda _ref: _FIT.pop(key, None)), ex, ws[1], ws[0], None, None]
    _FIT[key] = fit
    return fit


_OFFER: list = []  # (weight array, the same values as the executor prefers them) from linear_last


def _take_offer(weight) -> None:
    """Rebind ``weight`` (a root tensor) to the array ``linear_last`` offered in place of its current one: the
    same values, laid out for the executor's products (MLX's ``linear_last``)."""
    try:
        old, relaid = _OFFER.pop()
    except IndexError:  # another thread's call took it (its weight is relaid at its next product)
        return
    _OFFER.clear()
    if weight._n is old and not _is_compiling():  # a traced step's arrays must not outlive its trace
        weight._n = relaid


def torch_kernel(fn):
    """Decorate a composed ``nn.functional`` function so that, on an executor with ``nn_functional``
    (torch), torch's own kernel of the same name runs first (its values, gradients and reductions bit for
    bit; with ``inplace=True`` torch's in-place kernel, which writes the native and returns it, so the call
    returns its input); elsewhere, and where the kernel refuses the arguments, the composed function runs
    (and raises tdx's typed error for bad input). The cost off torch executors is one ``isinstance`` and
    one ``hasattr``.
    """
    name = fn.__name__
    bound = [(None, None)]  # (the last executor, its kernel for name or None)

    @functools.wraps(fn)
    def routed(*args, **kwargs):
        if len(args) == 1 and type(args[0]) is _Tensor:  # one plain tensor, flags by keyword (F.silu(x, inplace=False))
            x = args[0]
            ex = x._ex
            k = bound[0]
            k = k[1] if k[0] is ex else _bind_kernel(bound, ex, name)
            if k is None:  # no kernel of that name on the executor (MLX; a name torch's are not routed for)
                return fn(*args, **kwargs)
            for v in kwargs.values():
                if v.__class__ not in _PLAIN:
                    break
            else:  # fast()'s work with nothing to unwrap: torch's kernel on the native
                try:
                    n = k(x._n, **kwargs)
                except NATIVE_ERRORS:
                    return fn(*args, **kwargs)  # the composed path raises tdx's typed error
                if n.__class__ is tuple:
                    return tuple(wrap(o, ex) for o in n)
                if n is x._n:
                    return x
                out = _new(_Tensor)  # wrap's, inlined
                out._n = n
                out._ex = ex
                out._ag = out._view = out._dt = None
                return out
        done = fast(name, *args, **kwargs)
        if done is NOT_NATIVE:
            return fn(*args, **kwargs)
        if done.__class__ is _Tensor and done._n is args[0]._n:  # torch returned its input (eval-mode dropout)
            return args[0]
        return done

    return routed


_PLAIN = frozenset((bool, int, float, str, type(None)))  # keyword values a torch kernel takes as they are


def _bind_kernel(bound: list, ex, name: str):
    """Keep ``(ex, its nn_kernel for name)`` in a routed function's ``bound`` (one tuple, so a thread reading it
    while another binds sees one pair or the other); the kernel, or None where ``ex`` has none."""
    get = getattr(ex, "nn_kernel", None)
    k = None if get is None else get(name)
    bound[0] = (ex, k)
    return k


def _linear(x, weight, bias):  # the tape's path (a training step): the weight's transpose taken row by row
    ex = x._ex
    return wrap(ex.linear_last(x._n, weight._n, None if bias is None else bias._n, None, True), ex)


linear_last = typed_function(_linear, record=True)


def fused_linear(x, weight, bias):
    """``linear`` by the executor's ``linear_last`` kernel (one tape node instead of a transposed view,
    a product, an expanded view and a sum), or :data:`NOT_NATIVE`: anything but float32 tensors on one
    executor with a 2-D weight, a 1-D bias of its output size and a non-empty input of at least 2 dims
    takes the composed path (which checks and raises).

    Args:
        x, weight, bias: ``linear``'s arguments, unchecked.
    """
    ex = getattr(x, "_ex", None)
    return linear_last(x, weight, bias) if _fusable(x, weight, bias, ex) else NOT_NATIVE


def _fusable(x, weight, bias, ex) -> bool:
    """Whether ``linear(x, weight, bias)`` fits ``linear_last``: float32 tensors on ``ex`` (which has it)
    with a 2-D weight, a 1-D bias of its output size and a non-empty input of at least 2 dims."""
    # plain tensors and Parameters, by type (a subclass's ``__class__`` reports Tensor, and its
    # ``__torch_function__`` must see the call); a dtype already read (``_dt``) is taken without the property's call
    if (ex is None or not hasattr(ex, "linear_last") or type(x) is not _Tensor
            or not (type(weight) is _Tensor or type(weight) is _Parameter) or weight._ex is not ex):
        return False
    xs, ws = x._n.shape, weight._n.shape
    if (len(xs) < 2 or len(ws) != 2 or xs[-1] != ws[1] or (x._dt or x.dtype) is not _F32
            or (weight._dt or weight.dtype) is not _F32 or 0 in xs or 0 in ws):
        return False
    return bias is None or ((type(bias) is _Tensor or type(bias) is _Parameter) and bias._ex is ex
                            and (bias._dt or bias.dtype) is _F32 and bias._n.ndim == 1 and bias._n.shape[0] == ws[0])


def _lstm_gates(hidden_part, input_part, c):
    ex = c._ex
    h, c = ex.lstm_gates(hidden_part._n, input_part._n, c._n)
    return wrap(h, ex), wrap(c, ex)


lstm_gates = typed_function(_lstm_gates, record=True)


def fused_lstm_gates(hidden_part, input_part, c):
    """``(h', c')`` of one LSTM step by the executor's ``lstm_gates`` kernel (one tape node in place of ten),
    or :data:`NOT_NATIVE`: anything but float32 tensors on one executor that has it, with ``hidden_part`` and
    ``input_part`` ``(B, 4H)`` and ``c`` ``(B, H)``, takes the composed cell.

    Args:
        hidden_part: ``h W_hh^T + b_hh``.
        input_part: ``x W_ih^T + b_ih``.
        c: the cell state.
    """
    return lstm_gates(hidden_part, input_part, c) if _gates_fit("lstm_gates", 4, hidden_part, input_part, c) \
        else NOT_NATIVE


def _gru_gates(hidden_part, input_part, h):
    ex = h._ex
    return wrap(ex.gru_gates(hidden_part._n, input_part._n, h._n), ex)


gru_gates = typed_function(_gru_gates, record=True)


def fused_gru_gates(hidden_part, input_part, h):
    """``h'`` of one GRU step by the executor's ``gru_gates`` kernel (one tape node in place of eleven), or
    :data:`NOT_NATIVE` (as :func:`fused_lstm_gates`, with ``(B, 3H)`` projections and the state ``h``)."""
    return gru_gates(hidden_part, input_part, h) if _gates_fit("gru_gates", 3, hidden_part, input_part, h) \
        else NOT_NATIVE


def _gates_fit(kernel: str, gates: int, hidden_part, input_part, state) -> bool:
    """Whether a recurrent cell's gates kernel runs these tensors: float32 on one executor that has it, the
    projections ``(B, gates * H)`` and the state ``(B, H)``."""
    ex = state._ex if state.__class__ is _Tensor else None
    if ex is None or not hasattr(ex, kernel) or state.ndim != 2:
        return False
    batch, size = state.shape
    for t, shape in ((hidden_part, (batch, gates * size)), (input_part, (batch, gates * size)), (state, (batch, size))):
        if t.__class__ is not _Tensor or t._ex is not ex or t.dtype is not _F32 or tuple(t.shape) != shape:
            return False
    return True


def native_layer_norm(x, weight, bias, eps):  # named as the node torch records (NativeLayerNormBackward)
    ex = x._ex
    return wrap(ex.layer_norm_last(x._n, None if weight is None else weight._n, None if bias is None else bias._n,
                                   eps), ex)


layer_norm_last = typed_function(native_layer_norm, record=True)


def fused_layer_norm(x, shape, weight, bias, eps):
    """Layer norm over the last dim by the executor's fused ``layer_norm_last`` kernel (one tape node),
    or :data:`NOT_NATIVE`: other normalized shapes, dtypes other than float32, empty inputs, and
    parameters on another executor take the composed path.

    Args:
        x, shape, weight, bias, eps: ``layer_norm``'s, already checked.
    """
    ex = x._ex
    if len(shape) != 1 or not hasattr(ex, "layer_norm_last") or x.dtype is not tdx.float32 or not x.numel():
        return NOT_NATIVE
    for p in (weight, bias):
        if p is not None and (p._ex is not ex or p.dtype is not tdx.float32):
            return NOT_NATIVE
    return layer_norm_last(x, weight, bias, eps)


def has_conv(x) -> bool:
    """Whether ``x``'s executor has a ``conv_nd`` kernel for ``x``'s dtype."""
    ex = x._ex
    return hasattr(ex, "conv_nd") and ex.conv_supports(x.dtype.name)


def _conv_nd(x, w, stride, padding_lo, padding_hi, dilation, input_dilation, groups, flip):
    ex = x._ex
    return wrap(ex.conv_nd(x._n, w._n, stride, padding_lo, padding_hi, dilation, input_dilation, groups, flip), ex)


conv_nd = typed_function(_conv_nd, record=True)
conv_nd.__doc__ = """The executor's ``conv_nd`` kernel on ``x`` and ``w`` (channels-first), one tape node.

Args:
    x: ``(N, C, *spatial)``.
    w: ``(O, C // groups, *kernel)``, the same dtype and executor as ``x``.
    stride, padding_lo, padding_hi, dilation, input_dilation: tuples, one int per spatial dim.
    groups: channel groups.
    flip: flip the kernel (a true convolution).
"""


def has_rows_cross_entropy(x) -> bool:
    """Whether ``x``'s executor has a fused ``cross_entropy_rows`` kernel (MLX)."""
    return hasattr(x._ex, "cross_entropy_rows")


def _rows_cross_entropy(x, t, ignore_index, reduction):
    ex = x._ex
    if t._ex is not ex:
        raise mismatch("cross_entropy", ex.device, t._ex.device)
    return wrap(ex.cross_entropy_rows(x._n, t._n, ignore_index, reduction), ex)


rows_cross_entropy = typed_function(_rows_cross_entropy, record=True)
rows_cross_entropy.__doc__ = """Cross entropy of float logits ``x`` ``(N, C)`` against in-range int64 class indices ``t``
``(N,)`` by the executor's fused kernel, one tape node (no log-probabilities are saved for the backward).

Args:
    x: logits ``(N, C)``.
    t: class indices ``(N,)``, each in ``[0, C)`` or ``ignore_index``.
    ignore_index: the target value that counts for nothing.
    reduction: ``"none"``, ``"mean"`` or ``"sum"``.
"""
