"""From differences to verdicts: classify, then a second look at the suspects.

``judge_entries`` is shared by ``check``, ``check_params`` and ``screen``; it knows nothing of
engines or reports. ``judge`` is check's stage 4: it asks whether the referee may run and
calls ``judge_entries`` on the first pass.

1. classify every entry (the rule in ``gradcheck._classify.rule``);
2. retry entries whose step left f's domain with smaller steps (``_refine.retry``);
   if there is a MISMATCH, measure f's own round-off on a few of them (``_refine.roundoff``)
   and use it when it is far above the output dtype's (f computes in lower precision);
3. step study (``_refine.second_look``) of every MISMATCH, and in float64 of PASS entries
   whose tolerance is mostly round-off (after a quick look at 8h and 16h, which certifies
   most of those) and of UNCHECKED entries: confirms, explains away, or finds a kink;
4. the referee (``gradcheck._adjudicate``) settles what is still in doubt against the exact
   derivative, when f runs at arbitrary precision.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .._adjudicate.claimround import measure_claim_rounding
from .._adjudicate.doubt import adjudicate_doubts
from .._adjudicate.referee import Referee, referee_for
from .._classify.kernel import classify  # the fused kernel from 1e5 entries, numpy below
from .._classify.rule import rule_of
from .._core.config import Config
from .._core.judged import Judged
from .._core.sparse import SparseColumn
from .._core.verdict import Cause
from .._differences import DenominatorsOf, slope_and_noise
from .._refine.retry import retry_nonfinite_steps
from .._refine.roundoff import demote_unproven, probe_roundoff, recheck_precision, watch_lower_formats
from .._refine.second_look import Recorded, second_look

if TYPE_CHECKING:
    from .difference import Differenced
    from .prepare import Subject
    from .sanity import Sanity


def judge(subject: Subject, run: Differenced, sanity: Sanity, digits: int) -> tuple[Judged, Config]:
    """Check's stage 4: classify -> refine -> adjudicate every entry of the first pass.

    Returns the verdicts and the final config (a low-precision plan sets its floor from
    the first differences)."""
    cfg = subject.lowp.after_differences(subject.config, subject.analytic, run.diffs)
    # The referee runs f on arbitrary-precision copies: only numpy code can do that.
    referee = referee_for(subject.backend, subject.f, subject.pristine, subject.cotangent,
                          adjudicate=subject.adjudicate, digits=digits,
                          variant=None if run.coloured is None else run.coloured.referee)
    # independent_axes: each entry's base value is its own slice's (the kink test's f(x))
    base = subject.f0 if run.coloured is None else run.coloured.base_per_entry()
    # An f that computes in float32: Richardson across steps replaces the first estimates.
    first, spent = (None, 0) if run.coloured is not None else subject.lowp.first_estimates(
        run.differencer, run.steps, run.diffs, subject.work.reshape(-1), float(subject.f0))
    judged = judge_entries(
        run.differencer, subject.work.reshape(-1), subject.analytic.reshape(-1), run.diffs, run.steps,
        unit=subject.unit, config=cfg, drift=sanity.drift_per_entry, base_finite=bool(np.isfinite(subject.f0)),
        base_value=base if first is None else None, referee=referee, adjudicate=subject.adjudicate,
        first=first, claim_rounding=_claim_rounding(subject, cfg),
    )
    judged.evaluations += spent
    if run.coloured is not None:  # the second look's rounds, not 2 per entry
        judged.evaluations = run.coloured.take() + judged.adjudication.get("evaluations", 0)
    return judged, cfg


def judge_entries(
    differencer, values: np.ndarray, analytic: np.ndarray, diffs, steps: np.ndarray, *,
    unit: float, config: Config, drift: float | None, base_finite: bool,
    flat_indices: np.ndarray | None = None, base_value: float | None = None,
    referee: Referee | None = None, adjudicate: Any = "auto", claim_scale: float | None = None,
    first: tuple[np.ndarray, np.ndarray] | None = None,
    claim_rounding: Callable[[np.ndarray], np.ndarray] | None = None,
) -> Judged:
    """Verdicts for entries already differenced once.

    ``values``, ``analytic``, ``diffs`` and ``steps`` are aligned 1-D arrays; the
    differencer takes indices into the perturbed array (``flat_indices`` maps to them).
    ``base_value`` (f at x) enables the kink test and the round-off probe; ``referee``
    the exact derivatives. ``claim_scale`` is the magnitude of the backward's values
    (default: the largest claimed entry here); a claim within ``k*u*claim_scale`` of an
    exact value is within round-off. ``first`` (numeric, noise) replaces the estimates
    from ``diffs`` (the forced-float32 path's Richardson values, ``_lowp.f32steps``).
    ``claim_rounding`` measures the claim's own round-off per entry (one more call of the
    claim, made only if the referee runs; ``gradcheck._adjudicate.claimround``).

    ``diffs`` and ``steps`` are the caller's to give away: float64 writeable arrays are
    used as they are (not copied, three arrays of N fewer), and a step that left f's
    domain is retried in place in them.
    """
    cfg = config
    fp, fm, denom = (_owned(d) for d in diffs)
    count = values.size
    idx_map = _Identity() if flat_indices is None else np.asarray(flat_indices)
    numeric, noise = _first_estimates(fp, fm, denom, unit, drift)
    if first is not None:
        numeric, noise = (np.array(v, dtype=np.float64) for v in first)
        if drift is not None:
            noise = noise + drift / np.abs(_dense(denom))
    codes = classify(analytic, numeric, noise, **rule_of(cfg))
    causes = np.zeros(count, dtype=np.uint8)
    judged = Judged(numeric, noise, codes, np.zeros(count, dtype=bool), 0, causes,
                    SparseColumn(count), np.full(count, -1, dtype=np.int16),
                    SparseColumn(count), SparseColumn(count))
    sub = lambda j, h: differencer(idx_map[j], h)  # noqa: E731  positions -> perturbed indices
    if base_finite:
        retried, spent = retry_nonfinite_steps(sub, values, analytic, (fp, fm, denom), steps,
                                                codes, numeric, noise, unit, cfg)
        judged.evaluations += spent
        causes[retried] = Cause.STEP_RETRY
    # Every later difference goes through one record: the step study reuses the probe's,
    # a re-study reuses the study's, and the evaluations are counted once, where they happen.
    record = Recorded(sub)
    cancelling = None
    if drift is None and base_value is not None:
        unit, cancelling = probe_roundoff(judged, record, analytic, (fp, fm, denom), steps, base_value, unit, cfg)
    if cfg.refine and drift is None:
        if cancelling is None:  # else demote_unproven may re-study from every difference recorded
            watch_lower_formats(record, (fp, fm, denom), base_value, unit)  # keeps only what a re-study needs
        second_look(judged, record, analytic, (fp, fm, denom), steps, base_value, unit, cfg)
        unit = recheck_precision(judged, record, analytic, (fp, fm, denom), steps, base_value, unit, cfg)
    if cancelling is not None and cancelling > unit:  # f cancels large terms: a MISMATCH must hold under it
        demote_unproven(judged, record, analytic, (fp, fm, denom), steps, base_value, cancelling, cfg)
    judged.evaluations += record.evaluations
    if judged.model_unit is not None:
        judged.measured_unit = unit
    if referee is not None and adjudicate is not False and drift is None:
        adjudicate_doubts(judged, referee, analytic, idx_map, unit_claim(unit, judged), cfg, claim_scale,
                          claim_rounding)
    return judged


def _claim_rounding(subject: Subject, cfg: Config) -> Callable[[np.ndarray], np.ndarray] | None:
    """The measurement of the claim's own round-off, to run if the referee does (None when
    the claim is not a function gradcheck may call again)."""
    reclaim = subject.reclaim
    if reclaim is None:
        return None
    return lambda positions: measure_claim_rounding(reclaim, subject.pristine, subject.cotangent,
                                                    subject.analytic.reshape(-1), cfg.seed, positions)


class _Identity:
    """``np.arange(N)`` as an index map, without its array of N: ``m[j]`` is ``j`` (int64)."""

    def __getitem__(self, j: Any) -> np.ndarray:
        j = np.asarray(j)
        if j.dtype == bool:
            return np.flatnonzero(j)
        if j.size and int(j.min()) < 0:
            raise IndexError("negative positions are not entries")
        return j.astype(np.int64)


def _owned(d: Any) -> Any:
    """``d`` as a writeable float64 array: itself when it already is one (or denominators
    computed where read, :class:`DenominatorsOf`), else a copy."""
    if isinstance(d, DenominatorsOf) or (isinstance(d, np.ndarray) and d.dtype == np.float64 and d.flags.writeable):
        return d
    return np.array(d, dtype=np.float64)


def _dense(denom: Any) -> np.ndarray:
    """The denominators as an array (read them all when they are computed where read)."""
    return denom[:] if isinstance(denom, DenominatorsOf) else denom


def _first_estimates(fp, fm, denom, unit, drift):
    numeric, noise = slope_and_noise(fp, fm, denom, unit)
    if drift is not None:
        # Run-to-run drift is noise the difference cannot see through.
        with np.errstate(divide="ignore", invalid="ignore"):
            noise = noise + drift / np.abs(_dense(denom))
    return numeric, noise


def unit_claim(unit: float, judged: Judged) -> float:
    """The unit round-off of the backward's values (for the referee's round-off allowance):
    the output dtype's, even when f's own round-off was measured larger."""
    return judged.model_unit if judged.model_unit is not None else unit
