"""f's own round-off, measured: an f that computes in lower precision than its output.

The noise model of a central difference, ``u*(|f(x+h)| + |f(x-h)|)/|denom|``, takes ``u``
from the output's dtype. A function that returns float64 but computes in float32 inside
(``np.sin(x.astype(np.float32)).sum()``) carries round-off ~1e8 times larger: a correct
claim then looks like a MISMATCH, and only a measured tolerance (too wide to PASS) keeps
a wrong one from passing. Two looks, both only ever raising the ``u`` used:

1. :func:`representable` (free): when every value f returned is exactly a float32 (or
   float16/bfloat16) number, f rounds its result to that format whatever dtype it hands
   back (a float64 result of float64 arithmetic is a float32 number with probability
   2**-29). That format's ``u`` is used. This also covers an f whose float32 result is so
   coarse that it does not change at all across the step, where differences of equal
   values would measure no round-off at all.
2. :func:`probe` (``6 * PROBES`` evaluations, only when the first pass has a MISMATCH): a
   seeded choice of up to :data:`PROBES` MISMATCH entries, each differenced as

       K(s) = f(x+2s) + f(x-2s) - 6 (f(x+s) + f(x-s)) + 8 (f(x+s/2) + f(x-s/2)) - 6 f(x)

   which is zero for every polynomial of degree 3 and for ``|t - x|`` (an entry sitting on
   a kink, where a plain fourth difference grows like ``s``), leaving ``(21/24) f4 s**4``
   (``f4`` the fourth derivative: below 1e-20 of f at the float64 step) plus round-off:
   seven evaluations with standard deviation ``sigma`` give ``sqrt(238) sigma``. It is
   taken at ``s = h`` and ``s = h/2`` (f(x±h) and f(x) are known; the nodes ±h/4, ±h/2 and
   ±2h cost 6 evaluations). Round-off is the same at both; truncation shrinks 16-fold from
   h to h/2, so when ``|K(h)|`` is not within :data:`TRUNCATION_RATIO` of ``|K(h/2)|`` (an f
   that oscillates at the step's scale) the measurement is truncation, not round-off, and
   is not used. The measured relative round-off ``sigma/|f|`` (the median over the probes,
   as a Gaussian scale: ``median|K(h/2)| / 0.6745 / sqrt(238) / |f|``, rounded up to a
   power of two) replaces ``u`` when it is more than :data:`FAR_ABOVE` times ``u``. ``K`` is
   THE fourth difference of the round-off model (:func:`gradcheck._differences.fourth_difference`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._classify.kernel import classify  # the fused kernel from 1e5 entries, numpy below
from .._classify.rule import rule_of
from .._core.config import UNIT_ROUNDOFF
from .._core.formats import bits_to_float64, round_to_format
from .._core.judged import Judged
from .._core.verdict import Cause, Verdict
from .._differences import fourth_difference, slope_and_noise
from .._differences.noise import GAUSS_MEDIAN
from .second_look import PerEntry, Recorded, base_at, finite_anywhere, second_look
from .study import step_study

#: Entries probed (a seeded choice among the first pass's MISMATCH entries).
PROBES = 8
#: Measured round-off this many times the output dtype's model: f computes in lower precision.
FAR_ABOVE = 100.0
#: Measured round-off this many times the model's (but not FAR_ABOVE): f cancels large
#: intermediate values (a sum of many terms much larger than the result). A MISMATCH must
#: then hold under the measured round-off too, else it is UNCHECKED (the referee settles it
#: when it runs; :func:`demote_unproven`). Without it a correct claim at a tight rtol (1e-12)
#: was confirmed MISMATCH by a step study whose bounds came from the model.
ABOVE = 2.0
#: |K(h)| / |K(h/2)| above this (median over probes) is truncation (16 for pure truncation),
#: not round-off (1 on average): the measurement is not used.
TRUNCATION_RATIO = 4.0
#: A measured relative round-off above this (16 times bfloat16's unit round-off, 6% of |f|) is no
#: format's round-off: steps that span periods of an oscillating f (sin at |x| = 1e8, the step
#: 600) give fourth differences of the size of f at every step, growth ~1. Not used.
PLAUSIBLE = 16.0 * 2.0**-8
#: One part of the values tested: flat float64 values, or a per-slice lookup (:class:`PerEntry`).
Part = np.ndarray | PerEntry
#: Fewest finite values from which representability is taken as evidence.
MIN_VALUES = 8
_LOWER = ("float32", "float16", "bfloat16")


def representable(values, unit: float) -> str | None:
    """The coarsest format (float32, float16, bfloat16) with a unit round-off above ``unit``
    that holds every finite value exactly; None if there is none, if there are fewer than
    :data:`MIN_VALUES` finite values, or if they are all integers below 2**24 (every one of
    those is a float32 number, so their being float32 says nothing about f's arithmetic;
    larger integers are float32 numbers only as multiples of float32's spacing).
    ``values``: an array, or a sequence of arrays (read in chunks, never concatenated)."""
    parts = _parts(values)
    if _finite_count(parts) < MIN_VALUES or _every(parts, lambda c: (c == np.round(c)) & (np.abs(c) < 2.0**24)):
        return None
    found = None
    # float16 and bfloat16 numbers are float32 numbers: when float32 fails, both fail too.
    for name in _coarser(unit):
        if _holds(parts, name):
            found = name
        elif name == "float32":
            break
    return found


def _coarser(unit: float) -> list[str]:
    """The lower formats whose unit round-off is above ``unit``, finest first."""
    return [n for n in sorted(_LOWER, key=lambda n: UNIT_ROUNDOFF[n]) if UNIT_ROUNDOFF[n] > unit]


def _holds(parts: list[Part], name: str) -> bool:
    """Is every finite value of ``parts`` a ``name`` number?"""
    # decoded to float64 without the format's dtype: no ml_dtypes import for bfloat16 when
    # no low-precision format is in play (the watch runs in every float64 check)
    return _every(parts, lambda c: bits_to_float64(round_to_format(c, name), name) == c)


class LowerFormats:
    """The lower formats that could still hold every value fed so far, kept as values come
    (:meth:`feed`): when none is left, :func:`representable` of those values and any more is
    None, whatever they are, so :func:`recheck_precision` has nothing to re-study and the
    step study's differences need not be kept for it (``Recorded.watch_from_now``: with
    most entries suspects, those are ~30 arrays of N).

    >>> watch = LowerFormats(1.1e-16, [np.array([0.5, 0.25])])
    >>> watch.possible, watch.feed(np.array([0.1]))
    (True, False)
    """

    def __init__(self, unit: float, values) -> None:
        self.unit, self.left = unit, _coarser(unit)
        self.feed(values)

    @property
    def possible(self) -> bool:
        return bool(self.left)

    def feed(self, values) -> bool:
        """Take ``values`` (an array or a sequence of parts, as :func:`representable`)
        into account; True while some lower format holds every value fed."""
        if self.left:
            parts = _parts(values)
            left = []
            for name in self.left:
                if _holds(parts, name):
                    left.append(name)
                elif name == "float32":  # float16 and bfloat16 numbers are float32 numbers
                    left = []
                    break
            self.left = left
        return self.possible


def watch_lower_formats(record, diffs, base_value, unit: float) -> None:
    """Before the second look: ``record`` (a :class:`Recorded`) keeps the differences it takes
    only while :func:`recheck_precision` (with the same ``unit``) may re-study them."""
    if isinstance(record, Recorded):
        record.watch_from_now(LowerFormats(unit, [diffs[0], diffs[1], _base_part(_nan_if_none(base_value))]))


def _nan_if_none(base_value):
    return np.nan if base_value is None else base_value


#: Values tested per step (the first that fails ends the test: memory and time stay small).
_CHUNK = 1 << 14  # the float32 test makes ~a dozen temporaries of a chunk


def _parts(values) -> list[Part]:
    seq = values if isinstance(values, (list, tuple)) else [values]
    return [p if isinstance(p, PerEntry) else np.asarray(p, dtype=np.float64).reshape(-1) for p in seq]


def _base_part(base_value) -> Part:
    """f at x as one part of the values tested: a :class:`PerEntry` as it is (its values,
    each standing for ``per_slice`` entries), else flat."""
    return base_value if isinstance(base_value, PerEntry) else np.ravel(base_value)


def _chunks(parts: list[Part]):
    """The finite values of ``parts``, a chunk at a time."""
    for p in parts:
        p = np.asarray(p.values, dtype=np.float64).reshape(-1) if isinstance(p, PerEntry) else p
        for i in range(0, p.size, _CHUNK):
            c = p[i:i + _CHUNK]
            yield c[np.isfinite(c)]


def _finite_count(parts: list[Part]) -> int:
    """The finite values in ``parts`` (a :class:`PerEntry`'s count once per entry)."""
    return sum(int(c.size) * (p.per_slice if isinstance(p, PerEntry) else 1) for p in parts for c in _chunks([p]))


def _every(parts: list[Part], test) -> bool:
    """``test(chunk).all()`` for every chunk of finite values, stopping at the first that fails."""
    with np.errstate(all="ignore"):
        return all(bool(test(c).all()) for c in _chunks(parts))


@dataclass(frozen=True)
class RoundOff:
    """What the probe found: the measured relative round-off of f (``measured``), the unit
    round-off to use from now on (``unit``: the model's, or the measured one rounded up)."""

    unit: float
    model: float
    measured: float
    probes: int
    evaluations: int
    noise_like: bool = True

    @property
    def lower_precision(self) -> bool:
        return self.unit > self.model

    @property
    def cancelling(self) -> bool:
        """Round-off measured above the model but not far above: f cancels large terms."""
        return not self.lower_precision and self.noise_like and self.measured > ABOVE * self.model

    def note(self) -> str:
        near = min(UNIT_ROUNDOFF, key=lambda name: abs(np.log2(UNIT_ROUNDOFF[name] / self.measured)))
        model_name = min(UNIT_ROUNDOFF, key=lambda name: abs(np.log2(UNIT_ROUNDOFF[name] / self.model)))
        return (f"f's measured round-off is {self.measured:.2g}*|f| (about {near}'s), far above "
                f"{model_name}'s {self.model:.2g}: f computes in lower precision than its {model_name} output "
                f"suggests (or cancels large intermediate values); the measured round-off, rounded up to "
                f"{self.unit:.2g}, is used as its noise ({self.evaluations} evaluations on {self.probes} "
                f"entries measured it)")


def probe(differencer, suspects: np.ndarray, steps: np.ndarray, first, base_value: float,
          unit: float, seed: int) -> RoundOff | None:
    """Measure f's round-off on up to :data:`PROBES` of ``suspects`` (positions into the
    aligned arrays ``steps`` and ``first = (f_plus, f_minus, denom)``; ``base_value`` is f(x),
    a scalar or one per entry). None when nothing can be measured (f(x) not finite, fewer
    than 3 usable probes)."""
    if not suspects.size or not finite_anywhere(base_value):
        return None
    rng = np.random.default_rng(seed)
    pick = np.sort(rng.choice(suspects, size=min(PROBES, suspects.size), replace=False))
    f0 = base_at(base_value, pick)  # a scalar, or one per entry
    h = steps[pick]
    at = {1.0: (first[0][pick], first[1][pick])}
    for factor in (0.25, 0.5, 2.0):
        fp, fm, _ = differencer(pick, h * factor)
        at[factor] = (fp, fm)
    pair = lambda t: at[t][0] + at[t][1]  # noqa: E731  f(x+th) + f(x-th)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        coarse = fourth_difference(pair(2.0), pair(1.0), pair(0.5), f0)   # K(h)
        fine = fourth_difference(pair(1.0), pair(0.5), pair(0.25), f0)    # K(h/2)
        size = np.max(np.abs([*at[0.25], *at[0.5], *at[1.0], *at[2.0], np.broadcast_to(f0, (pick.size,))]), axis=0)
        relative = fine / np.sqrt(238.0) / size
    usable = np.isfinite(relative) & np.isfinite(coarse) & (size > 0)
    evaluations = 6 * int(pick.size)
    if usable.sum() < min(3, pick.size):
        return None
    measured = float(np.median(relative[usable])) / GAUSS_MEDIAN
    with np.errstate(divide="ignore", invalid="ignore"):
        growth = float(np.float64(np.median(coarse[usable])) / np.median(fine[usable]))
    noise_like = not growth > TRUNCATION_RATIO  # NaN (0/0: no round-off at all) counts as noise
    noise_like &= not measured > PLAUSIBLE
    if noise_like and measured > FAR_ABOVE * unit:
        return RoundOff(float(2.0 ** np.ceil(np.log2(measured))), unit, measured, int(pick.size), evaluations)
    return RoundOff(unit, unit, measured, int(pick.size), evaluations, noise_like)


def probe_roundoff(judged: Judged, sub, analytic, diffs, steps, base_value, unit,
                   cfg) -> tuple[float, float | None]:
    """f's round-off, looked at twice (:func:`representable`, :func:`probe`): are all its values float32 (or 16-bit)
    numbers? (free) And, when the first pass finds a MISMATCH, what does the probe
    measure? When either is far above the output dtype's unit round-off, every entry is
    re-judged with it. Returns the unit round-off to use from here on, and the measured one
    when it is above the model but not far above (f cancels large terms; None otherwise),
    for :func:`demote_unproven`."""
    fp, fm, _ = diffs
    model = unit
    values = [fp, fm, _base_part(base_value)]  # never concatenated: N-sized parts
    fmt = representable(values, unit)
    if fmt is not None:
        _note_format(judged, fmt, values, unit)
        unit = UNIT_ROUNDOFF[fmt]
    suspects = np.flatnonzero((judged.codes == Verdict.MISMATCH) & np.isfinite(fp) & np.isfinite(fm))
    if fmt is not None:
        suspects = np.flatnonzero((_reclassify(judged, analytic, diffs, unit, cfg) == Verdict.MISMATCH)
                                  & np.isfinite(fp) & np.isfinite(fm))
    found = probe(sub, suspects, steps, diffs, base_value, unit, cfg.seed) if suspects.size else None
    if found is not None and found.lower_precision:
        unit = found.unit
        _reclassify(judged, analytic, diffs, unit, cfg)
        judged.notes.append(found.note())
    if unit != model and judged.model_unit is None:
        judged.model_unit = model
    return unit, (found.measured if found is not None and found.cancelling else None)


def demote_unproven(judged: Judged, record, analytic, diffs, steps, base_value, measured: float, cfg) -> None:
    """Every MISMATCH judged again with f's measured round-off ``measured`` (the probe's, above
    the model's: f cancels large intermediate values): one that does not hold under it is not
    proven, and is UNCHECKED (the referee settles it when it runs). The studied entries are
    studied again from the differences already recorded (no new evaluations)."""
    codes = judged.codes
    mismatch = np.flatnonzero(codes == Verdict.MISMATCH)
    if not mismatch.size:
        return
    studied = mismatch[judged.refined[mismatch]]
    first = mismatch[~judged.refined[mismatch]]
    demoted = 0
    if studied.size:
        study = step_study(record, studied, steps[studied], analytic[studied], tuple(d[studied] for d in diffs),
                           base_value=base_at(base_value, studied), unit_roundoff=measured, measured=None,
                           **rule_of(cfg))
        loose = study.codes != Verdict.MISMATCH
        at = studied[loose]
        codes[at] = Verdict.UNCHECKED
        judged.numeric[at] = study.numeric[loose]
        judged.noise[at] = study.bound[loose] / cfg.noise_factor if cfg.noise_factor else study.bound[loose]
        demoted += int(loose.sum())
    if first.size:
        fp, fm, denom = (np.asarray(d[first], dtype=np.float64) for d in diffs)
        numeric, noise = slope_and_noise(fp, fm, denom, measured)
        loose = classify(analytic[first], numeric, noise, **rule_of(cfg)) != Verdict.MISMATCH
        codes[first[loose]] = Verdict.UNCHECKED
        judged.noise[first[loose]] = noise[loose]
        demoted += int(loose.sum())
    if demoted:
        judged.notes.append(
            f"f's measured round-off is {measured:.2g}*|f| (above the model's: f cancels large intermediate "
            f"values); {demoted} MISMATCH that did not hold under it are UNCHECKED, not proven")


def _note_format(judged: Judged, fmt: str, values, unit: float) -> None:
    judged.notes.append(
        f"every value f returned ({_finite_count(_parts(values))} evaluations) is a {fmt} number: f computes "
        f"in {fmt} whatever dtype it returns; {fmt}'s round-off ({UNIT_ROUNDOFF[fmt]:.2g}) is used as its noise")
    if judged.model_unit is None:
        judged.model_unit = unit


def _reclassify(judged: Judged, analytic, diffs, unit, cfg) -> np.ndarray:
    """Every entry's first-pass estimate and verdict again, with unit round-off ``unit``."""
    fp, fm, denom = diffs
    slope_and_noise(fp, fm, denom, unit, out=(judged.numeric, judged.noise))  # in place: no arrays of N
    judged.codes[:] = classify(analytic, judged.numeric, judged.noise, **rule_of(cfg))
    return judged.codes


def recheck_precision(judged: Judged, record, analytic, diffs, steps, base_value, unit, cfg) -> float:
    """The step study evaluated f at larger steps: if all of f's values, those included,
    are float32 (or 16-bit) numbers (an f too coarse to change across the first step looks
    exact there), judge every entry again with that format's round-off; the evaluations
    already made are reused. Returns the unit round-off in use."""
    fp, fm, _ = diffs
    watch = record.watch if isinstance(record, Recorded) else None
    if watch is not None:
        if watch.unit != unit:
            raise AssertionError("the record was watched for another unit round-off")
        if not watch.possible:  # some value is in no lower format: representable() is None
            return unit
    values = [fp, fm, _base_part(_nan_if_none(base_value)), *record.values()]
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
    second_look(judged, record, analytic, diffs, steps, base_value, unit, cfg)
    return unit
