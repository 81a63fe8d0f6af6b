"""The decomposition's identities against autograd (`implicit_bias.invariances.identities`) on
graphs whose answers are known: a one-path chain computed by hand, the Eq. (44) factor that
cancels when every |h_p| = 1, and gradient descent steps of the Def. 6 example."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from implicit_bias.invariances import identities as PI
from implicit_bias.invariances import paths as P

D = torch.float64


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def labels(n: int, seed: int) -> torch.Tensor:
    return torch.where(torch.rand(n, generator=gen(seed)) < 0.5, -1.0, 1.0).to(D)


def chain(w1: float, w2: float, act: str = "relu") -> P.DAGNetwork:
    """x -> a -> o: one hidden vertex, one path."""
    return P.DAGNetwork(3, torch.tensor([[0, 1], [1, 2]]), torch.tensor([w1, w2], dtype=D),
                        inputs=(0,), output=2, activations=("linear", act, "linear"))


def def6_net() -> P.DAGNetwork:
    """Inputs x1, x2, ReLU vertices a, b: edges x1 a, x2 b, a o, b o (the chapter's example)."""
    return P.DAGNetwork(5, torch.tensor([[0, 2], [1, 3], [2, 4], [3, 4]]),
                        torch.tensor([0.8, -0.6, 0.9, 0.7], dtype=D), inputs=(0, 1), output=4,
                        activations=("linear", "linear", "relu", "relu", "linear"))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rescaling_leaves_h_unchanged_and_draws_two_numbers_per_vertex(seed):
    net = P.random_dag(3, 6, edge_prob=0.4, generator=gen(seed), activations=("relu", "leaky"))
    X = torch.randn(32, net.d, generator=gen(seed + 10), dtype=D)
    pa = P.enumerate_paths(net)
    H = P.path_enumeration(net, X, pa)
    g, ref = gen(seed + 20), gen(seed + 20)
    bad, ratio = PI.rescaling_changes(net, X, pa, H, generator=g)
    assert bad == 0 and 0.0 <= ratio < 2.0
    for _ in net.hidden():       # one randint and one randn per hidden vertex, in that order
        torch.randint(-8, 9, (), generator=ref)
        torch.randn((), generator=ref, dtype=D)
    assert torch.equal(g.get_state(), ref.get_state())
    # the check can fail: against path values of other weights, entries differ
    other = P.path_enumeration(net, X, pa, weights=1.5 * net.weights)
    assert PI.rescaling_changes(net, X, pa, other, generator=gen(0))[0] > 0


def test_euler_ratio_on_a_chain_by_hand():
    net = chain(0.7, -1.3, act="leaky")
    X = torch.tensor([[0.5], [-1.0], [2.0]], dtype=D)
    y = torch.tensor([1.0, -1.0, -1.0], dtype=D)
    pa = P.enumerate_paths(net)
    H = P.path_enumeration(net, X, pa)
    nu = net(X)
    # by hand: A_a = mean_i sigmoid(-y_i nu_i) |w1 w2 x_i| (one path through a)
    A = float((torch.sigmoid(-y * nu) * (0.7 * 1.3 * X[:, 0].abs())).mean())
    ratios = PI.euler_ratios(net, X, y, pa, H)
    assert ratios.shape == (1,) and ratios[0] < 1.0
    w = net.weights.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(F.softplus(-y * net(X, w)).mean(), w)
    D_a = abs(float(net.weights[0] * g[0] - net.weights[1] * g[1]))
    c = P.roundoff_constant(net)
    assert ratios[0] == pytest.approx(D_a / (4 * c * P.UNIT_ROUNDOFF * A), rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_euler_and_eq2_hold_on_random_dags(seed):
    net = P.random_dag(3, 7, edge_prob=0.4, generator=gen(seed), n_coords=2,
                       activations=("relu", "leaky", "linear"))
    X = torch.randn(48, net.d, generator=gen(seed + 10), dtype=D)
    pa = P.enumerate_paths(net)
    H = P.path_enumeration(net, X, pa)
    ratios = PI.euler_ratios(net, X, labels(48, seed), pa, H)
    assert len(ratios) == len(net.hidden()) and ratios.max() < 1.0
    assert PI.eq2_ratio(net, X, pa, H) < 1.0


def test_eq2_fails_when_mu_is_differentiated_at_other_path_values():
    """The check can fail: [grad mu]_p taken at h(-x) (other activation patterns of the ReLU
    vertices) is not the gradient of nu at x."""
    net = P.layered((3, 4, 3, 1), generator=gen(5))
    X = torch.randn(32, 3, generator=gen(6), dtype=D)
    pa = P.enumerate_paths(net)
    assert PI.eq2_ratio(net, X, pa, P.path_enumeration(net, X, pa)) < 1.0
    assert PI.eq2_ratio(net, X, pa, P.path_enumeration(net, -X, pa)) > 1e6


def test_eq44_factor_once_is_exact_and_twice_is_not():
    net = P.layered((3, 4, 3, 1), generator=gen(0))
    X = torch.randn(64, 3, generator=gen(1), dtype=D)
    once, twice = PI.eq44_errors(net, X, labels(64, 2))
    assert once < 1e-12 and twice > 0.1


def test_eq44_factors_agree_when_every_path_value_has_modulus_one():
    """Weights +-1 on a chain and inputs 1: h'_p = x_p prod |w| = 1, so the printed second
    factor changes nothing; with an input 2 it doubles that sample's term."""
    net = chain(1.0, -1.0, act="linear")
    X = torch.ones(4, 1, dtype=D)
    once, twice = PI.eq44_errors(net, X, torch.tensor([1.0, 1.0, -1.0, 1.0], dtype=D))
    assert once < 1e-12 and twice < 1e-12
    once, twice = PI.eq44_errors(net, torch.full((4, 1), 2.0, dtype=D), torch.ones(4, dtype=D))
    assert once < 1e-12 and twice == pytest.approx(1.0, rel=1e-12)


def test_square_sum_drifts_one_step_by_hand():
    net = def6_net()
    X = torch.rand(20, 2, generator=gen(0), dtype=D)
    y = labels(20, 1)
    quantities = [((0,), (2, 3)), ((0, 1), (2, 3))]
    eta = 0.1
    drifts, flips = PI.square_sum_drifts(net, X, y, quantities, eta, T=eta)
    w = net.weights.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(F.softplus(-y * net(X, w)).mean(), w)
    w0, w1 = net.weights, net.weights - eta * g
    q = lambda v: (float(v[0] ** 2 - v[2] ** 2 - v[3] ** 2),
                   float(v[0] ** 2 + v[1] ** 2 - v[2] ** 2 - v[3] ** 2))
    expected = [abs(a - b) for a, b in zip(q(w1), q(w0))]
    assert drifts == pytest.approx(expected, rel=1e-12, abs=1e-15)
    assert flips == int((torch.sign(w1) != torch.sign(w0)).sum())
    assert torch.equal(net.weights, w0)                        # the network is not modified
    assert PI.square_sum_drifts(net, X, y, quantities, eta, T=0.0) == ([0.0, 0.0], 0)


def test_square_sum_drifts_cut_is_first_order_in_eta_and_flips_are_counted():
    net = def6_net()
    X = torch.rand(40, 2, generator=gen(3), dtype=D) * torch.tensor([1.0, -1.0], dtype=D)
    y = torch.where(X[:, 0] + 0.5 * X[:, 1] > 0.25, 1.0, -1.0).to(D)
    cut = [((0, 1), (2, 3))]
    big, _ = PI.square_sum_drifts(net, X, y, cut, 0.1, T=2.0)
    small, _ = PI.square_sum_drifts(net, X, y, cut, 0.025, T=2.0)
    assert 0.15 < small[0] / big[0] < 0.35             # GD slack of a cut: O(eta)
    # a chain whose output weight starts just below 0 on a positive label must change sign
    flip = chain(1.0, -0.01, act="linear")
    one = torch.ones(1, 1, dtype=D)
    _, flips = PI.square_sum_drifts(flip, one, torch.ones(1, dtype=D), [((0,), (1,))], 0.5, T=5.0)
    assert flips >= 1
