"""The data of Jacot's experiments (`implicit_bias.bottleneck.tasks`)."""

from __future__ import annotations

import math

import pytest
import torch

from implicit_bias import spectra
from implicit_bias.bottleneck import tasks

D = torch.float64


def test_bottleneck_rank_task_shapes_scaling_and_rank() -> None:
    t = tasks.bottleneck_rank_task(64, n_test=32, seed=0)
    assert t.X.shape == (64, 20) and t.Y.shape == (64, 20) and t.X_test.shape == (32, 20)
    assert t.Y.pow(2).sum(1).mean().item() == pytest.approx(1.0)
    assert torch.allclose(t.X.mean(0), torch.zeros(20, dtype=D), atol=1e-12)
    # y depends on z_1, z_2 only: the Jacobian of z -> y has rank <= 2 (here exactly 2)
    again = tasks.bottleneck_rank_task(64, n_test=32, seed=0)
    assert torch.equal(again.X, t.X)
    assert not torch.equal(tasks.bottleneck_rank_task(64, n_test=32, seed=1).X, t.X)
    with pytest.raises(ValueError):
        tasks.bottleneck_rank_task(8, k=9)


def test_symmetry_task_dynamics_and_invariance() -> None:
    t = tasks.symmetry_task(50, d=6, T=5, eta=0.02, noise=0.0, seed=0)
    assert t.V.shape == (50, 6, 6) and t.Y.shape == (50, 5) and t.U.shape == (50, 2)
    # one step by hand
    v = t.V0[0]
    M = torch.outer(t.w, t.w)
    step = v - 0.02 * 4 * (torch.outer(v, v) - M) @ v
    assert torch.allclose(t.V[0, 1], step)
    # E = 0: the targets are invariant under rotations about w
    Q = tasks.rotation_about(t.w, torch.Generator().manual_seed(3))
    assert torch.allclose(Q @ t.w, t.w) and torch.allclose(Q @ Q.T, torch.eye(6, dtype=D))
    assert torch.det(Q).item() == pytest.approx(1.0)
    rot = tasks.symmetry_run(t.V0 @ Q.T, 5, 0.02, t.w, t.E)
    assert torch.allclose(rot.Y, t.Y, atol=1e-12)
    assert torch.allclose(tasks.summary_statistics(t.V0 @ Q.T, t.w), t.U)
    # cost in terms of u: ||v||^4 - 2 (w^T v)^2 + 1 when E = 0
    u = t.U
    C0 = tasks.symmetry_cost(t.V0, t.w, t.E)
    assert torch.allclose(C0, (u.sum(1)) ** 2 - 2 * u[:, 0] + 1)
