"""Tests of implicit_bias.invariances.margins: max-margin solvers, KKT checks, trajectories."""

import math

import numpy as np
import pytest
import torch

from implicit_bias import homogeneous, models
from implicit_bias.invariances import margins


def test_linear_max_margin_known_answer():
    # two points: the hard-margin direction is the min-norm point of their hull
    Z = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    sol = margins.linear_max_margin(Z)
    np.testing.assert_allclose(sol.u, [1.0, 1.0], atol=1e-8)
    assert sol.margin == pytest.approx(1 / math.sqrt(2), abs=1e-8)
    assert sol.kkt_residual < 1e-8
    np.testing.assert_allclose(sol.multipliers, [1.0, 1.0], atol=1e-6)


def test_linear_max_margin_not_separable():
    Z = torch.tensor([[1.0, 0.0], [-1.0, 0.0]], dtype=torch.float64)
    with pytest.raises(ValueError, match="not separable"):
        margins.linear_max_margin(Z)


def test_two_clusters_shapes_and_scale():
    X, y = margins.two_clusters(7, seed=3)
    assert X.shape == (14, 2) and y.shape == (14,)
    assert float(X.norm(dim=1).max()) == pytest.approx(1.0)
    assert set(y.tolist()) == {-1.0, 1.0}
    with pytest.raises(ValueError):
        margins.two_clusters(0)


def _q(X, y):
    def q(theta):
        W, a = theta[:4].reshape(2, 2), theta[4:]
        return y * (torch.relu(X @ W.T) @ a)
    return q


def test_width2_kkt_point_is_kkt_and_matches_slsqp():
    X, y = margins.two_clusters(10, q=(-0.8, 0.75), noise=0.05, seed=0)
    kkt = margins.width2_kkt_point(X, y)
    assert kkt.cross_inactive < 0
    q = _q(X, y)
    assert float(q(kkt.theta).min()) == pytest.approx(1.0, abs=1e-6)
    rep = margins.kkt_check(q, kkt.theta, degree=2, active_tol=1e-6)
    assert rep.stationarity < 1e-8
    assert rep.normalized_margin == pytest.approx(kkt.normalized_margin, rel=1e-6)
    sol, _ = margins.solve_max_margin(q, kkt.theta * 1.3 + 0.01, 2)
    assert float(sol.norm() ** 2) == pytest.approx(kkt.norm_sq, rel=1e-6)
    # a rank-2 KKT point beats every rank-1 network on these data, and the best rank-1
    # network is no worse than the one computing the two-class max-margin classifier
    assert kkt.norm_sq < kkt.rank1_norm_sq <= 4 / kkt.linear_margin + 1e-9
    assert kkt.ratio < 0.99


def test_kkt_check_rejects_misclassifying_point():
    X, y = margins.two_clusters(5, seed=1)
    with pytest.raises(ValueError, match="no rescaling"):
        margins.kkt_check(_q(X, y), torch.zeros(6, dtype=torch.float64), degree=2)


def test_normalized_margin_is_scale_invariant():
    q = torch.tensor([[2.0, 3.0]])
    nm = homogeneous.normalized_margin(q, torch.tensor([2.0]), 2)
    assert float(nm) == pytest.approx(0.5)
    # theta -> 2 theta multiplies the margins of a 2-homogeneous network by 4
    assert float(homogeneous.normalized_margin(4 * q, torch.tensor([4.0]), 2)) == pytest.approx(0.5)


def test_sign_changes_counts_and_last_index():
    traj = torch.tensor([[1.0, 1.0], [-1.0, 2.0], [-2.0, 3.0], [1.0, 4.0]])
    count, last = margins.sign_changes(traj)
    assert count.tolist() == [2, 0]
    assert last.tolist() == [3, -1]


def test_train_to_margin_reaches_target_and_times_increase():
    torch.manual_seed(0)
    X, y = margins.two_clusters(5, q=(-0.8, 0.75), noise=0.05, seed=0)
    net = models.MLP(2, 1, width=3, depth=2, bias=False, activation="linear").double()
    run = margins.train_to_margin(net, X, y, lr=0.05, target_margin=50.0, max_steps=3000, chunk=10)
    assert run.reached
    assert float(run.margin[-1]) >= 50.0
    assert len(run.steps) == len(run.loss) == len(run.params) == len(run.time)
    assert bool((run.time[1:] > run.time[:-1]).all())
    # the recorded last parameters are the model's parameters
    flat = torch.cat([p.detach().flatten() for p in net.parameters()])
    torch.testing.assert_close(run.params[-1], flat)


def test_train_to_margin_degree3_stays_finite():
    torch.manual_seed(0)
    X, y = margins.two_clusters(5, q=(-0.8, 0.75), noise=0.05, seed=0)
    net = models.MLP(2, 1, width=4, depth=3, bias=False, activation="linear",
                     init_scale=0.8).double()
    run = margins.train_to_margin(net, X, y, lr=0.05, target_margin=100.0, max_steps=5000, degree=3)
    assert run.reached and bool(torch.isfinite(run.time).all())


def test_train_to_margin_bad_arguments():
    X, y = margins.two_clusters(3)
    net = models.MLP(2, 1, width=2, depth=2, bias=False).double()
    with pytest.raises(ValueError):
        margins.train_to_margin(net, X, y, lr=0.1, target_margin=900.0, max_steps=10)
    with pytest.raises(ValueError):
        margins.train_to_margin(net, X, y, lr=0.1, target_margin=10.0, max_steps=0)


def test_rank1_min_norm_sq_symmetric_case():
    # +-1 points on the x-axis: the best rank-1 network uses v = e_1, alpha = beta = 1
    X = torch.tensor([[1.0, 0.0], [-1.0, 0.0]], dtype=torch.float64)
    y = torch.tensor([1.0, -1.0], dtype=torch.float64)
    assert margins.rank1_min_norm_sq(X, y) == pytest.approx(4.0, rel=1e-8)
    with pytest.raises(ValueError):
        margins.rank1_min_norm_sq(torch.zeros(2, 3), y)


def test_log_risk_matches_log_of_logistic_risk_and_stays_finite():
    out = torch.tensor([0.3, -1.2, 2.0, 5.0], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([1.0, -1.0, 1.0, -1.0], dtype=torch.float64)
    ref = torch.log(torch.nn.functional.softplus(-y * out).mean())
    val = margins.log_risk(out, y)
    assert abs(float((val - ref).detach())) < 1e-14
    (g,) = torch.autograd.grad(val, out)
    (g_ref,) = torch.autograd.grad(ref, out)
    assert torch.allclose(g, g_ref, atol=1e-14)
    # margins far beyond exp(-745): log R ~ -min margin, gradient finite
    big = torch.tensor([800.0, 1e4, 3e5], dtype=torch.float64, requires_grad=True)
    v = margins.log_risk(big, torch.ones(3, dtype=torch.float64))
    (gb,) = torch.autograd.grad(v, big)
    assert math.isfinite(float(v.detach())) and abs(float(v.detach()) + 800.0 + math.log(3.0)) < 1e-9
    assert torch.isfinite(gb).all()


def test_log_risk_descent_is_loss_scaled_descent():
    """grad log R = grad R / R: one step on log R equals one loss-scaled step on R."""
    torch.manual_seed(0)
    X, y = margins.two_clusters(5, seed=1)
    net = models.MLP(2, 1, width=3, depth=2, bias=False).double()
    out = net(X).squeeze(-1)
    R = torch.nn.functional.softplus(-y * out).mean()
    gR = torch.autograd.grad(R, list(net.parameters()), retain_graph=True)
    gL = torch.autograd.grad(margins.log_risk(out, y), list(net.parameters()))
    for a, b in zip(gR, gL):
        assert torch.allclose(a / R, b, atol=1e-14)


def test_homogeneous_log_risk_is_increasing_in_the_risk():
    y = torch.ones(3, dtype=torch.float64)
    loss = margins.homogeneous_log_risk(3)
    values = [float(loss(torch.full((3,), m, dtype=torch.float64), y)) for m in (-2.0, 0.0, 1.0, 5.0, 50.0)]
    assert all(a > b for a, b in zip(values, values[1:]))  # larger margins, smaller risk
    with pytest.raises(ValueError):
        margins.homogeneous_log_risk(0)


def test_random_two_clusters_is_reproducible_and_in_range():
    X1, y1, a1 = margins.random_two_clusters(7, 10, angle=(100.0, 130.0))
    X2, y2, a2 = margins.random_two_clusters(7, 10, angle=(100.0, 130.0))
    assert torch.equal(X1, X2) and torch.equal(y1, y2) and a1 == a2
    assert 100.0 <= a1 <= 130.0 and X1.shape == (20, 2)
    assert abs(float(X1.norm(dim=1).max()) - 1.0) < 1e-12


def test_width2_designed_starts_on_its_clusters():
    net = margins.width2_designed("relu", seed=3, noise=0.0)
    W, a = net.layers[0].weight.detach(), net.layers[1].weight.detach()
    p_hat = torch.tensor([1.0, 0.3], dtype=torch.float64) / math.hypot(1.0, 0.3)
    assert torch.allclose(W[0], 0.3 * p_hat) and torch.equal(a, torch.tensor([[0.3, -0.3]], dtype=torch.float64))
    leaky = margins.width2_designed("leaky", negative_slope=0.2)
    assert abs(leaky.act.negative_slope - 0.2) < 1e-15


def test_width2_kkt_point_without_rank1_comparison():
    X, y = margins.two_clusters(10, seed=2)
    k = margins.width2_kkt_point(X, y, with_rank1=False)
    assert math.isnan(k.rank1_norm_sq) and 0 < k.ratio < 1


def test_width2_kkt_alignment_known_answers():
    # the top left singular vector of diag(2, 1) is e_1: a parallel to it gives 1, a
    # orthogonal to it 0, and a at 45 degrees 1/sqrt(2) (the sign of a does not matter)
    W = torch.diag(torch.tensor([2.0, 1.0], dtype=torch.float64))
    nan = float("nan")
    make = lambda a: margins.Width2KKT(W, torch.tensor(a, dtype=torch.float64), nan, nan, nan,
                                       nan, (nan, nan), nan, nan)
    assert make([3.0, 0.0]).alignment == pytest.approx(1.0, abs=1e-12)
    assert make([0.0, -2.0]).alignment == pytest.approx(0.0, abs=1e-12)
    assert make([-1.0, 1.0]).alignment == pytest.approx(1 / math.sqrt(2), abs=1e-12)


def test_width2_kkt_alignment_of_symmetric_clusters_is_one():
    # mirror-image clusters of equal norms: W^T W and a a^T share the mirror axis, so the KKT
    # point is aligned although its first layer has rank 2
    X, y = margins.two_clusters(10, p=(1.0, 0.5), q=(-1.0, 0.5), noise=0.0, seed=0)
    k = margins.width2_kkt_point(X, y, with_rank1=False)
    assert k.cross_inactive < 0 and k.ratio < 0.99
    assert k.alignment == pytest.approx(1.0, abs=1e-9)


def _width2_net(seed, activation="relu"):
    torch.manual_seed(seed)
    return models.MLP(2, 1, width=2, depth=2, bias=False, activation=activation).double()


def test_train_width2_batch_matches_one_network_gradient_descent():
    X, y = margins.two_clusters(6, seed=1)
    X2, y2 = margins.two_clusters(6, q=(-0.5, 0.9), seed=2)
    nets = [_width2_net(0), _width2_net(1)]
    W0, a0 = nets[1].layers[0].weight.detach().clone(), nets[1].layers[1].weight.detach().clone()
    lr = torch.tensor([0.05, 0.02], dtype=torch.float64)
    runs = margins.train_width2_batch(nets, torch.stack([X, X2]), torch.stack([y, y2]), lr=lr,
                                      steps=20, record_every=5)
    assert runs.theta.shape == (5, 2, 6) and runs.W.shape == (5, 2, 2, 2)
    assert list(runs.steps) == [0, 5, 10, 15, 20]
    # the second member by hand: plain gradient descent on log R with its own step and data
    W, a = W0.clone().requires_grad_(True), a0.clone().requires_grad_(True)
    for _ in range(20):
        loss = margins.log_risk(torch.relu(X2 @ W.T) @ a.T, y2)
        gW, ga = torch.autograd.grad(loss, (W, a))
        W, a = (W - 0.02 * gW).detach().requires_grad_(True), (a - 0.02 * ga).detach().requires_grad_(True)
    assert torch.allclose(runs.W[-1, 1], W.detach(), atol=1e-10)
    assert torch.allclose(runs.a[-1, 1], a.detach().flatten(), atol=1e-10)
    q = y2 * (torch.relu(X2 @ W.detach().T) @ a.detach().T).flatten()
    assert float(runs.qmin[-1, 1]) == pytest.approx(float(q.min()), abs=1e-10)
    # initial risk, ratio and sigma_2^2 (= ||W||_F^2 - ||W||_2^2 for width 2)
    r0 = torch.nn.functional.softplus(-y2 * (torch.relu(X2 @ W0.T) @ a0.T).flatten()).mean()
    assert float(runs.R0[1]) == pytest.approx(float(r0), rel=1e-12)
    s = torch.linalg.svdvals(runs.W[-1, 1])
    assert float(runs.ratio[-1, 1]) == pytest.approx(float(s[0] / s.norm()), rel=1e-12)
    assert float(runs.s2_sq[-1, 1]) == pytest.approx(float(s.norm() ** 2 - s[0] ** 2), rel=1e-9)
    assert bool(((runs.align >= 0) & (runs.align <= 1 + 1e-12)).all())


def test_width2_runs_sign_changes_counts_every_change_after_start():
    theta = torch.tensor([[1.0, 1.0], [-1.0, 1.0], [1.0, 1.0], [1.0, -1.0]], dtype=torch.float64)
    theta = theta[:, None, :]   # one member, records along dim 0
    none = torch.zeros(4, 1)
    runs = margins.Width2Runs(steps=np.arange(4), theta=theta, W=none, a=none, ratio=none,
                              s2_sq=none, align=none, qmin=none, R0=torch.zeros(1))
    assert runs.sign_changes(0) == 3       # a back and forth counts twice
    assert runs.sign_changes(0, start=2) == 1
    assert runs.sign_changes(0, start=3) == 0
