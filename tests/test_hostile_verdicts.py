"""Hostile use, verdicts: ``assert result`` means the verdict, and no status contradicts its table.

0. Every result type (Report, ComplexReport, MultiReport, ParamsReport, screen's Report, the
   Reports of check_jvp and check_hvp, TaylorResult, AdjointResult, DisputeResult, SweepReport)
   is truthy exactly when it passed: ``assert gradcheck.check(f, x, wrong)`` fails, and pytest's
   message shows the summary. Before (issue 25) every result was truthy.
2. One property test per result type derives the status from what the result's own table says
   (entry verdicts, per-draw differences and bounds, remainders and orders, per-entry ulp errors
   against bounds), independently of the code that sets the status, and compares.
"""
from __future__ import annotations

import dataclasses
import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gradcheck
from gradcheck import Config, Verdict
from gradcheck._models.diagnosis import Diagnosis
from gradcheck._pipeline.complex import combine
from gradcheck._sweeps.sweep import ShapeResult, SweepReport

# ml_dtypes is imported before any pytester run (see tests/test_pytest_plugin.py).
pytest_plugins = ["pytester"]

X = np.random.default_rng(7).standard_normal(12)
Z = X[:6] + 1j * X[6:]
PASS, FAIL, INCONCLUSIVE = "PASS", "FAIL", "INCONCLUSIVE"
FEW = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def sin_sum(x):
    return np.sin(x).sum()


def _bf16_sum(x):
    """A correct f whose output is rounded to bfloat16: nothing can be verified."""
    return np.sin(x).astype(ml_dtypes.bfloat16).sum()


def _wrong(g, at=3, factor=1.01):
    def claim(*args):
        out = np.array(g(*args), copy=True)
        if out.size > at:
            out.reshape(-1)[at] *= factor
        return out
    return claim


# -- 0. bool(result) is result.passed -----------------------------------------------------------

def _results():
    """(label, result, expected status) for every result type, passing and not."""
    cube = lambda x: np.sum(x**3)  # noqa: E731
    out = [
        ("Report", gradcheck.check(sin_sum, X, np.cos), PASS),
        ("Report", gradcheck.check(sin_sum, X, _wrong(np.cos)), FAIL),
        ("Report", gradcheck.check(_bf16_sum, X, np.cos, adjudicate=False), INCONCLUSIVE),
        ("ComplexReport", gradcheck.check(lambda z: np.sum(np.abs(z) ** 2), Z, lambda z: 2 * z), PASS),
        ("ComplexReport", gradcheck.check(lambda z: np.sum(np.abs(z) ** 2), Z, lambda z: 2 * np.conj(z)), FAIL),
        ("MultiReport", gradcheck.check(lambda a, b: np.sum(a * b), (X[:3], X[3:6]),
                                        grad=(lambda a, b: b, lambda a, b: a)), PASS),
        ("MultiReport", gradcheck.check(lambda a, b: np.sum(a * b), (X[:3], X[3:6]),
                                        grad=(lambda a, b: b, lambda a, b: 1.01 * a)), FAIL),
        ("ParamsReport", gradcheck.check_params(lambda p: sin_sum(p["w"]), {"w": X.copy()}, {"w": np.cos(X)}), PASS),
        ("ParamsReport", gradcheck.check_params(lambda p: sin_sum(p["w"]), {"w": X.copy()},
                                                {"w": _wrong(np.cos)(X)}), FAIL),
        ("screen", gradcheck.screen(sin_sum, X, np.cos), PASS),
        ("screen", gradcheck.screen(sin_sum, X, _wrong(np.cos, factor=1.5)), FAIL),
        ("check_jvp", gradcheck.check_jvp(np.sin, X, lambda x, t: np.cos(x) * t), PASS),
        ("check_jvp", gradcheck.check_jvp(np.sin, X, lambda x, t: _wrong(np.cos)(x) * t), FAIL),
        ("check_hvp", gradcheck.check_hvp(cube, X, lambda x, v: 6 * x * v, grad=lambda x: 3 * x**2), PASS),
        ("check_hvp", gradcheck.check_hvp(cube, X, lambda x, v: _wrong(lambda y: 6 * y)(x) * v,
                                          grad=lambda x: 3 * x**2, symmetry=False), FAIL),
        ("TaylorResult", gradcheck.taylor_test(sin_sum, X, np.cos), PASS),
        ("TaylorResult", gradcheck.taylor_test(sin_sum, X, _wrong(np.cos)), FAIL),
        ("TaylorResult", gradcheck.taylor_test(lambda x: np.float16(sin_sum(x)), X.astype(np.float16),
                                               lambda x: np.cos(x)), INCONCLUSIVE),
        ("AdjointResult", gradcheck.check_adjoint(lambda x, t: np.cos(x) * t, lambda x, v: np.cos(x) * v, X,
                                                  f=np.sin), PASS),
        ("AdjointResult", gradcheck.check_adjoint(lambda x, t: np.cos(x) * t, lambda x, v: np.cos(x) * v[::-1], X),
         FAIL),
        ("SweepReport", gradcheck.shape_sweep(sin_sum, [(2,), (3,)], np.ones, np.cos), PASS),
        ("SweepReport", gradcheck.shape_sweep(sin_sum, [(2,), (5,)], np.ones, _wrong(np.cos, at=4)), FAIL),
    ]
    x16 = np.linspace(-1, 1, 8).astype(np.float16)
    exact = np.exp(x16.astype(np.float64)).astype(np.float16)
    out.append(("DisputeResult", gradcheck.dispute(np.exp, (x16,), {"ok": exact}, "float16"), PASS))
    out.append(("DisputeResult", gradcheck.dispute(np.exp, (x16,), {"off": (exact * np.float16(1.01))}, "float16"),
                FAIL))
    return out


@pytest.fixture(scope="module")
def results():
    return _results()


def test_every_result_type_is_covered(results):
    """Each public result type appears passing and failing."""
    seen = {(label, status) for label, _, status in results}
    for label in ("Report", "ComplexReport", "MultiReport", "ParamsReport", "screen", "check_jvp", "check_hvp",
                  "TaylorResult", "AdjointResult", "SweepReport", "DisputeResult"):
        assert {(label, PASS), (label, FAIL)} <= seen, label
    kinds = {type(r).__name__ for _, r, _ in results}
    assert {"Report", "ComplexReport", "MultiReport", "ParamsReport", "TaylorResult", "AdjointResult",
            "SweepReport", "DisputeResult"} <= kinds


def test_bool_of_every_result_is_passed(results):
    """``bool(result) is result.passed``: True for PASS, False for FAIL and INCONCLUSIVE; the
    statuses are the expected ones (a control: the bool rule is not tested on one value)."""
    for label, r, expected in results:
        assert r.passed is (expected == PASS), (label, expected, r)
        assert bool(r) is r.passed, (label, expected)
        if hasattr(r, "status"):
            assert r.status == expected, (label, r.status)
        if expected != PASS:
            with pytest.raises(AssertionError):
                assert r


def test_a_failed_assert_shows_the_summary(pytester, monkeypatch):
    """``assert gradcheck.check(f, x, wrong)`` in a user's test fails, and pytest's message
    carries the report's one-line summary (status and counts); a correct one passes."""
    pytester.makepyfile(test_user="""
        import numpy as np
        import gradcheck

        X = np.array([0.3, -1.2, 0.8])

        def test_wrong():
            assert gradcheck.check(lambda x: np.sin(x).sum(), X, lambda x: np.cos(x) * 1.01)

        def test_right():
            assert gradcheck.check(lambda x: np.sin(x).sum(), X, np.cos)
    """)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    run = pytester.runpytest("-p", "no:cacheprovider")
    run.assert_outcomes(passed=1, failed=1)
    run.stdout.fnmatch_lines(["*assert <Report <lambda>: FAIL -- 3 entries: 3 MISMATCH>*"])


# -- 2. statuses derived from the tables ---------------------------------------------------------

def status_from_codes(codes: np.ndarray, deterministic: bool = True) -> str:
    """The documented rule, restated from the entry verdicts: a MISMATCH or NONFINITE entry (or a
    nondeterministic f) fails; otherwise an entry PASSed or SCREENED passes, and no entry at all
    passes (nothing could be wrong); else nothing was verified."""
    names = {Verdict(int(c)).name for c in np.asarray(codes).reshape(-1)}
    if not deterministic or names & {"MISMATCH", "NONFINITE"}:
        return FAIL
    if np.size(codes) and not names & {"PASS", "SCREENED"}:
        return INCONCLUSIVE
    return PASS


def worst_of(statuses) -> str:
    statuses = list(statuses)
    return FAIL if FAIL in statuses else (INCONCLUSIVE if INCONCLUSIVE in statuses else PASS)


CODES = st.lists(st.sampled_from(list(Verdict)), min_size=0, max_size=12).map(
    lambda vs: np.array([int(v) for v in vs], dtype=np.uint8))


def _report(codes: np.ndarray, deterministic: bool = True, name: str = "f") -> gradcheck.Report:
    n = codes.size
    z = np.zeros(n)
    return gradcheck.Report(name=name, analytic=z, numeric=z, noise=z, tolerance=z + 1, codes=codes,
                            refined=np.zeros(n, dtype=bool), dtype="float64", engine="serial", config=Config(),
                            deterministic=deterministic)


@given(CODES, st.booleans())
def test_report_status_is_its_entries_status(codes, deterministic):
    """Report (and screen's, whose cleared entries are SCREENED): status, passed and bool follow
    the entry verdicts; the summary says the status."""
    r = _report(codes, deterministic)
    assert r.status == status_from_codes(codes, deterministic)
    assert bool(r) is r.passed is (r.status == PASS)
    assert f": {r.status} --" in r.summary()


#: The worse news of an entry's two parts (the module docstring of gradcheck._pipeline.complex).
SEVERITY = ["PASS", "SKIPPED", "UNCHECKED", "KINK", "NONFINITE", "MISMATCH"]


@given(st.lists(st.sampled_from([Verdict.PASS, Verdict.MISMATCH, Verdict.UNCHECKED, Verdict.NONFINITE,
                                 Verdict.KINK]), min_size=2, max_size=12).filter(lambda v: len(v) % 2 == 0))
def test_complex_report_status_is_its_entries_status(parts):
    """ComplexReport: each complex entry takes the worse verdict of its real and imaginary parts
    (a half-verified entry is not verified), the status is that of those entries; a failing part
    always fails the whole, and a PASS of the whole implies one of the parts'."""
    codes = np.array([int(v) for v in parts], dtype=np.uint8).reshape(-1, 2)
    base = _report(codes.reshape(-1))
    real = gradcheck.Report(**{**{f.name: getattr(base, f.name) for f in dataclasses.fields(gradcheck.Report)},
                               "analytic": np.zeros(codes.shape), "numeric": np.zeros(codes.shape),
                               "noise": np.zeros(codes.shape), "tolerance": np.ones(codes.shape),
                               "codes": codes, "refined": np.zeros(codes.shape, dtype=bool)})
    c = combine(real, "torch", ())
    worse = [max((Verdict(int(v)).name for v in pair), key=SEVERITY.index) for pair in codes]
    assert [Verdict(int(v)).name for v in c.codes] == worse
    assert c.status == status_from_codes(np.array([int(Verdict[w]) for w in worse], dtype=np.uint8))
    if status_from_codes(codes) == FAIL:
        assert c.status == FAIL
    if c.status == PASS:
        assert status_from_codes(codes) == PASS


@given(st.lists(CODES, min_size=1, max_size=4))
def test_multi_report_status_is_its_inputs_status(parts):
    """MultiReport: FAIL if an input's entries fail, else INCONCLUSIVE if one verified nothing."""
    r = gradcheck.MultiReport(name="f", reports=tuple(_report(c) for c in parts))
    assert r.status == worst_of(status_from_codes(c) for c in parts)
    assert bool(r) is r.passed is (r.status == PASS)


@given(st.dictionaries(st.sampled_from("abcde"), CODES, min_size=1), st.booleans())
def test_params_report_status_is_its_names_status(parts, deterministic):
    """ParamsReport: a failing name (or a nondeterministic loss) fails the model, a name that
    verified nothing makes it inconclusive; the failing and inconclusive lists agree."""
    reports = {n: _report(c, name=n) for n, c in parts.items()}
    r = gradcheck.ParamsReport(reports=reports, order=tuple(parts), deterministic=deterministic,
                               diagnosis=Diagnosis(kind="pass", text=""))
    derived = {n: status_from_codes(c) for n, c in parts.items()}
    assert r.status == (FAIL if not deterministic else worst_of(derived.values()))
    assert set(r.failing) == {n for n, s in derived.items() if s == FAIL}
    assert set(r.inconclusive) == {n for n, s in derived.items() if s == INCONCLUSIVE}
    assert bool(r) is r.passed is (r.status == PASS)


@given(st.lists(CODES, min_size=1, max_size=5))
def test_sweep_status_is_its_shapes_entries_status(parts):
    """SweepReport: from each shape's entry counts, FAIL wins, then INCONCLUSIVE."""
    results = []
    for k, codes in enumerate(parts):
        rep = _report(codes)
        counts = {v.name: n for v, n in rep.counts.items() if n}
        results.append(ShapeResult((k + 1,), rep.passed, rep.size, counts, "serial", 0, 0.0, None, status=rep.status))
    sweep = SweepReport(name="f", results=tuple(results), dim_names=("d0",), rule=None, seconds=0.0)

    def from_counts(counts, size):
        fails = counts.get("MISMATCH", 0) + counts.get("NONFINITE", 0)
        verified = counts.get("PASS", 0) + counts.get("SCREENED", 0)
        return FAIL if fails else (INCONCLUSIVE if size and not verified else PASS)
    assert sweep.status == worst_of(from_counts(r.counts, r.size) for r in results)
    assert bool(sweep) is sweep.passed is (sweep.status == PASS)


@FEW
@given(st.integers(0, 2**16), st.sampled_from([0.0, 1e-3, 0.3]), st.integers(0, 11))
def test_screen_status_is_its_entries_status(seed, error, at):
    """screen on a tanh layer with one entry of the claim off (or none): the status is its
    entries' (SCREENED counts as verified down to the stated limit), and a planted error above
    its entry's stated limit is not SCREENED."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((5, 12))
    f = lambda w: np.tanh(A @ w).sum()  # noqa: E731
    g = A.T @ (1 - np.tanh(A @ X) ** 2)
    claim = g.copy()
    claim[at] += error * max(1.0, abs(g[at]))
    r = gradcheck.screen(f, X, claim, seed=seed)
    assert r.status == status_from_codes(r.codes, r.deterministic)
    planted = abs(claim[at] - g[at])
    if planted > r.detection_limit[at]:
        assert r.verdicts[at] is not Verdict.SCREENED


@FEW
@given(st.integers(0, 2**16), st.sampled_from([0.0, 1e-7, 1e-4, 1e-2]), st.booleans())
def test_taylor_status_is_its_tables_status(seed, error, second_order):
    """TaylorResult: from the table's order column (pairs of counted steps, at the small-step
    end): an order measured on two or more pairs must reach 1.9 (2.9 with the Hessian); a
    remainder never above round-off passes only at 1% resolution; else the test is inconclusive."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(6)
    f = lambda z: np.sum(np.sin(z) * z)  # noqa: E731
    g = np.cos(x) * x + np.sin(x) + error * rng.standard_normal(6)
    hvp = (lambda z, v: (2 * np.cos(z) - z * np.sin(z)) * v) if second_order else None
    r = gradcheck.taylor_test(f, x, g, hvp, seed=seed)
    each = []
    for j, (orders, counted) in enumerate(zip(r.orders, r.counted)):
        good = [o for o in orders if math.isfinite(o)]
        if len(good) >= 2:
            each.append(PASS if min(good[-3:]) >= (1.9, 2.9)[j] else FAIL)
        elif not any(counted) and r.resolution[j] <= 0.01:
            each.append(PASS)
        else:
            each.append(INCONCLUSIVE)
    assert r.status == worst_of(each)
    assert bool(r) is r.passed is (r.status == PASS)


@FEW
@given(st.integers(0, 2**16), st.sampled_from([0.0, 1e-12, 1e-6, 1e-2]), st.booleans(), st.booleans())
def test_adjoint_status_is_its_tables_status(seed, error, with_f, jvp_side):
    """AdjointResult: from its table: every draw's |<J t, v> - <t, J* v>| within its bound, both
    models linear within the limit, and (with f) both agreeing with f's differences."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((4, 6))
    E = error * rng.standard_normal(A.shape)
    x = rng.standard_normal(6)
    J = (1 - np.tanh(A @ x) ** 2)[:, None] * A
    jvp = (lambda z, t: (J + E) @ t) if jvp_side else (lambda z, t: J @ t)
    vjp = (lambda z, v: J.T @ v) if jvp_side else (lambda z, v: (J + E).T @ v)
    r = gradcheck.check_adjoint(jvp, vjp, x, f=(lambda z: np.tanh(A @ z)) if with_f else None, seed=seed)
    held = all(math.isfinite(a) and math.isfinite(b) and abs(a - b) <= bd
               for a, b, bd in zip(r.forward, r.adjoint, r.bound))
    linear = all(r.linearity[k] <= r.linearity["limit"] for k in ("jvp", "vjp"))
    agree = not r.blame or (r.blame["jvp_agrees"] and r.blame["vjp_agrees"])
    assert r.status == (PASS if held and linear and agree else FAIL)
    assert bool(r) is r.passed is (r.status == PASS)
    if error >= 1e-6:  # a planted error this large is seen (a control: the test can fail)
        assert r.status == FAIL


@FEW
@given(st.lists(st.integers(-3, 3), min_size=8, max_size=8), st.sampled_from(["float16", "bfloat16"]))
def test_dispute_status_is_its_entries_status(ulps, dtype):
    """DisputeResult: a candidate is broken exactly when one of its per-entry ulp errors exceeds
    that entry's bound (NaN or inf where the exact value is finite: an infinite error); passed,
    and bool, when none is."""
    fmt = np.float16 if dtype == "float16" else ml_dtypes.bfloat16
    x = np.linspace(-2, 2, 8).astype(fmt)
    exact = np.exp(x.astype(np.float64)).astype(fmt)
    bits = exact.view(np.uint16).astype(np.int32) + np.array(ulps)
    candidate = bits.astype(np.uint16).view(fmt)
    r = gradcheck.dispute(np.exp, (x,), {"moved": candidate, "rounded": exact}, dtype, rounds=1)
    derived = tuple(k for k in r.names if np.any(np.asarray(r.errors[k]) > r.bounds))
    assert r.broken == derived
    assert r.passed is (not derived) and bool(r) is r.passed
