"""The arbitrary-precision referee: the exact derivative of entries still in doubt.

After the step study, an entry can still be MISMATCH (a bug, or an artifact the steps
could not explain), UNCHECKED (below finite-difference noise) or KINK. When ``f`` runs on
:mod:`gradcheck.mp` object arrays, each such entry's derivative is computed at two working
precisions; the digits on which they agree are certified. The claim is then judged against
that exact value by the verdict rule (``gradcheck._classify.rule.verdicts``), with

    tol = atol + rtol*|exact| + max(k*u*max|a|, r_i) + bound(exact)

where ``r_i`` is the claim's own round-off at the entry as measured (``claimround``: a
backward that computes an entry by cancellation rounds at the size of its terms); 0 when
not measured (a claim given as an array, screening, check_params).

    MISMATCH  |a - exact| > tol -- now confirmed against the exact value
    PASS      |a - exact| <= tol and tol <= resolution * max(|a|, |exact|), as everywhere;
              or (EXACT_ZERO) the exact value, with its error bound, is within the
              backward's round-off k*u*max|a| of zero: a claim of 1e-17 for a true 0
              passes, the seed's key-bias case
    UNCHECKED otherwise: the claim agrees only to a large share of a value that is barely
              above the backward's round-off
    KINK      the one-sided derivatives differ and the claim lies between them

A function that drops to float on the way (``math.tanh``, ``astype(np.float32)``, a C call)
is reported as not adjudicable, with the reason; its entries keep their earlier verdicts.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._classify.rule import verdicts
from .._core.config import DEFAULT_RESOLUTION
from .._core.errors import WorkerDiedError
from .._core.tolerance import Tolerance
from .._core.verdict import Cause, Verdict
from .._evaluate import WorkerDied, fork_hazard, fork_map, usable_cores

#: Entries beyond this many are left with their step-study verdicts (and the report says so).
MAX_ADJUDICATED = 256
#: From this many entries on, adjudication is spread over a fork process pool.
PARALLEL_MIN = 12

#: Why the referee does not run a compiled f (numba or C), for the report.
COMPILED_F = "f is compiled code (numba or C), which cannot run at arbitrary precision"


def referee_may_run(backend: object, f: object) -> tuple[bool, str | None]:
    """Whether the referee may run ``f`` on arbitrary-precision arrays, asked of both.

    The backend says so with ``mp_capable`` (its evaluation is plain numpy code: numpy,
    dual); ``f`` refuses when it is compiled code: a numba function, or an object that
    declares ``gradcheck_mp_capable = False`` (a :class:`gradcheck.native.NativeFunction`).
    Returns ``(may_run, why_not)``; ``why_not`` is :data:`COMPILED_F` when ``f`` is what
    refuses (the report says so when the referee was asked for), else None.

    >>> import numpy as np
    >>> from gradcheck.backends import NumpyBackend
    >>> referee_may_run(NumpyBackend(), np.sin)
    (True, None)
    """
    if getattr(f, "gradcheck_mp_capable", True) is False or _numba_compiled(f):
        return False, COMPILED_F
    return bool(getattr(backend, "mp_capable", False)), None


def referee_for(backend: object, f: Callable[..., object], x: np.ndarray, cotangent: np.ndarray | None, *,
                adjudicate: bool | str, digits: int, f_mp: Callable[[np.ndarray], object] | None = None,
                variant: Callable[..., Referee] | None = None) -> Referee | None:
    """THE place a referee is built, under THE rule: none when ``adjudicate`` is False or
    :func:`referee_may_run` refuses ``backend`` and ``f``; else a :class:`Referee` of ``f_mp``
    (default: ``f`` itself) at ``x``, or ``variant(f_mp, x, cotangent, digits=...)`` (the
    per-slice referee of ``independent_axes``).

    >>> from gradcheck.backends import NumpyBackend
    >>> referee_for(NumpyBackend(), np.sin, np.ones(2), None, adjudicate="auto", digits=20) is not None
    True
    >>> referee_for(NumpyBackend(), np.sin, np.ones(2), None, adjudicate=False, digits=20) is None
    True
    """
    if adjudicate is False or not referee_may_run(backend, f)[0]:
        return None
    fn = f_mp if f_mp is not None else (lambda v: f(v))
    return (variant or Referee)(fn, x, cotangent, digits=digits)


def _numba_compiled(f: object) -> bool:
    """A numba dispatcher (``@njit``, ``@jit``) or numba ufunc; numba is imported only when
    it already is (otherwise ``f`` cannot be one)."""
    if "numba" not in sys.modules:
        return False
    from numba.core.dispatcher import Dispatcher
    from numba.np.ufunc.dufunc import DUFunc
    from numba.np.ufunc.gufunc import GUFunc

    return isinstance(f, (Dispatcher, DUFunc, GUFunc))


@dataclass
class Adjudication:
    """What the referee found for the entries it looked at (aligned with ``positions``)."""

    positions: np.ndarray        # indices into the judged arrays
    codes: np.ndarray
    causes: np.ndarray
    exact: np.ndarray
    digits: np.ndarray
    error: np.ndarray            # bound on |exact - f'| (NaN where not computed)
    left: np.ndarray
    right: np.ndarray
    evaluations: int
    seconds: float
    forgiven: int = 0            # entries the claim's measured round-off kept from a MISMATCH


class Referee:
    """Exact derivatives of ``f_mp`` (a function of one array, mp-runnable) at ``x``.

    ``x`` is the float array in its own shape; ``cotangent`` reduces an array output.
    """

    #: Claims of 0 may be proven together by directional derivatives of ``f`` on the whole of
    #: ``x`` (:mod:`.zeros`); a referee that differentiates pieces of ``x`` says False.
    batches_zeros = True

    def __init__(self, f_mp: Callable[[np.ndarray], object], x: np.ndarray, cotangent: np.ndarray | None,
                 *, digits: int = 30) -> None:
        self.f_mp, self.x, self.cotangent, self.digits = f_mp, x, cotangent, digits
        self._reason: str | None | bool = False  # False: not probed yet
        self._probes = 0  # calls of f by unavailable() not yet taken by take_probes()

    def piece(self, flat_index: int) -> tuple[np.ndarray, int | tuple[int, ...], np.ndarray | None]:
        """What entry ``flat_index`` is differentiated on: ``(the input, the entry's index in it,
        the cotangent)``: ``x`` whole here, the entry's own slice in a per-slice referee."""
        return np.asarray(self.x, dtype=np.float64), int(flat_index), self.cotangent

    def probe_point(self) -> np.ndarray:
        """Where :meth:`unavailable` tries ``f`` at high precision: the first entry's input."""
        return np.asarray(self.piece(0)[0], dtype=np.float64)

    def take_probes(self) -> int:
        """The calls of ``f`` :meth:`unavailable` made since the last call (0 or 1; the
        caller counts them once, with the referee's other evaluations)."""
        spent, self._probes = self._probes, 0
        return spent

    def unavailable(self) -> str | None:
        """None if ``f`` runs at high precision, else why not (probed once, cheaply: one call of
        ``f`` at 20 digits, at :meth:`probe_point`; :meth:`take_probes` counts it)."""
        if self._reason is False:
            from ..mp import NotAdjudicable, evaluate, to_mp

            self._probes += 1
            try:
                evaluate(self.f_mp, to_mp(self.probe_point()), dps=20)
                self._reason = None
            except NotAdjudicable as exc:  # the detail says it in the user's words, not the reason's code
                self._reason = exc.detail
            except Exception as exc:  # f failed on object arrays: say how
                self._reason = f"f raised {type(exc).__name__} on arbitrary-precision input: {exc}"
        return self._reason  # type: ignore[return-value]

    def derivatives(self, flat_indices: np.ndarray) -> list[tuple | None]:
        """Per entry ``(value, error, digits, left, right, side_error, is_kink, evaluations,
        negligible)``
        as floats, or None where f could not be evaluated at high precision there."""
        from ..mp import NotAdjudicable, mp_derivative

        out: list[tuple | None] = []
        for i in flat_indices:
            x_at, local, v = self.piece(int(i))
            try:
                d = mp_derivative(self.f_mp, np.asarray(x_at, dtype=np.float64), local, dps=self.digits, cotangent=v)
            except (NotAdjudicable, ArithmeticError, ValueError):
                out.append(None)
                continue
            out.append((float(d.value), float(d.error), int(d.digits), float(d.left), float(d.right),
                        float(d.side_error), bool(d.is_kink), int(d.evaluations), bool(d.negligible)))
        return out

    def _all_derivatives(self, flat_indices: np.ndarray) -> list[tuple | None]:
        workers = min(usable_cores(), flat_indices.size // (PARALLEL_MIN // 2))
        if workers < 2 or flat_indices.size < PARALLEL_MIN or fork_hazard() is not None:
            return self.derivatives(flat_indices)
        # Forked workers inherit the referee (the user's function need not be picklable), so
        # concurrent adjudications in threads each fork their own pool.
        try:
            parts = fork_map(Referee.derivatives, np.array_split(flat_indices, workers * 2), state=self,
                             workers=workers)
        except WorkerDied as died:
            raise self._died(flat_indices, died.how) from died.__cause__
        return [d for part in parts for d in part]

    def _died(self, flat_indices: np.ndarray, how: str) -> WorkerDiedError:
        """The error for a referee pool broken by a dead worker (f at arbitrary precision,
        or native code it reached, crashed or exited in one of ``flat_indices``' entries)."""
        entry = lambda i: tuple(int(k) for k in np.unravel_index(int(i), np.shape(self.x)))  # noqa: E731
        return WorkerDiedError(
            entry(flat_indices.min()), entry(flat_indices.max()), flat_indices.size, how,
            task="a worker process of the referee died ({how}) while computing the exact "
                 "derivative (arbitrary precision) of",
            remedy="adjudicate=False skips the referee; gradcheck.mp.mp_derivative(f, x, index) "
                   "computes one entry's exact derivative in this process, where the crash shows.")

    def adjudicate(self, positions: np.ndarray, flat_indices: np.ndarray, analytic: np.ndarray,
                   current: np.ndarray, *, rtol: float, atol: float, noise_factor: float, unit: float,
                   claim_scale: float, resolution: float = DEFAULT_RESOLUTION,
                   claim_noise: np.ndarray | None = None) -> Adjudication:
        """Judge ``analytic[positions]`` against the exact derivatives at ``flat_indices``;
        entries f cannot be evaluated at keep their ``current`` codes. ``claim_noise``
        (aligned with ``positions``) is the claim's own round-off as measured
        (:mod:`.claimround`): where it exceeds ``k*u*claim_scale`` it is what a MISMATCH
        must exceed (``forgiven`` counts the entries it kept from one)."""
        started = time.perf_counter()
        n = positions.size
        codes = np.empty(n, dtype=np.uint8)
        causes = np.empty(n, dtype=np.uint8)
        exact = np.full(n, np.nan)
        error = np.full(n, np.nan)
        digits = np.full(n, -1, dtype=np.int16)
        left = np.full(n, np.nan)
        right = np.full(n, np.nan)
        evaluations = forgiven = 0
        rule = Tolerance(rtol, atol, noise_factor, resolution)
        round_off = rule.round_off(unit, claim_scale)
        found = self._all_derivatives(np.asarray(flat_indices))
        for j, d in enumerate(found):
            a = float(analytic[positions[j]])
            if d is None:
                codes[j], causes[j] = current[positions[j]], Cause.STEP_STUDY
                continue
            e, bound, digits[j], left[j], right[j], side_error, is_kink, used, negligible = d
            evaluations += used
            exact[j], error[j] = e, bound
            if is_kink:
                lo, hi = min(left[j], right[j]), max(left[j], right[j])
                slack = rule.against_exact(max(abs(lo), abs(hi)), round_off + side_error)
                codes[j] = Verdict.KINK if lo - slack <= a <= hi + slack else Verdict.MISMATCH
                causes[j] = Cause.KINK_EXACT
                continue
            measured = 0.0 if claim_noise is None else float(claim_noise[j])
            codes[j], causes[j] = _judge_exact(a, e, bound, round_off, rtol, atol, resolution, negligible,
                                               claim_scale, measured)
            if measured > round_off and codes[j] != Verdict.MISMATCH:
                forgiven += _judge_exact(a, e, bound, round_off, rtol, atol, resolution, negligible,
                                         claim_scale)[0] == Verdict.MISMATCH
        return Adjudication(positions, codes, causes, exact, digits, error, left, right, evaluations,
                            time.perf_counter() - started, int(forgiven))


def _judge_exact(a: float, e: float, bound: float, round_off: float, rtol: float, atol: float,
                 resolution: float, negligible: bool = False, claim_scale: float = 0.0,
                 measured: float = 0.0) -> tuple[int, int]:
    """Verdict and cause of claim ``a`` against the exact value ``e`` (error ``bound``).

    ``round_off`` (k*u*max|a|, the backward's own round-off at the claim's largest scale)
    can be a large share of a tiny entry: such an entry is UNCHECKED unless the claim
    agrees with the exact value without that allowance (:func:`_tight`). ``measured`` (the
    claim's own round-off at this entry, as measured) widens the allowance for a
    MISMATCH only: it never makes a PASS (a wide tolerance is UNCHECKED by the share rule,
    and the exact-zero and tight PASSes keep ``round_off``)."""
    rule = Tolerance(rtol, atol, 1.0, resolution)  # the noise: the backward's round-off and e's bound
    floor = rule.floor(max(round_off, measured) + bound)
    err, tol = abs(a - e), floor + rule.value_term(abs(e))
    one = lambda v: np.array([v], dtype=np.float64)  # noqa: E731
    code = int(verdicts(one(err), one(max(abs(a), abs(e))), one(floor), one(tol),
                        np.array([np.isfinite(a) and np.isfinite(e)]), resolution=resolution)[0])
    zero_truth = abs(e) + bound <= round_off or (negligible and abs(a) <= round_off)
    if code == Verdict.UNCHECKED and zero_truth:
        # The exact value is known to be within the backward's own round-off of zero, and
        # so is the claim (err <= tol): nothing finer can be asked of a backward pass. (An
        # exact value whose own error bound exceeds that round-off settles nothing, unless the
        # exact value is certified zero on f's own scale and the claim is within the
        # backward's round-off of zero: every claim exactly 0 for a constant output.)
        return int(Verdict.PASS), int(Cause.EXACT_ZERO)
    if code == Verdict.UNCHECKED and _tight(a, e, bound, round_off, claim_scale, rtol, atol, resolution):
        return int(Verdict.PASS), int(Cause.EXACT)
    return code, int(Cause.EXACT)


def _tight(a: float, e: float, bound: float, round_off: float, claim_scale: float, rtol: float,
           atol: float, resolution: float) -> bool:
    """Whether claim ``a`` agrees with exact ``e`` to ``rtol`` plus a few ulps of itself
    (``round_off`` rescaled from the largest claim ``claim_scale`` to ``|a|``), and that
    tolerance is within ``resolution`` of the value: then a claim off by the resolution
    would have disagreed, so the agreement is a PASS, however far below the other entries
    (an entry 1e-14 of the rest). A claim further off but within ``round_off`` stays
    UNCHECKED: a backward's round-off at the largest scale could explain it."""
    own = round_off * abs(a) / claim_scale if claim_scale > 0 else 0.0
    rule = Tolerance(rtol, atol, 1.0, resolution)
    tight = rule.bound(abs(e), bound + own)
    scale = max(abs(a), abs(e))
    return bool(np.isfinite(a) and np.isfinite(e) and abs(a - e) <= tight and tight > 0
                and not rule.coarse(tight, scale))
