"""Stamped result files for the benchmarks: tables (Markdown) and plots (PNG) in ``bench/results/``.

Every table a benchmark writes starts with the same stamp: the machine (CPU model, cores, OS,
load average when the run began), the date (UTC), the framework versions and the command that
produced it, so a figure quoted elsewhere says how to obtain it again. Plots need matplotlib (the
``dev`` extra); without it a benchmark writes its tables only and says so. This module is used
by the scripts under ``bench/`` only: tdx must never import it, and it never changes a setting.
"""

from __future__ import annotations

import datetime
import os
import platform
import shlex
import statistics
import sys

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _versions() -> str:
    parts = [f"python {platform.python_version()}"]
    for name, mod in (("torch", "torch"), ("mlx", "mlx.core"), ("numpy", "numpy")):
        m = sys.modules.get(mod)
        if m is not None:
            parts.append(f"{name} {getattr(m, '__version__', '?')}")
    return ", ".join(parts)


def _gpus() -> str:
    """The CUDA card(s) this process used through torch, or "" when it used none."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return ""
    names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return f"; GPU: {', '.join(names)} (CUDA {torch.version.cuda})"


def stamp(argv=None, started=None) -> list:
    """Markdown lines naming the machine, the date, the versions and the command of this run."""
    argv = sys.argv if argv is None else argv
    script = os.path.relpath(os.path.abspath(argv[0]), os.path.dirname(os.path.dirname(RESULTS)))
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    when = (started or datetime.datetime.now(datetime.timezone.utc)).strftime("%Y-%m-%d %H:%M UTC")
    return [f"- machine: {_cpu_model()}, {os.cpu_count()} logical cores, {platform.system()} "
            f"{platform.release()}; load average {load} (1/5/15 min) at the start{_gpus()}",
            f"- date: {when}",
            f"- versions: {_versions()}",
            f"- command: `python {shlex.join([script] + list(argv[1:]))}`"]


def spread(samples) -> tuple:
    """(min, median, max) of ``samples``."""
    return min(samples), statistics.median(samples), max(samples)


def fmt_spread(samples, fmt: str = "{:.2f}") -> str:
    """``median (min..max)`` of ``samples``, each formatted with ``fmt``."""
    lo, med, hi = spread(samples)
    return f"{fmt.format(med)} ({fmt.format(lo)}..{fmt.format(hi)})"


def md_table(header, rows) -> list:
    """A Markdown table (lines) of ``header`` and ``rows`` (sequences of cells)."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


def write(name: str, title: str, lines, out_dir: str = RESULTS, started=None) -> str:
    """Write ``out_dir/name.md``: ``title``, the stamp, then ``lines``; returns the path."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{name}.md")
    with open(path, "w") as f:
        f.write("\n".join([f"# {title}", ""] + stamp(started=started) + [""] + list(lines)) + "\n")
    print(f"wrote {path}")
    return path


def pyplot():
    """matplotlib's pyplot on the Agg backend, or None (with a note) when matplotlib is absent."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install 'tdx-runtime[dev]'): tables only, no plot")
        return None
    return plt


def save(fig, name: str, out_dir: str = RESULTS) -> str:
    """Save ``fig`` as ``out_dir/name.png`` and close it; returns the path."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{name}.png")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    import matplotlib.pyplot as plt

    plt.close(fig)
    print(f"wrote {path}")
    return path
