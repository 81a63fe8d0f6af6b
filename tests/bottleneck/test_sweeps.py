"""The depth sweep of `implicit_bias.bottleneck.sweeps`: training, bookkeeping and the cache."""

from __future__ import annotations

import torch

from implicit_bias import models
from implicit_bias.bottleneck import sweeps, tasks


def test_depth_sweep_trains_records_and_caches(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("IMPLICIT_BIAS_CACHE", str(tmp_path))
    t = tasks.bottleneck_rank_task(32, 8, seed=0)
    runs = sweeps.depth_sweep(t.X, t.Y, (2, 3), seeds=[0, 1], width=8, lam=1e-3, steps=200, lr_scale=1.0,
                              use_cache=True)
    assert set(runs) == {2, 3}
    r = runs[3]
    assert r.seeds == 2 and len(r.weights) == 3 and r.weights[0].shape == (2, 8, 20)
    W, b = r.member(1)
    out = models.mlp_trace(W, b, t.X).output
    assert torch.allclose(r.cost[1], (out - t.Y).pow(2).sum(1).mean())
    assert torch.allclose(r.sqnorm[1], models.param_sqnorm(W + b))
    assert float(r.cost.max()) < 1.0                     # it learned something
    assert len(list(tmp_path.glob("*.pt"))) == 2         # one cache entry per depth
    again = sweeps.depth_sweep(t.X, t.Y, (2, 3), seeds=[0, 1], width=8, lam=1e-3, steps=200, lr_scale=1.0,
                               use_cache=True)
    assert torch.equal(again[3].weights[0], r.weights[0])
