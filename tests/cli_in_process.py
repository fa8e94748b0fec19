"""Run the command line in this process: ``gradcheck.cli.main(argv)``, what the console
script and ``python -m gradcheck.cli`` call, with the exit code, stdout and stderr of a
subprocess but without starting an interpreter (and importing numba) per call.

tests/test_cli.py runs the command as a subprocess (the console script, ``python -m``,
exit codes of a real process); the other command-line tests use this, so that their
dozens of calls cost what the commands do, not a new interpreter each.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gradcheck.cli import main


def run_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str,
            cwd: str | os.PathLike[str]) -> subprocess.CompletedProcess[str]:
    """``gradcheck ARGS`` run in ``cwd``, as a subprocess would report it. Modules the
    command imported from ``cwd`` (``MODULE:NAME`` arguments) are forgotten afterwards, so
    the next call imports its own; ``sys.path`` is restored."""
    folder = os.path.realpath(cwd)
    monkeypatch.chdir(folder)
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    capsys.readouterr()
    try:
        code = main(list(args))
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        for name in set(sys.modules) - before:
            origin = getattr(sys.modules[name], "__file__", None) or ""
            if os.path.realpath(origin).startswith(folder + os.sep):
                del sys.modules[name]
    out = capsys.readouterr()
    return subprocess.CompletedProcess(["gradcheck", *args], code, out.out, out.err)
