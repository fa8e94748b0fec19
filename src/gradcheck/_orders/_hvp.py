"""``check_hvp``: a claimed Hessian-vector product, checked at every entry.

The Hessian is the Jacobian of the gradient map ``g(x) = grad f(x)``, so a claimed
``hvp(x, v) = H v`` is the VJP of ``g`` (``H`` is symmetric): ``check(g, x, hvp)`` judges
entry ``i`` of ``hvp(x, v)`` against the central difference of ``v . g`` along ``e_i``, with
``check``'s seeded ``v``, verdicts, step study and referee (which runs a numpy ``grad`` at
arbitrary precision). Where ``g`` comes from:

* ``grad=`` given: the claimed gradient, checked first by ``check(f, x, grad)`` (a wrong
  reference would make every verdict meaningless; a failure raises with its report);
* a torch or jax input and ``grad=None``: the framework's gradient, checked first alike
  (checked at ``x``: a backward right at ``x`` but wrong nearby moves these differences;
  ``reference="f"`` rules that out);
* numpy without ``grad`` (or ``reference="f"``): second differences of ``f``. The
  checked function is ``G(x) = (f(x + k v) - f(x - k v)) / 2k``, differenced along ``e_i``
  with the step
  ``h = k = (2u)^(1/4)`` (both truncation errors ``O(h^2)``); its round-off is that of a
  number of size ``(|f(x+kv)| + |f(x-kv)|) / 2k``, and ``G`` carries that constant as an
  offset so that ``check``'s noise model (``u |G| / h``) sees it. The referee is off in
  this mode: its exact value would be that of the finite difference along ``v``.

A complex ``x`` (``f`` real-valued): the gradient and ``hvp`` are in ``complex_convention``
(:mod:`._complex`; ``hvp(x, v)`` is the derivative of that gradient along ``v``), and the
reference checks them through complex ``check`` (second differences along a complex ``v``).

``hvp=None`` with torch or jax checks double backward (``torch.autograd.grad`` with
``create_graph=True``; ``jax.jvp`` of ``jax.grad``). The symmetric-Hessian test
``<u, H w> = <w, H u>`` (the adjoint test of ``hvp`` against itself) runs on the claim;
its result is a note of the report; when it is broken but every entry passed (the only
evidence of the bug), ``check_hvp`` raises :class:`~gradcheck.GradientAssertionError` with
the report, as ``check`` does for a broken autodiff contract.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._adjoint import check_adjoint
from ._complex import along, convention_of, random_like
from ._jvp import call_user
from ._links import (
    KEYWORD_FIELDS,
    ClaimBackend,
    Config,
    GradientAssertionError,
    Report,
    backends,
    check,
    choice,
    dtype_name,
    flag,
    label_of,
    require_call,
    text,
    unit_roundoff_of,
    with_keywords,
    with_notes,
)

#: Tags the random direction's stream (``default_rng([seed, DIRECTION_STREAM])``): never the
#: stream of ``default_rng(seed)``, the usual way to draw a test input.
DIRECTION_STREAM = 0xD12EC7


def check_hvp(f: Callable[..., Any], x: Any, hvp: Callable[..., Any] | None = None, *,
              grad: Callable[..., Any] | None = None, reference: str = "auto", check_grad: bool = True,
              symmetry: bool = True, backend: Any = None, name: str | None = None,
              config: Config | None = None, **options: Any) -> Report:
    """Check ``hvp(x, v) = H v`` (the Hessian of a scalar ``f``) at every entry.

    ``grad`` (a function ``grad(x)``) is the gradient whose differences give the reference;
    it is checked first (``check_grad=False`` skips that, when it has just been checked).
    Without ``grad``, torch and jax use the framework's gradient and numpy uses second
    differences of ``f`` (see the module docstring). ``reference="f"`` uses second
    differences of ``f`` even when a gradient is at hand: the gradient is checked at ``x``
    only, and a backward right at ``x`` but wrong nearby would move its differences;
    ``f`` is independent of it (at a coarser resolution). ``hvp=None`` with torch or jax
    checks double backward. ``symmetry`` runs the symmetric-Hessian test on the claim.

    Parameters
    ----------
    f : callable
        A scalar function ``f(x)``.
    x : array_like
        The point (numpy, torch or jax).
    hvp : callable, optional
        The claim, ``hvp(x, v) -> H v``, shaped like ``x``; None checks the framework's
        double backward (torch, jax).
    grad : callable, optional
        ``grad(x)``, the gradient whose central differences are the reference.
    reference : {"auto", "grad", "f"}, default "auto"
        ``"grad"``: differences of the gradient; ``"f"``: second differences of ``f``;
        ``"auto"``: the gradient when one is at hand, else ``f``.
    check_grad : bool, default True
        Check the reference gradient first (with :func:`gradcheck.check`).
    symmetry : bool, default True
        Run the symmetric-Hessian test ``<u, H w> = <w, H u>`` on the claim.
    backend : str or backend object, optional
        As for :func:`gradcheck.check`; default: inferred from ``x``.
    name : str, optional
        What the report calls the claim (default ``"hvp of <f's name>"``).
    config : Config, optional
        Steps and tolerances.
    **options
        Any other keyword of :func:`gradcheck.check`, the tolerance keywords among them
        (``rtol=``, ``atol=``, ``eps=``, ``resolution=``, ``noise_factor=``); with second
        differences of ``f``, ``eps`` is their step ``h = k`` (default ``(2u)^(1/4)``).

    Returns
    -------
    Report
        One verdict per entry of ``H v``; the symmetry test's outcome is in its notes.

    Raises
    ------
    GradientAssertionError
        The reference gradient is wrong (``check_grad``), or the claim fails the symmetry test
        while every entry passed (the only evidence of a bug is the asymmetry).
    TypeError
        ``hvp=None`` for a backend without double backward, ``grad`` not a function, or
        ``reference="grad"`` without a gradient.
    ValueError
        An unknown ``reference``.

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> f = lambda x: np.sum(x**3)
    >>> r = gradcheck.check_hvp(f, np.array([0.5, -1.0]), lambda x, v: 6 * x * v, grad=lambda x: 3 * x**2)
    >>> r.passed
    True
    """
    check_grad, symmetry = bool(flag("check_grad", check_grad)), bool(flag("symmetry", symmetry))
    name = text("name", name)
    config, tuning = with_keywords(config, **{k: options.pop(k, None) for k in KEYWORD_FIELDS})
    reference = choice("reference", reference, ("auto", "grad", "f"))
    if hvp is not None and not callable(hvp):
        raise TypeError(f"hvp must be a function hvp(x, v) returning the Hessian times v, or None (the "
                        f"framework's double backward), got {hvp!r}")
    inner = backends.resolve(backend, x)
    x_np = np.array(inner.to_numpy(x), copy=True)
    label = name or f"hvp of {label_of(f)}"
    if hvp is None and not hasattr(inner, "hvp"):
        raise TypeError(f"the {inner.name} backend has no double backward of its own: pass hvp=, a "
                        "function hvp(x, v) returning the Hessian times v")
    if grad is not None and not callable(grad):
        raise TypeError("check_hvp differences the gradient at perturbed points: grad must be a "
                        "function grad(x), not an array")
    require_calls(hvp, grad)
    has_gradient = grad is not None or hasattr(inner, "hvp")
    if reference == "grad" and not has_gradient:
        raise TypeError("reference='grad' needs grad= (a function grad(x)) for the numpy backend")
    claim_fn = _claim(f, inner, hvp)
    notes = []
    if reference == "f" or not has_gradient:
        report = _second_differences(f, x_np, inner, claim_fn, label, config, tuning, options)
    else:
        options.update(tuning.keywords())  # check sets them on its preset
        if check_grad:
            notes.append(_reference_checked(f, x, grad, inner, config, options))
        report = _gradient_map(f, x_np, inner, grad, claim_fn, label, config, options)
    if symmetry:
        notes.extend(_symmetric(claim_fn, x_np, report, convention_of(options.get("complex_convention"), inner)))
    return with_notes(report, notes)


def require_calls(hvp: Any, grad: Any) -> None:
    """``hvp(x, v)`` and ``grad(x)`` as check_hvp (and taylor_test) call them, at the door."""
    if callable(hvp):
        require_call(hvp, "hvp", ("x", "v"), why="the Hessian-vector product is called with the point and a "
                     "vector", returns="H v, shaped like x")
    if callable(grad):
        require_call(grad, "grad", ("x",), why="f is a scalar function", returns="the gradient, shaped like x")


def _claim(f, inner, hvp) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``(x, v) -> H v`` from the user's ``hvp`` (in the backend's array type) or from the
    framework's double backward."""
    if hvp is None:
        def claim(z: Any, v: Any) -> Any:
            return np.asarray(inner.hvp(f, np.array(z, copy=True), np.asarray(v)))
        claim.source = f"{inner.name}'s double backward"  # type: ignore[attr-defined]
    else:
        def claim(z: Any, v: Any) -> Any:
            return call_user(inner, hvp, z, np.asarray(v, dtype=z.dtype), role="hvp", names=("x", "v"))
        claim.source = "the given hvp"  # type: ignore[attr-defined]
    return claim


def _reference_checked(f, x, grad, inner, config, options) -> str:
    """Check the gradient that serves as the reference; raise if it is wrong."""
    kept = {k: v for k, v in options.items()
            if k in ("engine", "adjudicate", "digits", "refine", "complex_convention", *KEYWORD_FIELDS)}
    report = check(f, x, grad, backend=inner, config=config, name="the reference gradient", **kept)
    if not report.passed:
        raise GradientAssertionError(
            "check_hvp differences the gradient, and the gradient fails its own check: fix it "
            f"first (every Hessian verdict would be judged against a wrong reference)\n{report}", report)
    return f"the reference gradient was checked first: {report.summary()}"


def _gradient_map(f, x_np, inner, grad, claim_fn, label, config, options) -> Report:
    """``check(g, x, hvp)`` with ``g`` the (checked) gradient map as numpy in, numpy out."""
    if grad is None:
        g = lambda z: np.asarray(inner.claimed_gradient(f, np.array(z, copy=True), None, None))  # noqa: E731
    else:
        g = lambda z: np.asarray(inner.claimed_gradient(f, z, None, grad))  # noqa: E731
    g.__name__ = "gradient"
    numpy_code = inner.name == "numpy"  # the referee can run a numpy grad on mp arrays
    be = ClaimBackend(backends.resolve("numpy", x_np), claim_fn, name=f"hvp-{inner.name}",
                      mp_capable=numpy_code)
    report = check(g, x_np, None, backend=be, name=label, config=config, **options)
    source = "the given gradient" if grad is not None else f"{inner.name}'s gradient"
    return with_notes(report, [f"reference: central differences of v . grad f ({source}); "
                               f"claim: {claim_fn.source}"])


def _second_differences(f, x_np, inner, claim_fn, label, config, tuning, options) -> Report:
    """``check(G, x, hvp(x, v))`` with ``G`` the central difference of ``f`` along ``v``."""
    complex_in = x_np.dtype.kind == "c"
    dtype = dtype_name(np.finfo(x_np.dtype).dtype if complex_in else x_np.dtype)  # a complex x: its parts'
    unit = unit_roundoff_of(x_np)
    # eps= (or a config's own step) sets h = k; else (2u)^(1/4), both truncation errors O(h^2)
    cfg = tuning.on(config, dtype)
    step = cfg.step if "eps" in tuning.keywords() else (2 * unit) ** 0.25
    cfg = cfg.replace(step=step)
    # Its own stream (not default_rng(seed)'s, which would make v = x for x drawn with the seed).
    # Complex x: v complex, G = <grad, v> (real inner product), whose gradient is hvp(x, v) in
    # either convention (gradcheck._orders._complex).
    v = random_like(np.random.default_rng([int(cfg.seed), DIRECTION_STREAM]), x_np.shape, complex_in)
    k = step * max(1.0, float(np.abs(x_np).max(initial=0))) / float(np.abs(v).max(initial=1))
    plus, minus = along(inner, f, x_np, v, lambda y: y, (k, -k),
                        ("at x + k v (the second differences' offset)", "at x - k v (the second differences' offset)"))
    offset = (abs(plus) + abs(minus)) / (2 * k)

    def directional(z):
        fp = np.asarray(inner.evaluate(f, z + k * v), dtype=np.float64)
        fm = np.asarray(inner.evaluate(f, z - k * v), dtype=np.float64)
        return (fp - fm) / (2 * k) + offset  # the offset: see the module docstring

    directional.__name__ = "second differences"
    be = ClaimBackend(backends.resolve("numpy", x_np), lambda z, _: claim_fn(z, v), name="hvp-numpy",
                      mp_capable=False)
    opts = dict(options)
    opts.setdefault("adjudicate", False)
    report = check(directional, x_np, None, backend=be, name=label, config=cfg, **opts)
    return with_notes(report, [f"reference: second differences of f (no grad given): steps h = k = {step:.2g} "
                               "relative, each evaluation of G is two of f; the referee does not run on them"])


def symmetric_hessian(claim_fn: Callable[[np.ndarray, np.ndarray], np.ndarray], x_np: np.ndarray,
                      convention: str | None = None) -> Any:
    """The symmetric-Hessian test: ``check_adjoint`` of ``v -> H v`` against itself
    (``<u, H w> = <w, H u>`` on seeded draws, with that test's round-off bound; a complex
    ``x``'s Hessian-vector product in ``convention``)."""
    return check_adjoint(lambda z, t: claim_fn(z, t), lambda z, w: claim_fn(z, w), x_np,
                         backend="numpy", seed=1, name="symmetric Hessian <u, H w> = <w, H u>",
                         complex_convention=convention)


def _symmetric(claim_fn, x_np, report, convention: str) -> list[str]:
    """The symmetric test's note; a violation the entry-wise check did not see (the
    report passes) raises with the report, so that it cannot pass silently."""
    result = symmetric_hessian(claim_fn, x_np, convention)
    worst = max(d / b if b > 0 else (0.0 if d == 0 else np.inf) for d, b in zip(result.differences, result.bound))
    note = (f"symmetric Hessian <u, H w> = <w, H u>: {'holds' if result.passed else 'BROKEN'} "
            f"(worst |difference|/bound {worst:.2g}, {len(result.forward)} draws)")
    if not result.passed and report.passed:
        raise GradientAssertionError(f"the claimed Hessian-vector product is not symmetric:\n{result}\n"
                                     f"{with_notes(report, [note])}", report)
    return [note]
