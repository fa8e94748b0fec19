"""``gradcheck dispute``: its options, and the files it reads (inputs, candidates, a cotangent)."""
from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .._core.formats import FloatFormat, resolve_format
from .._lowp.dispute import dispute
from .common import UserCodeError, Watched, load, one_line
from .help import EXIT_FAIL, EXIT_PASS

if TYPE_CHECKING:
    from .._lowp.result import DisputeResult

DESCRIPTION = """\
Evaluate --fn at arbitrary precision on --inputs and measure each --candidate in ulps of
--dtype. Files are loaded with allow_pickle=False.

numpy cannot save bfloat16 reliably: give bfloat16 candidates as uint16 bit patterns
(np.save(f, y.view(np.uint16))), and name the bit-pattern arrays among the inputs with
--bits. A 16-bit integer input not named by --bits is refused (bit patterns read as
integers are nonsense); save integer inputs such as positions as int32 or int64."""


def load_array(path: str, what: str) -> Any:
    try:
        return np.load(path, allow_pickle=False)
    except ValueError as exc:  # object arrays need pickle: refused
        raise ValueError(f"{what} {path!r} cannot be loaded without pickle: {exc}") from None


def _refuse_unnamed_bits(key: str, arr: np.ndarray, fmt: FloatFormat, path: str) -> None:
    """A 16-bit array that is not named by --bits: raw bytes or 16-bit integers, which would
    be read as numbers (65535 for a bfloat16 NaN pattern) and judged as nonsense."""
    if arr.dtype.name.startswith("void"):  # np.save writes an ml_dtypes array as raw bytes
        hint = (f"if it holds {fmt.name} values, add --bits {key}" if fmt.bits == 16 and arr.dtype.itemsize == 2
                else "save it as float32/float64, or as uint16 bit patterns with a 16-bit --dtype and --bits")
        raise ValueError(f"--inputs {path}: array {key!r} has raw dtype {arr.dtype} (numpy saves "
                         f"bfloat16 arrays this way and cannot read them back as numbers); {hint}")
    if arr.dtype.kind in "iu" and arr.dtype.itemsize == 2:
        bits = (f"if it holds {fmt.name} bit patterns, add --bits {key}" if fmt.bits == 16
                else "if it holds bit patterns of a 16-bit format, give that format as --dtype and add "
                f"--bits {key}")
        raise ValueError(f"--inputs {path}: array {key!r} is {arr.dtype}, which could be bit patterns or "
                         f"integers: {bits}; if it holds integers (positions, indices), save it as int32 or int64")


def dispute_inputs(args: argparse.Namespace, fmt: FloatFormat) -> tuple[np.ndarray, ...]:
    """The --inputs arrays in the order they were saved, --bits arrays read as ``fmt``."""
    loaded = load_array(args.inputs, "--inputs")
    if isinstance(loaded, np.lib.npyio.NpzFile):
        with loaded:
            keys = list(loaded.files)
            arrays = {k: loaded[k] for k in keys}
    else:
        keys, arrays = ["arr_0"], {"arr_0": loaded}
    named = set(args.bits or ())
    for key in args.bits or ():
        if key not in arrays:
            raise ValueError(f"--bits {key!r}: no such array in {args.inputs} (it has {keys})")
        if fmt.bits != 16 or arrays[key].dtype.itemsize != 2:
            raise ValueError(f"--bits {key!r}: bit patterns need a 16-bit --dtype and a 16-bit array")
        arrays[key] = arrays[key].view(np.uint16).view(fmt.dtype)
    for key, arr in arrays.items():
        if key not in named:
            _refuse_unnamed_bits(key, arr, fmt, args.inputs)
    return tuple(arrays[k] for k in keys)


def dispute_candidates(args: argparse.Namespace, fmt: FloatFormat) -> dict[str, np.ndarray]:
    candidates = {}
    for spec in args.candidate:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--candidate expects NAME=FILE.npy, got {spec!r}")
        if name in candidates:
            raise ValueError(f"--candidate {name!r} given twice")
        arr = load_array(path, f"--candidate {name}")
        if arr.dtype.kind == "V" and arr.dtype.itemsize == 2 and fmt.bits == 16:
            arr = arr.view(np.uint16)  # an ml_dtypes array saved by np.save comes back as |V2
        candidates[name] = arr
    return candidates


def cmd_dispute(args: argparse.Namespace, write_html: Callable[[DisputeResult, str | None], None]) -> int:
    from ..mp import NotAdjudicable

    fmt = resolve_format(args.dtype)
    math_fn = Watched(load(args.fn))
    inputs, candidates = dispute_inputs(args, fmt), dispute_candidates(args, fmt)
    cotangent = None
    if args.cotangent is not None:
        cotangent = load_array(args.cotangent, "--cotangent")
        if cotangent.dtype.kind in "Vui" and cotangent.dtype.itemsize == 2 and fmt.bits == 16:
            cotangent = cotangent.view(np.uint16).view(fmt.dtype)  # bit patterns, as candidates
    if args.of == "value" and (args.cotangent is not None or args.wrt != 0):
        raise ValueError("--cotangent and --wrt apply to --of gradient")
    try:
        result = dispute(math_fn, inputs, candidates, fmt, dps=args.dps, bound_ulps=args.bound_ulps,
                         name=args.fn, of=args.of, wrt=args.wrt, cotangent=cotangent)
    except NotAdjudicable as exc:
        raise ValueError(f"not adjudicable: {exc.detail}") from None
    except Exception as exc:
        mine = math_fn.raised_in_chain(exc)
        if mine is not None:
            raise UserCodeError(f"{args.fn} raised {type(mine).__name__} on the inputs of "
                                f"{args.inputs}: {one_line(mine)}") from exc
        raise
    write_html(result, args.html)  # before the text: a reader that closes the pipe early loses no file
    print(result.to_json() if args.json else result)
    return EXIT_FAIL if result.broken else EXIT_PASS


def add_dispute_parser(sub: Any, write_html: Callable[[DisputeResult, str | None], None]) -> None:
    dsp = sub.add_parser(
        "dispute", help="judge low-precision candidate outputs against the exact value of MODULE:FUNC",
        description=DESCRIPTION)
    dsp.add_argument("--fn", required=True, metavar="MODULE:FUNC",
                     help="the definition, numpy code (e.g. gradcheck.subjects:rope_math)")
    dsp.add_argument("--inputs", required=True, metavar="FILE.npz",
                     help="the inputs, passed positionally in the order they were saved (np.savez(f, x, pos)); "
                     "a .npy file is one input")
    dsp.add_argument("--candidate", action="append", required=True, metavar="NAME=FILE.npy",
                     help="a candidate output (repeat for each); uint16 arrays are bit patterns of a 16-bit --dtype")
    dsp.add_argument("--dtype", required=True, help="target format: float16, bfloat16, float32, float64")
    dsp.add_argument("--bits", action="append", metavar="KEY",
                     help="an input array (npz key, e.g. arr_0) holding uint16 bit patterns of --dtype (repeat "
                     "for each)")
    dsp.add_argument("--dps", type=int, default=40, metavar="DIGITS", help="working precision in digits")
    dsp.add_argument("--bound-ulps", type=float, default=None, metavar="N",
                     help="max error in ulps before a candidate is broken (default: per entry, derived from "
                     "what float32 arithmetic loses on these inputs)")
    dsp.add_argument("--of", choices=("value", "gradient"), default="value",
                     help="judge outputs of --fn (value) or candidate gradients of sum(cotangent * fn(inputs)) "
                     "with respect to input --wrt (gradient)")
    dsp.add_argument("--wrt", type=int, default=0, metavar="N",
                     help="with --of gradient: the input the gradient is taken with respect to")
    dsp.add_argument("--cotangent", metavar="FILE.npy",
                     help="with --of gradient: the cotangent, shaped like fn's result (omit if fn returns "
                     "a scalar); uint16 arrays are bit patterns of a 16-bit --dtype")
    dsp.add_argument("--json", action="store_true", help="print JSON instead of text")
    dsp.add_argument("--html", metavar="FILE.html", help="also write the result as a self-contained HTML page")
    dsp.set_defaults(run=lambda args: cmd_dispute(args, write_html))
