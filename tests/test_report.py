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
