"""The pytest plugin, run through pytester: fixture, marker, the negative control once per
session per backend, and failures shown as verdict tables."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import ml_dtypes  # noqa: F401  (see below)
import pytest
from optional_deps import needs

import gradcheck

# ml_dtypes (a dependency) is imported by this process before any inner run: pytester's
# in-process runs restore sys.modules after them, and an ml_dtypes first imported (and then
# dropped) inside one cannot be imported again ("bfloat16 appears already registered"), which
# failed the jax test when this file ran alone.

pytest_plugins = ["pytester"]

PLUGIN = "gradcheck.pytest_plugin"

NUMPY_TESTS = """
import numpy as np

X = np.array([[0.3, -1.2, 0.7], [2.1, -0.4, 0.9]])

def f(x):
    return (np.tanh(x) * x).sum()

def grad(x):
    return (1 - np.tanh(x) ** 2) * x + np.tanh(x)

def test_one(gradcheck):
    report = gradcheck.check(f, X, grad)
    assert report.passed

def test_two(gradcheck):
    gradcheck.check(f, X * 2, grad)

def test_three(gradcheck):
    gradcheck.check(f, X - 1, grad)
"""

BUGGY_TESTS = """
import numpy as np
import gradcheck as gc

X = np.array([[0.3, -1.2, 0.7], [2.1, -0.4, 0.9]])

def f(x):
    return (np.sin(x) * x).sum()

def wrong(x):
    g = np.cos(x) * x + np.sin(x)
    g[1, 2] *= 1.001
    return g

def test_through_fixture(gradcheck):
    gradcheck.check(f, X, wrong)

def test_direct_assert_pass():
    gc.check(f, X, wrong).assert_pass()
"""


def run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str):
    """Run pytest in-process with only this plugin (entry points off, so the result does
    not depend on whether the pytest11 entry point is installed)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    return pytester.runpytest("-p", PLUGIN, "--strict-markers", "-p", "no:cacheprovider", *args)


@pytest.fixture
def control_calls(monkeypatch):
    """Counts calls of the negative control (the plugin looks it up on the package)."""
    calls: list[tuple] = []
    real = gradcheck.assert_detects_wrong_gradient

    def counting(backend="numpy", **kwargs):
        calls.append((getattr(backend, "name", backend), kwargs.get("engine")))
        return real(backend, **kwargs)

    monkeypatch.setattr(gradcheck, "assert_detects_wrong_gradient", counting)
    return calls


def test_import_does_not_load_heavy_modules():
    """Importing the plugin loads no framework, numba or mpmath (it is loaded by every
    pytest run once the entry point is installed)."""
    code = (
        "import sys, gradcheck.pytest_plugin\n"
        "heavy = [m for m in ('numba', 'mpmath', 'torch', 'jax', 'matplotlib') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_fixture_checks_pass_and_control_runs_once(pytester, monkeypatch, control_calls):
    """Three passing checks through numpy: three passes, one control run, a summary line."""
    pytester.makepyfile(test_inner_numpy=NUMPY_TESTS)
    result = run(pytester, monkeypatch)
    result.assert_outcomes(passed=3)
    assert control_calls == [("numpy", "auto")]
    result.stdout.fnmatch_lines(["*gradcheck negative control*", "numpy (engine auto): control passed; 3 checks"])


def test_failures_show_the_verdict_table_not_gradcheck_internals(pytester, monkeypatch):
    """A failing check, through the fixture or a direct assert_pass(), shows the table with
    the wrong entry; no frame of gradcheck's own modules is printed."""
    pytester.makepyfile(test_inner_buggy=BUGGY_TESTS)
    result = run(pytester, monkeypatch)
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert out.count("MISMATCH") >= 4, out  # the summary and the table row, twice
    assert out.count("(1, 2)") >= 2, out
    for internal in ("_report/report.py", "_pipeline/check.py", "pytest_plugin.py"):
        assert internal not in out, out
    result.stdout.fnmatch_lines(["*gradcheck.check(f, X, wrong)*", "*gc.check(f, X, wrong).assert_pass()*"])


def test_fulltrace_keeps_the_internal_frames(pytester, monkeypatch):
    """--fulltrace is for debugging gradcheck itself: nothing is cut."""
    pytester.makepyfile(test_inner_buggy=BUGGY_TESTS)
    result = run(pytester, monkeypatch, "--fulltrace", "-k", "direct")
    result.assert_outcomes(failed=1)
    assert "_report/report.py" in result.stdout.str()


def test_a_failed_control_fails_every_user_and_is_announced(pytester, monkeypatch):
    """If the control fails, each test using that backend fails with the control's report
    (it ran once), and the summary says to ignore the run's results."""
    calls = []

    def broken(backend="numpy", **kwargs):
        calls.append(backend)
        raise gradcheck.GradientAssertionError("negative control failed: planted for this test", None)

    monkeypatch.setattr(gradcheck, "assert_detects_wrong_gradient", broken)
    pytester.makepyfile(test_inner_numpy=NUMPY_TESTS)
    result = run(pytester, monkeypatch)
    result.assert_outcomes(failed=3)
    assert len(calls) == 1
    result.stdout.fnmatch_lines([
        "*NEGATIVE CONTROL FAILED for backend 'numpy'*",
        "*planted for this test*",
        "numpy (engine auto): control FAILED; 0 checks",
        "A negative control FAILED: ignore every gradcheck result of this run until it passes.",
    ])


def test_marker_sets_defaults_and_runs_the_backend_control_at_setup(pytester, monkeypatch, control_calls):
    """@pytest.mark.gradcheck(...) is registered (strict markers), runs the control of its
    backend before the test even without the fixture, and gives the fixture defaults."""
    pytester.makepyfile(test_inner_marked="""
        import math

        import numpy as np
        import pytest
        from gradcheck import Config

        @pytest.mark.gradcheck("dual")
        def test_control_only():
            pass

        @pytest.mark.gradcheck(backend="dual", config=Config(rtol=1e-9))
        def test_defaults(gradcheck):
            report = gradcheck.check(lambda x: np.sin(x).sum(), np.array([0.5, 1.5]))
            assert report.config.rtol == 1e-9

        @pytest.mark.gradcheck(allow_unchecked=False)
        def test_unchecked_not_allowed(gradcheck):
            # math.cos leaves no exact referee, so the zero gradient at 0 stays UNCHECKED
            f = lambda x: sum(math.cos(v) for v in x)
            gradcheck.check(f, np.array([0.0, 1.0]), lambda x: -np.sin(x))
    """)
    result = run(pytester, monkeypatch)
    result.assert_outcomes(passed=2, failed=1)
    assert control_calls == [("dual", "auto"), ("numpy", "auto")]
    result.stdout.fnmatch_lines(["*UNCHECKED*"])


def test_marker_with_unknown_keyword_is_a_usage_error(pytester, monkeypatch):
    """A typo in the marker's keywords lists the valid ones."""
    pytester.makepyfile(test_inner_typo="""
        import pytest

        @pytest.mark.gradcheck(backnd="torch")
        def test_x(gradcheck):
            pass
    """)
    result = run(pytester, monkeypatch)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*unknown keywords ?'backnd'?*"])


def test_check_params_and_multiple_inputs_through_the_fixture(pytester, monkeypatch):
    """check_params and check(f, (a, b)) work through the fixture; a failing parameter
    shows the per-name table."""
    pytester.makepyfile(test_inner_params="""
        import numpy as np

        P = {"w": np.array([1.0, -2.0]), "b": np.array([0.5])}

        def loss(p):
            return float((p["w"] ** 2).sum() + np.sin(p["b"]).sum())

        def test_params_ok(gradcheck):
            gradcheck.check_params(loss, P, {"w": 2 * P["w"], "b": np.cos(P["b"])})

        def test_params_bad(gradcheck):
            gradcheck.check_params(loss, P, {"w": 2 * P["w"], "b": -np.cos(P["b"])})

        def test_two_inputs(gradcheck):
            a, b = np.array([1.0, 2.0]), np.array([0.5, -1.0])
            report = gradcheck.check(lambda a, b: (a * b).sum(), (a, b), (lambda a, b: b, lambda a, b: a))
            assert len(report) == 2
    """)
    result = run(pytester, monkeypatch)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*check_params: FAIL*", "*b *FAIL*"])


INCONCLUSIVE_TESTS = """
import numpy as np
import pytest

X = np.linspace(0.1, 1.3, 5)
P = {"w": np.array([0.5, -1.0]), "z": np.array([1.0, 2.0])}

def f16(x):
    return np.float16(np.sin(x).sum())  # float16 output: no entry can be resolved

def loss(p):
    # z verifies nothing: its true gradient is 0, and the float() in the middle keeps the
    # referee out (a final float() alone would let it prove the zero exactly)
    return float((p["w"] ** 2).sum()) + float((0.0 * p["z"]).sum())

GRADS = {"w": 2 * P["w"], "z": np.zeros(2)}

def test_check_fails_by_default(gradcheck):
    gradcheck.check(f16, X, np.cos)

@pytest.mark.gradcheck(allow_unchecked=True)
def test_check_accepted_by_the_marker(gradcheck):
    assert gradcheck.check(f16, X, np.cos).status == "INCONCLUSIVE"

def test_check_accepted_per_call(gradcheck):
    gradcheck.check(f16, X, np.cos, allow_unchecked=True)

def test_params_fail_by_default(gradcheck):
    gradcheck.check_params(loss, P, GRADS)

@pytest.mark.gradcheck(allow_unchecked=True)
def test_params_accepted_by_the_marker(gradcheck):
    assert gradcheck.check_params(loss, P, GRADS).inconclusive == ["z"]
"""


def test_a_check_that_verified_nothing_fails_the_test_unless_allowed(pytester, monkeypatch):
    """Through the fixture, a check or a model check that verified nothing (INCONCLUSIVE)
    fails the test by default, saying why; allow_unchecked=True on the marker or the call
    accepts it."""
    pytester.makepyfile(test_inner_inconclusive=INCONCLUSIVE_TESTS)
    result = run(pytester, monkeypatch)
    result.assert_outcomes(passed=3, failed=2)
    result.stdout.fnmatch_lines([
        "*gradient check inconclusive: no entry could be verified (allow_unchecked=True accepts it*",
        "*f16: INCONCLUSIVE -- no entry could be verified: 5 UNCHECKED*",
        "*why: f returns float16*",
    ])
    result.stdout.fnmatch_lines(["*check_params: INCONCLUSIVE*verified nothing: z*"])


@needs("torch", "jax")
def test_torch_and_jax_controls_run_once_each(pytester, monkeypatch, control_calls):
    """Checks through torch and jax trigger their own controls, once per session each."""
    pytester.makepyfile(test_inner_frameworks="""
        import jax.numpy as jnp
        import torch

        def test_torch_a(gradcheck):
            gradcheck.check(lambda t: t.tanh().sum(), torch.linspace(-1, 1, 5, dtype=torch.float64))

        def test_torch_b(gradcheck):
            gradcheck.check(lambda t: (t * t).sum(), torch.ones(3, dtype=torch.float64))

        def test_jax(gradcheck):
            gradcheck.check(lambda t: jnp.tanh(t).sum(), jnp.linspace(-1, 1, 5))
    """)
    result = run(pytester, monkeypatch)
    result.assert_outcomes(passed=3)
    assert sorted(control_calls) == [("jax", "auto"), ("torch", "auto")]
    result.stdout.fnmatch_lines([
        "jax (engine auto): control passed; 1 checks",
        "torch (engine auto): control passed; 2 checks",
    ])


def test_failing_checks_leave_html_and_json_named_after_the_test(pytester, monkeypatch):
    """--gradcheck-html / --gradcheck-json DIR: one page and one JSON per failing check (through
    the fixture or a direct assert_pass), named after the test, their paths printed with the
    failure; the page's table and the JSON name the planted entry; passing tests write nothing."""
    import json

    pytester.makepyfile(test_inner_buggy=BUGGY_TESTS + "\ndef test_fine(gradcheck):\n"
                        "    gradcheck.check(f, X, lambda x: np.cos(x) * x + np.sin(x))\n")
    result = run(pytester, monkeypatch, "--gradcheck-html", "pages", "--gradcheck-json", "data")
    result.assert_outcomes(failed=2, passed=1)
    names = ["test_inner_buggy.py_test_through_fixture", "test_inner_buggy.py_test_direct_assert_pass"]
    assert sorted(p.name for p in (pytester.path / "pages").iterdir()) == sorted(f"{n}.html" for n in names)
    assert sorted(p.name for p in (pytester.path / "data").iterdir()) == sorted(f"{n}.json" for n in names)
    for n in names:
        result.stdout.fnmatch_lines([f"gradcheck HTML report: {pytester.path / 'pages' / n}.html",
                                     f"gradcheck JSON report: {pytester.path / 'data' / n}.json"])
        rows = table_rows(pytester.path / "pages" / f"{n}.html")
        assert next(r[:2] for r in rows if r and r[0].startswith("(")) == ["(1, 2)", "MISMATCH"]
        data = json.loads((pytester.path / "data" / f"{n}.json").read_text(encoding="utf-8"))
        assert data["passed"] is False and data["entries"][0]["index"] == [1, 2]


def test_passing_checks_leave_pages_with_the_passing_option(pytester, monkeypatch):
    """--gradcheck-passing (issue 27): with --gradcheck-html, the checks that passed leave their
    pages too, one per check (a test's second check gets -2), each a PASS page; the failing
    test's page is still written, and the option is listed by pytest --help."""
    pytester.makepyfile(test_inner_buggy=BUGGY_TESTS + "\ndef test_fine(gradcheck):\n"
                        "    gradcheck.check(f, X, lambda x: np.cos(x) * x + np.sin(x))\n"
                        "    gradcheck.check(f, X * 2, lambda x: np.cos(x) * x + np.sin(x))\n")
    result = run(pytester, monkeypatch, "--gradcheck-html", "pages", "--gradcheck-passing")
    result.assert_outcomes(failed=2, passed=1)
    fine = "test_inner_buggy.py_test_fine"
    names = sorted(p.name for p in (pytester.path / "pages").iterdir())
    assert names == sorted([f"{fine}.html", f"{fine}-2.html", "test_inner_buggy.py_test_through_fixture.html",
                            "test_inner_buggy.py_test_direct_assert_pass.html"])
    for page in (f"{fine}.html", f"{fine}-2.html"):
        text = (pytester.path / "pages" / page).read_text(encoding="utf-8")
        assert '<span class="gc-badge gc-pass">PASS</span>' in text and 'gc-badge gc-fail' not in text
    without = run(pytester, monkeypatch, "--gradcheck-html", "only-failing")
    assert not any(p.name.startswith(fine) for p in (pytester.path / "only-failing").iterdir())
    without.assert_outcomes(failed=2, passed=1)
    helped = run(pytester, monkeypatch, "--help")
    helped.stdout.fnmatch_lines(["*--gradcheck-passing*"])


def test_without_the_options_nothing_is_written(pytester, monkeypatch):
    """No --gradcheck-html / --gradcheck-json: a failing check writes no file and adds no section."""
    pytester.makepyfile(test_inner_buggy=BUGGY_TESTS)
    before = set(pytester.path.iterdir())
    result = run(pytester, monkeypatch)
    result.assert_outcomes(failed=2)
    assert set(pytester.path.iterdir()) == before
    assert "gradcheck HTML report" not in result.stdout.str()


def table_rows(page: Path) -> list[list[str]]:
    """The cell texts of every table row of an HTML page, parsed as a browser would."""
    # CI installs html5lib (the test extra): missing there, it must fail, never skip.
    html5lib = __import__("html5lib")  # the test extra
    tree = html5lib.parse(page.read_text(encoding="utf-8"), namespaceHTMLElements=False)
    return [["".join(td.itertext()).strip() for td in tr] for tr in tree.iter("tr")]


EXAMPLE_SRC = Path(__file__).resolve().parent / "example-project" / "src"


def test_example_project_failure_leaves_a_page_naming_the_planted_entry(pytester, monkeypatch):
    """The example project's layer with a planted slip in one weight's gradient, checked through
    the fixture with --gradcheck-html: the page left behind names the parameter W in its table
    of names and the entry (2, 1) in W's table."""
    pytester.syspathinsert(EXAMPLE_SRC)
    pytester.makepyfile(test_softreg_planted="""
        import numpy as np
        from softreg import SoftmaxRegression

        RNG = np.random.default_rng(42)
        X = RNG.standard_normal((8, 5))
        LABELS = RNG.integers(0, 3, size=8)

        def test_model_parameters(gradcheck):
            model = SoftmaxRegression(5, 3)
            grads = SoftmaxRegression.backward(model.params, X, LABELS)
            wrong_w = grads["W"].copy()
            wrong_w[2, 1] *= 1.001
            gradcheck.check_params(lambda p: SoftmaxRegression.loss(p, X, LABELS), model.params,
                                   {"W": wrong_w, "b": grads["b"]})
    """)
    result = run(pytester, monkeypatch, "--gradcheck-html", "gradcheck-reports")
    result.assert_outcomes(failed=1)
    page = pytester.path / "gradcheck-reports" / "test_softreg_planted.py_test_model_parameters.html"
    result.stdout.fnmatch_lines([f"gradcheck HTML report: {page}"])
    rows = table_rows(page)
    assert next(r[:2] for r in rows if r and r[0] == "W") == ["W", "FAIL"]
    assert next(r[:2] for r in rows if r and r[0] == "b") == ["b", "PASS"]
    assert next(r[:2] for r in rows if r and r[0].startswith("(")) == ["(2, 1)", "MISMATCH"]
