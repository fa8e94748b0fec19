"""The help layout of every ``gradcheck`` command: options with their defaults, and the exit
codes in the epilog of each command (:class:`CommandParser` is the subcommands' parser class,
so a command added elsewhere, such as ``taylor``, gets both)."""
from __future__ import annotations

import argparse
import textwrap
from typing import Any

EXIT_PASS, EXIT_FAIL, EXIT_USAGE, EXIT_INCONCLUSIVE, EXIT_RAISED, EXIT_INTERNAL = 0, 1, 2, 3, 4, 5

#: The epilog of every command's help: the exit codes, one per line.
EXIT_CODES = f"""exit codes:
  {EXIT_PASS}  every check passed (dispute: no candidate is broken)
  {EXIT_FAIL}  a mismatch was found: FAIL (dispute: a candidate is broken)
  {EXIT_USAGE}  usage error (bad arguments, a file or module that is not there, a --fn that
     cannot be evaluated at arbitrary precision)
  {EXIT_INCONCLUSIVE}  inconclusive (nothing could be verified; the report says why and the way out)
  {EXIT_RAISED}  the function or the gradient raised (or killed its worker), or its module failed
     to import: one line names it, the exception and the entry
  {EXIT_INTERNAL}  gradcheck itself failed (a bug: the traceback is printed; please report it)
A closed pipe (gradcheck check ... | head) is not an error: the files asked for are still
written and the exit code is the verdict's."""


class HelpFormatter(argparse.HelpFormatter):
    """Descriptions and epilogs are filled paragraph by paragraph, keeping indented lines and
    headings (a line ending in ":") as written; every option whose default says something
    (not None, not a flag's False) shows it."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out: list[str] = []
        paragraph: list[str] = []

        def flush() -> None:
            if paragraph:
                out.append(textwrap.fill(" ".join(paragraph), width, initial_indent=indent,
                                         subsequent_indent=indent))
                paragraph.clear()

        for line in text.splitlines():
            if not line.strip():
                flush()
                out.append("")
            elif line.startswith(" ") or line.endswith(":"):
                flush()
                out.append(indent + line)
            else:
                paragraph.append(line.strip())
        flush()
        return "\n".join(out)

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if text == argparse.SUPPRESS or "%(default)" in text or not action.option_strings:
            return text
        default = action.default
        if default is None or default is False or default == argparse.SUPPRESS or isinstance(action, argparse._VersionAction):
            return text
        return f"{text} (default: %(default)s)" if text else "(default: %(default)s)"


class CommandParser(argparse.ArgumentParser):
    """An ``argparse.ArgumentParser`` with :class:`HelpFormatter` and the exit codes as its
    epilog unless told otherwise."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        kwargs.setdefault("epilog", EXIT_CODES)
        super().__init__(*args, **kwargs)
