"""Backends: where the claimed gradient comes from (numpy, dual numbers, frameworks).

Stage 1 of a check, adapt ``f``. In: ``f``, ``x`` (a numpy array, a torch tensor, a jax
array) and the claim, or none. Out: a :class:`Backend` that evaluates ``f`` on float64
numpy arrays and gives the claimed gradient as one (``_claimed``), with the framework's
autodiff contract audited (``_contract``). Modules: ``_protocol`` (the Backend protocol),
``_numpy`` (a hand-written claim), ``_dual`` (the dual-number adapter over
``gradcheck.dual``), ``_torch`` and ``_jax`` (loaded when their backend is asked for),
``_registry`` (``backend=`` names: :func:`register`, :func:`resolve`).
Must not import: the engines and every stage after them, nor any feature; torch and jax
only in their own modules.
"""
from __future__ import annotations

from typing import Any

from ._claimed import as_gradient as as_gradient
from ._numpy import CONTROL_WEIGHTS as CONTROL_WEIGHTS
from ._numpy import NumpyBackend as NumpyBackend
from ._numpy import control_function as control_function
from ._numpy import control_gradient as control_gradient
from ._numpy import control_input as control_input
from ._protocol import Backend as Backend
from ._protocol import Wrapping as Wrapping
from ._registry import known_backends as known_backends
from ._registry import register as register
from ._registry import resolve as resolve

#: check_params' model adapters (a torch module or dict of tensors, a jax pytree), likewise.
_MODEL_ADAPTERS = {"torch": "._torch_model", "jax": "._jax_model"}


def model_problem(framework: str, adapter: str, *args: Any) -> Any:
    """``adapter(*args)`` of ``framework``'s model adapter (``"torch"``: ``module_problem``,
    ``tensors_problem``; ``"jax"``: ``is_pytree_of_arrays``, ``pytree_problem``), imported on
    first use: check_params of a model as its framework holds it (a ``_models.ModelProblem``)."""
    import importlib

    return getattr(importlib.import_module(_MODEL_ADAPTERS[framework], __name__), adapter)(*args)


def jax_x64() -> Any:
    """jax's scoped x64 context (``jax.enable_x64(True)``, or ``jax.experimental``'s in older
    jax), imported on first use: the jax negative control builds its float64 input in it."""
    import importlib

    return importlib.import_module("._jax", __name__)._enable_x64()

