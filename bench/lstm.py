"""The LSTM language model of ``bench/train.py``'s LSTM row: one model, written twice, same arithmetic.

- :func:`module_step`: ``T.nn.Embedding`` -> ``T.nn.LSTM`` (batch first) -> ``T.nn.Linear``, cross-entropy,
  stepped by ``T.optim.SGD``, parameterised by the namespace ``T`` (``torch`` or ``tdx``);
- :func:`mlx_step`: the same model in ``mlx.nn`` (``nn.Embedding``, ``nn.LSTM``, ``nn.Linear``,
  ``nn.value_and_grad``, ``mlx.optimizers.SGD``), the native MLX contender.

MLX's ``nn.LSTM`` keeps one bias where torch keeps two (``b_ih``, ``b_hh``); its gates are chunked in
torch's order (i, f, g, o), so ``W_ih = Wx``, ``W_hh = Wh``, ``b_ih = bias`` and ``b_hh = 0`` is the same
model. Every variant starts from the same NumPy weights and sees the same batches, so their losses must
agree. This module is bench code: it must never be imported by tdx.
"""

from __future__ import annotations

import numpy as np

CONFIGS = {"S": dict(vocab=256, embed=64, hidden=128, block=32, batch=16)}
LR = 0.1


def init_params(cfg: dict, seed: int = 0) -> dict:
    """Initial weights as float32 NumPy arrays (torch's layouts: linear weights out x in)."""
    rng = np.random.default_rng(seed)
    v, e, h = cfg["vocab"], cfg["embed"], cfg["hidden"]
    k = 1 / np.sqrt(h)

    def uniform(*shape):
        return rng.uniform(-k, k, shape).astype(np.float32)

    return {"emb": (rng.standard_normal((v, e)) * 0.1).astype(np.float32), "w_ih": uniform(4 * h, e),
            "w_hh": uniform(4 * h, h), "b": uniform(4 * h), "out_w": uniform(v, h), "out_b": uniform(v)}


def batches(cfg: dict, n: int, seed: int = 1) -> list:
    """``n`` (inputs, targets) pairs of int64 token ids, (batch, block) each."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        toks = rng.integers(0, cfg["vocab"], (cfg["batch"], cfg["block"] + 1))
        out.append((toks[:, :-1].copy(), toks[:, 1:].copy()))
    return out


def module_step(T, device, cfg: dict, init: dict, sync):
    """The model from ``T.nn`` modules, stepped by ``T.optim.SGD``; ``sync(tensors)`` waits for them."""
    nn, F = T.nn, T.nn.functional
    v, e, h = cfg["vocab"], cfg["embed"], cfg["hidden"]

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.lstm, self.out = nn.Embedding(v, e), nn.LSTM(e, h, batch_first=True), nn.Linear(h, v)

        def forward(self, idx):
            y, _ = self.lstm(self.emb(idx))
            return self.out(y)

    model = LM().to(device)
    with T.no_grad():
        for p, src in ((model.emb.weight, init["emb"]), (model.lstm.weight_ih_l0, init["w_ih"]),
                       (model.lstm.weight_hh_l0, init["w_hh"]), (model.lstm.bias_ih_l0, init["b"]),
                       (model.lstm.bias_hh_l0, np.zeros_like(init["b"])), (model.out.weight, init["out_w"]),
                       (model.out.bias, init["out_b"])):
            p.copy_(T.tensor(src, device=device))
    opt = T.optim.SGD(model.parameters(), lr=LR)
    params = list(model.parameters())

    def step(idx, tgt):
        idx_t, tgt_t = T.tensor(idx, device=device), T.tensor(tgt, device=device)
        loss = F.cross_entropy(model(idx_t).reshape(-1, v), tgt_t.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sync([*params, loss])
        return loss.item()

    return step


def mlx_step(cfg: dict, init: dict, sync=None):
    """The model in ``mlx.nn`` with ``nn.value_and_grad`` and ``mlx.optimizers.SGD``; ``sync(arrays)``
    evaluates them (``mx.eval`` by default)."""
    import mlx.core as mx
    import mlx.nn as mnn
    import mlx.optimizers as optim

    v, e, h = cfg["vocab"], cfg["embed"], cfg["hidden"]

    class LM(mnn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.lstm, self.out = mnn.Embedding(v, e), mnn.LSTM(e, h), mnn.Linear(h, v)

        def __call__(self, idx):
            y, _ = self.lstm(self.emb(idx))
            return self.out(y)

    model = LM()
    model.emb.weight = mx.array(init["emb"])
    model.lstm.Wx, model.lstm.Wh, model.lstm.bias = (mx.array(init[k]) for k in ("w_ih", "w_hh", "b"))
    model.out.weight, model.out.bias = mx.array(init["out_w"]), mx.array(init["out_b"])
    mx.eval(model.parameters())
    opt = optim.SGD(learning_rate=LR)

    def loss_fn(m, idx, tgt):
        return mnn.losses.cross_entropy(m(idx).reshape(-1, v), tgt.reshape(-1), reduction="mean")

    grad_fn = mnn.value_and_grad(model, loss_fn)

    def step(idx, tgt):
        loss, grads = grad_fn(model, mx.array(idx), mx.array(tgt))
        opt.update(model, grads)
        (sync or mx.eval)([loss, model.parameters(), opt.state])
        return loss.item()

    return step
