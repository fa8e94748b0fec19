"""What to do next, for a result's status: the last lines of its text and of its HTML page.

One rule per kind of result, from the result's own fields, so the text and the HTML say the
same: a FAIL names where to fix and which entry to look at first; an INCONCLUSIVE check the
way out; a screen that localized a dense error the entry-wise call that judges every entry;
a difference traced within the tolerance the rerun with a lower ``rtol``; a PASS how to keep
the check as a test. A rerun with another setting is spelled by :func:`rerun_with` alone.

Example:
    >>> import numpy as np, gradcheck
    >>> r = gradcheck.check(lambda x: (x**2).sum(), np.arange(1.0, 4.0), grad=lambda x: 2*x)
    >>> next_steps(r)[0].startswith("nothing to fix")
    True
"""
from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from .._core import status as _status
from .._core.verdict import Cause, Verdict
from .layout import describe_layout

#: The note a screen writes when it traced a difference that check's tolerance forgives.
_TRACED = re.compile(r"^disagreement traced to (?P<where>.*?): a difference beyond f's noise, within check's "
                     r"tolerance \(rtol (?P<rtol>[^)]+)\)")
_RELATIVE = re.compile(r"\(([0-9.e+-]+) relative\)")


def rerun_with(call: str, **changes: object) -> str:
    """The call that reruns a check with some settings changed (one place spells it).

    >>> rerun_with("check", rtol=1e-8)
    'gradcheck.check(f, x, grad, rtol=1e-08)'
    """
    settings = ", ".join(f"{k}={v!r}" for k, v in changes.items())
    return f"gradcheck.{call}(f, x, grad, {settings})"


def next_steps(result: Any) -> list[str]:
    """What to do next, in one or two sentences (the text's ``next:`` lines, the page's
    "Next" section), for any gradcheck result."""
    kind = type(result).__name__
    if kind == "Report" or hasattr(result, "codes"):
        return _report_steps(result)
    if kind == "MultiReport":
        return _multi_steps(result)
    if kind == "DisputeResult":
        return _dispute_steps(result)
    if kind == "SweepReport":
        return _sweep_steps(result)
    if kind == "ParamsReport":
        return _params_steps(result)
    if kind == "AdjointResult":
        return _adjoint_steps(result)
    if kind == "TaylorResult":
        return _taylor_steps(result)
    return _generic_steps(result)


def _report_steps(r: Any) -> list[str]:
    status = r.status
    screened = getattr(r, "detection_limit", None) is not None
    if status == _status.FAIL:
        return _fail_steps(r, screened)
    if status == _status.INCONCLUSIVE:
        _, way_out = _status.why_nothing_verified(r)
        return [f"make the check conclusive: {way_out.split('; ')[0]}, then rerun"]
    traced = _traced_within_tolerance(r)
    if traced:
        return [traced]
    if screened:
        return [_screen_pass_step(r)]
    unchecked = r.counts[Verdict.UNCHECKED]
    if unchecked:
        return [f"nothing to fix; {unchecked} entries are UNCHECKED and prove nothing (the notes say why): keep the "
                "check in a test with report.assert_pass(), which accepts them beside verified entries, or "
                "assert_pass(allow_unchecked=False), which does not"]
    return ["nothing to fix: keep the check in a test (report.assert_pass(), or the pytest fixture "
            "gradcheck.check(...), which also runs the negative control)"]


def _number(value: Any) -> str:
    """One claimed or settled value in ten significant digits; a complex one keeps both parts."""
    return f"{complex(value):.10g}" if np.iscomplexobj(value) else f"{float(value):.10g}"


def _fail_steps(r: Any, screened: bool) -> list[str]:
    steps = []
    if not r.deterministic:
        steps.append(f"make f deterministic (seed its random numbers, turn off dropout; f(x) changed by "
                     f"{r.drift:.3g} between two evaluations at the same x), then rerun: until then no verdict "
                     "can be trusted")
    mismatch = r.counts[Verdict.MISMATCH]
    if mismatch:
        ix = r.worst(1)[0]
        settled = "exact derivative" if r.cause(ix) in (Cause.EXACT, Cause.EXACT_ZERO) else "central difference"
        steps.append(f"fix the claimed gradient at {r.layout.text}: start with {ix}, which claims "
                     f"{_number(r.analytic[ix])} where the {settled} is {_number(r.numeric[ix])} "
                     f"(report.explain({ix}) says how it was settled)")
        if screened:
            steps.append(_screen_fail_step(r))
    nonfinite = r.counts[Verdict.NONFINITE]
    if nonfinite:
        where = describe_layout(r.codes == Verdict.NONFINITE).text
        steps.append(f"f or the claim is NaN or infinite at {where}: check at a point inside f's domain, or "
                     "fix the claim there")
    return steps


def _screen_fail_step(r: Any) -> str:
    evaluations = 2 * r.size
    if r.counts[Verdict.UNCHECKED]:
        return (f"the screen localized examples of a dense error and left {r.counts[Verdict.UNCHECKED]} entries "
                f"UNCHECKED: gradcheck.check(f, x, grad) judges every entry on its own ({evaluations} evaluations; "
                "with independent_axes=... far fewer when f's slices are independent)")
    return ("the other entries are cleared only down to their detection limits: after the fix, screen again, or "
            f"gradcheck.check(f, x, grad) for an entry-wise verdict everywhere ({evaluations} evaluations)")


def _screen_pass_step(r: Any) -> str:
    limit = np.asarray(r.detection_limit, dtype=np.float64).reshape(-1)
    scale = np.abs(np.asarray(r.analytic, dtype=np.float64)).reshape(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = limit / scale
    finite = relative[np.isfinite(relative)]
    median = f" (median {float(np.median(finite)):.2g} relative)" if finite.size else ""
    return (f"nothing found: every entry is cleared down to its detection limit{median}, and an error below it "
            f"passes; gradcheck.check(f, x, grad) judges each entry on its own ({2 * r.size} evaluations)")


def _traced_within_tolerance(r: Any) -> str:
    """The rerun with a lower rtol, when the notes say a difference was traced within it."""
    for note in r.notes:
        m = _TRACED.match(note)
        if m is None:
            continue
        relative = [float(v) for v in _RELATIVE.findall(m["where"])]
        target = min(relative) if relative else float(m["rtol"])
        rtol = 10.0 ** math.floor(math.log10(target / 3)) if target > 0 else float(m["rtol"]) / 10
        call = "screen" if getattr(r, "detection_limit", None) is not None else "check"
        first = m["where"].split(" and ")[0]
        return (f"a difference at {first} is within the tolerance (rtol {m['rtol']}), so it passes; if it is a "
                f"bug, rerun with a lower rtol to judge it a MISMATCH: {rerun_with(call, rtol=rtol)}")
    return ""


def _multi_steps(multi: Any) -> list[str]:
    failing = [k for k, r in enumerate(multi.reports) if r.status != _status.PASS]
    if not failing:
        return ["nothing to fix: every input passes; keep the check in a test (report.assert_pass())"]
    return [f"input {k}: {step}" for k in failing for step in _report_steps(multi.reports[k])]


def _dispute_steps(result: Any) -> list[str]:
    broken = list(getattr(result, "broken", ()))
    best = getattr(result, "most_accurate", None)
    if broken:
        keep = f"; {best} is the most accurate" if best and best not in broken else ""
        return [f"fix or replace {', '.join(broken)}: beyond its bound at the entries above{keep}"]
    return [f"no candidate is broken{f'; {best} is the most accurate' if best else ''}: keep the dispute as a "
            "test (result.broken == ())"]


def _sweep_steps(sweep: Any) -> list[str]:
    failed = list(getattr(sweep, "failed", ()))
    if not failed:
        return ["nothing to fix: every shape passes; keep the sweep as a test"]
    rule = getattr(sweep, "rule", None)
    said = f" the rule '{rule.text}' says which;" if rule is not None and getattr(rule, "found", False) else ""
    return [f"{len(failed)} shapes fail:{said} start with {failed[0]}, whose report sweep.report({failed[0]}) "
            "shows where its entries fail"]


def _params_steps(p: Any) -> list[str]:
    """check_params: the first failing name in backward order with the diagnosis, or the way
    out for a name that verified nothing."""
    if p.failing:
        first = p.failing[0]
        said = f" ({p.diagnosis.text})" if getattr(p.diagnosis, "text", "") else ""
        steps = [f"start with {first}{said}: fix its gradient at {p.reports[first].layout.text}, the first "
                 "failing name in backward order (its section above shows the entries)"]
        return steps
    if p.inconclusive:
        name = p.inconclusive[0]
        _, way_out = _status.why_nothing_verified(p.reports[name])
        return [f"make {name} conclusive: {way_out.split('; ')[0]}, then rerun"]
    return ["nothing to fix: every name passes; keep the check in a test (report.assert_pass())"]


def _adjoint_steps(a: Any) -> list[str]:
    """check_adjoint: which model to fix, or how to learn which one."""
    if a.status == _status.PASS:
        more = "" if a.blame else "; pass f= to also test both against finite differences of f"
        return [f"nothing to fix: the models are adjoint; keep the test (result.assert_pass()){more}"]
    steps = [f"fix the {m}: it is not linear (its linearity defect is beyond round-off; "
             "a model with a branch on its input, or state kept between calls)" for m in a.nonlinear]
    if a.inconsistent:
        calls = {"jvp": "gradcheck.check_jvp(f, x, jvp)", "vjp": "gradcheck.check(f, x, vjp)"}
        steps.append(f"fix the {' and the '.join(a.inconsistent)}: inconsistent with finite differences of f; "
                     f"{' and '.join(calls[m] for m in a.inconsistent)} shows at which entries")
    elif not steps:
        steps.append("the jvp and the vjp are not transposes of each other: pass f= to learn which one is "
                     "wrong, or check each against f (gradcheck.check_jvp(f, x, jvp), gradcheck.check(f, x, vjp))")
    return steps


def _taylor_steps(t: Any) -> list[str]:
    """taylor_test: the entry-wise check that says where, or the way out of round-off."""
    status = t.status
    if status == _status.PASS:
        return ["nothing to fix: keep the test (result.assert_pass()); gradcheck.check(f, x, grad) judges "
                "every entry on its own"]
    if status == _status.INCONCLUSIVE:
        return ["make it conclusive: run f in float64, or pass a larger h0= (too few steps stood above "
                "round-off), then rerun"]
    gradient_holds = len(t.remainders) > 1 and t._status_of(0) == _status.PASS
    what = "the Hessian-vector product" if gradient_holds else "the gradient"
    call = ("gradcheck.check(f, x, grad)" if what == "the gradient" else "gradcheck.check_hvp(f, x, hvp, grad=grad)")
    return [f"fix {what}: its remainder does not shrink at the order it must; {call} says at which entries"]


def _generic_steps(result: object) -> list[str]:
    status = str(getattr(result, "status", "PASS" if getattr(result, "passed", False) else "FAIL"))
    if status == _status.PASS:
        return ["nothing to fix: keep it as a test (the result's assert_pass(), or the pytest fixture)"]
    failing = getattr(result, "failing", None)
    diagnosis = getattr(getattr(result, "diagnosis", None), "text", "")
    if failing:
        where = f"start with {failing[0]}" + (f" ({diagnosis})" if diagnosis else "")
        return [f"{where}: its section shows where its entries fail"]
    if status == _status.INCONCLUSIVE:
        return ["make it conclusive: the notes say why nothing could be verified"]
    return ["fix the claim the verdict above names, then rerun"]
