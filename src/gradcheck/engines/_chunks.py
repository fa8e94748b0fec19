"""What the engines that difference chunks on workers share (processes, executor).

A worker differences its chunk with the serial code on its own copy of the private
working array and answers with data, never by raising: ``("ok", f_plus, f_minus,
denominator)``, ``("error", details)`` when f raised (FunctionError does not survive
pickling, and f's own exception may not pickle at all), or ``("mutated",)`` when f
wrote into the array it was given. A write is seen either mid-chunk (an entry changed
before its turn) or by comparing the worker's copy with its pristine snapshot once the
chunk is done, which also catches writes into entries the chunk had already passed, or
that belong to another chunk: the parent's own copy is never touched by a worker, so the
check's final comparison there cannot see them.
"""
from __future__ import annotations

import pickle
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

from .._core.arrays import same_bits
from .._core.errors import FunctionError, InputMutationError, OutputError, mutation_error
from ._differences import central_differences


def difference_chunk(evaluate: Callable[[], float], work: np.ndarray, pristine: np.ndarray,
                     idx: np.ndarray, steps: np.ndarray) -> tuple:
    """Serial differences of one chunk on a worker's copy; the answer is data (see above)."""
    return worker_answer(lambda: central_differences(evaluate, work, idx, steps), work, pristine)


def worker_answer(run: Callable[[], tuple], work: np.ndarray, pristine: np.ndarray) -> tuple:
    """``run()`` on a worker's copy ``work`` of ``pristine``, its answer as data:
    ``("ok", *run())``, ``("error",
    payload)`` for :func:`rebuild_error`, or ``("mutated",)`` when ``f`` wrote into its input
    (the same bits, :func:`same_bits`, or ``run()`` saw it: an entry changed before its turn,
    a perturbed entry written)."""
    try:
        got = run()
    except InputMutationError:
        return ("mutated",)
    except FunctionError as err:
        if not same_bits(work, pristine):
            return ("mutated",)
        # f's own exception travels as the cause; gradcheck's refusal of f's output is the error itself
        cause = err if isinstance(err, OutputError) or err.__cause__ is None else err.__cause__
        return ("error", (err.index, err.side, picklable(cause), traceback.format_exc()))
    if not same_bits(work, pristine):
        return ("mutated",)
    return ("ok", *got)


def picklable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling, else a RuntimeError that carries its text."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")


def rebuild_error(payload: tuple, where: str = "in a worker process") -> FunctionError:
    """The FunctionError a worker reported as ``("error", payload)``, its traceback noted."""
    index, side, cause, worker_traceback = payload
    if isinstance(cause, OutputError):
        return cause  # says what f returned and where; the worker's traceback is gradcheck's own
    err = FunctionError(index, side, None, cause)
    err.__cause__ = cause
    if hasattr(err, "add_note"):  # Python >= 3.11
        err.add_note(f"raised {where}:\n{worker_traceback}")
    return err


def worker_mutation_error(first_entry: Any) -> InputMutationError:
    return mutation_error("f", f" (seen on a worker while differencing entries {first_entry} onwards)")
