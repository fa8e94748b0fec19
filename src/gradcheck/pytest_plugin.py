"""pytest plugin: the ``gradcheck`` fixture and marker, the negative control once per
session for every backend used, and failures shown as verdict tables.

Registered under the ``pytest11`` entry point ``gradcheck``; without it, enable it with
``-p gradcheck.pytest_plugin`` or ``pytest_plugins = ["gradcheck.pytest_plugin"]`` in a
``conftest.py``. Importing it imports no framework and none of the heavy parts (numba,
mpmath, torch, jax): those load when a check needs them.

>>> # in a test module
>>> def test_tanh(gradcheck):                                    # doctest: +SKIP
...     gradcheck.check(lambda t: t.tanh().sum(), torch.randn(4, 3, dtype=torch.float64))

``gradcheck.check`` / ``gradcheck.check_params`` take the arguments of
:func:`gradcheck.check` / :func:`gradcheck.check_params`, fail the test with the verdict
table unless the check passed, and return the report. A check that verified nothing
(INCONCLUSIVE: e.g. every entry UNCHECKED) fails the test too, saying why; the marker's
(or the call's) ``allow_unchecked=True`` accepts it, ``allow_unchecked=False`` refuses any
UNCHECKED entry, and the default (``None``) accepts UNCHECKED entries beside verified ones. Before the first check through a
backend (per engine), the session runs :func:`gradcheck.assert_detects_wrong_gradient`
for it; if that control fails, every test using the backend fails with the control's
report, and the terminal summary says to ignore every gradcheck result of the run.

``--gradcheck-html DIR`` / ``--gradcheck-json DIR`` write the report of each failing check
into DIR, named after its test; ``--gradcheck-passing`` adds the reports of the checks that
passed (a CI artifact of every check, not only of the failures).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import pytest

import gradcheck as _gradcheck  # the public functions, looked up when called (a test may replace one)

from . import backends as _backends
from ._core.errors import GradientAssertionError
from ._orders import OrdersFixtureMixin
from ._pipeline.inputs import is_multiple_inputs

if TYPE_CHECKING:
    from ._models.report import ParamsReport
    from ._pipeline.inputs import MultiReport
    from ._report.report import Report


class _Passable(Protocol):
    """A result the fixture judges: every gradcheck result has ``assert_pass``."""

    def assert_pass(self, *, allow_unchecked: bool | None = None) -> object: ...


_R = TypeVar("_R", bound=_Passable)

#: Name of the marker and of the fixture.
MARKER = "gradcheck"
#: Keyword arguments the marker accepts (defaults for the fixture's checks in that test).
MARKER_KWARGS = ("backend", "config", "engine", "allow_unchecked", "control")
MARKER_HELP = (
    "gradcheck(backend=None, *, config=None, engine='auto', allow_unchecked=None, control=True): "
    "defaults for the gradcheck fixture in this test (allow_unchecked: None fails a check that "
    "verified nothing, True accepts it, False fails on any UNCHECKED entry); with a backend, its "
    "negative control runs (once per session) before the test"
)
_STATE = pytest.StashKey["_SessionState"]()
#: Options that write one artifact per failing check, named after the test.
HTML_OPTION, JSON_OPTION = "--gradcheck-html", "--gradcheck-json"
#: With HTML_OPTION / JSON_OPTION: also write the reports of the checks that passed.
PASSING_OPTION = "--gradcheck-passing"


class NegativeControlError(AssertionError):
    """The negative control failed for a backend: no gradcheck verdict through it can be
    trusted in this session. ``backend``/``engine`` name it; ``cause`` is the control's
    own failure (with its report)."""

    def __init__(self, backend: str, engine: str, cause: BaseException) -> None:
        self.backend, self.engine, self.cause = backend, engine, cause
        super().__init__(
            f"NEGATIVE CONTROL FAILED for backend {backend!r} (engine {engine!r}): the checker "
            f"cannot be trusted through it, so ignore every gradcheck result of this run.\n{cause}"
        )


@dataclass
class _SessionState:
    """Per-session memory: control outcomes (None = passed) and checks per backend."""

    controls: dict[tuple[str, str], BaseException | None] = field(default_factory=dict)
    checks: dict[str, int] = field(default_factory=dict)

    def require_control(self, backend: object, engine: str = "auto", kind: str = "grad") -> None:
        """Run the negative control (of this ``kind`` of claim) for ``backend`` once; raise
        if it failed (now or before)."""
        __tracebackhide__ = True
        name = backend if isinstance(backend, str) else getattr(backend, "name", repr(backend))
        key = (name, engine if kind == "grad" else f"{engine}; kind {kind}")
        if key not in self.controls:
            try:
                _gradcheck.assert_detects_wrong_gradient(backend, engine=engine, kind=kind)
            except AssertionError as exc:  # GradientAssertionError: the control's verdict
                self.controls[key] = exc
            else:
                self.controls[key] = None
        failure = self.controls[key]
        if failure is not None:
            raise NegativeControlError(name, engine, failure)


class GradcheckFixture(OrdersFixtureMixin):
    """What the ``gradcheck`` fixture gives a test: checks that fail the test unless they
    pass, with the negative control run first for each backend. ``check_jvp``,
    ``check_hvp``, ``check_adjoint`` and ``taylor_test`` come from
    :class:`~gradcheck._orders._plugin.OrdersFixtureMixin` (their own controls).

    ``reports`` lists the reports of this test; ``backends`` the backend names used.
    """

    def __init__(self, state: _SessionState, defaults: dict[str, Any]) -> None:
        self._state = state
        self._defaults = defaults
        self._api = _gradcheck
        self.reports: list[Any] = []
        self.backends: list[str] = []

    def _note(self, name: str) -> None:
        if name not in self.backends:
            self.backends.append(name)
        self._state.checks[name] = self._state.checks.get(name, 0) + 1

    def _options(self, kwargs: dict[str, Any]) -> tuple[dict[str, Any], bool | None, bool]:
        merged = {k: v for k, v in self._defaults.items() if k in ("backend", "config", "engine")}
        merged.update(kwargs)
        allow = merged.pop("allow_unchecked", self._defaults.get("allow_unchecked"))
        control = merged.pop("control", self._defaults.get("control", True))
        return merged, allow, control

    def control(self, backend: Any = "numpy", engine: str = "auto") -> None:
        """Run (once per session) and require the negative control for ``backend``."""
        __tracebackhide__ = True
        self._state.require_control(backend, engine)

    def check(self, f: Any, x: Any, grad: Any = None, **kwargs: Any) -> Report | MultiReport:
        """:func:`gradcheck.check` that fails the test unless the check passed; returns the
        report. ``allow_unchecked`` (here or on the marker): ``None`` (default) fails a
        check that verified nothing, ``True`` accepts it, ``False`` also fails on any
        UNCHECKED entry."""
        __tracebackhide__ = True
        options, allow, control = self._options(kwargs)
        first = x[0] if is_multiple_inputs(x) else x
        backend = _backends.resolve(options.get("backend"), first)
        if control:
            self._state.require_control(backend, options.get("engine", "auto"))
        self._note(backend.name)
        report = _gradcheck.check(f, x, grad, **options)
        return self._judge(report, allow)

    def check_params(self, loss: Any, params: Any, grads: Any, **kwargs: Any) -> ParamsReport:
        """:func:`gradcheck.check_params` (numpy parameters) that fails the test unless every
        name passed (``allow_unchecked`` as for :meth:`check`: by default a name that
        verified nothing fails the test); returns the :class:`~gradcheck.ParamsReport`."""
        __tracebackhide__ = True
        merged = dict(kwargs)
        if "config" in self._defaults:
            merged.setdefault("config", self._defaults["config"])
        control = merged.pop("control", self._defaults.get("control", True))
        allow = merged.pop("allow_unchecked", self._defaults.get("allow_unchecked"))
        if control:
            self._state.require_control("numpy")
        self._note("numpy")
        report = _gradcheck.check_params(loss, params, grads, **merged)
        return self._judge(report, allow)

    def _judge(self, report: _R, allow_unchecked: bool | None) -> _R:
        __tracebackhide__ = True
        self.reports.append(report)
        try:
            report.assert_pass(allow_unchecked=allow_unchecked)
        except GradientAssertionError as err:
            # Re-raised from here: the traceback ends in the test, not in gradcheck.
            raise err.with_traceback(None) from None
        return report


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gradcheck")
    group.addoption(HTML_OPTION, metavar="DIR", default=None,
                    help="write a self-contained HTML page per failing gradcheck check into DIR "
                    "(named after the test; its path is printed with the failure)")
    group.addoption(JSON_OPTION, metavar="DIR", default=None,
                    help="write the JSON of each failing gradcheck check into DIR, likewise")
    group.addoption(PASSING_OPTION, action="store_true", default=False,
                    help=f"with {HTML_OPTION} / {JSON_OPTION}: also write the report of every gradcheck check "
                    "that passed (one file per check, named after the test; default: failing checks only)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}: {MARKER_HELP}")
    config.stash[_STATE] = _SessionState()


def _marker_defaults(item: pytest.Item) -> dict[str, Any]:
    marker = item.get_closest_marker(MARKER)
    if marker is None:
        return {}
    unknown = sorted(set(marker.kwargs) - set(MARKER_KWARGS))
    if unknown or len(marker.args) > 1:
        pytest.fail(
            f"{item.nodeid}: @pytest.mark.{MARKER} takes at most one positional argument (the "
            f"backend) and the keywords {list(MARKER_KWARGS)}; got args {list(marker.args)}, "
            f"unknown keywords {unknown}",
            pytrace=False,
        )
    defaults = dict(marker.kwargs)
    if marker.args:
        defaults["backend"] = marker.args[0]
    return defaults


@pytest.fixture(name=MARKER)
def gradcheck_fixture(request: pytest.FixtureRequest) -> GradcheckFixture:
    """Checks that fail the test unless they pass; see :class:`GradcheckFixture`."""
    return GradcheckFixture(request.config.stash[_STATE], _marker_defaults(request.node))


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A marked test with a backend gets its control before it runs."""
    __tracebackhide__ = True
    defaults = _marker_defaults(item)
    if defaults.get("backend") is not None and defaults.get("control", True):
        item.config.stash[_STATE].require_control(defaults["backend"], defaults.get("engine", "auto"))


def _package_dir() -> str:
    return os.path.dirname(os.path.abspath(__file__)) + os.sep


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    """Failed checks show the verdict table: gradcheck's own frames are cut from the
    traceback of a GradientAssertionError (``--fulltrace`` keeps them)."""
    excinfo = call.excinfo
    if (excinfo is not None and not item.config.getoption("fulltrace", False)
            and excinfo.errisinstance((GradientAssertionError, NegativeControlError))):
        _cut_internal_tail(excinfo)
    rep = yield
    if call.when == "call":
        _write_artifacts(item, excinfo, rep)
    return rep


def artifact_name(nodeid: str) -> str:
    """A file name (no suffix) for a test: its node id with every run of characters other
    than letters, digits, ``.``, ``_`` and ``-`` replaced by ``_``."""
    import re

    return re.sub(r"[^A-Za-z0-9._-]+", "_", nodeid).strip("_")[:200] or "test"


def _reports_to_write(item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException] | None) -> list[Any]:
    """The failing check's report; with ``--gradcheck-passing``, every report of the test."""
    failing = None
    if excinfo is not None and excinfo.errisinstance(GradientAssertionError):
        failing = getattr(excinfo.value, "report", None)
    if not item.config.getoption(PASSING_OPTION):
        return [] if failing is None else [failing]
    fixture = getattr(item, "funcargs", {}).get(MARKER)
    reports = list(getattr(fixture, "reports", []))
    if failing is not None and not any(r is failing for r in reports):
        reports.append(failing)
    return reports


def _write_artifacts(item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException] | None,
                     rep: pytest.TestReport) -> None:
    """``--gradcheck-html`` / ``--gradcheck-json``: the failing check's report (with
    ``--gradcheck-passing``, every check's), as files named after the test (``-2``, ``-3``
    ... for a test's further checks), their paths added to the test's report. Writing never
    hides the failure."""
    dirs = [(item.config.getoption(opt), suffix) for opt, suffix in ((HTML_OPTION, "html"), (JSON_OPTION, "json"))]
    if not any(d for d, _ in dirs):
        return
    reports = _reports_to_write(item, excinfo)
    if not reports:
        return
    base = item.config.invocation_params.dir
    lines = []
    for k, report in enumerate(reports, 1):
        stem = artifact_name(item.nodeid) + (f"-{k}" if k > 1 else "")
        for folder, suffix in dirs:
            if not folder:
                continue
            path = (base / folder / f"{stem}.{suffix}").resolve()
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                if suffix == "html":
                    report.to_html(path)
                else:
                    path.write_text(_json_of(report), encoding="utf-8")
                lines.append(f"gradcheck {suffix.upper()} report: {path}")
            except Exception as exc:  # noqa: BLE001 - a broken artifact must not replace the verdict
                lines.append(f"gradcheck could not write the {suffix.upper()} report to {path}: {exc!r}")
    rep.sections.append(("gradcheck report", "\n".join(lines)))


def _json_of(report: Any) -> str:
    import json

    to_json = getattr(report, "to_json", None)
    return to_json() if to_json is not None else json.dumps(report.to_dict(), default=str)


def _cut_internal_tail(excinfo: pytest.ExceptionInfo[BaseException]) -> None:
    """Drop the frames after the last one outside gradcheck (where the verdict was raised).

    The raw chain is cut (``tb_next``), not only pytest's view of it: pytest re-walks the
    raw chain when it trims the frames above the test function.
    """
    inside = _package_dir()
    tb: TracebackType | None = excinfo.tb
    last_outside = None
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith(inside):
            last_outside = tb
        tb = tb.tb_next
    if last_outside is not None and last_outside.tb_next is not None:
        last_outside.tb_next = None
        excinfo.traceback = type(excinfo.traceback)(excinfo.tb)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int,
                            config: pytest.Config) -> None:
    """One line per backend: how many checks, and whether its negative control held."""
    state = config.stash.get(_STATE, None)
    if state is None or not (state.controls or state.checks):
        return
    tr = terminalreporter
    failed = {k: v for k, v in state.controls.items() if v is not None}
    tr.write_sep("=", "gradcheck negative control", red=bool(failed), green=not failed, bold=bool(failed))
    for (name, engine), failure in sorted(state.controls.items()):
        checks = state.checks.get(name, 0)
        status = "passed" if failure is None else "FAILED"
        tr.write_line(f"{name} (engine {engine}): control {status}; {checks} checks", red=failure is not None)
    for name in sorted(set(state.checks) - {n for n, _ in state.controls}):
        tr.write_line(f"{name}: control not run (control=False); {state.checks[name]} checks", yellow=True)
    if failed:
        tr.write_line(
            "A negative control FAILED: ignore every gradcheck result of this run until it passes.",
            red=True, bold=True,
        )
