"""Support catalog: which torch functions tdx runs like torch on which device, as a Markdown table.

``python -m tdx catalog`` calls :func:`main`. Each function of the catalog runs on small
fixed inputs in a couple of dtypes (float32 and int64) on every available device, and is
compared with torch on CPU: same values (per-dtype tolerances), dtype and shape, or, where
torch raises, a TdxError of the same builtin kind. Sampling functions are compared through
what their draws must satisfy (a sorted permutation, the support of a distribution...).
The table has one row per function and one column per device (cpu, cuda, mps, mlx:gpu,
mlx:cpu) marked passed, failed or not run here, then a summary line per device and the
failures with their reasons; then the same for every ``tdx.nn`` module (:mod:`.nn_catalog`); then
how many of torch's public names tdx has, built and refused counted apart (:mod:`.name_counts`); then
each name of torch's other namespaces with its status per device (:mod:`.module_catalog`).

This module imports torch (the oracle) only when run; ``import tdx`` never imports it.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np

from .namespace_cases import MLX_CPU_STREAM_NOTE, NAMESPACE_CASES

DEVICES = ("cpu", "cuda", "mps", "mlx:gpu", "mlx:cpu")
DTYPES = ("float32", "int64", "float16", "bool")
ALL_DTYPES = ("float32", "int64", "float16", "bool", "complex64", "bfloat16", "int8", "uint8")
_BUILTINS = (IndexError, TypeError, ValueError, RuntimeError)

_A = [[0.5, -1.25, 2.0, 3.5], [-0.75, 1.5, 0.25, -2.0], [1.0, 0.0, -3.0, 2.5]]
_B = [[1.5, 2.5, -1.5, 1.25], [-2.5, 1.5, 3.25, 2.5], [1.25, -3.5, 2.5, 4.5]]  # non-zero when truncated
_INDEX = [[0, 2, 1, 3], [2, 0, 0, 1], [1, 2, 1, 0]]
_PERM = [[2, 0, 1, 2], [0, 1, 2, 0], [1, 2, 0, 1]]  # a permutation of rows in every column
_MASK = [[True, False, True, False], [False, False, True, True], [True, True, False, False]]


class Kit:
    """The inputs of one case for one framework module (``tdx`` or ``torch``), device and dtype."""

    def __init__(self, m, device: str, dtype: str):
        self.m, self.device, self.dtype = m, device, dtype
        self.a = self.t(_A)
        self.b = self.t(_B)
        self.u = self.t(np.asarray(_A) * 4)  # distinct values in every dtype
        self.idx = self.t(_INDEX, "int64")
        self.perm = self.t(_PERM, "int64")
        self.mask = self.t(_MASK, "bool")
        self.row = self.t(_B[0])
        self.cube = self.t(np.arange(24).reshape(2, 3, 4) / 4 - 2)

    def t(self, data, dtype=None):
        """A tensor of ``data`` as ``dtype`` (the kit's dtype by default) on the kit's device."""
        m = self.m
        return m.tensor(np.asarray(data), dtype=getattr(m, dtype or self.dtype), device=self.device)


def _inplace(name, *args):
    def run(k):
        x = k.a.clone()
        getattr(x, name)(*[a(k) if callable(a) else a for a in args])
        return x

    return run


# name -> fn(kit) returning a tensor or a tuple of tensors
CASES = {
    # elementwise math
    **{f"torch.{n}": (lambda n: lambda k: getattr(k.m, n)(k.a))(n)
       for n in ("abs", "neg", "exp", "exp2", "log", "log1p", "log2", "sqrt", "rsqrt", "sin", "cos", "tanh",
                 "sigmoid", "erf", "floor", "ceil", "round", "sign", "reciprocal")},
    "torch.pow": lambda k: k.m.pow(k.a.abs(), 2), "torch.maximum": lambda k: k.m.maximum(k.a, k.b),
    "torch.minimum": lambda k: k.m.minimum(k.a, k.b), "torch.fmod": lambda k: k.m.fmod(k.a, k.b),
    "torch.remainder": lambda k: k.m.remainder(k.a, k.b),
    # comparisons and logic
    **{f"torch.{n}": (lambda n: lambda k: getattr(k.m, n)(k.a, k.b))(n)
       for n in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or")},
    **{f"torch.{n}": (lambda n: lambda k: getattr(k.m, n)(k.a))(n)
       for n in ("logical_not", "isnan", "isinf", "isfinite")},
    "torch.any": lambda k: k.m.any(k.a, 1), "torch.all": lambda k: k.m.all(k.a, 0),
    # reductions and scans
    "torch.sum": lambda k: k.m.sum(k.a, 1), "torch.mean": lambda k: k.m.mean(k.a, 0),
    "torch.prod": lambda k: k.m.prod(k.a, 1), "torch.max": lambda k: tuple(k.m.max(k.u, 1)),
    "torch.min": lambda k: tuple(k.m.min(k.u, 0)), "torch.amax": lambda k: k.m.amax(k.a, 1),
    "torch.amin": lambda k: k.m.amin(k.a, (0, 1)), "torch.argmax": lambda k: k.m.argmax(k.u, 1),
    "torch.argmin": lambda k: k.m.argmin(k.u), "torch.std": lambda k: k.m.std(k.a, 1),
    "torch.var": lambda k: k.m.var(k.a, 0, correction=0), "torch.norm": lambda k: k.m.norm(k.a, 2, 1),
    "torch.logsumexp": lambda k: k.m.logsumexp(k.a, 1), "torch.cumsum": lambda k: k.m.cumsum(k.a, 1),
    "torch.cumprod": lambda k: k.m.cumprod(k.a, 0),
    "torch.softmax": lambda k: k.m.softmax(k.a, 1), "torch.log_softmax": lambda k: k.m.log_softmax(k.a, 0),
    "torch.softmax(dtype=)": lambda k: k.m.softmax(k.a, 1, dtype=k.m.float32),
    # matrices
    "torch.matmul": lambda k: k.m.matmul(k.a, k.b.T), "torch.mm": lambda k: k.m.mm(k.a.T, k.b),
    "torch.bmm": lambda k: k.m.bmm(k.cube, k.cube.transpose(1, 2)),
    "torch.einsum": lambda k: k.m.einsum("ij,kj->ik", k.a, k.b), "torch.outer": lambda k: k.m.outer(k.row, k.row),
    "torch.tril": lambda k: k.m.tril(k.a), "torch.triu": lambda k: k.m.triu(k.a, 1),
    "torch.diag": lambda k: k.m.diag(k.a, 1), "torch.trace": lambda k: k.m.trace(k.a),
    # gather, scatter, masks
    "torch.gather": lambda k: k.m.gather(k.a, 1, k.idx),
    "torch.scatter": lambda k: k.m.scatter(k.a, 0, k.perm, k.b),
    "torch.scatter_add": lambda k: k.m.scatter_add(k.a, 1, k.idx, k.b),
    "torch.index_select": lambda k: k.m.index_select(k.a, 1, k.idx[0]),
    "torch.masked_fill": lambda k: k.m.masked_fill(k.a, k.mask, -7),
    "torch.masked_select": lambda k: k.m.masked_select(k.a, k.mask),
    "torch.nonzero": lambda k: k.m.nonzero(k.a), "torch.where": lambda k: k.m.where(k.mask, k.a, k.b),
    # ordering
    "torch.topk": lambda k: tuple(k.m.topk(k.u, 2, 1)), "torch.sort": lambda k: tuple(k.m.sort(k.a, 1)),
    "torch.argsort": lambda k: k.m.argsort(k.a, 0, descending=True),
    "torch.unique": lambda k: k.m.unique(k.a, return_inverse=True, return_counts=True),
    # rearranging
    "torch.roll": lambda k: k.m.roll(k.a, (1, -2), (0, 1)), "torch.flip": lambda k: k.m.flip(k.a, (0, 1)),
    "Tensor.repeat": lambda k: k.a.repeat(2, 1, 2),
    "torch.repeat_interleave": lambda k: k.m.repeat_interleave(k.a, k.idx[1], 1),
    "torch.tile": lambda k: k.m.tile(k.a, (2,)), "torch.narrow": lambda k: k.m.narrow(k.a, 1, -3, 2),
    "torch.unbind": lambda k: k.m.unbind(k.a, 1), "torch.movedim": lambda k: k.m.movedim(k.cube, (0, 2), (2, 0)),
    # conversions and copies
    **{f"Tensor.{n}": (lambda n: lambda k: getattr(k.a, n)())(n)
       for n in ("float", "half", "bfloat16", "long", "int", "bool", "clone", "detach")},
    "Tensor.to(dtype)": lambda k: k.a.to(k.m.int8),
    "Tensor.copy_": _inplace("copy_", lambda k: k.b), "Tensor.fill_": _inplace("fill_", 2.5),
    "Tensor.zero_": _inplace("zero_"),
    # in-place arithmetic
    "Tensor.add_": _inplace("add_", lambda k: k.b), "Tensor.sub_": _inplace("sub_", lambda k: k.row),
    "Tensor.mul_": _inplace("mul_", 3), "Tensor.div_": _inplace("div_", lambda k: k.b),
    "Tensor.pow_": _inplace("pow_", 2), "Tensor.clamp_": _inplace("clamp_", -1, 2),
    "Tensor.fmod_": _inplace("fmod_", lambda k: k.b), "Tensor.remainder_": _inplace("remainder_", 2),
    "Tensor.neg_": _inplace("neg_"), "Tensor.abs_": _inplace("abs_"), "Tensor.exp_": _inplace("exp_"),
    "Tensor.floor_divide_": _inplace("floor_divide_", lambda k: k.b),
    "Tensor.masked_fill_": _inplace("masked_fill_", lambda k: k.mask, 1),
    # sampling: compared through what every draw must satisfy
    "torch.multinomial": lambda k: k.m.multinomial(k.t([[0, 1, 0, 2], [3, 0, 1, 0]], "float32"), 2).sort(1).values,
    "torch.randperm": lambda k: k.m.randperm(9, device=k.device).sort().values,
    "torch.bernoulli": lambda k: k.m.bernoulli(k.t([[0, 1, 1], [1, 0, 0]])),
    "Tensor.normal_": lambda k: k.a.clone().normal_(0, 1).isfinite(),
    "Tensor.uniform_": lambda k: (k.a.clone().uniform_(2, 3) - 2.5).abs() <= 0.71,  # |re|, |im| < 0.5
}


CASES.update(NAMESPACE_CASES)


def _flatten(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _compare(fn, tdx_mod, torch_mod, device: str, dtype: str):
    """None when ``fn`` agrees on ``device`` with torch on CPU for ``dtype``, else the reason."""
    import tdx
    from ..testing.parity import assert_close

    try:
        expected = fn(Kit(torch_mod, "cpu", dtype))
    except _BUILTINS as err:
        kind = next(b for b in _BUILTINS if isinstance(err, b))
        try:
            fn(Kit(tdx_mod, device, dtype))
        except kind as got:
            if isinstance(got, tdx.TdxError):
                return None
            return f"{dtype}: raised untyped {type(got).__name__} ({_first_line(got)})"
        except Exception as got:  # noqa: BLE001 - any other outcome is the finding we report
            return f"{dtype}: raised {type(got).__name__} where torch raises {kind.__name__}"
        return f"{dtype}: returned where torch raises {kind.__name__} ({_first_line(err)})"
    try:
        got = fn(Kit(tdx_mod, device, dtype))
    except Exception as err:  # noqa: BLE001 - any failure of tdx is the finding we report
        return f"{dtype}: {type(err).__name__}: {_first_line(err)}"
    got, expected = _flatten(got), _flatten(expected)
    if len(got) != len(expected):
        return f"{dtype}: {len(got)} outputs, torch gives {len(expected)}"
    for g, e in zip(got, expected):
        try:
            assert_close(g, e, rtol=_TOL.get(str(e.dtype).rsplit(".", 1)[-1], (0, 0))[0],
                         atol=_TOL.get(str(e.dtype).rsplit(".", 1)[-1], (0, 0))[1])
        except AssertionError as err:
            return f"{dtype}: {_first_line(err)}"
    return None


_TOL = {"float32": (1e-5, 1e-5), "float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2), "float64": (1e-6, 1e-6),
        "complex64": (1e-5, 1e-5)}


def _first_line(err) -> str:
    text = str(err).strip().splitlines()
    return (text[0] if text else type(err).__name__)[:160]


def run(devices=DEVICES, names=None, dtypes=DTYPES) -> dict:
    """Run the catalog: ``{function: {device: None (passed) | reason | "not run here"}}``.

    Raises:
        ImportError: torch (the oracle) is not installed.
    """
    import torch

    import tdx
    from .. import backends

    status = {r.device: r for r in backends.available()}
    torch.manual_seed(0)
    tdx.manual_seed(0)
    results = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns on lossy casts the cases make on purpose
        for name, fn in CASES.items():
            if names and name not in names:
                continue
            results[name] = _row(fn, devices, dtypes, status, tdx, torch)
    return results


def _row(fn, devices, dtypes, status, tdx, torch) -> dict:
    row = {}
    for dev in devices:
        st = status.get(dev)
        if st is None or not st.available:
            row[dev] = "not run here"
            continue
        reasons = [r for r in (_compare(fn, tdx, torch, dev, dt) for dt in dtypes) if r]
        row[dev] = "; ".join(reasons) or None
    return row


def _cell(value) -> str:
    return "passed" if value is None else "not run here" if value == "not run here" else "failed"


def render(results: dict, devices=DEVICES, seconds: float | None = None, dtypes=DTYPES) -> str:
    """The Markdown report: the table, a summary line per device, and the failures with reasons."""
    lines = ["# tdx support catalog", "",
             f"Each function runs on fixed inputs in {', '.join(dtypes)} and is compared with torch on CPU.", "",
             MLX_CPU_STREAM_NOTE, "",
             "| function | " + " | ".join(devices) + " |", "|---|" + "---|" * len(devices)]
    for name, row in results.items():
        lines.append(f"| `{name}` | " + " | ".join(_cell(row[d]) for d in devices) + " |")
    lines += ["", "## Summary", ""]
    total = len(results)
    for d in devices:
        cells = [row[d] for row in results.values()]
        if all(c == "not run here" for c in cells):
            lines.append(f"- {d}: not run here")
            continue
        passed = sum(c is None for c in cells)
        lines.append(f"- {d}: {passed} of {total} passed ({100.0 * passed / max(total, 1):.1f}%)")
    failures = [(name, d, row[d]) for name, row in results.items() for d in devices
                if row[d] is not None and row[d] != "not run here"]
    lines += ["", "## Failures", ""]
    lines += [f"- `{name}` on {d}: {why}" for name, d, why in failures] or ["None."]
    if seconds is not None:
        lines += ["", f"_Ran in {seconds:.1f} s._"]
    return "\n".join(lines) + "\n"


README_BEGIN, README_END = "<!-- catalog:begin -->", "<!-- catalog:end -->"


def readme_section(report: str) -> str:
    """The report as the README holds it: collapsed, its headings as bold lines, between the markers."""
    body = report.split("\n", 2)[2]  # without the "# tdx support catalog" title
    body = body.replace("## Summary", "**Summary**").replace("## Failures", "**Failures**")
    body = body.replace("_Ran in", "_Last run in")
    return f"{README_BEGIN}\n<details><summary>function x device table</summary>\n\n{body}\n</details>\n{README_END}"


def update_readme(path: str, report: str) -> None:
    """Replace the catalog between the README's markers with ``report``.

    Raises:
        ValueError: the file lacks the markers.
    """
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    start, end = text.find(README_BEGIN), text.find(README_END)
    if start < 0 or end < start:
        raise ValueError(f"{path} has no {README_BEGIN} ... {README_END} section to replace")
    text = text[:start] + readme_section(report) + text[end + len(README_END):]
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def main(argv=None) -> int:
    """``python -m tdx catalog [--output FILE] [--readme README.md] [--devices D,...] [--dtypes T,...|all]
    [--only NAME ...] [--strict]``.

    Returns:
        0, or 1 with ``--strict`` when a function fails on a device that ran.
    """
    parser = argparse.ArgumentParser(prog="python -m tdx catalog",
                                     description="check torch functions per device against torch on CPU")
    parser.add_argument("--output", "-o", help="write the Markdown report here (default: stdout)")
    parser.add_argument("--devices", help=f"comma-separated subset of {', '.join(DEVICES)}")
    parser.add_argument("--dtypes", help=f"comma-separated dtypes (default {','.join(DTYPES)}); 'all' is "
                                         f"{','.join(ALL_DTYPES)}")
    parser.add_argument("--only", nargs="*", help="function names as the table spells them")
    parser.add_argument("--strict", action="store_true", help="exit 1 when any function fails")
    parser.add_argument("--readme", help="also rewrite the table between the catalog markers of this README")
    args = parser.parse_args(argv)
    devices = DEVICES if not args.devices else tuple(d.strip() for d in args.devices.split(","))
    unknown = [d for d in devices if d not in DEVICES]
    if unknown:
        parser.error(f"unknown device(s) {unknown}; accepted: {', '.join(DEVICES)}")
    dtypes = DTYPES if not args.dtypes else ALL_DTYPES if args.dtypes == "all" else \
        tuple(d.strip() for d in args.dtypes.split(","))
    bad = [d for d in dtypes if d not in ALL_DTYPES + ("float64", "int16", "int32")]
    if bad:
        parser.error(f"unknown dtype(s) {bad}; accepted: {', '.join(ALL_DTYPES)}, float64, int16, int32")
    try:
        start = time.perf_counter()
        results = run(devices, set(args.only) if args.only else None, dtypes)
    except ImportError as err:
        print(f"the catalog needs torch as its oracle: {err}", file=sys.stderr)
        return 2
    nn_results = {}
    if not args.only:
        from .. import backends
        from . import nn_catalog

        nn_results = nn_catalog.run(devices, {r.device: r for r in backends.available()})
    report = render(results, devices, time.perf_counter() - start, dtypes)
    if nn_results:
        report += nn_catalog.render(nn_results, devices)
    if not args.only:
        from .. import backends
        from . import module_catalog, name_counts

        report += name_counts.render(name_counts.count())
        report += module_catalog.render(module_catalog.run(devices, {r.device: r for r in backends.available()}),
                                        devices)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(report)
    elif not args.readme:
        sys.stdout.write(report)
    if args.readme:
        update_readme(args.readme, report)
    failed = any(v is not None and v != "not run here" for rows in (results, nn_results) for row in rows.values()
                 for v in row.values())
    return 1 if args.strict and failed else 0


if __name__ == "__main__":
    sys.exit(main())
