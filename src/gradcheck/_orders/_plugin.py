"""The pytest fixture's methods for this feature (mixed into ``GradcheckFixture``).

``gradcheck.check_jvp``, ``.check_hvp``, ``.check_adjoint`` and ``.taylor_test`` in a test
take the arguments of the functions of the same name, run (once per session and backend)
the negative control of that kind first, and fail the test with the result's table unless
it passed. Importing this module imports nothing heavy.
"""
from __future__ import annotations

from typing import Any

from ._links import backends as _backends


class OrdersFixtureMixin:
    """Checks beyond first-order reverse mode for the ``gradcheck`` fixture."""

    _state: Any
    _defaults: dict[str, Any]
    _api: Any  # the gradcheck package: its public functions, looked up when called

    def _ordered(self, kind: str, function: str, x: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
        __tracebackhide__ = True
        control = kwargs.pop("control", self._defaults.get("control", True))
        allow = kwargs.pop("allow_unchecked", self._defaults.get("allow_unchecked", True))
        if "backend" in self._defaults:
            kwargs.setdefault("backend", self._defaults["backend"])
        backend = _backends.resolve(kwargs.get("backend"), x)
        if control:
            self._state.require_control(backend, "auto", kind=kind)
        self._note(backend.name)
        result = getattr(self._api, function)(*args, **kwargs)
        return self._judge(result, allow if hasattr(result, "counts") else True)

    def check_jvp(self, f: Any, x: Any, jvp: Any = None, **kwargs: Any) -> Any:
        """:func:`gradcheck.check_jvp`, after the ``kind="jvp"`` control; fails unless passed."""
        __tracebackhide__ = True
        return self._ordered("jvp", "check_jvp", x, (f, x, jvp), kwargs)

    def check_hvp(self, f: Any, x: Any, hvp: Any = None, **kwargs: Any) -> Any:
        """:func:`gradcheck.check_hvp`, after the ``kind="hvp"`` control; fails unless passed."""
        __tracebackhide__ = True
        return self._ordered("hvp", "check_hvp", x, (f, x, hvp), kwargs)

    def check_adjoint(self, jvp: Any, vjp: Any, x: Any = None, **kwargs: Any) -> Any:
        """:func:`gradcheck.check_adjoint`, after the ``kind="adjoint"`` control."""
        __tracebackhide__ = True
        return self._ordered("adjoint", "check_adjoint", x, (jvp, vjp, x), kwargs)

    def taylor_test(self, f: Any, x: Any, grad: Any = None, hvp: Any = None, **kwargs: Any) -> Any:
        """:func:`gradcheck.taylor_test`, after the ``kind="taylor"`` control."""
        __tracebackhide__ = True
        return self._ordered("taylor", "taylor_test", x, (f, x, grad, hvp), kwargs)
