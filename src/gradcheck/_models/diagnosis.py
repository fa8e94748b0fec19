"""Reading the failing names of a model in backward order.

Backward runs from the loss to the inputs, so a wrong value that is *passed along*
corrupts everything computed after it, while a wrong line that only *fills* one tensor
corrupts that tensor alone:

* one name fails, its neighbours pass  -> look at the line that fills that name;
* a run of names fails                 -> the defect lies between the last name that
  passes and the first one that fails (e.g. the value a block's backward returns).

Names that have no entry above the noise (only UNCHECKED, like a key bias whose true
gradient is 0) say nothing either way and are skipped when runs are formed.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Diagnosis:
    """Where a model's gradient defect sits, read in backward order.

    ``kind`` is ``"none"``, ``"isolated"`` (names failing alone: look at the line that fills
    each one's gradient) or ``"run"`` (names failing together from some point on: a wrong
    value passed along); ``text`` says it in words, ``failing`` lists the failing names,
    ``runs`` the runs of consecutive failing names, ``suspects`` where to look.

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> p = {"w": np.array([1.0, 2.0]), "b": np.array([0.5])}
    >>> loss = lambda p: float((p["w"] ** 2).sum() + 3 * p["b"][0])
    >>> d = gradcheck.check_params(loss, p, {"w": 2 * p["w"], "b": np.array([2.0])}).diagnosis
    >>> d.kind, d.text
    ('isolated', 'b fails alone: look at the line that fills the gradient of b')
    """

    kind: str                   # "pass", "isolated", "run", "mixed"
    text: str
    failing: tuple[str, ...] = ()
    runs: tuple[tuple[str, ...], ...] = ()
    suspects: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "text": self.text, "failing": list(self.failing),
                "runs": [list(r) for r in self.runs], "suspects": list(self.suspects)}


def diagnose(order: Sequence[str], passed: Mapping[str, bool], informative: Mapping[str, bool],
             unverified: Sequence[str] = ()) -> Diagnosis:
    """Diagnose from per-name pass/fail, in backward ``order``.

    ``passed[name]`` is False for a name that fails (a MISMATCH or NONFINITE entry).
    ``informative[name]`` is False for names with no entry above the noise; such a name is
    transparent (it neither breaks a run nor starts one) unless it fails. ``unverified``
    names verified nothing (INCONCLUSIVE): they locate no defect, and a diagnosis without
    failing names says they exist rather than "every name passes".
    """
    failing = tuple(n for n in order if not passed[n])
    if not failing:
        if unverified:
            return Diagnosis("pass", f"no name fails, but {len(unverified)} verified nothing: "
                                     + ", ".join(unverified))
        return Diagnosis("pass", "every name passes")
    # Runs over the informative-or-failing names only.
    seq = [n for n in order if informative[n] or not passed[n]]
    runs: list[list[str]] = []
    prev_fail = False
    for n in seq:
        fail = not passed[n]
        if fail and prev_fail:
            runs[-1].append(n)
        elif fail:
            runs.append([n])
        prev_fail = fail
    sentences: list[str] = []
    suspects: list[str] = []
    for run in runs:
        start = seq.index(run[0])
        before = seq[start - 1] if start > 0 else None
        if len(run) == 1:
            sentences.append(f"{run[0]} fails alone: look at the line that fills the gradient of {run[0]}")
            suspects.append(run[0])
        else:
            reaches_end = seq.index(run[-1]) == len(seq) - 1
            span = f"{len(run)} names from {run[0]} to {run[-1]} fail together"
            if before is None:
                where = f"the defect lies at or before the first name in backward order ({run[0]})"
            else:
                where = (f"the defect lies between {before} (last to pass) and {run[0]} (first to fail) "
                         "in backward order: a wrong value passed along, e.g. what a block's backward returns")
            tail = " and everything after it in backward order fails" if reaches_end else ""
            sentences.append(f"{span}{tail}; {where}")
            suspects.append(f"{before} -> {run[0]}" if before else run[0])
    kind = "isolated" if all(len(r) == 1 for r in runs) else ("run" if len(runs) == 1 else "mixed")
    return Diagnosis(kind, "; ".join(sentences), failing, tuple(tuple(r) for r in runs), tuple(suspects))
