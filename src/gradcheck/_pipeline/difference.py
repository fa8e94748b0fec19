"""Stage 2 of ``check``, difference: choose the engine, open the checkpoint, and run the
first central difference of every entry (with a progress line when asked or long)."""
from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _axes
from .._adjudicate.referee import referee_may_run
from .._differences import CentralDifferences, DenominatorsOf, StepsOf, steps_for
from .._evaluate import Target, choose, kind_of, time_call, usable_cores
from .._runtime.checkpoint import open_checkpoint
from .._runtime.progress import Progress, differences_with_progress, isatty, screen_hint
from .cost import CostPlan, announce, plan_cost
from .options import CheckOptions
from .prepare import Subject

Diffs = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass
class Differenced:
    """The first pass: ``diffs = (f(x+h), f(x-h), 2h)`` per entry, and what ran them."""

    engine: Any                  # what ran the differences (its name and notes go in the report)
    engine_reason: str           # why ``engine="auto"`` picked it
    differencer: Callable[..., Diffs]  # more differences on demand (the step study's)
    saved: Any                   # the open checkpoint, or None
    steps: Any                   # an array, or StepsOf (computed where read)
    diffs: Diffs
    hint: str | None             # a long pass: say that screen exists
    evaluations: int             # f(x), the engine choice's timing calls and the 2N of the first pass
    coloured: Any = None         # independent_axes: the coloured differencer (per-entry base values, its referee)

    def release(self) -> None:
        """Drop the first pass's differences and steps (four arrays of N) once the verdicts are
        made: the report is assembled from the verdicts alone."""
        self.diffs, self.steps = None, None  # type: ignore[assignment]


def difference(subject: Subject, opts: CheckOptions) -> Differenced:
    """Every entry of ``subject.work`` differenced once, on the chosen engine."""
    target = Target(f=subject.f, work=subject.work, evaluate=subject.evaluate, backend=subject.backend,
                    cotangent=subject.cotangent, vectorized=subject.vectorized, executor=opts.executor)
    choice = choose(opts.engine, target)
    eng, reason = CentralDifferences(choice.runner, subject.work), choice.reason
    differencer: Callable[..., Diffs] = eng.differences
    saved = None
    if opts.checkpoint is not None:
        saved = open_checkpoint(opts.checkpoint, eng, x=subject.pristine, config=subject.config,
                                cotangent=subject.cotangent, f=subject.f, backend=subject.backend,
                                vectorized=subject.vectorized)
        differencer = saved.differences
    size = subject.work.size
    steps = steps_for(subject.work.reshape(-1), subject.config.step)
    header, timed = _say_plan(subject, steps, choice, eng, opts)
    began = time.perf_counter()
    diffs = first_differences(differencer, np.arange(size), steps, progress=opts.progress, label=subject.label,
                              header=header)
    hint = screen_hint(size, time.perf_counter() - began)
    return Differenced(engine=eng, engine_reason=reason, differencer=differencer, saved=saved, steps=steps,
                       diffs=diffs, hint=hint, evaluations=1 + choice.evaluations + timed + 2 * size)


def first_differences(differencer: Callable[..., Diffs], flat_idx: np.ndarray, steps: np.ndarray, *,
                      progress: bool | None = False, label: str = "", header: str | None = None) -> Diffs:
    """``differencer(flat_idx, steps)``, drawing a progress line when ``progress`` says so
    (``None``: on a terminal, for a long pass), under ``header`` (the cost plan)."""
    with Progress(flat_idx.size, enabled=progress, label=label, header=header) as bar:
        return differences_with_progress(differencer, flat_idx, steps, bar)


def _say_plan(subject: Subject, steps: np.ndarray, choice: Any, eng: Any, opts: CheckOptions
              ) -> tuple[str | None, int]:
    """The cost plan (:mod:`gradcheck._pipeline.cost`), said before the first pass: returned as
    the progress line's header when that line is drawn on a terminal (None: logged), with the
    calls of f it made (one, to time an @njit f again when nothing else timed it)."""
    seconds = choice.call_seconds if choice.call_seconds is not None else subject.call_seconds
    spent = subject.probes + 1 + choice.evaluations
    referee = subject.adjudicate is not False and referee_may_run(subject.backend, subject.f)[0]

    def plan(seconds: float | None) -> CostPlan:
        return plan_cost(subject.analytic, steps, float(subject.f0), subject.unit, subject.config, spent=spent,
                         call_seconds=seconds, parallel=_parallelism(eng.name),
                         output_ndim=0 if subject.cotangent is None else 1, referee=referee)
    planned, timed = plan(seconds), 0
    if choice.call_seconds is None and kind_of(subject.f) == "njit":
        # f(x) was an @njit f's first call (its compilation) and the engine choice timed nothing:
        # time one more (for every such f, so that the count does not depend on numba's cache).
        timed = 1
        planned = plan(min(float(seconds or 0.0), time_call(subject.evaluate)))
    on_terminal = opts.progress is True or (opts.progress is None and isatty(sys.stderr))
    return announce(planned, subject.label, on_terminal=on_terminal), timed


def _parallelism(engine: str) -> int:
    """Evaluations the engine runs at once: numba's threads (compiled), the cores (processes)."""
    if engine == "compiled" and "numba" in sys.modules:
        return int(sys.modules["numba"].get_num_threads())
    return usable_cores() if engine == "processes" else 1


def coloured_difference(subject: Subject, opts: CheckOptions) -> Differenced:
    """The first pass with ``independent_axes``: the declaration verified, then one entry of
    every slice per evaluation (:mod:`gradcheck._axes`)."""
    f, be, work = subject.f, subject.backend, subject.work
    if subject.lowp.needs_estimates:
        # The float32 path's numeric side is a Richardson extrapolation across three steps;
        # the coloured pass makes plain central differences at the large float32 step, whose
        # truncation error would be judged as a MISMATCH.
        raise ValueError(
            "independent_axes does not support (yet) an f that computes in float32 whatever it is "
            "given: its check needs Richardson estimates the coloured pass does not make. Check it "
            "without independent_axes, or make f precision-generic (float64 in, float64 out)")
    # Each entry's step computed where it is read (the same bits): no array of N kept for the check.
    steps = StepsOf(work.reshape(-1), subject.config.step)
    assert subject.y0 is not None, "f(x) is released only after the difference stage"
    coloured = _axes.colour_plan(
        opts.independent_axes, evaluate=lambda b: be.evaluate(f, work if b is None else b), work=work,
        y0=subject.y0, cotangent=subject.cotangent, steps=steps, seed=subject.config.seed,
        vectorized=subject.vectorized, engine=opts.engine, lowp=subject.dtype in ("float16", "bfloat16"),
        executor=opts.executor, f=f, backend=be, pristine=subject.pristine)
    subject.release_output()  # verified and reduced per slice: f(x) must not stay through the pass
    differencer, saved = coloured.differences, None
    if opts.checkpoint is None:
        # Every entry in flat order, round by round, without index arrays of N (Coloured.first_pass).
        with Progress(work.size, enabled=opts.progress, label=subject.label) as bar:
            f_plus, f_minus, _ = coloured.first_pass(steps, bar.update if bar.active else None, denominators=False)
        # The realized denominators, computed where judge reads them (the same bits): no array of N.
        diffs: Any = (f_plus, f_minus, DenominatorsOf(work.reshape(-1), steps))
    else:
        # Recorded under the declaration (each entry's value is its slice's reduction), in
        # chunks of whole rounds: the first pass asks for the entries round by round.
        saved = open_checkpoint(opts.checkpoint, _Declared(coloured), x=subject.pristine, config=subject.config,
                                cotangent=subject.cotangent, f=f, backend=be, vectorized=subject.vectorized)
        differencer, order = saved.differences, coloured.round_order()
        got = first_differences(differencer, order, steps[order], progress=opts.progress, label=subject.label)
        diffs = _unpermuted(got, order)
    return Differenced(engine=coloured, engine_reason=coloured.reason, differencer=differencer,
                       saved=saved, steps=steps, diffs=diffs, hint=None, evaluations=1 + coloured.take(),
                       coloured=coloured)


class _Declared:
    """The coloured differencer as the checkpoint sees it: its arithmetic is the declaration's
    (the same on every engine), never a plain check's."""

    def __init__(self, coloured: Any) -> None:
        axes = coloured.axes
        self.name = f"coloured, independent_axes={'all' if axes.elementwise else axes.axes}"
        self.differences = coloured.differences


def _unpermuted(diffs: Diffs, order: np.ndarray) -> Diffs:
    """Differences asked for in ``order``, put back in flat index order."""
    out = tuple(np.empty_like(d) for d in diffs)
    for o, d in zip(out, diffs):
        o[order] = d
    return out  # type: ignore[return-value]
