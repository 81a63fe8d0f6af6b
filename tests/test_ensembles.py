"""`implicit_bias.ensembles`: a batched ensemble equals its members trained one by one.

Both engines are checked against :func:`implicit_bias.train.train` (autograd on one network at a
time): the stacked engine's hand-derived backward for every activation, loss and bias setting, the
vmap engine on the same cases; per-member learning rates, one dataset per member, mini-batch SGD,
padded sample counts, mixed architectures, and diverging members.
"""

from __future__ import annotations

import copy

import pytest
import torch

from implicit_bias import ensembles, models, train
from implicit_bias.ensembles import Ensemble


def blobs(n: int = 60, d: int = 6, k: int = 3, seed: int = 0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % k
    centres = 2 * torch.randn(k, d, generator=g, dtype=dtype)
    return centres[y] + torch.randn(n, d, generator=g, dtype=dtype), y


def factory(dtype=torch.float32):
    return lambda seed: models.MLP(6, 3, width=8, depth=3).to(dtype)


def solo(seed: int, X, y, dtype, **kw):
    torch.manual_seed(seed)
    net = factory(dtype)(seed)
    hist = train.train(net, X, y, optimizer="gd", progress=False, **kw)
    return net, hist


ENGINES = ["stacked", "vmap"]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float64, 1e-10)])
def test_ensemble_equals_members_trained_alone(dtype, tol, engine) -> None:
    X, y = blobs(dtype=dtype)
    seeds = [0, 1, 2, 3]
    ens = Ensemble.build(factory(dtype), seeds)
    assert ens.size == 4
    hist = ensembles.train_ensemble(ens, X, y, loss="ce", steps=40, lr=0.2, weight_decay=1e-3,
                                    engine=engine, progress=False)
    assert hist.engine == engine
    assert hist.loss.shape == (4, 41)
    assert not hist.diverged.any()
    for i, seed in enumerate(seeds):
        net, h = solo(seed, X, y, dtype, loss="ce", steps=40, lr=0.2, weight_decay=1e-3)
        assert torch.allclose(hist.loss[i], h.loss, rtol=0, atol=tol)
        member = ens.member(i)
        for (name, p), q in zip(member.named_parameters(), net.parameters()):
            assert torch.allclose(p, q, rtol=0, atol=tol), name
    assert hist.loss[:, -1].max() < hist.loss[:, 0].min()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("weight_decay", [0.0, 1e-2])
def test_per_member_learning_rates(engine, weight_decay) -> None:
    X, y = blobs(dtype=torch.float64)
    rates = torch.tensor([0.05, 0.1, 0.3], dtype=torch.float64)
    ens = Ensemble.build(factory(torch.float64), [7, 7, 7])  # same init, different rates
    hist = ensembles.train_ensemble(ens, X, y, steps=25, lr=rates, weight_decay=weight_decay,
                                    engine=engine, progress=False)
    for i, lr in enumerate(rates.tolist()):
        net, h = solo(7, X, y, torch.float64, steps=25, lr=lr, weight_decay=weight_decay)
        assert torch.allclose(hist.loss[i], h.loss, rtol=0, atol=1e-10)
        for p, q in zip(ens.member(i).parameters(), net.parameters()):
            assert torch.allclose(p, q, rtol=0, atol=1e-10)
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        ensembles.train_ensemble(Ensemble.build(factory(), [0, 1, 2]), X.float(), y, steps=1,
                                 lr=torch.tensor([0.1, 0.2]), progress=False)


@pytest.mark.parametrize("engine", ENGINES)
def test_batched_datasets(engine) -> None:
    data = [blobs(seed=s, dtype=torch.float64) for s in (10, 11)]
    Xs = torch.stack([d[0] for d in data])
    ys = torch.stack([d[1] for d in data])
    ens = Ensemble.build(factory(torch.float64), [0, 1])
    hist = ensembles.train_ensemble(ens, Xs, ys, steps=15, lr=0.1, batched_data=True, engine=engine,
                                    progress=False)
    for i, seed in enumerate((0, 1)):
        _, h = solo(seed, data[i][0], data[i][1], torch.float64, steps=15, lr=0.1)
        assert torch.allclose(hist.loss[i], h.loss, rtol=0, atol=1e-10)
    assert ens(Xs, batched_inputs=True).shape == (2, 60, 3)


def test_forward_member_and_weight_matrices() -> None:
    ens = Ensemble.build(factory(), [3, 4, 5])
    X, _ = blobs()
    out = ens(X)
    assert out.shape == (3, 60, 3)
    for i in range(3):
        m = ens.member(i)
        assert isinstance(m, models.MLP)
        assert torch.allclose(m(X), out[i], atol=1e-6)
    torch.manual_seed(4)
    assert torch.equal(ens.member(1).layers[0].weight, factory()(4).layers[0].weight)
    Ws = ens.weight_matrices()
    assert [tuple(W.shape) for W in Ws] == [(3, 8, 6), (3, 8, 8), (3, 3, 8)]
    assert torch.equal(Ws[2][0], ens.member(0).layers[2].weight)
    # member(i) is a copy: changing it leaves the ensemble alone
    m = ens.member(0)
    with torch.no_grad():
        m.layers[0].weight.zero_()
    assert ens.params["layers.0.weight"][0].abs().sum() > 0


def test_weight_matrices_of_a_cnn_ensemble() -> None:
    ens = Ensemble.build(lambda s: models.ConvNet(1, 8, 2, channels=(4,)), [0, 1])
    assert [tuple(W.shape) for W in ens.weight_matrices()] == [(2, 4, 9), (2, 2, 64)]
    assert ens(torch.randn(5, 1, 8, 8)).shape == (2, 5, 2)


def test_from_models_needs_a_model() -> None:
    with pytest.raises(ValueError, match="at least one"):
        Ensemble.from_models([])


@pytest.mark.parametrize("engine", ENGINES)
def test_recorded_metrics(engine) -> None:
    X, y = blobs(dtype=torch.float64)
    ens = Ensemble.build(factory(torch.float64), [0, 1])
    hist = ensembles.train_ensemble(
        ens, X, y, steps=10, lr=0.1, record_every=4, progress=False, engine=engine,
        metrics={"norm1": lambda e: e.weight_matrices()[0].norm(dim=(1, 2))})
    assert hist.record_steps == [0, 4, 8, 10]
    assert hist.stacked("norm1").shape == (4, 2)
    # the metric sees each step's parameters: those of the member trained alone at that step
    _, h = solo(1, X, y, torch.float64, steps=10, lr=0.1,
                recorder=train.Recorder(4, {"norm1": lambda m: m.layers[0].weight.norm()}))
    assert torch.allclose(hist.stacked("norm1")[:, 1], h.stacked("norm1"), rtol=0, atol=1e-12)


# --- divergence -------------------------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_divergence_raises_naming_member_step_and_rate(engine) -> None:
    X, y = blobs()
    ens = Ensemble.build(factory(), [0, 1, 2])
    rates = torch.tensor([0.1, 1e4, 0.1])
    message = r"member 1 .* at step \d+ \(learning rate 10000\)"
    with pytest.raises(train.TrainingDiverged, match=message):
        ensembles.train_ensemble(ens, X, y[:, None].float().expand(-1, 3), loss="mse", steps=200,
                                 lr=rates, engine=engine, progress=False)


@pytest.mark.parametrize("engine", ENGINES)
def test_divergence_record_mode_freezes_the_member(engine) -> None:
    X, y = blobs(dtype=torch.float64)
    Y = torch.nn.functional.one_hot(y, 3).double() * 10
    ens = Ensemble.build(factory(torch.float64), [0, 1, 2])
    rates = torch.tensor([0.05, 1e4, 0.05], dtype=torch.float64)
    hist = ensembles.train_ensemble(ens, X, Y, loss="mse", steps=60, lr=rates, on_diverge="record",
                                    engine=engine, progress=False)
    assert hist.diverged.tolist() == [False, True, False]
    assert not torch.isfinite(hist.loss[1]).all()
    # reported with its index, the step of its first non-finite loss and its learning rate
    [d] = hist.divergences
    first = int((~torch.isfinite(hist.loss[1])).nonzero()[0])
    assert (d.member, d.step, d.lr) == (1, first, 1e4) and 0 < first < 60
    assert torch.isfinite(hist.loss[1, :first]).all()
    assert "member 1 diverged at step" in str(d)
    # the other members are not contaminated: they equal their solo runs
    for i in (0, 2):
        _, h = solo(i, X, Y, torch.float64, loss="mse", steps=60, lr=0.05)
        assert torch.allclose(hist.loss[i], h.loss, rtol=0, atol=1e-10)
    # the frozen member's parameters stop changing once it is marked
    frozen = {k: v[1].clone() for k, v in ens.params.items()}
    ensembles.train_ensemble(ens, X, Y, loss="mse", steps=5, lr=rates, on_diverge="record",
                             progress=False)
    for k, v in ens.params.items():
        assert torch.equal(v[1], frozen[k]), k


@pytest.mark.parametrize("engine", ENGINES)
def test_frozen_member_keeps_finite_parameters_when_its_gradient_is_infinite(engine) -> None:
    g = torch.Generator().manual_seed(0)
    X = torch.randn(20, 3, generator=g, dtype=torch.float64)
    y = torch.sign(X[:, 0])
    nets = [models.MLP(3, 1, depth=1, bias=False).double() for _ in range(2)]
    with torch.no_grad():
        nets[1].layers[0].weight.mul_(1e4)  # exp loss overflows at step 0: loss and gradient inf
    ens = Ensemble.from_models(nets)
    w0 = ens.params["layers.0.weight"].clone()
    hist = ensembles.train_ensemble(ens, X, y, loss="exp", steps=3, lr=0.1, on_diverge="record",
                                    engine=engine, progress=False)
    assert hist.diverged.tolist() == [False, True]
    assert torch.equal(ens.params["layers.0.weight"][1], w0[1])
    assert torch.isfinite(hist.loss[0]).all() and hist.loss[0, -1] < hist.loss[0, 0]


def test_frozen_member_keeps_its_weights_when_its_activations_overflow() -> None:
    """A member whose hidden activations are inf has NaN weight gradients even with a zero output
    gradient (0 * inf); the stacked engine must still leave its weights exactly as they were."""
    X, y = blobs()
    Y = torch.nn.functional.one_hot(y, 3).float()
    nets = [factory()(s) for s in range(3)]
    with torch.no_grad():
        nets[1].layers[0].weight.mul_(1e38)   # layer-1 outputs overflow to inf
    ens = Ensemble.from_models(nets)
    before = {k: v[1].clone() for k, v in ens.params.items()}
    hist = ensembles.train_ensemble(ens, X, Y, loss="mse", steps=5, lr=0.05, on_diverge="record",
                                    engine="stacked", progress=False)
    assert hist.diverged.tolist() == [False, True, False] and hist.divergences[0].step == 0
    for k, v in ens.params.items():
        assert torch.equal(v[1], before[k]), k
    for i in (0, 2):
        assert torch.isfinite(hist.loss[i]).all()


# --- the stacked engine, case by case against autograd -----------------------------------

def data_for(loss: str, n: int = 37, d: int = 5, dtype=torch.float64, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g, dtype=dtype)
    if loss == "ce":
        return X, torch.randint(0, 3, (n,), generator=g), 3
    if loss in ("mse", "half_mse"):
        return X, torch.randn(n, 3, generator=g, dtype=dtype), 3
    return X, torch.sign(torch.randn(n, generator=g, dtype=dtype)), 1


def clones(nets):
    """A factory of fresh copies of ``nets``."""
    return lambda: [copy.deepcopy(m) for m in nets]


def assert_matches_solo(ens_factory, X, y, loss, steps, rates, dtype, tol, engine="stacked", **kw):
    """Train ``ens_factory()`` as one ensemble and each network of a second ``ens_factory()``
    alone with train.train; losses and parameters must agree to ``tol``. With ``batch_size``,
    both draw their mini-batches from a generator seeded with 5."""
    nets = ens_factory()
    ens = Ensemble.from_models(nets)
    hist = ensembles.train_ensemble(ens, X, y, loss=loss, steps=steps, engine=engine,
                                    lr=torch.tensor(rates, dtype=dtype), progress=False, **kw)
    assert hist.engine == engine
    solo_kw = {k: v for k, v in kw.items() if k != "generator"}
    for i, net in enumerate(ens_factory()):
        if kw.get("batch_size"):  # every solo run draws the batches the ensemble drew
            solo_kw.update(optimizer="sgd", generator=torch.Generator().manual_seed(5))
        h = train.train(net, X, y, loss=loss, steps=steps, lr=rates[i], progress=False, **solo_kw)
        gap = (hist.loss[i] - h.loss).abs().max()
        assert torch.allclose(hist.loss[i], h.loss, rtol=0, atol=tol), (i, gap)
        for (name, p), q in zip(ens.member(i).named_parameters(), net.parameters()):
            assert torch.allclose(p, q, rtol=0, atol=tol), name
    return hist


@pytest.mark.parametrize("loss", ensembles.STACKED_LOSSES)
@pytest.mark.parametrize("activation", ["relu", "leaky", "tanh", "linear"])
@pytest.mark.parametrize("bias", [True, False])
def test_stacked_backward_equals_autograd(loss, activation, bias) -> None:
    X, y, k = data_for(loss)

    def nets():
        out = []
        for s in range(3):
            torch.manual_seed(s)
            out.append(models.MLP(5, k, width=[7, 6], depth=3, bias=bias, activation=activation,
                                  init_scale=0.5 + 0.25 * s).double())
        return out

    assert_matches_solo(nets, X, y, loss, 12, [0.05, 0.1, 0.02], torch.float64, 1e-10,
                        weight_decay=1e-2)


@pytest.mark.parametrize("depth", [1, 2, 4])
def test_stacked_engine_any_depth_float32(depth) -> None:
    X, y, k = data_for("ce", dtype=torch.float32)

    def nets():
        return [models.MLP(5, k, width=8, depth=depth).float() for _ in range(2)]

    torch.manual_seed(0)
    built = nets()
    assert_matches_solo(clones(built), X, y, "ce", 30, [0.1, 0.3], torch.float32, 1e-5)


def test_padded_sample_count_changes_nothing() -> None:
    """509 samples are padded to 512 (on the CPU) for aligned products; the padding must not
    show in the losses or the updates, for every loss."""
    assert ensembles._padding(509, torch.device("cpu")) == 3
    assert ensembles._padding(100, torch.device("cpu")) == 0   # 12% more work: not worth it
    for loss in ensembles.STACKED_LOSSES:
        X, y, k = data_for(loss, n=509)
        torch.manual_seed(1)
        built = [models.MLP(5, k, width=6, depth=3).double() for _ in range(2)]
        assert_matches_solo(clones(built), X, y, loss, 8, [0.1, 0.2], torch.float64, 1e-10)


@pytest.mark.parametrize("engine", ENGINES)
def test_minibatch_sgd_equals_train(engine) -> None:
    """Mini-batches drawn as train.train draws them (over more than one chunk of draws), with a
    padded batch size for the stacked engine (509)."""
    for n, batch, steps in ((60, 7, 300), (700, 509, 3)):
        X, y, k = data_for("ce", n=n)
        torch.manual_seed(2)
        built = [models.MLP(5, k, width=6, depth=3).double() for _ in range(2)]
        assert_matches_solo(clones(built), X, y, "ce", steps, [0.1, 0.05],
                            torch.float64, 1e-10, engine=engine, batch_size=batch,
                            generator=torch.Generator().manual_seed(5), weight_decay=1e-3)


def test_engine_choice() -> None:
    X, y = blobs()
    assert ensembles.stacked_engine_unsupported(factory()(0), "ce") is None
    cnn = Ensemble.build(lambda s: models.ConvNet(1, 8, 2, channels=(4,)), [0, 1])
    images, labels = torch.randn(5, 1, 8, 8), torch.tensor([0, 1, 0, 1, 0])
    with pytest.raises(ValueError, match="ConvNet, not a models.MLP"):
        ensembles.train_ensemble(cnn, images, labels, steps=1, engine="stacked", progress=False)
    hist = ensembles.train_ensemble(cnn, images, labels, steps=1, progress=False)
    assert hist.engine == "vmap"
    custom = ensembles.train_ensemble(Ensemble.build(factory(), [0]), X, y, steps=1, progress=False,
                                      loss=lambda out, t: torch.nn.functional.cross_entropy(out, t))
    assert custom.engine == "vmap"
    negative = models.MLP(6, 3, width=8, activation="leaky", negative_slope=-0.5)
    assert "negative slope" in ensembles.stacked_engine_unsupported(negative, "ce")
    with pytest.raises(ValueError, match="unknown engine"):
        ensembles.train_ensemble(Ensemble.build(factory(), [0]), X, y, steps=1, engine="fast",
                                 progress=False)
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 3\)"):
        ensembles.train_ensemble(Ensemble.build(factory(), [0]), X, y + 1, steps=1, progress=False)


def test_mlp_layers_are_the_ensembles_tensors() -> None:
    ens = Ensemble.build(factory(), [0, 1])
    (W0, _), _, (_, b2) = ensembles.mlp_layers(ens)
    assert W0.shape == (2, 8, 6) and b2.shape == (2, 3)
    assert W0.data_ptr() == ens.params["layers.0.weight"].data_ptr()
    with pytest.raises(TypeError, match="models.MLP"):
        ensembles.mlp_layers(Ensemble.build(lambda s: models.ConvNet(1, 8, 2, channels=(4,)), [0]))


# --- several architectures ---------------------------------------------------------------

def test_train_models_groups_by_architecture_and_keeps_the_order() -> None:
    X, y, k = data_for("half_mse")
    depths = [3, 1, 2, 3, 1, 4]
    rates = [0.05, 0.1, 0.05, 0.02, 0.05, 0.03]

    def build():
        out = []
        for i, depth in enumerate(depths):
            torch.manual_seed(i)
            out.append(models.MLP(5, k, width=6, depth=depth, bias=False).double())
        return out

    nets = build()
    ids = [id(m) for m in nets]
    hist = ensembles.train_models(nets, X, y, loss="half_mse", steps=20, lr=rates,
                                  weight_decay=1e-3, progress=False)
    assert [id(m) for m in nets] == ids                      # trained in place
    assert [g[0] for g in hist.groups] == [[0, 3], [1, 4], [2], [5]]
    assert hist.loss.shape == (6, 21) and not hist.diverged.any()
    for i, ref in enumerate(build()):
        h = train.train(ref, X, y, loss="half_mse", steps=20, lr=rates[i], weight_decay=1e-3,
                        progress=False)
        assert torch.allclose(hist.loss[i], h.loss, rtol=0, atol=1e-10)
        for p, q in zip(nets[i].parameters(), ref.parameters()):
            assert torch.allclose(p, q, rtol=0, atol=1e-10)
    position, group_hist = hist.group_of(3)
    assert position == 1 and torch.equal(group_hist.loss[1], hist.loss[3])


def test_train_models_reports_divergence_with_the_callers_index() -> None:
    X, y, k = data_for("mse")
    nets = [models.MLP(5, k, width=6, depth=d).double() for d in (2, 3, 2)]
    rates = [0.05, 0.05, 1e4]
    hist = ensembles.train_models(nets, X, y * 10, loss="mse", steps=40, lr=rates,
                                  on_diverge="record", progress=False)
    assert hist.diverged.tolist() == [False, False, True]
    assert [d.member for d in hist.divergences] == [2] and hist.divergences[0].lr == 1e4
    with pytest.raises(train.TrainingDiverged, match=r"member 2 .*learning rate 10000"):
        fresh = [models.MLP(5, k, width=6, depth=d).double() for d in (2, 3, 2)]
        ensembles.train_models(fresh, X, y * 10, loss="mse", steps=40, lr=rates, progress=False)


def test_train_models_with_one_dataset_per_model() -> None:
    data = [data_for("ce", seed=s) for s in range(3)]
    Xs, ys = torch.stack([d[0] for d in data]), torch.stack([d[1] for d in data])
    nets = [models.MLP(5, 3, width=6, depth=d).double() for d in (2, 3, 2)]
    refs = [copy.deepcopy(m) for m in nets]
    hist = ensembles.train_models(nets, Xs, ys, steps=10, lr=0.1, batched_data=True, progress=False)
    for i, ref in enumerate(refs):
        h = train.train(ref, data[i][0], data[i][1], steps=10, lr=0.1, progress=False)
        assert torch.allclose(hist.loss[i], h.loss, rtol=0, atol=1e-10)
    with pytest.raises(ValueError, match="one rate per model"):
        ensembles.train_models(nets, Xs, ys, lr=[0.1, 0.2], batched_data=True, progress=False)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("max_lr", [float("inf"), 2.0])
def test_loss_scaled_steps_equal_train(engine, max_lr) -> None:
    """Each member's step lr / L(w_t) comes from its own loss, as in train.train."""
    X, y, k = data_for("logistic")
    torch.manual_seed(3)
    built = [models.MLP(5, k, width=6, depth=3, bias=False).double() for _ in range(3)]
    assert_matches_solo(clones(built), X, y, "logistic", 40, [0.05, 0.1, 0.2], torch.float64, 1e-9,
                        engine=engine, loss_scaled_lr=True, max_lr=max_lr, weight_decay=1e-3)
    with pytest.raises(ValueError, match="full-batch"):
        ensembles.train_ensemble(Ensemble.from_models(built), X, y, loss="logistic",
                                 loss_scaled_lr=True, batch_size=5, progress=False)


def test_member_groups_change_nothing(monkeypatch) -> None:
    """On the CPU, members with large activations are trained in groups (one member per group
    here); losses, updates, per-member rates, metrics and frozen members are unchanged."""
    monkeypatch.setattr(ensembles, "_CPU_GROUP_BYTES", 1)
    assert ensembles._member_groups(3, 100, torch.device("cpu")) == [slice(0, 1), slice(1, 2),
                                                                      slice(2, 3)]
    X, y, k = data_for("mse")
    torch.manual_seed(4)
    built = [models.MLP(5, k, width=6, depth=3).double() for _ in range(3)]
    assert_matches_solo(clones(built), X, y, "mse", 15, [0.05, 0.1, 0.2], torch.float64, 1e-10,
                        weight_decay=1e-2)
    ens = Ensemble.from_models(clones(built)())
    hist = ensembles.train_ensemble(ens, X, y * 10, loss="mse", steps=30, progress=False,
                                    lr=torch.tensor([0.05, 1e4, 0.05], dtype=torch.float64),
                                    on_diverge="record", record_every=10,
                                    metrics={"w": lambda e: e.params["layers.0.weight"].clone()})
    assert hist.diverged.tolist() == [False, True, False] and hist.record_steps == [0, 10, 20, 30]
    assert torch.equal(hist.records["w"][-1][1], ens.params["layers.0.weight"][1])
    for i in (0, 2):
        net = clones(built)()[i]
        h = train.train(net, X, y * 10, loss="mse", steps=30, lr=0.05, progress=False)
        assert torch.allclose(hist.loss[i], h.loss, rtol=0, atol=1e-10)
