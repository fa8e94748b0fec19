"""check_jvp: a forward-mode claim (J t) checked at every input entry, with check's
verdicts; planted errors are caught at exactly their entries, correct claims pass, for a
hand-written numpy JVP and for torch's and jax's own forward mode through custom rules."""
from __future__ import annotations

import numpy as np
import optional_deps
import pytest

import gradcheck
from gradcheck import Verdict, check_jvp

X = np.array([[0.3, -1.2, 2.0, 1.1], [0.9, 0.5, -0.7, -1.6], [1.3, -0.4, 0.8, 2.5]])
W = np.random.default_rng(5).standard_normal((6, 12))


def framework(name):
    """torch / jax, or a skip where absent (a failure in CI's full run: tests/optional_deps.py)."""
    return optional_deps.need(name)


def net(x):
    """A vector function of a 3x4 input: tanh(W vec(x)) plus a product of two rows."""
    return np.concatenate([np.tanh(W @ x.reshape(-1)), x[0] * x[2]])


def net_jvp(x, t, planted=()):
    """J t of ``net``, by hand; ``planted`` = [(input entry, error)] adds error * t[entry]
    to output 6 (a wrong column of J)."""
    a = np.tanh(W @ x.reshape(-1))
    out = np.concatenate([(1 - a**2) * (W @ t.reshape(-1)), t[0] * x[2] + x[0] * t[2]])
    for ix, err in planted:
        out[6] = out[6] + err * t[ix]
    return out


def test_correct_numpy_jvp_passes_every_entry():
    """A correct hand-written JVP passes at all 12 input entries."""
    r = check_jvp(net, X, net_jvp)
    assert r.passed and r.counts[Verdict.PASS] == X.size
    assert any("12 JVPs" in n for n in r.notes)


@pytest.mark.parametrize("planted", [[((1, 2), 1e-4)], [((0, 0), -0.3), ((2, 3), 1e-5)], [((2, 1), 1e-5)]])
def test_planted_jvp_errors_are_caught_at_exactly_their_entries(planted):
    """A wrong column of J (error e at input entry i) is MISMATCH at i and nowhere else,
    down to an error of ~1e-5 of the entry's value."""
    r = check_jvp(net, X, lambda x, t: net_jvp(x, t, planted))
    assert sorted(r.entries(Verdict.MISMATCH)) == sorted(ix for ix, _ in planted)


def test_batched_jvp_gives_the_same_verdicts_in_one_call():
    """batched=True hands the JVP a stack of tangents: chunked calls, same claim bits."""
    calls = []

    def batched(x, ts):
        calls.append(ts.shape)
        return np.stack([net_jvp(x, t, [((1, 1), 1e-4)]) for t in ts])

    r = check_jvp(net, X, batched, batched=True)
    assert r.entries(Verdict.MISMATCH) == [(1, 1)]
    assert calls == [(1, 3, 4), (11, 3, 4)]  # one tangent sizes the chunks, then the rest at once
    one_by_one = check_jvp(net, X, lambda x, t: net_jvp(x, t, [((1, 1), 1e-4)]))
    np.testing.assert_array_equal(r.analytic, one_by_one.analytic)


def test_scalar_function_jvp():
    """For a scalar f the claim is J e_i itself."""
    f = lambda x: np.sum(np.sin(x) * x)  # noqa: E731
    jvp = lambda x, t: np.sum((np.cos(x) * x + np.sin(x)) * t)  # noqa: E731
    assert check_jvp(f, X, jvp).passed
    bad = lambda x, t: jvp(x, t) + 1e-5 * t[2, 2]  # noqa: E731
    assert check_jvp(f, X, bad).entries(Verdict.MISMATCH) == [(2, 2)]


def test_input_is_unchanged_and_errors_are_clear():
    """x is bit-for-bit unchanged; numpy without jvp, and a jvp of the wrong size, are
    refused with messages that say what to do."""
    x = X.copy()
    check_jvp(net, x, net_jvp)
    assert x.tobytes() == X.tobytes()
    with pytest.raises(TypeError, match="pass jvp="):
        check_jvp(net, X)
    with pytest.raises(ValueError, match="values per tangent"):
        check_jvp(net, X, lambda x, t: net_jvp(x, t)[:3])
    with pytest.raises(TypeError, match="one input array"):
        check_jvp(lambda a, b: a * b, (X, X), lambda a, b, t: t)


def test_negative_control_jvp_numpy():
    """The control: a JVP corrupted at (1, 2) and (2, 0) is flagged there; the correct passes."""
    gradcheck.assert_detects_wrong_gradient("numpy", kind="jvp")


# -- torch forward mode ---------------------------------------------------------------------


def torch_sin_times_x(planted=None, old_style=False):
    """x sin(x) as a torch.autograd.Function whose jvp rule is written by hand;
    ``planted=(index, factor)`` corrupts the rule at one entry. ``old_style`` writes it
    without setup_context (functorch refuses it: forward_ad is the fallback)."""
    torch = framework("torch")

    def derivative(x):
        d = x.cos() * x + x.sin()
        if planted is not None:
            d = d.clone()
            d[planted[0]] = d[planted[0]] * planted[1]
        return d

    if old_style:
        class Old(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.x = x
                return x.sin() * x

            @staticmethod
            def jvp(ctx, t):
                return t * derivative(ctx.x)

        return Old.apply

    class New(torch.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x.sin() * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_forward(inputs[0])

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return t * derivative(x)

    return New.apply


@pytest.mark.parametrize("old_style", [False, True])
def test_torch_forward_mode_through_a_custom_function(old_style):
    """torch's own forward mode (jvp=None) through a custom Function: correct passes,
    a 1e-4 error planted at (1, 3) is caught there alone; a Function functorch refuses
    is run through forward_ad, and the report says so."""
    torch = framework("torch")
    x = torch.tensor(X)
    good = check_jvp(torch_sin_times_x(old_style=old_style), x)
    assert good.passed and good.counts[Verdict.PASS] == X.size
    bad = check_jvp(torch_sin_times_x(((1, 3), 1 + 1e-4), old_style), x)
    assert bad.entries(Verdict.MISMATCH) == [(1, 3)]
    how = "forward_ad" if old_style else "torch.func.vmap"
    assert any(how in n for n in bad.notes), bad.notes


def test_torch_user_jvp_takes_tensors_and_control_runs():
    """A user jvp for torch input gets tensors; the torch jvp control holds."""
    torch = framework("torch")
    f = lambda t: (t.sin() * t).sum()  # noqa: E731
    jvp = lambda x, t: ((x.cos() * x + x.sin()) * t).sum()  # noqa: E731
    assert check_jvp(f, torch.tensor(X), jvp).passed
    gradcheck.assert_detects_wrong_gradient("torch", kind="jvp")


def test_torch_checks_never_fork_a_pool_by_themselves(monkeypatch):
    """A costly-looking torch check (timings forced to 1 s per call on 4 cores) stays on
    serial: a child forked after torch's thread pool ran deadlocks (seen: check_jvp of a
    50x1000 tanh layer hung on a busy machine when auto picked processes)."""
    torch = framework("torch")
    from gradcheck._evaluate import auto as _auto

    monkeypatch.setattr(_auto, "usable_cores", lambda: 4)
    monkeypatch.setattr(_auto, "time_call", lambda evaluate: 1.0)
    r = check_jvp(torch_sin_times_x(), torch.tensor(X))
    assert r.passed and r.engine == "serial"
    assert gradcheck.check(lambda t: (t.sin() * t).sum(), torch.tensor(X)).engine == "serial"


# -- jax forward mode ---------------------------------------------------------------------


def jax_sin_times_x(planted=None):
    """x sin(x) with a jax.custom_jvp rule; ``planted=(index, factor)`` corrupts it."""
    jax = framework("jax")
    jnp = jax.numpy

    @jax.custom_jvp
    def f(x):
        return jnp.sin(x) * x

    @f.defjvp
    def rule(primals, tangents):
        (x,), (t,) = primals, tangents
        d = jnp.cos(x) * x + jnp.sin(x)
        if planted is not None:
            d = d.at[planted[0]].multiply(planted[1])
        return f(x), d * t

    return f


def test_jax_forward_mode_through_a_custom_jvp():
    """jax's own forward mode (jvp=None, one jax.vmap of jax.jvp) through a custom_jvp
    rule: correct passes, an error planted at (2, 0) is caught there alone."""
    framework("jax")
    good = check_jvp(jax_sin_times_x(), X, backend="jax")
    assert good.passed and good.counts[Verdict.PASS] == X.size
    bad = check_jvp(jax_sin_times_x(((2, 0), 1 - 1e-4)), X, backend="jax")
    assert bad.entries(Verdict.MISMATCH) == [(2, 0)]
    assert any("jax.vmap(jax.jvp)" in n for n in bad.notes)


def test_jax_jvp_control():
    """The jax jvp control holds (framework forward mode, planted errors caught)."""
    framework("jax")
    gradcheck.assert_detects_wrong_gradient("jax", kind="jvp")
