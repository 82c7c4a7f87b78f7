"""``tdx.library`` (minimal): Python custom operators, as ``torch.library.custom_op`` defines them.

A custom op in tdx is its Python function over tdx tensors: it runs on every executor and is
differentiable through the executor's autograd (torch's on torch executors, the tape on MLX)
without a hand-written formula. ``custom_op`` registers the function under ``tdx.ops.<ns>.<name>``
and returns the op; ``register_autograd`` installs the given backward through
:class:`tdx.autograd.Function` (so the op's gradient is the one the library wrote);
``register_fake`` and ``register_kernel`` are accepted (tdx has no fake-tensor tracer, and the
function is every device's kernel). The schema-level C++ library (``Library``, ``define``,
``impl``) is refused at call. Never imports a framework.
"""

from __future__ import annotations

from .._errors import TdxValueError, UnsupportedOpError

__all__ = ["custom_op", "register_fake", "register_autograd", "register_kernel", "impl_abstract", "ops",
           "CustomOpDef", "Library", "define", "impl"]


class _Namespace:
    """``tdx.ops.<ns>``: the custom ops registered under one namespace, as attributes."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, op: str):
        raise AttributeError(f"'_OpNamespace' '{self._name}' object has no attribute '{op}' "
                             f"(no custom op {self._name}::{op} is registered)")


class _Ops:
    """``tdx.ops``: one :class:`_Namespace` per library namespace, made on first use."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        space = _Namespace(name)
        setattr(self, name, space)
        return space


ops = _Ops()
_REGISTRY: dict = {}


class CustomOpDef:
    """A registered custom op: calling it runs its function (with its registered backward, if any)."""

    def __init__(self, qualname: str, fn, mutates_args):
        self._qualname, self._fn, self._mutates_args = qualname, fn, mutates_args
        self._backward = self._setup_context = self._function = None
        self.__name__ = qualname.split("::")[-1]
        self.__doc__ = fn.__doc__

    def __call__(self, *args, **kwargs):
        if self._function is None:
            return self._fn(*args, **kwargs)
        return self._function.apply(*args, **kwargs)

    def register_fake(self, fn=None):
        """Accept a fake (shape) implementation; tdx has no fake-tensor tracer to give it to."""
        return fn if fn is not None else (lambda f: f)

    def register_kernel(self, device_types, fn=None):
        """Accept a per-device kernel: tdx runs the op's own function on every executor."""
        return fn if fn is not None else (lambda f: f)

    def register_autograd(self, backward, *, setup_context=None) -> None:
        """Use ``backward(ctx, *grads)`` (with ``setup_context(ctx, inputs, output)``) as this op's gradient."""
        from ..autograd.function import Function

        fn, setup = self._fn, setup_context

        class _Op(Function):
            @staticmethod
            def forward(ctx, *args):
                out = fn(*args)
                if setup is not None:
                    setup(ctx, args, out)
                return out

            @staticmethod
            def backward(ctx, *grads):
                return backward(ctx, *grads)

        _Op.__name__ = _Op.__qualname__ = self.__name__
        self._function = _Op


def _op(name) -> CustomOpDef:
    if isinstance(name, CustomOpDef):
        return name
    op = _REGISTRY.get(name)
    if op is None:
        raise TdxValueError(f"no custom op named {name!r} is registered; define it with tdx.library.custom_op first")
    return op


def custom_op(name: str, fn=None, /, *, mutates_args, device_types=None, schema=None, tags=None):
    """Register ``fn`` as the custom op ``name`` (``"namespace::op"``); returns the op (a decorator without ``fn``).

    Raises:
        TdxValueError: ``name`` is not of the form ``"namespace::op"``.
    """
    if not isinstance(name, str) or name.count("::") != 1:
        raise TdxValueError(f"custom_op(): expected a name of the form 'namespace::op', got {name!r}")

    def register(f):
        op = CustomOpDef(name, f, mutates_args)
        _REGISTRY[name] = op
        space, short = name.split("::")
        setattr(getattr(ops, space), short, op)
        return op

    return register if fn is None else register(fn)


def register_fake(op, fn=None, /, *, lib=None, _stacklevel=1, allow_override=False):
    """Accept ``fn`` as ``op``'s fake implementation (tdx has no fake-tensor tracer); returns ``fn``."""
    _op(op)
    return fn if fn is not None else (lambda f: f)


impl_abstract = register_fake


def register_kernel(op, device_types, fn=None, /, *, lib=None):
    """Accept a per-device kernel: tdx runs the op's own function on every executor; returns ``fn``."""
    _op(op)
    return fn if fn is not None else (lambda f: f)


def register_autograd(op, backward, /, *, setup_context=None, lib=None) -> None:
    """Give ``op`` the gradient ``backward`` (see :meth:`CustomOpDef.register_autograd`)."""
    _op(op).register_autograd(backward, setup_context=setup_context)


def _refused(name: str):
    def refused(*args, **kwargs):
        raise UnsupportedOpError(f"torch.library.{name} is not supported by tdx (the ATen dispatcher): tdx "
                                 "dispatches per executor in Python and has no operator schemas. Instead: "
                                 "tdx.library.custom_op with a Python function")

    refused.__name__ = refused.__qualname__ = name
    refused.__tdx_refused__ = ("the ATen dispatcher", "no operator schemas", "tdx.library.custom_op")
    return refused


Library, define, impl = _refused("Library"), _refused("define"), _refused("impl")
