"""Every ```python block of README.md runs as written: each in a fresh interpreter, in an
empty folder, against the gradcheck under test.

A block may be preceded by HTML comments that say how to run it:

* ``<!-- raises: NAME -->``: the block is meant to end with exception ``NAME`` (the tour's
  ``report.assert_pass()`` on a planted bug);
* ``<!-- run-with: pytest -->``: the block is a test module, run by pytest;
* ``<!-- needs: MODULE ... -->``: optional modules it needs beyond those it imports;
* ``<!-- not-run: REASON -->``: a fragment, not run (counted: there must stay few).

A fence with no language (or ``text``) right after a block is what the block prints (after a
```bash block ending in a ``gradcheck ...`` command: what that command prints): every figure
it quotes must be printed (``doc_outputs``: durations and ``...`` excepted), so a figure the
docs quote cannot drift from the code (issue 27).

Blocks that need torch, jax, dask or matplotlib skip when it is missing, outside CI only
(CI installs them: missing there, the test fails). ``text`` output blocks are not run.
"""
from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import subprocess
import sys
from dataclasses import dataclass

import optional_deps
import pytest
from doc_outputs import command_outputs, output_after, unmatched

import gradcheck

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: The folder holding the gradcheck under test: the subprocess imports the same one.
SOURCE = str(pathlib.Path(gradcheck.__file__).resolve().parents[1])
OPTIONAL = {"torch", "jax", "dask", "matplotlib"}
#: Fragments allowed to stay unrun (a README whose examples do not run is a defect).
MAX_NOT_RUN = 2
TIMEOUT = 600


@dataclass(frozen=True)
class Block:
    line: int                 # line of the opening fence, 1-based
    code: str
    markers: dict[str, str]   # from the HTML comments just above the fence
    output: str | None = None  # the output block quoted right after it, if any

    @property
    def needs(self) -> set[str]:
        imported = set(re.findall(r"^\s*(?:import|from)\s+([A-Za-z_]\w*)", self.code, re.M))
        return (imported & OPTIONAL) | set(self.markers.get("needs", "").split())

    @property
    def id(self) -> str:
        first = next(ln for ln in self.code.splitlines() if ln.strip() and not ln.startswith("#"))
        return f"line{self.line}:{first.strip()[:30]}"


def python_blocks(text: str) -> list[Block]:
    """The ```python blocks of a Markdown text, with their marker comments."""
    lines = text.splitlines()
    blocks, k = [], 0
    while k < len(lines):
        if lines[k].strip() != "```python":
            k += 1
            continue
        markers, j = {}, k - 1
        while j >= 0 and (m := re.fullmatch(r"\s*<!--\s*([\w-]+):\s*(.*?)\s*-->\s*", lines[j])):
            markers[m.group(1)] = m.group(2)
            j -= 1
        end = next(e for e in range(k + 1, len(lines)) if lines[e].strip() == "```")
        quoted = output_after(lines, end)
        blocks.append(Block(k + 1, "\n".join(lines[k + 1:end]) + "\n", markers,
                            None if quoted is None else quoted[0]))
        k = end + 1
    return blocks


BLOCKS = python_blocks(README.read_text(encoding="utf-8"))


def test_the_readme_blocks_are_found_and_few_are_left_unrun():
    """The extraction sees the README's examples (so the test below cannot pass on none),
    every marker is one this test knows, and at most MAX_NOT_RUN fragments are skipped."""
    assert len(BLOCKS) >= 8
    known = {"raises", "run-with", "needs", "not-run"}
    assert all(set(b.markers) <= known for b in BLOCKS), [b.markers for b in BLOCKS]
    assert all(b.markers.get("run-with", "pytest") == "pytest" for b in BLOCKS)
    assert sum("not-run" in b.markers for b in BLOCKS) <= MAX_NOT_RUN


def test_the_block_parser_reads_markers_and_code():
    """Markers are the comments directly above the fence; the code is the fenced text."""
    text = "x\n<!-- needs: matplotlib -->\n<!-- raises: ValueError -->\n```python\nimport jax\n```\n```text\nno\n```\n"
    (block,) = python_blocks(text)
    assert block.line == 4 and block.code == "import jax\n"
    assert block.markers == {"needs": "matplotlib", "raises": "ValueError"}
    assert block.needs == {"jax", "matplotlib"}


def _run(block: Block, folder: pathlib.Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=SOURCE, MPLBACKEND="Agg")
    if block.markers.get("run-with") == "pytest":
        path = folder / "test_readme_block.py"
        path.write_text(block.code)
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)]
    else:
        path = folder / "readme_block.py"  # a file, not -c: dask's workers import __main__
        path.write_text(block.code)
        cmd = [sys.executable, str(path)]
    return subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=TIMEOUT)


COMMANDS = command_outputs(README.read_text(encoding="utf-8"))


@pytest.mark.parametrize("line, args, quoted", COMMANDS, ids=[f"line{c[0]}:gradcheck {' '.join(c[1])}" for c in COMMANDS])
def test_readme_command_output_is_what_the_command_prints(line, args, quoted, tmp_path):
    """A ``gradcheck ...`` command whose output the README quotes prints every quoted figure."""
    env = dict(os.environ, PYTHONPATH=SOURCE, MPLBACKEND="Agg")
    out = subprocess.run([sys.executable, "-m", "gradcheck", *args], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=TIMEOUT)
    missing = unmatched(quoted, out.stdout)
    assert not missing, (f"README line {line}: `gradcheck {' '.join(args)}` does not print:\n" + "\n".join(missing)
                         + f"\n--- printed:\n{out.stdout[-3000:]}")


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_readme_python_block_runs(block, tmp_path):
    """The block runs to its end (or to the exception its marker names) in an empty folder."""
    if "not-run" in block.markers:
        pytest.skip(f"not run: {block.markers['not-run']}")
    missing = sorted(m for m in block.needs if importlib.util.find_spec(m) is None)
    if missing and not optional_deps.required():  # CI's full run installs them: a missing one fails
        pytest.skip(f"needs {', '.join(missing)}")
    out = _run(block, tmp_path)
    expected = block.markers.get("raises")
    if expected is None:
        assert out.returncode == 0, f"README line {block.line}:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    else:
        raised = out.stderr.rpartition("Traceback (most recent call last):")[2]
        assert out.returncode != 0 and re.search(rf"^([\w.]+\.)?{expected}\b", raised, re.M), (
            f"README line {block.line}: expected {expected}, got:\n{out.stderr[-3000:]}")
    if block.output is not None:
        missing = unmatched(block.output, out.stdout)
        assert not missing, (f"README line {block.line}: the output quoted after the block is not what it "
                             f"prints; not printed:\n" + "\n".join(missing) + f"\n--- printed:\n{out.stdout[-3000:]}")


def test_quoted_output_is_found_with_its_figures_and_a_drifted_figure_is_not():
    """The output check: a quoted line matches what is printed, column spacing, durations and
    "..." aside; a figure that drifted (5598 printed, 5511 quoted) is reported."""
    printed = ("fast is 898x more accurate than reference (mean error 0.254 vs 228 ulp).\n"
               "  dtype float64, engine serial, 86 evaluations in 0.211 s\n"
               "numpy f32: 8x faster, 46x more accurate (median 133 us vs 1.07 ms per call)\n"
               "reference is broken: 5598 of 8192 entries (68.3%) exceed their bound, furthest at (115, 8)\n")
    quoted = ("fast is 898x more accurate than reference (mean error 0.254 vs 228 ulp).\n"
              "  dtype float64,   engine serial, 86 evaluations in 0.149 s\n"
              "numpy f32: 2.2x faster, 46x more accurate (median 381 us vs 830 us per call)\n"
              "...\n"
              "reference is broken: 5511 of 8192 entries (67.3%) exceed their bound, ...\n")
    assert unmatched(quoted, printed) == ["reference is broken: 5511 of 8192 entries (67.3%) exceed their bound, ..."]
    assert unmatched(quoted.replace("5511", "5598").replace("67.3", "68.3"), printed) == []
    assert unmatched("  dtype float64, engine serial, 87 evaluations in 0.149 s", printed)  # not a duration
    assert unmatched("fast is 899x more accurate than reference (mean error 0.254 vs 228 ulp).", printed)  # a figure


def test_command_output_blocks_are_found_after_a_gradcheck_command():
    """A bash block ending in a gradcheck command, then an output block: its arguments and output."""
    text = "```bash\npip install . && gradcheck demo\n```\n\n```\ndemo: 16/16 showcases\n```\n```bash\nls\n```\n```\nx\n```\n"
    assert command_outputs(text) == [(1, ["demo"], "demo: 16/16 showcases")]


def test_output_blocks_are_paired_with_the_block_they_follow():
    """Only a plain (or text) fence right after a python block, blank lines between, is its output."""
    text = "```python\nprint(1)\n```\n\n```\n1\n```\n```python\nprint(2)\n```\n<!-- output: illustrative -->\n```\n3\n```\n"
    first, second = python_blocks(text)
    assert first.output == "1" and second.output is None
