"""The built-in providers, named by the ``tdx.backends`` entry points.

They describe devices without importing a framework until a status or an executor is
asked for. A third-party executor ships a :class:`tdx.backends.base.Provider` subclass
and an entry point of its own.
"""

from __future__ import annotations

import importlib.util
import sys

from .base import DeviceStatus, Provider


def _installed(module: str) -> bool:
    if module in sys.modules:  # None there means the import is blocked: not usable
        return sys.modules[module] is not None
    _load_installed(module)
    return sys.modules.get(module) is not None or importlib.util.find_spec(module) is not None


def _distribution_entry(root: str):
    """The ``sys.path`` entry that holds the installed distribution of package ``root``, or None."""
    import os

    prefix = root + "-"
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        if any(n.startswith(prefix) and n.endswith(".dist-info") for n in names) and \
                os.path.isdir(os.path.join(entry or ".", root)):
            return entry
    return None


def _load_installed(root: str) -> None:
    """Import framework ``root`` from its installed distribution when a folder earlier on ``sys.path``
    (the working directory, the script's folder) would shadow it, and warn naming that folder.

    A folder called ``mlx`` or ``torch`` in the current directory is imported before site-packages:
    as a regular package (or a module) it hides the framework (a warning names it), and as a namespace
    portion it would join MLX's namespace package ahead of the real modules (left out silently). Nothing is done when ``root`` is already imported or nothing shadows it.
    """
    import importlib.machinery
    import os
    import warnings

    if root in sys.modules:
        return
    installed = _distribution_entry(root)
    if installed is None:
        return
    for entry in sys.path:
        if entry == installed:
            return
        found = importlib.machinery.PathFinder.find_spec(root, [entry])
        if found is not None:
            break
    else:
        return
    spec = importlib.machinery.PathFinder.find_spec(root, [installed])
    if spec is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules[root] = module
    try:
        if spec.loader is not None:
            spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(root, None)
        raise
    if found.origin is None:  # a namespace portion: left out of the framework's path, silently
        return
    shadow = os.path.join(os.path.abspath(entry or "."), root)
    warnings.warn(f"{shadow} would shadow the installed {root} package (it comes first on sys.path); tdx "
                  f"imported the installed one from {os.path.join(installed, root)}. Rename the folder to "
                  "silence this warning", UserWarning, stacklevel=3)


class TorchProvider(Provider):
    """torch on cpu, cuda:N and mps, and torch's data-less ``meta`` device (shapes and dtypes only)."""

    name = "torch"
    framework = "torch"
    device_types = ("cpu", "cuda", "mps", "meta")
    module = "tdx.backends._torch.executor"

    def statuses(self) -> list:
        if not _installed("torch"):  # also loads the installed torch past a shadowing folder
            why = "not installed: pip install 'tdx-runtime[torch]'"
            return [DeviceStatus(d, False, why, self.name) for d in ("cpu", "cuda", "mps")]
        import torch

        rows = [DeviceStatus("cpu", True, "", self.name)]
        # counted through NVML where it answers (torch.cuda.device_count), never through the CUDA runtime
        # (is_available), which initialises the driver: a process that merely lists devices (a forkserver
        # server adopting a cuda pin) could then fork no child able to use CUDA
        n = torch.cuda.device_count()
        if n:
            rows += [DeviceStatus(f"cuda:{i}", True, "", self.name) for i in range(n)]
        elif torch.version.cuda is None and getattr(torch.version, "hip", None) is None:
            rows.append(DeviceStatus("cuda", False, "torch build has no CUDA (CPU-only wheel)", self.name))
        else:
            rows.append(DeviceStatus("cuda", False, "no driver: no CUDA GPU or driver found", self.name))
        mps = torch.backends.mps
        if mps.is_available():
            rows.append(DeviceStatus("mps", True, "", self.name))
        elif sys.platform != "darwin":
            rows.append(DeviceStatus("mps", False, "wrong platform: MPS needs macOS on Apple silicon", self.name))
        elif not mps.is_built():
            rows.append(DeviceStatus("mps", False, "torch build has no MPS support", self.name))
        else:
            rows.append(DeviceStatus("mps", False, "no driver: MPS needs macOS 12.3+ on Apple silicon", self.name))
        return rows

    def meta_status(self) -> DeviceStatus:
        """``meta`` holds no data, so it is not listed among the devices; it is there wherever torch is."""
        ok = _installed("torch")
        return DeviceStatus("meta", ok, "" if ok else "not installed: pip install 'tdx[torch]'", self.name)

    def canonical(self, dev) -> str:
        if dev.type == "cuda" and dev.index is None:
            import torch

            return f"cuda:{torch.cuda.current_device()}" if torch.cuda.is_available() else "cuda:0"
        if dev.type == "mps":
            return "mps"
        return str(dev)


class MLXProvider(Provider):
    """MLX on its GPU (Metal or CUDA) and its CPU."""

    name = "mlx"
    framework = "mlx"
    device_types = ("mlx",)
    module = "tdx.backends.mlx._executor"

    def statuses(self) -> list:
        if not _installed("mlx"):
            why = "not installed: pip install 'tdx-runtime[mlx]'"
            return [DeviceStatus(d, False, why, self.name) for d in ("mlx:gpu", "mlx:cpu")]
        import mlx.core as mx

        gpu = mx.metal.is_available() or (hasattr(mx, "cuda") and mx.cuda.is_available())
        if gpu:
            row = DeviceStatus("mlx:gpu", True, "", self.name)
        elif sys.platform == "darwin":
            row = DeviceStatus("mlx:gpu", False, "no driver: Metal is not available", self.name)
        else:
            row = DeviceStatus("mlx:gpu", False,
                               "this MLX build has no GPU backend (mlx[cpu]); mlx[cuda12] adds one", self.name)
        return [row, DeviceStatus("mlx:cpu", True, "", self.name)]

    def canonical(self, dev) -> str:
        if dev.kind is None:
            gpu = any(s.available for s in self.statuses() if s.device == "mlx:gpu")
            return "mlx:gpu" if gpu else "mlx:cpu"
        return str(dev)


BUILTIN = (TorchProvider(), MLXProvider())


def entry_points(group: str) -> list:
    """The ``(name, "module:attribute")`` entry points of ``group`` in the installed distributions.

    What ``importlib.metadata.entry_points(group=...)`` gives (the first distribution of a name on
    ``sys.path`` wins), read straight from the ``*.dist-info`` / ``*.egg-info`` folders: importing
    ``importlib.metadata`` costs about 3 MB of resident memory (email, zipfile, csv...), a third of
    tdx's own import. A ``sys.path`` entry that is not a folder (a zip) is left to ``importlib.metadata``.
    """
    import os

    if any(p and not os.path.isdir(p) and os.path.exists(p) for p in sys.path):
        from importlib import metadata

        return [(ep.name, ep.value) for ep in metadata.entry_points(group=group)]
    seen, found = set(), []
    for base in sys.path:
        try:
            names = sorted(os.listdir(base or "."))
        except OSError:
            continue
        for folder in names:
            if not folder.endswith((".dist-info", ".egg-info")):
                continue
            dist = folder.rpartition(".")[0].partition("-")[0].lower().replace("-", "_").replace(".", "_")
            if dist in seen:
                continue
            seen.add(dist)
            try:
                with open(os.path.join(base or ".", folder, "entry_points.txt"), encoding="utf-8") as fh:
                    text = fh.read()
            except OSError:
                continue
            found.extend(_section(text, group))
    return found


def _section(text: str, group: str) -> list:
    """The ``name = value`` pairs under ``[group]`` of an ``entry_points.txt`` (INI syntax)."""
    out, inside = [], False
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line[0] == "[":
            inside = line[1:-1].strip() == group
        elif inside and "=" in line:
            name, _, value = line.partition("=")
            out.append((name.strip(), value.partition("[")[0].strip()))
    return out
