"""Stage 6, report: what a check says, in every form a user reads it.

In: the judged arrays of a check (through :class:`~.report.Report`, built by the pipeline),
or another result (several inputs, a model, a sweep, a dispute) for the HTML and plot views.
Out: the Report (data and queries), its text (``text``), JSON (``serialize``), HTML
(``html/``) and PNG heat maps (``plot``, the only module that imports matplotlib, inside its
functions), and where failing entries sit in words (``layout``).
Must not import: engines, the judging stages' machinery (refine, adjudicate), the pipeline,
any feature; nor matplotlib at import time.
"""
