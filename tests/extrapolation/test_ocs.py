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
    nets = ocs.train_runs(make, X, y, "ce", runs=2, seed=3, epochs=3, batch_size=16, lr=1e-2, batched=False)
    batched = ocs.train_runs(make, X, y, "ce", runs=2, seed=3, epochs=3, batch_size=16, lr=1e-2)
    assert len(nets) == 2 and not any(n.training for n in nets)
    for a, b in zip(batched[1].parameters(), nets[1].parameters()):
        assert torch.allclose(a, b, atol=1e-4)
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


# --- identities that left the ledgers of chapters 01 and 05 (library checks, not findings) ------


@pytest.mark.parametrize("loss", ["ce", "mse", "gaussian_nll", "rewards"])
def test_gradient_of_the_average_loss_vanishes_at_the_closed_form(loss):
    g = torch.Generator().manual_seed(1)
    labels = torch.randint(0, 5, (40,), generator=g)
    if loss == "ce":
        targets, closed, name = labels, torch.log(ocs.ocs_cross_entropy(labels, 5)), "ce"
    elif loss == "mse":
        targets = torch.randn(40, 3, generator=g, dtype=D)
        closed, name = ocs.ocs_mse(targets), "mse"
    elif loss == "rewards":
        targets, closed, name = ocs.reward_vectors(labels, 5).double(), ocs.ocs_reward(labels, 5), "mse"
    else:
        targets = labels.double()
        mu, sd = ocs.ocs_gaussian_nll(targets)
        closed, name = torch.stack([mu, 2 * sd.log()]), "gaussian_nll"
    f = closed.clone().requires_grad_(True)
    value = ocs.per_example_loss(f.expand(len(targets), len(f)), targets, name).mean()
    (grad,) = torch.autograd.grad(value, f)
    assert float(grad.abs().max()) < 1e-9


def test_biased_std_beats_the_unbiased_one():
    y = torch.tensor([0.0, 1.0, 1.0, 4.0, 9.0], dtype=D)
    mu, sd = ocs.ocs_gaussian_nll(y)
    value = lambda s: float(ocs.per_example_loss(torch.stack([mu, 2 * s.log()]).expand(5, 2), y, "gaussian_nll").mean())
    assert value(sd) < value(y.std(correction=1))


def test_distance_of_perfect_predictions_and_of_the_ocs():
    labels = torch.tensor([0, 0, 1, 2, 2, 2])
    p = ocs.ocs_cross_entropy(labels, 3)
    perfect = 60.0 * torch.nn.functional.one_hot(labels, 3).double()
    kl = ocs.distance_to_ocs(perfect, p, "ce")
    assert torch.allclose(kl, -torch.log(p[labels]), atol=1e-9)  # KL(delta_y || p) = -log p_y
    r_star = ocs.ocs_reward(labels, 3)
    d = ocs.distance_to_ocs(ocs.reward_vectors(labels, 3).double(), r_star, "mse")
    p_y = p[labels]
    assert torch.allclose(d, 25 * ((1 - p_y) ** 2 + (p**2).sum() - p_y**2), atol=1e-9)
    assert float(ocs.distance_to_ocs(torch.log(p).expand(4, 3), p, "ce").abs().max()) < 1e-12


def test_reward_ocs_abstains_iff_no_class_reaches_the_bayes_threshold():
    balanced = torch.arange(10).repeat(3)
    assert int(ocs.ocs_reward(balanced, 10).argmax()) == 10  # -3.5 per class, 0 to abstain
    dominant = torch.tensor([0] * 17 + [1] * 3)  # p_0 = 0.85 > 0.8: the OCS names class 0
    assert int(ocs.ocs_reward(dominant, 2).argmax()) == 0
    assert int(ocs.ocs_reward(torch.tensor([0] * 15 + [1] * 5), 2).argmax()) == 2  # p_0 = 0.75 < 0.8


def test_closer_to_ocs_than_uniform_separates_the_two_hypotheses():
    p = torch.tensor([0.5, 0.3, 0.15, 0.05], dtype=D)
    u = torch.full((4,), 0.25, dtype=D)
    at_ocs = ocs.closer_to_ocs_than_uniform(p.expand(7, 4), p)
    at_uniform = ocs.closer_to_ocs_than_uniform(u.expand(7, 4), p)
    assert float(at_ocs) == pytest.approx(float(ocs.kl_categorical(p, u)))  # > 0: the check can pass
    assert float(at_uniform) == pytest.approx(-float(ocs.kl_categorical(u, p)))  # < 0: and fail
    # linear in the mean prediction: sum_k pbar_k log(K p_k)
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(torch.randn(9, 4, generator=g, dtype=D), 1)
    expected = float((probs.mean(0) * torch.log(4 * p)).sum())
    assert float(ocs.closer_to_ocs_than_uniform(probs, p)) == pytest.approx(expected)


# --- the trainer: best-validation checkpoint and batched runs --------------------------------


def _toy(n=96, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 4, generator=g)
    return X, (X[:, 0] + 0.5 * X[:, 1] > 0).long()


def test_best_validation_checkpoint_restores_the_best_epoch():
    X, y = _toy()
    Xv, yv = _toy(40, seed=1)
    yv_noisy = yv.clone()
    yv_noisy[::3] = 1 - yv_noisy[::3]  # a validation set that the model overfits against
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
    res = ocs.train_model(model, X, y, "ce", epochs=25, batch_size=16, lr=2e-2, val=(Xv, yv_noisy), keep="best_val")
    assert res.val_losses is not None and res.kept_epoch == int(res.val_losses.argmin())
    val_now = float(ocs.per_example_loss(ocs.predict(model, Xv), yv_noisy, "ce").mean())
    assert val_now == pytest.approx(float(res.val_losses.min()), rel=1e-5)
    with pytest.raises(ValueError, match="validation set"):
        ocs.train_model(model, X, y, "ce", keep="best_val")
    with pytest.raises(ValueError, match="keep"):
        ocs.train_model(model, X, y, "ce", val=(Xv, yv), keep="best")


def test_batched_runs_follow_the_same_updates_as_one_run_at_a_time():
    X, y = _toy()
    targets = ocs.reward_vectors(y, 2)
    make = lambda: nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
    kw = dict(runs=3, seed=2, epochs=3, batch_size=16, lr=1e-2, weight_decay=1e-3)
    res_a, res_b = [], []
    a = ocs.train_runs(make, X, targets, "mse", batched=True, results=res_a, **kw)
    b = ocs.train_runs(make, X, targets, "mse", batched=False, results=res_b, **kw)
    for na, nb in zip(a, b):
        for pa, pb in zip(na.parameters(), nb.parameters()):
            assert torch.allclose(pa, pb, atol=1e-4)
    assert torch.allclose(torch.stack([r.losses for r in res_a]), torch.stack([r.losses for r in res_b]), atol=1e-4)
    # best-validation selection per network in the batched path
    Xv, yv = _toy(30, seed=3)
    res = []
    ocs.train_runs(make, X, targets, "mse", batched=True, results=res, val=(Xv, ocs.reward_vectors(yv, 2)),
                   keep="best_val", **kw)
    assert all(r.kept_epoch == int(r.val_losses.argmin()) for r in res)


def test_train_arms_gives_each_arm_the_networks_of_train_runs():
    X, y = _toy()
    rewards = ocs.reward_vectors(y, 2)
    shifted = rewards + 3.0
    make = lambda: nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))

    def make_at(value):  # the same initial weights, the output bias started at ``value``
        def build():
            net = make()
            with torch.no_grad():
                net[-1].bias.fill_(value)
            return net
        return build

    kw = dict(seed=1, epochs=3, batch_size=16, lr=1e-2, weight_decay=1e-3)
    arms = ocs.train_arms([make, make_at(3.0)], X, [rewards, shifted], "mse", runs=2, **kw)
    assert [len(a) for a in arms] == [2, 2]
    alone = [ocs.train_runs(make, X, rewards, "mse", runs=2, **kw),
             ocs.train_runs(make_at(3.0), X, shifted, "mse", runs=2, **kw)]
    for arm, ref in zip(arms, alone):
        for na, nb in zip(arm, ref):
            for pa, pb in zip(na.parameters(), nb.parameters()):
                assert torch.allclose(pa, pb, atol=1e-4)
    with pytest.raises(ValueError):
        ocs.train_arms([make], X, [rewards, shifted], "mse", runs=2, **kw)


def test_batchnorm_networks_train_one_at_a_time_by_default():
    X, y = _toy()
    make = lambda: nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))
    nets = ocs.train_runs(make, X, y, "ce", runs=2, epochs=2, batch_size=16)
    assert all(not n.training for n in nets)
    assert not torch.equal(nets[0][1].running_mean, torch.zeros(8))  # running statistics were updated


def test_linear_parts_and_norm_ratios():
    from implicit_bias import models

    torch.manual_seed(0)
    mlp = models.MLP(6, 3, width=5, depth=3)
    X = torch.randn(10, 6)
    parts = ocs.linear_parts(mlp, X)
    assert len(parts) == 4 and torch.equal(parts[0], X)
    assert torch.allclose(parts[-1] + mlp.layers[-1].bias, mlp(X), atol=1e-6)
    assert ocs.norm_ratios(mlp, X, X) == pytest.approx([1.0] * 4)
    assert ocs.norm_ratios(mlp, 0.5 * X, X)[0] == pytest.approx(0.25)
    cnn = ocs.NormCNN(1, 8, 4)
    assert len(ocs.linear_parts(cnn, torch.rand(3, 1, 8, 8))) == 1 + len(cnn.weight_layers)
    with pytest.raises(TypeError, match="linear_parts"):
        ocs.linear_parts(nn.Sequential(nn.Conv2d(1, 2, 3)), torch.rand(1, 1, 8, 8))


def test_binomial_interval_wilson():
    lo, hi = ocs.binomial_interval(5, 10)
    assert lo < 0.5 < hi and abs((lo + hi) / 2 - 0.5) < 1e-12
    # a textbook value: 0 of 10 gives (0, 0.278) at 95%
    lo, hi = ocs.binomial_interval(0, 10)
    assert lo == 0.0 and abs(hi - 0.2775) < 1e-3
    lo, hi = ocs.binomial_interval(10, 10)
    assert hi == 1.0 and abs(lo - (1 - 0.2775)) < 1e-3
    assert ocs.binomial_interval(3, 10, z=0.0) == pytest.approx((0.3, 0.3))
    with pytest.raises(ValueError):
        ocs.binomial_interval(11, 10)
