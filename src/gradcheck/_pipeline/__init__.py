"""The pipeline: the stages wired together into :func:`gradcheck.check`.

In: ``f``, ``x``, a claim and the options. Out: a :class:`~gradcheck.Report` (a
:class:`~.inputs.MultiReport` for several inputs). ``check`` adapts ``f`` through its backend,
differences it on an engine (with checkpoint and progress), checks determinism and input
mutation, then ``judge`` runs classify -> refine -> adjudicate and the report is built.
Must not import: any feature (``_models``, ``_sweeps``, ``_screen``, ``_orders``), the negative
controls (``_controls``), the demo, the command line or the pytest plugin.
"""
