"""Shape sweeps: one check per shape, and the pattern in which shapes fail.

In: a function (or a factory of one per shape), a grid of shapes. Out: a ``SweepReport``
(``sweep``) whose rule says which shapes fail ("both m and n odd", ``pattern``) and where in
the tensor they fail (``gradcheck._report.layout``).
Must not import: the other features, the negative controls, the demo, the command line.
"""
