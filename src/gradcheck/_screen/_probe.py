"""The unit of work of every screening engine: ``f`` with some entries of ``x`` replaced.

A :class:`Probe` holds the private working copy of ``x`` (never the user's array), the
function and the reduction of its output to a scalar. ``value(idx, values)`` writes
``values`` at the flat indices ``idx``, evaluates, and puts the old values back in a
``finally`` block, so an exception or Ctrl-C never leaves the copy perturbed. A function
that writes into its input is caught: the perturbed entries must still hold what was
written when ``f`` returns, and :meth:`Probe.unchanged` compares the whole copy with its
pristine snapshot bit for bit.

Complex values (the complex step) are written into a complex copy of ``x`` made on first
use; ``f`` must then return complex values, which :meth:`Probe.complex_value` reduces
with the same cotangent (see :mod:`._complex` for when the complex step is trusted).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._core.arrays import same_bits  # internals used here: errors and same_bits only
from .._core.errors import FunctionError, InputMutationError, OutputError, mutation_error


class Probe:
    """``f`` at ``x`` with a block of entries replaced (see the module docstring)."""

    def __init__(self, f: Callable[..., Any], work: np.ndarray, evaluate: Callable[[], float],
                 cotangent: np.ndarray | None, label: str, pristine: np.ndarray | None = None) -> None:
        self.f = f
        self.work = work                      # private, C-contiguous
        # ``pristine=work`` (a whole model: no second copy of every parameter) makes
        # unchanged() vacuous: the caller then compares work with the originals itself.
        self.pristine = work.copy() if pristine is None else pristine
        self.evaluate = evaluate              # the reduced f at the current contents of work
        self.cotangent = None if cotangent is None else cotangent.reshape(-1)
        self.cotangent_shape = None if cotangent is None else cotangent.shape
        self.label = label
        self._complex: np.ndarray | None = None

    @property
    def flat(self) -> np.ndarray:
        # A fresh view each time: a pickled probe (executor engine) keeps no stale view.
        return self.work.reshape(-1)

    def value(self, idx: np.ndarray, values: np.ndarray) -> float:
        """The reduced ``f`` with ``x[idx] = values``."""
        flat = self.flat
        old = flat[idx]  # integer indices: already a copy (a slice would be a view: copied)
        if np.may_share_memory(old, flat):
            old = old.copy()
        flat[idx] = values
        # What was written, in x's dtype: the values themselves when they are in it (a block's
        # indices are random over the whole model: every gather saved is a pass of random access).
        written = values if isinstance(values, np.ndarray) and values.dtype == flat.dtype else flat[idx]
        try:
            out = self.evaluate()
            if not same_bits(flat[idx], written):
                raise self._mutation(idx)
        except InputMutationError:
            raise
        except Exception as exc:
            raise self._error(idx, exc) from exc
        finally:
            flat[idx] = old
        return out

    def complex_value(self, idx: np.ndarray, values: np.ndarray) -> complex:
        """The reduced ``f`` (complex) with ``x[idx] = values`` on a complex copy of ``x``.
        Exceptions propagate as they are: the caller decides what a failure means."""
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

    def unchanged(self) -> bool:
        """Whether the working copy still holds ``x`` bit for bit."""
        return same_bits(self.work, self.pristine)

    def _where(self, idx: np.ndarray) -> tuple[int, ...]:
        first = int(idx[0]) if idx.size else 0
        return tuple(int(k) for k in np.unravel_index(first, self.work.shape))

    def _error(self, idx: np.ndarray, exc: BaseException) -> FunctionError:
        side = f"along a block of {idx.size} entries"
        if isinstance(exc, OutputError):  # f returned something unusable: said as such, located
            return exc.at(self._where(idx), side)
        return FunctionError(self._where(idx), side, None, exc)

    def _mutation(self, idx: np.ndarray) -> InputMutationError:
        return mutation_error(self.label, f" (seen while the block holding entry {self._where(idx)} was perturbed)")


def run_jobs(probe: Probe, jobs: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Values of ``f`` for each job ``(idx, values)``, in order (complex jobs give complex)."""
    if jobs and jobs[0][1].dtype.kind == "c":
        return np.array([probe.complex_value(i, v) for i, v in jobs], dtype=np.complex128)
    with np.errstate(all="ignore"):  # f is evaluated at points the user did not choose
        return np.array([probe.value(i, v) for i, v in jobs], dtype=np.float64)
