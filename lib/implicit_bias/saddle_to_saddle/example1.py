"""Example 1 of Bantzis, Simon & Jacot: eight points on the unit circle with alternating loss
gradients, where the fastest escape direction of a depth-3 network is not rank one.

Data: ``x_j = (sin(2 pi j / 8), cos(2 pi j / 8))``, ``G_j = (-1)^j`` for ``j = 1..8`` (one
output; rows are samples). The axis points (even ``j``) have ``G = +1``, the diagonal points
``G = -1``.
"""

from __future__ import annotations

import math

import torch

#: The best speed of a network whose layers are all rank one: sqrt(2) - 1 (Example 1, App. C.1).
RANK_ONE_SPEED = math.sqrt(2.0) - 1.0
#: The speed of the rank-two construction of Eq. (2).
RANK_TWO_SPEED = 0.5


def circle_data(n: int = 8, dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """``(X, G)``: ``X`` ``(n, 2)`` with rows ``(sin(2 pi j/n), cos(2 pi j/n))`` and ``G`` ``(n, 1)``
    with entries ``(-1)^j``, ``j = 1..n``."""
    j = torch.arange(1, n + 1, dtype=dtype)
    X = torch.stack([torch.sin(2 * math.pi * j / n), torch.cos(2 * math.pi * j / n)], 1)
    G = ((-1.0) ** j).unsqueeze(1)
    return X, G


def eq2_weights(w3: float = -1.0, dtype: torch.dtype = torch.float64) -> list[torch.Tensor]:
    """The weights of Eq. (2): ``W_1 = (1/2)[[1,0],[0,1],[-1,0],[0,-1]]``,
    ``W_2 = (1/2)[1,-1,1,-1]``, ``W_3 = [w3]``. The paper prints ``W_3 = [1]``; with
    ``G_j = (-1)^j`` that gives ``L_0 = +1/2`` (an ascent direction), and ``w3 = -1`` gives the
    escape direction of speed 1/2. The network computes ``w3 * sigma(|x_1| - |x_2|) / 4``."""
    W1 = 0.5 * torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]], dtype=dtype)
    W2 = 0.5 * torch.tensor([[1.0, -1.0, 1.0, -1.0]], dtype=dtype)
    W3 = torch.tensor([[float(w3)]], dtype=dtype)
    return [W1, W2, W3]


def embed(weights: list[torch.Tensor], width: int) -> list[torch.Tensor]:
    """Zero-pad a network's hidden layers to ``width`` (same function, same norm)."""
    L = len(weights)
    out = []
    for l, W in enumerate(weights):
        rows = W.shape[0] if l == L - 1 else width
        cols = W.shape[1] if l == 0 else width
        if rows < W.shape[0] or cols < W.shape[1]:
            raise ValueError(f"width {width} is smaller than the network's hidden width")
        P = torch.zeros(rows, cols, dtype=W.dtype)
        P[: W.shape[0], : W.shape[1]] = W
        out.append(P)
    return out


def rank_one_speed(phi: torch.Tensor, X: torch.Tensor | None = None, G: torch.Tensor | None = None
                   ) -> torch.Tensor:
    """``|sum_j G_j sigma(w . x_j)|`` for the unit vector ``w = (cos phi, sin phi)``: the speed of
    the width-one network ``x -> +-sigma(w . x)`` with unit layers (the rank-one case of
    Example 1), computed directly on the data."""
    if X is None or G is None:
        X, G = circle_data(dtype=phi.dtype)
    w = torch.stack([torch.cos(phi), torch.sin(phi)], -1)                  # (..., 2)
    return (torch.relu(w @ X.T) * G[:, 0]).sum(-1).abs()


def eq6_speed(phi: torch.Tensor) -> torch.Tensor:
    """Eq. (6), the paper's closed form of the same speed, with ``xi = phi mod pi/4``:
    ``|cos(xi + pi/4) - cos(xi) + cos(xi - pi/4) - cos(xi - pi/2)|``."""
    xi = torch.remainder(phi, math.pi / 4)
    q = math.pi / 4
    return (torch.cos(xi + q) - torch.cos(xi) + torch.cos(xi - q) - torch.cos(xi - 2 * q)).abs()
