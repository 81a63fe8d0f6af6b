"""Singular values and the rank measures of the book, each defined once.

Every function accepts a matrix ``(m, n)`` or a batch ``(..., m, n)`` and returns one value per
matrix. The definitions (also on the book's notation page), with ``s_1 >= s_2 >= ...`` the
singular values of ``W``:

- stable rank            ``srank(W) = ||W||_F^2 / ||W||_2^2 = sum_i s_i^2 / s_1^2``
- spectral/Frobenius     ``rho(W) = ||W||_2 / ||W||_F = s_1 / sqrt(sum_i s_i^2)`` (``= srank^{-1/2}``)
- effective rank         ``erank(W) = exp(H(p))``, ``p_i = s_i / sum_j s_j``, ``H`` the Shannon
                         entropy (Roy & Vetterli 2007)
- numerical rank         ``rank_tol(W) = #{i : s_i > tol * s_1}`` (relative threshold)
- alignment              ``a(W_k, W_{k+1}) = |<u_1(W_k), v_1(W_{k+1})>|``: the top left singular
                         vector of a layer against the top right singular vector of the next
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn
from torch.func import functional_call, jacrev, vmap


def singular_values(W: torch.Tensor) -> torch.Tensor:
    """Singular values in decreasing order (batched over leading dimensions)."""
    return torch.linalg.svdvals(W)


def stable_rank(W: torch.Tensor) -> torch.Tensor:
    """``||W||_F^2 / ||W||_2^2``; in ``[1, rank W]``. Zero matrices give NaN."""
    s = singular_values(W)
    return (s**2).sum(-1) / s[..., 0] ** 2


def spectral_frobenius_ratio(W: torch.Tensor) -> torch.Tensor:
    """``||W||_2 / ||W||_F``; in ``[1/sqrt(rank W), 1]``, equal to 1 iff ``W`` has rank 1."""
    s = singular_values(W)
    return s[..., 0] / s.norm(dim=-1)


def effective_rank(W: torch.Tensor) -> torch.Tensor:
    """``exp`` of the entropy of the normalised singular values (Roy & Vetterli 2007)."""
    s = singular_values(W)
    p = s / s.sum(-1, keepdim=True)
    entropy = -torch.where(p > 0, p * torch.log(p), torch.zeros_like(p)).sum(-1)
    return torch.exp(entropy)


def numerical_rank(W: torch.Tensor, tol: float = 1e-3) -> torch.Tensor:
    """Number of singular values above ``tol * s_1`` (a relative threshold)."""
    s = singular_values(W)
    return (s > tol * s[..., :1]).sum(-1)


def top_singular_vectors(W: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(u_1, v_1)``: top left and right singular vectors (sign as returned by the SVD)."""
    U, _, Vh = torch.linalg.svd(W, full_matrices=False)
    return U[..., :, 0], Vh[..., 0, :]


def alignment(W_k: torch.Tensor, W_next: torch.Tensor) -> torch.Tensor:
    """``|<u_1(W_k), v_1(W_{k+1})>|`` in ``[0, 1]``: 1 when the output direction a layer
    amplifies most is the input direction the next layer amplifies most."""
    u, _ = top_singular_vectors(W_k)
    _, v = top_singular_vectors(W_next)
    return (u * v).sum(-1).abs()


def layer_table(weights: Sequence[torch.Tensor], tol: float = 1e-3) -> list[dict[str, float]]:
    """One row per matrix: shape, spectral norm, Frobenius norm and the rank measures."""
    rows = []
    for i, W in enumerate(weights):
        W = W.detach().double()
        rows.append(
            {
                "layer": i + 1,
                "shape": tuple(W.shape),
                "spectral_norm": float(singular_values(W)[0]),
                "frobenius_norm": float(W.norm()),
                "stable_rank": float(stable_rank(W)),
                "effective_rank": float(effective_rank(W)),
                "numerical_rank": int(numerical_rank(W, tol)),
                "rho": float(spectral_frobenius_ratio(W)),
            }
        )
    return rows


def representation_rank(H: torch.Tensor, tol: float = 1e-3, center: bool = False) -> torch.Tensor:
    """Numerical rank of a representation matrix ``H`` of shape ``(n_samples, features)``
    (optionally centred over samples first)."""
    H = H.flatten(1)
    if center:
        H = H - H.mean(0, keepdim=True)
    return numerical_rank(H, tol)


def input_jacobian(f: Callable[[torch.Tensor], torch.Tensor], X: torch.Tensor) -> torch.Tensor:
    """Jacobians ``d f(x) / d x`` of a per-sample function at every row of ``X``:
    shape ``(n, out_dim, in_dim)`` (``torch.func.jacrev`` vectorised with ``vmap``)."""
    return vmap(jacrev(f))(X)


def pseudo_determinant(J: torch.Tensor, tol: float = 1e-6) -> torch.Tensor:
    """Product of the singular values above ``tol * s_1`` (1 for an all-zero matrix)."""
    s = singular_values(J)
    keep = s > tol * s[..., :1]
    return torch.where(keep, s, torch.ones_like(s)).prod(-1)


def empirical_ntk(model: nn.Module, X: torch.Tensor) -> torch.Tensor:
    """Empirical neural tangent kernel ``Theta[i, j, a, b] = <d f_a(x_i)/dw, d f_b(x_j)/dw>``,
    shape ``(n, n, out, out)``, computed with per-sample Jacobians (``jacrev`` + ``vmap``)."""
    params = {k: v.detach() for k, v in model.named_parameters()}

    def f(p: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        return functional_call(model, p, (x.unsqueeze(0),)).squeeze(0)

    jac = vmap(jacrev(f), (None, 0))(params, X)
    flat = torch.cat([j.flatten(2) for j in jac.values()], dim=2)  # (n, out, P)
    return torch.einsum("iap,jbp->ijab", flat, flat)


# --------------------------------------------------------------------------------------------
# Tail energy and top singular values (added with the saddle-to-saddle part).
# --------------------------------------------------------------------------------------------


def tail_energy(W: torch.Tensor) -> torch.Tensor:
    """``tau(W) = sum_{i>=2} s_i^2 / sum_i s_i^2 = 1 - ||W||_2^2 / ||W||_F^2 = 1 - 1/srank(W)``:
    the share of the squared Frobenius norm outside the top singular direction, in
    ``[0, 1 - 1/rank W]``; 0 exactly when ``W`` has rank 1. Zero matrices give NaN."""
    s = singular_values(W)
    return 1.0 - s[..., 0] ** 2 / (s**2).sum(-1)


def top_singular_values(W: torch.Tensor, k: int = 10) -> torch.Tensor:
    """The ``k`` largest singular values (fewer if the matrix has fewer), batched."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return singular_values(W)[..., :k]
