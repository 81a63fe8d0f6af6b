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


# --- Measures of the bottleneck part (Jacot 2023), generic enough for any part ----------------
# Definitions on the notation page ("Rank measures of deep networks with weight decay"):
#
# - thresholded rank     ``#{i : s_i > tol}`` (abs), ``#{i : s_i > tol * s_1}`` (rel) or
#                        ``#{i : s_i / sqrt(n) > tol}`` (scaled, ``n`` samples as rows)
# - Schatten power       ``||W||_p^p = sum_i s_i^p`` (a quasi-norm to the power p when p < 1)
# - log-pseudo-determinant ``log |W|_+ = sum_{i <= rank} log s_i``, or its top-k truncation
# - pseudo-log           ``log_+(W^T W) = sum_{s_i > 0} log(s_i^2) v_i v_i^T``
# - partial-isometry distance ``d_k(W) = sum_{i<=k} (s_i - 1)^2 + sum_{i>k} s_i^2``, the squared
#                        Frobenius distance to the nearest rank-k partial isometry


def thresholded_rank(M: torch.Tensor, tol: float = 0.1, mode: str = "abs",
                     n_samples: int | None = None) -> torch.Tensor:
    """Number of singular values above a threshold, in one of three conventions.

    ``mode='abs'``: ``s_i > tol`` (Jacot's rank of a weight matrix, ``tol = 0.1``);
    ``'rel'``: ``s_i > tol * s_1`` (the same as :func:`numerical_rank`);
    ``'scaled'``: ``s_i / sqrt(n) > tol`` for a representation matrix with ``n`` samples
    (``n_samples``, default ``M.shape[-2]``, the rows), so that the threshold does not grow
    with the number of samples.
    """
    s = singular_values(M)
    if mode == "abs":
        return (s > tol).sum(-1)
    if mode == "rel":
        return (s > tol * s[..., :1]).sum(-1)
    if mode == "scaled":
        n = M.shape[-2] if n_samples is None else n_samples
        return (s / n**0.5 > tol).sum(-1)
    raise ValueError(f"unknown mode {mode!r}; use 'abs', 'rel' or 'scaled'")


def schatten_power(M: torch.Tensor, p: float, tol: float = 1e-12) -> torch.Tensor:
    """``||M||_p^p = sum_i s_i^p`` over the non-zero singular values (``p > 0``; for ``p < 1``
    a quasi-norm to the power ``p``). With ``p = 2/L`` and times ``L`` this is the
    representation cost of a matrix by a depth-``L`` linear network. Singular values at most
    ``tol * s_1`` count as zero: rounding leaves ``~1e-16 s_1`` where the rank drops, and
    ``s^p`` of that is not small when ``p`` is."""
    if p <= 0:
        raise ValueError(f"p must be positive, got {p}")
    s = singular_values(M)
    keep = s > tol * s[..., :1]
    return torch.where(keep, torch.where(keep, s, torch.ones_like(s)) ** p, torch.zeros_like(s)).sum(-1)


def log_pseudo_determinant(M: torch.Tensor, k: int | None = None, tol: float = 1e-6) -> torch.Tensor:
    """``log |M|_+``: the sum of the logs of the non-zero singular values (those above
    ``tol * s_1``), or with ``k`` the top-``k`` truncation ``sum_{i <= k} log s_i`` (which is
    ``-inf`` when ``s_k = 0``). Working with logs avoids overflow for deep products."""
    s = singular_values(M)
    if k is not None:
        if not 1 <= k <= s.shape[-1]:
            raise ValueError(f"k must be in [1, {s.shape[-1]}], got {k}")
        return torch.log(s[..., :k]).sum(-1)
    keep = s > tol * s[..., :1]
    return torch.where(keep, torch.log(torch.where(keep, s, torch.ones_like(s))), torch.zeros_like(s)).sum(-1)


def pseudo_log_gram(A: torch.Tensor, tol: float = 1e-10) -> torch.Tensor:
    """The pseudo-log ``log_+(A^T A)``: the non-zero eigenvalues ``s_i^2`` of ``A^T A`` replaced
    by their logs, 0 on the kernel. Its squared Frobenius norm is ``4 sum_i (log s_i)^2``."""
    _, s, Vh = torch.linalg.svd(A, full_matrices=False)
    keep = s > tol * s[..., :1]
    logs = torch.where(keep, 2 * torch.log(torch.where(keep, s, torch.ones_like(s))), torch.zeros_like(s))
    return Vh.transpose(-1, -2) @ (logs.unsqueeze(-1) * Vh)


def partial_isometry_distance(W: torch.Tensor, k: int) -> torch.Tensor:
    """``d_k(W) = sum_{i<=k} (s_i - 1)^2 + sum_{i>k} s_i^2``: the squared Frobenius distance from
    ``W`` to the nearest rank-``k`` partial isometry ``U_k V_k^T`` (:func:`nearest_partial_isometry`).
    0 exactly when ``W`` has ``k`` singular values 1 and the others 0."""
    s = singular_values(W)
    if not 0 <= k <= s.shape[-1]:
        raise ValueError(f"k must be in [0, {s.shape[-1]}], got {k}")
    return ((s[..., :k] - 1) ** 2).sum(-1) + (s[..., k:] ** 2).sum(-1)


def nearest_partial_isometry(W: torch.Tensor, k: int) -> torch.Tensor:
    """``U_k V_k^T`` from the top ``k`` singular vectors of ``W`` (a minimiser of
    ``||W - Q||_F`` over rank-``k`` partial isometries ``Q``, by von Neumann's trace inequality)."""
    U, _, Vh = torch.linalg.svd(W, full_matrices=False)
    return U[..., :, :k] @ Vh[..., :k, :]


def _flat_model_function(model: nn.Module, X: torch.Tensor):
    params = {k: v.detach() for k, v in model.named_parameters()}

    def f(p: dict[str, torch.Tensor]) -> torch.Tensor:
        return functional_call(model, p, (X,)).reshape(-1)

    return params, f


def ntk_trace(model: nn.Module, X: torch.Tensor) -> torch.Tensor:
    """``Tr Theta(x, x) = sum_a ||d f_a(x) / d theta||^2`` at every row of ``X`` (shape ``(n,)``),
    from per-sample parameter gradients (``jacrev`` + ``vmap``), without forming the kernel."""
    params = {k: v.detach() for k, v in model.named_parameters()}

    def f(p: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        return functional_call(model, p, (x.unsqueeze(0),)).reshape(-1)

    jac = vmap(jacrev(f), (None, 0))(params, X)
    return sum(j.flatten(2).pow(2).sum((1, 2)) for j in jac.values())


def ntk_operator_norm(model: nn.Module, X: torch.Tensor, iters: int = 200, rtol: float = 1e-6,
                      generator: torch.Generator | None = None) -> float:
    """Largest eigenvalue of the NTK Gram matrix ``Theta(X, X)`` (size ``n d_out``), matrix-free.

    Power iteration on ``v -> J (J^T v)`` with ``J = d f(X) / d theta``: one vector-Jacobian
    product (``torch.func.vjp``) and one Jacobian-vector product (``torch.func.jvp``) per step,
    so the ``(n d_out)^2`` kernel is never formed. Stops when the Rayleigh quotient changes by
    less than ``rtol`` (relative) or after ``iters`` steps.
    """
    from torch.func import jvp, vjp

    params, f = _flat_model_function(model, X)
    out, pullback = vjp(f, params)
    v = torch.randn(out.shape, generator=generator, dtype=out.dtype).to(out.device)
    v = v / v.norm()
    value = 0.0
    for _ in range(iters):
        (tangent,) = pullback(v)
        _, Jw = jvp(f, (params,), (tangent,))
        new = float(v @ Jw)
        norm = Jw.norm()
        if float(norm) == 0.0:
            return 0.0
        v = Jw / norm
        if abs(new - value) <= rtol * abs(new):
            return new
        value = new
    return value


def hessian_top_eigenvalue(model: nn.Module, loss: Callable[[torch.Tensor], torch.Tensor], weight_decay: float = 0.0,
                           iters: int = 100, rtol: float = 1e-6, generator: torch.Generator | None = None) -> float:
    """Eigenvalue of largest magnitude of the Hessian of ``loss(model) + (weight_decay / 2)
    ||theta||^2`` with respect to all parameters, matrix-free: power iteration on Hessian-vector
    products (forward-over-reverse, ``torch.func.jvp`` of ``torch.func.grad``). ``loss`` maps the
    parameters' forward pass to a scalar: it receives a function ``f(X)`` evaluating the model
    with the current parameters, e.g. ``lambda f: 0.5 * (f(X) - Y).pow(2).sum(1).mean()``."""
    from torch.func import grad, jvp

    params = {k: v.detach() for k, v in model.named_parameters()}

    def objective(p: dict[str, torch.Tensor]) -> torch.Tensor:
        value = loss(lambda X: functional_call(model, p, (X,)))
        if weight_decay:
            value = value + 0.5 * weight_decay * sum(t.pow(2).sum() for t in p.values())
        return value

    g = grad(objective)
    v = {k: torch.randn(t.shape, generator=generator, dtype=t.dtype).to(t.device) for k, t in params.items()}
    norm = sum(t.pow(2).sum() for t in v.values()).sqrt()
    v = {k: t / norm for k, t in v.items()}
    value = 0.0
    for _ in range(iters):
        _, Hv = jvp(g, (params,), (v,))
        new = float(sum((Hv[k] * v[k]).sum() for k in v))
        norm = sum(t.pow(2).sum() for t in Hv.values()).sqrt()
        if float(norm) == 0.0:
            return 0.0
        v = {k: t / norm for k, t in Hv.items()}
        if abs(new - value) <= rtol * abs(new):
            return new
        value = new
    return value

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
