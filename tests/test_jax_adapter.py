"""The JAX adapter: jax.vjp's gradient (custom_vjp rules included) checked entry by entry,
plus dtype / zero-cotangent / reentrancy contract checks; x64 is scoped, never global."""
from __future__ import annotations

import numpy as np
import pytest
from optional_deps import need

jax = need("jax")  # skips the module outside CI when jax is absent (CI's full run requires it)
jnp = jax.numpy

import gradcheck  # noqa: E402
from gradcheck import GradientAssertionError, Verdict, check  # noqa: E402
from gradcheck.backends import resolve  # noqa: E402

X = np.array([[0.3, -1.2, 2.0, 1.1], [0.9, 0.5, -0.7, -1.6], [1.3, -0.4, 0.8, 2.5]])


@pytest.fixture(autouse=True)
def _x64_flag_is_left_alone():
    """No test (and no check) may change jax's global x64 flag."""
    before = jax.config.jax_enable_x64
    yield
    assert jax.config.jax_enable_x64 == before


def sin_times_x(planted=None, out_dtype=None):
    """x*sin(x) with a custom_vjp rule; ``planted=(index, factor)`` corrupts the rule,
    ``out_dtype`` makes it return the wrong dtype."""

    @jax.custom_vjp
    def f(x):
        return jnp.sin(x) * x

    def fwd(x):
        return f(x), x

    def bwd(x, g):
        d = jnp.cos(x) * x + jnp.sin(x)
        if planted is not None:
            ix, factor = planted
            d = d.at[ix].multiply(factor)
        out = g * d
        return (out if out_dtype is None else out.astype(out_dtype),)

    f.defvjp(fwd, bwd)
    return f


def softmax(bug_row=None):
    """A custom_vjp softmax; ``bug_row`` drops the ``- y * sum(g*y)`` term in that row."""

    @jax.custom_vjp
    def f(x):
        return jax.nn.softmax(x, axis=-1)

    def fwd(x):
        y = f(x)
        return y, y

    def bwd(y, g):
        inner = (g * y).sum(-1, keepdims=True)
        if bug_row is not None:
            inner = inner.at[bug_row].set(0.0)
        return (y * (g - inner),)

    f.defvjp(fwd, bwd)
    return f


CORRECT = [
    ("elementwise", lambda t: (jnp.tanh(t) * t[::-1]).sum()),
    ("softmax-array-output", lambda t: jax.nn.softmax(t, axis=-1)),
    ("custom-vjp", sin_times_x()),
    ("custom-vjp-softmax", softmax()),
]


@pytest.mark.parametrize("f", [c[1] for c in CORRECT], ids=[c[0] for c in CORRECT])
def test_correct_vjp_passes_in_float64(f):
    """jax's gradient of correct functions passes at every entry (float64 via scoped x64)."""
    r = check(f, X, backend="jax")
    assert r.passed, str(r)
    assert r.counts[Verdict.PASS] == X.size, str(r)


BUGGY = [
    ("custom-vjp-rel-1e-3", sin_times_x(((1, 2), 1.001)), {(1, 2)}),
    ("custom-vjp-sign-flip", sin_times_x(((0, 3), -1.0)), {(0, 3)}),
    ("custom-vjp-softmax-row-2", softmax(bug_row=2), {(2, j) for j in range(4)}),
    ("stop-gradient-drops-a-term", lambda t: (jax.lax.stop_gradient(t) ** 2 * t).sum(),
     {(i, j) for i in range(3) for j in range(4)}),
]


@pytest.mark.parametrize("f, expected", [c[1:] for c in BUGGY], ids=[c[0] for c in BUGGY])
def test_buggy_custom_vjp_caught_at_exactly_its_entries(f, expected):
    """A wrong VJP rule is flagged MISMATCH at exactly the entries it corrupts."""
    r = check(f, X, backend="jax")
    assert set(r.entries(Verdict.MISMATCH)) == expected, str(r)


def test_negative_control_passes_for_jax():
    """The control (corrupted gradient flagged, correct one passed) holds through jax."""
    gradcheck.assert_detects_wrong_gradient("jax")


def test_jax_array_selects_the_backend_and_keeps_its_dtype():
    """A jax array selects the jax backend; float32 (x64 off) is checked with the float32
    preset, and no x64 note is added."""
    x = jnp.asarray(X, dtype=jnp.float32)
    assert resolve(None, x).name == "jax"
    r = check(sin_times_x(), x)
    assert r.passed and r.dtype == "float32", str(r)
    assert not any("x64" in n for n in r.notes)


def test_float64_numpy_input_runs_in_scoped_x64_and_says_so():
    """A float64 input is never silently truncated to float32: the check runs under a
    scoped x64 context (the fixture verifies the global flag is unchanged) and notes it."""
    r = check(lambda t: (t * t).sum(), X, backend="jax")
    assert r.dtype == "float64" and r.passed
    if not jax.config.jax_enable_x64:
        assert any("jax.enable_x64" in n for n in r.notes)


def test_rule_returning_the_wrong_dtype_fails_naming_both():
    """jax lets a custom_vjp rule return float32 for a float64 input; gradcheck does not."""
    with pytest.raises(GradientAssertionError, match="dtype float32.*dtype float64"):
        check(sin_times_x(out_dtype=jnp.float32), X, backend="jax")


def test_non_reentrant_rule_fails():
    """A rule with hidden state (a second call of the same vjp gives another result) fails."""
    calls = []

    @jax.custom_vjp
    def f(x):
        return jnp.sin(x)

    def bwd(x, g):
        calls.append(1)
        return (g * jnp.cos(x) * (1.0 if len(calls) % 2 else 1.5),)

    f.defvjp(lambda x: (f(x), x), bwd)
    with pytest.raises(GradientAssertionError, match="not reentrant"):
        check(f, X, backend="jax")


def test_zero_cotangent_must_give_zero_gradient():
    """A rule adding a term independent of the cotangent breaks 'zero in, zero out'."""

    @jax.custom_vjp
    def f(x):
        return jnp.sin(x)

    f.defvjp(lambda x: (f(x), x), lambda x, g: (g * jnp.cos(x) + 1e-3 * x,))
    with pytest.raises(GradientAssertionError, match="zero cotangent") as err:
        check(f, X, backend="jax")
    assert len(err.value.report.entries(Verdict.MISMATCH)) == X.size


def test_multiple_inputs_get_one_report_each():
    """check(f, (a, b)) with jax arrays: one report per input, a bug in b's rule only."""

    @jax.custom_vjp
    def mul(a, b):
        return a @ b

    def bwd(res, g):
        a, b = res
        return g @ b.T, (a.T @ g).at[2, 0].multiply(-1.0)

    mul.defvjp(lambda a, b: (mul(a, b), (a, b)), bwd)
    a, b = jnp.asarray(X[:2], jnp.float32), jnp.asarray(X.T, jnp.float32)
    r = check(mul, (a, b))
    assert r[0].passed
    assert r[1].entries(Verdict.MISMATCH) == [(2, 0)]
    assert not r.passed
