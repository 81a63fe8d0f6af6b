"""Drift summaries and the fixed-time step-size sweep (`implicit_bias.invariances.drifts`) on
small networks whose drifts are known: a two-layer MLP computed by hand, the exact eta^2 law of
one GD step, round-off after the Appendix F correction, and the identity-skip control."""

from __future__ import annotations

import numpy as np
import torch

from implicit_bias import models
from implicit_bias.ensembles import Ensemble
from implicit_bias.invariances import drifts
from implicit_bias.invariances import invariants as inv

D = torch.float64


def task(n: int = 30, d: int = 4, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, d, generator=g, dtype=D) - 0.3
    return X, torch.sign(X @ torch.randn(d, generator=g, dtype=D))


def mlp(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return models.MLP(4, 1, 3, 2, bias=False).double()


def resnet_identity(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return models.ResNetMLP(4, 1, 3, 1, 2, skip="identity").double()


def q_by_hand(W1: torch.Tensor, W2: torch.Tensor) -> torch.Tensor:
    """Q_v = ||W1[v, :]||^2 - W2[0, v]^2 for the hidden neurons of a two-layer net."""
    return W1.pow(2).sum(1) - W2[0].pow(2)


def test_one_step_drift_is_the_eta_squared_term_by_hand():
    X, y = task()
    m = mlp()
    p = {k: v.detach() for k, v in m.named_parameters()}
    g = inv.param_grads(m, X, y)
    groups = inv.neuron_groups(m)
    W1, W2 = p["layers.0.weight"], p["layers.1.weight"]
    G1, G2 = g["layers.0.weight"], g["layers.1.weight"]
    scale = float((W1.pow(2).sum(1) + W2[0].pow(2)).max())
    assert scale == float(inv.neuron_scales(p, groups))
    for eta in (0.1, 0.05):
        expected = float((eta**2 * (G1.pow(2).sum(1) - G2[0].pow(2))).norm()) / scale
        # Q(w') - Q(w) is a difference of O(scale) numbers: round-off is ~u relative to scale
        assert abs(drifts.one_step_drift(p, g, groups, eta, scale) - expected) <= 1e-14
    # exactly quadratic: halving eta divides the drift by 4 (the first-order term is zero)
    step = lambda eta: drifts.one_step_drift(p, g, groups, eta, 1.0)
    ratio = step(0.2) / step(0.1)
    assert abs(ratio - 4.0) < 1e-9


def test_drift_summary_of_a_short_run_by_hand():
    X, y = task()
    ens = Ensemble.from_models([mlp()])
    W0 = {k: v[0].clone() for k, v in ens.params.items()}
    lr, steps = 0.1, 6
    tr = inv.train_tracked(ens, X, y, steps=steps, lr=lr, record_every=3)
    r = drifts.drift_summary(tr, ens)
    W = {k: v[0] for k, v in ens.params.items()}
    scale = float((W["layers.0.weight"].pow(2).sum(1) + W["layers.1.weight"][0].pow(2)).max())
    raw_end = float((q_by_hand(W["layers.0.weight"], W["layers.1.weight"])
                     - q_by_hand(W0["layers.0.weight"], W0["layers.1.weight"])).abs().max()) / scale
    assert np.allclose(r.t, lr * np.array([0, 3, 6]))
    assert abs(r.raw[-1] - raw_end) <= 1e-10 * raw_end and r.raw[0] == 0.0
    assert r.raw[-1] > 1e-8 and r.corr.max() < 1e-13           # real slack, corrected to round-off
    assert r.ctrl is None and r.corr_conv is None               # no identity skip, no convolution
    assert np.array_equal(r.loss, tr.loss[0, [0, 3, 6]].numpy())
    # Lemma 4 cuts W1, W2: ||W2||^2 - ||W1||^2 drifts by the slack, corrected to round-off
    cut_scale = max(float(W[k].pow(2).sum()) for k in ("layers.0.weight", "layers.1.weight"))
    cut_raw = abs(float(W["layers.1.weight"].pow(2).sum() - W["layers.0.weight"].pow(2).sum()
                        - W0["layers.1.weight"].pow(2).sum() + W0["layers.0.weight"].pow(2).sum()))
    assert abs(r.cut_raw[-1] - cut_raw / cut_scale) <= 1e-9 * r.cut_raw[-1]
    assert r.cut_corr.max() < 1e-13


def test_drift_summary_flags_identity_skip_units():
    X, y = task()
    ens = Ensemble.from_models([resnet_identity()])
    r = drifts.drift_summary(inv.train_tracked(ens, X, y, steps=20, lr=0.1, record_every=10), ens)
    assert r.corr.max() < 1e-13          # the middle units: Lemma 3 applies
    assert r.ctrl is not None and r.ctrl[-1] > 1e-4   # the units touching the fixed skip drift


def test_fixed_time_sweep_slopes_and_members():
    X, y = task()
    etas = torch.tensor([0.2, 0.1, 0.05], dtype=D)
    stops = (1.0 / etas).round().long()
    calls = []
    sw = drifts.fixed_time_sweep(lambda: calls.append(1) or mlp(), X, y, etas, stops)
    assert len(calls) == len(etas) + 1
    assert sw.ctrl is None and sw.ctrl_step is None
    assert np.allclose(sw.step[:-1] / sw.step[1:], 4.0, rtol=1e-9)   # one step: eta^2
    ratios = sw.raw[:-1] / sw.raw[1:]                                  # total at fixed T: ~eta
    assert np.all((ratios > 1.6) & (ratios < 2.4)), ratios
    assert sw.corr.max() < 1e-13
    # the member with step eta stopped after T / eta steps, all at about the same loss
    assert sw.loss.shape == (3,) and np.ptp(sw.loss) < 0.05
    torch.manual_seed(0)
    one = Ensemble.from_models([mlp()])
    tr = inv.train_tracked(one, X, y, steps=10, lr=0.1)
    assert abs(float(tr.loss[0, -1]) - sw.loss[1]) < 1e-12


def test_fixed_time_sweep_identity_skip_control_is_first_order():
    X, y = task()
    etas = torch.tensor([0.02, 0.01, 0.005], dtype=D)
    sw = drifts.fixed_time_sweep(resnet_identity, X, y, etas, (0.2 / etas).round().long())
    assert sw.ctrl_step is not None and sw.ctrl is not None
    ratios = sw.ctrl_step[:-1] / sw.ctrl_step[1:]      # first order: halving eta halves it
    assert np.all((ratios > 1.8) & (ratios < 2.2)), ratios
    assert sw.ctrl[-1] / sw.ctrl[0] > 0.5             # tends to the gradient-flow drift, not 0
