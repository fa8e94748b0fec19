"""The second look name by name, after a whole model's joint screen.

Two kinds of name need it:

* **Unresolved** names hold entries the joint screen neither cleared nor localized: their
  blocks disagreed and bisection could not explain it entry by entry (an error spread over
  whole names, as a wrong value passed along the backward makes: every block of the first
  draw, or most blocks of every draw, disagree; the joint screen calls it dense and follows no
  block down, since this look finds the names and its examples the entries). They are
  tested name by name: each name's own direction (its entries, their signs of the draw) is
  measured like a block, names grouped in backward order and halved until single names
  (a group that agrees clears all its names at once; the second half of a group is derived
  from the group and its first half, as bisection derives halves). A name whose direction
  disagrees beyond its bound fails: its gradient is wrong somewhere (the evidence is stated
  in its report), and for the first few such names in backward order the entries with the
  largest claims get an entry-wise look, for an example MISMATCH. A name whose direction
  agrees in every draw is cleared, with the detection limit its direction gives.
* **Limited** names (only where nothing failed) have their detection limit set by the joint
  blocks rather than by check's own tolerance, and more than :data:`OVER_FLOOR` times that
  tolerance: a name whose gradients are orders of magnitude below the others'. They are
  screened again together, on their own (their own step search, :data:`SUB_BLOCKS` blocks per
  draw), and each entry keeps the lower of its two limits; the notes say what it gained.

Big names are cut into pieces of at most :data:`PIECE` entries (a direction's points are
arrays of its size: six of them, and its indices, while it is measured).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._core.verdict import Verdict
from .._screen import Bisection, BudgetExhausted, Node, Screened, prepare_flat, run_screen
from .segments import Segments, flat_loss

#: A name whose median stated limit exceeds this many times check's own floor is limited by
#: the joint blocks (the screen's re-cut rule, ``_screen._api.RECUT_OVER_FLOOR``).
OVER_FLOOR = 2.0
#: Blocks per draw of the screen of the limited names (their entries are already screened at
#: the joint limit; this one lowers it).
SUB_BLOCKS = 8
#: Failing names (in backward order: the first is where a wrong value enters the backward)
#: whose largest claims get an entry-wise look, and how many: name after name until one shows
#: a MISMATCH (an entry that fails costs ~14 evaluations, its step study and kink test; one
#: that passes, 2).
EXAMPLE_NAMES = 4
EXAMPLE_ENTRIES = 2
#: Entries per piece of a name, and per top group, of the name-by-name test (each top group
#: costs a measurement per draw: GPT-2 small's 124M entries make 9 groups, 17 at 2**23; a
#: group's points take ~1.1 GB while it is measured).
PIECE = 1 << 24


@dataclass(frozen=True)
class Piece:
    name: str
    lo: int
    hi: int


@dataclass
class ByName:
    """What the second look found: names failing along their own direction (and why), the
    screen of the limited names (its segment map and run), and notes."""

    failing: dict[str, str] = field(default_factory=dict)
    sub: tuple[Segments, Any, Screened] | None = None
    notes: list[str] = field(default_factory=list)
    evaluations: int = 0


def second_look(group: Any, stats: Mapping[str, tuple[bool, float]], loss: Any, params: Mapping[str, np.ndarray],
                order: list[str], seed: int | None) -> ByName:
    """The second look at a group's names. ``stats[name] = (unresolved, limit over floor at the
    median entry)``; ``order`` is the backward order of every name."""
    out = ByName()
    state = group.done.state
    m, before = state.measurer, state.measurer.evaluations
    unresolved = [n for n in order if n in stats and stats[n][0]]
    try:
        if unresolved:
            _by_direction(group, unresolved, out)
    except BudgetExhausted:
        out.notes.append("the budget ran out during the name-by-name look: names not yet tested keep the joint "
                         "screen's verdicts (UNCHECKED where it could not clear them)")
    out.evaluations = m.evaluations - before
    failed = bool(out.failing) or any((j.codes == Verdict.MISMATCH).any() for _, j in state.judge.parts)
    limited = [n for n in order if n in stats and not stats[n][0] and stats[n][1] > OVER_FLOOR]
    if limited and not failed:
        _screen_limited(group, limited, stats, loss, params, seed, out)
    return out


# -- name by name: each name's own direction -----------------------------------------------

def _pieces(seg: Segments, names: list[str]) -> list[Piece]:
    out = []
    for n in names:
        lo, hi = seg.span(n)
        out += [Piece(n, a, min(hi, a + PIECE)) for a in range(lo, hi, PIECE)]
    return out


def _groups(pieces: list[Piece]) -> list[list[Piece]]:
    """Consecutive pieces (backward order) grouped up to :data:`PIECE` entries each."""
    groups: list[list[Piece]] = [[]]
    size = 0
    for p in pieces:
        if groups[-1] and size + (p.hi - p.lo) > PIECE:
            groups.append([])
            size = 0
        groups[-1].append(p)
        size += p.hi - p.lo
    return [g for g in groups if g]


#: A name (or group of names) measured at two steps only (``Measurer.staged``: 4 evaluations
#: instead of 6) fails when its disagreement exceeds this many times its bound and gate;
#: below that it gets the third step and the full estimate. So do halves derived from one.
STAGED_MARGIN = 4.0


@dataclass(eq=False)
class NameNode(Node):
    """A block made of whole names (pieces): their entries, with the draw's signs;
    ``coarse``: its values rest on a two-step measurement (its own or its parent's/sibling's)."""

    pieces: list[Piece] = field(default_factory=list)
    coarse: bool = False


def _node(pieces: list[Piece], draw: int) -> NameNode:
    # in index order, as a node's entries are (the pieces do not overlap)
    idx = np.concatenate([np.arange(p.lo, p.hi) for p in sorted(pieces, key=lambda p: p.lo)])
    return NameNode(draw, -1, idx, pieces=pieces)


def _by_direction(group: Any, names: list[str], out: ByName) -> None:
    """Test ``names`` along their own directions in every draw (see the module docstring)."""
    state = group.done.state
    bis: Bisection = state.bisection
    pending = _pieces(group.seg, names)
    tested = len(pending)
    for draw in range(state.draws):
        cleared, failing = _search(bis, [_node(g, draw) for g in _groups(pending)])
        for node in failing:
            for p in node.pieces:
                r, b = bis.residual(node)
                out.failing.setdefault(p.name, f"its gradient disagrees along its own direction (draw {draw}): "
                                                f"claimed minus numeric slope {r:.3g}, beyond the bound {b:.3g} + "
                                                f"{bis.gate(node):.3g}: some entry of it is wrong")
        for node, tau in cleared:
            fresh = node.idx[~bis.cleared[draw, node.idx]]
            bis.set_tau(draw, fresh, tau)
            bis.cleared[draw, fresh] = True
        pending = [p for node, _ in cleared for p in node.pieces if p.name not in out.failing]
    out.notes.append(f"{len(names)} names the joint screen could not settle were tested along their own directions "
                     f"({tested} pieces): {len(out.failing)} fail, the others cleared name by name")
    _examples(bis, group.seg, [n for n in names if n in out.failing][:EXAMPLE_NAMES])


def _search(bis: Bisection, tops: list[NameNode]) -> tuple[list[tuple[NameNode, float]], list[NameNode]]:
    """Halve disagreeing groups of names down to single names: ``(cleared nodes with their
    threshold, nodes of one piece that disagree)``."""
    _measure(bis, tops)
    cleared: list[tuple[NameNode, float]] = []
    failing: list[NameNode] = []
    frontier = tops
    while frontier:
        pairs = []
        for node in frontier:
            if not bis.disagrees(node):
                cleared.append((node, _threshold(bis, node)))
            elif len(node.pieces) == 1:
                failing.append(node)
            else:
                cut = len(node.pieces) // 2
                pairs.append((node, _node(node.pieces[:cut], node.draw), _node(node.pieces[cut:], node.draw)))
        _measure(bis, [a for _, a, _ in pairs])
        for node, a, b in pairs:
            b.delta, b.bound, b.claim = node.delta - a.delta, node.bound + a.bound, node.claim + a.claim
            b.derived = b.measured = True
            b.coarse = node.coarse or a.coarse
        _measure(bis, [b for _, a, b in pairs if _unsure(bis, b, a)])
        frontier = [c for _, a, b in pairs for c in (a, b)]
    return cleared, failing


def _far(bis: Bisection, node: Node) -> bool:
    """Disagrees by more than :data:`STAGED_MARGIN` times its bound and gate."""
    r, b = bis.residual(node)
    return bool(np.isfinite(r) and np.isfinite(b) and abs(r) > STAGED_MARGIN * (b + bis.gate(node)))


def _unsure(bis: Bisection, derived: NameNode, sibling: NameNode) -> bool:
    """A derived half the bisection's rule cannot decide, or one resting on a two-step
    measurement that it would flag but not by :data:`STAGED_MARGIN`: measured itself."""
    verdict = bis.decide(derived, sibling)[0]
    return verdict == "unsure" or (verdict == "flag" and derived.coarse and not _far(bis, derived))


def _measure(bis: Bisection, nodes: list[NameNode]) -> None:
    """Measure ``nodes`` along their directions, in two stages (``Measurer.staged``): a node
    that disagrees by far at two steps keeps that (``coarse``), the others get the full estimate."""
    if not nodes:
        return
    blocks = [(n.idx, bis.draws[n.draw].signs[n.idx]) for n in nodes]
    coarse = np.zeros(len(nodes), dtype=bool)  # stays so where the complex step or exact path measured

    def settled(got) -> np.ndarray:
        for j, n in enumerate(nodes):
            n.delta, n.bound, n.claim = float(got.delta[j]), float(got.bound[j]), float(got.claim[j])
        coarse[:] = [_far(bis, n) for n in nodes]
        return coarse

    got = bis.m.staged(blocks, settled)
    for j, n in enumerate(nodes):
        n.delta, n.bound, n.claim = float(got.delta[j]), float(got.bound[j]), float(got.claim[j])
        n.derived, n.measured, n.coarse = False, True, bool(coarse[j])


def _threshold(bis: Bisection, node: Node) -> float:
    """What clearing ``node`` certifies: ``2 beta + gate`` (a derived node: its wide bound)."""
    _, b = bis.residual(node)
    return 2.0 * b + bis.gate(node)


def _examples(bis: Bisection, seg: Segments, names: list[str]) -> None:
    """An entry-wise look at the largest claims of failing names, name after name until one
    shows a MISMATCH (an example of what is wrong)."""
    for name in names:
        lo, hi = seg.span(name)
        claims = np.abs(bis.m.analytic[lo:hi])
        top = np.argsort(-claims, kind="stable")[:EXAMPLE_ENTRIES] + lo
        before = bis.loc_idx.size
        bis.localize([Node(0, -1, np.sort(top))])
        if _found_mismatch(bis, before):
            return


def _found_mismatch(bis: Bisection, since: int) -> bool:
    """Whether an entry localized after the first ``since`` was judged MISMATCH."""
    new = bis.loc_idx[since:]
    for idx, judged in getattr(bis.judge, "parts", ()):  # the screen's EntryJudge keeps what it judged
        inside = np.isin(idx, new)
        if inside.any() and (judged.codes[inside] == Verdict.MISMATCH).any():
            return True
    return False


# -- limited names: a screen of their own ----------------------------------------------------

def _screen_limited(group: Any, limited: list[str], stats: Mapping[str, tuple[bool, float]], loss: Any,
                    params: Mapping[str, np.ndarray], seed: int | None, out: ByName) -> None:
    """Screen the limited names together on their own (see the module docstring)."""
    prep0 = group.prep
    seg = Segments.of(params, limited)
    work = seg.concatenate(params, prep0.x_flat.dtype)
    claim = np.concatenate([prep0.analytic[slice(*group.seg.span(n))] for n in limited])
    f = flat_loss(loss, params, seg, getattr(prep0.target.f, "gradcheck_mp_capable", True))
    prep = prepare_flat(f, work, claim, group.config, f"{len(limited)} limited names", prep0.f0, prep0.unit,
                        prep0.backend.name)
    prep.evaluations = 0  # f0 is the joint screen's (the same point)
    m = group.done.state.measurer
    left = max(1, m.budget - m.evaluations)
    try:
        done = run_screen(prep, budget=left, engine=group.options["engine"], executor=group.options["executor"],
                          draws=group.done.state.draws, blocks=min(SUB_BLOCKS, max(1, seg.size // 16)),
                          complex_step=False, exact=False, adjudicate=group.options["adjudicate"],
                          digits=group.options["digits"], seed=seed, recut=False)
    except BudgetExhausted:
        out.notes.append("no budget left to screen the limited names on their own")
        return
    out.sub = (seg, prep, done)
    out.evaluations += done.state.measurer.evaluations
    worst = max(stats[n][1] for n in limited)
    out.notes.append(f"{len(limited)} names had their limit set by the joint blocks (up to {worst:.3g}x check's "
                     f"tolerance at the median entry): screened again on their own "
                     f"({done.state.measurer.evaluations} evaluations); each entry keeps the lower limit")
