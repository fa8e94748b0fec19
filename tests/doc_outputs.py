"""Figures the docs quote must be what the code prints: the rule behind test_readme.py's
output check (issue 27: the demo printed "5598 (68.3%)" where the README said "5511 (67.3%)").

A fenced block with no language (or ``text``) directly after a ```python block, blank lines
between them at most, is that block's printed output; after a ```bash block whose last line
runs ``gradcheck ...`` (``pip install . && gradcheck demo``), it is that command's output. Each of its lines must appear in what
the block prints, in order (other printed lines may come between), after these rules:

* runs of spaces match any run of spaces (table columns may realign);
* ``...`` (or ``…``) matches any text: a quoted line may end in it, or stand for left-out lines;
* a duration (a number followed by ``s``, ``ms``, ``us`` or ``µs``, or by ``x faster`` /
  ``x slower``) matches any number (a time in any unit): times are measurements of a
  machine, not figures of the result. Every other number must be printed exactly as quoted.

A block separated from the code by anything but blank lines (an ``<!-- output: illustrative -->``
comment, a sentence) is not taken for its output and is not compared.
"""
from __future__ import annotations

import re

NUMBER = r"\d+(?:\.\d+)?(?:e[+-]?\d+)?"
_TOKEN = re.compile(rf"(?P<skip>\.\.\.|…)|(?P<number>{NUMBER})(?P<unit>\s*(?:s|ms|us|µs)\b|x (?:faster|slower)\b)"
                    r"|(?P<space>\s+)")


#: A duration in any unit: the unit follows the magnitude ("830 us" on one machine, "1.07 ms" on another).
_ANY_TIME = r"\s*(?:s|ms|us|µs|ns)\b"


def line_pattern(line: str) -> re.Pattern[str]:
    """The regular expression a quoted output line stands for (see the module docstring)."""
    text, parts, pos = line.strip(), [], 0
    for m in _TOKEN.finditer(text):
        parts.append(re.escape(text[pos:m.start()]))
        if m["skip"]:
            parts.append(".*")
        elif m["number"]:
            unit = m["unit"]
            parts.append(NUMBER + (re.escape(unit) if unit.startswith("x") else _ANY_TIME))
        else:
            parts.append(r"\s+")
        pos = m.end()
    parts.append(re.escape(text[pos:]))
    return re.compile("".join(parts))


def unmatched(quoted: str, printed: str) -> list[str]:
    """The quoted lines not found, in order, among the printed lines (empty: they all match)."""
    lines = [ln.strip() for ln in printed.splitlines()]
    missing, k = [], 0
    for line in quoted.splitlines():
        if not line.strip() or line.strip() in ("...", "…"):
            continue
        pattern = line_pattern(line)
        found = next((j for j in range(k, len(lines)) if pattern.fullmatch(lines[j])), None)
        if found is None:
            missing.append(line)
        else:
            k = found + 1
    return missing


def output_after(lines: list[str], end: int) -> tuple[str, int] | None:
    """The output block quoted after the ```python block closing at line index ``end``:
    ``(text, line number of its opening fence)``, or None."""
    k = end + 1
    while k < len(lines) and not lines[k].strip():
        k += 1
    if k >= len(lines) or lines[k].strip() not in ("```", "```text"):
        return None
    close = next(e for e in range(k + 1, len(lines)) if lines[e].strip() == "```")
    return "\n".join(lines[k + 1:close]), k + 1


def command_outputs(text: str) -> list[tuple[int, list[str], str]]:
    """``(line, gradcheck arguments, quoted output)`` for each ```bash block whose last line runs
    ``gradcheck ...`` and is followed by an output block."""
    lines = text.splitlines()
    found, k = [], 0
    while k < len(lines):
        if lines[k].strip() not in ("```bash", "```sh", "```console", "```shell"):
            k += 1
            continue
        end = next(e for e in range(k + 1, len(lines)) if lines[e].strip() == "```")
        body = [ln.strip().lstrip("$ ") for ln in lines[k + 1:end] if ln.strip()]
        quoted = output_after(lines, end)
        command = body[-1].split("&&")[-1].split("#")[0].split() if body else []
        if quoted is not None and command[:1] == ["gradcheck"]:
            found.append((k + 1, command[1:], quoted[0]))
        k = end + 1
    return found
