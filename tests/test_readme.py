"""Every ```python block of README.md runs as written: each in a fresh interpreter, in an
empty folder, against the gradcheck under test.

A block may be preceded by HTML comments that say how to run it:

* ``<!-- raises: NAME -->``: the block is meant to end with exception ``NAME`` (the tour's
  ``report.assert_pass()`` on a planted bug);
* ``<!-- run-with: pytest -->``: the block is a test module, run by pytest;
* ``<!-- needs: MODULE ... -->``: optional modules it needs beyond those it imports;
* ``<!-- not-run: REASON -->``: a fragment, not run (counted: there must stay few).

A ```` ```text ```` block right after a ```python block, under ``<!-- output: checked -->``, is
what that block prints: its lines must match the block's output as a doctest's expected output
does (``...`` stands for any text, whitespace runs are one space), so the README's example output
cannot drift from what gradcheck prints. The marker is refused anywhere else: a command's output
(a figure of ``gradcheck demo``, issue 27) is quoted checked from a python block that runs the
command (no block does now; the CLI's own output is tested in test_cli.py). Other ``text``
blocks are not run.

The README's table against the peers is checked too: it must be what
``benchmarks/peers_table.py`` renders from the recorded benchmark results.

Blocks that need torch, jax, dask or matplotlib skip when it is missing, outside CI only
(CI installs them: missing there, the test fails).
"""
from __future__ import annotations

import doctest
import importlib.util
import os
import pathlib
import re
import subprocess
import sys
from dataclasses import dataclass

import optional_deps
import pytest

import gradcheck

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: The folder holding the gradcheck under test: the subprocess imports the same one.
SOURCE = str(pathlib.Path(gradcheck.__file__).resolve().parents[1])
OPTIONAL = {"torch", "jax", "dask", "matplotlib"}
#: Fragments allowed to stay unrun (a README whose examples do not run is a defect).
MAX_NOT_RUN = 2
TIMEOUT = 600


OUTPUT_MARKER = "<!-- output: checked -->"


@dataclass(frozen=True)
class Block:
    line: int                 # line of the opening fence, 1-based
    code: str
    markers: dict[str, str]   # from the HTML comments just above the fence
    output: str | None = None  # the checked ```text block that follows, if any

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
        output, after = None, end + 1
        while after < len(lines) and not lines[after].strip():
            after += 1
        if lines[after:after + 2] == [OUTPUT_MARKER, "```text"]:
            close = next(e for e in range(after + 2, len(lines)) if lines[e].strip() == "```")
            output = "\n".join(lines[after + 2:close]) + "\n"
        blocks.append(Block(k + 1, "\n".join(lines[k + 1:end]) + "\n", markers, output))
        k = end + 1
    return blocks


def output_matches(expected: str, printed: str) -> bool:
    """doctest's rule for expected output: ``...`` matches any text, whitespace runs are one space."""
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    return doctest.OutputChecker().check_output(expected, printed, flags)


BLOCKS = python_blocks(README.read_text(encoding="utf-8"))


def test_the_readme_blocks_are_found_and_few_are_left_unrun():
    """The extraction sees the README's examples (so the test below cannot pass on none),
    every marker is one this test knows, and at most MAX_NOT_RUN fragments are skipped."""
    assert len(BLOCKS) >= 3
    known = {"raises", "run-with", "needs", "not-run"}
    assert all(set(b.markers) <= known for b in BLOCKS), [b.markers for b in BLOCKS]
    assert all(b.markers.get("run-with", "pytest") == "pytest" for b in BLOCKS)
    assert sum("not-run" in b.markers for b in BLOCKS) <= MAX_NOT_RUN
    # every checked output block belongs to a python block (none is silently left unchecked)
    checked = sum(b.output is not None for b in BLOCKS)
    assert checked == README.read_text(encoding="utf-8").count(OUTPUT_MARKER) >= 1, (
        f"{OUTPUT_MARKER} must sit right after a ```python block, before the ```text block of what it "
        "prints: a command's output is quoted from a python block that runs it (subprocess)")


def test_the_readme_fits_one_screen_and_starts_with_the_two_commands():
    """At most 200 lines; the install-and-demo and install-and-test commands within the first 40,
    verbatim (.ci/run runs exactly these in fresh virtual environments)."""
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200
    head = lines[:40]
    assert "pip install . && gradcheck demo" in head
    assert 'pip install ".[test]" && pytest' in head


def test_the_block_parser_reads_markers_and_code():
    """Markers are the comments directly above the fence; the code is the fenced text."""
    text = "x\n<!-- needs: matplotlib -->\n<!-- raises: ValueError -->\n```python\nimport jax\n```\n```text\nno\n```\n"
    (block,) = python_blocks(text)
    assert block.line == 4 and block.code == "import jax\n"
    assert block.markers == {"needs": "matplotlib", "raises": "ValueError"}
    assert block.needs == {"jax", "matplotlib"} and block.output is None
    checked = f"```python\nprint(1)\n```\n\n{OUTPUT_MARKER}\n```text\nf: FAIL -- 3\n...\n```\n"
    (block,) = python_blocks(checked)
    assert block.output == "f: FAIL -- 3\n...\n"


def test_the_output_rule_accepts_elisions_and_refuses_other_figures():
    """The rule the checked output blocks are held to: an elided timing matches, a changed count
    or a missing line does not (so a README that quotes a figure gradcheck no longer prints fails)."""
    expected = "f: FAIL -- 30 entries: 29 PASS, 1 MISMATCH\n  dtype float64, ... in ... s\n...\n"
    printed = "f: FAIL -- 30 entries: 29 PASS, 1 MISMATCH\n  dtype float64, 86 evaluations in 0.149 s\n  note: x\n"
    assert output_matches(expected, printed)
    assert not output_matches(expected, printed.replace("29 PASS, 1", "28 PASS, 2"))
    assert not output_matches(expected, printed.splitlines()[0] + "\n")


def test_every_relative_link_of_the_readme_resolves():
    """The README points into docs/ and benchmarks/: each relative link names a file that exists
    (a page renamed or moved would otherwise leave the first screen pointing nowhere)."""
    text = README.read_text(encoding="utf-8")
    targets = [t for t in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text) if "://" not in t]
    assert len(targets) >= 10
    assert [t for t in targets if not (ROOT / t).exists()] == []


def _peers_table_module():
    spec = importlib.util.spec_from_file_location("peers_table", ROOT / "benchmarks" / "peers_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_peers_table_is_read_from_the_recorded_benchmarks():
    """README.md's table against torch and jax is exactly what benchmarks/peers_table.py renders
    from the recorded runs: a figure typed by hand, or a record replaced without re-rendering,
    fails here (``python benchmarks/peers_table.py --write`` updates it)."""
    peers = _peers_table_module()
    assert all(path.exists() for path in peers.SOURCES.values())
    assert peers.readme_table(README.read_text(encoding="utf-8")) == peers.render()


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


@pytest.mark.parametrize("block", [
    pytest.param(b, id=b.id, marks=[optional_deps.needs(*sorted(b.needs))] if b.needs else []) for b in BLOCKS
])
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
        assert output_matches(block.output, out.stdout), (
            f"README line {block.line}: the output shown below the block is not what it prints:\n"
            f"shown:\n{block.output}\nprinted:\n{out.stdout[-3000:]}")


def _sizes_table_module():
    spec = importlib.util.spec_from_file_location("sizes_table", ROOT / "benchmarks" / "sizes_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_large_tensor_table_is_read_from_the_recorded_sizes():
    """README.md's "which call for a large tensor" table is exactly what
    benchmarks/sizes_table.py renders from benchmarks/results/sizes.json (issue 27): a figure
    typed by hand, or a stale one after a new run, fails here (``--write`` updates it)."""
    sizes = _sizes_table_module()
    assert sizes.RESULTS.exists()
    text = README.read_text(encoding="utf-8")
    assert sizes.readme_table(text) == sizes.render()
    assert text.index(sizes.START) < text.index("## Next to torch")  # near the top, with its call names
