"""Beyond first-order reverse mode, measured: gradcheck next to torch.autograd.gradcheck /
gradgradcheck and jax.test_util.check_grads on the same planted bugs.

Each scenario has a correct claim and claims with a planted error of a given size at one
entry of a 3x4 float64 input (or a 1e5-entry operator). Every tool is run with its
defaults; a cell says whether the tool flagged the planted bug ("caught") or not
("missed"), whether it passed the correct claim, and whether it named the wrong entry.
Writes a markdown table (default ``docs/peers_orders.md``) and prints it.

    python benchmarks/peers_orders.py
"""
from __future__ import annotations

import argparse
import contextlib
import io
import time
import warnings
from pathlib import Path

import numpy as np

import gradcheck

X = np.array([[0.3, -1.2, 2.0, 1.1], [0.9, 0.5, -0.7, -1.6], [1.3, -0.4, 0.8, 2.5]])
W = np.linspace(-1.5, 1.3, 12).reshape(3, 4)
ENTRY = (1, 2)


def _quiet(fn):
    """Run ``fn``; True if it passed, False if it raised an assertion/GradcheckError."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        try:
            result = fn()
            return True if result is None else bool(result)
        except Exception as exc:  # noqa: BLE001 - any failure of the tool counts as "flagged"
            return False if _is_flag(exc) else f"error: {type(exc).__name__}"


def _is_flag(exc) -> bool:
    import sys

    import torch  # noqa: F401

    return isinstance(exc, (AssertionError, sys.modules["torch.autograd.gradcheck"].GradcheckError))


# -- torch subjects --------------------------------------------------------------------------


def torch_function(jvp_error=0.0, second_error=0.0, complex_input=False):
    """sum(w * x sin(x)) through a custom Function with a hand-written backward and jvp;
    ``jvp_error`` scales the jvp rule at ENTRY, ``second_error`` scales only the derivative
    of the backward (its double backward) at ENTRY."""
    import torch

    mask = torch.zeros(3, 4, dtype=torch.float64)
    mask[ENTRY] = 1.0

    class F(torch.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x.sin() * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])
            ctx.save_for_forward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            d = x.cos() * x + x.sin()
            d = d.detach() + (1 + second_error * mask) * (d - d.detach())  # values unchanged
            return g * d

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return t * (x.cos() * x + x.sin()) * (1 + jvp_error * mask)

    w = torch.from_numpy(W)
    return lambda t: (w * F.apply(t)).sum()


def torch_complex(error=0.0):
    import torch

    class A(torch.autograd.Function):
        @staticmethod
        def forward(ctx, z):
            ctx.save_for_backward(z)
            return z.abs() ** 2

        @staticmethod
        def backward(ctx, g):
            (z,) = ctx.saved_tensors
            out = 2 * g * z
            out[ENTRY] = out[ENTRY] * (1 + error)
            return out

    w = torch.from_numpy(W)
    return lambda t: (w * A.apply(t)).sum()


# -- jax subjects ----------------------------------------------------------------------------


def jax_function(jvp_error=0.0, second_error=0.0):
    import jax
    import jax.numpy as jnp

    mask = np.zeros((3, 4))
    mask[ENTRY] = 1.0

    @jax.custom_jvp
    def g(x):
        return jnp.sin(x) * x

    @g.defjvp
    def rule(primals, tangents):
        (x,), (t,) = primals, tangents
        d = jnp.cos(x) * x + jnp.sin(x)
        d = jax.lax.stop_gradient(d) + (1 + second_error * mask) * (d - jax.lax.stop_gradient(d))
        return g(x), d * t * (1 + jvp_error * mask)

    return lambda x: (W * g(x)).sum()


def jax_complex(error=0.0):
    import jax
    import jax.numpy as jnp

    @jax.custom_vjp
    def a(z):
        return jnp.abs(z) ** 2

    def fwd(z):
        return a(z), z

    def bwd(z, g):
        return (2 * g * jnp.conj(z) * jnp.ones(z.shape).at[ENTRY].set(1 + error),)

    a.defvjp(fwd, bwd)
    return lambda t: (W * a(t)).sum()


# -- the scenarios ---------------------------------------------------------------------------


def _localised(report) -> bool:
    return report.entries(gradcheck.Verdict.MISMATCH) == [ENTRY]


def run_jvp(error):
    import torch
    from jax.test_util import check_grads

    xt = torch.tensor(X, requires_grad=True)
    ours_t = gradcheck.check_jvp(torch_function(jvp_error=error), torch.tensor(X))
    ours_j = gradcheck.check_jvp(jax_function(jvp_error=error), X, backend="jax")
    torch_ok = _quiet(lambda: torch.autograd.gradcheck(torch_function(jvp_error=error), (xt,),
                                                       check_forward_ad=True, check_backward_ad=False))
    with _x64():
        jax_ok = _quiet(lambda: check_grads(jax_function(jvp_error=error), (X,), order=1, modes=("fwd",)))
    return {"gradcheck (torch)": (ours_t.passed, error == 0 or _localised(ours_t)),
            "gradcheck (jax)": (ours_j.passed, error == 0 or _localised(ours_j)),
            "torch.autograd.gradcheck(check_forward_ad=True)": (torch_ok, None),
            "jax check_grads(order=1, modes=('fwd',))": (jax_ok, None)}


def run_second(error):
    import torch
    from jax.test_util import check_grads

    xt = torch.tensor(X, requires_grad=True)
    ours_t = gradcheck.check_hvp(torch_function(second_error=error), torch.tensor(X))
    ours_j = gradcheck.check_hvp(jax_function(second_error=error), X, backend="jax")
    torch_ok = _quiet(lambda: torch.autograd.gradgradcheck(torch_function(second_error=error), (xt,)))
    with _x64():
        jax_ok = _quiet(lambda: check_grads(jax_function(second_error=error), (X,), order=2, modes=("fwd", "rev")))
    return {"gradcheck (torch)": (ours_t.passed, error == 0 or _localised(ours_t)),
            "gradcheck (jax)": (ours_j.passed, error == 0 or _localised(ours_j)),
            "torch.autograd.gradgradcheck": (torch_ok, None),
            "jax check_grads(order=2, modes=('fwd', 'rev'))": (jax_ok, None)}


def run_complex(error):
    import torch
    from jax.test_util import check_grads

    z = X + 1j * X[::-1, ::-1]
    zt = torch.tensor(z, requires_grad=True)
    ours_t = gradcheck.check(torch_complex(error), torch.tensor(z))
    ours_j = gradcheck.check(jax_complex(error), z, backend="jax")
    torch_ok = _quiet(lambda: torch.autograd.gradcheck(torch_complex(error), (zt,)))
    with _x64():
        jax_ok = _quiet(lambda: check_grads(jax_complex(error), (z,), order=1, modes=("rev",)))
    return {"gradcheck (torch)": (ours_t.passed, error == 0 or _localised(ours_t)),
            "gradcheck (jax)": (ours_j.passed, error == 0 or _localised(ours_j)),
            "torch.autograd.gradcheck": (torch_ok, None),
            "jax check_grads(order=1, modes=('rev',))": (jax_ok, None)}


def run_adjoint(n=100_000):
    """A 1-D convolution layer on n inputs whose backward convolves instead of correlating."""
    import torch

    kernel = np.random.default_rng(6).standard_normal(9)
    k = torch.from_numpy(kernel)
    x = np.random.default_rng(7).standard_normal(n) * 0.1

    def conv(t):
        return torch.nn.functional.conv1d(t.view(1, 1, -1), k.flip(0).view(1, 1, -1), padding=8).view(-1)

    class Wrong(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return conv(t)

        @staticmethod
        def jvp(ctx, t):  # forward mode right
            return conv(t)

        @staticmethod
        def backward(ctx, g):  # planted: convolve (flipped kernel) where a correlation is due
            return torch.nn.functional.conv1d(g.view(1, 1, -1), k.flip(0).view(1, 1, -1)).view(-1)

    out = {}
    for label, op in (("correct", conv), ("transposed-wrong", Wrong.apply)):
        f = lambda t, op=op: torch.tanh(op(t))  # noqa: E731
        started = time.perf_counter()
        r = gradcheck.check_adjoint(None, None, torch.tensor(x), f=f)
        ours = (r.passed, time.perf_counter() - started)
        xt = torch.tensor(x, requires_grad=True)
        started = time.perf_counter()
        fast = _quiet(lambda f=f, xt=xt: torch.autograd.gradcheck(f, (xt,), fast_mode=True))
        out[label] = {"gradcheck.check_adjoint": ours, "torch gradcheck(fast_mode=True)":
                      (fast, time.perf_counter() - started)}
    return out


@contextlib.contextmanager
def _x64():
    import jax

    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", before)


def _cell(value) -> str:
    passed, named = value
    if isinstance(passed, str):
        return passed
    text = "passes" if passed else "flags"
    if named is not None and not passed:
        text += " (names the entry)" if named else " (wrong entries)"
    return text


def table() -> str:
    import jax
    import torch

    rows = ["| claim (3x4 float64 input, planted at one entry) | tool | correct claim | 1e-2 error | 1e-4 error |",
            "| --- | --- | --- | --- | --- |"]
    for title, runner in (("forward mode (custom jvp rule)", run_jvp),
                          ("second order only (double backward of a custom rule; first order exact)", run_second),
                          ("complex input, \\|z\\|^2 loss (custom backward)", run_complex)):
        results = {e: runner(e) for e in (0.0, 1e-2, 1e-4)}
        for tool in results[0.0]:
            cells = [_cell(results[e][tool]) for e in (0.0, 1e-2, 1e-4)]
            rows.append(f"| {title} | {tool} | " + " | ".join(cells) + " |")
    adj = run_adjoint()
    rows.append("")
    rows.append("| adjoint consistency, tanh(conv1d) on 1e5 inputs | tool | correct pair | transposed-wrong backward |")
    rows.append("| --- | --- | --- | --- |")
    for tool in adj["correct"]:
        cells = []
        for label in ("correct", "transposed-wrong"):
            ok, seconds = adj[label][tool]
            cells.append(f"{'passes' if ok is True else ('flags' if ok is False else ok)} ({seconds:.2f} s)")
        rows.append(f"| | {tool} | " + " | ".join(cells) + " |")
    rows.append("")
    rows.append(f"torch {torch.__version__}, jax {jax.__version__}, gradcheck {gradcheck.__version__}; "
                "each tool with its default tolerances. 'flags' on the correct claim would be a false alarm.")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs/peers_orders.md")
    args = parser.parse_args()
    text = table()
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
