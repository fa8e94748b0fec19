"""Engines: how the 2N evaluations of a check run (stage 2, after the backend adapts ``f``).

An engine is built for one check (one function, one private working array) and answers
one question: ``differences(flat_indices, steps) -> (f_plus, f_minus, denominator)``,
the reduced function values at ``x +- h e_i`` and the realized ``(x+h) - (x-h)``.
Everything else (verdicts, refinement, reports) is shared and knows nothing of engines.

In: a :class:`CheckProblem` (f, the private working array, the reduced evaluation, the
backend). Out: differences. Modules: ``_base`` (the problem, the protocol, the choice of
engine), ``_differences`` (central differences, steps, slope and noise: the arithmetic every
engine shares), ``_serial``, ``_batched``, ``_compiled``, ``_processes``, ``_executor``
(one per engine, loaded by name when chosen), ``_chunks`` (work units of the parallel
engines), ``_fork`` (fork helpers).
Must not import: the stages after it (classify, refine, adjudicate, report, pipeline), nor
any feature.
"""
from __future__ import annotations

from ._base import ENGINE_NAMES as ENGINE_NAMES
from ._base import CheckProblem as CheckProblem
from ._base import Choice as Choice
from ._base import Declined as Declined
from ._base import Engine as Engine
from ._base import choose_engine as choose_engine
from ._base import select_engine as select_engine
from ._executor import ExecutorOptions as ExecutorOptions

__all__ = ["ENGINE_NAMES", "CheckProblem", "Choice", "Declined", "Engine", "ExecutorOptions", "choose_engine",
           "select_engine"]
