"""Cost of the arbitrary-precision referee per entry, on the tiny transformer.

The referee computes an entry's exact derivative from central and one-sided differences
at two working precisions (30 and 50 digits by default), running the unmodified numpy
forward on object arrays. Measured in one run: one float64 loss evaluation, one
high-precision evaluation, and the referee's cost per entry over entries spread across
all parameter tensors; plus a full ``check_params`` with and without the referee.
Goal: <= 1 s per entry at 30 digits.

Run: python benchmarks/bench_referee.py [--quick]
"""
from __future__ import annotations

import sys
import time

import numpy as np
from _common import header, run, seconds, table

import gradcheck
from gradcheck.examples.transformer import loss, loss_and_grads, make_problem


def main(quick: bool = False) -> dict:
    from gradcheck.mp import evaluate, mp_derivative, to_mp

    header("arbitrary-precision referee: cost per entry (tiny transformer, 440 parameters)", quick,
           "one entry of every tensor (of every 4th here), check_params over all 37 tensors (block 1's 16 here)")
    params, ids, targets, cfg = make_problem(seed=0)
    names = list(params)
    rng = np.random.default_rng(0)
    picks = [(n, tuple(int(i) for i in rng.integers(0, params[n].shape))) for n in names]
    picks = picks[:: 4] if quick else picks
    checked = {n: params[n] for n in names if n.startswith("b1.") or not quick}

    t = time.perf_counter()
    for _ in range(20):
        loss(params, ids, targets, cfg)
    float_eval = (time.perf_counter() - t) / 20

    def loss_of(name):
        return lambda v: loss({**params, name: v}, ids, targets, cfg)

    t = time.perf_counter()
    evaluate(loss_of("head"), to_mp(params["head"]), dps=30)
    mp_eval = time.perf_counter() - t

    per_entry, evals, digits = [], [], []
    for name, ix in picks:
        t = time.perf_counter()
        d = mp_derivative(loss_of(name), params[name], ix, dps=30)
        per_entry.append(time.perf_counter() - t)
        evals.append(d.evaluations)
        digits.append(d.digits)
    _, all_grads = loss_and_grads(params, ids, targets, cfg)
    grads = {n: all_grads[n] for n in checked}
    lossf = lambda p: loss({**params, **p}, ids, targets, cfg)  # noqa: E731
    t = time.perf_counter()
    fd = gradcheck.check_params(lossf, checked, grads, adjudicate=False)
    fd_time = time.perf_counter() - t
    t = time.perf_counter()
    full = gradcheck.check_params(lossf, checked, grads)
    full_time = time.perf_counter() - t
    adjudicated = sum(r.adjudication.get("entries", 0) for r in full.reports.values())

    mean = float(np.mean(per_entry))
    print(table(["measure", "value"], [
        ["one float64 loss evaluation", seconds(float_eval)],
        ["one 30-digit loss evaluation", seconds(mp_eval) + f"  ({mp_eval / float_eval:.0f}x float64)"],
        [f"referee per entry, mean of {len(per_entry)} (30 digits)", seconds(mean)],
        ["referee per entry, worst", seconds(max(per_entry))],
        ["high-precision evaluations per entry (mean)", f"{np.mean(evals):.1f}"],
        ["certified digits (min over entries; 0 = exact zero)", f"{min(digits)}"],
        [f"check_params of {len(checked)} tensors, finite differences only", seconds(fd_time) + f"  passed={fd.passed}"],
        [f"check_params of {len(checked)} tensors with the referee ({adjudicated} entries adjudicated)",
         seconds(full_time) + f"  passed={full.passed}"],
    ]))
    verdict = "meets" if mean <= 1.0 else "MISSES"
    print(f"   referee per entry = {mean:.3f} s at 30 digits: {verdict} the goal <= 1 s")
    return {"float_eval_s": float_eval, "mp_eval_s": mp_eval, "per_entry_mean_s": mean,
            "per_entry_max_s": max(per_entry), "check_params_fd_s": fd_time,
            "check_params_referee_s": full_time, "adjudicated": adjudicated}


if __name__ == "__main__":
    sys.exit(run(main))
