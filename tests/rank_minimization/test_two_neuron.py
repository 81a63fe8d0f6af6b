"""The batched two-neuron simulator and the closed forms of `implicit_bias.rank_minimization.two_neuron`."""

from __future__ import annotations

import math

import pytest
import torch

from implicit_bias import spectra
from implicit_bias.rank_minimization import two_neuron as tn

D = torch.float64


def random_problem(R: int, seed: int, lo: float = math.pi / 2 + 0.05, hi: float = math.pi - 0.05):
    g = torch.Generator().manual_seed(seed)
    theta = lo + (hi - lo) * torch.rand(R, generator=g, dtype=D)
    psi = 0.3 + (math.pi - 0.6) * torch.rand(R, generator=g, dtype=D)
    X, Y = tn.datasets_with_angles(theta, psi, g)
    return X, Y, theta, psi, g


def test_paper_dataset_angle():
    X, Y = tn.paper_dataset()
    theta = tn.angle_between(X[:, 0], X[:, 1])
    assert math.isclose(float(theta), math.acos((0.99**2 - 1) / (1 + 0.99**2)), rel_tol=1e-12)
    assert torch.allclose(X.norm(dim=0), torch.ones(2, dtype=D))
    assert torch.equal(Y, torch.eye(2, dtype=D))


def test_datasets_have_requested_angles():
    X, Y, theta, psi, _ = random_problem(50, 0)
    assert torch.allclose(tn.angle_between(X[..., 0], X[..., 1]), theta, atol=1e-12)
    assert torch.allclose(tn.angle_between(Y[..., 0], Y[..., 1]), psi, atol=1e-12)
    with pytest.raises(ValueError, match="input angles"):
        tn.datasets_with_angles(torch.tensor([4.0]), torch.tensor([1.0]))


def test_grads_match_autograd():
    X, Y, *_ = random_problem(7, 1)
    g = torch.Generator().manual_seed(3)
    W = torch.randn(7, 2, 2, generator=g, dtype=D).requires_grad_(True)
    V = torch.randn(7, 2, 2, generator=g, dtype=D).requires_grad_(True)
    gW, gV, L = tn.grads(W, V, X, Y)
    aW, aV = torch.autograd.grad(tn.loss(W, V, X, Y).sum(), (W, V))
    assert torch.allclose(gW, aW, atol=1e-12) and torch.allclose(gV, aV, atol=1e-12)
    assert torch.allclose(L, tn.loss(W, V, X, Y))


def test_fused_steps_match_plain_gd():
    X, Y, *_ = random_problem(5, 2)
    W0, V0 = tn.paper_init(5, 0.3, torch.Generator().manual_seed(4))
    W, V = W0.clone(), V0.clone()
    tn.gd_steps(W, V, X, Y, 0.05, 20)
    W2, V2 = W0.clone(), V0.clone()
    for _ in range(20):
        gW, gV, _ = tn.grads(W2, V2, X, Y)
        W2, V2 = W2 - 0.05 * gW, V2 - 0.05 * gV
    assert torch.allclose(W, W2, atol=1e-13) and torch.allclose(V, V2, atol=1e-13)


def test_batched_equals_loop():
    X, Y = tn.paper_dataset()
    W0, V0 = tn.paper_init(6, 1e-2, torch.Generator().manual_seed(5))
    sim = tn.simulate(W0, V0, X, Y, lr=5e-2, steps=3000, check_every=100)
    Wl, Vl = tn.simulate_loop(W0, V0, X, Y, lr=5e-2, steps=3000, check_every=100)
    assert torch.allclose(sim.W, Wl, atol=1e-10) and torch.allclose(sim.V, Vl, atol=1e-10)


def test_regions_and_private_neurons():
    X, _ = tn.paper_dataset()
    W = torch.stack([X[:, 0] - X[:, 1], X[:, 1] - X[:, 0]])           # S1, S2
    assert tn.region_codes(W, X).tolist() == [tn.S1, tn.S2]
    assert tn.region_codes(-(X[:, 0] + X[:, 1]).view(1, 2), X).tolist() == [tn.DEAD]
    assert tn.region_codes((X[:, 0] + X[:, 1]).view(1, 2), X).tolist() == [tn.BOTH]
    assert bool(tn.has_private_neurons(W, X))
    assert tn.pattern(torch.tensor([[tn.S2, tn.S1], [tn.BOTH, tn.DEAD]])) == ["S1,S2", "D,S"]
    # widths of the cones: S_i span theta, S and D span pi - theta
    phi = torch.linspace(0, 2 * math.pi, 200_001, dtype=D)[:-1]
    codes = tn.region_of_angle(phi, X)
    theta = float(tn.angle_between(X[:, 0], X[:, 1]))
    for code, width in ((tn.S1, theta), (tn.S2, theta), (tn.BOTH, math.pi - theta), (tn.DEAD, math.pi - theta)):
        assert abs(float((codes == code).double().mean()) * 2 * math.pi - width) < 1e-4


def test_theorem1_construction():
    g = torch.Generator().manual_seed(6)
    R = 500
    ang = 0.01 + (math.pi - 0.01) * torch.rand(R, generator=g, dtype=D)
    a = 2 * math.pi * torch.rand(R, generator=g, dtype=D)
    norms = 0.1 + 3 * torch.rand(R, 2, generator=g, dtype=D)
    X = torch.stack([tn.unit(a) * norms[:, :1], tn.unit(a + ang) * norms[:, 1:]], dim=-1)
    Y = torch.randn(R, 2, 2, generator=g, dtype=D)
    W, V = tn.theorem1_solution(X, Y)
    resid = (tn.forward(W, V, X) - Y).norm(dim=(-2, -1)) / Y.norm(dim=(-2, -1))
    s = spectra.singular_values(W)
    assert float(resid.max()) < 1e-10
    assert float((s[:, 1] / s[:, 0]).max()) < 1e-12
    assert bool(tn.has_private_neurons(W, X).all())


def test_closed_form_is_the_gd_limit():
    X, Y, theta, _, g = random_problem(400, 7)
    W0, V0 = tn.paper_init(400, 1e-3, g, zero_v=True)
    split = tn.is_split(tn.region_codes(W0, X))
    assert split.any() and (~split).any()
    sim = tn.simulate(W0[split], V0[split], X[split], Y[split], lr=1e-2, steps=20_000)
    Wc, Vc = tn.closed_form_limit(W0[split], X[split], Y[split])
    assert bool(sim.converged.all())
    assert float((sim.W - Wc).abs().max()) < 1e-4 and float((sim.V - Vc).abs().max()) < 1e-4
    # the limit's stable rank is close to the ideal 2 / (1 + |cos theta|) for tiny init
    sr = tn.stable_rank_2x2(sim.W)
    assert float((sr - tn.ideal_stable_rank(theta[split])).abs().max()) < 1e-2
    Wn, _ = tn.closed_form_limit(W0[~split], X[~split], Y[~split])
    assert bool(torch.isnan(Wn).all())


def test_stable_rank_2x2_matches_svd():
    M = torch.randn(100, 2, 2, generator=torch.Generator().manual_seed(8), dtype=D)
    assert torch.allclose(tn.stable_rank_2x2(M), spectra.stable_rank(M), atol=1e-12)


def test_dead_neuron_never_moves():
    X, Y = tn.paper_dataset()
    dead_dir = -(X[:, 0] + X[:, 1]) / (X[:, 0] + X[:, 1]).norm()
    W0 = torch.stack([1e-3 * dead_dir, 1e-3 * (X[:, 0] - X[:, 1])]).unsqueeze(0)
    V0 = 1e-3 * torch.ones(1, 2, 2, dtype=D)
    sim = tn.simulate(W0, V0, X, Y, lr=1e-2, steps=2000, stop_dead=False)
    assert torch.equal(sim.W[0, 0], W0[0, 0]) and torch.equal(sim.V[0, :, 0], V0[0, :, 0])
    assert bool(sim.dead[0]) and not bool(sim.converged[0])


def test_theorem_constants():
    theta = torch.tensor([math.pi / 2 + 0.01, 2.0, math.pi - 0.01], dtype=D)
    lo, hi = tn.thm3_angle_interval(theta)
    assert torch.allclose(lo, math.pi / 2 - (theta - math.pi / 2))
    assert torch.allclose(hi, 3 * math.pi / 4 + (theta - math.pi / 2) / 2)
    assert bool((tn.thm3_probability_bound(theta) > 1 / 8).all())
    assert bool((tn.thm3_probability_bound(theta) < 1 / 2).all())
    assert bool((tn.thm3_init_bound(theta) <= tn.thm2_init_bound(theta)).all())
    assert math.isclose(float(tn.ideal_stable_rank(math.pi / 2)), 2.0)


def test_bad_arguments_are_rejected():
    X, Y = tn.paper_dataset()
    W0, V0 = tn.paper_init(3, 1e-2)
    with pytest.raises(ValueError, match="lr"):
        tn.simulate(W0, V0, X, Y, lr=-1.0, steps=10)
    with pytest.raises(ValueError, match="shape"):
        tn.simulate(W0[0], V0[0], X, Y, lr=0.1, steps=10)
    with pytest.raises(FloatingPointError, match="diverged"):
        tn.simulate(100 * torch.ones(1, 2, 2, dtype=D), torch.ones(1, 2, 2, dtype=D), X, Y, lr=10.0, steps=100,
                    check_every=10)


def test_reachable_and_final_regions():
    X = torch.stack([tn.unit(torch.tensor(math.pi / 6, dtype=D)), tn.unit(torch.tensor(5 * math.pi / 6, dtype=D))], -1)
    theta = float(tn.angle_between(X[:, 0], X[:, 1]))          # 120 degrees
    u = tn.boundary_ray(X, 0)
    assert abs(float(u @ X[:, 1])) < 1e-15 and float(u @ X[:, 0]) > 0
    # the wedge between U_1 and x_1 has width theta - pi/2
    assert math.isclose(float(tn.angle_between(u, X[:, 0])), theta - math.pi / 2, rel_tol=1e-9)
    r0 = 0.05
    perp = torch.stack([-X[1, 0], X[0, 0]])                     # x_1 rotated by +90 degrees
    inside = [X[:, 0], 3 * X[:, 0] + 0.5 * u, 0.04 * perp + 2 * X[:, 0], -0.04 * perp + 2 * X[:, 0]]
    assert all(bool(tn.in_reachable(w, X, 0, r0)) for w in inside)
    outside = [X[:, 1], 2 * X[:, 0] - 0.2 * perp, -X[:, 0], 2 * X[:, 0] + 2 * perp]
    assert not any(bool(tn.in_reachable(w, X, 0, r0)) for w in outside)
    assert not bool(tn.in_final_region(0.5 * X[:, 0], X, 0, r0, 0.0))
    assert bool(tn.in_final_region(1.2 * X[:, 0], X, 0, r0, 0.0))
    b = tn.region_boundaries(X)
    assert b.shape == (4,) and bool((b >= 0).all() and (b < 2 * math.pi).all())


def test_outcome_classes():
    X, Y = tn.paper_dataset()
    W0 = 0.1 * torch.stack([torch.stack([X[:, 0] - X[:, 1], X[:, 1] - X[:, 0]]),       # split
                            torch.stack([-(X[:, 0] + X[:, 1]), X[:, 1] - X[:, 0]])])   # one dead
    sim = tn.simulate(W0, torch.zeros_like(W0), X, Y, lr=1e-2, steps=5000)
    assert tn.outcome_classes(sim, X).tolist() == [0, 2]


def test_event_E_scalar_and_batched_angles():
    X, _ = tn.paper_dataset()
    theta = float(tn.angle_between(X[:, 0], X[:, 1]))
    W = torch.stack([X.T, 0.5 * X.T, X.T])            # rows x_1, x_2: in E; too short; not converged
    conv = torch.tensor([True, True, False])
    expected = [True, False, False]
    assert tn.event_E(W, conv, theta).tolist() == expected
    assert tn.event_E(W, conv, torch.full((3,), theta, dtype=D)).tolist() == expected


def test_closed_form_without_balance_correction_differs():
    X, Y, theta, _, g = random_problem(300, 11)
    W0, V0 = tn.paper_init(300, 0.2, g, zero_v=True)
    split = tn.is_split(tn.region_codes(W0, X))
    Wc, _ = tn.closed_form_limit(W0[split], X[split], Y[split])
    Wn, _ = tn.closed_form_limit(W0[split], X[split], Y[split], balance=False)
    # with balance=False each neuron ends with w.x_j = 1; with it, the limit keeps Lemma 9's invariant
    sim = tn.simulate(W0[split], V0[split], X[split], Y[split], lr=1e-2, steps=20_000)
    assert float((sim.W - Wc).abs().max()) < 1e-3 < float((sim.W - Wn).abs().max())


def test_lemma6_norm_interval():
    theta = torch.tensor([math.pi / 2 + 0.1, 2.5], dtype=D)
    lo, hi = tn.lemma6_norm_interval(theta, torch.tensor([[1e-4, 0.3], [1e-4, 1e-4]], dtype=D))
    assert torch.allclose(lo, torch.full((2, 2), math.sqrt(3) / 2, dtype=D))
    # tiny initialisation: c = cos(theta - pi/2) = sin(theta)
    assert math.isclose(float(hi[1, 0]), math.sqrt(0.25 + 4 / (3 * math.sin(2.5) ** 2)), rel_tol=1e-12)
    # a larger initial norm can only widen the interval
    assert float(hi[0, 1]) >= float(hi[0, 0])


def test_stacked_steps_match_bmm_steps():
    R = tn.STACKED_FROM
    X, Y, *_ = random_problem(R, 11)
    W0, V0 = tn.paper_init(R, 0.3, torch.Generator().manual_seed(12))
    W, V = W0.clone(), V0.clone()
    tn.gd_steps(W, V, X, Y, 0.05, 30)                       # stacked path (R >= STACKED_FROM)
    W2, V2 = W0[:-1].clone(), V0[:-1].clone()
    tn.gd_steps(W2, V2, X[:-1], Y[:-1], 0.05, 30)           # bmm path
    assert torch.allclose(W[:-1], W2, atol=1e-14) and torch.allclose(V[:-1], V2, atol=1e-14)


def test_stuck_runs_are_stopped_and_never_converge():
    X, Y = tn.paper_dataset()
    # both neurons in S_1 (active on x_1 only): x_2 is served by no neuron
    w = X[:, 0] - X[:, 1]
    W0 = torch.stack([w, 0.5 * w]).unsqueeze(0) * 0.1
    V0 = torch.full((1, 2, 2), 0.1, dtype=D)
    sim = tn.simulate(W0, V0, X, Y, lr=0.05, steps=20_000, check_every=100)
    assert not bool(sim.converged[0]) and int(sim.steps[0]) < 20_000
    assert abs(float(sim.loss[0]) - 0.5) < 1e-6               # x_2's loss, 1/2 ||y_2||^2
    free = tn.simulate(W0, V0, X, Y, lr=0.05, steps=20_000, check_every=100, stop_stuck=False)
    assert not bool(free.converged[0]) and torch.allclose(free.W, sim.W, atol=1e-6)
    # a split start is never stuck
    Ws = torch.stack([w, -w]).unsqueeze(0) * 0.1
    assert not bool(tn.stuck(Ws, V0, X, Y, 1e-12)[0])


def test_paper_init_radii():
    W, V = tn.paper_init(50, 1e-4, torch.Generator().manual_seed(1))
    W2, V2 = tn.paper_init(50, 1e-4, torch.Generator().manual_seed(1), v_radius=1e-4)
    assert torch.allclose(W, W2) and torch.allclose(V, V2, rtol=1e-12, atol=0)
    r = torch.linspace(0, 3e-4, 50, dtype=D)
    _, V3 = tn.paper_init(50, 1e-4, torch.Generator().manual_seed(1), v_radius=r)
    assert torch.allclose(V3.norm(dim=-2), r.unsqueeze(-1).expand(50, 2), atol=1e-18)


def test_binomial_interval():
    lo, hi = tn.binomial_interval(30, 100, 0.95, "exact")
    assert 0.21 < lo < 0.3 < hi < 0.4
    lo0, hi0 = tn.binomial_interval(0, 1000, 0.99, "exact")
    assert lo0 == 0.0 and math.isclose(hi0, 1 - 0.005 ** (1 / 1000), rel_tol=1e-6)
    with pytest.raises(ValueError):
        tn.binomial_interval(0, 0)


def test_served_pairs_and_survival_rule():
    X, Y = tn.paper_dataset()
    w = X[:, 0] - X[:, 1]
    W = torch.stack([-w, w]).unsqueeze(0)                     # neuron 0 in S2, neuron 1 in S1
    xj, yj = tn.served_pairs(W, X, Y)
    assert torch.equal(xj[0, 0], X[:, 1]) and torch.equal(xj[0, 1], X[:, 0])
    assert torch.equal(yj[0, 0], Y[:, 1]) and torch.equal(yj[0, 1], Y[:, 0])
    p = (W[0] * xj[0]).sum(-1)                                # both positive
    V_ok = torch.zeros(1, 2, 2, dtype=D)
    V_bad = V_ok.clone()
    V_bad[0, :, 0] = -2 * float(p[0]) * Y[:, 1]               # q_0 = -2 p_0: p_0 + q_0 < 0
    assert bool(tn.split_survives(W, V_ok, X, Y)[0]) and not bool(tn.split_survives(W, V_bad, X, Y)[0])
    # and the rule is right for this start: the neuron serving x_2 dies
    sim = tn.simulate(W * 1e-3, V_bad * 1e-3, X, Y, lr=1e-2, steps=20_000)
    assert not bool(sim.converged[0])
