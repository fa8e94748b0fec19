"""The negative control: a corrupted gradient must be flagged, a correct one must pass."""
from __future__ import annotations

import concurrent.futures

import numpy as np
import pytest

import gradcheck
from gradcheck import Verdict, assert_detects_wrong_gradient
from gradcheck._evaluate import fork_available


def test_control_passes_for_numpy_backend():
    """The real checker passes its own control through the numpy backend."""
    assert_detects_wrong_gradient("numpy")


def test_control_fails_for_a_checker_that_passes_everything(monkeypatch):
    """A broken checker that calls everything PASS is caught by the control."""
    import gradcheck._pipeline.check as chk
    import gradcheck._pipeline.judge as jdg

    monkeypatch.setattr(jdg, "classify", lambda a, n, z, **kw: np.zeros(np.shape(a), np.uint8))
    monkeypatch.setattr(chk.Config, "refine", False, raising=False)
    with pytest.raises(gradcheck.GradientAssertionError, match="flagged"):
        assert_detects_wrong_gradient("numpy", config=gradcheck.Config(refine=False), adjudicate=False)


def test_control_fails_for_a_checker_that_cries_wolf(monkeypatch):
    """A broken checker that flags everything is caught too (the other direction)."""
    import gradcheck._pipeline.judge as jdg

    monkeypatch.setattr(jdg, "classify", lambda a, n, z, **kw: np.ones(np.shape(a), np.uint8))
    with pytest.raises(gradcheck.GradientAssertionError, match="CORRECT"):
        assert_detects_wrong_gradient("numpy", config=gradcheck.Config(refine=False), adjudicate=False)


def test_control_fails_when_differences_are_not_computed(monkeypatch):
    """A harness that computes nothing (numeric side equal to the claim) is caught."""
    import gradcheck._pipeline.judge as jdg

    real = jdg.judge_entries

    def lazy(differencer, values, analytic, diffs, steps, **kw):
        out = real(differencer, values, analytic, diffs, steps, **kw)
        out.numeric[:] = analytic
        out.codes[:] = Verdict.PASS
        return out

    monkeypatch.setattr(jdg, "judge_entries", lazy)
    with pytest.raises(gradcheck.GradientAssertionError):
        assert_detects_wrong_gradient("numpy")


def test_referee_rescues_a_first_pass_that_cries_wolf(monkeypatch):
    """With the referee on, a first pass that flags everything is overruled entry by entry
    against exact derivatives, and the control still sees exactly the corrupted entries."""
    import gradcheck._pipeline.judge as jdg

    monkeypatch.setattr(jdg, "classify", lambda a, n, z, **kw: np.ones(np.shape(a), np.uint8))
    assert_detects_wrong_gradient("numpy", config=gradcheck.Config(refine=False))


def test_unknown_backend_lists_known():
    """An unknown backend name lists the known ones, the built-in ones not yet loaded too."""
    with pytest.raises(ValueError, match="numpy") as info:
        assert_detects_wrong_gradient("abacus")
    assert all(name in str(info.value) for name in ("dual", "torch", "jax"))


@pytest.mark.parametrize("engine", [
    "serial", "batched", "compiled",
    pytest.param("processes", marks=pytest.mark.skipif(not fork_available(),
                                                       reason="needs the fork start method")),
    "executor",
])
def test_control_passes_on_every_engine(engine):
    """The negative control runs, and passes, on every engine, and on the one asked for:
    compiled runs the njit twin of the control function, executor a thread pool here."""
    if engine == "executor":
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            assert_detects_wrong_gradient("numpy", executor=pool)
    else:
        assert_detects_wrong_gradient("numpy", engine=engine)


def test_the_compiled_control_is_the_control_and_is_not_vacuous():
    """engine="compiled": the twin is the control function (same values, as numba compiles
    it), and a check of the corrupted claim through the compiled engine flags exactly the
    corrupted entries, while the correct claim passes everywhere."""
    from gradcheck._controls.corrupt import CORRUPTIONS
    from gradcheck._controls.corrupt import Corrupting as _Corrupting
    from gradcheck.backends import NumpyBackend
    from gradcheck.backends._numpy import control_function, control_gradient, control_input

    be = NumpyBackend()
    f, x, grad = be.compiled_control_problem()
    assert type(f).__name__ == "CPUDispatcher"  # a numba @njit function
    np.testing.assert_array_equal(x, control_input())
    assert grad is control_gradient
    for point in (x, *np.random.default_rng(4).standard_normal((3, 3, 4))):
        np.testing.assert_allclose(f(point), control_function(point), rtol=1e-14, atol=0)
    good = gradcheck.check(f, x, grad, backend=be, engine="compiled")
    bad = gradcheck.check(f, x, grad, backend=_Corrupting(be), engine="compiled")
    assert good.engine == bad.engine == "compiled"
    assert good.counts[Verdict.PASS] == good.size
    assert sorted(bad.entries(Verdict.MISMATCH)) == sorted(ix for ix, _ in CORRUPTIONS)
    assert bad.counts[Verdict.PASS] == bad.size - len(CORRUPTIONS)


def test_control_fails_when_another_engine_ran(monkeypatch):
    """A control asked of one engine that ran on another says nothing about the one asked
    for: it fails, naming both."""
    import gradcheck._pipeline.difference as dif
    from gradcheck._evaluate import Choice, SerialRunner

    monkeypatch.setattr(dif, "choose", lambda name, target: Choice(SerialRunner(target), "serial: forced"))
    with pytest.raises(gradcheck.GradientAssertionError, match="'processes' was asked for.*'serial'"):
        assert_detects_wrong_gradient("numpy", engine="processes")
