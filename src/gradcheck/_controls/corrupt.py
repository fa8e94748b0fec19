"""The planted error of the negative control: a backend whose claimed gradient is corrupted
at known entries (:data:`CORRUPTIONS`)."""
from __future__ import annotations

import numpy as np

from ..backends import Backend, Wrapping

# (multi-index, multiplicative corruption): a relative error of 1e-3 on one entry and a
# sign flip on another, so both a subtle and a gross defect must be seen.
CORRUPTIONS: tuple[tuple[tuple[int, int], float], ...] = (((1, 2), 1.0 + 1e-3), ((2, 0), -1.0))


class Corrupting(Wrapping):
    """Wraps a backend and corrupts the gradient it claims at known entries."""

    def __init__(self, inner: Backend, corruptions=CORRUPTIONS) -> None:
        self.inner = inner
        self.name = f"corrupted-{inner.name}"
        self.mp_capable = getattr(inner, "mp_capable", False)
        self.corruptions = corruptions

    def claimed_gradient(self, f, x, cotangent, grad) -> np.ndarray:
        g = np.array(self.inner.claimed_gradient(f, x, cotangent, grad), dtype=np.float64)
        for ix, factor in self.corruptions:
            g[ix] = g[ix] * factor
        return g
