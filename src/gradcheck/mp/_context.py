"""Whose precision an arbitrary-precision operation rounds to.

mpmath keeps one precision per process (``mpmath.mp``); a thread that changes it while another
computes changes the other's results. Every computation of this package (an evaluation, one
entry's derivative, a dispute's exact values) therefore runs in a private ``mpmath.MPContext``
that it creates, sets and drops, and nothing else can reach. An operation on ``MPFloat`` finds
that context in this order:

1. the computation running in this thread (a context variable set around ``f``);
2. the context its operands were made in (a thread that ``f`` itself started inherits no
   context variable, but its values still carry their computation's context);
3. mpmath's global context, for values used outside any computation (interactive use, where
   ``mpmath.workdps`` scopes the precision as usual).

A context must never be shared by two threads: mpmath's functions raise and restore their
context's precision internally (guard digits), so one context's precision is private state.
"""
from __future__ import annotations

import contextvars
from typing import Any

import mpmath

GLOBAL = mpmath.mp

_active: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "gradcheck_mp_context", default=None
)
active = _active.get  # the computation running in this thread, or None


def new_context(dps: int | None = None) -> Any:
    """A fresh ``mpmath.MPContext`` at ``dps`` digits (mpmath's default 15 if None).

    Costs about half a millisecond: one per computation, never one per operation.
    """
    ctx = mpmath.MPContext()
    if dps is not None:
        ctx.dps = dps
    return ctx


def running(ctx: Any) -> contextvars.Token:
    """Make ``ctx`` the computation of this thread; undo with ``_active.reset(token)``."""
    return _active.set(ctx)


def stop(token: contextvars.Token) -> None:
    """Undo :func:`running`."""
    _active.reset(token)


def resolve(*contexts: Any) -> Any:
    """The context an operation on values made in ``contexts`` (None: made outside any
    computation) rounds to: this thread's computation, else the first operand's, else
    mpmath's global one."""
    ctx = _active.get()
    if ctx is not None:
        return ctx
    for c in contexts:
        if c is not None:
            return c
    return GLOBAL


def private(ctx: Any) -> Any:
    """What a value made in ``ctx`` records: the context itself, or None for mpmath's global
    one (so that a value made outside any computation never overrides a computation's)."""
    return None if ctx is GLOBAL else ctx
