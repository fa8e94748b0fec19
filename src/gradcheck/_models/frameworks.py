"""Models as users hold them: which adapter turns ``check_params``' arguments into numpy.

* ``check_params(model, loss_fn[, batch])`` with a ``torch.nn.Module``;
* ``check_params(loss, {name: torch.Tensor}[, grads])``;
* ``check_params(loss, pytree)`` with jax arrays as leaves (a dict of ``jax.Array``, nested);
* anything else is numpy: ``check_params(loss, {name: ndarray}, grads)``, unchanged.

The adapters live in ``gradcheck.backends`` (only they import a framework, and only when the
arguments are that framework's objects); this module never imports torch or jax itself, it
looks for them in ``sys.modules`` (an object of a framework exists only once it is imported).
"""
from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..backends import model_problem


def framework_problem(loss: Any, params: Any, grads: Any) -> Any:
    """A ``backends._models.ModelProblem`` for a framework's model, or None for numpy."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(loss, torch.nn.Module):
        return model_problem("torch", "module_problem", loss, params, grads)
    if isinstance(params, Mapping) and torch is not None and any(isinstance(v, torch.Tensor) for v in params.values()):
        return model_problem("torch", "tensors_problem", loss, params, grads)
    if "jax" in sys.modules and not _numpy_dict(params) and model_problem("jax", "is_pytree_of_arrays", params):
        return model_problem("jax", "pytree_problem", loss, params, grads)
    return None


def _numpy_dict(params: Any) -> bool:
    return isinstance(params, Mapping) and all(isinstance(v, np.ndarray) for v in params.values())
