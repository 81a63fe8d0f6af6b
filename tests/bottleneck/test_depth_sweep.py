"""`bottleneck.depth_sweep`: reading a depth sweep on sets of networks, and verdicts that survive
the certificate's classes."""

from __future__ import annotations

import math

import pytest
import torch

from implicit_bias.bottleneck import depth_sweep, measures
from implicit_bias.bottleneck.depth_sweep import Region
from implicit_bias.convergence import CERTIFIED, NOT_CERTIFIED, UNDECIDED, class_variants


def test_region_reads_like_the_ledger() -> None:
    assert Region(0.5).passes(1) and not Region(0.5).passes(0.5)            # above: strict
    assert Region(hi=0.0).passes(-0.1) and not Region(hi=0.0).passes(0.0)  # below: strict
    assert Region(2.25, 3.75, closed=True).passes(3.75)                      # between: closed
    assert not Region(hi=1.0).passes(math.nan)


def _net(L: int, seed: int, value: float) -> dict:
    return {"L": L, "seed": seed, "v": value}


def _read(nets: list[dict]) -> dict[str, tuple[float, Region]]:
    """Two toy rows: the count of networks with v > 1 (below 0.5: none), and the mean v (below 2)."""
    n_big = sum(r["v"] > 1 for r in nets)
    mean = sum(r["v"] for r in nets) / len(nets) if nets else math.nan
    return {"none-big": (n_big, Region(hi=0.5)), "mean-small": (mean, Region(hi=2.0))}


def test_a_verdict_carried_by_an_undecided_network_is_not_resolved() -> None:
    """The row `none-big` passes on the certified networks and fails once the undecided one (v = 3)
    is added: not resolved. `mean-small` passes in every reading, but with too few certified
    networks it is not resolved either; with most certified it is."""
    nets = [_net(5, 0, 0.5), _net(5, 1, 0.6), _net(6, 0, 3.0)]
    changes = [0.001, 0.002, 0.01]                                            # certified, certified, undecided
    checks = depth_sweep.verdict_checks(nets, class_variants(changes, 0.01), _read)
    assert checks["none-big"].verdicts == {"all": False, "certified or undecided": False, "certified": True}
    assert not checks["none-big"].resolved
    assert checks["mean-small"].resolved and checks["mean-small"].values["certified"] == pytest.approx(0.55)
    few = depth_sweep.verdict_checks(nets, class_variants([0.001, 0.01, 0.01], 0.01), _read)
    assert not few["mean-small"].enough and not few["mean-small"].resolved


def test_one_network_on_a_band_edge_is_read_in_both_classes() -> None:
    """A network at 0.48% against a band edge of 0.5% is read as certified and as undecided: the
    row must agree in both or it is not resolved."""
    nets = [_net(5, 0, 0.5), _net(5, 1, 0.6), _net(6, 0, 3.0)]
    variants = class_variants([0.001, 0.002, 0.0048], 0.01)
    assert variants == [[CERTIFIED] * 3, [CERTIFIED, CERTIFIED, UNDECIDED]]
    checks = depth_sweep.verdict_checks(nets, variants, _read)
    assert set(checks["none-big"].verdicts) == {"all", "certified or undecided", "certified",
                                                "certified or undecided (move 1)", "certified (move 1)"}
    assert checks["none-big"].verdicts["certified (move 1)"] and not checks["none-big"].resolved
    with pytest.raises(ValueError, match="classes for 3 networks"):
        depth_sweep.verdict_checks(nets, [[CERTIFIED]], _read)


def test_row_status_says_why_a_row_is_not_resolved() -> None:
    nets = [_net(5, 0, 0.5), _net(5, 1, 0.6), _net(6, 0, 0.7)]
    checks = depth_sweep.verdict_checks(nets, class_variants([0.001, 0.002, 0.003], 0.01), _read)
    assert depth_sweep.row_status(checks["none-big"], {}, "none-big", "supports") == ("", "supports")
    x3 = {"x3/seed0": {"none-big": {"verdict": "FAIL", "measured": "2"}}, "x3/seed1": {}}
    prefix, bearing = depth_sweep.row_status(checks["none-big"], x3, "none-big", "supports")
    assert bearing == "qualifies" and prefix == "not resolved at this budget (x3/seed0: FAIL 2): "
    checks = depth_sweep.verdict_checks(nets, class_variants([0.001, 0.05, 0.05], 0.01), _read)
    assert NOT_CERTIFIED in class_variants([0.001, 0.05, 0.05], 0.01)[0]
    prefix, _ = depth_sweep.row_status(checks["mean-small"], {}, "mean-small", "supports")
    assert "at most half the networks certified" in prefix


def test_read_sweep_ranges_law_and_rates_on_a_toy_sweep() -> None:
    """Three depths of two networks with rank 3 middle weights and ||theta||^2 = 3L + 1: one range,
    slope 3; a set without a majority at a depth drops it."""
    def rec(L: int, seed: int) -> dict:
        return dict(L=L, seed=seed, fits=True, converged=True, kJ=2, kW=3, sqnorm=3.0 * L + 1,
                    out_test=torch.full((4, 2), float(seed)), budget=float(L), share=0.5, s_next=1.0 / L, far=1,
                    pre_next=1.0 / L)
    nets = [rec(L, s) for L in (5, 6, 7) for s in (0, 1)]
    rd = depth_sweep.read_sweep(nets, [5, 6, 7], seeds=2)
    assert rd.fun_depths == [5, 6, 7] and rd.law_depths == [5, 6, 7] and rd.k_law == 3
    assert rd.law.slope == pytest.approx(3.0) and rd.slope("s_next") == pytest.approx(-1.0)
    assert rd.rate["pre_next"][5] == pytest.approx(math.sqrt(5) / 5)
    assert "log-log slopes" in rd.describe_rates()
    part = depth_sweep.read_sweep(nets[:-1], [5, 6, 7], seeds=2)            # depth 7 keeps one of two
    assert part.fun_depths == [5, 6] and part.law is None


def test_collapse_orderings_and_cutoff_ranks() -> None:
    cells = [("s", 1e-3), ("s", 1e-3), ("t", 1e-3), ("t", 1e-3), ("s", 5e-3), ("s", 5e-3), ("t", 5e-3), ("t", 5e-3)]
    costs = {4: [0, 0, 0, 0, 1, 1, 0, 0], 8: [1, 1, 0, 0, 1, 1, 1, 1]}
    table = measures.collapse_table(costs, cells, threshold=0.5)   # s: 8 and 4; t: never (12) and 8
    init_gaps, lam_gaps = depth_sweep.collapse_orderings(table, ["s", "t"], [1e-3, 5e-3])
    assert init_gaps == [4, 4] and lam_gaps == [4, 4]
    text = depth_sweep.describe_collapse(table, 2)
    assert "t                lambda = 0.001: {4: 0, 8: 0} (of 2); first collapse depth none up to 8" in text
    W = [torch.eye(3), torch.diag(torch.tensor([1.0, 0.15, 0.07])), torch.eye(3)]
    ranks, under = depth_sweep.cutoff_ranks([{"L": 3, "W": W, "fits": True}], [3], (0.05, 0.1, 0.2), k=2)
    assert ranks == {0.05: {3: 3.0}, 0.1: {3: 2.0}, 0.2: {3: 1.0}} and under == {0.05: 0, 0.1: 0, 0.2: 1}
