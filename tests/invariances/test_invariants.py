"""Conserved quantities (`implicit_bias.invariances.invariants`): Euler's identity, the exact Appendix F
correction of one GD step, matrix and cut invariants, and the tracked training loop."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from implicit_bias import models
from implicit_bias.ensembles import Ensemble
from implicit_bias.invariances import invariants as inv

D = torch.float64


def task(n: int = 40, d: int = 16, seed: int = 0, image: bool = False):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, d, generator=g, dtype=D) - 0.3
    y = torch.sign(X @ torch.randn(d, generator=g, dtype=D))
    return (X.reshape(n, 1, 4, 4) if image else X), y


def make(kind: str, seed: int = 0, **kw) -> nn.Module:
    torch.manual_seed(seed)
    if kind == "mlp":
        return models.MLP(16, 1, 6, 3, **({"bias": False} | kw)).double()
    if kind == "cnn":
        return models.ConvNet(1, 4, 1, channels=(3, 4), hidden=(5,), **kw).double()
    return models.ResNetMLP(16, 1, 6, 2, 4, skip=kind, **kw).double()


KINDS = ["mlp", "cnn", "diagonal", "free", "identity"]


def inputs(kind: str, seed: int = 0):
    return task(seed=seed, image=(kind == "cnn"))


@pytest.mark.parametrize("kind", KINDS)
def test_euler_first_order_term_vanishes_where_lemma3_applies(kind):
    m = make(kind)
    X, y = inputs(kind)
    p, g = {k: v.detach() for k, v in m.named_parameters()}, inv.param_grads(m, X, y)
    groups = inv.neuron_groups(m)
    fo = inv.first_order_terms(p, g, groups)
    scale = max(float(t.abs().max()) for t in g.values()) * max(float(t.abs().max()) for t in p.values())
    for gr in groups:
        worst = float(fo[gr.name].abs().max())
        if gr.conserved:
            assert worst <= 1e-13 * scale, (gr.name, worst)
        else:  # identity-skip units: the skip weight is fixed, so Euler's identity has a remainder
            assert kind == "identity" and worst > 1e-6 * scale, (gr.name, worst)


def test_biases_must_be_counted_as_edges():
    m = make("mlp", bias=True)
    X, y = task()
    p, g = {k: v.detach() for k, v in m.named_parameters()}, inv.param_grads(m, X, y)
    counted = inv.first_order_terms(p, g, inv.neuron_groups(m, count_bias=True))
    ignored_groups = inv.neuron_groups(m, count_bias=False)
    ignored = inv.first_order_terms(p, g, ignored_groups)
    assert all(float(v.abs().max()) < 1e-15 for v in counted.values())
    assert all(not gr.conserved for gr in ignored_groups)
    assert max(float(v.abs().max()) for v in ignored.values()) > 1e-6


@pytest.mark.parametrize("kind", KINDS)
def test_one_gd_step_changes_q_by_exactly_eta_squared_term(kind):
    m = make(kind)
    X, y = inputs(kind)
    eta = 0.3
    groups = inv.neuron_groups(m)
    p0 = {k: v.detach().clone() for k, v in m.named_parameters()}
    g = inv.param_grads(m, X, y)
    p1 = {k: p0[k] - eta * g[k] for k in p0}
    q0, q1 = inv.neuron_invariants(p0, groups), inv.neuron_invariants(p1, groups)
    corr = inv.gd_corrections(g, groups, eta)
    for gr in groups:
        gap = float((q1[gr.name] - q0[gr.name] - corr[gr.name]).abs().max())
        if gr.conserved:
            assert gap <= 1e-14, (gr.name, gap)
        else:
            assert gap > 1e-8


def test_conv_fc_column_layout_is_channel_major():
    m = make("cnn")
    p = dict(m.named_parameters())
    groups = {g.name: g for g in inv.neuron_groups(m)}
    last = groups["conv 2 channels"]
    W = p["fcs.0.weight"]  # (5, 4 * 1 * 1): image 4 -> 2 -> 1 after two pools
    s2 = W.shape[1] // 4
    out_sq = torch.stack([W[:, c * s2:(c + 1) * s2].pow(2).sum() for c in range(4)])
    in_sq = p["convs.1.weight"].pow(2).sum(dim=(1, 2, 3))
    assert torch.allclose(inv.neuron_invariants(p, [last])[last.name], in_sq - out_sq)


def test_matrix_diagonal_is_minus_q_and_cut_differences_are_group_sums():
    m = make("free")
    p = dict(m.named_parameters())
    groups = inv.neuron_groups(m)
    M, Q = inv.matrix_invariants(p, groups), inv.neuron_invariants(p, groups)
    for gr in groups:
        assert torch.allclose(torch.diagonal(M[gr.name], dim1=-2, dim2=-1), -Q[gr.name])
    mlp = make("mlp")
    pm = dict(mlp.named_parameters())
    norms = inv.cut_norms(pm, inv.layer_cuts(mlp))
    Qm = inv.neuron_invariants(pm, inv.neuron_groups(mlp))
    assert torch.allclose(norms[0] - norms[1], Qm["hidden 1"].sum())


def ensemble(kind: str, act: str = "relu", n: int = 3) -> Ensemble:
    if kind == "mlp":
        return Ensemble.from_models([models.MLP(16, 1, 5, 2, bias=False, activation=act).double()
                                     for _ in range(n)])
    return Ensemble.from_models([make(kind, seed=s) for s in range(n)])


@pytest.mark.parametrize("kind", ["cnn", "diagonal", "free"])
def test_corrected_invariants_conserved_under_gd(kind):
    torch.manual_seed(0)
    ens = ensemble(kind)
    X, y = inputs(kind)
    tr = inv.train_tracked(ens, X, y, steps=60, lr=torch.tensor([0.5, 0.2, 0.05], dtype=D),
                           record_every=20)
    for gr in inv.neuron_groups(ens.template):
        assert float(tr.drift(gr.name).abs().max()) <= 1e-12
        assert float(tr.drift(gr.name, corrected=False).abs().max()) > 1e-8
    assert float(tr.cut_drift().abs().max()) <= 1e-12


def test_identity_skip_negative_control_drifts():
    ens = ensemble("identity")
    X, y = task()
    tr = inv.train_tracked(ens, X, y, steps=60, lr=0.3, record_every=30)
    groups = inv.neuron_groups(ens.template)
    for gr in groups:
        worst = float(tr.drift(gr.name).abs().max())
        assert (worst <= 1e-12) == gr.conserved, (gr.name, worst)


def test_off_diagonal_linear_conserved_relu_not():
    X, y = task()
    torch.manual_seed(0)
    lin = inv.train_tracked(ensemble("mlp", "linear"), X, y, steps=100, lr=0.3, matrices=True)
    torch.manual_seed(0)
    relu = inv.train_tracked(ensemble("mlp", "relu"), X, y, steps=100, lr=0.3, matrices=True)
    assert float(lin.matrix_drift("hidden 1").abs().max()) <= 1e-12
    off = relu.matrix_drift("hidden 1")
    diag = torch.diagonal(off, dim1=-2, dim2=-1)
    assert float(diag.abs().max()) <= 1e-12
    assert float(off.abs().max()) > 1e-4


def test_stop_after_freezes_members_and_monitors_count_flips():
    ens = ensemble("mlp")
    before = {k: v.clone() for k, v in ens.params.items()}
    X, y = task()
    tr = inv.train_tracked(ens, X, y, steps=20, lr=torch.tensor([0.4, 0.2, 0.1], dtype=D),
                           stop_after=torch.tensor([5, 10, 20]), record_every=10,
                           monitors={"signs": inv.sign_pattern})
    assert torch.allclose(tr.time[-1], torch.tensor([2.0, 2.0, 2.0], dtype=D))
    assert tr.steps == [0, 10, 20]
    assert tr.flips["signs"].shape == (3, sum(v[0].numel() for v in before.values()))
    # member 0 stopped at step 5: its parameters at step 20 equal those at step 10
    assert torch.equal(tr.Q["hidden 1"][1, 0], tr.Q["hidden 1"][2, 0])


def test_preactivations_match_model():
    m = models.MLP(16, 1, 5, 3, bias=True).double()
    X, _ = task()
    z = inv.mlp_preactivations(dict(m.named_parameters()), X, 3)
    feats = m.features(X)
    assert torch.allclose(torch.relu(z[1]), feats[1])


def test_bad_arguments():
    with pytest.raises(TypeError, match="does not know"):
        inv.neuron_groups(nn.Linear(3, 3))
    ens = ensemble("mlp")
    X, y = task()
    with pytest.raises(ValueError, match="lr must be"):
        inv.train_tracked(ens, X, y, steps=2, lr=torch.ones(2, dtype=D))
    with pytest.raises(ValueError, match="stop_after"):
        inv.train_tracked(ens, X, y, steps=2, stop_after=torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="cannot be split"):
        inv._unit_view(torch.zeros(3, 5), "col", 2, 0)


def test_scales_bound_invariants_and_matrix_first_order_diagonal():
    m = make("free")
    X, y = task()
    p, g = {k: v.detach() for k, v in m.named_parameters()}, inv.param_grads(m, X, y)
    groups = inv.neuron_groups(m)
    scale = inv.neuron_scales(p, groups)
    assert all(float(q.abs().max()) <= float(scale) for q in inv.neuron_invariants(p, groups).values())
    F = inv.matrix_first_order_terms(p, g, groups)
    fo = inv.first_order_terms(p, g, groups)
    for gr in groups:
        assert torch.allclose(torch.diagonal(F[gr.name], dim1=-2, dim2=-1), -2 * fo[gr.name],
                              atol=1e-15)


def test_lone_residual_block_middle_neurons():
    torch.manual_seed(0)
    blk = models.ResidualBlock(5, 3, skip="identity").double()
    X = torch.randn(10, 5, dtype=D)
    p = {k: v.detach() for k, v in blk.named_parameters()}
    out = blk(X).sum()
    g = dict(zip(p, torch.autograd.grad(out, list(blk.parameters()))))
    (gr,) = inv.neuron_groups(blk)
    assert gr.units == 3 and gr.conserved
    assert float(inv.first_order_terms(p, g, [gr])["middle"].abs().max()) < 1e-14


# --- the mixed networks of Theorem 1's points and the absolute-valued pair form --------------
MIXED = [[("conv", 2), ("conv", 3), ("free", 3, 4), ("free", 3, 4), ("dense", 3)],
         [("conv", 2), ("dense", 4), ("free", 3, 4)]]


def mixed(stages, activation="relu", seed=0):
    torch.manual_seed(seed)
    return inv.MixedNet(1, 4, stages, activation=activation).double()


def test_mixed_net_groups_cover_all_seven_points():
    points = {g.point for st in MIXED for g in inv.neuron_groups(mixed(st))}
    assert points == set(range(1, 8))
    X, _ = task(image=True)
    assert mixed(MIXED[0])(X).shape == (len(X), 1)
    with pytest.raises(ValueError):
        inv.MixedNet(1, 4, [("dense", 3), ("conv", 2)])
    with pytest.raises(ValueError):
        inv.MixedNet(1, 4, [("pool", 2)])


@pytest.mark.parametrize("stages", MIXED)
def test_mixed_net_euler_identity_and_linear_matrix_invariance(stages):
    X, y = task(image=True)
    m = mixed(stages)
    p, g = {k: v.detach() for k, v in m.named_parameters()}, inv.param_grads(m, X, y)
    groups = inv.neuron_groups(m)
    scale = max(float(t.abs().max()) for t in g.values()) * max(float(t.abs().max()) for t in p.values())
    for name, fo in inv.first_order_terms(p, g, groups).items():
        assert float(fo.abs().max()) <= 1e-13 * scale, name
    # linear activations: the whole first-order matrix term vanishes (Theorem 1 holds)
    lin = mixed(stages, "linear")
    p, g = {k: v.detach() for k, v in lin.named_parameters()}, inv.param_grads(lin, X, y)
    for name, F in inv.matrix_first_order_terms(p, g, inv.neuron_groups(lin)).items():
        assert float(F.abs().max()) <= 1e-12 * scale, name


def test_absolute_form_and_its_exact_correction_without_sign_changes():
    m = inv.push_from_zero_(mixed(MIXED[1], "linear"), 1.0)
    X, y = task(image=True)
    groups = inv.neuron_groups(m)
    p0 = {k: v.detach().clone() for k, v in m.named_parameters()}
    for k, v in p0.items():
        if v.dim() >= 2:  # every weight is at least floor / sqrt(fan_in) away from zero
            assert float(v.abs().min()) >= 1.0 / v[0].numel() ** 0.5 - 1e-15
    A0 = inv.abs_matrix_invariants(p0, groups)
    assert all(torch.allclose(A0[k], v) for k, v in
               inv.matrix_invariants({k: t.abs() for k, t in p0.items()}, groups).items())
    g = inv.param_grads(m, X, y)
    eta = 1e-3
    p1 = {k: p0[k] - eta * g[k] for k in p0}
    assert all(torch.equal(torch.sign(p0[k]), torch.sign(p1[k])) for k in p0)
    A1 = inv.abs_matrix_invariants(p1, groups)
    corr = inv.abs_matrix_corrections(p0, g, groups, eta)
    sp = {k: torch.sign(v) * v for k, v in p0.items()}      # |w|
    sg = {k: torch.sign(p0[k]) * v for k, v in g.items()}    # s * g
    first = inv.matrix_first_order_terms(sp, sg, groups)
    for gr in groups:
        gap = A1[gr.name] - A0[gr.name] + eta * first[gr.name] - corr[gr.name]
        assert float(gap.abs().max()) < 1e-14, gr.name


def test_train_tracked_absolute_equals_signed_for_positive_weights():
    torch.manual_seed(0)
    X, y = task()
    net = models.MLP(16, 1, 4, 2, bias=False, activation="linear").double()
    with torch.no_grad():
        for layer in net.layers:
            layer.weight.abs_().add_(0.5)
    ens = Ensemble.from_models([net])
    tr = inv.train_tracked(ens, X.abs(), y, steps=5, lr=1e-3, record_every=5, matrices=True,
                           absolute=True)
    (g,) = inv.neuron_groups(ens.template)
    assert torch.allclose(tr.abs_matrix_drift(g.name), tr.matrix_drift(g.name), atol=1e-15)


def test_isolated_kink_known_answer():
    X = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=D)
    W = torch.tensor([[1.0, -0.5]], dtype=D)
    u, i, reach = inv.isolated_kink(X, W)
    assert (u, i) == (0, 2) and abs(reach - 0.75 * 2**0.5) < 1e-12
    with pytest.raises(ValueError):
        inv.isolated_kink(X, -torch.ones(1, 2, dtype=D))


def test_sign_pattern_marks_positive_weights_per_member():
    params = {"a": torch.tensor([[1.0, -2.0], [0.0, 3.0]], dtype=D),
              "b": torch.tensor([[[-1.0]], [[2.0]]], dtype=D)}
    pat = inv.sign_pattern(params)
    assert pat.shape == (2, 3)
    assert pat.tolist() == [[True, False, False], [False, True, True]]


def test_euler_terms_vanish_unless_biases_are_left_out():
    torch.manual_seed(0)
    X, y = task()
    plain = models.MLP(16, 1, 5, 3, bias=False).double()
    terms = inv.euler_terms(plain, X, y)
    assert terms and all(ok and rel < 1e-12 for ok, rel in terms.values())
    biased = models.MLP(16, 1, 5, 3, bias=True).double()
    assert max(rel for _, rel in inv.euler_terms(biased, X, y).values()) < 1e-12
    assert max(rel for _, rel in inv.euler_terms(biased, X, y, count_bias=False).values()) > 1e-3


@pytest.mark.parametrize("act, lo, hi", [("relu", -1.1, -0.9), ("linear", -0.1, 0.1)])
def test_kink_quotients_blow_up_only_for_relu(act, lo, hi):
    import numpy as np
    torch.manual_seed(1)
    X, y = task()
    net = models.MLP(16, 1, 8, 2, bias=False, activation=act).double()
    before = net.layers[0].weight.detach().clone()
    deltas = np.logspace(-4, -7, 4)
    q, reach = inv.kink_quotients(net, X, y, deltas)
    assert reach > 1e-4   # only the chosen sample crosses over the whole range
    slope = float(np.polyfit(np.log(deltas), np.log(q), 1)[0])
    assert lo < slope < hi
    assert torch.equal(net.layers[0].weight.detach(), before)
