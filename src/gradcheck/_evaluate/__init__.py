"""The evaluation layer (stage 2): points in, reduced values out.

Every feature needs the same thing from ``f``: its reduced value at ``x`` with some entries
replaced. Point generators (the entry-wise pass and second look of ``check`` and
``check_params``: :mod:`gradcheck._differences`; the colouring rounds of ``independent_axes``:
:mod:`gradcheck._axes`; the points along a direction of the adjoint, Hessian and Taylor tests:
``gradcheck._differences.along``; the screen's blocks along signed directions:
``gradcheck._screen``; and, as it moves onto this layer, low-precision differencing) say WHICH points; this layer owns everything about RUNNING them,
the way scipy's ``optimize._numdiff`` hands its points to one injected ``workers`` map.

The API
    ``Points(idx, values, starts=None, width=1, labels=(...), kind=None)``
        A batch of points: point ``j`` is ``x`` with the flat entries
        ``idx[starts[j]:starts[j+1]]`` set to ``values[...]`` (``starts=None``: one entry per
        point). Points come in groups of ``width`` a runner never splits (an entry's ``+h`` and
        ``-h``); chunks, progress and counts are in groups. ``labels`` name a point's
        perturbation in errors (``"+h"``, ``"along a block of {count} entries"``; with ``kind``
        ``"coloured"``: ``"+h, coloured: 8 entries perturbed together"``).
        ``Points.pairs(idx, plus, minus)`` is the entry-wise pass's; ``Points.of_blocks(jobs, who)``
        the screen's: one point per ``(idx, values)`` job, each keeping its own arrays
        (:class:`Blocks`; consecutive jobs over the same index array are saved and restored
        once by the serial loop, the other runners take them joined); ``kind=ALONG``: points that
        move the whole input along a direction (the orders' tests), an error named by the label
        alone (``"at x + h d (h = 0.01)"``), at no entry.
    ``Points.shifted(Shift(step, size))``
        Points that move EVERY entry by its step (``x_i +- h_i``, ``h_i = steps_for(x_i, step)``,
        THE step rule): no index or value array, rebuilt where they run (a worker included).
    ``Target(f, work, evaluate, backend, cotangent=None, vectorized=False, executor=None, param=None, slices=None)``
        What is evaluated: ``evaluate()`` is the reduced ``f`` (one scalar: ``f`` itself, or
        ``v . f`` with ``cotangent``) at the current contents of ``work``, the private working
        copy of ``x`` (or a parameter array the caller restores bit for bit). With ``slices``
        (:class:`Slices`, a per-slice reduction: the colouring's ``v_b . f_b``), ``evaluate()``
        is ``f``'s output and each perturbed entry is answered with its own slice's value; with
        ``slices=PerPoint(reduce, k, shape)``, each point is answered with the ``k`` values of
        ``reduce(f's output)`` (several reductions of one evaluation).
    ``choose(name, target, evaluations=None, timing=True) -> Choice(runner, reason, evaluations)``
        The runner by name, or ``"auto"``: THE automatic choice (one timer, :func:`time_call`),
        its reason for the report and the calls of ``f`` it spent timing (``timing=False``: none;
        ``auto`` then picks executor, batched or serial).
    ``Adaptive(target, fork_safe, make=None, clock=None)``
        The same chooser as a runner, for a generator that asks for many batches (the screen):
        serial while it times the batches, then compiled or processes for a batch that pays
        (:func:`batch_choice`, from the median seconds per evaluation), a pool kept only if its
        first batch was faster; ``why``: the choice in words. Every timing reads one clock.
    ``at_x(evaluate, where="base", work=None)``
        ``f`` at the working copy itself (``f(x)``, no entry perturbed): its exception a
        FunctionError named ``where``, a write into ``work`` an InputMutationError.
    ``runner.run(points, progress=None) -> values``
        One float64 per point, in order (a target with ``slices``: one per entry set, in the
        order of ``points.idx``, a shift's entries in flat order; ``PerPoint``: ``k`` per
        point). ``progress(groups done)``. ``runner.name``, ``runner.notes`` (for the report),
        ``runner.evaluations`` (points run), ``runner.close(terminate=False)``.

What every runner guarantees
    The user's arrays are never perturbed (``work`` is restored in ``finally``, or only copies
    are perturbed); a write by ``f`` into its input is :class:`~gradcheck.InputMutationError`
    (the perturbed entries after each call, the whole copy after each chunk: one ``same_bits``
    rule); ``f`` raising is :class:`~gradcheck.FunctionError` at the first entry of the first
    failing point, named by its label, as serial would raise it; a dead worker process is
    :class:`~gradcheck.WorkerDiedError`, never a raw ``BrokenProcessPool``; Ctrl-C kills and
    joins every worker process before it propagates; and the values are serial's, bit for
    bit, for a deterministic ``f`` (batched: up to ``f``'s own batch-vs-single rounding).

Runners (one module each)
    ``serial``     any Python callable: in-place perturb / restore on ``work`` (:func:`run_here`,
                   the one loop, also what every worker runs on its copy; a screen's large
                   blocks in one pass of the kernels of :mod:`.loops` per evaluation);
    ``batched``    ``f`` takes a leading batch axis: many points per call, memory bounded;
    ``compiled``   ``f`` is a numba ``@njit`` or a cffi C function: a ``prange`` loop over
                   points in a numba kernel (:mod:`.loops`), each thread perturbing its own copy
                   (per-slice: the kernel stores each point's output, reduced from Python);
    ``processes``  chunks of points on one fork pool (:mod:`.fork`: the one pool owner, also
                   :func:`fork_map` for the referee);
    ``executor``   chunks of points through any ``concurrent.futures.Executor`` (dask
                   included), the target shipped once per worker, retries (:class:`ExecutorOptions`).

Must not import: the point generators, the judging stages (classify, refine, adjudicate),
the report, the pipeline, any feature.
"""
from . import loops as loops
from .answers import answer as answer
from .answers import picklable as picklable
from .auto import RUNNER_NAMES as RUNNER_NAMES
from .auto import Adaptive as Adaptive
from .auto import Choice as Choice
from .auto import Declined as Declined
from .auto import auto_decision as auto_decision
from .auto import auto_reason as auto_reason
from .auto import batch_choice as batch_choice
from .auto import choose as choose
from .auto import make_runner as make_runner
from .auto import time_call as time_call
from .batched import BatchedRunner as BatchedRunner
from .compiled import DTYPES as DTYPES
from .compiled import CompiledRunner as CompiledRunner
from .compiled import kind_of as kind_of
from .compiled import numpy_backend as numpy_backend
from .compiled import unsupported as compiled_refusal
from .executor import ChunkFailedError as ChunkFailedError
from .executor import ExecutorOptions as ExecutorOptions
from .executor import ExecutorRunner as ExecutorRunner
from .executor import ExecutorStats as ExecutorStats
from .fork import ForkPool as ForkPool
from .fork import WorkerDied as WorkerDied
from .fork import fork_available as fork_available
from .fork import fork_hazard as fork_hazard
from .fork import fork_map as fork_map
from .fork import usable_cores as usable_cores
from .points import ALONG as ALONG
from .points import Blocks as Blocks
from .points import Points as Points
from .points import Shift as Shift
from .points import steps_for as steps_for
from .processes import ProcessesRunner as ProcessesRunner
from .serial import SerialRunner as SerialRunner
from .serial import run_here as run_here
from .target import PerPoint as PerPoint
from .target import Runner as Runner
from .target import Slices as Slices
from .target import Target as Target
from .target import at_x as at_x
from .target import flat_handle as flat_handle

__all__ = ["ALONG", "RUNNER_NAMES", "Adaptive", "BatchedRunner", "Blocks", "Choice", "ChunkFailedError", "CompiledRunner", "DTYPES", "Declined",
           "ExecutorOptions", "ExecutorRunner", "ExecutorStats", "ForkPool", "PerPoint", "Points", "ProcessesRunner",
           "Runner", "SerialRunner", "Shift", "Slices", "Target", "WorkerDied", "answer", "at_x", "auto_decision",
           "auto_reason", "batch_choice", "choose", "compiled_refusal", "flat_handle", "fork_available", "fork_hazard", "fork_map",
           "kind_of", "loops", "make_runner", "numpy_backend", "picklable", "run_here", "steps_for", "time_call",
           "usable_cores"]
