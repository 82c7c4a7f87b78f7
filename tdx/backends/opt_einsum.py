"""Mirror of ``torch.backends.opt_einsum``: whether einsum contraction paths are optimized.

``enabled`` and ``strategy`` govern tdx's own ``einsum`` on every executor, so they are kept on
the tdx side and reading them never imports torch; once torch is loaded they are torch's, and
values set before that are applied to torch when it loads. As in torch, ``enabled`` defaults
to whether the ``opt_einsum`` package is installed; ``set_flags``/``flags`` validate values
(``strategy`` is ``"auto"``, ``"greedy"`` or ``"optimal"``) while plain assignment does not,
as in torch. ``flags()`` restores on exit, exceptions included.
"""

import importlib as _importlib
import types as _types
from contextlib import contextmanager as _contextmanager

from . import _flags

_TDX_EXTENSIONS = ()  # names tdx adds to torch.backends.opt_einsum: none

_UNSET = object()
_STRATEGIES = ("auto", "greedy", "optimal")


def _mod(t):
    return _flags.torch_backend(t, "opt_einsum")


_ENABLED = _flags.Flag("opt_einsum.enabled", _UNSET, lambda t: _mod(t).enabled,
                       lambda t, v: setattr(_mod(t), "enabled", v), load=False)
_STRATEGY = _flags.Flag("opt_einsum.strategy", _UNSET, lambda t: _mod(t).strategy,
                        lambda t, v: setattr(_mod(t), "strategy", v), load=False)


def is_available() -> bool:
    """Whether the ``opt_einsum`` package is installed (torch's answer once torch is loaded)."""
    torch = _flags.torch_loaded()
    if torch is not None:
        return _mod(torch).is_available()
    return _flags.installed("opt_einsum")


def get_opt_einsum():
    """The ``opt_einsum`` package if it is available, else None."""
    torch = _flags.torch_loaded()
    if torch is not None:
        return _mod(torch).get_opt_einsum()
    if not _flags.installed("opt_einsum"):
        return None
    try:
        return _importlib.import_module("opt_einsum")
    except ImportError:
        return None


def _get_enabled():
    value = _ENABLED.read()
    return bool(is_available()) if value is _UNSET else value


def _set_enabled(value) -> None:
    if _flags.torch_loaded() is None and value and not is_available():
        raise ValueError(
            f"opt_einsum is not available, so setting `enabled` to {value} will not reap the "
            "benefits of calculating an optimal path for einsum. einsum will fall back to "
            "contracting from left to right. To enable this optimal path calculation, please "
            "install opt-einsum.")
    _ENABLED.write(value)


def _get_strategy():
    value = _STRATEGY.read()
    if value is _UNSET:
        return "auto" if is_available() else None
    return value


def _check_strategy(value) -> None:
    if not is_available():
        raise ValueError(
            f"opt_einsum is not available, so setting `strategy` to {value} will not be meaningful. "
            "einsum will bypass path calculation and simply contract from left to right. Please "
            "install opt_einsum or unset `strategy`.")
    if not _get_enabled():
        raise ValueError(
            f"opt_einsum is not enabled, so setting a `strategy` to {value} will not be meaningful. "
            "einsum will bypass path calculation and simply contract from left to right. Please set "
            "`enabled` to `True` as well or unset `strategy`.")
    if value not in _STRATEGIES:
        raise ValueError(f"`strategy` must be one of the following: [auto, greedy, optimal] but is {value}")


def set_flags(_enabled=None, _strategy=None):
    """Set ``enabled``/``strategy`` where not None and return the previous pair.

    Raises:
        ValueError: the value is meaningless here (opt_einsum missing or disabled, unknown strategy).
    """
    torch = _flags.torch_loaded()
    if torch is not None:
        return _mod(torch).set_flags(_enabled, _strategy)
    orig = (_get_enabled(), None if not is_available() else _get_strategy())
    if _enabled is not None:
        _set_enabled(_enabled)
    if _strategy is not None:
        _check_strategy(_strategy)
        _STRATEGY.write(_strategy)
    return orig


@_contextmanager
def flags(enabled=None, strategy=None):
    """Set ``enabled``/``strategy`` for the ``with`` block and restore them after it, even on error."""
    orig = set_flags(enabled, strategy)
    try:
        yield
    finally:
        set_flags(*orig)


class OptEinsumModule(_types.ModuleType):
    """The class of this module: it makes ``enabled`` and ``strategy`` live attributes."""

    # As in torch, assigning the attributes is not validated; set_flags()/flags() validate.
    enabled = property(lambda self: _get_enabled(), lambda self, v: _ENABLED.write(v),
                       doc="Whether einsum optimizes its contraction path with opt_einsum.")
    strategy = property(lambda self: _get_strategy(), lambda self, v: _STRATEGY.write(v),
                        doc="The opt_einsum path strategy: 'auto', 'greedy' or 'optimal'.")


_flags.install(__name__, OptEinsumModule)
