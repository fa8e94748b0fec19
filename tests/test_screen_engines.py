"""screen's engine="auto": the decision, from the numbers it takes, with a fake clock.

Before, auto timed one call of f before the screen and forked a pool when one batch of the
16-block top level (96 evaluations) times that call passed 1 s: a single descheduled call
of a 30-microsecond f (30 ms on a loaded machine) forked a pool for the whole screen, re-cut
included, and the screen ran 10x slower than serial. Now screen's auto runs f in
process while it times it, decides at each large batch from the median over the runs so far,
counts what a pool costs, and closes a pool whose first batch was no faster. That chooser is
the evaluation layer's :class:`~gradcheck._evaluate.Adaptive` (``auto_choice`` is its
:func:`~gradcheck._evaluate.batch_choice`), under the screen's engine.
"""
from __future__ import annotations

import multiprocessing

import numpy as np
import pytest

import gradcheck
from gradcheck._core.config import Config
from gradcheck._evaluate import Adaptive, Points, SerialRunner
from gradcheck._evaluate import auto as _auto
from gradcheck._evaluate import batch_choice as auto_choice
from gradcheck._screen import prepare_flat
from gradcheck._screen._engines import Engine

TOP_BATCH = 16 * 2 * 3  # one draw of the default top level: 16 blocks x 3 steps x 2 sides


class FakeTime:
    """A clock that moves only when f runs (``cost`` seconds a call) or when told to."""

    def __init__(self) -> None:
        self.now, self.cost = 0.0, 3e-5

    def __call__(self) -> float:
        return self.now


class Probe:
    """What the tests read of the screen's set-up: its prepared f, the work array, the clock."""

    def __init__(self, clock: FakeTime) -> None:
        work = np.linspace(-1.0, 1.0, 64)

        def f(w):
            clock.now += clock.cost
            return float(np.sum(w ** 2))

        self.prep = prepare_flat(f, work, 2 * work, Config.for_dtype("float64"), "f", f(work), 2.0**-53)
        self.target = self.prep.target
        self.flat = work
        self.clock = clock


def fake_probe(clock: FakeTime) -> Probe:
    return Probe(clock)


def jobs(count: int, probe: Probe) -> list[tuple[np.ndarray, np.ndarray]]:
    idx = np.arange(4)
    return [(idx, probe.flat[idx] + 1e-3 * (k + 1)) for k in range(count)]


def run_jobs(probe: Probe, work) -> np.ndarray:
    """The jobs run serially on the layer (what the screen's serial engine runs)."""
    return SerialRunner(probe.target).run(work if isinstance(work, Points) else Points.of_blocks(work))


class FakePool:
    """Stands for the fork pool: records that it was made, runs the jobs in process, and
    takes ``per_eval`` seconds of the fake clock per evaluation."""

    made: list[FakePool] = []
    per_eval = 0.0

    def __init__(self, probe: Probe) -> None:
        self.probe, self.closed, self.name = probe, False, "processes"
        FakePool.made.append(self)

    def run(self, work, progress=None):
        clock = self.probe.clock
        before, cost = clock.now, clock.cost
        clock.cost = 0.0
        try:
            values = run_jobs(self.probe, work)
        finally:
            clock.cost, clock.now = cost, before + self.per_eval * len(work)
        return values

    def close(self, terminate: bool = False) -> None:
        self.closed = True


@pytest.fixture
def engine(monkeypatch):
    FakePool.made, FakePool.per_eval = [], 0.0
    monkeypatch.setattr(_auto, "usable_cores", lambda: 2)
    monkeypatch.setattr(_auto, "fork_available", lambda: True)
    monkeypatch.setattr(_auto, "fork_hazard", lambda: None)
    clock = FakeTime()
    probe = fake_probe(clock)  # its clock: for FakePool
    auto = Adaptive(probe.target, fork_safe=True, clock=clock, make=lambda name: FakePool(probe))
    return Engine(auto, probe.prep), clock, probe


def calibrate(eng: Engine, clock: FakeTime, probe: Probe, spike: float = 0.0) -> None:
    """The step search's 14 runs of two evaluations; the first one descheduled for ``spike`` s."""
    for k in range(14):
        clock.now += spike if k == 0 else 0.0
        eng.run(jobs(2, probe))


def test_the_decision_by_its_numbers():
    """A cheap f (30 us a call) stays serial at the top level's batch and at a 4x re-cut's;
    the old rule's input (one descheduled call, 30 ms) would have forked; a costly f forks,
    unless no pool applies; an @njit f goes to the compiled kernel from 0.5 s a batch."""
    for batch in (TOP_BATCH, 4 * TOP_BATCH):
        assert auto_choice(3e-5, batch, cores=2, compiled=False, fork_ok=True)[0] == "serial"
    assert auto_choice(0.03, TOP_BATCH, cores=2, compiled=False, fork_ok=True)[0] == "processes"  # the old input
    assert auto_choice(0.1, TOP_BATCH, cores=2, compiled=False, fork_ok=True)[0] == "processes"
    assert auto_choice(0.1, TOP_BATCH, cores=2, compiled=False, fork_ok=False)[0] == "serial"
    assert auto_choice(0.01, TOP_BATCH, cores=2, compiled=True, fork_ok=True)[0] == "compiled"
    assert auto_choice(1e-4, TOP_BATCH, cores=2, compiled=True, fork_ok=True)[0] == "serial"


def test_one_descheduled_call_does_not_fork_for_a_cheap_f(engine):
    """The first timed run is descheduled for 30 ms (what the old rule saw as f's cost); the
    median over the step search's runs is f's 30 us: the top level and a 4x re-cut stay
    serial, no pool is made, and the note gives the numbers."""
    eng, clock, probe = engine
    calibrate(eng, clock, probe, spike=0.06)
    eng.run(jobs(TOP_BATCH, probe))
    eng.run(jobs(4 * TOP_BATCH, probe))
    assert eng.name == "serial" and FakePool.made == []
    assert "3e-05 s each" in eng.why and "median of 15 timed runs" in eng.why


def test_a_costly_f_forks_at_the_batch_that_pays_and_keeps_a_pool_that_is_faster(engine):
    """20 ms a call: the top level (96 evaluations, ~1.9 s) forks; the pool's first batch took
    11 ms per evaluation (< 0.8 x 20 ms): kept for the rest."""
    eng, clock, probe = engine
    clock.cost = 0.02
    calibrate(eng, clock, probe)
    assert FakePool.made == []  # the step search's pairs never fork
    FakePool.per_eval = 0.011
    eng.run(jobs(TOP_BATCH, probe))
    assert eng.name == "processes" and len(FakePool.made) == 1 and not FakePool.made[0].closed
    eng.run(jobs(TOP_BATCH, probe))
    assert len(FakePool.made) == 1 and eng.name == "processes"


def test_a_re_cut_is_decided_on_its_own_batch(engine):
    """5 ms a call: the 16-block top level (~0.5 s) stays serial; the 4x re-cut's batch
    (~1.9 s on one core) is decided again and forks."""
    eng, clock, probe = engine
    clock.cost = 0.005
    calibrate(eng, clock, probe)
    eng.run(jobs(TOP_BATCH, probe))
    assert eng.name == "serial"
    FakePool.per_eval = 0.003
    eng.run(jobs(4 * TOP_BATCH, probe))
    assert eng.name == "processes" and "a batch of 384" in eng.why


def test_a_pool_no_faster_is_closed_and_never_forked_again(engine):
    """20 ms a call, but the pool's first batch took 25 ms per evaluation (no idle core, or
    f's BLAS threads fighting the workers'): it is closed, the screen goes on in process,
    the values are the pool's (the same bits), and no second pool is made."""
    eng, clock, probe = engine
    clock.cost = 0.02
    calibrate(eng, clock, probe)
    FakePool.per_eval = 0.025
    batch = jobs(TOP_BATCH, probe)
    values = eng.run(batch)
    assert np.array_equal(values, run_jobs(probe, batch))
    assert eng.name == "serial" and FakePool.made[0].closed and "no faster" in eng.why
    eng.run(jobs(4 * TOP_BATCH, probe))
    assert len(FakePool.made) == 1 and eng.name == "serial"


def test_the_budget_re_cut_of_a_cheap_f_runs_in_process():
    """The case that forked: a tanh layer 64x64 at rtol=1e-12, budget 2000 (a 16-block cut,
    then a 64-block re-cut tried); f takes ~30 us. engine='auto' runs it all in process, and
    the report's note says what the decision took."""
    rng = np.random.default_rng(0)
    A, B, W = (rng.standard_normal((64, 64)) * 4 for _ in range(3))
    f = lambda w: np.sum(np.tanh(A @ w) * B)  # noqa: E731
    g = A.T @ ((1 - np.tanh(A @ W) ** 2) * B)
    r = gradcheck.screen(f, W, g, config=gradcheck.Config(rtol=1e-12), complex_step=False, exact=False,
                         budget=2000)
    assert "re-cut from 16" in str(r) and r.engine == "screen/serial"
    assert multiprocessing.active_children() == []
    assert any(n.startswith("serial: a batch of") and "median of" in n for n in r.notes), r.notes


def test_auto_choice_examples_run():
    """The docstring examples of auto_choice, now the layer's batch_choice in _evaluate.auto
    (not in test_doctests' list, which other work edits)."""
    import doctest

    result = doctest.testmod(_auto)
    assert result.attempted >= 2 and result.failed == 0
