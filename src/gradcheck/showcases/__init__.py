"""Showcases run by ``gradcheck demo``: each is a check whose correct outcome is known.

A showcase "behaves" when a planted bug is caught at exactly its entries, or a correct
gradient passes. The demo succeeds only if every showcase behaves.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np


@dataclass
class Showcase:
    title: str
    run: Callable[[], tuple[Any, bool, str]]   # -> (report, behaved, what was expected)


def _numpy_planted() -> tuple[Any, bool, str]:
    from .. import Verdict, check

    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 5))

    def f(x):
        return (np.tanh(x) * x[::-1]).sum()

    def claimed(x):
        g = (1 - np.tanh(x) ** 2) * x[::-1] + np.tanh(x[::-1])
        g[4, 1] *= 1 + 1e-5  # planted: a relative error of 1e-5 on one entry
        return g

    r = check(f, x, claimed, name="tanh(x)*flip(x), planted 1e-5 at (4, 1)")
    return r, r.entries(Verdict.MISMATCH) == [(4, 1)], "exactly entry (4, 1) flagged"


def _softmax_trap() -> tuple[Any, bool, str]:
    from .. import Verdict, check

    x = np.array([0.3, -1.2, 2.0, 0.7, 0.1])

    def softmax(x):
        e = np.exp(x - x.max())
        return e / e.sum()

    def vjp(x, v):
        s = softmax(x)
        return s * (v - (v * s).sum())

    r = check(softmax, x, vjp, name="softmax VJP (sum(softmax) is constant: random cotangent)")
    return r, r.passed and r.counts[Verdict.PASS] == x.size, "all entries PASS"


def _native_rosenbrock() -> tuple[Any, bool, str]:
    from .. import Verdict, check
    from ..native import native_function

    x = np.random.default_rng(3).uniform(-1.5, 1.5, 64)
    buggy = native_function("rosenbrock", grad="grad_lastbug")
    r = check(buggy, x, buggy.gradient, name="C rosenbrock, gradient drops a term at the last entry")
    return r, r.entries(Verdict.MISMATCH) == [(63,)], "exactly entry (63,) flagged"


def _transformer(mutation: str | None) -> Callable[[], tuple[Any, bool, str]]:
    def run() -> tuple[Any, bool, str]:
        from .. import check_params
        from ..examples.transformer import loss, loss_and_grads, make_problem

        params, ids, targets, cfg = make_problem()
        _, grads = loss_and_grads(params, ids, targets, cfg, mutation=mutation)
        r = check_params(lambda p: loss(p, ids, targets, cfg), params, grads)
        if mutation is None:
            return r, r.passed, "every entry of every parameter passes (bk: UNCHECKED, true gradient 0)"
        if mutation == "wq_line":
            return r, r.failing == ["b1.wq"] and r.diagnosis.kind == "isolated", "b1.wq fails alone"
        expected = [n for n in r.order if n.startswith("b0.") and n != "b0.bk"] + ["pos_emb", "tok_emb"]
        ok = r.failing == expected and r.diagnosis.suspects == ("b1.ln1_g -> b0.b2",)
        return r, ok, "block 0 and the embeddings fail: defect in what block 1's backward returns"

    return run


def _control() -> tuple[Any, bool, str]:
    from .. import assert_detects_wrong_gradient

    assert_detects_wrong_gradient("numpy")
    return "negative control (numpy backend): corrupted gradient flagged, correct one passed", True, "both directions"


SHOWCASES = (
    Showcase("negative control", _control),
    Showcase("numpy function, planted 1e-5 relative bug", _numpy_planted),
    Showcase("softmax: why the default cotangent is random", _softmax_trap),
    Showcase("C kernel through cffi, planted bug", _native_rosenbrock),
    Showcase("tiny transformer, correct backward", _transformer(None)),
    Showcase("tiny transformer, one tensor's line wrong", _transformer("wq_line")),
    Showcase("tiny transformer, wrong value returned from block 1", _transformer("block_return")),
)


def run_demo(*, json_out: bool = False, print_fn: Callable[[str], None] = print) -> bool:
    """Run every showcase, print each report, and return whether all behaved."""
    results = []
    all_ok = True
    for sc in SHOWCASES:
        started = time.perf_counter()
        report, ok, expected = sc.run()
        seconds = time.perf_counter() - started
        all_ok &= ok
        results.append({"title": sc.title, "behaved": ok, "expected": expected, "seconds": seconds,
                        "report": report.to_dict() if hasattr(report, "to_dict") else str(report)})
        if not json_out:
            print_fn(f"=== {sc.title} ({'as expected' if ok else 'UNEXPECTED'}: {expected}; {seconds:.2f} s)")
            print_fn(str(report))
            print_fn("")
    if json_out:
        print_fn(json.dumps({"behaved": all_ok, "showcases": results}))
    else:
        print_fn(f"demo: {sum(r['behaved'] for r in results)}/{len(results)} showcases behaved as expected")
    return all_ok
