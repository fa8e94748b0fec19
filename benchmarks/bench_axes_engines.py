"""``independent_axes`` on the serial, processes and executor engines, for a costly f.

A layer norm whose every call also burns ~PER_CALL_SECONDS of pure-Python work (a costly
model stand-in), on a (32, 48) input declared independent along axis 0: the coloured check
is ~2·48 evaluations of the first pass plus the verification (serial, in this process) and
the second look. The processes engine forks its pool once per check, the executor is a fork
``ProcessPoolExecutor`` (start-up included in both). Every report is checked bit for bit
against serial's; the ideal speedup of the parallel part is the core count.

    python benchmarks/bench_axes_engines.py [--quick]
"""
from __future__ import annotations

import concurrent.futures as cf
import math
import multiprocessing

import numpy as np
from _common import compare, cores, header, run, seconds, table, wall
from bench_axes import layer_norm, layer_norm_vjp  # the same layer as bench_axes.py

import gradcheck

PER_CALL_SECONDS = 5e-3


def costly(loops: int):
    def f(x):
        acc = 0.0
        for i in range(loops):  # burns CPU; does not change the output
            acc += math.sin(i)
        return layer_norm(x) + 0.0 * acc
    return f


def main(quick: bool = False) -> dict:
    header(f"independent_axes=(0,) on serial / processes / executor, f of ~{PER_CALL_SECONDS * 1e3:.0f} ms", quick,
           "x of (32, 48) (16 x 24 here), best of 3 (1 here)")
    shape = (16, 24) if quick else (32, 48)
    x = np.random.default_rng(5).standard_normal(shape)
    probe = costly(10_000)
    per_loop = min(wall(lambda: probe(x)) for _ in range(5)) / 10_000
    f = costly(max(1, round(PER_CALL_SECONDS / per_loop)))
    per_call = min(wall(lambda: f(x)) for _ in range(5))
    reports = {}

    def one(name, **kw):
        def go():
            if name == "executor":
                with cf.ProcessPoolExecutor(cores(), mp_context=multiprocessing.get_context("fork")) as ex:
                    reports[name] = gradcheck.check(f, x, layer_norm_vjp, independent_axes=(0,), executor=ex)
            else:
                reports[name] = gradcheck.check(f, x, layer_norm_vjp, independent_axes=(0,), **kw)
        return go

    best = compare({"serial": one("serial"), "processes": one("processes", engine="processes"),
                    "executor": one("executor")}, repeat=1 if quick else 3, warmup=False)
    base = reports["serial"]
    for name, rep in reports.items():
        same = all(getattr(rep, k).tobytes() == getattr(base, k).tobytes() for k in ("numeric", "codes", "noise"))
        assert same and rep.evaluations == base.evaluations, f"{name} differs from serial"
    rows = [[name, base.evaluations, seconds(t), f"{best['serial'] / t:.2f}x"] for name, t in best.items()]
    print(f"   shape {shape}, one f = {seconds(per_call)}, {cores()} cores; every report equals serial's bit for bit")
    print(table(["engine", "evaluations", "best time", "speedup vs serial"], rows))
    return {"shape": list(shape), "per_call": per_call, "evaluations": base.evaluations,
            "seconds": best, "cores": cores()}


if __name__ == "__main__":
    run(main)
