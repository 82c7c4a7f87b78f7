"""torch's version counter (``Tensor._version``) on executors whose arrays are immutable (MLX).

torch counts every in-place write to a tensor's data in a counter its views and ``detach()`` share, and gives
``.data`` a counter of its own; libraries compare it to see a tensor edited in place since they cached
something from it (kornia's transform matrices, pyro's memoized functions). On torch executors the native
keeps that counter. Here a root tensor keeps its own (``_ver``, absent until the first write) and its views
read it; a ``.data`` view counts its writes apart. This module must never import a framework, and never
count anything but a write that changed a tensor's values.
"""

from __future__ import annotations

DATA = "data"  # the ``detached`` of a ``.data`` view's layout: detached, its writes counted in its own counter


def counted_apart(t):
    """``t`` (a detached view: ``t.detach()``) counting its writes in its own counter, not its root's (``.data``)."""
    if t._view is not None:
        t._view.detached = DATA
    return t


def bump(t) -> None:
    """Count one in-place write in ``t``'s counter (a root's, or a ``.data`` view's own)."""
    t._ver = getattr(t, "_ver", 0) + 1


def written(t, root) -> None:
    """Count a write through ``t`` (``root``'s view, or ``root`` itself) where torch counts it: in the root's
    counter, or in ``t``'s own for a ``.data`` view."""
    lay = t._view
    bump(t if lay is not None and lay.detached is DATA else root)


def version(t) -> int:
    """``t._version`` on an executor whose arrays are immutable: its root's counter (its own for ``.data``)."""
    lay = t._view
    return getattr(t if lay is None or lay.detached is DATA else lay.root, "_ver", 0)
