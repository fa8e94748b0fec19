"""What "normal" bfloat16 error looks like: PyTorch CPU ops judged against the exact value.

Each op runs in bfloat16 on the CPU; :func:`gradcheck.dispute` evaluates its mathematical
definition (numpy code below, run at 40 digits on the exact inputs) and measures torch's
output in bfloat16 ulps of the exact value. The float32 column is the same definition run
in float32 on the same inputs and rounded once to bfloat16 (what "compare with float32"
would give). Writes a markdown table (default ``docs/lowp_table.md``).

    python benchmarks/lowp_table.py                 # 65536 entries per op
    python benchmarks/lowp_table.py --quick         # 4096 entries per op
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np


def _one(x):
    """1 in x's number type (an MPFloat on arbitrary-precision arrays, float32 on float32)."""
    return x.reshape(-1)[:1] * 0 + 1


def _erf(x):
    if x.dtype == object:
        import mpmath

        from gradcheck.mp import MPFloat
        from gradcheck.mp._context import active

        # mpmath.erf rounds to mpmath's global precision (53 bits), not to the evaluation's
        # private 40-digit context: in gelu's far negative tail 1 + erf cancels them all
        # (x = -8: 2% off). The running computation's own context keeps its precision.
        ctx = active() or mpmath.mp
        return np.frompyfunc(lambda v: MPFloat(ctx.erf(v.value)), 1, 1)(x)
    try:
        from scipy.special import erf
    except ImportError:  # pragma: no cover - float64 erf, rounded to x's dtype
        return np.vectorize(math.erf)(x.astype(np.float64)).astype(x.dtype)
    return erf(x)


# The definitions, precision-generic: constants are built from the inputs' own number type.
def exp_math(x):
    return np.exp(x)


def tanh_math(x):
    return np.tanh(x)


def sigmoid_math(x):
    return 1 / (1 + np.exp(-x))


def silu_math(x):
    return x / (1 + np.exp(-x))


def gelu_math(x):
    return x * (1 + _erf(x / np.sqrt(2 * _one(x)))) / 2


def gelu_tanh_math(x):
    one = _one(x)
    c = np.sqrt(2 / np.arccos(-one))  # sqrt(2/pi)
    return x * (1 + np.tanh(c * (x + (one * 44715 / 1000000) * x ** 3))) / 2


def softmax_math(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def log_softmax_math(x):
    s = x - x.max(axis=-1, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=-1, keepdims=True))


def layer_norm_math(x):
    eps = _one(x) / 100000
    mu = x.mean(axis=-1, keepdims=True)
    d = x - mu
    return d / np.sqrt((d * d).mean(axis=-1, keepdims=True) + eps)


def rms_norm_math(x):
    eps = _one(x) / 100000
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)


def ops():
    import torch
    import torch.nn.functional as F

    n = 256
    return [
        ("exp", "torch.exp", exp_math, torch.exp, ("uniform", -10, 10)),
        ("tanh", "torch.tanh", tanh_math, torch.tanh, ("normal", 2.0)),
        ("sigmoid", "torch.sigmoid", sigmoid_math, torch.sigmoid, ("normal", 3.0)),
        ("silu", "F.silu", silu_math, F.silu, ("normal", 3.0)),
        ("gelu", "F.gelu", gelu_math, F.gelu, ("normal", 3.0)),
        ("gelu (tanh)", "F.gelu(approximate='tanh')", gelu_tanh_math,
         lambda t: F.gelu(t, approximate="tanh"), ("normal", 3.0)),
        ("softmax", "torch.softmax(dim=-1)", softmax_math, lambda t: torch.softmax(t, -1), ("normal", 3.0)),
        ("log_softmax", "torch.log_softmax(dim=-1)", log_softmax_math,
         lambda t: torch.log_softmax(t, -1), ("normal", 3.0)),
        ("layer_norm", f"F.layer_norm(({n},))", layer_norm_math, lambda t: F.layer_norm(t, (t.shape[-1],)),
         ("normal", 1.0)),
        ("rms_norm", f"F.rms_norm(({n},))", rms_norm_math, lambda t: F.rms_norm(t, (t.shape[-1],)),
         ("normal", 1.0)),
    ]


def _inputs(kind, rows: int, cols: int, seed: int):
    from gradcheck._core.formats import round_to_format

    rng = np.random.default_rng(seed)
    if kind[0] == "uniform":
        v = rng.uniform(kind[1], kind[2], (rows, cols))
    else:
        v = rng.standard_normal((rows, cols)) * kind[1]
    return round_to_format(v, "bfloat16", as_dtype=True)


def _describe(kind) -> str:
    return f"U({kind[1]}, {kind[2]})" if kind[0] == "uniform" else f"N(0, {kind[1]}²)"


def _pct(p: float) -> str:
    return f"{100 * p:.3f}%" if 0.999 < p < 1 else f"{100 * p:.1f}%"


NOTES = """Reading it: an op that computes in float32 and rounds once is correctly rounded almost
everywhere (max 0.5 ulp, mean 0.25 ulp): that is what "normal" looks like for exp, tanh,
sigmoid, silu, softmax, layer_norm and rms_norm. gelu's large errors sit in the negative
tail, where `1 + erf(x/sqrt 2)` (or `1 + tanh(...)`) cancels in float32: the float32
evaluation of the same formula loses about as much, so they are mostly the formula's (an
`erfc` form would keep them). "beyond bound" counts entries outside dispute's default
per-entry bound (2 ulp + twice what the float32 evaluation loses among the 101 entries
nearest in magnitude): F.gelu is off by up to 32 ulp at x in [-5.0, -4.6], where float32
arithmetic of the formula with a correctly rounded erf loses at most 7.6 ulp (torch's erf is
the less accurate one there: up to 1.9x the bound); torch's tanh-gelu returns 0 in the far
negative tail where float32 arithmetic of the formula can still give the 1e-7-sized value
(x near -5.1), and log_softmax loses 2 to 5 ulps on a row's maximum entry when that maximum
is large (x near 11 to 12), where the exact value is a small difference. All errors above
2 ulp of gelu are at x < -4.5."""


def main(quick: bool = False, out: str | None = "docs/lowp_table.md") -> dict:
    import torch

    from gradcheck import dispute
    from gradcheck.backends._torch import numpy_to_tensor, tensor_to_numpy

    torch.set_num_threads(1)
    rows, cols = (16, 256) if quick else (256, 256)
    results, lines = {}, []
    started = time.perf_counter()
    for seed, (name, call, math_fn, op, kind) in enumerate(ops()):
        x = _inputs(kind, rows, cols, seed)
        with torch.no_grad():
            y = tensor_to_numpy(op(numpy_to_tensor(x)))
        r = dispute(math_fn, (x,), {"torch": y}, "bfloat16", name=name)
        s, f = r.stats["torch"], r.float32
        results[name] = {"torch": s.to_dict(), "float32": None if f is None else f.to_dict(),
                         "seconds": r.seconds, "beyond_bound": s.beyond_count}
        lines.append(
            f"| {name} | `{call}` | {_describe(kind)} | {s.max_ulp:.3g} | {s.mean_ulp:.3f} | "
            f"{s.p99_ulp:.3g} | {_pct(s.correctly_rounded)} | {_pct(s.within_1ulp)} | "
            f"{'-' if f is None else f'{f.max_ulp:.3g}'} | {s.beyond_count} |")
        print(f"{name:<12} max {s.max_ulp:8.3g}  mean {s.mean_ulp:6.3f}  p99 {s.p99_ulp:6.3g}  "
              f"CR {100 * s.correctly_rounded:5.1f}%  <=1ulp {100 * s.within_1ulp:5.1f}%  "
              f"({r.seconds:.1f} s)", flush=True)
    elapsed = time.perf_counter() - started
    header = (
        f"PyTorch {torch.__version__} CPU ops in bfloat16, {rows}x{cols} = {rows * cols} entries each, "
        f"judged by `gradcheck.dispute` against the exact value of the definition (40 digits). "
        f"Errors in bfloat16 ulps of the exact value; \"float32 max\" is the definition evaluated in "
        f"float32 and rounded once. Generated by "
        f"`python benchmarks/lowp_table.py{' --quick' if quick else ''}` on "
        f"{time.strftime('%Y-%m-%d', time.gmtime())} in {elapsed:.0f} s.")
    table = "\n".join([
        "| op | torch call | input | max ulp | mean ulp | p99 ulp | correctly rounded | within 1 ulp | float32 max ulp | beyond bound |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        *lines])
    text = (f"# bfloat16 error of PyTorch CPU ops against the exact value\n\n{header}\n\n{table}\n\n"
            f"{NOTES}\n")
    if out:
        path = Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"written to {path}")
    print(table)
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4096 entries per op")
    parser.add_argument("--out", default="docs/lowp_table.md", help="markdown file ('' for none)")
    args = parser.parse_args()
    main(quick=args.quick, out=args.out or None)
    sys.exit(0)
