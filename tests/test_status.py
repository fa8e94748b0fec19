"""A check's overall status: PASS, FAIL, or INCONCLUSIVE when no entry could be verified.

A report whose entries verified nothing (no PASS among them) is not a pass: it says so,
says why (low-precision output in particular) and the way out; ``assert_pass()`` refuses it
unless ``allow_unchecked=True``. The same rule holds for several inputs, a model's
parameters and a shape sweep (issue 12, section 2).
"""
from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest

from gradcheck import GradientAssertionError, Verdict, check, check_params, shape_sweep
from gradcheck._core.status import FAIL, INCONCLUSIVE, PASS, combine, status_of

BF16 = ml_dtypes.bfloat16
X = np.random.default_rng(0).standard_normal(20)


def sin_sum(x):
    return np.sin(x).sum()


def sin_sum_bf16(x):
    """A correct f whose output is rounded to bfloat16."""
    return np.sin(x).astype(BF16).sum()


def sin_sum_f16(x):
    """A scalar loss rounded to float16."""
    return np.float16(np.sin(x).sum())


def minus_cos(x):
    """The sign-flipped claim for sin_sum."""
    return -np.cos(x)


# -- one report ----------------------------------------------------------------------------


def test_bfloat16_output_verifies_nothing_and_says_low_precision_is_why():
    """f returns bfloat16: its round-off (2**-8 of |f|) swamps the slope over a float64
    step at every entry, so even the correct claim cos(x) cannot be verified. The report is
    INCONCLUSIVE (not PASS), names the low-precision output and the ways out. Negative
    control: the same f without the cast PASSes, so the cast is what the report blames."""
    r = check(sin_sum_bf16, X, np.cos)
    assert r.status == INCONCLUSIVE and r.passed is False
    assert r.counts[Verdict.UNCHECKED] == 20
    assert r.summary() == "sin_sum_bf16: INCONCLUSIVE -- no entry could be verified: 20 UNCHECKED"
    assert r.output_dtype == "bfloat16"
    text = str(r)
    for words in ("f returns bfloat16", "upcast the input", "Config(step=", "allow_unchecked=True"):
        assert words in text and words in r.reason, words
    assert check(sin_sum, X, np.cos).status == PASS


def test_float32_inside_a_float64_function_is_named_as_why_nothing_was_verified():
    """An f that computes in float32 but returns float64: its output dtype cannot say why
    nothing resolved, so the reason comes from f's measured round-off (about float32's),
    with the way out that fits (compute in float64); an honest float64 f never gets it."""
    x = np.random.default_rng(0).standard_normal(20)
    # values that are not float32 numbers (+ 0.1 in float64): the float64 check, whose round-off
    # probe names the reason (an f returning float32 numbers takes the float32 route instead,
    # tests/test_forced64.py)
    inner = check(lambda x: np.float64(np.sin(x.astype(np.float32)).sum() + np.float32(100)) + 0.1, x,
                  grad=lambda x: 1.05 * np.cos(x))
    assert inner.status == INCONCLUSIVE
    assert inner.measured_roundoff is not None and 2**-26 < inner.measured_roundoff < 2**-22
    assert "lower precision than its float64 output" in inner.reason
    assert "about float32's" in inner.reason and "compute in float64" in inner.reason
    assert inner.to_dict()["measured_roundoff"] == inner.measured_roundoff
    honest = check(lambda x: 3e10 + np.sin(x).sum(), x, grad=np.cos, adjudicate=False)
    assert honest.measured_roundoff is None
    assert "lower precision" not in (honest.reason or "")


def test_float16_loss_with_a_sign_flipped_claim_is_refused_by_assert_pass():
    """A float16 scalar loss cannot tell cos from -cos: every entry UNCHECKED. The old
    report said PASS and assert_pass() accepted a gradient of the wrong sign; now
    assert_pass() raises by default with the reason and the way out, allow_unchecked=True
    accepts it on purpose, allow_unchecked=False refuses it too. Negative control: the
    same claim against the float64 loss is a FAIL (the claim is wrong where it can be seen)."""
    r = check(sin_sum_f16, X, minus_cos)
    assert r.status == INCONCLUSIVE and not r.passed
    with pytest.raises(GradientAssertionError) as err:
        r.assert_pass()
    message = str(err.value)
    assert message.startswith("gradient check inconclusive: no entry could be verified")
    assert "f returns float16" in message and "allow_unchecked=True" in message
    assert err.value.report is r
    assert r.assert_pass(allow_unchecked=True) is r
    with pytest.raises(GradientAssertionError, match="inconclusive"):
        r.assert_pass(allow_unchecked=False)
    assert check(sin_sum, X, minus_cos).status == FAIL


def test_a_pass_beside_unchecked_entries_is_still_a_pass():
    """Entries with a true gradient of 0 stay UNCHECKED (referee off), but one entry was
    verified: the report is PASS and assert_pass() accepts it by default;
    allow_unchecked=False still refuses the UNCHECKED entries."""
    r = check(lambda x: (x**3).sum(), np.array([0.0, 0.0, 1.0]), lambda x: 3 * x**2, adjudicate=False)
    assert r.counts[Verdict.PASS] == 1 and r.counts[Verdict.UNCHECKED] == 2
    assert r.status == PASS and r.passed and r.reason == ""
    assert r.assert_pass() is r and r.assert_pass(allow_unchecked=True) is r
    with pytest.raises(GradientAssertionError, match="2 UNCHECKED entries"):
        r.assert_pass(allow_unchecked=False)


def test_fail_wins_over_inconclusive():
    """A MISMATCH beside UNCHECKED entries and no PASS is a FAIL, whatever allow_unchecked says."""
    def wrong(x):
        g = 3 * x**2
        g[1] += 1.0
        return g

    r = check(lambda x: (x**3).sum(), np.array([0.0, 1.0]), wrong, adjudicate=False)
    assert r.counts[Verdict.PASS] == 0 and r.counts[Verdict.UNCHECKED] == 1
    assert r.status == FAIL
    with pytest.raises(GradientAssertionError, match="gradient check failed"):
        r.assert_pass(allow_unchecked=True)


def test_every_entry_at_a_kink_is_inconclusive():
    """|x| at x = 0: every claim between -1 and 1 is a valid subgradient (KINK), so no
    derivative was verified: INCONCLUSIVE, with the way out (points off the kinks). A claim
    outside the one-sided derivatives is still a FAIL, and one smooth entry makes it a PASS."""
    r = check(lambda x: np.abs(x).sum(), np.zeros(3), np.sign)
    assert r.counts[Verdict.KINK] == 3 and r.status == INCONCLUSIVE
    assert "kinks" in r.reason and "off the kinks" in r.reason
    assert check(lambda x: np.abs(x).sum(), np.zeros(3), lambda x: 5 + np.sign(x)).status == FAIL
    assert check(lambda x: np.abs(x).sum(), np.array([0.0, 1.5]), np.sign).status == PASS


def test_an_empty_tensor_is_a_pass():
    """A 0-entry input has no entry whose claim could be wrong, so nothing is left
    unverified: PASS (a model with an empty parameter must not turn inconclusive for it)."""
    r = check(lambda x: (x**2).sum(), np.zeros((0, 3)), lambda x: 2 * x)
    assert r.size == 0 and r.status == PASS and r.assert_pass() is r


@pytest.mark.parametrize("counts, size, deterministic, expected", [
    ({Verdict.PASS: 3}, 3, True, PASS),
    ({Verdict.PASS: 1, Verdict.UNCHECKED: 9}, 10, True, PASS),
    ({Verdict.UNCHECKED: 10}, 10, True, INCONCLUSIVE),
    ({Verdict.KINK: 2, Verdict.UNCHECKED: 1}, 3, True, INCONCLUSIVE),
    ({Verdict.UNCHECKED: 2, Verdict.SKIPPED: 8}, 10, True, INCONCLUSIVE),
    ({Verdict.PASS: 2, Verdict.SKIPPED: 8}, 10, True, PASS),
    ({Verdict.UNCHECKED: 4, Verdict.MISMATCH: 1}, 5, True, FAIL),
    ({Verdict.UNCHECKED: 4, Verdict.NONFINITE: 1}, 5, True, FAIL),
    ({Verdict.PASS: 3}, 3, False, FAIL),
    ({Verdict.UNCHECKED: 3}, 3, False, FAIL),
    ({}, 0, True, PASS),
    ({Verdict.SCREENED: 1000}, 1000, True, PASS),  # screen cleared every entry, at its limit
    ({Verdict.SCREENED: 990, Verdict.UNCHECKED: 10}, 1000, True, PASS),
    ({Verdict.SCREENED: 999, Verdict.MISMATCH: 1}, 1000, True, FAIL),
])
def test_status_rule_table(counts, size, deterministic, expected):
    """The rule in one table: FAIL wins (a failing verdict or a nondeterministic f), then
    INCONCLUSIVE (entries, but not one PASS or SCREENED), else PASS."""
    full = {v: counts.get(v, 0) for v in Verdict}
    assert status_of(full, size, deterministic) == expected


@pytest.mark.parametrize("parts, expected", [
    ([PASS, PASS], PASS), ([PASS, INCONCLUSIVE], INCONCLUSIVE),
    ([INCONCLUSIVE, FAIL, PASS], FAIL), ([], PASS),
])
def test_composite_status_table(parts, expected):
    """Several parts: any FAIL fails the whole, else any part that verified nothing makes it
    INCONCLUSIVE."""
    assert combine(parts) == expected


def test_allow_unchecked_must_be_none_true_or_false():
    """A value other than None/True/False (a truthy string, say) is refused with the choices."""
    r = check(sin_sum, X, np.cos)
    with pytest.raises(TypeError, match="None.*True.*False.*'yes'"):
        r.assert_pass(allow_unchecked="yes")


def test_json_carries_the_status_and_the_reason():
    """to_dict/to_json say the status and, when inconclusive, why; passed stays in step."""
    bad = json.loads(check(sin_sum_bf16, X, np.cos).to_json())
    assert bad["status"] == "INCONCLUSIVE" and bad["passed"] is False
    assert "f returns bfloat16" in bad["reason"] and bad["output_dtype"] == "bfloat16"
    good = check(sin_sum, X, np.cos).to_dict()
    assert good["status"] == "PASS" and good["passed"] is True and good["reason"] == ""


# -- composites ------------------------------------------------------------------------------


def test_several_inputs_one_that_verified_nothing_is_not_a_pass():
    """check(f, (a, b)): b does not reach the output (true gradient 0, referee off), so its
    claim was never verified; the MultiReport is INCONCLUSIVE and names the input. A wrong
    claim for a makes it a FAIL."""
    a, b = np.array([0.3, 1.2]), np.array([0.5, -1.0])

    def f(a, b):
        return np.sin(a).sum() + (0.0 * b).sum()

    r = check(f, (a, b), grad=(lambda a, b: np.cos(a), lambda a, b: 0 * b), adjudicate=False)
    assert [p.status for p in r] == [PASS, INCONCLUSIVE]
    assert r.status == INCONCLUSIVE and not r.passed
    assert "INCONCLUSIVE (inputs [1] verified nothing)" in r.summary()
    assert json.loads(r.to_json())["status"] == "INCONCLUSIVE"
    with pytest.raises(GradientAssertionError, match="inconclusive"):
        r.assert_pass()
    assert r.assert_pass(allow_unchecked=True) is r
    wrong = check(f, (a, b), grad=(lambda a, b: -np.cos(a), lambda a, b: 0 * b), adjudicate=False)
    assert wrong.status == FAIL


def _model(wrong_w: bool = False):
    params = {"w": np.array([0.5, -1.0, 2.0]), "z": np.linspace(-1.0, 1.0, 6)}

    def loss(p):
        return (p["w"] ** 2).sum() + (0.0 * p["z"]).sum()  # numpy only: the referee can run it

    grads = {"w": 2 * params["w"] + (1.0 if wrong_w else 0.0), "z": np.zeros(6)}
    return loss, params, grads


def test_a_model_where_one_name_verified_nothing_is_not_a_plain_pass():
    """check_params: z's gradient (truly 0) is all UNCHECKED without the referee, so the
    model check is INCONCLUSIVE, lists z as unverified (not failing) and refuses
    assert_pass() by default. With the referee z is proven 0 exactly: PASS."""
    loss, params, grads = _model()
    r = check_params(loss, params, grads, adjudicate=False)
    assert r.status == INCONCLUSIVE and not r.passed
    assert r.inconclusive == ["z"] and r.failing == []
    assert r.diagnosis.kind == "pass" and "verified nothing: z" in r.diagnosis.text
    text = str(r)
    assert text.startswith("check_params: INCONCLUSIVE -- 2 tensors, 9 entries")
    assert "; 1 verified nothing: z\n" in text
    assert "-- z: no entry could be verified" in text
    data = json.loads(r.to_json())
    assert data["status"] == "INCONCLUSIVE" and data["inconclusive"] == ["z"]
    with pytest.raises(GradientAssertionError, match="inconclusive"):
        r.assert_pass()
    assert r.assert_pass(allow_unchecked=True) is r
    assert check_params(loss, params, grads).status == PASS


def test_a_model_sample_that_verified_nothing_and_fail_wins():
    """sample=2: z's two sampled entries are UNCHECKED and the rest SKIPPED: INCONCLUSIVE,
    saying only 2 of 6 entries were sampled. A wrong w makes the model a FAIL that names w."""
    loss, params, grads = _model()
    r = check_params(loss, params, grads, adjudicate=False, sample=2)
    assert r["z"].status == INCONCLUSIVE and "only 2 of 6 entries were sampled" in r["z"].reason
    assert r.status == INCONCLUSIVE
    loss, params, grads = _model(wrong_w=True)
    bad = check_params(loss, params, grads, adjudicate=False)
    assert bad.status == FAIL and bad.failing == ["w"] and bad.inconclusive == ["z"]
    with pytest.raises(GradientAssertionError, match="failed"):
        bad.assert_pass(allow_unchecked=True)


def _cube_input(shape):
    """Zeros at n = 1 (true gradient 0 there: nothing to verify without the referee)."""
    return np.zeros(shape) if shape == (1,) else np.linspace(0.5, 1.5, shape[0])


def test_a_sweep_with_a_shape_that_verified_nothing():
    """shape_sweep: the shape (1,) verified nothing, so the sweep is INCONCLUSIVE (not
    PASS), lists the shape, and assert_all_pass() raises unless allow_unchecked=True. The
    shape does not *fail*: with a gradient wrong at even n the sweep FAILs and the rule is
    still exactly "n is even"."""
    def cube(x):
        return (x**3).sum()

    sweep = shape_sweep(cube, [(n,) for n in range(1, 5)], _cube_input, lambda x: 3 * x**2,
                        dim_names=("n",), adjudicate=False)
    assert sweep.status == INCONCLUSIVE and not sweep.passed
    assert sweep.failed == [] and sweep.inconclusive == [(1,)]
    assert sweep.summary() == "cube: INCONCLUSIVE -- 0 of 4 shapes (n) fail; 1 verified nothing"
    assert "no entry could be verified at: (1,)" in str(sweep)
    assert json.loads(json.dumps(sweep.to_dict()))["status"] == "INCONCLUSIVE"
    with pytest.raises(GradientAssertionError, match="inconclusive"):
        sweep.assert_all_pass()
    assert sweep.assert_all_pass(allow_unchecked=True) is sweep

    def wrong_when_even(x):
        g = 3 * x**2
        if x.size % 2 == 0:
            g[-1] += 1.0
        return g

    bad = shape_sweep(cube, [(n,) for n in range(1, 5)], _cube_input, wrong_when_even,
                      dim_names=("n",), adjudicate=False)
    assert bad.status == FAIL and bad.failed == [(2,), (4,)]
    assert str(bad.rule) == "n is even (exact: 2 of 4 shapes fail)"
