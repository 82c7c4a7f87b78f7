"""The DataPipe base classes (torch.utils.data.datapipes.datapipe): IterDataPipe, MapDataPipe, DataChunk.

A DataPipe is a Dataset whose functional forms (``dp.map(...)``) are looked up in a per-base
registry filled by ``functional_datapipe``. Pure Python: must never import torch or MLX.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator

from tdx._errors import TdxRuntimeError

from ..dataset import Dataset, IterableDataset

__all__ = ["DataChunk", "DFIterDataPipe", "IterDataPipe", "MapDataPipe"]


class DataChunk(list):
    """A list of items that a batching DataPipe yields (torch's ``DataChunk``).

    Args:
        items: The items, materialized into the list.
    """

    def __init__(self, items: Iterable) -> None:
        items = list(items)
        super().__init__(items)
        self.items = items

    def as_str(self, indent: str = "") -> str:
        """The items as ``indent + "[a, b]"``."""
        return indent + "[" + ", ".join(str(i) for i in iter(self)) + "]"

    def __iter__(self) -> Iterator:
        yield from super().__iter__()

    def raw_iterator(self) -> Iterator:
        """Iterate the items given at construction, ignoring later list edits."""
        yield from self.items


class _Registry:
    """The functional-form registry and naming shared by both DataPipe bases."""

    functions: dict = {}
    repr_hook = None
    str_hook = None

    def __getattr__(self, name):
        functions = type(self)._registry_owner().functions
        if name in functions:
            f = functions[name]
            bound = functools.partial(f, self)
            functools.update_wrapper(wrapper=bound, wrapped=f, assigned=("__doc__",))
            return bound
        raise AttributeError(f"'{self.__class__.__name__}' object has no attribute '{name}'")

    @classmethod
    def register_function(cls, function_name: str, function) -> None:
        """Register ``function(datapipe, *args, **kwargs)`` as the method ``function_name``."""
        cls._registry_owner().functions[function_name] = function

    @classmethod
    def register_datapipe_as_function(cls, function_name: str, cls_to_register, **_tracing) -> None:
        """Register ``cls_to_register(source_dp, *args, **kwargs)`` as the method ``function_name``.

        Raises:
            TdxRuntimeError: when ``function_name`` is already registered (torch raises Exception).
        """
        owner = cls._registry_owner()
        if function_name in owner.functions:
            raise TdxRuntimeError(f"Unable to add DataPipe function name {function_name} as it is already taken")

        def class_function(source_dp, *args, **kwargs):
            return cls_to_register(source_dp, *args, **kwargs)

        functools.update_wrapper(wrapper=class_function, wrapped=cls_to_register, assigned=("__doc__",))
        owner.functions[function_name] = class_function

    def __repr__(self) -> str:
        hook = type(self)._registry_owner().repr_hook
        return hook(self) if hook is not None else str(self.__class__.__qualname__)

    def __str__(self) -> str:
        hook = type(self)._registry_owner().str_hook
        return hook(self) if hook is not None else str(self.__class__.__qualname__)

    def __dir__(self):
        return list(super().__dir__()) + list(type(self)._registry_owner().functions)


class IterDataPipe(_Registry, IterableDataset):
    """Iterable-style DataPipe: subclasses implement ``__iter__``; ``iter(dp)`` first calls ``reset()``."""

    functions: dict = {}

    @classmethod
    def _registry_owner(cls):
        return IterDataPipe

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        own_iter = cls.__dict__.get("__iter__")
        if own_iter is not None and not getattr(own_iter, "_tdx_resets", False):
            @functools.wraps(own_iter)
            def __iter__(self):
                if type(self).__iter__ is __iter__:  # outermost __iter__ only: one reset per iter()
                    self.reset()
                return own_iter(self)
            __iter__._tdx_resets = True
            cls.__iter__ = __iter__

    def reset(self) -> None:
        """Reset buffers and pointers before a new iteration; a no-op by default."""


class DFIterDataPipe(IterDataPipe):
    """An IterDataPipe of DataFrames (torch's marker class)."""

    def _is_dfpipe(self) -> bool:
        return True


class MapDataPipe(_Registry, Dataset):
    """Map-style DataPipe: subclasses implement ``__getitem__`` (and usually ``__len__``)."""

    functions: dict = {}

    @classmethod
    def _registry_owner(cls):
        return MapDataPipe
