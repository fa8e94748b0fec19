"""What the small results of this feature share with :class:`~gradcheck.Report`.

``check_adjoint`` and ``taylor_test`` answer one global question each; their results
are small dataclasses that answer like a Report: ``status`` (``"PASS"``, ``"FAIL"`` or
``"INCONCLUSIVE"``), ``.passed``, ``.assert_pass()``, ``str()``, ``.to_dict()``,
``.to_json()``, and render as HTML (``_repr_html_``, ``to_html``). A subclass supplies
``status``, ``summary()``, ``lines()`` and ``_fields()``.
"""
from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from typing import Any

from ._links import GradientAssertionError, HtmlViews, PassedAsTruth, next_steps, refusal

PASS, FAIL, INCONCLUSIVE = "PASS", "FAIL", "INCONCLUSIVE"


class ResultMixin(HtmlViews, PassedAsTruth, ABC):
    """``passed``/``assert_pass``/``__str__``/``to_dict``/``to_json`` from a few hooks, and
    (from :class:`HtmlViews`) ``_repr_html_`` for notebooks and ``to_html(path=None)``."""

    name: str

    @property
    @abstractmethod
    def status(self) -> str:
        """``"PASS"``, ``"FAIL"`` or ``"INCONCLUSIVE"``."""

    @property
    def passed(self) -> bool:
        """True only for ``PASS``: a test that proved nothing is not a pass."""
        return self.status == PASS

    @abstractmethod
    def summary(self) -> str:
        """One line: the status and why."""

    @abstractmethod
    def lines(self) -> list[str]:
        """The body of ``str(result)``, line by line."""

    @abstractmethod
    def _fields(self) -> dict[str, Any]:
        """The result's own fields for ``to_dict``."""

    def assert_pass(self, *, allow_unchecked: bool | None = None) -> Any:
        """Raise :class:`~gradcheck.GradientAssertionError` unless the test passed;
        ``allow_unchecked=True`` also accepts a test that could not decide (INCONCLUSIVE),
        as for :meth:`Report.assert_pass`. Returns the result, so it can be chained."""
        refused = refusal(self.status, 0, allow_unchecked)
        if refused is None:
            return self
        kind = type(self).__name__.replace("Result", "").lower()
        raise GradientAssertionError(f"{kind} test: {refused}\n{self}", self)

    def __str__(self) -> str:
        steps = [f"  next: {step}" for step in next_steps(self)]
        return "\n".join([self.summary()] + ["  " + line for line in self.lines()] + steps)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.summary()}>"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN and infinities written as strings)."""
        out = {"name": self.name, "status": self.status, "passed": self.passed}
        out.update(self._fields())
        return jsonable(out)

    def to_json(self) -> str:
        return json.dumps(self.to_dict())


def jsonable(value: Any) -> Any:
    """``value`` with numpy scalars and arrays as Python numbers and lists, non-finite
    floats as strings (JSON has no NaN)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "tolist"):
        return jsonable(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value
