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


def test_proposition9_readings_match_explicit_gram_and_autograd():
    import torch
    from implicit_bias.bottleneck import bounds, jacobians
    from implicit_bias.models import mlp_trace
    g = torch.Generator().manual_seed(3)
    D = torch.float64
    dims = [3, 5, 4, 2]
    for slope in (0.0, 0.3):
        W = [torch.randn(dims[l + 1], dims[l], generator=g, dtype=D) for l in range(3)]
        b = [torch.randn(dims[l + 1], generator=g, dtype=D) * 0.3 for l in range(3)]
        X = torch.randn(6, 3, generator=g, dtype=D)
        r = bounds.proposition9_readings(W, b, X, negative_slope=slope, iters=300)
        # explicit Gram of d vec(Jf) / d theta by autograd over the weights, one sample at a time
        for i in range(X.shape[0]):
            Ws = [w.clone().requires_grad_(True) for w in W]
            J = jacobians.input_jacobians(Ws, b, X[i:i + 1], slope)[0]          # patterns fixed at X[i]
            rows = []
            for a in range(J.shape[0]):
                for j in range(J.shape[1]):
                    grads = torch.autograd.grad(J[a, j], Ws, retain_graph=True)
                    rows.append(torch.cat([gr.flatten() for gr in grads]))
            M = torch.stack(rows)                                              # (d_out d_in, params)
            G = M @ M.T
            top = torch.linalg.eigvalsh(G)[-1]
            assert torch.isclose(r.mixed[i], top, rtol=1e-8), (slope, i, float(r.mixed[i]), float(top))
            assert torch.isclose(r.hessian[i], 2 * top, rtol=1e-8)
            assert r.rank_one[i] <= r.mixed[i] * (1 + 1e-12)
        if slope == 0.0:
            g2, s = bounds.proposition9_check(W, b, X)
            assert torch.allclose(g2, r.rank_one) and torch.allclose(s, r.s_top)


def test_proposition9_hessian_reading_is_twice_the_mixed_one():
    import torch
    from torch.func import functional_call, hessian, jacrev
    from implicit_bias import models
    from implicit_bias.bottleneck import bounds
    g = torch.Generator().manual_seed(5)
    D = torch.float64
    dims = [3, 4, 4, 2]
    W = [torch.randn(dims[l + 1], dims[l], generator=g, dtype=D) for l in range(3)]
    b = [torch.randn(dims[l + 1], generator=g, dtype=D) * 0.3 for l in range(3)]
    for slope in (0.0, 0.25):
        net = models.mlp_from_weights(W, b, activation="relu" if slope == 0.0 else "leaky", negative_slope=slope or 0.01)
        params = {k: v.detach() for k, v in net.named_parameters()}

        def theta_diag(x):                              # Theta(x, x), d_out x d_out
            jac = jacrev(lambda p: functional_call(net, p, (x.unsqueeze(0),))[0])(params)
            flat = torch.cat([j.reshape(j.shape[0], -1) for j in jac.values()], 1)
            return flat @ flat.T

        x = torch.randn(3, generator=g, dtype=D)
        H = hessian(theta_diag)(x)                      # (d_out, d_out, d_in, d_in)
        T = H.permute(0, 2, 1, 3).reshape(2 * 3, 2 * 3)  # rows (i, j), columns (i', j')
        r = bounds.proposition9_readings(W, b, x.unsqueeze(0), negative_slope=slope, iters=300)
        assert torch.isclose(torch.linalg.eigvalsh(T)[-1], r.hessian[0], rtol=1e-8)
