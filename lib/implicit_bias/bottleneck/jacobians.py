"""Closed-form Jacobians and NTK quantities of an MLP, per sample.

The MLP is the lists ``(weights, biases)`` of :func:`implicit_bias.models.mlp_weights_biases`
with leaky-ReLU slope ``a`` (0 for ReLU). With ``D_l(x) = diag(sigma'(pre_l(x)))``:

- input Jacobian ``Jf(x) = W_L D_{L-1}(x) W_{L-1} ... D_1(x) W_1``;
- the Jacobian of the rest of the network with respect to the pre-activation of layer ``l``,
  ``J(pre_l -> f)(x) = W_L D_{L-1} ... W_{l+1} D_l`` (the identity for ``l = L``);
- the NTK trace ``Tr Theta(x, x) = sum_l (||a_{l-1}(x)||^2 + 1) ||J(pre_l -> f)(x)||_F^2``
  (the ``+1`` is the bias; Jacot's formula omits it, which keeps a valid lower bound);
- for Proposition 9, the squared parameter gradient of ``v^T Jf(x) u``:
  ``sum_l ||D_{l-1} W_{l-1} ... D_1 W_1 u||^2 ||D_l W_{l+1}^T ... W_L^T v||^2``.

Every function is vectorised over samples (rows of ``X``), float64 in, float64 out. They are
cross-checked against ``torch.func`` in the tests.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..models import mlp_trace

Tensors = Sequence[torch.Tensor]


def input_jacobians(weights: Tensors, biases: Tensors, X: torch.Tensor, negative_slope: float = 0.0) -> torch.Tensor:
    """``Jf(x)`` at every row of ``X``: shape ``(n, d_L, d_0)``, by the closed-form product."""
    trace = mlp_trace(weights, biases, X, negative_slope)
    J = weights[0].expand(X.shape[0], *weights[0].shape)
    for l in range(1, len(weights)):
        J = weights[l] @ (trace.patterns[l - 1].unsqueeze(-1) * J)
    return J


def partial_jacobians(weights: Tensors, biases: Tensors, X: torch.Tensor, negative_slope: float = 0.0
                      ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """``(forward, backward)``: ``forward[l-1] = J(pre_l)(x)`` of shape ``(n, d_l, d_0)`` (the
    Jacobian of layer ``l``'s pre-activation with respect to the input) and ``backward[l-1] =
    J(pre_l -> f)(x)`` of shape ``(n, d_L, d_l)``, for ``l = 1..L``."""
    trace = mlp_trace(weights, biases, X, negative_slope)
    n, L = X.shape[0], len(weights)
    fwd = [weights[0].expand(n, *weights[0].shape)]
    for l in range(1, L):
        fwd.append(weights[l] @ (trace.patterns[l - 1].unsqueeze(-1) * fwd[-1]))
    d_out = weights[-1].shape[0]
    bwd = [torch.eye(d_out, dtype=X.dtype, device=X.device).expand(n, d_out, d_out)]
    for l in range(L - 1, 0, -1):   # J(pre_l -> f) = J(pre_{l+1} -> f) W_{l+1} D_l
        bwd.append((bwd[-1] @ weights[l]) * trace.patterns[l - 1].unsqueeze(-2))
    return fwd, bwd[::-1]


def ntk_trace_closed_form(weights: Tensors, biases: Tensors, X: torch.Tensor, negative_slope: float = 0.0,
                          with_bias: bool = True) -> torch.Tensor:
    """``Tr Theta(x, x)`` at every row of ``X`` (shape ``(n,)``) from the layer formula; with
    ``with_bias=False`` the bias terms are left out (Jacot's formula, a lower bound)."""
    trace = mlp_trace(weights, biases, X, negative_slope)
    _, bwd = partial_jacobians(weights, biases, X, negative_slope)
    extra = 1.0 if with_bias else 0.0
    return sum((trace.post[l].pow(2).sum(-1) + extra) * bwd[l].pow(2).sum((-2, -1)) for l in range(len(weights)))


def jacobian_bilinear_gradient_sq(weights: Tensors, biases: Tensors, X: torch.Tensor, u: torch.Tensor,
                                  v: torch.Tensor, negative_slope: float = 0.0) -> torch.Tensor:
    """``||d_theta (v^T Jf(x) u)||^2`` at every row of ``X`` for per-sample unit vectors ``u``
    ``(n, d_0)`` and ``v`` ``(n, d_L)`` (closed form; biases do not enter ``Jf``)."""
    trace = mlp_trace(weights, biases, X, negative_slope)
    L = len(weights)
    right = [u]                       # right[l-1] = D_{l-1} W_{l-1} ... D_1 W_1 u, input of W_l
    for l in range(1, L):
        right.append(trace.patterns[l - 1] * (right[-1] @ weights[l - 1].T))
    left = [v]                        # left[l-1] = D_l W_{l+1}^T ... W_L^T v, output side of W_l
    for l in range(L - 1, 0, -1):
        left.append(trace.patterns[l - 1] * (left[-1] @ weights[l]))
    left = left[::-1]
    return sum(left[l].pow(2).sum(-1) * right[l].pow(2).sum(-1) for l in range(L))
