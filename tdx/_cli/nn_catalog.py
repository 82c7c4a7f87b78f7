"""The ``nn`` section of the support catalog: which ``tdx.nn`` modules run like torch's on which device.

Each module is built by torch (seeded) and by tdx, torch's parameters and buffers are loaded into
the tdx module on each available device, and both run one forward pass on fixed float32 inputs
(training mode, except for the dropouts, which run in eval mode), torch on the same device where tdx runs
torch's kernels there (cpu, cuda) and on CPU for MLX: the outputs must agree within
1e-4 relative (1e-6 absolute), or both must raise the same builtin kind. Imports torch (the
oracle) only when run; ``import tdx`` never imports it.
"""

from __future__ import annotations

import warnings

import numpy as np

_ACTIVATIONS = ("Threshold:0.1,20", "ReLU", "RReLU", "Hardtanh", "ReLU6", "Sigmoid", "Hardsigmoid", "Tanh", "SiLU",
                "Mish", "Hardswish", "ELU", "CELU", "SELU", "GLU", "GELU", "Hardshrink", "LeakyReLU", "LogSigmoid",
                "Softplus", "Softshrink", "PReLU", "Softsign", "Tanhshrink", "Softmin:1", "Softmax:1", "Softmax2d",
                "LogSoftmax:1")
_X3, _X4, _X5 = (2, 4, 9), (2, 4, 6, 6), (1, 4, 4, 4, 4)


def _cases() -> dict:
    """``{label: (class name, args, kwargs, input shapes, long-input vocabulary or None, eval)}``."""
    cases = {}

    def add(name, args=(), kw=None, shapes=(_X4,), vocab=None, label=None, evaluate=False):
        cases[label or name] = (name, args, kw or {}, shapes, vocab, evaluate)

    for spec in _ACTIVATIONS:
        name, _, raw = spec.partition(":")
        args = tuple(float(a) if "." in a else int(a) for a in raw.split(",")) if raw else ()
        add(name, args, evaluate=name == "RReLU")
    for n, x in ((1, _X3), (2, _X4), (3, _X5)):
        add(f"Conv{n}d", (4, 6, 3), dict(padding=1), (x,))
        add(f"ConvTranspose{n}d", (4, 3, 3), dict(stride=2), (x,))
        add(f"BatchNorm{n}d", (4,), shapes=(x,))
        add(f"InstanceNorm{n}d", (4,), dict(affine=True), (x,))
        add(f"MaxPool{n}d", (2,), shapes=(x,))
        add(f"AvgPool{n}d", (3,), dict(stride=2, padding=1), (x,))
        add(f"AdaptiveAvgPool{n}d", (3,), shapes=(x,))
        add(f"AdaptiveMaxPool{n}d", (3,), shapes=(x,))
        add(f"LPPool{n}d", (2, 2), shapes=(x,))
        for kind in ("Reflection", "Replication", "Circular", "Zero"):
            add(f"{kind}Pad{n}d", (1,), shapes=(x,))
        add(f"ConstantPad{n}d", (1, 0.5), shapes=(x,))
        add(f"Dropout{n}d", shapes=(x,), evaluate=True)
    for name in ("Dropout", "AlphaDropout", "FeatureAlphaDropout"):
        add(name, evaluate=True)
    add("Linear", (6, 5), shapes=((3, 6),))
    add("Bilinear", (3, 4, 5), shapes=((2, 3), (2, 4)))
    add("Identity")
    add("Flatten")
    add("Unflatten", (1, (2, 2)))
    add("LayerNorm", (6,))
    add("GroupNorm", (2, 4))
    add("RMSNorm", (6,))
    add("LocalResponseNorm", (2,))
    add("SyncBatchNorm", (4,))
    add("ChannelShuffle", (2,))
    add("Upsample", kw=dict(scale_factor=2, mode="bilinear"))
    add("UpsamplingNearest2d", kw=dict(scale_factor=2))
    add("UpsamplingBilinear2d", kw=dict(scale_factor=2))
    add("PixelShuffle", (2,))
    add("PixelUnshuffle", (2,))
    add("Unfold", (2,))
    add("Fold", ((4, 5), 2), shapes=((2, 8, 12),))
    add("CosineSimilarity", shapes=(_X4, _X4))
    add("PairwiseDistance", shapes=((3, 6), (3, 6)))
    add("Embedding", (10, 3), shapes=((2, 5),), vocab=10)
    add("EmbeddingBag", (10, 3), shapes=((2, 5),), vocab=10)
    add("RNN", (6, 5, 2), shapes=((3, 4, 6),))
    add("LSTM", (6, 5, 2), shapes=((3, 4, 6),))
    add("GRU", (6, 5, 2), shapes=((3, 4, 6),))
    add("RNNCell", (6, 5), shapes=((3, 6),))
    add("LSTMCell", (6, 5), shapes=((3, 6),))
    add("GRUCell", (6, 5), shapes=((3, 6),))
    add("MultiheadAttention", (8, 2), shapes=((4, 2, 8),) * 3)
    add("TransformerEncoderLayer", (8, 2, 16, 0.0), shapes=((4, 2, 8),))
    add("TransformerDecoderLayer", (8, 2, 16, 0.0), shapes=((4, 2, 8), (3, 2, 8)))
    return cases


def _inputs(m, shapes, vocab, device):
    rng = np.random.default_rng(0)
    out = []
    for s in shapes:
        arr = rng.integers(0, vocab, size=s) if vocab else rng.uniform(-2, 2, size=s).astype(np.float32)
        out.append(m.tensor(arr, device=device))
    return out


def _first(out):
    while isinstance(out, (tuple, list)):
        out = out[0]
    return out


def _check(case, device, tdx, torch) -> str | None:
    name, args, kw, shapes, vocab, evaluate = case
    # torch's numbers on the device itself where tdx runs torch's kernels there (cuDNN's TF32 convolutions
    # on cuda), on CPU for MLX
    twin = device if tdx.backends.get(device).name == "torch" else "cpu"
    torch.manual_seed(0)
    ref = getattr(torch.nn, name)(*args, **kw)
    try:
        mod = getattr(tdx.nn, name)(*args, **kw).to(device)
        mod.load_state_dict({k: tdx.tensor(v.detach().numpy(), device=device) for k, v in ref.state_dict().items()})
        ref = ref.to(twin)
        if evaluate:
            ref.eval()
            mod.eval()
        want = _first(ref(*_inputs(torch, shapes, vocab, twin))).detach().cpu().numpy()
        got = _first(mod(*_inputs(tdx, shapes, vocab, device))).detach().cpu().numpy()
    except Exception as err:  # noqa: BLE001 - any failure of tdx is the finding this table reports
        return f"{type(err).__name__}: {str(err).strip().splitlines()[0][:120] if str(err).strip() else ''}"
    if got.shape != want.shape:
        return f"shape {got.shape}, torch gives {want.shape}"
    if not np.allclose(got, want, rtol=1e-4, atol=1e-6, equal_nan=True):
        return f"max abs difference {float(np.nanmax(np.abs(got - want))):.3g}"
    return None


def run(devices, status) -> dict:
    """``{module: {device: None (passed) | reason | "not run here"}}`` for every module case."""
    import torch

    import tdx

    results = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for label, case in _cases().items():
            row = {}
            for dev in devices:
                st = status.get(dev)
                row[dev] = "not run here" if st is None or not st.available else _check(case, dev, tdx, torch)
            results[label] = row
    return results


def render(results: dict, devices) -> str:
    """The Markdown section: one row per ``tdx.nn`` module, one column per device, then the failures."""
    def cell(v):
        return "passed" if v is None else "not run here" if v == "not run here" else "failed"

    lines = ["", "## nn modules", "",
             "Each `tdx.nn` module gets torch's parameters and runs one float32 forward pass against torch's on the "
             "same device (on CPU for MLX).",
             "", "| module | " + " | ".join(devices) + " |", "|---|" + "---|" * len(devices)]
    lines += [f"| `nn.{name}` | " + " | ".join(cell(row[d]) for d in devices) + " |" for name, row in results.items()]
    lines.append("")
    for d in devices:
        cells = [row[d] for row in results.values()]
        if all(c == "not run here" for c in cells):
            lines.append(f"- {d}: not run here")
        else:
            lines.append(f"- {d}: {sum(c is None for c in cells)} of {len(cells)} modules passed")
    fails = [f"- `nn.{n}` on {d}: {row[d]}" for n, row in results.items() for d in devices
             if row[d] is not None and row[d] != "not run here"]
    lines += ["", "### nn failures", ""] + (fails or ["None."])
    return "\n".join(lines) + "\n"
