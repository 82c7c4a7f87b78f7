"""Memory exchange between executors and with other libraries (DLPack and the buffer protocol).

``from_dlpack`` and ``adopt`` bring torch tensors, MLX arrays, NumPy arrays, other DLPack
producers and buffer-protocol objects into tdx; ``transfer`` moves a native array between
executors (``Tensor.to``); ``export_dlpack`` and ``export_device`` are ``Tensor.__dlpack__``
and ``Tensor.__dlpack_device__``; ``matrix`` and ``format_matrix`` say, for every ordered
pair of endpoints, whether memory is shared or copied, and why. Memory is shared wherever
the pair allows it and copied at memory bandwidth where it does not (MLX cannot adopt
host memory: tdx lets MLX allocate a fresh buffer and fills it with a multithreaded copy).
Every hand-off from an asynchronous device first waits for that device's pending work.

This module must never import torch or MLX at module level (they are reached through
``sys.modules`` or imported inside the functions that need them), never hand out a view
whose memory can be freed while the view lives (views keep their owner alive), and never
change a dtype silently: a dtype the target lacks is a ``DtypeError``.
"""

from __future__ import annotations

import gc
import mmap
import os
import sys
import threading
import traceback
import weakref
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from . import _dtypes as D
from . import backends
from ._device import device as _device
from ._errors import (DeviceUnavailableError, DtypeError, InvalidDeviceError, TdxError, TdxTypeError,
                      TdxValueError)

__all__ = ["from_dlpack", "adopt", "exchangeable", "transfer", "import_native", "parse_to",
           "export_dlpack", "export_device", "matrix", "format_matrix", "decide", "current_env",
           "Env", "Route", "ENDPOINTS", "InteropError", "CopyRequiredError"]


class InteropError(TdxError, RuntimeError):
    """An object or a device that cannot be exchanged with the requested target."""


class CopyRequiredError(TdxError, BufferError):
    """``copy=False`` was asked for, but the source and the target cannot share memory."""


ENDPOINTS = ("torch:cpu", "torch:cuda", "torch:mps", "mlx:cpu", "mlx:gpu", "numpy")
ZERO_COPY, COPY, UNAVAILABLE = "zero-copy", "copy", "unavailable"
_KDL_CPU, _KDL_CUDA, _KDL_CUDA_HOST, _KDL_METAL, _KDL_CUDA_MANAGED = 1, 2, 3, 8, 13
_FAST_MIN_BYTES = 32 << 20  # from here up a fresh buffer costs page faults: the fill path wins
_METAL_TORCH, _METAL_MLX = (2, 12), (0, 32)
_RELEASE_WAIT_S = 5.0


# the zero-copy matrix ---------------------------------------------------------------------
class Route(NamedTuple):
    """One row of :func:`matrix`: how ``source`` reaches ``target``."""

    source: str
    target: str
    mode: str
    why: str


@dataclass(frozen=True)
class Env:
    """What the matrix depends on; build one by hand to ask about another machine.

    Attributes:
        platform: ``sys.platform`` (``"darwin"``, ``"linux"``...).
        torch: torch's version as a tuple of ints, or None when it is not installed.
        mlx: MLX's version as a tuple of ints, or None when it is not installed.
        mlx_gpu: ``"metal"``, ``"cuda"`` or None (an MLX build without a GPU backend).
        missing: ``(endpoint, reason)`` pairs for endpoints that are not available.
    """

    platform: str
    torch: tuple | None = None
    mlx: tuple | None = None
    mlx_gpu: str | None = None
    missing: tuple = ()


def _version(text: str | None):
    if text is None:
        return None
    parts = []
    for piece in text.split("+")[0].split(".")[:3]:
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        parts.append(int(digits or 0))
    return tuple(parts)


def _installed_version(dist: str):
    from importlib import metadata

    try:
        return _version(metadata.version(dist))
    except metadata.PackageNotFoundError:
        return None


def current_env() -> Env:
    """The :class:`Env` of this process: versions, platform and device availability."""
    status = {}
    for row in backends.available():
        ep = f"torch:{row.device.split(':')[0]}" if row.provider == "torch" else row.device
        ok, why = status.get(ep, (False, ""))
        status[ep] = (ok or row.available, why or row.reason)
    missing = tuple((ep, status.get(ep, (False, ""))[1] or "no provider for this device")
                    for ep in ENDPOINTS[:-1] if not status.get(ep, (False, ""))[0])
    gpu = status.get("mlx:gpu", (False, ""))[0]
    return Env(sys.platform, _installed_version("torch"), _installed_version("mlx"),
               ("metal" if sys.platform == "darwin" else "cuda") if gpu else None, missing)


def _v(version) -> str:
    return "absent" if version is None else ".".join(map(str, version))


def _metal_dlpack(env: Env) -> tuple:
    """(whether torch MPS and MLX share Metal buffers over DLPack, why)."""
    if env.platform != "darwin":
        return False, "Metal buffers exist only on macOS; copied through host memory"
    if env.torch is None or env.mlx is None or env.torch < _METAL_TORCH or env.mlx < _METAL_MLX:
        return False, (f"DLPack kDLMetal needs torch >= 2.12 and mlx >= 0.32 (have torch {_v(env.torch)}, "
                       f"mlx {_v(env.mlx)}); copied through host memory")
    return True, ("DLPack kDLMetal shares the Metal buffer (torch >= 2.12, mlx >= 0.32); "
                  "tdx synchronizes both sides at the hand-off")


def _rule(s: str, t: str, env: Env) -> tuple:
    host, mlx = {"torch:cpu", "numpy"}, {"mlx:cpu", "mlx:gpu"}
    pair = {s, t}
    unified = env.mlx_gpu != "cuda"  # MLX memory is host memory (CPU build, or Apple silicon)
    if pair == host:
        if s == "numpy":
            return ZERO_COPY, ("torch.from_numpy shares the buffer; read-only, byte-swapped and "
                               "negative-stride arrays are copied")
        return ZERO_COPY, "NumPy views the CPU buffer (bfloat16 has no NumPy dtype)"
    if pair == mlx:
        return ZERO_COPY, ("one MLX array serves both devices (MLX arrays carry no device); "
                           "float64 cannot go to mlx:gpu")
    if s in mlx and t in host:
        if t == "numpy":  # MLX exports every array's buffer as host memory (CUDA's too: the host reads it)
            return ZERO_COPY, ("NumPy gets a read-only view of the evaluated MLX buffer (MLX arrays "
                               "are immutable); the view keeps the array alive")
        if unified:
            return ZERO_COPY, ("torch views the evaluated MLX buffer over DLPack; the view keeps the "
                               "array alive, and a torch write shows in the MLX array")
        return COPY, f"tdx copies MLX CUDA arrays to torch's host memory (mlx {_v(env.mlx)}; NumPy views them)"
    if s in host and t in mlx:
        if t == "mlx:gpu" and not unified:
            return COPY, "host memory is copied into MLX CUDA memory"
        return COPY, ("MLX cannot adopt host memory (mx.from_dlpack(copy=False) refuses); tdx fills a "
                      "fresh MLX buffer with a multithreaded copy")
    if "torch:mps" in pair and pair & mlx:
        ok, why = _metal_dlpack(env)
        return (ZERO_COPY if ok else COPY), why
    if "torch:cuda" in pair and pair & mlx:
        return COPY, (f"MLX has no DLPack exchange with torch CUDA (mlx {_v(env.mlx)}); copied "
                      "through host memory after a stream synchronize")
    if pair == {"torch:cuda", "torch:mps"}:
        return COPY, "copied through host memory (CUDA and MPS never share a machine)"
    kind = "CUDA" if "torch:cuda" in pair else "MPS"
    return COPY, f"{kind} tensors live in device memory: copied to or from the host (synchronizing)"


def decide(source: str, target: str, env: Env | None = None) -> tuple:
    """How ``source`` reaches ``target``: ``(mode, why)``, mode one of zero-copy / copy / unavailable.

    Raises:
        TdxValueError: an endpoint not in :data:`ENDPOINTS`.
    """
    for ep in (source, target):
        if ep not in ENDPOINTS:
            raise TdxValueError(f"unknown endpoint {ep!r}; accepted: {', '.join(ENDPOINTS)}")
    env = current_env() if env is None else env
    if source == target:
        return ZERO_COPY, "same endpoint"
    missing = dict(env.missing)
    mode, why = _rule(source, target, env)
    gone = [f"{ep} is unavailable ({missing[ep]})" for ep in (source, target) if ep in missing]
    if gone:
        return UNAVAILABLE, f"{'; '.join(gone)}; where present: {mode}, {why}"
    return mode, why


def matrix(env: Env | None = None) -> list:
    """Every ordered pair of distinct :data:`ENDPOINTS` as :class:`Route` rows."""
    env = current_env() if env is None else env
    return [Route(s, t, *decide(s, t, env)) for s in ENDPOINTS for t in ENDPOINTS if s != t]


def format_matrix(rows: list | None = None) -> str:
    """The matrix as a printable table (source, target, mode, why)."""
    rows = matrix() if rows is None else rows
    head = Route("source", "target", "mode", "why")
    w = [max(len(getattr(r, f)) for r in [head, *rows]) for f in ("source", "target", "mode")]
    return "\n".join(f"{r.source:<{w[0]}}  {r.target:<{w[1]}}  {r.mode:<{w[2]}}  {r.why}"
                     for r in [head, *rows])


_RUNTIME = {}


def _runtime_env() -> Env:
    """Versions, platform and MLX's GPU kind (no availability scan), cached once MLX is loaded."""
    env = _RUNTIME.get("env")
    if env is None:
        gpu = None
        mx = sys.modules.get("mlx.core")
        if mx is not None and hasattr(mx, "cuda") and mx.cuda.is_available():
            gpu = "cuda"
        elif mx is not None and mx.metal.is_available():
            gpu = "metal"
        env = Env(sys.platform, _installed_version("torch"), _installed_version("mlx"), gpu)
        if mx is not None:  # before MLX loads, its GPU kind is unknown: ask again next time
            _RUNTIME["env"] = env
    return env


def _endpoint(ex) -> str:
    return f"mlx:{ex.device.kind}" if ex.name == "mlx" else f"torch:{ex.device.type}"


# classifying sources ----------------------------------------------------------------------
def _kind(obj) -> str | None:
    """``"tdx"``, ``"torch"``, ``"mlx"``, ``"numpy"``, ``"dlpack"``, ``"buffer"`` or None."""
    from ._tensor import wrapping  # the class as the facade's lower layer binds it: interop never reaches up to it

    if wrapping.Tensor is not None and isinstance(obj, wrapping.Tensor):
        return "tdx"
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        return "torch"
    mx = sys.modules.get("mlx.core")
    if mx is not None and isinstance(obj, mx.array):
        return "mlx"
    if isinstance(obj, (np.ndarray, np.generic)):
        return "numpy"
    if hasattr(type(obj), "__dlpack__"):
        return "dlpack"
    if isinstance(obj, str):
        return None
    try:
        memoryview(obj).release()
    except TypeError:
        return None
    return "buffer"


def exchangeable(obj) -> bool:
    """Whether ``obj`` is a foreign array tdx can adopt (DLPack producer or buffer), not a tdx Tensor."""
    return _kind(obj) not in (None, "tdx")


class _Described:
    """A source named in error messages, described only when a message is built."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __str__(self) -> str:
        return _describe(self.obj)


def _describe(obj) -> str:
    cls = type(obj)
    name = cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    where = getattr(obj, "device", None)
    dt = getattr(obj, "dtype", None)
    extra = ", ".join(str(x) for x in (where, dt) if x is not None and not callable(x))
    return f"{name} ({extra})" if extra else name


def _native_dtype(native, ex, source):
    try:
        return ex.dtype(native)
    except KeyError:
        raise DtypeError(f"cannot exchange {source}: tdx has no dtype for {native.dtype}; accepted: "
                         + ", ".join(d.name for d in D.ALL_DTYPES)) from None


def _host_dtype(arr: np.ndarray, source):
    d = D.BY_NAME.get(arr.dtype.newbyteorder("=").name)
    if d is None:
        raise DtypeError(f"cannot exchange {source}: NumPy dtype {arr.dtype} has no tdx dtype; "
                         "accepted: " + ", ".join(d.name for d in D.ALL_DTYPES))
    return d


def _check_dtype(d, dst, source) -> None:
    if d.name not in dst.caps.dtypes:
        raise DtypeError(f"cannot move {source} to {dst.device}: {dst.device} has no {d.name} "
                         f"(it holds {', '.join(sorted(dst.caps.dtypes))}); cast the source first")


def _no_copy(source, target, why: str) -> CopyRequiredError:
    return CopyRequiredError(f"cannot share {source} with {target} without a copy ({why}); "
                             "pass copy=None to allow one")


# host (NumPy) arrays ---------------------------------------------------------------------
def _shareable(arr: np.ndarray) -> bool:
    """torch can view ``arr`` safely: writable, native byte order, aligned, non-negative strides."""
    size = arr.itemsize
    return (arr.flags.writeable and arr.flags.aligned and arr.dtype.isnative
            and all(s >= 0 and s % size == 0 for s in arr.strides))


def _copyto(dst: np.ndarray, src: np.ndarray) -> None:
    """``dst[...] = src`` split over threads along the first axis (NumPy releases the GIL)."""
    workers = min(os.cpu_count() or 1, 8)
    if src.ndim == 0 or src.shape[0] < workers or workers == 1 or src.nbytes < _FAST_MIN_BYTES:
        np.copyto(dst, src)
        return
    from concurrent.futures import ThreadPoolExecutor

    edges = [src.shape[0] * i // workers for i in range(workers + 1)]
    with ThreadPoolExecutor(workers) as pool:
        for job in [pool.submit(np.copyto, dst[a:b], src[a:b]) for a, b in zip(edges, edges[1:])]:
            job.result()


def _numpy_to_torch(arr: np.ndarray, dst, copy, source):
    torch = _torch()
    if copy is not True and _shareable(arr):
        t, copied = torch.from_numpy(arr), False
    else:
        if copy is False:
            raise _no_copy(source, dst.device, "read-only, byte-swapped, unaligned or negative strides")
        host = torch.empty(arr.shape, dtype=dst.native_dtype(_host_dtype(arr, source)))
        _copyto(host.numpy(), arr)
        t, copied = host, True
    if dst.device.type != "cpu":
        if copy is False:
            raise _no_copy(source, dst.device, f"{dst.device} memory is device memory")
        t, copied = t.to(dst.tdev), True
    return t, copied


def _numpy_to_mlx(arr: np.ndarray, dst, copy, source):
    if copy is False:
        raise _no_copy(source, dst.device, "MLX cannot adopt host memory")
    mx = _mx()
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    if arr.nbytes >= _FAST_MIN_BYTES and _mlx_host_memory():
        def fill(buf):
            _copyto(np.frombuffer(buf, np.uint8).view(arr.dtype).reshape(arr.shape), arr)

        out = _fill_mlx(arr.shape, dst.native_dtype(_host_dtype(arr, source)), arr.nbytes, fill)
        if out is not None:
            return out, True
    if any(s < 0 for s in arr.strides):
        arr = np.ascontiguousarray(arr)
    nd = dst.native_dtype(_host_dtype(arr, source))
    return _same_dtype(mx.array(arr, dtype=nd), nd, source), True  # without dtype= MLX narrows float64


# the fast host -> MLX fill ------------------------------------------------------------------
def _npy_header(nbytes: int) -> bytes:
    """A NumPy .npy v1.0 header describing ``nbytes`` raw bytes (``uint8``, 1-d)."""
    text = "{'descr': '|u1', 'fortran_order': False, 'shape': (%d,), }" % nbytes
    text += " " * (63 - (10 + len(text)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode("latin1")


class _Unexpected(InteropError):
    """MLX asked the fill reader for something other than one read of the whole buffer."""


class _FillReader:
    """A binary file object for ``mx.load``: a .npy header, then a fill of MLX's own buffer.

    ``mx.load`` allocates the array's buffer and hands it to :meth:`readinto`, where ``fill``
    writes the source straight into it: no zero-fill, no intermediate copy, and the buffer
    belongs to the new array alone. Errors are kept (with their frames cleared, so no view
    of the buffer survives) and raised again by the caller.
    """

    closed = False
    name = "tdx-transfer.npy"

    def __init__(self, nbytes: int, fill):
        self.header, self.nbytes, self.fill = _npy_header(nbytes), nbytes, fill
        self.pos, self.filled, self.error = 0, False, None

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = offset if whence == 0 else self.pos + offset if whence == 1 else \
            len(self.header) + self.nbytes + offset
        return self.pos

    def readinto(self, buf) -> int:
        try:
            return self._serve(buf)
        except BaseException as err:  # kept and raised again by _fill_mlx, once MLX has unwound
            # keep the traceback as text only: its frames would keep views of MLX's buffer and
            # this reader alive (the reader must be gone before _fill_mlx returns)
            where = "".join(traceback.format_tb(err.__traceback__.tb_next))
            if hasattr(err, "add_note"):
                err.add_note(f"raised while filling a new MLX buffer:\n{where}")
            self.error = err.with_traceback(None)
            return 0
        finally:
            self._release(buf)

    def _serve(self, buf) -> int:
        n, head = len(buf), self.header
        if self.pos < len(head):
            k = min(n, len(head) - self.pos)
            buf[:k] = head[self.pos:self.pos + k]
            self.pos += k
            return k
        if self.filled or self.pos != len(head) or n != self.nbytes:
            raise _Unexpected(f"unexpected read of {n} bytes at offset {self.pos}")
        _advise_huge_pages(buf)
        self.fill(buf)
        self.filled, self.pos = True, self.pos + n
        return n

    def _release(self, buf) -> None:
        """Make MLX's memoryview unusable once the call returns (MLX never frees it)."""
        try:
            buf.release()
        except BufferError:
            self.error = self.error or InteropError("a view of MLX's fresh buffer outlived the fill")


def _advise_huge_pages(buf) -> None:
    """Ask Linux to back a large fresh buffer with huge pages before it is first touched."""
    if sys.platform != "linux" or len(buf) < _FAST_MIN_BYTES:
        return
    libc = _RUNTIME.get("libc")
    if libc is None:
        import ctypes

        libc = _RUNTIME["libc"] = ctypes.CDLL(None, use_errno=True)
        libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    addr = np.frombuffer(buf, np.uint8).ctypes.data
    page = mmap.PAGESIZE
    start, end = -(-addr // page) * page, (addr + len(buf)) // page * page
    if end > start:
        libc.madvise(start, end - start, 14)  # MADV_HUGEPAGE; a hint, its result does not matter


def _mlx_host_memory() -> bool:
    """MLX buffers are host memory here (a CPU-only build, or Apple silicon's unified memory)."""
    return _runtime_env().mlx_gpu != "cuda"


def _fill_mlx(shape, mx_dtype, nbytes: int, fill):
    """A new evaluated MLX array of ``shape`` and ``mx_dtype`` whose bytes ``fill(memoryview)`` writes.

    Returns None when MLX reads in a way the reader does not serve (the caller falls back).
    """
    mx = _mx()
    reader = _FillReader(nbytes, fill)
    released = threading.Event()
    weakref.finalize(reader, released.set)
    raw = out = failure = None
    try:
        raw = mx.load(reader, format="npy", stream=mx.cpu)
    except RuntimeError as err:
        failure = err
    filled, error = reader.filled, reader.error
    del reader
    if raw is not None and filled:
        out = mx.reshape(mx.view(raw, mx_dtype, stream=mx.cpu), tuple(shape), stream=mx.cpu)
        mx.eval(out)
    del raw
    # MLX lets go of the reader under the GIL, possibly on its own thread just after mx.load
    # returns; wait for that here, while the interpreter is surely alive (a release that races
    # interpreter shutdown aborts the process).
    if not released.wait(_RELEASE_WAIT_S / 10):
        gc.collect()
        released.wait(_RELEASE_WAIT_S)
    if error is not None and not isinstance(error, _Unexpected):
        raise error
    if out is not None:
        return out
    if failure is not None and error is None:
        raise InteropError(f"MLX could not allocate {nbytes} bytes for a host -> MLX copy: "
                           f"{failure}") from failure
    return None


# torch <-> MLX ------------------------------------------------------------------------------
def _torch():
    import torch

    return torch


def _mx():
    import mlx.core as mx

    return mx


def _torch_to_mlx(t, src, dst, copy, source):
    mx = _mx()
    t = t.detach()
    if src.device.type == "mps" and _metal_dlpack(_runtime_env())[0] and copy is not True:
        src.synchronize()  # queued MPS work must finish before MLX reads the buffer
        return mx.from_dlpack(t.resolve_conj().resolve_neg()), False
    if copy is False:
        raise _no_copy(source, dst.device, decide(_endpoint(src), _endpoint(dst), _runtime_env())[1])
    t = t.resolve_conj().resolve_neg()
    if t.device.type != "cpu":
        t = t.cpu()  # a blocking device -> host copy: the stream's pending work is done first
    nbytes = t.numel() * t.element_size()
    if nbytes >= _FAST_MIN_BYTES and _mlx_host_memory():
        def fill(buf):
            _fill_from_torch(buf, t)

        out = _fill_mlx(t.shape, dst.native_dtype(_native_dtype(t, src, source)), nbytes, fill)
        if out is not None:
            return out, True
    nd = dst.native_dtype(_native_dtype(t, src, source))
    if nd == mx.float64:  # mx.from_dlpack narrows float64 to float32; mx.array(dtype=) does not
        return _same_dtype(mx.array(t.numpy(), dtype=nd), nd, source), True
    return _same_dtype(mx.from_dlpack(t), nd, source), True


def _fill_from_torch(buf, t) -> None:
    """Write CPU tensor ``t`` into MLX's fresh buffer ``buf`` (row-major bytes).

    A contiguous ``t`` is copied as bytes by :func:`_copyto`, split over threads: MLX calls
    the fill from its own worker thread, where one torch ``copy_`` runs single-threaded and
    falls to a fraction of ``torch.clone``'s bandwidth. A strided ``t`` takes torch's ``copy_``.
    """
    torch = _torch()
    if t.is_contiguous():
        _copyto(np.frombuffer(buf, np.uint8), t.reshape(-1).view(torch.uint8).numpy())
    else:
        torch.frombuffer(buf, dtype=torch.uint8).view(t.dtype).view(t.shape).copy_(t)


def _same_dtype(out, nd, source):
    """``out`` if MLX kept the dtype asked for, else a DtypeError (never a silent change)."""
    if out.dtype != nd:
        raise DtypeError(f"MLX imported {source} as {out.dtype} instead of {nd}")
    return out


def _mlx_host_view(a):
    """A torch CPU tensor viewing an evaluated MLX array's host-visible buffer."""
    torch, mx = _torch(), _mx()
    if int(a.__dlpack_device__()[0]) == _KDL_CPU:
        return torch.from_dlpack(a)
    if a.dtype == mx.bfloat16:  # NumPy has no bfloat16: view the bits, then reinterpret
        bits = mx.view(a, mx.uint16)
        mx.eval(bits)
        return torch.from_numpy(np.array(bits, copy=False)).view(torch.bfloat16)
    return torch.from_numpy(np.array(a, copy=False))


def _mlx_to_torch(a, src, dst, copy, source):
    torch, mx = _torch(), _mx()
    src.evaluate((a,))  # one thread at a time (the executor's evaluation lock)
    env = _runtime_env()
    if dst.device.type == "mps" and _metal_dlpack(env)[0] and copy is not True:
        src.synchronize()  # MLX's queued GPU work must finish before torch reads the buffer
        t = torch.from_dlpack(a)
        if t.device.type == "mps":
            return t, False
        return t.to(dst.tdev), True
    if env.mlx_gpu == "cuda":  # MLX CUDA memory: MLX's own host conversion copies
        if copy is False:
            raise _no_copy(source, dst.device, "MLX CUDA arrays are copied to host memory")
        bits = mx.view(a, mx.uint16) if a.dtype == mx.bfloat16 else a
        host = torch.from_numpy(np.array(bits))
        host = host.view(torch.bfloat16) if a.dtype == mx.bfloat16 else host
        return (host if dst.device.type == "cpu" else host.to(dst.tdev)), True
    host = _mlx_host_view(a)
    if dst.device.type == "cpu":
        return host, False
    if copy is False:
        raise _no_copy(source, dst.device, f"{dst.device} memory is device memory")
    return host.to(dst.tdev), True


# moving and adopting -------------------------------------------------------------------------
def _move(native, src, dst, copy, source):
    """(``native`` of ``src`` as a native array of ``dst``, whether a copy was made)."""
    d = _native_dtype(native, src, source)
    _check_dtype(d, dst, source)
    if src is dst:
        return native, False
    if src.name == dst.name == "torch":
        if copy is False:
            raise _no_copy(source, dst.device, decide(_endpoint(src), _endpoint(dst), _runtime_env())[1])
        return native.to(dst.tdev), True  # torch waits for the source stream on device -> host
    if src.name == dst.name == "mlx":
        return native, False
    if src.name == "mlx" and dst.name == "torch":
        return _mlx_to_torch(src.row_major(native), src, dst, copy, source)  # relaid weights leave row-major
    if src.name == "torch" and dst.name == "mlx":
        return _torch_to_mlx(native, src, dst, copy, source)
    if copy is False:
        raise _no_copy(source, dst.device, "executors of different providers exchange through a host copy")
    return dst.from_host(src.host_numpy(native), d), True


def _torch_executor(t, source):
    if t.layout != _torch().strided:
        raise InteropError(f"cannot exchange {source}: only strided (dense) tensors can be shared, "
                           f"not {t.layout}")
    try:  # the tensor's own device, never what a device pin remaps requests to
        return backends._unpinned(str(t.device))
    except (InvalidDeviceError, DeviceUnavailableError, KeyError) as err:
        raise InteropError(f"cannot exchange {source}: tdx has no executor for torch device "
                           f"{t.device} ({err})") from None


def _foreign_dlpack(obj, dst, source):
    """A generic DLPack producer as (native, executor): host memory via NumPy, devices via torch."""
    try:
        kind, index = (int(x) for x in obj.__dlpack_device__())
    except (AttributeError, TypeError, ValueError) as err:
        raise InteropError(f"cannot exchange {source}: its __dlpack_device__() is unusable ({err})") from None
    if kind in (_KDL_CPU, _KDL_CUDA_HOST):
        try:
            return np.from_dlpack(obj), None
        except (BufferError, TypeError, RuntimeError, ValueError) as err:
            if "torch" not in sys.modules and (dst is None or dst.name != "torch"):
                raise InteropError(f"cannot exchange {source}: NumPy cannot import it ({err})") from None
    elif kind not in (_KDL_CUDA, _KDL_CUDA_MANAGED, _KDL_METAL):
        raise InteropError(f"cannot exchange {source}: DLPack device type {kind} (index {index}) has no "
                           "tdx executor; accepted: CPU (1), CUDA (2), CUDA host (3), Metal (8), "
                           "CUDA managed (13)")
    try:
        t = _torch().from_dlpack(obj)
    except ImportError:
        raise InteropError(f"cannot exchange {source}: importing DLPack device type {kind} needs "
                           "torch; pip install 'tdx-runtime[torch]'") from None
    except (BufferError, RuntimeError, TypeError) as err:
        raise InteropError(f"cannot exchange {source}: torch cannot import it ({err})") from None
    return t, _torch_executor(t, source)


def adopt(obj, ex=None, dtype=None, copy=None):
    """``obj`` as a native array of executor ``ex``, sharing memory where the pair allows it.

    Args:
        obj: a tdx Tensor, torch tensor, MLX array, NumPy array or scalar, any object with
            ``__dlpack__``, or any buffer-protocol object (``bytes``, ``array.array``...).
        ex: the target executor; None keeps the source's own device (host memory: ``"cpu"``).
        dtype: a tdx dtype to cast to afterwards (a cast copies).
        copy: True always copies, False never does (raises instead), None copies only if needed.

    Returns:
        ``(native, executor)``.

    Raises:
        TdxTypeError: ``obj`` has neither ``__dlpack__`` nor the buffer protocol.
        DtypeError: the source's dtype has no tdx dtype, or the target lacks it.
        InteropError: the source lives on a device no tdx executor can import.
        CopyRequiredError: ``copy=False`` but the pair cannot share memory.
    """
    kind = _kind(obj)
    source = _Described(obj)
    if kind is None:
        target = "tdx" if ex is None else str(ex.device)
        raise TdxTypeError(f"cannot import {source} into {target}: it has neither __dlpack__ nor the "
                           "buffer protocol; accepted: tdx/torch tensors, MLX and NumPy arrays, DLPack "
                           "producers, buffer-protocol objects")
    if kind == "tdx":
        if ex is not None:
            share(obj, ex)
        native, src = obj._n, obj._ex
    elif kind == "torch":
        native, src = obj, _torch_executor(obj, source)
    elif kind == "mlx":
        native, src = obj, (ex if ex is not None and ex.name == "mlx" else backends.get("mlx"))
    else:
        if kind == "dlpack":
            native, src = _foreign_dlpack(obj, ex, source)
        else:
            native, src = np.asarray(memoryview(obj) if kind == "buffer" else obj), None
        if src is None:  # host memory in a NumPy array
            dst = backends.get("cpu") if ex is None else ex
            d = _host_dtype(native, source)
            _check_dtype(d, dst, source)
            mover = _numpy_to_torch if dst.name == "torch" else _numpy_to_mlx
            out, copied = mover(native, dst, copy, source)
            return _finish(out, dst, dtype, copy, copied), dst
    dst = src if ex is None else ex
    out, copied = _move(native, src, dst, copy, source)
    return _finish(out, dst, dtype, copy, copied), dst


def _finish(native, ex, dtype, copy, copied):
    if dtype is not None and dtype is not ex.dtype(native):
        if copy is False:
            raise CopyRequiredError(f"casting to {dtype!r} makes a copy; pass copy=None to allow it")
        return ex.astype(native, dtype)
    return ex.clone(native) if copy is True and not copied else native


def from_dlpack(obj, *, device=None, copy=None):
    """A tdx Tensor over ``obj``'s memory (``torch.from_dlpack`` for every tdx executor).

    Args:
        obj: a DLPack producer (torch tensor, MLX array, NumPy array, tdx Tensor...) or a
            buffer-protocol object.
        device: the target device; None keeps the source's (MLX arrays stay on MLX, host
            memory goes to ``"cpu"``, translated per the config).
        copy: True always copies, False raises ``CopyRequiredError`` where memory cannot be
            shared, None shares where possible.

    Raises:
        TdxTypeError, DtypeError, InteropError, CopyRequiredError: see :func:`adopt`.
    """
    from ._tensor.wrapping import wrap

    native, ex = adopt(obj, None if device is None else backends.get(device), None, copy)
    return wrap(native, ex)


def share(t, dst=None):
    """Before torch (``dst``; None: any DLPack consumer) gets a writable view of MLX tensor ``t``'s host
    buffer, give ``t`` one nothing else reads and return it: clones and results computed from ``t``
    earlier keep the old buffer, so a later write reaches ``t`` (as the matrix promises) and nothing else.
    ``t`` is rebound to the executor's lazy copy before it runs, so MLX hands the copy the old buffer
    itself where nothing else reads it (a fresh transfer handed out costs one copy) and copies where
    something does. A DLPack consumer views MLX's export on every build; tdx's move to torch, where MLX memory
    is host memory (else it copies)."""
    if t._ex.name == "mlx" and (dst is None or dst.name == "torch" and _mlx_host_memory()):
        t._n = out = t._ex.share(t._n)
        t._ex.share_commit(out)
    return t._n


def transfer(native, src, dst):
    """``native`` (owned by executor ``src``) as a native array of executor ``dst``."""
    return _move(native, src, dst, None, _Described(native))[0]


def import_native(native, ex):
    """A torch tensor or MLX array as a native array of executor ``ex`` (shared where possible)."""
    return adopt(native, ex)[0]


# Tensor.__dlpack__ ---------------------------------------------------------------------------
def export_dlpack(t, stream=None, max_version=None, dl_device=None, copy=None):
    """``Tensor.__dlpack__``: the native array's capsule, after its device's pending work is done."""
    ex = t._ex
    native = share(t) if ex.name == "mlx" else t._n  # the consumer may write (torch ignores read-only)
    if ex.name == "mlx":
        ex.evaluate((native,))
    if ex.device.type == "mps" or ex.name == "mlx" and ex.device.kind == "gpu":
        ex.synchronize()  # no DLPack stream handshake here: wait for queued work
    kwargs = {k: v for k, v in (("stream", stream), ("max_version", max_version),
                                ("dl_device", dl_device), ("copy", copy)) if v is not None}
    return native.__dlpack__(**kwargs)


def export_device(t) -> tuple:
    """``Tensor.__dlpack_device__``: ``(device type, index)`` of the native array."""
    return t._n.__dlpack_device__()


# Tensor.to -----------------------------------------------------------------------------------
def parse_to(t, args, kwargs):
    """``Tensor.to`` arguments as (target executor, tdx dtype or None, copy)."""
    dev, dtype, copy = kwargs.pop("device", None), kwargs.pop("dtype", None), kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    fmt = kwargs.pop("memory_format", None)
    if fmt is not None:  # None, the default, needs no check (nor an import on every call)
        from ._tensor.formats import check_conversion_format
        check_conversion_format(fmt, "to", t.ndim)
    if kwargs:
        raise TdxTypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if type(a).__name__ == "Tensor" and hasattr(a, "_ex"):
            dev, dtype = a.device, a.dtype
        elif isinstance(a, (str, int, _device)) and not isinstance(a, bool):
            dev = a
        elif isinstance(a, bool):
            continue  # legacy positional non_blocking / copy
        else:
            dtype = a
    ex = t._ex if dev is None else backends.get(dev)
    return ex, (None if dtype is None else D.as_dtype(dtype)), copy
