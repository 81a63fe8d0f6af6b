"""The measurements of ``synthesis/01_five_lenses`` (implicit_bias.synthesis.lenses)."""

from __future__ import annotations

import math

import torch

from implicit_bias.synthesis.lenses import conserved_drift, crossings, fit_cost, relative_spread


def test_crossings_first_record_above_the_level_or_inf():
    s = torch.tensor([[0.1, 0.0], [0.6, 0.2], [0.9, 0.7], [1.0, 0.4]])
    assert crossings(s, 0.5) == [1.0, 2.0]
    assert crossings(s, 2.0) == [math.inf, math.inf]


def test_relative_spread_and_conserved_drift():
    norms = torch.tensor([[2.0, 2.0, 2.0], [1.0, 2.0, 3.0]])
    assert torch.allclose(relative_spread(norms), torch.tensor([0.0, 1.0]))
    # records x networks x layers: equal shifts of every layer conserve the differences, unequal ones do not
    start = torch.tensor([[[1.0, 2.0, 4.0]], [[1.0, 2.0, 4.0]]])
    kept = torch.stack([start[0], start[1] + 1.0])
    moved = torch.stack([start[0], start[1] * torch.tensor([1.0, 1.0, 2.0])])
    assert float(conserved_drift(kept).max()) == 0.0
    assert math.isclose(float(conserved_drift(moved).max()), 4.0 / (11.0 / 3.0), rel_tol=1e-6)


def test_fit_cost_is_zero_for_an_exact_linear_fit_and_takes_the_largest_network():
    X = torch.eye(3, dtype=torch.float64)
    W1 = torch.stack([torch.eye(3, dtype=torch.float64), torch.eye(3, dtype=torch.float64)])
    W2 = torch.stack([torch.eye(3, dtype=torch.float64), 2 * torch.eye(3, dtype=torch.float64)])
    Y = X.clone()   # ReLU of a nonnegative input is the identity here
    assert math.isclose(fit_cost([W1, W2], X, Y), 1.0)   # second network: outputs 2x, cost mean of |x|^2 = 1
