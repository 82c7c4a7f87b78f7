"""The catalog's section on torch's other namespaces: each public name's status, measured per device by running.

For each namespace of :data:`NAMESPACES` (``torch.jit``, ``torch.nn.attention``, ``torch.hub``...), every public
name of torch 2.13's module (from ``tdx.aliasing.torch_paths``; standard-library re-exports left out) is
``built`` (tdx has it with torch's meaning), ``refused`` (present, raising ``UnsupportedOpError`` at use: a
reason tdx cannot mean it), ``placeholder`` (present so imports run, not built yet: refuses at use) or
``missing``. Per device: a built name with a case in :data:`CASES` runs it against torch on CPU (``ok`` or the
failure); a refused name or placeholder is called, and is reported ``refused`` only if the call really raised
``UnsupportedOpError``. Imports torch (the oracle) only when run; must never count a refusal as built.
"""

from __future__ import annotations

import importlib

import numpy as np

NAMESPACES = ("torch.nn.attention", "torch.nn.attention.bias", "torch.nn.attention.flex_attention", "torch.jit",
              "torch.futures", "torch.library", "torch.hub", "torch.onnx", "torch.export", "torch.overrides",
              "torch.types", "torch.storage", "torch.xpu", "torch.mtia", "torch.utils.hooks", "torch.utils.benchmark",
              "torch.utils._pytree", "torch.amp", "torch.cuda.amp", "torch.func", "torch.distributions", "torch.fx",
              "torch.profiler", "torch.multiprocessing", "torch.utils.checkpoint", "torch.utils.tensorboard")
_JUNK = {"annotations", "TYPE_CHECKING"}


def _close(mine, ref) -> None:
    a = np.asarray(mine.detach().cpu().tolist() if hasattr(mine, "cpu") else mine, dtype=np.float64)
    b = np.asarray(ref.detach().tolist() if hasattr(ref, "detach") else ref, dtype=np.float64)
    if a.shape != b.shape or not np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True):
        diff = np.nanmax(np.abs(a - b)) if a.shape == b.shape else f"shape {a.shape} vs {b.shape}"
        raise AssertionError(f"differs from torch: max |diff| {diff}")


def _qkv(tdx, torch, device, q_len=5):
    g = torch.Generator().manual_seed(0)
    ts = [torch.randn(1, 2, n, 4, generator=g) for n in (q_len, 5, 5)]
    return ts, [tdx.tensor(t.numpy(), device=device) for t in ts]


def _sdpa_kernel(tdx, torch, device):
    (tq, tk, tv), (q, k, v) = _qkv(tdx, torch, device)
    import tdx.nn.attention as na

    with na.sdpa_kernel(na.SDPBackend.MATH):
        out = tdx.nn.functional.scaled_dot_product_attention(q, k, v)
    _close(out, torch.nn.functional.scaled_dot_product_attention(tq, tk, tv))


def _bias(name):
    def case(tdx, torch, device):
        (tq, tk, tv), (q, k, v) = _qkv(tdx, torch, device, 3)
        import tdx.nn.attention.bias as xb
        from torch.nn.attention import bias as tb

        out = tdx.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=getattr(xb, name)(3, 5))
        _close(out, torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=getattr(tb, name)(3, 5)))
    return case


def _flex(tdx, torch, device):
    import warnings

    import tdx.nn.attention.flex_attention as xf
    from torch.nn.attention import flex_attention as tf

    (tq, tk, tv), (q, k, v) = _qkv(tdx, torch, device)

    def causal(b, h, i, j):
        return i >= j

    def rel(s, b, h, i, j):
        return s + (i - j) * 0.1

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = tf.flex_attention(tq, tk, tv, score_mod=rel, block_mask=tf.create_block_mask(causal, 1, 1, 5, 5, "cpu"))
    _close(xf.flex_attention(q, k, v, score_mod=rel, block_mask=xf.create_block_mask(causal, 1, 1, 5, 5, device)), ref)


def _jit(kind):
    def case(tdx, torch, device):
        torch.manual_seed(0)
        ref = torch.nn.Linear(3, 2)
        mine = tdx.nn.Linear(3, 2).to(device)
        mine.load_state_dict({n: tdx.tensor(p.detach().numpy()) for n, p in ref.state_dict().items()})
        x = torch.randn(4, 3)
        xm = tdx.tensor(x.numpy(), device=device)
        if kind == "script":
            out, r = tdx.jit.script(mine)(xm), torch.jit.script(ref)(x)
        elif kind == "trace":
            out, r = tdx.jit.trace(mine, xm)(xm), torch.jit.trace(ref, x)(x)
        else:
            out, r = tdx.jit.wait(tdx.jit.fork(mine, xm)), ref(x)
        _close(out, r)
    return case


def _futures(tdx, torch, device):
    import tdx.futures as xf

    futs = [xf.Future(), xf.Future()]
    for i, f in enumerate(futs):
        f.set_result(tdx.full((2,), float(i), device=device))
    _close(xf.wait_all(futs)[1], torch.ones(2))


def _custom_op(tdx, torch, device):
    op = tdx.library.custom_op("tdxcatalog::double", lambda x: x * 2, mutates_args=())
    _close(op(tdx.ones(2, device=device)), torch.full((2,), 2.0))
    _close(tdx.ops.tdxcatalog.double(tdx.ones(2, device=device)), torch.full((2,), 2.0))


def _timer(tdx, torch, device):
    from tdx.utils import benchmark

    m = benchmark.Timer("x + x", globals={"x": tdx.ones(4, device=device)}).timeit(3)
    if not m.mean > 0:
        raise AssertionError(f"non-positive time {m.mean}")


def _tree_map(tdx, torch, device):
    from tdx.utils import _pytree

    out = _pytree.tree_map(lambda t: t + 1, {"a": (tdx.zeros(2, device=device),)})
    _close(out["a"][0], torch.ones(2))


def _absent(name):
    def case(tdx, torch, device):
        if getattr(tdx, name).is_available() != getattr(torch, name).is_available():
            raise AssertionError("is_available differs from torch")
    return case


CASES = {"torch.nn.attention.sdpa_kernel": _sdpa_kernel, "torch.nn.attention.SDPBackend": _sdpa_kernel,
         "torch.nn.attention.bias.causal_upper_left": _bias("causal_upper_left"),
         "torch.nn.attention.bias.causal_lower_right": _bias("causal_lower_right"),
         "torch.nn.attention.flex_attention.flex_attention": _flex,
         "torch.nn.attention.flex_attention.create_block_mask": _flex,
         "torch.jit.script": _jit("script"), "torch.jit.trace": _jit("trace"), "torch.jit.fork": _jit("fork"),
         "torch.jit.wait": _jit("fork"), "torch.futures.Future": _futures, "torch.futures.wait_all": _futures,
         "torch.library.custom_op": _custom_op, "torch.utils.benchmark.Timer": _timer,
         "torch.utils._pytree.tree_map": _tree_map, "torch.xpu.is_available": _absent("xpu"),
         "torch.mtia.is_available": _absent("mtia")}


def _status(obj) -> str:
    from ..aliasing import refused

    if not refused.is_refused(obj):
        return "built"
    return "placeholder" if getattr(obj, "__tdx_refused__", None) == refused.NOT_BUILT else "refused"


def _refusal_holds(obj) -> bool:
    import tdx

    try:
        obj() if callable(obj) else obj.anything
    except tdx.UnsupportedOpError:
        return True
    except Exception:  # noqa: BLE001 - anything else means the refusal does not hold
        return False
    return False


def run(devices, available) -> dict:
    """``{namespace: {name: (status, {device: result})}}``; results ``ok``, ``refused``, ``built``, ``not run
    here`` or a failure text."""
    import torch

    import tdx
    from ..aliasing import torch_paths

    out = {}
    table = torch_paths.data()
    for path in NAMESPACES:
        module = importlib.import_module(torch_paths.tdx_path(path))
        rows = {}
        for name, code in sorted(table[path]["names"].items()):
            if ":" in code or name in _JUNK:
                continue
            try:
                obj = getattr(module, name)
            except AttributeError:
                rows[name] = ("missing", {})
                continue
            status = _status(obj)
            results = {}
            for dev in devices:
                row = available.get(dev)
                if row is None or not row.available:
                    results[dev] = "not run here"
                elif status != "built":
                    results[dev] = "refused" if _refusal_holds(obj) else "refusal broken"
                elif f"{path}.{name}" in CASES:
                    try:
                        CASES[f"{path}.{name}"](tdx, torch, dev)
                        results[dev] = "ok"
                    except Exception as err:  # noqa: BLE001 - reported as the row's failure
                        results[dev] = f"failed: {type(err).__name__}: {str(err)[:80]}"
                else:
                    results[dev] = "built"
            rows[name] = (status, results)
        out[path] = rows
    return out


def render(results: dict, devices) -> str:
    """The Markdown section: a summary line per namespace, then a table of its names."""
    lines = ["", "## torch's other namespaces", "",
             "Per name: built (torch's meaning), refused (a reason tdx cannot mean it), placeholder (importable, not "
             "built yet), missing. Per device: `ok` ran against torch on CPU, `refused` raised UnsupportedOpError "
             "when called, `built` has no run case here.", ""]
    for path, rows in results.items():
        counts = {}
        for status, _ in rows.values():
            counts[status] = counts.get(status, 0) + 1
        lines.append(f"### {path}: {len(rows)} names: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
        lines += ["", "| name | status | " + " | ".join(devices) + " |",
                  "|:--|:--|" + "|".join(":-:" for _ in devices) + "|"]
        for name, (status, res) in rows.items():
            lines.append(f"| `{name}` | {status} | " + " | ".join(res.get(d, "-") for d in devices) + " |")
        lines.append("")
    return "\n".join(lines) + "\n"
