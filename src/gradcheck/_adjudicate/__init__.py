"""Stage 5, adjudicate: the exact derivative of the entries still in doubt (arbitrary precision).

In: a :class:`~gradcheck._core.judged.Judged` after the second look, and a
:class:`~.referee.Referee` for ``f`` at ``x``. Out: the same Judged with the doubtful entries
settled against exact values (or left as they were, with the reason), and the notes that
say what the referee did and why entries stayed UNCHECKED.
Modules: ``referee`` (exact derivatives through ``gradcheck.mp``, in parallel when many),
``doubt`` (which entries go to the referee; a disagreement with a confident finite
difference keeps the finite difference's verdict), ``notes`` (the words for the report).
Must not import: report, pipeline, features (``gradcheck.mp`` is imported when the referee runs).
"""
