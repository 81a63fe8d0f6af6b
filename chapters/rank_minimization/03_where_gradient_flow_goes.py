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
# # Where gradient flow goes
#
# The proofs of Theorems 2 and 3 of {cite:t}`timor2023implicit` rest on a picture of the plane
# of first-layer weights: four cones $\mathcal D,\mathcal S,\mathcal S_1,\mathcal S_2$ (their
# Figure 2) and, inside $\mathcal S_i$, a reachable region $\mathcal A_i$ and a final region
# $\mathcal F_i$ where a neuron can end (their Figure 3). The paper draws them as schematics.
# This page draws them from simulation instead: each initial pair of neuron directions is one
# run of a batch, and the outcome (converged or stuck, and the stable rank reached) becomes a
# map over the torus of initial angles, with the theory's region boundaries on top. The
# setting and notation are those of the first two pages, {doc}`01_two_points_two_neurons` and
# {doc}`02_constant_probability`: a
# 2-2-2 ReLU network $V\sigma(W\mathbf x)$, square loss on two unit inputs at angle $\theta$,
# rows $\mathbf w_i^\top$ of $W$ (shape (out, in) as on the notation page), stable rank
# $\mathrm{srank}$ ({prf:ref}`def-stable-rank`).
#
# :::{admonition} What this page shows
# - Lemma 13's guarantee (a start with one neuron in each of $\mathcal S_1,\mathcal S_2$ and
#   $\mathbf v(0)=\mathbf 0$ converges and stays split) holds on every pixel of the map away
#   from the region boundaries, and fails for the same starts when $\mathbf v(0)\neq\mathbf 0$.
#   Lemma 5 (a start with a dead neuron never converges) holds by construction of the gradient.
# - Almost half of the torus ({glue:text}`rank2-120-open` at $\theta=120^\circ$,
#   {glue:text}`rank2-paper-open` for the paper's dataset) is covered by no theorem. There the runs
#   still converge in most cases when a neuron starts in $\mathcal S$ (active on both inputs), and
#   never when both neurons start in the same $\mathcal S_i$.
# - On split starts the stable rank reached equals the closed form of the previous page (and
#   not the cruder limit without Lemma 9's balance correction); where a neuron starts in
#   $\mathcal S$ it varies with that neuron's initial direction.
# - Every neuron of a run that ends split lands in the final region $\mathcal F_i$ of the proof of
#   Lemma 6 (the paper's Figure 3, here drawn from simulation).
#
# **Take away:** the paper's proofs describe exactly the part of the initialisations they
# cover; the rest of the map, where the lowest stable ranks of the previous page come from, is
# open. The depth results of the paper are on {doc}`04_depth_helps`.
# :::

# %% tags=["parameters"]
profile = "ci"   # "ci": CPU, under a minute; "full": finer grids and smaller steps (GPU)
seed = 0
device = "auto"

# %%
PROFILES = {
    # grid: initial angles per axis (grid x grid runs per dataset); lr * steps = GF time
    "ci": dict(grid=96, lr=1e-2, steps=15_000, n_traj=24),
    "full": dict(grid=512, lr=1e-3, steps=150_000, n_traj=48),
}

# %%
import math

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.colors import ListedColormap
from matplotlib.patches import Wedge
from myst_nb import glue

from implicit_bias import plotting
from implicit_bias.rank_minimization import two_neuron as tn
from implicit_bias.chapter import start_chapter
from implicit_bias.claims import Ledger

P, dev = start_chapter(PROFILES, profile=profile, seed=seed, device=device)
ledger = Ledger("rank_minimization/03_where_gradient_flow_goes")
gen = torch.Generator().manual_seed(seed)
D = torch.float64
DEG = 180 / math.pi

# %% [markdown]
# ## Two datasets
#
# A dataset with a visible geometry, $\theta=120^\circ$ ($\mathbf x_1,\mathbf x_2$ at $30^\circ$
# and $150^\circ$, $\mathbf y_{1,2}=\mathbf e_{1,2}$), and the paper's Figure 1 dataset
# ($\theta\approx90.58^\circ$). Both satisfy Assumptions 1-2. Following Theorem 3, the second
# layer starts at $\mathbf v(0)=\mathbf 0$ and each neuron at
# $\mathbf w_i(0)=r(\cos\varphi_i,\sin\varphi_i)$; with $\mathbf v(0)=0$ the run is a
# deterministic function of $(\varphi_1,\varphi_2)$. The radius $r$ is 0.9 times Theorem 3's
# bound $\frac{\sqrt3}2\min\{\sin\frac{\pi-\theta}4,\sin(\theta-\frac\pi2)\}$. The seed only
# shifts the grid by a random fraction of a cell.
#
# ```{prf:definition} Reachable and final regions (proof of Lemma 6)
# :label: rank-def-AF
# :nonumber:
# Let $\mathcal T_i=\mathcal S_i\cap\bar B(\|\mathbf w_i(0)\|)$ and let $\mathcal U_i=\{\mathbf
# w:\mathbf w^\top\mathbf x_{3-i}=0,\ \mathbf w^\top\mathbf x_i>0\}$ be the ray that
# $\mathcal S_i$ shares with $\mathcal S$. Then $\mathcal A_i=\{\mathbf e+\lambda\mathbf x_i:
# \mathbf e\in\mathcal T_i\cup\mathcal U_i,\ \lambda\ge0\}$ (the paper writes
# $\mathcal U_i=\partial\mathcal S_i\setminus\mathcal D$; it is the wedge between $\mathcal U_i$
# and $\mathbf x_i$, of width $\theta-\pi/2$, plus a half-strip of half-width
# $\|\mathbf w_i(0)\|$ along $\mathbf x_i$), and $\mathcal F_i=\mathcal A_i\setminus
# B\big(\sqrt{1-|\epsilon_0^{(i)}|}\big)$ with $\epsilon_0^{(i)}=\|\mathbf w_i(0)\|^2-\|\mathbf
# v_i(0)\|^2$. A neuron that stays in $\mathcal S_i$ from some time on and ends at zero loss
# ends in $\mathcal F_i$.
# ```

# %%
def dataset(deg1: float, deg2: float) -> tuple[torch.Tensor, torch.Tensor]:
    X = torch.stack([tn.unit(torch.tensor(deg1 / DEG, dtype=D)), tn.unit(torch.tensor(deg2 / DEG, dtype=D))], -1)
    return X, torch.eye(2, dtype=D)


Xp, Yp = tn.paper_dataset()
DATA = {"120": dataset(30.0, 150.0), "paper": (Xp, Yp)}
G = P["grid"]
shift = float(torch.rand(1, generator=gen, dtype=D))
phi = 2 * math.pi * (torch.arange(G, dtype=D) + shift) / G
P1, P2 = torch.meshgrid(phi, phi, indexing="ij")          # P1[a, b] = phi_1 of row a
maps = {}
for name, (X, Y) in DATA.items():
    theta = float(tn.angle_between(X[:, 0], X[:, 1]))
    r0 = 0.9 * float(tn.thm3_init_bound(theta))
    W0 = r0 * torch.stack([tn.unit(P1.reshape(-1)), tn.unit(P2.reshape(-1))], dim=1)
    sim = tn.simulate(W0.to(dev), torch.zeros_like(W0).to(dev), X.to(dev), Y.to(dev), lr=P["lr"], steps=P["steps"])
    cls = tn.outcome_classes(sim, X.to(dev)).cpu()
    codes0 = tn.region_codes(W0, X)
    maps[name] = dict(X=X, Y=Y, theta=theta, r0=r0, W0=W0, sim=sim, cls=cls.view(G, G), codes0=codes0,
                      sr=tn.stable_rank_2x2(sim.W.cpu()).view(G, G))
    frac = [float((cls == c).double().mean()) for c in range(4)]
    print(f"{name:5s}: theta = {theta * DEG:.2f} deg, r = {r0:.4f}; outcome fractions "
          + ", ".join(f"{n}: {f:.3f}" for n, f in zip(tn.OUTCOME_NAMES, frac)))

# %% [markdown]
# ## The map from initial directions to outcomes
#
# Lemma 13 (under Assumptions 1-2, $\mathbf v(0)=\mathbf 0$ and $\mathbf w_i(0)\in\operatorname{int}
# \mathcal S_i$, GF converges to zero loss with $\mathbf w_i(\infty)\in\operatorname{int}\mathcal
# S_i$) says that runs starting in $\operatorname{int}\mathcal S_1\times\operatorname{int}
# \mathcal S_2$ (or swapped) converge to zero loss and stay split; Lemma 5 says that runs with a
# neuron starting in $\mathcal D$ never converge. Both are rectangles on the torus of initial
# angles, whose sides are the region boundaries of Definition 1 of the paper. The theory says
# nothing about the rest of the torus, where a neuron starts in $\mathcal S$, or both start in
# the same $\mathcal S_i$.

# %%
def boundary_cells(codes0: torch.Tensor) -> torch.Tensor:
    """Runs whose initial angles lie within one grid cell of a region boundary."""
    c = codes0.view(G, G, 2)
    near = torch.zeros(G, G, dtype=torch.bool)
    for shift_ in (-1, 1):
        near |= (torch.roll(c[..., 0], shift_, 0) != c[..., 0])[:, :] | (torch.roll(c[..., 1], shift_, 1) != c[..., 1])
    return near.reshape(-1)


res = {}
for name, M in maps.items():
    cls = M["cls"].reshape(-1)
    codes0 = M["codes0"]
    away = ~boundary_cells(codes0)
    split0 = tn.is_split(codes0) & away
    dead0 = (codes0 == tn.DEAD).any(-1) & away
    both_S = (codes0 == tn.BOTH).any(-1) & ~(codes0 == tn.DEAD).any(-1) & away
    same = ((codes0[:, 0] == codes0[:, 1]) & (codes0[:, 0] != tn.BOTH) & (codes0[:, 0] != tn.DEAD)) & away
    conv = M["sim"].converged.cpu()
    res[name] = dict(split_ok=float((cls[split0] == 0).double().mean()),
                     dead_ok=float((cls[dead0] == 2).double().mean()),
                     success=float(conv.double().mean()),
                     lo=float(tn.thm3_probability_bound(M["theta"])), hi=float(tn.no_dead_probability(M["theta"])),
                     S_conv=float(conv[both_S].double().mean()), same_conv=float(conv[same].double().mean()),
                     split_bad=int((cls[split0] != 0).sum()), n_split=int(split0.sum()),
                     same_n=int(same.sum()), same_k=int(conv[same].sum()))
    R_ = res[name]
    print(f"{name:5s}: split starts -> converged split {R_['split_ok']:.3f}; dead starts -> stuck dead "
          f"{R_['dead_ok']:.3f}; success {R_['success']:.3f} (area of S1xS2 {R_['lo']:.3f}, no-dead area "
          f"{R_['hi']:.3f}); neuron starting in S: converged {R_['S_conv']:.3f}; both in the same S_i: "
          f"converged {R_['same_conv']:.3f}")
    glue(f"rank2-{name}-success", f"{R_['success']:.3f}", display=False)
    glue(f"rank2-{name}-Sconv", f"{R_['S_conv']:.2f}", display=False)
    glue(f"rank2-{name}-same", f"{R_['same_conv']:.2f}", display=False)
    glue(f"rank2-{name}-open", f"{R_['hi'] - R_['lo']:.2f}", display=False)   # neither S1 x S2 nor a dead start

# negative control for Lemma 13: the same split starts with a second layer that does not start
# at 0 (each column uniform on the circle of radius r, as in the paper's experiment)
ctrl = {}
for name, M in maps.items():
    sel = tn.is_split(M["codes0"]) & ~boundary_cells(M["codes0"])
    Wsel = M["W0"][sel]
    Vsel = tn.sphere_rows(len(Wsel), M["r0"], gen).transpose(1, 2).contiguous()
    sim_v = tn.simulate(Wsel.to(dev), Vsel.to(dev), M["X"].to(dev), M["Y"].to(dev), lr=P["lr"], steps=P["steps"])
    ctrl[name] = float(sim_v.converged.double().mean())
print("control: split starts with v(0) on the circle of radius r: converged " +
      ", ".join(f"{name} {v:.3f}" for name, v in ctrl.items()))
glue("rank2-ctrl", ", ".join(f"{v:.2f}" for v in ctrl.values()), display=False)

bad13 = sum(r["split_bad"] for r in res.values())
ledger.holds("lemma13-map", "Lemma 13", "every start in S1 x S2 (away from the boundaries) converges and ends split "
             "(count of pixels that do not, both maps)", "always", f"{bad13} of {sum(r['n_split'] for r in res.values())}",
             bad13 == 0, tolerance="0", items="lemma13", bearing="verifies", value=bad13, hi=0.5, origin="theory",
             falsifier="a start in S1 x S2 (away from the boundaries) that does not converge or does not end split")
ledger.below("lemma13-control", "Lemma 13", "negative control: the same starts with $v(0)\\neq 0$ do not all converge "
             "(larger converged fraction of the two datasets)", "(not covered)", max(ctrl.values()), 1.0, fmt=".3f",
             items="lemma13", bearing="control", origin="prior")
same_k = sum(r["same_k"] for r in res.values())
ledger.holds("same-Si-stuck", "Sec. 3.1", "no run whose neurons both start in the same $\\mathcal S_i$ converges (count that do, "
             "both maps; no lemma covers these starts): with the dead starts, a large share of initialisations never "
             "reaches zero loss, so 'avoids low-rank solutions with high probability' is a statement about the runs "
             "that converge", "avoids low rank with high probability",
             f"{same_k} of {sum(r['same_n'] for r in res.values())}", same_k == 0, tolerance="0",
             items="sec31-high-prob", bearing="qualifies", value=same_k, hi=0.5, origin="prior: 0, as for the lemmas",
             falsifier="a run whose neurons both start in the same $\\mathcal S_i$ and that converges")

# %%
def show_torus(ax, image, M, xlabel, ylabel, **imshow_kw):
    """Draw a map over the initial angles (phi_1, phi_2) with the region boundaries dashed."""
    im = ax.imshow(image.T.numpy(), origin="lower", extent=[0, 360, 0, 360], interpolation="nearest",
                   aspect="equal", **imshow_kw)
    for b in tn.region_boundaries(M["X"]).numpy() * DEG:
        ax.axvline(b, color="w", lw=0.8, ls="--")
        ax.axhline(b, color="w", lw=0.8, ls="--")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(rf"$\theta$ = {M['theta'] * DEG:.1f}$^\circ$")
    ax.set_xticks([0, 90, 180, 270, 360])
    ax.set_yticks([0, 90, 180, 270, 360])
    ax.grid(False)
    return im


cmap = ListedColormap([plotting.color(0), plotting.color(4), "0.35", plotting.color(1)])
fig, axes = plotting.subplots(2, height=3.4)
for ax, (name, M) in zip(axes, maps.items()):
    show_torus(ax, M["cls"], M, r"initial angle $\varphi_1$ of $w_1$ (deg)",
               r"initial angle $\varphi_2$ of $w_2$ (deg)", cmap=cmap, vmin=-0.5, vmax=3.5)
handles = [plt.Rectangle((0, 0), 1, 1, color=cmap(i)) for i in range(4)]
axes[1].legend(handles, tn.OUTCOME_NAMES, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
glue("rank2-fig-map", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} rank2-fig-map
# :name: fig-rank2-map
# Outcome of gradient descent (loss below $10^{-4}$ or not) as a function of the initial
# directions of the two first-layer neurons ($\mathbf v(0)=0$, small $\|\mathbf w_i(0)\|$),
# one run per pixel. Dashed lines: the boundaries of the cones $\mathcal D,\mathcal S,\mathcal
# S_1,\mathcal S_2$ of each neuron; they cut the torus into rectangles. Lemma 13 predicts that
# the rectangles where one neuron starts in $\mathcal S_1$ and the other in $\mathcal S_2$ are
# blue. The strips where a neuron starts in $\mathcal D$ are grey by Lemma 5, which holds by
# construction of the gradient: the simulator stops such runs at once, so the grey strips are
# imposed, not found. Blue outside those rectangles, yellow and orange are outcomes no theorem
# predicts. In the right panel the
# thin diagonal lines are symmetric starts: on $\varphi_1=\varphi_2$ the two neurons are identical
# and stay identical, so zero loss is impossible; on $\varphi_1+\varphi_2=180^\circ$ the start is
# mirror symmetric (the reflection that swaps $\mathbf x_1,\mathbf x_2$ also swaps
# $\mathbf y_1=\mathbf e_1,\mathbf y_2=\mathbf e_2$), and those runs end split.
# ```
#
# Every split start converges and stays split (claim `lemma13-map`); the same starts with a
# second layer that does not start at 0 (columns on the circle of radius $r$) converge only in a
# fraction {glue:text}`rank2-ctrl` of the cases, so the check can fail and Lemma 13's hypothesis
# $\mathbf v(0)=0$ matters. The success fraction is {glue:text}`rank2-120-success` at
# $\theta=120^\circ$ and {glue:text}`rank2-paper-success` for the paper's dataset, well above
# the area $2(\theta/2\pi)^2$ of the guaranteed rectangles. Outside the rectangles: when one neuron starts in $\mathcal S$ and
# none in $\mathcal D$, the run converges in most cases ({glue:text}`rank2-120-Sconv` and
# {glue:text}`rank2-paper-Sconv` of those starts), and when both start in the same
# $\mathcal S_i$ it never does ({glue:text}`rank2-120-same` and {glue:text}`rank2-paper-same`
# converge): both neurons serve one input, and inside $\mathcal S_i$ a neuron only moves along
# $\mathbf x_i$, which takes it further from the other input when $\theta>\pi/2$.
#
# ## The stable rank reached, and the closed form
#
# Colour the same torus by the stable rank of $W(\infty)$ on converged runs. On the split
# rectangles the closed form for the limit of split runs (previous page) predicts every pixel.

# %%
cf_err, cf_naive, sr_spread = {}, {}, {}
for name, M in maps.items():
    split0 = tn.is_split(M["codes0"]) & M["sim"].converged.cpu()
    Wc, _ = tn.closed_form_limit(M["W0"], M["X"], M["Y"])
    Wn, _ = tn.closed_form_limit(M["W0"], M["X"], M["Y"], balance=False)      # without Lemma 9's correction
    cf_err[name] = float((tn.stable_rank_2x2(Wc) - M["sr"].reshape(-1))[split0].abs().max())
    cf_naive[name] = float((tn.stable_rank_2x2(Wn) - M["sr"].reshape(-1))[split0].abs().max())
    M["ideal_dev"] = float((M["sr"].reshape(-1) - tn.ideal_stable_rank(M["theta"]))[split0].abs().max())
    conv = M["sim"].converged.cpu()
    s_conv = M["sr"].reshape(-1)[conv & ~tn.is_split(tn.region_codes(M["sim"].W.cpu(), M["X"]))]
    sr_spread[name] = (float(s_conv.min()), float(s_conv.max())) if s_conv.numel() else (float("nan"),) * 2
    print(f"{name:5s}: max |srank - closed form| on split starts {cf_err[name]:.1e} (without the balance "
          f"correction {cf_naive[name]:.1e}); converged runs with a neuron in S: srank in [{sr_spread[name][0]:.3f}, "
          f"{sr_spread[name][1]:.3f}]; split value {float(tn.ideal_stable_rank(M['theta'])):.3f}")
glue("rank2-cf-err", f"{max(cf_err.values()):.1e}", display=False)
glue("rank2-cf-naive", f"{cf_naive['120']:.1e}", display=False)
for name, M in maps.items():
    glue(f"rank2-{name}-ideal-dev", f"{M['ideal_dev']:.1e}", display=False)
ledger.below("closed-form-map", "Lemmas 7, 9, 13", "stable rank on split starts equals the closed form "
             "(max abs error over both maps)", "not stated", max(cf_err.values()), 2e-4, fmt=".1e",
             items=["lemma7", "lemma9", "lemma13"], bearing="verifies",
             origin="after-seeds: lowered from 1e-3 after seeing the control (1e-3 did not separate the two limits)",
             falsifier="a split start whose stable rank misses the closed form by 2e-4 or more")
ledger.above("closed-form-control", "Lemma 9", "negative control: the limit without Lemma 9's balance correction "
             "($w^\\top x_j = 1$) misses by more than the tolerance on the 120-degree map (its initialisation radius is "
             "large enough to tell them apart)", "-", cf_naive["120"], 2e-4, fmt=".1e", items="lemma9",
             bearing="control", origin="prior")

fig, axes = plotting.subplots(2, height=3.4)
for ax, (name, M) in zip(axes, maps.items()):
    sr = M["sr"].clone()
    sr[~M["sim"].converged.cpu().view(G, G)] = float("nan")
    im = show_torus(ax, sr, M, r"$\varphi_1$ (deg)", r"$\varphi_2$ (deg)", vmin=1.0, vmax=2.0, cmap="viridis")
fig.colorbar(im, ax=axes, label="stable rank of $W(\\infty)$", shrink=0.8)
glue("rank2-fig-srank", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} rank2-fig-srank
# :name: fig-rank2-srank
# Stable rank of the first layer at convergence over the same torus (white: not converged).
# On the split rectangles it stays within {glue:text}`rank2-120-ideal-dev` ($\theta=120^\circ$)
# and {glue:text}`rank2-paper-ideal-dev` (paper's dataset) of $2/(1+|\cos\theta|)$ ($4/3$ and
# 1.98), and equals the closed form to the tolerance of claim `closed-form-map`; where a neuron
# starts in $\mathcal S$ it varies with that neuron's initial direction, over most of the colour range.
# Dashed lines: the region boundaries, as in the previous figure.
# ```
#
# ## Where the neurons end: the regions $\mathcal A_i$ and $\mathcal F_i$
#
# In the plane of first-layer weights we draw the cones, the regions $\mathcal A_i$ and
# $\mathcal F_i$ of {prf:ref}`the definition above <rank-def-AF>` for the radius used above (with $\mathbf v(0)=0$,
# $\epsilon_0^{(i)}=r^2$), a few trajectories, and the end points of all converged runs of the
# $\theta=120^\circ$ map. Lemma 6's proof places every neuron of a run that ends split in
# $\mathcal F_1\cup\mathcal F_2$; we test membership for every such run of both maps.

# %%
mem, wedge, outside, n_es = {}, {}, {}, {}
for name, M in maps.items():
    Wend = M["sim"].W.cpu()
    conv = M["sim"].converged.cpu()
    codes = tn.region_codes(Wend, M["X"])
    es = conv & tn.is_split(codes)
    # gradient descent keeps ||w_i||^2 - ||v_i||^2 only up to a drift of the order of the step
    # (Lemma 9); F_i is drawn with the balance actually reached, r^2 plus the largest drift
    eps = M["r0"] ** 2 + float(M["sim"].balance_drift[es.to(dev)].max())
    ok = torch.ones(len(Wend), dtype=torch.bool)
    in_wedge = torch.ones(len(Wend), dtype=torch.bool)
    for n_ in range(2):
        for i, code in ((0, tn.S1), (1, tn.S2)):
            sel = codes[:, n_] == code
            ok[sel] &= tn.in_final_region(Wend[sel, n_], M["X"], i, M["r0"], eps, tol=1e-9)
            in_wedge[sel] &= tn.in_reachable(Wend[sel, n_], M["X"], i, 0.0, tol=1e-9)   # A_i without the strip
    mem[name] = float(ok[es].double().mean())
    outside[name], n_es[name] = int((~ok)[es].sum()), int(es.sum())
    wedge[name] = float((~in_wedge)[es].double().mean())
    print(f"{name:5s}: runs ending split with both neurons in F_1 u F_2: {mem[name]:.4f} of {int(es.sum())}; "
          f"with a neuron outside the wedge between U_i and x_i: {wedge[name]:.3f}")
glue("rank2-wedge", f"{max(wedge.values()):.2f}", display=False)
outF = sum(outside.values())
ledger.holds("lemma6-F", "Lemma 6 (proof), Fig. 3", "every run that ends split has its neurons in $F_1$ and $F_2$ "
             "(geometry exact; the radius uses the balance reached by gradient descent; count of runs outside, both "
             "maps)", "always", f"{outF} of {sum(n_es.values())}", outF == 0, tolerance="0", items=["lemma6", "fig3"],
             bearing="verifies", value=outF, hi=0.5, origin="theory",
             falsifier="a run ending split with a neuron outside $F_1$ or $F_2$")
ledger.above("lemma6-F-control", "Lemma 6 (proof)", "negative control: without the half-strip of width "
             "$\\lVert w_i(0)\\rVert$ along $x_i$ (the part of $A_i$ that the initialisation adds), some end points fall outside (fraction, "
             "larger of the two maps)", "-", max(wedge.values()), 0.0, fmt=".3f", items="lemma6", bearing="control",
             origin="prior")

# %%
M = maps["120"]
X, r0, theta = M["X"], M["r0"], M["theta"]
idx = torch.randperm(G * G, generator=gen)[: P["n_traj"]]
trj = tn.simulate(M["W0"][idx], torch.zeros(len(idx), 2, 2, dtype=D), X, M["Y"], lr=P["lr"], steps=P["steps"],
                  check_every=max(1, P["steps"] // 300), record=True)
fig, ax = plotting.subplots(1, height=4.2)
ang = {k: v for k, v in zip(("x1", "x2"), (math.atan2(X[1, 0], X[0, 0]) * DEG, math.atan2(X[1, 1], X[0, 1]) * DEG))}
Rmax = 1.6
regions = {"S1": (ang["x1"] - 90, ang["x2"] - 90), "S": (ang["x2"] - 90, ang["x1"] + 90),
           "S2": (ang["x1"] + 90, ang["x2"] + 90), "D": (ang["x2"] + 90, ang["x1"] + 270)}
shade = {"S1": plotting.color(5), "S2": plotting.color(3), "S": "white", "D": "0.8"}   # S unshaded: A_i is orange
for key, (a, b) in regions.items():
    ax.add_patch(Wedge((0, 0), Rmax, a, b, color=shade[key], alpha=0.18, lw=0))
    mid = (a + b) / 2 / DEG
    ax.text(1.45 * math.cos(mid), 1.45 * math.sin(mid), {"S1": r"$\mathcal{S}_1$", "S2": r"$\mathcal{S}_2$",
            "S": r"$\mathcal{S}$", "D": r"$\mathcal{D}$"}[key], ha="center", va="center")
# A_i and F_i, drawn by testing a fine grid of points
g = torch.linspace(-Rmax, Rmax, 500, dtype=D)
GX, GY = torch.meshgrid(g, g, indexing="xy")
pts = torch.stack([GX, GY], -1)
for i in range(2):
    A = tn.in_reachable(pts, X, i, r0).numpy()
    F = tn.in_final_region(pts, X, i, r0, r0**2, tol=0.0).numpy()
    ax.contourf(GX.numpy(), GY.numpy(), A.astype(float), levels=[0.5, 1.5], colors=[plotting.color(4)], alpha=0.45)
    ax.contourf(GX.numpy(), GY.numpy(), F.astype(float), levels=[0.5, 1.5], colors=[plotting.color(2)], alpha=0.6)
for r in range(len(idx)):
    for n_ in range(2):
        path = trj.trace_W[:, r, n_, :].numpy()
        ax.plot(path[:, 0], path[:, 1], color="k", lw=0.6, alpha=0.6)
endc = M["sim"].converged.cpu()
Wend = M["sim"].W.cpu()[endc]
ax.scatter(Wend[:, :, 0].reshape(-1), Wend[:, :, 1].reshape(-1), s=2, color=plotting.color(1), zorder=3,
           label="end points of converged runs")
for j in range(2):
    ax.annotate("", xy=(X[0, j], X[1, j]), xytext=(0, 0), arrowprops=dict(arrowstyle="->", color=plotting.color(0)))
    ax.text(1.08 * X[0, j], 1.08 * X[1, j] + 0.05, f"$x_{j + 1}$", color=plotting.color(0))
ax.plot([], [], color="k", lw=0.6, label="trajectories of $w_i(t)$")
ax.add_patch(plt.Rectangle((0, 0), 0, 0, color=plotting.color(4), alpha=0.45, label=r"$\mathcal{A}_i\setminus\mathcal{F}_i$"))
ax.add_patch(plt.Rectangle((0, 0), 0, 0, color=plotting.color(2), alpha=0.6, label=r"$\mathcal{F}_i$"))
ax.set_xlim(-Rmax, Rmax)
ax.set_ylim(-Rmax, Rmax)
ax.set_aspect("equal")
ax.set_xlabel("first coordinate of $w_i$")
ax.set_ylabel("second coordinate of $w_i$")
ax.legend(loc="lower left", fontsize=7)
glue("rank2-fig-plane", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} rank2-fig-plane
# :name: fig-rank2-plane
# The paper's Figures 2 and 3 drawn from the $\theta=120^\circ$ runs: the cones of
# Definition 1 (labelled; $\mathcal S_1$, $\mathcal S_2$, $\mathcal D$ lightly shaded, $\mathcal S$
# unshaded; $\mathbf x_1,\mathbf x_2$ as blue arrows), the
# reachable regions $\mathcal A_i$ (light orange and green together) and the final regions
# $\mathcal F_i$ (green: the part of $\mathcal A_i$ outside the disc of radius
# $\sqrt{1-|\epsilon_0^{(i)}|}$), trajectories of the two neurons of some runs (black) and the end
# points of both neurons of every converged run (dark orange). Split runs end on the green
# regions. Neurons that end in $\mathcal S$ (runs not covered by Lemma 6) end elsewhere in that
# cone, on the arc at the top.
# ```
#
# ## Conclusion
#
# Where the paper's lemmas apply, the simulation agrees with them pixel by pixel: split starts
# converge and stay split (Lemma 13, and not when $\mathbf v(0)\neq0$), split runs end in
# $\mathcal F_1\cup\mathcal F_2$ (Lemma 6) at the closed-form stable rank. The success fraction
# lies between the guaranteed area $2(\theta/2\pi)^2$ and the no-dead area
# $((\pi+\theta)/2\pi)^2$ (the lower end follows from Lemma 13 on the map, the upper end from
# Lemma 5). Since starts with a dead neuron and starts with both neurons in the same
# $\mathcal S_i$ never converge, the whole excess over the guaranteed area comes from starts with
# a neuron in $\mathcal S$, which no theorem covers and which produce the widest range of stable
# ranks.
#
# **How the tolerances are set.** Statements the lemmas make for every run are tested with
# tolerance 0 on all pixels more than one grid cell away from a region boundary (a pixel that
# straddles a boundary has no definite starting region). The same rule is applied to the
# observation that both neurons in the same $\mathcal S_i$ never converge. The closed form is
# compared at $2\cdot10^{-4}$ on the stable rank, which allows for the step; the version without
# the balance correction misses by {glue:text}`rank2-cf-naive` on the $120^\circ$ map (the paper's
# dataset has too small an initialisation radius to tell the two apart). An earlier version of
# this page used $10^{-3}$, which did not separate the two; the tolerance was lowered after
# seeing the control. Membership in
# $\mathcal A_i$ is tested exactly (gradient descent, like gradient flow, moves a neuron in
# $\mathcal S_i$ only along $\mathbf x_i$); the radius of the disc removed from $\mathcal A_i$
# uses the balance $\|\mathbf w_i\|^2-\|\mathbf v_i\|^2$ that gradient descent actually keeps,
# which drifts by a multiple of the step (Lemma 9 holds exactly only under gradient flow).
# Without the half-strip that the initialisation adds to $\mathcal A_i$, a fraction
# {glue:text}`rank2-wedge` of the runs that end split would fall outside.
#
# ## Claims

# %% tags=["nbval-check-output"]
ledger.report()
