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
from typing import TypeAlias

import mpmath

# mpmath ships no type information (pyproject's mypy overrides): these names say what a value
# is, and mypy reads each as an unchecked (dynamic) type.
#: An mpmath context: ``mpmath.mp`` or a private ``MPContext``.
Context: TypeAlias = mpmath.ctx_mp.MPContext
#: A real of any context (each context has its own ``mpf`` subclass of this).
Mpf: TypeAlias = mpmath.ctx_mp_python._mpf
#: A complex of any context.
Mpc: TypeAlias = mpmath.ctx_mp_python._mpc

GLOBAL = mpmath.mp

_active: contextvars.ContextVar[Context | None] = contextvars.ContextVar(
    "gradcheck_mp_context", default=None
)
active = _active.get  # the computation running in this thread, or None


def context() -> Context:
    """The mpmath context that arbitrary-precision arithmetic rounds to right here: inside
    :func:`gradcheck.dispute`, :func:`gradcheck.mp.evaluate` and the referee, the running
    computation's own (private) context, at its working precision (40 digits in a dispute
    by default, 24 bits in a float32-arithmetic evaluation, ...); outside any computation,
    mpmath's global context ``mpmath.mp``.

    A definition that calls an mpmath function itself (``erf``, ``gammainc``, ... that
    numpy has no ufunc for) should call it through this context: ``mpmath.erf(v)`` rounds
    to mpmath's global precision (53 bits), not to the computation's, and in gelu's far
    negative tail ``1 + erf(x/sqrt 2)`` then cancels every digit.

    >>> import math, numpy as np, mpmath
    >>> from gradcheck.mp import context, evaluate
    >>> def erf(x):
    ...     if x.dtype == object:                        # arbitrary-precision values
    ...         return np.frompyfunc(context().erf, 1, 1)(x)
    ...     return np.vectorize(math.erf)(x)              # float arrays (or scipy.special.erf)
    >>> y = evaluate(lambda v: 1 + erf(v), np.array([-6.0]), dps=30)
    >>> mpmath.nstr(y[0].value, 12)                      # erfc(6): 2.15197367125e-17
    '2.15197367125e-17'
    >>> y = evaluate(lambda v: 1 + np.frompyfunc(mpmath.erf, 1, 1)(v), np.array([-6.0]), dps=30)
    >>> mpmath.nstr(y[0].value, 12)                      # mpmath.erf: 53 bits, all lost
    '0.0'
    """
    return _active.get() or GLOBAL

# Contexts no computation owns. list.pop and list.append are atomic, so two threads never
# take the same one. The mpmath functions used here leave no state in a context but its
# precision (its attributes are unchanged after them), which is set on every acquisition.
_IDLE: list[Context] = []
_IDLE_MAX = 16


@contextlib.contextmanager
def owned(dps: int | None = None) -> Iterator[Context]:
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
def running(ctx: Context) -> Iterator[None]:
    """Make ``ctx`` the computation of this thread (of this task, under asyncio) for the
    duration of the block."""
    token = _active.set(ctx)
    try:
        yield
    finally:
        _active.reset(token)
