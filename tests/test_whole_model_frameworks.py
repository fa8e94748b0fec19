"""check_params on models as PyTorch and JAX users hold them (issue 28): a torch.nn.Module
with a loss, a dict of tensors, a jax pytree. The claim is the framework's own gradient
(custom autograd.Function and custom_vjp included); the model is left exactly as it was
(parameters, mode, requires_grad flags, buffers); float32 models are checked in float64
where the loss is precision-generic, and say so. Skipped where torch or jax is absent."""
from __future__ import annotations

import numpy as np
import optional_deps
import pytest
from optional_deps import needs

import gradcheck
from gradcheck import Verdict
from gradcheck.examples import gpt

pytestmark = needs("torch")  # the fixture's need() is not seen by conftest's reading of test bodies

TINY = gpt.GPTConfig(vocab_size=11, context_len=8, emb_dim=8, num_heads=2, num_layers=2)


@pytest.fixture(scope="module")
def torch():
    torch = optional_deps.need("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: a second thread only adds contention
    yield torch
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def problem():
    return gpt.make_problem(TINY, seq_len=6, seed=1)


@pytest.mark.parametrize("bug", [None, *gpt.BUGS])
def test_a_torch_model_gives_the_numpy_models_verdicts(torch, problem, bug):
    """The PyTorch twin, checked as it is (check_params(model, loss_fn)): the failing names
    are the numpy model's with its hand-written backward, and the bug's own."""
    from gradcheck.examples.gpt_torch import GPT

    params, ids, targets = problem
    model = GPT.from_numpy(TINY, params, bug=bug)
    r = gradcheck.check_params(model, lambda m: m.loss(torch.from_numpy(ids), torch.from_numpy(targets)),
                               screen=True, engine="serial", adjudicate=False)
    grads = gpt.loss_and_grads(params, ids, targets, TINY, bug=bug)[1]
    n = gradcheck.check_params(lambda p: gpt.loss(p, ids, targets, TINY), params, grads, screen=True,
                               engine="serial", adjudicate=False)
    assert r.failing == n.failing and sorted(r.failing) == sorted(gpt.bug_site(TINY, bug) if bug else [])
    assert list(r.reports) == [name for name, _ in model.named_parameters()]
    if bug == "entry":
        assert r[gpt.bug_site(TINY, bug)[0]].entries(Verdict.MISMATCH) == [gpt.planted_index(TINY)]


class _Net:
    """A module with a batch norm (train mode: it updates running stats in forward), a frozen
    parameter and a custom autograd.Function whose backward can be wrong."""

    @staticmethod
    def build(torch, wrong: bool = False):
        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, w):
                ctx.save_for_backward(x, w)
                return x * w

            @staticmethod
            def backward(ctx, g):
                x, w = ctx.saved_tensors
                gw = (g * x).sum(0)
                if wrong:
                    gw = gw.clone()
                    gw[2] = gw[2] * (1 + 1e-4)
                return g * w, gw

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                gen = torch.Generator().manual_seed(0)
                self.lin = torch.nn.Linear(6, 5, dtype=torch.float64)
                self.norm = torch.nn.BatchNorm1d(5, dtype=torch.float64)
                self.scale = torch.nn.Parameter(torch.rand(5, generator=gen, dtype=torch.float64) + 0.5)
                self.frozen = torch.nn.Parameter(torch.ones(5, dtype=torch.float64), requires_grad=False)

            def forward(self, x):
                return Scale.apply(torch.tanh(self.norm(self.lin(x))), self.scale) * self.frozen

        return Net()


def test_a_torch_model_is_left_as_it_was(torch):
    """Parameters bit for bit, train mode, requires_grad flags and the batch norm's running
    statistics are unchanged; the frozen parameter is not checked (and said so); the batch
    form check_params(model, loss_fn, (inputs, target)) is loss_fn(model(inputs), target)."""
    gen = torch.Generator().manual_seed(1)
    x, y = torch.randn(7, 6, generator=gen, dtype=torch.float64), torch.randn(7, 5, generator=gen, dtype=torch.float64)
    model = _Net.build(torch)
    model.train()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    flags = {n: p.requires_grad for n, p in model.named_parameters()}
    r = gradcheck.check_params(model, torch.nn.functional.mse_loss, (x, y), screen=True, engine="serial")
    assert r.passed, str(r)
    assert "frozen" not in r.reports and any("do not require grad" in note for note in r.notes)
    assert model.training and all(m.training for m in model.modules())
    assert {n: p.requires_grad for n, p in model.named_parameters()} == flags
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())
    assert not any("changed" in note for note in r.notes)


def test_a_wrong_custom_function_backward_is_found_at_its_entry(torch):
    """A custom autograd.Function whose backward is off by 1e-4 at one entry of a
    parameter's gradient: found at (name, index), entry-wise and screened."""
    gen = torch.Generator().manual_seed(1)
    x, y = torch.randn(7, 6, generator=gen, dtype=torch.float64), torch.randn(7, 5, generator=gen, dtype=torch.float64)
    model = _Net.build(torch, wrong=True)
    for screen in (False, True):
        r = gradcheck.check_params(model, torch.nn.functional.mse_loss, (x, y), screen=screen, engine="serial")
        assert r.failing == ["scale"] and r["scale"].entries(Verdict.MISMATCH) == [(2,)]


def test_a_float32_model_is_checked_in_float64_when_its_loss_is_precision_generic(torch, problem):
    """A float32 model whose loss runs in float64 given float64 parameters (the batch cast
    too) is checked in float64, and the report says so; one that cannot (a float32 constant
    inside) is checked in float32, and says that."""
    from gradcheck.examples.gpt_torch import GPT

    params, ids, targets = problem
    model = GPT.from_numpy(TINY, params).float()
    r = gradcheck.check_params(model, torch.nn.functional.cross_entropy,
                               (torch.from_numpy(ids), torch.from_numpy(targets)), screen=True, engine="serial")
    assert r.passed and r.reports["wte.weight"].dtype == "float64"
    assert any("precision-generic" in note and "checked in float64" in note for note in r.notes)
    assert next(model.parameters()).dtype == torch.float32
    fixed = torch.ones(11, dtype=torch.float32)

    def stubborn(m):  # adds a float32 tensor to float64 logits: not the same function in float64
        logits = m(torch.from_numpy(ids))
        return torch.nn.functional.cross_entropy(logits.float() + fixed, torch.from_numpy(targets))

    r32 = gradcheck.check_params(model, stubborn, screen=True, engine="serial")
    assert r32.reports["wte.weight"].dtype == "float32" and r32.failing == []
    assert any("not precision-generic" in note for note in r32.notes)


def test_a_dict_of_tensors_with_autograds_gradient(torch):
    """check_params(loss, {name: tensor}): the loss gets tensors, autograd gives the claim."""
    gen = torch.Generator().manual_seed(2)
    a = torch.randn(6, 4, generator=gen, dtype=torch.float64)
    tensors = {"w": torch.randn(4, 3, generator=gen, dtype=torch.float64, requires_grad=True),
               "b": torch.randn(3, generator=gen, dtype=torch.float64)}
    before = {k: v.detach().clone() for k, v in tensors.items()}
    r = gradcheck.check_params(lambda p: torch.tanh(a @ p["w"] + p["b"]).sum(), tensors, screen=True)
    assert r.passed and r["w"].counts[Verdict.SCREENED] == 12
    assert all(torch.equal(before[k], tensors[k]) for k in tensors) and tensors["w"].grad is None


@needs("jax")
def test_a_jax_pytree_with_a_wrong_custom_vjp():
    """A jax pytree (nested dicts of float32 arrays), checked in float64 in a scoped x64:
    jax.grad is the claim; a custom_vjp rule off by 1e-4 fails exactly the names behind it,
    named by their path; the global x64 flag is unchanged."""
    jax = optional_deps.need("jax")
    jnp = jax.numpy
    rng = np.random.default_rng(0)
    x_in, target = rng.standard_normal((16, 8)), rng.standard_normal((16, 4))
    params = {"l1": {"w": jnp.asarray(rng.standard_normal((8, 16)) / 3, dtype=jnp.float32),
                     "b": jnp.full(16, 0.1, dtype=jnp.float32)},
              "l2": {"w": jnp.asarray(rng.standard_normal((16, 4)) / 4, dtype=jnp.float32),
                     "b": jnp.full(4, -0.2, dtype=jnp.float32)}}

    @jax.custom_vjp
    def act(z):
        return jnp.tanh(z)

    act.defvjp(lambda z: (jnp.tanh(z), jnp.tanh(z)), lambda y, g: (g * (1 - y * y) * (1 + 1e-4),))

    def loss(p, f=jnp.tanh):
        h = f(x_in @ p["l1"]["w"] + p["l1"]["b"])
        return jnp.sum((h @ p["l2"]["w"] + p["l2"]["b"] - target) ** 2)

    x64 = bool(jax.config.jax_enable_x64)
    ok = gradcheck.check_params(loss, params, screen=True)
    bad = gradcheck.check_params(lambda p: loss(p, act), params, screen=True)
    assert ok.passed and sorted(ok.reports) == ["l1.b", "l1.w", "l2.b", "l2.w"]
    assert sorted(bad.failing) == ["l1.b", "l1.w"] and bool(jax.config.jax_enable_x64) == x64
    assert any("checked in float64" in note for note in ok.notes)


def test_screen_points_a_torch_module_to_check_params(torch):
    """screen(model, ...) names the check_params call that screens every parameter at once."""
    net = torch.nn.Linear(3, 2).double()
    with pytest.raises(TypeError, match=r"check_params\(model, loss_fn, batch, screen=True\)"):
        gradcheck.screen(net, torch.nn.functional.mse_loss)
