"""Training loops: full-batch gradient descent (the papers' gradient flow, with small steps),
SGD and Adam, weight decay, learning-rate schedules (including the loss-scaled, norm-adaptive
rates used for separable data), recording callbacks and divergence checks.

The loop keeps everything on the device: the loss of every step goes into a preallocated
tensor, and the host synchronises only at recording and checking points.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from .models import weight_matrices
from .runtime import quiet

LossName = Literal["ce", "mse", "half_mse", "logistic", "exp"]
LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite."""


def _match_shape(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``out`` reshaped to the targets' shape (a one-output model gives ``(n, 1)`` for targets
    ``(n,)``; subtracting them would silently broadcast to ``(n, n)``)."""
    if out.shape == y.shape:
        return out
    if out.numel() == y.numel():
        return out.reshape(y.shape)
    raise ValueError(f"outputs of shape {tuple(out.shape)} do not match targets of shape {tuple(y.shape)}")


def loss_function(loss: LossName | LossFn) -> LossFn:
    """Resolve a loss name to ``f(outputs, targets) -> scalar`` (averaged over samples).

    - ``'ce'``: cross-entropy with integer class targets;
    - ``'mse'``: mean of squared errors over all entries (``F.mse_loss``);
    - ``'half_mse'``: ``mean_i 0.5 * ||f(x_i) - y_i||^2`` (the papers' square loss);
    - ``'logistic'``: ``mean_i log(1 + exp(-y_i f(x_i)))`` for labels ``y_i`` in {-1, +1};
    - ``'exp'``: ``mean_i exp(-y_i f(x_i))`` for labels in {-1, +1}.
    """
    if callable(loss):
        return loss
    if loss == "ce":
        return F.cross_entropy
    if loss == "mse":
        return lambda out, y: F.mse_loss(_match_shape(out, y), y)
    if loss == "half_mse":
        return lambda out, y: 0.5 * (_match_shape(out, y) - y).pow(2).reshape(len(out), -1).sum(1).mean()
    if loss == "logistic":
        return lambda out, y: F.softplus(-y * out.reshape(y.shape)).mean()
    if loss == "exp":
        return lambda out, y: torch.exp(-y * out.reshape(y.shape)).mean()
    raise ValueError(f"unknown loss {loss!r}; use 'ce', 'mse', 'half_mse', 'logistic', 'exp' or a callable")


@dataclass
class History:
    """What a training run recorded. ``loss`` holds the loss of every step (a CPU tensor);
    ``records[name]`` the values of each recorded metric at ``record_steps``."""

    loss: torch.Tensor
    record_steps: list[int] = field(default_factory=list)
    records: dict[str, list[Any]] = field(default_factory=dict)

    def __getitem__(self, name: str) -> list[Any]:
        return self.records[name]

    def stacked(self, name: str) -> torch.Tensor:
        """A recorded metric as one tensor, time first."""
        return torch.stack([torch.as_tensor(v) for v in self.records[name]])


Metric = Callable[[nn.Module], Any]


class Recorder:
    """Record metrics every ``every`` steps (and at step 0 and the last step).

    ``metrics`` maps a name to ``f(model) -> value``; values are detached and moved to the CPU.
    """

    def __init__(self, every: int, metrics: Mapping[str, Metric]) -> None:
        if every < 1:
            raise ValueError(f"every must be >= 1, got {every}")
        self.every = every
        self.metrics = dict(metrics)

    def due(self, step: int, last: int) -> bool:
        return step % self.every == 0 or step == last

    def record(self, model: nn.Module, history: History) -> None:
        with torch.no_grad():
            for name, fn in self.metrics.items():
                value = fn(model)
                if isinstance(value, torch.Tensor):
                    value = value.detach().cpu()
                elif isinstance(value, list | tuple):
                    value = [v.detach().cpu() if isinstance(v, torch.Tensor) else v for v in value]
                history.records.setdefault(name, []).append(value)


def spectra_metric(model: nn.Module) -> list[torch.Tensor]:
    """Singular values of every weight matrix (a :class:`Recorder` metric)."""
    return [torch.linalg.svdvals(W.detach().double()) for W in weight_matrices(model)]


def layer_norms_metric(model: nn.Module) -> torch.Tensor:
    """Frobenius norm of every weight matrix (a :class:`Recorder` metric)."""
    return torch.stack([W.detach().norm() for W in weight_matrices(model)])


Schedule = Callable[[int], float]


def constant(lr: float) -> Schedule:
    return lambda step: lr


def cosine(lr: float, steps: int, final: float = 0.0) -> Schedule:
    """Cosine decay from ``lr`` to ``final * lr`` over ``steps``."""
    return lambda step: lr * (final + (1 - final) * 0.5 * (1 + math.cos(math.pi * min(step, steps) / steps)))


def warmup(schedule: Schedule, warmup_steps: int) -> Schedule:
    """Linear warm-up over ``warmup_steps`` in front of ``schedule``."""
    return lambda step: schedule(step) * min(1.0, (step + 1) / warmup_steps)


def train(
    model: nn.Module,
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    loss: LossName | LossFn = "ce",
    steps: int = 1000,
    lr: float | Schedule = 0.1,
    optimizer: Literal["gd", "sgd", "adam"] = "gd",
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    batch_size: int | None = None,
    loss_scaled_lr: bool = False,
    max_lr: float = float("inf"),
    recorder: Recorder | None = None,
    generator: torch.Generator | None = None,
    check_every: int = 100,
    progress: bool | None = None,
    desc: str = "train",
) -> History:
    """Train ``model`` on ``(X, y)`` and return its :class:`History`.

    ``optimizer='gd'`` is full-batch gradient descent (``batch_size`` must be None): the
    discretisation of gradient flow used throughout the book. ``loss_scaled_lr=True`` uses
    the norm-adaptive step ``lr / L(w_t)`` (capped at ``max_lr``), which keeps the effective
    step size constant as the logistic loss on separable data decays; it is applied as a
    tensor, so no host synchronisation happens per step. ``'sgd'`` and ``'adam'`` use
    ``torch.optim`` with mini-batches of ``batch_size`` drawn with ``generator``.

    Raises :class:`TrainingDiverged` naming the first step whose loss was not finite and its
    learning rate (checked every ``check_every`` steps).
    """
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    if optimizer == "gd" and batch_size is not None:
        raise ValueError("optimizer='gd' is full-batch; use optimizer='sgd' for mini-batches")
    if loss_scaled_lr and optimizer != "gd":
        raise ValueError("loss_scaled_lr is implemented for optimizer='gd' only")
    schedule: Schedule = lr if callable(lr) else constant(float(lr))
    loss_fn = loss_function(loss)
    params = [p for p in model.parameters() if p.requires_grad]
    device = params[0].device
    losses = torch.full((steps + 1,), float("nan"), dtype=torch.float64, device=device)
    history = History(loss=losses)
    opt: torch.optim.Optimizer | None = None
    if optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=schedule(0), momentum=momentum, weight_decay=weight_decay)
    elif optimizer == "adam":
        opt = torch.optim.Adam(params, lr=schedule(0), weight_decay=weight_decay)
    elif optimizer != "gd":
        raise ValueError(f"unknown optimizer {optimizer!r}; use 'gd', 'sgd' or 'adam'")
    show = (not quiet()) if progress is None else progress
    checked = 0

    def check(upto: int) -> None:
        nonlocal checked
        window = losses[checked : upto + 1]
        if not bool(torch.isfinite(window).all()):
            bad = checked + int((~torch.isfinite(window)).nonzero()[0])
            raise TrainingDiverged(
                f"training diverged: the loss is {float(losses[bad])} at step {bad} "
                f"(learning rate {schedule(bad):g}{', loss-scaled' if loss_scaled_lr else ''}). "
                "Lower the learning rate or the initialisation scale."
            )
        checked = upto + 1

    n = len(X)
    for step in tqdm(range(steps + 1), disable=not show, desc=desc, mininterval=1.0):
        if batch_size is None:
            xb, yb = X, y
        else:
            idx = torch.randint(0, n, (batch_size,), generator=generator, device="cpu").to(X.device)
            xb, yb = X[idx], y[idx]
        value = loss_fn(model(xb), yb)
        losses[step] = value.detach()
        if recorder is not None and recorder.due(step, steps):
            history.record_steps.append(step)
            recorder.record(model, history)
        if step % check_every == 0 or step == steps:
            check(step)
        if step == steps:
            break
        grads = torch.autograd.grad(value, params)
        rate = schedule(step)
        if opt is not None:
            for group in opt.param_groups:
                group["lr"] = rate
            for p, g in zip(params, grads):
                p.grad = g
            opt.step()
            continue
        with torch.no_grad():
            step_size: torch.Tensor | float = rate
            if loss_scaled_lr:
                step_size = torch.clamp(rate / value.detach(), max=max_lr)
            for p, g in zip(params, grads):
                if weight_decay:
                    g = g + weight_decay * p
                p.sub_(step_size * g)
    history.loss = losses.cpu()
    return history


@torch.no_grad()
def accuracy(model: nn.Module, X: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of correct predictions: argmax for multi-class outputs, sign for one output
    with labels in {-1, +1}."""
    out = model(X)
    if out.dim() == 1 or out.shape[1] == 1:
        return float((torch.sign(out.reshape(y.shape)) == y).double().mean())
    return float((out.argmax(1) == y).double().mean())


# --------------------------------------------------------------------------------------------
# Norm-adaptive training of stacked bias-free networks, log-spaced recording, and a plateau
# (saddle) detector for loss curves (added with the saddle-to-saddle part).
# --------------------------------------------------------------------------------------------

from collections.abc import Sequence  # noqa: E402  (kept inside this block: appended section)


def log_spaced_steps(total: int, n: int, first: int = 1) -> list[int]:
    """About ``n`` distinct integer steps from 0 to ``total``, log-spaced from ``first`` on.

    Always contains 0 and ``total``; useful for recording spectra over a long run, where the
    early steps change fastest. Fewer than ``n`` steps are returned when rounding merges some.
    """
    if total < 0 or n < 2 or first < 1:
        raise ValueError(f"need total >= 0, n >= 2 and first >= 1, got {total}, {n}, {first}")
    if total <= first:
        return sorted({0, total})
    grid = torch.logspace(math.log10(first), math.log10(total), n - 1, dtype=torch.float64)
    return sorted({0, total, *(int(round(float(v))) for v in grid)})


class ScheduledRecorder(Recorder):
    """A :class:`Recorder` that records at an explicit list of steps (e.g. from
    :func:`log_spaced_steps`) instead of every ``every`` steps; the last step is always recorded."""

    def __init__(self, steps: Sequence[int], metrics: Mapping[str, Metric]) -> None:
        super().__init__(1, metrics)
        if any(int(s) < 0 for s in steps):
            raise ValueError("record steps must be non-negative")
        self.steps = frozenset(int(s) for s in steps)

    def due(self, step: int, last: int) -> bool:
        return step in self.steps or step == last


def norm_adaptive_rate(weights: Sequence[torch.Tensor], eta0: float, radius: float = 1.0
                       ) -> torch.Tensor:
    """The step ``eta0 * (||theta|| / radius)^(2 - L)`` of each stacked network (a tensor: no
    host synchronisation).

    ``weights`` are the ``L`` weight matrices, each with a leading run axis ``(R, out, in)``;
    ``||theta||^2`` sums the squared entries of all of a run's matrices. With ``radius=1`` and
    ``L=6`` this is the rule ``eta0 / ||theta||^4`` of Bantzis, Simon & Jacot (App. B); with
    ``radius=sqrt(L)`` one step moves the direction of a homogeneous loss by ``eta0`` times its
    gradient on the sphere of radius ``sqrt(L)``, whatever the depth (the time change of their
    Sec. 2.1), so that runs of different depths take comparable steps.
    """
    L = len(weights)
    sq = sum(W.detach().pow(2).flatten(1).sum(1) for W in weights)
    return eta0 * (sq.sqrt() / radius) ** (2 - L)


@dataclass
class StackedHistory:
    """What :func:`train_norm_adaptive` recorded. ``loss``: ``(R, steps + 1)`` mini-batch (or
    full-batch) loss of every run at every step; ``rate``: ``(R, steps + 1)`` the step size used;
    ``records[name]``: values of each metric at ``record_steps``."""

    loss: torch.Tensor
    rate: torch.Tensor
    record_steps: list[int] = field(default_factory=list)
    records: dict[str, list[Any]] = field(default_factory=dict)

    def stacked(self, name: str) -> torch.Tensor:
        """A recorded metric as one tensor, time first."""
        return torch.stack([torch.as_tensor(v) for v in self.records[name]])


StackedMetric = Callable[[list[torch.Tensor]], Any]


def train_norm_adaptive(
    weights: Sequence[torch.Tensor],
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    loss: LossName | LossFn = "ce",
    steps: int = 1000,
    eta0: float = 10.0,
    radius: float = 1.0,
    batch_size: int | None = None,
    generator: torch.Generator | None = None,
    record_steps: Sequence[int] = (),
    metrics: Mapping[str, StackedMetric] | None = None,
    step_offset: int = 0,
    check_every: int = 100,
    progress: bool | None = None,
    desc: str = "norm-adaptive",
) -> StackedHistory:
    """(Stochastic) gradient descent with the norm-adaptive step of :func:`norm_adaptive_rate`
    on ``R`` stacked bias-free ReLU networks at once, in place on ``weights`` (the gradient is
    back-propagated by hand through the layers, with ``ReLU'(0) = 0`` as in autograd).

    ``weights[l]`` has shape ``(R, d_{l+1}, d_l)``; the networks share the data ``(X, y)``, which
    stay on their device. With ``batch_size=None`` every step uses the whole set (gradient
    descent); otherwise each run draws its own mini-batch of ``batch_size`` indices (with
    replacement) from ``generator`` on every step. The loss of each run is ``loss`` averaged over
    its batch. ``metrics`` map names to ``f(weights) -> value``, recorded (without gradients) at
    the steps ``record_steps`` (shifted by ``step_offset``, so that a long run split into segments
    records on one global schedule) and at the last step.

    Raises :class:`TrainingDiverged` naming the run, the step and its step size when a loss is
    not finite (checked every ``check_every`` steps).
    """
    Ws = list(weights)
    if any(W.requires_grad for W in Ws):
        raise ValueError("pass plain tensors (requires_grad=False): the gradient is computed by hand")
    if any(W.dim() != 3 or W.shape[0] != Ws[0].shape[0] for W in Ws):
        raise ValueError("weights must be stacked as (R, out, in) with the same R for every layer")
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    if batch_size is not None and not 1 <= batch_size:
        raise ValueError(f"batch_size must be a positive int or None, got {batch_size}")
    R, n, L = Ws[0].shape[0], X.shape[0], len(Ws)
    device = Ws[0].device
    per_run = torch.vmap(loss_function(loss))
    losses = torch.full((R, steps + 1), float("nan"), dtype=torch.float64, device=device)
    rates = torch.full((R, steps + 1), float("nan"), dtype=torch.float64, device=device)
    history = StackedHistory(loss=losses, rate=rates)
    wanted = {int(s) - step_offset for s in record_steps}
    show = (not quiet()) if progress is None else progress
    checked = 0

    def check(upto: int) -> None:
        nonlocal checked
        bad = ~torch.isfinite(losses[:, checked: upto + 1])
        if bool(bad.any()):
            run, offset = (int(v) for v in bad.nonzero()[0])
            at = checked + offset
            raise TrainingDiverged(
                f"training diverged: run {run} has loss {float(losses[run, at])} at step "
                f"{at + step_offset} (step size {float(rates[run, at]):.3g} = eta0 "
                f"{eta0:g} x (||theta||/{radius:g})^(2-L)). Lower eta0 or the initialisation scale.")
        checked = upto + 1

    for step in tqdm(range(steps + 1), disable=not show, desc=desc, mininterval=1.0):
        if batch_size is None:
            xb, yb = X.expand(R, *X.shape), y.expand(R, *y.shape)
        else:
            where = generator.device if generator is not None else torch.device("cpu")
            idx = torch.randint(0, n, (R, batch_size), generator=generator, device=where).to(device)
            xb, yb = X[idx], y[idx]
        if step in wanted or step == steps:
            history.record_steps.append(step + step_offset)
            for name, fn in (metrics or {}).items():
                value = fn(list(Ws))
                history.records.setdefault(name, []).append(
                    value.detach().cpu() if isinstance(value, torch.Tensor) else value)
        # forward, keeping every layer's input; backward by hand through the bias-free ReLU
        # layers (only the loss's derivative at the output uses autograd): about twice as fast
        # as autograd through the whole network for these small matrices
        hs = [xb]
        for i, W in enumerate(Ws):
            z = torch.bmm(hs[-1], W.transpose(1, 2))
            hs.append(torch.relu(z) if i < L - 1 else z)
        out = hs.pop().requires_grad_(True)
        with torch.enable_grad():
            values = per_run(out, yb)
            (delta,) = torch.autograd.grad(values.sum(), out)
        rate = norm_adaptive_rate(Ws, eta0, radius)
        losses[:, step] = values.detach()
        rates[:, step] = rate
        if step % check_every == 0 or step == steps:
            check(step)
        if step == steps:
            break
        step_size = rate.to(Ws[0].dtype).view(-1, 1, 1)
        for i in range(L - 1, -1, -1):
            grad = torch.bmm(delta.transpose(1, 2), hs[i])
            if i > 0:
                delta = torch.bmm(delta, Ws[i]) * (hs[i] > 0)
            Ws[i].sub_(step_size * grad)
    history.loss, history.rate = losses.cpu(), rates.cpu()
    return history


@dataclass
class Plateaus:
    """What :func:`detect_plateaus` found on a loss curve (times in the curve's own steps).

    ``plateaus``: every maximal stretch ``(start, end)`` where the loss falls slower than
    ``plateau_rate`` and which lasts at least ``min_length`` of the run; ``levels``: the mean loss
    on each. ``drops``: stretches ``(start, end)`` where it falls faster than ``drop_rate``, with
    ``drop_sizes`` their decrease. ``saddles``: the plateaus that a drop of at least
    ``min_drop`` of the total decrease follows (a plateau at the end of a run, after which
    nothing happens, is a plateau but not a saddle); ``escapes``: for each saddle, the end of the
    first drop after it (the "after the escape" time). ``drop_share``: the fraction of the
    total decrease that happens inside drops.
    """

    plateaus: list[tuple[float, float]]
    levels: list[float]
    drops: list[tuple[float, float]]
    drop_sizes: list[float]
    saddles: list[tuple[float, float]]
    escapes: list[float]
    drop_share: float

    @property
    def n_saddles(self) -> int:
        return len(self.saddles)


def _runs(mask: torch.Tensor) -> list[tuple[int, int]]:
    """Maximal runs ``[i, j)`` of True in a 1-d boolean tensor."""
    out, start = [], None
    for i, v in enumerate(mask.tolist() + [False]):
        if v and start is None:
            start = i
        elif not v and start is not None:
            out.append((start, i))
            start = None
    return out


def detect_plateaus(steps: Sequence[float] | torch.Tensor, loss: Sequence[float] | torch.Tensor, *,
                    plateau_rate: float = 0.1, drop_rate: float = 1.0, min_length: float = 0.05,
                    min_drop: float = 0.05, smooth: float = 0.02, grid: int = 400,
                    floor: float = 0.0) -> Plateaus:
    """Find plateaus, drops and saddles (plateaus followed by a drop) of a loss curve.

    The curve (values ``loss`` at increasing ``steps``, e.g. the training loss recorded every few
    steps) is interpolated on ``grid`` equally spaced times and smoothed by a running mean over
    ``smooth`` of the run. Its *relative rate* is ``-dloss/dt * T / (loss_0 - floor)``, with ``T``
    the length of the run, ``loss_0`` the first value and ``floor`` the smallest possible loss
    (0 for the cross-entropy): a loss that would fall from its start to the floor at a constant
    speed over the run has rate 1. A plateau is a stretch of rate below ``plateau_rate`` lasting
    at least ``min_length * T``; a drop is a stretch of rate above ``drop_rate``, and its size is
    its decrease as a fraction of ``loss_0 - floor``. A smooth exponential decay has no saddle
    (its rate only decreases); a staircase has one per step. ``drop_share`` is the decrease
    inside drops over the total decrease (first minus last value), at most 1 up to noise.
    """
    t = torch.as_tensor(steps, dtype=torch.float64).flatten()
    v = torch.as_tensor(loss, dtype=torch.float64).flatten()
    if t.numel() != v.numel() or t.numel() < 3:
        raise ValueError("need at least 3 (step, loss) pairs of equal length")
    if not bool((t[1:] > t[:-1]).all()):
        raise ValueError("steps must be strictly increasing")
    if not bool(torch.isfinite(v).all()):
        raise ValueError("the loss curve has non-finite values")
    T = float(t[-1] - t[0])
    u = torch.linspace(float(t[0]), float(t[-1]), grid, dtype=torch.float64)
    # linear interpolation onto the grid
    pos = torch.searchsorted(t, u).clamp(1, t.numel() - 1)
    w = (u - t[pos - 1]) / (t[pos] - t[pos - 1])
    curve = v[pos - 1] + w * (v[pos] - v[pos - 1])
    k = max(1, int(round(smooth * grid)))
    if k > 1:
        pad = torch.cat([curve[:1].expand(k // 2), curve, curve[-1:].expand(k - 1 - k // 2)])
        curve = pad.unfold(0, k, 1).mean(-1)
    scale = float(curve[0]) - floor
    if scale <= 0:
        raise ValueError(f"the first loss value must lie above floor={floor}")
    dt = T / (grid - 1)
    fall = -(curve[1:] - curve[:-1])                      # decrease per grid interval
    # the rate of interval j is the slope over the centred window [j - k/2, j + 1 + k/2]: a
    # derivative over the smoothing scale, not over one interval, so noise does not break plateaus
    lo = (torch.arange(grid - 1) - k // 2).clamp(0, grid - 1)
    hi = (torch.arange(grid - 1) + 1 + k // 2).clamp(0, grid - 1)
    rate = (curve[lo] - curve[hi]) / ((hi - lo).to(torch.float64) * dt) * T / scale
    plateaus, levels = [], []
    for i, j in _runs(rate < plateau_rate):
        if (j - i) * dt >= min_length * T:
            plateaus.append((i, j))
            levels.append(float(curve[i: j + 1].mean()))
    drops = [(i, j) for i, j in _runs(rate > drop_rate)]
    sizes = [float(fall[i:j].sum()) / scale for i, j in drops]
    saddles, escapes = [], []
    for p_start, p_end in plateaus:
        after = [(i, j) for (i, j), s in zip(drops, sizes) if i >= p_end - 1 and s >= min_drop]
        if after:
            saddles.append((p_start, p_end))
            escapes.append(after[0][1])
    total = float(curve[0] - curve[-1])
    share = sum(float(fall[i:j].sum()) for i, j in drops) / total if total > 0 else 0.0
    at = lambda i: float(u[min(i, grid - 1)])
    return Plateaus(
        plateaus=[(at(i), at(j)) for i, j in plateaus], levels=levels,
        drops=[(at(i), at(j)) for i, j in drops], drop_sizes=sizes,
        saddles=[(at(i), at(j)) for i, j in saddles], escapes=[at(j) for j in escapes],
        drop_share=share)
