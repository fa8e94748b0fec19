"""Whole models with ``check_params(..., screen=True)`` (issue 28).

1. ``names``: the numpy tanh MLP (``gradcheck.examples.mlp``) with 12, 48 and 148 names (6, 24,
   74 layers of 256 x 256; ``--small``: 32 x 32): evaluations for the correct gradients and to
   find one entry of ``w3`` off by 1e-4 (found at its exact index?), beside the per-name
   screening check_params did before issue 28 (each name screened alone, the others held:
   ``gradcheck.screen`` per name), measured in the same run on the 12-name model.
2. ``gpt``: the GPT-2-style decoder in PyTorch (``gradcheck.examples.gpt_torch``, float64, CPU,
   random init, sequence 32): GPT-2 small with ``--full`` (148 names, 124,439,808 parameters),
   else a small one. Each case (correct gradients, and each planted bug of ``gpt.BUGS``) runs in
   its own process: evaluations, wall time, the failing names against the bug's (``gpt.bug_site``),
   the planted entry at (name, index), the process's peak RSS and what it added per parameter
   over the model and its batch (``ru_maxrss`` of the child; RSS after building the model).
3. ``drown``: an embedding next to a layer-norm gain (the embedding's gradients 3 decades below
   the gain's: a multiplier of 1e-3 on the embedding), and the small GPT: each name's detection
   limit at its median entry in the joint screen, screened alone (``gradcheck.screen``), and
   what check_params states after its second look; the evaluations spent on the second look.
4. ``memory``: tracemalloc's peak above the parameters and claims, in bytes per parameter, of a
   numpy model of 12M entries (``--small``: 3M): held against
   :data:`BYTES_TARGET`.
5. ``overhead``: the screen's own work per evaluation (everything but the loss) on a numpy
   model of 6M and 30M parameters (``--small``: 0.5M) whose loss costs a few ms, in ns per
   parameter: what a whole model's screen adds to each forward.
6. ``honest``: on a model small enough to check entry by entry (the tiny numpy GPT), errors of
   1.5x the stated limit planted one at a time at random entries: every one found; and the
   entry-wise check calls each a MISMATCH too.
7. ``verdicts``: the numpy GPT (hand-written backward) and its PyTorch twin (autograd) give the
   same failing names, for the correct gradients and every planted bug.

    python benchmarks/bench_model.py --small                 (every part at small sizes; --quick the same)
    python benchmarks/bench_model.py gpt --width 96          (GPT-2 small's 148 names at width 96: 6.3M parameters)
    python benchmarks/bench_model.py forward --full          (one loss evaluation of GPT-2 small)
    python benchmarks/bench_model.py names                   (the MLP figures)
    nice python benchmarks/bench_model.py gpt --full [--case correct]   (GPT-2 small; one case: --case)

Evaluation counts are deterministic; times follow the machine's load (printed).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time

import numpy as np
from _common import header, table

import gradcheck
from gradcheck import Verdict
from gradcheck.examples import gpt
from gradcheck.examples.mlp import make_mlp

#: The issue's bars.
NAMES_CORRECT, NAMES_ENTRY, NAMES_GROWTH = 300, 500, 1.2
GPT_CORRECT, GPT_MINUTES = 400, 20.0
#: Peak bytes per parameter of the numpy path (above the caller's parameters and claims).
BYTES_TARGET = 64.0
CASES = ("correct",) + gpt.BUGS
QUICK_LEAVES_OUT = ("the 256-wide MLP (32 wide), the small GPT's planted bugs but one entry (both in the verdicts "
                    "part), the 64-wide GPT of the drown part (32 wide) and its screens alone but one name of each kind "
                    "screened again and the smallest, 12M parameters of the memory part (3M: fixed-size chunks weigh more per parameter there), "
                    "all but 6 planted errors of the honest part, 4 of the verdicts' 6 cases (correct and one entry kept), "
                    "the overhead part at 0.5M parameters (6M and 30M), torch's second thread (the small GPTs run on one), "
                    "the small GPT's cases in this process (its peak RSS is then this process's)")


def held(loss, params, name):
    """``loss`` as a function of ``params[name]`` alone, the other names held."""
    def of_name(v):
        return loss({**params, name: v})
    return of_name


# -- 1. names ------------------------------------------------------------------------------------

def per_name(loss, params, grads) -> int:
    """What check_params(screen=True) cost before issue 28: every name screened alone."""
    total = 2
    for name in params:
        total += gradcheck.screen(held(loss, params, name), params[name], grads[name], engine="serial").evaluations
    return total


def names_part(small: bool) -> dict:
    width = 32 if small else 256
    rows, out = [], {}
    for layers in (6, 24, 74):
        params, loss, grads = make_mlp(layers, width, batch=32)
        g = grads(params)
        started = time.perf_counter()
        ok = gradcheck.check_params(loss, params, g, screen=True, engine="serial")
        seconds_ok = time.perf_counter() - started
        bad = {k: v.copy() for k, v in g.items()}
        at = (17 % width, 101 % width)
        bad["w3"][at] *= 1 + 1e-4
        found = gradcheck.check_params(loss, params, bad, screen=True, engine="serial")
        exact = found.failing == ["w3"] and found["w3"].entries(Verdict.MISMATCH) == [at]
        before = per_name(loss, params, g) if layers == 6 else None
        out[layers] = dict(names=2 * layers, entries=sum(p.size for p in params.values()), correct=ok.evaluations,
                           passed=ok.passed, entry=found.evaluations, exact=exact, seconds=seconds_ok, before=before)
        rows.append([2 * layers, out[layers]["entries"], ok.evaluations, "PASS" if ok.passed else ok.status,
                     found.evaluations, "yes" if exact else f"NO {found.failing}", before or "",
                     f"{seconds_ok:.1f} s"])
    print(table(["names", "entries", "correct", "verdict", "1e-4 entry", "at (w3, index)", "per name (before)",
                 "time"], rows))
    base = out[6]
    grow = max(out[k]["correct"] / base["correct"] for k in (24, 74)), max(out[k]["entry"] / base["entry"]
                                                                            for k in (24, 74))
    print(f"   12 names: {base['correct']} evaluations correct (bar {NAMES_CORRECT}; {base['before']} before, "
          f"{base['before'] / base['correct']:.1f}x), {base['entry']} to find the entry (bar {NAMES_ENTRY}); "
          f"48 and 148 names: at most {grow[0]:.2f}x and {grow[1]:.2f}x the 12-name figures (bar {NAMES_GROWTH}x)")
    return out


# -- 2. gpt ----------------------------------------------------------------------------------------

def gpt_config(full: bool, width: int | None = None, small: bool = False) -> gpt.GPTConfig:
    """GPT-2 small (``full``); its structure (12 layers, 12 heads, vocabulary 50,257: 148 names) at
    ``emb_dim=width`` (the scaled run); else a small GPT (``small``: smaller still)."""
    if full or width:
        big = gpt.GPTConfig.gpt2_small()
        return big if not width else gpt.GPTConfig(big.vocab_size, big.context_len, width, big.num_heads,
                                                   big.num_layers)
    if small:
        return gpt.GPTConfig(vocab_size=512, context_len=32, emb_dim=32, num_heads=4, num_layers=2)
    return gpt.GPTConfig(vocab_size=2048, context_len=64, emb_dim=64, num_heads=4, num_layers=4)


def _model(cfg: gpt.GPTConfig, case: str):
    """The PyTorch GPT of ``cfg`` (random init, seed 0) with ``case``'s bug, and a batch of 32."""
    import torch

    from gradcheck.examples.gpt_torch import GPT

    rng = np.random.default_rng(0)
    params = gpt.init_params(cfg, rng)
    tokens = torch.from_numpy(rng.integers(cfg.vocab_size, size=33))
    model = GPT.from_numpy(cfg, params, bug=None if case == "correct" else case)
    return model, tokens[:-1], tokens[1:]


def forward_seconds(model, ids, targets, repeats: int = 3) -> float:
    """The median time of one loss evaluation of a PyTorch GPT (no gradient)."""
    import torch

    times = []
    with torch.no_grad():
        for _ in range(repeats):
            started = time.perf_counter()
            model.loss(ids, targets)
            times.append(time.perf_counter() - started)
    return float(np.median(times))


def rss_bytes() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


#: torch's intra-op threads under --quick: the small GPT's operations are too small to share (at
#: a load of 5 on 2 cores one case's screen took 12.3 s of CPU on torch's 2 threads, 4.0 s on one).
QUICK_TORCH_THREADS = 1


def gpt_case(cfg: gpt.GPTConfig, case: str, threads: int | None = None) -> dict:
    """One case, in this process (the parent runs it as a child to read its peak RSS);
    ``threads``: torch's intra-op threads (default: torch's)."""
    import torch

    if threads:
        torch.set_num_threads(threads)

    model, ids, targets = _model(cfg, case)
    forward = forward_seconds(model, ids, targets)
    before = rss_bytes()
    spent = [0.0, 0]

    def loss_fn(m):
        begun = time.perf_counter()
        try:
            return m.loss(ids, targets)
        finally:
            spent[0] += time.perf_counter() - begun
            spent[1] += 1

    started = time.perf_counter()
    r = gradcheck.check_params(model, loss_fn, screen=True, engine="serial")
    took = time.perf_counter() - started
    expected = [] if case == "correct" else list(gpt.bug_site(cfg, case))
    out = dict(case=case, evaluations=r.evaluations, minutes=took / 60, forward=forward, status=r.status,
               failing=sorted(r.failing), expected=sorted(expected), rss_before=before,
               n=cfg.num_params(), threads=torch.get_num_threads(), notes=list(r.notes),
               loss_seconds=spent[0], loss_calls=spent[1])
    if case == "entry":
        name = expected[0]
        at = gpt.planted_index(cfg)
        claim = float(r[name].analytic[at])
        out["entry_found"] = r[name].entries(Verdict.MISMATCH) == [at]
        out["entry_claim_rel_to_median"] = abs(claim) / float(np.median(np.abs(r[name].analytic)))
    out["limits"] = {n: _median_limit(r[n]) for n in r.order}
    return out


def _median_limit(report) -> list[float]:
    on = report.codes == Verdict.SCREENED
    if not on.any():
        return [float("nan"), float("nan")]
    limit = report.detection_limit[on].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = limit / np.abs(report.analytic[on])
    return [float(np.median(limit)), float(np.median(rel))]


def _minutes(minutes: float) -> str:
    return f"{minutes:.1f} min" if minutes >= 1 else f"{60 * minutes:.1f} s"


def gpt_part(full: bool, cases: list[str], width: int | None = None, small: bool = False) -> dict:
    cfg = gpt_config(full, width, small)
    print(f"   model: {len(gpt.param_shapes(cfg))} names, {cfg.num_params():,} parameters, float64, sequence 32")
    quick = small and not (full or width)
    size = ["--full"] if full else ["--width", str(width)] if width else ["--small"] if small else []
    rows, out = [], {}
    for case in cases:
        cmd = [sys.executable, os.path.abspath(__file__), "gpt-child", "--case", case] + size
        if quick:  # a small model: in this process (no interpreter and torch to start twice), one thread
            loads = [os.getloadavg()[0]]
            stdout, stderr, code = json.dumps(gpt_case(cfg, case, QUICK_TORCH_THREADS), default=float), "", 0
            loads.append(os.getloadavg()[0])
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        else:
            stdout, stderr, loads, code = _child(cmd)
            peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # the largest child so far
        if code:
            print(stderr[-3000:])
            rows.append([case, "ERROR"] + [""] * 8)
            continue
        got = json.loads(stdout.strip().splitlines()[-1])
        got["peak_rss"] = peak
        got["load"] = [min(loads), float(np.median(loads)), max(loads)]
        out[case] = got
        located = got["failing"] == got["expected"]
        if case == "entry":
            located = located and got["entry_found"]
        per_eval = 60 * got["minutes"] / got["evaluations"]
        own = (60 * got["minutes"] - got["loss_seconds"]) / got["evaluations"]
        rows.append([case, got["evaluations"], f"{got['minutes']:.1f} min", f"{per_eval:.3g} s", f"{own:.3g} s", f"{got['forward']:.3g} s",
                     "{:.1f} / {:.1f} / {:.1f}".format(*got["load"]), got["status"],
                     "yes" if located else f"NO: extra {sorted(set(got['failing']) - set(got['expected']))[:3]} "
                                           f"missing {sorted(set(got['expected']) - set(got['failing']))[:3]}",
                     f"{peak / 2**30:.2f} GiB ({(peak - got['rss_before']) / got['n']:.1f} B/param over the model)"])
    print(table(["case", "evaluations", "time", "per evaluation", "of it the screen's own", "forward", "1-min load (min/median/max)", "status",
                 "localized to the right names", "peak RSS"], rows))
    if "correct" in out:
        c = out["correct"]
        print(f"   correct gradients: {c['evaluations']} evaluations (bar {GPT_CORRECT}), {_minutes(c['minutes'])} "
              f"(bar {GPT_MINUTES:g}), torch threads {c['threads']}")
    return out


def _child(cmd: list[str], every: float = 10.0) -> tuple[str, str, list[float], int]:
    """Run ``cmd``; its output, the machine's 1-minute load sampled every ``every`` seconds
    while it ran, and its exit code."""
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    loads = [os.getloadavg()[0]]
    while True:
        try:
            stdout, stderr = child.communicate(timeout=every)
            return stdout, stderr, loads, child.returncode
        except subprocess.TimeoutExpired:
            loads.append(os.getloadavg()[0])


# -- 3. drown ----------------------------------------------------------------------------------------

def forward_part(full: bool, width: int | None = None) -> dict:
    """One loss evaluation of the PyTorch GPT (GPT-2 small with ``--full``): what a screen's
    evaluation costs there before the screen's own work."""
    cfg = gpt_config(full, width)
    started = time.perf_counter()
    model, ids, targets = _model(cfg, "correct")
    built = time.perf_counter() - started
    seconds = forward_seconds(model, ids, targets)
    print(f"   {cfg.num_params():,} parameters: one loss evaluation {seconds:.3g} s (median of 3; model built in "
          f"{built:.3g} s)")
    return dict(n=cfg.num_params(), forward=seconds)


def embedding_next_to_gain(multiplier: float = 1e-3):
    """tokens -> multiplier * emb[ids] + pos -> layer norm (gain, bias) -> tanh(. @ w) . Y."""
    from gradcheck.examples._transformer_backward import layer_norm_backward
    from gradcheck.examples.transformer import _layer_norm

    rng = np.random.default_rng(0)
    vocab, seq, dim = 2000, 16, 64
    ids, target = rng.integers(vocab, size=seq), rng.standard_normal((seq, dim))
    params = {"emb": rng.standard_normal((vocab, dim)), "pos": rng.standard_normal((seq, dim)),
              "ln.gain": 1 + 0.1 * rng.standard_normal(dim), "ln.bias": 0.1 * rng.standard_normal(dim),
              "w": rng.standard_normal((dim, dim)) / 8}

    def loss(p):
        h, _ = _layer_norm(multiplier * p["emb"][ids] + p["pos"], p["ln.gain"], p["ln.bias"])
        return float((np.tanh(h @ p["w"]) * target).sum())

    def grads(p):
        h, cache = _layer_norm(multiplier * p["emb"][ids] + p["pos"], p["ln.gain"], p["ln.bias"])
        z = np.tanh(h @ p["w"])
        dz = target * (1 - z * z)
        g = {"w": h.T @ dz}
        dx, g["ln.gain"], g["ln.bias"] = layer_norm_backward(dz @ p["w"].T, cache, p["ln.gain"])
        g["pos"] = dx
        g["emb"] = np.zeros_like(p["emb"])
        np.add.at(g["emb"], ids, multiplier * dx)
        return {n: g[n] for n in p}

    return params, loss, grads(params)


def drown_part(small: bool, rtol: float | None = None) -> dict:
    cfg_small = gpt.GPTConfig(vocab_size=512, context_len=32, emb_dim=32 if small else 64, num_heads=4, num_layers=4)
    g_params, ids, targets = gpt.make_problem(cfg_small, seq_len=16, seed=0)
    models = {"embedding next to a layer-norm gain": embedding_next_to_gain(),
              "small GPT": (g_params, lambda p: gpt.loss(p, ids, targets, cfg_small),
                            gpt.loss_and_grads(g_params, ids, targets, cfg_small)[1])}
    config = None if rtol is None else gradcheck.Config(rtol=rtol)
    out = {}
    for title, (params, loss, grads) in models.items():
        r = gradcheck.check_params(loss, params, grads, screen=True, engine="serial", adjudicate=False, config=config)
        rows, alone_evals = [], 0
        alone_names = _quick_baseline(r, grads) if small else set(r.order)
        for name in r.order:
            joint, final = _joint_limit(r[name]), _median_limit(r[name])
            if name not in alone_names:
                own, evals = None, None
            else:
                alone = gradcheck.screen(held(loss, params, name), params[name], grads[name],
                                         engine="serial", adjudicate=False, config=config)
                own, evals = _median_limit(alone), alone.evaluations
                alone_evals += evals
            rows.append([name, f"{np.median(np.abs(grads[name])):.1e}", f"{joint:.2e}" if joint else "-",
                         f"{final[0]:.2e} ({final[1]:.1e})", f"{own[0]:.2e} ({own[1]:.1e})" if own else "(not run)",
                         evals if evals is not None else ""])
        second = [n for n in r.notes if "screened again" in n]
        print(f"   {title}: {r.evaluations} evaluations, {r.status}; {second[0] if second else 'no second look'}")
        print(table(["name", "|g| median", "joint limit", "stated (rel)", "alone (rel)", "alone evals"], rows))
        if small:
            print(f"   --quick: {len(alone_names)} of {len(rows)} names screened alone ({alone_evals} evaluations): "
                  "one of each kind the joint screen screened again, and the name of the smallest gradients")
        out[title] = dict(evaluations=r.evaluations, rows=rows)
    return out


def _quick_baseline(r, grads) -> set[str]:
    """The names --quick screens alone: where drowning is at stake, the name of the smallest
    gradients (the embedding next to the gain) and, of the names the joint screen screened
    again, the first of each kind (``h.3.attn.c_attn.bias`` stands for ``h.*.attn.c_attn.bias``)."""
    chosen = {min(r.order, key=lambda n: float(np.median(np.abs(grads[n]))))}
    kinds: set[str] = set()
    for name in r.order:
        kind = re.sub(r"\.\d+\.", ".*.", name)
        if _joint_limit(r[name]) is not None and kind not in kinds:
            kinds.add(kind)
            chosen.add(name)
    return chosen


def _joint_limit(report) -> float | None:
    for note in report.notes:
        if "went from" in note:
            return float(note.split("went from ")[1].split(" to ")[0])
    return None


# -- 4. memory --------------------------------------------------------------------------------------

def memory_part(small: bool, entries: int | None = None) -> dict:
    import tracemalloc

    n = entries or (3_000_000 if small else 12_000_000)
    sizes = [n // 2, n // 4, n // 8, n - n // 2 - n // 4 - n // 8 - 768, 768]
    rng = np.random.default_rng(0)
    params = {f"p{k}": 0.5 * rng.standard_normal(s) for k, s in enumerate(sizes)}
    coef = {k: rng.standard_normal(v.shape) for k, v in params.items()}

    def loss(p):  # two temporaries of a name's size, as tanh(p) * coef made, at a third of its cost
        return float(sum(float((p[k] * p[k] * coef[k]).sum()) for k in p))

    grads = {k: 2 * v * coef[k] for k, v in params.items()}
    tracemalloc.start()
    base, _ = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    r = gradcheck.check_params(loss, params, grads, screen=True, engine="serial", adjudicate=False)
    now, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    per = (peak - base) / n
    print(f"   {n:,} parameters ({len(params)} names): peak {per:.1f} B/param above the parameters and claims "
          f"(target <= {BYTES_TARGET:g}: {'ok' if per <= BYTES_TARGET else 'OVER'}); the report holds "
          f"{(now - base) / n:.1f} B/param; {r.evaluations} evaluations, {r.status}")
    return dict(entries=n, peak_per_param=per, held_per_param=(now - base) / n)


# -- 4b. overhead ----------------------------------------------------------------------------------

def overhead_part(small: bool, sizes: tuple[int, ...] | None = None) -> dict:
    """The screen's own work per evaluation (everything but the loss), on a numpy model of 12
    names whose loss is two dot products per name (a few ms at 30M parameters): what a whole
    model's screen adds to each forward, in ns per parameter, for the correct gradients and
    one entry off by 1e-4."""
    out, rows = {}, []
    for n in sizes or ((500_000,) if small else (6_000_000, 30_000_000)):
        part = [n // 12] * 11
        rng = np.random.default_rng(0)
        params = {f"p{k}": 0.5 * rng.standard_normal(s) for k, s in enumerate(part + [n - sum(part)])}
        coef = {k: rng.standard_normal(v.shape) for k, v in params.items()}
        spent = [0.0]

        def loss(p, coef=coef, spent=spent):
            started = time.perf_counter()
            value = sum(float(coef[k] @ v) + 0.5 * float(v @ v) for k, v in p.items())
            spent[0] += time.perf_counter() - started
            return value

        right = {k: coef[k] + v for k, v in params.items()}
        bad = dict(right, p3=right["p3"].copy())
        bad["p3"][1234] *= 1 + 1e-4
        for case, grads in (("correct", right), ("entry", bad)):
            spent[0] = 0.0
            started = time.perf_counter()
            r = gradcheck.check_params(loss, params, grads, screen=True, engine="serial")
            took = time.perf_counter() - started
            own = (took - spent[0]) / r.evaluations
            found = r.failing == ["p3"] and r["p3"].entries(Verdict.MISMATCH) == [(1234,)]
            out[f"{n}/{case}"] = dict(evaluations=r.evaluations, seconds=took, loss=spent[0], own_per_eval=own)
            rows.append([f"{n:,}", case, r.evaluations, f"{took:.1f} s", f"{spent[0]:.1f} s", f"{own * 1e3:.1f} ms",
                         f"{own / n * 1e9:.1f}", "PASS" if r.passed else ("found at (p3, 1234)" if found else
                                                                          f"{r.status} {r.failing}")])
    print(table(["parameters", "case", "evaluations", "time", "of it the loss", "screen's own work per evaluation",
                 "ns per parameter", "verdict"], rows))
    return out


# -- 5. honest ----------------------------------------------------------------------------------------

def honest_part(small: bool) -> dict:
    cfg = gpt.GPTConfig(vocab_size=11, context_len=8, emb_dim=8, num_heads=2, num_layers=2)
    params, ids, targets = gpt.make_problem(cfg, seq_len=6, seed=1)
    def loss(p):
        return gpt.loss(p, ids, targets, cfg)

    right = gpt.loss_and_grads(params, ids, targets, cfg)[1]
    clean = gradcheck.check_params(loss, params, right, screen=True, engine="serial", adjudicate=False)
    rng = np.random.default_rng(7)
    names = [n for n in clean.order]
    trials, found, flagged = (6 if small else 60), 0, 0
    for _ in range(trials):
        name = names[rng.integers(len(names))]
        at = tuple(int(i) for i in np.unravel_index(rng.integers(params[name].size), params[name].shape))
        limit = float(clean[name].detection_limit[at])
        bad = {k: v.copy() for k, v in right.items()}
        bad[name][at] += rng.choice([-1.0, 1.0]) * 1.5 * limit
        r = gradcheck.check_params(loss, params, bad, screen=True, engine="serial", adjudicate=False)
        found += r[name].entries(Verdict.MISMATCH) == [at] or name in r.evidence
        full = gradcheck.check(held(loss, params, name), params[name], bad[name], adjudicate=False)
        flagged += at in full.entries(Verdict.MISMATCH)
    print(f"   {trials} errors of 1.5x the stated limit, one at a time at random entries of the tiny GPT "
          f"({sum(p.size for p in params.values())} entries): found by the screen {found}/{trials}, "
          f"MISMATCH entry-wise {flagged}/{trials}")
    return dict(trials=trials, found=found, entrywise=flagged)


# -- 6. verdicts --------------------------------------------------------------------------------------

def verdicts_part(small: bool) -> dict:
    import torch

    from gradcheck.examples.gpt_torch import GPT

    cfg = gpt.GPTConfig(vocab_size=64, context_len=16, emb_dim=16, num_heads=2, num_layers=2)
    params, ids, targets = gpt.make_problem(cfg, seq_len=8, seed=0)
    rows, out = [], {}
    threads = torch.get_num_threads()
    if small:
        torch.set_num_threads(QUICK_TORCH_THREADS)
    for case in (("correct", "entry") if small else CASES):
        bug = None if case == "correct" else case
        _, grads = gpt.loss_and_grads(params, ids, targets, cfg, bug=bug)
        numpy_r = gradcheck.check_params(lambda p: gpt.loss(p, ids, targets, cfg), params, grads, screen=True,
                                         engine="serial")
        model = GPT.from_numpy(cfg, params, bug=bug)
        torch_r = gradcheck.check_params(model, lambda m: m.loss(torch.from_numpy(ids), torch.from_numpy(targets)),
                                         screen=True, engine="serial")
        same = numpy_r.failing == torch_r.failing and numpy_r.status == torch_r.status
        right = sorted(numpy_r.failing) == sorted(gpt.bug_site(cfg, bug) if bug else [])
        out[case] = dict(same=same, right=right)
        rows.append([case, numpy_r.status, numpy_r.evaluations, torch_r.evaluations, "yes" if same else "NO",
                     "yes" if right else "NO"])
    torch.set_num_threads(threads)
    print(table(["case", "status", "numpy evaluations", "torch evaluations", "same failing names", "right names"],
                rows))
    return out


PARTS = {"names": names_part, "drown": drown_part, "memory": memory_part, "overhead": overhead_part,
         "honest": honest_part, "verdicts": verdicts_part}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("parts", nargs="*", help=f"any of {['gpt', 'forward', *PARTS]} (default: all but forward)")
    parser.add_argument("--small", "--quick", action="store_true", dest="small",
                        help="every part at small sizes (gradcheck bench --quick)")
    parser.add_argument("--full", action="store_true", help="gpt: GPT-2 small (124 M parameters)")
    parser.add_argument("--width", type=int, help="gpt: GPT-2 small's structure (148 names) at this emb_dim "
                                                    "(a scaled run; a multiple of 12)")
    parser.add_argument("--case", action="append", help=f"gpt: the cases to run (default: all of {CASES})")
    parser.add_argument("--threads", type=int, help="gpt-child: torch's intra-op threads (default torch's; the "
                                                      f"small GPT of --quick runs on {QUICK_TORCH_THREADS})")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = parser.parse_args(argv)
    if args.parts == ["gpt-child"]:
        for case in args.case:  # one JSON line per case
            print(json.dumps(gpt_case(gpt_config(args.full, args.width, args.small), case, args.threads),
                             default=float), flush=True)
        return 0
    header("whole models: check_params(..., screen=True)", args.small, QUICK_LEAVES_OUT)
    results: dict = {}
    took: dict[str, float] = {}
    begun = time.perf_counter()
    for part in args.parts or ["names", "gpt", "drown", "memory", "overhead", "honest", "verdicts"]:
        print(f"-- {part} (from {time.perf_counter() - begun:.1f} s)", flush=True)
        started = time.perf_counter()
        if part == "forward":
            results[part] = forward_part(args.full, args.width)
        elif part == "gpt":
            cases = args.case or (["correct", "entry"] if args.small and not args.full else list(CASES))
            results[part] = gpt_part(args.full, cases, args.width, args.small)
        else:
            results[part] = PARTS[part](args.small)
        took[part] = time.perf_counter() - started
    print("-- time per part")
    print(table(["part", "time"], [[part, f"{t:.1f} s"] for part, t in took.items()]))
    results["seconds"] = took
    print(f"-- done in {time.perf_counter() - begun:.1f} s")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
