"""Screening (feature): every entry of a large gradient in O(log N) evaluations of f.

In: ``f``, ``x`` and a claimed gradient, as ``check`` takes them. Out: a ``Report`` whose
cleared entries are ``SCREENED`` with a per-entry ``detection_limit``, whose localized
entries carry ``check``'s entry-wise verdicts.

Modules, in the order a screen uses them: ``_partition`` (sign draws, blocks),
``_directional`` (central differences along a block, the step search; the estimate and its
bound are THE Richardson estimator's, the round-off THE model's, from ``gradcheck._differences``), ``_complex`` (the complex-step probe, its evaluations on the layer with a complex working copy of ``x``, and its verification),
``_engines`` (the jobs along many directions as blocks of points on the evaluation layer's
runners: serial, processes, executor, compiled, and the layer's adaptive ``auto``), ``_measure`` (blocks to
estimates, the budget), ``_bisect`` (the bisection driver), ``_prepare`` (f at x, the
claim, the private copy: the parts ``check`` has too are its prepare's, ``gradcheck._pipeline.prepare``), ``_entrywise`` (check's judgement of localized entries),
``_exact`` (exact directional derivatives of blocks at arbitrary precision, ``exact=``),
``_limit`` and ``_words`` (detection limit, miss probability, the report's words),
``_assemble`` (the report), ``_budget`` (evaluations or seconds), and ``_api`` (the public
:func:`screen`).

Builds on the stages of ``check`` (backends, the evaluation layer and the entry-wise differences, the pipeline's
prepare and judge, the report); nothing in those stages imports this package.
Must not import: the other features (``_models`` imports it, not the reverse), the negative
controls, the demo, the command line (``gradcheck.mp`` only inside the exact path).
"""
# ``screen`` is the public name; the others are for gradcheck._models, which screens a whole
# model as the concatenation of its parameters (the screen's algorithm over another grouping).
from ._api import DEFAULT_DRAWS as DEFAULT_DRAWS
from ._api import Screened as Screened
from ._api import run_screen as run_screen
from ._api import screen as screen
from ._assemble import Looked as Looked
from ._assemble import State as State
from ._assemble import looked_in as looked_in
from ._assemble import merge_looks as merge_looks
from ._assemble import screened_limits as screened_limits
from ._bisect import Bisection as Bisection
from ._bisect import Node as Node
from ._budget import parse_budget as parse_budget
from ._limit import Seen as Seen
from ._limit import describe as describe
from ._limit import sentence as sentence
from ._limit import upward32 as upward32
from ._measure import BudgetExhausted as BudgetExhausted
from ._measure import Measurer as Measurer
from ._prepare import FlatPrepared as FlatPrepared
from ._prepare import prepare_flat as prepare_flat
from ._words import run_notes as run_notes

__all__ = ["screen"]
