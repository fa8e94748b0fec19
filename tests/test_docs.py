"""The documentation covers the public surface: the API reference lists exactly ``gradcheck.__all__``,
the public docstrings have the sections the reference is generated from, their examples run, and
the pages that restate facts of the code (exit codes) agree with it.

The Sphinx build itself (``sphinx-build -W``, which executes the tutorial pages) is a CI phase, not
a test: it needs the ``docs`` extra and takes minutes.
"""
from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest
import test_doctests
from optional_deps import needs

import gradcheck
import gradcheck.cli

DOCS = Path(__file__).resolve().parents[1] / "docs"
API_INDEX = DOCS / "api" / "index.rst"

FUNCTIONS = [n for n in gradcheck.__all__ if inspect.isfunction(getattr(gradcheck, n))]
CLASSES = [n for n in gradcheck.__all__ if inspect.isclass(getattr(gradcheck, n))]
#: Classes a user builds (the others are results or errors gradcheck builds): their docstrings
#: document the constructor's parameters.
USER_BUILT = ["Config", "ExecutorOptions", "Checkpoint"]


def reference_entries(text: str) -> list[str]:
    """The names an API page documents: autosummary entries and ``.. data::`` directives."""
    names: list[str] = []
    in_summary = False
    for line in text.splitlines():
        if line.startswith(".. autosummary::"):
            in_summary = True
        elif line.startswith(".. data::"):
            names.append(line.split("::", 1)[1].strip())
            in_summary = False
        elif in_summary and line.startswith("   ") and not line.strip().startswith(":"):
            names.append(line.strip())
        elif in_summary and line.strip() and not line.startswith(" "):
            in_summary = False
    return names


def sections(doc: str) -> dict[str, list[str]]:
    """A numpydoc docstring's sections: title -> the lines under it."""
    lines = inspect.cleandoc(doc).splitlines()
    found: dict[str, list[str]] = {}
    current = None
    for k, line in enumerate(lines):
        if k + 1 < len(lines) and line.strip() and set(lines[k + 1].strip()) == {"-"} \
                and len(lines[k + 1].strip()) == len(line.strip()):
            current = line.strip()
            found[current] = []
        elif current is not None and not set(line.strip()) <= {"-"} or (current and not line.strip()):
            found[current].append(line)
    return found


def documented_parameters(lines: list[str]) -> set[str]:
    """Names of a Parameters section (``a, b : type`` lists several; ``**options`` keeps its stars)."""
    names: set[str] = set()
    for line in lines:
        if line and not line[0].isspace():
            head = line.split(" : ")[0]
            names |= {n.strip() for n in head.split(",")}
    return names


def signature_parameters(obj) -> set[str]:
    params = inspect.signature(obj).parameters.values()
    return {("**" if p.kind is p.VAR_KEYWORD else "*" if p.kind is p.VAR_POSITIONAL else "") + p.name
            for p in params if p.name != "self"}


def test_the_section_parser_reads_numpydoc():
    """The parser the checks below rely on finds sections and parameter names (a parser that
    found nothing would let every docstring through)."""
    doc = """Summary.

    Parameters
    ----------
    a, b : int
        Two.
    **options
        More.

    Returns
    -------
    int
    """
    found = sections(doc)
    assert list(found) == ["Parameters", "Returns"]
    assert documented_parameters(found["Parameters"]) == {"a", "b", "**options"}
    assert reference_entries(".. autosummary::\n   :toctree: g\n\n   check\n   Report\n\nText\n\n.. data:: __version__\n") \
        == ["check", "Report", "__version__"]


def test_the_api_reference_lists_exactly_the_public_names():
    """Every name of ``gradcheck.__all__`` appears once in docs/api/index.rst, and nothing else."""
    entries = reference_entries(API_INDEX.read_text(encoding="utf-8"))
    assert len(entries) == len(set(entries)), sorted(n for n in entries if entries.count(n) > 1)
    assert set(entries) == set(gradcheck.__all__), (
        f"missing from the reference: {sorted(set(gradcheck.__all__) - set(entries))}; "
        f"not public: {sorted(set(entries) - set(gradcheck.__all__))}")


@pytest.mark.parametrize("name", FUNCTIONS)
def test_public_function_docstring_is_complete(name):
    """Parameters (every parameter of the signature, nothing else), Returns, Raises, Examples."""
    obj = getattr(gradcheck, name)
    found = sections(obj.__doc__ or "")
    missing = [s for s in ("Parameters", "Returns", "Raises", "Examples") if s not in found]
    assert not missing, f"gradcheck.{name}: no {', '.join(missing)} section"
    assert documented_parameters(found["Parameters"]) == signature_parameters(obj), name
    assert any(">>>" in line for line in found["Examples"]), name


@pytest.mark.parametrize("name", CLASSES)
def test_public_class_docstring_has_an_example(name):
    """Every public class (results, settings, errors) shows a short example; a class a user
    builds documents its constructor's parameters."""
    obj = getattr(gradcheck, name)
    found = sections(obj.__dict__.get("__doc__") or "")
    assert any(">>>" in line for line in found.get("Examples", [])), f"gradcheck.{name}: no Examples section"
    if name in USER_BUILT:
        assert "Parameters" in found, name
        assert documented_parameters(found["Parameters"]) == signature_parameters(obj), name


@pytest.mark.parametrize("name", FUNCTIONS + CLASSES)
def test_public_examples_are_run_by_the_doctests(name):
    """The module defining each public name is among those tests/test_doctests.py runs, so an
    example in the reference cannot rot."""
    module = inspect.getmodule(getattr(gradcheck, name))
    assert module is not None and module.__name__ in test_doctests.MODULES, (name, module)
    importlib.import_module(module.__name__)


def test_the_exit_codes_page_lists_the_cli_codes():
    """docs/cli.md's table has one row per exit code of gradcheck.cli, and no other."""
    table = re.findall(r"^\| (\d+) \|", (DOCS / "cli.md").read_text(encoding="utf-8"), re.M)
    codes = {v for k, v in vars(gradcheck.cli).items() if re.fullmatch(r"EXIT_[A-Z]+", k) and isinstance(v, int)}
    assert sorted(map(int, table)) == sorted(codes)


def test_the_guide_has_the_pages_other_issues_write():
    """The model and low-precision pages (issues 28 and 29) are in the user guide's tables of contents."""
    assert "whole-model" in (DOCS / "guide" / "index.md").read_text(encoding="utf-8")
    assert "lowp-allowance" in (DOCS / "guide" / "low-precision.md").read_text(encoding="utf-8")
    assert (DOCS / "guide" / "whole-model.md").exists() and (DOCS / "guide" / "lowp-allowance.md").exists()


# -- issue 27, friction 8: figures the guide quotes are the code's ------------------------------
ALLOWANCE = DOCS / "guide" / "lowp-allowance.md"


def test_the_allowance_page_quotes_what_dispute_says_at_position_3998():
    """A figure typed in the docs drifts from what the code prints (the README's "5511 (67.3%)"
    against the demo's "5598 (68.3%)"). The rotary example of docs/guide/lowp-allowance.md is
    run on the page's inputs: the words it quotes are dispute's own (``why`` at (0, 0)), and the
    prose's figures are dispute's, rounded as written."""
    import ml_dtypes
    import numpy as np

    from gradcheck import dispute
    from gradcheck.subjects import rope_fast, rope_math, rope_reference

    text = ALLOWANCE.read_text(encoding="utf-8")
    assert "`p = 3998`, `x1 = 1` and `x2 = -0.3359375`" in text  # the page's inputs (theta = 1: d = 2)
    x, pos = np.array([[1.0, -0.3359375]]).astype(ml_dtypes.bfloat16), np.array([3998])
    r = dispute(rope_math, (x, pos), {"fast": rope_fast(x, pos), "reference": rope_reference(x, pos)}, "bfloat16")
    quoted = text.split("`dispute` says it in these words:")[1].split("```text")[1].split("```")[0]
    assert " ".join(quoted.split()) == r.why((0, 0))
    assert f"is {r.errors['fast'].max():.2f} ulp off: accurate" in text
    assert f"is {round(float(r.errors['reference'][0, 0]), -3):,.0f} ulp off: broken" in text
    assert f"= {r.bounds[0, 0]:.0f}` ulp" in text


@needs("torch")
def test_the_allowance_page_gelu_block_prints_the_figures_in_its_comment(capsys):
    """The page's gelu block (torch's bfloat16 gelu at -8.625) runs as written; what it prints
    is the comment beside its print, to the digits the comment gives."""
    text = ALLOWANCE.read_text(encoding="utf-8")
    block = text.split("Reproduce it:")[1].split("```python")[1].split("```")[0]
    shown = block.strip().splitlines()[-1].split("#")[1].split()
    exec(compile(block, str(ALLOWANCE), "exec"), {})
    printed = [float(v) for v in capsys.readouterr().out.split()]
    digits = [len(s.split("e")[0].replace(".", "").lstrip("0")) for s in shown]
    assert [f"{v:.{d}g}" for v, d in zip(printed, digits)] == shown
