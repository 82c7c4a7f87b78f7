"""``tdx.nn.utils`` against ``torch.nn.utils`` on CPU, on every device: gradient clipping,
parameter vectors, parametrize (with weight_norm and spectral_norm), the old weight_norm
and conv/linear + batchnorm fusion.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import tdx
import tdx.nn as nn
from tdx.nn.utils import parametrizations, parametrize
from tdx.testing.parity import assert_close

TU = torch.nn.utils


def arr(shape, seed=0, scale=1.0):
    return (np.random.default_rng(seed).uniform(-1, 1, size=shape) * scale).astype(np.float32)


def params_with_grads(device, scale=1.0):
    """Three tdx parameters on ``device`` and their torch twins, with the same gradients set."""
    shapes = [(3, 4), (5,), (2, 2, 2)]
    ours, ref = [], []
    for i, shape in enumerate(shapes):
        p = nn.Parameter(tdx.tensor(arr(shape, i), device=device))
        tp = torch.nn.Parameter(torch.tensor(arr(shape, i)))
        g = arr(shape, 10 + i, scale)
        p.grad = tdx.tensor(g, device=device)
        tp.grad = torch.tensor(g)
        ours.append(p)
        ref.append(tp)
    return ours, ref


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf, 0])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_torch(device, norm_type, max_norm):
    ours, ref = params_with_grads(device, scale=3.0)
    total = nn.utils.clip_grad_norm_(ours, max_norm, norm_type=norm_type, foreach=None)
    want = TU.clip_grad_norm_(ref, max_norm, norm_type=norm_type)
    assert_close(total, want, rtol=1e-5, atol=1e-6)  # torch sums per-tensor norms in another order
    for p, tp in zip(ours, ref):
        assert_close(p.grad, tp.grad, rtol=1e-5, atol=1e-6)


def test_clip_grad_norm_idioms(device):
    ours, ref = params_with_grads(device)
    ours[1].grad = None
    ref[1].grad = None
    total = nn.utils.clip_grad_norm_(iter(ours), 0.1)  # a generator of parameters, one without grad
    assert_close(total, TU.clip_grad_norm_(iter(ref), 0.1), rtol=1e-5)
    assert ours[1].grad is None
    single, tsingle = params_with_grads(device)
    assert_close(nn.utils.clip_grad_norm_(single[0], 0.2), TU.clip_grad_norm_(tsingle[0], 0.2), rtol=1e-5)
    assert_close(single[0].grad, tsingle[0].grad, rtol=1e-5)
    assert nn.utils.clip_grad_norm_([], 1.0).item() == 0.0
    with pytest.warns(UserWarning, match="empty generator"):
        nn.utils.clip_grad_norm_((p for p in []), 1.0)
    with pytest.warns(FutureWarning):
        nn.utils.clip_grad_norm(ours, 1.0)


def test_clip_grad_norm_nonfinite(device):
    ours, ref = params_with_grads(device)
    ours[0].grad = tdx.tensor(np.full((3, 4), np.inf, np.float32), device=device)
    with pytest.raises(RuntimeError, match="non-finite") as err:
        nn.utils.clip_grad_norm_(ours, 1.0, error_if_nonfinite=True)
    assert isinstance(err.value, tdx.TdxError)
    ref[0].grad = torch.full((3, 4), math.inf)
    total = nn.utils.clip_grad_norm_(ours, 1.0)
    assert math.isinf(total.item()) and math.isinf(TU.clip_grad_norm_(ref, 1.0).item())


def test_total_norm_and_clip_with_norm(device):
    ours, ref = params_with_grads(device, scale=2.0)
    total = nn.utils.get_total_norm([p.grad for p in ours], norm_type=3.0)
    want = TU.get_total_norm([p.grad for p in ref], norm_type=3.0)
    assert_close(total, want, rtol=1e-5)
    nn.utils.clip_grads_with_norm_(ours, 0.3, total)
    TU.clip_grads_with_norm_(ref, 0.3, want)
    for p, tp in zip(ours, ref):
        assert_close(p.grad, tp.grad, rtol=1e-5, atol=1e-7)


def test_clip_grad_value(device):
    ours, ref = params_with_grads(device, scale=2.0)
    nn.utils.clip_grad_value_(ours, 0.7, foreach=True)
    TU.clip_grad_value_(ref, 0.7)
    for p, tp in zip(ours, ref):
        assert_close(p.grad, tp.grad)


def test_parameters_vector_roundtrip(device):
    ours, ref = params_with_grads(device)
    vec = nn.utils.parameters_to_vector(ours)
    assert_close(vec, TU.parameters_to_vector(ref))
    ids = [id(p) for p in ours]
    nn.utils.vector_to_parameters(vec * 2, ours)
    TU.vector_to_parameters(TU.parameters_to_vector(ref) * 2, ref)
    for p, tp in zip(ours, ref):
        assert_close(p.detach(), tp.detach())
        assert type(p) is nn.Parameter and p.requires_grad
    assert [id(p) for p in ours] == ids
    with pytest.raises(TypeError, match="expected torch.Tensor"):
        nn.utils.vector_to_parameters([1.0], ours)


# parametrize --------------------------------------------------------------------------------------
def parametrized_pair(m, device):
    """A linear-like module and a symmetric parametrization, on torch.nn or tdx.nn."""
    lib = torch if m is torch.nn else tdx

    class Symmetric(m.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).transpose(0, 1)

        def right_inverse(self, a):
            return a.triu()

    class Lin(m.Module):
        def __init__(self):
            super().__init__()
            w = arr((3, 3), 1)
            self.weight = m.Parameter(lib.tensor(w) if m is torch.nn else tdx.tensor(w, device=device))
            self.register_buffer("scale", lib.ones(3) if m is torch.nn else tdx.ones(3, device=device))

        def forward(self, x):
            return x @ self.weight * self.scale

    return Lin(), Symmetric()


def test_register_parametrization_matches_torch(device):
    ours, sym = parametrized_pair(nn, device)
    ref, tsym = parametrized_pair(torch.nn, device)
    weight = ours.weight
    parametrize.register_parametrization(ours, "weight", sym)
    TU.parametrize.register_parametrization(ref, "weight", tsym)
    assert type(ours).__name__ == type(ref).__name__ == "ParametrizedLin"
    assert parametrize.is_parametrized(ours) and parametrize.is_parametrized(ours, "weight")
    assert not parametrize.is_parametrized(ours, "scale")
    assert parametrize.type_before_parametrizations(ours).__name__ == "Lin"
    assert list(ours.state_dict()) == list(ref.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in ref.named_parameters()]
    assert ours.parametrizations.weight.original is weight  # the parameter keeps its identity
    assert repr(ours) == repr(ref)
    assert_close(ours.weight, ref.weight.detach())
    x, tx = tdx.tensor(arr((2, 3), 5), device=device), torch.tensor(arr((2, 3), 5))
    ours(x).sum().backward()
    ref(tx).sum().backward()
    assert_close(weight.grad, ref.parametrizations.weight.original.grad)
    with tdx.no_grad():
        ours.weight = tdx.tensor(arr((3, 3), 7), device=device)   # assignment goes through right_inverse
    with torch.no_grad():
        ref.weight = torch.tensor(arr((3, 3), 7))
    assert_close(ours.weight, ref.weight.detach())
    with parametrize.cached():
        assert ours.weight is ours.weight
    assert ours.weight is not ours.weight
    parametrize.register_parametrization(ours, "scale", nn.Identity())
    TU.parametrize.register_parametrization(ref, "scale", torch.nn.Identity())
    assert list(ours.state_dict()) == list(ref.state_dict())
    for name, leave in (("weight", True), ("scale", False)):
        parametrize.remove_parametrizations(ours, name, leave_parametrized=leave)
        TU.parametrize.remove_parametrizations(ref, name, leave_parametrized=leave)
        assert list(ours.state_dict()) == list(ref.state_dict())
    assert type(ours).__name__ == "Lin" and not parametrize.is_parametrized(ours)
    assert ours.weight is weight and isinstance(weight, nn.Parameter)
    assert_close(ours.weight, ref.weight)


def test_parametrize_errors(device):
    ours, _ = parametrized_pair(nn, device)
    ref, _ = parametrized_pair(torch.nn, device)

    class Shrink(nn.Module):
        def forward(self, x):
            return x[:2]

    class TShrink(torch.nn.Module):
        def forward(self, x):
            return x[:2]

    for fn, tfn in ((lambda: parametrize.register_parametrization(ours, "nope", nn.Identity()),
                     lambda: TU.parametrize.register_parametrization(ref, "nope", torch.nn.Identity())),
                    (lambda: parametrize.register_parametrization(ours, "weight", Shrink()),
                     lambda: TU.parametrize.register_parametrization(ref, "weight", TShrink())),
                    (lambda: parametrize.remove_parametrizations(ours, "weight"),
                     lambda: TU.parametrize.remove_parametrizations(ref, "weight"))):
        with pytest.raises(ValueError) as want:
            tfn()
        with pytest.raises(ValueError) as got:
            fn()
        assert isinstance(got.value, tdx.TdxError)
        assert str(got.value).split("\n")[0].split(" ")[0] == str(want.value).split("\n")[0].split(" ")[0]
    parametrize.register_parametrization(ours, "weight", nn.Identity())
    with pytest.raises(RuntimeError, match="state_dict"):
        import pickle

        pickle.dumps(ours)


def _linear(m, device, seed=1):
    class Lin(m.Module):
        def __init__(self):
            super().__init__()
            w, b = arr((4, 3), seed), arr((4,), seed + 1)
            if m is torch.nn:
                self.weight, self.bias = m.Parameter(torch.tensor(w)), m.Parameter(torch.tensor(b))
            else:
                self.weight = m.Parameter(tdx.tensor(w, device=device))
                self.bias = m.Parameter(tdx.tensor(b, device=device))

        def forward(self, x):
            return x @ self.weight.t() + self.bias

    return Lin()


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_parametrization(device, dim):
    ours, ref = _linear(nn, device), _linear(torch.nn, device)
    parametrizations.weight_norm(ours, dim=dim)
    TU.parametrizations.weight_norm(ref, dim=dim)
    assert list(ours.state_dict()) == list(ref.state_dict())
    for (k, v), tv in zip(ours.state_dict().items(), ref.state_dict().values()):
        assert_close(v, tv, rtol=1e-6, atol=1e-7)
    x, tx = tdx.tensor(arr((2, 3), 9), device=device), torch.tensor(arr((2, 3), 9))
    ours(x).pow(2).sum().backward()
    ref(tx).pow(2).sum().backward()
    for (n, p), (tn, tp) in zip(ours.named_parameters(), ref.named_parameters()):
        assert n == tn
        assert_close(p.grad, tp.grad, rtol=1e-5, atol=1e-6)  # norms reduce in another order than torch's
    old = {"bias": ref.bias.detach().numpy(), "weight_g": ref.parametrizations.weight.original0.detach().numpy(),
           "weight_v": ref.parametrizations.weight.original1.detach().numpy() * 2}
    fresh = _linear(nn, device, seed=5)
    parametrizations.weight_norm(fresh, dim=dim)
    fresh.load_state_dict({k: tdx.tensor(v) for k, v in old.items()})  # the pre-parametrize key names load
    assert_close(fresh.parametrizations.weight.original1, torch.tensor(old["weight_v"]))


def test_spectral_norm_parametrization(device):
    ours, ref = _linear(nn, device), _linear(torch.nn, device)
    tdx.manual_seed(3)
    parametrizations.spectral_norm(ours)
    torch.manual_seed(3)
    TU.parametrizations.spectral_norm(ref)
    assert list(ours.state_dict()) == list(ref.state_dict())
    assert_close(ours.weight, ref.weight.detach(), rtol=1e-5, atol=1e-6)  # 15 power iterations converge
    ours.eval()
    ref.eval()
    x, tx = tdx.tensor(arr((2, 3), 9), device=device), torch.tensor(arr((2, 3), 9))
    ours(x).sum().backward()
    ref(tx).sum().backward()
    assert_close(ours.parametrizations.weight.original.grad, ref.parametrizations.weight.original.grad,
                 rtol=1e-4, atol=1e-5)  # divided by an iterated estimate of sigma
    with pytest.raises(ValueError, match="no parameter or buffer"):
        parametrizations.spectral_norm(nn.Identity())
    with pytest.raises(tdx.UnsupportedOpError):
        parametrizations.orthogonal(ours)


def test_old_weight_norm(device):
    ours, ref = _linear(nn, device), _linear(torch.nn, device)
    with pytest.warns(FutureWarning):
        nn.utils.weight_norm(ours)
    with pytest.warns(FutureWarning):
        TU.weight_norm(ref)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in ref.named_parameters()]
    x, tx = tdx.tensor(arr((2, 3), 9), device=device), torch.tensor(arr((2, 3), 9))
    assert_close(ours(x), ref(tx), rtol=1e-6, atol=1e-6)
    nn.utils.remove_weight_norm(ours)
    TU.remove_weight_norm(ref)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in ref.named_parameters()]
    assert_close(ours.weight, ref.weight.detach(), rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        nn.utils.remove_weight_norm(ours)


# fusion -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn_weights(device, transpose):
    w, b = arr((4, 2, 3, 3), 1), arr((4,), 2)
    rm, rv, bw, bb = arr((4,), 3), np.abs(arr((4,), 4)) + 0.5, arr((4,), 5), arr((4,), 6)
    if transpose:
        w = arr((2, 4, 3, 3), 1)
    t = [tdx.tensor(a, device=device) for a in (w, b, rm, rv, bw, bb)]
    r = [torch.tensor(a) for a in (w, b, rm, rv, bw, bb)]
    fw, fb = nn.utils.fuse_conv_bn_weights(*t[:4], 1e-5, *t[4:], transpose=transpose)
    tw, tb = TU.fuse_conv_bn_weights(*r[:4], 1e-5, *r[4:], transpose=transpose)
    assert type(fw) is nn.Parameter and fw.requires_grad == tw.requires_grad
    assert_close(fw, tw.detach())
    assert_close(fb, tb.detach())
    fw, fb = nn.utils.fuse_conv_bn_weights(t[0], None, t[2], t[3], 1e-3, None, None, transpose)
    tw, tb = TU.fuse_conv_bn_weights(r[0], None, r[2], r[3], 1e-3, None, None, transpose)
    assert_close(fw, tw.detach())
    assert_close(fb, tb.detach())


def test_fuse_linear_bn(device):
    class BN(nn.Module):
        def __init__(self):
            super().__init__()
            self.num_features, self.eps = 4, 1e-5
            self.weight = nn.Parameter(tdx.tensor(arr((4,), 5), device=device))
            self.bias = nn.Parameter(tdx.tensor(arr((4,), 6), device=device))
            self.register_buffer("running_mean", tdx.tensor(arr((4,), 3), device=device))
            self.register_buffer("running_var", tdx.tensor(np.abs(arr((4,), 4)) + 0.5, device=device))

    lin = _linear(nn, device)
    lin.out_features = 4
    bn = BN()
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        nn.utils.fuse_linear_bn_eval(lin, bn)
    lin.eval()
    bn.eval()
    fused = nn.utils.fuse_linear_bn_eval(lin, bn)
    tl = torch.nn.Linear(3, 4)
    tl.weight.data, tl.bias.data = torch.tensor(arr((4, 3), 1)), torch.tensor(arr((4,), 2))
    tbn = torch.nn.BatchNorm1d(4).eval()
    tbn.weight.data, tbn.bias.data = torch.tensor(arr((4,), 5)), torch.tensor(arr((4,), 6))
    tbn.running_mean.copy_(torch.tensor(arr((4,), 3)))
    tbn.running_var.copy_(torch.tensor(np.abs(arr((4,), 4)) + 0.5))
    tfused = TU.fuse_linear_bn_eval(tl.eval(), tbn)
    assert fused is not lin and lin.weight is not fused.weight
    assert_close(fused.weight, tfused.weight.detach())
    assert_close(fused.bias, tfused.bias.detach())
