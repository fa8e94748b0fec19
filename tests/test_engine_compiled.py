"""The compiled engine: numba/C perturbation loop in parallel threads, bit-equal to serial.

Few distinct njit functions on purpose: each one compiles the engine's kernel once. The
subjects are tests/njit_subjects.py's, shared with the other test modules; a misbehaving
f is one of their branches (a sentinel value in the input), not a new function.
"""
from __future__ import annotations

import subprocess
import sys

import numba
import numpy as np
import pytest
from njit_subjects import WRITES_ALWAYS, WRITES_WHEN_PERTURBED, layer, layer_vjp, rosen, rosen_grad

import gradcheck
from gradcheck import Config, FunctionError, Verdict
from gradcheck._differences import steps_for
from gradcheck._evaluate import CompiledRunner, auto_reason, loops
from gradcheck._evaluate import auto as _auto
from gradcheck._evaluate import compiled as _compiled
from gradcheck.backends import NumpyBackend
from gradcheck.engines import CheckProblem, Declined, select_engine
from gradcheck.native import native_function


def problem(f, x, cotangent=None):
    """A CheckProblem as ``check`` builds it; array outputs reduce with np.add.reduce."""
    work = np.array(x, copy=True)
    if cotangent is None:
        evaluate = lambda: float(np.asarray(f(work), dtype=np.float64))  # noqa: E731
    else:
        flat_v = cotangent.reshape(-1)

        def evaluate():
            y = np.asarray(f(work))
            if y.shape != cotangent.shape:
                raise ValueError(f"f returned shape {y.shape}, expected {cotangent.shape}")
            return float(np.add.reduce(flat_v * y.reshape(-1).astype(np.float64)))
    return CheckProblem(f=f, work=work, evaluate=evaluate, backend=NumpyBackend(), cotangent=cotangent)


def both(p, idx, steps):
    compiled, _ = select_engine("compiled", p)
    got = compiled.differences(idx, steps)
    want = select_engine("serial", p)[0].differences(idx, steps)
    return got, want


def assert_bit_equal(got, want):
    for name, g, w in zip(("f_plus", "f_minus", "denominator"), got, want):
        assert g.dtype == np.float64
        assert np.array_equal(g, w, equal_nan=True), name
        assert np.array_equal(np.signbit(g), np.signbit(w)), name


def rosen_input(dtype, size=257):
    x = np.random.default_rng(7).uniform(-2.0, 2.0, size).astype(dtype)
    x[1] = -5.0 + 1e-9 if dtype == np.float64 else -4.9995  # the -h side leaves the domain
    return x


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_njit_scalar_equals_serial_bit_for_bit(dtype):
    """f_plus, f_minus and the realized denominator are the serial engine's bits, with
    float32 perturbed in float32, NaN outputs kept, entries in any order."""
    x = rosen_input(dtype)
    p = problem(rosen, x)
    idx = np.random.default_rng(3).permutation(x.size)
    steps = steps_for(x.reshape(-1)[idx], Config.for_dtype(np.dtype(dtype).name).step)
    got, want = both(p, idx, steps)
    assert_bit_equal(got, want)
    assert np.isnan(got[1][list(idx).index(1)])  # the domain exit is a NaN, not an error
    np.testing.assert_array_equal(p.work, x)      # the private copy is untouched


LOGB = native_function("logbarrier", iparams=(3,))
LOGB_NULL = native_function("logbarrier")
ROSEN_C = native_function("rosenbrock")


@pytest.mark.parametrize("f", [ROSEN_C, LOGB, LOGB_NULL], ids=["rosenbrock", "logbarrier(3)", "logbarrier(NULL)"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_native_equals_serial_bit_for_bit(f, dtype):
    """A C loss through cffi: the same bits as the serial engine calling it from Python,
    including iparams (and NULL when there are none), NaN where the loss leaves its domain."""
    x = np.random.default_rng(11).uniform(0.2, 2.0, 301).astype(dtype)
    x[4] = 1e-7                                   # log barrier: the -h side is log(<0) = NaN
    p = problem(f, x)
    idx = np.arange(x.size)
    got, want = both(p, idx, steps_for(x, Config.for_dtype(np.dtype(dtype).name).step))
    assert_bit_equal(got, want)
    if f is not ROSEN_C:
        assert np.isnan(got[1][4]) and np.isfinite(got[0]).all()


@pytest.mark.parametrize("f", [rosen, ROSEN_C], ids=["njit", "native"])
def test_nonfinite_inputs_are_not_perturbed(f):
    """An entry that is NaN or inf is skipped (NaN results and denominator), as in serial."""
    x = rosen_input(np.float64, 40)
    x[5], x[6] = np.nan, -np.inf
    p = problem(f, x)
    got, want = both(p, np.arange(x.size), steps_for(x, 6e-6))
    assert_bit_equal(got, want)
    assert np.isnan(got[2][[5, 6]]).all() and np.isfinite(np.delete(got[2], [5, 6])).all()


def test_njit_array_output_applies_the_cotangent_in_the_kernel():
    """An array-valued f is reduced inside the kernel as np.add.reduce(v * y) does it,
    bit for bit, term order and pairwise summation included."""
    x = np.random.default_rng(5).standard_normal((70, 5))
    v = np.random.default_rng(6).standard_normal((70, 3))
    p = problem(layer, x, v)
    idx = np.arange(x.size)
    got, want = both(p, idx, steps_for(x.reshape(-1), 6e-6))
    assert_bit_equal(got, want)


def test_reduction_is_numpys_pairwise_sum():
    """The in-kernel reduction equals np.add.reduce(v * y) for every length (blocks of 8,
    of 128, and the recursive halves), float32 outputs widened exactly."""
    rng = np.random.default_rng(9)
    for m in [*range(0, 140), 255, 256, 257, 1000, 4099, 65537]:
        v = rng.standard_normal(m)
        y = rng.standard_normal(m) * np.exp(rng.uniform(-20, 20, m))
        for yy in (y, y.astype(np.float32)):
            assert loops.reduce_like_numpy(v, yy) == np.add.reduce(v * yy.astype(np.float64)), m


def test_check_flags_a_planted_bug_at_exactly_its_entry():
    """Negative control through check(engine="compiled"): a 1e-4 relative error at one
    entry is flagged there and nowhere else; the correct gradient passes; same as serial."""
    x = np.random.default_rng(1).uniform(-1.5, 1.5, 120)
    good = rosen_grad(x)
    bad = good.copy()
    bad[37] *= 1.0 + 1e-4
    compiled_ok = gradcheck.check(rosen, x, good, engine="compiled")
    compiled_bad = gradcheck.check(rosen, x, bad, engine="compiled")
    serial_bad = gradcheck.check(rosen, x, bad, engine="serial")
    assert compiled_ok.passed and compiled_ok.engine == "compiled"
    assert not compiled_bad.passed
    np.testing.assert_array_equal(np.flatnonzero(compiled_bad.codes != Verdict.PASS), [37])
    np.testing.assert_array_equal(compiled_bad.codes, serial_bad.codes)
    np.testing.assert_array_equal(compiled_bad.numeric, serial_bad.numeric)


@pytest.mark.parametrize("name, grad, bug_at", [
    ("rosenbrock", "grad_lastbug", -1),
    ("logbarrier", "grad_firstbug", 0),
])
def test_native_negative_control(name, grad, bug_at):
    """C kernels with a planted backward bug: flagged at exactly that entry by the compiled
    engine, the correct C gradient passes, and the verdicts are serial's."""
    x = np.random.default_rng(2).uniform(0.3, 1.7, 64)
    buggy = native_function(name, grad=grad)
    correct = native_function(name)
    report = gradcheck.check(buggy, x, buggy.gradient, engine="compiled")
    assert np.flatnonzero(report.codes != Verdict.PASS).tolist() == [np.arange(64)[bug_at]]
    np.testing.assert_array_equal(report.codes, gradcheck.check(buggy, x, buggy.gradient, engine="serial").codes)
    assert gradcheck.check(correct, x, correct.gradient, engine="compiled").passed


def test_array_output_check_gives_serials_verdicts():
    """check() of an array-valued njit f with a VJP: the compiled engine's report is the
    serial engine's, verdicts and numbers bit for bit (both reduce as np.add.reduce(v * y));
    a planted bug is flagged at exactly its entry."""
    x = np.random.default_rng(4).standard_normal((40, 5))
    wrong = lambda x, v: layer_vjp(x, v) * np.where(np.arange(x.size).reshape(x.shape) == 77, 1.001, 1.0)  # noqa: E731
    for vjp in (layer_vjp, wrong):
        c = gradcheck.check(layer, x, vjp, engine="compiled")
        s = gradcheck.check(layer, x, vjp, engine="serial")
        np.testing.assert_array_equal(c.codes, s.codes)
        assert c.numeric.tobytes() == s.numeric.tobytes() and c.noise.tobytes() == s.noise.tobytes()
    assert c.codes.reshape(-1)[77] == Verdict.MISMATCH and (c.codes != Verdict.PASS).sum() == 1


def test_raising_f_is_reported_at_its_entry_with_the_original_exception():
    """numba cannot raise from a parallel loop; the engine records it and re-raises from
    Python as FunctionError with the entry, the side and the exception chained."""
    x = np.random.default_rng(8).uniform(-1.0, 1.0, 50)
    x[0] = 1e3 - 1e-3  # x[0] + h > 1e3
    before = x.copy()
    with pytest.raises(FunctionError) as info:
        gradcheck.check(rosen, x, rosen_grad, engine="compiled")
    assert info.value.index == (0,) and info.value.side == "+h"
    assert isinstance(info.value.__cause__, ValueError) and "above 1e3" in str(info.value.__cause__)
    np.testing.assert_array_equal(x, before)


def test_array_f_raising_or_changing_shape_is_reported():
    """An exception or an output of another shape inside the kernel: FunctionError at the
    first such entry (in entry order, like serial)."""
    x = np.random.default_rng(8).standard_normal((6, 5))
    v = np.ones((6, 3))
    for x00, cause in ((1e3 - 1e-3, "above 1e3"), (-1e3 + 1e-3, "shape")):
        x[0, 0] = x00
        p = problem(layer, x, v)
        engine, _ = select_engine("compiled", p)
        with pytest.raises(FunctionError) as info:
            engine.differences(np.arange(x.size), steps_for(x.reshape(-1), 6e-6))
        assert info.value.index == (0, 0) and cause in str(info.value.__cause__)
        np.testing.assert_array_equal(p.work, x)


def test_results_do_not_depend_on_the_thread_count_or_on_progress_blocks():
    """One thread, all threads, or blocks driven by a progress callback: the same bits."""
    x = rosen_input(np.float64, 300)
    idx = np.arange(x.size)
    steps = steps_for(x, 6e-6)
    engine, _ = select_engine("compiled", problem(rosen, x))
    everything = engine.differences(idx, steps)
    seen: list[int] = []
    blocks = engine.differences(idx, steps, progress=seen.append)
    assert seen and seen[-1] == x.size and seen == sorted(seen)
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        single = engine.differences(idx, steps)
    finally:
        numba.set_num_threads(threads)
    assert_bit_equal(blocks, everything)
    assert_bit_equal(single, everything)


def test_compile_time_is_kept_apart():
    """The engine says how long compiling took, apart from differencing."""
    engine, _ = select_engine("compiled", problem(rosen, rosen_input(np.float64)))
    engine.differences(np.arange(3), np.full(3, 1e-6))
    assert engine.runner.compile_seconds >= 0.0 and engine.runner.threads >= 1
    assert "compil" in engine.notes[0]


@pytest.mark.parametrize("f, x, backend, message", [
    (lambda x: float(np.sum(x)), np.ones(3), NumpyBackend(), "not a numba @njit"),
    (rosen, np.ones(3, dtype=np.float16), NumpyBackend(), "float16"),
    (rosen, np.ones(3), type("Dual", (), {"name": "dual"})(), "numpy backend"),
])
def test_unsupported_problems_say_what_to_do(f, x, backend, message):
    """engine="compiled" on what it cannot run: a TypeError naming the reason; auto skips it."""
    p = CheckProblem(f=f, work=x, evaluate=lambda: 0.0, backend=backend, cotangent=None)
    with pytest.raises(TypeError, match=message):
        CompiledRunner(p)
    assert auto_reason("compiled", p) is None


def test_f_writing_into_its_input_is_refused():
    """An njit f that mutates x (rosen, told to by the sentinel in its last entry) is refused
    (InputMutationError), as serial refuses it, instead of silently differencing a corrupted
    copy."""
    x = np.linspace(0.0, 1.0, 40)
    x[-1] = WRITES_ALWAYS
    p = problem(rosen, x)
    engine, _ = select_engine("compiled", p)
    with pytest.raises(gradcheck.InputMutationError, match="wrote into the array"):
        engine.differences(np.arange(x.size), steps_for(x, 6e-6))
    np.testing.assert_array_equal(p.work, x)


def test_f_writing_into_the_perturbed_entry_is_refused():
    """Putting the perturbed entry back after the call would hide the write: the kernel
    compares the entry with what it set there first (rosen writes 0 into x[1] when x[1] > 2,
    told to by the sentinel in its last entry). Control: below 2, no write, no error."""
    x = np.array([1.0, 2.0 - 1e-9, 3.0, WRITES_WHEN_PERTURBED])
    p = problem(rosen, x)
    engine, _ = select_engine("compiled", p)
    with pytest.raises(gradcheck.InputMutationError, match=r"compiled engine at entry \(1,\)"):
        engine.differences(np.arange(x.size), steps_for(x, 6e-6))
    np.testing.assert_array_equal(p.work, x)
    below = np.array([1.0, 1.5, 3.0, WRITES_WHEN_PERTURBED])
    fp, fm, _ = select_engine("compiled", problem(rosen, below))[0].differences(
        np.arange(4), steps_for(below, 6e-6))
    assert np.isfinite(fp).all() and np.isfinite(fm).all()


@numba.njit
def pair(x):
    return x[0], x[1]


def test_f_the_kernel_cannot_call_is_a_clear_type_error():
    """An njit f that returns something else than a number: TypeError naming the fix."""
    engine, _ = select_engine("compiled", problem(pair, np.ones(3)))
    with pytest.raises(TypeError, match="engine='serial'"):
        engine.differences(np.arange(3), np.full(3, 1e-6))


def test_auto_picks_compiled_when_it_pays_off(monkeypatch):
    """auto: compiled once the kernel for f is compiled and the check is not tiny (2N
    evaluations estimated at AUTO_WARM_MIN_SECONDS or more; zero here, so any size), or
    when 2N evaluations from Python are estimated above the cold threshold; never for an
    f that runs its own threads."""
    x = rosen_input(np.float64)
    warm = problem(rosen, x)
    select_engine("compiled", warm)[0].differences(np.arange(2), np.full(2, 1e-6))
    monkeypatch.setattr(_auto, "COMPILED_WARM_MIN_SECONDS", 0.0)
    assert "compiled" in auto_reason("compiled", warm)
    cold = problem(ROSEN_C, np.abs(x) + 0.1)
    monkeypatch.setitem(_auto.COMPILED_MIN_SECONDS, "native", 1e9)
    monkeypatch.setattr(_compiled, "_WARM", set())
    declined = auto_reason("compiled", cold)
    assert isinstance(declined, Declined) and "too little to repay compiling" in declined
    assert select_engine("auto", cold)[1].startswith("serial: f is a native (cffi) C function, but")
    monkeypatch.setitem(_auto.COMPILED_MIN_SECONDS, "native", 0.0)
    assert "native" in auto_reason("compiled", cold)
    parallel_f = numba.njit(parallel=True)(rosen.py_func)  # never compiled here
    assert auto_reason("compiled", problem(parallel_f, x)) is None


def test_auto_leaves_a_tiny_warm_check_to_serial(monkeypatch):
    """A compiled kernel is not reason enough: a check whose 2N evaluations from Python
    are estimated under AUTO_WARM_MIN_SECONDS runs serial under auto (launching the
    kernel costs more than it saves); above it, compiled. The timing is fixed here."""
    x = np.random.default_rng(12).uniform(-1.0, 1.0, 24)
    tiny = problem(rosen, x)
    select_engine("compiled", tiny)[0].differences(np.arange(2), np.full(2, 1e-6))
    assert _compiled.warm_key(tiny) in _compiled._WARM
    monkeypatch.setattr(_auto, "time_call", lambda evaluate: 1e-6)  # 48 calls: 48 us
    monkeypatch.setattr(_auto, "COMPILED_WARM_MIN_SECONDS", 1e-3)
    declined = auto_reason("compiled", tiny)
    assert isinstance(declined, Declined) and "launching the compiled kernel" in declined
    assert select_engine("auto", tiny)[0].name == "serial"
    report = gradcheck.check(rosen, x, rosen_grad)
    assert report.engine == "serial" and report.passed
    # auto says why serial ran: f is compiled code, but too small a check (not "general Python")
    assert any("f is a numba @njit function, but its 48 evaluations" in n for n in report.notes)
    monkeypatch.setattr(_auto, "COMPILED_WARM_MIN_SECONDS", 40e-6)
    assert "kernel for it is compiled" in auto_reason("compiled", tiny)
    assert gradcheck.check(rosen, x, rosen_grad).engine == "compiled"


def test_auto_reason_for_plain_python_does_not_import_numba():
    """auto_reason on a Python function is cheap: it does not import numba."""
    code = (
        "import sys, numpy as np\n"
        "from gradcheck._evaluate import auto_reason\n"
        "from gradcheck.engines import CheckProblem\n"
        "from gradcheck.backends import NumpyBackend\n"
        "p = CheckProblem(f=lambda x: x.sum(), work=np.ones(4), evaluate=lambda: 4.0,\n"
        "                 backend=NumpyBackend(), cotangent=None)\n"
        "assert auto_reason('compiled', p) is None\n"
        "assert 'numba' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
