"""The saddle at the origin: the localized loss, its homogeneity, escape speeds, gradient flow on
it (integrated in float64) and the closed forms of Bantzis, Simon & Jacot's Section 2.

Conventions. Rows are samples, as everywhere in the book: ``X`` is ``(N, d_in)`` and the
network's outputs ``Y`` are ``(N, d_out)`` (the paper stores samples as columns; its ``Z_l`` is the
transpose of ours, which changes no norm or singular value). Weights are lists ``W_1..W_L`` of
shape ``(out, in)``, optionally stacked over leading axes (restarts): the networks of
:mod:`implicit_bias.homogeneous`, whose ``outputs``, norms and KKT residuals are used here. ``G = grad C(0)`` has the shape of ``Y``, and the
localized loss is ``L_0(theta) = sum_ij G_ij Y_ij = Tr[G^T Y_theta]``.

Speeds. Definition 2.1 measures speeds on the sphere of radius ``sqrt(L)``:
``grad L_0(rho) = -s rho`` with ``||rho||^2 = L``, so ``s = -L_0(rho)``. On the unit sphere the
same direction has ``s_unit = -L_0(rho / sqrt(L)) = L^(-L/2) s`` (homogeneity of degree ``L``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from ..homogeneous import flatten, kkt_multipliers, layer_norms, outputs, squared_norm, unflatten
from ..models import gaussian_weights

Weights = list[torch.Tensor]


# --------------------------------------------------------------------------------------------
# Parameters as lists of matrices
# --------------------------------------------------------------------------------------------


def to_sphere(weights: Sequence[torch.Tensor], radius_sq: float | None = None) -> Weights:
    """Rescale every network jointly onto ``||theta||^2 = radius_sq`` (default ``L``, the sphere
    of Definition 2.1)."""
    r2 = float(len(weights)) if radius_sq is None else float(radius_sq)
    scale = (r2 / squared_norm(weights)).sqrt()
    return [W * scale[..., None, None] for W in weights]


# --------------------------------------------------------------------------------------------
# The localized loss
# --------------------------------------------------------------------------------------------


def localized_loss(weights: Sequence[torch.Tensor], X: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """``L_0(theta) = Tr[G^T Y_theta]`` for each stacked network (Eq. (1) without ``C(0)``)."""
    return (G * outputs(weights, X)).flatten(-2).sum(-1)


def speed(weights: Sequence[torch.Tensor], X: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """``-L_0(theta)``; on the ``sqrt(L)``-sphere this is the speed ``s`` of Definition 2.1 when
    ``theta`` is an escape direction."""
    return -localized_loss(weights, X, G)


def localized_gradient(weights: Sequence[torch.Tensor], X: torch.Tensor, G: torch.Tensor
                       ) -> tuple[Weights, torch.Tensor]:
    """``(grad L_0(theta) as a list of matrices, L_0(theta))`` for each stacked network (the
    gradient uses ``ReLU'(0) = 0``)."""
    Ws = [W.detach().requires_grad_(True) for W in weights]
    value = localized_loss(Ws, X, G)
    grads = torch.autograd.grad(value.sum(), Ws)
    return [g.detach() for g in grads], value.detach()


def random_directions(dims: Sequence[int], n: int | None = None, *, X: torch.Tensor | None = None,
                      G: torch.Tensor | None = None, generator: torch.Generator | None = None) -> Weights:
    """Random points of the sphere ``||theta||^2 = L`` (Gaussian weights of layer sizes ``dims``,
    rescaled by :func:`to_sphere`): ``n`` stacked networks, or one network when ``n`` is None.
    With ``X`` and ``G``, the sign of each network's last layer is flipped where needed so that
    ``L_0(theta) <= 0`` (a direction of decrease, ``L_0`` being odd in the last layer)."""
    Ws = to_sphere(gaussian_weights(dims, 1.0, () if n is None else (n,), generator=generator))
    if X is not None and G is not None:
        sign = torch.sign(localized_loss(Ws, X, G))
        Ws[-1] = Ws[-1] * (-sign)[..., None, None]
    return Ws


def kkt_residual(weights: Sequence[torch.Tensor], X: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """How far ``rho`` (rescaled to the ``sqrt(L)``-sphere) is from an escape direction:
    ``||grad L_0(rho) + s rho|| / (s sqrt(L))`` with ``s = -L_0(rho)``; 0 exactly at an escape
    direction (Definition 2.1), about 1 or more for a generic direction, ``inf`` if ``s <= 0``.

    An escape direction is a KKT point of the max-margin problem with the single constraint
    ``q(theta) = -L_0(theta) >= 1`` (``q`` is ``L``-homogeneous): ``rho = lambda grad q(rho)``,
    where Euler's identity ``<rho, grad q(rho)> = L q(rho)`` fixes ``lambda = ||rho||^2 / (L s)
    = 1 / s`` on the ``sqrt(L)``-sphere. So this is the toolkit's
    :func:`~implicit_bias.homogeneous.kkt_multipliers` stationarity with that multiplier."""
    rho = to_sphere(weights)
    grads, value = localized_gradient(rho, X, G)
    s = -value
    lam = torch.where(s > 0, 1 / s, torch.zeros_like(s))
    kkt = kkt_multipliers(flatten(rho), -flatten(grads).unsqueeze(-2), multipliers=lam.unsqueeze(-1))
    out = kkt.stationarity.to(device=s.device, dtype=s.dtype)
    return torch.where(s > 0, out, torch.full_like(out, float("inf")))


def unit_sphere_speed(s: float | torch.Tensor, depth: int) -> float | torch.Tensor:
    """The speed on the unit sphere of a direction with speed ``s`` on the ``sqrt(L)``-sphere:
    ``L^(-L/2) s``."""
    return s * depth ** (-depth / 2)


def sqrt_sphere_speed(s_unit: float | torch.Tensor, depth: int) -> float | torch.Tensor:
    """Inverse of :func:`unit_sphere_speed`."""
    return s_unit * depth ** (depth / 2)


def cost_gradient_at_zero(cost: Callable[[torch.Tensor], torch.Tensor], shape: Sequence[int],
                          dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """``G = grad C(0)`` of a cost ``C(Y)`` of the outputs, by autograd at ``Y = 0``."""
    Y = torch.zeros(*shape, dtype=dtype, requires_grad=True)
    (G,) = torch.autograd.grad(cost(Y), Y)
    return G.detach()


def cross_entropy_gradient(y: torch.Tensor, n_classes: int, dtype: torch.dtype = torch.float64
                           ) -> torch.Tensor:
    """``G`` of the mean cross-entropy at zero outputs, in closed form:
    ``G = (1/N)(1/K - onehot(y))`` (rows are samples)."""
    onehot = torch.nn.functional.one_hot(y, n_classes).to(dtype)
    return (1.0 / n_classes - onehot) / len(y)


# --------------------------------------------------------------------------------------------
# A closed-form escape direction (for X >= 0 and G <= 0) and the closed forms of Prop. 2.2
# --------------------------------------------------------------------------------------------


def closed_form_escape(X: torch.Tensor, G: torch.Tensor, depth: int, width: int) -> tuple[Weights, float]:
    """An escape direction of known speed when ``X >= 0`` and ``G <= 0`` entrywise.

    With ``M = -G^T X >= 0`` (``(d_out, d_in)``) and its top singular triple ``(s_1, a, b)``,
    chosen non-negative (Lemma A.6), the network ``W_1 = e_1 b^T``, ``W_l = e_1 e_1^T``,
    ``W_L = a e_1^T`` carries ``b^T x >= 0`` along one active path, so ReLU acts as the identity
    and ``L_0 = -a^T M b = -s_1``; every layer has norm 1, so ``||rho||^2 = L``, and
    ``grad L_0(rho) = -s_1 rho`` exactly. Returns ``(weights, s_1)``.
    """
    if bool((X < 0).any()) or bool((G > 0).any()):
        raise ValueError("closed_form_escape needs X >= 0 and G <= 0 entrywise")
    if depth < 2 or width < 1:
        raise ValueError(f"need depth >= 2 and width >= 1, got {depth}, {width}")
    M = -G.T @ X
    U, S, Vh = torch.linalg.svd(M)
    a, b = U[:, 0], Vh[0]
    if float(a.sum()) < 0:
        a, b = -a, -b
    d_out, d_in = M.shape
    e = torch.zeros(width, dtype=X.dtype)
    e[0] = 1.0
    Ws = [torch.outer(e, b)] + [torch.outer(e, e) for _ in range(depth - 2)] + [torch.outer(a, e)]
    return Ws, float(S[0])


def norm_along_escape(t: float | torch.Tensor, r0: float, s_unit: float, depth: int
                      ) -> torch.Tensor:
    """Proposition 2.2: the norm of gradient flow on ``L_0`` started at ``||theta(t_0)|| = r0``
    along an escape direction, at time ``t - t_0``:
    ``(r0^(2-L) + (2-L) L s (t - t_0))^(1/(2-L))`` (``L != 2``), ``r0 exp(2 s (t - t_0))``
    (``L = 2``), where ``s = s_unit`` must be the speed on the **unit** sphere; past the blow-up
    time (``L > 2``) the value is ``inf``."""
    t = torch.as_tensor(t, dtype=torch.float64)
    L = depth
    if L == 2:
        return r0 * torch.exp(2 * s_unit * t)
    base = r0 ** (2 - L) + (2 - L) * L * s_unit * t
    out = base.clamp_min(0) ** (1.0 / (2 - L))
    return torch.where(base > 0, out, torch.full_like(out, float("inf")))


def blow_up_time(r0: float, s_unit: float, depth: int) -> float:
    """The finite time at which the norm of Proposition 2.2 blows up (``L > 2``):
    ``r0^(2-L) / ((L-2) L s)``; ``inf`` for ``L = 2``."""
    if depth == 2:
        return float("inf")
    return r0 ** (2 - depth) / ((depth - 2) * depth * s_unit)


def escape_time(r0: float, r: float, s_unit: float, depth: int, printed: bool = False) -> float:
    """Time for the norm to grow from ``r0`` to ``r`` along an escape direction (Sec. 2.2):
    ``(r0^(2-L) - r^(2-L)) / ((L-2) L s)`` for ``L != 2`` and ``log(r/r0) / (2 s)`` for ``L = 2``.
    ``printed=True`` gives the formula as printed in the paper, with ``+ r^(2-L)``."""
    L = depth
    if L == 2:
        return math.log(r / r0) / (2 * s_unit)
    sign = 1.0 if printed else -1.0
    return (r0 ** (2 - L) + sign * r ** (2 - L)) / ((L - 2) * L * s_unit)


# --------------------------------------------------------------------------------------------
# Gradient flow on L_0, integrated in float64
# --------------------------------------------------------------------------------------------


@dataclass
class FlowPath:
    """A gradient-flow path on ``L_0``: ``times``, ``norms`` ``||theta(t)||``, the cosine between
    ``theta(t)`` and ``theta(0)``, the value of ``L_0`` on the unit sphere along the path, the
    s-time ``int_0^t ||theta||^(L-2)``, and the final parameters."""

    times: torch.Tensor
    norms: torch.Tensor
    cosines: torch.Tensor
    unit_loss: torch.Tensor
    s_time: torch.Tensor
    weights: Weights


def integrate_flow(weights: Sequence[torch.Tensor], X: torch.Tensor, G: torch.Tensor, *,
                   growth: float = 10.0, rel_step: float = 2e-3, max_steps: int = 100_000) -> FlowPath:
    """Integrate ``d theta/dt = -grad L_0(theta)`` with the classical Runge-Kutta scheme (RK4)
    in the dtype of ``weights`` (use float64), until ``||theta||`` has grown ``growth`` times.

    The step adapts to the state: ``dt = rel_step * ||theta|| / ||grad L_0(theta)||``, so each step
    moves ``theta`` by about ``rel_step`` of its norm (the flow speeds up as the norm grows and
    blows up in finite time for ``L > 2``). The s-time of Section 2.1,
    ``s(t) = int_0^t ||theta||^(L-2) dt``, is accumulated with the trapezoidal rule.
    """
    if any(W.dim() != 2 for W in weights):
        raise ValueError("integrate_flow integrates one network: pass unstacked (out, in) matrices")
    L = len(weights)
    theta = flatten([W.detach() for W in weights])
    theta0 = theta.clone()
    like = list(weights)
    r0 = float(theta.norm())

    def field(v: torch.Tensor) -> torch.Tensor:
        g, _ = localized_gradient(unflatten(v, like), X, G)
        return -flatten(g)

    def unit_l0(v: torch.Tensor) -> float:
        return float(localized_loss(unflatten(v / v.norm(), like), X, G))

    times, norms, cosines, unit, stime = [0.0], [r0], [1.0], [unit_l0(theta)], [0.0]
    t, s_acc = 0.0, 0.0
    for _ in range(max_steps):
        k1 = field(theta)
        dt = rel_step * float(theta.norm()) / max(float(k1.norm()), 1e-300)
        k2 = field(theta + 0.5 * dt * k1)
        k3 = field(theta + 0.5 * dt * k2)
        k4 = field(theta + dt * k3)
        new = theta + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        s_acc += 0.5 * dt * (float(theta.norm()) ** (L - 2) + float(new.norm()) ** (L - 2))
        theta, t = new, t + dt
        times.append(t)
        norms.append(float(theta.norm()))
        cosines.append(float(theta @ theta0 / (theta.norm() * r0)))
        unit.append(unit_l0(theta))
        stime.append(s_acc)
        if norms[-1] >= growth * r0:
            break
    f64 = lambda v: torch.tensor(v, dtype=torch.float64)
    return FlowPath(f64(times), f64(norms), f64(cosines), f64(unit), f64(stime), unflatten(theta, like))


def s_time_descent(weights: Sequence[torch.Tensor], X: torch.Tensor,
                   loss: Callable[[torch.Tensor], torch.Tensor], *, eta0: float, steps: int,
                   record_every: int = 1) -> tuple[torch.Tensor, torch.Tensor, Weights]:
    """Gradient descent with the time-changed step ``eta0 (||theta|| / sqrt(L))^(2-L)`` on
    ``loss(Y_theta)`` (one value per stacked network), for stacked networks.

    Returns ``(directions, losses, final weights)``: ``directions`` ``(T, R, P)`` are
    ``theta_k / ||theta_k||`` every ``record_every`` steps (and at the last), ``losses``
    ``(T, R)`` the loss there. On ``L_0`` this recursion is exactly equivariant under
    ``theta_0 -> alpha theta_0`` (the iterates scale by ``alpha``): the discrete form of the
    remark of Section 2.2 that the direction's dynamics in s-time do not depend on the scale.
    """
    Ws = [W.detach().clone() for W in weights]
    L = len(Ws)
    dirs, vals = [], []
    for k in range(steps + 1):
        Wg = [W.requires_grad_(True) for W in Ws]
        value = loss(outputs(Wg, X))
        if k % record_every == 0 or k == steps:
            theta = flatten([W.detach() for W in Ws])
            dirs.append(theta / theta.norm(dim=-1, keepdim=True))
            vals.append(value.detach())
        if k == steps:
            break
        grads = torch.autograd.grad(value.sum(), Wg)
        with torch.no_grad():
            rate = eta0 * (squared_norm(Ws) / L).sqrt() ** (2 - L)
            Ws = [(W - rate[..., None, None] * g).detach() for W, g in zip(Ws, grads)]
    return torch.stack(dirs), torch.stack(vals), Ws
