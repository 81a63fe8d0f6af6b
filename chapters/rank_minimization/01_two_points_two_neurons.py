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
# # Two points, two neurons: no rank minimization
#
# Gradient flow on linear networks and matrix factorisation is often described as a heuristic
# for rank minimisation. {cite:t}`timor2023implicit` show that this description fails for ReLU
# networks already in the smallest interesting case: a depth-2 network with two hidden neurons
# fitting two points in the plane. Rank-1 interpolants always exist (Theorem 1), yet gradient
# flow from a small initialisation never finds them when the two inputs make an obtuse angle
# (Theorem 2). This page checks the constructions exactly and replicates the paper's only
# experiment (Figure 1) with {glue:text}`rank1-fig1-R` networks simulated as one batched
# computation instead of 288, enough to measure the frequencies the paper's argument rests on to
# a few parts in a thousand. The next page, {doc}`02_constant_probability`, turns to Theorem 3 (with
# constant probability, far from low rank) and to how the stable rank reached depends on the
# data.
#
# :::{admonition} What this page shows
# - Rank is measured by the stable rank $\mathrm{srank}(W)=\|W\|_F^2/\|W\|_2^2$
#   ({prf:ref}`def-stable-rank`; equivalently by
#   $\rho(W)=\|W\|_2/\|W\|_F=\mathrm{srank}(W)^{-1/2}$,
#   {prf:ref}`def-spectral-frobenius-ratio`). Both equal 1 exactly when
#   $\operatorname{rank}W=1$.
# - The constructions of Theorem 1 and Lemma 2 and the static Lemmas 3, 4 and 8 are verified on
#   random data (checks of the algebra: they hold for every network, so they are controls, not
#   findings); Lemma 5 and the balancedness of Lemma 9 hold by construction of the gradient.
# - Figure 1 of the paper is reproduced: the converged fraction is consistent with the paper's
#   79 of 288, no converged run has rank 1 (Theorem 2), and every one has stable rank at least
#   {glue:text}`rank1-fig1-srmin` in both layers, bounded away from 1.
# - Runs that start split (one neuron active on each input only) and end split reach the
#   closed-form stable rank $2/(1+|\cos\theta|)$; runs that end split after another start have
#   their row angle anywhere in Lemma 6's interval, so on this dataset their stable rank lies
#   between that value and 2; runs that end with a neuron active on both inputs, which no theorem
#   covers, spread lower.
# - On the paper's own experiment, the probability bound of Theorem 3 holds narrowly although
#   $\mathbf v(0)\neq\mathbf 0$, as the paper's remark after Theorem 3 says; the next page shows
#   that this does not carry over to wider input angles.
#
# **Take away:** for this two-neuron network gradient flow is not a rank minimiser; the next
# page, {doc}`02_constant_probability`, shows how far from rank 1 it stays as a function of the
# data, {doc}`03_where_gradient_flow_goes` maps which initialisations lead where, and
# {doc}`04_depth_helps` turns to the paper's positive results for deep networks.
# :::

# %% tags=["parameters"]
profile = "ci"   # "ci": CPU, about half a minute; "full": the paper's step size and horizon (GPU)
seed = 0
device = "auto"

# %%
PROFILES = {
    # fig1: runs of the paper's experiment (the paper: 288); lr * steps = gradient-flow time
    # (the paper: 1e-4 * 3e6 = 300); check: the first `check_runs` runs again at a smaller step
    "ci": dict(fig1_runs=100_000, fig1_lr=1e-2, fig1_steps=30_000,
               check_runs=64, check_lr=1e-3, check_steps=150_000, thm1_datasets=10_000),
    "full": dict(fig1_runs=100_000, fig1_lr=1e-4, fig1_steps=3_000_000,
                 check_runs=288, check_lr=1e-3, check_steps=300_000, thm1_datasets=1_000_000),
}

# %%
import math
from collections import Counter

import matplotlib.pyplot as plt
import numpy as np
import torch
from myst_nb import glue
from scipy import stats

from implicit_bias import plotting, spectra
from implicit_bias.rank_minimization import two_neuron as tn
from implicit_bias.chapter import start_chapter
from implicit_bias.claims import Ledger

P, dev = start_chapter(PROFILES, profile=profile, seed=seed, device=device)
ledger = Ledger("rank_minimization/01_two_points_two_neurons")
gen = torch.Generator().manual_seed(seed)
D = torch.float64
DEG = 180 / math.pi
glue("rank1-fig1-R", f"{P['fig1_runs']:,}", display=False)

# %% [markdown]
# ## The setting
#
# The network is $N_{W,V}(\mathbf x)=V\sigma(W\mathbf x)$ with $W,V\in\mathbb R^{2\times2}$,
# $\sigma(z)=\max\{0,z\}$ and no biases; in the book's notation $W_1=W$ and $W_2=V$. Row
# $\mathbf w_i$ of $W$ and column $\mathbf v_i$ of $V$ belong to hidden neuron $i$. Two
# samples $(\mathbf x_1,\mathbf y_1),(\mathbf x_2,\mathbf y_2)$ are the columns of
# $X,Y\in\mathbb R^{2\times2}$, and the loss is the sum
# $L(W,V)=\tfrac12\sum_{j}\|N_{W,V}(\mathbf x_j)-\mathbf y_j\|^2$. Gradient flow (GF) is
# $\dot{\boldsymbol\theta}=-\nabla L(\boldsymbol\theta)$ with $\sigma'(0)=0$; we simulate it by
# gradient descent with small steps, so GF time is step size times number of steps. Write
# $\theta=\measuredangle(\mathbf x_1,\mathbf x_2)$ for the input angle.
#
# The stable rank $\mathrm{srank}(M)=\|M\|_F^2/\|M\|_2^2\in[1,\operatorname{rank}M]$
# ({prf:ref}`def-stable-rank`) is the paper's measure of approximate rank in its Figure 1; its
# Theorems 4-5 use $\rho(M)=\|M\|_2/\|M\|_F=\mathrm{srank}(M)^{-1/2}$
# ({prf:ref}`def-spectral-frobenius-ratio`). For a $2\times2$ matrix whose rows are unit vectors
# at angle $\phi$, $\|M\|_2^2=1+|\cos\phi|$ and $\|M\|_F^2=2$, so $\mathrm{srank}(M)=2/(1+|\cos\phi|)$.
# With $W$ of shape (out, in) $=(2,2)$ as on the notation page, the rows $\mathbf w_i^\top$ of $W$
# are the incoming weights of the hidden neurons.
#
# ```{prf:definition} Regions of a neuron (Definition 1)
# :label: rank-def-regions
# :nonumber:
# For a neuron with incoming weights $\mathbf w$: $\mathbf w\in\mathcal D$ (dead) if
# $\mathbf w^\top\mathbf x_j\le0$ for both inputs; $\mathbf w\in\mathcal S$ if
# $\mathbf w^\top\mathbf x_j>0$ for both; $\mathbf w\in\mathcal S_j$ if it is active on
# $\mathbf x_j$ only. For unit inputs with $\theta\in(\pi/2,\pi)$ the cones $\mathcal S_1$ and
# $\mathcal S_2$ have angular width $\theta$, and $\mathcal S$ and $\mathcal D$ width $\pi-\theta$.
# ```
#
# A run's *pattern* is the unordered pair of its neurons' regions, e.g. $(\mathcal S_1,\mathcal
# S_2)$, which we call *split*: each neuron serves one input.
#
# ## Rank-1 interpolants exist
#
# ```{prf:theorem} Theorem 1
# :label: rank-thm1
# :nonumber:
# For every $(X,Y)\in\mathbb R^{2\times2}\times\mathbb R^{2\times2}$ with
# $\measuredangle(\mathbf x_1,\mathbf x_2)>0$ there are $W,V\in\mathbb R^{2\times2}$ with
# $N_{W,V}(X)=Y$ and $\operatorname{rank}W=1$.
# ```
#
# ```{prf:lemma} Lemma 2
# :label: rank-lem2
# :nonumber:
# Let $X\in\mathbb R^{d_{\rm in}\times n}$, $Y\in\mathbb R^{d_{\rm out}\times n}$ and
# $W\in\mathbb R^{d_{\rm hidden}\times d_{\rm in}}$. If every input $\mathbf x_j$ has a *private*
# neuron, a row $\mathbf w_i^\top$ with $\mathbf w_i^\top\mathbf x_j>0$ and
# $\mathbf w_i^\top\mathbf x_\ell\le0$ for all $\ell\ne j$, then there is $V$ with $N_{W,V}(X)=Y$;
# one choice is $V=Y\sigma(WX)^\dagger$.
# ```
#
# ```{prf:proof}
# With private neurons, $\sigma(WX)\in\mathbb R^{d_{\rm hidden}\times n}$ has rank $n$ (each input
# has a row that is non-zero on it only), so $\sigma(WX)^\dagger\sigma(WX)=I_n$ and
# $V=Y\sigma(WX)^\dagger$ gives $V\sigma(WX)=Y$. For Theorem 1 take
# $\mathbf w_1=\mathbf x_1/\|\mathbf x_1\|-\mathbf x_2/\|\mathbf x_2\|$ and
# $\mathbf w_2=-\mathbf w_1$: then $\mathbf w_1^\top\mathbf x_1>0>\mathbf w_1^\top\mathbf x_2$,
# each neuron is private to one input, and $W$ has rank 1 by construction.
# ```
#
# We build this network for random datasets (input norms in $[0.1,3.1]$, input angles in
# $(10^{-3},\pi)$, Gaussian labels) and for Lemma 2 with five hidden neurons, three inputs in
# $\mathbb R^4$ and random $W$ that happen to have private neurons.

# %%
n = P["thm1_datasets"]
ang = 1e-3 + (math.pi - 1e-3) * torch.rand(n, generator=gen, dtype=D)
rot = 2 * math.pi * torch.rand(n, generator=gen, dtype=D)
norms = 0.1 + 3 * torch.rand(n, 2, generator=gen, dtype=D)
Xr = torch.stack([tn.unit(rot) * norms[:, :1], tn.unit(rot + ang) * norms[:, 1:]], dim=-1)
Yr = torch.randn(n, 2, 2, generator=gen, dtype=D)
W1c, V1c = tn.theorem1_solution(Xr, Yr)
thm1_resid = float(((tn.forward(W1c, V1c, Xr) - Yr).norm(dim=(-2, -1)) / Yr.norm(dim=(-2, -1))).max())
s = spectra.singular_values(W1c)
thm1_ratio = float((s[:, 1] / s[:, 0]).max())

# Lemma 2: 5 hidden neurons, 3 inputs in R^4, keep the random W that have private neurons
Wl = torch.randn(4000, 5, 4, generator=gen, dtype=D)
Xl = torch.randn(4000, 4, 3, generator=gen, dtype=D)
Yl = torch.randn(4000, 2, 3, generator=gen, dtype=D)
ok = tn.has_private_neurons(Wl, Xl)
Vl = tn.lemma2_output_layer(Wl[ok], Xl[ok], Yl[ok])
lem2_resid = float(((Vl @ torch.relu(Wl[ok] @ Xl[ok]) - Yl[ok]).norm(dim=(-2, -1)) / Yl[ok].norm(dim=(-2, -1))).max())
print(f"Theorem 1 on {n} datasets: max relative residual {thm1_resid:.1e}, max s2/s1 of W {thm1_ratio:.1e}")
print(f"Lemma 2 on {int(ok.sum())} networks with private neurons: max relative residual {lem2_resid:.1e}")

# negative controls: the same constructions where their hypotheses fail
# (i) w_1 = x_1 - x_2 without normalising the inputs: not always active on exactly one input
w_raw = Xr[..., :, 0] - Xr[..., :, 1]
W_raw = torch.stack([w_raw, -w_raw], dim=-2)
V_raw = tn.lemma2_output_layer(W_raw, Xr, Yr)
raw_resid = ((tn.forward(W_raw, V_raw, Xr) - Yr).norm(dim=(-2, -1)) / Yr.norm(dim=(-2, -1)))
raw_fail = float((raw_resid > 1e-6).double().mean())
# (ii) Lemma 2's output layer for random W without private neurons
nop = ~ok & (torch.relu(Wl @ Xl).abs().sum(-2) > 0).all(-1)            # no private neuron, no zero column
Vn = tn.lemma2_output_layer(Wl[nop], Xl[nop], Yl[nop])
nop_resid = (Vn @ torch.relu(Wl[nop] @ Xl[nop]) - Yl[nop]).norm(dim=(-2, -1)) / Yl[nop].norm(dim=(-2, -1))
nop_fail = float((nop_resid > 1e-6).double().mean())
print(f"controls: unnormalised w_1 = x_1 - x_2 fails to interpolate on {raw_fail:.3f} of the datasets; "
      f"Lemma 2's V fails on {nop_fail:.3f} of {int(nop.sum())} networks without private neurons")
glue("rank1-n", n, display=False)
glue("rank1-lem2-n", int(ok.sum()), display=False)
glue("rank1-raw-fail", f"{raw_fail:.3f}", display=False)
glue("rank1-nop-fail", f"{nop_fail:.2f}", display=False)
ledger.below("thm1-rank1-interpolant", "Thm 1 / App. A", "the rank-1 construction interpolates every random "
             "dataset (max relative residual) and its first layer has rank 1 (max s2/s1, also < 1e-12); a check of "
             "the construction", "exact", thm1_resid if thm1_ratio < 1e-12 else float("inf"), 1e-10, fmt=".1e",
             items="thm1", bearing="control", origin="theory: exact up to float64 rounding")
ledger.below("lem2-interp", "Lemma 2", "$V = Y\\,\\mathrm{relu}(WX)^+$ interpolates whenever every input has a private neuron "
             "(a check of the construction)", "exact", lem2_resid, 1e-10, fmt=".1e", items="lemma2", bearing="control",
             origin="theory: exact up to float64 rounding")
ledger.above("construction-controls", "Thm 1, Lemma 2", "negative control: without the normalisation of Thm 1, or "
             "without private neurons, the same constructions fail (smaller of the two failure fractions)", "-",
             min(raw_fail, nop_fail), 0.0, items=["thm1", "lemma2"], bearing="control", origin="prior")

# %% [markdown]
# The rank-1 construction interpolates all {glue:text}`rank1-n` random datasets to rounding
# error, and Lemma 2's output layer interpolates all {glue:text}`rank1-lem2-n` sampled networks
# with private neurons. The hypotheses matter: with $\mathbf w_1=\mathbf x_1-\mathbf x_2$ (inputs
# not normalised) a neuron can be active on both inputs, and the construction fails on
# {glue:text}`rank1-raw-fail` of the datasets; for networks without private neurons Lemma 2's
# output layer fails on {glue:text}`rank1-nop-fail` of them.
#
# The converse direction, why a zero-loss network with $\operatorname{rank}W<2$ is so
# constrained, is the content of two short lemmas used in the proof of Theorem 2.
#
# :::{prf:lemma} Lemmas 3 and 4
# :label: rank-lem34
# :nonumber:
# Under Assumption 1 (labels $\mathbf y_1,\mathbf y_2$ linearly independent unit vectors), a
# zero-loss network $N_{W,V}$ with $W,V\in\mathbb R^{2\times2}$ has no neuron in $\mathcal D$
# (Lemma 4), and if $\operatorname{rank}W<2$ its rows are non-zero with
# $\mathbf w_2=\alpha\mathbf w_1$, $\alpha<0$ (Lemma 3).
# :::
#
# ```{prf:proof}
# A row in $\mathcal D$, or rows $\mathbf w_2=\alpha\mathbf w_1$ with $\alpha>0$, make
# $\operatorname{rank}\sigma(WX)\le1$, so $\operatorname{rank}V\sigma(WX)\le1<\operatorname{rank}Y$.
# ```
#
# Quantitatively, such a network misses $Y$ by at least the smaller singular value $s_2(Y)$ for
# *every* $V$ (the best rank-1 approximation of $Y$, Eckart-Young). We check this bound on random
# networks of both kinds (a row in $\mathcal D$; a rank-1 $W$ with $\alpha>0$), each with its best
# output layer, and check that rank-1 networks with $\alpha<0$ and a private neuron for each input
# do reach zero loss.

# %%
nl = 4000
th_l = math.pi / 2 + 0.01 + (math.pi / 2 - 0.02) * torch.rand(nl, generator=gen, dtype=D)
ps_l = 0.2 + (math.pi - 0.4) * torch.rand(nl, generator=gen, dtype=D)
XL, YL = tn.datasets_with_angles(th_l, ps_l, gen)
s2Y = spectra.singular_values(YL)[:, 1]


def best_residual(W: torch.Tensor) -> torch.Tensor:
    """min over V of ||V relu(WX) - Y||_F, for each network (least squares in V)."""
    A = torch.relu(W @ XL)
    return (YL @ torch.linalg.pinv(A, rtol=1e-10) @ A - YL).norm(dim=(-2, -1))


# a row in D: pointing against both inputs (a direction inside the dead cone)
u = torch.randn(nl, 2, generator=gen, dtype=D)
dead_dir = -(XL[..., :, 0] + XL[..., :, 1])
W_dead = torch.stack([u, dead_dir * torch.rand(nl, 1, generator=gen, dtype=D)], dim=-2)
W_pos = u.unsqueeze(-2) * torch.stack([torch.ones(nl, dtype=D), 0.1 + 3 * torch.rand(nl, generator=gen, dtype=D)], -1).unsqueeze(-1)
W_neg, _ = tn.theorem1_solution(XL, YL)                    # rank 1, alpha = -1, private neurons
ratios34 = torch.cat([best_residual(W_dead) / s2Y, best_residual(W_pos) / s2Y])
lem34 = float(ratios34.min())
viol34 = int((ratios34 < 1 - 1e-9).sum())
neg_zero = float((best_residual(W_neg) / YL.norm(dim=(-2, -1))).max())
print(f"Lemmas 3-4 on {nl} random datasets: smallest residual / s_2(Y) with a dead row or alpha > 0: {lem34:.6f}; "
      f"rank 1 with alpha < 0 and private neurons: largest relative residual {neg_zero:.1e}")
glue("rank1-lem34", f"{lem34:.4f}", display=False)
ledger.holds("lemmas3-4", "Lemmas 3-4", "a 2x2 network with a row in $D$, or $\\mathrm{rank}\\,W = 1$ with $\\alpha > 0$, "
             "misses $Y$ by at least $s_2(Y)$ for every $V$ (count of networks with residual / $s_2(Y)$ < 1 - 1e-9; a bound that holds "
             "for every such network)", "no zero loss", f"{viol34} of {ratios34.numel()}; smallest ratio {lem34:.6f}",
             viol34 == 0, tolerance="0", items=["lemma3", "lemma4"], bearing="control", value=viol34, hi=0.5,
             origin="theory: Eckart-Young")
ledger.below("lemma3-negative", "Lemma 3", "negative control: rank-1 networks with $\\alpha < 0$ and private neurons do "
             "reach zero loss (largest relative residual)", "zero loss possible", neg_zero, 1e-10, fmt=".1e",
             items="lemma3", bearing="control", origin="theory: exact up to float64 rounding")

# %% [markdown]
# Every such network misses $Y$ by at least $s_2(Y)$ (the smallest ratio over the sample is
# {glue:text}`rank1-lem34`: the bound is nearly attained when the row of $\sigma(WX)$ lines up with
# the top singular vector of $Y$), while the rank-1 networks with $\alpha<0$ of Theorem 1 reach
# zero loss.
#
# ## Gradient flow does not find them
#
# ```{prf:theorem} Theorem 2
# :label: rank-thm2
# :nonumber:
# Let $\mathbf y_1,\mathbf y_2$ be linearly independent unit vectors (Assumption 1) and
# $\mathbf x_1,\mathbf x_2$ unit vectors with $\pi/2<\theta<\pi$ (Assumption 2). Run GF on $L$
# from $\|\mathbf w_i(0)\|<\min\{\tfrac12,\tfrac{\sqrt3}{2}\cos\tfrac\theta2\}$ and
# $\|\mathbf v_i(0)\|<\tfrac12$. If GF converges to a zero-loss network, then
# $\operatorname{rank}W(\infty)=2$.
# ```
#
# ```{prf:proof}
# (Sketch of Section 6.1.) A rank-1 zero-loss $W$ must have rows $\mathbf w_2=\alpha\mathbf w_1$
# with $\alpha<0$ and neither row in $\mathcal D$ (Lemmas 3-4), so one row ends in
# $\operatorname{int}\mathcal S_1$ and the other in $\operatorname{int}\mathcal S_2$. A neuron
# that enters $\mathcal D$ never moves again (its gradients vanish), so zero loss is then out of
# reach (Lemma 5). While $\mathbf w_i\in\mathcal S_i$ the gradient is parallel to
# $\mathbf x_i$ (Lemma 7), and GF conserves $\|\mathbf w_i\|^2-\|\mathbf v_i\|^2$ (Lemma 9).
# Together these confine each final row to a region $\mathcal F_i$, and the angle between points
# of $\mathcal F_1$ and $\mathcal F_2$ is below $\theta+2\arcsin(2\max_i\|\mathbf w_i(0)\|/\sqrt3)
# <\pi$ (Lemma 6), so the rows cannot be opposite.
# ```
#
# ```{prf:lemma} Lemma 9, balancedness
# :label: rank-lem9
# :nonumber:
# For GF on any differentiable loss of a fully-connected ReLU network of depth $k\ge2$ (with
# $\sigma'(0)=0$), $\frac{d}{dt}\big(\|W_l\|_F^2-\|W_{l+1}\|_F^2\big)=0$ for every layer $l<k$, and
# more finely, for every hidden neuron, the squared norm of its incoming weights minus that of
# its outgoing weights is constant. Here: $\frac{d}{dt}\big(\|\mathbf w_i\|^2-\|\mathbf
# v_i\|^2\big)=0$ for $i=1,2$. (The balancedness of {cite:t}`du2018algorithmic`; it holds for ReLU
# networks because each neuron is positively homogeneous.)
# ```
#
# :::{prf:lemma} Lemma 6
# :label: rank-lem6
# :nonumber:
# Under Assumptions 1-2, let $\|\mathbf w_i(0)\|,\|\mathbf v_i(0)\|<\tfrac12$ for $i=1,2$. If GF
# converges to a zero-loss network with $\mathbf w_i(\infty)\in\operatorname{int}\mathcal S_i$ for
# $i=1,2$, then, with $\bar w=\max_i\|\mathbf w_i(0)\|$,
# $$\measuredangle(\mathbf w_1(\infty),\mathbf w_2(\infty))\in\Big[\pi-\theta,\ \theta+2\arcsin
# \tfrac{2\bar w}{\sqrt3}\Big)$$
# and $\|\mathbf w_i(\infty)\|\in\Big(\tfrac{\sqrt3}2,\sqrt{\tfrac14+\tfrac4{3c_i^2}}\Big)$ with
# $c_i=\cos\max\{\arcsin\frac{2\|\mathbf w_i(0)\|}{\sqrt3},\theta-\frac\pi2\}$.
# :::
#
# ### Figure 1 of the paper, replicated
#
# The paper's dataset is $\mathbf x_{1,2}=(\pm1,0.99)/\|\cdot\|$ (so $\theta\approx90.58^\circ$)
# and $\mathbf y_{1,2}=\mathbf e_{1,2}$. Every row of $W$ and every column of $V$ starts
# uniformly on the circle of radius $10^{-4}$, and a run *converges* if its loss ends below
# $10^{-4}$. The paper ran 288 runs of GD with step $10^{-4}$ for $3\cdot10^6$ steps (GF time
# 300) and reports that 79 converged, all with stable ranks "bounded away from 1". We run
# {glue:text}`rank1-fig1-R` such runs, so that every frequency below is known to a few parts in a
# thousand (the paper's 288 runs give the converged fraction only to about $\pm0.05$). Profile
# `ci` keeps the GF time 300 but uses a step 100 times larger ({glue:text}`rank1-fig1-lr`,
# {glue:text}`rank1-fig1-steps` steps); the first {glue:text}`rank1-check-runs` runs are repeated
# at step {glue:text}`rank1-check-lr` (GF time {glue:text}`rank1-check-T`) as a check that the
# step does not change the outcomes. Profile `full` uses the paper's step and horizon.
#
# **The budget multiplier lengthens the flow.** `IMPLICIT_BIAS_BUDGET=k` multiplies both step
# counts and keeps the steps, so it multiplies the GF time by $k$: this run follows gradient flow
# to time {glue:text}`rank1-fig1-T` (the check to {glue:text}`rank1-check-T`), and at $k=3$ the
# flow is three times longer than the paper's. What that means for the claims: those about the
# runs that converge (rank 2, stable ranks above 1.05, Lemma 6, the event $E$) are about limits
# and should not move, except that runs converging late join them; the converged fraction
# (claim `fig1-consistent`) and the frequency of $E$ (claim `thm3-paper-data`) can only grow
# with the horizon, so above $k=1$ they compare a longer flow than the paper's 300 with the
# paper's count; and `lr-agreement` then compares the two steps at horizons $300k$ and $150k$.
# All runs
# are one batch of $2\times2$ tensors; a run leaves the batch once it has converged, once a neuron
# is dead, or once it is stuck at a flat stationary point (an input served by no neuron and the
# other one fitted: its gradients then vanish, so it can never converge).

# %%
X0, Y0 = tn.paper_dataset(device=dev)
theta0 = float(tn.angle_between(X0[:, 0], X0[:, 1]))
R = P["fig1_runs"]
W0, V0 = tn.paper_init(R, 1e-4, gen)
W0, V0 = W0.to(dev), V0.to(dev)
fig1 = tn.simulate(W0, V0, X0, Y0, lr=P["fig1_lr"], steps=P["fig1_steps"])
conv = fig1.converged.cpu()
k = int(conv.sum())
lo95, hi95 = tn.binomial_interval(k, R, 0.95)
plo, phi_ = tn.binomial_interval(79, 288, 0.95, "exact")
fisher_p = stats.fisher_exact([[k, R - k], [79, 288 - 79]]).pvalue

codes0 = tn.region_codes(W0, X0).cpu()
codes_end = tn.region_codes(fig1.W, X0).cpu()
dead0 = (codes0 == tn.DEAD).any(-1)
# Lemma 5 without the simulator's shortcuts: the runs among the first 288 that start with a dead
# neuron are run again for the whole horizon, never stopped early
sel = dead0.clone()
sel[288:] = False
again = tn.simulate(W0[sel.to(dev)].clone(), V0[sel.to(dev)].clone(), X0, Y0, lr=P["fig1_lr"],
                    steps=P["fig1_steps"], stop_dead=False, stop_stuck=False)
c_sel = codes0[sel]
frozen = ((again.W.cpu() == W0.cpu()[sel]).all(-1) & (again.V.cpu() == V0.cpu()[sel]).all(-2))
moved_dead = int((~frozen[c_sel == tn.DEAD]).sum())
dead_conv = int(again.converged.sum())

sr_W = tn.stable_rank_2x2(fig1.W).cpu()
sr_V = tn.stable_rank_2x2(fig1.V).cpu()
sv = spectra.singular_values(fig1.W.cpu())
ratio_min = float((sv[:, 1] / sv[:, 0])[conv].min())
split0 = tn.is_split(codes0)
split_end = tn.is_split(codes_end) & conv
both_split = split_end & split0                      # start and end split
other_split = split_end & ~split0                    # end split after another start
with_S = conv & ~split_end                           # end with a neuron in S
ideal0 = float(tn.ideal_stable_rank(theta0))
dev_all = (sr_W[both_split] - ideal0).abs()
dev_split, near_cf = float(dev_all.max()), float((dev_all <= 1e-3).double().mean())
n_far = int((dev_all > 1e-3).sum())
other_min, other_max = float(sr_W[other_split].min()), float(sr_W[other_split].max())
# Lemma 6's angle interval, no tolerance, for every run that ends split
r0 = W0.cpu().norm(dim=-1).max(-1).values
lo6, hi6 = tn.lemma6_angle_interval(theta0, r0)
ang_end = tn.row_angle(fig1.W.cpu())
out6 = int(((ang_end < lo6) | (ang_end >= hi6))[split_end].sum())
# negative control: Theorem 1's rank-1 interpolant of the same data
W_r1, V_r1 = tn.theorem1_solution(X0.cpu().unsqueeze(0), Y0.cpu().unsqueeze(0))
sv_r1 = spectra.singular_values(W_r1)[0]
r1_ratio, r1_srank = float(sv_r1[1] / sv_r1[0]), float(tn.stable_rank_2x2(W_r1)[0])
# Lemma 8 on converged split runs: ||w_i||, ||v_i|| >= sqrt(1 - |eps_i|), up to the leftover loss
eps_i = tn.balance(fig1.W, fig1.V).cpu()
nrm = torch.minimum(fig1.W.cpu().norm(dim=-1), fig1.V.cpu().norm(dim=-2))
lem8 = nrm - torch.sqrt(1 - eps_i.abs()) + torch.sqrt(2 * fig1.loss.cpu()).unsqueeze(-1)
lem8_viol = int((lem8[split_end] < 0).sum())
# Theorem 3's event E on the paper's own experiment (v(0) != 0: the setting of the paper's remark)
E0 = tn.event_E(fig1.W.cpu(), conv, theta0)
kE = int(E0.sum())
loE, hiE = tn.binomial_interval(kE, R, 0.99)
bound0 = float(tn.thm3_probability_bound(theta0))
assert 1e-4 <= float(tn.thm3_init_bound(theta0))

print(f"input angle theta = {theta0 * DEG:.3f} deg")
print(f"converged: {k} of {R} = {k / R:.4f}, 95% Wilson interval [{lo95:.4f}, {hi95:.4f}]; first 288 runs: "
      f"{int(conv[:288].sum())} (paper: 79 of 288 = {79 / 288:.3f}, 95% interval [{plo:.3f}, {phi_:.3f}]; Fisher exact "
      f"test p = {fisher_p:.2f})")
pat_c = Counter(tn.pattern(codes_end[conv]))
pat_n = Counter(tn.pattern(codes_end[~conv]))
print("final patterns of converged runs:", {key: f"{v / R:.4f}" for key, v in sorted(pat_c.items())})
print("final patterns of the other runs:", {key: f"{v / R:.4f}" for key, v in sorted(pat_n.items())})
print(f"first 288 runs: {int(sel.sum())} start with a dead neuron; run to the end without stopping: {dead_conv} "
      f"converge, dead neurons that moved: {moved_dead}")
print(f"converged runs: srank(W) >= {sr_W[conv].min():.3f}, srank(V) >= {sr_V[conv].min():.3f}, "
      f"min s2/s1 of W {ratio_min:.3f}")
print(f"start and end split ({int(both_split.sum())} runs): within 1e-3 of 2/(1+|cos theta|) = {ideal0:.4f}: "
      f"{near_cf:.5f} (largest deviation {dev_split:.1e}); end split after another start "
      f"({int(other_split.sum())}): srank(W) "
      f"in [{other_min:.4f}, {other_max:.4f}]; end with a neuron in S ({int(with_S.sum())}): median srank(W) "
      f"{sr_W[with_S].median():.3f}")
print(f"runs ending split outside Lemma 6's angle interval: {out6}; Lemma 8 violations: {lem8_viol}")
print(f"Theorem 1's rank-1 interpolant of these data: s2/s1 = {r1_ratio:.1e}, srank(W) = {r1_srank:.3f}")
print(f"Theorem 3's event E: {kE / R:.4f}, 99% Wilson interval [{loE:.4f}, {hiE:.4f}]; bound 2(theta/2pi)^2 = "
      f"{bound0:.4f}")

for key, val in {"fig1-lr": f"{P['fig1_lr']:g}", "fig1-steps": f"{P['fig1_steps']:,}",
                 "check-runs": P["check_runs"], "check-lr": f"{P['check_lr']:g}",
                 "check-T": f"{P['check_lr'] * P['check_steps']:g}", "fig1-T": f"{P['fig1_lr'] * P['fig1_steps']:g}", "fig1-frac": f"{k / R:.3f}",
                 "fig1-lo": f"{lo95:.3f}", "fig1-hi": f"{hi95:.3f}", "fig1-p": f"{fisher_p:.2f}",
                 "fig1-plo": f"{plo:.3f}", "fig1-phi": f"{phi_:.3f}", "fig1-k288": int(conv[:288].sum()),
                 "fig1-split": f"{int(both_split.sum()) / R:.3f}", "fig1-other": f"{int(other_split.sum()) / R:.3f}",
                 "fig1-withS": f"{int(with_S.sum()) / R:.3f}", "fig1-dev": f"{dev_split:.1e}",
                 "fig1-nfar": n_far, "fig1-nboth": int(both_split.sum()),
                 "fig1-other-min": f"{other_min:.3f}", "fig1-other-max": f"{other_max:.3f}", "fig1-srmin": f"{sr_W[conv].min():.3f}",
                 "fig1-ideal": f"{ideal0:.3f}", "fig1-Smed": f"{sr_W[with_S].median():.3f}",
                 "fig1-dead": int(sel.sum()), "fig1-pE": f"{kE / R:.4f}", "fig1-pE-lo": f"{loE:.4f}",
                 "fig1-pE-hi": f"{hiE:.4f}", "fig1-bound": f"{bound0:.4f}"}.items():
    glue(f"rank1-{key}", val, display=False)

ledger.above("fig1-consistent", "Sec. 3.1", f"our converged fraction ({k / R:.3f} of {R:,} runs) is consistent with "
             "the paper's 79/288 (two-sided Fisher exact test, p-value)", "79/288 converge", fisher_p, 0.01, fmt=".2f",
             items="fig1", bearing="supports", origin="prior: level 0.01 of the test",
             falsifier="a Fisher exact p-value below 0.01: our converged fraction differs from the paper's 79 of 288")
ledger.holds("lemma5-frozen", "Lemma 5", "runs among the first 288 that start with a neuron in D, run to the end "
             "without stopping rules: none converges and no dead neuron moves (count of exceptions)",
             "dead neurons stay dead", f"{dead_conv} converge, {moved_dead} dead neurons move, of {int(sel.sum())} runs",
             dead_conv + moved_dead == 0, tolerance="0 exceptions", items="lemma5", bearing="control",
             value=dead_conv + moved_dead, hi=0.5, origin="theory: relu'(0) = 0 makes the gradient of a dead neuron 0")
ledger.above("thm2-rank2-fig1", "Thm 2", "every converged run has rank W = 2 (min s2/s1 over converged runs)",
             "rank 2", ratio_min, 1e-3, items="thm2", bearing="verifies",
             origin="prior: a rank-1 W gives s2/s1 at rounding level",
             falsifier="a converged run whose W has s2/s1 below 1e-3 (rank 1)")
ledger.above("fig1-away-from-1", "Fig. 1", "every converged run has srank of both layers above 1.05 (smallest)",
             "bounded away from 1", float(min(sr_W[conv].min(), sr_V[conv].min())), 1.05,
             items=["fig1", "sec31-high-prob"], bearing="supports", origin="prior: the cut-off of the reading guide",
             falsifier="a converged run with the stable rank of W or V at most 1.05")
ledger.holds("rank1-control", "Thm 1", "negative control: Theorem 1's rank-1 interpolant of the same data fails "
             "both checks above (s2/s1 < 1e-3 and srank < 1.05)", "-", "fails both" if r1_ratio < 1e-3 and
             r1_srank < 1.05 else "passes one", r1_ratio < 1e-3 and r1_srank < 1.05, items=["thm2", "fig1"],
             bearing="control", origin="theory")
ledger.above("fig1-split-srank", "Lemmas 6, 7, 9", "runs that start and end split have $\\mathrm{srank}(W) = 2/(1+|\\cos\\theta|)$ "
             "up to the initialisation scale: fraction within 1e-3 of it (the rest pass through S on the way)",
             "angle in $[\\pi - \\theta, \\theta + O(\\mathrm{init}))$", near_cf, 0.999, fmt=".5f",
             items=["lemma6", "lemma7", "lemma9"], bearing="verifies",
             origin="after-seeds: was 'largest deviation < 0.01'; restated as a fraction after seed 1 showed one "
             "run at 0.011 that had passed through S",
             falsifier="fewer than 99.9% of the runs that start and end split within 1e-3 of "
                       "$2/(1+|\\cos\\theta|)$")
ledger.holds("lemma6-fig1", "Lemma 6", "every converged run that ends split has its row angle inside Lemma 6's "
             "interval $[\\pi - \\theta, \\theta + 2\\arcsin(2r/\\sqrt3))$, no tolerance (count outside)", "always",
             f"{out6} of {int(split_end.sum())}", out6 == 0, tolerance="0", items="lemma6", bearing="verifies",
             value=out6, hi=0.5, origin="theory",
             falsifier="a converged run ending split with its row angle outside Lemma 6's interval")
ledger.holds("lemma8-norms", "Lemma 8", "converged runs ending split: $\\min(\\lVert w_i\\rVert, \\lVert v_i\\rVert)\\ge\\sqrt{1 - |\\epsilon_i|}$, up "
             "to the leftover loss (count of violations; holds for every zero-loss network)", "holds at zero loss",
             f"{lem8_viol} of {int(split_end.sum())}", lem8_viol == 0, tolerance="0", items="lemma8", bearing="control",
             value=lem8_viol, hi=0.5, origin="theory")
ledger.above("thm3-paper-data", "Thm 3 remark", "on the paper's own experiment ($v(0)$ on the circle of radius 1e-4), "
             "Theorem 3's event $E$ is more frequent than the bound $2(\\theta/2\\pi)^2$ (99% Wilson lower limit minus bound)",
             "should hold under weaker init", loE - bound0, 0.0, fmt=".4f", items="thm3-remark", bearing="supports",
             origin="paper: the bound of Theorem 3", vtol=1e-3,
             falsifier="the 99% Wilson lower limit of P(E) on the paper's dataset at or below the bound $2(\\theta/2\\pi)^2$")

# %% [markdown]
# {glue:text}`rank1-fig1-frac` of the runs converge (95% Wilson interval
# [{glue:text}`rank1-fig1-lo`, {glue:text}`rank1-fig1-hi`]; {glue:text}`rank1-fig1-k288` of the
# first 288), against the paper's 79 of 288 = 0.274 (95% interval [{glue:text}`rank1-fig1-plo`,
# {glue:text}`rank1-fig1-phi`]); a Fisher exact test gives $p=$ {glue:text}`rank1-fig1-p`. The
# {glue:text}`rank1-fig1-dead` runs among the first 288 that start with a neuron in $\mathcal D$,
# run to the end without any stopping rule, never converge and that neuron never moves, as Lemma 5
# says; this holds by construction of the gradient ($\sigma'(0)=0$), so it is a check of the
# simulator (a control, not a finding). Every converged run has rank 2 and stable ranks of both
# layers of at least {glue:text}`rank1-fig1-srmin`, as in the paper; the same two checks flag
# Theorem 1's rank-1 interpolant of these data.
#
# The histogram has three parts. A fraction {glue:text}`rank1-fig1-split` of all runs start and
# end split, and they sit at $\mathrm{srank}(W)\approx2/(1+|\cos\theta|)=$
# {glue:text}`rank1-fig1-ideal`: each neuron only moves along its input (Lemma 7) and the balance
# of Lemma 9 makes both rows end with $\mathbf w_i^\top\mathbf x_i\approx1$. Here
# {glue:text}`rank1-fig1-nfar` of these {glue:text}`rank1-fig1-nboth` runs end more than
# $10^{-3}$ away (largest deviation {glue:text}`rank1-fig1-dev`); on some other seeds a single run
# does ({doc}`/book/robustness`, claim `fig1-split-srank`). With $\mathbf v(0)\neq0$ a neuron can
# first move backwards along its input, pass through $\mathcal S$ and come back to its
# $\mathcal S_j$ elsewhere. A fraction {glue:text}`rank1-fig1-other` end split after
# another start (a neuron first active on both inputs); their row angle lies in
# {prf:ref}`Lemma 6 <rank-lem6>`'s interval $[\pi-\theta,\theta+O(10^{-4})]$, but anywhere in it
# rather than at its ends, so their stable rank lies between the closed form and 2, up to the
# initialisation scale (observed:
# {glue:text}`rank1-fig1-other-min` to {glue:text}`rank1-fig1-other-max`). A fraction {glue:text}`rank1-fig1-withS` end with one neuron in $\mathcal S$
# (active on both inputs), covered by no theorem; they spread lower still (median
# {glue:text}`rank1-fig1-Smed`). None comes near 1.
#
# The remark after Theorem 3 (next page) says its probability bound should hold without the
# theorem's hypothesis $\mathbf v(0)=\mathbf 0$, "as the next empirical result demonstrates": this
# experiment. Theorem 3's event $E$ (convergence with rows of bounded norms at an angle bounded away
# from 0 and $\pi$, {doc}`02_constant_probability`) occurs in {glue:text}`rank1-fig1-pE` of the
# runs (99% Wilson interval [{glue:text}`rank1-fig1-pE-lo`, {glue:text}`rank1-fig1-pE-hi`]),
# above the bound $2(\theta/2\pi)^2=$ {glue:text}`rank1-fig1-bound`. So on the paper's own
# experiment the remark holds, by a small margin that a sample of 288 runs could not resolve.

# %%
fig, axes = plotting.subplots(2)
bins = np.linspace(1.0, 2.0, 51)
groups = (both_split, other_split, with_S)
labels = ["start and end split", "end split, other start", r"end with a neuron in $\mathcal{S}$"]
for ax, sr, name in ((axes[0], sr_W, "layer 1 ($W$)"), (axes[1], sr_V, "layer 2 ($V$)")):
    ax.hist([sr[gp].numpy() for gp in groups], bins=bins, stacked=True,
            color=[plotting.color(0), plotting.color(2), plotting.color(1)], label=labels)
    ax.set_xlabel(f"stable rank of {name}")
    ax.set_ylabel("converged runs")
    ax.set_yscale("log")
axes[0].axvline(ideal0, color="k", lw=1, ls="--", label=r"$2/(1+|\cos\theta|)$")
axes[0].legend(loc="upper left", fontsize=7)
glue("rank1-fig-hist", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} rank1-fig-hist
# :name: fig-rank1-hist
# Stable ranks at convergence of the paper's Figure 1 experiment ({glue:text}`rank1-fig1-R` runs
# of a 2-2-2 ReLU network on $\mathbf x_{1,2}=(\pm1,0.99)/\|\cdot\|$,
# $\mathbf y_{1,2}=\mathbf e_{1,2}$, tiny initialisation), over the runs whose loss ends below
# $10^{-4}$, coloured by how the two neurons start and end (counts on a log scale). Runs that start
# and end split sit at the closed-form value (dashed), runs that end split after another start
# between it and 2, and runs with a neuron active on both inputs spread over lower values. None
# comes near 1.
# ```
#
# The step does not decide the outcome: the same runs at a ten times smaller step (and a shorter
# horizon, GF time {glue:text}`rank1-check-T`; if it were too short, runs that converge at the
# large step would not converge at the small one and the agreement claim would fail) agree on
# which runs converge, and the balancedness drift of {prf:ref}`Lemma 9 <rank-lem9>`, zero under
# GF, shrinks in proportion to the step (ratio {glue:text}`rank1-drift-ratio` for a ten times
# smaller step), while a quantity that is not conserved, $\|\mathbf w_i\|^2$ alone, changes by
# the same amount at both steps (ratio {glue:text}`rank1-grow-ratio`). These are checks of the
# simulation (Lemma 9 is an identity of gradient flow for every network), so the ledger counts
# them as controls.
# %%
m = P["check_runs"]
chk = tn.simulate(W0[:m].clone(), V0[:m].clone(), X0, Y0, lr=P["check_lr"], steps=P["check_steps"],
                  check_every=max(1, P["check_steps"] // 150), record=True)
agree = float((chk.converged.cpu() == conv[:m]).double().mean())
sr_diff = float((tn.stable_rank_2x2(chk.W).cpu() - sr_W[:m])[conv[:m] & chk.converged.cpu()].abs().max())
drift_big = float(fig1.balance_drift[:m].max())
drift_small = float(chk.balance_drift.max())
print(f"outcome agreement between steps {P['fig1_lr']:g} and {P['check_lr']:g}: {agree:.3f};"
      f" max |srank difference| {sr_diff:.1e}")
print(f"max balancedness drift: {drift_big:.2e} (step {P['fig1_lr']:g}) vs {drift_small:.2e} "
      f"(step {P['check_lr']:g}); ratio {drift_big / drift_small:.1f}")
# negative control: a quantity that is not conserved, ||w_i||^2 alone, changes by O(1) at both steps
grow_big = float((fig1.W[:m].pow(2).sum(-1) - W0[:m].pow(2).sum(-1)).abs().max())
grow_small = float((chk.W.pow(2).sum(-1) - W0[:m].pow(2).sum(-1)).abs().max())
print(f"control: max change of ||w_i||^2 alone {grow_big:.2f} vs {grow_small:.2f}; ratio {grow_big / grow_small:.2f}")
glue("rank1-agree", f"{agree:.3f}", display=False)
glue("rank1-drift-ratio", f"{drift_big / drift_small:.1f}", display=False)
glue("rank1-grow-ratio", f"{grow_big / grow_small:.2f}", display=False)
glue("rank1-drift-steps", f"{drift_small / P['check_lr']:.2f}", display=False)
ledger.above("lr-agreement", "method", "converged/not converged agrees between the two step sizes",
             "$\\ge 0.95$", agree, 0.95, items="fig1", bearing="control", origin="prior: 0.95, fixed before the run")
ledger.between("lemma9-first-order", "Lemma 9", "balancedness drift shrinks linearly with the step "
               "(ratio of max drifts for a 10x step change; an identity of gradient flow, so a check of the "
               "simulation)", "0 under GF", drift_big / drift_small, 5.0, 20.0, fmt=".1f", items="lemma9",
               bearing="control", origin="prior: 10 for a first-order error, a factor 2 either way")
ledger.below("lemma9-small", "Lemma 9", "max drift of $\\lVert w_i\\rVert^2 - \\lVert v_i\\rVert^2$ over the run, in units of the step",
             "0 under GF", drift_big / P["fig1_lr"], 1.0, items="lemma9", bearing="control",
             origin="prior: one step's worth")
ledger.below("lemma9-control", "Lemma 9", "negative control: the same ratio for $\\lVert w_i\\rVert^2$ alone (not conserved) "
             "is far below 5", "-", grow_big / grow_small, 2.0, fmt=".2f", items="lemma9", bearing="control",
             origin="prior")

# %%
t_chk = np.asarray(chk.checks) * P["check_lr"]
bal = tn.balance(chk.trace_W, chk.trace_V)                     # (checks, runs, neurons)
drift_t = (bal - bal[:1]).abs().amax(-1).cpu().numpy()
fig, ax = plotting.subplots(1, height=2.6)
c_m = chk.converged.cpu().numpy()
for r in np.flatnonzero(c_m)[:20]:
    ax.plot(t_chk, drift_t[:, r] / P["check_lr"], color=plotting.color(0), lw=0.8, alpha=0.6)
for r in np.flatnonzero(~c_m)[:20]:
    ax.plot(t_chk, drift_t[:, r] / P["check_lr"], color=plotting.color(1), lw=0.8, alpha=0.6)
ax.plot([], [], color=plotting.color(0), label="converged runs")
ax.plot([], [], color=plotting.color(1), label="other runs")
ax.set_xlabel("gradient-flow time $t$ (step x iterations)")
ax.set_ylabel(r"$\max_i |\Delta(\|w_i\|^2-\|v_i\|^2)|$ / step")
ax.legend()
glue("rank1-fig-balance", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} rank1-fig-balance
# :name: fig-rank1-balance
# Lemma 9 along the runs: the change of the per-neuron balance $\|\mathbf w_i\|^2-\|\mathbf
# v_i\|^2$ since initialisation, divided by the step (40 runs of the Figure 1 experiment). It
# is constant under GF; under GD it moves only while a neuron grows from the tiny
# initialisation to order one, and by less than the step (at most {glue:text}`rank1-drift-steps`
# of it at step {glue:text}`rank1-check-lr`).
# ```
#
# ## Conclusion
#
# Every statement of the paper that this page tests holds: rank-1 interpolants exist (Theorem 1,
# Lemma 2), zero-loss networks cannot be rank 1 with a dead or same-direction row (Lemmas 3-4),
# converged runs of the paper's experiment have rank 2 (Theorem 2) and stable ranks far from 1
# (Figure 1), and the row angle of every run that ends split lies in Lemma 6's interval. The
# constructions and the static lemmas hold for every network, and Lemmas 5 and 9 by construction
# of the gradient, so the ledger counts them as controls: they check the code and the paper's
# algebra, not what gradient flow does. What the page adds: runs that start and end split reach
# the closed form $2/(1+|\cos\theta|)$, runs that end split after another start lie between it
# and 2, and runs that end with a neuron active on both inputs reach lower stable ranks; and on
# the paper's own experiment the probability bound of Theorem 3 holds without its hypothesis
# $\mathbf v(0)=\mathbf 0$, narrowly (frequency {glue:text}`rank1-fig1-pE` against the bound
# {glue:text}`rank1-fig1-bound`). The
# next page, {doc}`02_constant_probability`, shows that this margin is specific to the paper's
# dataset. The verdicts are collected in {doc}`/book/errata`; how they fare on other seeds is on
# {doc}`/book/robustness`.
#
# **How the tolerances were set.** Exact constructions (Theorem 1, Lemma 2, Lemmas 3-4) are
# compared with thresholds ($10^{-10}$, a relative $10^{-9}$) far above float64 rounding and far
# below any value a wrong construction gives (the negative controls show the failures);
# statements that hold "always" in the theory (Lemmas 5, 6, 8) are counted, and a single exception
# fails the claim. "Rank 2" means $s_2/s_1$ above $10^{-3}$, while a rank-1 matrix gives $s_2/s_1$
# at rounding level. Agreement with the paper's 79 of 288 is a two-sided Fisher exact test at
# level 0.01. "Bounded away from 1" is made concrete as "stable rank above 1.05", the cut-off our
# reading guide used. The stable rank of runs that start and end split was first compared with
# the closed form by its largest deviation (at most 0.01); seed 1 showed one run at 0.011 that had
# passed through $\mathcal S$, so the claim now asks that 99.9% of them lie within $10^{-3}$, ten
# times the initialisation scale (a threshold set after seeing seeds). The step check
# compares a $10\times$ step change: a drift linear in the step gives a ratio of 10, and we accept
# a factor 2 either way; the outcome agreement threshold 0.95 was fixed before the run. Theorem
# 3's bound is the paper's, compared with a 99% Wilson interval over {glue:text}`rank1-fig1-R`
# runs; on another CPU a few chaotic runs may change their outcome, so that claim allows its
# value to move by $10^{-3}$ (a hundred runs) across machines. How the claims fare on seeds 0-4
# is on {doc}`/book/robustness`.
#
# ## Claims

# %% tags=["nbval-check-output"]
ledger.report()
