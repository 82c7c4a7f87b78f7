"""tdx.save / tdx.load against torch.save / torch.load: both directions, every dtype, views
sharing storage, Parameters and state dicts, map_location forms, weights_only refusal, and
loading with torch unimportable."""

from __future__ import annotations

import collections
import copy
import io
import os
import pickle
import subprocess
import sys
import types
import warnings
import zipfile

import numpy as np
import pytest
import torch

import tdx
from conftest import torch_twin
from tdx.testing.parity import assert_close

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
          "complex64", "complex128"]


def _values(dtype):
    base = np.array([[1.5, -2.25, 3.0], [0.0, 7.0, -1.0]])
    if dtype == "bool":
        return base > 0
    if dtype == "uint8":
        return np.abs(base).astype(np.uint8)
    if dtype.startswith("int"):
        return base.astype(np.int64)
    if dtype.startswith("complex"):
        return base + 1j * base[::-1]
    return base


def _pair(dtype, device):
    arr = _values(dtype)
    arr = arr.astype(np.complex64) if dtype == "complex64" else arr
    t = torch.tensor(arr).to(getattr(torch, dtype))
    if dtype == "complex128" and device.startswith("mlx"):
        pytest.skip("MLX has no complex128")
    return tdx.tensor(arr, dtype=getattr(tdx, dtype), device=device), t


@pytest.mark.parametrize("dtype", DTYPES)
def test_tdx_save_torch_load_every_dtype(device, dtype, tmp_path):
    x, t = _pair(dtype, device)
    path = tmp_path / "ckpt.pt"
    tdx.save({"x": x, "row": x[1], "xt": x.t()}, path)
    got = torch.load(path)  # weights_only=True: only torch's safe names in the file
    t = t.to(torch_twin(device))  # torch restores a cuda tensor on cuda, an MLX one on cpu
    for key, expected in (("x", t), ("row", t[1]), ("xt", t.t())):
        assert got[key].dtype == expected.dtype
        assert torch.equal(got[key], expected), key
    assert got["xt"].stride() == t.t().stride() and got["row"].storage_offset() == 3
    assert got["x"].untyped_storage().data_ptr() == got["xt"].untyped_storage().data_ptr()


@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_save_tdx_load_every_dtype(device, dtype, tmp_path):
    x, t = _pair(dtype, device)
    path = tmp_path / "ckpt.pt"
    torch.save({"x": t, "xt": t.t(), "step": t[:, ::2]}, path)
    got = tdx.load(path, map_location=device)
    for key, expected in (("x", t), ("xt", t.t()), ("step", t[:, ::2])):
        assert got[key].dtype is x.dtype and got[key].device == x.device
        assert_close(got[key], expected, rtol=0, atol=0)
        assert got[key].stride() == expected.stride()


def test_views_share_storage_after_load(device, tmp_path):
    base = tdx.arange(24.0, device=device)
    views = {"base": base, "mat": base[2:14].view(3, 4), "t": base[2:14].view(3, 4).t(), "step": base[1::5],
             "col": base.view(4, 6)[:, 1:3], "scalar": base[7], "exp": base[:3].unsqueeze(0).expand(2, 3)}
    for saver in ("tdx", "torch"):
        path = tmp_path / f"{saver}.pt"
        if saver == "tdx":
            tdx.save(views, path)
        else:
            torch.save({k: torch.from_numpy(v.numpy(force=True)) if k == "base" else None for k, v in views.items()},
                       path)
            tb = torch.arange(24.0)
            torch.save({"base": tb, "mat": tb[2:14].view(3, 4), "t": tb[2:14].view(3, 4).t(), "step": tb[1::5],
                        "col": tb.view(4, 6)[:, 1:3], "scalar": tb[7], "exp": tb[:3].unsqueeze(0).expand(2, 3)}, path)
        got = tdx.load(path, map_location=device)
        for key, v in views.items():
            assert_close(got[key], v.numpy(force=True), rtol=0, atol=0)
            assert got[key].stride() == v.stride(), key
            assert got[key].storage_offset() == v.storage_offset(), key
        got["base"].mul_(-1)  # a write through the storage is seen by every view
        for key, v in views.items():
            assert_close(got[key], -v.numpy(force=True), rtol=0, atol=0, msg=f"{saver} {key}")


_VIEWS_3D = {  # 3-d strided views of a (2, 4, 3) tensor: permuted, stepped, offset, overrunning windows
    "perm": lambda x: x.permute(2, 0, 1), "step": lambda x: x[:, ::2], "step_off": lambda x: x[:, 1:, ::2],
    "tail": lambda x: x.transpose(0, 2)[1:], "inner": lambda x: x[1:, 1:3, 1:], "inner_t": lambda x: x[:, 1:, 1:].mT,
    "rows": lambda x: x.reshape(4, 2, 3)[1:, :, ::2].permute(1, 0, 2),
    "fill_row": lambda x: x[:, :, 1:],  # the inner layout ends exactly at its row's end
}


@pytest.mark.parametrize("name", sorted(_VIEWS_3D))
def test_3d_strided_views_stay_views(device, name, tmp_path):
    """A 3-d strided view saved beside its base is a view of the one storage after loading, in both
    directions, as torch.save/torch.load of the same views gives."""
    view = _VIEWS_3D[name]
    tb = torch.arange(24.0, device=torch_twin(device)).reshape(2, 4, 3)  # where torch.load restores tdx's tensors
    base = tdx.arange(24.0, device=device).reshape(2, 4, 3)
    tdx.save({"base": base, "v": view(base)}, tmp_path / "tdx.pt")
    got = torch.load(tmp_path / "tdx.pt")  # tdx.save -> torch.load: the two alias, strides as torch's
    assert got["v"].untyped_storage().data_ptr() == got["base"].untyped_storage().data_ptr()
    assert (got["v"].stride(), got["v"].storage_offset()) == (view(tb).stride(), view(tb).storage_offset())
    torch.testing.assert_close(got["v"], view(tb), rtol=0, atol=0)
    got["base"].mul_(-1)
    torch.testing.assert_close(got["v"], -view(tb), rtol=0, atol=0)
    torch.save({"base": tb, "v": view(tb)}, tmp_path / "torch.pt")
    for path in (tmp_path / "torch.pt", tmp_path / "tdx.pt"):  # -> tdx.load: a write to the base reaches the view
        got = tdx.load(path, map_location=device)
        real = [d for d in range(3) if view(tb).shape[d] > 1]  # a size-1 dim's stride is free
        assert [got["v"].stride(d) for d in real] == [view(tb).stride(d) for d in real]
        assert got["v"].storage_offset() == view(tb).storage_offset()
        assert_close(got["v"], view(tb).cpu().numpy(), rtol=0, atol=0)
        got["base"].add_(100)
        assert_close(got["v"], (view(tb) + 100).cpu().numpy(), rtol=0, atol=0, msg=f"{path.name} {name}")


def test_state_dict_round_trip_with_torch_module(device, tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    path = tmp_path / "sd.pt"
    torch.save(model.state_dict(), path)
    sd = tdx.load(path, map_location=device)
    assert isinstance(sd, collections.OrderedDict) and list(sd) == list(model.state_dict())
    assert sd._metadata == model.state_dict()._metadata
    for k, v in model.state_dict().items():
        assert sd[k].device == tdx.device(device)
        assert_close(sd[k], v, rtol=0, atol=0)
    sd["0.weight"].add_(1.0)  # the optimizer idiom on the loaded tensors
    tdx.save(sd, path)
    other = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    other.load_state_dict(torch.load(path))
    assert torch.equal(other[0].weight, model[0].weight + 1.0)
    assert torch.equal(other[1].num_batches_tracked, model[1].num_batches_tracked)


def test_parameters_and_requires_grad(device, tmp_path):
    path = tmp_path / "p.pt"
    torch.save({"p": torch.nn.Parameter(torch.ones(2, 2)), "frozen": torch.nn.Parameter(torch.ones(1),
                                                                                     requires_grad=False)}, path)
    got = tdx.load(path, map_location=device)
    assert got["p"].requires_grad and not got["frozen"].requires_grad and got["p"].is_leaf
    got["p"].sum().backward()
    assert_close(got["p"].grad, torch.ones(2, 2))
    w = tdx.ones(3, device=device, requires_grad=True)
    tdx.save({"w": w}, path)
    assert torch.load(path)["w"].requires_grad
    assert tdx.load(path)["w"].requires_grad
    buf = io.BytesIO()
    tdx.save(w * 2, buf)  # a non-leaf: saved with requires_grad, loaded as a leaf, as torch
    buf.seek(0)
    loaded = torch.load(buf)  # on the device torch restores tdx's tensor to
    assert loaded.requires_grad and loaded.is_leaf
    assert torch.equal(loaded, torch.full((3,), 2.0, device=torch_twin(device)))
    buf.seek(0)
    mine = tdx.load(buf, map_location=device)
    assert mine.requires_grad and mine.is_leaf


def test_python_objects_both_ways(device, tmp_path):
    obj = {"n": 3, "f": 2.5, "c": 1 + 2j, "s": "text", "b": b"\x00\xff", "ba": bytearray(b"ab"), "set": {1, 2},
           "none": None, "tuple": (1, [2, {"x": 3}]), "nested": [[], {}], "big": 2 ** 70}
    path = tmp_path / "o.pt"
    tdx.save(dict(obj, dtype=tdx.float16, dev=tdx.device("cpu"), size=tdx.Size([2, 3])), path)
    loaded = torch.load(path)
    assert {k: loaded[k] for k in obj} == obj
    assert loaded["dtype"] is torch.float16 and loaded["dev"] == torch.device("cpu")
    assert type(loaded["size"]) is torch.Size and loaded["size"] == (2, 3)
    torch.save(dict(obj, dtype=torch.bfloat16, dev=torch.device("cpu"), size=torch.Size([4])), path)
    mine = tdx.load(path, map_location=device)
    assert {k: mine[k] for k in obj} == obj
    assert mine["dtype"] is tdx.bfloat16 and mine["dev"] == tdx.device("cpu") and mine["size"] == tdx.Size([4])


def test_mlx_tensors_load_on_cpu(device, tmp_path):
    x = tdx.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)
    path = tmp_path / "m.pt"
    tdx.save({"x": x, "xt": x.t()}, path)
    # torch, no map_location: an MLX tensor loads on cpu, a cuda one on cuda (the device torch_twin names)
    want = torch.tensor([[1.0, 3.0], [2.0, 4.0]], device=torch_twin(device))
    assert torch.equal(torch.load(path)["xt"], want)
    on_cpu = tdx.load(path, map_location="cpu")
    assert on_cpu["x"].device == tdx.device("cpu") and on_cpu["xt"].stride() == (1, 2)
    assert tdx.load(path)["x"].device == x.device  # tdx remembers the device it was saved from


def test_map_location_forms(device, tmp_path):
    path = tmp_path / "m.pt"
    torch.save({"a": torch.arange(4.0)}, path)
    assert tdx.load(path, map_location=device)["a"].device == tdx.device(device)
    assert tdx.load(path, map_location=tdx.device(device))["a"].device == tdx.device(device)
    assert tdx.load(path, map_location={"cpu": device})["a"].device == tdx.device(device)
    seen = []

    def to_device(storage, location):
        seen.append(location)
        return storage.to(device)

    assert tdx.load(path, map_location=to_device)["a"].device == tdx.device(device) and seen == ["cpu"]
    assert tdx.load(path, map_location=lambda s, loc: None)["a"].device == tdx.device("cpu")
    with pytest.raises(TypeError) as info:
        tdx.load(path, map_location=3)
    assert isinstance(info.value, tdx.TdxError)


def test_cuda_location_follows_device_translation(device, tmp_path):
    path = tmp_path / "cuda.pt"

    def cuda_tag(obj):
        return "cuda:0" if getattr(obj, "device", None) is not None and obj.device.type == "cpu" else None

    torch.serialization.register_package(-100, cuda_tag, lambda obj, location: None)
    try:
        torch.save({"w": torch.arange(3.0)}, path)
    finally:
        torch.serialization._package_registry[:] = [
            p for p in torch.serialization._package_registry if p[1] is not cuda_tag]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = tdx.zeros(1, device="cuda:0").device  # where tdx's config sends cuda here
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        got = tdx.load(path)["w"]
    assert got.device == expected
    assert_close(got, torch.arange(3.0), rtol=0, atol=0)
    assert tdx.load(path, map_location={"cuda:0": device})["w"].device == tdx.device(device)


class Payload:
    """Runs a shell command when unpickled."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class Point:
    def __init__(self, x):
        self.x = x


def test_weights_only_refuses_code(device, tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    torch.save({"w": torch.ones(1), "evil": Payload(marker)}, path)
    with pytest.raises(pickle.UnpicklingError) as expected:
        torch.load(path)
    with pytest.raises(type(expected.value)) as got:
        tdx.load(path, map_location=device)
    assert isinstance(got.value, tdx.TdxError) and "system" in str(got.value)
    assert not marker.exists()
    tdx.load(path, map_location=device, weights_only=False)
    assert marker.exists()  # trusted loading runs it, as torch's


def test_safe_globals(device, tmp_path):
    path = tmp_path / "point.pt"
    tdx.save({"p": Point(tdx.ones(2, device=device))}, path)
    with pytest.raises(pickle.UnpicklingError):
        tdx.load(path)
    with tdx.serialization.safe_globals([Point]):
        assert_close(tdx.load(path)["p"].x, torch.ones(2))
    with pytest.raises(pickle.UnpicklingError):
        tdx.load(path)
    tdx.serialization.add_safe_globals([Point])
    try:
        assert Point in tdx.serialization.get_safe_globals()
        assert isinstance(tdx.load(path)["p"], Point)
    finally:
        tdx.serialization.clear_safe_globals()
    with torch.serialization.safe_globals([Point]):
        assert torch.equal(torch.load(path)["p"].x, torch.ones(2))  # torch reads it too


def test_mmap_and_file_objects(device, tmp_path):
    path = tmp_path / "mm.pt"
    torch.save({"a": torch.arange(10.0), "b": torch.ones(3, dtype=torch.bfloat16)}, path)
    got = tdx.load(path, mmap=True, map_location=device)
    assert_close(got["a"], torch.arange(10.0), rtol=0, atol=0)
    assert_close(got["b"], torch.ones(3, dtype=torch.bfloat16), rtol=0, atol=0)
    buf = io.BytesIO()
    tdx.save(tdx.arange(3, device=device), buf)
    buf.seek(0)
    assert torch.equal(torch.load(buf), torch.arange(3))
    buf.seek(0)
    assert tdx.load(buf).tolist() == [0, 1, 2]
    with open(path, "rb") as fh:
        assert tdx.load(fh)["a"].shape == (10,)


def test_legacy_format_and_bad_arguments(device, tmp_path):
    path = tmp_path / "legacy.pt"
    base = torch.arange(12, dtype=torch.int16)
    obj = collections.OrderedDict(a=base, v=base[2:10].view(2, 4).t(), h=torch.ones(3, dtype=torch.bfloat16),
                                  p=torch.nn.Parameter(torch.zeros(2)), meta={"n": 3, "s": {1}})
    torch.save(obj, path, _use_new_zipfile_serialization=False)
    got = tdx.load(path, map_location=device)
    assert list(got) == list(obj) and got["meta"] == obj["meta"] and got["p"].requires_grad
    for key in ("a", "v", "h"):
        assert_close(got[key], obj[key], rtol=0, atol=0)
        assert got[key].stride() == obj[key].stride() and got[key].device == tdx.device(device)
    got["a"].add_(1)
    assert_close(got["v"], obj["v"] + 1, rtol=0, atol=0)  # still a view of the same storage
    evil = tmp_path / "evil_legacy.pt"
    torch.save([Payload(tmp_path / "pwned")], evil, _use_new_zipfile_serialization=False)
    with pytest.raises(pickle.UnpicklingError):
        tdx.load(evil)
    assert not (tmp_path / "pwned").exists()
    with pytest.raises(pickle.UnpicklingError):
        tdx.load(io.BytesIO(b"not a checkpoint at all"))


@pytest.mark.parametrize("to", ["path", "file"])
def test_legacy_format_is_written_as_torch_writes_it(device, tmp_path, to):
    base = tdx.arange(12, dtype=tdx.int16, device=device)
    obj = collections.OrderedDict(a=base, v=base[2:10].view(2, 4).t(),
                                  h=tdx.ones(3, dtype=tdx.bfloat16, device=device),
                                  p=tdx.nn.Parameter(tdx.zeros(2, device=device)), meta={"n": 3})
    target = tmp_path / "legacy.pt"
    if to == "path":
        tdx.save(obj, target, _use_new_zipfile_serialization=False)
    else:
        with open(target, "wb") as fh:
            tdx.save(obj, fh, _use_new_zipfile_serialization=False)
    assert not zipfile.is_zipfile(target)
    mine = torch.load(target)  # torch reads tdx's legacy file as its own
    theirs_path = tmp_path / "torch_legacy.pt"
    tbase = torch.arange(12, dtype=torch.int16)
    torch.save(collections.OrderedDict(a=tbase, v=tbase[2:10].view(2, 4).t(), h=torch.ones(3, dtype=torch.bfloat16),
                                       p=torch.nn.Parameter(torch.zeros(2)), meta={"n": 3}),
               theirs_path, _use_new_zipfile_serialization=False)
    theirs = torch.load(theirs_path)
    assert list(mine) == list(theirs) and mine["meta"] == theirs["meta"]
    assert type(mine["p"]) is torch.nn.Parameter and mine["p"].requires_grad
    for key in ("a", "v", "h", "p"):
        assert torch.equal(mine[key], theirs[key]) and mine[key].dtype == theirs[key].dtype
        assert mine[key].stride() == theirs[key].stride()
        assert mine[key].storage_offset() == theirs[key].storage_offset()
    mine["a"].add_(1)
    assert torch.equal(mine["v"], theirs["v"] + 1)  # one storage, shared again
    back = tdx.load(target, map_location=device)
    assert_close(back["v"], theirs["v"], rtol=0, atol=0)
    assert back["v"].device == tdx.device(device)


class _OldStorage:
    """A storage as torch < 1.0 pickled it: a root storage, or a view ``(view key, offset, size)`` of one."""

    def __init__(self, root, numel, view=None):
        self.root, self.numel, self.view = root, numel, view


class _OldTensor:
    def __init__(self, storage, offset, size, stride):
        self.args = (storage, offset, size, stride, False, collections.OrderedDict())

    def __reduce__(self):
        return torch._utils._rebuild_tensor_v2, self.args


def _old_legacy_file(obj, roots):
    """The legacy format with storage views, as old torch wrote it (today's torch still reads it):
    header pickles, the main pickle, the root keys, then each root's element count and bytes."""
    import struct

    class Pickler(pickle.Pickler):
        def persistent_id(self, o):
            if isinstance(o, _OldStorage):
                return "storage", torch.FloatStorage, o.root, "cpu", o.numel, o.view
            return None

    buf = io.BytesIO()
    for header in (torch.serialization.MAGIC_NUMBER, torch.serialization.PROTOCOL_VERSION,
                   {"protocol_version": 1001, "little_endian": True, "type_sizes": {"short": 2, "int": 4, "long": 8}}):
        pickle.dump(header, buf, protocol=2)
    Pickler(buf, protocol=2).dump(obj)
    pickle.dump(list(roots), buf, protocol=2)
    for values in roots.values():
        buf.write(struct.pack("<q", values.size) + values.astype("<f4").tobytes())
    return buf.getvalue()


def test_legacy_storage_views(device):
    """Old legacy files name storage views (a slice of a root storage): tensors over them read as
    torch.load reads them, and stay views of the one root."""
    first, second = np.arange(10.0, dtype=np.float32), np.arange(100.0, 106.0, dtype=np.float32)
    root = _OldStorage("11", 10)
    view = _OldStorage("11", 10, ("12", 3, 5))  # elements 3..7 of root "11"
    other = _OldStorage("13", 6, ("14", 2, 4))  # a view whose root no other tensor names
    obj = {"base": _OldTensor(root, 0, (10,), (1,)), "v": _OldTensor(view, 1, (2, 2), (1, 2)),
           "w": _OldTensor(other, 0, (4,), (1,)), "w2": _OldTensor(other, 1, (3,), (1,))}
    raw = _old_legacy_file(obj, {"11": first, "13": second})
    want = torch.load(io.BytesIO(raw), weights_only=False)
    got = tdx.load(io.BytesIO(raw), map_location=device)
    assert sorted(got) == sorted(want)
    for key, t in want.items():
        assert_close(got[key], t, rtol=0, atol=0, msg=key)
        assert got[key].stride() == t.stride(), key
    want["base"].add_(1000)  # torch: the view shares the root's memory; so does tdx's
    got["base"].add_(1000)
    assert_close(got["v"], want["v"], rtol=0, atol=0)


def test_pickle_and_deepcopy_keep_requires_grad_and_dtypes(device):
    for name in DTYPES:
        d = getattr(tdx, name)
        assert pickle.loads(pickle.dumps(d)) is d
    x = tdx.ones(2, device=device, requires_grad=True)
    for clone in (pickle.loads(pickle.dumps(x)), copy.deepcopy(x)):
        assert clone.requires_grad and clone.is_leaf and clone.device == x.device
    assert not copy.deepcopy(tdx.ones(2, device=device)).requires_grad


_NO_TORCH = """
import sys
sys.modules["torch"] = None
import tdx
out = tdx.load(sys.argv[1], map_location="mlx:cpu")
assert sys.modules["torch"] is None
print(out["a"].tolist(), out["a"].stride(), out["b"].dtype, out["p"].requires_grad, out["a"].device)
"""


def test_load_without_torch(device, tmp_path):
    if not device.startswith("mlx"):
        pytest.skip("with torch unimportable only MLX devices exist")
    path = tmp_path / "nt.pt"
    torch.save({"a": torch.arange(6.0).view(2, 3).t(), "b": torch.ones(2, dtype=torch.bfloat16),
                "p": torch.nn.Parameter(torch.zeros(1))}, path)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(tdx.__file__)))
    res = subprocess.run([sys.executable, "-c", _NO_TORCH, str(path)], capture_output=True, text=True, env=env,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == "[[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]] (1, 3) tdx.bfloat16 True mlx:cpu".split()


def test_archive_records_are_aligned_like_torch(device, tmp_path):
    """Every record's data starts on a 64-byte boundary (what mmap loading needs), with torch's entry metadata."""
    import zipfile

    obj = {"a": tdx.arange(5.0, device=device), "b": tdx.ones(3, 7, device=device), "name": "x" * 13}
    tdx.save(obj, tmp_path / "ours.pt")
    torch.save({"a": torch.arange(5.0), "b": torch.ones(3, 7), "name": "x" * 13}, tmp_path / "theirs.pt")
    meta = {}
    for which in ("ours", "theirs"):
        raw = (tmp_path / f"{which}.pt").read_bytes()
        with zipfile.ZipFile(tmp_path / f"{which}.pt") as z:
            infos = z.infolist()
            for info in infos:
                h = info.header_offset  # the local header's name and extra lengths (not the central directory's)
                start = h + 30 + int.from_bytes(raw[h + 26:h + 28], "little") + int.from_bytes(raw[h + 28:h + 30],
                                                                                              "little")
                if "/data/" in info.filename:
                    assert start % 64 == 0, (which, info.filename, start)
            meta[which] = sorted((i.filename.split("/", 1)[1], i.create_system, i.compress_type)
                                 for i in infos if "/data/" in i.filename)
    assert meta["ours"] == meta["theirs"]


def test_archive_records_match_torch(device):
    """The zip records torch writes come out with torch's names, order, zero date, storage (no
    compression) and a 40-digit serialization id."""
    import zipfile

    def records(mod, **kw):
        buf = io.BytesIO()
        mod.save({"w": mod.arange(5., **kw), "b": mod.ones(2, 3, dtype=mod.int64, **kw)}, buf)
        buf.seek(0)
        with zipfile.ZipFile(buf) as z:
            sid = z.read("archive/.data/serialization_id")
            return [(i.filename, i.date_time, i.compress_type) for i in z.infolist()], sid

    got, got_id = records(tdx, device=device)
    want, want_id = records(torch)
    names = {w[0] for w in want}
    assert [g for g in got if g[0] in names] == want
    assert len(got_id) == len(want_id) == 40 and got_id.isdigit()


def test_overlapping_strides_load_as_values(device, tmp_path):
    """Layouts view ops cannot express (elements read twice) load with torch's values."""
    base = torch.arange(12.0)
    saved = {"win": base.as_strided((4, 3), (2, 1)), "win3": base.as_strided((2, 3, 2), (3, 1, 2), 1)}
    torch.save(saved, tmp_path / "o.pt")
    got = tdx.load(tmp_path / "o.pt", map_location=device)
    for key, t in saved.items():
        assert got[key].shape == t.shape
        assert_close(got[key], t, rtol=0, atol=0, msg=key)


class _Tagged(torch.Tensor):
    pass


def test_tensor_attributes_and_subclasses(device, tmp_path):
    """torch pickles a tensor with Python attributes, or of a subclass, through
    ``_rebuild_from_type_v2``. tdx.load keeps the attributes, as torch.load does
    (``tests/test_tensor_pickling.py``), and refuses a subclass of real torch's Tensor with a typed error
    naming the class."""
    t = torch.arange(3.0)
    t.tag = "kept"
    torch.save({"t": t}, tmp_path / "a.pt")
    assert torch.load(tmp_path / "a.pt")["t"].tag == "kept"
    assert tdx.load(tmp_path / "a.pt", map_location=device)["t"].tag == "kept"
    torch.save(torch.arange(2.0).as_subclass(_Tagged), tmp_path / "s.pt")
    assert type(torch.load(tmp_path / "s.pt", weights_only=False)) is _Tagged
    with pytest.raises(NotImplementedError) as info:
        tdx.load(tmp_path / "s.pt", map_location=device, weights_only=False)
    assert isinstance(info.value, tdx.TdxError) and "_Tagged" in str(info.value)


def test_mmap_maps_stored_records_and_reads_compressed_ones(device, tmp_path):
    """``mmap=True``: on cpu a stored record's tensor lies in the file's mapping; a record
    compressed by a zip tool is read instead, with the same values."""
    path = tmp_path / "m.pt"
    torch.save({"a": torch.arange(16.0), "b": torch.arange(6).view(2, 3)}, path)
    want = torch.load(path)
    zipped = tmp_path / "z.pt"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info), compress_type=zipfile.ZIP_DEFLATED)
    for file in (path, zipped):
        got = tdx.load(file, mmap=True, map_location=device)
        for key in want:
            assert_close(got[key], want[key], rtol=0, atol=0, msg=f"{file.name} {key}")
    if device == "cpu" and sys.platform.startswith("linux"):  # the torch executor shares host memory
        got = tdx.load(path, mmap=True, map_location="cpu")
        addr = got["a"].numpy().__array_interface__["data"][0]
        with open("/proc/self/maps") as fh:
            spans = [line.split() for line in fh]
        real = os.path.realpath(path)
        assert any(len(p) > 5 and p[5] == real and int(p[0].split("-")[0], 16) <= addr < int(p[0].split("-")[1], 16)
                   for p in spans)


def test_serialization_id_is_torchs(device):
    """torch's id: two random 64-bit numbers, 20 zero-filled digits each."""
    for _ in range(16):
        buf = io.BytesIO()
        tdx.save(tdx.ones(1, device=device), buf)
        sid = zipfile.ZipFile(buf).read("archive/.data/serialization_id").decode()
        assert len(sid) == 40 and sid.isdigit() and int(sid[:20]) < 2 ** 64 and int(sid[20:]) < 2 ** 64, sid


def test_storage_of_a_plugin_executor_tensor(device):
    """A tensor of a third-party executor with mutable arrays that are not torch's is saved on
    its own, contiguous, laid out as torch lays out the contiguous tensor."""
    from tdx.compat.serialization import storage as _storage

    x = tdx.arange(24.0, device=device).reshape(2, 3, 4)[:, 1:]
    plugin = types.SimpleNamespace(executor=types.SimpleNamespace(mutable=True), native=x.numpy(force=True),
                                   shape=x.shape, ndim=x.ndim, dtype=x.dtype, device=x.device,
                                   numpy=lambda force=False: x.numpy(force=True), numel=x.numel)
    storage, offset, strides = _storage.storage_of(plugin)
    t = torch.arange(24.0).reshape(2, 3, 4)[:, 1:].contiguous()
    assert (offset, strides, storage.numel) == (0, t.stride(), t.numel())
    assert storage.read() == t.numpy().tobytes()


class _InterruptsPickling:
    """Pickling it raises KeyboardInterrupt (Ctrl-C arriving midway through a save)."""

    def __reduce__(self):
        raise KeyboardInterrupt


def test_interrupted_save_keeps_the_previous_checkpoint(device, tmp_path, monkeypatch):
    """Saving to a path writes a temporary file beside it and renames it over the target: an
    interrupt while pickling or while writing the records leaves the old file whole."""
    from tdx.compat.serialization import archive

    path = tmp_path / "ckpt.pt"
    tdx.save({"w": tdx.arange(4.0, device=device)}, path)
    os.chmod(path, 0o640)
    before = path.read_bytes()
    with pytest.raises(KeyboardInterrupt):
        tdx.save({"w": tdx.ones(1000, device=device), "x": _InterruptsPickling()}, path)
    assert path.read_bytes() == before
    real_write, written = archive.ArchiveWriter.write, []

    def write(self, record, data):
        written.append(record)
        if record.endswith("data/0"):  # data.pkl and the small records are out: the storage interrupted
            raise KeyboardInterrupt
        real_write(self, record, data)

    monkeypatch.setattr(archive.ArchiveWriter, "write", write)
    with pytest.raises(KeyboardInterrupt):
        tdx.save({"w": tdx.ones(1000, device=device)}, path)
    assert written[0].endswith("data.pkl") and path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.pt"]  # no temporary file left behind
    monkeypatch.undo()
    assert tdx.load(path)["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    link = tmp_path / "latest.pt"
    link.symlink_to(path)
    tdx.save({"w": tdx.full((2,), 7.0, device=device)}, link)
    assert link.is_symlink() and torch.load(path)["w"].tolist() == [7.0, 7.0]
    assert (path.stat().st_mode & 0o777) == 0o640  # the replaced file keeps its mode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.pt", "latest.pt"]
    buf = io.BytesIO(b"kept prefix|")
    buf.seek(0, io.SEEK_END)
    tdx.save(tdx.arange(3, device=device), buf)  # a file object: written in place, where it stands
    assert buf.getvalue().startswith(b"kept prefix|PK")
    for bad in (tmp_path / "no_such_folder" / "x.pt", tmp_path):  # torch: RuntimeError for both
        with pytest.raises(RuntimeError) as info:
            torch.save(1, bad)
        with pytest.raises(RuntimeError) as info:
            tdx.save(1, bad)
        assert isinstance(info.value, tdx.TdxError)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.pt", "latest.pt"]
