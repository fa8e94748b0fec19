"""check(..., independent_axes=...) (issue 16): layer-sized outputs, entry by entry, by colouring.

1. Layer norm backward on x (4096, 256), float64 (no affine; a hand-written VJP):
   ``check(layer_norm, x, vjp, independent_axes=(0,))`` on the correct backward and on one
   with a bug planted at one entry: evaluations (against the issue's 2*256*(1 + small)), time,
   peak memory (tracemalloc, in multiples of one float64 array of N), the verdicts, and where
   the evaluations went (verification, first pass, second look: how many suspects, at most how
   many in one row, since the second look's rounds are that many per step).
   Also the correct backward on x = default_rng(0) (the config's seed: before the cotangent
   had its own stream, that draw WAS the cotangent, J^T v ~ 0, and ~4% of the entries UNCHECKED).
2. The plain entry-wise check of the same layer, projected: its 2N + 2 evaluations times the
   cost of one f measured in this run (it is not run: hours).
3. Why the count stays near 2*256: the same check with ONE base value for every entry (the
   whole output's ``v . f(x)``, as a plain check has) instead of each entry's own slice's
   (at (512, 256): it costs ~11x more there).
4. Elementwise tanh on 10**7 entries with ``independent_axes="all"``: evaluations, time, peak.
5. ``torch.autograd.gradcheck`` (full Jacobian, float64) on ``torch.nn.functional.layer_norm``
   at growing sizes, up to the largest that finishes in about a minute; gradcheck's coloured
   check on the same sizes.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_axes.py [--quick] [--json FILE]

``--quick`` uses (512, 256), 10**6 entries and the smallest torch size, and leaves out
the one-base-value ablation (about 80 s: every entry becomes a suspect; it says so in its header).
"""
from __future__ import annotations

import sys
import time
import tracemalloc

import numpy as np
from _common import best_of, header, run, seconds, table

import gradcheck
from gradcheck import Verdict
from gradcheck._axes import Coloured


def layer_norm(x):
    xc = x - x.mean(axis=-1, keepdims=True)
    return xc / np.sqrt((xc**2).mean(axis=-1, keepdims=True) + 1e-5)


def layer_norm_vjp(x, g):
    xc = x - x.mean(axis=-1, keepdims=True)
    inv = 1.0 / np.sqrt((xc**2).mean(axis=-1, keepdims=True) + 1e-5)
    xh = xc * inv
    return inv * (g - g.mean(-1, keepdims=True) - xh * (g * xh).mean(-1, keepdims=True))


BUG_AT = (411, 77)


def with_bug(x, g):
    out = layer_norm_vjp(x, g)
    out[tuple(min(i, n - 1) for i, n in zip(BUG_AT, x.shape))] *= 1 + 1e-5
    return out


def measured(fn):
    """``fn()``, its wall time and its peak traced memory (bytes)."""
    tracemalloc.start()
    began = time.perf_counter()
    try:
        out = fn()
    finally:
        took = time.perf_counter() - began
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return out, took, peak


def verdicts(report) -> dict[str, int]:
    return {v.name: int(n) for v, n in report.counts.items() if n}


def layer_case(x, grad, axes=(0,)) -> dict:
    report, took, peak = measured(lambda: gradcheck.check(layer_norm, x, grad, independent_axes=axes))
    b, d = x.shape
    refined = report.refined
    note = next(n for n in report.notes if n.startswith("independent_axes verified"))
    verify = int(note.split(": ")[1].split(" ")[0])
    first = 2 * d
    return {"evaluations": report.evaluations, "seconds": took, "peak_bytes": peak,
            "peak_arrays": peak / (8 * x.size), "ratio_to_2D": report.evaluations / first,
            "verification": verify, "first_pass": first,
            "second_look": report.evaluations - first - verify - 2,
            "suspects": int(refined.sum()), "max_suspects_per_row": int(refined.sum(axis=1).max()),
            "verdicts": verdicts(report),
            "mismatch_at": [tuple(int(k) for k in i) for i in np.argwhere(report.codes == Verdict.MISMATCH)][:5]}


def one_base_value(x) -> dict:
    """The ablation: every entry's kink test and round-off probe see the whole output's base value."""
    own = Coloured.base_per_entry
    Coloured.base_per_entry = lambda self: float(self.base_slices.sum())  # type: ignore[method-assign]
    try:
        case = layer_case(x, layer_norm_vjp)
    finally:
        Coloured.base_per_entry = own  # type: ignore[method-assign]
    return case


def elementwise(n: int) -> dict:
    x = np.random.default_rng(3).standard_normal(n)
    report, took, peak = measured(lambda: gradcheck.check(
        np.tanh, x, lambda x, g: g * (1 - np.tanh(x) ** 2), independent_axes="all"))
    return {"entries": n, "evaluations": report.evaluations, "seconds": took, "peak_bytes": peak,
            "peak_arrays": peak / (8 * n), "verdicts": verdicts(report)}


LADDER = [(16, 32), (32, 64), (64, 64), (96, 96), (128, 96), (128, 128), (160, 128)]


def torch_ladder(limit: float, sizes: list[tuple[int, int]] = LADDER) -> list[dict] | None:
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    # torch's first gradcheck in a process pays ~1 s of one-time set-up (lazy imports): warmed on a
    # tiny function first, outside the timings, as bench_torch.py does (else the smallest size's
    # ratio would count it against torch)
    tiny = torch.ones(3, dtype=torch.float64, requires_grad=True)
    torch.autograd.gradcheck(lambda w: torch.tanh(w).sum(), (tiny,))
    rows = []
    for b, d in sizes:
        x = torch.randn(b, d, dtype=torch.float64, generator=torch.Generator().manual_seed(5), requires_grad=True)
        began = time.perf_counter()
        ok = torch.autograd.gradcheck(lambda t, d=d: torch.nn.functional.layer_norm(t, (d,), eps=1e-5), (x,))
        took = time.perf_counter() - began
        xn = x.detach().numpy().copy()
        ours, ours_took, _ = measured(lambda xn=xn: gradcheck.check(layer_norm, xn, layer_norm_vjp, independent_axes=(0,)))
        rows.append({"shape": (b, d), "entries": b * d, "torch_seconds": took, "torch_ok": bool(ok),
                     "gradcheck_seconds": ours_took, "gradcheck_evaluations": ours.evaluations,
                     "gradcheck_passed": ours.passed, "_version": torch.__version__})
        if took > limit:
            break
    return rows


def main(quick: bool = False) -> dict:
    b, d = (512, 256) if quick else (4096, 256)
    header(f"independent_axes: layer norm backward on ({b}, {d}), float64, entry by entry by colouring", quick,
           "x of (4096, 256) (512 rows here), the correct backward at x = default_rng(0) (the seed's own "
           "draw, once the cotangent), the one-base-value ablation (3.: about 80 s, every entry a "
           "suspect; at fewer rows the effect is not there), tanh on 10**7 entries (10**6 here), torch beyond "
           "(16, 32)")
    x = np.random.default_rng(1).standard_normal((b, d))
    per_call = best_of(lambda: layer_norm(x), 5)
    # Compile the kernels (the fused classify runs from 1e5 entries) and import mpmath outside the
    # timings and the memory peaks: a first check in a process pays ~20 MiB of imports and code.
    # --quick warms on as many entries (the kernels run from 1e5) in 32 columns: 8x fewer evaluations
    warm = np.random.default_rng(2).standard_normal((4096, 32) if quick else (512, 256))
    gradcheck.check(layer_norm, warm, with_bug, independent_axes=(0,))
    correct, bug = layer_case(x, layer_norm_vjp), layer_case(x, with_bug)
    # x drawn with the config's seed (0): the cotangent once was this very draw (J^T x ~ 0)
    seed0 = None if quick else layer_case(np.random.default_rng(0).standard_normal((b, d)), layer_norm_vjp)
    ablation = None if quick else one_base_value(x[:512])
    print(f"   1. one f takes {seconds(per_call)}; the issue's budget is 2*{d}*(1 + small) = {2 * d}*(1 + small)")
    rows = []
    cases = [("correct backward", correct), (f"bug at {BUG_AT}", bug), ("correct, x = default_rng(0)", seed0),
             (f"(512, {d}), one base value", ablation)]
    for name, c in [(name, c) for name, c in cases if c is not None]:
        rows.append([name, c["evaluations"], f"{c['ratio_to_2D']:.3f}", c["verification"], c["second_look"],
                     f"{c['suspects']} (<= {c['max_suspects_per_row']}/row)", seconds(c["seconds"]),
                     f"{c['peak_bytes'] / 2**20:.0f} MiB = {c['peak_arrays']:.1f} N", str(c["verdicts"]),
                     str(c["mismatch_at"])])
    print(table(["case", "evaluations", "/ 2D", "verify", "2nd look", "suspects", "time", "peak memory",
                 "verdicts", "MISMATCH at"], rows))
    plain = (2 * x.size + 2) * per_call
    print(f"   2. the plain entry-wise check: {2 * x.size + 2} evaluations x {seconds(per_call)} = "
          f"{seconds(plain)} ({plain / correct['seconds']:.0f}x the coloured check's {seconds(correct['seconds'])})")
    found = bug["mismatch_at"] == [BUG_AT] and "MISMATCH" not in correct["verdicts"]
    meets = found and correct["ratio_to_2D"] <= 1.25
    print(f"   the bar: bug found at exactly {BUG_AT}, correct backward with no MISMATCH, <= 2D*(1.25): "
          f"{'met' if meets else 'MISSED'}")
    n = 10**6 if quick else 10**7
    tanh = elementwise(n)
    print(f"   4. tanh on {n} entries, independent_axes='all': {tanh['evaluations']} evaluations, "
          f"{seconds(tanh['seconds'])}, peak {tanh['peak_bytes'] / 2**20:.0f} MiB = {tanh['peak_arrays']:.1f} N, "
          f"{tanh['verdicts']}")
    ladder = torch_ladder(45.0, LADDER[:1] if quick else LADDER)
    if ladder is None:
        print("   5. torch is not installed: skipped")
    else:
        print(f"   5. torch.autograd.gradcheck (torch {ladder[0]['_version']}, 1 thread) vs check(independent_axes=(0,)):")
        print(table(["shape", "entries", "torch gradcheck", "gradcheck (coloured)", "evaluations", "ratio"], [
            [str(r["shape"]), r["entries"], seconds(r["torch_seconds"]), seconds(r["gradcheck_seconds"]),
             r["gradcheck_evaluations"], f"{r['torch_seconds'] / r['gradcheck_seconds']:.0f}x"] for r in ladder]))
    return {"benchmark": "axes", "quick": quick, "shape": (b, d), "f_seconds": per_call, "correct": correct,
            "bug": bug, "seed0": seed0, "one_base_value": ablation, "plain_projected_seconds": plain, "meets_targets": meets,
            "tanh": tanh, "torch": ladder}


if __name__ == "__main__":
    sys.exit(run(main))
