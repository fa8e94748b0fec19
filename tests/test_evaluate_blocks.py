"""The evaluation layer's blocks (``Points.of_blocks``): the screen's points, run by the layer.

Consecutive points over the same index array are saved and put back once by the serial loop
(``serial.Run``), and from ``serial.KERNEL_MIN`` entries on written, checked and put back by the
one-pass kernels of ``_evaluate/loops.py``. Whatever the path: the values are the joined points'
(the general block loop's and every other runner's), bit for bit; ``f`` raising is the
FunctionError at the first entry of the block being run, "along a block of N entries"; a write
into a perturbed entry is the InputMutationError naming the block's entry; ``work`` is left
bit for bit as it was. Negative controls: an ``f`` that writes (planted) must be caught on both
paths, and a correct ``f`` must pass with the joined points' values.
"""
from __future__ import annotations

import numpy as np
import pytest

from gradcheck import FunctionError, InputMutationError
from gradcheck._evaluate import Points, SerialRunner, Target
from gradcheck._evaluate import serial as _serial

PATHS = ["numpy", "kernel"]


def jobs_of(work: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Two blocks, three points each (one block's index array shared by its points, as the
    screen's are), then a block of one point; the values in ``work``'s dtype."""
    rng = np.random.default_rng(7)
    flat = work.reshape(-1)
    out = []
    for idx, count in ((np.array([0, 3, 5, 6]), 3), (np.array([1, 2, 7, 9, 10]), 3), (np.array([4, 11]), 1)):
        for _ in range(count):
            out.append((idx, (flat[idx] + rng.standard_normal(idx.size)).astype(work.dtype)))
    return out


def target(f, work: np.ndarray) -> Target:
    return Target(f=f, work=work, evaluate=lambda: float(f(work)), backend=None)


@pytest.fixture(params=PATHS)
def path(request, monkeypatch):
    if request.param == "kernel":
        monkeypatch.setattr(_serial, "KERNEL_MIN", 1)
    return request.param


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_blocks_give_the_joined_points_values_and_leave_work_as_it_was(path, dtype):
    w = np.linspace(-1.0, 2.0, 12).reshape(3, 4).astype(dtype)
    work = w.copy()

    def f(x):
        return np.sum(np.sin(x) * np.arange(12).reshape(3, 4))

    jobs = jobs_of(work)
    runner = SerialRunner(target(f, work))
    got = runner.run(Points.of_blocks(jobs))
    joined = SerialRunner(target(f, work)).run(Points.of_blocks(jobs).joined(work.dtype))
    by_hand = []
    for idx, values in jobs:
        x = w.copy()
        x.reshape(-1)[idx] = values
        by_hand.append(float(f(x)))
    assert got.tobytes() == joined.tobytes() == np.array(by_hand).tobytes()
    assert runner.evaluations == len(jobs)
    assert work.tobytes() == w.tobytes()


def test_f_raising_is_located_at_the_block_being_run(path):
    w = np.linspace(-1.0, 2.0, 12)
    work = w.copy()
    calls = [0]

    def f(x):
        calls[0] += 1
        if calls[0] == 5:  # the second block's second point
            raise ZeroDivisionError("planted")
        return float(np.sum(x ** 2))

    with pytest.raises(FunctionError, match="ZeroDivisionError") as info:
        SerialRunner(target(f, work)).run(Points.of_blocks(jobs_of(work)))
    assert info.value.index == (1,) and "along a block of 5 entries" in str(info.value)
    assert work.tobytes() == w.tobytes()


@pytest.mark.parametrize("when", [1, 3, 6])
def test_a_write_into_a_perturbed_entry_is_caught(path, when):
    """The planted bug: from its ``when``-th call on, f nudges the entries that differ from x
    (the perturbed ones only, which the restore after the call would hide)."""
    w = np.linspace(-1.0, 2.0, 12)
    work = w.copy()
    calls = [0]

    def f(x):
        calls[0] += 1
        value = float(np.sum(x ** 2))
        if calls[0] >= when:
            moved = x != w
            x[moved] *= 1 + 1e-3
        return value

    with pytest.raises(InputMutationError, match=r"f wrote into .*block holding entry \((0|1)"):
        SerialRunner(target(f, work)).run(Points.of_blocks(jobs_of(work), who="f"))
    assert work.tobytes() == w.tobytes()


def test_other_runners_take_blocks_joined():
    """A runner other than serial runs the same blocks (joined) to the same bits."""
    from gradcheck._evaluate import ProcessesRunner, fork_available

    if not fork_available():
        pytest.skip("no fork")
    w = np.linspace(-1.0, 2.0, 12)
    work = w.copy()

    def f(x):
        return float(np.sum(np.tanh(x) * x))

    jobs = jobs_of(work)
    serial = SerialRunner(target(f, work)).run(Points.of_blocks(jobs))
    runner = ProcessesRunner(target(f, work), workers=2)
    try:
        pooled = runner.run(Points.of_blocks(jobs))
    finally:
        runner.close()
    assert pooled.tobytes() == serial.tobytes()
    assert work.tobytes() == w.tobytes()
