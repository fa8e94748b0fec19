"""Immutable check configuration, with presets per dtype."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import DTypeLike

from . import arguments as _arguments

Reduce = Literal["random", "sum"]
_REDUCE_CHOICES = ("random", "sum")
#: The default resolution share (``Config.resolution``): a PASS needs ``tol <= 1% of scale``.
DEFAULT_RESOLUTION = 0.01

# Unit round-off (half the machine epsilon) per format. Kept here, not read from numpy,
# so bfloat16 needs no ml_dtypes import.
UNIT_ROUNDOFF = {
    "float64": 2.0**-53,
    "float32": 2.0**-24,
    "float16": 2.0**-11,
    "bfloat16": 2.0**-8,
}


def dtype_name(dtype: object) -> str:
    """Canonical name of a floating dtype ('float64', 'float32', 'float16', 'bfloat16')."""
    name = str(getattr(dtype, "name", dtype))
    name = name.replace("torch.", "")
    aliases = {"double": "float64", "float": "float32", "half": "float16", "f8": "float64", "f4": "float32", "f2": "float16"}
    return aliases.get(name, name)


@dataclass(frozen=True)
class Config:
    """How a check decides. Immutable: derive variants with :meth:`replace`.

    Parameters
    ----------
    step : float, default 6e-6
        Relative step: ``h_i = step * max(1, |x_i|)``.
    rtol, atol : float, default 1e-6, 0
        The tolerance ``atol + rtol * max(|a_i|, |n_i|) + noise_factor * noise_i``.
    noise_factor : float, default 8
        How many estimated round-off units of the difference to forgive.
    resolution : float, default 0.01
        The largest tolerance, as a share of ``max(|a_i|, |n_i|)``, at which an entry may
        PASS: **a PASS claim is within 1% of the numeric value, and in the float64 preset
        usually within rtol**. An entry that agrees only within a larger tolerance (round-off
        swamping its slope) is UNCHECKED, with the resolution reached in the notes. A number
        in (0, 1), larger than ``rtol`` (or nothing could pass).
    reduce : {"random", "sum"}, default "random"
        How an array output becomes a scalar: a seeded random cotangent ``v . f(x)``, or a
        plain sum. A plain sum hides bugs: ``sum(softmax(x))`` is constant, so every entry
        would be checked against a true gradient of zero.
    seed : int, default 0
        Seed of the random cotangent.
    refine : bool, default True
        Give every MISMATCH a step study before it is reported.
    refine_noisy : bool, default True
        Also study PASS entries whose tolerance is dominated by round-off
        (``k*noise > rtol*scale``): larger steps resolve them to ``rtol``. Off in the float32
        preset, where that is nearly every entry.
    second_look : float or None, default 3.0
        The second look's budget for the suspects it need not study (the PASS entries
        whose tolerance is mostly round-off, the UNCHECKED ones), as a multiple of the first
        pass's 2N evaluations (never fewer than 20,000): a check costs at most about
        ``2 + 2 * second_look`` evaluations per entry besides its MISMATCH studies. Entries
        it cannot afford are UNCHECKED (cause BUDGET), never PASS. None: unbounded. The
        default serves in full the costliest second look measured on a correct claim (a
        sum of N terms, every entry within round-off: 2.4 first passes) and bounds the rest.
    dtype : str, default "float64"
        The preset this came from: it sets ``step`` and the round-off model of the numeric
        side (:attr:`unit_roundoff`). ``check`` differences a float16/bfloat16/float32 input of
        a precision-generic ``f`` at its float64 upcast with the float64 preset (rtol, atol
        and resolution from the claim's ulp rule), so ``report.config.dtype`` is
        ``"float64"`` there while ``report.dtype`` is the input's; an ``f`` that computes in
        float32 whatever it is given gets the forced-float32 preset, ``"float32"``, even for
        a float64 input.

    Raises
    ------
    ValueError
        A negative, infinite or non-numeric step or tolerance, a zero step, an unknown
        ``reduce``, or a ``resolution`` outside (0, 1) or not above ``rtol``.

    Examples
    --------
    >>> Config.for_dtype("float32").step
    0.001
    >>> Config().replace(rtol=1e-5).rtol
    1e-05
    """

    step: float = 6.0e-6
    rtol: float = 1e-6
    atol: float = 0.0
    noise_factor: float = 8.0
    resolution: float = DEFAULT_RESOLUTION
    reduce: Reduce = "random"
    seed: int = 0
    refine: bool = True
    refine_noisy: bool = True
    dtype: str = "float64"
    second_look: float | None = 3.0

    def __post_init__(self) -> None:
        _arguments.choice("reduce", self.reduce, _REDUCE_CHOICES)
        _arguments.positive("step", self.step)
        for field in ("rtol", "atol", "noise_factor"):
            _arguments.nonnegative(field, getattr(self, field))
        _arguments.as_seed(self.seed)
        _arguments.flag("refine", self.refine)
        _arguments.flag("refine_noisy", self.refine_noisy)
        _arguments.nonnegative("second_look", self.second_look, none=True,
                               meaning=" (the second look's budget, in first passes)")
        _arguments.choice("dtype", self.dtype, tuple(UNIT_ROUNDOFF))
        res = _arguments.share("resolution", self.resolution, " (the largest tolerance, as a share of the value, "
                               "at which an entry may PASS)")
        if not self.rtol < res:
            raise ValueError(
                f"rtol={self.rtol!r} is not below resolution={res!r}: a PASS needs its whole tolerance "
                f"(rtol * value + noise) within resolution * value, so nothing could pass; raise "
                f"resolution (e.g. resolution={min(0.5, 2 * self.rtol):g}) or lower rtol")

    @classmethod
    def for_dtype(cls, dtype: DTypeLike, **overrides: Any) -> Config:
        """The preset for inputs of ``dtype`` ('float64', 'float32', np.float32, ...).

        The presets and why they are what they are: docs/guide/tolerances.md (the measurements
        behind them: benchmarks/tolerance_study.py). Keyword arguments override single fields.
        """
        name = dtype_name(np.dtype(dtype) if not isinstance(dtype, str) and not hasattr(dtype, "name") else dtype)
        if name not in _PRESETS:
            raise ValueError(f"no preset for dtype {name!r}; presets exist for {sorted(_PRESETS)}")
        return dataclasses.replace(_PRESETS[name], **overrides)

    def replace(self, **changes: Any) -> Config:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    @property
    def unit_roundoff(self) -> float:
        return UNIT_ROUNDOFF.get(self.dtype, UNIT_ROUNDOFF["float64"])


_PRESETS = {
    # step ~ cbrt(eps): balances O(h^2) truncation against O(u/h) cancellation.
    "float64": Config(step=6.0e-6, rtol=1e-6, atol=0.0, noise_factor=8.0, dtype="float64"),
    "float32": Config(step=1e-3, rtol=1e-3, atol=0.0, noise_factor=8.0, refine_noisy=False, dtype="float32"),
    # Same-precision differences in 16-bit formats are mostly noise; these presets are
    # coarse on purpose and the noise term will mark most entries UNCHECKED. Their rtol is
    # already as coarse as the format's claims need; a PASS may add round-off as large as
    # rtol, no more (resolution = 2 rtol): a float16 PASS is within 6%, a bfloat16 one
    # within 20% (it catches signs, missing factors, transposes; nothing finer).
    "float16": Config(step=3e-2, rtol=3e-2, atol=0.0, noise_factor=8.0, resolution=6e-2, refine_noisy=False,
                      dtype="float16"),
    "bfloat16": Config(step=1e-1, rtol=1e-1, atol=0.0, noise_factor=8.0, resolution=2e-1, refine_noisy=False,
                       dtype="bfloat16"),
}


def as_config(value: object) -> Config | None:
    """``config``: a :class:`Config` or None (a dict says how to build one). The keyword's
    validator lives beside the type (``Config`` checks its own fields with
    :mod:`gradcheck._core.arguments`, which therefore cannot import it)."""
    if value is None or isinstance(value, Config):
        return value
    hint = ""
    if isinstance(value, dict):
        hint = f"; build one from the dict with gradcheck.Config(**{value!r})"
    raise TypeError(f"config must be a gradcheck.Config or None, got {_arguments.got(value)}{hint}")


#: The :class:`Config` fields the public calls take as keywords (``check(f, x, g, rtol=1e-5)``):
#: keyword -> field. ``eps`` is the name users guess (torch, jax) for ``Config.step``, the
#: relative step ``h_i = eps * max(1, |x_i|)``.
KEYWORD_FIELDS = {"rtol": "rtol", "atol": "atol", "eps": "step", "resolution": "resolution",
                  "noise_factor": "noise_factor"}


@dataclass(frozen=True)
class Tuning:
    """Config fields given as keywords, applied on top of the preset a call picks for its
    input (:meth:`apply`), so that ``check(..., rtol=1e-5)`` keeps everything else the call
    decides without a ``config=`` (the preset of the dtype, the float32-inside route).

    >>> Tuning((("rtol", 1e-5),)).apply(Config()).rtol
    1e-05
    """

    fields: tuple[tuple[str, float], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.fields)

    def apply(self, cfg: Config, only: tuple[str, ...] | None = None) -> Config:
        """``cfg`` with these fields (those in ``only``, when given) set."""
        changes = {k: v for k, v in self.fields if only is None or k in only}
        return cfg.replace(**changes) if changes else cfg

    def on(self, config: Config | None, dtype: str) -> Config:
        """``config``, or the preset of ``dtype`` when it is None, with these fields set."""
        return self.apply(config if config is not None else Config.for_dtype(dtype))

    def keywords(self) -> dict[str, float]:
        """The fields as the keywords they were given as (``step`` -> ``eps``)."""
        by_field = {f: k for k, f in KEYWORD_FIELDS.items()}
        return {by_field[k]: v for k, v in self.fields}

    def names(self, leaving: tuple[str, ...] = ()) -> list[str]:
        """The keywords given, but for the fields in ``leaving``."""
        return [k for k, v in self.keywords().items() if KEYWORD_FIELDS[k] not in leaving]


def _keyword_value(keyword: str, value: object) -> float:
    if keyword == "eps":
        return float(_arguments.positive("eps", value, meaning=", the relative step: h_i = eps * max(1, |x_i|)"))
    if keyword == "resolution":
        return float(_arguments.share("resolution", value, " (the largest tolerance, as a share of the value, "
                                      "at which an entry may PASS)"))
    return float(_arguments.nonnegative(keyword, value))


def with_keywords(config: object, **keywords: object) -> tuple[Config | None, Tuning]:
    """``config=`` and the tolerance keywords of a public call (:data:`KEYWORD_FIELDS`; None
    means not given), validated: each names itself when wrong. With a ``config``, the
    keywords are set on it (a field that ``config`` set, i.e. where it differs from its
    preset :meth:`Config.for_dtype`, and that a keyword sets to another value is a
    conflict: ``ValueError`` naming both); without one, a :class:`Tuning` for the preset.

    >>> with_keywords(None, rtol=1e-5)[1].fields
    (('rtol', 1e-05),)
    >>> with_keywords(Config(rtol=1e-4), rtol=1e-5)
    Traceback (most recent call last):
    ...
    ValueError: rtol=1e-05 conflicts with config.rtol=0.0001: give rtol once (in config= or as the keyword)
    """
    config = as_config(config)
    unknown = sorted(set(keywords) - set(KEYWORD_FIELDS))
    if unknown:  # a programming error inside gradcheck, not a user's
        raise TypeError(f"not a tolerance keyword: {unknown}")
    fields = tuple((KEYWORD_FIELDS[k], _keyword_value(k, v)) for k, v in keywords.items() if v is not None)
    if config is None:
        return None, Tuning(fields)
    preset = Config.for_dtype(config.dtype)
    for keyword, (field, value) in zip([k for k, v in keywords.items() if v is not None], fields):
        mine = getattr(config, field)
        if mine != getattr(preset, field) and mine != value:
            raise ValueError(f"{keyword}={value!r} conflicts with config.{field}={mine!r}: give {keyword} once "
                             "(in config= or as the keyword)")
    return Tuning(fields).apply(config), Tuning()
