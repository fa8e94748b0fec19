"""A tanh MLP in numpy with a hand-written backward: ``layers`` layers ``width x width``, each
a weight ``w{i}`` and a bias ``b{i}`` (``2 * layers`` names), sized by arguments.

The subject of the whole-model figures: 6 layers 256 x 256 is 12 names and 394,752 entries;
24 and 74 layers give 48 and 148 names. ``loss(params) = sum(tanh(... tanh(X w0 + b0) ...) * T)``
over a fixed batch ``X`` and target weights ``T``.

>>> params, loss, grads = make_mlp(layers=2, width=4, batch=3)
>>> sorted(params), round(loss(params), 6) == round(loss(params), 6)
(['b0', 'b1', 'w0', 'w1'], True)
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

Params = dict[str, np.ndarray]


def make_mlp(layers: int = 6, width: int = 256, batch: int = 32, seed: int = 0
             ) -> tuple[Params, Callable[[Params], float], Callable[[Params], Params]]:
    """``(params, loss, grads)``: float64 parameters in forward order (``w0, b0, w1, ...``),
    the loss of a dict, and its hand-written gradient (same keys and order)."""
    rng = np.random.default_rng(seed)
    x_in, target = rng.standard_normal((batch, width)), rng.standard_normal((batch, width))
    params: Params = {}
    for i in range(layers):
        params[f"w{i}"] = rng.standard_normal((width, width)) / np.sqrt(width)
        params[f"b{i}"] = 0.1 * rng.standard_normal(width)

    def loss(p: Params) -> float:
        h = x_in
        for i in range(layers):
            h = np.tanh(h @ p[f"w{i}"] + p[f"b{i}"])
        return float((h * target).sum())

    def grads(p: Params) -> Params:
        hs = [x_in]
        for i in range(layers):
            hs.append(np.tanh(hs[-1] @ p[f"w{i}"] + p[f"b{i}"]))
        out: Params = {}
        d = target
        for i in reversed(range(layers)):
            dz = d * (1.0 - hs[i + 1] ** 2)
            out[f"w{i}"], out[f"b{i}"] = hs[i].T @ dz, dz.sum(axis=0)
            d = dz @ p[f"w{i}"].T
        return {n: out[n] for n in p}

    return params, loss, grads
