"""Report: verdict arrays, counts, entries, the table, JSON, assert_pass."""
from __future__ import annotations

import json

import numpy as np
import pytest

import gradcheck
from gradcheck import Verdict, check


@pytest.fixture(scope="module")
def failing_report():
    x = np.linspace(-1, 1, 12).reshape(3, 4)

    def grad(x):
        g = np.cos(x)
        g[1, 3] += 0.5
        g[2, 0] *= 1.001
        return g

    return check(lambda x: np.sin(x).sum(), x, grad, name="sin")


def test_verdicts_is_an_array_of_members_shaped_like_x(failing_report):
    """report.verdicts holds Verdict members, shaped like x."""
    v = failing_report.verdicts
    assert v.shape == (3, 4) and all(isinstance(e, Verdict) for e in v.ravel())
    assert v[1, 3] is Verdict.MISMATCH and v[0, 0] is Verdict.PASS
    assert ((v == Verdict.MISMATCH).sum()) == 2


def test_arrays_and_rel_error(failing_report):
    """analytic, numeric, noise are shaped like x; rel_error is the seed's definition."""
    r = failing_report
    for arr in (r.analytic, r.numeric, r.noise, r.rel_error, r.tolerance):
        assert arr.shape == (3, 4)
    a, n = r.analytic, r.numeric
    expected = np.abs(a - n) / np.maximum(np.maximum(np.abs(a), np.abs(n)), 1e-12)
    np.testing.assert_array_equal(r.rel_error, expected)


def test_counts_and_entries(failing_report):
    """counts has every member; entries gives multi-indices in row-major order."""
    r = failing_report
    assert r.counts[Verdict.MISMATCH] == 2 and r.counts[Verdict.PASS] == 10
    assert set(r.counts) == set(Verdict)
    assert r.entries(Verdict.MISMATCH) == [(1, 3), (2, 0)]
    assert len(r.entries([Verdict.PASS, Verdict.MISMATCH])) == 12


def test_str_is_a_compact_table_with_worst_entries_first(failing_report):
    """str(report) lists the worst entries by multi-index, not whole arrays."""
    text = str(failing_report)
    lines = text.splitlines()
    assert lines[0].startswith("sin: FAIL") and "2 MISMATCH" in lines[0]
    body = [ln for ln in lines if ln.strip()[:2] in {f"({d}" for d in range(10)} and "):" not in ln]
    assert body[0].strip().startswith("(1, 3)") and body[1].strip().startswith("(2, 0)")
    assert len(body) <= 10


def test_assert_pass_raises_assertion_subclass_with_table(failing_report):
    """assert_pass raises an AssertionError subclass carrying the report and the table."""
    with pytest.raises(AssertionError) as info:
        failing_report.assert_pass()
    assert isinstance(info.value, gradcheck.GradientAssertionError)
    assert info.value.report is failing_report and "(1, 3)" in str(info.value)


def test_assert_pass_returns_report_and_can_require_evidence():
    """A passing report returns itself; allow_unchecked=False fails on UNCHECKED entries."""
    r = check(lambda x: (x[:2] ** 2).sum(), np.ones(3), np.array([2.0, 2.0, 0.0]), adjudicate=False)
    assert r.assert_pass() is r
    with pytest.raises(gradcheck.GradientAssertionError):
        r.assert_pass(allow_unchecked=False)


def test_to_dict_and_json(failing_report):
    """to_dict is JSON-ready: counts by name, flagged entries with values, settings."""
    d = json.loads(failing_report.to_json())
    assert d["passed"] is False and d["counts"]["MISMATCH"] == 2 and d["shape"] == [3, 4]
    idx = [e["index"] for e in d["entries"] if e["verdict"] == "MISMATCH"]
    assert idx == [[1, 3], [2, 0]]
    full = failing_report.to_dict(arrays=True)
    assert len(full["verdicts"]) == 12 and full["verdicts"][7] == "MISMATCH"


def test_json_handles_nonfinite():
    """NaN/inf values are written as strings, so the JSON stays valid."""
    r = check(lambda x: (x**2).sum(), np.ones(2), np.array([np.nan, 2.0]))
    d = json.loads(r.to_json())
    assert d["entries"][0]["claimed"] == "nan" and d["counts"]["NONFINITE"] == 1


def _ranked_report(seed: int, shape=(64, 48), stray: bool = True):
    """A report built as check() would, with the rank's hard cases: many entries of exactly the
    same err/tol (ties at any cut), infinite and NaN excess, SCREENED, UNCHECKED and NONFINITE
    entries, and
    a failing column plus one stray MISMATCH (the layout names the stray: it moves up)."""
    from gradcheck import Config, Report

    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    n = a + np.round(rng.standard_normal(shape), 1) * 1e-9  # rounded: many equal excesses
    n.reshape(-1)[rng.choice(a.size, 20, replace=False)] = np.nan
    tol = np.full(shape, 1e-9)
    tol.reshape(-1)[rng.choice(a.size, 10, replace=False)] = 0.0  # err/0: inf
    codes = np.full(shape, int(Verdict.PASS), np.uint8)
    codes.reshape(-1)[rng.choice(a.size, 300, replace=False)] = Verdict.UNCHECKED
    codes.reshape(-1)[rng.choice(a.size, 300, replace=False)] = Verdict.SCREENED
    codes.reshape(-1)[rng.choice(a.size, 40, replace=False)] = Verdict.NONFINITE
    codes[:, 5] = Verdict.MISMATCH
    n[:, 5] = a[:, 5] * 1.01
    if stray:
        codes[10, 20] = Verdict.MISMATCH
        n[10, 20] = a[10, 20] * (1 + 1e-6)  # beyond tolerance, far less than the column
    return Report("ranked", a, n, np.full(shape, 1e-14), tol, codes, np.zeros(shape, bool), "float64",
                  "serial", Config.for_dtype("float64"))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("stray", [True, False])
def test_rank_first_k_is_the_whole_rank_cut_at_k(seed, stray):
    """rank(flat, first=k) (the HTML tables' and worst()'s call: no sort of the whole report) is
    exactly rank(flat)[:k], ties, infinities, SCREENED entries, the stray the layout names and
    subsets of entries included; worst(k) follows it."""
    r = _ranked_report(seed, stray=stray)
    if stray:
        assert r.layout.kind == "plus"  # the stray path is exercised
    whole = r.rank()
    ex = np.nan_to_num(r.excess().reshape(-1), nan=np.inf, posinf=np.inf)
    failing = int(np.isin(r.codes, [int(Verdict.MISMATCH), int(Verdict.NONFINITE)]).sum())
    cuts = [0, 1, 2, 3, 10, failing - 1, failing, failing + 1, failing + 37, 500, whole.size - 1, whole.size,
            whole.size + 5]
    tied = [k for k in cuts if 0 < k < whole.size and ex[whole[k - 1]] == ex[whole[k]]]
    assert tied, "no cut falls inside a run of equal excesses: the ties are not tested"
    for k in cuts:
        np.testing.assert_array_equal(r.rank(first=k), whole[:k], err_msg=f"first={k}")
    flat = np.flatnonzero(r.codes.reshape(-1) != int(Verdict.PASS))
    for k in (1, 7, 64, 65, flat.size):
        np.testing.assert_array_equal(r.rank(flat, first=k), r.rank(flat)[:k], err_msg=f"flat, first={k}")
    assert r.worst(12) == [tuple(int(i) for i in np.unravel_index(j, r.shape)) for j in whole[:12]]


def test_rank_first_k_negative_control():
    """The rule the test above holds rank(first=k) to, on a cut that breaks ties differently
    (largest excess first, but ties by the highest index): it is caught."""
    r = _ranked_report(0)
    whole = r.rank()
    ex = np.nan_to_num(r.excess().reshape(-1), nan=np.inf, posinf=np.inf)
    ex[r.codes.reshape(-1) == Verdict.SCREENED] = -np.inf
    failing = np.isin(r.codes.reshape(-1), [int(Verdict.MISMATCH), int(Verdict.NONFINITE)])
    idx = np.arange(ex.size)[::-1]
    wrong = idx[np.lexsort((-ex[idx], ~failing[idx]))]
    assert not np.array_equal(wrong[:500], whole[:500])
