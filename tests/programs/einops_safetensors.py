"""einops layers inside a torch model and safetensors checkpoints, from deterministic data.

Prints a model's outputs and gradients built with ``einops.layers.torch`` (Rearrange, Reduce,
EinMix) and ``einops`` functions, then writes tensors of several dtypes with
``safetensors.torch.save_file``/``save`` and a model with tied weights with ``save_model``, prints each
file's SHA-256 and reads everything back (``load_file``, ``load``, ``load_model``, ``safe_open``).
"""

import hashlib

import torch
import torch.nn as nn
from einops import einsum, pack, rearrange, reduce, repeat, unpack
from einops.layers.torch import EinMix, Rearrange, Reduce
from safetensors import safe_open
from safetensors.torch import load, load_file, load_model, save, save_file, save_model


def ramp(*shape, dtype=torch.float32):
    n = 1
    for s in shape:
        n *= s
    return ((torch.arange(n, dtype=torch.float64) * 0.37) % 2.0 - 1.0).to(dtype).reshape(shape)


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


class Mixer(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=2, p2=2)
        self.mix = EinMix("b t c -> b t d", weight_shape="c d", bias_shape="d", c=12, d=8)
        self.pool = Reduce("b t d -> b d", "mean")
        self.head = nn.Linear(8, 3)
        self.embed = nn.Embedding(5, 3)
        self.out = nn.Linear(3, 5, bias=False)
        self.out.weight = self.embed.weight  # tied

    def forward(self, x):
        return self.head(self.pool(self.mix(self.patch(x))))


def einops_part():
    torch.manual_seed(0)
    model = Mixer()
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(ramp(*p.shape) * (0.5 + 0.1 * i))
    x = ramp(2, 3, 4, 4).requires_grad_()
    y = model(x)
    loss = y.pow(2).mean()
    a = rearrange(x, "b c h w -> b h w c")
    r = repeat(reduce(a, "b h w c -> b c", "max"), "b c -> b c k", k=2)
    e = einsum(a, a, "b h w c, b h w d -> b c d")
    packed, shapes = pack([a, r], "b *")
    first, second = unpack(packed, shapes, "b *")
    loss = loss + e.sum() * 1e-3 + second.sum() * 1e-2 + first.mean()
    loss.backward()
    print("einops out", [round(v, 4) for v in y.flatten().tolist()])
    print("einops loss", f"{loss.item():.4f}", "grad", f"{x.grad.abs().sum().item():.4f}")
    print("einops shapes", tuple(packed.shape), tuple(first.shape), tuple(second.shape))
    return model


def safetensors_part(model):
    tensors = {"f32": ramp(3, 4), "f16": ramp(5, dtype=torch.float16), "bf16": ramp(2, 3, dtype=torch.bfloat16),
               "i64": torch.arange(6).reshape(2, 3), "i32": torch.arange(4, dtype=torch.int32),
               "u8": torch.arange(7, dtype=torch.uint8), "bool": torch.arange(4) % 2 == 0,
               "f64": ramp(2, 2, dtype=torch.float64), "scalar": torch.tensor(2.5)}
    save_file(tensors, "tensors.safetensors", metadata={"format": "pt"})
    print("save_file", sha("tensors.safetensors"))
    blob = save(tensors)
    print("save", hashlib.sha256(blob).hexdigest()[:16])
    back = load_file("tensors.safetensors")
    again = load(blob)
    for name, t in tensors.items():
        assert back[name].dtype == t.dtype and torch.equal(back[name], t), name
        assert torch.equal(again[name], t), name
    with safe_open("tensors.safetensors", framework="pt") as f:
        print("safe_open", sorted(f.keys()), f.metadata(), f.get_slice("f32")[1:, :2].tolist())
    save_model(model, "model.safetensors")
    print("save_model", sha("model.safetensors"))
    fresh = Mixer()
    missing, unexpected = load_model(fresh, "model.safetensors")
    same = all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), fresh.state_dict().values()))
    print("load_model", sorted(missing), sorted(unexpected), same, fresh.out.weight is fresh.embed.weight)


if __name__ == "__main__":
    safetensors_part(einops_part())
