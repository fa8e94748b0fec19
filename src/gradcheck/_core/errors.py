"""Exceptions. Each carries structured data besides its message."""
from __future__ import annotations

from typing import Any


class GradcheckError(Exception):
    """Base class of gradcheck's own errors.

    Every error gradcheck raises about your input or your function derives from it, and
    also from the built-in exception it resembles (``ValueError``, ``TypeError``,
    ``RuntimeError``), so ``except ValueError`` keeps working. Each carries structured data
    besides its message (``ShapeMismatchError.expected``, ``FunctionError.index``, ...).

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> try:
    ...     gradcheck.check(lambda x: x.sum(), np.ones((2, 3)), np.ones((3, 2)))
    ... except gradcheck.GradcheckError as err:
    ...     print(type(err).__name__, isinstance(err, ValueError))
    ShapeMismatchError True
    """


class ShapeMismatchError(GradcheckError, ValueError):
    """A claimed gradient (or cotangent) does not have the shape it must have.

    ``what`` names the array, ``expected`` and ``got`` are the two shapes.

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> gradcheck.check(lambda x: x.sum(), np.ones((2, 3)), np.ones((3, 2)))
    Traceback (most recent call last):
    ...
    gradcheck._core.errors.ShapeMismatchError: claimed gradient has shape (3, 2), but it must have shape (2, 3)
    """

    def __init__(self, what: str, expected: tuple[int, ...], got: tuple[int, ...]) -> None:
        self.what, self.expected, self.got = what, tuple(expected), tuple(got)
        super().__init__(
            f"{what} has shape {self.got}, but it must have shape {self.expected}"
        )


class UnsupportedInputError(GradcheckError, TypeError):
    """An input that cannot be differentiated (integer, object, a type no backend takes, ...).

    The message says what to pass instead.

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> gradcheck.check(lambda x: x.sum(), np.arange(3), np.ones(3))
    Traceback (most recent call last):
    ...
    gradcheck._core.errors.UnsupportedInputError: x has dtype int64, which has no gradient (perturbing an integer moves it by at least 1); pass x.astype(np.float64)
    """


class FunctionError(GradcheckError, RuntimeError):
    """The user's function raised while gradcheck evaluated it.

    ``index`` is the multi-index of the entry being perturbed (None for the unperturbed
    evaluation), ``side`` is ``"+h"``, ``"-h"`` or ``"base"``, ``param`` the parameter's name
    in :func:`gradcheck.check_params` (else None); the original exception is chained as
    ``__cause__``.

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> def f(x):
    ...     if x[1] != 1.0:
    ...         raise ZeroDivisionError("boom")
    ...     return x.sum()
    >>> try:
    ...     gradcheck.check(f, np.array([1.0, 1.0]), np.ones(2))
    ... except gradcheck.FunctionError as err:
    ...     print(err.index, err.side, type(err.__cause__).__name__)
    (1,) +h ZeroDivisionError
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

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> gradcheck.check(lambda x: None, np.ones(2), np.ones(2))
    Traceback (most recent call last):
    ...
    gradcheck._core.errors.OutputError: f (<lambda>) returned None at the unperturbed input; it must return a real number or an array of real numbers (is a `return` missing?)
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
    slices of one buffer). ``groups`` lists the names of each set that shares memory.

    The message says how to pass a tied weight once, or untied copies.

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> w = np.ones(3)
    >>> try:
    ...     gradcheck.check_params(lambda p: (p["a"] ** 2).sum(), {"a": w, "b": w[:2]},
    ...                            {"a": 2 * w, "b": np.zeros(2)})
    ... except gradcheck.AliasedParametersError as err:
    ...     print(err.groups)
    [['a', 'b']]
    """

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
    refused: no verdict is produced from it.

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> batch_norm = lambda x: (x - x.mean(axis=0)) / np.sqrt(x.var(axis=0) + 1e-5)  # mixes rows
    >>> x = np.random.default_rng(1).standard_normal((8, 3))
    >>> try:
    ...     gradcheck.check(batch_norm, x, lambda x, g: g, independent_axes=(0,))
    ... except gradcheck.DependentSlicesError as err:
    ...     print(err.axis, err.entry, err.leak)
    0 (4, 2) (0, 2)
    """

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
    """The user's function wrote into the array it was given.

    gradcheck perturbs a private copy and restores it; a function that writes into its input
    would make every later evaluation wrong. The user's own array is never touched.

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> def f(x):
    ...     x[0] = 0.0                     # writes into its input
    ...     return x.sum()
    >>> gradcheck.check(f, np.ones(2), np.ones(2))
    Traceback (most recent call last):
    ...
    gradcheck._core.errors.InputMutationError: the function wrote into the array it was given (...); gradcheck cannot difference a function that mutates its input (copy inside the function)
    """


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
    could have picked up); in :func:`gradcheck.check_params`, ``param`` and ``last_param`` name
    the parameters they are entries of (else None); ``how`` says how the dead process ended,
    as far as it is known; ``task`` what the workers were doing. The pool's
    ``BrokenProcessPool`` is chained as ``__cause__``.

    Examples
    --------
    Raised by the ``processes`` engine, for example when ``f`` calls ``os._exit`` or crashes
    in native code at some entry; built here directly:

    >>> import gradcheck
    >>> err = gradcheck.WorkerDiedError((5,), (5,), 1, "killed by signal 9 (SIGKILL)")
    >>> err.first, err.count
    ((5,), 1)
    >>> str(err).split(". ")[0]
    "a worker process of engine='processes' died (killed by signal 9 (SIGKILL)) while differencing entry (5,)"
    """

    def __init__(self, first: tuple[int, ...], last: tuple[int, ...], count: int, how: str,
                 *, task: str = "a worker process of engine='processes' died ({how}) while differencing",
                 remedy: str = "engine='serial' evaluates in this process, where the crash shows "
                               "where it happens.",
                 param: str | None = None, last_param: str | None = None) -> None:
        self.first, self.last, self.count, self.how = tuple(first), tuple(last), int(count), how
        self.param, self.last_param = param, last_param if last_param is not None else param
        self.task, self.remedy = task, remedy
        of = lambda name: "" if name is None else f" of parameter {name!r}"  # noqa: E731
        if count == 1:
            where = f"entry {self.first}{of(param)}"
        elif self.last_param == param:
            where = f"one of the {count} entries from {self.first} to {self.last}{of(param)}"
        else:
            where = f"one of the {count} entries from {self.first}{of(param)} to {self.last}{of(self.last_param)}"
        super().__init__(
            f"{task.format(how=how)} {where}. Probable cause: f, or native code it calls, crashed "
            f"or exited there, or the system killed the worker (out of memory). {remedy}"
        )

    def at(self, first: tuple[str, tuple[int, ...]], last: tuple[str, tuple[int, ...]]) -> WorkerDiedError:
        """The same death, its bounds named ``(parameter, index)`` (check_params' joint screen,
        whose workers see one flat vector of every parameter)."""
        return WorkerDiedError(first[1], last[1], self.count, self.how, task=self.task, remedy=self.remedy,
                               param=first[0], last_param=last[0])


class GradientAssertionError(AssertionError):
    """Raised by ``Report.assert_pass``; ``.report`` holds the report it judged.

    An ``AssertionError``, so test runners show it as a failed assertion; its message is the
    report's table (and, for an INCONCLUSIVE check, why and the way out). Also raised by the
    negative control and by a framework gradient that breaks its contract.

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> try:
    ...     gradcheck.check(lambda x: x.sum(), np.ones(3), 2 * np.ones(3)).assert_pass()
    ... except gradcheck.GradientAssertionError as err:
    ...     print(err.report.status)
    FAIL
    """

    def __init__(self, message: str, report: Any) -> None:
        super().__init__(message)
        self.report = report


class GradcheckWarning(UserWarning):
    """The category of warnings about a check that ran but deserves attention.

    The current version issues none: what deserves attention is said in the result's notes
    and status, where it cannot be filtered away. The category is public so that a test
    suite can turn such warnings into errors now (``filterwarnings =
    ["error::gradcheck.GradcheckWarning"]``, as gradcheck's own suite does).

    Examples
    --------
    >>> import warnings, gradcheck
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", gradcheck.GradcheckWarning)
    ...     issubclass(gradcheck.GradcheckWarning, UserWarning)
    True
    """
