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
from .._core.jit import kernel


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
        return self.values(idx, [values])[0]

    def values(self, idx: np.ndarray, each: list[np.ndarray]) -> list[float]:
        """The reduced ``f`` with ``x[idx] = v``, for each ``v`` of ``each`` in turn (the
        points of one block): ``x[idx]`` is saved once and put back once, after the last
        (a whole model's block is millions of entries: each pass over them costs)."""
        flat = self.flat
        if idx.size >= KERNEL_MIN and flat.dtype in _BITS:
            return self._values_in_passes(flat, idx, each)
        old = flat[idx]  # integer indices: already a copy (a slice would be a view: copied)
        if np.may_share_memory(old, flat):
            old = old.copy()
        out = []
        try:
            for values in each:
                flat[idx] = values
                # What was written, in x's dtype: the values themselves when they are in it.
                written = values if isinstance(values, np.ndarray) and values.dtype == flat.dtype else flat[idx]
                try:
                    out.append(self.evaluate())
                    if not same_bits(flat[idx], written):
                        raise self._mutation(idx)
                except InputMutationError:
                    raise
                except Exception as exc:
                    raise self._error(idx, exc) from exc
        finally:
            flat[idx] = old
        return out

    def _values_in_passes(self, flat: np.ndarray, idx: np.ndarray, each: list[np.ndarray]) -> list[float]:
        """:meth:`values` for a large block, in one pass over its entries per evaluation: the
        check that ``f`` left the written values in place fused with writing the next point
        (or ``x`` back), on the values' bits (so the check is bit for bit, as ``same_bits``)."""
        bits = _BITS[flat.dtype]
        memory = flat.view(bits)
        points = [np.ascontiguousarray(v, dtype=flat.dtype).view(bits) for v in each]  # as x's dtype holds them
        old = np.empty(idx.size, dtype=bits)
        _save_and_write(memory, idx, old, points[0])
        out, done = [], False
        try:
            for j, written in enumerate(points):
                try:
                    out.append(self.evaluate())
                except InputMutationError:
                    raise
                except Exception as exc:
                    raise self._error(idx, exc) from exc
                following = points[j + 1] if j + 1 < len(points) else old
                moved = _check_and_write(memory, idx, written, following)
                done = following is old
                if moved >= 0:
                    raise self._mutation(idx)
        finally:
            if not done:
                _write(memory, idx, old)
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


#: Blocks of at least this many entries are written and checked by the kernels below, in one
#: pass per evaluation (numpy's fancy indexing takes three: the write, the read-back for the
#: check, the restore); smaller ones by numpy (no compilation for a small screen).
KERNEL_MIN = 1 << 15
#: The integer type holding a float dtype's bits (the kernels compare and move bits).
_BITS = {np.dtype(np.float64): np.int64, np.dtype(np.float32): np.int32}


@kernel()
def _in_range(memory: np.ndarray, idx: np.ndarray) -> None:
    n = memory.size
    for k in range(idx.size):
        if idx[k] < 0 or idx[k] >= n:
            raise IndexError("a block's index is outside x")


@kernel()
def _save_and_write(memory: np.ndarray, idx: np.ndarray, old: np.ndarray, new: np.ndarray) -> None:
    """``old = memory[idx]``, then ``memory[idx] = new`` (one pass; the indices checked first)."""
    _in_range(memory, idx)
    for k in range(idx.size):
        i = idx[k]
        old[k] = memory[i]
        memory[i] = new[k]


@kernel()
def _check_and_write(memory: np.ndarray, idx: np.ndarray, expected: np.ndarray, new: np.ndarray) -> int:
    """``memory[idx] = new`` in one pass, checking on the way that ``memory[idx]`` held
    ``expected``: the first position where it did not, or -1 (every position is written)."""
    _in_range(memory, idx)
    moved = -1
    for k in range(idx.size):
        i = idx[k]
        if moved < 0 and memory[i] != expected[k]:
            moved = k
        memory[i] = new[k]
    return moved


@kernel()
def _write(memory: np.ndarray, idx: np.ndarray, new: np.ndarray) -> None:
    _in_range(memory, idx)
    for k in range(idx.size):
        memory[idx[k]] = new[k]


def run_jobs(probe: Probe, jobs: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Values of ``f`` for each job ``(idx, values)``, in order (complex jobs give complex)."""
    if jobs and jobs[0][1].dtype.kind == "c":
        return np.array([probe.complex_value(i, v) for i, v in jobs], dtype=np.complex128)
    out: list[float] = []
    with np.errstate(all="ignore"):  # f is evaluated at points the user did not choose
        start = 0
        for k in range(1, len(jobs) + 1):  # consecutive jobs of one block (the same index array) together
            if k == len(jobs) or jobs[k][0] is not jobs[start][0]:
                out += probe.values(jobs[start][0], [v for _, v in jobs[start:k]])
                start = k
    return np.array(out, dtype=np.float64)
