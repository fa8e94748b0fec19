"""A float64 input to an f that computes in float32 (issue 15, part 1 extended): routed
through the float32 steps and Richardson, judged with the forced-float32 rule. Negative
controls: correct claims never MISMATCH, planted errors found at their entries, a
precision-generic f keeps the float64 check."""
from __future__ import annotations

import numpy as np

from gradcheck import Verdict, check
from gradcheck._lowp.f32steps import PRESET

X = np.random.default_rng(0).standard_normal(20)
ROUTED = "float64 input, but f computes in float32"


def inside(x):
    return np.float64((np.sin(x.astype(np.float32)) * x.astype(np.float32) ** 2).sum())


def g(x):  # closed form of d/dx sum(sin(x) x^2)
    return np.cos(x) * x * x + 2 * x * np.sin(x)


def test_float32_inside_correct_claim_passes_and_a_1e3_entry_is_found():
    good = check(inside, X, g)
    assert good.config == PRESET and any(n.startswith(ROUTED) for n in good.notes), good.notes
    assert good.counts[Verdict.MISMATCH] == 0 and good.counts[Verdict.PASS] >= X.size // 2, str(good)
    at = next(i for i in range(X.size) if good.verdicts[(i,)] is Verdict.PASS)

    def bad(x):
        out = g(x)
        out[at] *= 1 + 1e-3
        return out
    assert check(inside, X, bad).entries(Verdict.MISMATCH) == [(at,)]
    every = check(inside, X, lambda x: g(x) * (1 + 1e-3))
    assert every.counts[Verdict.PASS] == 0 and every.counts[Verdict.MISMATCH] >= good.counts[Verdict.PASS]


def test_large_f_a_5_percent_bug_is_found_everywhere_and_cos_has_no_false_alarm():
    """|f| ~ 100: on the float64 path every entry was UNCHECKED and the 5% bug unseen."""
    f = lambda x: np.float64(np.sin(x.astype(np.float32)).sum() + np.float32(100))  # noqa: E731
    bad = check(f, X, lambda x: 1.05 * np.cos(x))
    assert bad.counts[Verdict.MISMATCH] >= X.size - 1, str(bad)
    good = check(f, X, np.cos)
    assert good.counts[Verdict.MISMATCH] == 0 and any(n.startswith(ROUTED) for n in good.notes), str(good)


def test_precision_generic_and_integer_valued_f_keep_the_float64_check():
    generic = check(lambda x: (np.sin(x) * x * x).sum(), X, g)
    assert generic.config != PRESET and not any(n.startswith(ROUTED) for n in generic.notes)
    assert generic.counts[Verdict.PASS] == X.size
    steps = check(lambda x: np.floor(x).sum(), X + 0.5, np.zeros_like)
    assert steps.config != PRESET and not any(n.startswith(ROUTED) for n in steps.notes)


def test_the_user_array_is_untouched_and_a_float32_output_is_routed_too():
    x = X.copy()
    r = check(lambda v: (np.sin(v.astype(np.float32)) * v.astype(np.float32) ** 2).sum(), x, g)
    assert np.array_equal(x, X) and r.config == PRESET and r.counts[Verdict.MISMATCH] == 0, str(r)
