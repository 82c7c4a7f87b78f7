"""The idioms users write in training code, on every device, against torch on CPU.

Each test runs the same few lines with ``torch`` and with ``tdx`` (``import tdx as torch``
style): optimizers zeroing gradients in place, ``param.data`` writes, ``model.to(device)``,
``.to()`` of tensors that require grad, ``copy.deepcopy(model)``, ``x.numpy()`` writes, and
state-dict round trips of models and optimizers (in memory and through ``save``/``load``).
Parameters, gradients and losses must follow torch step by step. (Cross-executor ``.to()``
gradients, pickling of tensors, ``.grad`` in-place updates and autograd in threads are in
``tests/test_grad_identity.py``.)
"""

from __future__ import annotations

import copy
import io

import numpy as np
import pytest
import torch

import tdx
from conftest import torch_twin
from tdx.testing.parity import assert_close, tolerance

RTOL, ATOL = tolerance("float32", "module")  # a few steps of a small MLP: float32 round-off compounds


def _weights(seed=0):
    rng = np.random.default_rng(seed)
    return {"0.weight": rng.uniform(-1, 1, (4, 3)), "0.bias": rng.uniform(-1, 1, (4,)),
            "2.weight": rng.uniform(-1, 1, (2, 4)), "2.bias": rng.uniform(-1, 1, (2,))}


def mlp(m, device="cpu", seed=0):
    """``Linear(3, 4) -> Tanh -> Linear(4, 2)`` on ``m`` (torch or tdx) with fixed float32 weights."""
    net = m.nn.Sequential(m.nn.Linear(3, 4), m.nn.Tanh(), m.nn.Linear(4, 2))
    state = {k: m.tensor(v.astype(np.float32)) for k, v in _weights(seed).items()}
    net.load_state_dict(state)
    return net.to(device) if m is tdx else net


def batch(m, device="cpu", seed=1):
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(-2, 2, (5, 3)).astype(np.float32), rng.uniform(-1, 1, (5, 2)).astype(np.float32)
    if m is torch:
        return torch.tensor(x), torch.tensor(y)
    return tdx.tensor(x, device=device), tdx.tensor(y, device=device)


def same_params(net, ref, msg=""):
    for (name, p), (_, q) in zip(net.named_parameters(), ref.named_parameters(), strict=True):
        assert_close(p.detach(), q.detach(), rtol=RTOL, atol=ATOL, msg=f"{msg} {name}")


def train(m, net, opt, device, steps=3, set_to_none=True):
    """The usual loop; returns the losses."""
    x, y = batch(m, device)
    losses = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=set_to_none)
        loss = m.nn.functional.mse_loss(net(x), y)
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
    return losses


@pytest.mark.parametrize("opt_name, kw", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.05)),
                                          ("AdamW", dict(lr=0.05, weight_decay=0.1))])
def test_zero_grad_set_to_none_false(device, opt_name, kw):
    """``optimizer.zero_grad(set_to_none=False)`` keeps zeroed gradient tensors; training follows torch."""
    nets = {m: mlp(m, device) for m in (tdx, torch)}
    opts = {m: getattr(m.optim, opt_name)(nets[m].parameters(), **kw) for m in (tdx, torch)}
    losses = {m: train(m, nets[m], opts[m], device, set_to_none=False) for m in (tdx, torch)}
    np.testing.assert_allclose(losses[tdx], losses[torch], rtol=RTOL)
    same_params(nets[tdx], nets[torch], opt_name)
    for m in (tdx, torch):
        grads = [p.grad for p in nets[m].parameters()]
        opts[m].zero_grad(set_to_none=False)
        for p, g in zip(nets[m].parameters(), grads):
            assert p.grad is not None and not p.grad.detach().cpu().numpy().any()
            assert p.grad.shape == p.shape and p.grad.dtype == p.dtype
            if m is torch:  # torch zeroes the same tensor in place
                assert p.grad is g


def test_param_data_writes(device):
    """Writes through ``p.data`` change the parameter outside autograd; the next backward follows torch."""
    nets = {m: mlp(m, device) for m in (tdx, torch)}
    for m, net in nets.items():
        w, b = net[0].weight, net[0].bias
        w.data.mul_(0.5)
        w.data[0] = 0.25
        b.data = b.data * 2 - 1  # rebinding .data keeps the Parameter
        net[2].weight.data.copy_(net[2].weight.data.t().t() + 1)
        assert w.requires_grad and w.is_leaf and not w.data.requires_grad and w.grad_fn is None
        assert type(b) is m.nn.Parameter
        x, y = batch(m, device)
        m.nn.functional.mse_loss(net(x), y).backward()
    same_params(nets[tdx], nets[torch], "after writes")
    for p, q in zip(nets[tdx].parameters(), nets[torch].parameters()):
        assert_close(p.grad, q.grad, rtol=RTOL, atol=ATOL)


def test_inplace_ops_take_parameters_as_operands(device):
    """In-place ops whose operands are Parameters (``h.add_(self.bias)``, ``buf.mul_(p)``, the operand
    by keyword too), and writes into a Parameter from them under ``no_grad``, follow torch."""
    nets = {m: mlp(m, device) for m in (tdx, torch)}
    out = {}
    for m, net in nets.items():
        w, b = net[0].weight, net[0].bias
        with m.no_grad():
            h = m.zeros_like(w)
            h.add_(w).mul_(w).add_(b.unsqueeze(1), alpha=0.5)
            h.addcmul_(w, w, value=0.25).addcdiv_(w, w.abs() + 1, value=-2.0).lerp_(w, 0.3)
            h.sub_(other=w).clamp_(min=-0.5, max=0.5)
            w.mul_(h).add_(w, alpha=-0.1)
        out[m] = h
    assert_close(out[tdx], out[torch], rtol=RTOL, atol=ATOL)
    same_params(nets[tdx], nets[torch], "after in-place writes")


def test_no_grad_parameter_update(device):
    """``with no_grad(): p -= lr * p.grad`` (the manual SGD step) follows torch and keeps leaves."""
    nets = {m: mlp(m, device) for m in (tdx, torch)}
    for m, net in nets.items():
        x, y = batch(m, device)
        for _ in range(3):
            loss = m.nn.functional.mse_loss(net(x), y)
            loss.backward()
            with m.no_grad():
                for p in net.parameters():
                    p -= 0.1 * p.grad
                    p.grad = None
        assert all(p.is_leaf and p.requires_grad for p in net.parameters())
    same_params(nets[tdx], nets[torch], "manual SGD")


def test_model_to_device_then_train(device):
    """A model built on the default device, moved with ``.to(device)`` (optimizer made after), trains as torch's."""
    net = mlp(tdx, "cpu")
    params = list(net.parameters())
    assert net.to(device) is net
    assert all(p is q for p, q in zip(net.parameters(), params, strict=True))  # the same Parameters
    assert all(p.device == tdx.device(device) and p.is_leaf and p.requires_grad for p in params)
    ref = mlp(torch)
    opt, topt = tdx.optim.SGD(net.parameters(), lr=0.1), torch.optim.SGD(ref.parameters(), lr=0.1)
    np.testing.assert_allclose(train(tdx, net, opt, device), train(torch, ref, topt, "cpu"), rtol=RTOL)
    same_params(net, ref, "after .to")
    if tdx.backends.get(device).caps.float64:  # float32 weights widened exactly: float64 forwards agree
        net, ref = mlp(tdx, "cpu").to(device, tdx.float64), mlp(torch).to(torch.float64)
        assert all(p.dtype == tdx.float64 and p.device == tdx.device(device) for p in net.parameters())
        assert_close(net(batch(tdx, device)[0].double()), ref(batch(torch)[0].double()),
                     rtol=tolerance("float64", "module")[0], atol=tolerance("float64", "module")[1])


def test_to_of_tensors_that_require_grad(device):
    """``.to()`` on the tensor's own device is the tensor itself; a dtype change is differentiable."""
    a = np.array([0.5, -1.25, 2.0], np.float32)
    for m, kw in ((tdx, {"device": device}), (torch, {})):
        w = m.tensor(a, requires_grad=True, **kw)
        assert w.to(w.device) is w and w.to(dtype=w.dtype) is w and w.to(w) is w
        h = w.to(m.float16)
        assert h.requires_grad and not h.is_leaf and h.dtype == m.float16
        (h.float() * m.tensor([1.0, 2.0, 3.0], **kw)).sum().backward()
        assert_close(w.grad, torch.tensor([1.0, 2.0, 3.0]))
        c = w.detach().to(m.float16)
        assert not c.requires_grad


def test_deepcopy_model_trains_independently(device):
    """``copy.deepcopy(model)`` (with gradients present) copies values and flags, as torch's, and shares nothing."""
    nets = {m: mlp(m, device) for m in (tdx, torch)}
    clones = {}
    for m, net in nets.items():
        x, y = batch(m, device)
        m.nn.functional.mse_loss(net(x), y).backward()
        clones[m] = copy.deepcopy(net)
    for m in (tdx, torch):
        for p, q in zip(nets[m].parameters(), clones[m].parameters(), strict=True):
            assert p is not q and q.device == p.device and type(q) is m.nn.Parameter and q.requires_grad and q.is_leaf
            assert_close(q.detach(), p.detach(), rtol=0, atol=0)
        # torch's Parameter.__deepcopy__ copies the data and requires_grad, not .grad
        assert [q.grad is None for q in clones[m].parameters()] == [q.grad is None for q in clones[torch].parameters()]
        opt = m.optim.SGD(clones[m].parameters(), lr=0.5)
        opt.step()  # moves only the clone
        with m.no_grad():
            clones[m][0].weight.data[0, 0] = 100.0
    same_params(nets[tdx], nets[torch], "original")
    same_params(clones[tdx], clones[torch], "clone")
    assert float(nets[tdx][0].weight[0, 0].item()) != 100.0


def test_state_dict_round_trips(device):
    """Model and optimizer state dicts: shared with the parameters, loaded into fresh objects, saved and loaded."""
    nets = {m: mlp(m, device) for m in (tdx, torch)}
    opts = {m: m.optim.Adam(nets[m].parameters(), lr=0.05) for m in (tdx, torch)}
    for m in (tdx, torch):
        train(m, nets[m], opts[m], device, steps=2)
    sd = nets[tdx].state_dict()
    assert list(sd) == list(nets[torch].state_dict())
    assert all(not v.requires_grad for v in sd.values())
    with tdx.no_grad():
        sd["2.bias"][0] = 7.0  # a state dict aliases the parameters, as torch's
    with torch.no_grad():
        nets[torch].state_dict()["2.bias"][0] = 7.0
    same_params(nets[tdx], nets[torch], "state dict alias")
    for how in ("memory", "file"):
        fresh = {m: mlp(m, device, seed=5) for m in (tdx, torch)}
        fopts = {m: m.optim.Adam(fresh[m].parameters(), lr=0.05) for m in (tdx, torch)}
        for m in (tdx, torch):
            state = {"model": nets[m].state_dict(), "opt": opts[m].state_dict()}
            if how == "file":
                buf = io.BytesIO()
                m.save(state, buf)
                buf.seek(0)
                state = m.load(buf, map_location=device if m is tdx else "cpu")
            fresh[m].load_state_dict(state["model"])
            fopts[m].load_state_dict(state["opt"])
        same_params(fresh[tdx], fresh[torch], f"{how} loaded")
        assert all(p.device == tdx.device(device) for p in fresh[tdx].parameters())
        losses = {m: train(m, fresh[m], fopts[m], device, steps=2) for m in (tdx, torch)}
        np.testing.assert_allclose(losses[tdx], losses[torch], rtol=RTOL)
        same_params(fresh[tdx], fresh[torch], f"{how} trained on")  # Adam's moments came along
        steps = [[float(s["step"]) for s in fopts[m].state_dict()["state"].values()] for m in (tdx, torch)]
        assert steps[0] == steps[1], steps  # torch's loaded step tensors alias the source optimizer's


def test_numpy_writes_reach_the_tensor_or_raise(device):
    """``a = x.numpy(); a[0] = 5``: on the torch executor the array shares ``x``'s memory, so the write
    shows in ``x`` (and in a later ``x.sum()``), as torch's; where the memory cannot be shared
    writably (MLX) the array is read-only and the write raises. A write is never silently lost. On a GPU
    torch's ``numpy()`` refuses the tensor (no array to write through), and so does tdx's, with torch's error."""
    twin = torch_twin(device)
    if twin != "cpu":
        with pytest.raises(TypeError) as expected:
            torch.arange(6.0, device=twin).numpy()
        with pytest.raises(TypeError) as got:
            tdx.arange(6.0, device=device).numpy()
        assert isinstance(got.value, tdx.TdxError) and str(got.value) == str(expected.value)
        return
    t = torch.arange(6.0).reshape(2, 3)
    ta = t.numpy()
    ta[0, 1] = 5.0
    x = tdx.arange(6.0, device=device).reshape(2, 3)
    a = x.numpy()
    try:
        a[0, 1] = 5.0
    except ValueError as err:
        assert device != "cpu", f"cpu must share writable memory as torch's: {err}"
        assert not a.flags.writeable and x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
        return
    assert_close(x, t, rtol=0, atol=0)
    assert x.sum().item() == t.sum().item() == 19.0
    assert np.shares_memory(a, x.numpy())
