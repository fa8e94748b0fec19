"""The verdict table: real and naive low-precision kernels, judged by ``dispute`` and by a
ground truth this test computes itself with mpmath.

The truth shares no code with ``dispute``: exact values from mpmath formulas written here
(``mpmath.erfc``, ``mpmath.fdot``, ...), ulps from this file's own ``ulp``, and each entry's
sensitivity ``kappa = sum_j |x_j dy/dx_j|`` from closed-form derivatives or from central
differences at 50 digits over every input entry. With ``s = (|y| + kappa) u / ulp(y)`` (u the
float32 unit roundoff) a kernel is

* clearly **accurate** when every entry is within ``1.9 + 4 s`` ulp;
* clearly **broken** when some entry is beyond ``3 + 16 s`` ulp (or not finite);
* unclear otherwise.

``dispute``'s bound (``2 + 8 s``) lies between the two: it must agree with every clear truth,
call no clearly accurate kernel broken, and call every naive kernel broken. Between the bands
either verdict is right, so no verdict could be checked there: the table's inputs are chosen
so that every case's truth is clear, and an unclear one fails (pick other inputs for it)
rather than pass having verified nothing. (Measured 2026-12-03, torch 2.13 CPU: the accurate
kernels' worst entry is at most 0.84 of ``1.9 + 4 s``, torch's float16 gelu; the broken ones'
at least 1.12 times ``3 + 16 s``, torch's layer_norm backward.) Torch's cases are
collected when torch is installed, marked ``optional`` (CI's full configuration runs them).
"""
from __future__ import annotations

import importlib.util

import mpmath
import numpy as np
import pytest
from optional_deps import needs

from gradcheck import dispute
from gradcheck._lowp import definitions as d
from gradcheck._lowp.kernel_table import Case, cases

U = 2.0**-24
BITS = {"bfloat16": (8, -126), "float16": (11, -14), "float32": (24, -126)}
TORCH = importlib.util.find_spec("torch") is not None
mpmath.mp.dps = 30  # the module's own truth; conftest restores mpmath's precision per test


def ulp(y: float, fmt: str) -> float:
    p, emin = BITS[fmt]
    e = max(mpmath.floor(mpmath.log(abs(y), 2)), emin) if y else emin
    return float(mpmath.mpf(2) ** (e - p + 1))


def mp(v) -> mpmath.mpf:
    return mpmath.mpf(float(v))


# -- the truth's own formulas --------------------------------------------------------------


def _scalar(name: str):
    """(f, f') of the elementwise definitions, in mpmath."""
    c = mpmath.sqrt(2 / mpmath.pi)
    k = mpmath.mpf(44715) / 1000000

    def gelu_tanh(x):
        return x * (1 + mpmath.tanh(c * (x + k * x**3))) / 2

    table = {
        "exp": (mpmath.exp, mpmath.exp),
        "tanh": (mpmath.tanh, lambda x: 1 - mpmath.tanh(x) ** 2),
        "sigmoid": (lambda x: 1 / (1 + mpmath.exp(-x)), None),
        "silu": (lambda x: x / (1 + mpmath.exp(-x)), None),
        "gelu": (lambda x: x * mpmath.erfc(-x / mpmath.sqrt(2)) / 2, None),
        "gelu_tanh": (gelu_tanh, None),
        "erf": (mpmath.erf, lambda x: 2 / mpmath.sqrt(mpmath.pi) * mpmath.exp(-x * x)),
    }
    f, df = table[name]
    return f, df or (lambda x: mpmath.diff(f, x))


def _rows(name: str):
    """Row functions (a list of mpf in, a list out), in mpmath."""
    def softmax(r):
        m = max(r)
        e = [mpmath.exp(v - m) for v in r]
        s = mpmath.fsum(e)
        return [v / s for v in e]

    def log_softmax(r):
        m = max(r)
        lse = m + mpmath.log(mpmath.fsum(mpmath.exp(v - m) for v in r))
        return [v - lse for v in r]

    def layer_norm(r):
        mu = mpmath.fsum(r) / len(r)
        var = mpmath.fsum((v - mu) ** 2 for v in r) / len(r)
        return [(v - mu) / mpmath.sqrt(var + mpmath.mpf(1) / 100000) for v in r]

    def rms_norm(r):
        ms = mpmath.fsum(v * v for v in r) / len(r)
        return [v / mpmath.sqrt(ms + mpmath.mpf(1) / 1000000) for v in r]

    return {"softmax": softmax, "log_softmax": log_softmax, "layer_norm": layer_norm,
            "rms_norm": rms_norm}[name]


def _backward(name: str):
    """Row function of (x, g) -> gradient of sum(g * f(x)), in mpmath (closed forms)."""
    def softmax(x, g):
        y = _rows("softmax")(x)
        dot = mpmath.fsum(a * b for a, b in zip(y, g))
        return [a * (b - dot) for a, b in zip(y, g)]

    def layer_norm(x, g):
        n = len(x)
        mu = mpmath.fsum(x) / n
        sigma = mpmath.sqrt(mpmath.fsum((v - mu) ** 2 for v in x) / n + mpmath.mpf(1) / 100000)
        y = [(v - mu) / sigma for v in x]
        mg = mpmath.fsum(g) / n
        mgy = mpmath.fsum(a * b for a, b in zip(g, y)) / n
        return [(b - mg - a * mgy) / sigma for a, b in zip(y, g)]

    return {"softmax": softmax, "layer_norm": layer_norm}[name]


STEP = mpmath.mpf(10) ** -25


def _central(fn, args: list[list], h=STEP):
    """y and kappa of a vector function of several argument vectors, by central differences
    in every input entry (exact derivatives to ~20 digits at the module's precision)."""
    with mpmath.workdps(60):
        y = fn(*args)
        kappa = [mpmath.mpf(0)] * len(y)
        for a, vec in enumerate(args):
            for j, v in enumerate(vec):
                if v == 0:
                    continue
                step = h * abs(v)
                up = [list(x) for x in args]
                dn = [list(x) for x in args]
                up[a][j], dn[a][j] = v + step, v - step
                fu, fd = fn(*up), fn(*dn)
                for i in range(len(y)):
                    kappa[i] += abs(v * (fu[i] - fd[i]) / (2 * step))
        return y, kappa


def truth_values(case: Case, inputs: tuple) -> tuple[list, list]:
    """Exact values and sensitivities, flat, computed here."""
    fn = case.definition
    if case.of == "gradient":
        x, g = inputs
        ys, ks = [], []
        back = _backward(fn.__name__)
        for r in range(x.shape[0]):
            y, k = _central(back, [[mp(v) for v in x[r]], [mp(v) for v in g[r]]])
            ys += y
            ks += k
        return ys, ks
    if fn.__name__ in ("softmax", "log_softmax", "layer_norm", "rms_norm"):
        ys, ks = [], []
        for row in inputs[0]:
            y, k = _central(_rows(fn.__name__), [[mp(v) for v in row]])
            ys += y
            ks += k
        return ys, ks
    if fn.__name__ == "rope_math":
        return _rope_truth(*inputs)
    if fn.__name__ in ("matmul", "matvec_math"):
        a, b = (np.asarray(v, dtype=np.float64) for v in inputs)
        b2 = b if b.ndim == 2 else b[:, None]
        ys = [mpmath.fdot([mp(v) for v in a[i]], [mp(v) for v in b2[:, j]])
              for i in range(a.shape[0]) for j in range(b2.shape[1])]
        return ys, list((2 * np.abs(a) @ np.abs(b2)).reshape(-1))
    if fn.__name__ in ("total", "cumulative"):
        return _sums_truth(np.asarray(inputs[0], dtype=np.float64), fn.__name__ == "cumulative")
    name = {"exp": "exp", "tanh": "tanh"}.get(getattr(fn, "__name__", ""), fn.__name__)
    f, df = _scalar(name)
    xs = [mp(v) for v in np.ravel(inputs[0])]
    return [f(x) for x in xs], [abs(x * df(x)) for x in xs]


def _rope_truth(x, positions):
    x = np.asarray(x, dtype=np.float64)
    half = x.shape[-1] // 2
    ys, ks = [], []
    for r in range(x.shape[0]):
        p = mpmath.mpf(int(positions[r]))
        row_y, row_k = [None] * (2 * half), [None] * (2 * half)
        for i in range(half):
            theta = mpmath.power(10000, -mpmath.mpf(2 * i) / (2 * half))
            a = p * theta
            c, s = mpmath.cos(a), mpmath.sin(a)
            x1, x2 = mp(x[r, i]), mp(x[r, i + half])
            row_y[i], row_y[i + half] = x1 * c - x2 * s, x2 * c + x1 * s
            row_k[i] = abs(x1 * c) + abs(x2 * s) + abs(a * (x1 * s + x2 * c))
            row_k[i + half] = abs(x2 * c) + abs(x1 * s) + abs(a * (x1 * c - x2 * s))
        ys += row_y
        ks += row_k
    return ys, ks


def _sums_truth(x: np.ndarray, cumulative: bool):
    ys, ks = [], []
    for row in x:
        if cumulative:
            ys += _prefix_sums(row)
            ks += list(np.cumsum(np.abs(row)))
        else:
            ys.append(mpmath.fsum(mp(v) for v in row))
            ks.append(float(np.abs(row).sum()))
    return ys, ks


def _prefix_sums(row: np.ndarray) -> list:
    with mpmath.workprec(600):  # bfloat16 values: every prefix sum is exact at 600 bits
        out, acc = [], mpmath.mpf(0)
        for v in row:
            acc += mp(v)
            out.append(+acc)
        return out


def truth(case: Case, inputs: tuple, candidate: np.ndarray) -> str:
    """'accurate', 'broken' or 'unclear' (module docstring)."""
    ys, ks = truth_values(case, inputs)
    c = np.asarray(candidate).astype(np.float64).reshape(-1)
    accurate = True
    for cv, y, k in zip(c, ys, ks):
        q = ulp(float(y), case.dtype)
        if not np.isfinite(cv):
            return "broken"
        err = float(abs(mp(cv) - y)) / q
        s = (abs(float(y)) + float(k)) * U / q
        if err > 3 + 16 * s:
            return "broken"
        accurate &= err <= 1.9 + 4 * s
    return "accurate" if accurate else "unclear"


# -- the table -------------------------------------------------------------------------------


CASES = cases(torch=TORCH)


def _judge(case: Case, inputs: tuple, candidate, definition=None):
    fn = definition or case.definition
    if case.of == "gradient":
        return dispute(fn, inputs[:1], {"k": candidate}, case.dtype, of="gradient", cotangent=inputs[1])
    return dispute(fn, inputs, {"k": candidate}, case.dtype)


@pytest.mark.slow
@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=needs("torch") if c.source == "torch" else ())
                                  for c in CASES])
def test_dispute_agrees_with_the_mpmath_truth(case):
    inputs = case.inputs("test", CASES.index(case))
    candidate = case.kernel(*inputs)
    found = truth(case, inputs, candidate)
    r = _judge(case, inputs, candidate)
    if case.source == "naive":
        assert found == "broken", f"{case.name}: the naive kernel is not clearly broken (truth {found})"
    assert found != "unclear", (f"{case.name}: no clear truth (an entry between 1.9 + 4s and 3 + 16s ulp), "
                                "so no verdict of dispute could be checked: give the case inputs whose truth is clear")
    assert ("k" in r.broken) == (found == "broken"), (case.name, found, r.verdict)


@pytest.mark.parametrize("pair", [(d.gelu, d.gelu_erfc), (d.gelu_tanh, None)], ids=["erf-erfc", "tanh-sigmoid"])
def test_equal_definitions_equal_verdicts_on_the_table_kernels(pair):
    """The table's gelu kernels (numpy, naive, torch when installed) judged by two spellings
    of the same function: the same verdicts (an accurate and a naive kernel each, at least)."""
    def gelu_sigmoid(x):
        one = x.reshape(-1)[:1] * 0 + 1
        return x / (1 + np.exp(-2 * np.sqrt(2 / np.arccos(-one)) * (x + (one * 44715 / 1000000) * x ** 3)))

    first, second = pair[0], pair[1] or gelu_sigmoid
    mine = [c for c in CASES if c.definition is first]
    assert {c.source for c in mine} >= {"numpy", "naive"}
    for case in mine:
        inputs = case.inputs("test", CASES.index(case))
        candidate = case.kernel(*inputs)
        a, b = _judge(case, inputs, candidate), _judge(case, inputs, candidate, second)
        assert a.broken == b.broken, (case.name, a.verdict, b.verdict)
        # where a bound can decide (an error beyond the base bound), the bounds agree too
        decide = a.errors["k"] > 2
        np.testing.assert_allclose(a.bounds[decide], b.bounds[decide], rtol=1e-6)


def test_the_table_covers_what_it_must():
    """Naive kernels of every kind, real kernels of every kind (torch's when installed), the
    gelu tails, gradient cases."""
    names = [c.name for c in CASES]
    assert sum(c.source == "naive" for c in CASES) >= 10
    assert any("gelu" in n and c.source != "naive" for n, c in zip(names, CASES))
    if TORCH:
        for op in ("gelu (torch)", "gelu tanh (torch)", "silu", "softmax (torch)", "log_softmax",
                   "layer_norm (torch)", "rms_norm (torch)", "exp (torch)", "tanh (torch)", "sigmoid",
                   "erf", "matmul K=1024 (torch)", "sum of 4096 (torch)", "cumsum of 4096 (torch)",
                   "rotary embedding, float32 (torch)", "softmax backward", "layer_norm backward"):
            assert any(op in n for n in names), op
