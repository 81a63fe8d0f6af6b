"""Staircase share on a log-step axis, plateaus of absolute length, and weak balancedness."""

from __future__ import annotations

import math

import pytest
import torch

from implicit_bias import models, train
from implicit_bias.saddle_to_saddle import staircase


def _steps() -> torch.Tensor:
    return torch.unique(torch.logspace(0, 4, 400).round())


def _sigmoid_drop(t: torch.Tensor, at: float, width: float) -> torch.Tensor:
    return torch.sigmoid((t - at) / width)


def test_staircase_share_separates_a_staircase_from_smooth_decays() -> None:
    t = _steps()
    stairs = 2.3 - 0.8 * _sigmoid_drop(t, 800, 20) - 1.2 * _sigmoid_drop(t, 4000, 60)
    expo = 2.3 * torch.exp(-t / 1500)
    power = 2.3 / (1 + t / 50) ** 0.5
    assert staircase.staircase_share(t, stairs).share > 0.9
    assert staircase.staircase_share(t, expo).share < 0.2
    assert staircase.staircase_share(t, power).share < 0.2
    # scale-free: the same staircase on a step axis ten times longer, and a rescaled loss
    assert staircase.staircase_share(10 * t, 3 * stairs + 1).share == pytest.approx(
        staircase.staircase_share(t, stairs).share, abs=0.05)
    assert staircase.staircase_share(t, torch.full_like(t, 2.3)).share == 0.0


def test_plateaus_abs_uses_an_absolute_length() -> None:
    t = torch.arange(0, 7001, 25, dtype=torch.float64)
    early = 2.3 - 1.5 * _sigmoid_drop(t, 300, 15)           # plateau of 300 steps at the origin
    late = 2.3 - 1.5 * _sigmoid_drop(t, 2000, 40)           # plateau of 2000 steps
    assert staircase.plateaus_abs(t, late, min_steps=500).n_saddles >= 1
    found = staircase.plateaus_abs(t, early, min_steps=500)
    assert not any(p[0] == 0 for p in found.saddles)
    with pytest.raises(ValueError):
        staircase.plateaus_abs(t, late, min_steps=10_000)


def test_neuron_imbalance_drifts_like_eta_squared() -> None:
    g = torch.Generator().manual_seed(0)
    X = torch.randn(64, 5, generator=g, dtype=torch.float64)
    y = torch.randint(0, 3, (64,), generator=g)
    W0 = models.gaussian_weights([5, 8, 8, 3], 0.3, (1,), generator=g, dtype=torch.float64)
    drifts = []
    for eta in (1e-3, 1e-2):
        Ws = [W.clone() for W in W0]
        train.train_norm_adaptive(Ws, X, y, loss="ce", steps=50, eta0=eta, radius=1.0, batch_size=None,
                                  progress=False)
        d = staircase.relative_imbalance_drift(W0, Ws)
        assert d.shape == (1,)
        drifts.append(float(d[0]))
    assert drifts[1] / drifts[0] == pytest.approx(100, rel=0.3)
    D = staircase.neuron_imbalance(W0)
    assert D.shape == (1, 2, 8)
    assert math.isclose(float(D[0, 0, 0]), float(W0[1][0, :, 0].pow(2).sum() - W0[0][0, 0].pow(2).sum()))



def test_junction_imbalance_drift_says_where_the_drift_is() -> None:
    """Junction by junction: the largest change of a neuron's imbalance over that layer's mean squared
    incoming norm; zero where nothing moved, and its largest change is the older statistic's."""
    g = torch.Generator().manual_seed(1)
    W0 = models.gaussian_weights([5, 8, 8, 8, 3], 0.3, (2,), generator=g, dtype=torch.float64)
    assert torch.all(staircase.junction_imbalance_drift(W0, W0) == 0)
    Ws = [W.clone() for W in W0]
    Ws[3] = 3 * Ws[3]                   # only the output layer moves: only the last junction drifts
    d = staircase.junction_imbalance_drift(W0, Ws)
    assert d.shape == (2, 3)
    assert torch.all(d[:, :2] == 0) and torch.all(d[:, 2] > 0)
    change = (staircase.neuron_imbalance(Ws) - staircase.neuron_imbalance(W0)).abs().amax(-1)     # (2, 3)
    scale = torch.stack([W.pow(2).sum(-1).mean(-1) for W in Ws[:-1]], -1)
    assert torch.allclose(d, change / scale)
    older = staircase.relative_imbalance_drift(W0, Ws) * scale.mean(-1)
    assert torch.allclose(change.amax(-1), older)
