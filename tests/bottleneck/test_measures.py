"""Per-network measures, function distances and the collapse table of
`implicit_bias.bottleneck.measures`, on networks whose values are known in closed form."""

from __future__ import annotations

import math

import pytest
import torch

from implicit_bias.bottleneck import measures, tasks, training

D = torch.float64


def diag(*values: float) -> torch.Tensor:
    return torch.diag(torch.tensor(values, dtype=D))


def _task(X: torch.Tensor, Y: torch.Tensor, X_test: torch.Tensor, Y_test: torch.Tensor) -> tasks.Task:
    return tasks.Task(X, Y, X_test, Y_test, X, X_test)


def test_median_or_nan() -> None:
    assert measures.median_or_nan([3.0, 1.0, 2.0]) == 2.0
    assert measures.median_or_nan([3, 1]) == 2.0
    assert math.isnan(measures.median_or_nan([]))


def test_network_record_of_a_diagonal_network() -> None:
    # f(x) = W2 relu(W1 x) = (x1, 0.05 x2, 0) on positive inputs: Jacot's rank (W_mid = W1) is 1,
    # the Jacobian diag(1, 0.05, 0) has rank 1 at 10%, and |J_1|_+ = 1
    W, b = [diag(2.0, 0.05, 0.0), diag(0.5, 1.0, 1.0)], [torch.zeros(3, dtype=D)] * 2
    X = torch.tensor([[1.0, 2.0, 0.5], [2.0, 1.0, 3.0]], dtype=D)
    task = _task(X, X, X[:1], 2 * X[:1])
    r = measures.network_record(W, b, task, depth=2, seed=7, tail=0.003, fit=0.1, conv=0.01)
    assert (r["L"], r["seed"], r["kW"], r["kJ"]) == (2, 7, 1, 1)
    assert r["cost"] == pytest.approx(((0.95 * 2) ** 2 + 0.5**2 + (0.95 * 1) ** 2 + 3.0**2) / 2)
    assert r["sqnorm"] == pytest.approx(4 + 0.05**2 + 0.25 + 1 + 1)
    assert r["test"] == pytest.approx(1.0**2 + 3.9**2 + 1.0**2)    # 2x - f(x) = (2, 4, 1) - (1, 0.1, 0)
    assert torch.allclose(r["spectra"][0], torch.tensor([2.0, 0.05, 0.0], dtype=D))
    assert not r["fits"] and r["converged"] and r["collapsed"] and "logJ" not in r
    fit = measures.network_record([torch.eye(3, dtype=D)] * 2, b, task, depth=2, seed=0, tail=0.5, conv=0.01)
    assert fit["cost"] == 0.0 and fit["fits"] and not fit["converged"] and not fit["collapsed"]
    assert (fit["kW"], fit["kJ"]) == (3, 3) and fit["sqnorm"] == pytest.approx(6.0)
    assert fit["logJ"] == pytest.approx(0.0, abs=1e-12)


def test_sweep_records_walks_depths_and_members_with_the_tail_criterion() -> None:
    W = [torch.stack([torch.eye(2, dtype=D), 2 * torch.eye(2, dtype=D)])] * 2
    b = [torch.zeros(2, 2, dtype=D)] * 2
    sq = torch.tensor([[1.0, 1.0], [10.0, 10.0], [10.0, 11.0]], dtype=D)
    run = training.AdamRun(W, b, [0, 80, 100], sq, torch.zeros(3, 2, dtype=D))
    X = torch.tensor([[1.0, 2.0], [3.0, 1.0]], dtype=D)
    rows = measures.sweep_records({2: run, 3: run}, _task(X, X, X, X), fit=0.1, conv=0.05)
    assert [(r["L"], r["seed"]) for r in rows] == [(2, 0), (2, 1), (3, 0), (3, 1)]
    assert [r["tail"] for r in rows[:2]] == pytest.approx([0.0, 1 / 11])     # change over the last 20%: step 80 -> 100
    assert [r["converged"] for r in rows[:2]] == [True, False]
    assert rows[0]["cost"] == 0.0 and rows[1]["cost"] == pytest.approx((9 * (1 + 4) + 9 * (9 + 1)) / 2)


@pytest.mark.parametrize("c", [0.2, 0.5])
def test_theorem6_measures_of_near_partial_isometries(c: float) -> None:
    # three layers diag(1, 1, c, 0) on positive inputs: d_2 = c^2 per layer, s_3 = c, J = diag(1, 1, c^3, 0)
    # so |J_2|_+ = 1 and the budget is ||theta||^2 - 2L = 3 c^2 = sum_l d_2(W_l)
    L = 3
    W, b = [diag(1.0, 1.0, c, 0.0)] * L, [torch.zeros(4, dtype=D)] * L
    X = torch.tensor([[1.0, 2.0, 5.0, 7.0], [2.0, 1.0, 3.0, 4.0], [1.0, 2.0, 4.0, 1.0], [2.0, 1.0, 1.0, 2.0]], dtype=D)
    m = measures.theorem6_measures(W, b, X, k=2, k_ref=1)
    assert m["chain"] and m["thm6"]
    assert m["budget"] == pytest.approx(3 * c**2) and torch.allclose(m["d"], torch.full((3,), c**2, dtype=D))
    assert m["share"] == (1.0 if c**2 <= 0.1 else 0.0) and m["far"] == (0 if c**2 <= 0.1 else 3)
    assert m["s_next"] == pytest.approx(c) and m["d_mid"] == pytest.approx(c**2) and m["neg_mass"] == 0.0
    flat = measures.theorem6_measures([diag(1.0, 1.0, 0.0, 0.0)] * L, b, X, k=2, k_ref=1)
    assert flat["budget"] == pytest.approx(0.0, abs=1e-12) and flat["share"] == 1.0 and flat["far"] == 0
    assert flat["s_next"] == 0.0 and flat["pre_next"] == pytest.approx(0.0, abs=1e-12)
    # the middle pre-activations are X diag(1, 1, 0, 0): rank 2, and s_2 / s_1 of the rows (1, 2), (2, 1) is 1/3
    assert flat["rep_ratio"] == pytest.approx(0.0, abs=1e-12) and flat["rep_ref"] == pytest.approx(1 / 3)


def test_function_distances_grouped_by_depth() -> None:
    a = torch.zeros(2, 3, dtype=D)
    b = torch.tensor([[3.0, 4.0, 0.0], [0.0, 0.0, 0.0]], dtype=D)
    assert measures.function_distance(a, b) == pytest.approx(math.sqrt(12.5))
    one = torch.ones(2, 1, dtype=D)
    nets = [dict(L=4, out=0 * one), dict(L=4, out=1 * one), dict(L=6, out=3 * one)]
    others = [dict(L=9, out=10 * one)]
    same, across, other = measures.distance_groups(nets, others, key="out")
    assert same == [1.0] and across == [3.0, 2.0] and other == [10.0, 9.0, 7.0]
    assert measures.distance_groups(nets[:1]) == ([], [], [])


def test_collapse_table_counts_and_first_majority_depth() -> None:
    costs = {4: [0.1, 0.9, 0.2, 0.1, 0.7], 8: [0.9, 0.9, 0.6, 0.1, 0.2], 12: [0.9, 0.9, 0.6, 0.3, 0.1]}
    cells = [("a", 1), ("a", 1), ("b", 1), ("b", 1), ("c", 2)]
    t = measures.collapse_table(costs, cells, threshold=0.5)
    assert list(t.counts) == [("a", 1), ("b", 1), ("c", 2)]
    assert t.counts[("a", 1)] == {4: 1, 8: 2, 12: 2} and t.counts[("b", 1)] == {4: 0, 8: 1, 12: 1}
    assert t.never == 16
    assert t.first == {("a", 1): 8, ("b", 1): 16, ("c", 2): 4}     # a majority needs more than half: 1 of 2 is not
