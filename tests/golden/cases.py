"""The golden corpus: a fixed set of reports whose JSON must not change when code moves.

Issue 26 moves every feature onto one evaluation layer. Before anything moved, the reports of
these cases were recorded (``record.py``) into ``tests/golden/*.json``; afterwards every case
must give the same JSON, except what is genuinely not reproducible from run to run:

* timing: every ``seconds`` field, and durations written into the notes (``0.53 s``,
  ``12 ms``), which :func:`normalize` replaces by ``<time>``;
* the process's state: the note that a pool was forked although jax's runtime runs in the
  process (it does when an earlier test in the same session started jax), dropped;

nothing else. Choices made from a timing are avoided instead: no case runs ``engine="auto"``
(its choice and its timing calls depend on the machine's load), and the screens ask for the
referee (``adjudicate="auto"`` times f at arbitrary precision to decide, once or twice). Evaluation counts, verdict codes, every numeric value (to the bit: JSON floats
round-trip exactly), the engine's name, the notes' words and the error messages are compared.

Cases (each a name and a function returning a JSON-ready value):

* ``zoo/...``: every case of ``tests/zoo.py``, the correct and the buggy claim, with the
  referee and without it (``adjudicate=False``);
* ``control/...``: the negative controls of every kind of claim, and an ``f`` that writes
  ``-0.0`` over a ``0.0`` of its input;
* ``matrix/FEATURE/ENGINE``: one case per feature (check, check_params, independent_axes,
  screen, check_params(screen=True), check_jvp, check_hvp, check_adjoint, taylor_test) and
  engine (serial, batched, compiled, processes, executor: a thread pool); an engine a feature
  refuses is recorded as its error (the refusal is behaviour too); ``.../raises``: ``f``
  raising at one entry (the error message, the entry).

``FAST`` names the cases ``tests/test_golden.py`` recomputes on every test run (a few
seconds); ``python tests/golden/record.py --check`` recomputes all of them.
"""
from __future__ import annotations

import concurrent.futures
import re
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/zoo.py

import gradcheck  # noqa: E402
from gradcheck import Config, check, check_params, screen  # noqa: E402

#: A duration written in words: ``0.53 s``, ``12 ms``, ``3.1e-05 s``, ``40 us``.
_TIME = re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?\s?(?:s|ms|us|µs)\b")
#: The note of a pool forked while jax runs in the process (the session's state, not the check's).
_HAZARD = "forked its workers although"


def normalize(value: Any) -> Any:
    """``value`` without what differs from run to run: ``seconds`` keys dropped, durations in
    strings replaced by ``<time>`` (see the module docstring)."""
    if isinstance(value, dict):
        return {k: normalize([n for n in v if _HAZARD not in n] if k == "notes" else v)
                for k, v in value.items() if k != "seconds"}
    if isinstance(value, (list, tuple)):
        return [normalize(v) for v in value]
    if isinstance(value, str):
        return _TIME.sub("<time>", value)
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        return value.item()
    return value


def outcome(run: Callable[[], Any]) -> Any:
    """The JSON of what ``run()`` returned (a report's ``to_dict(arrays=True)``), or of what it
    raised: the error's type, its message and, for a FunctionError, the entry and side."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = run()
    except Exception as exc:  # the error is the recorded behaviour
        raised: dict[str, Any] = {"raised": type(exc).__name__, "message": str(exc)}
        for key in ("index", "side", "param"):
            if hasattr(exc, key):
                raised[key] = getattr(exc, key)
        return normalize(raised)
    if hasattr(result, "to_dict"):
        try:
            return normalize(result.to_dict(arrays=True))
        except TypeError:  # results without arrays=
            return normalize(result.to_dict())
    return normalize(result)


# -- subjects ----------------------------------------------------------------------------------
RNG = np.random.default_rng(2026)
X = RNG.standard_normal((5, 4))
X_SCREEN = RNG.standard_normal(240)
X_ROWS = RNG.standard_normal((6, 4))
BUG = (2, 1)


def f_py(x):
    """A Python f that also takes a leading batch axis (vectorized=True)."""
    return (np.sin(x) * x ** 2).sum(axis=(-2, -1))


def g_true(x):
    return np.cos(x) * x ** 2 + 2 * x * np.sin(x)


def g_bug(x):
    """The claim with one planted error, relative 1e-4, at ``BUG``."""
    g = g_true(x)
    g[BUG] *= 1 + 1e-4
    return g


def f_flat(x):
    return (np.sin(x) * x ** 2).sum(axis=-1)


def g_flat_bug(x):
    g = g_true(x)
    g[97] *= 1 + 1e-3
    return g


def rows(x):
    """Each output row depends on its input row only (independent_axes=(0,))."""
    return np.tanh(x) * (x ** 2).sum(axis=-1, keepdims=True)


def rows_vjp(x, v):
    s = (x ** 2).sum(axis=-1, keepdims=True)
    g = v * (1 - np.tanh(x) ** 2) * s + 2 * x * (v * np.tanh(x)).sum(axis=-1, keepdims=True)
    g[1, 2] *= 1 + 1e-4
    return g


def jvp_rows(x, t):
    s = (x ** 2).sum(axis=-1, keepdims=True)
    return t * (1 - np.tanh(x) ** 2) * s + np.tanh(x) * 2 * (x * t).sum(axis=-1, keepdims=True)


def hvp_sum(x, v):
    """The Hessian of f_py times v (diagonal), one entry wrong."""
    d = -np.sin(x) * x ** 2 + 4 * x * np.cos(x) + 2 * np.sin(x)
    out = d * v
    out[BUG] *= 1 + 1e-4
    return out


def _jit():
    """The @njit twins of the subjects (compiled once per process)."""
    import numba

    @numba.njit(cache=False)
    def f_jit(x):
        return np.sum(np.sin(x) * x ** 2)

    @numba.njit(cache=False)
    def rows_jit(x):
        out = np.empty_like(x)
        for i in range(x.shape[0]):
            s = 0.0
            for j in range(x.shape[1]):
                s += x[i, j] * x[i, j]
            for j in range(x.shape[1]):
                out[i, j] = np.tanh(x[i, j]) * s
        return out

    return f_jit, rows_jit


_JIT: list[Any] = []


def jit():
    if not _JIT:
        _JIT.extend(_jit())
    return _JIT


def loss(p):
    return float((np.sin(p["w"]) * p["w"] ** 2).sum() + (np.tanh(p["b"]) * p["b"]).sum())


def params():
    return {"w": X.copy(), "b": X_SCREEN[:6].copy()}


def grads():
    b = X_SCREEN[:6]
    return {"w": g_bug(X), "b": (1 - np.tanh(b) ** 2) * b + np.tanh(b)}


def screen_params():
    return {"w": X_SCREEN.copy(), "b": X_SCREEN[:6].copy()}


def screen_grads():
    b = X_SCREEN[:6]
    return {"w": g_flat_bug(X_SCREEN), "b": (1 - np.tanh(b) ** 2) * b + np.tanh(b)}


def screen_loss(p):
    return float((np.sin(p["w"]) * p["w"] ** 2).sum() + (np.tanh(p["b"]) * p["b"]).sum())


def raising(x):
    """Raises at the perturbed point of entry (3, 2), +h."""
    if np.any(x[..., 3, 2] > X[3, 2]):  # x may be a batch (vectorized=True)
        raise ZeroDivisionError("planted: f raises here")
    return f_py(x)


ENGINES = ("serial", "batched", "compiled", "processes", "executor")


def _with_engine(engine: str, run: Callable[..., Any]) -> Any:
    """``run(engine_keywords)`` on ``engine``: a thread pool for the executor."""
    if engine != "executor":
        return outcome(lambda: run({"engine": engine}))
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        return outcome(lambda: run({"executor": pool}))


def _check(engine: str) -> Any:
    if engine == "compiled":
        return outcome(lambda: check(jit()[0], X, g_bug, engine="compiled"))
    vec = {"vectorized": True} if engine == "batched" else {}
    return _with_engine(engine, lambda kw: check(f_py, X, g_bug, **vec, **kw))


def _check_jit_serial() -> Any:
    return outcome(lambda: check(jit()[0], X, g_bug, engine="serial"))


def _params(engine: str) -> Any:
    return _with_engine(engine, lambda kw: check_params(loss, params(), grads(), **kw))


def _axes(engine: str) -> Any:
    if engine == "compiled":
        return outcome(lambda: check(jit()[1], X_ROWS, rows_vjp, independent_axes=(0,), engine="compiled"))
    vec = {"vectorized": True} if engine == "batched" else {}
    return _with_engine(engine, lambda kw: check(rows, X_ROWS, rows_vjp, independent_axes=(0,), **vec, **kw))


def _axes_jit_serial() -> Any:
    return outcome(lambda: check(jit()[1], X_ROWS, rows_vjp, independent_axes=(0,), engine="serial"))


#: adjudicate="auto" decides from the time one evaluation at arbitrary precision takes (and
#: times it once or twice): not reproducible, so the screen's cases ask for the referee.
SCREEN_OPTIONS = {"adjudicate": True, "exact": False}


def _screen(engine: str) -> Any:
    if engine == "compiled":
        import numba

        f = numba.njit(cache=False)(lambda x: np.sum(np.sin(x) * x ** 2))
        return outcome(lambda: screen(f, X_SCREEN, g_flat_bug, engine="compiled", **SCREEN_OPTIONS))
    vec = {"vectorized": True} if engine == "batched" else {}
    return _with_engine(engine, lambda kw: screen(f_flat, X_SCREEN, g_flat_bug, **SCREEN_OPTIONS, **vec, **kw))


def _params_screen(engine: str) -> Any:
    return _with_engine(engine, lambda kw: check_params(screen_loss, screen_params(), screen_grads(), screen=True,
                                                        adjudicate=True, **kw))


def _jvp(engine: str) -> Any:
    vec = {"vectorized": True} if engine == "batched" else {}

    def bad_jvp(x, t):
        out = jvp_rows(x, t)
        return out * (1 + 1e-4 * t.reshape(-1)[7])  # wrong along entry 7's direction only
    return _with_engine(engine, lambda kw: gradcheck.check_jvp(rows, X_ROWS, bad_jvp, **vec, **kw))


def _hvp(engine: str) -> Any:
    vec = {"vectorized": True} if engine == "batched" else {}
    return _with_engine(engine, lambda kw: gradcheck.check_hvp(f_py, X, hvp_sum, grad=g_true, **vec, **kw))


def _adjoint() -> Any:
    A = RNG.standard_normal((7, 5))
    return outcome(lambda: gradcheck.check_adjoint(lambda x, t: A @ t, lambda x, v: A.T @ v, np.zeros(5),
                                                   f=lambda x: A @ x))


def _taylor() -> Any:
    return outcome(lambda: gradcheck.taylor_test(f_py, X, g_bug))


def _raises(engine: str) -> Any:
    if engine == "compiled":
        return None  # an @njit f raising: the engine's own tests (numba cannot raise here as Python does)
    vec = {"vectorized": True} if engine == "batched" else {}
    return _with_engine(engine, lambda kw: check(raising, X, g_true, **vec, **kw))


def _zoo_cases() -> dict[str, Callable[[], Any]]:
    from zoo import CASES

    out: dict[str, Callable[[], Any]] = {}
    for case in CASES:
        for claim, grad in (("correct", case.grad), ("buggy", case.buggy)):
            for mode, options in (("referee", {}), ("fd-only", {"adjudicate": False})):
                out[f"zoo/{case.name}/{claim}/{mode}"] = (
                    lambda c=case, g=grad, o=options: outcome(lambda: check(c.f, c.x, g, config=c.config, **o)))
    return out


def _control_cases() -> dict[str, Callable[[], Any]]:
    out: dict[str, Callable[[], Any]] = {}
    kinds = ("grad", "jvp", "hvp", "adjoint", "taylor", "complex")
    for backend, kind in [("numpy", k) for k in kinds] + [("dual", "grad")]:
        out[f"control/{backend}/{kind}"] = (
            lambda b=backend, k=kind: outcome(lambda: gradcheck.assert_detects_wrong_gradient(b, kind=k) or "ok"))
    for engine in ENGINES:
        out[f"control/numpy/grad/{engine}"] = lambda e=engine: _with_engine(
            e, lambda kw: gradcheck.assert_detects_wrong_gradient("numpy", **kw) or "ok")

    def negative_zero():
        def f(x):
            x[x == 0] = -0.0
            return (x ** 2).sum()
        return outcome(lambda: check(f, np.array([0.0, 1.0, 2.0]), lambda x: 2 * x))
    out["control/mutation/negative-zero"] = negative_zero
    return out


def _matrix_cases() -> dict[str, Callable[[], Any]]:
    out: dict[str, Callable[[], Any]] = {}
    per_engine = {"check": _check, "check_params": _params, "independent_axes": _axes, "screen": _screen,
                  "check_params_screen": _params_screen, "check_jvp": _jvp, "check_hvp": _hvp,
                  "raises": _raises}
    for feature, run in per_engine.items():
        for engine in ENGINES:
            out[f"matrix/{feature}/{engine}"] = lambda r=run, e=engine: r(e)
    out["matrix/check/serial-njit"] = _check_jit_serial
    out["matrix/independent_axes/serial-njit"] = _axes_jit_serial
    out["matrix/screen/serial-exact"] = lambda: outcome(
        lambda: screen(f_flat, X_SCREEN, g_flat_bug, engine="serial", adjudicate=True, exact=True))
    out["matrix/check_adjoint/serial"] = _adjoint
    out["matrix/taylor_test/serial"] = _taylor
    out["matrix/check/config-float32"] = lambda: outcome(
        lambda: check(f_py, X.astype(np.float32), lambda x: g_bug(x).astype(np.float32), config=Config.for_dtype("float32"),
                      engine="serial"))
    return out


def cases() -> dict[str, Callable[[], Any]]:
    """Every case of the corpus, by name."""
    return {**_zoo_cases(), **_control_cases(), **_matrix_cases()}


#: Recomputed by tests/test_golden.py on every run (fast: no referee pools, no dask).
FAST = tuple(
    [f"matrix/{feature}/{engine}" for feature in ("check", "check_params", "independent_axes", "raises")
     for engine in ENGINES]
    + ["matrix/check/serial-njit", "matrix/independent_axes/serial-njit", "matrix/screen/serial",
       "matrix/check_jvp/serial", "matrix/check_hvp/serial", "control/mutation/negative-zero"]
)
