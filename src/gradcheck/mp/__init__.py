"""Arbitrary-precision evaluation of unmodified numpy code, and exact derivatives from it.

``to_mp`` turns a float array into an object array of :class:`MPFloat` holding the same
values exactly; numpy's object-dtype loops then run ``@``, ``einsum``, ``np.tanh``, ``sum``,
``var``, indexing and broadcasting at arbitrary precision. ``evaluate`` runs ``f`` at a
precision of its own and refuses to trust a result that dropped to float on the way
(:class:`NotAdjudicable` with a :class:`Reason`). ``mp_derivative`` gives one entry's exact
derivative with its certified digits and its one-sided derivatives. mpmath uses gmpy2 when it
is installed (:func:`backend`).

Each evaluation, derivative and dispute computes in a private mpmath context: concurrent
ones in other threads, at other precisions, and code that changes ``mpmath.mp`` cannot change
its result, and gradcheck never changes mpmath's global precision. Outside them, ``MPFloat``
arithmetic rounds to ``mpmath.mp`` as any mpmath number does (``mpmath.workdps`` scopes it).
A definition that calls mpmath functions itself takes them from :func:`context` (the
running computation's context, at its precision).

Contractions (``@``, ``np.dot``, ``np.einsum``, ``np.sum``, ``np.cumsum``, ``np.convolve``,
...) of values that float64 holds exactly (low-precision inputs, exact constants) are
computed exactly by numba kernels and rounded once (``_exactsum``: a long accumulator;
``_vocabulary``: which numpy calls, reduced to the kernels; ``_exact``: the hooks, and the
probe that runs a definition made only of such contractions without leaving float arrays).

This package imports mpmath; ``import gradcheck`` does not import it. Besides the public names
(``__all__``), gradcheck's own low-precision dispute reaches the exact arithmetic through here:
``owned`` (a private context), ``to_mp_in``, ``run_checked``, the exact kernels' ``probe`` and
its stand-in ``Expansions``, and the reverse sweep ``mp_vjp``.
Modules: ``_scalar`` (:class:`MPFloat`), ``_complex`` (``MPComplex``), ``_array`` (the ufuncs
numpy has no object loop for), ``_convert`` (exact conversion in, one rounding out),
``_context`` (private precision per operation; :func:`context`), ``_evaluate`` (run ``f``, refuse a result
that left mpmath), ``_errors`` (:class:`Reason`), ``_derivative`` (one entry's exact
derivative), ``_reverse`` (``mp_vjp``: exact gradients by reverse mode).
In: float arrays and unmodified numpy code. Out: exact values and derivatives.
Must not import: anything of gradcheck above ``_core`` (an oracle shares no code with what
it checks).

>>> import numpy as np
>>> from gradcheck.mp import mp_derivative
>>> d = mp_derivative(lambda v: np.sum(np.maximum(v, 0)), np.array([0.0, 2.0]), 0)
>>> d.is_kink, float(d.left), float(d.right)
(True, 0.0, 1.0)
"""
from ._array import MPArray as MPArray
from ._array import complex_from_parts as complex_from_parts
from ._array import complex_parts as complex_parts
from ._complex import MPComplex as MPComplex
from ._context import Context as Context
from ._context import context as context
from ._context import owned as owned
from ._convert import from_mp as from_mp
from ._convert import to_mp as to_mp
from ._convert import to_mp_in as to_mp_in
from ._derivative import MPDerivative as MPDerivative
from ._derivative import certified_digits as certified_digits
from ._derivative import mp_derivative as mp_derivative
from ._derivative import mp_directional_derivative as mp_directional_derivative
from ._errors import NotAdjudicable as NotAdjudicable
from ._errors import PrecisionLossError as PrecisionLossError
from ._errors import Reason as Reason
from ._evaluate import backend as backend
from ._evaluate import evaluate as evaluate
from ._evaluate import run_checked as run_checked
from ._exact import Expansions as Expansions
from ._exact import probe as probe
from ._reverse import mp_vjp as mp_vjp
from ._scalar import MPFloat as MPFloat
from ._scalar import exact_mpf as exact_mpf

__all__ = [
    "MPArray",
    "MPComplex",
    "MPDerivative",
    "MPFloat",
    "NotAdjudicable",
    "PrecisionLossError",
    "Reason",
    "backend",
    "certified_digits",
    "complex_from_parts",
    "complex_parts",
    "context",
    "evaluate",
    "exact_mpf",
    "from_mp",
    "mp_derivative",
    "mp_directional_derivative",
    "to_mp",
]
