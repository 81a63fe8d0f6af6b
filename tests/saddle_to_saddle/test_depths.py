"""Optima across depths: the source of each depth's best network, and the depths read as findings."""

import math

import pytest
import torch

from implicit_bias.saddle_to_saddle import depths, structure
from implicit_bias.saddle_to_saddle import example1 as ex


def test_optima_over_depths_sources_and_cold_depths():
    X, G = ex.circle_data()
    rows = depths.optima_over_depths(X, G, (2, 3, 4), width=8, restarts=4, steps=300, warm_restarts=2,
                                     generator=torch.Generator().manual_seed(0), lr=0.3, lr_final=1e-3)
    assert rows[2]["source"] == "cold" and "lifted_speed" not in rows[2]
    for L in (3, 4):
        row = rows[L]
        assert row["source"] in ("cold", "warm", "lift")
        # the best network is at least as fast as the lift of the previous optimum (Prop. 3.2)
        assert row["speed"] >= row["lifted_speed"] - 1e-12
        assert row["speed"] >= row["cold_speed"]
    # speeds never fall with depth (the lift is kept when re-optimising loses ground)
    assert rows[3]["speed"] >= rows[2]["speed"] - 1e-12 and rows[4]["speed"] >= rows[3]["speed"] - 1e-12


def test_cold_depths_excludes_depths_won_by_far():
    rows = {2: dict(speed=1.0, cold_speed=1.0), 3: dict(speed=1.0, cold_speed=0.999),
            4: dict(speed=1.0, cold_speed=0.9)}
    assert depths.cold_depths(rows, [2, 3, 4]) == [2, 3]
    assert depths.cold_depths(rows, [2, 3, 4], rtol=0.2) == [2, 3, 4]


def _st(tau_W, ratio_W, tau_Z, nu):
    t = lambda x: torch.tensor(x, dtype=torch.float64)                                     # noqa: E731
    return structure.LayerStructure(t(tau_W), t(ratio_W), t(tau_Z), t(nu), torch.ones(len(tau_W)))


def test_cold_structure_reads_only_the_cold_depths_with_known_values():
    rows = {3: dict(speed=1.0, cold_speed=1.0, cold_structure=_st([0.5, 0.0, 1e-8], [1.0, 0.0, 0.01], [0.4, 0.0],
                                                                   [0.5, 0.5])),
            4: dict(speed=1.0, cold_speed=0.9995, cold_structure=_st([0.45, 1e-7, 0.0, 0.0], [1.0, 0.1, 0.0, 0.0],
                                                                      [0.3, 0.0, 0.0], [0.5, 0.5, 0.02])),
            # won by a lift: its (here deliberately high-rank) cold structure must not be read
            5: dict(speed=1.0, cold_speed=0.5, cold_structure=_st([0.9] * 5, [1.0] * 5, [0.9] * 4, [0.9] * 4))}
    cs = depths.cold_structure(rows, [3, 4, 5])
    assert cs.depths == [3, 4] and cs.linear_depths == [4]
    assert cs.first_tau == 0.45 and cs.later_tau == 1e-7 and cs.rank_tau == 0.5 and cs.later_nu == 0.02
    assert cs.ratio_l14 == pytest.approx(0.1 * 2 ** 0.25)                  # layer 2 of depth 4
    # tau(W_2) = 0 at depth 3 is floored at 1e-6; depth 4's slope log2(1e-6 / 0.45) is the larger
    assert cs.slope12 == pytest.approx(math.log2(1e-6 / 0.45))
    assert depths.cold_structure(rows, [3, 4, 5], floor=1e-3).slope12 == pytest.approx(math.log2(1e-3 / 0.45))
    empty = depths.cold_structure(rows, [5])
    assert empty.depths == [] and math.isnan(empty.later_tau) and math.isnan(empty.later_nu)


def test_cold_structure_of_example1_optima_is_rank_two_then_rank_one():
    X, G = ex.circle_data()
    rows = depths.optima_over_depths(X, G, (3,), width=8, restarts=8, steps=800, warm_restarts=2,
                                     generator=torch.Generator().manual_seed(0), lr=0.3, lr_final=1e-3)
    cs = depths.cold_structure(rows, [3])
    assert cs.depths == [3] and cs.linear_depths == []
    assert cs.first_tau > 0.4 and cs.later_tau < 1e-3                     # Eq. (2): W_1 rank two, then rank one


def test_cold_structure_slope_skips_rank_one_first_layers():
    rows = {2: dict(speed=1.0, cold_speed=1.0, cold_structure=_st([0.0, 0.0], [0.0, 0.0], [0.0], [0.0]))}
    cs = depths.cold_structure(rows, [2])
    assert cs.rank_tau == 0.0 and math.isnan(cs.slope12)
