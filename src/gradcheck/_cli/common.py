"""Loading the user's ``MODULE:NAME``, telling the user's exceptions from gradcheck's own, and
the parsers of ``--shape`` and ``--independent-axes``."""
from __future__ import annotations

import argparse
import functools
import importlib
import os
import sys
from collections.abc import Callable
from typing import Any


class UserCodeError(Exception):
    """The user's code failed (it raised, or killed a worker): the command exits with
    ``EXIT_RAISED`` and this one-line message, never a traceback or the exit code of a
    mismatch."""


def one_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type name when it has none)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def load(spec: str) -> Any:
    """The object named ``MODULE:NAME`` (``NAME`` may be dotted), imported with the current
    directory on the path. A module that raises while it is imported is the user's code
    failing (:class:`UserCodeError`); a module that is not there is a usage error."""
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise ValueError(f"expected MODULE:NAME, got {spec!r}")
    cwd = os.getcwd()
    if "" not in sys.path and cwd not in sys.path:
        sys.path.insert(0, cwd)  # as `python -m` does; a console script starts without it
    try:
        obj = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module == exc.name or module.startswith(exc.name + ".")):
            raise ImportError(f"cannot import {module!r} for {spec!r} (looked in {cwd} and on "
                              f"sys.path): {exc}") from None
        raise UserCodeError(f"importing {module!r} raised {type(exc).__name__}: {one_line(exc)}") from exc
    except Exception as exc:  # noqa: BLE001 - the user's module failed while it ran
        raise UserCodeError(f"importing {module!r} raised {type(exc).__name__}: {one_line(exc)}") from exc
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


class Watched:
    """A user function whose exceptions are remembered and re-raised unchanged (gradcheck
    classifies some of them, e.g. the referee's TypeErrors), so that the command can tell
    an error raised by the user's code from gradcheck's own."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.raised: list[BaseException] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return self.fn(*args, **kwargs)
        except Exception as exc:
            self.raised.append(exc)
            raise

    def raised_in_chain(self, exc: BaseException) -> BaseException | None:
        """The exception of ours in ``exc``'s chain of causes, if any."""
        seen: set[int] = set()
        link: BaseException | None = exc
        while link is not None and id(link) not in seen:
            seen.add(id(link))
            if any(link is mine for mine in self.raised):
                return link
            # the chain Python shows: the cause, else the context unless suppressed ("from None")
            link = link.__cause__ if link.__cause__ is not None else (
                None if link.__suppress_context__ else link.__context__)
        return None


def parse_shape(text: str) -> tuple[int, ...]:
    """``"3,4"`` -> ``(3, 4)``; anything but sizes separated by commas is a usage error that
    says what was expected (an argparse ``type=``).

    >>> parse_shape("3,4"), parse_shape("5")
    ((3, 4), (5,))
    """
    parts = [p.strip() for p in text.split(",")]
    if parts and parts[-1] == "" and len(parts) > 1:
        parts = parts[:-1]  # "5," is a vector, as Python's (5,)
    bad = [p for p in parts if not p.isdigit()]
    if bad:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a shape: expected sizes separated by commas, such as 3,4 (or 5 for a "
            f"vector); {bad[0]!r} is not a whole number >= 0")
    return tuple(int(p) for p in parts)


def parse_axes(text: str) -> str | tuple[int, ...]:
    """``--independent-axes``: ``"all"`` or axes separated by commas (``"0"``, ``"0,2"``).

    >>> parse_axes("all"), parse_axes("0,2")
    ('all', (0, 2))
    """
    if text.strip().lower() == "all":
        return "all"
    parts = [p.strip() for p in text.split(",") if p.strip()]
    bad = [p for p in parts if not p.lstrip("-").isdigit()]
    if bad or not parts:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected 'all' (every axis: f acts entry by entry) or the axes whose slices are "
            "independent, separated by commas, such as 0 or 0,1")
    return tuple(int(p) for p in parts)
