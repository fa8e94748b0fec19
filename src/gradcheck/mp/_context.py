"""Whose precision an arbitrary-precision operation rounds to.

mpmath keeps one precision per process (``mpmath.mp``); a thread that changes it while another
computes changes the other's results. Every computation of this package (an evaluation, one
entry's derivative, a dispute's exact values) therefore runs in a private ``mpmath.MPContext``
that it alone owns while it runs and that nothing else can reach. An operation on ``MPFloat``
finds that context in this order:

1. the computation running in this thread (a context variable set around ``f``);
2. the context its operands were made in (a thread that ``f`` itself started inherits no
   context variable, but its values still carry their computation's context);
3. mpmath's global context, for values used outside any computation (interactive use, where
   ``mpmath.workdps`` scopes the precision as usual).

A context is never used by two computations at once: mpmath's functions raise and restore
their context's precision internally (guard digits), so its precision is private state.
Creating one costs about half a millisecond (a tenth of a small check), so finished
computations hand theirs back to a free list for the next one (:func:`owned`).
"""
from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

import mpmath

GLOBAL = mpmath.mp

_active: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "gradcheck_mp_context", default=None
)
active = _active.get  # the computation running in this thread, or None

# A dtype (float32) that float constants meeting arbitrary-precision values in a ufunc are
# rounded to first, or None (constants enter exactly). Set by :func:`constants_rounded_to`
# for an evaluation that emulates a narrower format's arithmetic.
_constant_dtype: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "gradcheck_mp_constant_dtype", default=None
)
constant_dtype = _constant_dtype.get

# Contexts no computation owns. list.pop and list.append are atomic, so two threads never
# take the same one. The mpmath functions used here leave no state in a context but its
# precision (its attributes are unchanged after them), which is set on every acquisition.
_IDLE: list[Any] = []
_IDLE_MAX = 16


@contextlib.contextmanager
def owned(dps: int | None = None) -> Iterator[Any]:
    """A private context at ``dps`` digits (mpmath's default 53 bits if None), owned for
    the duration of one computation.

    Values made in it keep referring to it; the computations of this package hand none out
    (their results belong to no context), so a context reused later changes no result.
    """
    try:
        ctx = _IDLE.pop()
    except IndexError:
        ctx = mpmath.MPContext()
    ctx.prec = 53  # mpmath's default
    if dps is not None:
        ctx.dps = dps
    try:
        yield ctx
    finally:
        if len(_IDLE) < _IDLE_MAX:
            _IDLE.append(ctx)


@contextlib.contextmanager
def running(ctx: Any) -> Iterator[None]:
    """Make ``ctx`` the computation of this thread (of this task, under asyncio) for the
    duration of the block."""
    token = _active.set(ctx)
    try:
        yield
    finally:
        _active.reset(token)


@contextlib.contextmanager
def constants_rounded_to(dtype: Any) -> Iterator[None]:
    """Round float constants (arrays and scalars captured by ``f``) to ``dtype`` when they
    meet arbitrary-precision values in a ufunc, for the duration of the block: how a kernel
    written in that format holds its constant tables."""
    token = _constant_dtype.set(dtype)
    try:
        yield
    finally:
        _constant_dtype.reset(token)
