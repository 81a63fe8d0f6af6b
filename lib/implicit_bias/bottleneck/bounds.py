"""The finite-depth inequalities behind Jacot's theorems, as functions returning both sides.

Every inequality here holds for **any** parameters of a leaky-ReLU MLP (slope ``|a| <= 1``; ReLU
where stated), at every point where the network is differentiable: they are what the proofs of
Theorems 3, 6, 7, Corollary 8 and Propositions 9, 13 establish at finite depth before taking
limits. Checking them on trained networks validates the code and the derivations; they cannot
fail on a correct implementation, so the chapters use them as *controls*. The empirical content
of the theorems is elsewhere: whether trained networks have a small ``||theta||^2 - kL``.

Notation: ``s_i(J)`` are the singular values of the input Jacobian ``Jf(x)``;
``||A||_p^p = sum_i s_i(A)^p``; ``d_k`` is the distance to rank-``k`` partial isometries
(:func:`implicit_bias.spectra.partial_isometry_distance`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .. import spectra
from ..models import mlp_trace, param_sqnorm
from .jacobians import input_jacobians, jacobian_bilinear_gradient_sq, ntk_trace_closed_form, partial_jacobians

Tensors = Sequence[torch.Tensor]


@dataclass
class Theorem3Chain:
    """``sqnorm >= cost >= lower`` at every sample: ``sqnorm = ||theta||^2``, ``cost = L
    ||Jf(x)||_{2/L}^{2/L}`` and ``lower = kL + 2 sum_{i<=k} log s_i(Jf(x))``."""

    sqnorm: torch.Tensor
    cost: torch.Tensor
    lower: torch.Tensor

    @property
    def holds(self) -> bool:
        tol = 1e-9 * self.sqnorm.abs().max()
        return bool((self.sqnorm + tol >= self.cost).all() and (self.cost + tol >= self.lower).all())


def theorem3_chain(weights: Tensors, biases: Tensors, X: torch.Tensor, k: int,
                   negative_slope: float = 0.0) -> Theorem3Chain:
    """Both inequalities of the finite-depth form of Theorem 3 at every row of ``X``:
    ``||theta||^2 >= L sum_i s_i(Jf(x))^{2/L} >= kL + 2 sum_{i<=k} log s_i(Jf(x))``.

    The first is Hölder's inequality for Schatten quasi-norms followed by AM-GM over layers
    (``||W_l D_{l-1}||_F <= ||W_l||_F``), the second ``e^t >= 1 + t``."""
    L = len(weights)
    J = input_jacobians(weights, biases, X, negative_slope)
    sq = param_sqnorm([*weights, *biases])
    cost = L * spectra.schatten_power(J, 2.0 / L)
    lower = k * L + 2 * spectra.log_pseudo_determinant(J, k=k)
    return Theorem3Chain(sq.expand_as(cost), cost, lower)


def regularity_budget(weights: Tensors, biases: Tensors, X: torch.Tensor, k: int,
                      negative_slope: float = 0.0) -> torch.Tensor:
    """``B_k(x) = ||theta||^2 - kL - 2 sum_{i<=k} log s_i(Jf(x))`` at every row of ``X``: the
    part of ``c_1 = ||theta||^2 - kL`` not explained by the Jacobian (Theorem 6's right side)."""
    L = len(weights)
    J = input_jacobians(weights, biases, X, negative_slope)
    return param_sqnorm([*weights, *biases]) - k * L - 2 * spectra.log_pseudo_determinant(J, k=k)


@dataclass
class Theorem6Check:
    """``d``: per-layer ``d_k(W_l)``; ``budget``: ``min_x B_k(x)``; ``counts[p]``: the number of
    layers with ``d_k(W_l) > budget / (pL)``, which Markov's inequality bounds by ``pL``."""

    d: torch.Tensor
    budget: float
    counts: dict[float, int]

    @property
    def sum_holds(self) -> bool:
        return float(self.d.sum()) <= self.budget * (1 + 1e-9) + 1e-12

    def counting_holds(self) -> bool:
        L = len(self.d)
        return all(c <= p * L for p, c in self.counts.items())


def theorem6_check(weights: Tensors, biases: Tensors, X: torch.Tensor, k: int,
                   ps: Sequence[float] = (0.1, 0.25, 0.5), negative_slope: float = 0.0) -> Theorem6Check:
    """Theorem 6 in its truncated form: ``sum_l d_k(W_l) <= min_x B_k(x)`` for any ``k`` up to
    the rank of the Jacobians. Proof: ``d_k(W) = ||W||_F^2 - k - 2 sum_{i<=k} (s_i(W) - 1)``, so
    the claim is ``sum_l sum_{i<=k} (s_i(W_l) - 1) >= sum_{i<=k} log s_i(Jf(x))`` (biases only
    help), which follows from Horn's inequality ``prod_{i<=k} s_i(AB) <= prod_{i<=k} s_i(A)
    s_i(B)``, ``s_i(D_l) <= 1`` and ``log s <= s - 1``."""
    d = torch.stack([spectra.partial_isometry_distance(W, k) for W in weights])
    budget = float(regularity_budget(weights, biases, X, k, negative_slope).min())
    L = len(weights)
    counts = {p: int((d > budget / (p * L)).sum()) for p in ps}
    return Theorem6Check(d, budget, counts)


@dataclass
class Theorem7Check:
    """At every sample: ``weighted`` = ``sum_l ||a_{l-1}(x)||^2 k |J_k|^{2/k} / P_l^l`` (with
    ``P_l = sum_{m<=l} ||W_m||_F^2 / (k l)``), ``ntk`` = ``Tr Theta(x, x)``; the balancedness-free
    inequality is ``weighted <= ntk``. ``activations`` = ``sum_l ||a_{l-1}(x)||^2`` and
    ``paper_bound`` = ``c max(1, e^{c_1/k}) L / (k |J_k|^{2/k})`` with the measured ``c = ntk / L``
    and ``c_1 = ||theta||^2 - kL``: Theorem 7's conclusion, guaranteed when the prefix averages
    ``P_l`` stay below ``||theta||^2 / (kL)`` (which balancedness gives). ``prefix_ok`` says
    whether they do."""

    weighted: torch.Tensor
    ntk: torch.Tensor
    activations: torch.Tensor
    paper_bound: torch.Tensor
    prefix_ok: bool


def theorem7_check(weights: Tensors, biases: Tensors, X: torch.Tensor, k: int,
                   negative_slope: float = 0.0) -> Theorem7Check:
    """The two forms of Theorem 7 at every row of ``X`` (see :class:`Theorem7Check`)."""
    L = len(weights)
    trace = mlp_trace(weights, biases, X, negative_slope)
    J = input_jacobians(weights, biases, X, negative_slope)
    pdet_2k = torch.exp(2.0 / k * spectra.log_pseudo_determinant(J, k=k))    # |J_k|_+^{2/k}
    norms = torch.stack([W.pow(2).sum() for W in weights])
    prefix = torch.cumsum(norms, 0) / (k * torch.arange(1, L + 1, dtype=norms.dtype))
    act = torch.stack([trace.post[l].pow(2).sum(-1) for l in range(L)])      # (L, n)
    exponents = torch.arange(1, L + 1, dtype=norms.dtype)
    weighted = (act * (k * pdet_2k) / prefix.pow(exponents).unsqueeze(-1)).sum(0)
    ntk = ntk_trace_closed_form(weights, biases, X, negative_slope)
    sq = param_sqnorm([*weights, *biases])
    c1 = sq - k * L
    c = ntk / L
    paper = c * torch.clamp(torch.exp(c1 / k), min=1.0) * L / (k * pdet_2k)
    prefix_ok = bool((prefix <= sq / (k * L) * (1 + 1e-12)).all())
    return Theorem7Check(weighted, ntk, act.sum(0), paper, prefix_ok)


def proposition9_check(weights: Tensors, biases: Tensors, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(g2, s_top)`` at every row of ``X`` for a ReLU MLP: ``g2 = ||d_theta (v^T Jf(x) u)||^2``
    with ``u, v`` the top right/left singular vectors of ``Jf(x)``, and ``s_top = ||Jf(x)||_op``.
    The proof of Proposition 9 gives ``g2 >= L s_top^{2 - 2/L}`` (it uses ``D_l^2 = D_l``: ReLU
    only), a lower bound on ``||d^2_{xy} Theta(x, x)||_op``; the statement claims ``2L``."""
    J = input_jacobians(weights, biases, X)
    U, S, Vh = torch.linalg.svd(J)
    g2 = jacobian_bilinear_gradient_sq(weights, biases, X, Vh[:, 0, :], U[:, :, 0])
    return g2, S[:, 0]


@dataclass
class Proposition9Readings:
    """Per sample, the two readings of Proposition 9's left side and its right side's ingredients:

    - ``mixed``: ``||d^2_{xy} Theta(x, x)||_op``, the mixed second derivative (one argument of the
      NTK moves along ``x``, the other along ``y``, then ``y = x``) viewed as a ``d_in d_out x d_in
      d_out`` matrix: the statement's own quantity;
    - ``hessian``: ``||d^2_x [Theta(x, x)]||_op``, the Hessian of the diagonal ``x -> Theta(x, x)``
      (both arguments move together), which is exactly ``2 mixed`` for a piecewise-linear network;
    - ``rank_one``: ``||d_theta (v^T Jf(x) u)||^2`` for the top singular pair ``(u, v)`` of
      ``Jf(x)``, the quantity the proof bounds (a lower bound on ``mixed``);
    - ``s_top``: ``||Jf(x)||_op``."""

    mixed: torch.Tensor
    hessian: torch.Tensor
    rank_one: torch.Tensor
    s_top: torch.Tensor


def proposition9_readings(weights: Tensors, biases: Tensors, X: torch.Tensor, negative_slope: float = 0.0,
                          iters: int = 100) -> Proposition9Readings:
    """Both readings of Proposition 9's left side at every row of ``X`` (see
    :class:`Proposition9Readings`).

    Inside a linear region ``d Jf(x) / d W_l = B_l (.) F_l`` with ``B_l = J(pre_l -> f)(x)`` and
    ``F_l = J(a_{l-1})(x)`` (biases do not enter ``Jf``), so the mixed derivative is the Gram
    operator ``G(V) = sum_l B_l B_l^T V F_l^T F_l`` on ``d_out x d_in`` matrices ``V``; its top
    eigenvalue is found by power iteration from ``v u^T`` (``iters`` steps; ``G`` is positive
    semi-definite). The diagonal's Hessian adds the term with the two input indices swapped, which
    equals ``G`` because ``F_l^T F_l`` is symmetric: ``hessian = 2 mixed``."""
    trace = mlp_trace(weights, biases, X, negative_slope)
    fwd, bwd = partial_jacobians(weights, biases, X, negative_slope)
    n, d_in = X.shape
    eye = torch.eye(d_in, dtype=X.dtype).expand(n, d_in, d_in)
    Fs = [eye] + [trace.patterns[l - 1].unsqueeze(-1) * fwd[l - 1] for l in range(1, len(weights))]
    Ps = [B @ B.transpose(-1, -2) for B in bwd]                       # (n, d_out, d_out)
    Qs = [F.transpose(-1, -2) @ F for F in Fs]                        # (n, d_in, d_in)

    def gram(V: torch.Tensor) -> torch.Tensor:
        return sum(P @ V @ Q for P, Q in zip(Ps, Qs))

    J = input_jacobians(weights, biases, X, negative_slope)
    U, S, Vh = torch.linalg.svd(J)
    V = U[:, :, :1] @ Vh[:, :1, :]                                    # v u^T, unit Frobenius norm
    rank_one = (V * gram(V)).sum((-2, -1))
    for _ in range(iters):
        GV = gram(V)
        V = GV / GV.flatten(1).norm(dim=1).clamp_min(1e-300).view(n, 1, 1)
    mixed = torch.maximum((V * gram(V)).sum((-2, -1)), rank_one)
    return Proposition9Readings(mixed, 2 * mixed, rank_one, S[:, 0])


@dataclass
class Proposition13Terms:
    """For a pair ``(x, y)``: ``sqnorm = ||theta||^2``, ``cost_x = L ||Jf(x)||_{2/L}^{2/L}`` (and
    ``cost_y``), ``nuclear = ||Jf(x) - Jf(y)||_*``, ``C`` the largest operator norm of the partial
    products in the telescoping sum. The finite-depth inequality we derive is ``sqnorm >=
    (cost_x + cost_y) / 2 + nuclear / (2 C^2)``; the paper's proof states ``nuclear / C^2``."""

    sqnorm: float
    cost_x: float
    cost_y: float
    nuclear: float
    C: float

    @property
    def slack_half(self) -> float:
        return self.sqnorm - (self.cost_x + self.cost_y) / 2 - self.nuclear / (2 * self.C**2)

    @property
    def slack_paper(self) -> float:
        return self.sqnorm - (self.cost_x + self.cost_y) / 2 - self.nuclear / self.C**2


def proposition13_terms(weights: Tensors, biases: Tensors, x: torch.Tensor, y: torch.Tensor) -> Proposition13Terms:
    """The terms of Proposition 13's finite-depth inequality for a ReLU MLP and one pair of
    points. ``C = max_l max(||W_L D_{L-1}(y) ... D_{l+1}(y)||_op, ||D_{l-1}(x) ... D_1(x) W_1||_op)``
    over ``l = 1..L-1`` (empty products are identities), with the telescoping identity
    ``Jf(x) - Jf(y) = sum_l [W_L D_{L-1}(y) ... W_{l+1}] (D_l(x) - D_l(y)) [W_l ... D_1(x) W_1]``."""
    L = len(weights)
    X = torch.stack([x, y])
    tr = mlp_trace(weights, biases, X)
    Dx = [p[0] for p in tr.patterns]            # Dx[l-1] = diag of D_l(x), l = 1..L-1
    Dy = [p[1] for p in tr.patterns]
    J = input_jacobians(weights, biases, X)
    norms = [1.0]                               # B_1 = I and A_{L-1} = I
    B = torch.eye(x.shape[-1], dtype=x.dtype)
    for l in range(1, L - 1):                   # B_{l+1} = D_l(x) W_l B_l
        B = Dx[l - 1].unsqueeze(-1) * (weights[l - 1] @ B)
        norms.append(float(torch.linalg.matrix_norm(B, 2)))
    A = torch.eye(weights[-1].shape[0], dtype=x.dtype)
    for l in range(L - 1, 1, -1):               # A_{l-1} = A_l W_{l+1} D_l(y)
        A = (A @ weights[l]) * Dy[l - 1].unsqueeze(0)
        norms.append(float(torch.linalg.matrix_norm(A, 2)))
    C = max(norms)
    sq = float(param_sqnorm([*weights, *biases]))
    cost = L * spectra.schatten_power(J, 2.0 / L)
    nuclear = float(torch.linalg.matrix_norm(J[0] - J[1], "nuc"))
    return Proposition13Terms(sq, float(cost[0]), float(cost[1]), nuclear, C)
