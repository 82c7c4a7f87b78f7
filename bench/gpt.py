"""The GPT of ``bench/train.py``: one model, written three ways, with identical arithmetic.

- :func:`functional_step`: functional ops and a hand-written AdamW, parameterised by the
  namespace ``T`` (``torch`` or ``tdx``), so the same code runs natively and through tdx.
- :func:`module_step`: the same model built from ``T.nn`` modules and ``T.optim.AdamW``.
- :func:`mlx_step`: the same model in plain ``mlx.core`` (``mx.value_and_grad``, optionally
  ``mx.compile``), the native MLX contender.

Every variant starts from the same NumPy initial weights and sees the same batches, so
their losses must agree. This module is bench code: it must never be imported by tdx.
"""

from __future__ import annotations

import math

import numpy as np

CONFIGS = {
    "S": dict(layers=2, width=128, block=64, batch=8, heads=4, vocab=1024),
    "M": dict(layers=4, width=256, block=128, batch=8, heads=4, vocab=1024),
}
LR, BETAS, EPS, WD = 1e-3, (0.9, 0.95), 1e-8, 0.1
_LAYER = ("ln1_w", "ln1_b", "attn_w", "attn_b", "proj_w", "proj_b", "ln2_w", "ln2_b", "fc_w", "fc_b", "fc2_w",
          "fc2_b")


def init_params(cfg: dict, seed: int = 0) -> dict:
    """Initial weights as float32 NumPy arrays (linear weights stored out x in, as torch's)."""
    rng = np.random.default_rng(seed)
    c, v = cfg["width"], cfg["vocab"]

    def normal(*shape, std=0.02):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    p = {"wte": normal(v, c), "wpe": normal(cfg["block"], c)}
    proj_std = 0.02 / math.sqrt(2 * cfg["layers"])
    for i in range(cfg["layers"]):
        p.update({
            f"{i}.ln1_w": np.ones(c, np.float32), f"{i}.ln1_b": np.zeros(c, np.float32),
            f"{i}.attn_w": normal(3 * c, c), f"{i}.attn_b": np.zeros(3 * c, np.float32),
            f"{i}.proj_w": normal(c, c, std=proj_std), f"{i}.proj_b": np.zeros(c, np.float32),
            f"{i}.ln2_w": np.ones(c, np.float32), f"{i}.ln2_b": np.zeros(c, np.float32),
            f"{i}.fc_w": normal(4 * c, c), f"{i}.fc_b": np.zeros(4 * c, np.float32),
            f"{i}.fc2_w": normal(c, 4 * c, std=proj_std), f"{i}.fc2_b": np.zeros(c, np.float32),
        })
    p["lnf_w"], p["lnf_b"] = np.ones(c, np.float32), np.zeros(c, np.float32)
    return p


def batches(cfg: dict, n: int, seed: int = 1) -> list:
    """``n`` (inputs, targets) pairs of int64 token ids, (batch, block) each."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        toks = rng.integers(0, cfg["vocab"], (cfg["batch"], cfg["block"] + 1))
        out.append((toks[:, :-1].copy(), toks[:, 1:].copy()))
    return out


# functional, parameterised by the namespace ---------------------------------------------------------
def gpt_loss(T, p: dict, idx, tgt, cfg: dict):
    """The model's cross-entropy loss with ``T`` = torch or tdx (functional ops only)."""
    F = T.nn.functional
    b, n = idx.shape
    c, h = cfg["width"], cfg["heads"]
    x = F.embedding(idx, p["wte"]) + p["wpe"][:n]
    for i in range(cfg["layers"]):
        a = F.layer_norm(x, (c,), p[f"{i}.ln1_w"], p[f"{i}.ln1_b"])
        q, k, v = F.linear(a, p[f"{i}.attn_w"], p[f"{i}.attn_b"]).split(c, dim=2)
        q, k, v = (t.view(b, n, h, c // h).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + F.linear(y.transpose(1, 2).reshape(b, n, c), p[f"{i}.proj_w"], p[f"{i}.proj_b"])
        a = F.layer_norm(x, (c,), p[f"{i}.ln2_w"], p[f"{i}.ln2_b"])
        x = x + F.linear(F.gelu(F.linear(a, p[f"{i}.fc_w"], p[f"{i}.fc_b"])), p[f"{i}.fc2_w"], p[f"{i}.fc2_b"])
    x = F.layer_norm(x, (c,), p["lnf_w"], p["lnf_b"])
    logits = F.linear(x, p["wte"])
    return F.cross_entropy(logits.view(-1, cfg["vocab"]), tgt.view(-1))


def adamw_(T, params: list, state: list, step: int) -> None:
    """Hand-written AdamW (torch's arithmetic, decay on every parameter), in place."""
    b1, b2 = BETAS
    bc1, bc2 = 1 - b1 ** step, 1 - b2 ** step
    with T.no_grad():
        for p, (m, v) in zip(params, state):
            g = p.grad
            p.mul_(1 - LR * WD)
            m.mul_(b1).add_(g, alpha=1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            p.addcdiv_(m, (v / bc2).sqrt().add_(EPS), value=-LR / bc1)
            p.grad = None


def functional_step(T, device, cfg: dict, init: dict, sync):
    """A zero-argument-per-batch step ``step(idx, tgt) -> loss float`` with ``T`` = torch or tdx."""
    kw = {} if device is None else {"device": device}
    p = {k: T.tensor(v, requires_grad=True, **kw) for k, v in init.items()}
    params = list(p.values())
    state = [(T.zeros_like(q), T.zeros_like(q)) for q in params]
    count = [0]

    def step(idx, tgt):
        loss = gpt_loss(T, p, T.tensor(idx, **kw), T.tensor(tgt, **kw), cfg)
        loss.backward()
        count[0] += 1
        adamw_(T, params, state, count[0])
        sync([loss] + params + [s for pair in state for s in pair])
        return loss.item()

    return step


# nn modules + optim ------------------------------------------------------------------------------------
def module_step(T, device, cfg: dict, init: dict, sync):
    """The same model from ``T.nn`` modules, stepped by ``T.optim.AdamW``."""
    nn, F = T.nn, T.nn.functional
    c, h, n_layers = cfg["width"], cfg["heads"], cfg["layers"]

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.attn, self.proj = nn.LayerNorm(c), nn.Linear(c, 3 * c), nn.Linear(c, c)
            self.ln2, self.fc, self.act, self.fc2 = nn.LayerNorm(c), nn.Linear(c, 4 * c), nn.GELU(), nn.Linear(4 * c, c)

        def forward(self, x):
            b, n, _ = x.shape
            q, k, v = self.attn(self.ln1(x)).split(c, dim=2)
            q, k, v = (t.view(b, n, h, c // h).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, n, c))
            return x + self.fc2(self.act(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(cfg["vocab"], c), nn.Embedding(cfg["block"], c)
            self.blocks = nn.ModuleList([Block() for _ in range(n_layers)])
            self.lnf = nn.LayerNorm(c)

        def forward(self, idx, tgt):
            n = idx.shape[1]
            x = self.wte(idx) + self.wpe.weight[:n]
            for blk in self.blocks:
                x = blk(x)
            logits = F.linear(self.lnf(x), self.wte.weight)
            return F.cross_entropy(logits.view(-1, cfg["vocab"]), tgt.view(-1))

    if device is not None and T.__name__ == "tdx":  # build on the device (no cpu detour)
        T.set_default_device(device)
        try:
            model = GPT()
        finally:
            T.set_default_device(None)  # back to the config's default
    else:
        model = GPT()
    names = {"wte": "wte.weight", "wpe": "wpe.weight", "lnf_w": "lnf.weight", "lnf_b": "lnf.bias"}
    for i in range(n_layers):
        for k in _LAYER:
            mod, kind = k.rsplit("_", 1)
            names[f"{i}.{k}"] = f"blocks.{i}.{mod}.{'weight' if kind == 'w' else 'bias'}"
    own = dict(model.named_parameters())
    with T.no_grad():
        for k, v in init.items():
            own[names[k]].copy_(T.tensor(v, device=own[names[k]].device))
    if device is not None:
        model.to(device)
    opt = T.optim.AdamW(model.parameters(), lr=LR, betas=BETAS, eps=EPS, weight_decay=WD)
    kw = {} if device is None else {"device": device}

    def step(idx, tgt):
        loss = model(T.tensor(idx, **kw), T.tensor(tgt, **kw))
        loss.backward()
        opt.step()
        opt.zero_grad()
        sync([loss] + list(model.parameters()) + [s for st in opt.state.values() for s in st.values()
                                                    if isinstance(s, T.Tensor)])
        return loss.item()

    return step


# native MLX -------------------------------------------------------------------------------------------
def mlx_loss(mx, p: dict, idx, tgt, cfg: dict):
    """The model in ``mlx.core`` (same arithmetic as :func:`gpt_loss`)."""
    b, n = idx.shape
    c, h = cfg["width"], cfg["heads"]

    def linear(x, w, bias=None):
        y = x @ w.T
        return y if bias is None else y + bias

    def layer_norm(x, w, bias):
        return mx.fast.layer_norm(x, w, bias, 1e-5)

    x = p["wte"][idx] + p["wpe"][:n]
    for i in range(cfg["layers"]):
        a = layer_norm(x, p[f"{i}.ln1_w"], p[f"{i}.ln1_b"])
        q, k, v = mx.split(linear(a, p[f"{i}.attn_w"], p[f"{i}.attn_b"]), 3, axis=2)
        q, k, v = (t.reshape(b, n, h, c // h).transpose(0, 2, 1, 3) for t in (q, k, v))
        y = mx.fast.scaled_dot_product_attention(q, k, v, scale=1 / math.sqrt(c // h), mask="causal")
        x = x + linear(y.transpose(0, 2, 1, 3).reshape(b, n, c), p[f"{i}.proj_w"], p[f"{i}.proj_b"])
        a = layer_norm(x, p[f"{i}.ln2_w"], p[f"{i}.ln2_b"])
        f = linear(a, p[f"{i}.fc_w"], p[f"{i}.fc_b"])
        f = f * 0.5 * (1 + mx.erf(f * math.sqrt(0.5)))
        x = x + linear(f, p[f"{i}.fc2_w"], p[f"{i}.fc2_b"])
    x = layer_norm(x, p["lnf_w"], p["lnf_b"])
    logits = linear(x, p["wte"]).reshape(-1, cfg["vocab"])
    t = tgt.reshape(-1)
    picked = mx.take_along_axis(logits, t[:, None], axis=1).squeeze(1)
    return (mx.logsumexp(logits, axis=1) - picked).mean()


def mlx_step(mx, cfg: dict, init: dict, compiled: bool):
    """Native MLX: ``mx.value_and_grad`` and a hand-written AdamW; with ``compiled`` the whole
    step (forward, backward, update) is one ``mx.compile``d function of (params, state, batch)."""
    params = {k: mx.array(v) for k, v in init.items()}
    state = {k: (mx.zeros_like(v), mx.zeros_like(v)) for k, v in params.items()}
    grad_fn = mx.value_and_grad(lambda prm, i, t: mlx_loss(mx, prm, i, t, cfg))
    b1, b2 = BETAS

    def update(prm, st, i, t, bc1, bc2):
        loss, grads = grad_fn(prm, i, t)
        new_p, new_s = {}, {}
        for k, w in prm.items():
            g = grads[k]
            m, v = st[k]
            m = m * b1 + g * (1 - b1)
            v = v * b2 + g * g * (1 - b2)
            new_p[k] = w * (1 - LR * WD) - (LR / bc1) * m / (mx.sqrt(v / bc2) + EPS)
            new_s[k] = (m, v)
        return loss, new_p, new_s

    fn = mx.compile(update) if compiled else update
    count = [0]

    def step(idx, tgt):
        nonlocal params, state
        count[0] += 1
        bc1, bc2 = mx.array(1 - b1 ** count[0]), mx.array(1 - b2 ** count[0])
        loss, params, state = fn(params, state, mx.array(idx), mx.array(tgt), bc1, bc2)
        mx.eval(loss, params, state)
        return loss.item()

    return step


def compiled_step(T, device, cfg: dict, init: dict, sync):
    """The functional step under ``T.compile``: the bias corrections are tensor arguments (a compiled
    step sees no Python value change), parameters and moments are its declared state."""
    kw = {"device": device}
    p = {k: T.tensor(v, requires_grad=True, **kw) for k, v in init.items()}
    params = list(p.values())
    state = [(T.zeros_like(q), T.zeros_like(q)) for q in params]
    b1, b2 = BETAS

    def train_step(idx, tgt, lr_t, bc2):
        loss = gpt_loss(T, p, idx, tgt, cfg)
        loss.backward()
        with T.no_grad():
            for q, (m, v) in zip(params, state):
                g = q.grad
                q.mul_(1 - LR * WD)
                m.mul_(b1).add_(g, alpha=1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                q.sub_(m / ((v / bc2).sqrt() + EPS) * lr_t)
                q.grad = None
        return loss

    fn = T.compile(train_step, options={"state": params + [s for pair in state for s in pair]})
    count = [0]

    def step(idx, tgt):
        count[0] += 1
        lr_t = T.tensor(LR / (1 - b1 ** count[0]), **kw)
        bc2 = T.tensor(1 - b2 ** count[0], **kw)
        loss = fn(T.tensor(idx, **kw), T.tensor(tgt, **kw), lr_t, bc2)
        sync([loss] + params + [s for pair in state for s in pair])
        return loss.item()

    return step
