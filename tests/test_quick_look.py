"""The quick look at noisy PASS entries (8h and 16h before the full step study): it
certifies only what the full study would pass, it is sound against closed-form
derivatives, and it saves evaluations where f is badly scaled."""
from __future__ import annotations

import numpy as np
import pytest
from zoo import CASES

import gradcheck
import gradcheck._refine.second_look as judge  # QUICK_LOOK
from gradcheck import Verdict
from gradcheck._refine.quick import QUICK_FACTORS, quick_certify
from gradcheck._refine.study import STUDY_FACTORS, step_study

U = 2.0**-53


def rosen(x):
    return float((100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2).sum())


def rosen_grad(x):
    """Closed form, written independently of the checker."""
    g = np.zeros_like(x)
    a = x[1:] - x[:-1] ** 2
    g[:-1] += -400.0 * x[:-1] * a - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * a
    return g


def _differencer(f, x):
    """Central differences of f at x along flat indices (the checker's arithmetic)."""
    def differencer(idx, h):
        fp, fm, den = [], [], []
        for i, s in zip(idx, h):
            xp, xm = x.copy(), x.copy()
            xp[i] += s
            xm[i] -= s
            fp.append(f(xp))
            fm.append(f(xm))
            den.append(xp[i] - xm[i])
        return np.array(fp), np.array(fm), np.array(den)
    return differencer


def _look(f, x, claim, step=6e-6):
    idx = np.arange(x.size)
    h = step * np.maximum(1.0, np.abs(x))
    diff = _differencer(f, x)
    return quick_certify(diff, idx, h, claim, diff(idx, h), base_value=f(x), unit_roundoff=U,
                         rtol=1e-6, atol=0.0, noise_factor=8.0)


@pytest.fixture
def full_study(monkeypatch):
    monkeypatch.setattr(judge, "QUICK_LOOK", False)


def _with_and_without(f, x, claim):
    quick = gradcheck.check(f, x, claim, adjudicate=False, engine="serial")
    judge.QUICK_LOOK = False
    try:
        full = gradcheck.check(f, x, claim, adjudicate=False, engine="serial")
    finally:
        judge.QUICK_LOOK = True
    return quick, full


def test_rosenbrock_verdicts_equal_the_full_study_with_fewer_evaluations():
    """Badly scaled f (|f| ~ 1e4, a sum of 800 terms): most entries are noisy PASSes. With
    the quick look the verdicts are the full study's at every entry, correct claim and
    planted bugs of 1e-6.5 ... 1e-4.5 (both sides of rtol = 1e-6) alike, in fewer
    evaluations."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-2.0, 2.0, 800)
    good = rosen_grad(x)
    bad = good.copy()
    bugs = rng.choice(x.size, 80, replace=False)
    bad[bugs] *= 1 + 10 ** rng.uniform(-6.5, -4.5, bugs.size) * rng.choice([-1, 1], bugs.size)
    for claim in (good, bad):
        quick, full = _with_and_without(rosen, x, claim)
        np.testing.assert_array_equal(quick.codes, full.codes)
        assert quick.evaluations < full.evaluations - 2 * 100  # at least 100 entries certified early
    assert quick.counts[Verdict.MISMATCH] > 40  # the planted bugs above rtol are flagged


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_zoo_verdicts_do_not_change(case):
    """Every zoo case, correct and buggy claims: the quick look changes no verdict."""
    for claim in filter(None, (case.grad, case.buggy)):
        quick = gradcheck.check(case.f, case.x, claim, config=case.config, adjudicate=False, engine="serial")
        judge.QUICK_LOOK = False
        try:
            full = gradcheck.check(case.f, case.x, claim, config=case.config, adjudicate=False, engine="serial")
        finally:
            judge.QUICK_LOOK = True
        np.testing.assert_array_equal(quick.codes, full.codes)


def test_it_differences_at_8h_and_16h_only_and_counts_four_evaluations():
    calls = []
    x = np.linspace(0.5, 2.0, 5)
    diff = _differencer(lambda z: float((z**3).sum()), x)

    def counting(idx, h):
        calls.append(np.round(h / (6e-6 * np.maximum(1.0, np.abs(x[idx]))), 9)[0])
        return diff(idx, h)

    h = 6e-6 * np.maximum(1.0, np.abs(x))
    look = quick_certify(counting, np.arange(5), h, 3 * x**2, diff(np.arange(5), h), base_value=None,
                         unit_roundoff=U, rtol=1e-6, atol=0.0, noise_factor=8.0)
    assert calls == list(QUICK_FACTORS) and set(QUICK_FACTORS) <= set(STUDY_FACTORS)
    assert look.evaluations == 2 * 2 * 5 and set(look.raw) == set(QUICK_FACTORS)


def test_the_full_study_reuses_the_quick_looks_differences():
    x = np.linspace(0.5, 2.0, 4)
    diff = _differencer(lambda z: float((z**3).sum()), x)
    h = 6e-6 * np.maximum(1.0, np.abs(x))
    first = diff(np.arange(4), h)
    look = quick_certify(diff, np.arange(4), h, 3 * x**2, first, unit_roundoff=U, rtol=1e-6, atol=0.0,
                         noise_factor=8.0)
    seen = []
    study = step_study(lambda i, s: seen.append(s[0] / h[0]) or diff(i, s), np.arange(4), h, 3 * x**2, first,
                       unit_roundoff=U, rtol=1e-6, atol=0.0, noise_factor=8.0, measured=look.raw)
    assert sorted(np.round(seen, 9)) == [0.5, 2.0, 4.0] and study.evaluations == 2 * 3 * 4
    alone = step_study(diff, np.arange(4), h, 3 * x**2, first, unit_roundoff=U, rtol=1e-6, atol=0.0,
                       noise_factor=8.0)
    np.testing.assert_array_equal(study.codes, alone.codes)
    np.testing.assert_array_equal(study.numeric, alone.numeric)


def test_a_correct_claim_on_a_smooth_badly_scaled_f_is_certified():
    x = np.random.default_rng(5).uniform(-2.0, 2.0, 60)
    look = _look(rosen, x, rosen_grad(x))
    assert look.certified.mean() > 0.8


@pytest.mark.parametrize("error", [2e-6, 1e-5, -3e-6, 1e-3])
def test_a_claim_off_by_more_than_rtol_is_never_certified(error):
    """Independent reference: the closed-form gradient. Whatever the noise, a claim off by
    more than rtol relative is left to the full study."""
    x = np.random.default_rng(6).uniform(-2.0, 2.0, 200)
    look = _look(rosen, x, rosen_grad(x) * (1 + error))
    assert not look.certified.any()


def test_round_off_the_model_misses_is_measured_not_trusted():
    """f(x) = sum((C + x)^2 - C^2 - 2 C x) = sum(x^2) with C = 1e6: its real round-off
    (~u C^2) is ~1e12 times what the model u|f| predicts. A claim 1e-5 off the exact 2x
    must not be certified on the strength of the model."""
    C = 1e6

    def f(z):
        return float(((C + z) ** 2 - C**2 - 2 * C * z).sum())

    x = np.random.default_rng(7).uniform(0.5, 1.5, 40)
    look = _look(f, x, 2 * x * (1 + 1e-5))
    assert not look.certified.any()
    look_ok = _look(f, x, 2 * x)
    assert not look_ok.certified.any()  # nor is the right one: this f resolves nothing to 1e-6


def test_a_kink_is_not_certified():
    """At a kink of f = |x - x0| + 2x the one-sided slopes (1 and 3) do not converge: a
    claim equal to their mean (2, what the central difference sees) is left to the full
    study, which reports the kink."""
    x0 = np.array([0.3, -0.7, 1.1])

    def f(z):
        return float((np.abs(z - x0) + 2 * z).sum())

    look = _look(f, x0.copy(), np.full(3, 2.0))
    assert not look.certified.any()


def test_nonfinite_differences_are_not_certified():
    def f(z):
        return float(np.inf) if z[0] > 1.0 + 5e-5 else float((z**2).sum())

    x = np.array([1.0, 2.0])
    look = _look(f, x, 2 * x)
    assert not look.certified[0]


def test_a_lucky_agreement_at_8h_and_16h_does_not_beat_the_measured_round_off():
    """Synthetic differences: D(8h) and D(16h) agree on a value 1e-5 off the truth, and the
    modelled round-off is tiny, but D(h) scatters by 1e-3: that scatter is f's real
    round-off, so D(8h) is not trusted to 1e-6 and the claim equal to it is not certified."""
    truth, wrong = 2.0, 2.0 * (1 + 1e-5)
    h = np.array([1e-5])

    def at(slope, step, f0=1.0):
        half = step / 2
        return np.array([f0 + slope * half]), np.array([f0 - slope * half]), np.array([2 * half])

    first = at(truth + 2e-3, h[0] * 2)       # a scattered D(h); den = 2h
    raw = {8.0: at(wrong, 16 * h[0]), 16.0: at(wrong, 32 * h[0])}
    look = quick_certify(lambda i, s: raw[float(np.round(s[0] / h[0]))], np.arange(1), h, np.array([wrong]),
                         first, base_value=1.0, unit_roundoff=U, rtol=1e-6, atol=0.0, noise_factor=8.0)
    assert not look.certified[0]
    calm = at(wrong, h[0] * 2)               # D(h) agrees as well: certified
    look = quick_certify(lambda i, s: raw[float(np.round(s[0] / h[0]))], np.arange(1), h, np.array([wrong]),
                         calm, base_value=1.0, unit_roundoff=U, rtol=1e-6, atol=0.0, noise_factor=8.0)
    assert look.certified[0]


def test_truncation_is_measured_from_16h():
    """With a step large enough that D(8h) carries truncation error (sin(10 x), |f'''| ~
    1000), a claim equal to D(8h) itself is 1e-3 off the exact 10 cos(10 x) and is not
    certified: D(16h) moves by four times that error, and the bound counts it."""
    x = np.array([0.1, 0.4, 0.9])
    f = lambda z: float(np.sin(10 * z).sum())  # noqa: E731
    h = 1e-3 * np.ones(3)
    diff = _differencer(f, x)
    d8 = (lambda p, m, d: (p - m) / d)(*diff(np.arange(3), 8 * h))
    assert (np.abs(d8 - 10 * np.cos(10 * x)) > 1e-4 * np.abs(d8)).all()  # really biased
    look = quick_certify(diff, np.arange(3), h, d8, diff(np.arange(3), h), base_value=f(x),
                         unit_roundoff=U, rtol=1e-6, atol=0.0, noise_factor=8.0)
    assert not look.certified.any()


def test_a_difference_that_moves_between_8h_and_16h_is_not_certified():
    """Synthetic differences: D(h) and D(8h) agree, D(16h) moves by 1e-4 (f changes within
    16h of x): the truncation bound |D(16h) - D(8h)|/3 keeps D(8h) from being trusted to 1e-6."""
    h = np.array([1e-5])

    def at(slope, step, f0=1.0):
        half = step / 2
        return np.array([f0 + slope * half]), np.array([f0 - slope * half]), np.array([2 * half])

    raw = {8.0: at(2.0, 16 * h[0]), 16.0: at(2.0 + 1e-4, 32 * h[0])}
    look = quick_certify(lambda i, s: raw[float(np.round(s[0] / h[0]))], np.arange(1), h, np.array([2.0]),
                         at(2.0, 2 * h[0]), base_value=None, unit_roundoff=U, rtol=1e-6, atol=0.0,
                         noise_factor=8.0)
    assert not look.certified[0]


def test_an_infinite_claim_is_not_certified():
    x = np.array([0.5, 1.5])
    look = _look(lambda z: float((z**2).sum()), x, np.array([np.inf, 3.0]))
    assert not look.certified[0]


# -- the rule at its edges (written against the mutants of quick_certify / _smooth that
# -- survived the tests above; see tests/mutation/README.md) ---------------------------------------
H = 2.0**-10  # dyadic steps: x +- s, the slopes and the gaps below are exact in float64


def _table(first, at8, at16):
    """A differencer returning fixed (f_plus, f_minus, denominator) rows at 8h and 16h."""
    rows = {8.0: at8, 16.0: at16}

    def differencer(idx, steps):
        factor = float(np.round(steps[0] / H))
        return tuple(np.array([v] * len(idx), dtype=np.float64) for v in rows[factor])

    return differencer, tuple(np.array([v]) for v in first)


def _slope_rows(slope, factor, f0=0.0):
    """f(x +- s) of a function with the given central slope at x and no curvature."""
    s = factor * H
    return (f0 + slope * s, f0 - slope * s, 2 * s)


@pytest.mark.parametrize("d1, d16, bound", [
    # D(h) off by delta = 2/3 rtol: m = 2 delta h, bound = 3 m / 8h = 0.75 delta = rtol / 2
    (1.0 + 2e-6 / 3, 1.0, 0.5e-6),
    # D(16h) off by tau = 1.5 rtol: truncation bound tau / 3 = rtol / 2
    (1.0, 1.0 + 1.5e-6, 0.5e-6),
], ids=["D(h)-scattered", "D(16h)-moved"])
def test_the_bound_is_the_documented_one_and_certifies_exactly_up_to_it(d1, d16, bound):
    """Synthetic differences with D(8h) = 1 and either D(h) or D(16h) moved: D(8h)'s bound
    is max(k noise(8h), 3 m / half(8h)) + |D(16h) - D(8h)| / 3 with m = 2 |D(h) - D(8h)|
    half(h) (worked out by hand above; the modelled noise is ~1e-15 here). A claim is
    certified while |a - D(8h)| + bound <= rtol * scale: at 0.8 of the room left, yes;
    at 1.2 of it, no."""
    diff, first = _table(_slope_rows(d1, 1.0), _slope_rows(1.0, 8.0), _slope_rows(d16, 16.0))
    room = 1e-6 - bound
    for fraction, expected in ((0.8, True), (1.2, False), (-0.8, True), (-1.2, False)):
        claim = np.array([1.0 + fraction * room])
        look = quick_certify(diff, np.arange(1), np.array([H]), claim, first, base_value=0.0,
                             unit_roundoff=U, rtol=1e-6, atol=0.0, noise_factor=8.0)
        assert look.numeric[0] == 1.0
        assert look.bound[0] == pytest.approx(bound, rel=1e-6)
        assert look.certified[0] == expected, fraction


def test_a_claim_exactly_at_the_edge_is_certified():
    """atol + |a - D(8h)| + bound == rtol * scale exactly (all terms dyadic: f(t) = t, bound
    = k u) is certified, as the rule passes err == tol; one ulp less rtol is not."""
    diff, first = _table(_slope_rows(1.0, 1.0), _slope_rows(1.0, 8.0), _slope_rows(1.0, 16.0))
    atol, gap, bound = 2.0**-30, 2.0**-20, 8.0 * U
    rtol = atol + gap + bound  # exact; scale = max(|a|, |D(8h)|) = 1
    claim = np.array([1.0 - gap])
    kw = dict(base_value=0.0, unit_roundoff=U, atol=atol, noise_factor=8.0)
    look = quick_certify(diff, np.arange(1), np.array([H]), claim, first, rtol=rtol, **kw)
    assert look.bound[0] == bound and look.certified[0]
    look = quick_certify(diff, np.arange(1), np.array([H]), claim, first, rtol=np.nextafter(rtol, 0), **kw)
    assert not look.certified[0]


@pytest.mark.skipif(np.finfo(np.longdouble).eps >= np.finfo(np.float64).eps,
                    reason="longdouble is float64 on this platform")
def test_the_quick_look_judges_float64_claims():
    """As the rule and the step study do, the quick look rounds the claim to float64: a
    claim 2**-60 above 1 in extended precision is 1.0, equal to D(8h) = 1 (f(t) = t)."""
    one_plus = np.longdouble(1) + np.longdouble(2) ** -60
    diff, first = _table(_slope_rows(1.0, 1.0), _slope_rows(1.0, 8.0), _slope_rows(1.0, 16.0))
    look = quick_certify(diff, np.arange(1), np.array([H]), np.array([one_plus]), first, base_value=None,
                         unit_roundoff=0.0, rtol=0.0, atol=0.0, noise_factor=8.0)
    assert look.numeric[0] == 1.0 and look.bound[0] == 0.0
    assert look.certified[0]


@pytest.mark.skipif(np.finfo(np.longdouble).eps >= np.finfo(np.float64).eps,
                    reason="longdouble is float64 on this platform")
def test_the_quick_looks_kink_test_takes_f_at_x_as_float64():
    """f(x) is taken as float64, like f(x +- s): for f(t) = 1 + t (exact at 8h and 16h) with
    f(x) given as 1 + 2**-60 in extended precision (1.0 in float64), the one-sided slopes
    agree exactly (no jump), so a correct claim is certified even with no room at all
    (rtol 0, no round-off: any jump would be a kink)."""
    base = np.longdouble(1) + np.longdouble(2) ** -60
    diff, first = _table(_slope_rows(1.0, 1.0, f0=1.0), _slope_rows(1.0, 8.0, f0=1.0),
                         _slope_rows(1.0, 16.0, f0=1.0))
    kw = dict(unit_roundoff=0.0, rtol=0.0, atol=0.0, noise_factor=8.0)
    look = quick_certify(diff, np.arange(1), np.array([H]), np.array([1.0]), first, base_value=base, **kw)
    assert look.numeric[0] == 1.0 and look.bound[0] == 0.0
    assert look.certified[0]
    # negative control: a float64 f(x) one ulp above 1 is a jump, and with no room it is not smooth
    look = quick_certify(diff, np.arange(1), np.array([H]), np.array([1.0]), first,
                         base_value=np.nextafter(1.0, 2.0), **kw)
    assert not look.certified[0]


@pytest.mark.parametrize("resolution, certified", [(2e-6, True), (1.6e-6, True), (1.4e-6, False), (1.2e-6, False)])
def test_a_certified_entry_passes_the_rule_at_the_resolution_given(resolution, certified):
    """D(8h) = 1 with bound rtol/2 (D(16h) moved by 1.5 rtol, as above) and the claim 1: within
    rtol with the bound added, so the quick look's own test certifies it; but the rule's whole
    tolerance is bound + rtol = 1.5 rtol, so at a resolution below 1.5 rtol (still above rtol,
    as Config allows) the rule does not pass it and it is not certified (the docstring: "the
    quick look is never looser than the rule")."""
    diff, first = _table(_slope_rows(1.0, 1.0), _slope_rows(1.0, 8.0), _slope_rows(1.0 + 1.5e-6, 16.0))
    look = quick_certify(diff, np.arange(1), np.array([H]), np.array([1.0]), first, base_value=0.0,
                         unit_roundoff=U, rtol=1e-6, atol=0.0, noise_factor=8.0, resolution=resolution)
    assert look.bound[0] == pytest.approx(0.5e-6, rel=1e-6)
    assert look.certified[0] == certified


def test_no_floating_point_warning_escapes():
    """NaN, inf, huge and zero-width differences are expected inputs: the quick look answers
    (not certified) under numpy's strictest setting for invalid operations and overflow,
    and its kink test (like the step study's) under strict invalid and divide."""
    rows = {  # (first, 8h, 16h) per entry
        "inf - inf": ((1.0, 1.0, 2 * H), (np.inf, 1.0, 16 * H), (np.inf, 1.0, 32 * H)),
        "nan": ((1.0, 1.0, 2 * H), (np.nan, 1.0, 16 * H), (1.0, np.nan, 32 * H)),
        "overflow": ((1.0, 1.0, 1.0), (1e308, 0.0, 1.0), (-1e308, 0.0, 1.0)),
        "zero width": ((1.0, 0.0, 2 * H), (1.0, -1.0, 0.0), (0.0, 0.0, 0.0)),
    }

    def differencer_for(entries):
        def differencer(idx, steps):
            col = {8.0: 1, 16.0: 2}[float(np.round(steps[0] / H))]
            return tuple(np.array([rows[e][col][j] for e in entries]) for j in range(3))
        first = tuple(np.array([rows[e][0][j] for e in entries]) for j in range(3))
        return differencer, first

    names = list(rows)
    diff, first = differencer_for(names)
    args = (diff, np.arange(len(names)), np.full(len(names), H), np.ones(len(names)), first)
    kw = dict(unit_roundoff=U, rtol=1e-6, atol=0.0, noise_factor=8.0)
    with np.errstate(invalid="raise", divide="raise", over="raise", under="ignore"):
        look = quick_certify(*args, base_value=None, **kw)
    assert not look.certified.any()
    # with f(x), the kink test runs too, and guards the same warnings (overflow included)
    with np.errstate(invalid="raise", divide="raise", over="raise", under="ignore"):
        look = quick_certify(*args, base_value=0.0, **kw)
    assert not look.certified.any()


def _kinked(F, slope, jump):
    """f(z) = F + slope z + (jump/2) |z| at x = 0: one-sided slopes slope +- jump/2, central
    differences exactly ``slope`` at every step, one-sided gap exactly ``jump`` (dyadic
    values: every f(+-s) below is exact in float64)."""
    x = np.zeros(1)
    f = lambda z: float(F + slope * z[0] + jump / 2 * abs(z[0]))  # noqa: E731
    diff = _differencer(f, x)
    return diff, diff(np.arange(1), np.array([H])), f(x)


def _kink_threshold(f, x0, F_unit, rtol, k=8.0):
    """The full study's kink threshold at 8h and 16h, from the closed-form f:
    k * (2 noise(8h) + noise(16h)) + 10 rtol scale, noise(s) = u (|f(x+s)| + |f(x-s)| + 2|f(x)|) / s,
    scale = 2 (the claim)."""
    f0 = f(x0)
    noise = {m: F_unit * (abs(f(x0 + m * H)) + abs(f(x0 - m * H)) + 2 * abs(f0)) / (m * H) for m in (8, 16)}
    return k * (2 * noise[8] + noise[16]) + 10 * rtol * 2.0


@pytest.mark.parametrize("F, unit, share, expected", [
    (0.0, 0.0, 0.45, True), (0.0, 0.0, 0.5, True), (0.0, 0.0, 0.55, False), (0.0, 0.0, 2.0, False),
    # with round-off, f's values carry the jump too: no test right at the edge
    (2.0**22, U, 0.45, True), (2.0**22, U, 0.49, True), (2.0**22, U, 0.51, False), (2.0**22, U, 0.55, False),
    (2.0**22, U, 2.0, False),
])
def test_a_kink_is_certified_only_while_its_jump_is_well_below_the_threshold(F, unit, share, expected):
    """At a kink (f = F + 2z + (jump/2)|z| at 0) the claim 2, the central slope at every
    step, would pass; the quick look certifies it only while the slope's jump is at most
    half the full study's kink threshold (its round-off plus 10 rtol scale, computed here
    from the closed form), so that nothing the full study would call KINK is certified."""
    rtol = 1e-6
    g = lambda jump: (lambda z: float(F + 2.0 * z + jump / 2 * abs(z)))  # noqa: E731
    T = _kink_threshold(g(0.0), 0.0, unit, rtol)
    jump = share * T
    f = g(jump)
    diff = _differencer(lambda z: f(z[0]), np.zeros(1))
    first = diff(np.arange(1), np.array([H]))
    kw = dict(unit_roundoff=unit, rtol=rtol, atol=0.0, noise_factor=8.0)
    no_kink_test = quick_certify(diff, np.arange(1), np.array([H]), np.array([2.0]), first, base_value=None, **kw)
    assert no_kink_test.certified[0]  # the claim itself is within its bound
    look = quick_certify(diff, np.arange(1), np.array([H]), np.array([2.0]), first, base_value=f(0.0), **kw)
    assert look.certified[0] == expected


def test_a_jump_exactly_at_half_the_threshold_is_no_kink():
    """Dyadic values, no round-off term (u = 0): the jump 10 rtol equals half the threshold
    10 rtol * scale (scale 2) exactly, and counts as smooth; one ulp more does not."""
    rtol = 2.0**-20
    kw = dict(unit_roundoff=0.0, rtol=rtol, atol=0.0, noise_factor=8.0)
    for jump, expected in ((10 * rtol, True), (10 * rtol + 2.0**-40, False)):  # both exact below
        f = lambda z, j=jump: float(2.0 * z[0] + j / 2 * abs(z[0]))  # noqa: E731
        diff = _differencer(f, np.zeros(1))
        first = diff(np.arange(1), np.array([H]))
        look = quick_certify(diff, np.arange(1), np.array([H]), np.array([2.0]), first, base_value=0.0, **kw)
        assert look.certified[0] == expected, jump


@pytest.mark.parametrize("curvature", [0.2, 0.3])
def test_a_kink_with_curvature_is_left_to_the_full_study(curvature):
    """f = F + z + (c/2)|z| + (f''/2) z^2 at 0 with f'' h / c = 0.2 and 0.3: the one-sided
    gap c + f'' s roughly doubles from 8h to 16h, yet the full study's kink test (h/2 .. 2h)
    reports KINK. The quick look extrapolates the gap to step 0 (2 gap(8h) - gap(16h) = c)
    and leaves the entry to the full study: the verdict is KINK either way."""
    h, c = 6e-6, 1e-3
    fpp = curvature * c / h
    f = lambda z: float(2.7e4 + z[0] + c / 2 * abs(z[0]) + fpp / 2 * z[0] ** 2)  # noqa: E731
    quick, full = _with_and_without(f, np.zeros(1), np.array([1.0]))
    assert Verdict(full.codes[0]) is Verdict.KINK
    assert Verdict(quick.codes[0]) is Verdict.KINK


@pytest.mark.parametrize("a", [22.0, 1e4])
def test_curvature_alone_is_no_kink(a):
    """f = z + a z^2/2 at 0: the gap a s grows with the step, its extrapolation to 0 is 0:
    smooth, the exact claim 1 is certified whatever the curvature."""
    f = lambda z: float(z[0] + a * z[0] ** 2 / 2)  # noqa: E731
    diff = _differencer(f, np.zeros(1))
    first = diff(np.arange(1), np.array([H]))
    look = quick_certify(diff, np.arange(1), np.array([H]), np.ones(1), first, base_value=0.0,
                         unit_roundoff=U, rtol=1e-6, atol=0.0, noise_factor=8.0)
    assert look.certified[0]
