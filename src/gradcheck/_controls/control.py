"""The negative control: prove the instrument works before trusting its verdicts.

(``kind="grad"`` here; the other kinds of claim in :mod:`.kinds`.)

A checker that computes nothing and reports "pass" is worse than none, and one that
complains about everything is just as useless. So both directions are checked: a
corrupted gradient must be flagged at exactly the corrupted entries, and the correct
gradient must pass.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import backends as _backends
from .._core.config import Config
from .._core.errors import GradientAssertionError
from .._core.verdict import Verdict
from .._pipeline.check import check
from .._report.report import Report
from .corrupt import CORRUPTIONS, Corrupting
from .kinds import run_control

if TYPE_CHECKING:
    from .._report.report import Report


def assert_detects_wrong_gradient(backend: Any = "numpy", *, engine: str = "auto", config: Config | None = None,
                                  adjudicate: bool | str = "auto", executor: Any = None, kind: str = "grad") -> None:
    """Raise :class:`GradientAssertionError` unless the checker, through ``backend``,
    flags a corrupted gradient at exactly its corrupted entries AND passes the correct one.

    Run it in the same test session as your real checks; if it ever fails, ignore every
    other result of that run.

    It works on every engine, and checks that the engine asked for is the one that ran:
    ``serial``, ``batched`` (the control function takes a leading batch axis),
    ``compiled`` (the numpy backend's control then runs an ``@njit`` twin of its control
    function, same math, same input and gradient; numba is imported for it),
    ``processes``, and ``executor`` (pass ``executor=``, as to :func:`gradcheck.check`).
    The compiled engine runs numpy-backend problems only.

    Parameters
    ----------
    backend : str or backend object, default "numpy"
        The backend to prove: ``"numpy"``, ``"dual"``, ``"torch"``, ``"jax"`` or an adapter.
    engine : str, default "auto"
        The engine the control must run on (``"serial"``, ``"batched"``, ``"compiled"``,
        ``"processes"``, ``"executor"``); a control that ran on another engine fails.
    config : Config, optional
        Steps and tolerances, as for :func:`gradcheck.check`.
    adjudicate : {"auto", True, False}, default "auto"
        The referee, as for :func:`gradcheck.check`.
    executor : concurrent.futures.Executor, optional
        Runs the control's differences there (``engine="executor"``).
    kind : str, default "grad"
        The claim: ``"grad"`` (a gradient), ``"jvp"`` (:func:`gradcheck.check_jvp`),
        ``"hvp"`` (:func:`gradcheck.check_hvp`, with the symmetric-Hessian test),
        ``"adjoint"`` (:func:`gradcheck.check_adjoint`: a transposed-wrong VJP must fail and
        be named), ``"taylor"`` (:func:`gradcheck.taylor_test` with a gradient and a Hessian),
        ``"complex"`` (:func:`gradcheck.check` on complex input); ``gradcheck._controls.kinds``
        holds them.

    Returns
    -------
    None
        The control passed: through this backend and engine the checker flags the corrupted
        entries, only them, and passes the correct claim.

    Raises
    ------
    GradientAssertionError
        The correct claim was not passed at every entry, the corrupted one was not flagged at
        exactly its corrupted entries, or another engine ran than the one asked for; ``.report``
        holds the report that shows it.
    ValueError
        An unknown ``kind``, or ``engine=``/``executor=`` for a kind that runs no engine.

    Examples
    --------
    >>> import gradcheck
    >>> gradcheck.assert_detects_wrong_gradient("numpy")
    >>> gradcheck.assert_detects_wrong_gradient("numpy", kind="taylor")
    """
    if kind != "grad":  # the other kinds of claim: gradcheck._orders
        options = dict(engine=engine, config=config, adjudicate=adjudicate, executor=executor)
        return run_control(kind, backend, **{k: v for k, v in options.items() if v is not None})
    be = _backends.resolve(backend, None)
    f, x, grad = be.control_problem()
    compiled_problem = getattr(be, "compiled_control_problem", None)
    if engine == "compiled" and compiled_problem is not None:
        f, x, grad = compiled_problem()  # the compiled engine refuses a Python f
    options = dict(engine=engine, config=config, adjudicate=adjudicate, executor=executor)
    good = check(f, x, grad, backend=be, name=f"control[{be.name}]", **options)
    assert isinstance(good, Report)  # one input array: one report
    _require_engine(good, engine, executor)
    if not good.passed or good.counts[Verdict.PASS] != good.size:
        raise GradientAssertionError(
            f"negative control failed: the CORRECT gradient through backend {be.name!r} was not "
            f"passed at every entry, so the checker cries wolf\n{good}", good,
        )
    bad = check(f, x, grad, backend=Corrupting(be), name=f"control[{be.name}, corrupted]", **options)
    assert isinstance(bad, Report)
    _require_engine(bad, engine, executor)
    expected = sorted(ix for ix, _ in CORRUPTIONS)
    flagged = sorted(bad.entries(Verdict.MISMATCH))
    if flagged != expected:
        raise GradientAssertionError(
            f"negative control failed: gradient corrupted at {expected} through backend {be.name!r}, "
            f"but the checker flagged {flagged}\n{bad}", bad,
        )


def _require_engine(report: Report, engine: str, executor: object) -> None:
    """A control that ran on another engine than asked for says nothing about that one."""
    wanted = "executor" if engine == "auto" and executor is not None else engine
    if wanted != "auto" and report.engine != wanted:
        raise GradientAssertionError(
            f"negative control failed: engine {wanted!r} was asked for, but the check ran on "
            f"{report.engine!r}, so the control says nothing about {wanted!r}\n{report}", report,
        )
