"""Subjects of the HTML tests: a small check with one planted entry, and a million-entry report."""
from __future__ import annotations

import numpy as np

from gradcheck import Config, Report, Verdict

PLANTED = (4, 1)


def f(x):
    return (np.tanh(x) * x[::-1]).sum()


def planted_grad(x):
    """The README's example: a 1e-5 relative bug at one entry."""
    g = (1 - np.tanh(x) ** 2) * x[::-1] + np.tanh(x[::-1])
    g[PLANTED] *= 1 + 1e-5
    return g


def big_report(unchecked: int = 0) -> Report:
    """A 1024 x 1024 report built as check() would (no 2M evaluations needed to render one):
    one MISMATCH at (700, 300), optionally ``unchecked`` scattered UNCHECKED entries and a
    failing last column."""
    rng = np.random.default_rng(0)
    shape = (1024, 1024)
    a = rng.standard_normal(shape)
    n = a * (1 + 1e-12 * rng.standard_normal(shape))
    codes = np.zeros(shape, np.uint8)
    n[700, 300] = a[700, 300] * (1 + 1e-4)
    codes[700, 300] = Verdict.MISMATCH
    if unchecked:
        codes.reshape(-1)[rng.choice(a.size, unchecked, replace=False)] = Verdict.UNCHECKED
        codes[:, -1] = Verdict.MISMATCH
        n[:, -1] *= 1.01
    return Report("big", a, n, np.full(shape, 1e-14), 1e-9 * np.abs(a) + 1e-12, codes,
                  np.zeros(shape, bool), "float64", "compiled", Config.for_dtype("float64"))


COLUMN, STRAY = 5, (10, 20)


def column_and_stray_grad(x):
    """The README's f with a bad column (1e-3 relative) and one stray entry (1e-5 relative: by
    err/tol it would come last among the 24 + 1 failing entries)."""
    g = (1 - np.tanh(x) ** 2) * x[::-1] + np.tanh(x[::-1])
    g[:, COLUMN] *= 1 + 1e-3
    g[STRAY] *= 1 + 1e-5
    return g


def bfloat16_f(x):
    """f computed in bfloat16 (ml_dtypes): every entry UNCHECKED, and no arbitrary precision."""
    import ml_dtypes

    return np.sin(x.astype(ml_dtypes.bfloat16)).sum()
