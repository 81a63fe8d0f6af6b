"""Proposition 3.2's depth-lifting construction."""

from __future__ import annotations

import pytest
import torch

from implicit_bias import models
from implicit_bias.saddle_to_saddle import lifting
from implicit_bias.saddle_to_saddle import localized as lo
from implicit_bias.spectra import numerical_rank


@pytest.mark.parametrize("L,k", [(2, 1), (3, 2), (4, 3)])
def test_lift_lowers_the_loss_within_the_norm_budget(L: int, k: int) -> None:
    g = torch.Generator().manual_seed(L)
    X = torch.randn(25, 4, generator=g, dtype=torch.float64)
    G = torch.randn(25, 3, generator=g, dtype=torch.float64)
    for trial in range(5):
        Ws = lo.to_sphere(models.gaussian_weights([4] + [7] * (L - 1) + [3], 1.0, generator=g))
        new = lifting.lift(Ws, X, G, k)
        assert len(new) == L + k
        assert float(lo.localized_loss(new, X, G)) <= float(lo.localized_loss(Ws, X, G)) + 1e-12
        assert float(lo.squared_norm(new)) <= L + k + 1e-12
        pre, post = models.layer_activations(new, X)[0], models.layer_activations(new, X)[1]
        for l in range(L - 1, L + k):                                 # the rank-one tail
            assert int(numerical_rank(new[l], 1e-10)) == 1
        for l in range(L - 1, L + k - 1):                             # ReLU acts as the identity there
            assert torch.allclose(pre[l], post[l])


def test_lift_bad_arguments() -> None:
    X = torch.randn(5, 2, dtype=torch.float64)
    G = torch.randn(5, 1, dtype=torch.float64)
    with pytest.raises(ValueError, match="depth >= 2"):
        lifting.lift([torch.randn(1, 2, dtype=torch.float64)], X, G)
    with pytest.raises(ValueError, match="zero weight"):
        lifting.lift([torch.zeros(3, 2, dtype=torch.float64), torch.zeros(1, 3, dtype=torch.float64)], X, G)


def test_lift_check_known_case() -> None:
    """Two neurons on X = I with G = (-1, -2): L_0 = -3; the lift keeps neuron 2 (value -2) with
    S = 2, so L_0(lifted) = -4 (a rise of -1) at exactly the norm budget (2S + k = 4 + k)."""
    X = torch.eye(2, dtype=torch.float64)
    G = torch.tensor([[-1.0], [-2.0]], dtype=torch.float64)
    Ws = [torch.eye(2, dtype=torch.float64), torch.ones(1, 2, dtype=torch.float64)]
    chk = lifting.lift_check([(Ws, X, G)], ks=(1, 2))
    assert chk.networks == 1
    assert chk.rise == pytest.approx(-1.0) and chk.excess == pytest.approx(0.0, abs=1e-12)
    assert chk.tail == pytest.approx(0.0, abs=1e-12)


def test_lift_check_on_random_networks() -> None:
    g = torch.Generator().manual_seed(1)
    X = torch.randn(20, 3, generator=g, dtype=torch.float64)
    G = torch.randn(20, 2, generator=g, dtype=torch.float64)
    Wr = lo.random_directions([3, 6, 6, 2], 10, generator=g)
    chk = lifting.lift_check([([W[i] for W in Wr], X, G) for i in range(10)], ks=(1, 2, 3))
    assert chk.networks == 10 and chk.rise <= 1e-12 and chk.excess <= 1e-12 and chk.tail <= 1e-12
