"""Verified, not trusted: the declaration ``independent_axes`` is tested before it is used.

A few seeded evaluations, each compared bit for bit with ``f(x)`` outside the perturbed slices:

1. **single entries** (:data:`SINGLES` of them, in distinct slices): perturb one entry; every
   output entry of every other slice must keep its bits;
2. **partitions**: perturb *every* entry of the slices of a half at once, each by its own
   seeded random multiple (sign and size) of its step; every output entry of the other half must
   keep its bits. The halves are the slices whose number has bit ``k`` set, and their
   complements, for the low :data:`MAX_BITS` bits (then :data:`RANDOM_PAIRS` seeded random halves
   and their complements when there are more slices): any two slices differ in some bit, so for
   up to ``2**MAX_BITS`` slices a leak from any entry of one slice into another shows, whichever
   slices it joins -- a roll, a convolution along the axis, a statistic over it, one entry feeding
   one other slice -- unless the leaked changes cancel exactly (the random multiples make that a
   coincidence). A leak is then bisected down to one perturbed entry to name it.

The perturbation is at most the check's own step (a leak of relative size 1e-16 still changes a
bit, and the probes stay where the differences will go: an ``f`` defined there is defined here).
A leak raises :class:`DependentSlicesError` (the axis, the perturbed entry, the output entry that
moved): a wrong declaration never turns into verdicts; ``f`` raising raises
:class:`~gradcheck.FunctionError` at the first entry perturbed. Before any output is compared, each
probe checks what would otherwise be misread as a leak: an ``f`` that wrote into its input raises
:class:`~gradcheck.InputMutationError`, an output of another shape or dtype than ``f(x)``'s
:class:`~gradcheck.OutputError` (either changes the output everywhere, slices or not). Verification is a test, not a proof
(past ``2**MAX_BITS`` slices, or a leak at other points only): the report says how it was tested.
The probes are points of the evaluation layer (:mod:`gradcheck._evaluate`), which perturbs
``work`` and puts it back; this module owns no restore.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from .._core.arrays import bits_differ, same_bits
from .._core.errors import (
    DependentSlicesError,
    OutputError,
    UnsupportedInputError,
    mutation_error,
)
from .._differences import StepsOf
from .._evaluate import PerPoint, Points, at_x, run_here
from .declare import Axes

#: Single-entry probes; bit partitions (each with its complement); random ones beyond them.
SINGLES = 3
MAX_BITS = 12
RANDOM_PAIRS = 2
#: How an error names a probe's point: ``"+h, verifying independent_axes: 8 entries perturbed together"``.
KIND = "verifying independent_axes"


def verify(axes: Axes, evaluate: Callable[[], object], work: np.ndarray, y0: np.ndarray,
           steps: StepsOf | np.ndarray, seed: int, pristine: np.ndarray | None = None) -> tuple[int, str]:
    """Test the declaration on ``work`` (perturbed in place by the evaluation layer, restored
    bit for bit); ``evaluate()`` returns ``f``'s output at the current ``work``; ``pristine``
    holds ``x``'s bits (a write of ``f`` into ``work`` is caught against it; default: a copy of
    ``work`` made here). Returns the evaluations spent and a note."""
    rng = np.random.default_rng([seed, 0x5A1CE])
    pristine = work.copy() if pristine is None else pristine
    if not same_bits(work, pristine):  # f(x) itself wrote into x
        raise mutation_error(seen=" (seen before verifying independent_axes)")
    probe = _Probe(axes, evaluate, work, pristine, y0)
    flat = work.reshape(-1)
    count = 0
    singles = rng.choice(axes.slices, size=min(SINGLES, axes.slices), replace=False)
    for s in singles:
        entries = _one_entry_per_slice(axes, np.array([s]), rng)
        _leak_of(probe, entries, steps, bisect=False)
        count += 1
    if axes.slices < 2:
        return count, "independent_axes: one slice only, nothing to verify"
    halves = _halves(axes.slices, rng)
    # Each entry's own random multiple of its step (sign and size), the same in every half:
    # steps * uniform * sign, in place (the same draws, the same products, two arrays of N).
    scaled = rng.uniform(0.5, 1.0, size=flat.size)
    for start in range(0, flat.size, 1 << 16):  # steps may be computed where read (StepsOf)
        part = slice(start, start + (1 << 16))
        np.multiply(steps[part], scaled[part], out=scaled[part])
    np.multiply(scaled, rng.choice([-1.0, 1.0], size=flat.size), out=scaled)
    along_x = None if axes.elementwise else _slice_view(axes, work.ndim)
    for make in halves:
        half = make()
        # The entries of the half's slices, as a mask in flat order (no array of each entry's slice).
        mask = half if along_x is None else np.broadcast_to(half.reshape(along_x), work.shape).reshape(-1)
        entries = np.flatnonzero(mask)
        leak = probe.changed_outside(entries, scaled, half)
        # A leak: its entries bisected.
        count += 1 if leak is None else _leak_of(probe, entries, scaled, bisect=True, leak=leak)
    every = "every pair of slices separated" if axes.slices <= 2**MAX_BITS else "the low-bit pairs and random halves"
    note = (f"independent_axes verified: {count} evaluations ({SINGLES} single entries, then every entry of the "
            f"slices of {len(halves)} halves of the {axes.slices} slices, {every}) left every output outside the "
            f"perturbed slices bit-identical")
    return count, note


class _Probe:
    """The probes' evaluations, on the evaluation layer (:func:`~gradcheck._evaluate.run_here`:
    it perturbs ``work`` and restores it in ``finally``, sees a write into a perturbed entry,
    and names ``f``'s exception or refused output at the first entry perturbed, ``"+h,
    verifying independent_axes: 8 entries perturbed together"``). Each point is answered,
    while ``work`` is perturbed, with what could pass for a leak checked first: ``f`` must
    leave every other entry with ``pristine``'s bits (else :class:`InputMutationError`), and
    return ``f(x)``'s shape and dtype (else :class:`OutputError`); then the first output entry
    outside the perturbed slices whose bits changed."""

    def __init__(self, axes: Axes, evaluate: Callable[[], object], work: np.ndarray, pristine: np.ndarray,
                 y0: np.ndarray) -> None:
        self.axes, self.evaluate, self.work, self.y0 = axes, evaluate, work, y0
        self.before = pristine.reshape(-1)
        self.out = None if axes.elementwise else _slice_view(axes, len(y0.shape))  # slices along f(x)'s axes

    def changed_outside(self, entries: np.ndarray, steps: StepsOf | np.ndarray,
                        mine: np.ndarray | None = None) -> tuple[int, ...] | None:
        """The first output entry outside the slices ``mine`` (a mask over the slices; default:
        those of ``entries``) that changed when ``entries`` were moved by their ``steps`` (``x +
        h`` in x's dtype, as the differences round it; NaN and inf stay), or None."""
        values = steps[entries].astype(self.work.dtype, copy=False)
        old = self.work.reshape(-1)[entries]
        with np.errstate(all="ignore"):
            np.add(old, values, out=values)
            np.copyto(values, old, where=~np.isfinite(old))
        del old  # the layer keeps its own (the probes' peak: the halves hold every other entry)
        if mine is None:
            mine = np.zeros(self.axes.slices, dtype=bool)
            mine[self.axes.slice_of(entries)] = True
        points = Points(entries, values, np.array([0, entries.size]), labels=("+h",), kind=KIND)
        leak, wrote = run_here(self.evaluate, self.work, points,
                               slices=PerPoint(partial(self._answer, entries, mine), 2, self.y0.shape))
        if wrote >= 0:
            at = tuple(int(k) for k in np.unravel_index(int(wrote), self.work.shape))
            others = int(np.count_nonzero(bits_differ(values, self.before[entries])))
            raise mutation_error(seen=f" (entry {at} changed while {others} others were perturbed, {KIND})")
        return None if leak < 0 else tuple(int(k) for k in np.unravel_index(int(leak), self.y0.shape))

    def _answer(self, entries: np.ndarray, mine: np.ndarray, y: object) -> tuple[float, float]:
        """(the flat index of the first output entry outside ``mine`` that changed, the flat
        index of an entry other than ``entries`` that ``f`` wrote into), -1 for none."""
        written = bits_differ(self.work.reshape(-1), self.before)
        written[entries] = False
        if written.any():
            return -1.0, float(np.argmax(written))
        y = _same_form(y, self.y0)
        changed = bits_differ(y, self.y0)
        inside = mine if self.out is None else np.broadcast_to(mine.reshape(self.out), changed.shape)
        outside = np.flatnonzero(changed & ~inside.reshape(changed.shape))
        return (float(outside[0]) if outside.size else -1.0), -1.0


def _same_form(y: object, y0: np.ndarray) -> np.ndarray:
    """``y`` as an array of ``f(x)``'s shape and dtype, else :class:`OutputError` (another
    shape or dtype changes the output everywhere, slices or not: not a leak)."""
    y = np.asarray(y)
    if y.shape != y0.shape or y.dtype != y0.dtype:
        raise OutputError(f"{y.dtype} of shape {y.shape}", tail=(
            f", after returning {y0.dtype} of shape {y0.shape} at the unperturbed input; f must return "
            "the same shape and dtype at every point"))
    return y


def _halves(slices: int, rng: np.random.Generator) -> list[Callable[[], np.ndarray]]:
    """Boolean masks over the slices, each made when it is used (the list holds makers): bit
    ``k`` set, and not set, for the low bits; then seeded random halves and their complements
    past :data:`MAX_BITS` bits (drawn now: the seeded stream keeps its order)."""
    bits = int(np.ceil(np.log2(slices)))
    # Bit k of 0, 1, 2, ...: 2**k False then 2**k True, repeated (no array of the slice numbers).
    low = [k for k in range(min(bits, MAX_BITS)) if slices > 1 << k]  # else bit k is never set
    makers: list[Callable[[], np.ndarray]] = []
    for k in low:
        makers += [partial(_bit_mask, k, slices, False), partial(_bit_mask, k, slices, True)]
    for _ in range(RANDOM_PAIRS if bits > MAX_BITS else 0):
        mask = rng.random(slices) < 0.5
        if mask.any() and not mask.all():
            makers += [partial(_given, mask), partial(_given, ~mask)]
    return makers


def _bit_mask(k: int, slices: int, flip: bool) -> np.ndarray:
    """Over the slices: bit ``k`` of the slice number is set (``flip``: is not set)."""
    mask = np.resize(np.repeat([False, True], 1 << k), slices)
    return ~mask if flip else mask


def _given(mask: np.ndarray) -> np.ndarray:
    return mask


def _one_entry_per_slice(axes: Axes, slices: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A seeded input entry (flat index) in each of ``slices``."""
    if axes.elementwise:
        return np.asarray(slices, dtype=np.int64)
    coords = list(np.unravel_index(slices, axes.sizes))
    full = []
    it = iter(coords)
    for d, n in enumerate(axes.x_shape):
        full.append(next(it) if d in axes.axes else rng.integers(0, n, size=slices.size))
    return np.ravel_multi_index(tuple(full), axes.x_shape).astype(np.int64)


def _leak_of(probe: _Probe, entries: np.ndarray, steps: StepsOf | np.ndarray, *, bisect: bool,
             leak: tuple[int, ...] | None = None) -> int:
    """Evaluate with ``entries`` perturbed; raise on a change outside their slices (bisected
    to one entry when ``bisect``). Returns the evaluations spent. ``leak``: that evaluation
    was made already, and found this output entry changed."""
    spent, leak = 1, leak if leak is not None else probe.changed_outside(entries, steps)
    if leak is None:
        return spent
    while bisect and entries.size > 1:
        first = entries[: entries.size // 2]
        found = probe.changed_outside(first, steps)
        spent += 1
        if found is None:
            entries = entries[entries.size // 2:]
            found = probe.changed_outside(entries, steps)
            spent += 1
            if found is None:
                break  # only the two halves together leak: name the group's first entry
        else:
            entries = first
        leak = found
    _require_deterministic(probe)  # a leak is only a leak if f repeats itself at x
    axes, shape = probe.axes, probe.work.shape
    entry = tuple(int(k) for k in np.unravel_index(int(entries[0]), shape))
    how = "one entry perturbed alone" if entries.size == 1 else f"{entries.size} entries perturbed together"
    raise DependentSlicesError(_axis_of(axes, entry, leak), entry, leak, how)


def _require_deterministic(probe: _Probe) -> None:
    """``f`` at the unperturbed input must give ``y0``'s bits again: else the outputs that moved
    are its noise, not a leak between slices (refused, said as such)."""
    with np.errstate(all="ignore"):
        again = _same_form(at_x(probe.evaluate, f"at x again, {KIND}", work=probe.work), probe.y0)
    if bits_differ(again, probe.y0).any():
        raise UnsupportedInputError(
            "f is nondeterministic (f(x) changed between two calls at the same x): independent_axes is "
            "verified by comparing f's outputs bit for bit, which needs a deterministic f; check it "
            "without independent_axes (its report says how much f drifts)")


def _slice_view(axes: Axes, ndim: int) -> tuple[int, ...]:
    """The shape that lays a per-slice array (C order over the declared axes) along an array
    of ``ndim`` axes: the declared axes' sizes, 1 elsewhere (broadcast, it gives each entry
    its slice's value without an array of N)."""
    view = [1] * ndim
    for a, n in zip(axes.axes, axes.sizes):
        view[a] = n
    return tuple(view)


def _axis_of(axes: Axes, entry: tuple[int, ...], leak: tuple[int, ...]) -> int:
    """The declared axis along which ``leak`` left ``entry``'s slice."""
    for a in axes.axes:
        if a < len(leak) and leak[a] != entry[a]:
            return a
    return axes.axes[0]
