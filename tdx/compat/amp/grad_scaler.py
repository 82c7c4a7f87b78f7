"""``torch.amp.grad_scaler``: ``GradScaler``, dynamic loss scaling with torch's semantics on every executor.

``scale`` multiplies outputs by the current scale (a float32 tensor on the outputs' device), ``unscale_``
multiplies an optimizer's gradients by the scale's reciprocal in place and records whether any was inf or
NaN, ``step`` runs ``optimizer.step()`` only when none was, and ``update`` backs the scale off after an
overflow or grows it after ``growth_interval`` clean steps (torch's ``_amp_update_scale_`` rule: float32
arithmetic, a growth that would overflow is skipped). So on the cpu executor the scale sequence and the
parameters equal torch's. ``enabled=False`` makes every method a passthrough. This module must never import
a framework.
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from collections.abc import Iterable
from enum import Enum

from ... import _dtypes as D
from ..._errors import TdxError, TdxRuntimeError, TdxValueError

__all__ = ["GradScaler", "OptState"]


class GradScalerStateError(TdxError, AssertionError):
    """A ``GradScaler`` method called out of order, or a growth/backoff factor out of range (torch asserts
    these)."""


class OptState(Enum):
    """Where an optimizer is in the current iteration."""

    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


def _is_tensor(x) -> bool:
    from ..._tensor.tensor import Tensor

    return isinstance(x, Tensor)


class GradScaler:
    """Dynamic loss scaling (``torch.amp.GradScaler``).

    Args:
        device: the device type the scaler serves (``"cuda"`` by default, as torch; ``"cpu"``, ``"mlx"``...).
        init_scale: the first scale.
        growth_factor: the scale's factor after ``growth_interval`` steps without inf/NaN gradients (> 1).
        backoff_factor: the scale's factor after a step with inf/NaN gradients (in (0, 1)).
        growth_interval: clean steps between growths.
        enabled: False makes every method a passthrough (``scale`` returns its input, ``step`` steps).

    Raises:
        TdxValueError: a growth factor not above 1 or a backoff factor outside (0, 1).
    """

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = str(device)
        self._enabled = bool(enabled)
        if self._device == "cuda" and self._enabled:
            from ..cuda import is_available

            if not is_available():
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                              stacklevel=2)
                self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:  # torch asserts both (an AssertionError), and checks nothing more
                raise GradScalerStateError(f"The growth factor must be > 1.0 (got {growth_factor}).")
            if backoff_factor >= 1.0:
                raise GradScalerStateError(f"The backoff factor must be < 1.0 (got {backoff_factor}).")
            self._init_scale = init_scale
            self._scale = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    # -- the scale and the growth tracker live as tensors on the outputs' device, as torch's
    def _check_scale_growth_tracker(self, funcname: str):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise GradScalerStateError(f"Attempted {funcname} but _scale is None.  {fix}")
        if self._growth_tracker is None:
            raise GradScalerStateError(f"Attempted {funcname} but _growth_tracker is None.  {fix}")
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, device) -> None:
        import tdx

        self._scale = tdx.full((), self._init_scale, dtype=D.float32, device=device)
        self._growth_tracker = tdx.full((), self._init_growth_tracker, dtype=D.int32, device=device)

    def scale(self, outputs):
        """``outputs`` (a tensor, or lists/tuples of them) multiplied by the current scale.

        Raises:
            TdxValueError: ``outputs`` holds something other than tensors.
        """
        if not self._enabled:
            return outputs
        if _is_tensor(outputs):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device)

        def apply(val):
            if _is_tensor(val):
                if self._scale is None:
                    self._lazy_init_scale_growth_tracker(val.device)
                return val * self._scale.to(device=val.device)
            if isinstance(val, (list, tuple)):
                out = [apply(v) for v in val]
                return type(val)(out) if isinstance(val, list) or type(val) is tuple else tuple(out)
            if isinstance(val, Iterable):  # another iterable: a lazy map over it, as torch returns
                return map(apply, val)
            raise TdxValueError(f"outputs must be a Tensor or an iterable of Tensors, not {type(val).__name__}")

        return apply(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16: bool) -> dict:
        """Multiply every gradient of ``optimizer`` by ``inv_scale`` in place; per device, whether any was
        inf or NaN (a float32 0-d tensor, 1.0 or 0.0)."""
        import tdx

        per_device = {}
        with tdx.no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    grad = getattr(param, "grad", None)
                    if grad is None:
                        continue
                    if not allow_fp16 and grad.dtype is D.float16:
                        raise TdxValueError("Attempting to unscale FP16 gradients.")
                    dev = str(grad.device)
                    bad = (~grad.isfinite()).any()
                    per_device[dev] = bad if dev not in per_device else (per_device[dev] | bad)
                    grad.mul_(inv_scale.to(device=grad.device))
        found = {}
        for dev, bad in per_device.items():
            flag = found_inf.to(device=dev).clone()
            found[dev] = tdx.where(bad, tdx.ones_like(flag), flag)
        return found

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale in place (once per iteration, before ``step``).

        Raises:
            TdxRuntimeError: called twice in one iteration, or after ``step``.
            TdxValueError: float16 gradients.
        """
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise TdxRuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise TdxRuntimeError("unscale_() is being called after step().")
        import tdx

        inv_scale = tdx.tensor(1.0 / float(self._scale.item()), dtype=D.float32, device=self._scale.device)
        found_inf = tdx.full((), 0.0, dtype=D.float32, device=self._scale.device)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, state, *args, **kwargs):
        if not sum(v.item() for v in state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step(*args, **kwargs)`` after unscaling its gradients, skipped when any was inf/NaN.

        Returns:
            What ``optimizer.step`` returned, or None when skipped.

        Raises:
            TdxRuntimeError: a ``closure`` argument, or a second ``step`` before ``update``.
        """
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise TdxRuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise TdxRuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if not state["found_inf_per_device"]:
            raise GradScalerStateError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, state, *args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None) -> None:
        """Back the scale off after an inf/NaN step, or grow it after ``growth_interval`` clean steps; or set
        it to ``new_scale`` (a float or a 1-element float32 tensor).

        Raises:
            GradScalerStateError: no ``scale``/``step`` came first, or a ``new_scale`` tensor of the wrong kind.
        """
        if not self._enabled:
            return
        scale, tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or torch.FloatTensor "
                          "with requires_grad=False.")
                if not (_is_tensor(new_scale) and new_scale.dtype is D.float32 and new_scale.numel() == 1
                        and not new_scale.requires_grad):
                    raise GradScalerStateError(reason)
                scale.copy_(new_scale.reshape(()))
        else:
            found = [f for st in self._per_optimizer_states.values() for f in st["found_inf_per_device"].values()]
            if not found:
                raise GradScalerStateError("No inf checks were recorded prior to update.")
            overflow = any(float(f.item()) for f in found)
            value = float(scale.item())
            if overflow:
                value = value * self._backoff_factor
                count = 0
            else:
                count = int(tracker.item()) + 1
                if count == self._growth_interval:
                    grown = _as_float32(value * self._growth_factor)
                    if math.isfinite(grown):
                        value = grown
                    count = 0
            scale.fill_(value)
            tracker.fill_(count)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _get_scale_async(self):
        return self._scale

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale.item())

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())

    def is_enabled(self) -> bool:
        """Whether the scaler scales (False after ``enabled=False``, or for ``cuda`` without CUDA)."""
        return self._enabled

    def state_dict(self) -> dict:
        """``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval`` and ``_growth_tracker``
        ({} when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict) -> None:
        """Restore what :meth:`state_dict` returned.

        Raises:
            TdxRuntimeError: an empty state dict (saved from a disabled scaler).
        """
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise TdxRuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                                  "instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise TdxRuntimeError("A GradScaler instance may only be pickled at the beginning of an iteration, "
                                      "or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)


def device_spelling(device: str, module: str):
    """torch's deprecated ``torch.<device>.amp.GradScaler(init_scale, ...)`` class: ``GradScaler(device, ...)``,
    warning torch's ``FutureWarning`` when made.

    Args:
        device: ``"cuda"`` or ``"cpu"``.
        module: the module the class is named in.
    """

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        warnings.warn(f"`torch.{device}.amp.GradScaler(args...)` is deprecated. Please use "
                      f"`torch.amp.GradScaler('{device}', args...)` instead.", FutureWarning, stacklevel=2)
        GradScaler.__init__(self, device, init_scale=init_scale, growth_factor=growth_factor,
                            backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)

    doc = f"``torch.{device}.amp.GradScaler(args...)``: deprecated for ``torch.amp.GradScaler('{device}', ...)``."
    return type("GradScaler", (GradScaler,), {"__init__": __init__, "__doc__": doc, "__module__": module})


def _as_float32(value: float) -> float:
    """``value`` rounded to the nearest float32 (the scale is a float32, as torch's)."""
    import struct

    try:
        return struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        return math.inf
