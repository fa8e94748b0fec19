"""PyTorch models for ``check_params``: a ``torch.nn.Module`` with a loss, or a dict of tensors.

``check_params(model, loss_fn)`` calls ``loss_fn(model)``; ``check_params(model, loss_fn, batch)``
calls ``loss_fn(model(inputs), target)`` for ``batch = (inputs, target)`` (``inputs`` a tensor,
or a tuple of positional inputs), ``loss_fn(model(batch))`` for a tensor. The claim is
autograd's gradient of that loss with respect to every parameter that requires grad (custom
``autograd.Function`` backward passes included); frozen parameters are left out, and said so.

The model is never written: every evaluation runs ``torch.func.functional_call`` with the
check's own tensors in place of the parameters (numpy memory, the core's) and private
clones of the buffers (a batch norm in train mode updates those, not the model's), under
``torch.no_grad()``; the claim is taken the same way, from leaves of the check's own. The
mode (``train``/``eval``), ``requires_grad`` flags and buffers are compared before and after.
A float32 model whose loss is precision-generic is checked in float64 (floating tensors of
``batch`` cast too); otherwise in float32. Imports torch.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch
from torch import nn

from .._core.errors import FunctionError, UnsupportedInputError
from ._models import ModelProblem, precision_note, read_only, same_function
from ._torch import tensor_to_numpy

_FLOATS = (torch.float64, torch.float32, torch.float16, torch.bfloat16)


class _LossOf(nn.Module):
    """The loss as a module of no input, so that ``functional_call`` can swap the model's
    parameters (``model.<name>``) for the check's during one call of it."""

    def __init__(self, model: nn.Module, loss_fn: Callable[..., Any], batch: Any) -> None:
        super().__init__()
        self.model, self.loss_fn, self.batch = model, loss_fn, batch

    def forward(self) -> Any:
        if self.batch is None:
            return self.loss_fn(self.model)
        if isinstance(self.batch, torch.Tensor):
            return self.loss_fn(self.model(self.batch))
        inputs, target = self.batch
        out = self.model(*inputs) if isinstance(inputs, (tuple, list)) else self.model(inputs)
        return self.loss_fn(out, target)


def _as_float64(batch: Any) -> Any:
    """``batch`` with its floating tensors (at any depth of tuples and lists) in float64."""
    if isinstance(batch, torch.Tensor):
        return batch.to(torch.float64) if batch.is_floating_point() else batch
    if isinstance(batch, (tuple, list)):
        return type(batch)(_as_float64(b) for b in batch)
    return batch


def _tensor(a: np.ndarray) -> torch.Tensor:
    with warnings.catch_warnings():  # a read-only view: the check never writes through it
        warnings.filterwarnings("ignore", message=".*not writable.*", category=UserWarning)
        return torch.from_numpy(a)


def _scalar(out: Any) -> np.ndarray:
    """The loss's value as a 0-d numpy array of its dtype."""
    if isinstance(out, torch.Tensor):
        if out.numel() != 1:
            return np.array(tensor_to_numpy(out.detach()), copy=True)  # check_params names the shape
        return np.array(tensor_to_numpy(out.detach().reshape(())), copy=True)
    return np.asarray(out)


class ModelRun:
    """Calls of the loss with given parameter tensors (by name), the model untouched."""

    def __init__(self, model: nn.Module, loss_fn: Callable[..., Any], batch: Any) -> None:
        self.model = model
        self.wrapper = _LossOf(model, loss_fn, batch)
        self.buffers = {f"model.{n}": b.detach().clone() for n, b in model.named_buffers()}
        self.batch = batch

    def __call__(self, tensors: Mapping[str, torch.Tensor]) -> Any:
        swapped = {f"model.{n}": t for n, t in tensors.items()}
        return torch.func.functional_call(self.wrapper, {**swapped, **self.buffers}, tie_weights=True, strict=False)

    def in_float64(self) -> ModelRun:
        run = ModelRun.__new__(ModelRun)
        run.model, run.buffers, run.batch = self.model, self.buffers, _as_float64(self.batch)
        run.wrapper = _LossOf(self.model, self.wrapper.loss_fn, run.batch)
        return run


def module_problem(model: nn.Module, loss_fn: Callable[..., Any], batch: Any = None) -> ModelProblem:
    """``check_params(model, loss_fn[, batch])`` as numpy (see the module docstring)."""
    if not callable(loss_fn):
        raise TypeError(f"check_params(model, loss_fn, batch): loss_fn must be callable, got {type(loss_fn).__name__}")
    if batch is not None and not isinstance(batch, torch.Tensor) and not (
            isinstance(batch, (tuple, list)) and len(batch) == 2):
        raise TypeError("check_params(model, loss_fn, batch): batch is a tensor (loss_fn(model(batch))) or a pair "
                        "(inputs, target) (loss_fn(model(inputs), target)); for anything else pass "
                        "loss_fn=lambda m: ... and no batch")
    named = list(model.named_parameters())
    trainable = {n: p for n, p in named if p.requires_grad}
    frozen = [n for n, p in named if not p.requires_grad]
    if not trainable:
        raise ValueError("the model has no parameter that requires grad: nothing to check")
    bad = [n for n, p in trainable.items() if p.dtype not in _FLOATS]
    if bad:
        raise UnsupportedInputError(f"parameters {bad} are not real floating tensors: check_params checks float ones")
    before = _ModelState.of(model)
    run = ModelRun(model, loss_fn, batch)
    problem = _problem(run, trainable, "PyTorch")
    if frozen:
        problem.notes.append(f"{len(frozen)} parameters do not require grad and were not checked: {frozen[:5]}"
                             + (" ..." if len(frozen) > 5 else ""))
    problem.verify = lambda: before.changes(model)
    return problem


def tensors_problem(loss: Callable[..., Any], tensors: Mapping[str, torch.Tensor], grads: Any) -> ModelProblem:
    """``check_params(loss, {name: tensor}, grads=None)``: ``loss`` of a dict of tensors."""
    bad = [n for n, t in tensors.items() if not isinstance(t, torch.Tensor) or t.dtype not in _FLOATS]
    if bad:
        raise UnsupportedInputError(f"params {bad} are not real floating torch tensors (a dict of tensors holds "
                                    "tensors only)")
    problem = _problem(lambda ts: loss(dict(ts)), dict(tensors), "PyTorch", claim=grads is None)
    if grads is not None:
        problem.grads = {n: np.asarray(tensor_to_numpy(g) if isinstance(g, torch.Tensor) else g)
                         for n, g in grads.items()}
    return problem


def _problem(run: Callable[[Mapping[str, torch.Tensor]], Any], tensors: Mapping[str, torch.Tensor],
             framework: str, claim: bool = True) -> ModelProblem:
    """The numpy loss, parameters and (``claim``) autograd's gradient, in float64 when every
    parameter is float64 or the loss is precision-generic, else in the tensors' own dtypes."""
    notes = []
    own = {n: read_only(tensor_to_numpy(t.detach())) for n, t in tensors.items()}
    params, wide = own, run
    if not all(t.dtype == torch.float64 for t in tensors.values()):
        copies, widened, why = _widened(run, tensors)
        notes.append(precision_note(framework, copies is not None, why))
        if copies is not None:
            params, wide = copies, widened
        elif any(t.dtype not in (torch.float32, torch.float64) for t in tensors.values()):
            raise UnsupportedInputError(f"float16/bfloat16 parameters whose loss is not precision-generic "
                                        f"({why}): check_params screens float32 and float64 only")

    def loss_np(arrays: Mapping[str, np.ndarray]) -> np.ndarray:
        with torch.no_grad():
            return _scalar(wide({n: _tensor(a) for n, a in arrays.items()}))

    loss_np.gradcheck_mp_capable = False  # type: ignore[attr-defined]  # torch code: no arbitrary precision
    loss_np.gradcheck_backend = "torch"  # type: ignore[attr-defined]  # not fork-safe (torch's thread pool)
    grads = _autograd(wide, params) if claim else {}
    return ModelProblem(loss_np, params, grads, framework.lower(), notes)


def _widened(run, tensors: Mapping[str, torch.Tensor]) -> tuple[dict[str, np.ndarray] | None, Any, str]:
    """float64 copies of ``tensors`` and the run in float64, if the loss is precision-generic
    there (``(None, None, why)`` if not)."""
    with torch.no_grad():
        try:
            value32 = float(_scalar(run({n: t.detach() for n, t in tensors.items()})))
        except Exception as exc:
            raise FunctionError(None, "base", None, exc) from exc
        copies = {n: np.array(tensor_to_numpy(t.detach()), dtype=np.float64) for n, t in tensors.items()}
        wide = run.in_float64() if isinstance(run, ModelRun) else run
        try:
            value64 = _scalar(wide({n: _tensor(a) for n, a in copies.items()}))
        except Exception as exc:  # a float32 constant or input meets float64 parameters
            return None, None, f"with float64 parameters it raised {type(exc).__name__}: {str(exc)[:100]}"
    if same_function(value32, value64):
        return copies, wide, ""
    return None, None, f"with float64 parameters it returned {value64!r} ({value64.dtype}) for {value32!r}"


def _autograd(run, params: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """autograd's gradient of the loss at ``params`` (leaves of the check's own memory)."""
    leaves = {n: _tensor(a).detach().requires_grad_(True) for n, a in params.items()}
    with torch.enable_grad():
        try:
            out = run(leaves)
        except Exception as exc:
            raise FunctionError(None, "base", None, exc) from exc
        if not isinstance(out, torch.Tensor) or out.numel() != 1:
            raise TypeError(f"the loss must return a tensor of one element for autograd, got {type(out).__name__}"
                            + (f" of shape {tuple(out.shape)}" if isinstance(out, torch.Tensor) else ""))
        if not out.requires_grad:
            return {n: np.zeros(a.shape, a.dtype) for n, a in params.items()}
        try:
            got = torch.autograd.grad(out.reshape(()), list(leaves.values()), allow_unused=True)
        except Exception as exc:  # a custom backward raised
            raise FunctionError(None, "backward", None, exc) from exc
    return {n: np.zeros(a.shape, a.dtype) if g is None else tensor_to_numpy(g)
            for (n, a), g in zip(params.items(), got)}


class _ModelState:
    """What the check must leave as it found it: each module's mode, each parameter's
    ``requires_grad``, each buffer's values."""

    def __init__(self, modes: list[bool], flags: dict[str, bool], buffers: dict[str, torch.Tensor]) -> None:
        self.modes, self.flags, self.buffers = modes, flags, buffers

    @classmethod
    def of(cls, model: nn.Module) -> _ModelState:
        return cls([m.training for m in model.modules()],
                   {n: p.requires_grad for n, p in model.named_parameters()},
                   {n: b.detach().clone() for n, b in model.named_buffers()})

    def changes(self, model: nn.Module) -> list[str]:
        now = _ModelState.of(model)
        out = []
        if now.modes != self.modes:
            out.append("the mode (train/eval) of a module")
        if now.flags != self.flags:
            out.append("requires_grad of a parameter")
        changed = [n for n, b in self.buffers.items() if not torch.equal(now.buffers.get(n, b), b)]
        if changed:
            out.append(f"buffers {changed}")
        return out
