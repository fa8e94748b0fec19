"""``check_params``: every entry of every named parameter of a model, with a diagnosis."""
from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._adjudicate.referee import referee_for
from .._core import arguments as _arguments
from .._core import status as _status
from .._core.arrays import same_bits
from .._core.config import Config, Tuning, dtype_name, with_keywords
from .._core.errors import AliasedParametersError, UnsupportedInputError
from .._core.inputs import float_dtype_name, real_scalar
from .._core.verdict import Cause, Verdict
from .._differences import CentralDifferences, require_moving_steps, steps_for
from .._evaluate import SerialRunner, Target, at_x, auto_decision, make_runner
from .._pipeline.assemble import assemble_report
from .._pipeline.difference import first_differences
from .._pipeline.judge import judge_entries
from .._pipeline.prepare import unit_in_use
from .._report.report import Report
from ..backends import NumpyBackend, as_gradient
from .diagnosis import diagnose
from .frameworks import framework_problem
from .joint import screen_whole
from .report import ParamsReport as ParamsReport

try:
    from numpy.lib.array_utils import byte_bounds as _np_byte_bounds  # numpy >= 2
except ImportError:  # pragma: no cover - numpy 1.x
    _np_byte_bounds = np.byte_bounds  # type: ignore[attr-defined]  # numpy 1.x only


def check_params(
    loss: Any,
    params: Any = None,
    grads: Any = None,
    *,
    order: Sequence[str] | None = None,
    sample: int | None = None,
    config: Config | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    eps: float | None = None,
    resolution: float | None = None,
    noise_factor: float | None = None,
    seed: int = 0,
    adjudicate: bool | str = "auto",
    digits: int = 30,
    engine: str = "auto",
    executor: Any = None,
    screen: bool = False,
    budget: Any = None,
) -> ParamsReport:
    """Check ``grads[name]`` against ``loss(params)`` at every entry of every name.

    A model as it is held: a dict of numpy arrays with its hand-written gradients
    (``check_params(loss, params, grads)``), a PyTorch module (``check_params(model, loss_fn)``
    or ``check_params(model, loss_fn, batch)``), a dict of torch tensors, or a JAX pytree
    (``check_params(loss, params)``); for the frameworks the claim is their own gradient
    (autograd, ``jax.grad``; custom ``autograd.Function`` and ``custom_vjp`` rules included)
    unless ``grads`` is given. Every name is checked; nothing stops at the first failure, and
    the diagnosis reads the failing names in backward order. The parameters are restored bit
    for bit (a numpy dict's entries are perturbed in place, where the loss reads them, also
    when ``loss`` raises or the run is interrupted); a framework's model is never written
    (the check evaluates the loss on its own arrays), and its mode, ``requires_grad`` flags
    and buffers are left as they were. With ``screen=True`` the whole model is screened at
    once: see the docs' "Checking a whole model".

    Parameters
    ----------
    loss : callable or torch.nn.Module
        ``loss(params) -> float`` reading its parameters from the dict (or pytree). Or a
        ``torch.nn.Module``: then ``params`` is ``loss_fn`` and ``grads`` is ``batch``:
        ``check_params(model, loss_fn)`` checks autograd's gradient of ``loss_fn(model)``;
        ``check_params(model, loss_fn, (inputs, target))`` of
        ``loss_fn(model(inputs), target)`` (``inputs`` a tensor or a tuple of them), and
        ``check_params(model, loss_fn, inputs_tensor)`` of ``loss_fn(model(inputs))``; every
        parameter that requires grad is checked. A float32 model whose loss computes the same
        function given float64 parameters (precision-generic) is checked in float64 (the
        batch's floating tensors cast too), else in float32; the report says which.
    params : dict of str to numpy.ndarray, dict of torch.Tensor, or a pytree of jax arrays
        The parameters by name. Numpy values must be numpy arrays (a list or a float is
        refused saying what to pass); names whose arrays share memory (a tied weight under
        two names, overlapping views of one buffer) are refused with
        :class:`AliasedParametersError`, which says how to pass a tied weight once or
        untied copies. A pytree's leaves are named by their path (``"layers.0.w"``).
    grads : mapping of str to array_like, optional
        The claimed gradient of each name, read by value (lists, other float dtypes, CPU
        tensors); required for numpy parameters, the framework's own gradient by default.
    order : sequence of str, optional
        The backward order of the names (default: the reverse of the dict's order, which
        is the forward creation order in most models).
    sample : int, optional
        Check only ``sample`` seeded random entries per name (the rest are SKIPPED);
        default: all of them.
    config : Config, optional
        Steps and tolerances; default: the preset for each name's dtype.
    rtol, atol, eps, resolution, noise_factor : float, optional
        Single fields of the config, set on each name's preset (or on ``config``), as in
        :func:`gradcheck.check`: ``check_params(loss, p, g, rtol=1e-5)``.
    seed : int, default 0
        Seeds the sampled entries.
    adjudicate : {"auto", True, False}, default "auto"
        Entries still in doubt after the step study are judged against exact derivatives,
        with the other parameters held at their values (as in :func:`check`).
    digits : int, default 30
        Significant digits of those exact derivatives.
    engine : {"auto", "serial", "processes", "executor"}, default "auto"
        ``"processes"`` runs each name's entries in chunks on a fork pool (the workers
        perturb their own copies, so the dict is never touched; results identical to
        serial); ``"auto"`` picks processes when the whole check is estimated to take more
        than a couple of seconds and there is more than one core. Each report says which
        ran and, for auto, why in its notes. The same engines run ``screen=True``;
        ``check``'s ``"batched"`` and ``"compiled"`` are refused: a loss of a dict of named
        arrays neither takes a leading batch axis nor runs in a numba kernel.
    executor : concurrent.futures.Executor or ExecutorOptions, optional
        Runs each name's entries there, as :func:`check` does (e.g. a dask cluster's
        ``client.get_executor()``): the loss and the parameters are shipped once per
        worker, results identical to serial.
    screen : bool, default False
        Screen the whole model at once (:func:`gradcheck.screen`'s algorithm over every
        entry of every name): blocks span all names, each entry with its own sign and
        block; disagreeing entries are localized by bisection to ``(name, index)`` and
        judged entry by entry, the rest SCREENED with a stated detection limit per entry.
        The evaluations do not grow with the number of names. Names whose whole gradient
        is wrong (an error passed along the backward) are found along their own
        directions; names the joint screen cannot serve as well as a screen of their own
        are screened again on their own. The loss gets the dict with every name a view of
        the screen's private copy.
    budget : optional
        The screen's budget (``screen=True`` only): evaluations of the loss (an int) or
        wall time (``"90s"``), as for :func:`gradcheck.screen`.

    Returns
    -------
    ParamsReport
        One :class:`Report` per name, a table of all names and a diagnosis
        (``.assert_pass()`` in a test).

    Raises
    ------
    AliasedParametersError
        Two names share memory (a tied weight, views of one buffer).
    ShapeMismatchError
        A claimed gradient is not shaped like its parameter.
    UnsupportedInputError
        A parameter is not a floating numpy array (a tensor, a list, a float).
    KeyError
        ``grads`` has no entry for a parameter name.
    FunctionError
        ``loss`` raised (the message names the parameter and the entry);
        :class:`OutputError` when it returned something that is not a real scalar.
    ValueError, TypeError
        An option out of range or of the wrong type.

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> p = {"w": np.array([1.0, 2.0]), "b": np.array([0.5])}
    >>> loss = lambda p: float((p["w"] ** 2).sum() + 3 * p["b"][0])
    >>> gradcheck.check_params(loss, p, {"w": 2 * p["w"], "b": np.array([3.0])}).passed
    True
    >>> gradcheck.check_params(loss, p, {"w": 2 * p["w"], "b": np.array([3.0 + 1e-5])}, rtol=1e-4).passed
    True
    """
    started = time.perf_counter()
    config, tuning = with_keywords(config, rtol=rtol, atol=atol, eps=eps, resolution=resolution,
                                   noise_factor=noise_factor)
    adjudicate, digits = _arguments.as_adjudicate(adjudicate), _arguments.as_digits(digits)
    seed, executor = _arguments.as_seed(seed), _arguments.as_executor(executor)
    engine = _arguments.choice("engine", engine, PARAMS_ENGINES + ("executor",))
    _arguments.engine_with_executor(engine, executor)
    if engine == "executor" and executor is None:
        raise ValueError("check_params: engine='executor' needs executor= (a concurrent.futures.Executor)")
    screen, _ = bool(_arguments.flag("screen", screen)), _arguments.as_budget(budget)
    problem = framework_problem(loss, params, grads)
    if problem is not None:
        loss, params, grads = problem.loss, problem.params, problem.grads
    elif grads is None:
        raise TypeError("check_params(loss, params, grads): grads (the claimed gradient of each name) is required "
                        "for numpy parameters; a torch module, a dict of tensors or a jax pytree bring their own")
    names, order_t = _require_names(params, grads, order, sample)
    dtypes = {n: float_dtype_name(np.asarray(params[n]), f"params[{n!r}]") for n in names}
    claimed = {n: as_gradient(grads[n], np.shape(params[n]), f"grads[{n!r}]", copy=not screen) for n in names}
    configs = _name_configs(params, dtypes, config, tuning)
    run = dict(order=order_t, adjudicate=adjudicate, digits=digits, engine=engine, executor=executor)
    if screen:
        if sample is not None:
            raise ValueError("check_params: screen=True covers every entry; it cannot be combined with sample=")
        grads = None  # a framework's claim now lives in ``claimed`` alone (the screen frees it once copied)
        if problem is not None:
            problem.grads = {}
        out = _screened(loss, params, claimed, configs, own=problem is not None, budget=budget, **run)
    else:
        out = _entrywise(loss, params, claimed, configs, sample=sample, seed=seed, **run)
    notes = list(problem.notes if problem is not None else []) + out.notes
    if problem is not None:
        changed = problem.verify()
        if changed:
            notes.append(f"the loss changed {', '.join(changed)} of the model during the check")
    return _params_report(out, order_t, notes, started)


@dataclass
class _Outcome:
    """A check's reports and what the run around them saw."""

    reports: dict[str, Report]
    f0: float
    f1: float
    evaluations: int
    notes: list[str] = field(default_factory=list)
    evidence: dict[str, str] = field(default_factory=dict)


def _screened(loss, params, claimed, configs, *, own, order, budget, adjudicate, digits, engine,
              executor) -> _Outcome:
    """``screen=True``: one screen over every entry of every name (:mod:`.joint`), on the
    screen's own copy; ``f(params)`` before and after (the determinism check) and the base
    point are evaluated on the dict itself, so a user's dict (``own`` False: not the adapter's
    arrays of a framework's model) is snapshotted and put back bit for bit on the way out, as
    the entry-wise check does, also when the loss writes into it or raises."""
    with _put_back(params, () if own else list(params)):
        f0 = _scalar_loss(loss, params)
        mp_capable = getattr(loss, "gradcheck_mp_capable", True)
        whole = screen_whole(loss, params, claimed, configs, order, budget=budget, engine=engine,
                             executor=executor, adjudicate=adjudicate, digits=digits, mp_capable=mp_capable)
        f1 = _scalar_loss(loss, params)
    return _Outcome(whole.reports, f0, f1, 2 + whole.evaluations, whole.notes, whole.failing)


@contextmanager
def _put_back(params: dict[str, np.ndarray], names: Sequence[str]) -> Iterator[dict[str, np.ndarray]]:
    """The arrays ``params[n]`` of ``names`` as they were, put back on the way out (the user's
    own objects, their contents restored bit for bit, whatever happened inside): yields the
    snapshots."""
    originals = {n: params[n] for n in names}                   # the user's objects, for identity
    snapshots = {n: np.array(params[n], copy=True) for n in names}
    try:
        yield snapshots
    finally:
        for n in names:
            params[n] = originals[n]
            if params[n].flags.writeable and not same_bits(params[n], snapshots[n]):
                params[n][...] = snapshots[n]


def _entrywise(loss, params, claimed, configs, *, order, sample, seed, adjudicate, digits, engine,
               executor) -> _Outcome:
    """Every entry of every name checked entry by entry, perturbed in place in the dict and
    restored bit for bit."""
    names = list(params)
    rng = np.random.default_rng(seed)
    # The backward's round-off scales with its largest values anywhere in the model, not
    # with one tensor's (a key bias's claimed ~1e-17 is round-off of O(1) quantities).
    finite = [np.abs(g[np.isfinite(g)]).max() for g in claimed.values() if np.isfinite(g).any()]
    claim_scale = float(max(finite)) if finite else 0.0
    reports: dict[str, Report] = {}
    swapped: list[str] = []
    with _put_back(params, names) as snapshots:
        for n in names:
            if not params[n].flags.writeable:
                # Can't perturb a read-only array in place: swap in a private copy.
                params[n] = snapshots[n].copy()
                swapped.append(n)
        f0 = _scalar_loss(loss, params)
        total = sum(int(np.size(params[n])) if sample is None else min(sample, int(np.size(params[n])))
                    for n in names)
        chosen, why, timed = _choose_engine(engine, executor, loss, params, total)
        for n in names:
            reports[n] = _check_one(loss, params, n, claimed[n], configs[n], sample, rng, adjudicate, digits,
                                    claim_scale, chosen, why, executor)
        f1 = _scalar_loss(loss, params)
    notes = [f"read-only parameters checked through a temporary copy in the dict: {swapped}"] if swapped else []
    return _Outcome(reports, f0, f1, 2 + timed + sum(r.evaluations for r in reports.values()), notes)


def _params_report(out: _Outcome, order: tuple[str, ...], notes: list[str], started: float) -> ParamsReport:
    f0, f1, reports, evidence = out.f0, out.f1, out.reports, out.evidence
    deterministic = bool(f1 == f0 or (np.isnan(f0) and np.isnan(f1)))
    if not deterministic:
        notes.append(f"the loss is nondeterministic: {f0!r} then {f1!r}")
    return ParamsReport(
        reports=reports,
        order=order,
        diagnosis=diagnose(order, {n: r.status != _status.FAIL and n not in evidence for n, r in reports.items()},
                           {n: _informative(r) for n, r in reports.items()},
                           [n for n in order if reports[n].status == _status.INCONCLUSIVE and n not in evidence]),
        deterministic=deterministic,
        drift=0.0 if deterministic else float(abs(f1 - f0)),
        seconds=time.perf_counter() - started,
        notes=tuple(notes),
        evaluations=out.evaluations,  # the loss at start and end included
        evidence=evidence,
    )


def _name_configs(params: Mapping[str, Any], dtypes: Mapping[str, str], config: Config | None,
                  tuning: Tuning) -> dict[str, Config]:
    """Each name's config: ``config`` or the preset of its dtype, with the tolerance keywords
    (``rtol=``, ``eps=``, ...) set; its steps must move its entries."""
    configs = {}
    for n, dtype in dtypes.items():
        cfg = configs[n] = tuning.on(config, dtype)
        require_moving_steps(params[n], cfg.step, f"params[{n!r}]")
    return configs


def _require_names(params: Mapping[str, Any], grads: Mapping[str, Any], order: Sequence[str] | None,
                   sample: int | None) -> tuple[list[str], tuple[str, ...]]:
    """The names and their backward order, after refusing what check_params cannot check:
    a name without a claim, values that are not numpy arrays or share memory, an order
    that is not the names, a sample that is not an int >= 1."""
    names = list(params)
    missing = [n for n in names if n not in grads]
    if missing:
        raise KeyError(f"grads has no entry for {missing}; it must have one per parameter name {names}")
    _require_arrays(params)
    _require_unaliased(params)
    _arguments.integer("sample", sample, minimum=1, meaning=" (entries per name)", none=True)
    if order is not None and not (isinstance(order, (list, tuple)) and all(isinstance(n, str) for n in order)):
        raise TypeError(f"order must be a list of the parameter names (backward order) or None, got {order!r}")
    order_t = tuple(order) if order is not None else tuple(reversed(names))
    if sorted(order_t) != sorted(names):
        raise ValueError(f"order must list each parameter name once: got {list(order_t)}, names are {names}")
    return names, order_t


def _require_arrays(params: Mapping[str, Any]) -> None:
    """Every value a numpy array: check_params perturbs them in place, where the loss reads
    them. Nothing is converted: the loss would see another type than it was written for
    (a list, a float); the error says what to pass instead. (A dict of torch tensors or a
    pytree of jax arrays is a model of its framework: ``.frameworks``.)"""
    for n, v in params.items():
        if isinstance(v, np.ndarray):
            continue
        kind = type(v).__module__.split(".")[0]
        what = f"a {type(v).__module__}.{type(v).__qualname__}" if kind in ("torch", "jax", "jaxlib") \
            else f"a {type(v).__name__}"
        hint = f"pass np.asarray(params[{n!r}], dtype=np.float64) and let the loss read that array"
        raise UnsupportedInputError(
            f"params[{n!r}] is {what}; check_params perturbs numpy arrays in place in the dict, "
            f"where the loss reads them: {hint}")


def _require_unaliased(params: Mapping[str, np.ndarray]) -> None:
    """Refuse names whose arrays share memory (see :class:`AliasedParametersError`).

    Perturbing one such name in place also moves the others, so the finite difference sees
    the tied function while the referee, which replaces one name, sees the untied one: a
    claim can pass either way, silently. Which one the user means (one tied weight with its
    total gradient, or separate weights) cannot be told from the values, so nothing is
    guessed."""
    groups = shared_memory_groups(params)
    if groups:
        raise AliasedParametersError(groups)


def shared_memory_groups(arrays: Mapping[str, np.ndarray]) -> list[list[str]]:
    """The sets of names (two or more) whose arrays share memory: the same array, views of
    it, or overlapping parts of one buffer (``np.shares_memory``, exact). Arrays whose byte
    ranges do not overlap are never compared, so a model with many tensors costs a sort."""
    bounds = _np_byte_bounds
    names = [n for n, a in arrays.items() if a.size > 0]
    spans = sorted(bounds(arrays[n]) + (n,) for n in names)
    parent = {n: n for n in names}

    def root(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    active: list[tuple[int, int, str]] = []
    for lo, hi, n in spans:
        active = [span for span in active if span[1] > lo]
        for _, _, other in active:
            if root(other) != root(n) and np.shares_memory(arrays[n], arrays[other]):
                parent[root(n)] = root(other)
        active.append((lo, hi, n))
    groups: dict[str, list[str]] = {}
    for n in arrays:  # in the dict's order
        if n in parent:
            groups.setdefault(root(n), []).append(n)
    return [g for g in groups.values() if len(g) > 1]


def _informative(report: Report) -> bool:
    """Whether a name says anything about the gradient flowing through it: some entry
    PASSed against a nonzero value. A key bias whose gradient is exactly 0 passes whatever
    flows into it, so it must not break a run of failing names."""
    passed = np.isin(report.codes, [int(Verdict.PASS), int(Verdict.SCREENED)])  # SCREENED: screen=True
    if report.causes is not None:
        passed &= report.causes != Cause.EXACT_ZERO
    return bool(passed.any())


def _scalar_loss(loss, params, name: str | None = None) -> float:
    return float(_loss_output(loss, params, name))


def _loss_output(loss, params, name: str | None = None) -> np.ndarray:
    """``loss(params)`` at the parameters themselves (the evaluation layer's :func:`at_x`) as a
    0-d array of its own dtype; its exception a FunctionError, an output that is no real scalar
    an OutputError, both naming the parameter ``name``."""
    return real_scalar(at_x(lambda: loss(params), param=name), "loss(params)", name)


PARAMS_ENGINES = ("auto", "serial", "processes")  # and "executor", with executor=


def _choose_engine(engine: str, executor: Any, loss, params, total: int) -> tuple[str, str, int]:
    """``(engine, why, calls)`` for the entry-wise check of every name (``engine`` and
    ``executor`` as check_params validated them): the executor, the engine asked for, or
    auto, which times one loss evaluation (two when the first says the check is long): ``calls``."""
    if executor is not None:
        return "executor", "executor: asked for", 0
    if engine == "processes" and getattr(loss, "gradcheck_backend", "numpy") != "numpy":
        raise ValueError("engine='processes' forks worker processes, and a child forked after a framework (torch, "
                         "jax) has started its thread pools can deadlock: use engine='serial'")
    if engine != "auto":
        return engine, f"{engine}: asked for", 0
    calls = 0

    def timed() -> Any:
        nonlocal calls
        calls += 1
        return loss(params)
    fork_safe = getattr(loss, "gradcheck_backend", "numpy") == "numpy"  # torch's and jax's threads: no fork
    choice, why = auto_decision(timed, 2 * total, fork_safe=fork_safe)  # check's own auto rule
    name = "processes" if choice == "processes" else "serial"
    return name, f"{name}: {why}", calls


def _check_one(loss, params, name, analytic_full, cfg: Config, sample, rng, adjudicate, digits, claim_scale,
               engine: str = "serial", why: str = "serial: asked for", executor: Any = None) -> Report:
    """One name's Report: the pipeline's first pass, judge and assembly on the (sampled)
    entries of ``params[name]``, perturbed in place in the dict."""
    started = time.perf_counter()
    arr = params[name]
    size = arr.size
    if sample is None or sample >= size:
        flat_idx = np.arange(size)
    else:
        flat_idx = np.sort(rng.choice(size, size=sample, replace=False))
    values = np.asarray(arr, dtype=np.float64).reshape(-1)[flat_idx] if size else np.zeros(0)
    steps = steps_for(values, cfg.step)
    differencer, pool = _param_differencer(loss, params, name, engine if flat_idx.size >= 2 else "serial", executor)
    probe = _loss_output(loss, params, name)
    unit = unit_in_use(cfg, arr, probe)
    # The referee evaluates the loss with this one tensor replaced by an arbitrary-precision copy.
    snapshot = np.array(arr, dtype=np.float64, copy=True)
    referee = referee_for(NumpyBackend(), loss, snapshot, None, adjudicate=adjudicate, digits=digits,
                          f_mp=lambda v: loss({**params, name: v}))
    try:
        diffs = first_differences(differencer, flat_idx, steps)
        judged = judge_entries(
            differencer, values, analytic_full.reshape(-1)[flat_idx], diffs, steps, unit=unit, config=cfg,
            drift=None, base_finite=bool(np.isfinite(probe)), flat_indices=flat_idx, base_value=float(probe),
            referee=referee, adjudicate=adjudicate, claim_scale=claim_scale,
        )
    finally:
        if pool is not None:
            pool.close()
    head = [f"sampled {flat_idx.size} of {size} entries"] if flat_idx.size < size else []
    head += ([] if why.endswith("asked for") else [why]) + list(getattr(pool, "notes", ()))
    return assemble_report(
        name=name, analytic=analytic_full, judged=judged, config=cfg, dtype=float_dtype_name(arr),
        engine=engine if pool is not None else "serial", evaluations=2 * flat_idx.size + 1, started=started,
        base_value=float(probe), adjudicate=adjudicate, output_dtype=dtype_name(probe.dtype), head=head,
        positions=flat_idx,
    )


def _param_differencer(loss, params, name: str, engine: str, executor: Any):
    """``(differencer, pool)`` for ``params[name]``: serial in place (pool None), or on a
    process pool or an executor, whose workers perturb their own copy of the array (the
    dict's object, in their memory: forked, or shipped together with the loss's closure
    over the dict, so one object there too). Errors name the parameter."""
    arr = params[name]
    evaluate = lambda: _scalar_loss(loss, params, name)  # noqa: E731
    target = Target(f=loss, work=arr, evaluate=evaluate, backend=NumpyBackend(), executor=executor, param=name)
    if engine not in ("processes", "executor"):
        return CentralDifferences(SerialRunner(target), arr).differences, None
    pool = CentralDifferences(make_runner(engine, target), arr)
    return pool.differences, pool
