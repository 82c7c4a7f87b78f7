"""The catalog covers torch's namespaces, states where MLX runs linalg factorizations, and rewrites the README.

The catalog itself compares tdx with torch; here: its namespace cases pass on every device (the oracle is
torch on CPU, inside the catalog), and ``--readme`` replaces exactly the section between the markers.
"""

from __future__ import annotations

import pytest

from tdx._cli import catalog
from tdx._cli.namespace_cases import NAMESPACE_CASES


def test_namespace_cases_pass(device):
    prefixes = ("torch.linalg.", "torch.fft.", "torch.special.", "torch.masked.", "torch.signal.windows.")
    for p in prefixes:
        assert any(n.startswith(p) for n in NAMESPACE_CASES), p
    names = {n for n in NAMESPACE_CASES if n.startswith(("torch.linalg.", "torch.masked.", "torch.signal."))} | {
        "torch.special.bessel_j0", "torch.special.gammainc", "torch.special.ndtri", "torch.fft.rfft",
        "torch.hann_window"}
    results = catalog.run((device,), names, ("float32", "int64"))
    failed = {n: row[device] for n, row in results.items() if row[device] is not None}
    assert not failed, failed


def test_report_names_the_cpu_stream_and_readme_rewrite(tmp_path):
    results = catalog.run(("cpu",), {"torch.linalg.det"}, ("float32",))
    report = catalog.render(results, ("cpu",), 0.1, ("float32",))
    assert "MLX's CPU stream" in report and "`torch.linalg.det` | passed" in report
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{catalog.README_BEGIN}\nold table\n{catalog.README_END}\noutro\n", encoding="utf-8")
    catalog.update_readme(str(readme), report)
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("intro\n") and text.endswith("\noutro\n") and "old table" not in text
    assert "**Summary**" in text and "_Last run in" in text and "torch.linalg.det" in text
    readme.write_text("no markers", encoding="utf-8")
    with pytest.raises(ValueError, match="catalog:begin"):
        catalog.update_readme(str(readme), report)
