"""From differences to verdicts: classify, then a second look at the suspects.

Shared by ``check`` and ``check_params``; knows nothing of engines or reports.

1. classify every entry (the rule in ``_classify``);
2. retry entries whose step left f's domain with smaller steps;
   if there is a MISMATCH, measure f's own round-off on a few of them (``_roundoff``) and
   use it when it is far above the output dtype's (f computes in lower precision);
3. step study (``_refine``) of every MISMATCH, and in float64 of PASS entries whose
   tolerance is mostly round-off (after a quick look at 8h and 16h, which certifies most
   of those) and of UNCHECKED entries: confirms, explains away, or finds a kink;
4. the referee (``_referee``) settles what is still in doubt against the exact derivative,
   when f runs at arbitrary precision.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._core.verdict import Cause
from ._classify import resolved_share
from ._classify_kernel import classify  # the fused kernel from 1e5 entries, numpy below
from ._core.config import UNIT_ROUNDOFF, Config
from .engines._differences import slope_and_noise
from ._referee import MAX_ADJUDICATED, Referee
from ._refine import quick_certify, step_study
from ._roundoff import probe, representable
from ._core.verdict import Verdict

ADJUDICATE_CHOICES = ("auto", True, False)
#: Noisy PASS entries get the quick look (``_refine.quick_certify``) before the full step
#: study. False gives the full study to every suspect (the tests compare the two).
QUICK_LOOK = True


@dataclass
class Judged:
    numeric: np.ndarray
    noise: np.ndarray
    codes: np.ndarray
    refined: np.ndarray
    evaluations: int
    causes: np.ndarray | None = None
    exact: np.ndarray | None = None
    digits: np.ndarray | None = None
    left: np.ndarray | None = None
    right: np.ndarray | None = None
    adjudication: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # e.g. f's round-off measured far above its dtype's
    model_unit: float | None = None  # the output dtype's unit round-off, when a measured one replaced it
    measured_unit: float | None = None  # f's own round-off (relative to |f|), when it replaced the model's

    def second_look(self, shape: tuple[int, ...], positions: np.ndarray | None = None) -> dict[str, Any]:
        """The report's second-look fields (causes, exact, digits, one-sided slopes,
        adjudication) in ``shape``; with ``positions`` (flat), these entries are the
        judged ones and the others get the "not looked at" fill values."""
        fills = {"causes": (0, np.uint8), "exact": (np.nan, np.float64), "digits": (-1, np.int16),
                 "left": (np.nan, np.float64), "right": (np.nan, np.float64)}
        out: dict[str, Any] = {"adjudication": self.adjudication, "measured_roundoff": self.measured_unit}
        size = int(np.prod(shape, dtype=np.int64))
        for name, (fill, dtype) in fills.items():
            values = getattr(self, name)
            if positions is None:
                out[name] = values.reshape(shape)
            else:
                full = np.full(size, fill, dtype=dtype)
                full[positions] = values
                out[name] = full.reshape(shape)
        return out


def judge_entries(
    differencer, values: np.ndarray, analytic: np.ndarray, diffs, steps: np.ndarray, *,
    unit: float, config: Config, drift: float | None, base_finite: bool,
    flat_indices: np.ndarray | None = None, base_value: float | None = None,
    referee: Referee | None = None, adjudicate: Any = "auto", claim_scale: float | None = None,
) -> Judged:
    """Verdicts for entries already differenced once.

    ``values``, ``analytic``, ``diffs`` and ``steps`` are aligned 1-D arrays; the
    differencer takes indices into the perturbed array (``flat_indices`` maps to them).
    ``base_value`` (f at x) enables the kink test and the round-off probe; ``referee``
    the exact derivatives. ``claim_scale`` is the magnitude of the backward's values
    (default: the largest claimed entry here); a claim within ``k*u*claim_scale`` of an
    exact value is within round-off.
    """
    cfg = config
    fp, fm, denom = (np.array(d, dtype=np.float64) for d in diffs)
    count = values.size
    idx_map = np.arange(count) if flat_indices is None else np.asarray(flat_indices)
    numeric, noise = _first_estimates(fp, fm, denom, unit, drift)
    codes = classify(analytic, numeric, noise, **_rule(cfg))
    causes = np.zeros(count, dtype=np.uint8)
    judged = Judged(numeric, noise, codes, np.zeros(count, dtype=bool), 0, causes,
                    np.full(count, np.nan), np.full(count, -1, dtype=np.int16),
                    np.full(count, np.nan), np.full(count, np.nan))
    sub = lambda j, h: differencer(idx_map[j], h)  # noqa: E731  positions -> perturbed indices
    if base_finite:
        retried, spent = _retry_nonfinite_steps(sub, values, analytic, (fp, fm, denom), steps,
                                                codes, numeric, noise, unit, cfg)
        judged.evaluations += spent
        causes[retried] = Cause.STEP_RETRY
    # Every later difference goes through one record: the step study reuses the probe's,
    # a re-study reuses the study's, and the evaluations are counted once, where they happen.
    record = _Recorded(sub)
    if drift is None and base_value is not None:
        unit = _probe_roundoff(judged, record, analytic, (fp, fm, denom), steps, base_value, unit, cfg)
    if cfg.refine and drift is None:
        _second_look(judged, record, analytic, (fp, fm, denom), steps, base_value, unit, cfg)
        unit = _recheck_precision(judged, record, analytic, (fp, fm, denom), steps, base_value, unit, cfg)
    judged.evaluations += record.evaluations
    if judged.model_unit is not None:
        judged.measured_unit = unit
    if referee is not None and adjudicate is not False and drift is None:
        _adjudicate(judged, referee, analytic, idx_map, unit_claim(unit, judged), cfg, claim_scale)
    return judged


def _rule(cfg: Config) -> dict[str, float]:
    """The verdict rule's settings, as every call of ``classify`` takes them."""
    return dict(rtol=cfg.rtol, atol=cfg.atol, noise_factor=cfg.noise_factor, resolution=cfg.resolution)


def _first_estimates(fp, fm, denom, unit, drift):
    numeric, noise = slope_and_noise(fp, fm, denom, unit)
    if drift is not None:
        # Run-to-run drift is noise the difference cannot see through.
        with np.errstate(divide="ignore", invalid="ignore"):
            noise = noise + drift / np.abs(denom)
    return numeric, noise


def unit_claim(unit: float, judged: Judged) -> float:
    """The unit round-off of the backward's values (for the referee's round-off allowance):
    the output dtype's, even when f's own round-off was measured larger."""
    return judged.model_unit if judged.model_unit is not None else unit


def _probe_roundoff(judged: Judged, sub, analytic, diffs, steps, base_value, unit, cfg) -> float:
    """f's round-off, looked at twice (``_roundoff``): are all its values float32 (or 16-bit)
    numbers? (free) And, when the first pass finds a MISMATCH, what does the probe
    measure? When either is far above the output dtype's unit round-off, every entry is
    re-judged with it. Returns the unit round-off to use from here on."""
    fp, fm, _ = diffs
    model = unit
    values = np.concatenate([fp, fm, [base_value]])
    fmt = representable(values, unit)
    if fmt is not None:
        _note_format(judged, fmt, values, unit)
        unit = UNIT_ROUNDOFF[fmt]
    suspects = np.flatnonzero((judged.codes == Verdict.MISMATCH) & np.isfinite(fp) & np.isfinite(fm))
    if fmt is not None:
        suspects = np.flatnonzero((_reclassify(judged, analytic, diffs, unit, cfg) == Verdict.MISMATCH)
                                  & np.isfinite(fp) & np.isfinite(fm))
    found = probe(sub, suspects, steps, diffs, base_value, unit, cfg.seed) if suspects.size else None
    if found is not None:
        if found.lower_precision:
            unit = found.unit
            _reclassify(judged, analytic, diffs, unit, cfg)
            judged.notes.append(found.note())
    if unit != model and judged.model_unit is None:
        judged.model_unit = model
    return unit


def _note_format(judged: Judged, fmt: str, values, unit: float) -> None:
    judged.notes.append(
        f"every value f returned ({int(np.isfinite(values).sum())} evaluations) is a {fmt} number: f computes "
        f"in {fmt} whatever dtype it returns; {fmt}'s round-off ({UNIT_ROUNDOFF[fmt]:.2g}) is used as its noise")
    if judged.model_unit is None:
        judged.model_unit = unit


def _reclassify(judged: Judged, analytic, diffs, unit, cfg) -> np.ndarray:
    """Every entry's first-pass estimate and verdict again, with unit round-off ``unit``."""
    fp, fm, denom = diffs
    judged.numeric[:], judged.noise[:] = slope_and_noise(fp, fm, denom, unit)
    judged.codes[:] = classify(analytic, judged.numeric, judged.noise, **_rule(cfg))
    return judged.codes


def _second_look(judged: Judged, sub, analytic, diffs, steps, base_value, unit, cfg) -> None:
    """Step study of the suspects: every MISMATCH, and with ``refine_noisy`` the noisy PASS
    entries (the quick look first) and the UNCHECKED ones. ``sub`` counts the evaluations."""
    fp, fm, denom = diffs
    numeric, noise, codes = judged.numeric, judged.noise, judged.codes
    suspect = codes == Verdict.MISMATCH
    if cfg.refine_noisy:
        # PASS entries whose tolerance is mostly round-off certify less than rtol;
        # UNCHECKED entries may sit on a kink, or resolve with larger steps.
        scale = np.maximum(np.abs(analytic), np.abs(numeric))
        suspect |= (codes == Verdict.PASS) & (cfg.noise_factor * noise > cfg.rtol * scale)
        suspect |= codes == Verdict.UNCHECKED
    suspects = np.flatnonzero(suspect & np.isfinite(fp) & np.isfinite(fm))
    options = dict(base_value=base_value, unit_roundoff=unit, **_rule(cfg))
    per_bound = lambda b: b / cfg.noise_factor if cfg.noise_factor else b  # noqa: E731
    # Noisy PASS entries get the quick look first; what it certifies skips the study.
    quick = (codes[suspects] == Verdict.PASS) & QUICK_LOOK
    noisy = suspects[quick]
    batches = [(suspects[~quick], None)]
    if noisy.size:
        q = quick_certify(sub, noisy, steps[noisy], analytic[noisy], (fp[noisy], fm[noisy], denom[noisy]),
                          **options)
        ok = noisy[q.certified]
        numeric[ok], noise[ok] = q.numeric[q.certified], per_bound(q.bound[q.certified])
        judged.refined[ok] = True
        judged.causes[ok] = Cause.STEP_STUDY
        rest = ~q.certified
        batches.append((noisy[rest], {f: tuple(d[rest] for d in q.raw[f]) for f in q.raw}))
    for group, measured in batches:
        if not group.size:
            continue
        study = step_study(sub, group, steps[group], analytic[group], (fp[group], fm[group], denom[group]),
                           measured=measured, **options)
        numeric[group] = study.numeric
        noise[group] = per_bound(study.bound)
        codes[group] = study.codes
        judged.refined[group] = True
        judged.causes[group] = np.where(study.kink, Cause.KINK_STEPS, Cause.STEP_STUDY)
        judged.left[group], judged.right[group] = study.left, study.right


def _recheck_precision(judged: Judged, record, analytic, diffs, steps, base_value, unit, cfg) -> float:
    """The step study evaluated f at larger steps: if all of f's values, those included,
    are float32 (or 16-bit) numbers (an f too coarse to change across the first step looks
    exact there), judge every entry again with that format's round-off; the evaluations
    already made are reused. Returns the unit round-off in use."""
    fp, fm, _ = diffs
    values = np.concatenate([fp, fm, [np.nan if base_value is None else base_value], record.values()])
    fmt = representable(values, unit)
    if fmt is None:
        return unit
    _note_format(judged, fmt, values, unit)
    unit = UNIT_ROUNDOFF[fmt]
    retried = judged.causes == Cause.STEP_RETRY
    _reclassify(judged, analytic, diffs, unit, cfg)
    judged.refined[:] = False
    judged.causes[~retried] = Cause.FIRST_PASS
    judged.left[:], judged.right[:] = np.nan, np.nan
    _second_look(judged, record, analytic, diffs, steps, base_value, unit, cfg)
    return unit


class _Recorded:
    """A differencer that keeps every difference it takes (as arrays, one block per call),
    answers a repeated ``(position, step)`` from them, and counts the evaluations it makes."""

    def __init__(self, differencer) -> None:
        self._differencer, self.evaluations = differencer, 0
        self._blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # sorted positions, steps, values

    def __call__(self, positions, steps):
        pos = np.asarray(positions, dtype=np.int64).reshape(-1)
        h = np.asarray(steps, dtype=np.float64).reshape(-1)
        out = np.full((3, pos.size), np.nan)
        found = np.zeros(pos.size, dtype=bool)
        for known, known_h, values in self._blocks:
            j = np.minimum(np.searchsorted(known, pos), known.size - 1)
            hit = ~found & (known[j] == pos) & (known_h[j] == h)
            out[:, hit], found = values[:, j[hit]], found | hit
        miss = np.flatnonzero(~found)
        if miss.size:
            fresh = np.vstack(self._differencer(pos[miss], h[miss])).astype(np.float64)
            self.evaluations += 2 * int(miss.size)
            out[:, miss] = fresh
            order = np.argsort(pos[miss], kind="stable")
            self._blocks.append((pos[miss][order], h[miss][order], fresh[:, order]))
        return out[0].copy(), out[1].copy(), out[2].copy()

    def values(self) -> np.ndarray:
        """Every f(x ± s) taken so far."""
        return np.concatenate([v[:2].reshape(-1) for _, _, v in self._blocks] or [np.zeros(0)])


#: A MISMATCH this far outside its tolerance after the step study (which found it stable
#: across steps) is not in doubt; the referee confirms only the worst few of those, so the
#: report shows exact values without paying for every entry of a wholesale bug.
GROSS_EXCESS = 4.0
GROSS_CONFIRMED = 3


def _adjudicate(judged: Judged, referee: Referee, analytic, idx_map, unit, cfg, claim_scale) -> None:
    codes = judged.codes
    with np.errstate(divide="ignore", invalid="ignore"):
        tol = cfg.atol + cfg.rtol * np.maximum(np.abs(analytic), np.abs(judged.numeric)) + cfg.noise_factor * judged.noise
        excess = np.abs(analytic - judged.numeric) / tol
    mismatch = codes == Verdict.MISMATCH
    gross = np.flatnonzero(mismatch & (excess >= GROSS_EXCESS))
    gross = gross[np.argsort(-excess[gross])][:GROSS_CONFIRMED]
    doubt = (mismatch & ~(excess >= GROSS_EXCESS)) | np.isin(codes, [int(Verdict.UNCHECKED), int(Verdict.KINK)])
    positions = np.union1d(np.flatnonzero(doubt & np.isfinite(analytic)), gross)
    info: dict[str, Any] = {"attempted": False, "entries": 0}
    judged.adjudication = info
    if not positions.size:
        return
    reason = referee.unavailable()
    if reason is not None:
        info["reason"] = f"not adjudicable: {reason}"
        return
    if positions.size > MAX_ADJUDICATED:
        info["skipped"] = int(positions.size - MAX_ADJUDICATED)
        positions = positions[:MAX_ADJUDICATED]
    if claim_scale is None:
        finite = analytic[np.isfinite(analytic)]
        claim_scale = float(np.abs(finite).max()) if finite.size else 0.0
    before = (codes[positions].copy(), judged.causes[positions].copy())
    adj = referee.adjudicate(positions, idx_map[positions], analytic, codes.copy(), rtol=cfg.rtol, atol=cfg.atol,
                             noise_factor=cfg.noise_factor, resolution=cfg.resolution, unit=unit,
                             claim_scale=claim_scale)
    judged.codes[positions] = adj.codes
    judged.causes[positions] = adj.causes
    judged.exact[positions] = adj.exact
    judged.digits[positions] = adj.digits
    kinks = adj.causes == Cause.KINK_EXACT
    judged.left[positions[kinks]] = adj.left[kinks]
    judged.right[positions[kinks]] = adj.right[kinks]
    judged.refined[positions] = True
    judged.evaluations += adj.evaluations
    info.update(attempted=True, entries=int(positions.size), seconds=adj.seconds,
                evaluations=adj.evaluations, digits=referee.digits,
                min_certified_digits=int(adj.digits.min()) if adj.digits.size else None)
    _guard_disagreement(judged, positions, adj, before, idx_map, cfg, info)


#: The exact value and a confident step-study estimate disagree when they differ by more
#: than this many times the sum of their error bounds.
DISAGREEMENT = 10.0


def _guard_disagreement(judged: Judged, positions, adj, before, idx_map, cfg, info) -> None:
    """Where the step study produced a confident estimate (its bound, which includes the
    truncation it measured, within ``resolution`` of the value) and the exact derivative
    lies far outside both bounds, the referee differentiated another function than the one
    the finite differences measured (a branch on the dtype, inputs that alias). The user's
    function is the one that ran on floats: those entries keep their finite-difference
    verdict (a MISMATCH stays one; nothing becomes PASS on the referee's word) and the
    report names the disagreement. First-pass estimates, whose bound holds no truncation,
    are not used for this."""
    fd_codes, fd_causes = before
    n = judged.numeric[positions]
    fd_bound = cfg.noise_factor * judged.noise[positions]
    with np.errstate(invalid="ignore", over="ignore"):
        studied = (fd_causes == Cause.STEP_STUDY) & np.isin(fd_codes, [int(Verdict.PASS), int(Verdict.MISMATCH),
                                                                         int(Verdict.UNCHECKED)])
        confident = studied & (fd_bound <= cfg.resolution * np.abs(n)) & np.isfinite(adj.exact)
        far = np.abs(adj.exact - n) > DISAGREEMENT * (fd_bound + adj.error)
        split = np.flatnonzero(confident & far & (adj.causes != Cause.KINK_EXACT))
    if not split.size:
        return
    at = positions[split]
    info["disagreement"] = [(int(idx_map[p]), float(n[j]), float(fd_bound[j]), float(adj.exact[j]),
                             float(adj.error[j])) for p, j in zip(at[:3], split[:3])]
    info["disagreement_count"] = int(split.size)
    judged.codes[at], judged.causes[at] = fd_codes[split], fd_causes[split]
    judged.exact[at], judged.digits[at] = np.nan, -1


def _retry_nonfinite_steps(differencer, x, a, diffs, steps, codes, numeric, noise, unit, cfg):
    """Entries whose x and claimed value are finite but whose perturbed evaluations were
    not (a step that left f's domain, e.g. log near 0) are retried with a step relative
    to |x_i| alone, then smaller ones. ``steps`` and ``diffs`` are updated in place for
    the entries that worked, so a later step study starts from a step inside the domain.
    Returns the positions that were retried successfully, and the evaluations spent."""
    fp, fm, denom = diffs
    stuck = np.flatnonzero(
        np.isfinite(x) & np.isfinite(a) & ~(np.isfinite(fp) & np.isfinite(fm))
    )
    done, evaluations = [], 0
    relative = cfg.step * np.maximum(np.abs(x), np.finfo(np.float64).tiny)
    for shrink in (1.0, 1e-2, 1e-4):
        if not stuck.size:
            break
        trial = np.minimum(relative[stuck] * shrink, steps[stuck])
        p, m, d = differencer(stuck, trial)
        ok = np.isfinite(p) & np.isfinite(m) & (d > 0)
        if ok.any():
            idx = stuck[ok]
            fp[idx], fm[idx], denom[idx], steps[idx] = p[ok], m[ok], d[ok], trial[ok]
            n, z = slope_and_noise(p[ok], m[ok], d[ok], unit)
            numeric[idx], noise[idx] = n, z
            codes[idx] = classify(a[idx], n, z, **_rule(cfg))
            done.append(idx)
        evaluations += 2 * stuck.size
        stuck = stuck[~ok]
    return (np.concatenate(done) if done else np.zeros(0, dtype=np.int64)), evaluations


def adjudication_notes(info: dict[str, Any], adjudicate: Any, shape: tuple[int, ...] | None = None) -> list[str]:
    """What the referee did, in words for the report (``shape`` names entries by multi-index)."""
    if not info or adjudicate is False:
        return []
    notes = []
    if info.get("attempted"):
        notes.append(
            f"adjudicated {info['entries']} entries against exact derivatives at {info['digits']} digits"
            f" ({info['evaluations']} high-precision evaluations, {info['seconds']:.3g} s;"
            f" fewest certified digits {info['min_certified_digits']})"
        )
    if "reason" in info:
        notes.append(info["reason"] + " (entries in doubt keep their step-study verdicts)")
    if info.get("skipped"):
        notes.append(f"{info['skipped']} more entries in doubt were not adjudicated (limit {MAX_ADJUDICATED})")
    if info.get("disagreement"):
        flat, n, nb, e, eb = info["disagreement"][0]
        where = tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else flat
        notes.append(
            f"the exact derivative disagrees with a confident finite difference at {info['disagreement_count']}"
            f" entries, e.g. {where}: finite difference {n:.6g} ± {nb:.2g}, exact {e:.6g} ± {eb:.2g}:"
            " f computes another function on arbitrary-precision input than on floats (a branch on the"
            " dtype, or inputs that alias); those entries keep their finite-difference verdicts")
    return notes


def unchecked_notes(analytic, numeric, tol, codes, resolution: float, f_scale: float | None, *,
                    atol: float = 0.0, floor_name: str = "atol") -> list[str]:
    """At most two notes on the UNCHECKED entries: the resolution they reached and why.
    The reason is the larger part of their tolerances: ``atol`` (named ``floor_name``) or
    the finite difference's round-off (``f_scale`` is |f(x)|, whose round-off it is)."""
    share = resolved_share(analytic, numeric, tol).reshape(-1)
    unchecked = codes.reshape(-1) == Verdict.UNCHECKED
    if not unchecked.any():
        return []
    rest = np.asarray(tol, dtype=np.float64).reshape(-1)[unchecked] - atol  # round-off (and rtol) part
    if atol > 0 and np.median(rest) < atol:
        why = f"{floor_name} ({atol:.3g}) is a large share of these values"
    elif f_scale is not None:
        why = f"the round-off of f (|f| = {f_scale:.2g}) swamps their slopes"
    else:
        why = "round-off swamps their slopes"
    notes = []
    coarse = unchecked & np.isfinite(share) & (share < 1.0)
    if coarse.any():
        s = share[coarse]
        spread = f"{_pct(s.min())} to {_pct(s.max())}" if s.min() < s.max() else _pct(s.min())
        notes.append(f"{int(coarse.sum())} entries UNCHECKED: resolved only to {spread} of the value (median "
                     f"{_pct(float(np.median(s)))}; a PASS needs {_pct(resolution)}): {why}")
    below = unchecked & ~coarse
    if below.any():
        notes.append(f"{int(below.sum())} entries UNCHECKED: claimed and numeric values are both within the "
                     f"finite difference's noise (a tolerance at or above the value: a true gradient of 0, or {why})")
    return notes


def _pct(share: float) -> str:
    return f"{100 * share:.2g}%"
