"""The HTML report in a real browser: Debian's headless Chromium renders the page to a
screenshot and dumps its DOM, which must name the planted entry.

Skipped when chromium is absent outside CI; CI installs it (.ci/run), so there a missing
browser fails rather than skips.
"""
from __future__ import annotations

import io
import shutil
import subprocess
import time

import html5lib  # the test extra installs both
import numpy as np
import optional_deps
import pytest
from html_subjects import PLANTED, big_report, f, planted_grad
from PIL import Image

import gradcheck as gc
from gradcheck import Verdict
from gradcheck._report.plot import VERDICT_COLOURS

pytestmark = optional_deps.needs("chromium")  # a system package: CI's full configuration runs these
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None and not optional_deps.required():  # CI's full run installs it: there it must run
    pytest.skip("chromium is not installed (CI installs it: apt-get install chromium)", allow_module_level=True)

# As root in a sandboxed machine with a closed network: no sandbox, no GPU, and none of the
# background connections (they are refused here, many at a time).
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars")


def chromium(tmp_path, page, *args: str) -> subprocess.CompletedProcess:
    """Run the browser once on ``page`` with a fresh, empty profile."""
    assert CHROMIUM is not None, "chromium missing: .ci/run installs it (apt-get install chromium)"
    profile = tmp_path / f"profile-{time.monotonic_ns()}"
    profile.mkdir()
    cmd = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()]
    return subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="module")
def planted_page(tmp_path_factory):
    x = np.random.default_rng(0).standard_normal((6, 5))
    report = gc.check(f, x, grad=planted_grad, name="tanh_layer")
    path = tmp_path_factory.mktemp("browser") / "report.html"
    report.to_html(path)
    return path


def rows_of(dom: str) -> list[list[str]]:
    tree = html5lib.parse(dom, namespaceHTMLElements=False)
    return [["".join(c.itertext()).strip() for c in tr] for tr in tree.iter("tr")]


def test_browser_dom_names_the_planted_entry(planted_page, tmp_path):
    """The DOM Chromium builds from the page has the planted entry as the first row of the
    worst-entries table, as MISMATCH, and the status badge FAIL."""
    out = chromium(tmp_path, planted_page, "--dump-dom")
    assert out.returncode == 0, out.stderr[-2000:]
    rows = rows_of(out.stdout)
    entries = [r for r in rows if r and r[0].startswith("(")]
    assert entries[0][:2] == [str(PLANTED), "MISMATCH"]
    assert '<span class="gc-badge gc-fail">FAIL</span>' in out.stdout


def test_browser_screenshot_shows_the_report(planted_page, tmp_path):
    """A screenshot of the rendered page: the size asked for, mostly white page, and the
    MISMATCH colour present (the badge and the planted cell of the heat map)."""
    shot = tmp_path / "report.png"
    out = chromium(tmp_path, planted_page, "--window-size=1100,900", f"--screenshot={shot}")
    assert out.returncode == 0 and shot.exists(), out.stderr[-2000:]
    image = np.asarray(Image.open(io.BytesIO(shot.read_bytes())).convert("RGB")).astype(int)
    assert image.shape == (900, 1100, 3)
    white = (image > 245).all(axis=-1).mean()
    assert 0.5 < white < 0.99  # a page with content, not blank and not all ink
    red = np.array([int(VERDICT_COLOURS[Verdict.MISMATCH][i:i + 2], 16) for i in (1, 3, 5)])
    near_red = (np.abs(image - red).max(axis=-1) <= 8).sum()
    green = np.array([int(VERDICT_COLOURS[Verdict.PASS][i:i + 2], 16) for i in (1, 3, 5)])
    near_green = (np.abs(image - green).max(axis=-1) <= 8).sum()
    assert near_red >= 200 and near_green > 10 * near_red  # a cell of ~20 x 20 px among 29 green ones


def test_browser_opens_a_million_entry_page(tmp_path):
    """The page of a 1,048,576-entry report opens in Chromium and its DOM holds the capped
    table (500 rows) with the MISMATCH entries first. (How long it takes:
    benchmarks/bench_speed_claims.py.)"""
    page = tmp_path / "big.html"
    big_report(unchecked=100_000).to_html(page)
    out = chromium(tmp_path, page, "--dump-dom")
    assert out.returncode == 0, out.stderr[-2000:]
    entries = [r for r in rows_of(out.stdout) if r and r[0].startswith("(")]
    assert len(entries) == 10 + 500  # worst entries, then the capped table of non-PASS entries
    assert all(r[1] == "MISMATCH" for r in entries)
