"""How much a loss curve looks like a staircase, measured without reference to the run's length or
scale, and the per-neuron balance that gradient flow conserves.

- :func:`staircase_share`: the share of the loss decrease that happens inside *short* drops on a
  logarithmic step axis. A saddle-to-saddle curve falls in sudden drops between long plateaus:
  on a log-step axis each drop occupies a short stretch (an escape that takes ``dt`` steps at step
  ``t`` spans ``dt / (t ln 10)`` decades). A smooth decay spreads its decrease over a decade or
  more (an exponential ``exp(-t / T)`` falls faster than twice its average rate only over about
  0.8 decade). The measure is unchanged when the step axis is rescaled (a step size multiplied by
  ``c`` shifts the curve on the log axis) and when the loss is shifted or rescaled.
- :func:`plateaus_abs`: plateaus with an *absolute* minimum length in steps (not a share of the
  run), so that runs of different lengths or depths are judged alike; a wrapper of
  :func:`implicit_bias.train.detect_plateaus`.
- :func:`neuron_imbalance`: ``||W_{l+1}[:, i]||^2 - ||W_l[i, :]||^2`` for every hidden neuron,
  conserved by gradient flow on any bias-free ReLU network ("weak balancedness"); one step of
  gradient descent with step ``eta`` changes it by exactly ``eta^2 (||g_{l+1}[:, i]||^2 -
  ||g_l[i, :]||^2)``, so it drifts by ``O(eta^2)`` per step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .. import train


@dataclass
class Staircase:
    """Result of :func:`staircase_share`. ``share``: decrease inside short drops over the total
    decrease (0 for a curve that does not decrease); ``drops``: every drop as ``(start, end)`` in
    decades of steps (log10), with ``sizes`` its decrease over the total; ``short``: which drops
    count."""

    share: float
    drops: list[tuple[float, float]]
    sizes: list[float]
    short: list[bool]


def staircase_share(steps: Sequence[float] | torch.Tensor, loss: Sequence[float] | torch.Tensor, *,
                    grid: int = 240, smooth: float = 0.05, rate: float = 2.0, short: float = 0.3) -> Staircase:
    """The share of the total decrease of ``loss`` (recorded at increasing ``steps``) that happens
    inside drops shorter than ``short`` decades, on a log10 axis of steps from the first positive
    recorded step to the last (module docstring). The curve is interpolated on ``grid`` equally
    spaced points of that axis and smoothed by a running mean over ``smooth`` decades; a *drop* is
    a maximal stretch where it falls faster than ``rate`` times its average rate over the axis."""
    t = torch.as_tensor(steps, dtype=torch.float64).flatten()
    v = torch.as_tensor(loss, dtype=torch.float64).flatten()
    if t.numel() != v.numel():
        raise ValueError("steps and loss must have the same length")
    keep = t > 0
    t, v = t[keep], v[keep]
    if t.numel() < 3 or not bool((t[1:] > t[:-1]).all()):
        raise ValueError("need at least 3 increasing positive steps")
    u = torch.log10(t)
    axis = torch.linspace(float(u[0]), float(u[-1]), grid, dtype=torch.float64)
    pos = torch.searchsorted(u, axis).clamp(1, u.numel() - 1)
    w = (axis - u[pos - 1]) / (u[pos] - u[pos - 1])
    curve = v[pos - 1] + w * (v[pos] - v[pos - 1])
    span = float(axis[-1] - axis[0])
    du = span / (grid - 1)
    k = max(1, int(round(smooth / du)))
    if k > 1:
        pad = torch.cat([curve[:1].expand(k // 2), curve, curve[-1:].expand(k - 1 - k // 2)])
        curve = pad.unfold(0, k, 1).mean(-1)
    total = float(curve[0] - curve[-1])
    if total <= 0:
        return Staircase(0.0, [], [], [])
    fall = -(curve[1:] - curve[:-1])                                  # decrease per interval
    fast = fall / du > rate * total / span
    drops, sizes, is_short = [], [], []
    for i, j in _runs(fast.tolist()):
        start, end = float(axis[i]), float(axis[j])
        drops.append((start, end))
        sizes.append(float(fall[i:j].sum()) / total)
        is_short.append(end - start <= short)
    share = sum(s for s, ok in zip(sizes, is_short) if ok)
    return Staircase(share, drops, sizes, is_short)


def plateaus_abs(steps: Sequence[float] | torch.Tensor, loss: Sequence[float] | torch.Tensor, *,
                 min_steps: float, max_fall: float = 0.01, min_drop: float = 0.05) -> train.Plateaus:
    """Plateaus of at least ``min_steps`` steps, on which the loss falls by less than ``max_fall``
    of its first value per ``min_steps`` steps; drops fall faster than that, and a saddle is a
    plateau followed by a drop of at least ``min_drop`` of the first value. The thresholds are
    absolute (steps and loss units), whatever the length of the run: the same call judges a short
    and a long run alike. Smoothing over ``min_steps / 5`` steps."""
    t = torch.as_tensor(steps, dtype=torch.float64).flatten()
    T = float(t[-1] - t[0])
    if min_steps <= 0 or min_steps > T:
        raise ValueError(f"min_steps must be in (0, {T}], got {min_steps}")
    per_run = max_fall * T / min_steps                                  # detect_plateaus' unit: T
    return train.detect_plateaus(steps, loss, plateau_rate=per_run, drop_rate=per_run, min_length=min_steps / T,
                                 min_drop=min_drop, smooth=min(0.2 * min_steps / T, 0.5))


def neuron_imbalance(weights: Sequence[torch.Tensor]) -> torch.Tensor:
    """``||W_{l+1}[:, i]||^2 - ||W_l[i, :]||^2`` for the hidden layers ``l = 1..L-1``: shape
    ``(..., L-1, width)`` for stacked weights ``(..., out, in)`` of equal hidden widths."""
    out = [weights[l + 1].pow(2).sum(-2) - weights[l].pow(2).sum(-1) for l in range(len(weights) - 1)]
    return torch.stack(out, -2)


def relative_imbalance_drift(before: Sequence[torch.Tensor], after: Sequence[torch.Tensor]) -> torch.Tensor:
    """The largest change of a neuron's imbalance between two sets of weights, over the mean
    squared norm of a hidden neuron's incoming weights at ``after``: ``(...)`` per stacked run. 0
    under gradient flow; of order ``eta^2`` per step under gradient descent."""
    change = (neuron_imbalance(after) - neuron_imbalance(before)).abs().flatten(-2).amax(-1)
    scale = torch.stack([W.pow(2).sum(-1).mean(-1) for W in after[:-1]], -1).mean(-1)
    return change / scale


def junction_imbalance_drift(before: Sequence[torch.Tensor], after: Sequence[torch.Tensor]) -> torch.Tensor:
    """Weak balancedness junction by junction: for the hidden layer between ``W_l`` and
    ``W_{l+1}`` (``l = 1..L-1``), the largest change of a neuron's imbalance
    ``||W_{l+1}[:, i]||^2 - ||W_l[i, :]||^2`` between ``before`` and ``after``, over the mean
    squared norm of that layer's incoming weights ``||W_l[i, :]||^2`` at ``after``: shape
    ``(..., L-1)``. Unlike :func:`relative_imbalance_drift`, which keeps only the largest change
    over all junctions, this says where the drift happens."""
    change = (neuron_imbalance(after) - neuron_imbalance(before)).abs().amax(-1)
    scale = torch.stack([W.pow(2).sum(-1).mean(-1) for W in after[:-1]], -1)
    return change / scale


def _runs(mask: list[bool]) -> list[tuple[int, int]]:
    """Maximal runs ``[i, j)`` of True."""
    out, start = [], None
    for i, v in enumerate([*mask, False]):
        if v and start is None:
            start = i
        elif not v and start is not None:
            out.append((start, i))
            start = None
    return out
