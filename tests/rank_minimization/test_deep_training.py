"""The training of `implicit_bias.rank_minimization.deep_training` on stacks of deep bias-free
ReLU networks: the certificate, the interpolation constraint (Problem 2) and the normalised
margin training (Problem 6). The networks themselves are tested in tests/test_homogeneous.py."""

from __future__ import annotations

import math

import pytest
import torch

from implicit_bias import homogeneous as hn
from implicit_bias.rank_minimization import deep_training as dt

D = torch.float64


def sphere_data(n: int = 12, d: int = 4, seed: int = 0, margin: float = 0.2):
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(d, generator=g, dtype=D)
    C = torch.randn(30 * n, d, generator=g, dtype=D)
    C = C / C.norm(dim=1, keepdim=True)
    X = C[(C @ t / t.norm()).abs() >= margin][:n]
    return X, torch.sign(X @ t), 1 + (X @ t).abs(), g


def test_certificate_is_a_lower_bound_and_exact_for_balanced_networks():
    X, y, _, g = sphere_data()
    Ws = hn.init_weights(6, 4, X.shape[1], 6, g)
    q = hn.forward(Ws, X).abs().max(-1).values
    assert bool((hn.norm_ratios(Ws).mean(-1) >= dt.certificate(Ws, q) - 1e-12).all())
    Wb = hn.balance(Ws)
    expected = q.pow(1 / 4) * torch.sqrt(4 / hn.squared_norm(Wb))
    assert torch.allclose(dt.certificate(Wb, q), expected, rtol=1e-12)


def test_gradient_alignment_is_one_at_an_exact_kkt_point(path_network):
    # one point x = e_1 with label / target 1; the path network with all weights 1 has N(x) = 1
    # and theta = grad N(x) (Euler: theta . grad N = depth N), a KKT point of Problems 2 and 6
    X = torch.eye(3, dtype=D)[:1]
    y = torch.ones(1, dtype=D)
    Ws = path_network(3, 4, 3, 1.0)
    assert math.isclose(float(dt.gradient_alignment(Ws, X, y)[0]), 1.0, rel_tol=1e-12)
    # an unbalanced network with the same function is not aligned with its gradient
    Wu = [Ws[0] * 2.0, Ws[1], Ws[2] / 2.0]
    assert float(dt.gradient_alignment(Wu, X, y)[0]) < 0.99


def test_projection_and_minimum_norm_descent():
    X, _, y_sq, g = sphere_data(n=8, d=4)
    Ws = hn.init_weights(3, 3, X.shape[1], 6, g, init="identity")
    near, res = dt.project_interpolation(dt.fit_scale(Ws, X, y_sq), X, y_sq, iters=12)
    assert float(res.max()) < 1e-10
    low, res2 = dt.minimum_norm_descent(near, X, y_sq, step=0.3, steps=80)
    assert float(res2.max()) < 1e-10
    assert bool((hn.squared_norm(low) < hn.squared_norm(near)).all())
    assert float(hn.interpolation_kkt_residual(low, X).max()) < 0.1
    # a (near-)KKT point of Problem 2 is balanced, as Lemma 14 says of the global minimisers
    F = hn.layer_norms(low)
    assert float((F.max(-1).values / F.min(-1).values).max()) < 1.05


def test_margin_training_follows_gradient_flow_towards_kkt_points():
    X, y, _, g = sphere_data(n=12, d=4)
    Ws = hn.init_weights(3, 3, X.shape[1], 8, g, init="identity")
    h = dt.train_margin(Ws, X, y, steps=600, step=0.03, final_step=0.002, checkpoints=(50,), margin_cap=50.0)
    assert h.steps == [50, 600]
    q = (y * hn.forward(Ws, X)).min(-1).values
    assert bool((q > 0).all()) and bool((q <= 50.0 * (1 + 1e-9)).all())
    nm = h.stacked("normalized_margin")
    assert bool((nm[-1] > nm[0]).all())
    eps = h.stacked("kkt_eps")
    assert bool((eps[-1] < eps[0]).all())
    cert = h.stacked("certificate")[-1]
    assert bool((hn.norm_ratios(Ws).mean(-1) >= cert - 1e-12).all())


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
    Ws = hn.init_weights(2, 3, X.shape[1], 4, g)
    with pytest.raises(ValueError, match="positive"):
        dt.train_margin(Ws, X, y, steps=0, step=0.01)
    with pytest.raises(ValueError, match="separate"):
        hn.margin_normalize(Ws, X, -torch.sign(hn.forward(Ws, X)[0]))
