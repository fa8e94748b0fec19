"""Stage 3, classify: one verdict per entry from its first central difference.

In: claimed values, numeric values (the differences' slopes) and their round-off noise,
with the rule's settings (``rule_of(config)``). Out: verdict codes (and tolerances).
``rule`` is the verdict rule in plain numpy, the reference; ``kernel`` is the same rule as
one fused numba pass for large arrays, equal to the reference bit for bit (the numpy rule
below its size threshold).
Must not import: engines, the later stages (refine, adjudicate, report, pipeline), features.
"""
