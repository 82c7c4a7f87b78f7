"""The handle a tensor's ``register_hook``, ``register_post_accumulate_grad_hook`` (and the tape's hooks)
return: ``remove()`` unregisters the hook, once.

This module holds no hook table of its own and must never import a framework or the rest of tdx: the
table belongs to whoever registered the hook (torch's native tensor or the tape), which hands over the
function that removes it.
"""

from __future__ import annotations


class HookHandle:
    """What ``register_*_hook`` returns: ``remove()`` unregisters the hook (idempotent)."""

    __slots__ = ("_remove",)

    def __init__(self, remove):
        self._remove = remove

    def remove(self) -> None:
        """Unregisters the hook; a second call does nothing."""
        if self._remove is not None:
            self._remove()
            self._remove = None
