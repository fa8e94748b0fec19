"""The cost plan of a check, said before the work: evaluations and time, and a faster call.

Before the first pass, ``check`` estimates its evaluations: the 2N of the first pass, and
the second look's, predicted from the claim alone. An entry whose tolerance will be mostly
round-off (``k * u * 2|f(x)| / 2h`` above ``rtol * |a|``: f's value large against its
slopes) gets the quick look (4 evaluations) and, when that cannot certify it, the study's 6
more; one whose round-off passes the resolution is UNCHECKED and gets the full study (10).
The second look never spends more than its budget (:mod:`gradcheck._refine.budget`), so the
plan's upper bound is ``2N + budget`` besides the MISMATCH studies. Time is the measured
call of f (``check``'s own f(x), or the engine choice's timing) times the evaluations,
divided by the engine's parallelism.

The plan is said on the progress line's header on a terminal, and through :mod:`logging`
(logger ``"gradcheck"``) otherwise: at INFO, or at WARNING when it passes
:data:`LONG_SECONDS` (Python's last-resort handler then prints it on stderr even when
nothing configured logging), naming the faster calls that fit. Silence it with
``logging.getLogger("gradcheck").setLevel(logging.ERROR)``.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from .._differences import modelled
from .._refine import budget as _budget

log = logging.getLogger("gradcheck")

#: A plan longer than this (seconds) is logged at WARNING and names the faster calls.
LONG_SECONDS = 30.0
#: One evaluation of f at the referee's 30 digits against one in float64 (numpy on object
#: arrays): measured 0.21 s against 0.12 ms for ``sin(x) * w`` at 10^4 entries (1,700x).
MP_SLOWDOWN = 1500.0
#: High-precision evaluations per entry the referee settles alone (two precisions, five points each, and more).
REFEREE_EVALUATIONS = 20
#: Share of the noisy PASS entries the quick look is expected not to certify (measured on the
#: 10,000-entry sum in tests/test_cost.py: 6%; taken large so the estimate errs high).
QUICK_LEFTOVER = 0.15


@dataclass(frozen=True)
class CostPlan:
    """The evaluations a check expects and may make, and how long they should take."""

    entries: int
    spent: int                 # evaluations already made (f(x), probes, the engine's timing)
    first: int                 # the first pass: 2N
    second: int                # the second look, expected (no MISMATCH assumed)
    second_limit: int | None   # its budget (None: unbounded)
    call_seconds: float | None  # one evaluation of f, measured
    parallel: int = 1          # evaluations at once (the engine's threads or workers)
    hint: str | None = None
    referee: bool = False      # the referee may settle entries in doubt (not in the counts: how many is unknown)

    @property
    def evaluations(self) -> int:
        """Expected evaluations in all."""
        return self.spent + self.first + self.second

    @property
    def seconds(self) -> float | None:
        if self.call_seconds is None:
            return None
        return self.evaluations * self.call_seconds / max(1, self.parallel)

    def text(self, label: str = "") -> str:
        """The plan in one line."""
        name = f"gradcheck[{label}]" if label else "gradcheck"
        limit = "unbounded" if self.second_limit is None else f"at most {self.second_limit:,}"
        text = (f"{name}: plan: ~{self.evaluations:,} evaluations of f for {self.entries:,} entries "
                f"(first pass {self.first:,}, second look ~{self.second:,}, {limit})")
        call, seconds = self.call_seconds, self.seconds
        if call is not None and seconds is not None:
            each = f"{call * 1e3:.3g} ms each" + (
                f", {self.parallel} at once" if self.parallel > 1 else "")
            text += f", ~{_duration(seconds)} ({each})"
            if self.referee:
                per = REFEREE_EVALUATIONS * MP_SLOWDOWN * call
                text += (f"; plus ~{_duration(per)} per entry in doubt the referee settles at 30 digits "
                         "(at most 256; adjudicate=False skips it)")
        return text + (f"; faster: {self.hint}" if self.hint else "")


def plan_cost(analytic: np.ndarray, steps: np.ndarray, f0: float, unit: float, cfg, *, spent: int,
              call_seconds: float | None, parallel: int = 1, output_ndim: int = 0, referee: bool = False) -> CostPlan:
    """The plan of an entry-wise check of ``analytic.size`` entries (``steps``: their steps;
    ``f0``: the differenced scalar at x; ``unit``: its round-off; ``cfg``: the Config)."""
    n = int(analytic.size)
    limit = _budget.allowance(n, cfg.second_look) if cfg.refine and cfg.refine_noisy else None
    second = 0
    if cfg.refine and cfg.refine_noisy and n and np.isfinite(f0):
        a = np.abs(np.asarray(analytic, dtype=np.float64).reshape(-1))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            # THE round-off model, f(x +- h) ~ f(x): k u (|f0| + |f0|) / 2h
            noise = modelled(cfg.noise_factor * unit, (f0, f0), 2.0 * np.asarray(steps, dtype=np.float64))
            noisy = noise > cfg.rtol * a
            coarse = noise > cfg.resolution * a
        passes, unchecked = int((noisy & ~coarse).sum()), int(coarse.sum())
        second = int(passes * (_budget.QUICK_COST + QUICK_LEFTOVER * _budget.REST_COST)
                     + unchecked * _budget.STUDY_COST)
        if limit is not None:
            second = min(second, limit)
    plan = CostPlan(n, spent, 2 * n, second, limit, call_seconds, parallel, referee=referee)
    seconds = plan.seconds
    if seconds is not None and seconds > LONG_SECONDS:
        plan = CostPlan(n, spent, 2 * n, second, limit, call_seconds, parallel, faster_calls(n, output_ndim), referee)
    return plan


def faster_calls(entries: int, output_ndim: int) -> str:
    """The calls that cover every entry in fewer evaluations, for a long plan."""
    levels = max(1, int(np.ceil(np.log2(max(entries, 256) / 128))))
    calls = [f"gradcheck.screen(f, x, grad) covers every entry in ~230 evaluations (+~{6 * levels} per "
             "bad entry it localizes) with a stated detection limit"]
    axes = "independent_axes=(0,)" if output_ndim else "independent_axes (for an array-valued f)"
    calls.append(f"check(..., {axes}) when f's output is computed slice by slice: 2 evaluations per "
                 "entry of one slice, every entry judged")
    calls.append("engine='compiled' for an @njit f, or vectorized=True for an f that takes a batch axis")
    return "; ".join(calls)


def announce(plan: CostPlan, label: str, *, on_terminal: bool) -> str | None:
    """Say the plan: returned as the progress line's header when the line is drawn on a
    terminal (logged at INFO too), else logged (WARNING when long)."""
    text = plan.text(label)
    long = plan.seconds is not None and plan.seconds > LONG_SECONDS
    log.log(logging.WARNING if long and not on_terminal else logging.INFO, text)
    return text if on_terminal else None


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.2g} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
