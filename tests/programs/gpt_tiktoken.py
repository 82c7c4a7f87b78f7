"""A GPT-2 training script in llm.c's train_gpt2.py and build-nanogpt's style: text tokenized with tiktoken (a
byte-level encoding built here with GPT-2's split pattern: no file is downloaded), a GPT with tied embeddings and
flash attention, AdamW with decayed and undecayed groups, a cosine learning rate, gradient accumulation and
clipping, bfloat16 autocast, then sampling with top-k."""

import inspect
import math
from contextlib import nullcontext

import tiktoken
import torch
import torch.nn as nn
from torch.nn import functional as F

GPT2_SPLIT = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
enc = tiktoken.Encoding("gpt2-bytes", pat_str=GPT2_SPLIT, mergeable_ranks={bytes([i]): i for i in range(256)},
                        special_tokens={"<|endoftext|>": 256})
text = ("First Citizen: Before we proceed any further, hear me speak. All: Speak, speak. First Citizen: You are all "
        "resolved rather to die than to famish? All: Resolved. resolved. ") * 4
tokens = torch.tensor(enc.encode(text, allowed_special={"<|endoftext|>"}) + [enc.eot_token], dtype=torch.long)


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.c_attn, self.c_proj, self.n_head = nn.Linear(n_embd, 3 * n_embd), nn.Linear(n_embd, n_embd), n_head
        self.c_proj.NANOGPT_SCALE_INIT = 1

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.ln_1, self.attn, self.ln_2 = nn.LayerNorm(n_embd), CausalSelfAttention(n_embd, n_head), nn.LayerNorm(n_embd)
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(n_embd, 4 * n_embd), gelu=nn.GELU(approximate="tanh"),
                                      c_proj=nn.Linear(4 * n_embd, n_embd)))
        self.mlp.c_proj.NANOGPT_SCALE_INIT = 1

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        m = self.mlp
        return x + m.c_proj(m.gelu(m.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    def __init__(self, vocab_size=257, block_size=32, n_layer=2, n_head=2, n_embd=32):
        super().__init__()
        self.block_size = block_size
        self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(vocab_size, n_embd), wpe=nn.Embedding(block_size, n_embd),
                                              h=nn.ModuleList([Block(n_embd, n_head) for _ in range(n_layer)]),
                                              ln_f=nn.LayerNorm(n_embd)))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight
        self.n_layer = n_layer
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            std = 0.02 * (2 * self.n_layer) ** -0.5 if hasattr(module, "NANOGPT_SCALE_INIT") else 0.02
            torch.nn.init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        pos = torch.arange(0, idx.size(1), dtype=torch.long, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        loss = None if targets is None else F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, device_type):
        params = {n: p for n, p in self.named_parameters() if p.requires_grad}
        groups = [{"params": [p for p in params.values() if p.dim() >= 2], "weight_decay": weight_decay},
                  {"params": [p for p in params.values() if p.dim() < 2], "weight_decay": 0.0}]
        fused = "fused" in inspect.signature(torch.optim.AdamW).parameters and device_type == "cuda"
        return torch.optim.AdamW(groups, lr=learning_rate, betas=(0.9, 0.95), eps=1e-8, fused=fused)


print(f"torch {torch.version.__version__ >= '2'} tokens {len(tokens)} decode ok {enc.decode(tokens[:12].tolist()) == text[:12]}")
device = "cuda" if torch.cuda.is_available() else "cpu"
device_type = "cuda" if device.startswith("cuda") else "cpu"
torch.manual_seed(1337)
torch.set_float32_matmul_precision("high")
model = GPT().to(device)
B, T, grad_accum, max_steps, max_lr = 2, 16, 2, 5, 6e-4
optimizer = model.configure_optimizers(weight_decay=0.1, learning_rate=max_lr, device_type=device_type)


def get_lr(it, warmup=2):
    if it < warmup:
        return max_lr * (it + 1) / warmup
    ratio = (it - warmup) / (max_steps - warmup)
    return 0.1 * max_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * 0.9 * max_lr


pos = 0
ctx = torch.autocast(device_type=device_type, dtype=torch.bfloat16) if device_type == "cpu" else nullcontext()
for step in range(max_steps):
    optimizer.zero_grad()
    loss_accum = 0.0
    for micro in range(grad_accum):
        buf = tokens[pos:pos + B * T + 1]
        x, y = buf[:-1].view(B, T).to(device), buf[1:].view(B, T).to(device)
        pos = 0 if pos + B * T * 2 + 1 > len(tokens) else pos + B * T
        with ctx:
            logits, loss = model(x, y)
        loss = loss / grad_accum
        loss_accum += loss.detach()
        loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    for group in optimizer.param_groups:
        group["lr"] = get_lr(step)
    optimizer.step()
    print(f"step {step} loss {loss_accum.item():.6f} norm {norm.item():.4f} lr {get_lr(step):.4e}")
model.eval()
idx = tokens[:4].view(1, 4).to(device)
sample_rng = torch.Generator(device=device).manual_seed(42)
with torch.no_grad():
    for _ in range(8):
        logits, _ = model(idx[:, -model.block_size:])
        probs = F.softmax(logits[:, -1, :], dim=-1)
        topk_probs, topk_indices = torch.topk(probs, 50, dim=-1)
        ix = torch.multinomial(topk_probs, 1, generator=sample_rng)
        idx = torch.cat((idx, torch.gather(topk_indices, -1, ix)), dim=1)
print("sample", idx[0].tolist())
