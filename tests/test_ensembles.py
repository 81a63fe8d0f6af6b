"""`implicit_bias.ensembles`: a batched ensemble equals its members trained one by one."""

from __future__ import annotations

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


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float64, 1e-10)])
def test_ensemble_equals_members_trained_alone(dtype, tol) -> None:
    X, y = blobs(dtype=dtype)
    seeds = [0, 1, 2, 3]
    ens = Ensemble.build(factory(dtype), seeds)
    assert ens.size == 4
    hist = ensembles.train_ensemble(ens, X, y, loss="ce", steps=40, lr=0.2, weight_decay=1e-3,
                                    progress=False)
    assert hist.loss.shape == (4, 41)
    assert not hist.diverged.any()
    for i, seed in enumerate(seeds):
        net, h = solo(seed, X, y, dtype, loss="ce", steps=40, lr=0.2, weight_decay=1e-3)
        assert torch.allclose(hist.loss[i], h.loss, rtol=0, atol=tol)
        member = ens.member(i)
        for (name, p), q in zip(member.named_parameters(), net.parameters()):
            assert torch.allclose(p, q, rtol=0, atol=tol), name
    assert hist.loss[:, -1].max() < hist.loss[:, 0].min()


def test_per_member_learning_rates() -> None:
    X, y = blobs(dtype=torch.float64)
    rates = torch.tensor([0.05, 0.1, 0.3], dtype=torch.float64)
    ens = Ensemble.build(factory(torch.float64), [7, 7, 7])  # same init, different rates
    hist = ensembles.train_ensemble(ens, X, y, steps=25, lr=rates, progress=False)
    for i, lr in enumerate(rates.tolist()):
        net, h = solo(7, X, y, torch.float64, steps=25, lr=lr)
        assert torch.allclose(hist.loss[i], h.loss, rtol=0, atol=1e-10)
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        ensembles.train_ensemble(Ensemble.build(factory(), [0, 1, 2]), X.float(), y, steps=1,
                                 lr=torch.tensor([0.1, 0.2]), progress=False)


def test_batched_datasets() -> None:
    data = [blobs(seed=s, dtype=torch.float64) for s in (10, 11)]
    Xs = torch.stack([d[0] for d in data])
    ys = torch.stack([d[1] for d in data])
    ens = Ensemble.build(factory(torch.float64), [0, 1])
    hist = ensembles.train_ensemble(ens, Xs, ys, steps=15, lr=0.1, batched_data=True, progress=False)
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


def test_recorded_metrics() -> None:
    X, y = blobs()
    ens = Ensemble.build(factory(), [0, 1])
    hist = ensembles.train_ensemble(
        ens, X, y, steps=10, lr=0.1, record_every=4, progress=False,
        metrics={"norm1": lambda e: e.weight_matrices()[0].norm(dim=(1, 2))})
    assert hist.record_steps == [0, 4, 8, 10]
    assert hist.stacked("norm1").shape == (4, 2)


# --- divergence -------------------------------------------------------------------------

def test_divergence_raises_naming_member_step_and_rate() -> None:
    X, y = blobs()
    ens = Ensemble.build(factory(), [0, 1, 2])
    rates = torch.tensor([0.1, 1e4, 0.1])
    with pytest.raises(train.TrainingDiverged, match=r"member 1 .* at step \d+ \(learning rate 10000\)"):
        ensembles.train_ensemble(ens, X, y[:, None].float().expand(-1, 3), loss="mse", steps=200,
                                 lr=rates, progress=False)


def test_divergence_record_mode_freezes_the_member() -> None:
    X, y = blobs(dtype=torch.float64)
    Y = torch.nn.functional.one_hot(y, 3).double() * 10
    ens = Ensemble.build(factory(torch.float64), [0, 1, 2])
    rates = torch.tensor([0.05, 1e4, 0.05], dtype=torch.float64)
    hist = ensembles.train_ensemble(ens, X, Y, loss="mse", steps=60, lr=rates, on_diverge="record",
                                    progress=False)
    assert hist.diverged.tolist() == [False, True, False]
    assert not torch.isfinite(hist.loss[1]).all()
    # the other members are not contaminated: they equal their solo runs
    for i in (0, 2):
        _, h = solo(i, X, Y, torch.float64, loss="mse", steps=60, lr=0.05)
        assert torch.allclose(hist.loss[i], h.loss, rtol=0, atol=1e-10)
    # the frozen member's parameters stop changing once it is marked
    frozen = {k: v[1].clone() for k, v in ens.params.items()}
    ensembles.train_ensemble(ens, X, Y, loss="mse", steps=5, lr=rates, on_diverge="record", progress=False)
    for k, v in ens.params.items():
        assert torch.equal(v[1], frozen[k]), k


def test_frozen_member_keeps_finite_parameters_when_its_gradient_is_infinite() -> None:
    g = torch.Generator().manual_seed(0)
    X = torch.randn(20, 3, generator=g, dtype=torch.float64)
    y = torch.sign(X[:, 0])
    nets = [models.MLP(3, 1, depth=1, bias=False).double() for _ in range(2)]
    with torch.no_grad():
        nets[1].layers[0].weight.mul_(1e4)  # exp loss overflows at step 0: loss and gradient inf
    ens = Ensemble.from_models(nets)
    w0 = ens.params["layers.0.weight"].clone()
    hist = ensembles.train_ensemble(ens, X, y, loss="exp", steps=3, lr=0.1, on_diverge="record",
                                    progress=False)
    assert hist.diverged.tolist() == [False, True]
    assert torch.equal(ens.params["layers.0.weight"][1], w0[1])
    assert torch.isfinite(hist.loss[0]).all() and hist.loss[0, -1] < hist.loss[0, 0]
