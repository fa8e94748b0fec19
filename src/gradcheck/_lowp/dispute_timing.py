"""Timing callable candidates of ``dispute``: speed next to accuracy.

A faster kernel is only a win if it is not less accurate. Given callables, ``dispute`` calls
each once (the warm-up: compilation, caches; its output is the candidate judged), then times
them in interleaved rounds (round r times every candidate once, in turn, so that a machine
that slows down or speeds up mid-run affects all alike). A round times ``number`` calls, set
from the warm-up so that a round lasts at least :data:`MIN_ROUND_SECONDS`; the per-call time
of a round is its time divided by ``number``. ``best`` is the fastest round (the least
disturbed), ``median`` the typical one; speed ratios use the medians.
"""
from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

#: Timed rounds per candidate (after one warm-up call).
ROUNDS = 7
#: A round times enough calls to last at least this long.
MIN_ROUND_SECONDS = 0.02
#: At most this many calls per round.
MAX_NUMBER = 10_000


@dataclass(frozen=True)
class Timing:
    """Seconds per call of one callable candidate: ``best`` and ``median`` over ``rounds``
    interleaved rounds of ``number`` calls each, after one warm-up call."""

    name: str
    best: float
    median: float
    rounds: int
    number: int
    warmup: float

    def to_dict(self) -> dict[str, str | float]:
        return {"name": self.name, "best_s": self.best, "median_s": self.median,
                "rounds": self.rounds, "number": self.number, "warmup_s": self.warmup}


def run_and_time(functions: Mapping[str, Callable[..., Any]], args: tuple[object, ...], *,
                 rounds: int = ROUNDS) -> tuple[dict[str, Any], dict[str, Timing]]:
    """Each function's output (from its warm-up call on ``args``) and its :class:`Timing`.

    >>> outs, timings = run_and_time({"sum": sum}, ([1, 2, 3],), rounds=3)
    >>> outs["sum"], timings["sum"].rounds
    (6, 3)
    """
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"rounds must be a positive int, got {rounds!r}")
    outputs, warmups, numbers = {}, {}, {}
    for key, fn in functions.items():
        t0 = time.perf_counter()
        outputs[key] = fn(*args)
        warmups[key] = time.perf_counter() - t0
        once = _one_call(fn, args)
        numbers[key] = max(1, min(MAX_NUMBER, math.ceil(MIN_ROUND_SECONDS / max(once, 1e-9))))
    per_call: dict[str, list[float]] = {k: [] for k in functions}
    for _ in range(rounds):
        for key, fn in functions.items():
            n = numbers[key]
            t0 = time.perf_counter()
            for _ in range(n):
                fn(*args)
            per_call[key].append((time.perf_counter() - t0) / n)
    timings = {k: Timing(k, min(v), statistics.median(v), rounds, numbers[k], warmups[k])
               for k, v in per_call.items()}
    return outputs, timings


def _one_call(fn: Callable[..., object], args: tuple[object, ...]) -> float:
    """The time of one call after the warm-up (what sizes the rounds)."""
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def speed_lines(names: tuple[str, ...], timings: Mapping[str, Timing], broken: tuple[str, ...],
                ratio: Callable[[str, str], float], tie_ratio: float) -> list[str]:
    """One sentence per timed candidate but the slowest: how much faster than the slowest,
    and whether it is more accurate, as accurate, less accurate, or broken."""
    timed = [k for k in names if k in timings]
    if len(timed) < 2:
        return []
    base = max(timed, key=lambda k: timings[k].median)
    lines = []
    for k in timed:
        if k == base:
            continue
        speed = timings[base].median / timings[k].median if timings[k].median > 0 else math.inf
        lines.append(f"{k}: {_times(speed)} faster, {_accuracy(k, base, broken, ratio, tie_ratio)} "
                     f"(than {base}; median {_seconds(timings[k].median)} vs "
                     f"{_seconds(timings[base].median)} per call)")
    return lines


def _accuracy(k: str, base: str, broken: tuple[str, ...], ratio: Callable[[str, str], float],
              tie_ratio: float) -> str:
    if k in broken:
        return "broken"
    better, worse = ratio(k, base), ratio(base, k)
    if better >= tie_ratio:
        return "exact where the other is not" if math.isinf(better) else f"{_times(better)} more accurate"
    if worse >= tie_ratio:
        return f"{_times(worse)} less accurate" + ("" if base not in broken else f" ({base} is broken)")
    return "as accurate"


def _times(r: float) -> str:
    """3.1x, 898x, 2x: two significant digits, no trailing .0."""
    if math.isinf(r):
        return "infinitely"
    text = f"{r:.2g}" if r < 100 else f"{r:.0f}"
    if "e" in text:
        text = f"{r:.0f}"
    return f"{text}x"


def _seconds(s: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s * 1e9:.3g} ns"
