"""The one place where ``gradcheck._orders`` reaches into gradcheck's internals.

Everything the feature reuses from the check pipeline is named here, so a move of the
package layout changes these lines and nothing else in the folder.
"""
from __future__ import annotations

from .. import backends as backends
from .._core.arguments import as_seed as as_seed
from .._core.arguments import as_shape as as_shape
from .._core.arguments import choice as choice
from .._core.arguments import flag as flag
from .._core.arguments import integer as integer
from .._core.arguments import label_of as label_of
from .._core.arguments import positive as positive
from .._core.arguments import text as text
from .._core.arrays import same_bits as same_bits
from .._core.claims import call_watched as call_watched
from .._core.claims import require_call as require_call
from .._core.config import KEYWORD_FIELDS as KEYWORD_FIELDS
from .._core.config import UNIT_ROUNDOFF as UNIT_ROUNDOFF
from .._core.config import Config as Config
from .._core.config import as_config as as_config
from .._core.config import dtype_name as dtype_name
from .._core.config import with_keywords as with_keywords
from .._core.errors import FunctionError as FunctionError
from .._core.errors import GradcheckError as GradcheckError
from .._core.errors import GradientAssertionError as GradientAssertionError
from .._core.errors import OutputError as OutputError
from .._core.errors import ShapeMismatchError as ShapeMismatchError
from .._core.errors import UnsupportedInputError as UnsupportedInputError
from .._core.errors import mutation_error as mutation_error
from .._core.inputs import float_dtype_name as float_dtype_name
from .._core.inputs import output_array as output_array
from .._core.inputs import require_real_output as require_real_output
from .._core.inputs import unit_roundoff_of as unit_roundoff_of
from .._core.status import PassedAsTruth as PassedAsTruth
from .._core.status import refusal as refusal
from .._core.verdict import FAILING as FAILING
from .._core.verdict import Verdict as Verdict
from .._differences import Along as Along
from .._differences import modelled as modelled
from .._differences import moved as moved
from .._differences import richardson as richardson
from .._differences import truncation as truncation
from .._evaluate import PerPoint as PerPoint
from .._evaluate import Target as Target
from .._evaluate import at_x as at_x
from .._evaluate import make_runner as make_runner
from .._pipeline.check import check as check
from .._pipeline.claims import ClaimBackend as ClaimBackend
from .._pipeline.claims import with_notes as with_notes
from .._pipeline.complex import default_convention as default_convention
from .._pipeline.complex import validate_convention as validate_convention
from .._pipeline.prepare import as_gradient as as_gradient  # backends' rule, as check's prepare reads it
from .._pipeline.prepare import make_cotangent as make_cotangent
from .._report.html import HtmlViews as HtmlViews
from .._report.next_step import next_steps as next_steps
from .._report.report import Report as Report
from ..backends import CONTROL_WEIGHTS as CONTROL_WEIGHTS
from ..backends import Backend as Backend
from ..backends import control_function as control_function
from ..backends import control_gradient as control_gradient
from ..backends import control_input as control_input

