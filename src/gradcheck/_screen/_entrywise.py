"""Step 4b of a screen: the entry-wise treatment of the entries bisection localized.

``check``'s own machinery, unchanged: first central differences at ``check``'s steps (the
serial engine on the screen's private copy), then ``judge_entries`` (the verdict rule,
retries, step study with the kink test, and the referee where ``f`` is cheap enough at
arbitrary precision). Each entry's error estimate ``a_i - n_i`` and its bound go back to
the bisection, which subtracts them from every block that holds the entry.
"""
from __future__ import annotations

import time

import numpy as np

from .._adjudicate.referee import Referee
from .._core.judged import Judged
from .._pipeline.judge import judge_entries
from ..engines import CheckProblem, select_engine

# gradcheck internals this module builds on (one place, for the package layout to come):
from ..engines._differences import steps_for
from . import _complex
from ._measure import Measurer
from ._prepare import Prepared

#: The referee (mpmath) runs f on whole arbitrary-precision copies of x: automatic only up
#: to this many entries, for an f this fast in float64, and when one arbitrary-precision
#: evaluation (timed once) takes at most MP_MAX_SECONDS.
MP_MAX_ENTRIES = 4096
MP_MAX_CALL_SECONDS = 2e-5
MP_MAX_SECONDS = 0.05


class EntryJudge:
    """The entry-wise treatment of localized entries: ``check``'s first differences,
    then ``judge_entries`` (classify, step study, kink test, referee)."""

    def __init__(self, prep: Prepared, m: Measurer, adjudicate, digits: int, per_call: float) -> None:
        self.prep, self.m, self.adjudicate = prep, m, adjudicate
        problem = CheckProblem(f=prep.probe.f, work=prep.probe.work, evaluate=prep.probe.evaluate,
                               backend=prep.backend, cotangent=prep.cotangent)
        self.differences = select_engine("serial", problem)[0].differences
        self.referee, self.referee_note = self._referee(adjudicate, digits, per_call)
        finite = prep.analytic[np.isfinite(prep.analytic)]
        self.claim_scale = float(np.abs(finite).max()) if finite.size else 0.0
        self.parts: list[tuple[np.ndarray, Judged]] = []
        self.evaluations = 0

    def _referee(self, adjudicate, digits, per_call: float) -> tuple[Referee | None, str]:
        """The referee for localized entries in doubt: always with ``adjudicate=True``;
        with "auto" only where f is cheap at arbitrary precision (object arrays are
        1e3-3e4x slower than float64; the referee needs ~20 evaluations per entry)."""
        prep = self.prep
        compiled = _complex.unavailable(prep.probe.f, "numpy") is not None
        if adjudicate is False or not getattr(prep.backend, "mp_capable", False) or compiled:
            return None, ""
        f = prep.probe.f
        referee = Referee(lambda v: f(v), prep.probe.pristine, prep.cotangent, digits=digits)
        if adjudicate is True:
            return referee, ""
        why = "no referee (adjudicate=True asks for it): f at arbitrary precision is too slow here"
        if prep.analytic.size > MP_MAX_ENTRIES or per_call > MP_MAX_CALL_SECONDS:
            return None, f"{why} ({prep.analytic.size} entries, {per_call:.2g} s per float evaluation)"
        seconds = _time_mp_call(f, prep.probe.pristine)
        if seconds is None or seconds > MP_MAX_SECONDS:
            return None, f"{why} ({'fails' if seconds is None else f'{seconds:.2g} s per evaluation'})"
        return referee, ""

    def __call__(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        prep, cfg = self.prep, self.prep.config
        idx = np.sort(np.asarray(idx, dtype=np.int64))
        values = prep.x_flat[idx].astype(np.float64)
        steps = steps_for(values, cfg.step)
        diffs = self.differences(idx, steps)
        judged = judge_entries(
            self.differences, values, prep.analytic[idx], diffs, steps, unit=prep.unit, config=cfg,
            drift=None, base_finite=True, flat_indices=idx, base_value=prep.f0, referee=self.referee,
            adjudicate=self.adjudicate, claim_scale=self.claim_scale,
        )
        used = 2 * idx.size + judged.evaluations
        self.evaluations += used
        self.m.evaluations += used
        self.parts.append((idx, judged))
        err = prep.analytic[idx] - judged.numeric
        return err, cfg.noise_factor * judged.noise + cfg.atol


def _time_mp_call(f, x: np.ndarray) -> float | None:
    """Seconds one evaluation of f on an arbitrary-precision copy of x takes (None: fails)."""
    from ..mp import evaluate, to_mp

    start = time.perf_counter()
    try:
        evaluate(f, to_mp(np.asarray(x, dtype=np.float64)), dps=20)
    except Exception:
        return None
    return time.perf_counter() - start
