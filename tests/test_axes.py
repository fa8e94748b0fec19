"""Independent axes (issue 16): ``check(f, x, grad, independent_axes=...)``.

Layers whose output slice depends on its own input slice only (layer norm, softmax, causal
attention per (batch, head), per-example cross-entropy, an elementwise op) are checked by
colouring: one entry of every slice per evaluation. The claims are hand-written VJPs, judged
against the closed forms; the coloured verdicts agree entry for entry with a plain check;
planted bugs are found exactly where they were planted; wrong declarations are refused.

The check's cotangent has its own random stream (``make_cotangent``): data drawn with
``default_rng(0)``, the seed of the default config, is not the cotangent (it was: see
``test_layer_norm_on_data_drawn_with_the_configs_seed``).
"""
from __future__ import annotations

import concurrent.futures as cf
import gc
import multiprocessing
import os
import re
import signal
import threading

import numpy as np
import pytest
from njit_subjects import rowwise, rowwise_vjp
from optional_deps import need

import gradcheck
from gradcheck import Config, DependentSlicesError, Verdict
from gradcheck._axes.colour import SliceGroups
from gradcheck._axes.declare import declare
from gradcheck._evaluate import fork_available
from gradcheck._pipeline.prepare import make_cotangent

needs_fork = pytest.mark.skipif(not fork_available(), reason="needs the fork start method")

# -- layers and their hand-written VJPs (closed forms) ------------------------------------


def layer_norm(x):
    xc = x - x.mean(axis=-1, keepdims=True)
    return xc / np.sqrt((xc**2).mean(axis=-1, keepdims=True) + 1e-5)


def layer_norm_vjp(x, g):
    xc = x - x.mean(axis=-1, keepdims=True)
    inv = 1.0 / np.sqrt((xc**2).mean(axis=-1, keepdims=True) + 1e-5)
    xh = xc * inv
    return inv * (g - g.mean(-1, keepdims=True) - xh * (g * xh).mean(-1, keepdims=True))


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def softmax_vjp(z, g):
    s = softmax(z)
    return s * (g - (g * s).sum(axis=-1, keepdims=True))


def attention(x):
    """Causal self-attention with q = k = v = x, per (batch, head): x is (B, H, T, D)."""
    t, d = x.shape[-2:]
    scores = x @ np.swapaxes(x, -1, -2) / np.sqrt(d) + np.triu(np.full((t, t), -np.inf), 1)
    return softmax(scores) @ x


def attention_vjp(x, g):
    t, d = x.shape[-2:]
    s = 1.0 / np.sqrt(d)
    p = softmax(x @ np.swapaxes(x, -1, -2) * s + np.triu(np.full((t, t), -np.inf), 1))
    dp = g @ np.swapaxes(x, -1, -2)
    dv = np.swapaxes(p, -1, -2) @ g
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))
    return s * (ds @ x) + s * (np.swapaxes(ds, -1, -2) @ x) + dv


LABELS = np.array([2, 0, 1, 3, 3, 1])


def cross_entropy(z):
    """Per-example losses (B,): the idiom for a loss that is a sum over examples."""
    m = z.max(axis=1)
    return m + np.log(np.exp(z - m[:, None]).sum(axis=1)) - z[np.arange(z.shape[0]), LABELS]


def cross_entropy_vjp(z, g):
    onehot = np.zeros_like(z)
    onehot[np.arange(z.shape[0]), LABELS] = 1.0
    return g[:, None] * (softmax(z) - onehot)


def data(shape, seed=7):
    return np.random.default_rng(seed).standard_normal(shape)


CASES = {
    "layer_norm": (layer_norm, layer_norm_vjp, (6, 8), (0,)),
    "softmax": (softmax, softmax_vjp, (5, 7), (0,)),
    "attention": (attention, attention_vjp, (2, 2, 4, 3), (0, 1)),
    "cross_entropy": (cross_entropy, cross_entropy_vjp, (6, 4), (0,)),
    "tanh": (np.tanh, lambda x, g: g * (1 - np.tanh(x) ** 2), (4, 5), "all"),
}


def mismatches(report) -> set[tuple[int, ...]]:
    return {tuple(int(k) for k in i) for i in np.argwhere(report.codes == Verdict.MISMATCH)}


# -- correct claims pass, agree with a plain check, and cost 2 per entry of a slice -------


@pytest.mark.parametrize("case", sorted(CASES))
def test_correct_layer_passes_and_agrees_with_a_plain_check(case):
    f, vjp, shape, axes = CASES[case]
    x = data(shape)
    before = x.copy()
    coloured = gradcheck.check(f, x, vjp, independent_axes=axes)
    plain = gradcheck.check(f, x, vjp)
    assert coloured.counts[Verdict.MISMATCH] == 0 and coloured.passed, str(coloured)
    np.testing.assert_array_equal(coloured.codes, plain.codes)  # same verdicts, entry for entry
    np.testing.assert_allclose(coloured.numeric, plain.numeric, rtol=1e-6, atol=1e-9)
    assert np.array_equal(x, before)  # the user's array is untouched
    per_slice = x.size // declare(axes, shape, np.shape(f(x))).slices
    first_pass = 2 * per_slice
    assert coloured.evaluations < plain.evaluations
    assert coloured.evaluations <= 1 + first_pass + 40 + 2 * 10 * per_slice, coloured.evaluations
    assert "coloured" in coloured.engine


def test_elementwise_all_is_a_handful_of_evaluations():
    x = data((200, 300), seed=3)
    report = gradcheck.check(np.tanh, x, lambda x, g: g * (1 - np.tanh(x) ** 2), independent_axes="all")
    assert report.passed and report.counts[Verdict.MISMATCH] == 0
    # 2 for the first pass, the verification (3 singles + 2 per bit, 12 bits, + 4 random), 1 at the end
    assert report.evaluations <= 1 + 2 + 3 + 28 + 1 + 8, report.evaluations


# -- planted bugs: found at exactly their entries ------------------------------------------


def planted(where):
    def vjp(x, g):
        out = layer_norm_vjp(x, g)
        out[where] += 1e-3 * (1.0 + np.abs(out[where]))
        return out
    return vjp


@pytest.mark.parametrize("where", [(3, 5), (np.s_[2, :]), (np.s_[:, 4])], ids=["entry", "row", "column"])
def test_planted_bug_found_at_exactly_its_entries(where):
    x = data((8, 6), seed=11)
    report = gradcheck.check(layer_norm, x, planted(where), independent_axes=(0,))
    expected = np.zeros(x.shape, dtype=bool)
    expected[where] = True
    assert mismatches(report) == {tuple(int(k) for k in i) for i in np.argwhere(expected)}
    assert not report.passed


def test_planted_bug_in_attention_is_found_in_its_batch_and_head():
    x = data((2, 3, 4, 2), seed=5)

    def wrong(x, g):
        out = attention_vjp(x, g)
        out[1, 2, 3, 0] *= 1.01
        return out

    report = gradcheck.check(attention, x, wrong, independent_axes=(0, 1))
    assert mismatches(report) == {(1, 2, 3, 0)}


def test_a_wrong_elementwise_claim_is_caught_with_all():
    x = data((50,), seed=13)
    report = gradcheck.check(np.tanh, x, lambda x, g: g * (1 - np.tanh(x) ** 2) * (1 + 1e-4 * (x > 1.5)),
                             independent_axes="all")
    assert mismatches(report) == {(int(i),) for i in np.flatnonzero(x > 1.5)}


# -- wrong declarations are refused, never turned into verdicts ----------------------------


def batch_norm(x):
    return (x - x.mean(axis=0)) / np.sqrt(x.var(axis=0) + 1e-5)


WRONG = {
    "batch mean": lambda x: layer_norm(x) - x.mean(axis=0),
    "batch norm": batch_norm,
    "roll along the batch": lambda x: np.roll(layer_norm(x), 1, axis=0),
    "last row feeds the first": lambda x: layer_norm(x) + np.eye(x.shape[0])[:, :1] * 1e-3 * x[-1].sum(),
    "one far slice": lambda x: layer_norm(x) + np.eye(x.shape[0])[:, 5:6] * x[12, 3],
}


@pytest.mark.parametrize("case", sorted(WRONG))
def test_wrong_declaration_is_refused(case):
    x = data((16, 4), seed=17)
    with pytest.raises(DependentSlicesError, match="along axis 0") as info:
        gradcheck.check(WRONG[case], x, layer_norm_vjp, independent_axes=(0,))
    err = info.value
    assert err.axis == 0 and err.entry[0] != err.leak[0]
    if case == "one far slice":  # only x[12, 3] leaks, into row 5: found and named exactly
        assert err.entry == (12, 3) and err.leak[0] == 5
    if case == "last row feeds the first":
        assert err.entry[0] == 15 and err.leak[0] == 0


def test_a_leak_from_one_entry_among_many_slices_is_found():
    """256 slices of 64 entries, one entry feeding one far slice: a single-entry probe would
    find it with probability 1/16384; the halves perturb whole slices and always do."""
    x = data((256, 64), seed=67)
    with pytest.raises(DependentSlicesError) as info:
        gradcheck.check(lambda x: layer_norm(x) + np.eye(256)[:, 200:201] * 1e-9 * x[37, 41], x, layer_norm_vjp,
                        independent_axes=(0,))
    assert info.value.entry == (37, 41) and info.value.leak[0] == 200


def test_wrong_elementwise_declaration_is_refused():
    x = data((10,), seed=19)
    with pytest.raises(DependentSlicesError):
        gradcheck.check(lambda x: np.cumsum(x), x, lambda x, g: np.cumsum(g[::-1])[::-1], independent_axes="all")


def test_a_leak_along_the_second_declared_axis_is_named():
    x = data((2, 3, 4, 2), seed=23)
    with pytest.raises(DependentSlicesError, match="along axis 1"):
        gradcheck.check(lambda x: attention(x) + x.mean(axis=1, keepdims=True), x, attention_vjp,
                        independent_axes=(0, 1))


# -- engines, several inputs, refusals ------------------------------------------------------


def test_batched_engine_gives_the_same_verdicts():
    x = data((6, 5), seed=29)
    serial = gradcheck.check(layer_norm, x, layer_norm_vjp, independent_axes=(0,))
    batched = gradcheck.check(layer_norm, x, layer_norm_vjp, independent_axes=(0,), vectorized=True)
    np.testing.assert_array_equal(serial.codes, batched.codes)
    np.testing.assert_array_equal(serial.numeric, batched.numeric)  # layer_norm is per row: same bits
    assert batched.engine.startswith("batched")


def _same_report(a, b) -> None:
    """Every array of two reports equal, bit for bit (NaN where NaN), and the same counts."""
    for name, value in vars(a).items():
        if isinstance(value, np.ndarray):
            other = getattr(b, name)
            assert value.shape == other.shape and value.tobytes() == other.tobytes(), name
    assert a.evaluations == b.evaluations and a.counts == b.counts


def _no_children_left() -> bool:
    gc.collect()
    return multiprocessing.active_children() == []


@needs_fork
def test_processes_engine_gives_serials_report_bit_for_bit():
    """Each +h or -h evaluation a job on the fork pool: the first pass and the second look
    (a planted bug's step study) give serial's numbers, bit for bit; x is untouched."""
    x = data((6, 5), seed=41)
    before = x.copy()
    serial = gradcheck.check(layer_norm, x, planted((4, 2)), independent_axes=(0,))
    procs = gradcheck.check(layer_norm, x, planted((4, 2)), independent_axes=(0,), engine="processes")
    assert procs.engine == "processes (coloured)" and serial.engine == "serial (coloured)"
    _same_report(procs, serial)
    assert mismatches(procs) == {(4, 2)}
    assert np.array_equal(x, before) and x.tobytes() == before.tobytes()
    assert _no_children_left()


@needs_fork
def test_processes_engine_blames_f_like_serial_and_names_a_dead_worker():
    """f raising in a worker is serial's FunctionError (same entry, same side, f's exception as
    the cause); a worker killed by f is WorkerDiedError, its entries holding the one that killed it."""
    x = data((6, 5), seed=43)
    bad, rest = float(x[3, 1]), float(x[3, 0])
    parent = os.getpid()

    def raising(x):  # x - h at (3, 1) alone in its row: not a verification probe (+h, or whole rows)
        if x[3, 1] < bad and x[3, 0] == rest:
            raise ZeroDivisionError("planted")
        return layer_norm(x)

    def killing(x):
        if x[3, 1] != bad and os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return layer_norm(x)

    with pytest.raises(gradcheck.FunctionError) as serial:
        gradcheck.check(raising, x, layer_norm_vjp, independent_axes=(0,))
    with pytest.raises(gradcheck.FunctionError) as procs:
        gradcheck.check(raising, x, layer_norm_vjp, independent_axes=(0,), engine="processes")
    assert procs.value.index == serial.value.index and procs.value.index[1] == 1
    assert procs.value.side == serial.value.side and procs.value.side.startswith("-h")
    assert isinstance(procs.value.__cause__, ZeroDivisionError)
    with pytest.raises(gradcheck.WorkerDiedError) as died:
        gradcheck.check(killing, x, layer_norm_vjp, independent_axes=(0,), engine="processes")
    flat = lambda index: int(np.ravel_multi_index(index, x.shape))  # noqa: E731
    assert flat(died.value.first) <= flat((3, 1)) <= flat(died.value.last)
    assert "killed by SIGKILL" in str(died.value) and "coloured" in str(died.value)

    def writing(x):  # a write by f into its input, on a worker, is seen there
        out = layer_norm(x)
        if os.getpid() != parent:
            x[0, 0] = 0.0
        return out

    with pytest.raises(gradcheck.InputMutationError):
        gradcheck.check(writing, x, layer_norm_vjp, independent_axes=(0,), engine="processes")
    assert _no_children_left()


@needs_fork
def test_executor_gives_serials_report_bit_for_bit():
    """Each coloured evaluation a task on an Executor (here a fork process pool: f and the
    differencer cloudpickled once, cached per worker): serial's numbers, bit for bit."""
    x = data((6, 5), seed=47)
    before = x.copy()
    serial = gradcheck.check(layer_norm, x, planted((1, 3)), independent_axes=(0,))
    with cf.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as ex:
        done = gradcheck.check(layer_norm, x, planted((1, 3)), independent_axes=(0,), executor=ex)
    assert done.engine == "executor (coloured)"
    _same_report(done, serial)
    assert mismatches(done) == {(1, 3)} and x.tobytes() == before.tobytes()


def test_executor_blames_f_like_serial():
    """f raising on a worker thread is serial's FunctionError (same entry, same side, f's
    exception as the cause), not retried; a write by f into its input is seen on the worker."""
    x = data((6, 5), seed=53)
    bad, rest = float(x[2, 4]), float(x[2, 0])

    def raising(x):  # x - h at (2, 4) alone in its row: not a verification probe
        if x[2, 4] < bad and x[2, 0] == rest:
            raise ZeroDivisionError("planted")
        return layer_norm(x)

    def writing(x):
        out = layer_norm(x)
        if threading.current_thread() is not threading.main_thread():
            x[0, 0] = 0.0
        return out

    with pytest.raises(gradcheck.FunctionError) as serial:
        gradcheck.check(raising, x, layer_norm_vjp, independent_axes=(0,))
    with cf.ThreadPoolExecutor(2) as ex:
        with pytest.raises(gradcheck.FunctionError) as done:
            gradcheck.check(raising, x, layer_norm_vjp, independent_axes=(0,), executor=ex)
        with pytest.raises(gradcheck.InputMutationError):
            gradcheck.check(writing, x, layer_norm_vjp, independent_axes=(0,), executor=ex)
    assert done.value.index == serial.value.index and done.value.index[1] == 4
    assert done.value.side == serial.value.side and done.value.side.startswith("-h")
    assert isinstance(done.value.__cause__, ZeroDivisionError)


def test_checkpoint_resumes_a_coloured_check_bit_for_bit(tmp_path):
    """An interrupted coloured check resumes from its checkpoint (recorded round by round, under
    the declaration): the report is the uninterrupted one, bit for bit, for fewer evaluations;
    a plain check refuses the file (its values are not slice reductions)."""
    x = data((6, 5), seed=59)
    path = tmp_path / "coloured.npz"
    bad, rest = float(x[5, 4]), float(x[5, 0])
    state = {"broken": True}

    def f(x):  # x - h at (5, 4), the last round's: the first chunk of rounds is on file by then
        if state["broken"] and x[5, 4] < bad and x[5, 0] == rest:
            raise ZeroDivisionError("interrupted")
        return layer_norm(x)

    state["broken"] = False
    whole = gradcheck.check(f, x, planted((2, 3)), independent_axes=(0,))
    state["broken"] = True
    with pytest.raises(gradcheck.FunctionError):
        gradcheck.check(f, x, planted((2, 3)), independent_axes=(0,), checkpoint=path)
    assert path.exists()
    with pytest.raises(gradcheck.CheckpointMismatchError, match="coloured, independent_axes=\\(0,\\)"):
        gradcheck.check(f, x, planted((2, 3)), checkpoint=path)
    state["broken"] = False
    resumed = gradcheck.check(f, x, planted((2, 3)), independent_axes=(0,), checkpoint=path)
    for name in ("numeric", "noise", "codes", "tolerance"):
        assert getattr(resumed, name).tobytes() == getattr(whole, name).tobytes(), name
    fresh = gradcheck.check(f, x, planted((2, 3)), independent_axes=(0,), checkpoint=tmp_path / "fresh.npz")
    assert fresh.codes.tobytes() == whole.codes.tobytes()
    assert mismatches(resumed) == {(2, 3)} and resumed.evaluations < fresh.evaluations
    assert not path.exists()  # a finished check deletes its checkpoint


def test_several_inputs_sharing_the_axes():
    x, w = data((5, 4), seed=31), data((5, 4), seed=37)
    report = gradcheck.check(lambda x, w: np.tanh(x * w), (x, w),
                             lambda x, w, g: (g * w * (1 - np.tanh(x * w) ** 2), g * x * (1 - np.tanh(x * w) ** 2)),
                             independent_axes=(0,))
    assert report.passed


@pytest.mark.parametrize("kwargs, match", [
    ({"engine": "forked"}, "engine"),
])
def test_unsupported_options_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        gradcheck.check(layer_norm, data((3, 4)), layer_norm_vjp, independent_axes=(0,), **kwargs)


def test_scalar_output_is_refused_with_the_per_example_idiom():
    with pytest.raises(ValueError, match="per-example losses"):
        gradcheck.check(lambda z: cross_entropy(z).sum(), data((6, 4)), lambda z: cross_entropy_vjp(z, np.ones(6)),
                        independent_axes=(0,))


def test_an_f_computing_in_float32_is_refused_not_misjudged():
    """float32 x and an f that computes in float32 whatever it is given: its check needs
    Richardson estimates the coloured pass does not make (plain differences at the float32
    step flagged a third of a correct row-wise layer as MISMATCH): refused, and the same f
    and claim pass without independent_axes."""
    x = data((8, 6), seed=41).astype(np.float32)

    def f(x):
        x = x.astype(np.float32)
        return np.tanh(x) * x.sum(axis=1, keepdims=True)

    def vjp(x, v):
        x, v = x.astype(np.float64), v.astype(np.float64)
        t = np.tanh(x)
        return (v * (1 - t ** 2) * x.sum(axis=1, keepdims=True) + (v * t).sum(axis=1, keepdims=True)).astype(np.float32)

    with pytest.raises(ValueError, match="computes in float32"):
        gradcheck.check(f, x, vjp, independent_axes=(0,))
    assert gradcheck.check(f, x, vjp).counts[gradcheck.Verdict.MISMATCH] == 0


def test_complex_input_is_refused():
    with pytest.raises(ValueError, match="complex"):
        gradcheck.check(lambda z: z * z, data((3,)) + 1j, None, independent_axes="all")


@pytest.mark.parametrize("axes, shapes, match", [
    ((1,), ((4, 3), (4,)), "share axis 1"),
    ("all", ((4, 3), (4,)), "elementwise"),
    ((), ((4, 3), (4, 3)), "no axis"),
    ((0, 0), ((4, 3), (4, 3)), "twice"),
    ((2,), ((4, 3), (4, 3)), "out of range"),
])
def test_bad_declarations(axes, shapes, match):
    with pytest.raises((ValueError, TypeError), match=match):
        declare(axes, *shapes)


def test_rounds_hold_at_most_one_entry_per_slice():
    for slices in (np.random.default_rng(41).integers(0, 5, size=40), np.repeat(np.arange(6), 3)):
        groups = SliceGroups(slices, 6)
        rounds = [groups.members(r) for r in range(groups.rounds)]
        assert sorted(np.concatenate(rounds).tolist()) == list(range(slices.size))  # each entry once
        for members in rounds:
            assert len(set(slices[members].tolist())) == members.size  # never two of one slice
        assert groups.rounds == np.bincount(slices).max()


def test_reduce_sum_config_agrees_with_a_plain_check():
    x = data((4, 6), seed=43)
    cfg = Config(reduce="sum")
    coloured = gradcheck.check(layer_norm, x, layer_norm_vjp, independent_axes=(0,), config=cfg)
    plain = gradcheck.check(layer_norm, x, layer_norm_vjp, config=cfg)
    np.testing.assert_array_equal(coloured.codes, plain.codes)


# -- the referee works on each entry's own slice --------------------------------------------


def test_referee_differentiates_each_entry_on_its_own_slice():
    x = data((6, 8), seed=47)
    report = gradcheck.check(layer_norm, x, planted((3, 5)), independent_axes=(0,))
    assert mismatches(report) == {(3, 5)}
    assert any("own slice (shape (1, 8))" in n for n in report.notes)
    g = make_cotangent(x.shape, Config())  # the check's cotangent
    truth = layer_norm_vjp(x, g)[3, 5]
    assert abs(report.exact[3, 5] - truth) < 1e-12 * abs(truth)


def test_referee_falls_back_to_the_whole_input_when_f_needs_it():
    x = data((6, 8), seed=53)

    def fixed_rows(x):
        if x.shape[0] != 6:
            raise ValueError("this layer takes 6 rows")
        return layer_norm(x)

    report = gradcheck.check(fixed_rows, x, planted((1, 2)), independent_axes=(0,))
    assert mismatches(report) == {(1, 2)}
    assert any("whole input: f raised ValueError" in n for n in report.notes)
    assert np.isfinite(report.exact[1, 2])


# -- adapters and compiled functions --------------------------------------------------------


def test_torch_function_through_its_adapter():
    torch = need("torch")
    x = torch.tensor(data((5, 6), seed=59))
    report = gradcheck.check(lambda t: torch.nn.functional.layer_norm(t, (6,), eps=1e-5), x,
                             independent_axes=(0,))
    assert report.passed and report.counts[Verdict.MISMATCH] == 0
    assert "coloured" in report.engine


def test_njit_function_returning_an_array():
    x = data((4, 3), seed=61)
    assert gradcheck.check(rowwise, x, rowwise_vjp, independent_axes=(0,)).passed

    def wrong(x, g):
        out = rowwise_vjp(x, g)
        out[2] *= 1.001
        return out

    assert mismatches(gradcheck.check(rowwise, x, wrong, independent_axes=(0,))) == {(2, j) for j in range(3)}


def test_compiled_engine_gives_serials_report_bit_for_bit():
    """engine='compiled' with an array-valued @njit f: the coloured evaluations run in a
    parallel numba kernel; the first pass and the second look (a planted bug at one entry)
    give serial's numbers bit for bit; x is untouched."""
    x = data((9, 5), seed=67)
    before = x.copy()

    def wrong(x, g):
        out = rowwise_vjp(x, g)
        out[6, 3] += 1e-3 * (1.0 + abs(out[6, 3]))
        return out

    for claim, bad in ((rowwise_vjp, set()), (wrong, {(6, 3)})):
        serial = gradcheck.check(rowwise, x, claim, independent_axes=(0,), engine="serial")
        compiled = gradcheck.check(rowwise, x, claim, independent_axes=(0,), engine="compiled")
        assert compiled.engine == "compiled (coloured)" and serial.engine == "serial (coloured)"
        _same_report(compiled, serial)
        assert mismatches(compiled) == bad and compiled.passed == (not bad)
        assert compiled.evaluations == serial.evaluations < 2 * x.size
    with pytest.raises(DependentSlicesError):  # a wrong declaration: refused here too
        gradcheck.check(rowwise, x, rowwise_vjp, independent_axes="all", engine="compiled")
    assert np.array_equal(x, before) and x.tobytes() == before.tobytes()


def test_compiled_engine_blames_f_like_serial():
    """An @njit f that raises at a perturbed point, or writes into its input there (into
    another entry, or into the perturbed entry itself, where putting the entry back would
    hide the write): the compiled engine raises serial's FunctionError (same entry, same
    side), and InputMutationError, as serial (and the executor's workers) do. (The shared
    subject rowwise does each past a threshold: tests/njit_subjects.py.)"""
    x = data((4, 3), seed=79)
    x[0, 0] = 10.0 - 1e-9  # +h crosses 10: f raises there
    errors = []
    for engine in ("serial", "compiled"):
        with pytest.raises(gradcheck.FunctionError, match="too big") as caught:
            gradcheck.check(rowwise, x, rowwise_vjp, independent_axes=(0,), engine=engine)
        errors.append((caught.value.index, caught.value.side))
    assert errors[0] == errors[1] == ((0, 0), "+h, coloured: 4 entries perturbed together")
    x[0, 0] = -10.0 + 1e-9  # -h crosses -10: f writes into x[0, 1]
    before = x.copy()
    for engine in ("serial", "compiled"):
        with pytest.raises(gradcheck.InputMutationError):
            gradcheck.check(rowwise, x, rowwise_vjp, independent_axes=(0,), engine=engine)
    assert x.tobytes() == before.tobytes()
    x = data((4, 3), seed=79)
    # +h crosses 30: f writes into x[3, 0], the entry perturbed there. Only the full step crosses:
    # the declaration's probes (which would catch the write first) move x[3, 0] by less.
    x[3, 0] = 30.0 - 0.9999 * 6e-6 * 30.0
    before = x.copy()
    seen = {"serial": re.escape("entry (3, 0) changed while it was perturbed, +h"),
            "compiled": r"compiled engine, coloured, \+h, perturbing x\[0, 0\]"}
    for engine, message in seen.items():
        with pytest.raises(gradcheck.InputMutationError, match=message):
            gradcheck.check(rowwise, x, rowwise_vjp, independent_axes=(0,), engine=engine)
    with cf.ThreadPoolExecutor(2) as ex, pytest.raises(gradcheck.InputMutationError):
        gradcheck.check(rowwise, x, rowwise_vjp, independent_axes=(0,), executor=ex)
    assert x.tobytes() == before.tobytes()
    x[3, 0] = 30.0 - 1.0  # control: no step reaches 30, f never writes
    assert gradcheck.check(rowwise, x, rowwise_vjp, independent_axes=(0,), engine="compiled").passed


def test_compiled_engine_refuses_what_it_cannot_run():
    """Not an @njit f, or a scalar-valued one: refused with the reason, never run elsewhere."""
    x = data((3, 4), seed=73)
    with pytest.raises(TypeError, match="engine='compiled' with independent_axes.*numba @njit"):
        gradcheck.check(layer_norm, x, layer_norm_vjp, independent_axes=(0,), engine="compiled")
    import numba

    total = numba.njit(cache=False)(lambda v: rowwise(v).sum())
    with pytest.raises(ValueError, match="f returned a scalar"):
        gradcheck.check(total, x, lambda v: rowwise_vjp(v, np.ones_like(v)), independent_axes=(0,),
                        engine="compiled")


def test_jax_function_through_its_adapter():
    jax = need("jax")
    jnp = jax.numpy

    @jax.custom_vjp
    def rowwise(t):
        return jnp.tanh(t) * t.sum(axis=-1, keepdims=True)

    def fwd(t):
        return rowwise(t), t

    def bwd(t, g):  # row 1 dropped the sum's term: a bug in one row
        th = jnp.tanh(t)
        back = g * (1 - th**2) * t.sum(axis=-1, keepdims=True) + (g * th).sum(axis=-1, keepdims=True)
        return (back.at[1].set(g[1] * (1 - th[1] ** 2) * t[1].sum()),)

    rowwise.defvjp(fwd, bwd)
    x = data((3, 4), seed=71)
    right = gradcheck.check(lambda t: jnp.tanh(t) * t.sum(axis=-1, keepdims=True), x, backend="jax",
                            independent_axes=(0,))
    assert right.passed and "coloured" in right.engine
    wrong = gradcheck.check(rowwise, x, backend="jax", independent_axes=(0,))
    assert mismatches(wrong) == {(1, j) for j in range(4)}


def test_a_non_leading_axis():
    """Softmax over axis 0 is independent along axis 1 (columns), not along axis 0."""
    x = data((5, 7), seed=73)
    column_softmax = lambda z: softmax(z.T).T  # noqa: E731
    column_vjp = lambda z, g: softmax_vjp(z.T, g.T).T  # noqa: E731
    report = gradcheck.check(column_softmax, x, column_vjp, independent_axes=(1,))
    assert report.passed and report.evaluations < 2 * x.size
    with pytest.raises(DependentSlicesError, match="along axis 0"):
        gradcheck.check(column_softmax, x, column_vjp, independent_axes=(0,))


def test_f_raising_while_the_declaration_is_verified_is_located():
    x = data((3, 4), seed=79)
    x[1, 2] = 10 - 1e-9  # the check's own step crosses 10 here

    def fragile(z):
        if (z > 10).any():
            raise RuntimeError("out of the domain")
        return np.tanh(z)

    with pytest.raises(gradcheck.FunctionError, match="out of the domain"):
        gradcheck.check(fragile, x, lambda z, g: g * (1 - np.tanh(z) ** 2), independent_axes="all")


def test_the_probes_failures_are_located_at_the_first_entry_perturbed():
    """The declaration's probes run on the evaluation layer: f raising there is FunctionError at
    the probe's first entry, named ``"+h, verifying independent_axes: N entries perturbed
    together"``; another shape there, an OutputError at the same place; a write into an entry
    the probe did not perturb, InputMutationError saying how many were; the user's x keeps its
    bits every time. Control: the same f without the fault passes."""
    x = data((4, 3), seed=3)
    before = x.copy()
    rows = lambda z: np.tanh(z) * z.sum(axis=1, keepdims=True)  # noqa: E731
    vjp = lambda z, g: _rows_vjp(z, g)  # noqa: E731

    def raises(z):
        if z[2, 1] != before[2, 1]:
            raise RuntimeError("out of the domain")
        return rows(z)

    def shrinks(z):
        return rows(z) if z[2, 1] == before[2, 1] else rows(z)[:, :2]

    def writes_elsewhere(z):
        if z[2, 1] != before[2, 1]:
            z[1, 0] = 5.0  # not in a probe with x[2, 1]: rows {0, 2}, {2, 3}
        return rows(z)

    located = []
    for f, error in ((raises, gradcheck.FunctionError), (shrinks, gradcheck.OutputError)):
        with pytest.raises(error) as caught:
            gradcheck.check(f, x, vjp, independent_axes=(0,))
        located.append((caught.value.index, caught.value.side))
        assert x.tobytes() == before.tobytes()
    assert located[0] == located[1]  # the first entry of the first probe that moves x[2, 1]
    assert re.fullmatch(r"\+h, verifying independent_axes: \d+ entries perturbed together", located[0][1])
    with pytest.raises(gradcheck.InputMutationError,
                       match=r"entry \(1, 0\) changed while \d+ others were perturbed, verifying independent_axes"):
        gradcheck.check(writes_elsewhere, x, vjp, independent_axes=(0,))
    assert x.tobytes() == before.tobytes()
    assert gradcheck.check(rows, x, vjp, independent_axes=(0,)).passed


def _rows_vjp(z, g):
    t = np.tanh(z)
    return (1 - t**2) * z.sum(axis=1, keepdims=True) * g + (t * g).sum(axis=1, keepdims=True)


def test_kinks_are_found_on_each_entrys_own_base_value():
    """|x| at exact zeros: the kink test needs each entry's own slice's f(x); the verdicts
    agree with a plain check's, KINK at exactly the zeros. The claim takes the right-hand
    slope at 0 (not sign(0) = 0, the midpoint, which the central difference confirms as it
    stands, a PASS without a kink test whatever the cotangent)."""
    x = data((4, 5), seed=83)
    x[1, 3] = x[2, 0] = 0.0
    rowwise_abs = lambda z: np.abs(z) * (1.0 + z.sum(axis=1, keepdims=True) ** 2)  # noqa: E731

    def vjp(z, g):
        s = z.sum(axis=1, keepdims=True)
        return g * np.where(z >= 0, 1.0, -1.0) * (1 + s**2) + (g * np.abs(z)).sum(axis=1, keepdims=True) * 2 * s

    coloured = gradcheck.check(rowwise_abs, x, vjp, independent_axes=(0,), adjudicate=False)
    plain = gradcheck.check(rowwise_abs, x, vjp, adjudicate=False)
    kinks = {tuple(int(k) for k in i) for i in np.argwhere(coloured.codes == Verdict.KINK)}
    assert kinks == {(1, 3), (2, 0)}
    np.testing.assert_array_equal(coloured.codes, plain.codes)


def test_attention_is_not_independent_along_the_sequence():
    """Causal attention mixes earlier positions into later ones: declaring the sequence axis
    independent is refused (a leak from an earlier position into a later one)."""
    x = data((2, 2, 4, 3), seed=89)
    with pytest.raises(DependentSlicesError, match="along axis 2") as info:
        gradcheck.check(attention, x, attention_vjp, independent_axes=(0, 1, 2))
    assert info.value.leak[2] > info.value.entry[2]  # causal: only later positions see it


def test_elementwise_round_sees_a_write_into_a_perturbed_entry():
    """independent_axes="all" perturbs every entry of the private copy in place; an f that
    writes into one of them (putting the copy back would hide the write) is
    InputMutationError naming the entry; the same f without the write passes (control), and
    the user's x is untouched either way."""
    x = data((5, 4), seed=61)
    before = x.copy()
    top = float(x.max())

    def writing(z):
        out = np.tanh(z)
        if z.max() > top:  # only at +h, where every entry is moved up
            z[2, 3] = 0.5
        return out

    grad = lambda z, g: g * (1 - np.tanh(z) ** 2)  # noqa: E731
    with pytest.raises(gradcheck.InputMutationError, match=re.escape("entry (2, 3) changed while it was perturbed")):
        gradcheck.check(writing, x, grad, independent_axes="all")
    assert x.tobytes() == before.tobytes()
    assert gradcheck.check(np.tanh, x, grad, independent_axes="all").passed


# -- the cotangent is not the data: a layer norm on default_rng(0) data ----------------------


def layer_norm_vjp_divided(x, g):
    """The layer norm's VJP written another way: divided by the std at the end."""
    xc = x - x.mean(-1, keepdims=True)
    var = (xc**2).mean(-1, keepdims=True)
    xh = xc / np.sqrt(var + 1e-5)
    return (g - g.mean(-1, keepdims=True) - xh * (g * xh).mean(-1, keepdims=True)) / np.sqrt(var + 1e-5)


@pytest.mark.parametrize("seed", [0, 5])
def test_cotangent_stream_is_not_the_datas(seed):
    """``make_cotangent`` with seed s is not ``default_rng(s)``'s draw, nor correlated with it."""
    shape = (64, 256)
    v = make_cotangent(shape, Config(seed=seed))
    x = np.random.default_rng(seed).standard_normal(shape)
    assert abs(np.corrcoef(v.ravel(), x.ravel())[0, 1]) < 0.05
    assert np.array_equal(v, make_cotangent(shape, Config(seed=seed)))  # still seeded
    assert not np.array_equal(v, make_cotangent(shape, Config(seed=seed + 1)))


def test_layer_norm_on_data_drawn_with_the_configs_seed():
    """x = default_rng(0) data (64, 256), the config's seed: with the cotangent drawn from the
    same stream, v was x and J^T x ~ 0 for a layer norm (scale invariant): every entry ~1e-5 of
    its size, 572 UNCHECKED, ~3,500 evaluations, and a 1e-5 bug PASSed (resolved to 1e-3 only).
    Now: every entry PASS in ~2*256 evaluations, planted bugs caught at their entry."""
    x = np.random.default_rng(0).standard_normal((64, 256))
    at = (41, 77)

    def bug(size):
        def vjp(x, g):
            out = layer_norm_vjp_divided(x, g)
            out[at] *= 1 + size
            return out
        return vjp

    ok = gradcheck.check(layer_norm, x, layer_norm_vjp_divided, independent_axes=(0,), adjudicate=False)
    assert ok.counts[Verdict.PASS] == x.size, ok.counts
    assert ok.evaluations <= 2 * 256 * 1.2
    found = gradcheck.check(layer_norm, x, bug(1e-5), independent_axes=(0,), adjudicate=False)
    assert mismatches(found) == {at} and found.counts[Verdict.PASS] == x.size - 1
    # 1e-7 is below the default rtol (1e-6); at rtol=1e-8 it is found, the correct claim passes
    tight = Config(rtol=1e-8)
    ok = gradcheck.check(layer_norm, x, layer_norm_vjp_divided, independent_axes=(0,), adjudicate=False,
                         config=tight)
    assert ok.counts[Verdict.PASS] == x.size, ok.counts
    found = gradcheck.check(layer_norm, x, bug(1e-7), independent_axes=(0,), adjudicate=False, config=tight)
    assert mismatches(found) == {at} and found.counts[Verdict.PASS] == x.size - 1


def test_second_look_in_chunks_gives_the_same_verdicts_in_less_memory(monkeypatch):
    """Data that IS the cotangent (x = make_cotangent): J^T v ~ 0 for a layer norm, nearly every
    entry a suspect of the second look. Studied CHUNK suspects at a time, every verdict and
    estimate is the same bits, for a few more evaluations (the interleaved chunks' rounds) and
    a lower peak (one study of all of them held ~100 arrays of the suspects)."""
    import tracemalloc

    from gradcheck._refine import second_look as look

    x = make_cotangent((32, 64), Config())

    def run():
        tracemalloc.start()
        try:
            r = gradcheck.check(layer_norm, x, layer_norm_vjp, independent_axes=(0,), adjudicate=False)
            return r, tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    whole, whole_peak = run()
    assert whole.refined.sum() > 0.9 * x.size  # most entries were suspects
    monkeypatch.setattr(look, "CHUNK", 256)
    chunked, chunked_peak = run()
    for name in ("codes", "numeric", "noise", "tolerance", "refined", "causes"):
        np.testing.assert_array_equal(getattr(chunked, name), getattr(whole, name), err_msg=name)
    assert whole.evaluations <= chunked.evaluations <= 1.3 * whole.evaluations
    assert chunked_peak < 0.8 * whole_peak, (chunked_peak, whole_peak)


@pytest.mark.parametrize("axes", [(0,), "all"])
def test_vectorized_f_writing_into_its_batch_is_reported(axes):
    """A vectorized f gets a batch of perturbed copies (gradcheck's, so the user's x is never
    at risk); a write into it, at a perturbed entry or elsewhere, is still InputMutationError,
    as on the serial engine. The same f without the write passes (control)."""
    x = data((6, 5), seed=67)
    before = x.copy()

    def rows_tanh(z, write):
        out = np.tanh(z) * 1.0  # a new array, not a view of the batch
        if write and z.ndim == 3:  # only the batched calls (the first call is at x itself)
            z[0, 1, 2] += 1.0
        return out

    grad = lambda z, g: g * (1 - np.tanh(z) ** 2)  # noqa: E731
    writing = lambda z: rows_tanh(z, True)  # noqa: E731
    with pytest.raises(gradcheck.InputMutationError, match="of the batch it was given changed"):
        gradcheck.check(writing, x, grad, independent_axes=axes, vectorized=True)
    assert x.tobytes() == before.tobytes()
    clean = gradcheck.check(lambda z: rows_tanh(z, False), x, grad, independent_axes=axes, vectorized=True)
    assert clean.passed and clean.engine == "batched (coloured)"


def test_the_slice_referee_in_worker_processes_differentiates_slices():
    """From 12 entries on the referee spreads over a fork pool, whose workers run
    ``Referee.derivatives`` on it: on a slice referee that must differentiate its slices (it
    differentiated the whole input, before). f refuses any input but one row, so a whole-input
    derivative is None; the pool's answers (when a pool may run here) are the serial ones."""
    from gradcheck._adjudicate.referee import Referee
    from gradcheck._axes.declare import declare
    from gradcheck._axes.referee import SliceReferee
    from gradcheck._evaluate import fork_available, fork_hazard, usable_cores

    x = np.random.default_rng(11).standard_normal((6, 4))

    def one_row(v):
        if v.shape[0] != 1:
            raise ValueError("one row at a time")
        return np.sin(v) * v

    axes = declare((0,), x.shape, x.shape)
    referee = SliceReferee(one_row, x, np.ones(x.shape), axes, digits=20)
    idx = np.arange(x.size)
    in_worker, serial = Referee.derivatives(referee, idx), referee.derivatives(idx)  # what fork_map calls
    assert all(d is not None for d in in_worker) and in_worker == serial
    exact = np.cos(x) * x + np.sin(x)  # d/dx (sin x * x), each entry its own output's
    assert np.allclose([d[0] for d in in_worker], exact.reshape(-1), rtol=1e-12)
    if fork_available() and usable_cores() >= 2 and fork_hazard() is None:
        assert referee._all_derivatives(idx) == serial
