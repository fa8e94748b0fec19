"""The step study of the suspects, and the record of every difference it takes.

The suspects are every MISMATCH and, with ``refine_noisy``, the PASS entries whose tolerance
is mostly round-off (the quick look first, :mod:`.quick`) and the UNCHECKED ones; each is
studied over several steps (:mod:`.study`).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._classify.rule import rule_of
from .._core.judged import Judged
from .._core.tolerance import Tolerance
from .._core.verdict import Cause, Verdict
from . import budget as _budget
from .budget import Budget, by_suspicion
from .quick import quick_certify
from .study import STUDY_FACTORS, step_study

#: Noisy PASS entries get the quick look (``.quick.quick_certify``) before the full step
#: study. False gives the full study to every suspect (the tests compare the two).
QUICK_LOOK = True


def _noisy_passes(codes, analytic, numeric, noise, rule: Tolerance, block: int = 1 << 15) -> np.ndarray:
    """PASS entries whose round-off allowance exceeds their relative one, block by block
    (elementwise, so the same bits as in one go, without full-size float temporaries)."""
    out = np.zeros(codes.size, dtype=bool)
    for start in range(0, codes.size, block):
        part = slice(start, start + block)
        scale = np.maximum(np.abs(analytic[part]), np.abs(numeric[part]))
        out[part] = (codes[part] == Verdict.PASS) & (rule.noise_term(noise[part]) > rule.value_term(scale))
    return out


#: The second look studies at most this many suspects at once: a study holds ~60 floats per
#: suspect, so with most entries suspects (a claim everywhere within round-off of its size)
#: one study of all of them held ~130 arrays of N. The chunks interleave (chunk k is every
#: K-th suspect): a coloured differencer's rounds (the most suspects one slice holds) grow by
#: fewer than K per step; the quick look's leftovers are gathered before their study (chunk by
#: chunk they would cost more rounds); each entry's verdict is the same bits.
CHUNK = 1 << 16


def second_look(judged: Judged, sub, analytic, diffs, steps, base_value, unit, cfg) -> None:
    """Step study of the suspects: every MISMATCH, and with ``refine_noisy`` the noisy PASS
    entries (the quick look first) and the UNCHECKED ones. ``sub`` counts the evaluations.
    ``base_value`` is f at x: a scalar, or one per entry (aligned with ``analytic``).
    At most :data:`CHUNK` suspects are studied at once. The optional part (all but the
    MISMATCH studies) stays within ``cfg.second_look``'s budget (:mod:`.budget`): the noisy
    PASS entries it cannot serve become UNCHECKED (``judged.budget`` says how many)."""
    fp, fm = diffs[0], diffs[1]
    numeric, noise, codes = judged.numeric, judged.noise, judged.codes
    suspect = codes == Verdict.MISMATCH
    if cfg.refine_noisy:
        # PASS entries whose tolerance is mostly round-off certify less than rtol;
        # UNCHECKED entries may sit on a kink, or resolve with larger steps.
        suspect |= _noisy_passes(codes, analytic, numeric, noise, Tolerance.of(cfg))
        suspect |= codes == Verdict.UNCHECKED
    suspects = np.flatnonzero(suspect & np.isfinite(fp) & np.isfinite(fm))
    del suspect
    options = dict(unit_roundoff=unit, **rule_of(cfg))
    per_bound = lambda b: b / cfg.noise_factor if cfg.noise_factor else b  # noqa: E731
    budget = Budget(_budget.allowance(codes.size, cfg.second_look), sub)
    kinds = codes[suspects]
    mismatches = suspects[kinds == Verdict.MISMATCH]
    reserved = _budget.STUDY_COST * mismatches.size  # never cut: reserved before the optional part
    # Noisy PASS entries get the quick look first (most suspicious first, as many as the
    # budget affords); what it certifies skips the study.
    noisy = by_suspicion(suspects[kinds == Verdict.PASS], analytic, numeric, cfg.rtol)
    if QUICK_LOOK:
        noisy, unserved = budget.take(noisy, _budget.QUICK_COST, reserved, _budget.QUICK_SHARE)
    else:  # every noisy PASS to the full study (the tests compare the two)
        noisy, unserved = budget.take(noisy, _budget.STUDY_COST, reserved)
    noisy.sort()
    rests: list[tuple[np.ndarray, dict]] = []
    for part in _in_chunks(sub, "quick", noisy if QUICK_LOOK else noisy[:0]):
        q = quick_certify(sub, part, steps[part], analytic[part], tuple(d[part] for d in diffs),
                          base_value=base_at(base_value, part), **options)
        ok = part[q.certified]
        numeric[ok], noise[ok] = q.numeric[q.certified], per_bound(q.bound[q.certified])
        judged.refined[ok] = True
        judged.causes[ok] = Cause.STEP_STUDY
        rest = ~q.certified
        rests.append((part[rest], {f: tuple(d[rest] for d in q.raw[f]) for f in q.raw}))
    # The quick look's leftovers of every chunk are studied together (fewer rounds of a
    # coloured differencer than chunk by chunk), in chunks again if they are many.
    rest, measured = _joined(rests) if QUICK_LOOK else (noisy, None)
    rests.clear()  # the parts, now copied into the joined group
    _study_groups(judged, sub, analytic, diffs, steps, base_value, options, per_bound, [(mismatches, None)])
    if rest.size and budget.limit is not None and QUICK_LOOK:
        keep = np.isin(rest, budget.take(by_suspicion(rest, analytic, numeric, cfg.rtol), _budget.REST_COST)[0])
        unserved = np.concatenate([unserved, rest[~keep]])
        rest, measured = rest[keep], None if measured is None else {
            f: tuple(d[keep] for d in v) for f, v in measured.items()}
    _study_groups(judged, sub, analytic, diffs, steps, base_value, options, per_bound, [(rest, measured)])
    unchecked = budget.take(suspects[kinds == Verdict.UNCHECKED], _budget.STUDY_COST)[0]
    _study_groups(judged, sub, analytic, diffs, steps, base_value, options, per_bound, [(unchecked, None)])
    _unserved(judged, unserved, budget)


def _study_groups(judged, sub, analytic, diffs, steps, base_value, options, per_bound, groups) -> None:
    """The step study of each ``(positions, differences already taken)`` group, in chunks."""
    for group, known in groups:
        chunks = max(1, -(-group.size // CHUNK))
        for k, part in enumerate(_in_chunks(sub, "study", group)):
            part_known = None if known is None else {f: tuple(d[k::chunks] for d in v) for f, v in known.items()}
            _study(judged, sub, analytic, diffs, steps, base_value, options, per_bound, part, part_known)


def _unserved(judged: Judged, positions: np.ndarray, budget: Budget) -> None:
    """The noisy PASS entries the budget could not serve: UNCHECKED (agreement within f's
    round-off only, never rtol), cause BUDGET; ``judged.budget`` records the accounts."""
    judged.codes[positions] = Verdict.UNCHECKED
    judged.causes[positions] = Cause.BUDGET
    previous = judged.budget or {"unafforded": 0, "spent": 0}
    judged.budget = {"limit": budget.limit, "spent": previous["spent"] + budget.spent(),
                     "unafforded": previous["unafforded"] + int(positions.size)}


def _in_chunks(sub, stage: str, positions: np.ndarray):
    """``positions`` in interleaved chunks of at most :data:`CHUNK` (chunk k: every K-th), the
    Recorded ``sub`` searching only the blocks of the chunk at hand (and those outside chunks)."""
    chunks = max(1, -(-positions.size // CHUNK))
    if chunks == 1:
        if positions.size:
            yield positions
        return
    tagged = isinstance(sub, Recorded)
    try:
        for k in range(chunks):
            if tagged:
                sub.tag = (stage, k)
            yield positions[k::chunks]
    finally:
        if tagged:
            sub.tag = None


def _joined(rests: list[tuple[np.ndarray, dict]]) -> tuple[np.ndarray, dict | None]:
    """The quick look's leftovers of every chunk as one sorted group, their differences aligned."""
    if len(rests) == 1:
        return rests[0]
    if not rests:
        return np.zeros(0, dtype=np.int64), None
    group = np.concatenate([r[0] for r in rests])
    order = np.argsort(group, kind="stable")
    measured = {f: tuple(np.concatenate([r[1][f][i] for r in rests])[order] for i in range(3)) for f in rests[0][1]}
    return group[order], measured


def _study(judged: Judged, sub, analytic, diffs, steps, base_value, options, per_bound, group: np.ndarray,
           measured) -> None:
    """The step study of ``group`` (sorted positions); ``measured``: differences already taken."""
    if not group.size:
        return
    study = step_study(sub, group, steps[group], analytic[group], tuple(d[group] for d in diffs),
                       measured=measured, base_value=base_at(base_value, group), **options)
    judged.numeric[group] = study.numeric
    judged.noise[group] = per_bound(study.bound)
    judged.codes[group] = study.codes
    judged.refined[group] = True
    judged.causes[group] = np.where(study.kink, Cause.KINK_STEPS, Cause.STEP_STUDY)
    judged.left[group], judged.right[group] = study.left, study.right
    if study.slopes is not None:
        judged.keep_study(group, np.outer(steps[group], STUDY_FACTORS), study.slopes.T)
    if study.unsettled is not None and study.unsettled.any():
        judged.notes.append(
            f"{int(study.unsettled.sum())} MISMATCH of the step study not confirmed at smaller steps (its steps may "
            f"span periods of an oscillating f, e.g. a relative step at a large |x|; no smaller step reached "
            f"differences agreeing to round-off): UNCHECKED, not proven")


def base_at(base_value, positions: np.ndarray):
    """f at x for the entries at ``positions``: one scalar for all (a plain check), or each
    entry's own (``independent_axes``: the base value of the entry's slice, an array of one
    per entry or a :class:`PerEntry`)."""
    if isinstance(base_value, PerEntry):
        return base_value[positions]
    if base_value is None or np.ndim(base_value) == 0:
        return base_value
    return np.asarray(base_value)[positions]


def finite_anywhere(base_value) -> bool:
    """Is f at x finite for some entry? (``base_value``: a scalar, one per entry, or a
    :class:`PerEntry`.)"""
    values = base_value.values if isinstance(base_value, PerEntry) else base_value
    return bool(np.isfinite(values).any())


class PerEntry:
    """Each entry's base value, one per slice underneath: ``base[positions]`` is the value of
    each position's slice (``slice_of``); ``values`` and ``per_slice`` (every slice holds that
    many entries) describe all N of them without an array of N.

    >>> base = PerEntry(np.array([1.0, 2.0]), lambda i: np.asarray(i) // 3, 3)
    >>> base[np.array([0, 4, 5])].tolist()
    [1.0, 2.0, 2.0]
    """

    def __init__(self, values: np.ndarray, slice_of: Callable[[np.ndarray], np.ndarray], per_slice: int) -> None:
        self.values, self.slice_of, self.per_slice = values, slice_of, per_slice

    def __getitem__(self, positions: Any) -> np.ndarray:
        return self.values[self.slice_of(np.asarray(positions))]


class Recorded:
    """A differencer that keeps every difference it takes (as arrays, one block per call),
    answers a repeated ``(position, step)`` from them, and counts the evaluations it makes."""

    def __init__(self, differencer) -> None:
        self._differencer, self.evaluations = differencer, 0
        self._blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # sorted positions, steps, values
        # Per block, the chunk of the second look that took it (None: outside chunks). While
        # ``tag`` is set, blocks of other chunks are not searched (they hold other positions).
        self._tags: list[Any] = []
        self.tag: Any = None
        # What may still need the values (``watch``): None keeps every block. Otherwise the
        # blocks from ``_watched_from`` on are kept only while ``watch.feed(values)`` says
        # they can still be needed (:class:`.roundoff.LowerFormats`: a re-study with a lower
        # format's round-off); the blocks before it (the probe's) are always kept.
        self.watch: Any = None
        self._watched_from = 0

    def __call__(self, positions, steps):
        pos = np.asarray(positions, dtype=np.int64).reshape(-1)
        h = np.asarray(steps, dtype=np.float64).reshape(-1)
        out = np.full((3, pos.size), np.nan)
        found = np.zeros(pos.size, dtype=bool)
        for (known, known_h, values), tag in zip(self._blocks, self._tags):
            if tag is not None and self.tag is not None and tag != self.tag:
                continue
            j = np.minimum(np.searchsorted(known, pos), known.size - 1)
            hit = ~found & (known[j] == pos) & (known_h[j] == h)
            out[:, hit], found = values[:, j[hit]], found | hit
        miss = np.flatnonzero(~found)
        if miss.size:
            fresh = np.vstack(self._differencer(pos[miss], h[miss])).astype(np.float64)
            self.evaluations += 2 * int(miss.size)
            out[:, miss] = fresh
            if self.watch is None or self.watch.feed(fresh[:2]):
                order = np.argsort(pos[miss], kind="stable")
                self._blocks.append((pos[miss][order], h[miss][order], fresh[:, order]))
                self._tags.append(self.tag)
            else:  # no longer needed: the watched blocks go, and the next ones are not kept
                del self._blocks[self._watched_from:], self._tags[self._watched_from:]
        return out[0], out[1], out[2]  # views of one fresh array: no copies

    def watch_from_now(self, watch) -> None:
        """Keep the blocks taken from now on only while ``watch.feed(values)`` is True (it is
        given each fresh block's ``f(x + s)`` and ``f(x - s)``; once False, those blocks
        are dropped and no more are kept). Within one second look no ``(position, step)`` is
        asked twice (a study reuses the quick look's differences as arrays, and chunks hold
        different positions): only the blocks taken before (the probe's) and a re-study
        (:func:`.roundoff.recheck_precision`, which asks ``watch`` first) reuse blocks
        (``demote_unproven`` re-studies from every block too: no watch is set when it may run)."""
        self.watch, self._watched_from = watch, len(self._blocks)

    def values(self) -> list[np.ndarray]:
        """Every f(x ± s) taken so far, a part per block (not concatenated: with most entries
        suspects, the blocks hold several arrays of N)."""
        return [v[:2].reshape(-1) for _, _, v in self._blocks]

