"""``torch._dynamo.eval_frame``: what libraries ask of a compiled module.

``isinstance(m, OptimizedModule)`` is True for what ``tdx.compile`` returns for a ``Module`` (accelerate and
transformers unwrap such a module through ``_orig_mod`` before saving it); ``innermost_fn`` gives the function a
``tdx.compile`` wrapper (or a chain of them) was made from. Never imports a framework.
"""

from __future__ import annotations

__all__ = ["OptimizedModule", "innermost_fn"]


class _CompiledModuleType(type):
    """The metaclass of :class:`OptimizedModule`: instances are ``tdx.compile``'s wrappers of modules."""

    def __instancecheck__(cls, obj) -> bool:
        from ..compiler import _Compiled
        from ..nn import Module

        return isinstance(obj, _Compiled) and isinstance(obj.fn, Module)


class OptimizedModule(metaclass=_CompiledModuleType):
    """The type of ``tdx.compile(module)`` for ``isinstance`` checks; ``_orig_mod`` is the module compiled.
    Built by ``tdx.compile``, never directly."""

    def __new__(cls, *args, **kwargs):
        from ..._errors import TdxTypeError

        raise TdxTypeError("OptimizedModule is made by tdx.compile(module) (torch.compile), not directly")


def innermost_fn(fn):
    """The function beneath ``fn``'s ``tdx.compile`` wrappers (``fn`` itself when it has none)."""
    from ..compiler import _Compiled

    while isinstance(fn, _Compiled):
        fn = fn.fn
    return fn
