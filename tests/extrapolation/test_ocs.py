"""The optimal constant solution and the measurements of Kang et al. on hand-computed cases."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from implicit_bias.extrapolation import ocs

D = torch.float64


def test_ce_ocs_is_label_marginal_and_the_minimiser():
    labels = torch.tensor([0, 0, 0, 1, 2, 2])
    p = ocs.ocs_cross_entropy(labels, 4)
    assert torch.allclose(p, torch.tensor([0.5, 1 / 6, 1 / 3, 0.0], dtype=D))
    # the minimiser among constant logits (classes present only) has softmax = p
    labels3 = labels
    f = ocs.minimise_constant(labels3, "ce", 3)
    assert torch.allclose(torch.softmax(f, 0), p[:3], atol=1e-7)


def test_ce_ocs_bad_labels():
    with pytest.raises(ValueError, match="labels must lie"):
        ocs.ocs_cross_entropy(torch.tensor([0, 3]), 3)


def test_mse_ocs_is_mean_and_the_minimiser():
    y = torch.tensor([[1.0, 0.0], [3.0, 2.0], [2.0, 7.0]])
    assert torch.allclose(ocs.ocs_mse(y), torch.tensor([2.0, 3.0], dtype=D))
    assert torch.allclose(ocs.minimise_constant(y, "mse", 2), ocs.ocs_mse(y), atol=1e-8)


def test_gaussian_ocs_mean_and_biased_std():
    y = torch.tensor([1.0, 2.0, 3.0, 6.0])
    mu, sd = ocs.ocs_gaussian_nll(y)
    assert float(mu) == pytest.approx(3.0)
    assert float(sd) ** 2 == pytest.approx((4 + 1 + 0 + 9) / 4)  # 1/N, not 1/(N-1)
    f = ocs.minimise_constant(y, "gaussian_nll", 2)
    assert float(f[0]) == pytest.approx(3.0, abs=1e-6)
    assert math.exp(0.5 * float(f[1])) == pytest.approx(float(sd), abs=1e-6)


def test_ocs_beats_perturbed_constants():
    g = torch.Generator().manual_seed(0)
    y = torch.randn(50, generator=g, dtype=D) * 2 + 1
    mu, sd = ocs.ocs_gaussian_nll(y)
    best = torch.stack([mu, 2 * sd.log()])
    value = lambda f: float(ocs.per_example_loss(f.expand(len(y), 2), y, "gaussian_nll").mean())
    for delta in ([0.1, 0], [-0.1, 0], [0, 0.1], [0, -0.1]):
        assert value(best) < value(best + torch.tensor(delta, dtype=D))


def test_reward_ocs():
    labels = torch.arange(10).repeat(5)
    r = ocs.ocs_reward(labels, 10)
    assert torch.allclose(r[:10], torch.full((10,), -3.5, dtype=D))
    assert float(r[10]) == 0.0
    vec = ocs.reward_vectors(labels, 10)
    assert torch.allclose(vec.mean(0).double(), r)


def test_kl_of_identical_distributions_is_zero():
    p = torch.tensor([0.2, 0.3, 0.5], dtype=D)
    logits = torch.log(p).expand(4, 3)
    assert torch.allclose(ocs.distance_to_ocs(logits, p, "ce"), torch.zeros(4, dtype=D), atol=1e-12)
    out = torch.tensor([[1.5, math.log(4.0)]], dtype=D)
    assert float(ocs.distance_to_ocs(out, (torch.tensor(1.5), torch.tensor(2.0)), "gaussian_nll")) == pytest.approx(0, abs=1e-12)


def test_two_class_kl_by_hand():
    # logits (0, log 3) -> predicted (1/4, 3/4); OCS (1/2, 1/2)
    out = torch.tensor([[0.0, math.log(3.0)]])
    d = float(ocs.distance_to_ocs(out, torch.tensor([0.5, 0.5]), "ce"))
    assert d == pytest.approx(0.25 * math.log(0.5) + 0.75 * math.log(1.5))
    # a confident correct prediction against a uniform K-class marginal: log K
    big = torch.tensor([[50.0] + [0.0] * 9], dtype=D)
    assert float(ocs.distance_to_ocs(big, torch.full((10,), 0.1, dtype=D), "ce")) == pytest.approx(math.log(10), abs=1e-12)


def test_gaussian_kl_by_hand():
    # KL(N(0,1) || N(1, 2^2)) = log 2 + (1 + 1) / 8 - 1/2
    out = torch.tensor([[0.0, 0.0]])
    d = float(ocs.distance_to_ocs(out, (1.0, 2.0), "gaussian_nll"))
    assert d == pytest.approx(math.log(2) + 2 / 8 - 0.5)


def test_mse_distance_sum_and_mean():
    out = torch.tensor([[1.0, 2.0, 3.0]])
    star = torch.tensor([0.0, 0.0, 0.0])
    assert float(ocs.distance_to_ocs(out, star, "mse")) == pytest.approx(14.0)
    assert float(ocs.distance_to_ocs(out, star, "mse", mse_reduction="mean")) == pytest.approx(14 / 3)


def test_unknown_loss():
    with pytest.raises(ValueError, match="unknown loss"):
        ocs.distance_to_ocs(torch.zeros(2, 2), torch.ones(2) / 2, "hinge")


def test_ood_score_identical_and_separated():
    g = torch.Generator().manual_seed(1)
    A = torch.randn(400, 5, generator=g)
    B = torch.randn(400, 5, generator=g)
    same = ocs.ood_score(A, B, repeats=3, alpha=0.01)
    assert abs(same - 0.5) < 0.1
    far = ocs.ood_score(A + 5.0, B, repeats=3, alpha=0.01)
    assert far > 0.95
    weak = ocs.ood_score(A + 5.0, B, repeats=3, alpha=10.0)
    assert 0.5 < weak < far  # stronger regularisation: lower capacity, lower score
    geo = ocs.ood_score(A + 0.5, B, repeats=3, alpha=0.01, aggregate="geometric")
    ari = ocs.ood_score(A + 0.5, B, repeats=3, alpha=0.01)
    assert geo <= ari + 1e-12  # AM-GM


def test_norm_ratio_and_projection():
    a = torch.ones(3, 4)
    b = 2 * torch.ones(3, 4)
    assert ocs.norm_ratio(a, b) == pytest.approx(0.25)
    assert ocs.norm_ratio(a, b, squared=False) == pytest.approx(0.5)
    W = torch.diag(torch.tensor([3.0, 1.0, 0.0]))
    V = ocs.top_subspace(W, energy=0.9)  # sqrt(9/10) = 0.949 > 0.9 -> k = 1
    assert V.shape == (3, 1)
    phi = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    assert torch.allclose(ocs.projection_ratio(phi, V), torch.tensor([0.5, 1.0], dtype=D))
    assert ocs.top_subspace(W, energy=0.99).shape == (3, 2)


def test_train_model_reduces_loss():
    torch.manual_seed(0)
    X = torch.randn(64, 3)
    y = (X[:, 0] > 0).long()
    model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 2))
    res = ocs.train_model(model, X, y, "ce", epochs=20, batch_size=16, lr=1e-2)
    assert res.losses[-1] < res.losses[0]
    assert not model.training


def test_train_runs_seeding_matches_the_explicit_loop():
    torch.manual_seed(0)
    X = torch.randn(48, 3)
    y = (X[:, 0] > 0).long()
    make = lambda: nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 2))
    nets = ocs.train_runs(make, X, y, "ce", runs=2, seed=3, epochs=3, batch_size=16, lr=1e-2)
    assert len(nets) == 2 and not any(n.training for n in nets)
    # the documented seeding: run r uses 1000 * seed + r for the weights and the batch order
    torch.manual_seed(3001)
    ref = make()
    ocs.train_model(ref, X, y, "ce", epochs=3, batch_size=16, lr=1e-2,
                    generator=torch.Generator().manual_seed(3001))
    for a, b in zip(nets[1].parameters(), ref.parameters()):
        assert torch.equal(a, b)
    assert not torch.equal(nets[0][0].weight, nets[1][0].weight)
    with pytest.raises(ValueError, match="runs"):
        ocs.train_runs(make, X, y, "ce", runs=0)
    with pytest.raises(ValueError, match="generator"):
        ocs.train_runs(make, X, y, "ce", runs=1, generator=torch.Generator())


def test_mean_se_and_bounds():
    x = torch.tensor([[1.0, 2.0], [3.0, 2.0], [5.0, 2.0]])
    mean, se = ocs.mean_se(x)
    assert torch.allclose(mean, torch.tensor([3.0, 2.0], dtype=D))
    assert torch.allclose(se, torch.tensor([2.0 / math.sqrt(3), 0.0], dtype=D))
    assert torch.allclose(ocs.lower_bound(x, k=2), mean - 2 * se)
    assert torch.allclose(ocs.upper_bound(x, k=1, axis=0), mean + se)
    # one value: infinite standard error, so no claim can pass on it
    assert math.isinf(float(ocs.mean_se([1.0])[1]))
    assert float(ocs.lower_bound([1.0])) == -math.inf
    with pytest.raises(ValueError, match="k must be"):
        ocs.lower_bound([1.0, 2.0], k=-1)


def test_resnet20_shapes_and_size():
    torch.manual_seed(0)
    net = ocs.ResNet20(10)
    n_params = sum(p.numel() for p in net.parameters())
    assert 0.26e6 < n_params < 0.28e6  # He et al.: 0.27M
    x = torch.rand(2, 3, 32, 32)
    net.eval()
    out = net(x)
    assert out.shape == (2, 10)
    stages = net.stages(x)
    assert [tuple(s.shape[1:]) for s in stages] == [(16, 32, 32), (16, 32, 32), (32, 16, 16), (64, 8, 8), (10,)]
    assert torch.allclose(stages[-1] + net.linear.bias, out, atol=1e-5)
    # the shortcut of a down-sampling block has no parameters and pads the channels with zeros
    block = net.layers[1][0]
    s = block.shortcut(torch.ones(1, 16, 32, 32))
    assert s.shape == (1, 32, 16, 16) and float(s.sum()) == 16 * 16 * 16
    with pytest.raises(ValueError, match="at least one"):
        ocs.ResNet20(blocks=0)
