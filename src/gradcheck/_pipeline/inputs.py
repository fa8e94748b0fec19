"""Several inputs, ``check(f, (x1, x2, ...))``: one report per input, the others held fixed.

:class:`MultiReport` holds the reports; the helpers here split the claim per input, make
``f`` a function of one input, and give ``f`` private copies of every input.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core import claims as _claims
from .._core import status as _status
from .._core.arrays import same_bits
from .._core.config import Config
from .._core.errors import GradientAssertionError, ShapeMismatchError
from .._core.verdict import Verdict
from .._evaluate import at_x
from .._report.html import HtmlViews
from .._report.report import Report
from ..backends import as_gradient
from .prepare import make_cotangent


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


# -- the claims at the door ------------------------------------------------------------------


def claims_at_the_door(f: Any, held: tuple, grad: Any, be: Any, x_np: list[np.ndarray],
                       config: Config | None) -> int:
    """The claim of ``check(f, (x1, ..., xn), grad)`` checked once, before any input is
    differenced, as one input's is (:mod:`gradcheck._core.claims`): array claims by shape; a
    callable claim by its call (``grad(x1, ..., xn)`` for a scalar ``f``, the VJP
    ``grad(x1, ..., xn, v)`` for an array one: ``f(*xs)`` is evaluated once to tell), then
    called once on private copies, watched for writes into them, and what it returns held to
    the inputs' shapes: a tuple of n gradients for one function, input k's gradient for the
    k-th of a tuple of claims. Errors name the call, and both shapes or counts.

    ``held`` are the inputs ``f`` is given (private copies), ``x_np`` their values as numpy
    arrays (the snapshots). Returns the evaluations of ``f`` it made (1 with a callable claim,
    else 0), for the reports to count.
    """
    shapes = [a.shape for a in x_np]
    names = _claims.input_names(len(held))
    several = isinstance(grad, (tuple, list))
    for k, g in enumerate(grad if several else ()):
        if g is not None and not callable(g):
            _require_shape(g, shapes[k], f"grad[{k}] (the claim for {names[k]})")
    if not (callable(grad) or (several and any(callable(g) for g in grad))):
        return 0
    y_shape = _output_shape(f, held, be, x_np[0])
    cotangent = None if not y_shape else make_cotangent(y_shape, config or Config())
    if callable(grad):
        params = _claims.of_inputs(grad, "grad", x_shapes=shapes, y_shape=y_shape)
        label = _claims.claim_label("grad", params)
        value = _probe(be, f, grad, held, x_np, cotangent, params, label)
        if value is not _UNCALLED:
            _tuple_of_gradients(value, shapes, names, label)
        return 1
    for k, g in enumerate(grad):
        if callable(g):
            params = _claims.of_inputs(g, f"grad[{k}]", x_shapes=shapes, y_shape=y_shape, one=k)
            label = _claims.claim_label(f"grad[{k}]", params)
            value = _probe(be, f, g, held, x_np, cotangent, params, label)
            if value is not _UNCALLED:
                _require_shape(value, shapes[k], f"{label}, the gradient for {names[k]},")
    return 1


def _output_shape(f: Any, held: tuple, be: Any, x0: np.ndarray) -> tuple[int, ...]:
    """The shape of ``f(*held)``: one evaluation, through the backend as ``check`` makes them
    (the layer's rule for f at x itself, :func:`gradcheck._evaluate.at_x`)."""
    return tuple(np.shape(at_x(lambda: be.evaluate(with_input(f, held, 0), np.array(x0, copy=True)))))


#: What :func:`_probe` returns when the backend did not call the claim (nothing to check).
_UNCALLED = object()


def _probe(be: Any, f: Any, claim: Any, held: tuple, x_np: list[np.ndarray], cotangent: np.ndarray | None,
           params: tuple[str, ...], label: str) -> Any:
    """What ``claim(x1, ..., xn[, v])`` returns, called once through the backend (its array
    type, its scopes) on private copies: a write into any of them is blamed on the claim."""
    others = tuple(private_copy(e) for e in held)
    returned = []

    def whole(x0: Any, *rest: Any) -> np.ndarray:
        returned.append(claim(x0, *others[1:], *rest))
        return np.zeros(())  # what the backend converts; the claim's own value is kept above

    _claims.call_watched(lambda xx, vv: be.claimed_gradient(with_input(f, others, 0), xx, vv, whole),
                         (x_np[0], cotangent), (params[0], "v"), label)
    for j in range(1, len(held)):
        if not same_bits(np.asarray(be.to_numpy(others[j])), x_np[j]):
            raise _claims.claim_wrote(label, params[j])
    return returned[0] if returned else _UNCALLED  # a backend that never calls a claim: nothing to hold it to


def _tuple_of_gradients(value: Any, shapes: list[tuple[int, ...]], names: tuple[str, ...], label: str) -> None:
    """``value`` must be a tuple (or list) of one gradient per input, each shaped like it."""
    count = len(shapes)
    wanted = f"{count} gradients shaped like {_claims.shapes_text(names, shapes)}"
    if not isinstance(value, (tuple, list)):
        got = f"a single array of shape {tuple(np.shape(value))}" if hasattr(value, "shape") else \
            f"a {type(value).__name__}"
        raise TypeError(f"{label} returned {got}, not a tuple of {wanted}: return one gradient per input, "
                        "in the order f takes them")
    if len(value) != count:
        got = ", ".join(str(tuple(np.shape(g))) if hasattr(g, "shape") else type(g).__name__ for g in value)
        raise TypeError(f"{label} returned {len(value)} gradient{'s' if len(value) != 1 else ''} ({got}), but f "
                        f"takes {count} inputs: it must return {wanted}, one per input, in the order f takes them")
    for k, g in enumerate(value):
        _require_shape(g, shapes[k], f"{label}[{k}], the gradient for {names[k]},")


def _require_shape(value: Any, shape: tuple[int, ...], what: str) -> None:
    """``value`` has ``shape`` (:class:`ShapeMismatchError` naming both if not). Only the shape:
    a complex gradient of a complex input, say, is the later stages' to judge; what is no array
    at all (None, a ragged list) is refused as :func:`as_gradient` refuses it."""
    got: tuple[int, ...] | None
    try:
        got = tuple(value.shape) if hasattr(value, "shape") else tuple(np.shape(value))
    except ValueError:  # a ragged list
        got = None
    if got is None or value is None or isinstance(value, (str, bytes)):
        as_gradient(value, shape, what, copy=False)  # raises, saying what it is
    elif got != tuple(shape):
        raise ShapeMismatchError(what, tuple(shape), got)
