"""The numba kernels of ``bench_compiled.py`` that use numba's on-disk cache (``cache=True``).

They live in this importable module, not in the script, so that they have one module name
however the script runs (``python benchmarks/bench_compiled.py`` makes it ``__main__``,
``gradcheck bench`` imports it under another name): numba's cache entry records the module
of a kernel's globals and imports it again on loading. Compiled once per machine, loaded
from ``benchmarks/__pycache__`` after that, as a user's second run finds them.
"""
from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def rosenbrock(x):
    s = 0.0
    for i in range(x.size - 1):
        a = x[i + 1] - x[i] * x[i]
        b = 1.0 - x[i]
        s += 100.0 * a * a + b * b
    return s


@numba.njit(nogil=True, parallel=True, cache=True)
def bare_njit_parallel(x, h, parts):
    """The bare loop split in ``parts`` contiguous slices over numba's threads, each on its
    own copy of x: what the machine gives to that many threads right now (no engine).

    It calls ``rosenbrock`` as a global, not as an argument like ``bench_compiled.bare_njit``: a kernel
    that takes a jitted function cannot use numba's on-disk cache, and this parallel loop's
    compile took ~1.6 s of every run (the call's form does not change the loop's time: the
    single-thread loop both ways, interleaved best of 7, 2026-12-03 under a load of 8: 60.7 ms
    and 65.6 ms as a global, 67.4 ms and 64.8 ms as an argument)."""
    total = np.zeros(parts)
    n = x.size
    for p in numba.prange(parts):
        xc = x.copy()
        s = 0.0
        for i in range(p * n // parts, (p + 1) * n // parts):
            old = xc[i]
            xc[i] = old + h[i]
            s += rosenbrock(xc)
            xc[i] = old - h[i]
            s += rosenbrock(xc)
            xc[i] = old
        total[p] = s
    return total.sum()
