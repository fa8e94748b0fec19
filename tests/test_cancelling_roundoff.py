"""A correct gradient of an f that cancels large intermediate values, at rtol=1e-12.

``sum(tanh(A @ W) * B)`` with small entries sums terms ~900 times larger than its result: its
round-off is ~15 times the float64 model's ``u*|f|``. The step study's bounds, built on the
model, let 6 of 1024 correct entries through as MISMATCH (60 of 4096 at 64x64) before a
MISMATCH had to hold under the round-off the probe measured (``_refine.roundoff.demote_unproven``):
one that does not is UNCHECKED, not proven.
"""
from __future__ import annotations

import numpy as np

from gradcheck import Config, Verdict, check

N, SCALE = 32, 0.5


def _layer():
    rng = np.random.default_rng(0)
    A, B, W = (rng.standard_normal((N, N)) * SCALE for _ in range(3))
    f = lambda w: np.sum(np.tanh(A @ w) * B)  # noqa: E731
    return f, W, A.T @ ((1 - np.tanh(A @ W) ** 2) * B)


def test_correct_gradient_of_a_cancelling_sum_is_never_a_mismatch_and_planted_errors_are():
    f, W, G = _layer()
    cfg = Config(rtol=1e-12)
    clean = check(f, W, G, config=cfg, adjudicate=False)  # no referee: the step study alone
    codes = clean.codes.reshape(-1)
    assert int((codes == Verdict.MISMATCH).sum()) == 0
    assert int((codes == Verdict.UNCHECKED).sum()) <= 12  # the unproven ones, said so, not hidden as PASS
    assert any("cancels large intermediate values" in note for note in clean.notes)
    # Negative control: a 1e-9 relative error on entries the differences resolved to well
    # below it (their tolerance under a third of it) is still a MISMATCH, and only there.
    a = np.abs(G.reshape(-1))
    resolved = np.flatnonzero((codes == Verdict.PASS) & (clean.tolerance.reshape(-1) < 0.3e-9 * a))
    assert resolved.size >= 3
    picks = np.random.default_rng(1).choice(resolved, 3, replace=False)
    claim = G.copy().reshape(-1)
    claim[picks] *= 1 + 1e-9
    planted = check(f, W, claim.reshape(G.shape), config=cfg, adjudicate=False).codes.reshape(-1)
    assert (planted[picks] == Verdict.MISMATCH).all()
    assert int((planted == Verdict.MISMATCH).sum()) == picks.size
