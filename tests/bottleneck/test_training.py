import math

import pytest
import torch

from implicit_bias import models
from implicit_bias.bottleneck import training
from implicit_bias.convergence import NOT_CERTIFIED, band_classes

D = torch.float64


def _reference(net: models.MLP, X, Y, lam, steps, lr, lr_end, warmup):
    """Autograd and torch.optim.Adam on one network: the objective (1/2)(C + lam ||theta||^2)."""
    params = list(net.parameters())
    opt = torch.optim.Adam(params, lr=lr)
    for t in range(steps):
        opt.param_groups[0]["lr"] = training.cosine_rate(t, steps, lr, lr_end)
        cost = (net(X) - Y).pow(2).sum(1).mean()
        pen = sum(p.pow(2).sum() for p in params) if t >= warmup else 0.0
        loss = 0.5 * (cost + lam * pen)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return net


def test_matches_autograd_adam_per_member():
    g = torch.Generator().manual_seed(0)
    X, Y = torch.randn(16, 5, generator=g, dtype=D), torch.randn(16, 3, generator=g, dtype=D)
    lams = torch.tensor([1e-3, 5e-2, 0.3], dtype=D)
    ens = training.build_mlps(4, 7, seeds=[1, 2, 3], init_scales=[1.0, 1.7, 2.4], d_in=5, d_out=3, dtype=D)
    refs = [ens.member(i) for i in range(3)]
    run = training.train_adam(ens, X, Y, lam=lams, steps=40, lr=1e-2, lr_end=1e-3, warmup=5, record_every=10)
    for i, net in enumerate(refs):
        _reference(net, X, Y, float(lams[i]), 40, 1e-2, 1e-3, 5)
        W, b = models.mlp_weights_biases(net)
        Wi, bi = run.member(i)
        for a, c in zip([*W, *b], [*Wi, *bi]):
            assert torch.allclose(a.detach(), c, atol=1e-12, rtol=1e-10)
    # the ensemble's own parameters were updated in place
    Wens, _ = models.mlp_weights_biases(ens.params)
    assert torch.allclose(Wens[0], run.weights[0])


def test_records_and_tail_change():
    g = torch.Generator().manual_seed(1)
    X, Y = torch.randn(12, 4, generator=g, dtype=D), torch.randn(12, 2, generator=g, dtype=D)
    ens = training.build_mlps(3, 6, seeds=[0, 1], d_in=4, d_out=2, dtype=D)
    sq0 = models.param_sqnorm(ens.params, batch_dims=1)
    run = training.train_adam(ens, X, Y, lam=0.1, steps=51, lr=1e-2, record_every=10)
    assert run.steps == [0, 10, 20, 30, 40, 50]
    assert torch.allclose(run.sqnorm[0], sq0)                      # recorded before the first update
    assert run.sqnorm.shape == run.cost.shape == (6, 2)
    expected = (run.sqnorm[-1] - run.sqnorm[-2]).abs() / run.sqnorm[-1]   # last 20% of 50 steps: from step 40
    assert torch.allclose(run.tail_change(0.2), expected)


def test_cosine_rate_and_init_scales():
    assert training.cosine_rate(0, 11, 1.0, 0.1) == pytest.approx(1.0)
    assert training.cosine_rate(10, 11, 1.0, 0.1) == pytest.approx(0.1)
    assert training.cosine_rate(5, 11, 1.0, 0.1) == pytest.approx(0.55)
    ens = training.build_mlps(2, 400, seeds=[0, 0], init_scales=[1.0, math.sqrt(6)], d_in=400, d_out=5, dtype=D)
    W, _ = models.mlp_weights_biases(ens.params)
    var = W[0].pow(2).mean((1, 2))
    assert float(var[0]) == pytest.approx(1 / (3 * 400), rel=0.02)       # PyTorch default
    assert float(var[1]) == pytest.approx(2 / 400, rel=0.02)             # He
    with pytest.raises(ValueError):
        training.build_mlps(2, 4, seeds=[0, 1], init_scales=[1.0])


def test_rejects_non_relu():
    ens = training.build_mlps(2, 4, seeds=[0], d_in=3, d_out=2, dtype=D)
    ens.template.act = torch.nn.Tanh()
    with pytest.raises(ValueError):
        training.train_adam(ens, torch.zeros(4, 3, dtype=D), torch.zeros(4, 2, dtype=D), lam=0.0, steps=2)


def test_train_depths_members_and_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("IMPLICIT_BIAS_CACHE", str(tmp_path))
    g = torch.Generator().manual_seed(2)
    X, Y = torch.randn(10, 3, generator=g, dtype=D), torch.randn(10, 2, generator=g, dtype=D)
    members = lambda L: [training.Member(10 * L + i, 1.0 + i, 0.01 * (i + 1)) for i in range(2)]
    runs = training.train_depths(X, Y, [2, 3], members, width=5, steps=20, record_every=5, dtype=D, use_cache=True)
    assert sorted(runs) == [2, 3] and runs[3].depth == 3 and runs[3].size == 2
    ens = training.build_mlps(3, 5, [30, 31], [1.0, 2.0], d_in=3, d_out=2, dtype=D)
    alone = training.train_adam(ens, X, Y, lam=torch.tensor([0.01, 0.02], dtype=D), steps=20, record_every=5)
    assert torch.allclose(alone.weights[1], runs[3].weights[1])
    again = training.train_depths(X, Y, [3], members, width=5, steps=20, record_every=5, dtype=D, use_cache=True)
    assert torch.equal(again[3].weights[0], runs[3].weights[0])          # read back from the cache



def test_certify_rejects_a_run_stopped_by_its_schedule_and_passes_a_converged_one():
    """A short run under a cosine schedule ends with a small change of ||theta||^2 (the rate has
    decayed) but away from its minimum: continued at the peak rate it moves, so it is not
    certified. The same networks trained for long enough are certified."""
    g = torch.Generator().manual_seed(0)
    X, Y = torch.randn(16, 5, generator=g, dtype=D), torch.randn(16, 3, generator=g, dtype=D)
    lam = 0.05
    short = training.train_adam(training.build_mlps(3, 6, seeds=[1, 2], d_in=5, d_out=3, dtype=D), X, Y, lam=lam,
                                steps=60, lr=1e-2, lr_end=1e-6, record_every=10)
    assert float(short.tail_change().max()) < 0.05          # what the change test reads: nearly still
    moved = training.certify(short, X, Y, lam, lr=2e-3, window=300, dtype=D)
    assert float(moved.min()) > 0.02
    assert band_classes(moved, tol=0.01, band=2.0) == [NOT_CERTIFIED, NOT_CERTIFIED]   # beyond the band, not undecided
    long = training.train_adam(training.build_mlps(3, 6, seeds=[1, 2], d_in=5, d_out=3, dtype=D), X, Y, lam=lam,
                               steps=12000, lr=1e-2, lr_end=1e-5, record_every=1000)
    assert float(training.certify(long, X, Y, lam, lr=2e-3, window=300, dtype=D).max()) < 0.01
