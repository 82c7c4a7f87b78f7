"""``torch._tensor_str``: tensor printing's options and the data part of a tensor's repr.

``PRINT_OPTS`` reads the options ``tdx.set_printoptions`` sets (``PRINT_OPTS.precision``...); ``_tensor_str(t,
indent)`` is the bracketed data of ``repr(t)``, its continuation lines indented by ``indent`` spaces (as torch's,
which torch_geometric builds its reprs from). Never imports a framework.
"""

from __future__ import annotations

from .._tensor.formats import PRINT_OPTIONS

__all__ = ["PRINT_OPTS"]


class _PrintOptions:
    """Attribute access to tdx's current print options (``PRINT_OPTS.threshold``)."""

    def __getattr__(self, name: str):
        try:
            return PRINT_OPTIONS[name]
        except KeyError:
            raise AttributeError(f"PRINT_OPTS has no option {name!r}; options: {', '.join(PRINT_OPTIONS)}") from None

    def __setattr__(self, name: str, value) -> None:
        PRINT_OPTIONS[name] = value


PRINT_OPTS = _PrintOptions()


def _data_end(text: str, start: int) -> int:
    """Where the data starting at ``text[start]`` ends (past its closing bracket, or at the next ',' or ')')."""
    if text[start] != "[":
        ends = [i for i in (text.find(",", start), text.find(")", start)) if i >= 0]
        return min(ends) if ends else len(text)
    depth = 0
    for i in range(start, len(text)):
        depth += {"[": 1, "]": -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
    return len(text)


def _tensor_str(self, indent: int) -> str:
    """The data of ``repr(self)`` (no ``tensor(`` prefix, dtype or device), continuation lines indented by ``indent``."""
    text = repr(self)
    start = text.index("tensor(") + len("tensor(")
    body = text[start:_data_end(text, start)]
    return body.replace("\n" + " " * start, "\n" + " " * indent)
