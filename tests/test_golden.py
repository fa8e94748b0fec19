"""Reports do not change when code moves (issue 26): the golden corpus, recomputed.

``tests/golden/cases.py`` names the cases and what is left out of the comparison (timing
only); ``tests/golden/*.json`` hold the reports recorded before the evaluation layer moved
anything. This test recomputes the fast cases (``FAST``) and compares them with the recording,
field by field; ``python tests/golden/record.py --check`` recomputes every case.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "golden"))

from cases import FAST, cases  # noqa: E402
from record import differences, load  # noqa: E402

RECORDED = load()
CASES = cases()


def test_the_fast_cases_are_recorded_cases():
    """Every fast case is a case of the corpus and has a recording (a typo cannot skip one)."""
    assert [n for n in FAST if n not in CASES or n not in RECORDED] == []


@pytest.mark.parametrize("name", FAST)
def test_report_is_as_recorded(name):
    """The case's report (or error) now is the recorded one, timing aside."""
    assert differences(RECORDED[name], CASES[name]()) == []


def test_the_comparison_sees_a_change():
    """Not vacuous: one changed bit of one value, or one changed word, is a difference."""
    want = {"numeric": [1.0, 2.0], "notes": ["engine serial"]}
    assert differences(want, {"numeric": [1.0, 2.0000000000000004], "notes": ["engine serial"]})
    assert differences(want, {"numeric": [1.0, 2.0], "notes": ["engine batched"]})
    assert differences(want, {"numeric": [1.0, 2.0], "notes": ["engine serial"]}) == []
