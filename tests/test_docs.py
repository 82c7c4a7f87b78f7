"""The docs: the site builds strictly, every Python example of the README and the docs runs on every
available device, and the README stays short enough to read in five minutes.

An example runs with the device under test as the default device (examples that name a device keep it).
Blocks fenced as ``python`` run, in order, sharing one namespace per page; blocks meant as illustration
only are fenced as ``text``, ``sh`` or ``toml``.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest
from mktestdocs import grab_code_blocks

import tdx

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _blocks(path: pathlib.Path) -> list:
    """The ``python`` code blocks of a Markdown page, in order (mktestdocs' reading of fences)."""
    return grab_code_blocks(path.read_text(encoding="utf-8"), lang="python")


def test_every_page_with_examples_is_found():
    assert sum(bool(_blocks(p)) for p in PAGES) >= 3, [p.name for p in PAGES]


@pytest.mark.parametrize("page", [p for p in PAGES if _blocks(p)], ids=lambda p: p.name)
def test_examples_run(page, device, capsys):
    tdx.set_default_device(device)
    try:
        namespace = {"__name__": "__docs__"}
        for i, block in enumerate(_blocks(page)):
            try:
                exec(compile(block, f"{page.name}[block {i}]", "exec"), namespace)  # noqa: S102 - the docs' own code
            except Exception as err:
                raise AssertionError(f"{page.name} block {i} failed on {device}: {err!r}\n{block}") from err
    finally:
        tdx.set_default_device(None)
    assert capsys.readouterr().out, f"{page.name}: the examples print nothing to compare by eye"


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, len(lines)


def test_site_builds_strict(tmp_path):
    mkdocs = shutil.which("mkdocs", path=os.path.dirname(sys.executable)) or shutil.which("mkdocs")
    if mkdocs is None:
        pytest.skip("mkdocs is not installed (pip install 'tdx-runtime[dev]')")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    run = subprocess.run([mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (tmp_path / "site" / "index.html").exists()
    assert (tmp_path / "site" / "reference" / "index.html").read_text(encoding="utf-8").count("doc-heading") > 20
