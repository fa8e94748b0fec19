"""The ``gradcheck`` command line.

MODULE:NAME arguments are imported with the current directory first on ``sys.path``,
as ``python -m`` does: ``gradcheck check mymod:f`` finds ``./mymod.py``.
Exit codes (:data:`EXIT_CODES`; the same for every command):
0 every check passed (``dispute``: no candidate is broken), 1 a mismatch was found
(``dispute``: a candidate is broken), 2 usage error (including a --fn that cannot be
evaluated at arbitrary precision), 3 inconclusive (nothing could be verified),
4 the user's code failed: the function or the gradient raised (or killed its worker),
or its module could not be imported; one line names it, the exception and the entry;
5 gradcheck itself failed (a bug in gradcheck: the traceback is printed, please report it).
"""
from __future__ import annotations

import argparse
import functools
import importlib
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._core.config import Config
from ._core.errors import FunctionError, InputMutationError, WorkerDiedError
from ._core.formats import resolve_format
from ._demo.bench import discover, find_directory, run_benchmarks
from ._demo.showcases import run_demo
from ._lowp.dispute import dispute
from ._orders._cli import add_check_options, add_taylor_parser, check_orders  # --jvp/--hvp, taylor
from ._pipeline.check import check

EXIT_PASS, EXIT_FAIL, EXIT_USAGE, EXIT_INCONCLUSIVE, EXIT_RAISED, EXIT_INTERNAL = 0, 1, 2, 3, 4, 5
EXIT_CODES = (
    f"Exit codes: {EXIT_PASS} every check passed, {EXIT_FAIL} a mismatch was found (FAIL), "
    f"{EXIT_USAGE} usage error, {EXIT_INCONCLUSIVE} inconclusive (nothing could be verified), "
    f"{EXIT_RAISED} the function or the gradient raised (a one-line error names it, the "
    f"exception and the entry), {EXIT_INTERNAL} gradcheck itself failed (a bug: the traceback "
    "is printed; please report it)."
)


class UserCodeError(Exception):
    """The user's code failed (it raised, or killed a worker): exit :data:`EXIT_RAISED`
    with this one-line message, never a traceback or the exit code of a mismatch."""


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
_EXIT_BY_STATUS = {"PASS": EXIT_PASS, "FAIL": EXIT_FAIL, "INCONCLUSIVE": EXIT_INCONCLUSIVE}


def _load(spec: str) -> Any:
    """The object named ``MODULE:NAME`` (``NAME`` may be dotted), imported with the current
    directory on the path. A module that raises while it is imported is the user's code
    failing (:class:`UserCodeError`); a module that is not there is a usage error."""
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise ValueError(f"expected MODULE:NAME, got {spec!r}")
    cwd = os.getcwd()
    if "" not in sys.path and cwd not in sys.path:
        sys.path.insert(0, cwd)  # as `python -m` does; a console script starts without it
    try:
        obj = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module == exc.name or module.startswith(exc.name + ".")):
            raise ImportError(f"cannot import {module!r} for {spec!r} (looked in {cwd} and on "
                              f"sys.path): {exc}") from None
        raise UserCodeError(f"importing {module!r} raised {type(exc).__name__}: {_one_line(exc)}") from exc
    except Exception as exc:  # noqa: BLE001 - the user's module failed while it ran
        raise UserCodeError(f"importing {module!r} raised {type(exc).__name__}: {_one_line(exc)}") from exc
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


class _Watched:
    """A user function whose exceptions are remembered and re-raised unchanged (gradcheck
    classifies some of them, e.g. the referee's TypeErrors), so that the command can tell
    an error raised by the user's code from gradcheck's own."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.raised: list[BaseException] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return self.fn(*args, **kwargs)
        except Exception as exc:
            self.raised.append(exc)
            raise

    def raised_in_chain(self, exc: BaseException) -> BaseException | None:
        """The exception of ours in ``exc``'s chain of causes, if any."""
        seen: set[int] = set()
        link: BaseException | None = exc
        while link is not None and id(link) not in seen:
            seen.add(id(link))
            if any(link is mine for mine in self.raised):
                return link
            # the chain Python shows: the cause, else the context unless suppressed ("from None")
            link = link.__cause__ if link.__cause__ is not None else (
                None if link.__suppress_context__ else link.__context__)
        return None


def _cmd_demo(args: argparse.Namespace) -> int:
    out = args.out or None  # --out "" writes no pictures
    return EXIT_PASS if run_demo(json_out=args.json, out_dir=out) else EXIT_FAIL


def _cmd_check(args: argparse.Namespace) -> int:

    f = _load(args.function)
    grad = _load(args.grad) if args.grad else None
    if callable(grad):
        grad = _Watched(grad)
    if args.input:
        x = np.load(args.input, allow_pickle=False)
    elif args.shape:
        shape = tuple(int(s) for s in args.shape.split(","))
        x = np.random.default_rng(args.seed).standard_normal(shape).astype(args.dtype)
    else:
        raise ValueError("give --input FILE.npy or --shape D0,D1,...")
    cfg = Config.for_dtype(str(x.dtype)) if x.dtype.kind == "f" else None
    options = dict(config=cfg, backend=args.backend, engine=args.engine,
                   adjudicate=False if args.no_referee else "auto")
    try:
        if args.jvp or args.hvp:  # forward mode / second order: gradcheck._orders._cli

            report = check_orders(args, f, x, grad, _load, **options)
        else:
            report = check(f, x, grad, **options)
    except Exception as exc:
        _blame_user_code(exc, args.function, grad, args.grad)
        raise
    print(report.to_json() if args.json else report)
    if args.plot:
        path = report.plot(args.plot)
        print(f"heat map written to {path}", file=sys.stderr)
    _write_html(report, args.html)
    return _EXIT_BY_STATUS[report.status]


def _blame_user_code(exc: Exception, f_spec: str, grad: Any, grad_spec: str | None) -> None:
    """Raise :class:`UserCodeError` if ``exc`` comes from f or the gradient (else return)."""
    if isinstance(grad, _Watched):
        mine = grad.raised_in_chain(exc)
        if mine is not None:
            raise UserCodeError(f"{grad_spec} (the claimed gradient) raised {type(mine).__name__} "
                                f"at the input x: {_one_line(mine)}") from exc
    if isinstance(exc, (FunctionError, InputMutationError, WorkerDiedError)):
        raise UserCodeError(f"{f_spec}: {_one_line(exc)}") from exc


def _write_html(result: Any, path: str | None) -> None:
    """``--html FILE``: the self-contained page, written whatever the verdict."""
    if path:
        result.to_html(path)
        print(f"HTML report written to {path}", file=sys.stderr)


def _load_array(path: str, what: str) -> Any:
    try:
        return np.load(path, allow_pickle=False)
    except ValueError as exc:  # object arrays need pickle: refused
        raise ValueError(f"{what} {path!r} cannot be loaded without pickle: {exc}") from None


def _dispute_inputs(args: argparse.Namespace, fmt: Any) -> tuple[Any, ...]:
    """The --inputs arrays in the order they were saved, --bits arrays read as ``fmt``."""
    loaded = _load_array(args.inputs, "--inputs")
    if isinstance(loaded, np.lib.npyio.NpzFile):
        with loaded:
            keys = list(loaded.files)
            arrays = {k: loaded[k] for k in keys}
    else:
        keys, arrays = ["arr_0"], {"arr_0": loaded}
    for key in args.bits or ():
        if key not in arrays:
            raise ValueError(f"--bits {key!r}: no such array in {args.inputs} (it has {keys})")
        if fmt.bits != 16 or arrays[key].dtype.itemsize != 2:
            raise ValueError(f"--bits {key!r}: bit patterns need a 16-bit --dtype and a 16-bit array")
        arrays[key] = arrays[key].view(np.uint16).view(fmt.dtype)
    for key, arr in arrays.items():
        if arr.dtype.name.startswith("void"):  # np.save writes an ml_dtypes array as raw bytes
            hint = (f"if it holds {fmt.name} values, add --bits {key}" if fmt.bits == 16 and arr.dtype.itemsize == 2
                    else "save it as float32/float64, or as uint16 bit patterns with a 16-bit --dtype and --bits")
            raise ValueError(f"--inputs {args.inputs}: array {key!r} has raw dtype {arr.dtype} (numpy saves "
                             f"bfloat16 arrays this way and cannot read them back as numbers); {hint}")
    return tuple(arrays[k] for k in keys)


def _dispute_candidates(args: argparse.Namespace, fmt: Any) -> dict[str, Any]:
    candidates = {}
    for spec in args.candidate:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--candidate expects NAME=FILE.npy, got {spec!r}")
        if name in candidates:
            raise ValueError(f"--candidate {name!r} given twice")
        arr = _load_array(path, f"--candidate {name}")
        if arr.dtype.kind == "V" and arr.dtype.itemsize == 2 and fmt.bits == 16:
            arr = arr.view(np.uint16)  # an ml_dtypes array saved by np.save comes back as |V2
        candidates[name] = arr
    return candidates


def _cmd_dispute(args: argparse.Namespace) -> int:
    from .mp import NotAdjudicable

    fmt = resolve_format(args.dtype)
    math_fn = _Watched(_load(args.fn))
    inputs, candidates = _dispute_inputs(args, fmt), _dispute_candidates(args, fmt)
    cotangent = None
    if args.cotangent is not None:
        cotangent = _load_array(args.cotangent, "--cotangent")
        if cotangent.dtype.kind in "Vui" and cotangent.dtype.itemsize == 2 and fmt.bits == 16:
            cotangent = cotangent.view(np.uint16).view(fmt.dtype)  # bit patterns, as candidates
    if args.of == "value" and (args.cotangent is not None or args.wrt != 0):
        raise ValueError("--cotangent and --wrt apply to --of gradient")
    try:
        result = dispute(math_fn, inputs, candidates, fmt, dps=args.dps, bound_ulps=args.bound_ulps,
                         name=args.fn, of=args.of, wrt=args.wrt, cotangent=cotangent)
    except NotAdjudicable as exc:
        raise ValueError(str(exc)) from None
    except Exception as exc:
        mine = math_fn.raised_in_chain(exc)
        if mine is not None:
            raise UserCodeError(f"{args.fn} raised {type(mine).__name__} on the inputs of "
                                f"{args.inputs}: {_one_line(mine)}") from exc
        raise
    print(result.to_json() if args.json else result)
    _write_html(result, args.html)
    return EXIT_FAIL if result.broken else EXIT_PASS


def _cmd_bench(args: argparse.Namespace) -> int:
    if args.list:
        for name, path in discover(find_directory(args.dir)).items():
            print(f"{name:<12} {path}")
        return EXIT_PASS
    return run_benchmarks(args.names, quick=args.quick, directory=args.dir, json_path=args.json)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gradcheck", description="Check gradients at every entry.",
                                     epilog=EXIT_CODES)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the showcases (planted bugs that must be caught, correct gradients that must pass)")
    demo.add_argument("--json", action="store_true", help="print JSON instead of text")
    demo.add_argument("--out", default="gradcheck-demo-output", metavar="DIR",
                      help="folder for the pictures (default: %(default)s; '' for none)")
    demo.set_defaults(run=_cmd_demo)
    chk = sub.add_parser("check", help="check MODULE:FUNC against its claimed gradient",
                         description="Check MODULE:FUNC against its claimed gradient at every entry. "
                         "MODULE is imported with the current directory on the path.", epilog=EXIT_CODES)
    chk.add_argument("function", help="MODULE:FUNC, the function to check")
    chk.add_argument("--grad", help="MODULE:FUNC, the claimed gradient grad(x) (or VJP grad(x, v))")
    chk.add_argument("--input", help="a .npy file holding x (loaded with allow_pickle=False)")
    chk.add_argument("--shape", help="random normal x of this shape, e.g. 3,4")
    chk.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    chk.add_argument("--seed", type=int, default=0)
    chk.add_argument("--backend", default=None, help="numpy (default), dual, torch, jax")
    chk.add_argument("--engine", default="auto", help="auto (default), serial, batched, compiled, processes")
    chk.add_argument("--no-referee", action="store_true",
                     help="do not settle doubtful entries against exact derivatives (faster)")
    chk.add_argument("--plot", metavar="FILE.png", help="also write a heat map of the verdicts (needs matplotlib)")
    chk.add_argument("--json", action="store_true")
    chk.add_argument("--html", metavar="FILE.html", help="also write the report as a self-contained HTML page")
    chk.set_defaults(run=_cmd_check)

    add_check_options(chk)
    add_taylor_parser(sub, _load)
    dsp = sub.add_parser(
        "dispute", help="judge low-precision candidate outputs against the exact value of MODULE:FUNC",
        description="Evaluate --fn at arbitrary precision on --inputs and measure each --candidate "
        "in ulps of --dtype. Exit 0: no candidate broken; 1: a candidate is broken; 2: usage error "
        "(a --fn that cannot be evaluated at arbitrary precision included); 4: --fn raised. Files are loaded with allow_pickle=False. numpy cannot save bfloat16 reliably: give "
        "bfloat16 candidates as uint16 bit patterns (np.save(f, y.view(np.uint16))), and name the "
        "bit-pattern arrays among the inputs with --bits.")
    dsp.add_argument("--fn", required=True, metavar="MODULE:FUNC",
                     help="the definition, numpy code (e.g. gradcheck.subjects:rope_math)")
    dsp.add_argument("--inputs", required=True, metavar="FILE.npz",
                     help="the inputs, passed positionally in the order they were saved (np.savez(f, x, pos)); "
                     "a .npy file is one input")
    dsp.add_argument("--candidate", action="append", required=True, metavar="NAME=FILE.npy",
                     help="a candidate output (repeat for each); uint16 arrays are bit patterns of a 16-bit --dtype")
    dsp.add_argument("--dtype", required=True, help="target format: float16, bfloat16, float32, float64")
    dsp.add_argument("--bits", action="append", metavar="KEY",
                     help="an input array (npz key, e.g. arr_0) holding uint16 bit patterns of --dtype")
    dsp.add_argument("--dps", type=int, default=40, help="working precision in digits (default: %(default)s)")
    dsp.add_argument("--bound-ulps", type=float, default=None,
                     help="max error in ulps before a candidate is broken (default: derived from a float32 evaluation)")
    dsp.add_argument("--of", choices=("value", "gradient"), default="value",
                     help="judge outputs of --fn (value, the default) or candidate gradients of "
                     "sum(cotangent * fn(inputs)) with respect to input --wrt (gradient)")
    dsp.add_argument("--wrt", type=int, default=0, metavar="N",
                     help="with --of gradient: the input the gradient is taken with respect to (default: 0)")
    dsp.add_argument("--cotangent", metavar="FILE.npy",
                     help="with --of gradient: the cotangent, shaped like fn's result (omit if fn returns "
                     "a scalar); uint16 arrays are bit patterns of a 16-bit --dtype")
    dsp.add_argument("--json", action="store_true", help="print JSON instead of text")
    dsp.add_argument("--html", metavar="FILE.html", help="also write the result as a self-contained HTML page")
    dsp.set_defaults(run=_cmd_dispute)
    bench = sub.add_parser("bench", help="run the benchmarks (from a source checkout: benchmarks/bench_*.py)")
    bench.add_argument("names", nargs="*", metavar="NAME", help="benchmarks to run (default: all), e.g. serial batched")
    bench.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    bench.add_argument("--dir", help="the benchmarks directory (default: ./benchmarks, or the checkout's)")
    bench.add_argument("--json", metavar="FILE", help="also write every benchmark's results to FILE")
    bench.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    bench.set_defaults(run=_cmd_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
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
