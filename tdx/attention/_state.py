"""Which attention kernels are enabled: ``SDPBackend``, ``sdpa_kernel`` and the global switches.

The enabled set of one call is, highest precedence first: the innermost ``sdpa_kernel``
block of the calling thread or asyncio task (a ``contextvars`` variable, so it never leaks
to another thread or task, unlike torch's process-wide flags); else the global switches
(``tdx.backends.cuda.enable_*_sdp``, ``tdx.backends.mlx.enable_fused_sdpa``) restricted to
the config's ``[attention] priority`` list when that list is not empty.

This module must never import a framework, and never decides whether a kernel can run
particular inputs (that is ``tdx.attention._kernels``).
"""

from __future__ import annotations

import contextlib
import contextvars
import enum
import importlib
import sys

from .. import config as _config
from .._errors import TdxTypeError, TdxValueError

__all__ = ["SDPBackend", "sdpa_kernel", "enabled", "context_backends", "KERNEL_NAMES",
           "backend_from_name"]


class SDPBackend(enum.IntEnum):
    """The attention kernels: torch's members with torch's values, then tdx's own.

    ``MLX_FUSED`` is MLX's ``mx.fast.scaled_dot_product_attention``; ``CHUNKED`` is tdx's
    online-softmax kernel whose memory grows linearly with the sequence length; ``BRIDGE``
    runs the inputs on a peer executor's kernel through zero-copy DLPack exchange.
    """

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4
    MLX_FUSED = 101
    CHUNKED = 102
    BRIDGE = 103


# SDPBackend <-> the kernel names of the config's [attention] priority (tdx.config.SDPA_KERNELS)
KERNEL_NAMES = {
    SDPBackend.FLASH_ATTENTION: "flash", SDPBackend.EFFICIENT_ATTENTION: "efficient",
    SDPBackend.CUDNN_ATTENTION: "cudnn", SDPBackend.MATH: "math", SDPBackend.MLX_FUSED: "mlx_fused",
    SDPBackend.CHUNKED: "chunked", SDPBackend.BRIDGE: "bridge",
}
_BY_NAME = {v: k for k, v in KERNEL_NAMES.items()}
# every backend a kernel exists for, in torch's default priority, then tdx's
ALL = (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH,
       SDPBackend.CUDNN_ATTENTION, SDPBackend.OVERRIDEABLE, SDPBackend.MLX_FUSED, SDPBackend.CHUNKED,
       SDPBackend.BRIDGE)


def backend_from_name(name: str) -> SDPBackend:
    """The backend for a config kernel name (``"flash"``) or a member name (``"FLASH_ATTENTION"``).

    Raises:
        TdxValueError: the name is neither.
    """
    if name in _BY_NAME:
        return _BY_NAME[name]
    try:
        return SDPBackend[name.upper()]
    except KeyError:
        raise TdxValueError(f"unknown attention kernel {name!r}; expected one of "
                            f"{', '.join(_BY_NAME)} or an SDPBackend member name") from None


class _Override:
    """The state one ``sdpa_kernel`` block sets: its backends and whether their order is a priority."""

    __slots__ = ("backends", "priority")

    def __init__(self, backends: tuple, priority: bool):
        self.backends, self.priority = backends, priority

    def __repr__(self) -> str:
        names = ", ".join(b.name for b in self.backends)
        return f"sdpa_kernel([{names}]{', set_priority=True' if self.priority else ''})"


_CTX: contextvars.ContextVar = contextvars.ContextVar("tdx_sdpa_kernel", default=None)


def _as_backend(b) -> SDPBackend:
    if isinstance(b, SDPBackend):
        return b
    if isinstance(b, str):
        return backend_from_name(b)
    value = getattr(b, "value", b)  # torch's own SDPBackend members carry torch's values
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return SDPBackend(value)
        except ValueError:
            pass
    raise TdxTypeError(f"sdpa_kernel expects an SDPBackend or a list of them, got {b!r}; "
                       f"members: {', '.join(SDPBackend.__members__)}")


def _as_backends(backends) -> tuple:
    if isinstance(backends, (list, tuple, set, frozenset)):
        out = []
        for b in backends:
            b = _as_backend(b)
            if b not in out:
                out.append(b)
        return tuple(out)
    return (_as_backend(backends),)


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """Run the ``with`` block (or decorated function) with only ``backends`` enabled.

    Unlike torch's, the setting belongs to the calling thread and asyncio task, so other
    threads keep their own. The previous state is restored on exit, even on an exception.

    Args:
        backends: an :class:`SDPBackend` or a list of them (torch's members are accepted, and
            config kernel names such as ``"chunked"``).
        set_priority: when True, the list order is the order kernels are tried in; otherwise
            tdx picks the kernel it expects to be fastest among those listed.

    Raises:
        TdxTypeError: an entry is not a backend.
    """
    override = _Override(_as_backends(backends), bool(set_priority))
    token = _CTX.set(override)
    try:
        yield
    finally:
        _CTX.reset(token)


def current_override():
    """The innermost ``sdpa_kernel`` block's state in this thread/task (``.backends``, ``.priority``), or None."""
    return _CTX.get()


override_getter = _CTX.get  # current_override as the context variable's own method: no frame, for per-call paths


def config_priority() -> tuple:
    """The backends of the config's ``[attention] priority``, in order (empty: automatic)."""
    if PRIORITY:  # read once per config (a reload empties it): a per-call path reads PRIORITY[0] itself
        return PRIORITY[0]
    listed = _config.current()["attention.priority"]
    hit = tuple(_BY_NAME[n] for n in listed) if listed else ()
    PRIORITY[:] = [hit]
    return hit


PRIORITY: list = []  # [the config's priority] once read
_config.on_reload(PRIORITY.clear)


def context_backends():
    """The backends of the innermost ``sdpa_kernel`` block of this thread/task, or None outside one."""
    override = _CTX.get()
    return None if override is None else override.backends


def _mirror(name: str):
    """``tdx.backends.<name>`` if that module exists, else None (it is built separately)."""
    full = f"tdx.backends.{name}"
    mod = sys.modules.get(full)
    if mod is not None:
        return mod
    try:
        return importlib.import_module(full)
    except ModuleNotFoundError as e:
        if e.name != full:
            raise
        return None


_GETTERS = {SDPBackend.FLASH_ATTENTION: ("cuda", "flash_sdp_enabled"),
            SDPBackend.EFFICIENT_ATTENTION: ("cuda", "mem_efficient_sdp_enabled"),
            SDPBackend.MATH: ("cuda", "math_sdp_enabled"),
            SDPBackend.CUDNN_ATTENTION: ("cuda", "cudnn_sdp_enabled"),
            SDPBackend.MLX_FUSED: ("mlx", "fused_sdpa_enabled")}
_bound: dict = {}


def _mlx_config_switch() -> bool:
    return bool(_config.current()["backends.mlx.fused_sdpa"])


def _getter(backend):
    """The zero-argument function answering ``backend``'s switch (resolved once the mirror exists)."""
    fn = _bound.get(backend)
    if fn is None:
        module, name = _GETTERS[backend]
        fn = getattr(_mirror(module), name, None)
        if fn is None:  # the mirror module is not there: the config (MLX) or "on" answers
            return _mlx_config_switch if backend is SDPBackend.MLX_FUSED else _on
        _bound[backend] = fn
    return fn


def _on() -> bool:
    return True


def switch_reader(backend: SDPBackend):
    """A zero-argument function whose truth is :func:`switch` of ``backend``, with no frames of its own."""
    return _getter(backend) if backend in _GETTERS else _on


def switch(backend: SDPBackend) -> bool:
    """The global switch of ``backend`` (True for kernels that have none).

    Reading a switch never imports a framework.
    """
    fn = _bound.get(backend)  # the common case (a switch read before): no further frame
    if fn is None:
        if backend not in _GETTERS:
            return True
        fn = _getter(backend)
    return bool(fn())


class Enabled:
    """The enabled kernels for one call.

    Attributes:
        backends: the enabled backends; in priority order when ``priority`` is True.
        priority: whether ``backends`` is an explicit order (``set_priority=True`` or the config's
            ``[attention] priority``) rather than a set for the cost model to order.
        disabled: ``{backend: why it is disabled}`` for every other backend.
    """

    __slots__ = ("backends", "priority", "disabled")

    def __init__(self, backends, priority, disabled):
        self.backends, self.priority, self.disabled = tuple(backends), priority, disabled


def enabled() -> Enabled:
    """The kernels enabled for a call made now, from this thread/task's context, the switches
    and the config."""
    override = _CTX.get()
    if override is not None:
        disabled = {b: f"not listed in the enclosing {override!r}" for b in ALL if b not in override.backends}
        return Enabled(override.backends, override.priority, disabled)
    return global_enabled()


def global_enabled() -> Enabled:
    """The kernels the global switches and the config enable (outside any ``sdpa_kernel`` block)."""
    cfg = _config.current()
    listed = cfg["attention.priority"]
    order = tuple(_BY_NAME[n] for n in listed) if listed else ALL
    disabled = {}
    if listed:
        for b in ALL:
            if b not in order:
                disabled[b] = f"not in [attention] priority = {listed} ({cfg.origin['attention.priority']})"
    backends = []
    for b in order:
        if switch(b):
            backends.append(b)
        else:
            disabled[b] = _SWITCH_OFF.get(b, "disabled")
    return Enabled(backends, bool(listed), disabled)


_SWITCH_OFF = {
    SDPBackend.FLASH_ATTENTION: "disabled by tdx.backends.cuda.enable_flash_sdp(False)",
    SDPBackend.EFFICIENT_ATTENTION: "disabled by tdx.backends.cuda.enable_mem_efficient_sdp(False)",
    SDPBackend.MATH: "disabled by tdx.backends.cuda.enable_math_sdp(False)",
    SDPBackend.CUDNN_ATTENTION: "disabled by tdx.backends.cuda.enable_cudnn_sdp(False)",
    SDPBackend.MLX_FUSED: "disabled by tdx.backends.mlx.enable_fused_sdpa(False) or the config key "
                          "backends.mlx.fused_sdpa",
}
