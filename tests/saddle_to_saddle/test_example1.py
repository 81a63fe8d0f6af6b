"""Example 1: the data, Eq. (2) and Eq. (6) against direct computation."""

from __future__ import annotations

import math

import pytest
import torch

from implicit_bias.saddle_to_saddle import example1 as ex
from implicit_bias.saddle_to_saddle import localized as lo
from implicit_bias.spectra import singular_values


def test_circle_data() -> None:
    X, G = ex.circle_data()
    assert X.shape == (8, 2) and G.shape == (8, 1)
    assert torch.allclose(X.norm(dim=1), torch.ones(8, dtype=X.dtype))
    assert G[:, 0].tolist() == [-1, 1, -1, 1, -1, 1, -1, 1]
    assert torch.allclose(X[1], torch.tensor([1.0, 0.0], dtype=X.dtype), atol=1e-15)   # j = 2: axis, G = +1


def test_eq2_speed_sign_and_ranks() -> None:
    X, G = ex.circle_data()
    assert float(lo.localized_loss(ex.eq2_weights(-1.0), X, G)) == pytest.approx(-0.5, abs=1e-14)
    assert float(lo.localized_loss(ex.eq2_weights(1.0), X, G)) == pytest.approx(0.5, abs=1e-14)
    Ws = ex.eq2_weights(-1.0)
    assert [float(W.norm()) for W in Ws] == pytest.approx([1.0, 1.0, 1.0])
    assert singular_values(Ws[0]).tolist() == pytest.approx([2**-0.5, 2**-0.5])
    # the network computes -sigma(|x1| - |x2|)/4
    Z = torch.randn(50, 2, dtype=X.dtype)
    assert torch.allclose(lo.outputs(Ws, Z)[:, 0], -torch.relu(Z[:, 0].abs() - Z[:, 1].abs()) / 4)
    wide = ex.embed(Ws, 16)
    assert torch.allclose(lo.outputs(wide, Z), lo.outputs(Ws, Z))
    with pytest.raises(ValueError):
        ex.embed(Ws, 2)


def test_eq6_equals_the_direct_sum_and_peaks_at_sqrt2_minus_1() -> None:
    phi = torch.linspace(0, 2 * math.pi, 20_001, dtype=torch.float64)
    direct, closed = ex.rank_one_speed(phi), ex.eq6_speed(phi)
    assert float((direct - closed).abs().max()) < 1e-13
    assert float(closed.max()) == pytest.approx(math.sqrt(2) - 1, abs=1e-14)
    k = torch.arange(8, dtype=torch.float64)
    assert torch.allclose(ex.eq6_speed(k * math.pi / 4), torch.full((8,), math.sqrt(2) - 1, dtype=torch.float64))
    assert float(ex.eq6_speed(torch.tensor(math.pi / 8, dtype=torch.float64))) < 1e-14
