"""The one place that decides how gradcheck's numba kernels compile.

Every kernel is declared with :func:`kernel`, which fixes the options that matter for
the checker's correctness and speed:

- ``error_model="numpy"``: a division by zero gives inf/NaN like numpy, never raises;
- ``fastmath=False``: verdicts and differences must be exact IEEE arithmetic, the same
  bits as the numpy reference (no reassociation, no contraction into FMA);
- ``nogil=True``: a check running in a thread does not hold up the others;
- ``cache=True`` where it is safe: the machine code is reused across processes.
  It is NOT safe (and numba does not support it) for a kernel that takes a numba
  dispatcher as an argument: the dispatcher's identity is part of the kernel's type and
  a cache entry would refer to a function of another process. Such kernels are declared
  with ``takes_functions=True`` and compile once per function per process.

Compilation is lazy twice over: importing this module (or ``gradcheck``) does not import
numba, and a kernel compiles on its first call for each new combination of argument
types. The seconds spent compiling (or loading from the cache) are returned by
:meth:`Kernel.compile_for` so that callers report them apart from the check's own time,
and summed per kernel in :func:`compile_seconds`.

>>> from gradcheck._core.jit import kernel
>>> @kernel()
... def _twice(x):
...     return 2.0 * x
>>> _twice(1.5)
3.0
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

#: Options every kernel compiles with (see the module docstring for why).
OPTIONS: dict[str, str | bool] = {"error_model": "numpy", "fastmath": False, "nogil": True}

_LOCK = threading.Lock()
_COMPILE_SECONDS: dict[str, float] = {}
_numba_ready = False


def compile_seconds() -> dict[str, float]:
    """Seconds spent compiling (or loading from numba's cache) per kernel, this process."""
    with _LOCK:
        return dict(_COMPILE_SECONDS)


class Late:
    """A module global of kernel code that needs numba to exist (built on first compile).

    ``prange = late(lambda numba: numba.prange)`` at module level keeps numba's import
    out of the module's import; the kernel that uses the name replaces it on compiling.
    """

    def __init__(self, build: Callable[[ModuleType], object]) -> None:
        self.build = build


def late(build: Callable[[ModuleType], object]) -> Late:
    """A placeholder for a module global built from the numba module when kernels compile."""
    return Late(build)


#: ``prange = PRANGE`` in a kernel module: ``numba.prange`` once its kernels compile.
PRANGE = Late(lambda numba: numba.prange)


class Kernel:
    """A kernel declared with :func:`kernel`; becomes a numba dispatcher on first use.

    Calling it compiles for the argument types when needed, then runs the machine code.
    Inside another kernel it can be called like any numba function.
    """

    def __init__(self, py_func: Callable[..., Any], *, parallel: bool, cache: bool) -> None:
        self.py_func = py_func
        self.name = f"{py_func.__module__}.{py_func.__qualname__}"
        self.parallel = parallel
        self.cache = cache
        self._dispatcher: Any = None
        self._seen: set[tuple[tuple[object, ...] | type, ...]] = set()  # argument keys already compiled for
        self._lock = threading.Lock()
        self.__doc__ = py_func.__doc__
        self.__name__ = py_func.__name__
        self.__qualname__ = py_func.__qualname__
        self.__module__ = py_func.__module__

    def __repr__(self) -> str:
        state = "compiled" if self._dispatcher is not None else "lazy"
        return f"<gradcheck kernel {self.name} ({state})>"

    @property
    def dispatcher(self) -> Any:
        """The numba dispatcher (imports numba and creates it on first access)."""
        if self._dispatcher is None:
            with self._lock:
                if self._dispatcher is None:
                    self._dispatcher = self._make()
        return self._dispatcher

    def _make(self) -> Any:
        numba = _load_numba()
        # Globals that only exist once numba is loaded (`prange`, intrinsics) are
        # placeholders until now; numba resolves a kernel's globals when it compiles.
        module_globals = self.py_func.__globals__
        for name in self.py_func.__code__.co_names:
            value = module_globals.get(name)
            if isinstance(value, Late):
                module_globals[name] = value.build(numba)
        options = dict(OPTIONS, parallel=self.parallel)
        if self.cache:
            try:
                return numba.njit(cache=True, **options)(self.py_func)
            except RuntimeError:
                pass  # no writable cache location: compile in memory instead
        return numba.njit(**options)(self.py_func)

    def compile_for(self, *args: object) -> float:
        """Compile for the types of ``args`` if not done yet; the seconds it took."""
        key = tuple(map(_arg_key, args))
        if key in self._seen:
            return 0.0
        disp = self.dispatcher
        sig = tuple(disp.typeof_pyval(a) for a in args)  # ~20 us per array: once per key
        with self._lock:
            started = time.perf_counter()
            disp.compile(sig)  # returns at once when that signature is already compiled
            seconds = time.perf_counter() - started
            self._seen.add(key)
        with _LOCK:
            _COMPILE_SECONDS[self.name] = _COMPILE_SECONDS.get(self.name, 0.0) + seconds
        return seconds

    def __call__(self, *args: object) -> Any:
        self.compile_for(*args)
        return self._dispatcher(*args)


def _arg_key(value: object) -> tuple[object, ...] | type:
    """A cheap stand-in for an argument's numba type (numba's typeof is slow on arrays).

    Only the compile-time bookkeeping relies on it: were two different types ever given
    the same key, numba would still compile on the call, just without being timed.
    """
    if isinstance(value, np.ndarray):
        f = value.flags
        return (value.dtype.str, value.ndim, f.c_contiguous, f.f_contiguous, f.writeable, f.aligned)
    if isinstance(value, (bool, int, float, complex)):
        return type(value)
    return (type(value), id(value))


def kernel(*, parallel: bool = False, cache: bool = True,
           takes_functions: bool = False) -> Callable[[Callable[..., Any]], Kernel]:
    """Declare a numba kernel compiled with gradcheck's options (lazily).

    ``parallel=True`` turns ``prange`` loops into threads (bind ``prange = PRANGE`` at
    module level; it becomes ``numba.prange`` when the kernel compiles).
    ``takes_functions=True`` marks a kernel that receives a function (a numba
    dispatcher) as an argument: it is never cached.
    """

    def wrap(py_func: Callable[..., Any]) -> Kernel:
        return Kernel(py_func, parallel=parallel, cache=cache and not takes_functions)

    return wrap


def _load_numba() -> ModuleType:
    """Import numba and teach it that a :class:`Kernel` is its dispatcher."""
    global _numba_ready
    import numba

    if not _numba_ready:
        with _LOCK:
            if not _numba_ready:
                from numba.extending import typeof_impl

                @typeof_impl.register(Kernel)
                def _typeof_kernel(val: Kernel, c: Any) -> Any:
                    return numba.typeof(val.dispatcher)

                _numba_ready = True
    return numba
