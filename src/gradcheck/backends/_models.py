"""A model as the core sees it: a loss of a dict of numpy arrays, the arrays, the claim.

:class:`ModelProblem` is what the framework adapters (``_torch_model``, ``_jax_model``) hand
to ``check_params``: the loss as a function of float arrays by name, the parameters as numpy
arrays (read-only views of the model's own memory where their dtype is the check's, private
float64 copies where a float32 model is checked in float64), the framework's gradient as the
claim, and a ``verify`` that says what (if anything) the check changed in the model.
Only numpy here; the adapters import their framework.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: A float32 model is checked in float64 when its loss, given float64 parameters, returns a
#: float64 value within this share of its float32 value (the same function: precision-generic).
SAME_FUNCTION = 1e-3


@dataclass
class ModelProblem:
    """A model's loss, parameters and claimed gradient, as numpy (see the module docstring)."""

    loss: Callable[[Mapping[str, np.ndarray]], Any]   # a float, or a 0-d array of the loss's dtype
    params: dict[str, np.ndarray]
    grads: dict[str, np.ndarray]
    framework: str
    notes: list[str] = field(default_factory=list)
    verify: Callable[[], list[str]] = lambda: []  # what the check changed in the model (empty: nothing)


def read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a`` (check_params never writes it; a loss that tries is told)."""
    view = a.view()
    view.flags.writeable = False
    return view


def same_function(value32: float, value64: Any) -> bool:
    """Whether a float64 evaluation computes the float32 model's function (see
    :data:`SAME_FUNCTION`)."""
    v = np.asarray(value64)
    return bool(v.dtype == np.float64 and np.isfinite(v) and np.isfinite(value32)
                and abs(float(v) - value32) <= SAME_FUNCTION * max(1.0, abs(value32)))


def precision_note(framework: str, generic: bool, why: str = "") -> str:
    if generic:
        return (f"the {framework} model holds float32 parameters and its loss is precision-generic (given "
                "float64 parameters it computes the same function in float64): it is checked in float64, "
                "the claim being the float64 gradient of the same code")
    return (f"the {framework} model holds float32 parameters and its loss is not precision-generic ({why}): "
            "it is checked in float32, at check's float32 resolution")
