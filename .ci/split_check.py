"""No test runs in neither CI configuration (.ci/run's split_check phase).

    python3 .ci/split_check.py BARE_OUTCOMES FULL_COLLECTED

BARE_OUTCOMES: what the bare run did with each test (``GRADCHECK_OUTCOMES``: node id, then
passed / failed / xfailed / skipped and the reason). FULL_COLLECTED: every test the full
venv collects, with the marks that make the full run select it (``GRADCHECK_COLLECTED``:
node id, then ``optional,property,scale`` or nothing). A test is covered when the bare run
ran it or the full run selects it. Not covered and skipped in bare for a missing optional
dependency or for being a scale test -- or never collected in bare (its module skipped at
import) -- it runs nowhere: that fails. Any other skip in both (a README fragment marked
not-run, a platform condition) is listed, not failed: it is the test's own decision.
"""
from __future__ import annotations

import collections
import sys

RAN = {"passed", "failed", "xfailed"}
MISROUTED = ("needs ", "scale test")  # skip reasons of tests/optional_deps.py, tests/conftest.py


def read(path: str) -> dict[str, list[str]]:
    with open(path, encoding="utf-8") as fh:
        return {cols[0]: cols[1:] for cols in (line.rstrip("\n").split("\t") for line in fh) if cols[0]}


def main(bare_path: str, full_path: str) -> int:
    bare, full = read(bare_path), read(full_path)
    ran_bare = {n for n, o in bare.items() if o and o[0] in RAN}
    selected = {n: (marks[0].split(",") if marks and marks[0] else []) for n, marks in full.items()}
    in_full = {n for n, m in selected.items() if m}
    marks = collections.Counter(m for ms in selected.values() for m in ms)
    neither = sorted(set(selected) - ran_bare - in_full)
    def runs_nowhere(outcome: list[str]) -> bool:  # not collected in bare, or skipped there as misrouted
        return not outcome or outcome[0] != "skipped" or (len(outcome) > 1 and outcome[1].startswith(MISROUTED))

    lost = [n for n in neither if runs_nowhere(bare.get(n, []))]
    print(f"split: {len(selected)} tests collected in the full venv; bare ran {len(ran_bare)}, "
          f"full selects {len(in_full)} ({', '.join(f'{k} {v}' for k, v in sorted(marks.items()))}; "
          f"{len(in_full & ran_bare)} of them ran in bare too: the property tests, and optional tests "
          f"whose dependency this machine happened to have)")
    for n in neither:
        if n not in lost:
            print(f"   skipped in both by the test's own choice: {n}: {' '.join(bare[n][1:])}")
    if lost:
        print(f"split FAILED: {len(lost)} tests run in neither configuration:", file=sys.stderr)
        for n in lost:
            print(f"   {n}: {' '.join(bare.get(n, ['not collected in bare']))}", file=sys.stderr)
        return 1
    print("split: every test runs in one configuration")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
