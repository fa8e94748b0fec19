"""The @njit subjects the tests share: few functions, each compiled once per signature.

The compiled engine's kernels take ``f`` as an argument, so numba compiles them again for
every distinct njit ``f`` (2-5 s each; they cannot be cached on disk: see
``gradcheck._core.jit``). A misbehaviour a test needs (raising, writing into the input)
is therefore a branch of a shared subject, switched on by the input's values, rather than
a new function: a test module imports these instead of defining its own ``@njit``
functions. The subjects themselves are cached (``cache=True``): numba stores their machine
code beside this file for the next process.

* :func:`rosen`: scalar-valued, 1-d input (the compiled engine's scalar kernel);
* :func:`layer`: array-valued, 2-d input with 5 columns (its array kernel);
* :func:`rowwise`: array-valued, each output row depending on its input row only (the
  coloured kernel of ``independent_axes``).
"""
from __future__ import annotations

import numba
import numpy as np

#: Put last in :func:`rosen`'s input: f writes into x[0] at every call.
WRITES_ALWAYS = 7777.0
#: Put last in :func:`rosen`'s input: f writes 0 into x[1] whenever x[1] > 2 (only at the
#: perturbed point x[1] + h for x[1] just below 2: a write into the entry perturbed there).
WRITES_WHEN_PERTURBED = 8888.0


@numba.njit(cache=True)
def rosen(x):
    """Rosenbrock; raises when x[0] > 1e3 and is NaN when x[1] < -5 (domain tests); writes
    into x when its last entry is :data:`WRITES_ALWAYS` or :data:`WRITES_WHEN_PERTURBED`."""
    if x[x.size - 1] == WRITES_ALWAYS:
        x[0] += 1.0
    elif x[x.size - 1] == WRITES_WHEN_PERTURBED and x[1] > 2.0:
        x[1] = 0.0
    if x[0] > 1e3:
        raise ValueError("x[0] is above 1e3")
    if x[1] < -5.0:
        return np.nan
    s = 0.0
    for i in range(x.size - 1):
        a = x[i + 1] - x[i] * x[i]
        b = 1.0 - x[i]
        s += 100.0 * a * a + b * b
    return s


def rosen_grad(x):
    """The gradient of :func:`rosen` (numpy)."""
    g = np.zeros_like(x, dtype=np.float64)
    a = x[1:] - x[:-1] ** 2
    g[:-1] += -400.0 * x[:-1] * a - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * a
    return g


W = np.linspace(-1.0, 1.0, 15).reshape(5, 3)


@numba.njit(cache=True)
def layer(x):
    """An array output (x is n x 5): tanh(x @ W) scaled; a wrong shape when x[0,0] < -1e3,
    an exception when x[0,0] > 1e3."""
    if x[0, 0] > 1e3:
        raise ValueError("x[0, 0] is above 1e3")
    y = np.zeros((x.shape[0], W.shape[1]), dtype=x.dtype)
    for i in range(x.shape[0]):  # x @ W without BLAS (numba's needs scipy)
        for k in range(W.shape[0]):
            for j in range(W.shape[1]):
                y[i, j] += x[i, k] * W[k, j]
    y = np.tanh(y) * 1.5
    if x[0, 0] < -1e3:
        return y[1:]
    return y


def layer_vjp(x, v):
    """The VJP of :func:`layer` (numpy)."""
    t = np.tanh(x @ W)
    return ((1.0 - t * t) * 1.5 * v) @ W.T


@numba.njit(cache=True)
def rowwise(x):
    """``sin(x[i]) * sum(x[i])`` row by row (rows independent). Misbehaves past thresholds
    no ordinary input reaches: raises when x[0,0] > 10, writes into x[0,1] when
    x[0,0] < -10, writes 0 into x[3,0] when x[3,0] > 30."""
    if x[0, 0] > 10.0:
        raise ValueError("too big")
    if x[0, 0] < -10.0 and x.shape[1] > 1:
        x[0, 1] += 1.0
    if x.shape[0] > 3 and x[3, 0] > 30.0:
        x[3, 0] = 0.0
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = np.sin(x[i]) * x[i].sum()
    return out


def rowwise_vjp(x, g):
    """The VJP of :func:`rowwise` (numpy)."""
    s = x.sum(axis=1, keepdims=True)
    return g * np.cos(x) * s + (g * np.sin(x)).sum(axis=1, keepdims=True)
