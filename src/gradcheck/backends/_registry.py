"""The backend registry: ``backend=`` names to backends, the optional ones loaded on first use."""
from __future__ import annotations

from typing import Any

from ._numpy import NumpyBackend
from ._protocol import Backend

_NAMED = {"numpy": NumpyBackend}
#: Built-in backends imported on first use (they pull in heavy modules): name -> module.
_BUILTIN = {"dual": "._dual", "torch": "._torch", "jax": "._jax"}


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
        importlib.import_module(module, __package__)
    except ModuleNotFoundError as exc:
        raise ValueError(f"backend {name!r} needs {exc.name!r}, which is not installed") from exc
