"""Closed forms of `implicit_bias.bottleneck.jacobians` against `torch.func` autodiff."""

from __future__ import annotations

import pytest
import torch
from torch.func import functional_call, jacrev, vmap

from implicit_bias import models, spectra
from implicit_bias.bottleneck import jacobians as jb

D = torch.float64


def random_net(seed: int = 0, slope: float = 0.0):
    torch.manual_seed(seed)
    act = "relu" if slope == 0.0 else "leaky"
    net = models.MLP(5, 3, width=[4, 6, 7], depth=4, activation=act, negative_slope=slope).double()
    W, b = models.mlp_weights_biases(net)
    return net, [w.detach() for w in W], [x.detach() for x in b]


@pytest.mark.parametrize("slope", [0.0, 0.2])
def test_input_jacobians_match_jacrev(slope: float) -> None:
    net, W, b = random_net(1, slope)
    X = torch.randn(9, 5, dtype=D)
    J = jb.input_jacobians(W, b, X, slope)
    ref = spectra.input_jacobian(lambda x: net(x.unsqueeze(0)).squeeze(0), X)
    assert torch.allclose(J, ref, atol=1e-12)


def test_partial_jacobians_compose_to_the_input_jacobian() -> None:
    _, W, b = random_net(2)
    X = torch.randn(6, 5, dtype=D)
    fwd, bwd = jb.partial_jacobians(W, b, X)
    J = jb.input_jacobians(W, b, X)
    for l in range(len(W)):           # J(pre_l -> f) J(pre_l) = Jf
        assert torch.allclose(bwd[l] @ fwd[l], J, atol=1e-12)
    assert torch.allclose(bwd[-1], torch.eye(3, dtype=D).expand(6, 3, 3))


@pytest.mark.parametrize("slope", [0.0, 0.3])
def test_ntk_trace_closed_form_matches_per_sample_gradients(slope: float) -> None:
    net, W, b = random_net(3, slope)
    X = torch.randn(8, 5, dtype=D)
    assert torch.allclose(jb.ntk_trace_closed_form(W, b, X, slope), spectra.ntk_trace(net, X), rtol=1e-10)
    # without the bias terms it is a strict lower bound
    assert (jb.ntk_trace_closed_form(W, b, X, slope, with_bias=False) < spectra.ntk_trace(net, X)).all()


def test_bilinear_gradient_matches_double_autodiff() -> None:
    net, W, b = random_net(4)
    X = torch.randn(5, 5, dtype=D)
    J = jb.input_jacobians(W, b, X)
    U, _, Vh = torch.linalg.svd(J)
    u, v = Vh[:, 0, :], U[:, :, 0]
    params = {k: p.detach() for k, p in net.named_parameters()}

    def h(p, x, uu, vv):
        Jx = jacrev(lambda xx: functional_call(net, p, (xx.unsqueeze(0),)).squeeze(0))(x)
        return vv @ Jx @ uu

    grads = vmap(jacrev(h), (None, 0, 0, 0))(params, X, u, v)
    ref = sum(g.flatten(1).pow(2).sum(1) for g in grads.values())
    assert torch.allclose(jb.jacobian_bilinear_gradient_sq(W, b, X, u, v), ref, rtol=1e-10)
