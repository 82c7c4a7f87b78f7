"""Mirror of ``torch.backends.mha``: the fast-path switch of multi-head attention modules.

The switch governs tdx's own ``MultiheadAttention``/``TransformerEncoder`` fast path on every
executor, so it is kept on the tdx side and reading it never imports torch; when torch is
loaded the value is torch's, and a value set before torch loads is applied to torch then.
"""

from . import _flags

_TDX_EXTENSIONS = ()  # names tdx adds to torch.backends.mha: none

_fastpath = _flags.Flag("mha.fastpath_enabled", True,
                        lambda t: t.backends.mha.get_fastpath_enabled(),
                        lambda t, v: t.backends.mha.set_fastpath_enabled(v), load=False)


def get_fastpath_enabled() -> bool:
    """Whether the fast path of ``TransformerEncoder`` and ``MultiheadAttention`` is enabled.

    The fast path may still not run unless every condition on the inputs is met.
    """
    return _fastpath.read()


def set_fastpath_enabled(value: bool) -> None:
    """Enable or disable the multi-head attention fast path (for torch and tdx alike)."""
    _fastpath.write(value)
