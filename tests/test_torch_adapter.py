"""The PyTorch adapter: autograd's gradient (custom Functions included) checked entry by
entry, plus the contract checks torch's own gradcheck makes (reentrancy, zero cotangent)."""
from __future__ import annotations

import pytest
from optional_deps import need

torch = need("torch")

import gradcheck  # noqa: E402
from gradcheck import FunctionError, GradientAssertionError, Verdict, check  # noqa: E402
from gradcheck.backends import resolve  # noqa: E402

X = torch.tensor(
    [[0.3, -1.2, 2.0, 1.1], [0.9, 0.5, -0.7, -1.6], [1.3, -0.4, 0.8, 2.5]], dtype=torch.float64
)


def sin_times_x(planted=None):
    """A custom Function for x*sin(x); ``planted=(index, factor)`` corrupts its backward."""

    class SinTimesX(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin() * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            d = x.cos() * x + x.sin()
            if planted is not None:
                ix, factor = planted
                d[ix] = d[ix] * factor
            return g * d

    return SinTimesX.apply


def softmax_function(bug_row=None):
    """A custom softmax over the last axis; ``bug_row`` drops the ``- y * sum(g*y)``
    term of its backward in that row (a classic hand-written softmax bug)."""

    class Softmax(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = torch.softmax(x, -1)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            inner = (g * y).sum(-1, keepdim=True)
            if bug_row is not None:
                inner = inner.clone()
                inner[bug_row] = 0.0
            return y * (g - inner)

    return Softmax.apply


CORRECT = [
    ("elementwise", lambda t: (torch.tanh(t) * t.flip(0)).sum()),
    ("softmax-array-output", lambda t: torch.softmax(t, -1)),
    ("matmul-self", lambda t: t @ t.T),
    ("custom-function", sin_times_x()),
    ("custom-softmax", softmax_function()),
    ("logsumexp", lambda t: torch.logsumexp(t, dim=1)),
]


@pytest.mark.parametrize("f", [c[1] for c in CORRECT], ids=[c[0] for c in CORRECT])
def test_correct_autograd_gradient_passes(f):
    """Autograd's gradient of correct functions passes at every entry (float64)."""
    r = check(f, X)
    assert r.passed, str(r)
    assert r.counts[Verdict.PASS] == X.numel(), str(r)


BUGGY = [
    # (name, f, entries that must be flagged)
    ("custom-fn-rel-1e-3", sin_times_x(((1, 2), 1.001)), {(1, 2)}),
    ("custom-fn-sign-flip", sin_times_x(((0, 0), -1.0)), {(0, 0)}),
    ("custom-softmax-row-1", softmax_function(bug_row=1), {(1, j) for j in range(4)}),
    ("detach-drops-a-term", lambda t: (t.detach() ** 2 * t).sum(), {(i, j) for i in range(3) for j in range(4)}),
]


@pytest.mark.parametrize("f, expected", [c[1:] for c in BUGGY], ids=[c[0] for c in BUGGY])
def test_buggy_backward_caught_at_exactly_its_entries(f, expected):
    """A wrong backward is flagged MISMATCH at exactly the entries it corrupts."""
    r = check(f, X)
    assert set(r.entries(Verdict.MISMATCH)) == expected, str(r)
    assert not r.passed


def test_negative_control_passes_for_torch():
    """The control (corrupted gradient flagged, correct one passed) holds through torch."""
    gradcheck.assert_detects_wrong_gradient("torch")


def test_backend_is_chosen_from_the_tensor_type():
    """A torch tensor selects the torch backend without backend= or grad=."""
    assert resolve(None, X).name == "torch"
    assert check(lambda t: (t**3).sum(), X).passed


def test_float32_function_passes_with_the_float32_preset():
    """A float32 tensor with a precision-generic f is differenced on its float64 upcast and
    torch's float32 gradient judged in float32 ulps (its rounding measured against torch's
    float64 gradient); a correct gradient passes, one 1e-5 off at one entry does not."""
    r = check(lambda t: (torch.sin(t) * t).sum(), X.float())
    assert r.dtype == "float32" and any("precision-generic f" in n for n in r.notes), r.notes
    assert r.passed and r.counts[Verdict.PASS] >= X.numel() - 2, str(r)
    off = (torch.sin(X.float()) + X.float() * torch.cos(X.float())).numpy()
    off[1, 2] *= 1 + 1e-5
    bad = check(lambda t: (torch.sin(t) * t).sum(), X.float(), off)
    assert bad.entries(Verdict.MISMATCH) == [(1, 2)], str(bad)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precisions_run_and_stay_honest(dtype):
    """float16/bfloat16: f runs in that dtype, correct gradients get no MISMATCH (entries
    below the same-precision noise are UNCHECKED, not PASS), a sign flip is still caught."""
    good = check(sin_times_x(), X.to(dtype))
    assert good.dtype == str(dtype).replace("torch.", "")
    assert good.entries([Verdict.MISMATCH, Verdict.NONFINITE]) == [], str(good)
    bad = check(sin_times_x(((1, 2), -1.0)), X.to(dtype))  # a large entry: above the noise
    assert bad.entries(Verdict.MISMATCH) == [(1, 2)], str(bad)


def test_non_reentrant_backward_is_a_failed_assertion_with_the_report():
    """A backward that accumulates into state it keeps (a second backward through the same
    graph gives another result) fails the check, naming the entries; the report is attached."""

    class Accumulating(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.buffer = torch.zeros_like(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            ctx.buffer += 2 * x * g  # should have been a fresh tensor
            return ctx.buffer.clone()

    with pytest.raises(GradientAssertionError, match="not reentrant") as err:
        check(Accumulating.apply, X)
    report = err.value.report
    assert report.passed  # the values of the first backward are right ...
    assert any("not reentrant" in n for n in report.notes)  # ... the contract is not


def test_zero_output_gradient_must_give_zero_input_gradient():
    """A backward that adds a term independent of the output gradient (a regularizer
    bolted into backward) breaks 'zero in, zero out' and is reported as such."""

    class Regularized(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.cos() + 1e-3 * x

    with pytest.raises(GradientAssertionError, match="zero output gradient") as err:
        check(Regularized.apply, X)
    assert len(err.value.report.entries(Verdict.MISMATCH)) == X.numel()


def test_backward_returning_the_wrong_shape_names_both_shapes():
    """A custom backward whose gradient has the wrong shape is reported with both shapes."""

    class WrongShape(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return (2 * g)[:, :2]

    with pytest.raises(FunctionError, match=r"\[3, 2\].*\[3, 4\]"):
        check(WrongShape.apply, X)


def test_output_without_grad_claims_zero_and_says_so():
    """An output autograd cannot trace back to x is a claimed gradient of zero: checked
    against the numeric side (a constant gives UNCHECKED everywhere), with a note."""
    r = check(lambda t: torch.tensor(1.5, dtype=torch.float64), X)
    assert r.counts[Verdict.UNCHECKED] == X.numel()
    assert any("does not require grad" in n for n in r.notes)
    hidden = check(lambda t: torch.tensor(float((t.detach() ** 2).sum()), dtype=torch.float64), X)
    assert len(hidden.entries(Verdict.MISMATCH)) == X.numel()


def test_users_tensor_is_untouched():
    """x keeps its values, its requires_grad and gets no .grad."""
    x = X.clone().requires_grad_(True)
    before = x.detach().clone()
    check(sin_times_x(), x)
    assert torch.equal(x.detach(), before) and x.requires_grad and x.grad is None


@pytest.mark.parametrize(
    "returned, error, message",
    [
        (lambda t: float(t.detach().sum()), TypeError, "can only differentiate a torch.Tensor"),
        # refused at the first evaluation, so it comes wrapped as the function's error
        (lambda t: (t.sum(), t), FunctionError, "one output at a time"),
    ],
    ids=["python-float", "tuple"],
)
def test_outputs_autograd_cannot_use_get_a_clear_error(returned, error, message):
    """f must return one tensor; anything else is refused with what to do."""
    with pytest.raises(error, match=message):
        check(returned, X)


def test_multiple_inputs_get_one_report_each():
    """check(f, (a, b)) checks each input with the others fixed; a bug in the gradient of
    b only fails report[1], at exactly its entries."""

    class Mul(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a @ b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            gb = a.T @ g
            gb[0, 1] = gb[0, 1] * 1.01
            return g @ b.T, gb

    a, b = X[:2], X.T.clone()
    r = check(Mul.apply, (a, b))
    assert isinstance(r, gradcheck.MultiReport) and len(r) == 2
    assert r[0].passed and r[0].shape == (2, 4)
    assert r[1].entries(Verdict.MISMATCH) == [(0, 1)]
    with pytest.raises(GradientAssertionError, match=r"inputs \[1\]"):
        r.assert_pass()
    assert check(lambda a, b: torch.tanh(a @ b), (a, b)).passed


def test_multiple_inputs_a_callable_claim_is_probed_at_the_door_with_tensors():
    """check(f, (a, b), grad) with torch inputs: the door calls the claim once with tensors (the
    claim below uses torch operations only), so a right claim passes and a short gradient for b
    is refused naming both shapes before any input is differenced."""
    a, b = X[0].clone(), X[1, :3].clone()

    def f(a, b):
        return torch.sin(a).sum() * b.square().sum()

    def good(a, b):
        return torch.cos(a) * b.square().sum(), 2 * b * torch.sin(a).sum()

    assert check(f, (a, b), good).passed
    with pytest.raises(gradcheck.ShapeMismatchError, match=r"^the claimed gradient grad\(x1, x2\)\[1\], the "
                       r"gradient for x2, has shape \(2,\), but it must have shape \(3,\)$"):
        check(f, (a, b), lambda a, b: (good(a, b)[0], good(a, b)[1][:2]))


def test_user_supplied_torch_gradient_is_checked_instead_of_autograd():
    """With grad= a hand-written torch gradient is what gets checked."""
    f = lambda t: (t**3).sum()  # noqa: E731
    assert check(f, X, grad=lambda t: 3 * t**2).passed
    r = check(f, X, grad=lambda t: 3 * t**2 + (t > 2.4))
    assert r.entries(Verdict.MISMATCH) == [(2, 3)]
