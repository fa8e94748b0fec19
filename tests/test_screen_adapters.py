"""gradcheck.screen through the framework adapters: autograd's (torch) and jax.vjp's
gradients screened at every entry, a corrupted backward localized at its index."""
from __future__ import annotations

import numpy as np
import optional_deps
import pytest

import gradcheck
from gradcheck import Verdict


def _framework(name: str):
    """torch / jax / dask, or a skip where absent (a failure in CI's full run: tests/optional_deps.py)."""
    return optional_deps.need(name)


def test_torch_autograd_is_screened_and_a_bad_backward_localized():
    """A torch f differentiated by autograd: correct -> all SCREENED; a custom Function
    whose backward is wrong at one entry -> MISMATCH exactly there. The tensor is untouched."""
    torch = _framework("torch")
    gen = torch.Generator().manual_seed(0)
    A = torch.randn(48, 64, generator=gen, dtype=torch.float64) / 8
    W = torch.randn(64, 64, generator=gen, dtype=torch.float64) / 8

    class Tanh(torch.autograd.Function):
        @staticmethod
        def forward(ctx, z):
            y = torch.tanh(z)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            d = 1 - y**2
            d[5, 9] = d[5, 9] * (1 + 1e-3)
            return g * d

    before = W.clone()
    ok = gradcheck.screen(lambda w: torch.tanh(A @ w).sum(), W)
    assert ok.passed and ok.counts[Verdict.SCREENED] == W.numel()
    bad = gradcheck.screen(lambda w: Tanh.apply(A @ w).sum(), W)
    found = bad.entries(Verdict.MISMATCH)
    assert found and all(ix[1] == 9 for ix in found)  # column 9 of W feeds z[:, 9]
    assert torch.equal(W, before)
    # A forked child of a process whose torch thread pool runs can deadlock: refused.
    with pytest.raises(ValueError, match="deadlock"):
        gradcheck.screen(lambda w: torch.tanh(A @ w).sum(), W, engine="processes")


def test_jax_vjp_is_screened_and_a_bad_rule_localized():
    """A jax f differentiated by jax.vjp, with a custom_vjp rule wrong at one input entry:
    MISMATCH exactly there; the correct rule gives no MISMATCH."""
    jax = _framework("jax")
    import jax.numpy as jnp

    rng = np.random.default_rng(0)
    A = rng.standard_normal((32, 48)) / 7
    W = rng.standard_normal((48, 48)) / 7

    def make(planted: bool):
        @jax.custom_vjp
        def mul(w):
            return jnp.tanh(jnp.asarray(A) @ w).sum()

        def fwd(w):
            return mul(w), w

        def bwd(w, g):
            d = jnp.asarray(A).T @ (1 - jnp.tanh(jnp.asarray(A) @ w) ** 2)
            if planted:
                d = d.at[7, 3].multiply(1 + 1e-3)
            return (g * d,)

        mul.defvjp(fwd, bwd)
        return mul

    # A float64 numpy x with backend="jax": the adapter scopes x64 around every call.
    ok = gradcheck.screen(make(False), W, backend="jax")
    bad = gradcheck.screen(make(True), W, backend="jax")
    assert ok.passed and ok.counts[Verdict.MISMATCH] == 0
    assert bad.entries(Verdict.MISMATCH) == [(7, 3)]


def test_screen_on_a_dask_cluster_gives_serials_report():
    """executor=client.get_executor() (dask LocalCluster, 2 worker processes): the probe is
    shipped once per worker; verdicts, evaluations and limits equal serial's."""
    import logging
    import sys

    _framework("distributed")
    import cloudpickle
    from distributed import Client, LocalCluster

    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((48, 48)) / 7, rng.standard_normal((48, 48))
    W = rng.standard_normal((48, 48)) / 7

    def f(w):
        return (np.tanh(A @ w) * B).sum()

    claim = A.T @ ((1 - np.tanh(A @ W) ** 2) * B)
    claim[4, 4] *= 1 + 1e-4
    # adjudicate=False: whether the referee is tried depends on how long f takes at arbitrary
    # precision, and its timing calls are counted (a machine's load would change the count).
    serial = gradcheck.screen(f, W, claim, engine="serial", adjudicate=False)
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                          silence_logs=logging.CRITICAL) as cluster, Client(cluster) as client:
            remote = gradcheck.screen(f, W, claim, executor=client.get_executor(), adjudicate=False)
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert remote.engine == "screen/executor"
    assert np.array_equal(remote.codes, serial.codes) and remote.evaluations == serial.evaluations
    assert np.array_equal(remote.detection_limit, serial.detection_limit)
    assert remote.entries(Verdict.MISMATCH) == [(4, 4)]
