"""The negative control of every kind of claim of ``gradcheck._orders``: a planted error must be caught
(at exactly its entries, where the check is entry-wise) and the correct claim must pass.

``assert_detects_wrong_gradient(backend, kind=...)`` runs these for ``kind`` in
``"jvp"``, ``"hvp"``, ``"adjoint"``, ``"taylor"``, ``"complex"``. Each uses the backend's
control function (``sum(w tanh(x)) + |x|^2/2 + sum(x0 x2)`` on a fixed 3x4 input): with
numpy the claims are hand-written here (JVP, HVP, the complex twin); with torch and jax
they are the framework's own (forward mode, double backward, autograd on complex), and the
planted errors are applied to what the framework returns. The corruptions are
``corrupt.CORRUPTIONS``: a 1e-3 relative error at (1, 2) and a sign flip at (2, 0).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import backends
from .._core.errors import GradientAssertionError
from .._core.verdict import Verdict
from .._orders import check_adjoint, check_hvp, check_jvp, symmetric_hessian, taylor_test
from .._orders import hvp_claim as _hvp_claim
from .._pipeline.check import check
from ..backends import CONTROL_WEIGHTS, control_gradient, control_input
from .corrupt import CORRUPTIONS

if TYPE_CHECKING:
    from ..backends import Backend

KINDS = ("grad", "jvp", "hvp", "adjoint", "taylor", "complex")
EXPECTED = sorted(ix for ix, _ in CORRUPTIONS)


def run_control(kind: str, backend: Any = "numpy", **options: Any) -> None:
    """Raise :class:`~gradcheck.GradientAssertionError` unless the ``kind`` check, through
    ``backend``, catches its planted error and passes the correct claim."""
    if kind not in KINDS[1:]:
        raise ValueError(f"kind={kind!r} is not one of {KINDS}")
    be = backends.resolve(backend, None)
    {"jvp": _jvp, "hvp": _hvp, "adjoint": _adjoint, "taylor": _taylor, "complex": _complex}[kind](be, options)


# -- planted errors ------------------------------------------------------------------------


def corrupt_entries(a: np.ndarray) -> np.ndarray:
    """``a`` with CORRUPTIONS applied (a copy)."""
    a = np.array(a, copy=True)
    for ix, factor in CORRUPTIONS:
        a[ix] = a[ix] * factor
    return a


class _Planted:
    """``inner`` with some methods replaced (a proxy: everything else is the inner's)."""

    def __init__(self, inner: Backend, **methods: Callable[..., object]) -> None:
        self._inner = inner
        self.name = f"corrupted-{inner.name}"
        self.__dict__.update(methods)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._inner, attr)


def _framework(be: Backend) -> bool:
    return hasattr(be, "jvp")


def _numpy_jvp(x, t):
    return np.sum(control_gradient(x) * t)


def _numpy_hvp(x, v):
    th = np.tanh(x)
    hv = CONTROL_WEIGHTS * (-2.0 * th * (1.0 - th**2)) * v + v
    hv[0] = hv[0] + v[2]
    hv[2] = hv[2] + v[0]
    return hv


# -- the controls --------------------------------------------------------------------------


def _require(report: Any, what: str, be: Backend, *, exact: bool = True) -> None:
    if exact:
        ok = report.passed and report.counts[Verdict.PASS] == report.size
    else:
        ok = report.passed
    if not ok:
        raise GradientAssertionError(f"negative control failed: the CORRECT {what} through backend "
                                     f"{be.name!r} was not passed, so the checker cries wolf\n{report}", report)


def _require_flagged(report: Any, what: str, be: Backend) -> None:
    flagged = sorted(report.entries(Verdict.MISMATCH))
    if flagged != EXPECTED:
        raise GradientAssertionError(f"negative control failed: {what} corrupted at {EXPECTED} through backend "
                                     f"{be.name!r}, but the checker flagged {flagged}\n{report}", report)


def _jvp(be: Any, options: dict[str, Any]) -> None:
    f, x, _ = be.control_problem()
    if _framework(be):
        good_be, jvp = be, None

        def planted(f_, x_, tangents):
            out, how = be.jvp(f_, x_, tangents)
            return out + _planted_columns(be, f_, x_, tangents), how

        bad_be, bad_jvp = _Planted(be, jvp=planted), None
    else:
        good_be, jvp = be, _numpy_jvp
        bad_be, bad_jvp = be, lambda x_, t: _numpy_jvp(x_, t) + np.sum(
            [(factor - 1) * t[ix] * control_gradient(x_)[ix] for ix, factor in CORRUPTIONS])
    _require(check_jvp(f, x, jvp, backend=good_be, name=f"control[{be.name}, jvp]", **options), "JVP", be)
    bad = check_jvp(f, x, bad_jvp, backend=bad_be, name=f"control[{be.name}, jvp, corrupted]", **options)
    _require_flagged(bad, "the JVP", be)


def _planted_columns(be, f, x, tangents) -> np.ndarray:
    """``sum_ix (factor - 1) t[ix] J e_ix`` for each tangent: the planted error of a JVP."""
    extra: Any = 0.0
    for ix, factor in CORRUPTIONS:
        e = np.zeros((1,) + x.shape, dtype=x.dtype)
        e[(0,) + ix] = 1
        column, _ = be.jvp(f, x, e)
        weights = tangents[(slice(None),) + ix].astype(np.float64)
        extra = extra + (factor - 1) * weights.reshape((-1,) + (1,) * (column.ndim - 1)) * column
    return extra


def _hvp(be: Any, options: dict[str, Any]) -> None:
    f, x, _ = be.control_problem()
    good_hvp = None if _framework(be) else _numpy_hvp
    if _framework(be):
        good = check_hvp(f, x, None, backend=be, name=f"control[{be.name}, hvp]", **options)
        planted = _Planted(be, hvp=lambda f_, x_, v: corrupt_entries(be.hvp(f_, x_, v)))
        bad_args: dict[str, Any] = dict(hvp=None, backend=planted)
    else:
        good = check_hvp(f, x, _numpy_hvp, grad=control_gradient, backend=be,
                         name=f"control[{be.name}, hvp]", **options)
        bad_args = dict(hvp=lambda x_, v: corrupt_entries(_numpy_hvp(x_, v)), grad=control_gradient, backend=be)
    _require(good, "Hessian-vector product", be)
    bad = check_hvp(f, x, name=f"control[{be.name}, hvp, corrupted]", symmetry=False, **bad_args, **options)
    _require_flagged(bad, "the Hessian-vector product", be)
    # the corruption at (2, 0) breaks the symmetry of H: the symmetric test must say so
    wrong = _hvp_claim(f, bad_args["backend"], bad_args["hvp"])
    x_np = np.array(be.to_numpy(x), copy=True)
    if symmetric_hessian(wrong, x_np).passed or not symmetric_hessian(_hvp_claim(f, be, good_hvp), x_np).passed:
        raise GradientAssertionError("negative control failed: the symmetric-Hessian test did not tell a "
                                     f"Hessian corrupted at {EXPECTED} (not symmetric) from the correct one "
                                     f"through backend {be.name!r}", None)


def _adjoint(be: Backend, options: dict[str, Any]) -> None:
    _no_engine("adjoint", options)
    f, x, _ = be.control_problem()
    if _framework(be):
        good = check_adjoint(None, None, x, f=f, backend=be, name=f"control[{be.name}, adjoint]")
        planted = _Planted(be, claimed_gradient=lambda f_, x_, v, g: corrupt_entries(be.claimed_gradient(f_, x_, v, g)))
        bad = check_adjoint(None, None, x, f=f, backend=planted, name=f"control[{be.name}, adjoint, corrupted]")
    else:
        w = np.random.default_rng(17).standard_normal((7, x.size))
        fv = lambda z: np.tanh(w @ z.reshape(-1))  # noqa: E731
        jvp = lambda z, t: (1 - fv(z) ** 2) * (w @ t.reshape(-1))  # noqa: E731
        vjp = lambda z, v: (w.T @ ((1 - fv(z) ** 2) * v)).reshape(z.shape)  # noqa: E731
        wrong = lambda z, v: (w[:, ::-1].T @ ((1 - fv(z) ** 2) * v)).reshape(z.shape)  # noqa: E731
        good = check_adjoint(jvp, vjp, x, f=fv, name=f"control[{be.name}, adjoint]")
        bad = check_adjoint(jvp, wrong, x, f=fv, name=f"control[{be.name}, adjoint, transposed-wrong vjp]")
    if not good.passed:
        raise GradientAssertionError("negative control failed: a CORRECT jvp/vjp pair failed the adjoint "
                                     f"test\n{good}", good)
    if bad.passed or not bad.blame or bad.blame["vjp_agrees"] or not bad.blame["jvp_agrees"]:
        raise GradientAssertionError("negative control failed: the adjoint test did not flag a wrong vjp "
                                     f"(and name it)\n{bad}", bad)


def _taylor(be: Any, options: dict[str, Any]) -> None:
    _no_engine("taylor", options)
    f, x, _ = be.control_problem()
    grad: Callable[[np.ndarray], np.ndarray] | None
    hvp: Callable[[np.ndarray, np.ndarray], np.ndarray] | str
    wrong: list[dict[str, Any]]
    if _framework(be):
        grad, hvp = None, "backend"
        wrong_grad = lambda f_, x_, v, g: corrupt_entries(be.claimed_gradient(f_, x_, v, g))  # noqa: E731
        wrong_hvp = lambda f_, x_, v: corrupt_entries(be.hvp(f_, x_, v))  # noqa: E731
        wrong = [dict(backend=_Planted(be, claimed_gradient=wrong_grad)),
                 dict(hvp="backend", backend=_Planted(be, hvp=wrong_hvp))]
    else:
        grad, hvp = control_gradient, _numpy_hvp
        wrong = [dict(grad=lambda z: corrupt_entries(control_gradient(z)), backend=be),
                 dict(grad=control_gradient, hvp=lambda z, v: corrupt_entries(_numpy_hvp(z, v)), backend=be)]
    good = taylor_test(f, x, grad, hvp, backend=be, name=f"control[{be.name}, taylor]")
    if not good.passed:
        raise GradientAssertionError(f"negative control failed: the CORRECT gradient and Hessian failed the "
                                     f"Taylor test\n{good}", good)
    for args in wrong:
        bad = taylor_test(f, x, name=f"control[{be.name}, taylor, corrupted]", **args)
        if bad.passed:
            raise GradientAssertionError("negative control failed: the Taylor test passed a corrupted "
                                         f"claim\n{bad}", bad)


def _complex(be: Backend, options: dict[str, Any]) -> None:
    f, x, grad = complex_control_problem(be)
    good = check(f, x, grad, backend=be, name=f"control[{be.name}, complex]", **options)
    _require(good, "complex gradient", be)
    if grad is None:
        planted = _Planted(be, claimed_gradient=lambda f_, x_, v, g: corrupt_entries(be.claimed_gradient(f_, x_, v, g)))
        bad = check(f, x, None, backend=planted, name=f"control[{be.name}, complex, corrupted]", **options)
    else:
        bad = check(f, x, lambda z: corrupt_entries(grad(z)), backend=be,
                    name=f"control[{be.name}, complex, corrupted]", **options)
    _require_flagged(bad, "the complex gradient", be)


def complex_control_problem(be: Backend) -> tuple[Callable[..., Any], Any, Any]:
    """A complex control: ``sum(w |z|^2) + Re sum(z0 z2)`` at a fixed 3x4 complex input,
    with its PyTorch-convention gradient for numpy (the frameworks use their own)."""
    z = control_input() + 1j * control_input()[::-1, ::-1]
    w = CONTROL_WEIGHTS
    if be.name == "torch":
        import torch

        wt = torch.from_numpy(w)
        return (lambda t: (wt * t.abs() ** 2).sum() + (t[0] * t[2]).real.sum()), torch.from_numpy(z), None
    if be.name == "jax":
        import jax.numpy as jnp

        with backends.jax_x64():
            zj = jnp.asarray(z)
        return (lambda t: (w * jnp.abs(t) ** 2).sum() + (t[0] * t[2]).real.sum()), zj, None

    def grad(t):  # dL/dRe z + i dL/dIm z: 2 w z, and conj of the other row for Re(z0 z2)
        g = 2 * w * t
        g[0] = g[0] + np.conj(t[2])
        g[2] = g[2] + np.conj(t[0])
        return g

    return (lambda t: np.sum(w * np.abs(t) ** 2) + np.sum((t[0] * t[2]).real)), z, grad


def _no_engine(kind: str, options: dict[str, Any]) -> None:
    if options.get("engine", "auto") != "auto" or options.get("executor") is not None:
        raise ValueError(f"kind={kind!r} is a global test that runs no engine; drop engine=/executor=")
