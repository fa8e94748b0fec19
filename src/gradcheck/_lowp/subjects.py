"""Low-precision subject kernels (C, through cffi) and the definitions that judge them.

Two bfloat16 disputes with a known answer, used by the tests, ``gradcheck demo`` and the
benchmarks of :func:`gradcheck.dispute`:

* **Rotary embedding** (``kernels/rope_bf16.c``): :func:`rope_fast` computes the angle
  ``position * inv_freq`` in float32 and rounds each output once; :func:`rope_reference`
  rounds the angle to bfloat16 before ``cos``/``sin``, as a fallback that keeps its
  position/angle tensor in bfloat16 does. At large positions the *reference* is the
  inaccurate side (the MLX ``fast.rope`` story: the fast kernel was the right one).
* **Matrix-vector product** (``kernels/dot_bf16.c``): :func:`matvec_fast` accumulates in
  bfloat16 and is really broken; :func:`matvec_reference` accumulates in float32.

:func:`rope_math` and :func:`matvec_math` are the mathematical definitions, written in
numpy so that :func:`gradcheck.mp.evaluate` runs them at arbitrary precision (and any
float dtype runs them in that dtype).

>>> import numpy as np
>>> x, pos = rope_inputs(rows=4, dim=8, start=4000)
>>> rope_fast(x, pos).dtype.name, rope_fast(x, pos).shape
('bfloat16', (4, 8))
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .._core.formats import BFLOAT16, from_bits, round_to_format

if TYPE_CHECKING:
    from ..dual import DualArray

__all__ = ["rope_fast", "rope_reference", "rope_math", "rope_inputs",
           "matvec_fast", "matvec_reference", "matvec_math", "matvec_inputs", "bf16_round_c"]

#: RoPE's frequency base (Llama, MLX, ...).
ROPE_BASE = 10000.0


def _lib():
    from .._kernels import ffi, lib  # the cffi extension built at install time

    return ffi, lib


def _bf16_bits(a: ArrayLike, what: str) -> np.ndarray:
    """C-contiguous uint16 bit patterns of ``a`` in bfloat16 (rounded nearest-even if ``a``
    is a wider float; bfloat16 input is taken as is)."""
    arr = np.asarray(a)
    if arr.dtype.name == "bfloat16":
        return np.ascontiguousarray(arr).view(np.uint16)
    if arr.dtype.kind != "f":
        raise TypeError(f"{what} must be a float array (bfloat16 or wider), got {arr.dtype}")
    return np.ascontiguousarray(round_to_format(arr, BFLOAT16))


def _ptr(ffi, ctype: str, arr: np.ndarray):
    return ffi.cast(ctype, ffi.from_buffer(arr))


def _rope(kernel: str, x: ArrayLike, positions: ArrayLike, base: float) -> np.ndarray:
    bits = _bf16_bits(x, "x")
    if bits.ndim < 1 or bits.shape[-1] % 2:
        raise ValueError(f"x must have an even last dimension (the rotated pairs), got shape {bits.shape}")
    pos = np.asarray(positions)
    if pos.dtype.kind not in "iu":
        raise TypeError(f"positions must be integers, got {pos.dtype}")
    rows_shape = bits.shape[:-1]
    try:
        pos = np.broadcast_to(pos, rows_shape)
    except ValueError:
        raise ValueError(f"positions of shape {pos.shape} do not broadcast to the rows of x "
                         f"(x has shape {bits.shape}; positions index its last-but-one axes)") from None
    pos = np.ascontiguousarray(pos, dtype=np.int64)
    dim = bits.shape[-1]
    rows = int(np.prod(rows_shape, dtype=np.int64))
    out = np.empty(bits.shape, dtype=np.uint16)
    ffi, lib = _lib()
    getattr(lib, kernel)(_ptr(ffi, "const uint16_t *", bits), _ptr(ffi, "const int64_t *", pos),
                         rows, dim, float(base), _ptr(ffi, "uint16_t *", out))
    return from_bits(out, BFLOAT16)


def rope_fast(x: ArrayLike, positions: ArrayLike, base: float = ROPE_BASE) -> np.ndarray:
    """Rotary embedding in C, angle in float32, each output rounded once to bfloat16.

    ``x``: (..., dim) bfloat16 (``ml_dtypes.bfloat16``), ``positions``: integers broadcast
    against ``x.shape[:-1]`` (typically shape (T,) for x of shape (..., T, dim)).
    """
    return _rope("gc_rope_bf16_fast", x, positions, base)


def rope_reference(x: ArrayLike, positions: ArrayLike, base: float = ROPE_BASE) -> np.ndarray:
    """Rotary embedding in C with the angle rounded to bfloat16 before cos/sin (the
    inaccurate side at large positions). Same arguments as :func:`rope_fast`."""
    return _rope("gc_rope_bf16_reference", x, positions, base)


def rope_math(x: np.ndarray | DualArray, positions: ArrayLike | DualArray,
              base: float = ROPE_BASE) -> np.ndarray | DualArray:
    """The definition: ``y[..., i] = x_i cos(t_i) - x_{i+d/2} sin(t_i)``,
    ``y[..., i+d/2] = x_{i+d/2} cos(t_i) + x_i sin(t_i)``, ``t_i = p base^(-2i/d)``.

    Precision-generic numpy: every number is built from the inputs' own type, so on
    arbitrary-precision arrays (``gradcheck.mp``) ``base^(-2i/d)`` and the angles are
    computed at that precision, and on float32 arrays everything stays float32. (The
    exponents ``-2i/d`` are exact binary fractions when ``d`` is a power of two.)
    """
    d = x.shape[-1]
    half = d // 2
    # exact: integers below 2**24 (astype of the array itself: dual numbers have no numpy view)
    pos = (positions if hasattr(positions, "astype") else np.asarray(positions)).astype(x.dtype)
    one = pos.reshape(-1)[:1] * 0 + 1                      # 1 in the working number type
    exponents = (np.arange(half) * (-2.0 / d)).astype(x.dtype)
    inv_freq = (one * base) ** exponents                   # (half,)
    angle = pos[..., None] * inv_freq                      # (..., half)
    c, s = np.cos(angle), np.sin(angle)
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)


def rope_inputs(rows: int = 64, dim: int = 64, *, start: int = 1000, stop: int | None = None,
                heads: int = 1, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(x, positions)``: x of shape (heads, rows, dim) (or (rows, dim) for heads=1),
    standard normal rounded to bfloat16, and integer positions spread over
    ``[start, stop)`` (default: ``start + rows`` consecutive positions)."""
    rng = np.random.default_rng(seed)
    shape = (rows, dim) if heads == 1 else (heads, rows, dim)
    x = round_to_format(rng.standard_normal(shape), BFLOAT16, as_dtype=True)
    if stop is None:
        positions = np.arange(start, start + rows, dtype=np.int64)
    else:
        positions = np.sort(rng.integers(start, stop, rows)).astype(np.int64)
    return x, positions


def _matvec(kernel: str, a: ArrayLike, v: ArrayLike) -> np.ndarray:
    ab, vb = _bf16_bits(a, "a"), _bf16_bits(v, "v")
    if ab.ndim != 2 or vb.ndim != 1 or ab.shape[1] != vb.shape[0]:
        raise ValueError(f"matvec needs a of shape (rows, n) and v of shape (n,); got {ab.shape} and {vb.shape}")
    rows, n = ab.shape
    out = np.empty(rows, dtype=np.uint16)
    ffi, lib = _lib()
    getattr(lib, kernel)(_ptr(ffi, "const uint16_t *", ab), _ptr(ffi, "const uint16_t *", vb),
                         rows, n, _ptr(ffi, "uint16_t *", out))
    return from_bits(out, BFLOAT16)


def matvec_fast(a: ArrayLike, v: ArrayLike) -> np.ndarray:
    """``a @ v`` in C, accumulated in bfloat16 (deliberately broken)."""
    return _matvec("gc_matvec_bf16_fast", a, v)


def matvec_reference(a: ArrayLike, v: ArrayLike) -> np.ndarray:
    """``a @ v`` in C, accumulated in float32 and rounded once to bfloat16."""
    return _matvec("gc_matvec_bf16_reference", a, v)


def matvec_math(a: np.ndarray | DualArray, v: np.ndarray | DualArray) -> np.ndarray | DualArray:
    """The definition: ``a @ v``."""
    return a @ v


def matvec_inputs(rows: int = 64, n: int = 1024, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(a, v)`` in bfloat16: a of shape (rows, n) standard normal, v uniform in [0.5, 1.5)
    (positive, so the sums grow like a random walk and bfloat16 accumulation shows)."""
    rng = np.random.default_rng(seed)
    a = round_to_format(rng.standard_normal((rows, n)), BFLOAT16, as_dtype=True)
    v = round_to_format(rng.uniform(0.5, 1.5, n), BFLOAT16, as_dtype=True)
    return a, v


def bf16_round_c(x: ArrayLike) -> np.ndarray:
    """float32 -> bfloat16 by the kernels' own C rounding (for testing it against
    :func:`gradcheck._core.formats.round_to_format`)."""
    arr = np.ascontiguousarray(x, dtype=np.float32)
    out = np.empty(arr.shape, dtype=np.uint16)
    ffi, lib = _lib()
    lib.gc_bf16_from_f32(_ptr(ffi, "const float *", arr), arr.size, _ptr(ffi, "uint16_t *", out))
    return from_bits(out, BFLOAT16)
