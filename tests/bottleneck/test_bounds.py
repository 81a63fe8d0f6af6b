"""The finite-depth inequalities of `implicit_bias.bottleneck.bounds`: they hold on random
networks (as derived), are attained where the derivation says so, and fail when the formula is
changed (the checks can fail)."""

from __future__ import annotations

import math

import pytest
import torch

from implicit_bias import models, spectra
from implicit_bias.bottleneck import bounds, constructions

D = torch.float64


def random_nets(count: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    for _ in range(count):
        L = int(torch.randint(2, 6, (1,), generator=g))
        widths = [int(w) for w in torch.randint(2, 7, (L - 1,), generator=g)]
        dims = [3, *widths, 2]
        scale = float(0.5 + 1.5 * torch.rand(1, generator=g))
        W = [scale * torch.randn(dims[i + 1], dims[i], generator=g, dtype=D) / math.sqrt(dims[i]) for i in range(L)]
        b = [0.3 * torch.randn(dims[i + 1], generator=g, dtype=D) for i in range(L)]
        X = torch.randn(6, 3, generator=g, dtype=D)
        yield W, b, X


def test_the_inequalities_hold_on_random_networks() -> None:
    for W, b, X in random_nets(60):
        assert bounds.theorem3_chain(W, b, X, k=1).holds
        t6 = bounds.theorem6_check(W, b, X, k=1)
        assert t6.sum_holds and t6.counting_holds()
        t7 = bounds.theorem7_check(W, b, X, k=1)
        assert (t7.weighted <= t7.ntk * (1 + 1e-10)).all()
        g2, s = bounds.proposition9_check(W, b, X)
        L = len(W)
        assert (g2 >= L * s ** (2 - 2 / L) * (1 - 1e-10)).all()
        assert bounds.proposition13_terms(W, b, X[0], X[1]).slack_half >= -1e-10


def test_theorem3_chain_is_attained_by_the_geometric_path() -> None:
    s = torch.tensor([2.0, 0.5, 1.5], dtype=D)
    X = torch.rand(5, 3, dtype=D)
    for L in (3, 8):
        W, b = constructions.geometric_path(s, L)
        chain = bounds.theorem3_chain(W, b, X, k=3)
        assert torch.allclose(chain.sqnorm, chain.cost, rtol=1e-12)        # the first inequality is tight
        # a bound 1% stronger than the theorem's fails there: the check can fail
        assert not bool((chain.sqnorm >= 1.01 * chain.cost).all())


def test_theorem6_budget_on_a_partial_isometry_chain_is_zero() -> None:
    # W_l = rank-2 partial isometries aligned with each other: d_2 = 0 and B_2 = 0 (up to rounding)
    Q = torch.zeros(4, 4, dtype=D)
    Q[0, 0] = Q[1, 1] = 1.0
    W, b = [Q.clone() for _ in range(5)], [torch.zeros(4, dtype=D) for _ in range(5)]
    X = torch.rand(3, 4, dtype=D)
    t6 = bounds.theorem6_check(W, b, X, k=2)
    assert t6.d.abs().max() < 1e-24 and abs(t6.budget) < 1e-12
    # a wrong (too strong) version, sum d_k <= B_k - 0.1, fails on this network
    assert not float(t6.d.sum()) <= t6.budget - 0.1


def test_proposition9_equality_and_the_factor_two() -> None:
    # scalar deep linear network through the positive orthant (a ReLU net where nothing is cut)
    for L in (2, 5, 9):
        a = 1.7
        W = [torch.tensor([[a ** (1 / L)]], dtype=D) for _ in range(L)]
        b = [torch.zeros(1, dtype=D) for _ in range(L)]
        X = torch.tensor([[0.5]], dtype=D)
        g2, s = bounds.proposition9_check(W, b, X)
        assert float(s) == pytest.approx(a)
        assert float(g2) == pytest.approx(L * a ** (2 - 2 / L))               # equality in the proof's bound
        assert float(g2) < 2 * L * a ** (2 - 2 / L)                           # the statement's 2L fails


def test_theorem7_paper_form_needs_spread_out_norms() -> None:
    # a balanced chain: prefix averages never exceed the overall average, the paper's bound holds
    s = torch.tensor([2.0, 0.7], dtype=D)
    W, b = constructions.geometric_path(s, 6)
    X = torch.rand(4, 2, dtype=D) + 0.1
    t7 = bounds.theorem7_check(W, b, X, k=2)
    assert t7.prefix_ok
    assert (t7.activations <= t7.paper_bound * (1 + 1e-10)).all()
    # put all the norm in the first layer (same function): the prefix condition fails
    W2 = [W[0] * 4.0] + [w.clone() for w in W[1:-1]] + [W[-1] / 4.0]
    assert not bounds.theorem7_check(W2, b, X, k=2).prefix_ok


def test_proposition13_constant_on_hand_network() -> None:
    # f(x) = relu(x) - relu(-x) = x with two neurons: J(x) = J(y) = 1, no activation change gap
    W = [torch.tensor([[1.0], [-1.0]], dtype=D), torch.tensor([[1.0, -1.0]], dtype=D)]
    b = [torch.zeros(2, dtype=D), torch.zeros(1, dtype=D)]
    t = bounds.proposition13_terms(W, b, torch.tensor([1.0], dtype=D), torch.tensor([-1.0], dtype=D))
    assert t.nuclear == pytest.approx(0.0)
    assert t.C == pytest.approx(1.0)
    assert t.sqnorm == pytest.approx(4.0) and t.cost_x == pytest.approx(2.0)
    # f(x) = relu(x): J jumps from 1 to 0 between x = 1 and y = -1
    W = [torch.tensor([[1.0]], dtype=D), torch.tensor([[1.0]], dtype=D)]
    b = [torch.zeros(1, dtype=D), torch.zeros(1, dtype=D)]
    t = bounds.proposition13_terms(W, b, torch.tensor([1.0], dtype=D), torch.tensor([-1.0], dtype=D))
    assert t.nuclear == pytest.approx(1.0) and t.C == pytest.approx(1.0)
    assert t.slack_half == pytest.approx(2.0 - 1.0 - 0.5)
    assert t.slack_paper == pytest.approx(0.0, abs=1e-12)                   # the paper's constant is tight here


def test_regularity_budget_is_zero_for_the_geometric_path_in_the_limit() -> None:
    s = torch.tensor([2.0, 0.5], dtype=D)
    X = torch.rand(3, 2, dtype=D)
    for L in (16, 256):
        W, b = constructions.geometric_path(s, L)
        B = bounds.regularity_budget(W, b, X, k=2)
        assert torch.allclose(B, torch.full_like(B, 2 * float((torch.log(s) ** 2).sum()) / L), rtol=0.05)
    assert spectra.log_pseudo_determinant(torch.diag(s)).item() == pytest.approx(0.0)
