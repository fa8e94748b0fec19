"""The step rule at a large |x| of an oscillating f: the relative step (6e-6 |x|) spans periods
of sin there, so the step study's differences alias to ~0. A MISMATCH is confirmed only at
smaller steps (``gradcheck._refine.descent``), never from those large steps alone.
References: the closed form (cos for sin), through the public API; f leaves arbitrary
precision (np.asarray(dtype=float)), so no referee can run and the steps alone decide."""
from __future__ import annotations

import mpmath
import numpy as np
import pytest

import gradcheck

SCALES = [10.0 ** p for p in range(13)]   # |x| in 1e0 .. 1e12


def f(z):
    return np.sin(np.asarray(z, dtype=float)).sum()


def _x(scale: float) -> np.ndarray:
    rng = np.random.default_rng(int(np.log10(scale)))
    return scale * np.array([1.0, -1.0]) * (1.0 + rng.random(2))


def _verdicts(claim, x) -> list[str]:
    return [str(v) for v in gradcheck.check(f, x, claim).verdicts]


@pytest.mark.parametrize("scale", SCALES)
def test_sin_over_scales_right_claim_never_mismatch_wrong_claim_never_pass(scale):
    x = _x(scale)
    right = _verdicts(np.cos, x)
    assert "MISMATCH" not in right, (x, right)
    # float64 resolves cos(x) at every one of these scales (spacing <= 2.4e-4, steps down to 1e-2).
    assert right == ["PASS", "PASS"], (x, right)
    wrong = _verdicts(lambda z: 1.01 * np.cos(z), x)
    assert "PASS" not in wrong, (x, wrong)
    assert set(wrong) <= {"MISMATCH", "UNCHECKED"}, (x, wrong)
    assert wrong == ["MISMATCH", "MISMATCH"], (x, wrong)


def test_oscillating_f_at_a_moderate_x_costs_what_it_did():
    """|x| <= 1e3: the study's steps resolve sin; right and wrong claims judged as before."""
    x = np.array([0.7, 3.0, -250.0])
    assert gradcheck.check(f, x, np.cos).status == "PASS"
    wrong = gradcheck.check(f, x, lambda z: 1.01 * np.cos(z))
    assert [str(v) for v in wrong.verdicts] == ["MISMATCH"] * 3



# A step of f too sharp to resolve at any step: f = C + A tanh((x - X0)/W) at its centre, its
# height A only 512 float64 spacings of the offset C. Every step the study takes (~100 W) sees
# a jump (differences ~A/s), so it confirms nothing; 8x smaller (t = s/W ~ 6) it is still a
# jump; where truncation would start to shrink (t ~ 0.8, the second level) round-off,
# 8 u C / s, is already 1.5% of the claim A/W: no step resolves it to ``resolution`` (1%).
# The descent gives up there (not a floor, round-off above resolution): UNCHECKED, never MISMATCH.
_C, _X0, _W = 1.5 * 2.0**20, 2048.0, 2.0**-12   # X0 - x and / W exact; step 6e-6*X0 > 1e-2
_A = 512 * float(np.spacing(_C))


def _sharp(z):
    return (_C + _A * np.tanh((np.asarray(z, dtype=float) - _X0) / _W)).sum()


def _sharp_slope(z):
    return _A / _W / np.cosh((np.asarray(z) - _X0) / _W) ** 2


def test_a_step_no_float64_difference_resolves_is_unchecked_not_proven():
    mpmath.mp.dps = 40
    exact = lambda t: _C + _A * mpmath.tanh((t - _X0) / _W)  # noqa: E731
    x = np.array([_X0])
    # The independent truth: the claim is f'(X0) (mpmath), and f is float64's rounding of it.
    assert abs(mpmath.diff(exact, mpmath.mpf(_X0)) - _sharp_slope(x)[0]) < 1e-30
    for t in (_X0 - 3 * _W, _X0 - _W / 2, _X0 + _W / 8, _X0 + 2 * _W):
        assert abs(_sharp(np.array([t])) - float(exact(mpmath.mpf(t)))) <= np.spacing(_C)
    right = gradcheck.check(_sharp, x, _sharp_slope)
    assert [str(v) for v in right.verdicts] == ["UNCHECKED"], right.verdicts
    assert any("not confirmed at smaller steps" in n and "UNCHECKED, not proven" in n for n in right.notes)
    # It gave up at the second level (round-off above resolution), not at a third level's floor
    # with a wide bound: with the give-up removed from the descent, a third level runs (32).
    assert right.evaluations == 26, right.evaluations
    # Negative controls at the same point: a grossly wrong claim is never a PASS.
    for wrong in (lambda z: -_sharp_slope(z), lambda z: 10.0 * _sharp_slope(z)):
        verdicts = [str(v) for v in gradcheck.check(_sharp, x, wrong).verdicts]
        assert verdicts in (["UNCHECKED"], ["MISMATCH"]), verdicts
