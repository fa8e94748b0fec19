"""gradcheck.dispute: candidates against the exact value, in ulps of the target format."""
from __future__ import annotations

import functools
import json
import math

import ml_dtypes
import mpmath
import numpy as np
import pytest
from cli_in_process import run_cli
from optional_deps import need

import gradcheck
from gradcheck import DisputeResult, dispute
from gradcheck._core.formats import round_to_format
from gradcheck._lowp.dispute import BASE_BOUND_ULPS, FLOAT32_EVALUATION
from gradcheck.mp import NotAdjudicable
from gradcheck.subjects import rope_fast, rope_inputs, rope_math, rope_reference

BF16 = ml_dtypes.bfloat16


def bf(values) -> np.ndarray:
    """Exact bfloat16 values (the test writes only representable numbers)."""
    v = np.asarray(values, dtype=np.float64)
    out = v.astype(BF16)
    assert np.array_equal(out.astype(np.float64), v), "not a bfloat16 value"
    return out


def same(x):
    return x * 1


# -- the figures, hand-computed ---------------------------------------------------------


def test_hand_computed_ulp_errors_and_fractions():
    """exact [1, 2, 4]; candidate one ulp above 1 (ulp 2**-7), exact at 2, half an ulp of 4
    below it (ulp(4) = 2**-5 above, the candidate 4 - 2**-6 is in the binade below)."""
    x = bf([1.0, 2.0, 4.0])
    r = dispute(same, (x,), {"c": bf([1 + 2**-7, 2.0, 4 - 2**-6])}, "bfloat16")
    assert isinstance(r, DisputeResult)
    assert r.errors["c"].tolist() == [1.0, 0.0, 0.5]
    s = r.stats["c"]
    assert (s.max_ulp, s.mean_ulp, s.median_ulp) == (1.0, 0.5, 0.5)
    assert s.correctly_rounded == pytest.approx(1 / 3) and s.within_1ulp == 1.0
    assert s.worst_index == (0,) and s.worst_value == 1 + 2**-7 and s.worst_exact == 1.0
    assert r.correctly_rounded.dtype == BF16 and r.correctly_rounded.tolist() == [1.0, 2.0, 4.0]


def test_double_rounding_case_is_judged_from_the_exact_value():
    """1 + 2**-8 + 2**-30 rounds to 1 + 2**-7 in bfloat16; a float64 -> float32 -> bfloat16
    cast gives 1.0 (double rounding: float32 drops the 2**-30, then the tie goes to even).
    Only the first is correctly rounded. (Older ml_dtypes cast float64 to bfloat16 through
    float32, newer ones round once: the trap is built explicitly so the test does not
    depend on the version.)"""
    x = np.array([1 + 2**-8 + 2**-30])
    twice = x.astype(np.float32).astype(BF16)
    assert float(twice[0]) == 1.0  # the trap
    r = dispute(same, (x,), {"direct": bf([1 + 2**-7]), "astype": twice}, "bfloat16")
    assert r.correctly_rounded.tolist() == [1 + 2**-7]
    assert r.stats["direct"].correctly_rounded == 1.0
    assert r.stats["astype"].correctly_rounded == 0.0
    assert r.errors["direct"][0] == pytest.approx(0.5 - 2**-23, abs=1e-15)
    assert r.closer.tolist() == ["direct"]


def test_exact_values_on_a_midpoint_and_just_off_it():
    """1 + 2**-8 is a bfloat16 midpoint (ties to even: 1.0); 1 + 2**-8 + 2**-80 is not, but
    its float64 rounding is the midpoint: the rounding must come from the exact value."""
    x = np.array([1 + 2**-8, 1 + 2**-8])
    bump = np.array([0.0, 1.0])

    def f(v, b):
        return v + b * (2 * (v ** 0)) ** -80  # exact at 40 digits: 2**-80 is a power of two

    r = dispute(f, (x, bump), {"c": bf([1.0, 1 + 2**-7])}, "bfloat16")
    assert r.correctly_rounded.tolist() == [1.0, 1 + 2**-7]
    assert r.stats["c"].correctly_rounded == 1.0
    assert r.errors["c"][0] == 0.5


def test_ulp_of_the_exact_value_below_a_power_of_two():
    """exact 2 - 2**-60 lies in [1, 2), ulp 2**-7 (its float64 rounding, 2.0, has ulp 2**-6):
    the candidate 2 + 2**-6 is 2 + 2**-53 ulps away, not 1."""
    x = np.array([2.0])

    def f(v):
        return v - (2 * (v ** 0)) ** -60

    r = dispute(f, (x,), {"c": bf([2 + 2**-6])}, "bfloat16")
    assert r.errors["c"][0] == pytest.approx(2.0, abs=1e-12)  # (1 via the float64 rounding's ulp)


def test_subnormals_zero_and_sign_changes():
    tiny = 2.0**-133  # smallest bfloat16 subnormal, also the ulp of every subnormal and of 0
    x = np.array([1.5 * 2**-130, 0.0, 3 * tiny, 2.0**-126])
    cand = bf([2**-130, tiny, -tiny, 2.0**-126 + tiny])
    r = dispute(same, (x,), {"c": cand}, "bfloat16")
    assert r.errors["c"].tolist() == [4.0, 1.0, 4.0, 1.0]


def test_overflow_rounds_to_inf_and_nonfinite_candidates_are_infinitely_wrong():
    x = np.array([3.0e38, 1.0])
    r = dispute(lambda v: v * 2, (x,), {"inf": np.array([np.inf, 2.0], np.float32).astype(BF16),
                                         "nan": np.array([np.inf, np.nan], np.float32).astype(BF16)},
                "bfloat16")
    assert np.isinf(r.correctly_rounded[0])
    assert r.errors["inf"].tolist() == [0.0, 0.0] and r.stats["inf"].correctly_rounded == 1.0
    assert math.isinf(r.errors["nan"][1]) and r.broken == ("nan",)
    assert any("NaN/inf where the exact value is finite" in n for n in r.notes)


def test_float16_and_float32_targets():
    x = np.linspace(0.1, 3.0, 50)
    exact16 = round_to_format(x / 3, "float16", as_dtype=True)
    r = dispute(lambda v: v / 3, (x,), {"rn": exact16}, "float16")
    assert r.stats["rn"].correctly_rounded == 1.0 and r.stats["rn"].max_ulp <= 0.5
    xf = np.float32(np.linspace(0.1, 3.0, 50))
    r32 = dispute(np.exp, (xf,), {"np": np.exp(xf)}, "float32")
    assert r32.stats["np"].max_ulp < 2 and r32.dtype == "float32"


# -- the verdict ---------------------------------------------------------------------------


def _noisy(x, k):
    """x/3 correctly rounded, then every entry moved k bfloat16 ulps up."""
    y = round_to_format(x / 3, "bfloat16", as_dtype=True)
    bits = y.view(np.uint16).astype(np.int64) + k * np.where(y.astype(float) >= 0, 1, -1)
    return bits.astype(np.uint16).view(BF16)


def test_most_accurate_ratio_and_broken_with_the_default_bound():
    x = np.linspace(0.5, 3.0, 64)
    good, off = round_to_format(x / 3, "bfloat16", as_dtype=True), _noisy(x, 3)
    r = dispute(lambda v: v / 3, (x,), {"good": good, "off": off}, "bfloat16")
    assert r.most_accurate == "good"
    assert r.broken == ("off",)  # 3 ulps everywhere > 2 ulps, the bound of well-conditioned entries
    assert r.bound_ulps == BASE_BOUND_ULPS and np.allclose(r.bounds, 2.0, atol=1e-3)
    assert r.ratio("good", "off") == pytest.approx(r.stats["off"].mean_ulp / r.stats["good"].mean_ulp)
    assert (r.closer == "good").all() and (r.closer_index == 0).all()
    assert r.stats["good"].closer == 1.0 and r.stats["off"].closer == 0.0
    text = str(r)
    assert "good is" in text and "x more accurate than off" in text
    assert "off is broken: 64 of 64 entries (100.0%) exceed their bound" in text


def test_a_given_bound_and_a_tie():
    x = np.linspace(0.5, 3.0, 64)
    one, two = _noisy(x, 1), _noisy(x, 1).copy()
    r = dispute(lambda v: v / 3, (x,), {"a": one, "b": two}, "bfloat16", bound_ulps=4)
    assert r.most_accurate is None and r.broken == ()
    assert (r.bounds == 4).all() and r.bound_reason == "4 ulp (given)"
    assert r.closer.tolist() == [None] * 64 and (r.closer_index == -1).all()
    assert "a and b are equally accurate" in r.verdict
    r2 = dispute(lambda v: v / 3, (x,), {"a": one}, "bfloat16", bound_ulps=0.75)
    assert r2.broken == ("a",)


def test_three_candidates_ranked():
    x = np.linspace(0.5, 3.0, 64)
    cands = {"k3": _noisy(x, 3), "k0": _noisy(x, 0), "k1": _noisy(x, 1)}
    r = dispute(lambda v: v / 3, (x,), cands, "bfloat16")
    assert r.most_accurate == "k0" and r.broken == ("k3",)
    assert r.verdict.index("than k1") < r.verdict.index("than k3")


def test_the_float32_evaluation_is_measured_and_the_bound_widens_with_the_conditioning():
    """The float32 evaluation is a row of the table (information); the bound widens where
    the rotary embedding amplifies its positions' rounding, and says so in words."""
    x, pos = rope_inputs(rows=64, dim=64, start=4000, stop=8000, seed=5)
    r = dispute(rope_math, (x, pos), {"fast": rope_fast(x, pos), "reference": rope_reference(x, pos)},
                "bfloat16")
    f32 = r.float32
    assert f32 is not None and f32.name == FLOAT32_EVALUATION
    assert FLOAT32_EVALUATION in r.errors and FLOAT32_EVALUATION not in r.stats
    assert r.bounds.min() >= 2.0 and r.bounds.max() > 50  # widened where the angle's rounding shows
    assert r.stats["fast"].beyond_count == 0
    assert "times a relative rounding of 'positions'" in r.bound_reason
    assert set(r.sensitivity_by_input) == {"x", "positions"} and r.working == "float32"
    widest = np.unravel_index(int(np.argmax(r.bounds)), r.bounds.shape)
    assert "'positions'" in r.why(widest) and "ulp of y" in r.why(widest)
    data = json.loads(r.to_json())
    assert data["broken"] == ["reference"] and data["most_accurate"] == "fast"
    assert data["float32_evaluation"]["name"] == FLOAT32_EVALUATION and data["working"] == "float32"
    assert data["ratios"]["fast/reference"] > 100


def test_float32_evaluation_notes():
    x = np.linspace(0.5, 3.0, 16)
    promoted = dispute(lambda v: v * np.array([1.0]), (x,), {"c": x.astype(BF16)}, "bfloat16")
    assert any("came out float64" in n for n in promoted.notes)

    def only_mp(v):
        if v.dtype != object:
            raise RuntimeError("exact only")
        return v * 1

    r = dispute(only_mp, (x,), {"c": x.astype(BF16)}, "bfloat16")
    # no numpy float32 row; within 2 ulp everywhere, so no costly sensitivities are needed
    assert r.float32 is None and "not computed: every candidate is within the base bound" in r.bound_reason
    assert any("raised RuntimeError: exact only" in n for n in r.notes)
    off = _noisy(x, 3).astype(np.float64) * 3  # x moved 3 ulps: sensitivities now matter
    r = dispute(only_mp, (x,), {"c": off.astype(BF16)}, "bfloat16")
    assert "differences of exact evaluations" in r.bound_reason and r.broken == ("c",)
    np.testing.assert_allclose(r.sensitivity, x, rtol=1e-9)  # d(x)/dx * x = x
    r_off = dispute(same, (x,), {"c": x.astype(BF16)}, "bfloat16", float32_evaluation=False)
    assert r_off.float32 is None and "forward mode" in r_off.bound_reason


# -- inputs, candidates, errors ------------------------------------------------------------


def test_torch_tensors_and_bit_patterns_are_accepted():
    torch = need("torch")
    x = np.linspace(-2, 2, 32).astype(BF16)
    y = np.exp(x.astype(np.float32)).astype(BF16)
    xt = torch.from_numpy(x.view(np.int16)).view(torch.bfloat16)
    r = dispute(np.exp, (xt,), {"torch": torch.exp(xt), "bits": y.view(np.uint16), "np": y},
                "bfloat16")
    assert r.errors["bits"].tolist() == r.errors["np"].tolist()
    assert r.stats["torch"].max_ulp <= 0.5 + 2**-10


def test_dtype_is_inferred_from_the_candidates():
    x = np.linspace(0.5, 3.0, 8)
    assert dispute(same, x, {"a": x.astype(np.float16)}).dtype == "float16"
    with pytest.raises(ValueError, match="do not share one float dtype"):
        dispute(same, x, {"a": x.astype(np.float16), "b": x.astype(BF16)})


def test_clear_errors():
    x = np.linspace(0.5, 3.0, 8)
    with pytest.raises(ValueError, match=r"candidate 'c'.*shape \(7,\).*must have shape \(8,\)"):
        dispute(same, (x,), {"c": x[:7].astype(BF16)}, "bfloat16")
    with pytest.raises(ValueError, match="unknown floating-point format 'bfloat17'.*bfloat16"):
        dispute(same, (x,), {"c": x.astype(BF16)}, "bfloat17")
    with pytest.raises(TypeError, match="candidate 'c' has dtype int32"):
        dispute(same, (x,), {"c": x.astype(np.int32)}, "bfloat16")
    with pytest.raises(ValueError, match="at least one candidate"):
        dispute(same, (x,), {}, "bfloat16")
    with pytest.raises(ValueError, match="reserved"):
        dispute(same, (x,), {FLOAT32_EVALUATION: x.astype(BF16)}, "bfloat16")
    with pytest.raises(ValueError, match="bound_ulps must be a positive number"):
        dispute(same, (x,), {"c": x.astype(BF16)}, "bfloat16", bound_ulps=-1)


def test_a_definition_that_drops_to_float_is_refused_with_the_reason():
    x = np.linspace(0.5, 3.0, 8)

    def leaky(v):
        return np.array([math.exp(e) for e in v])  # math.exp converts to float

    with pytest.raises(NotAdjudicable, match="math_fn cannot be evaluated at arbitrary precision") as info:
        dispute(leaky, (x,), {"c": x.astype(BF16)}, "bfloat16")
    assert info.value.reason.value == "float_conversion"
    assert "math.exp" in str(info.value) or "float()" in str(info.value)


def test_mpmath_precision_is_restored():
    before = mpmath.mp.prec
    dispute(np.exp, (np.linspace(0, 1, 4),), {"c": np.exp(np.linspace(0, 1, 4)).astype(BF16)},
            "bfloat16", dps=60)
    assert mpmath.mp.prec == before


def test_public_names():
    assert gradcheck.dispute is dispute and gradcheck.DisputeResult is DisputeResult


# -- the command line ----------------------------------------------------------------------


@pytest.fixture
def cli(monkeypatch, capsys):
    """``cli(*args, cwd=...)``: `gradcheck dispute ARGS` in this process (tests/cli_in_process.py)."""
    return functools.partial(run_cli, monkeypatch, capsys, "dispute")


@pytest.fixture(scope="module")
def rope_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("dispute")
    x, pos = rope_inputs(rows=16, dim=64, start=4000, stop=8000, seed=7)
    np.savez(d / "in.npz", x.view(np.uint16), pos)
    np.save(d / "fast.npy", rope_fast(x, pos).view(np.uint16))
    np.save(d / "ref.npy", rope_reference(x, pos).view(np.uint16))
    np.save(d / "short.npy", rope_fast(x, pos).view(np.uint16)[:3])
    return d


def test_cli_reference_is_broken_exit_1_with_json(rope_files, cli):
    out = cli("--fn", "gradcheck.subjects:rope_math", "--inputs", "in.npz", "--bits", "arr_0",
               "--candidate", "fast=fast.npy", "--candidate", "reference=ref.npy",
               "--dtype", "bfloat16", "--json", cwd=rope_files)
    assert out.returncode == 1, out.stderr
    data = json.loads(out.stdout)
    assert data["broken"] == ["reference"] and data["most_accurate"] == "fast"
    assert data["stats"]["fast"]["beyond_count"] == 0


def test_cli_no_candidate_broken_exit_0_text(rope_files, cli):
    out = cli("--fn", "gradcheck.subjects:rope_math", "--inputs", "in.npz", "--bits", "arr_0",
               "--candidate", "fast=fast.npy", "--candidate", "again=fast.npy",
               "--dtype", "bfloat16", cwd=rope_files)
    assert out.returncode == 0, out.stderr
    assert "no candidate broken" in out.stdout and "equally accurate" in out.stdout


@pytest.mark.parametrize("args, message", [
    (["--candidate", "fast=missing.npy", "--dtype", "bfloat16"], "No such file"),
    (["--candidate", "fast", "--dtype", "bfloat16"], "NAME=FILE.npy"),
    (["--candidate", "fast=fast.npy", "--dtype", "bfloat17"], "valid names"),
    (["--candidate", "short=short.npy", "--dtype", "bfloat16"], "shape (3, 64)"),
])
def test_cli_usage_errors_exit_2(rope_files, args, message, cli):
    out = cli("--fn", "gradcheck.subjects:rope_math", "--inputs", "in.npz", "--bits", "arr_0",
               *args, cwd=rope_files)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert message in out.stderr


def test_cli_definition_leaving_arbitrary_precision_exits_2(rope_files, cli):
    out = cli("--fn", "math:fsum", "--inputs", "fast.npy", "--bits", "arr_0", "--candidate", "fast=fast.npy",
               "--dtype", "bfloat16", cwd=rope_files)
    assert out.returncode == 2
    assert "not adjudicable" in out.stderr
