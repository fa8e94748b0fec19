"""The verdict table's vocabulary: a :class:`Case` (a kernel, the definition that judges
it, its inputs) and the inputs at two scales, ``"test"`` (small) and ``"table"``
(``benchmarks/lowp_table.py``). The cases themselves: :mod:`gradcheck._lowp.kernel_table`.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .._core.formats import round_to_format
from .subjects import matvec_inputs, rope_inputs


@dataclass(frozen=True)
class Case:
    """``kernel(*inputs(scale, seed))`` is the candidate (an array of ``dtype`` values),
    ``definition`` what dispute judges it by (``of="gradient"``: the kernel returns the
    gradient of ``sum(cotangent * definition(*inputs))`` with respect to input 0, the
    cotangent being the last of the inputs). ``source``: torch, C, numpy or naive."""

    name: str
    source: str
    definition: Callable[..., object]
    kernel: Callable[..., np.ndarray]
    inputs: Callable[[str, int], tuple[np.ndarray, ...]]
    dtype: str = "bfloat16"
    of: str = "value"


def rounded(y: ArrayLike, fmt: str = "bfloat16") -> np.ndarray:
    """``y`` (float32 or float64) rounded once to ``fmt``."""
    return round_to_format(np.asarray(y, dtype=np.float64) if np.asarray(y).dtype.kind == "f"
                           else np.asarray(y), fmt, as_dtype=True)


# -- inputs ---------------------------------------------------------------------------------------


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def elementwise(scale_sigma: float, tail: tuple[float, float] | None = None,
                fmt: str = "bfloat16") -> Callable[[str, int], tuple[np.ndarray, ...]]:
    """Normal inputs (and, with ``tail``, an evenly spaced stretch of the negative tail)."""
    def make(scale: str, seed: int) -> tuple[np.ndarray, ...]:
        n = 256 if scale == "test" else 65536
        x = _rng(seed).standard_normal(n) * scale_sigma
        if tail is not None:
            x[: n // 8] = np.linspace(*tail, n // 8)
        return (rounded(x, fmt),)
    return make


def uniform(lo: float, hi: float, fmt: str = "bfloat16") -> Callable[[str, int], tuple[np.ndarray, ...]]:
    def make(scale: str, seed: int) -> tuple[np.ndarray, ...]:
        return (rounded(_rng(seed).uniform(lo, hi, 256 if scale == "test" else 65536), fmt),)
    return make


def rows(sigma: float, offset: float = 0.0, fmt: str = "bfloat16",
         cotangent: bool = False) -> Callable[[str, int], tuple[np.ndarray, ...]]:
    """Rows for softmax and normalizations (8 x 32 for tests, 256 x 256 for the table; with a
    cotangent, for a gradient, 32 x 64)."""
    def make(scale: str, seed: int) -> tuple[np.ndarray, ...]:
        # gradients cost a few reverse passes at arbitrary precision: smaller at table scale
        shape = (8, 32) if scale == "test" else ((32, 64) if cotangent else (256, 256))
        rng = _rng(seed)
        x = rounded(rng.standard_normal(shape) * sigma + offset, fmt)
        return (x, rounded(rng.standard_normal(shape), fmt)) if cotangent else (x,)
    return make


def contraction(kind: str, fmt: str = "bfloat16") -> Callable[[str, int], tuple[np.ndarray, ...]]:
    """Matmul with K = 1,024, or rows of 4,096 to sum."""
    def make(scale: str, seed: int) -> tuple[np.ndarray, ...]:
        rng = _rng(seed)
        if kind == "matmul":
            m = 4 if scale == "test" else 32
            return (rounded(rng.standard_normal((m, 1024)), fmt), rounded(rng.standard_normal((1024, m)), fmt))
        return (rounded(rng.standard_normal((2 if scale == "test" else 16, 4096)), fmt),)
    return make


def rope_positions(scale: str, seed: int) -> tuple[np.ndarray, ...]:
    return rope_inputs(rows=16 if scale == "test" else 512, dim=64, start=4000, stop=8000, seed=seed)


def matvec(scale: str, seed: int) -> tuple[np.ndarray, ...]:
    return matvec_inputs(rows=8 if scale == "test" else 256, n=1024, seed=seed)


__all__ = ["Case", "rounded", "elementwise", "uniform", "rows", "contraction", "rope_positions", "matvec"]
