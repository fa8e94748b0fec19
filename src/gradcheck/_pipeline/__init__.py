"""The pipeline: the stages wired together into :func:`gradcheck.check`.

In: ``f``, ``x``, a claim and the options. Out: a :class:`~gradcheck.Report` (a
:class:`~.inputs.MultiReport` for several inputs). ``check`` adapts ``f`` through its backend,
differences it on an engine (with checkpoint and progress), checks determinism and input
mutation, then ``judge`` runs classify -> refine -> adjudicate and the report is built.
Modules, in the order ``check`` calls them: ``options`` (the keywords, validated once),
``prepare`` (backend, f(x), cotangent, claimed gradient, contract audit), ``difference``
(engine, checkpoint, steps, progress), ``sanity`` (determinism, drift, input mutation),
``judge`` (classify -> refine -> adjudicate), ``assemble`` (the Report: ``assemble_report`` is
also what ``check_params`` builds each name's Report with); ``check`` wires them;
``complex`` and ``inputs`` handle complex and several inputs, ``claims`` a claim given as a
function.
Must not import: any feature (``_models``, ``_sweeps``, ``_screen``, ``_orders``), the negative
controls (``_controls``), the demo, the command line or the pytest plugin.
"""
