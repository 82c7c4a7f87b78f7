"""torch's random streams on MLX: the same seed draws torch's numbers on every executor.

:func:`torch_stream` decorates the MLX executor's class: each random method first asks whether
this call draws from torch, else runs MLX's own (:mod:`._random`). While the stream in force is
``"torch"`` (the default: ``[random] stream`` in the config, ``TDX_RANDOM_STREAM``), every draw
of the MLX executor — ``rand``, ``randn``, ``randint``, ``randperm``, ``multinomial``,
``bernoulli(_)``, ``normal_``, ``uniform_``, ``exponential_``, ``cauchy_``, ``log_normal_``, ``geometric_``, the
``torch.distributions`` samplers (``poisson``, ``binomial``, ``_standard_gamma``,
``_sample_dirichlet``), ``rrelu``'s slopes (drawn where the input is ``<= 0``, so its values travel to the
host), and so dropout's masks (attention's included), ``nn.init`` and the samplers —
is made by the torch executor on the host with torch's CPU generator, exactly as the same call on
``cpu`` draws it, and copied into MLX. With no ``generator=``, the draw comes from torch's default
CPU generator itself, so ``manual_seed``, ``get_rng_state``/``set_rng_state`` and ``fork_rng`` cover
MLX's draws, and a program draws one stream in the same order whether its tensors live on cpu or
on MLX. A ``tdx.Generator`` on an MLX device holds a torch CPU generator (its ``get_state`` is
torch's bytes). ``"native"`` keeps MLX's own counter-based keys (:mod:`._random`): faster, other
numbers. Where torch is not installed the stream is MLX's own whatever the setting.

The price is a host draw and a copy per call (``bench/random_stream.py`` measures it). This module
must never import torch: it reaches the torch executor through the registry and moves arrays
through NumPy.
"""

from __future__ import annotations

import mlx.core as mx

def stream() -> str:
    """The random stream in force: ``"torch"`` or ``"native"`` (config ``[random] stream``)."""
    from ... import config

    return config.current()["random.stream"]


def _host():
    """The torch executor on cpu (never a pinned or translated one), or None without torch."""
    if not _HOST:
        from .. import host_torch

        _HOST.append(host_torch())
    return _HOST[0]


_HOST: list = []


def in_force() -> bool:
    """Whether MLX's draws come from torch's CPU generator now (``"torch"`` and torch installed)."""
    return stream() == "torch" and _host() is not None


def _torch_draws(generator) -> bool:
    """Whether a call draws from torch: an MLX key says no, a torch generator yes, None asks the stream."""
    if generator is None:
        return in_force()
    return not isinstance(generator, mx.array)


def _to_host(ex, x):
    """``x`` (an MLX array, or a number or None) as a torch cpu tensor of the same values and dtype."""
    if not isinstance(x, mx.array):
        return x
    return _host().from_host(ex.host_numpy(x).copy(), ex.dtype(x))


def _like(ex, x):
    """An uninitialized torch cpu tensor of ``x``'s shape and dtype (a fill draws into it; as torch's
    ``bernoulli(x, p)`` is ``empty_like(x).bernoulli_(p)``, ``x``'s values are never read)."""
    return _host().empty(tuple(x.shape), ex.dtype(x))


def _back(ex, t, dtype):
    """torch cpu tensor ``t`` copied into MLX as tdx dtype ``dtype``."""
    return ex.from_host(_host().host_numpy(t), dtype)


def _fits(shape, dtype, op: str):
    """``shape``, once MLX can hold an array of it (checked before the host draws: MLX's limits and the
    memory left, with the errors MLX's own draws give)."""
    from ._memory import check_alloc

    check_alloc(tuple(shape), dtype.itemsize, op)
    return shape


def _int64():
    from ... import _dtypes as D

    return D.int64


# name -> (the generator argument's position after self, the draw made by the host executor)
_DRAWS = {
    "rand": (2, lambda ex, h, shape, dtype, g: _back(ex, h.rand(_fits(shape, dtype, "rand"), dtype, g), dtype)),
    "randn": (2, lambda ex, h, shape, dtype, g: _back(ex, h.randn(_fits(shape, dtype, "randn"), dtype, g), dtype)),
    "randint": (4, lambda ex, h, lo, hi, shape, dtype, g: _back(
        ex, h.randint(lo, hi, _fits(shape, dtype, "randint"), dtype, g), dtype)),
    "randperm": (2, lambda ex, h, n, dtype, g: _back(
        ex, h.randperm(_fits((n,), dtype, "randperm")[0] if n >= 0 else n, dtype, g), dtype)),
    "multinomial": (3, lambda ex, h, x, n, repl, g: _back(ex, h.multinomial(_to_host(ex, x), n, repl, g), _int64())),
    "bernoulli": (2, lambda ex, h, x, p, g: _back(ex, h.bernoulli(_to_host(ex, x), None, g) if p is None else
                                                  h.bernoulli_(_like(ex, x), _to_host(ex, p), g), ex.dtype(x))),
    "bernoulli_": (2, lambda ex, h, x, p, g: _back(ex, h.bernoulli_(_like(ex, x), _to_host(ex, p), g), ex.dtype(x))),
    "normal_": (3, lambda ex, h, x, mean, std, g: _back(ex, h.normal_(_like(ex, x), mean, std, g), ex.dtype(x))),
    "uniform_": (3, lambda ex, h, x, lo, hi, g: _back(ex, h.uniform_(_like(ex, x), lo, hi, g), ex.dtype(x))),
    "random_": (3, lambda ex, h, x, frm, to, g: _back(ex, h.random_(_like(ex, x), frm, to, g), ex.dtype(x))),
    "exponential_": (2, lambda ex, h, x, lambd, g: _back(ex, h.exponential_(_like(ex, x), lambd, g), ex.dtype(x))),
    "cauchy_": (3, lambda ex, h, x, median, sigma, g: _back(ex, h.cauchy_(_like(ex, x), median, sigma, g),
                                                            ex.dtype(x))),
    "log_normal_": (3, lambda ex, h, x, mean, std, g: _back(ex, h.log_normal_(_like(ex, x), mean, std, g),
                                                            ex.dtype(x))),
    "geometric_": (2, lambda ex, h, x, p, g: _back(ex, h.geometric_(_like(ex, x), p, g), ex.dtype(x))),
    "standard_gamma": (1, lambda ex, h, x, g: _back(ex, h.standard_gamma(_to_host(ex, x), g), ex.dtype(x))),
    "sample_dirichlet": (1, lambda ex, h, x, g: _back(ex, h.sample_dirichlet(_to_host(ex, x), g), ex.dtype(x))),
    "poisson": (1, lambda ex, h, x, g: _back(ex, h.poisson(_to_host(ex, x), g), ex.dtype(x))),
    "rrelu_noise": (3, lambda ex, h, x, lo, hi, g: _back(ex, h.rrelu_noise(_to_host(ex, x), lo, hi, g), ex.dtype(x))),
    "binomial": (2, lambda ex, h, n, p, g: _back(ex, h.binomial(_to_host(ex, n), _to_host(ex, p), g), ex.dtype(p))),
}


def _drawing(name: str, native):
    """``native`` (an MLX random method) made to draw from torch while that stream is in force."""
    import inspect

    position, draw = _DRAWS[name]
    signature = inspect.signature(native)

    def method(self, *args, **kwargs):
        if not kwargs and len(args) == position + 1:  # the facade's form: every argument by position
            args, generator = args[:position], args[position]
        else:
            bound = signature.bind(self, *args, **kwargs)
            bound.apply_defaults()
            values = tuple(bound.arguments.values())[1:]
            args, generator = values[:position], values[position]
        if not _torch_draws(generator):
            return native(self, *args, generator)
        return draw(self, _host(), *args, generator)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = native.__doc__
    method.__signature__ = signature
    return method


def torch_stream(cls):
    """Class decorator: ``cls``'s random methods draw torch's numbers while that stream is in force."""
    for name in _DRAWS:
        setattr(cls, name, _drawing(name, getattr(cls, name)))
    native = {n: getattr(cls, n) for n in ("generator_state", "generator_arg", "generator_get_state",
                                           "generator_set_state", "manual_seed", "default_rng_state",
                                           "set_default_rng_state")}

    def generator_state(self, seed: int):
        if in_force():
            return _host().generator_state(seed % (1 << 64))
        return native["generator_state"](self, seed)

    def generator_arg(self, state):
        return native["generator_arg"](self, state) if isinstance(state, list) else _host().generator_arg(state)

    def generator_get_state(self, state) -> bytes:
        if isinstance(state, list):
            return native["generator_get_state"](self, state)
        return _host().generator_get_state(state)

    def generator_set_state(self, data: bytes) -> tuple:
        from ..base import MLX_STATE_HEADER

        if bytes(data[:len(MLX_STATE_HEADER)]) == MLX_STATE_HEADER or not in_force():
            return native["generator_set_state"](self, data)
        return _host().generator_set_state(data)

    def manual_seed(self, seed: int) -> None:
        native["manual_seed"](self, seed)
        if in_force():  # torch's default generator draws MLX's numbers: seed it even if cpu was never used
            _host().manual_seed(seed)

    def seed_on_creation(self, seed: int) -> None:
        native["manual_seed"](self, seed)  # torch's generator is the torch family's: seeded by its own creation

    def default_rng_state(self):
        # torch's CPU generator draws MLX's numbers: its state (bytes) is the one to save
        return _host().default_rng_state() if in_force() else native["default_rng_state"](self)

    def set_default_rng_state(self, state) -> None:
        if isinstance(state, bytes):
            _host().set_default_rng_state(state)
        else:
            native["set_default_rng_state"](self, state)

    native["seed_on_creation"] = cls.seed_on_creation
    for fn in (generator_state, generator_arg, generator_get_state, generator_set_state, manual_seed,
               seed_on_creation, default_rng_state, set_default_rng_state):
        fn.__doc__ = native[fn.__name__].__doc__
        setattr(cls, fn.__name__, fn)
    return cls
