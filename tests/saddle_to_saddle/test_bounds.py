"""The bound calculators of Theorem 3.1 and Propositions 3.3-3.4."""

from __future__ import annotations

import math

import pytest
import torch

from implicit_bias import models
from implicit_bias.saddle_to_saddle import bounds, structure
from implicit_bias.saddle_to_saddle import localized as lo


def test_theorem31_forms_agree_and_vacuity_threshold() -> None:
    g = torch.Generator().manual_seed(0)
    X = torch.randn(20, 5, generator=g, dtype=torch.float64)
    G = torch.randn(20, 3, generator=g, dtype=torch.float64)
    s = 0.9 * float(X.norm() * G.norm())
    k = bounds.kappa(X, G, s)
    c = bounds.theorem31_c(k)
    assert c == pytest.approx(k * math.sqrt(2 * math.log(k)))
    layers = torch.arange(1, 40)
    assert torch.allclose(bounds.theorem31_bound(layers, c), bounds.theorem31_appendix_bound(layers, X, G, s))
    b = bounds.theorem31_bound(layers, c)
    below_one = layers[b < 1]
    assert int(below_one.min()) == math.floor(bounds.vacuity_depth(c)) + 1
    assert math.isinf(float(bounds.theorem31_bound(1, 2.0)))
    assert bounds.theorem31_c(1.0) == 0.0


@pytest.mark.parametrize("seed", range(3))
def test_speed_upper_bound_holds_for_random_networks(seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(15, 4, generator=g, dtype=torch.float64)
    G = torch.randn(15, 3, generator=g, dtype=torch.float64)
    bound = bounds.speed_upper_bound(X, G)
    assert bound <= float(X.norm() * G.norm()) + 1e-12
    for depth in (2, 3, 5):
        Ws = lo.to_sphere(models.gaussian_weights([4] + [6] * (depth - 1) + [3], 1.0, (64,), generator=g))
        assert float(lo.localized_loss(Ws, X, G).abs().max()) <= bound + 1e-12
    assert bounds.kappa_lower_bound(X, G) >= 1.0


def test_speed_upper_bound_is_attained_for_rank_one_data() -> None:
    u = torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)
    v = torch.tensor([0.3, 1.0, 2.0, 0.1], dtype=torch.float64)
    X, G = torch.outer(v, u), -torch.outer(v, torch.ones(2, dtype=torch.float64))
    rho, s1 = lo.closed_form_escape(X, G, 4, width=3)
    assert bounds.speed_upper_bound(X, G) == pytest.approx(s1)
    assert bounds.kappa_lower_bound(X, G) == pytest.approx(1.0)


def test_prop33_bound() -> None:
    G = torch.ones(4, 1, dtype=torch.float64)                       # ||G|| = 2
    assert bounds.prop33_bound(G, 1.0, 0.1) == pytest.approx(8 * 2 * 0.1 / 0.8)
    assert math.isinf(bounds.prop33_bound(G, 1.0, 0.6))


@pytest.mark.parametrize("seed", range(4))
def test_prop34_key_inequality_holds_in_the_ball_and_fails_outside(seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(30, 6, generator=g, dtype=torch.float64)
    G = torch.randn(30, 2, generator=g, dtype=torch.float64)
    L = 4
    Ws = models.gaussian_weights([6, 8, 8, 8, 2], 1.0, (64,), generator=g)
    Ws = lo.to_sphere(Ws)
    Ws[-1] = Ws[-1] * torch.sign(lo.localized_loss(Ws, X, G))[:, None, None] * -1   # make L_0 < 0
    s0 = lo.speed(Ws, X, G)
    st = structure.layer_structure(Ws, X)
    lhs, rhs = bounds.prop34_sides(st.srank_Z, X, G, s0)
    assert bool((lhs <= rhs + 1e-9).all())


def test_prop34_key_inequality_is_tight_for_rank_one_data_and_fails_outside_the_ball() -> None:
    """X = u v^T, G = -g v^T with u, v, g >= 0: the closed-form escape direction reaches
    ||X|| ||G||, both sides are 0; scaled outside the ball ||theta||^2 <= L it is violated."""
    g = torch.Generator().manual_seed(7)
    u = torch.rand(5, generator=g, dtype=torch.float64)
    v = torch.rand(20, generator=g, dtype=torch.float64)
    w = torch.rand(3, generator=g, dtype=torch.float64)
    X, G = torch.outer(v, u), -torch.outer(v, w)                  # rows are samples
    for L in (2, 3, 5):
        rho, s1 = lo.closed_form_escape(X, G, L, width=4)
        assert s1 == pytest.approx(float(X.norm() * G.norm()))
        lhs, rhs = bounds.prop34_sides(structure.layer_structure(rho, X).srank_Z, X, G, s1)
        assert float(lhs) == pytest.approx(0.0, abs=1e-9) and float(rhs) == pytest.approx(0.0, abs=1e-9)
        big = [1.1 * W for W in rho]
        lhs_b, rhs_b = bounds.prop34_sides(structure.layer_structure(big, X).srank_Z, X, G,
                                           float(lo.speed(big, X, G)))
        assert float(lhs_b) > float(rhs_b) + 0.1


def test_prop34_threshold() -> None:
    X = torch.ones(2, 2, dtype=torch.float64)
    G = torch.ones(2, 1, dtype=torch.float64)
    assert bounds.prop34_threshold(X, G, 1.0, 0.5, 4) == pytest.approx(2 * math.log(2 * math.sqrt(2)) / 2)
    with pytest.raises(ValueError):
        bounds.prop34_threshold(X, G, 1.0, 1.5, 4)


def test_theorem31_constants() -> None:
    X = torch.eye(2, dtype=torch.float64)                           # ||X||_F = sqrt(2)
    G = torch.ones(2, 1, dtype=torch.float64)                       # ||G||_F = sqrt(2)
    k, c, v = bounds.theorem31_constants(X, G, 0.5)
    assert k == pytest.approx(4.0)
    assert c == pytest.approx(4.0 * math.sqrt(2 * math.log(4.0)))
    assert v == pytest.approx(81 * c * c)
    one = torch.ones(1, 1, dtype=torch.float64)
    assert bounds.theorem31_constants(one, one, 1.0) == (1.0, 0.0, 0.0)   # kappa = 1: c = 0, the bound is 0


def test_prop34_check_drops_ascent_directions_and_is_tight_at_rank_one() -> None:
    """Rank-one data at its closed-form optimum: both sides are 0 (gap 0); the same network with
    the last layer negated has L_0 > 0 and is dropped; scaled outside the ball the gap is
    2 L log 1.1."""
    u = torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)
    v = torch.tensor([0.3, 1.0, 2.0, 0.1], dtype=torch.float64)
    X, G = torch.outer(v, u), -torch.outer(v, torch.ones(2, dtype=torch.float64))
    L = 4
    rho, _ = lo.closed_form_escape(X, G, L, width=3)
    stacked = [torch.stack([W, W]) for W in rho]
    stacked[-1][1] = -stacked[-1][1]
    chk = bounds.prop34_check(stacked, X, G, ps=(0.5,))
    assert chk.points == 1 and abs(chk.gap) < 1e-9
    out = bounds.prop34_check([1.1 * W[:1] for W in stacked], X, G, ps=(0.5,))
    assert out.points == 1 and out.gap == pytest.approx(2 * L * math.log(1.1))


@pytest.mark.parametrize("seed", range(2))
def test_prop34_check_holds_on_random_points_of_the_ball(seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(30, 6, generator=g, dtype=torch.float64)
    G = torch.randn(30, 2, generator=g, dtype=torch.float64)
    Ws = lo.random_directions([6, 8, 8, 8, 2], 64, X=X, G=G, generator=g)
    chk = bounds.prop34_check(Ws, X, G)
    assert chk.points == 64 and chk.gap <= 1e-9 and chk.failures == 0


def test_nearly_rank_one_data() -> None:
    d = bounds.NearlyRankOne.sample(24, 6, 2, generator=torch.Generator().manual_seed(0))
    for w in (d.u, d.v, d.g):
        assert bool((w >= 0).all()) and float(w.norm()) == pytest.approx(1.0)
    assert float(d.E.norm()) == pytest.approx(1.0)
    assert torch.equal(d.X(0.0), d.rank_one) and torch.allclose(d.X(0.1) - d.rank_one, 0.1 * d.E)
    assert torch.equal(d.G, -torch.outer(d.v, d.g))
    # eps = 0: rank one and aligned, kappa = 1 at the closed-form speed ||G^T v|| ||u|| = 1
    _, s = lo.closed_form_escape(d.rank_one, d.G, 4, width=3)
    assert s == pytest.approx(1.0) and bounds.kappa(d.rank_one, d.G, s) == pytest.approx(1.0)
    # the draws come in the order u, v, g, E
    g = torch.Generator().manual_seed(0)
    u = torch.rand(6, generator=g, dtype=torch.float64)
    assert torch.allclose(d.u, u / u.norm())
