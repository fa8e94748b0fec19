"""Central differences (stage 2, on the evaluation layer): the entry-wise point generator and
the arithmetic every difference shares.

In: a runner of :mod:`gradcheck._evaluate` and the working array. Out: ``differences(flat_indices,
steps) -> (f_plus, f_minus, denominator)`` (:class:`CentralDifferences`: two points per entry),
and the arithmetic of :mod:`.arithmetic` (steps, perturbed values, realized denominators, the
quotient with its round-off). Used by ``check``'s first pass and second look, ``check_params``,
the refine stage, the low-precision plan and the screen's entry-wise look.
Must not import: the stages after it (classify, refine, adjudicate, report, pipeline), nor any
feature.
"""
from .arithmetic import DenominatorsOf as DenominatorsOf
from .arithmetic import StepsOf as StepsOf
from .arithmetic import perturbed_points as perturbed_points
from .arithmetic import require_moving_steps as require_moving_steps
from .arithmetic import slope_and_noise as slope_and_noise
from .arithmetic import steps_for as steps_for
from .central import CentralDifferences as CentralDifferences

__all__ = ["CentralDifferences", "DenominatorsOf", "StepsOf", "perturbed_points", "require_moving_steps",
           "slope_and_noise", "steps_for"]
