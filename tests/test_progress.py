"""Progress: one updating line on a terminal for long checks, silence everywhere else."""
from __future__ import annotations

import io

import numpy as np
import pytest

from gradcheck import check
from gradcheck._differences import steps_for
from gradcheck._runtime import progress as progress_module
from gradcheck._runtime.progress import MIN_SECONDS, Progress, differences_with_progress, timed_chunks
from gradcheck.backends import NumpyBackend
from gradcheck.engines import CheckProblem, select_engine


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _run(stream, enabled, seconds_per_entry, total=100):
    clock = Clock()
    with Progress(total, enabled=enabled, stream=stream, label="f", clock=clock) as bar:
        for done in range(1, total + 1):
            clock.now += seconds_per_entry
            bar.update(done)
    return stream.getvalue()


@pytest.mark.parametrize(
    "stream, enabled, seconds_per_entry, draws",
    [
        (io.StringIO(), None, 1.0, False),      # not a terminal: silent, however long
        (Terminal(), None, 1.0, True),          # terminal, long check: draws
        (Terminal(), None, 0.001, False),       # terminal, check of 0.1 s: silent
        (Terminal(), False, 1.0, False),        # switched off
        (io.StringIO(), True, 0.001, True),     # forced: draws anywhere
    ],
    ids=["pipe-long", "tty-long", "tty-short", "off", "forced"],
)
def test_when_the_line_is_drawn(stream, enabled, seconds_per_entry, draws):
    """Auto mode draws only on a terminal and only for a check projected past
    MIN_SECONDS; True forces it, False silences it."""
    out = _run(stream, enabled, seconds_per_entry)
    assert bool(out) == draws
    if draws:
        assert out.startswith("\r") and out.endswith("\n")
        assert "100/100 entries (100%)" in out


def test_the_line_shows_count_rate_and_eta():
    """Mid-way the line gives entries done / total, the rate and the time left."""
    clock = Clock()
    bar = Progress(1000, enabled=True, stream=io.StringIO(), label="loss", clock=clock)
    clock.now = 2.0
    bar.update(250)
    assert bar.line() == "gradcheck[loss]: 250/1000 entries (25%)  125 entries/s  ETA 6.0s"


def test_redraws_are_throttled():
    """Thousands of updates within a second give a handful of redraws, not thousands."""
    out = _run(Terminal(), True, 1e-5, total=5000)
    assert out.count("\r") < 10


def test_a_shorter_line_erases_the_longer_one_before_it():
    """Each redraw pads to the previous width, so no stale characters remain."""
    stream = io.StringIO()
    clock = Clock()
    bar = Progress(10, enabled=True, stream=stream, clock=clock)
    clock.now = 1.0
    bar.update(1)
    first = stream.getvalue().split("\r")[-1]
    clock.now = 2000.0
    bar.update(9)
    second = stream.getvalue().split("\r")[-1]
    assert len(second) >= len(first)


def test_progress_rejects_other_values():
    """progress= takes None, True or False and says so."""
    with pytest.raises(ValueError, match="None"):
        Progress(3, enabled="yes")  # type: ignore[arg-type]


def test_check_is_silent_when_stderr_is_not_a_terminal(capsys):
    """The default never writes when stderr is captured or piped."""
    check(lambda x: (x**2).sum(), np.ones(5), lambda x: 2 * x)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("engine, vectorized", [("serial", False), ("batched", True), ("processes", False)])
def test_check_draws_when_forced(capsys, engine, vectorized):
    """progress=True draws the line on stderr, through every engine, ending at N/N."""
    f = lambda x: (x**2).sum(axis=-1)  # noqa: E731
    check(f, np.ones(6), lambda x: 2 * x, engine=engine, vectorized=vectorized, progress=True)
    err = capsys.readouterr().err
    assert "\r" in err and "6/6 entries (100%)" in err and err.endswith("\n")


def test_chunked_progress_changes_no_result():
    """An engine without a progress hook is driven in chunks; the results are those of
    one call, bit for bit."""
    x = np.random.default_rng(2).standard_normal(300)
    work = x.copy()
    f = lambda x: float(np.tanh(x).sum())  # noqa: E731
    problem = CheckProblem(f=f, work=work, evaluate=lambda: f(work), backend=NumpyBackend(),
                           cotangent=None)
    engine = select_engine("serial", problem)[0]
    idx, steps = np.arange(x.size), steps_for(x, 6e-6)
    want = engine.differences(idx, steps)
    stream = io.StringIO()
    with Progress(x.size, enabled=True, stream=stream) as bar:
        got = differences_with_progress(lambda i, h: engine.differences(i, h), idx, steps, bar)  # no progress hook
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)
    assert "300/300 entries" in stream.getvalue()


def test_min_seconds_is_a_couple_of_seconds():
    """'Checks expected to take more than a couple of seconds' get a bar."""
    assert 1.0 <= MIN_SECONDS <= 5.0


def test_a_long_pass_points_to_screen_in_the_line():
    """A pass projected past SCREEN_HINT_SECONDS says on its progress line that
    gradcheck.screen covers every entry in far fewer evaluations; a short one does not."""
    from gradcheck._runtime.progress import SCREEN_HINT_SECONDS

    clock = Clock()
    bar = Progress(1000, enabled=True, stream=io.StringIO(), label="f", clock=clock)
    clock.now = 2.0
    bar.update(10)  # 2 s for 1% of the entries: ~200 s in all
    assert SCREEN_HINT_SECONDS < 2.0 / 10 * 1000
    assert "gradcheck.screen" in bar.line()
    bar.update(500)  # now ~4 s in all
    assert "gradcheck.screen" not in bar.line()


def test_a_long_check_gets_a_note_about_screen(monkeypatch):
    """check's report mentions screen when its entry-wise pass took long (the threshold is
    lowered here, the rule is the same), and not otherwise."""
    import gradcheck._runtime.progress as progress

    x = np.random.default_rng(0).standard_normal(5000)
    quick = check(lambda v: float(np.sum(np.sin(v))), x, np.cos, progress=False, engine="serial")
    assert not any("gradcheck.screen" in n for n in quick.notes)
    monkeypatch.setattr(progress, "SCREEN_HINT_SECONDS", 0.0)
    slow = check(lambda v: float(np.sum(np.sin(v))), x, np.cos, progress=False, engine="serial")
    assert any("gradcheck.screen" in n for n in slow.notes)


@pytest.mark.parametrize("seconds_per_entry, sizes", [
    (0.0, [8, 64, 512, 416]),     # instant: each chunk 8x the one before (the cap), the rest last
    (1.0, [8] + [1] * 992),       # 1 s an entry against 0.2 s a chunk: one entry at a time
    (0.01, [8, 20, 20]),          # 0.2 s / 0.01 s: 20 entries a chunk
])
def test_timed_chunks_cover_every_entry_once_sized_by_the_pace(monkeypatch, seconds_per_entry, sizes):
    """The chunks of an engine that answers whole calls (progress and checkpoint alike): every
    entry once, in order; 8 first; then about CHUNK_SECONDS at the last chunk's pace, growing at
    most 8x (a fake clock: the consumer's time is ``seconds_per_entry`` per entry)."""
    clock = [0.0]
    monkeypatch.setattr(progress_module.time, "perf_counter", lambda: clock[0])
    count = sum(sizes)
    got = []
    for part in timed_chunks(count, 0.2):
        got.append(part)
        clock[0] += seconds_per_entry * (part.stop - part.start)
    assert [p.stop - p.start for p in got] == sizes
    assert [p.start for p in got] == [0] + [p.stop for p in got[:-1]] and got[-1].stop == count
    assert list(timed_chunks(0, 0.2)) == []
