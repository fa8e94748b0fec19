"""Shape sweeps: which shapes fail, the rule that says so, and where in the tensor.

The expected failing sets are computed here from each defect's definition, never from
the checker's output.
"""
from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from optional_deps import need

import gradcheck
from gradcheck import GradientAssertionError, SweepReport, Verdict, grid, shape_sweep
from gradcheck._report.layout import describe_layout
from gradcheck.native import native_function

MKN = grid(m=range(1, 9), k=range(1, 9), n=range(1, 9))


# -- the C transposed matmul with a shape-parity defect ----------------------------------
def matmul_input(shape):
    """A (k x m) and B (k x n) flattened: entries of magnitude 0.5..2, seeded by shape."""
    m, k, n = shape
    rng = np.random.default_rng([1, m, k, n])
    size = k * (m + n)
    return rng.uniform(0.5, 2.0, size) * rng.choice([-1.0, 1.0], size)


def matmul_parts(shape):
    m, k, n = shape
    return {"A": (k, m), "B": (k, n)}


def matmul_subject(grad):
    def factory(shape):
        nf = native_function("matmul_tn", grad=grad, iparams=shape)
        return nf, nf.gradient

    return factory


def parity_defective(shape) -> bool:
    """The defect's definition: the corner remainder exists only when m and n are both odd."""
    m, _, n = shape
    return m % 2 == 1 and n % 2 == 1


# The 512-shape sweeps run serially: 48-entry checks are faster from Python than through
# a parallel kernel launch. The compiled engine is covered by its own sweep below.
@pytest.fixture(scope="module")
def parity_sweep():
    return shape_sweep(matmul_subject("grad_parity"), MKN, matmul_input, factory=True,
                       parts=matmul_parts, name="matmul_tn parity", engine="serial")


@pytest.fixture(scope="module")
def correct_sweep():
    return shape_sweep(matmul_subject("grad"), MKN, matmul_input, factory=True,
                       parts=matmul_parts, name="matmul_tn", engine="serial")


def test_parity_sweep_flags_exactly_the_defective_shapes(parity_sweep):
    """Every defective (m, k, n) is flagged and no correct one is: 128 of 512."""
    expected = {s for s in itertools.product(range(1, 9), repeat=3) if parity_defective(s)}
    assert set(parity_sweep.failed) == expected
    assert parity_sweep.n_failed == len(expected) == 128 and parity_sweep.n_total == 512
    assert not parity_sweep.passed


def test_parity_sweep_names_the_rule(parity_sweep):
    """The rule is stated exactly, in the grid's dimension names, and printed."""
    rule = parity_sweep.rule
    assert rule.text == "m is odd and n is odd" and rule.exact and rule.accuracy == 1.0
    assert "rule: m is odd and n is odd (exact: 128 of 512 shapes fail)" in str(parity_sweep)


def test_parity_defect_lives_in_the_last_column_of_a_and_of_b(parity_sweep):
    """Where: the last column of A and the last column of B (every row), at every failing
    shape; described per named part, in words."""
    for r in parity_sweep.results:
        if r.passed:
            assert r.layout is None and r.where == ""
            continue
        m, k, n = r.shape
        last_a, last_b = np.zeros((k, m), bool), np.zeros((k, n), bool)
        last_a[:, -1] = last_b[:, -1] = True
        mismatch = r.report.codes == Verdict.MISMATCH
        np.testing.assert_array_equal(mismatch, np.concatenate([last_a.ravel(), last_b.ravel()]))
        parts = dict(r.part_layouts)
        assert parts["A"].text == describe_layout(last_a).text
        assert parts["B"].text == describe_layout(last_b).text
        if k > 1 and m > 1 and n > 1:
            assert r.where == (f"A: the last column (column {m - 1}); "
                               f"B: the last column (column {n - 1})")


def test_parity_sweep_table_groups_shapes_by_where(parity_sweep):
    """str() is compact: a few lines, the largest group of layouts first."""
    text = str(parity_sweep)
    assert len(text.splitlines()) < 20
    groups = parity_sweep.where_groups()
    assert groups[0][0] == "A: the last column; B: the last column"
    assert len(groups[0][1]) == 7 * 3 * 3  # k > 1, and m, n odd > 1
    assert "A: the last column; B: the last column" in text
    assert sum(len(members) for _, members in groups) == 128


def test_correct_kernel_passes_every_shape(correct_sweep):
    """The correct backward passes all 512 shapes; the rule is the constant one."""
    assert correct_sweep.passed and correct_sweep.failed == []
    assert correct_sweep.assert_all_pass() is correct_sweep
    assert correct_sweep.rule.text == "no shape fails"
    assert correct_sweep.counts.get("MISMATCH", 0) == 0


def test_failing_reports_are_kept_and_passing_ones_summarised(parity_sweep):
    """keep='failing' (default): full reports for failing shapes only."""
    report = parity_sweep.report((5, 3, 7))
    assert isinstance(report, gradcheck.Report) and not report.passed
    assert report.counts[Verdict.MISMATCH] == 2 * 3
    with pytest.raises(KeyError, match="keep='all'"):
        parity_sweep.report((4, 3, 7))
    with pytest.raises(KeyError, match="not swept"):
        parity_sweep.result((9, 9, 9))


def test_assert_all_pass_raises_with_the_table(parity_sweep):
    """assert_all_pass raises an AssertionError subclass that carries the sweep and rule."""
    with pytest.raises(GradientAssertionError) as info:
        parity_sweep.assert_all_pass()
    assert info.value.report is parity_sweep
    assert "m is odd and n is odd" in str(info.value)


def test_to_dict_is_json_ready(parity_sweep):
    """to_dict has the rule, the failing shapes and one compact entry per shape."""
    data = json.loads(json.dumps(parity_sweep.to_dict()))
    assert data["rule"]["text"] == "m is odd and n is odd" and data["rule"]["exact"]
    assert data["n_failed"] == 128 and len(data["shapes"]) == 512
    assert [5, 3, 7] in data["failed"]
    entry = next(s for s in data["shapes"] if s["shape"] == [5, 3, 7])
    assert entry["parts"]["A"]["kind"] == "column" and entry["counts"]["MISMATCH"] == 6


def test_engine_is_passed_through():
    """engine= reaches gradcheck.check; the sweep says which engines ran."""
    shapes = [(3, 2, 3), (2, 2, 2)]
    sweep = shape_sweep(matmul_subject("grad_parity"), shapes, matmul_input, factory=True,
                        engine="serial", dim_names="mkn")
    assert sweep.engines == {"serial": 2} and sweep.failed == [(3, 2, 3)]


def test_parity_sweep_through_the_compiled_engine():
    """The sweep runs through the compiled engine and agrees."""
    shapes = grid(m=(1, 2, 3), k=(2,), n=(3, 4, 5))
    sweep = shape_sweep(matmul_subject("grad_parity"), shapes, matmul_input, factory=True,
                        engine="compiled")
    assert sweep.engines == {"compiled": 9}
    assert set(sweep.failed) == {s for s in shapes if parity_defective(s)}


def test_demo_pictures_of_the_parity_sweep(tmp_path, parity_sweep):
    """The demo's parity showcase writes the sweep grid and a heat map of a failing shape
    into the folder it is given; `gradcheck demo --out DIR` names that folder."""
    need("matplotlib")
    from gradcheck._demo.showcases import SHOWCASES
    from gradcheck.cli import build_parser

    showcase = next(sc for sc in SHOWCASES if sc.pictures is not None)
    paths = showcase.pictures(parity_sweep, tmp_path / "out")
    assert [p.name for p in paths] == ["matmul_tn_parity_sweep.png",
                                       "matmul_tn_parity_5x4x7_heatmap.png"]
    assert all(p.parent == tmp_path / "out" and p.stat().st_size > 20_000 for p in paths)
    assert build_parser().parse_args(["demo", "--out", "pics"]).out == "pics"
    assert build_parser().parse_args(["demo"]).out == "gradcheck-demo-output"


# -- numpy subjects ----------------------------------------------------------------------
def cube_sum(x):
    return (x ** 3).sum()


def grad_wrong_when_n_multiple_of_4(x):
    """3 x^2, except the last column is halved whenever n % 4 == 0 (a synthetic bug)."""
    g = 3 * x ** 2
    if x.shape[1] % 4 == 0:
        g[:, -1] *= 0.5
    return g


def smooth_input(shape):
    return np.linspace(0.5, 1.5, int(np.prod(shape))).reshape(shape)


def test_numpy_sweep_recovers_a_divisibility_rule():
    """A bug present when n % 4 == 0 is found as 'n is a multiple of 4', in the last column."""
    sweep = shape_sweep(cube_sum, grid(m=range(1, 6), n=range(1, 17)), smooth_input,
                        grad_wrong_when_n_multiple_of_4)
    assert set(sweep.failed) == {(m, n) for m in range(1, 6) for n in (4, 8, 12, 16)}
    assert sweep.rule.text == "n is a multiple of 4" and sweep.rule.exact
    assert sweep.result((3, 8)).where == "the last column (column 7)"
    assert sweep.result((3, 8)).layout.kind == "column"


def test_sweep_where_nothing_fails():
    """A correct gradient: every shape passes, the rule says so, assert_all_pass is quiet."""
    sweep = shape_sweep(cube_sum, [(2, 3), (4, 1), (1, 1)], smooth_input, lambda x: 3 * x ** 2)
    assert sweep.passed and sweep.assert_all_pass() is sweep
    assert str(sweep.rule).startswith("no shape fails")
    text = str(sweep)
    assert text.startswith("cube_sum: PASS -- 0 of 3 shapes (d0, d1) fail")
    assert "failing shapes" not in text


def test_random_failures_give_no_simple_rule():
    """Shapes failing at random (seeded) are not explained by a rule: 'no simple rule'."""
    bad = set(s for s, coin in zip(itertools.product(range(1, 9), range(1, 9)),
                                   np.random.default_rng(5).random(64)) if coin < 0.3)

    def grad(x):
        g = 3 * x ** 2
        if x.shape in bad:
            g.flat[0] += 1.0
        return g

    sweep = shape_sweep(cube_sum, grid(range(1, 9), range(1, 9)), smooth_input, grad)
    assert set(sweep.failed) == bad
    assert not sweep.rule.found and "no simple rule" in str(sweep)


def test_function_and_factory_forms_agree():
    """factory=False takes f and grad(x); factory=True takes f(shape) and grad(shape)
    (or f(shape) -> (f, grad)); the three give the same verdicts."""
    shapes = [(2, 4), (3, 5)]
    direct = shape_sweep(cube_sum, shapes, smooth_input, grad_wrong_when_n_multiple_of_4)
    split = shape_sweep(lambda s: cube_sum, shapes, smooth_input,
                        lambda s: grad_wrong_when_n_multiple_of_4, factory=True)
    paired = shape_sweep(lambda s: (cube_sum, grad_wrong_when_n_multiple_of_4), shapes,
                         smooth_input, factory=True)
    assert direct.failed == split.failed == paired.failed == [(2, 4)]


def test_one_dimensional_shapes_may_be_ints():
    """Shapes given as ints are 1-tuples; the layout of a 1-D failure is in entries."""
    def grad(x):
        g = 3 * x ** 2
        if x.size % 2 == 0:
            g[-1] = 0.0
        return g

    sweep = shape_sweep(cube_sum, range(1, 7), smooth_input, grad, dim_names=["n"])
    assert sweep.failed == [(2,), (4,), (6,)]
    assert sweep.rule.text == "n is even"
    assert sweep.result((4,)).where == "the last entry (entry 3)"


@pytest.mark.parametrize("keep, kept", [("all", 3), ("failing", 1), ("none", 0)])
def test_keep_chooses_which_reports_are_stored(keep, kept):
    """keep='all' / 'failing' / 'none' stores full reports for those shapes."""
    sweep = shape_sweep(cube_sum, [(1, 4), (1, 3), (2, 2)], smooth_input,
                        grad_wrong_when_n_multiple_of_4, keep=keep)
    assert sum(r.report is not None for r in sweep.results) == kept


def test_mixed_ranks_sweep_without_a_rule():
    """Shapes of different lengths are swept; no rule is sought, and str() says why."""
    sweep = shape_sweep(cube_sum, [(3,), (2, 2), (1, 2, 2)], smooth_input, lambda x: 3 * x ** 2)
    assert sweep.rule is None and sweep.passed
    assert "none sought" in str(sweep)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"keep": "some"}, ValueError, "keep='some' is not one of"),
    ({"grad": np.ones(3)}, TypeError, "grad must be a function"),
    ({"dim_names": ["m"]}, ValueError, "1 dim_names"),
    ({"parts": lambda s: {"A": (1,)}, "grad": grad_wrong_when_n_multiple_of_4},
     ValueError, r"parts \(A \(1,\)\) hold 1 entries, but the checked input has 8"),
])
def test_errors_say_what_to_do(kwargs, error, match):
    """Bad options raise errors that name the problem and the valid choices."""
    options = {"grad": lambda x: 3 * x ** 2, **kwargs}
    with pytest.raises(error, match=match):
        shape_sweep(cube_sum, [(2, 4)], smooth_input, **options)


def test_an_error_in_f_names_the_shape():
    """An exception at one shape propagates, with a note naming that shape."""
    def f(x):
        if x.shape == (2, 3):
            raise ZeroDivisionError("boom")
        return (x ** 2).sum()

    with pytest.raises(gradcheck.FunctionError) as info:
        shape_sweep(f, [(1, 1), (2, 3)], smooth_input, lambda x: 2 * x)
    assert any("shape (2, 3)" in note for note in getattr(info.value, "__notes__", []))


def test_grid_is_a_sequence_of_shapes():
    """grid() takes axes positionally or by name and keeps them for reports and plots."""
    g = grid(m=range(1, 3), n=(4, 8))
    assert list(g) == [(1, 4), (1, 8), (2, 4), (2, 8)] and len(g) == 4 and g[1] == (1, 8)
    assert g.dim_names == ("m", "n") and g.axes == ((1, 2), (4, 8))
    assert repr(g) == "grid(m=(1, 2), n=(4, 8))" and repr(MKN) == "grid(m=1..8, k=1..8, n=1..8)"
    assert grid(range(2), range(3)).dim_names is None
    with pytest.raises(TypeError):
        grid(range(2), n=range(3))


# -- Report.layout -----------------------------------------------------------------------
def test_report_layout_sentence_is_in_str():
    """A failing report describes where its mismatches sit, also in str(report)."""
    x = smooth_input((4, 6))
    wrong = lambda x: np.where(np.arange(6) % 2 == 1, 0.0, 3 * x ** 2)  # noqa: E731
    r = gradcheck.check(cube_sum, x, wrong)
    assert r.layout.text == "odd columns" and r.layout.kind == "parity"
    assert "MISMATCH at: odd columns" in str(r)
    ok = gradcheck.check(cube_sum, x, lambda x: 3 * x ** 2)
    assert ok.layout.kind == "none" and "MISMATCH at" not in str(ok)


def test_sweep_report_is_exported():
    """shape_sweep, SweepReport and grid are public names."""
    assert gradcheck.shape_sweep is shape_sweep and gradcheck.SweepReport is SweepReport
    assert gradcheck.grid is grid
