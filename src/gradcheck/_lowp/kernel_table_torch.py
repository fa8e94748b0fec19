"""The verdict table's PyTorch CPU kernels (bfloat16 and float16), when torch is installed.

Each kernel takes and returns numpy arrays (bfloat16 through its bits); torch is imported
when a kernel runs. Backward kernels (softmax, layer norm) run torch's autograd on
low-precision tensors and return the input's gradient for the cotangent given last.
"""
from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import numpy as np

from . import definitions as d
from .kernel_inputs import Case, contraction, elementwise, rope_positions, rows, uniform
from .subjects import rope_math


def _tensor(a: np.ndarray) -> Any:
    import torch

    a = np.ascontiguousarray(a)
    if a.dtype.name == "bfloat16":
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(a.copy())


def _array(t: Any) -> np.ndarray:
    import ml_dtypes
    import torch

    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16).copy()
    return t.numpy().copy()


def _op(fn: Callable[..., Any]) -> Callable[..., np.ndarray]:
    """A torch op as a numpy kernel (no autograd, one thread: deterministic)."""
    def kernel(*xs: np.ndarray) -> np.ndarray:
        import torch

        with torch.no_grad():
            return _array(fn(*(_tensor(x) for x in xs)))
    return kernel


def _backward(fn: Callable[..., Any]) -> Callable[..., np.ndarray]:
    """The gradient of sum(g * fn(x)) with respect to x, by torch's autograd, in x's dtype."""
    def kernel(x: np.ndarray, g: np.ndarray) -> np.ndarray:
        t = _tensor(x).requires_grad_(True)
        fn(t).backward(_tensor(g))
        return _array(t.grad)
    return kernel


def _rope_float32(x: Any, positions: Any) -> Any:
    """A torch rotary embedding computing the angle, cos, sin and the rotation in float32,
    rounded once to x's dtype."""
    import torch

    half = x.shape[-1] // 2
    inv = 10000.0 ** (-torch.arange(0, half, dtype=torch.float32) * 2 / x.shape[-1])
    angle = positions.to(torch.float32)[..., None] * inv
    c, s = angle.cos(), angle.sin()
    x1, x2 = x[..., :half].float(), x[..., half:].float()
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1).to(x.dtype)


def _rope_hf(x: Any, positions: Any) -> Any:
    """The Hugging Face way: cos and sin rounded to x's dtype, the rotation in it."""
    import torch

    half = x.shape[-1] // 2
    inv = 1.0 / (10000.0 ** (torch.arange(0, x.shape[-1], 2, dtype=torch.float32) / x.shape[-1]))
    freqs = positions.to(torch.float32)[..., None] * inv
    emb = torch.cat([freqs, freqs], dim=-1)
    c, s = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * c + rotated * s


def torch_cases() -> list[Case]:
    """The PyTorch CPU cases ([] without torch)."""
    if importlib.util.find_spec("torch") is None:
        return []
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(1)
    ln = lambda t: F.layer_norm(t, (t.shape[-1],), eps=1e-5)  # noqa: E731
    bf = [
        Case("exp (torch)", "torch", np.exp, _op(torch.exp), uniform(-10, 10)),
        Case("tanh (torch)", "torch", np.tanh, _op(torch.tanh), elementwise(2.0)),
        Case("sigmoid (torch)", "torch", d.sigmoid, _op(torch.sigmoid), elementwise(3.0)),
        Case("silu (torch)", "torch", d.silu, _op(F.silu), elementwise(3.0)),
        Case("gelu (torch)", "torch", d.gelu, _op(F.gelu), elementwise(3.0, (-9, -4.5))),
        Case("gelu tanh (torch)", "torch", d.gelu_tanh, _op(lambda t: F.gelu(t, approximate="tanh")),
             elementwise(3.0, (-9, -4.5))),
        Case("erf (torch)", "torch", d.erf, _op(torch.erf), elementwise(1.5)),
        Case("softmax (torch)", "torch", d.softmax, _op(lambda t: torch.softmax(t, -1)), rows(3.0)),
        Case("log_softmax (torch)", "torch", d.log_softmax, _op(lambda t: torch.log_softmax(t, -1)), rows(3.0)),
        Case("layer_norm (torch)", "torch", d.layer_norm, _op(ln), rows(1.0)),
        Case("rms_norm (torch)", "torch", d.rms_norm, _op(lambda t: F.rms_norm(t, (t.shape[-1],), eps=1e-6)),
             rows(1.0)),
        Case("matmul K=1024 (torch)", "torch", d.matmul, _op(torch.matmul), contraction("matmul")),
        Case("sum of 4096 (torch)", "torch", d.total, _op(lambda t: t.sum(-1)), contraction("sum")),
        Case("cumsum of 4096 (torch)", "torch", d.cumulative, _op(lambda t: torch.cumsum(t, -1)),
             contraction("sum")),
        Case("rotary embedding, float32 (torch)", "torch", rope_math, _op(_rope_float32), rope_positions),
        Case("rotary embedding, Hugging Face style (torch)", "torch", rope_math, _op(_rope_hf), rope_positions),
        Case("softmax backward (torch)", "torch", d.softmax, _backward(lambda t: torch.softmax(t, -1)),
             rows(3.0, cotangent=True), of="gradient"),
        Case("layer_norm backward (torch)", "torch", d.layer_norm, _backward(ln), rows(1.0, cotangent=True),
             of="gradient"),
    ]
    fp16 = [
        Case("exp (torch float16)", "torch", np.exp, _op(torch.exp), uniform(-10, 10, "float16"), "float16"),
        Case("gelu (torch float16)", "torch", d.gelu, _op(F.gelu), elementwise(3.0, (-9, -4.5), "float16"), "float16"),
        Case("softmax (torch float16)", "torch", d.softmax, _op(lambda t: torch.softmax(t, -1)),
             rows(3.0, fmt="float16"), "float16"),
        Case("matmul K=1024 (torch float16)", "torch", d.matmul, _op(torch.matmul),
             contraction("matmul", "float16"), "float16"),
    ]
    return bf + fp16


__all__ = ["torch_cases"]
