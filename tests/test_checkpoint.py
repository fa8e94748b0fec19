"""Checkpoint / resume: an interrupted check resumes to the report an uninterrupted one
gives, bit for bit; the file is atomic, pickle-free, and refuses a different check."""
from __future__ import annotations

import concurrent.futures as cf
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from optional_deps import needs

from gradcheck import Config, FunctionError, check
from gradcheck._differences import CentralDifferences, steps_for
from gradcheck._evaluate import ExecutorOptions, ExecutorRunner
from gradcheck._runtime import checkpoint as _checkpoint
from gradcheck._runtime.checkpoint import Checkpoint, CheckpointError, CheckpointMismatchError, open_checkpoint
from gradcheck.backends import NumpyBackend
from gradcheck.engines import CheckProblem, select_engine

needs_cloudpickle = needs("cloudpickle")  # the executor engine ships f with it

ARRAYS = ("analytic", "numeric", "noise", "tolerance", "codes", "refined", "causes", "exact",
          "digits", "left", "right")




class ExecutorEngine(CentralDifferences):
    """The executor engine as check runs it: the entry-wise pass on the executor runner (its
    counters, ``stats`` and ``slots``, read through)."""

    def __init__(self, problem, options):
        super().__init__(ExecutorRunner(problem, options), problem.work)

    def __getattr__(self, name):
        return getattr(self.runner, name)

def _settled(report) -> dict:
    """The report as a dict without what may differ between equal runs (timings, the
    engine's name, auto's note on why it picked it)."""
    d = report.to_dict()
    del d["seconds"], d["engine"]
    d["adjudication"].pop("seconds", None)
    d["notes"] = [re.sub(r"[0-9.e+-]+ s\b", "<t> s", n) for n in d["notes"]
                  if not n.startswith("executor:")]
    return d


def assert_same_report(got, want) -> None:
    for key in ARRAYS:
        a, b = getattr(got, key), getattr(want, key)
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), key
    assert _settled(got) == _settled(want)


X = np.random.default_rng(0).standard_normal((6, 7))


def f(x):
    return float((np.sin(x) * x**2).sum())


def grad(x):
    return np.cos(x) * x**2 + 2 * x * np.sin(x)


def buggy(x):
    g = grad(x)
    g[2, 3] *= 1 + 1e-4  # a planted bug: the step study runs, and is checkpointed too
    return g


# -- interrupted in a subprocess, then resumed ------------------------------------------------
_SCRIPT = textwrap.dedent(
    """
    import concurrent.futures as cf, json, sys, time
    import numpy as np
    from gradcheck import check
    from gradcheck._runtime.checkpoint import Checkpoint

    CALLS = [0]

    def f(x):
        CALLS[0] += 1
        time.sleep(0.002)
        return float((np.sin(x) * x**2).sum())

    def grad(x):
        g = np.cos(x) * x**2 + 2 * x * np.sin(x)
        g[4, 5] *= 1 + 1e-4
        return g

    def main(mode, engine, out, path):
        x = np.random.default_rng(1).standard_normal((15, 20))
        kwargs = dict(adjudicate=False)
        if mode != "plain":
            kwargs["checkpoint"] = Checkpoint(path, interval=0.05)
        if engine == "executor":
            # Threads: a SIGTERM'd parent would orphan a process pool's workers (they
            # hold the pipes open); the engine's code path is the same.
            with cf.ThreadPoolExecutor(max_workers=2) as ex:
                report = check(f, x, grad, executor=ex, **kwargs)
        else:
            report = check(f, x, grad, engine="serial", **kwargs)
        arrays = {k: getattr(report, k) for k in %(arrays)r}
        np.savez(out + ".npz", **arrays)
        with open(out + ".json", "w") as fh:
            json.dump({"calls": CALLS[0], "report": report.to_dict()}, fh)

    if __name__ == "__main__":
        main(*sys.argv[1:])
    """
) % {"arrays": ARRAYS}


def _run(script, *args, **kwargs):
    return subprocess.run([sys.executable, str(script), *map(str, args)], capture_output=True,
                          text=True, timeout=120, **kwargs)


def _load_run(out):
    with np.load(str(out) + ".npz", allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    with open(str(out) + ".json") as fh:
        meta = json.load(fh)
    d = meta["report"]
    del d["seconds"], d["engine"]
    d["notes"] = [n for n in d["notes"] if not n.startswith("executor:")]
    return arrays, d, meta["calls"]


@pytest.fixture(scope="module")
def script(tmp_path_factory):
    folder = tmp_path_factory.mktemp("resume")
    path = folder / "subject.py"
    path.write_text(_SCRIPT)
    return path


@pytest.fixture(scope="module")
def uninterrupted(script):
    """The reference: the same check, serial, no checkpoint, never interrupted."""
    out = script.parent / "plain"
    res = _run(script, "plain", "serial", out, script.parent / "unused.npz")
    assert res.returncode == 0, res.stderr
    return _load_run(out)


def _done_entries(path) -> int:
    with np.load(path, allow_pickle=False) as z:
        return int(sum(z[k].sum() for k in z.files if k.endswith("_done")))


@pytest.mark.parametrize("engine", ["serial", pytest.param("executor", marks=needs_cloudpickle)])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupted_then_resumed_equals_uninterrupted(script, uninterrupted, tmp_path, engine, sig):
    """Ctrl-C (SIGINT: KeyboardInterrupt, what finished is saved) or SIGTERM (the process
    dies on the spot: what was saved last) in the middle of a check; the same command run
    again resumes, evaluates only what is missing, and writes the uninterrupted report,
    every array bit for bit."""
    ck = tmp_path / "check.npz"
    proc = subprocess.Popen([sys.executable, str(script), "resume", engine, str(tmp_path / "first"), str(ck)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not ck.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.15)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0, "the check finished before it could be interrupted"
    if sig == signal.SIGINT:
        assert "KeyboardInterrupt" in err
    else:
        assert proc.returncode == -signal.SIGTERM
    saved = _done_entries(ck)  # loads: the file is whole whatever the instant of the kill
    assert saved > 0
    if sig == signal.SIGINT:  # an orderly exit leaves no temporary file
        assert not [p for p in os.listdir(tmp_path) if ".tmp-" in p]

    res = _run(script, "resume", engine, tmp_path / "second", ck)
    assert res.returncode == 0, res.stderr
    arrays, report, calls = _load_run(tmp_path / "second")
    want_arrays, want_report, want_calls = uninterrupted
    for key in ARRAYS:
        assert arrays[key].dtype == want_arrays[key].dtype
        assert arrays[key].tobytes() == want_arrays[key].tobytes(), key
    assert report == want_report
    if engine == "serial":  # f runs in this process: the resumed run skipped what was saved
        assert calls == want_calls - 2 * saved
    assert not ck.exists()  # a finished check deletes its checkpoint
    assert not [p for p in os.listdir(tmp_path) if ".tmp-" in p]  # stale temporaries cleared


# -- in process --------------------------------------------------------------------------
class _Interrupt:
    """An f that raises KeyboardInterrupt at its ``at``-th call (as Ctrl-C would)."""

    def __init__(self, at: int | None):
        self.at, self.calls = at, 0

    def __call__(self, x):
        self.calls += 1
        if self.at is not None and self.calls == self.at:
            raise KeyboardInterrupt
        return f(x)


@needs_cloudpickle
def test_serial_interrupted_then_resumed_on_an_executor(tmp_path):
    """A check interrupted on serial resumes on an executor (same arithmetic) and gives
    the uninterrupted report; the resumed run evaluates only what was missing."""
    want = check(f, X, buggy, engine="serial", adjudicate=False)
    ck = Checkpoint(tmp_path / "c.npz", interval=0.0)
    g = _Interrupt(at=40)
    with pytest.raises(KeyboardInterrupt):
        check(g, X, buggy, engine="serial", adjudicate=False, checkpoint=ck, name="f")
    assert 0 < _done_entries(ck.path) < X.size
    g.at = None
    with cf.ThreadPoolExecutor(2) as ex:
        got = check(g, X, buggy, executor=ex, adjudicate=False, checkpoint=ck, name="f")
    assert_same_report(got, want)


def _problem(fn, x, executor=None):
    work = np.array(x, order="C", copy=True)
    return CheckProblem(f=fn, work=work, evaluate=lambda: float(fn(work)), backend=NumpyBackend(),
                        cotangent=None, executor=executor)


@needs_cloudpickle
def test_executor_chunks_are_saved_as_they_finish(tmp_path):
    """On the executor engine every finished chunk reaches the file (interval 0); after a
    Ctrl-C in the checking process, a resume asks the executor only for the rest."""
    problem = _problem(f, X)
    idx, steps = np.arange(X.size), steps_for(X.reshape(-1), 6e-6)
    want = select_engine("serial", problem)[0].differences(idx, steps)
    ck = Checkpoint(tmp_path / "c.npz", interval=0.0)
    kw = dict(x=problem.work, config=Config(), cotangent=None, f=f, backend=problem.backend, vectorized=False)

    def interrupt(done):
        if done >= 12:
            raise KeyboardInterrupt

    with cf.ThreadPoolExecutor(2) as ex:
        engine = ExecutorEngine(problem, ExecutorOptions(ex, chunk_entries=4))
        saved = open_checkpoint(ck, engine, **kw)
        with pytest.raises(KeyboardInterrupt):
            saved.differences(idx, steps, progress=interrupt)
        done = _done_entries(ck.path)
        assert 12 <= done < X.size
        engine = ExecutorEngine(problem, ExecutorOptions(ex, chunk_entries=4))
        resumed = open_checkpoint(ck, engine, **kw)
        assert resumed.resumed_entries == done
        got = resumed.differences(idx, steps)
    assert engine.stats.entries == X.size - done
    for w, g in zip(want, got):
        assert g.tobytes() == w.tobytes()


def test_a_finished_checkpoint_is_deleted_unless_kept(tmp_path):
    """Default: deleted on success. keep=True: kept, and a rerun rebuilds the same report
    without differencing again."""
    path = tmp_path / "c.npz"
    want = check(f, X, buggy, engine="serial", adjudicate=False)
    got = check(f, X, buggy, engine="serial", adjudicate=False, checkpoint=str(path))
    assert_same_report(got, want)
    assert not path.exists()
    counted = _Interrupt(at=None)
    check(counted, X, buggy, engine="serial", adjudicate=False, checkpoint=Checkpoint(path, keep=True))
    assert path.exists()
    first = counted.calls
    again = check(counted, X, buggy, engine="serial", adjudicate=False, checkpoint=Checkpoint(path, keep=True),
                  name="f")
    assert_same_report(again, want)
    assert counted.calls - first == 2  # f at x, and the determinism re-check: nothing else


def test_an_error_keeps_the_progress(tmp_path):
    """When f raises, the checkpoint keeps what was differenced before."""
    path = tmp_path / "c.npz"

    def fails(x):
        if x[3, 3] != X[3, 3]:
            raise ValueError("planted")
        return f(x)

    with pytest.raises(FunctionError):
        check(fails, X, grad, engine="serial", checkpoint=Checkpoint(path, interval=0.0))
    # Finished chunks before the failing entry's chunk (the failing chunk is not kept).
    assert 0 < _done_entries(path) <= np.ravel_multi_index((3, 3), X.shape)


def _batched_f(x):
    return np.array([f(r) for r in x]) if x.ndim == 3 else f(x)


@pytest.mark.parametrize("change, field", [
    (dict(x=X + np.eye(6, 7) * 1e-12), "x_sha256"),
    (dict(x=X[:, :6]), "shape"),
    # float32 x, precision-generic f: differenced on its float64 upcast, other values
    (dict(x=X.astype(np.float32)), "x_sha256"),
    (dict(x=X.astype(np.float32), f=lambda x: f(x.astype(np.float32))), "dtype"),  # f forces float32
    (dict(config=Config(rtol=2e-6)), "config_sha256"),
    (dict(config=Config(seed=1)), "config_sha256"),
    (dict(f=lambda x: float((np.sin(x) * x**3).sum())), "function_sha256"),
    (dict(f=_batched_f, engine="batched", vectorized=True), "arithmetic"),
])
def test_a_different_check_is_refused(tmp_path, change, field):
    """The file belongs to one check: another x, shape, dtype, config, function or
    engine arithmetic raises CheckpointMismatchError naming the differing field."""
    path = tmp_path / "c.npz"
    check(f, X, grad, adjudicate=False, checkpoint=Checkpoint(path, keep=True))
    x = change.get("x", X)
    claimed = grad(x.astype(np.float64)).astype(x.dtype)
    with pytest.raises(CheckpointMismatchError) as info:
        check(change.get("f", f), x, claimed, config=change.get("config"), engine=change.get("engine", "auto"),
              vectorized=change.get("vectorized", False), adjudicate=False, checkpoint=str(path))
    assert field in info.value.differences
    assert field in str(info.value) and "delete the file" in str(info.value)


def test_the_same_function_written_again_is_accepted(tmp_path):
    """The digest is of f's code, not its identity: a fresh but identical function resumes."""
    path = tmp_path / "c.npz"
    make = lambda: (lambda x: float((np.sin(x) * x**2).sum()))  # noqa: E731
    check(make(), X, grad, adjudicate=False, checkpoint=Checkpoint(path, keep=True))
    check(make(), X, grad, adjudicate=False, checkpoint=Checkpoint(path, keep=True))


@pytest.mark.parametrize("content", ["garbage", "not-ours", "pickle", "bad-shapes"])
def test_a_damaged_or_foreign_file_is_refused(tmp_path, content):
    """Not a zip, an npz of something else, an object array (would need pickle), arrays
    of inconsistent lengths: CheckpointError, never a crash or an unpickle."""
    path = tmp_path / "c.npz"
    if content == "garbage":
        path.write_bytes(b"\x00not a zip file")
    elif content == "not-ours":
        np.savez(path, a=np.ones(3))
    elif content == "pickle":
        np.savez(path, header=np.array([{"format": "gradcheck-checkpoint"}], dtype=object))
    else:
        header = json.dumps({"format": "gradcheck-checkpoint", "version": 1, "passes": ["k"], "check": {}})
        np.savez(path, header=np.frombuffer(header.encode(), np.uint8), p0_done=np.ones(3, bool),
                 p0_fp=np.ones(2), p0_fm=np.ones(3), p0_den=np.ones(3))
    with pytest.raises(CheckpointError, match="delete the file"):
        check(f, X, grad, checkpoint=str(path))


def _header_bytes(header) -> np.ndarray:
    return np.frombuffer(json.dumps(header).encode(), np.uint8)


def _write_damaged(path, content) -> None:
    """A checkpoint file damaged or forged in one way (see the test below)."""
    ok = {"format": "gradcheck-checkpoint", "version": 1, "passes": ["k"], "check": {}}
    floats = dict(p0_done=np.ones(3, bool), p0_fp=np.ones(3), p0_fm=np.ones(3), p0_den=np.ones(3))
    if content == "empty":
        path.write_bytes(b"")
    elif content == "text":
        path.write_text("hello, not a checkpoint\n" * 4)
    elif content == "header-a-list":
        np.savez(path, header=_header_bytes([1, 2]))
    elif content == "passes-a-string":
        np.savez(path, header=_header_bytes(dict(ok, passes="abc")), **floats)
    elif content == "check-a-list":
        np.savez(path, header=_header_bytes(dict(ok, check=[])), **floats)
    elif content == "header-floats":
        np.savez(path, header=np.ones(4), **floats)
    elif content == "string-values":
        np.savez(path, header=_header_bytes(ok), **dict(floats, p0_fp=np.array(["a", "b", "c"])))
    elif content == "2d-values":
        np.savez(path, header=_header_bytes(ok), **dict(floats, p0_den=np.ones((3, 1))))
    else:
        raise AssertionError(content)


@pytest.mark.parametrize("content, words", [
    ("empty", "empty (0 bytes)"),
    ("text", "not an npz (zip) archive"),
    ("header-a-list", "not a gradcheck checkpoint"),
    ("passes-a-string", "'passes' is str"),
    ("check-a-list", "'check' is list"),
    ("header-floats", "header is a float64 array"),
    ("string-values", "'fp' is <U1"),
    ("2d-values", "'den' is float64 of shape (3, 1)"),
])
def test_a_malformed_file_is_refused_up_front(tmp_path, content, words):
    """An empty file, plain text, a header that is valid JSON of the wrong shape, arrays of
    the wrong dtype or rank: CheckpointError saying what is wrong, raised when the check
    opens the file, before any difference (f ran once, at x) -- never an EOFError,
    AttributeError, or a ValueError deep in the verdicts."""
    path = tmp_path / "c.npz"
    _write_damaged(path, content)
    calls = []

    def counted(x):
        calls.append(1)
        return f(x)

    with pytest.raises(CheckpointError, match="delete the file") as info:
        check(counted, X, grad, engine="serial", checkpoint=str(path))
    assert words in str(info.value)
    assert "pickle" not in str(info.value)
    assert len(calls) == 1


@pytest.mark.parametrize("where", ["missing-folder", "a-folder"])
def test_an_unwritable_path_is_refused_before_the_pass(tmp_path, where):
    """A checkpoint in a folder that does not exist (or a path that is a folder) fails
    when the check opens it, after the one evaluation at x, not after a whole pass."""
    path = tmp_path / "no" / "such" / "c.npz" if where == "missing-folder" else tmp_path
    calls = []

    def counted(x):
        calls.append(1)
        return f(x)

    with pytest.raises(CheckpointError, match="cannot write a checkpoint") as info:
        check(counted, X, grad, engine="serial", checkpoint=str(path))
    assert ("does not exist" if where == "missing-folder" else "is a folder") in str(info.value)
    assert len(calls) == 1
    assert os.listdir(tmp_path) == []  # no probe file left behind


def test_a_failed_write_leaves_the_old_file_whole(tmp_path, monkeypatch):
    """A write that fails half-way (disk full, a kill) leaves the previous checkpoint
    as it was, and no temporary file behind."""
    path = tmp_path / "c.npz"
    check(f, X, grad, adjudicate=False, checkpoint=Checkpoint(path, keep=True))
    before = path.read_bytes()
    real = np.savez

    def half(fh, **arrays):
        real(fh, **arrays)
        fh.truncate(100)
        raise OSError("no space left on device")

    monkeypatch.setattr(_checkpoint.np, "savez", half)
    saved = open_checkpoint(Checkpoint(path), select_engine("serial", _problem(f, X))[0], x=X, config=Config(),
                            cotangent=None, f=f, backend=NumpyBackend(), vectorized=False)
    with pytest.raises(OSError, match="no space"):
        saved.save()
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["c.npz"]


def test_stale_temporaries_of_dead_writers_are_removed(tmp_path):
    """A temporary file left by a writer that was killed is removed on the next open;
    one of a live process is not touched."""
    path = tmp_path / "c.npz"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    stale = tmp_path / f"c.npz.tmp-{dead}-abcd"
    live = tmp_path / f"c.npz.tmp-{os.getppid()}-abcd"
    stale.write_bytes(b"x")
    live.write_bytes(b"x")
    check(f, X, grad, adjudicate=False, checkpoint=str(path))
    assert not stale.exists() and live.exists()


def test_several_inputs_get_one_file_each(tmp_path):
    """check(f, (a, b), checkpoint=path) keeps one file per input (run.input0.npz, ...)."""
    a, b = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    r = check(lambda a, b: (a * b).sum(), (a, b), grad=(lambda a, b: b, lambda a, b: a),
              checkpoint=Checkpoint(tmp_path / "run.npz", keep=True))
    assert r.passed
    assert sorted(os.listdir(tmp_path)) == ["run.input0.npz", "run.input1.npz"]


def test_checkpoint_argument_is_validated():
    """A checkpoint that is neither a path nor a Checkpoint is a TypeError."""
    with pytest.raises(TypeError, match="path or a Checkpoint"):
        check(f, X, grad, checkpoint=3)
    with pytest.raises(ValueError, match="interval"):
        Checkpoint("x.npz", interval=-1)
