"""Showcases run by ``gradcheck demo``: each is a check whose correct outcome is known.

A showcase "behaves" when a planted bug is caught at exactly its entries, or a correct
gradient passes. The demo succeeds only if every showcase behaves.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._controls.control import assert_detects_wrong_gradient
from .._core.verdict import Verdict
from .._lowp.dispute import dispute
from .._lowp.subjects import (
    matvec_fast,
    matvec_inputs,
    matvec_math,
    matvec_reference,
    rope_fast,
    rope_inputs,
    rope_math,
    rope_reference,
)
from .._models.params import check_params
from .._pipeline.check import check
from .._report.report import Report
from .._sweeps.sweep import SweepReport, grid, shape_sweep
from ..examples.transformer import Params, TransformerConfig, loss, loss_and_grads, make_problem
from ..native import NativeFunction, native_function
from .dispute_showcases import gradient_dispute, timed_dispute
from .layernorm import layer_norm, layer_norm_vjp
from .orders_showcases import adjoint_transposed, taylor_correct, taylor_pictures, taylor_wrong

if TYPE_CHECKING:
    from .._lowp.result import DisputeResult
    from .._models.report import ParamsReport


@dataclass
class Showcase:
    title: str
    run: Callable[[], tuple[object, bool, str]]   # -> (report, behaved, what was expected)
    # (report, folder) -> the pictures written there; needs matplotlib
    pictures: Callable[[Any, Path], list[Path]] | None = None


def _numpy_planted() -> tuple[Report, bool, str]:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 5))

    def f(x):
        return (np.tanh(x) * x[::-1]).sum()

    def claimed(x):
        g = (1 - np.tanh(x) ** 2) * x[::-1] + np.tanh(x[::-1])
        g[4, 1] *= 1 + 1e-5  # planted: a relative error of 1e-5 on one entry
        return g

    r = check(f, x, claimed, name="tanh(x)*flip(x), planted 1e-5 at (4, 1)")
    assert isinstance(r, Report)
    return r, r.entries(Verdict.MISMATCH) == [(4, 1)], "exactly entry (4, 1) flagged"


def _float32_layer_norm() -> tuple[Report, bool, str]:
    """A float32 layer-norm backward whose variance divides by D - 1 (torch.var's default):
    about 1e-3 off on every entry at D = 512. The float32 claim is judged against its own
    measured rounding (gradcheck._lowp.float32), so the bug is found at every entry, and the
    correct backward, which cancels terms as large as the gradient, raises no false alarm."""
    rng = np.random.default_rng(32)
    x = (rng.standard_normal((2, 512)) * 2 + 0.5).astype(np.float32)
    gain = (1 + 0.1 * rng.standard_normal(512)).astype(np.float32)
    bias = (0.1 * rng.standard_normal(512)).astype(np.float32)

    def f(x):
        return layer_norm(x, gain, bias)

    good = check(f, x, lambda x, v: layer_norm_vjp(x, v, gain), name="float32 layer norm, correct backward")
    r = check(f, x, lambda x, v: layer_norm_vjp(x, v, gain, unbiased=True),
              name="float32 layer norm, backward with the D-1 variance (~1e-3 off)")
    assert isinstance(r, Report) and isinstance(good, Report)
    behaved = r.counts[Verdict.MISMATCH] == x.size and good.counts[Verdict.MISMATCH] == 0 and good.passed
    return r, behaved, "every entry flagged, and the correct float32 backward passes"


def _softmax_trap() -> tuple[Report, bool, str]:
    x = np.array([0.3, -1.2, 2.0, 0.7, 0.1])

    def softmax(x):
        e = np.exp(x - x.max())
        return e / e.sum()

    def vjp(x, v):
        s = softmax(x)
        return s * (v - (v * s).sum())

    r = check(softmax, x, vjp, name="softmax VJP (sum(softmax) is constant: random cotangent)")
    assert isinstance(r, Report)
    return r, r.passed and r.counts[Verdict.PASS] == x.size, "all entries PASS"


def _native_rosenbrock() -> tuple[Report, bool, str]:
    x = np.random.default_rng(3).uniform(-1.5, 1.5, 64)
    buggy = native_function("rosenbrock", grad="grad_lastbug")
    r = check(buggy, x, buggy.gradient, name="C rosenbrock, gradient drops a term at the last entry")
    assert isinstance(r, Report)
    return r, r.entries(Verdict.MISMATCH) == [(63,)], "exactly entry (63,) flagged"


def _transformer_problem() -> tuple[Params, np.ndarray, np.ndarray, TransformerConfig]:
    """The tiny transformer with every token and every position used once: no embedding row
    is left with a zero gradient for the referee to prove at 30 digits (the key biases' zero
    gradients, what the showcase is about, remain: 8 entries instead of 32, 4x faster)."""
    cfg = TransformerConfig(vocab_size=5, context_len=5)
    params, _, targets, cfg = make_problem(cfg=cfg, seq_len=cfg.context_len)
    ids = np.random.default_rng(0).permutation(cfg.vocab_size)
    return params, ids, targets, cfg


def _transformer(mutation: str | None) -> Callable[[], tuple[ParamsReport, bool, str]]:
    def run() -> tuple[ParamsReport, bool, str]:
        params, ids, targets, cfg = _transformer_problem()
        _, grads = loss_and_grads(params, ids, targets, cfg, mutation=mutation)
        # The referee proves the key bias's zero gradient in the correct model; for the
        # mutations the step study already settles every verdict, so the demo skips it.
        r = check_params(lambda p: loss(dict(p), ids, targets, cfg), params, grads,
                         adjudicate="auto" if mutation is None else False)
        if mutation is None:
            return r, r.passed, "every entry of every parameter passes (bk: true gradient 0, proven by the referee)"
        if mutation == "wq_line":
            return r, r.failing == ["b1.wq"] and r.diagnosis.kind == "isolated", "b1.wq fails alone"
        expected = [n for n in r.order if n.startswith("b0.") and n != "b0.bk"] + ["pos_emb", "tok_emb"]
        ok = r.failing == expected and r.diagnosis.suspects == ("b1.ln1_g -> b0.b2",)
        return r, ok, "block 0 and the embeddings fail: defect in what block 1's backward returns"

    return run


# -- the C transposed matmul with a shape-parity defect (kernels/matmul_tn.c) ---------
def _matmul_subject(grad: str) -> Callable[[tuple[int, ...]], tuple[NativeFunction, Callable[..., np.ndarray]]]:
    def factory(shape):
        nf = native_function("matmul_tn", grad=grad, iparams=shape)
        return nf, nf.gradient

    return factory


def _matmul_input(shape: tuple[int, ...]) -> np.ndarray:
    """x = concat(A.ravel(), B.ravel()) with entries of magnitude 0.5..2, seeded by shape."""
    m, k, n = shape
    rng = np.random.default_rng([2, m, k, n])
    size = k * (m + n)
    return rng.uniform(0.5, 2.0, size) * rng.choice([-1.0, 1.0], size)


def _matmul_parts(shape: tuple[int, ...]) -> dict[str, tuple[int, int]]:
    m, k, n = shape
    return {"A": (k, m), "B": (k, n)}


def _parity_sweep() -> tuple[SweepReport, bool, str]:
    shapes = grid(m=range(1, 9), k=range(1, 9), n=range(1, 9))
    sweep = shape_sweep(_matmul_subject("grad_parity"), shapes, _matmul_input, factory=True,
                        parts=_matmul_parts, name="C A^T B, backward with a parity defect")
    defective = {(m, k, n) for m, k, n in shapes if m % 2 == 1 and n % 2 == 1}
    ok = set(sweep.failed) == defective and sweep.rule is not None and sweep.rule.text == "m is odd and n is odd"
    return sweep, ok, "exactly the 128 shapes with m and n odd fail; rule 'm is odd and n is odd'"


def _parity_pictures(sweep: SweepReport, folder: Path) -> list[Path]:
    shape = (5, 4, 7)
    return [sweep.plot(folder / "matmul_tn_parity_sweep.png"),
            sweep.report(shape).plot(folder / "matmul_tn_parity_5x4x7_heatmap.png",
                                     parts=_matmul_parts(shape))]


def _rope_dispute() -> tuple[DisputeResult, bool, str]:
    x, pos = rope_inputs(rows=128, dim=64, start=4000, stop=8000, seed=1)
    r = dispute(rope_math, (x, pos), {"fast": rope_fast(x, pos), "reference": rope_reference(x, pos)},
                "bfloat16", name="C rotary embedding at positions 4000..8000")
    ok = r.most_accurate == "fast" and r.broken == ("reference",)
    return r, ok, "the fast kernel is the accurate one; the reference (bfloat16 angles) is broken"


def _matvec_dispute() -> tuple[DisputeResult, bool, str]:
    a, v = matvec_inputs(rows=32, n=512, seed=1)
    r = dispute(matvec_math, (a, v), {"fast": matvec_fast(a, v), "reference": matvec_reference(a, v)},
                "bfloat16", name="C matrix-vector product, n=512")
    ok = r.most_accurate == "reference" and r.broken == ("fast",)
    return r, ok, "the fast kernel (bfloat16 accumulator) is broken"


def _control() -> tuple[str, bool, str]:
    assert_detects_wrong_gradient("numpy")
    return "negative control (numpy backend): corrupted gradient flagged, correct one passed", True, "both directions"


SHOWCASES = (
    Showcase("negative control", _control),
    Showcase("numpy function, planted 1e-5 relative bug", _numpy_planted),
    Showcase("float32 layer norm: a 1e-3 bug in the backward", _float32_layer_norm),
    Showcase("softmax: why the default cotangent is random", _softmax_trap),
    Showcase("C kernel through cffi, planted bug", _native_rosenbrock),
    Showcase("C transposed matmul, shape sweep of a parity defect", _parity_sweep, _parity_pictures),
    Showcase("bfloat16 dispute: rotary embedding at large positions", _rope_dispute),
    Showcase("bfloat16 dispute: a fast kernel that is really broken", _matvec_dispute),
    Showcase("bfloat16 gradient dispute: two rotary backward kernels", gradient_dispute),
    Showcase("timed dispute: speed and accuracy in one table", timed_dispute),
    Showcase("tiny transformer, correct backward", _transformer(None)),
    Showcase("tiny transformer, one tensor's line wrong", _transformer("wq_line")),
    Showcase("tiny transformer, wrong value returned from block 1", _transformer("block_return")),
    Showcase("Taylor test: gradient and Hessian by hand", taylor_correct, taylor_pictures),
    Showcase("Taylor test: one term of a gradient 1e-4 off", taylor_wrong),
    Showcase("adjoint (dot-product) test: a transposed-wrong VJP on 1e5 inputs", adjoint_transposed),
)


DEFAULT_OUT = "gradcheck-demo-output"
#: What the demo says when matplotlib is missing: the PNG plots need it, the HTML pages do not.
PNG_NEEDS = 'PNG plots not drawn: they need matplotlib (pip install "gradcheck[plot]"); the HTML pages show the same heat maps without it'


def _slug(title: str) -> str:
    return "-".join("".join(c if c.isalnum() else " " for c in title.lower()).split())[:60]


@dataclass
class _Pictures:
    """What the demo wrote: an HTML page per showcase (heat maps drawn without matplotlib)
    and, with matplotlib, the PNG plots; ``missing`` says why PNG plots were not drawn."""

    folder: Path
    pages: list[Path]
    plots: list[Path]
    missing: str = ""

    def add(self, number: int, sc: Showcase, report: object) -> None:
        if hasattr(report, "to_html"):
            path = self.folder / f"{number:02d}-{_slug(sc.title)}.html"
            report.to_html(path)
            self.pages.append(path)
        if sc.pictures is not None and not self.missing:
            try:
                self.plots += sc.pictures(report, self.folder)
            except ImportError:
                self.missing = PNG_NEEDS

    def lines(self) -> list[str]:
        out = [f"pictures written to {self.folder.resolve()}/:"]
        if self.pages:
            out.append(f"  {len(self.pages)} HTML pages, one per showcase (heat maps, tables; open in a browser): "
                       f"{self.pages[0].name} ... {self.pages[-1].name}")
        if self.plots:
            out.append("  PNG plots: " + ", ".join(p.name for p in self.plots))
        if self.missing:
            out.append(f"  {self.missing}")
        return out


def run_demo(*, json_out: bool = False, print_fn: Callable[[str], None] = print,
             out_dir: str | Path | None = DEFAULT_OUT) -> bool:
    """Run every showcase, print each report, and return whether all behaved.

    Pictures go to ``out_dir`` (None: none): one self-contained HTML page per showcase, whose
    heat maps and tables need no plotting library, and the PNG plots (heat maps, sweep grids,
    the Taylor test's log-log picture) when matplotlib is installed; without it the demo says
    which extra to install, and still runs.
    """
    results: list[dict[str, Any]] = []
    all_ok = True
    pictures = _Pictures(Path(out_dir), [], []) if out_dir is not None else None
    for number, sc in enumerate(SHOWCASES, 1):
        started = time.perf_counter()
        report, ok, expected = sc.run()
        seconds = time.perf_counter() - started
        all_ok &= ok
        if pictures is not None:
            pictures.add(number, sc, report)
        results.append({"title": sc.title, "behaved": ok, "expected": expected, "seconds": seconds,
                        "report": report.to_dict() if hasattr(report, "to_dict") else str(report)})
        if not json_out:
            print_fn(f"=== {sc.title} ({'as expected' if ok else 'UNEXPECTED'}: {expected}; {seconds:.2f} s)")
            print_fn(str(report))
            print_fn("")
    if json_out:
        written = [] if pictures is None else pictures.pages + pictures.plots
        print_fn(json.dumps({"behaved": all_ok, "showcases": results,
                             "pictures": [str(p.resolve()) for p in written],
                             "pictures_missing": "" if pictures is None else pictures.missing}))
    else:
        for line in [] if pictures is None else pictures.lines():
            print_fn(line)
        print_fn(f"demo: {sum(r['behaved'] for r in results)}/{len(results)} showcases behaved as expected")
    return all_ok
