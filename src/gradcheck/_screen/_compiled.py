"""The compiled screening engine: evaluations along many directions in one numba kernel.

For an ``f`` that is a numba ``@njit`` function (scalar- or array-valued) with the numpy
backend, or a C loss through cffi (:class:`~gradcheck.native.NativeFunction`, called from
the kernel through its function pointer, as ``check``'s compiled engine calls it). The jobs (a block's flat indices and the values written there) are packed into
three flat arrays; the kernel splits them into chunks over numba's threads, and each chunk
perturbs its own copy of ``x``: writes a job's values, evaluates ``f``, restores the old
values, with no Python in the loop. ``f``'s value (or ``np.add.reduce(v * y)`` in numpy's
own pairwise order, for an array output) is the serial engine's to the bit, so a screen
gives the same report on ``compiled`` and ``serial``.

A C loss reads float64: each chunk works on a float64 copy of ``x``, and a job's values are
rounded in ``x``'s dtype first and then widened exactly, which is what ``NativeFunction``
does with the serial engine's perturbed copy. A C function cannot raise (a NaN it returns
is a NaN value) and takes ``const double *``: no mutation check is made for it.

numba cannot raise out of a parallel loop: a job whose evaluation raised is recorded, and
evaluated again from Python afterwards, which raises ``FunctionError`` as serial does. A
write by ``f`` into its input is seen (the written values must still be there after the
call; the copy must equal ``x`` at the chunk's end) and raised as ``InputMutationError``.
"""
from __future__ import annotations

import numpy as np

from .._core.jit import PRANGE, kernel
from ..engines._compiled import _data_or_null, _eval_reduced, _eval_scalar, _first_changed, _same
from ..native import NativeFunction
from ._probe import Probe, run_jobs

prange = PRANGE

#: Chunks per thread (each copies x once: negligible next to its evaluations).
CHUNKS_PER_THREAD = 4
_RAISED, _MUTATED = 1, 2


def applies(f) -> bool:
    """Whether ``f`` is a numba ``@njit`` function or a C loss through cffi (a
    :class:`~gradcheck.native.NativeFunction`), without importing numba otherwise."""
    if isinstance(f, NativeFunction):
        return True
    cls = type(f)
    return cls.__module__.startswith("numba.") and cls.__name__ == "CPUDispatcher"


class CompiledEngine:
    name = "compiled"

    def __init__(self, probe: Probe) -> None:
        if not applies(probe.f):
            raise ValueError(f"engine='compiled' needs a numba @njit f or a C f through cffi "
                             f"(gradcheck.native.NativeFunction), got {type(probe.f).__name__}; "
                             "use engine='serial' or 'auto'")
        if isinstance(probe.f, NativeFunction) and probe.cotangent is not None:
            raise ValueError("engine='compiled' runs a C f that returns a scalar; use engine='serial'")
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
        if isinstance(p.f, NativeFunction):
            _native(p.f, p.work, idx, vals, offsets, chunks, out)
            return out  # a C function cannot raise; a NaN it returns is the value
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


def _native(f: NativeFunction, work, idx, vals, offsets, chunks, out) -> None:
    """Run the jobs through the C loss's function pointer (as ``check``'s compiled engine)."""
    loss = f.ffi.cast("double(*)(const double *, int64_t, const int64_t *)", f.loss)
    iparams = np.array(f.iparams if f.iparams else [0], dtype=np.int64)
    _native_jobs(loss, work.reshape(-1), iparams, bool(f.iparams), idx, vals, offsets, chunks, out)


@kernel(parallel=True)
def _native_jobs(loss, work, iparams, has_iparams, idx, vals, offsets, chunks, out):
    # vals are in x's dtype already; the C loss reads them widened to float64.
    jobs = offsets.size - 1
    n = work.size
    for c in prange(chunks):
        xb = work.astype(np.float64)
        x_ptr = _data_or_null(xb, True)
        ip_ptr = _data_or_null(iparams, has_iparams)
        for j in range(c * jobs // chunks, (c + 1) * jobs // chunks):
            a, b = offsets[j], offsets[j + 1]
            for k in range(a, b):
                xb[idx[k]] = np.float64(vals[k])
            out[j] = loss(x_ptr, n, ip_ptr)
            for k in range(a, b):
                xb[idx[k]] = np.float64(work[idx[k]])
