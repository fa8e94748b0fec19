"""``check``: every entry of a claimed gradient against a central difference."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from . import backends as _backends
from ._classify_kernel import classify, tolerance  # the fused kernel from 1e5 entries
from ._config import Config
from ._differences import slope_and_noise, steps_for
from ._errors import FunctionError, InputMutationError
from ._inputs import as_gradient, float_dtype_name, unit_roundoff_of
from ._refine import step_study
from ._report import Report
from ._verdict import Verdict
from .engines import ENGINE_NAMES, CheckProblem, select_engine
from ._progress import Progress, differences_with_progress



def make_cotangent(shape: tuple[int, ...], config: Config) -> np.ndarray:
    """The cotangent that reduces an array output to a scalar (seeded, or all ones)."""
    if config.reduce == "sum":
        return np.ones(shape)
    return np.random.default_rng(config.seed).standard_normal(shape)


def reducer(cotangent: np.ndarray | None) -> Callable[[np.ndarray], float]:
    """Scalar from an output: the output itself, or ``cotangent . output`` in float64."""
    if cotangent is None:
        return lambda y: float(np.asarray(y, dtype=np.float64))
    flat_v = cotangent.reshape(-1)
    shape = cotangent.shape

    def reduce(y: np.ndarray) -> float:
        y = np.asarray(y)
        if y.shape != shape:
            raise ValueError(f"f returned shape {y.shape} after returning {shape} at the unperturbed input")
        return float(np.dot(flat_v, y.reshape(-1).astype(np.float64)))

    return reduce


def check(
    f: Callable[..., Any],
    x: Any,
    grad: Any = None,
    *,
    config: Config | None = None,
    name: str | None = None,
    backend: Any = None,
    engine: str = "auto",
    vectorized: bool = False,
    progress: bool | None = None,
) -> Report:
    """Check the claimed gradient of ``f`` at ``x`` at every entry.

    ``f`` maps an array to a scalar or an array. An array output is reduced to a scalar
    with a seeded random cotangent ``v`` (``config.reduce="sum"`` uses ones). ``grad`` is
    the claimed gradient: an array, a function ``grad(x)``, or for array outputs a VJP
    ``grad(x, v)``. ``x`` is never modified: perturbations happen on a private copy.
    ``engine`` chooses how the 2N evaluations run (``"auto"`` says what it picked and
    why, in ``report.notes``); ``vectorized=True`` declares that ``f`` accepts a leading
    batch axis (so does ``f.gradcheck_vectorized = True``). ``progress`` draws a progress
    line on stderr: ``None`` (default) when stderr is a terminal and the check is
    projected to take more than a couple of seconds, ``True`` always, ``False`` never.

    Returns a :class:`Report` (call ``.assert_pass()`` in a test).

    >>> import numpy as np, gradcheck
    >>> x = np.array([[0.5, -1.0], [2.0, 0.1]])
    >>> report = gradcheck.check(lambda x: np.sin(x).sum(), x, grad=np.cos)
    >>> report.passed
    True
    """
    if engine not in ENGINE_NAMES:
        raise ValueError(f"engine={engine!r} is not one of {ENGINE_NAMES}")
    started = time.perf_counter()
    be = _backends.resolve(backend, x)
    # A function may declare that it takes a leading batch axis (the control's does).
    vectorized = vectorized or bool(getattr(f, "gradcheck_vectorized", False))
    x_np = be.to_numpy(x)
    dtype = float_dtype_name(x_np)
    cfg = config if config is not None else Config.for_dtype(dtype)
    label = name or getattr(f, "__name__", None) or getattr(f, "name", None) or type(f).__name__

    # Private copies: `work` is perturbed, `pristine` detects a function that writes to x.
    work = np.array(x_np, order="C", copy=True)
    pristine = work.copy()

    try:
        y0 = be.evaluate(f, work)
    except Exception as exc:
        raise FunctionError(None, "base", None, exc) from exc
    cotangent = None if y0.ndim == 0 else make_cotangent(y0.shape, cfg)
    reduce = reducer(cotangent)
    f0 = reduce(y0)

    if cotangent is not None and grad is not None and not callable(grad) and cfg.reduce != "sum":
        raise TypeError(
            f"f returns an array of shape {y0.shape}, so the claimed gradient must be a VJP "
            "function grad(x, cotangent); an array can only be the gradient of a scalar "
            "(pass config=Config(reduce='sum') if it is the gradient of sum(f(x)))"
        )
    claimed = be.claimed_gradient(f, work.copy(), cotangent, grad)
    analytic = as_gradient(claimed, work.shape)

    unit = max(cfg.unit_roundoff, unit_roundoff_of(work), unit_roundoff_of(y0))
    evaluate = lambda: reduce(be.evaluate(f, work))  # noqa: E731

    problem = CheckProblem(f=f, work=work, evaluate=evaluate, backend=be, cotangent=cotangent,
                           vectorized=vectorized)
    eng, engine_reason = select_engine(engine, problem)
    differencer = eng.differences

    size = work.size
    flat_idx = np.arange(size)
    steps = steps_for(work.reshape(-1), cfg.step)
    with Progress(size, enabled=progress, label=label) as bar:
        fp, fm, denom = differences_with_progress(differencer, flat_idx, steps, bar)
    evaluations = 1 + 2 * size

    # Determinism and input mutation, checked once at the end (cheap).
    f1 = evaluate()
    evaluations += 1
    if not np.array_equal(work, pristine, equal_nan=True):
        raise InputMutationError(
            f"{label} wrote into the array it was given; gradcheck cannot difference a "
            "function that mutates its input (copy inside the function)"
        )
    deterministic = bool(f1 == f0 or (np.isnan(f1) and np.isnan(f0)))
    drift = 0.0 if deterministic else float(abs(f1 - f0))

    a = analytic.reshape(-1)
    drift_per_entry = None if deterministic else drift
    judged = judge_entries(
        differencer, work.reshape(-1), a, (fp, fm, denom), steps,
        unit=unit, config=cfg, drift=drift_per_entry, base_finite=bool(np.isfinite(f0)),
    )
    numeric, noise, codes, refined = judged.numeric, judged.noise, judged.codes, judged.refined
    evaluations += judged.evaluations
    notes: list[str] = [engine_reason] if engine == "auto" else []
    if not np.isfinite(f0):
        notes.append("f is not finite at x: no entry can be checked")
    if not deterministic:
        notes.append(
            f"f is nondeterministic: f(x) gave {f0!r} then {f1!r}; its drift is counted as noise"
        )

    shape = work.shape
    tol = tolerance(a, numeric, noise, rtol=cfg.rtol, atol=cfg.atol, noise_factor=cfg.noise_factor)
    return Report(
        name=label,
        analytic=analytic,
        numeric=numeric.reshape(shape),
        noise=noise.reshape(shape),
        tolerance=tol.reshape(shape),
        codes=codes.reshape(shape),
        refined=refined.reshape(shape),
        dtype=dtype,
        engine=eng.name,
        config=cfg,
        deterministic=deterministic,
        drift=drift,
        evaluations=evaluations,
        seconds=time.perf_counter() - started,
        notes=tuple(notes),
    )


@dataclass
class Judged:
    numeric: np.ndarray
    noise: np.ndarray
    codes: np.ndarray
    refined: np.ndarray
    evaluations: int


def judge_entries(
    differencer, values: np.ndarray, analytic: np.ndarray, diffs, steps: np.ndarray, *,
    unit: float, config: Config, drift: float | None, base_finite: bool,
    flat_indices: np.ndarray | None = None,
) -> Judged:
    """Verdicts for entries already differenced once: classify, retry steps that left
    f's domain, and give every MISMATCH a step study (when f is deterministic).

    ``values``, ``analytic``, ``diffs`` and ``steps`` are aligned 1-D arrays; the
    differencer takes indices into the perturbed array (``flat_indices`` maps to them).
    """
    cfg = config
    fp, fm, denom = diffs
    idx_map = np.arange(values.size) if flat_indices is None else np.asarray(flat_indices)
    numeric, noise = slope_and_noise(fp, fm, denom, unit)
    if drift is not None:
        # Run-to-run drift is noise the difference cannot see through.
        with np.errstate(divide="ignore", invalid="ignore"):
            noise = noise + drift / np.abs(denom)
    codes = classify(analytic, numeric, noise, rtol=cfg.rtol, atol=cfg.atol, noise_factor=cfg.noise_factor)
    refined = np.zeros(values.size, dtype=bool)
    evaluations = 0
    if base_finite:
        evaluations += _retry_nonfinite_steps(
            lambda j, h: differencer(idx_map[j], h), values, analytic, fp, fm, steps,
            codes, numeric, noise, unit, cfg,
        )
    if cfg.refine and drift is None:
        suspect = codes == Verdict.MISMATCH
        if cfg.refine_noisy:
            # PASS entries whose tolerance is mostly round-off certify less than rtol.
            scale = np.maximum(np.abs(analytic), np.abs(numeric))
            suspect |= (codes == Verdict.PASS) & (cfg.noise_factor * noise > cfg.rtol * scale)
        suspects = np.flatnonzero(suspect)
        if suspects.size:
            study = step_study(
                lambda j, h: differencer(idx_map[j], h), suspects, steps[suspects], analytic[suspects],
                (numeric[suspects], noise[suspects]),
                unit_roundoff=unit, rtol=cfg.rtol, atol=cfg.atol, noise_factor=cfg.noise_factor,
            )
            numeric[suspects] = study.numeric
            noise[suspects] = study.bound / cfg.noise_factor if cfg.noise_factor else study.bound
            codes[suspects] = study.codes
            refined[suspects] = True
            evaluations += study.evaluations
    return Judged(numeric, noise, codes, refined, evaluations)


def _retry_nonfinite_steps(differencer, x, a, fp, fm, steps, codes, numeric, noise, unit, cfg) -> int:
    """Entries whose x and claimed value are finite but whose perturbed evaluations were
    not (a step that left f's domain, e.g. log near 0) are retried with a step relative
    to |x_i| alone, then smaller ones. ``steps`` is updated for the entries that worked,
    so a later step study starts from the step that stays in the domain."""
    stuck = np.flatnonzero(
        np.isfinite(x) & np.isfinite(a) & ~(np.isfinite(fp) & np.isfinite(fm))
    )
    evaluations = 0
    relative = cfg.step * np.maximum(np.abs(x), np.finfo(np.float64).tiny)
    for shrink in (1.0, 1e-2, 1e-4):
        if not stuck.size:
            break
        trial = np.minimum(relative[stuck] * shrink, steps[stuck])
        p, m, d = differencer(stuck, trial)
        evaluations += 2 * stuck.size
        ok = np.isfinite(p) & np.isfinite(m) & (d > 0)
        if ok.any():
            idx = stuck[ok]
            n, z = slope_and_noise(p[ok], m[ok], d[ok], unit)
            numeric[idx], noise[idx], steps[idx] = n, z, trial[ok]
            codes[idx] = classify(a[idx], n, z, rtol=cfg.rtol, atol=cfg.atol, noise_factor=cfg.noise_factor)
        stuck = stuck[~ok]
    return evaluations
