"""The localized loss, its homogeneity, Proposition A.1's identities, the closed forms of
Proposition 2.2 and the float64 gradient-flow integrator, on cases with known answers."""

from __future__ import annotations

import math

import pytest
import torch

from implicit_bias import models
from implicit_bias.saddle_to_saddle import localized as lo

D = torch.float64


def problem(L: int = 3, width: int = 6, seed: int = 0, n: int = 12, d_in: int = 4, d_out: int = 2):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d_in, generator=g, dtype=D)
    G = torch.randn(n, d_out, generator=g, dtype=D)
    Ws = models.gaussian_weights([d_in] + [width] * (L - 1) + [d_out], 0.5, generator=g)
    return X, G, Ws


def nonneg_problem(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(12, 4, generator=g, dtype=D).abs()
    G = -torch.randn(12, 2, generator=g, dtype=D).abs()
    return X, G


@pytest.mark.parametrize("L", [2, 3, 6])
def test_homogeneity_and_euler(L: int) -> None:
    X, G, Ws = problem(L)
    base = lo.localized_loss(Ws, X, G)
    for lam in (0.1, 2.5):
        assert float(lo.localized_loss([lam * W for W in Ws], X, G)) == pytest.approx(lam**L * float(base), rel=1e-12)
    grads, value = lo.localized_gradient(Ws, X, G)
    euler = sum(float((g * W).sum()) for g, W in zip(grads, Ws))
    assert euler == pytest.approx(L * float(value), rel=1e-12)


@pytest.mark.parametrize("L", [2, 3, 5])
def test_proposition_a1_identities(L: int) -> None:
    """Along gradient flow, d||theta||/dt = -L ||theta||^(L-1) L_0(bar theta) and
    d bar theta/dt = -||theta||^(L-2) (I - bar theta bar theta^T) grad L_0(bar theta)."""
    X, G, Ws = problem(L, seed=1)
    theta = lo.flatten(Ws)
    r = theta.norm()
    unit = lo.unflatten(theta / r, Ws)
    g_theta = lo.flatten(lo.localized_gradient(Ws, X, G)[0])
    g_unit, l0_unit = lo.localized_gradient(unit, X, G)
    g_unit = lo.flatten(g_unit)
    velocity = -g_theta
    d_norm = float(theta @ velocity / r)
    assert d_norm == pytest.approx(float(-L * r ** (L - 1) * l0_unit), rel=1e-10)
    bar = theta / r
    d_bar = (velocity - bar * (bar @ velocity)) / r
    expected = -r ** (L - 2) * (g_unit - bar * (bar @ g_unit))
    assert torch.allclose(d_bar, expected, rtol=1e-10, atol=1e-14)


def test_output_bound() -> None:
    for L in (2, 3, 6):
        X, G, Ws = problem(L, seed=L)
        Y = lo.outputs(Ws, X)
        r = float(lo.squared_norm(Ws)) ** 0.5
        assert float(Y.norm()) <= (r / math.sqrt(L)) ** L * float(X.norm())


def test_cost_gradients_at_zero() -> None:
    y = torch.tensor([0, 2, 1, 2])
    ce = lambda Y: torch.nn.functional.cross_entropy(Y, y)
    assert torch.allclose(lo.cost_gradient_at_zero(ce, (4, 3)), lo.cross_entropy_gradient(y, 3))
    target = torch.randn(4, 3, dtype=D)
    mse = lambda Y: 0.5 * (Y - target).pow(2).sum() / 4
    assert torch.allclose(lo.cost_gradient_at_zero(mse, (4, 3)), -target / 4)


def test_speed_conversions() -> None:
    assert lo.unit_sphere_speed(8.0, 2) == pytest.approx(4.0)
    assert lo.sqrt_sphere_speed(lo.unit_sphere_speed(3.0, 6), 6) == pytest.approx(3.0)


@pytest.mark.parametrize("L", [2, 3, 4])
def test_closed_form_escape_direction(L: int) -> None:
    X, G = nonneg_problem()
    rho, s1 = lo.closed_form_escape(X, G, L, width=5)
    assert float(lo.squared_norm(rho)) == pytest.approx(L)
    assert float(lo.speed(rho, X, G)) == pytest.approx(s1, rel=1e-12)
    grads, _ = lo.localized_gradient(rho, X, G)
    for g, W in zip(grads, rho):
        assert torch.allclose(g, -s1 * W, atol=1e-12)
    assert float(lo.kkt_residual(rho, X, G)) < 1e-12
    # a generic direction is far from an escape direction
    _, _, Ws = problem(L, width=5, d_in=4, d_out=2)
    assert float(lo.kkt_residual(Ws, X, G)) > 0.1
    with pytest.raises(ValueError, match="X >= 0 and G <= 0"):
        lo.closed_form_escape(-X, G, L, 5)


@pytest.mark.parametrize("L", [2, 3, 4])
def test_flow_along_an_escape_direction_matches_the_unit_sphere_closed_form(L: int) -> None:
    X, G = nonneg_problem(1)
    rho, s1 = lo.closed_form_escape(X, G, L, width=3)
    r0 = 0.1
    path = lo.integrate_flow([W * r0 / math.sqrt(L) for W in rho], X, G, growth=5.0, rel_step=5e-3)
    s_unit = lo.unit_sphere_speed(s1, L)
    closed = lo.norm_along_escape(path.times, r0, s_unit, L)
    assert float(((path.norms - closed) / closed).abs().max()) < 1e-7
    assert float(path.cosines.min()) > 1 - 1e-12
    # the formula with the sqrt(L)-sphere speed of Definition 2.1 is wrong (except nowhere)
    wrong = lo.norm_along_escape(path.times, r0, s1, L)
    assert float(((path.norms - wrong) / path.norms).abs().nan_to_num(1.0).max()) > 0.5
    t_r = lo.escape_time(r0, float(path.norms[-1]), s_unit, L)
    assert t_r == pytest.approx(float(path.times[-1]), rel=1e-6)
    if L > 2:
        assert lo.escape_time(r0, float(path.norms[-1]), s_unit, L, printed=True) > 1.05 * t_r
        assert lo.blow_up_time(r0, s_unit, L) > float(path.times[-1])


def test_s_time_norm_formula_needs_the_factor_L() -> None:
    """||theta(s)|| = ||theta(0)|| exp(-L int_0^s L_0(bar theta)) along any flow path (Sec. 2.1)."""
    X, G, Ws = problem(3, seed=4)
    path = lo.integrate_flow(Ws, X, G, growth=3.0, rel_step=2e-3)
    s, f = path.s_time, path.unit_loss
    integral = torch.cat([torch.zeros(1, dtype=D), torch.cumsum(0.5 * (f[1:] + f[:-1]) * (s[1:] - s[:-1]), 0)])
    log_ratio = torch.log(path.norms / path.norms[0])
    assert torch.allclose(log_ratio, -3 * integral, rtol=1e-4, atol=1e-6)
    assert not torch.allclose(log_ratio, -integral, rtol=0.1)


def test_s_time_descent_is_scale_equivariant_on_l0() -> None:
    X, G, Ws = problem(4, seed=5)
    f = lambda Y: (G * Y).flatten(-2).sum(-1)
    stacked = [torch.stack([W, 1e-3 * W, 1e3 * W]) for W in Ws]
    dirs, vals, _ = lo.s_time_descent(stacked, X, f, eta0=0.05, steps=200, record_every=20)
    assert float((dirs[:, 1] - dirs[:, 0]).abs().max()) < 1e-10
    assert float((dirs[:, 2] - dirs[:, 0]).abs().max()) < 1e-10
    assert float(vals[-1, 0]) < float(vals[0, 0])


def test_integrate_flow_rejects_stacked_networks() -> None:
    X, G, Ws = problem(3)
    with pytest.raises(ValueError, match="one network"):
        lo.integrate_flow([W[None] for W in Ws], X, G)


def test_random_directions_on_the_sphere_and_descending() -> None:
    g = torch.Generator().manual_seed(3)
    X = torch.randn(10, 3, generator=g, dtype=torch.float64)
    G = torch.randn(10, 2, generator=g, dtype=torch.float64)
    Ws = lo.random_directions([3, 5, 5, 2], 32, X=X, G=G, generator=g)
    assert [tuple(W.shape) for W in Ws] == [(32, 5, 3), (32, 5, 5), (32, 2, 5)]
    assert torch.allclose(lo.squared_norm(Ws), torch.full((32,), 3.0, dtype=torch.float64))
    assert bool((lo.localized_loss(Ws, X, G) <= 0).all())
    # without data: the same draws with no sign flip (only the last layer's sign differs)
    g2 = torch.Generator().manual_seed(3)
    torch.randn(10, 3, generator=g2, dtype=torch.float64), torch.randn(10, 2, generator=g2, dtype=torch.float64)
    plain = lo.random_directions([3, 5, 5, 2], 32, generator=g2)
    assert torch.equal(plain[0], Ws[0]) and torch.equal(plain[-1].abs(), Ws[-1].abs())
    # one network when n is None
    one = lo.random_directions([3, 5, 2], generator=g)
    assert [tuple(W.shape) for W in one] == [(5, 3), (2, 5)] and float(lo.squared_norm(one)) == pytest.approx(2.0)
