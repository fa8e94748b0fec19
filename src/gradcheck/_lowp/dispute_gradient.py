"""``dispute(..., of="gradient")``: settle a disagreement between backward kernels.

Two backward kernels (a fused bfloat16 one and a reference) give different gradients of
``math_fn``: which is closer to the exact gradient? The exact gradient of
``sum(cotangent * math_fn(*inputs))`` with respect to ``inputs[wrt]`` is computed at
arbitrary precision by reverse mode over :mod:`gradcheck.mp` values
(:func:`gradcheck.mp._reverse.mp_vjp`), and the candidates are judged against it in ulps
exactly as forward outputs are. The default bound is widened, as for outputs, by what float32
arithmetic loses: the same reverse pass run with every operation rounded to 24 bits (a
float32 backward kernel computing the same formulas). There is no numpy float32 evaluation
of a gradient, so the table has no "float32 evaluation" row.
"""
from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..mp import MPArray

#: What ``dispute`` can judge.
KINDS = ("value", "gradient")


def gradient_definition(math_fn: Callable[..., Any], args: tuple[np.ndarray, ...], wrt: object,
                        cotangent: Any, label: str) -> tuple[Callable[..., MPArray], str]:
    """The function of the inputs that ``dispute`` evaluates for ``of="gradient"``, and its
    name. It runs only on ``gradcheck.mp`` arrays (at their computation's precision).

    >>> import numpy as np
    >>> fn, name = gradient_definition(np.sin, (np.zeros(2),), 0, np.ones(2), "sin")
    >>> name
    'gradient of sin with respect to input 0'
    """
    if isinstance(wrt, bool) or not isinstance(wrt, numbers.Integral) or not 0 <= int(wrt) < len(args):
        raise ValueError(f"wrt must be the index of one of the {len(args)} input(s) (0 to "
                         f"{len(args) - 1}), got {wrt!r}")
    wrt = int(wrt)
    if args[wrt].dtype.kind in "iub":
        raise TypeError(f"input {wrt} is {args[wrt].dtype}: a gradient needs a float input")
    cot = None if cotangent is None else _cotangent(cotangent)

    def gradient(*xs: np.ndarray) -> MPArray:
        from ..mp import mp_vjp

        if not all(isinstance(x, np.ndarray) and x.dtype == object for x in xs):
            raise TypeError("the gradient is computed at arbitrary precision only (no numpy "
                            "float32 evaluation of a gradient)")
        return mp_vjp(math_fn, xs, wrt, cot)

    name = f"gradient of {label} with respect to input {wrt}"
    gradient.__name__ = name
    return gradient, name


def gradient_of_cotangent(math_fn: Callable[..., Any], wrt: int,
                          cotangent: Any) -> tuple[Callable[..., MPArray], np.ndarray]:
    """The gradient as a function of the inputs *and* the cotangent (its last argument),
    and the cotangent as an exact array (1 for a scalar ``math_fn``): what the gradient's
    sensitivities are taken of, a backward kernel rounding the cotangent too.

    >>> fn, cot = gradient_of_cotangent(np.sin, 0, None)
    >>> cot.shape
    ()
    """
    cot = np.ones(()) if cotangent is None else _cotangent(cotangent)

    def gradient(*xs: np.ndarray) -> MPArray:
        from ..mp import mp_vjp

        *inputs, c = xs
        return mp_vjp(math_fn, tuple(inputs), int(wrt), None if cotangent is None else c)

    return gradient, cot


def _cotangent(cotangent: Any) -> np.ndarray:
    """The cotangent as an exact array (float64 holds every narrower float's values)."""
    if type(cotangent).__module__.split(".")[0] == "torch":
        cotangent = cotangent.detach().cpu().float().numpy()
    arr = np.asarray(cotangent)
    if arr.dtype.name == "bfloat16" or arr.dtype.kind in "fiu":
        with np.errstate(invalid="ignore"):
            return arr.astype(np.float64) if arr.dtype.itemsize <= 8 else arr
    raise TypeError(f"cotangent must be a real array shaped like math_fn's result, got {arr.dtype}")


def require_kind(of: object) -> str:
    """``of`` checked: ``"value"`` or ``"gradient"``."""
    if of not in KINDS:
        raise ValueError(f"of must be 'value' (math_fn's outputs) or 'gradient' (its gradient "
                         f"with respect to inputs[wrt]), got {of!r}")
    return str(of)
