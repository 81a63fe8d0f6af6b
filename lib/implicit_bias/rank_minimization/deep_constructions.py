"""The deep constructions behind Theorems 4 and 5 of Timor, Vardi & Shamir (2023), the bounds
they give, and the AM-GM rank certificate their proofs rest on.

Networks here are bias-free ReLU MLPs given as a list of weight matrices ``[W_1, ..., W_k]``
(``W_l`` of shape ``(out, in)``), with ReLU after every layer but the last and a scalar output:
``N(x) = W_k relu(W_{k-1} ... relu(W_1 x))``. Inputs are rows of ``X`` (``(n, d)``). Their
forward pass, norms, layer ratios and balancing are the toolkit's :mod:`implicit_bias.homogeneous`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch


def _check(weights: Sequence[torch.Tensor], k_prime: int) -> int:
    k = len(weights)
    if k < 2:
        raise ValueError(f"the reference network needs depth k >= 2, got {k}")
    if k_prime <= k:
        raise ValueError(f"the new depth k' must exceed the reference depth k = {k}, got {k_prime}")
    if weights[-1].shape[0] != 1:
        raise ValueError("the reference network must have a scalar output (last layer of shape (1, m))")
    return k


def frobenius_bound(weights: Sequence[torch.Tensor]) -> float:
    """``B = max_l ||W_l||_F``."""
    return max(float(W.norm()) for W in weights)


def theorem4_network(weights: Sequence[torch.Tensor], k_prime: int, B: float | None = None) -> list[torch.Tensor]:
    """Theorem 4's depth-``k'`` network (App. D): the ``k`` layers of ``N`` scaled by
    ``alpha = B^{-(k'-k)/k'}``, then ``k' - k`` width-1 layers of weight ``beta = B^{k/k'}``.

    It computes the same function where ``N >= 0`` (the width-1 tail passes only nonnegative
    values) and ``||theta'||^2 <= k' B^{2k/k'}``, with equality when every ``||W_l||_F = B``.
    """
    k = _check(weights, k_prime)
    B = frobenius_bound(weights) if B is None else B
    alpha = B ** (-(k_prime - k) / k_prime)
    beta = B ** (k / k_prime)
    out = [alpha * W for W in weights]
    one = torch.ones(1, 1, dtype=weights[0].dtype, device=weights[0].device)
    out += [beta * one for _ in range(k_prime - k)]
    return out


def theorem5_network(weights: Sequence[torch.Tensor], k_prime: int, B: float | None = None) -> list[torch.Tensor]:
    """Theorem 5's depth-``k'`` network (App. E): the first ``k - 1`` layers scaled by
    ``alpha = (sqrt2/B)^{(k'-k)/k'}``, the output row ``u`` replaced by ``alpha [u; -u]`` (two
    channels carry the positive and negative parts), then ``k' - k - 1`` layers ``beta I_2`` and
    a last layer ``beta (1, -1)``, ``beta = (sqrt2/B)^{-k/k'}``.

    It computes exactly the same function, and
    ``||theta'||^2 <= 2 (k' + 1) (B^2 / 2)^{k/k'}`` with equality when every ``||W_l||_F = B``.
    """
    k = _check(weights, k_prime)
    B = frobenius_bound(weights) if B is None else B
    alpha = (math.sqrt(2) / B) ** ((k_prime - k) / k_prime)
    beta = (math.sqrt(2) / B) ** (-k / k_prime)
    u = weights[-1]
    out = [alpha * W for W in weights[:-1]]
    out.append(alpha * torch.cat([u, -u], dim=0))
    eye = torch.eye(2, dtype=u.dtype, device=u.device)
    out += [beta * eye for _ in range(k_prime - k - 1)]
    out.append(beta * torch.tensor([[1.0, -1.0]], dtype=u.dtype, device=u.device))
    return out


def theorem4_norm(k: int, k_prime: int, B: float) -> float:
    """``k' B^{2k/k'}``: the squared norm of Theorem 4's construction (when balanced at ``B``)."""
    return k_prime * B ** (2 * k / k_prime)


def theorem5_norm(k: int, k_prime: int, B: float) -> float:
    """``2 (k' + 1) (B^2/2)^{k/k'}``: the squared norm of Theorem 5's construction."""
    return 2 * (k_prime + 1) * (B**2 / 2) ** (k / k_prime)


def theorem4_bound(k: int, k_prime: int, B: float) -> float:
    """Eq. (3): ``mean_l ||W_l||_2 / ||W_l||_F >= (1/B)^{k/k'}`` (tends to 1)."""
    return (1 / B) ** (k / k_prime)


def theorem5_bound(k: int, k_prime: int, B: float) -> float:
    """Eq. (7): ``mean_l ||W_l||_2/||W_l||_F >= (1/sqrt2) (sqrt2/B)^{k/k'} sqrt(k'/(k'+1))``
    (tends to ``1/sqrt2``, i.e. stable rank about 2, not 1)."""
    return (math.sqrt(2) / B) ** (k / k_prime) * math.sqrt(k_prime / (k_prime + 1)) / math.sqrt(2)


def certificate(weights: Sequence[torch.Tensor], q: float) -> float:
    """The AM-GM chain of Apps. D-E for a network with ``|N(x)| >= q`` at some ``||x|| <= 1``:
    ``mean_l r_l >= (prod_l r_l)^{1/k'} >= (q / prod_l ||W_l||_F)^{1/k'}``; returns the right end.
    """
    k = len(weights)
    log_prod_F = sum(math.log(float(W.norm())) for W in weights)
    return math.exp((math.log(q) - log_prod_F) / k)


def bound_from_norm(q: float, sq_norm: float, k_prime: int) -> float:
    """``(q / (sq_norm / k')^{k'/2})^{1/k'}``: what the certificate gives for any network whose
    squared norm is at most ``sq_norm`` (AM-GM on the layer norms). With ``q = 1`` and the
    construction norms this is exactly the bound of Theorem 4 or 5."""
    return q ** (1 / k_prime) / math.sqrt(sq_norm / k_prime)
