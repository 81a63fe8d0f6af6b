"""The bounds of Bantzis, Simon & Jacot's Section 3, as functions of measured quantities.

- Theorem 3.1: with ``kappa = ||X||_F ||G||_F / s*`` and ``c = kappa sqrt(2 log kappa)``, every
  layer ``l`` of an optimal escape direction has ``tau(W_l), tau(Z^sigma_l), nu_l <=
  B(l) = 8 c l^(-1/2) / (1 - c l^(-1/2))`` (when ``c l^(-1/2) < 1``). ``B(l) < 1`` iff
  ``l > 81 c^2``.
- Proposition 3.3: for inputs ``u v^T + E`` (``u, v >= 0``, ``||E||_F <= eps``) the optimum has
  every ratio ``<= 8 ||G||_F eps / (s* - ||G||_F eps)``.
- Proposition 3.4: any ``theta`` with ``||theta||^2 <= L`` and ``Tr[G^T Z_L] = -s_0 < 0`` has
  ``sum_{l=0}^{L-1} log srank(Z^sigma_l) <= 2 log(||X||_F ||G||_F / s_0)`` (the key inequality),
  hence at least ``(1-p) L`` layers among ``0..L-1`` with
  ``tau(Z^sigma_l) <= 2 log(||X||_F ||G||_F / s_0) / (p L)``.

A speed ``s`` measured on a solver's output is at most ``s*``; ``kappa`` and the bounds computed
from it are then larger, i.e. conservative for Theorem 3.1 and Proposition 3.3.
"""

from __future__ import annotations

import math

import torch


def kappa(X: torch.Tensor, G: torch.Tensor, s: float) -> float:
    """``||X||_F ||G||_F / s`` (at least 1 for an escape speed ``s``: ``|L_0| <= ||X|| ||G||`` on
    the sphere)."""
    return float(X.norm() * G.norm()) / float(s)


def speed_upper_bound(X: torch.Tensor, G: torch.Tensor) -> float:
    """An upper bound on the optimal escape speed ``s*`` of any bias-free ReLU network of any
    depth and widths: ``min(||X||_op ||G||_F, ||X||_F ||G||_op)``.

    On the sphere ``||theta||^2 = L``, AM-GM gives ``prod_l ||W_l||_F <= 1``. Peeling the first
    layer, ``||Y||_F <= ||X W_1^T||_F prod_{l>1} ||W_l||_op <= ||X||_op``, so
    ``|Tr[G^T Y]| <= ||G||_F ||X||_op``; peeling the last one, ``Tr[G^T Z W_L^T] = <G W_L, Z>
    <= ||G||_op ||W_L||_F ||Z^sigma_{L-1}||_F <= ||G||_op ||X||_F``."""
    x_f, g_f = float(X.norm()), float(G.norm())
    x_op, g_op = float(torch.linalg.matrix_norm(X, 2)), float(torch.linalg.matrix_norm(G, 2))
    return min(x_op * g_f, x_f * g_op)


def kappa_lower_bound(X: torch.Tensor, G: torch.Tensor) -> float:
    """A rigorous lower bound on Theorem 3.1's ``kappa = ||X||_F ||G||_F / s*``:
    ``max(||X||_F / ||X||_op, ||G||_F / ||G||_op)`` (from :func:`speed_upper_bound`). Since
    ``c(kappa)`` grows with ``kappa``, ``81 c(kappa_lo)^2`` is a lower bound on the layer below
    which the theorem says nothing, whatever the solver finds (a solver's speed ``s <= s*`` gives
    an *upper* bound on ``kappa`` instead)."""
    return float(X.norm() * G.norm()) / speed_upper_bound(X, G)


def theorem31_c(kap: float) -> float:
    """``c = kappa sqrt(2 log kappa)`` (0 for ``kappa <= 1``)."""
    return kap * math.sqrt(2 * math.log(kap)) if kap > 1 else 0.0


def theorem31_bound(layer: int | torch.Tensor, c: float) -> torch.Tensor:
    """``8 c l^(-1/2) / (1 - c l^(-1/2))``; ``inf`` where ``c l^(-1/2) >= 1`` (no bound)."""
    x = torch.as_tensor(layer, dtype=torch.float64) ** -0.5
    val = 8 * c * x / (1 - c * x)
    return torch.where(c * x < 1, val, torch.full_like(val, float("inf")))


def theorem31_appendix_bound(layer: int | torch.Tensor, X: torch.Tensor, G: torch.Tensor,
                             s: float) -> torch.Tensor:
    """The bound as written in Theorem A.7: ``8 c' l^(-1/2) / (s* - c' l^(-1/2))`` with
    ``c' = sqrt(2) ||X|| ||G|| sqrt(log ||X|| + log ||G|| - log s*)``; equal to
    :func:`theorem31_bound` with ``c = c' / s*``."""
    nx, ng = float(X.norm()), float(G.norm())
    cp = math.sqrt(2) * nx * ng * math.sqrt(max(math.log(nx) + math.log(ng) - math.log(s), 0.0))
    x = torch.as_tensor(layer, dtype=torch.float64) ** -0.5
    val = 8 * cp * x / (s - cp * x)
    return torch.where(cp * x < s, val, torch.full_like(val, float("inf")))


def vacuity_depth(c: float) -> float:
    """``81 c^2``: the bound of Theorem 3.1 is below 1 exactly for layers ``l > 81 c^2``."""
    return 81 * c * c


def prop33_bound(G: torch.Tensor, s: float, eps: float) -> float:
    """``8 ||G||_F eps / (s - ||G||_F eps)``; ``inf`` when ``||G||_F eps >= s``."""
    g = float(G.norm())
    return 8 * g * eps / (s - g * eps) if g * eps < s else float("inf")


def prop34_sides(srank_Z: torch.Tensor, X: torch.Tensor, G: torch.Tensor, s0: torch.Tensor | float
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """``(sum_{l=0}^{L-1} log srank(Z^sigma_l), 2 log(||X|| ||G|| / s_0))``: the two sides of the
    key inequality of Proposition 3.4 (``srank_Z`` as in
    :class:`~implicit_bias.saddle_to_saddle.structure.LayerStructure`)."""
    lhs = torch.log(srank_Z).sum(-1)
    rhs = 2 * torch.log(float(X.norm() * G.norm()) / torch.as_tensor(s0, dtype=torch.float64))
    return lhs, rhs


def prop34_threshold(X: torch.Tensor, G: torch.Tensor, s0: float, p: float, depth: int) -> float:
    """``2 log(||X|| ||G|| / s_0) / (p L)``: Proposition 3.4's bound on ``tau(Z^sigma_l)``, met
    by at least ``(1-p) L`` of the layers ``0..L-1``."""
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1), got {p}")
    return 2 * math.log(float(X.norm() * G.norm()) / s0) / (p * depth)
