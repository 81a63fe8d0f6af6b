"""Architectures of `implicit_bias.models`: shapes, weight order, skips, homogeneity."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from implicit_bias import models

D = torch.float64


# --- shapes and weight matrices ---------------------------------------------------------

def test_mlp_shapes_and_weight_order() -> None:
    net = models.MLP(10, 3, width=[7, 5, 4], depth=4)
    assert net(torch.randn(6, 10)).shape == (6, 3)
    Ws = models.weight_matrices(net)
    assert [tuple(W.shape) for W in Ws] == [(7, 10), (5, 7), (4, 5), (3, 4)]
    assert all(W is layer.weight for W, layer in zip(Ws, net.layers))
    x = torch.randn(6, 10)
    feats = net.features(x)
    assert [tuple(h.shape) for h in feats] == [(6, 7), (6, 5), (6, 4), (6, 3)]
    assert torch.all(feats[0] >= 0)  # ReLU after hidden layers
    assert torch.allclose(feats[-1], net(x))


def test_mlp_flattens_images_and_depth_one_is_linear() -> None:
    net = models.MLP(16, 2, width=8, depth=3)
    x = torch.randn(3, 1, 4, 4)
    assert torch.allclose(net(x), net(x.flatten(1)))
    lin = models.MLP(5, 2, depth=1, bias=False)
    x = torch.randn(4, 5)
    assert torch.allclose(lin(x), x @ lin.layers[0].weight.T)


def test_mlp_bad_arguments() -> None:
    with pytest.raises(ValueError, match="depth"):
        models.MLP(3, 1, depth=0)
    with pytest.raises(ValueError, match="hidden widths"):
        models.MLP(3, 1, width=[4, 4], depth=2)
    with pytest.raises(ValueError, match="unknown activation 'gelu'"):
        models.MLP(3, 1, activation="gelu")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="relu"):
        models.activation_module("swish")  # type: ignore[arg-type]


def test_mlp_bias_flag_and_linear_activation() -> None:
    net = models.MLP(3, 2, width=4, depth=3, bias=False, activation="linear")
    assert all(layer.bias is None for layer in net.layers)
    W = torch.linalg.multi_dot([layer.weight for layer in reversed(net.layers)])
    x = torch.randn(5, 3)
    assert torch.allclose(net(x), x @ W.T, atol=1e-6)


def test_convnet_shapes_and_flattening() -> None:
    net = models.ConvNet(1, 8, 10, channels=(4, 6), kernel_size=3, hidden=(12,))
    x = torch.randn(5, 1, 8, 8)
    assert net(x).shape == (5, 10)
    Ws = models.weight_matrices(net)
    assert [tuple(W.shape) for W in Ws] == [(4, 1 * 9), (6, 4 * 9), (12, 6 * 2 * 2), (10, 12)]
    # output-channel flattening: row c is kernel[c] flattened in (c_in, k, k) order
    kernel = net.convs[1].weight
    assert torch.equal(Ws[1][2], kernel[2].reshape(-1))
    assert all(p.dim() > 1 for p in net.parameters())  # bias-free by default
    feats = net.features(x)
    assert [tuple(h.shape) for h in feats] == [(5, 4, 4, 4), (5, 6, 2, 2), (5, 12), (5, 10)]


def test_convnet_too_small_image_raises() -> None:
    with pytest.raises(ValueError, match="too small"):
        models.ConvNet(1, 2, 3, channels=(4, 4))


def test_num_parameters() -> None:
    net = models.MLP(4, 2, width=3, depth=2)
    assert models.num_parameters(net) == 4 * 3 + 3 + 3 * 2 + 2


# --- residual blocks --------------------------------------------------------------------

def test_residual_block_identity_skip() -> None:
    torch.manual_seed(0)
    block = models.ResidualBlock(5, 7, skip="identity")
    x = torch.randn(4, 5)
    expected = torch.relu(block.U(torch.relu(block.Y(x))) + x)
    assert torch.allclose(block(x), expected)
    assert block.skip_matrix() is None
    assert [tuple(W.shape) for W in models.weight_matrices(block)] == [(7, 5), (5, 7)]
    with pytest.raises(ValueError, match="d_out == d_in"):
        models.ResidualBlock(5, 7, d_out=6, skip="identity")
    with pytest.raises(ValueError, match="d_out == d_in"):
        models.ResidualBlock(5, 7, d_out=6, skip="diagonal")
    with pytest.raises(ValueError, match="unknown skip"):
        models.ResidualBlock(5, 7, skip="none")  # type: ignore[arg-type]


def test_residual_block_diagonal_and_free_skips() -> None:
    torch.manual_seed(1)
    diag = models.ResidualBlock(5, 7, skip="diagonal")
    with torch.no_grad():
        diag.D.copy_(torch.arange(1.0, 6.0))
    x = torch.randn(4, 5)
    assert torch.allclose(diag(x), torch.relu(diag.U(torch.relu(diag.Y(x))) + x * diag.D))
    assert torch.equal(diag.skip_matrix(), torch.diag(diag.D))
    Ws = models.weight_matrices(diag)
    assert [tuple(W.shape) for W in Ws] == [(7, 5), (5, 7), (5, 5)]
    assert torch.equal(Ws[2], torch.diag(diag.D))

    free = models.ResidualBlock(5, 7, d_out=3, skip="free")
    assert free(x).shape == (4, 3)
    assert torch.allclose(free(x), torch.relu(free.U(torch.relu(free.Y(x))) + free.Z(x)))
    assert [tuple(W.shape) for W in models.weight_matrices(free)] == [(7, 5), (3, 7), (3, 5)]
    assert free.skip_matrix() is free.Z.weight


def test_resnet_mlp_weight_order() -> None:
    net = models.ResNetMLP(6, 2, width=4, n_blocks=2, d_hidden=3, skip="diagonal")
    assert net(torch.randn(5, 6)).shape == (5, 2)
    shapes = [tuple(W.shape) for W in models.weight_matrices(net)]
    assert shapes == [(4, 6), (3, 4), (4, 3), (4, 4), (3, 4), (4, 3), (4, 4), (2, 4)]


def test_as_matrix_batched_and_unknown_kind() -> None:
    kernels = torch.randn(3, 8, 2, 3, 3)  # an ensemble axis in front
    assert models.as_matrix(kernels, "conv", batch_dims=1).shape == (3, 8, 18)
    assert models.as_matrix(torch.randn(3, 4), "diag", batch_dims=1).shape == (3, 4, 4)
    with pytest.raises(ValueError, match="unknown weight kind"):
        models.as_matrix(kernels, "tensor")


# --- positive homogeneity ---------------------------------------------------------------

@pytest.mark.parametrize("c", [0.5, 3.0])
def test_bias_free_relu_mlp_is_positively_homogeneous(c: float) -> None:
    torch.manual_seed(2)
    net = models.MLP(6, 3, width=8, depth=4, bias=False).double()
    x = torch.randn(5, 6, dtype=D)
    assert torch.allclose(net(c * x), c * net(x))
    # in the parameters: scaling every layer by a multiplies the output by a^L
    with torch.no_grad():
        before = net(x)
        for layer in net.layers:
            layer.weight.mul_(1.5)
    assert torch.allclose(net(x), 1.5**4 * before)


def test_bias_free_relu_cnn_is_positively_homogeneous() -> None:
    torch.manual_seed(3)
    net = models.ConvNet(2, 8, 4, channels=(3, 5), hidden=(6,)).double()
    x = torch.randn(4, 2, 8, 8, dtype=D)
    assert torch.allclose(net(2.5 * x), 2.5 * net(x))


def test_per_neuron_rescaling_leaves_relu_mlp_unchanged() -> None:
    torch.manual_seed(4)
    net = models.MLP(5, 2, width=6, depth=3, bias=True).double()
    x = torch.randn(7, 5, dtype=D)
    before = net(x)
    a = torch.rand(6, dtype=D) * 3 + 0.2  # one positive factor per hidden neuron of layer 1
    with torch.no_grad():
        l1, l2 = net.layers[0], net.layers[1]
        l1.weight.mul_(a[:, None])
        l1.bias.mul_(a)  # the incoming bias scales with the neuron
        l2.weight.div_(a[None, :])
    assert torch.allclose(net(x), before)
    # a negative factor breaks it for ReLU
    with torch.no_grad():
        l1.weight[0].mul_(-1)
        l1.bias[0].mul_(-1)
        l2.weight[:, 0].mul_(-1)
    assert not torch.allclose(net(x), before)


def test_per_channel_rescaling_leaves_relu_cnn_unchanged() -> None:
    torch.manual_seed(5)
    net = models.ConvNet(1, 8, 3, channels=(4, 4)).double()
    x = torch.randn(3, 1, 8, 8, dtype=D)
    before = net(x)
    a = torch.rand(4, dtype=D) + 0.5
    with torch.no_grad():
        net.convs[0].weight.mul_(a[:, None, None, None])
        net.convs[1].weight.div_(a[None, :, None, None])
    assert torch.allclose(net(x), before)


def test_tanh_is_not_homogeneous() -> None:
    torch.manual_seed(6)
    net = models.MLP(3, 1, width=5, depth=2, bias=False, activation="tanh").double()
    x = torch.randn(4, 3, dtype=D)
    assert not torch.allclose(net(3 * x), 3 * net(x))


# --- initialisation ---------------------------------------------------------------------

def test_init_std_and_init_scale() -> None:
    torch.manual_seed(7)
    net = models.MLP(200, 200, width=300, depth=2, init_std=0.05)
    for layer in net.layers:
        assert layer.weight.std().item() == pytest.approx(0.05, rel=0.03)
        assert abs(layer.weight.mean().item()) < 0.005
        assert torch.all(layer.bias == 0)
    torch.manual_seed(8)
    ref = models.MLP(4, 3, width=5, depth=2)
    torch.manual_seed(8)
    small = models.MLP(4, 3, width=5, depth=2, init_scale=1e-2)
    for a, b in zip(ref.parameters(), small.parameters()):
        assert torch.allclose(b, 1e-2 * a)


def test_init_std_applies_to_every_architecture() -> None:
    torch.manual_seed(9)
    for net in (models.ConvNet(1, 8, 3, init_std=0.1), models.ResNetMLP(4, 2, skip="free", init_std=0.1),
                models.ResidualBlock(4, 4, init_std=0.1)):
        for W in models.weight_matrices(net):
            assert W.abs().max().item() < 1.0  # N(0, 0.01): nothing near PyTorch's default spread
    block = models.ResidualBlock(4, 4, skip="diagonal", init_std=0.1)
    assert torch.all(block.D == 1)  # the diagonal skip starts at the identity


def test_weight_matrices_carry_gradients() -> None:
    net = models.MLP(3, 1, width=4, depth=2)
    loss = sum(W.pow(2).sum() for W in models.weight_matrices(net))
    loss.backward()
    assert all(layer.weight.grad is not None for layer in net.layers)
    assert isinstance(models.activation_module("leaky", 0.2), nn.LeakyReLU)


# --- layer-by-layer access to MLPs (used by the bottleneck part) -------------------------------

def test_mlp_trace_matches_the_module_and_lists_every_layer() -> None:
    torch.manual_seed(3)
    net = models.MLP(5, 3, width=[4, 6], depth=3).double()
    W, b = models.mlp_weights_biases(net)
    X = torch.randn(8, 5, dtype=torch.float64)
    tr = models.mlp_trace(W, b, X)
    assert torch.allclose(tr.output, net(X))
    assert [p.shape for p in tr.pre] == [(8, 4), (8, 6), (8, 3)]
    assert [p.shape for p in tr.post] == [(8, 5), (8, 4), (8, 6)]
    assert torch.equal(tr.post[0], X)
    for pre, post, pat in zip(tr.pre[:-1], tr.post[1:], tr.patterns):
        assert torch.equal(post, torch.relu(pre))
        assert torch.equal(pat, (pre >= 0).double())
    leaky = models.MLP(5, 3, width=4, depth=2, activation="leaky", negative_slope=0.2).double()
    Wl, bl = models.mlp_weights_biases(leaky)
    assert torch.allclose(models.mlp_trace(Wl, bl, X, negative_slope=0.2).output, leaky(X))


def test_mlp_weights_biases_from_an_ensemble_keeps_the_member_axis() -> None:
    from implicit_bias import ensembles
    ens = ensembles.Ensemble.build(lambda s: models.MLP(3, 2, 4, 3).double(), seeds=[0, 1])
    W, b = models.mlp_weights_biases(ens.params)
    assert [w.shape for w in W] == [(2, 4, 3), (2, 4, 4), (2, 2, 4)]
    X = torch.randn(5, 3, dtype=torch.float64)
    assert torch.allclose(models.mlp_trace(W, b, X).output, ens(X))
    assert torch.allclose(models.param_sqnorm(ens.params, batch_dims=1),
                          torch.stack([models.param_sqnorm(ens.member(i)) for i in range(2)]))
    nobias = models.MLP(3, 2, 4, 2, bias=False)
    _, zeros = models.mlp_weights_biases(nobias)
    assert all(torch.equal(z, torch.zeros_like(z)) for z in zeros)
    with pytest.raises(ValueError, match="no MLP layers"):
        models.mlp_weights_biases(models.ConvNet(1, 8, 3))


def test_param_sqnorm_counts_biases() -> None:
    net = models.MLP(2, 1, width=3, depth=2)
    with torch.no_grad():
        for p in net.parameters():
            p.fill_(1.0)
    assert models.param_sqnorm(net).item() == pytest.approx(6 + 3 + 3 + 1)   # W1, b1, W2, b2


def test_balancedness_residual_on_a_rescaled_balanced_network() -> None:
    # a balanced two-layer net: incoming ||W_1[i]||^2 + b_1[i]^2 = outgoing ||W_2[:, i]||^2
    W1 = torch.tensor([[1.0, 0.0], [0.0, 2.0]], dtype=torch.float64)
    b1 = torch.tensor([0.0, 0.0], dtype=torch.float64)
    W2 = torch.tensor([[1.0, 2.0]], dtype=torch.float64)
    r = models.balancedness_residual([W1, W2], [b1, torch.zeros(1, dtype=torch.float64)])
    assert torch.allclose(r[0], torch.zeros(2, dtype=torch.float64))
    # rescaling neuron 1 (row of W_1 by 2, column of W_2 by 1/2) keeps the function, breaks balance
    W1s, W2s = W1.clone(), W2.clone()
    W1s[0] *= 2
    W2s[:, 0] /= 2
    r = models.balancedness_residual([W1s, W2s], [b1, torch.zeros(1, dtype=torch.float64)])
    assert torch.allclose(r[0], torch.tensor([4 - 0.25, 0.0], dtype=torch.float64))


def test_mlp_from_weights_round_trip() -> None:
    torch.manual_seed(4)
    W = [torch.randn(4, 3, dtype=torch.float64), torch.randn(5, 4, dtype=torch.float64), torch.randn(2, 5, dtype=torch.float64)]
    b = [torch.randn(4, dtype=torch.float64), torch.randn(5, dtype=torch.float64), torch.randn(2, dtype=torch.float64)]
    net = models.mlp_from_weights(W, b)
    X = torch.randn(6, 3, dtype=torch.float64)
    assert torch.allclose(net(X), models.mlp_trace(W, b, X).output)
    with pytest.raises(ValueError, match="columns"):
        models.mlp_from_weights([W[0], W[0]])

# --- bias-free traces (saddle-to-saddle part) ------------------------------------------------

def test_gaussian_weights_shapes_and_std() -> None:
    g = torch.Generator().manual_seed(0)
    Ws = models.gaussian_weights([3, 200, 100, 2], std=0.5, batch_shape=(4,), generator=g)
    assert [tuple(W.shape) for W in Ws] == [(4, 200, 3), (4, 100, 200), (4, 2, 100)]
    assert abs(float(Ws[1].std()) - 0.5) < 0.01
    with pytest.raises(ValueError, match="at least an input"):
        models.gaussian_weights([3])
    with pytest.raises(ValueError, match="positive"):
        models.gaussian_weights([3, 0, 1])


def test_layer_activations_match_the_mlp_and_by_hand() -> None:
    torch.manual_seed(0)
    net = models.MLP(4, 3, width=[5, 6], depth=3, bias=False).double()
    X = torch.randn(7, 4, dtype=torch.float64)
    pre, post = models.layer_activations(net, X)
    W1, W2, W3 = models.weight_matrices(net)
    Z1 = X @ W1.T
    Z2 = torch.relu(Z1) @ W2.T
    Z3 = torch.relu(Z2) @ W3.T
    for a, b in zip(pre, [Z1, Z2, Z3]):
        assert torch.allclose(a, b)
    assert torch.allclose(post[0], torch.relu(Z1)) and torch.allclose(post[-1], Z3)
    assert torch.allclose(post[-1], net(X))
    # a list of stacked weights gives every network's trace at once
    stacked = [torch.stack([W, 2 * W]) for W in (W1, W2, W3)]
    pre_s, _ = models.layer_activations(stacked, X)
    assert torch.allclose(pre_s[-1][0], Z3) and torch.allclose(pre_s[-1][1], 8 * Z3)


def test_layer_activations_rejects_biases_and_bad_shapes() -> None:
    with pytest.raises(ValueError, match="bias-free"):
        models.layer_activations(models.MLP(4, 3, 5, 2, bias=True), torch.randn(2, 4))
    with pytest.raises(ValueError, match="expects inputs of size 4"):
        models.layer_activations([torch.randn(5, 4)], torch.randn(2, 3))
