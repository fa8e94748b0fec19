"""What a worker answers for one coloured evaluation (processes and executor engines).

Transitional: the coloured rounds return one value per perturbed entry (its slice's), which
the evaluation layer's runners (:mod:`gradcheck._evaluate`) do not carry yet; until they do,
the colouring ships its points to workers itself, with this answer protocol. A worker answers
with data, never by raising: ``("ok", values)``, ``("error", (index, side, cause,
traceback))`` when ``f`` raised (FunctionError does not survive pickling), or ``("mutated",)``
when ``f`` wrote into the array it was given (seen mid-evaluation, or by comparing the worker's
copy with its pristine snapshot).
"""
from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

from .._core.arrays import same_bits
from .._core.errors import FunctionError, InputMutationError, OutputError, mutation_error
from .._evaluate import picklable


def worker_answer(run: Callable[[], tuple], work: np.ndarray, pristine: np.ndarray) -> tuple:
    """``run()`` on a worker's copy ``work`` of ``pristine``, its answer as data."""
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
