"""``tdx.load`` over corrupted and crafted checkpoints: truncations, bit flips (with the CRC fixed up
and without), wrong CRCs and hostile records (sizes, strides, offsets, storage counts, pickle
length prefixes). Every file either loads as it was saved or is refused with a ``TdxError`` that is
also torch's ``RuntimeError`` (or ``pickle.UnpicklingError``), within 1 s and 100 MB."""

from __future__ import annotations

import collections
import io
import pickle
import struct
import subprocess
import sys
import textwrap
import time
import tracemalloc
import zipfile

import numpy as np
import pytest
import torch

import tdx
from tdx.compat.serialization import CheckpointError
from tdx.compat.serialization import archive as _archive
from tdx.compat.serialization import pickling as _pickling
from tdx.compat.serialization import storage as _storage

SECONDS, BYTES = 1.0, 100 * 2 ** 20


class _Crafted:
    """A tensor record with a chosen (offset, size, stride) over the storage being crafted."""

    def __init__(self, offset, size, stride, requires_grad=False):
        self.args = (offset, size, stride, requires_grad)


def craft(offset=0, size=(2,), stride=(1,), numel=4, data=None, dtype=tdx.float32, pickled=None, pad=True):
    """An archive holding ``{"w": tensor}`` whose one record says exactly what it is given (nothing
    checked on the way in), in tdx.save's layout; ``pickled`` replaces data.pkl's bytes."""
    data = np.arange(4, dtype=np.float32).tobytes() if data is None else data
    st = _storage.Storage(("crafted",), numel, dtype, "cpu", lambda: data)

    class Pickler(_pickling.CheckpointPickler):
        def reducer_override(self, obj):
            if isinstance(obj, _Crafted):
                ref = _pickling.StorageRef("0", st, "cpu")
                if not self.storages:
                    self.storages.append(ref)
                off, sz, sd, rg = obj.args
                return _pickling.REBUILD_TENSOR, (ref, off, sz, sd, rg, collections.OrderedDict())
            return super().reducer_override(obj)

    buf = io.BytesIO()
    Pickler(buf, 2, _storage.storage_of, lambda s: "cpu").dump({"w": _Crafted(offset, size, stride)})
    out = io.BytesIO()
    if pad:
        writer = _archive.ArchiveWriter(out, "archive")
        write, close = writer.write, writer.close
    else:  # the smallest archive torch reads: no alignment padding, no optional records
        zf = zipfile.ZipFile(out, "w", zipfile.ZIP_STORED)
        write, close = (lambda name, b: zf.writestr(f"a/{name}", b)), zf.close
    write("data.pkl", buf.getvalue() if pickled is None else pickled)
    if pad:
        write("byteorder", b"little")
    write("data/0", data)
    write("version", b"3\n")
    close()
    return out.getvalue()


def rezip(blob, change):
    """``blob``'s records rewritten through ``change(name, data) -> data`` (CRCs made to match)."""
    src = zipfile.ZipFile(io.BytesIO(blob))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, change(info.filename, src.read(info)))
    return out.getvalue()


_WARM: set = set()


def refused_in_bounds(blob, device, expect=None, weights_only=True):
    """Load ``blob``; return the result or the typed refusal, asserting the time and memory bounds
    (measured once the device's framework is loaded: its import is not the file's doing)."""
    if device not in _WARM:
        tdx.load(io.BytesIO(craft()), map_location=device)
        _WARM.add(device)
    tracemalloc.start()
    start = time.perf_counter()
    try:
        result = tdx.load(io.BytesIO(blob), map_location=device, weights_only=weights_only)
    except Exception as err:  # noqa: BLE001 - classified below: any untyped failure fails the test
        result = err
    finally:
        elapsed = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert elapsed < SECONDS, f"{elapsed:.2f} s"
    assert peak < BYTES, f"{peak / 2 ** 20:.0f} MB traced"
    if isinstance(result, BaseException):
        assert isinstance(result, tdx.TdxError) and isinstance(result, (RuntimeError, pickle.UnpicklingError)), \
            f"untyped refusal {result!r}"
        if expect is not None:
            assert expect in str(result), str(result)
    return result


def _saved(device):
    base = tdx.arange(24, dtype=tdx.float32, device=device).reshape(4, 6)
    obj = {"w": base, "col": base[:, 1], "t": base.t(), "i": tdx.tensor([1, -2, 3], device=device),
           "p": tdx.nn.Parameter(tdx.ones(3, device=device)), "meta": [1, "two", 3.0]}
    buf = io.BytesIO()
    tdx.save(obj, buf)
    return obj, buf.getvalue()


def _same(got, obj):
    assert set(got) == set(obj) and got["meta"] == obj["meta"]
    for key in ("w", "col", "t", "i", "p"):
        assert got[key].tolist() == obj[key].tolist(), key


def test_truncated_and_bit_flipped_archives(device):
    """Every truncation and every single-bit flip (CRC left as is): the original back, or refused."""
    obj, blob = _saved(device)
    rng = np.random.default_rng(0)
    cuts = sorted(set(np.linspace(0, len(blob) - 1, 40).astype(int)) | {0, 1, 3, 4, 22, len(blob) - 22})
    for cut in cuts:
        got = refused_in_bounds(blob[:cut], device)
        assert isinstance(got, tdx.TdxError), f"a file cut at {cut} of {len(blob)} bytes loaded"
    loaded = 0
    for pos in rng.choice(len(blob), 80, replace=False):
        flipped = bytearray(blob)
        flipped[pos] ^= 1 << int(rng.integers(8))
        got = refused_in_bounds(bytes(flipped), device)
        if not isinstance(got, BaseException):  # a flip in padding or an unread header field
            _same(got, obj)
            loaded += 1
    assert loaded < 80


def test_flips_inside_the_pickle_with_matching_crc(device):
    """data.pkl's bytes flipped and the CRC fixed up: the unpickler meets the damage itself."""
    _, blob = _saved(device)
    rng = np.random.default_rng(1)
    pickled = zipfile.ZipFile(io.BytesIO(blob)).read("archive/data.pkl")
    for pos in rng.choice(len(pickled), 60, replace=False):
        bit = 1 << int(rng.integers(8))

        def change(name, data, pos=pos, bit=bit):
            if not name.endswith("data.pkl"):
                return data
            data = bytearray(data)
            data[pos] ^= bit
            return bytes(data)

        refused_in_bounds(rezip(blob, change), device)


def test_wrong_crc_is_refused_where_torch_loads_silently(device, tmp_path):
    """A storage byte changed, its CRC not: torch loads the changed value; tdx names the record."""
    path = tmp_path / "ckpt.pt"
    torch.save({"w": torch.arange(4.0)}, path)
    blob = bytearray(path.read_bytes())
    at = blob.index(np.arange(4, dtype=np.float32).tobytes())
    blob[at + 4] ^= 0x40
    path.write_bytes(bytes(blob))
    assert torch.load(path)["w"].tolist() != [0.0, 1.0, 2.0, 3.0]  # torch: silently another value
    refused_in_bounds(bytes(blob), device, expect="data/0")
    with pytest.raises(CheckpointError, match="CRC"):
        tdx.load(path, map_location=device)


HOSTILE = {  # name -> craft() arguments, and a fragment of the refusal
    "20000x20000 over 4 elements": (dict(size=(20000, 20000), stride=(1, 2), pad=False), "out of bounds"),
    "40000x40000 over 4 elements": (dict(size=(40000, 40000), stride=(1, 1)), "out of bounds"),
    "negative size": (dict(size=(-1,), stride=(1,)), "negative"),
    "negative stride": (dict(offset=3, size=(4,), stride=(-1,)), "negative"),
    "negative offset": (dict(offset=-1, size=(2,), stride=(1,)), "negative"),
    "offset past the end": (dict(offset=4, size=(1,), stride=(1,)), "out of bounds"),
    "huge offset": (dict(offset=10 ** 20, size=(1,), stride=(1,)), "out of bounds"),
    "float size": (dict(size=(2.0,), stride=(1,)), "must be ints"),
    "size and stride lengths differ": (dict(size=(2, 2), stride=(1,)), "unequal"),
    "negative storage count": (dict(numel=-1), "non-negative"),
    "storage count past the record": (dict(numel=5), "record size"),
    "storage count short of the record": (dict(numel=3), "record size"),
    "2**40 storage elements": (dict(numel=2 ** 40), "record size"),
    "overlap of 2**40 elements": (dict(size=(2 ** 20, 2 ** 20), stride=(1, 1), numel=2 ** 21,
                                       data=bytes(2 ** 21), dtype=tdx.int8), "overlap"),
    "overlap just past 2 GiB": (dict(size=(2 ** 16 + 1, 2 ** 15), stride=(1, 1), numel=3 * 2 ** 15 + 1,
                                     data=bytes(3 * 2 ** 15 + 1), dtype=tdx.int8), "2147483648 bytes"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_records_refused_before_allocating(device, name):
    kwargs, fragment = HOSTILE[name]
    blob = craft(**kwargs)
    got = refused_in_bounds(blob, device, expect=fragment)
    assert isinstance(got, tdx.TdxError), f"{name}: loaded"
    assert "data/0" in str(got)
    if name.startswith("20000"):
        assert len(blob) < 700  # the 624-byte file, give or take the record names


def test_hostile_records_refused_as_torch_refuses(device):
    """torch refuses each of these too (RuntimeError), so a program catching it keeps working."""
    for name in ("20000x20000 over 4 elements", "negative stride", "negative offset", "storage count past the record",
                 "size and stride lengths differ"):
        blob = craft(**HOSTILE[name][0])
        with pytest.raises(RuntimeError):
            torch.load(io.BytesIO(blob))
        with pytest.raises(RuntimeError) as info:
            tdx.load(io.BytesIO(blob), map_location=device)
        assert isinstance(info.value, tdx.TdxError), name


def test_valid_edge_layouts_still_load(device):
    """What torch loads from the same crafting still loads: overlapping, stride 0, empty with any offset."""
    for kwargs, expected in ((dict(size=(3, 2), stride=(1, 1)), [[0.0, 1.0], [1.0, 2.0], [2.0, 3.0]]),
                             (dict(size=(5,), stride=(0,)), [0.0] * 5),
                             (dict(offset=100, size=(0,), stride=(1,)), []),
                             (dict(size=(0, 5), stride=(1, 10 ** 12)), [])):
        blob = craft(**kwargs)
        got = refused_in_bounds(blob, device)["w"]
        assert got.tolist() == torch.load(io.BytesIO(blob))["w"].tolist() == expected
        assert got.device == tdx.device(device)


def _pickle_with(body: bytes) -> bytes:
    return b"\x80\x02" + body + b"."


HOSTILE_PICKLES = {  # data.pkl bytes -> a fragment of the refusal
    "BINBYTES8 announcing 2**40 bytes": (_pickle_with(b"\x8e" + struct.pack("<Q", 2 ** 40) + b"abc"), "data.pkl"),
    "bytearray(10**12)": (_pickle_with(b"cbuiltins\nbytearray\n\x8a\x05" + (10 ** 12).to_bytes(5, "little") + b"\x85R"), "bytearray"),
    "torch.Tensor(20000, 20000)": (_pickle_with(b"ctorch\nTensor\nM\x20\x4eM\x20\x4e\x86R"), "torch.Tensor"),
    "a persistent id that is not a storage": (_pickle_with(b"X\x03\x00\x00\x00abcQ"), "persistent id"),
    "a short storage id": (_pickle_with(b"X\x07\x00\x00\x00storageK\x01\x86Q"), "storage id"),
    "truncated": (_pickle_with(b"}q\x00(X\x01\x00\x00\x00w")[:-1], "data.pkl"),
    "an unknown opcode": (b"\x80\x02\xff.", "data.pkl"),
    "an unknown global": (_pickle_with(b"cos\nsystem\nX\x02\x00\x00\x00lsR"), "os.system"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_PICKLES))
def test_hostile_pickles_refused(device, name):
    pickled, fragment = HOSTILE_PICKLES[name]
    got = refused_in_bounds(craft(pickled=pickled), device, expect=fragment)
    assert isinstance(got, pickle.UnpicklingError) and isinstance(got, tdx.TdxError), repr(got)


def test_hostile_legacy_files(device):
    """Legacy (pre-zip) files: a storage count past the file's end, a length prefix past it, garbage."""
    head = b"".join(pickle.dumps(h, protocol=2) for h in (
        0x1950A86A20F9469CFC6C, 1001, {"protocol_version": 1001, "little_endian": True}))
    main = pickle.dumps(0, protocol=2)  # the main pickle (no storage), then the keys
    for blob, fragment in ((head + main + pickle.dumps(["0"], protocol=2), "no element type"),
                           (head + b"\x80\x04\x8e" + struct.pack("<Q", 2 ** 40) + b".", "not a readable"),
                           (b"\x80\x02\x8e" + struct.pack("<Q", 2 ** 40), "not a readable"),
                           (b"", "not a readable"), (b"PK\x03\x04" + bytes(40), "zip archive")):
        got = refused_in_bounds(blob, device, expect=fragment)
        assert isinstance(got, tdx.TdxError), blob[:20]


def test_crafted_files_bounded_in_a_fresh_process(device):
    """The resident set (native allocations included, which tracemalloc does not see) stays within
    100 MB over every hostile file, measured in a process of its own."""
    script = textwrap.dedent(f"""
        import io, resource, sys
        sys.path.insert(0, {str(__import__('pathlib').Path(__file__).parent)!r})
        import tdx
        from test_checkpoint_fuzz import HOSTILE, HOSTILE_PICKLES, craft
        blobs = [craft(**kw) for kw, _ in HOSTILE.values()] + [craft(pickled=p) for p, _ in HOSTILE_PICKLES.values()]
        tdx.load(io.BytesIO(craft()), map_location={device!r})  # the executor warmed up
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        for blob in blobs:
            try:
                tdx.load(io.BytesIO(blob), map_location={device!r})
            except tdx.TdxError:
                pass
        print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    grown = int(out.stdout.split()[-1])
    assert grown < BYTES, f"resident set grew {grown / 2 ** 20:.0f} MB"


def test_a_record_claiming_bytes_past_the_end(device, tmp_path):
    """A storage record whose headers claim more bytes than the file holds (its element count made
    to agree): refused when read and when memory-mapped, naming the record."""
    blob = bytearray(craft(numel=1000))  # 1000 float32 claimed, 16 bytes written
    name = b"archive/data/0"
    central = blob.index(b"PK\x01\x02")
    while blob[central + 46:central + 46 + len(name)] != name:
        central = blob.index(b"PK\x01\x02", central + 4)
    local = struct.unpack("<I", blob[central + 42:central + 46])[0]
    for at in (central + 20, central + 24, local + 18, local + 22):  # compressed and real sizes, both headers
        blob[at:at + 4] = struct.pack("<I", 4000)
    path = tmp_path / "past_the_end.pt"
    path.write_bytes(bytes(blob))
    # read: the bytes run out (Python >= 3.11.8/3.12.2's zipfile refuses the overlap before reading: BadZipFile)
    with pytest.raises(CheckpointError, match=r"data/0: (EOFError|BadZipFile: Overlapped entries)"):
        tdx.load(path, map_location=device)
    with pytest.raises(CheckpointError, match="data/0: it runs past the end of the file"):  # mapped
        tdx.load(path, mmap=True, map_location=device)


def test_guarded_names_still_load_what_torch_writes(device):
    """bytearray (refused with a size, which would allocate it) and torch.Tensor (refused when called)
    still load as torch writes them."""
    buf = io.BytesIO()
    sub = torch.arange(6.0).reshape(2, 3)[:, 1:]
    torch.save({"empty": bytearray(), "bytes": bytearray(b"ab\xff"), "sub": sub}, buf)
    got = refused_in_bounds(buf.getvalue(), device)
    assert got["empty"] == bytearray() and got["bytes"] == bytearray(b"ab\xff")
    assert got["sub"].tolist() == sub.tolist()
    buf = io.BytesIO()
    torch.save({"cls": torch.Tensor}, buf)
    assert tdx.load(io.BytesIO(buf.getvalue()), weights_only=False)["cls"] is tdx.Tensor


def test_legacy_storage_counts_checked_against_the_file(device):
    """A legacy file's storage count is checked against the bytes left before they are read: the data
    cut off, a count made negative or huge; what torch wrote still loads."""
    buf = io.BytesIO()
    torch.save(torch.arange(3.0), buf, _use_new_zipfile_serialization=False)
    blob = buf.getvalue()
    assert refused_in_bounds(blob, device).tolist() == [0.0, 1.0, 2.0]
    count_at = len(blob) - 12 - 8  # the int64 count, then 3 float32
    assert struct.unpack("<q", blob[count_at:count_at + 8]) == (3,)
    got = refused_in_bounds(blob[:-12], device, expect="claims 3 elements of 4 bytes; 0 bytes are left")
    assert isinstance(got, CheckpointError)
    for count in (-1, 2 ** 40):
        bad = blob[:count_at] + struct.pack("<q", count) + blob[count_at + 8:]
        got = refused_in_bounds(bad, device, expect=f"claims {count} elements")
        assert isinstance(got, CheckpointError)
