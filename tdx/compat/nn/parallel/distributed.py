"""``DistributedDataParallel``: a module whose gradients are averaged across the ranks after backward.

At construction rank 0's parameters and buffers are broadcast to every rank. The parameters that
require grad are split into buckets (about ``bucket_cap_mb`` each, by device and dtype, in reverse
registration order as torch's); each parameter gets a post-accumulate-grad hook, and once every
parameter of a bucket has its gradient for this backward the bucket's gradients are flattened into
one tensor and all-reduced (one collective per bucket, not per parameter), then written back into
each ``.grad``. Works on every executor: the hook is torch's own on torch devices and tdx's tape's
on MLX. ``no_sync()`` skips the reduction (gradients accumulate locally until a synced backward).

Must never import a framework; collectives go through :mod:`tdx.distributed`.
"""

from __future__ import annotations

import contextlib

import tdx

from ...._errors import TdxRuntimeError
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]

_DEFAULT_BUCKET_MB = 25.0


class DistributedDataParallel(Module):
    """Data parallelism across the ranks of the process group, as ``torch.nn.parallel.DistributedDataParallel``.

    Args:
        module: the model; every rank builds the same one.
        device_ids, output_device, dim: torch's; the module stays on its own device (tdx moves
            nothing), so these are accepted for single-device modules.
        broadcast_buffers: broadcast rank 0's buffers before each forward.
        process_group: the group to reduce over (default: the whole world).
        bucket_cap_mb: the size of a gradient bucket.
        find_unused_parameters: after each forward, walk the autograd graph from the outputs and
            mark the parameters it does not reach as ready (their gradients count as zeros).
        gradient_as_bucket_view, static_graph, check_reduction: accepted; no effect here.

    Raises:
        TdxRuntimeError: the process group is not initialized; a backward left a bucket unreduced
            (a parameter got no gradient) and ``find_unused_parameters`` is False.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, delay_all_reduce_named_params=None,
                 param_to_hook_all_reduce=None, mixed_precision=None, device_mesh=None):
        super().__init__()
        from ... import distributed as dist

        if not dist.is_initialized():
            raise TdxRuntimeError("Default process group has not been initialized, please make sure to call "
                                  "init_process_group.")
        self.module = module
        self.process_group = process_group
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self._dist = dist
        self._params = [p for p in module.parameters() if p.requires_grad]
        with tdx.no_grad():
            for t in list(module.parameters()) + list(module.buffers()):
                dist.broadcast(t, 0, group=process_group)
        cap = (_DEFAULT_BUCKET_MB if bucket_cap_mb is None else float(bucket_cap_mb)) * 2 ** 20
        self._buckets = _buckets(self._params, cap)
        self._bucket_of = {id(p): b for b, bucket in enumerate(self._buckets) for p in bucket}
        self._ready = [set() for _ in self._buckets]
        self._pending = False
        self._handles = [p.register_post_accumulate_grad_hook(self._on_grad) for p in self._params]

    # torch's attribute access: the wrapped module's attributes are reached through .module
    def forward(self, *args, **kwargs):
        if self._pending and self.require_backward_grad_sync and not self.find_unused_parameters:
            raise TdxRuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a new one. This "
                "error indicates that your module has parameters that were not used in producing loss. You can "
                "enable unused parameter detection by passing the keyword argument `find_unused_parameters=True` "
                "to `torch.nn.parallel.DistributedDataParallel`")
        self._ready = [set() for _ in self._buckets]
        if self.broadcast_buffers:
            with tdx.no_grad():
                for b in self.module.buffers():
                    self._dist.broadcast(b, 0, group=self.process_group)
        out = self.module(*args, **kwargs)
        self._pending = tdx.is_grad_enabled() and self.require_backward_grad_sync
        if self._pending and self.find_unused_parameters:
            used = _reachable_leaves(out)
            for p in self._params:
                if id(p) not in used and id(p.native) not in used:
                    self._mark(p)
        return out

    @contextlib.contextmanager
    def no_sync(self):
        """Inside, backward accumulates gradients locally without reducing them."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def _on_grad(self, p) -> None:
        if self.require_backward_grad_sync:
            self._mark(p)

    def _mark(self, p) -> None:
        b = self._bucket_of[id(p)]
        self._ready[b].add(id(p))
        if len(self._ready[b]) == len(self._buckets[b]):
            self._reduce(b)
            if all(len(r) == len(bucket) for r, bucket in zip(self._ready, self._buckets)):
                self._pending = False

    def _reduce(self, b) -> None:
        """All-reduce bucket ``b``'s gradients as one flat tensor and write the averages back."""
        bucket = self._buckets[b]
        with tdx.no_grad():
            flat = tdx.cat([(p.grad if p.grad is not None else tdx.zeros_like(p)).reshape(-1) for p in bucket])
            self._dist.all_reduce(flat, op=self._dist.ReduceOp.AVG, group=self.process_group)
            start = 0
            for p in bucket:
                n = p.numel()
                p.grad = flat[start:start + n].reshape(p.shape).clone()
                start += n


def _buckets(params, cap_bytes) -> list:
    """Parameters grouped in reverse order into buckets of at most ``cap_bytes`` (one device and dtype each)."""
    out, current, size, key = [], [], 0, None
    for p in reversed(params):
        k = (str(p.device), p.dtype)
        nbytes = p.numel() * p.element_size()
        if current and (k != key or size + nbytes > cap_bytes):
            out.append(current)
            current, size = [], 0
        current.append(p)
        size += nbytes
        key = k
    if current:
        out.append(current)
    return out


def _reachable_leaves(out) -> set:
    """``id`` of every leaf the autograd graph of ``out`` reaches: tdx tensors on the tape, natives
    (``AccumulateGrad.variable``) on torch devices."""
    roots = [t for t in _tensors(out) if t.grad_fn is not None]
    seen, leaves, stack = set(), set(), [t.grad_fn for t in roots]
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        variable = getattr(fn, "variable", None)  # torch's AccumulateGrad
        if variable is not None:
            leaves.add(id(variable))
        for nxt in getattr(fn, "next_functions", ()):  # torch's graph
            stack.append(nxt[0])
        for inp in getattr(fn, "inputs", ()):  # tdx's tape: a node's input tensors
            if inp.grad_fn is None:
                leaves.add(id(inp))
            else:
                stack.append(inp.grad_fn)
    return leaves


def _tensors(out):
    if isinstance(out, tdx.Tensor):
        return [out]
    if isinstance(out, dict):
        return [t for v in out.values() for t in _tensors(v)]
    if isinstance(out, (list, tuple)):
        return [t for v in out for t in _tensors(v)]
    return []
