"""Tests for the example transformer and its hand-written backward.

The backward is checked against a central-difference loop written here, not
against gradcheck's own checker, so that these tests stay independent of
the library they supply subjects to.
"""
from __future__ import annotations

from collections.abc import Callable

import mpmath
import numpy as np
import pytest

from gradcheck.examples.transformer import (
    MUTATIONS,
    TransformerConfig,
    init_params,
    loss,
    loss_and_grads,
    make_problem,
    param_shapes,
)

Params = dict[str, np.ndarray]

REL_TOL = 1e-6
# Below this, both numbers are round-off or exact zeros, and their ratio
# carries no information.
NEGLIGIBLE = 1e-9


def _central_difference(f: Callable[[Params], float], params: Params, name: str) -> np.ndarray:
    """Fourth-order central difference of ``f`` at every entry of ``params[name]``.

    The fourth-order stencil with h = 1e-3 keeps both truncation and
    round-off near 1e-12 here. A plain two-point difference would need about
    1e-6 relative tolerance on its own errors alone.
    """
    h = 1e-3
    table = params[name]
    out = np.zeros_like(table)
    for idx in np.ndindex(*table.shape):
        old = table[idx]
        values = []
        for step in (-2, -1, 1, 2):
            table[idx] = old + step * h
            values.append(f(params))
        table[idx] = old
        out[idx] = (values[0] - 8 * values[1] + 8 * values[2] - values[3]) / (12 * h)
    return out


def _assert_backward_matches_differences(
    params: Params, ids: np.ndarray, targets: np.ndarray, cfg: TransformerConfig
) -> None:
    """Compare every gradient entry with a central difference.

    Entries where both numbers are negligible are allowed only for key
    biases (true gradient 0) and for embedding rows that the sequence never
    reads. Those rows must be exactly such entries.
    """
    _, grads = loss_and_grads(params, ids, targets, cfg)
    work = {name: p.copy() for name, p in params.items()}
    unused = {name: np.zeros(params[name].shape, dtype=bool) for name in ("tok_emb", "pos_emb")}
    unused["tok_emb"][np.setdiff1d(np.arange(cfg.vocab_size), ids)] = True
    unused["pos_emb"][len(ids):] = True
    for name in params:
        numeric = _central_difference(lambda p: loss(p, ids, targets, cfg), work, name)
        claimed = grads[name]
        both_small = (np.abs(claimed) < NEGLIGIBLE) & (np.abs(numeric) < NEGLIGIBLE)
        scale = np.maximum(np.abs(claimed), np.abs(numeric))
        bad = (np.abs(claimed - numeric) > REL_TOL * scale) & ~both_small
        assert not bad.any(), (name, np.argwhere(bad), claimed[bad], numeric[bad])
        if not name.endswith(".bk"):
            # Elsewhere only embedding rows the sequence never reads may be 0.
            np.testing.assert_array_equal(both_small, unused.get(name, False), err_msg=name)


def _differing_names(a: Params, b: Params) -> set[str]:
    """Names whose gradients differ by more than round-off."""
    return {name for name in a if not np.allclose(a[name], b[name], rtol=1e-9, atol=1e-12)}


def test_parameter_names_and_shapes_follow_forward_order() -> None:
    """Names come out embeddings first, then per block, then final norm and head."""
    cfg = TransformerConfig()
    params = init_params(cfg, np.random.default_rng(0))
    block = ["ln1_g", "ln1_b", "wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo",
             "ln2_g", "ln2_b", "w1", "b1", "w2", "b2"]
    expected = ["tok_emb", "pos_emb"]
    expected += [f"b{layer}.{n}" for layer in range(2) for n in block]
    expected += ["lnf_g", "lnf_b", "head"]
    assert list(params) == expected
    assert {name: p.shape for name, p in params.items()} == param_shapes(cfg)
    assert params["tok_emb"].shape == (7, 4) and params["pos_emb"].shape == (8, 4)
    assert params["b0.w1"].shape == (4, 8) and params["b0.w2"].shape == (8, 4)
    assert params["head"].shape == (4, 7)
    assert all(p.dtype == np.float64 for p in params.values())


def test_init_gives_nonzero_biases_and_non_unit_gains() -> None:
    """No bias is exactly 0 and no gain exactly 1, so no gradient is trivially structured."""
    params = init_params(TransformerConfig(), np.random.default_rng(0))
    for name, p in params.items():
        if name.endswith("_g"):
            assert np.all(p != 1.0), name
        else:
            assert np.all(p != 0.0), name


def test_every_gradient_entry_matches_central_difference() -> None:
    """The hand-written backward agrees with central differences at every entry."""
    params, ids, targets, cfg = make_problem(seed=0)
    _assert_backward_matches_differences(params, ids, targets, cfg)


def test_gradients_match_on_a_different_shape_with_full_context() -> None:
    """Three layers, one head, a repeated token and a full-length sequence also check out."""
    cfg = TransformerConfig(vocab_size=5, context_len=6, emb_dim=3, num_heads=1,
                            ff_dim=5, num_layers=3)
    params, _, targets, _ = make_problem(seed=3, cfg=cfg, seq_len=6)
    ids = np.array([1, 4, 1, 0, 1, 2])  # repeated ids exercise the accumulation into tok_emb
    _assert_backward_matches_differences(params, ids, targets, cfg)


def test_key_bias_gradient_is_zero_to_round_off() -> None:
    """The key bias shifts whole score rows, which softmax ignores, so its gradient is 0."""
    params, ids, targets, cfg = make_problem(seed=0)
    _, grads = loss_and_grads(params, ids, targets, cfg)
    for layer in range(cfg.num_layers):
        assert np.abs(grads[f"b{layer}.bk"]).max() < 1e-12


def test_loss_and_grads_returns_the_forward_loss() -> None:
    """The loss returned next to the gradients is the one ``loss`` computes."""
    params, ids, targets, cfg = make_problem(seed=1)
    value, _ = loss_and_grads(params, ids, targets, cfg)
    assert isinstance(value, float)
    assert value == loss(params, ids, targets, cfg)
    assert 0.0 < value < 10.0


def test_wq_line_mutation_changes_only_last_block_wq() -> None:
    """A wrong line for one tensor changes that tensor's gradient and nothing else."""
    params, ids, targets, cfg = make_problem(seed=0)
    _, right = loss_and_grads(params, ids, targets, cfg)
    _, wrong = loss_and_grads(params, ids, targets, cfg, mutation="wq_line")
    assert _differing_names(right, wrong) == {"b1.wq"}
    # Visible to a checker: an O(1) relative change, not round-off.
    diff = np.abs(right["b1.wq"] - wrong["b1.wq"]).max()
    assert diff > 1e-2 * np.abs(right["b1.wq"]).max()


def test_block_return_mutation_changes_lower_block_and_embeddings() -> None:
    """A wrong value returned by block 1 spoils what is computed after it, not block 1.

    ``b0.bk`` is the exception: its true gradient is 0 whatever flows into
    it, so it remains round-off.
    """
    params, ids, targets, cfg = make_problem(seed=0)
    _, right = loss_and_grads(params, ids, targets, cfg)
    _, wrong = loss_and_grads(params, ids, targets, cfg, mutation="block_return")
    expected = {name for name in params if name.startswith("b0.")} - {"b0.bk"}
    expected |= {"tok_emb", "pos_emb"}
    assert _differing_names(right, wrong) == expected
    assert np.abs(wrong["b0.bk"]).max() < 1e-12
    for name in expected:
        diff = np.abs(right[name] - wrong[name]).max()
        assert diff > 1e-2 * np.abs(right[name]).max(), name


@pytest.mark.parametrize("mutation", MUTATIONS)
def test_mutations_leave_the_loss_unchanged(mutation: str) -> None:
    """Mutations are backward bugs: the forward loss is the same as without them."""
    params, ids, targets, cfg = make_problem(seed=0)
    value, _ = loss_and_grads(params, ids, targets, cfg, mutation=mutation)
    assert value == loss(params, ids, targets, cfg)


def test_unknown_mutation_is_rejected() -> None:
    """A misspelt mutation raises instead of silently giving correct gradients."""
    params, ids, targets, cfg = make_problem(seed=0)
    with pytest.raises(ValueError, match="unknown mutation"):
        loss_and_grads(params, ids, targets, cfg, mutation="wq-line")


def test_loss_runs_unmodified_at_high_precision() -> None:
    """The forward is plain numpy: it runs on gradcheck.mp object arrays, and 30- and
    60-digit results agree far beyond float64 while matching the float64 loss."""
    from gradcheck.mp import MPFloat, evaluate, to_mp

    params, ids, targets, cfg = make_problem(seed=2)
    names = list(params)
    flat = np.concatenate([params[n].ravel() for n in names])

    def loss_flat(v):
        out, k = {}, 0
        for n in names:
            out[n] = v[k:k + params[n].size].reshape(params[n].shape)
            k += params[n].size
        return loss(out, ids, targets, cfg)

    lo = evaluate(loss_flat, to_mp(flat), dps=30)
    hi = evaluate(loss_flat, to_mp(flat), dps=60)
    assert isinstance(lo, MPFloat)
    assert abs(lo.value - hi.value) < mpmath.mpf(10) ** -28
    assert abs(float(hi.value) - loss(params, ids, targets, cfg)) < 1e-12


def test_loss_and_grads_does_not_modify_params() -> None:
    """Computing gradients, correct or mutated, leaves every parameter as it was."""
    params, ids, targets, cfg = make_problem(seed=0)
    before = {name: p.copy() for name, p in params.items()}
    for mutation in (None, *MUTATIONS):
        loss_and_grads(params, ids, targets, cfg, mutation=mutation)
    assert list(params) == list(before)
    for name, p in params.items():
        np.testing.assert_array_equal(p, before[name])


def test_grads_have_the_names_order_and_shapes_of_params() -> None:
    """The grads dict can be zipped with params by name."""
    params, ids, targets, cfg = make_problem(seed=0)
    _, grads = loss_and_grads(params, ids, targets, cfg)
    assert list(grads) == list(params)
    assert all(grads[n].shape == p.shape for n, p in params.items())


def test_make_problem_is_reproducible_per_seed() -> None:
    """The same seed gives the same problem, and another seed a different one."""
    a_params, a_ids, a_targets, cfg = make_problem(seed=5)
    b_params, b_ids, b_targets, _ = make_problem(seed=5)
    c_params, *_ = make_problem(seed=6)
    assert cfg == TransformerConfig()
    assert a_ids.shape == a_targets.shape == (5,)
    np.testing.assert_array_equal(a_ids, b_ids)
    np.testing.assert_array_equal(a_targets, b_targets)
    for name in a_params:
        np.testing.assert_array_equal(a_params[name], b_params[name])
    assert not np.array_equal(a_params["head"], c_params["head"])


def test_sequence_longer_than_context_is_rejected() -> None:
    """Positions past the context length have no embedding, so they are refused."""
    with pytest.raises(ValueError, match="seq_len"):
        make_problem(seq_len=9)
    params, _, _, cfg = make_problem()
    ids = np.zeros(9, dtype=int)
    with pytest.raises(ValueError, match="sequence length"):
        loss(params, ids, ids, cfg)


def test_config_requires_heads_to_divide_embedding() -> None:
    """An embedding width that does not split evenly across heads is refused."""
    with pytest.raises(ValueError, match="divisible"):
        TransformerConfig(emb_dim=5, num_heads=2)
