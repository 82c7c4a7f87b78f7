"""Executor registry, device resolution and translation, and the ``torch.backends`` mirrors.

Providers come from the ``tdx.backends`` entry-point group (the built-ins register the
same way). Executors are built on first use, one per device, and cached; a requested
device that is not available is translated through the config's ``device_map`` and then
``fallback`` (one ``UserWarning`` per translation), or refused when ``strict = true``.

The flag modules named in ``_MIRRORS`` (``tdx.backends.cuda`` ...) are imported on
attribute access. Nothing here imports a framework until a device is asked for.
"""

from __future__ import annotations

import importlib
import threading
import warnings

from .. import config as _config
from .._device import _pin as _device_state, as_device, context_device
from .._errors import BackendNotFoundError, DeviceUnavailableError, TdxValueError
from . import _seeding
from .base import Capabilities, DeviceStatus, Executor, Provider

__all__ = ["register", "get", "available", "providers", "default_executor", "set_default_device",
           "get_default_device", "pin", "unpin", "pinned", "Executor", "Provider", "Capabilities", "DeviceStatus"]

_MIRRORS = ("cpu", "cuda", "cudnn", "cusparselt", "mha", "miopen", "mps", "mkl", "mkldnn", "nnpack",
            "openmp", "opt_einsum", "kleidiai", "python_native", "quantized", "xnnpack", "xeon", "mlx")

_lock = threading.RLock()
_providers: dict = {}
_by_type: dict = {}
_executors: dict = {}    # canonical device name -> Executor
_seeding.EXECUTORS = _executors  # manual_seed seeds every built executor
_resolved: dict = {}     # requested device (str or device) -> Executor
_statuses: dict = {}     # provider name -> list[DeviceStatus]
_warned: set = set()
_state = {"loaded": False, "default": None, "pin": None, "pin_source": None, "pin_warned": False}
class _Thread(threading.local):
    """This thread's ``set_default_device`` (``explicit``; torch's is per thread), None by class default: a
    thread that never set one reads it as a plain attribute (every factory call without a device asks)."""

    explicit = None


_thread = _Thread()


def register(provider: Provider, *, replace: bool = False) -> None:
    """Add a provider (an instance or a class) of devices.

    Raises:
        TdxValueError: a provider of that name, or of one of its device types, exists and
            ``replace`` is false.
    """
    if isinstance(provider, type):
        provider = provider()
    with _lock:
        _load()
        clash = [t for t in provider.device_types if t in _by_type and _by_type[t].name != provider.name]
        if not replace and (provider.name in _providers or clash):
            raise TdxValueError(f"a provider named {provider.name!r} or for device types {clash} "
                                "is already registered; pass replace=True to override it")
        _add(provider)
        _forget()


def _add(provider: Provider) -> None:
    _providers[provider.name] = provider
    for t in provider.device_types:
        _by_type[t] = provider


def _load() -> None:
    if _state["loaded"]:
        return
    from .providers import BUILTIN, entry_points

    for _name, value in entry_points("tdx.backends"):
        module, _, attr = value.partition(":")
        obj = importlib.import_module(module.strip())
        for part in filter(None, attr.strip().split(".")):
            obj = getattr(obj, part)
        _add(obj() if isinstance(obj, type) else obj)
    if not _providers:  # a source checkout without installed metadata

        for p in BUILTIN:
            _add(p)
    _state["loaded"] = True


def _forget() -> None:
    _resolved.clear()
    _statuses.clear()
    _state["default"] = None


_config.on_reload(_forget)


def providers() -> dict:
    """Registered providers by name."""
    with _lock:
        _load()
        return dict(_providers)


def available() -> list:
    """Every known device with whether it is available and, if not, why.

    Returns:
        A list of :class:`DeviceStatus` rows (``cpu``, ``cuda:N``, ``mps``, ``mlx:gpu``, ``mlx:cpu``...).
    """
    with _lock:
        _load()
        rows = []
        for p in _providers.values():
            rows += _rows(p)
        order = {"cpu": 0, "cuda": 1, "mps": 2, "mlx": 3}
        return sorted(rows, key=lambda r: order.get(r.device.split(":")[0], 4))


def _rows(provider) -> list:
    """``provider``'s status rows, asked once (only this provider's framework is imported)."""
    with _lock:
        rows = _statuses.get(provider.name)
        if rows is None:
            rows = _statuses[provider.name] = provider.statuses()
        return rows


def _status(name: str, provider=None):
    for row in (available() if provider is None else _rows(provider)):
        if row.device == name:
            return row
    return None


def _canonical(dev) -> tuple:
    """(canonical name, DeviceStatus or None) for a parsed device."""
    _load()
    provider = _by_type.get(dev.type)
    if provider is None:
        return str(dev), None
    if dev.type == "meta":
        return "meta", provider.meta_status()
    if dev.type == "cuda":
        rows = [r for r in available() if r.device.split(":")[0] == "cuda"]
        if not any(r.available for r in rows):  # no CUDA at all: its one row says why
            return str(dev), rows[0] if rows else None
    name = provider.canonical(dev)
    row = _status(name, provider)  # only the owning provider: using MLX never imports torch
    if row is None:
        known = ", ".join(r.device for r in _rows(provider))
        row = DeviceStatus(name, False, f"no such device; {provider.name} knows {known}", provider.name)
    return name, row


def _executor(name: str) -> Executor:
    ex = _executors.get(name)
    if ex is None:
        provider = _by_type[as_device(name).type]
        ex = _executors[name] = provider.executor(name)
        # the hot path's plain attributes, made to agree with the capabilities they stand for
        ex.mutable, ex.taped = ex.caps.mutable, not ex.caps.native_autograd
        _seeding.on_new_executor(ex)
    return ex


def host_torch():
    """The torch executor on cpu itself, never a pinned or translated one; None without torch.

    Random streams and generator states live there: the torch random stream draws MLX's numbers
    with it, and seeding applies to it as soon as it exists.
    """
    with _lock:
        _load()
        provider = _by_type.get("cpu")
    if provider is None or provider.name != "torch":
        return None
    row = _status("cpu", provider)
    return _executor("cpu") if row is not None and row.available else None


def _unpinned(name: str) -> Executor:
    """The executor of the available device ``name`` itself, bypassing pins and translation (tdx's own use)."""
    with _lock:
        _load()
        return _executor(_canonical(as_device(name))[0])


def _translate(requested, why: str) -> Executor:
    cfg = _config.current()
    if cfg["strict"]:
        raise DeviceUnavailableError(
            f"device {str(requested)!r} is not available ({why}) and strict = true in "
            f"{cfg.origin['strict']}; available: {', '.join(r.device for r in available() if r.available)}")
    dev = as_device(requested)
    mapping = cfg["device_map"]
    candidates = [(mapping[k], f"device_map in {cfg.origin['device_map']}")
                  for k in (str(dev), dev.type) if k in mapping]
    candidates += [(c, f"fallback in {cfg.origin['fallback']}") for c in cfg["fallback"]]
    for target, source in candidates:
        name, row = _canonical(as_device(target))
        if row is not None and row.available:
            key = (str(dev), name)
            if key not in _warned:
                _warned.add(key)
                warnings.warn(f"tdx: device {str(dev)!r} is not available ({why}); running on "
                              f"{name!r} instead ({source})", UserWarning, stacklevel=_user_level())
            return _executor(name)
    raise DeviceUnavailableError(
        f"device {str(dev)!r} is not available ({why}) and no device in device_map or fallback "
        f"({', '.join(c for c, _ in candidates)}) is available")


def _user_level() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside tdx."""
    import sys

    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("tdx."):
        frame, level = frame.f_back, level + 1
    return level


def get(dev=None) -> Executor:
    """The executor for a device request, translating unavailable devices per the config.

    Args:
        dev: a device string, int or ``tdx.device``; None means the default device.

    Raises:
        DeviceUnavailableError: the device is unavailable and cannot be translated.
        InvalidDeviceError: ``dev`` does not parse.
    """
    if dev is None:
        return default_executor()
    pinned = _state["pin"]
    if pinned is not None:
        if dev is pinned.device:  # the pinned device itself (``x.device`` passed on): nothing to parse or warn
            return pinned
        if not _is_meta(dev):  # meta holds no data: a pin has nothing to move
            return _pinned_get(dev)
    ex = _resolved.get(dev)
    if ex is not None:
        return ex
    with _lock:
        _load()
        parsed = as_device(dev)
        if parsed.type == "cpu" and parsed.index is None and "cpu" in _executors:
            ex = _executors["cpu"]
        else:
            name, row = _canonical(parsed)
            if row is not None and row.available:
                ex = _executor(name)
            else:
                ex = _translate(parsed, row.reason if row is not None else "no provider for this device type")
        _resolved[dev] = ex
        return ex


def _is_meta(dev) -> bool:
    # a device object answers by its type (comparing it with the string "meta" would parse a device per call)
    return dev == "meta" if isinstance(dev, str) else getattr(dev, "type", None) == "meta"


def pin(dev, source: str) -> Executor:
    """Put every tensor on ``dev`` whatever device is asked for (``python -m tdx run --device``).

    Args:
        dev: the device every request resolves to (it must be available, or translate).
        source: where the pin came from, named in the warning of the first remapped request
            (``"--device"``, ``"TDX_RUN_DEVICE"``, ``"[run] device in tdx.toml"``).

    Returns:
        The pinned executor.

    Raises:
        DeviceUnavailableError: ``dev`` is not available and cannot be translated.
        InvalidDeviceError: ``dev`` does not parse.
    """
    with _lock:
        _state["pin"] = _device_state["device"] = None
        ex = get(dev)
        _state.update(pin=ex, pin_source=source, pin_warned=False, default=None)
        _device_state["device"] = ex.device
        return ex


def unpin() -> None:
    """Undo :func:`pin`: devices resolve as the config says again."""
    with _lock:
        _state.update(pin=None, pin_source=None, pin_warned=False, default=None)
        _device_state["device"] = None


def pinned():
    """``(executor, source)`` of the active pin, or None."""
    ex = _state["pin"]
    return None if ex is None else (ex, _state["pin_source"])


class _Host(str):
    """The host device ``"cpu"`` as tdx itself asks for it (batches collated, samplers' draws): under a
    pin it lands on the pinned device like any request, without the warning meant for the program's
    own device requests."""

    __slots__ = ()


HOST = _Host("cpu")


def _pinned_get(dev) -> Executor:
    ex = _state["pin"]
    if not _state["pin_warned"] and type(dev) is not _Host:
        parsed = as_device(dev)
        if parsed.type != ex.device.type:
            _state["pin_warned"] = True
            warnings.warn(f"tdx: device {str(parsed)!r} runs on the pinned device {str(ex.device)!r} "
                          f"(pinned by {_state['pin_source']}); every tensor the program creates or moves "
                          "goes there", UserWarning, stacklevel=_user_level())
    return ex


def set_default_device(dev) -> None:
    """Set the device factory functions use when none is given (None: back to the config's).

    As torch's (2.13), the setting belongs to the calling thread: other threads keep theirs.
    """
    _thread.explicit = None if dev is None else as_device(dev)


def default_executor() -> Executor:
    """The executor for the current default device (thread context > explicit > config)."""
    ctx = context_device()
    if ctx is not None:
        return get(ctx)
    if _state["pin"] is not None:
        return _state["pin"]
    explicit = _thread.explicit
    if explicit is not None:
        return get(explicit)
    ex = _state["default"]
    if ex is None:
        with _lock:
            want = _config.current()["default_device"]
            ex = _auto() if want == "auto" else get(want)
            _state["default"] = ex
    return ex


def _auto() -> Executor:
    order = _config.current()["fallback"]
    for target in order:
        name, row = _canonical(as_device(target))
        if row is not None and row.available:
            return _executor(name)
    raise DeviceUnavailableError(f"default_device 'auto': none of {', '.join(order)} is available; "
                                 "install tdx-runtime[torch] or tdx-runtime[mlx]")


def get_default_device():
    """The ``tdx.device`` factory functions use when none is given."""
    return default_executor().device


def __getattr__(name: str):
    if name in _MIRRORS:
        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'tdx.backends' has no attribute {name!r}")


from . import _flags  # noqa: E402 - torch.backends' own top-level names
from ._flags import disable_global_flags, flags, flags_frozen, set_flags  # noqa: E402,F401

_flags.install(__name__, _flags.BackendsModule)  # tdx.backends.fp32_precision as a live attribute
