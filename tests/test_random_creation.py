"""Creating, finding or warming an executor, a device or a peer never touches a generator.

A program seeds, draws once on its device, then touches every device and executor kind tdx knows
(each available device's executor, a tensor and a ``Generator`` on it, ``meta``, absent devices,
attention on every device, which builds the bridge's peer executor, and ``explain``) and draws
again: the second draw must be the one torch gives after the first, on the default generator and
on a user's ``Generator``. Each program runs in a fresh interpreter, so every executor is built
inside it for the first time (executors are cached per process).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np

from conftest import torch_twin

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_PROGRAM = textwrap.dedent("""
    import json, sys, warnings
    import torch

    device, twin = sys.argv[1], sys.argv[2]
    torch.manual_seed(0)
    want_first, want_next = torch.randn(3, device=twin), torch.randn(3, device=twin)
    g = torch.Generator(device=twin).manual_seed(5)
    want_gen = [torch.rand(2, generator=g, device=twin) for _ in range(2)]

    import tdx

    tdx.manual_seed(0)
    got_first = tdx.randn(3, device=device)
    tg = tdx.Generator(device=device).manual_seed(5)
    got_gen = [tdx.rand(2, generator=tg, device=device)]

    def touch():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rows = tdx.backends.available()
            for row in rows:
                if not row.available:
                    try:  # an absent device: translated per the config, or refused; never a draw
                        tdx.empty(1, device=row.device)
                    except tdx.TdxError:
                        pass
                    continue
                ex = tdx.backends.get(row.device)
                x = tdx.ones(2, 3, 4, 8, device=row.device)
                tdx.Generator(device=row.device)
                tdx.nn.functional.scaled_dot_product_attention(x, x, x)  # builds the bridge's peer
                tdx.attention.explain(x, x, x, dropout_p=0.5)
                tdx.get_rng_state()
            m = tdx.zeros(2, 3, device="meta") + 1
            tdx.nn.Linear(2, 2, device="meta")  # a module built on meta draws nothing (torch draws nothing)
            for name in ("cuda", "mps", "mlx:gpu", "xpu"):
                try:
                    tdx.empty(1, device=name)
                except tdx.TdxError:
                    pass
            tdx.cuda.is_available(), tdx.backends.mps.is_available()
        return len(rows)

    n = touch()
    got_next = tdx.randn(3, device=device)
    got_gen.append(tdx.rand(2, generator=tg, device=device))
    print(json.dumps({"devices": n,
                      "got": [got_first.tolist(), got_next.tolist()] + [t.tolist() for t in got_gen],
                      "want": [want_first.tolist(), want_next.tolist()] + [t.tolist() for t in want_gen]}))
""")


def _run(device: str, env_extra=None) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("TDX_DEVICE", None)
    env.update(env_extra or {})
    res = subprocess.run([sys.executable, "-c", _PROGRAM, device, torch_twin(device)], capture_output=True,
                         text=True, cwd=ROOT, env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_touching_every_device_and_executor_leaves_the_generators_where_they_were(device):
    """Seeded, one draw on ``device``, then every device, peer and ``meta`` touched: the next draw (default
    generator and a user's) is torch's next draw, bit for bit."""
    out = _run(device)
    assert out["devices"] >= 2
    for i, (got, want) in enumerate(zip(out["got"], out["want"])):
        np.testing.assert_array_equal(np.asarray(got, np.float32), np.asarray(want, np.float32),
                                      err_msg=f"draw {i} on {device}")
