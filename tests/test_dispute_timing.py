"""Callable candidates are timed: speed next to accuracy, and a record for benchmark suites."""
from __future__ import annotations

import json
import re
import time

import numpy as np
import pytest

from gradcheck import dispute
from gradcheck._core.formats import BFLOAT16, round_to_format
from gradcheck._lowp.dispute_timing import run_and_time

X = round_to_format(np.linspace(-4, 4, 512), BFLOAT16, as_dtype=True)


def bf(y) -> np.ndarray:
    return round_to_format(np.asarray(y, dtype=np.float64), BFLOAT16, as_dtype=True)


def fast_exp(x):
    """Vectorized float32 exp, rounded once: accurate and fast."""
    return bf(np.exp(x.astype(np.float32)))


def slow_sloppy_exp(x):
    """Element by element in Python, through two bfloat16 roundings: slower, less accurate."""
    out = np.empty(x.shape)
    for i, v in enumerate(x.astype(np.float64)):
        half = float(bf(np.exp(v / 2)))
        out[i] = half * half
    time.sleep(0.002)
    return bf(out)


def fast_broken_exp(x):
    """Fast, but a wrong constant: broken."""
    return bf(np.exp(x.astype(np.float32)) * np.float32(1.02))


def test_run_and_time_interleaves_rounds_and_keeps_the_warmup_output():
    calls = []
    outs, timings = run_and_time({"a": lambda v: calls.append("a") or v + 1,
                                  "b": lambda v: calls.append("b") or v * 2}, (3,), rounds=4)
    assert outs == {"a": 4, "b": 6}
    t = timings["a"]
    assert t.rounds == 4 and t.number >= 1 and 0 < t.best <= t.median
    # after the warm-up and sizing calls, rounds alternate a-block, b-block
    rounds = calls[4:]
    na, nb = timings["a"].number, timings["b"].number
    assert rounds == (["a"] * na + ["b"] * nb) * 4
    with pytest.raises(ValueError, match="rounds must be a positive int"):
        run_and_time({"a": abs}, (1,), rounds=0)


def test_a_faster_and_more_accurate_kernel():
    r = dispute(np.exp, (X,), {"fast": fast_exp, "slow": slow_sloppy_exp}, "bfloat16", rounds=3)
    assert set(r.timings) == {"fast", "slow"}
    speed = r.timings["slow"].median / r.timings["fast"].median
    assert speed > 2
    line = next(s for s in r.verdict.splitlines() if s.startswith("fast:"))
    assert re.match(r"fast: [\d.]+x faster, [\d.]+x more accurate \(than slow; median", line), line
    assert "median" in r.table() and "best" in r.table()
    rec = r.benchmark_record()
    json.dumps(rec)  # JSON-able
    assert rec["baseline"] == "slow" and rec["candidates"]["fast"]["speedup"] == pytest.approx(speed)
    assert rec["candidates"]["fast"]["accuracy_ratio"] == pytest.approx(r.ratio("fast", "slow"))
    assert rec["candidates"]["fast"]["broken"] is False


def test_a_faster_but_broken_kernel_says_broken():
    reference = bf(np.exp(X.astype(np.float64)))  # an array candidate: judged, not timed
    r = dispute(np.exp, (X,), {"fast": fast_broken_exp, "slow": slow_sloppy_exp, "ref": reference},
                "bfloat16", rounds=3)
    assert "fast" in r.broken and "ref" not in r.timings
    assert re.search(r"^fast: [\d.]+x faster, broken \(than slow", r.verdict, re.MULTILINE), r.verdict
    rec = r.benchmark_record()
    assert rec["candidates"]["fast"]["broken"] is True and rec["candidates"]["ref"]["median_s"] is None
    # without callables nothing is timed and the verdict has no speed line
    plain = dispute(np.exp, (X,), {"ref": reference}, "bfloat16")
    assert not plain.timings and "faster" not in plain.verdict and "median" not in plain.table()
