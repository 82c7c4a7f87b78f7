"""``torch.testing`` as torch has it: ``assert_close``, ``make_tensor``, ``assert_allclose``.

Where torch is installed these are torch's own: its ``testing/_comparison.py`` and ``testing/_creation.py``
executed with tdx as ``torch`` (:func:`tdx.aliasing.torch_source.run_module`), as the modules
``tdx.testing._comparison`` and ``tdx.testing._creation``. So on tdx tensors of any device they keep
torch's default tolerances per dtype (float32: rtol 1.3e-6, atol 1e-5), its messages, its order of checks
(device and dtype included), its ``AssertionError`` and its handling of numbers, sequences and mappings,
and ``make_tensor`` draws what torch's draws from the same generator. Without torch,
:mod:`tdx.testing.standalone` stands in with torch's tolerances and messages.

tdx's own suite compares against a torch oracle with tighter tolerances: that is
:mod:`tdx.testing.parity`. The opt-in pytest plugin is :mod:`tdx.testing.plugin`. Importing this package
imports no framework and loads torch's files only when a name is first used; it must never hold a copy of
torch's code.
"""

from __future__ import annotations

import importlib

__all__ = ["assert_close", "assert_allclose", "make_tensor", "FileCheck"]

_TORCH_FILES = {"assert_close": "_comparison", "assert_allclose": "_comparison", "make_tensor": "_creation"}


def _torch_file(stem: str):
    """torch's ``testing/<stem>.py`` run as ``tdx.testing.<stem>``, or None where torch is not installed."""
    from .._errors import NotProvidedError
    from ..aliasing.torch_source import run_module

    try:
        return run_module(f"{__name__}.{stem}", f"testing.{stem}")
    except NotProvidedError:
        return None


def __getattr__(name: str):
    stem = _TORCH_FILES.get(name)
    if stem is not None:
        module = _torch_file(stem) or importlib.import_module(f"{__name__}.standalone")
        value = getattr(module, name)
    elif name == "FileCheck":  # torch's is TorchScript IR's checker (torch._C.FileCheck)
        from ..aliasing import refused

        value = refused.torch_name("FileCheck")
    elif name in ("_comparison", "_creation"):
        value = _torch_file(name)
        if value is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r} (torch is not installed)")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
