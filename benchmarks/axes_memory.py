"""Peak memory of ``check(..., independent_axes=...)`` stage by stage (issue 16, item 2).

Each stage of ``check_one`` (prepare, the coloured first pass, sanity, judge, assemble) is
wrapped: tracemalloc's peak is reset when it starts, so each line gives the stage's own
peak (and the first line what the returned report still holds), in multiples of N (one float64 array of the input's size), above what was held
before the check (after a warm-up check of the same case). Cases: ``tanh`` (1e6 entries,
``independent_axes="all"``; ``tanh_batched``: the same, ``vectorized=True``), ``layer`` and
``bug`` (bench_axes's (4096, 256) layer norm, correct and with its planted bug), ``suspects``
(the same layer norm at x = the check's own cotangent, ``adjudicate=False``: nearly every
entry a suspect of the second look; ``suspects512``: at (512, 256)). The report's arrays and evaluation count are pickled to
OUT, so two trees can be compared bit for bit::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/axes_memory.py OUT.pkl tanh layer bug
    python benchmarks/axes_memory.py --compare BEFORE.pkl AFTER.pkl
"""
from __future__ import annotations

import os
import pickle
import sys
import time
import tracemalloc

import numpy as np

import gradcheck
from gradcheck._pipeline import check as pipeline
from gradcheck._pipeline.prepare import make_cotangent

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_axes import layer_norm, layer_norm_vjp, with_bug  # noqa: E402

STAGES = ("prepare", "coloured_difference", "sanity", "judge", "assemble")
ARRAYS = ("codes", "numeric", "noise", "tolerance", "refined", "causes", "exact", "digits", "left", "right")
stages: list[tuple[str, int, int, int]] = []


def _wrap(name: str) -> None:
    original = getattr(pipeline, name)

    def wrapped(*args, **kwargs):
        start, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        out = original(*args, **kwargs)
        end, peak = tracemalloc.get_traced_memory()
        stages.append((name, start, peak, end))
        return out

    setattr(pipeline, name, wrapped)


def case_call(case: str):
    if case in ("tanh", "tanh_batched"):  # tanh_batched: the same check, f vectorized (a batch of +h, -h)
        x = np.random.default_rng(0).standard_normal(10**6)
        return x.size, lambda: gradcheck.check(np.tanh, x, lambda x, g: g * (1 - np.tanh(x) ** 2),
                                               independent_axes="all", vectorized=case == "tanh_batched")
    if case.startswith("suspects"):  # nearly every entry a suspect: x is the check's own cotangent
        shape = (512, 256) if case == "suspects512" else (4096, 256)
        x = make_cotangent(shape, gradcheck.Config.for_dtype("float64"))
        return x.size, lambda: gradcheck.check(layer_norm, x, layer_norm_vjp, independent_axes=(0,), adjudicate=False)
    x = np.random.default_rng(1).standard_normal((4096, 256))
    grad = with_bug if case == "bug" else layer_norm_vjp
    return x.size, lambda: gradcheck.check(layer_norm, x, grad, independent_axes=(0,))


def run(case: str) -> dict:
    n, call = case_call(case)
    tracemalloc.start()
    call()
    stages.clear()
    tracemalloc.reset_peak()
    base, _ = tracemalloc.get_traced_memory()
    t = time.perf_counter()
    report = call()
    took = time.perf_counter() - t
    held, _ = tracemalloc.get_traced_memory()  # what outlives the check: the report
    tracemalloc.stop()
    unit = 8 * n
    peak = max(p for _, _, p, _ in stages)
    print(f"{case}: peak {(peak - base) / unit:.1f} N ({(peak - base) / 2**20:.0f} MiB), "
          f"the report holds {(held - base) / unit:.2f} N, {took:.1f} s, {report.evaluations} evaluations")
    for name, start, p, end in stages:
        print(f"  {name:20s} start {(start - base) / unit:5.1f} N  peak {(p - base) / unit:5.1f} N  "
              f"end {(end - base) / unit:5.1f} N")
    out = {k: np.asarray(getattr(report, k)) for k in ARRAYS}
    out["evaluations"] = report.evaluations
    return out


def compare(before: str, after: str) -> bool:
    with open(before, "rb") as fa, open(after, "rb") as fb:
        a, b = pickle.load(fa), pickle.load(fb)
    same_all = True
    for case in a:
        for k in sorted(set(a[case]) & set(b[case])):
            x, y = a[case][k], b[case][k]
            same = (x == y) if np.ndim(x) == 0 else (
                x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x.view(np.uint8), y.view(np.uint8)))
            if not same:
                same_all = False
                print("DIFFERENT", case, k)
    print("bit-identical" if same_all else "DIFFERENT")
    return same_all


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        sys.exit(0 if compare(sys.argv[2], sys.argv[3]) else 1)
    for stage in STAGES:
        _wrap(stage)
    results = {c: run(c) for c in sys.argv[2:]}
    with open(sys.argv[1], "wb") as fh:
        pickle.dump(results, fh)
