"""A check's overall status, and when a test may accept it: the rule in one place.

Per entry, a check says PASS, MISMATCH, UNCHECKED, KINK, NONFINITE or SKIPPED. Overall:

``FAIL``          something is wrong: a MISMATCH or NONFINITE entry, or a nondeterministic
                  ``f``. FAIL wins over everything else.
``INCONCLUSIVE``  nothing is wrong, but no entry could be verified: not one PASS among the
                  checked entries (all UNCHECKED, all at kinks, or a sample that verified
                  nothing). Absence of evidence is not a pass.
``PASS``          nothing is wrong, and at least one entry was verified (the other entries may
                  be UNCHECKED or KINK: each is reported as such).

Edge cases, decided here:

* A 0-entry tensor is ``PASS``: there is no entry whose claim could be wrong, so nothing is
  left unverified (a model with an empty parameter must not turn inconclusive for it).
* Every checked entry at a kink is ``INCONCLUSIVE``: a claim between the one-sided
  derivatives is a valid subgradient, but no derivative was verified.
* With sampling, the SKIPPED entries verify nothing: a sample whose entries are all
  UNCHECKED is ``INCONCLUSIVE``.
* A PASS settled by the referee against an exact 0 (a key bias) is verified: it counts.
* A SCREENED entry (``gradcheck.screen``) is verified down to its stated detection limit:
  it counts, so a screen that cleared every entry is ``PASS``, not ``INCONCLUSIVE``.

Composite reports (several inputs, a model's parameters, a shape sweep) combine their parts:
FAIL if any part fails, else INCONCLUSIVE if any part verified nothing, else PASS. One part
that verified nothing makes the whole inconclusive: a model check must not say a plain PASS
when the gradient of one of its parameters was never verified.

``allow_unchecked`` (``assert_pass`` and the pytest marker) says what a test accepts:

``None`` (default)  PASS only: UNCHECKED entries beside verified ones are fine, a check that
                    verified nothing fails.
``True``            PASS or INCONCLUSIVE: for a test that knows its check cannot resolve.
``False``           PASS without a single UNCHECKED entry.

FAIL is never accepted.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from .config import UNIT_ROUNDOFF
from .tolerance import Tolerance
from .verdict import FAILING, Verdict

PASS, FAIL, INCONCLUSIVE = "PASS", "FAIL", "INCONCLUSIVE"
#: The headline of a report that verified nothing.
NOTHING_VERIFIED = "no entry could be verified"
#: How to make a test accept an inconclusive check, said wherever it is refused.
ACCEPT_HINT = "allow_unchecked=True accepts it in a test that expects this"
_LOW_PRECISION = ("float32", "float16", "bfloat16")


class PassedAsTruth:
    """A result used as a condition means its verdict: ``bool(result)`` is ``result.passed``.

    So ``assert gradcheck.check(f, x, wrong)`` fails, and pytest's message shows the
    result's ``repr`` (its one-line summary: the status and the counts); FAIL and
    INCONCLUSIVE are both false, as ``passed`` is. Every result type of gradcheck mixes
    this in (the one rule); ``.assert_pass()`` still says more (the table, the way out).
    """

    __slots__ = ()

    def __bool__(self) -> bool:
        return bool(getattr(self, "passed"))  # noqa: B009  (the mixin declares no such attribute)


def status_of(counts: dict[Verdict, int], size: int, deterministic: bool = True) -> str:
    """The status of one report from its verdict counts (see the module docstring)."""
    if not deterministic or any(counts[v] for v in FAILING):
        return FAIL
    if size and not (counts[Verdict.PASS] or counts.get(Verdict.SCREENED, 0)):
        return INCONCLUSIVE
    return PASS


def combine(statuses: Iterable[str]) -> str:
    """The status of a composite report: FAIL wins, then INCONCLUSIVE, else PASS."""
    seen = set(statuses)
    if FAIL in seen:
        return FAIL
    return INCONCLUSIVE if INCONCLUSIVE in seen else PASS


def validate_allow_unchecked(allow_unchecked: object) -> bool | None:
    """``allow_unchecked`` as given, if it is None, True or False; else a clear error."""
    if allow_unchecked is None or isinstance(allow_unchecked, bool):
        return allow_unchecked
    raise TypeError(
        f"allow_unchecked must be None (default: a check that verified nothing fails), True (accept "
        f"it) or False (fail on any UNCHECKED entry); got {allow_unchecked!r}"
    )


def refusal(status: str, unchecked: int, allow_unchecked: bool | None) -> str | None:
    """Why a test must not accept a check with this status, or None if it may."""
    allow_unchecked = validate_allow_unchecked(allow_unchecked)
    if status == FAIL:
        return "gradient check failed"
    if status == INCONCLUSIVE and allow_unchecked is not True:
        return f"gradient check inconclusive: {NOTHING_VERIFIED} ({ACCEPT_HINT})"
    if allow_unchecked is False and unchecked:
        return f"gradient check has {unchecked} UNCHECKED entries, and allow_unchecked=False refuses any"
    return None


def why_nothing_verified(report: Any) -> tuple[str, str]:
    """``(why, way_out)`` for a report that verified nothing, from its own numbers."""
    c = report.counts
    why, ways = [], []
    if c[Verdict.UNCHECKED]:
        low = _low_precision_output(report)
        unchecked = report.codes == Verdict.UNCHECKED
        scale = np.maximum(np.abs(report.analytic), np.abs(report.numeric))[unchecked]
        floor = Tolerance.of(report.config).noise_term(report.noise[unchecked])
        figures = (f"noise floor {report.config.noise_factor:g}*noise: median {_median(floor):.2g}, "
                   f"against values of median {_median(scale):.2g}")
        inner = getattr(report, "measured_roundoff", None)
        if low is None and inner is not None:
            why.append(f"f computes in lower precision than its {report.output_dtype or report.dtype} output "
                       f"suggests (its round-off, measured, is {inner:.2g}*|f|, {_nearest_format(inner)}), "
                       f"and that round-off swamps the slope at every entry ({figures})")
            ways.append("let f compute in float64 (no cast to a lower precision inside it)")
        elif low is not None:
            why.append(f"f returns {low}, and its round-off swamps the slope at every entry ({figures})")
            ways.append(f"upcast the input or let f compute and return float64 (no cast to {low})")
        else:
            why.append(f"finite-difference round-off leaves no entry resolved ({figures}): f's "
                       "round-off swamps its slope, or the gradient is ~0 here")
            ways.append("check at a point where the gradient is not ~0; let the referee settle it "
                        "(numpy code that runs at arbitrary precision, adjudicate='auto')")
        ways.append("a larger step (config=Config(step=...))")
    if c[Verdict.KINK]:
        why.append(f"{c[Verdict.KINK]} entries sit at kinks, where any claim between the one-sided "
                   "derivatives is a valid subgradient")
        ways.append("check at points off the kinks")
    if c[Verdict.SKIPPED]:
        why.append(f"only {report.size - c[Verdict.SKIPPED]} of {report.size} entries were sampled")
        ways.append("check more entries (sample=None checks all)")
    ways.append(ACCEPT_HINT)
    return "; ".join(why), "; ".join(ways)


def coarser(output_dtype: str, dtype: str) -> bool:
    """Whether ``output_dtype`` rounds more coarsely than ``dtype`` (unknown names: no)."""
    return UNIT_ROUNDOFF.get(output_dtype, 0.0) > UNIT_ROUNDOFF.get(dtype, 1.0)


def _low_precision_output(report: Any) -> str | None:
    """The output dtype if f's low-precision output is why its entries are UNCHECKED: in
    float64 the claimed values would stand well above the noise (at most entries)."""
    out = getattr(report, "output_dtype", "")
    if out not in _LOW_PRECISION:
        return None
    unchecked = report.codes == Verdict.UNCHECKED
    finer = Tolerance.of(report.config).noise_term(report.noise[unchecked]) * (UNIT_ROUNDOFF["float64"] / UNIT_ROUNDOFF[out])
    above = np.abs(report.analytic[unchecked]) > finer
    return out if above.mean() >= 0.5 else None


def _nearest_format(unit: float) -> str:
    """``"about float32's"`` for a measured unit round-off near one format's, else a comparison."""
    name, u = min(UNIT_ROUNDOFF.items(), key=lambda kv: abs(np.log(kv[1] / unit)))
    return f"about {name}'s" if 0.25 <= unit / u <= 4 else f"{unit / u:.2g} times {name}'s"


def _median(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(np.median(finite)) if finite.size else float("nan")
