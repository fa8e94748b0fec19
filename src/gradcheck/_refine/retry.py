"""The first retry: entries whose step left f's domain are differenced again with smaller steps."""
from __future__ import annotations

import numpy as np

from .._classify.kernel import classify  # the fused kernel from 1e5 entries, numpy below
from .._classify.rule import rule_of
from .._differences import slope_and_noise


def retry_nonfinite_steps(differencer, x, a, diffs, steps, codes, numeric, noise, unit, cfg):
    """Entries whose x and claimed value are finite but whose perturbed evaluations were
    not (a step that left f's domain, e.g. log near 0) are retried with a step relative
    to |x_i| alone, then smaller ones. ``steps`` and ``diffs`` are updated in place for
    the entries that worked, so a later step study starts from a step inside the domain.
    Returns the positions that were retried successfully, and the evaluations spent."""
    fp, fm, denom = diffs
    stuck = np.flatnonzero(
        np.isfinite(x) & np.isfinite(a) & ~(np.isfinite(fp) & np.isfinite(fm))
    )
    done, evaluations = [], 0
    # Only the stuck entries' steps (not an array of N for every check).
    relative = cfg.step * np.maximum(np.abs(x[stuck]), np.finfo(np.float64).tiny)
    for shrink in (1.0, 1e-2, 1e-4):
        if not stuck.size:
            break
        trial = np.minimum(relative * shrink, steps[stuck])
        p, m, d = differencer(stuck, trial)
        ok = np.isfinite(p) & np.isfinite(m) & (d > 0)
        if ok.any():
            idx = stuck[ok]
            fp[idx], fm[idx], denom[idx], steps[idx] = p[ok], m[ok], d[ok], trial[ok]
            n, z = slope_and_noise(p[ok], m[ok], d[ok], unit)
            numeric[idx], noise[idx] = n, z
            codes[idx] = classify(a[idx], n, z, **rule_of(cfg))
            done.append(idx)
        evaluations += 2 * stuck.size
        stuck, relative = stuck[~ok], relative[~ok]
    return (np.concatenate(done) if done else np.zeros(0, dtype=np.int64)), evaluations
