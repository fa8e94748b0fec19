"""Step 1 of a screen: ``f`` at ``x`` prepared once for every later step.

The backend, the private working copy of ``x`` (the user's array is never written), ``f(x)``
reduced to a scalar (a seeded random cotangent for array outputs, as ``check`` does), the
claimed gradient, the unit round-off, the step scales ``w_i = max(1, |x_i|)``, and the
smallest error ``check``'s rule would call MISMATCH at each entry (:attr:`Prepared.floor`).
Each part ``check`` has too is ``check``'s prepare's (``gradcheck._pipeline.prepare``: the
copy, cotangent, reduction, claim, evaluation and unit round-off); what is the screen's own
is its refusal of other dtypes, its target on the evaluation layer (``f`` reduced, on the working
copy, beside the pristine ``x`` it is compared with at the end), the weights and the floor.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np

# gradcheck internals this module builds on (one place, for the package layout to come):
from .. import backends as _backends
from .._core import arguments as _arguments
from .._core.config import Config, Tuning
from .._core.errors import UnsupportedInputError
from .._core.inputs import float_dtype_name, require_real_output
from .._core.sparse import CHUNK as CHUNK
from .._core.sparse import WhereRead
from .._differences import steps_for
from .._evaluate import Target, at_x
from .._lowp.forced64 import Float32InsidePlan, route_float64
from .._pipeline.prepare import (
    as_claimed,
    evaluator,
    make_cotangent,
    private_copy,
    reducer,
    require_vjp_for_array_output,
    take_claim,
    unit_in_use,
)
from ..backends import Backend
from ._limit import entrywise_floor


@dataclass
class Prepared:
    """Everything about ``f`` at ``x`` that the steps share."""

    label: str
    backend: Backend
    dtype: str
    config: Config
    target: Target               # f reduced at the working copy (target.work): what the layer runs
    pristine: np.ndarray         # x, never written (a whole model: the working copy itself)
    analytic: np.ndarray         # the claim, float64, flat
    f0: float
    unit: float
    cotangent: np.ndarray | None
    weights: Any                 # max(1, |x_i|), flat (an array; WeightsOf for a whole model)
    evaluations: int             # of f so far (the base evaluation)
    _floor: np.ndarray | None = None
    rho: float = 0.0             # f's round-off, measured along the first block (0: not yet)
    # check's plan for a float64 x at which f computes in float32 (gradcheck._lowp.forced64):
    # its preset sets config, unit and floor, and its Richardson estimates judge localized entries.
    lowp: Float32InsidePlan | None = None
    notes: tuple[str, ...] = ()

    @property
    def x_flat(self) -> np.ndarray:
        return self.pristine.reshape(-1)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.target.work.shape

    @property
    def floor(self) -> np.ndarray:
        """Per entry (flat): the smallest error check's rule calls MISMATCH."""
        if self._floor is None:
            self._floor = self.floor_at(slice(None), self.rho)
        return self._floor

    def floor_at(self, key: Any, rho: float) -> np.ndarray:
        """:attr:`floor` at the entries ``key``, with f's measured round-off ``rho``."""
        cfg = self.config
        steps = steps_for(self.x_flat[key].astype(np.float64), cfg.step)
        return entrywise_floor(self.analytic[key], rtol=cfg.rtol, atol=cfg.atol, k=cfg.noise_factor,
                               unit=self.unit, f0=self.f0, steps=steps, rho=rho)


def prepare(f, x, grad, config, name, backend, tuning: Tuning) -> Prepared:
    be = _backends.resolve(backend, x)
    x_np = be.to_numpy(x)
    dtype = float_dtype_name(x_np)
    if dtype not in ("float64", "float32"):
        raise UnsupportedInputError(
            f"screen works on float32 and float64 inputs; x is {dtype}, where a difference in its "
            "own precision is mostly noise: use gradcheck.check, which differences the float64 upcast"
        )
    cfg = tuning.on(config, dtype)  # rtol=, eps=, ... on the preset
    label = _arguments.label_of(f, name)
    work = private_copy(x_np)
    y0 = at_x(lambda: be.evaluate(f, work))
    require_real_output(y0, f"f ({label})")
    lowp, probes = None, 0
    if dtype == "float64" and config is None:  # f computes in float32: check's detection, check's preset
        lowp, probes = route_float64(f, work, y0, be)
        cfg = tuning.apply(lowp.config) if lowp is not None else cfg
    cotangent = None if y0.ndim == 0 else make_cotangent(y0.shape, cfg)
    reduce = reducer(cotangent)
    require_vjp_for_array_output(y0, cotangent, grad, cfg)
    claimed = take_claim(be, f, work, cotangent, grad, y0.shape)  # its call and writes checked at the door
    analytic = as_claimed(claimed, work.shape, grad, cotangent).reshape(-1)
    unit = unit_in_use(cfg, work, y0)
    target = Target(f=f, work=work, evaluate=evaluator(f, be, work, cotangent, reduce), backend=be, cotangent=cotangent)
    weights = WeightsOf.from_x(work.reshape(-1))
    notes = () if lowp is None else (*lowp.notes, "screen: blocks judged with f's float32 round-off and the "
                                     "forced-float32 preset; localized entries with check's Richardson estimates")
    return Prepared(label, be, dtype, cfg, target, work.copy(), analytic, reduce(y0), unit, cotangent, weights, 1 + probes,
                    lowp=lowp, notes=notes)


def time_and_repeat(prep: Prepared) -> tuple[float, bool, float]:
    """Seconds per evaluation, and whether f gives the same value at x twice."""
    start = time.perf_counter()
    f1 = cast(float, at_x(prep.target.evaluate))  # the reduced f: a float
    seconds = time.perf_counter() - start
    same = f1 == prep.f0 or (np.isnan(f1) and np.isnan(prep.f0))
    return seconds, bool(same), float(f1)


# -- a whole model: the concatenation of its parameters -------------------------------------------

class WeightsOf(WhereRead):
    """``max(1, |x_i|)`` (:attr:`Prepared.weights`) where read."""

    def __init__(self, x_flat: np.ndarray) -> None:
        super().__init__(x_flat.size)
        self.x = x_flat

    def _at(self, key: Any) -> np.ndarray:
        return self.from_x(self.x[key])

    @staticmethod
    def from_x(x: np.ndarray) -> np.ndarray:
        """The weights of entries whose values ``x`` the caller has read already."""
        return np.maximum(1.0, np.abs(x.astype(np.float64, copy=False)))


class FloorOf(WhereRead):
    """:attr:`Prepared.floor` where read, at the round-off ``rho`` measured when made."""

    def __init__(self, prep: Prepared) -> None:
        super().__init__(prep.analytic.size)
        self.prep, self.rho = prep, prep.rho

    def _at(self, key: Any) -> np.ndarray:
        return self.prep.floor_at(key, self.rho)


@dataclass
class FlatPrepared(Prepared):
    """A flat problem (a model's parameters concatenated) whose weights and floor are computed
    where read, and whose bisection keeps its thresholds in float32 (rounded up):
    :func:`prepare_flat`."""

    TAU_DTYPE: ClassVar[type[np.floating]] = np.float32

    @property
    def floor(self) -> Any:
        if self._floor is not None:  # the exact path's floor (an array)
            return self._floor
        return FloorOf(self)


def prepare_flat(f: Any, work: np.ndarray, analytic: np.ndarray, config: Config, label: str, f0: float,
                 unit: float, backend: str = "numpy") -> FlatPrepared:
    """``f`` of the flat ``work`` (1-D, private to the caller, which keeps the originals:
    no second copy is made: ``pristine`` is ``work``, and the caller compares it with the originals), prepared for
    :func:`._api.run_screen`. ``f`` returns a float; ``f0`` is its value at ``work``
    (one evaluation, made by the caller); ``analytic`` the claim (float64, flat);
    ``backend`` the framework ``f`` calls into (``"torch"``, ``"jax"``: no fork pool, no
    complex step), ``f`` itself taking numpy arrays."""
    be = _backends.resolve(backend, work)
    target = Target(f=f, work=work, evaluate=lambda: float(f(work)), backend=be)
    return FlatPrepared(label, be, float_dtype_name(work), config, target, work, analytic,
                        float(f0), unit, None, WeightsOf(work), 1)
