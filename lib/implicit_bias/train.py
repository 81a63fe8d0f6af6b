"""Training loops: full-batch gradient descent (the papers' gradient flow, with small steps),
SGD and Adam, weight decay, learning-rate schedules (including the loss-scaled, norm-adaptive
rates used for separable data), recording callbacks and divergence checks.

The loop keeps everything on the device: the loss of every step goes into a preallocated
tensor, and the host synchronises only at recording and checking points.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from .models import weight_matrices
from .runtime import quiet

LossName = Literal["ce", "mse", "half_mse", "logistic", "exp"]
LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite."""


def _match_shape(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``out`` reshaped to the targets' shape (a one-output model gives ``(n, 1)`` for targets
    ``(n,)``; subtracting them would silently broadcast to ``(n, n)``)."""
    if out.shape == y.shape:
        return out
    if out.numel() == y.numel():
        return out.reshape(y.shape)
    raise ValueError(f"outputs of shape {tuple(out.shape)} do not match targets of shape {tuple(y.shape)}")


def loss_function(loss: LossName | LossFn) -> LossFn:
    """Resolve a loss name to ``f(outputs, targets) -> scalar`` (averaged over samples).

    - ``'ce'``: cross-entropy with integer class targets;
    - ``'mse'``: mean of squared errors over all entries (``F.mse_loss``);
    - ``'half_mse'``: ``mean_i 0.5 * ||f(x_i) - y_i||^2`` (the papers' square loss);
    - ``'logistic'``: ``mean_i log(1 + exp(-y_i f(x_i)))`` for labels ``y_i`` in {-1, +1};
    - ``'exp'``: ``mean_i exp(-y_i f(x_i))`` for labels in {-1, +1}.
    """
    if callable(loss):
        return loss
    if loss == "ce":
        return F.cross_entropy
    if loss == "mse":
        return lambda out, y: F.mse_loss(_match_shape(out, y), y)
    if loss == "half_mse":
        return lambda out, y: 0.5 * (_match_shape(out, y) - y).pow(2).reshape(len(out), -1).sum(1).mean()
    if loss == "logistic":
        return lambda out, y: F.softplus(-y * out.reshape(y.shape)).mean()
    if loss == "exp":
        return lambda out, y: torch.exp(-y * out.reshape(y.shape)).mean()
    raise ValueError(f"unknown loss {loss!r}; use 'ce', 'mse', 'half_mse', 'logistic', 'exp' or a callable")


@dataclass
class History:
    """What a training run recorded. ``loss`` holds the loss of every step (a CPU tensor);
    ``records[name]`` the values of each recorded metric at ``record_steps``."""

    loss: torch.Tensor
    record_steps: list[int] = field(default_factory=list)
    records: dict[str, list[Any]] = field(default_factory=dict)

    def __getitem__(self, name: str) -> list[Any]:
        return self.records[name]

    def stacked(self, name: str) -> torch.Tensor:
        """A recorded metric as one tensor, time first."""
        return torch.stack([torch.as_tensor(v) for v in self.records[name]])


Metric = Callable[[nn.Module], Any]


class Recorder:
    """Record metrics every ``every`` steps (and at step 0 and the last step).

    ``metrics`` maps a name to ``f(model) -> value``; values are detached and moved to the CPU.
    """

    def __init__(self, every: int, metrics: Mapping[str, Metric]) -> None:
        if every < 1:
            raise ValueError(f"every must be >= 1, got {every}")
        self.every = every
        self.metrics = dict(metrics)

    def due(self, step: int, last: int) -> bool:
        return step % self.every == 0 or step == last

    def record(self, model: nn.Module, history: History) -> None:
        with torch.no_grad():
            for name, fn in self.metrics.items():
                value = fn(model)
                if isinstance(value, torch.Tensor):
                    value = value.detach().cpu()
                elif isinstance(value, list | tuple):
                    value = [v.detach().cpu() if isinstance(v, torch.Tensor) else v for v in value]
                history.records.setdefault(name, []).append(value)


def spectra_metric(model: nn.Module) -> list[torch.Tensor]:
    """Singular values of every weight matrix (a :class:`Recorder` metric)."""
    return [torch.linalg.svdvals(W.detach().double()) for W in weight_matrices(model)]


def layer_norms_metric(model: nn.Module) -> torch.Tensor:
    """Frobenius norm of every weight matrix (a :class:`Recorder` metric)."""
    return torch.stack([W.detach().norm() for W in weight_matrices(model)])


Schedule = Callable[[int], float]


def constant(lr: float) -> Schedule:
    return lambda step: lr


def cosine(lr: float, steps: int, final: float = 0.0) -> Schedule:
    """Cosine decay from ``lr`` to ``final * lr`` over ``steps``."""
    return lambda step: lr * (final + (1 - final) * 0.5 * (1 + math.cos(math.pi * min(step, steps) / steps)))


def warmup(schedule: Schedule, warmup_steps: int) -> Schedule:
    """Linear warm-up over ``warmup_steps`` in front of ``schedule``."""
    return lambda step: schedule(step) * min(1.0, (step + 1) / warmup_steps)


def train(
    model: nn.Module,
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    loss: LossName | LossFn = "ce",
    steps: int = 1000,
    lr: float | Schedule = 0.1,
    optimizer: Literal["gd", "sgd", "adam"] = "gd",
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    batch_size: int | None = None,
    loss_scaled_lr: bool = False,
    max_lr: float = float("inf"),
    recorder: Recorder | None = None,
    generator: torch.Generator | None = None,
    check_every: int = 100,
    progress: bool | None = None,
    desc: str = "train",
) -> History:
    """Train ``model`` on ``(X, y)`` and return its :class:`History`.

    ``optimizer='gd'`` is full-batch gradient descent (``batch_size`` must be None): the
    discretisation of gradient flow used throughout the book. ``loss_scaled_lr=True`` uses
    the norm-adaptive step ``lr / L(w_t)`` (capped at ``max_lr``), which keeps the effective
    step size constant as the logistic loss on separable data decays; it is applied as a
    tensor, so no host synchronisation happens per step. ``'sgd'`` and ``'adam'`` use
    ``torch.optim`` with mini-batches of ``batch_size`` drawn with ``generator``.

    Raises :class:`TrainingDiverged` naming the first step whose loss was not finite and its
    learning rate (checked every ``check_every`` steps).
    """
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    if optimizer == "gd" and batch_size is not None:
        raise ValueError("optimizer='gd' is full-batch; use optimizer='sgd' for mini-batches")
    if loss_scaled_lr and optimizer != "gd":
        raise ValueError("loss_scaled_lr is implemented for optimizer='gd' only")
    schedule: Schedule = lr if callable(lr) else constant(float(lr))
    loss_fn = loss_function(loss)
    params = [p for p in model.parameters() if p.requires_grad]
    device = params[0].device
    losses = torch.full((steps + 1,), float("nan"), dtype=torch.float64, device=device)
    history = History(loss=losses)
    opt: torch.optim.Optimizer | None = None
    if optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=schedule(0), momentum=momentum, weight_decay=weight_decay)
    elif optimizer == "adam":
        opt = torch.optim.Adam(params, lr=schedule(0), weight_decay=weight_decay)
    elif optimizer != "gd":
        raise ValueError(f"unknown optimizer {optimizer!r}; use 'gd', 'sgd' or 'adam'")
    show = (not quiet()) if progress is None else progress
    checked = 0

    def check(upto: int) -> None:
        nonlocal checked
        window = losses[checked : upto + 1]
        if not bool(torch.isfinite(window).all()):
            bad = checked + int((~torch.isfinite(window)).nonzero()[0])
            raise TrainingDiverged(
                f"training diverged: the loss is {float(losses[bad])} at step {bad} "
                f"(learning rate {schedule(bad):g}{', loss-scaled' if loss_scaled_lr else ''}). "
                "Lower the learning rate or the initialisation scale."
            )
        checked = upto + 1

    n = len(X)
    for step in tqdm(range(steps + 1), disable=not show, desc=desc, mininterval=1.0):
        if batch_size is None:
            xb, yb = X, y
        else:
            idx = torch.randint(0, n, (batch_size,), generator=generator, device="cpu").to(X.device)
            xb, yb = X[idx], y[idx]
        value = loss_fn(model(xb), yb)
        losses[step] = value.detach()
        if recorder is not None and recorder.due(step, steps):
            history.record_steps.append(step)
            recorder.record(model, history)
        if step % check_every == 0 or step == steps:
            check(step)
        if step == steps:
            break
        grads = torch.autograd.grad(value, params)
        rate = schedule(step)
        if opt is not None:
            for group in opt.param_groups:
                group["lr"] = rate
            for p, g in zip(params, grads):
                p.grad = g
            opt.step()
            continue
        with torch.no_grad():
            step_size: torch.Tensor | float = rate
            if loss_scaled_lr:
                step_size = torch.clamp(rate / value.detach(), max=max_lr)
            for p, g in zip(params, grads):
                if weight_decay:
                    g = g + weight_decay * p
                p.sub_(step_size * g)
    history.loss = losses.cpu()
    return history


@torch.no_grad()
def accuracy(model: nn.Module, X: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of correct predictions: argmax for multi-class outputs, sign for one output
    with labels in {-1, +1}."""
    out = model(X)
    if out.dim() == 1 or out.shape[1] == 1:
        return float((torch.sign(out.reshape(y.shape)) == y).double().mean())
    return float((out.argmax(1) == y).double().mean())
