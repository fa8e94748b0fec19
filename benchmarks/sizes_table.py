"""Which call does a full check of a large tensor: check, screen, independent_axes, measured.

Two subjects at 10^4 and 10^5 entries, every call on the correct claim, serial engine:

* **cheap f**: ``sin(x) * w`` elementwise (array output, reduced by the cotangent): one
  evaluation is a numpy ufunc pass, microseconds; ``independent_axes="all"`` applies.
* **O(N) f**: ``tanh(W @ x)`` with W of shape (16, N): every output reads every entry, one
  evaluation costs 16N multiply-adds; ``independent_axes`` does not apply.

For each: evaluations of f and wall time of ``check``, ``screen`` and
``check(..., independent_axes="all")`` where it applies. A ``check`` whose cost plan
(``gradcheck._pipeline.cost``) says it would take longer than ``--max-seconds`` is not run:
its cell is the plan (marked "plan"). The results go to ``benchmarks/results/sizes.json``;
``--write`` renders the README's three lines from that file (``tests/test_readme.py`` checks
that README.md quotes exactly them).

    PYTHONPATH=src nice -n 5 python benchmarks/sizes_table.py [--max-seconds 60] [--write]
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "sizes.json"
README = HERE.parent / "README.md"
START, END = "<!-- sizes-table:start -->", "<!-- sizes-table:end -->"
SIZES = (10**4, 10**5)


def subjects(n: int) -> dict:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n)
    w = rng.standard_normal(n)
    W = rng.standard_normal((16, n)) / np.sqrt(n)
    return {
        "cheap f": (lambda v: np.sin(v) * w, x, lambda v, g: np.cos(v) * w * g, True),
        "O(N) f": (lambda v: np.tanh(W @ v), x, lambda v, g: W.T @ ((1 - np.tanh(W @ v) ** 2) * g), False),
    }


def measure(max_seconds: float) -> dict:
    import gradcheck
    from gradcheck._pipeline.cost import plan_cost

    out: dict = {"rows": []}
    for n in SIZES:
        for name, (f, x, vjp, elementwise) in subjects(n).items():
            row = {"subject": name, "entries": n}
            began = time.perf_counter()
            f(x)
            row["one_evaluation_s"] = time.perf_counter() - began
            began = time.perf_counter()
            r = gradcheck.screen(f, x, vjp)
            row["screen"] = {"evaluations": r.evaluations, "seconds": time.perf_counter() - began,
                             "status": r.status}
            if elementwise:
                began = time.perf_counter()
                r = gradcheck.check(f, x, vjp, independent_axes="all", engine="serial")
                row["independent_axes"] = {"evaluations": r.evaluations, "seconds": time.perf_counter() - began,
                                           "status": r.status}
            cfg = gradcheck.Config()
            claim = vjp(x, np.random.default_rng(0).standard_normal(f(x).shape))
            plan = plan_cost(claim, 6e-6 * np.maximum(1, np.abs(x)), float(np.sum(f(x))), 2.0**-53, cfg,
                             spent=3, call_seconds=row["one_evaluation_s"])
            if plan.seconds is not None and plan.seconds > max_seconds:
                row["check"] = {"evaluations": plan.evaluations, "seconds": plan.seconds, "planned": True}
            else:
                began = time.perf_counter()
                r = gradcheck.check(f, x, vjp, engine="serial")
                row["check"] = {"evaluations": r.evaluations, "seconds": time.perf_counter() - began,
                                "status": r.status, "planned": False}
            print(json.dumps(row), flush=True)
            out["rows"].append(row)
    return out


def _cell(c: dict | None) -> str:
    if c is None:
        return "does not apply"
    s = c["seconds"]
    t = f"{s:.2g} s" if s < 60 else f"{s / 60:.1f} min" if s < 3600 else f"{s / 3600:.1f} h"
    return f"{c['evaluations']:,} evals, {t}" + (" (plan)" if c.get("planned") else "")


def render(results: dict | None = None) -> str:
    """The README's lines: one per call, the four measurements of each."""
    results = json.loads(RESULTS.read_text()) if results is None else results
    rows = {(r["subject"], r["entries"]): r for r in results["rows"]}
    lines = ["| call | cheap f, 10^4 | cheap f, 10^5 | O(N) f, 10^4 | O(N) f, 10^5 |", "| --- | --- | --- | --- | --- |"]
    for call, label in (("check", "`check`"), ("independent_axes", "`check(..., independent_axes=...)`"),
                        ("screen", "`screen`")):
        cells = [_cell(rows[(s, n)].get(call)) for s in ("cheap f", "O(N) f") for n in SIZES]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def readme_table(text: str) -> str:
    return text.split(START, 1)[1].split(END, 1)[0].lstrip("\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-seconds", type=float, default=60.0)
    parser.add_argument("--write", action="store_true", help="only render README.md's block from the results")
    args = parser.parse_args(argv)
    if not args.write:
        logging.getLogger("gradcheck").setLevel(logging.ERROR)
        results = measure(args.max_seconds)
        RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    text = README.read_text(encoding="utf-8")
    if START in text:
        head, rest = text.split(START, 1)
        README.write_text(head + START + "\n" + render() + END + rest.split(END, 1)[1], encoding="utf-8")
    print(render(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
