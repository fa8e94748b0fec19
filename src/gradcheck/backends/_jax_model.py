"""JAX models for ``check_params``: a loss of a pytree of parameters (e.g. a dict of ``jax.Array``).

``check_params(loss, params)`` with ``params`` a pytree whose leaves are jax arrays checks
``jax.grad(loss)(params)`` (``custom_vjp`` and ``custom_jvp`` rules included) at every entry of
every leaf; leaves are named by their path (``"layers.0.w"``). Every evaluation rebuilds the
pytree from the check's numpy arrays (the user's arrays are immutable anyway). float64
leaves run inside a scoped ``jax.enable_x64(True)`` (the global flag is never changed); a
float32 pytree whose loss is precision-generic is checked in float64 there, otherwise in
float32. Imports jax.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._core.errors import FunctionError, UnsupportedInputError
from ._jax import _enable_x64, _x64_enabled
from ._models import ModelProblem, precision_note, read_only, same_function


def is_pytree_of_arrays(params: Any) -> bool:
    """Whether ``params`` is a pytree (dict, list, tuple, ...) holding a jax array leaf."""
    if isinstance(params, jax.Array):
        return False
    return any(isinstance(leaf, jax.Array) for leaf in jax.tree_util.tree_leaves(params))


def _key(k: Any) -> str:
    for attr in ("key", "idx", "name"):
        if hasattr(k, attr):
            return str(getattr(k, attr))
    return str(k)


def _names(params: Any) -> tuple[list[str], list[Any], Any]:
    with_path, treedef = jax.tree_util.tree_flatten_with_path(params)
    names = [".".join(_key(k) for k in path) or "params" for path, _ in with_path]
    return names, [leaf for _, leaf in with_path], treedef


def _scope(wide: bool):
    return _enable_x64() if wide and not _x64_enabled() else contextlib.nullcontext()


def pytree_problem(loss: Callable[[Any], Any], params: Any, grads: Any = None) -> ModelProblem:
    """``check_params(loss, pytree[, grads])`` as numpy (see the module docstring)."""
    names, leaves, treedef = _names(params)
    bad = [n for n, a in zip(names, leaves) if not isinstance(a, (jax.Array, np.ndarray))
           or not jnp.issubdtype(a.dtype, jnp.floating)]
    if bad:
        raise UnsupportedInputError(f"leaves {bad} of params are not real floating arrays")
    arrays = [np.asarray(a) for a in leaves]
    wide, notes, why = all(a.dtype == np.float64 for a in arrays), [], ""
    if not wide:
        wide, why = _generic(loss, treedef, arrays)
        notes.append(precision_note("JAX", wide, why))
        if not wide and any(a.dtype not in (np.float32, np.float64) for a in arrays):
            raise UnsupportedInputError(f"float16/bfloat16 leaves whose loss is not precision-generic ({why}): "
                                        "check_params screens float32 and float64 only")
    ours = {n: read_only(a.astype(np.float64) if wide and a.dtype != np.float64 else a) for n, a in zip(names, arrays)}

    def rebuild(arrays_by_name: Mapping[str, np.ndarray]) -> Any:
        return jax.tree_util.tree_unflatten(treedef, [jnp.asarray(arrays_by_name[n]) for n in names])

    def loss_np(arrays_by_name: Mapping[str, np.ndarray]) -> np.ndarray:
        with _scope(wide):
            return np.array(loss(rebuild(arrays_by_name)), copy=True)

    loss_np.gradcheck_mp_capable = False  # type: ignore[attr-defined]  # jax code: no arbitrary precision
    loss_np.gradcheck_backend = "jax"  # type: ignore[attr-defined]  # not fork-safe (jax's runtime)
    if grads is None:
        with _scope(wide):
            try:
                tree = jax.grad(loss)(rebuild(ours))
            except Exception as exc:
                raise FunctionError(None, "backward", None, exc) from exc
        claim = {n: np.asarray(g) for n, g in zip(names, jax.tree_util.tree_leaves(tree))}
    else:
        _, given, _ = _names(grads)
        claim = {n: np.asarray(g) for n, g in zip(names, given)}
    return ModelProblem(loss_np, ours, claim, "jax", notes)


def _generic(loss, treedef, arrays: list[np.ndarray]) -> tuple[bool, str]:
    """Whether the loss computes the same function on float64 leaves (in the x64 scope)."""
    try:
        value32 = float(np.asarray(loss(jax.tree_util.tree_unflatten(treedef, [jnp.asarray(a) for a in arrays]))))
    except Exception as exc:
        raise FunctionError(None, "base", None, exc) from exc
    with _scope(True):
        try:
            value64 = np.asarray(loss(jax.tree_util.tree_unflatten(
                treedef, [jnp.asarray(a.astype(np.float64)) for a in arrays])))
        except Exception as exc:
            return False, f"with float64 leaves it raised {type(exc).__name__}: {str(exc)[:100]}"
    if same_function(value32, value64):
        return True, ""
    return False, f"with float64 leaves it returned {value64!r} ({value64.dtype}) for {value32!r}"
