"""Bad inputs and faulty functions (hypothesis): every case gets a clear error or an honest
verdict, and the user's arrays are bit-identical afterwards.

Shapes (0-d to 3-d, empty), dtypes (float64, float32, float16, bfloat16), layouts (C,
Fortran, negative strides, non-contiguous views, transposes), read-only arrays, NaN/Inf in
x, in f's output and in the claimed gradient, huge and tiny magnitudes, functions that
raise on some entries, that write into their input, that are nondeterministic. The
subject function is linear, ``f(x) = c . x`` (computed in float64), whose gradient ``c``
is exact at every magnitude: a MISMATCH on it is always a false alarm.

Each property runs ``max_examples`` cases (300 under the "ci" profile: >= 2,100 cases in
all); every example is a small check with ``adjudicate=False``.
"""
from __future__ import annotations

import concurrent.futures as cf

import ml_dtypes
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from optional_deps import required

from gradcheck import FunctionError, InputMutationError, Verdict, check

DTYPES = {"float64": np.float64, "float32": np.float32, "float16": np.float16,
          "bfloat16": ml_dtypes.bfloat16}
LAYOUTS = ("C", "F", "reversed", "strided", "transposed")
NONFINITE = (np.nan, np.inf, -np.inf)
M, U, N, K = (int(v) for v in (Verdict.MISMATCH, Verdict.UNCHECKED, Verdict.NONFINITE, Verdict.KINK))


@pytest.fixture(scope="module")
def pool():
    """One thread pool for the executor-engine examples."""
    with cf.ThreadPoolExecutor(max_workers=2) as ex:
        yield ex


def _finfo(dtype):
    return ml_dtypes.finfo(dtype) if dtype is ml_dtypes.bfloat16 else np.finfo(dtype)


def _magnitudes(dtype, kind: str):
    fi = _finfo(dtype)
    big, tiny, sub = float(fi.max), float(fi.tiny), float(fi.smallest_subnormal)
    normal = st.floats(1e-3, 1e3)
    moderate = st.floats(0.1, 2.0)
    huge = st.floats(big * 1e-3, big)
    small = st.floats(sub, tiny * 1e3)
    pick = {"normal": normal, "moderate": moderate, "huge": huge, "tiny": small,
            "mixed": normal | huge | small | st.just(0.0)}[kind]
    return st.builds(lambda m, s: s * m, pick, st.sampled_from([1.0, -1.0]))


def _lay_out(a: np.ndarray, layout: str) -> np.ndarray:
    """``a``'s values in the given memory layout (a view where the layout needs one)."""
    if a.ndim == 0 or layout == "C":
        return a
    if layout == "F":
        return np.asfortranarray(a)
    if layout == "reversed":  # negative strides on every axis
        rev = (slice(None, None, -1),) * a.ndim
        return a[rev].copy()[rev]
    if layout == "strided":  # a non-contiguous view into a bigger buffer
        big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), dtype=a.dtype)
        big[..., ::2] = a
        return big[..., ::2]
    return np.ascontiguousarray(a.T).T  # transposed


@st.composite
def inputs(draw, magnitude=None, nonfinite=False, min_side=0):
    """``(x, name)``: an array of a float dtype in some layout, maybe read-only."""
    name = draw(st.sampled_from(sorted(DTYPES)))
    dtype = DTYPES[name]
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=min_side, max_side=4))
    kind = magnitude or draw(st.sampled_from(["normal", "huge", "tiny", "mixed"]))
    size = int(np.prod(shape))
    values = np.array(draw(st.lists(_magnitudes(dtype, kind), min_size=size, max_size=size)), dtype=np.float64)
    if nonfinite and size:
        where = draw(st.lists(st.integers(0, size - 1), min_size=1, max_size=3))
        values[where] = draw(st.lists(st.sampled_from(NONFINITE), min_size=len(where), max_size=len(where)))
    a = values.reshape(shape).astype(dtype)
    x = _lay_out(a, draw(st.sampled_from(LAYOUTS)))
    if draw(st.booleans()):
        x.flags.writeable = False
    return x, name


def coefficients(shape, seed):
    """c of the linear subject, |c_i| in [0.5, 2] (both signs)."""
    rng = np.random.default_rng(seed)
    return np.asarray(rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape), dtype=np.float64)


def linear(c):
    flat = c.reshape(-1)

    def f(x):
        return float(np.dot(flat, np.asarray(x, dtype=np.float64).reshape(-1)))

    return f


class Snapshot:
    """Everything about the user's array that must not change: bytes, strides, flags,
    and the whole buffer it views."""

    def __init__(self, x: np.ndarray):
        self.x, self.bytes, self.strides = x, x.tobytes(order="A"), x.strides
        self.writeable, self.dtype = x.flags.writeable, x.dtype
        self.base = None if x.base is None else np.asarray(x.base).tobytes()

    def assert_untouched(self):
        x = self.x
        assert x.dtype == self.dtype and x.strides == self.strides
        assert x.flags.writeable == self.writeable
        assert x.tobytes(order="A") == self.bytes
        if self.base is not None:
            assert np.asarray(x.base).tobytes() == self.base


def _run(f, x, claimed, engine, pool, **kwargs):
    """check() on the serial engine or on the executor engine (a thread pool)."""
    if engine == "executor":
        return check(f, x, claimed, executor=pool, adjudicate=False, **kwargs)
    return check(f, x, claimed, engine="serial", adjudicate=False, **kwargs)


try:  # the executor engine ships f with cloudpickle (the test extra installs it)
    import cloudpickle  # noqa: F401
except ModuleNotFoundError:
    if required():
        raise
    engines = st.just("serial")
else:
    engines = st.sampled_from(["serial", "executor"])


# -- values and layouts -------------------------------------------------------------------
@given(inputs(nonfinite=False) | inputs(nonfinite=True, min_side=1), st.integers(0, 2**16), engines)
def test_a_correct_gradient_is_never_a_mismatch_and_x_is_untouched(pool, case, seed, engine):
    """Whatever the dtype, layout, magnitude (up to the format's max, down to subnormals)
    and NaN/Inf in x: a correct gradient gets PASS, UNCHECKED or NONFINITE -- never
    MISMATCH; an entry whose x is not finite is never PASS; x is bit-identical."""
    x, _ = case
    snap = Snapshot(x)
    c = coefficients(x.shape, seed)
    with np.errstate(all="ignore"):
        r = _run(linear(c), x, c, engine, pool)
    snap.assert_untouched()
    assert r.codes.shape == x.shape
    assert not (r.codes == M).any(), r
    bad_x = ~np.isfinite(x.astype(np.float64))
    assert (r.codes[bad_x] == N).all()
    if bad_x.any():  # f = c.x is NaN/inf at x itself: nothing can be checked, and it says so
        assert (r.codes == N).all() and any("not finite at x" in n for n in r.notes)


@given(inputs(magnitude="moderate", min_side=1), st.integers(0, 2**16), st.data(), engines)
def test_a_wrong_entry_is_found_in_any_layout_and_dtype(pool, case, seed, data, engine):
    """The instrument works in every layout and dtype: one entry with its sign flipped
    is MISMATCH, and only it. (|x| <= 2 keeps |f| small: the noise model assumes f
    rounds in x's dtype, so a float32 check of a large |f| is resolved only coarsely.)"""
    x, _ = case
    snap = Snapshot(x)
    c = coefficients(x.shape, seed)
    j = data.draw(st.integers(0, x.size - 1), label="wrong entry")
    claimed = c.copy()
    claimed.reshape(-1)[j] *= -1.0
    r = _run(linear(c), x, claimed, engine, pool)
    snap.assert_untouched()
    assert r.entries(Verdict.MISMATCH) == [tuple(int(i) for i in np.unravel_index(j, x.shape))], r


@given(inputs(magnitude="normal", min_side=1), st.integers(0, 2**16), st.data())
def test_nonfinite_claims_are_nonfinite_and_change_nothing_else(case, seed, data):
    """NaN/Inf in the claimed gradient: exactly those entries are NONFINITE, every other
    verdict and number is what the clean claim gets."""
    x, _ = case
    snap = Snapshot(x)
    c = coefficients(x.shape, seed)
    where = data.draw(st.sets(st.integers(0, x.size - 1), min_size=1, max_size=x.size), label="bad claims")
    claimed = c.copy()
    claimed.reshape(-1)[sorted(where)] = [data.draw(st.sampled_from(NONFINITE)) for _ in where]
    clean = check(linear(c), x, c, engine="serial", adjudicate=False)
    r = check(linear(c), x, claimed, engine="serial", adjudicate=False)
    snap.assert_untouched()
    bad = np.zeros(x.size, bool)
    bad[sorted(where)] = True
    bad = bad.reshape(x.shape)
    assert (r.codes[bad] == N).all()
    np.testing.assert_array_equal(r.codes[~bad], clean.codes[~bad])
    np.testing.assert_array_equal(r.numeric[~bad], clean.numeric[~bad])


@given(inputs(magnitude="normal", min_side=1), st.integers(0, 2**16), st.data(), st.sampled_from(NONFINITE))
def test_nonfinite_outputs_of_f_are_nonfinite_verdicts(case, seed, data, value):
    """f gives NaN/Inf whenever some chosen entries are perturbed (a step out of its
    domain, at any step): those entries are NONFINITE, the others keep their clean
    verdicts. f NaN/Inf at x itself: every entry NONFINITE, with a note."""
    x, _ = case
    snap = Snapshot(x)
    c = coefficients(x.shape, seed)
    x0 = np.array(x, dtype=np.float64).reshape(-1)
    chosen = sorted(data.draw(st.sets(st.integers(0, x.size - 1), min_size=1, max_size=x.size), label="poles"))
    at_base = data.draw(st.booleans(), label="not finite at x")
    g = linear(c)

    def f(z):
        zf = np.asarray(z, dtype=np.float64).reshape(-1)
        if at_base or np.any(zf[chosen] != x0[chosen]):
            return value
        return g(z)

    clean = check(g, x, c, engine="serial", adjudicate=False)
    with np.errstate(all="ignore"):
        r = check(f, x, c, engine="serial", adjudicate=False)
    snap.assert_untouched()
    if at_base:
        assert (r.codes == N).all() and any("not finite at x" in n for n in r.notes)
        return
    mask = np.zeros(x.size, bool)
    mask[chosen] = True
    mask = mask.reshape(x.shape)
    assert (r.codes[mask] == N).all(), r
    np.testing.assert_array_equal(r.codes[~mask], clean.codes[~mask])


# -- functions that misbehave -------------------------------------------------------------
@given(inputs(magnitude="normal", min_side=1), st.data(), st.sampled_from(["+h", "-h", "both", "base"]), engines)
def test_a_function_raising_on_some_entries_names_the_first(pool, case, data, side, engine):
    """f raising while some entries are perturbed (on one side or both) or at x itself:
    FunctionError naming the first such entry in index order and the side, the original
    exception chained; x untouched; the executor does not retry it."""
    x, _ = case
    snap = Snapshot(x)
    x0 = np.array(x, dtype=np.float64).reshape(-1)
    chosen = sorted(data.draw(st.sets(st.integers(0, x.size - 1), min_size=1, max_size=4), label="raising"))

    def f(z):
        zf = np.asarray(z, dtype=np.float64).reshape(-1)
        if side == "base":
            raise ArithmeticError("planted")
        for i in chosen:
            if (side in ("+h", "both") and zf[i] > x0[i]) or (side in ("-h", "both") and zf[i] < x0[i]):
                raise ArithmeticError(f"planted at {i}")
        return float(zf.sum())

    with pytest.raises(FunctionError) as info:
        _run(f, x, np.ones(x.shape), engine, pool)
    snap.assert_untouched()
    err = info.value
    assert isinstance(err.__cause__, ArithmeticError)
    if side == "base":
        assert err.index is None and err.side == "base"
        return
    assert err.index == tuple(int(i) for i in np.unravel_index(chosen[0], x.shape))
    assert err.side == ("-h" if side == "-h" else "+h")


@given(inputs(magnitude="normal", min_side=1), st.data(), st.sampled_from(["always", "other", "own", "all"]), engines)
def test_a_function_writing_into_its_input_is_refused(pool, case, data, kind, engine):
    """f writing into the array it is given: InputMutationError (always, when another
    entry than the perturbed one is changed, the whole array, or only the entry being
    perturbed: restoring that entry would hide the write, so the entry is compared with
    what was set there first); x untouched in every case."""
    x, _ = case
    snap = Snapshot(x)
    n = x.size
    x0 = np.array(x, dtype=np.float64).reshape(-1)
    i = data.draw(st.integers(0, n - 1), label="trigger")
    j = data.draw(st.integers(0, n - 1), label="target")
    if kind == "other":
        assume(n > 1 and i != j)
    if kind == "all":
        assume(n > 1)  # with one entry, "all" is the perturbed entry alone: the "own" case

    sentinel = 12345.0  # no input value is near it: a write always changes the array

    def f(z):
        flat = z.reshape(-1)  # the private copy is C-contiguous: a view
        moved = flat[i] != z.dtype.type(x0[i])
        if kind == "always" or kind == "other" and moved:
            flat[j] = z.dtype.type(sentinel)
        elif kind == "own" and moved:
            flat[i] = z.dtype.type(x0[i])
        elif kind == "all" and moved:
            z[...] = 0
        return float(np.asarray(z, dtype=np.float64).sum())

    with pytest.raises(InputMutationError):
        _run(f, x, np.ones(x.shape), engine, pool)
    snap.assert_untouched()


@given(inputs(magnitude="normal", min_side=1), st.integers(0, 2**16), st.floats(1e-12, 1e-3), engines)
def test_a_nondeterministic_function_is_reported_not_miscalled(pool, case, seed, sigma, engine):
    """f with run-to-run noise: the report says it is nondeterministic and does not pass;
    its spread is counted as noise, so a correct gradient gets no MISMATCH."""
    x, _ = case
    snap = Snapshot(x)
    c = coefficients(x.shape, seed)
    g = linear(c)
    noise = np.random.default_rng(seed)

    def f(z):
        value = g(z)
        return value + sigma * (1.0 + abs(value)) * noise.standard_normal()  # never below f's ulp

    r = _run(f, x, c, engine, pool)
    snap.assert_untouched()
    assert not r.deterministic and not r.passed and r.drift > 0
    assert any("nondeterministic" in note for note in r.notes)
    assert not (r.codes == M).any(), r


# -- a few fixed cases the properties rely on -----------------------------------------------
@pytest.mark.parametrize("x, error", [
    (np.arange(3), "integer"),
    (np.ones(3, bool), "no gradient"),
    (np.array(["a"], dtype=object), "dtype object"),
])
def test_inputs_without_a_gradient_are_clear_errors(x, error):
    """Integer, bool and object inputs: a TypeError that says what to do (complex inputs
    are checked on their real view: tests/test_complex.py)."""
    with pytest.raises(TypeError, match=error):
        check(lambda z: 0.0, x, np.zeros(np.shape(x)), adjudicate=False)


def test_a_claim_of_the_wrong_shape_names_both_shapes():
    """A claimed gradient of another shape: both shapes in the message."""
    with pytest.raises(ValueError, match=r"\(4,\).*\(3,\)"):
        check(lambda z: float(z.sum()), np.ones(3), np.ones(4), adjudicate=False)


@pytest.mark.parametrize("f, error", [
    (lambda z: None, r"returned None at the unperturbed input.*`return` missing"),
    (lambda z: "1.0", r"returned str"),
    (lambda z: complex(z.sum()), r"returns complex values, so the claimed gradient must be a VJP"),
    (lambda z: [z.sum(), None], r"returned an array of dtype object"),
])
def test_a_function_returning_no_real_number_is_a_clear_error(f, error):
    """f that returns None, a string or a ragged list: a TypeError that says what f
    returned, raised at the unperturbed input (not a float() failure reported at some
    entry); a complex number with an array claim: a TypeError asking for a VJP."""
    x = np.ones(3)
    before = x.copy()
    with pytest.raises(TypeError, match=error):
        check(f, x, np.ones(3), adjudicate=False)
    assert x.tobytes() == before.tobytes()


def test_a_loss_returning_none_is_a_clear_error():
    """check_params: a loss that returns None names it."""
    from gradcheck import check_params

    with pytest.raises(TypeError, match=r"loss\(params\) returned None"):
        check_params(lambda p: None, {"w": np.ones(3)}, {"w": np.ones(3)})
