"""gradcheck: check every entry of a claimed gradient against central differences.

The public names are below (``__all__``); the public modules are ``gradcheck.backends``,
``gradcheck.engines``, ``gradcheck.mp``, ``gradcheck.native``, ``gradcheck.subjects``,
``gradcheck.examples.transformer``, ``gradcheck.cli`` and ``gradcheck.pytest_plugin``. Every
module whose name starts with ``_`` is private (docs/design.md maps them).

>>> import numpy as np, gradcheck
>>> gradcheck.check(lambda x: (x**2).sum(), np.arange(3.0), grad=lambda x: 2*x).passed
True
"""
from ._controls.control import assert_detects_wrong_gradient as assert_detects_wrong_gradient
from ._core.config import Config as Config
from ._core.errors import AliasedParametersError as AliasedParametersError
from ._core.errors import DependentSlicesError as DependentSlicesError
from ._core.errors import FunctionError as FunctionError
from ._core.errors import GradcheckError as GradcheckError
from ._core.errors import GradcheckWarning as GradcheckWarning
from ._core.errors import GradientAssertionError as GradientAssertionError
from ._core.errors import InputMutationError as InputMutationError
from ._core.errors import OutputError as OutputError
from ._core.errors import ShapeMismatchError as ShapeMismatchError
from ._core.errors import UnsupportedInputError as UnsupportedInputError
from ._core.errors import WorkerDiedError as WorkerDiedError
from ._core.verdict import Cause as Cause
from ._core.verdict import Verdict as Verdict
from ._evaluate import ExecutorOptions as ExecutorOptions
from ._lowp.dispute import DisputeResult as DisputeResult
from ._lowp.dispute import dispute as dispute
from ._models.diagnosis import Diagnosis as Diagnosis
from ._models.params import check_params as check_params
from ._models.report import ParamsReport as ParamsReport
from ._orders import AdjointResult as AdjointResult
from ._orders import TaylorResult as TaylorResult
from ._orders import check_adjoint as check_adjoint
from ._orders import check_hvp as check_hvp
from ._orders import check_jvp as check_jvp
from ._orders import taylor_test as taylor_test
from ._pipeline.check import check as check
from ._pipeline.complex import ComplexReport as ComplexReport
from ._pipeline.inputs import MultiReport as MultiReport
from ._report.report import Report as Report
from ._runtime.checkpoint import Checkpoint as Checkpoint
from ._runtime.checkpoint import CheckpointError as CheckpointError
from ._runtime.checkpoint import CheckpointMismatchError as CheckpointMismatchError
from ._screen import screen as screen
from ._sweeps.sweep import SweepReport as SweepReport
from ._sweeps.sweep import grid as grid
from ._sweeps.sweep import shape_sweep as shape_sweep
from ._version import __version__ as __version__

__all__ = [
    "__version__",
    "AdjointResult",
    "AliasedParametersError",
    "assert_detects_wrong_gradient",
    "Cause",
    "check",
    "check_adjoint",
    "check_hvp",
    "check_jvp",
    "check_params",
    "Checkpoint",
    "CheckpointError",
    "CheckpointMismatchError",
    "ComplexReport",
    "Config",
    "DependentSlicesError",
    "Diagnosis",
    "dispute",
    "DisputeResult",
    "ExecutorOptions",
    "FunctionError",
    "GradcheckError",
    "GradcheckWarning",
    "GradientAssertionError",
    "grid",
    "InputMutationError",
    "MultiReport",
    "OutputError",
    "ParamsReport",
    "Report",
    "screen",
    "shape_sweep",
    "ShapeMismatchError",
    "SweepReport",
    "taylor_test",
    "TaylorResult",
    "UnsupportedInputError",
    "Verdict",
    "WorkerDiedError",
]
