"""Reading the bottleneck structure off trained networks.

- :func:`middle_index` / :func:`layer_ranks`: Jacot's learned rank, the number of singular values
  above 0.1 of the middle weight matrix ``W_{ceil(L/2)}``;
- :func:`bottleneck_run`: the longest run of consecutive layers that are close to a rank-``k``
  partial isometry (rank ``k`` at threshold 0.1 and ``d_k(W_l) <= tau``), with its ``d_k`` profile;
- :func:`affine_fit`: least-squares ``||theta||^2 = a L + b`` over a range of depths;
- :func:`constant_runs`: the ranges of consecutive depths with the same learned rank;
- :func:`negative_mass` and :func:`representation_singular_values`: the representation-side
  checks (ReLU acting as the identity in the bottleneck; ``k``-dimensional pre-activations).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .. import spectra


def middle_index(L: int) -> int:
    """0-based index of the middle weight matrix ``W_{ceil(L/2)}`` of a depth-``L`` network."""
    return (L + 1) // 2 - 1


def layer_ranks(weights: Sequence[torch.Tensor], tol: float = 0.1) -> torch.Tensor:
    """Number of singular values above ``tol`` (absolute) of every weight matrix: ``(..., L)``."""
    return torch.stack([spectra.thresholded_rank(W, tol, "abs") for W in weights], -1)


@dataclass
class BottleneckRun:
    """Layers ``start..stop`` (1-based, inclusive) form the longest run with ``rank_{0.1}(W_l) = k``
    and ``d_k(W_l) <= tau``; ``length = 0`` when there is none. ``d[l-1] = d_k(W_l)``."""

    k: int
    start: int
    stop: int
    d: torch.Tensor

    @property
    def length(self) -> int:
        return 0 if self.start == 0 else self.stop - self.start + 1


def bottleneck_run(weights: Sequence[torch.Tensor], k: int, tau: float = 0.1, tol: float = 0.1) -> BottleneckRun:
    """The longest run of consecutive layers of one network that are within ``tau`` (in ``d_k``)
    of a rank-``k`` partial isometry and have exactly ``k`` singular values above ``tol``."""
    d = torch.stack([spectra.partial_isometry_distance(W, k) if min(W.shape) >= k
                     else torch.tensor(float("inf"), dtype=W.dtype) for W in weights])
    ranks = layer_ranks(weights, tol)
    ok = ((ranks == k) & (d <= tau)).tolist()
    best, cur_start, start, stop = 0, 0, 0, 0
    for l, flag in enumerate(ok, start=1):
        if flag:
            cur_start = cur_start or l
            if l - cur_start + 1 > best:
                best, start, stop = l - cur_start + 1, cur_start, l
        else:
            cur_start = 0
    return BottleneckRun(k, start, stop, d)


def affine_fit(depths: Sequence[float], values: Sequence[float]) -> tuple[float, float]:
    """``(slope, intercept)`` of the least-squares line through ``(depths, values)`` (needs at
    least two distinct depths)."""
    x, y = np.asarray(depths, dtype=float), np.asarray(values, dtype=float)
    if len(set(x.tolist())) < 2:
        raise ValueError("an affine fit needs at least two distinct depths")
    slope, intercept = np.polyfit(x, y, 1)
    return float(slope), float(intercept)


def negative_mass(pre: torch.Tensor) -> torch.Tensor:
    """``||z - relu(z)||_F / ||z||_F`` over the samples (rows) of a pre-activation matrix ``z``:
    0 when the ReLU acts as the identity on every sample."""
    return (pre - torch.relu(pre)).flatten(-2).norm(dim=-1) / pre.flatten(-2).norm(dim=-1)


def representation_singular_values(H: torch.Tensor) -> torch.Tensor:
    """Singular values of the *uncentred* representation ``H / sqrt(n)`` (``n`` samples as rows):
    Corollary 8's ``s_i(alpha_l(X) / sqrt(N))``."""
    return spectra.singular_values(H / H.shape[-2] ** 0.5)


@dataclass
class AffineLaw:
    """The least-squares line ``value = slope L + intercept`` through one value per depth, its
    residual RMS, and the slopes of the lines fitted with each depth left out in turn."""

    depths: list[float]
    values: list[float]
    slope: float
    intercept: float
    rms: float
    loo_slopes: list[float]

    def max_loo_deviation(self, target: float) -> float:
        """The largest ``|slope - target|`` over the full and the leave-one-out fits."""
        return max(abs(s - target) for s in [self.slope, *self.loo_slopes])


def affine_law(depths: Sequence[float], values: Sequence[float]) -> AffineLaw:
    """:func:`affine_fit` through ``(depths, values)`` with its residual RMS and leave-one-out
    slopes (needs at least three distinct depths for the leave-one-out fits)."""
    x, y = [float(v) for v in depths], [float(v) for v in values]
    if len(set(x)) < 3:
        raise ValueError("an affine law with leave-one-out fits needs at least three distinct depths")
    slope, intercept = affine_fit(x, y)
    resid = np.asarray(y) - (slope * np.asarray(x) + intercept)
    loo = [affine_fit(x[:i] + x[i + 1:], y[:i] + y[i + 1:])[0] for i in range(len(x))]
    return AffineLaw(x, y, slope, intercept, float(np.sqrt(np.mean(resid**2))), loo)


def loglog_slope(x: Sequence[float], y: Sequence[float]) -> float:
    """Least-squares slope of ``log y`` against ``log x`` (all values positive): the exponent
    ``a`` of a power law ``y ~ x^a``."""
    lx, ly = np.log(np.asarray(x, dtype=float)), np.log(np.asarray(y, dtype=float))
    if len(set(lx.tolist())) < 2:
        raise ValueError("a log-log slope needs at least two distinct x")
    return float(np.polyfit(lx, ly, 1)[0])


def constant_runs(grid: Sequence[int], values: Mapping[int, int]) -> list[list[int]]:
    """Maximal runs of consecutive points of ``grid`` that all have a value in ``values`` and the
    same one (points without a value break a run), in grid order: the ranges of depths of constant
    learned rank of Figure 1."""
    runs: list[list[int]] = []
    for i, L in enumerate(grid):
        if L not in values:
            continue
        if runs and i > 0 and runs[-1][-1] == grid[i - 1] and values[grid[i - 1]] == values[L]:
            runs[-1].append(L)
        else:
            runs.append([L])
    return runs
