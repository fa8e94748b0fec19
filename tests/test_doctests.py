"""The examples in the public docstrings run and say what they show."""
from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "gradcheck", "gradcheck._pipeline.check", "gradcheck._pipeline.inputs", "gradcheck._adjudicate.referee", "gradcheck._models.params", "gradcheck._controls.control",
    "gradcheck._core.config", "gradcheck._report.report", "gradcheck._sweeps.sweep", "gradcheck.native",
    "gradcheck.backends._dual", "gradcheck.dual", "gradcheck.dual.number", "gradcheck.dual.forward",
    "gradcheck.mp", "gradcheck._core.formats", "gradcheck._lowp.dispute", "gradcheck._lowp.dispute_bound", "gradcheck._lowp.result", "gradcheck._lowp.dispute_gradient", "gradcheck._lowp.dispute_timing", "gradcheck.mp._reverse", "gradcheck._lowp.subjects",
    "gradcheck._evaluate.fork", "gradcheck.engines", "gradcheck._differences.central", "gradcheck._evaluate.points",
    "gradcheck._evaluate.executor", "gradcheck._core.inputs", "gradcheck._core.jit", "gradcheck.backends._contract",
    "gradcheck._core.arguments", "gradcheck._core.arrays", "gradcheck._core.errors", "gradcheck._core.tolerance",
    "gradcheck._core.sparse",
    "gradcheck._report.html",
    "gradcheck._orders._jvp", "gradcheck._orders._adjoint", "gradcheck._orders._hvp",
    "gradcheck._orders._taylor",
    "gradcheck._screen._api", "gradcheck._screen._partition", "gradcheck._screen._directional",
    "gradcheck._screen._budget", "gradcheck._runtime.progress",
    "gradcheck._axes.declare", "gradcheck._axes.colour",
    "gradcheck._lowp.float32", "gradcheck._lowp.f32steps", "gradcheck._lowp.forced64", "gradcheck._demo.layernorm",
    # the modules of public names whose examples the API reference shows (tests/test_docs.py)
    "gradcheck._core.verdict", "gradcheck._runtime.checkpoint", "gradcheck._pipeline.complex",
    "gradcheck._models.diagnosis", "gradcheck._models.report",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    """Every >>> example in the module's docstrings gives the output it shows."""
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
