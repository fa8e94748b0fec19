"""Hand-written backward pass of :mod:`gradcheck.examples.gpt`, with its planted bugs.

The forward records what this module needs in the caches of :mod:`._transformer_backward`
(the same layer norm, attention and GELU intermediates); the backward is plain arithmetic.
Each bug of ``gpt.BUGS`` that lives in the backward is switched on here, in block ``m`` only
(the ``"entry"`` bug is planted by ``gpt.loss_and_grads`` on the finished gradient).
"""
from __future__ import annotations

import numpy as np

from ._transformer_backward import BlockCache, ModelCache, layer_norm_backward, merge_heads, split_heads

Params = dict[str, np.ndarray]


def _softmax_backward(dprobs: np.ndarray, probs: np.ndarray, transposed: bool) -> np.ndarray:
    """The score gradient of a row softmax: ``P * (dP - rowsum(dP * P))``. With
    ``transposed`` (a bug) the sum runs over the query axis, as for the transposed matrix.
    Masked slots have probability 0, so their gradient is 0 either way."""
    axis = -2 if transposed else -1
    return probs * (dprobs - (dprobs * probs).sum(axis=axis, keepdims=True))


def _attention_backward(dattn: np.ndarray, params: Params, pre: str, cache: BlockCache, grads: Params,
                        transposed: bool) -> np.ndarray:
    """Fill the attention's gradients and return the gradient at its input ``h1``."""
    w_attn, w_proj = params[pre + "attn.c_attn.weight"], params[pre + "attn.c_proj.weight"]
    heads = cache.q.shape[0]
    grads[pre + "attn.c_proj.bias"] = dattn.sum(axis=0)
    grads[pre + "attn.c_proj.weight"] = cache.o.T @ dattn
    do = split_heads(dattn @ w_proj.T, heads)
    dprobs = do @ cache.v.transpose(0, 2, 1)
    dv = merge_heads(cache.probs.transpose(0, 2, 1) @ do)
    dscores = _softmax_backward(dprobs, cache.probs, transposed)
    dq = merge_heads(dscores @ cache.k) * cache.scale
    dk = merge_heads(dscores.transpose(0, 2, 1) @ cache.q) * cache.scale
    dqkv = np.concatenate([dq, dk, dv], axis=1)
    grads[pre + "attn.c_attn.weight"] = cache.h1.T @ dqkv
    grads[pre + "attn.c_attn.bias"] = dqkv.sum(axis=0)
    return dqkv @ w_attn.T


def _mlp_backward(dout: np.ndarray, params: Params, pre: str, cache: BlockCache, grads: Params,
                  bias_axis: bool) -> np.ndarray:
    """Fill the MLP's gradients and return the gradient at its input ``h2``. With
    ``bias_axis`` (a bug) the output bias's gradient is summed over the feature axis and
    broadcast into every entry."""
    if bias_axis:
        db = np.empty(dout.shape[1])
        db[...] = dout.sum(axis=-1, keepdims=True).sum(axis=0)  # (1,): broadcasting hides the shape
        grads[pre + "mlp.c_proj.bias"] = db
    else:
        grads[pre + "mlp.c_proj.bias"] = dout.sum(axis=0)
    grads[pre + "mlp.c_proj.weight"] = cache.act.T @ dout
    du = (dout @ params[pre + "mlp.c_proj.weight"].T) * cache.act_grad
    grads[pre + "mlp.c_fc.weight"] = cache.h2.T @ du
    grads[pre + "mlp.c_fc.bias"] = du.sum(axis=0)
    return du @ params[pre + "mlp.c_fc.weight"].T


def block_backward(dout: np.ndarray, params: Params, layer: int, cache: BlockCache, grads: Params,
                   bug: str | None) -> np.ndarray:
    """Fill block ``layer``'s gradients and return the gradient at its input; ``bug`` is the
    bug planted in this block (None in every other block)."""
    pre = f"h.{layer}."
    dh2 = _mlp_backward(dout, params, pre, cache, grads, bug == "bias_axis")
    dx2_norm, grads[pre + "ln_2.weight"], grads[pre + "ln_2.bias"] = layer_norm_backward(
        dh2, cache.ln2, params[pre + "ln_2.weight"], mean_term=bug != "ln_mean")
    dx2 = dout + dx2_norm
    dh1 = _attention_backward(dx2, params, pre, cache, grads, bug == "softmax_transposed")
    dx_norm, grads[pre + "ln_1.weight"], grads[pre + "ln_1.bias"] = layer_norm_backward(
        dh1, cache.ln1, params[pre + "ln_1.weight"])
    return dx2 + dx_norm


def model_backward(params: Params, cache: ModelCache, bug_layer: int, bug: str | None) -> Params:
    """Gradient of the mean cross-entropy at every parameter, keys in ``params``' order."""
    grads: Params = {}
    seq_len = cache.ids.shape[0]
    dlogits = cache.probs.copy()
    dlogits[np.arange(seq_len), cache.targets] -= 1.0
    dlogits /= seq_len
    wte = params["wte.weight"]
    unembed = dlogits.T @ cache.hf  # the unembedding's share of the tied embedding's gradient
    dx, grads["ln_f.weight"], grads["ln_f.bias"] = layer_norm_backward(dlogits @ wte, cache.lnf,
                                                                        params["ln_f.weight"])
    for layer in range(len(cache.blocks) - 1, -1, -1):
        dx = block_backward(dx, params, layer, cache.blocks[layer], grads, bug if layer == bug_layer else None)
    dwte = np.zeros_like(wte) if bug == "tied" else unembed
    np.add.at(dwte, cache.ids, dx)  # a token may repeat: accumulate
    grads["wte.weight"] = dwte
    dwpe = np.zeros_like(params["wpe.weight"])
    dwpe[:seq_len] = dx
    grads["wpe.weight"] = dwpe
    return {name: grads[name] for name in params}
