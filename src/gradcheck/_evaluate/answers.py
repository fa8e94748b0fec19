"""What a worker (a forked process, an executor's task) answers for a chunk of points.

A worker evaluates its chunk with the serial loop (:func:`~.serial.run_here`) on its own copy of
the working array and answers with data, never by raising: ``("ok", values)``; ``("error", j,
cause, traceback)`` when the evaluation of point ``j`` of the chunk raised (gradcheck's
FunctionError does not survive pickling, and ``f``'s own exception may not pickle at all: it
travels as itself or as a RuntimeError carrying its text); or ``("mutated",)`` when ``f`` wrote
into the array it was given. A write is seen either mid-chunk (an entry changed before its
turn) or by comparing the worker's copy with its pristine snapshot once the chunk is done,
which also catches writes into entries the chunk had already passed, or that belong to another
chunk: the parent's own copy is never touched by a worker.

The parent turns an answer back into values or into the error the serial runner would have
raised at that point (:func:`unpack`).
"""
from __future__ import annotations

import pickle
import traceback
from collections.abc import Callable

import numpy as np

from .._core.arrays import same_bits
from .._core.errors import FunctionError, InputMutationError, mutation_error
from .points import Points
from .serial import PointFailed, evaluate_points
from .target import Slices, entry_of, located


def answer(evaluate: Callable[[], object], work: np.ndarray, pristine: np.ndarray, points: Points,
           slices: Slices | None = None) -> tuple:
    """Evaluate ``points`` on a worker's copy ``work`` of ``pristine``; the answer as data."""
    try:
        values = evaluate_points(evaluate, work, points, slices=slices)
    except InputMutationError:
        return ("mutated",)
    except PointFailed as failed:
        if not same_bits(work, pristine):
            return ("mutated",)
        exc = failed.cause  # an evaluation that wrapped f's exception (check_params' loss): f's own
        cause = exc.__cause__ if isinstance(exc, FunctionError) and exc.__cause__ is not None else exc
        return ("error", failed.j, picklable(cause), traceback.format_exc())
    if not same_bits(work, pristine):
        return ("mutated",)
    return ("ok", values)


def picklable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling, else a RuntimeError that carries its text."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")


def failure(points: Points, lo: int, answered: tuple, shape: tuple[int, ...], param: str | None,
            where: str) -> FunctionError:
    """The error of an ``("error", j, cause, traceback)`` answer for the chunk that starts at
    point ``lo``: what the serial runner raises at that point, the worker's traceback noted."""
    _, j, cause, worker_traceback = answered
    k = lo + j
    first = points.first(k)
    err = located(cause, None if first is None else entry_of(first, shape), points.label(k), param)
    if not isinstance(cause, FunctionError) and hasattr(err, "add_note"):  # Python >= 3.11 (not for an OutputError)
        err.add_note(f"raised {where}:\n{worker_traceback}")
    return err


def mutated_on_worker(first_entry: tuple[int, ...]) -> InputMutationError:
    return mutation_error("f", f" (seen on a worker while differencing entries {first_entry} onwards)")
