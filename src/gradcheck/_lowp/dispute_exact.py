"""The exact values of a dispute's definition: by the exact kernels when it is a
contraction, at arbitrary precision otherwise.

A definition made only of contractions of its inputs (``a @ b``, ``np.sum``, ``np.cumsum``,
``np.convolve``, ``np.einsum``, ... with reshapes, transposes, indexing) is computed by the
exact kernels of :mod:`gradcheck.mp` straight from the inputs' float arrays: correctly
rounded, at float speed (:func:`gradcheck.mp._exact.probe`). Anything else is evaluated at
``dps`` digits on ``gradcheck.mp`` values; the contractions inside it (``gelu(a @ b)``,
``softmax(q @ k.T)``) still go through the kernels when their operands are exact.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core.formats import FLOAT64, round_to_format
from .dispute_inputs import is_float


@dataclass(frozen=True)
class ExactValues:
    """``obj``: the exact values (an object array of ``MPFloat``, the definition's shape, or
    its stand-in :class:`gradcheck.mp._exact.Expansions` that makes them when read);
    ``hi``: them rounded to float64 (flat); ``contraction``: the closed-form sensitivities
    of a contraction (flat), None when the definition is not one; ``how``: in words."""

    obj: Any
    hi: np.ndarray
    contraction: np.ndarray | None
    how: str


def exact_values(math_fn: Callable[..., Any], args: tuple[np.ndarray, ...], dps: int) -> ExactValues:
    """The exact values of ``math_fn(*args)`` (module docstring).

    >>> import numpy as np
    >>> e = exact_values(lambda a, b: a @ b, (np.array([[2.0**60, 1.0, -2.0**60]]), np.ones((3, 1))), 40)
    >>> e.hi.tolist(), e.how
    ([1.0], 'exact kernels (a contraction of the inputs)')
    """
    from ..mp import Expansions, NotAdjudicable, owned, probe, run_checked, to_mp_in

    if dps < 1:
        raise ValueError(f"dps must be a positive number of digits; got {dps}")
    with owned(dps) as ctx:
        found = probe(math_fn, args, ctx.prec)
        if found is not None:  # its MPFloats made only where read (ties, the worst entries)
            return ExactValues(Expansions(found.comps), np.ascontiguousarray(found.comps[..., 0]).reshape(-1),
                               np.asarray(found.kappa, dtype=np.float64).reshape(-1),
                               "exact kernels (a contraction of the inputs)")
        try:  # this dispute's own precision: no other thread can change it
            xs = tuple(to_mp_in(a, ctx, dps if is_float(a.dtype) else None) for a in args)
            obj = run_checked(lambda _: math_fn(*xs), None, ctx)
        except NotAdjudicable as exc:
            raise NotAdjudicable(exc.reason, "math_fn cannot be evaluated at arbitrary precision, so "
                                 f"it cannot settle the dispute: {exc.detail}") from exc
    flat = np.asarray(obj, dtype=object).reshape(-1)
    hi = round_to_format(flat, FLOAT64, as_dtype=True).astype(np.float64)
    return ExactValues(np.asarray(obj, dtype=object), hi, None, f"mpmath at {dps} digits")


__all__ = ["ExactValues", "exact_values"]
