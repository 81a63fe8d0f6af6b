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

Also here: :class:`NearlyRankOne`, the data of Proposition 3.3 (``X = v u^T + eps E``,
``G = -v g^T``) on which Theorem 3.1 is non-vacuous, and :func:`prop34_check`, both sides of
Proposition 3.4 and its layer count on a batch of networks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..spectra import tail_energy
from .localized import speed
from .structure import layer_structure


def kappa(X: torch.Tensor, G: torch.Tensor, s: float) -> float:
    """``||X||_F ||G||_F / s`` (at least 1 for an escape speed ``s``: ``|L_0| <= ||X|| ||G||`` on
    the sphere)."""
    return float(X.norm() * G.norm()) / float(s)


def theorem31_constants(X: torch.Tensor, G: torch.Tensor, s: float) -> tuple[float, float, float]:
    """``(kappa, c, 81 c^2)`` of Theorem 3.1 for data ``X``, ``G`` and a speed ``s``
    (:func:`kappa`, :func:`theorem31_c`, :func:`vacuity_depth`)."""
    k = kappa(X, G, s)
    c = theorem31_c(k)
    return k, c, vacuity_depth(c)


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


@dataclass
class Prop34Check:
    """Proposition 3.4 on a batch of networks: ``gap``, the largest ``lhs - rhs`` of the key
    inequality (``<= 0`` in the ball); ``failures``, summed over ``p``, the number of networks with
    fewer than ``(1-p) L`` layers under the threshold; ``points``, the networks with ``L_0 < 0``
    (the others are dropped)."""

    gap: float
    failures: int
    points: int


def prop34_check(weights: Sequence[torch.Tensor], X: torch.Tensor, G: torch.Tensor,
                 ps: Sequence[float] = (0.25, 0.5, 0.75)) -> Prop34Check:
    """Evaluate the key inequality and the layer count of Proposition 3.4 (for each ``p`` in
    ``ps``: at least ``L - floor(p L)`` of the layers ``0..L-1`` with ``tau(Z^sigma_l) <=``
    :func:`prop34_threshold`) on the networks stacked along the first axis of ``weights`` whose
    localized loss is negative."""
    s0 = speed(weights, X, G)
    keep = s0 > 0
    Ws = [W[keep] for W in weights]
    s0 = s0[keep]
    st = layer_structure(Ws, X)
    lhs, rhs = prop34_sides(st.srank_Z, X, G, s0)
    tau_Z = torch.cat([torch.zeros(len(s0), 1, dtype=s0.dtype) + float(tail_energy(X)), st.tau_Z], -1)
    L = len(Ws)
    bad = 0
    for p in ps:
        thr = 2 * torch.log(float(X.norm() * G.norm()) / s0) / (p * L)
        bad += int(((tau_Z <= thr[:, None]).sum(-1) < L - math.floor(p * L)).sum())
    return Prop34Check(float((lhs - rhs).max()), bad, int(keep.sum()))


@dataclass
class NearlyRankOne:
    """Non-negative unit vectors ``u`` (``d_in``), ``v`` (``N``), ``g`` (``d_out``) and a noise
    matrix ``E`` (``(N, d_in)``, unit Frobenius norm): the inputs ``v u^T + eps E`` of
    Proposition 3.3 (one sample per row) and the aligned gradient ``-v g^T``, for which
    ``kappa`` is close to 1 and Theorem 3.1's bound is informative."""

    u: torch.Tensor
    v: torch.Tensor
    g: torch.Tensor
    E: torch.Tensor

    @classmethod
    def sample(cls, n: int, d_in: int, d_out: int, generator: torch.Generator | None = None,
               dtype: torch.dtype = torch.float64) -> NearlyRankOne:
        """``u, v, g`` uniform on ``[0, 1)`` then normalised, ``E`` Gaussian then normalised (drawn
        in the order ``u, v, g, E``)."""
        u = torch.rand(d_in, generator=generator, dtype=dtype)
        v = torch.rand(n, generator=generator, dtype=dtype)
        g = torch.rand(d_out, generator=generator, dtype=dtype)
        E = torch.randn(n, d_in, generator=generator, dtype=dtype)
        return cls(u / u.norm(), v / v.norm(), g / g.norm(), E / E.norm())

    @property
    def rank_one(self) -> torch.Tensor:
        """``v u^T``."""
        return torch.outer(self.v, self.u)

    def X(self, eps: float) -> torch.Tensor:
        """``v u^T + eps E``."""
        return self.rank_one + eps * self.E

    @property
    def G(self) -> torch.Tensor:
        """``-v g^T``."""
        return -torch.outer(self.v, self.g)
