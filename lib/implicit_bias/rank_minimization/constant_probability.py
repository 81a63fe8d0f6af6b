"""The checks and figures of the page on Theorem 3 of Timor, Vardi & Shamir (2023): Lemma 6's
intervals on many runs, Lemmas 10-12 along recorded trajectories, the split-start decomposition
of ``P(E)`` near 180 degrees, and the two figures of stable rank and of the event ``E`` against
the ratio of the layers' initial norms.

Runs are those of :func:`two_neuron.simulate` (run axis first, samples as columns); angles are in
radians unless a name says degrees.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from .. import plotting
from . import two_neuron as tn

DEG = 180 / np.pi


def lemma6_check(W0: torch.Tensor, W: torch.Tensor, angle: torch.Tensor, end_split: torch.Tensor,
                 converged: torch.Tensor, theta: torch.Tensor) -> dict[str, float | int]:
    """Lemma 6's intervals on converged runs from ``W0`` to ``W`` (final row angle ``angle``).

    Runs that end split must have their row angle in ``[pi - theta, theta + 2 arcsin(2r/sqrt3))``
    (``r`` the larger initial row norm) and their row norms in the lemma's norm interval, with no
    tolerance. Returns ``used`` (largest share of the angle slack above ``theta`` used, < 1),
    ``low`` (smallest margin to the lower angle end, >= 0), ``norm`` (smallest margin to the norm
    interval, > 0), ``violations`` (runs ending split outside either interval) and ``outside_S``
    (fraction of the converged runs ending with a neuron in S, not covered by the lemma, that are
    outside the angle interval: a negative control).
    """
    r0 = W0.cpu().norm(dim=-1)                                          # ||w_i(0)||, (runs, 2)
    lo, hi = tn.lemma6_angle_interval(theta, r0.max(-1).values)
    es = end_split
    nlo, nhi = tn.lemma6_norm_interval(theta, r0)
    nrm = W.cpu().norm(dim=-1)
    outside_angle = (angle < lo) | (angle >= hi)
    bad = outside_angle | ((nrm <= nlo) | (nrm >= nhi)).any(-1)
    return dict(used=float(((angle - theta) / (hi - theta))[es].max()),
                low=float((angle - lo)[es].min()),
                norm=float(torch.minimum(nrm - nlo, nhi - nrm)[es].min()),
                violations=int(bad[es].sum()),
                outside_S=float(outside_angle[converged & ~es].double().mean()))


def lemmas10_12_along(W0: torch.Tensor, V0: torch.Tensor, X: torch.Tensor, Y: torch.Tensor, *,
                      lr: float, steps: int, every: int) -> dict[str, float | int]:
    """Simulate runs recording ``W, V`` every ``every`` steps and measure Lemmas 10-12 along them.

    Neuron ``i`` serves the input it is active on at the start (:func:`two_neuron.served_pairs`).
    Returns ``rise`` (largest increase of a per-sample loss between records; Lemma 10 says <= 0),
    ``off_span`` (largest part of ``v_i`` off ``span(y_i)``, relative to ``|v_i|``; Lemma 11 says
    0), ``drop`` (smallest change of ``w_i . x_i`` between records; Lemma 12 says >= 0),
    ``dropped_frac`` (fraction of runs where ``w_i . x_i`` decreases by more than 1e-12 at some
    record) and ``runs``.
    """
    tr = tn.simulate(W0, V0, X, Y, lr=lr, steps=steps, check_every=every, record=True)
    TW, TV = tr.trace_W.cpu(), tr.trace_V.cpu()                         # (records, runs, 2, 2)
    Xc, Yc = X.cpu(), Y.cpu()
    phi = TV @ torch.relu(TW @ Xc) - Yc                                 # columns: phi_j
    Lj = 0.5 * phi.pow(2).sum(-2)                                       # (records, runs, 2)
    xj, yj = tn.served_pairs(W0.cpu(), Xc, Yc)                          # (runs, neuron, 2)
    v = TV.transpose(-2, -1)                                            # (records, runs, neuron, 2)
    cross = (v[..., 0] * yj[..., 1] - v[..., 1] * yj[..., 0]).abs()     # 2-d cross product with y_j
    p = (TW * xj).sum(-1)                                               # w_i . x_j over time
    step = p[1:] - p[:-1]
    return dict(rise=float((Lj[1:] - Lj[:-1]).max()),
                off_span=float((cross[1:] / v[1:].norm(dim=-1).clamp(min=1e-300)).max()),
                drop=float(step.min()), runs=W0.shape[0],
                dropped_frac=float((step.min(0).values.min(-1).values < -1e-12).double().mean()))


def split_decomposed_estimate(in_E: torch.Tensor, split: torch.Tensor, bound: float,
                              level: float = 0.99) -> dict[str, float]:
    """``P(E)`` from runs whose starts are split with probability ``bound`` exactly.

    ``P(E) = bound * P(E | split) + (1 - bound) * P(E | not split)``: the first weight is exact,
    the two conditional frequencies are estimated from the runs (``in_E``, ``split``: one entry
    per run), each with the upper end of a two-sided ``level`` Wilson interval (a one-sided
    ``(1 + level) / 2`` limit), so that ``upper`` is a one-sided ``level`` upper limit of ``P(E)``
    (union bound). Also ``raw`` (the plain frequency of ``E``) and ``dead`` (the fraction of split
    starts that end outside ``E``).
    """
    n, ns = int(in_E.numel()), int(split.sum())
    ks, k_rest = int((in_E & split).sum()), int((in_E & ~split).sum())
    u_split = tn.binomial_interval(ks, ns, level)[1]
    u_rest = (1 - bound) * tn.binomial_interval(k_rest, n - ns, level)[1]
    return dict(p=bound * ks / ns + (1 - bound) * k_rest / (n - ns), upper=bound * u_split + u_rest,
                raw=float(in_E.double().mean()), dead=1 - ks / ns, split=ns)


def plot_srank_against_angle(axes: Sequence[Any], sweep: Mapping[str, Mapping[str, torch.Tensor]],
                             theta: torch.Tensor, cutoff: float) -> None:
    """Stable rank at the end against the input angle, one panel per initialisation kind of
    ``sweep`` (``"thm3"``, ``"paper"``; entries ``conv``, ``init_split``, ``end_split``, ``sr``),
    with the split runs' closed form ``2/(1+|cos theta|)`` and the cut-off."""
    tt = np.linspace(90, 180, 400)
    for ax, kind, title in ((axes[0], "thm3", r"Theorem 3 init ($v(0)=0$)"), (axes[1], "paper", "paper's init")):
        S = sweep[kind]
        groups = ((S["conv"] & S["init_split"], "starts and ends split"),
                  (S["end_split"] & ~S["init_split"], "ends split, other start"),
                  (S["conv"] & ~S["end_split"], r"ends with a neuron in $\mathcal{S}$"))
        for j, (sel, label) in enumerate(groups):
            ax.scatter(theta[sel] * DEG, S["sr"][sel], s=3 if j == 0 else 5, color=plotting.color((0, 2, 1)[j]),
                       label=label)
        ax.plot(tt, 2 / (1 + np.abs(np.cos(tt / DEG))), color="k", lw=1, label=r"$2/(1+|\cos\theta|)$")
        ax.axhline(cutoff, color="k", ls=":", lw=1)
        ax.set_xlabel(r"input angle $\theta$ (degrees)")
        ax.set_title(title)
    axes[0].set_ylabel("stable rank of $W$ at the end")
    axes[0].legend(loc="upper right", markerscale=3, fontsize=7)


def plot_event_against_ratio(axes: Sequence[Any], ratios: Sequence[float], names: Sequence[str],
                             p: np.ndarray, ci: np.ndarray, bound: np.ndarray, lost: np.ndarray,
                             n_split: np.ndarray, rule_dies: np.ndarray) -> None:
    """Left: frequency of ``E`` minus the bound with its intervals (``p``, ``ci``: (groups,
    ratios) and (groups, ratios, 2)) against the ratio ``|v_i(0)| / |w_i(0)|`` (0 drawn at the
    left end of the log axis), one line per dataset of ``names``. Right: the fraction of split
    starts that end outside ``E`` (``lost / n_split``) and the fraction the linearised rule says
    die (``rule_dies / n_split``)."""
    G = len(names)
    xr = np.array([r if r > 0 else 0.003 for r in ratios])
    ticks = ["0"] + [f"{r:g}" for r in ratios[1:]] if ratios[0] == 0 else [f"{r:g}" for r in ratios]
    ax = axes[0]
    for g in range(G):
        ax.errorbar(xr * (1 + 0.04 * (g - G / 2)), p[g] - bound[g], yerr=[p[g] - ci[g, :, 0], ci[g, :, 1] - p[g]],
                    fmt="o-", ms=3, lw=1, capsize=2, color=plotting.color(g), label=names[g])
    ax.axhline(0, color="k", lw=1)
    ax.set_ylabel(r"frequency of $E$ minus the bound $2(\theta/2\pi)^2$")
    ax.legend(fontsize=7, loc="lower left")
    ax = axes[1]
    for g in range(G):
        ax.plot(xr, lost[g] / n_split[g], "o-", ms=3, lw=1, color=plotting.color(g))
        ax.plot(xr, rule_dies[g] / n_split[g], ":", lw=1, color=plotting.color(g))
    ax.plot([], [], "k:", lw=1, label=r"rule: $w_i(0)^\top x_j+v_i(0)^\top y_j<0$")
    ax.plot([], [], "ko-", ms=3, lw=1, label="measured")
    ax.set_ylabel("split starts that end outside $E$")
    ax.legend(fontsize=7, loc="upper left")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xticks(xr, ticks)
        ax.minorticks_off()
        ax.set_xlabel(r"$\|v_i(0)\|\,/\,\|w_i(0)\|$")


def claim_statistics(sweep: Mapping[str, Mapping[str, torch.Tensor]], theta: torch.Tensor, split_value: torch.Tensor,
                     cutoff: float = 1.05, wide_deg: float = 160, narrow_deg: float = 135,
                     margin: float = 0.05) -> tuple[float, float, float]:
    """The three statistics of the page's stable-rank claims at one analysis setting, each the
    smaller over the initialisation kinds of ``sweep`` (entries ``sr``, ``conv``, ``end_split``):
    the fraction of converged runs with ``theta > wide_deg`` whose stable rank is below
    ``cutoff``; the smallest stable rank of runs ending split with ``theta <= narrow_deg``; the
    fraction of converged runs ending with a neuron in S more than ``margin`` below
    ``split_value`` (``2/(1+|cos theta|)`` per run)."""
    wide = min(float((S["sr"] < cutoff)[(theta > wide_deg / DEG) & S["conv"]].double().mean()) for S in sweep.values())
    narrow = min(float(S["sr"][(theta <= narrow_deg / DEG) & S["end_split"]].min()) for S in sweep.values())
    lower = min(float(((S["sr"] - split_value)[S["conv"] & ~S["end_split"]] < -margin).double().mean())
                for S in sweep.values())
    return wide, narrow, lower


def lemma6_srank_floor(theta: float, r0: float, grid: int = 201) -> float:
    """The smallest stable rank of ``W`` that Lemma 6's intervals allow for runs ending split at
    input angle ``theta`` (radians) from rows of norm at most ``r0``: both row norms anywhere in
    the norm interval and the row angle anywhere in the angle interval, minimised over a grid of
    ``grid`` points per axis (corners included). The minimum lies at the end of the angle
    interval with the larger ``|cos|``, one norm at the bottom of its interval and the other near
    the top, so a grid of 101 points gives it to about 1e-5."""
    th, r = torch.tensor(theta, dtype=torch.float64), torch.tensor(r0, dtype=torch.float64)
    lo, hi = tn.lemma6_angle_interval(th, r)
    nlo, nhi = tn.lemma6_norm_interval(th, r)
    a = torch.linspace(float(nlo), float(nhi), grid, dtype=torch.float64)
    a, b, phi = torch.meshgrid(a, a, torch.linspace(float(lo), float(hi), grid, dtype=torch.float64), indexing="ij")
    # rows of norms a, b at angle phi: Gram eigenvalues (a^2 + b^2)/2 +- sqrt(((a^2 - b^2)/2)^2 + (ab cos phi)^2)
    top = (a**2 + b**2) / 2 + torch.sqrt(((a**2 - b**2) / 2) ** 2 + (a * b * torch.cos(phi)) ** 2)
    return float(((a**2 + b**2) / top).min())


def lemma6_srank_floor_upto(theta_max: float, r0: float, theta_min: float = 90.5 / DEG, angles: int = 10,
                            grid: int = 101) -> float:
    """The smallest stable rank that Lemma 6's intervals allow for runs ending split at any input
    angle in ``[theta_min, theta_max]`` (radians) from rows of norm ``r0``: the smallest
    :func:`lemma6_srank_floor` over ``angles`` equally spaced angles, ends included. The floor
    falls as the angle widens (both intervals widen), so the minimum is the one at ``theta_max``;
    the other angles guard that reading."""
    return min(lemma6_srank_floor(float(t), r0, grid) for t in np.linspace(theta_min, theta_max, angles))


def sweep_runs(X: torch.Tensor, Y: torch.Tensor, zero_v: bool, generator: torch.Generator, *, lr: float,
               steps: int, radius: float = 1e-4) -> dict[str, Any]:
    """Simulate one run per dataset of ``X, Y`` (``(R, 2, 2)``, on the device of the runs) from
    :func:`two_neuron.paper_init` at ``radius`` (``zero_v``: ``v(0) = 0``, Theorem 3's
    initialisation), and read off what the page's claims use: ``sim``, ``W0``, ``V0``,
    ``init_split``, ``end_split`` (converged and split at the end), ``conv``, ``sr`` (stable
    rank of ``W``) and ``angle`` (row angle of ``W``), the last five on the CPU."""
    W0, V0 = tn.paper_init(X.shape[0], radius, generator, zero_v=zero_v)
    W0, V0 = W0.to(X.device), V0.to(X.device)
    sim = tn.simulate(W0, V0, X, Y, lr=lr, steps=steps)
    conv = sim.converged.cpu()
    return dict(sim=sim, W0=W0, V0=V0, init_split=tn.is_split(tn.region_codes(W0, X).cpu()),
                end_split=tn.is_split(tn.region_codes(sim.W, X).cpu()) & conv, conv=conv,
                sr=tn.stable_rank_2x2(sim.W).cpu(), angle=tn.row_angle(sim.W).cpu())
