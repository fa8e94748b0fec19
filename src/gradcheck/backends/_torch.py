"""The PyTorch adapter: the claimed gradient is autograd's.

``gradcheck.check(f, x)`` with a ``torch.Tensor`` ``x`` and no ``grad=`` checks the
gradient that autograd computes for ``f`` (including custom ``torch.autograd.Function``
backward passes) against central differences of ``f`` itself. Only this module imports
torch; the core sees numpy arrays.

* The numeric side evaluates ``f`` on tensors that share memory with the checker's private
  numpy copy, under ``torch.no_grad()``, in the input's own dtype (float64, float32,
  float16, bfloat16; bfloat16 crosses to numpy as ``ml_dtypes.bfloat16``).
* The claimed side is ``torch.autograd.grad(f(x), x, grad_outputs=v)`` with the core's
  cotangent ``v`` cast to the output's dtype (autograd requires that).
* :meth:`TorchBackend.audit` adds the checks of ``torch.autograd.gradcheck`` that users
  rely on: the gradient has the input's dtype and shape, a zero output gradient gives a
  zero input gradient, and backward is reentrant (two backward passes through the same
  graph agree bit for bit). A violation makes ``check`` raise
  :class:`~gradcheck.GradientAssertionError` carrying the full report.

>>> import torch, gradcheck
>>> x = torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64)
>>> gradcheck.check(lambda t: (t.sin() * t).sum(), x).passed
True
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from .._core.errors import FunctionError, UnsupportedInputError
from .._core.inputs import output_array
from . import register
from ._contract import AUTOGRAD, contract_violations, one_output
from ._numpy import _W, control_input


def tensor_to_numpy(t: torch.Tensor) -> np.ndarray:
    """A numpy array with the tensor's values and dtype (may share its memory)."""
    if t.layout != torch.strided:
        raise UnsupportedInputError(f"gradcheck checks dense tensors; got layout {t.layout} (call .to_dense())")
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.resolve_conj().resolve_neg()
    if t.dtype == torch.bfloat16:
        import ml_dtypes  # numpy has no bfloat16; reinterpret the bits

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def numpy_to_tensor(a: np.ndarray, device: torch.device | str = "cpu") -> torch.Tensor:
    """A tensor sharing ``a``'s memory on CPU (bfloat16 via its bits)."""
    a = np.asarray(a)
    if not a.flags.writeable or any(s < 0 for s in a.strides):
        a = np.ascontiguousarray(a).copy()
    if a.dtype.name == "bfloat16":
        t = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    else:
        t = torch.from_numpy(a)
    return t if torch.device(device).type == "cpu" else t.to(device)


def usable_device(device: torch.device | str) -> torch.device:
    """``device`` as a torch.device this torch can use, else a ValueError that says so: a
    CUDA device on a CPU-only build must not surface later as an error of ``f``."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"TorchBackend(device={device!r}): not a torch device ({exc})") from None
    try:
        torch.empty(0, device=dev)
    except (RuntimeError, AssertionError) as exc:
        cuda = "" if torch.cuda.is_available() else "; torch.cuda.is_available() is False here"
        raise ValueError(
            f"TorchBackend(device={device!r}): this torch ({torch.__version__}) cannot place tensors on "
            f"{dev} ({exc}{cuda}); use device='cpu', or leave device unset to run f where x lives"
        ) from None
    return dev


def _output_tensor(y: Any) -> torch.Tensor:
    return one_output(y, torch.Tensor, "autograd can only differentiate a torch.Tensor "
                      "(return the tensor, not .item() or a numpy array)")


class TorchBackend:
    """Functions of torch tensors, differentiated by autograd (``grad=None``).

    A user-supplied ``grad`` (a tensor or array, ``grad(x)``, or a VJP ``grad(x, v)``
    taking and returning tensors) is checked instead of autograd's gradient.
    """

    name = "torch"
    # A child forked after torch's intra-op thread pool ran (any parallel matmul) deadlocks
    # in its first parallel op: a process-pool engine must not pick this backend by itself.
    fork_safe = False

    def __init__(self, device: torch.device | str | None = None) -> None:
        self.device = usable_device(device) if device is not None else None

    def accepts(self, x: Any) -> bool:
        return isinstance(x, torch.Tensor)

    def to_numpy(self, x: Any) -> np.ndarray:
        if isinstance(x, torch.Tensor):
            if self.device is None:
                self.device = x.device  # f runs where the user's input lives
            return tensor_to_numpy(x)
        return np.asarray(x)

    def _tensor(self, x: np.ndarray) -> torch.Tensor:
        return numpy_to_tensor(x, self.device or "cpu")

    def evaluate(self, f: Callable[..., Any], x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            y = f(self._tensor(x))
        if isinstance(y, (tuple, list)):
            _output_tensor(y)  # raises: one output at a time
        if isinstance(y, torch.Tensor):
            return np.array(tensor_to_numpy(y), copy=True)
        return output_array(y)

    def _forward(self, f: Callable[..., Any], x: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        xt = self._tensor(x).requires_grad_(True)
        with torch.enable_grad():
            try:
                y = f(xt)
            except Exception as exc:
                raise FunctionError(None, "base", None, exc) from exc
        return xt, _output_tensor(y)

    @staticmethod
    def _output_gradient(y: torch.Tensor, cotangent: np.ndarray | None) -> torch.Tensor:
        if cotangent is None:
            return torch.ones_like(y)
        return torch.as_tensor(_widened(cotangent)).to(dtype=y.dtype, device=y.device)

    @staticmethod
    def _backward(y, xt, gy, *, retain_graph: bool) -> torch.Tensor | None:
        try:
            (g,) = torch.autograd.grad(y, xt, grad_outputs=gy, retain_graph=retain_graph, allow_unused=True)
        except Exception as exc:  # the user's backward (e.g. a custom Function) raised
            raise FunctionError(None, "backward", None, exc) from exc
        return g

    def claimed_gradient(
        self, f: Callable[..., Any], x: np.ndarray, cotangent: np.ndarray | None, grad: Any
    ) -> np.ndarray:
        if grad is not None:
            return self._user_gradient(x, cotangent, grad)
        xt, y = self._forward(f, x)
        if not y.requires_grad:
            return np.zeros(x.shape, dtype=x.dtype)  # autograd sees no dependence on x
        g = self._backward(y, xt, self._output_gradient(y, cotangent), retain_graph=False)
        if g is None:
            return np.zeros(x.shape, dtype=x.dtype)
        return np.array(tensor_to_numpy(g), copy=True)

    def _user_gradient(self, x: np.ndarray, cotangent: np.ndarray | None, grad: Any) -> np.ndarray:
        if callable(grad):
            args = [self._tensor(x)]
            if cotangent is not None:
                args.append(torch.as_tensor(_widened(cotangent)))
            with torch.no_grad():
                grad = grad(*args)
        return tensor_to_numpy(grad) if isinstance(grad, torch.Tensor) else np.asarray(grad)

    def audit(
        self, f: Callable[..., Any], x: np.ndarray, cotangent: np.ndarray | None, grad: Any,
        claimed: np.ndarray,
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``(notes, violations)`` about autograd's gradient beyond its values: dtype and
        shape, zero output gradient -> zero input gradient, reentrant backward."""
        if grad is not None:
            return (), ()  # a user-supplied gradient is judged by its values only
        xt, y = self._forward(f, x)
        if not y.requires_grad:
            return ("f's output does not require grad: autograd sees no dependence on x, "
                    "so the claimed gradient is zero",), ()
        gy = self._output_gradient(y, cotangent)
        g1 = self._backward(y, xt, gy, retain_graph=True)
        if g1 is None:
            return ("x is not part of f's autograd graph (autograd returned None): the claimed "
                    "gradient is zero",), ()
        g2 = self._backward(y, xt, gy, retain_graph=True)
        g0 = self._backward(y, xt, torch.zeros_like(gy), retain_graph=False)
        as_np = lambda g: None if g is None else tensor_to_numpy(g)  # noqa: E731
        violations = contract_violations(AUTOGRAD, tensor_to_numpy(g1), as_np(g2), as_np(g0), g1.dtype, xt.dtype,
                                         tuple(g1.shape), tuple(xt.shape), claimed)
        return (), tuple(violations)

    def control_problem(self) -> tuple[Callable[..., Any], np.ndarray, Any]:
        return control_function, control_input(), None

    # -- forward mode and double backward (gradcheck._orders) ------------------------
    def jvp(self, f: Callable[..., Any], x: np.ndarray, tangents: np.ndarray) -> tuple[np.ndarray, str]:
        """``J t`` for each tangent ``t`` in ``tangents`` (shape ``(k, *x.shape)``), from
        torch's forward mode, as ``(array of shape (k, *y.shape), how)``.

        One ``torch.func.vmap`` of ``torch.func.jvp`` over the k tangents; a function
        that functorch cannot transform (an ``autograd.Function`` without
        ``setup_context``, a data-dependent branch) falls back to k calls through
        ``torch.autograd.forward_ad`` dual tensors, and ``how`` says so.
        """
        xt = self._tensor(x)
        tt = self._tensor(np.ascontiguousarray(tangents))
        try:
            with warnings.catch_warnings():  # functorch's own use of the deprecated torch.jit.script
                warnings.filterwarnings("ignore", message=".*torch.jit.script.*", category=DeprecationWarning)
                out = torch.func.vmap(lambda t: _output_tensor(torch.func.jvp(f, (xt,), (t,))[1]))(tt)
            return np.array(tensor_to_numpy(out), copy=True), "torch.func.vmap(torch.func.jvp)"
        except Exception as exc:  # noqa: BLE001 - functorch refused: forward_ad still can
            refused = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
        import torch.autograd.forward_ad as fwad

        rows = []
        for t in tt:
            try:
                with fwad.dual_level():
                    y = _output_tensor(f(fwad.make_dual(xt, t)))
                    tangent = fwad.unpack_dual(y).tangent
            except Exception as exc:
                raise FunctionError(None, "forward-mode", None, exc) from exc
            rows.append(torch.zeros_like(y) if tangent is None else tangent.detach())
        how = f"torch.autograd.forward_ad, one call per tangent (torch.func.vmap refused: {refused})"
        return np.array(tensor_to_numpy(torch.stack(rows)), copy=True), how

    def hvp(self, f: Callable[..., Any], x: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Double backward: ``d/dx <grad f(x), v>`` through
        ``torch.autograd.grad(..., create_graph=True)`` (a scalar ``f``)."""
        xt, y = self._forward(f, x)
        if not y.requires_grad:
            return np.zeros(x.shape, dtype=x.dtype)
        try:
            with torch.enable_grad():
                (g,) = torch.autograd.grad(y, xt, create_graph=True)
                if not g.requires_grad:
                    return np.zeros(x.shape, dtype=x.dtype)  # the gradient does not depend on x
                (h,) = torch.autograd.grad(g, xt, grad_outputs=self._tensor(np.asarray(v, dtype=x.dtype)),
                                           allow_unused=True)
        except Exception as exc:
            raise FunctionError(None, "double backward", None, exc) from exc
        return np.zeros(x.shape, dtype=x.dtype) if h is None else np.array(tensor_to_numpy(h), copy=True)


def _widened(cotangent: np.ndarray) -> np.ndarray:
    """The core's cotangent as float64, or complex128 for a complex output."""
    return np.asarray(cotangent, dtype=np.complex128 if np.iscomplexobj(cotangent) else np.float64)


_W_T = torch.from_numpy(_W)


def control_function(x: torch.Tensor) -> torch.Tensor:
    """The numpy control function written in torch: sum(w tanh(x)) + |x|^2/2 + sum(x0 x2)."""
    return (_W_T * torch.tanh(x)).sum() + 0.5 * (x * x).sum() + (x[0] * x[2]).sum()


register("torch", TorchBackend)
