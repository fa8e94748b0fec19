"""A zoo of gradient problems with closed-form derivatives, planted bugs and clean traps.

Each case gives f, x, the correct claimed gradient (closed form, written independently
of the checker) and a buggy one together with the exact set of entries the bug touches.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

rng = np.random.default_rng(20261129)


@dataclass
class Case:
    name: str
    f: Callable[..., Any]
    x: np.ndarray
    grad: Callable[..., Any]
    buggy: Callable[..., Any] | None = None
    bug_entries: set = field(default_factory=set)
    config: Any = None


def _with(g_fn, mutate):
    def buggy(*args):
        g = np.array(g_fn(*args), copy=True)
        mutate(g)
        return g
    return buggy


def _set(ix, factor):
    def mutate(g):
        g[ix] = g[ix] * factor
    return mutate


# 1. single entry, relative 1e-4
X1 = rng.standard_normal((7, 5))
f1 = lambda x: (np.sin(x) * x**2).sum()
g1 = lambda x: np.cos(x) * x**2 + 2 * x * np.sin(x)

# 2. a product coupling every entry: f = prod-free but dense
X2 = rng.standard_normal((4, 6))
f2 = lambda x: np.tanh(x).sum() * (x**2).sum()
g2 = lambda x: (1 - np.tanh(x) ** 2) * (x**2).sum() + np.tanh(x).sum() * 2 * x

# 3. matrix function: f(W) = sum(tanh(A @ W) * B)
A3 = rng.standard_normal((5, 4))
B3 = rng.standard_normal((5, 3))
X3 = rng.standard_normal((4, 3))
f3 = lambda w: (np.tanh(A3 @ w) * B3).sum()
g3 = lambda w: A3.T @ ((1 - np.tanh(A3 @ w) ** 2) * B3)

# 4. zero true gradient on part of x
X4 = rng.standard_normal(6)
f4 = lambda x: (x[:3] ** 2).sum() + np.exp(x[0])
def g4(x):
    g = np.zeros_like(x)
    g[:3] = 2 * x[:3]
    g[0] += np.exp(x[0])
    return g

# 5. float32 function and inputs
X5 = rng.standard_normal((8, 8)).astype(np.float32)
f5 = lambda x: (np.tanh(x) * x).sum()
g5 = lambda x: ((1 - np.tanh(x) ** 2) * x + np.tanh(x)).astype(np.float32)

# 6. large dynamic range of x (and of the gradient)
X6 = np.concatenate([np.logspace(-6, 6, 13), -np.logspace(-5, 5, 11)])
f6 = lambda x: np.log1p(x**2).sum()
g6 = lambda x: 2 * x / (1 + x**2)

# 7. softmax: an array output whose sum is constant
X7 = rng.standard_normal(9)
def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()
def softmax_vjp(x, v):
    s = softmax(x)
    return s * (v - (v * s).sum())
def softmax_vjp_bug(x, v):  # right for v = ones, wrong for any other cotangent
    s = softmax(x)
    return s * (v - v.mean())

# 8. a row missing a term: f(X) = sum(X @ C) + sum(X**3)/3, grad row 2 forgets X**2
C8 = rng.standard_normal((5, 2))
X8 = rng.standard_normal((4, 5))
f8 = lambda x: (x @ C8).sum() + (x**3).sum() / 3
g8 = lambda x: np.broadcast_to(C8.sum(axis=1), x.shape) + x**2
def g8_bug(x):
    g = np.array(g8(x))
    g[2] -= x[2] ** 2
    return g

# 9. index shift (off by one in a loop)
X9 = rng.standard_normal(10)
f9 = lambda x: (np.exp(0.3 * x) * np.arange(1, 11)).sum()
g9 = lambda x: 0.3 * np.exp(0.3 * x) * np.arange(1, 11)
g9_bug = lambda x: 0.3 * np.exp(0.3 * x) * np.arange(0, 10)  # coefficient index shifted

# 10. log near zero: the default step would leave the domain
X10 = np.array([1e-8, 3e-7, 0.5, 2.0])
f10 = lambda x: np.log(x).sum()
g10 = lambda x: 1.0 / x

CASES = [
    Case("single entry 1e-4", f1, X1, g1, _with(g1, _set((3, 2), 1 + 1e-4)), {(3, 2)}),
    Case("scale 1e-5 on every entry", f2, X2, g2, lambda x: g2(x) * (1 + 1e-5),
         {tuple(ix) for ix in np.ndindex(X2.shape)}),
    Case("matmul tanh, one entry sign", f3, X3, g3, _with(g3, _set((1, 2), -1.0)), {(1, 2)}),
    Case("zero true gradient", f4, X4, g4, _with(g4, lambda g: g.__setitem__(4, 1e-3)), {(4,)}),
    Case("float32", f5, X5, g5, _with(g5, _set((6, 1), 1.1)), {(6, 1)}),
    Case("large dynamic range", f6, X6, g6, _with(g6, _set(5, 1 + 1e-4)), {(5,)}),
    Case("softmax (constant sum)", softmax, X7, softmax_vjp, softmax_vjp_bug,
         {(i,) for i in range(9)}),
    Case("one row", f8, X8, g8, g8_bug, {(2, j) for j in range(5)}),
    Case("index shift", f9, X9, g9, g9_bug, {(i,) for i in range(10)}),
    Case("log near zero", f10, X10, g10, _with(g10, _set(2, 1 + 1e-5)), {(2,)}),
]
