"""Pages generated at build time from the installed gradcheck, so they follow the code.

* ``_generated/cli-help.md``: ``gradcheck --help`` and the ``--help`` of every subcommand the
  parser has (found in ``gradcheck.cli.build_parser()``, so a new subcommand shows up by itself),
  printed by ``gradcheck.cli.main`` in this process;
* ``_generated/pytest-options.md``: the ``gradcheck`` group of ``pytest --help`` and the
  plugin's marker from ``pytest --markers``.

The pytest texts come from a subprocess of the Python that runs Sphinx. A command that fails, or a section that is missing, stops the build (an ExtensionError): the
documentation never shows options the code no longer has.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import subprocess
import sys
import tempfile
from importlib.metadata import entry_points
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

#: Columns argparse and pytest wrap their help to (the page's code blocks fit them).
COLUMNS = "96"


def _run(args: list[str], cwd: str | None = None) -> str:
    env = dict(os.environ, COLUMNS=COLUMNS, NO_COLOR="1")
    out = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd,
                         timeout=300)
    if out.returncode != 0:
        raise ExtensionError(f"`python {' '.join(args)}` exited {out.returncode}:\n{out.stderr[-2000:]}")
    return out.stdout.rstrip() + "\n"


def subcommands() -> list[str]:
    """The subcommands of ``gradcheck``, in the order the parser declares them."""
    from gradcheck.cli import build_parser

    actions = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    if not actions:
        raise ExtensionError("gradcheck.cli.build_parser() declares no subcommands")
    return list(actions[0].choices)


def _help(args: list[str]) -> str:
    """What ``gradcheck ARGS --help`` prints (run in this process: ``prog`` is ``gradcheck``)."""
    from gradcheck.cli import main

    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = COLUMNS  # argparse wraps to it
    try:
        with contextlib.redirect_stdout(io.StringIO()) as out:
            code = main([*args, "--help"])
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved
    if code != 0 or not out.getvalue().startswith("usage: gradcheck"):
        raise ExtensionError(f"`gradcheck {' '.join(args)} --help` exited {code}: {out.getvalue()[:500]}")
    return out.getvalue().rstrip()


def cli_help() -> str:
    """Markdown: the top-level help, then one section per subcommand."""
    parts = ["### `gradcheck --help`\n", "```text", _help([]), "```\n"]
    for name in subcommands():
        parts += [f"### `gradcheck {name}`\n", "```text", _help([name]), "```\n"]
    return "\n".join(parts)


def _section(text: str, title: str) -> str:
    """The block of ``pytest --help`` that starts at the line ``title`` and ends before the next
    unindented line."""
    lines = text.splitlines()
    try:
        start = lines.index(title)
    except ValueError:
        raise ExtensionError(f"`pytest --help` has no {title!r} section: is gradcheck's plugin loaded?") from None
    end = next((k for k in range(start + 1, len(lines)) if lines[k] and not lines[k][0].isspace()), len(lines))
    return "\n".join(lines[start:end]).rstrip()


def pytest_options() -> str:
    """Markdown: the plugin's options (``pytest --help``) and its marker (``pytest --markers``)."""
    registered = any(e.name == "gradcheck" for e in entry_points(group="pytest11"))
    load = [] if registered else ["-p", "gradcheck.pytest_plugin"]
    with tempfile.TemporaryDirectory() as empty:  # no project's configuration is read
        options = _section(_run(["-m", "pytest", *load, "--help"], cwd=empty), "gradcheck:")
        markers = [ln for ln in _run(["-m", "pytest", *load, "--markers"], cwd=empty).splitlines()
                   if ln.startswith("@pytest.mark.gradcheck")]
    if not markers:
        raise ExtensionError("`pytest --markers` lists no @pytest.mark.gradcheck marker")
    return "\n".join(["```text", options, "```\n", "```text", *markers, "```\n"])


def generate(app: Sphinx) -> None:
    folder = Path(app.srcdir) / "_generated"
    folder.mkdir(exist_ok=True)
    for name, make in (("cli-help.md", cli_help), ("pytest-options.md", pytest_options)):
        text = make()
        path = folder / name
        if not path.exists() or path.read_text() != text:  # unchanged files keep Sphinx's cache
            path.write_text(text)


def setup(app: Sphinx) -> dict:
    app.connect("builder-inited", generate)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
