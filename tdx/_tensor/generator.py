"""``tdx.Generator``: a seedable random-number state bound to one device, as ``torch.Generator``.

A Generator remembers its seed and, once used, holds the native state of its executor
(a ``torch.Generator`` for torch devices, an ``mx.random.key`` for MLX), created lazily
by the executor's ``generator_state``. Random functions take what one call needs from
:func:`native`. A seed gives the same stream again on the same executor; different
executors draw different streams. ``get_state``/``set_state`` snapshot and restore that
state as a ``uint8`` cpu tensor of the executor's bytes (``generator_get_state`` and
``generator_set_state``). This module must never import a framework.
"""

from __future__ import annotations

import os

from .._errors import DeviceMismatchError, TdxError, TdxTypeError

_DEFAULT_SEED = 67280421310721  # torch's default Generator seed
_STATE_DEVICE = "cpu"  # where get_state puts its bytes, as torch's ByteTensor states



def entropy_seed() -> int:
    """A 63-bit seed from the operating system's entropy (``os.urandom``: no ``secrets``/OpenSSL import)."""
    return int.from_bytes(os.urandom(8), "little") >> 1

class Generator:
    """A random-number generator for one device, usable as ``generator=`` in random functions.

    Args:
        device: where its draws happen (``"cpu"``, ``"mlx"``...); None means the default
            device at construction (device translation applies, as for tensors).
    """

    __slots__ = ("_ex", "_seed", "_state", "__weakref__")

    def __init__(self, device=None):
        from .. import backends

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
        """Reseed from the operating system's entropy and return the new seed (for the default
        generator, as ``tdx.seed``: its :meth:`manual_seed` seeds every executor)."""
        value = entropy_seed()
        self.manual_seed(value)
        return value

    def initial_seed(self) -> int:
        """The seed the current stream started from (after :meth:`set_state`, the state's)."""
        return self._seed

    def _native_state(self):
        """The executor's state, made from the seed on first use."""
        if self._state is None:
            self._state = self._ex.generator_state(self._seed)
        return self._state

    def get_state(self):
        """A snapshot of the generator as a ``uint8`` tensor on ``cpu``, as ``torch.Generator``.

        Handing it to :meth:`set_state` (of this or another generator of the same executor
        kind) makes the following draws repeat. On torch devices the bytes are torch's own
        ``get_state()``; on MLX they follow the layout in :mod:`tdx.backends.mlx._random`.

        Raises:
            UnsupportedOpError: the executor cannot snapshot generator states.
        """
        from .. import backends
        from .._dtypes import uint8
        from .wrapping import wrap

        data = self._ex.generator_get_state(self._native_state())
        ex = backends.get(_STATE_DEVICE)
        return wrap(ex.from_data(list(data), uint8), ex)

    def set_state(self, new_state) -> "Generator":
        """Restore a state from :meth:`get_state` and return self, as ``torch.Generator``.

        Args:
            new_state: a ``uint8`` tdx tensor on ``cpu`` made by ``get_state`` on a generator
                of the same executor kind; :meth:`initial_seed` becomes the seed it encodes.

        Raises:
            TdxTypeError: ``new_state`` is not a ``uint8`` tdx tensor on ``cpu``.
            TdxRuntimeError: its size or layout is not a state of this executor kind (a
                truncated state, or one from another executor kind).
        """
        data = _state_bytes(new_state)
        state, seed = self._ex.generator_set_state(data)
        self._state, self._seed = state, seed
        return self

    def __repr__(self) -> str:
        return f"<tdx.Generator device={self._ex.device} seed={self._seed}>"


class DefaultGenerator(Generator):
    """The default CPU generator as a :class:`Generator` (torch's ``default_generator``, which
    ``manual_seed`` returns): draws with it are draws without ``generator=`` (torch's CPU generator, which
    under the torch random stream draws MLX's numbers too), and seeding or restoring it is
    ``tdx.manual_seed``/``tdx.set_rng_state``, which cover every executor."""

    __slots__ = ()

    def __init__(self):
        from ..backends import host_torch

        self._ex = host_torch()
        self._seed = None
        self._state = self._ex.default_generator_state()

    def manual_seed(self, seed) -> "Generator":
        """Seed the default generators (``tdx.manual_seed``) and return self."""
        from ..backends._seeding import manual_seed

        manual_seed(seed)
        return self

    def initial_seed(self) -> int:
        """``tdx.initial_seed()``."""
        from ..backends._seeding import initial_seed

        return initial_seed()

    def set_state(self, new_state) -> "Generator":
        """Restore the default CPU generator from :meth:`get_state`'s tensor (``tdx.set_rng_state``), returning self.

        Raises:
            TdxTypeError: ``new_state`` is not a ``uint8`` tdx tensor on ``cpu``.
            TdxRuntimeError: its bytes are no state of torch's CPU generator.
        """
        from .._errors import TdxRuntimeError

        data = _state_bytes(new_state)
        try:
            self._ex.set_default_rng_state(data)
        except TdxError:
            raise
        except RuntimeError as err:  # torch's own refusal of a malformed state
            raise TdxRuntimeError(str(err)) from None
        return self

    def __repr__(self) -> str:
        return f"<tdx.Generator device={self._ex.device} (the default generator)>"


_DEFAULT: list = []


def default_generator():
    """The :class:`DefaultGenerator` (made once; None without torch, which owns the CPU generator)."""
    if not _DEFAULT:
        from .. import backends

        if backends.host_torch() is None:
            return None
        _DEFAULT.append(DefaultGenerator())
    return _DEFAULT[0]


def _state_bytes(new_state) -> bytes:
    """The bytes of a state tensor handed to ``set_state``.

    Raises:
        TdxTypeError: ``new_state`` is not a ``uint8`` tdx tensor on ``cpu``.
    """
    from .._dtypes import uint8
    from . import wrapping

    if not isinstance(new_state, wrapping.Tensor):
        raise TdxTypeError(f"set_state expected a uint8 tdx tensor on cpu (as get_state returns), "
                           f"but got {type(new_state).__name__}")
    if new_state.dtype is not uint8 or not _on_host(new_state):
        raise TdxTypeError(f"set_state expected a uint8 tdx tensor on cpu (as get_state returns), "
                           f"but got a {new_state.dtype} tensor on {new_state.device}")
    return bytes(new_state.reshape(-1).tolist())


def _torch_stream() -> bool:
    """Whether MLX draws its numbers from torch's CPU generator (``[random] stream = "torch"``)."""
    from .. import config

    return config.current()["random.stream"] == "torch"


def native(generator, ex):
    """What executor ``ex`` takes as ``generator=`` for one random call (None passes through).

    Raises:
        TdxTypeError: ``generator`` is not a ``tdx.Generator``.
        DeviceMismatchError: the generator belongs to another device.
    """
    if generator is None:
        return None
    if not isinstance(generator, Generator):
        raise TdxTypeError(f"generator must be a tdx.Generator, not {type(generator).__name__}")
    if generator._ex is not ex:
        if generator.__class__ is DefaultGenerator and ex.name == "mlx" and _torch_stream():
            return None  # MLX draws from torch's default CPU generator under the torch stream: the same draws
        raise DeviceMismatchError(f"Expected a '{ex.device}' device type for generator but found "
                                  f"'{generator._ex.device}'")
    return ex.generator_arg(generator._native_state())


def _on_host(t) -> bool:
    """Whether tensor ``t`` is on the device :meth:`Generator.get_state` puts states on."""
    if t.device.type == _STATE_DEVICE:
        return True
    from .. import backends

    try:
        return t.device == backends.get(_STATE_DEVICE).device
    except TdxError:
        return False
