"""Specification of the forward-mode dual-number reference backend.

The truth in these tests is a derivative written by hand (closed form), never a finite
difference: the dual backend exists to test the finite-difference checker, so it must not be
validated by the thing it validates. One loose sanity cross-check is the only exception.
"""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

from gradcheck.dual import DualArray, dual_gradient, dual_jvp

RNG = np.random.default_rng(20240611)


def _r(*shape: int) -> np.ndarray:
    return RNG.normal(size=shape)


def _softmax(z: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def _away_from(x: np.ndarray, points: tuple[float, ...], gap: float = 0.1) -> np.ndarray:
    """Push entries at least `gap` away from kinks, so the closed form is unambiguous."""
    x = x.copy()
    for p in points:
        near = np.abs(x - p) < gap
        x[near] = p + np.where(x[near] >= p, gap, -gap) * 2
    return x


# ---- fixed data for the table -------------------------------------------------------------------
N_CE, C_CE = 5, 4
LABELS = np.array([0, 3, 1, 1, 2])
A_MM, W_MM, B_MM = _r(4, 3), _r(3, 5), _r(5, 2)
G_LN = _r(3, 6)
Q_AT, K_AT, G_AT = _r(4, 3), _r(5, 3), _r(4, 5)
P_EXP = np.array([0.5, 1.5, 2.0, 3.0, -1.0])
W_CAT = _r(12)
M_RS = _r(2, 4)
C_ROW = _r(4)
W_CUM = _r(6)


def _ce(z):
    """Softmax cross-entropy as a model would write it (max-shift, log-sum-exp, pick)."""
    s = z - z.max(axis=1, keepdims=True)
    lse = np.log(np.exp(s).sum(axis=1))
    return np.mean(lse - s[np.arange(N_CE), LABELS])


def _ce_grad(z):
    onehot = np.eye(C_CE)[LABELS]
    return (_softmax(z, 1) - onehot) / N_CE


def _ce_take(z):
    """The same loss through take_along_axis and logaddexp-free log(sum(exp))."""
    picked = np.take_along_axis(z, LABELS[:, None], axis=1)[:, 0]
    return np.sum(np.log(np.sum(np.exp(z), axis=-1)) - picked) / N_CE


def _mlp_grads():
    def dz(A, W):
        H = np.tanh(A @ W)
        return (1 - H**2) * (np.ones((A.shape[0], B_MM.shape[1])) @ B_MM.T)
    return (lambda W: A_MM.T @ dz(A_MM, W)), (lambda A: dz(A, W_MM) @ W_MM.T)


MLP_DW, MLP_DA = _mlp_grads()


def _layer_norm(x, eps=1e-5):
    mu = np.mean(x, axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(np.var(x, axis=-1, keepdims=True) + eps)


def _layer_norm_grad(x, eps=1e-5):
    sigma = np.sqrt(x.var(axis=-1, keepdims=True) + eps)
    yhat = (x - x.mean(axis=-1, keepdims=True)) / sigma
    g = G_LN
    return (g - g.mean(-1, keepdims=True) - yhat * (g * yhat).mean(-1, keepdims=True)) / sigma


def _attention(q):
    s = np.einsum("id,jd->ij", q, K_AT) / np.sqrt(3.0)
    p = np.exp(s - np.max(s, axis=-1, keepdims=True))
    p = p / np.sum(p, axis=-1, keepdims=True)
    return np.sum(p * G_AT)


def _attention_grad(q):
    p = _softmax(q @ K_AT.T / np.sqrt(3.0))
    ds = p * (G_AT - np.sum(p * G_AT, axis=-1, keepdims=True))
    return ds @ K_AT / np.sqrt(3.0)


def _setitem_pieces(x):
    out = np.zeros_like(x)
    out[::2] = 3 * x[::2]
    out[1::2] = np.exp(x[1::2])
    return np.sum(out)


def _setitem_constant(x):
    y = x * 2
    y[0] = 7.0  # overwritten by a constant: no dependence on x[0] any more
    return np.sum(y)


def _inplace_view(x):
    y = x * 1.0
    view = y[1:]
    view *= 3.0  # numpy semantics: writes through to y
    return np.sum(y)


def _reshape_transpose(x):
    return np.sum((x.reshape(2, 3).T @ M_RS[:, :2]) ** 2)


def _reshape_transpose_grad(x):
    r = x.reshape(2, 3)
    y = r.T @ M_RS[:, :2]
    return (2 * M_RS[:, :2] @ y.T).ravel()


X5 = _r(5)
X6 = _r(6)
XPOS = np.abs(_r(6)) + 0.2
XROW = _r(3, 4)

# (id, f, closed-form gradient, x)
CASES = [
    ("polynomial", lambda x: np.sum(x**3 - 2 * x**2 + 5 * x - 1),
     lambda x: 3 * x**2 - 4 * x + 5, X6),
    ("softplus_sin_times_tanh", lambda x: np.sum(np.log(1 + np.exp(np.sin(x))) * np.tanh(x)),
     lambda x: _sigmoid(np.sin(x)) * np.cos(x) * np.tanh(x)
     + np.log(1 + np.exp(np.sin(x))) * (1 - np.tanh(x) ** 2), X6),
    ("sqrt_log1p_expm1", lambda x: np.sum(np.sqrt(x) * np.log1p(x) + np.expm1(x) / x),
     lambda x: np.log1p(x) / (2 * np.sqrt(x)) + np.sqrt(x) / (1 + x)
     + (x * np.exp(x) - np.expm1(x)) / x**2, XPOS),
    ("trig", lambda x: np.sum(np.sin(x) * np.cos(2 * x) + np.tan(x / 3) + np.arctan(x)),
     lambda x: np.cos(x) * np.cos(2 * x) - 2 * np.sin(x) * np.sin(2 * x)
     + (1 + np.tan(x / 3) ** 2) / 3 + 1 / (1 + x**2), X6),
    ("hyperbolic_arcsin", lambda x: np.sum(np.sinh(x) * np.cosh(x) + np.arcsin(x / 4)),
     lambda x: np.cosh(x) ** 2 + np.sinh(x) ** 2 + 1 / (4 * np.sqrt(1 - (x / 4) ** 2)), X6),
    ("square_divide_reciprocal", lambda x: np.sum(np.square(x) / (1 + x**2) + np.reciprocal(9 + x)),
     lambda x: 2 * x / (1 + x**2) ** 2 - 1 / (9 + x) ** 2, X6),
    ("power_array_exponent", lambda x: np.sum(x ** P_EXP), lambda x: P_EXP * x ** (P_EXP - 1),
     XPOS[:5]),
    ("power_dual_exponent", lambda x: np.sum(2.0**x + x**x),
     lambda x: 2.0**x * np.log(2.0) + x**x * (np.log(x) + 1), XPOS),
    ("logaddexp_hypot_arctan2", lambda x: np.sum(np.logaddexp(x, 0) + np.hypot(x, 2)
                                                 + np.arctan2(x, 2)),
     lambda x: _sigmoid(x) + x / np.sqrt(x**2 + 4) + 2 / (x**2 + 4), X6),
    ("negative_abs_sign", lambda x: np.sum(-x * np.sign(x) + 0.5 * abs(x)),
     lambda x: -0.5 * np.sign(x), _away_from(X6, (0.0,))),
    ("softmax_cross_entropy", _ce, _ce_grad, _r(N_CE, C_CE)),
    ("softmax_cross_entropy_take_along_axis", _ce_take, _ce_grad, _r(N_CE, C_CE)),
    ("matmul_chain_wrt_W", lambda W: np.sum(np.tanh(A_MM @ W) @ B_MM), MLP_DW, W_MM),
    ("matmul_chain_wrt_A", lambda A: np.sum(np.tanh(A @ W_MM) @ B_MM), MLP_DA, A_MM),
    ("layer_norm", lambda x: np.sum(G_LN * _layer_norm(x)), _layer_norm_grad, _r(3, 6)),
    ("einsum_attention_scores", _attention, _attention_grad, Q_AT),
    ("relu_squared_and_leaky_min", lambda x: np.sum(np.maximum(x, 0) ** 2 + 0.5 * np.minimum(x, 0)),
     lambda x: 2 * np.maximum(x, 0) + 0.5 * (x < 0), _away_from(X6, (0.0,))),
    ("row_max", lambda X: np.sum(X.max(axis=1) * C_ROW[:3]),
     lambda X: np.eye(4)[X.argmax(axis=1)] * C_ROW[:3, None], XROW),
    ("global_min_keepdims", lambda X: np.sum(np.amin(X, axis=(0, 1), keepdims=True)) * 3,
     lambda X: 3 * (X.min() == X), XROW),
    ("var", lambda x: np.var(x), lambda x: 2 * (x - x.mean()) / x.size, X6),
    ("std_ddof1", lambda x: np.std(x, ddof=1),
     lambda x: (x - x.mean()) / ((x.size - 1) * x.std(ddof=1)), X6),
    ("var_axis0_keepdims", lambda X: np.sum(X.var(axis=0, keepdims=True) * C_ROW),
     lambda X: 2 * (X - X.mean(0)) / X.shape[0] * C_ROW, XROW),
    ("mean_axis0_squared", lambda X: np.sum(np.mean(X, axis=0) ** 2),
     lambda X: np.broadcast_to(2 * X.mean(0) / X.shape[0], X.shape), XROW),
    ("slice_with_step", lambda X: np.sum(X[1:, ::2] ** 2),
     lambda X: np.where((np.arange(3)[:, None] >= 1) & (np.arange(4) % 2 == 0), 2 * X, 0.0),
     XROW),
    ("fancy_index_with_repeats", lambda x: np.sum(x[[0, 2, 2]] * np.array([1.0, 2.0, 3.0])),
     lambda x: np.array([1.0, 0, 5.0, 0, 0]), X5),
    ("boolean_mask", lambda x: np.sum(x[x > 0] ** 3), lambda x: np.where(x > 0, 3 * x**2, 0.0),
     _away_from(X6, (0.0,))),
    ("ellipsis_newaxis_negative_step", lambda X: np.sum(X[..., 1][None, ::-1] * C_ROW[:3]),
     lambda X: np.where(np.arange(4) == 1, C_ROW[:3][::-1, None], 0.0), XROW),
    ("setitem_pieces_into_zeros_like", _setitem_pieces,
     lambda x: np.where(np.arange(6) % 2 == 0, 3.0, np.exp(x)), X6),
    ("setitem_constant_overwrites", _setitem_constant,
     lambda x: np.where(np.arange(6) == 0, 0.0, 2.0), X6),
    ("inplace_op_on_view_writes_through", _inplace_view,
     lambda x: np.where(np.arange(6) == 0, 1.0, 3.0), X6),
    ("broadcast_add_exp", lambda x: np.sum(np.exp(x + C_ROW[None, :])),
     lambda x: np.exp(x + C_ROW[None, :]).sum(axis=1, keepdims=True), _r(3, 1)),
    ("broadcast_to", lambda x: np.sum(np.broadcast_to(x, (4, 3)) * XROW.T),
     lambda x: XROW.T.sum(0), _r(3)),
    ("where_branches", lambda x: np.sum(np.where(x > 0, x**2, -x)),
     lambda x: np.where(x > 0, 2 * x, -1.0), _away_from(X6, (0.0,))),
    ("concatenate", lambda x: np.sum(np.concatenate([x, x**2]) * W_CAT),
     lambda x: W_CAT[:6] + 2 * x * W_CAT[6:], X6),
    ("stack_then_matvec", lambda x: np.sum(np.stack([x, np.sin(x)], axis=1) @ np.array([1.0, 2.0])),
     lambda x: 1 + 2 * np.cos(x), X6),
    ("clip_inside_and_outside", lambda x: np.sum(np.clip(x, -1, 1) ** 2),
     lambda x: np.where(np.abs(x) < 1, 2 * x, 0.0), _away_from(2 * X6, (-1.0, 1.0))),
    ("reshape_transpose_matmul", _reshape_transpose, _reshape_transpose_grad, X6),
    ("prod_no_zeros", lambda x: np.prod(x), lambda x: np.prod(x) / x, XPOS),
    ("prod_with_a_zero", lambda x: x.prod(), lambda x: np.array([6.0, 0.0, 0.0]),
     np.array([0.0, 2.0, 3.0])),
    ("linalg_norm", lambda x: np.linalg.norm(x), lambda x: x / np.sqrt(np.sum(x**2)), X6),
    ("dot_vector_matrix", lambda x: np.sum(np.dot(x, XROW.T)), lambda x: XROW.T.sum(1), _r(4)),
    ("cumsum", lambda x: np.sum(np.cumsum(x) * W_CUM), lambda x: np.cumsum(W_CUM[::-1])[::-1],
     X6),
    ("einsum_trace_and_batched", lambda x: np.einsum("ii", x.reshape(3, 3))
     + np.sum(np.einsum("...ij,...jk->...ik", x.reshape(1, 3, 3), x.reshape(3, 3))),
     lambda x: (np.eye(3) + np.ones((3, 3)) @ x.reshape(3, 3).T
                + x.reshape(3, 3).T @ np.ones((3, 3))).ravel(), _r(9)),
]


@pytest.mark.parametrize(("f", "df", "x"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_gradient_matches_closed_form(f, df, x):
    """The full gradient in one pass equals the hand-derived derivative."""
    np.testing.assert_allclose(dual_gradient(f, x), df(x), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize(("f", "df", "x"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_jvp_is_the_closed_form_gradient_dotted_with_the_direction(f, df, x):
    """One tangent along v gives <grad f, v>."""
    v = np.linspace(-1.0, 1.5, x.size).reshape(x.shape)
    np.testing.assert_allclose(dual_jvp(f, x, v), np.sum(df(x) * v), rtol=1e-11, atol=1e-12)


# ---- elementwise rules: f'(x) by hand, one table row per ufunc ----------------------------------
ELEMENTWISE = [
    (np.log, lambda x: 1 / x, (0.2, 3.0)),
    (np.log2, lambda x: 1 / (x * np.log(2)), (0.2, 3.0)),
    (np.log10, lambda x: 1 / (x * np.log(10)), (0.2, 3.0)),
    (np.exp2, lambda x: 2**x * np.log(2), (-2.0, 2.0)),
    (np.cbrt, lambda x: x ** (-2 / 3) / 3, (0.2, 3.0)),
    (np.cos, lambda x: -np.sin(x), (-3.0, 3.0)),
    (np.arccos, lambda x: -1 / np.sqrt(1 - x**2), (-0.9, 0.9)),
    (np.arcsinh, lambda x: 1 / np.sqrt(x**2 + 1), (-3.0, 3.0)),
    (np.arccosh, lambda x: 1 / np.sqrt(x**2 - 1), (1.2, 3.0)),
    (np.arctanh, lambda x: 1 / (1 - x**2), (-0.9, 0.9)),
    (np.deg2rad, lambda x: np.full_like(x, np.pi / 180), (-3.0, 3.0)),
    (np.rad2deg, lambda x: np.full_like(x, 180 / np.pi), (-3.0, 3.0)),
    (np.positive, np.ones_like, (-3.0, 3.0)),
    (np.conjugate, np.ones_like, (-3.0, 3.0)),
    (np.fabs, np.sign, (0.1, 3.0)),
    (lambda x: np.float_power(x, 2.5), lambda x: 2.5 * x**1.5, (0.2, 3.0)),
    (lambda x: np.fmax(x, 1.0) + np.fmin(x, 1.0) * 2, lambda x: np.where(x > 1, 1.0, 2.0),
     (1.05, 3.0)),
]


@pytest.mark.parametrize(("f", "df", "domain"), ELEMENTWISE,
                         ids=[getattr(e[0], "__name__", "lambda") for e in ELEMENTWISE])
def test_elementwise_rule_matches_closed_form(f, df, domain):
    """A unit tangent through an elementwise function gives f'(x), entry by entry."""
    x = np.linspace(*domain, 7)
    np.testing.assert_allclose(dual_jvp(f, x, np.ones_like(x)), df(x), rtol=1e-13, atol=1e-15)


# ---- linear maps: the tangent goes through the very same map ------------------------------------
LINEAR = [
    ("sum_axis_keepdims", lambda x: np.sum(x, axis=(0, 2), keepdims=True)),
    ("mean_negative_axis", lambda x: np.mean(x, axis=-1)),
    ("ufunc_add_reduce", lambda x: np.add.reduce(x, axis=1)),
    ("reshape", lambda x: np.reshape(x, (4, -1))),
    ("ravel", np.ravel),
    ("transpose_axes", lambda x: np.transpose(x, (2, 0, 1))),
    ("method_transpose", lambda x: x.transpose(1, 2, 0)),
    ("swapaxes", lambda x: np.swapaxes(x, 0, -1)),
    ("moveaxis", lambda x: np.moveaxis(x, 0, -1)),
    ("expand_then_squeeze", lambda x: np.squeeze(np.expand_dims(x, (0, -1)), axis=0)),
    ("flip", lambda x: np.flip(x, axis=1)),
    ("take", lambda x: np.take(x, [2, 0, 2], axis=2)),
    ("take_flat", lambda x: np.take(x, [5, 1])),
    ("diff", lambda x: np.diff(x, n=2, axis=2)),
    ("trace", lambda x: np.trace(x, axis1=1, axis2=2)),
    ("triu_tril", lambda x: np.triu(x, 1) - 2 * np.tril(x)),
    ("vstack_hstack", lambda x: np.hstack([np.vstack([x[0], x[1]]), np.ones((6, 1))])),
    ("concatenate_axis_none", lambda x: np.concatenate([x, 2 * x], axis=None)),
    ("stack_negative_axis", lambda x: np.stack([x, -x], axis=-1)),
    ("broadcast_arrays", lambda x: np.broadcast_arrays(x[:, :1], np.ones((2, 3, 4)))[0]),
    ("cumsum_axis", lambda x: np.cumsum(x, axis=1)),
    ("einsum_diagonal", lambda x: np.einsum("ijj->ij", x[:, :, :3])),
    ("copy_and_flatten", lambda x: np.copy(x).flatten()),
    ("getitem_mixed_advanced", lambda x: x[[1, 0], :, [3, 2]]),
    ("where_with_constant", lambda x: np.where(np.arange(4) % 2 == 0, x, 7.0)),
]


@pytest.mark.parametrize("op", [lin[1] for lin in LINEAR], ids=[lin[0] for lin in LINEAR])
def test_linear_operation_maps_the_tangent_like_the_value(op):
    """A linear map's derivative is the map itself: jvp(op, x, v) == op(v)."""
    x, v = _r(2, 3, 4), _r(2, 3, 4)
    expected = op(v) - op(np.zeros_like(v))  # removes the constant of an affine op
    np.testing.assert_allclose(dual_jvp(op, x, v), expected, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(op(DualArray(x, v[..., None])).value, op(x), rtol=1e-13)


# ---- products: the tangent of a bilinear map is op(da, b) + op(a, db) ---------------------------
BILINEAR = [
    ("matmul_2d_2d", np.matmul, (3, 4), (4, 2)),
    ("matmul_1d_2d", np.matmul, (4,), (4, 2)),
    ("matmul_2d_1d", np.matmul, (3, 4), (4,)),
    ("matmul_1d_1d", np.matmul, (4,), (4,)),
    ("matmul_batched_broadcast", np.matmul, (2, 1, 3, 4), (5, 4, 2)),
    ("matmul_1d_batched", np.matmul, (4,), (2, 4, 3)),
    ("matmul_operator", lambda a, b: a @ b, (2, 3, 4), (4, 2)),
    ("dot_nd", np.dot, (2, 3, 4), (5, 4, 2)),
    ("dot_scalar", np.dot, (), (3,)),
    ("einsum_explicit", lambda a, b: np.einsum("ij,jk->ik", a, b), (3, 4), (4, 2)),
    ("einsum_implicit", lambda a, b: np.einsum("ij,kj", a, b), (3, 4), (2, 4)),
    ("einsum_ellipsis", lambda a, b: np.einsum("...ij,...kj->...ik", a, b), (2, 3, 4), (2, 5, 4)),
    ("einsum_outer", lambda a, b: np.einsum("i,j->ij", a, b), (3,), (4,)),
    ("outer", np.outer, (3,), (4,)),
    ("multiply_broadcast", np.multiply, (3, 1), (1, 4)),
]


@pytest.mark.parametrize(("op", "sa", "sb"), [b[1:] for b in BILINEAR],
                         ids=[b[0] for b in BILINEAR])
def test_bilinear_products_follow_the_product_rule(op, sa, sb):
    """For bilinear op, d op(a, b) along (da, db) is op(da, b) + op(a, db); value unchanged."""
    a, b, da, db = _r(*sa), _r(*sb), _r(*sa), _r(*sb)
    na = a.size

    def f(z):
        return op(z[:na].reshape(sa), z[na:].reshape(sb))

    z = np.concatenate([a.ravel(), b.ravel()])
    dz = np.concatenate([da.ravel(), db.ravel()])
    expected = op(da, b) + op(a, db)
    np.testing.assert_allclose(dual_jvp(f, z, dz), expected, rtol=1e-12, atol=1e-12)
    out = f(DualArray(z, dz[:, None]))
    np.testing.assert_allclose(out.value, op(a, b), rtol=1e-13, atol=1e-13)


# ---- array outputs ------------------------------------------------------------------------------
A_VEC = _r(3, 4)
ARRAY_OUTPUTS = [
    ("exp_of_matvec", lambda x: np.exp(A_VEC @ x), (4,), (3,),
     lambda x, c: A_VEC.T @ (c * np.exp(A_VEC @ x))),
    ("row_softmax", lambda X: np.exp(X) / np.exp(X).sum(axis=1, keepdims=True), (2, 3), (2, 3),
     lambda X, c: _softmax(X) * (c - np.sum(_softmax(X) * c, axis=1, keepdims=True))),
    ("outer_with_itself", lambda x: np.outer(x, x), (3,), (3, 3), lambda x, c: (c + c.T) @ x),
]


@pytest.mark.parametrize(("f", "sx", "sy", "vjp"), [a[1:] for a in ARRAY_OUTPUTS],
                         ids=[a[0] for a in ARRAY_OUTPUTS])
def test_array_output_gives_gradient_of_cotangent_contraction(f, sx, sy, vjp):
    """With a cotangent c, the result is the gradient of sum(c * f(x)) = J^T c."""
    x, c = _r(*sx), _r(*sy)
    np.testing.assert_allclose(dual_gradient(f, x, c), vjp(x, c), rtol=1e-12, atol=1e-12)


def test_array_output_without_cotangent_is_refused():
    """A non-scalar output has no gradient until a cotangent says how to reduce it."""
    with pytest.raises(ValueError, match=r"shape \(3,\).*cotangent"):
        dual_gradient(lambda x: np.exp(A_VEC @ x), _r(4))


@pytest.mark.parametrize("bad", [(4,), (3, 1), ()])
def test_cotangent_of_wrong_shape_names_both_shapes(bad):
    """The error says which shape was given and which the output has."""
    with pytest.raises(ValueError, match=rf"{re.escape(str(bad))}.*\(3,\)"):
        dual_gradient(lambda x: np.exp(A_VEC @ x), _r(4), np.ones(bad))


def test_scalar_output_accepts_a_scalar_cotangent():
    """A 0-d cotangent scales the gradient of a scalar output."""
    x = _r(4)
    np.testing.assert_allclose(dual_gradient(lambda x: np.sum(x**2), x, np.float64(-2.0)), -4 * x)


# ---- zero gradients and bad outputs -------------------------------------------------------------
ZERO_CASES = [
    ("plain_float_ignoring_input", lambda x: 3.0),
    ("plain_array_ignoring_input_with_cotangent", lambda x: np.ones(2)),
    ("x_minus_x", lambda x: np.sum(x - x)),
    ("zeros_like_constant", lambda x: np.sum(np.zeros_like(x) + 1.0)),
    ("piecewise_constant", lambda x: np.sum(np.floor(x) + np.sign(x))),
]


@pytest.mark.parametrize("f", [z[1] for z in ZERO_CASES], ids=[z[0] for z in ZERO_CASES])
def test_output_independent_of_input_has_exactly_zero_gradient(f):
    """No dependence on x: the gradient is all zeros, of x's shape."""
    x = _away_from(_r(2, 3), (-1.0, 0.0, 1.0))
    cot = np.array([1.0, 2.0]) if np.ndim(f(x)) else None
    g = dual_gradient(f, x, cot)
    assert g.shape == x.shape
    np.testing.assert_array_equal(g, np.zeros_like(x))


@pytest.mark.parametrize("bad", [None, "loss", (1.0, 2.0), True, 1j])
def test_output_that_is_not_a_real_array_is_refused(bad):
    """Returning something that is neither a DualArray nor a real constant is a TypeError."""
    with pytest.raises(TypeError, match="expected a DualArray"):
        dual_gradient(lambda x: bad, _r(3))


# ---- chunking -----------------------------------------------------------------------------------
CHUNKED = [c for c in CASES if c[0] in {"polynomial", "softmax_cross_entropy", "layer_norm",
                                        "matmul_chain_wrt_W", "einsum_attention_scores"}]


@pytest.mark.parametrize("chunk", [1, 4, 7])
@pytest.mark.parametrize(("f", "x"), [(c[1], c[3]) for c in CHUNKED], ids=[c[0] for c in CHUNKED])
def test_chunking_gives_the_same_gradient_to_round_off(f, x, chunk):
    """The chunk width changes only the memory layout of the tangents, so results agree to a
    few ulps of the largest entry. (Not bit for bit: numpy's pairwise summation and BLAS
    blocking choose their summation order from the layout, which depends on the chunk width.)"""
    whole = dual_gradient(f, x, chunk=x.size)
    np.testing.assert_allclose(dual_gradient(f, x, chunk=chunk), whole,
                               rtol=0, atol=8 * np.finfo(float).eps * np.abs(whole).max())


@pytest.mark.parametrize("chunk", [1, 2, 5])
def test_chunking_is_bit_identical_for_elementwise_functions(chunk):
    """Without reductions over the input's axes, each direction's arithmetic is identical."""
    def f(x):
        return np.tanh(np.exp(x) * x) / (1 + x**2)

    x = _r(6)
    c = np.eye(6)[2]  # picks one output, so the contraction adds exact zeros only
    np.testing.assert_array_equal(dual_gradient(f, x, c, chunk=chunk),
                                  dual_gradient(f, x, c, chunk=6))


def test_chunking_covers_every_entry_of_a_large_input():
    """With N > chunk, every entry is seeded exactly once (default chunk of 256)."""
    x = np.linspace(-1, 1, 600)
    np.testing.assert_allclose(dual_gradient(lambda x: np.sum(np.sin(x)), x), np.cos(x))


@pytest.mark.parametrize("chunk", [0, -3, 2.5, True])
def test_chunk_must_be_a_positive_integer(chunk):
    """A chunk that is not a positive integer is refused."""
    with pytest.raises(ValueError, match="chunk"):
        dual_gradient(lambda x: np.sum(x), _r(3), chunk=chunk)


# ---- never silently wrong: unsupported operations raise -----------------------------------------
UNSUPPORTED = [
    ("sort", lambda x: np.sum(np.sort(x)), "numpy.sort"),
    ("cumprod", lambda x: np.sum(np.cumprod(x)), "numpy.cumprod"),
    ("remainder_operator", lambda x: np.sum(x % 2.0), "numpy.remainder"),
    ("inv", lambda x: np.sum(np.linalg.inv(x.reshape(2, 2))), "inv"),
    ("ufunc_accumulate", lambda x: np.sum(np.add.accumulate(x)), "numpy.add.accumulate"),
    ("ufunc_outer", lambda x: np.sum(np.multiply.outer(x, x)), "numpy.multiply.outer"),
    ("float", lambda x: float(np.sum(x)), "float"),
    ("math_exp", lambda x: math.exp(np.sum(x)), "float"),
    ("asarray", lambda x: np.sum(np.asarray(x)), "numpy array"),
    ("setitem_into_ndarray", lambda x: np.add(np.zeros(4), x, out=np.zeros(4)), "out="),
    ("inplace_into_ndarray", lambda x: _iadd_plain(x), "out="),
    ("astype_float32", lambda x: np.sum(x.astype(np.float32)), "float32"),
    ("item", lambda x: np.sum(x).item(), "item"),
    ("index_with_dual", lambda x: x[x[0]], "index"),
    ("norm_ord_1", lambda x: np.linalg.norm(x, ord=1), "ord=1"),
    ("sum_with_where", lambda x: np.sum(x, where=np.array([True, False, True, True])), "where"),
]


def _iadd_plain(x):
    acc = np.zeros(4)
    acc += x
    return acc


@pytest.mark.parametrize(("f", "match"), [u[1:] for u in UNSUPPORTED],
                         ids=[u[0] for u in UNSUPPORTED])
def test_unsupported_operation_raises_type_error_naming_it(f, match):
    """An operation without a derivative rule raises instead of dropping the tangent."""
    with pytest.raises(TypeError, match=match):
        dual_gradient(f, np.array([0.5, 1.5, 2.5, 3.5]))


# ---- the user's data ----------------------------------------------------------------------------
def _writes_into_input(x):
    x[0] = 0.0
    x *= 2.0
    return np.sum(x**2)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_input_array_is_not_mutated(dtype):
    """Even a function that writes into its argument leaves the caller's array untouched."""
    x = np.array([1.0, 2.0, 3.0], dtype=dtype)
    before = x.copy()
    g = dual_gradient(_writes_into_input, x)
    dual_jvp(_writes_into_input, x, np.ones(3))
    np.testing.assert_array_equal(x, before)
    assert x.dtype == dtype
    np.testing.assert_allclose(g, [0.0, 8 * 2.0, 8 * 3.0])  # d/dx sum((2x)^2) = 8x, x0 cut off


# ---- kinks: the symmetric subgradient, which is what a central difference sees ------------------
KINKS = [
    ("relu_at_zero", lambda x: np.sum(np.maximum(x, 0.0)), [0.0], [0.5]),
    ("min_at_tie", lambda x: np.sum(np.minimum(x, 1.0)), [1.0], [0.5]),
    ("abs_at_zero", lambda x: np.sum(np.abs(x)), [0.0], [0.0]),
    ("max_reduction_tie_split", lambda x: np.max(x), [1.0, 3.0, 3.0], [0.0, 0.5, 0.5]),
    ("clip_at_lower_bound", lambda x: np.sum(np.clip(x, -1.0, 1.0)), [-1.0, 0.0], [0.5, 1.0]),
]


@pytest.mark.parametrize(("f", "x", "expected"), [k[1:] for k in KINKS], ids=[k[0] for k in KINKS])
def test_kinks_use_the_symmetric_subgradient(f, x, expected):
    """At a tie the tangent splits evenly, matching the central difference at that point."""
    x = np.array(x)
    g = dual_gradient(f, x)
    np.testing.assert_array_equal(g, expected)
    h = 1e-3
    central = [(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size)]
    np.testing.assert_allclose(g, central, atol=1e-9)


# ---- DualArray as an array ----------------------------------------------------------------------
def test_comparisons_return_plain_bool_arrays_on_values():
    """Comparisons have no derivative: they return ndarray[bool] computed on the values."""
    d = DualArray(np.array([1.0, 2.0, 3.0]), np.eye(3))
    for result, expected in [(d > 2, [False, False, True]), (d <= 2, [True, True, False]),
                             (d == 2, [False, True, False]), (np.isfinite(d), [True] * 3),
                             (d > 2.0, [False, False, True])]:
        assert type(result) is np.ndarray and result.dtype == bool
        np.testing.assert_array_equal(result, expected)


def test_array_attributes_follow_the_value():
    """shape, ndim, size, len and iteration describe the value, not the tangent."""
    d = DualArray(np.zeros((2, 3)), np.zeros((2, 3, 5)))
    assert (d.shape, d.ndim, d.size, len(d), d.n_tangents) == ((2, 3), 2, 6, 2, 5)
    assert (np.shape(d), np.ndim(d), d.T.shape) == ((2, 3), 2, (3, 2))
    assert [row.shape for row in d] == [(3,), (3,)]
    assert np.squeeze(DualArray(np.zeros((1, 3)), np.zeros((1, 3, 1)))).tangent.shape == (3, 1)


@pytest.mark.parametrize(("value", "tangent"), [((2, 3), (2, 3)), ((2, 3), (3, 2, 1)),
                                                ((), ()), ((2,), (2, 1, 1))])
def test_tangent_must_be_value_shape_plus_one_axis(value, tangent):
    """The constructor refuses a tangent that is not shape S + (K,)."""
    with pytest.raises(ValueError, match="tangent shape"):
        DualArray(np.zeros(value), np.zeros(tangent))


def test_mixing_different_tangent_counts_is_refused():
    """Two DualArrays with different K come from different seeds: combining them is an error."""
    a = DualArray(np.ones(2), np.ones((2, 1)))
    b = DualArray(np.ones(2), np.ones((2, 3)))
    with pytest.raises(ValueError, match="different numbers of tangents"):
        a + b


def test_direction_of_wrong_shape_is_refused():
    """dual_jvp needs a direction of the input's shape."""
    with pytest.raises(ValueError, match=r"\(3,\).*\(2,\)"):
        dual_jvp(lambda x: np.sum(x), np.ones(2), np.ones(3))


def test_sanity_cross_check_against_central_differences():
    """Loose agreement with a plain central difference (sanity only: not the truth here)."""
    x = _r(3, 4)

    def f(X):
        return np.sum(np.tanh(X @ XROW.T) ** 2) + np.std(X)

    h = 1e-5
    fd = np.array([(f(x + h * e.reshape(x.shape)) - f(x - h * e.reshape(x.shape))) / (2 * h)
                   for e in np.eye(x.size)]).reshape(x.shape)
    np.testing.assert_allclose(dual_gradient(f, x), fd, rtol=1e-6, atol=1e-8)
