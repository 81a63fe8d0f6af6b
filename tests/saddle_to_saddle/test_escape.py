"""The escape-direction solver on problems with known optima."""

from __future__ import annotations

import math

import pytest
import torch

from implicit_bias.saddle_to_saddle import escape
from implicit_bias.saddle_to_saddle import example1 as ex
from implicit_bias.saddle_to_saddle import localized as lo
from implicit_bias.spectra import tail_energy


def test_solver_finds_the_closed_form_speed() -> None:
    g = torch.Generator().manual_seed(0)
    X = torch.randn(12, 4, generator=g, dtype=torch.float64).abs()
    G = -torch.randn(12, 2, generator=g, dtype=torch.float64).abs()
    _, s1 = lo.closed_form_escape(X, G, 3, 4)
    res = escape.solve_escape(X, G, depth=3, widths=8, restarts=4, steps=600, lr=0.02, lr_final=0.01,
                              normalized=True, generator=g)
    i = res.best()
    assert float(res.speed[i]) >= s1 * (1 - 1e-3)
    assert float(res.kkt[i]) < 1e-3
    assert torch.allclose(res.layer_norms()[i], torch.ones(3, dtype=torch.float64), atol=1e-2)
    assert res.speeds.shape == (len(res.steps), 4) and res.steps[-1] == 600


def test_width_sweep_is_batched_with_masks() -> None:
    X, G = ex.circle_data()
    res = escape.solve_escape(X, G, depth=3, widths=[2, 5, 9], steps=50, lr=0.05,
                              generator=torch.Generator().manual_seed(1))
    W1, W2, W3 = res.weights
    assert W2.shape == (3, 9, 9)
    assert float(W2[0, 2:, :].abs().max()) == 0.0 and float(W2[1, :, 5:].abs().max()) == 0.0
    net = res.network(1)
    assert [tuple(W.shape) for W in net] == [(5, 2), (5, 5), (1, 5)]
    assert torch.allclose(lo.outputs(net, X), lo.outputs([W[1] for W in res.weights], X))


def test_depth_two_never_beats_the_rank_one_speed_on_example1() -> None:
    X, G = ex.circle_data()
    res = escape.solve_escape(X, G, depth=2, widths=16, restarts=16, steps=800, lr=0.1, lr_final=0.01,
                              generator=torch.Generator().manual_seed(2))
    assert float(res.speed.max()) <= ex.RANK_ONE_SPEED + 1e-9
    assert float(res.speed.max()) >= ex.RANK_ONE_SPEED - 1e-3


def test_rank_one_option_keeps_every_layer_rank_one() -> None:
    X, G = ex.circle_data()
    res = escape.solve_escape(X, G, depth=3, widths=8, restarts=8, steps=300, lr=0.1, rank_one=True,
                              generator=torch.Generator().manual_seed(3))
    for W in res.weights:
        assert float(tail_energy(W).max()) < 1e-20
    assert float(res.speed.max()) <= ex.RANK_ONE_SPEED + 1e-9


def test_warm_start_and_bad_arguments() -> None:
    X, G = ex.circle_data()
    init = [W[None] for W in ex.embed(ex.eq2_weights(-1.0), 4)]
    res = escape.solve_escape(X, G, depth=3, widths=[4], init=init, steps=0)
    assert float(res.speed[0]) == pytest.approx(0.5, abs=1e-12)
    with pytest.raises(ValueError, match="depth"):
        escape.solve_escape(X, G, depth=1, widths=4)
    with pytest.raises(ValueError, match="positive"):
        escape.solve_escape(X, G, depth=3, widths=[0, 3])
    with pytest.raises(ValueError, match="init must have shapes"):
        escape.solve_escape(X, G, depth=3, widths=[5], init=init)
    assert math.isinf(float(lo.kkt_residual([-W for W in ex.eq2_weights(-1.0)][:2] + [ex.eq2_weights(1.0)[2]], X, G)))
