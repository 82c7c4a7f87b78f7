"""Benchmark of scaled-dot-product attention: every device x kernel, beside the native calls.

For each sequence length L, head dim D and causal flag it times every kernel tdx can reach on
each device (``cpu``, ``mlx:cpu``, and any other available one), tdx's automatic choice, and the
native calls (``torch.nn.functional.scaled_dot_product_attention`` on torch devices,
``mx.fast.scaled_dot_product_attention`` on MLX devices), and measures each one's peak extra
resident memory. Then it checks the targets (tdx within 5% of native torch on cpu, the automatic
choice within 10% of the fastest kernel, causal L=16384 under a quarter of the score matrix's
memory) and draws a PNG (matplotlib when installed, else a small built-in PNG writer).

    python bench/sdpa.py --quick          # about two minutes
    python bench/sdpa.py                  # L = 256..8192, D = 64 and 128, causal and not
    python bench/sdpa.py --out DIR ...    # also DIR/sdpa.md (stamped table, min/median/max) and DIR/sdpa.png

Timings are the minimum over round-robin repeats (kernels alternate, in a rotating order, so a
burst of load from other processes, or a kernel that sweeps the caches, hits them alike). Memory is sampled from /proc/self/statm during one extra call,
with glibc's mmap threshold fixed (the script re-executes itself once to set it) so freed
buffers leave the resident set. This script installs nothing and must never be imported by tdx.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import math
import os
import struct
import sys
import threading
import time
import zlib

ENV_FLAG = "MALLOC_MMAP_THRESHOLD_"

if __name__ == "__main__" and ENV_FLAG not in os.environ and sys.platform.startswith("linux"):
    os.environ[ENV_FLAG] = "65536"  # large buffers are mmapped and return to the OS when freed
    os.execv(sys.executable, [sys.executable] + sys.argv)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

import tdx  # noqa: E402
from tdx.attention import SDPBackend, sdpa_kernel  # noqa: E402

AUTO, NATIVE = "auto", "native"


# --- measurement ---------------------------------------------------------------------------

def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _trim() -> None:
    gc.collect()
    mx = sys.modules.get("mlx.core")
    if mx is not None:
        mx.clear_cache()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass


def peak_extra(fn) -> int:
    """Peak resident bytes above the level before ``fn()`` ran, sampled every 0.5 ms."""
    _trim()
    base = _rss()
    peak = [base]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], _rss())
            time.sleep(0.0005)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    try:
        fn()
    finally:
        done.set()
        th.join()
    peak[0] = max(peak[0], _rss())
    return peak[0] - base


class Series:
    """One device x kernel: its timings by shape, to predict when to stop (too slow or too big)."""

    def __init__(self, device, kernel):
        self.device, self.kernel = device, kernel
        self.last = None  # (L, seconds)

    def predict(self, L) -> float:
        if self.last is None:
            return 0.0
        l0, t0 = self.last
        return t0 * (L / l0) ** 2


def make_call(device, kernel, q, k, v, causal):
    """A zero-argument callable running one attention call to completion."""
    ex = q._ex
    # torch's asynchronous devices wait on the stream; on MLX ``mx.eval`` already waits for the result, as
    # on the native side, which makes no further synchronization
    sync = ex.synchronize if ex.caps.asynchronous and ex.name != "mlx" else (lambda: None)
    if kernel == NATIVE:
        if ex.name == "torch":
            import torch

            qn, kn, vn = q._n, k._n, v._n

            def run():
                torch.nn.functional.scaled_dot_product_attention(qn, kn, vn, is_causal=causal)
                sync()
            return run
        import mlx.core as mx

        qn, kn, vn = q._n, k._n, v._n
        scale = 1.0 / math.sqrt(q.shape[-1])

        def run():
            mx.eval(mx.fast.scaled_dot_product_attention(qn, kn, vn, scale=scale,
                                                         mask="causal" if causal else None, stream=ex.s))
        return run
    F = tdx.nn.functional
    evaluate = (lambda t: sys.modules["mlx.core"].eval(t._n)) if ex.name == "mlx" else (lambda t: None)
    if kernel == AUTO:
        def run():
            evaluate(F.scaled_dot_product_attention(q, k, v, is_causal=causal))
            sync()
        return run

    def run():
        with sdpa_kernel([kernel]):
            evaluate(F.scaled_dot_product_attention(q, k, v, is_causal=causal))
        sync()
    return run


def inputs(device, B, H, L, D, seed=0):
    tdx.manual_seed(seed)
    out = [tdx.randn(B, H, L, D, device=device) for _ in range(3)]
    mx = sys.modules.get("mlx.core")
    if mx is not None and out[0]._ex.name == "mlx":
        mx.eval(*(t._n for t in out))
    return out


def label(kernel) -> str:
    """A kernel's config name (``flash``, ``mlx_fused``...), or ``auto`` / ``native``."""
    return kernel if isinstance(kernel, str) else tdx.attention.KERNEL_NAMES.get(kernel, kernel.name.lower())


def bench_shape(device, B, H, L, D, causal, series, args, rows):
    q, k, v = inputs(device, B, H, L, D)
    exp = tdx.attention.explain(q, k, v, is_causal=causal)
    kernels = [AUTO, NATIVE] + [vd.backend for vd in exp.verdicts if vd.usable]
    score_bytes = 4 * B * H * L * L
    todo = []
    for kern in kernels:
        s = series.setdefault((device, label(kern), D, causal), Series(device, kern))
        guess = s.predict(L)
        materializes = kern in (SDPBackend.MATH,) or (kern in (NATIVE, SDPBackend.MLX_FUSED)
                                                       and q._ex.name == "mlx")
        if guess > args.budget:
            rows.append(dict(device=device, kernel=label(kern), L=L, D=D, causal=causal, ms=None,
                             mib=None, note=f"skipped: ~{guess:.0f} s expected"))
            continue
        if materializes and 3 * score_bytes > args.max_bytes:
            rows.append(dict(device=device, kernel=label(kern), L=L, D=D, causal=causal, ms=None, mib=None,
                             note=f"skipped: ~{3 * score_bytes / 2**30:.0f} GiB of scores"))
            continue
        todo.append((kern, s, make_call(device, kern, q, k, v, causal)))
    best = {kern: float("inf") for kern, _, _ in todo}
    samples = {kern: [] for kern, _, _ in todo}
    for kern, s, run in todo:  # warm-up; the first timing decides how many repeats fit
        t0 = time.perf_counter()
        run()
        best[kern] = time.perf_counter() - t0
    # each kernel repeats --repeat times, cheap ones until they have run --min-time seconds (at most
    # 200 times), slow ones only while their total stays within --budget
    spent = dict(best)
    rounds = min(200, max(args.repeat, math.ceil(args.min_time / max(min(best.values(), default=1.0), 1e-6))))
    for i in range(rounds):
        for kern, s, run in todo[i % len(todo):] + todo[:i % len(todo)]:  # rotate: no kernel always follows
            # the same one (a kernel that sweeps the caches would always slow down the next)
            if (i >= args.repeat and spent[kern] >= args.min_time) or spent[kern] + best[kern] > args.budget:
                continue
            t0 = time.perf_counter()
            run()
            dt = time.perf_counter() - t0
            spent[kern] += dt
            best[kern] = min(best[kern], dt)
            samples[kern].append(dt * 1e3)
    for kern, s, run in todo:
        s.last = (L, best[kern])
        mib = peak_extra(run) / 2**20 if not args.no_memory else None
        note = "chosen by auto" if kern is exp.kernel else ""
        rows.append(dict(device=device, kernel=label(kern), L=L, D=D, causal=causal, ms=best[kern] * 1e3,
                         mib=mib, note=note, samples=samples[kern] or [best[kern] * 1e3]))
    if exp.kernel is not None:
        for r in rows:
            if r["device"] == device and r["L"] == L and r["D"] == D and r["causal"] == causal and \
                    r["kernel"] == AUTO:
                r["note"] = f"= {label(exp.kernel)}"
    return rows


# --- report --------------------------------------------------------------------------------

def print_table(rows, out=sys.stdout):
    head = f"{'device':<9}{'L':>6}{'D':>5} {'causal':<7}{'kernel':<12}{'ms':>11}{'vs native':>10}{'peak MiB':>10}  note"
    print(head, file=out)
    print("-" * len(head), file=out)
    native = {(r["device"], r["L"], r["D"], r["causal"]): r["ms"] for r in rows if r["kernel"] == NATIVE}
    for r in rows:
        nat = native.get((r["device"], r["L"], r["D"], r["causal"]))
        ms = f"{r['ms']:.2f}" if r["ms"] is not None else "-"
        ratio = f"{r['ms'] / nat:.2f}x" if r["ms"] is not None and nat else "-"
        mib = f"{r['mib']:.1f}" if r.get("mib") is not None else "-"
        print(f"{r['device']:<9}{r['L']:>6}{r['D']:>5} {str(r['causal']):<7}{r['kernel']:<12}{ms:>11}{ratio:>10}"
              f"{mib:>10}  {r['note']}", file=out)


def check_targets(rows, long_rows):
    """Print the targets and whether they hold; returns the number missed."""
    missed = 0
    groups = {}
    for r in rows:
        if r["ms"] is not None:
            groups.setdefault((r["device"], r["L"], r["D"], r["causal"]), {})[r["kernel"]] = r["ms"]
    print("\ntargets")
    worst_native, worst_auto = 0.0, 0.0
    for (device, L, D, causal), g in sorted(groups.items()):
        auto = g.get(AUTO)
        if auto is None:
            continue
        tdx_kernels = {k: v for k, v in g.items() if k not in (AUTO, NATIVE)}
        fastest = min(list(tdx_kernels.values()) + ([g[NATIVE]] if NATIVE in g else []))
        ra = auto / fastest
        worst_auto = max(worst_auto, ra)
        flag = "" if ra <= 1.10 else "  <-- auto more than 10% slower than the fastest reachable"
        line = f"  {device:<8} L={L:<5} D={D:<4} causal={causal!s:<5} auto/fastest={ra:.3f}"
        if device == "cpu" and NATIVE in g:
            rn = auto / g[NATIVE]
            worst_native = max(worst_native, rn)
            line += f"  auto/native torch={rn:.3f}"
            if rn > 1.05:
                flag += "  <-- more than 5% slower than native torch"
        missed += bool(flag)
        print(line + flag)
    print(f"  worst auto/fastest: {worst_auto:.3f} (target <= 1.10); worst cpu auto/native: "
          f"{worst_native:.3f} (target <= 1.05)")
    for r in long_rows:
        if r["ms"] is None:
            print(f"  L={r['L']} causal {r['device']} {r['kernel']}: {r['note']}")
            continue
        quarter = r["score_mib"] / 4
        ok = r["mib"] is not None and r["mib"] < quarter
        missed += not ok
        print(f"  L={r['L']} causal {r['device']:<8} {r['kernel']:<16} {r['ms'] / 1e3:7.2f} s, peak extra "
              f"{r['mib']:.0f} MiB, score matrix {r['score_mib']:.0f} MiB: "
              f"{'under' if ok else 'NOT under'} a quarter ({quarter:.0f} MiB)")
    return missed


# --- plot ----------------------------------------------------------------------------------

COLORS = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189), (140, 86, 75),
          (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207)]
# a 3x5 pixel font: five rows of three pixels per glyph, top to bottom
_GLYPHS = {
    "0": "111 101 101 101 111", "1": "010 110 010 010 111", "2": "111 001 111 100 111",
    "3": "111 001 111 001 111", "4": "101 101 111 001 001", "5": "111 100 111 001 111",
    "6": "111 100 111 101 111", "7": "111 001 010 010 010", "8": "111 101 111 101 111",
    "9": "111 101 111 001 111", "A": "010 101 111 101 101", "B": "110 101 110 101 110",
    "C": "111 100 100 100 111", "D": "110 101 101 101 110", "E": "111 100 110 100 111",
    "F": "111 100 110 100 100", "G": "111 100 101 101 111", "H": "101 101 111 101 101",
    "I": "111 010 010 010 111", "J": "001 001 001 101 111", "K": "101 101 110 101 101",
    "L": "100 100 100 100 111", "M": "101 111 111 101 101", "N": "110 101 101 101 101",
    "O": "111 101 101 101 111", "P": "111 101 111 100 100", "Q": "111 101 101 111 001",
    "R": "110 101 110 101 101", "S": "111 100 111 001 111", "T": "111 010 010 010 010",
    "U": "101 101 101 101 111", "V": "101 101 101 101 010", "W": "101 101 111 111 101",
    "X": "101 101 010 101 101", "Y": "101 101 010 010 010", "Z": "111 001 010 100 111",
    "-": "000 000 111 000 000", ".": "000 000 000 000 010", ":": "000 010 000 010 000",
    "=": "000 111 000 111 000", "/": "001 001 010 100 100", "_": "000 000 000 000 111",
    "(": "010 100 100 100 010", ")": "010 001 001 001 010", " ": "000 000 000 000 000",
}
_FONT = {ch: [[c == "1" for c in row] for row in rows.split()] for ch, rows in _GLYPHS.items()}
_UNKNOWN = [[True] * 3 for _ in range(5)]


class Canvas:
    """An RGB raster with lines, rectangles and 3x5 text, saved as PNG with zlib."""

    def __init__(self, w, h):
        self.px = np.full((h, w, 3), 255, np.uint8)

    def rect(self, x0, y0, x1, y1, color):
        h, w, _ = self.px.shape
        self.px[max(0, y0):min(h, y1), max(0, x0):min(w, x1)] = color

    def line(self, x0, y0, x1, y1, color, width=2):
        n = int(max(abs(x1 - x0), abs(y1 - y0), 1))
        for i in range(n + 1):
            x = round(x0 + (x1 - x0) * i / n)
            y = round(y0 + (y1 - y0) * i / n)
            self.rect(x - width // 2, y - width // 2, x - width // 2 + width, y - width // 2 + width, color)

    def text(self, x, y, s, color=(0, 0, 0), scale=2):
        for ch in s.upper():
            for r, row in enumerate(_FONT.get(ch, _UNKNOWN)):
                for c, on in enumerate(row):
                    if on:
                        self.rect(x + c * scale, y + r * scale, x + (c + 1) * scale, y + (r + 1) * scale, color)
            x += 4 * scale

    def save(self, path):
        h, w, _ = self.px.shape
        raw = b"".join(b"\x00" + self.px[r].tobytes() for r in range(h))

        def chunk(kind, data):
            body = kind + data
            return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

        png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
        png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
        with open(path, "wb") as f:
            f.write(png)


def panels(rows):
    """{(device, D, causal): {kernel: [(L, ms)]}}."""
    out = {}
    for r in rows:
        if r["ms"] is not None:
            out.setdefault((r["device"], r["D"], r["causal"]), {}).setdefault(r["kernel"], []).append((r["L"], r["ms"]))
    return out


def plot(rows, path):
    """Time against L per device, head dim and causal flag (log-log), one line per kernel."""
    data = panels(rows)
    if not data:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return _plot_builtin(data, path)
    keys = sorted(data, key=str)
    cols = 2
    fig, axes = plt.subplots((len(keys) + cols - 1) // cols, cols, figsize=(12, 4 * ((len(keys) + 1) // cols)),
                             squeeze=False)
    for ax, key in zip(axes.flat, keys):
        for kern, pts in sorted(data[key].items()):
            pts.sort()
            ax.loglog([p[0] for p in pts], [p[1] for p in pts], marker="o", label=kern, base=2)
        ax.set_title(f"{key[0]} D={key[1]} causal={key[2]}")
        ax.set_xlabel("L")
        ax.set_ylabel("ms")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    return path


def _plot_builtin(data, path):
    keys = sorted(data, key=str)
    pw, ph, cols = 560, 360, 2
    rows_n = (len(keys) + cols - 1) // cols
    cv = Canvas(pw * cols, ph * rows_n)
    kernels = sorted({k for v in data.values() for k in v})
    color = {k: COLORS[i % len(COLORS)] for i, k in enumerate(kernels)}
    for idx, key in enumerate(keys):
        ox, oy = (idx % cols) * pw, (idx // cols) * ph
        x0, y0, x1, y1 = ox + 60, oy + 30, ox + pw - 150, oy + ph - 40
        pts = [p for v in data[key].values() for p in v]
        lx = [math.log2(p[0]) for p in pts]
        ly = [math.log10(max(p[1], 1e-3)) for p in pts]
        xa, xb = min(lx), max(lx) + 1e-9
        ya, yb = math.floor(min(ly)), math.ceil(max(ly) + 1e-9)
        cv.text(ox + 60, oy + 8, f"{key[0]} D={key[1]} CAUSAL={key[2]}")
        cv.line(x0, y1, x1, y1, (0, 0, 0), 1)
        cv.line(x0, y0, x0, y1, (0, 0, 0), 1)
        for e in range(ya, yb + 1):
            y = y1 - (e - ya) / max(yb - ya, 1) * (y1 - y0)
            cv.line(x0, y, x1, y, (220, 220, 220), 1)
            cv.text(ox + 8, int(y) - 5, f"{10.0 ** e:g}MS" if e >= 0 else f"{10.0 ** e:.3f}")
        for L in sorted({p[0] for p in pts}):
            x = x0 + (math.log2(L) - xa) / max(xb - xa, 1e-9) * (x1 - x0)
            cv.text(int(x) - 10, y1 + 8, str(L))
        for i, (kern, series) in enumerate(sorted(data[key].items())):
            series.sort()
            xy = [(x0 + (math.log2(L) - xa) / max(xb - xa, 1e-9) * (x1 - x0),
                   y1 - (math.log10(max(ms, 1e-3)) - ya) / max(yb - ya, 1) * (y1 - y0)) for L, ms in series]
            for (a, b), (c, d) in zip(xy, xy[1:]):
                cv.line(a, b, c, d, color[kern])
            for a, b in xy:
                cv.rect(int(a) - 3, int(b) - 3, int(a) + 3, int(b) + 3, color[kern])
            cv.rect(x1 + 12, y0 + i * 16, x1 + 24, y0 + i * 16 + 10, color[kern])
            cv.text(x1 + 28, y0 + i * 16, kern[:14])
    cv.save(path)
    return path


# --- main ----------------------------------------------------------------------------------

def devices(wanted):
    rows = {r.device: r for r in tdx.backends.available()}
    out = []
    for d in wanted:
        if d in rows and rows[d].available:
            out.append(d)
        else:
            print(f"# {d}: not available ({rows[d].reason if d in rows else 'unknown device'}); skipped")
    return out


def long_run(device_list, B, H, L, dims, args):
    """Causal attention at a long L: time and peak extra memory of the automatic choice and chunked."""
    rows = []
    for device in device_list:
        for D in dims:
            q, k, v = inputs(device, B, H, L, D)
            kerns = [AUTO] + ([SDPBackend.CHUNKED] if args.long_chunked else [])
            for kern in kerns:
                if kern is SDPBackend.CHUNKED and q._ex.name == "mlx" and not args.long_mlx_chunked:
                    continue
                run = make_call(device, kern, q, k, v, True)
                t0 = time.perf_counter()
                mib = peak_extra(run) / 2**20
                ms = (time.perf_counter() - t0) * 1e3
                chosen = tdx.attention.explain(q, k, v, is_causal=True).kernel
                name = label(kern) if kern != AUTO else f"auto={label(chosen)}"
                rows.append(dict(device=device, kernel=name, L=L, D=D, causal=True, ms=ms, mib=mib,
                                 score_mib=4 * B * H * L * L / 2**20, note=""))
                print(f"# long: {device} {name} L={L} D={D}: {ms / 1e3:.2f} s, peak extra {mib:.0f} MiB", flush=True)
            del q, k, v
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="L in 256,1024; D=64; long check at D=64 (~2 min)")
    ap.add_argument("--lengths", default="256,512,1024,2048,4096,8192")
    ap.add_argument("--dims", default="64,128")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--devices", default="cpu,mlx:cpu,cuda,mps,mlx:gpu")
    ap.add_argument("--repeat", type=int, default=5, help="least round-robin timing repeats per shape")
    ap.add_argument("--min-time", type=float, default=1.0, help="seconds of repeats a cheap call gets")
    ap.add_argument("--budget", type=float, default=20.0, help="skip a kernel once one call would exceed this (s)")
    ap.add_argument("--max-bytes", type=float, default=4 * 2**30,
                    help="skip kernels that hold the scores when three score matrices exceed this many bytes")
    ap.add_argument("--long", type=int, default=16384, help="L of the causal memory check (0: none)")
    ap.add_argument("--long-chunked", action="store_true", help="also run the chunked kernel at --long")
    ap.add_argument("--long-mlx-chunked", action="store_true", help="...on MLX devices too (slow on mlx:cpu)")
    ap.add_argument("--no-memory", action="store_true", help="skip the memory sampling calls")
    ap.add_argument("--png", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "sdpa.png"))
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    ap.add_argument("--out", default=None, help="also write sdpa.md and sdpa.png into this folder")
    args = ap.parse_args(argv)
    started = datetime.datetime.now(datetime.timezone.utc)
    if args.out:
        args.png = os.path.join(args.out, "sdpa.png")
        os.makedirs(args.out, exist_ok=True)
    if args.quick:
        args.lengths, args.dims, args.repeat, args.budget, args.min_time = "256,1024", "64", 3, 3.0, 0.3
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    lengths = [int(x) for x in args.lengths.split(",") if x]
    dims = [int(x) for x in args.dims.split(",") if x]
    device_list = devices([d for d in args.devices.split(",") if d])
    _declare_cpu_flash()
    print(f"# B={args.batch} H={args.heads} float32; lengths {lengths}; head dims {dims}; devices {device_list}")
    t_start = time.perf_counter()
    rows, series = [], {}
    for D in dims:
        for causal in (False, True):
            for L in lengths:
                for device in device_list:
                    bench_shape(device, args.batch, args.heads, L, D, causal, series, args, rows)
                print(f"# done D={D} causal={causal} ({time.perf_counter() - t_start:.0f} s)", flush=True)
    long_rows = long_run(device_list, args.batch, args.heads, args.long, dims[:1] if args.quick else dims,
                         args) if args.long else []
    print()
    print_table(rows)
    missed = check_targets(rows, long_rows)
    path = plot(rows, args.png)
    print(f"\nplot: {path}" if path else "\nplot: nothing to draw")
    if args.out:
        write_results(rows, long_rows, args, started)
    print(f"total {time.perf_counter() - t_start:.0f} s; targets missed: {missed}")
    return 0


def write_results(rows, long_rows, args, started) -> None:
    """``sdpa.md``: the table with each timing's min, median and max over the round-robin repeats."""
    from bench import report

    native = {(r["device"], r["L"], r["D"], r["causal"]): r["ms"] for r in rows if r["kernel"] == NATIVE}
    table = []
    for r in rows:
        nat = native.get((r["device"], r["L"], r["D"], r["causal"]))
        timed = r["ms"] is not None
        table.append((r["device"], r["L"], r["D"], r["causal"], r["kernel"],
                      report.fmt_spread(r["samples"]) if timed else "-",
                      f"{r['ms'] / nat:.2f}" if timed and nat else "-",
                      f"{r['mib']:.1f}" if r.get("mib") is not None else "-", r["note"]))
    lines = [f"B={args.batch}, H={args.heads}, float32. ms per call: median (min..max) over the round-robin "
             "repeats; vs native: best time / native's best time; peak MiB: extra resident memory during one "
             "call.", ""]
    lines += report.md_table(["device", "L", "D", "causal", "kernel", "ms", "vs native", "peak MiB", "note"], table)
    if long_rows:
        lines += ["", f"Causal attention at L={args.long} (one call each):", ""]
        lines += report.md_table(["device", "kernel", "D", "s", "peak MiB", "score matrix MiB"],
                                 [(r["device"], r["kernel"], r["D"], f"{r['ms'] / 1e3:.2f}", f"{r['mib']:.0f}",
                                   f"{r['score_mib']:.0f}") for r in long_rows])
    if os.path.exists(args.png):
        lines += ["", "![SDPA time by length](sdpa.png)"]
    report.write("sdpa", "Scaled-dot-product attention by length", lines, args.out, started)


def _declare_cpu_flash():
    """Until the torch executor declares torch's CPU flash kernel, declare it for this run (and say so)."""
    import dataclasses

    ex = tdx.backends.get("cpu")
    if "flash" not in ex.caps.sdpa_kernels:
        ex.caps = dataclasses.replace(ex.caps, sdpa_kernels=("flash",) + tuple(ex.caps.sdpa_kernels))
        print("# note: the cpu executor does not declare torch's CPU flash kernel in caps.sdpa_kernels; "
              "declared for this run")


if __name__ == "__main__":
    sys.exit(main())
