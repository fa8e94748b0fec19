"""Optional dependencies of the tests: skipped where a user lacks them, required where CI
installed them. The rule lives here; every test that needs torch, jax, dask, matplotlib,
gmpy2, ... says so through :func:`needs` (a mark) or :func:`need` (an import).

* Unset ``GRADCHECK_REQUIRE_OPTIONAL`` (a user's ``pip install ".[test]" && pytest``, and
  .ci/run's bare configuration): a test whose optional dependency is missing is skipped,
  with the name of what to install.
* ``GRADCHECK_REQUIRE_OPTIONAL=1`` (.ci/run's full configuration, which installs them):
  nothing is skipped for a missing dependency; the import fails the test, so a broken
  install cannot turn into a green run of skips.

The modules of :data:`EXTRA` (what the bare install lacks) make a test ``optional``: the
mark that .ci/run's full configuration selects (``pytest -m "optional or ..."``) and the
bare one cannot run. tests/conftest.py applies it to every test that declares such a module
with :func:`needs`, to every test of a module that calls :func:`need` at import time, and
to every test whose body calls ``need("torch")`` with the name written out, directly or
through a helper function of its module (:func:`body_needs` reads the source). Where the
name is not written out (``framework(name)`` with ``name`` a parameter), mark the case:
``pytest.param("torch", marks=needs("torch"))``; the bare run fails a test skipped by
:func:`need` without the mark, since it would run in neither configuration. ``CI`` plays
no part here; it only selects the larger hypothesis profile.
"""
from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import os
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

REQUIRE_ENV = "GRADCHECK_REQUIRE_OPTIONAL"

#: What the full configuration installs beyond ``pip install ".[test]"`` (.ci/run), by the
#: top-level name a test imports. A dependency of the test extra (cloudpickle, html5lib,
#: pillow) is not optional: the bare run has it.
EXTRA = frozenset({"torch", "jax", "jaxlib", "dask", "distributed", "matplotlib", "gmpy2",
                   "nbformat", "nbclient", "ipykernel", "chromium"})

#: Skip reasons given here start with this (conftest tells these skips from others).
SKIP_PREFIX = "needs "

#: Test module file -> the EXTRA modules it asked for at import time (read by conftest).
MODULE_NEEDS: dict[str, set[str]] = {}


def required() -> bool:
    """Whether a missing optional dependency must fail rather than skip."""
    return os.environ.get(REQUIRE_ENV, "").strip() not in ("", "0")


def is_extra(module: str) -> bool:
    """Whether ``module`` (possibly dotted) is one the bare install lacks."""
    return module.partition(".")[0] in EXTRA


def _reason(modules: list[str] | tuple[str, ...]) -> str:
    return f"{SKIP_PREFIX}{', '.join(modules)} (optional; {REQUIRE_ENV}=1 makes it required)"


def need(module: str) -> ModuleType:
    """Import ``module``; when it is missing, skip (the test, or the test module when called
    at import time) unless :func:`required`, where the ImportError fails it.

    Called at a test module's top level, it makes every test of that module ``optional``."""
    __tracebackhide__ = True  # the skip is reported at the caller's line
    caller = sys._getframe(1)
    if caller.f_code.co_name == "<module>" and is_extra(module):
        MODULE_NEEDS.setdefault(os.path.realpath(caller.f_code.co_filename), set()).add(module)
    if required():
        return importlib.import_module(module)
    return pytest.importorskip(module, reason=_reason((module,)))


def available(module: str) -> bool:
    """Whether ``module`` can be imported here (without importing it)."""
    return importlib.util.find_spec(module.partition(".")[0]) is not None


def needs(*modules: str) -> pytest.MarkDecorator:
    """A mark for a test that needs ``modules``: ``optional`` when one of them is in
    :data:`EXTRA` (conftest then skips the test where one is missing, never when
    :func:`required`), otherwise a plain skip where one is missing (never when required)."""
    if any(is_extra(m) for m in modules):
        return pytest.mark.optional(*modules)
    missing = [m for m in modules if not available(m)]
    return pytest.mark.skipif(bool(missing) and not required(), reason=_reason(missing))


def missing_reason(modules: tuple[str, ...]) -> str | None:
    """The skip reason for an ``optional`` test here, or None when it must run."""
    missing = [m for m in modules if m != "chromium" and not available(m)]
    if "chromium" in modules and not (shutil.which("chromium") or shutil.which("chromium-browser")):
        missing.append("chromium")
    if not missing or required():
        return None
    return _reason(missing)



def _calls(node: ast.AST) -> list[tuple[str | None, str | None]]:
    """(called name, first argument when a string literal) of every call under ``node``."""
    found = []
    for call in ast.walk(node):
        if isinstance(call, ast.Call):
            fn = call.func
            name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", None)
            first = call.args[0] if call.args else None
            literal = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None
            found.append((name, literal))
    return found


@functools.cache
def body_needs(path: str) -> dict[str, frozenset[str]]:
    """Test function name -> the :data:`EXTRA` modules its body asks :func:`need` for, in the
    test module at ``path``: ``need("jax")`` written in the test, or in a function of the
    module that the test calls (``framework("torch")`` where ``framework`` calls
    ``need(name)``), however deep."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return {}
    defs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    helpers = {d.name: d for d in defs if not d.name.startswith("test")}
    # helpers that pass their argument on to need(): framework(name) -> need(name)
    relays = {"need"} | {n for n, d in helpers.items() if ("need", None) in _calls(d)}

    def wanted(node: ast.AST, seen: frozenset[str]) -> set[str]:
        out: set[str] = set()
        for name, literal in _calls(node):
            if name in relays and literal and is_extra(literal):
                out.add(literal)
            if name in helpers and name not in seen:
                out |= wanted(helpers[name], seen | {name})
        return out

    return {d.name: frozenset(w) for d in defs if d.name.startswith("test") and (w := wanted(d, frozenset()))}
