"""Deep homogeneous networks given as lists of weight matrices, and their max-margin problem.

A network here is a bias-free MLP ``f(W; x) = W_L s(W_{L-1} ... s(W_1 x))`` (ReLU unless said
otherwise, no activation after the last layer) given as the list ``[W_1, ..., W_L]`` of its
weight matrices, ``W_l`` of shape ``(out, in)``, optionally stacked over leading axes (``(E, out,
in)`` for ``E`` independent members: seeds, restarts, depths of a sweep), so a whole ensemble is a
few batched matrix products. Inputs are rows: ``X`` is ``(n, d)`` shared by the members or
``(..., n, d)`` one set per member. With ReLU the network is positively ``L``-homogeneous in its
parameters ``theta`` (all entries of all layers): ``f(c theta) = c^L f(theta)`` for ``c > 0``,
and rescaling the layers by positive factors whose product is 1 leaves ``f`` unchanged.

The max-margin problem of such a network on labels ``y`` in {-1, +1} is

    min 1/2 ||theta||^2   subject to   q_i(theta) := y_i f(x_i; theta) >= 1  for all i,

whose KKT points are the limit directions of gradient flow on the exponential or logistic loss
(Lyu & Li 2020; Ji & Telgarsky 2020). :func:`kkt_multipliers` measures how far a point is from
being one (non-negative multipliers fitted by NNLS, or given); :func:`kkt_residual` applies it to
a weight-list network at its margin-one, balanced representative; :func:`interpolation_kkt_residual`
does the same for the minimum-norm interpolation problem ``f(x_i; theta) = y_i``.

This is the toolkit's one forward of a weight-list network (:func:`layer_outputs`; the
``models.layer_activations`` of an ``MLP`` and every part go through it) and its one KKT
residual of the max-margin problem.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from scipy.optimize import nnls

Weights = list[torch.Tensor]


# --- initialisation --------------------------------------------------------------------------


def init_weights(members: int, depth: int, d_in: int, width: int,
                 generator: torch.Generator | int = 0, *, init: str = "kaiming", scale: float = math.sqrt(2),
                 noise: float = 0.3, d_out: int = 1, dtype: torch.dtype = torch.float64,
                 device: torch.device | str = "cpu") -> Weights:
    """``members`` stacked networks of ``depth`` layers (weight matrices), hidden width ``width``
    and ``d_out`` outputs: shapes ``(members, out, in)``.

    ``init='kaiming'``: i.i.d. ``N(0, scale^2 / fan_in)`` entries (``scale = sqrt 2``, He et al.:
    the typical feature norm stays constant through ReLU layers). ``init='identity'``: the same first
    and last layers, hidden-to-hidden layers ``I + noise * G / sqrt(2)`` with ``G`` Kaiming; a
    bias-free ReLU network passes its nonnegative activations through an identity layer
    unchanged, so deep networks start with no input mapped to 0. ``generator`` is a
    ``torch.Generator`` (its state advances) or an integer seed. Draws happen in float64 on the
    CPU, so the weights do not depend on ``dtype`` or ``device``.
    """
    if depth < 2:
        raise ValueError(f"depth must be >= 2, got {depth}")
    if members < 1 or width < 1 or d_in < 1 or d_out < 1:
        raise ValueError(f"members, widths and sizes must be >= 1, got {members}, {d_in}, {width}, {d_out}")
    if init not in ("kaiming", "identity"):
        raise ValueError(f"unknown init {init!r}; use 'kaiming' or 'identity'")
    g = generator if isinstance(generator, torch.Generator) else torch.Generator().manual_seed(int(generator))
    dims = [d_in] + [width] * (depth - 1) + [d_out]
    out = []
    for l, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
        W = torch.randn(members, b, a, generator=g, dtype=torch.float64) * (scale / math.sqrt(a))
        if init == "identity" and 0 < l < depth - 1:
            W = torch.eye(width, dtype=torch.float64) + noise / math.sqrt(2) * W
        out.append(W.to(dtype=dtype, device=device))
    return out


# --- the forward pass --------------------------------------------------------------------------


def layer_outputs(weights: Sequence[torch.Tensor], X: torch.Tensor,
                  activation: Callable[[torch.Tensor], torch.Tensor] = torch.relu
                  ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Every layer's pre-activations ``Z_l = s(Z_{l-1}) W_l^T`` and post-activations ``s(Z_l)``
    on the rows of ``X``, the last layer linear (``post[-1] = pre[-1]`` is the output). Each is
    ``(..., n, d_l)``, the leading axes those of the stacked weights (or of ``X``)."""
    if not weights:
        raise ValueError("need at least one weight matrix")
    pre: list[torch.Tensor] = []
    post: list[torch.Tensor] = []
    h = X
    for i, W in enumerate(weights):
        if h.shape[-1] != W.shape[-1]:
            raise ValueError(f"layer {i + 1} expects inputs of size {W.shape[-1]}, got {h.shape[-1]}")
        z = h @ W.transpose(-1, -2)
        pre.append(z)
        h = activation(z) if i < len(weights) - 1 else z
        post.append(h)
    return pre, post


def features(weights: Sequence[torch.Tensor], X: torch.Tensor) -> list[torch.Tensor]:
    """Hidden post-activations ``f_1(x), ..., f_{L-1}(x)``, each ``(..., n, width)``."""
    return layer_outputs(weights, X)[1][:-1]


def outputs(weights: Sequence[torch.Tensor], X: torch.Tensor) -> torch.Tensor:
    """The network's outputs ``(..., n, d_out)`` (rows are samples)."""
    return layer_outputs(weights, X)[0][-1]


def forward(weights: Sequence[torch.Tensor], X: torch.Tensor,
            bias: torch.Tensor | None = None) -> torch.Tensor:
    """Outputs ``f(W; x) (+ b)`` of a scalar-output network, ``(..., n)``; ``bias`` (one per
    member, ``(...)``) is an optional output bias (the class ``F~`` of Kang et al.)."""
    if weights[-1].shape[-2] != 1:
        raise ValueError(f"forward needs a scalar output, the last layer has {weights[-1].shape[-2]} rows; "
                         "use outputs()")
    out = outputs(weights, X).squeeze(-1)
    return out if bias is None else out + bias.unsqueeze(-1)


# --- norms, balance, margins --------------------------------------------------------------------


def flatten(weights: Sequence[torch.Tensor]) -> torch.Tensor:
    """All parameters of each network as one vector ``theta`` (leading axes kept)."""
    return torch.cat([W.flatten(-2) for W in weights], -1)


def unflatten(theta: torch.Tensor, like: Sequence[torch.Tensor]) -> Weights:
    """Inverse of :func:`flatten`, with the layer shapes of ``like``."""
    out, i = [], 0
    for W in like:
        k = W.shape[-2] * W.shape[-1]
        out.append(theta[..., i: i + k].reshape(*theta.shape[:-1], *W.shape[-2:]))
        i += k
    return out


def squared_norm(weights: Sequence[torch.Tensor]) -> torch.Tensor:
    """``||theta||^2 = sum_l ||W_l||_F^2``, one value per network."""
    return sum(W.pow(2).flatten(-2).sum(-1) for W in weights)


def layer_norms(weights: Sequence[torch.Tensor]) -> torch.Tensor:
    """Frobenius norms ``||W_l||_F`` of every layer, last axis ``L``."""
    return torch.stack([W.flatten(-2).norm(dim=-1) for W in weights], -1)


def norm_ratios(weights: Sequence[torch.Tensor]) -> torch.Tensor:
    """``||W_l||_2 / ||W_l||_F`` of every layer, last axis ``L`` (1 exactly for rank one;
    ``srank(W_l) = ratio^-2``)."""
    out = []
    for W in weights:
        s = torch.linalg.svdvals(W)
        out.append(s[..., 0] / s.norm(dim=-1))
    return torch.stack(out, -1)


def layer_balance(weights: Sequence[torch.Tensor]) -> torch.Tensor:
    """``max_l ||W_l||_F / min_l ||W_l||_F`` per network: 1 for balanced layers (gradient flow
    conserves ``||W_{l+1}||_F^2 - ||W_l||_F^2``)."""
    F = layer_norms(weights)
    return F.max(-1).values / F.min(-1).values


def balance(weights: Sequence[torch.Tensor]) -> Weights:
    """Rescale every network's layers to equal Frobenius norms (their geometric mean); the
    function is unchanged (positive homogeneity of ReLU)."""
    F = layer_norms(weights)
    g = F.log().mean(-1, keepdim=True).exp()
    return [W * (g[..., 0] / F[..., l])[..., None, None] for l, W in enumerate(weights)]


def scale_outputs(weights: Sequence[torch.Tensor], c: torch.Tensor | float) -> Weights:
    """Multiply every network's function by ``c`` (positive, one per network), spread evenly over
    the layers (``c^{1/L}`` each)."""
    f = torch.as_tensor(c, dtype=weights[0].dtype, device=weights[0].device).pow(1 / len(weights))
    return [W * f[..., None, None] for W in weights]


def margins(weights: Sequence[torch.Tensor], X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``q_i = y_i f(x_i)`` of every network, ``(..., n)``."""
    return y * forward(weights, X)


def normalized_margin(q: torch.Tensor, theta_norm: torch.Tensor, degree: int) -> torch.Tensor:
    """``min_i q_i / ||theta||^degree`` (batched over the leading axes of ``q``): the
    scale-invariant margin of a ``degree``-homogeneous network, non-decreasing along gradient flow
    once the data are separated (Lyu & Li 2020)."""
    return q.min(-1).values / theta_norm**degree


def margin_normalize(weights: Sequence[torch.Tensor], X: torch.Tensor, y: torch.Tensor) -> Weights:
    """The representative of each network's classifier with smallest margin ``min_i q_i = 1``
    and balanced layers (the form of a solution of the max-margin problem). Raises
    ``ValueError`` if some network does not separate the data."""
    with torch.no_grad():
        q = margins(weights, X, y).min(-1).values
    if bool((q <= 0).any()):
        raise ValueError("margin_normalize: some networks do not separate the data (min margin <= 0)")
    return balance(scale_outputs(weights, 1 / q))


# --- the KKT conditions -------------------------------------------------------------------------


def jacobian(weights: Sequence[torch.Tensor], X: torch.Tensor) -> torch.Tensor:
    """``d f(x_i) / d theta`` per stacked network ``(E, out, in)``: ``(E, n, P)`` in the order of
    :func:`flatten`. One forward and one backward pass: every (network, sample) pair gets its
    own copy of the weights, so the gradient of the summed outputs with respect to the copies
    holds the per-sample gradients."""
    if X.dim() != 2 or any(W.dim() != 3 for W in weights):
        raise ValueError(f"jacobian takes stacked weights (E, out, in) and inputs shared by the members "
                         f"(n, d); got weights {[tuple(W.shape) for W in weights]} and inputs {tuple(X.shape)} "
                         "(one network: add a leading axis, W[None])")
    E, n = weights[0].shape[0], X.shape[0]
    copies = [W.detach().repeat_interleave(n, 0).requires_grad_(True) for W in weights]
    out = forward(copies, X.repeat(E, 1).unsqueeze(1))       # (E * n, 1): sample i of network e
    grads = torch.autograd.grad(out.sum(), copies)
    return torch.cat([g.reshape(E, n, -1) for g in grads], -1)


@dataclass(frozen=True)
class KKT:
    """The KKT conditions of ``min 1/2||theta||^2 s.t. q_i(theta) >= 1`` at ``theta``, per
    network: ``multipliers`` ``(..., n)`` (``>= 0``, 0 off the active set), ``stationarity``
    ``||theta - sum_i lambda_i grad q_i|| / ||theta||`` and ``slackness``
    ``sum_i lambda_i (q_i - 1) / sum_i lambda_i`` (the mean excess margin of the points that carry
    the multipliers). Both residuals are 0 exactly at a KKT point with ``min_i q_i = 1``."""

    multipliers: torch.Tensor
    stationarity: torch.Tensor
    slackness: torch.Tensor


def kkt_multipliers(theta: torch.Tensor, grads: torch.Tensor, q: torch.Tensor | None = None, *,
                    multipliers: torch.Tensor | None = None, active_tol: float | None = None) -> KKT:
    """The KKT residuals of the max-margin problem at ``theta`` ``(..., P)`` with constraint
    gradients ``grads`` ``(..., n, P)`` (``grad q_i``) and margins ``q`` ``(..., n)``.

    Without ``multipliers`` they are fitted: ``lambda >= 0`` by non-negative least squares to
    ``theta = sum_i lambda_i grad q_i`` over the active set ``q_i <= 1 + active_tol`` (every
    constraint if ``active_tol`` is None); an empty active set gives ``lambda = 0`` and
    stationarity 1. With ``multipliers`` given (e.g. the values Euler's identity
    ``<theta, grad q> = L q`` forces), only the residuals are computed. ``slackness`` is NaN
    when ``q`` is not given. Computed per network in float64 NumPy; returned as float64 tensors
    on the CPU.
    """
    lead = theta.shape[:-1]
    th = theta.detach().double().cpu().reshape(-1, theta.shape[-1]).numpy()
    G = grads.detach().double().cpu().reshape(len(th), -1, theta.shape[-1]).numpy()
    Q = None if q is None else q.detach().double().cpu().reshape(len(th), -1).numpy()
    given = None if multipliers is None else multipliers.detach().double().cpu().reshape(len(th), -1).numpy()
    lams, stat, slack = [], [], []
    for e in range(len(th)):
        empty = False
        if given is not None:
            lam = given[e]
        else:
            active = (np.arange(G.shape[1]) if active_tol is None or Q is None
                      else np.flatnonzero(Q[e] <= 1.0 + active_tol))
            lam = np.zeros(G.shape[1])
            empty = len(active) == 0
            if not empty:
                lam[active] = nnls(G[e][active].T, th[e])[0]
        lams.append(lam)
        # the parameters minus the constraint term of the Lagrangian's gradient
        stat.append(1.0 if empty else
                    float(np.linalg.norm(th[e] - G[e].T @ lam) / max(np.linalg.norm(th[e]), 1e-300)))
        slack.append(float("nan") if Q is None else float(lam @ (Q[e] - 1)) / max(float(lam.sum()), 1e-300))
    f64 = lambda v: torch.tensor(np.asarray(v), dtype=torch.float64)
    return KKT(f64(np.stack(lams)).reshape(*lead, -1), f64(stat).reshape(lead), f64(slack).reshape(lead))


def kkt_residual(weights: Sequence[torch.Tensor], X: torch.Tensor,
                 y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """How far each stacked network is from a KKT point of its max-margin problem (the
    approximate KKT points of Lyu & Li 2020): :func:`kkt_multipliers` at its margin-one,
    balanced representative (:func:`margin_normalize`) with multipliers fitted over every
    constraint. Returns ``(stationarity, slackness)`` per network, both 0 exactly at a KKT
    point. The networks must separate the data."""
    ws = margin_normalize(weights, X, y)
    J = jacobian(ws, X) * y.view(1, -1, 1)            # grad q_i
    with torch.no_grad():
        q = margins(ws, X, y)
    r = kkt_multipliers(flatten(ws), J, q)
    return r.stationarity, r.slackness


def interpolation_tangent(weights: Sequence[torch.Tensor], X: torch.Tensor) -> torch.Tensor:
    """``theta - P theta`` per stacked network ``(E, P)``, with ``P`` the orthogonal projection
    onto the span of the constraint gradients ``grad f(x_i)``: the part of the gradient of
    ``||theta||^2 / 2`` tangent to the interpolation constraint ``f(x_i) = y_i``."""
    J = jacobian(weights, X)
    theta = flatten(weights)
    return theta - (torch.linalg.pinv(J, rtol=1e-10) @ (J @ theta.unsqueeze(-1))).squeeze(-1)


def interpolation_kkt_residual(weights: Sequence[torch.Tensor], X: torch.Tensor) -> torch.Tensor:
    """``||theta - P theta|| / ||theta||`` per stacked network (:func:`interpolation_tangent`).
    It is 0 exactly at the KKT points of the minimum-norm interpolation problem
    (``theta = sum_i mu_i grad f(x_i)``, multipliers of any sign)."""
    return interpolation_tangent(weights, X).norm(dim=-1) / flatten(weights).norm(dim=-1)
