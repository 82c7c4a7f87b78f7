"""``tdx.utils.benchmark`` (torch's ``torch.utils.benchmark``): :class:`Timer` timing tdx calls, :class:`Measurement`.

``Timer(stmt, setup, globals=...)`` runs ``stmt`` (a string, as torch's) in a namespace holding the
``globals`` and ``torch`` bound to tdx; every timed block ends by waiting for the work queued on every
executor in use (MLX evaluates lazily and CUDA asynchronously, so a block's time includes its kernels).
``timeit(number)`` times one block, ``blocked_autorange`` repeats blocks sized to about 10 ms until
``min_run_time`` has passed, ``adaptive_autorange`` until the median settles. A :class:`Measurement`
gives ``mean``, ``median``, ``iqr``, ``times`` (seconds per run) and prints as torch's does. torch's
``Compare``, fuzzers and Callgrind helpers refuse at use. Must never import a framework at import time.
"""

from __future__ import annotations

import enum
import statistics
import timeit as _timeit

from ...._errors import TdxValueError

__all__ = ["Timer", "Measurement", "Language", "select_unit", "trim_sigfig"]
__tdx_partial__ = True  # Compare, Fuzzer, CallgrindStats... refuse at use (tdx.aliasing.torch_paths)


class Language(enum.Enum):
    """The language of a Timer's statement (tdx times Python only)."""

    PYTHON = 0
    CPP = 1


def _sync() -> None:
    """Wait for the work queued on every executor tdx has made."""
    from ....backends import _executors

    for ex in list(_executors.values()):
        ex.synchronize()


def select_unit(t: float):
    """``(unit, scale)`` to print ``t`` seconds: ``("us", 1e-6)``..."""
    for unit, scale in (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0)):
        if t < scale * 1000 or unit == "s":
            return unit, scale
    return "s", 1.0


def trim_sigfig(x: float, n: int) -> float:
    """``x`` rounded to ``n`` significant figures."""
    if x == 0:
        return 0.0
    import math

    return round(x, n - 1 - int(math.floor(math.log10(abs(x)))))


class Measurement:
    """The times of a Timer's runs.

    Attributes:
        number_per_run: statement executions per timed block.
        raw_times: seconds per block.
        times: seconds per execution.
    """

    def __init__(self, number_per_run: int, raw_times, stmt: str, label=None, sub_label=None, description=None,
                 num_threads: int = 1):
        self.number_per_run, self.raw_times = number_per_run, list(raw_times)
        self.stmt, self.label, self.sub_label, self.description = stmt, label, sub_label, description
        self.num_threads = num_threads

    @property
    def times(self) -> list:
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.times)

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def iqr(self) -> float:
        if len(self.times) < 2:
            return 0.0
        q = statistics.quantiles(self.times, n=4, method="inclusive")
        return q[2] - q[0]

    @property
    def title(self) -> str:
        return self.label or self.stmt

    def __repr__(self) -> str:
        unit, scale = select_unit(self.median)
        runs = len(self.times)
        lines = [f"<tdx.utils.benchmark.Measurement object at {hex(id(self))}>", self.title]
        if self.description:
            lines.append(f"  {self.description}")
        spread = f"  Median: {self.median / scale:.2f} {unit}\n  IQR:    {self.iqr / scale:.2f} {unit} " \
                 f"({trim_sigfig(min(self.times) / scale, 3)} to {trim_sigfig(max(self.times) / scale, 3)})" \
            if runs > 1 else f"  {self.median / scale:.2f} {unit}"
        lines.append(spread)
        lines.append(f"  {runs} measurement{'s' if runs > 1 else ''}, {self.number_per_run} runs per measurement, "
                     f"{self.num_threads} thread{'s' if self.num_threads > 1 else ''}")
        return "\n".join(lines)


class Timer:
    """Times ``stmt`` (Python source) after ``setup``, in a namespace of ``globals`` plus ``torch`` (tdx)."""

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "", timer=_timeit.default_timer,
                 globals=None, label=None, sub_label=None, description=None, env=None,  # noqa: A002 - torch's
                 num_threads: int = 1, language=Language.PYTHON):
        if not isinstance(stmt, str):
            raise TdxValueError(f"Timer: stmt must be Python source (a str), got {type(stmt).__name__}")
        if language not in (Language.PYTHON, "py", "python"):
            raise TdxValueError(f"Timer: tdx times Python statements only, got language={language!r}")
        import tdx

        self._globals = dict(globals or {})
        self._globals.setdefault("torch", tdx)
        self._stmt, self._setup = stmt, setup
        self._label, self._sub_label, self._description = label, sub_label, description
        self._num_threads = num_threads
        self._timer = _timeit.Timer(stmt=f"{stmt}\n_tdx_sync()", setup=f"{global_setup}\n{setup}", timer=timer,
                                    globals={**self._globals, "_tdx_sync": _sync})

    def _measure(self, number: int, raw) -> Measurement:
        return Measurement(number, raw, self._stmt, self._label, self._sub_label, self._description,
                           self._num_threads)

    def timeit(self, number: int = 1000000) -> Measurement:
        """One block of ``number`` executions (after one warm-up execution)."""
        self._timer.timeit(number=1)
        return self._measure(number, [self._timer.timeit(number=number)])

    def _block_size(self) -> int:
        number = 1
        while True:
            if self._timer.timeit(number=number) >= 0.01 or number >= 1 << 20:
                return number
            number *= 10

    def blocked_autorange(self, callback=None, min_run_time: float = 0.2) -> Measurement:
        """Blocks of about 10 ms each until ``min_run_time`` seconds have passed."""
        number = self._block_size()
        raw, total = [], 0.0
        while total < min_run_time or not raw:
            t = self._timer.timeit(number=number)
            if callback is not None:
                callback(number, t)
            raw.append(t)
            total += t
        return self._measure(number, raw)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01, max_run_time: float = 10.0,
                           callback=None) -> Measurement:
        """Blocks until the interquartile range is within ``threshold`` of the median (or ``max_run_time``)."""
        number = self._block_size()
        raw, total = [], 0.0
        while True:
            t = self._timer.timeit(number=number)
            if callback is not None:
                callback(number, t)
            raw.append(t)
            total += t
            m = self._measure(number, raw)
            if total >= max_run_time or (total >= min_run_time and len(raw) >= 3 and m.iqr <= threshold * m.median):
                return m
