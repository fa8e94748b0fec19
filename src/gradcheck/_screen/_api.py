"""``screen``: every entry of a large gradient in O(log N) evaluations of ``f``.

The flow, one named step each:

1. prepare      backend, private copy of ``x``, ``f(x)``, cotangent, claimed gradient;
2. calibrate    the step along a block (:func:`._directional.choose_step`) and f's round-off;
3. top level    every block of every sign draw measured (finite differences; the complex
                step once verified on the first draw);
4. bisect       disagreeing blocks halved down to a few entries, which ``check``'s
                entry-wise machinery judges (:mod:`._bisect`);
5. report       SCREENED for entries cleared in every draw, the entry-wise verdicts of
                localized entries, UNCHECKED for the rest, and the detection limit.
"""
from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

# gradcheck internals this module builds on (one place, for the package layout to come):
from .._core import arguments as _arguments
from .._core.arrays import same_bits
from .._core.config import Config, with_keywords
from .._core.errors import mutation_error
from .._core.verdict import Verdict
from .._report.report import Report
from . import _complex
from ._assemble import State, assemble, trivial_report
from ._bisect import LEAF_SIZE, Bisection
from ._budget import parse_budget
from ._directional import FACTORS
from ._engines import SCREEN_ENGINES, select
from ._entrywise import EntryJudge
from ._exact import AUTO_SECONDS, EVALS_PER_BLOCK, ExactProbe, agreement, exact_floor
from ._exact import GAIN as EXACT_GAIN
from ._limit import Product, screening_limit
from ._measure import REFINE_OVER, BudgetExhausted, Measured, Measurer
from ._partition import draw
from ._prepare import CHUNK, Prepared, prepare, time_and_repeat

#: Blocks per sign draw, and sign draws, unless asked otherwise.
DEFAULT_BLOCKS = 16
DEFAULT_DRAWS = 2
#: A block disagrees only beyond this share of the smallest error check's rule would call
#: MISMATCH at one of its entries (see ._bisect, "Relevance").
RELEVANCE_SHARE = 0.5
#: The top level may use at most this share of the budget (the rest localizes).
TOP_SHARE = 0.5
#: With ``blocks=None``, a clean screen whose limit at the median entry is more than
#: RECUT_OVER_FLOOR x check's own (its tolerance: rtol and the entry-wise round-off) is cut
#: again into RECUT_FACTOR x more blocks when the budget pays for it (see _smaller_blocks).
RECUT_OVER_FLOOR = 2.0
RECUT_FACTOR = 4


def screen(
    f: Callable[..., Any],
    x: Any,
    grad: Any = None,
    *,
    budget: Any = None,
    config: Config | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    eps: float | None = None,
    resolution: float | None = None,
    noise_factor: float | None = None,
    engine: str = "auto",
    vectorized: bool = False,
    executor: Any = None,
    draws: int = DEFAULT_DRAWS,
    blocks: int | None = None,
    complex_step: bool | str = "auto",
    exact: bool | str = "auto",
    adjudicate: bool | str = "auto",
    digits: int = 30,
    name: str | None = None,
    backend: Any = None,
    seed: int | None = None,
) -> Report:
    """Screen every entry of the claimed gradient of ``f`` at ``x`` with signed block
    projections, localize the entries that disagree, and state what could have escaped.

    Every entry takes part: nothing is sampled. The entries are cut into ``blocks`` random
    blocks (default 16) with random signs, ``draws`` times (default 2, independent). For
    each block the claimed directional derivative ``sum s_i w_i g_i`` is compared with a
    numeric one along the same direction (central differences at three steps with
    Richardson extrapolation and an error bound; the complex step when ``f`` is complex-safe
    numpy code, verified against the finite differences first). A block that disagrees is
    halved until a few entries remain; those get ``check``'s full entry-wise treatment.
    Entries cleared in every draw get the verdict ``SCREENED`` (never ``PASS``: a PASS is
    an entry-wise result), and ``report.detection_limit`` (shaped like ``x``) says the
    smallest single-entry error the screen would have found there.

    ``x`` is never modified.

    Parameters
    ----------
    f, x, grad
        As in :func:`gradcheck.check`: the function, the point, the claimed gradient.
    budget : int, str or datetime.timedelta, optional
        Evaluations of ``f`` (an int; default 2000), or wall time (``"90s"``, ``"5min"``,
        a ``timedelta``). The top level takes a few hundred; the rest localizes. With
        ``blocks=None``, where the blocks (not check's own floor: rtol, or f's round-off at
        the entry-wise step) set the limit, a budget that pays for it re-cuts into 4x more
        blocks, which lowers the limit at most down to that floor (a block's round-off does
        not depend on its size; a smaller block only allows a longer step); at the default
        rtol, rtol is the floor and the budget buys localization, not a lower limit. A dense
        error (most blocks disagree in every draw) is reported as such, with a few entries
        localized as examples, instead of an entry-wise check in disguise.
    config : Config, optional
        As in :func:`gradcheck.check`.
    rtol, atol, eps, resolution, noise_factor : float, optional
        Single fields of the config, as in :func:`gradcheck.check` (``screen(f, x, g,
        rtol=1e-8)``): they set the entry-wise rule the detection limit is stated against.
    engine : {"auto", "serial", "batched", "processes", "executor", "compiled"}, default "auto"
        ``"batched"``: a ``vectorized=True`` f, many directions per call; ``"processes"``:
        a fork pool; ``"executor"``: with ``executor=``; ``"compiled"``: an ``@njit`` f or a
        C f through cffi (:func:`gradcheck.native.native_function`), one parallel numba
        kernel per batch of directions. Each gives serial's report (batched: up to f's own
        batch-vs-single rounding). ``"auto"``: batched for a vectorized f; else in process
        while it times f (the step search's runs), then, for a batch that would take over 1 s
        on one core (0.5 s for an @njit or C f), a fork pool (the compiled kernel), decided
        from the median time per evaluation; a pool whose first batch was not faster is
        closed (the evaluation layer's ``Adaptive``).
    vectorized : bool, default False
        ``f`` accepts a leading batch axis (so does ``f.gradcheck_vectorized = True``), as
        in :func:`gradcheck.check`: ``f(X)`` with ``X`` of shape ``(B, *x.shape)`` returns
        one value (or one output) per row.
    executor : concurrent.futures.Executor, optional
        Any executor (e.g. dask's), with ``engine="executor"`` or ``"auto"``.
    draws : int, default 2
        Independent random cuttings of the entries into blocks.
    blocks : int, optional
        Blocks per draw (default 16).
    complex_step : {"auto", True, False}, default "auto"
        The complex step for the block derivatives: ``"auto"`` where finite differences
        cannot resolve the blocks (``f`` must be complex-safe numpy code; it is verified
        against the finite differences first).
    exact : {"auto", True, False}, default "auto"
        The arbitrary-precision path, where ``f`` runs on :mod:`gradcheck.mp` arrays (small
        ``x``, so small blocks): each block's directional derivative is computed exactly
        (``gradcheck.mp.mp_directional_derivative``) instead of by finite differences, after
        it agrees with them on the first draw, and localized entries are judged against
        their exact derivatives; the detection limit drops to what ``check``'s rule can
        tell against an exact value (``rtol`` and the backward's round-off) where finite
        differences could not get there. ``"auto"``: where the referee would run
        automatically, the limit at the median entry would drop more than 2x, and the path
        is estimated to take at most ~5 s.
    adjudicate, digits, name, backend
        As in :func:`gradcheck.check`, for the entries judged entry by entry.
    seed : int, optional
        Seeds the draws (default ``config.seed``).

    Returns
    -------
    Report
        Verdicts per entry (``SCREENED`` for the entries cleared in every draw) and
        ``report.detection_limit``.

    Raises
    ------
    ValueError
        An unknown engine, ``draws``, ``blocks``, ``complex_step``, ``adjudicate`` or
        ``exact`` value (the message lists the valid ones).
    TypeError
        A model instead of one array (a torch module, a dict of named parameters): the
        message gives the ``check_params(..., screen=True)`` call that screens it whole.
        ``engine="compiled"`` for an f the kernel cannot run (neither ``@njit`` nor a C
        f): :func:`check`'s refusal, in its words.
    InputMutationError
        ``f`` wrote into the array it was given.
    GradcheckError
        As :func:`check` raises for bad inputs or a failing ``f`` (for example
        :class:`ShapeMismatchError`, :class:`FunctionError`).

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> rng = np.random.default_rng(0)
    >>> A, W = rng.standard_normal((40, 64)), rng.standard_normal((64, 64))
    >>> f = lambda w: np.tanh(A @ w).sum()
    >>> g = lambda w: A.T @ (1 - np.tanh(A @ w) ** 2)
    >>> r = gradcheck.screen(f, W, g)
    >>> r.passed, r.counts[gradcheck.Verdict.SCREENED] == W.size, r.evaluations < 400
    (True, True, True)
    """
    started = time.perf_counter()
    _refuse_models(f, x)
    draws, blocks, seed, complex_step, adjudicate, exact = _validate(
        engine, draws, blocks, complex_step, adjudicate, exact, budget=budget, executor=executor,
        digits=digits, name=name, seed=seed)
    vectorized = bool(_arguments.flag("vectorized", vectorized)) or bool(getattr(f, "gradcheck_vectorized", False))
    config, tuning = with_keywords(config, rtol=rtol, atol=atol, eps=eps, resolution=resolution,
                                   noise_factor=noise_factor)
    prep = prepare(f, x, grad, config, name, backend, tuning)
    if not prep.analytic.size:
        return trivial_report(prep, started, Verdict.SCREENED, "x has no entries: nothing to screen")
    if not np.isfinite(prep.f0):
        return trivial_report(prep, started, Verdict.NONFINITE,
                               f"f is not finite at x ({prep.f0!r}): no entry can be screened")
    done = run_screen(prep, budget=budget, engine=engine, executor=executor, draws=draws, blocks=blocks,
                      complex_step=complex_step, exact=exact, adjudicate=adjudicate, digits=digits, seed=seed,
                      vectorized=vectorized)
    return assemble(prep, done.state, done.notes, done.deterministic, done.drift, started)


def _refuse_models(f: Any, x: Any) -> None:
    """A model (a torch module, a dict of named parameters or a pytree of them) is screened
    whole by ``check_params(..., screen=True)``, which names every parameter: say so,
    instead of failing on an object array."""
    module = type(f).__module__.split(".")[0] == "torch" and hasattr(f, "named_parameters")
    if module or isinstance(x, Mapping):
        call = "check_params(model, loss_fn, batch, screen=True)" if module else \
            "check_params(loss, params, grads, screen=True)"
        raise TypeError(f"screen(f, x) screens one array x; a model's parameters (a torch module, a dict of "
                        f"named arrays or tensors, a pytree) are screened together, every name at once, by {call}")


@dataclass
class Screened:
    """What :func:`run_screen` found, before any report is made of it."""

    state: State
    notes: list[str]             # the engine's choice, a re-cut or fitted blocks, nondeterminism
    deterministic: bool
    drift: float


def run_screen(prep: Prepared, *, budget: Any, engine: str, executor: Any, draws: int, blocks: int | None,
               complex_step: bool | str, exact: bool | str, adjudicate: bool | str, digits: int,
               seed: int | None, recut: bool = True, follow_dense: bool = True, vectorized: bool = False) -> Screened:
    """The screen of ``prep`` (f at x, prepared), from timing f to the bisection's end:
    :func:`screen` without the validation and the report (``gradcheck._models`` screens a
    whole model's concatenated parameters through it and reports each name). ``recut=False``
    keeps the fitted blocks (a whole model re-screens the names its blocks limit instead);
    ``follow_dense=False`` stops at a dense error without following blocks down to example
    entries, and calls it dense when every block of the first draw disagrees (a whole model
    tests its names one by one instead: see ``_bisect``); ``vectorized``: ``f`` takes a leading
    batch axis (the batched runner)."""
    per_call, deterministic, f1 = time_and_repeat(prep)
    prep.evaluations += 1
    allowed = parse_budget(budget, per_call)
    n = prep.analytic.size
    count, fitted = int(blocks or 0), ""
    if blocks is None:  # asked-for blocks are kept even when the budget cannot pay for them
        count, fitted = _fit_blocks(min(DEFAULT_BLOCKS, max(1, n // (2 * LEAF_SIZE))), int(draws), allowed)
    eng, why = select(engine, prep, executor=executor, vectorized=vectorized)
    try:
        run = functools.partial(_run, prep, eng, allowed, draws=int(draws), wanted=(complex_step, exact),
                                adjudicate=adjudicate, digits=digits, per_call=per_call,
                                seed=prep.config.seed if seed is None else seed, follow_dense=follow_dense)
        state = run(count=count)
        if blocks is None and recut:
            state, again = _smaller_blocks(prep, state, run, allowed)
            fitted = "; ".join(x for x in (fitted, again) if x)
    finally:
        eng.close()
    why = eng.why or why  # auto decides as the screen runs
    if not same_bits(prep.target.work, prep.pristine):
        raise mutation_error(prep.label)
    extra = list(prep.notes) + ([] if why.endswith("asked for") else [why]) + ([fitted] if fitted else [])
    if not deterministic:
        extra.append(f"f is nondeterministic: f(x) gave {prep.f0!r} then {f1!r}")
    return Screened(state, extra, deterministic, abs(f1 - prep.f0))


def _validate(engine, draws, blocks, complex_step, adjudicate, exact, **keywords) -> tuple[Any, ...]:
    """Every keyword of :func:`screen`, at the door (``gradcheck._core.arguments``); returns
    ``(draws, blocks, seed, complex_step, adjudicate, exact)`` as read (ints, None, plain bools)."""
    _arguments.choice("engine", engine, SCREEN_ENGINES, owner="screen")
    draws = _arguments.integer("draws", draws, minimum=1, meaning=" (independent sign draws)")
    blocks = _arguments.integer("blocks", blocks, minimum=1, meaning=" (blocks per draw)", none=True)
    complex_step, adjudicate, exact = (_arguments.choice(label, value, ("auto", True, False)) for label, value in
                                       (("complex_step", complex_step), ("adjudicate", adjudicate), ("exact", exact)))
    _arguments.as_budget(keywords["budget"])
    _arguments.as_executor(keywords["executor"])
    _arguments.as_digits(keywords["digits"])
    _arguments.text("name", keywords["name"])
    seed = _arguments.as_seed(keywords["seed"], none=True)
    if exact is True and adjudicate is False:
        raise ValueError("exact=True judges localized entries against their exact derivatives (the referee), "
                         "which adjudicate=False turns off: drop one")
    return draws, blocks, seed, complex_step, adjudicate, exact


def _fit_blocks(count: int, draws: int, allowed: int) -> tuple[int, str]:
    """Fewer blocks when the top level would take more than its share of the budget."""
    per_block = 2 * len(FACTORS) * draws
    room = int(TOP_SHARE * allowed) - 30  # the step search takes ~20
    if count * per_block <= room:
        return count, ""
    fitted = max(1, room // per_block)
    # Not "a higher detection limit" in general: where rtol or f's round-off sets the limit,
    # the block size does not change it (see _smaller_blocks for where it does); fewer
    # blocks raise the chance that two errors share one and cancel.
    return fitted, (f"{fitted} blocks per draw instead of {count}: the budget of {allowed} evaluations "
                    "allows no more (with fewer blocks, two errors share one more often: see the "
                    "miss probability)")


def _blocks_set_limit(prep: Prepared, state: State) -> float:
    """The median stated limit when a clean screen's limit is set by its blocks (their finite
    differences, not check's tolerance, at the median entry by more than
    :data:`RECUT_OVER_FLOOR`); else 0. Clean: everything cleared in every draw, nothing
    localized, neither the complex step nor the exact path in use."""
    bis, m = state.bisection, state.measurer
    if bis.budget_hit or bis.dense or bis.loc_idx.size or not bis.cleared.all() \
            or m.complex_probe is not None or m.exact_probe is not None:
        return 0.0
    own = screening_limit(bis.tau, bis.cleared, prep.weights, bis.depth_ratio)
    if not np.median(own) > RECUT_OVER_FLOOR * np.median(prep.floor):
        return 0.0
    return float(np.median(np.maximum(own, prep.floor)))


def _smaller_blocks(prep: Prepared, state: State, run, allowed: int) -> tuple[State, str]:
    """What the budget buys for the limit: while the blocks (not check's tolerance) set it
    and the budget pays for a top level with :data:`RECUT_FACTOR` times more blocks (at
    most half of what is left), cut again with smaller blocks (the step along a smaller
    block can be longer before truncation shows, so its round-off is smaller) and keep the
    new screen if its limit at the median entry is lower, or if it found a MISMATCH or a dense
    error (a finding is never thrown away); the evaluations of a cut not kept are counted."""
    said, n, first = "", prep.analytic.size, (state.blocks, _blocks_set_limit(prep, state))
    while (limit := _blocks_set_limit(prep, state)) > 0:
        count = state.blocks * RECUT_FACTOR
        used = state.measurer.evaluations
        if count > n // (2 * LEAF_SIZE) or 2 * (count * 2 * len(FACTORS) * state.draws + 40) > allowed - used:
            break
        prep.evaluations = used
        new = run(count=count)
        now = _median_limit(prep, new)
        found = new.bisection.dense or any((judged.codes == Verdict.MISMATCH).any() for _, judged in new.judge.parts)
        if found or now < limit:
            said = (f"{count} blocks per draw (re-cut from {first[0]}: the blocks, not check's "
                    f"tolerance, set the limit, and the budget paid for smaller ones; the limit at "
                    f"the median entry went from {first[1]:.3g} to {now:.3g})")
            new.phases = {"coarser cuts": used, **{k: v - (used if k == "step search" else 0)
                                                    for k, v in new.phases.items()}}
            state = new
            if found:
                break
        else:
            state.phases[f"{count}-block cut tried"] = new.measurer.evaluations - used
            state.measurer.evaluations = new.measurer.evaluations
            said += (f"{'; ' if said else ''}{count} blocks per draw were tried and did not lower the limit "
                     f"({now:.3g} at the median entry, against {limit:.3g}): the {state.blocks}-block screen is kept")
            break
    return state, said


def _median_limit(prep: Prepared, state: State) -> float:
    bis = state.bisection
    own = screening_limit(bis.tau, bis.cleared, prep.weights, bis.depth_ratio)
    return float(np.median(np.maximum(own, prep.floor)))


def _run(prep: Prepared, eng, allowed: int, count: int, draws: int, wanted, adjudicate, digits,
         seed: int, per_call: float, follow_dense: bool = True) -> State:
    complex_step, exact = wanted
    m = Measurer(engine=eng, x_flat=prep.x_flat, analytic=prep.analytic, weights=prep.weights,
                 unit=prep.unit, k=prep.config.noise_factor, budget=allowed)
    m.evaluations = prep.evaluations
    n = prep.analytic.size
    all_draws = [draw(n, count, seed=seed, number=r) for r in range(draws)]
    judge = EntryJudge(prep, m, adjudicate, digits, per_call, exact)
    bis = Bisection(m, all_draws, judge, relevance=Product(prep.floor, prep.weights, RELEVANCE_SHARE),
                    tau_dtype=getattr(prep, "TAU_DTYPE", np.float64), follow_dense=follow_dense)
    first = (all_draws[0].blocks[0], all_draws[0].signs[all_draws[0].blocks[0]])
    step_note, known = _calibrate(prep, m, first)
    if m.rho != prep.rho:  # check's floor with f's measured round-off (see _limit.entrywise_floor)
        prep.rho, prep._floor = m.rho, None
        bis.relevance = Product(prep.floor, prep.weights, RELEVANCE_SHARE)
    m.worth = Product(prep.floor, prep.weights)  # a block bound below this at all its entries lifts no limit
    phases = {"step search": m.evaluations}
    complex_note = exact_note = ""
    try:
        bis.measure_tops([0], known={0: known})
        complex_note = _try_complex(prep, m, bis, complex_step)
        exact_note = _try_exact(prep, m, bis, judge, exact, digits)
        # Not following a dense error down: a first draw whose every block disagrees says so
        # already (the other draws' top levels would clear nothing the caller relies on).
        bis.dense = not follow_dense and bis.spread_in(0)
        bis.measure_tops([] if bis.dense else list(range(1, draws)))
    except BudgetExhausted:
        bis.budget_hit = True  # unmeasured blocks clear nothing: their entries stay UNCHECKED
    phases["top level"] = m.evaluations - phases["step search"]
    if not bis.budget_hit:
        bis.run()
    bis.finish()
    phases["bisection"] = m.evaluations - phases["top level"] - phases["step search"] - judge.evaluations
    phases["entry-wise"] = judge.evaluations
    if m.refined:
        step_note += (f"; {m.refined} blocks whose bound at that step was over {REFINE_OVER:g}x the searched "
                      "block's (truncation-dominated there) were measured again at 1/4 and 1/2 of it")
    if m.exact_probe is not None and m.exact_probe.fallbacks:
        exact_note += (f"; {m.exact_probe.fallbacks} blocks where f did not run at arbitrary precision "
                       "were measured by finite differences")
    if m.exact_probe is not None and not m.exact_probe.usable():
        exact_note += (f"; its time allowance ({m.exact_probe.allowance:.3g} s) ran out after "
                       f"{m.exact_probe.blocks} blocks, finite differences for the rest")
    return State(bis, m, judge, count, draws, step_note, "; ".join(x for x in (complex_note, exact_note) if x),
                 eng.name, phases, prep.shape, prep.config.rtol)


def _calibrate(prep: Prepared, m: Measurer, block) -> tuple[str, tuple[float, float, float]]:
    """Choose the step on the first block; return its note and that block's estimate."""
    idx, signs = block
    choice = m.choose_step(idx, signs, prep.config.step)
    m.t, m.rho, m.calibrated = choice.t, choice.rho, choice.bound
    est, rounding = choice.estimate(unit=m.unit, k=m.k, rho=m.rho)
    note = (f"step along a block {m.t:.3g} (searched over {len(choice.samples)} steps, "
            f"{choice.evaluations} evaluations); f's measured round-off {m.rho:.3g}")
    return note, (float(est.delta[0]), float(est.bound[0]), rounding)


def _try_complex(prep: Prepared, m: Measurer, bis: Bisection, wanted) -> str:
    """Accept the complex step for the rest of the screen if it applies, is wanted, and
    agrees with the finite differences on every block of the first draw. Returns the note.

    ``"auto"`` wants it only where finite differences cannot resolve the blocks well below
    check's own tolerance (a deterministic rule: the same screen gives the same report)."""
    if wanted is False:
        return ""
    why_not = _complex.unavailable(prep.target.f, prep.backend.name)
    if why_not:
        return f"complex step not used: {why_not}" if wanted is True else ""
    tops = [n for n in bis.tops if n.draw == 0]
    if wanted == "auto":
        ratio = _fd_to_floor(prep, bis)
        if ratio <= FD_GOOD_ENOUGH:
            return ""
    cp, reason = _complex.probe_first(m, m.engine.complex, (tops[0].idx, bis.draws[0].signs[tops[0].idx]))
    if cp is None:
        return f"complex step not used: {reason}"
    blocks = [(n.idx, bis.draws[0].signs[n.idx]) for n in tops]
    if not m.afford(len(blocks)):
        return "complex step not used: no budget left to verify it"
    fd = Measured(np.array([n.delta for n in tops]), np.array([n.bound for n in tops]),
                  np.array([n.claim for n in tops]), "fd")
    cs = cp.measure(m, blocks)
    ok, why = _complex.verify(fd, cs)
    if not ok:
        return f"complex step not used: {why}; finite differences throughout"
    m.complex_probe = cp
    for j, n in enumerate(tops):
        if cs.bound[j] < n.bound:
            n.delta, n.bound, n.claim = float(cs.delta[j]), float(cs.bound[j]), float(cs.claim[j])
            bis.set_tau(n.draw, n.idx, 2.0 * n.bound + n.claim)
    return (f"complex step used after it agreed with finite differences on all {len(tops)} blocks "
            f"of the first draw (round-off factor {cp.kappa:.3g})")


def _try_exact(prep: Prepared, m: Measurer, bis: Bisection, judge: EntryJudge, wanted, digits: int) -> str:
    """Accept the arbitrary-precision path (:mod:`._exact`) for the rest of the screen if
    it applies, is wanted, and agrees with the first draw's estimates. Returns the note."""
    referee = judge.referee
    why_not = judge.referee_note or "f does not run on gradcheck.mp arrays here (numpy code on the numpy backend)"
    if wanted is not False and referee is not None:
        why_not = referee.unavailable() or ""
        m.evaluations += referee.take_probes()
    if wanted is False or why_not:
        return f"exact directional derivatives not used: {why_not}" if wanted is True else ""
    assert referee is not None  # why_not is empty only when a referee is at hand
    cfg = prep.config
    floor = exact_floor(prep.analytic, rtol=cfg.rtol, atol=cfg.atol, k=cfg.noise_factor, unit=prep.unit,
                        claim_scale=judge.claim_scale)
    with np.errstate(divide="ignore", invalid="ignore"):
        fd_own = bis.tau[0] / prep.weights
    now = float(np.median(np.maximum(np.where(np.isnan(fd_own), np.inf, fd_own), prep.floor)))
    if wanted == "auto" and not now > EXACT_GAIN * float(np.median(floor)):
        return ""
    tops = [n for n in bis.tops if n.draw == 0]
    per_call = judge.mp_seconds
    if per_call is None:
        per_call = _time_mp(referee)
        m.evaluations += 1  # its one call of f
    guess = per_call * EVALS_PER_BLOCK * (len(bis.tops) + len(tops))
    if wanted == "auto" and guess > AUTO_SECONDS:
        return (f"exact directional derivatives not used: ~{guess:.2g} s estimated at arbitrary precision, "
                f"more than exact='auto' spends ({AUTO_SECONDS:g} s; exact=True asks for it)")
    probe = ExactProbe(referee.f_mp, referee.x, referee.cotangent, digits,
                       2 * AUTO_SECONDS if wanted == "auto" else np.inf)
    blocks = [(n.idx, bis.draws[0].signs[n.idx]) for n in tops]
    fd = Measured(np.array([n.delta for n in tops]), np.array([n.bound for n in tops]),
                  np.array([n.claim for n in tops]), "fd")
    try:
        ex = probe.measure(m, blocks)
    except BudgetExhausted:
        return "exact directional derivatives not used: no budget left to verify them"
    ok, why = agreement(fd, ex, "the complex step" if m.complex_probe is not None else "finite differences")
    if not ok or probe.fallbacks == len(tops):
        return "exact directional derivatives not used: " + (why or "f did not run at arbitrary precision "
                                                               "along any block")
    m.exact_probe, judge.exact_look, prep._floor = probe, True, floor
    bis.relevance = Product(floor, prep.weights, RELEVANCE_SHARE)
    for n in bis.tops:
        n.slack = np.nan  # the gate's relevance share follows the new floor
    for j, n in enumerate(tops):
        n.delta, n.bound, n.claim = float(ex.delta[j]), float(ex.bound[j]), float(ex.claim[j])
        bis.set_tau(0, n.idx, 2.0 * n.bound + bis.gate(n))
    rms = float(np.sqrt(np.mean(np.square(prep.analytic)))) or 1.0
    return (f"exact directional derivatives (f on gradcheck.mp arrays, {digits} digits) for the blocks, after "
            f"they agreed with the first draw's estimates on all {len(tops)} blocks, where those (and check's "
            f"entry-wise rule on finite differences) reached a limit of {now / rms:.2g} rms(g) at the median "
            "entry; localized entries are judged against their exact derivatives")


def _time_mp(referee) -> float:
    from ..mp import evaluate, to_mp

    start = time.perf_counter()
    evaluate(referee.f_mp, to_mp(np.asarray(referee.x, dtype=np.float64)), dps=20)
    return time.perf_counter() - start


#: complex_step="auto" keeps finite differences when their per-entry limit is at most this
#: share of check's own tolerance at the median entry.
FD_GOOD_ENOUGH = 0.1


def _fd_to_floor(prep: Prepared, bis: Bisection) -> float:
    """Median over entries of (the first draw's finite-difference limit / check's floor),
    computed in chunks (one float32 array of the ratios, no temporaries of the whole size)."""
    n = prep.analytic.size
    ratio = np.empty(n, dtype=np.float32)  # a decision against FD_GOOD_ENOUGH: float32 is plenty
    for lo in range(0, n, CHUNK):
        hi = min(n, lo + CHUNK)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = bis.tau[0, lo:hi] / np.asarray(prep.weights[lo:hi]) / np.asarray(prep.floor[lo:hi])
        ratio[lo:hi] = np.where(np.isfinite(r), r, np.inf)
    return float(np.median(ratio, overwrite_input=True))
