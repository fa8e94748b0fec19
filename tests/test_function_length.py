"""Every function in src/gradcheck is short enough to read (issue 13): at most
``MAX_LINES`` lines without its docstring, and ``check`` itself, the path a check takes, at
most ``MAX_CHECK_LINES``.

A function's length is counted by an ``ast`` walk, from its ``def`` line to its last line
(signature and nested functions included, decorators not), minus the lines of its docstring.
The walk is also run on small planted files, so that it is seen to fail.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "gradcheck"
MAX_LINES = 80
MAX_CHECK_LINES = 40


def function_lengths(root: Path) -> dict[str, int]:
    """``"path:line name" -> length`` for every function and method under ``root``."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out[f"{path.relative_to(root)}:{node.lineno} {node.name}"] = length(node)
    return out


def length(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    lines = node.end_lineno - node.lineno + 1
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        lines -= first.end_lineno - first.lineno + 1
    return lines


def test_no_function_is_longer_than_80_lines_without_its_docstring():
    lengths = function_lengths(PACKAGE)
    assert len(lengths) > 500  # the walk sees the package
    too_long = {k: n for k, n in lengths.items() if n > MAX_LINES}
    assert not too_long, f"functions over {MAX_LINES} lines (without docstring): {too_long}"


def test_check_itself_is_a_short_sequence_of_stages():
    lengths = function_lengths(PACKAGE / "_pipeline")
    (check_length,) = [n for k, n in lengths.items() if k.startswith("check.py:") and k.endswith(" check")]
    assert check_length <= MAX_CHECK_LINES, f"check() is {check_length} lines"


def test_the_walk_counts_long_bodies_and_not_docstrings(tmp_path):
    """Negative controls: an 81-line body is flagged, a long docstring over a short body is
    not, and nested and async functions are counted too."""
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_LINES))
    doc = '    """' + "words\n" * 200 + '    """\n'
    (tmp_path / "planted.py").write_text(
        f"def long():\n{body}\n\ndef documented():\n{doc}    return 1\n\n"
        f"def outer():\n    async def inner():\n{body.replace('    ', '        ')}    return inner\n")
    lengths = {k.split()[-1]: n for k, n in function_lengths(tmp_path).items()}
    assert lengths == {"long": MAX_LINES + 1, "documented": 2, "outer": MAX_LINES + 3, "inner": MAX_LINES + 1}
