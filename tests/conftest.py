"""Shared test settings: which tests run where, hypothesis profiles, scoped mpmath precision.

Two CI configurations share the suite (.ci/run); a test runs in exactly one of them, and
the marks below say which. Nothing has to be registered by hand for a new test file:

* **bare** -- the README's ``pip install ".[test]" && pytest``, as a new user runs it:
  every test except the ``optional`` and ``scale`` ones (those skip, saying why).
* **full** -- ``GRADCHECK_REQUIRE_OPTIONAL=1 CI=1 pytest -m "optional or scale or property"``
  in a venv with the frameworks: only what the bare run could not do.

The marks (registered in pyproject.toml):

``optional``
    The test needs something the bare install lacks (``optional_deps.EXTRA``: torch, jax,
    dask, matplotlib, gmpy2, nbclient, chromium, ...). Applied here, with nothing to
    register, to every test of a module that calls ``optional_deps.need("x")`` at import
    time, and to every test whose body calls ``need("x")`` (directly or through a helper
    of its module: ``optional_deps.body_needs`` reads the source). Say it yourself with
    ``@needs("x")`` (``from optional_deps import needs``) or, for one parametrized case,
    ``pytest.param(..., marks=needs("x"))``, where the name is not written out (a
    parameter). A test skipped by ``need()`` without the mark fails the bare run (it would
    run in neither configuration). Where the module is missing the test skips; with
    ``GRADCHECK_REQUIRE_OPTIONAL=1`` (the full run) it fails instead.
``scale``
    A test at full scale (10^6 entries, 1024x1024 screens, process pools of many chunks):
    skipped unless the ``-m`` expression names ``scale`` (``pytest -m scale``). Each has
    a smaller sibling in the default run that exercises the same code path; say which
    in its docstring.
``property``
    Applied here to every hypothesis test. The default profile runs few examples (a
    user's ``pytest``, the bare run); ``CI`` set selects the ``ci`` profile, many more, and
    the full run re-runs these tests under it. The property tests that mutation/run.sh
    uses keep at least 100 examples (``@settings(max_examples=max(100, ...))``): the
    mutation score was measured with them.

Both run on every core with pytest-xdist (``-n auto --dist loadfile`` in pyproject.toml's
``addopts``; ``pytest -n 0`` runs in one process). The hooks below that write files run where
they see the whole suite: the controller for outcomes, the first worker for the collection.

Environment variables (.ci/run sets them; a user's ``pytest`` needs none):

* ``CI``: hypothesis' larger ``ci`` profile. Nothing else: a CI service sets ``CI=true``
  for every job, and .ci/run's bare configuration unsets it.
* ``GRADCHECK_REQUIRE_OPTIONAL=1``: optional dependencies must be importable
  (tests/optional_deps.py).
* ``GRADCHECK_OUTCOMES=FILE`` / ``GRADCHECK_COLLECTED=FILE``: write each test's outcome,
  or each collected test with its marks, to FILE; .ci/split_check.py reads both to show
  that every test runs in one configuration.
"""
from __future__ import annotations

import os
import re
import signal
import sys

import optional_deps
import pytest
from hypothesis import HealthCheck, settings

# Pinned: a failure seen once is seen again. CI's full run repeats the property tests with
# six times the examples of a local run.
_COMMON = {"derandomize": True, "deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("default", max_examples=50, **_COMMON)
settings.register_profile("ci", max_examples=300, **_COMMON)
settings.load_profile("ci" if os.environ.get("CI") else "default")

SELECTED_IN_FULL = ("optional", "scale", "property")

# A shell starts a background job (`pytest &`, `nohup pytest`) with SIGINT ignored, and an
# ignored signal stays ignored in every process it starts: Ctrl-C would then never reach the
# checks and scripts that the interruption tests signal. Python's own default for the tests.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _reset_mpmath_precision():
    """One test cannot change another's mpmath precision (mpmath is not imported for it)."""
    mpmath = sys.modules.get("mpmath")
    prec = mpmath.mp.prec if mpmath is not None else None
    yield
    mpmath = sys.modules.get("mpmath")
    if mpmath is not None:
        mpmath.mp.prec = prec if prec is not None else 53


def _selects_scale(config: pytest.Config) -> bool:
    return re.search(r"\bscale\b", config.option.markexpr or "") is not None


@pytest.hookimpl(tryfirst=True)  # before -m deselects: it reads the marks given here
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test ``optional``/``property`` as the module docstring says; skip what
    cannot or should not run here."""
    run_scale = _selects_scale(config)
    for item in items:
        path = os.path.realpath(item.path)
        found = set(optional_deps.MODULE_NEEDS.get(path, ()))
        found |= optional_deps.body_needs(path).get(getattr(item, "originalname", item.name), set())
        if found:
            item.add_marker(pytest.mark.optional(*sorted(found)))
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.property)
        wanted = tuple(m for mark in item.iter_markers("optional") for m in mark.args)
        reason = optional_deps.missing_reason(wanted) if wanted else None
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))
        if item.get_closest_marker("scale") and not run_scale:
            item.add_marker(pytest.mark.skip(reason="scale test: CI's full configuration runs it "
                                                    "(pytest -m scale); its smaller sibling runs here"))
    _write_collected(items)


def _worker() -> str | None:
    """The pytest-xdist worker running this process (``gw0``, ...), or None: the controller
    of a ``-n`` run, or a run without xdist (``-n 0`` or ``-p no:xdist``)."""
    return os.environ.get("PYTEST_XDIST_WORKER")


def _write_collected(items: list[pytest.Item]) -> None:
    # Under xdist every worker collects the whole suite (xdist checks they agree) and the
    # controller collects nothing: the first worker writes.
    path = os.environ.get("GRADCHECK_COLLECTED")
    if path and _worker() in (None, "gw0"):
        with open(path, "w", encoding="utf-8") as out:
            for item in items:
                marks = sorted(m for m in SELECTED_IN_FULL if item.get_closest_marker(m))
                out.write(f"{item.nodeid}\t{','.join(marks)}\n")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A test skipped by ``need()`` for an optional module without the ``optional`` mark
    would run in neither configuration: fail it, saying what to add."""
    report = yield
    excinfo = call.excinfo
    if (report.skipped and excinfo is not None and excinfo.errisinstance(pytest.skip.Exception)
            and str(excinfo.value.msg).startswith(optional_deps.SKIP_PREFIX)
            and not item.get_closest_marker("optional")):
        module = str(excinfo.value.msg)[len(optional_deps.SKIP_PREFIX):].split()[0].rstrip(",")
        if optional_deps.is_extra(module):
            report.outcome = "failed"
            report.longrepr = (f"{item.nodeid} skipped for a missing {module} but is not marked "
                               f"optional: add @needs({module!r}) (from optional_deps import needs), "
                               "or the full CI configuration will not select it either")
    return report


_OUTCOMES: dict[str, str] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.failed:
        _OUTCOMES[report.nodeid] = "failed"
    elif report.skipped and _OUTCOMES.get(report.nodeid) != "failed":
        if hasattr(report, "wasxfail"):
            _OUTCOMES[report.nodeid] = "xfailed"
        else:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            _OUTCOMES[report.nodeid] = "skipped\t" + " ".join(str(reason).split())
    elif report.when == "call" and report.nodeid not in _OUTCOMES:
        _OUTCOMES[report.nodeid] = "passed"


def pytest_sessionfinish(session: pytest.Session) -> None:
    # The controller of an xdist run receives every worker's reports; a worker has only its own.
    path = os.environ.get("GRADCHECK_OUTCOMES")
    if path and _worker() is None:
        with open(path, "w", encoding="utf-8") as out:
            out.writelines(f"{nodeid}\t{outcome}\n" for nodeid, outcome in _OUTCOMES.items())
