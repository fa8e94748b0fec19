"""Keyword arguments of the public entry points, validated at the boundary.

Each error names the parameter, the value it got and what it accepts, before any work is
done: a truthy string such as ``refine="no"`` or a dict for ``config`` must never be read
as something it is not.

>>> flag("refine", "no", none=True)
Traceback (most recent call last):
...
TypeError: refine must be True, False or None, got 'no' (a str)
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .config import Config

#: The referee works at this many significant digits at least: it must out-resolve the
#: float64 computation it referees (17 significant digits), with a margin.
MIN_DIGITS = 20


def _got(value: Any) -> str:
    return f"{value!r} (a {type(value).__name__})"


def _is_bool(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_))


def flag(name: str, value: Any, *, none: bool = False) -> bool | None:
    """``value`` as a bool: True/False (numpy's too), or None where ``none`` allows it."""
    if value is None and none:
        return None
    if _is_bool(value):
        return bool(value)
    choices = "True, False or None" if none else "True or False"
    raise TypeError(f"{name} must be {choices}, got {_got(value)}")


def _same(value: Any, c: Any) -> bool:
    if _is_bool(c) or _is_bool(value):  # True is not 1 here, nor "no" truthy
        return _is_bool(c) and _is_bool(value) and bool(value) == c
    return isinstance(value, type(c)) and value == c


def choice(name: str, value: Any, choices: Sequence[Any]) -> Any:
    """``value`` if it is one of ``choices`` (bools match bools only)."""
    for c in choices:
        if _same(value, c):
            return c
    shown = ", ".join(repr(c) for c in choices)
    raise ValueError(f"{name}={value!r} is not one of ({shown})")


def as_adjudicate(value: Any) -> bool | str:
    """``adjudicate``: ``"auto"``, True or False."""
    return choice("adjudicate", value, ("auto", True, False))


def integer(name: str, value: Any, *, minimum: int, meaning: str = "") -> int:
    """``value`` as an int ``>= minimum`` (a bool, a float or a string is refused)."""
    if _is_bool(value) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int >= {minimum}{meaning}, got {_got(value)}")
    if value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}{meaning}, got {value!r}")
    return int(value)


def as_digits(value: Any) -> int:
    """``digits``: significant digits of the referee's exact derivatives."""
    return integer("digits", value, minimum=MIN_DIGITS,
                   meaning=" (significant digits of the referee's exact derivatives; 30 is the default)")


def positive(name: str, value: Any, *, none: bool = False) -> float | None:
    """``value`` as a finite float > 0 (or None where ``none`` allows it)."""
    if value is None and none:
        return None
    accepts = f"a positive number (finite){' or None' if none else ''}"
    if _is_bool(value) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be {accepts}, got {_got(value)}")
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be {accepts}, got {value!r}")
    return float(value)


def label_of(f: Any, name: str | None = None) -> str:
    """What reports call ``f``: ``name`` when given, else ``f.__name__``, else ``f.name`` (a
    native function, a subject), else the name of ``f``'s type. The one label rule.

    >>> label_of(len), label_of(len, "mine"), label_of(object())
    ('len', 'mine', 'object')
    """
    return name or getattr(f, "__name__", None) or getattr(f, "name", None) or type(f).__name__


def text(name: str, value: Any) -> str | None:
    """``value`` if it is a str or None (a label)."""
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{name} must be a str or None, got {_got(value)}")


def as_config(value: Any) -> Any:
    """``config``: a :class:`gradcheck.Config` or None (a dict says how to build one)."""
    if value is None or isinstance(value, Config):
        return value
    hint = ""
    if isinstance(value, dict):
        hint = f"; build one from the dict with gradcheck.Config(**{value!r})"
    raise TypeError(f"config must be a gradcheck.Config or None, got {_got(value)}{hint}")


def as_executor(value: Any) -> Any:
    """``executor``: None, something with ``.submit`` or an ``ExecutorOptions``."""
    if value is None or callable(getattr(value, "submit", None)) or type(value).__name__ == "ExecutorOptions":
        return value
    raise TypeError(f"executor must be a concurrent.futures.Executor (something with .submit), an "
                    f"ExecutorOptions or None, got {_got(value)}; for dask use Client(...).get_executor()")


def check_keywords(*, config: Any, name: Any, engine: Any, engines: Sequence[str], vectorized: Any,
                   progress: Any, refine: Any, adjudicate: Any, digits: Any, bound_ulps: Any,
                   executor: Any) -> dict[str, Any]:
    """The keywords of :func:`gradcheck.check`, validated (``engines``: the valid names)."""
    return dict(
        config=as_config(config),
        name=text("name", name),
        engine=choice("engine", engine, tuple(engines)),
        vectorized=flag("vectorized", vectorized),
        progress=flag("progress", progress, none=True),
        refine=flag("refine", refine, none=True),
        adjudicate=as_adjudicate(adjudicate),
        digits=as_digits(digits),
        bound_ulps=positive("bound_ulps", bound_ulps, none=True),
        executor=as_executor(executor),
    )
