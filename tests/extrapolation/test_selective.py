"""Tests of implicit_bias.extrapolation.selective (selective classification, Kang et al. Sec. 5)."""

import pytest
import torch

from implicit_bias.extrapolation import selective as S


def test_bayes_threshold():
    assert S.bayes_threshold() == pytest.approx(0.8)
    assert S.bayes_threshold(1.0, -1.0, 0.0) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        S.bayes_threshold(1.0, 2.0, 0.0)


def test_rewards_and_summary():
    labels = torch.tensor([0, 1, 2, 2])
    actions = torch.tensor([0, 2, 3, 2])  # right, wrong, abstain (K = 3), right
    r = S.rewards(actions, labels, 3)
    assert r.tolist() == [1.0, -4.0, 0.0, 1.0]
    s = S.summary(actions, labels, 3)
    assert s["abstain"] == pytest.approx(0.25)
    assert s["reward"] == pytest.approx(-0.5)
    assert s["accuracy_answered"] == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        S.rewards(torch.tensor([4]), torch.tensor([0]), 3)


def test_temperature_recovers_a_known_scale():
    g = torch.Generator().manual_seed(0)
    logits = 3.0 * torch.randn(4000, 5, generator=g, dtype=torch.float64)
    labels = torch.multinomial(torch.softmax(logits / 2.0, -1), 1, generator=g).squeeze(1)
    T = S.fit_temperature(logits, labels)
    assert float(T) == pytest.approx(2.0, rel=0.1)


def test_oracle_thresholds():
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(50, 3, generator=g, dtype=torch.float64)
    labels = torch.randint(0, 3, (50,), generator=g)
    always, _ = S.oracle_actions(logits, labels, threshold=1.0)
    never, _ = S.oracle_actions(logits, labels, threshold=0.0)
    assert bool((always == 3).all())
    assert torch.equal(never, logits.argmax(-1))
    assert S.reward_prediction_actions(torch.tensor([[-3.5, -3.5, 0.0]])).item() == 2
