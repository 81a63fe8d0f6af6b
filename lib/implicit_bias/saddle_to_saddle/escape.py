"""The escape-direction solver: projected gradient descent of ``L_0`` on the sphere
``||theta||^2 = L`` (Definition 2.1), with many restarts (and several widths) as one batched
computation.

Restarts are stacked along a leading axis: every weight matrix is ``(R, out, in)``. A width sweep
is batched too: each restart has its own hidden width, embedded in the largest one, with the
entries outside its block held at zero by a mask (a zero-padded network computes the same function
and its padded entries get zero gradient, so the mask only removes rounding noise). One step is

    g = grad L_0(theta),   g_T = g - <g, theta> theta / L   (tangent to the sphere),
    theta <- sqrt(L) (theta - lr g_T) / ||theta - lr g_T||   (retraction),

optionally followed by a projection of every layer on its best rank-one approximation (a
rank-constrained search). ReLU'(0) = 0; a small random ``jitter`` moves a structured start off
the kinks of the ReLU, where the gradient is not informative.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..models import gaussian_weights
from .localized import Weights, kkt_residual, layer_norms, localized_gradient, speed, to_sphere


@dataclass
class EscapeDirections:
    """Result of :func:`solve_escape`.

    ``weights``: the final points, ``(R, out, in)`` per layer, on the ``sqrt(L)``-sphere;
    ``speed``: ``-L_0`` at each (``(R,)``); ``kkt``: the KKT residual of
    :func:`~implicit_bias.saddle_to_saddle.localized.kkt_residual` (0 at an escape direction);
    ``widths``: the hidden width of each restart; ``steps`` and ``speeds``: the recorded
    objective, ``speeds[k, r]`` at step ``steps[k]``.
    """

    weights: Weights
    speed: torch.Tensor
    kkt: torch.Tensor
    widths: torch.Tensor
    steps: list[int]
    speeds: torch.Tensor

    @property
    def size(self) -> int:
        return int(self.speed.shape[0])

    def best(self, mask: torch.Tensor | None = None) -> int:
        """Index of the fastest restart (among ``mask`` if given)."""
        s = self.speed if mask is None else torch.where(mask, self.speed, torch.full_like(self.speed, -math.inf))
        return int(torch.argmax(s))

    def network(self, i: int, trim: bool = True) -> Weights:
        """The weights of restart ``i`` as ``(out, in)`` matrices, cut to its own width."""
        Ws = [W[i].clone() for W in self.weights]
        if not trim:
            return Ws
        w = int(self.widths[i])
        L = len(Ws)
        out = []
        for l, W in enumerate(Ws):
            rows = W.shape[0] if l == L - 1 else w
            cols = W.shape[1] if l == 0 else w
            out.append(W[:rows, :cols])
        return out

    def layer_norms(self) -> torch.Tensor:
        return layer_norms(self.weights)


def width_masks(dims_in: int, dims_out: int, depth: int, widths: Sequence[int],
                dtype: torch.dtype = torch.float64, device: torch.device | str = "cpu") -> list[torch.Tensor]:
    """0/1 masks ``(R, out, in)`` embedding hidden width ``widths[r]`` in ``max(widths)``."""
    w = torch.as_tensor(list(widths), device=device)
    W = int(w.max())
    idx = torch.arange(W, device=device)
    hidden = (idx[None, :] < w[:, None]).to(dtype)                    # (R, W)
    masks = []
    for l in range(depth):
        rows = torch.ones(len(w), dims_out, dtype=dtype, device=device) if l == depth - 1 else hidden
        cols = torch.ones(len(w), dims_in, dtype=dtype, device=device) if l == 0 else hidden
        masks.append(rows[:, :, None] * cols[:, None, :])
    return masks


def rank_one_projection(W: torch.Tensor) -> torch.Tensor:
    """Best rank-one approximation ``s_1 u_1 v_1^T`` of each stacked matrix (Eckart-Young)."""
    U, S, Vh = torch.linalg.svd(W, full_matrices=False)
    return S[..., :1, None] * U[..., :, :1] @ Vh[..., :1, :]


def solve_escape(X: torch.Tensor, G: torch.Tensor, *, depth: int, widths: int | Sequence[int],
                 restarts: int = 1, steps: int = 2000, lr: float = 0.05, lr_final: float = 1.0,
                 normalized: bool = False,
                 init: Sequence[torch.Tensor] | None = None, init_std: float = 1.0,
                 jitter: float = 0.0, rank_one: bool = False, record_every: int = 10,
                 generator: torch.Generator | None = None, dtype: torch.dtype = torch.float64
                 ) -> EscapeDirections:
    """Search escape directions of the localized loss ``Tr[G^T Y_theta(X)]`` by projected
    gradient descent on the ``sqrt(L)``-sphere (see the module docstring).

    Args:
        X, G: data ``(N, d_in)`` and ``grad C(0)`` ``(N, d_out)`` (rows are samples).
        depth: number of weight matrices ``L``.
        widths: one hidden width for all restarts, or one per restart (a width sweep, batched).
        restarts: restarts per width when ``widths`` is an int.
        steps, lr: number of steps and step size.
        lr_final: the step decays from ``lr`` to ``lr_final * lr`` along a cosine (1: constant).
            A decay lets the iterates settle on optima that sit on a kink of the ReLU (some data
            points exactly at zero pre-activation), where a constant step keeps oscillating.
        normalized: move each restart by ``lr`` times the sphere's radius along its normalised
            tangent gradient (a fixed angle per step) instead of ``lr`` times the gradient. Deep
            networks start from random directions where ``L_0`` and its gradient are tiny
            (products of many small factors); fixed-angle steps leave such flat regions quickly.
        init: optional starting weights ``(R, out, in)`` per layer (e.g. a warm start); they are
            masked, jittered and projected like a random start.
        init_std: standard deviation of the Gaussian start before projection.
        jitter: standard deviation of a Gaussian perturbation added to the start.
        rank_one: project every layer on rank one after each step.
        record_every: record the speed of every restart this often.
        generator: for the random start; dtype: float64 by default.
    """
    if depth < 2:
        raise ValueError(f"depth must be >= 2, got {depth}")
    if isinstance(widths, int):
        widths = [widths] * restarts
    widths = [int(w) for w in widths]
    if not widths or min(widths) < 1:
        raise ValueError(f"widths must be positive, got {widths}")
    X, G = X.to(dtype), G.to(dtype)
    d_in, d_out, R = X.shape[1], G.shape[1], len(widths)
    masks = width_masks(d_in, d_out, depth, widths, dtype=dtype, device=X.device)
    dims = [d_in] + [max(widths)] * (depth - 1) + [d_out]
    if init is None:
        Ws = gaussian_weights(dims, init_std, (R,), generator=generator, dtype=dtype, device=X.device)
    else:
        Ws = [W.to(dtype).clone() for W in init]
        if any(W.shape != (R, b, a) for W, a, b in zip(Ws, dims[:-1], dims[1:])):
            raise ValueError("init must have shapes (R, out, in) matching depth and widths")
    if jitter:
        Ws = [W + jitter * torch.randn(W.shape, generator=generator, dtype=dtype, device=X.device) for W in Ws]
    Ws = to_sphere([W * m for W, m in zip(Ws, masks)])
    L = float(depth)
    rec_steps, rec = [], []
    for k in range(steps + 1):
        grads, value = localized_gradient(Ws, X, G)
        if k % record_every == 0 or k == steps:
            rec_steps.append(k)
            rec.append(-value)
        if k == steps:
            break
        # padded entries have exactly zero gradient (their unit's pre-activation is 0 and
        # ReLU'(0) = 0), so the masks are applied only at the start and after rank-one projections
        radial = sum((g * W).flatten(-2).sum(-1) for g, W in zip(grads, Ws)) / L
        rate = lr * (lr_final + (1 - lr_final) * 0.5 * (1 + math.cos(math.pi * k / steps)))
        tangent = [g - radial[:, None, None] * W for g, W in zip(grads, Ws)]
        if normalized:
            size = sum(t.pow(2).flatten(-2).sum(-1) for t in tangent).sqrt().clamp_min(1e-300)
            rate = rate * math.sqrt(L) / size[:, None, None]
        Ws = [W - rate * t for t, W in zip(tangent, Ws)]
        if rank_one:
            Ws = [rank_one_projection(W) * m for W, m in zip(Ws, masks)]
        Ws = to_sphere(Ws)
    return EscapeDirections(
        weights=Ws, speed=speed(Ws, X, G), kkt=kkt_residual(Ws, X, G),
        widths=torch.tensor(widths), steps=rec_steps, speeds=torch.stack(rec))
