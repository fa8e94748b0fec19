"""Keyword arguments of the public entry points, validated at the boundary: the one place.

Each error names the parameter, the value it got and what it accepts, before any work is
done: a truthy string such as ``refine="no"`` or a dict for ``config`` must never be read
as something it is not. A ``TypeError`` for a value of the wrong type (a bool is never a
number here, nor a float an int), a ``ValueError`` for one out of range.

The kinds, each one function: :func:`flag` (True/False), :func:`choice` (one of a few
names: engines, conventions), :func:`integer` (counts: ``draws``, ``steps``, ``digits``),
:func:`as_seed`, :func:`positive`, :func:`nonnegative` and :func:`share` (finite numbers:
steps, tolerances, noise factors, shares), :func:`as_budget` (evaluations or wall time), :func:`text` (labels) and
:func:`as_executor`. A new keyword of a public function (a tolerance such as ``rtol=``) takes
its validator from here. (``config=`` is validated beside its type,
:func:`gradcheck._core.config.as_config`: :class:`~gradcheck.Config` checks its own fields
with the validators here, so this module cannot import it.)

>>> flag("refine", "no", none=True)
Traceback (most recent call last):
...
TypeError: refine must be True, False or None, got 'no' (a str)
>>> as_seed(1.5)
Traceback (most recent call last):
...
TypeError: seed must be an int >= 0, got 1.5 (a float)
"""
from __future__ import annotations

import datetime
import inspect
import re
from collections.abc import Callable, Sequence
from typing import Any, Literal, overload

import numpy as np

#: A real number as the validators take it (a bool is refused on its own).
Real = int | float | np.integer | np.floating
#: The referee works at this many significant digits at least: it must out-resolve the
#: float64 computation it referees (17 significant digits), with a margin.
MIN_DIGITS = 20


def got(value: object) -> str:
    """How an error shows a value it refuses: ``'no' (a str)``."""
    return f"{value!r} (a {type(value).__name__})"


def _is_bool(value: object) -> bool:
    return isinstance(value, (bool, np.bool_))


def flag(name: str, value: object, *, none: bool = False) -> bool | None:
    """``value`` as a bool: True/False (numpy's too), or None where ``none`` allows it."""
    if value is None and none:
        return None
    if _is_bool(value):
        return bool(value)
    choices = "True, False or None" if none else "True or False"
    raise TypeError(f"{name} must be {choices}, got {got(value)}")


def _same(value: object, c: object) -> bool:
    if _is_bool(c) or _is_bool(value):  # True is not 1 here, nor "no" truthy
        return _is_bool(c) and _is_bool(value) and bool(value) == c
    return isinstance(value, type(c)) and value == c


def choice(name: str, value: object, choices: Sequence[Any], owner: str = "") -> Any:
    """``value`` if it is one of ``choices`` (bools match bools only); ``owner`` names the
    function whose choices these are, where another takes other ones (``"screen"``)."""
    for c in choices:
        if _same(value, c):
            return c
    shown = ", ".join(repr(c) for c in choices)
    raise ValueError(f"{name}={value!r} is not one of ({shown}){' for ' + owner if owner else ''}")


def as_adjudicate(value: object) -> bool | str:
    """``adjudicate``: ``"auto"``, True or False."""
    return choice("adjudicate", value, ("auto", True, False))


@overload
def integer(name: str, value: object, *, minimum: int, meaning: str = "",
            none: Literal[False] = False) -> int: ...
@overload
def integer(name: str, value: object, *, minimum: int, meaning: str = "", none: bool) -> int | None: ...
def integer(name: str, value: object, *, minimum: int, meaning: str = "", none: bool = False) -> int | None:
    """``value`` as an int ``>= minimum`` (a bool, a float or a string is refused; None
    where ``none`` allows it)."""
    if value is None and none:
        return None
    accepts = f"an int >= {minimum}{meaning}{' or None' if none else ''}"
    if _is_bool(value) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be {accepts}, got {got(value)}")
    if value < minimum:
        raise ValueError(f"{name} must be {accepts}, got {value!r}")
    return int(value)


@overload
def as_seed(value: object, name: str = "seed", *, none: Literal[False] = False) -> int: ...
@overload
def as_seed(value: object, name: str = "seed", *, none: bool) -> int | None: ...
def as_seed(value: object, name: str = "seed", *, none: bool = False) -> int | None:
    """A random seed: an int >= 0 (numpy's generators take no negative seeds), or None where
    ``none`` allows it (then a default applies)."""
    return integer(name, value, minimum=0, none=none)


def as_digits(value: object) -> int:
    """``digits``: significant digits of the referee's exact derivatives."""
    return integer("digits", value, minimum=MIN_DIGITS,
                   meaning=" (significant digits of the referee's exact derivatives; 30 is the default)")


def _number(name: str, value: object, accepts: str, ok: Callable[[Real], object]) -> float:
    if _is_bool(value) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be {accepts}, got {got(value)}")
    if not (np.isfinite(value) and ok(value)):
        raise ValueError(f"{name} must be {accepts}, got {value!r}")
    return float(value)


@overload
def positive(name: str, value: object, *, none: Literal[False] = False, meaning: str = "") -> float: ...
@overload
def positive(name: str, value: object, *, none: bool, meaning: str = "") -> float | None: ...
def positive(name: str, value: object, *, none: bool = False, meaning: str = "") -> float | None:
    """``value`` as a finite float > 0 (or None where ``none`` allows it): a step, a bound,
    a noise factor."""
    if value is None and none:
        return None
    return _number(name, value, f"a positive number (finite{meaning}){' or None' if none else ''}",
                   lambda v: v > 0)


@overload
def nonnegative(name: str, value: object, *, none: Literal[False] = False, meaning: str = "") -> float: ...
@overload
def nonnegative(name: str, value: object, *, none: bool, meaning: str = "") -> float | None: ...
def nonnegative(name: str, value: object, *, none: bool = False, meaning: str = "") -> float | None:
    """``value`` as a finite float >= 0 (or None where ``none`` allows it): a tolerance
    (``rtol``, ``atol``) that may be zero."""
    if value is None and none:
        return None
    return _number(name, value, f"a finite number >= 0{meaning}{' or None' if none else ''}",
                   lambda v: v >= 0)


def share(name: str, value: object, meaning: str = "") -> float:
    """``value`` as a float strictly between 0 and 1: a share (of a value, of the entries)."""
    return _number(name, value, f"a number in (0, 1){meaning}", lambda v: 0 < v < 1)


#: Wall-time units a budget string may use, in seconds.
BUDGET_UNITS = {"s": 1.0, "sec": 1.0, "min": 60.0, "h": 3600.0}


def as_budget(value: object, name: str = "budget") -> int | float | None:
    """A budget: None (the default applies), evaluations of ``f`` (an int >= 1, returned as
    an int), or wall time (``"90s"``, ``"5min"``, ``"1h"``, a ``datetime.timedelta``; returned
    as seconds, a float > 0)."""
    accepts = ("evaluations of f (an int >= 1, e.g. 1000), wall time as a string ('90s', '5min', '1h') "
               "or a datetime.timedelta")
    if value is None:
        return None
    if _is_bool(value) or not isinstance(value, (int, np.integer, str, datetime.timedelta)):
        raise TypeError(f"{name} must be {accepts}; got {got(value)}")
    if isinstance(value, (int, np.integer)):
        if value < 1:
            raise ValueError(f"{name} must be at least 1 evaluation of f (an int >= 1), got {value!r}")
        return int(value)
    seconds = None
    if isinstance(value, datetime.timedelta):
        seconds = value.total_seconds()
    else:
        match = re.fullmatch(r"\s*((?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)\s*(s|sec|min|h)\s*", value)
        if match:
            seconds = float(match.group(1)) * BUDGET_UNITS[match.group(2)]
    if seconds is None or not (np.isfinite(seconds) and seconds > 0):
        raise ValueError(f"{name}={value!r} is not understood: give {accepts}")
    return float(seconds)


def as_shape(name: str, value: object) -> tuple[int, ...]:
    """A shape: a tuple (or list) of ints >= 0, or one int."""
    items = (value,) if isinstance(value, (int, np.integer)) and not _is_bool(value) else value
    if not isinstance(items, (tuple, list)) or any(_is_bool(n) or not isinstance(n, (int, np.integer))
                                                   for n in items):
        raise TypeError(f"{name} must be a shape (a tuple of ints), got {got(value)}")
    if any(n < 0 for n in items):
        raise ValueError(f"{name} must be a shape (a tuple of ints >= 0), got {value!r}")
    return tuple(int(n) for n in items)


def label_of(f: object, name: str | None = None) -> str:
    """What reports call ``f``: ``name`` when given, else ``f.__name__``, else ``f.name`` (a
    native function, a subject), else the name of ``f``'s type. The one label rule.

    >>> label_of(len), label_of(len, "mine"), label_of(object())
    ('len', 'mine', 'object')
    """
    return name or getattr(f, "__name__", None) or getattr(f, "name", None) or type(f).__name__


def text(name: str, value: object) -> str | None:
    """``value`` if it is a str or None (a label)."""
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{name} must be a str or None, got {got(value)}")


def as_executor(value: object) -> Any:
    """``executor``: None, something with ``.submit`` or an ``ExecutorOptions``."""
    if value is None or callable(getattr(value, "submit", None)) or type(value).__name__ == "ExecutorOptions":
        return value
    raise TypeError(f"executor must be a concurrent.futures.Executor (something with .submit), an "
                    f"ExecutorOptions or None, got {got(value)}; for dask use Client(...).get_executor()")


def engine_with_executor(engine: str, executor: object) -> None:
    """Refuse an executor beside an engine other than ``"auto"`` or ``"executor"``: it runs
    engine ``"executor"``, so one of the two is not meant."""
    if executor is not None and engine not in ("auto", "executor"):
        raise ValueError(f"an executor runs engine='executor'; got engine={engine!r} as well (drop one)")


def takes(fn: Callable[..., object], name: str) -> bool:
    """Whether ``fn``'s signature has a parameter ``name`` (False when it has none to read):
    an optional keyword (``progress=``, ``on_chunk=``) is passed only to what accepts it."""
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
