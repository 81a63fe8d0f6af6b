"""Stacks of deep bias-free ReLU networks of `implicit_bias.rank_minimization.deep_training`:
forward, Jacobian, balancing, the interpolation constraint (Problem 2), the max-margin problem
(Problem 6) and the normalised margin training."""

from __future__ import annotations

import math

import pytest
import torch

from implicit_bias.rank_minimization import deep_constructions as dc
from implicit_bias.rank_minimization import deep_training as dt

D = torch.float64


def sphere_data(n: int = 12, d: int = 4, seed: int = 0, margin: float = 0.2):
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(d, generator=g, dtype=D)
    C = torch.randn(30 * n, d, generator=g, dtype=D)
    C = C / C.norm(dim=1, keepdim=True)
    X = C[(C @ t / t.norm()).abs() >= margin][:n]
    return X, torch.sign(X @ t), 1 + (X @ t).abs(), g


def test_init_and_forward_match_the_unbatched_network():
    X, *_ , g = sphere_data()
    Ws = dt.init_stack(3, 4, X.shape[1], 6, g, init="identity", noise=0.1)
    assert [tuple(W.shape) for W in Ws] == [(3, 6, 4), (3, 6, 6), (3, 6, 6), (3, 1, 6)]
    assert float((Ws[1] - torch.eye(6, dtype=D)).abs().max()) < 1.0       # near the identity
    out = dt.forward(Ws, X)
    for e in range(3):
        assert torch.allclose(out[e], dc.forward([W[e] for W in Ws], X), atol=1e-13)
    with pytest.raises(ValueError, match="depth"):
        dt.init_stack(2, 1, 4, 6, g)
    with pytest.raises(ValueError, match="init"):
        dt.init_stack(2, 3, 4, 6, g, init="orthogonal")


def test_jacobian_matches_autograd():
    X, *_, g = sphere_data(n=5)
    Ws = dt.init_stack(2, 3, X.shape[1], 4, g)
    J = dt.jacobian(Ws, X)
    for e in range(2):
        ws = [W[e].clone().requires_grad_(True) for W in Ws]
        for i in range(X.shape[0]):
            grads = torch.autograd.grad(dc.forward(ws, X)[i], ws)
            assert torch.allclose(J[e, i], torch.cat([gr.reshape(-1) for gr in grads]), atol=1e-13)


def test_balance_keeps_the_function_and_equalises_norms():
    X, *_, g = sphere_data()
    Ws = dt.init_stack(4, 5, X.shape[1], 6, g)
    Ws = [W * (1 + l) for l, W in enumerate(Ws)]
    Wb = dt.balance(Ws)
    assert torch.allclose(dt.forward(Wb, X), dt.forward(Ws, X), atol=1e-12)
    F = dt.layer_norms(Wb)
    assert torch.allclose(F, F[:, :1].expand_as(F), rtol=1e-12)
    assert bool((dt.squared_norms(Wb) <= dt.squared_norms(Ws) + 1e-12).all())   # AM-GM


def test_certificate_is_a_lower_bound_and_exact_for_balanced_networks():
    X, y, _, g = sphere_data()
    Ws = dt.init_stack(6, 4, X.shape[1], 6, g)
    q = dt.forward(Ws, X).abs().max(-1).values
    assert bool((dt.ratios(Ws).mean(-1) >= dt.certificate(Ws, q) - 1e-12).all())
    Wb = dt.balance(Ws)
    expected = q.pow(1 / 4) * torch.sqrt(4 / dt.squared_norms(Wb))
    assert torch.allclose(dt.certificate(Wb, q), expected, rtol=1e-12)


def single_unit_network(d: int, width: int, depth: int, c: float) -> list[torch.Tensor]:
    """One active path of weight c per layer (other units zero), fed by x = e_1."""
    Ws = [torch.zeros(1, width, d, dtype=D)]
    Ws[0][0, 0, 0] = c
    for _ in range(depth - 2):
        W = torch.zeros(1, width, width, dtype=D)
        W[0, 0, 0] = c
        Ws.append(W)
    last = torch.zeros(1, 1, width, dtype=D)
    last[0, 0, 0] = c
    return Ws + [last]


def test_kkt_residuals_vanish_at_exact_kkt_points():
    # one point x = e_1 with label / target 1; the path network with all weights 1 has N(x) = 1
    # and theta = grad N(x) (Euler: theta . grad N = depth N), a KKT point of Problems 2 and 6
    X = torch.eye(3, dtype=D)[:1]
    y = torch.ones(1, dtype=D)
    Ws = single_unit_network(3, 4, 3, 1.0)
    eps, delta = dt.kkt_residual(Ws, X, y)
    assert float(eps[0]) < 1e-12 and abs(float(delta[0])) < 1e-12
    assert float(dt.interpolation_kkt_residual(Ws, X)[0]) < 1e-12
    assert math.isclose(float(dt.gradient_alignment(Ws, X, y)[0]), 1.0, rel_tol=1e-12)
    # an unbalanced network with the same function is no KKT point
    Wu = [Ws[0] * 2.0, Ws[1], Ws[2] / 2.0]
    assert float(dt.interpolation_kkt_residual(Wu, X)[0]) > 0.1


def test_projection_and_minimum_norm_descent():
    X, _, y_sq, g = sphere_data(n=8, d=4)
    Ws = dt.init_stack(3, 3, X.shape[1], 6, g, init="identity")
    near, res = dt.project_interpolation(dt.fit_scale(Ws, X, y_sq), X, y_sq, iters=12)
    assert float(res.max()) < 1e-10
    low, res2 = dt.minimum_norm_descent(near, X, y_sq, step=0.3, steps=80)
    assert float(res2.max()) < 1e-10
    assert bool((dt.squared_norms(low) < dt.squared_norms(near)).all())
    assert float(dt.interpolation_kkt_residual(low, X).max()) < 0.1
    # a (near-)KKT point of Problem 2 is balanced, as Lemma 14 says of the global minimisers
    F = dt.layer_norms(low)
    assert float((F.max(-1).values / F.min(-1).values).max()) < 1.05


def test_margin_training_follows_gradient_flow_towards_kkt_points():
    X, y, _, g = sphere_data(n=12, d=4)
    Ws = dt.init_stack(3, 3, X.shape[1], 8, g, init="identity")
    h = dt.train_margin(Ws, X, y, steps=600, step=0.03, final_step=0.002, checkpoints=(50,), margin_cap=50.0)
    assert h.steps == [50, 600]
    q = (y * dt.forward(Ws, X)).min(-1).values
    assert bool((q > 0).all()) and bool((q <= 50.0 * (1 + 1e-9)).all())
    nm = h.stacked("normalized_margin")
    assert bool((nm[-1] > nm[0]).all())
    eps = h.stacked("kkt_eps")
    assert bool((eps[-1] < eps[0]).all())
    cert = h.stacked("certificate")[-1]
    assert bool((dt.ratios(Ws).mean(-1) >= cert - 1e-12).all())


def test_logistic_loss_is_stable_at_large_margins():
    q = torch.tensor([[1e3, 2e3], [-1.0, 5.0]], dtype=D)
    out = dt._log_loss(q, "logistic")
    assert bool(torch.isfinite(out).all())
    assert math.isclose(float(out[0]), -1e3, rel_tol=1e-9)
    expected = math.log(math.log1p(math.e) + math.log1p(math.exp(-5.0)))
    assert math.isclose(float(out[1]), expected, rel_tol=1e-12)
    with pytest.raises(ValueError, match="loss"):
        dt._log_loss(q, "hinge")


def test_bad_arguments_are_rejected():
    X, y, _, g = sphere_data()
    Ws = dt.init_stack(2, 3, X.shape[1], 4, g)
    with pytest.raises(ValueError, match="positive"):
        dt.train_margin(Ws, X, y, steps=0, step=0.01)
    with pytest.raises(ValueError, match="separate"):
        dt.margin_normalize(Ws, X, -torch.sign(dt.forward(Ws, X)[0]))
