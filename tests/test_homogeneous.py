"""The toolkit's deep homogeneous networks (`implicit_bias.homogeneous`) on known cases: a linear
network, a two-neuron network at its closed-form KKT point, a deep path network certified as a
KKT point by Euler's identity, and points known not to be KKT points."""

from __future__ import annotations

import math

import pytest
import torch

from implicit_bias import homogeneous as hn
from implicit_bias import models
from implicit_bias.ensembles import Ensemble

D = torch.float64


def sphere_data(n: int = 12, d: int = 4, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(d, generator=g, dtype=D)
    X = torch.randn(n, d, generator=g, dtype=D)
    X = X / X.norm(dim=1, keepdim=True)
    return X, torch.sign(X @ t)


def test_init_shapes_identity_and_errors():
    g = torch.Generator().manual_seed(0)
    Ws = hn.init_weights(3, 4, 5, 6, g, init="identity", noise=0.1)
    assert [tuple(W.shape) for W in Ws] == [(3, 6, 5), (3, 6, 6), (3, 6, 6), (3, 1, 6)]
    assert float((Ws[1] - torch.eye(6, dtype=D)).abs().max()) < 1.0       # near the identity
    # an integer seed is a fresh generator: the same weights twice
    assert all(torch.equal(a, b) for a, b in zip(hn.init_weights(2, 3, 4, 5, 7), hn.init_weights(2, 3, 4, 5, 7)))
    big = hn.init_weights(400, 2, 50, 50, 1)
    assert math.isclose(float(big[0].var()), 2 / 50, rel_tol=0.05)       # N(0, 2 / fan_in)
    with pytest.raises(ValueError, match="depth"):
        hn.init_weights(2, 1, 4, 6, g)
    with pytest.raises(ValueError, match="init"):
        hn.init_weights(2, 3, 4, 6, g, init="orthogonal")


def test_a_linear_network_is_the_product_of_its_matrices():
    X, _ = sphere_data()
    Ws = hn.init_weights(2, 3, 4, 5, 0)
    pre, post = hn.layer_outputs(Ws, X, activation=lambda z: z)
    product = Ws[2] @ Ws[1] @ Ws[0]                                       # (2, 1, 4)
    assert torch.allclose(post[-1], X @ product.transpose(-1, -2), atol=1e-13)
    # with ReLU, the stacked forward is every member's own forward, and the output bias adds
    out = hn.forward(Ws, X, bias=torch.tensor([0.5, -1.0], dtype=D))
    for e in range(2):
        single = hn.forward([W[e] for W in Ws], X)
        assert single.shape == (X.shape[0],)
        assert torch.allclose(out[e], single + (0.5 if e == 0 else -1.0), atol=1e-13)
    assert len(hn.features(Ws, X)) == 2
    with pytest.raises(ValueError, match="scalar output"):
        hn.forward([torch.ones(2, 4, dtype=D)], X)


def test_the_models_and_the_ensemble_engine_compute_the_same_network():
    X, y = sphere_data(n=10, d=4)
    nets = [models.MLP(4, 1, width=6, depth=3, bias=False).double() for _ in range(3)]
    ens = Ensemble.from_models(nets)
    Ws = ens.weight_matrices()
    assert torch.allclose(ens(X).squeeze(-1), hn.forward(Ws, X), atol=1e-13)
    pre, _ = models.layer_activations(nets[1], X)
    assert torch.equal(pre[-1].squeeze(-1), hn.forward([W[1] for W in Ws], X))


def test_jacobian_matches_autograd():
    X, _ = sphere_data(n=5)
    Ws = hn.init_weights(2, 3, X.shape[1], 4, 3)
    J = hn.jacobian(Ws, X)
    for e in range(2):
        ws = [W[e].clone().requires_grad_(True) for W in Ws]
        for i in range(X.shape[0]):
            grads = torch.autograd.grad(hn.forward(ws, X)[i], ws)
            assert torch.allclose(J[e, i], hn.flatten(grads), atol=1e-13)


def test_balance_margin_normalize_and_the_normalized_margin():
    X, y = sphere_data()
    Ws = hn.init_weights(4, 5, X.shape[1], 6, 2, init="identity")
    Ws = [W * (1 + l) for l, W in enumerate(Ws)]
    Wb = hn.balance(Ws)
    assert torch.allclose(hn.forward(Wb, X), hn.forward(Ws, X), atol=1e-12)
    assert torch.allclose(hn.layer_balance(Wb), torch.ones(4, dtype=D), rtol=1e-12)
    assert bool((hn.layer_balance(Ws) > 2).all())
    assert bool((hn.squared_norm(Wb) <= hn.squared_norm(Ws) + 1e-12).all())   # AM-GM
    assert torch.allclose(hn.unflatten(hn.flatten(Ws), Ws)[2], Ws[2])
    # the normalised margin does not depend on the scale (degree = depth)
    X = X[hn.forward(Ws, X)[0] != 0]                                      # drop inputs member 0 maps to 0
    yy = torch.sign(hn.forward(Ws, X)[0])
    q = hn.margins(Ws, X, yy)
    nm = hn.normalized_margin(q, hn.squared_norm(Ws).sqrt(), 5)
    W3 = hn.scale_outputs(Ws, torch.full((4,), 3.0, dtype=D))
    nm3 = hn.normalized_margin(hn.margins(W3, X, yy), hn.squared_norm(W3).sqrt(), 5)
    assert torch.allclose(nm, nm3, rtol=1e-12)
    Wm = hn.margin_normalize([W[:1] for W in Ws], X, yy)
    assert math.isclose(float(hn.margins(Wm, X, yy).min()), 1.0, rel_tol=1e-12)
    with pytest.raises(ValueError, match="separate"):
        hn.margin_normalize(Ws, X, yy)                                    # members 1-3 do not


def test_kkt_of_a_linear_max_margin_problem():
    # q_i(u) = z_i . u; the max-margin solution of z = e1, e2, (2, 2) is u = (1, 1), lambda = (1, 1, 0)
    Z = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]], dtype=D)
    u = torch.tensor([1.0, 1.0], dtype=D)
    kkt = hn.kkt_multipliers(u, Z, Z @ u, active_tol=1e-6)
    assert torch.allclose(kkt.multipliers, torch.tensor([1.0, 1.0, 0.0], dtype=D), atol=1e-12)
    assert float(kkt.stationarity) < 1e-12 and abs(float(kkt.slackness)) < 1e-12
    # u = (1, 2) is feasible but not a KKT point: over its active set {z_1} stationarity fails
    # by ||(0, 2)|| / ||(1, 2)||
    v = torch.tensor([1.0, 2.0], dtype=D)
    act = hn.kkt_multipliers(v, Z, Z @ v, active_tol=1e-6)
    assert math.isclose(float(act.stationarity), 2 / math.sqrt(5), rel_tol=1e-12)
    none = hn.kkt_multipliers(2 * v, Z, Z @ (2 * v), active_tol=1e-6)    # no active constraint
    assert float(none.stationarity) == 1.0 and not bool(none.multipliers.any())


def test_two_neuron_closed_form_kkt_point():
    # f(x) = a_1 relu(w_1.x) + a_2 relu(w_2.x) on x+ = e1 (y = +1), x- = e2 (y = -1): one neuron
    # per point, W = I, a = (1, -1) gives margins (1, 1), theta = grad q+ + grad q-, and
    # ||theta||^2 = 4, so the normalised margin is 1/4
    X = torch.eye(2, dtype=D)
    y = torch.tensor([1.0, -1.0], dtype=D)
    Ws = [torch.eye(2, dtype=D)[None], torch.tensor([[[1.0, -1.0]]], dtype=D)]
    q = hn.margins(Ws, X, y)
    assert torch.equal(q, torch.ones(1, 2, dtype=D))
    assert math.isclose(float(hn.normalized_margin(q, hn.squared_norm(Ws).sqrt(), 2)), 0.25, rel_tol=1e-12)
    J = hn.jacobian(Ws, X) * y.view(1, -1, 1)
    kkt = hn.kkt_multipliers(hn.flatten(Ws), J, q)
    assert torch.allclose(kkt.multipliers, torch.ones(1, 2, dtype=D), atol=1e-12)
    eps, delta = hn.kkt_residual(Ws, X, y)
    assert float(eps[0]) < 1e-12 and abs(float(delta[0])) < 1e-12
    # tilt the first neuron towards x-: still separating, but no rescaling is a KKT point
    Wt = [torch.tensor([[[1.0, 0.5], [0.0, 1.0]]], dtype=D), torch.tensor([[[1.0, -2.0]]], dtype=D)]
    eps_t, delta_t = hn.kkt_residual(Wt, X, y)
    assert float(eps_t[0]) > 0.1 or float(delta_t[0]) > 0.1


def test_a_certified_deep_kkt_point_and_an_unbalanced_one(path_network):
    # one point x = e_1 with label / target 1; the path network with all weights 1 has N(x) = 1
    # and theta = grad N(x) (Euler: theta . grad N = depth N): a KKT point of both problems
    X = torch.eye(3, dtype=D)[:1]
    y = torch.ones(1, dtype=D)
    Ws = path_network(3, 4, 5, 1.0)
    eps, delta = hn.kkt_residual(Ws, X, y)
    assert float(eps[0]) < 1e-12 and abs(float(delta[0])) < 1e-12
    assert float(hn.interpolation_kkt_residual(Ws, X)[0]) < 1e-12
    # an unbalanced network with the same function is no KKT point of interpolation
    Wu = [Ws[0] * 2.0, *Ws[1:-1], Ws[-1] / 2.0]
    assert float(hn.interpolation_kkt_residual(Wu, X)[0]) > 0.1
    # and the residual with a wrong given multiplier is large: theta = grad q, so lambda = 1 exactly
    J = hn.jacobian(Ws, X)
    assert float(hn.kkt_multipliers(hn.flatten(Ws), J, multipliers=torch.ones(1, 1, dtype=D)).stationarity) < 1e-12
    wrong = hn.kkt_multipliers(hn.flatten(Ws), J, multipliers=torch.full((1, 1), 0.5, dtype=D))
    assert math.isclose(float(wrong.stationarity), 0.5, rel_tol=1e-12)
    assert math.isnan(float(wrong.slackness))


def test_jacobian_refuses_shapes_it_would_misread():
    """Per-member inputs ``(E, n, d)`` or unstacked weights would be read with the wrong sample
    count; the error says what it takes."""
    X, _ = sphere_data(n=5)
    Ws = hn.init_weights(2, 3, X.shape[1], 4, 3)
    with pytest.raises(ValueError, match="inputs shared by the members"):
        hn.jacobian(Ws, X.expand(2, *X.shape))
    with pytest.raises(ValueError, match=r"W\[None\]"):
        hn.jacobian([W[0] for W in Ws], X)
