"""``tdx.device``: parsing and printing of device names.

Accepted forms: ``cpu``, ``cuda``, ``cuda:N``, ``mps``, ``mps:0``, ``mlx`` (MLX's default
device), ``mlx:gpu``, ``mlx:cpu``, ``meta`` (torch's data-less device: shapes and dtypes only), an
int N (``cuda:N``), or another ``tdx.device``.
Which executor a device runs on, availability and translation live in
``tdx.backends``; this module only parses, never imports a framework.
"""

from __future__ import annotations

import threading

from ._errors import InvalidDeviceError, TdxValueError

_TYPES = ("cpu", "cuda", "mps", "mlx", "meta")
_MLX_KINDS = ("gpu", "cpu")
_ACCEPTED = "'cpu', 'cuda', 'cuda:N', 'mps', 'mlx', 'mlx:gpu', 'mlx:cpu', 'meta'"
_MAX_INDEX = 127  # torch keeps a device index in a signed 8-bit int: a larger one wraps around, so tdx refuses it
_MAX_PARSED = 2 ** 31 - 1  # the largest index torch's device-string parser reads
class _Context(threading.local):
    """This thread's ``with tdx.device(...)`` blocks (``stack``): a class default, so a thread that never
    opened one reads None as a plain attribute (every factory call asks; a failing thread-local lookup costs
    several times more)."""

    stack = None


_ctx = _Context()
# the device a pin (``python -m tdx run --device``) puts every tensor on; tdx.backends sets it
_pin = {"device": None}


class device:
    """A device name, as ``torch.device``; tdx adds the ``mlx`` type.

    Attributes:
        type: ``"cpu"``, ``"cuda"``, ``"mps"`` or ``"mlx"``.
        index: the ordinal for ``cuda``/``mps``, else ``None``.
        kind: for ``mlx`` devices ``"gpu"``, ``"cpu"`` or ``None`` (MLX's default), else ``None``.

    Used as a context manager it sets the default device of the current thread, as torch's does.

    Under a device pin (``python -m tdx run --device mlx:cpu``) a ``cpu`` request lands on the pinned
    device, so the pinned device compares (and hashes) equal to ``device("cpu")``: code that asks
    ``t.device == torch.device("cpu")`` of a tensor it created on the default device gets torch's answer.
    """

    __slots__ = ("type", "index", "kind", "_str")

    def __init__(self, type, index=None):  # noqa: A002 - torch's parameter name
        if isinstance(type, device):
            if index is not None:
                raise InvalidDeviceError(f"device(): index given twice for {type!r}")
            self.type, self.index, self.kind, self._str = type.type, type.index, type.kind, type._str
            return
        if isinstance(type, int) and not isinstance(type, bool):
            type, index = "cuda", type
        if not isinstance(type, str):
            raise InvalidDeviceError(f"device(): expected a str, int or tdx.device, got {type!r}")
        if type != type.strip():  # torch refuses it too; a config value " cpu" must not pass as "cpu"
            raise InvalidDeviceError(f"Invalid device string: {type!r} (leading or trailing whitespace); accepted: "
                                     f"{_ACCEPTED}")
        name, sep, suffix = type.partition(":")
        kind = None
        if name not in _TYPES:
            raise InvalidDeviceError(f"Expected one of {_ACCEPTED} device string, got {type!r}")
        if sep:
            if index is not None:
                raise InvalidDeviceError(f"device(): index given twice in {type!r} and index={index}")
            if name == "mlx":
                if suffix not in _MLX_KINDS:
                    raise InvalidDeviceError(f"Invalid MLX device {type!r}; accepted: 'mlx', 'mlx:gpu', 'mlx:cpu'")
                kind = suffix
            elif suffix.isascii() and suffix.isdigit():  # '²' is a digit to str only
                index = int(suffix)
                if index > _MAX_PARSED:
                    raise InvalidDeviceError(f"Could not parse device index '{suffix}' in device string {type!r} "
                                             f"(accepted: 0..{_MAX_INDEX})")
            else:
                raise InvalidDeviceError(f"Invalid device string: {type!r}; accepted: {_ACCEPTED}")
        if index is not None:
            if name == "mlx":
                raise InvalidDeviceError(f"MLX devices take no index, got {type!r} with index {index}; "
                                         "use 'mlx:gpu' or 'mlx:cpu'")
            if not isinstance(index, int) or isinstance(index, bool) or index < 0:
                raise InvalidDeviceError(f"Device index must be a non-negative int, got {index!r}")
            if index >= 2 ** 63:
                raise TdxValueError(f"Overflow when unpacking long long: device index {index} (accepted: "
                                    f"0..{_MAX_INDEX})")
            if index > _MAX_INDEX:
                raise InvalidDeviceError(f"Device index {index} of {name!r} is out of range: a device index is a "
                                         f"signed 8-bit int, accepted: 0..{_MAX_INDEX}")
            if name in ("cpu", "meta"):
                index = None  # torch keeps cpu:0 as 'cpu' in practice
        self.type, self.index, self.kind = name, index, kind
        if kind is not None:
            self._str = f"{name}:{kind}"
        elif index is not None:
            self._str = f"{name}:{index}"
        else:
            self._str = name

    def __str__(self) -> str:
        return self._str

    def __repr__(self) -> str:
        if self.kind is not None:
            return f"device(type='{self.type}', kind='{self.kind}')"
        if self.index is not None:
            return f"device(type='{self.type}', index={self.index})"
        return f"device(type='{self.type}')"

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            try:
                other = device(other)
            except InvalidDeviceError:
                return False
        if not isinstance(other, device):
            return False
        if self._str == other._str:
            return True
        pin = _pin["device"]
        return pin is not None and {self._str, other._str} == {pin._str, "cpu"}

    def __hash__(self) -> int:
        pin = _pin["device"]
        return hash("cpu" if pin is not None and self._str == pin._str else self._str)

    def __reduce__(self):
        return (device, (self._str,))

    def __enter__(self):
        stack = _ctx.stack
        if stack is None:
            stack = _ctx.stack = []
        stack.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _ctx.stack.pop()


def context_device():
    """The innermost ``with tdx.device(...)`` of this thread, or None."""
    stack = _ctx.stack
    return stack[-1] if stack else None


def as_device(obj) -> device:
    """Coerce a str, int or device to a :class:`device`."""
    return obj if type(obj) is device else device(obj)
