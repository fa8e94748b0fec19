"""``rtol=``, ``atol=``, ``eps=``, ``resolution=``, ``noise_factor=`` as keywords of every public
check (issue 27): each call accepts them, a keyword has the effect of the same Config field
(the same report), a wrong type or value names the keyword, and a keyword that contradicts a
field an explicit ``config=`` set is refused naming both.

The subject: ``sum(sin(x))`` with a claim 3e-6 relative off at every entry: a MISMATCH at the
float64 preset's rtol 1e-6, a PASS at rtol 1e-5 (the negative control and its release)."""
from __future__ import annotations

import numpy as np
import pytest

import gradcheck as gc
from gradcheck import Config, Verdict

X = np.linspace(-1.3, 1.1, 8)
OFF = 1 + 3e-6


def f(x):
    return np.sin(x).sum()


def off(x):
    return np.cos(x) * OFF


def vector_f(x):
    return np.sin(x)


def off_vjp(x, v):
    return np.cos(x) * v * OFF


def off_jvp(x, t):
    return np.cos(x) * t * OFF


def loss(p):
    return float(np.sin(p["w"]).sum())


def params_call(**kw):
    p = {"w": X.copy()}
    return gc.check_params(loss, p, {"w": off(X)}, **kw)


# each public function that judges entries against check's rule, on the same 3e-6 error
CALLS = {
    "check": lambda **kw: gc.check(f, X, off, **kw),
    "screen": lambda **kw: gc.screen(vector_f, np.linspace(-1.3, 1.1, 600), off_vjp, **kw),
    "check_params": params_call,
    "check_jvp": lambda **kw: gc.check_jvp(vector_f, X, off_jvp, **kw),
    "check_hvp": lambda **kw: gc.check_hvp(f, X, lambda x, v: -np.sin(x) * v * OFF, grad=np.cos, **kw),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_rtol_keyword_turns_the_mismatch_into_a_pass(call):
    """The 3e-6 error fails at the default rtol (1e-6) and passes with rtol=1e-5, on every call."""
    assert CALLS[call]().status == "FAIL"
    assert CALLS[call](rtol=1e-5).passed


@pytest.mark.parametrize("call", sorted(CALLS))
@pytest.mark.parametrize("keyword, value, error, words", [
    ("rtol", "1e-5", TypeError, "rtol must be a finite number >= 0, got '1e-5' (a str)"),
    ("atol", -1.0, ValueError, "atol must be a finite number >= 0, got -1.0"),
    ("eps", 0.0, ValueError, "eps must be a positive number"),
    ("resolution", 1.5, ValueError, "resolution must be a number in (0, 1)"),
    ("noise_factor", True, TypeError, "noise_factor must be a finite number >= 0, got True (a bool)"),
])
def test_a_wrong_keyword_names_itself(call, keyword, value, error, words):
    with pytest.raises(error) as info:
        CALLS[call](**{keyword: value})
    assert words in str(info.value)


@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_keyword_against_a_field_config_set_is_a_clear_error(call):
    """config sets rtol=1e-4 and the keyword says 1e-5: refused, naming the field and both values."""
    with pytest.raises(ValueError, match=r"rtol=1e-05 conflicts with config\.rtol=0\.0001"):
        CALLS[call](config=Config(rtol=1e-4), rtol=1e-5)


def test_a_keyword_beside_a_config_that_left_the_field_alone_is_applied():
    """config set only the step: rtol= is set on it (no conflict); the same value twice agrees."""
    r = gc.check(f, X, off, config=Config(step=1e-5), rtol=1e-5)
    assert r.passed and r.config.step == 1e-5 and r.config.rtol == 1e-5
    assert gc.check(f, X, off, config=Config(rtol=1e-5), rtol=1e-5).passed


@pytest.mark.parametrize("keyword, field, value", [
    ("rtol", "rtol", 1e-5), ("atol", "atol", 1e-7), ("eps", "step", 1e-4),
    ("resolution", "resolution", 0.05), ("noise_factor", "noise_factor", 2.0),
])
def test_a_keyword_gives_the_report_of_the_config_field(keyword, field, value):
    """check(..., rtol=1e-5) and check(..., config=<preset>.replace(rtol=1e-5)): the same config,
    verdicts, tolerances and numeric values entry by entry."""
    by_keyword = gc.check(f, X, off, **{keyword: value})
    by_config = gc.check(f, X, off, config=Config.for_dtype("float64").replace(**{field: value}))
    assert by_keyword.config == by_config.config and getattr(by_keyword.config, field) == value
    np.testing.assert_array_equal(by_keyword.codes, by_config.codes)
    np.testing.assert_array_equal(by_keyword.tolerance, by_config.tolerance)
    np.testing.assert_array_equal(by_keyword.numeric, by_config.numeric)


def test_eps_is_the_relative_step_of_the_differences():
    """eps=1e-2 on a cubic: the truncation error (h^2 x^3 / x^2 ~ 3e-5 relative) is beyond rtol, so
    without the second look and the referee (which would settle it) the correct claim disagrees at
    that step, and not at the default one (6e-6)."""
    cube = lambda x: (x**3).sum()  # noqa: E731
    x = np.array([1.5, -2.0])
    plain = gc.check(cube, x, lambda x: 3 * x**2, refine=False, adjudicate=False)
    coarse = gc.check(cube, x, lambda x: 3 * x**2, eps=1e-2, refine=False, adjudicate=False)
    assert plain.passed and coarse.config.step == 1e-2
    assert coarse.counts[Verdict.MISMATCH] == 2


def test_rtol_above_the_resolution_says_to_raise_the_resolution():
    """rtol=0.05 alone is refused (nothing could PASS within 1%); with resolution=0.1 it runs."""
    with pytest.raises(ValueError, match=r"rtol=0\.05 is not below resolution=0\.01.*raise resolution"):
        gc.check(f, X, off, rtol=0.05)
    assert gc.check(f, X, off, rtol=0.05, resolution=0.1).config.resolution == 0.1


def test_a_low_precision_claim_judged_in_ulps_says_rtol_did_not_apply():
    """float16 x of a precision-generic f: the claim is judged in ulps; rtol= is not silently
    dropped, the notes say it did not apply (as a Config's rtol does not)."""
    r = gc.check(f, X.astype(np.float16), np.cos, rtol=1e-3)
    assert any(n.startswith("rtol= not applied") and "bound_ulps=" in n for n in r.notes)


def test_the_rerun_line_is_a_call_with_the_keyword():
    """next_step's rerun spells rtol= as a keyword, which check accepts."""
    from gradcheck._report.next_step import rerun_with

    assert rerun_with("check", rtol=1e-8) == "gradcheck.check(f, x, grad, rtol=1e-08)"
