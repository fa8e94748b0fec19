"""A float64 input to an ``f`` that computes in float32 whatever it is given.

``np.sin(x.astype(np.float32)).sum()`` returned as float64, a numba or C kernel that takes
doubles and computes in floats: the input is float64, but ``f`` rounds it to float32 first,
and its value carries float32 round-off (``u |f|``, ``u = 2**-24``). At the float64
preset's step (6e-6) that puts round-off ``u |f| / h`` of about ``0.01 |f|`` in every slope:
with ``|f|`` ~ 100 every entry was UNCHECKED and a 5% bug went unseen. Such an ``f`` is routed through the
float32 machinery of :mod:`gradcheck._lowp.f32steps` (steps h, 2h, 4h with
``h = 2**-5 max(1, |x|)``, Richardson, f's round-off measured), judged with the
forced-float32 preset (rtol 2e-4, PASS share 5e-4), and the claim taken at the user's
float64 ``x``.

Detected (:func:`computes_in_float32`) only when every value ``f`` returns is a float32
number (a float64 computation gives one with probability ``2**-29`` per value), not all of
them integers (a constant or piecewise-constant ``f`` stays on the float64 path), and ``f``
gives bit-identical outputs at ``x``, at ``x`` rounded to float32, and there nudged by less
than a float32 half-ulp (:func:`gradcheck._lowp.float32.forces_float32`): it sees only
``round32(x)``. The realized step is the one ``f`` sees: ``round32(x + h) - round32(x - h)``.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .._core.config import Config
from .._differences import Differencer
from . import f32steps
from .float32 import CountedCalls, forces_float32
from .plan import OrdinaryPlan

if TYPE_CHECKING:
    from ..backends import Backend

#: How a probe calls ``f`` (through the backend, counting the call).
Probe = Callable[[Callable[..., object], np.ndarray], object]

__all__ = ["Float32InsidePlan", "computes_in_float32", "route_float64"]


def computes_in_float32(f: Callable[..., object], x64: np.ndarray, y0: object, evaluate: Probe) -> bool:
    """Whether ``f``, given the float64 array ``x64``, computes in float32 (see the module
    docstring); ``y0 = f(x64)`` as returned. At most two more evaluations, only when every
    value of ``y0`` is a non-integer float32 number.

    >>> import numpy as np
    >>> x = np.random.default_rng(0).standard_normal(8)
    >>> ev = lambda g, v: g(v)
    >>> g = lambda v: np.float64(np.sin(v.astype(np.float32)).sum() + np.float32(100))
    >>> computes_in_float32(g, x, g(x), ev), computes_in_float32(np.sum, x, np.sum(x), ev)
    (True, False)
    """
    y = np.asarray(y0)
    if y.dtype not in (np.float64, np.float32) or y.size == 0 or x64.dtype != np.float64:
        return False
    values = y[np.isfinite(y)].astype(np.float64)
    if not values.size or np.array_equal(values, np.round(values)):
        return False
    if not np.array_equal(values.astype(np.float32).astype(np.float64), values):
        return False
    r32 = x64.astype(np.float32).astype(np.float64)
    try:
        at_r32 = np.asarray(evaluate(f, r32))
    except Exception:  # noqa: BLE001 - the probe found nothing it can say
        return False
    if not np.array_equal(at_r32, y, equal_nan=True):
        return False
    return forces_float32(f, r32, at_r32, evaluate)


@dataclass(frozen=True, eq=False)
class Float32InsidePlan(OrdinaryPlan):
    """A float64 input, an ``f`` that computes in float32: the forced-float32 differences."""

    #: The forced-float32 preset (rtol 2e-4, PASS share 5e-4, Richardson steps 2**-5).
    config: Config = f32steps.PRESET

    def first_estimates(self, differencer: Differencer, steps: np.ndarray, diffs: tuple[np.ndarray, ...],
                        values: np.ndarray | None = None, base_value: float = np.nan,
                        ) -> tuple[tuple[np.ndarray, np.ndarray] | None, int]:
        """Richardson across h, 2h, 4h, each slope over the step ``f`` sees."""
        if values is None:
            return None, 0
        flat = np.asarray(values, dtype=np.float64).reshape(-1)

        def seen(idx: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            fp, fm, _ = differencer(idx, h)
            return fp, fm, realized_step(flat[idx], h)

        fp, fm, _ = diffs
        return f32steps.estimates(seen, steps, (fp, fm, realized_step(flat, steps)), flat, base_value)


def realized_step(x: np.ndarray, h: np.ndarray) -> np.ndarray:
    """``round32(x + h) - round32(x - h)`` in float64: the step an f that rounds its input
    to float32 sees (``x +- h`` first in float64, as the engines perturb)."""
    with np.errstate(all="ignore"):
        xp = (x + h).astype(np.float32).astype(np.float64)
        xm = (x - h).astype(np.float32).astype(np.float64)
        denom = xp - xm
    denom[~np.isfinite(x)] = np.nan
    return denom


def route_float64(f: Callable[..., object], x64: np.ndarray, y0: object, backend: Backend,
                  ) -> tuple[Float32InsidePlan | None, int]:
    """The plan for a float64 ``x64`` at which ``f`` returned ``y0``, or None (the ordinary
    float64 check) unless ``f`` computes in float32; and the evaluations of ``f`` the
    detection spent (0 to 2: the report counts them whichever way it went)."""
    evaluate = CountedCalls(backend)
    if not computes_in_float32(f, x64, y0, evaluate):
        return None, evaluate.calls
    return Float32InsidePlan(notes=(
        "float64 input, but f computes in float32 (every value it returns is a float32 number, "
        "and it returns the same bits at x, at x rounded to float32 and there nudged by less than a "
        "float32 ulp): the numeric side is a float32-step difference, Richardson-extrapolated across "
        "steps h, 2h, 4h (h = 2**-5 max(1, |x|); the step f sees, round32(x+h) - round32(x-h)), its noise "
        "the measured spread and f's measured round-off (gradcheck._lowp.f32steps), judged with the "
        "forced-float32 rule (rtol 2e-4, PASS share 5e-4)",)), evaluate.calls
