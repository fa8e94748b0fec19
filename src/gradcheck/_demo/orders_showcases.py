"""Showcases of the orders (``gradcheck._orders``) for ``gradcheck demo``: a Taylor test and an adjoint test.

Each returns ``(result, behaved, what was expected)`` like the other showcases
(``gradcheck._demo.showcases``), which lists them.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .._orders import check_adjoint, taylor_test

_X = np.random.default_rng(4).standard_normal(8)
_M = np.random.default_rng(5).standard_normal((8, 8)) / 3


def _loss(x):
    """A scalar function with curvature in every direction: sum log cosh(M x) + |x|^4 / 4."""
    return np.sum(np.log(np.cosh(_M @ x))) + 0.25 * np.sum(x * x) ** 2


def _grad(x):
    return _M.T @ np.tanh(_M @ x) + np.sum(x * x) * x


def _hvp(x, v):
    t = np.tanh(_M @ x)
    return _M.T @ ((1 - t * t) * (_M @ v)) + np.sum(x * x) * v + 2 * (x @ v) * x


def taylor_correct() -> tuple[Any, bool, str]:
    r = taylor_test(_loss, _X, _grad, _hvp, name="Taylor test: log cosh(Mx) + |x|^4/4, gradient and Hessian by hand")
    ok = r.passed and abs(r.observed[0] - 2) < 0.1 and abs(r.observed[1] - 3) < 0.1
    return r, ok, "orders 2 (gradient) and 3 (with the Hessian): both claims right"


def taylor_wrong() -> tuple[Any, bool, str]:
    def wrong(x):  # planted: the |x|^4 term's gradient is off by 1e-4 relative
        return _M.T @ np.tanh(_M @ x) + (1 + 1e-4) * np.sum(x * x) * x

    r = taylor_test(_loss, _X, wrong, name="Taylor test: the same gradient, one term off by 1e-4")
    return r, r.status == "FAIL" and abs(r.observed[0] - 1) < 0.15, "order falls to 1: the gradient is wrong"


def taylor_pictures(result: Any, folder: Path) -> list[Path]:
    return [result.plot(folder / "taylor_test.png")]


def adjoint_transposed() -> tuple[Any, bool, str]:
    kernel = np.random.default_rng(6).standard_normal(9)
    x = np.random.default_rng(7).standard_normal(100_000) * 0.1

    def f(z):  # a 1-D convolution layer with tanh: 100,000 inputs
        return np.tanh(np.convolve(z, kernel, mode="full"))

    def jvp(z, t):
        return (1 - f(z) ** 2) * np.convolve(t, kernel, mode="full")

    def vjp_right(z, v):
        return np.correlate((1 - f(z) ** 2) * v, kernel, mode="valid")

    def vjp_wrong(z, v):  # planted: a convolution where the adjoint needs a correlation
        return np.convolve((1 - f(z) ** 2) * v, kernel, mode="valid")

    good = check_adjoint(jvp, vjp_right, x, f=f)
    bad = check_adjoint(jvp, vjp_wrong, x, f=f, name="adjoint test: tanh(conv(x)), 1e5 inputs, "
                        "adjoint convolves instead of correlating")
    ok = good.passed and not bad.passed and "vjp (adjoint) is inconsistent" in bad.blame.get("verdict", "")
    return bad, ok, "the correct pair passes; the wrong adjoint fails and is named (the jvp agrees with f)"
