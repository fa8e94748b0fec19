"""The arbitrary-precision path of gradcheck.screen (issue 14): where f runs on gradcheck.mp
arrays and x is small, each block's directional derivative is computed exactly instead of
by finite differences, which lowers the detection limit for those blocks.

The subject is an f whose value is huge next to its slopes (a constant 1e9 on top of a
small tanh layer): finite differences along a block, and check's entry-wise rule on finite
differences, resolve only about 10% of a gradient entry there; the exact path resolves
check's rtol. Sizes are small (96 entries, a 6x96 layer) so every screen takes about a second.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import gradcheck
from gradcheck import Verdict
from gradcheck.mp import NotAdjudicable, mp_directional_derivative

MISMATCH = Verdict.MISMATCH
RNG = np.random.default_rng(1)
A = RNG.standard_normal((6, 96)) / 8
X = RNG.standard_normal(96)
OFFSET = 1e9


def f(v):
    return OFFSET + np.sum(np.tanh(A @ v))


def grad(v):
    return A.T @ (1 - np.tanh(A @ v) ** 2)


G = grad(X)
#: An entry of typical magnitude (the median |g|).
TYPICAL = int(np.argsort(np.abs(G))[G.size // 2])


def mismatches(report) -> set[int]:
    return {int(i[0]) for i in report.entries(MISMATCH)}


@pytest.fixture(scope="module")
def clean():
    """The correct gradient, screened with and without the exact path."""
    return gradcheck.screen(f, X, G, exact=True), gradcheck.screen(f, X, G, exact=False)


@pytest.fixture
def generous(monkeypatch):
    """exact='auto' decides on cost (timed) and on gain; a loaded machine must not change
    what the gain rule is tested to decide."""
    from gradcheck._screen import _entrywise, _exact

    monkeypatch.setattr(_entrywise, "MP_MAX_SECONDS", 10.0)
    monkeypatch.setattr(_entrywise, "MP_MAX_CALL_SECONDS", 1.0)
    monkeypatch.setattr(_exact, "AUTO_SECONDS", 600.0)


# -- the exact directional derivative itself -----------------------------------------------------


def test_mp_directional_derivative_matches_closed_forms():
    """d/dt f(x + t d) at 0 against closed forms: a cubic (exact), tanh of a linear map
    (to 20 digits), a reduction of an array output by a cotangent; a kink along the
    direction is reported as one, with its one-sided slopes."""
    x, d = np.array([0.5, 1.0, -2.0]), np.array([1.0, 0.0, -3.0])
    r = mp_directional_derivative(lambda v: np.sum(v ** 3), x, d)
    assert float(r.value) == float(np.sum(3 * x ** 2 * d)) and r.digits >= 20 and not r.is_kink
    d96 = RNG.standard_normal(96)
    r = mp_directional_derivative(f, X, d96)
    assert r.digits >= 14
    assert abs(float(r.value) - math.fsum(G * d96)) <= 1e-13 * np.sum(np.abs(G * d96))
    c = RNG.standard_normal(6)
    r = mp_directional_derivative(lambda v: np.tanh(A @ v), X, d96, cotangent=c)
    assert abs(float(r.value) - (A.T @ ((1 - np.tanh(A @ X) ** 2) * c)) @ d96) <= 1e-13
    r = mp_directional_derivative(lambda v: np.sum(np.maximum(v, 0)), np.array([0.0, 1.0]), np.array([1.0, 1.0]))
    assert r.is_kink and (float(r.left), float(r.right)) == (1.0, 2.0)


def test_mp_directional_derivative_refuses_clearly():
    with pytest.raises(NotAdjudicable, match="left arbitrary precision"):
        mp_directional_derivative(lambda v: sum(math.tanh(z) for z in v), X, X)
    with pytest.raises(ValueError, match="shape"):
        mp_directional_derivative(f, X, X[:5])


# -- the screen ----------------------------------------------------------------------------------


def test_auto_takes_the_path_only_where_it_lowers_the_limit(generous):
    """exact='auto' takes the path for the f above (finite differences far from check's
    rtol) and says so, and not for the same layer without the offset (finite differences
    already resolve rtol there: the path would cost time and lower nothing)."""
    assert "exact directional derivatives (f on gradcheck.mp arrays" in str(gradcheck.screen(f, X, G))
    plain = gradcheck.screen(lambda v: np.sum(np.tanh(A @ v)), X, G)
    assert plain.passed and "exact directional derivatives" not in str(plain)


def test_exact_path_lowers_the_stated_limit(clean):
    """The correct gradient passes with and without the path; the stated limit at the
    median entry drops from ~10% to check's rtol (1e-6)."""
    exact, fd = clean
    assert exact.passed and fd.passed and not mismatches(exact) and not mismatches(fd)
    assert "exact directional derivatives (f on gradcheck.mp arrays" in str(exact)
    assert "exact directional derivatives" not in str(fd)
    rel = lambda r: np.median(r.detection_limit / np.abs(G))  # noqa: E731
    assert rel(fd) > 1e-3                    # finite differences: f's round-off swamps the slopes
    assert 5e-7 < rel(exact) < 3e-6          # the exact path: check's rtol (1e-6), no more
    assert exact.counts[Verdict.SCREENED] == G.size


def test_error_below_the_finite_difference_limit_is_found_by_the_exact_path(clean):
    """A 1e-4 relative error at a typical entry: below what finite differences could have
    found there (their own stated limit says so), found at exactly its index by the exact
    path (and judged against the entry's exact derivative); the finite-difference screen,
    as its limit said, does not see it."""
    _, fd = clean
    bad = G.copy()
    bad[TYPICAL] *= 1 + 1e-4
    assert abs(bad[TYPICAL] - G[TYPICAL]) < fd.detection_limit[TYPICAL]
    r = gradcheck.screen(f, X, bad, exact=True)
    assert mismatches(r) == {TYPICAL} and not r.passed
    assert r.cause((TYPICAL,)) == gradcheck.Cause.EXACT
    assert mismatches(gradcheck.screen(f, X, bad, exact=False)) == set()


def test_stated_limit_of_the_exact_path_is_honest(clean):
    """Errors of 1.5x and 4x the stated limit are found at their index; the smallest error
    found is within 10x of the stated limit (0.05x is not found)."""
    limit = clean[0].detection_limit[TYPICAL]
    found = []
    for factor in (0.05, 1.5, 4.0):
        bad = G.copy()
        bad[TYPICAL] += factor * limit
        got = mismatches(gradcheck.screen(f, X, bad, exact=True))
        assert got <= {TYPICAL}
        if TYPICAL in got:
            found.append(factor)
    assert found[-2:] == [1.5, 4.0] and min(found) >= 0.1


def test_exact_path_is_refused_with_the_reason():
    """exact=True on an f that leaves arbitrary precision (math.tanh) or computes another
    function on object arrays (a branch on the dtype): not used, the reason said, and the
    screen is the finite-difference one (the branch would otherwise flag every entry)."""
    def leaves(v):
        return OFFSET + sum(math.tanh(z) for z in A @ v)

    r = gradcheck.screen(leaves, X, G, exact=True)
    text = str(r)  # the reason in words (issue 27: not the internal code "float_conversion")
    assert "exact directional derivatives not used: float() at" in text and "left arbitrary precision" in text
    assert "float_conversion" not in text and r.passed

    def branches(v):
        s = np.sum(np.tanh(A @ v))
        return OFFSET + (2 * s if v.dtype == object else s)

    r = gradcheck.screen(branches, X, G, exact=True)
    assert "exact directional derivatives disagree" in str(r)
    assert r.passed and not mismatches(r)


def test_exact_path_with_an_array_output():
    """An array output is reduced by the screen's random cotangent in the exact path too:
    a planted error in the VJP is found at its index, the correct VJP passes."""
    def fv(v):
        return OFFSET + np.tanh(A @ v)

    def vjp(v, c):
        return A.T @ ((1 - np.tanh(A @ v) ** 2) * c)

    def wrong(v, c):
        out = vjp(v, c)
        out[7] *= 1 + 1e-5
        return out

    ok = gradcheck.screen(fv, X, vjp, exact=True)
    assert ok.passed and "exact directional derivatives (f on" in str(ok)
    assert mismatches(gradcheck.screen(fv, X, wrong, exact=True)) == {7}


def test_exact_argument_is_validated():
    with pytest.raises(ValueError, match="exact="):
        gradcheck.screen(f, X, G, exact="yes")
    with pytest.raises(ValueError, match="adjudicate=False"):
        gradcheck.screen(f, X, G, exact=True, adjudicate=False)
