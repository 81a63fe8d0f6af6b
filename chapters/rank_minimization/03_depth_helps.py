# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Depth helps: low average rank of minimum-norm deep networks
#
# The positive half of {cite:t}`timor2023implicit`: if a dataset can be fitted by a depth-$k$
# ReLU network with bounded layer norms, then every *minimum-norm* fit of much larger depth
# $k'$ has weight matrices whose average ratio $\rho(W)=\|W\|_2/\|W\|_F$
# ({prf:ref}`def-spectral-frobenius-ratio`) is close to its maximum 1. For the square loss
# (Theorem 4) the bound tends to 1, i.e. stable rank ({prf:ref}`def-stable-rank`)
# $\mathrm{srank}=\rho^{-2}$ tending to 1; for max-margin classification (Theorem 5) it tends only
# to $1/\sqrt2$, i.e. stable rank about 2. The previous pages ({doc}`01_two_points_two_neurons`,
# {doc}`02_where_gradient_flow_goes`) showed that a shallow network trained by gradient flow is
# no rank minimiser; this page turns to depth. It checks the two constructions behind the
# proofs exactly, then trains depth sweeps for a square-loss regression and a logistic-loss
# classification, measures the ratio of every layer, and compares with the theorems' bounds as
# functions of depth.
#
# :::{important}
# **The experiments are a proxy.** The theorems are about *global minimisers* of the
# parameter norm under a fitting (Theorem 4) or margin (Theorem 5) constraint, which no
# algorithm can compute or certify. We train with gradient descent and *weight decay*, which
# favours small norms, and treat the networks it reaches as stand-ins for those minimisers.
# They are stationary points of a penalised objective, not certified minimisers, so the
# theorems' bounds are not guaranteed for them: the comparisons below are consistency checks,
# not tests of the theorems. With the square loss they also fit the targets only approximately,
# while Theorem 4's minimisers interpolate exactly. Nor is weight decay the unregularised
# gradient flow of Lemma 1.
# :::
#
# :::{admonition} What this page shows
# - The constructions of the proofs (Appendices D-E) are verified to rounding error: the
#   deep extensions compute the same function with the stated norms, and the AM-GM step gives
#   the bounds.
# - Weight-decay solutions are balanced across layers, as the minimisers are, and their mean
#   ratio lies above the theorems' bounds at every depth tested.
# - The two limits differ as the theorems suggest: with the square loss and nonnegative targets
#   the hidden layers are nearly rank 1; with the logistic loss their stable rank is near 2, and
#   the mean ratio *decreases* with depth, towards $1/\sqrt2$ from above.
#
# **Take away:** "depth helps" is a statement about bounds for minimum-norm solutions. For
# classification the limit it gives is stable rank about 2, not 1, and our proxies behave that
# way; the depths we train (at most {glue:text}`rank3-deep` here) are far from the regime where
# the bounds become tight.
# :::

# %% tags=["parameters"]
profile = "ci"   # "ci": CPU, about a minute; "full": more depths, wider nets, longer training (GPU)
seed = 0
device = "auto"

# %%
PROFILES = {
    # depths: depth sweep k'; seeds: networks per depth (the batch axis); lam: weight decay
    "ci": dict(n=24, d=8, width=12, depths=(2, 3, 4, 6), seeds=3, lr=0.1, steps=3000, lam=1e-2,
               construct_depths=(3, 4, 8, 16, 32)),
    "full": dict(n=64, d=16, width=32, depths=(2, 3, 4, 6, 8, 12), seeds=8, lr=0.05, steps=20_000, lam=1e-2,
                 construct_depths=(3, 4, 8, 16, 32, 64, 128)),
}

# %%
import math

import matplotlib.pyplot as plt
import numpy as np
import torch
from myst_nb import glue

from implicit_bias import ensembles, models, plotting, spectra
from implicit_bias.rank_minimization import deep_constructions as dc
from implicit_bias.chapter import start_chapter
from implicit_bias.claims import Ledger

P, dev = start_chapter(PROFILES, profile=profile, seed=seed, device=device)
ledger = Ledger("rank_minimization/03_depth_helps")
gen = torch.Generator().manual_seed(seed)
D = torch.float64

# %% [markdown]
# ## The statements
#
# Networks are bias-free, fully connected, with ReLU after every layer but the last and a
# scalar output: $N_{\boldsymbol\theta}(\mathbf x)=W_{k'}\sigma(W_{k'-1}\cdots\sigma(W_1\mathbf
# x))$ with $W_l\in\mathbb R^{d_l\times d_{l-1}}$ (shape (out, in), as on the notation page),
# $\|\boldsymbol\theta\|^2=\sum_l\|W_l\|_F^2$. The width is $\max_l d_l$ over hidden layers, the
# depth the number of weight matrices.
#
# ```{prf:theorem} Theorem 4 (square loss)
# :label: rank-thm4
# :nonumber:
# Let $(\mathbf x_i,y_i)_{i\le n}$ have $y_i\ge0$ and some $i$ with $\|\mathbf x_i\|\le1$,
# $y_i\ge1$. Suppose a network $N$ of width $m\ge2$ and depth $k\ge2$ interpolates the data
# with $\|W_l\|_F\le B$ for all $l$. Let $\boldsymbol\theta^*=[W_1^*,\dots,W_{k'}^*]$ be a global
# minimiser of $\|\boldsymbol\theta\|$ subject to $N_{\boldsymbol\theta}(\mathbf x_i)=y_i$ for all
# $i$, over networks of width $m'\ge m$ and depth $k'>k$. Then
# $$\frac1{k'}\sum_{l=1}^{k'}\frac{\|W_l^*\|_2}{\|W_l^*\|_F}\ \ge\ \Big(\frac1B\Big)^{k/k'}.$$
# Equivalently, the harmonic mean of $\|W_l^*\|_F/\|W_l^*\|_2=\mathrm{srank}(W_l^*)^{1/2}$ is at
# most $B^{k/k'}$.
# ```
#
# ```{prf:theorem} Theorem 5 (max-margin classification)
# :label: rank-thm5
# :nonumber:
# Let $(\mathbf x_i,y_i)_{i\le n}$ have $y_i\in\{\pm1\}$ and some $\|\mathbf x_i\|\le1$, and let
# a network $N$ of width $m\ge2$ and depth $k\ge2$ satisfy $y_iN(\mathbf x_i)\ge1$ with
# $\|W_l\|_F\le B$. Let $\boldsymbol\theta^*$ be a global minimiser of
# $\frac12\|\boldsymbol\theta\|^2$ subject to $y_iN_{\boldsymbol\theta}(\mathbf x_i)\ge1$, over
# width $m'\ge m$ and depth $k'>k$. Then
# $$\frac1{k'}\sum_{l=1}^{k'}\frac{\|W_l^*\|_2}{\|W_l^*\|_F}\ \ge\
# \frac1{\sqrt2}\Big(\frac{\sqrt2}{B}\Big)^{k/k'}\sqrt{\frac{k'}{k'+1}}\ \xrightarrow[k'\to\infty]{}\ \frac1{\sqrt2}.$$
# Equivalently, the harmonic mean of $\mathrm{srank}(W_l^*)^{1/2}$ is at most
# $\sqrt2\,(B/\sqrt2)^{k/k'}\sqrt{(k'+1)/k'}$, which tends to $\sqrt2$.
# ```
#
# ```{prf:lemma} Lemma 1 (after Lyu & Li; Ji & Telgarsky)
# :label: rank-lem1
# :nonumber:
# For a homogeneous ReLU network trained by gradient flow on the average exponential or
# logistic loss over a binary classification dataset, if the loss tends to 0 then
# $\boldsymbol\theta(t)/\|\boldsymbol\theta(t)\|$ converges to the direction of a first-order
# stationary (KKT) point of $\min\frac12\|\boldsymbol\theta\|^2$ s.t. $y_iN_{\boldsymbol\theta}
# (\mathbf x_i)\ge1$ for all $i$, the problem of Theorem 5 ({cite:t}`lyu2020gradient`,
# {cite:t}`ji2020directional`). A KKT point need not be a global minimiser, so Theorem 5 does not
# apply to it; the paper says the combination only "suggests" a low-rank bias.
# ```
#
# ```{prf:proof}
# (Theorems 4-5, Apps. D-E.) *Construction:* extend $N$ to depth $k'$ with the same outputs and
# $\|\boldsymbol\theta'\|^2\le k'B^{2k/k'}$ (Theorem 4: scale $N$'s layers by
# $B^{-(k'-k)/k'}$, append width-1 layers of weight $B^{k/k'}$) or
# $\|\boldsymbol\theta'\|^2\le2(k'+1)(B^2/2)^{k/k'}$ (Theorem 5: split the output into
# $\pm$ channels, then layers $\beta I_2$ and a last layer $\beta(1,-1)$). *Balance:* a
# minimiser has equal layer norms (Lemmas 14-15), so each is at most
# $\sqrt{\|\boldsymbol\theta'\|^2/k'}$. *AM-GM:* a point with $\|\mathbf x\|\le1$ and
# $|N^*(\mathbf x)|\ge1$ gives $1\le\prod_l\|W^*_l\|_2$, hence
# $\frac1{k'}\sum_l r_l\ge(\prod_l r_l)^{1/k'}\ge(\prod_l\|W^*_l\|_F)^{-1/k'}$, with
# $r_l=\|W^*_l\|_2/\|W^*_l\|_F$.
# ```
#
# The limit $1/\sqrt2$ of Theorem 5 comes from the construction: a signed scalar cannot pass a
# ReLU in one channel, so the tail carries it in two, and a layer $\beta I_2$ has ratio exactly
# $1/\sqrt2$ (stable rank 2). The bound is therefore "stable rank at most about 2 on average",
# not "rank 1"; only Theorem 4, whose labels are nonnegative, gives a bound that tends to 1.
#
# ## The constructions, exactly
#
# We take a random depth-2 reference network (width 5 on 4 inputs, output made nonnegative for
# Theorem 4), extend it to each depth $k'$, and check that the outputs agree, that the squared
# norm equals the formula (the reference is balanced first, so the bounds hold with equality),
# that the tail layers have ratio 1 (Theorem 4) or $1/\sqrt2$ (Theorem 5), and that the AM-GM
# certificate evaluated on the constructed network is at least the theorem's bound.

# %%
g0 = torch.Generator().manual_seed(1000 + seed)
Xc = torch.randn(50, 4, generator=g0, dtype=D)
Xc = Xc / Xc.norm(dim=1, keepdim=True)
ref = [torch.randn(5, 4, generator=g0, dtype=D) / 2, torch.randn(1, 5, generator=g0, dtype=D).abs() / 2]
ref = dc.balance(ref)
out_ref = dc.forward(ref, Xc)
scale = float(out_ref.max())                      # rescale so that max_i N(x_i) = 1 (q = 1)
ref = [W / scale ** 0.5 for W in ref]
out_ref = dc.forward(ref, Xc)
B = dc.frobenius_bound(ref)
err4 = err5 = norm4 = norm5 = tail4 = tail5 = 0.0
cert4_ok = cert5_ok = True
for kp in P["construct_depths"]:
    N4, N5 = dc.theorem4_network(ref, kp), dc.theorem5_network(ref, kp)
    err4 = max(err4, float((dc.forward(N4, Xc) - out_ref).abs().max()))
    err5 = max(err5, float((dc.forward(N5, Xc) - out_ref).abs().max()))
    norm4 = max(norm4, abs(dc.squared_norm(N4) / dc.theorem4_norm(2, kp, B) - 1))
    norm5 = max(norm5, abs(dc.squared_norm(N5) / dc.theorem5_norm(2, kp, B) - 1))
    tail4 = max(tail4, float((dc.ratios(N4[2:]) - 1).abs().max()))
    if kp > 3:
        tail5 = max(tail5, float((dc.ratios(N5[2:-1]) - 1 / math.sqrt(2)).abs().max()))
    cert4_ok &= dc.certificate(N4, 1.0) >= dc.theorem4_bound(2, kp, B) - 1e-12
    cert5_ok &= dc.certificate(N5, 1.0) >= dc.theorem5_bound(2, kp, B) - 1e-12
    cert4_ok &= float(dc.ratios(N4).mean()) >= dc.certificate(N4, 1.0) - 1e-12
    cert5_ok &= float(dc.ratios(N5).mean()) >= dc.certificate(N5, 1.0) - 1e-12
print(f"reference: depth 2, B = {B:.3f}; depths {list(P['construct_depths'])}")
print(f"max |N' - N|: Thm 4 {err4:.1e}, Thm 5 {err5:.1e}; max relative gap to the norm formula: "
      f"{norm4:.1e}, {norm5:.1e}; tail ratios off by {tail4:.1e}, {tail5:.1e}")
ledger.below("thm4-construction", "Thm 4 / App. D", "the depth-k' extension computes the same outputs",
             "exact", max(err4, 0.0), 1e-12, fmt=".1e")
ledger.below("thm5-construction", "Thm 5 / App. E", "the two-channel extension computes the same outputs",
             "exact", err5, 1e-12, fmt=".1e")
ledger.below("construction-norms", "Apps. D-E", "squared norms equal k'B^(2k/k') and 2(k'+1)(B^2/2)^(k/k') "
             "(max relative gap, balanced reference)", "<= (equality when balanced)", max(norm4, norm5), 1e-12,
             fmt=".1e")
ledger.below("tail-ratios", "Apps. D-E", "tail layers have ratio 1 (Thm 4) and 1/sqrt2 (Thm 5)", "by construction",
             max(tail4, tail5), 1e-12, fmt=".1e")
ledger.holds("certificate", "Apps. D-E", "mean ratio >= AM-GM certificate >= the theorem's bound, on every "
             "constructed network", "AM-GM chain", "holds" if (cert4_ok and cert5_ok) else "violated",
             cert4_ok and cert5_ok)

# %% [markdown]
# ## Depth sweeps
#
# The global minimisers of the theorems cannot be computed. Two proxies, trained with
# full-batch gradient descent and weight decay $\lambda=$ {glue:text}`rank3-lam` (which makes the penalised objective's
# stationary points balanced, like the minimisers: Lemmas 14-15 hold for them by the same
# rescaling argument):
#
# - **(a) square loss**, $\tfrac1{2n}\sum_i(N(\mathbf x_i)-y_i)^2+\tfrac\lambda2\|\boldsymbol\theta\|^2$
#   with targets $y_i=1+|\mathbf t^\top\mathbf x_i|\ge1$ for a random teacher $\mathbf t$
#   (nonnegative, as Theorem 4 needs);
# - **(b) logistic loss**, $\frac1n\sum_i\log(1+e^{-y_iN(\mathbf x_i)})+\tfrac\lambda2\|\boldsymbol
#   \theta\|^2$ with $y_i=\operatorname{sign}(\mathbf t^\top\mathbf x_i)$. As $\lambda\to0$,
#   minimisers of the penalised logistic loss point in max-margin directions, the objects of
#   Theorem 5; Lemma 1 says that unregularised gradient flow also heads to a (KKT) max-margin
#   direction, but only logarithmically slowly, which a CPU budget cannot follow.
#
# Each network first trains for a sixth of the budget without weight decay, then with it: for
# depth $k'\ge3$ the origin is a local minimum of the penalised objective (the loss moves only
# at order $\|\boldsymbol\theta\|^{k'-1}$ there), and a net that has not fitted the data before
# the penalty acts can collapse into it.
#
# **Choices made after pilot runs.** Three design choices were fixed after pilot runs of this
# page, not in advance: the warm start just described, the data margin of 0.1 below, and
# leaving out of the logistic statistics the networks that do not separate the training data
# (see below). Each of them removes runs that are poor proxies for the theorems' minimisers
# (collapsed to 0, no margin, not a classifier), but together they also select the runs we
# report on.
#
# Inputs are {glue:text}`rank3-n` points on the unit sphere of $\mathbb R^{d}$, $d=$
# {glue:text}`rank3-d`, at distance at least 0.1 from the teacher's hyperplane (so the classes
# are separated with a margin, the setting of Theorem 5); width {glue:text}`rank3-width`; {glue:text}`rank3-seeds` seeds per depth
# trained as one batch (`ensembles.train_ensemble`). For each network we record the ratio
# $r_l=\|W_l\|_2/\|W_l\|_F$ of every layer, the layer-norm spread
# $\max_l\|W_l\|_F/\min_l\|W_l\|_F$ (1 when balanced), and the stable rank of the hidden-to-hidden
# layers $W_2,\dots,W_{k'-1}$, whose limit distinguishes the two hypotheses "stable rank tends to
# 1" and "tends to 2". The first layer (input to hidden) and the last (a row, ratio 1 trivially)
# are special.

# %%
n, d, m = P["n"], P["d"], P["width"]
teacher = torch.randn(d, generator=gen, dtype=D)
cand = torch.randn(20 * n, d, generator=gen, dtype=D)
cand = cand / cand.norm(dim=1, keepdim=True)
Xs = cand[(cand @ teacher / teacher.norm()).abs() >= 0.1][:n]       # a margin of 0.1 around the teacher's plane
y_sq = (1 + (Xs @ teacher).abs()).view(-1, 1)
y_cl = torch.sign(Xs @ teacher)
for key, val in {"n": n, "d": d, "width": m, "seeds": P["seeds"], "lam": f"{P['lam']:g}"}.items():
    glue(f"rank3-{key}", val, display=False)

arms = {"square": ("half_mse", y_sq), "logistic": ("logistic", y_cl)}
results = {a: {} for a in arms}
for arm, (loss, y) in arms.items():
    for depth in P["depths"]:
        seeds = [1000 * seed + 100 * depth + s for s in range(P["seeds"])]
        ens = ensembles.Ensemble.build(
            lambda s, depth=depth: models.MLP(d, 1, m, depth, bias=False, init_std=math.sqrt(2 / m)).double(),
            seeds=seeds, device=dev)
        # warm start without weight decay (from a small fit, the penalised objective's trivial
        # minimum at 0 is out of reach), then weight decay for the rest of the budget
        ensembles.train_ensemble(ens, Xs.to(dev), y.to(dev), loss=loss, steps=P["steps"] // 6, lr=P["lr"],
                                 progress=False, desc=f"{arm} depth {depth} (warm start)")
        hist = ensembles.train_ensemble(ens, Xs.to(dev), y.to(dev), loss=loss, steps=P["steps"], lr=P["lr"],
                                        weight_decay=P["lam"], progress=False, desc=f"{arm} depth {depth}")
        Ws = [W.detach().cpu() for W in ens.weight_matrices()]
        r = torch.stack([spectra.spectral_frobenius_ratio(W) for W in Ws], -1)          # (seeds, depth)
        sr = torch.stack([spectra.stable_rank(W) for W in Ws], -1)
        fn = torch.stack([W.norm(dim=(-2, -1)) for W in Ws], -1)
        out = ens(Xs.to(dev)).detach().cpu().squeeze(-1)
        L = hist.loss[:, -1]
        results[arm][depth] = dict(
            r=r, sr=sr, mean_r=r.mean(-1), spread=fn.max(-1).values / fn.min(-1).values,
            mid_sr=sr[:, 1:-1].mean(-1) if depth > 2 else torch.full((len(seeds),), float("nan"), dtype=D),
            rel_change=((hist.loss[:, -P["steps"] // 10] - L).abs() / L),
            fit=(out - y_sq.squeeze(-1)).abs().max(-1).values if arm == "square"
            else (torch.sign(out) == y_cl).double().mean(-1),
            Ws=Ws, out=out)
        R_ = results[arm][depth]
        # Theorem 5 is about networks that separate the data; a logistic net that does not (it
        # can happen: a one-channel chain passes only one sign) is no max-margin proxy
        R_["keep"] = (R_["fit"] == 1.0) if arm == "logistic" else torch.ones(len(seeds), dtype=torch.bool)
        print(f"{arm:8s} depth {depth:2d}: mean ratio {R_['mean_r'].mean():.3f}  hidden-layer srank "
              f"{R_['mid_sr'].mean():.2f}  norm spread {R_['spread'].max():.3f}  "
              f"{'max |N - y|' if arm == 'square' else 'train accuracy'} "
              f"{R_['fit'].max() if arm == 'square' else R_['fit'].min():.3f}  "
              f"rel. loss change over last 10% {R_['rel_change'].max():.1e}"
              + ("" if bool(R_["keep"].all()) else
                 f"  [{int((~R_['keep']).sum())} not separating, hidden srank {R_['mid_sr'][~R_['keep']].mean():.2f}]"))

# %% [markdown]
# ### The bounds for these data
#
# Theorems 4-5 need a depth-$k$ reference with bounded layer norms. We take the trained depth-2
# networks ($k=2$), balanced, and rescaled so that they satisfy the constraint at every
# sample: for (a) so that the smallest $N(\mathbf x_i)/y_i$ is 1 (then $N(\mathbf x_i)\ge
# y_i\ge1$: the reference over-fits slightly, which only makes $B$ larger and the bound weaker;
# exact interpolation is not needed by the proof's AM-GM step), and for (b) so that the
# smallest margin $y_iN(\mathbf x_i)$ is 1. $B$ is the resulting layer norm (median over
# seeds): $B=$ {glue:text}`rank3-B4` for (a) and {glue:text}`rank3-B5` for (b); the bounds are
# then curves in $k'$. A smaller reference $B$ would give higher bounds; ours is one admissible
# choice, not the best one.

# %%
def reference_B(arm: str) -> float:
    Bs = []
    R2 = results[arm][2]
    for s in range(P["seeds"]):
        Wp = dc.balance([W[s] for W in R2["Ws"]])
        out = dc.forward(Wp, Xs)
        q = float((out / y_sq.squeeze(-1)).min()) if arm == "square" else float((y_cl * out).min())
        if q <= 0:
            continue
        Wp = [W / q ** 0.5 for W in Wp]                   # depth 2: scaling both layers by q^-1/2
        Bs.append(dc.frobenius_bound(Wp))
    return float(np.median(Bs)) if Bs else float("nan")


B4, B5 = reference_B("square"), reference_B("logistic")
depths = list(P["depths"])
deeper = [k for k in depths if k > 2]
def kept(a: str, k: int, key: str) -> torch.Tensor:
    return results[a][k][key][results[a][k]["keep"]]


mean_r = {a: np.array([float(kept(a, k, "mean_r").mean()) for k in depths]) for a in arms}
mid_sr = {a: np.array([float(kept(a, k, "mid_sr").mean()) for k in deeper]) for a in arms}
n_sep = {k: int(results["logistic"][k]["keep"].sum()) for k in depths}
print(f"reference norms: B = {B4:.3f} (square), {B5:.3f} (logistic)")
for k in deeper:
    print(f"k' = {k:2d}: square mean ratio {float(kept('square', k, 'mean_r').mean()):.3f} (Thm 4 bound "
          f"{dc.theorem4_bound(2, k, B4):.3f});  logistic {float(kept('logistic', k, 'mean_r').mean()):.3f} "
          f"(Thm 5 bound {dc.theorem5_bound(2, k, B5):.3f}; {n_sep[k]} of {P['seeds']} separating)")

deep = depths[-1]
spread = max(float(results[a][k]["spread"].max()) for a in arms for k in depths)
sq_mid, lg_mid = float(kept("square", deep, "mid_sr").mean()), float(kept("logistic", deep, "mid_sr").mean())
n_not_sep = sum(P["seeds"] - v for v in n_sep.values())
glue("rank3-notsep", n_not_sep, display=False)
glue("rank3-total", P["seeds"] * len(depths), display=False)
glue("rank3-deep", deep, display=False)
glue("rank3-sq-mid", f"{sq_mid:.2f}", display=False)
glue("rank3-lg-mid", f"{lg_mid:.2f}", display=False)
glue("rank3-B4", f"{B4:.2f}", display=False)
glue("rank3-B5", f"{B5:.2f}", display=False)
glue("rank3-spread", f"{spread:.3f}", display=False)

ledger.below("balanced", "Lemmas 14-15 (analogue)", "weight-decay solutions are balanced: max layer-norm spread "
             "over all depths, seeds and arms", "optima are balanced", spread, 1.05)
ledger.below("fits", "setup", "square arm: every network nearly interpolates (max |N - y|)", "interpolation",
             max(float(results["square"][k]["fit"].max()) for k in depths), 0.25)
ledger.holds("separating", "setup", f"logistic arm: at least one network separates the data at every depth",
             "separation", f"{min(n_sep.values())} of {P['seeds']} (worst depth)", min(n_sep.values()) >= 1,
             tolerance=">= 1")
ledger.holds("thm4-bound-holds", "Thm 4", "square arm: the mean ratio is above Theorem 4's bound at every depth",
             "bound for global minimisers", f"{sum(float(results['square'][k]['mean_r'].min()) >= dc.theorem4_bound(2, k, B4) for k in deeper)} of {len(deeper)}",
             all(float(results["square"][k]["mean_r"].min()) >= dc.theorem4_bound(2, k, B4) for k in deeper))
ledger.holds("thm5-bound-holds", "Thm 5", "logistic arm (separating nets): the mean ratio is above Theorem 5's bound at every depth",
             "bound for global minimisers", f"{sum(float(kept('logistic', k, 'mean_r').min()) >= dc.theorem5_bound(2, k, B5) for k in deeper)} of {len(deeper)}",
             all(float(kept("logistic", k, "mean_r").min()) >= dc.theorem5_bound(2, k, B5) for k in deeper))
ledger.below("square-to-rank1", "Thm 4 (H1)", f"square arm: hidden-layer stable rank at depth {deep} is near 1",
             "ratio -> 1", sq_mid, 1.2, fmt=".2f")
ledger.between("logistic-to-rank2", "Thm 5 (H2)", f"logistic arm (separating nets): hidden-layer stable rank at depth {deep} is "
               "near 2, not 1", "ratio -> 1/sqrt2 (srank <= ~2)", lg_mid, 1.5, 2.5, fmt=".2f")
i0 = depths.index(deeper[0])
ledger.holds("logistic-ratio-falls", "this page", f"logistic arm (separating nets): the mean ratio is lower at depth "
             f"{deep} than at depth {deeper[0]} (it approaches 1/sqrt2 from above)", "not stated",
             f"{mean_r['logistic'][i0]:.3f} -> {mean_r['logistic'][-1]:.3f}",
             bool(mean_r["logistic"][-1] < mean_r["logistic"][i0]), tolerance="sign")

# %%
fig, axes = plotting.subplots(2, height=3.0)
kk = np.arange(2, max(depths) * 4 + 1)
ax = axes[0]
for i, (a, name) in enumerate((("square", "(a) square + weight decay"), ("logistic", "(b) logistic + weight decay"))):
    ax.plot(depths, mean_r[a], "o-", color=plotting.color(i), label=name)
    for k in depths:
        vals = kept(a, k, "mean_r").numpy()
        ax.plot(np.full(vals.shape, k), vals, ".", color=plotting.color(i), alpha=0.4, ms=4)
ax.plot(kk[kk > 2], [dc.theorem4_bound(2, k, B4) for k in kk[kk > 2]], "--", color=plotting.color(0),
        label="Thm 4 bound")
ax.plot(kk[kk > 2], [dc.theorem5_bound(2, k, B5) for k in kk[kk > 2]], "--", color=plotting.color(1),
        label="Thm 5 bound")
ax.axhline(1.0, color="k", lw=0.8, ls=":")
ax.axhline(1 / math.sqrt(2), color="k", lw=0.8, ls=":")
ax.set_xscale("log", base=2)
ticks = sorted(set(depths) | {16, 32} if max(kk) >= 32 else set(depths) | {16})
ax.set_xticks(ticks, [str(k) for k in ticks])
ax.minorticks_off()
ax.set_xlabel("depth $k'$")
ax.set_ylabel(r"mean over layers of $\|W_l\|_2/\|W_l\|_F$")
ax.legend(fontsize=7, loc="lower right")
ax = axes[1]
for i, a in enumerate(arms):
    for k in deeper:
        vals = results[a][k]["sr"][results[a][k]["keep"]][:, 1:-1].reshape(-1).numpy()
        ax.plot(np.full(vals.shape, k) * (1 + 0.04 * (2 * i - 1)), vals, ".", color=plotting.color(i), alpha=0.5)
    ax.plot(deeper, mid_sr[a], "o-", color=plotting.color(i))
ax.axhline(1.0, color="k", lw=0.8, ls=":")
ax.axhline(2.0, color="k", lw=0.8, ls=":")
ax.set_xscale("log", base=2)
ax.set_xticks(deeper, [str(k) for k in deeper])
ax.minorticks_off()
ax.set_xlabel("depth $k'$")
ax.set_ylabel("stable rank of hidden layers")
glue("rank3-fig-depth", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} rank3-fig-depth
# :name: fig-rank3-depth
# Left: the mean over layers of $\|W_l\|_2/\|W_l\|_F$ against depth for weight-decay solutions
# of a square-loss regression with nonnegative targets (blue) and a logistic-loss
# classification (orange), per seed (dots) and averaged (line), with the lower bounds of
# Theorems 4 and 5 (dashed) for a depth-2 reference with the measured norm $B$; dotted: the
# bounds' limits 1 and $1/\sqrt2$. Right: stable ranks of the hidden-to-hidden layers
# $W_2,\dots,W_{k'-1}$.
# ```
#
# {glue:text}`rank3-notsep` of the {glue:text}`rank3-total` logistic networks do not separate the
# training data (they end in a penalised local minimum whose hidden layers carry one channel,
# which can pass only one sign); they are no proxies for max-margin solutions and are left out
# of the logistic statistics (a rule set after pilot runs, see above). Both arms end balanced
# (layer-norm spread at most {glue:text}`rank3-spread`), as the minimisers of the theorems are,
# and both sit above their theorem's bound at every depth; at these depths the bounds are far
# below the measured ratios, so this check is weak. The two arms differ in the way the theorems
# suggest: with the square loss the hidden layers are essentially rank 1 already at depth
# {glue:text}`rank3-deep` (mean stable rank {glue:text}`rank3-sq-mid`), while with the logistic
# loss their stable rank is near 2 (mean {glue:text}`rank3-lg-mid`) and the mean ratio falls with
# depth towards $1/\sqrt2$. With $\pm1$ labels the network carries the positive and the negative
# part of its output in two channels, as in the construction of Theorem 5.
#
# ## Conclusion
#
# The constructions behind Theorems 4 and 5 are exact, and they explain the two limits: 1 for
# the square loss with nonnegative targets, $1/\sqrt2$ (stable rank about 2) for classification.
# Our proxies, weight-decay solutions of depth at most {glue:text}`rank3-deep`, are consistent
# with both limits, but they are not the theorems' global minimisers, and the depths are small,
# so this is evidence about the proxies and not a test of the theorems. "Low rank" in the
# paper's conclusion for classification means "stable rank about 2 in the hidden layers", as
# the paper's own remark after Theorem 5 says; it does not mean rank 1. The CPU profile does not
# follow unregularised gradient flow to its max-margin direction (Lemma 1), which is
# logarithmically slow; the `full` profile goes deeper and trains longer.
#
# **How the tolerances are set.** The constructions are exact, so they are compared at
# $10^{-12}$, far above float64 rounding for these sizes. Balancedness: stationary points of the
# penalised objective are exactly balanced (rescaling one layer by $c$ and the next by $1/c$ leaves
# the loss unchanged and lowers the penalty to first order unless the norms agree), and the 5% allowance on
# the spread covers a run that has not fully converged in the budget. The bound checks have no
# tolerance. **Three thresholds were set after pilot runs and are not derived from the
# theory:** `fits` (square arm, $\max_i|N(\mathbf x_i)-y_i|<0.25$, with targets $y_i\ge1$),
# `square-to-rank1` (hidden-layer stable rank below 1.2 at the largest depth) and
# `logistic-to-rank2` (between 1.5 and 2.5). The last two separate the hypotheses "stable rank
# tends to 1" and "tends to 2": the first lies well below, the second at or above the
# midpoint 1.5; they were not moved after they were set, and seeds 1 and 2 are run as a check
# that they are not tuned to seed 0 (it reduces, but does not remove, the concern). The
# `separating` claim only asks for at least one separating network per depth, so
# that the logistic statistics are not empty. `logistic-ratio-falls` compares two numbers
# without a tolerance; it was added in review, after the trend had been seen in seeds 0-2.
#
# ## Claims

# %%
# NBVAL_CHECK_OUTPUT
ledger.report()
