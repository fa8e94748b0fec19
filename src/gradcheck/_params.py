"""``check_params``: every entry of every named parameter of a model, with a diagnosis."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ._judge import adjudication_notes, judge_entries
from ._referee import Referee
from ._classify import tolerance
from ._config import Config
from ._diagnosis import Diagnosis, diagnose
from ._differences import central_differences, steps_for
from ._errors import FunctionError, GradientAssertionError
from ._inputs import as_gradient, float_dtype_name, require_real_output, unit_roundoff_of
from ._report import Report
from ._verdict import Verdict


@dataclass(frozen=True, eq=False)
class ParamsReport:
    """One :class:`Report` per parameter name, a table of all names, and a diagnosis
    that reads the names in backward order."""

    reports: dict[str, Report]
    order: tuple[str, ...]          # backward order used by the diagnosis
    diagnosis: Diagnosis
    deterministic: bool = True
    drift: float = 0.0
    seconds: float = 0.0
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def passed(self) -> bool:
        return self.deterministic and all(r.passed for r in self.reports.values())

    @property
    def failing(self) -> list[str]:
        """Names with a MISMATCH or NONFINITE entry, in backward order."""
        return [n for n in self.order if not self.reports[n].passed]

    @property
    def worst(self) -> dict[str, float]:
        """Per name, the largest relative error over entries that were judged against a
        value above the noise (PASS or MISMATCH): the seed's ``worst`` dict, minus the
        meaningless ratios of two round-off values."""
        out = {}
        for n, r in self.reports.items():
            judged = np.isin(r.codes, [int(Verdict.PASS), int(Verdict.MISMATCH)])
            out[n] = float(r.rel_error[judged].max()) if judged.any() else 0.0
        return out

    def __getitem__(self, name: str) -> Report:
        return self.reports[name]

    def table(self) -> str:
        screened = any(r.counts[Verdict.SCREENED] for r in self.reports.values())  # screen=True
        extra = f" {'SCREENED':>9}" if screened else ""
        head = (f"  {'name':<16} {'shape':<12} {'status':<6} {'PASS':>6} {'MISMATCH':>8} {'UNCHECKED':>9}"
                f"{extra} {'other':>6} {'worst rel':>10}")
        rows = [head]
        worst = self.worst
        for n in self.order:
            r = self.reports[n]
            c = r.counts
            other = c[Verdict.NONFINITE] + c[Verdict.KINK] + c[Verdict.SKIPPED]
            status = "ok" if r.passed else "FAIL"
            cell = f" {c[Verdict.SCREENED]:>9}" if screened else ""
            rows.append(
                f"  {n:<16} {str(r.shape):<12} {status:<6} {c[Verdict.PASS]:>6} {c[Verdict.MISMATCH]:>8}"
                f" {c[Verdict.UNCHECKED]:>9}{cell} {other:>6} {worst[n]:>10.2e}"
            )
        return "\n".join(rows)

    def __str__(self) -> str:
        total = sum(r.size for r in self.reports.values())
        status = "PASS" if self.passed else "FAIL"
        lines = [f"check_params: {status} -- {len(self.reports)} tensors, {total} entries, {self.seconds:.3g} s"]
        if not self.deterministic:
            lines.append(f"  NONDETERMINISTIC: the loss changed by {self.drift:.3g} between two evaluations")
        lines.extend(f"  note: {n}" for n in self.notes)
        lines.append("  (names in backward order)")
        lines.append(self.table())
        lines.append(f"diagnosis: {self.diagnosis.text}")
        for n in self.failing[:3]:
            lines.append(f"-- {n}")
            lines.append(self.reports[n].table(5))
        return "\n".join(lines)

    def assert_pass(self) -> "ParamsReport":
        """Raise :class:`GradientAssertionError` with the whole table unless every name passed."""
        if not self.passed:
            raise GradientAssertionError(f"gradient check failed\n{self}", self)
        return self

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "order": list(self.order),
            "deterministic": self.deterministic,
            "drift": self.drift,
            "seconds": self.seconds,
            "diagnosis": self.diagnosis.to_dict(),
            "notes": list(self.notes),
            "params": {n: self.reports[n].to_dict(**kwargs) for n in self.order},
        }

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(**kwargs))


def check_params(
    loss: Callable[[Mapping[str, np.ndarray]], Any],
    params: dict[str, np.ndarray],
    grads: Mapping[str, Any],
    *,
    order: Sequence[str] | None = None,
    sample: int | None = None,
    config: Config | None = None,
    seed: int = 0,
    adjudicate: bool | str = "auto",
    digits: int = 30,
    engine: str = "auto",
    executor: Any = None,
    screen: bool = False,
    budget: Any = None,
) -> ParamsReport:
    """Check ``grads[name]`` against ``loss(params)`` at every entry of every name.

    Entries of ``params`` are perturbed in place (the usual convention for models that
    read their parameters from the dict) and restored bit for bit afterwards, also when
    ``loss`` raises or the run is interrupted. Every name is checked; nothing stops at the
    first failure. ``order`` is the backward order of the names (default: the reverse of
    the dict's order, which is the forward creation order in most models); the diagnosis
    reads the failing names in that order. ``sample=k`` checks only ``k`` seeded random
    entries per name (the rest are SKIPPED); the default checks them all. Entries still
    in doubt after the step study are judged against exact derivatives (``adjudicate``,
    ``digits``: as in :func:`check`), with the other parameters held at their values.
    ``engine``: ``"serial"``, ``"processes"`` (each name's entries in chunks on a fork
    pool: the workers perturb their own copies of the parameters, so the dict is never
    touched; results identical to serial), or ``"auto"`` (processes when the whole check
    is estimated to take more than a couple of seconds and there is more than one core;
    each report says which ran and, for auto, why in its notes). ``executor`` (any
    ``concurrent.futures.Executor``, e.g. a dask cluster's ``client.get_executor()``, or
    ``ExecutorOptions``) runs each name's entries there, as :func:`check` does: the loss
    and the parameters are shipped once per worker, results identical to serial.
    ``screen=True`` screens each name with :func:`gradcheck.screen` instead (``budget``
    per name): every entry covered in O(log N) evaluations, disagreeing entries localized
    and judged entry by entry, the rest SCREENED with a stated detection limit; the loss
    then gets the dict with that one name replaced by a private copy.

    >>> import numpy as np, gradcheck
    >>> p = {"w": np.array([1.0, 2.0]), "b": np.array([0.5])}
    >>> loss = lambda p: float((p["w"] ** 2).sum() + 3 * p["b"][0])
    >>> gradcheck.check_params(loss, p, {"w": 2 * p["w"], "b": np.array([3.0])}).passed
    True
    """
    started = time.perf_counter()
    names = list(params)
    missing = [n for n in names if n not in grads]
    if missing:
        raise KeyError(f"grads has no entry for {missing}; it must have one per parameter name {names}")
    order_t = tuple(order) if order is not None else tuple(reversed(names))
    if sorted(order_t) != sorted(names):
        raise ValueError(f"order must list each parameter name once: got {list(order_t)}, names are {names}")
    if sample is not None and (not isinstance(sample, int) or sample < 1):
        raise ValueError(f"sample must be a positive int (entries per name) or None, got {sample!r}")

    dtypes = {n: float_dtype_name(np.asarray(params[n]), f"params[{n!r}]") for n in names}
    claimed = {n: as_gradient(grads[n], np.shape(params[n]), f"grads[{n!r}]") for n in names}
    originals = dict(params)                      # the user's objects, for identity restore
    snapshots = {n: np.array(params[n], copy=True) for n in names}
    rng = np.random.default_rng(seed)
    # The backward's round-off scales with its largest values anywhere in the model, not
    # with one tensor's (a key bias's claimed ~1e-17 is round-off of O(1) quantities).
    finite = [np.abs(g[np.isfinite(g)]).max() for g in claimed.values() if np.isfinite(g).any()]
    claim_scale = float(max(finite)) if finite else 0.0
    reports: dict[str, Report] = {}
    swapped: list[str] = []
    try:
        for n in names:
            if not params[n].flags.writeable:
                # Can't perturb a read-only array in place: swap in a private copy.
                params[n] = snapshots[n].copy()
                swapped.append(n)
        f0 = _scalar_loss(loss, params, None, "base", None)
        total = sum(int(np.size(params[n])) if sample is None else min(sample, int(np.size(params[n])))
                    for n in names)
        if screen and sample is not None:
            raise ValueError("check_params: screen=True covers every entry; it cannot be combined with sample=")
        if screen:
            chosen, why = engine, ""
        elif executor is not None:
            if engine not in ("auto", "executor"):
                raise ValueError(f"an executor runs engine='executor'; got engine={engine!r} as well (drop one)")
            chosen, why = "executor", "executor: asked for"
        else:
            chosen, why = _choose_engine(engine, loss, params, total)
        for n in names:
            cfg = config if config is not None else Config.for_dtype(dtypes[n])
            if screen:  # gradcheck._screen: each name screened, not checked entry by entry
                from ._screen._api import screen_param

                reports[n] = screen_param(loss, params, n, claimed[n], config=cfg, budget=budget,
                                          engine=engine, executor=executor, adjudicate=adjudicate, digits=digits)
                continue
            reports[n] = _check_one(loss, params, n, claimed[n], cfg, sample, rng, adjudicate, digits, claim_scale,
                                    chosen, why, executor)
        f1 = _scalar_loss(loss, params, None, "base", None)
    finally:
        for n in names:
            params[n] = originals[n]
            if params[n].flags.writeable and _bits_differ(params[n], snapshots[n]):
                params[n][...] = snapshots[n]
    deterministic = bool(f1 == f0 or (np.isnan(f0) and np.isnan(f1)))
    notes = []
    if swapped:
        notes.append(f"read-only parameters checked through a temporary copy in the dict: {swapped}")
    if not deterministic:
        notes.append(f"the loss is nondeterministic: {f0!r} then {f1!r}")
    return ParamsReport(
        reports=reports,
        order=order_t,
        diagnosis=diagnose(order_t, {n: r.passed for n, r in reports.items()},
                           {n: _informative(r) for n, r in reports.items()}),
        deterministic=deterministic,
        drift=0.0 if deterministic else float(abs(f1 - f0)),
        seconds=time.perf_counter() - started,
        notes=tuple(notes),
    )


def _informative(report: Report) -> bool:
    """Whether a name says anything about the gradient flowing through it: some entry
    PASSed against a nonzero value. A key bias whose gradient is exactly 0 passes whatever
    flows into it, so it must not break a run of failing names."""
    from ._causes import Cause

    passed = np.isin(report.codes, [int(Verdict.PASS), int(Verdict.SCREENED)])  # SCREENED: screen=True
    if report.causes is not None:
        passed &= report.causes != Cause.EXACT_ZERO
    return bool(passed.any())


def _bits_differ(a: np.ndarray, b: np.ndarray) -> bool:
    return np.ascontiguousarray(a).tobytes() != np.ascontiguousarray(b).tobytes()


def _scalar_loss(loss, params, index, side, name) -> float:
    try:
        value = loss(params)
    except Exception as exc:
        raise FunctionError(index, side, name, exc) from exc
    where = "at the unperturbed parameters" if index is None else f"at entry {index} ({side}) of {name!r}"
    arr = require_real_output(np.asarray(value), "loss(params)", where)
    if arr.ndim != 0:
        raise ValueError(f"loss(params) must return a scalar, got an array of shape {arr.shape}")
    return float(arr)


PARAMS_ENGINES = ("auto", "serial", "processes")  # and "executor", with executor=


def _named(differences, name: str):
    """``differences`` whose FunctionError names the parameter (a worker's does not)."""
    def run(idx: np.ndarray, h: np.ndarray):
        try:
            return differences(idx, h)
        except FunctionError as err:
            if err.param is not None:
                raise
            cause = err.__cause__ if err.__cause__ is not None else err
            raise FunctionError(err.index, err.side, name, cause) from cause
    return run


def _choose_engine(engine: str, loss, params, total: int) -> tuple[str, str]:
    """``(engine, why)`` for check_params; auto times one loss evaluation."""
    if engine == "executor":
        raise ValueError("check_params: engine='executor' needs executor= (a concurrent.futures.Executor)")
    if engine not in PARAMS_ENGINES:
        raise ValueError(f"check_params: engine={engine!r} is not one of {PARAMS_ENGINES}")
    if engine != "auto":
        return engine, f"{engine}: asked for"
    from ._fork import fork_hazard, usable_cores
    from .engines import _processes

    if usable_cores() < 2:
        return "serial", "serial: one core to run on"
    per_call = _processes._time_call(lambda: loss(params))
    estimate = 2 * total * per_call
    if estimate <= _processes.AUTO_MIN_SECONDS:
        return "serial", f"serial: 2N = {2 * total} evaluations estimated at {estimate:.2g} s"
    hazard = fork_hazard()
    if hazard is not None:
        return "serial", f"serial: 2N = {2 * total} evaluations estimated at {estimate:.2g} s, but {hazard}"
    return "processes", (f"processes: 2N = {2 * total} evaluations estimated at {estimate:.2g} s on one "
                         f"core; spread over {usable_cores()} processes")


def _check_one(loss, params, name, analytic_full, cfg: Config, sample, rng, adjudicate, digits, claim_scale,
               engine: str = "serial", why: str = "serial: asked for", executor: Any = None) -> Report:
    started = time.perf_counter()
    arr = params[name]
    size = arr.size
    if sample is None or sample >= size:
        flat_idx = np.arange(size)
    else:
        flat_idx = np.sort(rng.choice(size, size=sample, replace=False))
    values = np.asarray(arr, dtype=np.float64).reshape(-1)[flat_idx] if size else np.zeros(0)
    steps = steps_for(values, cfg.step)
    evaluate = lambda: _scalar_loss(loss, params, None, "base", name)  # noqa: E731

    def differencer(idx: np.ndarray, h: np.ndarray):
        return central_differences(evaluate, arr, idx, h, param=name)

    pool = None
    if engine in ("processes", "executor") and flat_idx.size >= 2:
        from .backends import NumpyBackend
        from .engines import CheckProblem, select_engine

        # Workers perturb their own copy of `arr` (the dict's object, in their memory: forked,
        # or shipped together with the loss's closure over the dict, so one object there too).
        problem = CheckProblem(f=loss, work=arr, evaluate=evaluate, backend=NumpyBackend(), cotangent=None,
                               executor=executor)
        pool = select_engine(engine, problem)[0]
        differencer = _named(pool.differences, name)  # noqa: F811

    probe = np.asarray(loss(params))
    unit = max(cfg.unit_roundoff, unit_roundoff_of(arr), unit_roundoff_of(probe))
    a = analytic_full.reshape(-1)[flat_idx]
    # The referee evaluates the loss with this one tensor replaced by an arbitrary-precision copy.
    snapshot = np.array(arr, dtype=np.float64, copy=True)
    referee = None
    if adjudicate is not False:
        referee = Referee(lambda v: loss({**params, name: v}), snapshot, None, digits=digits)
    try:
        diffs = differencer(flat_idx, steps)
        judged = judge_entries(
            differencer, values, a, diffs, steps, unit=unit, config=cfg, drift=None,
            base_finite=bool(np.isfinite(probe)), flat_indices=flat_idx,
            base_value=float(probe) if probe.ndim == 0 else None, referee=referee, adjudicate=adjudicate,
            claim_scale=claim_scale,
        )
    finally:
        if pool is not None:
            pool.close()
    shape = arr.shape
    numeric = np.full(size, np.nan)
    noise = np.full(size, np.nan)
    codes = np.full(size, Verdict.SKIPPED, dtype=np.uint8)
    refined = np.zeros(size, dtype=bool)
    numeric[flat_idx], noise[flat_idx] = judged.numeric, judged.noise
    codes[flat_idx], refined[flat_idx] = judged.codes, judged.refined
    tol = tolerance(analytic_full.reshape(-1), numeric, noise, rtol=cfg.rtol, atol=cfg.atol, noise_factor=cfg.noise_factor)
    return Report(
        name=name,
        analytic=analytic_full,
        numeric=numeric.reshape(shape),
        noise=noise.reshape(shape),
        tolerance=tol.reshape(shape),
        codes=codes.reshape(shape),
        refined=refined.reshape(shape),
        dtype=float_dtype_name(arr),
        engine=engine if pool is not None else "serial",
        config=cfg,
        evaluations=2 * flat_idx.size + judged.evaluations + 1,
        seconds=time.perf_counter() - started,
        notes=((f"sampled {flat_idx.size} of {size} entries",) if flat_idx.size < size else ())
        + (() if why.endswith("asked for") else (why,))
        + (tuple(getattr(pool, "notes", ())) if pool is not None else ())
        + tuple(adjudication_notes(judged.adjudication, adjudicate)),
        **judged.second_look(shape, flat_idx),
    )
