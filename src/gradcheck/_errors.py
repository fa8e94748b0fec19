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
        where = "at the unperturbed input" if index is None else f"at entry {index} ({side})"
        if param is not None:
            where = f"{where} of parameter {param!r}"
        super().__init__(f"the function raised {type(exc).__name__} {where}: {exc}")


class InputMutationError(GradcheckError, RuntimeError):
    """The user's function wrote into the array it was given."""


class GradientAssertionError(AssertionError):
    """Raised by ``Report.assert_pass``; ``.report`` holds the report it judged."""

    def __init__(self, message: str, report: Any) -> None:
        super().__init__(message)
        self.report = report


class GradcheckWarning(UserWarning):
    """A check ran but something about it deserves attention."""
