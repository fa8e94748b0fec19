"""The ``gradcheck`` command line (also ``python -m gradcheck``).

MODULE:NAME arguments are imported with the current directory first on ``sys.path``,
as ``python -m`` does: ``gradcheck check mymod:f`` finds ``./mymod.py``.
Exit codes (:data:`EXIT_CODES`, the epilog of every command's help; the same for every
command): 0 every check passed (``dispute``: no candidate is broken), 1 a mismatch was found
(``dispute``: a candidate is broken), 2 usage error (including a --fn that cannot be
evaluated at arbitrary precision), 3 inconclusive (nothing could be verified), 4 the user's
code failed: the function or the gradient raised (or killed its worker), or its module
could not be imported; one line names it, the exception and the entry; 5 gradcheck itself
failed (a bug in gradcheck: the traceback is printed, please report it). A reader that
closes the pipe early (``| head``) changes neither: the files asked for are written first.
"""
from __future__ import annotations

import argparse
import atexit
import gc
import sys
import traceback
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._cli import (
    CommandParser,
    UserCodeError,
    Watched,
    load,
    one_line,
    parse_axes,
    parse_shape,
    quiet_broken_pipe,
)
from ._cli.dispute import add_dispute_parser, load_array
from ._cli.help import (
    EXIT_CODES,
    EXIT_FAIL,
    EXIT_INCONCLUSIVE,
    EXIT_INTERNAL,
    EXIT_PASS,
    EXIT_RAISED,
    EXIT_USAGE,
)
from ._core.config import Config, dtype_name
from ._core.errors import FunctionError, InputMutationError, WorkerDiedError
from ._core.formats import resolve_format, round_to_format
from ._demo.bench import discover, find_directory, run_benchmarks
from ._demo.showcases import DEFAULT_OUT, run_demo
from ._orders import add_check_options, add_taylor_parser, check_orders  # --jvp/--hvp, taylor
from ._pipeline.check import check
from ._screen import screen
from ._version import __version__

__all__ = ["EXIT_CODES", "EXIT_FAIL", "EXIT_INCONCLUSIVE", "EXIT_INTERNAL", "EXIT_PASS", "EXIT_RAISED",
           "EXIT_USAGE", "build_parser", "main"]

_EXIT_BY_STATUS = {"PASS": EXIT_PASS, "FAIL": EXIT_FAIL, "INCONCLUSIVE": EXIT_INCONCLUSIVE}
#: ``--dtype`` of ``gradcheck check``: the formats a check takes (16-bit ones through ml_dtypes).
CHECK_DTYPES = ("float64", "float32", "float16", "bfloat16")


def _cmd_demo(args: argparse.Namespace) -> int:
    out = args.out or None  # --out "" writes no pictures
    return EXIT_PASS if run_demo(json_out=args.json, out_dir=out) else EXIT_FAIL


def _input(args: argparse.Namespace) -> np.ndarray:
    """x from --input (converted to --dtype when given) or a seeded normal x of --shape."""
    fmt = resolve_format(args.dtype) if args.dtype else None
    if args.input and args.shape is not None:
        raise ValueError("give --input FILE.npy or --shape D0,D1,..., not both")
    if args.input:
        x = load_array(args.input, "--input")
        if fmt is None or x.dtype == fmt.dtype:
            return x
        if fmt.bits == 16 and x.dtype.itemsize == 2 and x.dtype.kind in "uV":
            return x.view(np.uint16).view(fmt.dtype)  # bit patterns (np.save writes bfloat16 as |V2)
        return round_to_format(x, fmt, as_dtype=True)
    if args.shape is None:
        raise ValueError("give --input FILE.npy or --shape D0,D1,...")
    x = np.random.default_rng(args.seed).standard_normal(args.shape)
    return x if fmt is None or fmt.name == "float64" else round_to_format(x, fmt, as_dtype=True)


def _tolerances(args: argparse.Namespace, x: np.ndarray) -> dict[str, float]:
    """``--rtol`` / ``--atol`` as the keywords ``check`` and ``screen`` set on the preset of x's
    dtype (nothing else changes: an f computing in float32 still gets its own preset)."""
    changes = {k: v for k, v in (("rtol", args.rtol), ("atol", args.atol)) if v is not None}
    if not changes:
        return {}
    name = dtype_name(x.dtype)
    if name in ("float16", "bfloat16"):
        raise ValueError(f"--rtol/--atol do not apply to a {name} input: its claim is judged in ulps of "
                         f"{name} against the exact float64 upcast; set that allowance with --bound-ulps N")
    preset = Config.for_dtype(name if name in CHECK_DTYPES else "float64")
    if changes.get("rtol", 0.0) >= preset.resolution:
        raise ValueError(f"--rtol {changes['rtol']:g} is not below the resolution {preset.resolution:g}: a PASS "
                         f"means agreement within {100 * preset.resolution:g}% of the value, and a looser "
                         "tolerance would pass entries it did not resolve")
    return changes


def _run_check(args: argparse.Namespace, f: Any, x: np.ndarray, grad: Any) -> Any:
    options: dict[str, Any] = dict(**_tolerances(args, x), backend=args.backend, engine=args.engine,
                                   adjudicate=False if args.no_referee else "auto")
    if args.screen:
        if args.independent_axes is not None or args.jvp or args.hvp or args.bound_ulps is not None:
            raise ValueError("--screen checks a gradient on its own: it does not combine with "
                             "--independent-axes, --jvp, --hvp or --bound-ulps")
        return screen(f, x, grad, name=args.function, **options)
    if args.jvp or args.hvp:  # forward mode / second order: gradcheck._orders._cli
        return check_orders(args, f, x, grad, load, **options)
    return check(f, x, grad, bound_ulps=args.bound_ulps, independent_axes=args.independent_axes, **options)


def _cmd_check(args: argparse.Namespace) -> int:
    f = load(args.function)
    grad = load(args.grad) if args.grad else None
    if callable(grad):
        grad = Watched(grad)
    x = _input(args)
    try:
        report = _run_check(args, f, x, grad)
    except Exception as exc:
        _blame_user_code(exc, args.function, grad, args.grad)
        raise
    # The files first: a reader that closes the pipe early (| head) must not cost them.
    _write_html(report, args.html)
    if args.plot:
        path = report.plot(args.plot)
        print(f"heat map written to {path}", file=sys.stderr)
    print(report.to_json() if args.json else report)
    return _EXIT_BY_STATUS[report.status]


def _blame_user_code(exc: Exception, f_spec: str, grad: Any, grad_spec: str | None) -> None:
    """Raise :class:`UserCodeError` if ``exc`` comes from f or the gradient (else return)."""
    if isinstance(grad, Watched):
        mine = grad.raised_in_chain(exc)
        if mine is not None:
            raise UserCodeError(f"{grad_spec} (the claimed gradient) raised {type(mine).__name__} "
                                f"at the input x: {one_line(mine)}") from exc
    if isinstance(exc, (FunctionError, InputMutationError, WorkerDiedError)):
        raise UserCodeError(f"{f_spec}: {one_line(exc)}") from exc


def _write_html(result: Any, path: str | None) -> None:
    """``--html FILE``: the self-contained page, written whatever the verdict."""
    if path:
        result.to_html(path)
        print(f"HTML report written to {path}", file=sys.stderr)


def _cmd_bench(args: argparse.Namespace) -> int:
    if args.list:
        scripts = discover(find_directory(args.dir))
        width = max((len(name) for name in scripts), default=0)
        for name, path in scripts.items():
            print(f"{name:<{width}}  {path}")
        return EXIT_PASS
    # At exit, Python's finalization runs full garbage collections over every object the benchmarks
    # left (torch's and numba's: millions): 1-3 s after the summary. They are frozen first, so those
    # collections skip them (objects still die with their last reference; the benchmarks are done).
    atexit.register(gc.freeze)
    return run_benchmarks(args.names, quick=args.quick, directory=args.dir, json_path=args.json)


def _add_check_parser(sub: Any) -> None:
    chk = sub.add_parser("check", help="check MODULE:FUNC against its claimed gradient",
                         description="Check MODULE:FUNC against its claimed gradient at every entry. "
                         "MODULE is imported with the current directory on the path.")
    chk.add_argument("function", help="MODULE:FUNC, the function to check")
    chk.add_argument("--grad", metavar="MODULE:FUNC",
                     help="the claimed gradient grad(x) (or VJP grad(x, v)); omitted: the backend's autodiff")
    chk.add_argument("--input", metavar="FILE.npy", help="a .npy file holding x (loaded with allow_pickle=False)")
    chk.add_argument("--shape", type=parse_shape, metavar="D0,D1,...",
                     help="a random normal x of this shape (seeded by --seed), e.g. 3,4")
    chk.add_argument("--dtype", choices=CHECK_DTYPES, default=None,
                     help="x's format (default: float64 for --shape, the file's for --input); float16 and "
                     "bfloat16 claims are judged in ulps of their format")
    chk.add_argument("--seed", type=int, default=0, help="seed of the random x of --shape")
    chk.add_argument("--rtol", type=float, metavar="R",
                     help="relative tolerance (default: the preset of x's dtype: 1e-6 for float64, 1e-3 for "
                     "float32)")
    chk.add_argument("--atol", type=float, metavar="A", help="absolute tolerance (default: 0)")
    chk.add_argument("--bound-ulps", type=float, metavar="N",
                     help="float16/bfloat16/float32 inputs of a precision-generic f: the allowance in ulps of "
                     "the claim's format (default: derived per entry)")
    chk.add_argument("--screen", action="store_true",
                     help="screen every entry with signed block projections (gradcheck.screen): far fewer "
                     "evaluations than an entry-wise check for a large x, each entry cleared to a stated "
                     "detection limit")
    chk.add_argument("--independent-axes", type=parse_axes, metavar="AXES",
                     help="'all' (f acts entry by entry) or the axes whose slices are independent, e.g. 0 or "
                     "0,1: exact entry-wise verdicts in far fewer evaluations (the declaration is verified)")
    chk.add_argument("--backend", default=None, help="numpy, dual, torch, jax (default: follows x)")
    chk.add_argument("--engine", default="auto", help="auto, serial, batched, compiled, processes")
    chk.add_argument("--no-referee", action="store_true",
                     help="do not settle doubtful entries against exact derivatives (faster)")
    chk.add_argument("--plot", metavar="FILE.png", help="also write a heat map of the verdicts (needs matplotlib)")
    chk.add_argument("--json", action="store_true", help="print the report as JSON instead of text")
    chk.add_argument("--html", metavar="FILE.html", help="also write the report as a self-contained HTML page")
    chk.set_defaults(run=_cmd_check)
    add_check_options(chk)


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(prog="gradcheck", description="Check gradients at every entry.")
    parser.add_argument("--version", action="version", version=f"gradcheck {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=CommandParser)
    demo = sub.add_parser("demo", help="run the showcases (planted bugs that must be caught, correct gradients that must pass)")
    demo.add_argument("--json", action="store_true", help="print JSON instead of text")
    demo.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                      help="folder for the pictures and HTML pages ('' for none)")
    demo.set_defaults(run=_cmd_demo)
    _add_check_parser(sub)
    add_taylor_parser(sub, load, parse_shape)
    add_dispute_parser(sub, _write_html)
    bench = sub.add_parser("bench", help="run the benchmarks (from a source checkout: benchmarks/bench_*.py)")
    bench.add_argument("names", nargs="*", metavar="NAME", help="benchmarks to run (default: all), e.g. serial batched")
    bench.add_argument("--quick", action="store_true",
                       help="small sizes and few repeats (under a minute in all; each benchmark says what it leaves out)")
    bench.add_argument("--dir", help="the benchmarks directory (default: ./benchmarks, or the checkout's)")
    bench.add_argument("--json", metavar="FILE", help="also write every benchmark's results to FILE")
    bench.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    bench.set_defaults(run=_cmd_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    with quiet_broken_pipe():
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help and --version
            return int(exc.code or 0)
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args.run(args))
    except UserCodeError as exc:
        print(f"gradcheck: error: {exc}", file=sys.stderr)
        return EXIT_RAISED
    except (ValueError, TypeError, ImportError, AttributeError, OSError) as exc:
        print(f"gradcheck: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception:  # noqa: BLE001 -- gradcheck's own failure: never mistaken for a FAIL (1)
        traceback.print_exc()
        print(f"gradcheck: internal error (a bug in gradcheck, not in your code; please report "
              f"it with the traceback above): exit {EXIT_INTERNAL}", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
