"""Per-layer structure of a bias-free ReLU network on its data: the quantities that Theorem 3.1
and Propositions 3.3-3.4 of Bantzis, Simon & Jacot bound.

For layer ``l``, with ``Z_l`` the pre-activations and ``Z^sigma_l = ReLU(Z_l)`` on the data
(``Z^sigma_0 = X``):

- ``tau(W_l)`` and ``tau(Z^sigma_l)``: the tail energy ``1 - s_1^2 / sum_i s_i^2``
  (:func:`implicit_bias.spectra.tail_energy`), 0 exactly for rank one;
- ``nu_l = ||Z^sigma_l - Z_l||_F^2 / ||Z_l||_F^2``: how much the ReLU changes the layer
  (0 when every pre-activation is non-negative, i.e. the ReLU acts as the identity);
- ``s_2/s_1`` of ``W_l``, the paper's "first singular value is ``l^(1/4)`` larger" reading.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..models import layer_activations
from ..spectra import singular_values, stable_rank, tail_energy


@dataclass
class LayerStructure:
    """Per-layer measures, last axis over layers. ``tau_W``, ``ratio_W``: ``(..., L)`` for
    ``W_1..W_L``; ``tau_Z``, ``nu``: ``(..., L-1)`` for the hidden layers ``1..L-1``;
    ``srank_Z``: ``(..., L)`` stable ranks of ``Z^sigma_0 = X, Z^sigma_1, ..., Z^sigma_{L-1}``."""

    tau_W: torch.Tensor
    ratio_W: torch.Tensor
    tau_Z: torch.Tensor
    nu: torch.Tensor
    srank_Z: torch.Tensor


def nonlinearity(Z: torch.Tensor) -> torch.Tensor:
    """``||ReLU(Z) - Z||_F^2 / ||Z||_F^2`` (batched over leading axes)."""
    return (torch.relu(Z) - Z).pow(2).flatten(-2).sum(-1) / Z.pow(2).flatten(-2).sum(-1)


def worst_per_layer(st: LayerStructure) -> torch.Tensor:
    """``max(tau(W_l), tau(Z^sigma_l), nu_l)`` for every layer ``l = 1..L`` (the quantity that
    Theorem 3.1 and Proposition 3.3 bound; the output layer has no ``Z^sigma_L`` or ``nu_L`` and
    counts ``tau(W_L)`` only)."""
    pad = st.tau_W.new_zeros(*st.tau_W.shape[:-1], 1)
    tau_Z = torch.cat([st.tau_Z.to(st.tau_W.dtype), pad], -1)
    nu = torch.cat([st.nu.to(st.tau_W.dtype), pad], -1)
    return torch.stack([st.tau_W, tau_Z, nu]).max(0).values


def layer_structure(weights: Sequence[torch.Tensor], X: torch.Tensor) -> LayerStructure:
    """The measures of the module docstring for a network (or stacked networks) on ``X``."""
    pre, post = layer_activations(weights, X)
    s = [singular_values(W) for W in weights]
    tau_W = torch.stack([tail_energy(W) for W in weights], -1)
    ratio_W = torch.stack([v[..., 1] / v[..., 0] if v.shape[-1] > 1 else torch.zeros_like(v[..., 0])
                           for v in s], -1)
    hidden = post[:-1]
    tau_Z = torch.stack([tail_energy(Z) for Z in hidden], -1) if hidden else torch.empty(0)
    nu = torch.stack([nonlinearity(Z) for Z in pre[:-1]], -1) if hidden else torch.empty(0)
    Xb = X.expand(*post[0].shape[:-2], *X.shape) if post[0].dim() > X.dim() else X
    srank_Z = torch.stack([stable_rank(Z) for Z in [Xb, *hidden]], -1)
    return LayerStructure(tau_W, ratio_W, tau_Z, nu, srank_Z)
