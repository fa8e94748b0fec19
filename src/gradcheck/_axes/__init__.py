"""Independent axes (Jacobian colouring): ``check(f, x, grad, independent_axes=(0,))``.

Three steps, one module each: :mod:`.declare` reads the declaration against the shapes of
``x`` and ``f(x)``; :mod:`.verify` tests it (a leak between slices is refused with
:class:`~gradcheck.DependentSlicesError`, never turned into verdicts); :mod:`.colour` is the
differencer that perturbs one entry of every slice in the same evaluation. ``check`` hands
the differencer and each entry's base value (its slice's) to the same verdict machinery as
a plain check: classify, step study, kink test, quick look, referee; :mod:`.referee` is the
referee on each entry's own slice.
In: ``f``, ``x``, ``f(x)`` and the declared axes. Out: a verified declaration, a differencer
for the pipeline's difference stage, a slice referee for the adjudicate stage. It ranks
beside ``_lowp``, after the report and before the pipeline.
Must not import: the pipeline, any feature (``gradcheck.mp`` only inside the referee).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .colour import Coloured
from .declare import Axes, declare
from .verify import verify

__all__ = ["Axes", "Coloured", "colour_plan", "declare", "refuse_unsupported"]

#: The engines the coloured differencer runs on (``auto`` means serial, or batched for a
#: vectorized ``f``).
ENGINES = ("auto", "serial", "batched")


def refuse_unsupported(independent_axes: Any, *, engine: str, executor: Any, checkpoint: Any,
                       complex_input: bool = False) -> None:
    """Refuse, with the reason, what ``independent_axes`` does not support (yet)."""
    if independent_axes is None:
        return
    what = None
    if engine not in ENGINES or executor is not None:
        what = (f"engine={'executor' if executor is not None else engine!r}: the coloured differencer runs "
                f"on the engines {ENGINES} (its 2*D evaluations rarely need more)")
    elif checkpoint is not None:
        what = "checkpoint=: a coloured check is 2*D evaluations, short enough to rerun"
    elif complex_input:
        what = "a complex input or output: check its real view without independent_axes"
    if what is not None:
        raise ValueError(f"independent_axes does not support {what}")


def colour_plan(independent_axes: Any, *, evaluate, work: np.ndarray, y0: np.ndarray,
                cotangent: np.ndarray | None, steps: np.ndarray, seed: int, vectorized: bool,
                engine: str, lowp: bool) -> Coloured:
    """The verified coloured differencer for ``f`` at ``work``. ``evaluate(batch)`` returns
    ``f``'s output at ``work`` (``batch`` None) or at a stack of copies (vectorized ``f``)."""
    if np.iscomplexobj(y0):
        raise ValueError("independent_axes does not support a complex output: check its real view without it")
    if lowp:
        raise ValueError("independent_axes does not support float16/bfloat16 input (yet): check a float64 "
                         "upcast of x, or check without independent_axes")
    if cotangent is None:
        raise ValueError(
            "independent_axes needs f to return an array whose slices match x's; f returned a scalar. "
            "For a loss that is a sum of per-example terms, return the per-example losses (shape (B,)) "
            "and declare independent_axes=(0,): the check reduces them with its own cotangent")
    if engine == "batched" and not vectorized:
        raise ValueError("engine='batched' needs an f that accepts a leading batch axis; "
                         "declare it with check(..., vectorized=True)")
    axes = declare(independent_axes, work.shape, y0.shape)
    spent, note = verify(axes, lambda: evaluate(None), work, y0, steps, seed)
    coloured = Coloured(axes, evaluate, work, cotangent, y0, vectorized=vectorized)
    coloured.evaluations += spent
    way = "batched" if vectorized else "serial"
    coloured.name = f"{way} (coloured)"
    coloured.reason = (f"{way} (coloured): independent_axes={independent_axes!r}, {axes.slices} slices of "
                       f"{axes.per_slice} entries: one entry of every slice per evaluation")
    coloured.notes = [note]
    return coloured

