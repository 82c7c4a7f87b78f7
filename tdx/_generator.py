"""``tdx.Generator``: a seedable random-number state bound to one device, as ``torch.Generator``.

A Generator remembers its seed and, once used, holds the native state of its executor
(a ``torch.Generator`` for torch devices, an ``mx.random.key`` for MLX), created lazily
by the executor's ``generator_state``. Random functions take what one call needs from
:func:`native`. A seed gives the same stream again on the same executor; different
executors draw different streams. This module must never import a framework.
"""

from __future__ import annotations

import secrets

from ._errors import DeviceMismatchError, TdxTypeError

_DEFAULT_SEED = 67280421310721  # torch's default Generator seed


class Generator:
    """A random-number generator for one device, usable as ``generator=`` in random functions.

    Args:
        device: where its draws happen (``"cpu"``, ``"mlx"``...); None means the default
            device at construction (device translation applies, as for tensors).
    """

    __slots__ = ("_ex", "_seed", "_state", "__weakref__")

    def __init__(self, device=None):
        from . import backends

        self._ex = backends.get(device)
        self._seed = _DEFAULT_SEED
        self._state = None

    @property
    def device(self):
        """The ``tdx.device`` the generator draws on."""
        return self._ex.device

    def manual_seed(self, seed) -> "Generator":
        """Reset to ``seed`` (an int; reduced to 64 bits as torch does) and return self.

        Raises:
            TdxTypeError: ``seed`` is not an int.
        """
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TdxTypeError(f"manual_seed expected an int seed, got {seed!r}")
        self._seed = seed % (1 << 64)
        self._state = None
        return self

    def seed(self) -> int:
        """Reseed from the operating system's entropy and return the new seed."""
        value = secrets.randbits(63)
        self.manual_seed(value)
        return value

    def initial_seed(self) -> int:
        """The seed the current stream started from."""
        return self._seed

    def __repr__(self) -> str:
        return f"<tdx.Generator device={self._ex.device} seed={self._seed}>"


def native(generator, ex):
    """What executor ``ex`` takes as ``generator=`` for one random call (None passes through).

    Raises:
        TdxTypeError: ``generator`` is not a ``tdx.Generator``.
        DeviceMismatchError: the generator belongs to another device.
    """
    if generator is None:
        return None
    if type(generator) is not Generator:
        raise TdxTypeError(f"generator must be a tdx.Generator, not {type(generator).__name__}")
    if generator._ex is not ex:
        raise DeviceMismatchError(f"Expected a '{ex.device}' device type for generator but found "
                                  f"'{generator._ex.device}'")
    if generator._state is None:
        generator._state = ex.generator_state(generator._seed)
    return ex.generator_arg(generator._state)
