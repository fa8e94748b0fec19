"""Independent axes (Jacobian colouring): ``check(f, x, grad, independent_axes=(0,))``.

Three steps, one module each: :mod:`.declare` reads the declaration against the shapes of
``x`` and ``f(x)``; :mod:`.verify` tests it (a leak between slices is refused with
:class:`~gradcheck.DependentSlicesError`, never turned into verdicts); :mod:`.colour` is the
differencer that perturbs one entry of every slice in the same evaluation. ``check`` hands
the differencer and each entry's base value (its slice's) to the same verdict machinery as
a plain check: classify, step study, kink test, quick look, referee; :mod:`.referee` is the
referee on each entry's own slice; :mod:`.processes` and :mod:`.executor` run the
differencer's evaluations as jobs on a fork pool or on a ``concurrent.futures.Executor``,
:mod:`.compiled` in a parallel numba kernel (an array-valued ``@njit`` ``f``).
In: ``f``, ``x``, ``f(x)`` and the declared axes. Out: a verified declaration, a differencer
for the pipeline's difference stage, a slice referee for the adjudicate stage. It ranks
beside ``_lowp``, after the report and before the pipeline.
Must not import: the pipeline, any feature (``gradcheck.mp`` only inside the referee).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .colour import Coloured
from .compiled import CompiledColoured, unsupported
from .declare import Axes, against_input, declare
from .executor import ExecutorColoured
from .processes import PooledColoured
from .verify import verify

__all__ = ["Axes", "Coloured", "against_input", "colour_plan", "declare", "refuse_unsupported"]

#: The engines the coloured differencer runs on (``auto`` means serial, or batched for a
#: vectorized ``f``; ``processes``: its evaluations on a fork pool, :mod:`.processes`;
#: ``executor``: on ``check(..., executor=ex)``, :mod:`.executor`; ``compiled``: an array-valued
#: ``@njit`` ``f``, its evaluations in a parallel numba kernel, :mod:`.compiled`).
ENGINES = ("auto", "serial", "batched", "processes", "executor", "compiled")


def refuse_unsupported(independent_axes: Any, *, engine: str, executor: Any, checkpoint: Any,
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


def colour_plan(independent_axes: Any, *, evaluate, work: np.ndarray, y0: np.ndarray,
                cotangent: np.ndarray | None, steps: Any, seed: int, vectorized: bool,
                engine: str, lowp: bool, executor: Any = None, f: Any = None, backend: Any = None,
                pristine: np.ndarray | None = None) -> Coloured:
    """The verified coloured differencer for ``f`` at ``work``. ``evaluate(batch)`` returns
    ``f``'s output at ``work`` (``batch`` None) or at a stack of copies (vectorized ``f``)."""
    if np.iscomplexobj(y0):
        raise ValueError("independent_axes does not support a complex output: check its real view without it")
    if lowp:
        raise ValueError("independent_axes does not support float16/bfloat16 input (yet): check a float64 "
                         "upcast of x, or check without independent_axes")
    if engine == "executor" and executor is None:
        raise ValueError("engine='executor' needs check(..., executor=...): a concurrent.futures.Executor")
    if engine == "batched" and not vectorized:
        raise ValueError("engine='batched' needs an f that accepts a leading batch axis; "
                         "declare it with check(..., vectorized=True)")
    if engine == "compiled":
        why = unsupported(f, backend, work)
        if why is not None:
            raise TypeError(f"engine='compiled' with independent_axes cannot check this function: {why}")
    axes = declare(independent_axes, work.shape, y0.shape)  # refuses a scalar f(x): then the cotangent is None
    assert cotangent is not None
    spent, note = verify(axes, lambda: evaluate(None), work, y0, steps, seed, pristine)
    if executor is not None or engine == "executor":
        coloured: Coloured = ExecutorColoured(axes, evaluate, work, cotangent, y0, executor=executor)
        way = "executor"
    elif engine == "compiled":
        coloured = CompiledColoured(axes, evaluate, work, cotangent, y0, f=f)
        way = "compiled"
    elif engine == "processes":
        coloured = PooledColoured(axes, evaluate, work, cotangent, y0)
        way = "processes"
    else:
        coloured = Coloured(axes, evaluate, work, cotangent, y0, vectorized=vectorized)
        way = "batched" if vectorized else "serial"
    coloured.evaluations += spent
    coloured.name = f"{way} (coloured)"
    spread = ""
    if way in ("processes", "compiled"):
        unit = "processes" if way == "processes" else "numba threads"
        spread = f", on {coloured.workers} {unit}"  # type: ignore[attr-defined]
    coloured.reason = (f"{way} (coloured): independent_axes={independent_axes!r}, {axes.slices} slices of "
                       f"{axes.per_slice} entries: one entry of every slice per evaluation{spread}")
    coloured.notes = [note]
    return coloured

