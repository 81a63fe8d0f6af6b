"""Two data points, two hidden ReLU neurons: the setting of Section 3 of Timor, Vardi & Shamir
(2023), simulated for thousands of runs at once.

The network is ``N_{W,V}(x) = V relu(W x)`` with ``W, V`` of shape ``(2, 2)``, no biases, and the
square loss ``L = 1/2 sum_j ||N(x_j) - y_j||^2`` (a sum, as in the paper's Eq. 1). Row ``w_i`` of
``W`` and column ``v_i`` of ``V`` belong to hidden neuron ``i``. Data are stored with one sample
per *column*: ``X = [x_1 x_2]`` and ``Y = [y_1 y_2]``. ReLU's derivative at 0 is 0 (the paper's
convention, also PyTorch's).

Everything is batched over a leading *run* axis: ``W, V`` are ``(R, 2, 2)`` and the data are
shared ``(2, 2)`` or per run ``(R, 2, 2)``. Gradients are written by hand (a handful of batched
2x2 products per step), runs that are settled (converged, or with a dead neuron, which can
never recover) are dropped from the active batch at bulk checks every ``check_every`` steps, and
nothing is synchronised with the host between checks.

Region codes (Definition 1 of the paper, for a neuron ``w``): ``DEAD`` (``w.x_j <= 0`` for both
inputs, the paper's ``D``), ``S1`` / ``S2`` (active on ``x_1`` / ``x_2`` only), ``BOTH``
(active on both inputs, the paper's ``S``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

DEAD, S1, S2, BOTH = 0, 1, 2, 3
REGION_NAMES = {DEAD: "D", S1: "S1", S2: "S2", BOTH: "S"}


# --- data and initialisation ------------------------------------------------------------------

def unit(angle: torch.Tensor) -> torch.Tensor:
    """Unit vectors ``(cos a, sin a)`` stacked on the last axis."""
    return torch.stack([torch.cos(angle), torch.sin(angle)], dim=-1)


def paper_dataset(dtype: torch.dtype = torch.float64,
                  device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """The dataset of the paper's Fig. 1: ``x_{1,2} = (+-1, 0.99)/||.||``, ``y_{1,2} = e_1, e_2``.

    Returns ``(X, Y)``, each ``(2, 2)`` with one sample per column.
    """
    X = torch.tensor([[1.0, -1.0], [0.99, 0.99]], dtype=dtype, device=device)
    X = X / X.norm(dim=0, keepdim=True)
    Y = torch.eye(2, dtype=dtype, device=device)
    return X, Y


def angle_between(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Angle in ``[0, pi]`` between vectors on the last axis (batched), via ``atan2`` (accurate
    near 0 and pi, unlike ``arccos``)."""
    cross = u[..., 0] * v[..., 1] - u[..., 1] * v[..., 0]
    dot = (u * v).sum(-1)
    return torch.atan2(cross.abs(), dot)


def datasets_with_angles(theta: torch.Tensor, psi: torch.Tensor,
                         generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """One dataset per entry of ``theta`` (input angle) and ``psi`` (label angle), all on the
    unit circle, each rotated by an independent uniform random rotation (inputs and labels
    separately). Returns ``(X, Y)``, each ``(R, 2, 2)`` with samples as columns."""
    theta = torch.as_tensor(theta, dtype=torch.float64)
    psi = torch.as_tensor(psi, dtype=torch.float64)
    if theta.shape != psi.shape or theta.dim() != 1:
        raise ValueError("theta and psi must be 1-d tensors of the same length")
    if bool(((theta <= 0) | (theta >= math.pi)).any()):
        raise ValueError("input angles must lie in (0, pi)")
    R = theta.numel()
    a = 2 * math.pi * torch.rand(R, generator=generator, dtype=torch.float64)
    b = 2 * math.pi * torch.rand(R, generator=generator, dtype=torch.float64)
    X = torch.stack([unit(a), unit(a + theta)], dim=-1)
    Y = torch.stack([unit(b), unit(b + psi)], dim=-1)
    return X, Y


def sphere_rows(R: int, radius: float, generator: torch.Generator | None = None,
                dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """``(R, 2, 2)`` matrices whose two rows are independent and uniform on the circle of the
    given radius (use ``.transpose(1, 2)`` for uniform columns)."""
    phi = 2 * math.pi * torch.rand(R, 2, generator=generator, dtype=torch.float64)
    return (radius * unit(phi)).to(dtype)


def paper_init(R: int, radius: float = 1e-4, generator: torch.Generator | None = None,
               zero_v: bool = False, v_radius: float | torch.Tensor | None = None
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """The paper's initialisation: every row of ``W`` and every column of ``V`` uniform on the
    circle of radius ``radius`` (``zero_v=True``: ``V(0) = 0``, the hypothesis of Theorem 3).

    ``v_radius`` gives the columns of ``V`` another radius: a number, or one per run (shape
    ``(R,)``, e.g. a sweep of ``||v_i(0)|| / ||w_i(0)||``); directions are drawn as for the
    default, so ``v_radius = radius`` reproduces it draw for draw."""
    W = sphere_rows(R, radius, generator)
    if zero_v:
        return W, torch.zeros_like(W)
    if v_radius is None:
        return W, sphere_rows(R, radius, generator).transpose(1, 2).contiguous()
    r = torch.as_tensor(v_radius, dtype=W.dtype)
    V = sphere_rows(R, 1.0, generator).transpose(1, 2) * r.reshape(-1, 1, 1)
    return W, V.contiguous()


def binomial_interval(k: int, n: int, level: float = 0.99,
                      method: str = "wilson") -> tuple[float, float]:
    """Two-sided confidence interval for a binomial fraction ``k / n`` (``method``: ``"wilson"``
    or ``"exact"``, Clopper-Pearson)."""
    from scipy import stats

    if n <= 0:
        raise ValueError("n must be positive")
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method=method)
    return float(ci.low), float(ci.high)


# --- regions (Definition 1) -----------------------------------------------------------------

def activations(W: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """Pre-activations ``W X``: entry ``[.., i, j] = w_i . x_j``."""
    return W @ X


def region_codes(W: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """Region of each neuron (row of ``W``): ``DEAD``, ``S1``, ``S2`` or ``BOTH``;
    shape ``W.shape[:-1]``."""
    on = activations(W, X) > 0
    return on[..., 0].long() * S1 + on[..., 1].long() * S2


def region_of_angle(phi: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """Region code of the unit direction at angle ``phi`` (any shape) for one dataset ``X (2, 2)``."""
    w = unit(torch.as_tensor(phi, dtype=X.dtype))
    on = (w @ X) > 0
    return on[..., 0].long() * S1 + on[..., 1].long() * S2


def in_interior(W: torch.Tensor, X: torch.Tensor, margin: float = 0.0) -> torch.Tensor:
    """True where every pre-activation is at distance > ``margin`` from 0 (the neuron is in the
    interior of its region); shape ``W.shape[:-1]``."""
    return (activations(W, X).abs() > margin).all(-1)


def pattern(codes: torch.Tensor) -> list[str]:
    """Readable unordered activation patterns of runs, e.g. ``'S1,S2'`` or ``'S,S2'``."""
    out = []
    for a, b in codes.tolist():
        names = sorted([REGION_NAMES[a], REGION_NAMES[b]])
        out.append(",".join(names))
    return out


def is_split(codes: torch.Tensor) -> torch.Tensor:
    """Runs whose neurons are one in ``S1`` and one in ``S2`` (either order)."""
    a, b = codes[..., 0], codes[..., 1]
    return ((a == S1) & (b == S2)) | ((a == S2) & (b == S1))


def served_pairs(W: torch.Tensor, X: torch.Tensor,
                 Y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """For runs that are split, the input and the label each neuron serves: ``(x, y)``, each
    ``(R, neuron, 2)``, with ``x[r, i] = x_j`` for the input ``x_j`` that neuron ``i`` is active on
    (entries of neurons that are not in ``S1`` or ``S2`` take ``x_1, y_1``)."""
    R = W.shape[0]
    Xb, Yb = _expand(X, R), _expand(Y, R)
    j = (region_codes(W, Xb) == S2).long().unsqueeze(-1).expand(R, 2, 2)
    return torch.gather(Xb.transpose(1, 2), 1, j), torch.gather(Yb.transpose(1, 2), 1, j)


def split_survives(W0: torch.Tensor, V0: torch.Tensor, X: torch.Tensor,
                   Y: torch.Tensor) -> torch.Tensor:
    """The linearised survival rule for split starts: with ``p_i = w_i(0).x_j`` and
    ``q_i = v_i(0).y_j`` for the input ``x_j`` neuron ``i`` serves, small-weight gradient flow
    gives ``dp/dt ~ q``, ``dq/dt ~ p``, so ``p_i`` stays positive when ``p_i + q_i > 0``. True
    where that holds for both neurons (meaningful for split starts only)."""
    xj, yj = served_pairs(W0, X, Y)
    p = (W0 * xj).sum(-1)
    q = (V0.transpose(1, 2) * yj).sum(-1)
    return ((p + q) > 0).all(-1)


# --- forward, loss, gradients ---------------------------------------------------------------

def forward(W: torch.Tensor, V: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """``V relu(W X)`` (outputs as columns)."""
    return V @ torch.relu(W @ X)


def loss(W: torch.Tensor, V: torch.Tensor, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """Square loss ``1/2 ||V relu(W X) - Y||_F^2`` per run."""
    return 0.5 * (forward(W, V, X) - Y).pow(2).sum((-2, -1))


def stuck(W: torch.Tensor, V: torch.Tensor, X: torch.Tensor, Y: torch.Tensor,
          settle_tol: float) -> torch.Tensor:
    """Runs at a flat stationary point short of zero loss: some input has no active neuron (its
    loss ``1/2 ||y_j||^2`` is then constant and sends no gradient), and every input that has one
    is fitted to ``settle_tol``. Every gradient then vanishes with the fitted losses
    (exponentially fast), so the run can only leave through a boundary it touches: it never
    converges (a dead neuron, Lemma 5, or both neurons serving the same input)."""
    Z = W @ X
    served = (Z > 0).any(-2)                           # (.., inputs): some neuron active on x_j
    Lj = 0.5 * (V @ torch.relu(Z) - Y).pow(2).sum(-2)          # per-input losses
    return (~served).any(-1) & (torch.where(served, Lj, torch.zeros_like(Lj)) < settle_tol).all(-1)


def grads(W: torch.Tensor, V: torch.Tensor, X: torch.Tensor,
          Y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(dL/dW, dL/dV, L)`` by the chain rule written out (Lemma 7's formula
    ``dL/dW = (relu'(WX) * V^T (V relu(WX) - Y)) X^T``, with ``relu'(0) = 0``)."""
    Z = W @ X
    A = torch.relu(Z)
    E = V @ A - Y
    gV = E @ A.transpose(-2, -1)
    gW = ((V.transpose(-2, -1) @ E) * (Z > 0)) @ X.transpose(-2, -1)
    return gW, gV, 0.5 * E.pow(2).sum((-2, -1))


def _expand(T: torch.Tensor, R: int) -> torch.Tensor:
    return T.expand(R, 2, 2) if T.dim() == 2 else T


def gd_steps(W: torch.Tensor, V: torch.Tensor, X: torch.Tensor, Y: torch.Tensor, lr: float,
             n: int) -> None:
    """``n`` full-batch GD steps in place on the batched ``W, V`` (``X, Y`` batched like ``W``).

    Small batches take five batched 2x2 products per step; from ``STACKED_FROM`` runs on, the
    same arithmetic runs on tensors with the run axis last (``(2, 2, R)``), where each product
    is a handful of elementwise operations over all runs (about twice as fast on a CPU; the sums
    are taken in the same order, so the two paths agree bit for bit in the tests)."""
    if W.shape[0] >= STACKED_FROM:
        _gd_steps_stacked(W, V, X, Y, lr, n)
        return
    XT = X.transpose(-2, -1)
    for _ in range(n):
        Z = torch.bmm(W, X)
        A = torch.relu(Z)
        E = torch.baddbmm(Y, V, A, beta=-1.0)          # V A - Y
        gZ = torch.bmm(V.transpose(1, 2), E).mul_(Z > 0)
        V.baddbmm_(E, A.transpose(1, 2), alpha=-lr)    # V -= lr E A^T
        W.baddbmm_(gZ, XT, alpha=-lr)                  # W -= lr gZ X^T


STACKED_FROM = 1000  # batch size from which gd_steps uses the run-axis-last layout


def _gd_steps_stacked(W: torch.Tensor, V: torch.Tensor, X: torch.Tensor, Y: torch.Tensor, lr: float,
                      n: int) -> None:
    Wt, Vt = W.permute(1, 2, 0).contiguous(), V.permute(1, 2, 0).contiguous()
    Xt, Yt = X.permute(1, 2, 0).contiguous(), Y.permute(1, 2, 0).contiguous()
    Xk, Xj = Xt.unsqueeze(0), Xt.unsqueeze(0)          # [., k, j, R]: X[k, j]
    for _ in range(n):
        Z = (Wt.unsqueeze(2) * Xk).sum(1)              # Z[i, j] = sum_k W[i, k] X[k, j]
        A = Z.clamp(min=0)
        E = (Vt.unsqueeze(2) * A.unsqueeze(0)).sum(1) - Yt            # V A - Y
        gZ = (Vt.unsqueeze(2) * E.unsqueeze(1)).sum(0) * (Z > 0)      # (V^T E) * relu'(Z)
        Vt -= lr * (E.unsqueeze(1) * A.unsqueeze(0)).sum(2)           # V -= lr E A^T
        Wt -= lr * (gZ.unsqueeze(1) * Xj).sum(2)                      # W -= lr gZ X^T
    W.copy_(Wt.permute(2, 0, 1))
    V.copy_(Vt.permute(2, 0, 1))


# --- the batched simulator ------------------------------------------------------------------

@dataclass
class Simulation:
    """Result of :func:`simulate`. All tensors have the run axis first.

    ``W, V``: final parameters; ``loss``: final loss; ``steps``: GD steps each run took (runs
    stop at ``settle_tol`` or when a neuron is dead); ``converged``: ``loss < tol``;
    ``dead``: a neuron ended in ``D``; ``W0, V0``: the initial parameters;
    ``checks``: the step counts of the bulk checks; ``active``: how many runs were still being
    simulated at each check; ``balance_drift``: max over checks of
    ``| ||w_i||^2 - ||v_i||^2 - (same at t=0) |`` per run (Lemma 9); ``trace``: optional
    snapshots ``(n_checks, R, 2, 2)`` of ``W`` and ``V`` (``record=True``).
    """

    W: torch.Tensor
    V: torch.Tensor
    W0: torch.Tensor
    V0: torch.Tensor
    loss: torch.Tensor
    steps: torch.Tensor
    converged: torch.Tensor
    dead: torch.Tensor
    balance_drift: torch.Tensor
    lr: float
    checks: list[int] = field(default_factory=list)
    active: list[int] = field(default_factory=list)
    trace_W: torch.Tensor | None = None
    trace_V: torch.Tensor | None = None

    @property
    def time(self) -> torch.Tensor:
        """Gradient-flow time ``lr * steps`` of each run."""
        return self.lr * self.steps.to(torch.float64)


def _check_args(W0: torch.Tensor, V0: torch.Tensor, X: torch.Tensor, Y: torch.Tensor,
                lr: float, steps: int, check_every: int) -> None:
    if W0.dim() != 3 or W0.shape[1:] != (2, 2) or V0.shape != W0.shape:
        raise ValueError(f"W0 and V0 must both have shape (R, 2, 2); got {tuple(W0.shape)} and {tuple(V0.shape)}")
    for name, T in (("X", X), ("Y", Y)):
        if T.shape not in ((2, 2), W0.shape):
            raise ValueError(f"{name} must be (2, 2) or (R, 2, 2) with R = {W0.shape[0]}; got {tuple(T.shape)}")
    if not (lr > 0 and math.isfinite(lr)):
        raise ValueError(f"lr must be a positive finite number, got {lr!r}")
    if steps < 0 or check_every < 1:
        raise ValueError("steps must be >= 0 and check_every >= 1")


def simulate(W0: torch.Tensor, V0: torch.Tensor, X: torch.Tensor, Y: torch.Tensor, *, lr: float,
             steps: int, tol: float = 1e-4, settle_tol: float = 1e-12, check_every: int = 500,
             stop_dead: bool = True, stop_stuck: bool = True, record: bool = False) -> Simulation:
    """Full-batch GD on ``R`` two-neuron networks at once, for at most ``steps`` steps.

    Every ``check_every`` steps, in bulk: runs whose loss is below ``settle_tol`` (converged;
    the rest of the way to the limit is exponentially fast) or that have a neuron in ``D``
    (with ``stop_dead``: such a neuron never moves again and, when ``rank Y = 2``, zero loss is
    out of reach, Lemmas 4-5) or that are :func:`stuck` (with ``stop_stuck``: an input served by
    no neuron and the others fitted to ``settle_tol``, a flat stationary point of positive loss)
    are written back and dropped from the active batch; the loop ends when no run is active. A
    run counts as ``converged`` when its final loss is ``< tol`` (the
    paper's criterion, 1e-4). A non-finite loss raises ``FloatingPointError`` naming the run,
    the step and the learning rate.
    """
    _check_args(W0, V0, X, Y, lr, steps, check_every)
    R = W0.shape[0]
    W_all, V_all = W0.clone(), V0.clone()
    Xb, Yb = _expand(X, R), _expand(Y, R)
    taken = torch.zeros(R, dtype=torch.long, device=W0.device)
    eps0 = W0.pow(2).sum(-1) - V0.pow(2).sum(-2)           # per-neuron ||w_i||^2 - ||v_i||^2
    drift = torch.zeros(R, dtype=W0.dtype, device=W0.device)
    idx = torch.arange(R, device=W0.device)
    W, V, Xa, Ya = W_all.clone(), V_all.clone(), Xb.contiguous(), Yb.contiguous()
    sim_checks: list[int] = []
    active_counts: list[int] = []
    traces_W, traces_V = [], []
    done_steps = 0
    while True:
        # bulk check on the active runs
        L = loss(W, V, Xa, Ya)
        if not bool(torch.isfinite(L).all()):
            bad = int(idx[~torch.isfinite(L)][0])
            raise FloatingPointError(
                f"run {bad} diverged (non-finite loss) by step {done_steps} with lr={lr:g}; "
                "lower the learning rate")
        W_all[idx], V_all[idx] = W, V
        taken[idx] = done_steps
        eps = W.pow(2).sum(-1) - V.pow(2).sum(-2)
        drift[idx] = torch.maximum(drift[idx], (eps - eps0[idx]).abs().amax(-1))
        sim_checks.append(done_steps)
        active_counts.append(int(idx.numel()))
        if record:
            traces_W.append(W_all.clone())
            traces_V.append(V_all.clone())
        settled = L < settle_tol
        if stop_dead:
            settled |= (region_codes(W, Xa) == DEAD).any(-1)
        if stop_stuck:
            settled |= stuck(W, V, Xa, Ya, settle_tol)
        keep = ~settled
        if done_steps >= steps or not bool(keep.any()):
            break
        if not bool(keep.all()):
            idx, W, V, Xa, Ya = idx[keep], W[keep], V[keep], Xa[keep], Ya[keep]
        n = min(check_every, steps - done_steps)
        gd_steps(W, V, Xa, Ya, lr, n)
        done_steps += n
    final_loss = loss(W_all, V_all, Xb, Yb)
    return Simulation(
        W=W_all, V=V_all, W0=W0, V0=V0, loss=final_loss, steps=taken,
        converged=final_loss < tol, dead=(region_codes(W_all, Xb) == DEAD).any(-1),
        balance_drift=drift, lr=lr, checks=sim_checks, active=active_counts,
        trace_W=torch.stack(traces_W) if record else None,
        trace_V=torch.stack(traces_V) if record else None,
    )


def simulate_loop(W0: torch.Tensor, V0: torch.Tensor, X: torch.Tensor, Y: torch.Tensor, *,
                  lr: float, steps: int, settle_tol: float = 1e-12, check_every: int = 500,
                  stop_dead: bool = True,
                  stop_stuck: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Reference implementation: the same GD, one run at a time with autograd (for the
    benchmark and the tests). Returns the final ``(W, V)``."""
    _check_args(W0, V0, X, Y, lr, steps, check_every)
    R = W0.shape[0]
    Xb, Yb = _expand(X, R), _expand(Y, R)
    Ws, Vs = [], []
    for r in range(R):
        W = W0[r].clone().requires_grad_(True)
        V = V0[r].clone().requires_grad_(True)
        x, y = Xb[r], Yb[r]
        for step in range(steps + 1):
            if step % check_every == 0 or step == steps:
                with torch.no_grad():
                    L = float(0.5 * (V @ torch.relu(W @ x) - y).pow(2).sum())
                    dead = bool(((W @ x) <= 0).all(-1).any())
                    flat = bool(stuck(W, V, x, y, settle_tol))
                if L < settle_tol or (stop_dead and dead) or (stop_stuck and flat) or step == steps:
                    break
            L = 0.5 * (V @ torch.relu(W @ x) - y).pow(2).sum()
            gW, gV = torch.autograd.grad(L, (W, V))
            with torch.no_grad():
                W -= lr * gW
                V -= lr * gV
        Ws.append(W.detach())
        Vs.append(V.detach())
    return torch.stack(Ws), torch.stack(Vs)


# --- closed forms and theorem constants -----------------------------------------------------

def stable_rank_2x2(M: torch.Tensor) -> torch.Tensor:
    """``||M||_F^2 / ||M||_2^2`` of batched 2x2 matrices from the Gram matrix (no SVD)."""
    f = M.pow(2).sum((-2, -1))
    det = M[..., 0, 0] * M[..., 1, 1] - M[..., 0, 1] * M[..., 1, 0]
    top = f / 2 + torch.sqrt(torch.clamp(f * f / 4 - det * det, min=0.0))
    return f / top


def ideal_stable_rank(theta: torch.Tensor | float) -> torch.Tensor:
    """``2 / (1 + |cos theta|)``: the stable rank of a matrix whose rows are two unit vectors at
    angle ``theta`` (the small-initialisation limit ``W(inf) ~ X^T`` of split runs)."""
    return 2.0 / (1.0 + torch.cos(torch.as_tensor(theta, dtype=torch.float64)).abs())


def closed_form_limit(W0: torch.Tensor, X: torch.Tensor, Y: torch.Tensor,
                      balance: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Gradient-flow limit for ``V(0) = 0`` and neurons starting in the interiors of ``S1`` and
    ``S2`` (one each, either order), from Lemmas 7, 9 and 13.

    For neuron ``i`` active on input ``j`` only, with ``p = w_i(0).x_j`` (unit ``x_j``):
    ``w_i(inf) = w_i(0) + (s - p) x_j`` and ``v_i(inf) = y_j / s`` with
    ``s^2 = (p^2 + sqrt(p^4 + 4)) / 2`` (balancedness ``||w||^2 - ||v||^2 = ||w(0)||^2`` plus
    ``s ||v|| = ||y_j|| = 1``). Entries of runs that are not split are NaN. ``balance=False``
    drops Lemma 9's correction (``s = 1``: each neuron ends with ``w.x_j = 1``), a cruder
    limit used as a negative control.
    """
    R = W0.shape[0]
    Xb, Yb = _expand(X, R), _expand(Y, R)
    codes = region_codes(W0, Xb)
    j = (codes == S2).long()                      # input index each neuron serves (0 or 1)
    xj = torch.gather(Xb.transpose(1, 2), 1, j.unsqueeze(-1).expand(R, 2, 2))   # (R, neuron, 2)
    yj = torch.gather(Yb.transpose(1, 2), 1, j.unsqueeze(-1).expand(R, 2, 2))
    p = (W0 * xj).sum(-1)
    s = torch.sqrt((p**2 + torch.sqrt(p**4 + 4)) / 2) if balance else torch.ones_like(p)
    W = W0 + (s - p).unsqueeze(-1) * xj
    V = (yj / s.unsqueeze(-1)).transpose(1, 2)
    bad = ~is_split(codes)
    W[bad] = float("nan")
    V[bad] = float("nan")
    return W, V


def theorem1_solution(X: torch.Tensor, Y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Theorem 1's rank-1 zero-loss network (App. A): ``w_1 = x_1/||x_1|| - x_2/||x_2||``,
    ``w_2 = -w_1`` (each neuron active on exactly one input), ``V = Y relu(W X)^+`` (Lemma 2).
    Batched over a leading axis; any input angle in ``(0, pi]``, any labels."""
    xh = X / X.norm(dim=-2, keepdim=True)
    w1 = xh[..., :, 0] - xh[..., :, 1]
    W = torch.stack([w1, -w1], dim=-2)
    return W, lemma2_output_layer(W, X, Y)


def lemma2_output_layer(W: torch.Tensor, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """Lemma 2: ``V = Y relu(W X)^+`` interpolates when every input has a private neuron."""
    return Y @ torch.linalg.pinv(torch.relu(W @ X))


def has_private_neurons(W: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """Lemma 2's hypothesis: for every input ``x_j`` some neuron is active on ``x_j`` only."""
    on = (W @ X) > 0                                     # (.., hidden, n)
    private = on & (on.sum(-1, keepdim=True) == 1)
    return private.any(-2).all(-1)


def thm2_init_bound(theta: torch.Tensor | float) -> torch.Tensor:
    """Theorem 2: ``||w_i(0)|| < min(1/2, sqrt(3)/2 cos(theta/2))`` (and ``||v_i(0)|| < 1/2``)."""
    t = torch.as_tensor(theta, dtype=torch.float64)
    return torch.minimum(torch.full_like(t, 0.5), math.sqrt(3) / 2 * torch.cos(t / 2))


def thm3_init_bound(theta: torch.Tensor | float) -> torch.Tensor:
    """Theorem 3: ``||w_i(0)|| <= sqrt(3)/2 min(sin((pi - theta)/4), sin(theta - pi/2))``."""
    t = torch.as_tensor(theta, dtype=torch.float64)
    return math.sqrt(3) / 2 * torch.minimum(torch.sin((math.pi - t) / 4), torch.sin(t - math.pi / 2))


def thm3_angle_interval(theta: torch.Tensor | float) -> tuple[torch.Tensor, torch.Tensor]:
    """Event E (i): the angle between the rows lies in ``[pi - theta, (pi + theta)/2]``."""
    t = torch.as_tensor(theta, dtype=torch.float64)
    return math.pi - t, (math.pi + t) / 2


def thm3_norm_interval(theta: torch.Tensor | float) -> tuple[torch.Tensor, torch.Tensor]:
    """Event E (ii): ``||w_i(inf)|| in (sqrt(3)/2, sqrt(1/4 + 4/(3 sin^2 theta)))``."""
    t = torch.as_tensor(theta, dtype=torch.float64)
    return torch.full_like(t, math.sqrt(3) / 2), torch.sqrt(0.25 + 4 / (3 * torch.sin(t) ** 2))


def thm3_probability_bound(theta: torch.Tensor | float) -> torch.Tensor:
    """Theorem 3: ``Pr[E] >= 2 (theta / 2 pi)^2`` (the chance that the two neurons start in
    ``S1 x S2`` or ``S2 x S1``)."""
    t = torch.as_tensor(theta, dtype=torch.float64)
    return 2 * (t / (2 * math.pi)) ** 2


def no_dead_probability(theta: torch.Tensor | float) -> torch.Tensor:
    """``((pi + theta) / 2 pi)^2``: the chance that no neuron starts in ``D`` (uniform
    directions); an upper bound on the chance of converging to zero loss (Lemma 5)."""
    t = torch.as_tensor(theta, dtype=torch.float64)
    return ((math.pi + t) / (2 * math.pi)) ** 2


def lemma6_angle_interval(theta: torch.Tensor | float, r0: torch.Tensor | float) -> tuple[torch.Tensor, torch.Tensor]:
    """Lemma 6: the row angle of a zero-loss limit with rows in ``int S1 x int S2`` lies in
    ``[pi - theta, theta + 2 arcsin(2 r0 / sqrt 3))`` (``r0 = max_i ||w_i(0)||``)."""
    t = torch.as_tensor(theta, dtype=torch.float64)
    r = torch.as_tensor(r0, dtype=torch.float64)
    return math.pi - t, t + 2 * torch.arcsin(2 * r / math.sqrt(3))


def lemma6_norm_interval(theta: torch.Tensor | float,
                         w0_norm: torch.Tensor | float) -> tuple[torch.Tensor, torch.Tensor]:
    """Lemma 6: a zero-loss limit with rows in ``int S1 x int S2`` has
    ``||w_i(inf)|| in (sqrt(3)/2, sqrt(1/4 + 4 / (3 c_i^2)))`` with
    ``c_i = cos max(arcsin(2 ||w_i(0)|| / sqrt 3), theta - pi/2)``. ``w0_norm`` holds
    ``||w_i(0)||`` (any shape whose leading axes match ``theta``'s, e.g. ``(R, 2)``)."""
    t = torch.as_tensor(theta, dtype=torch.float64)
    r = torch.as_tensor(w0_norm, dtype=torch.float64)
    t = t.reshape(t.shape + (1,) * (r.dim() - t.dim()))
    c = torch.cos(torch.maximum(torch.arcsin(2 * r / math.sqrt(3)), t - math.pi / 2))
    return torch.full_like(c, math.sqrt(3) / 2), torch.sqrt(0.25 + 4 / (3 * c**2))


def event_E(W: torch.Tensor, converged: torch.Tensor, theta: torch.Tensor | float) -> torch.Tensor:
    """Theorem 3's event: converged, row angle in the interval (i), both row norms in (ii)."""
    lo, hi = thm3_angle_interval(theta)
    nlo, nhi = thm3_norm_interval(theta)
    ang = angle_between(W[..., 0, :], W[..., 1, :])
    norms = W.norm(dim=-1)
    ok_angle = (ang >= lo) & (ang <= hi)
    ok_norm = ((norms > nlo[..., None]) & (norms < nhi[..., None])).all(-1)
    return converged & ok_angle & ok_norm


def row_angle(W: torch.Tensor) -> torch.Tensor:
    """Angle between the two rows of each ``W``."""
    return angle_between(W[..., 0, :], W[..., 1, :])


def balance(W: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
    """Per-neuron ``||w_i||^2 - ||v_i||^2`` (Lemma 9: constant under gradient flow)."""
    return W.pow(2).sum(-1) - V.pow(2).sum(-2)


# --- the proof's regions A_i and F_i (Lemma 6, Fig. 3) --------------------------------------

def boundary_ray(X: torch.Tensor, i: int) -> torch.Tensor:
    """Unit direction of the ray ``U_i = {w : w.x_j = 0, w.x_i > 0}`` (``j != i``, ``i`` in
    {0, 1}): the boundary that ``S_i`` shares with ``S``."""
    xj = X[..., :, 1 - i]
    u = torch.stack([-xj[..., 1], xj[..., 0]], dim=-1)          # xj rotated by +90 degrees
    sign = torch.sign((u * X[..., :, i]).sum(-1, keepdim=True))
    return u * sign


def in_reachable(w: torch.Tensor, X: torch.Tensor, i: int, r0: float, tol: float = 1e-9) -> torch.Tensor:
    """Membership of ``w`` (``(..., 2)``) in ``A_i = {e + lam x_i : e in T_i u U_i, lam >= 0}``
    with ``T_i = S_i n closed ball(r0)`` (Lemma 6's proof; unit inputs, obtuse angle).

    ``w`` is in the cone spanned by ``U_i`` and ``x_i``, or it is in ``S_i`` and some
    ``w - lam x_i`` (``lam >= 0``) lies in ``T_i``: the admissible ``lam`` form an interval
    ``[0, lam_max)`` on which ``||w - lam x_i||`` decreases, so it suffices to test ``lam_max``.
    """
    xi, xj = X[..., :, i], X[..., :, 1 - i]
    u = boundary_ray(X, i)
    # cone(u, x_i): solve w = a u + b x_i
    det = u[..., 0] * xi[..., 1] - u[..., 1] * xi[..., 0]
    a = (w[..., 0] * xi[..., 1] - w[..., 1] * xi[..., 0]) / det
    b = (u[..., 0] * w[..., 1] - u[..., 1] * w[..., 0]) / det
    in_cone = (a > -tol) & (b > -tol) & (w.norm(dim=-1) > 0)
    pi, pj = (w * xi).sum(-1), (w * xj).sum(-1)
    cos = (xi * xj).sum(-1)
    lam_max = torch.clamp(torch.minimum(pi, pj / cos), min=0.0)
    t = w - lam_max.unsqueeze(-1) * xi
    in_strip = (pi > 0) & (pj <= tol) & (t.norm(dim=-1) <= r0 + tol)
    return in_cone | in_strip


def in_final_region(w: torch.Tensor, X: torch.Tensor, i: int, r0: float, eps0: float,
                    tol: float = 1e-6) -> torch.Tensor:
    """Membership in ``F_i = A_i minus the open ball of radius sqrt(1 - |eps0|)`` (Fig. 3), where
    ``eps0 = ||w_i(0)||^2 - ||v_i(0)||^2``; ``tol`` absorbs the step-size drift of GD."""
    return in_reachable(w, X, i, r0, tol) & (w.norm(dim=-1) >= math.sqrt(1 - abs(eps0)) - tol)


def region_boundaries(X: torch.Tensor) -> torch.Tensor:
    """Angles in ``[0, 2 pi)`` of the four rays bounding the cones ``D, S1, S2, S`` of one
    dataset ``X (2, 2)``: the directions orthogonal to ``x_1`` and to ``x_2``."""
    out = []
    for j in range(2):
        a = math.atan2(float(X[1, j]), float(X[0, j]))
        out += [(a + math.pi / 2) % (2 * math.pi), (a - math.pi / 2) % (2 * math.pi)]
    return torch.tensor(sorted(out), dtype=torch.float64)


def outcome_classes(sim: Simulation, X: torch.Tensor) -> torch.Tensor:
    """Outcome of each run: 0 converged and split, 1 converged with a neuron in ``S``,
    2 not converged with a dead neuron, 3 not converged otherwise."""
    Xb = _expand(X, sim.W.shape[0])
    codes = region_codes(sim.W, Xb)
    conv = sim.converged
    out = torch.full(conv.shape, 3, dtype=torch.long, device=conv.device)
    out[conv & ~is_split(codes)] = 1
    out[conv & is_split(codes)] = 0
    out[~conv & (codes == DEAD).any(-1)] = 2
    return out


OUTCOME_NAMES = ["converged, split", "converged, a neuron in S", "stuck: dead neuron", "stuck: other"]
