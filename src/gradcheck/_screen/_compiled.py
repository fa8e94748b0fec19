"""The compiled screening engine: evaluations along many directions in one numba kernel.

For an ``f`` that is a numba ``@njit`` function (scalar- or array-valued) with the numpy
backend. The jobs (a block's flat indices and the values written there) are packed into
three flat arrays; the kernel splits them into chunks over numba's threads, and each chunk
perturbs its own copy of ``x``: writes a job's values, evaluates ``f``, restores the old
values, with no Python in the loop. ``f``'s value (or ``np.add.reduce(v * y)`` in numpy's
own pairwise order, for an array output) is the serial engine's to the bit, so a screen
gives the same report on ``compiled`` and ``serial``.

numba cannot raise out of a parallel loop: a job whose evaluation raised is recorded, and
evaluated again from Python afterwards, which raises ``FunctionError`` as serial does. A
write by ``f`` into its input is seen (the written values must still be there after the
call; the copy must equal ``x`` at the chunk's end) and raised as ``InputMutationError``.
"""
from __future__ import annotations

import numpy as np

from .._core.jit import PRANGE, kernel
from ..engines._compiled import _eval_reduced, _eval_scalar, _first_changed, _same
from ._probe import Probe, run_jobs

prange = PRANGE

#: Chunks per thread (each copies x once: negligible next to its evaluations).
CHUNKS_PER_THREAD = 4
_RAISED, _MUTATED = 1, 2


def applies(f) -> bool:
    """Whether ``f`` is a numba ``@njit`` function (without importing numba otherwise)."""
    cls = type(f)
    return cls.__module__.startswith("numba.") and cls.__name__ == "CPUDispatcher"


class CompiledEngine:
    name = "compiled"

    def __init__(self, probe: Probe) -> None:
        if not applies(probe.f):
            raise ValueError(f"engine='compiled' needs a numba @njit f, got {type(probe.f).__name__}; "
                             "use engine='serial' or 'auto'")
        import numba

        self.probe = probe
        self.threads = max(1, int(numba.get_num_threads()))

    def run(self, jobs: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        p = self.probe
        if not jobs or jobs[0][1].dtype.kind == "c":
            return run_jobs(p, jobs)  # (an njit f takes no complex input: nothing to gain)
        sizes = np.array([idx.size for idx, _ in jobs], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        idx = np.concatenate([i for i, _ in jobs]).astype(np.int64)
        vals = np.concatenate([v for _, v in jobs]).astype(p.work.dtype)
        out = np.full(len(jobs), np.nan)
        status = np.zeros(len(jobs), dtype=np.int64)
        chunks = max(1, min(len(jobs), self.threads * CHUNKS_PER_THREAD))
        if p.cotangent is None:
            _scalar_jobs(p.f, p.work, idx, vals, offsets, chunks, out, status)
        else:
            v = np.ascontiguousarray(p.cotangent.reshape(p.cotangent_shape), dtype=np.float64)
            _reduced_jobs(p.f, p.work, v, idx, vals, offsets, chunks, out, status)
        bad = np.flatnonzero(status)
        if bad.size:
            j = int(bad[0])
            run_jobs(p, [jobs[j]])  # raises FunctionError / InputMutationError from Python
            raise RuntimeError("f raised inside the compiled engine but not from Python (is it deterministic?)")
        return out

    def close(self) -> None:
        pass


@kernel(parallel=True, takes_functions=True)
def _scalar_jobs(f, work, idx, vals, offsets, chunks, out, status):
    jobs = offsets.size - 1
    ref = work.reshape(work.size)
    for c in prange(chunks):
        xc = work.copy()
        flat = xc.reshape(xc.size)
        lo, hi = c * jobs // chunks, (c + 1) * jobs // chunks
        for j in range(lo, hi):
            a, b = offsets[j], offsets[j + 1]
            for k in range(a, b):
                flat[idx[k]] = vals[k]
            value, raised = _eval_scalar(f, xc)
            for k in range(a, b):
                if not _same(flat[idx[k]], vals[k]):
                    status[j] = _MUTATED
                flat[idx[k]] = ref[idx[k]]
            out[j] = value
            if raised:
                status[j] = _RAISED
        if hi > lo and status[hi - 1] == 0 and _first_changed(flat, ref) >= 0:
            status[hi - 1] = _MUTATED


@kernel(parallel=True, takes_functions=True)
def _reduced_jobs(f, work, v, idx, vals, offsets, chunks, out, status):
    jobs = offsets.size - 1
    ref = work.reshape(work.size)
    vflat = v.reshape(v.size)
    for c in prange(chunks):
        xc = work.copy()
        flat = xc.reshape(xc.size)
        lo, hi = c * jobs // chunks, (c + 1) * jobs // chunks
        for j in range(lo, hi):
            a, b = offsets[j], offsets[j + 1]
            for k in range(a, b):
                flat[idx[k]] = vals[k]
            value, bad = _eval_reduced(f, xc, v, vflat)
            for k in range(a, b):
                if not _same(flat[idx[k]], vals[k]):
                    status[j] = _MUTATED
                flat[idx[k]] = ref[idx[k]]
            out[j] = value
            if bad:
                status[j] = _RAISED
        if hi > lo and status[hi - 1] == 0 and _first_changed(flat, ref) >= 0:
            status[hi - 1] = _MUTATED
