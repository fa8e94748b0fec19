"""The dual-number reference backend: the claimed gradient comes from forward-mode dual
numbers, a different algorithm from finite differences, so agreement between the two
means something. Used by gradcheck's own tests as an independent oracle.

>>> import numpy as np, gradcheck
>>> gradcheck.check(lambda x: np.tanh(x).sum(), np.array([0.2, -1.0]), backend="dual").passed
True
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..dual import dual_gradient
from . import register
from ._numpy import control_function, control_input


class DualBackend:
    """Numpy functions differentiated by dual numbers (``grad`` must be None)."""

    name = "dual"
    mp_capable = True  # f is numpy code: the referee can run it at arbitrary precision

    def accepts(self, x: Any) -> bool:
        return isinstance(x, np.ndarray)

    def to_numpy(self, x: Any) -> np.ndarray:
        return np.asarray(x)

    def evaluate(self, f: Callable[..., Any], x: np.ndarray) -> np.ndarray:
        return np.asarray(f(x))

    def claimed_gradient(self, f, x, cotangent, grad) -> np.ndarray:
        if grad is not None:
            raise TypeError("the dual backend computes the gradient itself: pass grad=None")
        return dual_gradient(f, np.asarray(x, dtype=np.float64), cotangent)

    def control_problem(self):
        return control_function, control_input(), None


register("dual", DualBackend)
