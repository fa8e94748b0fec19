"""The referee against a cancelling backward: before / after the claim's measured round-off.

A layer norm's VJP of ``v . layer_norm(x)`` at ``x = 5 + v``, with ``x[3]`` within ``off`` of
the mean of the others: entry 3 is ~``1e-5 * off`` computed from terms of order 1, so the
claim's own rounding is ~1e-16, far above the referee's old allowance ``k*u*max|a|`` (~4e-20).
Each case is checked twice in the same run: "before" with the measurement switched off
(``gradcheck._pipeline.judge._claim_rounding`` returning None: the old referee), "after" as
shipped. Printed: false MISMATCHes (a correct claim), verdicts at entry 3, the planted-bug
control (1e-4 relative at the largest entry, which reaches the referee), time ratio.

    PYTHONPATH=src nice -n 10 python benchmarks/bench_claimround.py
"""
from __future__ import annotations

import time

import numpy as np
from _common import header, note, table
from bench_axes import layer_norm, layer_norm_vjp  # the same layer as bench_axes.py

import gradcheck
import gradcheck._pipeline.judge as judge
from gradcheck import Verdict

N, AT = 64, 3
SEEDS = range(8)


def case(seed, off, bug=0.0):
    v = np.random.default_rng(seed).standard_normal(N)
    v[AT] = (v.sum() - v[AT]) / (N - 1) + off
    x = 5 + v
    at = int(np.argmax(np.abs(layer_norm_vjp(x, v))))

    def grad(z):
        out = layer_norm_vjp(z, v)
        out[at] *= 1 + bug
        return out
    return (lambda z: float(np.add.reduce(v * layer_norm(z)))), x, grad, at


def run(measure: bool, seeds=SEEDS) -> dict:
    shipped = judge._claim_rounding
    if not measure:
        judge._claim_rounding = lambda subject, cfg: None
    out = {"false": 0, "at3": {}, "caught": 0, "bugs": 0, "seconds": 0.0}
    try:
        for seed in seeds:
            for off in (1e-6, 1e-8):
                f, x, grad, _ = case(seed, off)
                began = time.perf_counter()
                r = gradcheck.check(f, x, grad=grad)
                out["seconds"] += time.perf_counter() - began
                out["false"] += r.counts[Verdict.MISMATCH]
                key = f"{off:g}:{r.verdicts[AT].name}"
                out["at3"][key] = out["at3"].get(key, 0) + 1
            f, x, grad, at = case(seed, 1e-6, bug=1e-4)
            r = gradcheck.check(f, x, grad=grad)
            out["bugs"] += 1
            out["caught"] += r.verdicts[at] == Verdict.MISMATCH
    finally:
        judge._claim_rounding = shipped
    return out


def main(quick: bool = False) -> dict:
    header(f"referee against a cancelling backward (layer norm VJP, N = {N}): before / after the claim's "
           "measured round-off", quick, f"seeds 4 to 7 of the {len(SEEDS)} (4 here: 8 correct checks and 4 "
           "planted bugs per referee instead of 16 and 8)")
    seeds = SEEDS[:4] if quick else SEEDS
    before, after = run(False, seeds), run(True, seeds)
    print(table(["referee", "false MISMATCH", "entry 3", "planted 1e-4 caught", "time"], [
        [name, f"{r['false']} / {2 * len(seeds)} correct checks", str(dict(sorted(r["at3"].items()))),
         f"{r['caught']}/{r['bugs']}", f"{r['seconds']:.2f} s"] for name, r in (("before", before), ("after", after))]))
    note(f"time after/before: {after['seconds'] / before['seconds']:.2f}x")
    return {"benchmark": "claimround", "before": before, "after": after,
            "meets_target": after["false"] == 0 and after["caught"] == after["bugs"]}


if __name__ == "__main__":
    from _common import run as run_cli

    run_cli(main)
