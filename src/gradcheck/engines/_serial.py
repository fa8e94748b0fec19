"""The serial engine: any Python callable, perturbed in place on a private copy."""
from __future__ import annotations

from typing import Any

import numpy as np

from ._differences import central_differences


class SerialEngine:
    name = "serial"

    def __init__(self, problem: Any) -> None:
        self.problem = problem

    def differences(self, flat_indices: np.ndarray, steps: np.ndarray):
        return central_differences(self.problem.evaluate, self.problem.work, flat_indices, steps)
