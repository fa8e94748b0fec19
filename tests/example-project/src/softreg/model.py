"""A softmax-regression layer: ``logits = x @ W + b``, mean cross-entropy loss, and the
backward pass written by hand (the code a gradient checker exists for)."""
from __future__ import annotations

import numpy as np


def softmax(z: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, shifted by the row maximum for stability."""
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def softmax_vjp(z: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``v`` pulled back through :func:`softmax` at ``z``: ``y * (v - sum(v * y))``."""
    y = softmax(z)
    return y * (v - (v * y).sum(axis=-1, keepdims=True))


class SoftmaxRegression:
    """Parameters ``W`` (features x classes) and ``b`` (classes) in a dict, so a checker
    can perturb them in place; ``loss`` and ``grads`` take the dict explicitly."""

    def __init__(self, n_features: int, n_classes: int, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.params = {
            "W": rng.standard_normal((n_features, n_classes)) / np.sqrt(n_features),
            "b": 0.1 * rng.standard_normal(n_classes),
        }

    @staticmethod
    def logits(params: dict, x: np.ndarray) -> np.ndarray:
        return x @ params["W"] + params["b"]

    @classmethod
    def loss(cls, params: dict, x: np.ndarray, labels: np.ndarray) -> float:
        """Mean cross-entropy of the integer ``labels``."""
        z = cls.logits(params, x)
        z = z - z.max(axis=1, keepdims=True)
        log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        return float(-log_p[np.arange(len(labels)), labels].mean())

    @classmethod
    def backward(cls, params: dict, x: np.ndarray, labels: np.ndarray) -> dict:
        """Gradients of :meth:`loss` with respect to ``W``, ``b`` and the input ``x``."""
        n = len(labels)
        dz = softmax(cls.logits(params, x))
        dz[np.arange(n), labels] -= 1.0
        dz /= n
        return {"W": x.T @ dz, "b": dz.sum(axis=0), "x": dz @ params["W"].T}
