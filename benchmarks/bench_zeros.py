"""Exact zeros proven together vs one by one: the referee on claims of 0 (issue 27).

The issue's case: 180 entries, 131 on the flat side of a relu (claims of exactly 0 that the
finite differences cannot tell from noise), numpy f, so the referee settles them at 30
digits. "one by one" switches the batch off (``gradcheck._adjudicate.zeros.BATCH_MIN``
above any count: the referee's old path, ~20 high-precision evaluations per zero);
"together" is as shipped (two exact directional derivatives over all of them). Both in one
run, interleaved, best of k; verdicts compared entry by entry.

    PYTHONPATH=src nice -n 5 python benchmarks/bench_zeros.py [--quick]
"""
from __future__ import annotations

import logging

import numpy as np
from _common import compare, header, note, run, seconds, table

import gradcheck
from gradcheck._adjudicate import zeros


def case(n: int = 180, flat: int = 131):
    rng = np.random.default_rng(0)
    x = rng.uniform(0.1, 2.0, n)
    x[rng.choice(n, flat, replace=False)] *= -1
    w = rng.standard_normal(n)
    return (lambda v: (np.where(v > 0, v, 0) ** 2 * w).sum()), x, (lambda v: np.where(v > 0, 2 * v, 0) * w)


def main(quick: bool = False) -> dict:
    logging.getLogger("gradcheck").setLevel(logging.ERROR)
    header("exact zeros: proven together vs one by one", quick, "repeats (1 instead of 3)")
    f, x, g = case()
    shipped = zeros.BATCH_MIN
    reports = {}

    def checked(name: str, batch_min: int):
        def go():
            zeros.BATCH_MIN = batch_min
            try:
                reports[name] = gradcheck.check(f, x, g)
            finally:
                zeros.BATCH_MIN = shipped
        return go
    best = compare({"one by one": checked("one by one", 10**9), "together": checked("together", shipped)},
                   repeat=1 if quick else 3, warmup=False)
    same = np.array_equal(reports["one by one"].codes, reports["together"].codes) and np.array_equal(
        reports["one by one"].causes, reports["together"].causes)
    rows = [(name, seconds(best[name]), reports[name].evaluations, reports[name].summary().split(" -- ")[1])
            for name in best]
    print(table(["referee on 131 zeros", "best wall", "evaluations of f", "verdicts"], rows))
    ratio = best["one by one"] / best["together"]
    note(f"together is {ratio:.1f}x faster; verdicts and causes identical at every entry: {same}")
    return {"seconds": best, "ratio": ratio, "same_verdicts": bool(same),
            "evaluations": {k: r.evaluations for k, r in reports.items()}}


if __name__ == "__main__":
    raise SystemExit(run(main))
