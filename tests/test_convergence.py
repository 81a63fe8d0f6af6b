"""`implicit_bias.convergence.stationarity`: a certificate that a decayed learning rate cannot fake."""

from __future__ import annotations

import math

import pytest
import torch

from implicit_bias.convergence import (CERTIFIED, NOT_CERTIFIED, UNDECIDED, band_class, band_classes, class_counts,
                                        class_variants, edge_moves, stationarity)


def ridge(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x, y = torch.randn(40, 5, generator=g), torch.randn(40, generator=g)
    return lambda ps: ((x @ ps[0] - y) ** 2).mean() + 0.1 * (ps[0] ** 2).sum()


def gd(loss, w, lrs):
    w = w.clone().requires_grad_(True)
    for lr in lrs:
        (g,) = torch.autograd.grad(loss([w]), [w])
        with torch.no_grad():
            w -= lr * g
    return w.detach()


def test_converged_run_is_certified_and_originals_untouched():
    loss = ridge()
    w = gd(loss, torch.zeros(5), [0.05] * 3000)
    before = w.clone()
    cert = stationarity(loss, [w], lr=0.05, window=200, tol=1e-3, grad_tol=1e-3)
    assert cert.all_certified and float(cert.rel_change.max()) < 1e-6
    assert torch.equal(w, before)


def test_run_stopped_under_a_decayed_rate_is_not_certified():
    """Under a cosine schedule the change over the last 20% of the steps is small by construction
    (the rate has decayed); the certificate at the schedule's peak rate fails, as it must for a
    run far from its minimum."""
    loss = ridge()
    steps, peak = 100, 0.002
    lrs = [peak * 0.5 * (1 + math.cos(math.pi * t / steps)) for t in range(steps)]
    w_mid = gd(loss, torch.zeros(5), lrs[:80])
    w_end = gd(loss, w_mid, lrs[80:])
    naive = abs(float((w_end ** 2).sum() - (w_mid ** 2).sum())) / float((w_end ** 2).sum())
    assert naive < 0.03  # what a change test reads: a few percent, as if nearly converged
    cert = stationarity(loss, [w_end], lr=peak, window=steps // 5, tol=0.01)
    assert not cert.all_certified and float(cert.rel_change.max()) > 0.5  # far from the minimum


def test_per_member_quantity_and_bad_arguments():
    loss_a, loss_b = ridge(0), ridge(1)
    wa = gd(loss_a, torch.zeros(5), [0.05] * 3000)  # converged
    wb = torch.zeros(5)  # untrained
    both = lambda ps: loss_a([ps[0]]) + loss_b([ps[1]])
    q = lambda ps: torch.stack([(ps[0] ** 2).sum(), (ps[1] ** 2).sum() + 1e-3])
    cert = stationarity(both, [wa, wb], lr=0.05, window=50, quantity=q, tol=0.01)
    assert cert.certified.tolist() == [True, False]
    assert "1 of 2 certified" in cert.describe()
    with pytest.raises(ValueError, match="window >= 1"):
        stationarity(loss_a, [wa], lr=0.05, window=0)
    with pytest.raises(FloatingPointError, match="smaller fixed rate"):
        stationarity(loss_a, [wa], lr=50.0, window=200)


def test_grad_tol_refuses_a_point_whose_quantity_happens_not_to_move():
    """The relative-gradient condition is checked on its own: a quantity that stays put (here a
    constant) certifies nothing when the gradient at the end point is large."""
    loss = ridge()
    w = torch.zeros(5)  # untrained: the gradient is far from zero
    still = lambda ps: torch.tensor(1.0)
    assert stationarity(loss, [w], lr=0.05, window=10, quantity=still).all_certified  # change test alone
    cert = stationarity(loss, [w], lr=0.05, window=10, quantity=still, grad_tol=1e-3)
    assert not cert.all_certified and cert.rel_grad > 1e-3
    # the relative gradient as documented: ||grad L|| * lr * window / ||theta||
    w1 = torch.ones(5)
    wg = w1.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(loss([wg]), [wg])
    cert = stationarity(loss, [w1], lr=0.05, window=10, quantity=still)
    assert cert.rel_grad == pytest.approx(float(g.norm()) * 0.05 * 10 / float(w1.norm()), rel=1e-6)


def test_band_classes_a_converged_run_certified_a_stopped_one_not_and_the_threshold_undecided():
    """The margin band on real certificates: the converged ridge run is certified, the run stopped
    by its decayed schedule is not, and a change exactly at the tolerance is undecided."""
    loss = ridge()
    converged = stationarity(loss, [gd(loss, torch.zeros(5), [0.05] * 3000)], lr=0.05, window=200, tol=0.01)
    assert converged.classes(band=2.0) == [CERTIFIED]
    steps, peak = 100, 0.002
    lrs = [peak * 0.5 * (1 + math.cos(math.pi * t / steps)) for t in range(steps)]
    stopped = stationarity(loss, [gd(loss, torch.zeros(5), lrs)], lr=peak, window=steps // 5, tol=0.01)
    assert stopped.classes(band=2.0) == [NOT_CERTIFIED]
    assert band_class(0.01, 0.01, 2.0) == UNDECIDED
    # the edges: certified strictly below tol / band, not certified strictly above tol * band
    assert band_classes([0.0049, 0.005, 0.02, 0.0201, float("nan")], 0.01, 2.0) == \
        [CERTIFIED, UNDECIDED, UNDECIDED, NOT_CERTIFIED, NOT_CERTIFIED]
    assert class_counts([CERTIFIED, UNDECIDED, UNDECIDED]) == {CERTIFIED: 1, UNDECIDED: 2, NOT_CERTIFIED: 0}
    with pytest.raises(ValueError, match="band > 1"):
        band_class(0.01, 0.01, 1.0)


def test_a_move_of_five_percent_of_the_threshold_changes_no_class_inside_the_band():
    """The knife edge of a single threshold (0.98% and 1.04% against 1%) is inside the band: such a
    move changes no class. Only members within 5% of the threshold of a band edge can move, and
    :func:`class_variants` lists each such move once."""
    tol = 0.01
    assert band_classes([0.0098, 0.0104], tol) == [UNDECIDED, UNDECIDED]
    assert edge_moves([0.0098, 0.0104, 0.001, 0.05], tol) == []
    moves = edge_moves([0.0047, 0.0098, 0.0199], tol)
    assert moves == [(0, UNDECIDED), (2, NOT_CERTIFIED)]
    variants = class_variants([0.0047, 0.0098, 0.0199], tol)
    assert variants == [[CERTIFIED, UNDECIDED, UNDECIDED], [UNDECIDED, UNDECIDED, UNDECIDED],
                        [CERTIFIED, UNDECIDED, NOT_CERTIFIED]]
