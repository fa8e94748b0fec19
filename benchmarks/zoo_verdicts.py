"""Verdicts of the test zoo and the negative controls, printed so two trees can be diffed.

Issue 13 (the package redesign) promised the same verdicts before and after the move. This
script prints, for every case of ``tests/zoo.py`` and each claim (the correct closed form
and the planted bug), the verdict counts of ``check`` with the referee (default) and
without it (``adjudicate=False``), whether the MISMATCH entries are exactly the planted
ones, and a short hash of the verdict codes; then the outcome of each negative control
(``assert_detects_wrong_gradient`` for every kind of claim) and of an ``f`` that writes
``-0.0`` over a ``0.0`` of its input. With ``--doctests`` it runs instead every docstring
example of every module of the package (``doctest.testmod``) and prints the examples tried
and failed per module and in total. Only public names are used, so the same script runs
against any tree::

    PYTHONPATH=/tmp/before/src python benchmarks/zoo_verdicts.py > before.txt
    PYTHONPATH=src python benchmarks/zoo_verdicts.py > after.txt
    diff before.txt after.txt

The zoo itself is read from this checkout's ``tests/zoo.py`` (the cases, not the package).
"""
from __future__ import annotations

import doctest
import hashlib
import importlib
import pkgutil
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from zoo import CASES  # noqa: E402

import gradcheck  # noqa: E402
from gradcheck import Verdict, check  # noqa: E402

KINDS = ("grad", "jvp", "hvp", "adjoint", "taylor", "complex")


def counts(report) -> str:
    """``PASS=12 MISMATCH=1 ...``: the non-zero verdict counts, in the Verdict enum's order."""
    return " ".join(f"{v.name}={report.counts.get(v, 0)}" for v in Verdict if report.counts.get(v, 0))


def codes_hash(report) -> str:
    """Eight hex digits of the verdict codes, entry for entry."""
    codes = np.asarray(report.codes if hasattr(report, "codes") else report.verdicts).astype(np.int64)
    return hashlib.sha1(codes.tobytes()).hexdigest()[:8]


def zoo_lines() -> list[str]:
    """One line per zoo case, claim and mode."""
    lines = []
    for case in CASES:
        for claim, grad, planted in (("correct", case.grad, set()), ("buggy", case.buggy, case.bug_entries)):
            for mode, options in (("referee", {}), ("fd-only", {"adjudicate": False})):
                r = check(case.f, case.x, grad, config=case.config, **options)
                exact = set(r.entries(Verdict.MISMATCH)) == planted
                lines.append(f"{case.name:28s} {claim:7s} {mode:7s} passed={r.passed!s:5s} "
                             f"mismatch_exact={exact!s:5s} codes={codes_hash(r)}  {counts(r)}")
    return lines


def control_lines() -> list[str]:
    """The negative controls, numpy backend (and the dual backend for gradients)."""
    lines = []
    for backend, kind in [("numpy", k) for k in KINDS] + [("dual", "grad")]:
        try:
            gradcheck.assert_detects_wrong_gradient(backend, kind=kind)
            outcome = "ok"
        except Exception as exc:  # a failed control is the finding; print it, keep going
            outcome = f"FAILED {type(exc).__name__}: {str(exc).splitlines()[0][:80]}"
        lines.append(f"control {backend:5s} {kind:8s} {outcome}")
    return lines


def negative_zero_line() -> str:
    """An ``f`` that writes ``-0.0`` over the ``0.0`` of its input: is it caught?"""
    def f(x):
        x[x == 0] = -0.0
        return (x ** 2).sum()
    x = np.array([0.0, 1.0, 2.0])
    try:
        check(f, x, lambda x: 2 * x)
        outcome = "not caught"
    except gradcheck.InputMutationError:
        outcome = "caught (InputMutationError)"
    return f"mutation -0.0 over 0.0: {outcome}"


def doctest_lines() -> list[str]:
    """Every module's docstring examples: ``module tried failed``, then the totals."""
    lines, tried, failed = [], 0, 0
    names = ["gradcheck"] + [m.name for m in pkgutil.walk_packages(gradcheck.__path__, "gradcheck.")]
    for name in sorted(names):
        try:
            module = importlib.import_module(name)
        except Exception as exc:  # an optional dependency missing: say so, keep going
            lines.append(f"doctest {name:45s} not imported ({type(exc).__name__})")
            continue
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                                 report=False)
        tried, failed = tried + result.attempted, failed + result.failed
        if result.attempted:
            lines.append(f"doctest {name:45s} tried={result.attempted:3d} failed={result.failed}")
    lines.append(f"doctests total: tried={tried} failed={failed}")
    return lines


def main() -> None:
    warnings.simplefilter("ignore")
    print(f"gradcheck from {Path(gradcheck.__file__).parent}")
    lines = doctest_lines() if "--doctests" in sys.argv else zoo_lines() + control_lines() + [negative_zero_line()]
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
