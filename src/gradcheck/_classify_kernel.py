"""The verdict rule as one fused, parallel numba pass (no full-size temporaries).

Same rule, same floating-point operations in the same order as the numpy reference
:func:`gradcheck._classify.classify` (its docstring states the rule), so the verdict
codes are equal bit for bit; the tests hold it to that on random and adversarial
inputs. numpy needs about six full-size temporaries for the rule; this pass reads the
three inputs once and writes one byte per entry (plus the tolerance, when asked).

Below :data:`MIN_SIZE` entries numpy is used: the kernel's dispatch and thread start-up
cost more than numpy's whole pass there, and a small check should not import numba.
"""
from __future__ import annotations

import numpy as np

from . import _classify
from ._jit import PRANGE, kernel
from ._verdict import Verdict

#: Entries from which :func:`classify` runs the kernel (measured by
#: ``benchmarks/bench_classify.py``: the kernel wins from about 1e4 entries; 1e5 also
#: keeps numba's import out of small checks, whose whole run is shorter than it).
MIN_SIZE = 100_000

prange = PRANGE  # numba.prange once the kernel compiles (see _jit)

_PASS, _MISMATCH = int(Verdict.PASS), int(Verdict.MISMATCH)
_UNCHECKED, _NONFINITE = int(Verdict.UNCHECKED), int(Verdict.NONFINITE)
_NO_TOL = np.empty(0)  # stands in for the tolerance output when it is not wanted


@kernel(parallel=True)
def _classify_kernel(a, n, z, rtol, atol, k, codes, tol, want_tol):
    # The reference's order of precedence: NONFINITE over MISMATCH over UNCHECKED over
    # PASS; `err > tol` and `scale <= floor` are False on NaN, as there. Written as
    # selects, not branches: verdicts near the tolerance are unpredictable, and a
    # mispredicted branch per entry made this pass five times slower.
    for i in prange(a.size):
        ai = a[i]
        ni = n[i]
        zi = z[i]
        abs_a = abs(ai)
        abs_n = abs(ni)
        # np.maximum: the first argument when it is NaN or not smaller, else the second.
        scale = abs_a if (abs_a >= abs_n) | (abs_a != abs_a) else abs_n
        floor = atol + k * zi
        t = floor + rtol * scale
        if want_tol:
            tol[i] = t
        finite = (ai - ai == 0.0) & (ni - ni == 0.0) & (zi - zi == 0.0)  # False for inf, NaN
        code = _UNCHECKED if scale <= floor else _PASS
        code = _MISMATCH if abs(ai - ni) > t else code
        codes[i] = code if finite else _NONFINITE


def _as_f64(values) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.float64).reshape(-1)


def classify_and_tolerance(analytic, numeric, noise, *, rtol: float, atol: float,
                           noise_factor: float) -> tuple[np.ndarray, np.ndarray]:
    """Verdict codes and tolerances in one kernel pass, whatever the size.

    Equal to ``(classify(...), tolerance(...))`` of :mod:`gradcheck._classify` on float64
    values (inputs of other dtypes are taken as float64, as ``classify`` takes them).
    """
    shape = np.shape(analytic)
    a, n, z = _as_f64(analytic), _as_f64(numeric), _as_f64(noise)
    codes = np.empty(a.size, dtype=np.uint8)
    tol = np.empty(a.size, dtype=np.float64)
    _classify_kernel(a, n, z, float(rtol), float(atol), float(noise_factor), codes, tol, True)
    return codes.reshape(shape), tol.reshape(shape)


def classify_codes(analytic, numeric, noise, *, rtol: float, atol: float,
                   noise_factor: float) -> np.ndarray:
    """Verdict codes from the kernel, whatever the size (no tolerance array written)."""
    shape = np.shape(analytic)
    a, n, z = _as_f64(analytic), _as_f64(numeric), _as_f64(noise)
    codes = np.empty(a.size, dtype=np.uint8)
    _classify_kernel(a, n, z, float(rtol), float(atol), float(noise_factor), codes, _NO_TOL, False)
    return codes.reshape(shape)


def classify(analytic, numeric, noise, *, rtol: float, atol: float, noise_factor: float) -> np.ndarray:
    """Verdict codes: the kernel from :data:`MIN_SIZE` entries, numpy below."""
    if np.size(analytic) < MIN_SIZE:
        return _classify.classify(analytic, numeric, noise, rtol=rtol, atol=atol, noise_factor=noise_factor)
    return classify_codes(analytic, numeric, noise, rtol=rtol, atol=atol, noise_factor=noise_factor)


def tolerance(analytic, numeric, noise, *, rtol: float, atol: float, noise_factor: float) -> np.ndarray:
    """Per-entry tolerance: the kernel from :data:`MIN_SIZE` float64 entries, numpy below
    (and for other dtypes, which numpy computes in their own precision)."""
    float64 = all(np.asarray(v).dtype == np.float64 for v in (analytic, numeric, noise))
    if np.size(analytic) < MIN_SIZE or not float64:
        return _classify.tolerance(analytic, numeric, noise, rtol=rtol, atol=atol, noise_factor=noise_factor)
    _, tol = classify_and_tolerance(analytic, numeric, noise, rtol=rtol, atol=atol, noise_factor=noise_factor)
    return tol
