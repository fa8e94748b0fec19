"""Independent axes (Jacobian colouring): ``check(f, x, grad, independent_axes=(0,))``.

Three steps, one module each: :mod:`.declare` reads the declaration against the shapes of
``x`` and ``f(x)``; :mod:`.verify` tests it (a leak between slices is refused with
:class:`~gradcheck.DependentSlicesError`, never turned into verdicts); :mod:`.colour` is the
point generator that perturbs one entry of every slice in the same evaluation, on any runner of
the evaluation layer (:mod:`gradcheck._evaluate`: serial, batched, compiled, processes,
executor) with the per-slice reduction it defines. ``check`` hands the differencer and each
entry's base value (its slice's) to the same verdict machinery as a plain check: classify,
step study, kink test, quick look, referee; :mod:`.referee` is the referee on each entry's own
slice.
In: ``f``, ``x``, ``f(x)`` and the declared axes. Out: a verified declaration, a differencer
for the pipeline's difference stage, a slice referee for the adjudicate stage. It ranks
beside ``_lowp``, after the report and before the pipeline.
Must not import: the pipeline, any feature (``gradcheck.mp`` only inside the referee).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._differences import StepsOf
from .._evaluate import RUNNER_NAMES, Target, choose, compiled_refusal
from .colour import Coloured, SliceReduction
from .declare import Axes, against_input, declare
from .verify import verify

__all__ = ["Axes", "Coloured", "SliceReduction", "against_input", "colour_plan", "declare", "refuse_unsupported"]

#: The engines the coloured differencer runs on: every runner of the evaluation layer
#: (``auto``: the layer's choice without a timing, so no evaluation is spent on it: the
#: executor when one is given, batched for a vectorized ``f``, else serial).
ENGINES = RUNNER_NAMES


def refuse_unsupported(independent_axes: object, *, engine: str, executor: object, checkpoint: object,
                       complex_input: bool = False) -> None:
    """Refuse, with the reason, what ``independent_axes`` does not support (yet).
    ``checkpoint=`` is supported (``coloured_difference`` records the coloured passes)."""
    if independent_axes is None:
        return
    what = None
    if engine not in ENGINES:
        what = (f"engine={engine!r}: the coloured differencer runs on the engines {ENGINES} (its 2*D "
                f"evaluations rarely need more)")
    elif complex_input:
        what = "a complex input or output: check its real view without independent_axes"
    if what is not None:
        raise ValueError(f"independent_axes does not support {what}")


def colour_plan(independent_axes: object, *, evaluate: Callable[[np.ndarray | None], object], work: np.ndarray,
                y0: np.ndarray, cotangent: np.ndarray | None, steps: StepsOf | np.ndarray, seed: int,
                vectorized: bool, engine: str, lowp: bool, f: Callable[..., object], backend: object,
                executor: object = None, pristine: np.ndarray | None = None) -> Coloured:
    """The verified coloured differencer for ``f`` at ``work``. ``evaluate(None)`` returns
    ``f``'s output at ``work``; the runner ``engine`` evaluates ``f`` through ``backend``;
    ``pristine`` holds ``x``'s bits (a write of ``f`` into its input is caught against it)."""
    if np.iscomplexobj(y0):
        raise ValueError("independent_axes does not support a complex output: check its real view without it")
    if lowp:
        raise ValueError("independent_axes does not support float16/bfloat16 input (yet): check a float64 "
                         "upcast of x, or check without independent_axes")
    axes = declare(independent_axes, work.shape, y0.shape)  # refuses a scalar f(x): then the cotangent is None
    assert cotangent is not None

    def output() -> object:  # f's output at work as it is now (the runners reduce it per slice)
        return evaluate(None)

    target = Target(f=f, work=work, evaluate=output, backend=backend, vectorized=vectorized,
                    executor=executor, slices=SliceReduction(axes, cotangent, y0.shape))
    why = compiled_refusal(target) if engine == "compiled" else None
    if why is not None:
        raise TypeError(f"engine='compiled' with independent_axes cannot check this function: {why}")
    runner = choose(engine, target, timing=False).runner  # refuses what the runner cannot run
    spent, note = verify(axes, output, work, y0, steps, seed, pristine)
    coloured = Coloured(axes, runner, work, cotangent, y0)
    coloured.spent += spent
    way = runner.name
    coloured.name = f"{way} (coloured)"
    spread = ""
    if way in ("processes", "compiled"):
        unit = "processes" if way == "processes" else "numba threads"
        spread = f", on {getattr(runner, 'workers', 1)} {unit}"
    coloured.reason = (f"{way} (coloured): independent_axes={independent_axes!r}, {axes.slices} slices of "
                       f"{axes.per_slice} entries: one entry of every slice per evaluation{spread}")
    coloured.own_notes = [note]
    return coloured
