# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (implicit-bias book)
#     language: python
#     name: implicit-bias
# ---

# %% [markdown]
# # Example 1: when the fastest escape is not rank one
#
# The results of {cite:t}`bantzis2025saddle` say that the deep layers of an optimal escape
# direction are *approximately* rank one ({doc}`03_structure_of_escape_directions`). Section 4 of
# the paper shows that "approximately" cannot be dropped: on eight points of the unit circle with
# alternating loss gradients, every depth-3 network whose layers are all rank one escapes at speed
# at most $\sqrt2-1\approx0.414$, while a network with a rank-two first layer reaches $1/2$, and
# projected gradient descent finds that faster direction more often as the network gets wider
# (Figure 2). This page recomputes the rank-one speed (Eq. (6), Figure 5), checks the rank-two
# construction of Eq. (2) (whose printed last weight has the wrong sign), and repeats the width
# sweep of Figures 2 and 6 with the escape-direction solver of {doc}`01_escape_directions`.
#
# ```{admonition} What to take away
# - The rank-one optimum is $\sqrt2-1$ (Eq. (6), a direct sum over the data, and a solver
#   restricted to rank-one layers agree), and the network of Eq. (2) with $W_3=[-1]$ reaches $1/2$
#   with a rank-two first layer. As printed, with $W_3=[1]$, it *increases* the loss at speed 1/2.
# - Projected gradient descent finds the rank-two direction more often as the width grows, and
#   the runs that beat $\sqrt2-1$ end at speed $1/2$ with a rank-two first layer and a rank-one
#   second layer; no run exceeds $1/2$ (consistent with the paper's footnote 2).
# - **Certified:** a bound over the sign patterns of the second layer, with linear-programming
#   dual certificates, proves $s^*(3)=1/2$ at any width (footnote 2's doubt is right) and
#   $s^*(2)=\sqrt2-1$, so the optimal speed rises strictly with depth here.
# - Only the **first** weight matrix is rank two, in the construction and in every solver optimum:
#   Section 1.3's description of this example ("the first two weight matrices are rank 2") does
#   not match it.
# - These optima sit on kinks of the ReLU (training points with zero pre-activation), where
#   $\mathcal L_0$ is not differentiable: the gradient condition of Definition 2.1 does not apply
#   there, and we judge convergence by the speed, not by a KKT residual.
# ```

# %% tags=["parameters"]
profile = "ci"   # "ci": CPU, under a minute; "full": the widths and run counts of a paper-size sweep
seed = 0
device = "auto"

# %%
PROFILES = {
    # widths: hidden width of both hidden layers; runs: restarts per width (one batched solve per
    # width); steps, lr, lr_final: projected gradient descent with a cosine-decayed step;
    # rank_one_runs: restarts of the rank-one-constrained solver; grid: points of the phi grid;
    # cert_grid: angles of the linear programs of the depth-3 certificate
    "ci": dict(widths=(4, 8, 16, 32, 64), runs=24, steps=1500, lr=0.3, lr_final=0.001,
               rank_one_runs=32, rank_one_width=16, grid=100_001, cert_grid=120),
    "full": dict(widths=(4, 8, 16, 32, 64, 128, 256, 512), runs=100, steps=20_000, lr=0.3, lr_final=0.001,
                 rank_one_runs=128, rank_one_width=64, grid=1_000_001, cert_grid=720),
}

# %%
import math

import matplotlib.pyplot as plt
import numpy as np
import torch
from myst_nb import glue

from implicit_bias import plotting, spectra
from implicit_bias.chapter import start_chapter
from implicit_bias.claims import Ledger
from implicit_bias.saddle_to_saddle import certificates, escape
from implicit_bias.saddle_to_saddle import example1 as ex
from implicit_bias.saddle_to_saddle import localized as lo

P, dev = start_chapter(PROFILES, profile=profile, seed=seed, device=device)
ledger = Ledger("saddle_to_saddle/02_rank_two_escape")
gen = torch.Generator().manual_seed(seed)
D = torch.float64
X, G = ex.circle_data()
S1, S2 = ex.RANK_ONE_SPEED, ex.RANK_TWO_SPEED

# %% [markdown]
# ## The example
#
# :::{prf:example} Example 1 of {cite:t}`bantzis2025saddle` (rank-two optimal escape direction)
# :label: sts-ex1
# :nonumber:
# Take the $N=8$ points $x_j=(\sin\frac{2\pi j}{8},\cos\frac{2\pi j}{8})$ on the unit circle with
# alternating loss gradients $G_j=(-1)^j$ (one output; such gradients arise e.g. from targets
# $y_j=(-1)^j$ and the square loss, up to sign), and a depth-3 bias-free ReLU network
# $f_\theta(X)=W_3\sigma(W_2\sigma(W_1X))$ of hidden width at least 4, on the sphere
# $\lVert\theta\rVert^2=3$ (at an optimum every $\lVert W_\ell\rVert_F=1$). Then the best speed of
# an escape direction whose layers are all rank one is $s_1=\sqrt2-1\approx0.414$, but there is a
# rank-two escape direction with speed $s_2=\frac12$, given by Eq. (2):
# $$W_1=\frac12\begin{bmatrix}1&0\\0&1\\-1&0\\0&-1\end{bmatrix},\qquad
# W_2=\frac12\begin{bmatrix}1&-1&1&-1\end{bmatrix},\qquad W_3=\begin{bmatrix}1\end{bmatrix}.$$
# :::
#
# ```{prf:proof}
# (The paper's, in outline.) Rank-one layers can only represent one-neuron functions, so the
# rank-one case reduces to the width-one network $\pm\sigma(w_\phi\cdot x)$ with
# $w_\phi=(\cos\phi,\sin\phi)$, whose speed is Eq. (6) below, maximal at $\phi\in\frac\pi4\mathbb Z$.
# The network of Eq. (2) computes $\pm\frac14\sigma(|x_1|-|x_2|)$, which is $\pm\frac14$ on the
# two axis points $(\pm1,0)$ ($j=2,6$, where $G=+1$) and 0 on the other six: on $(0,\pm1)$, where
# $G=+1$ too, $|x_1|-|x_2|=-1$, and on the diagonal ones $|x_1|=|x_2|$. So
# $\lvert\mathcal L_0\rvert=2\cdot\frac14=\frac12$.
# ```
#
# With the literal conventions ($\mathcal L_0=\operatorname{Tr}[G^\top Y]$, speed
# $s=-\mathcal L_0$), the printed $W_3=[1]$ gives $\mathcal L_0=+\frac12$: a direction in which the
# loss *grows*. $W_3=[-1]$ gives the escape direction. The reduction to one neuron is slightly
# loose (a rank-one first layer $ab^\top$ whose left factor $a$ has entries of both signs
# represents $p\,\sigma(b\cdot x)+q\,\sigma(-b\cdot x)$), so we check the rank-one bound with a
# solver restricted to rank-one layers as well.

# %%
eq2_printed = float(lo.localized_loss(ex.eq2_weights(+1.0), X, G))
eq2_fixed = ex.eq2_weights(-1.0)
eq2_speed = float(lo.speed(eq2_fixed, X, G))
eq2_norms = [float(W.norm()) for W in eq2_fixed]
eq2_sv = spectra.singular_values(eq2_fixed[0])
print(f"Eq. (2) as printed (W_3 = [1]): L_0 = {eq2_printed:+.6f}; with W_3 = [-1]: L_0 = {-eq2_speed:+.6f}, "
      f"layer norms {[round(v, 12) for v in eq2_norms]}, singular values of W_1 {[round(float(v), 6) for v in eq2_sv]}")
ledger.close("eq2-as-printed", "Eq. (2)", r"the printed weights ($W_3 = [1]$) give $\mathcal L_0 = +1/2$: the loss grows along "
             r"them (measured: $\mathcal L_0$)", "speed 1/2", eq2_printed, 0.5, atol=1e-12, fmt=".6f", items="eq2",
             bearing="contradicts", origin="theory",
             falsifier=r"$\mathcal L_0$ of the printed weights not $+1/2$ to 1e-12 (e.g. $-1/2$, the printed sign right)")
ledger.close("eq2-speed", "Example 1, Eq. (2)", "with $W_3 = [-1]$ the construction has speed 1/2 on the sphere "
             r"$\lVert\theta\rVert^2 = 3$ (each layer of norm 1)", "1/2", eq2_speed, 0.5, atol=1e-12, fmt=".6f",
             items="ex1", bearing="supports", origin="paper",
             falsifier="a speed off 1/2 by more than 1e-12 with $W_3 = [-1]$")
glue("sts2-eq2-printed", f"{eq2_printed:+.3f}", display=False)

# %% [markdown]
# ## The rank-one speed: Eq. (6) and Figure 5
#
# :::{prf:remark} Eq. (6) of {cite:t}`bantzis2025saddle`
# :label: sts-eq6
# :nonumber:
# For the width-one network $\pm\sigma(w_\phi\cdot x)$ (all layers of norm 1, sign chosen for a
# positive speed), with $\xi=\phi\bmod\frac\pi4$,
# $$s(\phi)=\Big|\cos\big(\xi+\tfrac\pi4\big)-\cos\xi+\cos\big(\xi-\tfrac\pi4\big)-\cos\big(\xi-\tfrac\pi2\big)\Big|,$$
# which is $\frac\pi4$-periodic with maximum $\sqrt2-1$ at the multiples of $\frac\pi4$.
# :::
#
# On a grid of {glue:text}`sts2-grid` angles (containing the multiples of $\pi/4$), Eq. (6) and
# the direct sum $|\sum_jG_j\sigma(w_\phi\cdot x_j)|$ differ by at most {glue:text}`sts2-eq6-err`;
# the maximum is {glue:text}`sts2-eq6-max` (against $\sqrt2-1=$ {glue:text}`sts2-s1`), reached at
# multiples of $\pi/4$ (largest distance of a grid maximiser to one: {glue:text}`sts2-argmax`,
# against half the grid spacing, {glue:text}`sts2-argmax-tol`, the resolution of a location on the
# grid), and the speed vanishes at the odd multiples of $\pi/8$.
#
# A solver whose layers are projected on rank one after every step
# (`escape.solve_escape(..., rank_one=True)`, {glue:text}`sts2-r1-runs` restarts of width
# {glue:text}`sts2-r1-width`) never exceeds $\sqrt2-1$ (largest speed
# {glue:text}`sts2-r1-max`), also through two-sided first layers.

# %%
phi = torch.linspace(0, 2 * math.pi, P["grid"], dtype=D)
direct, closed = ex.rank_one_speed(phi, X, G), ex.eq6_speed(phi)
eq6_err = float((direct - closed).abs().max())
eq6_max = float(closed.max())
at_max = phi[closed >= eq6_max - 1e-12]
dist = float(((at_max / (math.pi / 4)) - torch.round(at_max / (math.pi / 4))).abs().max() * math.pi / 4)
# a location on the grid is known to half its spacing; the value is exact up to rounding (1e-12)
dist_tol = float(phi[1] - phi[0]) / 2
eq6_ratio = max(abs(eq6_max - S1) / 1e-12, dist / dist_tol)  # the worse of the two checks, in units of its tolerance
r1 = escape.solve_escape(X, G, depth=3, widths=P["rank_one_width"], restarts=P["rank_one_runs"], steps=P["steps"],
                         lr=P["lr"], lr_final=P["lr_final"], rank_one=True, generator=gen)
r1_max = float(r1.speed.max())
print(f"Eq. (6): max |closed - direct| {eq6_err:.1e}; max {eq6_max:.15f} (sqrt2 - 1 = {S1:.15f}); maximisers within "
      f"{dist:.1e} of multiples of pi/4; rank-one-constrained solver: best {r1_max:.6f}")
for key, val in {"grid": f"{P['grid']:,}", "eq6-err": f"{eq6_err:.0e}", "eq6-max": f"{eq6_max:.12f}",
                 "s1": f"{S1:.12f}", "argmax": f"{dist:.0e}", "argmax-tol": f"{dist_tol:.1e}", "r1-runs": P["rank_one_runs"],
                 "r1-width": P["rank_one_width"], "r1-max": f"{r1_max:.6f}"}.items():
    glue(f"sts2-{key}", val, display=False)
ledger.below("eq6-direct", "Eq. (6)", "Eq. (6) equals the direct sum over the data (largest difference on the grid)",
             "closed form", eq6_err, 1e-12, fmt=".1e", items="eq6", bearing="verifies", origin="theory",
             falsifier="Eq. (6) and the direct sum over the eight points differing by 1e-12 or more somewhere on the grid")
ledger.holds("eq6-max", "Eq. (6), Example 1", r"the best rank-one speed is $\sqrt2 - 1$, at multiples of $\pi/4$: "
             r"maximum of Eq. (6) on the grid within 1e-12 of $\sqrt2 - 1$, and every grid maximiser within half the "
             r"grid spacing of a multiple of $\pi/4$ (value: the worse of the two errors over its tolerance)",
             r"$\sqrt2 - 1 = 0.414214$ at $\phi\in\frac\pi4\mathbb Z$",
             f"max {eq6_max:.9f}; maximisers {dist:.0e} from a multiple", eq6_ratio <= 1.0,
             tolerance=f"1e-12; {dist_tol:.1e}", items=["eq6", "ex1"], bearing="verifies", value=eq6_ratio, hi=1.0,
             origin="theory: rounding for the value, half the grid spacing for the location",
             falsifier=r"a grid maximum off $\sqrt2 - 1$ by more than 1e-12, or a grid maximiser farther than half the "
                       r"grid spacing from every multiple of $\pi/4$ (a maximum elsewhere, e.g. at the odd multiples of $\pi/8$)")
ledger.between("rank-one-solver", "Example 1", "a solver restricted to rank-one layers reaches but never exceeds "
               r"$\sqrt2 - 1$ (best speed; a rank-one network is one neuron, whose best speed Eq. (6) and the "
               "depth-2 certificate fix: a check of the solver)", r"$\le\sqrt2 - 1$", r1_max, S1 - 1e-3, S1 + 1e-9,
               fmt=".6f", items="ex1", bearing="control", origin="paper: the ceiling sqrt(2) - 1 (1e-9: rounding); the floor 1e-3 prior")

# %%
fig, ax = plotting.subplots(1, height=2.4)
deg = phi.numpy() * 180 / math.pi
ax.plot(deg, closed.numpy(), color=plotting.color(0), label="Eq. (6)")
ax.plot(deg[::997], direct.numpy()[::997], ".", color=plotting.color(1), ms=3, label="direct sum")
ax.axhline(S1, color="k", lw=0.8, ls=":")
ax.set_xticks(range(0, 361, 45))
ax.set_xlabel(r"angle $\phi$ of the single neuron (degrees)")
ax.set_ylabel(r"rank-one speed $s(\phi)$")
ax.legend(fontsize=7, loc="lower right")
glue("sts2-fig-eq6", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} sts2-fig-eq6
# :name: fig-sts2-eq6
# Figure 5 of the paper: the speed of the one-neuron network $\pm\sigma(w_\phi\cdot x)$ on the
# eight points, from Eq. (6) (line) and summed directly over the data (dots). Dotted: $\sqrt2-1$.
# ```
#
# ## Figures 2 and 6: wider networks find the rank-two direction
#
# Projected gradient descent on $\mathcal L_0$ over the sphere $\lVert\theta\rVert^2=3$
# (`escape.solve_escape`: Gaussian start projected on the sphere, step {glue:text}`sts2-lr` along
# the tangent gradient with a cosine decay to {glue:text}`sts2-lr-final` of it, retraction,
# {glue:text}`sts2-steps` steps, float64), {glue:text}`sts2-runs` runs for each hidden width
# $w\in$ {glue:text}`sts2-widths` (both hidden layers of width $w$). The runs of one width are one
# batched computation; the widths are solved one after the other, because padding every run to
# the largest width, which the solver supports, would cost four times as much here. A run is
# **successful** when its final speed exceeds $\sqrt2-1+10^{-3}$, the paper's criterion with a
# margin. The paper does not give its widths, run counts, initialisation, step or number of
# steps; these are ours.

# %%
glue("sts2-lr", f"{P['lr']:g}", display=False)
glue("sts2-lr-final", f"{P['lr_final']:g}", display=False)
glue("sts2-steps", f"{P['steps']:,}", display=False)
glue("sts2-runs", P["runs"], display=False)
glue("sts2-widths", "{" + ", ".join(str(w) for w in P["widths"]) + "}", display=False)
sweep = {}
for w in P["widths"]:
    res = escape.solve_escape(X, G, depth=3, widths=w, restarts=P["runs"], steps=P["steps"], lr=P["lr"],
                              lr_final=P["lr_final"], generator=gen)
    ratio1 = spectra.singular_values(res.weights[0])
    ratio2 = spectra.singular_values(res.weights[1])
    sweep[w] = dict(speed=res.speed, traj=res.speeds, steps=res.steps, success=res.speed > S1 + 1e-3,
                    w1=ratio1[:, 1] / ratio1[:, 0], w2=ratio2[:, 1] / ratio2[:, 0])
    print(f"width {w:3d}: {int(sweep[w]['success'].sum()):3d} of {P['runs']} successful; speeds "
          f"{float(res.speed.min()):.4f}-{float(res.speed.max()):.6f}")
widths = list(P["widths"])
frac = np.array([float(sweep[w]["success"].double().mean()) for w in widths])
speeds = torch.cat([sweep[w]["speed"] for w in widths])
succ = torch.cat([sweep[w]["success"] for w in widths])
w1 = torch.cat([sweep[w]["w1"] for w in widths])
w2 = torch.cat([sweep[w]["w2"] for w in widths])
n_succ = int(succ.sum())
share_rank_two = float(((speeds >= 0.499) & (w1 >= 0.5))[succ].double().mean()) if n_succ else float("nan")
succ_min = float(speeds[succ].min()) if n_succ else float("nan")
conv = succ & (speeds >= 0.499)                  # successful runs that have reached 1/2
w1_min = float(w1[conv].min()) if bool(conv.any()) else float("nan")
w2_max = float(w2[conv].max()) if bool(conv.any()) else float("nan")
top = float(speeds.max())
fail_max = float(speeds[~succ].max()) if bool((~succ).any()) else float("nan")
print(f"successful: {n_succ} of {len(speeds)}; their speeds >= {succ_min:.6f}, s2/s1(W_1) >= {w1_min:.3f}, "
      f"s2/s1(W_2) <= {w2_max:.1e}; best of all runs {top:.9f}; failed runs end at <= {fail_max:.6f}")

# %% [markdown]
# Of the runs that beat $\sqrt2-1$, a share {glue:text}`sts2-share-r2` ends at speed at least
# 0.499 (the slowest successful run ends at {glue:text}`sts2-succ-min`; a run that crosses
# $\sqrt2-1$ late in the budget may not have converged), and those that reach $1/2$ have a first
# layer of two equal singular values ($s_2/s_1\ge$ {glue:text}`sts2-w1-min`) and a rank-one
# second layer ($s_2/s_1\le$ {glue:text}`sts2-w2-max`): the solver finds Eq. (2), up to the
# symmetries of the network. The best of all {glue:text}`sts2-total` runs reaches
# {glue:text}`sts2-top`; none is faster than $1/2$, which supports the paper's footnote 2 ("there
# may exist an even faster escape direction, though we doubt it") without proving it. The runs
# that fail end at the rank-one speed $\sqrt2-1$ or below. The share of successful runs grows with
# the width, from {glue:text}`sts2-frac-lo` at width {glue:text}`sts2-w-lo` to
# {glue:text}`sts2-frac-hi` at width {glue:text}`sts2-w-hi`. As a negative control, the rank-one-constrained solver above
# (width {glue:text}`sts2-r1-width`) has no successful run.

# %%
for key, val in {"succ-min": f"{succ_min:.4f}", "share-r2": f"{share_rank_two:.3f}", "w1-min": f"{w1_min:.3f}", "w2-max": f"{w2_max:.0e}",
                 "total": len(speeds), "top": f"{top:.6f}", "frac-lo": f"{frac[0]:.2f}", "frac-hi": f"{frac[-1]:.2f}",
                 "w-lo": widths[0], "w-hi": widths[-1]}.items():
    glue(f"sts2-{key}", val, display=False)
ledger.above("fig2-wide", "Fig. 2", rf"at width {widths[-1]} most runs find a direction faster than $\sqrt2 - 1$ "
             "(share of runs)", "share grows with width", frac[-1], 0.5, fmt=".2f", items="fig2",
             bearing="supports", origin="prior: the guide's proposal",
             falsifier=r"at most half of the width-64 runs beating $\sqrt2 - 1$")
ledger.above("fig2-trend", "Fig. 2", f"the share of successful runs grows from width {widths[0]} to {widths[-1]} "
             "(difference of shares)", "share grows with width", frac[-1] - frac[0], 0.25, fmt=".2f",
             items="fig2", bearing="supports", origin="prior: the guide's proposal",
             falsifier=r"the share of runs beating $\sqrt2 - 1$ growing by 0.25 or less from width 4 to 64")
ledger.above("fig2-rank-two", "Fig. 2, Example 1", "the successful runs end at the rank-two speed 1/2 with a "
             rf"rank-two first layer (share of the {n_succ} successful runs with speed $\ge 0.499$ and $s_2/s_1(W_1) \ge 0.5$)",
             "rank-two escape, speed 1/2", share_rank_two, 0.9, fmt=".3f", items=["fig2", "fig6", "ex1"],
             bearing="supports", origin="after-seeds: first 'every run' (all of seeds 0-4 had every run); a share "
             "after reviewers saw one unconverged run on an unseen seed",
             falsifier="more than 10% of the successful runs ending below speed 0.499 or with a first layer of $s_2/s_1 < 0.5$")
ledger.below("fn2-nothing-faster", "Sec. 4, footnote 2", "no run of the sweep is faster than 1/2 (best speed; implied "
             "for every depth-3 network by the certificate below, so a cross-check of it)",
             "doubts that anything beats 1/2", top, 0.5 + 1e-6, fmt=".6f", items=["fn2", "fig6"],
             bearing="control", origin="paper: 1/2 (1e-6: rounding and the solver's last step)")
eq2_w2_rank = int(spectra.numerical_rank(eq2_fixed[1]))
ledger.below("w2-rank-one", "Sec. 1.3", "only the first layer is rank two: the second layer of every run that "
             f"reached 1/2 is rank one (largest $s_2/s_1$ of $W_2$; Eq. (2)'s $W_2$ has rank {eq2_w2_rank})",
             "the first two weight matrices are rank 2", w2_max if eq2_w2_rank == 1 else float("nan"), 0.05,
             fmt=".1e", items="intro-rank2", bearing="contradicts", origin="prior: the guide's 'rank one'",
             falsifier="a run at speed 1/2 whose second layer has $s_2/s_1$ of 0.05 or more (a rank-two second layer, as Sec. 1.3 says)")
ledger.below("fig2-control", "Fig. 2, negative control", "the rank-one-constrained solver has no successful run "
             "(share; one run would be 1/n)", "-", float((r1.speed > S1 + 1e-3).double().mean()), 0.5 / len(r1.speed),
             fmt=".2f", items="fig2", bearing="control", origin="theory")

# %%
fig, axes = plotting.subplots(3, height=2.5)
ax = axes[0]
colors = [plotting.color(1) if g > 0 else plotting.color(0) for g in G[:, 0].tolist()]
ax.add_patch(plt.Circle((0, 0), 1, fill=False, color="0.7", lw=0.8))
ax.scatter(X[:, 0], X[:, 1], c=colors, s=40, zorder=3)
ax.set_aspect("equal")
ax.set_xlim(-1.3, 1.3)
ax.set_ylim(-1.3, 1.3)
ax.set_title("data: G = +1 (orange), -1 (blue)", fontsize=8)
ax = axes[1]
w_show = widths[len(widths) // 2]
steps_rec = sweep[w_show]["steps"]
for r in range(P["runs"]):
    ok = bool(sweep[w_show]["success"][r])
    ax.plot(steps_rec, sweep[w_show]["traj"][:, r].numpy(), color=plotting.color(0 if ok else 1), lw=0.8, alpha=0.7)
ax.axhline(S1, color="k", lw=0.8, ls=":")
ax.axhline(S2, color="k", lw=0.8, ls="--")
ax.set_ylim(0, 0.55)
ax.set_xlabel("projected GD step")
ax.set_ylabel(r"speed $-\mathcal{L}_0$")
ax.set_title(f"width {w_show}", fontsize=8)
ax = axes[2]
n = P["runs"]
k = frac * n
z = 1.96
centre = (k + z * z / 2) / (n + z * z)
half = z * np.sqrt(k * (n - k) / n + z * z / 4) / (n + z * z)
ax.errorbar(widths, frac, yerr=[frac - (centre - half), (centre + half) - frac], fmt="o-", color=plotting.color(0),
            capsize=3)
ax.set_xscale("log", base=2)
ax.set_xticks(widths, [str(w) for w in widths])
ax.minorticks_off()
ax.set_ylim(-0.05, 1.05)
ax.set_xlabel("hidden width")
ax.set_ylabel("share of successful runs")
glue("sts2-fig-sweep", fig, display=False)
plt.close(fig)

fig, axes = plotting.subplots(len(widths), height=2.2, sharey=True)
for ax, w in zip(np.atleast_1d(axes), widths):
    for r in range(P["runs"]):
        ok = bool(sweep[w]["success"][r])
        ax.plot(sweep[w]["steps"], sweep[w]["traj"][:, r].numpy(), color=plotting.color(0 if ok else 1), lw=0.6,
                alpha=0.6)
    ax.axhline(S1, color="k", lw=0.6, ls=":")
    ax.set_title(f"width {w}", fontsize=8)
    ax.set_ylim(0, 0.55)
    ax.set_xticks([0, P["steps"]])
np.atleast_1d(axes)[0].set_ylabel(r"speed $-\mathcal{L}_0$")
glue("sts2-fig-all", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} sts2-fig-sweep
# :name: fig-sts2-sweep
# Figure 2 of the paper, recomputed. Left: the eight points, coloured by their loss gradient.
# Centre: the speed $-\mathcal L_0$ along the projected-GD runs at one width; runs that end above
# $\sqrt2-1$ (dotted) are blue and successful, the others orange; dashed: $1/2$. Right: the share
# of successful runs against the width, with 95% Wilson intervals.
# ```
#
# ```{glue:figure} sts2-fig-all
# :name: fig-sts2-all
# Figure 6 of the paper, recomputed: every run at every width (blue: successful).
# ```
#
# ## Kinks, and what "escape direction" means here
#
# At the network of Eq. (2) the four diagonal points have pre-activation exactly 0 in the second
# layer ($|x_1|=|x_2|$ there), and at the rank-one optima the axis points orthogonal to $w_\phi$
# have pre-activation 0 in the first. $\mathcal L_0$ is not differentiable at such points, so
# Definition 2.1's condition $\nabla\mathcal L_0(\rho)=-s\rho$ has no meaning there: with the
# convention $\sigma'(0)=0$ the KKT residual of Eq. (2) is {glue:text}`sts2-eq2-kkt`, although no
# nearby point is faster. Started from Eq. (2) (embedded in width {glue:text}`sts2-warm-width`)
# with a random perturbation of size $10^{-3}$, projected gradient descent returns to speed
# {glue:text}`sts2-warm-speed` and never above $1/2$; the optimum is a minimiser of $\mathcal L_0$
# on the sphere, as the paper says, but a non-smooth one. Gradient flow from a small
# initialisation can still approach it (the solver's runs do); Definition 2.1 would have to be
# read with Clarke subgradients to cover it.

# %%
eq2_kkt = float(lo.kkt_residual(eq2_fixed, X, G))
w_warm = 16
init = [W.unsqueeze(0).expand(8, -1, -1).clone() for W in ex.embed(eq2_fixed, w_warm)]
warm = escape.solve_escape(X, G, depth=3, widths=[w_warm] * 8, init=init, jitter=1e-3, steps=P["steps"], lr=P["lr"],
                           lr_final=P["lr_final"], generator=gen)
warm_max = float(warm.speed.max())
warm_peak = float(warm.speeds.max())
print(f"Eq. (2): KKT residual with sigma'(0) = 0: {eq2_kkt:.2f}; perturbed restarts end at speeds "
      f"{float(warm.speed.min()):.6f}-{warm_max:.9f}, never above {warm_peak:.9f} along the way")
glue("sts2-eq2-kkt", f"{eq2_kkt:.2f}", display=False)
glue("sts2-warm-width", w_warm, display=False)
glue("sts2-warm-speed", f"{warm_max:.6f}", display=False)
ledger.below("eq2-local-optimum", "Example 1, footnote 2", "perturbed restarts from Eq. (2) do not find a faster "
             "direction (largest speed along the runs; implied by the certificate below)",
             "doubts that anything beats 1/2", warm_peak, 0.5 + 1e-6, fmt=".6f", items="fn2", bearing="control", origin="paper: 1/2 (1e-6: rounding)")
ledger.above("eq2-kink", "Def. 2.1", r"Eq. (2) sits on a kink: with $\sigma'(0) = 0$ its KKT residual is far from 0",
             r"escape directions satisfy $\nabla\mathcal L_0 = -s\rho$", eq2_kkt, 0.5, fmt=".2f", items="def21", bearing="qualifies",
             origin="prior",
             falsifier=r"a KKT residual of Eq. (2) ($\sigma'(0) = 0$) of 0.5 or less")

# %% [markdown]
# ## Certificates: nothing escapes faster than $1/2$
#
# The solver's runs say that no direction it found beats $1/2$; they cannot say that none
# exists. For this example the optimal speed can be certified, at any width, because the inputs
# lie in the plane (`certificates`, our derivation, not the paper's). A unit first-layer neuron
# at angle $\phi$ has the feature vector $\Phi(\phi)_j=\sigma(\cos\phi\,x_{j1}+\sin\phi\,x_{j2})$
# on the eight points, and with $g=-G$:
#
# - **Depth 2.** $s=\sum_iW_2[i]\lVert W_1[i,:]\rVert\langle g,\Phi(\phi_i)\rangle$ and
#   $\sum_i\lvert W_2[i]\rvert\lVert W_1[i,:]\rVert\le1$ on the sphere (AM-GM), so
#   $s^*(2)=\max_\phi\lvert\langle g,\Phi(\phi)\rangle\rvert$: one neuron is optimal, and the
#   maximum of this piecewise-sinusoidal function is computed exactly (ends and peaks of each arc
#   between kinks): {glue:text}`sts2-cert2`, which is $\sqrt2-1$.
# - **Depth 3.** The second-layer pre-activations of a unit are $z=P\tilde z$ with $P\ge0$ and
#   $\tilde z$ in $K$, the symmetric convex hull of the features, and the path norm
#   $\sum_k\lvert W_3[k]\rvert P_k\le\lVert W_3\rVert\lVert W_2\rVert_F\lVert W_1\rVert_F\le1$,
#   so at any width $s^*(3)\le V=\max_{\tilde z\in K}\lvert\langle g,\sigma(\tilde z)\rangle\rvert$
#   (with equality for wide enough networks). On each of the $2^8$ sign patterns of $\tilde z$ the
#   ReLU is linear, and for every $\lambda\ge0$ the value $\max_\phi\lvert(a_S+\lambda\circ s)\cdot
#   \Phi(\phi)\rvert$ bounds the pattern's maximum (weak duality): each $\lambda$ is a
#   **certificate**. A linear program on {glue:text}`sts2-cert-grid` angles (plus the kinks) finds
#   $\lambda$ for each pattern and each sign of the output ({glue:text}`sts2-cert-n` programs); its
#   value is also the speed of a network built from those angles (a lower bound), and the
#   certificate is then evaluated exactly over all angles, after averaging over the symmetries of
#   the octagon (which closes the gap that the grid leaves).
#
# The certified bound is $s^*(3)\le$ {glue:text}`sts2-cert3` at every width, and the linear
# programs' networks reach {glue:text}`sts2-cert3-lower`; {glue:text}`sts2-cert-tight` of the
# patterns attain the bound. So $s^*(3)=1/2$ exactly: footnote 2's doubt is right at depth 3, and
# with $s^*(2)=\sqrt2-1$ the optimal speed rises strictly from depth 2 to depth 3
# (Proposition 3.2), by certificates rather than by the solver. (That last row, `prop32-certified`,
# is arithmetic on the two certified values, so it is listed as a control; the findings are
# `ex1-depth2-certified` and `fn2-certified`.)

# %%
cert2 = certificates.depth2_speed(X, G)
cert3 = certificates.depth3_certificate(X, G, grid=P["cert_grid"])
print(f"depth 2: s*(2) = {cert2:.15f} (sqrt(2) - 1 = {S1:.15f}); depth 3: certified s*(3) <= {cert3.upper:.15f}, "
      f"linear programs' networks reach {cert3.lower:.15f}; {cert3.tight_patterns} of {len(cert3.per_pattern)} "
      f"(sign, pattern) problems attain the bound")
for key, val in {"cert2": f"{cert2:.12f}", "cert3": f"{cert3.upper:.12f}", "cert3-lower": f"{cert3.lower:.12f}",
                 "cert-grid": P["cert_grid"], "cert-n": len(cert3.per_pattern),
                 "cert-tight": f"{cert3.tight_patterns} of {len(cert3.per_pattern)}"}.items():
    glue(f"sts2-{key}", val, display=False)
ledger.close("ex1-depth2-certified", "Example 1 (derived), Prop. 3.2", "at depth 2 one neuron is optimal: $s^*(2) = "
             r"\max_\phi \lvert\langle g, \Phi(\phi)\rangle\rvert$ (exact, any width)", r"$\sqrt2 - 1$ (the best rank-one speed)", cert2, S1,
             atol=1e-12, fmt=".12f", items=["ex1", "prop32"], bearing="supports", origin="theory",
             falsifier=r"the certified depth-2 optimum off $\sqrt2 - 1$ by more than 1e-12")
ledger.below("fn2-certified", "Sec. 4, footnote 2", "at depth 3 and any width nothing escapes faster than 1/2: the "
             "dual certificates over the $2^8$ sign patterns bound $s^*(3)$ (certified bound minus 1/2)",
             "doubts that anything beats 1/2", cert3.upper - 0.5, 1e-9, fmt=".1e", items=["fn2", "ex1"],
             bearing="supports", origin="theory: 1/2, and 1e-9 for rounding",
             falsifier="a dual certificate bounding $s^*(3)$ above 1/2 + 1e-9 (a faster depth-3 escape not excluded)")
ledger.close("cert-lp-lower", "Example 1, Eq. (2)", "the linear programs' best network reaches 1/2 (a check that "
             "the programs see the construction of Eq. (2))", "1/2", cert3.lower, 0.5, atol=1e-9, fmt=".12f",
             items="ex1", bearing="control", origin="theory")
ledger.above("prop32-certified", "Prop. 3.2, Example 1", "the optimal speed rises strictly from depth 2 to 3: "
             "1/2 (Eq. (2), a lower bound on $s^*(3)$) minus the certified $s^*(2)$", "non-decreasing",
             0.5 - cert2, 0.0, fmt=".4f", items=["prop32", "ex1"], bearing="control", origin="theory")

# %% [markdown]
# ## Conclusion
#
# Example 1 holds up: the best rank-one speed is $\sqrt2-1$, a network with a rank-two first layer
# escapes at $1/2$ (once the sign of $W_3$ in Eq. (2) is fixed), and projected gradient descent
# finds that direction more often in wider networks (Figures 2 and 6); no run finds anything
# faster, and linear-programming certificates prove that nothing is faster at depth 3, at any
# width ($s^*(3)=1/2$), and that one neuron is optimal at depth 2 ($s^*(2)=\sqrt2-1$). The rank-two structure is confined to the first layer, in the construction and in every
# optimum the solver finds, so "the first two weight matrices are rank 2" (Section 1.3) describes
# the example wrongly: the escape direction is a rank-two layer followed by rank-one layers, the
# "half bottleneck" the paper argues for. The optima sit on kinks of the ReLU, which Definition 2.1
# does not cover. How the structure develops with depth is the subject of
# {doc}`03_structure_of_escape_directions`.
#
# **How the tolerances are set.** The closed forms and the certificates are compared at
# $10^{-12}$-$10^{-9}$ (float64 rounding).
# Success is the paper's criterion (faster than $\sqrt2-1$) with a margin of $10^{-3}$, well above
# the solver's final accuracy (the decayed step leaves runs within about $10^{-3}$ of their limit).
# **Changed after seeing seed 0.** The sweep first used the step 0.1 decayed to 1% of it; after
# 1500 steps some runs of the widest networks had passed $\sqrt2-1$ without having converged
# (speeds between 0.415 and 0.499, second layers not yet rank one), and `fig2-rank-two` failed. A
# pilot on seeds 0-4 with the step 0.3 decayed to 0.1% of it brought every successful run to
# within $5\cdot10^{-4}$ of $1/2$ with the same widths and budget; the page uses that step. The
# claims' thresholds did not change. **Restated after a review on unseen seeds.** `fig2-rank-two`
# said that *every* successful run ends at $1/2$ with a rank-two first layer; on seeds 0-4 every
# one did, but a run that crosses $\sqrt2-1$ late in the budget need not have converged, so the
# claim is now the share of such runs (at least 0.9), and `w2-rank-one` looks at the runs that
# reached $1/2$. **Relabelled in a second review:** `rank-one-solver`, `fn2-nothing-faster` and
# `eq2-local-optimum` are controls, not findings: Eq. (6) and the certificates bound every
# rank-one network by $\sqrt2-1$ and every depth-3 network by $1/2$, so these solver rows could
# fail only through a bug (of the solver or of the certificates); they cross-check the
# certificates.
# The width trend thresholds (a share above 0.5 at the largest width and an increase of at least
# 0.25) are the guide's proposals, fixed before the runs; "rank two" means $s_2/s_1(W_1)\ge0.5$
# and "rank one" $s_2/s_1(W_2)\le0.05$, also the guide's.
#
# ## Claims

# %% tags=["nbval-check-output"]
ledger.report()
