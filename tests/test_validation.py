"""Validation at the boundary (issue 12, sections 3 and 6): every bad input gets a clear
error that names what is wrong and what to do, before any work is done, or an honest
verdict; never a silent PASS, a crash deep inside, or f blamed for gradcheck's own step.

Covered: parameters that share memory in ``check_params``; parameter values that are not
numpy arrays; big-endian inputs; f's outputs gradcheck cannot use (another shape, complex
values after a real first call, ragged lists) on every engine; errors wrapped twice; a
CUDA device on a CPU-only torch; keyword arguments of the wrong type or value; torch
inputs of a multi-input check; a step too small to move x.
"""
from __future__ import annotations

import concurrent.futures as cf
import re

import numpy as np
import optional_deps
import pytest

import gradcheck
from gradcheck import (
    AliasedParametersError,
    Config,
    FunctionError,
    InputMutationError,
    OutputError,
    UnsupportedInputError,
    Verdict,
    check,
    check_params,
)

W = np.array([-1.0, 0.5, 1.0])


def framework(name: str):
    """The module ``name``, or a skip where it is absent (a failure in CI's full run: see
    tests/optional_deps.py)."""
    return optional_deps.need(name)


def tied_loss(p):
    """The issue's loss: 2 sin(a) + b^2, summed; with a and b one array w, its gradient with
    respect to w is 2 cos(w) + 2 w."""
    return (2 * np.sin(p["a"])).sum() + (p["b"] ** 2).sum()


# -- 1. parameters that share memory ------------------------------------------------------

@pytest.mark.parametrize("grads", [
    {"a": 2 * np.cos(W), "b": 2 * W},                              # each use's own gradient
    {"a": 2 * np.cos(W) + 2 * W, "b": 2 * np.cos(W) + 2 * W},      # the tied total, under both
], ids=["per-use", "total"])
def test_the_issues_aliased_parameters_are_refused_naming_both(grads):
    """Both claims of the issue passed silently (the differences perturbed the tied array,
    the referee one name). Now: AliasedParametersError naming 'a' and 'b' and both ways
    out; the array is untouched."""
    w = W.copy()
    before = w.tobytes()
    with pytest.raises(AliasedParametersError, match=r"'a' and 'b' share memory") as info:
        check_params(tied_loss, {"a": w, "b": w}, grads)
    message = str(info.value)
    assert "pass it once" in message and "pass copies" in message
    assert info.value.groups == [["a", "b"]]
    assert w.tobytes() == before


@pytest.mark.parametrize("make", [
    lambda buf: (buf[:3], buf[:3]),                       # two views of the same entries
    lambda buf: (buf[:3], buf[2:5]),                      # partial overlap of one buffer
    lambda buf: (buf[:6].reshape(2, 3), buf[:6].reshape(3, 2).T),  # reshaped and transposed
    lambda buf: (buf[::2], buf[4:5]),                     # strided view against a slice in it
], ids=["same", "partial", "transposed", "strided"])
def test_views_and_partial_overlaps_are_aliasing_too(make):
    """Any shared byte counts: the same entries, overlapping slices, views in other shapes."""
    a, b = make(np.arange(8.0))
    loss = lambda p: (p["a"] ** 2).sum() + (p["b"] ** 2).sum()  # noqa: E731
    with pytest.raises(AliasedParametersError):
        check_params(loss, {"a": a, "b": b}, {"a": 2 * a, "b": 2 * b})


@pytest.mark.parametrize("make", [
    lambda buf: (buf[:3], buf[3:6]),            # adjacent slices of one buffer
    lambda buf: (buf[::2], buf[1::2]),          # interleaved: byte ranges overlap, entries do not
], ids=["adjacent", "interleaved"])
def test_disjoint_parts_of_one_buffer_are_not_aliasing(make):
    """A flat parameter buffer cut into disjoint views is fine (the test is exact, not on
    byte ranges): the check runs and passes a correct gradient."""
    buf = np.linspace(-1.0, 1.0, 8)
    a, b = make(buf)
    loss = lambda p: (np.sin(p["a"])).sum() + (p["b"] ** 3).sum()  # noqa: E731
    report = check_params(loss, {"a": a, "b": b}, {"a": np.cos(a), "b": 3 * b ** 2}, adjudicate=False)
    assert report.passed


def test_numpy_views_of_one_torch_storage_are_aliasing():
    """The way the refusal of tensors points to (``t.detach().numpy()``) keeps torch's
    storage sharing visible: a tied torch weight passed under two names is refused too."""
    torch = framework("torch")
    weight = torch.linspace(-1.0, 1.0, 4, dtype=torch.float64)
    tied = {"embed": weight.detach().numpy(), "unembed": weight.view(2, 2).detach().numpy()}
    with pytest.raises(AliasedParametersError, match=r"'embed' and 'unembed' share memory"):
        check_params(lambda p: (p["embed"] ** 2).sum() + p["unembed"].sum(), tied,
                     {"embed": 2 * tied["embed"], "unembed": np.ones((2, 2))})


def test_three_names_on_one_array_are_one_group():
    """Groups are sets of names: three names on one buffer, a fourth apart."""
    buf = np.arange(6.0)
    params = {"a": buf, "b": buf[1:], "c": np.ones(2), "d": buf[:2]}
    with pytest.raises(AliasedParametersError) as info:
        check_params(lambda p: 0.0, params, {k: np.zeros(np.shape(v)) for k, v in params.items()})
    assert info.value.groups == [["a", "b", "d"]]


def test_the_ways_out_give_the_right_verdicts():
    """The error's two remedies, applied: tied (passed once, the loss reading it under both
    names) passes the total and refuses the per-use claim; copies pass the per-use claims
    and refuse the total. Neither claim passes where it is wrong."""
    tied = lambda p: tied_loss({**p, "b": p["a"]})  # noqa: E731
    total, per_use = 2 * np.cos(W) + 2 * W, 2 * np.cos(W)
    assert check_params(tied, {"a": W.copy()}, {"a": total}).passed
    wrong = check_params(tied, {"a": W.copy()}, {"a": per_use})
    assert (wrong["a"].codes == Verdict.MISMATCH).all()
    copies = {"a": W.copy(), "b": W.copy()}
    assert check_params(tied_loss, copies, {"a": per_use, "b": 2 * W}).passed
    untied_wrong = check_params(tied_loss, copies, {"a": total, "b": total})
    assert not untied_wrong["a"].passed and not untied_wrong["b"].passed


# -- 2. parameter values and gradients that are not numpy arrays -------------------------

def _square_loss(p):
    return sum((np.asarray(v) ** 2).sum() for v in p.values())


@pytest.mark.parametrize("value, kind", [
    ([1.0, 2.0], "a list"), (1.5, "a float"), (np.float64(1.5), "a float64"), ((1.0, 2.0), "a tuple"),
])
def test_parameter_values_must_be_numpy_arrays(value, kind):
    """check_params perturbs values in place where the loss reads them: a list, a Python
    float, a numpy scalar cannot be (raw AttributeError before); the error names the entry,
    the type and the fix. Nothing is converted: the loss would see another type."""
    with pytest.raises(UnsupportedInputError, match=rf"params\['a'\] is {kind};.*np\.asarray"):
        check_params(_square_loss, {"a": value}, {"a": 2 * np.asarray(value)})


def test_a_dict_mixing_tensors_and_arrays_is_refused_naming_the_others():
    """A dict of torch tensors is a model check_params takes (issue 28); one that mixes
    tensors and numpy arrays is refused, naming the values that are not tensors."""
    torch = framework("torch")
    t = torch.tensor([1.0, 2.0], dtype=torch.float64)
    with pytest.raises(UnsupportedInputError, match=r"params \['b'\] are not real floating torch tensors"):
        check_params(_square_loss, {"a": t, "b": np.ones(2)}, {"a": 2 * t, "b": 2 * np.ones(2)})
    assert check_params(_square_loss, {"a": t}, {"a": 2 * t}).passed


@pytest.mark.parametrize("grad", [[2.0, 4.0], (2.0, 4.0), np.array([2.0, 4.0], dtype=np.float32)])
def test_gradients_are_converted_where_their_values_are_unambiguous(grad):
    """A claimed gradient is only read, never perturbed: a list, a tuple or another float
    dtype is taken by value."""
    assert check_params(_square_loss, {"a": np.array([1.0, 2.0])}, {"a": grad}).passed


def test_a_torch_gradient_is_taken_by_value():
    """A torch tensor as a claimed gradient (even one that requires grad) is read by value."""
    torch = framework("torch")
    g = torch.tensor([2.0, 4.0], dtype=torch.float64, requires_grad=True)
    assert check_params(_square_loss, {"a": np.array([1.0, 2.0])}, {"a": g}).passed


@pytest.mark.parametrize("grad, message", [
    (None, r"grads\['a'\] is None.*`return` missing"),
    ("abc", r"grads\['a'\] is a str"),
    ([1.0, [2.0]], r"grads\['a'\] is a list numpy cannot read"),
])
def test_a_gradient_that_is_no_array_says_what_it_is(grad, message):
    """None, a string or a ragged list as a claim: named by what it is (before: 'has shape
    ()' or numpy's own ValueError)."""
    with pytest.raises(UnsupportedInputError, match=message):
        check_params(_square_loss, {"a": np.array([1.0, 2.0])}, {"a": grad})


# -- 3. big-endian inputs -----------------------------------------------------------------

def _same_report(r1, r2):
    for field in ("codes", "numeric", "noise", "tolerance", "analytic"):
        a, b = getattr(r1, field), getattr(r2, field)
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), field


@pytest.mark.parametrize("dtype", [">f8", ">f4"])
@pytest.mark.parametrize("engine, vectorized", [("serial", False), ("batched", True), ("processes", False)])
def test_big_endian_input_gives_the_native_verdicts(dtype, engine, vectorized):
    """A big-endian x (a crash in the differencing loop before: 'memoryview: unsupported
    format >d') is differenced in native order on the private copy: the same report as the
    native input, bit for bit, and the user's array untouched, still big-endian."""
    native = np.linspace(-2.0, 3.0, 7).astype(dtype[1:])
    big = native.astype(dtype)
    before = big.tobytes()
    f = lambda x: np.sin(x).sum(axis=-1)  # noqa: E731
    kw = dict(engine=engine, vectorized=vectorized, adjudicate=False)
    r_big, r_native = check(f, big, np.cos, **kw), check(f, native, np.cos, **kw)
    assert r_big.passed
    _same_report(r_big, r_native)
    assert big.tobytes() == before and big.dtype.str == np.dtype(dtype).str


def test_big_endian_parameters_are_perturbed_in_place_and_restored():
    """check_params perturbs the user's (big-endian) array itself, as for any parameter the
    loss reads from the dict: verdicts identical to the native array, bits restored."""
    native = np.linspace(-2.0, 3.0, 6)
    big = native.astype(">f8")
    before = big.tobytes()
    loss = lambda p: np.sin(p["w"]).sum()  # noqa: E731
    r_big = check_params(loss, {"w": big}, {"w": np.cos(native)})
    r_native = check_params(loss, {"w": native}, {"w": np.cos(native)})
    assert r_big.passed
    _same_report(r_big["w"], r_native["w"])
    assert big.tobytes() == before and big.dtype.str == ">f8"


# -- 4. errors that blamed f for gradcheck's own conversions -------------------------------

def _after_first_call(first, later):
    """A function that returns ``first(x)`` on its first call and ``later(x)`` afterwards."""
    calls = []

    def f(x):
        calls.append(1)
        return first(x) if len(calls) == 1 else later(x)
    return f


ENGINES = [("serial", {}), ("processes", {}), ("executor", "pool")]


@pytest.fixture(scope="module")
def pool():
    """A thread pool for the executor engine."""
    with cf.ThreadPoolExecutor(max_workers=2) as ex:
        yield ex


def _engine_kw(engine, extra, pool):
    return {"engine": engine, "adjudicate": False, **({"executor": pool} if extra == "pool" else {})}


@pytest.mark.parametrize("engine, extra", ENGINES)
def test_a_scalar_f_that_later_returns_an_array_is_an_output_error(engine, extra, pool):
    """f returns a scalar at x, then an array: gradcheck cannot reduce it. Before: 'the
    function raised TypeError ... only 0-dimensional arrays can be converted'. Now: what
    f returned, where, and what it returned first, once (no chained cause)."""
    f = _after_first_call(lambda x: np.sin(x).sum(), np.sin)
    with pytest.raises(OutputError) as info:
        check(f, np.arange(3.0), np.cos, **_engine_kw(engine, extra, pool))
    message = str(info.value)
    assert re.match(r"f returned shape \(3,\) at entry \(0,\) \(\+h\), after returning shape \(\)", message)
    assert "raised" not in message and "0-dimensional" not in message
    assert info.value.index == (0,) and info.value.side == "+h"


def test_an_array_f_that_changes_shape_is_an_output_error():
    """f returns shape (3,) at x, then (2,): said as such, not as 'the function raised
    ValueError'."""
    f = _after_first_call(np.sin, lambda x: np.sin(x)[:2])
    with pytest.raises(OutputError, match=r"^f returned shape \(2,\) at entry \(0,\) \(\+h\), after "
                                          r"returning shape \(3,\)"):
        check(f, np.arange(3.0), lambda x, v: v * np.cos(x), adjudicate=False)


def test_a_ragged_output_is_not_reported_as_an_exception_of_f():
    """f returns a ragged list: numpy (gradcheck's conversion) fails, not f."""
    with pytest.raises(OutputError, match=r"^f returned a list numpy cannot read as an array at the unperturbed"):
        check(lambda x: [x, x[:2]], np.arange(3.0), np.cos)


def test_a_ragged_batch_output_is_not_reported_as_an_exception_of_f():
    """The batched engine: a vectorized f whose batch output numpy cannot read is an
    OutputError at the batch (before: 'the function raised OutputError ...', wrapped)."""
    def f(X):
        if X.ndim == 1:
            return np.sin(X).sum()
        out = [float(v) for v in np.sin(X).sum(axis=-1)]
        out[0] = [out[0], 1.0]
        return out

    with pytest.raises(OutputError, match=r"^f returned a list numpy cannot read as an array at entry \(0,\) "
                                          r"\(batch of 3 entries\)"):
        check(f, np.arange(3.0), np.cos, vectorized=True, engine="batched")


@pytest.mark.parametrize("engine", ["serial", "processes"])
def test_a_loss_error_is_wrapped_once(engine):
    """A loss that raises at a perturbed entry: 'the function raised ValueError at entry
    (0,) (+h) of parameter 'a': boom', once. Before: 'raised FunctionError ... raised
    ValueError' (serial) and 'raised RuntimeError ... FunctionError' (processes)."""
    def loss(p):
        if p["a"][0] != 0.0:  # raises once entry (0,) is perturbed
            raise ValueError("boom")
        return (p["a"] ** 2).sum()

    with pytest.raises(FunctionError) as info:
        check_params(loss, {"a": np.arange(3.0)}, {"a": 2 * np.arange(3.0)}, engine=engine)
    assert str(info.value) == "the function raised ValueError at entry (0,) (+h) of parameter 'a': boom"
    assert isinstance(info.value.__cause__, ValueError)


@pytest.mark.parametrize("engine", ["serial", "processes"])
def test_a_loss_that_later_returns_an_array_is_named_at_its_entry(engine):
    """check_params: a loss that returns an array at a perturbed entry is an OutputError
    naming the entry and the parameter (before: 'the function raised ValueError')."""
    loss = lambda p: (p["a"] ** 2).sum() if p["a"][0] == 0.0 else p["a"] ** 2  # noqa: E731
    with pytest.raises(OutputError, match=r"^loss\(params\) returned an array of shape \(3,\) at entry \(0,\) "
                                          r"\(\+h\) of parameter 'a'; it must return a scalar$"):
        check_params(loss, {"a": np.arange(3.0)}, {"a": 2 * np.arange(3.0)}, engine=engine)


@pytest.mark.parametrize("returned, message", [
    (None, r"^the claimed gradient grad\(x\) is None, not an array.*`return` missing"),
    ("abc", r"^the claimed gradient grad\(x\) is a str, not an array"),
])
def test_a_grad_returning_no_array_says_what_it_returned(returned, message):
    """grad(x) returning None or a string: said as such (before: 'has shape ()')."""
    with pytest.raises(UnsupportedInputError, match=message):
        check(lambda x: np.sin(x).sum(), np.arange(3.0), lambda x: returned)


def test_a_cuda_device_on_cpu_torch_is_refused_up_front():
    """TorchBackend('cuda') on a torch without CUDA: a ValueError naming the device when
    the backend is made (before: 'the function raised AssertionError ... Torch not compiled
    with CUDA enabled' at the first evaluation of f)."""
    torch = framework("torch")
    if torch.cuda.is_available():
        pytest.skip("this torch has a usable CUDA device")
    from gradcheck.backends._torch import TorchBackend

    with pytest.raises(ValueError, match=r"TorchBackend\(device='cuda'\).*cannot place tensors on cuda"):
        TorchBackend("cuda")
    with pytest.raises(ValueError, match=r"not a torch device"):
        TorchBackend("bogus")


# -- 5. keyword arguments ------------------------------------------------------------------

def _f(x):
    return np.sin(x).sum()


CHECK = lambda **kw: check(_f, np.arange(3.0), np.cos, **kw)  # noqa: E731
PARAMS = lambda **kw: check_params(lambda p: np.sin(p["w"]).sum(), {"w": np.arange(3.0)},  # noqa: E731
                                   {"w": np.cos(np.arange(3.0))}, **kw)
SWEEP = lambda **kw: gradcheck.shape_sweep(_f, [(2,), (3,)], lambda s: np.ones(s), np.cos, **kw)  # noqa: E731


def _dispute(**kw):
    x = np.linspace(-1, 1, 4).astype(np.float32)
    return gradcheck.dispute(np.exp, (x,), {"f32": np.exp(x)}, "float32", **kw)


@pytest.mark.parametrize("call, kw, error, message", [
    (CHECK, {"digits": 0}, ValueError, r"digits must be an int >= 20.*got 0"),
    (CHECK, {"digits": -5}, ValueError, r"digits must be an int >= 20.*got -5"),
    (CHECK, {"digits": 2.5}, TypeError, r"digits must be an int >= 20.*got 2\.5 \(a float\)"),
    (CHECK, {"digits": "30"}, TypeError, r"digits must be an int.*got '30' \(a str\)"),
    (CHECK, {"digits": True}, TypeError, r"digits must be an int.*got True \(a bool\)"),
    (CHECK, {"refine": "no"}, TypeError, r"refine must be True, False or None, got 'no' \(a str\)"),
    (CHECK, {"refine": 0}, TypeError, r"refine must be True, False or None, got 0"),
    (CHECK, {"config": {"rtol": 1e-3}}, TypeError, r"config must be a gradcheck\.Config.*Config\(\*\*\{'rtol'"),
    (CHECK, {"adjudicate": "yes"}, ValueError, r"adjudicate='yes' is not one of \('auto', True, False\)"),
    (CHECK, {"adjudicate": 1}, ValueError, r"adjudicate=1 is not one of"),
    (CHECK, {"progress": "yes"}, TypeError, r"progress must be True, False or None, got 'yes'"),
    (CHECK, {"vectorized": "no"}, TypeError, r"vectorized must be True or False, got 'no'"),
    (CHECK, {"name": 3}, TypeError, r"name must be a str or None, got 3 \(a int\)"),
    (CHECK, {"engine": "fast"}, ValueError, r"engine='fast' is not one of \('auto', 'serial'"),
    (CHECK, {"bound_ulps": -1}, ValueError, r"bound_ulps must be a positive number.*got -1"),
    (CHECK, {"bound_ulps": "2"}, TypeError, r"bound_ulps must be a positive number.*got '2' \(a str\)"),
    (CHECK, {"executor": 3}, TypeError, r"executor must be a concurrent\.futures\.Executor.*got 3"),
    (PARAMS, {"digits": "30"}, TypeError, r"digits must be an int.*got '30'"),
    (PARAMS, {"config": {"rtol": 1e-3}}, TypeError, r"config must be a gradcheck\.Config"),
    (PARAMS, {"adjudicate": "no"}, ValueError, r"adjudicate='no' is not one of"),
    (PARAMS, {"seed": "0"}, TypeError, r"seed must be an int >= 0, got '0'"),
    (PARAMS, {"seed": -1}, ValueError, r"seed must be an int >= 0, got -1"),
    (PARAMS, {"executor": "pool"}, TypeError, r"executor must be a concurrent\.futures\.Executor"),
    (SWEEP, {"config": {"rtol": 1e-3}}, TypeError, r"config must be a gradcheck\.Config"),
    (SWEEP, {"engine": "fast"}, ValueError, r"engine='fast' is not one of"),
    (SWEEP, {"factory": "no"}, TypeError, r"factory must be True or False, got 'no'"),
    (SWEEP, {"adjudicate": None}, ValueError, r"adjudicate=None is not one of"),
    (SWEEP, {"name": 1}, TypeError, r"name must be a str or None"),
    (SWEEP, {"parts": {"A": (2,)}}, TypeError, r"parts must be a function parts\(shape\)"),
    (_dispute, {"dps": "40"}, TypeError, r"dps must be an int >= 20.*got '40' \(a str\)"),
    (_dispute, {"dps": 5}, ValueError, r"dps must be an int >= 20.*got 5"),
    (_dispute, {"bound_ulps": "1"}, TypeError, r"bound_ulps must be a positive number"),
    (_dispute, {"name": 1.0}, TypeError, r"name must be a str or None"),
    (_dispute, {"float32_evaluation": "no"}, TypeError, r"float32_evaluation must be True or False"),
])
def test_keyword_arguments_are_validated_naming_parameter_value_and_choices(call, kw, error, message):
    """Each keyword of check / check_params / shape_sweep / dispute of the wrong type or
    value is refused before any work, naming the parameter, the value and what it takes.
    Before: digits=0, -5, 2.5, '30' and refine='no' (truthy) ran and passed; a config dict
    crashed with AttributeError; the rest failed somewhere inside or were read as truthy."""
    with pytest.raises(error, match=message):
        call(**kw)


@pytest.mark.parametrize("kw", [
    {"digits": 20}, {"digits": np.int64(40)}, {"refine": False}, {"refine": np.True_},
    {"adjudicate": np.False_}, {"progress": False}, {"bound_ulps": 3}, {"name": "sin"},
])
def test_valid_keyword_values_still_run(kw):
    """The valid values, numpy's bools and ints among them, are accepted."""
    assert CHECK(**kw).passed


# -- 6. complex values after a real first call --------------------------------------------

def _complex_later(vector: bool):
    first = (lambda x: np.sin(x)) if vector else (lambda x: np.sin(x).sum(axis=-1))
    return _after_first_call(first, lambda x: first(x) + 1e-3j)


@pytest.mark.parametrize("engine", ["serial", "batched", "processes", "executor"])
@pytest.mark.parametrize("vector", [False, True], ids=["scalar", "array"])
def test_complex_values_after_a_real_first_call_are_refused(engine, vector, pool):
    """f real at x, complex at the perturbed points: before, the imaginary part was dropped
    with only numpy's ComplexWarning and the check PASSed; now an OutputError naming the
    entry, on every engine (the compiled engine runs njit code, whose type is fixed)."""
    f = _complex_later(vector)
    grad = (lambda x, v: v * np.cos(x)) if vector else np.cos
    kw = {"engine": engine, "adjudicate": False, "vectorized": engine == "batched"}
    if engine == "executor":
        kw["executor"] = pool
    with pytest.raises(OutputError, match=r"returned a complex (number|array) \(complex128\) at entry \(0,\) \(\+h\)"):
        check(f, np.arange(3.0), grad, **kw)


@pytest.mark.parametrize("engine", ["serial", "processes"])
def test_a_loss_returning_complex_values_later_is_refused(engine):
    """check_params: the same refusal, naming the parameter."""
    loss = lambda p: np.sin(p["a"]).sum() + (0 if p["a"][0] == 0.0 else 1e-3j)  # noqa: E731
    with pytest.raises(OutputError, match=r"loss\(params\) returned a complex number.*entry \(0,\) \(\+h\) of "
                                          r"parameter 'a'"):
        check_params(loss, {"a": np.arange(3.0)}, {"a": np.cos(np.arange(3.0))}, engine=engine)


# -- 7. torch inputs of a multi-input check ---------------------------------------------------

def test_a_multi_input_check_never_hands_f_the_users_torch_tensors():
    """f writes into its second input: the user's tensors are bit for bit unchanged (they
    were mutated before: only numpy inputs got private copies), requires_grad kept, no
    .grad, and the write is still reported as InputMutationError."""
    torch = framework("torch")
    A = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
    B = torch.tensor([1.5, 0.25, -0.75], dtype=torch.float64, requires_grad=True)
    before = (A.clone(), B.detach().clone())

    def fm(a, b):
        with torch.no_grad():
            b.add_(1.0)
        return (a * b).sum()

    with pytest.raises(InputMutationError):
        check(fm, (A, B))
    assert torch.equal(A, before[0]) and torch.equal(B.detach(), before[1])
    assert B.requires_grad and B.grad is None


def test_a_multi_input_torch_check_still_passes_on_private_copies():
    """The copies are faithful: a correct autograd gradient passes for both inputs."""
    torch = framework("torch")
    A = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
    B = torch.tensor([1.5, 0.25, -0.75], dtype=torch.float64)
    assert check(lambda a, b: (torch.sin(a) * b).sum(), (A, B)).passed


def test_a_multi_input_jax_check_leaves_the_inputs_as_they_were():
    """jax arrays are immutable: handed over as they are, and unchanged afterwards."""
    jax = framework("jax")
    jnp = jax.numpy
    A, B = jnp.array([0.5, -1.0, 2.0]), jnp.array([1.5, 0.25, -0.75])
    before = (np.asarray(A).tobytes(), np.asarray(B).tobytes())
    assert check(lambda a, b: (jnp.sin(a) * b).sum(), (A, B)).passed
    assert (np.asarray(A).tobytes(), np.asarray(B).tobytes()) == before


# -- 8. a step that does not move x -----------------------------------------------------------

def test_a_step_that_rounds_away_is_refused_naming_the_usable_step():
    """Config(step=1e-300): x + h == x at every |x| >= ~1e-284, a realized step of 0 (before:
    NONFINITE verdicts though nothing was NaN). Refused up front, naming the entry, the
    realized step of 0 and the step from which every entry moves (float64's epsilon)."""
    x = np.arange(3.0)
    with pytest.raises(ValueError, match=r"step=1e-300 gives a realized step of 0 at 2 of 3 entries of x "
                                         r"\(the first at \(1,\), where x = 1\.0.*from step=2\.22e-16"):
        check(_f, x, np.cos, config=Config(step=1e-300))
    with pytest.raises(ValueError, match=r"realized step of 0 .* of params\['w'\]"):
        PARAMS(config=Config(step=1e-300))


def test_a_small_step_that_moves_every_entry_is_not_refused():
    """The refusal is about a step of exactly 0, not about a step we would not choose: a
    step of 1e-12 moves every entry and runs (its verdicts are the step study's business)."""
    report = check(_f, np.arange(3.0), np.cos, config=Config(step=1e-12), adjudicate=False)
    assert report.size == 3 and not (report.codes == Verdict.NONFINITE).any()
