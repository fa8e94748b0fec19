"""The pytest fixture runs the checks beyond first-order reverse mode: check_jvp,
check_hvp, check_adjoint and taylor_test, each after its own negative control (once per
session and backend), failing the test with the result's table unless it passed."""
from __future__ import annotations

import gradcheck

pytest_plugins = ["pytester"]

TESTS = """
import numpy as np

X = np.array([0.3, -1.2, 0.7, 2.1])
A = np.random.default_rng(0).standard_normal((5, 4))

def f(x):
    return np.sum(np.sin(x) * x)

def grad(x):
    return np.cos(x) * x + np.sin(x)

def hvp(x, v):
    return (2 * np.cos(x) - x * np.sin(x)) * v

def test_jvp(gradcheck):
    gradcheck.check_jvp(f, X, lambda x, t: np.sum(grad(x) * t))

def test_hvp(gradcheck):
    gradcheck.check_hvp(f, X, hvp, grad=grad)

def test_adjoint(gradcheck):
    gradcheck.check_adjoint(lambda t: A @ t, lambda v: A.T @ v, in_shape=(4,))

def test_taylor(gradcheck):
    r = gradcheck.taylor_test(f, X, grad, hvp)
    assert r.observed[1] > 2.9

def test_taylor_wrong(gradcheck):
    gradcheck.taylor_test(f, X, lambda x: grad(x) * 1.01)

def test_adjoint_wrong(gradcheck):
    gradcheck.check_adjoint(lambda t: A @ t, lambda v: A[:, ::-1].T @ v, in_shape=(4,))
"""


def run(pytester, monkeypatch, *args):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    return pytester.runpytest("-p", "gradcheck.pytest_plugin", "--strict-markers", "-p", "no:cacheprovider", *args)


def test_fixture_runs_each_kind_after_its_control(pytester, monkeypatch):
    """Four passing checks and two failing ones (their tables shown); one control per
    kind, each named in the summary."""
    calls = []
    real = gradcheck.assert_detects_wrong_gradient

    def counting(backend="numpy", **kwargs):
        calls.append((getattr(backend, "name", backend), kwargs.get("kind", "grad")))
        return real(backend, **kwargs)

    monkeypatch.setattr(gradcheck, "assert_detects_wrong_gradient", counting)
    pytester.makepyfile(test_inner_orders=TESTS)
    result = run(pytester, monkeypatch)
    result.assert_outcomes(passed=4, failed=2)
    assert sorted(calls) == [("numpy", k) for k in ("adjoint", "hvp", "jvp", "taylor")]
    result.stdout.fnmatch_lines(["*R1 (grad)*", "*<J t, v>*"])
    for kind in ("adjoint", "hvp", "jvp", "taylor"):  # checks are counted per backend (6 through numpy)
        result.stdout.fnmatch_lines([f"numpy (engine auto; kind {kind}): control passed; 6 checks"])


def test_failing_taylor_and_adjoint_tests_leave_html_and_json_pages(pytester, monkeypatch):
    """--gradcheck-html / --gradcheck-json DIR: the two failing global tests (Taylor, adjoint)
    leave one page and one JSON each, named after the test; the pages say FAIL and hold the
    remainder table and the per-draw table; the passing tests write nothing."""
    import json

    pytester.makepyfile(test_inner_orders=TESTS)
    result = run(pytester, monkeypatch, "--gradcheck-html", "pages", "--gradcheck-json", "data")
    result.assert_outcomes(passed=4, failed=2)
    names = {"test_inner_orders.py_test_taylor_wrong": "R1 (grad)", "test_inner_orders.py_test_adjoint_wrong": "<J t, v>"}
    assert sorted(p.name for p in (pytester.path / "pages").iterdir()) == sorted(f"{n}.html" for n in names)
    assert "could not write" not in result.stdout.str()
    for n, column in names.items():
        page = (pytester.path / "pages" / f"{n}.html").read_text(encoding="utf-8")
        assert page.startswith("<!DOCTYPE html>") and "gc-badge gc-fail" in page
        assert f"<th>{column.replace('<', '&lt;').replace('>', '&gt;')}</th>" in page
        data = json.loads((pytester.path / "data" / f"{n}.json").read_text(encoding="utf-8"))
        assert data["passed"] is False and data["status"] == "FAIL"
