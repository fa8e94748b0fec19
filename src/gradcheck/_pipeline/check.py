"""``check``: every entry of a claimed gradient against a central difference.

The stages, each in its own module: options (validated once) -> prepare (backend, f(x),
cotangent, claimed gradient, contract audit) -> difference (engine, checkpoint, steps,
progress) -> sanity (determinism, drift, input mutation) -> judge (classify -> refine ->
adjudicate) -> assemble (the Report).
"""
from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from .. import backends as _backends
from .._core.config import Config
from .._core.errors import InputMutationError
from .._core.judged import Judged as Judged
from .._report.report import Report
from .._runtime.checkpoint import for_input
from . import complex as _complex
from . import options as _options
from .assemble import assemble
from .difference import difference
from .inputs import MultiReport, is_multiple_inputs, private_copy, split_grad, with_input
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
    ``report.notes`` (``gradcheck._lowp.plan`` explains the rule). A float32 ``x`` takes
    the same path, with the claim's own float32 rounding measured (the claim recomputed at
    the upcast) instead of the floor, and ``bound_ulps`` 4 by default; an ``f`` that
    computes in float32 whatever it is given is differenced in float32 with Richardson
    extrapolation (``gradcheck._lowp.float32``, ``gradcheck._lowp.f32steps``).

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
    opts = _options.validate(config=config, name=name, engine=engine, vectorized=vectorized, progress=progress,
                             refine=refine, adjudicate=adjudicate, digits=digits, bound_ulps=bound_ulps,
                             executor=executor, checkpoint=checkpoint, complex_convention=complex_convention)
    if is_multiple_inputs(x):
        return _check_inputs(f, x, grad, backend, opts)
    return check_one(f, x, grad, backend, opts)


def check_one(f: Callable[..., Any], x: Any, grad: Any, backend: Any, opts: CheckOptions) -> Report:
    """:func:`check` of one input, with validated options: the stages in order."""
    started = time.perf_counter()
    subject = prepare(f, x, grad, backend, opts)
    if isinstance(subject, RealView):
        return _check_complex(f, subject, grad, opts)
    run = difference(subject, opts)
    checked = sanity(subject)
    judged, cfg = judge(subject, run, checked, opts.digits)
    return assemble(subject, run, checked, judged, cfg, opts, started)


# -- complex inputs and outputs (gradcheck._pipeline.complex) ------------------------------


def _check_complex(f: Callable[..., Any], view: RealView, grad: Any, opts: CheckOptions) -> Report:
    """Check ``f`` on the real view of a complex input or output (one verdict per complex entry)."""
    _complex.validate_convention(opts.complex_convention)
    real_opts = opts.replace(vectorized=view.vectorized, bound_ulps=None, complex_convention=None)

    def check_real(f_real: Callable[..., Any], xr: Any, claim: Any, *, backend: Any, adjudicate: Any) -> Report:
        return check_one(f_real, xr, claim, backend, real_opts.replace(adjudicate=adjudicate))

    options = {"adjudicate": opts.adjudicate}
    return _complex.check_complex(check_real, f, view.x_np, grad, view.backend, opts.complex_convention, options)


# -- several inputs: check(f, (x1, x2, ...)) ----------------------------------------------


def _check_inputs(f, xs: tuple, grad: Any, backend: Any, opts: CheckOptions) -> MultiReport:
    """Check each input of ``f(*xs)`` in turn, the others held fixed. ``f`` only ever sees
    private copies (numpy, torch, jax alike), so the user's inputs stay bit for bit as they
    were; a write into a held copy is still reported as :class:`InputMutationError`."""
    if opts.vectorized:
        raise ValueError("vectorized=True is for a single input; with several inputs check each one separately")
    be = _backends.resolve(backend, xs[0])
    label = opts.name or getattr(f, "__name__", None) or type(f).__name__
    held = tuple(private_copy(e) for e in xs)
    snapshots = [np.array(be.to_numpy(e), copy=True) for e in held]
    claims = split_grad(grad, held)
    reports = []
    for k in range(len(xs)):
        checkpoint = None if opts.checkpoint is None else for_input(opts.checkpoint, k)
        reports.append(check_one(with_input(f, held, k), held[k], claims[k], be,
                                 opts.replace(name=f"{label}[input {k}]", checkpoint=checkpoint)))
    for k, e in enumerate(held):
        now = be.to_numpy(e)
        if now.shape != snapshots[k].shape or now.tobytes() != snapshots[k].tobytes():
            raise InputMutationError(
                f"{label} wrote into input {k}; gradcheck cannot difference a function that "
                "mutates its inputs (copy inside the function)"
            )
    return MultiReport(name=label, reports=tuple(reports))
