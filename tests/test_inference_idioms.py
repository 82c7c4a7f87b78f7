"""The idioms of a transformer's inference step, against torch: a norm's ``x.pow(2).mean(-1, keepdim=True)``
and ``rsqrt``, ``nn.Linear`` called again and again with one weight (and after that weight is written),
and the views an attention layer makes of its projections.

On MLX these run the shortest graphs tdx knows (a square for ``pow(2)``, the mean's divisor kept per shape,
each weight's transpose made once, views registered with their layout left to compute); each check here
holds such a path to torch's values, bit for bit where tdx promises torch's bits (elementwise float32, a
mean added in torch's order), and to the path's own value after every kind of write that must reach it.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

import tdx
from conftest import torch_order, torch_twin

RNG = np.random.default_rng(37)


def _bits(x):
    return (x.detach().numpy(force=True) if isinstance(x, tdx.Tensor) else x.detach().cpu().numpy()).view(np.uint32)


def _data(shape):
    # magnitudes over 2**-6..2**6, with squares near float32's midpoints: every rounding shows in the bits
    a = RNG.standard_normal(shape) * np.exp2(RNG.integers(-6, 7, shape))
    return a.astype(np.float32)


@pytest.mark.parametrize("form", ["pow", "method", "operator"])
def test_square_of_a_float32_tensor_is_torchs_bit_for_bit(device, form):
    a = np.concatenate([_data(4093), np.array([0.0, -0.0, np.inf, -np.inf, 3e19, -3e19, 1e-23, 16777217.0,
                                               4097.0, 1.0 + 2.0 ** -12], np.float32)])
    x, t = tdx.tensor(a, device=device), torch.tensor(a, device=torch_twin(device))
    got, want = {"pow": (tdx.pow(x, 2), torch.pow(t, 2)), "method": (x.pow(2), t.pow(2)),
                 "operator": (x ** 2, t ** 2)}[form]
    assert got.dtype == tdx.float32
    np.testing.assert_array_equal(_bits(got), _bits(want))


@pytest.mark.float64
@pytest.mark.parametrize("shape", [(1, 1, 256), (2, 5, 256), (3, 32), (1, 4, 64), (7, 512)])
def test_rms_norm_statistics_are_torchs(device, shape):
    promised, why = torch_order(device, "sum")
    a = _data(shape)
    for _ in range(3):  # the first call plans the mean, later ones reuse the plan and its divisor
        x, t = tdx.tensor(a, device=device), torch.tensor(a, device=torch_twin(device))
        got = tdx.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
        want = torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-6)
        flat_got, flat_want = x.pow(2).mean(-1), t.pow(2).mean(-1)
        assert tuple(got.shape) == tuple(want.shape) and tuple(flat_got.shape) == tuple(flat_want.shape)
        if promised:
            np.testing.assert_array_equal(_bits(got), _bits(want))
            np.testing.assert_array_equal(_bits(flat_got), _bits(flat_want))
        else:
            np.testing.assert_allclose(got.numpy(force=True), want.cpu().numpy(), rtol=1e-5, err_msg=why)
        a = _data(shape)


def _linear_pair(device, bias=True):
    w, b = _data((24, 16)), _data((24,))
    lin = tdx.nn.Linear(16, 24, bias=bias, device=device)
    ref = torch.nn.Linear(16, 24, bias=bias)
    with tdx.no_grad(), torch.no_grad():
        lin.weight.copy_(tdx.tensor(w))
        ref.weight.copy_(torch.tensor(w))
        if bias:
            lin.bias.copy_(tdx.tensor(b))
            ref.bias.copy_(torch.tensor(b))
    return lin, ref


def _close(got, want):
    np.testing.assert_allclose(got.numpy(force=True), want.detach().numpy(), rtol=1e-4, atol=1e-3)  # float32 sums of 16 terms up to 2**12


@pytest.mark.parametrize("bias", [True, False])
def test_linear_called_again_after_each_kind_of_weight_write(device, bias):
    """A layer's later calls see every write into its weight: ``mul_``, ``copy_``, an indexed write (through a
    view), ``.data =`` and a new Parameter; the repeated calls give torch's values every time."""
    lin, ref = _linear_pair(device, bias)
    x_np = _data((2, 3, 16))
    x, xt = tdx.tensor(x_np, device=device), torch.tensor(x_np)
    writes = [
        (lambda m: m.weight.mul_(2.0), lambda m: m.weight.mul_(2.0)),
        (lambda m: m.weight.copy_(m.weight.flip(0)), lambda m: m.weight.copy_(m.weight.flip(0))),
        (lambda m: m.weight.__setitem__((slice(None), 3), 0.5), lambda m: m.weight.__setitem__((slice(None), 3), 0.5)),
        (lambda m: m.weight[1:4].add_(1.0), lambda m: m.weight[1:4].add_(1.0)),
        (lambda m: setattr(m.weight, "data", m.weight.data.t().contiguous().t() * 3),
         lambda m: setattr(m.weight, "data", m.weight.data.t().contiguous().t() * 3)),
    ]
    with tdx.no_grad(), torch.no_grad():
        for i, (ours, theirs) in enumerate(writes):
            for _ in range(2):  # the second call reuses what the first made of the weight
                _close(lin(x), ref(xt))
                _close(tdx.nn.functional.linear(x, lin.weight, lin.bias), ref(xt))
            ours(lin)
            theirs(ref)
            _close(lin(x), ref(xt))
        lin.weight = tdx.nn.Parameter(tdx.tensor(_data((24, 16)), device=device))
        ref.weight = torch.nn.Parameter(torch.tensor(lin.weight.numpy(force=True)))
        _close(lin(x), ref(xt))


def test_linear_with_gradients_after_an_inference_call(device):
    """A weight used by an inference call, then trained: its gradient and the next output are torch's."""
    lin, ref = _linear_pair(device)
    x_np = _data((4, 16))
    x, xt = tdx.tensor(x_np, device=device), torch.tensor(x_np)
    with tdx.no_grad(), torch.no_grad():
        _close(lin(x), ref(xt))
    lin(x).square().sum().backward()
    ref(xt).square().sum().backward()
    _close(lin.weight.grad, ref.weight.grad)
    with tdx.no_grad(), torch.no_grad():
        lin.weight.sub_(0.01 * lin.weight.grad)
        ref.weight.sub_(0.01 * ref.weight.grad)
        _close(lin(x), ref(xt))


def test_attention_projection_views_follow_writes(device):
    """``proj(x).view(b, t, h, d).transpose(1, 2)``, sliced as rotary embeddings slice it, made contiguous and
    reshaped back: torch's values and layouts, and a write into the projection after the views are made reaches
    every one of them."""
    a = _data((2, 3, 32))
    p, pt = tdx.tensor(a, device=device), torch.tensor(a)
    q, qt = p.view(2, 3, 4, 8).transpose(1, 2), pt.view(2, 3, 4, 8).transpose(1, 2)
    half, halft = q[..., :4], qt[..., :4]
    u, ut = p.unsqueeze(1), pt.unsqueeze(1)
    back, backt = q.transpose(1, 2).reshape(2, 3, -1), qt.transpose(1, 2).reshape(2, 3, -1)
    # a fresh tensor indexed with None and Ellipsis (rotary tables, ``logits[:, -1, :]``, ``mask[:, None, None, :]``)
    rooted = [(p[None, ..., 1:], pt[None, ..., 1:]), (p[:, None, 2], pt[:, None, 2]), (p[..., -1, :], pt[..., -1, :]),
              (p[...], pt[...]), (p[None], pt[None]), (p[1, ..., None, ::3], pt[1, ..., None, ::3])]
    views = [(q, qt), (half, halft), (u, ut), (back, backt)] + rooted
    for ours, theirs in views:
        assert tuple(ours.shape) == tuple(theirs.shape) and ours.stride() == theirs.stride()
        assert ours.is_contiguous() == theirs.is_contiguous()
        np.testing.assert_array_equal(ours.numpy(force=True), theirs.numpy())
    np.testing.assert_array_equal(q.contiguous().numpy(force=True), qt.contiguous().numpy())
    p[0, 1, 9] = 100.0
    pt[0, 1, 9] = 100.0
    p.mul_(2.0)
    pt.mul_(2.0)
    for ours, theirs in [(p, pt)] + views:
        np.testing.assert_array_equal(ours.numpy(force=True), theirs.numpy())


def test_views_whose_layout_was_computed_keep_nothing_alive(device):
    """A projection viewed as heads and transposed, its layout read (``stride()``, ``is_contiguous()``,
    ``contiguous()``), is freed with its views, as torch frees it: no table of layouts keeps the root."""
    import gc
    import weakref

    refs = []
    for _ in range(3):
        p = tdx.zeros(2, 3, 32, device=device)
        refs.append(weakref.ref(p))
        q = p.view(2, 3, 4, 8).transpose(1, 2)
        q.stride(), q.is_contiguous(), q.contiguous(), q[..., :4].stride()
        del p, q
    gc.collect()
    assert [r() for r in refs] == [None, None, None]


@pytest.mark.float64
@pytest.mark.parametrize("dtype", ["float64", "float16"])
def test_linear_in_inference_refuses_an_input_of_another_dtype(device, dtype):
    """``nn.Linear`` / ``F.linear`` under ``no_grad`` with an input whose dtype is not the layer's raise torch's
    error (nothing promoted behind the user's back); an input and layer of that dtype give torch's values."""
    lin, ref = _linear_pair(device)
    x_np = _data((2, 3, 16))
    x = tdx.tensor(x_np, device=device).to(getattr(tdx, dtype))
    xt = torch.tensor(x_np).to(getattr(torch, dtype))
    with tdx.no_grad(), torch.no_grad():
        with pytest.raises(RuntimeError) as theirs:
            ref(xt)
        for call in (lambda: lin(x), lambda: tdx.nn.functional.linear(x, lin.weight, lin.bias)):
            with pytest.raises(RuntimeError) as ours:
                call()
            assert type(theirs.value) is RuntimeError and isinstance(ours.value, tdx.TdxError), ours.value
        if dtype == "float64":
            lin.double()
            ref.double()
            np.testing.assert_allclose(lin(x).numpy(force=True), ref(xt).numpy(), rtol=1e-12, atol=1e-12)


def test_a_fresh_tensors_transpose_reports_torchs_contiguity(device):
    """``x.transpose(a, b).is_contiguous()`` of a fresh tensor, its reshape (an attention output made contiguous
    again) or its transpose is torch's for every shape of up to three dims of 0-3 elements and every pair of dims,
    before and after its strides are read (and they are torch's); ``contiguous()`` returns the same tensor exactly
    where torch's does, with torch's values."""
    for nd in range(1, 4):
        for shape in itertools.product((0, 1, 2, 3), repeat=nd):
            data = np.arange(math.prod(shape), dtype=np.float32)
            fresh = (tdx.tensor(data.reshape(shape), device=device), torch.tensor(data.reshape(shape)))
            reshaped = (tdx.tensor(data, device=device).reshape(shape), torch.tensor(data).reshape(shape))
            swapped = (fresh[0].transpose(0, -1), fresh[1].transpose(0, -1))  # transposed twice below
            for (x, xt), (a, b) in itertools.product((fresh, reshaped, swapped),
                                                     itertools.product(range(-nd, nd), repeat=2)):
                ours, theirs = x.transpose(a, b), xt.transpose(a, b)
                assert ours.is_contiguous() == theirs.is_contiguous(), (shape, a, b)
                made, made_t = ours.contiguous(), theirs.contiguous()
                assert (made is ours) == (made_t is theirs), (shape, a, b)
                np.testing.assert_array_equal(made.numpy(force=True), made_t.numpy())
                if 0 not in shape:  # (torch.tensor of an empty 1-d array has stride 0, torch.zeros(0) stride 1)
                    assert ours.stride() == theirs.stride(), (shape, a, b)
                assert ours.is_contiguous() == theirs.is_contiguous(), (shape, a, b)
