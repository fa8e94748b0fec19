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

Its evaluations (:class:`ComplexCopy`) run on the evaluation layer's serial loop with a
private complex copy of ``x`` (made on first use) as the working copy: the layer perturbs and
restores it, sees writes into it (``same_bits``; the whole copy compared with ``x`` after each
batch) and raises ``f``'s exception as a FunctionError at the block's first entry; the
reduction (a complex value) is this module's. While the step is *tried* (:func:`probe_first`)
any failure means "not applicable", said with the exception's own type and words: a Python
warning (ComplexWarning) or a numpy floating-point warning (not silenced there) included, and
a write into the complex input too, rather than an InputMutationError: ``f`` was already seen
not to write into its real input, ``x`` and the real working copy are untouched, and finite
differences stay correct. Once the step is accepted, a write is the layer's InputMutationError.
"""
from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core.arrays import same_bits
from .._core.errors import FunctionError, mutation_error
from .._evaluate import Points, run_here
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
    """``f`` on the layer, with a complex copy of ``x`` (made on first use) as its working copy,
    reduced with the cotangent ``v`` (``v . f``) when ``f`` returns an array."""

    def __init__(self, f: Callable[..., Any], work: np.ndarray, cotangent: np.ndarray | None,
                 who: str = "the function") -> None:
        self.f, self.x, self.who = f, work, who
        self.cotangent = None if cotangent is None else cotangent.reshape(-1)
        self.work: np.ndarray | None = None

    def evaluate(self, errors: Any = None) -> complex:
        """The reduced ``f`` (complex) at :attr:`work` as it stands; ``errors``: numpy's error
        handling for the call (None: the layer's silence)."""
        assert self.work is not None
        with np.errstate(**(errors or {})):
            y = np.asarray(self.f(self.work))
        if y.dtype.kind != "c":
            raise TypeError(f"f returned {y.dtype} for complex input (the imaginary part was dropped)")
        if self.cotangent is None:
            if y.ndim != 0:
                raise TypeError(f"f returned shape {y.shape} for complex input, a scalar for real input")
            return complex(y)
        return complex(np.add.reduce(self.cotangent * y.reshape(-1)))

    def values(self, jobs: list[tuple[np.ndarray, np.ndarray]], tried: bool = False) -> np.ndarray:
        """The reduced ``f`` at each job ``(idx, values)``, in order (complex128), on the layer
        (``tried``: numpy's floating-point errors as the caller has them, not silenced); a copy
        that ``f`` may have written into is dropped, to be made again from ``x``."""
        errors = np.geterr() if tried else None  # the caller's, not the layer's silence
        if self.work is None:
            self.work = self.x.astype(np.complex128)
        try:
            out = run_here(lambda: self.evaluate(errors), self.work, Points.of_blocks(jobs, self.who))
            if not same_bits(self.work, self.x.astype(np.complex128)):  # outside the blocks it ran
                raise mutation_error(self.who, " (seen in its complex input, after a batch of the complex step)")
        except BaseException:
            self.work = None
            raise
        return out


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
                y = probe.values([(idx, m.x_flat[idx] + 1j * h * d)], tried=True)[0]
        except Exception as exc:
            m.evaluations += 1
            cause = exc.__cause__ if isinstance(exc, FunctionError) and exc.__cause__ is not None else exc
            return None, f"f fails on complex input ({type(cause).__name__}: {cause})"
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
