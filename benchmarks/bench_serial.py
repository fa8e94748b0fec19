"""Serial engine vs the bare naive Python loop (the seed's), on numpy functions.

Both sides make the same 2N evaluations of the same f; the serial engine adds what
makes its numbers trustworthy (the realized step, step in x's dtype, restore in a
``finally``, non-finite skip). Target: serial engine <= 1.10x the naive loop.

Two ratios are printed: the engine's pass over all entries (what the target is about),
and a full ``check(engine="serial")`` (base evaluations, claimed gradient, verdicts,
report) for context. Then the engine's own cost per evaluation, as CPU time (not wall
time: it holds on a loaded machine): the engine and the naive loop on a function that
returns a constant, best of 40, their difference over 2N.

    python benchmarks/bench_serial.py [--quick]
"""
from __future__ import annotations

import sys
import time

import numpy as np
from _common import compare, header, naive_loop, run, seconds, table

import gradcheck
from gradcheck._differences import steps_for
from gradcheck.backends import NumpyBackend
from gradcheck.engines import CheckProblem, select_engine

TARGET = 1.10


def _cases(quick: bool):
    rng = np.random.default_rng(0)
    n = 16 if quick else 32
    A = rng.standard_normal((8, n))
    B = rng.standard_normal((8, n))
    W = rng.standard_normal((n, n)) / np.sqrt(n)

    def mlp(w):
        return float((np.tanh(A @ w) * B).sum())

    def mlp_grad(w):
        return A.T @ ((1 - np.tanh(A @ w) ** 2) * B)

    x = rng.standard_normal(256 if quick else 1024)

    def cheap(v):
        return float((v * v).sum())

    return [
        (f"sum(tanh(A @ W) * B), W {n}x{n}", mlp, W, mlp_grad),
        (f"sum(x * x), x of {x.size} (a very cheap f)", cheap, x, lambda v: 2 * v),
    ]


def main(quick: bool = False) -> dict:
    header("serial engine vs the naive loop (2N evaluations of a numpy f)", quick,
           "W of 32 x 32 (16 x 16 here), x of 1024 (256 here), best of 7 (3 here)")
    repeat = 3 if quick else 7
    rows, results = [], {}
    for name, f, x, grad in _cases(quick):
        work = np.array(x, copy=True)
        problem = CheckProblem(f=f, work=work, evaluate=lambda f=f, work=work: float(f(work)),
                               backend=NumpyBackend(), cotangent=None)
        engine = select_engine("serial", problem)[0]
        idx = np.arange(work.size)
        steps = steps_for(work.reshape(-1), 6e-6)
        scratch = np.array(x, copy=True)
        times = compare(
            {
                "naive": lambda f=f, scratch=scratch: naive_loop(f, scratch),
                "engine": lambda engine=engine, idx=idx, steps=steps: engine.differences(idx, steps),
                "check": lambda f=f, x=x, grad=grad: gradcheck.check(f, x, grad, engine="serial", progress=False),
            },
            repeat=repeat,
        )
        engine_ratio = times["engine"] / times["naive"]
        check_ratio = times["check"] / times["naive"]
        results[name] = {"entries": int(x.size), **{k: v for k, v in times.items()},
                         "engine_over_naive": engine_ratio, "check_over_naive": check_ratio}
        rows.append([name, x.size, seconds(times["naive"]), seconds(times["engine"]),
                     f"{engine_ratio:.3f}x", seconds(times["check"]), f"{check_ratio:.3f}x"])
    print(table(["f", "N", "naive loop", "serial engine", "engine/naive", "full check", "check/naive"], rows))
    results["overhead_ns_per_evaluation"] = overhead = _overhead_ns()
    print(f"   the engine's own cost: {overhead:.0f} ns per evaluation (CPU time, a constant f, 4096 entries)")
    headline = results[next(iter(results))]["engine_over_naive"]
    verdict = "meets" if headline <= TARGET else "MISSES"
    print(f"   serial engine / naive loop = {headline:.3f}x on the first f: {verdict} the target <= {TARGET}x")
    return {"benchmark": "serial", "quick": quick, "cases": results, "target": TARGET,
            "headline_ratio": headline, "meets_target": headline <= TARGET}


def _overhead_ns(n: int = 4096, repeat: int = 40) -> float:
    """CPU seconds of the engine's pass minus the naive loop's, both on a constant f, per evaluation."""
    work, scratch = np.random.default_rng(1).standard_normal(n), np.random.default_rng(1).standard_normal(n)
    problem = CheckProblem(f=None, work=work, evaluate=lambda: 1.0, backend=NumpyBackend(), cotangent=None)
    engine = select_engine("serial", problem)[0]
    idx, steps = np.arange(n), steps_for(work, 6e-6)
    best = {"engine": float("inf"), "naive": float("inf")}
    for _ in range(repeat):
        for name, fn in (("engine", lambda: engine.differences(idx, steps)),
                         ("naive", lambda: naive_loop(lambda v: 1.0, scratch))):
            began = time.process_time()
            fn()
            best[name] = min(best[name], time.process_time() - began)
    return (best["engine"] - best["naive"]) / (2 * n) * 1e9


if __name__ == "__main__":
    sys.exit(run(main))
