"""Deep bias-free ReLU networks driven to the objects of Theorems 4-5 of Timor, Vardi & Shamir
(2023): minimum-norm interpolants (Problem 2) and max-margin directions (Problem 6, reached by
gradient flow on the exponential loss, Lemma 1).

A *stack* is a list ``[W_1, ..., W_k]`` of tensors of shape ``(E, out, in)``: ``E`` networks of the
same depth and widths, handled as one computation (batched matrix products; the members never
interact, so the gradient of the summed loss is every member's own gradient). The networks are
``N(x) = W_k relu(W_{k-1} ... relu(W_1 x))`` with a scalar output, as in
:mod:`.deep_constructions`; inputs are the rows of ``X`` (``(n, d)``).

What :func:`implicit_bias.ensembles.train_ensemble` (fixed learning rate, optional weight decay)
does not offer and this module adds: a gradient step normalised per member (a time change of
gradient flow, needed to follow the exponential loss to margins of order 100 at depth 32
without overflow), per-sample Jacobians in one backward pass, the Gauss-Newton projection onto
the interpolation constraint, projected descent of the norm on that constraint (the limit
``lambda -> 0`` of weight decay), and the KKT residuals of Problems 2 and 6.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy.optimize import nnls

Stack = list[torch.Tensor]


# --- building and evaluating stacks -----------------------------------------------------------

def init_stack(size: int, depth: int, d_in: int, width: int, generator: torch.Generator,
               init: str = "kaiming", noise: float = 0.3, dtype: torch.dtype = torch.float64,
               device: torch.device | str = "cpu") -> Stack:
    """``size`` networks of the given depth (number of weight matrices) and hidden width.

    ``init='kaiming'``: i.i.d. ``N(0, 2/fan_in)`` entries (He et al.). ``init='identity'``: the
    same first and last layers, hidden-to-hidden layers ``I + noise * G / sqrt(2)`` with ``G``
    Kaiming; a bias-free ReLU network passes its nonnegative activations through an identity
    layer unchanged, so deep networks start with no input mapped to 0 (with Kaiming weights,
    width 12 and depth 32, most networks map some inputs to exactly 0 and cannot fit them).
    """
    if depth < 2:
        raise ValueError(f"depth must be >= 2, got {depth}")
    if init not in ("kaiming", "identity"):
        raise ValueError(f"unknown init {init!r}; use 'kaiming' or 'identity'")
    dims = [d_in] + [width] * (depth - 1) + [1]
    out = []
    for l, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
        W = torch.randn(size, b, a, generator=generator, dtype=torch.float64) * math.sqrt(2 / a)
        if init == "identity" and 0 < l < depth - 1:
            W = torch.eye(width, dtype=torch.float64) + noise / math.sqrt(2) * W
        out.append(W.to(dtype=dtype, device=device))
    return out


def forward(weights: Sequence[torch.Tensor], X: torch.Tensor) -> torch.Tensor:
    """Outputs ``(E, n)`` of every member on the rows of ``X``."""
    h = X.T.unsqueeze(0).expand(weights[0].shape[0], -1, -1)
    for l, W in enumerate(weights):
        h = torch.bmm(W, h)
        if l < len(weights) - 1:
            h = torch.relu(h)
    return h[:, 0, :]


def squared_norms(weights: Sequence[torch.Tensor]) -> torch.Tensor:
    """``||theta||^2`` per member, ``(E,)``."""
    return sum(W.pow(2).sum((-2, -1)) for W in weights)


def layer_norms(weights: Sequence[torch.Tensor]) -> torch.Tensor:
    """Frobenius norms ``(E, depth)``."""
    return torch.stack([W.norm(dim=(-2, -1)) for W in weights], -1)


def ratios(weights: Sequence[torch.Tensor]) -> torch.Tensor:
    """``||W_l||_2 / ||W_l||_F`` per member and layer, ``(E, depth)``."""
    out = []
    for W in weights:
        s = torch.linalg.svdvals(W)
        out.append(s[..., 0] / s.norm(dim=-1))
    return torch.stack(out, -1)


def balance(weights: Sequence[torch.Tensor]) -> Stack:
    """Rescale every member's layers to equal Frobenius norms (their geometric mean); the
    function is unchanged (positive homogeneity of ReLU)."""
    F = layer_norms(weights)
    g = F.log().mean(-1, keepdim=True).exp()
    return [W * (g[:, 0] / F[:, l]).view(-1, 1, 1) for l, W in enumerate(weights)]


def scale_outputs(weights: Sequence[torch.Tensor], c: torch.Tensor) -> Stack:
    """Multiply every member's function by ``c`` (``(E,)``, positive), spread evenly over the
    layers (``c^{1/depth}`` each)."""
    f = c.pow(1 / len(weights)).view(-1, 1, 1)
    return [W * f for W in weights]


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
    ``kkt_eps``, ``kkt_delta``: :func:`kkt_residual` (NaN while not separated)."""

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
            q = (y * forward(weights, X)).min(-1).values
        sep = q > 0
        hist.steps.append(s)
        hist.min_margin.append(q.cpu())
        hist.normalized_margin.append((q / squared_norms(weights).pow(k / 2)).cpu())
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
        q = y * forward(ws, X)
        grads = torch.autograd.grad(_log_loss(q, loss).sum(), ws)
        eta = step if final_step is None else step * (final_step / step) ** (s / max(steps - 1, 1))
        with torch.no_grad():
            gnorm = torch.sqrt(sum(g.pow(2).sum((-2, -1)) for g in grads))
            tnorm = torch.sqrt(squared_norms(ws))
            scale = torch.where(gnorm > 0, eta * tnorm / gnorm.clamp(min=1e-300), torch.zeros_like(gnorm))
            for W, g in zip(ws, grads):
                W.sub_(scale.view(-1, 1, 1) * g)
            qmin = (y * forward(ws, X)).min(-1).values
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

def jacobian(weights: Sequence[torch.Tensor], X: torch.Tensor) -> torch.Tensor:
    """``d N(x_i) / d theta`` per member: ``(E, n, P)`` with ``theta`` the concatenated layers.

    One forward and one backward pass: every (member, sample) pair gets its own copy of the
    member's weights, so the gradient of the summed outputs with respect to the copies holds
    the per-sample gradients."""
    E, n = weights[0].shape[0], X.shape[0]
    copies = [W.detach().repeat_interleave(n, 0).requires_grad_(True) for W in weights]
    h = X.repeat(E, 1).unsqueeze(-1)                       # (E * n, d, 1), sample i of member e
    for l, W in enumerate(copies):
        h = torch.bmm(W, h)
        if l < len(copies) - 1:
            h = torch.relu(h)
    grads = torch.autograd.grad(h.sum(), copies)
    return torch.cat([g.reshape(E, n, -1) for g in grads], -1)


def _add_flat(weights: Sequence[torch.Tensor], delta: torch.Tensor) -> Stack:
    out, off = [], 0
    for W in weights:
        size = W[0].numel()
        out.append(W + delta[:, off : off + size].reshape(W.shape))
        off += size
    return out


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


# --- the constraint of Problem (6): margin 1, and its KKT conditions ---------------------------

def margin_normalize(weights: Sequence[torch.Tensor], X: torch.Tensor, y: torch.Tensor) -> Stack:
    """Scale every member so that its smallest margin ``min_i y_i N(x_i)`` is 1 (members must
    separate the data), then balance its layers."""
    with torch.no_grad():
        q = (y * forward(weights, X)).min(-1).values
    if bool((q <= 0).any()):
        raise ValueError("margin_normalize: some members do not separate the data (min margin <= 0)")
    return balance(scale_outputs(weights, 1 / q))


def kkt_residual(weights: Sequence[torch.Tensor], X: torch.Tensor,
                 y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """How far each member is from a KKT point of Problem (6) (Lemma 1's limit), in the sense of
    the approximate KKT points of Lyu & Li (2020). At the margin-normalised network
    ``theta`` (smallest margin 1) with margins ``q_i = y_i N(x_i)``, non-negative multipliers
    ``lambda`` are fitted by non-negative least squares to ``theta = sum_i lambda_i grad q_i``.
    Returns ``(eps, delta)`` per member: the stationarity residual
    ``||theta - sum_i lambda_i grad q_i|| / ||theta||`` and the complementary slackness
    ``sum_i lambda_i (q_i - 1) / sum_i lambda_i`` (the mean excess margin of the points that
    carry the multipliers). Both are 0 exactly at a KKT point."""
    ws = margin_normalize(weights, X, y)
    J = (jacobian(ws, X) * y.view(1, -1, 1)).cpu().numpy()           # grad q_i
    with torch.no_grad():
        q = (y * forward(ws, X)).cpu().numpy()
    theta = _flat(ws).cpu().numpy()
    eps, delta = [], []
    for e in range(theta.shape[0]):
        lam, res = nnls(J[e].T, theta[e])
        eps.append(res / np.linalg.norm(theta[e]))
        delta.append(float(lam @ (q[e] - 1)) / max(float(lam.sum()), 1e-300))
    return torch.tensor(eps, dtype=torch.float64), torch.tensor(delta, dtype=torch.float64)


def _flat(weights: Sequence[torch.Tensor]) -> torch.Tensor:
    return torch.cat([W.reshape(W.shape[0], -1) for W in weights], -1)


def interpolation_kkt_residual(weights: Sequence[torch.Tensor], X: torch.Tensor) -> torch.Tensor:
    """``||theta - P theta|| / ||theta||`` per member, with ``P`` the orthogonal projection onto
    the span of the constraint gradients ``grad N(x_i)``: the part of the gradient of
    ``||theta||^2 / 2`` tangent to the interpolation constraint. It is 0 exactly at the KKT
    points of Problem (2) (``theta = sum_i mu_i grad N(x_i)``)."""
    J = jacobian(weights, X)
    theta = _flat(weights)
    proj = (torch.linalg.pinv(J, rtol=1e-10) @ (J @ theta.unsqueeze(-1))).squeeze(-1)
    return (theta - proj).norm(dim=-1) / theta.norm(dim=-1)


def minimum_norm_descent(weights: Sequence[torch.Tensor], X: torch.Tensor, y: torch.Tensor, *,
                         step: float, steps: int, max_move: float = 0.1,
                         guard: float = 0.05) -> tuple[Stack, torch.Tensor]:
    """Projected gradient descent of ``||theta||^2 / 2`` on the interpolation constraint of
    Problem (2), the limit ``lambda -> 0`` of weight decay. Each step moves against the part of
    ``theta`` tangent to the constraint (:func:`interpolation_kkt_residual`) by ``step`` times
    it, but by at most ``max_move * ||theta||``, then takes one Gauss-Newton step back towards
    the constraint; a member whose residual ``max_i |N(x_i) - y_i|`` would then exceed
    ``guard`` keeps its previous point and halves its step. A final
    :func:`project_interpolation` lands on the constraint. The fixed points are the KKT points
    of Problem (2). Members must start on the constraint. Returns the stack and the final
    residual per member."""
    ws = [W.detach().clone() for W in weights]
    rates = torch.full((ws[0].shape[0],), float(step), dtype=ws[0].dtype, device=ws[0].device)
    for _ in range(steps):
        J = jacobian(ws, X)
        theta = _flat(ws)
        tangent = theta - (torch.linalg.pinv(J, rtol=1e-10) @ (J @ theta.unsqueeze(-1))).squeeze(-1)
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
    g = torch.autograd.grad(_log_loss(y * forward(ws, X), loss).sum(), ws)
    th = torch.cat([W.detach().reshape(W.shape[0], -1) for W in ws], -1)
    gf = torch.cat([gi.reshape(gi.shape[0], -1) for gi in g], -1)
    return (-(th * gf).sum(-1) / (th.norm(dim=-1) * gf.norm(dim=-1)))
