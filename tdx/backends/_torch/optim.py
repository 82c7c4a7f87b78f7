"""The torch executor's whole-group optimizer step: torch's own Adam over a param group's natives.

``torch.optim.adam.adam`` is the function torch's ``Adam``/``AdamW`` call from ``step()``; given the
group's tensors it picks torch's implementation as torch does (``foreach``/``fused`` left as None:
the multi-tensor path for CUDA parameters, the single-tensor one on the CPU), so a step through tdx
makes the kernel launches and roundings torch's own optimizer makes. It writes the natives in place
(parameters, moments, the CPU step counters). Must never import MLX or the facade.
"""

from __future__ import annotations

import torch
from torch.optim.adam import adam as _torch_adam


class TorchOptimOps:
    """The executor's ``adam_group_update`` (see :func:`tdx.compat.optim.kernels.adam_group_`)."""

    def adam_group_update(self, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, *, foreach,
                          amsgrad, beta1, beta2, lr, weight_decay, eps, maximize, decoupled) -> None:
        with torch.no_grad():
            _torch_adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, foreach=foreach,
                        capturable=False, differentiable=False, fused=None, grad_scale=None, found_inf=None,
                        has_complex=False, decoupled_weight_decay=decoupled, amsgrad=amsgrad, beta1=beta1,
                        beta2=beta2, lr=lr, weight_decay=weight_decay, eps=eps, maximize=maximize)
