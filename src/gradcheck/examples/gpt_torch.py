"""The GPT-2-style decoder of :mod:`gradcheck.examples.gpt` as a ``torch.nn.Module``.

The same parameter names, shapes and arithmetic as the numpy model (GPT-2's names:
``wte.weight``, ``h.0.attn.c_attn.weight``, ...), differentiated by autograd. The planted bugs
of ``gpt.BUGS`` are the kinds people write in PyTorch: a custom ``torch.autograd.Function``
with a wrong backward (one entry, the layer norm's mean term, the softmax Jacobian, the bias's
axis) and a ``.detach()`` on the tied unembedding. Imports torch.

>>> import torch
>>> from gradcheck.examples.gpt import GPTConfig, make_problem
>>> cfg = GPTConfig(vocab_size=11, context_len=8, emb_dim=8, num_heads=2, num_layers=2)
>>> params, ids, targets = make_problem(cfg, seq_len=5)
>>> model = GPT.from_numpy(cfg, params)
>>> [n for n, _ in model.named_parameters()] == list(params)
True
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from torch import nn

from .gpt import BUGS, ENTRY_ERROR, GPTConfig, param_shapes, planted_index
from .transformer import GELU_C, GELU_K, LN_EPS


class Conv1D(nn.Module):
    """GPT-2's ``Conv1D``: ``x @ weight + bias`` with ``weight`` of shape (in, out)."""

    def __init__(self, n_in: int, n_out: int, wrong_bias_axis: bool = False) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(n_in, n_out, dtype=torch.float64))
        self.bias = nn.Parameter(torch.zeros(n_out, dtype=torch.float64))
        self.wrong_bias_axis = wrong_bias_axis

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.wrong_bias_axis:
            return _LinearBiasAxis.apply(x, self.weight, self.bias)
        return x @ self.weight + self.bias


class _LinearBiasAxis(torch.autograd.Function):
    """``x @ w + b`` whose backward sums the bias's gradient over the feature axis (a bug)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        return x @ w + b

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        x, w = ctx.saved_tensors
        gb = g.sum(dim=-1, keepdim=True).sum(dim=0).expand(w.shape[1])
        return g @ w.T, x.T @ g, gb


class _PlantEntry(torch.autograd.Function):
    """The identity on a weight whose backward scales one entry of its gradient (a bug)."""

    @staticmethod
    def forward(ctx: Any, w: torch.Tensor, index: tuple[int, int]) -> torch.Tensor:
        ctx.index = index
        return w.view_as(w)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, None]:
        g = g.clone()
        g[ctx.index] = g[ctx.index] * (1.0 + ENTRY_ERROR)
        return g, None


class _LayerNormNoMean(torch.autograd.Function):
    """Layer norm with a hand-written backward that drops the row mean's path (a bug)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, gain: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        centred = x - x.mean(dim=-1, keepdim=True)
        rstd = ((centred * centred).mean(dim=-1, keepdim=True) + LN_EPS) ** -0.5
        xhat = centred * rstd
        ctx.save_for_backward(xhat, rstd, gain)
        return xhat * gain + bias

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        xhat, rstd, gain = ctx.saved_tensors
        dxhat = g * gain
        dx = rstd * (dxhat - xhat * (dxhat * xhat).mean(dim=-1, keepdim=True))  # no "- dxhat.mean(-1)"
        return dx, (g * xhat).sum(dim=0), g.sum(dim=0)


class _CausalSoftmaxTransposed(torch.autograd.Function):
    """Row softmax of masked scores whose backward contracts over the query axis (a bug)."""

    @staticmethod
    def forward(ctx: Any, scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        p = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, None]:
        (p,) = ctx.saved_tensors
        return p * (g - (g * p).sum(dim=-2, keepdim=True)), None


class LayerNorm(nn.Module):
    """``nn.LayerNorm``'s parameters (``weight``, ``bias``); ``no_mean`` plants the bug."""

    def __init__(self, d: int, no_mean: bool = False) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d, dtype=torch.float64))
        self.bias = nn.Parameter(torch.zeros(d, dtype=torch.float64))
        self.no_mean = no_mean

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.no_mean:
            return _LayerNormNoMean.apply(x, self.weight, self.bias)
        return nn.functional.layer_norm(x, x.shape[-1:], self.weight, self.bias, LN_EPS)


class Attention(nn.Module):
    def __init__(self, cfg: GPTConfig, wrong_softmax: bool = False) -> None:
        super().__init__()
        self.c_attn = Conv1D(cfg.emb_dim, 3 * cfg.emb_dim)
        self.c_proj = Conv1D(cfg.emb_dim, cfg.emb_dim)
        self.heads, self.wrong_softmax = cfg.num_heads, wrong_softmax

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t, d = x.shape
        q, k, v = (z.reshape(t, self.heads, d // self.heads).transpose(0, 1) for z in self.c_attn(x).split(d, dim=1))
        scores = (q @ k.transpose(1, 2)) * (d // self.heads) ** -0.5
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        if self.wrong_softmax:
            probs = _CausalSoftmaxTransposed.apply(scores, mask)
        else:
            probs = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
        return self.c_proj((probs @ v).transpose(0, 1).reshape(t, d))


class MLP(nn.Module):
    def __init__(self, cfg: GPTConfig, planted: tuple[int, int] | None = None, wrong_bias_axis: bool = False) -> None:
        super().__init__()
        self.c_fc = Conv1D(cfg.emb_dim, 4 * cfg.emb_dim)
        self.c_proj = Conv1D(4 * cfg.emb_dim, cfg.emb_dim, wrong_bias_axis)
        self.planted = planted

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.c_fc.weight if self.planted is None else _PlantEntry.apply(self.c_fc.weight, self.planted)
        u = x @ w + self.c_fc.bias
        act = 0.5 * u * (1.0 + torch.tanh(GELU_C * (u + GELU_K * (u * u * u))))
        return self.c_proj(act)


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig, bug: str | None = None) -> None:
        super().__init__()
        self.ln_1 = LayerNorm(cfg.emb_dim)
        self.attn = Attention(cfg, wrong_softmax=bug == "softmax_transposed")
        self.ln_2 = LayerNorm(cfg.emb_dim, no_mean=bug == "ln_mean")
        self.mlp = MLP(cfg, planted_index(cfg) if bug == "entry" else None, wrong_bias_axis=bug == "bias_axis")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """The decoder; ``bug`` (one of ``gpt.BUGS``) is planted in block ``num_layers // 2``.
    ``model(ids)`` gives the logits, ``model.loss(ids, targets)`` the mean cross-entropy."""

    def __init__(self, cfg: GPTConfig, bug: str | None = None) -> None:
        super().__init__()
        if bug is not None and bug not in BUGS:
            raise ValueError(f"unknown bug {bug!r}; expected None or one of {BUGS}")
        self.cfg, self.bug = cfg, bug
        self.wte = nn.Embedding(cfg.vocab_size, cfg.emb_dim, dtype=torch.float64)
        self.wpe = nn.Embedding(cfg.context_len, cfg.emb_dim, dtype=torch.float64)
        m = cfg.num_layers // 2
        self.h = nn.ModuleList([Block(cfg, bug if i == m else None) for i in range(cfg.num_layers)])
        self.ln_f = LayerNorm(cfg.emb_dim)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        t = ids.shape[0]
        x = self.wte(ids) + self.wpe.weight[:t]
        for block in self.h:
            x = block(x)
        unembed = self.wte.weight.detach() if self.bug == "tied" else self.wte.weight
        return self.ln_f(x) @ unembed.T

    def loss(self, ids: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(self(ids), targets)

    @classmethod
    def from_numpy(cls, cfg: GPTConfig, params: Mapping[str, np.ndarray], bug: str | None = None,
                   dtype: torch.dtype = torch.float64) -> GPT:
        """The model with ``params`` (numpy arrays by name, e.g. ``gpt.init_params``) copied in."""
        model = cls(cfg, bug)
        expected = param_shapes(cfg)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if tuple(params[name].shape) != expected[name]:
                    raise ValueError(f"params[{name!r}] has shape {params[name].shape}, expected {expected[name]}")
                p.copy_(torch.from_numpy(np.asarray(params[name], dtype=np.float64)))
        return model.to(dtype)
