"""The example notebook (docs/report_in_a_notebook.ipynb), executed headless by nbclient on an
ipykernel: a failing check displays as the HTML report, naming the planted entry.

Skipped when nbclient or ipykernel is absent outside CI; CI installs them (.ci/run), so there
they must be present.
"""
from __future__ import annotations

import os
from pathlib import Path

import html5lib  # the test extra
import pytest
from optional_deps import need

import gradcheck

nbformat = need("nbformat")  # nbclient and ipykernel: CI's full run installs them
NotebookClient = need("nbclient").NotebookClient
need("ipykernel")

NOTEBOOK = Path(__file__).resolve().parents[1] / "docs" / "report_in_a_notebook.ipynb"


def rows_of(html: str) -> list[list[str]]:
    tree = html5lib.parseFragment(html, namespaceHTMLElements=False)
    return [["".join(c.itertext()).strip() for c in tr] for tr in tree.iter("tr")]


@pytest.fixture(scope="module")
def executed():
    """The notebook run top to bottom in a fresh kernel (the gradcheck under test on its path)."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    here = str(Path(gradcheck.__file__).resolve().parents[1])
    with pytest.MonkeyPatch.context() as mp:  # the kernel inherits the environment
        mp.setenv("PYTHONPATH", os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])))
        NotebookClient(nb, timeout=300, kernel_name="python3",
                       resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    return [c for c in nb.cells if c.cell_type == "code"]


def html_output(cell) -> str:
    found = [o["data"]["text/html"] for o in cell.outputs if "text/html" in o.get("data", {})]
    assert found, [o.get("output_type") for o in cell.outputs]
    return found[0]


def test_failing_check_displays_as_the_html_report(executed):
    """The check cell's output is the HTML report: FAIL, the planted entry (4, 1) first among
    the worst entries, and an inline picture; its plain-text fallback is the short repr."""
    html = html_output(executed[0])
    rows = [r for r in rows_of(html) if r and r[0].startswith("(")]
    assert rows[0][:2] == ["(4, 1)", "MISMATCH"]
    assert "gc-badge gc-fail" in html and "data:image/png;base64," in html
    plain = executed[0].outputs[0]["data"]["text/plain"]
    assert plain.startswith("<Report tanh_layer: FAIL") and "\n" not in plain


def test_model_check_displays_the_names_and_the_diagnosis(executed):
    """check_params in a notebook: the names table with b failing and W passing, and the diagnosis."""
    html = html_output(executed[1])
    rows = rows_of(html)
    assert next(r[:2] for r in rows if r and r[0] == "b") == ["b", "FAIL"]
    assert next(r[:2] for r in rows if r and r[0] == "W") == ["W", "PASS"]
    assert "Diagnosis:" in html and "b fails alone" in html
