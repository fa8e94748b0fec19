"""The JAX adapter: the claimed gradient is ``jax.vjp``'s (``custom_vjp`` rules included).

``gradcheck.check(f, x)`` with a ``jax.Array`` ``x`` and no ``grad=`` checks the gradient
``jax.vjp(f, x)`` gives against central differences of ``f`` itself, on CPU. Only this
module imports jax; the core sees numpy arrays.

float64 and the global ``jax_enable_x64`` flag: a float64 ``jax.Array`` only exists when
the user has enabled x64, and then nothing changes. When a float64 *numpy* array reaches
this backend while x64 is off (``check(f, x_np, backend="jax")``, or the negative
control), every call of ``f`` runs inside the scoped context ``jax.enable_x64(True)``
instead of truncating to float32; the global flag is never changed and the report says so
in a note. A float32 ``jax.Array`` is checked in float32 (with the float32 preset).

:meth:`JaxBackend.audit` adds the checks ``torch.autograd.gradcheck`` users rely on: the
gradient has the input's dtype and shape (jax does not enforce the dtype of a
``custom_vjp`` rule's output), a zero cotangent gives a zero gradient, and the VJP is
reentrant (calling the same ``vjp`` function twice gives the same bits). A violation makes
``check`` raise :class:`~gradcheck.GradientAssertionError` carrying the full report.

>>> import jax.numpy as jnp, gradcheck
>>> x = jnp.asarray([0.3, -1.2, 2.0])
>>> gradcheck.check(lambda t: (jnp.sin(t) * t).sum(), x).passed
True
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._core.errors import FunctionError
from . import register
from ._contract import JAX_VJP, contract_violations, one_output
from ._numpy import _W, control_input


def _enable_x64():
    """A scoped x64 context (``jax.enable_x64`` in new jax, ``jax.experimental`` before)."""
    scoped = getattr(jax, "enable_x64", None)
    if scoped is not None:
        return scoped(True)
    from jax.experimental import enable_x64

    return enable_x64(True)


def _x64_enabled() -> bool:
    """The current (possibly scoped) value of ``jax_enable_x64``."""
    return bool(jax.config.jax_enable_x64)  # type: ignore[attr-defined]  # a dynamic attribute of jax.config


def _output_array(y: Any) -> jax.Array:
    return one_output(y, jax.Array, "jax.vjp needs f to return a jax array")


class JaxBackend:
    """Functions of jax arrays, differentiated by ``jax.vjp`` (``grad=None``).

    A user-supplied ``grad`` (an array, ``grad(x)``, or a VJP ``grad(x, v)`` taking and
    returning jax arrays) is checked instead of jax's gradient.
    """

    name = "jax"
    # JAX is multithreaded and warns that os.fork() may deadlock: a process-pool engine
    # should not pick this backend by itself.
    fork_safe = False

    def accepts(self, x: Any) -> bool:
        return isinstance(x, jax.Array)

    def to_numpy(self, x: Any) -> np.ndarray:
        return np.asarray(x)

    @staticmethod
    def _scope(x: np.ndarray):
        """x64 for the duration of one call, when a float64 input needs it."""
        if np.asarray(x).dtype in (np.float64, np.complex128) and not _x64_enabled():
            return _enable_x64()
        return contextlib.nullcontext()

    def evaluate(self, f: Callable[..., Any], x: np.ndarray) -> np.ndarray:
        with self._scope(x):
            y = f(jnp.asarray(x))
            if isinstance(y, (tuple, list)):
                _output_array(y)  # raises: one output at a time
            return np.array(y, copy=True)

    def _vjp(self, f: Callable[..., Any], x: np.ndarray, cotangent: np.ndarray | None):
        xj = jnp.asarray(x)
        try:
            y, pullback = jax.vjp(f, xj)
        except Exception as exc:
            raise FunctionError(None, "base", None, exc) from exc
        y = _output_array(y)
        if cotangent is None:
            ct = jnp.ones_like(y)
        else:
            wide = np.complex128 if np.iscomplexobj(cotangent) else np.float64
            ct = jnp.asarray(np.asarray(cotangent, dtype=wide)).astype(y.dtype)
        return xj, ct, pullback

    @staticmethod
    def _pull(pullback, ct) -> jax.Array:
        try:
            (g,) = pullback(ct)
        except Exception as exc:  # the user's custom_vjp rule raised
            raise FunctionError(None, "backward", None, exc) from exc
        return g

    def claimed_gradient(
        self, f: Callable[..., Any], x: np.ndarray, cotangent: np.ndarray | None, grad: Any
    ) -> np.ndarray:
        with self._scope(x):
            if grad is not None:
                if callable(grad):
                    args = [jnp.asarray(x)] + ([] if cotangent is None else [jnp.asarray(cotangent)])
                    grad = grad(*args)
                return np.array(grad, copy=True)
            _, ct, pullback = self._vjp(f, x, cotangent)
            return np.array(self._pull(pullback, ct), copy=True)

    def audit(
        self, f: Callable[..., Any], x: np.ndarray, cotangent: np.ndarray | None, grad: Any,
        claimed: np.ndarray,
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``(notes, violations)`` about jax's gradient beyond its values: dtype and shape,
        zero cotangent -> zero gradient, reentrant VJP."""
        notes = []
        if np.asarray(x).dtype == np.float64 and not _x64_enabled():
            notes.append("x is float64 and jax_enable_x64 is off: f ran inside a scoped "
                         "jax.enable_x64(True); the global setting is unchanged")
        if grad is not None:
            return tuple(notes), ()  # a user-supplied gradient is judged by its values only
        with self._scope(x):
            xj, ct, pullback = self._vjp(f, x, cotangent)
            g1 = self._pull(pullback, ct)
            g2 = self._pull(pullback, ct)
            g0 = self._pull(pullback, jnp.zeros_like(ct))
        violations = contract_violations(JAX_VJP, np.asarray(g1), np.asarray(g2), np.asarray(g0), g1.dtype,
                                         xj.dtype, tuple(g1.shape), tuple(xj.shape), claimed)
        return tuple(notes), tuple(violations)

    def control_problem(self) -> tuple[Callable[..., Any], np.ndarray, Any]:
        return control_function, control_input(), None

    # -- forward mode and double backward (gradcheck._orders) ------------------------
    def jvp(self, f: Callable[..., Any], x: np.ndarray, tangents: np.ndarray) -> tuple[np.ndarray, str]:
        """``J t`` for each tangent in ``tangents`` (shape ``(k, *x.shape)``) from
        ``jax.vmap`` of ``jax.jvp`` (``custom_jvp`` rules included), as
        ``(array of shape (k, *y.shape), how)``; a function ``vmap`` refuses falls back
        to k calls of ``jax.jvp``."""
        with self._scope(x):
            xj = jnp.asarray(x)
            one = lambda t: _output_array(jax.jvp(f, (xj,), (t,))[1])  # noqa: E731
            try:
                out = jax.vmap(one)(jnp.asarray(tangents))
                return np.array(out, copy=True), "jax.vmap(jax.jvp)"
            except Exception as exc:  # noqa: BLE001 - vmap refused: a loop still can
                refused = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
            try:
                rows = [np.array(one(jnp.asarray(t)), copy=True) for t in tangents]
            except Exception as exc:
                raise FunctionError(None, "forward-mode", None, exc) from exc
        return np.stack(rows), f"jax.jvp, one call per tangent (jax.vmap refused: {refused})"

    def hvp(self, f: Callable[..., Any], x: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Forward over reverse: ``jax.jvp(jax.grad(f), (x,), (v,))`` (a scalar ``f``)."""
        with self._scope(x):
            xj = jnp.asarray(x)
            try:
                _, h = jax.jvp(jax.grad(f), (xj,), (jnp.asarray(v).astype(xj.dtype),))
            except Exception as exc:
                raise FunctionError(None, "double backward", None, exc) from exc
            return np.array(h, copy=True)


def control_function(x: jax.Array) -> jax.Array:
    """The numpy control function written in jax: sum(w tanh(x)) + |x|^2/2 + sum(x0 x2).

    ``_W`` stays a numpy float64 array so it is converted inside the caller's x64 scope.
    """
    return (_W * jnp.tanh(x)).sum() + 0.5 * (x * x).sum() + (x[0] * x[2]).sum()


register("jax", JaxBackend)
