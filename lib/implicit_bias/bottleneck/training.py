"""Adam on many ReLU MLPs at once, for the depth sweeps of Figure 1 at the paper's ridge.

Full-batch gradient descent removes a direction that the fit does not use at the rate
``2 eta lambda`` per step: at ``lambda = 1e-3`` and the ``Theta(1/L)`` rates that keep it stable
that is tens of thousands of steps per depth, beyond a CPU budget (the depth sweep of the GD
engine, :mod:`.sweeps`, therefore runs at a larger ``lambda``). Adam normalises each
coordinate's step, so the same objective reaches its low-norm structure in a few thousand steps.
The paper does not say which optimiser it used.

:func:`train_adam` minimises ``(1/2) (C(f_theta) + lambda ||theta||^2)`` with ``C = (1/n) sum_i
||f(x_i) - y_i||^2`` (biases trained and penalised) for every member of an
:class:`~implicit_bias.ensembles.Ensemble` of :class:`~implicit_bias.models.MLP` (ReLU) at once:
the penalty is added to the gradient (coupled L2, so the stationary points are those of the
regularised objective, unlike AdamW), the learning rate follows a cosine from ``lr`` to
``lr_end``, and ``lambda`` may be switched on after ``warmup`` steps (so that a deep network
leaves the neighbourhood of ``theta = 0`` before weight decay acts). Forward and backward are
written with batched matrix products on the stacked weights (features first, as in the toolkit's
stacked engine), and Adam's update is torch's ``foreach`` implementation, which acts coordinate
by coordinate and so treats every member as if it were trained alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from .. import ensembles, models

D = torch.float64


@dataclass
class AdamRun:
    """The members of one ensemble after :func:`train_adam`, moved to the CPU in float64.

    ``weights[l]`` is ``(E, d_l, d_{l-1})`` and ``biases[l]`` is ``(E, d_l)``; ``steps`` are the
    recorded steps, ``sqnorm`` and ``cost`` (``(records, E)``) the squared parameter norm and the
    training cost ``C`` there (before the step's update)."""

    weights: list[torch.Tensor]
    biases: list[torch.Tensor]
    steps: list[int]
    sqnorm: torch.Tensor
    cost: torch.Tensor

    @property
    def size(self) -> int:
        return self.weights[0].shape[0]

    @property
    def depth(self) -> int:
        return len(self.weights)

    def member(self, i: int) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """``(weights, biases)`` of member ``i``."""
        return [W[i] for W in self.weights], [b[i] for b in self.biases]

    def tail_change(self, fraction: float = 0.2) -> torch.Tensor:
        """Relative change ``|s_end - s_start| / s_end`` of ``||theta||^2`` over the last
        ``fraction`` of the training steps, per member (the recorded step closest to the start of
        that window is used): the convergence criterion of the depth sweeps."""
        last = self.steps[-1]
        start = last - fraction * last
        j = min(range(len(self.steps)), key=lambda i: abs(self.steps[i] - start))
        end = self.sqnorm[-1]
        return (end - self.sqnorm[j]).abs() / end.clamp_min(1e-30)


def cosine_rate(step: int, steps: int, lr: float, lr_end: float) -> float:
    """``lr_end + (lr - lr_end) (1 + cos(pi t / (steps - 1))) / 2``: from ``lr`` at the first step
    to ``lr_end`` at the last."""
    return lr_end + 0.5 * (lr - lr_end) * (1 + math.cos(math.pi * step / max(1, steps - 1)))


def train_adam(ens: ensembles.Ensemble, X: torch.Tensor, Y: torch.Tensor, *, lam: float | torch.Tensor,
               steps: int, lr: float = 2e-3, lr_end: float = 2e-5, warmup: int = 0, record_every: int = 100,
               betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> AdamRun:
    """Train every member of ``ens`` (an ensemble of ReLU :class:`~implicit_bias.models.MLP`)
    with Adam on ``(1/2) (C + lambda ||theta||^2)``; see the module docstring. ``lam`` is one
    ridge or one per member (``(E,)``); it is 0 for the first ``warmup`` steps. ``X`` ``(n,
    d_in)`` and ``Y`` ``(n, d_out)`` are shared by all members (moved to the ensemble's device and
    dtype). The ensemble's parameters are updated in place.

    All parameters live in one flat buffer (the weights and biases are views into it), so Adam's
    update is a handful of element-wise operations per step whatever the depth."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    act = getattr(ens.template, "act", None)
    if not isinstance(act, torch.nn.ReLU):
        raise ValueError("train_adam trains ReLU MLPs (implicit_bias.models.MLP with activation='relu')")
    W0, b0 = models.mlp_weights_biases(ens.params)
    if any(f"layers.{l}.bias" not in ens.params for l in range(len(W0))):
        raise ValueError("train_adam needs an MLP with biases")
    E, L = ens.size, len(W0)
    dev, dt = ens.device, ens.dtype
    lam_t = torch.as_tensor(lam, dtype=dt, device=dev)
    lam_t = lam_t.expand(E) if lam_t.dim() == 0 else lam_t
    if lam_t.shape != (E,):
        raise ValueError(f"lam must be a float or have shape ({E},), got {tuple(lam_t.shape)}")
    originals = [*W0, *b0]
    total = sum(p.numel() for p in originals)
    flat = torch.empty(total, dtype=dt, device=dev)
    grad = torch.zeros_like(flat)
    lam_flat = torch.empty_like(flat)
    views, gviews, offset = [], [], 0
    for p in originals:                                      # layer blocks (E, ...), member axis first
        m = p.numel()
        views.append(flat[offset:offset + m].view_as(p))
        gviews.append(grad[offset:offset + m].view_as(p))
        lam_flat[offset:offset + m].view(E, -1).copy_(lam_t.unsqueeze(1).expand(E, m // E))
        views[-1].copy_(p)
        offset += m
    W, b, gW, gb = views[:L], views[L:], gviews[:L], gviews[L:]
    XT = X.to(dev, dt).T.contiguous()                     # (d_in, n): features first
    YT = Y.to(dev, dt).T.contiguous()
    n = XT.shape[1]
    m1, m2 = torch.zeros_like(flat), torch.zeros_like(flat)
    b1, b2 = betas
    rec_steps, rec_sq, rec_cost = [], [], []

    def member_sqnorm() -> torch.Tensor:
        return sum(v.reshape(E, -1).pow(2).sum(1) for v in views)

    with torch.no_grad():
        for t in range(steps):
            H, Z, h = [XT], [], XT
            for l in range(L):
                if l == 0:                                               # shared inputs: one product
                    z = torch.addmm(b[0].reshape(-1, 1), W[0].reshape(-1, W[0].shape[-1]), XT).view(E, -1, n)
                else:
                    z = torch.baddbmm(b[l].unsqueeze(-1), W[l], h)      # (E, d_l, n)
                Z.append(z)
                if l < L - 1:
                    h = torch.relu(z)
                    H.append(h)
            R = Z[-1] - YT
            if t % record_every == 0 or t == steps - 1:
                rec_steps.append(t)
                rec_sq.append(member_sqnorm().to("cpu", D))
                rec_cost.append(R.pow(2).sum(1).mean(-1).to("cpu", D))
            G = R / n                                                    # d/df of (1/2) C
            for l in range(L - 1, -1, -1):
                if l == 0:
                    torch.mm(G.reshape(-1, n), XT.T, out=gW[0].view(-1, XT.shape[0]))
                else:
                    torch.bmm(G, H[l].transpose(1, 2), out=gW[l])
                torch.sum(G, -1, out=gb[l])
                if l > 0:
                    G = torch.bmm(W[l].transpose(1, 2), G).mul_(Z[l - 1] > 0)
            if t >= warmup:
                grad.addcmul_(lam_flat, flat)                            # coupled L2: + lambda theta
            m1.mul_(b1).add_(grad, alpha=1 - b1)
            m2.mul_(b2).addcmul_(grad, grad, value=1 - b2)
            rate = cosine_rate(t, steps, lr, lr_end)
            denom = (m2 / (1 - b2 ** (t + 1))).sqrt_().add_(eps)
            flat.addcdiv_(m1, denom, value=-rate / (1 - b1 ** (t + 1)))
        for p, v in zip(originals, views):
            p.copy_(v)
    return AdamRun([w.detach().to("cpu", D) for w in W], [v.detach().to("cpu", D) for v in b], rec_steps,
                   torch.stack(rec_sq), torch.stack(rec_cost))


def build_mlps(depth: int, width: int, seeds: Sequence[int], init_scales: float | Sequence[float] = 1.0,
               d_in: int = 20, d_out: int = 20, dtype: torch.dtype = torch.float32,
               device: torch.device | str = "cpu") -> ensembles.Ensemble:
    """An ensemble of ReLU MLPs of one depth, member ``i`` drawn with ``torch.manual_seed(seeds[i])``
    from PyTorch's default initialisation times ``init_scales[i]`` (weights and biases; a float
    applies to every member). Scale 1 gives weight variance ``1 / (3 fan_in)``, ``sqrt(3)`` LeCun's
    ``1 / fan_in`` and ``sqrt(6)`` He's ``2 / fan_in`` (uniform laws)."""
    scales = [float(init_scales)] * len(seeds) if isinstance(init_scales, (int, float)) else list(init_scales)
    if len(scales) != len(seeds):
        raise ValueError(f"{len(seeds)} seeds but {len(scales)} init scales")
    nets = []
    for s, c in zip(seeds, scales):
        torch.manual_seed(s)
        nets.append(models.MLP(d_in, d_out, width, depth, init_scale=c).to(device=device, dtype=dtype))
    return ensembles.Ensemble.from_models(nets)


@dataclass(frozen=True)
class Member:
    """One network of a sweep: its seed, its initialisation scale (times PyTorch's default) and
    its ridge ``lambda``."""

    seed: int
    init_scale: float
    lam: float


def train_depths(X: torch.Tensor, Y: torch.Tensor, depths: Sequence[int],
                 members: Callable[[int], Sequence[Member]], width: int, steps: int, *, lr: float = 2e-3,
                 lr_end: float = 2e-5, warmup: int = 0, record_every: int = 100, dtype: torch.dtype = torch.float32,
                 device: torch.device | str = "cpu", use_cache: bool = False,
                 name: str = "bottleneck-adam-sweep") -> dict[int, AdamRun]:
    """:func:`train_adam` at every depth, the networks ``members(depth)`` of one depth trained as one
    ensemble (:func:`build_mlps`; each member its own seed, initialisation scale and ridge). With
    ``use_cache`` every depth is stored under a key of its settings and of the data
    (:mod:`implicit_bias.cache`), so an interrupted run resumes at the first depth not done."""
    from .. import cache
    from .sweeps import _fingerprint

    data_key = _fingerprint(X, Y)
    runs: dict[int, AdamRun] = {}
    for L in depths:
        ms = list(members(L))

        def compute(L: int = L, ms: list[Member] = ms) -> AdamRun:
            ens = build_mlps(L, width, [m.seed for m in ms], [m.init_scale for m in ms], X.shape[1], Y.shape[1],
                             dtype=dtype, device=device)
            lam = torch.tensor([m.lam for m in ms], dtype=dtype)
            return train_adam(ens, X, Y, lam=lam, steps=steps, lr=lr, lr_end=lr_end, warmup=warmup,
                              record_every=record_every)

        config = dict(depth=L, members=[(m.seed, m.init_scale, m.lam) for m in ms], width=width, steps=steps, lr=lr,
                      lr_end=lr_end, warmup=warmup, record_every=record_every, dtype=str(dtype), data=data_key)
        runs[L] = cache.cached(f"{name}-L{L}", config, compute, enabled=use_cache)
    return runs


def certify(run: AdamRun, X: torch.Tensor, Y: torch.Tensor, lam: float, *, lr: float, window: int,
            tol: float = 0.01, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Relative change of ``||theta||^2`` per member when a copy of ``run`` is trained on further for
    ``window`` steps with :func:`train_adam` at the **fixed** rate ``lr`` (no decay, fresh moments,
    the ridge ``lam`` on from the first step): a member whose change is at most ``tol`` is certified
    stationary. A schedule that decayed the rate before the network reached its minimum cannot pass
    this test, unlike the change over the last steps of the schedule itself.

    Why not plain gradient descent (:func:`implicit_bias.convergence.stationarity`): the minima Adam
    finds are too sharp for a fixed gradient-descent rate large enough to move in a short window
    (at 0.1 gradient descent leaves them), and the gradient residual ``||grad|| / (lambda
    ||theta||)`` of a ReLU network with a ridge does not vanish at its minimum (the minimum sits on
    activation kinks; gradient descent polishing leaves it near 1). Adam at its peak rate moves flat
    directions at a rate that does not depend on the size of their gradient, which is what the
    slow decay of unused directions needs."""
    L, E = run.depth, run.size
    width, d_in, d_out = run.weights[0].shape[1], run.weights[0].shape[2], run.weights[-1].shape[1]
    ens = build_mlps(L, width, list(range(E)), 1.0, d_in, d_out, dtype=dtype)
    W0, b0 = models.mlp_weights_biases(ens.params)
    with torch.no_grad():
        for p, q in zip([*W0, *b0], [*run.weights, *run.biases]):
            p.copy_(q)
    start = models.param_sqnorm([*run.weights, *run.biases], batch_dims=1)
    cont = train_adam(ens, X, Y, lam=lam, steps=window, lr=lr, lr_end=lr, warmup=0, record_every=window)
    end = models.param_sqnorm([*cont.weights, *cont.biases], batch_dims=1)
    return (end - start).abs() / start
