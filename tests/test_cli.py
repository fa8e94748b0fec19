"""The command line, run as a subprocess: output and exit codes (0 pass, 1 fail, 2 usage,
3 inconclusive)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from optional_deps import needs


def run(*args, cwd=None, env_extra=None):
    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "gradcheck.cli", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=300)


def test_demo_runs_every_showcase_and_exits_zero():
    """`gradcheck demo` prints each showcase and exits 0 when all behave as expected."""
    out = run("demo")
    assert out.returncode == 0, out.stderr
    assert "showcases behaved as expected" in out.stdout
    assert "b1.wq fails alone" in out.stdout


def test_demo_json():
    """`gradcheck demo --json` prints one JSON document."""
    out = run("demo", "--json")
    data = json.loads(out.stdout)
    assert data["behaved"] is True and len(data["showcases"]) >= 5


@pytest.fixture
def user_module(tmp_path):
    (tmp_path / "usermod.py").write_text(textwrap.dedent("""
        import numpy as np
        def f(x): return (np.sin(x) * x).sum()
        def good(x): return np.cos(x) * x + np.sin(x)
        def bad(x):
            g = good(x); g.flat[3] *= 1.01; return g
    """))
    np.save(tmp_path / "x.npy", np.linspace(-1, 1, 8))
    return tmp_path


@pytest.mark.parametrize("grad, code", [("usermod:good", 0), ("usermod:bad", 1)])
def test_check_command_exit_codes(user_module, grad, code):
    """`gradcheck check` exits 0 on pass and 1 on a mismatch."""
    out = run("check", "usermod:f", "--grad", grad, "--input", "x.npy", cwd=user_module,
              env_extra={"PYTHONPATH": str(user_module)})
    assert out.returncode == code, out.stdout + out.stderr


def test_check_command_exits_three_when_nothing_could_be_verified(tmp_path):
    """An f whose float16 output resolves no entry: exit 3 (inconclusive), not 0, even for
    a claim of the wrong sign; the report says why. The same claim against the float64 f
    exits 1 (negative control: the claim is wrong where it can be seen)."""
    (tmp_path / "lowmod.py").write_text(textwrap.dedent("""
        import numpy as np
        def f16(x): return np.float16(np.sin(x).sum())
        def f64(x): return np.sin(x).sum()
        def wrong(x): return -np.cos(x)
    """))
    np.save(tmp_path / "x.npy", np.linspace(0.1, 1.3, 6))
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    out = run("check", "lowmod:f16", "--grad", "lowmod:wrong", "--input", "x.npy", cwd=tmp_path, env_extra=env)
    assert out.returncode == 3, out.stdout + out.stderr
    assert "INCONCLUSIVE -- no entry could be verified" in out.stdout and "f returns float16" in out.stdout
    out = run("check", "lowmod:f64", "--grad", "lowmod:wrong", "--input", "x.npy", cwd=tmp_path, env_extra=env)
    assert out.returncode == 1, out.stdout + out.stderr


def test_check_command_json(user_module):
    """`--json` prints the report as JSON, naming the mismatching entry."""
    out = run("check", "usermod:f", "--grad", "usermod:bad", "--shape", "2,4", "--json",
              cwd=user_module, env_extra={"PYTHONPATH": str(user_module)})
    data = json.loads(out.stdout)
    assert [e["index"] for e in data["entries"] if e["verdict"] == "MISMATCH"] == [[0, 3]]


@pytest.mark.parametrize("args", [[], ["check"], ["check", "nomodule"], ["frobnicate"],
                                  ["check", "usermod:f", "--grad", "usermod:good"]])
def test_usage_errors_exit_two(user_module, args):
    """Usage errors exit 2 with a message, never a traceback."""
    out = run(*args, cwd=user_module, env_extra={"PYTHONPATH": str(user_module)})
    assert out.returncode == 2
    assert "Traceback" not in out.stderr


@needs("matplotlib")
def test_check_command_writes_a_heat_map(user_module):
    """`--plot FILE` writes a PNG of the verdicts beside the report."""
    out = run("check", "usermod:f", "--grad", "usermod:bad", "--shape", "2,4", "--plot", "heat.png",
              cwd=user_module, env_extra={"PYTHONPATH": str(user_module)})
    assert out.returncode == 1, out.stderr
    png = user_module / "heat.png"
    assert png.exists() and png.stat().st_size > 5000 and png.read_bytes()[:4] == b"\x89PNG"


def test_bench_command_lists_and_runs_a_quick_benchmark():
    """`gradcheck bench --list` names the benchmarks; one runs with --quick and prints ratios."""
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[1]
    listed = run("bench", "--list", "--dir", str(root / "benchmarks"))
    assert listed.returncode == 0 and "serial" in listed.stdout and "referee" in listed.stdout
    ran = run("bench", "serial", "--quick", "--dir", str(root / "benchmarks"))
    assert ran.returncode == 0, ran.stderr
    assert "engine/naive" in ran.stdout and "cores" in ran.stdout


def test_bench_summary_words():
    """The summary line says met/MISSED from a benchmark's result, or its own summary when
    its target reads differently per case (batched: over B and over W)."""
    from gradcheck._bench import _target_word

    assert _target_word({"meets_target": True}) == "target met"
    assert _target_word({"meets_targets": False}) == "target MISSED"
    assert _target_word({"skipped": "torch is not installed"}) == "skipped: torch is not installed"
    mixed = {"meets_target": False, "target_summary": "target met over B (15.6x), MISSED over W (1.6x)"}
    assert _target_word(mixed) == mixed["target_summary"]
    assert _target_word(None) == "" and _target_word({}) == ""
