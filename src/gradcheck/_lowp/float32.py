"""float32 inputs: which of the two float32 checks applies, and the claim's own rounding.

A float32 input meets one of two functions:

- **precision-generic** ``f`` (numpy code: float64 in, float64 out, float64 inside). Then
  :mod:`gradcheck._lowp.plan` differences the exactly-upcast input in float64 (relative
  error ~1e-10) and judges the float32 claim against the float32 rounding of the claim
  itself, *measured*: the claimed gradient is computed a second time at the float64 upcast
  (``grad(x64)``; a framework differentiates in float64), and ``|a32 - a64|`` is, entry by
  entry, what float32 arithmetic did to the claim. A wrong formula is wrong in both, so
  that difference never hides a bug; it does hide an entry that float32 rounding itself
  ruins (a layer-norm backward cancelling large terms), which is then UNCHECKED, never
  PASS. The rule::

      tol_i = bound_ulps * ulp32(max(|a_i|, |n_i|)) + ROUNDING_FACTOR * |a32_i - a64_i| + k * noise_i

  with :data:`F32_BOUND_ULPS` and a PASS share of :data:`F32_RESOLUTION` (2**-18, 3.8e-6):
  a claim 1e-5 off is never a PASS. When the claim cannot be recomputed in float64 (an
  array claim, a ``grad`` that returns float32 for a float64 input) the bfloat16 rule's
  absolute floor ``FLOOR_UNITS * u * max |claim|`` replaces the measured rounding.

- **forced-float32** ``f`` (``astype(np.float32)`` inside, a numba/C float32 kernel: it
  rounds whatever it is given to float32). Detected by :func:`forces_float32`; the check
  then differences in float32 with a step and an extrapolation chosen for float32
  (:mod:`gradcheck._lowp.f32steps`).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..backends import Backend

__all__ = ["F32_BOUND_ULPS", "F32_RESOLUTION", "ROUNDING_FACTOR", "CountedCalls", "claim_rounding", "forces_float32"]

#: Slack, in float32 ulps, beyond the measured rounding of a float32 claim.
F32_BOUND_ULPS = 4.0
#: A float32 claim PASSes only with its tolerance within this share of the value (2**-17).
F32_RESOLUTION = 2.0 ** -18
#: The measured rounding |a32 - a64| is one draw of the claim's float32 error: counted twice.
ROUNDING_FACTOR = 2.0

class CountedCalls:
    """``evaluate(g, v)``: ``backend.evaluate(g, v)``, counted in :attr:`calls` before the call
    (a call that raises was made too): how the plans' probes call ``f``."""

    def __init__(self, backend: Backend) -> None:
        self.backend, self.calls = backend, 0

    def __call__(self, g: Callable[..., object], v: np.ndarray) -> np.ndarray:
        self.calls += 1
        return self.backend.evaluate(g, v)


#: Relative nudge of the float32 input, a sixteenth of a float32 ulp at most: a function that
#: rounds its input to float32 sees the same input; a float64 computation sees it move.
_NUDGE = 2.0 ** -28


def forces_float32(f: Callable[..., object], x64: np.ndarray, y64: object,
                   evaluate: Callable[[Callable[..., object], np.ndarray], object]) -> bool:
    """Whether ``f`` computes in float32 whatever it is given, although it returned float64.

    ``x64`` holds float32 values exactly. Nudged by less than a float32 half-ulp (random
    sizes and signs, so that contributions do not cancel to the same sum), a float64 computation moves
    its output; one that rounds its input to float32 (``astype(np.float32)`` inside, a float32
    kernel) returns the same bits. A function locally constant in ``x`` is counted as forced:
    the float32 path is the safe one.

    >>> import numpy as np
    >>> x = np.linspace(-1, 1, 8).astype(np.float32).astype(np.float64)
    >>> ev = lambda g, v: g(v)
    >>> forces_float32(lambda v: np.sin(v).sum(), x, np.sin(x).sum(), ev)
    False
    >>> g = lambda v: np.float64(np.sin(v.astype(np.float32)).sum())
    >>> forces_float32(g, x, g(x), ev)
    True
    """
    flat = x64.reshape(-1)
    sizes = np.random.default_rng(0x32).uniform(-1.0, 1.0, flat.size)  # no pattern a sum cancels
    nudged = (flat + sizes * _NUDGE * np.maximum(np.abs(flat), 2.0 ** -126)).reshape(x64.shape)
    try:
        y = np.asarray(evaluate(f, nudged))
    except Exception:  # noqa: BLE001 - the probe found nothing it can say
        return False
    return bool(np.array_equal(np.asarray(y64), y, equal_nan=True))


def claim_rounding(claimed64: Callable[[], object], analytic: np.ndarray) -> tuple[np.ndarray | None, str]:
    """``|a32 - a64|`` per entry (float64, the shape of ``analytic``) and a note, or None and
    why not. ``claimed64()`` computes the claim again at the float64 upcast."""
    try:
        a64 = np.asarray(claimed64())
    except Exception as exc:  # noqa: BLE001 - the measurement is optional; say why it is absent
        return None, f"the claim could not be recomputed at the float64 upcast ({type(exc).__name__}: {exc})"
    if a64.dtype != np.float64 or a64.size != analytic.size:
        what = f"a {a64.dtype} array of shape {a64.shape}" if a64.dtype != np.float64 else "another shape"
        return None, f"the claim recomputed at the float64 upcast is {what}, not float64"
    a64 = a64.reshape(analytic.shape)
    finite = a64[np.isfinite(a64)]
    if finite.size >= 8 and np.array_equal(finite.astype(np.float32).astype(np.float64), finite):
        # A float64 computation gives a float32 number with probability 2**-29 per value.
        return None, ("the claim recomputed at the float64 upcast holds only float32 values (the "
                      "backward computes in float32 whatever it is given), so it measures nothing")
    with np.errstate(invalid="ignore"):
        rounding = np.abs(analytic.astype(np.float64) - a64)
    rounding[~np.isfinite(rounding)] = 0.0  # a non-finite side is judged as it is, not widened
    return rounding, ""
