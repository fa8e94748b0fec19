"""The public API imports, and importing gradcheck stays light."""
from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import gradcheck

# The public surface, written out: a name added to or dropped from ``gradcheck.__all__`` must
# be added or dropped here too (test_all_lists_every_public_name_once), so no export changes
# by accident.
PUBLIC = [
    "check", "check_params", "Config", "Report", "ParamsReport", "Verdict", "Cause", "Diagnosis",
    "assert_detects_wrong_gradient", "GradcheckError", "ShapeMismatchError",
    "UnsupportedInputError", "WorkerDiedError", "DependentSlicesError", "FunctionError", "InputMutationError", "GradientAssertionError",
    "GradcheckWarning", "__version__", "Checkpoint", "CheckpointError", "CheckpointMismatchError",
    "OutputError", "AliasedParametersError",
    "check_jvp", "check_hvp", "check_adjoint", "taylor_test", "AdjointResult", "TaylorResult",
    "ComplexReport", "MultiReport", "ExecutorOptions",
    "screen", "shape_sweep", "grid", "SweepReport", "dispute", "DisputeResult",
]

# Public functions with many keywords: each has a numpydoc "Parameters" section naming every
# parameter of its signature.
DOCUMENTED_PARAMETERS = ["check", "check_params", "screen", "dispute"]


PUBLIC_MODULES = [
    "gradcheck.backends", "gradcheck.engines", "gradcheck.mp", "gradcheck.native", "gradcheck.subjects",
    "gradcheck.examples.transformer", "gradcheck.cli", "gradcheck.pytest_plugin",
]


@pytest.mark.parametrize("name", PUBLIC)
def test_public_name_imports(name):
    """Every public name is importable from the package root."""
    assert getattr(gradcheck, name) is not None


@pytest.mark.parametrize("name", gradcheck.__all__)
def test_every_exported_name_imports_and_is_documented(name):
    """Every name in ``gradcheck.__all__`` imports from the root (``from gradcheck import
    name``) and documents itself: a docstring of its own (not one inherited from a base
    class), or for ``__version__`` a version string."""
    obj = getattr(importlib.import_module("gradcheck"), name)
    if name == "__version__":
        assert isinstance(obj, str) and obj[:1].isdigit()
        return
    doc = obj.__dict__.get("__doc__") if isinstance(obj, type) else obj.__doc__
    assert doc and doc.strip(), f"gradcheck.{name} has no docstring"


def test_all_lists_every_public_name_once():
    """``__all__`` is sorted, has no duplicate, and holds every public object of the root
    (so a new re-export cannot be forgotten there); ``ExecutorOptions`` is one of them."""
    public = {n for n, v in vars(gradcheck).items() if not n.startswith("_") and not inspect.ismodule(v)}
    assert sorted(gradcheck.__all__, key=lambda n: (n.lower(), n)) == gradcheck.__all__
    assert len(set(gradcheck.__all__)) == len(gradcheck.__all__)
    assert public | {"__version__"} == set(gradcheck.__all__)
    assert set(PUBLIC) == set(gradcheck.__all__) and "ExecutorOptions" in gradcheck.__all__
    assert gradcheck.ExecutorOptions is importlib.import_module("gradcheck.engines").ExecutorOptions


def numpydoc_parameters(doc: str) -> set[str]:
    """The names a numpydoc ``Parameters`` section documents (``a, b : type`` lists several)."""
    lines = inspect.cleandoc(doc).splitlines()
    try:
        start = next(i for i, ln in enumerate(lines[:-1]) if ln == "Parameters" and set(lines[i + 1]) == {"-"})
    except StopIteration:
        return set()
    names: set[str] = set()
    body = lines[start + 2:]
    for ln, after in zip(body, body[1:] + [""]):
        if after and set(after) == {"-"}:  # the next section's title
            break
        if ln and not ln.startswith(" "):
            names |= {n.strip() for n in ln.split(":")[0].split(",")}
    return names


@pytest.mark.parametrize("name", DOCUMENTED_PARAMETERS)
def test_functions_with_many_keywords_document_each_parameter(name):
    """check, check_params, screen and dispute have a numpydoc Parameters section naming every
    parameter of their signature, and a Returns section."""
    fn = getattr(gradcheck, name)
    documented = numpydoc_parameters(fn.__doc__)
    assert documented, f"gradcheck.{name} has no numpydoc Parameters section"
    missing = set(inspect.signature(fn).parameters) - documented
    assert not missing, f"gradcheck.{name}'s Parameters section does not document {sorted(missing)}"
    assert "\nReturns\n-------\n" in inspect.cleandoc(fn.__doc__)


def test_the_parameters_reader_fails_on_a_missing_entry():
    """Negative control for the test above: a docstring without a parameter is caught."""
    def f(a, b, *, c=1):
        """Summary.

        Parameters
        ----------
        a, b : int
            Two.

        Returns
        -------
        int
        """
    assert numpydoc_parameters(f.__doc__) == {"a", "b"}
    assert set(inspect.signature(f).parameters) - numpydoc_parameters(f.__doc__) == {"c"}
    assert numpydoc_parameters("Summary only.") == set()


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_public_modules_import_at_their_paths(module):
    """The public module paths keep working after the layout moved the code behind them,
    each with a docstring (``gradcheck.subjects`` is a re-export of ``gradcheck._lowp.subjects``)."""
    mod = importlib.import_module(module)
    assert mod.__doc__ and mod.__doc__.strip()


def test_the_package_is_marked_typed():
    """``py.typed`` (PEP 561) sits in the package, so type checkers read its annotations."""
    assert (Path(gradcheck.__file__).parent / "py.typed").is_file()


def test_import_loads_only_numpy_and_the_standard_library():
    """`import gradcheck`, in a fresh interpreter, loads gradcheck, numpy and modules of the
    standard library, nothing else: none of numba, llvmlite, mpmath, cffi, ml_dtypes, torch,
    jax, matplotlib. What an import costs is what it loads; its time is measured, beside
    `import numpy`, in benchmarks/bench_speed_claims.py."""
    code = (
        "import sys\n"
        "main, before = sys.modules['__main__'], set(sys.modules)\n"
        "import gradcheck\n"
        "new = {m.split('.')[0] for m in set(sys.modules) - before if sys.modules[m] is not main}\n"
        "print(sorted(new - set(sys.stdlib_module_names)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['gradcheck', 'numpy']"


def test_pytest11_entry_point_names_the_plugin():
    """Installing gradcheck registers its pytest plugin under the name 'gradcheck'."""
    from importlib.metadata import entry_points

    found = [e.value for e in entry_points(group="pytest11") if e.name == "gradcheck"]
    assert found == ["gradcheck.pytest_plugin"]
