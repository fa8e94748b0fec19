"""The verdict table's kernels: real low-precision kernels and deliberately naive ones.

Each :class:`Case` is a kernel (PyTorch CPU when installed, the project's C kernels, numpy),
the definition ``dispute`` judges it by (:mod:`gradcheck._lowp.definitions`), and inputs at
two scales: ``"test"`` (small: the tests, which compute their own mpmath truth for each) and
``"table"`` (``benchmarks/lowp_table.py``, which writes ``docs/lowp_table.md``). Inputs
cover the hard regions: gelu's far negative tail, rotary positions near 4,000 to 8,000,
rows whose maximum dominates.

The naive kernels make a mistake on purpose (a running sum kept in bfloat16, ``1 + erf``
cancelling in float32, exponentials that overflow float16, a one-pass variance, an angle
rounded to bfloat16, ...): a verdict table that could not call them broken would prove
nothing.

>>> [c.name for c in cases(torch=False)][:2]
['exp (numpy float32)', 'tanh (numpy float32)']
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from . import definitions as d
from .kernel_inputs import (
    Case,
    contraction,
    elementwise,
    matvec,
    rope_positions,
    rounded,
    rows,
    uniform,
)
from .kernel_table_torch import torch_cases
from .subjects import matvec_fast, matvec_math, matvec_reference, rope_fast, rope_math, rope_reference

# -- numpy float32 kernels (accurate: float32 arithmetic, one rounding) and naive ones -------------


def _f32(*xs: np.ndarray) -> list[np.ndarray]:
    return [np.asarray(x).astype(np.float32) for x in xs]


def _running(values: np.ndarray, fmt: str) -> np.ndarray:
    """Prefix sums along the last axis with the running sum rounded to ``fmt`` at each step."""
    acc = np.zeros(values.shape[:-1], dtype=np.float32)
    out = np.empty(values.shape, dtype=np.float32)
    for k in range(values.shape[-1]):
        acc = rounded(acc + values[..., k].astype(np.float32), fmt).astype(np.float32)
        out[..., k] = acc
    return out


def _np_gelu_tanh32(x: np.ndarray) -> np.ndarray:
    """tanh-gelu in float32 as x * sigmoid(2 inner), the sigmoid from exp(-2 |inner|) (no
    cancellation in the tail, no overflow: 1 + exp(-2 inner) overflows float32 past x = -10)."""
    (v,) = _f32(x)
    inner = np.float32(np.sqrt(2 / np.pi)) * (v + np.float32(0.044715) * v ** 3)
    e = np.exp(-2 * np.abs(inner))
    return v * np.where(inner >= 0, 1 / (1 + e), e / (1 + e))


def _np_layer_norm32(x: np.ndarray) -> np.ndarray:
    (v,) = _f32(x)
    dv = v - v.mean(axis=-1, keepdims=True)
    return dv / np.sqrt((dv * dv).mean(axis=-1, keepdims=True) + np.float32(1e-5))


def _np_log_softmax32(x: np.ndarray) -> np.ndarray:
    (v,) = _f32(x)
    s = v - v.max(axis=-1, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=-1, keepdims=True))


def _naive_layer_norm(x: np.ndarray) -> np.ndarray:
    """One pass, moments kept in bfloat16: var = E[x^2] - E[x]^2 cancels (inputs near 4)."""
    (v,) = _f32(x)
    n = np.float32(v.shape[-1])
    mu = _running(v, "bfloat16")[..., -1:] / n
    var = _running(v * v, "bfloat16")[..., -1:] / n - mu * mu
    return (v - mu) / np.sqrt(np.maximum(var, 0) + np.float32(1e-5))


def _naive_softmax16(x: np.ndarray) -> np.ndarray:
    """No max subtraction, in float16: exp overflows past 11."""
    v = np.asarray(x).astype(np.float16)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(v)
        return e / e.sum(axis=-1, keepdims=True, dtype=np.float16)


def _naive_exp(x: np.ndarray) -> np.ndarray:
    """exp(x) = exp2(x log2 e) with the product rounded to bfloat16."""
    (v,) = _f32(x)
    return np.exp2(rounded(v * np.float32(np.log2(np.e))).astype(np.float32))


def _naive_tanh(x: np.ndarray) -> np.ndarray:
    """(e^2x - 1) / (e^2x + 1) with e^2x in bfloat16: cancels near zero."""
    (v,) = _f32(x)
    with np.errstate(over="ignore", invalid="ignore"):
        e = rounded(np.exp(2 * v)).astype(np.float32)
        return (e - 1) / (e + 1)


def _naive_rms_norm(x: np.ndarray) -> np.ndarray:
    """Squares in float16: they overflow past 256 (inputs of a few hundred)."""
    v = np.asarray(x).astype(np.float16)
    with np.errstate(over="ignore", invalid="ignore"):
        ms = (v * v).astype(np.float32).mean(axis=-1, keepdims=True)
        return v.astype(np.float32) / np.sqrt(ms + np.float32(1e-6))


def _naive_matmul16(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    prods = a.astype(np.float32)[:, :, None] * b.astype(np.float32)[None, :, :]
    return _running(np.moveaxis(prods, 1, -1), "float16")[..., -1]


def _naive_log_softmax(x: np.ndarray) -> np.ndarray:
    """log(softmax(x)) with the probabilities rounded to bfloat16 first."""
    (v,) = _f32(x)
    e = np.exp(v - v.max(axis=-1, keepdims=True))
    p = rounded(e / e.sum(axis=-1, keepdims=True)).astype(np.float32)
    with np.errstate(divide="ignore"):
        return np.log(p)


def numpy_cases() -> list[Case]:
    """Accurate float32 numpy kernels (each rounded once to bfloat16)."""
    def once(fn: Callable[..., ArrayLike]) -> Callable[..., np.ndarray]:
        return lambda *xs: rounded(fn(*_f32(*xs)))

    return [
        Case("exp (numpy float32)", "numpy", np.exp, once(np.exp), uniform(-10, 10)),
        Case("tanh (numpy float32)", "numpy", np.tanh, once(np.tanh), elementwise(2.0)),
        Case("sigmoid (numpy float32)", "numpy", d.sigmoid, once(d.sigmoid), elementwise(3.0)),
        Case("gelu (erfc form, float32)", "numpy", d.gelu, once(d.gelu_erfc), elementwise(3.0, (-9, -4.5))),
        Case("gelu tanh (sigmoid form, float32)", "numpy", d.gelu_tanh,
             lambda x: rounded(_np_gelu_tanh32(x)), elementwise(3.0, (-9, -4.5))),
        Case("softmax (numpy float32)", "numpy", d.softmax, once(d.softmax), rows(3.0)),
        Case("log_softmax (numpy float32)", "numpy", d.log_softmax, lambda x: rounded(_np_log_softmax32(x)), rows(3.0)),
        Case("layer_norm (numpy float32)", "numpy", d.layer_norm, lambda x: rounded(_np_layer_norm32(x)), rows(1.0)),
        Case("matmul K=1024 (numpy float32)", "numpy", d.matmul, once(np.matmul), contraction("matmul")),
        Case("sum of 4096 (numpy float32)", "numpy", d.total, once(lambda v: v.sum(axis=-1)), contraction("sum")),
        Case("cumsum of 4096 (numpy float32)", "numpy", d.cumulative, once(lambda v: np.cumsum(v, axis=-1)),
             contraction("sum")),
    ]


def c_cases() -> list[Case]:
    """The project's C subject kernels (kernels/*.c)."""
    return [
        Case("rotary embedding, float32 angle (C)", "C", rope_math, rope_fast, rope_positions),
        Case("matvec K=1024, float32 accumulation (C)", "C", matvec_math, matvec_reference, matvec),
    ]


def naive_cases() -> list[Case]:
    """Kernels that make a mistake on purpose: each must be called broken."""
    return [
        Case("rotary embedding, bfloat16 angle (C)", "naive", rope_math, rope_reference, rope_positions),
        Case("matvec, bfloat16 accumulation (C)", "naive", matvec_math, matvec_fast, matvec),
        Case("sum, bfloat16 running sum", "naive", d.total,
             lambda x: rounded(_running(x, "bfloat16")[..., -1]), contraction("sum")),
        Case("cumsum, bfloat16 running sum", "naive", d.cumulative,
             lambda x: rounded(_running(x, "bfloat16")), contraction("sum")),
        Case("gelu, 1 + erf in float32", "naive", d.gelu, lambda x: rounded(d.gelu(*_f32(x))),
             elementwise(3.0, (-9, -4.5))),
        Case("gelu tanh, 1 + tanh in float32", "naive", d.gelu_tanh, lambda x: rounded(d.gelu_tanh(*_f32(x))),
             elementwise(3.0, (-9, -4.5))),
        Case("exp via exp2, product in bfloat16", "naive", np.exp, lambda x: rounded(_naive_exp(x)), uniform(-10, 10)),
        Case("softmax without max, float16", "naive", d.softmax, _naive_softmax16, rows(6.0, fmt="float16"),
             dtype="float16"),
        Case("layer_norm, one-pass variance in bfloat16", "naive", d.layer_norm,
             lambda x: rounded(_naive_layer_norm(x)), rows(1.0, offset=4.0)),
        Case("log(softmax) in bfloat16", "naive", d.log_softmax, lambda x: rounded(_naive_log_softmax(x)), rows(8.0)),
        Case("tanh via exp, bfloat16", "naive", np.tanh, lambda x: rounded(_naive_tanh(x)), elementwise(2.0)),
        Case("rms_norm, squares in float16", "naive", d.rms_norm, lambda x: rounded(_naive_rms_norm(x)),
             rows(200.0)),
        Case("matmul, float16 accumulation", "naive", d.matmul, lambda a, b: rounded(_naive_matmul16(a, b), "float16"),
             contraction("matmul", "float16"), dtype="float16"),
    ]


def cases(*, torch: bool = True) -> list[Case]:
    """Every case: numpy, C, naive, and PyTorch's when ``torch`` and torch is installed."""
    found = numpy_cases() + c_cases() + naive_cases()
    return found + (torch_cases() if torch else [])


__all__ = ["Case", "cases", "numpy_cases", "c_cases", "naive_cases", "rounded"]
