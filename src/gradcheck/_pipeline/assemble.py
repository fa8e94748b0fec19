"""Stage 5 of ``check``, assemble: the :class:`~gradcheck.Report` from the verdicts.

:func:`assemble_report` is the one place a Report of an entry-by-entry check is built
(``check``, and each name of ``check_params``): tolerances, the notes in their order, the
second-look fields. :func:`assemble` adds what only ``check`` has: its notes, the
checkpoint's end, and the autodiff contract's verdict.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._adjudicate.notes import adjudication_notes, unchecked_notes
from .._adjudicate.referee import referee_may_run
from .._classify.kernel import tolerance  # the fused kernel from 1e5 entries
from .._core.config import Config
from .._core.errors import GradientAssertionError
from .._core.judged import Judged
from .._core.tolerance import Tolerance
from .._core.verdict import Cause, Verdict
from .._lowp.plan import ORDINARY, OrdinaryPlan
from .._refine.budget import budget_note
from .._report.report import Report
from .difference import Differenced
from .options import CheckOptions
from .prepare import Subject
from .sanity import Sanity


def assemble(subject: Subject, run: Differenced, sanity: Sanity, judged: Judged, cfg: Config,
             opts: CheckOptions, started: float) -> Report:
    """``check``'s Report; raises :class:`GradientAssertionError` (the report attached) when
    the backend's autodiff contract is broken."""
    head = [run.engine_reason] if opts.engine == "auto" else []
    head += [*subject.audit_notes, *(f"contract violation: {v}" for v in subject.violations)]
    if not np.isfinite(subject.f0):
        head.append("f is not finite at x: no entry can be checked")
    tail = list(getattr(run.engine, "notes", ()))  # e.g. the compiled engine's compile time
    why_not = referee_may_run(subject.backend, subject.f)[1]
    if why_not is not None and subject.adjudicate is True:
        tail.append(f"no exact derivatives (not adjudicable): {why_not}")
    if not sanity.deterministic:
        tail.append(f"f is nondeterministic: f(x) gave {subject.f0!r} then {sanity.f1!r}; "
                    "its drift is counted as noise")
    if run.hint:
        tail.append(run.hint)
    report = assemble_report(
        name=subject.label, analytic=subject.analytic, judged=judged, config=cfg, dtype=subject.dtype,
        engine=run.engine.name, evaluations=subject.probes + run.evaluations + sanity.evaluations,
        started=started, base_value=subject.f0, adjudicate=subject.adjudicate, output_dtype=subject.output_dtype,
        head=head, tail=tail, lowp=subject.lowp, deterministic=sanity.deterministic, drift=sanity.drift)
    if run.saved is not None:
        run.saved.finish()
    if subject.violations:
        # Not a per-entry verdict, so it cannot live in the counts: fail loudly, report attached.
        raise GradientAssertionError(
            f"the {subject.backend.name} gradient of {subject.label} breaks the autodiff contract:\n"
            + "".join(f"  - {v}\n" for v in subject.violations) + str(report), report,
        )
    return report


def assemble_report(
    *, name: str, analytic: np.ndarray, judged: Judged, config: Config, dtype: str, engine: str,
    evaluations: int, started: float, base_value: float, adjudicate: Any, output_dtype: str,
    head: Sequence[str] = (), tail: Sequence[str] = (), positions: np.ndarray | None = None,
    lowp: OrdinaryPlan = ORDINARY, deterministic: bool = True, drift: float = 0.0,
) -> Report:
    """The Report of the entries ``positions`` (flat indices; None: all) of ``analytic``,
    judged in ``judged`` (the others SKIPPED).

    ``evaluations`` counts those before judging (the judge's are added); the notes are
    ``head``, the judge's, the referee's, ``tail``, the low-precision plan's, and why
    entries stayed UNCHECKED."""
    shape = analytic.shape
    a = analytic.reshape(-1)
    numeric, noise, codes, refined = judged.numeric, judged.noise, judged.codes, judged.refined
    if positions is not None:
        numeric, noise = _spread(numeric, positions, a.size, np.nan), _spread(noise, positions, a.size, np.nan)
        codes = _spread(codes, positions, a.size, Verdict.SKIPPED, np.uint8)
        refined = _spread(refined, positions, a.size, False, bool)
    tol = tolerance(a, numeric, noise, **Tolerance.of(config).keywords())
    codes, tol, plan_notes = lowp.final(a, judged, config, codes, tol)
    notes = [*head, *judged.notes, *adjudication_notes(judged.adjudication, adjudicate, shape), *tail, *plan_notes]
    f_scale = abs(base_value) if np.isfinite(base_value) else None
    notes += budget_note(judged.budget)
    notes += unchecked_notes(a, numeric, tol, _without_budget(codes, judged, positions), config.resolution, f_scale,
                             atol=config.atol, floor_name=lowp.floor_name)
    return Report(
        name=name, analytic=analytic, numeric=numeric.reshape(shape), noise=noise.reshape(shape),
        tolerance=tol.reshape(shape), codes=codes.reshape(shape), refined=refined.reshape(shape),
        dtype=dtype, engine=engine, config=config, deterministic=deterministic, drift=drift,
        evaluations=evaluations + judged.evaluations, seconds=time.perf_counter() - started,
        notes=tuple(notes), output_dtype=output_dtype, **judged.second_look(shape, positions),
    )


def _without_budget(codes: np.ndarray, judged: Judged, positions: np.ndarray | None) -> np.ndarray:
    """``codes`` with the entries the second look's budget left UNCHECKED set aside (their
    own note says why: :func:`budget_note`), for the notes on the other UNCHECKED entries."""
    if not judged.budget or not judged.budget.get("unafforded"):
        return codes
    unserved = np.flatnonzero(judged.causes == Cause.BUDGET)
    out = codes.reshape(-1).copy()
    out[unserved if positions is None else np.asarray(positions)[unserved]] = Verdict.SKIPPED
    return out


def _spread(values: np.ndarray, positions: np.ndarray, size: int, fill: Any, dtype: Any = np.float64) -> np.ndarray:
    full = np.full(size, fill, dtype=dtype)
    full[positions] = values
    return full
