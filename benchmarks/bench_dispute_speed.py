"""Speed and accuracy in one table: ``dispute`` with callable candidates.

A faster kernel is only a win if it is not less accurate. Each case gives ``dispute`` the
kernels themselves; it times them (one warm-up call, then interleaved rounds, best and
median per call) and judges their outputs against the exact value, so every line reads
"X: 3.1x faster, 898x more accurate" or "X: 2x faster, broken":

* rotary embedding, bfloat16, positions 65,536..131,072, 64x64 entries per head x 8 heads:
  the C kernel with a float32 angle, a numpy float32 implementation, and the C fallback
  that rounds the angle to bfloat16 (broken);
* matrix-vector product, bfloat16, 256 x 1024: C accumulating in bfloat16 (broken), C
  accumulating in float32, numpy float32 matmul rounded once.

Two ways to run it:

    python benchmarks/bench_dispute_speed.py [--quick]        # the table (gradcheck bench)
    pytest benchmarks/bench_dispute_speed.py --benchmark-only  # pytest-benchmark: each kernel
        timed by pytest-benchmark, the dispute's benchmark_record() in its extra_info
"""
from __future__ import annotations

import functools
import sys

import numpy as np
from _common import header, note, run, table


def _bf16(y):
    from gradcheck._core.formats import round_to_format

    return round_to_format(y, "bfloat16", as_dtype=True)


def _rope_numpy_f32(x, positions, base=10000.0):
    """Rotary embedding in numpy float32, rounded once to bfloat16."""
    d = x.shape[-1]
    half = d // 2
    inv_freq = (np.float32(base) ** (np.arange(half, dtype=np.float32) * np.float32(-2.0 / d)))
    angle = positions.astype(np.float32)[..., None] * inv_freq
    c, s = np.cos(angle), np.sin(angle)
    x32 = x.astype(np.float32)
    x1, x2 = x32[..., :half], x32[..., half:]
    return _bf16(np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1))


@functools.cache
def cases(quick: bool = False) -> dict:
    """name -> (math_fn, inputs, {candidate: callable})."""
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

    x, pos = rope_inputs(rows=64, dim=64, heads=1 if quick else 8, start=65536, stop=131072)
    a, v = matvec_inputs(rows=64 if quick else 256, n=1024)
    return {
        "rope bf16, positions 65536..131072": (rope_math, (x, pos), {
            "C float32 angle": rope_fast, "numpy float32": _rope_numpy_f32,
            "C bf16 angle": rope_reference}),
        "matvec bf16 256x1024": (matvec_math, (a, v), {
            "C bf16 accumulation": matvec_fast, "C f32 accumulation": matvec_reference,
            "numpy f32 matmul": lambda p, q: _bf16(p.astype(np.float32) @ q.astype(np.float32))}),
    }


@functools.cache
def disputed(name: str, quick: bool = False):
    from gradcheck import dispute

    math_fn, inputs, kernels = cases(quick)[name]
    return dispute(math_fn, inputs, kernels, "bfloat16", name=name, rounds=5 if quick else 9)


def main(quick: bool = False) -> dict:
    header("dispute with callable candidates: speed and accuracy in one table", quick,
           "8 rotary heads (1 here), 256 matvec rows (64 here), 9 timing rounds (5 here)")
    out = {}
    for name in cases(quick):
        r = disputed(name, quick)
        rec = r.benchmark_record()
        rows = []
        for k, c in rec["candidates"].items():
            rows.append([k, f"{c['median_s'] * 1e3:.3g} ms", f"{c['best_s'] * 1e3:.3g} ms",
                         f"{c.get('speedup', 1.0):.3g}x", c["mean_ulp"] if isinstance(c["mean_ulp"], str)
                         else f"{c['mean_ulp']:.3g}", f"{c['max_ulp']:.3g}",
                         "broken" if c["broken"] else "ok"])
        note(f"{name} ({rec['entries']} entries; speed-up against {rec['baseline']}, the slowest)")
        print(table(["kernel", "median", "best", "speed-up", "mean ulp", "max ulp", "bound"], rows))
        for line in r.verdict.splitlines():
            if ": " in line and ("faster" in line):
                note(line)
        out[name] = rec
    return out


# -- pytest-benchmark: each kernel timed by the plugin, the accuracy in extra_info ----------

def _params():
    return [(name, kernel) for name, (_, _, kernels) in cases(True).items() for kernel in kernels]


try:
    import pytest
except ImportError:  # pragma: no cover - the script runs without pytest
    pytest = None

if pytest is not None:
    @pytest.mark.parametrize("name, kernel", _params())
    def test_kernel_speed_and_accuracy(benchmark, name, kernel):
        _, inputs, kernels = cases(True)[name]
        record = disputed(name, True).benchmark_record()
        mine = record["candidates"][kernel]
        benchmark.extra_info.update({"dispute": record["function"], "dtype": record["dtype"],
                                     "baseline": record["baseline"], **mine})
        benchmark(kernels[kernel], *inputs)
        assert mine["broken"] == ("bf16" in kernel), mine  # the verdict the table reports


if __name__ == "__main__":
    sys.exit(run(main))
