"""Complex inputs and outputs in ``check``: two real problems, verdicts per complex entry.

A function of complex ``z`` (or with complex output) is checked through its *real view*:
``z`` as the real array ``[Re z, Im z]`` (a last axis of 2), a complex output ``y`` as
``[Re y, Im y]``. An array output is reduced, as always, with a seeded real cotangent on
that view, i.e. the real-valued loss ``L = Re sum(conj(v) y)`` with complex ``v``. The
real and imaginary parts of every input entry are then differenced separately by the
ordinary pipeline, and the two verdicts of an entry are combined into one (the worse).

Which complex number is "the gradient" is a convention; both are supported:

* ``"torch"`` (PyTorch's, the default for numpy and torch input):
  ``grad = dL/dRe z + i dL/dIm z`` (for ``L = |z|^2``: ``2 z``); an array output's VJP is
  called with the cotangent ``v``;
* ``"jax"`` (the default for jax input): the conjugate, ``dL/dRe z - i dL/dIm z``
  (``jax.grad`` of ``|z|^2`` is ``2 conj(z)``); an array output's VJP is called with
  ``conj(v)``, as ``jax.vjp`` expects.

The referee runs on complex problems as on real ones, where ``f`` is numpy code: its
arbitrary-precision copy of the real view holds ``MPFloat`` pairs, which ``from_real_view``
turns into ``gradcheck.mp.MPComplex`` values (a complex output is read back with
``gradcheck.mp.complex_parts``); each part of an entry in doubt gets its exact derivative.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import backends
from .._adjudicate.referee import referee_may_run
from .._core import arguments as _arguments
from .._core.errors import ShapeMismatchError, UnsupportedInputError
from .._core.sparse import SparseColumn
from .._core.verdict import Verdict
from .._evaluate import at_x
from .._report.report import Report
from .claims import ClaimBackend

CONVENTIONS = ("torch", "jax")
# Which verdict of the two parts speaks for the entry: the worst news wins.
_SEVERITY = {Verdict.PASS: 0, Verdict.SKIPPED: 1, Verdict.UNCHECKED: 2, Verdict.KINK: 3,
             Verdict.NONFINITE: 4, Verdict.MISMATCH: 5}
_REAL_OF = {"complex128": np.float64, "complex64": np.float32}


def default_convention(backend: Any) -> str:
    """``"jax"`` for the jax backend, ``"torch"`` for everything else."""
    # "corrupted-jax" (the negative control's wrapper) is still jax
    return "jax" if str(getattr(backend, "name", "")).split("-")[-1] == "jax" else "torch"


def validate_convention(convention: str | None) -> None:
    if convention is not None and convention not in CONVENTIONS:
        raise ValueError(f"complex_convention={convention!r} is not one of {CONVENTIONS} (or None: "
                         "'jax' for jax input, 'torch' otherwise)")


def check_complex(check: Callable[..., Any], f: Callable[..., Any], x_np: np.ndarray, grad: Any, be: Any,
                  convention: str | None, options: dict[str, Any], spent: int = 0) -> Report:
    """``check`` of ``f`` at a complex ``x_np`` (or of an ``f`` with complex output) on
    the real view; a complex input's report has one verdict per complex entry. Its
    ``evaluations`` add ``spent`` (the calls of ``f`` made before) and the call here
    that tells whether the output is complex."""
    convention = convention or default_convention(be)
    complex_in = x_np.dtype.kind == "c"
    if complex_in and x_np.dtype.name not in _REAL_OF:
        raise UnsupportedInputError(f"x has dtype {x_np.dtype}; complex inputs are complex64 or complex128")
    xr = real_view(x_np) if complex_in else x_np
    to_input = (lambda r: from_real_view(r, x_np.dtype)) if complex_in else (lambda r: r)  # noqa: E731
    complex_out = np.iscomplexobj(at_x(lambda: be.evaluate(f, x_np.copy())))
    if complex_out and grad is not None and not callable(grad):
        raise TypeError("f returns complex values, so the claimed gradient must be a VJP function grad(x, v): "
                        "the gradient of the real loss Re sum(conj(v) f(x)) for a complex cotangent v "
                        "(an array can only be the gradient of a real scalar)")

    def f_real(r: np.ndarray) -> np.ndarray:
        y = np.asarray(be.evaluate(f, to_input(r)))
        return real_view(y) if complex_out else y

    f_real.__name__ = _arguments.label_of(f)
    mp_ok = referee_may_run(be, f)[0]
    f_real.gradcheck_mp_capable = mp_ok  # type: ignore[attr-defined]  # the user's f decides
    claim = _claim(f, be, grad, convention, complex_in, complex_out, to_input)
    wrapper = ClaimBackend(backends.resolve("numpy", xr), claim, name=f"complex-{be.name}", mp_capable=mp_ok)
    real = check(f_real, xr, None, backend=wrapper, **options)
    real = dataclasses.replace(real, evaluations=real.evaluations + spent + 1)
    notes = [_convention_note(convention, complex_in, complex_out)]
    if not complex_in:
        return dataclasses.replace(real, notes=real.notes + tuple(notes))
    return combine(real, convention, tuple(notes))


def real_view(a: np.ndarray) -> np.ndarray:
    """``[Re a, Im a]`` on a new last axis (a real array of the matching precision; for the
    referee's arbitrary-precision values, MPFloat pairs)."""
    a = np.asarray(a)
    if a.dtype == object:
        from ..mp import complex_parts

        return np.stack(complex_parts(a), axis=-1)
    return np.ascontiguousarray(np.stack([a.real, a.imag], axis=-1))


def from_real_view(r: np.ndarray, dtype: Any) -> np.ndarray:
    """The complex array whose real view is ``r`` (MPComplex values for the referee's
    arbitrary-precision copy, whose entries are MPFloat)."""
    if r.dtype == object:
        from ..mp import complex_from_parts

        return complex_from_parts(r[..., 0], r[..., 1])
    z = np.empty(r.shape[:-1], dtype=dtype)
    z.real, z.imag = r[..., 0], r[..., 1]
    return z


def _claim(f, be, grad, convention: str, complex_in: bool, complex_out: bool, to_input):
    """The real view of the claimed complex gradient, as a function ``(r, v) -> array``."""
    sign = 1.0 if convention == "torch" else -1.0

    def claim(r: np.ndarray, v: np.ndarray | None) -> np.ndarray:
        cot = v
        if v is not None and complex_out:
            cot = v[..., 0] + 1j * v[..., 1]
            cot = cot if convention == "torch" else np.conj(cot)
        g = np.asarray(be.claimed_gradient(f, to_input(r.copy()), cot, grad))
        if not complex_in:
            if np.iscomplexobj(g):
                raise UnsupportedInputError(
                    f"the claimed gradient is complex ({g.dtype}) but x is real: for a real input and a "
                    "complex output the VJP returns a real array")
            return g
        if g.shape != r.shape[:-1]:
            raise ShapeMismatchError("claimed gradient", r.shape[:-1], g.shape)
        return np.stack([g.real, sign * g.imag], axis=-1)

    return claim


def _convention_note(convention: str, complex_in: bool, complex_out: bool) -> str:
    parts = []
    if complex_in:
        rule = "dL/dRe z + i dL/dIm z (PyTorch's; |z|^2 -> 2z)" if convention == "torch" else \
            "dL/dRe z - i dL/dIm z (JAX's conjugate; |z|^2 -> 2 conj(z))"
        parts.append(f"complex input: real and imaginary parts differenced separately; convention "
                     f"{convention!r}: grad = {rule}")
    if complex_out:
        ct = "v" if convention == "torch" else "conj(v)"
        parts.append(f"complex output: reduced as L = Re sum(conj(v) y) with a seeded complex v; "
                     f"the VJP is called with {ct}")
    return "; ".join(parts)


def combine(real: Report, convention: str, notes: tuple[str, ...]) -> ComplexReport:
    """One verdict per complex entry from the report on the real view (last axis: re, im)."""
    codes = real.codes
    severity = np.vectorize(lambda c: _SEVERITY[Verdict(int(c))], otypes=[np.int8])(codes)
    worst = np.argmax(severity, axis=-1)[..., None]
    pick = lambda a: np.take_along_axis(a, worst, axis=-1)[..., 0]  # noqa: E731
    sign = 1.0 if convention == "torch" else -1.0
    to_c = lambda a: a[..., 0] + 1j * sign * a[..., 1]  # noqa: E731
    fields = {
        "analytic": to_c(real.analytic), "numeric": to_c(real.numeric),
        "noise": real.noise.max(axis=-1), "tolerance": pick(real.tolerance), "codes": pick(codes),
        "refined": real.refined.any(axis=-1),
        "causes": None if real.causes is None else pick(real.causes),
        "measured": {k: _complex_column(col, to_c) for k, col in real.measured.items()},
        "digits": None if real.digits is None else real.digits.min(axis=-1),
        "step_study": {},  # a study is of one part: the real view's report (parts) holds them
    }
    base = {f.name: getattr(real, f.name) for f in dataclasses.fields(Report)}
    base.update(fields)
    base["notes"] = real.notes + notes
    return ComplexReport(**base, convention=convention, parts=real)


def _complex_column(col: SparseColumn, to_c: Callable[[np.ndarray], np.ndarray]) -> SparseColumn:
    """``to_c`` of a sparse column of the real view (last axis: re, im), entry by entry where
    either part was measured: what ``to_c`` of the dense array gives, without it."""
    entries = np.unique(col.positions // 2)
    pairs = col.take(np.stack([2 * entries, 2 * entries + 1], axis=-1))
    fill = to_c(np.full((1, 2), col.fill, dtype=col.dtype))[0]
    return SparseColumn.from_entries(col.shape[:-1], entries, to_c(pairs), fill=fill)


@dataclasses.dataclass(frozen=True, eq=False)
class ComplexReport(Report):
    """A :class:`~gradcheck.Report` over complex entries: ``analytic`` and ``numeric``
    are complex (in the report's ``convention``); ``parts`` is the report on the real
    view (last axis: real part, imaginary part), where each part has its own verdict.

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> z = np.array([1 + 2j, -0.5 + 0.3j])
    >>> r = gradcheck.check(lambda z: np.sum(np.abs(z) ** 2), z, lambda z: 2 * z)
    >>> type(r).__name__, r.passed, r.convention, r.parts.shape
    ('ComplexReport', True, 'torch', (2, 2))
    """

    convention: str = "torch"
    parts: Report | None = None

    @property
    def rel_error(self) -> np.ndarray:
        with np.errstate(invalid="ignore", over="ignore"):
            scale = np.maximum(np.maximum(np.abs(self.analytic), np.abs(self.numeric)), 1e-12)
            return np.abs(self.analytic - self.numeric) / scale

    def excess(self) -> np.ndarray:
        """The larger of the two parts' ``|a - n| / tolerance``."""
        assert self.parts is not None  # combine() always sets it
        return self.parts.excess().max(axis=-1)

    def to_dict(self, *, arrays: bool = False, limit: int = 1000) -> dict[str, Any]:
        """As :meth:`Report.to_dict` (every key of the real view's dict is kept), with the
        entries, counts and shape per complex entry, complex values as ``[re, im]``;
        ``parts`` holds the real view's own dict (each part's verdict and values)."""
        assert self.parts is not None
        parts = self.parts.to_dict(arrays=arrays, limit=limit)
        out = {k: v for k, v in parts.items() if k not in ("entries", "entries_truncated") and k not in
               ("analytic", "numeric", "noise", "tolerance", "verdicts")}
        flagged = self.entries([v for v in Verdict if v is not Verdict.PASS])
        pair = lambda z: [_num(z.real), _num(z.imag)]  # noqa: E731
        out.update(name=self.name, passed=self.passed, shape=list(self.shape), convention=self.convention,
                   counts={v.name: n for v, n in self.counts.items()}, notes=list(self.notes))
        out["entries"] = [{"index": list(ix), "verdict": Verdict(int(self.codes[ix])).name,
                           "claimed": pair(self.analytic[ix]), "numeric": pair(self.numeric[ix]),
                           "rel_error": _num(self.rel_error[ix]), "cause": self.cause(ix).name}
                          for ix in flagged[:limit]]
        out["entries_truncated"] = len(flagged) > limit
        out["parts"] = parts
        return out


def _num(v: Any) -> float | str:
    v = float(v)
    return v if np.isfinite(v) else str(v)
