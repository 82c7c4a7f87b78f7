"""Nested containers of tensors (torch's "pytrees"): flatten to leaves and rebuild, for ``tdx.func``.

Tuples, lists, dicts and named tuples are containers; anything else is a leaf. ``torch.func``
walks its arguments and results this way (``in_dims`` matching an argument's structure, a
dict of parameters as one argument). Must never import a framework, and never copy a leaf.
"""

from __future__ import annotations

__all__ = ["flatten", "unflatten", "tree_map", "describe"]


class Spec:
    """The structure of a flattened tree: the container kind, its keys and the children's specs.

    A leaf's spec has ``kind`` None. Two specs are equal when the trees have the same shape.
    """

    __slots__ = ("kind", "keys", "children")

    def __init__(self, kind, keys=None, children=()):
        self.kind, self.keys, self.children = kind, keys, tuple(children)

    @property
    def num_leaves(self) -> int:
        """How many leaves the tree holds."""
        return 1 if self.kind is None else sum(c.num_leaves for c in self.children)

    def __eq__(self, other) -> bool:
        return isinstance(other, Spec) and (self.kind, self.keys, self.children) == \
            (other.kind, other.keys, other.children)

    def __hash__(self) -> int:
        return hash((self.kind, self.keys))

    def __repr__(self) -> str:
        return describe(self)


def _children(tree):
    """``(kind, keys, children)`` of a container, or None for a leaf."""
    if isinstance(tree, dict):
        keys = tuple(tree)
        return type(tree), keys, [tree[k] for k in keys]
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return type(tree), None, list(tree)
    if isinstance(tree, (tuple, list)):
        return type(tree), None, list(tree)
    return None


def flatten(tree):
    """``(leaves, spec)``: the leaves left to right and what :func:`unflatten` needs to rebuild ``tree``."""
    leaves: list = []

    def walk(t):
        parts = _children(t)
        if parts is None:
            leaves.append(t)
            return Spec(None)
        kind, keys, kids = parts
        return Spec(kind, keys, [walk(k) for k in kids])

    return leaves, walk(tree)


def unflatten(leaves, spec: Spec):
    """The tree of ``spec`` with ``leaves`` in place of its leaves (left to right)."""
    it = iter(leaves)

    def build(s):
        if s.kind is None:
            return next(it)
        kids = [build(c) for c in s.children]
        if issubclass(s.kind, dict):
            return s.kind(zip(s.keys, kids))
        if issubclass(s.kind, tuple) and hasattr(s.kind, "_fields"):
            return s.kind(*kids)
        return s.kind(kids)

    return build(spec)


def tree_map(fn, tree):
    """``tree`` with ``fn(leaf)`` in place of each leaf."""
    leaves, spec = flatten(tree)
    return unflatten([fn(x) for x in leaves], spec)


def broadcast_prefix(prefix, tree, is_leaf_value):
    """One value per leaf of ``tree``: ``prefix`` is a tree whose leaves (values for which
    ``is_leaf_value`` holds) stand for whole subtrees of ``tree`` (``in_dims=0`` for a dict of tensors).

    Returns:
        The list of per-leaf values, or None when ``prefix`` does not match ``tree``'s structure.
    """
    out: list = []

    def walk(p, t):
        if is_leaf_value(p):
            out.extend([p] * flatten(t)[1].num_leaves)
            return True
        pp, tp = _children(p), _children(t)
        if pp is None or tp is None or len(pp[2]) != len(tp[2]):
            return False
        if pp[1] is not None or tp[1] is not None:
            if pp[1] is None or tp[1] is None or set(pp[1]) != set(tp[1]):
                return False
            return all(walk(p[k], t[k]) for k in tp[1])
        return all(walk(a, b) for a, b in zip(pp[2], tp[2]))

    return out if walk(prefix, tree) else None


def describe(spec: Spec) -> str:
    """A short text of a structure, for error messages (``(*, {'w': *})``)."""
    if spec.kind is None:
        return "*"
    inner = [describe(c) for c in spec.children]
    if issubclass(spec.kind, dict):
        return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(spec.keys, inner)) + "}"
    if issubclass(spec.kind, list):
        return "[" + ", ".join(inner) + "]"
    return "(" + ", ".join(inner) + ("," if len(inner) == 1 else "") + ")"
