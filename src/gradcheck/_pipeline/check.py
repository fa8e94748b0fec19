"""``check``: every entry of a claimed gradient against a central difference."""
from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from .. import backends as _backends
from .._adjudicate.notes import adjudication_notes, unchecked_notes
from .._adjudicate.referee import Referee
from .._classify.kernel import tolerance  # the fused kernel from 1e5 entries
from .._core import arguments as _arguments
from .._core.config import Config, dtype_name
from .._core.errors import FunctionError, GradientAssertionError, InputMutationError, OutputError
from .._core.inputs import float_dtype_name, output_array, require_real_output, unit_roundoff_of
from .._core.judged import Judged as Judged
from .._lowp import f32steps
from .._lowp.plan import plan as lowp_plan
from .._report.report import Report
from .._runtime.checkpoint import for_input, open_checkpoint
from .._runtime.progress import Progress, differences_with_progress, screen_hint
from ..backends._claimed import as_gradient
from ..engines import ENGINE_NAMES, CheckProblem, select_engine
from ..engines._differences import require_moving_steps, slope_and_noise, steps_for
from . import complex as _complex
from .inputs import MultiReport, is_multiple_inputs, private_copy, split_grad, with_input
from .judge import judge_entries as judge_entries

#: Extra evaluations of a nondeterministic f at x that measure its spread (counted as noise).
DRIFT_SAMPLES = 6


def make_cotangent(shape: tuple[int, ...], config: Config) -> np.ndarray:
    """The cotangent that reduces an array output to a scalar (seeded, or all ones)."""
    if config.reduce == "sum":
        return np.ones(shape)
    return np.random.default_rng(config.seed).standard_normal(shape)


def reducer(cotangent: np.ndarray | None) -> Callable[[np.ndarray], float]:
    """Scalar from an output: the output itself, or ``cotangent . output`` in float64
    (``np.add.reduce(v * y)``: every engine reduces with these bits).

    An output gradcheck cannot reduce as it reduced the first one (another shape, complex
    or non-numeric values) raises :class:`OutputError`, which the differencing loop
    locates at its entry: never a conversion error reported as f's, never an imaginary
    part dropped with only numpy's ComplexWarning.
    """
    if cotangent is None:
        return scalar_output
    flat_v = cotangent.reshape(-1)
    shape = cotangent.shape

    def reduce(y: np.ndarray) -> float:
        y = require_real_output(output_array(y))
        if y.shape != shape:
            raise _changed_shape(y.shape, shape)
        # numpy's pairwise sum, not BLAS's dot: the same bits on every machine and thread
        # count, and the compiled engine's in-kernel reduction reproduces them exactly.
        return float(np.add.reduce(flat_v * y.reshape(-1).astype(np.float64)))

    return reduce


def scalar_output(y: Any) -> float:
    """``y`` as a float, for an ``f`` that returned a scalar at the unperturbed input."""
    if isinstance(y, float):  # a Python float or np.float64: the hot path
        return float(y)
    arr = require_real_output(output_array(y))
    if arr.ndim != 0:
        raise _changed_shape(arr.shape, ())
    return float(arr.astype(np.float64))


def _changed_shape(got: tuple[int, ...], first: tuple[int, ...]) -> OutputError:
    return OutputError(f"shape {got}", tail=f", after returning shape {first} at the unperturbed input; "
                       "f must return the same shape at every point")


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
    refine: bool | None = None,
    adjudicate: bool | str = "auto",
    digits: int = 30,
    bound_ulps: float | None = None,
    executor: Any = None,
    checkpoint: Any = None,
    complex_convention: str | None = None,
) -> Report | MultiReport:
    """Check the claimed gradient of ``f`` at ``x`` at every entry.

    ``f`` maps an array to a scalar or an array. An array output is reduced to a scalar
    with a seeded random cotangent ``v`` (``config.reduce="sum"`` uses ones). ``grad`` is
    the claimed gradient: an array, a function ``grad(x)``, or for array outputs a VJP
    ``grad(x, v)``. ``x`` is never modified: perturbations happen on a private copy.
    A tuple of arrays ``x = (x1, x2, ...)`` means ``f(*x)``: each input is checked with
    the others held fixed, ``grad`` is then a tuple of claims (or ``grad(*xs)`` returning
    one), and a :class:`MultiReport` (one Report per input) is returned.
    ``engine`` chooses how the 2N evaluations run (``"auto"`` says what it picked and
    why, in ``report.notes``); ``vectorized=True`` declares that ``f`` accepts a leading
    batch axis (so does ``f.gradcheck_vectorized = True``). ``progress`` draws a progress
    line on stderr: ``None`` (default) when stderr is a terminal and the check is
    projected to take more than a couple of seconds, ``True`` always, ``False`` never.

    Suspicious entries get a second look: ``refine`` (default: ``config.refine``) runs a
    step study on them (h/2 ... 16h, Richardson, one-sided slopes for kinks); then
    ``adjudicate`` settles what is still in doubt against the exact derivative computed at
    ``digits`` significant digits (``"auto"``: when f runs on arbitrary-precision arrays,
    which the report states either way; ``False``: never).

    ``executor`` runs the differences on any ``concurrent.futures.Executor`` (e.g. a dask
    cluster's ``client.get_executor()``; ``ExecutorOptions`` sets retries and chunking),
    with serial's results bit for bit. ``checkpoint`` (a path or a ``Checkpoint``) saves
    finished differences as they come and resumes from them when the same check runs
    again; the file is deleted when the check succeeds.

    A float16/bfloat16 ``x`` with a precision-generic ``f`` (float64 in, float64 out) is
    differenced on its exact float64 upcast, and the claimed gradient is judged in ulps of
    its own dtype: ``bound_ulps`` (default 2) ulps plus an absolute floor, both stated in
    ``report.notes`` (``gradcheck._lowp.plan`` explains the rule).

    A complex ``x`` (or a complex output) is checked on its real view, real and imaginary
    parts differenced separately, one verdict per complex entry. ``complex_convention``
    says which complex number the claim is: ``"torch"`` (``dL/dRe z + i dL/dIm z``, so
    ``2z`` for ``L = |z|^2``; the default) or ``"jax"`` (its conjugate; the default for
    jax input). ``gradcheck._pipeline.complex`` explains the rule.

    Returns a :class:`Report` (call ``.assert_pass()`` in a test).

    >>> import numpy as np, gradcheck
    >>> x = np.array([[0.5, -1.0], [2.0, 0.1]])
    >>> report = gradcheck.check(lambda x: np.sin(x).sum(), x, grad=np.cos)
    >>> report.passed
    True
    """
    args = _arguments.check_keywords(config=config, name=name, engine=engine, engines=ENGINE_NAMES,
                                     vectorized=vectorized, progress=progress, refine=refine,
                                     adjudicate=adjudicate, digits=digits, bound_ulps=bound_ulps,
                                     executor=executor)
    config, name, engine, vectorized, progress, refine, adjudicate, digits, bound_ulps, executor = args.values()
    if executor is not None and engine not in ("auto", "executor"):
        raise ValueError(f"an executor runs engine='executor'; got engine={engine!r} as well (drop one)")
    if complex_convention is not None:
        _complex.validate_convention(complex_convention)
    if is_multiple_inputs(x):
        return _check_inputs(f, x, grad, config=config, name=name, backend=backend,
                             engine=engine, vectorized=vectorized, progress=progress,
                             refine=refine, adjudicate=adjudicate, digits=digits, bound_ulps=bound_ulps,
                             executor=executor, checkpoint=checkpoint, complex_convention=complex_convention)
    started = time.perf_counter()
    be = _backends.resolve(backend, x)
    # A function may declare that it takes a leading batch axis (the control's does).
    vectorized = vectorized or bool(getattr(f, "gradcheck_vectorized", False))
    x_np = be.to_numpy(x)
    # -- complex input or output: the real view (gradcheck._pipeline.complex) -------------
    complex_options = dict(config=config, name=name, engine=engine, vectorized=vectorized, progress=progress,
                           refine=refine, adjudicate=adjudicate, digits=digits, executor=executor,
                           checkpoint=checkpoint)
    if np.iscomplexobj(x_np):
        return _check_complex(f, x_np, grad, be, complex_convention, complex_options)
    dtype = float_dtype_name(x_np)
    lowp = None
    if dtype in ("float16", "bfloat16", "float32"):  # difference the float64 upcast when f allows it
        lowp = lowp_plan(f, x_np, be, bound_ulps)
        if lowp.upcast:
            x_np, config, adjudicate = lowp.x64, lowp.config(config), lowp.adjudicate(adjudicate)
    forced32 = lowp is not None and not lowp.upcast and dtype == "float32"  # f computes in float32
    cfg = config if config is not None else f32steps.PRESET if forced32 else Config.for_dtype(dtype)
    if refine is not None and refine != cfg.refine:
        cfg = cfg.replace(refine=bool(refine))
    label = name or getattr(f, "__name__", None) or getattr(f, "name", None) or type(f).__name__

    # Private copies: `work` is perturbed, `pristine` detects a function that writes to x.
    # Native byte order: the same values, and the differencing code reads them natively.
    work = np.array(x_np, dtype=x_np.dtype.newbyteorder("="), order="C", copy=True)
    pristine = work.copy()
    require_moving_steps(work, steps_for(work.reshape(-1), cfg.step), cfg.step)

    try:
        y0 = be.evaluate(f, work)
    except FunctionError:
        raise  # the backend already said what failed (f's output, gradcheck's conversion)
    except Exception as exc:
        raise FunctionError(None, "base", None, exc) from exc
    if np.iscomplexobj(y0):  # complex output: the real view (gradcheck._pipeline.complex)
        return _check_complex(f, x_np, grad, be, complex_convention, complex_options)
    require_real_output(output_array(y0), f"f ({label})")
    cotangent = None if y0.ndim == 0 else make_cotangent(y0.shape, cfg)
    if lowp is not None:
        cotangent = lowp.cotangent(cotangent)
    reduce = reducer(cotangent)
    f0 = reduce(y0)

    if cotangent is not None and grad is not None and not callable(grad) and cfg.reduce != "sum":
        raise TypeError(
            f"f returns an array of shape {y0.shape}, so the claimed gradient must be a VJP "
            "function grad(x, cotangent); an array can only be the gradient of a scalar "
            "(pass config=Config(reduce='sum') if it is the gradient of sum(f(x)))"
        )
    claim_at = work if lowp is None else lowp.claim_input(work)  # the claim's own dtype
    claimed = be.claimed_gradient(f, claim_at.copy(), cotangent, grad)
    # Optional backend hook (torch, jax): the autodiff contract beyond the values (dtype,
    # zero cotangent -> zero gradient, reentrant backward) as (notes, violations).
    audit = getattr(be, "audit", None)
    audit_notes, violations = audit(f, claim_at.copy(), cotangent, grad, claimed) if audit else ((), ())
    analytic = as_gradient(claimed, work.shape)
    if lowp is not None and lowp.upcast:
        cfg = lowp.with_claim(cfg, claimed)
        if callable(grad) or grad is None:  # a float32 claim: its own rounding, measured
            lowp.measure_rounding(lambda: be.claimed_gradient(f, work.copy(), cotangent, grad), analytic)

    unit = max(cfg.unit_roundoff, unit_roundoff_of(work), unit_roundoff_of(y0))
    if cotangent is None and isinstance(be, _backends.NumpyBackend):
        evaluate = lambda: scalar_output(f(work))  # noqa: E731  the hot path: no backend per call
    else:
        evaluate = lambda: reduce(be.evaluate(f, work))  # noqa: E731

    problem = CheckProblem(f=f, work=work, evaluate=evaluate, backend=be, cotangent=cotangent,
                           vectorized=vectorized, executor=executor)
    eng, engine_reason = select_engine(engine, problem)
    differencer = eng.differences
    saved = None
    if checkpoint is not None:
        saved = open_checkpoint(checkpoint, eng, x=pristine, config=cfg, cotangent=cotangent, f=f,
                                backend=be, vectorized=vectorized)
        differencer = saved.differences

    size = work.size
    flat_idx = np.arange(size)
    steps = steps_for(work.reshape(-1), cfg.step)
    began = time.perf_counter()
    with Progress(size, enabled=progress, label=label) as bar:
        fp, fm, denom = differences_with_progress(differencer, flat_idx, steps, bar)
    hint = screen_hint(size, time.perf_counter() - began)  # a long pass: say that screen exists
    evaluations = 1 + 2 * size
    if lowp is not None and lowp.upcast:  # the floor scales with the gradient's size, measured
        cfg = lowp.with_floor(cfg, analytic, slope_and_noise(fp, fm, denom, 2.0**-53)[0])

    # Determinism and input mutation, checked once at the end (cheap).
    f1 = evaluate()
    evaluations += 1
    if not np.array_equal(work, pristine, equal_nan=True):
        raise InputMutationError(
            f"{label} wrote into the array it was given; gradcheck cannot difference a "
            "function that mutates its input (copy inside the function)"
        )
    deterministic = bool(f1 == f0 or (np.isnan(f1) and np.isnan(f0)))
    drift = 0.0
    if not deterministic:
        # One pair of calls often understates a noisy f's spread (|f1-f0| is below 1/8 of
        # a typical |f(x+h)-f(x-h)| noise 8% of the time: false MISMATCHes on a correct
        # gradient); the range of a few more calls bounds it.
        spread = [f0, f1] + [evaluate() for _ in range(DRIFT_SAMPLES)]
        evaluations += DRIFT_SAMPLES
        drift = float(np.max(spread) - np.min(spread))  # NaN if any call gave NaN, as before

    a = analytic.reshape(-1)
    drift_per_entry = None if deterministic else drift
    # The referee runs f on arbitrary-precision copies: only numpy code can do that.
    referee = None
    compiled_f = type(f).__module__.startswith("numba") or type(f).__name__ == "NativeFunction"
    if adjudicate is not False and getattr(be, "mp_capable", False) and not compiled_f:
        referee = Referee(lambda v: f(v), pristine, cotangent, digits=digits)
    first = None
    if forced32:  # Richardson across h, 2h, 4h in float32 (gradcheck._lowp.f32steps)
        *first, spent = f32steps.richardson(differencer, flat_idx, steps, (fp, fm, denom))
        evaluations += spent
    judged = judge_entries(
        differencer, work.reshape(-1), a, (fp, fm, denom), steps,
        unit=unit, config=cfg, drift=drift_per_entry, base_finite=bool(np.isfinite(f0)),
        base_value=None if forced32 else f0, referee=referee, adjudicate=adjudicate, first=first,
    )
    numeric, noise, codes, refined = judged.numeric, judged.noise, judged.codes, judged.refined
    evaluations += judged.evaluations
    notes: list[str] = [engine_reason] if engine == "auto" else []
    notes.extend(audit_notes)
    notes.extend(f"contract violation: {v}" for v in violations)
    if not np.isfinite(f0):
        notes.append("f is not finite at x: no entry can be checked")
    notes.extend(judged.notes)  # e.g. f's round-off measured far above its dtype's
    notes.extend(adjudication_notes(judged.adjudication, adjudicate, work.shape))
    notes.extend(getattr(eng, "notes", ()))  # e.g. the compiled engine's compile time
    if compiled_f and adjudicate is True:
        notes.append("not adjudicable: f is compiled code (numba or C), which cannot run at arbitrary precision")
    if not deterministic:
        notes.append(
            f"f is nondeterministic: f(x) gave {f0!r} then {f1!r}; its drift is counted as noise"
        )
    if hint:
        notes.append(hint)

    shape = work.shape
    tol = tolerance(a, numeric, noise, rtol=cfg.rtol, atol=cfg.atol, noise_factor=cfg.noise_factor)
    if lowp is not None:
        if lowp.upcast:
            codes, tol = lowp.judge(a, judged, cfg)
        notes.extend(lowp.notes)
    floor_name = "the floor for a low-precision backward's round-off" if lowp is not None and lowp.upcast else "atol"
    notes.extend(unchecked_notes(a, numeric, tol, codes, cfg.resolution, abs(f0) if np.isfinite(f0) else None,
                                 atol=cfg.atol, floor_name=floor_name))
    report = Report(
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
        output_dtype=dtype_name(y0.dtype),
        **judged.second_look(shape),
    )
    if saved is not None:
        saved.finish()
    if violations:
        # Not a per-entry verdict, so it cannot live in the counts: fail loudly, report attached.
        raise GradientAssertionError(
            f"the {be.name} gradient of {label} breaks the autodiff contract:\n"
            + "".join(f"  - {v}\n" for v in violations) + str(report), report,
        )
    return report


# -- complex inputs and outputs (gradcheck._pipeline.complex) ------------------------------


def _check_complex(f, x_np, grad, be, convention, options) -> Report:
    """Check ``f`` on the real view of a complex input or output (one verdict per complex entry)."""
    _complex.validate_convention(convention)
    return _complex.check_complex(check, f, x_np, grad, be, convention, options)


# -- several inputs: check(f, (x1, x2, ...)) ----------------------------------------------


def _check_inputs(f, xs: tuple, grad: Any, *, name: str | None, backend: Any, **options: Any) -> MultiReport:
    """Check each input of ``f(*xs)`` in turn, the others held fixed. ``f`` only ever sees
    private copies (numpy, torch, jax alike), so the user's inputs stay bit for bit as they
    were; a write into a held copy is still reported as :class:`InputMutationError`."""
    if options.get("vectorized"):
        raise ValueError("vectorized=True is for a single input; with several inputs check each one separately")
    be = _backends.resolve(backend, xs[0])
    label = name or getattr(f, "__name__", None) or type(f).__name__
    count = len(xs)
    held = tuple(private_copy(e) for e in xs)
    snapshots = [np.array(be.to_numpy(e), copy=True) for e in held]
    claims = split_grad(grad, held)
    reports = []
    for k in range(count):
        opts = dict(options)
        if opts.get("checkpoint") is not None:
            opts["checkpoint"] = for_input(opts["checkpoint"], k)
        reports.append(check(with_input(f, held, k), held[k], claims[k], name=f"{label}[input {k}]",
                             backend=be, **opts))
    for k, e in enumerate(held):
        now = be.to_numpy(e)
        if now.shape != snapshots[k].shape or now.tobytes() != snapshots[k].tobytes():
            raise InputMutationError(
                f"{label} wrote into input {k}; gradcheck cannot difference a function that "
                "mutates its inputs (copy inside the function)"
            )
    return MultiReport(name=label, reports=tuple(reports))
