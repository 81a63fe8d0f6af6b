"""Explicit networks from Jacot's proofs, in float64, as ``(weights, biases)`` lists.

- :func:`balanced_linear_factorization`: ``W_l = U_l S^{1/L} U_{l-1}^T``, a depth-``L`` linear
  factorisation of ``A`` with ``||theta||^2 = L sum_i s_i^{2/L}``, the linear representation cost;
- :func:`geometric_path` and :func:`interpolation_path`: ReLU networks computing ``x -> A x`` on
  the positive orthant for a diagonal ``A >= 0`` (the two paths of Theorem 3(3) / Proposition 4(3));
- :func:`planar_identity`: the identity on a ``k``-planar completely positive domain with
  ``||theta||^2 = kL`` exactly (Proposition 5);
- :func:`example20`: the network of Example 20 (Appendix D.1), with the exact norm in
  :func:`example20_sqnorm`;
- :func:`parallel_sum` and :func:`stack`: networks for ``f + g`` and ``f o g`` with additive norms
  (the constructions behind Theorem 3(1)-(2)).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

D = torch.float64
Net = tuple[list[torch.Tensor], list[torch.Tensor]]


def _zero_biases(weights: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    return [torch.zeros(W.shape[0], dtype=W.dtype) for W in weights]


def balanced_linear_factorization(A: torch.Tensor, L: int) -> list[torch.Tensor]:
    """Weights ``W_1..W_L`` with ``W_L ... W_1 = A`` and ``||W_l||_F^2 = sum_i s_i^{2/L}`` for every
    ``l``: ``W_1 = U S^{1/L} V^T`` and ``W_l = U S^{1/L} U^T`` for ``l >= 2`` (the intermediate
    orthonormal frames all chosen equal to ``U``), with ``A = U S V^T`` its compact SVD
    restricted to the non-zero singular values."""
    if L < 1:
        raise ValueError(f"L must be >= 1, got {L}")
    U, s, Vh = torch.linalg.svd(A, full_matrices=False)
    r = int((s > 1e-12 * s[0]).sum())            # numerical rank: rounding leaves ~1e-16 s_1
    U, s, Vh = U[:, :r], s[:r], Vh[:r]
    root = torch.diag(s ** (1.0 / L))
    return [U @ root @ Vh] + [U @ root @ U.T for _ in range(L - 1)]


def geometric_path(s: torch.Tensor, L: int) -> Net:
    """The ReLU network ``W_l = diag(s)^{1/L}`` (zero biases): on the positive orthant every
    activation stays ``>= 0``, so it computes ``x -> diag(s) x`` with ``||theta||^2 = L sum_i
    s_i^{2/L}``, the linear cost, which is optimal (Proposition 4(3)'s construction)."""
    s = s.to(D)
    if (s < 0).any():
        raise ValueError("the singular values s must be >= 0")
    W = [torch.diag(s ** (1.0 / L)) for _ in range(L)]
    return W, _zero_biases(W)


def interpolation_path(s: torch.Tensor, L: int, printed: bool = False) -> Net:
    """The ReLU network of the proof of Theorem 3(3) for ``A = diag(s) >= 0`` on the positive
    orthant: kernels interpolated linearly between ``P = P_{Im A^T}`` and ``A^T A``,
    ``M_l = (1 - l/L) P + (l/L) A^T A``, ``B_l = M_l^{1/2}`` (with ``B_L = A``) and
    ``W_l = B_l B_{l-1}^+``. Its squared norm is ``Lk + 2 log|A|_+ + O(1/L)``.

    ``printed=True`` follows the proof as printed: ``M_l = (l/L) P + (1 - l/L) A^T A`` for
    ``0 < l < L`` with the conventions ``B_0 = I`` and ``B_L = I``; that network computes
    ``x -> P x``, not ``A x`` (the interpolation runs backwards and ``B_L`` should be ``A``)."""
    s = s.to(D)
    if (s < 0).any():
        raise ValueError("the singular values s must be >= 0")
    P = (s > 0).to(D)
    a2 = s**2

    def B(l: int) -> torch.Tensor:
        t = l / L
        if printed:
            if l == 0 or l == L:
                return torch.ones_like(s)
            return (t * P + (1 - t) * a2).sqrt()
        if l == L:
            return s.clone()
        return ((1 - t) * P + t * a2).sqrt()

    def pinv(b: torch.Tensor) -> torch.Tensor:
        return torch.where(b > 0, 1 / torch.where(b > 0, b, torch.ones_like(b)), torch.zeros_like(b))

    W = [torch.diag(B(l) * pinv(B(l - 1)) if l > 1 else B(1)) for l in range(1, L + 1)]
    return W, _zero_biases(W)


def interpolation_path_coefficient(s: torch.Tensor) -> float:
    """The limit of ``L (||theta||^2 - Lk - 2 log|A|_+)`` for :func:`interpolation_path`:
    ``sum_i (s_i - 1/s_i)^2 / 2`` over the non-zero ``s_i`` (our derivation: the sum of
    ``m_l/m_{l-1} - 1 - log(m_l/m_{l-1})`` with ``m(t) = 1 + t (s^2 - 1)`` tends to
    ``(1/2L) int_0^1 (m'/m)^2 dt``). The geometric path's is ``2 sum_i (log s_i)^2``, never larger
    because ``|sinh u| >= |u|``."""
    s = s[s > 0].to(D)
    return float(((s - 1 / s) ** 2).sum() / 2)


def planar_identity(O: torch.Tensor, L: int) -> Net:
    """The identity on a domain ``Omega`` with ``O Omega`` in the positive orthant and ``O^T O``
    the projection on ``span Omega`` (``O`` of shape ``(m, d)`` with orthonormal rows on the
    span): ``W_1 = O``, ``W_l = P_{Im O} = O O^T`` for ``1 < l < L``, ``W_L = O^T`` (Proposition 5's
    construction). Its squared norm is ``kL`` with ``k = rank O``. Needs ``L >= 2``."""
    if L < 2:
        raise ValueError(f"L must be >= 2, got {L}")
    O = O.to(D)
    W = [O] + [O @ O.T for _ in range(L - 2)] + [O.T]
    return W, _zero_biases(W)


def example20(L: int, gamma: float = 0.75) -> Net:
    """Example 20's network (``a = 1``, even ``L >= 4``, ``eps = L^{-gamma}``): ``L/2 - 1``
    layers ``diag(e^eps, e^eps, e^{-2 eps})``, one ``4 x 3`` layer adding the neuron
    ``e^{-(L-2) eps/2} (x_1 - x_2)``, one ``3 x 4`` layer merging it into the third coordinate with
    weight ``e^{-(L-2) eps}``, then ``L/2 - 1`` layers ``diag(e^{-eps}, e^{-eps}, e^{2 eps})``. On
    ``[0, 1]^3`` it computes ``f(x) = (x_1, x_2, x_3 + relu(x_1 - x_2))``. (The appendix labels the
    two middle layers ``l = L/2 + 2, ..., L``; they are layers ``L/2`` and ``L/2 + 1``.)"""
    if L < 4 or L % 2:
        raise ValueError(f"L must be even and >= 4, got {L}")
    eps = L ** (-gamma)
    h = (L - 2) / 2
    first = torch.diag(torch.tensor([math.exp(eps), math.exp(eps), math.exp(-2 * eps)], dtype=D))
    last = torch.diag(torch.tensor([math.exp(-eps), math.exp(-eps), math.exp(2 * eps)], dtype=D))
    up = torch.zeros(4, 3, dtype=D)
    up[:3, :3] = torch.eye(3, dtype=D)
    up[3, 0], up[3, 1] = math.exp(-h * eps), -math.exp(-h * eps)
    down = torch.zeros(3, 4, dtype=D)
    down[:3, :3] = torch.eye(3, dtype=D)
    down[2, 3] = math.exp(-2 * h * eps)
    W = [first.clone() for _ in range(L // 2 - 1)] + [up, down] + [last.clone() for _ in range(L // 2 - 1)]
    return W, _zero_biases(W)


def example20_target(X: torch.Tensor) -> torch.Tensor:
    """``f(x, y, z) = (x, y, z + relu(x - y))``, Example 20's function with ``a = 1``."""
    return torch.stack([X[:, 0], X[:, 1], X[:, 2] + torch.relu(X[:, 0] - X[:, 1])], dim=1)


def example20_sqnorm(L: float, gamma: float = 0.75) -> float:
    """The exact ``||theta||^2 - 3L`` of :func:`example20` (our derivation; the appendix's display
    drops the factor ``(L - 2)/2``):
    ``(L-2)/2 [4 cosh(2 eps) + 2 cosh(4 eps) - 6] + 2 e^{-(L-2) eps} + e^{-2(L-2) eps}``, which is
    ``12 L^{1 - 2 gamma} + o(L^{1 - 2 gamma})``."""
    return example20_scaled_excess(L, gamma) * L ** (1 - 2 * gamma)


def example20_scaled_excess(L: float, gamma: float = 0.75) -> float:
    """``(||theta||^2 - 3L) L^{2 gamma - 1}`` of :func:`example20`, which tends to 12, written so
    that it stays accurate for astronomically large ``L`` (a float): with ``eps = L^{-gamma}``,
    ``(L-2)/(2L) [8 (sinh(eps)/eps)^2 + 4 (sinh(2 eps)/eps)^2]`` plus the boundary terms
    ``(2 e^{-(L-2) eps} + e^{-2(L-2) eps}) L^{2 gamma - 1}``."""
    eps = L ** (-gamma)
    shc = lambda t: math.sinh(t) / t if t > 1e-8 else 1.0 + t * t / 6
    bulk = (L - 2) / (2 * L) * (8 * shc(eps) ** 2 + 16 * shc(2 * eps) ** 2)
    log_scale = (2 * gamma - 1) * math.log(L)
    return bulk + 2 * math.exp(log_scale - (L - 2) * eps) + math.exp(log_scale - 2 * (L - 2) * eps)


def example20_settling_depth(gamma: float, rtol: float = 0.05, limit: float = 12.0) -> float:
    """The smallest ``L = 2^j`` (``j >= 2``) from which :func:`example20_scaled_excess` stays within
    ``rtol`` of its limit 12 (checked on every power of two up to ``2^1000``; ``inf`` if none): the
    boundary terms ``2 e^{-(L-2) eps} + e^{-2(L-2) eps}`` decay only like ``exp(-L^{1 - gamma})``, so
    for ``gamma`` near 1 the limit is reached only at astronomically large depths."""
    js = range(2, 1001)
    ok = [abs(example20_scaled_excess(2.0 ** j, gamma) / limit - 1) <= rtol for j in js]
    for i, j in enumerate(js):
        if all(ok[i:]):
            return 2.0 ** j
    return math.inf


def parallel_sum(f: Net, g: Net) -> Net:
    """A network computing ``f + g`` from two networks of equal depth: first layers stacked,
    hidden layers block-diagonal, last layers side by side, output biases added. Its squared norm
    is ``||theta_f||^2 + ||theta_g||^2`` up to the output-bias term ``||b^f_L + b^g_L||^2 -
    ||b^f_L||^2 - ||b^g_L||^2``."""
    (Wf, bf), (Wg, bg) = f, g
    if len(Wf) != len(Wg):
        raise ValueError(f"parallel_sum needs equal depths, got {len(Wf)} and {len(Wg)}")
    L = len(Wf)
    if L == 1:
        return [Wf[0] + Wg[0]], [bf[0] + bg[0]]
    W = [torch.cat([Wf[0], Wg[0]], 0)]
    b = [torch.cat([bf[0], bg[0]])]
    for l in range(1, L - 1):
        W.append(torch.block_diag(Wf[l], Wg[l]))
        b.append(torch.cat([bf[l], bg[l]]))
    W.append(torch.cat([Wf[-1], Wg[-1]], 1))
    b.append(bf[-1] + bg[-1])
    return W, b


def stack(f: Net, g: Net) -> Net:
    """A network computing ``f o g`` of depth ``L_f + L_g``: the layers of ``g`` then those of
    ``f``, with a ReLU at the seam. It computes ``f(g(x))`` wherever ``g(x) >= 0`` entrywise, and
    its squared norm is exactly ``||theta_f||^2 + ||theta_g||^2``."""
    (Wf, bf), (Wg, bg) = f, g
    return [*Wg, *Wf], [*bg, *bf]
