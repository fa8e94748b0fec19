"""check_params: every entry of every name, a table of all names, a diagnosis read in
backward order, and parameters restored bit for bit whatever happens."""
from __future__ import annotations

import numpy as np
import pytest

import gradcheck
from gradcheck import Verdict, check_params
from gradcheck.examples.transformer import loss, loss_and_grads, make_problem


@pytest.fixture(scope="module")
def problem():
    return make_problem(seed=0)


def _run(problem, mutation=None, adjudicate=False):
    params, ids, targets, cfg = problem
    _, grads = loss_and_grads(params, ids, targets, cfg, mutation=mutation)
    return check_params(lambda p: loss(p, ids, targets, cfg), params, grads, adjudicate=adjudicate)


def test_correct_transformer_by_finite_differences_fails_nothing_but_the_key_bias_is_unverified(problem):
    """Finite differences alone: the correct model has no MISMATCH anywhere; the key bias
    (true gradient 0) is UNCHECKED without any special-casing. Its gradient was never
    verified, so the whole check is INCONCLUSIVE rather than a plain PASS (issue 12), and
    the diagnosis names the two unverified names without blaming them."""
    r = _run(problem)
    assert r.status == "INCONCLUSIVE" and not r.passed, str(r)
    assert r.failing == [] and sorted(r.inconclusive) == ["b0.bk", "b1.bk"]
    assert r.diagnosis.kind == "pass" and "verified nothing: b1.bk, b0.bk" in r.diagnosis.text
    for name in ("b0.bk", "b1.bk"):
        assert r[name].counts[Verdict.UNCHECKED] == r[name].size
    total = sum(rep.size for rep in r.reports.values())
    assert total == 440 and sum(rep.counts[Verdict.MISMATCH] for rep in r.reports.values()) == 0


def test_correct_transformer_passes_every_entry_with_the_referee(problem):
    """With the referee (the default), every entry of every parameter PASSes: the key
    bias's claimed ~1e-17 is proven within round-off of an exact 0."""
    from gradcheck import Cause

    r = _run(problem, adjudicate="auto")
    assert r.passed and r.diagnosis.kind == "pass", str(r)
    for name, rep in r.reports.items():
        assert rep.counts[Verdict.PASS] == rep.size, name
    for name in ("b0.bk", "b1.bk"):
        assert all(r[name].cause((i,)) is Cause.EXACT_ZERO for i in range(4))


def test_one_tensor_line_wrong_is_diagnosed_alone(problem):
    """A wrong line filling one tensor: that name fails alone, and the diagnosis says so."""
    r = _run(problem, "wq_line")
    assert r.failing == ["b1.wq"]
    assert r.diagnosis.kind == "isolated" and "b1.wq fails alone" in r.diagnosis.text


def test_wrong_block_return_is_diagnosed_between_names(problem):
    """A wrong value returned from block 1's backward: block 1 passes, everything after it
    in backward order fails, and the diagnosis points between the two."""
    r = _run(problem, "block_return")
    expected = [n for n in r.order if n.startswith("b0.") and n != "b0.bk"] + ["pos_emb", "tok_emb"]
    assert r.failing == expected
    assert r.diagnosis.kind == "run"
    assert r.diagnosis.suspects == ("b1.ln1_g -> b0.b2",)
    assert "between b1.ln1_g" in r.diagnosis.text
    # the table lists every name, not only the first failure
    table = str(r)
    assert all(name in table for name in r.order)


def test_params_restored_bit_for_bit_after_check(problem):
    """After a check every parameter array is the same object with the same bits."""
    params, ids, targets, cfg = problem
    ids_before = {n: id(a) for n, a in params.items()}
    bytes_before = {n: a.tobytes() for n, a in params.items()}
    _run(problem, "wq_line")
    assert {n: id(a) for n, a in params.items()} == ids_before
    assert {n: a.tobytes() for n, a in params.items()} == bytes_before


@pytest.mark.parametrize("exc_type", [ValueError, KeyboardInterrupt])
def test_params_restored_when_loss_raises(exc_type):
    """When the loss raises (or Ctrl-C arrives) mid-check, parameters are restored."""
    params = {"w": np.linspace(-1, 1, 6).reshape(2, 3), "b": np.array([0.3, -0.2])}
    before = {n: a.copy() for n, a in params.items()}
    calls = []

    def bad_loss(p):
        calls.append(1)
        if len(calls) == 7:
            raise exc_type("interrupted")
        return float((p["w"] ** 2).sum() + p["b"].sum())

    expected = gradcheck.FunctionError if exc_type is ValueError else KeyboardInterrupt
    with pytest.raises(expected):
        check_params(bad_loss, params, {"w": 2 * params["w"], "b": np.ones(2)})
    for n in params:
        assert params[n].tobytes() == before[n].tobytes()


def test_function_error_names_parameter_and_entry():
    """An exception in the loss names the parameter and the entry being perturbed."""
    params = {"w": np.array([1.0, 2.0, 3.0])}

    def loss_fn(p):
        if p["w"][2] > 3.0:
            raise RuntimeError("overflow")
        return float(p["w"].sum())

    with pytest.raises(gradcheck.FunctionError, match=r"entry \(2,\).*'w'") as info:
        check_params(loss_fn, params, {"w": np.ones(3)})
    assert info.value.param == "w" and info.value.index == (2,)


def test_readonly_and_noncontiguous_params():
    """Read-only and non-contiguous parameters are checked and left as they were."""
    w = np.arange(12, dtype=float).reshape(3, 4)[:, ::2] / 5  # non-contiguous view
    b = np.array([0.5, 1.5])
    b.flags.writeable = False
    params = {"w": w, "b": b}
    r = check_params(lambda p: float((p["w"] ** 3).sum() + (p["b"] ** 2).sum()), params,
                     {"w": 3 * w**2, "b": 2 * b})
    assert r.passed
    assert params["b"] is b and not b.flags.writeable and params["w"] is w


def test_sample_checks_only_that_many_entries_per_name():
    """sample=k checks k seeded entries per name; the others are SKIPPED, not PASS."""
    params = {"w": np.linspace(0.1, 1, 20)}
    r = check_params(lambda p: float((p["w"] ** 2).sum()), params, {"w": 2 * params["w"]}, sample=5)
    assert r["w"].counts[Verdict.PASS] == 5 and r["w"].counts[Verdict.SKIPPED] == 15


def test_missing_grad_and_bad_order_are_clear_errors():
    """A name without a gradient, a bad order, or a wrong-shaped gradient: clear errors."""
    params = {"a": np.ones(2), "b": np.ones(3)}
    loss_fn = lambda p: float(p["a"].sum() + p["b"].sum())
    with pytest.raises(KeyError, match="b"):
        check_params(loss_fn, params, {"a": np.ones(2)})
    with pytest.raises(ValueError, match="order"):
        check_params(loss_fn, params, {"a": np.ones(2), "b": np.ones(3)}, order=["a"])
    with pytest.raises(gradcheck.ShapeMismatchError, match=r"grads\['b'\].*\(2,\).*\(3,\)"):
        check_params(loss_fn, params, {"a": np.ones(2), "b": np.ones(2)})


@pytest.mark.parametrize(
    "passed, informative, kind, suspects",
    [
        ({"c": True, "b": True, "a": True}, None, "pass", ()),
        ({"c": True, "b": False, "a": True}, None, "isolated", ("b",)),
        ({"c": True, "b": False, "a": False}, None, "run", ("c -> b",)),
        ({"c": False, "b": False, "a": False}, None, "run", ("c",)),
        ({"c": True, "b": False, "a": True, "z": False}, None, "isolated", ("b", "z")),
        # an uninformative name (all UNCHECKED) inside a run does not break it
        ({"c": True, "b": False, "u": True, "a": False}, {"u": False}, "run", ("c -> b",)),
    ],
)
def test_diagnosis_table(passed, informative, kind, suspects):
    """The diagnosis reads failing names in backward order (given left to right)."""
    from gradcheck._models.diagnosis import diagnose

    order = list(passed)
    info = {n: True for n in order}
    info.update(informative or {})
    d = diagnose(order, passed, info)
    assert d.kind == kind and d.suspects == suspects


def test_params_report_json_roundtrip(problem):
    """The params report serializes to JSON with every name and the diagnosis."""
    import json

    r = _run(problem, "wq_line")
    data = json.loads(r.to_json())
    assert data["passed"] is False and data["diagnosis"]["kind"] == "isolated"
    assert list(data["params"]) == list(r.order)


def test_processes_engine_gives_serials_report_bit_for_bit(problem):
    """engine="processes": every name's verdicts and differences equal serial's bit for
    bit (planted bug included), the dict is never touched (the workers perturb their own
    copies), and each report says which engine ran."""
    params, ids, targets, cfg = problem
    _, grads = loss_and_grads(params, ids, targets, cfg, mutation="wq_line")
    before = {n: params[n].tobytes() for n in params}
    objects = {n: id(params[n]) for n in params}
    fn = lambda p: loss(p, ids, targets, cfg)  # noqa: E731
    serial = check_params(fn, params, grads, adjudicate=False, engine="serial")
    procs = check_params(fn, params, grads, adjudicate=False, engine="processes")
    assert procs.failing == serial.failing == ["b1.wq"]
    for n in params:
        assert procs[n].engine == ("processes" if params[n].size >= 2 else "serial")
        assert procs[n].codes.tobytes() == serial[n].codes.tobytes(), n
        assert procs[n].numeric.tobytes() == serial[n].numeric.tobytes(), n
        assert params[n].tobytes() == before[n] and id(params[n]) == objects[n]


def test_processes_engine_names_the_parameter_and_entry_of_an_error():
    """An exception in the loss on a worker: FunctionError naming the parameter and the
    first failing entry, as serial reports it; the parameters are as they were."""
    params = {"v": np.ones(3), "w": np.linspace(1.0, 3.0, 40)}
    at = params["w"][25]

    def loss_fn(p):
        if p["w"][25] != at:
            raise RuntimeError("overflow")
        return float(p["w"].sum() + p["v"].sum())

    with pytest.raises(gradcheck.FunctionError, match=r"entry \(25,\).*'w'") as info:
        check_params(loss_fn, params, {"v": np.ones(3), "w": np.ones(40)}, engine="processes")
    assert info.value.param == "w" and info.value.index == (25,)
    np.testing.assert_array_equal(params["w"], np.linspace(1.0, 3.0, 40))


def test_engine_auto_says_what_it_picked(monkeypatch):
    """auto: serial for a cheap loss, processes when the estimate is long (threshold
    patched, not timed); a name the check_params engines do not have is a clear error."""
    from gradcheck._evaluate import auto as _auto
    from gradcheck._evaluate import fork_hazard, usable_cores

    params = {"w": np.linspace(0.1, 1.0, 8)}
    fn = lambda p: float((p["w"] ** 2).sum())  # noqa: E731
    cheap = check_params(fn, params, {"w": 2 * params["w"]}, adjudicate=False)
    assert cheap["w"].engine == "serial" and any("serial: 2N = 16" in n for n in cheap["w"].notes)
    monkeypatch.setattr(_auto, "PROCESSES_MIN_SECONDS", 0.0)
    costly = check_params(fn, params, {"w": 2 * params["w"]}, adjudicate=False)
    assert costly.passed
    if usable_cores() >= 2 and fork_hazard() is None:
        assert costly["w"].engine == "processes"
        assert any(n.startswith("processes: 2N = 16") for n in costly["w"].notes)
    else:  # one core, no fork, or jax running in this test session: serial, and why
        assert costly["w"].engine == "serial" and costly["w"].notes[0].startswith("serial:")
    with pytest.raises(ValueError, match="engine='batched' is not one of"):
        check_params(fn, params, {"w": 2 * params["w"]}, engine="batched")
