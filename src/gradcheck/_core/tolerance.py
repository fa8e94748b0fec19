"""The tolerance of the verdict rule, stated once.

For an entry with claimed value ``a``, numeric value ``n`` and estimated round-off ``noise``::

    scale = max(|a|, |n|)
    floor = atol + noise_factor * noise      # what round-off alone can produce
    tol   = floor + rtol * scale             # atol + rtol*scale + k*noise

and the PASS share rule: a tolerance above ``resolution * scale`` proves too little for a
PASS (the entry is UNCHECKED). Every judge uses these: the verdict rule in numpy
(``gradcheck._classify.rule``) and its numba kernel (which takes :meth:`Tolerance.scalars`
and computes the same operations in the same order), the step study, the quick look, the
kink test, the second look, the referee and the low-precision judge. Each of them may use
its own noise term (the study's whole error bound with ``noise_factor=1``, the referee's
round-off and bound); the formula and the order of its operations are this module's.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from .config import DEFAULT_RESOLUTION, Config

#: An entry's quantity or an array of them, elementwise (np.float64 is a float).
Value = float | np.ndarray
#: The same, kept: a float in gives a float, an array an array.
V = TypeVar("V", float, np.ndarray)


@dataclass(frozen=True)
class Tolerance:
    """``atol + rtol*scale + noise_factor*noise``, and the share ``resolution`` a PASS must reach.

    >>> t = Tolerance(rtol=1e-6, atol=0.0, noise_factor=8.0)
    >>> float(t.bound(2.0, 1e-9))  # 8e-9 of round-off + 2e-6 of relative tolerance
    2.008e-06
    >>> bool(t.coarse(0.5, 1.0))  # a tolerance of half the value is no PASS
    True
    """

    rtol: float
    atol: float
    noise_factor: float
    resolution: float = DEFAULT_RESOLUTION

    @classmethod
    def of(cls, config: Config) -> Tolerance:
        """The tolerance a :class:`~gradcheck.Config` sets."""
        return cls(rtol=config.rtol, atol=config.atol, noise_factor=config.noise_factor,
                   resolution=config.resolution)

    def replace(self, **changes: Any) -> Tolerance:
        return dataclasses.replace(self, **changes)

    # -- the formula, term by term ------------------------------------------------------
    def noise_term(self, noise: V) -> V:
        """``noise_factor * noise``: the round-off forgiven."""
        return self.noise_factor * noise

    def value_term(self, scale: V) -> V:
        """``rtol * scale``: the relative part."""
        return self.rtol * scale

    def floor(self, noise: V) -> V:
        """``atol + noise_factor * noise``: what round-off alone can produce."""
        return self.atol + self.noise_term(noise)

    def bound(self, scale: Any, noise: Any) -> Any:
        """``atol + noise_factor*noise + rtol*scale``, in that order of operations."""
        return self.floor(noise) + self.value_term(scale)

    def per_entry(self, analytic: Value, numeric: Value, noise: Value) -> Any:
        """:meth:`bound` with ``scale = max(|analytic|, |numeric|)``."""
        return self.bound(np.maximum(np.abs(analytic), np.abs(numeric)), noise)

    def round_off(self, unit: float, claim_scale: float) -> float:
        """``noise_factor * unit * claim_scale``: a backward pass's own round-off at the
        claim's largest scale (what the referee forgives against an exact value)."""
        return self.noise_term(unit) * claim_scale

    def against_exact(self, scale: Value, allowance: Value) -> Any:
        """The tolerance against an exact value: :meth:`bound` with ``allowance`` (round-off
        and error bounds already scaled) as the whole noise term, ``noise_factor = 1``."""
        return self.replace(noise_factor=1.0).bound(scale, allowance)

    def coarse(self, tol: Value, scale: Value) -> bool | np.ndarray:
        """The PASS share rule: True where ``tol`` exceeds ``resolution * scale`` (the
        agreement proves too little for a PASS)."""
        return coarse(tol, scale, self.resolution)

    # -- how the other judges take it ---------------------------------------------------
    def keywords(self) -> dict[str, float]:
        """``rtol=, atol=, noise_factor=`` as the tolerance functions take them."""
        return dict(rtol=self.rtol, atol=self.atol, noise_factor=self.noise_factor)

    def rule(self) -> dict[str, float]:
        """:meth:`keywords` and ``resolution=``, as every call of ``classify`` takes them."""
        return dict(self.keywords(), resolution=self.resolution)

    def scalars(self) -> tuple[float, float, float, float]:
        """``(rtol, atol, noise_factor, resolution)`` as floats: what the numba kernel takes."""
        return float(self.rtol), float(self.atol), float(self.noise_factor), float(self.resolution)


def coarse(tol: Value, scale: Value, resolution: float) -> bool | np.ndarray:
    """The PASS share rule on its own: ``tol > resolution * scale``."""
    return tol > resolution * scale
