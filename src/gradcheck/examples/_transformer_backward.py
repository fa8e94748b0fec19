"""Hand-written backward pass for :mod:`gradcheck.examples.transformer`.

The forward pass in ``transformer.py`` records everything this module needs
in the cache dataclasses defined here. This includes the local derivative of
GELU, because only the forward knows the GELU constants. The backward is
therefore plain arithmetic (``@``, ``*``, ``.sum``, ``.mean``) and never
re-evaluates a transcendental function.

Two deliberate bugs can be switched on here (see ``MUTATIONS`` in
``transformer.py``). Both are confined to the last block's backward, so a
checker has a known right answer to find.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

Params = dict[str, np.ndarray]


@dataclass(frozen=True)
class LayerNormCache:
    """What layer-norm backward needs: the normalised input and ``1/std``."""

    xhat: np.ndarray  # (T, D)
    rstd: np.ndarray  # (T, 1)


@dataclass(frozen=True)
class BlockCache:
    """Intermediates of one transformer block, kept by the forward pass."""

    ln1: LayerNormCache
    h1: np.ndarray  # (T, D) layer-normed input to attention
    q: np.ndarray  # (H, T, hd)
    k: np.ndarray  # (H, T, hd)
    v: np.ndarray  # (H, T, hd)
    probs: np.ndarray  # (H, T, T) causal attention weights, 0 above the diagonal
    o: np.ndarray  # (T, D) heads merged, before the output projection
    scale: float  # score scale 1/sqrt(hd)
    ln2: LayerNormCache
    h2: np.ndarray  # (T, D) layer-normed input to the feed-forward
    act: np.ndarray  # (T, F) GELU output
    act_grad: np.ndarray  # (T, F) dGELU/du at the pre-activation


@dataclass(frozen=True)
class ModelCache:
    """Intermediates of the whole model, kept by the forward pass."""

    ids: np.ndarray  # (T,) token ids
    targets: np.ndarray  # (T,) next-token targets
    blocks: list[BlockCache]
    lnf: LayerNormCache
    hf: np.ndarray  # (T, D) final layer-norm output
    probs: np.ndarray  # (T, V) softmax of the logits


def split_heads(x: np.ndarray, num_heads: int) -> np.ndarray:
    """Reshape ``(T, D)`` to ``(H, T, D // H)``; used by forward and backward."""
    seq_len, dim = x.shape
    return x.reshape(seq_len, num_heads, dim // num_heads).transpose(1, 0, 2)


def merge_heads(x: np.ndarray) -> np.ndarray:
    """Inverse of :func:`split_heads`: ``(H, T, hd)`` back to ``(T, H * hd)``."""
    num_heads, seq_len, head_dim = x.shape
    return x.transpose(1, 0, 2).reshape(seq_len, num_heads * head_dim)


def layer_norm_backward(
    dy: np.ndarray, cache: LayerNormCache, gain: np.ndarray, *, mean_term: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Backward of ``y = xhat * gain + bias``, where ``xhat`` normalises over the last axis.

    Returns ``(dx, dgain, dbias)``. ``mean_term=False`` is a deliberate bug (used by
    :mod:`gradcheck.examples.gpt`): the path through the row mean is left out of ``dx``.
    """
    dgain = (dy * cache.xhat).sum(axis=0)
    dbias = dy.sum(axis=0)
    dxhat = dy * gain
    # x reaches xhat directly and through the row mean and row variance.
    # Those two paths remove dxhat's mean and its component along xhat.
    # The variance term includes LN_EPS, which sits inside rstd.
    centred = dxhat - dxhat.mean(axis=-1, keepdims=True) if mean_term else dxhat
    dx = cache.rstd * (centred - cache.xhat * (dxhat * cache.xhat).mean(axis=-1, keepdims=True))
    return dx, dgain, dbias


def _feed_forward_backward(
    dout: np.ndarray, params: Params, prefix: str, cache: BlockCache, grads: Params
) -> np.ndarray:
    """Fill the feed-forward grads and return the gradient at its input ``h2``."""
    w1, w2 = params[f"{prefix}.w1"], params[f"{prefix}.w2"]
    grads[f"{prefix}.b2"] = dout.sum(axis=0)
    grads[f"{prefix}.w2"] = cache.act.T @ dout
    du = (dout @ w2.T) * cache.act_grad
    grads[f"{prefix}.w1"] = cache.h2.T @ du
    grads[f"{prefix}.b1"] = du.sum(axis=0)
    return du @ w1.T


def _attention_backward(
    dattn: np.ndarray,
    params: Params,
    prefix: str,
    cache: BlockCache,
    grads: Params,
    wrong_wq: bool,
) -> np.ndarray:
    """Fill the attention grads and return the gradient at its input ``h1``.

    With ``wrong_wq`` set, the ``wq`` gradient is computed transposed. Because
    ``wq`` is square the shape still fits, so only a value check can notice.
    The gradient passed back to ``h1`` is untouched.
    """
    wq, wk, wv, wo = (params[f"{prefix}.{n}"] for n in ("wq", "wk", "wv", "wo"))
    num_heads = cache.q.shape[0]
    grads[f"{prefix}.bo"] = dattn.sum(axis=0)
    grads[f"{prefix}.wo"] = cache.o.T @ dattn
    do = split_heads(dattn @ wo.T, num_heads)
    dprobs = do @ cache.v.transpose(0, 2, 1)
    dv = cache.probs.transpose(0, 2, 1) @ do
    # Softmax backward, one row at a time. Masked (future) slots have
    # probability 0, so their score gradient is 0 with no explicit mask.
    # Each row of dscores sums to 0, which is why the key bias gets no gradient.
    dscores = cache.probs * (dprobs - (dprobs * cache.probs).sum(axis=-1, keepdims=True))
    dq = merge_heads(dscores @ cache.k) * cache.scale
    dk = merge_heads(dscores.transpose(0, 2, 1) @ cache.q) * cache.scale
    dv = merge_heads(dv)

    h1 = cache.h1
    grads[f"{prefix}.wq"] = (dq.T @ h1) if wrong_wq else (h1.T @ dq)
    grads[f"{prefix}.bq"] = dq.sum(axis=0)
    grads[f"{prefix}.wk"] = h1.T @ dk
    grads[f"{prefix}.bk"] = dk.sum(axis=0)
    grads[f"{prefix}.wv"] = h1.T @ dv
    grads[f"{prefix}.bv"] = dv.sum(axis=0)
    return dq @ wq.T + dk @ wk.T + dv @ wv.T


def block_backward(
    dout: np.ndarray,
    params: Params,
    prefix: str,
    cache: BlockCache,
    grads: Params,
    mutation: str | None = None,
) -> np.ndarray:
    """Fill block ``prefix``'s grads and return the gradient at the block's input.

    The block computes ``x2 = x + attn(ln1(x))`` and then
    ``out = x2 + ff(ln2(x2))``. ``mutation`` is ``None``, ``"wq_line"`` or
    ``"block_return"``. The caller passes a mutation to one block only.
    """
    dh2 = _feed_forward_backward(dout, params, prefix, cache, grads)
    dx2_norm, dg2, db2 = layer_norm_backward(dh2, cache.ln2, params[f"{prefix}.ln2_g"])
    grads[f"{prefix}.ln2_g"], grads[f"{prefix}.ln2_b"] = dg2, db2
    dx2 = dout + dx2_norm  # the skip connection passes dout through unchanged

    dh1 = _attention_backward(
        dx2, params, prefix, cache, grads, wrong_wq=(mutation == "wq_line")
    )
    dx_norm, dg1, db1 = layer_norm_backward(dh1, cache.ln1, params[f"{prefix}.ln1_g"])
    grads[f"{prefix}.ln1_g"], grads[f"{prefix}.ln1_b"] = dg1, db1

    if mutation == "block_return":
        # Deliberate bug: the attention skip connection's term is left out.
        # Every grad of this block is already filled, so they stay right.
        return dx_norm
    return dx2 + dx_norm


def model_backward(params: Params, cache: ModelCache, mutation: str | None = None) -> Params:
    """Gradient of the mean cross-entropy with respect to every parameter.

    The returned dict has the same keys, order and shapes as ``params``.
    ``mutation`` is applied to the last block only. That is block 1 in the
    default two-layer configuration.
    """
    grads: Params = {name: np.zeros_like(p) for name, p in params.items()}
    seq_len = cache.ids.shape[0]
    positions = np.arange(seq_len)

    # d(mean cross-entropy)/d(logits) = (softmax - one_hot) / T
    dlogits = cache.probs.copy()
    dlogits[positions, cache.targets] -= 1
    dlogits = dlogits / seq_len
    grads["head"] = cache.hf.T @ dlogits
    dx, grads["lnf_g"], grads["lnf_b"] = layer_norm_backward(
        dlogits @ params["head"].T, cache.lnf, params["lnf_g"]
    )

    last = len(cache.blocks) - 1
    for layer in range(last, -1, -1):
        dx = block_backward(
            dx,
            params,
            f"b{layer}",
            cache.blocks[layer],
            grads,
            mutation if layer == last else None,
        )

    # The same token id can appear twice, so accumulate instead of assigning.
    np.add.at(grads["tok_emb"], cache.ids, dx)
    grads["pos_emb"][:seq_len] = dx  # rows past the sequence length stay 0
    return grads
