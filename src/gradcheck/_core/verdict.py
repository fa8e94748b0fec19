"""Per-entry verdicts."""
from __future__ import annotations

import enum


class Verdict(enum.IntEnum):
    """What a check concluded about one entry of a gradient.

    Attributes
    ----------
    PASS
        The claimed and numeric values agree within tolerance, and that tolerance is at most
        ``Config.resolution`` (1%) of the value: the claim is within 1% of the numeric value.
    MISMATCH
        They disagree by more than tolerance plus noise, at any magnitude.
    UNCHECKED
        They agree only within a tolerance that is a large share of the value, or both are
        indistinguishable from finite-difference noise: absence of evidence, said out loud
        (e.g. a true gradient of exactly 0).
    NONFINITE
        An input, an evaluation or the claimed value was NaN or infinite.
    KINK
        The one-sided derivatives differ: a non-differentiable point, where the claimed value
        is a subgradient choice rather than a bug.
    SKIPPED
        Not examined, because sampling was asked for.
    SCREENED
        Cleared by :func:`gradcheck.screen` as part of blocks whose directional derivatives
        agree, never looked at alone: not a PASS (that is an entry-wise result);
        ``report.detection_limit`` says what could escape.

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> wrong = lambda x: 2 * x + np.array([0.0, 0.0, 1.0])   # the last entry is off
    >>> r = gradcheck.check(lambda x: (x**2).sum(), np.array([1.0, 0.5, 2.0]), wrong)
    >>> [str(v) for v in r.verdicts]
    ['PASS', 'PASS', 'MISMATCH']
    >>> r.entries(gradcheck.Verdict.MISMATCH)
    [(2,)]
    """

    PASS = 0
    MISMATCH = 1
    UNCHECKED = 2
    NONFINITE = 3
    KINK = 4
    SKIPPED = 5
    SCREENED = 6  # screening (gradcheck._screen)

    def __str__(self) -> str:
        return self.name


#: Verdicts that make a check fail.
FAILING = (Verdict.MISMATCH, Verdict.NONFINITE)


class Cause(enum.IntEnum):
    """How an entry's verdict was reached (``report.cause(index)``).

    Attributes
    ----------
    FIRST_PASS
        The first central difference settled it.
    STEP_RETRY
        The default step left f's domain (NaN/inf); a smaller step was used.
    STEP_STUDY
        Re-differenced at h/2 ... 16h with Richardson extrapolation.
    KINK_STEPS
        One-sided slopes differ by a gap that does not shrink with the step.
    EXACT
        Judged against the exact derivative (arbitrary precision).
    EXACT_ZERO
        The exact derivative is 0 and the claim is within round-off of it.
    KINK_EXACT
        One-sided derivatives at arbitrary precision differ: a certified kink.
    BUDGET
        UNCHECKED because the second look's budget (``Config.second_look``) ran out before
        this entry: its first pass agreed only within f's round-off, not to ``rtol``.

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> r = gradcheck.check(lambda x: (x**2).sum(), np.array([1.0, 0.0]), lambda x: 2 * x)
    >>> r.cause((0,)), r.cause((1,))
    (<Cause.FIRST_PASS: 0>, <Cause.EXACT_ZERO: 5>)
    """

    FIRST_PASS = 0
    STEP_RETRY = 1
    STEP_STUDY = 2
    KINK_STEPS = 3
    EXACT = 4
    EXACT_ZERO = 5
    KINK_EXACT = 6
    BUDGET = 7

    def __str__(self) -> str:
        return self.name.lower().replace("_", " ")
