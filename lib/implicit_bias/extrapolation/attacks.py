"""Adversarial inputs by the fast gradient sign method (FGSM).

Goodfellow, Shlens & Szegedy (2015), *Explaining and harnessing adversarial examples*: move every
input by ``eps`` in the direction of the sign of the gradient of the loss with respect to the
input,

    x_adv = x + eps * sign(grad_x L(f(x), y)),

which maximises the linearised loss in an L-infinity ball of radius ``eps``. Kang et al. (ICLR
2024, App. A) use the *iterated* variant of their official code: FGSM steps applied repeatedly
to the current adversarial input, without projection and without clipping to the pixel range.
:func:`fgsm` does both (``steps=1`` is Goodfellow's method; ``steps > 1`` takes ``steps`` steps
of size ``eps / steps``, so every pixel moves by at most ``eps`` in total).

The gradient is taken for the whole batch at once with :func:`torch.func.grad` of the *summed*
loss: in evaluation mode (no BatchNorm batch statistics, no dropout) the examples do not
interact, so the gradient of the sum with respect to ``X`` holds every example's own input
gradient. The model is put in evaluation mode for the attack and restored afterwards.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from .ocs import LOSSES, per_example_loss

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _loss_fn(loss: str | LossFn) -> LossFn:
    """A per-example loss ``(outputs, targets) -> (n,)``: one of the paper's losses by name
    (:func:`implicit_bias.extrapolation.ocs.per_example_loss`) or a callable."""
    if callable(loss):
        return loss
    if loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; use one of {', '.join(map(repr, LOSSES))} or a callable")
    return lambda out, y: per_example_loss(out, y, loss)  # type: ignore[arg-type]


def input_gradient(model: nn.Module, X: torch.Tensor, y: torch.Tensor, loss: str | LossFn = "ce") -> torch.Tensor:
    """``grad_x L(f(x_i), y_i)`` for every example, shape of ``X``, in one batched call.

    ``loss`` is ``'ce'``, ``'mse'``, ``'gaussian_nll'`` (the paper's per-example losses) or a
    callable returning per-example losses. The model must not mix examples (evaluation mode);
    it is switched to evaluation mode for the call and restored afterwards.
    """
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} examples but y has {y.shape[0]}")
    fn = _loss_fn(loss)
    was_training = model.training
    model.eval()
    try:
        total = lambda x: fn(model(x), y).sum()
        with torch.enable_grad():
            g = torch.func.grad(total)(X.detach())
    finally:
        model.train(was_training)
    return g.detach()


def fgsm(model: nn.Module, X: torch.Tensor, y: torch.Tensor, eps: float, loss: str | LossFn = "ce",
         steps: int = 1, clip: tuple[float, float] | None = None) -> torch.Tensor:
    """Adversarial inputs by the fast gradient sign method.

    ``steps=1``: ``X + eps * sign(grad_x L)`` (Goodfellow et al. 2015). ``steps > 1``: the
    iterated variant of Kang et al.'s code, ``steps`` FGSM steps of size ``eps / steps``, each
    at the current adversarial input (no projection is needed: the total move of a pixel is at
    most ``eps``). ``clip=(lo, hi)`` clamps after every step (e.g. ``(0, 1)`` to stay a valid
    image); the default ``None`` does not clip, as in the paper. ``eps=0`` returns a copy of
    ``X``. Pixels whose gradient is exactly zero do not move.
    """
    if not eps >= 0:  # also rejects NaN
        raise ValueError(f"eps must be >= 0, got {eps!r}")
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    if clip is not None and not clip[0] < clip[1]:
        raise ValueError(f"clip must be (lo, hi) with lo < hi, got {clip!r}")
    x = X.detach().clone()
    if eps == 0:
        return x
    step = eps / steps
    for _ in range(steps):
        x = x + step * input_gradient(model, x, y, loss).sign()
        if clip is not None:
            x = x.clamp(*clip)
    return x
