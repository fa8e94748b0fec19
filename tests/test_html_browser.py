"""The HTML report in a real browser: Debian's headless Chromium renders the page to a
screenshot and dumps its DOM, which must name the planted entry; a page that says what to do
next, whose tables fit the window without wrapped rows (issue 27), measured in the browser.

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
from html_subjects import COLUMN, PLANTED, STRAY, bfloat16_f, big_report, column_and_stray_grad, f, planted_grad
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


# -- issue 27: pages that say what to do next, tables that fit -------------------------------
#: A script added to a COPY of a page (the page itself runs none): it writes the window's
#: width and each visible table's right edge and row heights into the DOM that --dump-dom prints.
MEASURE = """<script>
const out = {width: document.documentElement.clientWidth, tables: []};
for (const t of document.querySelectorAll("table.gc-table")) {
  const box = t.getBoundingClientRect();
  if (box.width === 0) continue;  // a collapsed <details>
  const rows = [...t.querySelectorAll("tbody tr")].map(tr => tr.getBoundingClientRect().height);
  out.tables.push({cls: t.className, right: box.right, low: Math.min(...rows), high: Math.max(...rows)});
}
document.body.setAttribute("data-measure", JSON.stringify(out));
</script>"""


@pytest.fixture(scope="module")
def column_page(tmp_path_factory):
    x = np.random.default_rng(0).standard_normal((24, 24))
    report = gc.check(f, x, grad=column_and_stray_grad, name="column_and_stray")
    path = tmp_path_factory.mktemp("browser") / "column.html"
    report.to_html(path)
    return report, path


def dom_of(tmp_path, page, *args):
    out = chromium(tmp_path, page, *args, "--dump-dom")
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout, html5lib.parse(out.stdout, namespaceHTMLElements=False)


def text_of(tree, cls):
    return [" ".join(" ".join(e.itertext()).split()) for e in tree.iter() if cls in (e.get("class") or "").split()]


def test_browser_layout_words_and_worst_table_name_the_stray_entry(column_page, tmp_path):
    """A bad column plus one stray entry: the page says "column 5 and one entry (10, 20)", not
    "scattered", and the stray entry (the smallest err/tol of the 25) is the second row of the
    worst-entries table, not buried last; the page ends with the next step naming the fix."""
    report, page = column_page
    assert report.layout.text == f"column {COLUMN} and one entry {STRAY}"
    dom, tree = dom_of(tmp_path, page)
    assert f"MISMATCH at: column {COLUMN} and one entry {STRAY}" in " ".join(text_of(tree, "gc-meta"))
    worst = [r for r in rows_of(dom) if r and r[0].startswith("(")][:10]
    assert worst[1][:2] == [str(STRAY), "MISMATCH"] and all(r[1] == "MISMATCH" for r in worst)
    ex = report.excess()
    assert ex[STRAY] < min(ex[i, COLUMN] for i in range(24))  # by err/tol alone it would be last
    (next_step,) = text_of(tree, "gc-next")
    assert next_step.startswith("Next fix the claimed gradient at column 5 and one entry (10, 20)")


@pytest.mark.parametrize("width", [840, 1100])
def test_browser_tables_fit_the_window_without_wrapped_rows(column_page, tmp_path, width):
    """At 840 and 1100 px, every visible table ends inside the window (no cut at its edge) and
    every entry table keeps one line per row (exact values, digits and causes included)."""
    import json

    _, page = column_page
    measured = tmp_path / "measured.html"
    measured.write_text(page.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    _, tree = dom_of(tmp_path, measured, f"--window-size={width},900")
    body = next(tree.iter("body"))
    data = json.loads(body.get("data-measure"))
    assert data["width"] <= width and len(data["tables"]) >= 3
    entries = [t for t in data["tables"] if "gc-entries" in t["cls"]]
    assert len(entries) >= 2  # worst entries and the (open) table of non-PASS entries
    for t in data["tables"]:
        assert t["right"] <= data["width"], (width, t)
    for t in entries:
        assert t["high"] - t["low"] < 2, (width, t)  # no row taller than another: none wraps


def test_browser_inconclusive_page_says_why_the_way_out_and_no_internal_code(tmp_path):
    """f computing in bfloat16: the INCONCLUSIVE page shows the text report's why and way out,
    the referee's failure in user words (where in f, what to keep in numpy), never the
    internal "unsupported_operation" code, and ends with the next step."""
    report = gc.check(bfloat16_f, np.linspace(0.1, 1.3, 6), grad=np.cos, name="bf16")
    assert report.status == "INCONCLUSIVE"
    page = tmp_path / "inconclusive.html"
    report.to_html(page)
    dom, tree = dom_of(tmp_path, page)
    why = text_of(tree, "gc-why")
    assert why[0].startswith("Why: f returns bfloat16") and why[1].startswith("Way out: upcast the input")
    assert "unsupported_operation" not in dom and "object-dtype" not in dom
    assert any("html_subjects.py:" in n and "accepts only machine floats" in n for n in text_of(tree, "gc-notes"))
    (next_step,) = text_of(tree, "gc-next")
    assert next_step.startswith("Next make the check conclusive: upcast the input")
