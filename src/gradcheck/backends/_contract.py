"""The autodiff contract beyond the gradient's values, judged alike for every framework.

An adapter (torch, jax) runs its framework's backward three times on one graph and hands
the results here as numpy arrays: ``g1`` and ``g2`` for the same output gradient, ``g0``
for a zero one. The contract: ``g1`` has x's dtype and shape; the backward is reentrant
(``g2`` equals ``g1`` bit for bit); and a zero output gradient gives a zero input
gradient wherever the claim is finite. Each broken clause is a sentence for the report.

>>> import numpy as np
>>> g = np.array([1.0, 2.0])
>>> contract_violations(AUTOGRAD, g, g, np.array([0.0, 3.0]), "float64", "float64", (2,), (2,), g)
['a zero output gradient gave a non-zero input gradient at (1,) (max |g| = 3)']
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core.arrays import same_bits
from .._core.errors import OutputError


@dataclass(frozen=True)
class Words:
    """How a framework's own documentation names the pieces."""

    gradient: str      # "autograd's gradient"
    dtype_hint: str    # appended to a dtype/shape violation
    reentrant: str     # the sentence that opens a reentrancy violation
    zero: str          # "a zero output gradient gave a non-zero input gradient"


AUTOGRAD = Words(
    gradient="autograd's gradient",
    dtype_hint="",
    reentrant="backward is not reentrant: two backward passes through the same graph with the same output gradient differ",
    zero="a zero output gradient gave a non-zero input gradient",
)
JAX_VJP = Words(
    gradient="jax's gradient",
    dtype_hint=" (check the custom_vjp rule's output)",
    reentrant="the VJP is not reentrant: calling the same vjp function twice with the same cotangent gave different gradients",
    zero="a zero cotangent gave a non-zero gradient",
)


def one_output(y: Any, kind: type, wrong_type: str) -> Any:
    """``y`` if it is one ``kind`` array; else an :class:`OutputError` (a TypeError, located
    at the unperturbed input until the differencing loop relocates it): several outputs must
    be checked one at a time, and anything else is ``wrong_type``'s explanation."""
    if isinstance(y, kind):
        return y
    if isinstance(y, (tuple, list)):
        raise OutputError(f"a {type(y).__name__} of {len(y)} outputs",
                          tail="; gradcheck checks one output at a time: wrap it, e.g. lambda x: f(x)[0]")
    raise OutputError(type(y).__name__, tail=f"; {wrong_type}")


def describe_entries(mask: np.ndarray, limit: int = 5) -> str:
    """The first ``limit`` multi-indices where ``mask`` holds, and how many more."""
    where = [tuple(int(i) for i in ix) for ix in np.argwhere(mask)[:limit]]
    more = int(mask.sum()) - len(where)
    return ", ".join(str(w) for w in where) + (f" and {more} more" if more > 0 else "")


def contract_violations(
    words: Words, g1: np.ndarray, g2: np.ndarray | None, g0: np.ndarray | None,
    g_dtype: Any, x_dtype: Any, g_shape: tuple[int, ...], x_shape: tuple[int, ...], claimed: Any,
) -> list[str]:
    """The sentences for every broken clause (see the module docstring); ``None`` for
    ``g2``/``g0`` means the framework returned no gradient for that pass."""
    violations = []
    if str(g_dtype) != str(x_dtype) or tuple(g_shape) != tuple(x_shape):
        violations.append(
            f"{words.gradient} has dtype {g_dtype} and shape {tuple(g_shape)}, but x has dtype "
            f"{x_dtype} and shape {tuple(x_shape)}{words.dtype_hint}"
        )
    if g2 is None or g1.shape != g2.shape:
        violations.append(f"{words.reentrant.split(':')[0]}: a second pass returned a different structure")
    elif not same_bits(g1, g2):
        diff = np.nan_to_num(np.abs(g1.astype(np.float64) - g2.astype(np.float64)), nan=np.inf)
        violations.append(f"{words.reentrant} at {describe_entries(diff != 0)} (max |difference| = {diff.max():.3g})")
    if g0 is not None and g0.shape == np.shape(claimed):
        g0 = g0.astype(np.float64)
        wrong = (g0 != 0) & np.isfinite(np.asarray(claimed, dtype=np.float64))
        if wrong.any():
            violations.append(
                f"{words.zero} at {describe_entries(wrong)} "
                f"(max |g| = {np.nan_to_num(np.abs(g0), nan=np.inf).max():.3g})"
            )
    return violations
