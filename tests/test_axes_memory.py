"""Independent axes in little memory (issue 16, item 2): the coloured check's shortcuts give
the numbers of the plain code paths, bit for bit.

The first pass (``Coloured.first_pass``: rounds from the strides, the elementwise round in
place) against ``Coloured.differences`` of every index; the per-slice reduction a block at a
time against the whole-array one; the lazy per-entry base values against the dense array;
``same_bits`` a block at a time against ``tobytes``; ``x`` itself as the pristine copy only when
it already is ``work``'s bits, with a write by ``f`` still caught. The peak memory itself is a
benchmark's (``benchmarks/axes_memory.py``, recorded in benchmarks/README.md), not a test's.
"""
from __future__ import annotations

import concurrent.futures as cf
import importlib
import multiprocessing

import numpy as np
import pytest

import gradcheck
from gradcheck._axes import Coloured, SliceReduction
from gradcheck._core.arrays import same_bits
from gradcheck._core.formats import from_bits, round_to_format
from gradcheck._differences import DenominatorsOf, StepsOf, perturbed_points, slope_and_noise, steps_for
from gradcheck._evaluate import (
    BatchedRunner,
    ExecutorRunner,
    Points,
    ProcessesRunner,
    SerialRunner,
    Shift,
    Target,
    fork_available,
)
from gradcheck._pipeline.options import validate
from gradcheck._pipeline.prepare import prepare
from gradcheck._refine.roundoff import PROBES, LowerFormats, _finite_count, _parts, representable
from gradcheck._refine.second_look import PerEntry, base_at, finite_anywhere

declare_module = importlib.import_module("gradcheck._axes.declare")
judge_module = importlib.import_module("gradcheck._pipeline.judge")


def _within_slices(x: np.ndarray, axes) -> np.ndarray:
    """An f whose output slice depends on its own input slice only (sums over the other axes)."""
    if axes == "all":
        return np.sin(x) * x
    others = tuple(d for d in range(x.ndim) if d not in axes)
    return np.tanh(x) * x.sum(axis=others, keepdims=True)


CASES = [  # shape, declared axes, dtype, a non-finite entry
    ((5, 4), (0,), np.float64, False),
    ((4, 5), (1,), np.float64, True),
    ((3, 4, 2), (0, 2), np.float64, False),
    ((3, 4, 2), (1,), np.float32, True),
    ((6, 7), "all", np.float64, False),
    ((6, 7), "all", np.float32, False),
    ((6, 7), "all", np.float64, True),  # the in-place round falls back to the general one
]


def _coloured(shape, axes, dtype, nonfinite, vectorized=False, seed=17):
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    if nonfinite:
        x.reshape(-1)[3] = np.nan
    work = x.copy()
    y0 = _within_slices(work, axes)
    v = np.random.default_rng(seed + 1).standard_normal(y0.shape)
    declared = declare_module.declare(axes, work.shape, y0.shape)

    def f(z):  # a vectorized f takes a stack of points
        return _within_slices(z, axes) if z.ndim == work.ndim else np.stack([_within_slices(b, axes) for b in z])

    target = Target(f=f, work=work, evaluate=lambda: f(work), backend=_NUMPY, vectorized=vectorized,
                    slices=SliceReduction(declared, v, y0.shape))
    runner = BatchedRunner(target) if vectorized else SerialRunner(target)
    coloured = Coloured(declared, runner, work, v, y0)
    return x, work, coloured


class _NumpyBackend:
    """The evaluation the batched runner makes: f of the batch, as it is."""

    @staticmethod
    def evaluate(f, x):
        return f(x)


_NUMPY = _NumpyBackend()


@pytest.mark.parametrize("vectorized", [False, True])
@pytest.mark.parametrize("shape, axes, dtype, nonfinite", CASES)
def test_first_pass_is_the_differences_of_every_index_bit_for_bit(shape, axes, dtype, nonfinite, vectorized):
    x, work, fast = _coloured(shape, axes, dtype, nonfinite, vectorized)
    _, _, plain = _coloured(shape, axes, dtype, nonfinite, vectorized)
    steps = steps_for(work.reshape(-1), 1e-3)
    got = fast.first_pass(steps)
    want = plain.differences(np.arange(work.size), steps)
    for a, b in zip(got, want):
        assert same_bits(a, b)
    assert fast.evaluations == plain.evaluations and fast.rounds == plain.rounds
    assert same_bits(work, x)  # work put back bit for bit
    # Not vacuous: other steps give other differences.
    assert not same_bits(fast.first_pass(steps * 2)[0], got[0])


@pytest.mark.parametrize("shape, axes", [((6, 5), (0,)), ((5, 6), (1,)), ((3, 4, 5), (0, 2)),
                                         ((3, 4, 5), (2,)), ((4, 5), "all")])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_reduce_weighted_is_reduce_slices_bit_for_bit(shape, axes, dtype, monkeypatch):
    monkeypatch.setattr(declare_module, "REDUCE_BLOCK", 7)  # many blocks, some ragged
    rng = np.random.default_rng(23)
    y = (rng.standard_normal(shape) * 10.0 ** rng.integers(-8, 8, size=shape)).astype(dtype)
    v = rng.standard_normal(shape)
    declared = declare_module.declare(axes, shape, shape)
    got = declared.reduce_weighted(v, y)
    assert same_bits(got, declared.reduce_slices(v * np.asarray(y, dtype=np.float64)))
    y.reshape(-1)[-1] *= 3.0
    assert not same_bits(declared.reduce_weighted(v, y), got)


def test_per_entry_base_values_answer_as_the_dense_array():
    per_slice, values = 3, np.array([1.5, np.nan, -2.0, 0.25])
    slice_of = lambda i: np.asarray(i) // per_slice  # noqa: E731
    lazy, dense = PerEntry(values, slice_of, per_slice), np.repeat(values, per_slice)
    at = np.array([0, 4, 5, 11, 2])
    assert same_bits(base_at(lazy, at), base_at(dense, at))
    assert finite_anywhere(lazy) and not finite_anywhere(PerEntry(np.full(2, np.nan), slice_of, 3))
    # The round-off probe's test: the same count and the same answer as over the dense values.
    fp = np.random.default_rng(29).standard_normal(40).astype(np.float32).astype(np.float64)
    for base in (values, values + 1e-12):  # float32 numbers, then not
        lazy, dense = PerEntry(base, slice_of, per_slice), np.repeat(base, per_slice)
        assert _finite_count(_parts([fp, lazy])) == _finite_count(_parts([fp, dense])) == 40 + 9
        assert representable([fp, lazy], 1.1e-16) == representable([fp, dense], 1.1e-16)
    assert representable([fp, PerEntry(values, slice_of, per_slice)], 1.1e-16) == "float32"


def test_same_bits_block_by_block_sees_every_byte():
    a = np.random.default_rng(31).standard_normal(3 * 2**17)  # several blocks
    b = a.copy()
    assert same_bits(a, b)
    for change in (lambda c: c.__setitem__(-1, np.nextafter(c[-1], 9.0)),
                   lambda c: c.__setitem__(2**17, -c[2**17]),
                   lambda c: c.view(np.uint64).__setitem__(5, np.uint64(0x7FF8000000000001))):
        c = a.copy()
        change(c)
        assert not same_bits(a, c)
    zeros = np.zeros(2**18)
    assert not same_bits(zeros, -zeros)
    assert same_bits(a[::3], a[::3].copy()) and not same_bits(a[::3], a[1::3])


def _subject(x, f=np.tanh):
    opts = validate(config=None, name=None, engine="auto", vectorized=False, progress=False, refine=None,
                    adjudicate="auto", digits=30, bound_ulps=None, executor=None, checkpoint=None,
                    complex_convention=None, independent_axes="all")
    return prepare(f, x, lambda x, g: g * (1 - np.tanh(x) ** 2), None, opts)


def test_pristine_is_x_only_when_x_already_is_works_bits():
    x = np.random.default_rng(37).standard_normal((4, 3))
    assert _subject(x).pristine is x  # no copy
    for other in (x.astype(">f8"), np.asfortranarray(x), x[:, ::-1]):
        subject = _subject(other)
        assert subject.pristine is not other and not np.shares_memory(subject.pristine, subject.work)
        assert same_bits(subject.pristine, subject.work)


def test_a_write_into_the_input_is_still_caught_and_x_untouched():
    """f writes -0.0 over a 0.0 of its input: its output (a square) keeps its bits, so only the
    comparison with the pristine values (x itself here) can see it."""
    x = np.random.default_rng(41).standard_normal((5, 4))
    x[0, 0] = 0.0
    kept = x.copy()

    def writes(z):
        if z[0, 0] == 0.0:
            z[0, 0] = -0.0
        return z**2

    for axes in ("all", (0,), None):
        with pytest.raises(gradcheck.InputMutationError):
            gradcheck.check(writes, x, lambda x, g: 2 * x * g, independent_axes=axes)
        assert same_bits(x, kept)
    # The control: the same square without the write passes.
    assert gradcheck.check(lambda z: z**2, x, lambda x, g: 2 * x * g, independent_axes="all").passed


@pytest.mark.parametrize("axes", ["all", (0,)])
def test_steps_computed_where_read_give_the_arrays_report(axes, monkeypatch):
    """The coloured check reads each step and each realized denominator where it needs them
    (StepsOf, DenominatorsOf): the report is the one made with them as arrays, bit for bit,
    also when a retry sets smaller steps and their denominators (log with entries near 0,
    where x - h leaves the domain) and the step study of a planted error at a retried entry
    reads them back."""
    difference_module = importlib.import_module("gradcheck._pipeline.difference")
    x = np.abs(np.random.default_rng(47).standard_normal((6, 5))) + 0.5
    x[1, 2], x[4, 0] = 1e-9, 3e-9  # the default step leaves log's domain there

    def f(z):
        return np.log(z) * (z.sum(axis=1, keepdims=True) if axes != "all" else 1.0)

    def vjp(z, g):
        s = z.sum(axis=1, keepdims=True)
        out = g / z if axes == "all" else g * s / z + (g * np.log(z)).sum(axis=1, keepdims=True)
        out[1, 2] *= 1 + 1e-3  # a planted error at a retried entry: its study reads the retry's step
        return out

    lazy = gradcheck.check(f, x, vjp, independent_axes=axes)
    monkeypatch.setattr(difference_module, "StepsOf", lambda values, rel: steps_for(values, rel))
    monkeypatch.setattr(difference_module, "DenominatorsOf", lambda values, steps: perturbed_points(values, steps)[2])
    dense = gradcheck.check(f, x, vjp, independent_axes=axes)
    assert (lazy.causes == gradcheck.Cause.STEP_RETRY).any()  # the retry ran (and set steps)
    for name in ("numeric", "noise", "tolerance", "codes", "causes", "exact", "left", "right"):
        assert same_bits(np.asarray(getattr(lazy, name)), np.asarray(getattr(dense, name))), name
    assert lazy.evaluations == dense.evaluations
    assert lazy.codes[1, 2] == gradcheck.Verdict.MISMATCH and lazy.refined[1, 2]


def test_denominators_computed_where_read_are_perturbed_points_and_keep_what_is_set():
    x = np.random.default_rng(59).standard_normal(70000)  # past slope_and_noise's blocks
    x[[5, 40000]] = np.nan, np.inf
    steps = StepsOf(x, 1e-6)
    lazy, dense = DenominatorsOf(x, steps), perturbed_points(x, steps_for(x, 1e-6))[2]
    assert same_bits(lazy[:], dense) and same_bits(lazy[np.array([7, 5, 69999])], dense[[7, 5, 69999]])
    with np.errstate(invalid="ignore"):
        fp, fm = np.sin(x + 1e-6), np.sin(x - 1e-6)
    for a, b in zip(slope_and_noise(fp, fm, lazy, 1.1e-16), slope_and_noise(fp, fm, dense, 1.1e-16)):
        assert same_bits(a, b)
    lazy[np.array([9])] = 0.5  # a retry's denominator
    assert lazy[np.array([8, 9])].tolist() == [dense[8], 0.5] and lazy[9:10].tolist() == [0.5]


@pytest.mark.skipif(not fork_available(), reason="needs the fork start method")
def test_a_round_of_every_entry_travels_as_a_slice_and_gives_serials_report(monkeypatch):
    """independent_axes="all" on the processes and executor engines: the first pass's one
    round (every entry) is sent to the workers as a shift (the step rule), not its indices; the
    reports are serial's, bit for bit, with a planted error studied (rounds of index arrays)."""
    x = np.random.default_rng(53).standard_normal((5, 6))

    def vjp(z, g):
        out = g * (1 - np.tanh(z) ** 2)
        out[2, 3] *= 1 + 1e-4
        return out

    shift = Points.shifted(Shift(1e-3, 30))
    assert shift.idx.size == shift.values.size == 0 and shift.entry_count == 60  # nothing of N travels
    asked: list[tuple[str, bool, int]] = []
    for runner in (ProcessesRunner, ExecutorRunner):
        def recording(self, points, *args, _run=runner.run, **kwargs):
            asked.append((self.name, points.shift is not None, points.idx.size))
            return _run(self, points, *args, **kwargs)
        monkeypatch.setattr(runner, "run", recording)
    serial = gradcheck.check(np.tanh, x, vjp, independent_axes="all")
    pooled = gradcheck.check(np.tanh, x, vjp, independent_axes="all", engine="processes")
    with cf.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as ex:
        tasks = gradcheck.check(np.tanh, x, vjp, independent_axes="all", executor=ex)
    for other in (pooled, tasks):
        for name in ("numeric", "noise", "tolerance", "codes", "causes", "exact", "left", "right"):
            assert same_bits(np.asarray(getattr(other, name)), np.asarray(getattr(serial, name))), name
    assert serial.codes[2, 3] == gradcheck.Verdict.MISMATCH and (serial.codes == gradcheck.Verdict.MISMATCH).sum() == 1
    # The first pass asked each pooled runner for one shift (no index array), then rounds of indices.
    for name in ("processes", "executor"):
        theirs = [(shifted, size) for who, shifted, size in asked if who == name]
        assert theirs[0] == (True, 0) and not any(shifted for shifted, _ in theirs[1:]), theirs


# -- the second look keeps its differences only while a re-study may need them ------------------
def _values_in(fmt: str, n: int, seed: int) -> np.ndarray:
    """``n`` non-integer values that are ``fmt`` numbers (and, for float16, not bfloat16 ones)."""
    v = np.random.default_rng(seed).uniform(0.1, 60.0, n)
    if fmt == "float64":
        return v
    return from_bits(round_to_format(v, fmt), fmt).astype(np.float64)


@pytest.mark.parametrize("unit", [1.1e-16, 6e-8])  # a float64 output, a float32 one
def test_lower_formats_kept_running_never_miss_what_representable_finds(unit):
    """LowerFormats, fed part by part, gives up only when representable() of all the parts is
    None: over mixtures of float32, float16, bfloat16 and float64 values, in either order."""
    kinds = ("float32", "float16", "bfloat16", "float64")
    for seed, (first, later) in enumerate((a, b) for a in kinds for b in kinds):
        parts = [_values_in(first, 30, seed), _values_in(later, 30, seed + 100)]
        watch = LowerFormats(unit, parts[:1])
        watch.feed(parts[1])
        found = representable(parts, unit)
        assert watch.possible or found is None, (first, later)
        if found is not None:
            assert found in watch.left
    # negative control: float16 values keep float16 possible for a float32 output
    assert LowerFormats(6e-8, [_values_in("float16", 30, 1)]).left == ["float16"]
    assert not LowerFormats(1.1e-16, [_values_in("float64", 30, 2)]).possible


def _recorded_runs(f, x, grad, monkeypatch, watch: bool, **kw):
    """The check's report and the Recorded it used, with or without the watch."""
    made = []
    real = judge_module.Recorded

    def recorded(sub):
        made.append(real(sub))
        return made[-1]
    monkeypatch.setattr(judge_module, "Recorded", recorded)
    if not watch:
        monkeypatch.setattr(judge_module, "watch_lower_formats", lambda *a: None)
    report = gradcheck.check(f, x, grad, engine="serial", config=gradcheck.Config.for_dtype("float64"),
                             adjudicate=False, **kw)  # the referee's note holds its timing
    monkeypatch.undo()
    return report, made[0]


def _coarse(x):
    """float32 numbers, all the integer 3000 across the first step (no format seen there), not at
    the study's larger steps: the re-study with float32's round-off (recheck_precision) runs."""
    return np.float64(np.float32(3000 + 3.0 * np.sin(x).sum()))


@pytest.mark.parametrize("f, x, grad, restudied", [
    (_coarse, np.zeros(12), lambda x: 3.0 * np.cos(x), True),
    (_coarse, np.zeros(12), lambda x: 3.3 * np.cos(x), True),
    (lambda x: np.sin(x).sum() + 3e10, np.linspace(-1, 1, 12), np.cos, False),  # every entry a suspect
    (lambda x: np.sin(x).sum(), np.linspace(-1, 1, 12), lambda x: 1.01 * np.cos(x), False),
])
def test_the_watch_drops_the_differences_only_when_no_re_study_can_need_them(f, x, grad, restudied,
                                                                             monkeypatch):
    """With the watch, the report is the same bits and the same evaluations as keeping every
    difference; the second look's differences are dropped when f's values are in no lower
    format, and all kept (and re-studied) when they are."""
    kept, kept_record = _recorded_runs(f, x, grad, monkeypatch, watch=False)
    report, record = _recorded_runs(f, x, grad, monkeypatch, watch=True)
    for name in ("codes", "numeric", "noise", "tolerance", "refined", "causes", "left", "right"):
        assert same_bits(np.asarray(getattr(report, name)), np.asarray(getattr(kept, name))), name
    assert report.evaluations == kept.evaluations and report.notes == kept.notes
    assert any("is a float32 number" in n for n in report.notes) == restudied
    assert record.watch.possible == restudied
    taken = sum(v.size for v in kept_record.values())
    left = sum(v.size for v in record.values())
    if restudied:
        assert left == taken > 0
    else:  # only the round-off probe's differences (taken before the watch) stay
        assert left <= 2 * 3 * PROBES < taken


@pytest.mark.parametrize("shape, axes", [((6, 5), (0,)), ((3, 4, 5), (0, 1)), ((3, 4, 5), (0, 2)),
                                         ((3, 4, 5), (1,)), ((4, 5), "all")])
def test_slice_of_is_the_declared_coordinates_ravelled(shape, axes):
    """Each entry's slice (leading axes take a shortcut: one integer division): the C-order
    number of its coordinates along the declared axes, for every flat index."""
    declared = declare_module.declare(axes, shape, shape)
    idx = np.arange(int(np.prod(shape)))
    coords = np.unravel_index(idx, shape)
    want = np.ravel_multi_index(tuple(coords[a] for a in declared.axes), declared.sizes)
    assert np.array_equal(declared.slice_of(idx[::-1]), want[::-1])
