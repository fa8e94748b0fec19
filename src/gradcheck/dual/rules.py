"""Derivative tables of numpy's elementwise functions, on plain float64 arrays.

``UNARY[ufunc](x, y)`` is ``df/dx`` at ``x`` (``y = f(x)``); ``BINARY[ufunc](a, b, y)`` is the
pair of partial derivatives; ``VALUE_ONLY`` holds the predicates and comparisons, which have
none. Ties in ``maximum``/``minimum`` split the derivative evenly (the symmetric subgradient).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: A derivative factor: a constant, or an array broadcasting against the operands.
Factor = float | np.ndarray

# Each rule maps (x, y=f(x)) to df/dx; the tangent is that factor times the input tangent.
UNARY: dict[np.ufunc, Callable[[np.ndarray, np.ndarray], Factor]] = {
    np.negative: lambda x, y: -1.0,
    np.positive: lambda x, y: 1.0,
    np.conjugate: lambda x, y: 1.0,
    np.absolute: lambda x, y: np.sign(x),  # symmetric subgradient at 0
    np.fabs: lambda x, y: np.sign(x),
    np.exp: lambda x, y: y,
    np.exp2: lambda x, y: y * np.log(2.0),
    np.expm1: lambda x, y: y + 1.0,
    np.log: lambda x, y: 1.0 / x,
    np.log2: lambda x, y: 1.0 / (x * np.log(2.0)),
    np.log10: lambda x, y: 1.0 / (x * np.log(10.0)),
    np.log1p: lambda x, y: 1.0 / (1.0 + x),
    np.sqrt: lambda x, y: 0.5 / y,
    np.cbrt: lambda x, y: 1.0 / (3.0 * y * y),
    np.square: lambda x, y: 2.0 * x,
    np.reciprocal: lambda x, y: -y * y,
    np.sin: lambda x, y: np.cos(x),
    np.cos: lambda x, y: -np.sin(x),
    np.tan: lambda x, y: 1.0 + y * y,
    np.arcsin: lambda x, y: 1.0 / np.sqrt(1.0 - x * x),
    np.arccos: lambda x, y: -1.0 / np.sqrt(1.0 - x * x),
    np.arctan: lambda x, y: 1.0 / (1.0 + x * x),
    np.sinh: lambda x, y: np.cosh(x),
    np.cosh: lambda x, y: np.sinh(x),
    np.tanh: lambda x, y: 1.0 - y * y,
    np.arcsinh: lambda x, y: 1.0 / np.sqrt(x * x + 1.0),
    np.arccosh: lambda x, y: 1.0 / np.sqrt(x * x - 1.0),
    np.arctanh: lambda x, y: 1.0 / (1.0 - x * x),
    np.deg2rad: lambda x, y: np.pi / 180.0,
    np.rad2deg: lambda x, y: 180.0 / np.pi,
    # Piecewise constant: derivative 0 wherever it exists.
    np.sign: lambda x, y: 0.0,
    np.floor: lambda x, y: 0.0,
    np.ceil: lambda x, y: 0.0,
    np.trunc: lambda x, y: 0.0,
    np.rint: lambda x, y: 0.0,
}


_TWO_OVER_SQRT_PI = 1.1283791670955126
_ONE_OVER_SQRT_2PI = 0.3989422804014327

# scipy.special's ufuncs, matched by name (scipy is optional and not imported here).
NAMED_UNARY: dict[str, Callable[[np.ndarray, np.ndarray], Factor]] = {
    "erf": lambda x, y: _TWO_OVER_SQRT_PI * np.exp(-x * x),
    "erfc": lambda x, y: -_TWO_OVER_SQRT_PI * np.exp(-x * x),
    "ndtr": lambda x, y: _ONE_OVER_SQRT_2PI * np.exp(-0.5 * x * x),
    "expit": lambda x, y: y * (1.0 - y),
    "log_expit": lambda x, y: -np.expm1(y),  # 1 - sigmoid(x) = 1 - exp(log sigmoid(x))
}


def unary_rule(ufunc: np.ufunc) -> Callable[[np.ndarray, np.ndarray], Factor] | None:
    """The derivative rule of a one-input ufunc: numpy's by identity, scipy.special's
    (``erf``, ``erfc``, ``ndtr``, ``expit``, ``log_expit``) by name; None if it has none."""
    rule = UNARY.get(ufunc)
    if rule is None and getattr(np, ufunc.__name__, None) is not ufunc:
        rule = NAMED_UNARY.get(ufunc.__name__)
    return rule


def _tie(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weights of each side of a max: 1 for the winner, 1/2 each on a tie (symmetric)."""
    wa = (a > b) + 0.5 * (a == b)
    return wa, (b > a) + 0.5 * (a == b)


def _max_rule(a: np.ndarray, b: np.ndarray, y: np.ndarray, fmax: bool,
              want_min: bool) -> tuple[np.ndarray, np.ndarray]:
    wa, wb = _tie(-a, -b) if want_min else _tie(a, b)
    if fmax:  # fmax/fmin ignore a NaN side
        wa = np.where(np.isnan(b) & ~np.isnan(a), 1.0, wa)
        wb = np.where(np.isnan(a) & ~np.isnan(b), 1.0, wb)
    nan = np.isnan(y)
    return np.where(nan, np.nan, wa), np.where(nan, np.nan, wb)


def _pow_rule(a: np.ndarray, b: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # b * a**(b-1) is 0 * inf at a = 0, b = 0; the true derivative of a**0 is 0.
    da = np.where(b == 0, 0.0, b * np.power(a, b - 1.0))
    # y * log(a) is 0 * -inf at a = 0; 0**b is flat in b there (b > 0).
    db = np.where(y == 0, 0.0, y * np.log(np.where(y == 0, 1.0, a)))
    return da, db


BINARY: dict[np.ufunc, Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[Factor, Factor]]] = {
    np.add: lambda a, b, y: (1.0, 1.0),
    np.subtract: lambda a, b, y: (1.0, -1.0),
    np.multiply: lambda a, b, y: (b, a),
    np.divide: lambda a, b, y: (1.0 / b, -y / b),
    np.power: _pow_rule,
    np.float_power: _pow_rule,
    np.maximum: lambda a, b, y: _max_rule(a, b, y, False, False),
    np.minimum: lambda a, b, y: _max_rule(a, b, y, False, True),
    np.fmax: lambda a, b, y: _max_rule(a, b, y, True, False),
    np.fmin: lambda a, b, y: _max_rule(a, b, y, True, True),
    np.arctan2: lambda a, b, y: (b / (a * a + b * b), -a / (a * a + b * b)),
    np.hypot: lambda a, b, y: (a / y, b / y),
    np.logaddexp: lambda a, b, y: (np.exp(a - y), np.exp(b - y)),
}


VALUE_ONLY = {
    np.greater, np.greater_equal, np.less, np.less_equal, np.equal, np.not_equal,
    np.isfinite, np.isinf, np.isnan, np.signbit,
    np.logical_and, np.logical_or, np.logical_xor, np.logical_not,
}
