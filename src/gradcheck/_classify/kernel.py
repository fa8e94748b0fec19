"""The verdict rule as one fused numba pass (no full-size temporaries).

Same rule, same floating-point operations in the same order as the numpy reference
:func:`gradcheck._classify.rule.classify` (its docstring states the rule), so the verdict
codes (and tolerances) are equal bit for bit; the tests hold it to that on random and
adversarial inputs. numpy needs about a dozen passes and 3.3 GiB of temporaries for
1e8 entries; this pass reads the three inputs once and writes one byte per entry (plus
the tolerance, when asked).

Below :data:`MIN_SIZE` entries the checker keeps numpy: the gain is microseconds there,
and a small check should not pay numba's import. From :data:`THREADS_MIN_SIZE` the pass
is a ``prange`` loop on numba's threads; below, one thread (a memory-bound pass gains
little from threads, and on a busy machine a parallel launch can wait milliseconds for
a descheduled worker). ``benchmarks/bench_classify.py`` measures all three.
"""
from __future__ import annotations

import numpy as np

from .._core.config import DEFAULT_RESOLUTION
from .._core.jit import PRANGE, kernel
from .._core.tolerance import Tolerance
from .._core.verdict import Verdict
from . import rule as _classify

#: Entries from which :func:`classify` runs the kernel. Once compiled, the kernel wins
#: at any size (``benchmarks/bench_classify.py``), but below 1e5 entries the gain is
#: under a millisecond while importing numba costs a good fraction of a second.
MIN_SIZE = 100_000

#: Entries from which the pass runs on numba's threads (one thread below): the pass is
#: memory-bound, so threads gain little, and only on arrays large enough that a stalled
#: launch (a worker thread waiting for a core) costs a small fraction of the pass.
THREADS_MIN_SIZE = 10_000_000

prange = PRANGE  # numba.prange once the kernel compiles (see _jit)

_PASS, _MISMATCH = int(Verdict.PASS), int(Verdict.MISMATCH)
_UNCHECKED, _NONFINITE = int(Verdict.UNCHECKED), int(Verdict.NONFINITE)
_NO_TOL = np.empty(0)  # stands in for the tolerance output when it is not wanted


@kernel()
def _verdict(ai, ni, zi, rtol, atol, k, res):
    # The reference's order of precedence: NONFINITE over MISMATCH over UNCHECKED over
    # PASS; `err > tol`, `scale <= floor` and `tol > res*scale` are False on NaN, as
    # there (`verdicts` in _classify). Written as
    # selects, not branches: verdicts near the tolerance are unpredictable, and a
    # mispredicted branch per entry made the pass five times slower.
    abs_a = abs(ai)
    abs_n = abs(ni)
    # np.maximum: the first argument when it is NaN or not smaller, else the second.
    scale = abs_a if (abs_a >= abs_n) | (abs_a != abs_a) else abs_n
    floor = atol + k * zi  # Tolerance.floor and .bound (_core/tolerance), the same operations
    t = floor + rtol * scale
    finite = (ai - ai == 0.0) & (ni - ni == 0.0) & (zi - zi == 0.0)  # False for inf, NaN
    low = (scale <= floor) | (t > res * scale)  # below noise, or Tolerance.coarse
    code = _UNCHECKED if low else _PASS
    code = _MISMATCH if abs(ai - ni) > t else code
    return (code if finite else _NONFINITE), t


@kernel(parallel=True)
def _classify_threads(a, n, z, rtol, atol, k, res, codes, tol, want_tol):
    for i in prange(a.size):
        code, t = _verdict(a[i], n[i], z[i], rtol, atol, k, res)
        codes[i] = code
        if want_tol:
            tol[i] = t


@kernel()
def _classify_one_thread(a, n, z, rtol, atol, k, res, codes, tol, want_tol):
    for i in range(a.size):
        code, t = _verdict(a[i], n[i], z[i], rtol, atol, k, res)
        codes[i] = code
        if want_tol:
            tol[i] = t


def _run(a, n, z, rtol, atol, k, res, codes, tol, want_tol) -> None:
    run = _classify_threads if a.size >= THREADS_MIN_SIZE else _classify_one_thread
    run(a, n, z, *Tolerance(rtol, atol, k, res).scalars(), codes, tol, want_tol)


def _as_f64(values) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.float64).reshape(-1)


def classify_and_tolerance(analytic, numeric, noise, *, rtol: float, atol: float, noise_factor: float,
                           resolution: float = DEFAULT_RESOLUTION) -> tuple[np.ndarray, np.ndarray]:
    """Verdict codes and tolerances in one kernel pass, whatever the size.

    Equal to ``(classify(...), tolerance(...))`` of :mod:`gradcheck._classify.rule` on float64
    values (inputs of other dtypes are taken as float64, as ``classify`` takes them).
    """
    shape = np.shape(analytic)
    a, n, z = _as_f64(analytic), _as_f64(numeric), _as_f64(noise)
    codes = np.empty(a.size, dtype=np.uint8)
    tol = np.empty(a.size, dtype=np.float64)
    _run(a, n, z, rtol, atol, noise_factor, resolution, codes, tol, True)
    return codes.reshape(shape), tol.reshape(shape)


def classify_codes(analytic, numeric, noise, *, rtol: float, atol: float, noise_factor: float,
                   resolution: float = DEFAULT_RESOLUTION) -> np.ndarray:
    """Verdict codes from the kernel, whatever the size (no tolerance array written)."""
    shape = np.shape(analytic)
    a, n, z = _as_f64(analytic), _as_f64(numeric), _as_f64(noise)
    codes = np.empty(a.size, dtype=np.uint8)
    _run(a, n, z, rtol, atol, noise_factor, resolution, codes, _NO_TOL, False)
    return codes.reshape(shape)


def classify(analytic, numeric, noise, *, rtol: float, atol: float, noise_factor: float,
             resolution: float = DEFAULT_RESOLUTION) -> np.ndarray:
    """Verdict codes: the kernel from :data:`MIN_SIZE` entries, numpy below."""
    rule = dict(rtol=rtol, atol=atol, noise_factor=noise_factor, resolution=resolution)
    if np.size(analytic) < MIN_SIZE:
        return _classify.classify(analytic, numeric, noise, **rule)
    return classify_codes(analytic, numeric, noise, **rule)


def tolerance(analytic, numeric, noise, *, rtol: float, atol: float, noise_factor: float) -> np.ndarray:
    """Per-entry tolerance: the kernel from :data:`MIN_SIZE` float64 entries, numpy below
    (and for other dtypes, which numpy computes in their own precision)."""
    float64 = all(np.asarray(v).dtype == np.float64 for v in (analytic, numeric, noise))
    if np.size(analytic) < MIN_SIZE or not float64:
        return _classify.tolerance(analytic, numeric, noise, rtol=rtol, atol=atol, noise_factor=noise_factor)
    _, tol = classify_and_tolerance(analytic, numeric, noise, rtol=rtol, atol=atol, noise_factor=noise_factor)
    return tol
