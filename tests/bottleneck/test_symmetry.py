"""Measures of `implicit_bias.bottleneck.symmetry` on hand-made cases."""

from __future__ import annotations

import pytest
import torch

from implicit_bias.bottleneck import symmetry, tasks

D = torch.float64


def test_count_crossings_on_hand_made_paths() -> None:
    cross = torch.tensor([[[0.0, 0.0], [2.0, 2.0]], [[0.0, 2.0], [2.0, 0.0]]], dtype=D)   # an X
    assert symmetry.count_crossings(cross) == 1
    parallel = torch.tensor([[[0.0, 0.0], [2.0, 0.0]], [[0.0, 1.0], [2.0, 1.0]]], dtype=D)
    assert symmetry.count_crossings(parallel) == 0
    # a single path crossing itself does not count (only different paths)
    loop = torch.tensor([[[0.0, 0.0], [2.0, 2.0], [2.0, 0.0], [0.0, 2.0]]], dtype=D)
    assert symmetry.count_crossings(loop) == 0
    # two zig-zags crossing three times
    a = torch.tensor([[0.0, 0.0], [1.0, 2.0], [2.0, 0.0], [3.0, 2.0]], dtype=D)
    b = torch.tensor([[0.0, 1.0], [3.0, 1.0]], dtype=D)
    b = torch.stack([b[0], b[0] + (b[1] - b[0]) / 3, b[0] + 2 * (b[1] - b[0]) / 3, b[1]])
    assert symmetry.count_crossings(torch.stack([a, b])) == 3


def test_orbit_ratio_invariant_and_not() -> None:
    g = torch.Generator().manual_seed(0)
    t = tasks.symmetry_task(200, d=6, T=3, noise=0.0, seed=1)
    invariant = lambda X: tasks.summary_statistics(X, t.w)            # exactly invariant
    assert symmetry.orbit_ratio(invariant, t.V0, t.w, g) < 1e-10
    identity = lambda X: X
    assert symmetry.orbit_ratio(identity, t.V0, t.w, g) > 0.5


def test_plane_grid_is_orthogonal_to_w() -> None:
    g = torch.Generator().manual_seed(2)
    w = torch.tensor([0.0, 0.0, 1.0, 0.0], dtype=D)
    pts, S, T = symmetry.plane_grid(w, 0.5, 1.0, 5, g)
    assert pts.shape == (25, 4) and S.shape == (5, 5)
    assert torch.allclose(pts @ w, torch.full((25,), 0.5, dtype=D))
    assert torch.allclose((pts - 0.5 * w).norm(dim=1) ** 2, (S**2 + T**2).reshape(-1))


def test_knn_r2_detects_a_function_of_the_codes() -> None:
    g = torch.Generator().manual_seed(3)
    Z = torch.rand(2000, 2, generator=g, dtype=D)
    Zt = torch.rand(300, 2, generator=g, dtype=D)
    f = lambda z: torch.stack([z[:, 0] ** 2 + z[:, 1], torch.sin(3 * z[:, 1])], 1)
    assert symmetry.knn_r2(Z, f(Z), Zt, f(Zt)) > 0.98
    noise = torch.rand(2000, 2, generator=g, dtype=D)
    assert symmetry.knn_r2(noise, f(Z), torch.rand(300, 2, generator=g, dtype=D), f(Zt)) < 0.2
