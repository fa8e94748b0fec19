"""The screen's exact sum (``_screen._fsum.fsum2``) gives ``math.fsum``'s result bit for bit:
both are the correctly rounded exact sum; the kernel only skips the Python list."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from gradcheck._screen._fsum import fsum2

FINITE = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e299, max_value=1e299)


def _same(a: float, b: float) -> bool:
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


@given(arrays(np.float64, st.integers(0, 40), elements=FINITE), arrays(np.float64, st.integers(0, 40), elements=FINITE))
def test_fsum2_is_math_fsum_bit_for_bit(a, b):
    """Any finite doubles (subnormals, cancellations, both signs of zero among them)."""
    assert _same(fsum2(a, b), math.fsum(list(a) + list(b)))


@pytest.mark.parametrize("a, b", [
    ([1e16, 1.0, -1e16], [0.5, 0.25]),                           # cancellation
    ([1.0, 2.0**-53], [2.0**-106]),                              # a tie broken by a far partial
    ([1.0, 2.0**-53], []),                                       # an exact tie: half-even
    ([5e-324, 5e-324], [-1e-320]),                               # subnormals
    ([2.0**1000, -2.0**1000], [2.0**-1000]),                     # the whole exponent range
])
def test_fsum2_hard_cases(a, b):
    assert _same(fsum2(np.array(a), np.array(b)), math.fsum(a + b))


@pytest.mark.parametrize("values", [[np.inf, 1.0], [np.nan], [1e308, 1e308], [np.inf, -np.inf]])
def test_fsum2_hands_non_finite_and_overflow_to_math_fsum(values):
    """inf and NaN give math.fsum's value; an intermediate overflow raises as math.fsum does."""
    try:
        want = math.fsum(values)
    except (OverflowError, ValueError) as exc:
        with pytest.raises(type(exc)):
            fsum2(np.array(values), np.array([]))
        return
    got = fsum2(np.array(values), np.array([]))
    assert got == want or (math.isnan(got) and math.isnan(want))


def test_fsum2_on_a_million_values():
    """A block's worth: the same bits as math.fsum on the list."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(10**6), rng.standard_normal(10**6) * 1e-17
    assert _same(fsum2(a, b), math.fsum(np.concatenate([a, b]).tolist()))
