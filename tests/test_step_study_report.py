"""The step study's values per entry in the Report, its JSON and its HTML page (issue 18):
compact (only entries that had a step study, at most STUDIES_KEPT, failing ones first),
and shown in the HTML page's entry table."""
from __future__ import annotations

import itertools
import json

import html5lib
import numpy as np
import pytest

import gradcheck
from gradcheck import Verdict
from gradcheck._refine.study import STUDY_FACTORS

X = np.linspace(-1.0, 1.2, 12).reshape(3, 4)
BAD = (1, 2)


def f(v):
    return np.sum(np.sin(v) * v)


def grad(v):
    return np.cos(v) * v + np.sin(v)


def planted(v):
    g = grad(v)
    g[BAD] *= 1 + 1e-4
    return g


@pytest.fixture(scope="module")
def report():
    return gradcheck.check(f, X, planted)


def test_report_keeps_the_study_of_studied_entries_only(report):
    """The MISMATCH had a step study: its steps are h * (0.5, 1, 2, 4, 8, 16) (h = check's
    step for that entry) and each central difference agrees with the closed form to the
    truncation of its step; entries that were not studied (plain PASS) have none."""
    assert report.entries(Verdict.MISMATCH) == [BAD]
    steps, slopes = report.step_study[BAD]
    h = report.config.step * max(1.0, abs(X[BAD]))
    assert np.allclose(steps, h * np.asarray(STUDY_FACTORS), rtol=1e-12)
    truth = grad(X)[BAD]
    assert np.all(np.abs(slopes - truth) <= 1e-9 + steps ** 2)  # truncation h^2 |f'''| / 6, |f'''| <= 4 here
    assert abs(slopes[0] - truth) < 1e-8  # a difference, not the claim: the claim is 1e-4 off
    studied = set(report.step_study)
    assert all(report.cause(ix).name in ("STEP_STUDY", "KINK_STEPS", "EXACT", "EXACT_ZERO", "KINK_EXACT")
               for ix in studied)
    assert len(studied) < X.size


def test_json_carries_the_study_of_listed_entries(report):
    d = json.loads(report.to_json())
    entry = next(e for e in d["entries"] if tuple(e["index"]) == BAD)
    assert len(entry["step_study"]["steps"]) == len(STUDY_FACTORS)
    assert entry["step_study"]["slopes"] == pytest.approx(list(report.step_study[BAD][1]), rel=1e-15)


def test_html_entry_table_shows_the_study(report):
    """The page lists the planted entry's step study in a table of its own, one row per step
    with its central difference (issue 27: the entry tables keep one line per entry, so the
    study is no longer a column of theirs)."""
    parser = html5lib.HTMLParser(strict=True, tree=html5lib.getTreeBuilder("etree"), namespaceHTMLElements=False)
    tree = parser.parse(report.to_html())
    tables = [[[("".join(c.itertext())).strip() for c in tr if c.tag in ("td", "th")] for tr in t.iter("tr")]
              for t in tree.iter("table")]
    entry_tables = [t for t in tables if t and t[0][:2] == ["entry", "verdict"]]
    assert entry_tables and not any(name.startswith("step") for t in entry_tables for name in t[0])
    (study,) = [t for t in tables if t and t[0] == ["entry", "step h", "D(h)"]]
    start = next(k for k, r in enumerate(study) if r[0] == str(BAD))
    rows = [study[start]] + list(itertools.takewhile(lambda r: r[0] == "", study[start + 1:]))
    assert [(r[1], r[2]) for r in rows] == [(f"{h:.3g}", f"{d:.12g}") for h, d in zip(*report.step_study[BAD])]


def test_only_so_many_studies_are_kept_failing_first(monkeypatch):
    """A dense bug: every entry is studied, but the report keeps at most STUDIES_KEPT
    studies (here 5), all of failing entries; the verdicts of all entries are kept."""
    from gradcheck._core import judged

    monkeypatch.setattr(judged, "STUDIES_KEPT", 5)
    r = gradcheck.check(f, X, lambda v: grad(v) + 1e-4)
    assert r.counts[Verdict.MISMATCH] == X.size
    assert len(r.step_study) == 5 and all(r.codes[ix] == Verdict.MISMATCH for ix in r.step_study)


def test_screen_reports_the_study_of_localized_entries():
    """screen: a localized entry's entry-wise look includes the step study, in its report."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((8, 64)) / 8
    x = rng.standard_normal(64)

    def g(v):
        out = A.T @ (1 - np.tanh(A @ v) ** 2)
        out[11] *= 1 + 1e-4
        return out

    r = gradcheck.screen(lambda v: np.sum(np.tanh(A @ v)), x, g, exact=False)
    assert (11,) in r.entries(Verdict.MISMATCH) and (11,) in r.step_study
