"""The data of Jacot's two experiments (Appendix E and Section 5).

- :func:`bottleneck_rank_task`: ``x = g(z_1..z_8)`` in ``R^20``, ``y = h(z_1, z_2)`` in ``R^20`` for
  a Gaussian latent ``z`` and two random shallow ReLU networks ``g``, ``h``; the map ``x -> y`` has
  bottleneck rank 2 when ``g`` is injective (Figure 1).
- :func:`symmetry_task`: inputs ``v(0)`` in ``R^d``, targets the costs ``C(v(1..T))`` of gradient
  descent on ``C(v) = ||v v^T - (w w^T + E)||_F^2``, invariant under rotations about ``w`` when
  ``E = 0`` (Figure 2).

The paper leaves the latent law, the shapes and laws of ``g`` and ``h``, the sample sizes, and every
parameter of the Section 5 task unspecified; the choices here are ours and are stated on the pages.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

D = torch.float64


@dataclass
class Task:
    """Training and test data of a regression task, float64, targets scaled so that the mean of
    ``||y||^2`` over the training set is 1 (so a cost of 0.1 is a 10% relative error)."""

    X: torch.Tensor
    Y: torch.Tensor
    X_test: torch.Tensor
    Y_test: torch.Tensor
    Z: torch.Tensor
    Z_test: torch.Tensor


def _shallow(d_in: int, d_out: int, hidden: int, g: torch.Generator):
    W1 = torch.randn(hidden, d_in, generator=g, dtype=D) / math.sqrt(d_in)
    b1 = torch.randn(hidden, generator=g, dtype=D)
    W2 = torch.randn(d_out, hidden, generator=g, dtype=D) / math.sqrt(hidden)
    return lambda z: torch.relu(z @ W1.T + b1) @ W2.T


def bottleneck_rank_task(n_train: int, n_test: int = 256, latent: int = 8, k: int = 2, d_in: int = 20,
                         d_out: int = 20, hidden: int = 64, seed: int = 0) -> Task:
    """Jacot's synthetic task of bottleneck rank ``k`` (Appendix E): ``z ~ N(0, I_latent)``,
    ``x = g(z)``, ``y = h(z_1, ..., z_k)`` with ``g``, ``h`` one-hidden-layer ReLU networks of width
    ``hidden`` (weights ``N(0, 1/fan_in)``, hidden biases ``N(0, 1)``). Inputs are standardised per
    coordinate and targets centred and scaled with the training statistics."""
    if not 1 <= k <= latent <= d_in:
        raise ValueError(f"need 1 <= k <= latent <= d_in, got k={k}, latent={latent}, d_in={d_in}")
    gen = torch.Generator().manual_seed(seed)
    g = _shallow(latent, d_in, hidden, gen)
    h = _shallow(k, d_out, hidden, gen)
    Z = torch.randn(n_train + n_test, latent, generator=gen, dtype=D)
    X, Y = g(Z), h(Z[:, :k])
    mx, sx = X[:n_train].mean(0), X[:n_train].std(0)
    X = (X - mx) / sx
    my = Y[:n_train].mean(0)
    Y = Y - my
    Y = Y / Y[:n_train].pow(2).sum(1).mean().sqrt()
    return Task(X[:n_train], Y[:n_train], X[n_train:], Y[n_train:], Z[:n_train], Z[n_train:])


@dataclass
class SymmetryTask:
    """Section 5: ``w`` (unit axis), ``E`` (symmetric noise), the starting points ``V0`` ``(n, d)``,
    the trajectories ``V`` ``(n, T + 1, d)`` of gradient descent with step ``eta`` on ``C``, the
    targets ``Y = C(v(1..T))`` ``(n, T)`` and the summary statistics ``U = u(v(0))`` ``(n, 2)``."""

    w: torch.Tensor
    E: torch.Tensor
    V0: torch.Tensor
    V: torch.Tensor
    Y: torch.Tensor
    U: torch.Tensor
    eta: float


def symmetry_cost(V: torch.Tensor, w: torch.Tensor, E: torch.Tensor) -> torch.Tensor:
    """``C(v) = ||v v^T - (w w^T + E)||_F^2`` for every row of ``V`` (any leading dimensions)."""
    M = V.unsqueeze(-1) * V.unsqueeze(-2) - (torch.outer(w, w) + E)
    return M.pow(2).sum((-2, -1))


def summary_statistics(V: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """``u(v) = ((w^T v)^2, ||(I - w w^T) v||^2)``, shape ``(..., 2)``."""
    a = V @ w
    perp = V - a.unsqueeze(-1) * w
    return torch.stack([a**2, perp.pow(2).sum(-1)], -1)


def symmetry_task(n: int, d: int = 10, T: int = 10, eta: float = 0.02, noise: float = 1e-2,
                  radius: tuple[float, float] = (0.3, 1.5), seed: int = 0,
                  w: torch.Tensor | None = None, E: torch.Tensor | None = None) -> SymmetryTask:
    """``n`` gradient-descent runs of ``T`` steps on ``C(v)``: ``v(t+1) = v(t) - eta grad C``,
    ``grad C = 4 (v v^T - w w^T - E) v`` for symmetric ``E = noise (G + G^T)/2``, ``G_ij ~ N(0,
    1/d)``. Starting points ``v(0) = r xi`` with ``xi`` uniform on the sphere and ``r ~ U(radius)``.
    ``w`` and ``E`` may be passed to share them between a training and a test set."""
    gen = torch.Generator().manual_seed(seed)
    if w is None:
        w = torch.randn(d, generator=gen, dtype=D)
        w = w / w.norm()
    if E is None:
        G = torch.randn(d, d, generator=gen, dtype=D) / math.sqrt(d)
        E = noise * (G + G.T) / 2
    xi = torch.randn(n, d, generator=gen, dtype=D)
    xi = xi / xi.norm(dim=1, keepdim=True)
    r = radius[0] + (radius[1] - radius[0]) * torch.rand(n, 1, generator=gen, dtype=D)
    V0 = r * xi
    return symmetry_run(V0, T, eta, w, E)


def symmetry_run(V0: torch.Tensor, T: int, eta: float, w: torch.Tensor, E: torch.Tensor) -> SymmetryTask:
    """Gradient descent on ``C`` from every row of ``V0`` (see :func:`symmetry_task`)."""
    target = torch.outer(w, w) + E
    traj = [V0]
    v = V0
    for _ in range(T):
        grad = 4 * ((v @ v.T).diagonal().unsqueeze(-1) * v - v @ target)   # 4 (v v^T - M) v, M symmetric
        v = v - eta * grad
        traj.append(v)
    V = torch.stack(traj, 1)
    Y = symmetry_cost(V[:, 1:], w, E)
    return SymmetryTask(w, E, V0, V, Y, summary_statistics(V0, w), eta)


def rotation_about(w: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """A random rotation ``Q`` with ``Q w = w``: ``w w^T + B O B^T`` for an orthonormal basis ``B``
    of ``w``'s complement and ``O`` Haar-distributed in ``SO(d - 1)`` (QR with the sign fix)."""
    d = w.shape[0]
    full, _ = torch.linalg.qr(torch.cat([w.unsqueeze(1), torch.randn(d, d - 1, generator=generator, dtype=D)], 1))
    B = full[:, 1:]
    G = torch.randn(d - 1, d - 1, generator=generator, dtype=D)
    O, R = torch.linalg.qr(G)
    O = O * torch.sign(torch.diagonal(R)).unsqueeze(0)
    if torch.det(O) < 0:
        O[:, 0] = -O[:, 0]
    return torch.outer(w, w) + B @ O @ B.T
