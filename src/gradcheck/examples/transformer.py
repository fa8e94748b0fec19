"""A tiny pre-LN transformer language model in numpy, with a hand-written backward.

This is an example subject for gradcheck. Its gradient comes from code
written by hand (``_transformer_backward.py``), not from autograd, so it can
be wrong in realistic ways. Two such ways can be switched on through
``mutation`` (see :data:`MUTATIONS`).

Model: token and position embeddings; ``num_layers`` pre-LN blocks, each
with causal multi-head attention (including a key bias) and a feed-forward
layer with tanh-approximated GELU, both with residual connections; a final
layer norm; an untied output projection ``head``; mean next-token
cross-entropy.

The forward pass does not depend on the precision of its inputs. It only
uses numpy arithmetic, reductions and indexing. Its constants are Python
floats and are part of the model's definition. The only transcendental
functions it calls are numpy's exp, tanh and log. So :func:`loss` runs,
unmodified, on gradcheck's arbitrary-precision object arrays
(``gradcheck.mp.to_mp``), which is how the referee computes exact derivatives.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._transformer_backward import (
    BlockCache,
    LayerNormCache,
    ModelCache,
    merge_heads,
    model_backward,
    split_heads,
)

Params = dict[str, np.ndarray]

MUTATIONS: tuple[str, ...] = ("wq_line", "block_return")
"""Deliberate backward bugs accepted by :func:`loss_and_grads`. Both sit in the last block.

The default config has two blocks, so the last block is ``b1``.

``"wq_line"``
    One line is wrong: the gradient of ``b1.wq`` is computed transposed.
    This is shape-compatible because ``wq`` is square. Only ``b1.wq``
    disagrees with central differences. A reader should conclude: look at
    the line that fills that one tensor.

``"block_return"``
    The value that block 1's backward returns leaves out the attention skip
    connection's term. This value is the gradient at block 0's output.
    Block 1's own grads are filled before the return, so they stay right.
    Every tensor whose gradient is computed afterwards is wrong: block 0's
    tensors and both embedding tables. The exception is ``b0.bk``, whose
    true gradient is 0 whatever flows into it. A reader should conclude: go
    through the names in backward order (head, lnf, b1, b0, embeddings),
    find the boundary between the last passing name and the first failing
    one, and look at what crosses it, here block 1's return value.
"""

LN_EPS = 1e-5
# sqrt(2/pi) rounded to a double. The rounded value defines this model's GELU,
# so evaluating at higher precision computes the same function more accurately.
GELU_C = 0.7978845608028654
GELU_K = 0.044715


@dataclass(frozen=True)
class TransformerConfig:
    """Sizes of the model. The defaults are tiny, so every entry can be checked.

    :func:`init_params` creates float64 parameters.
    """

    vocab_size: int = 7
    context_len: int = 8
    emb_dim: int = 4
    num_heads: int = 2
    ff_dim: int = 8
    num_layers: int = 2

    def __post_init__(self) -> None:
        for field_name in ("vocab_size", "context_len", "emb_dim", "num_heads", "ff_dim"):
            if getattr(self, field_name) < 1:
                raise ValueError(f"{field_name} must be at least 1")
        if self.num_layers < 0:
            raise ValueError("num_layers must be non-negative")
        if self.emb_dim % self.num_heads:
            raise ValueError("emb_dim must be divisible by num_heads")

    @property
    def head_dim(self) -> int:
        """Width of one attention head."""
        return self.emb_dim // self.num_heads


def param_shapes(cfg: TransformerConfig) -> dict[str, tuple[int, ...]]:
    """Parameter names and shapes, listed in forward order."""
    d, f = cfg.emb_dim, cfg.ff_dim
    shapes: dict[str, tuple[int, ...]] = {
        "tok_emb": (cfg.vocab_size, d),
        "pos_emb": (cfg.context_len, d),
    }
    for layer in range(cfg.num_layers):
        p = f"b{layer}."
        shapes.update({
            p + "ln1_g": (d,), p + "ln1_b": (d,),
            p + "wq": (d, d), p + "bq": (d,),
            p + "wk": (d, d), p + "bk": (d,),
            p + "wv": (d, d), p + "bv": (d,),
            p + "wo": (d, d), p + "bo": (d,),
            p + "ln2_g": (d,), p + "ln2_b": (d,),
            p + "w1": (d, f), p + "b1": (f,),
            p + "w2": (f, d), p + "b2": (d,),
        })
    shapes.update({"lnf_g": (d,), "lnf_b": (d,), "head": (d, cfg.vocab_size)})
    return shapes


def init_params(cfg: TransformerConfig, rng: np.random.Generator) -> Params:
    """Small random float64 parameters, in the order of :func:`param_shapes`.

    Biases are nonzero and gains are not 1. Zero biases or unit gains would
    make some gradients structured (for example, equal to another tensor's),
    and that could hide a bug.
    """
    params: Params = {}
    for name, shape in param_shapes(cfg).items():
        noise = rng.standard_normal(shape)
        if len(shape) == 2:
            # Scale by 1/sqrt(rows) so activations stay O(1) and GELU and
            # softmax do not saturate. Saturated regions have tiny gradients.
            params[name] = noise / np.sqrt(shape[0])
        elif name.endswith("_g"):
            params[name] = 1.0 + 0.2 * noise
        else:
            params[name] = 0.2 * noise
    return params


def make_problem(
    seed: int = 0, cfg: TransformerConfig | None = None, seq_len: int = 5
) -> tuple[Params, np.ndarray, np.ndarray, TransformerConfig]:
    """A ready-to-check problem: ``(params, ids, targets, cfg)``, drawn from one seed."""
    cfg = TransformerConfig() if cfg is None else cfg
    if not 1 <= seq_len <= cfg.context_len:
        raise ValueError(f"seq_len must be in 1..{cfg.context_len}, got {seq_len}")
    rng = np.random.default_rng(seed)
    params = init_params(cfg, rng)
    ids = rng.integers(cfg.vocab_size, size=seq_len)
    targets = rng.integers(cfg.vocab_size, size=seq_len)
    return params, ids, targets, cfg


def _elementwise(func: str, x: np.ndarray) -> np.ndarray:
    """``np.exp``/``np.tanh``/``np.log`` by name: plain numpy, so the same forward runs on
    float64 arrays and, unmodified, on gradcheck's arbitrary-precision object arrays
    (``gradcheck.mp.to_mp``), whose elements implement the methods numpy's object loops call."""
    return getattr(np, func)(x)


def _layer_norm(
    x: np.ndarray, gain: np.ndarray, bias: np.ndarray
) -> tuple[np.ndarray, LayerNormCache]:
    """Normalise each row of ``x`` to mean 0 and variance 1, then scale and shift."""
    centred = x - x.mean(axis=-1, keepdims=True)
    var = (centred * centred).mean(axis=-1, keepdims=True)
    rstd = (var + LN_EPS) ** -0.5
    xhat = centred * rstd
    return xhat * gain + bias, LayerNormCache(xhat=xhat, rstd=rstd)


def _gelu(u: np.ndarray, keep: bool) -> tuple[np.ndarray, Any]:
    """tanh-approximated GELU ``0.5 u (1 + tanh(c (u + k u^3)))`` and, if ``keep``, its
    derivative (computed here because the backward does not know the GELU constants)."""
    t = _elementwise("tanh", GELU_C * (u + GELU_K * (u * u * u)))
    act = 0.5 * u * (1.0 + t)
    if not keep:
        return act, None
    act_grad = 0.5 * (1.0 + t) + 0.5 * u * (1.0 - t * t) * GELU_C * (
        1.0 + 3.0 * GELU_K * (u * u)
    )
    return act, act_grad


def _causal_softmax(scores: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, where query ``i`` may only attend to keys ``j <= i``."""
    seq_len = scores.shape[-1]
    allowed = np.tril(np.ones((seq_len, seq_len), dtype=bool))
    # Fill the future slots with column 0, which every query may attend to.
    # The row max is then taken over allowed slots only, and no -inf is
    # needed (object arrays of Python floats would need care with it).
    filled = np.where(allowed, scores, scores[..., :1])
    e = _elementwise("exp", filled - filled.max(axis=-1, keepdims=True))
    e = np.where(allowed, e, np.zeros_like(e))
    return e / e.sum(axis=-1, keepdims=True)


def _block_forward(
    x: np.ndarray, params: Params, prefix: str, cfg: TransformerConfig, keep: bool
) -> tuple[np.ndarray, BlockCache | None]:
    """One pre-LN block: ``x + attn(ln1(x))``, then ``+ ff(ln2(.))``."""

    def p(name: str) -> np.ndarray:
        return params[f"{prefix}.{name}"]

    h1, ln1 = _layer_norm(x, p("ln1_g"), p("ln1_b"))
    q = split_heads(h1 @ p("wq") + p("bq"), cfg.num_heads)
    k = split_heads(h1 @ p("wk") + p("bk"), cfg.num_heads)
    v = split_heads(h1 @ p("wv") + p("bv"), cfg.num_heads)
    scale = cfg.head_dim ** -0.5
    probs = _causal_softmax((q @ k.transpose(0, 2, 1)) * scale)
    o = merge_heads(probs @ v)
    x2 = x + (o @ p("wo") + p("bo"))

    h2, ln2 = _layer_norm(x2, p("ln2_g"), p("ln2_b"))
    u = h2 @ p("w1") + p("b1")
    act, act_grad = _gelu(u, keep)
    out = x2 + (act @ p("w2") + p("b2"))
    if not keep:
        return out, None
    cache = BlockCache(
        ln1=ln1, h1=h1, q=q, k=k, v=v, probs=probs, o=o, scale=scale,
        ln2=ln2, h2=h2, act=act, act_grad=act_grad,
    )
    return out, cache


def _forward(
    params: Params, ids: Any, targets: Any, cfg: TransformerConfig, keep: bool
) -> tuple[Any, ModelCache | None]:
    """Mean cross-entropy and, if ``keep``, the cache for the backward pass."""
    ids, targets = np.asarray(ids), np.asarray(targets)
    if ids.ndim != 1 or ids.shape != targets.shape:
        raise ValueError("ids and targets must be 1-D arrays of the same length")
    seq_len = ids.shape[0]
    if not 1 <= seq_len <= cfg.context_len:
        raise ValueError(f"sequence length must be in 1..{cfg.context_len}, got {seq_len}")

    x = params["tok_emb"][ids] + params["pos_emb"][:seq_len]
    blocks: list[BlockCache] = []
    for layer in range(cfg.num_layers):
        x, block_cache = _block_forward(x, params, f"b{layer}", cfg, keep)
        if block_cache is not None:
            blocks.append(block_cache)

    hf, lnf = _layer_norm(x, params["lnf_g"], params["lnf_b"])
    logits = hf @ params["head"]
    shifted = logits - logits.max(axis=-1, keepdims=True)  # stable log-sum-exp
    e = _elementwise("exp", shifted)
    denom = e.sum(axis=-1, keepdims=True)
    log_p_target = shifted[np.arange(seq_len), targets] - _elementwise("log", denom[:, 0])
    value = -log_p_target.mean()
    if not keep:
        return value, None
    return value, ModelCache(
        ids=ids, targets=targets, blocks=blocks, lnf=lnf, hf=hf, probs=e / denom
    )


def _as_scalar(value: Any) -> Any:
    """Return numpy floating scalars as Python floats and keep other number types."""
    return float(value) if isinstance(value, np.floating) else value


def loss(params: Params, ids: Any, targets: Any, cfg: TransformerConfig) -> Any:
    """Mean next-token cross-entropy (forward only).

    This is a Python float for float64 parameters. For object-array
    parameters it is a number of the elements' type (an ``mpmath.mpf`` once
    exp, tanh or log has been applied).
    """
    value, _ = _forward(params, ids, targets, cfg, keep=False)
    return _as_scalar(value)


def loss_and_grads(
    params: Params,
    ids: Any,
    targets: Any,
    cfg: TransformerConfig,
    mutation: str | None = None,
) -> tuple[Any, Params]:
    """Loss and the hand-written gradient of every parameter.

    The gradient dict has the keys, order and shapes of ``params``.
    ``params`` is not modified. ``mutation`` is ``None`` (correct gradients)
    or one of :data:`MUTATIONS`. A mutation changes the gradients only,
    never the loss.
    """
    if mutation is not None and mutation not in MUTATIONS:
        raise ValueError(f"unknown mutation {mutation!r}; expected None or one of {MUTATIONS}")
    value, cache = _forward(params, ids, targets, cfg, keep=True)
    assert cache is not None  # keep=True always returns a cache
    return _as_scalar(value), model_backward(params, cache, mutation)
