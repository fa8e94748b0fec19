"""THE round-off model of a difference, and f's round-off measured from two of them.

Modelled: a combination of evaluations of ``f`` divided by a spacing carries at most

    noise = u * (|f_1| + |f_2| + ...) / spacing                       (:func:`modelled`)

(a central difference: ``f(x+h)``, ``f(x-h)`` over ``|(x+h) - (x-h)|``; the gap between the
one-sided slopes: ``f(x+h)``, ``f(x-h)``, ``2 f(x)`` over ``h``; the Taylor remainder:
``f(x+hd)``, ``f(x)`` and the linear term's size, over 1), ``u`` the unit round-off in use.

Measured: where truncation is negligible (the small steps), two central differences of one
entry disagree by f's own round-off over the step, ``m = |D(s) - D(s')| * s``
(:func:`measured`), which the model ``u |f|`` underestimates when f cancels large intermediate
values. A difference at step ``t`` then carries ``max(k * noise(t), 3 m / t)``
(:func:`with_measured`; ``k`` the noise factor). The step study, the quick look, the kink test
and the Taylor test use these; the screen's blocks join as screen moves onto the layer.
(``gradcheck._refine.roundoff`` measures something else: whether ``f`` computes in a lower
precision than it returns, by a fourth difference at a few entries.)

>>> modelled(2.0 ** -53, (np.array([1.0]), np.array([3.0])), np.array([2.0 ** -20])).tolist() == [2.0 ** -31]
True
>>> with_measured(np.array([1e-9]), measured(np.array([1.0]), np.array([1.0 + 1e-6]), np.array([1e-5])),
...               np.array([1e-5])).round(12).tolist()
[3e-06]
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Values = np.ndarray | float


def modelled(unit: float, values: Sequence[Values], spacing: Values = 1.0) -> np.ndarray:
    """``unit * (|values[0]| + |values[1]| + ...) / spacing``, summed in that order."""
    total = np.abs(values[0])
    for v in values[1:]:
        total = total + np.abs(v)
    return unit * total / spacing


def measured(d_s: Values, d_t: Values, half_s: Values) -> np.ndarray:
    """f's round-off measured from two differences of one entry: ``|D(s) - D(t)| * s``."""
    return np.abs(d_s - d_t) * half_s


def with_measured(k_noise: Values, roundoff: Values, half: Values) -> np.ndarray:
    """The round-off of a difference at step ``half``: the model's ``k * noise`` or, when
    larger, the measured round-off ``roundoff`` over that step, ``3 * roundoff / half``."""
    return np.maximum(k_noise, 3.0 * roundoff / half)
