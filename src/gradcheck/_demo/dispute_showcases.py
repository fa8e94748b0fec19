"""The dispute showcases of issue 15: a gradient dispute and a timed dispute."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .._core.formats import round_to_format
from .._lowp.dispute import dispute
from .._lowp.result import DisputeResult
from .._lowp.subjects import matvec_fast, matvec_inputs, matvec_math, rope_inputs

if TYPE_CHECKING:
    from ..dual import DualArray

_DIM = 64
# The frequency table as people write it: float64, captured by the definition.
_INV_FREQ = 10000.0 ** (-np.arange(0, _DIM, 2) / _DIM)


def _bf16(y: ArrayLike) -> np.ndarray:
    return round_to_format(np.asarray(y, dtype=np.float64), "bfloat16", as_dtype=True)


def rope_table(x: np.ndarray | DualArray, positions: np.ndarray | DualArray) -> np.ndarray | DualArray:
    """Rotary embedding with a captured float64 frequency table (the definition)."""
    half = x.shape[-1] // 2
    angle = positions[..., None] * _INV_FREQ
    c, s = np.cos(angle), np.sin(angle)
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)


def rope_backward(g: np.ndarray, positions: np.ndarray, *, angle_in_bf16: bool) -> np.ndarray:
    """A bfloat16 rotary backward: the inverse rotation in float32, rounded once; the
    fallback rounds the angle to bfloat16 first."""
    half = g.shape[-1] // 2
    angle = positions[..., None].astype(np.float32) * _INV_FREQ.astype(np.float32)
    if angle_in_bf16:
        angle = _bf16(angle).astype(np.float32)
    c, s = np.cos(angle), np.sin(angle)
    g1, g2 = g[..., :half].astype(np.float32), g[..., half:].astype(np.float32)
    return _bf16(np.concatenate([g1 * c + g2 * s, g2 * c - g1 * s], axis=-1))


def gradient_dispute() -> tuple[DisputeResult, bool, str]:
    x, pos = rope_inputs(rows=32, dim=_DIM, start=65536, stop=131072, seed=4)
    g = _bf16(np.random.default_rng(1).standard_normal(x.shape))
    r = dispute(rope_table, (x, pos), {"fast": rope_backward(g, pos, angle_in_bf16=False),
                                      "reference": rope_backward(g, pos, angle_in_bf16=True)},
                "bfloat16", of="gradient", cotangent=g,
                name="rotary embedding (float64 table) at positions 65536..131072")
    ok = r.most_accurate == "fast" and r.broken == ("reference",)
    return r, ok, "the fast bfloat16 backward is the accurate one; the bfloat16-angle fallback is broken"


def _numpy_f32_matvec(a: np.ndarray, v: np.ndarray) -> np.ndarray:
    return _bf16(a.astype(np.float32) @ v.astype(np.float32))


def timed_dispute() -> tuple[DisputeResult, bool, str]:
    a, v = matvec_inputs(rows=64, n=1024, seed=1)
    r = dispute(matvec_math, (a, v), {"numpy f32": _numpy_f32_matvec, "C bf16 accumulation": matvec_fast},
                "bfloat16", name="matrix-vector product 64x1024, kernels timed", rounds=5)
    ok = set(r.timings) == {"numpy f32", "C bf16 accumulation"} and r.broken == ("C bf16 accumulation",)
    return r, ok, "both kernels timed; the bfloat16 accumulator is broken, whichever is faster"
