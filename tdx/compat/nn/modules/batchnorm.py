"""Batch and instance normalization modules of ``tdx.nn``: ``BatchNorm1d/2d/3d``, ``InstanceNorm1d/2d/3d``,
their lazy forms, and ``SyncBatchNorm`` (a single-process ``BatchNorm``).

Running statistics are buffers (``running_mean``, ``running_var``, ``num_batches_tracked``) with
torch's update rule; ``momentum=None`` gives the cumulative average ``1 / num_batches_tracked``.
This module must never import torch or mlx.
"""

from __future__ import annotations

import tdx
from .. import functional as F
from ..parameter import Parameter, UninitializedBuffer, UninitializedParameter
from . import _default_init as init
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "InstanceNorm1d", "InstanceNorm2d",
           "InstanceNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class _NormBase(Module):
    """Affine parameters and running statistics (torch's ``_NormBase``)."""

    _version = 2
    __constants__ = ["track_running_stats", "momentum", "eps", "num_features", "affine"]

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(tdx.empty(num_features, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(tdx.empty(num_features, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", tdx.zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", tdx.ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", tdx.tensor(0, dtype=tdx.long, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Zero the running mean and the batch count; the running variance becomes ones."""
        if self.track_running_stats:
            with tdx.no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """Reset the running statistics; ``weight`` becomes ones and ``bias`` zeros."""
        self.reset_running_stats()
        if self.affine:
            init.fill_(self.weight, 1.0)
            if self.bias is not None:
                init.fill_(self.bias, 0.0)

    def _check_input_dim(self, input):  # noqa: A002 - torch's name
        raise NotImplementedError

    def extra_repr(self) -> str:
        return ("{num_features}, eps={eps}, momentum={momentum}, affine={affine}, bias={use_bias}, "
                "track_running_stats={track_running_stats}".format(**self.__dict__, use_bias=self.bias is not None))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            key = prefix + "num_batches_tracked"  # added in version 2, defaults to 0
            if key not in state_dict:
                state_dict[key] = (self.num_batches_tracked if self.num_batches_tracked is not None
                                   else tdx.tensor(0, dtype=tdx.long))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)


class _BatchNorm(_NormBase):
    def forward(self, input):  # noqa: A002 - torch's name
        """Normalize by batch statistics in training (updating the running ones) or by the running ones."""
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with tdx.no_grad():
                self.num_batches_tracked.add_(1)
            factor = 1.0 / float(self.num_batches_tracked.item()) if self.momentum is None else self.momentum
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_running = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_running else None,
                            self.running_var if use_running else None, self.weight, self.bias, bn_training, factor,
                            self.eps)


def _dims_error(expected: str, input) -> Exception:  # noqa: A002 - torch's name
    return tdx.TdxValueError(f"expected {expected} input (got {input.ndim}D input)")


class BatchNorm1d(_BatchNorm):
    """Batch normalization over ``(N, C)`` or ``(N, C, L)``.

    Args:
        num_features: ``C``.
        eps: added to the variance. momentum: the running statistics' factor (None: cumulative average).
        affine: learn ``weight`` and ``bias``. track_running_stats: keep running statistics for eval.

    Raises:
        TdxValueError: an input of another rank.
    """

    def _check_input_dim(self, input):  # noqa: A002 - torch's name
        if input.ndim not in (2, 3):
            raise _dims_error("2D or 3D", input)


class BatchNorm2d(_BatchNorm):
    """Batch normalization over ``(N, C, H, W)``; see :class:`BatchNorm1d`."""

    def _check_input_dim(self, input):  # noqa: A002 - torch's name
        if input.ndim != 4:
            raise _dims_error("4D", input)


class BatchNorm3d(_BatchNorm):
    """Batch normalization over ``(N, C, D, H, W)``; see :class:`BatchNorm1d`."""

    def _check_input_dim(self, input):  # noqa: A002 - torch's name
        if input.ndim != 5:
            raise _dims_error("5D", input)


class SyncBatchNorm(_BatchNorm):
    """Batch normalization over any ``(N, C, *)`` input; in one process it is :class:`BatchNorm1d`'s
    arithmetic (tdx has no process group to synchronize statistics across)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None, *, bias=True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):  # noqa: A002 - torch's name
        if input.ndim < 2:
            raise tdx.TdxValueError(f"expected at least 2D input (got {input.ndim}D input)")

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every ``BatchNorm*d`` replaced by a ``SyncBatchNorm`` holding its state."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = SyncBatchNorm(module.num_features, module.eps, module.momentum, module.affine,
                                module.track_running_stats, process_group)
            if module.affine:
                with tdx.no_grad():
                    out.weight = module.weight
                    out.bias = module.bias
            out.running_mean, out.running_var = module.running_mean, module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out


class _InstanceNorm(_NormBase):
    _nd = 1

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None, *, bias=True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _check_input_dim(self, input):  # noqa: A002 - torch's name
        if input.ndim not in (self._nd + 1, self._nd + 2):
            raise _dims_error(f"{self._nd + 1}D or {self._nd + 2}D", input)

    def forward(self, input):  # noqa: A002 - torch's name
        """Normalize each channel of each sample over its spatial dims."""
        self._check_input_dim(input)
        unbatched = input.ndim == self._nd + 1
        x = input.unsqueeze(0) if unbatched else input
        if x.shape[1] != self.num_features and self.affine:
            raise tdx.TdxValueError(f"expected input's size at dim=1 to match num_features ({self.num_features}), "
                                    f"but got: {x.shape[1]}.")
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats, self.momentum
                              if self.momentum is not None else 0.0, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization over ``(N, C, L)`` or ``(C, L)``; no affine parameters or running
    statistics by default."""

    _nd = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization over ``(N, C, H, W)`` or ``(C, H, W)``."""

    _nd = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization over ``(N, C, D, H, W)`` or ``(C, D, H, W)``."""

    _nd = 3


_BUILDING_LAZY = [0]


class _LazyNormMixin:
    """``num_features`` taken from the first input's channels; the module then becomes its eager class."""

    cls_to_become = None

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer still waits for its shape."""
        return any(isinstance(p, (UninitializedParameter, UninitializedBuffer))
                   for p in (self.weight, self.bias, self.running_mean, self.running_var) if p is not None)

    def reset_parameters(self) -> None:
        """Initialise as the eager class once shapes are known (nothing before)."""
        if not _BUILDING_LAZY[0] and not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:  # noqa: A002 - torch's name
        """Give the parameters and buffers their shapes from ``input``'s channels, and initialise them."""
        if not self.has_uninitialized_params():
            return
        batched = not isinstance(self, _InstanceNorm) or input.ndim == self._nd + 2
        self.num_features = input.shape[1 if batched else 0]
        with tdx.no_grad():
            for name in ("weight", "bias", "running_mean", "running_var"):
                p = getattr(self, name)
                if isinstance(p, (UninitializedParameter, UninitializedBuffer)):
                    p.materialize((self.num_features,))
                elif p is not None and tuple(p.shape) != (self.num_features,):
                    # a module move (``.to``) replaced the placeholder buffer by an empty tensor
                    setattr(self, name, tdx.empty(self.num_features, device=p.device, dtype=p.dtype))
            self.reset_parameters()

    @staticmethod
    def _infer_parameters(module, args) -> None:
        module.initialize_parameters(*args)
        module._lazy_hook.remove()
        del module._lazy_hook
        module.__class__ = module.cls_to_become


def _lazy(eager, affine_default, track_default):
    def __init__(self, eps=1e-5, momentum=0.1, affine=affine_default, track_running_stats=track_default,
                 device=None, dtype=None, *, bias=True):
        _BUILDING_LAZY[0] += 1
        try:
            eager.__init__(self, 0, eps, momentum, False, False, device, dtype)
        finally:
            _BUILDING_LAZY[0] -= 1
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = tdx.tensor(0, dtype=tdx.long, device=device)
        self._lazy_hook = self.register_forward_pre_hook(_LazyNormMixin._infer_parameters)

    doc = (f"A :class:`{eager.__name__}` whose ``num_features`` is inferred from the first input; it then "
           f"becomes a plain ``{eager.__name__}``.")
    return type("Lazy" + eager.__name__, (_LazyNormMixin, eager),
                {"__init__": __init__, "cls_to_become": eager, "__doc__": doc, "__module__": __name__})


LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d = (_lazy(c, True, True)
                                                     for c in (BatchNorm1d, BatchNorm2d, BatchNorm3d))
LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d = (_lazy(c, False, False) for c in
                                                              (InstanceNorm1d, InstanceNorm2d, InstanceNorm3d))
