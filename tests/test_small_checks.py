"""Small checks stay small (issue 27): no low-precision machinery unless a low-precision
format is in play. Tested by the modules a fresh interpreter has loaded, never by duration."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from gradcheck._core.formats import bits_to_float64, from_bits, round_to_format

# float64 checks whose every f value is a float32 (and float16, bfloat16) number: the round-off
# watch (gradcheck._refine.roundoff.LowerFormats) tests each lower format on them.
_SCRIPT = r"""
import json, sys
import numpy as np
import gradcheck
reports = [
    gradcheck.check(lambda x: np.round(x[0] * 0) + (x[1:] ** 2).sum() * 0, np.array([0.0, 1.0, 2.0]),
                    lambda x: np.zeros(3)),
    gradcheck.check(lambda x: (x ** 2).sum() + 0.5, np.array([0.5, 0.25, 2.0]), lambda x: 2 * x),
    gradcheck.check(lambda x: np.abs(x).sum(), np.array([0.0, 0.25, 2.0]), np.sign),
]
print(json.dumps({"statuses": [r.status for r in reports],
                  "loaded": sorted(m for m in sys.modules if m.split(".")[0] == "ml_dtypes")}))
"""


def test_float64_checks_import_no_low_precision_format_module():
    """Three float64 checks whose values are all exactly bfloat16 numbers (so the round-off
    watch tests bfloat16) finish without importing ml_dtypes."""
    done = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, check=True)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["statuses"] == ["PASS", "PASS", "PASS"]
    assert out["loaded"] == []


@pytest.mark.parametrize("fmt", ["bfloat16", "float16", "float32"])
def test_bits_to_float64_agrees_with_the_format_dtype(fmt):
    """The decoder the watch uses gives the values the format's own dtype gives, bit for bit,
    zeros, subnormals, infinities and NaN included."""
    rng = np.random.default_rng(3)
    values = np.concatenate([rng.standard_normal(200) * 10.0 ** rng.integers(-40, 38, 200),
                             [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3e38]])
    bits = round_to_format(values, fmt)
    ours = bits_to_float64(bits, fmt)
    theirs = from_bits(bits, fmt).astype(np.float64)
    assert np.array_equal(ours, theirs, equal_nan=True)
    assert np.array_equal(np.signbit(ours), np.signbit(theirs))


# -- exact zeros proven together (gradcheck._adjudicate.zeros) ----------------------------

def _relu_case():
    """180 entries, 131 of them on the flat side of a relu: claims of exactly 0 that the
    finite differences cannot tell from noise (the issue's case)."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0.1, 2.0, 180)
    x[rng.choice(180, 131, replace=False)] *= -1
    w = rng.standard_normal(180)
    return (lambda v: (np.where(v > 0, v, 0) ** 2 * w).sum()), x, (lambda v: np.where(v > 0, 2 * v, 0) * w)


def test_zeros_proven_together_get_the_verdicts_each_alone_gets(monkeypatch):
    """The batch gives every entry the verdict and cause the per-entry referee gives, in a
    small share of its high-precision evaluations, and says so in the notes."""
    from gradcheck import Cause, Verdict, check
    from gradcheck._adjudicate import zeros

    f, x, g = _relu_case()
    together = check(f, x, g)
    monkeypatch.setattr(zeros, "BATCH_MIN", 10**9)  # every zero alone, as before
    alone = check(f, x, g)
    assert np.array_equal(together.codes, alone.codes) and np.array_equal(together.causes, alone.causes)
    assert (together.causes == Cause.EXACT_ZERO).sum() == 131 and together.counts[Verdict.PASS] == 180
    assert together.evaluations < alone.evaluations / 2
    assert any("131 claims of 0 proven zero together" in n for n in together.notes)


def test_a_claim_of_zero_for_a_tiny_nonzero_derivative_is_not_proven_zero():
    """Negative control: among claims of 0, one whose true derivative is 1e-9 (far below the
    finite differences' noise, far above the backward's round-off) fails the batch and is
    found by its own exact derivative; the true zeros still PASS."""
    from gradcheck import Cause, Verdict, check

    x = np.zeros(12)
    x[6:] = np.linspace(0.5, 1.5, 6)

    def f(v):
        return 1e4 * np.cos(v).sum() + 1e-9 * v[0]

    report = check(f, x, lambda v: -1e4 * np.sin(v))  # the 1e-9 at entry 0 left out
    assert report.verdicts[0] == Verdict.MISMATCH
    assert all(report.cause((i,)) == Cause.EXACT_ZERO for i in range(1, 6))
    assert any("were not all zero together" in n for n in report.notes)
