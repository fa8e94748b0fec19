"""Processes engine vs serial on a costly pure-Python f (about 1 ms per call).

The pool forks once per check (its start-up is included in every time below), each
worker differences a chunk of entries with the serial code, and the results are
bit-identical to serial's (checked here too). The ideal speedup is the core count.

    python benchmarks/bench_processes.py [--quick]
"""
from __future__ import annotations

import math
import sys

import numpy as np
from _common import compare, cores, header, run, seconds, table, wall

import gradcheck
from gradcheck._differences import CentralDifferences, steps_for
from gradcheck._evaluate import ProcessesRunner
from gradcheck.backends import NumpyBackend
from gradcheck.engines import CheckProblem, select_engine

PER_CALL_SECONDS = 1e-3


def make_f(n: int, target_seconds: float = PER_CALL_SECONDS):
    """A smooth f of x in R^n in pure Python whose cost is tuned to ``target_seconds`` per
    call, and its gradient."""

    def pair(sweeps: int):
        def f(x):
            values = [float(v) for v in x.ravel()]
            total = 0.0
            for s in range(sweeps):
                w = 1.0 + 0.01 * s
                for i, v in enumerate(values):
                    total += math.tanh(w * v) * (1.0 + 0.001 * i)
            return total / sweeps

        def grad(x):
            i = np.arange(x.size).reshape(x.shape)
            w = 1.0 + 0.01 * np.arange(sweeps)[:, None]
            t = np.tanh(w * x.reshape(1, -1))
            return (w * (1 - t**2)).mean(axis=0).reshape(x.shape) * (1.0 + 0.001 * i)

        return f, grad

    x = np.random.default_rng(0).standard_normal(n)
    probe, _ = pair(2)
    per_sweep = min(wall(lambda: probe(x)) for _ in range(20)) / 2  # best: the unloaded cost
    return pair(max(1, round(target_seconds / per_sweep)))


def main(quick: bool = False) -> dict:
    header(f"processes engine vs serial, pure-Python f of ~{PER_CALL_SECONDS * 1e3:.0f} ms per call", quick,
           "N = 200 and 1000 (60 here: too few evaluations for a pool to pay), best of 3 (1 here)")
    results = [measure(n, quick) for n in ((60,) if quick else (200, 1000))]
    rows = []
    for r in results:
        rows.append(["engine pass (2N evaluations)", r["entries"], seconds(r["f_seconds_per_call"]),
                     seconds(r["serial"]), seconds(r["processes"]), f"{r['speedup']:.2f}x", f"{cores()}x"])
        rows.append(["full check", r["entries"], seconds(r["f_seconds_per_call"]),
                     seconds(r["check_seconds"]["check serial"]), seconds(r["check_seconds"]["check processes"]),
                     f"{r['check_speedup']:.2f}x", f"{cores()}x"])
    print(table(["what", "N", "f per call", "serial", "processes", "speedup", f"ideal ({cores()} cores)"], rows))
    for r in results:
        print(f"   N = {r['entries']}: results identical to serial bit for bit: {r['bit_identical']};"
              f" the check passes: {r['check_passed']}")
    head = results[-1]
    return {"benchmark": "processes", "quick": quick, "cores": cores(), "sizes": results,
            "speedup": head["speedup"], "check_speedup": head["check_speedup"],
            "bit_identical": all(r["bit_identical"] for r in results)}


def measure(n: int, quick: bool) -> dict:
    f, grad = make_f(n)
    x = np.random.default_rng(1).standard_normal(n)
    per_call = min(compare({"f": lambda: f(x)}, repeat=5, warmup=False).values())
    work_s, work_p = x.copy(), x.copy()
    mk = lambda work: CheckProblem(f=f, work=work, evaluate=lambda: float(f(work)),  # noqa: E731
                                   backend=NumpyBackend(), cotangent=None)
    serial = select_engine("serial", mk(work_s))[0]
    idx, steps = np.arange(n), steps_for(x, 6e-6)

    def processes():
        engine = CentralDifferences(ProcessesRunner(mk(work_p)), work_p)  # a fresh pool: start-up is part of the cost
        try:
            return engine.differences(idx, steps)
        finally:
            engine.close()

    identical = all(np.array_equal(a, b) for a, b in zip(serial.differences(idx, steps), processes()))
    repeat = 1 if quick else 3
    times = compare({"serial": lambda: serial.differences(idx, steps), "processes": processes},
                    repeat=repeat, warmup=False)
    speedup = times["serial"] / times["processes"]
    checks = compare(
        {"check serial": lambda: gradcheck.check(f, x, grad, engine="serial", progress=False),
         "check processes": lambda: gradcheck.check(f, x, grad, engine="processes", progress=False)},
        repeat=1, warmup=False,
    )
    check_speedup = checks["check serial"] / checks["check processes"]
    passed = gradcheck.check(f, x, grad, engine="processes", progress=False).passed
    return {"entries": n, "f_seconds_per_call": per_call, **times, "speedup": speedup,
            "check_seconds": checks, "check_speedup": check_speedup, "bit_identical": identical,
            "check_passed": passed}


if __name__ == "__main__":
    sys.exit(run(main))
