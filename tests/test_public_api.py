"""The public API imports, and importing gradcheck stays light."""
from __future__ import annotations

import subprocess
import sys

import pytest

import gradcheck

PUBLIC = [
    "check", "check_params", "Config", "Report", "ParamsReport", "Verdict", "Diagnosis",
    "assert_detects_wrong_gradient", "GradcheckError", "ShapeMismatchError",
    "UnsupportedInputError", "FunctionError", "InputMutationError", "GradientAssertionError",
    "GradcheckWarning", "__version__", "Checkpoint", "CheckpointError", "CheckpointMismatchError",
    "OutputError", "AliasedParametersError",
    "check_jvp", "check_hvp", "check_adjoint", "taylor_test", "AdjointResult", "TaylorResult",
    "ComplexReport",
    "screen",
]


@pytest.mark.parametrize("name", PUBLIC)
def test_public_name_imports(name):
    """Every public name is importable from the package root."""
    assert getattr(gradcheck, name) is not None


def test_import_does_not_drag_in_heavy_dependencies():
    """`import gradcheck` imports none of numba, mpmath, cffi, ml_dtypes, torch, jax,
    matplotlib (checked in a fresh interpreter)."""
    code = (
        "import sys, gradcheck\n"
        "heavy = {'numba', 'mpmath', 'cffi', 'ml_dtypes', 'torch', 'jax', 'matplotlib', 'llvmlite'}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_import_is_fast():
    """`import gradcheck` adds little beyond numpy (measured with -X importtime)."""
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", "import gradcheck"],
                         capture_output=True, text=True, check=True)
    own = [ln for ln in out.stderr.splitlines() if ln.rstrip().endswith("gradcheck")]
    # "import time: self | cumulative | name"; cumulative includes numpy (~100 ms).
    cumulative_us = int(own[-1].split("|")[1])
    assert cumulative_us < 1_500_000


def test_pytest11_entry_point_names_the_plugin():
    """Installing gradcheck registers its pytest plugin under the name 'gradcheck'."""
    from importlib.metadata import entry_points

    found = [e.value for e in entry_points(group="pytest11") if e.name == "gradcheck"]
    assert found == ["gradcheck.pytest_plugin"]
