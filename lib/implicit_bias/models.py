"""Networks used across the book, with ordered access to their weight matrices.

Conventions (see the notation page): a layer maps ``h -> W h`` with ``W`` of shape
``(out, in)``; a convolution kernel of shape ``(c_out, c_in, k, k)`` is flattened to the
matrix ``(c_out, c_in * k * k)``, one row per output channel (other flattenings of the same kernel
tensor appear in Le & Jegelka's Theorem 1 and Lemma 9; chapters that use them say so).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from torch import nn

from . import homogeneous

Activation = Literal["relu", "leaky", "linear", "tanh"]
Skip = Literal["identity", "diagonal", "free"]


def activation_module(name: Activation, negative_slope: float = 0.01) -> nn.Module:
    """The activation ``name`` as a module; raises on an unknown name."""
    if name == "relu":
        return nn.ReLU()
    if name == "leaky":
        return nn.LeakyReLU(negative_slope)
    if name == "linear":
        return nn.Identity()
    if name == "tanh":
        return nn.Tanh()
    raise ValueError(f"unknown activation {name!r}; use 'relu', 'leaky', 'linear' or 'tanh'")


def _init_(layer: nn.Module, init_scale: float, init_std: float | None) -> None:
    """Scale PyTorch's default init by ``init_scale``, or draw N(0, init_std^2) weights."""
    with torch.no_grad():
        if init_std is not None:
            layer.weight.normal_(0.0, init_std)
            if getattr(layer, "bias", None) is not None:
                layer.bias.zero_()
        else:
            layer.weight.mul_(init_scale)
            if getattr(layer, "bias", None) is not None:
                layer.bias.mul_(init_scale)


class MLP(nn.Module):
    """Fully connected network with ``depth`` weight layers.

    Args:
        d_in, d_out: input and output dimensions.
        width: hidden width (int) or the list of ``depth - 1`` hidden widths.
        depth: number of weight matrices ``L`` (``depth=1`` is a linear model).
        bias: learnable biases on every layer.
        activation: ``'relu'``, ``'leaky'``, ``'linear'`` (a deep linear network) or ``'tanh'``.
        init_scale: multiplies PyTorch's default initialisation (small values: the rich regime).
        init_std: if given, weights are i.i.d. N(0, init_std^2) and biases zero instead.
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        width: int | Sequence[int] = 64,
        depth: int = 3,
        bias: bool = True,
        activation: Activation = "relu",
        init_scale: float = 1.0,
        init_std: float | None = None,
        negative_slope: float = 0.01,
    ) -> None:
        super().__init__()
        if depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth}")
        widths = [width] * (depth - 1) if isinstance(width, int) else list(width)
        if len(widths) != depth - 1:
            raise ValueError(f"need {depth - 1} hidden widths for depth {depth}, got {len(widths)}")
        dims = [d_in, *widths, d_out]
        self.layers = nn.ModuleList(nn.Linear(a, b, bias=bias) for a, b in zip(dims[:-1], dims[1:]))
        for layer in self.layers:
            _init_(layer, init_scale, init_std)
        self.act = activation_module(activation, negative_slope)

    def features(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Post-activation representations after each hidden layer, then the output."""
        out = []
        h = x.flatten(1) if x.dim() > 2 else x
        for i, layer in enumerate(self.layers):
            h = layer(h)
            if i < len(self.layers) - 1:
                h = self.act(h)
            out.append(h)
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.flatten(1) if x.dim() > 2 else x
        for layer in self.layers[:-1]:
            h = self.act(layer(h))
        return self.layers[-1](h)


class ConvNet(nn.Module):
    """Small CNN: ``[conv -> act -> max-pool] x len(channels)``, then fully connected layers.

    Bias-free by default, so that with ReLU it is positively homogeneous in each layer
    (max-pool commutes with positive scaling). Inputs are ``(n, c, s, s)`` images.
    """

    def __init__(
        self,
        in_channels: int,
        image_size: int,
        d_out: int,
        channels: Sequence[int] = (8, 16),
        kernel_size: int = 3,
        pool: int = 2,
        hidden: Sequence[int] = (),
        bias: bool = False,
        activation: Activation = "relu",
        init_scale: float = 1.0,
        init_std: float | None = None,
    ) -> None:
        super().__init__()
        convs, size, c_prev = [], image_size, in_channels
        for c in channels:
            convs.append(nn.Conv2d(c_prev, c, kernel_size, padding=kernel_size // 2, bias=bias))
            size //= pool
            c_prev = c
        if size < 1:
            raise ValueError(f"image_size {image_size} is too small for {len(channels)} pools of {pool}")
        self.convs = nn.ModuleList(convs)
        self.pool = nn.MaxPool2d(pool)
        dims = [c_prev * size * size, *hidden, d_out]
        self.fcs = nn.ModuleList(nn.Linear(a, b, bias=bias) for a, b in zip(dims[:-1], dims[1:]))
        for layer in [*self.convs, *self.fcs]:
            _init_(layer, init_scale, init_std)
        self.act = activation_module(activation)

    def features(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Representations after each conv block and each hidden FC layer, then the output."""
        out = []
        h = x
        for conv in self.convs:
            h = self.pool(self.act(conv(h)))
            out.append(h)
        h = h.flatten(1)
        for i, fc in enumerate(self.fcs):
            h = fc(h)
            if i < len(self.fcs) - 1:
                h = self.act(h)
            out.append(h)
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.features(x)[-1]


class ResidualBlock(nn.Module):
    """Le & Jegelka's residual blocks (Def. 5): ``r(x) = act(U act(Y x) + S x)``.

    ``skip='identity'``: ``S = I`` (fixed; needs ``d_out == d_in``); ``'diagonal'``: ``S = D``
    learnable diagonal; ``'free'``: ``S = Z`` a learnable ``(d_out, d_in)`` matrix.
    """

    def __init__(
        self,
        d_in: int,
        d_hidden: int,
        d_out: int | None = None,
        skip: Skip = "identity",
        bias: bool = False,
        activation: Activation = "relu",
        init_scale: float = 1.0,
        init_std: float | None = None,
    ) -> None:
        super().__init__()
        d_out = d_in if d_out is None else d_out
        if skip not in ("identity", "diagonal", "free"):
            raise ValueError(f"unknown skip {skip!r}; use 'identity', 'diagonal' or 'free'")
        if skip != "free" and d_out != d_in:
            raise ValueError(f"skip={skip!r} needs d_out == d_in ({d_out} != {d_in})")
        self.skip = skip
        self.Y = nn.Linear(d_in, d_hidden, bias=bias)
        self.U = nn.Linear(d_hidden, d_out, bias=bias)
        for layer in (self.Y, self.U):
            _init_(layer, init_scale, init_std)
        if skip == "diagonal":
            self.D = nn.Parameter(torch.ones(d_in))
        elif skip == "free":
            self.Z = nn.Linear(d_in, d_out, bias=False)
            _init_(self.Z, init_scale, init_std)
        self.act = activation_module(activation)

    def skip_matrix(self) -> torch.Tensor | None:
        """The learnable skip as a matrix (``diag(D)`` or ``Z``), or None for the identity."""
        if self.skip == "diagonal":
            return torch.diag(self.D)
        if self.skip == "free":
            return self.Z.weight
        return None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        inner = self.U(self.act(self.Y(x)))
        if self.skip == "identity":
            return self.act(inner + x)
        if self.skip == "diagonal":
            return self.act(inner + self.D * x)
        return self.act(inner + self.Z(x))


class ResNetMLP(nn.Module):
    """``x -> act(W_in x) -> blocks -> W_out``: an MLP whose middle is residual blocks."""

    def __init__(
        self,
        d_in: int,
        d_out: int,
        width: int = 32,
        n_blocks: int = 2,
        d_hidden: int | None = None,
        skip: Skip = "identity",
        bias: bool = False,
        activation: Activation = "relu",
        init_scale: float = 1.0,
        init_std: float | None = None,
    ) -> None:
        super().__init__()
        self.inp = nn.Linear(d_in, width, bias=bias)
        self.blocks = nn.ModuleList(
            ResidualBlock(width, d_hidden or width, width, skip, bias, activation, init_scale, init_std)
            for _ in range(n_blocks)
        )
        self.out = nn.Linear(width, d_out, bias=bias)
        for layer in (self.inp, self.out):
            _init_(layer, init_scale, init_std)
        self.act = activation_module(activation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.act(self.inp(x.flatten(1) if x.dim() > 2 else x))
        for block in self.blocks:
            h = block(h)
        return self.out(h)


def weight_specs(model: nn.Module) -> list[tuple[str, str]]:
    """``(parameter name, kind)`` of each weight matrix in forward order; ``kind`` is
    ``'matrix'`` (a Linear weight), ``'conv'`` (a kernel to flatten) or ``'diag'`` (a vector
    that is the diagonal of the matrix)."""
    specs: list[tuple[str, str]] = []

    def visit(module: nn.Module, prefix: str) -> None:
        if isinstance(module, ResidualBlock):
            specs.extend([(prefix + "Y.weight", "matrix"), (prefix + "U.weight", "matrix")])
            if module.skip == "diagonal":
                specs.append((prefix + "D", "diag"))
            elif module.skip == "free":
                specs.append((prefix + "Z.weight", "matrix"))
            return
        if isinstance(module, nn.Linear):
            specs.append((prefix + "weight", "matrix"))
            return
        if isinstance(module, nn.Conv2d | nn.Conv1d):
            specs.append((prefix + "weight", "conv"))
            return
        for name, child in module.named_children():
            visit(child, f"{prefix}{name}.")

    visit(model, "")
    return specs


def as_matrix(param: torch.Tensor, kind: str, batch_dims: int = 0) -> torch.Tensor:
    """Turn a parameter into its weight matrix (see :func:`weight_specs`); leading
    ``batch_dims`` dimensions (e.g. an ensemble axis) are kept."""
    if kind == "matrix":
        return param
    if kind == "conv":
        return param.flatten(batch_dims + 1)
    if kind == "diag":
        return torch.diag_embed(param)
    raise ValueError(f"unknown weight kind {kind!r}")


def weight_matrices(model: nn.Module) -> list[torch.Tensor]:
    """The model's weight matrices in forward order (gradients flow through them).

    Linear layers give ``W`` of shape ``(out, in)``; conv kernels the output-channel flattening
    ``(c_out, c_in*k*k)``; a residual block gives ``Y``, ``U`` and then its learnable skip
    (``diag(D)`` or ``Z``) if any.
    """
    params = dict(model.named_parameters())
    return [as_matrix(params[name], kind) for name, kind in weight_specs(model)]


def num_parameters(model: nn.Module) -> int:
    """Number of scalar parameters."""
    return sum(p.numel() for p in model.parameters())


# --- Layer-by-layer access to MLPs (pre-activations, activations, patterns, norms) ------------
# Functional form used by the bottleneck part (Jacot 2023) and usable by any part: an MLP is the
# lists ``weights = [W_1, ..., W_L]`` (shapes ``(..., d_l, d_{l-1})``) and ``biases = [b_1, ...,
# b_L]`` (shapes ``(..., d_l)``), with optional leading batch dimensions (an ensemble axis).

from dataclasses import dataclass  # noqa: E402
from collections.abc import Mapping  # noqa: E402


@dataclass
class MLPTrace:
    """What an MLP computes on inputs ``X``, layer by layer (notation of Jacot 2023):

    - ``pre[l-1]`` = pre-activation ``W_l a_{l-1} + b_l`` of layer ``l = 1..L`` (``pre[-1]`` is
      the output ``f(X)``);
    - ``post[l]`` = activation ``a_l = sigma(pre_l)`` for ``l = 0..L-1`` (``post[0] = X``);
    - ``patterns[l-1]`` = ``sigma'(pre_l)`` for hidden layers ``l = 1..L-1``: the diagonal of
      ``D_l(x)``, entries 1 (active) or the negative slope (0 for ReLU).

    Each tensor is ``(..., n, d_l)``: samples as rows.
    """

    pre: list[torch.Tensor]
    post: list[torch.Tensor]
    patterns: list[torch.Tensor]

    @property
    def output(self) -> torch.Tensor:
        return self.pre[-1]


def mlp_weights_biases(source: nn.Module | Mapping[str, torch.Tensor]) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """``(weights, biases)`` of an :class:`MLP`, or of a mapping of its parameters such as the
    stacked ``Ensemble.params`` (then every tensor keeps the leading ensemble axis). Missing
    biases are returned as zeros so that every function here can assume them."""
    params = dict(source.named_parameters()) if isinstance(source, nn.Module) else dict(source)
    weights, biases = [], []
    i = 0
    while f"layers.{i}.weight" in params:
        W = params[f"layers.{i}.weight"]
        weights.append(W)
        b = params.get(f"layers.{i}.bias")
        biases.append(torch.zeros(W.shape[:-1], dtype=W.dtype, device=W.device) if b is None else b)
        i += 1
    if not weights:
        raise ValueError("no MLP layers found (expected parameters named 'layers.<i>.weight')")
    return weights, biases


def mlp_trace(weights: Sequence[torch.Tensor], biases: Sequence[torch.Tensor], X: torch.Tensor,
              negative_slope: float = 0.0) -> MLPTrace:
    """Run an MLP given as lists (see :func:`mlp_weights_biases`) with the leaky ReLU of slope
    ``negative_slope`` (0: ReLU, 1: linear) on inputs ``X`` ``(n, d_0)`` or ``(..., n, d_0)``,
    and return every pre-activation, activation and activation pattern (:class:`MLPTrace`)."""
    if len(weights) != len(biases):
        raise ValueError(f"{len(weights)} weight matrices but {len(biases)} bias vectors")
    pre, post, patterns = [], [X], []
    h = X
    for l, (W, b) in enumerate(zip(weights, biases)):
        z = h @ W.transpose(-1, -2) + b.unsqueeze(-2)
        pre.append(z)
        if l < len(weights) - 1:
            d = torch.where(z >= 0, torch.ones_like(z), torch.full_like(z, negative_slope))
            patterns.append(d)
            h = d * z
            post.append(h)
    return MLPTrace(pre, post, patterns)


def param_sqnorm(source: nn.Module | Mapping[str, torch.Tensor] | Sequence[torch.Tensor],
                 batch_dims: int = 0) -> torch.Tensor:
    """``||theta||^2 = sum_l ||W_l||_F^2 + ||b_l||^2``: the squared norm of every parameter,
    biases included. ``source`` is a module, a mapping of parameters, or a list of tensors; the
    first ``batch_dims`` dimensions (e.g. an ensemble axis) are kept."""
    if isinstance(source, nn.Module):
        tensors = list(source.parameters())
    elif isinstance(source, Mapping):
        tensors = list(source.values())
    else:
        tensors = list(source)
    return sum(t.pow(2).flatten(batch_dims).sum(-1) for t in tensors)


def balancedness_residual(weights: Sequence[torch.Tensor], biases: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Per hidden neuron ``i`` of layer ``l = 1..L-1``: ``||W_{l,i.}||^2 + b_{l,i}^2 -
    ||W_{l+1,.i}||^2`` (incoming minus outgoing squared weight). Critical points of
    ``C(f_theta) + lambda ||theta||^2`` with a homogeneous activation have all of them 0; summed
    over ``i`` it gives ``||W_l||_F^2 + ||b_l||^2 - ||W_{l+1}||_F^2``."""
    out = []
    for l in range(len(weights) - 1):
        incoming = weights[l].pow(2).sum(-1) + biases[l].pow(2)
        outgoing = weights[l + 1].pow(2).sum(-2)
        out.append(incoming - outgoing)
    return out


def mlp_from_weights(weights: Sequence[torch.Tensor], biases: Sequence[torch.Tensor] | None = None,
                     activation: Activation = "relu", negative_slope: float = 0.01) -> MLP:
    """An :class:`MLP` whose layers hold the given matrices (and biases; zeros if ``None``), for
    explicit constructions. The dtype follows the weights."""
    dims = [weights[0].shape[1]] + [W.shape[0] for W in weights]
    for l in range(1, len(weights)):
        if weights[l].shape[1] != weights[l - 1].shape[0]:
            raise ValueError(f"W_{l + 1} has {weights[l].shape[1]} columns but W_{l} has {weights[l - 1].shape[0]} rows")
    net = MLP(dims[0], dims[-1], width=dims[1:-1], depth=len(weights), bias=True, activation=activation,
              negative_slope=negative_slope).to(weights[0].dtype)
    with torch.no_grad():
        for l, layer in enumerate(net.layers):
            layer.weight.copy_(weights[l])
            layer.bias.copy_(biases[l] if biases is not None else torch.zeros(weights[l].shape[0]))
    return net
# --------------------------------------------------------------------------------------------
# Bias-free networks as lists of (possibly stacked) weight matrices: every layer's pre- and
# post-activations on a probe set (added with the saddle-to-saddle part).
# --------------------------------------------------------------------------------------------


def gaussian_weights(dims: Sequence[int], std: float = 1.0, batch_shape: Sequence[int] = (),
                     generator: torch.Generator | None = None, dtype: torch.dtype = torch.float64,
                     device: torch.device | str = "cpu") -> list[torch.Tensor]:
    """Weight matrices ``W_l`` of shape ``(*batch_shape, dims[l], dims[l-1])`` with i.i.d.
    ``N(0, std^2)`` entries, for a bias-free network with layer sizes ``dims = (d_0, ..., d_L)``.

    A non-empty ``batch_shape`` stacks independent networks (restarts, seeds) along leading axes.
    """
    if len(dims) < 2:
        raise ValueError(f"need at least an input and an output size, got dims={list(dims)}")
    if any(int(d) < 1 for d in dims):
        raise ValueError(f"layer sizes must be positive, got dims={list(dims)}")
    return [std * torch.randn(*batch_shape, int(b), int(a), generator=generator, dtype=dtype,
                              device=device)
            for a, b in zip(dims[:-1], dims[1:])]


def layer_activations(net: nn.Module | Sequence[torch.Tensor], X: torch.Tensor,
                      activation: Activation = "relu"
                      ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Every layer's pre-activations ``Z_l`` and post-activations ``sigma(Z_l)`` on the probe
    inputs ``X`` (rows are samples), for a bias-free network.

    ``net`` is a bias-free :class:`MLP` or the list of its weight matrices ``W_1..W_L`` (shape
    ``(out, in)``, optionally with leading batch axes, e.g. ``(R, out, in)`` for ``R`` stacked
    networks; ``X`` is then ``(n, d_0)`` shared or ``(R, n, d_0)``). Returns two lists of length
    ``L``: ``pre[l-1] = Z_l = sigma(Z_{l-1}) W_l^T`` of shape ``(..., n, d_l)`` and
    ``post[l-1] = sigma(Z_l)``, except that the last layer is linear: ``post[-1] = pre[-1]`` is the
    output. (The saddle-to-saddle paper stores samples as columns: its ``Z_l`` is our transpose.)
    """
    if isinstance(net, nn.Module):
        if any(name.endswith("bias") for name, _ in net.named_parameters()):
            raise ValueError("layer_activations needs a bias-free network (build it with bias=False)")
        if not isinstance(net, MLP):
            raise ValueError(f"layer_activations takes an MLP or a list of weights, got {type(net).__name__}")
        weights = weight_matrices(net)
        act = net.act                       # the module's own activation
    else:
        weights = list(net)
        act = activation_module(activation)
    h = X.flatten(1) if isinstance(net, nn.Module) and X.dim() > 2 else X
    return homogeneous.layer_outputs(weights, h, act)
