"""Why an arbitrary-precision evaluation cannot be trusted, as data rather than a string."""
from __future__ import annotations

import enum


class Reason(str, enum.Enum):
    """Why a high-precision evaluation proves nothing.

    >>> Reason.FLOAT_CONVERSION.value
    'float_conversion'
    """

    #: an MPFloat was turned into a float (``float(v)``, ``math.tanh``, ``astype``, ``asarray``),
    #: or the object array's raw pointer was taken for C code (``.ctypes``)
    FLOAT_CONVERSION = "float_conversion"
    #: the result is a float (a float dtype array or a float scalar), not an MPFloat
    FLOAT_RESULT = "float_result"
    #: the result holds no MPFloat: f did not compute from the argument it was given
    RESULT_NOT_MP = "result_not_mp"
    #: numpy has no object-dtype loop for an operation, or compiled code rejected the object array
    UNSUPPORTED_OPERATION = "unsupported_operation"
    #: the result is NaN or infinite, or an operation divided by zero
    NONFINITE = "nonfinite"


class PrecisionLossError(TypeError):
    """Raised by ``MPFloat.__float__``: the value would silently drop to 53 bits.

    A ``TypeError`` so that code which converts numbers fails the way it fails for any other
    non-float object. ``where`` names the line that asked for the conversion.

    >>> str(PrecisionLossError("float()", where="model.py:12"))
    'float() on an MPFloat at model.py:12 would drop to float64'
    """

    def __init__(self, operation: str, where: str = "<unknown>") -> None:
        self.operation = operation
        self.where = where
        #: inside an evaluation: the MPFloat converted and the float it became (else None)
        self.value: object = None
        self.rounded: float | None = None
        super().__init__(f"{operation} on an MPFloat at {where} would drop to float64")


class NotAdjudicable(RuntimeError):
    """The function cannot be evaluated at arbitrary precision, so its value settles nothing.

    ``reason`` is a :class:`Reason`; ``detail`` says what happened and what to do.

    >>> err = NotAdjudicable(Reason.NONFINITE, "f returned nan")
    >>> err.reason is Reason.NONFINITE
    True
    """

    def __init__(self, reason: Reason, detail: str) -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(f"not adjudicable ({reason.value}): {detail}")
