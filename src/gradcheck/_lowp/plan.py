"""Gradient checks on float16 / bfloat16 / float32 inputs: difference in float64, judge in ulps.

A central difference in the input's own 16-bit format is noise (``x + h == x`` for small
``h``, and each evaluation rounds to 8 or 11 bits). When ``f`` is precision-generic, i.e. it
takes a float64 array and returns float64, :func:`gradcheck.check` instead differences ``f``
on the exactly-upcast input in float64 (relative error of the numeric side ~1e-10, about
1e-7 of a bfloat16 ulp) and judges the claimed gradient, computed wherever the user
computed it (usually in bfloat16), in ulps of the claim's own format:

    tol_i = bound_ulps * ulp(max(|a_i|, |n_i|)) + FLOOR_UNITS * u * max_j min(|a_j|, |n_j|) + k * noise_i

``bound_ulps`` (default :data:`GRAD_BOUND_ULPS` = 2): a gradient entry computed in bfloat16
passes through a few roundings, each at most half an ulp of an intermediate; measured on
tanh/sin backward passes in bfloat16 (64x64 inputs), the entries that are not cancellations
stay within 2 ulps, and with the floor below there was no false alarm. The
second term is an absolute floor (``u`` the unit round-off of the claim's format, 2**-8 for
bfloat16): a backward pass in low precision adds and subtracts terms the size of the
gradient's large entries, so an entry that is a small difference of large terms carries
an absolute error of about ``u`` times those terms whatever its own size (``1 - tanh(x)**2``
at x = 2.3 in bfloat16 is 10% off). The size of an entry is the smaller of its claimed and
numeric magnitudes (whichever is finite, if one is not): one grossly wrong claimed entry
must not raise the floor until every other error hides under it, and neither a NaN claim
nor a NaN evaluation of f moves it. Entries whose claimed and numeric values are both below the floor are
UNCHECKED (absence of evidence), as in the float64 check.

The resolution share applies here as everywhere (``_classify``): an entry PASSes only if
its whole tolerance is within ``share * max(|a_i|, |n_i|)``, with the share set by the
claim's format and the bound, :func:`share` = ``2 * bound_ulps * 2**-m`` (``m`` explicit
mantissa bits): twice the largest relative size of the ulp bound (an ulp is up to
``2**-m`` of a value, at the bottom of a binade), so the floor and the noise may add as
much again as the bound, no more. For a bfloat16 claim and 2 ulps that is 2**-5 = 3.1%
(the bound alone is up to 1.6%), for float16 0.39%; ``bound_ulps=16`` on bfloat16 gives
25%. Entries small against the largest claimed entry, where the floor is a large share of
the value, are therefore UNCHECKED: a bfloat16 backward may legitimately be 10% off there,
so agreement there cannot show that the claim is close.

What the floor does not cover: a backward that cancels terms much larger than the largest
gradient entry (``1 - tanh(x)**2`` with tanh rounded to bfloat16 first: 4% off at x = 1.8),
or long sums in bfloat16 (a softmax VJP computed entirely in bfloat16 has a few entries
beyond it). Those are reported as MISMATCH, with the worst error in ulps in the notes: the
claim really is that far from the derivative; ``bound_ulps=`` widens the bound.

When ``f`` forces its own dtype (returns float16/bfloat16 for a float64 input, or raises),
the check falls back to a same-precision difference and says so in ``report.notes``.

float32 inputs take the same path, with the claim's float32 rounding measured entry by
entry instead of the absolute floor (:mod:`gradcheck._lowp.float32`).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from .._classify.rule import verdicts
from .._core.config import Config
from .._core.formats import FloatFormat, from_bits, resolve_format, round_to_format, ulp
from .._core.judged import Judged
from .._core.tolerance import Tolerance
from .._core.verdict import Verdict
from .._differences import Differencer, slope_and_noise
from . import f32steps
from .float32 import (
    F32_BOUND_ULPS,
    F32_RESOLUTION,
    ROUNDING_FACTOR,
    CountedCalls,
    claim_rounding,
    forces_float32,
)

if TYPE_CHECKING:
    from ..backends import Backend

__all__ = ["FLOOR_UNITS", "GRAD_BOUND_ULPS", "ORDINARY", "LowPrecisionPlan", "OrdinaryPlan", "plan", "plan_for",
           "share"]

#: Default bound, in ulps of the claim's format, on a claimed low-precision gradient entry.
GRAD_BOUND_ULPS = 2.0
#: The absolute floor: this many unit round-offs of the claim's format times max |claim|.
FLOOR_UNITS = 2.0

_LOW = ("float16", "bfloat16")
#: What ``adjudicate=`` holds: True, False or "auto".
Adjudicate = bool | str


@dataclass(frozen=True, eq=False)  # eq: identity (a plan holds arrays)
class OrdinaryPlan:
    """The plan of an ordinary dtype (float32, float64...): every step is a no-op.

    :func:`gradcheck.check` calls these steps on every input; :class:`LowPrecisionPlan`
    overrides them for a float16/bfloat16/float32 one. A plan is a value: a step that learns
    something returns a new plan (``dataclasses.replace``), built in check's prepare stage;
    the later stages only read it."""

    #: What the report says of the plan (in order).
    notes: tuple[str, ...] = ()
    #: Evaluations of ``f`` spent deciding the plan (the report counts them).
    probes: int = 0

    upcast = False
    #: What the report calls ``config.atol`` when it explains UNCHECKED entries.
    floor_name = "atol"
    #: True when plain central differences are not enough: the numeric side must come from
    #: :meth:`first_estimates` (an f that computes in float32: Richardson across steps).
    needs_estimates = False

    def noted(self, *notes: str) -> OrdinaryPlan:
        """This plan with ``notes`` added."""
        return replace(self, notes=self.notes + notes) if notes else self

    def start(self, x_np: np.ndarray, config: Config | None, adjudicate: Adjudicate,
              ) -> tuple[OrdinaryPlan, np.ndarray, Config | None, Adjudicate]:
        """The plan as it starts, the input to difference, the config and the referee choice."""
        return self, x_np, config, adjudicate

    def cotangent(self, v: np.ndarray | None) -> np.ndarray | None:
        return v

    def claim_input(self, work: np.ndarray) -> np.ndarray:
        """The array the claimed gradient is computed at."""
        return work.copy()

    def after_claim(self, cfg: Config, claimed: object) -> tuple[OrdinaryPlan, Config]:
        """The plan and the config once the claimed gradient is known."""
        return self, cfg

    def measure_rounding(self, claimed64: Callable[[], object], analytic: np.ndarray) -> OrdinaryPlan:
        """The plan with a float32 claim's own rounding, from ``claimed64()`` (the claim at
        the float64 upcast); itself for other dtypes."""
        return self

    def first_estimates(self, differencer: Differencer, steps: np.ndarray, diffs: tuple[np.ndarray, ...],
                        values: np.ndarray | None = None, base_value: float = np.nan,
                        ) -> tuple[tuple[np.ndarray, np.ndarray] | None, int]:
        """``(numeric, noise)`` replacing the first pass's, and the evaluations spent
        (an f that computes in float32: Richardson across steps, f's round-off measured at
        ``values``, the flat input, around ``base_value = f(x)``); None for the others."""
        return None, 0

    def after_differences(self, cfg: Config, analytic: np.ndarray, diffs: tuple[np.ndarray, ...]) -> Config:
        """The config once the first differences ``(fp, fm, denom)`` are known."""
        return cfg

    def final(self, analytic: np.ndarray, judged: Judged | None, cfg: Config, codes: np.ndarray,
              tol: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
        """The report's codes and tolerances, from the judged ones, and the plan's notes."""
        return codes, tol, self.notes


#: The plan of every ordinary dtype.
ORDINARY = OrdinaryPlan()


@dataclass(frozen=True, eq=False, kw_only=True)
class LowPrecisionPlan(OrdinaryPlan):
    """How :func:`gradcheck.check` handles one float16/bfloat16/float32 input."""

    fmt: FloatFormat          # the input's format
    upcast: bool              # True: difference the float64 upcast, judge in ulps
    original: np.ndarray      # the user's low-precision values (the claim is computed here)
    bound_ulps: float
    claim_fmt: FloatFormat | None = None
    #: float32 claims: |a32 - a64| per entry (flat), the claim's own measured rounding
    rounding: np.ndarray | None = None

    @property
    def floor_name(self) -> str:  # type: ignore[override]
        return "the floor for a low-precision backward's round-off" if self.upcast else "atol"

    @property
    def needs_estimates(self) -> bool:  # type: ignore[override]
        return not self.upcast and self.fmt.name == "float32"

    def start(self, x_np: np.ndarray, config: Config | None, adjudicate: Adjudicate,
              ) -> tuple[OrdinaryPlan, np.ndarray, Config | None, Adjudicate]:
        """On the upcast path: the float64 upcast, float64 steps, no referee by default; an f
        that computes in float32: the float32 Richardson preset."""
        if not self.upcast:
            forced32 = self.fmt.name == "float32" and config is None
            return self, x_np, f32steps.PRESET if forced32 else config, adjudicate
        if adjudicate == "auto":
            # a float64 difference is about 1e6 times finer than a bfloat16 ulp: the
            # arbitrary-precision referee would only add time
            return (self.noted("no arbitrary-precision referee: the float64 difference is far finer "
                               f"than a {self.fmt.name} ulp (adjudicate=True forces it)"),
                    self.x64, self.config(config), False)
        return self, self.x64, self.config(config), adjudicate

    def first_estimates(self, differencer: Differencer, steps: np.ndarray, diffs: tuple[np.ndarray, ...],
                        values: np.ndarray | None = None, base_value: float = np.nan,
                        ) -> tuple[tuple[np.ndarray, np.ndarray] | None, int]:
        if self.upcast or self.fmt.name != "float32":
            return None, 0
        fp, fm, denom = diffs
        return f32steps.estimates(differencer, steps, (fp, fm, denom),
                                  np.empty(0) if values is None else values, base_value)

    def after_claim(self, cfg: Config, claimed: object) -> tuple[OrdinaryPlan, Config]:
        """On the upcast path, the claim's format fixed (its ulps, its share)."""
        if not self.upcast:
            return self, cfg
        name = str(np.asarray(claimed).dtype.name)
        fmt = resolve_format(name) if name in ("float16", "bfloat16", "float32") else self.fmt
        return replace(self, claim_fmt=fmt), cfg.replace(rtol=self.bound_ulps * _unit(fmt),
                                                         resolution=_resolution(fmt, self.bound_ulps))

    def after_differences(self, cfg: Config, analytic: np.ndarray, diffs: tuple[np.ndarray, ...]) -> Config:
        """The floor scales with the gradient's size, measured by the first differences."""
        if not self.upcast:
            return cfg
        fp, fm, denom = diffs
        return self.with_floor(cfg, analytic, slope_and_noise(fp, fm, denom, 2.0**-53)[0])

    def final(self, analytic: np.ndarray, judged: Judged | None, cfg: Config, codes: np.ndarray,
              tol: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
        """On the upcast path, the ulp rule (:meth:`judge`); the plan's notes either way."""
        if not self.upcast or judged is None:
            return codes, tol, self.notes
        codes, tol, note = self.judge(analytic, judged, cfg)
        return codes, tol, self.notes + (note,)

    @property
    def x64(self) -> np.ndarray:
        return self.original.astype(np.float64)  # exact: every 16-bit value is a float64

    def claim_input(self, work: np.ndarray) -> np.ndarray:
        """The array the claimed gradient is computed at: the user's own dtype."""
        return self.original.copy() if self.upcast else work.copy()

    def config(self, user: Config | None) -> Config:
        """float64 steps; first-pass tolerance ``bound * u * scale`` (never looser than the
        final ulp rule, so every entry the rule may reject gets the step study)."""
        base = Config.for_dtype("float64")
        if user is not None:
            base = base.replace(reduce=user.reduce, seed=user.seed, refine=user.refine,
                                noise_factor=user.noise_factor)
        return base.replace(rtol=self.bound_ulps * _unit(self.fmt), atol=0.0,
                            resolution=_resolution(self.fmt, self.bound_ulps))

    def cotangent(self, v: np.ndarray | None) -> np.ndarray | None:
        """The random cotangent rounded to the input's format, so that a framework casting
        it to the output's dtype (torch does) differentiates the same scalar."""
        if v is None or not self.upcast:
            return v
        return from_bits(round_to_format(v, self.fmt), self.fmt).astype(np.float64)

    def measure_rounding(self, claimed64: Callable[[], object], analytic: np.ndarray) -> OrdinaryPlan:
        """For a float32 claim: its float32 rounding, measured against the same claim
        computed at the float64 upcast (``claimed64()``), used in place of the floor."""
        if (self.claim_fmt or self.fmt).name != "float32" or not self.upcast:
            return self
        rounding, why = claim_rounding(claimed64, analytic)
        if rounding is None:
            return self.noted(f"{why}: the float32 claim is judged with the absolute floor instead")
        return replace(self, rounding=rounding.reshape(-1)).noted(
            "the float32 claim's own rounding is measured entry by entry: the claim recomputed at the "
            "float64 upcast, |a32 - a64| (the same formula: a bug is in both, only rounding differs)")

    def with_floor(self, cfg: Config, analytic: np.ndarray, numeric: np.ndarray) -> Config:
        """The absolute floor ``FLOOR_UNITS * u * max_j min(|a_j|, |n_j|)`` (the first
        differences, float64, are far finer than the claim's format), as ``atol`` (where
        :meth:`judge` reads it)."""
        a, n = np.abs(analytic.reshape(-1)), np.abs(numeric.reshape(-1))
        size = np.where(np.isfinite(a), np.where(np.isfinite(n), np.minimum(a, n), a), n)
        finite = size[np.isfinite(size)]
        scale = float(finite.max()) if finite.size else 0.0
        return cfg.replace(atol=FLOOR_UNITS * _unit(self.claim_fmt or self.fmt) * scale)

    def judge(self, analytic: np.ndarray, judged: Judged, cfg: Config) -> tuple[np.ndarray, np.ndarray, str]:
        """Final codes and tolerances by the ulp rule (NONFINITE and KINK verdicts kept), and
        the note that states the rule; ``cfg.atol`` is the floor (:meth:`with_floor`)."""
        fmt = self.claim_fmt or self.fmt
        a = analytic.reshape(-1)
        n = judged.numeric.copy()
        if judged.exact is not None:  # the exact values where the referee ran (a sparse column)
            at, exact = judged.exact.positions, judged.exact.values
            use = np.isfinite(exact)
            n[at[use]] = exact[use]
        with np.errstate(invalid="ignore", over="ignore"):
            scale = np.maximum(np.abs(a), np.abs(n))
            # ulps, not rtol, on top; a float32 claim's measured rounding replaces the floor
            atol = ROUNDING_FACTOR * self.rounding if self.rounding is not None else cfg.atol
            floor = Tolerance.of(cfg).replace(atol=atol).floor(judged.noise)
            tol = self.bound_ulps * ulp(np.where(np.isfinite(scale), scale, 0.0), fmt) + floor
            err = np.abs(a - n)
        codes = judged.codes.copy()
        open_ = np.isin(codes, [int(Verdict.PASS), int(Verdict.MISMATCH), int(Verdict.UNCHECKED)])
        fresh = verdicts(err, scale, floor, tol, np.isfinite(a) & np.isfinite(n), resolution=cfg.resolution)
        codes[open_] = fresh[open_]
        with np.errstate(invalid="ignore", divide="ignore"):
            in_ulps = err / ulp(np.where(np.isfinite(n), n, 0.0), fmt)
        checked = open_ & (scale > floor) & np.isfinite(in_ulps)
        worst = ""
        if checked.any():
            j = int(np.argmax(np.where(checked, in_ulps, -1.0)))
            where = tuple(int(i) for i in np.unravel_index(j, self.original.shape))
            worst = (f"; of the entries above the floor, the largest error is {in_ulps[j]:.3g} ulp"
                     f" at {where} (claimed {a[j]:.6g}, numeric {n[j]:.6g})")
        rounding = (f"{ROUNDING_FACTOR:g}|a32 - a64| (the claim's measured rounding)" if self.rounding is not None
                    else f"{FLOOR_UNITS:g}u*max min(|claimed|, |numeric|) (u = 2**-{fmt.mantissa_bits + 1}; "
                         f"floor {cfg.atol:.3g})")
        note = (f"claimed gradient ({fmt.name}) judged in {fmt.name} ulps: tolerance "
                f"{self.bound_ulps:g} ulp(max(|claimed|, |numeric|)) + {rounding} + {cfg.noise_factor:g}*noise; "
                f"a PASS needs that within {100 * cfg.resolution:.2g}% of the value" + worst)
        return codes, tol, note


def _unit(fmt: FloatFormat) -> float:
    return 2.0 ** -(fmt.mantissa_bits + 1)


def _resolution(fmt: FloatFormat, bound_ulps: float) -> float:
    """The PASS share of a claim in ``fmt``: :func:`share`, and for float32 (whose rounding
    is measured, not bounded) at least :data:`F32_RESOLUTION`."""
    value = share(fmt, bound_ulps)
    return max(value, F32_RESOLUTION) if fmt.name == "float32" else value


def share(fmt: FloatFormat, bound_ulps: float) -> float:
    """The resolution share of a claim in ``fmt`` judged to ``bound_ulps``: twice the
    bound's largest relative size, ``2 * bound_ulps * 2**-m`` (see the module docstring)."""
    value = 2.0 * bound_ulps * 2.0 ** -fmt.mantissa_bits
    if not value < 1.0:
        raise ValueError(
            f"bound_ulps={bound_ulps:g} allows errors up to {100 * value / 2:.3g}% of the value in {fmt.name}: "
            f"a PASS would prove nothing; use bound_ulps below {2.0 ** (fmt.mantissa_bits - 1):g}")
    return value


def plan_for(dtype: str, f: Callable[..., object], x_np: np.ndarray, backend: Backend,
             bound_ulps: float | None = None) -> OrdinaryPlan:
    """The plan for ``x_np`` (of canonical dtype name ``dtype``): :data:`ORDINARY`, every
    step a no-op, unless it is float16, bfloat16 or float32."""
    if dtype not in _LOW + ("float32",):
        return ORDINARY
    return plan(f, x_np, backend, bound_ulps)


def plan(f: Callable[..., object], x_np: np.ndarray, backend: Backend, bound_ulps: float | None = None,
         ) -> LowPrecisionPlan:
    """Decide how to check ``f`` at the float16/bfloat16/float32 array ``x_np``: try ``f`` on
    the float64 upcast; if it returns a float64 value (and, for float32, its value moves
    when the input moves by less than a float32 ulp), ``f`` is precision-generic. The plan's
    ``probes`` counts those calls of ``f`` (one or two), which ``report.evaluations`` includes."""
    fmt = resolve_format(x_np.dtype)
    default = F32_BOUND_ULPS if fmt.name == "float32" else GRAD_BOUND_ULPS
    bound = default if bound_ulps is None else float(bound_ulps)
    if not bound > 0:
        raise ValueError(f"bound_ulps must be a positive number, got {bound_ulps!r}")
    share(fmt, bound)  # refuses a bound too wide to prove anything
    p = LowPrecisionPlan(fmt=fmt, upcast=False, original=np.array(x_np, copy=True), bound_ulps=bound)
    evaluate = CountedCalls(backend)
    why, upcast = _generic(f, p.x64, fmt, evaluate), False
    if why is None:
        why, upcast = (f"{fmt.name} input, precision-generic f: the numeric side is a float64 central difference "
                       f"of the exactly-upcast input (report.config: the float64 preset's step and round-off model, "
                       f"rtol and resolution from the {fmt.name} claim's ulp rule)"), True
    return replace(p, upcast=upcast, notes=(why,), probes=evaluate.calls)


def _generic(f: Callable[..., object], x64: np.ndarray, fmt: FloatFormat,
             evaluate: Callable[[Callable[..., object], np.ndarray], np.ndarray]) -> str | None:
    """None when ``f`` is precision-generic at ``x64``, else the note of the fallback, saying why."""
    try:
        y = np.asarray(evaluate(f, x64))
    except Exception as exc:  # noqa: BLE001 - a function that cannot take float64: fall back
        return _fallback(fmt, f"f raised {type(exc).__name__} on a float64 input ({exc})")
    if y.dtype != np.float64:
        return _fallback(fmt, f"f returned {y.dtype} for a float64 input (it forces its own dtype)")
    if fmt.name == "float32" and forces_float32(f, x64, y, evaluate):
        return _fallback(fmt, "f returns float64 but computes in float32 (its output does not move "
                              "when the input moves by less than a float32 ulp)")
    return None


def _fallback(fmt: FloatFormat, why: str) -> str:
    if fmt.name == "float32":
        return (f"{why}: the numeric side is a float32 difference, Richardson-extrapolated across "
                "steps h, 2h, 4h (h = 2**-5 max(1, |x|)), its noise the measured spread between the "
                "extrapolations (gradcheck._lowp.f32steps); a precision-generic f is judged ~100x finer")
    return (f"{why}: the numeric side is a same-precision {fmt.name} difference, which is coarse "
            f"(most entries come out UNCHECKED); make f precision-generic to judge the claim in ulps")

