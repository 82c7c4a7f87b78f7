"""Whether this thread runs inside a trace of ``tdx.compile`` on MLX, where no value can be read.

``tdx.compiler`` sets the flag around its trace and answers ``is_compiling`` from it; the facade's ops read it to
skip the checks that would read a value (the bounds of an index), which then run where the step runs eagerly.
It lives here, below both, so that the facade asks without importing ``tdx.compiler``. This module must never
import anything but the standard library.
"""

from __future__ import annotations

import threading


class _Tracing(threading.local):
    """``tracing``: a class default, so a thread that never traced reads a plain attribute."""

    tracing = False


TRACE = _Tracing()
