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

import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

# gradcheck internals this module builds on (one place, for the package layout to come):
from .. import backends as _backends
from .._check import make_cotangent, reducer
from .._classify import tolerance
from .._config import Config
from .._differences import steps_for
from .._errors import FunctionError, InputMutationError, UnsupportedInputError
from .._inputs import as_gradient, float_dtype_name, require_real_output, unit_roundoff_of
from .._judge import Judged, adjudication_notes, judge_entries
from .._referee import Referee
from .._report import Report
from .._verdict import Verdict
from ..engines import CheckProblem, select_engine
from . import _complex
from ._bisect import LEAF_SIZE, Bisection
from ._budget import parse_budget
from ._directional import FACTORS, choose_step, claimed_slope, estimate, points, roundoff_per_step
from ._engines import select
from ._limit import describe, entrywise_floor, screening_limit
from ._measure import BudgetExhausted, Measured, Measurer
from ._partition import draw
from ._probe import Probe
from ._words import notes_for

#: Blocks per sign draw, and sign draws, unless asked otherwise.
DEFAULT_BLOCKS = 16
DEFAULT_DRAWS = 2
#: The referee (mpmath) runs f on whole arbitrary-precision copies of x: automatic only up
#: to this many entries, for an f this fast in float64, and when one arbitrary-precision
#: evaluation (timed once) takes at most MP_MAX_SECONDS.
MP_MAX_ENTRIES = 4096
MP_MAX_CALL_SECONDS = 2e-5
MP_MAX_SECONDS = 0.05
#: A block disagrees only beyond this share of the smallest error check's rule would call
#: MISMATCH at one of its entries (see ._bisect, "Relevance").
RELEVANCE_SHARE = 0.5
#: The top level may use at most this share of the budget (the rest localizes).
TOP_SHARE = 0.5


@dataclass
class Prepared:
    """Everything about ``f`` at ``x`` that the steps share."""

    label: str
    backend: Any
    dtype: str
    config: Config
    probe: Probe
    analytic: np.ndarray         # the claim, float64, flat
    f0: float
    unit: float
    cotangent: np.ndarray | None
    weights: np.ndarray          # max(1, |x_i|), flat
    evaluations: int             # of f so far (the base evaluation)
    _floor: np.ndarray | None = None

    @property
    def x_flat(self) -> np.ndarray:
        return self.probe.pristine.reshape(-1)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.probe.work.shape

    @property
    def floor(self) -> np.ndarray:
        """Per entry (flat): the smallest error check's rule calls MISMATCH."""
        if self._floor is None:
            cfg = self.config
            steps = steps_for(self.x_flat.astype(np.float64), cfg.step)
            self._floor = entrywise_floor(self.analytic, rtol=cfg.rtol, atol=cfg.atol, k=cfg.noise_factor,
                                          unit=self.unit, f0=self.f0, steps=steps)
        return self._floor


def screen(
    f: Callable[..., Any],
    x: Any,
    grad: Any = None,
    *,
    budget: Any = None,
    config: Config | None = None,
    engine: str = "auto",
    executor: Any = None,
    draws: int = DEFAULT_DRAWS,
    blocks: int | None = None,
    complex_step: bool | str = "auto",
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

    ``budget``: evaluations of ``f`` (an int; default 2000), or wall time (``"90s"``,
    ``"5min"``, a ``timedelta``). The top level takes a few hundred; the rest localizes.
    A dense error (most blocks disagree in every draw) is reported as such, with a few
    entries localized as examples, instead of an entry-wise check in disguise.
    ``engine``: ``"auto"``, ``"serial"``, ``"processes"`` (a fork pool), ``"executor"``
    (with ``executor=``, any ``concurrent.futures.Executor``, e.g. dask's), ``"compiled"``
    (an ``@njit`` f: one parallel numba kernel per batch of directions); each gives
    serial's report. ``complex_step``: ``"auto"`` (where finite differences cannot resolve
    the blocks), ``True``, ``False``. ``config``,
    ``adjudicate``, ``digits``, ``name``, ``backend`` as in :func:`gradcheck.check`;
    ``seed`` (default ``config.seed``) seeds the draws. ``x`` is never modified.

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
    _validate(engine, draws, blocks, complex_step, adjudicate)
    prep = _prepare(f, x, grad, config, name, backend)
    if not prep.analytic.size:
        return _trivial_report(prep, started, Verdict.SCREENED, "x has no entries: nothing to screen")
    if not np.isfinite(prep.f0):
        return _trivial_report(prep, started, Verdict.NONFINITE,
                               f"f is not finite at x ({prep.f0!r}): no entry can be screened")
    per_call, deterministic, f1 = _time_and_repeat(prep)
    prep.evaluations += 1
    allowed = parse_budget(budget, per_call)
    n = prep.analytic.size
    count, fitted = int(blocks or 0), ""
    if blocks is None:  # asked-for blocks are kept even when the budget cannot pay for them
        count, fitted = _fit_blocks(min(DEFAULT_BLOCKS, max(1, n // (2 * LEAF_SIZE))), int(draws), allowed)
    eng, why = select(engine, prep.probe, executor=executor, seconds_per_call=per_call,
                      batch=count * 2 * len(FACTORS), fork_safe=prep.backend.name == "numpy")
    try:
        state = _run(prep, eng, allowed, count, int(draws), complex_step, adjudicate, digits,
                     prep.config.seed if seed is None else int(seed), per_call)
    finally:
        eng.close()
    if not prep.probe.unchanged():
        raise InputMutationError(f"{prep.label} wrote into the array it was given; gradcheck cannot "
                                 "difference a function that mutates its input (copy inside the function)")
    extra = ([why] if engine == "auto" else []) + ([fitted] if fitted else [])
    if not deterministic:
        extra.append(f"f is nondeterministic: f(x) gave {prep.f0!r} then {f1!r}")
    return _assemble(prep, state, extra, deterministic, abs(f1 - prep.f0), started)


def _validate(engine, draws, blocks, complex_step, adjudicate) -> None:
    from ._engines import SCREEN_ENGINES

    if engine not in SCREEN_ENGINES:
        raise ValueError(f"engine={engine!r} is not one of {SCREEN_ENGINES} for screen")
    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)) or draws < 1:
        raise ValueError(f"draws must be an int >= 1 (independent sign draws), got {draws!r}")
    if blocks is not None and (isinstance(blocks, bool) or not isinstance(blocks, (int, np.integer)) or blocks < 1):
        raise ValueError(f"blocks must be None (automatic) or an int >= 1, got {blocks!r}")
    if complex_step not in ("auto", True, False):
        raise ValueError(f"complex_step={complex_step!r} is not one of ('auto', True, False)")
    if adjudicate not in ("auto", True, False):
        raise ValueError(f"adjudicate={adjudicate!r} is not one of ('auto', True, False)")


def _prepare(f, x, grad, config, name, backend) -> Prepared:
    be = _backends.resolve(backend, x)
    x_np = be.to_numpy(x)
    dtype = float_dtype_name(x_np)
    if dtype not in ("float64", "float32"):
        raise UnsupportedInputError(
            f"screen works on float32 and float64 inputs; x is {dtype}, where a difference in its "
            "own precision is mostly noise: use gradcheck.check, which differences the float64 upcast"
        )
    cfg = config if config is not None else Config.for_dtype(dtype)
    if not isinstance(cfg, Config):
        raise TypeError(f"config must be a gradcheck.Config, got {type(cfg).__name__}")
    label = name or getattr(f, "__name__", None) or type(f).__name__
    work = np.array(x_np, order="C", copy=True)
    if not work.dtype.isnative:
        work = work.astype(work.dtype.newbyteorder("="))
    try:
        y0 = be.evaluate(f, work)
    except Exception as exc:
        raise FunctionError(None, "base", None, exc) from exc
    require_real_output(y0, f"f ({label})")
    cotangent = None if y0.ndim == 0 else make_cotangent(y0.shape, cfg)
    reduce = reducer(cotangent)
    if cotangent is not None and grad is not None and not callable(grad) and cfg.reduce != "sum":
        raise TypeError(f"f returns an array of shape {y0.shape}, so the claimed gradient must be a VJP "
                        "function grad(x, cotangent) (or pass config=Config(reduce='sum'))")
    claimed = be.claimed_gradient(f, work.copy(), cotangent, grad)
    analytic = as_gradient(claimed, work.shape).reshape(-1)
    if cotangent is None and isinstance(be, _backends.NumpyBackend):
        evaluate = lambda: float(f(work))  # noqa: E731  the hot path
    else:
        evaluate = lambda: reduce(be.evaluate(f, work))  # noqa: E731
    unit = max(cfg.unit_roundoff, unit_roundoff_of(work), unit_roundoff_of(y0))
    probe = Probe(f, work, evaluate, cotangent, label)
    weights = np.maximum(1.0, np.abs(work.reshape(-1).astype(np.float64)))
    return Prepared(label, be, dtype, cfg, probe, analytic, reduce(y0), unit, cotangent, weights, 1)


def _time_and_repeat(prep: Prepared) -> tuple[float, bool, float]:
    """Seconds per evaluation, and whether f gives the same value at x twice."""
    start = time.perf_counter()
    try:
        f1 = prep.probe.evaluate()
    except Exception as exc:
        raise FunctionError(None, "base", None, exc) from exc
    seconds = time.perf_counter() - start
    same = f1 == prep.f0 or (np.isnan(f1) and np.isnan(prep.f0))
    return seconds, bool(same), float(f1)


def _fit_blocks(count: int, draws: int, allowed: int) -> tuple[int, str]:
    """Fewer blocks when the top level would take more than its share of the budget."""
    per_block = 2 * len(FACTORS) * draws
    room = int(TOP_SHARE * allowed) - 30  # the step search takes ~20
    if count * per_block <= room:
        return count, ""
    fitted = max(1, room // per_block)
    return fitted, (f"{fitted} blocks per draw instead of {count}: the budget of {allowed} evaluations "
                    f"allows no more (a larger budget gives a lower detection limit)")


@dataclass
class State:
    """What the screen found, for the report."""

    bisection: Bisection
    measurer: Measurer
    judge: "EntryJudge"
    blocks: int
    draws: int
    step_note: str
    complex_note: str
    engine_name: str
    phases: dict[str, int]           # evaluations: base and step search, top level, bisection
    shape: tuple[int, ...] = ()
    rtol: float = 0.0


def _run(prep: Prepared, eng, allowed: int, count: int, draws: int, complex_step, adjudicate, digits,
         seed: int, per_call: float) -> State:
    m = Measurer(engine=eng, x_flat=prep.x_flat, analytic=prep.analytic, weights=prep.weights,
                 unit=prep.unit, k=prep.config.noise_factor, budget=allowed)
    m.evaluations = prep.evaluations
    n = prep.analytic.size
    all_draws = [draw(n, count, seed=seed, number=r) for r in range(draws)]
    judge = EntryJudge(prep, m, adjudicate, digits, per_call)
    bis = Bisection(m, all_draws, judge, relevance=RELEVANCE_SHARE * prep.floor * prep.weights)
    first = (all_draws[0].blocks[0], all_draws[0].signs[all_draws[0].blocks[0]])
    step_note, known = _calibrate(prep, m, first)
    phases = {"step search": m.evaluations}
    complex_note = ""
    try:
        bis.measure_tops([0], known={0: known})
        complex_note = _try_complex(prep, m, bis, complex_step)
        bis.measure_tops(list(range(1, draws)))
    except BudgetExhausted:
        bis.budget_hit = True  # unmeasured blocks clear nothing: their entries stay UNCHECKED
    phases["top level"] = m.evaluations - phases["step search"]
    if not bis.budget_hit:
        bis.run()
    bis.finish()
    phases["bisection"] = m.evaluations - phases["top level"] - phases["step search"] - judge.evaluations
    phases["entry-wise"] = judge.evaluations
    return State(bis, m, judge, count, draws, step_note, complex_note, eng.name, phases,
                 prep.shape, prep.config.rtol)


def _calibrate(prep: Prepared, m: Measurer, block) -> tuple[str, tuple[float, float, float]]:
    """Choose the step on the first block; return its note and that block's estimate."""
    idx, signs = block
    d = m.direction(idx, signs)

    def sample(t: float) -> tuple[float, float, float]:
        pts = points(prep.x_flat, idx, d, t)
        fp, fm = m.run([(idx, pts.plus), (idx, pts.minus)])
        return float(fp), float(fm), claimed_slope(prep.analytic, pts, t)

    choice = choose_step(sample, prep.config.step, unit=m.unit, k=m.k)
    m.t, m.rho = choice.t, choice.rho
    trio = [choice.samples[m.t * f] for f in FACTORS]
    steps = m.t * np.asarray(FACTORS)
    fp = np.array([[v[0]] for v in trio])
    fm = np.array([[v[1]] for v in trio])
    claims = np.array([[v[2]] for v in trio])
    deltas = claims - (fp - fm) / (2.0 * steps[:, None])
    noises = roundoff_per_step(fp, fm, steps[:, None], unit=m.unit, k=m.k, rho=m.rho)
    est = estimate(deltas, noises, np.zeros(1))
    note = (f"step along a block {m.t:.3g} (searched over {len(choice.samples)} steps, "
            f"{choice.evaluations} evaluations); f's measured round-off {m.rho:.3g}")
    return note, (float(est.delta[0]), float(est.bound[0]), m.unit * float(np.max(np.abs(claims))))


def _try_complex(prep: Prepared, m: Measurer, bis: Bisection, wanted) -> str:
    """Accept the complex step for the rest of the screen if it applies, is wanted, and
    agrees with the finite differences on every block of the first draw. Returns the note.

    ``"auto"`` wants it only where finite differences cannot resolve the blocks well below
    check's own tolerance (a deterministic rule: the same screen gives the same report)."""
    if wanted is False:
        return ""
    why_not = _complex.unavailable(prep.probe.f, prep.backend.name)
    if why_not:
        return f"complex step not used: {why_not}" if wanted is True else ""
    tops = [n for n in bis.tops if n.draw == 0]
    if wanted == "auto":
        ratio = _fd_to_floor(prep, bis)
        if ratio <= FD_GOOD_ENOUGH:
            return ""
    cp, reason = _complex.probe_first(m, prep.probe, (tops[0].idx, bis.draws[0].signs[tops[0].idx]))
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
            bis.tau[n.draw, n.idx] = 2.0 * n.bound + n.claim
    return (f"complex step used after it agreed with finite differences on all {len(tops)} blocks "
            f"of the first draw (round-off factor {cp.kappa:.3g})")


#: complex_step="auto" keeps finite differences when their per-entry limit is at most this
#: share of check's own tolerance at the median entry.
FD_GOOD_ENOUGH = 0.1


def _fd_to_floor(prep: Prepared, bis: Bisection) -> float:
    """Median over entries of (the first draw's finite-difference limit / check's floor)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = bis.tau[0] / prep.weights / prep.floor
    return float(np.median(np.where(np.isfinite(ratio), ratio, np.inf)))


class EntryJudge:
    """The entry-wise treatment of localized entries: ``check``'s first differences,
    then ``judge_entries`` (classify, step study, kink test, referee)."""

    def __init__(self, prep: Prepared, m: Measurer, adjudicate, digits: int, per_call: float) -> None:
        self.prep, self.m, self.adjudicate = prep, m, adjudicate
        problem = CheckProblem(f=prep.probe.f, work=prep.probe.work, evaluate=prep.probe.evaluate,
                               backend=prep.backend, cotangent=prep.cotangent)
        self.differences = select_engine("serial", problem)[0].differences
        self.referee, self.referee_note = self._referee(adjudicate, digits, per_call)
        finite = prep.analytic[np.isfinite(prep.analytic)]
        self.claim_scale = float(np.abs(finite).max()) if finite.size else 0.0
        self.parts: list[tuple[np.ndarray, Judged]] = []
        self.evaluations = 0

    def _referee(self, adjudicate, digits, per_call: float) -> tuple[Referee | None, str]:
        """The referee for localized entries in doubt: always with ``adjudicate=True``;
        with "auto" only where f is cheap at arbitrary precision (object arrays are
        1e3-3e4x slower than float64; the referee needs ~20 evaluations per entry)."""
        prep = self.prep
        compiled = _complex.unavailable(prep.probe.f, "numpy") is not None
        if adjudicate is False or not getattr(prep.backend, "mp_capable", False) or compiled:
            return None, ""
        f = prep.probe.f
        referee = Referee(lambda v: f(v), prep.probe.pristine, prep.cotangent, digits=digits)
        if adjudicate is True:
            return referee, ""
        why = "no referee (adjudicate=True asks for it): f at arbitrary precision is too slow here"
        if prep.analytic.size > MP_MAX_ENTRIES or per_call > MP_MAX_CALL_SECONDS:
            return None, f"{why} ({prep.analytic.size} entries, {per_call:.2g} s per float evaluation)"
        seconds = _time_mp_call(f, prep.probe.pristine)
        if seconds is None or seconds > MP_MAX_SECONDS:
            return None, f"{why} ({'fails' if seconds is None else f'{seconds:.2g} s per evaluation'})"
        return referee, ""

    def __call__(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        prep, cfg = self.prep, self.prep.config
        idx = np.sort(np.asarray(idx, dtype=np.int64))
        values = prep.x_flat[idx].astype(np.float64)
        steps = steps_for(values, cfg.step)
        diffs = self.differences(idx, steps)
        judged = judge_entries(
            self.differences, values, prep.analytic[idx], diffs, steps, unit=prep.unit, config=cfg,
            drift=None, base_finite=True, flat_indices=idx, base_value=prep.f0, referee=self.referee,
            adjudicate=self.adjudicate, claim_scale=self.claim_scale,
        )
        used = 2 * idx.size + judged.evaluations
        self.evaluations += used
        self.m.evaluations += used
        self.parts.append((idx, judged))
        err = prep.analytic[idx] - judged.numeric
        return err, cfg.noise_factor * judged.noise + cfg.atol


def _time_mp_call(f, x: np.ndarray) -> float | None:
    """Seconds one evaluation of f on an arbitrary-precision copy of x takes (None: fails)."""
    from ..mp import evaluate, to_mp

    start = time.perf_counter()
    try:
        evaluate(f, to_mp(np.asarray(x, dtype=np.float64)), dps=20)
    except Exception:
        return None
    return time.perf_counter() - start


def _assemble(prep: Prepared, state: State, extra: list[str], deterministic: bool, drift: float,
              started: float) -> Report:
    cfg, n, shape = prep.config, prep.analytic.size, prep.shape
    bis = state.bisection
    codes = np.full(n, Verdict.UNCHECKED, dtype=np.uint8)
    screened = bis.cleared.all(axis=0)
    codes[screened] = Verdict.SCREENED
    numeric, noise = np.full(n, np.nan), np.full(n, np.nan)
    refined = np.zeros(n, dtype=bool)
    looks = Judged(numeric, noise, codes, refined, 0, np.zeros(n, np.uint8), np.full(n, np.nan),
                   np.full(n, -1, np.int16), np.full(n, np.nan), np.full(n, np.nan))
    localized = np.zeros(n, dtype=bool)
    for idx, judged in state.judge.parts:
        localized[idx] = True
        for key in ("numeric", "noise", "codes", "refined", "causes", "exact", "digits", "left", "right"):
            getattr(looks, key)[idx] = getattr(judged, key)
        looks.adjudication = judged.adjudication or looks.adjudication
    own = screening_limit(bis.tau, bis.cleared, prep.weights, bis.depth_ratio)
    limit = np.maximum(own, prep.floor)
    tol = tolerance(prep.analytic, numeric, noise, rtol=cfg.rtol, atol=cfg.atol, noise_factor=cfg.noise_factor)
    limit = np.where(localized, tol, np.where(screened, limit, np.inf))
    summary = describe(np.where(screened & ~localized, limit, np.inf), prep.analytic, draws=state.draws,
                       blocks=state.blocks, screened=int((screened & ~localized).sum()), own=own)
    notes = notes_for(state, summary, localized, codes) + extra
    notes += [state.judge.referee_note] if state.judge.referee_note else []
    notes += adjudication_notes(looks.adjudication, state.judge.adjudicate)
    return Report(
        name=prep.label, analytic=prep.analytic.reshape(shape), numeric=numeric.reshape(shape),
        noise=noise.reshape(shape), tolerance=np.where(localized, tol, limit).reshape(shape),
        codes=codes.reshape(shape), refined=refined.reshape(shape), dtype=prep.dtype,
        engine=f"screen/{state.engine_name}", config=cfg, deterministic=deterministic, drift=drift,
        evaluations=state.measurer.evaluations, seconds=time.perf_counter() - started,
        notes=tuple(x for x in notes if x), detection_limit=limit.reshape(shape),
        **looks.second_look(shape),
    )


def _trivial_report(prep: Prepared, started: float, code: Verdict, note: str) -> Report:
    """Every entry ``code`` without a screen (f not finite at x, or no entries at all)."""
    shape = prep.shape
    nan = np.full(shape, np.nan)
    return Report(
        name=prep.label, analytic=prep.analytic.reshape(shape), numeric=nan, noise=nan.copy(),
        tolerance=nan.copy(), codes=np.full(shape, code, dtype=np.uint8),
        refined=np.zeros(shape, dtype=bool), dtype=prep.dtype, engine="screen", config=prep.config,
        evaluations=prep.evaluations, seconds=time.perf_counter() - started, notes=(note,),
        detection_limit=np.full(shape, np.inf),
    )


def screen_param(loss, params, name: str, claim: np.ndarray, *, config: Config, budget: Any, engine: str,
                 executor: Any, adjudicate, digits: int) -> Report:
    """``check_params(..., screen=True)`` for one name: :func:`screen` of the loss as a
    function of ``params[name]`` alone (the dict with that name replaced by the screen's
    private copy), the other parameters held at their values."""
    held = dict(params)

    def of_name(v):
        return loss({**held, name: v})

    of_name.__name__ = name
    return screen(of_name, params[name], claim, budget=budget, config=config, engine=engine,
                  executor=executor, adjudicate=adjudicate, digits=digits, name=name)
