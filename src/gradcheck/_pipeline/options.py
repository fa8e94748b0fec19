"""The options of :func:`gradcheck.check`, validated once, carried through the stages."""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .. import _axes
from .._core import arguments as _arguments
from .._core.config import KEYWORD_FIELDS, Config, Tuning, with_keywords
from .._evaluate import RUNNER_NAMES as ENGINE_NAMES
from .._runtime.checkpoint import as_checkpoint
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
    #: ``rtol=``, ``eps=``, ... without ``config=``: set on the preset ``prepare`` picks
    tuning: Tuning = Tuning()

    def replace(self, **changes: Any) -> CheckOptions:
        return dataclasses.replace(self, **changes)


def _check_keywords(*, name: Any, engine: Any, engines: Sequence[str], vectorized: Any,
                    progress: Any, refine: Any, adjudicate: Any, digits: Any, bound_ulps: Any,
                    executor: Any) -> dict[str, Any]:
    """The keywords of :func:`gradcheck.check`, validated (``engines``: the valid names)."""
    return dict(
        name=_arguments.text("name", name),
        engine=_arguments.choice("engine", engine, tuple(engines)),
        vectorized=_arguments.flag("vectorized", vectorized),
        progress=_arguments.flag("progress", progress, none=True),
        refine=_arguments.flag("refine", refine, none=True),
        adjudicate=_arguments.as_adjudicate(adjudicate),
        digits=_arguments.as_digits(digits),
        bound_ulps=_arguments.positive("bound_ulps", bound_ulps, none=True),
        executor=_arguments.as_executor(executor),
    )


def validate(**keywords: Any) -> CheckOptions:
    """:class:`CheckOptions` from ``check``'s keywords; a wrong one raises, saying which."""
    config, tuning = with_keywords(keywords.pop("config", None),
                                   **{k: keywords.pop(k, None) for k in KEYWORD_FIELDS})
    checkpoint = keywords.pop("checkpoint", None)
    convention = keywords.pop("complex_convention", None)
    axes = keywords.pop("independent_axes", None)
    opts = CheckOptions(**_check_keywords(engines=ENGINE_NAMES, **keywords), config=config, tuning=tuning,
                        checkpoint=checkpoint, complex_convention=convention, independent_axes=axes)
    _axes.refuse_unsupported(axes, engine=opts.engine, executor=opts.executor, checkpoint=checkpoint)
    _arguments.engine_with_executor(opts.engine, opts.executor)
    if convention is not None:
        _complex.validate_convention(convention)
    if checkpoint is not None:
        as_checkpoint(checkpoint)  # a path or a Checkpoint, said now (the file is opened later)
    return opts
