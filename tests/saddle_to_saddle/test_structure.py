"""Per-layer tail energies, nonlinearity and stable ranks on known networks."""

from __future__ import annotations

import pytest
import torch

from implicit_bias.saddle_to_saddle import example1 as ex
from implicit_bias.saddle_to_saddle import structure


def test_nonlinearity_known_values() -> None:
    Z = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert float(structure.nonlinearity(Z)) == 0.0
    assert float(structure.nonlinearity(-Z)) == 1.0
    assert float(structure.nonlinearity(torch.tensor([[1.0, -1.0]]))) == pytest.approx(0.5)


def test_layer_structure_of_eq2() -> None:
    X, _ = ex.circle_data()
    st = structure.layer_structure(ex.eq2_weights(-1.0), X)
    assert st.tau_W.tolist() == pytest.approx([0.5, 0.0, 0.0], abs=1e-12)
    assert st.ratio_W[0] == pytest.approx(1.0)
    assert st.tau_Z.shape == (2,) and st.nu.shape == (2,) and st.srank_Z.shape == (3,)
    assert float(st.nu[0]) == pytest.approx(0.5)                     # W_1 x is +-x: half negative
    assert float(st.srank_Z[0]) == pytest.approx(2.0)                # the circle has srank 2
    stacked = [torch.stack([W, 2 * W]) for W in ex.eq2_weights(-1.0)]
    st2 = structure.layer_structure(stacked, X)
    assert torch.allclose(st2.tau_W[1], st.tau_W) and torch.allclose(st2.nu[0], st.nu)


def test_worst_per_layer_of_eq2() -> None:
    X, _ = ex.circle_data()
    st = structure.layer_structure(ex.eq2_weights(-1.0), X)
    worst = structure.worst_per_layer(st)
    assert worst.shape == (3,)
    for l in range(2):                                                # hidden layers: max of the three
        assert float(worst[l]) == max(float(st.tau_W[l]), float(st.tau_Z[l]), float(st.nu[l]))
    assert float(worst[2]) == max(float(st.tau_W[2]), 0.0)           # output layer: tau(W_L) only
    assert float(worst[0]) >= 0.5                                    # tau(W_1) = nu_1 = 1/2
    stacked = [torch.stack([W, 2 * W]) for W in ex.eq2_weights(-1.0)]
    assert torch.allclose(structure.worst_per_layer(structure.layer_structure(stacked, X))[1], worst)
