"""Optima across depths: the source of each depth's best network, and the depths read as findings."""

import torch

from implicit_bias.saddle_to_saddle import depths
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
