"""A whole model in one screen: every parameter's entries screened together.

The screen's cost is set by its blocks and the bisection's depth, not by how the entries are
grouped into names, so ``check_params(..., screen=True)`` screens the concatenation of all
the names (:mod:`.segments`) with the screen's own algorithm (``gradcheck._screen``): random
blocks over every entry of every name, each entry with its own sign and block; a block that
disagrees is halved until entries remain, and the entry found is named ``(name, index)``.
Each name then gets its own report: its verdicts, its detection limit per entry, and a note
on what the joint screen could see there. Names the joint screen cannot serve as well as a
screen of their own would (their limit set by the joint blocks, not by check's tolerance),
and models whose error is spread over whole names (a wrong value passed along the backward),
get a second look name by name (:mod:`.by_name`).

Names are screened together when they share a dtype and a config (one working vector in
that dtype); a model mixing float32 and float64 parameters gets one screen per dtype.
Memory: one working copy of the parameters in their dtype, the claim in float64, the sign
draws (int8) and blocks (int32), the per-draw thresholds and clearances; weights and
floors are computed where read; the reports hold float32 detection limits rounded up
(and check_params' snapshot of a user's numpy dict, one copy in its dtype, which puts it back
if the loss writes into it).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._core.arrays import same_bits
from .._core.config import Config, dtype_name
from .._core.errors import FunctionError, InputMutationError, OutputError, WorkerDiedError, mutation_error
from .._core.inputs import real_scalar
from .._core.verdict import Verdict
from .._evaluate import ChunkFailedError, at_x
from .._pipeline.prepare import unit_in_use
from .._report.report import Report
from .._screen import (
    DEFAULT_DRAWS,
    FlatPrepared,
    Looked,
    Screened,
    Seen,
    looked_in,
    merge_looks,
    prepare_flat,
    run_notes,
    run_screen,
    screened_limits,
    sentence,
    upward32,
)
from .by_name import ByName, second_look
from .segments import Segments, flat_loss

#: Entries per chunk of the per-name statistics.
CHUNK = 1 << 20
#: A name whose median limit is more than this many times check's own floor there has its
#: limit set by the joint blocks (the screen's re-cut rule: ``_screen._api.RECUT_OVER_FLOOR``).
OVER_FLOOR = 2.0


@dataclass
class Whole:
    """A whole model's screen: a report per name, the names that fail along their own
    direction (with the evidence), notes on the run, every call of the loss."""

    reports: dict[str, Report]
    failing: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    evaluations: int = 0
    deterministic: bool = True
    drift: float = 0.0


@dataclass
class Group:
    """Names screened together (one dtype and config): their segment map, the joint screen,
    and the second look name by name."""

    seg: Segments
    config: Config
    prep: FlatPrepared
    done: Screened
    dtype: str
    options: dict[str, Any]               # engine, executor, adjudicate, digits
    by_name: ByName = field(default_factory=ByName)


def screen_whole(loss: Callable[[Any], Any], params: Mapping[str, np.ndarray], claimed: dict[str, np.ndarray],
                 configs: Mapping[str, Config], order: Sequence[str], *, budget: Any, engine: str, executor: Any,
                 adjudicate: Any, digits: int, seed: int | None = None, mp_capable: bool = True) -> Whole:
    """Screen every entry of every name of ``params`` (``loss(params)``, a dict of numpy
    arrays; ``claimed``: float64 claims by name, emptied as they are copied into the screen;
    ``order``: the backward order) together; see the module docstring."""
    started = time.perf_counter()
    out = Whole({})
    options = dict(engine=engine, executor=executor, adjudicate=adjudicate, digits=digits)
    for names in _groups(params, configs):
        group = _screen_group(loss, params, claimed, names, configs[names[0]], budget=budget, options=options,
                              seed=seed, mp_capable=mp_capable)
        notes = _group_notes(group)
        group.by_name = second_look(group, _name_stats(group), loss, params, list(order), seed)
        # the joint measurer counted the name-by-name look too; the limited names' screen has its own
        out.evaluations += group.done.state.measurer.evaluations + _sub_evaluations(group)
        out.deterministic &= group.done.deterministic
        out.drift = max(out.drift, group.done.drift)
        out.failing.update(group.by_name.failing)
        out.reports.update(_reports(group, started))
        out.notes += notes + group.by_name.notes
    return out


def _sub_evaluations(group: Group) -> int:
    sub = group.by_name.sub
    return 0 if sub is None else sub[2].state.measurer.evaluations


def _name_stats(group: Group) -> dict[str, tuple[bool, float]]:
    """Per name: whether some entry is neither cleared nor localized (unresolved), and its
    median stated limit over check's floor there (the screened entries)."""
    out = {}
    prep, state = group.prep, group.done.state
    for name, lo, hi in group.seg.spans():
        screened, limit, _ = screened_limits(prep, state, lo, hi)
        seen = screened.copy()
        seen[looked_in(prep, state, lo, hi).positions] = True
        if not screened.any():
            out[name] = (not seen.all(), 1.0)
            continue
        floor = np.concatenate([upward32(prep.floor[a:min(hi, a + CHUNK)])[screened[a - lo:a - lo + CHUNK]]
                                for a in range(lo, hi, CHUNK)])
        ratio = np.median(limit[screened], overwrite_input=True) / max(float(np.median(floor)), 1e-300)
        out[name] = (not seen.all(), float(ratio))
    return out


def _groups(params: Mapping[str, np.ndarray], configs: Mapping[str, Config]) -> list[list[str]]:
    """Names screened together: the same dtype and config, in the dict's order."""
    keyed: dict[tuple[str, Config], list[str]] = {}
    for n, v in params.items():
        keyed.setdefault((dtype_name(np.asarray(v).dtype), configs[n]), []).append(n)
    return [names for names in keyed.values() if names]


def _screen_group(loss, params, claimed, names: Sequence[str], config: Config, *, budget, options, seed,
                  mp_capable: bool) -> Group:
    seg = Segments.of(params, names)
    dtype = dtype_name(np.asarray(params[names[0]]).dtype)
    work = seg.concatenate(params, dtype)
    claim = seg.concatenate(claimed, np.float64)
    for n in names:  # the per-name claims are copied: let a framework's gradient go (a model's worth)
        claimed.pop(n)
    f = flat_loss(loss, params, seg, mp_capable)
    y0 = real_scalar(at_x(lambda: loss(dict(params))), "loss(params)")
    unit = unit_in_use(config, work, y0)
    label = names[0] if len(names) == 1 else f"{len(names)} names"
    prep = prepare_flat(f, work, claim, config, label, float(y0), unit, getattr(loss, "gradcheck_backend", "numpy"))
    try:
        done = run_screen(prep, budget=budget, draws=DEFAULT_DRAWS, blocks=None,
                          complex_step="auto" if mp_capable else False, exact="auto" if mp_capable else False,
                          seed=seed, recut=False, follow_dense=False, **options)
    except FunctionError as err:
        raise _named(err, seg) from err.__cause__
    except WorkerDiedError as err:  # bounds of the flat vector: named (name, index)
        raise err.at(seg.locate(err.first[0]), seg.locate(err.last[0])) from err.__cause__
    except ChunkFailedError as err:  # entries of the flat vector: named (name, index)
        raise err.at(seg.locate) from err.__cause__
    except InputMutationError:
        raise mutation_error(f"the loss (while {label} were screened)") from None
    _require_untouched(work, params, seg)
    return Group(seg, config, prep, done, dtype, options)


def _named(err: FunctionError, seg: Segments) -> FunctionError:
    """The loss's error at a flat entry, named ``(name, index)``."""
    if err.param is not None or not err.index:
        return err
    name, index = seg.locate(int(err.index[0]))
    cause = err.__cause__ if err.__cause__ is not None else err
    if isinstance(err, OutputError):
        return err.at(index, err.side, name)
    return FunctionError(index, err.side, name, cause)


def _require_untouched(work: np.ndarray, params: Mapping[str, np.ndarray], seg: Segments) -> None:
    """The working vector still holds every parameter bit for bit (the loss wrote nothing)."""
    for name, view in seg.views(work).items():
        if not same_bits(view, np.asarray(params[name])):
            raise mutation_error(f"the loss (params[{name!r}] was written while the model was screened)")


def _reports(group: Group, started: float) -> dict[str, Report]:
    return {name: _name_report(group, name, lo, hi, started) for name, lo, hi in group.seg.spans()}


def _name_report(group: Group, name: str, lo: int, hi: int, started: float) -> Report:
    """One name's report: SCREENED where cleared in every draw (by the joint screen, its own
    direction, or the limited names' screen: the lower limit kept), the entry-wise verdicts of
    its localized entries, UNCHECKED elsewhere; its detection limit (float32, rounded up)."""
    prep, state = group.prep, group.done.state
    shape = group.seg.shapes[group.seg.names.index(name)]
    n = hi - lo
    screened, limit, own = screened_limits(prep, state, lo, hi)
    looks, notes = [looked_in(prep, state, lo, hi)], list[str]()
    sub = group.by_name.sub
    if sub is not None and name in sub[0].names:
        looks.append(_own_screen(sub, name, screened, limit, own, notes))
    looked = merge_looks(looks)
    at = looked.positions
    codes = np.full(n, Verdict.UNCHECKED, dtype=np.uint8)
    codes[screened] = Verdict.SCREENED
    codes[at] = looked.judged.codes
    limit[at] = upward32(looked.limit)
    detection = limit
    summary = sentence(_seen(limit, own, screened, at, prep.analytic[lo:hi]), draws=state.draws,
                       blocks=state.blocks, screened=int(screened.sum()) - int(screened[at].sum()))
    if at.size:  # full arrays only for a name with localized entries
        numeric, noise, refined = np.full(n, np.nan), np.full(n, np.nan), np.zeros(n, dtype=bool)
        numeric[at], noise[at], refined[at] = looked.judged.numeric, looked.judged.noise, looked.judged.refined
        tolerance = detection.astype(np.float64)
        tolerance[at] = looked.tolerance
        second = looked.judged.second_look(shape, at)
    else:
        numeric = noise = np.broadcast_to(np.float64(np.nan), (n,))
        refined, tolerance, second = np.broadcast_to(False, (n,)), detection, {}
    if name in group.by_name.failing:
        notes.append(group.by_name.failing[name])
    notes = [summary] + notes + _localized_note(looked)
    return Report(
        name=name, analytic=prep.analytic[lo:hi].reshape(shape), numeric=numeric.reshape(shape),
        noise=noise.reshape(shape), tolerance=tolerance.reshape(shape), codes=codes.reshape(shape),
        refined=refined.reshape(shape), dtype=group.dtype, engine=f"screen/{state.engine_name}", config=group.config,
        deterministic=group.done.deterministic, drift=group.done.drift, evaluations=state.measurer.evaluations,
        seconds=time.perf_counter() - started, notes=tuple(notes), detection_limit=detection.reshape(shape),
        **second)


def _own_screen(sub, name: str, screened: np.ndarray, limit: np.ndarray, own: np.ndarray, notes: list[str]) -> Looked:
    """Fold the limited names' screen into ``name``'s arrays (in place: the lower limit of the
    two kept per entry); returns its localized entries there."""
    seg, prep, done = sub
    lo, hi = seg.span(name)
    s_screened, s_limit, s_own = screened_limits(prep, done.state, lo, hi)
    before = float(np.median(limit[screened])) if screened.any() else np.inf
    np.minimum(limit, s_limit, out=limit)
    np.minimum(own, s_own, out=own)
    screened |= s_screened
    after = float(np.median(limit[screened])) if screened.any() else np.inf
    notes.append(f"its limit was set by the joint blocks: screened again with the other limited names on their own "
                 f"({done.state.draws} draws of {done.state.blocks} blocks); the limit at the median entry went "
                 f"from {before:.3g} to {after:.3g}")
    return looked_in(prep, done.state, lo, hi)


def _seen(limit: np.ndarray, own: np.ndarray, screened: np.ndarray, at: np.ndarray, analytic: np.ndarray) -> Seen:
    """The numbers of a name's sentence (``_screen.describe``'s, over the entries cleared
    without an entry-wise look), from float32 limits, in chunks: no float64 temporaries of a
    big name's size."""
    keep = screened.copy()
    keep[at] = False
    count, total = int(keep.sum()), keep.size
    if not count:
        return Seen(0, total, 0.0, 0.0, 0.0, None)
    square, rel = 0.0, np.empty(count, np.float32)
    done = 0
    for a in range(0, total, CHUNK):
        part, mask = analytic[a:a + CHUNK], keep[a:a + CHUNK]
        square += float(np.dot(part, part))
        ratio = limit[a:a + CHUNK][mask] / np.maximum(np.abs(part[mask]), np.finfo(float).tiny)
        rel[done:done + ratio.size] = upward32(ratio)
        done += ratio.size
    alone = own[keep]
    alone_med = float(np.median(alone, overwrite_input=True)) if np.isfinite(alone).any() else None
    return Seen(count, total, float(np.sqrt(square / total)), float(np.median(limit[keep], overwrite_input=True)),
                float(np.median(rel, overwrite_input=True)), alone_med)


def _localized_note(looked) -> list[str]:
    if not looked.positions.size:
        return []
    bad = int(np.sum(looked.judged.codes == Verdict.MISMATCH))
    return [f"localized {looked.positions.size} entries of this name by bisection for an entry-wise look "
            f"({bad} MISMATCH)"]


def _group_notes(group: Group) -> list[str]:
    state = group.done.state
    failing = sum(int(np.sum(j.codes == Verdict.MISMATCH)) for _, j in state.judge.parts)
    head = (f"{len(group.seg.names)} names ({group.seg.size} entries, {group.dtype}) screened together: "
            f"{state.draws} sign draws of {state.blocks} blocks over every entry of every name")
    return [head] + group.done.notes + run_notes(state, failing)
