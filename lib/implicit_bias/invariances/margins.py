"""Max-margin problems, their KKT points, and the long loss-scaled runs that approach them.

For a network that is positively ``L``-homogeneous in its parameters ``theta`` and trained with
the logistic loss on separable data, gradient flow converges in direction to a KKT point of

    min 1/2 ||theta||^2   subject to   q_i(theta) := y_i f(x_i; theta) >= 1  for all i

(Lyu & Li 2020; Ji & Telgarsky 2020). This module solves such problems numerically (scipy's
SLSQP with exact torch gradients), checks the KKT conditions of a candidate point given by a
margin function of a flat parameter vector (non-negative multipliers by NNLS on the active
constraints: :func:`implicit_bias.homogeneous.kkt_multipliers`), gives the closed-form KKT point
of a width-2 bias-free ReLU network on two one-sided clusters, measures sign / pattern changes
along a trajectory, and runs loss-scaled gradient descent until a target margin is
reached (the loss itself is then far below what float32 can hold: use float64).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy.optimize import minimize
from torch import nn

from .. import spectra
from .. import train as _train
from ..ensembles import Ensemble, train_ensemble
from ..homogeneous import kkt_multipliers

MarginFn = Callable[[torch.Tensor], torch.Tensor]


# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------
def two_clusters(n_per_class: int = 20, p: tuple[float, float] = (1.0, 0.3),
                 q: tuple[float, float] = (-0.5, 1.0), noise: float = 0.1, seed: int = 0,
                 dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """Two Gaussian clusters in the plane: ``n_per_class`` points ``p + noise * xi`` with label
    +1 and as many ``q + noise * xi`` with label -1, rescaled so that ``max_i ||x_i|| = 1``.

    With the defaults the classes are separable by a line through the origin and each class
    lies in an open half-plane of its own: the setting of the width-2 counterexample."""
    if n_per_class < 1:
        raise ValueError(f"n_per_class must be >= 1, got {n_per_class}")
    if noise < 0:
        raise ValueError(f"noise must be >= 0, got {noise}")
    g = torch.Generator().manual_seed(seed)
    P = torch.tensor(p, dtype=dtype) + noise * torch.randn(n_per_class, 2, generator=g, dtype=dtype)
    Q = torch.tensor(q, dtype=dtype) + noise * torch.randn(n_per_class, 2, generator=g, dtype=dtype)
    X = torch.cat([P, Q])
    X = X / X.norm(dim=1).max()
    y = torch.cat([torch.ones(n_per_class, dtype=dtype), -torch.ones(n_per_class, dtype=dtype)])
    return X, y


def random_two_clusters(seed: int, n_per_class: int = 20, angle: tuple[float, float] = (100.0, 170.0),
                        radius: tuple[float, float] = (0.6, 1.0), noise: float = 0.05,
                        dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor, float]:
    """A random instance of :func:`two_clusters`: the cluster centres ``p`` and ``q`` have
    random norms in ``radius``, a random common rotation, and an angle between them drawn
    uniformly in ``angle`` (degrees). Returns ``(X, y, angle_degrees)``; the same ``seed`` gives
    the same data."""
    import math

    g = torch.Generator().manual_seed(seed)
    u = torch.rand(4, generator=g, dtype=torch.float64).tolist()
    theta = angle[0] + (angle[1] - angle[0]) * u[0]
    phi = 2 * math.pi * u[1]
    r1 = radius[0] + (radius[1] - radius[0]) * u[2]
    r2 = radius[0] + (radius[1] - radius[0]) * u[3]
    p = (r1 * math.cos(phi), r1 * math.sin(phi))
    t = phi + math.radians(theta)
    q = (r2 * math.cos(t), r2 * math.sin(t))
    X, y = two_clusters(n_per_class, p=p, q=q, noise=noise, seed=seed, dtype=dtype)
    return X, y, theta


def width2_designed(activation: str = "relu", seed: int = 0, p: tuple[float, float] = (1.0, 0.3),
                    q: tuple[float, float] = (-0.8, 0.75), scale: float = 0.3,
                    noise: float = 0.05, negative_slope: float = 0.01) -> nn.Module:
    """The width-2 counterexample network of the book, in float64: a bias-free
    ``models.MLP(2, 1, width=2, depth=2)`` whose first-layer rows start at
    ``scale * (p_hat, q_hat) + noise * xi`` (each neuron on its own cluster of
    :func:`two_clusters`) and whose output weights start at ``(scale, -scale)``."""
    from ..models import MLP

    gen = torch.Generator().manual_seed(seed)
    net = MLP(2, 1, width=2, depth=2, bias=False, activation=activation,
              negative_slope=negative_slope).double()
    rows = torch.tensor([p, q], dtype=torch.float64)
    rows = rows / rows.norm(dim=1, keepdim=True)
    with torch.no_grad():
        net.layers[0].weight.copy_(scale * rows + noise * torch.randn(2, 2, generator=gen,
                                                                      dtype=torch.float64))
        net.layers[1].weight.copy_(torch.tensor([[scale, -scale]], dtype=torch.float64))
    return net


# --------------------------------------------------------------------------------------------
# linear hard-margin problems
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LinearMaxMargin:
    """Solution of ``min 1/2 ||u||^2  s.t.  Z u >= 1``.

    ``u``: the solution; ``margin = 1 / ||u||`` the geometric margin of the rows of ``Z``;
    ``multipliers`` the KKT multipliers (zero off the active set); ``kkt_residual`` the
    relative stationarity residual ``||u - Z^T lambda|| / ||u||``; ``min_constraint``
    ``min_i z_i . u`` (1 at the solution)."""

    u: np.ndarray
    margin: float
    multipliers: np.ndarray
    kkt_residual: float
    min_constraint: float


def linear_max_margin(Z: torch.Tensor | np.ndarray, active_tol: float = 1e-6) -> LinearMaxMargin:
    """Hard-margin direction of the rows of ``Z`` (e.g. ``z_i = y_i x_i``) through the origin.

    Raises ``ValueError`` when no ``u`` with ``Z u > 0`` exists (the data are not separable
    through the origin)."""
    Z = np.asarray(torch.as_tensor(Z, dtype=torch.float64))
    if Z.ndim != 2 or len(Z) == 0:
        raise ValueError(f"Z must be a non-empty (n, d) array, got shape {Z.shape}")
    # start from the normalised mean, rescaled to feasibility when it separates
    u0 = Z.mean(0)
    s = (Z @ u0).min()
    u0 = u0 / s if s > 0 else u0
    res = minimize(lambda u: 0.5 * u @ u, u0, jac=lambda u: u, method="SLSQP",
                   constraints=[{"type": "ineq", "fun": lambda u: Z @ u - 1.0, "jac": lambda u: Z}],
                   options={"ftol": 1e-15, "maxiter": 1000})
    u = res.x
    q = Z @ u
    # SLSQP sometimes stops at the optimum with "positive directional derivative for
    # linesearch": what matters is feasibility (checked here) and the KKT residual (returned)
    if q.min() < 1.0 - 1e-6:
        raise ValueError("the points are not separable by a hyperplane through the origin "
                         f"(SLSQP: {res.message}; min constraint {q.min():.3g})")
    kkt = kkt_multipliers(torch.from_numpy(u), torch.from_numpy(Z), torch.from_numpy(q), active_tol=active_tol)
    return LinearMaxMargin(u, float(1.0 / np.linalg.norm(u)), kkt.multipliers.numpy(), float(kkt.stationarity),
                           float(q.min()))


# --------------------------------------------------------------------------------------------
# the width-2 ReLU network and its closed-form KKT point
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Width2KKT:
    """Closed-form KKT point of ``f(x) = a_1 relu(w_1.x) + a_2 relu(w_2.x)`` on two clusters.

    Neuron 1 serves the positives and neuron 2 the negatives: ``a_1 w_1 = u_+`` and
    ``-a_2 w_2 = u_-`` with ``u_+`` (``u_-``) the one-class hard-margin solution of the
    positive (negative) points, ``min ||u|| s.t. u.x_i >= 1`` over that class, and the
    balanced split ``a_j^2 = ||w_j||^2 = ||u_j||`` (``a_1 > 0 > a_2``). ``W`` (2, d) and
    ``a`` (2,) are the parameters; ``ratio = ||W||_2/||W||_F``;
    ``norm_sq = ||theta||^2 = 2 ||u_+|| + 2 ||u_-||``; ``normalized_margin = 1 / norm_sq``;
    ``cross_inactive`` the largest pre-activation of a neuron on the other class (must be
    < 0 for the point to be valid); ``linear_margin`` the two-class hard margin
    ``gamma_lin``; ``rank1_norm_sq`` the smallest ``||theta||^2`` of a feasible width-2
    network whose first layer has rank 1 (see :func:`rank1_min_norm_sq`)."""

    W: torch.Tensor
    a: torch.Tensor
    ratio: float
    norm_sq: float
    normalized_margin: float
    cross_inactive: float
    one_class_margins: tuple[float, float]
    linear_margin: float
    rank1_norm_sq: float

    @property
    def theta(self) -> torch.Tensor:
        return torch.cat([self.W.flatten(), self.a])

    @property
    def alignment(self) -> float:
        """``|<u_1(W), a / ||a||>|``: the alignment of the two layers at the KKT point (1 only if
        the top left singular vector of ``W`` is parallel to ``a``)."""
        u1, _ = spectra.top_singular_vectors(self.W)
        return float((u1 * self.a / self.a.norm()).sum().abs())


def width2_kkt_point(X: torch.Tensor, y: torch.Tensor, with_rank1: bool = True) -> Width2KKT:
    """The KKT point of the max-margin problem of a bias-free width-2 ReLU network in which
    each neuron is active on one class only (see :class:`Width2KKT`).

    Derivation: if neuron 1 is active exactly on the positives and neuron 2 exactly on the
    negatives, the constraints split into ``a_1 w_1.x_i >= 1`` (positives) and
    ``-a_2 w_2.x_j >= 1`` (negatives, so ``a_2 < 0`` and ``w_2.x_j > 0``). For a fixed
    product ``u = a w`` the cost
    ``a^2 + ||w||^2`` is minimised by ``|a| = ||w|| = ||u||^{1/2}`` (AM-GM), with value
    ``2 ||u||``; so each neuron solves a one-class hard-margin problem. ``with_rank1=False``
    skips the (planar-only) rank-1 comparison and reports ``rank1_norm_sq = nan``."""
    X = X.double()
    y = y.double()
    pos, neg = X[y > 0], X[y < 0]
    if len(pos) == 0 or len(neg) == 0:
        raise ValueError("need both classes")
    up = linear_max_margin(pos)
    um = linear_max_margin(neg)
    lin = linear_max_margin(y[:, None] * X)
    rows, a = [], []
    for u, sign in ((up.u, 1.0), (um.u, -1.0)):
        n = np.linalg.norm(u)
        rows.append(torch.tensor(u / np.sqrt(n)))
        a.append(sign * np.sqrt(n))
    W = torch.stack(rows)
    a_t = torch.tensor(a, dtype=torch.float64)
    s = torch.linalg.svdvals(W)
    norm_sq = float((W**2).sum() + (a_t**2).sum())
    cross = float(torch.maximum((neg @ W[0]).max(), (pos @ W[1]).max()))
    rank1 = rank1_min_norm_sq(X, y) if with_rank1 else float("nan")
    return Width2KKT(W, a_t, float(s[0] / s.norm()), norm_sq, 1.0 / norm_sq, cross,
                     (up.margin, um.margin), lin.margin, rank1)


def rank1_min_norm_sq(X: torch.Tensor, y: torch.Tensor, grid: int = 20_000) -> float:
    """Smallest ``||theta||^2`` of a width-2 bias-free ReLU network with a rank-1 first layer
    that satisfies ``y_i f(x_i) >= 1``, for planar inputs ``X`` (n, 2).

    With rows ``w_j = c_j v`` (``||v|| = 1``), rows of equal sign make ``f`` vanish on a
    half-plane, so ``c_1 > 0 > c_2`` (up to swapping) and ``f(x) = alpha relu(v.x) - beta
    relu(-v.x)``. The cost ``a_1^2 + c_1^2 + a_2^2 + c_2^2`` is at least ``2 alpha + 2 beta``
    (AM-GM, attained), and the constraints need ``alpha >= 1 / m_+(v)``, ``beta >= 1 / m_-(v)``
    with ``m_+(v) = min_{y_i = 1} v.x_i`` and ``m_-(v) = min_{y_i = -1} (-v.x_i)``. So the
    answer is ``min_v 2 / m_+(v) + 2 / m_-(v)`` over directions with both margins positive,
    found by a grid over the angle of ``v`` and a bounded scalar refinement. Raises
    ``ValueError`` for inputs that are not planar or when no direction separates the classes."""
    from scipy.optimize import minimize_scalar

    X = torch.as_tensor(X, dtype=torch.float64)
    y = torch.as_tensor(y, dtype=torch.float64)
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"rank1_min_norm_sq needs planar inputs (n, 2), got {tuple(X.shape)}")
    pos, neg = X[y > 0].numpy(), X[y < 0].numpy()

    def cost(phi: float) -> float:
        v = np.array([np.cos(phi), np.sin(phi)])
        mp, mm = (pos @ v).min(), (-(neg @ v)).min()
        return 2.0 / mp + 2.0 / mm if mp > 0 and mm > 0 else np.inf

    phis = np.linspace(0.0, 2 * np.pi, grid, endpoint=False)
    values = np.array([cost(p) for p in phis])
    k = int(np.argmin(values))
    if not np.isfinite(values[k]):
        raise ValueError("no direction separates the classes through the origin")
    step = phis[1] - phis[0]
    res = minimize_scalar(cost, bounds=(phis[k] - step, phis[k] + step), method="bounded",
                          options={"xatol": 1e-12})
    return float(min(values[k], res.fun))


# --------------------------------------------------------------------------------------------
# KKT conditions of a homogeneous network's max-margin problem
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class KKTReport:
    """KKT conditions at ``theta`` rescaled so that ``min_i q_i = 1`` (``theta_scaled``):
    ``primal`` = ``min_i q_i`` after rescaling (1 by construction), ``multipliers`` >= 0 from
    NNLS on the constraints with ``q_i <= 1 + active_tol``, ``stationarity`` the relative
    residual ``||theta - sum_i lambda_i grad q_i|| / ||theta||``, ``n_active`` the size of the
    active set."""

    theta_scaled: torch.Tensor
    multipliers: np.ndarray
    stationarity: float
    n_active: int
    normalized_margin: float


def kkt_check(margins: MarginFn, theta: torch.Tensor, degree: int,
              active_tol: float = 1e-3) -> KKTReport:
    """Check the KKT conditions of ``min 1/2||theta||^2 s.t. q(theta) >= 1`` at the direction
    of ``theta``; ``margins(theta)`` returns the vector ``q(theta)`` (differentiable) and the
    network is positively ``degree``-homogeneous. Raises ``ValueError`` if some margin is not
    positive (no rescaling makes the point feasible)."""
    theta = theta.detach().double()
    q0 = margins(theta).detach()
    if float(q0.min()) <= 0:
        raise ValueError(f"min margin is {float(q0.min()):.3g} <= 0: the point classifies some "
                         "sample wrongly, so no rescaling is feasible")
    scaled = (theta / q0.min() ** (1.0 / degree)).requires_grad_(True)
    q = margins(scaled)
    grads = torch.stack([torch.autograd.grad(q[i], scaled, retain_graph=True)[0]
                         for i in range(len(q))])
    kkt = kkt_multipliers(scaled.detach(), grads, q.detach(), active_tol=active_tol)
    lam, resid = kkt.multipliers.numpy(), float(kkt.stationarity)
    nm = float(q0.min() / theta.norm() ** degree)
    return KKTReport(scaled.detach(), lam, resid, int((lam > 0).sum()), nm)


def solve_max_margin(margins: MarginFn, theta0: torch.Tensor, degree: int,
                     maxiter: int = 2000) -> tuple[torch.Tensor, bool]:
    """Local solution of ``min 1/2||theta||^2 s.t. q(theta) >= 1`` by SLSQP from ``theta0``
    (rescaled to feasibility first), with exact torch Jacobians. Returns ``(theta, success)``.
    The problem is non-convex: different starts can give different KKT points."""
    theta0 = theta0.detach().double()
    q0 = margins(theta0).detach()
    if float(q0.min()) > 0:
        theta0 = theta0 / q0.min() ** (1.0 / degree)

    def fun(v: np.ndarray) -> np.ndarray:
        return margins(torch.from_numpy(v)).detach().numpy() - 1.0

    def jac(v: np.ndarray) -> np.ndarray:
        t = torch.from_numpy(v.copy())
        return torch.func.jacrev(margins)(t).detach().numpy()

    res = minimize(lambda v: 0.5 * v @ v, theta0.numpy(), jac=lambda v: v, method="SLSQP",
                   constraints=[{"type": "ineq", "fun": fun, "jac": jac}],
                   options={"ftol": 1e-14, "maxiter": maxiter})
    ok = bool(res.success) and float(fun(res.x).min()) > -1e-7
    return torch.from_numpy(res.x), ok


def log_softplus_neg(m: torch.Tensor) -> torch.Tensor:
    """``log(log(1 + exp(-m)))``, accurate for margins ``m`` of any size (for ``m > 30``,
    ``log1p(exp(-m)) = exp(-m) (1 - exp(-m) / 2 + ...)`` and the logarithm is
    ``-m - exp(-m) / 2`` to float64 precision). Gradients are finite everywhere."""
    big = m > 30.0
    safe = torch.where(big, torch.zeros_like(m), m)  # keeps the unused branch finite
    small_branch = torch.log(torch.nn.functional.softplus(-safe))
    return torch.where(big, -m - 0.5 * torch.exp(-m), small_branch)


def log_risk(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``log R = log(mean_i log(1 + exp(-y_i f(x_i))))``, the logarithm of the logistic risk,
    stable for margins far beyond float64's ``exp(-745)``.

    Plain gradient descent on ``log R`` with step ``eta`` is loss-scaled gradient descent on
    ``R`` (step ``eta / R(w)``, since ``grad log R = grad R / R``): a time change of gradient
    flow on ``R`` with ``dt = eta / R``. Use it as the ``loss`` of
    :func:`~implicit_bias.ensembles.train_ensemble` to train many networks to large margins at
    once."""
    m = y * out.reshape(y.shape)
    return torch.logsumexp(log_softplus_neg(m), dim=-1) - torch.log(
        torch.tensor(float(m.shape[-1]), dtype=m.dtype, device=m.device))


def homogeneous_log_risk(degree: int) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """A loss for long runs of a positively ``degree``-homogeneous network on separable data:
    ``phi(R) = -(-log R)^(2/degree)`` (for ``R < 1``; ``+(log R)^(2/degree)`` above 1, and
    ``|log R|`` floored at ``1e-3`` so the derivative stays finite near ``R = 1``).

    ``phi`` is an increasing function of the logistic risk ``R``, so gradient flow on ``phi`` is
    gradient flow on ``R`` run with another clock (``dt_R = phi'(R) dt``). Once the data are
    fitted, ``-log R ~ gamma ||theta||^degree`` and ``||grad phi|| ~ ||theta||``: gradient descent
    on ``phi`` takes steps of a constant *relative* size, so ``||theta||`` grows geometrically
    with the number of steps and the run reaches the late regime of the theory (margins of
    thousands) in a few hundred steps. For ``degree = 2`` this is :func:`log_risk` up to the
    sign and the power."""
    if degree < 1:
        raise ValueError(f"degree must be >= 1, got {degree}")
    power = 2.0 / degree

    def loss(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        lr_ = log_risk(out, y)
        mag = lr_.abs().clamp(min=1e-3)
        return torch.sign(lr_) * mag**power

    return loss


# --------------------------------------------------------------------------------------------
# trajectories
# --------------------------------------------------------------------------------------------
def sign_changes(traj: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``traj`` (T, ...) values over time; returns ``(count, last)`` per entry: how many
    consecutive pairs of steps have different signs (``sign`` with 0 as its own sign), and the
    last step index at which the sign changed (-1 if never)."""
    s = torch.sign(traj)
    changed = s[1:] != s[:-1]
    count = changed.sum(0)
    idx = torch.arange(1, len(traj)).view(-1, *[1] * (traj.dim() - 1)).expand_as(changed)
    last = torch.where(changed, idx, torch.full_like(idx, -1)).max(0).values if len(traj) > 1 \
        else torch.full(traj.shape[1:], -1)
    return count, last


@dataclass
class Width2Runs:
    """Records of a batch of bias-free two-layer scalar networks (``layers.0.weight`` ``W``
    ``(m, d)``, ``layers.1.weight`` ``a`` ``(1, m)``) trained together by
    :func:`train_width2_batch`. ``steps`` ``(R,)`` the recorded steps; per record and member:
    ``theta`` ``(R, E, m d + m)`` all weights, ``W`` ``(R, E, m, d)``, ``a`` ``(R, E, m)``,
    ``ratio`` ``||W||_2 / ||W||_F``, ``s2_sq`` ``sigma_2(W)^2`` (``= ||W||_F^2 - ||W||_2^2`` for
    ``m = 2``), ``align`` ``|<u_1(W), a / ||a||>|``, ``qmin`` the smallest margin
    ``min_i y_i f(x_i)``; ``R0`` ``(E,)`` the initial logistic risk of every member."""

    steps: np.ndarray
    theta: torch.Tensor
    W: torch.Tensor
    a: torch.Tensor
    ratio: torch.Tensor
    s2_sq: torch.Tensor
    align: torch.Tensor
    qmin: torch.Tensor
    R0: torch.Tensor

    def sign_changes(self, member: int, start: int = 0) -> int:
        """How many weight signs of ``member`` change between consecutive records from record
        ``start`` on (with ``record_every=1``: at any step; Assumption 1's monitor)."""
        th = self.theta[start:, member]
        return int((torch.sign(th[1:]) != torch.sign(th[:-1])).sum())


def train_width2_batch(nets: list[nn.Module], X: torch.Tensor, y: torch.Tensor, *,
                       lr: torch.Tensor, steps: int, record_every: int = 1) -> Width2Runs:
    """Gradient descent on ``log R`` (:func:`log_risk`: loss-scaled gradient descent on the
    logistic risk, a time change of gradient flow) for every network of ``nets`` at once, each
    on its own data set (``X`` ``(E, n, d)``, ``y`` ``(E, n)``) with its own step (``lr``
    ``(E,)``); weights and smallest margins are recorded every ``record_every`` steps (every
    step by default, so that :meth:`Width2Runs.sign_changes` sees every step). The networks are
    two-layer bias-free :class:`~implicit_bias.models.MLP` s with a scalar output."""
    ens = Ensemble.from_models(list(nets))
    keys = ("layers.0.weight", "layers.1.weight")
    m, d = ens.params[keys[0]].shape[1:]
    flat = lambda e: torch.cat([e.params[k].flatten(1) for k in keys], 1)
    qmin = lambda e: (y * e(X, batched_inputs=True).squeeze(-1)).min(-1).values
    hist = train_ensemble(ens, X, y, loss=log_risk, lr=lr, steps=steps, batched_data=True,
                          record_every=record_every, metrics={"theta": flat, "qmin": qmin},
                          progress=False)
    theta = hist.stacked("theta").double()
    W, a = theta[..., : m * d].reshape(*theta.shape[:2], m, d), theta[..., m * d:]
    s = spectra.singular_values(W)
    return Width2Runs(steps=np.array(hist.record_steps), theta=theta, W=W, a=a,
                      ratio=s[..., 0] / s.norm(dim=-1), s2_sq=s[..., 1] ** 2,
                      align=spectra.alignment(W, a[..., None, :]),
                      qmin=hist.stacked("qmin").double(), R0=hist.loss.double()[:, 0].exp())


@dataclass
class MarginRun:
    """A loss-scaled run: ``steps`` (T,), ``loss`` (T,), ``time`` (T,) the gradient-flow time
    ``t_k = sum_{j<k} eta_j`` of the actual steps ``eta_j`` (see :func:`train_to_margin`),
    ``params`` the
    flattened parameters at every step (T, P), ``margin`` ``min_i y_i f(x_i)`` (T,),
    ``records`` other per-step metrics, ``reached`` whether the target margin was reached."""

    steps: torch.Tensor
    loss: torch.Tensor
    time: torch.Tensor
    params: torch.Tensor
    margin: torch.Tensor
    records: dict[str, torch.Tensor] = field(default_factory=dict)
    reached: bool = False


def train_to_margin(model: nn.Module, X: torch.Tensor, y: torch.Tensor, *, lr: float,
                    target_margin: float, max_steps: int, chunk: int = 25, degree: int = 2,
                    metrics: Mapping[str, Callable[[nn.Module], torch.Tensor]] | None = None,
                    ) -> MarginRun:
    """Loss-scaled full-batch GD on the logistic loss (``train.train(..., loss_scaled_lr=True)``,
    step ``lr / R(w_t)``, no cap) in chunks of ``chunk`` steps, until the smallest margin
    ``min_i y_i f(x_i)`` exceeds ``target_margin`` or ``max_steps`` steps are done.

    For a 2-homogeneous network this is gradient descent on ``log R`` with a constant relative
    step, so ``||theta||`` grows geometrically and the margin reaches hundreds in a few thousand
    steps; keep ``target_margin`` below ~600 so that ``R ~ exp(-margin)`` stays representable in
    float64. For a network that is ``degree``-homogeneous with ``degree > 2`` the relative step
    of ``lr / R`` would grow like ``||theta||^(degree-2)``, so the step is
    ``lr / (R ||theta||^(degree-2))`` instead (still a time change of gradient flow). Every
    step's parameters are kept (cheap for the small networks of the chapters).
    """
    if target_margin <= 0 or target_margin > 700:
        raise ValueError(f"target_margin must be in (0, 700] for float64, got {target_margin}")
    if max_steps < 1 or chunk < 1:
        raise ValueError("max_steps and chunk must be >= 1")
    if degree < 1:
        raise ValueError(f"degree must be >= 1, got {degree}")
    flat = lambda m: torch.cat([p.detach().flatten() for p in m.parameters()])
    extra = max(degree - 2, 0)

    def rate(step: int) -> float:
        if extra == 0:
            return lr
        norm = float(flat(model).norm())
        return lr / max(norm, 1.0) ** extra
    margin = lambda m: (y * m(X).reshape(y.shape)).min()
    all_metrics = {"params": flat, "margin": margin, **(metrics or {})}
    recs: dict[str, list[torch.Tensor]] = {k: [] for k in all_metrics}
    losses: list[torch.Tensor] = []
    done, reached = 0, False
    while done < max_steps and not reached:
        n = min(chunk, max_steps - done)
        rec = _train.Recorder(every=1, metrics=all_metrics)
        h = _train.train(model, X, y, loss="logistic", steps=n, lr=rate, loss_scaled_lr=True,
                         recorder=rec, progress=False)
        first = 0 if done == 0 else 1  # the first record repeats the previous chunk's last
        for k in all_metrics:
            recs[k].extend(torch.as_tensor(v) for v in h.records[k][first:])
        losses.extend(h.loss[first:])
        done += n
        reached = float(h.records["margin"][-1]) >= target_margin
    loss = torch.stack(losses).double()
    stacked = {k: torch.stack(v) for k, v in recs.items()}
    norms = stacked["params"].double().norm(dim=1).clamp(min=1.0)
    eta = lr / (loss * norms**extra)
    time = torch.cat([torch.zeros(1, dtype=torch.float64), torch.cumsum(eta[:-1], 0)])
    return MarginRun(torch.arange(len(loss)), loss, time, stacked.pop("params"),
                     stacked.pop("margin"), stacked, reached)
