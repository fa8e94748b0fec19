"""A full check of f(W) = tanh(a @ W) . b (W 96 x 96) with torch.autograd.gradcheck vs ours.

Both check torch's own backward of the same math against central differences at every
one of W's 9216 entries: ``torch.autograd.gradcheck`` (CPU, float64, its default full
mode: the whole numerical Jacobian) on the torch function, and ``gradcheck.check`` on the
numpy twin of the function, with torch's gradient as the claim (computing that claim is
inside our time). Ours runs with each engine: serial, batched and processes on the numpy
twin, compiled on a numba ``@njit`` twin of the same math (plain loops: ``z = a @ W``,
then ``sum_j tanh(z_j) b_j``), which is what a user whose f is a numba kernel would
check it with. The njit twin's kernel is compiled before the timing (it is reported
apart as compile time, like torch's own warm-up); "best" is the fastest engine in this
run.
Targets: best engine >= 20x faster than torch, serial >= 3x.

torch's ``fast_mode=True`` checks one random projection of the Jacobian instead of every
entry, so it answers another question; its time is printed for reference only.

    python benchmarks/bench_torch.py [--quick]
"""
from __future__ import annotations

import sys

import numpy as np
from _common import best_of, compare, header, run, seconds, table

import gradcheck

TARGET_BEST = 20.0
TARGET_SERIAL = 3.0


def njit_twin(a: np.ndarray, b: np.ndarray):
    """tanh(a @ W) . b as a numba @njit function (a and b are frozen into it)."""
    import numba

    @numba.njit
    def f(w):
        z = np.zeros(w.shape[1])
        for i in range(w.shape[0]):
            ai = a[i]
            for j in range(w.shape[1]):
                z[j] += ai * w[i, j]
        s = 0.0
        for j in range(w.shape[1]):
            s += np.tanh(z[j]) * b[j]
        return s

    return f


def main(quick: bool = False) -> dict:
    header("full gradient check: torch.autograd.gradcheck vs gradcheck, f(W) = tanh(a @ W) . b", quick,
           "W of 96 x 96 (48 x 48 here), best of 2-3 (1 here)")
    try:
        import torch
    except ModuleNotFoundError:
        print("   torch is not installed: skipped (pip install torch)")
        return {"benchmark": "torch", "skipped": "torch is not installed"}
    n = 48 if quick else 96
    rng = np.random.default_rng(0)
    a_np, b_np = rng.standard_normal(n), rng.standard_normal(n)
    W_np = rng.standard_normal((n, n)) / np.sqrt(n)
    a_t, b_t = torch.from_numpy(a_np), torch.from_numpy(b_np)

    def f_torch(w):
        return torch.tanh(a_t @ w) @ b_t

    def f_np(w):
        """The same math in numpy; a batch (B, n, n) gives (B,)."""
        return np.tanh(a_np @ w) @ b_np

    from gradcheck._core.jit import compile_seconds

    compiled_before = sum(compile_seconds().values())  # the process's earlier benchmarks compiled too
    f_nb = njit_twin(a_np, b_np)
    assert abs(f_nb(W_np) - f_np(W_np)) <= 1e-12 * abs(f_np(W_np)) + 1e-14  # the same math

    def torch_claim(w):
        wt = torch.from_numpy(np.array(w)).requires_grad_(True)
        f_torch(wt).backward()
        return wt.grad.numpy()

    def run_torch(fast: bool = False):
        w = torch.from_numpy(W_np.copy()).requires_grad_(True)
        assert torch.autograd.gradcheck(f_torch, (w,), fast_mode=fast)

    def run_ours(engine: str):
        f = f_nb if engine == "compiled" else f_np
        report = gradcheck.check(f, W_np, torch_claim, engine=engine, vectorized=engine == "batched",
                                 progress=False)
        assert report.engine == engine, report.engine
        assert report.passed, report

    # torch takes seconds per run, so best of 2 (after a warm-up on a tiny function) says enough;
    # ours are best-of-k. All in this one process, interleaved with nothing else.
    tiny = torch.ones(3, dtype=torch.float64, requires_grad=True)
    torch.autograd.gradcheck(lambda w: torch.tanh(w).sum(), (tiny,))  # warm-up
    torch_time = best_of(run_torch, repeat=1 if quick else 2)
    fast = best_of(lambda: run_torch(True), repeat=3)
    repeat = 1 if quick else 3
    times = compare({
        "gradcheck serial": lambda: run_ours("serial"),
        "gradcheck batched": lambda: run_ours("batched"),
        "gradcheck processes": lambda: run_ours("processes"),
        "gradcheck compiled": lambda: run_ours("compiled"),
    }, repeat=repeat, warmup=True)
    times["torch.autograd.gradcheck"] = torch_time
    compiled_s = sum(compile_seconds().values()) - compiled_before
    ours = {k.split()[-1]: v for k, v in times.items() if k.startswith("gradcheck")}
    best_engine = min(ours, key=ours.get)
    rows = [["torch.autograd.gradcheck (full)", seconds(torch_time), "1.0x"]]
    rows += [[f"gradcheck, engine={k}", seconds(v), f"{torch_time / v:.1f}x"] for k, v in ours.items()]
    rows.append(["torch.autograd.gradcheck fast_mode (not every entry)", seconds(fast), f"{torch_time / fast:.1f}x"])
    print(f"   torch {torch.__version__}, {torch.get_num_threads()} intra-op threads; W {n}x{n} = {n * n} entries")
    print(table(["checker", "time", "speedup vs torch"], rows))
    print(f"   (compiling the kernels for the njit twin, once per process, outside the times: {compiled_s:.1f} s)")
    best_ratio = torch_time / ours[best_engine]
    serial_ratio = torch_time / ours["serial"]
    print(f"   best engine ({best_engine}): {best_ratio:.1f}x faster than torch "
          f"({'meets' if best_ratio >= TARGET_BEST else 'MISSES'} >= {TARGET_BEST:.0f}x); "
          f"serial: {serial_ratio:.1f}x ({'meets' if serial_ratio >= TARGET_SERIAL else 'MISSES'} >= {TARGET_SERIAL:.0f}x)")
    return {"benchmark": "torch", "quick": quick, "entries": n * n, "torch_version": torch.__version__,
            "seconds": times, "torch_fast_mode_seconds": fast, "best_engine": best_engine,
            "best_ratio": best_ratio, "serial_ratio": serial_ratio,
            "meets_targets": best_ratio >= TARGET_BEST and serial_ratio >= TARGET_SERIAL}


if __name__ == "__main__":
    sys.exit(run(main))
