"""Anomaly detection for backward passes: ``detect_anomaly`` and ``set_detect_anomaly``, as torch's.

When it is on, tdx's tape checks every gradient a node returns and raises, naming the node,
when one holds NaN; torch executors get torch's own anomaly mode switched with it. The switch is
process-wide, as torch's. Must never import a framework at module level.
"""

from __future__ import annotations

import functools
import sys

from .._errors import TdxRuntimeError

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled"]

_STATE = {"enabled": False, "check_nan": True}


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on."""
    return _STATE["enabled"]


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection checks gradients for NaN."""
    return _STATE["check_nan"]


def _set(mode: bool, check_nan: bool) -> None:
    _STATE["enabled"], _STATE["check_nan"] = bool(mode), bool(check_nan)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.autograd.set_detect_anomaly(bool(mode), bool(check_nan))


def check_grads(node, grads) -> None:
    """Raise torch's error when a gradient ``node`` returned holds NaN (and NaN checks are on).

    Raises:
        TdxRuntimeError: ``Function '<name>' returned nan values in its <i>th output.``
    """
    if not _STATE["check_nan"]:
        return
    import mlx.core as mx

    for i, g in enumerate(grads):
        if g is None:
            continue
        n = g._n if hasattr(g, "_n") else g
        if mx.issubdtype(n.dtype, mx.inexact) and bool(mx.any(mx.isnan(n)).item()):
            raise TdxRuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")


class detect_anomaly:  # noqa: N801 - torch's name
    """Context manager (and decorator) that turns anomaly detection on inside its block.

    Args:
        check_nan (bool): raise when a backward node returns NaN. Default: ``True``.
    """

    def __init__(self, check_nan: bool = True):
        self.check_nan = bool(check_nan)
        self.prev = self.prev_check_nan = None

    def __enter__(self):
        self.prev, self.prev_check_nan = _STATE["enabled"], _STATE["check_nan"]
        _set(True, self.check_nan)
        return self

    def __exit__(self, *exc) -> None:
        _set(self.prev, self.prev_check_nan)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(self.check_nan):
                return fn(*args, **kwargs)

        return wrapper


class set_detect_anomaly:  # noqa: N801 - torch's name
    """Turn anomaly detection on or off now; as a context manager, restore the previous state on exit.

    Args:
        mode (bool): on (True) or off (False).
        check_nan (bool): raise when a backward node returns NaN. Default: ``True``.
    """

    def __init__(self, mode: bool, check_nan: bool = True):
        self.prev, self.prev_check_nan = _STATE["enabled"], _STATE["check_nan"]
        _set(mode, check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        _set(self.prev, self.prev_check_nan)
