"""The C transposed-matmul subject (kernels/matmul_tn.c): forward, loss, both backwards.

The defective backward's defect is stated here from its definition (the corner term
B[p, n-1] G[m-1, n-1] / A[p, m-1] G[m-1, n-1] is dropped when m and n are both odd) and
compared with the kernel entry by entry, independently of any gradient check.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from gradcheck import Verdict, check
from gradcheck.native import native_function

SHAPES = list(itertools.product(range(1, 9), repeat=3))  # (m, k, n)


@pytest.fixture(scope="module")
def kernels():
    from gradcheck import _kernels

    return _kernels.lib, _kernels.ffi


def upstream(m: int, n: int) -> np.ndarray:
    """G[i, j] = 0.25 ((3i + 5j) mod 7) - 0.625, the kernel's fixed upstream gradient."""
    i, j = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    return 0.25 * ((3 * i + 5 * j) % 7) - 0.625


def operands(shape, seed=0):
    m, k, n = shape
    rng = np.random.default_rng([seed, m, k, n])
    a = rng.uniform(0.5, 2.0, (k, m)) * rng.choice([-1.0, 1.0], (k, m))
    b = rng.uniform(0.5, 2.0, (k, n)) * rng.choice([-1.0, 1.0], (k, n))
    return a, b, np.concatenate([a.ravel(), b.ravel()])


def c_gradient(kernels, name, x, shape):
    lib, ffi = kernels
    g = np.zeros_like(x)
    getattr(lib, f"gc_matmul_tn_{name}")(
        ffi.cast("const double *", ffi.from_buffer(x)), x.size, ffi.new("int64_t[]", list(shape)),
        ffi.cast("double *", ffi.from_buffer(g)))
    return g


def test_upstream_gradient_is_never_zero():
    """Every G entry is nonzero, so every term of the backward (and of the defect) matters."""
    assert np.abs(upstream(8, 8)).min() >= 0.125


@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 4, 5), (8, 1, 2), (2, 7, 1), (5, 5, 5)])
def test_forward_is_a_transpose_b(kernels, shape):
    """gc_matmul_tn_forward writes A^T B (m x n, row-major), as numpy computes it."""
    lib, ffi = kernels
    m, k, n = shape
    a, b, x = operands(shape)
    y = np.full(m * n, np.nan)
    lib.gc_matmul_tn_forward(ffi.cast("const double *", ffi.from_buffer(x)), x.size,
                             ffi.new("int64_t[]", [m, k, n]),
                             ffi.cast("double *", ffi.from_buffer(y)), y.size)
    np.testing.assert_allclose(y.reshape(m, n), a.T @ b, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 4, 5), (8, 1, 2), (6, 6, 6)])
def test_loss_is_sum_of_product_with_upstream(shape):
    """The loss is sum(A^T B * G); the input is read, never written."""
    m, k, n = shape
    a, b, x = operands(shape)
    before = x.copy()
    loss = native_function("matmul_tn", grad=None, iparams=shape)(x)
    assert loss == pytest.approx(float(((a.T @ b) * upstream(m, n)).sum()), rel=1e-13, abs=1e-13)
    np.testing.assert_array_equal(x, before)


def test_correct_backward_is_b_gt_and_a_g_for_every_shape(kernels):
    """gc_matmul_tn_grad = concat(B G^T, A G) at all 512 shapes (m, k, n) in 1..8."""
    for shape in SHAPES:
        m, k, n = shape
        a, b, x = operands(shape)
        g = upstream(m, n)
        expected = np.concatenate([(b @ g.T).ravel(), (a @ g).ravel()])
        np.testing.assert_allclose(c_gradient(kernels, "grad", x, shape), expected,
                                   rtol=1e-12, atol=1e-12, err_msg=str(shape))


def defective_entries(shape) -> np.ndarray:
    """Where the parity backward is wrong, from the defect's definition: when m and n are
    both odd, the last column of dA and the last column of dB (every row); else nowhere."""
    m, k, n = shape
    da, db = np.zeros((k, m), bool), np.zeros((k, n), bool)
    if m % 2 == 1 and n % 2 == 1:
        da[:, -1] = db[:, -1] = True
    return np.concatenate([da.ravel(), db.ravel()])


def test_parity_backward_differs_exactly_where_its_defect_says(kernels):
    """The parity backward misses exactly the corner term, at exactly the defective entries."""
    for shape in SHAPES:
        m, k, n = shape
        a, b, x = operands(shape)
        good = c_gradient(kernels, "grad", x, shape)
        bad = c_gradient(kernels, "grad_parity", x, shape)
        wrong = defective_entries(shape)
        np.testing.assert_array_equal(bad[~wrong], good[~wrong], err_msg=str(shape))
        if wrong.any():
            corner = upstream(m, n)[m - 1, n - 1]
            missing = np.concatenate([b[:, n - 1] * corner, a[:, m - 1] * corner])
            np.testing.assert_allclose(good[wrong] - bad[wrong], missing, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("grad, shape, flagged", [
    ("grad", (5, 3, 7), False), ("grad_parity", (5, 3, 7), True), ("grad_parity", (4, 3, 7), False),
])
def test_check_flags_the_parity_defect(grad, shape, flagged):
    """A full check of one shape flags exactly the defective entries (serial engine)."""
    nf = native_function("matmul_tn", grad=grad, iparams=shape)
    _, _, x = operands(shape)
    r = check(nf, x, nf.gradient, engine="serial")
    mismatch = r.codes == Verdict.MISMATCH
    np.testing.assert_array_equal(mismatch, defective_entries(shape) if flagged else False)
    assert r.passed is not flagged


def test_compiled_engine_reaches_the_kernel():
    """Through the compiled engine the verdicts equal serial's."""
    shape = (5, 3, 7)
    nf = native_function("matmul_tn", grad="grad_parity", iparams=shape)
    _, _, x = operands(shape)
    compiled = check(nf, x, nf.gradient, engine="compiled")
    serial = check(nf, x, nf.gradient, engine="serial")
    assert compiled.engine == "compiled"
    np.testing.assert_array_equal(compiled.codes, serial.codes)
    np.testing.assert_array_equal(compiled.codes == Verdict.MISMATCH, defective_entries(shape))
