"""The float32-inside cases of the tolerance study, run through ``screen`` (issue 25).

``tolerance_study.py`` measures ``check`` on functions that compute in float32 whatever they are
given ("float32 forced": float32 x; "f64 x, f32 in": float64 x off the float32 grid). Here the
same cases (same generators, same seeds) go through ``gradcheck.screen``:

- false alarms: MISMATCH entries and FAIL reports on CORRECT claims (must be 0);
- the verdicts of the correct claims: SCREENED / PASS / UNCHECKED entries, and reports that
  verified nothing (INCONCLUSIVE);
- sensitivity: the claim off by eps on every entry, the share of reports that FAIL;
- one entry of 512 off by 1e-3 (the study's forced-float32 single-entry case): found alone?

Beside it, ``check`` on the same cases (the baseline the screen must not contradict).

Run: python benchmarks/screen_float32_inside.py [--quick]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from tolerance_study import forced, layer_norm_case, scaled, suite

import gradcheck
from gradcheck import Verdict

MODES = (("float32 forced", 321, np.float32), ("f64 x, f32 in", 325, np.float64))


def cases(seed: int, dtype, quick: bool) -> list:
    """The study's cases of one mode (the same generators and seeds as ``float32_modes``)."""
    found = suite(np.float32, np.random.default_rng(seed))[: 4 if quick else None]
    found.append(layer_norm_case(np.float32, np.random.default_rng(seed)))
    if dtype == np.float64:  # the float32 kernels at float64 x off the float32 grid
        jitter = np.random.default_rng(seed + 1)
        found = [(name, f, g, x.astype(np.float64) * (1 + 2.0**-30 * jitter.uniform(-1, 1, x.shape)))
                 for name, f, g, x in found]
    return found


def correct_claims(quick: bool) -> dict:
    """False alarms of screen (and of check beside it) on the correct claims."""
    out = {}
    print(f"{'mode':<15} {'function':<32} {'N':>5} {'screen':>12} {'SCREENED':>8} {'PASS':>5} {'UNCH':>5} "
          f"{'MISM':>5} {'evals':>6} {'check':>6}")
    for mode, seed, dtype in MODES:
        alarms = failed = inconclusive = 0
        for name, f, g, x in cases(seed, dtype, quick):
            s = gradcheck.screen(forced(f), x, g, adjudicate=False)
            c = gradcheck.check(forced(f), x, g, adjudicate=False)
            n = s.counts
            alarms += n[Verdict.MISMATCH]
            failed += s.status == "FAIL"
            inconclusive += s.status == "INCONCLUSIVE"
            print(f"{mode:<15} {name:<32} {x.size:>5} {s.status:>12} {n[Verdict.SCREENED]:>8} {n[Verdict.PASS]:>5} "
                  f"{n[Verdict.UNCHECKED]:>5} {n[Verdict.MISMATCH]:>5} {s.evaluations:>6} {c.status:>6}")
        out[mode] = {"mismatch_entries": alarms, "failed_reports": failed, "inconclusive_reports": inconclusive}
    return out


def sensitivity(quick: bool) -> dict:
    """Share of reports that FAIL when every entry of the claim is off by eps."""
    epsilons = [1e-4, 1e-3, 1e-2, 1e-1]
    out = {}
    print(f"\n{'mode':<15} FAIL share at eps " + " ".join(f"{e:>7.0e}" for e in epsilons))
    for mode, seed, dtype in MODES:
        row = []
        for eps in epsilons:
            found = cases(seed, dtype, quick)
            fails = sum(gradcheck.screen(forced(f), x, scaled(g, eps), adjudicate=False).status == "FAIL"
                        for _name, f, g, x in found)
            row.append(fails / len(found))
        out[mode] = dict(zip(map(str, epsilons), row))
        print(f"{mode:<15} {'':<17} " + " ".join(f"{v:>7.2f}" for v in row))
    return out


def single_entry(quick: bool) -> dict:
    """One entry of 512 off by 1e-3 (the study's forced single-entry case), per mode."""
    def f(x):
        return (np.sin(x) * x * x).sum()

    def g(x):
        return np.cos(x) * x * x + 2 * x * np.sin(x)

    out = {}
    trials = 3 if quick else 20
    for (mode, _, dtype), seed in zip(MODES, (322, 326)):
        x = np.random.default_rng(seed).standard_normal((16, 32)).astype(dtype)
        rng = np.random.default_rng(seed + 1)
        alone = 0
        for _ in range(trials):
            ix = tuple(int(i) for i in rng.integers(0, x.shape))

            def bad(z, ix=ix):
                out = g(z)
                out[ix] *= 1 + 1e-3
                return out
            alone += gradcheck.screen(forced(f), x, bad, adjudicate=False).entries(Verdict.MISMATCH) == [ix]
        out[mode] = f"{alone}/{trials} found exactly"
        print(f"one entry of 512 off by 1e-3, {mode}: {out[mode]}")
    return out


def main(quick: bool = False) -> dict:
    started = time.perf_counter()
    results = {"false_alarms": correct_claims(quick)}
    results["sensitivity"] = sensitivity(quick)
    print()
    results["single_entry"] = single_entry(quick)
    print(f"\n{time.perf_counter() - started:.0f} s")
    return results


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    main(p.parse_args().quick)
