"""``tdx.distributed``: torch.distributed's API over torch.distributed and MLX's distributed engine.

``init_process_group(backend)`` starts one engine for the process: ``"gloo"``/``"nccl"`` run on
``torch.distributed``, ``"ring"``/``"mpi"``/``"mlx"`` on ``mx.distributed`` (``"mlx"`` lets MLX pick
any backend it has). Rendezvous is torch's ``env://`` (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``,
``MASTER_PORT``, as ``torchrun`` sets them) or, for MLX, the ``MLX_HOSTFILE``/``MLX_RANK`` that
``mlx.launch`` sets. Collectives take tdx tensors and work in place on them, as torch's: a tensor
on the engine's own framework is handed over as it is; a tensor of the other framework crosses
through host memory. Failures are typed (:class:`DistError` and subclasses, also RuntimeErrors).

Importing this module imports no framework; the engine imports its own on ``init_process_group``.
"""

from __future__ import annotations

import datetime
import enum as _enum
import importlib.util
import os
import pickle

import numpy as np

import tdx

from ..._errors import TdxValueError
from ...aliasing.refused import namespace_names
from . import engines as _engines
from .engines import DistBackendError, DistError, DistNetworkError, DistShapeError

__all__ = ["ReduceOp", "Backend", "Work", "group", "GroupMember", "DistError", "DistBackendError",
           "DistNetworkError", "DistShapeError", "is_available", "is_initialized", "init_process_group",
           "destroy_process_group", "get_rank", "get_world_size", "get_backend", "new_group", "barrier",
           "monitored_barrier", "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor",
           "reduce_scatter_tensor", "reduce", "send", "recv", "isend", "irecv", "gather", "scatter",
           "all_gather_object", "broadcast_object_list", "is_torchelastic_launched", "is_gloo_available",
           "is_nccl_available", "is_mpi_available"]
__tdx_partial__ = True  # torch's other names of this module refuse at use (tdx.aliasing.torch_paths)

# torch.distributed names tdx refuses (tdx.aliasing.refused says why)
globals().update({n: f for n, f in namespace_names("torch.distributed").items() if n not in globals()})

_state = {"engine": None}
_TORCH_BACKENDS = ("gloo", "nccl")
_MLX_BACKENDS = {"ring": "ring", "mpi": "mpi", "mlx": "any", "jaccl": "jaccl", "mlx_nccl": "nccl"}
_DEFAULT_TIMEOUT_S = 1800.0  # torch's default process-group timeout (30 minutes)


class _RedOpType(str, _enum.Enum):
    """``ReduceOp.RedOpType``: the reduction operations as an enum whose members equal the engines' names."""

    SUM = _engines.SUM
    AVG = _engines.AVG
    PRODUCT = _engines.PRODUCT
    MIN = _engines.MIN
    MAX = _engines.MAX
    BAND = _engines.BAND
    BOR = _engines.BOR
    BXOR = _engines.BXOR
    PREMUL_SUM = _engines.PREMUL_SUM


class ReduceOp:
    """Reduction operations, with torch's names (``ReduceOp.SUM``...), each a member of ``ReduceOp.RedOpType``."""

    RedOpType = _RedOpType
    SUM = _RedOpType.SUM
    AVG = _RedOpType.AVG
    PRODUCT = _RedOpType.PRODUCT
    MIN = _RedOpType.MIN
    MAX = _RedOpType.MAX
    BAND = _RedOpType.BAND
    BOR = _RedOpType.BOR
    BXOR = _RedOpType.BXOR


class Backend:
    """The backend names ``init_process_group`` accepts."""

    GLOO = "gloo"
    NCCL = "nccl"
    RING = "ring"
    MPI = "mpi"
    MLX = "mlx"


class _World:
    """The default group (``group.WORLD``)."""

    def __repr__(self) -> str:
        return "<tdx.distributed.group.WORLD>"


class group:  # noqa: N801 - torch's name
    WORLD = _World()


GroupMember = group


class Work:
    """The handle an ``async_op=True`` collective returns; ``wait()`` completes it."""

    def __init__(self, finish):
        self._finish, self._done = finish, False

    def wait(self, timeout=None) -> bool:
        if not self._done:
            self._finish()
            self._done = True
        return True

    def is_completed(self) -> bool:
        return self._done

    def is_success(self) -> bool:
        return self._done


def is_available() -> bool:
    """Whether a distributed engine is installed (torch.distributed or mlx.core.distributed)."""
    return importlib.util.find_spec("torch") is not None or importlib.util.find_spec("mlx") is not None


def is_gloo_available() -> bool:
    return importlib.util.find_spec("torch") is not None


def is_nccl_available() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch.distributed as td

    return td.is_nccl_available()


def is_mpi_available() -> bool:
    return False


def is_torchelastic_launched() -> bool:
    """Whether this process was started by ``torchrun`` (it sets ``TORCHELASTIC_RUN_ID``)."""
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def is_initialized() -> bool:
    return _state["engine"] is not None


def _engine():
    eng = _state["engine"]
    if eng is None:
        raise DistError("Default process group has not been initialized, please make sure to call "
                        "init_process_group.")
    return eng


def _default_backend() -> str:
    kind = tdx.get_default_device().type
    return {"cuda": "nccl", "mlx": "ring"}.get(kind, "gloo")


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Start the process group, as ``torch.distributed.init_process_group``.

    Args:
        backend: ``"gloo"``/``"nccl"`` (torch.distributed), ``"ring"``/``"mpi"``/``"mlx"`` (MLX); by
            default the one for the default device (gloo for cpu, nccl for cuda, ring for mlx).
        init_method: torch's (``"env://"``, ``"tcp://host:port"``, ``"file://..."``); the MLX engine takes
            ``env://`` or MLX's launcher variables.
        timeout: a ``datetime.timedelta`` (or seconds) for the rendezvous and the collectives.
        world_size, rank: as torch (``-1``: from the environment).
        store, group_name, pg_options, device_id: torch's; passed on to torch.distributed where it
            uses them, refused by the MLX engine when given.

    Raises:
        DistError: already initialized, or an unknown backend.
        DistNetworkError: the rendezvous failed or timed out.
    """
    if _state["engine"] is not None:
        raise DistError("trying to initialize the default process group twice!")
    backend = (backend or _default_backend()).lower()
    timeout_s = _DEFAULT_TIMEOUT_S if timeout is None else \
        timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)
    if backend in _TORCH_BACKENDS:
        eng = _engines.TorchEngine(backend, init_method, world_size, rank, timeout_s)
    elif backend in _MLX_BACKENDS:
        if store is not None or pg_options is not None:
            raise TdxValueError(f"init_process_group(backend={backend!r}): store= and pg_options= are "
                                "torch.distributed's; the MLX engine takes neither")
        if init_method not in (None, "env://"):
            raise TdxValueError(f"init_process_group(backend={backend!r}): init_method={init_method!r}; the MLX "
                                "engine takes env:// (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) or MLX's "
                                "launcher variables")
        rank = int(os.environ.get("RANK", os.environ.get("MLX_RANK", "0"))) if rank < 0 else rank
        world_size = int(os.environ.get("WORLD_SIZE", "1")) if world_size < 0 else world_size
        eng = _engines.MLXEngine(_MLX_BACKENDS[backend], world_size, rank, timeout_s)
    else:
        raise DistError(f"init_process_group: unknown backend {backend!r}; accepted: gloo, nccl (torch.distributed), "
                        f"{', '.join(_MLX_BACKENDS)} (MLX)")
    _state["engine"] = eng


def destroy_process_group(group=None) -> None:
    eng = _state["engine"]
    if eng is not None:
        eng.shutdown()
    _state["engine"] = None


def get_rank(group=None) -> int:
    return _engine().group_rank(_native_group(group)) if _state["engine"] else -1


def get_world_size(group=None) -> int:
    return _engine().size(_native_group(group)) if _state["engine"] else -1


def get_backend(group=None) -> str:
    return _engine().backend


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False):
    """A subgroup of ``ranks`` (every rank must call it). The MLX engine serves the whole world only."""
    eng = _engine()
    ranks = list(range(eng.world_size)) if ranks is None else list(ranks)
    return _Group(eng.group(ranks), ranks)


class _Group:
    def __init__(self, native, ranks):
        self.native, self.ranks = native, ranks

    def size(self) -> int:
        return len(self.ranks)


def _native_group(g):
    return None if g is None or g is group.WORLD else g.native


# ------------------------------------------------------------------------------- natives in and out
def _is_torch(t) -> bool:
    return t.device.type != "mlx"


def _to_engine(eng, t):
    """``t``'s data as the engine's native: the tensor's own native when the frameworks match."""
    if eng.kind == "torch":
        if _is_torch(t):
            return t.native
        import torch

        return torch.from_numpy(np.array(t.numpy(force=True)))
    if not _is_torch(t):
        return t.native
    import mlx.core as mx

    return mx.array(t.numpy(force=True))


def _write_back(t, native) -> None:
    """Write ``native`` (the engine's result) into ``t`` in place."""
    if _is_torch(t) and native is t.native:
        return  # the engine wrote into the tensor's own memory
    with tdx.no_grad():
        if not _is_torch(t) and type(native).__module__.startswith("mlx"):
            t._rebind(native, "all_reduce")  # the MLX result becomes the tensor's value (and its views'), no copy
        else:  # the other framework's result: through host memory
            t.copy_(tdx.as_tensor(np.array(native)).to(t.device))


def _done(work, async_op, finish=None):
    """The torch-style result: None, or a Work that completes the operation (and writes back)."""
    if async_op:
        def complete():
            if work is not None and hasattr(work, "wait"):
                work.wait()
            if finish is not None:
                finish()
        return Work(complete)
    if work is not None and hasattr(work, "wait"):
        work.wait()
    if finish is not None:
        finish()
    return None


# ------------------------------------------------------------------------------------- collectives
def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` across ranks in place (SUM, AVG, MIN, MAX natively; PRODUCT and the bitwise
    ops emulated on MLX from an all-gather)."""
    eng, g = _engine(), _native_group(group)
    x = _to_engine(eng, tensor)
    if eng.kind == "torch":
        work = eng.all_reduce(x, op, g, async_op)
        return _done(work, async_op, lambda: _write_back(tensor, x))
    out = eng.all_reduce(x, op, g)
    return _done(None, async_op, lambda: _write_back(tensor, eng._ev(out)))


def broadcast(tensor, src, group=None, async_op=False):
    """Copy rank ``src``'s ``tensor`` into every rank's, in place."""
    eng, g = _engine(), _native_group(group)
    x = _to_engine(eng, tensor)
    if eng.kind == "torch":
        work = eng.broadcast(x, src, g, async_op)
        return _done(work, async_op, lambda: _write_back(tensor, x))
    out = eng.broadcast(x, src, g)
    return _done(None, async_op, lambda: _write_back(tensor, eng._ev(out)))


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Fill ``tensor_list[r]`` with rank r's ``tensor``."""
    eng, g = _engine(), _native_group(group)
    if len(tensor_list) != eng.size(g):
        raise TdxValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors; the group has "
                            f"{eng.size(g)} ranks")
    x = _to_engine(eng, tensor)
    if eng.kind == "torch":
        outs = [_to_engine(eng, t) for t in tensor_list]
        work = eng.all_gather(outs, x, g, async_op)
        return _done(work, async_op, lambda: [_write_back(t, o) for t, o in zip(tensor_list, outs)])
    rows = eng.all_gather(x, g)

    def finish():
        eng._ev(rows)
        for r, t in enumerate(tensor_list):
            _write_back(t, rows[r])
    return _done(None, async_op, finish)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Every rank's ``input_tensor`` concatenated (or stacked) into ``output_tensor``."""
    eng, g = _engine(), _native_group(group)
    x = _to_engine(eng, input_tensor)
    if eng.kind == "torch":
        out = _to_engine(eng, output_tensor)
        work = eng.all_gather_into_tensor(out, x, g, async_op)
        return _done(work, async_op, lambda: _write_back(output_tensor, out))
    rows = eng.all_gather(x, g)
    shape = tuple(output_tensor.shape)
    return _done(None, async_op, lambda: _write_back(output_tensor, eng._ev(rows.reshape(shape))))


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):  # noqa: A002
    """``input`` reduced across ranks, and rank r's equal slice (along dim 0) written into ``output``."""
    eng, g = _engine(), _native_group(group)
    x = _to_engine(eng, input)
    if eng.kind == "torch":
        out = _to_engine(eng, output)
        work = eng.reduce_scatter_tensor(out, x, op, g, async_op)
        return _done(work, async_op, lambda: _write_back(output, out))
    res = eng.reduce_scatter(x, op, g)
    return _done(None, async_op, lambda: _write_back(output, eng._ev(res)))


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` across ranks into rank ``dst``'s tensor (the others keep theirs)."""
    eng, g = _engine(), _native_group(group)
    x = _to_engine(eng, tensor)
    if eng.kind == "torch":
        work = eng.reduce(x, dst, op, g, async_op)
        return _done(work, async_op, lambda: _write_back(tensor, x))
    out = eng.all_reduce(x, op, g)

    def finish():
        eng._ev(out)
        if eng.group_rank(g) == dst:
            _write_back(tensor, out)
    return _done(None, async_op, finish)


def send(tensor, dst, group=None, tag=0) -> None:
    eng = _engine()
    eng.send(_to_engine(eng, tensor), dst, _native_group(group))


def recv(tensor, src=None, group=None, tag=0) -> int:
    """Receive into ``tensor`` from rank ``src`` (which must be given on the MLX engine); returns ``src``."""
    eng = _engine()
    if src is None:
        raise TdxValueError("recv(src=None): receiving from any rank is not supported; name the source rank")
    x = _to_engine(eng, tensor)
    out = eng.recv(x, src, _native_group(group))
    _write_back(tensor, x if eng.kind == "torch" else out)
    return src


def isend(tensor, dst, group=None, tag=0):
    return Work(lambda: send(tensor, dst, group, tag))


def irecv(tensor, src=None, group=None, tag=0):
    return Work(lambda: recv(tensor, src, group, tag))


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    """Rank ``dst``'s ``gather_list[r]`` receives rank r's ``tensor``."""
    eng, g = _engine(), _native_group(group)
    x = _to_engine(eng, tensor)
    mine = eng.group_rank(g) == dst
    if eng.kind == "torch":
        outs = [_to_engine(eng, t) for t in gather_list] if mine else None
        work = eng.gather(x, outs, dst, g, async_op)
        return _done(work, async_op, lambda: [_write_back(t, o) for t, o in zip(gather_list or [], outs or [])])
    rows = eng.all_gather(x, g)

    def finish():
        eng._ev(rows)
        if mine:
            for r, t in enumerate(gather_list):
                _write_back(t, rows[r])
    return _done(None, async_op, finish)


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    """Rank r's ``tensor`` receives rank ``src``'s ``scatter_list[r]``."""
    eng, g = _engine(), _native_group(group)
    mine = eng.group_rank(g) == src
    if eng.kind == "torch":
        x = _to_engine(eng, tensor)
        ins = [_to_engine(eng, t) for t in scatter_list] if mine else None
        work = eng.scatter(x, ins, src, g, async_op)
        return _done(work, async_op, lambda: _write_back(tensor, x))
    import mlx.core as mx

    n = eng.size(g)
    x = _to_engine(eng, tensor)
    stacked = mx.stack([_to_engine(eng, t) for t in scatter_list]) if mine else \
        mx.zeros((n,) + tuple(x.shape), x.dtype)
    rows = eng.broadcast(stacked, src, g)
    return _done(None, async_op, lambda: _write_back(tensor, eng._ev(rows[eng.group_rank(g)])))


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every rank of the group reaches this call."""
    _engine().barrier(_native_group(group))
    return Work(lambda: None) if async_op else None


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    return barrier(group)


def _object_bytes(obj) -> np.ndarray:
    return np.frombuffer(pickle.dumps(obj), dtype=np.uint8)


def all_gather_object(object_list, obj, group=None) -> None:
    """``object_list[r]`` becomes rank r's ``obj`` (pickled; every rank must trust the others)."""
    eng = _engine()
    data = _object_bytes(obj)
    sizes = [tdx.zeros((), dtype=tdx.int64) for _ in range(eng.size(_native_group(group)))]
    all_gather(sizes, tdx.tensor(len(data)), group)
    longest = max(int(s.item()) for s in sizes)
    padded = np.zeros(longest, dtype=np.uint8)
    padded[:len(data)] = data
    rows = [tdx.zeros(longest, dtype=tdx.uint8) for _ in sizes]
    all_gather(rows, tdx.tensor(padded), group)
    for r, (row, size) in enumerate(zip(rows, sizes)):
        object_list[r] = pickle.loads(row.numpy(force=True)[:int(size.item())].tobytes())


def broadcast_object_list(object_list, src=0, group=None, device=None) -> None:
    """Every rank's ``object_list`` becomes rank ``src``'s (pickled)."""
    gathered = [None] * _engine().size(_native_group(group))
    all_gather_object(gathered, list(object_list) if get_rank(group) == src else None, group)
    object_list[:] = gathered[src]
