"""Why an entry has the verdict it has: the second look that settled it, if any."""
from __future__ import annotations

import enum


class Cause(enum.IntEnum):
    """How an entry's verdict was reached.

    ``FIRST_PASS``   the first central difference settled it.
    ``STEP_RETRY``   the default step left f's domain (NaN/inf); a smaller step was used.
    ``STEP_STUDY``   re-differenced at h/2 ... 16h with Richardson extrapolation.
    ``KINK_STEPS``   one-sided slopes differ by a gap that does not shrink with the step.
    ``EXACT``        judged against the exact derivative (arbitrary precision).
    ``EXACT_ZERO``   the exact derivative is 0 and the claim is within round-off of it.
    ``KINK_EXACT``   one-sided derivatives at arbitrary precision differ: a certified kink.
    """

    FIRST_PASS = 0
    STEP_RETRY = 1
    STEP_STUDY = 2
    KINK_STEPS = 3
    EXACT = 4
    EXACT_ZERO = 5
    KINK_EXACT = 6

    def __str__(self) -> str:
        return self.name.lower().replace("_", " ")
