"""The numpy backend: the claimed gradient is the user's hand-written function or array."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._core.inputs import output_array
from .._core.jit import kernel


class NumpyBackend:
    """Functions of numpy arrays with a user-supplied gradient.

    ``grad`` may be an array, a function ``grad(x)`` (scalar-valued ``f``), or a VJP
    function ``grad(x, cotangent)`` (array-valued ``f``).
    """

    name = "numpy"
    mp_capable = True  # f is numpy code: the referee can run it at arbitrary precision

    def accepts(self, x: Any) -> bool:
        return isinstance(x, (np.ndarray, np.generic, float, int, list, tuple))

    def to_numpy(self, x: Any) -> np.ndarray:
        return np.asarray(x)

    def evaluate(self, f: Callable[..., Any], x: np.ndarray) -> np.ndarray:
        return output_array(f(x))  # a ragged list: gradcheck's conversion failed, not f

    def claimed_gradient(
        self, f: Callable[..., Any], x: np.ndarray, cotangent: np.ndarray | None, grad: Any
    ) -> np.ndarray:
        if grad is None:
            raise TypeError(
                "the numpy backend needs the claimed gradient: pass grad= (an array, grad(x), "
                "or for array outputs a VJP grad(x, cotangent)), or use backend='dual' to "
                "differentiate f with dual numbers"
            )
        if not callable(grad):
            return np.asarray(grad)
        if cotangent is None:
            return np.asarray(grad(x))
        return np.asarray(grad(x, cotangent))

    def control_problem(self) -> tuple[Callable[..., Any], np.ndarray, Any]:
        return control_function, control_input(), control_gradient

    def compiled_control_problem(self) -> tuple[Callable[..., Any], np.ndarray, Any]:
        """The control problem for ``engine="compiled"``: the same input and gradient with
        :func:`compiled_control_function`, the njit twin of :func:`control_function`
        (the compiled engine runs numba ``@njit`` functions only). Imports numba."""
        return compiled_control_function(), control_input(), control_gradient


def control_input() -> np.ndarray:
    """A fixed 3x4 input with entries of both signs and different magnitudes."""
    return np.array(
        [[0.3, -1.2, 0.7, 2.1], [-0.4, 0.9, -2.3, 0.05], [1.4, -0.6, 0.2, -1.7]], dtype=np.float64
    )


_W = np.linspace(-1.5, 1.3, 12).reshape(3, 4)
#: The control function's weights (its public name: the controls and the orders read them).
CONTROL_WEIGHTS = _W


def control_function(x):
    """Smooth, every entry matters: sum(w * tanh(x)) + 0.5 sum(x^2) + sum(x[0] * x[2]).

    Vectorized: ``x`` of shape ``(B, 3, 4)`` gives the ``B`` values, so the negative
    control also runs on the batched engine (``gradcheck_vectorized`` declares it).
    """
    rows = (-2, -1)
    return (
        (_W * np.tanh(x)).sum(axis=rows) + 0.5 * (x * x).sum(axis=rows)
        + (x[..., 0, :] * x[..., 2, :]).sum(axis=-1)
    )


control_function.gradcheck_vectorized = True  # type: ignore[attr-defined]


def _control_function_scalar(x):
    # control_function's math for one 3x4 input, as numba compiles it (no ``...``).
    return (_W * np.tanh(x)).sum() + 0.5 * (x * x).sum() + (x[0] * x[2]).sum()


_control_kernel = kernel()(_control_function_scalar)


def compiled_control_function():
    """The numba ``@njit`` twin of :func:`control_function` (same math, one ``(3, 4)``
    input, a float), for the negative control on the compiled engine.

    Built on the first call, with gradcheck's kernel options (:mod:`gradcheck._core.jit`):
    importing gradcheck does not import numba.
    """
    return _control_kernel.dispatcher


def control_gradient(x):
    """Closed-form gradient of :func:`control_function`."""
    g = _W * (1.0 - np.tanh(x) ** 2) + x
    g[0] = g[0] + x[2]
    g[2] = g[2] + x[0]
    return g
