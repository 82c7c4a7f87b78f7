"""DataPipe decorators (torch.utils.data.datapipes._decorator): functional registration, determinism, validation.

``functional_datapipe`` registers a DataPipe class as a method; ``non_deterministic`` refuses
construction under ``guaranteed_datapipes_determinism``; the type-validation decorators pass data
through (tdx has no DataPipe type hints to check against). Pure Python: must never import torch or MLX.
"""

from __future__ import annotations

import functools

from tdx._errors import TdxTypeError

from .datapipe import IterDataPipe, MapDataPipe

__all__ = ["argument_validation", "functional_datapipe", "guaranteed_datapipes_determinism", "non_deterministic",
           "runtime_validation", "runtime_validation_disabled"]

_determinism = False
_runtime_validation_enabled = True


class functional_datapipe:
    """Class decorator: ``@functional_datapipe("name")`` makes ``dp.name(*a)`` build ``Cls(dp, *a)``.

    Args:
        name: The method name to register on IterDataPipe (or MapDataPipe).
        enable_df_api_tracing: Accepted for torch's signature; DataFrame tracing is not provided.
    """

    def __init__(self, name: str, enable_df_api_tracing: bool = False) -> None:
        self.name = name
        self.enable_df_api_tracing = enable_df_api_tracing

    def __call__(self, cls):
        target = cls.cls if isinstance(cls, non_deterministic) else getattr(getattr(cls, "__self__", None), "cls", cls)
        if isinstance(target, type) and issubclass(target, IterDataPipe):
            IterDataPipe.register_datapipe_as_function(self.name, cls)
        elif isinstance(target, type) and issubclass(target, MapDataPipe):
            MapDataPipe.register_datapipe_as_function(self.name, cls)
        elif isinstance(target, type):
            raise TdxTypeError(f"`functional_datapipe` can only decorate IterDataPipe or MapDataPipe, got "
                               f"{target.__name__}")
        return cls


class guaranteed_datapipes_determinism:
    """Context manager: constructing a ``non_deterministic`` DataPipe inside it raises TypeError."""

    def __init__(self) -> None:
        global _determinism
        self.prev = _determinism
        _determinism = True

    def __enter__(self) -> None:
        pass

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        global _determinism
        _determinism = self.prev


class non_deterministic:
    """Mark an IterDataPipe class (or, given a predicate, some of its instances) non-deterministic.

    Args:
        arg: An IterDataPipe subclass, or a function of the constructor arguments returning
            whether that instance is non-deterministic.

    Raises:
        TdxTypeError: for anything else, and on construction under ``guaranteed_datapipes_determinism``.
    """

    cls = None

    def __init__(self, arg) -> None:
        if isinstance(arg, type):
            if not issubclass(arg, IterDataPipe):
                raise TdxTypeError("Only `IterDataPipe` can be decorated with `non_deterministic`, but "
                                   f"{arg.__name__} is found")
            self.cls = arg
        elif callable(arg):
            self.deterministic_fn = arg
        else:
            raise TdxTypeError(f"{arg} can not be decorated by non_deterministic")

    def __call__(self, *args, **kwargs):
        if self.cls is not None:
            if _determinism:
                raise TdxTypeError(f"{self.cls.__name__} is non-deterministic, but you set "
                                   "'guaranteed_datapipes_determinism'. You can turn off determinism for this "
                                   "DataPipe if that is acceptable for your application")
            return self.cls(*args, **kwargs)
        if not (isinstance(args[0], type) and issubclass(args[0], IterDataPipe)):
            raise TdxTypeError(f"Only `IterDataPipe` can be decorated, but {getattr(args[0], '__name__', args[0])} "
                               "is found")
        self.cls = args[0]
        return self.deterministic_wrapper_fn

    def deterministic_wrapper_fn(self, *args, **kwargs):
        """Build the DataPipe after asking the predicate whether these arguments are non-deterministic."""
        res = self.deterministic_fn(*args, **kwargs)
        if not isinstance(res, bool):
            raise TdxTypeError("deterministic_fn of `non_deterministic` decorator is required to return a boolean "
                               f"value, but {type(res)} is found")
        if _determinism and res:
            raise TdxTypeError(f"{self.cls.__name__} is non-deterministic with the inputs, but you set "
                               "'guaranteed_datapipes_determinism'. You can turn off determinism for this "
                               "DataPipe if that is acceptable for your application")
        return self.cls(*args, **kwargs)


def argument_validation(f):
    """Decorate a DataPipe constructor; arguments pass through unchecked (no DataPipe type hints in tdx)."""

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs)

    return wrapper


class runtime_validation_disabled:
    """Context manager turning ``runtime_validation`` off (it checks nothing in tdx either way)."""

    def __init__(self) -> None:
        global _runtime_validation_enabled
        self.prev = _runtime_validation_enabled
        _runtime_validation_enabled = False

    def __enter__(self) -> None:
        pass

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        global _runtime_validation_enabled
        _runtime_validation_enabled = self.prev


def runtime_validation(f):
    """Decorate a DataPipe's ``__iter__``; items pass through unchecked.

    Raises:
        TdxTypeError: when ``f`` is not named ``__iter__`` (as torch).
    """
    if f.__name__ != "__iter__":
        raise TdxTypeError(f"Can not decorate function {f.__name__} with 'runtime_validation'")

    @functools.wraps(f)
    def wrapper(self):
        yield from f(self)

    return wrapper
