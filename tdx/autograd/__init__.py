"""``tdx.autograd``: grad modes, ``backward``/``grad``, custom ``Function``, ``gradcheck``, anomaly
detection, ``functional`` and ``graph``, with torch's names and semantics on every executor.

The torch executor records gradients with torch's own autograd, so these calls go to torch's
over native tensors; executors without a native tape (MLX) use tdx's (:mod:`.tape`). Must never
import a framework at module level.
"""

from __future__ import annotations

from typing import Mapping, Sequence, cast, overload  # noqa: F401 - torch.autograd re-exports them

from ..aliasing.lazy_names import attach as _attach
from .anomaly import detect_anomaly, set_detect_anomaly
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
# eager: `gradcheck` and `variable` name both a function and its module, and importing the module rebinds the name
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .gradients import backward, grad
from .variable import (DeviceType, ProfilerActivity, ProfilerState, Variable, enforce_grad_layout_policy,
                       handle_torch_function, has_torch_function, is_multithreading_enabled, is_tensor_like,
                       is_view_replay_enabled, kineto_available, set_multithreading_enabled, variable)

# custom Functions and the submodules functional, graph, forward_ad: imported on first use
__getattr__, __dir__ = _attach(globals(), {".function": ("Function", "NestedIOFunction", "once_differentiable"),
                                          ".functional": (), ".graph": (), ".forward_ad": ()})

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled", "grad", "backward",
           "Function", "NestedIOFunction", "once_differentiable", "detect_anomaly", "set_detect_anomaly",
           "gradcheck", "gradgradcheck", "GradcheckError", "Variable", "variable", "DeviceType", "ProfilerActivity",
           "ProfilerState", "enforce_grad_layout_policy", "handle_torch_function", "has_torch_function",
           "is_multithreading_enabled", "is_tensor_like", "is_view_replay_enabled", "kineto_available",
           "set_multithreading_enabled", "Mapping", "Sequence", "cast", "overload", "functional", "graph"]
