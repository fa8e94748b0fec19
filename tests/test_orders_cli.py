"""The command line of the checks beyond first-order reverse mode, run in process through
``gradcheck.cli.main`` (tests/cli_in_process.py; tests/test_cli.py runs it as a subprocess):
`gradcheck check --jvp/--hvp` and `gradcheck taylor` (exit 0 pass, 1 fail, 2 usage)."""
from __future__ import annotations

import functools
import json
import textwrap

import numpy as np
import optional_deps
import pytest
from cli_in_process import run_cli


@pytest.fixture
def cli(monkeypatch, capsys):
    """``cli(*args, cwd=...)``: `gradcheck ARGS` in this process (tests/cli_in_process.py)."""
    return functools.partial(run_cli, monkeypatch, capsys)


@pytest.fixture
def user_module(tmp_path):
    (tmp_path / "ordermod.py").write_text(textwrap.dedent("""
        import numpy as np
        def f(x): return np.sum(np.sin(x) * x)
        def grad(x): return np.cos(x) * x + np.sin(x)
        def bad_grad(x): return grad(x) * 1.001
        def jvp(x, t): return np.sum(grad(x) * t)
        def bad_jvp(x, t): return jvp(x, t) + 1e-3 * t.flat[2]
        def hvp(x, v): return (2 * np.cos(x) - x * np.sin(x)) * v
        def bad_hvp(x, v):
            h = hvp(x, v); h.flat[1] *= 1.001; return h
        def scaled_hvp(x, v): return hvp(x, v) * 1.01
    """))
    np.save(tmp_path / "x.npy", np.linspace(-1, 1, 6))
    return tmp_path


@pytest.mark.parametrize("args, code, flagged", [
    (["--jvp", "ordermod:jvp"], 0, []),
    (["--jvp", "ordermod:bad_jvp"], 1, [[2]]),
    (["--hvp", "ordermod:hvp", "--grad", "ordermod:grad"], 0, []),
    (["--hvp", "ordermod:bad_hvp", "--grad", "ordermod:grad"], 1, [[1]]),
    (["--hvp", "ordermod:bad_hvp"], 1, [[1]]),
])
def test_check_jvp_and_hvp_options(user_module, args, code, flagged, cli):
    """`check --jvp` and `check --hvp` (with or without --grad) exit 0 on a correct claim
    and 1 on a planted error, which the JSON names at its entry."""
    out = cli("check", "ordermod:f", "--input", "x.npy", "--json", *args, cwd=user_module)
    assert out.returncode == code, out.stdout + out.stderr
    entries = json.loads(out.stdout)["entries"]
    assert [e["index"] for e in entries if e["verdict"] == "MISMATCH"] == flagged


def test_check_jvp_with_grad_is_a_usage_error(user_module, cli):
    """--jvp replaces --grad: both given is a usage error (exit 2) with a one-line reason."""
    out = cli("check", "ordermod:f", "--input", "x.npy", "--jvp", "ordermod:jvp", "--grad", "ordermod:grad",
              cwd=user_module)
    assert out.returncode == 2 and "--jvp replaces --grad" in out.stderr


@pytest.mark.parametrize("args, code, text", [
    (["--grad", "ordermod:grad"], 0, "order 2.0"),
    (["--grad", "ordermod:bad_grad"], 1, "order 1.0"),
    (["--grad", "ordermod:grad", "--hvp", "ordermod:hvp"], 0, "order 3.0"),
    (["--grad", "ordermod:grad", "--hvp", "ordermod:scaled_hvp"], 1, "needs >= 2.9"),
])
def test_taylor_command(user_module, args, code, text, cli):
    """`gradcheck taylor` prints the table and exits 0 (orders 2 / 3) or 1 (order 1 / 2)."""
    out = cli("taylor", "ordermod:f", "--input", "x.npy", *args, cwd=user_module)
    assert out.returncode == code, out.stdout + out.stderr
    assert text in out.stdout and "R1 (grad)" in out.stdout


@pytest.mark.parametrize("shape, code", [("3,x", 2), ("-1", 2), ("3,2", 0)])
def test_taylor_shape_goes_through_the_shape_parser(user_module, shape, code, cli):
    """`taylor --shape 3,x` gave Python's raw int() message (issue 27): a usage error (exit 2) that
    says what a shape is, as `check --shape` does; a good shape runs."""
    out = cli("taylor", "ordermod:f", "--grad", "ordermod:grad", "--shape", shape, cwd=user_module)
    assert out.returncode == code, out.stdout + out.stderr
    if code == 2:
        assert f"argument --shape: '{shape}' is not a shape: expected sizes separated by commas" in out.stderr
        assert "invalid literal" not in out.stderr


def test_taylor_command_json_and_plot(user_module, cli):
    """`taylor --json --plot` prints JSON and writes the PNG."""
    optional_deps.need("matplotlib")
    out = cli("taylor", "ordermod:f", "--shape", "4", "--grad", "ordermod:grad", "--json", "--plot", "t.png",
              cwd=user_module)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["status"] == "PASS"
    assert (user_module / "t.png").read_bytes()[:4] == b"\x89PNG"
