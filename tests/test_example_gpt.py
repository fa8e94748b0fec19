"""The GPT-2-style zoo model (gradcheck.examples.gpt and its PyTorch twin): the hand-written
backward against two independent oracles (dual numbers; torch autograd on the twin), and
each planted bug corrupting exactly the names it says, in both models alike. Nothing here
uses gradcheck's checker: the zoo supplies its subjects."""
from __future__ import annotations

import numpy as np
import optional_deps
import pytest

from gradcheck.dual import dual_gradient
from gradcheck.examples.gpt import (
    BUGS,
    ENTRY_ERROR,
    GPTConfig,
    bug_site,
    loss,
    loss_and_grads,
    make_problem,
    param_shapes,
    planted_index,
)

TINY = GPTConfig(vocab_size=11, context_len=8, emb_dim=8, num_heads=2, num_layers=2)
REL = 1e-10


@pytest.fixture(scope="module")
def tiny():
    params, ids, targets = make_problem(TINY, seq_len=6, seed=3)
    ids[2] = ids[4]  # a repeated token: the embedding's gradient accumulates
    return params, ids, targets


def _close(a: np.ndarray, b: np.ndarray, scale: np.ndarray | None = None) -> bool:
    """Equal to round-off of the larger of ``b`` and ``scale`` (a wrong gradient may be ~0)."""
    top = max(np.max(np.abs(b)), 0.0 if scale is None else np.max(np.abs(scale)))
    return bool(np.all(np.abs(a - b) <= REL * top + 1e-18))


def test_backward_matches_dual_numbers_at_every_entry(tiny):
    """Forward-mode dual numbers (exact derivatives, no step) agree with the hand-written
    gradient of every name, to round-off."""
    params, ids, targets = tiny
    _, grads = loss_and_grads(params, ids, targets, TINY)
    for name in params:
        exact = dual_gradient(lambda v, n=name: loss({**params, n: v}, ids, targets, TINY), params[name])
        assert _close(grads[name], exact), name


@pytest.mark.parametrize("bug", [None, *BUGS])
def test_torch_twin_has_the_same_loss_and_autograd_the_same_gradient(tiny, bug):
    """The PyTorch twin built from the same arrays: the same loss to round-off, and autograd
    (custom Functions included) gives the numpy backward's gradient, planted bug and all."""
    torch = optional_deps.need("torch")
    from gradcheck.examples.gpt_torch import GPT

    params, ids, targets = tiny
    value, grads = loss_and_grads(params, ids, targets, TINY, bug=bug)
    right = loss_and_grads(params, ids, targets, TINY)[1]
    model = GPT.from_numpy(TINY, params, bug=bug)
    out = model.loss(torch.from_numpy(ids), torch.from_numpy(targets))
    autograd = dict(zip([n for n, _ in model.named_parameters()], torch.autograd.grad(out, list(model.parameters()))))
    assert abs(out.item() - value) <= 1e-14 * abs(value)
    assert list(autograd) == list(params)
    for name in params:
        assert _close(grads[name], autograd[name].numpy(), right[name]), name


@pytest.mark.parametrize("bug", BUGS)
def test_each_bug_corrupts_exactly_the_names_it_names(tiny, bug):
    """A planted bug changes the gradient of the names ``bug_site`` lists and of no other
    (against the correct backward), each by more than round-off; the loss is unchanged."""
    params, ids, targets = tiny
    value, right = loss_and_grads(params, ids, targets, TINY)
    value_bug, wrong = loss_and_grads(params, ids, targets, TINY, bug=bug)
    changed = [n for n in params if not _close(wrong[n], right[n])]
    assert value_bug == value and changed == list(bug_site(TINY, bug))
    if bug == "entry":
        name, at = changed[0], planted_index(TINY)
        diff = np.flatnonzero(wrong[name] != right[name])
        assert diff.tolist() == [np.ravel_multi_index(at, params[name].shape)]
        assert wrong[name][at] == pytest.approx(right[name][at] * (1 + ENTRY_ERROR), rel=1e-15)


def test_gpt2_small_sizes():
    """GPTConfig.gpt2_small() has GPT-2 small's 148 names and 124,439,808 parameters."""
    cfg = GPTConfig.gpt2_small()
    assert len(param_shapes(cfg)) == 148 and cfg.num_params() == 124_439_808
