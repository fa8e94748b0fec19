"""Low-precision subject kernels (C, through cffi) and the definitions that judge them.

The public path of ``gradcheck._lowp.subjects`` (where the code and its documentation live):
two bfloat16 disputes with a known answer, a rotary embedding (:func:`rope_fast`,
:func:`rope_reference`, :func:`rope_math`, :func:`rope_inputs`) and a matrix-vector product
(:func:`matvec_fast`, :func:`matvec_reference`, :func:`matvec_math`, :func:`matvec_inputs`),
and the C rounding to bfloat16 (:func:`bf16_round_c`).
"""
from __future__ import annotations

from ._lowp.subjects import bf16_round_c as bf16_round_c
from ._lowp.subjects import matvec_fast as matvec_fast
from ._lowp.subjects import matvec_inputs as matvec_inputs
from ._lowp.subjects import matvec_math as matvec_math
from ._lowp.subjects import matvec_reference as matvec_reference
from ._lowp.subjects import rope_fast as rope_fast
from ._lowp.subjects import rope_inputs as rope_inputs
from ._lowp.subjects import rope_math as rope_math
from ._lowp.subjects import rope_reference as rope_reference

__all__ = ["rope_fast", "rope_reference", "rope_math", "rope_inputs",
           "matvec_fast", "matvec_reference", "matvec_math", "matvec_inputs", "bf16_round_c"]
