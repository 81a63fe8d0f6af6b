"""Training runs of the MNIST experiment: segments resume exactly, and the cache is used."""

from __future__ import annotations

import pytest
import torch

from implicit_bias.saddle_to_saddle import training


def blobs(n: int = 120, d: int = 6, k: int = 3, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % k
    return 2 * torch.randn(k, d, generator=g)[y] + torch.randn(n, d, generator=g), y


def config(**kw) -> training.RunConfig:
    base = dict(depth=3, width=8, d_in=6, d_out=3, std=0.1, eta0=0.5, steps=60, batch_size=8, radius=3 ** 0.5,
                runs=2, seed=1, probe=20, record=5, uniform=6)
    return training.RunConfig(**(base | kw))


def test_standardize_uses_one_scalar_mean_and_deviation() -> None:
    X = torch.tensor([[0.0, 2.0], [4.0, 6.0]])
    Z = training.standardize(X)
    assert abs(float(Z.mean())) < 1e-7 and abs(float(Z.std()) - 1) < 1e-6
    assert torch.allclose(Z[:, 1] - Z[:, 0], torch.full((2,), float(2 / X.std())))


def test_runs_record_loss_and_spectra_on_one_schedule() -> None:
    X, y = blobs()
    res = training.train_runs(config(), X, y, progress=False)
    K = len(res.spectra_steps)
    assert res.spectra_steps[0] == 0 and res.spectra_steps[-1] == 60
    assert res.loss_curve.shape == (2, K) and res.batch_loss.shape == (2, 60)
    assert res.singular_values(2).shape == (K, 2, 8) and res.norms.shape == (K, 2)
    assert training.second_over_first(res).shape == (K, 2, 3)
    assert res.at(0) == 0 and res.at(1e9) == K - 1


def test_segments_resume_exactly_and_are_cached(tmp_path, monkeypatch) -> None:
    X, y = blobs()
    whole = training.train_runs(config(), X, y, progress=False)
    monkeypatch.setenv("IMPLICIT_BIAS_CACHE", str(tmp_path))
    split = training.train_runs(config(segment=25), X, y, use_cache=True, progress=False)
    # segments draw their own mini-batches (seeded by the segment index), so compare a split
    # run with itself resumed from the cache, and the recorded schedule with the whole run's
    assert split.spectra_steps == whole.spectra_steps
    assert len(list(tmp_path.glob("*.pt"))) == 3
    again = training.train_runs(config(segment=25), X, y, use_cache=True, progress=False)
    assert all(torch.equal(a, b) for a, b in zip(split.weights, again.weights))
    assert torch.equal(split.loss_curve, again.loss_curve)
    # deleting the last segment recomputes only it, with the same result
    newest = max(tmp_path.glob("*.pt"), key=lambda p: p.stat().st_mtime)
    newest.unlink()
    resumed = training.train_runs(config(segment=25), X, y, use_cache=True, progress=False)
    assert all(torch.equal(a, b) for a, b in zip(split.weights, resumed.weights))


def test_run_killed_between_segments_resumes_after_the_last_stored_one(tmp_path, monkeypatch, capsys) -> None:
    """A run interrupted while training its third segment (KeyboardInterrupt, as Ctrl-C or a
    scheduler's signal) has stored two; the rerun trains only the remaining ones, says it loaded
    two from the cache, and ends exactly where an uninterrupted run ends."""
    from implicit_bias import train

    X, y = blobs()
    cfg = config(steps=100, segment=25)
    uninterrupted = training.train_runs(cfg, X, y, progress=False)  # no cache at all
    monkeypatch.setenv("IMPLICIT_BIAS_CACHE", str(tmp_path))
    real = train.train_norm_adaptive
    calls: list[int] = []

    def killed_at_third(*args, **kw):
        calls.append(kw["step_offset"])
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kw)

    monkeypatch.setattr(train, "train_norm_adaptive", killed_at_third)
    with pytest.raises(KeyboardInterrupt):
        training.train_runs(cfg, X, y, use_cache=True, progress=False)
    assert len(list(tmp_path.glob("*.pt"))) == 2 and not list(tmp_path.glob("*.tmp"))
    calls.clear()
    monkeypatch.setattr(train, "train_norm_adaptive", lambda *a, **kw: calls.append(kw["step_offset"]) or real(*a, **kw))
    capsys.readouterr()
    resumed = training.train_runs(cfg, X, y, use_cache=True, progress=False)
    assert calls == [50, 75]  # only the segments after the last stored one
    assert "cache: 2 of 4 segments of 'saddle-training' (depth 3) loaded; the first from saddle-training-" in \
        capsys.readouterr().out
    assert all(torch.equal(a, b) for a, b in zip(uninterrupted.weights, resumed.weights))
    assert torch.equal(uninterrupted.loss_curve, resumed.loss_curve)
    assert torch.equal(uninterrupted.batch_loss, resumed.batch_loss)


def test_balanced_subset() -> None:
    X, y = blobs(n=30)
    Xs, ys = training.balanced_subset(X, y, 4)
    assert ys.tolist() == [0] * 4 + [1] * 4 + [2] * 4
    assert abs(float(Xs.mean())) < 1e-6
    with pytest.raises(ValueError, match="fewer than"):
        training.balanced_subset(X, y, 11)


def test_train_until_escape_checkpoint_is_the_last_step_on_the_plateau() -> None:
    """The weights kept for each run are those after exactly ``step`` updates (a replay from
    scratch gives the same), their probe loss is still above the threshold, and one more step
    takes it below."""
    import math

    from implicit_bias import models, train

    g = torch.Generator().manual_seed(0)
    X = torch.randn(120, 6, generator=g, dtype=torch.float64)
    y = (X[:, 0] > 0).long() + 2 * (X[:, 1] > 0).long()
    kw = dict(depth=3, width=8, std=0.1, eta0=0.3, batch_size=16, max_steps=3000, chunk=100, probe=60, seed=3)
    fe = training.train_until_escape([1.0, 1e-3], X, y, **kw)
    assert bool(fe.escaped.all())
    rows = torch.randperm(len(X), generator=torch.Generator().manual_seed(3))[:60]
    threshold = 0.99 * math.log(4)
    for r in range(2):
        k = int(fe.step[r])
        out = models.layer_activations([W[r] for W in fe.weights], X[rows])[0][-1]
        assert float(torch.nn.functional.cross_entropy(out, y[rows])) >= threshold
    # replay run 0 from scratch for step[0] steps in one go: same mini-batches, same weights
    gen0 = torch.Generator().manual_seed(3)
    Ws = [W.clone() for W in models.gaussian_weights([6, 8, 8, 4], 0.1, (2,), generator=gen0, dtype=torch.float64)]
    Ws = [W * torch.tensor([1.0, 1e-3], dtype=torch.float64)[:, None, None] for W in Ws]
    gen = torch.Generator().manual_seed(10_000 * 3 + 1)
    done = 0
    while done < int(fe.step[0]):                     # same chunking of the random stream
        n = min(100, int(fe.step[0]) - done)
        if n < 100:
            break
        train.train_norm_adaptive(Ws, X, y, loss="ce", steps=100, eta0=0.3, radius=math.sqrt(3), batch_size=16,
                                  generator=gen, progress=False)
        done += 100
    hist = train.train_norm_adaptive(Ws, X, y, loss="ce", steps=100, eta0=0.3, radius=math.sqrt(3), batch_size=16,
                                     generator=gen, record_steps=[int(fe.step[0]) - done],
                                     metrics={"w": lambda ws: [w.clone() for w in ws]}, progress=False)
    snap = hist.records["w"][0]
    assert all(torch.equal(a[0], b[0]) for a, b in zip(snap, fe.weights))
    assert bool((fe.norm_growth > 0).all()) and fe.out_max.shape == (2,)


def test_layer_spectra_figure_draws_one_panel_per_layer():
    """Figure 1's right-hand panels: one log-scale panel per layer with the top singular values
    of the chosen run at every recorded step; panels beyond the depth are hidden."""
    import matplotlib

    matplotlib.use("Agg")
    from types import SimpleNamespace

    depth, steps, runs = 4, [0, 10, 20], 2
    spectra = [torch.arange(1.0, 13.0).repeat(depth, runs, 1) * (1 + k) for k in range(len(steps))]
    result = SimpleNamespace(spectra_steps=steps, singular_values=lambda layer: torch.stack([s[layer - 1] for s in spectra]))
    fig = training.layer_spectra_figure(result, 1, depth)
    shown = [ax for ax in fig.axes if ax.axison]
    assert len(fig.axes) == 6 and len(shown) == depth
    for layer, ax in enumerate(shown, start=1):
        assert ax.get_title() == f"$W_{layer}$" and ax.get_yscale() == "log"
        assert len(ax.lines) == 10  # the top 10 of the 12 values
        assert list(ax.lines[0].get_ydata()) == [1.0, 2.0, 3.0] and list(ax.lines[0].get_xdata()) == steps
