"""Stage 3 of ``check``, sanity: after the first pass, is ``f`` deterministic, and did it
leave its input alone? (Cheap: one more evaluation, a few more for a nondeterministic f.)"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._core.arrays import same_bits
from .._core.errors import mutation_error
from .._evaluate import at_x
from .prepare import Subject

#: Extra evaluations of a nondeterministic f at x that measure its spread (counted as noise).
DRIFT_SAMPLES = 6


@dataclass
class Sanity:
    deterministic: bool
    f1: float                    # f at x again, after the first pass
    drift: float                 # the spread of f at x (0 when deterministic)
    evaluations: int

    @property
    def drift_per_entry(self) -> float | None:
        """The drift to count as noise in every entry (None: deterministic)."""
        return None if self.deterministic else self.drift


def sanity(subject: Subject) -> Sanity:
    """Evaluate ``f`` at ``x`` once more; raise :class:`InputMutationError` if ``f`` wrote
    into its input; measure the spread of a nondeterministic ``f``."""
    f0 = subject.f0
    f1 = at_x(subject.evaluate)  # f raising at x now: a FunctionError at the unperturbed input
    if not same_bits(subject.work, subject.pristine):
        raise mutation_error(subject.label)
    deterministic = bool(f1 == f0 or (np.isnan(f1) and np.isnan(f0)))
    if deterministic:
        return Sanity(True, f1, 0.0, 1)
    # One pair of calls often understates a noisy f's spread (|f1-f0| is below 1/8 of
    # a typical |f(x+h)-f(x-h)| noise 8% of the time: false MISMATCHes on a correct
    # gradient); the range of a few more calls bounds it.
    spread = [f0, f1] + [at_x(subject.evaluate) for _ in range(DRIFT_SAMPLES)]
    drift = float(np.max(spread) - np.min(spread))  # NaN if any call gave NaN, as before
    return Sanity(False, f1, drift, 1 + DRIFT_SAMPLES)
