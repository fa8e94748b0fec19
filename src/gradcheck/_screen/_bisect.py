"""The bisection driver: from blocks that disagree to the entries that explain them.

Every block of every draw is measured (``Delta`` = claimed minus numeric slope along its
signed direction, with a bound ``beta`` and the claim's rounding ``gamma``). A block
*disagrees* when ``|Delta| > beta + gamma``. A disagreeing block is split in halves: the
first half is measured, the second is *derived* as ``Delta(parent) - Delta(first)``
(bound: the sum of both bounds), and measured directly only when the derived value can
neither clear it nor flag it. Halving continues down to blocks of :data:`LEAF_SIZE`
entries, whose entries get the full entry-wise treatment (``judge``: check's verdict
rule, step study, kink test, referee).

Localized entries are *peeled*: their entry-wise error estimate ``a_i - n_i`` (bound:
their tolerance) is subtracted from every block that holds them, in every draw. Rounds
repeat until no block disagrees, or the disagreement of a block cannot be explained by
localizing more entries (it is then *exhausted*: both halves agree, or its leaf was
judged), or the budget runs out.

When at least :data:`DENSE_SHARE` of the blocks disagree in every draw, the error is not
isolated: :data:`DENSE_EXAMPLES` blocks are followed down one path each to show entries
that fail, and the screen stops there and says so. With ``follow_dense=False`` (a whole
model, whose names are then tested one by one: ``gradcheck._models.by_name``) no block is
followed down, and every block of the first draw disagreeing (:meth:`Bisection.spread_in`)
is enough to call the error dense: the other draws' top levels are not measured (their
entries are not cleared by them; the name-by-name look measures every name in every draw).

Relevance: a block disagrees only when ``|Delta|`` exceeds ``beta + gamma`` by more than
``slack = RELEVANCE_SHARE x min_i w_i floor_i`` over its entries, where ``floor_i`` is the
smallest error check's rule calls MISMATCH at entry ``i``. Below that no single entry of
the block could fail, so the screen does not chase differences of f's implementation from
the claim's mathematics at 1e-9 relative (a library's tanh is not the exact tanh) down
to entries that check would pass.

Per entry and draw the driver records whether a block holding it was cleared, and the
threshold ``tau = 2 beta + gamma + slack`` of the blocks on its path: a single error
``e_i`` with ``w_i |e_i| > tau`` makes ``|Delta| > beta + gamma + slack`` whatever the
numeric error within its bound, so the block would have disagreed.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._measure import BudgetExhausted, Measurer
from ._partition import Draw, halves

#: Blocks of at most this many entries are judged entry by entry (2 evaluations each,
#: cheaper than the 6 per level two more halvings would cost).
LEAF_SIZE = 8
#: The screen calls an error dense when this share of the blocks disagree in every draw.
DENSE_SHARE = 0.5
DENSE_MIN_BLOCKS = 4
#: Blocks followed down to entries to show what a dense error looks like.
DENSE_EXAMPLES = 2


@dataclass(eq=False)
class Node:
    """A block, or a part of one, of a draw: its entries ``idx`` sorted (see ``_partition``)."""

    draw: int
    block: int
    idx: np.ndarray
    depth: int = 0
    delta: float = np.nan
    bound: float = np.inf
    claim: float = 0.0
    slack: float = np.nan       # relevance: RELEVANCE x the smallest w_i floor_i here (lazy)
    derived: bool = False
    children: list[Node] | None = None
    exhausted: bool = False
    measured: bool = False      # directly, or derived from its parent and sibling

    def split(self) -> list[Node]:
        if self.children is None:
            a, b = halves(self.idx)
            self.children = [Node(self.draw, self.block, a, self.depth + 1),
                             Node(self.draw, self.block, b, self.depth + 1)]
        return self.children


def members(block: np.ndarray, entries: np.ndarray) -> np.ndarray:
    """Which of ``entries`` are in ``block`` (sorted, as every node's entries are): a binary
    search each, not ``np.isin``, which sorts a copy of the block (a whole model's top block:
    millions of entries) at every call.

    >>> members(np.array([2, 5, 9]), np.array([5, 6, 9, 10])).tolist()
    [True, False, True, False]
    """
    if not block.size:
        return np.zeros(entries.shape, dtype=bool)
    at = np.minimum(np.searchsorted(block, entries), block.size - 1)
    return block[at] == entries


#: ``judge(flat_indices) -> (error estimates a_i - n_i, their bounds)``; records verdicts.
Judge = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


class Bisection:
    """State of one screen: the draws' trees, the localized entries, clearances, limits."""

    def __init__(self, measurer: Measurer, draws: list[Draw], judge: Judge,
                 relevance: Any = None, tau_dtype: Any = np.float64, follow_dense: bool = True) -> None:
        self.m = measurer
        self.follow_dense = follow_dense  # False: a dense error is said, not followed down (a whole model)
        self.relevance = relevance      # per entry: RELEVANCE w_i floor_i (None: no such cut)
        self.draws = draws
        self.judge = judge
        n = draws[0].signs.size
        self.tops = [Node(d.number, b, idx) for d in draws for b, idx in enumerate(d.blocks)]
        self.cleared = np.zeros((len(draws), n), dtype=bool)
        # Threshold on each entry's path; float32 (a whole model: 4 bytes per entry and draw)
        # holds each value rounded up, so a limit read from it is never understated.
        self.tau = np.zeros((len(draws), n), dtype=tau_dtype)
        self.loc_idx = np.zeros(0, dtype=np.int64)
        self.loc_err = np.zeros(0)
        self.loc_bound = np.zeros(0)
        self.dense = False
        self.budget_hit = False
        self.depth_ratio = 1.0                          # worst tau(child) / tau(parent) seen
        self.rounds = 0

    # -- measuring --------------------------------------------------------------------
    def measure(self, nodes: Sequence[Node], method: str | None = None) -> None:
        if not nodes:
            return
        got = self.m.measure([(n.idx, self.draws[n.draw].signs[n.idx]) for n in nodes], method)
        for j, n in enumerate(nodes):
            n.delta, n.bound, n.claim = float(got.delta[j]), float(got.bound[j]), float(got.claim[j])
            n.derived, n.measured = False, True

    def measure_tops(self, draw_numbers: list[int], known: dict[int, tuple[float, float, float]] | None = None,
                     method: str | None = None) -> None:
        """Measure the top blocks of these draws (``known``: values already measured, by
        position in ``self.tops``)."""
        known = known or {}
        chosen = [j for j, n in enumerate(self.tops) if n.draw in draw_numbers]
        for j in chosen:
            if j in known:
                n = self.tops[j]
                n.delta, n.bound, n.claim = known[j]
                n.derived, n.measured = False, True
        self.measure([self.tops[j] for j in chosen if j not in known], method)
        for j in chosen:
            n = self.tops[j]
            self.set_tau(n.draw, n.idx, 2.0 * n.bound + self.gate(n))

    # -- peeling and decisions -----------------------------------------------------------
    def residual(self, node: Node) -> tuple[float, float]:
        """``Delta`` minus the localized entries' estimated errors, and its bound."""
        if not self.loc_idx.size:
            return node.delta, node.bound
        inside = members(node.idx, self.loc_idx)
        if not inside.any():
            return node.delta, node.bound
        sel = self.loc_idx[inside]
        signed = self.draws[node.draw].signs[sel] * self.m.weights[sel]
        shift = float(np.sum(signed * self.loc_err[inside]))
        extra = float(np.sum(self.m.weights[sel] * self.loc_bound[inside]))
        return node.delta - shift, node.bound + extra

    def gate(self, node: Node) -> float:
        """What a block's residual must exceed beyond its bound to disagree: the claim's
        rounding, plus the relevance slack (no entry here could fail check's rule below it)."""
        if np.isnan(node.slack):
            node.slack = float(self.relevance[node.idx].min()) if self.relevance is not None and node.idx.size else 0.0
        return node.claim + node.slack

    def disagrees(self, node: Node) -> bool:
        r, b = self.residual(node)
        return not (np.isfinite(r) and np.isfinite(b)) or abs(r) > b + self.gate(node)

    def significance(self, node: Node) -> float:
        r, b = self.residual(node)
        gate = b + self.gate(node)
        return abs(r) / gate if np.isfinite(r) and gate > 0 else np.inf

    def decide(self, child: Node, sibling: Node) -> tuple[str, float]:
        """("flag" | "clear" | "unsure", the threshold a clearance certifies)."""
        r, b = self.residual(child)
        if not (np.isfinite(r) and np.isfinite(b)):
            return "flag", np.inf
        if abs(r) > b + self.gate(child):
            return "flag", np.inf
        if not child.derived:
            return "clear", 2.0 * b + self.gate(child)
        # Derived: cleared only if even its wide bound keeps it under a direct threshold.
        ref = 2.0 * sibling.bound + sibling.claim + self.gate(child) - child.claim if not sibling.derived else np.inf
        if abs(r) + b + child.claim <= ref:
            return "clear", ref
        return "unsure", np.inf

    def set_tau(self, draw: int, idx: np.ndarray, tau: float, *, keep_larger: bool = False) -> None:
        """``tau`` (or the larger of it and what is there) as the threshold of entries ``idx``
        in ``draw``, rounded up to the array's dtype."""
        value = np.asarray(tau, dtype=self.tau.dtype)
        if value < tau:
            value = np.nextafter(value, np.asarray(np.inf, dtype=self.tau.dtype))
        self.tau[draw, idx] = np.maximum(self.tau[draw, idx], value) if keep_larger else value

    def _clear(self, node: Node, tau: float) -> None:
        self.set_tau(node.draw, node.idx, tau, keep_larger=True)
        self.cleared[node.draw, node.idx] = True

    # -- descending ----------------------------------------------------------------------
    def descend(self, roots: list[Node], *, single_path: bool = False) -> list[Node]:
        """Halve the disagreeing ``roots`` level by level (all paths at once, so each level
        is one batch for the engine); returns the leaves that still disagree."""
        frontier, leaves = [n for n in roots if not n.exhausted], []
        while frontier:
            leaves += [n for n in frontier if n.idx.size <= LEAF_SIZE]
            frontier = [n for n in frontier if n.idx.size > LEAF_SIZE]
            pairs = [n.split() for n in frontier]
            self.measure([a for a, _ in pairs if not a.measured])
            for node, (a, b) in zip(frontier, pairs):
                if not b.measured or b.derived:
                    b.delta, b.bound = node.delta - a.delta, node.bound + a.bound
                    b.claim, b.derived, b.measured = node.claim + a.claim, True, True
            unsure = [b for _, (a, b) in zip(frontier, pairs) if b.derived and self.decide(b, a)[0] == "unsure"]
            self.measure(unsure)
            frontier = self._next_level(frontier, pairs, single_path)
        return leaves

    def _next_level(self, frontier: list[Node], pairs, single_path: bool) -> list[Node]:
        nxt = []
        for node, pair in zip(frontier, pairs):
            flagged = []
            for child, sibling in (pair, pair[::-1]):
                if child.exhausted:
                    continue
                verdict, tau = self.decide(child, sibling)
                if verdict == "clear":
                    self._clear(child, tau)
                elif verdict == "flag":
                    flagged.append(child)
                if not child.derived and np.isfinite(node.bound) and not node.derived:
                    parent_tau = 2.0 * node.bound + node.claim
                    if parent_tau > 0:
                        self.depth_ratio = max(self.depth_ratio, (2.0 * child.bound + child.claim) / parent_tau)
            if not flagged:
                node.exhausted = True  # the disagreement does not survive halving
            if single_path and flagged:
                flagged = [max(flagged, key=self.significance)]
            nxt += flagged
        return nxt

    # -- localizing ------------------------------------------------------------------------
    def localize(self, leaves: list[Node]) -> int:
        """Judge the new entries of disagreeing leaves; returns how many were new."""
        new = np.setdiff1d(np.concatenate([n.idx for n in leaves]) if leaves else np.zeros(0, np.int64),
                           self.loc_idx)
        for n in leaves:
            if np.isin(n.idx, self.loc_idx).all():
                n.exhausted = True  # judged already, still disagreeing
        if not new.size:
            return 0
        err, bound = self.judge(new)
        self.loc_idx = np.concatenate([self.loc_idx, new])
        self.loc_err = np.concatenate([self.loc_err, np.where(np.isfinite(err), err, 0.0)])
        self.loc_bound = np.concatenate([self.loc_bound, np.where(np.isfinite(err) & np.isfinite(bound), bound, np.inf)])
        return int(new.size)

    def spread_in(self, draw: int) -> bool:
        """Every block of ``draw`` (at least :data:`DENSE_MIN_BLOCKS`) disagrees: an error
        spread over the entries, not a few isolated ones."""
        tops = [n for n in self.tops if n.draw == draw]
        return len(tops) >= DENSE_MIN_BLOCKS and all(self.disagrees(n) for n in tops)

    def dense_in_every_draw(self) -> bool:
        for d in self.draws:
            tops = [n for n in self.tops if n.draw == d.number]
            bad = sum(self.disagrees(n) for n in tops)
            if len(tops) < DENSE_MIN_BLOCKS or bad < DENSE_SHARE * len(tops):
                return False
        return True

    def run(self) -> None:
        """Rounds of descend / localize / peel until nothing disagrees that could be
        explained, the error is dense, or the budget is spent."""
        try:
            if self.dense or self.dense_in_every_draw():
                self.dense = True
                if not self.follow_dense:
                    return
                flagged = sorted((n for n in self.tops if n.draw == self.draws[0].number and self.disagrees(n)),
                                 key=self.significance, reverse=True)
                self.localize(self.descend(flagged[:DENSE_EXAMPLES], single_path=True))
                return
            while True:
                roots = [n for n in self.tops if not n.exhausted and self.disagrees(n)]
                if not roots:
                    return
                # One draw at a time: what the first draw localizes, peeled, usually
                # explains the other draws' disagreements without descending there.
                first = min(n.draw for n in roots)
                roots = [n for n in roots if n.draw == first]
                self.rounds += 1
                if not self.localize(self.descend(roots)):
                    for n in roots:
                        n.exhausted = True
        except BudgetExhausted:
            self.budget_hit = True

    def finish(self) -> None:
        """Clear the entries of every measured top block that no longer disagrees."""
        for n in self.tops:
            if np.isfinite(n.bound) and not self.disagrees(n):
                _, b = self.residual(n)
                self._clear(n, 2.0 * b + self.gate(n))

    # -- results ---------------------------------------------------------------------------
    def disagreeing_tops(self) -> list[Node]:
        return [n for n in self.tops if self.disagrees(n)]
