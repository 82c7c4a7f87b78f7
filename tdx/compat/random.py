"""``tdx.random``: torch.random's seeding functions and ``fork_rng``.

While the torch random stream is in force (the default, ``[random] stream = "torch"``), torch's
default CPU generator draws the numbers of the cpu and the MLX devices alike, so seeding it, saving
its state or forking it covers them all; CUDA keeps its own generators, as in torch. Under
``stream = "native"`` MLX draws from its own global key, which MLX offers no way to snapshot:
``fork_rng`` then restores only torch's generators. This module must never import a framework when
it is imported.
"""

from __future__ import annotations

import contextlib

from .._errors import TdxTypeError
from ..backends import _flags
from ..backends._seeding import initial_seed
from .._tensor.runtime import get_rng_state, manual_seed, seed, seeded_torch, set_rng_state, thread_safe_generator

__all__ = ["set_rng_state", "get_rng_state", "manual_seed", "seed", "initial_seed", "fork_rng",
           "thread_safe_generator"]


def _cuda_devices(torch, devices, device_type: str) -> list:
    if device_type != "cuda" or not torch.cuda.is_available():
        return []
    return list(range(torch.cuda.device_count())) if devices is None else list(devices)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type="cuda"):
    """Within the block, draw freely: the generators' states are restored when it ends, as torch's.

    Args:
        devices: CUDA devices whose generators are saved too (None: every visible one).
        enabled: False makes the block a no-op.
        device_type: the accelerator type whose generators ``devices`` name (``"cuda"``; others
            have no generator of their own here).

    Raises:
        TdxTypeError: ``device_type`` is not a string.
    """
    if not isinstance(device_type, str):
        raise TdxTypeError(f"{_caller}: device_type must be a string such as 'cuda', got {device_type!r}")
    torch = _flags.torch_module() if enabled else None
    if torch is None:
        yield
        return
    torch = seeded_torch(_caller)
    from ..backends import _seeding

    cuda = _cuda_devices(torch, devices, device_type)
    cpu_state = torch.get_rng_state()
    cuda_states = [torch.cuda.get_rng_state(d) for d in cuda]
    seed_before = _seeding._state["seed"]
    try:
        yield
    finally:
        torch.set_rng_state(cpu_state)
        for d, state in zip(cuda, cuda_states):
            torch.cuda.set_rng_state(state, d)
        _seeding._state["seed"] = seed_before
