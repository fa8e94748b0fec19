"""The options of :func:`gradcheck.check`, validated once, carried through the stages."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .. import _axes
from .._core import arguments as _arguments
from .._core.config import Config
from .._evaluate import RUNNER_NAMES as ENGINE_NAMES
from . import complex as _complex


@dataclass(frozen=True)
class CheckOptions:
    """``check``'s keywords as the user gave them, validated (see :func:`gradcheck.check`)."""

    config: Config | None = None
    name: str | None = None
    engine: str = "auto"
    vectorized: bool = False
    progress: bool | None = None
    refine: bool | None = None
    adjudicate: bool | str = "auto"
    digits: int = 30
    bound_ulps: float | None = None
    executor: Any = None
    checkpoint: Any = None
    complex_convention: str | None = None
    independent_axes: Any = None

    def replace(self, **changes: Any) -> CheckOptions:
        return dataclasses.replace(self, **changes)


def validate(**keywords: Any) -> CheckOptions:
    """:class:`CheckOptions` from ``check``'s keywords; a wrong one raises, saying which."""
    checkpoint = keywords.pop("checkpoint", None)
    convention = keywords.pop("complex_convention", None)
    axes = keywords.pop("independent_axes", None)
    opts = CheckOptions(**_arguments.check_keywords(engines=ENGINE_NAMES, **keywords),
                        checkpoint=checkpoint, complex_convention=convention, independent_axes=axes)
    _axes.refuse_unsupported(axes, engine=opts.engine, executor=opts.executor, checkpoint=checkpoint)
    if opts.executor is not None and opts.engine not in ("auto", "executor"):
        raise ValueError(f"an executor runs engine='executor'; got engine={opts.engine!r} as well (drop one)")
    if convention is not None:
        _complex.validate_convention(convention)
    return opts
