"""Compiled engine vs the physical limit, for a numba @njit function and a C function.

The physical limit of a full check is the time of its 2N evaluations of f done as
cheaply as possible on one thread (an njit loop that perturbs x in place and calls f
twice per entry, nothing else), divided by the number of cores. The compiled engine
does the same 2N evaluations in parallel threads; its time over the limit is the
overhead of everything else (thread start-up, private copies, load imbalance).

The subject is the extended Rosenbrock function, O(N) per evaluation, so a full check
is O(N^2) work (N = 20,000: 40,000 evaluations of 20,000 terms): the same math as an
njit function and as gradcheck's C kernel ``gc_rosenbrock_loss`` called through cffi.
Everything is measured in this one run, interleaved, best of ``--repeats``.

    python benchmarks/bench_compiled.py           # N = 20,000
    python benchmarks/bench_compiled.py --quick   # N = 4,000
"""
from __future__ import annotations

import argparse
import os
import time

import numba
import numpy as np
from _common import header, note, table
from _compiled_kernels import bare_njit_parallel, rosenbrock

import gradcheck
from gradcheck._differences import steps_for
from gradcheck.backends import NumpyBackend
from gradcheck.engines import CheckProblem, select_engine
from gradcheck.native import native_function


def rosenbrock_grad(x):
    g = np.zeros_like(x)
    a = x[1:] - x[:-1] ** 2
    g[:-1] += -400.0 * x[:-1] * a - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * a
    return g


@numba.njit(nogil=True)
def bare_njit(f, x, h):
    """2N evaluations, one thread: perturb x[i] by +-h[i] in place, call f twice."""
    s = 0.0
    for i in range(x.size):
        old = x[i]
        x[i] = old + h[i]
        s += f(x)
        x[i] = old - h[i]
        s += f(x)
        x[i] = old
    return s


@numba.njit(nogil=True)
def bare_njit_same_x(f, x, reps):
    """2N evaluations at the same x (no perturbation at all), for comparison."""
    s = 0.0
    for _ in range(reps):
        s += f(x)
        x[0] = x[0] + 0.0  # a store, so the call cannot be hoisted out of the loop
    return s


@numba.njit(nogil=True)
def bare_c(loss, x, iparams, h):
    """The same loop calling the C loss through its cffi function pointer."""
    s = 0.0
    n = x.size
    for i in range(n):
        old = x[i]
        x[i] = old + h[i]
        s += loss(x.ctypes, n, iparams.ctypes)
        x[i] = old - h[i]
        s += loss(x.ctypes, n, iparams.ctypes)
        x[i] = old
    return s


def best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return min(times)


def measure(label: str, f, x: np.ndarray, bare, repeats: int, cores: int, bare_parallel=None) -> dict:
    steps = steps_for(x, 6e-6)
    idx = np.arange(x.size)
    work = x.copy()
    problem = CheckProblem(f=f, work=work, evaluate=lambda: float(f(work)), backend=NumpyBackend(),
                           cotangent=None)
    engine, _ = select_engine("compiled", problem)
    began = time.perf_counter()
    engine.differences(idx[:4], steps[:4])  # compile (or load from numba's cache)
    first_call = time.perf_counter() - began
    scratch = x.copy()
    bare()  # compile the bare loop too
    t_bare, t_engine, t_par = [], [], []
    if bare_parallel is not None:
        bare_parallel()
    for _ in range(repeats):  # interleaved: all see the same machine
        t_bare.append(best(lambda: bare(scratch), 1))
        t_engine.append(best(lambda: engine.differences(idx, steps), 1))
        if bare_parallel is not None:
            t_par.append(best(bare_parallel, 1))
    grad = rosenbrock_grad
    if label == "cffi":
        grad = f.gradient
    reports = []
    t_check = best(lambda: reports.append(gradcheck.check(f, x, grad, engine="compiled")), 1)
    single = min(t_bare)
    limit = single / cores
    return {
        "function": label, "n": x.size, "evaluations": 2 * x.size,
        "bare_single_s": single, "limit_s": limit, "engine_s": min(t_engine),
        "check_s": t_check, "ratio": min(t_engine) / limit, "check_ratio": t_check / limit,
        "check_evaluations": reports[-1].evaluations, "check_passed": reports[-1].passed,
        "compile_s": engine.runner.compile_seconds, "first_call_s": first_call,
        "bare_parallel_s": min(t_par) if t_par else float("nan"),
        "per_evaluation_us": 1e6 * single / (2 * x.size),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 4,000 instead of 20,000")
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    n = args.n or (4_000 if args.quick else 20_000)
    header("compiled engine vs the physical limit (njit and C through cffi), extended Rosenbrock", args.quick,
           "N = 20,000 (4,000 here: the same measurements on a smaller x)")
    cores = len(os.sched_getaffinity(0))
    x = np.random.default_rng(0).uniform(-1.5, 1.5, n)
    h = steps_for(x, 6e-6)

    c_rosen = native_function("rosenbrock")
    loss = c_rosen.ffi.cast("double(*)(const double *, int64_t, const int64_t *)", c_rosen.loss)
    iparams = np.zeros(1, dtype=np.int64)
    rows = [
        measure("njit", rosenbrock, x, lambda s=None: bare_njit(rosenbrock, x.copy() if s is None else s, h),
                args.repeats, cores,
                bare_parallel=lambda: bare_njit_parallel(x, h, numba.get_num_threads())),
        measure("cffi", c_rosen, x, lambda s=None: bare_c(loss, x.copy() if s is None else s, iparams, h),
                args.repeats, cores),
    ]
    bare_njit_same_x(rosenbrock, x.copy(), 2)
    same_x = best(lambda: bare_njit_same_x(rosenbrock, x.copy(), 2 * n), args.repeats)
    results = {"n": n, "cores": cores, "numba_threads": numba.get_num_threads(),
               "threading_layer": numba.threading_layer(), "load_average": os.getloadavg()[0],
               "rows": rows, "njit_same_x_single_s": same_x}
    print_table(results)
    return results


def print_table(r: dict) -> None:
    note(f"N = {r['n']}, 2N = {2 * r['n']} evaluations, numba threads {r['numba_threads']} "
         f"({r['threading_layer']}); limit = (2N evaluations in a single-thread njit loop) / cores")
    print(table(["f", "eval us", "single s", "limit s", "engine s", "ratio", "check s", "ratio", "check evals",
                 "compile s"], [
        [row["function"], f"{row['per_evaluation_us']:.2f}", f"{row['bare_single_s']:.3f}", f"{row['limit_s']:.3f}",
         f"{row['engine_s']:.3f}", f"{row['ratio']:.2f}", f"{row['check_s']:.3f}", f"{row['check_ratio']:.2f}",
         row["check_evaluations"], f"{row['compile_s']:.2f}"] for row in r["rows"]]))
    njit = r["rows"][0]
    note(f"njit, the bare loop split over {r['numba_threads']} threads without the engine: "
         f"{njit['bare_parallel_s']:.3f} s (engine / that = {njit['engine_s'] / njit['bare_parallel_s']:.2f}: "
         "the engine's own overhead, whatever else runs on the machine)")
    note(f"njit, 2N evaluations at an unperturbed x, single thread: {r['njit_same_x_single_s']:.3f} s; 'check' is "
         "the whole gradcheck.check(engine='compiled'), compile excluded, with its refinement's extra "
         "evaluations ('check evals' against 2N)")


if __name__ == "__main__":
    main()
