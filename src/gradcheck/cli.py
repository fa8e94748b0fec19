"""The ``gradcheck`` command line.

Exit codes: 0 every check passed, 1 a check failed (a mismatch was found), 2 usage error.
``gradcheck dispute``: 0 no candidate is broken, 1 a candidate is broken, 2 usage error
(including a --fn that cannot be evaluated at arbitrary precision).
"""
from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any, Sequence

EXIT_PASS, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def _load(spec: str) -> Any:
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise ValueError(f"expected MODULE:NAME, got {spec!r}")
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _cmd_demo(args: argparse.Namespace) -> int:
    from .showcases import run_demo

    out = args.out or None  # --out "" writes no pictures
    return EXIT_PASS if run_demo(json_out=args.json, out_dir=out) else EXIT_FAIL


def _cmd_check(args: argparse.Namespace) -> int:
    import numpy as np

    from . import Config, check

    f = _load(args.function)
    grad = _load(args.grad) if args.grad else None
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
    if args.jvp or args.hvp:  # forward mode / second order: gradcheck._orders._cli
        from ._orders._cli import check_orders

        report = check_orders(args, f, x, grad, _load, **options)
    else:
        report = check(f, x, grad, **options)
    print(report.to_json() if args.json else report)
    if args.plot:
        path = report.plot(args.plot)
        print(f"heat map written to {path}", file=sys.stderr)
    return EXIT_PASS if report.passed else EXIT_FAIL


def _load_array(path: str, what: str) -> Any:
    import numpy as np

    try:
        return np.load(path, allow_pickle=False)
    except ValueError as exc:  # object arrays need pickle: refused
        raise ValueError(f"{what} {path!r} cannot be loaded without pickle: {exc}") from None


def _cmd_dispute(args: argparse.Namespace) -> int:
    import numpy as np

    from ._dispute import dispute
    from ._lowp import resolve_format
    from .mp import NotAdjudicable

    fmt = resolve_format(args.dtype)
    math_fn = _load(args.fn)
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
    try:
        result = dispute(math_fn, tuple(arrays[k] for k in keys), candidates, fmt, dps=args.dps,
                         bound_ulps=args.bound_ulps, name=args.fn)
    except NotAdjudicable as exc:
        raise ValueError(str(exc)) from None
    print(result.to_json() if args.json else result)
    return EXIT_FAIL if result.broken else EXIT_PASS


def _cmd_bench(args: argparse.Namespace) -> int:
    from ._bench import discover, find_directory, run_benchmarks

    if args.list:
        for name, path in discover(find_directory(args.dir)).items():
            print(f"{name:<12} {path}")
        return EXIT_PASS
    return run_benchmarks(args.names, quick=args.quick, directory=args.dir, json_path=args.json)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gradcheck", description="Check gradients at every entry.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the showcases (planted bugs that must be caught, correct gradients that must pass)")
    demo.add_argument("--json", action="store_true", help="print JSON instead of text")
    demo.add_argument("--out", default="gradcheck-demo-output", metavar="DIR",
                      help="folder for the pictures (default: %(default)s; '' for none)")
    demo.set_defaults(run=_cmd_demo)
    chk = sub.add_parser("check", help="check MODULE:FUNC against its claimed gradient")
    chk.add_argument("function", help="MODULE:FUNC, the function to check")
    chk.add_argument("--grad", help="MODULE:FUNC, the claimed gradient grad(x) (or VJP grad(x, v))")
    chk.add_argument("--input", help="a .npy file holding x (loaded with allow_pickle=False)")
    chk.add_argument("--shape", help="random normal x of this shape, e.g. 3,4")
    chk.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    chk.add_argument("--seed", type=int, default=0)
    chk.add_argument("--backend", default=None, help="numpy (default), dual, ...")
    chk.add_argument("--engine", default="auto", help="auto (default), serial, batched, compiled, processes")
    chk.add_argument("--no-referee", action="store_true",
                     help="do not settle doubtful entries against exact derivatives (faster)")
    chk.add_argument("--plot", metavar="FILE.png", help="also write a heat map of the verdicts (needs matplotlib)")
    chk.add_argument("--json", action="store_true")
    chk.set_defaults(run=_cmd_check)
    from ._orders._cli import add_check_options, add_taylor_parser  # --jvp/--hvp, taylor

    add_check_options(chk)
    add_taylor_parser(sub, _load)
    dsp = sub.add_parser(
        "dispute", help="judge low-precision candidate outputs against the exact value of MODULE:FUNC",
        description="Evaluate --fn at arbitrary precision on --inputs and measure each --candidate "
        "in ulps of --dtype. Exit 0: no candidate broken; 1: a candidate is broken; 2: usage error. "
        "Files are loaded with allow_pickle=False. numpy cannot save bfloat16 reliably: give "
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
    dsp.add_argument("--json", action="store_true", help="print JSON instead of text")
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
    except (ValueError, TypeError, ImportError, AttributeError, OSError) as exc:
        print(f"gradcheck: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
