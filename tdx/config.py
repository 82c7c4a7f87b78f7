"""Configuration: discovery, validation and precedence of tdx settings.

Precedence, highest first: explicit calls (``tdx.set_default_device``, handled by the
caller) > environment (``TDX_DEVICE`` and ``TDX_RUN_DEVICE``, then the file named by ``TDX_CONFIG``) >
``./tdx.toml`` > ``[tool.tdx]`` of the nearest ``pyproject.toml`` > the user file
(``$XDG_CONFIG_HOME/tdx/config.toml``, default ``~/.config/tdx/config.toml``) > built-in
defaults. Values merge key by key and each remembers its source.

This module reads files and validates; it must never import a framework and never
check device availability (that belongs to ``tdx.backends``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ._device import device as _device
from ._errors import ConfigError, InvalidDeviceError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

BUILTIN = "built-in default"
DEFAULT_FALLBACK = ("cuda", "mps", "mlx:gpu", "cpu", "mlx:cpu")
SDPA_KERNELS = ("flash", "efficient", "cudnn", "math", "mlx_fused", "chunked", "bridge")
DEVICE_HELP = "'auto', 'cpu', 'cuda', 'cuda:N', 'mps', 'mlx', 'mlx:gpu', 'mlx:cpu'"


def _check_device(value, allow_auto=False):
    if not isinstance(value, str):
        return f"expected a device string ({DEVICE_HELP})"
    if allow_auto and value == "auto":
        return None
    try:
        _device(value)
    except InvalidDeviceError:
        return f"unknown device; allowed: {DEVICE_HELP if allow_auto else DEVICE_HELP[8:]}"
    return None


def _check_device_list(value):
    if not isinstance(value, list) or not value:
        return f"expected a non-empty list of device strings ({DEVICE_HELP[8:]})"
    for item in value:
        err = _check_device(item)
        if err:
            return f"entry {item!r}: {err}"
    return None


def _check_device_map(value):
    if not isinstance(value, dict):
        return "expected a table of device = device, e.g. {cuda = \"mlx\"}"
    for k, v in value.items():
        for item in (k, v):
            err = _check_device(item)
            if err:
                return f"entry {item!r}: {err}"
    return None


def _check_bool(value):
    return None if isinstance(value, bool) else "expected true or false"


def _check_threads(value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return "expected a positive integer"
    return None


def _check_priority(value):
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return f"expected a list of kernel names from {', '.join(SDPA_KERNELS)}"
    bad = [v for v in value if v not in SDPA_KERNELS]
    if bad:
        return f"unknown kernel {bad[0]!r}; allowed: {', '.join(SDPA_KERNELS)}"
    return None


# dotted key -> (validator, built-in default)
SCHEMA = {
    "default_device": (lambda v: _check_device(v, allow_auto=True), "auto"),
    "device_map": (_check_device_map, {}),
    "fallback": (_check_device_list, list(DEFAULT_FALLBACK)),
    "strict": (_check_bool, False),
    "auto_transfer": (_check_bool, False),
    "attention.priority": (_check_priority, []),
    "backends.torch.allow_tf32": (_check_bool, None),
    "backends.torch.num_threads": (_check_threads, None),
    "backends.mlx.fused_sdpa": (_check_bool, True),
    "backends.mlx.downcast_float64": (_check_bool, False),
    "run.device": (_check_device, None),  # python -m tdx run: every tensor on this device
}
_SECTIONS = {"attention", "backends", "backends.torch", "backends.mlx", "run"}


def _flatten(table: dict, where: str, prefix: str = "") -> dict:
    """Validate a parsed TOML table and flatten it to dotted keys."""
    out = {}
    for key, value in table.items():
        dotted = f"{prefix}{key}"
        if dotted in SCHEMA:
            err = SCHEMA[dotted][0](value)
            if err:
                raise ConfigError(f"{where}: key '{dotted}' has bad value {value!r}: {err}")
            out[dotted] = value
        elif dotted in _SECTIONS and isinstance(value, dict):
            out.update(_flatten(value, where, dotted + "."))
        else:
            allowed = sorted(SCHEMA)
            import difflib  # only for this message

            near = difflib.get_close_matches(dotted, allowed, n=1)
            hint = f" (did you mean '{near[0]}'?)" if near else ""
            raise ConfigError(f"{where}: unknown key '{dotted}'{hint}; allowed keys: {', '.join(allowed)}")
    return out


def _read_toml(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot be read: {e.strerror}") from None


def _nearest_pyproject(start: Path):
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _user_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "tdx" / "config.toml"


def sources(cwd=None) -> list:
    """The config layers, lowest precedence first, as ``(source name, flat dict)`` pairs."""
    cwd = Path(cwd or os.getcwd())
    layers = [(BUILTIN, {k: v[1] for k, v in SCHEMA.items()})]
    user = _user_file()
    if user.is_file():
        layers.append((str(user), _flatten(_read_toml(user), str(user))))
    pyproject = _nearest_pyproject(cwd)
    if pyproject is not None:
        table = _read_toml(pyproject).get("tool", {}).get("tdx")
        if table is not None:
            where = f"{pyproject} [tool.tdx]"
            if not isinstance(table, dict):
                raise ConfigError(f"{where}: expected a table")
            layers.append((where, _flatten(table, where)))
    local = cwd / "tdx.toml"
    if local.is_file():
        layers.append((str(local), _flatten(_read_toml(local), str(local))))
    env_file = os.environ.get("TDX_CONFIG")
    if env_file:
        path = Path(env_file)
        if not path.is_file():
            raise ConfigError(f"TDX_CONFIG: file {env_file!r} does not exist")
        where = f"{path} (TDX_CONFIG)"
        layers.append((where, _flatten(_read_toml(path), where)))
    env_dev = os.environ.get("TDX_DEVICE")
    if env_dev:
        err = _check_device(env_dev, allow_auto=True)
        if err:
            raise ConfigError(f"environment variable TDX_DEVICE has bad value {env_dev!r}: {err}")
        layers.append(("TDX_DEVICE", {"default_device": env_dev}))
    run_dev = os.environ.get("TDX_RUN_DEVICE")
    if run_dev:
        err = _check_device(run_dev)
        if err:
            raise ConfigError(f"environment variable TDX_RUN_DEVICE has bad value {run_dev!r}: {err}")
        layers.append(("TDX_RUN_DEVICE", {"run.device": run_dev}))
    return layers


class Config:
    """The effective configuration: each key's value and where it came from."""

    __slots__ = ("values", "origin")

    def __init__(self, layers: list):
        self.values: dict = {}
        self.origin: dict = {}
        for name, flat in layers:
            for key, value in flat.items():
                self.values[key] = value
                self.origin[key] = name

    def __getitem__(self, key: str):
        return self.values[key]

    def items(self):
        return ((k, self.values[k], self.origin[k]) for k in sorted(self.values))


_cache: list = []
_listeners: list = []


def current() -> Config:
    """The effective config, read once and kept until :func:`reload`."""
    if not _cache:
        _cache.append(Config(sources()))
    return _cache[0]


def reload() -> Config:
    """Read every config source again (after changing files or environment)."""
    _cache.clear()
    cfg = current()
    for fn in _listeners:
        fn()
    return cfg


def on_reload(fn) -> None:
    """Register ``fn()`` to run after each :func:`reload` (caches that derive from config)."""
    _listeners.append(fn)
