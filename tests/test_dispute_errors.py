"""dispute refuses what it cannot judge, up front and naming the culprit: no entries, a
candidate that is not an output of the target format, math_fn called with the wrong
number of inputs, a raising math_fn (CLI exit 4), raw bfloat16 bytes without --bits.
(No torch here: these run whether or not torch is installed.)"""
from __future__ import annotations

import functools
import textwrap

import ml_dtypes
import numpy as np
import pytest
from cli_in_process import run_cli

from gradcheck import dispute
from gradcheck.mp import NotAdjudicable

BF16 = ml_dtypes.bfloat16


def _counting(fn):
    """fn, counting its calls in ``.calls``: a refusal up front never calls it."""
    def wrapped(*args):
        wrapped.calls += 1
        return fn(*args)
    wrapped.calls = 0
    return wrapped


@pytest.mark.parametrize("shape", [(0,), (3, 0)])
def test_empty_candidates_are_refused_before_any_evaluation(shape):
    """Nothing to judge: a clear ValueError naming the candidate and its shape, before the
    exact evaluation (not a numpy stride-tricks error from the bound)."""
    x = np.zeros(shape, dtype=BF16)
    fn = _counting(np.exp)
    with pytest.raises(ValueError, match=rf"candidate 'a' has no entries \(shape \({shape[0]},"):
        dispute(fn, (x,), {"a": np.exp(x)}, "bfloat16")
    assert fn.calls == 0


@pytest.mark.parametrize("dtype, target", [(np.float64, "bfloat16"), (np.float32, "bfloat16"),
                                           (np.float64, "float16"), (np.float64, "float32")])
def test_a_candidate_wider_than_the_target_format_is_refused(dtype, target):
    """A candidate holding values that are not values of the target format (an unrounded
    wider result) is not a bfloat16 (float16, float32) output: its "0% correctly rounded,
    2.8e-14 ulp" would read as a verdict on a kernel. Refused with the candidate's name, the
    count, an example entry with the nearest format value, and the two ways out."""
    x = np.linspace(-1, 1, 16).astype(BF16)
    y = np.exp(x.astype(np.float64)).astype(dtype)
    fn = _counting(np.exp)
    with pytest.raises(ValueError) as info:
        dispute(fn, (x,), {"ok": np.exp(x.astype(np.float32)).astype(BF16), "wide": y}, target)
    msg = str(info.value)
    assert f"candidate 'wide' is not a {target} output" in msg
    assert "entry (0,) is " + repr(float(y[0])) in msg and f"nearest {target} value" in msg
    assert f"of 16 entries are not {target} values" in msg
    assert f"dtype={np.dtype(dtype).name!r}" in msg and f"Round it to {target}" in msg
    assert fn.calls == 0


def test_values_of_the_format_in_a_wider_dtype_are_accepted():
    """A float64 array holding bfloat16 values (and NaN) is a bfloat16 output: judged."""
    x = np.linspace(-1, 1, 16).astype(BF16)
    y = np.exp(x.astype(np.float32)).astype(BF16).astype(np.float64)
    y[3] = np.nan
    r = dispute(np.exp, (x,), {"wide": y}, "bfloat16")
    assert r.stats["wide"].nonfinite == 1 and r.stats["wide"].correctly_rounded == 15 / 16


def test_wrong_number_of_inputs_blames_the_call_not_arbitrary_precision():
    """math_fn given too few or too many inputs: a TypeError saying math_fn was called with
    the wrong number of arguments (its signature shown), not "not adjudicable
    (unsupported_operation)"; ufuncs are checked by their input count."""
    x = np.linspace(0.5, 1, 4)
    c = {"c": x.astype(BF16)}

    def two(a, b):
        return a * b

    for fn, args, words in [(two, (x,), ["two(a, b)", "1 input", "'b'"]),
                            (two, (x, x, x), ["two(a, b)", "3 input"]),
                            (np.add, (x,), ["add", "takes 2 input", "1 were given"]),
                            (np.exp, (x, x), ["exp", "takes 1 input", "2 were given"])]:
        with pytest.raises(TypeError) as info:
            dispute(fn, args, c, "bfloat16")
        assert not isinstance(info.value, NotAdjudicable)
        for word in words:
            assert word in str(info.value), (word, str(info.value))
    # a right count still goes through, and a real unsupported operation is still reported as one
    assert dispute(two, (x, np.ones(4)), {"c": x.astype(BF16)}, "bfloat16").stats["c"].max_ulp <= 0.5
    with pytest.raises(NotAdjudicable, match="unsupported_operation"):
        dispute(lambda v: np.spacing(v), (x,), c, "bfloat16")


# -- the command line ----------------------------------------------------------------------


@pytest.fixture
def cli(monkeypatch, capsys):
    """``cli(*args, cwd=...)``: `gradcheck dispute ARGS` in this process (tests/cli_in_process.py)."""
    return functools.partial(run_cli, monkeypatch, capsys, "dispute")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("dispute_errors")
    x = np.linspace(-2, 2, 12).astype(BF16)
    y = np.exp(x.astype(np.float32)).astype(BF16)
    np.save(d / "x_bf16.npy", x)                 # np.save writes bfloat16 as raw |V2
    np.savez(d / "in_bf16.npz", x)
    np.savez(d / "in_bits.npz", x.view(np.uint16))
    np.save(d / "y.npy", y.view(np.uint16))
    np.save(d / "y64.npy", np.exp(x.astype(np.float64)))
    (d / "defs.py").write_text(textwrap.dedent("""
        import numpy as np
        def raises(v):
            raise ValueError("planted failure in the definition")
        def two(a, b):
            return a * b
    """))
    return d


def test_cli_raw_bfloat16_inputs_hint_at_bits(files, cli):
    """A bfloat16 array saved by np.save comes back as raw |V2 bytes: exit 2 with a hint
    at --bits naming the array, not "cannot convert bytes"; with --bits it runs."""
    for inputs, key in (("in_bf16.npz", "arr_0"), ("x_bf16.npy", "arr_0")):
        out = cli("--fn", "numpy:exp", "--inputs", inputs, "--candidate", "c=y.npy",
                   "--dtype", "bfloat16", cwd=files)
        assert out.returncode == 2, out.stderr
        assert f"--bits {key}" in out.stderr and "cannot convert bytes" not in out.stderr
    ok = cli("--fn", "numpy:exp", "--inputs", "in_bits.npz", "--bits", "arr_0",
              "--candidate", "c=y.npy", "--dtype", "bfloat16", cwd=files)
    assert ok.returncode == 0, ok.stderr


def test_cli_a_raising_definition_exits_four(files, cli):
    """--fn raising: exit 4 and one line naming it, the exception and the message (not a
    usage error, not a traceback)."""
    out = cli("--fn", "defs:raises", "--inputs", "in_bits.npz", "--bits", "arr_0",
               "--candidate", "c=y.npy", "--dtype", "bfloat16", cwd=files)
    assert out.returncode == 4, out.stderr
    line, = out.stderr.strip().splitlines()
    assert "defs:raises" in line and "ValueError" in line and "planted failure" in line


@pytest.mark.parametrize("fn, candidate, words", [
    ("defs:two", "c=y.npy", ["two(a, b)", "1 input"]),
    ("numpy:exp", "c=y64.npy", ["candidate 'c' is not a bfloat16 output"]),
])
def test_cli_caller_mistakes_exit_two(files, fn, candidate, words, cli):
    """The wrong number of inputs, a candidate that is not a bfloat16 output: usage errors
    (exit 2) that say so."""
    out = cli("--fn", fn, "--inputs", "in_bits.npz", "--bits", "arr_0", "--candidate", candidate,
               "--dtype", "bfloat16", cwd=files)
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    for word in words:
        assert word in out.stderr, (word, out.stderr)
