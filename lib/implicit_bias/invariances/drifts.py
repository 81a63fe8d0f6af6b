"""Relative drifts of the conserved quantities of :mod:`.invariants` along gradient descent:
a summary of one tracked run over time (:func:`drift_summary`) and the step-size sweep at a
fixed gradient-flow time ``T = eta * steps`` (:func:`fixed_time_sweep`), as the chapter
*Conserved quantities of gradient flow* reports them.

Scales: a drift of ``Q_v`` (Eq. 4) is divided by ``max_v (||in_v||^2 + ||out_v||^2)``
(:func:`~.invariants.neuron_scales`), a bound on every ``|Q_v|``; a drift of the Lemma 4 cut
invariants by the largest ``||F||_F^2`` at the end of the run. "Raw" drifts are those of GD as
it is; "corrected" ones have the accumulated Appendix F terms subtracted, so they are round-off
where Lemma 3 (or Lemma 4) applies.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ..ensembles import Ensemble
from ..train import LossFn, LossName
from . import invariants as inv

__all__ = ["DriftSummary", "SweepResult", "drift_summary", "fixed_time_sweep", "one_step_drift"]


@dataclass
class DriftSummary:
    """Relative drifts of one single-member :class:`~.invariants.Tracked` run, one entry per
    record. ``t``: gradient-flow time. ``raw``/``corr``: worst ``|Q_v(t) - Q_v(0)|`` over the units
    where Lemma 3 applies, without/with the Appendix F terms. ``ctrl``: the same (corrected) for
    the other units (``None`` if there are none, e.g. no fixed identity skip). ``loss``: the loss
    at the recorded steps. ``corr_conv``: the worst corrected drift of the convolution channels
    over the run (Lemma 8 per channel; ``None`` without convolutions). ``cut_raw``/``cut_corr``:
    worst drift of the adjacent-cut invariants (Lemma 4; ``None`` with fewer than two cuts)."""

    t: np.ndarray
    raw: np.ndarray
    corr: np.ndarray
    ctrl: np.ndarray | None
    loss: np.ndarray
    corr_conv: float | None
    cut_raw: np.ndarray | None = None
    cut_corr: np.ndarray | None = None


def drift_summary(tr: inv.Tracked, ens: Ensemble) -> DriftSummary:
    """Summarise the run ``tr`` of the one-member ensemble ``ens`` (trained in place, so its
    parameters are the final ones, which set the scale)."""
    groups = inv.neuron_groups(ens.template)
    scale = float(inv.neuron_scales(ens.params, groups, 1)[0])
    cons = [g.name for g in groups if g.conserved]
    ctrl = [g.name for g in groups if not g.conserved]
    worst = lambda names, corr: torch.stack(
        [tr.drift(n, corr)[:, 0].abs().amax(-1) for n in names]).amax(0).numpy() / scale
    convs = [n for n in cons if n.startswith("conv")]
    out = DriftSummary(t=tr.time[:, 0].numpy(), raw=worst(cons, False), corr=worst(cons, True),
                       ctrl=worst(ctrl, True) if ctrl else None, loss=tr.loss[0, tr.steps].numpy(),
                       corr_conv=float(worst(convs, True).max()) if convs else None)
    if tr.cuts is not None and tr.cuts.shape[-1] > 1:
        cscale = float(tr.cuts[-1, 0].max())
        out.cut_raw = tr.cut_drift(False)[:, 0].abs().amax(-1).numpy() / cscale
        out.cut_corr = tr.cut_drift(True)[:, 0].abs().amax(-1).numpy() / cscale
    return out


def one_step_drift(params: inv.Params, grads: inv.Params, groups: list[inv.NeuronGroup],
                   eta: float, scale: float) -> float:
    """``||Q(w - eta g) - Q(w)|| / scale`` over all units of ``groups`` (Euclidean norm): the
    drift of one GD step, ``eta^2 (||g_in||^2 - ||g_out||^2)`` where Euler's identity holds."""
    q0 = inv.neuron_invariants(params, groups)
    q1 = inv.neuron_invariants({k: params[k] - eta * grads[k] for k in params}, groups)
    return float(torch.cat([q1[g.name] - q0[g.name] for g in groups]).norm()) / scale


@dataclass
class SweepResult:
    """Per step size ``eta_k`` (arrays of length ``len(etas)``), relative drifts of
    :func:`fixed_time_sweep`. ``step``: one GD step from the initialisation, units where Lemma 3
    applies. ``raw``: their total drift at time ``T`` (norm over units). ``corr``: the worst
    corrected drift at ``T``. ``loss``: the final loss. ``ctrl_step``/``ctrl``: one-step drift and
    corrected total (norm) of the other units, ``None`` if there are none."""

    step: np.ndarray
    raw: np.ndarray
    corr: np.ndarray
    loss: np.ndarray
    ctrl_step: np.ndarray | None = None
    ctrl: np.ndarray | None = None


def fixed_time_sweep(make: Callable[[], nn.Module], X: torch.Tensor, y: torch.Tensor,
                     etas: torch.Tensor, stops: torch.Tensor,
                     loss: LossName | LossFn = "logistic") -> SweepResult:
    """Train ``len(etas)`` copies of ``make()`` (it must return the same initial weights each
    call) in one batched run, copy ``k`` with step ``etas[k]`` for ``stops[k]`` steps (so at a
    fixed time ``T = eta * steps`` when ``stops = T / etas``), and measure the drifts of
    :class:`SweepResult`, each relative to ``max_v (||in_v||^2 + ||out_v||^2)`` (of the initial
    weights for one step, of each copy's final weights for the totals)."""
    ens = Ensemble.from_models([make() for _ in range(len(etas))])
    model = make()
    groups = inv.neuron_groups(model)
    cons = [g for g in groups if g.conserved]
    ctrl = [g for g in groups if not g.conserved]
    p0 = {k: v.detach() for k, v in model.named_parameters()}
    g0 = inv.param_grads(model, X, y, loss=loss)
    scale0 = float(inv.neuron_scales(p0, groups))
    tr = inv.train_tracked(ens, X, y, loss=loss, steps=int(stops.max()), lr=etas,
                           stop_after=stops, record_every=int(stops.max()))
    scale = inv.neuron_scales(ens.params, groups, 1).cpu()
    total = lambda sel, corr: (torch.cat([tr.drift(g.name, corr)[-1] for g in sel], -1)
                               .norm(dim=-1) / scale).numpy()
    worst = lambda sel: (torch.cat([tr.drift(g.name)[-1] for g in sel], -1).abs().amax(-1)
                         / scale).numpy()
    steps = lambda sel: np.array([one_step_drift(p0, g0, sel, float(e), scale0) for e in etas])
    out = SweepResult(step=steps(cons), raw=total(cons, False), corr=worst(cons),
                      loss=tr.loss[:, -1].numpy())
    if ctrl:
        out.ctrl_step, out.ctrl = steps(ctrl), total(ctrl, True)
    return out
