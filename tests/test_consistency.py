"""The public surface against real torch: tdx adds no name torch lacks (beyond documented extensions)."""

from __future__ import annotations

import inspect

import pytest
import torch

import tdx

# names tdx adds on purpose; each is documented in the README
NAMESPACE_EXTENSIONS = {"TdxError", "config", "backends", "initial_seed", "Tensor", "Size", "device", "dtype"}
TENSOR_EXTENSIONS = {"native", "executor", "is_mlx", "mlx"}


def test_namespace_adds_no_undocumented_names():
    extra = {n for n in tdx.__all__ if not hasattr(torch, n)} - NAMESPACE_EXTENSIONS
    assert not extra, f"tdx exports names torch does not have: {sorted(extra)}"


def test_tensor_adds_no_undocumented_methods():
    public = {n for n in dir(tdx.Tensor) if not n.startswith("_")}
    extra = {n for n in public if not hasattr(torch.Tensor, n)} - TENSOR_EXTENSIONS
    assert not extra, f"tdx.Tensor has names torch.Tensor lacks: {sorted(extra)}"


def test_dtypes_mirror_torch():
    for name in ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
                 "bool", "complex64", "complex128", "half", "float", "double", "short", "int", "long",
                 "cfloat", "cdouble"):
        d, t = getattr(tdx, name), getattr(torch, name)
        assert d.itemsize == t.itemsize and d.is_floating_point == t.is_floating_point, name
        assert d.is_complex == t.is_complex and d.is_signed == t.is_signed, name


def test_promote_types_matches_torch_everywhere():
    names = [d.name for d in tdx._dtypes.ALL_DTYPES]
    for a in names:
        for b in names:
            if {a, b} & {"bfloat16", "float16"} and {a, b} & {"complex64", "complex128"}:
                continue  # torch's complex32 has no tdx counterpart
            want = torch.promote_types(getattr(torch, a), getattr(torch, b))
            got = tdx.promote_types(getattr(tdx, a if a != "bool" else "bool"), getattr(tdx, b))
            assert got.name == str(want).split(".")[-1], (a, b)


def test_result_type_tiers_match_torch():
    cases = [((3,), "uint8", (), "int8"), ((3,), "int32", (), "int64"), ((3,), "float16", (), "float64"),
             ((), "int64", (), "float16"), ((3,), "bool", (), "int32"), ((3,), "int8", (3,), "uint8")]
    for sa, da, sb, db in cases:
        ta, tb = torch.zeros(sa, dtype=getattr(torch, da)), torch.zeros(sb, dtype=getattr(torch, db))
        xa, xb = tdx.zeros(sa, dtype=getattr(tdx, da)), tdx.zeros(sb, dtype=getattr(tdx, db))
        assert tdx.result_type(xa, xb).name == str(torch.result_type(ta, tb)).split(".")[-1]
        for s in (1, 2.5, True, 1j):
            want = str(torch.result_type(ta, s)).split(".")[-1]
            if want == "complex32":  # no tdx counterpart: refused, never silently widened
                with pytest.raises(tdx.DtypeError):
                    tdx.result_type(xa, s)
                continue
            assert tdx.result_type(xa, s).name == want, (da, s)


def test_functions_take_torch_parameter_names():
    """Where torch documents a Python signature, tdx's function accepts the same parameter names."""
    for name in ("tensor", "zeros", "arange", "full", "linspace", "eye", "randint"):
        ours = set(inspect.signature(getattr(tdx, name)).parameters)
        assert {"dtype", "device"} <= ours, name
