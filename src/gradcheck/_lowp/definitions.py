"""Mathematical definitions of common low-precision kernels, written for ``dispute``.

Each is plain numpy and precision-generic: every constant is built from the input's own
number type (``one = x * 0 + 1``, ``pi = arccos(-one)``), so on arbitrary-precision arrays
(``gradcheck.mp``) the constants are as exact as the rest, on float32 arrays everything stays
float32, and on float64 dual numbers (the sensitivities behind dispute's bound) the
derivatives flow. ``erf`` and ``erfc``, which numpy has no ufunc for, call mpmath through
:func:`gradcheck.mp.context` on arbitrary-precision arrays (the dispute's own precision) and
scipy on float arrays.

The spelling does not matter to ``dispute``'s verdict (gelu with ``erf`` or ``erfc``,
tanh-gelu with ``tanh`` or a sigmoid, softmax with or without max subtraction), so these
are written the way the frameworks document them. Normalizations act on the last axis.

>>> import numpy as np
>>> float(gelu(np.array([1.0]))[0]), float(gelu_erfc(np.array([1.0]))[0])
(0.8413447460685429, 0.8413447460685429)
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..dual import DualArray


def _one(x: np.ndarray | DualArray) -> np.ndarray | DualArray:
    """1 in ``x``'s number type, shaped (1,)."""
    return x.reshape(-1)[:1] * 0 + 1


def _special(x: np.ndarray | DualArray, name: str) -> np.ndarray | DualArray:
    """``erf`` / ``erfc`` of ``x``: mpmath at the running computation's precision on
    arbitrary-precision arrays, scipy (or the math module, elementwise) on float arrays."""
    if x.dtype == object:
        from ..mp import context

        return np.frompyfunc(getattr(context(), name), 1, 1)(x)
    try:
        import scipy.special  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - scipy is optional
        return np.vectorize(getattr(math, name), otypes=[np.float64])(x).astype(x.dtype)
    return getattr(scipy.special, name)(x)


def erf(x: np.ndarray | DualArray) -> np.ndarray | DualArray:
    """The error function."""
    return _special(x, "erf")


def erfc(x: np.ndarray | DualArray) -> np.ndarray | DualArray:
    """The complementary error function."""
    return _special(x, "erfc")


def sigmoid(x: np.ndarray | DualArray) -> np.ndarray | DualArray:
    """``1 / (1 + exp(-x))``."""
    return 1 / (1 + np.exp(-x))


def silu(x: np.ndarray | DualArray) -> np.ndarray | DualArray:
    """``x * sigmoid(x)``."""
    return x / (1 + np.exp(-x))


def gelu(x: np.ndarray | DualArray) -> np.ndarray | DualArray:
    """``x * (1 + erf(x / sqrt 2)) / 2`` (PyTorch's ``F.gelu``)."""
    return x * (1 + erf(x / np.sqrt(2 * _one(x)))) / 2


def gelu_erfc(x: np.ndarray | DualArray) -> np.ndarray | DualArray:
    """The same function as :func:`gelu`, written with ``erfc``."""
    return x * erfc(-x / np.sqrt(2 * _one(x))) / 2


def gelu_tanh(x: np.ndarray | DualArray) -> np.ndarray | DualArray:
    """``x * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2`` (``approximate='tanh'``)."""
    one = _one(x)
    inner = np.sqrt(2 / np.arccos(-one)) * (x + (one * 44715 / 1000000) * x ** 3)
    return x * (1 + np.tanh(inner)) / 2


def softmax(x: np.ndarray | DualArray) -> np.ndarray | DualArray:
    """Softmax over the last axis."""
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def log_softmax(x: np.ndarray | DualArray) -> np.ndarray | DualArray:
    """Log-softmax over the last axis."""
    s = x - x.max(axis=-1, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=-1, keepdims=True))


def layer_norm(x: np.ndarray | DualArray, eps: float = 1e-5) -> np.ndarray | DualArray:
    """``(x - mean) / sqrt(var + eps)`` over the last axis (no affine part; ``eps`` as an
    exact fraction ``1 / round(1 / eps)``)."""
    mu = x.mean(axis=-1, keepdims=True)
    d = x - mu
    return d / np.sqrt((d * d).mean(axis=-1, keepdims=True) + _one(x) / round(1 / eps))


def rms_norm(x: np.ndarray | DualArray, eps: float = 1e-6) -> np.ndarray | DualArray:
    """``x / sqrt(mean(x^2) + eps)`` over the last axis (no weight; ``eps`` as
    :func:`layer_norm`)."""
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + _one(x) / round(1 / eps))


def matmul(a: np.ndarray | DualArray, b: np.ndarray | DualArray) -> np.ndarray | DualArray:
    """``a @ b`` (a contraction: exact kernels)."""
    return a @ b


def total(x: np.ndarray | DualArray) -> np.ndarray | DualArray:
    """The sum over the last axis (a contraction)."""
    return x.sum(axis=-1)


def cumulative(x: np.ndarray | DualArray) -> np.ndarray | DualArray:
    """The cumulative sum over the last axis (a contraction)."""
    return np.cumsum(x, axis=-1)


__all__ = ["erf", "erfc", "sigmoid", "silu", "gelu", "gelu_erfc", "gelu_tanh", "softmax",
           "log_softmax", "layer_norm", "rms_norm", "matmul", "total", "cumulative"]
