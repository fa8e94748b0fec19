"""Exceptions. Each carries structured data besides its message."""
from __future__ import annotations

from typing import Any


class GradcheckError(Exception):
    """Base class of gradcheck's own errors."""


class ShapeMismatchError(GradcheckError, ValueError):
    """A claimed gradient (or cotangent) does not have the shape it must have."""

    def __init__(self, what: str, expected: tuple[int, ...], got: tuple[int, ...]) -> None:
        self.what, self.expected, self.got = what, tuple(expected), tuple(got)
        super().__init__(
            f"{what} has shape {self.got}, but it must have shape {self.expected}"
        )


class UnsupportedInputError(GradcheckError, TypeError):
    """An input that cannot be differentiated (integer, complex, object, ...)."""


class FunctionError(GradcheckError, RuntimeError):
    """The user's function raised while gradcheck evaluated it.

    ``index`` is the multi-index of the entry being perturbed (None for the unperturbed
    evaluation), ``side`` is ``"+h"``, ``"-h"`` or ``"base"``; the original exception is
    chained as ``__cause__``.
    """

    def __init__(self, index: tuple[int, ...] | None, side: str, param: str | None, exc: BaseException) -> None:
        self.index, self.side, self.param = index, side, param
        super().__init__(f"the function raised {type(exc).__name__} {where_evaluated(index, side, param)}: {exc}")


def where_evaluated(index: tuple[int, ...] | None, side: str, param: str | None) -> str:
    """``"at entry (0, 2) (+h) of parameter 'w'"``, or ``"at the unperturbed input"``; a
    ``side`` that starts with ``"at "`` names a point of its own (``"at x + h d (h = 0.01)"``:
    the tests that move ``x`` along a direction, not one entry)."""
    if index is None and side.startswith("at "):
        where = side
    else:
        where = "at the unperturbed input" if index is None else f"at entry {index} ({side})"
    return where if param is None else f"{where} of parameter {param!r}"


class OutputError(FunctionError, TypeError):
    """The user's function returned something gradcheck cannot use at a point: None, a
    complex value, another shape than at the unperturbed input. ``f`` raised nothing, so
    there is no ``__cause__``: the message says what ``f`` returned, and where.

    ``returned`` describes the value, ``what`` names the function (``"f"``,
    ``"loss(params)"``), ``tail`` is the requirement and hint after the location.
    """

    def __init__(self, returned: str, index: tuple[int, ...] | None = None, side: str = "base",
                 param: str | None = None, what: str = "f", tail: str = "") -> None:
        self.returned, self.what, self.tail = returned, what, tail
        self.index, self.side, self.param = index, side, param
        GradcheckError.__init__(self, f"{what} returned {returned} {where_evaluated(index, side, param)}{tail}")

    def at(self, index: tuple[int, ...] | None, side: str, param: str | None = None) -> OutputError:
        """The same error, located at entry ``index`` (``side``) of ``param``."""
        return OutputError(self.returned, index, side, param if param is not None else self.param,
                           self.what, self.tail)

    def __reduce__(self):  # workers send it back pickled (processes, executor engines)
        return (OutputError, (self.returned, self.index, self.side, self.param, self.what, self.tail))


class AliasedParametersError(GradcheckError, ValueError):
    """Parameters of ``check_params`` share memory (the same array, views, overlapping
    slices of one buffer). ``groups`` lists the names of each set that shares memory."""

    def __init__(self, groups: list[list[str]]) -> None:
        self.groups = [list(g) for g in groups]
        shown = "; ".join(" and ".join(repr(n) for n in g) for g in self.groups)
        a, b = self.groups[0][:2]
        super().__init__(
            f"params {shown} share memory (the same array, views of one another, or overlapping "
            f"parts of one buffer). check_params perturbs one name at a time in place, so a step in "
            f"{a!r} also moves {b!r}, while the exact referee replaces {a!r} alone: the two would "
            f"judge different functions. If they are one tied weight, pass it once, under one name, "
            f"with its total gradient (the sum over its uses): check_params(lambda p: loss({{**p, "
            f"{b!r}: p[{a!r}]}}), {{{a!r}: w, ...}}, {{{a!r}: total, ...}}); if they are separate "
            f"weights, pass copies (np.array(w, copy=True))"
        )


class DependentSlicesError(GradcheckError, ValueError):
    """``check(..., independent_axes=...)`` declared that output slice ``b`` depends only on
    input slice ``b``, and gradcheck saw otherwise: perturbing input ``entry`` changed the
    output at ``leak``, which lies in another slice along ``axis``. The declaration is
    refused: no verdict is produced from it."""

    def __init__(self, axis: int, entry: tuple[int, ...], leak: tuple[int, ...], how: str) -> None:
        self.axis, self.entry, self.leak = int(axis), tuple(entry), tuple(leak)
        super().__init__(
            f"independent_axes is wrong along axis {self.axis}: perturbing x{list(self.entry)} changed "
            f"f's output at {list(self.leak)}, which lies in another slice along axis {self.axis} "
            f"({how}). The output along that axis mixes slices (a mean, a norm or a statistic over "
            f"the axis, a roll, an attention across it), so entries cannot be differenced together; "
            f"drop axis {self.axis} from independent_axes, or check without it"
        )


class InputMutationError(GradcheckError, RuntimeError):
    """The user's function wrote into the array it was given."""


def mutation_error(who: str = "the function", seen: str = "",
                   into: str = "the array it was given") -> InputMutationError:
    """The one message for an ``f`` that wrote into its input: ``who`` wrote into ``into``,
    where it was ``seen`` (a parenthesis, or ""), and the way out.

    >>> str(mutation_error("f", " (seen at entry (0,))"))
    'f wrote into the array it was given (seen at entry (0,)); gradcheck cannot difference a function that mutates its input (copy inside the function)'
    """
    return InputMutationError(
        f"{who} wrote into {into}{seen}; gradcheck cannot difference a function that mutates "
        "its input (copy inside the function)"
    )


class WorkerDiedError(GradcheckError, RuntimeError):
    """A worker process died (killed by a signal, out of memory, a crash in native code,
    ``os._exit``), which breaks the whole pool.

    ``first`` and ``last`` are the multi-indices bounding the entries it may have been working
    on (``count`` entries: those of the chunks unfinished when the pool broke that the workers
    could have picked up); ``how`` says how the dead process ended, as far as it is known;
    ``task`` what the workers were doing. The pool's ``BrokenProcessPool`` is chained as
    ``__cause__``.
    """

    def __init__(self, first: tuple[int, ...], last: tuple[int, ...], count: int, how: str,
                 *, task: str = "a worker process of engine='processes' died ({how}) while differencing",
                 remedy: str = "engine='serial' evaluates in this process, where the crash shows "
                               "where it happens.") -> None:
        self.first, self.last, self.count, self.how = tuple(first), tuple(last), int(count), how
        where = f"entry {self.first}" if count == 1 else (
            f"one of the {count} entries from {self.first} to {self.last}")
        super().__init__(
            f"{task.format(how=how)} {where}. Probable cause: f, or native code it calls, crashed "
            f"or exited there, or the system killed the worker (out of memory). {remedy}"
        )


class GradientAssertionError(AssertionError):
    """Raised by ``Report.assert_pass``; ``.report`` holds the report it judged."""

    def __init__(self, message: str, report: Any) -> None:
        super().__init__(message)
        self.report = report


class GradcheckWarning(UserWarning):
    """A check ran but something about it deserves attention."""
