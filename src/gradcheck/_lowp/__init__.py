"""Low precision (float16, bfloat16, float32): its judgement in ``check``, and ``dispute``.

In ``check``: ``plan`` is what ``check`` does with a float16/bfloat16/float32 input (difference
the exact float64 upcast when ``f`` allows it, judge the claim in ulps of its own dtype; a
no-op for float64); ``float32`` says which of the two float32 checks applies (a
precision-generic ``f``, or one that computes in float32 whatever it is given) and measures
the claim's own float32 rounding; ``f32steps`` differences a forced-float32 ``f`` in float32
with Richardson extrapolation; ``forced64`` routes a float64 input to an ``f`` that computes
in float32 through the same steps.
``dispute`` settles a disagreement between low-precision kernels against the exact value:
``dispute_inputs`` (candidates and inputs checked up front), ``dispute_exact`` (the exact
values: the exact kernels of ``gradcheck.mp`` for contractions, mpmath otherwise),
``dispute_condition`` (each output's sensitivity to its inputs, from exact derivatives),
``dispute_bound`` (the allowance: what a working precision must lose there, and the bound),
``dispute_measure`` (ulps, correct rounding, figures), ``dispute_gradient`` (``of="gradient"``,
backward kernels through ``gradcheck.mp``'s reverse mode), ``dispute_timing`` (speed next to
accuracy); ``result`` is its :class:`~gradcheck.DisputeResult`; ``subjects`` holds the C
subject kernels (public as ``gradcheck.subjects``), ``definitions`` precision-generic
definitions of common kernels, ``kernel_inputs`` / ``kernel_table`` / ``kernel_table_torch``
the verdict table's real and naive kernels (tests, benchmarks, docs). Exact rounding and
ulps are vocabulary: ``_core.formats``.
In: arrays in a low-precision format, a definition for the referee. Out: a plan for check, a
DisputeResult. It ranks after the report (a DisputeResult renders itself) and before the
pipeline (check uses the plan).
Must not import: the pipeline, any feature (``gradcheck.mp`` and the cffi kernels only inside
the functions that run them).
"""
