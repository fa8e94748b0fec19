"""The command line, run as a subprocess: output and exit codes (0 pass, 1 fail, 2 usage,
3 inconclusive, 4 the function or the gradient raised)."""
from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from optional_deps import needs

import gradcheck
from gradcheck.cli import main

#: The folder holding the gradcheck under test: the subprocess imports the same one.
SOURCE = str(pathlib.Path(gradcheck.__file__).resolve().parents[1])
#: Seconds after which a command counts as hung: a bound on waiting, not a speed claim (the
#: whole demo took over 300 s on a shared machine at load 12).
HANG = 1800


def _env(env_extra=None):
    env = dict(os.environ)
    extra = dict(env_extra or {})
    paths = [SOURCE, *filter(None, [extra.pop("PYTHONPATH", None)])]
    env.update(extra, PYTHONPATH=os.pathsep.join(paths))
    return env


def run(*args, cwd=None, env_extra=None):
    return subprocess.run([sys.executable, "-m", "gradcheck.cli", *args], capture_output=True,
                          text=True, cwd=cwd, env=_env(env_extra), timeout=HANG)


def run_script(*args, cwd, tmp_path):
    """The command as the installed console script runs it: a script in another folder
    (sys.path[0] is that folder, not the current directory, unlike ``python -m``)."""
    launcher = tmp_path / "bin" / "gradcheck-script.py"
    launcher.parent.mkdir(exist_ok=True)
    launcher.write_text("import sys\nfrom gradcheck.cli import main\nsys.exit(main())\n")
    return subprocess.run([sys.executable, str(launcher), *args], capture_output=True, text=True,
                          cwd=cwd, env=_env(), timeout=HANG)


@pytest.mark.scale
def test_demo_runs_every_showcase_and_exits_zero(tmp_path):
    """`gradcheck demo` prints each showcase and exits 0 when all behave as expected; it writes
    one HTML page per showcase with a report (15: the negative control has none) and, with
    matplotlib, the PNG plots. (All 16 showcases in a subprocess, the transformer's referee
    among them: ``scale``; CI's bare configuration also runs `gradcheck demo` itself, as the
    README's first command. The sibling below runs the demo command in process on a few
    showcases.)"""
    out = run("demo", "--out", str(tmp_path / "pictures"))
    assert out.returncode == 0, out.stderr
    assert "showcases behaved as expected" in out.stdout
    pages = sorted((tmp_path / "pictures").glob("*.html"))
    assert len(pages) == 15 and all(p.read_text(encoding="utf-8").startswith("<!DOCTYPE html>") for p in pages)
    assert "15 HTML pages, one per showcase" in out.stdout
    if importlib.util.find_spec("matplotlib") is not None:
        assert "PNG plots: matmul_tn_parity_sweep.png" in out.stdout
        assert (tmp_path / "pictures" / "matmul_tn_parity_sweep.png").read_bytes()[:4] == b"\x89PNG"
    assert "b1.wq fails alone" in out.stdout
    # issue 17: the demo shows a Taylor test (its remainder table) and an adjoint test
    for title in ("Taylor test: gradient and Hessian by hand", "Taylor test: one term of a gradient 1e-4 off",
                  "adjoint (dot-product) test: a transposed-wrong VJP on 1e5 inputs"):
        assert f"=== {title} (as expected" in out.stdout
    assert "R1 (grad)" in out.stdout and "<J t, v>" in out.stdout and "vjp (adjoint) is inconsistent" in out.stdout


#: Showcases the in-process demo tests run: cheap, and those whose words are checked.
FEW = ("negative control", "tiny transformer, one tensor's line wrong", "Taylor test: gradient and Hessian by hand",
       "Taylor test: one term of a gradient 1e-4 off", "adjoint (dot-product) test: a transposed-wrong VJP on 1e5 inputs")


def test_demo_text_says_how_each_showcase_behaved(monkeypatch, capsys):
    """`gradcheck demo` (text, in process) on a few showcases: each is printed as behaving
    as expected, with its report, and the summary counts them; exit 0."""
    from gradcheck._demo import showcases

    few = [s for s in showcases.SHOWCASES if s.title in FEW]
    assert len(few) == len(FEW)
    monkeypatch.setattr(showcases, "SHOWCASES", few)
    assert main(["demo", "--out", ""]) == 0
    out = capsys.readouterr().out
    for title in FEW:
        assert f"=== {title} (as expected" in out
    assert "b1.wq fails alone" in out and f"demo: {len(FEW)}/{len(FEW)} showcases behaved as expected" in out
    assert "R1 (grad)" in out and "<J t, v>" in out and "vjp (adjoint) is inconsistent" in out


def test_demo_json(monkeypatch, capsys):
    """`gradcheck demo --json` prints one JSON document (two showcases here: the whole demo
    runs once, in the test above)."""
    from gradcheck._demo import showcases

    monkeypatch.setattr(showcases, "SHOWCASES", showcases.SHOWCASES[:2])
    assert main(["demo", "--json", "--out", ""]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["behaved"] is True and len(data["showcases"]) == 2
    assert [s["title"] for s in data["showcases"]] == [s.title for s in showcases.SHOWCASES[:2]]


def test_demo_without_matplotlib_still_draws_its_pictures_and_names_the_extra(tmp_path):
    """No matplotlib (a bare install): the demo does not say "pictures skipped"; it writes the
    HTML pages (heat maps and the sweep's grid drawn without matplotlib) and says which extra
    the PNG plots need. Two showcases, in a process where matplotlib cannot be imported."""
    script = textwrap.dedent("""
        import sys
        sys.modules["matplotlib"] = None  # import matplotlib raises ImportError, as when it is absent
        from gradcheck._demo import showcases
        showcases.SHOWCASES = tuple(s for s in showcases.SHOWCASES if s.pictures is not None)[:1] + showcases.SHOWCASES[1:2]
        sys.exit(0 if showcases.run_demo(out_dir=sys.argv[1]) else 1)
    """)
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "out")], capture_output=True, text=True,
                         env=_env(), timeout=HANG)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "skipped" not in out.stdout
    assert 'PNG plots not drawn: they need matplotlib (pip install "gradcheck[plot]")' in out.stdout
    pages = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert pages == ["01-c-transposed-matmul-shape-sweep-of-a-parity-defect.html",
                     "02-numpy-function-planted-1e-5-relative-bug.html"]
    sweep = (tmp_path / "out" / pages[0]).read_text(encoding="utf-8")
    assert "gc-grid" in sweep and "m is odd and n is odd" in sweep
    assert "data:image/png;base64," in (tmp_path / "out" / pages[1]).read_text(encoding="utf-8")


@pytest.fixture
def user_module(tmp_path):
    (tmp_path / "usermod.py").write_text(textwrap.dedent("""
        import numpy as np
        def f(x): return (np.sin(x) * x).sum()
        def good(x): return np.cos(x) * x + np.sin(x)
        def bad(x):
            g = good(x); g.flat[3] *= 1.01; return g
        def f_raises_at_entry_3(x):
            if x.flat[3] != X3:
                raise ValueError("planted failure")
            return f(x)
        def grad_raises(x):
            raise KeyError("planted gradient failure")
        X3 = float(np.linspace(-1, 1, 8)[3])
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
    from gradcheck._demo.bench import _target_word

    assert _target_word({"meets_target": True}) == "target met"
    assert _target_word({"meets_targets": False}) == "target MISSED"
    assert _target_word({"skipped": "torch is not installed"}) == "skipped: torch is not installed"
    mixed = {"meets_target": False, "target_summary": "target met over B (15.6x), MISSED over W (1.6x)"}
    assert _target_word(mixed) == mixed["target_summary"]
    assert _target_word(None) == "" and _target_word({}) == ""


def test_check_imports_a_module_from_the_current_directory(user_module, tmp_path):
    """`gradcheck check usermod:f` finds ./usermod.py when run as the console script (no
    PYTHONPATH), as `python -m` would."""
    out = run_script("check", "usermod:f", "--grad", "usermod:good", "--input", "x.npy",
                     cwd=user_module, tmp_path=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "PASS" in out.stdout


def test_a_missing_module_is_a_usage_error_naming_where_it_looked(user_module, tmp_path):
    """A module that is not there: exit 2, naming the module and the current directory."""
    out = run_script("check", "nosuchmod:f", "--grad", "usermod:good", "--input", "x.npy",
                     cwd=user_module, tmp_path=tmp_path)
    assert out.returncode == 2, out.stderr
    assert "nosuchmod" in out.stderr and str(user_module) in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("fn, grad, words", [
    ("usermod:f_raises_at_entry_3", "usermod:good",
     ["usermod:f_raises_at_entry_3", "ValueError", "(3,)", "planted failure"]),
    ("usermod:f", "usermod:grad_raises",
     ["usermod:grad_raises", "the claimed gradient", "KeyError", "planted gradient failure"]),
])
def test_a_raising_function_or_gradient_exits_four_with_one_line(user_module, fn, grad, words):
    """f (at an entry) or the gradient raising is neither a mismatch (1) nor a usage error
    (2): exit 4 and one line naming the function, the exception and the entry."""
    out = run("check", fn, "--grad", grad, "--input", "x.npy", cwd=user_module,
              env_extra={"PYTHONPATH": str(user_module)})
    assert out.returncode == 4, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])


def test_a_module_that_raises_on_import_exits_four(user_module):
    """A module whose own code raises while it is imported: the user's code failed (4)."""
    (user_module / "broken.py").write_text("raise RuntimeError('module-level failure')\n")
    out = run("check", "broken:f", "--shape", "3", cwd=user_module)
    assert out.returncode == 4, out.stderr
    assert "broken" in out.stderr and "module-level failure" in out.stderr
    assert "Traceback" not in out.stderr


def test_unknown_backend_lists_every_known_backend(user_module):
    """--backend bogus: exit 2, listing numpy, dual, torch and jax (loaded or not)."""
    out = run("check", "usermod:f", "--grad", "usermod:good", "--input", "x.npy",
              "--backend", "bogus", cwd=user_module, env_extra={"PYTHONPATH": str(user_module)})
    assert out.returncode == 2
    for name in ("numpy", "dual", "torch", "jax"):
        assert name in out.stderr.split("known:")[1], out.stderr


def test_help_states_the_exit_codes():
    """`gradcheck --help` and `gradcheck check --help` list every exit code."""
    for args in (["--help"], ["check", "--help"]):
        out = run(*args)
        assert out.returncode == 0
        text = " ".join(out.stdout.split())
        for phrase in ("0 every check passed", "1 a mismatch was found", "2 usage error",
                       "3 inconclusive", "4 the function or the gradient raised",
                       "5 gradcheck itself failed"):
            assert phrase in text, (args, phrase)


def test_a_worker_killed_by_the_function_exits_four(user_module):
    """f killing its worker process (engine processes): exit 4 and one line naming the
    entry range, not a traceback of BrokenProcessPool."""
    (user_module / "killer.py").write_text(textwrap.dedent("""
        import os, signal
        import numpy as np
        PARENT = os.getpid()
        def f(x):
            if x.flat[5] != 5.0 and os.getpid() != PARENT:
                os.kill(os.getpid(), signal.SIGKILL)
            return float((x * x).sum())
        def g(x): return 2 * x
    """))
    np.save(user_module / "r.npy", np.arange(12.0))
    out = run("check", "killer:f", "--grad", "killer:g", "--input", "r.npy", "--engine", "processes",
              cwd=user_module, env_extra={"PYTHONPATH": str(user_module)})
    assert out.returncode == 4, out.stdout + out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert "killer:f" in out.stderr and "died" in out.stderr and "killed by SIGKILL" in out.stderr


def test_an_internal_failure_exits_five_not_one(user_module, monkeypatch, capsys):
    """A failure inside gradcheck itself (here: the check stage raising a RuntimeError that
    no user code raised) is neither a mismatch (1) nor the user's code failing (4): exit 5,
    with the traceback and a line saying it is gradcheck's bug."""
    from gradcheck import cli

    def broken(*args, **kwargs):
        raise RuntimeError("planted internal failure")

    monkeypatch.chdir(user_module)
    monkeypatch.syspath_prepend(str(user_module))
    monkeypatch.setattr(cli, "check", broken)
    code = cli.main(["check", "usermod:f", "--grad", "usermod:good", "--input", "x.npy"])
    err = capsys.readouterr().err
    assert code == cli.EXIT_INTERNAL == 5
    assert "Traceback" in err and "planted internal failure" in err
    assert "internal error" in err and "bug in gradcheck" in err


# -- issue 27: a user's first hour with the command line -------------------------------------
@pytest.fixture
def first_hour(tmp_path):
    """A module with a correct gradient, one 1e-5 off at one entry, an elementwise f with its
    VJP (correct and planted) and a wrong-sign gradient; PYTHONPATH for it."""
    (tmp_path / "fh.py").write_text(textwrap.dedent("""
        import numpy as np
        def f(x): return (np.sin(x) * x).sum()
        def good(x): return np.cos(x) * x + np.sin(x)
        def off(x):
            g = good(x); g.flat[3] *= 1 + 1e-5; return g
        def wrong_sign(x): return -good(x)
        def ew(x): return np.sin(x) * x
        def ew_vjp(x, v): return v * good(x)
        def ew_vjp_off(x, v):
            g = v * good(x); g.flat[7] *= 1 + 1e-5; return g
    """))
    return tmp_path, {"PYTHONPATH": str(tmp_path)}


def test_version_and_python_dash_m_gradcheck(first_hour):
    """`gradcheck --version` names the version; `python -m gradcheck` is the same command."""
    folder, env = first_hour
    out = subprocess.run([sys.executable, "-m", "gradcheck", "--version"], capture_output=True, text=True,
                         env=_env(env), timeout=HANG)
    assert out.returncode == 0 and out.stdout.strip() == f"gradcheck {gradcheck.__version__}"
    for grad, code in (("fh:good", 0), ("fh:off", 1)):
        out = subprocess.run([sys.executable, "-m", "gradcheck", "check", "fh:f", "--grad", grad, "--shape", "4,5"],
                             capture_output=True, text=True, cwd=folder, env=_env(env), timeout=HANG)
        assert out.returncode == code, out.stdout + out.stderr


@pytest.mark.parametrize("args, code", [
    ([], 1),                                  # the 1e-5 error is found at the default rtol
    (["--rtol", "1e-4"], 0),                  # and forgiven by a looser one
    (["--rtol", "1e-4", "--atol", "0"], 0),
])
def test_rtol_and_atol_reach_the_check(first_hour, args, code):
    folder, env = first_hour
    out = run("check", "fh:f", "--grad", "fh:off", "--shape", "4,5", *args, cwd=folder, env_extra=env)
    assert out.returncode == code, out.stdout + out.stderr


@pytest.mark.parametrize("grad, code", [("fh:good", 0), ("fh:off", 1)])
def test_screen_from_the_command_line(first_hour, grad, code):
    """--screen runs gradcheck.screen: the planted entry is localized (exit 1), the correct
    gradient is cleared (exit 0), in far fewer evaluations than 2N."""
    folder, env = first_hour
    out = run("check", "fh:f", "--grad", grad, "--shape", "40,50", "--screen", cwd=folder, env_extra=env)
    assert out.returncode == code, out.stdout + out.stderr
    assert "engine screen/" in out.stdout
    evaluations = int(out.stdout.split(" evaluations in ")[0].rsplit(" ", 1)[1])
    assert evaluations < 2 * 40 * 50 / 4
    if code:
        assert "MISMATCH at: a single entry at (0, 3)" in out.stdout


@pytest.mark.parametrize("grad, code", [("fh:ew_vjp", 0), ("fh:ew_vjp_off", 1)])
def test_independent_axes_from_the_command_line(first_hour, grad, code):
    folder, env = first_hour
    out = run("check", "fh:ew", "--grad", grad, "--shape", "30,40", "--independent-axes", "all",
              cwd=folder, env_extra=env)
    assert out.returncode == code, out.stdout + out.stderr
    assert "(coloured)" in out.stdout and "independent_axes='all'" in out.stdout


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("grad, code", [("fh:good", 0), ("fh:wrong_sign", 1)])
def test_low_precision_dtypes(first_hour, dtype, grad, code):
    """--dtype float16 / bfloat16: x in that format, the claim judged in its ulps (a wrong sign
    is caught, the correct claim passes)."""
    folder, env = first_hour
    out = run("check", "fh:f", "--grad", grad, "--shape", "3,4", "--dtype", dtype, cwd=folder, env_extra=env)
    assert out.returncode == code, out.stdout + out.stderr
    assert f"dtype {dtype}" in out.stdout


@pytest.mark.parametrize("args, words", [
    (["--shape", "3,x"], "argument --shape: '3,x' is not a shape: expected sizes separated by commas"),
    (["--shape", "3,4", "--independent-axes", "rows"], "argument --independent-axes: 'rows': expected 'all'"),
    (["--shape", "3,4", "--rtol", "0.5"], "--rtol 0.5 is not below the resolution 0.01"),
    (["--shape", "3,4", "--dtype", "bfloat16", "--rtol", "1e-2"], "judged in ulps of bfloat16"),
    (["--shape", "3,4", "--screen", "--independent-axes", "all"], "does not combine with --independent-axes"),
])
def test_malformed_options_are_usage_errors_that_say_what_was_expected(first_hour, args, words):
    folder, env = first_hour
    out = run("check", "fh:f", "--grad", "fh:good", *args, cwd=folder, env_extra=env)
    assert out.returncode == 2 and words in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and "invalid literal" not in out.stderr


def test_dispute_refuses_16_bit_integers_not_named_by_bits(tmp_path):
    """uint16 inputs read as integers gave "1.06e+40 ulp" (exit 1): now a usage error that names
    the array and both fixes; named by --bits they are bfloat16 bit patterns and the correctly
    rounded candidate is not broken (exit 0). int64 positions stay integers."""
    import ml_dtypes

    x = np.linspace(0.1, 1, 8).astype(ml_dtypes.bfloat16)
    np.savez(tmp_path / "in.npz", x.view(np.uint16))
    np.save(tmp_path / "y.npy", np.exp(x.astype(np.float64)).astype(ml_dtypes.bfloat16).view(np.uint16))
    common = ["dispute", "--fn", "numpy:exp", "--inputs", "in.npz", "--candidate", "y=y.npy", "--dtype", "bfloat16"]
    out = run(*common, cwd=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "array 'arr_0' is uint16" in out.stderr and "add --bits arr_0" in out.stderr
    assert "save it as int32 or int64" in out.stderr and "ulp" not in out.stdout
    ok = run(*common, "--bits", "arr_0", cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_a_closed_pipe_is_not_an_error_and_the_files_are_written(first_hour):
    """`gradcheck check ... --html r.html | head`: the reader closes the pipe before the report
    is printed; the command ends quietly with the verdict's exit code (1, not 2) and the page is
    written."""
    folder, env = first_hour
    proc = subprocess.Popen([sys.executable, "-m", "gradcheck", "check", "fh:f", "--grad", "fh:off", "--shape", "20,30",
                             "--html", "r.html", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=folder, env=_env(env))
    proc.stdout.close()  # as `| head -0` would: nothing will ever be read
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=HANG) == 1, err
    assert "Broken pipe" not in err and "Traceback" not in err and "Exception ignored" not in err, err
    assert (folder / "r.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_every_help_lists_defaults_and_exit_codes():
    """Each command's help shows its options' defaults and ends with the exit codes."""
    expected = {"check": ["--seed SEED", "(default: 0)", "(default: auto)"],
                "dispute": ["--dps DIGITS", "(default: 40)", "(default: value)"],
                "taylor": ["--grad MODULE:FUNC"], "demo": ["(default: gradcheck-demo-output)"], "bench": ["--quick"]}
    for command, words in expected.items():
        out = run(command, "--help")
        assert out.returncode == 0
        text = " ".join(out.stdout.split())
        for word in words + ["exit codes:", "0 every check passed", "3 inconclusive", "5 gradcheck itself failed"]:
            assert word in text, (command, word)


def test_bench_list_is_aligned():
    root = pathlib.Path(__file__).resolve().parents[1]
    out = run("bench", "--list", "--dir", str(root / "benchmarks"))
    lines = out.stdout.splitlines()
    assert len(lines) >= 10 and any(len(ln.split()[0]) > 12 for ln in lines)  # dispute_speed, axes_engines
    assert len({ln.index(str(root)) for ln in lines}) == 1, out.stdout


# -- issue 27, friction 7: slow "quick" paths, one table layout per benchmark ----------------
BENCH_DIR = pathlib.Path(__file__).resolve().parents[1] / "benchmarks"


def hand_formatting(source: str) -> list[str]:
    """What in a benchmark's source lays out columns by hand instead of through
    ``_common.table``: ``str.ljust/rjust/center``, a format width (``{x:>10}``, ``{x:12.3f}``),
    another table package. Each as ``line N: what``."""
    import ast

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "ljust", "rjust", "center"):
            found.append(f"line {node.lineno}: .{node.func.attr}()")
        elif isinstance(node, ast.FormattedValue) and node.format_spec is not None:
            spec = "".join(v.value for v in node.format_spec.values if isinstance(v, ast.Constant))
            if any(ch.isdigit() for ch in spec.split(".")[0].lstrip("<>^=+- #0,_")[:1]) or spec[:1] in "<>^":
                found.append(f"line {node.lineno}: format width {spec!r}")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
            if any(n.split(".")[0] in ("tabulate", "prettytable", "texttable", "rich") for n in names):
                found.append(f"line {node.lineno}: imports {names}")
    return found


def test_hand_formatting_is_found():
    """The negative control of the rule below: each way of aligning by hand is seen."""
    planted = 'print(name.ljust(12), f"{t:>10}", f"{t:8.3f}")\nimport tabulate\n'
    assert sorted(w.split(": ", 1)[1] for w in hand_formatting(planted)) == [
        ".ljust()", "format width '8.3f'", "format width '>10'", "imports ['tabulate', '']"]
    assert hand_formatting('print(f"{t:.3g} s {n:,} {x!r}")\n') == []


@pytest.mark.parametrize("script", sorted(p.name for p in BENCH_DIR.glob("bench_*.py")))
def test_every_benchmark_prints_in_the_one_table_format_and_says_what_quick_leaves_out(script):
    """Friction 7 of issue 27: "each benchmark prints its own table layout". Every bench_*.py
    prints its title through ``_common.header`` with, for ``--quick``, what the quick run leaves
    out (small sizes, never a silent skip: the 177 s case of bench_axes is one it names), and
    its tables through ``_common.table`` (gradcheck._demo.bench.text_table); none aligns
    columns by hand."""
    import ast

    source = (BENCH_DIR / script).read_text(encoding="utf-8")
    assert hand_formatting(source) == []
    calls = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    headers = [c for c in calls if c.func.id == "header"]
    assert headers and any(len(c.args) == 3 for c in headers), "header(title, quick, what --quick leaves out)"
    assert any(c.func.id == "table" for c in calls)
    assert "from _common import" in source


def rule_columns(line: str) -> list[int]:
    """Where each column starts, read from a table's rule of dashes."""
    return [k for k, ch in enumerate(line) if ch == "-" and (k == 0 or line[k - 1] == " ")]


def aligned_rows(lines: list[str], starts: list[int], indent: str) -> int:
    """How many of ``lines`` (those after a rule) are rows of its table: at the indent, each
    cell starting at a column start, two spaces before it (a prose line ends the count)."""
    count = 0
    for ln in lines:
        if not ln.startswith(indent) or ln.startswith(indent + " ") or any(
                len(ln) > s and (ln[s - 2:s] != "  " or ln[s] == " ") for s in starts[1:]):
            break
        count += 1
    return count


def test_a_quick_benchmark_and_the_summary_print_aligned_tables():
    """The output of `gradcheck bench serial --quick` (through the command): the header words
    of each table start where its rule's dash groups start, at the one indent, and every row
    lines up (the serial table's 2 rows, the summary's 1: a row laid out otherwise ends the
    count short)."""
    from gradcheck._demo.bench import INDENT

    out = run("bench", "serial", "--quick", "--dir", str(BENCH_DIR))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    rules = [k for k, ln in enumerate(lines) if ln.strip() and set(ln.strip()) <= {"-", " "} and "--" in ln]
    counts = []
    for k in rules:
        starts = rule_columns(lines[k])
        assert lines[k].startswith(INDENT + "-") and starts[0] == len(INDENT)
        header = lines[k - 1]
        assert [s for s in starts if s < len(header) and header[s] != " " and header[s - 2:s] == "  "
                ] == starts, (header, starts)
        counts.append(aligned_rows(lines[k + 1:], starts, INDENT))
    assert counts == [2, 1], (counts, out.stdout)
    assert aligned_rows(["   a     b", "   long prose that runs on"], [3, 9], INDENT) == 1  # the rule's control


def test_the_demo_transformer_proves_only_the_zeros_it_is_about():
    """Friction 7: the demo spent 24 s of its 40 in one showcase, the tiny transformer's correct
    backward, whose referee proved 32 zero gradients at 30 digits, 24 of them incidental (the
    embedding rows of tokens and positions the sequence never used). The showcase now uses every
    token and position once: its only exact zeros are the key biases' (what it is about). The
    negative control: the transformer's default problem still has the incidental ones."""
    from gradcheck._demo.showcases import _transformer_problem
    from gradcheck.examples.transformer import loss_and_grads, make_problem

    params, ids, targets, cfg = _transformer_problem()
    _, grads = loss_and_grads(params, ids, targets, cfg)
    zero = {name: g.size for name, g in grads.items() if np.abs(g).max() < 1e-12}  # true zeros, up to round-off
    assert zero == {"b0.bk": 4, "b1.bk": 4}, zero
    assert not any((g == 0).any() for name, g in grads.items() if name.endswith("_emb"))
    default, ids0, targets0, cfg0 = make_problem()
    _, grads0 = loss_and_grads(default, ids0, targets0, cfg0)
    assert sum(int((g == 0).sum()) for name, g in grads0.items() if name.endswith("_emb")) == 24
