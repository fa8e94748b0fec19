"""Low precision (float16, bfloat16, float32): its judgement in ``check``, and ``dispute``.

``plan`` is what ``check`` does with a float16/bfloat16 input (difference the exact float64
upcast when ``f`` allows it, judge the claim in ulps of its own dtype); ``dispute`` settles a
disagreement between low-precision kernels against the exact value at arbitrary precision,
``result`` is its :class:`~gradcheck.DisputeResult`; ``subjects`` holds the C subject kernels
(public as ``gradcheck.subjects``). Exact rounding and ulps are vocabulary: ``_core.formats``.
In: arrays in a low-precision format, a definition for the referee. Out: a plan for check, a
DisputeResult. It ranks after the report (a DisputeResult renders itself) and before the
pipeline (check uses the plan).
Must not import: the pipeline, any feature (``gradcheck.mp`` and the cffi kernels only inside
the functions that run them).
"""
