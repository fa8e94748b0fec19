"""The Backend protocol: the only code that touches a framework."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Backend(Protocol):
    """Where arrays and the claimed gradient come from.

    The checker core sees numpy arrays only. A backend converts at the boundary, runs the
    user's function forward, and hands back the gradient *it claims* (a hand-written one,
    a framework's autodiff, dual numbers...). The numeric reference never goes through it.
    """

    name: str

    def accepts(self, x: Any) -> bool:
        """Whether this backend handles inputs like ``x`` (used for automatic choice)."""

    def to_numpy(self, x: Any) -> np.ndarray:
        """``x`` as a numpy array (no copy needed; the checker copies)."""

    def evaluate(self, f: Callable[..., Any], x: np.ndarray) -> np.ndarray:
        """``f`` at the numpy array ``x``, returned as a numpy array (0-d for scalars)."""

    def claimed_gradient(
        self, f: Callable[..., Any], x: np.ndarray, cotangent: np.ndarray | None, grad: Any
    ) -> np.ndarray:
        """The gradient this backend claims: of ``f`` if ``cotangent`` is None (scalar
        output), else of ``sum(cotangent * f(x))``. ``grad`` is what the user passed."""

    def control_problem(self) -> tuple[Callable[..., Any], np.ndarray, Any]:
        """A smooth test function written for this backend, an input, and the ``grad``
        argument that yields its correct gradient (for the negative control)."""


class Wrapping:
    """A backend that hands everything but its claimed gradient to the backend ``inner`` it
    wraps (a claim built from other derivatives, the negative control's corrupted claim)."""

    inner: Backend

    def accepts(self, x: Any) -> bool:
        return self.inner.accepts(x)

    def to_numpy(self, x: Any) -> np.ndarray:
        return self.inner.to_numpy(x)

    def evaluate(self, f: Callable[..., Any], x: np.ndarray) -> np.ndarray:
        return self.inner.evaluate(f, x)

    def control_problem(self) -> Any:
        return self.inner.control_problem()
