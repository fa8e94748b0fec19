"""Central differences (stage 2, on the evaluation layer): the entry-wise point generator and
the arithmetic every difference shares.

In: a runner of :mod:`gradcheck._evaluate` and the working array. Out: ``differences(flat_indices,
steps) -> (f_plus, f_minus, denominator)`` (:class:`CentralDifferences`: two points per entry),
the points along a direction of the orders' tests (:mod:`.along`), and the judging arithmetic
every difference shares: steps, perturbed values, realized denominators and the quotient
(:mod:`.arithmetic`), THE round-off model of a difference and f's round-off measured from two of
them, and f's round-off measured by a fourth difference (:mod:`.noise`), THE step-and-Richardson
estimator with its bound, from the best of many steps or from three (:mod:`.richardson`).
Used by ``check``'s first pass and second look, ``check_params``, the refine stage, the
orders' tests, the low-precision plan and the screen's entry-wise look.
Must not import: the stages after it (classify, refine, adjudicate, report, pipeline), nor any
feature.
"""
from .along import Along as Along
from .along import moved as moved
from .arithmetic import DenominatorsOf as DenominatorsOf
from .arithmetic import StepsOf as StepsOf
from .arithmetic import perturbed_points as perturbed_points
from .arithmetic import require_moving_steps as require_moving_steps
from .arithmetic import slope_and_noise as slope_and_noise
from .arithmetic import steps_for as steps_for
from .central import CentralDifferences as CentralDifferences
from .noise import MEASURED_SAFETY as MEASURED_SAFETY
from .noise import Differencer as Differencer
from .noise import fourth_difference as fourth_difference
from .noise import measured as measured
from .noise import measured_sigma as measured_sigma
from .noise import modelled as modelled
from .noise import with_measured as with_measured
from .richardson import best_estimate as best_estimate
from .richardson import estimates as estimates
from .richardson import richardson as richardson
from .richardson import spread_estimate as spread_estimate
from .richardson import truncation as truncation

__all__ = ["MEASURED_SAFETY", "Along", "CentralDifferences", "DenominatorsOf", "Differencer", "StepsOf", "perturbed_points", "require_moving_steps",
           "slope_and_noise", "steps_for", "best_estimate", "fourth_difference", "measured", "measured_sigma", "modelled", "moved", "with_measured", "estimates", "richardson", "spread_estimate",
           "truncation"]
