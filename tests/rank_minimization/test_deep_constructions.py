"""Theorems 4-5 constructions of `implicit_bias.rank_minimization.deep_constructions`, checked exactly."""

from __future__ import annotations

import math

import pytest
import torch

from implicit_bias import homogeneous as hn
from implicit_bias.rank_minimization import deep_constructions as dc

D = torch.float64


def reference(k: int, m: int = 5, d: int = 4, seed: int = 0, positive: bool = False):
    g = torch.Generator().manual_seed(seed)
    dims = [d] + [m] * (k - 1) + [1]
    Ws = [torch.randn(dims[i + 1], dims[i], generator=g, dtype=D) / math.sqrt(dims[i]) for i in range(k)]
    if positive:
        Ws[-1] = Ws[-1].abs()
    X = torch.randn(20, d, generator=g, dtype=D)
    X = X / X.norm(dim=1, keepdim=True)
    return Ws, X


@pytest.mark.parametrize("k,kp", [(2, 3), (2, 8), (3, 16)])
def test_theorem4_network(k, kp):
    Ws, X = reference(k, positive=True)
    B = dc.frobenius_bound(Ws)
    N2 = dc.theorem4_network(Ws, kp)
    assert len(N2) == kp
    assert torch.allclose(hn.forward(N2, X), hn.forward(Ws, X), atol=1e-12)
    assert float(hn.squared_norm(N2)) <= dc.theorem4_norm(k, kp, B) + 1e-10
    # balanced reference: equality
    Nb = dc.theorem4_network(hn.balance(Ws), kp)
    assert math.isclose(float(hn.squared_norm(Nb)), dc.theorem4_norm(k, kp, dc.frobenius_bound(hn.balance(Ws))), rel_tol=1e-10)
    assert torch.allclose(hn.norm_ratios(N2[k:]), torch.ones(kp - k, dtype=D))


@pytest.mark.parametrize("k,kp", [(2, 3), (2, 8), (3, 16)])
def test_theorem5_network(k, kp):
    Ws, X = reference(k)
    B = dc.frobenius_bound(Ws)
    N2 = dc.theorem5_network(Ws, kp)
    assert len(N2) == kp
    assert torch.allclose(hn.forward(N2, X), hn.forward(Ws, X), atol=1e-12)
    assert float(hn.squared_norm(N2)) <= dc.theorem5_norm(k, kp, B) + 1e-10
    if kp - k - 1 > 0:
        assert torch.allclose(hn.norm_ratios(N2[k:-1]), torch.full((kp - k - 1,), 1 / math.sqrt(2), dtype=D))


def test_bounds_and_certificate():
    assert math.isclose(dc.bound_from_norm(1.0, dc.theorem4_norm(2, 8, 3.0), 8), dc.theorem4_bound(2, 8, 3.0))
    assert math.isclose(dc.bound_from_norm(1.0, dc.theorem5_norm(2, 8, 3.0), 8), dc.theorem5_bound(2, 8, 3.0))
    assert dc.theorem4_bound(2, 10_000, 3.0) > 0.999
    assert abs(dc.theorem5_bound(2, 10_000, 3.0) - 1 / math.sqrt(2)) < 1e-3
    Ws, X = reference(4)
    q = float(hn.forward(Ws, X).abs().max())
    assert float(hn.norm_ratios(Ws).mean()) >= dc.certificate(Ws, q) - 1e-12


def test_errors():
    Ws, _ = reference(2)
    with pytest.raises(ValueError, match="exceed"):
        dc.theorem4_network(Ws, 2)
    with pytest.raises(ValueError, match="scalar output"):
        dc.theorem5_network([Ws[0], torch.ones(2, 5, dtype=D)], 4)
