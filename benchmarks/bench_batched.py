"""Batched engine vs the naive loop, on a vectorized numpy f(W) = tanh(a @ W) . b.

The headline check is over W's entries (96 x 96 = 9216 entries, 18432 evaluations).
``a`` and ``b`` are vectors of 96 (``A`` and ``B`` with one row); the same f written
once serves a single W (96, 96) and a batch (k, 96, 96). Target: batched >= 10x faster
than the naive loop. A third row checks the same expression over the output weights B
(96 x 96, with A and W 96 x 96 fixed), where most of f's work does not depend on the
checked tensor: that is where batching pays.

Besides the two contenders it measures the FLOOR: f alone on ready-made batches of
the same size, 2N rows in all (no perturbing, no reducing, no bookkeeping). No engine
that calls this f on full copies of W can be faster than the floor, so
``naive / floor`` is the best ratio any batched engine could reach on this machine, and
``batched / floor`` is this engine's own overhead. The same f on a smaller W shows how
the gain grows when f's arithmetic per call shrinks relative to Python's per-call cost.
A sweep over the byte budget shows why the default budget is small.

    python benchmarks/bench_batched.py [--quick]
"""
from __future__ import annotations

import sys

import numpy as np
from _common import compare, header, naive_loop, run, seconds, table

import gradcheck
from gradcheck._differences import CentralDifferences, steps_for
from gradcheck._evaluate import BatchedRunner
from gradcheck._evaluate import batched as _batched
from gradcheck.backends import NumpyBackend
from gradcheck.engines import CheckProblem

TARGET = 10.0


def make_f(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(n)
    b = rng.standard_normal(n)
    W = rng.standard_normal((n, n)) / np.sqrt(n)

    def f(w):
        """tanh(a @ W) . b; a batch (B, n, n) gives (B,)."""
        return np.tanh(a @ w) @ b

    def grad(w):
        return np.outer(a, (1 - np.tanh(a @ w) ** 2) * b)

    return f, grad, W


def make_f_over_b(n: int, seed: int = 0):
    """The same expression checked over the output weights: f(B) = sum(tanh(A @ W) * B),
    A and W n x n and fixed. The part that does not depend on B, tanh(A @ W), is done once
    per call of f, so a batch of perturbed B pays it once per call, the naive loop once per
    evaluation."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n))
    W = rng.standard_normal((n, n)) / np.sqrt(n)
    B = rng.standard_normal((n, n))

    def f(b):
        """sum(tanh(A @ W) * B); a batch (k, n, n) gives (k,)."""
        return (np.tanh(A @ W) * b).sum(axis=(-2, -1))

    def grad(b):
        return np.tanh(A @ W)

    return f, grad, B


def _engine(f, W, budget=None):
    work = np.array(W, copy=True)
    problem = CheckProblem(f=f, work=work, evaluate=lambda: float(f(work)), backend=NumpyBackend(),
                           cotangent=None, vectorized=True)
    return CentralDifferences(BatchedRunner(problem, budget_bytes=budget), work), work


def _floor(f, W, rows: int, total_rows: int):
    """f on ready-made batches of ``rows`` copies, ``total_rows`` rows in all."""
    batch = np.broadcast_to(W, (rows,) + W.shape).copy()
    calls, last = divmod(total_rows, rows)

    def go():
        for _ in range(calls):
            f(batch)
        if last:
            f(batch[:last])
    return go


def measure(n: int, repeat: int, with_check: bool, over: str = "W") -> dict:
    f, grad, W = (make_f if over == "W" else make_f_over_b)(n)
    engine, work = _engine(f, W)
    idx = np.arange(W.size)
    steps = steps_for(work.reshape(-1), 6e-6)
    scratch = W.copy()
    contenders = {
        "naive": lambda: naive_loop(lambda w: float(f(w)), scratch),
        "batched": lambda: engine.differences(idx, steps),
        "floor": _floor(f, W, engine.runner.rows, 2 * W.size),
    }
    if with_check:
        contenders["check"] = lambda: gradcheck.check(f, W, grad, engine="batched", vectorized=True,
                                                      progress=False)
    times = compare(contenders, repeat=repeat)
    out = {"n": n, "over": over, "entries": int(W.size), "rows_per_call": engine.runner.rows, **times,
           "naive_over_batched": times["naive"] / times["batched"],
           "naive_over_floor": times["naive"] / times["floor"],
           "batched_over_floor": times["batched"] / times["floor"]}
    if with_check:
        out["naive_over_check"] = times["naive"] / times["check"]
    return out


def budget_sweep(n: int, repeat: int, budgets) -> list[dict]:
    f, _, W = make_f(n)
    idx = np.arange(W.size)
    engines = {b: _engine(f, W, b)[0] for b in budgets}
    steps = steps_for(W.reshape(-1), 6e-6)
    times = compare({b: (lambda e=e: e.differences(idx, steps)) for b, e in engines.items()},
                    repeat=repeat, warmup=False)
    return [{"budget_bytes": b, "rows": engines[b].runner.rows, "seconds": t} for b, t in times.items()]


def main(quick: bool = False) -> dict:
    header("batched engine vs the naive loop, tanh(A @ W) . B, checked over W and over B", quick,
           "W of 96 x 96 (48 x 48 here), best of 5 (2 here), the byte-budget sweep")
    repeat = 2 if quick else 5
    sizes = [48, 16] if quick else [96, 16]
    results = [measure(n, repeat, with_check=(i == 0)) for i, n in enumerate(sizes)]
    results.append(measure(sizes[0], 2 if quick else 3, with_check=True, over="B"))
    rows = []
    for r in results:
        what = f"W {r['n']}x{r['n']}" if r["over"] == "W" else f"B {r['n']}x{r['n']} (A, W fixed)"
        rows.append([what, r["entries"], r["rows_per_call"], seconds(r["naive"]),
                     seconds(r["batched"]), f"{r['naive_over_batched']:.1f}x", seconds(r["floor"]),
                     f"{r['naive_over_floor']:.1f}x", f"{r['batched_over_floor']:.2f}x"])
    print(table(["checked over", "N", "rows/call", "naive loop", "batched", "naive/batched", "floor (f alone)",
                 "naive/floor", "batched/floor"], rows))
    head, over_b = results[0], results[-1]
    for r in (head, over_b):
        print(f"   full check(engine='batched') over {r['over']} {r['n']}x{r['n']}: {seconds(r['check'])}"
              f"  ({r['naive_over_check']:.1f}x faster than the naive loop)")
    budgets = [2**18, 2**20, 2**21, 2**22, 2**24, 2**26]
    sweep = [] if quick else budget_sweep(sizes[0], repeat, budgets)
    if sweep:
        print(f"   byte budget sweep on {sizes[0]}x{sizes[0]} (default {_batched.BUDGET_BYTES >> 10} KiB):")
        print(table(["budget", "rows/call", "batched"],
                    [[f"{s['budget_bytes'] >> 10} KiB", s["rows"], seconds(s["seconds"])] for s in sweep]))
    ratio = head["naive_over_batched"]
    for r in (head, over_b):
        got = r["naive_over_batched"]
        print(f"   over {r['over']} {r['n']}x{r['n']}: batched is {got:.1f}x faster than the naive loop:"
              f" {'meets' if got >= TARGET else 'MISSES'} the target >= {TARGET:.0f}x"
              f" (the floor allows at most {r['naive_over_floor']:.1f}x here)")
    return {"benchmark": "batched", "quick": quick, "sizes": results, "budget_sweep": sweep,
            "target": TARGET, "headline_ratio": ratio, "meets_target": ratio >= TARGET,
            "over_b_ratio": over_b["naive_over_batched"],
            "target_summary": (f"target {'met' if over_b['naive_over_batched'] >= TARGET else 'MISSED'} over B"
                               f" ({over_b['naive_over_batched']:.1f}x), "
                               f"{'met' if ratio >= TARGET else 'MISSED'} over W ({ratio:.1f}x;"
                               f" floor {head['naive_over_floor']:.1f}x)")}


if __name__ == "__main__":
    sys.exit(run(main))
