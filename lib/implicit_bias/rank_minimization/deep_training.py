"""Deep bias-free ReLU networks driven to the objects of Theorems 4-5 of Timor, Vardi & Shamir
(2023): minimum-norm interpolants (Problem 2) and max-margin directions (Problem 6, reached by
gradient flow on the exponential loss, Lemma 1).

A *stack* is a list ``[W_1, ..., W_k]`` of tensors of shape ``(E, out, in)``: ``E`` networks of the
same depth and widths, handled as one computation (batched matrix products; the members never
interact, so the gradient of the summed loss is every member's own gradient). The networks are
``N(x) = W_k relu(W_{k-1} ... relu(W_1 x))`` with a scalar output, as in
:mod:`.deep_constructions`; inputs are the rows of ``X`` (``(n, d)``). The networks themselves
(initialisation, forward, norms, balance, per-sample Jacobians, the KKT residuals of Problems 2
and 6) are the toolkit's :mod:`implicit_bias.homogeneous`.

What :func:`implicit_bias.ensembles.train_ensemble` (fixed learning rate, optional weight decay)
does not offer and this module adds: a gradient step normalised per member (a time change of
gradient flow, needed to follow the exponential loss to margins of order 100 at depth 32
without overflow) with the scale held at a margin cap, the Gauss-Newton projection onto the
interpolation constraint, and projected descent of the norm on that constraint (the limit
``lambda -> 0`` of weight decay).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from ..homogeneous import (flatten, forward, interpolation_tangent, jacobian, kkt_residual,
                           layer_norms, margins, normalized_margin, scale_outputs, squared_norm,
                           unflatten)

Stack = list[torch.Tensor]


# --- the AM-GM certificate ---------------------------------------------------------------------

def certificate(weights: Sequence[torch.Tensor], q: torch.Tensor) -> torch.Tensor:
    """``(q / prod_l ||W_l||_F)^{1/depth}`` per member: a lower bound on the mean (and the
    geometric mean) of ``||W_l||_2/||W_l||_F`` for any network with ``|N(x)| >= q`` at some
    ``||x|| <= 1`` (the AM-GM step of Apps. D-E). For a balanced network it equals
    ``sqrt(depth / ||theta||^2)`` times ``q^{1/depth}``."""
    k = len(weights)
    return ((q.log() - layer_norms(weights).log().sum(-1)) / k).exp()


# --- training ---------------------------------------------------------------------------------

@dataclass
class MarginHistory:
    """What :func:`train_margin` recorded at its checkpoints; each field is a list with one
    ``(E,)`` CPU tensor per checkpoint. ``steps``: the checkpoints; ``min_margin``:
    ``min_i y_i N(x_i)``; ``normalized_margin``: ``min_margin / ||theta||^depth`` (scale
    invariant; it increases along gradient flow once the data are separated, Lyu & Li);
    ``certificate``: :func:`certificate` with ``q = min_margin`` (0 while not separated);
    ``kkt_eps``, ``kkt_delta``: the stationarity and slackness of
    :func:`implicit_bias.homogeneous.kkt_residual` (NaN while not separated)."""

    steps: list[int] = field(default_factory=list)
    min_margin: list[torch.Tensor] = field(default_factory=list)
    normalized_margin: list[torch.Tensor] = field(default_factory=list)
    certificate: list[torch.Tensor] = field(default_factory=list)
    kkt_eps: list[torch.Tensor] = field(default_factory=list)
    kkt_delta: list[torch.Tensor] = field(default_factory=list)

    def stacked(self, name: str) -> torch.Tensor:
        """A recorded quantity as one ``(checkpoints, E)`` tensor."""
        return torch.stack(getattr(self, name))


def _log_loss(q: torch.Tensor, loss: str) -> torch.Tensor:
    """``log sum_i l(q_i)`` for the exponential or logistic loss, stable for any margins."""
    if loss == "exp":
        return torch.logsumexp(-q, -1)
    if loss == "logistic":
        # log softplus(-q) = log log(1 + e^{-q}), which is -q + O(e^{-q}) for large q
        big = q > 30
        log_terms = torch.where(big, -q, torch.log(torch.nn.functional.softplus(-q.masked_fill(big, 0.0))))
        return torch.logsumexp(log_terms, -1)
    raise ValueError(f"unknown loss {loss!r}; use 'exp' or 'logistic'")


def train_margin(weights: Stack, X: torch.Tensor, y: torch.Tensor, *, steps: int, step: float,
                 final_step: float | None = None, checkpoints: Sequence[int] = (),
                 margin_cap: float = 100.0, loss: str = "exp") -> MarginHistory:
    """Gradient flow on the exponential (or logistic) loss of labels ``y`` in {-1, +1},
    followed with *normalised* steps (in place): per member,
    ``theta <- theta - eta_s ||theta|| g / ||g||`` with ``g`` the gradient of ``log L``
    (``logsumexp``: no loss underflows). A positive rescaling of the gradient is a time change
    of gradient flow, so ``eta_s`` is the relative length of step ``s``; it decays
    geometrically from ``step`` to ``final_step`` (constant if ``final_step`` is None).

    Margins grow like ``||theta||^depth``. Once a member's smallest margin exceeds
    ``margin_cap`` its parameters are scaled down to ``min_i y_i N(x_i) = margin_cap`` (the
    direction is kept). Gradient flow reaches a smallest margin ``q`` only after a time of
    order ``e^q``; with the scale held there the dynamics is normalised ascent of a smoothed
    margin (points more than a few units of margin above the smallest get weights below
    ``e^{-5}``), whose fixed points are the KKT points of Problem (6) up to that smoothing.
    Members whose gradient vanishes (every input mapped to 0) stay unchanged. The quantities of
    :class:`MarginHistory` are recorded at ``checkpoints`` (and at the end).
    """
    if steps < 1 or step <= 0 or (final_step is not None and final_step <= 0):
        raise ValueError("steps, step and final_step must be positive")
    k = len(weights)
    hist = MarginHistory()
    marks = sorted({int(c) for c in checkpoints if 0 <= c <= steps} | {steps})

    def record(s: int) -> None:
        with torch.no_grad():
            qs = margins(weights, X, y)
        q = qs.min(-1).values
        sep = q > 0
        hist.steps.append(s)
        hist.min_margin.append(q.cpu())
        hist.normalized_margin.append(normalized_margin(qs, squared_norm(weights).sqrt(), k).cpu())
        hist.certificate.append(torch.where(sep, certificate(weights, q.clamp(min=1e-300)),
                                            torch.zeros_like(q)).cpu())
        eps = torch.full(q.shape, float("nan"), dtype=torch.float64)
        delta = eps.clone()
        if bool(sep.any()):
            e_, d_ = kkt_residual([W[sep] for W in weights], X, y)
            eps[sep.cpu()], delta[sep.cpu()] = e_, d_
        hist.kkt_eps.append(eps)
        hist.kkt_delta.append(delta)

    ws = [W.detach().requires_grad_(True) for W in weights]
    for s in range(steps + 1):
        if s in marks:
            weights[:] = [W.detach() for W in ws]
            record(s)
        if s == steps:
            break
        grads = torch.autograd.grad(_log_loss(margins(ws, X, y), loss).sum(), ws)
        eta = step if final_step is None else step * (final_step / step) ** (s / max(steps - 1, 1))
        with torch.no_grad():
            gnorm = torch.sqrt(squared_norm(grads))
            tnorm = torch.sqrt(squared_norm(ws))
            scale = torch.where(gnorm > 0, eta * tnorm / gnorm.clamp(min=1e-300), torch.zeros_like(gnorm))
            for W, g in zip(ws, grads):
                W.sub_(scale.view(-1, 1, 1) * g)
            qmin = margins(ws, X, y).min(-1).values
            if not bool(torch.isfinite(qmin).all()):
                raise FloatingPointError(f"margin training diverged at step {s} (step={eta:g}); "
                                         "lower the step")
            over = qmin > margin_cap
            if bool(over.any()):
                c = torch.where(over, margin_cap / qmin, torch.ones_like(qmin)).pow(1 / k)
                for W in ws:
                    W.mul_(c.view(-1, 1, 1))
    weights[:] = [W.detach() for W in ws]
    return hist


# --- the constraint of Problem (2): interpolation ---------------------------------------------

def _add_flat(weights: Sequence[torch.Tensor], delta: torch.Tensor) -> Stack:
    return unflatten(flatten(weights) + delta, weights)


def _residual(weights: Sequence[torch.Tensor], X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return (forward(weights, X) - y).norm(dim=-1)


def project_interpolation(weights: Sequence[torch.Tensor], X: torch.Tensor, y: torch.Tensor,
                          iters: int = 8, halvings: int = 10) -> tuple[Stack, torch.Tensor]:
    """Gauss-Newton projection onto ``{theta : N_theta(x_i) = y_i for all i}``: each iteration
    moves by the least-norm solution of the linearised constraint, halved (per member) until
    the residual decreases. Returns the projected stack and the largest residual
    ``max_i |N(x_i) - y_i|`` per member (a network whose Jacobian has lost rank, e.g. one that
    maps an input to 0, keeps a residual)."""
    ws = [W.detach().clone() for W in weights]
    for _ in range(iters):
        r0 = _residual(ws, X, y)
        with torch.no_grad():
            r = forward(ws, X) - y
        J = jacobian(ws, X)
        delta = -(torch.linalg.pinv(J, rtol=1e-10) @ r.unsqueeze(-1)).squeeze(-1)
        t = torch.ones_like(r0)
        todo = torch.ones_like(r0, dtype=torch.bool)
        for _ in range(halvings):
            trial = _add_flat(ws, t.unsqueeze(-1) * delta)
            todo = todo & ~(_residual(trial, X, y) < r0)
            if not bool(todo.any()):
                break
            t = torch.where(todo, t / 2, t)
        t = torch.where(todo, torch.zeros_like(t), t)          # no decrease found: stay
        ws = _add_flat(ws, t.unsqueeze(-1) * delta)
    with torch.no_grad():
        res = (forward(ws, X) - y).abs().amax(-1)
    return ws, res


def fit_scale(weights: Sequence[torch.Tensor], X: torch.Tensor, y: torch.Tensor) -> Stack:
    """Rescale every member (evenly over its layers) so that its outputs have the least-squares
    best scale for the targets ``y``: a cheap first step before :func:`project_interpolation`."""
    with torch.no_grad():
        out = forward(weights, X)
        c = (out * y).sum(-1) / out.pow(2).sum(-1).clamp(min=1e-300)
    c = torch.where(c > 0, c, torch.ones_like(c))
    return scale_outputs(weights, c)


def minimum_norm_descent(weights: Sequence[torch.Tensor], X: torch.Tensor, y: torch.Tensor, *,
                         step: float, steps: int, max_move: float = 0.1,
                         guard: float = 0.05) -> tuple[Stack, torch.Tensor]:
    """Projected gradient descent of ``||theta||^2 / 2`` on the interpolation constraint of
    Problem (2), the limit ``lambda -> 0`` of weight decay. Each step moves against the part of
    ``theta`` tangent to the constraint (``homogeneous.interpolation_tangent``) by ``step`` times
    it, but by at most ``max_move * ||theta||``, then takes one Gauss-Newton step back towards
    the constraint; a member whose residual ``max_i |N(x_i) - y_i|`` would then exceed
    ``guard`` keeps its previous point and halves its step. A final
    :func:`project_interpolation` lands on the constraint. The fixed points are the KKT points
    of Problem (2). Members must start on the constraint. Returns the stack and the final
    residual per member."""
    ws = [W.detach().clone() for W in weights]
    rates = torch.full((ws[0].shape[0],), float(step), dtype=ws[0].dtype, device=ws[0].device)
    for _ in range(steps):
        theta = flatten(ws)
        tangent = interpolation_tangent(ws, X)
        cap = max_move * theta.norm(dim=-1) / tangent.norm(dim=-1).clamp(min=1e-300)
        move = torch.minimum(rates, cap)
        trial, res = project_interpolation(_add_flat(ws, -move.unsqueeze(-1) * tangent), X, y, iters=1)
        ok = res < guard
        ws = [torch.where(ok.view(-1, 1, 1), Wt, W) for Wt, W in zip(trial, ws)]
        rates = torch.where(ok, torch.clamp(rates * 1.5, max=step), rates / 2)
    return project_interpolation(ws, X, y)


def gradient_alignment(weights: Sequence[torch.Tensor], X: torch.Tensor, y: torch.Tensor,
                       loss: str = "exp") -> torch.Tensor:
    """``cos angle(theta, -grad L)`` per member: 1 when the parameters point along the negative
    gradient, as at the limit direction of gradient flow (Lyu & Li)."""
    ws = [W.detach().requires_grad_(True) for W in weights]
    g = torch.autograd.grad(_log_loss(margins(ws, X, y), loss).sum(), ws)
    th, gf = flatten([W.detach() for W in ws]), flatten(g)
    return (-(th * gf).sum(-1) / (th.norm(dim=-1) * gf.norm(dim=-1)))
