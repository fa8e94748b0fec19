"""How sensitive each output of a definition is to its inputs: the conditioning behind
``dispute``'s allowance (:mod:`gradcheck._lowp.dispute_bound`).

A kernel that computes in a working precision with unit roundoff ``u`` rounds its inputs,
its constants and every intermediate value. Whatever the algorithm, a relative rounding
``d`` of an input entry ``x_j`` (or of an intermediate computed from it, like the angle
``p * theta`` of a rotary embedding, which is ``p`` perturbed) moves output ``i`` by about
``|x_j * d y_i / d x_j| * u``. The componentwise sensitivity

    kappa_i = sum over input entries j of |x_j * d y_i / d x_j|

is a property of the function and its inputs, not of how the definition is spelled: two
algebraically equal definitions (gelu written with ``erf`` or ``erfc``, softmax with or
without max subtraction) have the same derivatives, so the same ``kappa``.

It is computed from exact derivative rules, per input argument (integer arguments such as
positions included: they are real numbers the kernel rounds too):

* **contractions** (a definition made only of ``@``, ``np.sum``, ``np.cumsum``,
  ``np.convolve``, ...): exactly, in closed form, beside the exact values
  (:func:`gradcheck.mp._exact.probe`);
* **otherwise, forward mode in float64** (:class:`gradcheck.dual.DualArray`): the input
  entries of an argument are split into ``C = min(size, MAX_COLOURS)`` colour classes by
  flat index modulo ``C``; one tangent per class carries ``x_j`` on the entries of that
  class, and ``kappa_i`` sums, over arguments and classes, the absolute value of what
  reaches output ``i``. That is the exact sum when no output depends on two entries of
  one class (elementwise functions, rows up to ``MAX_COLOURS`` long, rotary pairs), and a
  lower bound keeping the largest terms otherwise (a dot product of 1,024 entries);
* **where the definition does not run on dual numbers or float64** (an arbitrary-precision-
  only definition, a gradient dispute, overflow in float64): colour classes the same way,
  by one-sided differences of exact evaluations (at twice the digits, relative step of a
  quarter of them); one evaluation per class and argument, which is slow, so the classes are capped
  at :data:`MP_PASSES` evaluations in all (a lower bound where classes merge entries).
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..dual import DualArray

if TYPE_CHECKING:
    from ..mp import Context

#: Colour classes per argument in float64 forward mode.
MAX_COLOURS = 256
#: Exact evaluations spent on differences, shared among the arguments (each gets at least
#: one colour class).
MP_PASSES = 8
#: Tangents carried per forward pass (memory: this many times each intermediate).
CHUNK = 32


@dataclass(frozen=True)
class Sensitivity:
    """``total[i]`` (flat): sum over inputs of ``|x_j d y_i / d x_j|``; ``by_input[a]``:
    the part from argument ``a`` (None where it was not perturbed); ``names``: the
    arguments' names; ``method``: how it was computed, in words; ``notes``."""

    total: np.ndarray
    by_input: tuple[np.ndarray | None, ...]
    names: tuple[str, ...]
    method: str
    notes: tuple[str, ...] = field(default_factory=tuple)


def argument_names(fn: Callable[..., object], count: int) -> tuple[str, ...]:
    """``fn``'s positional parameter names for ``count`` arguments ("input k" where unknown).

    >>> argument_names(lambda x, positions: x, 2)
    ('x', 'positions')
    """
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return tuple(params[k] if k < len(params) else f"input {k}" for k in range(count))


def _perturbed(args: tuple[np.ndarray, ...]) -> list[int]:
    """The arguments a kernel rounds: numeric arrays (booleans are not numbers)."""
    return [k for k, a in enumerate(args) if a.dtype.kind in "fiu" or a.dtype.name == "bfloat16"]


def _colours(size: int, cap: int) -> int:
    return max(1, min(size, cap))


@dataclass(frozen=True)
class _Forward:
    """What the float64 forward pass found: per-argument sensitivities; ``lost``, the
    entries where float64 lost the definition's value (more than 2**-30 off the exact value,
    or not finite: the derivatives there are not to be trusted either); ``diagonal[k]``,
    whether every output depends on one colour class of argument ``k`` at most (then a
    single class, all entries at once, gives the same sums)."""

    by_input: list[np.ndarray | None]
    lost: np.ndarray
    diagonal: dict[int, bool]
    colours: int


def forward_mode(math_fn: Callable[..., Any], args: tuple[np.ndarray, ...], shape: tuple[int, ...],
                 exact_hi: np.ndarray) -> _Forward | None:
    """Per-argument sensitivities by float64 forward mode with colour classes, or None when
    the definition does not run on dual numbers."""
    which = _perturbed(args)
    values = [a.astype(np.float64) for a in args]
    ncols = {k: _colours(args[k].size, MAX_COLOURS) for k in which}
    blocks = [(k, c) for k in which for c in range(ncols[k])]
    by_input: list[np.ndarray | None] = [np.zeros(exact_hi.size) if k in which else None
                                         for k in range(len(args))]
    hits = {k: np.zeros(exact_hi.size, dtype=np.int64) for k in which}
    lost = ~np.isfinite(exact_hi)
    for start in range(0, len(blocks), CHUNK):
        chunk = blocks[start:start + CHUNK]
        duals: list[np.ndarray | DualArray] = list(values)
        for k in which:
            index = np.arange(values[k].size) % ncols[k]
            seed = np.zeros((values[k].size, len(chunk)))
            for col, (kk, c) in enumerate(chunk):
                if kk == k:
                    seed[index == c, col] = values[k].reshape(-1)[index == c]
            duals[k] = DualArray(values[k], seed.reshape(values[k].shape + (len(chunk),)))
        try:
            with np.errstate(all="ignore"):
                out = math_fn(*duals)
        except Exception:  # noqa: BLE001 - it cannot run on dual numbers: another way
            return None
        if not isinstance(out, DualArray) or out.shape != tuple(shape):
            return None
        tangent = np.abs(out.tangent.reshape(-1, len(chunk)))
        with np.errstate(invalid="ignore", over="ignore"):
            lost |= ~(np.abs(out.value.reshape(-1) - exact_hi) <= 2.0**-30 * np.abs(exact_hi))
        lost |= ~np.isfinite(tangent).all(axis=1)
        for col, (k, _) in enumerate(chunk):
            by_input[k] += np.nan_to_num(tangent[:, col])  # type: ignore[operator]
            hits[k] += tangent[:, col] != 0
    diagonal = {k: bool((hits[k] <= 1).all()) for k in which}
    return _Forward(by_input, lost, diagonal, max(ncols.values(), default=0))


def differences(math_fn: Callable[..., Any], args: tuple[np.ndarray, ...], dps: int,
                colours: dict[int, int], notes: list[str]) -> list[np.ndarray | None]:
    """Per-argument sensitivities by one-sided differences of exact evaluations,
    ``colours[k]`` classes for argument ``k``. They run at twice the dispute's digits with a
    relative step of a quarter of them: truncation ~ the step, and a definition that cancels
    away most of the dispute's digits (``1 + tanh(z)`` far in tanh-gelu's tail) still leaves
    the difference accurate."""
    from ..mp import MPFloat, NotAdjudicable, owned, run_checked, to_mp_in

    by_input: list[np.ndarray | None] = [None] * len(args)
    with owned(2 * dps) as ctx:
        step = MPFloat(2) ** -(ctx.prec // 4)
        xs = [to_mp_in(a, ctx, 2 * dps if a.dtype.kind == "f" else None) for a in args]
        try:
            base = np.asarray(run_checked(lambda _: math_fn(*xs), None, ctx), dtype=object).reshape(-1)
        except (NotAdjudicable, TypeError, ValueError, ArithmeticError) as exc:
            notes.append(f"the definition could not be evaluated at {2 * dps} digits "
                         f"({type(exc).__name__}: {exc}); no sensitivities")
            return by_input
        for k, ncol in colours.items():
            index = np.arange(args[k].size).reshape(args[k].shape)
            total = np.zeros(base.size)
            try:
                for c in range(ncol):
                    moved = list(xs)
                    moved[k] = xs[k] + xs[k] * step * (index % ncol == c)
                    y = _run(math_fn, moved, ctx, run_checked)
                    total += _magnitudes((y - base) / step)
            except (NotAdjudicable, TypeError, ValueError, IndexError, ArithmeticError) as exc:
                notes.append(f"input {k} could not be perturbed ({type(exc).__name__}: {exc}); "
                             "its rounding is left out of the allowance")
                continue
            by_input[k] = total
    return by_input


def _run(math_fn: Callable[..., Any], xs: Sequence[np.ndarray], ctx: Context,
         run_checked: Callable[..., Any]) -> np.ndarray:
    """``math_fn(*xs)`` evaluated in ``ctx``, flat."""
    return np.asarray(run_checked(lambda _: math_fn(*xs), None, ctx), dtype=object).reshape(-1)


def _magnitudes(values: np.ndarray) -> np.ndarray:
    from ..mp import from_mp

    return np.abs(np.asarray(from_mp(np.asarray(values, dtype=object), np.float64), dtype=np.float64))


def sensitivity(math_fn: Callable[..., Any], args: tuple[np.ndarray, ...], exact: np.ndarray,
                exact_hi: np.ndarray, dps: int, *, contraction: np.ndarray | None = None,
                float_definition: bool = True, names: tuple[str, ...] | None = None,
                needed: np.ndarray | None = None) -> Sensitivity:
    """The sensitivities of ``math_fn``'s outputs (module docstring). ``contraction``: the
    closed-form total from the exact kernels' probe, when the definition is a contraction;
    ``float_definition=False``: the definition runs at arbitrary precision only (a gradient
    dispute), so go straight to differences; ``names``: the arguments' names (default:
    ``math_fn``'s parameters); ``needed``: the entries where some candidate is further than
    the base bound from the exact value (elsewhere no sensitivity can change a verdict, so
    the costly differences of exact evaluations are spent only if ``needed`` has one)."""
    if contraction is not None:  # whole, not by input: no names needed
        return Sensitivity(np.asarray(contraction, dtype=np.float64).reshape(-1), (None,) * len(args),
                           names or (), "exact, in closed form (a contraction of the inputs)")
    names = names or argument_names(math_fn, len(args))
    shape = np.shape(exact)
    notes: list[str] = []
    fwd = forward_mode(math_fn, args, shape, exact_hi) if float_definition else None
    method = "" if fwd is None else (f"forward mode in float64 (dual numbers), {fwd.colours} colour "
                                     f"class{'es' if fwd.colours != 1 else ''} per input")
    if fwd is not None and not fwd.lost.any():
        by_input = fwd.by_input
    elif needed is not None and not needed[fwd.lost if fwd is not None else slice(None)].any():
        if fwd is None:
            return Sensitivity(np.zeros(exact_hi.size), (None,) * len(args), names,
                               "not computed: every candidate is within the base bound at every "
                               "entry, where no sensitivity can change the verdict")
        by_input = fwd.by_input
        method += (f"; at the {int(fwd.lost.sum())} entries where float64 loses the definition's "
                   "value these are float64's figures (every candidate is within the base bound "
                   "there, so they cannot change a verdict)")
    else:
        by_input, method = _by_differences(math_fn, args, dps, fwd, method, float_definition, notes)
    parts = [b for b in by_input if b is not None]
    total = np.sum(parts, axis=0) if parts else np.zeros(exact_hi.size)
    return Sensitivity(total, tuple(by_input), names, method, tuple(notes))


def _by_differences(math_fn: Callable[..., Any], args: tuple[np.ndarray, ...], dps: int,
                    fwd: _Forward | None, method: str, float_definition: bool,
                    notes: list[str]) -> tuple[list[np.ndarray | None], str]:
    """Differences of exact evaluations: everywhere without a forward pass, at the entries
    where float64 lost the value otherwise (one class per argument that every output sees
    through one class only)."""
    which = _perturbed(args)
    cap = max(1, MP_PASSES // max(len(which), 1))
    colours = {k: 1 if fwd is not None and fwd.diagonal[k] else _colours(args[k].size, cap)
               for k in which}
    exact_by_input = differences(math_fn, args, dps, colours, notes)
    most = max(colours.values(), default=0)
    text = (f"one-sided differences of exact evaluations, {most} colour class"
            f"{'es' if most != 1 else ''} per input")
    if fwd is None:
        if float_definition:
            notes.append("the definition does not run on float64 dual numbers: sensitivities "
                         "by differences of exact evaluations")
        return exact_by_input, text
    merged = [f if e is None or f is None else np.where(fwd.lost, e, f)
              for f, e in zip(fwd.by_input, exact_by_input)]
    return merged, (f"{method}; at the {int(fwd.lost.sum())} entries where float64 loses the "
                    f"definition's value, {text}")


__all__ = ["Sensitivity", "sensitivity", "argument_names", "MAX_COLOURS", "MP_PASSES"]
