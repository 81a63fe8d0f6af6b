import pytest
import torch
from torch import nn

from implicit_bias.extrapolation import attacks, ocs


def _linear(d_in: int = 5, d_out: int = 3, seed: int = 0) -> nn.Linear:
    torch.manual_seed(seed)
    return nn.Linear(d_in, d_out).double()


def test_input_gradient_matches_closed_form_for_linear_ce():
    model = _linear()
    X = torch.randn(7, 5, dtype=torch.float64)
    y = torch.randint(0, 3, (7,))
    g = attacks.input_gradient(model, X, y, "ce")
    p = torch.softmax(model(X), 1)
    expected = (p - torch.nn.functional.one_hot(y, 3).double()) @ model.weight.detach()
    torch.testing.assert_close(g, expected, rtol=1e-12, atol=1e-12)


def test_input_gradient_is_per_example():
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).double()
    X = torch.randn(6, 4, dtype=torch.float64)
    y = torch.randn(6, 2, dtype=torch.float64)
    g = attacks.input_gradient(model, X, y, "mse")
    for i in range(6):
        gi = attacks.input_gradient(model, X[i:i + 1], y[i:i + 1], "mse")
        torch.testing.assert_close(g[i:i + 1], gi)


def test_fgsm_one_step_formula_and_loss_increase():
    model = _linear()
    X = torch.randn(20, 5, dtype=torch.float64)
    y = torch.randint(0, 3, (20,))
    eps = 0.1
    adv = attacks.fgsm(model, X, y, eps)
    g = attacks.input_gradient(model, X, y)
    torch.testing.assert_close(adv, X + eps * g.sign())
    # a linear model's CE is convex in x, so the loss at X + eps*sign(g) is at least the
    # linearisation, which is above the clean loss by eps * ||g||_1 >= 0
    before = ocs.per_example_loss(model(X), y, "ce")
    after = ocs.per_example_loss(model(adv), y, "ce")
    assert torch.all(after >= before + eps * g.abs().sum(1) - 1e-12)


def test_fgsm_iterated_budget_clip_and_zero():
    torch.manual_seed(2)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 16, 3))
    X = torch.rand(5, 1, 4, 4)
    y = torch.randint(0, 3, (5,))
    adv = attacks.fgsm(model, X, y, 0.3, steps=5)
    assert (adv - X).abs().max() <= 0.3 + 1e-6
    clipped = attacks.fgsm(model, X, y, 0.3, steps=5, clip=(0.0, 1.0))
    assert clipped.min() >= 0 and clipped.max() <= 1
    same = attacks.fgsm(model, X, y, 0.0)
    assert torch.equal(same, X) and same.data_ptr() != X.data_ptr()


def test_fgsm_restores_training_mode_and_rejects_bad_arguments():
    model = _linear()
    model.train()
    X, y = torch.randn(3, 5, dtype=torch.float64), torch.tensor([0, 1, 2])
    attacks.fgsm(model, X, y, 0.1)
    assert model.training
    with pytest.raises(ValueError, match="eps"):
        attacks.fgsm(model, X, y, -0.1)
    with pytest.raises(ValueError, match="steps"):
        attacks.fgsm(model, X, y, 0.1, steps=0)
    with pytest.raises(ValueError, match="loss"):
        attacks.fgsm(model, X, y, 0.1, loss="hinge")
    with pytest.raises(ValueError, match="examples"):
        attacks.input_gradient(model, X, y[:2])
    with pytest.raises(ValueError, match="clip"):
        attacks.fgsm(model, X, y, 0.1, clip=(1.0, 0.0))


def test_fgsm_accepts_a_callable_loss():
    model = _linear()
    X = torch.randn(4, 5, dtype=torch.float64)
    y = torch.zeros(4, dtype=torch.long)
    adv = attacks.fgsm(model, X, y, 0.2, loss=lambda out, t: out[:, 0])  # push logit 0 up
    assert torch.all(model(adv)[:, 0] > model(X)[:, 0])
