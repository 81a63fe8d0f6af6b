"""Measures for the symmetry-learning experiment (Section 5, Figure 2).

- :func:`count_crossings`: proper intersections between segments of different 2-D polylines
  (gradient-descent paths drawn in a learned 2-D representation cross rarely if the dynamics
  there are self-consistent);
- :func:`orbit_ratio`: how much a representation moves under rotations about the symmetry axis,
  relative to how much it moves between independent inputs (0: orbits collapsed);
- :func:`plane_grid`: points ``c w + s e_1 + t e_2`` on a plane orthogonal to ``w``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .tasks import rotation_about

D = torch.float64


def _orient(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    return (b[..., 0] - a[..., 0]) * (c[..., 1] - a[..., 1]) - (b[..., 1] - a[..., 1]) * (c[..., 0] - a[..., 0])


def count_crossings(paths: torch.Tensor) -> int:
    """Number of pairs of segments from *different* polylines that cross properly (their
    interiors intersect at one point). ``paths`` is ``(n_paths, n_points, 2)``."""
    n, m, _ = paths.shape
    p, q = paths[:, :-1].reshape(-1, 2), paths[:, 1:].reshape(-1, 2)
    owner = torch.arange(n).repeat_interleave(m - 1)
    a1, a2 = p.unsqueeze(1), q.unsqueeze(1)          # segments as rows
    b1, b2 = p.unsqueeze(0), q.unsqueeze(0)          # and as columns
    cross = ((_orient(a1, a2, b1) * _orient(a1, a2, b2) < 0) & (_orient(b1, b2, a1) * _orient(b1, b2, a2) < 0))
    different = owner.unsqueeze(1) != owner.unsqueeze(0)
    return int((cross & different).sum()) // 2


def orbit_ratio(rep: Callable[[torch.Tensor], torch.Tensor], X: torch.Tensor, w: torch.Tensor,
                generator: torch.Generator) -> float:
    """``median ||rep(Q x) - rep(x)|| / median ||rep(x') - rep(x)||`` over the rows ``x`` of
    ``X``, with ``Q`` a random rotation about ``w`` (one per row) and ``x'`` a random other row.
    Near 0 when the representation is invariant under the rotations, near 1 when it does not
    distinguish rotated copies from other inputs."""
    n = X.shape[0]
    Q = torch.stack([rotation_about(w, generator) for _ in range(n)])
    XQ = (Q @ X.unsqueeze(-1)).squeeze(-1)
    other = X[torch.randperm(n, generator=generator)]
    base = rep(X)
    moved = (rep(XQ) - base).norm(dim=-1).median()
    apart = (rep(other) - base).norm(dim=-1).median()
    return float(moved / apart)


def plane_grid(w: torch.Tensor, offset: float, half_width: float, n: int,
               generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(points, s, t)``: an ``n x n`` grid ``offset w + s e_1 + t e_2`` with ``e_1, e_2`` a random
    orthonormal pair orthogonal to ``w`` and ``s, t`` in ``[-half_width, half_width]``; points are
    ``(n * n, d)``."""
    d = w.shape[0]
    basis, _ = torch.linalg.qr(torch.cat([w.unsqueeze(1), torch.randn(d, 2, generator=generator, dtype=D)], 1))
    e1, e2 = basis[:, 1], basis[:, 2]
    s = torch.linspace(-half_width, half_width, n, dtype=D)
    S, T = torch.meshgrid(s, s, indexing="ij")
    points = offset * w + S.reshape(-1, 1) * e1 + T.reshape(-1, 1) * e2
    return points, S, T


def knn_r2(codes: torch.Tensor, targets: torch.Tensor, codes_test: torch.Tensor, targets_test: torch.Tensor,
           k: int = 5) -> float:
    """How well low-dimensional codes determine a target: predict each test target by the mean of
    the targets of the ``k`` nearest training codes (Euclidean) and return ``R^2`` averaged over
    the target's coordinates (1: a function of the codes; 0: no better than the mean)."""
    dist = torch.cdist(codes_test, codes)
    idx = dist.topk(k, largest=False).indices
    pred = targets[idx].mean(1)
    sse = (pred - targets_test).pow(2).sum(0)
    sst = (targets_test - targets_test.mean(0)).pow(2).sum(0)
    return float((1 - sse / sst).mean())
