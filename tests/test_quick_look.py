"""The quick look at noisy PASS entries (8h and 16h before the full step study): it
certifies only what the full study would pass, it is sound against closed-form
derivatives, and it saves evaluations where f is badly scaled."""
from __future__ import annotations

import numpy as np
import pytest

import gradcheck
import gradcheck._judge as judge
from gradcheck import Verdict
from gradcheck._refine import QUICK_FACTORS, STUDY_FACTORS, quick_certify, step_study

from zoo import CASES

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
