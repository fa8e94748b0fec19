"""A model's parameters: ``check_params`` (every entry of every named tensor) and the diagnosis.

In: a loss of a dict of named tensors and the claimed gradients by name. Out: a
``ParamsReport`` (one Report per name, a table of all names) with a ``Diagnosis`` in backward
order (one name failing alone, or everything before a point failing).
Uses the pipeline's judge and the report; with ``screen=True`` it screens each name
(``gradcheck._screen``: the one feature this feature imports).
Must not import: the other features, the negative controls, the demo, the command line.
"""
