"""Step 4b of a screen: the entry-wise treatment of the entries bisection localized.

``check``'s own machinery, unchanged: first central differences at ``check``'s steps (the
serial engine on the screen's private copy), then ``judge_entries`` (the verdict rule,
retries, step study with the kink test, and the referee where ``f`` is cheap enough at
arbitrary precision). Each entry's error estimate ``a_i - n_i`` and its bound go back to
the bisection, which subtracts them from every block that holds the entry.

Where that look cannot exclude an error above the screen's floor (at a tight rtol, check's
step study forgives ~5 h^2 times f's third derivative along the entry), the entry is also
measured along its own direction with the screen's estimator and judged by the same rule
with that bound (:meth:`EntryJudge._look_along`; why, in :mod:`._limit`).
"""
from __future__ import annotations

import time

import numpy as np

from .._adjudicate.referee import MAX_ADJUDICATED, Referee, referee_for
from .._core.judged import Judged
from .._core.tolerance import Tolerance
from .._core.verdict import Cause, Verdict
from .._differences import CentralDifferences, steps_for
from .._evaluate import SerialRunner, Target
from .._pipeline.judge import judge_entries
from ._measure import BudgetExhausted, Measurer
from ._prepare import CHUNK, Prepared

#: The referee (mpmath) runs f on whole arbitrary-precision copies of x: automatic only up
#: to this many entries, for an f this fast in float64, and when one arbitrary-precision
#: evaluation (timed once) takes at most MP_MAX_SECONDS.
MP_MAX_ENTRIES = 4096
MP_MAX_CALL_SECONDS = 2e-5
MP_MAX_SECONDS = 0.05
#: Causes of a verdict reached against the exact value.
_EXACT_CAUSES = [int(Cause.EXACT), int(Cause.EXACT_ZERO)]


class EntryJudge:
    """The entry-wise treatment of localized entries: ``check``'s first differences,
    then ``judge_entries`` (classify, step study, kink test, referee). With
    :attr:`exact_look` (the screen's arbitrary-precision path is on) every localized
    entry is judged against its exact derivative, not only those in doubt."""

    def __init__(self, prep: Prepared, m: Measurer, adjudicate, digits: int, per_call: float,
                 exact: bool | str = "auto") -> None:
        self.prep, self.m, self.adjudicate = prep, m, adjudicate
        target = Target(f=prep.target.f, work=prep.target.work, evaluate=prep.target.evaluate,
                        backend=prep.backend, cotangent=prep.cotangent)
        self.differences = CentralDifferences(SerialRunner(target), prep.target.work).differences
        self.mp_seconds: float | None = None  # one evaluation at arbitrary precision, once timed
        self.referee, self.referee_note = self._referee(True if exact is True else adjudicate, digits, per_call)
        self.exact_look = False
        self.claim_scale = _finite_abs_max(prep.analytic)
        self.parts: list[tuple[np.ndarray, Judged]] = []
        self.evaluations = 0
        self.looked_along = self.flagged_along = 0  # entries measured along their own direction; MISMATCH so

    def _referee(self, adjudicate, digits, per_call: float) -> tuple[Referee | None, str]:
        """The referee for localized entries in doubt, built where check's is, under its rule
        (:func:`gradcheck._adjudicate.referee.referee_for`): always with ``adjudicate=True``;
        with "auto" only where f is cheap at arbitrary precision (object arrays are
        1e3-3e4x slower than float64; the referee needs ~20 evaluations per entry)."""
        prep = self.prep
        f = prep.target.f
        referee = referee_for(prep.backend, f, prep.pristine, prep.cotangent, adjudicate=adjudicate, digits=digits)
        if referee is None or adjudicate is True:
            return referee, ""
        why = "no referee (adjudicate=True asks for it): f at arbitrary precision is too slow here"
        if prep.analytic.size > MP_MAX_ENTRIES or per_call > MP_MAX_CALL_SECONDS:
            return None, f"{why} ({prep.analytic.size} entries, {per_call:.2g} s per float evaluation)"
        seconds, calls = _time_mp_call(f, prep.pristine)
        self.mp_seconds = seconds
        self.m.evaluations += calls  # counted with the phase under way (the step search)
        if seconds is None or seconds > MP_MAX_SECONDS:
            return None, f"{why} ({'fails' if seconds is None else f'{seconds:.2g} s per evaluation'})"
        return referee, ""

    def __call__(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        prep, cfg = self.prep, self.prep.config
        idx = np.sort(np.asarray(idx, dtype=np.int64))
        values = prep.x_flat[idx].astype(np.float64)
        steps = steps_for(values, cfg.step)
        diffs = self.differences(idx, steps)
        first, spent = None, 0
        if prep.lowp is not None:  # f computes in float32: check's Richardson estimates (gradcheck._lowp)
            first, spent = prep.lowp.first_estimates(lambda j, h: self.differences(idx[j], h), steps, diffs,
                                                     values, prep.f0)
        judged = judge_entries(
            self.differences, values, prep.analytic[idx], diffs, steps, unit=prep.unit, config=cfg,
            drift=None, base_finite=True, flat_indices=idx, base_value=prep.f0 if first is None else None,
            referee=self.referee, adjudicate=self.adjudicate, claim_scale=self.claim_scale, first=first,
        )
        judged.evaluations += spent
        if self.exact_look:
            self._look_exactly(idx, judged)
        else:
            self._look_along(idx, judged)
        used = 2 * idx.size + judged.evaluations
        self.evaluations += used
        self.m.evaluations += used
        self.parts.append((idx, judged))
        err = prep.analytic[idx] - judged.numeric
        bound = Tolerance.of(cfg).floor(judged.noise)
        if self.exact_look:  # peel what the exact value says, within its own error
            exact = np.asarray(judged.exact)  # the localized entries' (a few): dense
            known = np.isfinite(exact) & np.isin(judged.causes, _EXACT_CAUSES)
            err = np.where(known, prep.analytic[idx] - exact, err)
            rounding = 2.0 * prep.unit * (np.abs(prep.analytic[idx]) + np.abs(exact))
            bound = np.where(known, rounding + cfg.atol, bound)
        return err, bound

    def _look_along(self, idx: np.ndarray, judged: Judged) -> None:
        """The screen's own measurement of each localized entry whose verdict is not a MISMATCH
        and where check's judgement cannot exclude an error above the screen's floor
        (:attr:`Prepared.floor`; ``|a - n|`` plus check's noise bound reaches it):
        along the entry's own direction with Richardson and its bound (:meth:`_along`; the
        complex step where it was accepted), judged by the same rule (MISMATCH only beyond
        ``atol + rtol*scale + bound``, the bound as the noise term as in the step study). Without it the stated limit would not be a promise:
        check's step study at ``h/2 .. 16h`` forgives about 5 h^2 times f's third derivative
        along the entry, which at a tight rtol is far above what the blocks resolve (see
        :mod:`._limit`). Kinks and verdicts against the exact value are left as they are."""
        prep, cfg = self.prep, self.prep.config
        analytic = prep.analytic[idx]
        loose = np.isin(judged.codes, [int(Verdict.PASS), int(Verdict.UNCHECKED)])
        loose &= ~np.isin(judged.causes, _EXACT_CAUSES + [int(Cause.KINK_STEPS), int(Cause.KINK_EXACT)])
        with np.errstate(invalid="ignore"):  # the error check cannot exclude: |a - n| + its noise bound
            could_be = np.abs(analytic - judged.numeric) + Tolerance.of(cfg).noise_term(judged.noise)
            loose &= np.isfinite(analytic) & ~(could_be <= prep.floor[idx])
        at = np.flatnonzero(loose)
        if not at.size:
            return
        before = self.m.evaluations
        try:
            if self.m.complex_probe is not None:  # accepted: accurate to round-off, 1 evaluation
                got = self.m.measure([(idx[p : p + 1], np.ones(1)) for p in at])
                delta, beta = got.delta, got.bound + got.claim
            else:
                delta, beta = np.array([self._along(int(i)) for i in idx[at]]).reshape(-1, 2).T
        except BudgetExhausted:
            return
        finally:
            judged.evaluations += self.m.evaluations - before
            self.m.evaluations = before  # counted with the entry's evaluations (see __call__)
        w = prep.weights[idx[at]]
        err, bound = delta / w, beta / w
        numeric = analytic[at] - err
        rule = Tolerance(cfg.rtol, cfg.atol, 1.0, cfg.resolution)  # the whole bound as noise, as the study
        with np.errstate(invalid="ignore"):
            flagged = np.isfinite(err) & np.isfinite(bound) & (np.abs(err) > rule.per_entry(analytic[at], numeric, bound))
        self.looked_along += int(at.size)
        hit = at[flagged]
        judged.codes[hit] = Verdict.MISMATCH
        judged.numeric[hit] = numeric[flagged]
        judged.noise[hit] = bound[flagged] / cfg.noise_factor if cfg.noise_factor else bound[flagged]
        judged.causes[hit] = Cause.STEP_STUDY
        judged.refined[hit] = True
        self.flagged_along += int(hit.size)

    def _along(self, i: int) -> tuple[float, float]:
        """``Delta`` and its bound along entry ``i``'s own direction (weight ``w_i``), at the
        step :func:`choose_step` finds for that direction (its own round-off measured at tiny
        steps, then Richardson over ``t, 2t, 4t`` at the step with the smallest bound): the
        screen's step suits blocks, not one entry (on a relu layer, 2^-16 left one entry's
        estimate noise-dominated and its bound too small). About 20 evaluations."""
        m = self.m
        choice = m.choose_step(np.array([i], dtype=np.int64), np.ones(1), self.prep.config.step)
        est, rounding = choice.estimate(unit=m.unit, k=m.k, rho=max(choice.rho, m.rho))
        return float(est.delta[0]), float(est.bound[0]) + rounding

    def _look_exactly(self, idx: np.ndarray, judged: Judged) -> None:
        """The referee on the localized entries ``judge_entries`` did not send to it (those
        it found in no doubt by finite differences, whose tolerance the exact path beats)."""
        assert self.referee is not None, "the exact path is accepted only with a referee"
        prep, cfg = self.prep, self.prep.config
        analytic = prep.analytic[idx]
        done = np.isin(judged.causes, _EXACT_CAUSES + [int(Cause.KINK_EXACT)])
        positions = np.flatnonzero(~done & np.isfinite(analytic))[:MAX_ADJUDICATED]
        if not positions.size:
            return
        reason = self.referee.unavailable()
        judged.evaluations += self.referee.take_probes()
        if reason is not None:
            return
        adj = self.referee.adjudicate(positions, idx[positions], analytic, judged.codes.copy(),
                                      **Tolerance.of(cfg).rule(), unit=prep.unit, claim_scale=self.claim_scale,
                                      claim_noise=None)
        got = np.isfinite(adj.exact)
        at = positions[got]
        judged.codes[at], judged.causes[at] = adj.codes[got], adj.causes[got]
        judged.exact[at], judged.digits[at] = adj.exact[got], adj.digits[got]
        judged.left[at], judged.right[at] = adj.left[got], adj.right[got]
        judged.refined[at] = True
        judged.evaluations += adj.evaluations
        info = judged.adjudication
        before = int(info.get("entries", 0)) if info.get("attempted") else 0
        fewest = [v for v in (info.get("min_certified_digits"), int(adj.digits[got].min()) if got.any() else None)
                  if v is not None]
        info.update(attempted=True, entries=before + int(at.size), digits=self.referee.digits,
                    seconds=float(info.get("seconds", 0.0)) + adj.seconds,
                    evaluations=int(info.get("evaluations", 0)) + adj.evaluations,
                    min_certified_digits=min(fewest) if fewest else None)


def _time_mp_call(f, x: np.ndarray) -> tuple[float | None, int]:
    """Seconds one evaluation of f on an arbitrary-precision copy of x takes (None: fails),
    and the calls of f made. A first call over :data:`MP_MAX_SECONDS` is timed again (the
    first pays for warm-up: imports, caches), and the faster of the two counts."""
    from ..mp import evaluate, to_mp

    x_mp = to_mp(np.asarray(x, dtype=np.float64))
    best = np.inf
    for calls in (1, 2):
        start = time.perf_counter()
        try:
            evaluate(f, x_mp, dps=20)
        except Exception:
            return None, calls
        best = min(best, time.perf_counter() - start)
        if best <= MP_MAX_SECONDS:
            break
    return best, calls


def _finite_abs_max(a: np.ndarray) -> float:
    """The largest ``|a_i|`` over finite entries (0 if none), in chunks (a whole model's claim
    makes no temporary of its size)."""
    best = 0.0
    for lo in range(0, a.size, CHUNK):
        part = a[lo:lo + CHUNK]
        part = part[np.isfinite(part)]
        if part.size:
            best = max(best, float(np.abs(part).max()))
    return best
