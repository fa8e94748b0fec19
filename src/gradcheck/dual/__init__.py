"""Forward-mode dual numbers: an independent reference gradient for self-testing the checker.

A :class:`DualArray` carries a float64 value of shape ``S`` and ``K`` tangent directions of shape
``S + (K,)`` (vector forward mode). It implements ``__array_ufunc__`` and ``__array_function__``,
so unmodified numpy code (``@``, ``einsum``, ``np.exp``, reductions, indexing, broadcasting)
propagates derivatives exactly, with no step size anywhere. That is why it is a useful oracle for
a finite-difference checker: agreement between two different algorithms means something.

Never silently wrong: an operation without a derivative rule raises ``TypeError`` naming the
operation, and every path that would turn a DualArray into a plain number or ndarray
(``float(x)``, ``np.asarray(x)``, ``math.exp(x)``, writing into an ndarray) raises too.

Non-differentiable points use the *symmetric* subgradient: ``abs'(0) = 0``; ties in
``maximum``/``minimum``/``max``/``min``/``clip`` split the tangent evenly between the tied sides.
That is also what a central difference measures at such a point, so the oracle and the checker
agree on kinks instead of disagreeing by an arbitrary choice. A tangent that is exactly zero
stays zero through a pole (``arccos(-1)`` of a constant built from the input, ``x * 0 + 1``):
a constant stays a constant.

Modules: ``number`` (the type, its numpy protocol and operations), ``rules`` (derivative
tables of the elementwise functions, plain numpy), ``forward`` (``dual_gradient``,
``dual_jvp``: seeding tangents, reading the result).
In: a numpy function and a float input. Out: its exact gradient or JVP. Imports nothing of
gradcheck (an independent oracle must not share code with what it checks).

>>> import numpy as np
>>> from gradcheck.dual import dual_gradient
>>> dual_gradient(lambda x: np.sum(x ** 2), np.array([1.0, 2.0, 3.0]))
array([2., 4., 6.])
"""
from .forward import dual_gradient as dual_gradient
from .forward import dual_jvp as dual_jvp
from .number import DualArray as DualArray

__all__ = ["DualArray", "dual_gradient", "dual_jvp"]
