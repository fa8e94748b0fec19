"""Backends: where the claimed gradient comes from (numpy, dual numbers, frameworks).

Stage 1 of a check, adapt ``f``. In: ``f``, ``x`` (a numpy array, a torch tensor, a jax
array) and the claim, or none. Out: a :class:`Backend` that evaluates ``f`` on float64
numpy arrays and gives the claimed gradient as one (``_claimed``), with the framework's
autodiff contract audited (``_contract``). Modules: ``_protocol`` (the Backend protocol),
``_numpy`` (a hand-written claim), ``_dual`` (the dual-number adapter over
``gradcheck.dual``), ``_torch`` and ``_jax`` (loaded when their backend is asked for).
Must not import: the engines and every stage after them, nor any feature; torch and jax
only in their own modules.
"""
from __future__ import annotations

from typing import Any

from ._numpy import NumpyBackend as NumpyBackend
from ._protocol import Backend as Backend
from ._protocol import Wrapping as Wrapping

_NAMED = {"numpy": NumpyBackend}
#: Built-in backends imported on first use (they pull in heavy modules): name -> module.
_BUILTIN = {"dual": "._dual", "torch": "._torch", "jax": "._jax"}
#: check_params' model adapters (a torch module or dict of tensors, a jax pytree), likewise.
_MODEL_ADAPTERS = {"torch": "._torch_model", "jax": "._jax_model"}


def register(name: str, factory: Any) -> None:
    """Make ``backend=name`` resolve to ``factory()``."""
    _NAMED[name] = factory


def resolve(backend: Any, x: Any) -> Backend:
    """A backend instance from a name, an instance, or (None) the type of ``x``."""
    if backend is None:
        mod = type(x).__module__.split(".")[0]
        if mod == "torch":
            backend = "torch"
        elif mod in ("jax", "jaxlib"):
            backend = "jax"
        else:
            backend = "numpy"
    if isinstance(backend, str):
        if backend not in _NAMED:
            _load_builtin(backend)
        if backend not in _NAMED:
            raise ValueError(f"unknown backend {backend!r}; known: {', '.join(known_backends())}")
        return _NAMED[backend]()
    if isinstance(backend, Backend):
        return backend
    raise TypeError(f"backend must be a name or a Backend instance, got {type(backend).__name__}")


def known_backends() -> list[str]:
    """Every name ``backend=`` accepts: the built-in ones (loaded or not) and registered ones."""
    return sorted(set(_NAMED) | set(_BUILTIN))


def _load_builtin(name: str) -> None:
    """Import optional backends only when asked for (they pull in heavy modules)."""
    import importlib

    module = _BUILTIN.get(name)
    if module is None:
        return
    try:
        importlib.import_module(module, __name__)
    except ModuleNotFoundError as exc:
        raise ValueError(f"backend {name!r} needs {exc.name!r}, which is not installed") from exc


def model_problem(framework: str, adapter: str, *args: Any) -> Any:
    """``adapter(*args)`` of ``framework``'s model adapter (``"torch"``: ``module_problem``,
    ``tensors_problem``; ``"jax"``: ``is_pytree_of_arrays``, ``pytree_problem``), imported on
    first use: check_params of a model as its framework holds it (a ``_models.ModelProblem``)."""
    import importlib

    return getattr(importlib.import_module(_MODEL_ADAPTERS[framework], __name__), adapter)(*args)
