"""A layer norm and its hand-written backward, precision-generic (they compute in the dtype
of ``x``): the float32 showcase of ``gradcheck demo``, the float32 rows of the tolerance
study and the tests. Its backward cancels terms as large as the gradient itself
(``g - mean(g) - xhat * mean(g * xhat)``), the hard case for a float32 tolerance.
``unbiased=True`` plants a classic bug: the variance divided by ``D - 1`` (``torch.var``'s
default) in the backward only, about ``1/D`` relative on every entry."""
from __future__ import annotations

import numpy as np

__all__ = ["layer_norm", "layer_norm_vjp"]


def _stats(x: np.ndarray, eps: float, unbiased: bool = False) -> tuple[np.ndarray, np.ndarray]:
    d = x.shape[-1]
    xc = x - x.mean(axis=-1, keepdims=True)
    var = (xc * xc).sum(axis=-1, keepdims=True) / (d - 1 if unbiased else d)
    return xc, 1 / np.sqrt(var + eps)


def layer_norm(x: np.ndarray, gain: np.ndarray, bias: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """``(x - mean) / sqrt(var + eps) * gain + bias`` over the last axis, in ``x``'s dtype
    (``gain`` and ``bias`` float32 or lower keep a float64 ``x`` float64).

    >>> x = np.array([[1.0, 2.0, 3.0]])
    >>> np.round(layer_norm(x, np.ones(3), np.zeros(3)), 4).tolist()
    [[-1.2247, 0.0, 1.2247]]
    """
    xc, rstd = _stats(x, eps)
    return xc * rstd * gain + bias


def layer_norm_vjp(x: np.ndarray, dy: np.ndarray, gain: np.ndarray, eps: float = 1e-5,
                   unbiased: bool = False) -> np.ndarray:
    """The gradient of ``sum(dy * layer_norm(x))`` with respect to ``x``, in ``x``'s dtype.
    ``unbiased=True`` is the planted bug (variance over ``D - 1``).

    >>> x = np.array([[1.0, 2.0, 4.0]])
    >>> bool(np.allclose(layer_norm_vjp(x, np.ones((1, 3)), np.ones(3)), 0.0))
    True
    """
    xc, rstd = _stats(x, eps, unbiased)
    g = (dy * gain).astype(x.dtype)
    xhat = xc * rstd
    return rstd * (g - g.mean(axis=-1, keepdims=True) - xhat * (g * xhat).mean(axis=-1, keepdims=True))
