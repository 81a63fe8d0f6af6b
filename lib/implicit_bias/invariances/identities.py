"""The identities of Le & Jegelka (2022) that follow from the path decomposition, checked on a
:class:`~.paths.DAGNetwork` against autograd, each as a ratio to its first-order round-off
bound (``u = 2^-53``, ``c`` from :func:`~.paths.roundoff_constant`) so that a value below 1 (or
2) means "exact up to round-off" (chapter *Paths and trees*):

- :func:`rescaling_changes`: the per-neuron rescaling symmetry leaves the path values ``h``
  unchanged (bitwise for powers of two, to ``(2 alpha + 4) u`` otherwise);
- :func:`euler_ratios`: Euler's identity ``sum_IN w dR/dw - sum_OUT w dR/dw = 0`` of the
  logistic risk at every hidden vertex (Lemma 3, Eq. 4; Eq. 12);
- :func:`eq2_ratio`: Eq. (2), the gradient of ``nu`` through the fixed tree ``mu``;
- :func:`eq44_errors`: the path sum of the proof of Lemma 4 (App. C, Eq. 44) with the path
  factor once and twice (as printed);
- :func:`square_sum_drifts`: the drift of ``sum_F w^2 - sum_F' w^2`` along gradient descent
  (Lemma 4 and Definition 6), with a count of weight-sign changes (Assumption 1's monitor).

All risks are the logistic risk ``R(w) = mean_i log(1 + exp(-y_i nu(x_i; w)))``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from .paths import (D64, UNIT_ROUNDOFF, DAGNetwork, Paths, decompose, enumerate_paths,
                    path_enumeration, rescale_neuron, roundoff_constant)

__all__ = ["eq2_ratio", "eq44_errors", "euler_ratios", "rescaling_changes", "square_sum_drifts"]

u = UNIT_ROUNDOFF


def _logistic_grad(net: DAGNetwork, X: torch.Tensor, y: torch.Tensor
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """``(dR/dw, nu(X))`` for the logistic risk at the current weights (``nu`` detached)."""
    w = net.weights.clone().requires_grad_(True)
    out = net(X, w)
    (g,) = torch.autograd.grad(F.softplus(-y * out).mean(), w)
    return g, out.detach()


def rescaling_changes(net: DAGNetwork, X: torch.Tensor, paths: Paths, H: torch.Tensor,
                      generator: torch.Generator | None = None) -> tuple[int, float]:
    """Rescale each hidden vertex in turn (:func:`~.paths.rescale_neuron`), once by ``2^k`` with
    ``k`` uniform in ``-8..8`` and once by ``exp(N(0, 1))`` (drawn from ``generator`` in that
    order, vertex by vertex). Returns ``(entries of h that the powers of two changed at all,
    max relative change of the nonzero h_p under the random factors / ((2 alpha + 4) u))``;
    ``H = path_enumeration(net, X, paths)``. The first is 0, the second below 1 to first order."""
    alpha = net.longest_path()
    bad, ratio = 0, 0.0
    nz = H != 0
    for v in net.hidden():
        k_pow = int(torch.randint(-8, 9, (), generator=generator))
        w_pow = rescale_neuron(net, v, 2.0**k_pow)
        bad += int((path_enumeration(net, X, paths, weights=w_pow) != H).sum())
        c = torch.exp(torch.randn((), generator=generator, dtype=D64))
        Hc = path_enumeration(net, X, paths, weights=rescale_neuron(net, v, c))
        rel = ((Hc - H).abs()[nz] / H.abs()[nz]).max()
        ratio = max(ratio, float(rel / ((2 * alpha + 4) * u)))
    return bad, ratio


def euler_ratios(net: DAGNetwork, X: torch.Tensor, y: torch.Tensor, paths: Paths,
                 H: torch.Tensor) -> np.ndarray:
    """``|D_v| / (4 c u A_v)`` for every hidden vertex (in ``net.hidden()`` order), where
    ``D_v = sum_{IN_v} w dR/dw - sum_{OUT_v} w dR/dw`` (autograd) and
    ``A_v = mean_i |l'_i| sum_{p through v} |h_p(x_i)|`` is the same sum without cancellations;
    ``H = path_enumeration(net, X, paths)``. Euler's identity makes every ratio round-off (< 1)."""
    g, out = _logistic_grad(net, X, y)
    lprime = torch.sigmoid(-y * out)  # |l'(y nu)|
    A = (lprime[:, None] * H.abs()).mean(0) @ paths.vertex_incidence(net)
    wg = net.weights * g
    c_round = roundoff_constant(net)
    ratios = []
    for v in net.hidden():
        Dv = wg[net.in_edges(v)].sum() - wg[net.out_edges(v)].sum()
        ratios.append(float(Dv.abs() / (4 * c_round * u * A[v])))
    return np.array(ratios)


def eq2_ratio(net: DAGNetwork, X: torch.Tensor, paths: Paths, H: torch.Tensor) -> float:
    """Eq. (2): the gradient of ``sum_i nu(x_i)`` as ``sum_p [grad mu(h(x))]_p dh_p/dw`` with
    ``mu`` held fixed, against autograd on ``nu``: max over edges of ``|difference| / (4 c u
    G_e)``, ``G_e = sum_i sum_{p through e} |x_p| prod_{f in p, f != e} |w_f|``. Below 1."""
    dec = decompose(net, paths)
    Hreq = H.clone().requires_grad_(True)
    (grad_mu,) = torch.autograd.grad(dec.mu(Hreq).sum(), Hreq)
    w2 = net.weights.clone().requires_grad_(True)
    h_w2 = path_enumeration(net, X, paths, weights=w2)
    (g_eq2,) = torch.autograd.grad((grad_mu * h_w2).sum(), w2)
    w3 = net.weights.clone().requires_grad_(True)
    (g_nu,) = torch.autograd.grad(net(X, w3).sum(), w3)
    wa = net.weights.abs().clone().requires_grad_(True)
    (G,) = torch.autograd.grad(path_enumeration(net, X.abs(), paths, weights=wa).sum(), wa)
    return float(((g_eq2 - g_nu).abs() / (4 * roundoff_constant(net) * u * G)).max())


def eq44_errors(net: DAGNetwork, X: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    """Relative errors of App. C, Eq. (44) for ``F`` the edges out of the input vertices:
    ``sum_{e in F} w_e dR/dw_e`` (autograd) against ``sum_{j,p} d_{j,p} / n`` with
    ``d_{j,p} = l'_j y_j [grad mu'(h'(x_j))]_p h'_p(x_j)`` (Eq. 35; the path factor once, which is
    correct when every path crosses ``F`` once) and against the printed form with a second factor
    ``h'_p(x_j)``. Returns ``(error once, error twice)``."""
    paths = enumerate_paths(net)
    dec = decompose(net, paths)
    first = torch.tensor([int(a) in net.inputs for a in net.edges[:, 0].tolist()])
    g, out = _logistic_grad(net, X, y)
    lhs = float((net.weights * g)[first].sum())          # sum_{e in F} w_e dR/dw_e
    Ha = path_enumeration(net, X, paths, absolute=True).requires_grad_(True)
    (grad_mu,) = torch.autograd.grad(dec.mu_abs(Ha).sum(), Ha)   # [grad mu'(h'(x_j))]_p
    lprime = -torch.sigmoid(-y * out)                              # l'(y_j nu(x_j))
    d = (lprime * y)[:, None] * grad_mu * Ha.detach() / len(y)     # d_{j,p} / n (Eq. 35)
    once, twice = float(d.sum()), float((d * Ha.detach()).sum())
    return abs(once - lhs) / abs(lhs), abs(twice - lhs) / abs(lhs)


def square_sum_drifts(net: DAGNetwork, X: torch.Tensor, y: torch.Tensor,
                      quantities: Sequence[tuple[Sequence[int], Sequence[int]]], eta: float,
                      T: float) -> tuple[list[float], int]:
    """Full-batch gradient descent with step ``eta`` for ``round(T / eta)`` steps from
    ``net.weights`` (not modified). For each ``(F, F')`` in ``quantities`` (edge indices, ``F``
    non-empty) returns ``|q(w_T) - q(w_0)|`` with ``q = sum_{e in F} w_e^2 - sum_{f in F'} w_f^2``
    (summed left to right), and the number of weight-sign changes over all steps."""
    def q(w: torch.Tensor) -> list[torch.Tensor]:
        out = []
        for plus, minus in quantities:
            v = w[plus[0]] ** 2
            for e in plus[1:]:
                v = v + w[e] ** 2
            for e in minus:
                v = v - w[e] ** 2
            out.append(v)
        return out

    w = net.weights.clone()
    start, flips = q(w), 0
    for _ in range(int(round(T / eta))):
        w.requires_grad_(True)
        (g,) = torch.autograd.grad(F.softplus(-y * net(X, w)).mean(), w)
        flips += int((torch.sign(w - eta * g) != torch.sign(w)).sum())
        w = (w - eta * g).detach()
    return [abs(float(e - s)) for e, s in zip(q(w), start)], flips
