"""The target: what every runner evaluates, and how an evaluation's failure is named.

A :class:`Target` is ``f`` with the array it perturbs and the reduction of its output to a
scalar (``evaluate()``: the reduced ``f`` at the current contents of ``work``). ``work`` is the
checker's private copy of ``x`` (``check``), or a parameter array the caller restores bit for
bit (``check_params``); runners perturb it in place and put every entry back in ``finally``,
or perturb their own copies of it (threads, worker processes).

With a per-slice reduction (:class:`Slices`: independent axes), ``evaluate()`` returns ``f``'s
output as it is, and each perturbed entry's answer is its own slice's reduction of it
(``slices.per_entry``): a runner answers one value per entry set, not one per point.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np

from .._core.arrays import same_bits
from .._core.errors import FunctionError, GradcheckError, InputMutationError, OutputError, mutation_error
from .points import Answers, Points

Y = TypeVar("Y")


@dataclass(frozen=True)
class Target:
    """What the layer evaluates (see the module docstring).

    ``cotangent``: the reduction ``v . f`` of an array output (None: ``f`` returns a scalar);
    the batched and compiled runners apply it themselves, as ``np.add.reduce(v * y)`` (numpy's
    pairwise order: the same bits as ``evaluate``). ``vectorized``: ``f`` takes a leading batch
    axis. ``executor``: a ``concurrent.futures.Executor`` (or :class:`ExecutorOptions`) the
    executor runner sends points to. ``param``: the parameter name errors carry (check_params).
    ``slices``: a per-slice reduction (then ``evaluate()`` is ``f``'s output, ``cotangent`` None).
    """

    f: Callable[..., Any]
    work: np.ndarray
    evaluate: Callable[[], object]
    backend: Any
    cotangent: np.ndarray | None = None
    vectorized: bool = False
    executor: Any = None
    param: str | None = None
    slices: Slices | None = None

    def entry(self, flat_index: int | np.integer) -> tuple[int, ...]:
        """The multi-index of a flat index of ``work`` (as errors print it: ``(0, 2)``)."""
        return entry_of(flat_index, self.work.shape)


class Slices(Answers, Protocol):
    """A reduction of ``f``'s output to several values per point: slice by slice (one scalar
    per slice, the colouring's ``v_b . f_b``), each perturbed entry answered with its own
    slice's value (``per_point`` None); or ``per_point`` values per point whatever entries it
    sets (:class:`PerPoint`: the adjoint test's ``v . f`` and ``sum |v f|`` from one evaluation)."""

    #: The shape of ``f``'s output (the compiled runner stores outputs of this shape).
    shape: tuple[int, ...]

    def per_entry(self, y: object, entries: np.ndarray | None, out: np.ndarray) -> None:
        """Into ``out``: the point's answers from ``f``'s output ``y`` (``per_point`` None: the
        value of each of ``entries``, flat indices, None meaning every entry in flat order); an
        output it cannot reduce raises :class:`~gradcheck._core.errors.OutputError`."""


class PerPoint:
    """``reduce(y)``'s ``per_point`` values at each point (a :class:`Slices` answering per
    point): several reductions of one evaluation of ``f``, whose output has ``shape``."""

    def __init__(self, reduce: Callable[[object], Sequence[float]], per_point: int, shape: tuple[int, ...]) -> None:
        self.reduce, self.per_point, self.shape = reduce, per_point, tuple(shape)

    def per_entry(self, y: object, entries: np.ndarray | None, out: np.ndarray) -> None:
        out[...] = self.reduce(y)


class Runner(Protocol):
    """What every runner answers: ``run(points) -> one float64 per point`` (per entry set, for
    a target with :class:`Slices`; ``progress(groups done)``), its ``name`` and ``notes`` for
    the report, the points it ran, ``close()``."""

    name: str
    evaluations: int

    @property
    def notes(self) -> tuple[str, ...]: ...

    def run(self, points: Points, progress: Callable[[int], None] | None = None) -> np.ndarray: ...

    def close(self, terminate: bool = False) -> None: ...


def entry_of(flat_index: int | np.integer, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(k) for k in np.unravel_index(int(flat_index), shape))


def answer_slices(target: Target, y: np.ndarray, points: Points, j: int, entries: np.ndarray | None,
                  out: np.ndarray) -> None:
    """Point ``j``'s answers (one per entry of ``entries``) from ``f``'s output ``y`` by the
    target's per-slice reduction; an output it refuses, its OutputError at the point's first entry."""
    slices = target.slices
    assert slices is not None
    try:
        slices.per_entry(y, entries, out[points.answer_span(j, j + 1, slices)])
    except OutputError as refused:
        first = points.first(j)
        raise refused.at(None if first is None else entry_of(first, target.work.shape), points.label(j)) from None


def located(exc: BaseException, index: tuple[int, ...] | None, side: str, param: str | None) -> FunctionError:
    """``exc`` from an evaluation at entry ``index`` (``side``), as one FunctionError there:
    ``f``'s output refused by gradcheck (:class:`OutputError`) keeps its own message, and an
    evaluation that already wrapped ``f``'s exception (check_params' loss) is not wrapped twice."""
    if isinstance(exc, OutputError):
        err: FunctionError = exc.at(index, side, param)
        err.__suppress_context__ = True
        return err
    cause = exc.__cause__ if isinstance(exc, FunctionError) and exc.__cause__ is not None else exc
    err = FunctionError(index, side, param if param is not None else getattr(exc, "param", None), cause)
    err.__cause__ = cause
    return err


def at_x(evaluate: Callable[[], Y], where: str = "base", *, work: np.ndarray | None = None,
         param: str | None = None) -> Y:
    """``evaluate()``: ``f`` at the working copy itself, no entry perturbed (``f(x)``, ``f(x)``
    again). ``f`` raising is :class:`~gradcheck.FunctionError` at no entry, named ``where``
    and ``param`` (check_params' parameter name, if any; gradcheck's own errors pass as they
    are: a backend's FunctionError, an OutputError). With
    ``work`` (``f``'s argument), a write into it is :class:`~gradcheck.InputMutationError`,
    seen ``where`` (check's own base evaluation leaves that to its sanity stage, which compares
    the working copy with the pristine ``x`` after the first pass)."""
    before = None if work is None else np.array(work, copy=True)
    try:
        y = evaluate()
    except GradcheckError:
        raise  # said once, where it was raised
    except Exception as exc:
        raise FunctionError(None, where, param, exc) from exc
    if work is not None and not same_bits(work, before):
        raise mutation_error(seen=f" (seen {where})")
    return y


def written(index: tuple[int, ...], how: str = "while it was perturbed") -> InputMutationError:
    """``f`` wrote into entry ``index``: seen ``how``."""
    return mutation_error(seen=f" (entry {index} changed {how})")


def flat_handle(target: np.ndarray) -> Any:
    """A 1-D handle whose item assignment writes into ``target`` (a view when possible)."""
    if target.flags.c_contiguous:
        return target.reshape(-1)
    return target.flat  # writes through for any layout


def reader(flat: Any) -> Any:
    """Fast item reads of ``flat`` (a memoryview of float64/float32 data: ~5x cheaper than
    numpy's scalar indexing), else ``flat`` itself."""
    # memoryview knows native byte order only (a big-endian parameter array reads via numpy)
    if isinstance(flat, np.ndarray) and flat.dtype.char in "df" and flat.dtype.isnative:
        try:
            return flat.data  # a memoryview of its buffer
        except (TypeError, ValueError, BufferError):
            pass
    return flat
