"""``RemovableHandle``: what every ``register_*_hook`` returns, as ``torch.utils.hooks``.

Holds weak references to the hook dictionaries so a handle never keeps a module alive.
Must never import torch or mlx.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict

__all__ = ["RemovableHandle"]


class RemovableHandle:
    """A handle that removes one hook from its dictionary (and the extra dictionaries) on ``remove()``.

    Args:
        hooks_dict: the dictionary the hook is stored in, keyed by ``self.id``.
        extra_dict: a dictionary or list of dictionaries whose ``self.id`` entry is removed too.
    """

    next_id: int = 0

    def __init__(self, hooks_dict, *, extra_dict=None) -> None:
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        self.extra_dict_ref: tuple = ()
        if isinstance(extra_dict, dict):
            self.extra_dict_ref = (weakref.ref(extra_dict),)
        elif isinstance(extra_dict, list):
            self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)

    def remove(self) -> None:
        """Remove the hook; a second call does nothing."""
        hooks_dict = self.hooks_dict_ref()
        if hooks_dict is not None and self.id in hooks_dict:
            del hooks_dict[self.id]
        for ref in self.extra_dict_ref:
            extra = ref()
            if extra is not None and self.id in extra:
                del extra[self.id]

    def __getstate__(self):
        if self.extra_dict_ref:
            return self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref)
        return self.hooks_dict_ref(), self.id

    def __setstate__(self, state) -> None:
        if state[0] is None:  # the dictionary died before pickling
            self.hooks_dict_ref = weakref.ref(OrderedDict())
        else:
            self.hooks_dict_ref = weakref.ref(state[0])
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        self.extra_dict_ref = () if len(state) < 3 else tuple(
            weakref.ref(d) for d in state[2] if d is not None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        self.remove()
