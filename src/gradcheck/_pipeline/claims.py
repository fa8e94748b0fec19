"""A backend whose claimed gradient is built from another derivative.

``check`` asks its backend for one thing beyond evaluating ``f``: the claimed gradient
(of ``f``, or of ``cotangent . f`` for an array output). :class:`ClaimBackend` answers
that question with a function of ``(x, cotangent)`` built by the caller -- from N JVPs
(``check_jvp``), from a Hessian-vector product (``check_hvp``), from a corrupted claim
(the negative controls) -- and hands everything else to the backend it wraps. So the
differences, verdicts, step study and referee are ``check``'s, unchanged.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..backends import Wrapping


class ClaimBackend(Wrapping):
    """``inner`` for evaluating ``f``; ``claim(x, cotangent)`` for the claimed gradient.

    ``mp_capable`` says whether the referee may run ``f`` at arbitrary precision (only
    when ``f`` is numpy code; default: as ``inner`` says). ``notes`` collects what the
    claim builder wants said in the report (how many calls, batched or not).
    """

    def __init__(self, inner: Any, claim: Callable[[np.ndarray, np.ndarray | None], np.ndarray], *,
                 name: str | None = None, mp_capable: bool | None = None) -> None:
        self.inner = inner
        self.claim = claim
        self.name = name or inner.name
        self.mp_capable = getattr(inner, "mp_capable", False) if mp_capable is None else mp_capable
        self.fork_safe = getattr(inner, "fork_safe", True)
        self.notes: list[str] = []

    def claimed_gradient(self, f: Callable[..., Any], x: np.ndarray, cotangent: np.ndarray | None,
                         grad: Any) -> np.ndarray:
        return np.asarray(self.claim(x, cotangent))


def with_notes(report: Any, notes: list[str] | tuple[str, ...]) -> Any:
    """``report`` with ``notes`` appended (a Report is frozen: a copy)."""
    import dataclasses

    if not notes:
        return report
    return dataclasses.replace(report, notes=tuple(report.notes) + tuple(notes))
