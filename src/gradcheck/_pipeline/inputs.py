"""Several inputs, ``check(f, (x1, x2, ...))``: one report per input, the others held fixed.

:class:`MultiReport` holds the reports; the helpers here split the claim per input, make
``f`` a function of one input, and give ``f`` private copies of every input.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core import status as _status
from .._core.errors import GradientAssertionError
from .._core.verdict import Verdict
from .._report.html import HtmlViews
from .._report.report import Report


def is_multiple_inputs(x: Any) -> bool:
    """A tuple whose items are all arrays (numpy, torch, jax...) means ``f(*x)``.

    A tuple of numbers stays one 1-D input, as before; so does a list.
    """
    return (
        isinstance(x, tuple) and len(x) > 0
        and all(hasattr(e, "shape") and hasattr(e, "dtype") and not isinstance(e, np.generic) for e in x)
    )


@dataclass(frozen=True, eq=False)
class MultiReport(HtmlViews, _status.PassedAsTruth):
    """One :class:`Report` per positional input of ``f``, from ``check(f, (x1, x2, ...))``.

    Input ``k`` is checked with the others held fixed; ``report[k]`` is its report.

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> a, b = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    >>> r = gradcheck.check(lambda a, b: (a * b).sum(), (a, b), grad=(lambda a, b: b, lambda a, b: a))
    >>> r.passed, len(r)
    (True, 2)
    """

    name: str
    reports: tuple[Report, ...]

    @property
    def status(self) -> str:
        """``"FAIL"`` if any input fails, else ``"INCONCLUSIVE"`` if any input verified
        nothing (its claim was never checked), else ``"PASS"``."""
        return _status.combine(r.status for r in self.reports)

    @property
    def passed(self) -> bool:
        return self.status == _status.PASS

    def __getitem__(self, k: int) -> Report:
        return self.reports[k]

    def __len__(self) -> int:
        return len(self.reports)

    def __iter__(self):
        return iter(self.reports)

    def summary(self) -> str:
        status = self.status
        if status != _status.PASS:
            which = [k for k, r in enumerate(self.reports) if r.status == status]
            status += f" (inputs {which}{' verified nothing' if status == _status.INCONCLUSIVE else ''})"
        return f"{self.name}: {status} -- {len(self.reports)} inputs"

    def assert_pass(self, *, allow_unchecked: bool | None = None) -> MultiReport:
        """Raise :class:`GradientAssertionError` with every input's table unless every input
        passes ``Report.assert_pass(allow_unchecked=...)`` (default None: an input that
        verified nothing fails the whole; True accepts it; False refuses any UNCHECKED)."""
        for r in self.reports:
            refused = _status.refusal(r.status, r.counts[Verdict.UNCHECKED], allow_unchecked)
            if refused:
                raise GradientAssertionError(f"{refused}\n{self}", self)
        return self

    def __str__(self) -> str:
        return "\n".join([self.summary()] + [str(r) for r in self.reports])

    def __repr__(self) -> str:
        return f"<MultiReport {self.summary()}>"

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "passed": self.passed,
                "inputs": [r.to_dict(**kwargs) for r in self.reports]}

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(**kwargs))


def private_copy(x: Any) -> Any:
    """A copy of the array ``x`` that ``f`` may be handed in its place: same type, dtype,
    device and values (a torch tensor keeps its ``requires_grad``; a jax array is
    immutable, so it is its own copy)."""
    if isinstance(x, np.ndarray):
        return np.array(x, copy=True)
    if type(x).__module__.split(".")[0] == "torch":
        return x.detach().clone().requires_grad_(x.requires_grad)
    return x


def with_input(fn, held: tuple, k: int):
    """``fn`` as a function of input ``k`` alone (extra trailing args, e.g. a VJP's
    cotangent, are passed through)."""

    def of_k(xk, *rest):
        return fn(*held[:k], xk, *held[k + 1:], *rest)

    of_k.__name__ = getattr(fn, "__name__", "f")
    return of_k


def split_grad(grad: Any, held: tuple) -> list[Any]:
    """One claim per input from ``None``, a tuple of claims (arrays, or functions of all
    inputs ``g_k(*xs)`` / ``g_k(*xs, v)``), or one function returning a tuple."""
    count = len(held)
    if grad is None:
        return [None] * count
    if isinstance(grad, (tuple, list)):
        if len(grad) != count:
            raise ValueError(f"grad has {len(grad)} claims for {count} inputs; give one per input")
        return [with_input(g, held, k) if callable(g) else g for k, g in enumerate(grad)]
    if callable(grad):
        def pick(k):
            def claim_k(xk, *rest):
                out = grad(*held[:k], xk, *held[k + 1:], *rest)
                if not isinstance(out, (tuple, list)) or len(out) != count:
                    raise TypeError(
                        f"with {count} inputs, grad(*xs) must return a tuple of {count} gradients, "
                        f"got {type(out).__name__}"
                    )
                return out[k]
            return claim_k
        return [pick(k) for k in range(count)]
    raise TypeError(
        "with several inputs, grad must be None (the backend differentiates), a tuple with one "
        f"claim per input, or a function grad(*xs) returning a tuple; got {type(grad).__name__}"
    )
