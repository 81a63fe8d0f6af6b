"""The experiments of the page ``chapters/rank_minimization/04_depth_helps``: data, the two arms
(minimum-norm interpolants of the square loss; normalised gradient flow on the exponential loss),
the check of the constructions of Theorems 4-5, the convergence certificate of the end states and
the Theorem 5 test of a trained direction against the construction.

Every function is deterministic given its generator, and consumes it in the order the page did
when this code lived there (so a re-executed page gives the same numbers).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from .. import homogeneous as hn
from .. import plotting
from . import deep_constructions as dc
from . import deep_training as dt

D = torch.float64


def teacher_data(n: int, d: int, gen: torch.Generator, margin: float = 0.1,
                 device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``n`` points on the unit sphere of R^d at distance at least ``margin`` from the plane of a
    random teacher t, with the square-loss targets ``1 + |t.x|`` (nonnegative, >= 1, as Theorem 4
    needs) and the class labels ``sign(t.x)``. Returns ``(X, y_sq, y_cl)``."""
    teacher = torch.randn(d, generator=gen, dtype=D)
    cand = torch.randn(20 * n, d, generator=gen, dtype=D)
    cand = cand / cand.norm(dim=1, keepdim=True)
    X = cand[(cand @ teacher / teacher.norm()).abs() >= margin][:n].to(device)
    t = teacher.to(device)
    return X, 1 + (X @ t).abs(), torch.sign(X @ t)


def hidden_srank(r: torch.Tensor) -> torch.Tensor:
    """Mean stable rank of the hidden-to-hidden layers W_2 .. W_{k'-1} from the ratios (E, k')
    (NaN for depth 2, which has none)."""
    return (r[:, 1:-1] ** -2).mean(-1) if r.shape[1] > 2 else torch.full((r.shape[0],), float("nan"), dtype=D)


def reference_network(seed: int) -> tuple[list[torch.Tensor], torch.Tensor]:
    """A random balanced depth-2 network (width 5 on 4 inputs, nonnegative output layer) and 50
    unit inputs, rescaled so that its largest output on them is 1."""
    g0 = torch.Generator().manual_seed(1000 + seed)
    Xc = torch.randn(50, 4, generator=g0, dtype=D)
    Xc = Xc / Xc.norm(dim=1, keepdim=True)
    ref = [torch.randn(5, 4, generator=g0, dtype=D) / 2, torch.randn(1, 5, generator=g0, dtype=D).abs() / 2]
    ref = hn.balance(ref)
    scale = float(hn.forward(ref, Xc).max())             # max_i N(x_i) = 1 (q = 1)
    return [W / scale ** 0.5 for W in ref], Xc


def check_constructions(ref: Sequence[torch.Tensor], Xc: torch.Tensor, depths: Sequence[int]) -> dict[str, Any]:
    """The constructions of Theorems 4 and 5 (Apps. D-E) from the depth-2 ``ref`` at each depth:
    largest output gap ``err``, largest relative gap of the squared norm to the formula
    ``norm_gap``, largest deviation of the tail ratios from 1 (Thm 4) and 1/sqrt2 (Thm 5)
    ``tail``, and ``cert_ok``: mean ratio >= AM-GM certificate >= the theorem's bound on all."""
    out_ref = hn.forward(ref, Xc)
    B_c = dc.frobenius_bound(ref)
    err = norm_gap = tail = 0.0
    cert_ok = True
    for kp in depths:
        N4, N5 = dc.theorem4_network(ref, kp), dc.theorem5_network(ref, kp)
        err = max(err, float((hn.forward(N4, Xc) - out_ref).abs().max()),
                  float((hn.forward(N5, Xc) - out_ref).abs().max()))
        norm_gap = max(norm_gap, abs(float(hn.squared_norm(N4)) / dc.theorem4_norm(2, kp, B_c) - 1),
                       abs(float(hn.squared_norm(N5)) / dc.theorem5_norm(2, kp, B_c) - 1))
        tail = max(tail, float((hn.norm_ratios(N4[2:]) - 1).abs().max()))
        if kp > 3:   # Theorem 5's tail layers beta I_2 (the last layer is one row)
            tail = max(tail, float((hn.norm_ratios(N5[2:-1]) - 1 / math.sqrt(2)).abs().max()))
        for N, bound in ((N4, dc.theorem4_bound(2, kp, B_c)), (N5, dc.theorem5_bound(2, kp, B_c))):
            cert_ok &= float(hn.norm_ratios(N).mean()) >= dc.certificate(N, 1.0) - 1e-12 >= bound - 2e-12
    return dict(B=B_c, err=err, norm_gap=norm_gap, tail=tail, cert_ok=cert_ok)


def square_arm(W0: Sequence[torch.Tensor], X: torch.Tensor, y: torch.Tensor, *, step: float,
               steps: int) -> dict[str, dict[str, torch.Tensor]]:
    """Square loss from the stack ``W0``: the interpolant closest to the initialisation
    (``"near"``: Gauss-Newton projection onto N(x_i) = y_i) and a minimum-norm one (``"min"``:
    projected descent of the norm from it, the limit lambda -> 0 of weight decay). Per network:
    constraint residual, balanced squared norm, mean ratio, hidden stable rank, layer spread, and
    for ``"min"`` the KKT residual of Problem 2."""
    near, res_near = dt.project_interpolation(dt.fit_scale(W0, X, y), X, y, iters=12)
    low, res_low = dt.minimum_norm_descent(near, X, y, step=step, steps=steps)
    out: dict[str, dict[str, torch.Tensor]] = {}
    for name, ws, res in (("near", near, res_near), ("min", low, res_low)):
        wb = hn.balance(ws)
        r = hn.norm_ratios(wb).cpu()
        out[name] = dict(res=res.cpu(), norm=hn.squared_norm(wb).cpu(), mean_r=r.mean(-1), hid=hidden_srank(r),
                         spread=hn.layer_balance(ws).cpu())
    out["min"]["kkt"] = hn.interpolation_kkt_residual(low, X).cpu()
    return out


def margin_arm(W: Sequence[torch.Tensor], X: torch.Tensor, y: torch.Tensor, *, steps: int, step: float,
               final_step: float, checkpoints: Sequence[int], margin_cap: float) -> dict[str, Any]:
    """Normalised gradient flow on the exponential loss from the stack ``W`` (scale held once the
    smallest margin reaches ``margin_cap``): the history, mean ratio and hidden stable rank at the
    end, which networks separate the data, and per checkpoint the Theorem 5 certificate, the KKT
    residuals (stationarity ``eps``, slackness ``delta``) of Problem 6 and the normalised margin."""
    h = dt.train_margin(W, X, y, steps=steps, step=step, final_step=final_step, checkpoints=checkpoints,
                        margin_cap=margin_cap)
    r = hn.norm_ratios(W).cpu()
    return dict(hist=h, mean_r=r.mean(-1), hid=hidden_srank(r), sep=h.min_margin[-1] > 0,
                cert=h.stacked("certificate"), eps=h.stacked("kkt_eps"), delta=h.stacked("kkt_delta"),
                nm=h.stacked("normalized_margin"))


def certified(M: dict[str, Any], sep: torch.Tensor, tol: float) -> bool:
    """Every separating network of the arm ``M`` ends with KKT stationarity and slackness of
    Problem 6 at most ``tol`` (an (eps, delta)-KKT point in the sense of Lyu & Li)."""
    return bool(((M["eps"][-1][sep] <= tol) & (M["delta"][-1][sep].abs() <= tol)).all())


def construction_over_trained(M: dict[str, Any], sep: torch.Tensor, k: int, checkpoint: int,
                              refs: Sequence[int], B: dict[int, float]) -> torch.Tensor:
    """Squared norm of the best construction of Theorem 5 (from the reference of each depth in
    ``refs``, layer norm ``B[j]``) over that of each separating trained network of depth ``k`` at
    ``checkpoint``, balanced at margin 1 (>= 1: the bound of Theorem 5 provably holds for it)."""
    c = M["cert"][checkpoint][sep]
    trained = k / c**2                                      # balanced, margin 1: ||theta||^2 = k' / certificate^2
    best = min(dc.theorem5_norm(j, k, B[j]) for j in refs)
    return best / trained


def nan_if_empty(ks: Sequence[int], f: Callable[[int], torch.Tensor]) -> torch.Tensor:
    """The per-network values ``f(k)`` concatenated over the depths ``ks`` (NaN when there is none)."""
    return torch.cat([f(k) for k in ks]) if ks else torch.tensor([float("nan")], dtype=D)


def depth_axis(ax: Any, ticks: Sequence[int], ylabel: str) -> None:
    """Depth on a log2 axis with the sweep's depths as ticks; a dotted line at ratio 1."""
    ax.axhline(1.0, color="k", lw=0.8, ls=":")
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(ticks), [str(k) for k in ticks])
    ax.minorticks_off()
    ax.set_xlabel("depth $k'$")
    ax.set_ylabel(ylabel)


def scatter_by_depth(ax: Any, vals: dict[int, torch.Tensor], i: int, color: Any, label: str | None = None) -> None:
    """Per-network values ``vals[k]`` as dots at depth k (shifted by 5% left or right for the arm
    ``i`` in {0, 1}); with ``label``, also their mean by depth as a line."""
    for k, v in vals.items():
        ax.plot([k * (1 + 0.05 * (2 * i - 1))] * v.numel(), v.numpy(), ".", color=color, alpha=0.6, ms=5)
    if label is not None:
        ax.plot(list(vals), [float(v.mean()) for v in vals.values()], "-", color=color, label=label)


def square_report(sq: dict[int, dict[str, Any]], nets: int, bound4: dict[int, float],
                  norm4: dict[int, float]) -> list[str]:
    """One line per depth of the square-loss arm ``sq`` (restarts at a KKT point out of ``nets``,
    mean ratios, and for k' > 2 Theorem 4's bound ``bound4[k]``, norm over the construction's
    ``norm4[k]`` and hidden stable rank), for the minimum-norm and the closest-to-init interpolants."""
    lines = []
    for k, S in sq.items():
        mn, nr = S["min"], S["near"]
        line = (f"k' = {k:2d}: {int(S['ok'].sum())}/{nets} restarts at a KKT point (KKT residual "
                f"{float(mn['kkt'].max()):.3f}); mean ratio {float(mn['mean_r'].min()):.3f}-"
                f"{float(mn['mean_r'].max()):.3f} (closest to init {float(nr['mean_r'].min()):.3f}-"
                f"{float(nr['mean_r'].max()):.3f})")
        if k > 2:
            line += (f"; bound {bound4[k]:.3f}; norm / construction {float((mn['norm'] / norm4[k]).min()):.4f}-"
                     f"{float((mn['norm'] / norm4[k]).max()):.4f} (closest to init "
                     f"{float((nr['norm'] / norm4[k]).min()):.1f}-{float((nr['norm'] / norm4[k]).max()):.1f});"
                     f" hidden srank {float(mn['hid'].max()):.3f} (closest to init {float(nr['hid'].min()):.2f})")
        lines.append(line)
    return lines


def margin_report(mg: dict[int, dict[str, Any]], nets: int, step0: int, cert_depths: Sequence[int],
                  B5: dict[int, float]) -> list[str]:
    """One line per depth of the exponential-loss arm ``mg``: separating networks out of ``nets``,
    KKT stationarity at ``step0`` and at the end, slackness, whether the depth is certified,
    growth of the normalised margin, mean ratio, and for k' > 2 the hidden stable rank and the
    smallest Theorem 5 certificate against the bounds from the references ``B5``."""
    lines = []
    for k, M in mg.items():
        s = M["sep"]
        line = (f"k' = {k:2d}: separating {int(s.sum())}/{nets}; KKT eps {float(M['eps'][0][s].mean()):.3f} (step "
                f"{step0}) -> {float(M['eps'][-1][s].mean()):.3f} (largest {float(M['eps'][-1][s].max()):.3f}), "
                f"slackness {float(M['delta'][-1][s].abs().max()):.3f} (largest); "
                f"{'certified' if k in cert_depths else 'NOT certified'}; normalised margin "
                f"x{float((M['nm'][-1] / M['nm'][0])[s].min()):.2f}; mean ratio {float(M['mean_r'][s].mean()):.3f}")
        if k > 2:
            line += (f"; hidden srank {float(M['hid'][s].mean()):.2f}; certificate "
                     f"{float(M['cert'][-1][s].min()):.4f} >= bounds from k = 2: {dc.theorem5_bound(2, k, B5[2]):.4f}, "
                     f"best k < k': {max(dc.theorem5_bound(j, k, B5[j]) for j in mg if j < k):.4f}")
        lines.append(line)
    return lines


def neighbour_settings(cert_at: dict[float, list[int]], ratio_at: Callable[[list[int]], torch.Tensor],
                       hid_at: Callable[[int], float], hid_top: float, hid_max: float,
                       srank_cuts: Sequence[float] = (1.25, 1.5, 1.75),
                       rank1_cuts: Sequence[float] = (1.01, 1.05, 1.1)) -> tuple[list[str], bool]:
    """The table of the analysis settings at the value used and two neighbours: per KKT tolerance
    (``cert_at``: certified depths) the smallest construction/trained
    ratio ``ratio_at(depths)`` and the hidden stable rank ``hid_at(k)`` at the deepest certified
    depth; the cut-offs for "well above 1" (on ``hid_top``) and "stable rank 1" (on ``hid_max``).
    Returns the lines and whether a verdict changes between neighbours."""
    lines = ["KKT tolerance | certified depths | thm5-below-construction (smallest ratio) | deepest certified: hidden srank"]
    passes = {}
    for t, ks_all in cert_at.items():
        ks = [k for k in ks_all if k > 2]
        r = float(ratio_at(ks).min())
        passes[t] = r > 1
        hid = hid_at(max(ks)) if ks else float("nan")
        lines.append(f"{t:13g} | {', '.join(map(str, ks_all)) or 'none':16s} | {r:.4f} "
                     f"({'PASS' if passes[t] else 'FAIL'}){'':18s} | {hid:.2f}")
    lines.append("cut-off 'well above 1' | thm5-srank-2")
    lines += [f"{c:22g} | {'PASS' if hid_top > c else 'FAIL'} ({hid_top:.2f})" for c in srank_cuts]
    lines.append("cut-off 'stable rank 1' | thm4-rank1")
    lines += [f"{c:23g} | {'PASS' if hid_max < c else 'FAIL'} ({hid_max:.3f})" for c in rank1_cuts]
    flip = (len(set(passes.values())) > 1 or len({hid_top > c for c in srank_cuts}) > 1
            or len({hid_max < c for c in rank1_cuts}) > 1)
    return lines, flip


def _ratio_axis(ax: Any, vals: Sequence[tuple[dict[int, torch.Tensor], str]], depths: Sequence[int]) -> None:
    """Mean ratio over layers by depth, one arm per ``(values by depth, label)``, with depth on a log2 axis."""
    for i, (v, label) in enumerate(vals):
        scatter_by_depth(ax, v, i, plotting.color(i), label)
    depth_axis(ax, depths, r"mean over layers of $\|W_l\|_2/\|W_l\|_F$")


def square_figure(sq: dict[int, dict[str, Any]], B4: float, norm4: dict[int, float]) -> Any:
    """Square loss: mean ratio by depth with Theorem 4's bound (left), and squared norm over the
    construction's (right), for the minimum-norm and the closest-to-init interpolants."""
    depths, deeper = list(sq), list(norm4)
    fig, axes = plotting.subplots(2, height=3.0)
    kk = np.arange(3, max(depths) + 1)
    _ratio_axis(axes[0], [({k: sq[k][name]["mean_r"] for k in depths}, label) for name, label in
                          (("min", "minimum-norm interpolants"), ("near", "interpolants closest to the init"))], depths)
    axes[0].plot(kk, [dc.theorem4_bound(2, k, B4) for k in kk], "--", color="k", lw=1, label="Theorem 4 bound")
    axes[0].legend(fontsize=7, loc="lower left")
    ax = axes[1]
    for i, name in enumerate(("min", "near")):
        scatter_by_depth(ax, {k: sq[k][name]["norm"] / norm4[k] for k in deeper}, i, plotting.color(i))
    ax.axhline(1.0, color="k", lw=1, ls="--", label="construction of Theorem 4")
    ax.set_yscale("log")
    depth_axis(ax, deeper, r"$\|\theta\|^2$ / construction's $\|\theta'\|^2$")
    ax.legend(fontsize=7, loc="upper left")
    return fig


def depth_figure(sq: dict[int, dict[str, Any]], mg: dict[int, dict[str, Any]], B4: float, B5: float,
                 steps: Sequence[int]) -> Any:
    """Mean ratio by depth for both losses with the bounds of Theorems 4 (reference ``B4``) and 5
    (``B5``) and their limits (left); the mean KKT residual of Problem 6 along the
    exponential-loss runs at the checkpoints ``steps`` (right)."""
    depths = list(mg)
    fig, axes = plotting.subplots(2, height=3.0)
    kk = np.arange(3, max(depths) + 1)
    ax = axes[0]
    _ratio_axis(ax, [({k: sq[k]["min"]["mean_r"] for k in depths}, "square loss: minimum-norm interpolants"),
                     ({k: mg[k]["mean_r"][mg[k]["sep"]] for k in depths}, "exponential loss: gradient flow")], depths)
    ax.plot(kk, [dc.theorem4_bound(2, k, B4) for k in kk], "--", color=plotting.color(0), lw=1, label="Theorem 4 bound")
    ax.plot(kk, [dc.theorem5_bound(2, k, B5) for k in kk], "--", color=plotting.color(1), lw=1, label="Theorem 5 bound")
    ax.axhline(1 / math.sqrt(2), color="k", lw=0.8, ls=":")
    ax.legend(fontsize=7, loc="lower left")
    ax = axes[1]
    for i, k in enumerate(depths):
        ax.plot(steps, mg[k]["eps"][:, mg[k]["sep"]].mean(-1).numpy(), "o-", color=plotting.color(i), ms=3,
                label=f"$k'$ = {k}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel(r"KKT residual $\varepsilon$ of Problem 6 (mean)")
    ax.legend(fontsize=7, ncol=2)
    return fig
