"""The common networks of the synthesis pages (`implicit_bias.synthesis.arms`)."""

import torch

from implicit_bias import spectra
from implicit_bias.synthesis import arms


def test_mode_takes_the_most_common_value_and_the_smallest_on_a_tie():
    assert arms.mode([3, 2, 3, 5]) == 3
    assert arms.mode(torch.tensor([4, 2, 2, 4])) == 2


def test_as_params_names_weights_and_biases_like_an_mlp():
    W = [torch.zeros(2, 3, 4), torch.zeros(2, 5, 3)]
    b = [torch.zeros(2, 3)]
    p = arms.as_params(W, b)
    assert list(p) == ["layers.0.weight", "layers.1.weight", "layers.0.bias"]
    assert p["layers.1.weight"] is W[1]


def test_mid_alignments_reads_every_hidden_pair_and_is_one_for_a_shared_direction():
    g = torch.Generator().manual_seed(0)
    u = torch.nn.functional.normalize(torch.randn(2, 6, 1, generator=g, dtype=torch.float64), dim=1)
    rank_one = u @ u.transpose(1, 2)               # W_l = u u^T: u_1(W_l) = v_1(W_l+1) = u
    weights = [torch.randn(2, 6, 3, generator=g, dtype=torch.float64)] + [rank_one] * 3 + \
              [torch.randn(2, 2, 6, generator=g, dtype=torch.float64)]
    a = arms.mid_alignments(weights)
    assert a.shape == (2 * 2,)                     # pairs (1, 2) and (2, 3), two networks each
    assert torch.allclose(a, torch.ones_like(a))
    assert torch.allclose(a[:2], spectra.alignment(weights[1], weights[2]).flatten())


def test_train_small_without_snapshots_ends_where_the_recorded_run_ends():
    g = torch.Generator().manual_seed(1)
    X, Y = torch.randn(16, 5, generator=g), torch.randn(16, 3, generator=g)
    kw = dict(width=8, std=0.3, seed=0, n_nets=2, record=10)
    full = arms.train_small(X, Y, 4, 0.3, 40, **kw)
    bare = arms.train_small(X, Y, 4, 0.3, 40, snapshots=False, **kw)
    assert "s" in full and "s" not in bare
    for a, b in zip(full["W"], bare["W"]):
        assert torch.equal(a, b)
    assert full["norms"].shape[-1] == 4 and float(full["loss"][:, -1].max()) < float(full["loss"][:, 0].min())


def test_certify_minima_fails_far_from_a_minimum_and_passes_at_one():
    """Strong weight decay drives these small networks to a minimum within a few hundred steps;
    after 10 steps they are far from it, and continuing at a fixed rate moves them."""
    from implicit_bias.bottleneck import sweeps

    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(2)
    X, Y = torch.randn(12, 3, generator=g), torch.randn(12, 2, generator=g)
    early, late = (sweeps.depth_sweep(X, Y, [4], [0, 1], 6, 0.1, steps, 2.0, 1.0, torch.float64)[4]
                   for steps in (10, 400))
    ok_early, cert_early = arms.certify_minima(early, X, Y, 0.1, lr=0.1, window=100)
    ok_late, cert_late = arms.certify_minima(late, X, Y, 0.1, lr=0.1, window=100)
    assert not bool(ok_early.any()) and float(cert_early.rel_change.max()) > 0.1
    assert bool(ok_late.all()) and float(cert_late.rel_change.max()) < 1e-6
