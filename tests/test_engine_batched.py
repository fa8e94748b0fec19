"""The batched engine: many perturbations per call of a vectorized f, same answers as serial."""
from __future__ import annotations

import numpy as np
import pytest

import gradcheck
from gradcheck import FunctionError, InputMutationError, Verdict, check
from gradcheck._differences import CentralDifferences, steps_for
from gradcheck._evaluate import BatchedRunner
from gradcheck._evaluate.batched import rows_for_budget
from gradcheck.backends import NumpyBackend
from gradcheck.engines import CheckProblem, select_engine

rng = np.random.default_rng(7)

# Vectorized functions: x of shape (..., *x.shape), the batch axis first.
A = rng.standard_normal((5, 4))
B = rng.standard_normal((5, 3))
C = rng.standard_normal((6,))


def f_sin(x):
    """Scalar, elementwise then summed over one input's axes."""
    return (np.sin(x) * x**2).sum(axis=(-2, -1))


def g_sin(x):
    return np.cos(x) * x**2 + 2 * x * np.sin(x)


def f_tanh_matmul(w):
    """Scalar f(W) = sum(tanh(A @ W) * B): a matmul, which may round differently on a batch."""
    return (np.tanh(A @ w) * B).sum(axis=(-2, -1))


def g_tanh_matmul(w):
    return A.T @ ((1 - np.tanh(A @ w) ** 2) * B)


def softmax(x):
    """Array output along the last axis."""
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def softmax_vjp(x, v):
    s = softmax(x)
    return s * (v - (v * s).sum())


def f_elementwise(x):
    """Array output, elementwise: each row of a batch rounds exactly as a single input."""
    return np.sin(x) * np.exp(0.1 * x)


def vjp_elementwise(x, v):
    return v * (np.cos(x) * np.exp(0.1 * x) + 0.1 * np.sin(x) * np.exp(0.1 * x))


def _bug_at(grad, ix, factor):
    def buggy(*args):
        g = np.array(grad(*args), dtype=np.float64)
        g[ix] = g[ix] * factor
        return g
    return buggy


X_SIN = rng.standard_normal((6, 5))
X_MAT = rng.standard_normal((4, 3))
X_SOFT = rng.standard_normal(9)
X_ELEM = rng.standard_normal((3, 7))

# (name, f, x, claimed gradient, entries that must be flagged MISMATCH)
ZOO = [
    ("correct elementwise", f_sin, X_SIN, g_sin, set()),
    ("planted bug 1e-4", f_sin, X_SIN, _bug_at(g_sin, (4, 1), 1 + 1e-4), {(4, 1)}),
    ("correct matmul", f_tanh_matmul, X_MAT, g_tanh_matmul, set()),
    ("sign flip matmul", f_tanh_matmul, X_MAT, _bug_at(g_tanh_matmul, (2, 0), -1.0), {(2, 0)}),
    ("array output, correct VJP", softmax, X_SOFT, softmax_vjp, set()),
    ("array output, VJP bug", softmax, X_SOFT, _bug_at(softmax_vjp, (3,), 1.01), {(3,)}),
    ("elementwise array output", f_elementwise, X_ELEM, vjp_elementwise, set()),
]


def BatchedEngine(problem, budget_bytes=None):  # noqa: N802 - the engine as check runs it
    return CentralDifferences(BatchedRunner(problem, budget_bytes=budget_bytes), problem.work)


def _problem(f, x, cotangent=None, vectorized=True):
    work = np.array(x, order="C", copy=True)
    if cotangent is None:
        evaluate = lambda: float(f(work))  # noqa: E731
    else:
        v = cotangent.reshape(-1)
        evaluate = lambda: float(np.add.reduce(v * np.asarray(f(work)).reshape(-1).astype(np.float64)))  # noqa: E731
    return CheckProblem(f=f, work=work, evaluate=evaluate, backend=NumpyBackend(),
                        cotangent=cotangent, vectorized=vectorized)


def _all_entries(work):
    return np.arange(work.size), steps_for(work.reshape(-1), 6e-6)


@pytest.mark.parametrize("name, f, x, grad, flagged", ZOO, ids=[z[0] for z in ZOO])
def test_batched_gives_the_verdicts_of_serial(name, f, x, grad, flagged):
    """Every entry gets the same verdict from batched as from serial, and a planted bug is
    flagged at exactly its entry."""
    serial = check(f, x, grad, engine="serial")
    batched = check(f, x, grad, engine="batched", vectorized=True)
    assert batched.engine == "batched"
    np.testing.assert_array_equal(batched.codes, serial.codes)
    assert set(batched.entries(Verdict.MISMATCH)) == flagged
    np.testing.assert_allclose(batched.numeric, serial.numeric, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("budget", [1, 2 * X_ELEM.nbytes, 5 * X_ELEM.nbytes, 2**20])
def test_elementwise_f_is_bit_identical_to_serial(budget):
    """With an elementwise f, batching changes nothing: f_plus, f_minus and the realized
    denominators equal serial's bit for bit, whatever the batch size."""
    v = np.random.default_rng(0).standard_normal(X_ELEM.shape)
    problem = _problem(f_elementwise, X_ELEM, cotangent=v)
    idx, steps = _all_entries(problem.work)
    want = select_engine("serial", problem)[0].differences(idx, steps)
    got = BatchedEngine(problem, budget_bytes=budget).differences(idx, steps)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


def test_matmul_f_agrees_with_serial_to_rounding():
    """A matmul on a batch may round differently from one input: the reduced values agree
    to a few ulps of f, never more."""
    problem = _problem(f_tanh_matmul, X_MAT)
    idx, steps = _all_entries(problem.work)
    want = select_engine("serial", problem)[0].differences(idx, steps)
    got = BatchedEngine(problem).differences(idx, steps)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-14, atol=1e-14)
    np.testing.assert_array_equal(got[2], want[2])


def test_float32_steps_are_realized_like_serial():
    """x + h and x - h are rounded to float32 exactly as serial rounds them."""
    x = rng.standard_normal((4, 4)).astype(np.float32) * 100
    f = lambda x: (x.astype(np.float64) ** 3).sum(axis=(-2, -1))  # noqa: E731
    problem = _problem(f, x)
    idx = np.arange(x.size)
    steps = steps_for(x.reshape(-1), 1e-3)
    want = select_engine("serial", problem)[0].differences(idx, steps)
    got = BatchedEngine(problem).differences(idx, steps)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


def test_nonfinite_entries_are_skipped_like_serial():
    """Entries whose value is NaN or inf are not perturbed: NaN results, as serial gives."""
    x = np.array([[1.0, np.nan], [np.inf, -2.0]])
    f = lambda x: np.nansum(np.where(np.isfinite(x), x, 0.0) ** 2, axis=(-2, -1))  # noqa: E731
    problem = _problem(f, x)
    idx, steps = _all_entries(problem.work)
    want = select_engine("serial", problem)[0].differences(idx, steps)
    got = BatchedEngine(problem).differences(idx, steps)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)
    assert np.isnan(got[0][[1, 2]]).all()


@pytest.mark.parametrize(
    "entry_bytes, budget, rows",
    [(800, 8000, 10), (800, 8800, 10), (800, 100, 2), (800, 1700, 2), (8, 2**30, 4096)],
)
def test_rows_come_from_the_byte_budget(entry_bytes, budget, rows):
    """Rows per batch: as many copies as the budget holds, even, at least 2, capped."""
    assert rows_for_budget(entry_bytes, budget) == rows


def test_no_call_sees_more_rows_than_the_budget_allows():
    """Memory is bounded: f never receives more rows than the byte budget holds, and
    never all 2N copies at once."""
    seen = []

    def f(x):
        seen.append(x.shape[0])
        return (x**2).sum(axis=(-2, -1))

    x = rng.standard_normal((5, 8))
    engine = BatchedEngine(_problem(f, x), budget_bytes=6 * x.nbytes)
    engine.differences(*_all_entries(engine.work))
    assert max(seen) == 6
    assert sum(seen) == 2 * x.size


def test_the_users_array_is_untouched():
    """x is never written, not even transiently: f sees the engine's own buffer."""
    x = rng.standard_normal((3, 4))
    before = x.copy()
    seen_user_array = []

    def f(b):
        seen_user_array.append(np.shares_memory(b, x))
        return (b**2).sum(axis=(-2, -1))

    check(f, x, lambda x: 2 * x, engine="batched", vectorized=True).assert_pass()
    np.testing.assert_array_equal(x, before)
    assert not any(seen_user_array)


def test_an_error_in_f_names_the_entry_it_happened_at():
    """f raising for one perturbed input is reported at that entry and side, with the
    original exception chained."""
    x = np.arange(12.0).reshape(3, 4) + 1.0

    def f(b):
        if (b[..., 1, 2] < 7.0).any():
            raise ValueError("domain")
        return b.sum(axis=(-2, -1))

    with pytest.raises(FunctionError) as info:
        check(f, x, np.ones_like(x), engine="batched", vectorized=True)
    assert info.value.index == (1, 2)
    assert all(type(k) is int for k in info.value.index)
    assert "at entry (1, 2) (-h)" in str(info.value)  # not "(np.int64(1), ...)"
    assert info.value.side == "-h"
    assert isinstance(info.value.__cause__, ValueError)


def test_a_function_that_writes_into_its_batch_is_caught():
    """A vectorized f that mutates its input is an error, as with serial."""
    def f(b):
        b[..., 0, 0] = 0.0
        return b.sum(axis=(-2, -1))

    with pytest.raises(InputMutationError):
        check(f, np.ones((2, 2)), np.ones((2, 2)), engine="batched", vectorized=True)


def test_a_wrong_output_shape_names_both_shapes():
    """An f that ignores the batch axis is told what shape was expected."""
    f = lambda b: np.asarray(b).sum()  # noqa: E731
    with pytest.raises(ValueError, match=r"\(\)") as info:
        check(f, np.ones((2, 2)), np.ones((2, 2)), engine="batched", vectorized=True)
    assert "batch" in str(info.value)


def test_batched_needs_a_vectorized_f():
    """Asking for batched without declaring vectorized=True says how to declare it."""
    with pytest.raises(ValueError, match="vectorized=True"):
        check(lambda x: (x**2).sum(), np.ones(3), lambda x: 2 * x, engine="batched")


def test_auto_picks_batched_for_a_vectorized_f_and_says_why():
    """auto chooses batched when f is declared vectorized, and the report says so."""
    report = check(f_sin, X_SIN, g_sin, vectorized=True)
    assert report.engine == "batched"
    assert any("batch axis" in note for note in report.notes)
    engine, reason = select_engine("auto", _problem(f_sin, X_SIN, vectorized=False))
    assert engine.name != "batched"


def test_progress_is_reported_per_batch():
    """The progress callback sees counts that grow to the number of entries."""
    counts = []
    problem = _problem(f_sin, X_SIN)
    BatchedEngine(problem, budget_bytes=8 * X_SIN.nbytes).differences(
        *_all_entries(problem.work), progress=counts.append
    )
    assert counts == sorted(counts)
    assert counts[-1] == X_SIN.size
    assert len(counts) == -(-X_SIN.size // 4)


def test_negative_control_passes_on_batched():
    """The instrument works on this engine: a corrupted gradient is flagged, a correct
    one passes."""
    gradcheck.assert_detects_wrong_gradient("numpy", engine="batched")


def test_a_write_that_a_later_batch_would_overwrite_is_still_caught():
    """f writing into a row at an entry that a later batch perturbs (and then restores)
    cannot slip through: positions are checked before they are perturbed."""
    x = np.arange(1.0, 9.0)
    calls = []

    def f(b):
        calls.append(b.shape[0])
        if len(calls) == 1:
            b[1, 6] = -5.0  # row 1, entry 6: perturbed again by a later batch
        return (b**2).sum(axis=-1)

    engine = BatchedEngine(_problem(f, x), budget_bytes=4 * x.nbytes)
    with pytest.raises(InputMutationError):
        engine.differences(*_all_entries(engine.work))


def test_numpy_warnings_at_perturbed_points_stay_silent_like_serial():
    """log(x - h) below 0 at a perturbed point: numpy's RuntimeWarning is not raised
    (under an "error" filter it would become a FunctionError); batched gives serial's
    verdicts."""
    import warnings

    x = np.array([1e-8, 3e-7, 0.5, 2.0])
    f = lambda z: np.log(z).sum(axis=-1)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        serial = check(f, x, lambda z: 1 / z, engine="serial")
        batched = check(f, x, lambda z: 1 / z, engine="batched", vectorized=True)
    np.testing.assert_array_equal(batched.codes, serial.codes)
