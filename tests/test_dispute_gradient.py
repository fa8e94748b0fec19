"""dispute(..., of="gradient"): backward kernels judged against the exact gradient."""
from __future__ import annotations

import json

import numpy as np
import pytest
from cli_in_process import run_cli

import gradcheck
import gradcheck.mp
from gradcheck import DisputeResult, dispute
from gradcheck._core.formats import BFLOAT16, from_bits, round_to_format
from gradcheck.dual import dual_gradient
from gradcheck.mp._reverse import mp_vjp
from gradcheck.subjects import matvec_inputs, rope_inputs

DIM = 64
INV_FREQ = (10000.0 ** (-np.arange(0, DIM, 2) / DIM)).astype(np.float32)


def bf(y) -> np.ndarray:
    return round_to_format(np.asarray(y, dtype=np.float64), BFLOAT16, as_dtype=True)


def rope(x, positions):
    """The rotary embedding with a float32 frequency table (the definition)."""
    half = x.shape[-1] // 2
    angle = positions[..., None] * INV_FREQ
    c, s = np.cos(angle), np.sin(angle)
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)


def rope_backward(g, positions, *, angle_in_bf16: bool) -> np.ndarray:
    """A bfloat16 backward kernel: the inverse rotation in float32, rounded once; the
    fallback rounds the angle to bfloat16 first (as its forward does)."""
    half = g.shape[-1] // 2
    angle = positions[..., None].astype(np.float32) * INV_FREQ
    if angle_in_bf16:
        angle = bf(angle).astype(np.float32)
    c, s = np.cos(angle), np.sin(angle)
    g1, g2 = g[..., :half].astype(np.float32), g[..., half:].astype(np.float32)
    return bf(np.concatenate([g1 * c + g2 * s, g2 * c - g1 * s], axis=-1))


# -- the exact gradient ----------------------------------------------------------------------


def test_reverse_mode_gradient_matches_dual_numbers_and_a_closed_form():
    rng = np.random.default_rng(0)
    x = rng.uniform(0.2, 0.9, 9)

    def f(v):
        y = np.tanh(v) * np.exp(v) / (1 + v ** 2) + np.sqrt(v) * np.log1p(v) - np.arctan(v) * np.cos(v) ** 3
        return np.sum(y[1:] * y[:-1]) + np.sum(np.maximum(v, 0.5) * np.sinh(v)) + (v @ v) / 3

    exact = np.array([float(e.value) for e in mp_vjp(f, (x,), 0, None, dps=30)])
    np.testing.assert_allclose(exact, dual_gradient(f, x), rtol=1e-12, atol=1e-13)
    # rotary embedding: the gradient with respect to x is the inverse rotation of g
    xr, pos = rope_inputs(rows=4, dim=DIM, start=0, stop=30, seed=1)
    g = rng.standard_normal(xr.shape)
    got = np.array([float(e.value) for e in mp_vjp(rope, (xr, pos), 0, g, dps=30).reshape(-1)])
    angle = pos[:, None] * INV_FREQ.astype(np.float64)
    c, s = np.cos(angle), np.sin(angle)
    want = np.concatenate([g[:, :32] * c + g[:, 32:] * s, g[:, 32:] * c - g[:, :32] * s], axis=-1)
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="cotangent shape"):
        mp_vjp(rope, (xr, pos), 0, g[:2], dps=30)


def test_reverse_mode_on_layer_norm_and_a_scalar_loss():
    """mean, var, sqrt, broadcasting and a captured float64 weight, against dual numbers; a
    scalar loss needs no cotangent; leaving arbitrary precision is refused with its line."""
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((3, 16)), rng.standard_normal(16)

    def loss(v):
        mu = v.mean(axis=-1, keepdims=True)
        z = (v - mu) / np.sqrt(v.var(axis=-1, keepdims=True) + 1e-5)
        return np.sum(np.tanh(z * w) ** 2)

    got = np.array([float(e.value) for e in mp_vjp(loss, (x,), 0, None, dps=30).reshape(-1)])
    np.testing.assert_allclose(got.reshape(x.shape), dual_gradient(loss, x), rtol=1e-10, atol=1e-12)
    exact = dispute(loss, (x,), {"f32": bf(dual_gradient(loss, x))}, "bfloat16", of="gradient")
    assert exact.broken == () and exact.stats["f32"].max_ulp <= 0.5 + 2**-10

    def leaky(v):
        return np.sum(v * float(v[0, 0]))

    with pytest.raises(gradcheck.mp.NotAdjudicable, match="float"):
        dispute(leaky, (x,), {"c": bf(x)}, "bfloat16", of="gradient")

    def threaded(v):  # the record is per computation: a thread's operations would be lost
        import concurrent.futures

        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(lambda: np.sum(v * v)).result()

    with pytest.raises(RuntimeError, match="outside the gradient computation"):
        dispute(threaded, (x,), {"c": bf(x)}, "bfloat16", of="gradient")


# -- the verdicts ----------------------------------------------------------------------------


def test_the_fast_bfloat16_backward_is_the_accurate_one():
    x, pos = rope_inputs(rows=24, dim=DIM, start=65536, stop=131072, seed=4)
    g = bf(np.random.default_rng(1).standard_normal(x.shape))
    fast, reference = rope_backward(g, pos, angle_in_bf16=False), rope_backward(g, pos, angle_in_bf16=True)
    r = dispute(rope, (x, pos), {"fast": fast, "reference": reference}, "bfloat16",
                of="gradient", cotangent=g)
    assert isinstance(r, DisputeResult) and r.of == "gradient" and r.float32 is None
    assert r.function == "gradient of rope with respect to input 0"
    assert r.most_accurate == "fast" and r.broken == ("reference",)
    assert r.ratio("fast", "reference") > 100
    text = str(r)
    assert "fast is within its bound at every entry" in text and "reference is broken" in text
    assert "relative rounding of 'positions'" in r.bound_reason  # the angle's rounding, carried
    assert set(r.sensitivity_by_input) == {"x", "positions", "cotangent"}
    # the exact gradient rounded once is a candidate no bound can break
    r2 = dispute(rope, (x, pos), {"rounded": r.correctly_rounded}, "bfloat16", of="gradient", cotangent=g)
    assert r2.stats["rounded"].max_ulp <= 0.5 and r2.broken == ()


def _bf16_accumulated_vjp(a, cot) -> np.ndarray:
    """a.T @ cot accumulated over the rows in bfloat16 (the running sum rounded each step)."""
    acc = np.zeros(a.shape[1], dtype=np.float32)
    for i in range(a.shape[0]):
        step = acc + a[i].astype(np.float32) * np.float32(cot[i])
        acc = from_bits(round_to_format(step, BFLOAT16), BFLOAT16).astype(np.float32)
    return bf(acc)


def test_a_bfloat16_accumulating_backward_is_broken():
    a, v = matvec_inputs(rows=256, n=48, seed=3)
    cot = bf(np.random.default_rng(2).uniform(0.5, 1.5, 256))
    f32 = bf(a.astype(np.float32).T @ cot.astype(np.float32))
    r = dispute(lambda p, q: p @ q, (a, v), {"fused": _bf16_accumulated_vjp(a, cot), "f32": f32},
                "bfloat16", of="gradient", wrt=1, cotangent=cot)
    assert r.broken == ("fused",) and r.most_accurate == "f32"
    assert r.stats["f32"].max_ulp <= 0.5 + 2**-10
    assert "fused is broken" in r.verdict
    assert json.loads(r.to_json())["of"] == "gradient"


def test_gradient_dispute_errors():
    x = np.linspace(0.5, 1.5, 8)
    c = {"c": bf(np.cos(x))}
    with pytest.raises(ValueError, match="wrt must be the index of one of the 1 input"):
        dispute(np.sin, (x,), c, "bfloat16", of="gradient", wrt=1, cotangent=np.ones(8))
    with pytest.raises(ValueError, match="of must be 'value'.*or 'gradient'"):
        dispute(np.sin, (x,), c, "bfloat16", of="grad")
    with pytest.raises(ValueError, match="pass a cotangent"):
        dispute(np.sin, (x,), c, "bfloat16", of="gradient")
    with pytest.raises(TypeError, match="a gradient needs a float input"):
        dispute(lambda p, q: p * q, (x, np.arange(8)), c, "bfloat16", of="gradient", wrt=1,
                cotangent=np.ones(8))


def test_cli_of_gradient(tmp_path, monkeypatch, capsys):
    x, pos = rope_inputs(rows=8, dim=DIM, start=65536, stop=131072, seed=4)
    g = bf(np.random.default_rng(1).standard_normal(x.shape))
    np.savez(tmp_path / "in.npz", x.view(np.uint16), pos)
    np.save(tmp_path / "g.npy", g.view(np.uint16))
    np.save(tmp_path / "fast.npy", rope_backward(g, pos, angle_in_bf16=False).view(np.uint16))
    np.save(tmp_path / "ref.npy", rope_backward(g, pos, angle_in_bf16=True).view(np.uint16))
    (tmp_path / "defs.py").write_text(
        "import numpy as np\n"
        f"INV = (10000.0 ** (-np.arange(0, {DIM}, 2) / {DIM})).astype(np.float32)\n"
        "def rope(x, p):\n"
        "    h = x.shape[-1] // 2\n"
        "    a = p[..., None] * INV\n"
        "    c, s = np.cos(a), np.sin(a)\n"
        "    return np.concatenate([x[..., :h] * c - x[..., h:] * s, x[..., h:] * c + x[..., :h] * s], axis=-1)\n")
    out = run_cli(monkeypatch, capsys, "dispute", "--fn", "defs:rope", "--inputs", "in.npz", "--bits", "arr_0",
                  "--of", "gradient", "--cotangent", "g.npy", "--candidate", "fast=fast.npy",
                  "--candidate", "reference=ref.npy", "--dtype", "bfloat16", "--json", cwd=tmp_path)
    assert out.returncode == 1, out.stderr
    data = json.loads(out.stdout)
    assert data["of"] == "gradient" and data["broken"] == ["reference"] and data["most_accurate"] == "fast"
