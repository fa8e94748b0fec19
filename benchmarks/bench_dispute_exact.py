"""Exact at float speed: ``dispute`` with its exact kernels against the mpmath path.

The same disputes, on the same inputs, in one run: once as ``dispute`` runs them (a
definition made of contractions goes to the exact numba kernels, ``gradcheck.mp._exactsum``),
once with the kernels turned off (``gradcheck.mp._exact.disabled()``: the definition evaluated
element by element at 40 digits with mpmath, as before the kernels existed). Both must give
the same verdict and the same correctly rounded values, bit for bit; the ratio is the speed-up.

* bfloat16 matmul with K = 1,024: 32 x 1,024 @ 1,024 x 32 (1 M multiply-adds), candidates a
  float32 matmul rounded once and a float16-accumulating one;
* rows of 4,096 bfloat16 values: sums (16 rows) and cumulative sums (4 rows);
* a 1-D convolution, 4,096 by 64 taps;
* a composite, gelu(x @ w), where only the contraction goes to the kernels;
* a 128 x 4,096 x 128 bfloat16 matmul (67 M multiply-adds) with the kernels; the mpmath
  path is timed on 4 of its 128 rows and scaled (it would take most of an hour).

The kernels' path is timed twice: as ``dispute`` runs by default, and with
``float32_evaluation=False`` (no informational float32 run of the definition: for a matmul
that run is numpy's sgemm, whose OpenBLAS threads, on a busy machine, take longer than all of
dispute's own work; ``OPENBLAS_NUM_THREADS=1`` shows the same). The mpmath path, timed once
as ``dispute`` runs by default, is the baseline of both ratios.

    python benchmarks/bench_dispute_exact.py            # full sizes
    python benchmarks/bench_dispute_exact.py --quick    # smaller, the big matmul at 32 x 1,024 x 32
"""
from __future__ import annotations

import sys
import time

import numpy as np
from _common import header, run, seconds, table


def _bf16(y):
    from gradcheck._core.formats import round_to_format

    return round_to_format(np.asarray(y, dtype=np.float64), "bfloat16", as_dtype=True)


def _problems(quick: bool):
    from gradcheck._lowp import definitions as d
    from gradcheck._lowp.kernel_table import _naive_matmul16

    rng = np.random.default_rng(0)
    k = 256 if quick else 1024
    a, b = _bf16(rng.standard_normal((32, k))), _bf16(rng.standard_normal((k, 32)))
    f32 = _bf16(a.astype(np.float32) @ b.astype(np.float32))
    naive = _bf16(_naive_matmul16(a, b).astype(np.float32))
    rows = _bf16(rng.standard_normal((16, 4096 if not quick else 1024)))
    signal, taps = _bf16(rng.standard_normal(4096 if not quick else 1024)), _bf16(rng.standard_normal(64))
    w = _bf16(rng.standard_normal((k, 8)) / 16)
    return [
        (f"matmul bf16 32x{k} @ {k}x32", d.matmul, (a, b), {"float32": f32, "float16 accumulation": naive}),
        (f"sum of {rows.shape[1]}, 16 rows", d.total, (rows,), {"float32": _bf16(rows.astype(np.float32).sum(-1))}),
        (f"cumsum of {rows.shape[1]}, 4 rows", d.cumulative, (rows[:4],),
         {"float32": _bf16(np.cumsum(rows[:4].astype(np.float32), -1))}),
        (f"convolve {signal.size} by 64", np.convolve, (signal, taps),
         {"float32": _bf16(np.convolve(signal.astype(np.float32), taps.astype(np.float32)))}),
        (f"gelu(x @ w), 32x{k} @ {k}x8", lambda p, q: d.gelu_erfc(p @ q), (a, w),
         {"float32": _bf16(d.gelu_erfc(a.astype(np.float32) @ w.astype(np.float32)))}),
    ]


def _timed(fn, repeat: int):
    """(best wall time, best CPU time of this process, the last result): on a shared machine
    the CPU time is the figure that holds (threads' CPU adds up, so it never flatters them)."""
    best, cpu, out = np.inf, np.inf, None
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        best, cpu = min(best, time.perf_counter() - t), min(cpu, time.process_time() - c)
    return (best, cpu), out


def _same(fast, slow) -> bool:
    return fast.broken == slow.broken and np.array_equal(
        np.asarray(fast.correctly_rounded).view(np.uint16), np.asarray(slow.correctly_rounded).view(np.uint16))


def _pair(name, math_fn, inputs, cands, repeat):
    from gradcheck import dispute
    from gradcheck.mp._exact import disabled

    dispute(math_fn, inputs, cands, "bfloat16")  # warm-up: the kernels load from numba's cache
    fast_s, fast = _timed(lambda: dispute(math_fn, inputs, cands, "bfloat16", name=name), repeat)
    bare_s, bare = _timed(lambda: dispute(math_fn, inputs, cands, "bfloat16", name=name,
                                          float32_evaluation=False), repeat)
    with disabled():
        slow_s, slow = _timed(lambda: dispute(math_fn, inputs, cands, "bfloat16", name=name), 1)
    return fast_s, bare_s if _same(bare, slow) else (np.nan, np.nan), slow_s, fast, slow


def _big(quick: bool):
    """The 128 x 4096 x 128 matmul with the kernels; the mpmath path on 4 rows (--quick: 2), scaled."""
    from gradcheck import dispute
    from gradcheck._lowp import definitions as d
    from gradcheck.mp._exact import disabled

    rng = np.random.default_rng(1)
    m, k = (32, 1024) if quick else (128, 4096)
    a, b = _bf16(rng.standard_normal((m, k))), _bf16(rng.standard_normal((k, m)))
    cand = {"float32": _bf16(a.astype(np.float32) @ b.astype(np.float32))}
    fast_t, fast = _timed(lambda: dispute(d.matmul, (a, b), cand, "bfloat16"), 2)
    rows = 2 if quick else 4
    part = {"float32": cand["float32"][:rows]}
    with disabled():
        (slow_s, slow_c), slow = _timed(lambda: dispute(d.matmul, (a[:rows], b), part, "bfloat16"), 1)
    same = fast.broken == slow.broken and np.array_equal(
        np.asarray(fast.correctly_rounded)[:rows].view(np.uint16), np.asarray(slow.correctly_rounded).view(np.uint16))
    return f"matmul bf16 {m}x{k}x{m}", fast_t, (slow_s * m / rows, slow_c * m / rows), same, fast, rows


def main(quick: bool = False) -> dict:
    header("dispute: exact kernels vs the mpmath path, same inputs, one run", quick,
           "the 1,024-long matmuls and 4,096-long rows and signal (256 and 1,024), the big matmul at "
           "128 x 4,096 x 128 (32 x 1,024 x 32), its mpmath path on 4 rows (2), 7 repeats (3)")
    rows, out = [], {}
    for name, math_fn, inputs, cands in _problems(quick):
        (fast_s, fast_c), (bare_s, bare_c), (slow_s, slow_c), fast, slow = _pair(
            name, math_fn, inputs, cands, 3 if quick else 7)
        same = _same(fast, slow)
        rows.append([name, seconds(fast_s), seconds(slow_s), f"{slow_s / fast_s:,.0f}x",
                     f"{seconds(fast_c)} / {seconds(slow_c)}", f"{slow_c / fast_c:,.0f}x",
                     f"{seconds(bare_s)} / {seconds(bare_c)}", f"{slow_s / bare_s:,.0f}x / {slow_c / bare_c:,.0f}x",
                     ", ".join(fast.broken) or "-", "yes" if same else "NO", fast.exact_how.split(" (")[0]])
        out[name] = {"kernels_s": fast_s, "mpmath_s": slow_s, "ratio": slow_s / fast_s,
                     "kernels_cpu_s": fast_c, "mpmath_cpu_s": slow_c, "cpu_ratio": slow_c / fast_c,
                     "kernels_no_f32_s": bare_s, "kernels_no_f32_cpu_s": bare_c,
                     "broken": list(fast.broken), "same_verdict_and_values": same}
    name, (fast_s, fast_c), (slow_est, slow_cest), same, fast, part = _big(quick)
    rows.append([name, seconds(fast_s), f"~{seconds(slow_est)} ({part} rows, scaled)", f"~{slow_est / fast_s:,.0f}x",
                 f"{seconds(fast_c)} / ~{seconds(slow_cest)}", f"~{slow_cest / fast_c:,.0f}x", "-", "-",
                 ", ".join(fast.broken) or "-", f"yes ({part} rows)" if same else "NO", fast.exact_how.split(" (")[0]])
    out[name] = {"kernels_s": fast_s, "mpmath_s_estimated": slow_est, "ratio": slow_est / fast_s,
                 "kernels_cpu_s": fast_c, "mpmath_cpu_s_estimated": slow_cest, "cpu_ratio": slow_cest / fast_c,
                 "same_verdict_and_values": same}
    print(table(["dispute", "kernels", "mpmath path", "ratio", "CPU: kernels / mpmath", "CPU ratio",
                 "kernels, no f32 run: wall / CPU", "ratio: wall / CPU", "broken", "same verdict+values", "exact values by"], rows))
    return out


if __name__ == "__main__":
    sys.exit(run(main))
