"""``check``: every entry of a claimed gradient against a central difference.

The stages, each in its own module: options (validated once) -> prepare (backend, f(x),
cotangent, claimed gradient, contract audit) -> difference (engine, checkpoint, steps,
progress) -> sanity (determinism, drift, input mutation) -> judge (classify -> refine ->
adjudicate) -> assemble (the Report).
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _axes
from .. import backends as _backends
from .._core import arguments as _arguments
from .._core.arrays import same_bits
from .._core.config import Config
from .._core.errors import mutation_error
from .._core.judged import Judged as Judged
from .._report.report import Report
from .._runtime.checkpoint import for_input
from . import complex as _complex
from . import options as _options
from .assemble import assemble
from .difference import coloured_difference, difference
from .inputs import MultiReport, claims_at_the_door, is_multiple_inputs, private_copy, split_grad, with_input
from .judge import judge
from .options import CheckOptions
from .prepare import RealView, prepare
from .sanity import sanity


def check(
    f: Callable[..., Any],
    x: Any,
    grad: Any = None,
    *,
    config: Config | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    eps: float | None = None,
    resolution: float | None = None,
    noise_factor: float | None = None,
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
    independent_axes: Any = None,
) -> Report | MultiReport:
    """Check the claimed gradient of ``f`` at ``x`` at every entry.

    Every entry of ``x`` is differenced (central differences on a private copy: ``x`` is
    never modified) and judged against the claim: PASS, MISMATCH, UNCHECKED, KINK or
    NONFINITE, each with its tolerance. Suspicious entries get a second look (a step study,
    then the referee's exact derivative where available).

    Parameters
    ----------
    f : callable
        Maps an array to a scalar or an array. An array output is reduced to a scalar
        with a seeded random cotangent ``v`` (``config.reduce="sum"`` uses ones). A tuple
        ``x = (x1, x2, ...)`` means ``f(*x)``.
    x : array_like or tuple of array_like
        The point: a numpy array, a torch tensor or a jax array (the backend follows it).
        A tuple of arrays checks each input with the others held fixed and returns a
        :class:`MultiReport`. A float16/bfloat16/float32 ``x`` with a precision-generic
        ``f`` is differenced on its exact float64 upcast (see ``bound_ulps``); an ``f`` that
        computes in float32 whatever it is given is differenced in float32 with Richardson
        extrapolation (``gradcheck._lowp.f32steps``). A complex ``x`` (or output) is checked
        on its real view (see ``complex_convention``).
    grad : array_like or callable, optional
        The claimed gradient: an array, a function ``grad(x)``, or for array outputs a
        VJP ``grad(x, v)``; for several inputs a tuple of claims (or ``grad(*xs)``
        returning one). None: the backend's own autodiff makes the claim (torch, jax,
        ``backend="dual"``); the numpy backend needs it. A callable claim is checked at the
        door, before any differencing: its call, and the shape of what one call returns (for
        several inputs ``f(*xs)`` is evaluated once more, to tell a scalar ``f`` from an
        array one).
    config : Config, optional
        Steps and tolerances; default: the preset for ``x``'s dtype (:meth:`Config.for_dtype`).
    rtol, atol, eps, resolution, noise_factor : float, optional
        Single fields of the config, set on the preset for ``x``'s dtype (or on ``config``):
        ``rtol``, ``atol``, ``resolution``, ``noise_factor`` as in :class:`Config`, ``eps``
        its relative step ``step`` (``h_i = eps * max(1, |x_i|)``). ``rtol=1e-5`` is
        ``config=Config.for_dtype(x.dtype).replace(rtol=1e-5)`` that keeps the choices made
        without a config (an ``f`` computing in float32 still gets its preset, then the
        keyword). A field that ``config`` sets (differs from its preset) and a keyword sets
        to another value raise ``ValueError``. On a float16/bfloat16/float32 input
        differenced at its float64 upcast, the claim is judged in ulps (``bound_ulps``):
        only ``noise_factor`` applies, and ``report.notes`` says so.
    name : str, optional
        What the report calls ``f`` (default: ``f.__name__``).
    backend : str or backend object, optional
        ``"numpy"``, ``"torch"``, ``"jax"`` or an adapter; default: inferred from ``x``.
    engine : {"auto", "serial", "batched", "compiled", "processes", "executor"}, default "auto"
        How the 2N evaluations run; ``"auto"`` says what it picked and why in ``report.notes``.
    vectorized : bool, default False
        ``f`` accepts a leading batch axis (so does ``f.gradcheck_vectorized = True``).
    progress : bool, optional
        A progress line on stderr: None (default) when stderr is a terminal and the check
        is projected to take more than a couple of seconds, True always, False never.
    refine : bool, optional
        Run the step study on suspicious entries (h/2 ... 16h, Richardson, one-sided
        slopes for kinks); default: ``config.refine``.
    adjudicate : {"auto", True, False}, default "auto"
        Settle what is still in doubt against the exact derivative (arbitrary precision):
        ``"auto"`` when ``f`` runs on arbitrary-precision arrays (the report says either
        way), False never.
    digits : int, default 30
        Significant digits of the referee's exact derivative.
    bound_ulps : float, optional
        For float16/bfloat16 ``x``: the claimed gradient is judged in ulps of its own
        dtype, ``bound_ulps`` (default 2) ulps plus an absolute floor, both stated in
        ``report.notes`` (``gradcheck._lowp.plan`` explains the rule). For float32 ``x``
        (default 4): the claim's own float32 rounding, measured by recomputing it at the
        upcast, replaces the floor (``gradcheck._lowp.float32``).
    executor : concurrent.futures.Executor, optional
        Runs the differences on any executor (e.g. a dask cluster's
        ``client.get_executor()``; :class:`ExecutorOptions` sets retries and chunking),
        with serial's results bit for bit.
    checkpoint : str, path or Checkpoint, optional
        Saves finished differences as they come and resumes from them when the same check
        runs again; the file is deleted when the check succeeds.
    complex_convention : {"torch", "jax"}, optional
        Which complex number a complex claim is: ``"torch"`` (``dL/dRe z + i dL/dIm z``,
        so ``2z`` for ``L = |z|^2``; the default) or ``"jax"`` (its conjugate; the default
        for jax input). ``gradcheck._pipeline.complex`` explains the rule.

    independent_axes : tuple of int or "all", optional
        Declares that ``f``'s output, along those axes, is computed slice by slice from
        the matching input slices (a layer: norms, softmax, attention per batch and head,
        per-example losses); ``"all"`` declares an elementwise ``f``. The declaration is
        tested first (a leak raises :class:`DependentSlicesError`), then one entry of every
        slice is differenced per evaluation: 2*D evaluations for a (B, D) input, every
        entry still with its own verdict (``gradcheck._axes`` explains the rule). Runs on
        the serial, batched, processes and executor engines (each evaluation a job), and
        ``engine="compiled"`` for an array-valued ``@njit`` ``f`` (the evaluations in a
        parallel numba kernel), with ``checkpoint=``.

    Returns
    -------
    Report or MultiReport
        One :class:`Report` (a :class:`ComplexReport` for complex input), or a
        :class:`MultiReport` for a tuple ``x``; call ``.assert_pass()`` in a test.
        ``report.dtype`` is ``x``'s dtype; ``report.config`` is the config the numeric
        side ran with, and its ``dtype`` names the preset that set the step and the
        round-off model: ``"float64"`` for a float16/bfloat16/float32 ``x`` differenced at
        its float64 upcast (rtol, atol and resolution then come from the claim's ulp
        rule, stated in the notes), ``"float32"`` for an ``f`` that computes in float32
        whatever it is given (the forced-float32 preset, even for a float64 ``x``).
        ``report.evaluations`` counts every call of ``f`` gradcheck made (probes, the
        engine choice's timing, the referee's); the backend's own forward passes that
        make a claimed gradient (torch, jax) are not among them.

    Raises
    ------
    ShapeMismatchError
        The claimed gradient (or a VJP's result) is not shaped like ``x``.
    UnsupportedInputError
        ``x`` cannot be differentiated (integers, objects, an empty framework tensor type).
    FunctionError
        ``f`` or the claimed gradient raised; the message names the entry being perturbed
        and the original exception is chained. :class:`OutputError` (a subclass): ``f``
        returned something unusable (None, another shape than at ``x``).
    InputMutationError
        ``f`` wrote into the array it was given.
    DependentSlicesError
        ``independent_axes`` was declared, and perturbing one slice moved another.
    CheckpointError
        ``checkpoint`` is not a checkpoint file or cannot be written;
        :class:`CheckpointMismatchError` when it belongs to another check.
    WorkerDiedError
        A worker process of the ``processes`` engine died.
    GradientAssertionError
        A framework's gradient breaks its contract (dtype, shape, reentrancy, zero in gives
        zero out); ``.report`` holds the report.
    ValueError, TypeError
        An option out of range or of the wrong type; the message lists what is accepted.

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> x = np.array([[0.5, -1.0], [2.0, 0.1]])
    >>> report = gradcheck.check(lambda x: np.sin(x).sum(), x, grad=np.cos)
    >>> report.passed
    True
    >>> gradcheck.check(lambda x: np.sin(x).sum(), x, grad=np.cos, rtol=1e-8).config.rtol
    1e-08
    """
    opts = _options.validate(config=config, rtol=rtol, atol=atol, eps=eps, resolution=resolution,
                             noise_factor=noise_factor, name=name, engine=engine, vectorized=vectorized, progress=progress,
                             refine=refine, adjudicate=adjudicate, digits=digits, bound_ulps=bound_ulps,
                             executor=executor, checkpoint=checkpoint, complex_convention=complex_convention,
                             independent_axes=independent_axes)
    if is_multiple_inputs(x):
        return _check_inputs(f, x, grad, backend, opts)
    return check_one(f, x, grad, backend, opts)


def check_one(f: Callable[..., Any], x: Any, grad: Any, backend: Any, opts: CheckOptions) -> Report:
    """:func:`check` of one input, with validated options: the stages in order."""
    started = time.perf_counter()
    subject = prepare(f, x, grad, backend, opts)
    if isinstance(subject, RealView):
        _axes.refuse_unsupported(opts.independent_axes, engine="auto", executor=None, checkpoint=None,
                                 complex_input=True)
        return _check_complex(f, subject, grad, opts)
    # independent_axes colours the entries of x: with none (size 0) there is nothing to colour
    coloured = opts.independent_axes is not None and subject.work.size > 0
    run = coloured_difference(subject, opts) if coloured else difference(subject, opts)
    subject.release_output()  # f(x) itself is not needed past the first pass
    checked = sanity(subject)
    judged, cfg = judge(subject, run, checked, opts.digits)
    run.release()  # the first pass's arrays must not stack on assemble's
    return assemble(subject, run, checked, judged, cfg, opts, started)


# -- complex inputs and outputs (gradcheck._pipeline.complex) ------------------------------


def _check_complex(f: Callable[..., Any], view: RealView, grad: Any, opts: CheckOptions) -> Report:
    """Check ``f`` on the real view of a complex input or output (one verdict per complex entry)."""
    _complex.validate_convention(opts.complex_convention)
    real_opts = opts.replace(vectorized=view.vectorized, bound_ulps=None, complex_convention=None)

    def check_real(f_real: Callable[..., Any], xr: Any, claim: Any, *, backend: Any, adjudicate: Any) -> Report:
        return check_one(f_real, xr, claim, backend, real_opts.replace(adjudicate=adjudicate))

    options = {"adjudicate": opts.adjudicate}
    return _complex.check_complex(check_real, f, view.x_np, grad, view.backend, opts.complex_convention, options,
                                  spent=view.evaluations)


# -- several inputs: check(f, (x1, x2, ...)) ----------------------------------------------


def _check_inputs(f, xs: tuple, grad: Any, backend: Any, opts: CheckOptions) -> MultiReport:
    """Check each input of ``f(*xs)`` in turn, the others held fixed. ``f`` only ever sees
    private copies (numpy, torch, jax alike), so the user's inputs stay bit for bit as they
    were; a write into a held copy is still reported as :class:`InputMutationError`."""
    if opts.vectorized:
        raise ValueError("vectorized=True is for a single input; with several inputs check each one separately")
    be = _backends.resolve(backend, xs[0])
    label = _arguments.label_of(f, opts.name)
    held = tuple(private_copy(e) for e in xs)
    snapshots = [np.array(be.to_numpy(e), copy=True) for e in held]
    claims = split_grad(grad, held)
    door = claims_at_the_door(f, held, grad, be, snapshots, opts.config)  # before any input is differenced
    reports = []
    for k in range(len(xs)):
        checkpoint = None if opts.checkpoint is None else for_input(opts.checkpoint, k)
        report = check_one(with_input(f, held, k), held[k], claims[k], be,
                           opts.replace(name=f"{label}[input {k}]", checkpoint=checkpoint))
        if k == 0 and door:  # the door's f(*xs), made before input 0's check: counted there
            report = dataclasses.replace(report, evaluations=report.evaluations + door)
        reports.append(report)
    for k, e in enumerate(held):
        now = be.to_numpy(e)
        if not same_bits(now, snapshots[k]):
            raise mutation_error(label, into=f"input {k}")
    return MultiReport(name=label, reports=tuple(reports))
