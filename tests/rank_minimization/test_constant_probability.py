"""The checks and figures of the Theorem 3 page, `implicit_bias.rank_minimization.constant_probability`."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from implicit_bias.rank_minimization import constant_probability as cp  # noqa: E402
from implicit_bias.rank_minimization import two_neuron as tn  # noqa: E402

D = torch.float64


def split_problem(R: int, seed: int, theta: float = 2.0):
    """R datasets at input angle ``theta`` and Theorem 3 starts (v(0) = 0), the split ones first."""
    g = torch.Generator().manual_seed(seed)
    th = torch.full((R,), theta, dtype=D)
    X, Y = tn.datasets_with_angles(th, torch.full_like(th, math.pi / 2), g)
    W0, V0 = tn.paper_init(R, 1e-3, g, zero_v=True)
    return X, Y, th, W0, V0


def test_srank_floor_is_the_corner_of_lemma6_box():
    th = 135 / cp.DEG
    lo, _ = tn.lemma6_angle_interval(torch.tensor(th, dtype=D), torch.tensor(1e-4, dtype=D))
    nlo, nhi = tn.lemma6_norm_interval(torch.tensor(th, dtype=D), torch.tensor(1e-4, dtype=D))
    # rows of the two extreme norms at the smallest angle the lemma allows
    W = torch.stack([float(nlo) * torch.tensor([1.0, 0.0], dtype=D),
                     float(nhi) * torch.tensor([math.cos(float(lo)), math.sin(float(lo))], dtype=D)])
    corner = float(tn.stable_rank_2x2(W[None])[0])
    floor = cp.lemma6_srank_floor(th, 1e-4, 101)
    # the grid holds the corner; the minimum lies close to it (norms slightly inside the interval)
    assert corner - 1e-3 < floor <= corner
    assert abs(cp.lemma6_srank_floor(th, 1e-4, 201) - floor) < 1e-5
    # equal norms would give the split value at the angle pi - theta: the floor is below it
    assert 1.0 < floor < 2 / (1 + abs(math.cos(math.pi - th)))
    # the intervals widen with the angle, so the floor falls
    assert cp.lemma6_srank_floor(100 / cp.DEG, 1e-4, 51) > cp.lemma6_srank_floor(120 / cp.DEG, 1e-4, 51) > floor


def test_lemma6_check_counts_runs_outside_the_intervals():
    X, Y, th, W0, V0 = split_problem(400, 0)
    split = tn.is_split(tn.region_codes(W0, X))
    W, _ = tn.closed_form_limit(W0, X, Y)          # limits of split starts: inside both intervals
    conv = torch.ones(len(th), dtype=torch.bool)
    out = cp.lemma6_check(W0, W, tn.row_angle(W), split, conv, th)
    assert out["violations"] == 0 and 0 < out["used"] < 1 and out["low"] >= 0 and out["norm"] > 0
    Wbad = W.clone()
    Wbad[split.nonzero()[0, 0], 1] = Wbad[split.nonzero()[0, 0], 0] * 1.0001   # rows almost parallel
    bad = cp.lemma6_check(W0, Wbad, tn.row_angle(Wbad), split, conv, th)
    assert bad["violations"] == 1


def test_lemmas10_12_hold_along_split_runs_and_fail_without_v0_zero():
    X, Y, th, W0, V0 = split_problem(200, 1)
    split = tn.is_split(tn.region_codes(W0, X))
    idx = split.nonzero().squeeze(-1)[:20]
    out = cp.lemmas10_12_along(W0[idx], V0[idx], X[idx], Y[idx], lr=0.05, steps=400, every=20)
    assert out["runs"] == 20 and out["rise"] <= 1e-12 and out["off_span"] <= 1e-10 and out["drop"] >= -1e-12
    assert out["dropped_frac"] == 0.0
    # columns v_i(0) opposite to y_i: w_i.x_i first decreases (Lemma 12 needs v(0) = 0)
    _, yj = tn.served_pairs(W0[idx], X[idx], Y[idx])
    Vneg = -0.5 * yj.transpose(1, 2)
    neg = cp.lemmas10_12_along(W0[idx], Vneg, X[idx], Y[idx], lr=0.05, steps=400, every=20)
    assert neg["dropped_frac"] > 0.5


def test_split_decomposed_estimate_by_hand():
    split = torch.tensor([True] * 40 + [False] * 60)
    in_E = torch.tensor([True] * 38 + [False] * 2 + [True] * 30 + [False] * 30)
    out = cp.split_decomposed_estimate(in_E, split, bound=0.3, level=0.99)
    assert math.isclose(out["p"], 0.3 * 38 / 40 + 0.7 * 30 / 60)
    assert math.isclose(out["raw"], 68 / 100) and math.isclose(out["dead"], 2 / 40) and out["split"] == 40
    u1, u2 = tn.binomial_interval(38, 40, 0.99)[1], tn.binomial_interval(30, 60, 0.99)[1]
    assert math.isclose(out["upper"], 0.3 * u1 + 0.7 * u2) and out["upper"] > out["p"]


def test_srank_floor_upto_is_the_floor_at_the_widest_angle():
    top = 135 / cp.DEG
    floor = cp.lemma6_srank_floor_upto(top, 1e-4, angles=4, grid=51)
    assert floor == cp.lemma6_srank_floor(top, 1e-4, 51)
    # a wider range can only lower it; a narrower one (widest angle 120 deg) gives a higher floor
    assert cp.lemma6_srank_floor_upto(145 / cp.DEG, 1e-4, angles=4, grid=51) < floor
    assert cp.lemma6_srank_floor_upto(120 / cp.DEG, 1e-4, angles=4, grid=51) > floor


def test_claim_statistics_on_a_made_up_sweep():
    theta = torch.tensor([170.0, 170.0, 120.0, 120.0], dtype=D) / cp.DEG
    split_value = 2 / (1 + theta.cos().abs())
    S = dict(sr=torch.tensor([1.01, 1.2, 1.3, 1.0], dtype=D), conv=torch.tensor([True, True, True, True]),
             end_split=torch.tensor([True, False, True, False]))
    wide, narrow, lower = cp.claim_statistics({"a": S}, theta, split_value)
    assert wide == 0.5                     # one of the two wide runs below 1.05
    assert math.isclose(narrow, 1.3, rel_tol=1e-6)  # the narrow run ending split
    # the two runs ending with a neuron in S: 1.2 vs 1.0154 (above), 1.0 vs 1.333 (below by more than 0.05)
    assert lower == 0.5
    S2 = dict(S, sr=torch.tensor([1.01, 1.01, 1.1, 1.0], dtype=D))
    assert cp.claim_statistics({"a": S, "b": S2}, theta, split_value)[:2] == (0.5, 1.1)


def test_sweep_runs_reads_off_the_simulation():
    X, Y, th, *_ = split_problem(50, 2)
    out = cp.sweep_runs(X, Y, True, torch.Generator().manual_seed(5), lr=0.05, steps=2000, radius=1e-3)
    assert torch.equal(out["V0"], torch.zeros_like(out["V0"]))
    assert torch.equal(out["end_split"], tn.is_split(tn.region_codes(out["sim"].W, X)) & out["conv"])
    assert bool(out["conv"][out["init_split"]].all())     # Lemma 13: split starts with v(0) = 0 converge
    assert out["sr"].shape == out["angle"].shape == (50,)


def test_figures_draw():
    fig, axes = plt.subplots(1, 2)
    theta = torch.tensor([2.0, 2.5])
    S = dict(conv=torch.tensor([True, True]), init_split=torch.tensor([True, False]),
             end_split=torch.tensor([True, False]), sr=torch.tensor([1.2, 1.1]))
    cp.plot_srank_against_angle(axes, {"thm3": S, "paper": S}, theta, 1.05)
    assert len(axes[0].collections) == 3
    plt.close(fig)
    fig, axes = plt.subplots(1, 2)
    p = np.array([[0.5, 0.4]])
    cp.plot_event_against_ratio(axes, [0.0, 1.0], ["data"], p, np.stack([p - 0.1, p + 0.1], -1), np.array([0.45]),
                                np.array([[1, 5]]), np.array([[10, 10]]), np.array([[1, 4]]))
    assert axes[0].get_xscale() == "log" and [t.get_text() for t in axes[1].get_xticklabels()] == ["0", "1"]
    plt.close(fig)
