"""Screening (feature): every entry of a large gradient in O(log N) evaluations of f.

In: ``f``, ``x`` and a claimed gradient, as ``check`` takes them. Out: a ``Report`` whose
cleared entries are ``SCREENED`` with a per-entry ``detection_limit``, whose localized
entries carry ``check``'s entry-wise verdicts.

Modules, in the order a screen uses them: ``_partition`` (sign draws, blocks),
``_directional`` (central differences along a block, Richardson with bounds, the step
search), ``_complex`` (the complex-step probe and its verification), ``_probe`` and
``_engines`` (the jobs along many directions as points on the evaluation layer's runners:
serial, processes, executor, compiled; screen's adaptive ``auto``), ``_measure`` (blocks to
estimates, the budget), ``_bisect`` (the bisection driver), ``_prepare`` (f at x, the
claim, the private copy), ``_entrywise`` (check's judgement of localized entries),
``_exact`` (exact directional derivatives of blocks at arbitrary precision, ``exact=``),
``_limit`` and ``_words`` (detection limit, miss probability, the report's words),
``_assemble`` (the report), ``_budget`` (evaluations or seconds), and ``_api`` (the public
:func:`screen`).

Builds on the stages of ``check`` (backends, the evaluation layer and the entry-wise differences, the pipeline's
prepare and judge, the report); nothing in those stages imports this package.
Must not import: the other features (``_models`` imports it, not the reverse), the negative
controls, the demo, the command line (``gradcheck.mp`` only inside the exact path).
"""
from ._api import screen as screen
from ._api import screen_param as screen_param

__all__ = ["screen", "screen_param"]
