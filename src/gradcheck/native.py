"""C functions reached through cffi, under gradcheck's native calling convention.

The convention is documented in ``kernels/gradcheck_abi.h``: a loss
``double gc_NAME_loss(const double *x, int64_t n, const int64_t *iparams)`` and a claimed
gradient ``void gc_NAME_grad(const double *x, int64_t n, const int64_t *iparams, double *g)``.
The subject kernels shipped with gradcheck live in ``gradcheck._kernels``; your own
cffi module works the same way (pass ``lib=``).

>>> import numpy as np, gradcheck
>>> from gradcheck.native import native_function
>>> rosen = native_function("rosenbrock")
>>> x = np.array([0.5, -0.3, 1.2, 0.8])
>>> gradcheck.check(rosen, x, grad=rosen.gradient).passed
True
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


def _builtin():
    from ._kernels import ffi, lib  # the cffi extension built at install time

    return ffi, lib


@dataclass(frozen=True)
class NativeFunction:
    """A native loss (and optionally its claimed gradient) with fixed integer params.

    Calling it evaluates the loss on a float64 array; ``gradient(x)`` calls the C gradient.
    """

    #: C code cannot run on arbitrary-precision arrays: no referee (see
    #: ``gradcheck._adjudicate.referee.referee_may_run``).
    gradcheck_mp_capable = False

    name: str
    loss: Any
    grad: Any
    ffi: Any
    iparams: tuple[int, ...] = ()

    def _iparams_ptr(self):
        if not self.iparams:
            return self.ffi.NULL
        return self.ffi.new("int64_t[]", list(self.iparams))

    def __call__(self, x: np.ndarray) -> float:
        buf = np.ascontiguousarray(x, dtype=np.float64)
        ptr = self.ffi.cast("const double *", self.ffi.from_buffer(buf))
        return float(self.loss(ptr, buf.size, self._iparams_ptr()))

    def gradient(self, x: np.ndarray) -> np.ndarray:
        if self.grad is None:
            raise TypeError(f"native function {self.name!r} was created without a gradient")
        buf = np.ascontiguousarray(x, dtype=np.float64)
        out = np.zeros(buf.size, dtype=np.float64)
        self.grad(
            self.ffi.cast("const double *", self.ffi.from_buffer(buf)), buf.size, self._iparams_ptr(),
            self.ffi.cast("double *", self.ffi.from_buffer(out)),
        )
        return out.reshape(np.shape(x))


def native_function(name: str, *, grad: str = "grad", lib: Any = None, ffi: Any = None,
                    iparams: tuple[int, ...] = (), prefix: str = "gc_") -> NativeFunction:
    """Look up ``{prefix}{name}_loss`` and ``{prefix}{name}_{grad}`` in a cffi module.

    ``lib``/``ffi`` default to gradcheck's own kernels. ``grad=None`` gives a loss only.
    """
    if lib is None:
        ffi, lib = _builtin()
    if ffi is None:
        raise TypeError("pass ffi= together with lib= (the cffi module's ffi object)")
    loss_name = f"{prefix}{name}_loss"
    if not hasattr(lib, loss_name):
        known = sorted(s[len(prefix):-5] for s in dir(lib) if s.startswith(prefix) and s.endswith("_loss"))
        raise ValueError(f"no native loss {loss_name!r}; available: {known}")
    grad_fn = None
    if grad is not None:
        grad_name = f"{prefix}{name}_{grad}"
        if not hasattr(lib, grad_name):
            raise ValueError(f"no native gradient {grad_name!r} in the module")
        grad_fn = getattr(lib, grad_name)
    return NativeFunction(name, getattr(lib, loss_name), grad_fn, ffi, tuple(iparams))
