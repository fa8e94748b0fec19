"""Hostile input, keywords: every public function refuses a wrong keyword at the door.

A table walks every keyword of every public callable in ``gradcheck.__all__`` with values of
the wrong type and out of range. Each must raise ``TypeError`` or ``ValueError`` naming the
keyword, before the user's function is called (the functions here count their calls), and
never a raw error from inside the library (``IndexError``, ``invalid literal for int()``).
A keyword added to a public function without a row here fails
:func:`test_every_keyword_of_every_public_function_has_bad_values`.
"""
from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import gradcheck

X = np.array([0.3, -1.2, 0.8])


class Counted:
    """A function that counts its calls (the door must be shut before any)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn, self.calls = fn, 0
        self.__name__ = getattr(fn, "__name__", "f")

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        return self.fn(*args)


def _sum_sin() -> Counted:
    return Counted(lambda x: np.sin(x).sum())


# Each public callable: (a valid call with the keyword changed, the counted user function or None).
def _check(**kw):
    f = _sum_sin()
    return lambda: gradcheck.check(f, X.copy(), np.cos, **kw), f


def _screen(**kw):
    f = _sum_sin()
    return lambda: gradcheck.screen(f, X.copy(), np.cos, **kw), f


def _check_params(**kw):
    f = Counted(lambda p: float(np.sin(p["w"]).sum()))
    return lambda: gradcheck.check_params(f, {"w": X.copy()}, {"w": np.cos(X)}, **kw), f


def _check_jvp(**kw):
    f = Counted(np.sin)
    return lambda: gradcheck.check_jvp(f, X.copy(), lambda x, t: np.cos(x) * t, **kw), f


def _check_hvp(**kw):
    f = Counted(lambda x: np.sum(x ** 3))
    kw.setdefault("grad", lambda x: 3 * x ** 2)
    return lambda: gradcheck.check_hvp(f, X.copy(), lambda x, v: 6 * x * v, **kw), f


def _check_adjoint(**kw):
    f = Counted(np.sin)
    kw.setdefault("f", f)
    return lambda: gradcheck.check_adjoint(lambda x, t: np.cos(x) * t, lambda x, v: np.cos(x) * v, X.copy(),
                                           **kw), f


def _taylor_test(**kw):
    f = _sum_sin()
    kw.setdefault("grad", np.cos)
    return lambda: gradcheck.taylor_test(f, X.copy(), **kw), f


def _dispute(**kw):
    f = Counted(np.exp)
    x = np.linspace(-1, 1, 4).astype(np.float32)
    kw.setdefault("dtype", "float32")
    return lambda: gradcheck.dispute(f, (x,), {"f32": np.exp(x)}, **kw), f


def _shape_sweep(**kw):
    f = _sum_sin()
    return lambda: gradcheck.shape_sweep(f, [(2,), (3,)], lambda s: np.ones(s), np.cos, **kw), f


def _assert_detects(**kw):
    return lambda: gradcheck.assert_detects_wrong_gradient("numpy", **kw), None


def _config(**kw):
    return lambda: gradcheck.Config(**kw), None


class _Submits:
    def submit(self, fn, *args):  # an executor as far as ExecutorOptions can tell
        raise AssertionError("never called")


def _executor_options(**kw):
    return lambda: gradcheck.ExecutorOptions(_Submits(), **kw), None


def _checkpoint(**kw):
    kw.setdefault("path", "run.npz")
    return lambda: gradcheck.Checkpoint(**kw), None


CALLS = {
    gradcheck.check: _check, gradcheck.screen: _screen, gradcheck.check_params: _check_params,
    gradcheck.check_jvp: _check_jvp, gradcheck.check_hvp: _check_hvp, gradcheck.check_adjoint: _check_adjoint,
    gradcheck.taylor_test: _taylor_test, gradcheck.dispute: _dispute, gradcheck.shape_sweep: _shape_sweep,
    gradcheck.assert_detects_wrong_gradient: _assert_detects, gradcheck.Config: _config,
    gradcheck.ExecutorOptions: _executor_options, gradcheck.Checkpoint: _checkpoint,
}

# Wrong values by kind of keyword.
FLAG = ["no", None, 1]
FLAG_OR_NONE = ["no", 1, 0.0]
NAME = [3, b"f"]
SEED = ["abc", 1.5, -1, True, [1]]
SEED_OR_NONE = ["abc", 1.5, -1, True]
CONFIG = [{"rtol": 1e-3}, "float64"]
ADJUDICATE = ["yes", 1, None]
DIGITS = [5, 30.0, "30", True]
POSITIVE = [0, -1.0, np.nan, np.inf, "2", True]
POSITIVE_OR_NONE = [0, -1.0, np.nan, "2", True]
NONNEGATIVE = [-1.0, np.nan, np.inf, "1e-3", None, True]
EXECUTOR = [object(), 3, "pool"]
BACKEND = ["nope", 3]
COUNT = [0, -3, 2.5, "10", True]
#: The tolerance keywords of the checks (issue 27): None there means "not given".
TOLERANCES = {"rtol": [-1.0, np.nan, np.inf, "1e-3", True], "atol": [-1.0, np.nan, "0"],
              "eps": POSITIVE, "resolution": [0, 1, 1.5, "x", True, np.nan], "noise_factor": [-1.0, np.inf, "8"]}

KEYWORDS: dict[Any, dict[str, list[Any]]] = {
    gradcheck.check: {
        "config": CONFIG, "name": NAME, "backend": BACKEND, "engine": ["fast", 3, None], "vectorized": FLAG,
        "progress": FLAG_OR_NONE, "refine": FLAG_OR_NONE, "adjudicate": ADJUDICATE, "digits": DIGITS,
        "bound_ulps": POSITIVE_OR_NONE, "executor": EXECUTOR, "checkpoint": [3, 2.5],
        "complex_convention": ["numpy", 3], "independent_axes": ["rows", (5,), 1.5],
        "grad": ["abc", np.ones(2), 3], **TOLERANCES,
    },
    gradcheck.screen: {
        "budget": [0, -5, "abc", 1.5, True, "10 parsecs", "1.2.3s"], "config": CONFIG,
        "engine": ["fast", None], "vectorized": FLAG, "executor": EXECUTOR, "draws": COUNT, "blocks": COUNT,
        "complex_step": ["yes", 2], "exact": ["yes", 2], "adjudicate": ADJUDICATE, "digits": DIGITS, "name": NAME,
        "backend": BACKEND, "seed": SEED_OR_NONE, "grad": ["abc", np.ones(2), 3], **TOLERANCES,
    },
    gradcheck.check_params: {
        "order": [3, ["nope"]], "sample": [0, 1.5, "3"], "config": CONFIG, "seed": SEED, "adjudicate": ADJUDICATE,
        "digits": DIGITS, "engine": ["fast", None], "executor": EXECUTOR, "screen": FLAG,
        "budget": [0, "abc", True], **TOLERANCES,
    },
    gradcheck.check_jvp: {"jvp": ["abc", 3], "batched": FLAG, "backend": BACKEND, "name": NAME, "engine": ["fast"], "digits": DIGITS,
                          "rtol": TOLERANCES["rtol"], "eps": TOLERANCES["eps"]},
    gradcheck.check_hvp: {
        "hvp": ["abc", 3], "grad": [np.ones(3), "grad"], "reference": ["x", 3], "check_grad": FLAG, "symmetry": FLAG,
        "backend": BACKEND, "name": NAME, "config": CONFIG, "engine": ["fast"],
        "rtol": TOLERANCES["rtol"], "eps": TOLERANCES["eps"],
    },
    gradcheck.check_adjoint: {
        "x": ["abc", [[1, 2], [3]]], "f": [3, "f"], "in_shape": ["a", (2.5,), (-1,)], "backend": BACKEND, "seed": SEED,
        "noise_factor": POSITIVE, "name": NAME, "complex_convention": ["numpy", 3],
    },
    gradcheck.taylor_test: {
        "grad": ["abc", 3], "hvp": ["nope", 3], "direction": ["abc", np.ones(2), np.zeros(3)],
        "backend": BACKEND, "steps": [0, -3, 1, 2.5, "10", True], "h0": POSITIVE, "seed": SEED, "name": NAME,
        "complex_convention": ["numpy", 3],
    },
    gradcheck.dispute: {
        "dtype": ["float99", 3], "dps": [5, 1.5, "40"], "bound_ulps": POSITIVE_OR_NONE, "name": NAME,
        "float32_evaluation": FLAG, "of": ["nothing", 3], "wrt": [-1, 1.5, 5], "cotangent": ["abc"],
        "rounds": COUNT, "working": ["float99", 3, None],
    },
    gradcheck.shape_sweep: {
        "factory": FLAG, "config": CONFIG, "engine": ["fast", None], "backend": BACKEND, "vectorized": FLAG,
        "dim_names": [3, ["a", "b"]], "parts": [{"A": (2,)}, 3], "name": NAME, "keep": ["some", 3],
        "adjudicate": ADJUDICATE, "grad": ["abc", 3],
    },
    gradcheck.assert_detects_wrong_gradient: {
        "backend": BACKEND,
        "engine": ["fast", None], "config": CONFIG, "adjudicate": ADJUDICATE, "executor": EXECUTOR,
        "kind": ["nope", 3],
    },
    gradcheck.Config: {
        "step": POSITIVE, "rtol": NONNEGATIVE, "atol": NONNEGATIVE, "noise_factor": NONNEGATIVE,
        "resolution": [0, 1, 1.5, "x", True, np.nan], "reduce": ["mean", 3], "seed": SEED,
        "refine": FLAG, "refine_noisy": FLAG, "dtype": ["float99", 3, np.float64],
        "second_look": [-1.0, np.inf, np.nan, "1", True],
    },
    gradcheck.ExecutorOptions: {"retries": [-1, 1.5, "2", True], "chunk_entries": COUNT, "slots": COUNT},
    gradcheck.Checkpoint: {"path": [3, None], "interval": [-1.0, np.nan, "5", True], "keep": FLAG},
}

#: Keywords whose value is judged against f's output: f may be called first (its shape is needed).
JUDGED_AGAINST_F = {(gradcheck.check, "grad"), (gradcheck.screen, "grad"), (gradcheck.taylor_test, "grad"),
                    (gradcheck.dispute, "cotangent"), (gradcheck.shape_sweep, "grad")}

#: Keywords that are not checked here, and why (none may be missing silently).
NOT_WALKED = {
    (gradcheck.check_jvp, "options"): "forwarded to check (walked there; two sampled above)",
    (gradcheck.check_hvp, "options"): "forwarded to check (walked there; one sampled above)",
    (gradcheck.check_params, "params"): "positional (None only for check_params(model, ...)); bad dicts, tensors "
                                        "and pytrees: test_validation, test_whole_model*",
    (gradcheck.check_params, "grads"): "positional (None: the framework's own gradient); bad claims: test_validation",
}


def _keywords(fn: Any) -> list[str]:
    """Every parameter of ``fn`` with a default (the keywords a user sets)."""
    sig = inspect.signature(fn)
    return [p.name for p in sig.parameters.values()
            if p.default is not inspect.Parameter.empty or p.kind is inspect.Parameter.VAR_KEYWORD]


def test_every_keyword_of_every_public_function_has_bad_values():
    """The table covers every keyword of every public callable (a new keyword needs a row)."""
    public = [getattr(gradcheck, n) for n in gradcheck.__all__]
    classes = (gradcheck.Config, gradcheck.ExecutorOptions, gradcheck.Checkpoint)  # the public option holders
    walked = [fn for fn in public if callable(fn) and (not isinstance(fn, type) or fn in classes)]
    walked = [fn for fn in walked if _keywords(fn)]
    assert set(walked) == set(KEYWORDS) | {gradcheck.grid}
    for fn in KEYWORDS:
        missing = [k for k in _keywords(fn) if k not in KEYWORDS[fn] and (fn, k) not in NOT_WALKED]
        assert not missing, f"{fn.__name__}: no bad values for {missing}"


CASES = [(fn, key, value) for fn, table in KEYWORDS.items() for key, values in table.items() for value in values]


def _id(fn, key, value) -> str:
    """The case's test id, the same in every process (no object's address: CI's split check
    compares the ids collected by two runs)."""
    return re.sub(r" at 0x[0-9a-fA-F]+", "", f"{fn.__name__}-{key}-{value!r}")[:60]


@pytest.mark.parametrize("fn, key, value", CASES, ids=[_id(*case) for case in CASES])
def test_a_wrong_keyword_is_refused_at_the_door_naming_it(fn, key, value):
    """TypeError or ValueError, naming the keyword, before the user's function runs."""
    call, f = CALLS[fn](**{key: value})
    with pytest.raises((TypeError, ValueError)) as caught:
        call()
    message = str(caught.value)
    assert key in message, f"{fn.__name__}({key}={value!r}) raised {type(caught.value).__name__}: {message}"
    if (fn, key) not in JUDGED_AGAINST_F:
        assert f is None or f.calls == 0, f"{fn.__name__}({key}={value!r}) called f {f.calls} times first"


@pytest.mark.parametrize("axes", [("ab",), ([1.5],), ([-1],), ([],)])
def test_grid_refuses_axes_that_are_not_sizes(axes):
    """grid's axes are sizes: ints >= 1 (the error names the axis)."""
    with pytest.raises((TypeError, ValueError), match="axis|axes|size"):
        gradcheck.grid(*axes)


@pytest.mark.parametrize("fn", list(KEYWORDS))
def test_the_valid_call_of_each_row_runs(fn):
    """Negative control for the table: the call every bad value is swapped into is valid."""
    call, _ = CALLS[fn]()
    call()


def test_a_bfloat16_dispute_call_runs():
    """The dispute rows use float32; bfloat16 input is as valid (a control)."""
    x = np.linspace(-1, 1, 4).astype(ml_dtypes.bfloat16)
    assert gradcheck.dispute(np.exp, (x,), {"bf": np.exp(x.astype(np.float32)).astype(ml_dtypes.bfloat16)},
                             "bfloat16", rounds=1).passed
