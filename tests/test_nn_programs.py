"""End-to-end programs written once against a torch-like namespace and run with ``torch`` and with ``tdx``:
a GPT in the published minimal style (token and position embeddings, causal self-attention blocks, GELU
MLP, LayerNorm, weight tying, AdamW with decay/no-decay groups, gradient clipping, greedy and sampled
generation), a small CNN (Conv2d, BatchNorm2d, MaxPool2d, Dropout, Linear) and a 2-layer LSTM language
model. On cpu every loss, logit and generated token equals torch's bit for bit (the parameters come from
tdx's own default initialisation under the same seed); on mlx:cpu the model gets torch's initial
parameters and must stay within 1e-4 relative of torch's numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import tdx
from conftest import torch_twin
from nn_oracle import torch_repr

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
VOCAB, BLOCK, EMBD, HEADS, LAYERS = 29, 12, 32, 4, 2


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """Small kernels on a loaded 2-core machine: one torch thread avoids oversubscription (both sides of
    every comparison run in this process, so they share the setting)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


# the programs ------------------------------------------------------------------------------------------
def build_gpt(t):
    """A minimal GPT, as published GPT re-implementations write it, on namespace ``t``."""
    nn, F = t.nn, t.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(EMBD, 3 * EMBD)
            self.c_proj = nn.Linear(EMBD, EMBD)
            self.register_buffer("bias", t.tril(t.ones(BLOCK, BLOCK)).view(1, 1, BLOCK, BLOCK))

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(EMBD, dim=2)
            k = k.view(B, T, HEADS, C // HEADS).transpose(1, 2)
            q = q.view(B, T, HEADS, C // HEADS).transpose(1, 2)
            v = v.view(B, T, HEADS, C // HEADS).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            return self.c_proj(y)

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(EMBD, 4 * EMBD)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * EMBD, EMBD)

        def forward(self, x):
            return self.c_proj(self.gelu(self.c_fc(x)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(EMBD)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(EMBD)
            self.mlp = MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(VOCAB, EMBD), wpe=nn.Embedding(BLOCK, EMBD),
                h=nn.ModuleList([Block() for _ in range(LAYERS)]), ln_f=nn.LayerNorm(EMBD)))
            self.lm_head = nn.Linear(EMBD, VOCAB, bias=False)
            self.transformer.wte.weight = self.lm_head.weight  # weight tying
            self.apply(self._init_weights)
            for pn, p in self.named_parameters():
                if pn.endswith("c_proj.weight"):
                    t.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * LAYERS))

        def _init_weights(self, module):
            if isinstance(module, nn.Linear):
                t.nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    t.nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                t.nn.init.normal_(module.weight, mean=0.0, std=0.02)

        def forward(self, idx, targets=None):
            b, n = idx.size()
            pos = t.arange(0, n, dtype=t.long, device=idx.device)
            x = self.transformer.wte(idx) + self.transformer.wpe(pos)
            for block in self.transformer.h:
                x = block(x)
            logits = self.lm_head(self.transformer.ln_f(x))
            loss = None
            if targets is not None:
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
            return logits, loss

        def configure_optimizers(self, weight_decay, learning_rate, betas):
            params = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
            decay = [p for p in params.values() if p.dim() >= 2]
            nodecay = [p for p in params.values() if p.dim() < 2]
            groups = [{"params": decay, "weight_decay": weight_decay}, {"params": nodecay, "weight_decay": 0.0}]
            return t.optim.AdamW(groups, lr=learning_rate, betas=betas)

        @t.no_grad()
        def generate(self, idx, max_new_tokens, temperature=1.0, do_sample=False, top_k=None):
            for _ in range(max_new_tokens):
                idx_cond = idx if idx.size(1) <= BLOCK else idx[:, -BLOCK:]
                logits, _ = self(idx_cond)
                logits = logits[:, -1, :] / temperature
                if top_k is not None:
                    v, _ = t.topk(logits, top_k)
                    logits[logits < v[:, [-1]]] = -float("Inf")
                probs = F.softmax(logits, dim=-1)
                if do_sample:
                    idx_next = t.multinomial(probs, num_samples=1)
                else:
                    _, idx_next = t.topk(probs, k=1, dim=-1)
                idx = t.cat((idx, idx_next), dim=1)
            return idx

    return GPT()


def build_cnn(t, p_drop=0.25):
    """A small image classifier on namespace ``t``."""
    nn = t.nn
    return nn.Sequential(
        nn.Conv2d(1, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2, ceil_mode=True),
        nn.Flatten(), nn.Dropout(p_drop), nn.Linear(8 * 2 * 2, 10))


def build_lstm_lm(t):
    """A 2-layer LSTM language model on namespace ``t``."""
    nn = t.nn

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(VOCAB, 16)
            self.rnn = nn.LSTM(16, 24, num_layers=2, batch_first=True)
            self.head = nn.Linear(24, VOCAB)

        def forward(self, idx):
            out, _ = self.rnn(self.emb(idx))
            return self.head(out)

    return LM()


# running them --------------------------------------------------------------------------------------------
def _to(t, arr, device):
    return t.tensor(arr, device=device)


def _place(model_t, model_x, device):
    """cpu: tdx's own initialisation must already be torch's; elsewhere load torch's parameters."""
    model_x.to(device)
    ref = model_t.state_dict()
    if device == "cpu":
        for k, v in ref.items():
            np.testing.assert_array_equal(model_x.state_dict()[k].numpy(), v.numpy(), err_msg=k)
    else:
        model_x.load_state_dict({k: tdx.tensor(v.numpy(), device=device) for k, v in ref.items()})


def _check(got, want, device):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if device == "cpu":
        np.testing.assert_array_equal(got, want)
    else:  # MLX's kernels round differently (and CUDA's ops compose apart from torch's modules): within 1e-4
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def _gpt_run(t, model, device, data):
    xs, ys = data
    logits, _ = model(_to(t, xs[0], device))
    opt = model.configure_optimizers(0.1, 3e-3, (0.9, 0.95))
    losses = []
    for step in range(5):
        _, loss = model(_to(t, xs[step], device), _to(t, ys[step], device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        t.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    model.eval()
    prompt = _to(t, xs[0][:1, :4], device)
    greedy = model.generate(prompt, 10).tolist()
    t.manual_seed(5)
    sampled = model.generate(prompt, 10, temperature=0.8, do_sample=True, top_k=8).tolist()
    return logits.detach().cpu().numpy() if t is torch else np.asarray(logits.detach()), losses, greedy, sampled


def test_gpt(device):
    rng = np.random.default_rng(0)
    xs = [rng.integers(0, VOCAB, size=(3, BLOCK)) for _ in range(5)]
    ys = [rng.integers(0, VOCAB, size=(3, BLOCK)) for _ in range(5)]
    torch.manual_seed(0)
    ref = build_gpt(torch)
    tdx.manual_seed(0)
    mod = build_gpt(tdx)
    assert torch_repr(mod) == repr(ref)  # the installed torch's repr (2.11 prints no norm bias=)
    _place(ref, mod, device)
    twin = torch_twin(device)  # torch on the device whose kernels tdx runs (cuda: its matmuls, its reductions)
    want = _gpt_run(torch, ref.to(twin), twin, (xs, ys))
    got = _gpt_run(tdx, mod, device, (xs, ys))
    _check(got[0], want[0], device)
    _check(got[1], want[1], device)
    assert got[2] == want[2]
    sampled = np.asarray(got[3])
    assert sampled.shape == (1, 14) and sampled.min() >= 0 and sampled.max() < VOCAB
    if device == "cpu":  # torch's generator drives tdx's cpu sampling: the same tokens
        assert got[3] == want[3]


def _train(t, model, device, batches, steps, make_opt, lossfn):
    opt = make_opt(t, model)
    losses = []
    for step in range(steps):
        x, y = batches[step % len(batches)]
        loss = lossfn(t, model(_to(t, x, device)), _to(t, y, device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_cnn(device):
    rng = np.random.default_rng(1)
    batches = [(rng.standard_normal((4, 1, 12, 12)).astype(np.float32), rng.integers(0, 10, size=4))
               for _ in range(3)]
    # dropout masks come from the executor's generator: torch's on cpu (the same masks as torch's), MLX's
    # own on mlx, where the comparison therefore runs with dropout off
    p_drop = 0.25 if device == "cpu" else 0.0
    torch.manual_seed(0)
    ref = build_cnn(torch, p_drop)
    tdx.manual_seed(0)
    mod = build_cnn(tdx, p_drop)
    assert torch_repr(mod) == repr(ref)  # the installed torch's repr (2.11 prints no norm bias=)
    _place(ref, mod, device)
    twin = torch_twin(device)  # cuda: cuDNN's TF32 convolutions, torch's numbers there
    ref.to(twin)

    def sgd(t, m):
        return t.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)

    def ce(t, out, y):
        return t.nn.functional.cross_entropy(out, y)

    torch.manual_seed(3)
    want = _train(torch, ref, twin, batches, 6, sgd, ce)
    tdx.manual_seed(3)
    got = _train(tdx, mod, device, batches, 6, sgd, ce)
    _check(got, want, device)
    ref.eval()
    mod.eval()
    x = batches[0][0]
    _check(np.asarray(mod(_to(tdx, x, device)).detach()), ref(torch.tensor(x, device=twin)).detach().cpu().numpy(),
           device)
    for k, v in ref.state_dict().items():  # running statistics and num_batches_tracked too
        _check(np.asarray(mod.state_dict()[k]), v.cpu().numpy(), device)


def test_lstm_lm(device):
    rng = np.random.default_rng(2)
    seqs = rng.integers(0, VOCAB, size=(4, 4, 9))
    batches = [(s[:, :-1], s[:, 1:]) for s in seqs]
    torch.manual_seed(0)
    ref = build_lstm_lm(torch)
    tdx.manual_seed(0)
    mod = build_lstm_lm(tdx)
    assert torch_repr(mod) == repr(ref)  # the installed torch's repr (2.11 prints no norm bias=)
    _place(ref, mod, device)

    def adam(t, m):
        return t.optim.Adam(m.parameters(), lr=1e-2)

    def ce(t, out, y):
        return t.nn.functional.cross_entropy(out.reshape(-1, VOCAB), y.reshape(-1))

    want = _train(torch, ref, "cpu", batches, 20, adam, ce)
    got = _train(tdx, mod, device, batches, 20, adam, ce)
    _check(got, want, device)

