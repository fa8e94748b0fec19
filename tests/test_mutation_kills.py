"""Specifications of the verdict / tolerance code that mutation testing showed unpinned.

Each test was written against mutants of ``_classify``, ``_config`` and ``_refine`` (now
``_classify/rule.py``, ``_core/config.py`` and ``_refine/study.py``, ``quick.py``, ``kink.py``) that
survived the rest of the suite (``tests/mutation/README.md``: command, score, and the mutants
that are equivalent and why). They state behaviour, not implementation: boundaries of
the rule (``>`` vs ``>=``), what each documented formula computes, that the step study
reuses the first step and pays for five more, that no floating-point warning escapes, and
the step study's estimator checked against a plain re-derivation of its documented
formulas on random data.
"""
from __future__ import annotations

import math
import re
from unittest import mock

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradcheck import Config, Verdict
from gradcheck._classify.rule import EPS_REL, classify, relative_error, tolerance
from gradcheck._core.config import dtype_name
from gradcheck._refine.study import STUDY_FACTORS, step_study

P, M, U, N, K = (int(v) for v in (Verdict.PASS, Verdict.MISMATCH, Verdict.UNCHECKED, Verdict.NONFINITE,
                                  Verdict.KINK))


# -- dtype names and presets ----------------------------------------------------------------
class _FrameworkDtype:
    """A framework dtype: a ``.name`` attribute, and a ``str`` that is not the name."""

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"framework.{self.name}"


class _TorchLike:
    """torch dtypes have no ``.name``; ``str(torch.float16)`` is ``'torch.float16'``."""

    def __init__(self, text):
        self.text = text

    def __str__(self):
        return self.text


@pytest.mark.parametrize("given_, expected", [
    ("double", "float64"), ("float", "float32"), ("half", "float16"),
    ("f8", "float64"), ("f4", "float32"), ("f2", "float16"),
    ("float64", "float64"), ("bfloat16", "bfloat16"),
    ("torch.float16", "float16"), ("torch.bfloat16", "bfloat16"), (_TorchLike("torch.float64"), "float64"),
    (_TorchLike("torch.half"), "float16"),
    (np.dtype(">f8"), "float64"),              # str() is '>f8': the name is what counts
    (_FrameworkDtype("half"), "float16"),      # name read, then aliased
    (np.dtype(ml_dtypes.bfloat16), "bfloat16"),
])
def test_dtype_name_table(given_, expected):
    """Canonical names from numpy dtypes, framework dtypes, aliases and strings."""
    assert dtype_name(given_) == expected


@pytest.mark.parametrize("given_, expected", [
    (np.float32, "float32"), (np.float16, "float16"), (ml_dtypes.bfloat16, "bfloat16"),  # types: no .name
    (np.dtype("float32"), "float32"), (np.dtype(">f8"), "float64"),
    ("f4", "float32"), ("half", "float16"), ("bfloat16", "bfloat16"),
    ("torch.float16", "float16"),                      # a string numpy does not know
    (_FrameworkDtype("float32"), "float32"),          # an object numpy cannot read
])
def test_for_dtype_accepts_every_spelling(given_, expected):
    """Types, dtypes, strings numpy knows and strings it does not, framework dtypes."""
    cfg = Config.for_dtype(given_)
    assert cfg.dtype == expected
    assert cfg.step == {"float64": 6.0e-6, "float32": 1e-3, "float16": 3e-2, "bfloat16": 1e-1}[expected]


def test_for_dtype_overrides_and_lists_the_presets():
    """Keyword overrides reach the preset; an unknown dtype lists the presets that exist."""
    assert Config.for_dtype("float32", rtol=5e-3).rtol == 5e-3
    assert Config.for_dtype("float32", rtol=5e-3).step == 1e-3
    # a looser rtol needs a share above it (or nothing could pass): both overrides reach it
    assert Config.for_dtype("float32", rtol=5e-2, resolution=0.1).rtol == 5e-2
    with pytest.raises(ValueError, match=r"no preset for dtype 'int32'; presets exist for "
                                         r"\['bfloat16', 'float16', 'float32', 'float64'\]"):
        Config.for_dtype(np.int32)


@pytest.mark.parametrize("field", ["step", "rtol", "atol", "noise_factor"])
@pytest.mark.parametrize("value", [-1.0, -1e-300, float("nan"), float("inf"), "1e-3", None, True])
def test_config_rejects_negative_nonfinite_and_non_numbers(field, value):
    """Every tolerance field must be a finite number >= 0 (the step > 0): the message names
    field and value; a value of the wrong type (a string, None, a bool) is a TypeError."""
    accepts = "a positive number \\(finite\\)" if field == "step" else "a finite number >= 0"
    error = ValueError if isinstance(value, float) else TypeError
    got = re.escape(repr(value)) + ("" if error is ValueError else rf" \(a {type(value).__name__}\)")
    with pytest.raises(error, match=rf"^{field} must be {accepts}, got {got}$"):
        Config(**{field: value})


def test_config_rejects_a_zero_step_and_an_unknown_reduction():
    """A zero step divides by zero; the reduction must be one of the two named."""
    with pytest.raises(ValueError, match=r"^step must be a positive number \(finite\), got 0\.0$"):
        Config(step=0.0)
    with pytest.raises(ValueError, match=r"^reduce='mean' is not one of \('random', 'sum'\)$"):
        Config(reduce="mean")
    assert Config(rtol=0.0, atol=0.0, noise_factor=0.0).rtol == 0.0  # zero is allowed there


# -- the verdict rule ----------------------------------------------------------------------
def _codes(a, n, z, **kw):
    kw = {"rtol": 0.0, "atol": 0.0, "noise_factor": 1.0, "resolution": 0.5, **kw}
    return [int(c) for c in classify(np.array(a, float), np.array(n, float), np.array(z, float), **kw)]


def test_rule_boundaries():
    """err == tol is not a MISMATCH; scale == floor is UNCHECKED; tol == resolution*scale
    is a PASS (both sides of each)."""
    # scale == floor -> UNCHECKED; just above -> PASS
    assert _codes([1.0, 1.0], [1.0, 1.0], [1.0, 0.5], resolution=0.999) == [U, P]
    # tol == resolution * scale -> PASS; one ulp above -> UNCHECKED (0.5 + 2**-53 is the next double)
    assert _codes([1.0, 1.0], [1.0, 1.0], [0.5, 0.5 + 2**-53]) == [P, U]
    # err == tol (atol) -> not MISMATCH; just above -> MISMATCH
    assert _codes([3.0, 3.0], [2.0, 2.0 - 2**-50], [0.0, 0.0], atol=1.0) == [P, M]
    # err == tol (rtol * scale): 0.5 * 2 == 1
    assert _codes([2.0, 2.0], [1.0, 1.0 - 2**-50], [0.0, 0.0], rtol=0.5) == [P, M]


def test_tolerance_is_the_documented_sum():
    """tol = atol + k*noise + rtol*max(|a|,|n|), each term visible on its own."""
    a, n, z = np.array([-3.0, 0.5]), np.array([2.0, -4.0]), np.array([0.25, 2.0])
    np.testing.assert_array_equal(tolerance(a, n, z, rtol=0.0, atol=0.0, noise_factor=4.0), [1.0, 8.0])
    np.testing.assert_array_equal(tolerance(a, n, z, rtol=0.5, atol=0.0, noise_factor=0.0), [1.5, 2.0])
    np.testing.assert_array_equal(tolerance(a, n, z, rtol=0.0, atol=7.0, noise_factor=0.0), [7.0, 7.0])
    np.testing.assert_array_equal(tolerance(a, n, z, rtol=0.5, atol=7.0, noise_factor=4.0), [9.5, 17.0])


def test_codes_are_uint8_and_nonfinite_wins():
    """Codes are one byte per entry; NaN/inf anywhere makes the entry NONFINITE."""
    codes = classify(np.array([1.0, np.nan, 1.0, 1.0]), np.array([1.0, 1.0, np.inf, 1.0]),
                     np.array([0.0, 0.0, 0.0, np.nan]), rtol=1e-6, atol=0.0, noise_factor=8.0)
    assert codes.dtype == np.uint8
    assert codes.tolist() == [P, N, N, N]


def test_relative_error_values_and_type():
    """|a-n| / max(|a|,|n|,eps) in float64, from any real input."""
    r = relative_error(np.array([2.0, 1.0, -1.0, 0.0, 1e-13], np.float32), [1.0, 1.0, 1.0, 0.0, 0.0])
    assert r.dtype == np.float64
    np.testing.assert_array_equal(r[:4], [0.5, 0.0, 2.0, 0.0])
    assert r[4] == pytest.approx(np.float32(1e-13) / EPS_REL)
    assert relative_error([3.0], [1.0], eps=10.0)[0] == 0.2


def test_no_floating_point_warning_escapes():
    """NaN, inf, overflow and 0/0 are expected inputs: under numpy's strictest error
    setting the verdict functions still answer (NONFINITE / NaN), never raise."""
    a = np.array([np.inf, np.nan, 1e308, 0.0, 1.0])
    n = np.array([np.inf, 1.0, -1e308, 0.0, np.inf])
    z = np.array([0.0, np.inf, 1e308, np.nan, 0.0])
    strict = dict(invalid="raise", divide="raise", over="raise", under="ignore")
    with np.errstate(**strict):
        codes = classify(a, n, z, rtol=1e300, atol=0.0, noise_factor=1e10)
        rel = relative_error(a, n)
    # The step study does not guard overflow (inf then is an honest answer); invalid
    # operations and divisions by zero it does.
    with np.errstate(invalid="raise", divide="raise", over="ignore", under="ignore"):
        study = step_study(*_nasty_study_inputs(), unit_roundoff=2**-53, rtol=1e-6, atol=0.0,
                           noise_factor=8.0, base_value=0.0)
        no_base = step_study(*_nasty_study_inputs(), unit_roundoff=2**-53, rtol=1e-6, atol=0.0,
                             noise_factor=8.0, base_value=float("inf"))
        # an infinite claim (0 * inf in the tolerance) at a point whose one-sided slopes
        # are -inf and +inf (0 * inf in the kink slack), central slopes all 0
        flat = lambda idx, steps: (np.full(1, -1e10), np.full(1, -1e10), np.full(1, 2e-300))  # noqa: E731
        at_inf = step_study(flat, np.arange(1), np.ones(1), np.array([np.inf]), flat(0, 0), base_value=0.0,
                            unit_roundoff=0.0, rtol=0.0, atol=0.0, noise_factor=8.0)
    assert at_inf.codes[0] == N and at_inf.left[0] == np.inf and at_inf.right[0] == -np.inf
    assert codes[0] == N and np.isnan(rel[0]) and np.isnan(rel[4]) and rel[2] == np.inf
    assert study.codes.dtype == np.uint8 and np.isnan(no_base.left).all()


def _nasty_study_inputs():
    """A step study whose evaluations give inf, NaN and zero-width steps."""
    values = {0.5: [np.inf, 1.0, 0.0], 1.0: [np.nan, 1.0, 0.0], 2.0: [1e308, -1e308, 0.0],
              4.0: [0.0, np.inf, 1.0], 8.0: [1.0, 1.0, 1.0], 16.0: [-np.inf, np.nan, 1.0]}

    def differencer(idx, steps):
        factor = float(steps[0])
        fp = np.array([values[factor][0]] * len(idx))
        fm = np.array([values[factor][1]] * len(idx))
        den = np.array([values[factor][2]] * len(idx))
        return fp, fm, den

    first = differencer(np.arange(2), np.ones(2))
    return differencer, np.arange(2), np.ones(2), np.array([1.0, np.nan]), first


# -- the step study: what it spends and what it reuses --------------------------------------
def test_the_study_reuses_the_first_step_and_pays_for_five_more():
    """Factors 1/2, 2, 4, 8, 16 are evaluated (2 evaluations per entry each); factor 1 is
    the pass already made."""
    calls = []
    x = np.array([0.3, -1.2, 2.0])
    h = np.full(3, 1e-3)

    def differencer(idx, steps):
        calls.append(np.asarray(steps) / h[idx])
        return np.sin(x[idx] + steps), np.sin(x[idx] - steps), 2 * steps

    first = differencer(np.arange(3), h)
    calls.clear()
    study = step_study(differencer, np.arange(3), h, np.cos(x), first, unit_roundoff=2**-53,
                       rtol=1e-6, atol=0.0, noise_factor=8.0)
    assert [float(c[0]) for c in calls] == [f for f in STUDY_FACTORS if f != 1.0]
    assert all(np.all(c == c[0]) for c in calls)
    assert study.evaluations == 2 * 5 * 3
    assert study.numeric.shape == study.bound.shape == study.left.shape == (3,)
    assert study.codes.dtype == np.uint8 and study.kink.dtype == bool


def test_richardson_is_exact_on_a_cubic():
    """For a cubic, Richardson's (4 D(s) - D(2s)) / 3 cancels the truncation exactly: the
    study's value is the derivative to round-off, far better than any plain difference."""
    h = np.array([1e-2])
    f = lambda t: 1.0 + 3.0 * t + 0.5 * t**2 + 7.0 * t**3  # noqa: E731  f'(0) = 3

    def differencer(idx, steps):
        s = float(steps[0])
        return np.array([f(s)]), np.array([f(-s)]), np.array([s - (-s)])

    study = step_study(differencer, np.arange(1), h, np.array([3.0]), differencer(np.arange(1), h),
                       unit_roundoff=2**-53, rtol=1e-6, atol=0.0, noise_factor=8.0)
    assert abs(study.numeric[0] - 3.0) < 1e-12  # a plain difference at h/2 is off by 1.75e-4
    assert study.codes[0] == P


def test_no_base_value_means_no_kink_test():
    """Without f(x) (or with f(x) not finite) there are no one-sided slopes: NaN, no kink."""
    differencer = lambda idx, steps: (np.abs(steps) * 2, np.abs(steps) * 2, 2 * steps)  # noqa: E731
    for base in (None, float("nan")):
        study = step_study(differencer, np.arange(3), np.full(3, 1e-3), np.zeros(3),
                           differencer(np.arange(3), np.full(3, 1e-3)), base_value=base,
                           unit_roundoff=2**-53, rtol=1e-6, atol=0.0, noise_factor=8.0)
        assert study.left.shape == study.right.shape == study.kink.shape == (3,)
        assert np.isnan(study.left).all() and np.isnan(study.right).all()
        assert study.kink.dtype == bool and not study.kink.any()


def _kink_case(gaps, *, rtol=0.0, unit=0.0, k=8.0, claim=0.0, right=2.0, rights=None, f0=0.0, half=1.0):
    """A study at a point where f(x) = ``f0`` whose one-sided slopes are exact: at the
    factors 1/2, 1, 2 the right slope is ``rights[j]`` (default ``right``) and the gap
    between right and left slopes is ``gaps[j]``; larger factors repeat the last ones.
    Half-steps are ``factor * half``, so the central slopes agree at every factor and
    the study's bound is round-off alone."""
    rights = rights or (right,) * 3
    rows = dict(zip((0.5, 1.0, 2.0), zip(rights, gaps)))

    def differencer(idx, steps):
        factor = float(steps[0])
        r, gap = rows.get(factor, rows[2.0])
        h = factor * half
        return np.array([f0 + r * h]), np.array([f0 - (r - gap) * h]), np.array([2 * h])

    return step_study(differencer, np.arange(1), np.ones(1), np.array([claim]),
                      differencer(np.arange(1), np.ones(1)), base_value=f0, unit_roundoff=unit,
                      rtol=rtol, atol=0.0, noise_factor=k)


@pytest.mark.parametrize("gaps, kink", [
    ((0.0, 0.0, 0.0), False),   # one-sided slopes agree exactly: never a kink, even with no noise
    ((4.0, 3.0, 3.0), True),    # |g0 - g1| == g0/4: still stable
    ((4.0, 4.0, 3.0), True),    # |g1 - g2| == g1/4: still stable
    ((4.0, 5.0, 6.0), True),    # drifting by a quarter of the previous gap at each step
    ((4.0, 2.9, 2.9), False),   # more than a quarter apart
    ((4.0, 4.0, 2.9), False),
    ((4.0, 4.0, 5.0), True),
    ((4.0, 4.0, 5.1), False),
])
def test_kink_needs_a_gap_stable_within_a_quarter(gaps, kink):
    """The gap between one-sided slopes must be nonzero and stable within 25% from h/2 to
    h and from h to 2h (boundaries included)."""
    assert bool(_kink_case(gaps).kink[0]) is kink


THRESHOLD = 10 * 0.04 * 10.0  # 10 * rtol * the larger one-sided slope (10)


@pytest.mark.parametrize("gap, kink", [
    (THRESHOLD, False),                          # exactly at the threshold is not enough
    (np.nextafter(THRESHOLD, np.inf), True),
    (0.9 * THRESHOLD, False),
    (1.08 * THRESHOLD, True),
])
def test_kink_gap_must_exceed_ten_rtol_times_the_slope(gap, kink):
    """With rtol 0.04 and one-sided slopes 10 and 10 - gap, the gap must exceed
    10 * 0.04 * 10 (no round-off here)."""
    assert bool(_kink_case((gap, gap, gap), rtol=0.04, right=10.0).kink[0]) is kink


def test_kink_threshold_uses_the_slopes_at_the_smallest_step():
    """The slope scale of the threshold is max(|left|, |right|) at h/2: here 10 (at h the
    slopes are 20 and 15.5, which would demand a gap above 8 or 6.2)."""
    case = _kink_case((4.5, 4.5, 4.5), rtol=0.04, rights=(10.0, 20.0, 20.0))
    assert case.kink[0] and case.left[0] == 5.5 and case.right[0] == 10.0


@pytest.mark.parametrize("margin, kink", [(1.01, False), (0.99, True)])
def test_kink_gap_must_exceed_the_roundoff_at_the_smallest_step(margin, kink):
    """The gap must exceed k * u * (|f(x+h/2)| + |f(x-h/2)| + 2|f(x)|) / (h/2 / 2).
    Here f(x) = 1, slopes 2 and 1, half-step 0.25 at h/2: |f+| + |f-| + 2|f0| = 1.5 +
    0.75 + 2, so k * noise = 8 * 17 u (at h it would be 8 * 9 u)."""
    gap = 1.0
    u = gap / (8.0 * 17.0) * margin
    case = _kink_case((gap, gap, gap), unit=u, f0=1.0, half=0.5)
    assert bool(case.kink[0]) is kink


@pytest.mark.parametrize("claim, code", [
    (6.0, K), (10.3, K), (10.4, K), (10.5, M),   # right slope 10, slack rtol * 10 = 0.4
    (1.7, K), (1.6, K), (1.5, M),                 # left slope 2
])
def test_a_claim_between_the_one_sided_slopes_is_a_kink_outside_is_a_mismatch(claim, code):
    """At a kink (slopes 2 and 10), a claim between them, widened by atol + rtol *
    max(|left|, |right|) + bound on each side (edges included), is KINK; outside is
    MISMATCH."""
    case = _kink_case((8.0, 8.0, 8.0), rtol=0.04, right=10.0, claim=claim)
    assert case.kink[0] and case.bound[0] == 0.0
    assert (case.left[0], case.right[0]) == (2.0, 10.0)
    assert int(case.codes[0]) == code


def test_a_kink_claim_edge_includes_the_bound():
    """With round-off the slack grows by the study's bound."""
    inside = _kink_case((4.0, 4.0, 4.0), claim=0.5, unit=1e-3)
    assert inside.kink[0] and inside.codes[0] == K and inside.bound[0] > 0
    assert _kink_case((4.0, 4.0, 4.0), claim=2.0 + inside.bound[0], unit=1e-3).codes[0] == K
    assert _kink_case((4.0, 4.0, 4.0), claim=-2.0 - inside.bound[0], unit=1e-3).codes[0] == K
    assert _kink_case((4.0, 4.0, 4.0), claim=2.0 + 1.01 * inside.bound[0], unit=1e-3).codes[0] == M


# -- precision: the rule judges float64 values -------------------------------------------------
LONG = np.longdouble
EXTENDED = np.finfo(LONG).eps < np.finfo(np.float64).eps
extended_only = pytest.mark.skipif(not EXTENDED, reason="longdouble is float64 on this platform")


@extended_only
def test_the_rule_rounds_every_input_to_float64_as_the_kernel_does():
    """classify judges float64 values (the compiled kernel reads float64): a claim 2**-60
    above 1 in extended precision is 1.0, so it equals a numeric 1.0 (PASS), and a
    noise 2**-60 below 1 is 1.0 (UNCHECKED at scale 1). A noise a hair (2**-112) below
    2**-52 is 2**-52: with a numeric 1 + 2**-52 the error equals the tolerance, a PASS
    (err == tol is no MISMATCH); kept in extended precision it would be a MISMATCH."""
    one_plus = LONG(1) + LONG(2) ** -60
    one_minus = LONG(1) - LONG(2) ** -60
    kw = dict(rtol=0.0, atol=0.0, noise_factor=1.0)
    assert classify(np.array([one_plus]), np.array([1.0]), np.array([0.0]), **kw)[0] == P
    assert classify(np.array([1.0]), np.array([one_plus]), np.array([0.0]), **kw)[0] == P
    assert classify(np.array([1.0]), np.array([1.0]), np.array([one_minus]), **kw)[0] == U
    ulp = 2.0**-52
    hair_below = LONG(ulp) * (1 - LONG(2) ** -60)
    assert float(hair_below) == ulp and hair_below < ulp  # extended precision tells them apart
    assert classify(np.array([1.0]), np.array([1.0 + ulp]), np.array([ulp]), **kw)[0] == P
    assert classify(np.array([1.0]), np.array([1.0 + ulp]), np.array([hair_below]), **kw)[0] == P
    # negative control: the next float64 below 2**-52 is a MISMATCH
    assert classify(np.array([1.0]), np.array([1.0 + ulp]), np.array([np.nextafter(ulp, 0)]), **kw)[0] == M
    rel = relative_error(np.array([one_plus]), np.array([1.0]))
    assert rel.dtype == np.float64 and rel[0] == 0.0
    rel = relative_error(np.array([1.0]), np.array([one_plus]))
    assert rel.dtype == np.float64 and rel[0] == 0.0


@extended_only
def test_the_step_study_judges_float64_claims():
    """The step study, too, rounds the claim to float64 before judging it."""
    one_plus = LONG(1) + LONG(2) ** -60

    def differencer(idx, steps):  # f(t) = t: every slope is exactly 1
        return steps.copy(), -steps, 2 * steps

    first = differencer(np.arange(1), np.ones(1))
    study = step_study(differencer, np.arange(1), np.ones(1), np.array([one_plus]), first,
                       unit_roundoff=0.0, rtol=0.0, atol=0.0, noise_factor=8.0)
    assert study.numeric[0] == 1.0 and study.bound[0] == 0.0
    assert study.codes[0] == P


# -- the step study against its documented formulas ------------------------------------------
def _max(a, b):
    """np.maximum on scalars: the first when it is NaN or not smaller, else the second."""
    return a if (a >= b or a != a) else b


def _min(a, b):
    """np.minimum on scalars: the first when it is NaN or not larger, else the second."""
    return a if (a <= b or a != a) else b


def _study_model(raw, analytic, base_value, unit, rtol, atol, k, res):
    """The step study re-derived entry by entry from the module docstring and comments of
    ``gradcheck._refine.study`` (float64 scalars, the same operation order)."""
    f64 = np.float64
    count = len(analytic)
    out = {key: [] for key in ("numeric", "bound", "codes", "left", "right", "kink")}
    lower = STUDY_FACTORS[:-1]
    for i in range(count):
        fp = {s: f64(raw[s][0][i]) for s in STUDY_FACTORS}
        fm = {s: f64(raw[s][1][i]) for s in STUDY_FACTORS}
        den = {s: f64(raw[s][2][i]) for s in STUDY_FACTORS}
        D = {s: (fp[s] - fm[s]) / den[s] for s in STUDY_FACTORS}
        noise = {s: unit * (abs(fp[s]) + abs(fm[s])) / abs(den[s]) for s in STUDY_FACTORS}
        half = {s: abs(den[s]) / 2.0 for s in STUDY_FACTORS}
        parts = [abs(D[s] - D[2 * s]) * half[s] for s in (0.5, 1.0, 2.0)]
        measured = parts[0]
        for p in parts[1:]:
            measured = _max(measured, p)
        bn = {s: _max(k * noise[s], 3.0 * measured / half[s]) for s in STUDY_FACTORS}
        cands = [(D[s], bn[s] + abs(D[2 * s] - D[s]) / 3.0) for s in lower]
        R = {s: ((4.0 * D[s] - D[2 * s]) / 3.0, (4.0 * bn[s] + bn[2 * s]) / 3.0) for s in lower}
        cands += [(R[s][0], R[s][1] + abs(R[s][0] - R[2 * s][0])) for s in lower[:-1]]
        bounds = [b if (math.isfinite(b) and math.isfinite(v)) else math.inf for v, b in cands]
        best = bounds.index(min(bounds))
        value, bound = cands[best][0], f64(bounds[best])
        a = f64(analytic[i])
        err, scale = abs(a - value), _max(abs(a), abs(value))
        floor = atol + 1.0 * bound  # the verdict rule with the whole bound as its floor (k = 1)
        tol = floor + rtol * scale
        code = P
        if scale <= floor or tol > res * scale:
            code = U
        if err > tol:
            code = M
        if not (math.isfinite(value) and math.isfinite(a) and math.isfinite(bound)):
            code = N
        left = right = f64("nan")
        kink = False
        if base_value is not None and math.isfinite(base_value):
            f0 = f64(base_value)
            gaps, lefts, rights, noises = [], [], [], []
            for s in (0.5, 1.0, 2.0):
                h2 = den[s] / 2.0
                rights.append((fp[s] - f0) / h2)
                lefts.append((f0 - fm[s]) / h2)
                gaps.append(rights[-1] - lefts[-1])
                noises.append(unit * (abs(fp[s]) + abs(fm[s]) + 2 * abs(f0)) / h2)
            g0, g1, g2 = gaps
            sc = _max(abs(lefts[0]), abs(rights[0]))
            significant = abs(g0) > k * noises[0] + 10 * rtol * sc
            stable = abs(g0 - g1) <= 0.25 * abs(g0) and abs(g1 - g2) <= 0.25 * abs(g1)
            kink = bool(significant and stable and math.isfinite(g0))
            left, right = lefts[0], rights[0]
            lo, hi = _min(left, right), _max(left, right)
            slack = atol + rtol * _max(abs(lo), abs(hi)) + bound
            inside = (a >= lo - slack) and (a <= hi + slack)
            if kink and inside and code != N:
                code = K
            if kink and not inside and math.isfinite(a):
                code = M
        for key, v in zip(out, (value, bound, code, left, right, kink)):
            out[key].append(v)
    return out


def _smooth(coefs, kink, wiggle, t):
    c1, c2, c3, c5 = coefs
    return c1 * t + c2 * t * t + c3 * t**3 + c5 * t**5 + kink * abs(t) + wiggle * math.sin(1e4 * t)


finite = st.floats(-10, 10, allow_nan=False)
odd = st.sampled_from([0.0, -0.0, np.nan, np.inf, -np.inf, 1e308, 5e-324, 1.0])


@st.composite
def studies(draw):
    """Raw evaluations for a few entries: smooth functions with kinks and round-off-like
    wiggles at random steps, or arbitrary values (NaN, inf, zero steps)."""
    count = draw(st.integers(1, 4))
    raw = {s: (np.empty(count), np.empty(count), np.empty(count)) for s in STUDY_FACTORS}
    analytic = np.empty(count)
    for i in range(count):
        if draw(st.booleans()):
            coefs = draw(st.tuples(finite, finite, finite, finite))
            kink = draw(st.sampled_from([0.0, 0.0, 1e-6, 1e-3, 1.0]))
            wiggle = draw(st.sampled_from([0.0, 1e-14, 1e-10, 1e-6]))
            h = draw(st.sampled_from([1e-5, 1e-3, 1e-2, 1e-1]))
            for s in STUDY_FACTORS:
                t = s * h
                raw[s][0][i], raw[s][1][i] = _smooth(coefs, kink, wiggle, t), _smooth(coefs, kink, wiggle, -t)
                raw[s][2][i] = t - (-t)
            truth = coefs[0]
            analytic[i] = draw(st.sampled_from([truth, truth * (1 + 1e-7), truth * (1 + 1e-3), truth + kink / 2,
                                                truth - 2 * kink, 0.0]))
        else:
            for s in STUDY_FACTORS:
                for j in range(3):
                    raw[s][j][i] = draw(finite | odd)
            analytic[i] = draw(finite | odd)
    base = draw(st.sampled_from([0.0, 0.0, 1.0, np.nan, None]))
    unit = draw(st.sampled_from([0.0, 2.0**-53, 2.0**-24, 1e-3]))
    rtol = draw(st.sampled_from([0.0, 1e-6, 1e-3, 0.2]))
    atol = draw(st.sampled_from([0.0, 1e-12, 1e-3]))
    k = draw(st.sampled_from([0.0, 1.0, 8.0]))
    res = draw(st.sampled_from([0.01, 0.5, 0.999]))
    return raw, analytic, base, unit, rtol, atol, k, res


@settings(max_examples=max(100, settings.default.max_examples))  # the mutation run's power: mutation/README.md
@given(studies())
def test_step_study_computes_its_documented_estimates(case):
    """On smooth functions, kinks, round-off wiggles and arbitrary values, the step study
    gives exactly (bit for bit) the estimates, bounds, verdicts, one-sided slopes and kink
    flags its documented formulas give, computed entry by entry. The descent to smaller
    steps that follows the ladder (:mod:`gradcheck._refine.descent`, its own tests in
    test_step_oscillating.py) is held to what the ladder gave: this table has its steps only."""
    raw, analytic, base, unit, rtol, atol, k, res = case
    count = analytic.size

    def differencer(idx, steps):
        return raw[float(steps[0])]

    def ladder_only(differencer, flat_indices, steps, analytic, study, half_step, **kw):
        numeric, bound, codes = study
        return numeric, bound, codes, np.zeros(codes.size, dtype=bool), 0

    with np.errstate(all="ignore"), mock.patch("gradcheck._refine.study.descend", ladder_only):
        study = step_study(differencer, np.arange(count), np.ones(count), analytic, raw[1.0],
                           base_value=base, unit_roundoff=unit, rtol=rtol, atol=atol, noise_factor=k,
                           resolution=res)
        want = _study_model(raw, analytic, base, unit, rtol, atol, k, res)
    for key in ("numeric", "bound", "left", "right"):
        np.testing.assert_array_equal(getattr(study, key), np.array(want[key], dtype=np.float64), err_msg=key)
    assert study.codes.tolist() == want["codes"]
    assert study.kink.tolist() == want["kink"]


# --- resolved_share and the tolerance keywords (added to the mutated modules after 2026-11-29) ---

@pytest.mark.parametrize("analytic, numeric, tol, want", [
    (2.0, -3.0, 0.75, 0.25),        # the larger magnitude of the two, signs ignored
    (-3.0, 2.0, 0.75, 0.25),
    (-4.0, 0.0, 1.0, 0.25),         # one side zero: the other's magnitude
    (0.0, -4.0, 1.0, 0.25),
    (0.0, 0.0, 1.0, math.inf),      # nothing to share: inf, not nan
    (0.0, 0.0, 0.0, math.inf),
    (1e-310, 0.0, 1e300, math.inf),  # overflow of the share: inf, no warning
    (0.5, 0.0, 0.25, 0.5),          # a magnitude below 1 is a scale like any other
    (-0.5, 0.25, 0.125, 0.25),
])
def test_resolved_share_is_the_tolerance_over_the_larger_magnitude(analytic, numeric, tol, want):
    from gradcheck._classify.rule import resolved_share

    with np.errstate(all="raise"):  # the function's own guard must hold, whatever the caller's
        got = resolved_share(np.array([analytic]), [numeric], [tol])
    assert got.dtype == np.float64 and got.shape == (1,)
    assert got[0] == want


def test_resolved_share_is_elementwise_over_arrays():
    from gradcheck._classify.rule import resolved_share

    got = resolved_share([1.0, -8.0, 0.0], [2.0, 4.0, 0.0], np.array([1.0, 2.0, 5.0], dtype=np.float32))
    assert got.tolist() == [0.5, 0.25, math.inf]


def test_tolerance_keywords_validate_and_map_to_their_fields():
    from gradcheck._core.config import KEYWORD_FIELDS, Tuning, as_config, with_keywords

    assert as_config(None) is None
    cfg = Config(rtol=1e-4)
    assert as_config(cfg) is cfg
    with pytest.raises(TypeError, match=r"Config\(\*\*\{'rtol': 1e-05\}\)"):
        as_config({"rtol": 1e-5})
    with pytest.raises(TypeError, match="config must be a gradcheck.Config or None"):
        as_config(3)
    # eps is the step; every keyword is kept, in the order given, as a float
    none, tuning = with_keywords(None, rtol=0.25, eps=2e-6, atol=None, resolution=0.5, noise_factor=4)
    assert none is None
    assert tuning.fields == (("rtol", 0.25), ("step", 2e-6), ("resolution", 0.5), ("noise_factor", 4.0))
    assert all(type(v) is float for _, v in tuning.fields)
    assert bool(tuning) and not bool(Tuning()) and not bool(with_keywords(None, rtol=None)[1])
    assert tuning.keywords() == {"rtol": 0.25, "eps": 2e-6, "resolution": 0.5, "noise_factor": 4.0}
    assert tuning.names() == ["rtol", "eps", "resolution", "noise_factor"]
    assert tuning.names(leaving=("step", "rtol")) == ["resolution", "noise_factor"]
    base = Config()
    applied = tuning.apply(base)
    assert (applied.rtol, applied.step, applied.resolution, applied.noise_factor, applied.atol) == (
        0.25, 2e-6, 0.5, 4.0, base.atol)
    only = tuning.apply(base, only=("step",))
    assert (only.rtol, only.step, only.resolution) == (base.rtol, 2e-6, base.resolution)
    assert Tuning().apply(base) is base and tuning.apply(base, only=("atol",)) is base
    assert base.replace(rtol=3e-3).rtol == 3e-3 and base.rtol != 3e-3  # a copy, base untouched
    assert set(KEYWORD_FIELDS) == {"rtol", "atol", "eps", "resolution", "noise_factor"}
    # each keyword names itself when wrong, with what it means (the whole message, as users read it)
    exact = {("eps", 0.0): "eps must be a positive number (finite, the relative step: h_i = eps * max(1, |x_i|)), "
                           "got 0.0",
             ("resolution", 1.5): "resolution must be a number in (0, 1) (the largest tolerance, as a share of the "
                                  "value, at which an entry may PASS), got 1.5"}
    for (keyword, value), message in exact.items():
        with pytest.raises(ValueError) as info:
            with_keywords(None, **{keyword: value})
        assert str(info.value) == message
    with pytest.raises(TypeError) as info:
        as_config(3)
    assert str(info.value) == "config must be a gradcheck.Config or None, got 3 (a int)"
    for keyword, value, words in [("eps", 0.0, "eps.*relative step"), ("eps", -1.0, "eps"),
                                  ("resolution", 1.5, "resolution.*largest tolerance"),
                                  ("resolution", -0.1, "resolution"), ("rtol", -1.0, "rtol"),
                                  ("atol", -1e-9, "atol"), ("noise_factor", float("nan"), "noise_factor"),
                                  ("rtol", "x", "rtol")]:
        with pytest.raises((TypeError, ValueError), match=words):
            with_keywords(None, **{keyword: value})
    assert with_keywords(None, atol=0.0)[1].fields == (("atol", 0.0),)
    assert with_keywords(None, resolution=0.999)[1].fields == (("resolution", 0.999),)
    with pytest.raises(ValueError, match=r"resolution must be a number in \(0, 1\)"):
        with_keywords(None, resolution=1.0)
    with pytest.raises(TypeError, match=r"not a tolerance keyword: \['step'\]"):
        with_keywords(None, step=1e-6)


def test_tolerance_keywords_beside_a_config():
    from gradcheck._core.config import with_keywords

    # a field the config left at its preset takes the keyword; one it set must agree
    cfg, tuning = with_keywords(Config(atol=1e-9), rtol=1e-5)
    assert (cfg.rtol, cfg.atol, bool(tuning)) == (1e-5, 1e-9, False)
    same, _ = with_keywords(Config(rtol=1e-4), rtol=1e-4)
    assert same.rtol == 1e-4
    with pytest.raises(ValueError) as info:
        with_keywords(Config(rtol=1e-4), rtol=1e-5)
    assert str(info.value) == "rtol=1e-05 conflicts with config.rtol=0.0001: give rtol once (in config= or as the keyword)"
    with pytest.raises(ValueError, match=r"^eps=1e-05 conflicts with config.step=0.0001"):
        with_keywords(Config(step=1e-4), eps=1e-5)
    f32 = Config.for_dtype("float32")  # its preset is float32's, not float64's
    assert with_keywords(f32, rtol=5e-3)[0].rtol == 5e-3
    assert with_keywords(Config(rtol=1e-4), rtol=None)[0].rtol == 1e-4


_NOT_BELOW = ("rtol={r} is not below resolution={s}: a PASS needs its whole tolerance (rtol * value + noise) "
              "within resolution * value, so nothing could pass; raise resolution (e.g. resolution={e}) or lower rtol")


@pytest.mark.parametrize("fields, error, message", [
    (dict(refine=1), TypeError, "refine must be True or False, got 1 (a int)"),
    (dict(refine_noisy="y"), TypeError, "refine_noisy must be True or False, got 'y' (a str)"),
    (dict(second_look=-1), ValueError,
     "second_look must be a finite number >= 0 (the second look's budget, in first passes) or None, got -1"),
    (dict(dtype="float8"), ValueError, "dtype='float8' is not one of ('float64', 'float32', 'float16', 'bfloat16')"),
    (dict(resolution=0.0), ValueError, "resolution must be a number in (0, 1) (the largest tolerance, as a share of "
                                       "the value, at which an entry may PASS), got 0.0"),
    (dict(rtol=0.3, resolution=0.2), ValueError, _NOT_BELOW.format(r=0.3, s=0.2, e=0.5)),
    (dict(rtol=0.05, resolution=0.01), ValueError, _NOT_BELOW.format(r=0.05, s=0.01, e=0.1)),
    (dict(rtol=0.01, resolution=0.01), ValueError, _NOT_BELOW.format(r=0.01, s=0.01, e=0.02)),  # equal: refused
])
def test_config_refuses_each_field_with_its_whole_message(fields, error, message):
    """What a user reads for each wrong field, word for word (the messages of issue 25's door)."""
    with pytest.raises(error) as info:
        Config(**fields)
    assert str(info.value) == message


def test_config_accepts_what_its_fields_allow():
    assert Config(second_look=None).second_look is None
    assert Config(second_look=0).second_look == 0
    assert Config(rtol=0.009, resolution=0.01).rtol == 0.009  # just below: accepted
    assert Config(refine=False, refine_noisy=True).refine is False
    assert Config(dtype="bfloat16", rtol=0.1, resolution=0.2).dtype == "bfloat16"


# --- 2026-12-03: the survivors of the run on 953 mutants (tests/mutation/README.md) --------------

@extended_only
def test_resolved_share_is_that_of_the_float64_values_the_rule_judges():
    """The share reported for an entry is its tolerance over max(|a|, |n|) of the float64
    values the rule judged (``classify`` rounds every input to float64): extended-precision
    inputs a hair off the float64 ones give the float64 answer, as a float64."""
    from gradcheck._classify.rule import resolved_share

    one_plus = LONG(1) + LONG(2) ** -60          # float64: 1.0
    half_plus = LONG(0.5) + LONG(2) ** -61       # float64: 0.5
    for analytic, numeric, tol in ((one_plus, 1.0, 0.5), (1.0, one_plus, 0.5), (1.0, 1.0, half_plus),
                                   (-one_plus, one_plus, half_plus)):
        got = resolved_share(np.array([analytic]), np.array([numeric]), np.array([tol]))
        assert got.dtype == np.float64 and got[0] == 0.5, (analytic, numeric, tol, got)


@extended_only
def test_the_kink_test_takes_f_at_x_as_float64():
    """f(x) is taken as float64, like f(x +- s): for f(t) = 1 + t (exact at the dyadic steps
    1/2, 1, 2) with f(x) given as 1 + 2**-60 in extended precision (1.0 in float64), both
    one-sided slopes are exactly 1 and there is no kink."""
    base = LONG(1) + LONG(2) ** -60

    def differencer(idx, steps):
        return 1.0 + steps, 1.0 - steps, 2 * steps

    study = step_study(differencer, np.arange(1), np.ones(1), np.array([1.0]), differencer(np.arange(1), np.ones(1)),
                       base_value=base, unit_roundoff=0.0, rtol=0.0, atol=0.0, noise_factor=8.0)
    assert study.left.dtype == study.right.dtype == np.float64
    assert (study.left[0], study.right[0]) == (1.0, 1.0)
    assert not study.kink[0] and study.codes[0] == P


@extended_only
def test_the_kink_edge_judges_the_float64_claim():
    """At a kink with one-sided slopes 2 and 8 (rtol 2**-6, no round-off: slack rtol * 8 =
    0.125, bound 0), the claim's edge is 8.125 exactly (KINK, edge included). A claim 2**-60
    above it in extended precision is 8.125 in float64: KINK too; the next float64 above
    is outside (MISMATCH)."""
    rtol = 2.0**-6
    at_edge = _kink_case((6.0, 6.0, 6.0), rtol=rtol, right=8.0, claim=8.125)
    assert at_edge.kink[0] and at_edge.bound[0] == 0.0 and (at_edge.left[0], at_edge.right[0]) == (2.0, 8.0)
    assert at_edge.codes[0] == K
    hair_above = LONG(8.125) + LONG(2) ** -60
    assert hair_above > 8.125 and float(hair_above) == 8.125
    assert _kink_case((6.0, 6.0, 6.0), rtol=rtol, right=8.0, claim=hair_above).codes[0] == K
    assert _kink_case((6.0, 6.0, 6.0), rtol=rtol, right=8.0, claim=np.nextafter(8.125, 9.0)).codes[0] == M


# f(z) = F + z with F = 2**50 (float64 spacing 0.25 there): f's round-off at a step s is
# ~ u F / s, so the ladder's differences (steps 0.5 .. 16) are resolved only to ~0.1 and the
# descent's smaller steps only to ~1 or worse (the checker's arithmetic, f evaluated in float64).
_BIG_F = 2.0**50


def _counting_big_f(calls):
    def differencer(idx, steps):
        calls.append(2 * len(idx))  # one f(x+s) and one f(x-s) per entry
        s = np.asarray(steps, dtype=np.float64)
        return _BIG_F + s, _BIG_F - s, 2 * s
    return differencer


def test_the_descent_is_counted_and_its_unconfirmed_mismatch_is_unsettled():
    """Slope 1 at steps of 1 (above LARGE_STEP): the claim 2 is a MISMATCH of the ladder
    (bound ~0.13 at 8h), the claim 1 is UNCHECKED (its tolerance ~0.13 exceeds 1% of it).
    Both descend; no smaller step resolves f's round-off, so both end UNCHECKED, and the
    MISMATCH the descent did not confirm is ``unsettled`` (bool, as documented); the
    UNCHECKED one is not (it was never a MISMATCH). ``evaluations`` is every f call the
    study made, the descent's included: what the differencer received, after the first step."""
    calls: list[int] = []
    differencer = _counting_big_f(calls)
    idx, h = np.arange(2), np.ones(2)
    first = differencer(idx, h)
    calls.clear()
    study = step_study(differencer, idx, h, np.array([2.0, 1.0]), first, unit_roundoff=2.0**-53,
                       rtol=1e-6, atol=0.0, noise_factor=8.0)
    assert study.codes.tolist() == [U, U]
    assert study.unsettled.dtype == bool and study.unsettled.tolist() == [True, False]
    assert sum(calls) > 2 * 5 * 2  # the descent ran: more than the ladder's five factors
    assert study.evaluations == sum(calls)


@pytest.mark.parametrize("step, descends", [
    (1e-2, False),                        # LARGE_STEP itself is not above LARGE_STEP
    (np.nextafter(1e-2, 1.0), True),
])
def test_an_unchecked_descends_only_above_the_large_step(step, descends):
    """An UNCHECKED entry (claim 1, f's round-off at these steps ~6, far above 1% of the
    value) descends to smaller steps only when its step is above LARGE_STEP = 1e-2
    (``gradcheck._refine.descent``: "a step above LARGE_STEP"); at 1e-2 the ladder's five
    factors are all it costs."""
    from gradcheck._refine.descent import LARGE_STEP

    assert LARGE_STEP == 1e-2
    calls: list[int] = []
    differencer = _counting_big_f(calls)
    idx, h = np.arange(1), np.full(1, step)
    first = differencer(idx, h)
    calls.clear()
    study = step_study(differencer, idx, h, np.array([1.0]), first, unit_roundoff=2.0**-53,
                       rtol=1e-6, atol=0.0, noise_factor=8.0)
    assert study.codes[0] == U
    assert study.evaluations == sum(calls)
    assert (sum(calls) > 2 * 5) is descends


def test_the_study_table_holds_each_factors_central_difference():
    """``slopes`` (for the report) is D(factor * h) for each of STUDY_FACTORS, one column per
    entry: for f(t) = (1 + t)^3 at x = 0 the central difference at step s is exactly
    3 + s^2 (dyadic steps, every value exact in float64)."""
    h = np.full(2, 2.0**-7)

    def differencer(idx, steps):
        s = np.asarray(steps, dtype=np.float64)
        return (1.0 + s) ** 3, (1.0 - s) ** 3, 2 * s

    study = step_study(differencer, np.arange(2), h, np.array([3.0, 3.0]), differencer(np.arange(2), h),
                       unit_roundoff=2.0**-53, rtol=1e-6, atol=0.0, noise_factor=8.0)
    want = np.array([[3.0 + (f * 2.0**-7) ** 2] * 2 for f in STUDY_FACTORS])
    assert study.slopes is not None and study.slopes.shape == (len(STUDY_FACTORS), 2)
    np.testing.assert_array_equal(study.slopes, want)
    assert study.codes.tolist() == [P, P]
