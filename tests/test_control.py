"""The negative control: a corrupted gradient must be flagged, a correct one must pass."""
from __future__ import annotations

import numpy as np
import pytest

import gradcheck
from gradcheck import Verdict, assert_detects_wrong_gradient


def test_control_passes_for_numpy_backend():
    """The real checker passes its own control through the numpy backend."""
    assert_detects_wrong_gradient("numpy")


def test_control_fails_for_a_checker_that_passes_everything(monkeypatch):
    """A broken checker that calls everything PASS is caught by the control."""
    import gradcheck._check as chk
    import gradcheck._judge as jdg

    monkeypatch.setattr(jdg, "classify", lambda a, n, z, **kw: np.zeros(np.shape(a), np.uint8))
    monkeypatch.setattr(chk.Config, "refine", False, raising=False)
    with pytest.raises(gradcheck.GradientAssertionError, match="flagged"):
        assert_detects_wrong_gradient("numpy", config=gradcheck.Config(refine=False), adjudicate=False)


def test_control_fails_for_a_checker_that_cries_wolf(monkeypatch):
    """A broken checker that flags everything is caught too (the other direction)."""
    import gradcheck._check as chk
    import gradcheck._judge as jdg

    monkeypatch.setattr(jdg, "classify", lambda a, n, z, **kw: np.ones(np.shape(a), np.uint8))
    with pytest.raises(gradcheck.GradientAssertionError, match="CORRECT"):
        assert_detects_wrong_gradient("numpy", config=gradcheck.Config(refine=False), adjudicate=False)


def test_control_fails_when_differences_are_not_computed(monkeypatch):
    """A harness that computes nothing (numeric side equal to the claim) is caught."""
    import gradcheck._check as chk
    import gradcheck._judge as jdg

    real = chk.judge_entries

    def lazy(differencer, values, analytic, diffs, steps, **kw):
        out = real(differencer, values, analytic, diffs, steps, **kw)
        out.numeric[:] = analytic
        out.codes[:] = Verdict.PASS
        return out

    monkeypatch.setattr(chk, "judge_entries", lazy)
    with pytest.raises(gradcheck.GradientAssertionError):
        assert_detects_wrong_gradient("numpy")


def test_referee_rescues_a_first_pass_that_cries_wolf(monkeypatch):
    """With the referee on, a first pass that flags everything is overruled entry by entry
    against exact derivatives, and the control still sees exactly the corrupted entries."""
    import gradcheck._judge as jdg

    monkeypatch.setattr(jdg, "classify", lambda a, n, z, **kw: np.ones(np.shape(a), np.uint8))
    assert_detects_wrong_gradient("numpy", config=gradcheck.Config(refine=False))


def test_unknown_backend_lists_known():
    """An unknown backend name lists the known ones."""
    with pytest.raises(ValueError, match="numpy"):
        assert_detects_wrong_gradient("abacus")
