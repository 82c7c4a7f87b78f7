"""Mirror of ``torch.backends.python_native``: switches for torch's DSL (Triton, CuteDSL) operator
overrides, by DSL, by operation and by dispatch key.

With torch, every name is torch's (the DSL controllers ``triton``, ``cutedsl``... included).
Without torch no DSL is registered: the lists are empty, nothing is disabled, and operations or
dispatch keys disabled or re-enabled are remembered and applied when torch loads. Never imports
torch on module import.
"""

import types as _types
from contextlib import contextmanager as _contextmanager

from . import _flags

_TDX_EXTENSIONS = ()  # names tdx adds to torch.backends.python_native: none

_disabled = {"operations": set(), "dispatch_keys": set()}
_METHODS = ("available_dsls", "all_dsls", "get_dsl_operations", "disable_operations", "enable_operations",
            "disable_dispatch_keys", "enable_dispatch_keys", "operations_disabled", "is_operation_disabled",
            "is_dsl_disabled")


def _mod(t):
    return _flags.torch_backend(t, "python_native")


def _switch(kind: str, names, disable: bool) -> None:
    torch = _flags.torch_loaded()
    verb = "disable" if disable else "enable"
    if torch is not None:
        getattr(_mod(torch), f"{verb}_{kind}")(*names)
        return
    for name in names:
        (_disabled[kind].add if disable else _disabled[kind].discard)(name)
        _flags.defer(f"python_native.{kind}.{name}", f"python_native.{verb}_{kind}({name!r})",
                     lambda t, n=name: getattr(_mod(t), f"{verb}_{kind}")(n))


class _PythonNativeModule(_types.ModuleType):
    """The class of this module: DSL lists and switches, as in torch."""

    @property
    def available_dsls(self) -> list:
        """DSLs whose runtime is available ([] without torch)."""
        torch = _flags.torch_module()
        return [] if torch is None else _mod(torch).available_dsls

    @property
    def all_dsls(self) -> list:
        """Every registered DSL ([] without torch)."""
        torch = _flags.torch_module()
        return [] if torch is None else _mod(torch).all_dsls

    def get_dsl_operations(self, dsl_name: str) -> list:
        """The operations a DSL registers, sorted ([] without torch)."""
        torch = _flags.torch_module()
        return [] if torch is None else _mod(torch).get_dsl_operations(dsl_name)

    def disable_operations(self, *op_symbols: str) -> None:
        """Disable operations across every DSL."""
        _switch("operations", op_symbols, True)

    def enable_operations(self, *op_symbols: str) -> None:
        """Re-enable operations across every DSL."""
        _switch("operations", op_symbols, False)

    def disable_dispatch_keys(self, *dispatch_keys: str) -> None:
        """Disable the DSL operations registered at these dispatch keys ('CUDA', 'CPU'...)."""
        _switch("dispatch_keys", dispatch_keys, True)

    def enable_dispatch_keys(self, *dispatch_keys: str) -> None:
        """Re-enable the DSL operations registered at these dispatch keys."""
        _switch("dispatch_keys", dispatch_keys, False)

    @_contextmanager
    def operations_disabled(self, *op_symbols: str):
        """Disable operations for the ``with`` block; re-enable after it only those that were enabled."""
        before = {op for op in op_symbols if self.is_operation_disabled(op)}
        self.disable_operations(*op_symbols)
        try:
            yield
        finally:
            again = [op for op in op_symbols if op not in before]
            if again:
                self.enable_operations(*again)

    def is_operation_disabled(self, op_symbol: str) -> bool:
        """Whether an operation is disabled."""
        torch = _flags.torch_module()
        if torch is None:
            return op_symbol in _disabled["operations"]
        return _mod(torch).is_operation_disabled(op_symbol)

    def is_dsl_disabled(self, dsl_name: str) -> bool:
        """Whether a whole DSL is disabled (False without torch: no DSL is registered)."""
        torch = _flags.torch_module()
        return False if torch is None else _mod(torch).is_dsl_disabled(dsl_name)

    def __getattr__(self, name: str):
        # The DSL controllers (``triton``, ``cutedsl``...) are torch's own objects.
        if not name.startswith("_"):
            torch = _flags.torch_module()
            if torch is not None and name in _mod(torch).all_dsls:
                return getattr(_mod(torch), name)
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(_METHODS) | set(self.all_dsls))


_flags.install(__name__, _PythonNativeModule)
