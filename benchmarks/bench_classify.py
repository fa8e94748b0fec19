"""Fused classify kernel vs the equivalent numpy expression chain (time and peak memory).

The numpy chain is gradcheck's reference rule (``gradcheck._classify.rule.classify`` and
``tolerance``, what a check computed before the kernel); the kernel is
``gradcheck._classify.kernel``: one fused pass, no full-size temporaries. Both are
measured in this run on the same inputs, with the verdict codes compared bit for bit.

Peak memory: tracemalloc (numpy reports its allocations to it) around each call, so the
number is what the call allocated beyond its inputs; and, in a fresh subprocess per
variant, the process high-water mark (VmHWM, reset once the inputs are in memory) minus
the resident size before the call.

    python benchmarks/bench_classify.py            # 1e8 entries (about 6 GB of RAM)
    python benchmarks/bench_classify.py --quick    # 2e6 entries, no subprocesses
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import tracemalloc

import numpy as np
from _common import header, note, table

RULE = dict(rtol=1e-6, atol=0.0, noise_factor=8.0)
MB = 2**20


def make_inputs(size: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Claimed, numeric and noise arrays, filled in blocks (no full-size temporaries), with
    entries on both sides of the tolerance and a sprinkling of NaN/inf."""
    a, n, z = np.empty(size), np.empty(size), np.empty(size)
    rng = np.random.default_rng(seed)
    block = 1 << 22
    for lo in range(0, size, block):
        hi = min(size, lo + block)
        m = hi - lo
        a[lo:hi] = rng.standard_normal(m)
        n[lo:hi] = a[lo:hi] * (1.0 + rng.standard_normal(m) * 2e-6)
        z[lo:hi] = np.abs(a[lo:hi]) * 1e-10
    a[::1009] = np.nan
    n[::2003] = np.inf
    return a, n, z


def numpy_chain(a, n, z):
    from gradcheck._classify import rule as _classify

    return (_classify.classify(a, n, z, **RULE), _classify.tolerance(a, n, z, **RULE))


def numpy_codes(a, n, z):
    from gradcheck._classify import rule as _classify

    return _classify.classify(a, n, z, **RULE)


def kernel_both(a, n, z):
    from gradcheck._classify import kernel as _classify_kernel

    return _classify_kernel.classify_and_tolerance(a, n, z, **RULE)


def kernel_codes(a, n, z):
    from gradcheck._classify import kernel as _classify_kernel

    return _classify_kernel.classify_codes(a, n, z, **RULE)


def kernel_codes_one_thread(a, n, z):
    from gradcheck._classify import kernel as _classify_kernel

    codes = np.empty(a.size, dtype=np.uint8)
    _classify_kernel._classify_one_thread(a, n, z, RULE["rtol"], RULE["atol"], RULE["noise_factor"],
                                          _classify_kernel.DEFAULT_RESOLUTION, codes, _classify_kernel._NO_TOL, False)
    return codes


def kernel_codes_threads(a, n, z):
    from gradcheck._classify import kernel as _classify_kernel

    codes = np.empty(a.size, dtype=np.uint8)
    _classify_kernel._classify_threads(a, n, z, RULE["rtol"], RULE["atol"], RULE["noise_factor"],
                                       _classify_kernel.DEFAULT_RESOLUTION, codes, _classify_kernel._NO_TOL, False)
    return codes


VARIANTS = {"numpy_codes": numpy_codes, "kernel_codes": kernel_codes,
            "numpy_codes+tol": numpy_chain, "kernel_codes+tol": kernel_both}


def timed(fn, args, repeats: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        out = None
        began = time.perf_counter()
        out = fn(*args)
        best = min(best, time.perf_counter() - began)
    return best, out


def traced_peak(fn, args) -> float:
    """MiB that ``fn`` allocated at its peak (numpy allocations, via tracemalloc)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        out = fn(*args)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del out
    return peak / MB


def _status_mib(field: str) -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _reset_hwm() -> None:
    """Reset VmHWM to the current RSS (Linux >= 4.0: write 5 to clear_refs)."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def _child(variant: str, size: int) -> None:
    """Subprocess body: inputs in memory, warm kernels, then the VmHWM growth of one call."""
    fn = VARIANTS[variant]
    small = make_inputs(1000)
    fn(*small)  # compile / load from cache, import everything, before the baseline
    kernel_codes_threads(*small)
    a, n, z = make_inputs(size)
    _reset_hwm()  # forget the peak of making the inputs
    base = _status_mib("VmRSS")
    out = fn(a, n, z)
    print(json.dumps({"hwm_growth_mib": _status_mib("VmHWM") - base, "out": bool(out is not None)}))


def hwm_growth(variant: str, size: int) -> float:
    # Large blocks always mmapped: freed memory leaves the process instead of staying
    # resident in malloc's heap, where the next allocation would hide in it.
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072")
    proc = subprocess.run(
        [sys.executable, __file__, "--child", variant, "--size", str(size)],
        check=True, capture_output=True, text=True, env=env,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])["hwm_growth_mib"]


def crossover(sizes=(100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000)) -> list[dict[str, float]]:
    """numpy vs the kernel on one thread and on numba's threads (codes only), by size:
    where the kernel starts to win, and where threads start to pay."""
    rows = []
    for size in sizes:
        a, n, z = make_inputs(size, seed=1)
        repeats = max(3, min(200, 2_000_000 // size))
        t_np, _ = timed(numpy_codes, (a, n, z), repeats)
        t_one, _ = timed(kernel_codes_one_thread, (a, n, z), repeats)
        t_thr, _ = timed(kernel_codes_threads, (a, n, z), repeats)
        rows.append({"size": size, "numpy_s": t_np, "one_thread_s": t_one, "threads_s": t_thr,
                     "speedup": t_np / min(t_one, t_thr)})
    return rows


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2e6 entries instead of 1e8, no subprocesses")
    parser.add_argument("--size", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-subprocess", action="store_true", help="skip the VmHWM measurement")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    size = args.size or (2_000_000 if args.quick else 100_000_000)
    if args.child:
        _child(args.child, size)
        return {}

    import numba

    from gradcheck._classify import kernel as _classify_kernel

    measure_hwm = not (args.no_subprocess or args.quick)
    header("classify: the fused kernel vs the numpy chain (time and peak memory)", args.quick,
           "1e8 entries (2e6 here), the sizes above 1e6 in the table by size, and the high-water mark of "
           "each variant in a fresh subprocess (tracemalloc's peak is shown)")

    cores = len(os.sched_getaffinity(0))
    a, n, z = make_inputs(size)
    small = make_inputs(1000)
    for warm in (kernel_codes, kernel_both, kernel_codes_one_thread, kernel_codes_threads):
        warm(*small)  # compile or load from cache: not part of the timing
    results: dict = {"size": size, "cores": cores, "numba_threads": numba.get_num_threads(),
                     "input_mib": 3 * a.nbytes / MB, "min_size": _classify_kernel.MIN_SIZE,
                     "threads_min_size": _classify_kernel.THREADS_MIN_SIZE,
                     "load_average": os.getloadavg()[0], "variants": {}}
    outputs = {}
    for name, fn in VARIANTS.items():
        seconds, out = timed(fn, (a, n, z), args.repeats)
        outputs[name] = out
        results["variants"][name] = {"seconds": seconds, "traced_peak_mib": traced_peak(fn, (a, n, z))}
    codes_np, tol_np = outputs["numpy_codes+tol"]
    codes_k, tol_k = outputs["kernel_codes+tol"]
    results["codes_equal"] = bool(np.array_equal(codes_np, codes_k)
                                  and np.array_equal(outputs["numpy_codes"], outputs["kernel_codes"]))
    results["tolerance_equal"] = bool(np.array_equal(tol_np, tol_k, equal_nan=True))
    del outputs, codes_np, tol_np, codes_k, tol_k
    v = results["variants"]
    results["speedup_codes"] = v["numpy_codes"]["seconds"] / v["kernel_codes"]["seconds"]
    results["speedup_codes+tol"] = v["numpy_codes+tol"]["seconds"] / v["kernel_codes+tol"]["seconds"]
    if measure_hwm:
        del a, n, z  # the children need the memory
        for name in VARIANTS:
            v[name]["hwm_growth_mib"] = hwm_growth(name, size)
    results["crossover"] = crossover((100, 1_000, 10_000, 100_000, 1_000_000) if args.quick else
                                     (100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000))
    print_table(results)
    return results


def print_table(r: dict) -> None:
    note(f"{r['size']:.0e} entries ({r['input_mib']:.0f} MiB of float64 inputs), numba threads "
         f"{r['numba_threads']}")
    print(table(["variant", "seconds", "traced peak MiB", "VmHWM growth MiB"], [
        [name, f"{row['seconds']:.3f}", f"{row['traced_peak_mib']:.0f}",
         f"{row['hwm_growth_mib']:.0f}" if "hwm_growth_mib" in row else "-"]
        for name, row in r["variants"].items()]))
    note(f"speedup (numpy / kernel): codes {r['speedup_codes']:.1f}x, codes+tolerance "
         f"{r['speedup_codes+tol']:.1f}x; codes equal: {r['codes_equal']}, tolerance equal: {r['tolerance_equal']}")
    note(f"one output array: codes {r['size'] / MB:.0f} MiB, tolerance {8 * r['size'] / MB:.0f} MiB "
         "(anything above that is a temporary)")
    note(f"by size (codes only; the checker uses the kernel from {r['min_size']} entries, "
         f"its threads from {r['threads_min_size']}):")
    print(table(["entries", "numpy s", "1 thread s", "threads s", "best speedup"], [
        [row["size"], f"{row['numpy_s']:.2e}", f"{row['one_thread_s']:.2e}", f"{row['threads_s']:.2e}",
         f"{row['speedup']:.1f}x"] for row in r["crossover"]]))


if __name__ == "__main__":
    main()
