"""The two collective engines behind ``tdx.distributed``: torch.distributed and mlx.core.distributed.

An engine runs collectives on native arrays of its own framework: :class:`TorchEngine` over
``torch.distributed`` (gloo on CPU, NCCL on CUDA), :class:`MLXEngine` over ``mx.distributed``
(the ring backend over TCP, MPI, or NCCL in MLX's CUDA build). tdx writes no transport of its own.
A tensor of the other framework is carried across through host memory (one copy each way). What
an engine lacks is emulated from what it has, and says so: MLX has sum, max and min reductions,
an all-gather and point-to-point; products, bitwise reductions, reduce-scatter, broadcast, gather
and scatter are built from all-reduce and all-gather.

This module imports each framework only inside the engine that uses it, and must never import
the tdx facade's internals (it works on natives handed to it by :mod:`.collectives`).
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import time

import numpy as np

from ..._errors import TdxError


class DistError(TdxError, RuntimeError):
    """A collective or a process group failed (torch raises ``torch.distributed.DistError``)."""


class DistBackendError(DistError):
    """The communication backend failed: a peer was lost, a message could not be delivered."""


class DistNetworkError(DistError):
    """The rendezvous could not be reached or completed in time."""


class DistShapeError(DistError):
    """Ranks passed tensors of different shapes or dtypes to one collective."""


# reduction ops: tdx's names, as torch's ReduceOp
SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR, PREMUL_SUM = (
    "SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM")
_NUMPY_REDUCE = {PRODUCT: np.prod, BAND: np.bitwise_and.reduce, BOR: np.bitwise_or.reduce,
                 BXOR: np.bitwise_xor.reduce, SUM: np.sum, MIN: np.min, MAX: np.max}


class TorchEngine:
    """Collectives over ``torch.distributed``; natives are torch tensors.

    Args:
        backend: ``"gloo"`` or ``"nccl"``.
        init_method, world_size, rank, timeout_s: as ``torch.distributed.init_process_group``.
    """

    kind = "torch"

    def __init__(self, backend: str, init_method, world_size: int, rank: int, timeout_s: float):
        import datetime

        import torch.distributed as td

        self.td = td
        self.backend = backend
        kwargs = {"backend": backend, "timeout": datetime.timedelta(seconds=timeout_s)}
        if init_method is not None:
            kwargs["init_method"] = init_method
        if world_size >= 0:
            kwargs["world_size"] = world_size
        if rank >= 0:
            kwargs["rank"] = rank
        try:
            td.init_process_group(**kwargs)
        except (RuntimeError, ValueError, TimeoutError) as err:
            raise DistNetworkError(f"init_process_group(backend={backend!r}) failed: {err}") from None
        self.rank, self.world_size = td.get_rank(), td.get_world_size()
        self._ops = {SUM: td.ReduceOp.SUM, AVG: td.ReduceOp.AVG, PRODUCT: td.ReduceOp.PRODUCT,
                     MIN: td.ReduceOp.MIN, MAX: td.ReduceOp.MAX, BAND: td.ReduceOp.BAND,
                     BOR: td.ReduceOp.BOR, BXOR: td.ReduceOp.BXOR}

    def _run(self, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (RuntimeError, ValueError) as err:
            kind = DistShapeError if "size" in str(err).lower() and "mismatch" in str(err).lower() else \
                DistBackendError
            raise kind(f"{fn.__name__}: {err}") from None

    def group(self, ranks):
        return self._run(self.td.new_group, ranks)

    def all_reduce(self, t, op, group=None, async_op=False):
        if op == AVG and self.backend == "gloo":  # gloo has no AVG: sum, then divide
            work = self._run(self.td.all_reduce, t, op=self._ops[SUM], group=group, async_op=async_op)
            if async_op:
                return _Then(work, lambda: t.div_(self.size(group)))
            t.div_(self.size(group))
            return None
        return self._run(self.td.all_reduce, t, op=self._ops[op], group=group, async_op=async_op)

    def broadcast(self, t, src, group=None, async_op=False):
        return self._run(self.td.broadcast, t, src=src, group=group, async_op=async_op)

    def all_gather(self, outs, t, group=None, async_op=False):
        return self._run(self.td.all_gather, outs, t, group=group, async_op=async_op)

    def all_gather_into_tensor(self, out, t, group=None, async_op=False):
        fn = getattr(self.td, "all_gather_single", None) or self.td.all_gather_into_tensor  # the newer name first
        return self._run(fn, out, t, group=group, async_op=async_op)

    def reduce_scatter_tensor(self, out, t, op, group=None, async_op=False):
        fn = getattr(self.td, "reduce_scatter_single", None) or self.td.reduce_scatter_tensor
        return self._run(fn, out, t, op=self._ops[op], group=group, async_op=async_op)

    def reduce(self, t, dst, op, group=None, async_op=False):
        return self._run(self.td.reduce, t, dst=dst, op=self._ops[op], group=group, async_op=async_op)

    def send(self, t, dst, group=None):
        return self._run(self.td.send, t, dst=dst, group=group)

    def recv(self, t, src, group=None):
        return self._run(self.td.recv, t, src=src, group=group)

    def gather(self, t, outs, dst, group=None, async_op=False):
        return self._run(self.td.gather, t, gather_list=outs, dst=dst, group=group, async_op=async_op)

    def scatter(self, t, ins, src, group=None, async_op=False):
        return self._run(self.td.scatter, t, scatter_list=ins, src=src, group=group, async_op=async_op)

    def barrier(self, group=None):
        return self._run(self.td.barrier, group=group)

    def size(self, group=None) -> int:
        return self.td.get_world_size(group)

    def group_rank(self, group=None) -> int:
        return self.td.get_rank(group)

    def shutdown(self):
        self.td.destroy_process_group()


class _Then:
    """A torch work handle followed by a step to run once it is done."""

    def __init__(self, work, then):
        self.work, self.then, self.done = work, then, False

    def wait(self, timeout=None):
        self.work.wait()
        if not self.done:
            self.then()
            self.done = True
        return True

    def is_completed(self) -> bool:
        return self.done


class MLXEngine:
    """Collectives over ``mx.distributed``; natives are MLX arrays.

    Rendezvous: ``MLX_HOSTFILE``/``MLX_RANK`` when a launcher set them (``mlx.launch``); otherwise
    torch's ``env://`` variables (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``, as
    ``torchrun`` sets them): rank 0 serves a small TCP rendezvous on ``MASTER_PORT`` where every rank
    reports the address its ring socket will listen on, then hands out the hostfile. Ranks that do
    not report within the timeout make every rank fail with :class:`DistNetworkError`.
    """

    kind = "mlx"

    def __init__(self, backend: str, world_size: int, rank: int, timeout_s: float):
        import mlx.core as mx

        self.mx = mx
        self.backend = backend
        self.timeout_s = timeout_s
        made = backend == "ring" and "MLX_HOSTFILE" not in os.environ
        if made:
            _ring_rendezvous(world_size, rank, timeout_s)
        try:
            self.world = mx.distributed.init(strict=True, backend=backend)
        except RuntimeError as err:
            raise DistNetworkError(f"mx.distributed.init(backend={backend!r}) failed: {err}") from None
        finally:
            if made:  # the hostfile the rendezvous wrote has been read: remove it and its variables
                os.remove(os.environ.pop("MLX_HOSTFILE"))
                os.environ.pop("MLX_RANK", None)
        self.rank, self.world_size = self.world.rank(), self.world.size()

    def _ev(self, *arrays):
        try:
            self.mx.eval(*arrays)
        except RuntimeError as err:
            raise DistBackendError(f"MLX {self.backend} collective failed: {err}") from None
        return arrays[0] if len(arrays) == 1 else arrays

    def _check_same(self, x, group=None):
        """Refuse a collective whose operands differ between ranks (shape or dtype), on every rank."""
        mx = self.mx
        code = [x.ndim, _dtype_code(x.dtype)] + list(x.shape) + [-1] * (8 - x.ndim)
        metas = self._ev(mx.distributed.all_gather(mx.array(code[:10], dtype=mx.int64)[None], group=group,
                                                    stream=mx.cpu))
        rows = np.array(metas).reshape(-1, 10)
        if not (rows == rows[0]).all():
            raise DistShapeError(f"ranks passed different tensors to one collective: (ndim, dtype, shape) per "
                                 f"rank {[tuple(int(v) for v in r if v != -1) for r in rows]}")

    def group(self, ranks):
        if sorted(ranks) != list(range(self.world_size)):
            raise DistError(f"new_group({ranks}): the MLX engine serves the whole world only "
                            f"(ranks 0..{self.world_size - 1})")
        return None

    def all_reduce(self, x, op, group=None, async_op=False):
        mx, d = self.mx, self.mx.distributed
        self._check_same(x, group)
        if op in (SUM, AVG):
            out = d.all_sum(x, group=group, stream=mx.cpu)
            if op == AVG:
                out = _divide(mx, out, self.size(group))
        elif op == MAX:
            out = d.all_max(x, group=group, stream=mx.cpu)
        elif op == MIN:
            out = d.all_min(x, group=group, stream=mx.cpu)
        elif op in _NUMPY_REDUCE:  # emulated: gather every rank's tensor, reduce on the host
            rows = np.array(self._ev(d.all_gather(x[None], group=group, stream=mx.cpu)))
            out = mx.array(_NUMPY_REDUCE[op](rows, axis=0)).astype(x.dtype)
        else:
            raise DistError(f"all_reduce: op {op} is not supported by the MLX engine")
        return out

    def broadcast(self, x, src, group=None):
        mx = self.mx
        self._check_same(x, group)
        rows = mx.distributed.all_gather(x[None], group=group, stream=mx.cpu)
        return rows[src]

    def all_gather(self, x, group=None):
        mx = self.mx
        self._check_same(x, group)
        return mx.distributed.all_gather(x[None], group=group, stream=mx.cpu)

    def reduce_scatter(self, x, op, group=None):
        # the ring backend has no sum_scatter: reduce everything, keep this rank's slice
        full = self.all_reduce(x, op, group)
        n = x.shape[0] // self.size(group)
        r = self.group_rank(group)
        return full[r * n:(r + 1) * n]

    def send(self, x, dst, group=None):
        self._ev(self.mx.distributed.send(x, dst, group=group, stream=self.mx.cpu))

    def recv(self, like, src, group=None):
        return self._ev(self.mx.distributed.recv_like(like, src, group=group, stream=self.mx.cpu))

    def barrier(self, group=None):
        self._ev(self.mx.distributed.all_sum(self.mx.array(1.0), group=group, stream=self.mx.cpu))

    def size(self, group=None) -> int:
        return self.world_size

    def group_rank(self, group=None) -> int:
        return self.rank

    def shutdown(self):
        self.world = None


def _divide(mx, out, n):
    if mx.issubdtype(out.dtype, mx.floating) or mx.issubdtype(out.dtype, mx.complexfloating):
        return out / n
    return mx.floor_divide(out, n)  # torch's AVG on integers truncates (non-negative sums)


_DTYPE_CODES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
                "complex64")


def _dtype_code(d) -> int:
    name = str(d).rsplit(".", 1)[-1]
    return _DTYPE_CODES.index(name) if name in _DTYPE_CODES else len(_DTYPE_CODES)


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _ring_rendezvous(world_size: int, rank: int, timeout_s: float) -> None:
    """Agree on the ring's addresses through ``MASTER_ADDR:MASTER_PORT`` and write MLX's hostfile.

    Every rank picks a free port on its own address and reports ``host:port`` to rank 0; rank 0
    answers each with the full list once all ``world_size`` ranks have reported, or raises
    :class:`DistNetworkError` on every rank that reached it when the timeout runs out first.
    """
    master = os.environ.get("MASTER_ADDR", "127.0.0.1")
    port = int(os.environ.get("MASTER_PORT", "29500"))
    own = os.environ.get("TDX_DIST_HOST") or ("127.0.0.1" if master in ("127.0.0.1", "localhost") else
                                             socket.gethostbyname(socket.gethostname()))
    mine = f"{own}:{_free_port(own)}"
    deadline = time.monotonic() + timeout_s
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":  # torchrun serves a TCPStore on MASTER_PORT
        hosts = _agent_store_rendezvous(master, port, world_size, rank, mine, timeout_s)
    elif rank == 0:
        hosts = _serve_rendezvous(master, port, world_size, mine, deadline)
    else:
        hosts = _join_rendezvous(master, port, rank, mine, deadline)
    fd, path = tempfile.mkstemp(prefix="tdx-mlx-hosts-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump([[h] for h in hosts], f)
    os.environ["MLX_HOSTFILE"] = path
    os.environ["MLX_RANK"] = str(rank)


def _agent_store_rendezvous(master, port, world_size, rank, mine, timeout_s) -> list:
    """Exchange the ring addresses through the TCPStore ``torchrun``'s agent serves on ``MASTER_PORT``."""
    import datetime

    import torch.distributed as td

    prefix = f"tdx/ring/{os.environ.get('TORCHELASTIC_RUN_ID', '')}/{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}"
    try:
        store = td.TCPStore(master, port, world_size, is_master=False,
                            timeout=datetime.timedelta(seconds=timeout_s))
        store.set(f"{prefix}/{rank}", mine)
        return [store.get(f"{prefix}/{r}").decode() for r in range(world_size)]
    except (RuntimeError, TimeoutError) as err:
        raise DistNetworkError(f"rendezvous through torchrun's store at {master}:{port} failed: {err}") from None


def _serve_rendezvous(master, port, world_size, mine, deadline) -> list:
    hosts = {0: mine}
    conns = []
    with socket.socket() as srv:
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            srv.bind(("0.0.0.0" if master not in ("127.0.0.1", "localhost") else master, port))
        except OSError as err:
            raise DistNetworkError(f"rendezvous: cannot listen on {master}:{port}: {err}") from None
        srv.listen(world_size)
        while len(hosts) < world_size:
            left = deadline - time.monotonic()
            if left <= 0:
                for c in conns:
                    c.sendall(b"ABORT\n")
                    c.close()
                raise DistNetworkError(f"rendezvous at {master}:{port} timed out: {len(hosts)} of {world_size} "
                                       f"ranks joined ({sorted(hosts)})")
            srv.settimeout(left)
            try:
                conn, _ = srv.accept()
            except socket.timeout:
                continue
            conn.settimeout(max(deadline - time.monotonic(), 0.1))
            line = conn.makefile().readline().split()
            hosts[int(line[0])] = line[1]
            conns.append(conn)
        listing = json.dumps([hosts[r] for r in range(world_size)]).encode() + b"\n"
        for c in conns:
            c.sendall(listing)
            c.close()
    return [hosts[r] for r in range(world_size)]


def _join_rendezvous(master, port, rank, mine, deadline) -> list:
    while True:
        try:
            conn = socket.create_connection((master, port), timeout=max(deadline - time.monotonic(), 0.1))
            break
        except OSError:
            if time.monotonic() >= deadline:
                raise DistNetworkError(f"rendezvous at {master}:{port} unreachable (rank {rank})") from None
            time.sleep(0.05)
    with conn:
        conn.sendall(f"{rank} {mine}\n".encode())
        conn.settimeout(max(deadline - time.monotonic(), 0.1))
        try:
            line = conn.makefile().readline()
        except socket.timeout:
            line = ""
    if not line or line.startswith("ABORT"):
        raise DistNetworkError(f"rendezvous at {master}:{port} did not complete in time (rank {rank})")
    return json.loads(line)
