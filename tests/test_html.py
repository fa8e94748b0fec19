"""HTML reports: the notebook fragment and the self-contained page, parsed as a browser would
(html5lib, strict: any parse error fails), for every result type.

The planted entry must be named in the tables and show in the picture (the PNG is decoded
with Pillow, not with the writer's own code); user strings must come out as text, never as
markup; the page must fetch nothing; a million-entry report must stay small and quick.
"""
from __future__ import annotations

import base64
import io
import os
import subprocess
import sys
import textwrap
from dataclasses import fields
from pathlib import Path

import html5lib  # the test extra installs both
import numpy as np
import pytest
from html_subjects import PLANTED, big_report, f, planted_grad
from PIL import Image

import gradcheck as gc
from gradcheck import Report, Verdict
from gradcheck._report.html import heatmap as _heatmap
from gradcheck._report.html.page import status_of
from gradcheck._report.html.report import PAGE_ROWS
from gradcheck._report.plot import VERDICT_COLOURS

SVG = "{http://www.w3.org/2000/svg}"


def parse(text: str):
    """The document tree as a browser builds it; a parse error fails the test."""
    parser = html5lib.HTMLParser(strict=True, tree=html5lib.getTreeBuilder("etree"),
                                 namespaceHTMLElements=False)
    return parser.parse(text) if text.lstrip().startswith("<!DOCTYPE") else parser.parseFragment(text)


def text_of(element) -> str:
    return "".join(element.itertext())


def tables(tree) -> list[list[list[str]]]:
    """Every table as rows of cell texts (header row included)."""
    out = []
    for t in tree.iter("table"):
        out.append([[text_of(c).strip() for c in tr if c.tag in ("td", "th")] for tr in t.iter("tr")])
    return out


def pictures(tree) -> list[np.ndarray]:
    """The embedded heat maps, decoded by Pillow as RGB arrays."""
    out = []
    for img in tree.iter(f"{SVG}image"):
        href = img.get("href")
        assert href.startswith("data:image/png;base64,"), href[:40]
        data = base64.b64decode(href.split(",", 1)[1])
        out.append(np.asarray(Image.open(io.BytesIO(data)).convert("RGB")))
    return out


def rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))


@pytest.fixture(scope="module")
def planted_report():
    x = np.random.default_rng(0).standard_normal((6, 5))
    return gc.check(f, x, grad=planted_grad, name="tanh_layer")


def test_page_names_the_planted_entry_in_its_tables(planted_report):
    """The page's worst-entries table and its table of non-PASS entries both start with the
    planted entry, as MISMATCH, with its exact derivative and certified digits."""
    tree = parse(planted_report.to_html())
    entry_tables = [t for t in tables(tree) if t and t[0][:2] == ["entry", "verdict"]]
    assert len(entry_tables) >= 3  # worst entries, non-PASS entries, refereed entries
    for t in entry_tables:
        head, first = t[0], t[1]
        assert first[0] == str(PLANTED) and first[1] == "MISMATCH"
        assert float(first[head.index("exact")]) == pytest.approx(planted_report.exact[PLANTED], rel=1e-15)
        assert int(first[head.index("digits")]) >= 15
    non_pass = entry_tables[1]
    assert len(non_pass) == 2  # header + the one planted entry
    counts = next(t for t in tables(tree) if t and t[0] == ["verdict", "entries", "share"])
    assert ["MISMATCH", "1", "3.33%"] in counts and ["PASS", "29", "96.7%"] in counts


def test_page_embeds_pictures_that_show_the_planted_entry(planted_report):
    """Two inline heat maps (verdicts, relative errors), one pixel per entry here: the planted
    entry is the only MISMATCH-red pixel of the verdict map and the brightest of the error map."""
    verdicts, errors = pictures(parse(planted_report.to_html()))
    assert verdicts.shape == errors.shape == (6, 5, 3)
    red = np.all(verdicts == rgb(VERDICT_COLOURS[Verdict.MISMATCH]), axis=-1)
    assert list(zip(*np.nonzero(red))) == [PLANTED]
    assert np.all(verdicts[~red] == rgb(VERDICT_COLOURS[Verdict.PASS]))
    brightness = errors.astype(int).sum(axis=-1)
    assert np.unravel_index(brightness.argmax(), brightness.shape) == PLANTED


def test_page_is_self_contained(planted_report):
    """No script, no stylesheet link, nothing fetched: every href/src is a data: URI."""
    page = planted_report.to_html()
    tree = parse(page)
    assert not list(tree.iter("script")) and not list(tree.iter("link"))
    for el in tree.iter():
        for attr in ("href", "src"):
            value = el.get(attr)
            assert value is None or value.startswith("data:"), (el.tag, value[:60])
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page


def test_to_html_writes_the_page_it_returns(planted_report, tmp_path):
    """to_html(path) writes UTF-8 (creating the folder) and returns the same text; without a
    path it only returns it."""
    path = tmp_path / "reports" / "r.html"
    text = planted_report.to_html(path)
    assert path.read_text(encoding="utf-8") == text
    assert planted_report.to_html() == text


def test_notebook_fragment_is_short_and_plain_repr_unchanged(planted_report):
    """_repr_html_ is a fragment (no document around it) with the summary, counts, pictures and
    the worst entries; repr stays one short line."""
    frag = planted_report._repr_html_()
    assert "<html" not in frag and "<!DOCTYPE" not in frag
    tree = parse(frag)
    assert len(pictures(tree)) == 2
    worst = next(t for t in tables(tree) if t and t[0][:2] == ["entry", "verdict"])
    assert worst[1][:2] == [str(PLANTED), "MISMATCH"] and len(worst) == 11
    assert "Entries that are not PASS" not in frag  # the page's long tables stay on the page
    assert repr(planted_report) == f"<Report {planted_report.summary()}>"
    assert "\n" not in repr(planted_report) and len(repr(planted_report)) < 120


HOSTILE = '<script>alert("x")</script> & <b>bold</b> \'q\''


def test_user_strings_are_escaped():
    """A name and a note full of markup come out as text: no element is created from them."""
    x = np.array([[0.5, -1.0], [2.0, 0.1]])
    r = gc.check(lambda x: np.sin(x).sum(), x, grad=np.cos, name=HOSTILE)
    values = {fl.name: getattr(r, fl.name) for fl in fields(r)}
    r = Report(**{**values, "notes": (HOSTILE,)})
    for html in (r.to_html(), r._repr_html_()):
        tree = parse(html)
        assert not list(tree.iter("script")) and not list(tree.iter("b"))
        assert text_of(tree).count(HOSTILE) >= 2  # heading and note, as plain text
        for svg in tree.iter(f"{SVG}svg"):
            assert HOSTILE in svg.get("aria-label")


def test_status_word_comes_from_report_status_when_there_is_one(planted_report):
    """A result with a ``status`` (e.g. INCONCLUSIVE) shows it; without one, PASS/FAIL."""

    class WithStatus(Report):
        status = "INCONCLUSIVE"

    values = {fl.name: getattr(planted_report, fl.name) for fl in fields(planted_report)}
    tree = parse(WithStatus(**values).to_html())
    badges = [text_of(s) for s in tree.iter("span") if "gc-badge" in (s.get("class") or "")]
    assert badges[0] == "INCONCLUSIVE"
    assert status_of(planted_report) == "FAIL"


def test_every_verdict_has_a_place_in_the_severity_order():
    """Heat maps rank verdicts by severity; every member (including any added later) is ranked
    once, PASS below UNCHECKED below MISMATCH."""
    order = _heatmap.severity_order()
    assert sorted(order) == sorted(Verdict)
    assert order.index(Verdict.PASS) < order.index(Verdict.UNCHECKED) < order.index(Verdict.MISMATCH)


@pytest.mark.parametrize("shape, max_cells", [((7, 5), 3), ((1000, 3), 256), ((2, 513), 256), ((4, 4), 4)])
def test_block_max_is_the_maximum_of_each_block(shape, max_cells):
    """Downsampling keeps each block's largest value (NaN ignored where the block has a number),
    and no side exceeds max_cells."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal(shape)
    a[rng.random(shape) < 0.2] = np.nan
    out, (br, bc) = _heatmap.block_max(a, -np.inf, max_cells)
    assert max(out.shape) <= max_cells
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            block = a[i * br:(i + 1) * br, j * bc:(j + 1) * bc]
            want = np.nanmax(block) if np.isfinite(block).any() else np.nan
            assert out[i, j] == want or (np.isnan(want) and np.isnan(out[i, j]))


def test_a_million_entry_page_is_small_and_still_shows_one_mismatch():
    """1,048,576 entries: the page stays under 2 MB; the verdict map is 256 x 256 pixels of
    4 x 4 blocks and the single MISMATCH at (700, 300) is its only red pixel. (How long it
    takes to render: benchmarks/bench_speed_claims.py.)"""
    r = big_report()
    page = r.to_html()
    assert len(page.encode()) < 2_000_000
    tree = parse(page)
    verdicts = pictures(tree)[0]
    assert verdicts.shape == (256, 256, 3)
    red = np.all(verdicts == rgb(VERDICT_COLOURS[Verdict.MISMATCH]), axis=-1)
    assert list(zip(*np.nonzero(red))) == [(175, 75)]
    assert "downsampled from 1024 × 1024 to 256 × 256 pixels" in text_of(tree)


def test_a_million_entry_page_caps_its_table_and_says_so():
    """100,000 UNCHECKED and 1,025 MISMATCH entries: the table lists the 500 most severe
    (every MISMATCH before any UNCHECKED), says how many it leaves out, and the page stays small."""
    r = big_report(unchecked=100_000)
    page = r.to_html()
    assert len(page.encode()) < 2_000_000
    tree = parse(page)
    non_pass = [t for t in tables(tree) if t and t[0][:2] == ["entry", "verdict"]][1]
    assert len(non_pass) - 1 == PAGE_ROWS
    assert {row[1] for row in non_pass[1:]} == {"MISMATCH"}
    flagged = int((r.codes != Verdict.PASS).sum())
    assert f"the {PAGE_ROWS} most severe of {flagged} entries that are not PASS" in text_of(tree)


def test_multireport_page_has_one_section_per_input():
    """check(f, (a, b)) with a wrong claim for b: a table of inputs, and each input's section."""
    a, b = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    m = gc.check(lambda a, b: (a * b).sum(), (a, b), grad=(lambda a, b: b, lambda a, b: a * 1.01), name="mul")
    tree = parse(m.to_html())
    inputs = next(t for t in tables(tree) if t and t[0][0] == "input")
    assert [row[:2] for row in inputs[1:]] == [["mul[input 0]", "PASS"], ["mul[input 1]", "FAIL"]]
    assert len(pictures(tree)) == 4
    assert "mul[input 1]" in text_of(parse(m._repr_html_()))


def test_params_page_lists_names_in_backward_order_with_the_diagnosis():
    """check_params with a wrong bias gradient: the names table in backward order, the
    diagnosis naming the bias, and the failing name's own section."""
    rng = np.random.default_rng(0)
    X, W, b = rng.standard_normal((8, 5)), rng.standard_normal((5, 3)), np.zeros(3)
    params = {"W": W, "b": b}

    def loss(p):
        return float(np.tanh(X @ p["W"] + p["b"]).sum())

    d = 1 - np.tanh(X @ W + b) ** 2
    report = gc.check_params(loss, params, {"W": X.T @ d, "b": d.sum(0) * 8})
    tree = parse(report.to_html())
    names = next(t for t in tables(tree) if t and t[0][:3] == ["name", "status", "shape"])
    assert [row[:2] for row in names[1:]] == [["b", "FAIL"], ["W", "PASS"]]
    assert report.diagnosis.text in text_of(tree)
    headings = [text_of(h).strip() for h in tree.iter("h2")]
    assert "FAIL b" in headings


def test_plain_repr_of_a_model_check_is_one_short_line():
    """A notebook shows _repr_html_; the text fallback and the console show repr, which stays
    one line naming the status and the failing names (not a dump of every field)."""
    params = {f"w{k}": np.linspace(0.5, 1.5, 50) for k in range(4)}
    grads = {n: 2 * v for n, v in params.items()}
    grads["w2"] = grads["w2"] * 1.01
    report = gc.check_params(lambda p: float(sum((v ** 2).sum() for v in p.values())), params, grads,
                             adjudicate=False)
    text = repr(report)
    assert text.startswith("<ParamsReport check_params: FAIL -- 4 tensors, 200 entries")
    assert text.endswith(", failing ['w2']>") and "\n" not in text and len(text) < 120
    assert "<h3>" in report._repr_html_()


def test_params_page_caps_the_sections_of_passing_names():
    """25 passing names: the table lists all 25, the page draws the sections of the first 20
    (two maps each) and says how many it left out, so a large model's page stays bounded."""
    params = {f"p{k}": np.linspace(0.5, 1.5, 6) for k in range(25)}
    grads = {n: 2 * v for n, v in params.items()}
    report = gc.check_params(lambda p: float(sum((v ** 2).sum() for v in p.values())), params, grads,
                             adjudicate=False)
    tree = parse(report.to_html())
    names = next(t for t in tables(tree) if t and t[0][:3] == ["name", "status", "shape"])
    assert len(names) - 1 == 25
    assert len(pictures(tree)) == 2 * 20
    assert "5 more passing names" in text_of(tree)


def test_sweep_page_shows_the_rule_and_the_shape_grid():
    """A sweep whose claim is wrong when n is even: the rule, and a grid whose failing cells
    are exactly the even columns."""

    def grad(x):
        g = 3 * x ** 2
        if x.shape[-1] % 2 == 0:
            g[:, -1] = 0.0
        return g

    sweep = gc.shape_sweep(lambda x: (x ** 3).sum(), gc.grid(m=range(1, 4), n=range(1, 6)),
                           lambda s: np.linspace(1, 2, s[0] * s[1]).reshape(s), grad, adjudicate=False)
    tree = parse(sweep.to_html())
    assert str(sweep.rule) in text_of(tree)
    grid = next(t for t in tables(tree) if t and t[0][0] == "m \\ n")
    assert grid[0] == ["m \\ n", "1", "2", "3", "4", "5"]
    for row in grid[1:]:
        assert row[1:] == ["✓", "✗", "✓", "✗", "✓"]
    assert "the last column" in text_of(tree)
    frag = parse(sweep._repr_html_())  # the notebook shows the grid too
    assert next(t for t in tables(frag) if t and t[0][0] == "m \\ n")[1:] == grid[1:]


def test_dispute_page_has_the_candidate_table_and_an_ulp_histogram():
    """A dispute between a once-rounded and a naive bfloat16 softmax: one row per candidate,
    the broken one marked, and histograms whose counts add up to the entries."""
    import ml_dtypes

    def softmax(z):
        e = np.exp(z - z.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    bf16 = ml_dtypes.bfloat16
    z = (np.random.default_rng(42).standard_normal((16, 32)) * 3).astype(bf16)
    fast = softmax(z.astype(np.float32)).astype(bf16)
    e = np.exp((z - z.max(axis=-1, keepdims=True)).astype(bf16)).astype(bf16)
    naive = (e / e.astype(np.float32).sum(axis=-1, keepdims=True).astype(bf16)).astype(bf16)
    result = gc.dispute(softmax, (z,), {"fast": fast, "naive": naive}, dtype="bfloat16")
    tree = parse(result.to_html())
    stats = next(t for t in tables(tree) if t and t[0][0] == "candidate")
    rows = {row[0]: row for row in stats[1:]}
    assert rows["naive"][-1] == "BROKEN" and rows["fast"][-1] == ""
    hist = next(t for t in tables(tree) if t and t[0][0] == "error (ulps)")
    for col in range(1, len(hist[0])):
        assert sum(int(row[col]) for row in hist[1:]) == z.size
    frag = parse(result._repr_html_())  # the notebook shows the candidate table too
    assert {row[0]: row[-1] for row in next(t for t in tables(frag) if t and t[0][0] == "candidate")[1:]} \
        == {k: row[-1] for k, row in rows.items()}


def test_a_3d_tensor_gets_heat_maps_with_its_leading_axes_flattened():
    """A 2 x 3 x 4 input: the maps are 6 x 4 pixels (axes 0 and 1 flattened into rows), and
    the planted entry (1, 2, 3) is the only MISMATCH pixel, at row 1 * 3 + 2 = 5, column 3."""
    x = np.random.default_rng(1).standard_normal((2, 3, 4))

    def g(v):
        out = 2 * np.sin(v) * np.cos(v)
        out[1, 2, 3] *= 1 + 1e-4
        return out

    report = gc.check(lambda v: np.sum(np.sin(v) ** 2), x, g, adjudicate=False, progress=False)
    for html in (report.to_html(), report._repr_html_()):
        verdicts, errors = pictures(parse(html))
        assert verdicts.shape == errors.shape == (6, 4, 3)
        red = np.all(verdicts == rgb(VERDICT_COLOURS[Verdict.MISMATCH]), axis=-1)
        assert list(zip(*np.nonzero(red))) == [(5, 3)]


def test_a_screen_report_page_shows_the_limit_the_screened_count_and_the_localized_entry():
    """screen's report renders like check's: SCREENED counted, the detection limit in words
    (median and largest, the report's own numbers), the localized entry MISMATCH at the top
    of the non-PASS table and the only MISMATCH pixel of the verdict map."""
    rng = np.random.default_rng(0)
    A, B, W = rng.standard_normal((3, 48, 48)) / np.sqrt(48)

    def g(w):
        out = A.T @ ((1 - np.tanh(A @ w) ** 2) * B)
        out[7, 30] *= 1 + 1e-4
        return out

    r = gc.screen(lambda w: (np.tanh(A @ w) * B).sum(), W, g)
    tree = parse(r.to_html())
    counts = next(t for t in tables(tree) if t and t[0] == ["verdict", "entries", "share"])
    screened = r.counts[Verdict.SCREENED]
    assert screened >= W.size - 8  # the rest: the localized block, looked at entry by entry
    assert ["MISMATCH", "1"] in [row[:2] for row in counts] and ["SCREENED", str(screened)] in [row[:2] for row in counts]
    finite = r.detection_limit[np.isfinite(r.detection_limit)]
    assert f"detection limit: per entry, median {np.median(finite):.3g}, largest {finite.max():.3g}" in text_of(tree)
    non_pass = [t for t in tables(tree) if t and t[0][:2] == ["entry", "verdict"]][1]
    assert non_pass[1][:2] == ["(7, 30)", "MISMATCH"]
    red = np.all(pictures(tree)[0] == rgb(VERDICT_COLOURS[Verdict.MISMATCH]), axis=-1)
    assert list(zip(*np.nonzero(red))) == [(7, 30)]


def _adjoint_and_taylor():
    A = np.random.default_rng(0).standard_normal((30, 20))
    adjoint = gc.check_adjoint(lambda t: A @ t, lambda v: A[:, ::-1].T @ v, in_shape=(20,), name="transposed")

    def loss(v):
        return np.sum(np.sin(v) * v)

    def grad(v):
        return np.cos(v) * v + np.sin(v)

    def hvp(v, w):
        return (2 * np.cos(v) - v * np.sin(v)) * w

    x = np.array([0.3, -1.2, 0.7])
    return adjoint, gc.taylor_test(loss, x, grad, hvp), gc.taylor_test(loss, x, lambda v: grad(v) * 1.01)


def test_adjoint_and_taylor_results_render_as_html():
    """The newer global tests render too (notebook and page, strict parse): the adjoint test's
    per-draw table with the failing draws marked, the Taylor test's remainder table with its
    orders and an inline log-log SVG (one polyline per remainder); repr stays one short line."""
    adjoint, taylor, wrong = _adjoint_and_taylor()
    for result in (adjoint, taylor, wrong):
        assert "\n" not in repr(result) and len(repr(result)) < 200
        assert repr(result) == f"<{type(result).__name__} {result.summary()}>"
        frag = result._repr_html_()
        assert "<html" not in frag
        parse(frag)
    tree = parse(adjoint.to_html())
    draws = next(t for t in tables(tree) if t and t[0][0] == "draw")
    assert [row[0] for row in draws[1:]] == ["t1, v1", "t2, v2", "sums"]
    assert all(row[-1] == "FAIL" for row in draws[1:])
    assert "FAIL" in text_of(tree.find(".//h1"))
    for result, status, columns in ((taylor, "PASS", 5), (wrong, "FAIL", 3)):
        tree = parse(result.to_html())
        assert status in text_of(tree.find(".//h1"))
        rows = next(t for t in tables(tree) if t and t[0][0] == "h")
        assert len(rows) == 1 + len(result.steps) and len(rows[0]) == columns
        shown = [float(r[2]) for r in rows[1:] if r[2]]
        assert shown == pytest.approx([o for o in result.orders[0] if np.isfinite(o)], abs=0.006)
        svg = next(tree.iter(f"{SVG}svg"))
        assert len(list(svg.iter(f"{SVG}polyline"))) == len(result.remainders) + 1  # + the threshold


@pytest.fixture
def user_module(tmp_path):
    (tmp_path / "usermod.py").write_text(textwrap.dedent("""
        import numpy as np
        def f(x): return (np.sin(x) * x).sum()
        def bad(x):
            g = np.cos(x) * x + np.sin(x); g[1, 2] *= 1.01; return g
        def square(x): return x * x
    """))
    return tmp_path


def run_cli(cwd, *args):
    env = dict(os.environ)
    # the gradcheck under test, whether installed or run from a checkout
    env["PYTHONPATH"] = os.pathsep.join([str(cwd), str(Path(gc.__file__).parents[1])])
    return subprocess.run([sys.executable, "-m", "gradcheck.cli", *args], check=False, capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=300)


def test_cli_check_writes_the_page(user_module):
    """`gradcheck check ... --html FILE` writes the page (the exit code still says FAIL) and
    says where on stderr; its table names the planted entry."""
    out = run_cli(user_module, "check", "usermod:f", "--grad", "usermod:bad", "--shape", "3,4",
                  "--html", "out/report.html")
    assert out.returncode == 1, out.stderr
    page = user_module / "out" / "report.html"
    assert "HTML report written to out/report.html" in out.stderr
    rows = next(t for t in tables(parse(page.read_text(encoding="utf-8"))) if t and t[0][0] == "entry")
    assert rows[1][:2] == ["(1, 2)", "MISMATCH"]


def test_cli_dispute_writes_the_page(user_module):
    """`gradcheck dispute ... --html FILE` writes the per-candidate page."""
    x = np.linspace(0.5, 1.5, 12).astype(np.float32)
    np.save(user_module / "x.npy", x)
    np.save(user_module / "good.npy", (x.astype(np.float64) ** 2).astype(np.float32))
    np.save(user_module / "off.npy", (x.astype(np.float64) ** 2 * 1.001).astype(np.float32))
    out = run_cli(user_module, "dispute", "--fn", "usermod:square", "--inputs", "x.npy", "--dtype", "float32",
                  "--candidate", "good=good.npy", "--candidate", "off=off.npy", "--html", "d.html")
    assert out.returncode == 1, out.stderr
    tree = parse((user_module / "d.html").read_text(encoding="utf-8"))
    stats = next(t for t in tables(tree) if t and t[0][0] == "candidate")
    assert {row[0]: row[-1] for row in stats[1:]}["off"] == "BROKEN"
