"""Bottleneck detection and representation measures of `implicit_bias.bottleneck.structure`."""

from __future__ import annotations

import pytest
import torch

from implicit_bias.bottleneck import structure

D = torch.float64


def diag(*values: float) -> torch.Tensor:
    return torch.diag(torch.tensor(values, dtype=D))


def test_middle_index() -> None:
    assert [structure.middle_index(L) for L in (1, 2, 3, 6, 7)] == [0, 0, 1, 2, 3]


def test_bottleneck_run_finds_the_longest_partial_isometry_run() -> None:
    far = diag(2.0, 1.5, 1.0, 0.5)
    near = diag(1.02, 0.98, 0.05, 0.0)
    W = [far, near, near, far, near, near, near, far]
    run = structure.bottleneck_run(W, k=2, tau=0.1)
    assert (run.start, run.stop, run.length) == (5, 7, 3)
    assert run.d[1].item() == pytest.approx(0.02**2 * 2 + 0.05**2)
    assert structure.layer_ranks(W).tolist() == [4, 2, 2, 4, 2, 2, 2, 4]
    assert structure.bottleneck_run([far, far], k=2).length == 0


def test_affine_fit_recovers_slope_and_intercept() -> None:
    slope, intercept = structure.affine_fit([4, 6, 9], [2 * 4 + 1.5, 2 * 6 + 1.5, 2 * 9 + 1.5])
    assert slope == pytest.approx(2.0) and intercept == pytest.approx(1.5)
    with pytest.raises(ValueError):
        structure.affine_fit([3, 3], [1.0, 2.0])


def test_negative_mass_and_representation_singular_values() -> None:
    Z = torch.tensor([[1.0, 2.0], [3.0, -4.0]], dtype=D)
    assert structure.negative_mass(Z).item() == pytest.approx(4.0 / (1 + 4 + 9 + 16) ** 0.5)
    assert structure.negative_mass(Z.abs()).item() == 0.0
    H = torch.ones(4, 3, dtype=D)                               # rank 1, s_1 = sqrt(12)
    s = structure.representation_singular_values(H)
    assert s[0].item() == pytest.approx((12 / 4) ** 0.5) and s[1].item() == pytest.approx(0.0, abs=1e-12)


def test_affine_law_and_loglog_slope():
    import pytest
    law = structure.affine_law([2, 4, 6, 8], [5.0, 9.0, 13.0, 17.0])
    assert law.slope == pytest.approx(2.0) and law.intercept == pytest.approx(1.0)
    assert law.rms == pytest.approx(0.0, abs=1e-12)
    assert law.loo_slopes == pytest.approx([2.0] * 4) and law.max_loo_deviation(2.0) == pytest.approx(0.0, abs=1e-12)
    bent = structure.affine_law([2, 4, 6, 8], [5.0, 9.0, 13.0, 21.0])
    assert bent.rms > 0.5 and bent.max_loo_deviation(2.0) > 0.5
    assert structure.loglog_slope([1, 2, 4, 8], [3.0, 3 / 2**0.5, 1.5, 3 / 8**0.5]) == pytest.approx(-0.5)
    with pytest.raises(ValueError):
        structure.affine_law([2, 2, 4], [1.0, 2.0, 3.0])


def test_constant_runs_follow_the_grid_and_break_on_gaps_and_changes() -> None:
    grid = [5, 6, 7, 8, 9, 10, 12, 14]
    values = {5: 3, 6: 3, 7: 3, 9: 3, 10: 2, 12: 2, 14: 3}
    assert structure.constant_runs(grid, values) == [[5, 6, 7], [9], [10, 12], [14]]
    assert structure.constant_runs(grid, {}) == []
    assert structure.constant_runs([4, 8], {8: 1, 4: 1}) == [[4, 8]]
