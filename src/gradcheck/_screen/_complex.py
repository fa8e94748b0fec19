"""The complex-step probe: ``Im f(x + i h d) / h``, trusted only after it is verified.

For ``f`` real-analytic and written with complex-safe operations, ``Im f(x + i h d) / h``
is the directional derivative to round-off: no difference of nearby values, so no
cancellation, and with ``h`` tiny no truncation either. One evaluation per direction
instead of six. But numpy computes many things on complex input without complaint that
are not the analytic continuation: ``np.abs`` returns the modulus (the imaginary part of
the result is lost), ``x.real``, ``.conj()``, casts to float (with a ComplexWarning),
``math`` functions raise. So the complex step is accepted only when

1. ``f`` is numpy code (the numpy backend, not a compiled function),
2. it returns a complex value for complex input, without a warning,
3. on every block of the first draw it agrees with the finite-difference estimate within
   the sum of both bounds (a function that mishandles complex input anywhere that matters
   disagrees on the blocks that hold those entries, and the blocks cover every entry).

Its bound is ``k kappa u S``, where ``S = sum |a_i d_i| + |C|`` is the scale of the
directional derivative's terms and ``kappa >= 1`` is measured on the first direction from
two steps whose ratio is not a power of two (so their rounding differs).

Its evaluations (:class:`ComplexCopy`) are not the evaluation layer's: they run on a complex
copy of ``x`` (made on first use), give complex values, and a failure is the caller's to
read (an exception or a numpy warning while the step is tried means "not applicable", said
with the exception's own type and words), where the layer turns every exception into a
FunctionError at an entry and silences numpy's floating-point warnings.
"""
from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._directional import exact_dot
from ._measure import Measured, Measurer, disagreement

#: The imaginary step, relative to max(1, |x_i|): far below any truncation, far above
#: underflow (its square is still a normal number).
STEP = 2.0 ** -60
#: The second step of the round-off measurement (not a power of two times STEP).
RATIO = 0.75


def unavailable(f, backend_name: str) -> str | None:
    """Why the complex step cannot apply to ``f`` at all, or None."""
    if backend_name != "numpy":
        return f"f runs on the {backend_name} backend (the complex step needs numpy code)"
    module = type(f).__module__ or ""
    if module.startswith("numba") or type(f).__name__ == "NativeFunction":
        return "f is compiled code (numba or C), which is not run on complex input"
    return None


class ComplexCopy:
    """``f`` on a complex copy of ``x`` (made on first use) with a block's entries replaced,
    reduced with the cotangent ``v`` (``v . f``) when ``f`` returns an array."""

    def __init__(self, f: Callable[..., Any], work: np.ndarray, cotangent: np.ndarray | None) -> None:
        self.f, self.work = f, work
        self.cotangent = None if cotangent is None else cotangent.reshape(-1)
        self._complex: np.ndarray | None = None

    def value(self, idx: np.ndarray, values: np.ndarray) -> complex:
        """The reduced ``f`` (complex) with ``x[idx] = values``. Exceptions propagate as they
        are: the caller decides what a failure means."""
        if self._complex is None:
            self._complex = self.work.astype(np.complex128)
        flat = self._complex.reshape(-1)
        old = flat[idx].copy()
        flat[idx] = values
        try:
            y = np.asarray(self.f(self._complex))
        finally:
            flat[idx] = old
        if y.dtype.kind != "c":
            raise TypeError(f"f returned {y.dtype} for complex input (the imaginary part was dropped)")
        if self.cotangent is None:
            if y.ndim != 0:
                raise TypeError(f"f returned shape {y.shape} for complex input, a scalar for real input")
            return complex(y)
        return complex(np.add.reduce(self.cotangent * y.reshape(-1)))

    def values(self, jobs: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        """:meth:`value` of each job ``(idx, values)``, in order."""
        return np.array([self.value(i, v) for i, v in jobs], dtype=np.complex128)


@dataclass
class ComplexProbe:
    kappa: float
    seconds: float               # one complex evaluation

    def measure(self, m: Measurer, blocks: list[tuple[np.ndarray, np.ndarray]]) -> Measured:
        dirs = [m.direction(idx, s) for idx, s in blocks]
        jobs = [(idx, m.x_flat[idx] + 1j * STEP * d) for (idx, _), d in zip(blocks, dirs)]
        values = m.run(jobs, "complex")
        return self.judge(m, blocks, dirs, values.imag / STEP)

    def judge(self, m: Measurer, blocks, dirs, slopes: np.ndarray) -> Measured:
        claims = np.array([exact_dot(m.analytic[idx], d) for (idx, _), d in zip(blocks, dirs)])
        scale = np.array([float(np.sum(np.abs(m.analytic[idx] * d))) for (idx, _), d in zip(blocks, dirs)])
        with np.errstate(invalid="ignore", over="ignore"):
            delta = claims - slopes
            bound = m.k * self.kappa * m.unit * (scale + np.abs(claims))
        bound = np.where(np.isfinite(delta), bound, np.inf)
        return Measured(delta, bound, m.unit * np.abs(claims), "complex")


def probe_first(m: Measurer, probe: ComplexCopy,
                block: tuple[np.ndarray, np.ndarray]) -> tuple[ComplexProbe | None, str]:
    """Try the complex step on one block: (a probe with its measured kappa, "") or
    (None, why it does not apply). Two complex evaluations, counted."""
    idx, signs = block
    d = m.direction(idx, signs)
    slopes = []
    started = time.perf_counter()
    for h in (STEP, STEP * RATIO):
        if not m.afford(1):
            return None, "the budget leaves no room to try it"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                y = probe.value(idx, m.x_flat[idx] + 1j * h * d)
        except Exception as exc:
            m.evaluations += 1
            return None, f"f fails on complex input ({type(exc).__name__}: {exc})"
        m.evaluations += 1
        m.by_method["complex"] = m.by_method.get("complex", 0) + 1
        slopes.append(y.imag / h)
    seconds = (time.perf_counter() - started) / 2
    if not all(np.isfinite(slopes)):
        return None, "f is not finite on complex input"
    scale = float(np.sum(np.abs(m.analytic[idx] * d))) + abs(exact_dot(m.analytic[idx], d))
    spread = abs(slopes[0] - slopes[1])
    kappa = max(1.0, 4.0 * spread / (m.unit * scale)) if scale > 0 else 1.0
    return ComplexProbe(kappa=kappa, seconds=seconds), ""


def verify(fd: Measured, cs: Measured) -> tuple[bool, str]:
    """Whether the complex step agrees with finite differences on every block (within
    the sum of both bounds and roundings); else the first disagreement, in words."""
    where = disagreement(fd, cs)
    if not where:
        return True, ""
    return False, (f"the complex step disagrees with finite differences {where}: f mishandles complex "
                   "input (np.abs, .real, conj, a cast to float?)")
