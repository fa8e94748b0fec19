"""``dispute``'s inputs and candidates: converted, checked and refused up front.

Everything here runs before the exact evaluation (which can take a while), so that a
mistake (a candidate of the wrong shape or format, a definition called with the wrong
number of inputs) is said at once, naming the culprit. ``float32_run`` is the informational
float32 evaluation of the definition (the "float32 evaluation" row of the table).
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .._core.errors import ShapeMismatchError
from .._core.formats import FloatFormat, from_bits, resolve_format, round_to_format

#: The float32 evaluation's name (in ``result.errors`` and ``result.float32.name``).
FLOAT32_EVALUATION = "float32 evaluation"


def to_numpy(value: Any) -> np.ndarray:
    """numpy view of an array-like; torch tensors converted (bfloat16 through its bits)."""
    if type(value).__module__.split(".")[0] == "torch":
        t = value.detach().cpu()
        if str(t.dtype) == "torch.bfloat16":
            import ml_dtypes
            import torch

            return t.contiguous().view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        return t.numpy()
    return np.asarray(value)


def as_inputs(inputs: Any) -> tuple[np.ndarray, ...]:
    """The inputs as a tuple of numpy arrays (one array is wrapped)."""
    if isinstance(inputs, (tuple, list)):
        return tuple(to_numpy(a) for a in inputs)
    return (to_numpy(inputs),)


def named_candidates(candidates: Any) -> dict[str, Any]:
    """The candidates by name ("0", "1", ... for a sequence), checked."""
    if isinstance(candidates, Mapping):
        named = {str(k): v for k, v in candidates.items()}
    elif isinstance(candidates, (tuple, list)):
        named = {str(k): v for k, v in enumerate(candidates)}
    else:
        raise TypeError("candidates must be a dict {name: array} (or a sequence of arrays), "
                        f"got {type(candidates).__name__}")
    if not named:
        raise ValueError("dispute needs at least one candidate")
    if FLOAT32_EVALUATION in named:
        raise ValueError(f"{FLOAT32_EVALUATION!r} is reserved for the float32 evaluation; rename that candidate")
    return named


def is_float(dt: np.dtype) -> bool:
    """A binary float dtype (bfloat16 included)."""
    return dt.kind == "f" or dt.name == "bfloat16"


def target_format(dtype: object, named: dict[str, Any]) -> FloatFormat:
    """The target format: ``dtype``, or the candidates' common float dtype."""
    if dtype is not None:
        return resolve_format(dtype)  # ValueError listing the valid names
    kinds = {k: to_numpy(v).dtype for k, v in named.items()}
    found = {dt.name for dt in kinds.values() if is_float(dt)}
    if len(found) == 1 and len(kinds) == len([d for d in kinds.values() if is_float(d)]):
        return resolve_format(found.pop())
    listing = ", ".join(f"{k}: {dt}" for k, dt in kinds.items())
    raise ValueError(f"pass dtype= (float16, bfloat16, float32 or float64): the candidates do "
                     f"not share one float dtype ({listing})")


def require_arity(math_fn: Callable[..., object], args: tuple[np.ndarray, ...], label: str) -> None:
    """``math_fn`` must take the inputs as its positional arguments: a wrong count is the
    caller's mistake, to be said as such (called anyway, it would raise a TypeError that
    reads like an operation with no arbitrary-precision form)."""
    fn = inspect.unwrap(math_fn)
    if isinstance(fn, np.ufunc):
        if fn.nin != len(args):
            raise TypeError(f"math_fn {label} (a ufunc) takes {fn.nin} input(s), but {len(args)} "
                            "were given: pass one array per argument, in order")
        return
    try:
        sig = inspect.signature(math_fn)
    except (TypeError, ValueError):  # no signature to read (some C functions): the call will tell
        return
    try:
        sig.bind(*args)
    except TypeError as exc:
        raise TypeError(f"math_fn {label}{sig} cannot be called with the {len(args)} input(s) given "
                        f"({exc}): pass one array per positional argument, in order") from None


def as_candidate(value: Any, fmt: FloatFormat, key: str) -> np.ndarray:
    """The candidate's values as float64 (exact widening), checked for type, for entries,
    and for being values of ``fmt``."""
    arr = to_numpy(value)
    if arr.dtype in (np.uint16, np.int16) and fmt.bits == 16:
        arr = arr.view(np.uint16).view(fmt.dtype)  # bit patterns of the target format
    if not is_float(arr.dtype) or arr.dtype.itemsize > 8:
        raise TypeError(f"candidate {key!r} has dtype {arr.dtype}; expected a float array "
                        "(float16, bfloat16, float32, float64; uint16 bit patterns for 16-bit targets)")
    if arr.size == 0:
        raise ValueError(f"candidate {key!r} has no entries (shape {arr.shape}): there is nothing to judge (are the inputs empty?)")
    with np.errstate(invalid="ignore"):
        values = arr.astype(np.float64)
    require_representable(values, arr.dtype, fmt, key)
    return values.reshape(arr.shape)


def require_representable(values: np.ndarray, dtype: np.dtype, fmt: FloatFormat, key: str) -> None:
    """Refuse a candidate holding values that are not values of ``fmt`` (a wider result
    never rounded to it): its ulp errors and "correctly rounded" fraction would measure
    something else than the output of a ``fmt`` kernel and read as a verdict on one."""
    flat = values.reshape(-1)
    with np.errstate(invalid="ignore"):
        nearest = from_bits(round_to_format(flat, fmt), fmt).astype(np.float64)
        outside = np.flatnonzero((nearest != flat) & ~np.isnan(flat))
    if not outside.size:
        return
    j = int(outside[0])
    where = tuple(int(i) for i in np.unravel_index(j, values.shape))
    raise ValueError(
        f"candidate {key!r} is not a {fmt.name} output: {outside.size} of {flat.size} entries are not "
        f"{fmt.name} values (entry {where} is {float(flat[j])!r}, the nearest {fmt.name} value {float(nearest[j])!r}). "
        f"Round it to {fmt.name} as the kernel's output would be, or judge it at its own precision "
        f"(dtype={dtype.name!r})")


def shaped(values: np.ndarray, key: str, shape: tuple) -> np.ndarray:
    """``values``, refused unless shaped like the definition's result."""
    if values.shape != tuple(shape):
        raise ShapeMismatchError(f"candidate {key!r} (compared with math_fn(*inputs))", shape, values.shape)
    return values


def float32_run(math_fn, args, shape, fmt) -> tuple[np.ndarray | None, np.ndarray | None, str]:
    """math_fn on float32 inputs: its result (float64 values, flat), the same rounded once to
    fmt, and a note (both None if it could not run)."""
    xs = tuple(a.astype(np.float32) if is_float(a.dtype) else a for a in args)
    what = "the float32 evaluation of math_fn"
    try:
        with np.errstate(all="ignore"):
            y = to_numpy(math_fn(*xs))
    except Exception as exc:  # noqa: BLE001 - informational only: say so and go on
        return None, None, f"{what} raised {type(exc).__name__}: {exc} (no float32 comparison)"
    if not is_float(y.dtype) or y.shape != tuple(shape):
        return None, None, f"{what} returned {y.dtype} of shape {y.shape} (no float32 comparison)"
    note = ""
    if y.dtype != np.float32:
        note = (f"{what} came out {y.dtype} (numpy promoted a float32 value): its row measures "
                f"a {y.dtype} evaluation")
    rounded = from_bits(round_to_format(y, fmt), fmt)  # one rounding, straight from its bits
    with np.errstate(invalid="ignore"):
        return y.astype(np.float64).reshape(-1), rounded.astype(np.float64).reshape(-1), note
