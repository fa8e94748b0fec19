"""Measurements behind the default tolerances (docs/guide/tolerances.md).

These measure the finite-difference verdicts (first pass + step study), so the
arbitrary-precision referee is switched off (``adjudicate=False``).

For a suite of smooth functions with closed-form gradients, in float64 and float32:
- false alarms: MISMATCH verdicts on CORRECT gradients (must be 0);
- sensitivity: the fraction of entries flagged when every entry of the gradient carries a
  relative error eps, for eps from 1e-8 to 1e-2;
- the single planted entry: one entry of 512 off by 1e-4 must be found, and only it;
- beside the sensitivity, the fraction of entries left UNCHECKED, and the fraction that
  PASS although the claim is wrong by eps: for eps above ``Config.resolution`` (1%) it
  must be 0 (a PASS means the claim is within that share of the numeric value).

float32 is studied twice (issue 15): with the functions as written (precision-generic
numpy code: differenced on the float64 upcast, the float32 claim judged against its own
measured rounding) and "forced" (``f(x.astype(np.float32))`` returned as float64: an f
that computes in float32 whatever it is given, differenced in float32 with Richardson).
Both float32 modes add a float32 layer norm (a backward that cancels large terms) to the
suite; the single planted entry is also tried at 1e-5 (float32) and 1e-3 (forced float32).
A third mode, "f64 x, f32 in", gives the forced functions float64 inputs (not float32
numbers): ``check`` routes them through the same float32 steps (``gradcheck._lowp.forced64``).
The new modes draw from their own generators, so the float64 rows use the same inputs as
before.

Run: python benchmarks/tolerance_study.py [--quick]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import gradcheck
from gradcheck import Config, Verdict
from gradcheck._demo.layernorm import layer_norm, layer_norm_vjp
from gradcheck._lowp.f32steps import PRESET as FORCED32_PRESET


def suite(dtype, rng):
    """(name, f, grad, x) with closed-form gradients, computed in ``dtype``."""
    out = []
    for n in (16, 128, 512):
        x = rng.standard_normal(n).astype(dtype)
        out.append((f"sin*x^2 n={n}", lambda x: (np.sin(x) * x * x).sum(),
                    lambda x: np.cos(x) * x * x + 2 * x * np.sin(x), x))
        out.append((f"logsumexp n={n}", lambda x: np.log(np.exp(x).sum()),
                    lambda x: np.exp(x) / np.exp(x).sum(), x))
    for m in (8, 24):
        A = rng.standard_normal((m, m)).astype(dtype)
        B = rng.standard_normal((m, m)).astype(dtype)
        W = (rng.standard_normal((m, m)) / np.sqrt(m)).astype(dtype)
        out.append((f"tanh(A@W)*B {m}x{m}", lambda w, A=A, B=B: (np.tanh(A @ w) * B).sum(),
                    lambda w, A=A, B=B: A.T @ ((1 - np.tanh(A @ w) ** 2) * B), W))
    x = (rng.standard_normal(64) * np.logspace(-3, 3, 64)).astype(dtype)
    out.append(("log1p(x^2), |x| in 1e-3..1e3", lambda x: np.log1p(x * x).sum(),
                lambda x: 2 * x / (1 + x * x), x))
    return out


def layer_norm_case(dtype, rng, rows: int = 8, width: int = 64):
    """(name, f, vjp, x): a layer norm over the last axis; its backward cancels large terms."""
    x = (rng.standard_normal((rows, width)) * 3 + 1).astype(dtype)
    gain = (1 + 0.1 * rng.standard_normal(width)).astype(dtype)
    bias = (0.1 * rng.standard_normal(width)).astype(dtype)
    return (f"layer norm {rows}x{width}", lambda x: layer_norm(x, gain, bias),
            lambda x, v: layer_norm_vjp(x, v, gain), x)


def forced(f):
    """``f`` computing in float32 whatever it is given, its value returned as float64."""
    return lambda x: np.asarray(f(np.asarray(x).astype(np.float32)), dtype=np.float64)


def scaled(g, eps):
    """The claim ``g`` off by a relative ``eps`` on every entry (gradient or VJP)."""
    return lambda *args: g(*args) * (1 + eps)


def float32_modes(quick: bool, epsilons: list, results: dict) -> None:
    """False alarms and sensitivity of the two float32 modes, layer norm included."""
    for mode, wrap, seed, dtype in (("float32", lambda f: f, 320, np.float32),
                                    ("float32 forced", forced, 321, np.float32),
                                    ("f64 x, f32 in", forced, 325, np.float64)):
        cases = suite(np.float32, np.random.default_rng(seed))[: 4 if quick else None]
        cases.append(layer_norm_case(np.float32, np.random.default_rng(seed)))
        if dtype == np.float64:  # the float32 kernels (constants too) at float64 x off the float32 grid
            jitter = np.random.default_rng(seed + 1)
            cases = [(name, f, g, x.astype(np.float64) * (1 + 2.0**-30 * jitter.uniform(-1, 1, x.shape)))
                     for name, f, g, x in cases]
        alarms = routed = 0
        print(f"\n{mode}: correct claims")
        for name, f, g, x in cases:
            r = gradcheck.check(wrap(f), x, g, adjudicate=False)
            alarms += r.counts[Verdict.MISMATCH]
            routed += any(n.startswith("float64 input, but f computes in float32") for n in r.notes)
            print(f"{mode:<15} {name:<32} {x.size:>5} {r.counts[Verdict.MISMATCH]:>12} "
                  f"{r.counts[Verdict.UNCHECKED]:>9} {r.counts[Verdict.PASS]:>5}")
        results[f"false_alarms_{mode}"] = alarms
        if dtype == np.float64:
            print(f"{mode}: {routed} of {len(cases)} cases took the float32 route")
            results[f"routed_{mode}"] = f"{routed}/{len(cases)}"
        rows = {"flagged": [], "UNCHECKED": [], "PASS": []}
        for eps in epsilons:
            caught = judged = blind = wrong_pass = size = 0
            for _name, f, g, x in cases:
                r = gradcheck.check(wrap(f), x, scaled(g, eps), adjudicate=False)
                judged += r.size - r.counts[Verdict.UNCHECKED]
                caught += r.counts[Verdict.MISMATCH]
                blind += r.counts[Verdict.UNCHECKED]
                wrong_pass += r.counts[Verdict.PASS]
                size += r.size
            rows["flagged"].append(caught / max(judged, 1))
            rows["UNCHECKED"].append(blind / size)
            rows["PASS"].append(wrong_pass / size)
        print(f"{'mode':<15} {'row':<11} " + " ".join(f"{e:>8.0e}" for e in epsilons))
        for row, values in rows.items():
            print(f"{mode:<15} {row:<11} " + " ".join(f"{v:>8.3f}" for v in values))
            results[f"{row}_{mode}"] = dict(zip(map(str, epsilons), values))


def single_entry(f, g, x, eps: float, trials: int, rng) -> str:
    """One entry of ``x`` off by ``eps`` in each trial: how often it is the only MISMATCH
    (and how often it was UNCHECKED: below what the check can resolve there)."""
    found = unchecked = 0
    for _ in range(trials):
        ix = tuple(int(i) for i in rng.integers(0, x.shape))

        def bad(z, ix=ix):
            out = g(z)
            out[ix] *= 1 + eps
            return out
        r = gradcheck.check(f, x, bad, adjudicate=False)
        found += r.entries(Verdict.MISMATCH) == [ix]
        unchecked += r.verdicts[ix] is Verdict.UNCHECKED
    return f"{found}/{trials} found exactly" + (f" ({unchecked} UNCHECKED)" if unchecked else "")


def main(quick: bool = False) -> dict:
    rng = np.random.default_rng(0)
    results: dict = {}
    print(f"{'dtype':<8} {'function':<32} {'N':>5} {'false alarms':>12} {'UNCHECKED':>9} {'PASS':>5}")
    for dtype in (np.float64, np.float32):
        alarms = 0
        for name, f, g, x in suite(dtype, rng):
            r = gradcheck.check(f, x, g, adjudicate=False)
            alarms += r.counts[Verdict.MISMATCH]
            print(f"{np.dtype(dtype).name:<8} {name:<32} {x.size:>5} {r.counts[Verdict.MISMATCH]:>12} {r.counts[Verdict.UNCHECKED]:>9}"
                  f" {r.counts[Verdict.PASS]:>5}")
        results[f"false_alarms_{np.dtype(dtype).name}"] = alarms

    print("\nsensitivity: fraction of judged (not UNCHECKED) entries flagged when every entry is off by eps"
          " (relative);\nUNCHECKED: fraction of all entries; PASS: fraction of all entries passed although wrong")
    epsilons = [1e-8, 1e-7, 1e-6, 3e-6, 1e-5, 1e-4, 1e-3, 1e-2, 3e-2, 1e-1]
    print(f"{'dtype':<8} {'row':<11} " + " ".join(f"{e:>8.0e}" for e in epsilons))
    for dtype in (np.float64, np.float32):
        fracs, unchecked, passed = [], [], []
        for eps in epsilons:
            caught = total = blind = wrong_pass = size = 0
            for _name, f, g, x in suite(dtype, rng)[: 4 if quick else None]:
                r = gradcheck.check(f, x, lambda z, g=g, eps=eps: g(z) * (1 + eps), adjudicate=False)
                judged = r.size - r.counts[Verdict.UNCHECKED]
                caught += r.counts[Verdict.MISMATCH]
                total += judged
                blind += r.counts[Verdict.UNCHECKED]
                wrong_pass += r.counts[Verdict.PASS]
                size += r.size
            fracs.append(caught / max(total, 1))
            unchecked.append(blind / size)
            passed.append(wrong_pass / size)
        name = np.dtype(dtype).name
        results[f"sensitivity_{name}"] = dict(zip(map(str, epsilons), fracs))
        results[f"unchecked_{name}"] = dict(zip(map(str, epsilons), unchecked))
        results[f"wrong_pass_{name}"] = dict(zip(map(str, epsilons), passed))
        for row, values in (("flagged", fracs), ("UNCHECKED", unchecked), ("PASS", passed)):
            print(f"{name:<8} {row:<11} " + " ".join(f"{v:>8.3f}" for v in values))

    x = rng.standard_normal((16, 32))
    def f(x):
        return (np.sin(x) * x * x).sum()

    def g(x):
        return np.cos(x) * x * x + 2 * x * np.sin(x)

    found = []
    for _ in range(3 if quick else 20):
        ix = tuple(int(i) for i in rng.integers(0, (16, 32)))
        def bad(z, ix=ix):
            out = g(z)
            out[ix] *= 1 + 1e-4
            return out
        found.append(gradcheck.check(f, x, bad, adjudicate=False).entries(Verdict.MISMATCH) == [ix])
    results["single_entry_1e-4_of_512"] = f"{sum(found)}/{len(found)} found exactly"
    print(f"\none entry of 512 off by 1e-4: {results['single_entry_1e-4_of_512']}")

    float32_modes(quick, epsilons, results)
    trials = 3 if quick else 20
    x32 = np.random.default_rng(322).standard_normal((16, 32)).astype(np.float32)
    results["single_entry_1e-5_of_512_float32"] = single_entry(f, g, x32, 1e-5, trials, np.random.default_rng(323))
    results["single_entry_1e-3_of_512_float32_forced"] = single_entry(forced(f), g, x32, 1e-3, trials,
                                                                      np.random.default_rng(324))
    print(f"\none entry of 512 off by 1e-5, float32: {results['single_entry_1e-5_of_512_float32']}")
    print(f"one entry of 512 off by 1e-3, float32 forced: {results['single_entry_1e-3_of_512_float32_forced']}")
    x64 = np.random.default_rng(326).standard_normal((16, 32))
    results["single_entry_1e-3_of_512_f64x_f32in"] = single_entry(forced(f), g, x64, 1e-3, trials,
                                                                  np.random.default_rng(327))
    print(f"one entry of 512 off by 1e-3, float64 x, f computing in float32: "
          f"{results['single_entry_1e-3_of_512_f64x_f32in']}")
    print(f"defaults: float64 {Config.for_dtype('float64')}\n          float32 forced {FORCED32_PRESET}")
    return results


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    t = time.perf_counter()
    main(p.parse_args().quick)
    print(f"({time.perf_counter() - t:.1f} s)")
