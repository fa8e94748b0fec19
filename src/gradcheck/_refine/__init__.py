"""Stage 4, refine: a second look at the suspicious entries, with more differences.

In: a :class:`~gradcheck._core.judged.Judged` after classify, and a differencer (positions,
steps -> differences). Out: the same Judged, updated in place (numeric values, noise,
verdicts, causes, one-sided slopes), and the evaluations spent.
Modules: ``retry`` (a step that left f's domain), ``roundoff`` (f's own round-off, measured,
when it is far above its dtype's), ``second_look`` (which entries are studied; the record of
differences), ``study`` (the step study: several steps, Richardson), ``quick`` (the quick
look at a noisy PASS), ``kink`` (one-sided slopes).
Must not import: the referee (``_adjudicate``), report, pipeline, features.
"""
