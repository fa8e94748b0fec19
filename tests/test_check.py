"""check(): every entry, honest verdicts, on a zoo of planted bugs and clean traps."""
from __future__ import annotations

import numpy as np
import pytest
from zoo import CASES, softmax, softmax_vjp, softmax_vjp_bug

import gradcheck
from gradcheck import Config, Verdict, check
from gradcheck._core.arrays import same_bits

IDS = [c.name for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_correct_gradient_has_no_mismatch(case):
    """A correct closed-form gradient never gets MISMATCH or NONFINITE."""
    r = check(case.f, case.x, case.grad, config=case.config)
    assert r.entries([Verdict.MISMATCH, Verdict.NONFINITE]) == [], str(r)
    assert r.passed
    assert r.counts[Verdict.PASS] > 0


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_planted_bug_found_at_exactly_its_entries(case):
    """Each planted bug is flagged MISMATCH at exactly the entries it touches."""
    r = check(case.f, case.x, case.buggy, config=case.config)
    assert set(r.entries(Verdict.MISMATCH)) == case.bug_entries, str(r)
    assert not r.passed


def test_zero_true_gradient_is_unchecked_without_the_referee():
    """Entries whose true gradient is 0 are UNCHECKED when only finite differences speak:
    absence of evidence, said out loud."""
    case = CASES[3]
    r = check(case.f, case.x, case.grad, adjudicate=False)
    assert r.entries(Verdict.UNCHECKED) == [(3,), (4,), (5,)]
    assert r.entries(Verdict.PASS) == [(0,), (1,), (2,)]


def test_zero_true_gradient_passes_by_adjudication():
    """With the referee (default when f runs at high precision), a claimed 0 for a true 0
    is proven: PASS, settled as an exact zero."""
    case = CASES[3]
    r = check(case.f, case.x, case.grad)
    assert r.counts[Verdict.PASS] == 6
    assert [r.cause(ix) for ix in [(3,), (4,), (5,)]] == [gradcheck.Cause.EXACT_ZERO] * 3


def test_sum_reduction_hides_the_softmax_bug_that_random_cotangent_finds():
    """The documented reason the default cotangent is random: with a plain sum, the
    softmax VJP bug is invisible (true gradient of sum(softmax) is 0)."""
    x = np.linspace(-1, 2, 9)
    hidden = check(softmax, x, softmax_vjp_bug, config=Config(reduce="sum"))
    assert hidden.entries(Verdict.MISMATCH) == []
    found = check(softmax, x, softmax_vjp_bug)
    assert len(found.entries(Verdict.MISMATCH)) == 9
    assert check(softmax, x, softmax_vjp).passed


def test_gradient_as_array():
    """grad may be an array instead of a function."""
    x = np.array([1.0, -2.0, 0.5])
    assert check(lambda x: (x**3).sum(), x, 3 * x**2).passed
    r = check(lambda x: (x**3).sum(), x, 3 * x**2 + np.array([0, 0.01, 0]))
    assert r.entries(Verdict.MISMATCH) == [(1,)]


def test_zero_dim_input():
    """A 0-d input is one entry with index ()."""
    r = check(lambda x: np.sin(x) * 2, np.array(0.7), lambda x: 2 * np.cos(x))
    assert r.shape == () and r.passed and r.counts[Verdict.PASS] == 1


def test_empty_input_is_a_vacuous_report():
    """An empty input gives a report with zero entries (nothing to check, said so)."""
    r = check(lambda x: x.sum(), np.zeros((0, 3)), np.zeros((0, 3)))
    assert r.size == 0 and r.passed and r.entries(Verdict.MISMATCH) == []


@pytest.mark.parametrize("layout", ["fortran", "strided", "negative", "readonly"])
def test_unusual_layouts_are_checked_and_untouched(layout):
    """Non-contiguous, negative-stride and read-only inputs work and are left untouched."""
    base = np.arange(24, dtype=np.float64).reshape(4, 6) / 7.0
    x = {"fortran": np.asfortranarray(base), "strided": base[:, ::2],
         "negative": base[::-1, ::-1], "readonly": base.copy()}[layout]
    if layout == "readonly":
        x.flags.writeable = False
    before = x.copy()
    r = check(lambda x: (x**2 * np.arange(x.shape[1])).sum(), x, lambda x: 2 * x * np.arange(x.shape[1]))
    assert r.shape == x.shape and r.passed
    assert np.array_equal(x, before) and x.tobytes() == before.tobytes()


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_])
def test_non_float_input_is_refused_clearly(dtype):
    """Integer and boolean inputs are refused with a message saying what to do (complex
    inputs are checked on their real view: tests/test_complex.py)."""
    with pytest.raises(gradcheck.UnsupportedInputError, match="dtype"):
        check(lambda x: x.sum(), np.ones(3, dtype=dtype), np.ones(3))


def test_wrong_gradient_shape_names_both_shapes():
    """A claimed gradient of the wrong shape names both shapes."""
    with pytest.raises(gradcheck.ShapeMismatchError, match=r"\(3, 2\).*\(2, 3\)") as info:
        check(lambda x: x.sum(), np.ones((2, 3)), np.ones((3, 2)))
    assert info.value.expected == (2, 3) and info.value.got == (3, 2)


def test_array_output_with_array_gradient_explains_vjp():
    """An array output needs a VJP; an array gradient is refused with an explanation."""
    with pytest.raises(TypeError, match="VJP"):
        check(np.sin, np.ones(3), np.cos(np.ones(3)))
    # ... unless reduce="sum" makes the array the gradient of sum(f).
    assert check(np.sin, np.ones(3), np.cos(np.ones(3)), config=Config(reduce="sum")).passed


def test_function_error_is_reraised_with_entry_index():
    """An exception inside f is re-raised with the entry it happened at, x untouched."""
    x = np.array([1.0, 2.0, 3.0])
    before = x.copy()

    def f(z):
        if z[1] > 2.0:
            raise ValueError("boom")
        return z.sum()

    with pytest.raises(gradcheck.FunctionError, match=r"\(1,\) \(\+h\).*boom") as info:
        check(f, x, np.ones(3))
    assert info.value.index == (1,) and isinstance(info.value.__cause__, ValueError)
    assert np.array_equal(x, before)


@pytest.mark.parametrize("case", ["complex x, first call", "real x, f(x) again after the pass"])
def test_an_error_at_x_itself_is_a_function_error_at_the_unperturbed_input(case):
    """f raising at x itself is FunctionError at the unperturbed input (side "base", the
    cause chained) wherever check evaluates it: the complex check's first call (it decides
    whether the output is complex; it raised f's ZeroDivisionError bare before) and the
    sanity stage's f(x) again after the first pass (bare before, too). Control: the same f
    that does not raise passes, and x is untouched either way."""
    calls, armed = [], [True]

    def f(z):
        calls.append(1)
        if armed[0] and (case.startswith("complex") or len(calls) == 2 * z.size + 2):  # f(x), the pass, f(x) again
            raise ZeroDivisionError("planted")
        return float(np.sum(np.abs(z) ** 2))

    x = np.array([1.0 + 1j, 2.0]) if case.startswith("complex") else np.array([1.0, 2.0])
    before = x.copy()
    grad = lambda z: 2 * z  # noqa: E731
    with pytest.raises(gradcheck.FunctionError, match="ZeroDivisionError at the unperturbed input") as info:
        check(f, x, grad, engine="serial")
    assert info.value.index is None and info.value.side == "base"
    assert isinstance(info.value.__cause__, ZeroDivisionError) and same_bits(x, before)
    armed[0] = False
    assert check(f, x, grad, engine="serial").passed and same_bits(x, before)


def test_keyboard_interrupt_leaves_x_untouched():
    """A KeyboardInterrupt in the middle of a check propagates and x is unchanged."""
    x = np.array([1.0, 2.0, 3.0, 4.0])
    before = x.copy()
    calls = []

    def f(z):
        calls.append(1)
        if len(calls) == 5:
            raise KeyboardInterrupt
        return (z**2).sum()

    with pytest.raises(KeyboardInterrupt):
        check(f, x, 2 * x)
    assert x.tobytes() == before.tobytes()


def test_nondeterministic_function_is_detected():
    """A function whose value drifts between calls is reported and does not pass."""
    noise = np.random.default_rng(1)
    r = check(lambda x: (x**2).sum() + 1e-6 * noise.standard_normal(), np.ones(4), 2 * np.ones(4))
    assert not r.deterministic and not r.passed and r.drift > 0
    assert "nondeterministic" in str(r).lower()
    with pytest.raises(gradcheck.GradientAssertionError):
        r.assert_pass()


def test_function_mutating_its_input_is_refused():
    """A function that writes into its argument is reported, not silently differenced."""
    def f(z):
        z *= 1.0000001
        return z.sum()

    with pytest.raises(gradcheck.InputMutationError):
        check(f, np.ones(3), np.ones(3))


@pytest.mark.parametrize("when", ["every call", "while entry 0 is perturbed"])
def test_a_function_writing_negative_zero_over_zero_is_refused(when):
    """-0.0 == 0.0, so a comparison by value misses this write; the bytes differ (same_bits).
    "while entry 0 is perturbed": the write lands on entry 1 before its turn, where the
    restore after perturbing it would have repaired it unseen. Control: writing +0.0 over
    0.0 changes no bit and is no error. (The write lands only where z[1] is zero: over a
    perturbed z[1] it changes bits, refused by the test below.)"""
    def writer(sign):
        def f(z):
            if (when == "every call" or z[0] != 1.0) and z[1] == 0.0:
                z[1] = sign * 0.0
            return float(np.sum(z ** 2))
        return f

    x = np.array([1.0, 0.0, 2.0])
    with pytest.raises(gradcheck.InputMutationError, match="wrote into the array it was given"):
        check(writer(-1.0), x, 2 * x)
    assert same_bits(x, np.array([1.0, 0.0, 2.0]))  # the user's x is untouched
    assert check(writer(1.0), x, 2 * x).passed


def test_a_function_writing_into_the_entry_it_is_given_perturbed_is_refused():
    """f writes only into the entry perturbed at that point (z[1] > 2 only at z[1] + h):
    putting the entry back after the call hid the write (the final comparison saw nothing).
    Refused, the user's x untouched; control: below the threshold f never writes and passes."""
    def f(z):
        if z[1] > 2.0:
            z[1] = 0.0
        return float(np.sum(z ** 2))

    x = np.array([1.0, 2.0 - 1e-9, 3.0])
    before = x.copy()
    with pytest.raises(gradcheck.InputMutationError, match=r"entry \(1,\) changed while it was perturbed"):
        check(f, x, 2 * x, engine="serial")
    assert same_bits(x, before)
    below = np.array([1.0, 1.5, 3.0])
    assert check(f, below, 2 * below, engine="serial").passed


def test_same_bits_sees_signed_zeros_and_nan_payloads():
    nan_a = np.array([np.nan])
    nan_b = np.frombuffer(np.array([0x7FF8000000000001], dtype=np.uint64).tobytes(), dtype=np.float64)
    assert np.isnan(nan_b).all() and np.array_equal(nan_a, nan_b, equal_nan=True)
    assert not same_bits(nan_a, nan_b)
    assert not same_bits(np.zeros(2), np.array([0.0, -0.0]))
    assert not same_bits(np.zeros(2), np.zeros(2, dtype=np.float32))  # same values, other dtype
    assert not same_bits(np.zeros(2), np.zeros((2, 1)))
    assert same_bits(np.array([1.5, np.nan, -0.0]), np.array([1.5, np.nan, -0.0]))


@pytest.mark.parametrize("where", ["x", "claimed", "output"])
def test_nonfinite_values_get_their_own_verdict(where):
    """NaN/Inf in x, in the claimed gradient or in f's output -> NONFINITE, never PASS."""
    x = np.array([0.5, 1.0, 1.5])
    g = 2 * x
    f = lambda z: np.nansum(z**2)
    if where == "x":
        x = np.array([0.5, np.nan, 1.5])
        g = np.array([1.0, 0.0, 3.0])
    elif where == "claimed":
        g = np.array([1.0, np.inf, 3.0])
    else:
        f = lambda z: (z**2).sum() if z[1] == 1.0 else np.inf  # no step stays finite
    r = check(f, x, g)
    assert r.entries(Verdict.NONFINITE) == [(1,)]
    assert not r.passed
    assert all(v is Verdict.PASS for v in r.verdicts[[0, 2]])


def test_nonfinite_at_base_marks_every_entry():
    """f(x) itself NaN: no entry can be checked, and the report says so."""
    r = check(lambda z: np.nan * z.sum(), np.ones(3), np.ones(3))
    assert r.counts[Verdict.NONFINITE] == 3 and "not finite" in str(r)


def test_float32_preset_is_chosen_from_the_input_and_f():
    """With no config, the preset follows x's dtype and what f does with it: a
    precision-generic f on float32 input is differenced on the float64 upcast; one that
    computes in float32 (returns float32, or float64 computed from a float32 copy) gets the
    float32 Richardson preset."""
    from gradcheck._lowp.f32steps import PRESET

    x, g = np.ones(4, np.float32), 2 * np.ones(4, np.float32)
    r = check(lambda x: (x * x).sum(), x, g)
    assert r.dtype == "float32" and r.config.step == Config.for_dtype("float64").step
    assert any("precision-generic f" in n for n in r.notes), r.notes
    for forced in (lambda x: (x.astype(np.float32) ** 2).sum(),
                   lambda x: np.float64((x.astype(np.float32) ** 2).sum())):
        r = check(forced, x, g)
        assert r.config == PRESET and r.dtype == "float32" and r.passed, str(r)
        assert any("Richardson" in n for n in r.notes), r.notes


def test_unknown_engine_lists_choices():
    """An unknown engine name lists the valid ones."""
    with pytest.raises(ValueError, match="serial"):
        check(lambda x: x.sum(), np.ones(2), np.ones(2), engine="warp")
