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
    pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(3)
    values = np.concatenate([rng.standard_normal(200) * 10.0 ** rng.integers(-40, 38, 200),
                             [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3e38]])
    bits = round_to_format(values, fmt)
    ours = bits_to_float64(bits, fmt)
    theirs = from_bits(bits, fmt).astype(np.float64)
    assert np.array_equal(ours, theirs, equal_nan=True)
    assert np.array_equal(np.signbit(ours), np.signbit(theirs))
