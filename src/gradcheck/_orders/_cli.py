"""The command line of this feature: ``gradcheck check --jvp/--hvp`` and ``gradcheck taylor``.

``cli.py`` calls :func:`add_check_options` and :func:`add_taylor_parser` when it builds its
parser, and :func:`check_orders` when ``--jvp`` or ``--hvp`` is given; everything else is
here, so the edits in ``cli.py`` stay a few lines.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from ._hvp import check_hvp
from ._jvp import check_jvp
from ._taylor import taylor_test

#: Exit codes, as in ``cli.py``; 3 is "inconclusive" (nothing could be verified).
EXIT_PASS, EXIT_FAIL, EXIT_INCONCLUSIVE = 0, 1, 3


def add_check_options(parser: argparse.ArgumentParser) -> None:
    """``--jvp`` and ``--hvp`` for ``gradcheck check``."""
    parser.add_argument("--jvp", metavar="MODULE:FUNC",
                        help="check a forward-mode claim jvp(x, t) = J t at every entry (instead of --grad)")
    parser.add_argument("--hvp", metavar="MODULE:FUNC",
                        help="check a Hessian-vector product hvp(x, v) at every entry; --grad (if given) is "
                             "the gradient it is differenced from (else second differences of f)")


def check_orders(args: argparse.Namespace, f: Any, x: Any, grad: Any, load: Callable[[str], Any],
                 **options: Any) -> Any:
    """The report of ``gradcheck check --jvp`` / ``--hvp``."""
    if args.jvp and args.hvp:
        raise ValueError("give --jvp or --hvp, not both")
    if args.jvp:
        if grad is not None:
            raise ValueError("--jvp replaces --grad: the claim is the JVP")
        return check_jvp(f, x, load(args.jvp), **options)
    return check_hvp(f, x, load(args.hvp), grad=grad, **options)


def add_taylor_parser(sub: Any, load: Callable[[str], Any], parse_shape: Callable[[str], tuple[int, ...]]) -> None:
    """The ``gradcheck taylor`` subcommand; ``load`` and ``parse_shape`` are the command line's
    (``gradcheck._cli``, a later stage: ``cli.py`` hands them over)."""
    tay = sub.add_parser(
        "taylor", help="Taylor remainder test of MODULE:FUNC's claimed gradient (and Hessian)",
        description="Remainders |f(x+hd) - f(x) - h grad.d| (and minus h^2/2 d.Hd with --hvp) at halving "
        "steps: order >= 1.9 (>= 2.9 with --hvp) passes. Exit 0: pass; 1: fail; 2: usage error; "
        "3: inconclusive (round-off everywhere).")
    tay.add_argument("function", help="MODULE:FUNC, a scalar function of one array")
    tay.add_argument("--grad", required=True, metavar="MODULE:FUNC", help="the claimed gradient grad(x)")
    tay.add_argument("--hvp", metavar="MODULE:FUNC", help="the claimed Hessian-vector product hvp(x, v)")
    tay.add_argument("--input", help="a .npy file holding x (loaded with allow_pickle=False)")
    tay.add_argument("--shape", type=parse_shape, metavar="D0,D1,...", help="random normal x of this shape, e.g. 3,4")
    tay.add_argument("--seed", type=int, default=0, help="seed of x (with --shape) and of the direction")
    tay.add_argument("--plot", metavar="FILE.png", help="also write the log-log picture (needs matplotlib)")
    tay.add_argument("--json", action="store_true")
    tay.set_defaults(run=lambda args: _cmd_taylor(args, load))


def _cmd_taylor(args: argparse.Namespace, load: Callable[[str], Any]) -> int:
    if args.input:
        x = np.load(args.input, allow_pickle=False)
    elif args.shape is not None:
        x = np.random.default_rng(args.seed).standard_normal(args.shape)
    else:
        raise ValueError("give --input FILE.npy or --shape D0,D1,...")
    hvp = load(args.hvp) if args.hvp else None
    result = taylor_test(load(args.function), x, load(args.grad), hvp, seed=args.seed, name=args.function)
    print(result.to_json() if args.json else result)
    if args.plot:
        print(f"picture written to {result.plot(args.plot)}", file=sys.stderr)
    return {"PASS": EXIT_PASS, "FAIL": EXIT_FAIL}.get(result.status, EXIT_INCONCLUSIVE)
