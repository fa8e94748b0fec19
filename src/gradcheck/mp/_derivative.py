"""The exact partial derivative of one entry, certified by agreement across two precisions."""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import mpmath
import numpy as np
from mpmath import libmp
from numpy.typing import ArrayLike

from ._array import MPArray
from ._array import _exact_tuple_or_raise as _exact
from ._context import Context, Mpf, owned
from ._convert import to_mp_in
from ._evaluate import run_checked
from ._scalar import MPFloat, Real, _make_mpf, _wrap

_PRECISION_GAP = 20  # digits between the two precisions that must agree
# Error bounds and digit counts need no more than float64's 53 bits (mpmath's default, at
# which earlier versions computed them in the global context).
_BOOKKEEPING_PREC = 53
# Richardson-extrapolated central differences err by ~h**4 plus round-off ~10**-p / h; the
# step h = 10**(-p/5) balances them, leaving about 0.8 * p correct digits.
_DIGITS_PER_DPS = 0.8


def certified_digits(a: Real, b: Real, *, cap: int | None = None) -> int:
    """How many leading significant decimal digits ``a`` and ``b`` agree on.

    ``floor(-log10(|a - b| / max(|a|, |b|)))``, clipped to ``[0, cap]``; equal values give
    ``cap`` (default: mpmath's current ``dps``, the most a value at that precision carries).
    Opposite signs, a zero against a non-zero, or a NaN give 0. Computed in a private
    context: the answer does not depend on mpmath's global precision.

    >>> certified_digits(1.23456, 1.23457, cap=30)
    5
    >>> certified_digits(2.0, 2.0, cap=30)
    30
    """
    cap = mpmath.mp.dps if cap is None else cap
    with owned() as ctx:
        return _agreement(a, b, cap, ctx)


def _agreement(a: Real, b: Real, cap: int, ctx: Context) -> int:
    """:func:`certified_digits` in the private context ``ctx`` (left at 53 bits)."""
    ctx.prec = _BOOKKEEPING_PREC
    x, y = ctx.make_mpf(_exact(a)), ctx.make_mpf(_exact(b))
    if ctx.isnan(x) or ctx.isnan(y):
        return 0
    if x == y:
        return cap
    relative = abs(x - y) / max(abs(x), abs(y))
    if relative >= 1:
        return 0
    return int(min(cap, max(0, ctx.floor(-ctx.log10(relative)))))


def _limits(dps: int, min_digits: int | None, max_dps: int | None) -> tuple[int, int]:
    """``(min_digits, max_dps)`` with their defaults; a ``max_dps`` too low is a ValueError."""
    min_digits = 2 * dps // 3 if min_digits is None else min_digits
    max_dps = dps + 200 if max_dps is None else max_dps
    if max_dps < dps + _PRECISION_GAP:
        raise ValueError(f"max_dps={max_dps} leaves no room above dps={dps} for a second "
                         f"precision {_PRECISION_GAP} digits higher")
    return min_digits, max_dps


@dataclass(frozen=True)
class MPDerivative:
    """The derivative of ``f`` along one entry, from two arbitrary-precision estimates.

    ``value`` is the central (symmetric) derivative, ``digits`` the significant digits on which
    the estimates at the two working precisions ``dps`` agree, ``error`` a bound on
    ``|value - exact|`` (their difference plus a round-off allowance). ``left`` and ``right``
    are the one-sided derivatives with their own error bounds; where they differ beyond those
    bounds the point is a kink (``is_kink``) and ``value`` is only the mean of the two slopes.
    A derivative that is zero has no significant digits (``digits == 0``): read ``error``,
    an absolute bound, instead; ``negligible`` says the derivative is zero to within
    ``10**(-2 * min_digits)`` of ``|f| / max(1, |x_i|)`` (certified zero on f's own scale).
    ``evaluations`` counts calls of ``f``.
    """

    value: Mpf
    digits: int
    error: Mpf
    left: Mpf
    right: Mpf
    left_error: Mpf
    right_error: Mpf
    dps: tuple[int, int]
    evaluations: int
    negligible: bool = False

    @property
    def is_kink(self) -> bool:
        """``True`` when the one-sided derivatives differ by more than ten times their errors.

        Decided exactly, whatever mpmath's precision."""
        gap = libmp.mpf_abs(libmp.mpf_sub(self.right._mpf_, self.left._mpf_))
        return bool(libmp.mpf_gt(gap, libmp.mpf_mul(libmp.from_int(10), self.side_error._mpf_)))

    @property
    def side_error(self) -> Mpf:
        """``left_error + right_error``, exactly (an ``mpmath.mpf``)."""
        return _make_mpf(libmp.mpf_add(self.left_error._mpf_, self.right_error._mpf_))


@dataclass(frozen=True)
class _Estimate:
    central: Mpf
    left: Mpf
    right: Mpf
    noise: Mpf  # round-off allowance of these estimates
    scale: Mpf  # |f| / max(1, |x_i|): the natural size of a derivative here


def mp_derivative(
    f: Callable[[np.ndarray], object],
    x: ArrayLike,
    index: int | tuple[int, ...],
    *,
    dps: int = 30,
    cotangent: ArrayLike | None = None,
    min_digits: int | None = None,
    max_dps: int | None = None,
) -> MPDerivative:
    """The exact partial derivative of ``f`` at ``x`` along entry ``index``.

    ``f`` is unmodified numpy code, run on object arrays of :class:`MPFloat` (see
    :func:`evaluate`). ``index`` is a multi-index, or an int taken as a flat index. If ``f``
    returns an array, ``cotangent`` (same shape, e.g. float64) reduces it to the scalar
    ``sum(cotangent * f(x))``, with the cotangent's values taken exactly.

    Richardson-extrapolated central and one-sided differences are computed at ``dps`` and
    ``dps + 20`` digits with steps ``max(1, |x_i|) * 10**(-p/5)``; their agreement is the
    certificate. When fewer than ``min_digits`` (default ``2 * dps // 3``) agree, because ``f``
    is large next to this derivative, precision is raised, up to ``max_dps`` (default
    ``dps + 200``); a derivative that is zero to ``10**(-2 * min_digits)`` of ``|f| / |x_i|`` also
    stops the search. Raises :class:`NotAdjudicable` when ``f`` cannot run at high precision.

    >>> import numpy as np
    >>> d = mp_derivative(lambda v: np.sum(np.tanh(v)), np.array([0.5, 1.0]), 0)
    >>> with mpmath.workdps(30):
    ...     exact = 1 / mpmath.cosh(0.5) ** 2
    >>> d.digits >= 20, abs(d.value - exact) < 1e-20 * exact
    (True, True)
    """
    min_digits, max_dps = _limits(dps, min_digits, max_dps)
    # One private context per derivative: its precision moves between the estimates, and
    # nothing outside this call can move it.
    with owned() as ctx:
        base = to_mp_in(x, ctx, dps)
        where = _multi_index(index, base.shape)
        cot = None if cotangent is None else to_mp_in(cotangent, ctx)
        return _derive(_Contracted(f, base, where, cot, ctx), dps, min_digits, max_dps)


def _derive(g: _Contracted, dps: int, min_digits: int, max_dps: int) -> MPDerivative:
    """Estimates at two precisions ``_PRECISION_GAP`` apart, raised until they agree on
    ``min_digits`` (or the derivative is negligible, or ``max_dps`` is reached)."""
    ctx = g.ctx
    p = dps
    low, high = _estimate(g, p), _estimate(g, p + _PRECISION_GAP)
    while True:
        ctx.prec = _BOOKKEEPING_PREC
        error = abs(low.central - high.central) + high.noise
        digits = min(_agreement(low.central, high.central, dps, ctx),
                     _digits(high.noise, high.central, dps, ctx))
        negligible = bool(error <= ctx.mpf(10) ** (-2 * min_digits) * high.scale)
        settled = digits >= min_digits or negligible
        if settled or p + 2 * _PRECISION_GAP > max_dps:
            break
        # The low estimate lost this many digits to cancellation; give them back, with margin.
        lost = max(0.0, _DIGITS_PER_DPS * p - digits)
        p = min(max(p + _PRECISION_GAP, math.ceil((min_digits + lost + 5) / _DIGITS_PER_DPS)),
                max_dps - _PRECISION_GAP)
        low, high = _estimate(g, p), _estimate(g, p + _PRECISION_GAP)
    ctx.prec = _BOOKKEEPING_PREC
    return MPDerivative(  # exact copies in mpmath's global type: what users compute with
        value=_make_mpf(high.central._mpf_),
        digits=digits,
        error=_make_mpf(error._mpf_),
        left=_make_mpf(high.left._mpf_),
        right=_make_mpf(high.right._mpf_),
        left_error=_make_mpf((abs(low.left - high.left) + high.noise)._mpf_),
        right_error=_make_mpf((abs(low.right - high.right) + high.noise)._mpf_),
        dps=(p, p + _PRECISION_GAP),
        evaluations=g.calls,
        negligible=negligible,
    )


def _digits(error: Mpf, value: Mpf, cap: int, ctx: Context) -> int:
    if not error:
        return cap
    if not value:
        return 0
    return int(min(cap, max(0, ctx.floor(-ctx.log10(error / abs(value))))))


def _multi_index(index: int | tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    size = math.prod(shape)
    if isinstance(index, (int, np.integer)):
        if not -size <= index < size:
            raise IndexError(f"flat index {index} is out of range for shape {shape} "
                             f"({size} entries)")
        return tuple(int(i) for i in np.unravel_index(int(index) % size, shape))
    where = tuple(int(i) for i in index)
    if len(where) != len(shape) or not all(-n <= i < n for i, n in zip(where, shape)):
        raise IndexError(f"index {where} does not address an entry of an array of shape {shape}")
    return tuple(i % n for i, n in zip(where, shape))


class _Contracted:
    """``t -> sum(cotangent * f(x with x[index] = t))`` as an mpf of ``ctx``, at its current
    precision."""

    def __init__(self, f: Callable[[np.ndarray], object], base: MPArray, index: tuple,
                 cot: MPArray | None, ctx: Context) -> None:
        self.f, self.base, self.index, self.ctx, self.calls = f, base, index, ctx, 0
        self.x_i = ctx.make_mpf(base[index]._t)
        if cot is not None:
            flat = cot.reshape(-1)
            self.cot_shape: tuple[int, ...] | None = cot.shape
            self.terms = [(k, ctx.make_mpf(flat[k]._t)) for k in range(flat.size) if flat[k]]
        else:
            self.cot_shape = None

    def _at(self, t: Mpf) -> MPArray:
        """``x`` with this derivative's parameter set to ``t``."""
        x = self.base.copy()
        x[self.index] = _wrap(t._mpf_, self.ctx)
        return x

    def __call__(self, t: Mpf) -> Mpf:
        ctx = self.ctx
        x = self._at(t)
        self.calls += 1
        y = run_checked(self.f, x, ctx)
        if self.cot_shape is None:
            if np.ndim(y) != 0:
                raise ValueError(f"f returned an array of shape {np.shape(y)}; pass a cotangent "
                                 "of that shape to reduce it to a scalar")
            return ctx.make_mpf((y if isinstance(y, MPFloat) else y[()])._t)
        if np.shape(y) != self.cot_shape:
            raise ValueError(f"cotangent has shape {self.cot_shape} but f returned shape "
                             f"{np.shape(y)}")
        flat = np.asarray(y).reshape(-1)
        return ctx.fdot((c, ctx.make_mpf(flat[k]._t)) for k, c in self.terms)


class _Along(_Contracted):
    """``t -> sum(cotangent * f(x + t d))``: the parameter is the step along ``d`` (x_i = 0).

    ``x_j + t d_j`` is computed at the working precision; with ``t`` a power of two and
    ``x_j``, ``d_j`` float values it is exact while the precision holds both (it does at the
    steps :func:`_estimate` takes, down to ``|x_j| / |d_j|`` of about ``2**(prec - 53)``)."""

    def __init__(self, f: Callable[[np.ndarray], object], base: MPArray, support: np.ndarray,
                 direction: np.ndarray, cot: MPArray | None, ctx: Context) -> None:
        super().__init__(f, base, tuple(0 for _ in base.shape), cot, ctx)
        self.x_i = ctx.zero
        flat = base.reshape(-1)
        self.support = [(int(k), ctx.make_mpf(flat[k]._t), ctx.make_mpf(_exact(float(v))))
                        for k, v in zip(support, direction)]

    def _at(self, t: Mpf) -> MPArray:
        ctx = self.ctx
        x = self.base.copy()
        flat = x.reshape(-1)  # a view: x is C-contiguous
        for k, x_k, d_k in self.support:
            flat[k] = _wrap(ctx.fadd(x_k, ctx.fmul(t, d_k))._mpf_, ctx)
        return x


def mp_directional_derivative(
    f: Callable[[np.ndarray], object],
    x: ArrayLike,
    direction: ArrayLike,
    *,
    dps: int = 30,
    cotangent: ArrayLike | None = None,
    min_digits: int | None = None,
    max_dps: int | None = None,
) -> MPDerivative:
    """The exact derivative of ``f`` at ``x`` along ``direction``: ``d/dt f(x + t d)`` at 0.

    :func:`mp_derivative` along a direction instead of one entry: ``direction`` is a float
    array shaped like ``x`` (its non-zero entries are the ones perturbed, each by ``t d_j``
    at the working precision), ``t`` steps ``10**(-p/5)`` (a power of two). The same two
    precisions certify the value, the same one-sided derivatives detect a kink along the
    direction, and ``cotangent`` reduces an array output the same way. ``gradcheck.screen``
    uses it for the directional derivatives of its blocks when ``f`` runs on ``gradcheck.mp``
    arrays.

    >>> import numpy as np
    >>> x, d = np.array([0.5, 1.0, -2.0]), np.array([1.0, 0.0, -3.0])
    >>> r = mp_directional_derivative(lambda v: np.sum(v ** 3), x, d)
    >>> float(r.value) == 3 * 0.25 * 1.0 + 3 * 4.0 * -3.0, r.digits >= 20
    (True, True)
    """
    min_digits, max_dps = _limits(dps, min_digits, max_dps)
    d = np.asarray(direction, dtype=np.float64)
    if d.shape != np.shape(x):
        raise ValueError(f"direction has shape {d.shape}, x has shape {np.shape(x)}: they must match")
    if not np.isfinite(d).all():
        raise ValueError("direction has non-finite entries")
    support = np.flatnonzero(d)
    with owned() as ctx:
        base = to_mp_in(np.ascontiguousarray(x), ctx, dps)
        cot = None if cotangent is None else to_mp_in(cotangent, ctx)
        return _derive(_Along(f, base, support, d.reshape(-1)[support], cot, ctx), dps, min_digits, max_dps)


def _estimate(g: _Contracted, p: int) -> _Estimate:
    """Central and one-sided Richardson estimates at ``p`` digits, from five evaluations."""
    ctx = g.ctx
    ctx.dps = p
    x_i = g.x_i
    scale = max(ctx.mpf(1), abs(x_i))
    # A power of two, so that x_i +- h and x_i +- h/2 are exact at this precision.
    octave = int(ctx.floor(ctx.log(scale, 2)))
    h = ctx.ldexp(1, octave - math.ceil(p * math.log2(10) / 5))
    points = [x_i - h, x_i - h / 2, x_i, x_i + h / 2, x_i + h]
    gm1, gm2, g0, gp2, gp1 = (g(t) for t in points)
    xm1, xm2, _, xp2, xp1 = points
    d1 = (gp1 - gm1) / (xp1 - xm1)
    d2 = (gp2 - gm2) / (xp2 - xm2)
    right = 2 * (gp2 - g0) / (xp2 - x_i) - (gp1 - g0) / (xp1 - x_i)
    left = 2 * (g0 - gm2) / (x_i - xm2) - (g0 - gm1) / (x_i - xm1)
    largest = max(abs(v) for v in (gm1, gm2, g0, gp2, gp1))
    # Each value carries ~10**-p relative round-off; the differences divide it by h.
    noise = ctx.mpf(10) ** (3 - p) * largest / h
    return _Estimate(d2 + (d2 - d1) / 3, left, right, noise, largest / scale)
