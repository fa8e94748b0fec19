"""The step rule at a large |x| of an oscillating f: the relative step (6e-6 |x|) spans periods
of sin there, so the step study's differences alias to ~0. A MISMATCH is confirmed only at
smaller steps (``gradcheck._refine.descent``), never from those large steps alone.
References: the closed form (cos for sin), through the public API; f leaves arbitrary
precision (np.asarray(dtype=float)), so no referee can run and the steps alone decide."""
from __future__ import annotations

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

