"""A GPT-2-style decoder in numpy, with a hand-written backward and planted bugs.

An example subject for checking a whole model: token and position embeddings, pre-LayerNorm
blocks (causal multi-head attention with a fused ``c_attn`` projection, a tanh-GELU MLP,
residual connections), a final LayerNorm, an unembedding tied to the token embedding, and
mean next-token cross-entropy. Sized by :class:`GPTConfig` (``GPTConfig.gpt2_small()`` is
GPT-2 small: 124 M parameters); the parameter names and shapes are those of the PyTorch twin
(:mod:`gradcheck.examples.gpt_torch`), which are GPT-2's (``wte.weight``,
``h.0.attn.c_attn.weight``, ...), so one dict of arrays fits both.

The gradient is written by hand (:mod:`._gpt_backward`), so it can be wrong in the ways
people write backward passes wrong; :data:`BUGS` plants one at a time. The layer norm,
causal softmax, GELU and head reshapes are those of :mod:`.transformer`.

>>> cfg = GPTConfig(vocab_size=11, context_len=8, emb_dim=8, num_heads=2, num_layers=2)
>>> params, ids, targets = make_problem(cfg, seq_len=5, seed=0)
>>> len(params), sum(p.size for p in params.values()) == cfg.num_params()
(28, True)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._gpt_backward import model_backward
from ._transformer_backward import BlockCache, ModelCache, merge_heads, split_heads
from .transformer import _causal_softmax, _elementwise, _gelu, _layer_norm

Params = dict[str, np.ndarray]

BUGS: tuple[str, ...] = ("entry", "ln_mean", "softmax_transposed", "tied", "bias_axis")
"""Planted backward bugs (:func:`loss_and_grads`, and the PyTorch twin's ``bug=``). Each sits in
block ``m = num_layers // 2`` (:func:`bug_site` says where and which names it corrupts):

``"entry"``
    One entry of ``h.m.mlp.c_fc.weight`` off by 1e-4 relative (:data:`ENTRY_ERROR`), at
    :func:`planted_index`.
``"ln_mean"``
    ``h.m.ln_2``'s backward drops the path through the row mean: its gain and bias gradients
    stay right, the gradient it passes back is wrong, so every name before it in the forward
    (from ``h.m.attn.c_proj.bias`` back to the embeddings) fails.
``"softmax_transposed"``
    ``h.m``'s attention backward contracts the softmax Jacobian over the query axis instead of
    the key axis (the Jacobian of the transposed attention matrix): ``h.m.attn.c_attn``
    and every name before it fail.
``"tied"``
    The tied token embedding's gradient leaves out the unembedding's contribution: only
    ``wte.weight`` fails.
``"bias_axis"``
    ``h.m.mlp.c_proj.bias``'s gradient is summed over the feature axis (``keepdims``) instead
    of the token axis, and broadcasting fills every entry with that one total: only that name
    fails.
"""

#: The relative error of the ``"entry"`` bug.
ENTRY_ERROR = 1e-4
LN_EPS = 1e-5


@dataclass(frozen=True)
class GPTConfig:
    """Sizes of the model (the defaults are tiny: a test checks every entry)."""

    vocab_size: int = 32
    context_len: int = 16
    emb_dim: int = 16
    num_heads: int = 2
    num_layers: int = 2

    def __post_init__(self) -> None:
        for name in ("vocab_size", "context_len", "emb_dim", "num_heads", "num_layers"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.emb_dim % self.num_heads:
            raise ValueError(f"emb_dim ({self.emb_dim}) must be divisible by num_heads ({self.num_heads})")

    @classmethod
    def gpt2_small(cls) -> GPTConfig:
        """GPT-2 small: 12 layers, d = 768, 12 heads, vocabulary 50,257, context 1024."""
        return cls(vocab_size=50257, context_len=1024, emb_dim=768, num_heads=12, num_layers=12)

    @property
    def head_dim(self) -> int:
        return self.emb_dim // self.num_heads

    def num_params(self) -> int:
        return sum(int(np.prod(s)) for s in param_shapes(self).values())


def param_shapes(cfg: GPTConfig) -> dict[str, tuple[int, ...]]:
    """Parameter names and shapes in forward order (PyTorch's ``named_parameters`` order)."""
    d, v = cfg.emb_dim, cfg.vocab_size
    shapes: dict[str, tuple[int, ...]] = {"wte.weight": (v, d), "wpe.weight": (cfg.context_len, d)}
    for layer in range(cfg.num_layers):
        p = f"h.{layer}."
        shapes.update({
            p + "ln_1.weight": (d,), p + "ln_1.bias": (d,),
            p + "attn.c_attn.weight": (d, 3 * d), p + "attn.c_attn.bias": (3 * d,),
            p + "attn.c_proj.weight": (d, d), p + "attn.c_proj.bias": (d,),
            p + "ln_2.weight": (d,), p + "ln_2.bias": (d,),
            p + "mlp.c_fc.weight": (d, 4 * d), p + "mlp.c_fc.bias": (4 * d,),
            p + "mlp.c_proj.weight": (4 * d, d), p + "mlp.c_proj.bias": (d,),
        })
    shapes.update({"ln_f.weight": (d,), "ln_f.bias": (d,)})
    return shapes


def init_params(cfg: GPTConfig, rng: np.random.Generator) -> Params:
    """GPT-2's random initialisation (weights N(0, 0.02^2), residual projections scaled by
    1/sqrt(2 layers)), except that gains and biases are perturbed (gains 1 + N(0, 0.1^2),
    biases N(0, 0.02^2)): unit gains and zero biases make some gradients equal to others'
    and could hide a bug. float64."""
    params: Params = {}
    residual = 0.02 / np.sqrt(2 * cfg.num_layers)
    for name, shape in param_shapes(cfg).items():
        if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name == "ln_f.weight":
            params[name] = 1.0 + 0.1 * rng.standard_normal(shape)
        elif name.endswith("c_proj.weight"):
            params[name] = residual * rng.standard_normal(shape)
        else:
            params[name] = 0.02 * rng.standard_normal(shape)
    return params


def make_problem(cfg: GPTConfig | None = None, seq_len: int = 8, seed: int = 0
                 ) -> tuple[Params, np.ndarray, np.ndarray]:
    """``(params, ids, targets)`` drawn from one seed; ``targets`` are ``ids`` shifted by one
    (the next token), the last one drawn."""
    cfg = GPTConfig() if cfg is None else cfg
    if not 1 <= seq_len <= cfg.context_len:
        raise ValueError(f"seq_len must be in 1..{cfg.context_len}, got {seq_len}")
    rng = np.random.default_rng(seed)
    params = init_params(cfg, rng)
    tokens = rng.integers(cfg.vocab_size, size=seq_len + 1)
    return params, tokens[:-1], tokens[1:]


def bug_site(cfg: GPTConfig, bug: str) -> tuple[str, ...]:
    """The names a bug corrupts (those whose gradient is wrong), in forward order."""
    if bug not in BUGS:
        raise ValueError(f"unknown bug {bug!r}; expected one of {BUGS}")
    m = cfg.num_layers // 2
    names = list(param_shapes(cfg))
    if bug == "entry":
        return (f"h.{m}.mlp.c_fc.weight",)
    if bug == "tied":
        return ("wte.weight",)
    if bug == "bias_axis":
        return (f"h.{m}.mlp.c_proj.bias",)
    last = f"h.{m}.attn.c_proj.bias" if bug == "ln_mean" else f"h.{m}.attn.c_attn.bias"
    return tuple(names[: names.index(last) + 1])


def planted_index(cfg: GPTConfig) -> tuple[int, int]:
    """Where the ``"entry"`` bug sits in ``h.m.mlp.c_fc.weight`` (a fixed index)."""
    return (cfg.emb_dim // 3, (4 * cfg.emb_dim * 5) // 7)


def _block_forward(x: np.ndarray, params: Params, layer: int, cfg: GPTConfig,
                   keep: bool) -> tuple[np.ndarray, BlockCache | None]:
    """``x + attn(ln_1(x))``, then ``+ mlp(ln_2(.))``."""
    pre = f"h.{layer}."

    def p(name: str) -> np.ndarray:
        return params[pre + name]

    h1, ln1 = _layer_norm(x, p("ln_1.weight"), p("ln_1.bias"))
    qkv = h1 @ p("attn.c_attn.weight") + p("attn.c_attn.bias")
    d = cfg.emb_dim
    q, k, v = (split_heads(qkv[:, j * d:(j + 1) * d], cfg.num_heads) for j in range(3))
    scale = cfg.head_dim ** -0.5
    probs = _causal_softmax((q @ k.transpose(0, 2, 1)) * scale)
    o = merge_heads(probs @ v)
    x2 = x + (o @ p("attn.c_proj.weight") + p("attn.c_proj.bias"))
    h2, ln2 = _layer_norm(x2, p("ln_2.weight"), p("ln_2.bias"))
    u = h2 @ p("mlp.c_fc.weight") + p("mlp.c_fc.bias")
    act, act_grad = _gelu(u, keep)
    out = x2 + (act @ p("mlp.c_proj.weight") + p("mlp.c_proj.bias"))
    if not keep:
        return out, None
    return out, BlockCache(ln1=ln1, h1=h1, q=q, k=k, v=v, probs=probs, o=o, scale=scale, ln2=ln2, h2=h2,
                           act=act, act_grad=act_grad)


def _forward(params: Params, ids: Any, targets: Any, cfg: GPTConfig, keep: bool) -> tuple[Any, ModelCache | None]:
    ids, targets = np.asarray(ids), np.asarray(targets)
    if ids.ndim != 1 or ids.shape != targets.shape:
        raise ValueError(f"ids and targets must be 1-D of one length, got {ids.shape} and {targets.shape}")
    seq_len = ids.shape[0]
    if not 1 <= seq_len <= cfg.context_len:
        raise ValueError(f"the sequence length must be in 1..{cfg.context_len}, got {seq_len}")
    wte = params["wte.weight"]
    x = wte[ids] + params["wpe.weight"][:seq_len]
    blocks: list[BlockCache] = []
    for layer in range(cfg.num_layers):
        x, cache = _block_forward(x, params, layer, cfg, keep)
        if cache is not None:
            blocks.append(cache)
    hf, lnf = _layer_norm(x, params["ln_f.weight"], params["ln_f.bias"])
    logits = hf @ wte.T  # the unembedding is the token embedding (tied)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    e = _elementwise("exp", shifted)
    denom = e.sum(axis=-1, keepdims=True)
    value = -(shifted[np.arange(seq_len), targets] - _elementwise("log", denom[:, 0])).mean()
    if not keep:
        return value, None
    return value, ModelCache(ids=ids, targets=targets, blocks=blocks, lnf=lnf, hf=hf, probs=e / denom)


def loss(params: Params, ids: Any, targets: Any, cfg: GPTConfig) -> Any:
    """Mean next-token cross-entropy (forward only; a float for float64 parameters)."""
    value, _ = _forward(params, ids, targets, cfg, keep=False)
    return float(value) if isinstance(value, np.floating) else value


def loss_and_grads(params: Params, ids: Any, targets: Any, cfg: GPTConfig,
                   bug: str | None = None) -> tuple[float, Params]:
    """The loss and the hand-written gradient of every parameter (same keys and order as
    ``params``), with ``bug`` (one of :data:`BUGS`) planted, or none. ``params`` is not
    modified; a bug changes the gradients only."""
    if bug is not None and bug not in BUGS:
        raise ValueError(f"unknown bug {bug!r}; expected None or one of {BUGS}")
    value, cache = _forward(params, ids, targets, cfg, keep=True)
    assert cache is not None
    grads = model_backward(params, cache, cfg.num_layers // 2, bug)
    if bug == "entry":
        name = bug_site(cfg, bug)[0]
        grads[name][planted_index(cfg)] *= 1.0 + ENTRY_ERROR
    return float(value), grads
