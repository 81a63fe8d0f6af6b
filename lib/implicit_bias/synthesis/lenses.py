"""Measurements that ``01_five_lenses`` reads off the common networks of :mod:`.arms`.

- :func:`crossings`: when each top singular value of a recorded layer first exceeds a level
  (P1 and P2: the order in which directions appear);
- :func:`update_counts_and_escapes`: P1 counted with one threshold in both arms, on what training
  wrote, and P2(b) on the update $W-W_0$ with the saddle part's escape-direction test;
- :func:`fit_cost`: the largest training cost of a stack of bias-free networks;
- :func:`relative_spread`, :func:`conserved_drift`: P3(a)'s layer-norm spread and the drift of
  the quantities that gradient flow conserves;
- :func:`objective_gradient_ratio`: how far a regularised network is from a critical point (P3(b)).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from implicit_bias import models
from implicit_bias.bottleneck import structure, sweeps
from implicit_bias.saddle_to_saddle import localized
from implicit_bias.synthesis.arms import mode

D = torch.float64


def crossings(s: torch.Tensor, level: float = 0.5) -> list[float]:
    """First record index at which each singular value exceeds ``level`` (inf if never).

    ``s``: records x singular values, for one network.
    """
    out = []
    for i in range(s.shape[-1]):
        hit = (s[:, i] > level).nonzero()
        out.append(float(hit[0]) if len(hit) else float("inf"))
    return out


def fit_cost(weights: Sequence[torch.Tensor], X: torch.Tensor, Y: torch.Tensor) -> float:
    """Largest training cost $C=\\frac1N\\sum_i\\lVert f(x_i)-y_i\\rVert^2$ over a stack of bias-free networks."""
    return float((localized.outputs(weights, X.to(D)) - Y.to(D)).pow(2).sum(-1).mean(-1).max())


def update_counts_and_escapes(small: Mapping[int, Mapping[str, Any]], reg: Mapping[int, sweeps.DepthRun],
                              X: torch.Tensor, Y: torch.Tensor, taus: Sequence[float], n_nets: int,
                              ) -> tuple[dict[tuple[float, int], tuple[int, int]], list[dict[str, float]]]:
    """P1 with one threshold per count, and P2(b) with the escape-direction test, for every small run.

    Returns ``p1r``: (threshold, depth) -> (mode over networks of the number of singular values of the
    small arm's middle-layer update $W-W_0$ above the threshold, the same mode for the $L_2$ network's
    middle layer); and ``p2r``: one dict per small run with ``ratio`` ($s_2/s_1$ of the update when its
    $s_1$ first reaches 0.5, read on the fine records ``ds``), ``kkt`` (the KKT residual of the direction
    $\\theta/\\lVert\\theta\\rVert$ as an escape direction of the saddle at the origin, when the loss has
    fallen by 5%) and ``r0`` ($\\lVert\\theta_0\\rVert/\\sqrt L$).
    """
    mid = structure.middle_index
    G0 = localized.cost_gradient_at_zero(lambda out: 0.5 * (out - Y.to(D)).pow(2).sum(-1).mean(), Y.shape)
    p1r: dict[tuple[float, int], tuple[int, int]] = {}
    p2r: list[dict[str, float]] = []
    for L, run in small.items():
        update = [W - W0 for W, W0 in zip(run["W"], run["W0"])]
        for tau in taus:
            p1r[tau, L] = (mode(structure.layer_ranks(update, tau)[:, mid(L)]),
                           mode(structure.layer_ranks(reg[L].weights, tau)[:, mid(L)]))
        for r in range(n_nets):
            c = crossings(run["ds"][:, r])
            k = int(c[0]) if np.isfinite(c[0]) else len(run["steps"]) - 1
            k_esc = int((run["loss"][r] < 0.95 * run["loss"][r, 0]).nonzero()[0])
            p2r.append(dict(L=L, r=r, ratio=float(run["ds"][k, r, 1] / run["ds"][k, r, 0]),
                            kkt=float(localized.kkt_residual([W[r] for W in run["snaps"][k_esc]], X.to(D), G0)),
                            r0=float(localized.squared_norm([W[r] for W in run["W0"]]).sqrt() / L ** 0.5)))
    return p1r, p2r


def relative_spread(norms: torch.Tensor) -> torch.Tensor:
    """(max - min) / mean of the layer norms of each network (last axis: layers)."""
    return (norms.max(-1).values - norms.min(-1).values) / norms.mean(-1)


def conserved_drift(norms: torch.Tensor) -> torch.Tensor:
    """Largest change of the cut invariants $\\lVert W_{l+1}\\rVert^2-\\lVert W_l\\rVert^2$ over the run,
    relative to the mean final layer norm, per network (``norms``: records x networks x layers)."""
    return (norms[-1].diff(dim=-1) - norms[0].diff(dim=-1)).abs().max(-1).values / norms[-1].mean(-1)


def objective_gradient_ratio(run: sweeps.DepthRun, X: torch.Tensor, Y: torch.Tensor, lam: float) -> float:
    """Smallest over networks of $\\lVert\\nabla\\tfrac12(C+\\lambda\\lVert\\theta\\rVert^2)\\rVert/
    (\\lambda\\lVert\\theta\\rVert)$: 0 at a critical point of the regularised loss."""
    Wg = [W.clone().requires_grad_(True) for W in run.weights]
    bg = [b.clone().requires_grad_(True) for b in run.biases]
    cost = (models.mlp_trace(Wg, bg, X.to(D)).output - Y.to(D)).pow(2).sum(-1).mean(-1)
    objective = 0.5 * (cost + lam * models.param_sqnorm(Wg + bg, batch_dims=1))
    grads = torch.autograd.grad(objective.sum(), Wg + bg)
    return float((sum(g.pow(2).flatten(1).sum(-1) for g in grads).sqrt() / (lam * run.sqnorm.sqrt())).min())
