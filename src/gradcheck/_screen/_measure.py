"""Measure blocks: ``Delta`` (claimed minus numeric directional slope) and its bound.

A :class:`Measurer` turns blocks (flat indices and their signs) into jobs for the engine,
counts every evaluation of ``f`` against the budget, and returns per block ``Delta``, its
bound ``beta`` (numeric error) and ``gamma`` (rounding of the claimed slope). By finite
differences (:mod:`._directional`: 6 evaluations per block) or, once it has been accepted,
by the complex step (:mod:`._complex`: 1 evaluation per block).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._directional import FACTORS, StepChoice, choose_step, claimed_slope, estimate, points, roundoff_per_step

#: A block measured by finite differences whose bound is more than this many times the bound
#: the step search reached on its own block (at the step's optimum there, round-off and
#: truncation balanced) is truncation-dominated at that step: it is measured again at
#: ``t/4`` and ``t/2`` (4 evaluations), and the better of the two estimates kept. Only where
#: the bound matters: where it lifts the limit above check's own floor at the block's median
#: entry (as the re-cut decides; at the default rtol, rtol is that floor almost everywhere).
REFINE_OVER = 4.0
#: The values a batch of finite-difference jobs may hold (2**24: 128 MB of float64 points),
#: and never more than the entries of ``x`` (one copy) above :data:`BATCH_FLOOR` of them.
BATCH_ENTRIES = 1 << 24
BATCH_FLOOR = 1 << 20


class BudgetExhausted(Exception):
    """The next batch would exceed the budget of evaluations."""


@dataclass
class Measured:
    delta: np.ndarray   # claimed minus numeric slope, per block
    bound: np.ndarray   # bound on the numeric side's error
    claim: np.ndarray   # rounding of the claimed slope
    method: str         # "fd", "complex" or "exact"


def disagreement(a: Measured, b: Measured) -> str:
    """Where two measurements of the same blocks' slopes disagree beyond the sum of their
    bounds and roundings, in words ("on 3 of 64 blocks (by ... where the bounds allow
    ...)"), or "" where they agree on every block."""
    gap = np.abs(a.delta - b.delta)
    allowed = a.bound + b.bound + a.claim + b.claim
    bad = ~(gap <= allowed)
    if not bad.any():
        return ""
    j = int(np.flatnonzero(bad)[np.argmax((gap / allowed)[bad])])
    return f"on {int(bad.sum())} of {bad.size} blocks (by {gap[j]:.3g} where the bounds allow {allowed[j]:.3g})"


@dataclass
class Measurer:
    engine: Any
    x_flat: np.ndarray          # x (its dtype), never written
    analytic: np.ndarray        # the claim, float64, flat
    weights: np.ndarray         # w_i = max(1, |x_i|)
    unit: float
    k: float                    # noise factor
    budget: int
    t: float = 0.0              # the step, once chosen
    rho: float = 0.0            # f's measured round-off
    complex_probe: Any = None   # set when the complex step is accepted
    exact_probe: Any = None     # set when the arbitrary-precision path is accepted
    evaluations: int = 0
    by_method: dict[str, int] = field(default_factory=lambda: {"fd": 0, "complex": 0})
    calibrated: float = np.inf  # the bound the step search reached at t on its block
    worth: Any = None  # per entry (an array or a _limit.Product): w_i x check's floor (a bound below matters not)
    refined: int = 0            # blocks measured again at shorter steps
    staged_settled: int = 0     # blocks :meth:`staged` settled at two steps

    def afford(self, count: int) -> bool:
        return self.evaluations + count <= self.budget

    def run(self, jobs: list, method: str = "fd") -> np.ndarray:
        """Evaluate ``jobs`` on the engine, counted (raises BudgetExhausted first)."""
        if not self.afford(len(jobs)):
            raise BudgetExhausted(len(jobs))
        values = self.engine.run(jobs)
        self.evaluations += len(jobs)
        self.by_method[method] = self.by_method.get(method, 0) + len(jobs)
        return values

    def cost(self, blocks: int) -> int:
        return blocks * (1 if self.complex_probe is not None else 2 * len(FACTORS))

    def measure(self, blocks: list[tuple[np.ndarray, np.ndarray]], method: str | None = None) -> Measured:
        """``blocks`` are ``(idx, signs)`` pairs; ``method`` forces "fd"."""
        if not blocks:
            empty = np.zeros(0)
            return Measured(empty, empty.copy(), empty.copy(), "fd")
        if method != "fd" and self.exact_probe is not None and self.exact_probe.usable():
            return self.exact_probe.measure(self, blocks)
        if method != "fd" and self.complex_probe is not None:
            return self.complex_probe.measure(self, blocks)
        return self.finite_differences(blocks)

    def direction(self, idx: np.ndarray, signs: np.ndarray, x: np.ndarray | None = None) -> np.ndarray:
        """``s_i w_i`` on the block; ``x``: ``x_flat[idx]`` when the caller has it (weights
        computed where read, a whole model's, are then computed from it: no second gather)."""
        from_x = getattr(self.weights, "from_x", None)
        return signs * (from_x(x) if x is not None and from_x is not None else self.weights[idx])

    def choose_step(self, idx: np.ndarray, signs: np.ndarray, start: float) -> StepChoice:
        """:func:`._directional.choose_step` along the block ``idx`` with ``signs`` (from the
        step ``start``), its evaluations run and counted here. The block's index array is
        converted once and its ``x`` and claim gathered once for every step (:meth:`_along`)."""
        idx = np.asarray(idx, dtype=np.intp)
        old, claim = self.x_flat[idx], self.analytic[idx]
        d = self.direction(idx, signs, old)

        def sample(t: float) -> tuple[float, float, float]:
            pts = points(self.x_flat, idx, d, t, old=old)
            fp, fm = self.run([(idx, pts.plus), (idx, pts.minus)])
            return float(fp), float(fm), claimed_slope(self.analytic, pts, t, claim=claim)

        return choose_step(sample, start, unit=self.unit, k=self.k)

    def finite_differences(self, blocks: list[tuple[np.ndarray, np.ndarray]]) -> Measured:
        """:meth:`_differences` over the blocks, in batches whose points stay within
        :data:`BATCH_ENTRIES` values and one copy of ``x`` (a whole model's 16 blocks at once
        would hold six copies of it); one batch, as before, for anything smaller."""
        parts = [self._differences(group) for group in self._batches(blocks)]
        if len(parts) == 1:
            return parts[0]
        joined = [np.concatenate([getattr(p, k) for p in parts]) for k in ("delta", "bound", "claim")]
        return Measured(joined[0], joined[1], joined[2], "fd")

    def _along(self, idx: np.ndarray, signs: np.ndarray, factors: tuple[float, ...], claims: np.ndarray,
               jobs: list) -> None:
        """The jobs of one block at the steps ``t * factors`` (appended to ``jobs``) and its
        claimed slopes there (into ``claims``): the block's index array (converted to numpy's
        index type once: every gather and write of a whole model's block would convert it
        again), its ``x`` and its claim gathered once for all the steps."""
        idx = np.asarray(idx, dtype=np.intp)
        old, claim = self.x_flat[idx], self.analytic[idx]
        d = self.direction(idx, signs, old)
        for j, factor in enumerate(factors):
            s = self.t * factor
            pts = points(self.x_flat, idx, d, s, old=old)
            claims[j] = claimed_slope(self.analytic, pts, s, claim=claim)
            jobs += [(idx, pts.plus), (idx, pts.minus)]

    def _differences(self, blocks: list[tuple[np.ndarray, np.ndarray]]) -> Measured:
        return self._finish(blocks, *self._at_steps(blocks, FACTORS))

    def _at_steps(self, blocks: list[tuple[np.ndarray, np.ndarray]],
                  factors: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``Delta``, its round-off and the claimed slope of each block at the steps
        ``t * factors``: arrays of shape ``(len(factors), blocks)``."""
        jobs: list[tuple[np.ndarray, np.ndarray]] = []
        claims = np.empty((len(factors), len(blocks)))
        for b, (idx, signs) in enumerate(blocks):
            self._along(idx, signs, factors, claims[:, b], jobs)
        deltas, noises = self._slopes(claims, self.run(jobs, "fd"), factors)
        return deltas, noises, claims

    def _finish(self, blocks, deltas: np.ndarray, noises: np.ndarray, claims: np.ndarray) -> Measured:
        """The estimate over the three steps of :data:`FACTORS` (rows of the arrays)."""
        claim_error = self.unit * np.max(np.abs(claims), axis=0)
        est = estimate(deltas, noises)
        delta, bound = est.delta.copy(), est.bound.copy()
        self._refine(blocks, delta, bound, claim_error, (deltas[0], noises[0]))
        return Measured(delta, bound, claim_error, "fd")

    def _slopes(self, claims: np.ndarray, values: np.ndarray, factors: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
        """``Delta`` and its round-off at the steps ``t * factors`` (shape ``(len(factors),
        blocks)``) from the claimed slopes there and the jobs' values (``f+, f-`` per step,
        block after block, as :meth:`_along` appends them)."""
        values = values.reshape(claims.shape[1], len(factors), 2)
        fp, fm = values[..., 0].T, values[..., 1].T
        steps = (self.t * np.asarray(factors))[:, None]
        with np.errstate(invalid="ignore", over="ignore"):
            deltas = claims - (fp - fm) / (2.0 * steps)
        return deltas, roundoff_per_step(fp, fm, steps, unit=self.unit, k=self.k, rho=self.rho)

    def staged(self, blocks: list[tuple[np.ndarray, np.ndarray]], settled) -> Measured:
        """Finite differences in two stages, for directions expected to disagree by far: at
        ``t`` and ``2t`` first (4 evaluations each), ``Delta(t)`` with the step study's bound
        (its round-off plus ``|Delta(2t) - Delta(t)| / 3``, the measured O(t^2) truncation:
        one of :func:`._directional.estimate`'s candidates); the blocks for which
        ``settled(measured) -> bool array`` says that is enough keep it, the others are
        measured at ``4t`` too and get the full estimate (6 evaluations, as :meth:`measure`).
        The complex step or the exact path, when accepted, measures as :meth:`measure` does."""
        if not blocks or self.complex_probe is not None or self.exact_probe is not None:
            return self.measure(blocks)
        first = [self._at_steps(part, FACTORS[:2]) for part in self._batches(blocks)]
        deltas, noises, claims = (np.concatenate([f[k] for f in first], axis=1) for k in range(3))
        with np.errstate(invalid="ignore", over="ignore"):
            bound = noises[0] + np.abs(deltas[1] - deltas[0]) / 3.0
        claim_error = self.unit * np.max(np.abs(claims), axis=0)
        bound = np.where(np.isfinite(bound) & np.isfinite(deltas[0]), bound + claim_error, np.inf)
        out = Measured(deltas[0].copy(), bound, claim_error, "fd")
        rest = np.flatnonzero(~np.asarray(settled(out), dtype=bool))
        if rest.size:
            picked = [blocks[j] for j in rest]
            third = [self._at_steps(part, FACTORS[2:]) for part in self._batches(picked)]
            d4, n4, c4 = (np.concatenate([f[k] for f in third], axis=1) for k in range(3))
            full = self._finish(picked, np.vstack([deltas[:, rest], d4]), np.vstack([noises[:, rest], n4]),
                                np.vstack([claims[:, rest], c4]))
            out.delta[rest], out.bound[rest], out.claim[rest] = full.delta, full.bound, full.claim
        self.staged_settled += len(blocks) - int(rest.size)
        return out

    def _batches(self, blocks: list[tuple[np.ndarray, np.ndarray]]) -> list[list[tuple[np.ndarray, np.ndarray]]]:
        """The blocks in batches as :meth:`finite_differences` cuts them."""
        cap = min(BATCH_ENTRIES, max(BATCH_FLOOR, self.x_flat.size)) // (2 * len(FACTORS))
        out: list[list[tuple[np.ndarray, np.ndarray]]] = [[]]
        size = 0
        for block in blocks:
            if out[-1] and size + block[0].size > cap:
                out.append([])
                size = 0
            out[-1].append(block)
            size += block[0].size
        return out

    def _refine(self, blocks, delta, bound, claim_error, at_t) -> None:
        """Blocks truncation-dominated at ``t`` (see :data:`REFINE_OVER`), where it matters:
        measured again at ``t/4, t/2`` and estimated over ``t/4, t/2, t``; the smaller bound
        kept (in place). Skipped when the budget cannot pay for it."""
        worth = self.worth
        pick = [b for b, (idx, _) in enumerate(blocks)
                if bound[b] > REFINE_OVER * self.calibrated
                and (worth is None or 2.0 * bound[b] + claim_error[b] > float(np.median(worth[idx])))]
        if not pick or not self.afford(4 * len(pick)):
            return
        shorter = (0.25, 0.5)
        jobs: list[tuple[np.ndarray, np.ndarray]] = []
        claims = np.empty((len(shorter), len(pick)))
        for c, b in enumerate(pick):
            idx, signs = blocks[b]
            self._along(idx, signs, shorter, claims[:, c], jobs)
        deltas, noises = self._slopes(claims, self.run(jobs, "fd"), shorter)
        d_t, n_t = at_t[0][pick], at_t[1][pick]
        est = estimate(np.vstack([deltas, d_t[None]]), np.vstack([noises, n_t[None]]))
        self.refined += len(pick)
        for c, b in enumerate(pick):
            claim_error[b] = max(claim_error[b], self.unit * float(np.max(np.abs(claims[:, c]))))
            if est.bound[c] < bound[b]:
                delta[b], bound[b] = est.delta[c], est.bound[c]
