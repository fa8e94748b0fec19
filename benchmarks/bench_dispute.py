"""How long ``gradcheck.dispute`` takes, and where the time goes.

Three disputes over about 1e5 entries each: the C rotary-embedding pair in bfloat16
(positions 1000..8000), an elementwise op (exp) and a row-wise op (softmax), plus the C
bfloat16 matrix-vector pair (256 rows of length 1024: a contraction, so the exact kernels;
``bench_dispute_exact.py`` sets them against the mpmath path). Each is timed as a whole (best of ``repeat``), then split
into its phases: the exact values (one object-array pass at arbitrary precision, where numpy
calls an mpmath method per element and operation; the exact kernels for the matrix-vector
product, a contraction), the float32 evaluation, and the rest (the sensitivities behind the
bound, measuring the candidates), timed inside that same call (``exact_values`` and
``float32_run`` wrapped with a timer while it runs), not by running them again.

    python benchmarks/bench_dispute.py            # ~1e5 entries per dispute
    python benchmarks/bench_dispute.py --quick    # ~1e4 entries
"""
from __future__ import annotations

import contextlib
import sys
import time

import numpy as np
from _common import header, run, seconds, table


def _problems(quick: bool):
    from gradcheck._core.formats import round_to_format
    from gradcheck.subjects import (
        matvec_fast,
        matvec_inputs,
        matvec_math,
        matvec_reference,
        rope_fast,
        rope_inputs,
        rope_math,
        rope_reference,
    )

    rows = 160 if quick else 1600
    x, pos = rope_inputs(rows=rows, dim=64, start=1000, stop=8000)
    rope = ("rope (C pair)", rope_math, (x, pos),
            {"fast": rope_fast(x, pos), "reference": rope_reference(x, pos)})
    rng = np.random.default_rng(0)
    n = 10240 if quick else 102400
    e = round_to_format(rng.uniform(-10, 10, n), "bfloat16", as_dtype=True)
    bf16 = lambda y: round_to_format(y, "bfloat16", as_dtype=True)  # noqa: E731  candidates are bfloat16 outputs
    exp = ("exp", np.exp, (e,), {"ml_dtypes": np.exp(e), "float32": bf16(np.exp(e.astype(np.float32)))})
    s = round_to_format(rng.standard_normal((n // 256, 256)) * 3, "bfloat16", as_dtype=True)

    def softmax(v):
        z = np.exp(v - v.max(axis=-1, keepdims=True))
        return z / z.sum(axis=-1, keepdims=True)

    s32 = bf16(softmax(s.astype(np.float32)))
    soft = ("softmax rows of 256", softmax, (s,), {"float32 rounded": s32, "bf16 math": softmax(s)})
    a, v = matvec_inputs(rows=64 if quick else 256, n=1024)
    mv = ("matvec n=1024 (C pair)", matvec_math, (a, v),
          {"fast": matvec_fast(a, v), "reference": matvec_reference(a, v)})
    return [rope, exp, soft, mv]


@contextlib.contextmanager
def _phases(spent: dict[str, float]):
    """Time, inside the dispute calls made under it, its two phases that are timed apart: the
    exact values (``exact_values``) and the float32 evaluation (``float32_run``), summed into
    ``spent``. The dispute runs once; its phases are read from that run, not run again."""
    from gradcheck._lowp import dispute as module

    def timed(key, fn):
        def run(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[key] = spent.get(key, 0.0) + time.perf_counter() - t0
        return run

    saved = module.exact_values, module.float32_run
    module.exact_values, module.float32_run = timed("exact", saved[0]), timed("float32", saved[1])
    try:
        yield spent
    finally:
        module.exact_values, module.float32_run = saved


def main(quick: bool = False) -> dict:
    from gradcheck import dispute
    from gradcheck.mp import backend

    header(f"dispute: exact values at 40 digits (mpmath backend: {backend()})", quick,
           "~1e5 entries per dispute (~1e4 here), 256 matvec rows (64 here), best of 2 (1 here)")
    repeat = 1 if quick else 2
    rows, out = [], {}
    for name, math_fn, inputs, cands in _problems(quick):
        best, result, mp_time, f32_time = np.inf, None, 0.0, 0.0
        for _ in range(repeat):
            with _phases({}) as spent:
                t = time.perf_counter()
                result = dispute(math_fn, inputs, cands, "bfloat16", name=name)
                took = time.perf_counter() - t
            if took < best:  # the phases of the best run
                best, mp_time, f32_time = took, spent.get("exact", 0.0), spent.get("float32", 0.0)
        entries = int(np.prod(result.shape))
        rest = max(best - mp_time - f32_time, 0.0)
        rows.append([name, entries, seconds(best), f"{best / entries * 1e6:.1f} us",
                     seconds(mp_time), seconds(f32_time), seconds(rest),
                     ", ".join(result.broken) or "-"])
        out[name] = {"entries": entries, "seconds": best, "exact_seconds": mp_time,
                     "float32_seconds": f32_time, "measure_seconds": rest,
                     "broken": list(result.broken), "most_accurate": result.most_accurate}
    print(table(["dispute", "entries", "total", "per entry", "exact values", "float32", "bound+measure",
                 "broken"], rows))
    return out


if __name__ == "__main__":
    sys.exit(run(main))
