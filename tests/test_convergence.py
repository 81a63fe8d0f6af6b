"""`implicit_bias.convergence.stationarity`: a certificate that a decayed learning rate cannot fake."""

from __future__ import annotations

import math

import pytest
import torch

from implicit_bias.convergence import stationarity


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
