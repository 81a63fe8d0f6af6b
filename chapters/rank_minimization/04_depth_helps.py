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
# # Depth helps: low average rank of minimum-norm deep networks
#
# The positive half of {cite:t}`timor2023implicit`: if a dataset can be fitted by a depth-$k$
# ReLU network with bounded layer norms, then every *minimum-norm* fit of much larger depth
# $k'$ has weight matrices whose average ratio $\rho(W)=\|W\|_2/\|W\|_F$
# ({prf:ref}`def-spectral-frobenius-ratio`) is bounded below by a quantity that grows with
# $k'$. For the square loss (Theorem 4) the bound tends to 1, i.e. stable rank
# ({prf:ref}`def-stable-rank`) $\mathrm{srank}=\rho^{-2}$ tending to 1; for max-margin
# classification (Theorem 5) it tends only to $1/\sqrt2$, i.e. stable rank about 2. The previous
# pages ({doc}`01_two_points_two_neurons`, {doc}`02_constant_probability`,
# {doc}`03_where_gradient_flow_goes`) showed that a
# shallow network trained by gradient flow is no rank minimiser; this page turns to depth. It
# checks the constructions behind the proofs exactly, then computes, at depths up to
# {glue:text}`rank3-deep`, stand-ins for the two objects the theorems and the paper's reading of
# them are about: interpolating networks of (locally) minimal norm (Theorem 4), and the directions
# that gradient flow on the exponential loss heads to (Lemma 1, which the paper combines with
# Theorem 5). Each network is put on the theorem's constraint, balanced, and its norm is
# compared with the norm of the theorem's construction: where it is not larger, the theorem's
# bound provably holds for that network.
#
# :::{important}
# **What is and is not tested.** The theorems are about *global* minimisers of the parameter
# norm, which no algorithm can compute or certify. We compute *local* ones: for the square loss,
# KKT points of the minimum-norm interpolation problem (the limit $\lambda\to0$ of weight decay),
# with several restarts; for classification, the direction reached by gradient flow on the
# exponential loss, which by Lemma 1 heads to a KKT point of the max-margin problem. What the page
# checks of Theorems 4 and 5 themselves is their proofs: the constructions and the chain of
# inequalities, on instances. Claims about the computed networks bear on the paper's reading of
# the theorems, that weight decay (square loss) and gradient flow (exponential loss) produce
# low-rank deep networks, through a stand-in (marked *proxy* in the ledger: we compute the
# $\lambda\to0$ limit of weight decay directly instead of training with weight decay).
# The exponential-loss runs follow gradient flow only until the smallest margin reaches 100; from
# then on (every network gets there by step {glue:text}`rank3-cap-step` of
# {glue:text}`rank3-msteps`) they hold the scale there and follow the direction,
# since gradient flow itself would need a time of order $e^{100}$ to get further. That is a
# stand-in for the late phase of gradient flow, so the claims on Lemma 1 and on the paper's
# suggestion that gradient flow with an exponentially tailed loss produces low-rank networks are
# marked *proxy* as well.
# :::
#
# :::{admonition} What this page shows
# - The constructions of the proofs (Appendices D-E) and their chain of inequalities are verified
#   to rounding error.
# - Square loss: the minimum-norm interpolants that projected descent of the norm finds (KKT points
#   of Problem 2) have hidden layers of stable rank 1 and a mean ratio above Theorem 4's bound at
#   every depth. Compared with the construction (all within {glue:text}`rank3-sq-nc-dev` of its
#   norm), {glue:text}`rank3-sq-nc-phrase`; the bound is measured on them, not implied.
#   Interpolants that do not minimise the norm violate
#   it at depths {glue:text}`rank3-sq-near-fail`.
# - Exponential loss: the KKT residual of Problem 6 falls along the runs (Lemma 1). Only the
#   directions certified as KKT points (residuals at most {glue:text}`rank3-kkt-tol`: depths
#   {glue:text}`rank3-cert-depths` at this budget) are read as end states; the others are not
#   resolved at this budget. The certified ones have a smaller norm than Theorem 5's construction,
#   so its bound holds for them, and hidden layers of stable rank near 2. On seed 1 of the seed
#   sweep no depth is certified at this budget, so this test is unresolved there.
# - Theorem 5 bounds stable rank from *above* (about 2 in the limit); these directions sit near
#   that cap, not near rank 1. The mean ratio over layers rises with depth for the square loss and
#   falls for the exponential loss, but both trends are layer averaging (the hidden layers' share
#   $(k'-2)/k'$ grows), not depth changing the layers in opposite directions.
#
# **Take away:** at these sizes the conclusions of Theorems 4 and 5 hold on the locally
# norm-minimal networks computed here, but for the square loss not through the theorem (of these
# networks, {glue:text}`rank3-sq-nc-phrase`), and for the exponential loss only at the depths
# whose end state is certified. "Low rank" in Theorem 5 means a stable rank *at most* about 2, and the
# trained directions are at that cap. The bound is not a property of any interpolant: the
# interpolants closest to the initialisation violate Theorem 4's bound.
# :::

# %% tags=["parameters"]
profile = "ci"   # "ci": CPU, under a minute; "full": wider networks, more restarts, longer runs (GPU)
seed = 0
device = "auto"

# %%
PROFILES = {
    # n points on the unit sphere of R^d; width of the hidden layers; depths k' of the sweeps;
    # nets: restarts per depth (one batch); descent_*: projected descent of the norm on the
    # interpolation constraint; margin_*: normalised gradient flow on the exponential loss
    "ci": dict(n=24, d=8, width=12, depths=(2, 4, 8, 16, 32), nets=5, descent_steps=80, descent_step=0.3,
               margin_steps=2000, margin_step=(0.03, 0.001), margin_cap=100.0, checkpoints=(100, 500, 1000),
               kaiming_depth=8, construct_depths=(3, 4, 8, 16, 32)),
    "full": dict(n=64, d=16, width=32, depths=(2, 4, 8, 16, 32, 64), nets=8, descent_steps=300, descent_step=0.3,
                 margin_steps=20_000, margin_step=(0.03, 0.0003), margin_cap=100.0,
                 checkpoints=(100, 1000, 5000, 10_000), kaiming_depth=8, construct_depths=(3, 4, 8, 16, 32, 64, 128)),
}

# %%
import matplotlib.pyplot as plt
import torch
from myst_nb import glue

from implicit_bias import cache
from implicit_bias import homogeneous as hn
from implicit_bias.rank_minimization import deep_constructions as dc
from implicit_bias.rank_minimization import deep_training as dt
from implicit_bias.rank_minimization import depth_helps as dh
from implicit_bias.chapter import start_chapter
from implicit_bias.claims import Ledger

P, dev = start_chapter(PROFILES, profile=profile, seed=seed, device=device)
ledger = Ledger("rank_minimization/04_depth_helps")
gen = torch.Generator().manual_seed(seed)
D = torch.float64
glue("rank3-deep", max(P["depths"]), display=False)

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
# $i$ (Problem 2), over networks of width $m'\ge m$ and depth $k'>k$. Then
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
# $\frac12\|\boldsymbol\theta\|^2$ subject to $y_iN_{\boldsymbol\theta}(\mathbf x_i)\ge1$
# (Problem 6), over width $m'\ge m$ and depth $k'>k$. Then
# $$\begin{aligned}\frac1{k'}\sum_{l=1}^{k'}\frac{\|W_l^*\|_2}{\|W_l^*\|_F}\ &\ge\
# \frac1{\sqrt2}\Big(\frac{\sqrt2}{B}\Big)^{k/k'}\sqrt{\frac{k'}{k'+1}}\\
# &\xrightarrow[k'\to\infty]{}\ \frac1{\sqrt2}.\end{aligned}$$
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
# stationary (KKT) point of Problem 6 ({cite:t}`lyu2020gradient`, {cite:t}`ji2020directional`).
# A KKT point need not be a global minimiser, so Theorem 5 does not apply to it; the paper says
# the combination only "suggests" a low-rank bias.
# ```
#
# ```{prf:lemma} Lemmas 14 and 15
# :label: rank-lem14
# :nonumber:
# A global minimiser $\boldsymbol\theta^*$ of Problem 2 (Lemma 14), or of Problem 6 (Lemma 15),
# is balanced: $\|W_i^*\|_F=\|W_j^*\|_F$ for all layers $i,j$.
# ```
#
# ```{prf:proof}
# (Theorems 4-5, Apps. D-E.) *Construction:* extend $N$ to depth $k'$ with the same outputs and
# $\|\boldsymbol\theta'\|^2\le k'B^{2k/k'}$ (Theorem 4: scale $N$'s layers by
# $B^{-(k'-k)/k'}$, append width-1 layers of weight $B^{k/k'}$) or
# $\|\boldsymbol\theta'\|^2\le2(k'+1)(B^2/2)^{k/k'}$ (Theorem 5: split the output into
# $\pm$ channels, then layers $\beta I_2$ and a last layer $\beta(1,-1)$). *Balance:* a
# minimiser has equal layer norms (Lemmas 14-15: rescaling layer $i$ by $c$ and layer $j$ by
# $1/c$ keeps the function and changes the norm unless they are equal), so each is at most
# $\sqrt{\|\boldsymbol\theta'\|^2/k'}$. *AM-GM:* a point with $\|\mathbf x\|\le1$ and
# $|N^*(\mathbf x)|\ge1$ gives $1\le\prod_l\|W^*_l\|_2$, hence
# $\frac1{k'}\sum_l r_l\ge(\prod_l r_l)^{1/k'}\ge(\prod_l\|W^*_l\|_F)^{-1/k'}$, with
# $r_l=\|W^*_l\|_2/\|W^*_l\|_F$.
# ```
#
# The proof uses global optimality only once, to get $\|\boldsymbol\theta^*\|\le\|\boldsymbol
# \theta'\|$. So **any** network that satisfies the constraint, is balanced, and has a norm at
# most the construction's satisfies the theorem's bound: for a balanced network with smallest
# output (Theorem 4: at a point with $y_i\ge1$) or margin (Theorem 5) equal to 1, the AM-GM
# chain gives mean ratio $\ge\sqrt{k'/\|\boldsymbol\theta\|^2}$, and
# $\sqrt{k'/\|\boldsymbol\theta'\|^2}$ is exactly the theorem's bound. This is the test applied
# below to every network we train.
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
# certificate evaluated on the constructed network is at least the theorem's bound. These are
# checks of our code and of the proofs' algebra (controls), not findings.

# %%
ref, Xc = dh.reference_network(seed)
cc = dh.check_constructions(ref, Xc, P["construct_depths"])
B_c, err, norm_gap, tail, cert_ok = (cc[key] for key in ("B", "err", "norm_gap", "tail", "cert_ok"))
print(f"reference: depth 2, B = {B_c:.3f}; depths {list(P['construct_depths'])}")
print(f"max |N' - N| {err:.1e}; max relative gap to the norm formulas {norm_gap:.1e}; tail ratios off by {tail:.1e}")
ledger.below("constructions", "Thms 4-5 / Apps. D-E", "the depth-$k'$ extensions compute the same outputs as the "
             "reference (largest $|N'-N|$ over both constructions and all depths)", "exact", err, 1e-12, fmt=".1e",
             items=["thm4", "thm5"], bearing="control", origin="theory: exact up to float64 rounding")
ledger.below("construction-norms", "Apps. D-E", "squared norms equal $k'B^{2k/k'}$ and $2(k'+1)(B^2/2)^{k/k'}$ "
             "(max relative gap, balanced reference); tail ratios 1 and $1/\\sqrt2$", "$\\le$ (equality when balanced)",
             max(norm_gap, tail), 1e-12, fmt=".1e", items=["thm4", "thm5"], bearing="control",
             origin="theory: exact up to float64 rounding")
ledger.holds("certificate", "Apps. D-E", "mean ratio $\\ge$ AM-GM certificate $\\ge$ the theorem's bound, on every "
             "constructed network (the proofs' chain of inequalities, checked on instances)", "AM-GM chain",
             "holds" if cert_ok else "violated", cert_ok, items=["thm4", "thm5"], bearing="verifies",
             origin="theory", falsifier="a constructed network whose mean ratio is below its AM-GM certificate, "
             "or whose certificate is below the theorem's bound")

# %% [markdown]
# ## Theorem 4 on minimum-norm interpolants
#
# **Data.** {glue:text}`rank3-n` points on the unit sphere of $\mathbb R^{d}$, $d=$
# {glue:text}`rank3-d`, with targets $y_i=1+|\mathbf t^\top\mathbf x_i|\ge1$ for a random teacher
# $\mathbf t$ (nonnegative, as Theorem 4 needs). Networks of width {glue:text}`rank3-width` and
# depths $k'\in$ {glue:text}`rank3-depths`, {glue:text}`rank3-nets` restarts per depth trained as
# one batch.
#
# **Two kinds of interpolants.** For each restart we compute (i) the interpolant *closest to the
# initialisation*, by Gauss-Newton projection of the initial network onto the constraint
# $N_{\boldsymbol\theta}(\mathbf x_i)=y_i$ (where gradient descent on the square loss ends when
# the network stays near its linearisation; nothing in it minimises the norm), and (ii) a
# *minimum-norm* interpolant: starting from (i), projected gradient descent of
# $\|\boldsymbol\theta\|^2$ on the constraint (each step removes a fraction of the part of
# $\boldsymbol\theta$ tangent to the constraint, then projects back). This is the limit
# $\lambda\to0$ of weight decay: its fixed points are the KKT points of Problem 2,
# $\boldsymbol\theta=\sum_i\mu_i\nabla_{\boldsymbol\theta}N(\mathbf x_i)$, and we report the
# relative size of the part of $\boldsymbol\theta$ outside that span (the KKT residual).
#
# **The test.** Each network is balanced (layers rescaled to equal Frobenius norms, which keeps
# the function). $B$ is the layer norm of the best depth-2 minimum-norm interpolant over the
# restarts ($k=2$); the construction of Theorem 4 from it has squared norm $k'B^{4/k'}$, and the
# bound is $(1/B)^{2/k'}$.
#
# **Design choices made after pilot runs.** Hidden-to-hidden layers start at
# $I+0.3\,G/\sqrt2$ with $G$ a Kaiming matrix (first and last layers Kaiming): with Kaiming
# hidden layers, networks of width 12 and depth 32 often end with a training input mapped to
# exactly 0, which no gradient can undo. At depth 8, where both starts train, the exponential-loss
# section below checks that the start does not change the result (claim `init-control`).

# %%
n, d, m = P["n"], P["d"], P["width"]
depths, E = list(P["depths"]), P["nets"]
X, y_sq, y_cl = dh.teacher_data(n, d, gen, margin=0.1, device=dev)   # a margin of 0.1 around the teacher's plane
for key, val in {"n": n, "d": d, "width": m, "nets": E, "depths": "{" + ", ".join(map(str, depths)) + "}"}.items():
    glue(f"rank3-{key}", val, display=False)
use_cache = profile == "full"


def square_arm(depth: int, g: torch.Generator) -> dict:
    """The square-loss arm (library :func:`~implicit_bias.rank_minimization.depth_helps.square_arm`) at one depth."""
    W0 = hn.init_weights(E, depth, d, m, g, init="identity", device=dev)
    return dh.square_arm(W0, X, y_sq, step=P["descent_step"], steps=P["descent_steps"])


sq = {}
for depth in depths:
    g = torch.Generator().manual_seed(1000 * seed + depth)
    S = cache.cached("rank3-square", dict(P, seed=seed, depth=depth), lambda: square_arm(depth, g), enabled=use_cache)
    # a restart counts when it ends on the constraint at a KKT point; the others (an input
    # mapped to 0 in some layer, or a descent that stalled) are reported and left out
    S["ok"] = (S["min"]["res"] < 1e-9) & (S["min"]["kkt"] < 0.1)
    for name in ("near", "min"):
        S[name] = {key: val[S["ok"]] for key, val in S[name].items()}
    sq[depth] = S

B4 = float((sq[2]["min"]["norm"] / 2).sqrt().min())    # best depth-2 reference, balanced: ||theta||^2 = 2 B^2
deeper = [k for k in depths if k > 2]
bound4 = {k: dc.theorem4_bound(2, k, B4) for k in deeper}
norm4 = {k: dc.theorem4_norm(2, k, B4) for k in deeper}
print(f"reference: best depth-2 minimum-norm interpolant, B = {B4:.3f}")
print("\n".join(dh.square_report(sq, E, bound4, norm4)))

# %% [markdown]
# {glue:text}`rank3-sq-dropped` of the {glue:text}`rank3-total` restarts do not end at a KKT
# point on the constraint (an input mapped to 0 in some layer, or a descent that stalls) and are
# left out. The norms of the minimum-norm interpolants sit close to the construction's norm:
# the ratio (trained over construction) lies in [{glue:text}`rank3-sq-nc-lo`,
# {glue:text}`rank3-sq-nc-hi`] over all depths $k'>2$ and restarts, and
# {glue:text}`rank3-sq-nc-below` of the {glue:text}`rank3-sq-nc-n` networks are at or below it.
# A network above the construction's norm is not a global minimiser (the construction beats it),
# so the argument above certifies none of those: for them Theorem 4 says nothing, and the bound
# is only measured (claim `thm4-bound-minnorm`, which bears on the paper's reading of Theorem 4
# for trained networks, not on the theorem). Every hidden-to-hidden layer has
# stable rank at most
# {glue:text}`rank3-sq-hid`: descent on the constraint finds networks with the structure of the
# construction, a shallow interpolant followed by rank-1 layers that carry a single channel, like
# the width-1 tail of the proof. The mean ratio is above Theorem 4's bound at
# every depth for every minimum-norm interpolant; the interpolants closest to the initialisation,
# whose norms are {glue:text}`rank3-sq-near-nc` times the construction's or more, fall below the
# bound at depths {glue:text}`rank3-sq-near-fail`, so the bound is not a property of any
# interpolant: it needs the small norm.

# %%
mins = torch.cat([sq[k]["min"]["norm"] / norm4[k] for k in deeper])
gap4 = min(float((sq[k]["min"]["mean_r"] - bound4[k]).min()) for k in deeper)
near_fail = [k for k in deeper if bool((sq[k]["near"]["mean_r"] < bound4[k]).all())]
hid_max = max(float(sq[k]["min"]["hid"].max()) for k in deeper)
near_hid_min = min(float(sq[k]["near"]["hid"].min()) for k in deeper)
rise = [float(sq[k]["min"]["mean_r"].mean()) for k in depths]
for key, val in {"sq-nc-lo": f"{float(mins.min()):.3f}", "sq-nc-hi": f"{float(mins.max()):.3f}",
                 "sq-nc-below": int((mins <= 1).sum()), "sq-nc-n": mins.numel(),
                 "sq-nc-dev": f"{100 * float((mins - 1).abs().max()):.1f}%", "sq-hid": f"{hid_max:.3f}",
                 "sq-near-nc": f"{min(float((sq[k]['near']['norm'] / norm4[k]).min()) for k in deeper):.1f}",
                 "sq-near-fail": ", ".join(map(str, near_fail)) if near_fail else "none",
                 "B4": f"{B4:.2f}", "sq-dropped": sum(int((~sq[k]["ok"]).sum()) for k in depths),
                 "sq-nc-phrase": (f"none of the {mins.numel()} has a norm at or below the construction's, so none is "
                                  "a global minimiser and the theorem says nothing about them"
                                  if int((mins <= 1).sum()) == 0 else
                                  f"{int((mins <= 1).sum())} of the {mins.numel()} have a norm at or below the "
                                  "construction's (the theorem's argument covers those); the others are not global "
                                  "minimisers and the theorem says nothing about them")}.items():
    glue(f"rank3-{key}", val, display=False)

n_ok = min(int(sq[k]["ok"].sum()) for k in depths)
steps_up = [b - a for a, b in zip(rise, rise[1:])]
ledger.holds("thm4-kkt", "Problem 2", "minimum-norm descent: restarts that end on the constraint (residual < 1e-9) "
             "at a KKT point (KKT residual < 0.1), worst depth", "KKT point", f"{n_ok} of {E}", n_ok >= E - 2,
             tolerance=f">= {E - 2}", items="thm4", bearing="control", value=n_ok, lo=E - 2.5,
             origin="after-seeds: fixed after the pilot runs of this page")
ledger.above("thm4-bound-minnorm", "Thm 4", "every minimum-norm interpolant (KKT point of Problem 2) at every "
             "depth $k'>2$ has mean ratio above Theorem 4's bound (smallest mean ratio minus bound), although their "
             "norms exceed the construction's, so the theorem's argument does not cover them",
             "holds for global minimisers", gap4, 0.0, items="sec4-l2", bearing="supports", proxy=True,
             origin="paper: the bound of Theorem 4",
             falsifier="a KKT interpolant at some depth $k'>2$ with mean ratio below Theorem 4's bound")
ledger.holds("thm4-bound-nearest", "Thm 4", "negative control: interpolants closest to the initialisation fall "
             "below the bound at some depth (number of depths where every one of them does)", "(not about them)",
             ", ".join(map(str, near_fail)) if near_fail else "none", len(near_fail) >= 1, tolerance=">= 1 depth",
             items="thm4", bearing="control", value=len(near_fail), lo=0.5, origin="prior")
ledger.holds("thm4-norm-construction", "Thm 4 / App. D", "how close the stand-in is to the theorem's object: the "
             "minimum-norm interpolants have norms within 10% of the construction's (range of trained / construction "
             "over depths $k'>2$ and restarts). Those above 1 are not global minimisers, so the theorem's "
             "certificate does not cover them", "$\\lVert\\theta^*\\rVert\\le\\lVert\\theta'\\rVert$",
             f"[{float(mins.min()):.4f}, {float(mins.max()):.4f}]", 0.9 <= float(mins.min()) and float(mins.max()) <= 1.1,
             tolerance="within [0.9, 1.1]", items="thm4", bearing="control", proxy=True,
             value=float((mins - 1).abs().max()), hi=0.1, origin="after-seeds: fixed after the pilot runs of this page")
ledger.below("thm4-rank1", "Sec. 4", "hidden-to-hidden layers of minimum-norm interpolants have stable rank 1 "
             f"at every depth $k'>2$ (largest; closest-to-init interpolants: at least {near_hid_min:.1f})",
             "bias towards rank 1 with depth", hid_max, 1.05, fmt=".3f", items="sec4-l2", bearing="supports",
             proxy=True, origin="after-seeds: fixed after the pilot runs of this page",
             falsifier="a hidden-to-hidden layer of a KKT interpolant with stable rank 1.05 or more (a second "
             "direction carrying weight)")
ledger.holds("thm4-ratio-rises", "Sec. 4", "layer averaging: the mean ratio of minimum-norm interpolants rises "
             "with depth (mean over restarts, every step of the sweep; value: the smallest rise). With rank-1 hidden "
             "layers (claim thm4-rank1) and a last layer of one row, only the first layer has ratio below 1, and its "
             "share of the mean is $1/k'$: the rise follows from thm4-rank1, no layer changes", "ratio $\\to1$ as $k'$ grows",
             " -> ".join(f"{v:.3f}" for v in rise), min(steps_up) > 0, tolerance="order", items="sec4-l2",
             bearing="control", proxy=True, value=min(steps_up), lo=0.0, origin="prior: the order only")


# %%
fig = dh.square_figure(sq, B4, norm4)
glue("rank3-fig-square", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} rank3-fig-square
# :name: fig-rank3-square
# Square loss with targets $y_i\ge1$. Left: the mean over layers of $\|W_l\|_2/\|W_l\|_F$ against
# depth, per restart (dots) and averaged (line), for minimum-norm interpolants (blue) and for the
# interpolants closest to the initialisation (orange), with Theorem 4's bound for the measured
# $B$ (dashed). Right: squared norm of each balanced interpolant divided by the squared norm of
# Theorem 4's construction from the best depth-2 interpolant; at or below 1 (dashed) the bound
# provably holds for that network.
# ```
#
# ## Theorem 5 and Lemma 1: gradient flow on the exponential loss
#
# **Setting.** The same inputs with labels $y_i=\operatorname{sign}(\mathbf t^\top\mathbf x_i)$
# (every point at distance at least 0.1 from the teacher's hyperplane, so the classes are
# separated with a margin), the same widths, depths and restarts, and the exponential loss
# $L=\sum_i e^{-y_iN(\mathbf x_i)}$ without any regularisation: the setting of Lemma 1.
#
# **Following gradient flow.** We take normalised steps,
# $\boldsymbol\theta\leftarrow\boldsymbol\theta-\eta_s\|\boldsymbol\theta\|\,\mathbf g/\|\mathbf g\|$
# with $\mathbf g=\nabla\log L$ (a positive rescaling of the gradient is a time change of
# gradient flow), with a relative step $\eta_s$ decaying geometrically from
# {glue:text}`rank3-eta0` to {glue:text}`rank3-eta1` over {glue:text}`rank3-msteps` steps. The
# margins grow like $\|\boldsymbol\theta\|^{k'}$; once the smallest margin reaches
# $q=$ {glue:text}`rank3-cap` we hold the scale there (gradient flow needs a time of order $e^{q}$
# to get that far), so the end of the run follows the direction of gradient flow at that
# scale, where points more than a few units of margin above the smallest carry almost no weight.
#
# **What is measured.** Along the run, the *normalised margin*
# $\min_iy_iN(\mathbf x_i)/\|\boldsymbol\theta\|^{k'}$ (it increases along gradient flow once
# the data are separated, {cite:t}`lyu2020gradient`) and the *KKT residual* of Problem 6 in the
# sense of Lyu & Li: at the network rescaled to smallest margin 1, multipliers $\lambda_i\ge0$
# are fitted to $\boldsymbol\theta=\sum_i\lambda_i\nabla q_i$ with $q_i=y_iN(\mathbf x_i)$, and
# we report the relative residual $\varepsilon$ (and the complementary slackness
# $\sum_i\lambda_i(q_i-1)/\sum_i\lambda_i$); both vanish exactly at a KKT point. At the end, the
# Theorem 5 test: the network at margin 1, balanced, against the construction from the best
# depth-$k$ network of the sweep, for every $k<k'$ (not only $k=2$: a deeper reference gives a
# higher bound, so a harder test).

# %%
eta0, eta1 = P["margin_step"]
for key, val in {"eta0": f"{eta0:g}", "eta1": f"{eta1:g}", "msteps": f"{P['margin_steps']:,}",
                 "cap": f"{P['margin_cap']:g}"}.items():
    glue(f"rank3-{key}", val, display=False)


def margin_arm(depth: int, init: str, g: torch.Generator) -> dict:
    """The exponential-loss arm at one depth from the start ``init``."""
    W = hn.init_weights(E, depth, d, m, g, init=init, device=dev)
    return dh.margin_arm(W, X, y_cl, steps=P["margin_steps"], step=eta0, final_step=eta1,
                         checkpoints=P["checkpoints"], margin_cap=P["margin_cap"])


mg = {}
for depth in depths:
    g = torch.Generator().manual_seed(1000 * seed + 500 + depth)
    mg[depth] = cache.cached("rank3-margin", dict(P, seed=seed, depth=depth), lambda: margin_arm(depth, "identity", g),
                             enabled=use_cache)
kd = P["kaiming_depth"]
g = torch.Generator().manual_seed(1000 * seed + 900 + kd)
mg_kaiming = cache.cached("rank3-margin-kaiming", dict(P, seed=seed, depth=kd), lambda: margin_arm(kd, "kaiming", g),
                          enabled=use_cache)

# best reference of each depth: the balanced layer norm at margin 1 is 1 / certificate
B5 = {k: float((1 / mg[k]["cert"][-1][mg[k]["sep"]]).min()) for k in depths}
steps_rec = mg[depths[0]]["hist"].steps
sep_all = {k: mg[k]["sep"] for k in depths}
# the convergence certificate of the end state: an (eps, delta)-KKT point of Problem 6 in the sense
# of Lyu & Li (toolkit kkt_residual), both residuals at most KKT_TOL, for every separating network
# of the depth; a property of the point itself, which a decayed step cannot fake
KKT_TOL, KKT_TOLS = 0.05, (0.025, 0.05, 0.1)


def certified(k: int, tol: float) -> bool:
    """Every separating network of depth k ends with KKT stationarity and slackness <= tol."""
    return dh.certified(mg[k], sep_all[k], tol)


cert_at = {tol: [k for k in depths if certified(k, tol)] for tol in KKT_TOLS}
cdeep = [k for k in cert_at[KKT_TOL] if k > 2]        # the depths whose end states are read below
print("\n".join(dh.margin_report(mg, E, steps_rec[0], cert_at[KKT_TOL], B5)))
print(f"Kaiming start, k' = {kd}: separating {int(mg_kaiming['sep'].sum())}/{E}; mean ratio "
      f"{float(mg_kaiming['mean_r'][mg_kaiming['sep']].mean()):.3f} (identity start "
      f"{float(mg[kd]['mean_r'][mg[kd]['sep']].mean()):.3f})")

# %% [markdown]
# The networks that do not separate the training data (a training input mapped to 0 stays
# there) are no candidates for Problem 6 and are left out of the statistics:
# {glue:text}`rank3-notsep` of {glue:text}`rank3-total`. Along the runs the KKT residual falls,
# on average from {glue:text}`rank3-eps0` at step {glue:text}`rank3-step0` to
# {glue:text}`rank3-eps1` at the end (largest {glue:text}`rank3-eps1max`), and the normalised margin
# grows for every network: the networks approach KKT points of Problem 6, as Lemma 1 says.
#
# **Which end states are read.** Lemma 1, Theorem 5 and the paper's reading of them are about the
# *limit* direction. A network is read as a (near) KKT point only where the toolkit's KKT residual
# certifies it: stationarity and slackness both at most {glue:text}`rank3-kkt-tol` for every
# separating network of that depth. At this budget that holds at depths
# {glue:text}`rank3-cert-depths`; at depths {glue:text}`rank3-uncert-depths` the end state is
# **not resolved at this budget**, and the claims below leave those depths out (the table after
# the claims shows the same reading at tolerances 0.025 and 0.1, and the runs at 3x the steps).
# On seed 1 of the seed sweep ({doc}`/book/robustness`) the certificate holds at no depth at
# this budget: there `kkt-certified` fails, and the two claims that compare certified directions
# with the construction have nothing to compare (NaN) and fail. The end state is not resolved at
# this budget on that seed, which says nothing against the theorem; it is why those two claims
# `qualify` the paper's reading instead of supporting it: the test holds where a depth is
# certified (seeds 0 and 2-4), and is not available on seed 1. (On such a seed `thm5-srank-2`
# falls back to depth 32 uncertified; read it as unresolved there too.)
# At the certified depths the trained directions beat the construction of Theorem 5: at margin 1
# and balanced, their squared norm is at most {glue:text}`rank3-mg-nc` times the construction's
# from the best depth-2 network, and at most {glue:text}`rank3-mg-nc-best` times the
# construction's from the best network of any smaller depth of the sweep, so the bound of
# Theorem 5 holds for them by the theorem's own argument. The same test fails at step
# {glue:text}`rank3-step0` for {glue:text}`rank3-early-fail` networks: it is not automatic.

# %%
n_not_sep = sum(int((~s).sum()) for s in sep_all.values())
eps_start = torch.cat([mg[k]["eps"][0][sep_all[k]] for k in depths])
eps_end = torch.cat([mg[k]["eps"][-1][sep_all[k]] for k in depths])
nm_growth = min(float((mg[k]["nm"][-1] / mg[k]["nm"][0])[sep_all[k]].min()) for k in depths)


def construction_over_trained(k: int, checkpoint: int, refs: list[int]) -> torch.Tensor:
    """Construction's squared norm over each trained network's at depth k (>= 1: Theorem 5's bound holds)."""
    return dh.construction_over_trained(mg[k], sep_all[k], k, checkpoint, refs, B5)


nan_if_empty = dh.nan_if_empty
ratio_k2 = nan_if_empty(cdeep, lambda k: construction_over_trained(k, -1, [2]))
ratio_best = nan_if_empty(cdeep, lambda k: construction_over_trained(k, -1, [j for j in depths if j < k]))
early = torch.cat([construction_over_trained(k, 0, [2]) for k in deeper])
k_top = max(cdeep) if cdeep else depths[-1]                  # the deepest certified depth
hid_top = float(mg[k_top]["hid"][sep_all[k_top]].mean())
falls = [float(mg[k]["mean_r"][sep_all[k]].mean()) for k in depths]
at_cap = [next((st for st, q in zip(steps_rec, mg[k]["hist"].min_margin) if bool((q[sep_all[k]] >= 0.999 * P["margin_cap"]).all())),
               None) for k in depths]
cap_step = "none" if None in at_cap else max(at_cap)
uncert = [k for k in depths if k not in cert_at[KKT_TOL]]
for key, val in {"notsep": n_not_sep, "total": E * len(depths), "cap-step": cap_step, "eps0": f"{float(eps_start.mean()):.3f}",
                 "eps1": f"{float(eps_end.mean()):.3f}", "eps1max": f"{float(eps_end.max()):.3f}",
                 "step0": steps_rec[0], "mg-nc": f"{float((1 / ratio_k2).max()):.3f}",
                 "mg-nc-best": f"{float((1 / ratio_best).max()):.3f}", "early-fail": int((early < 1).sum()),
                 "lg-mid": f"{hid_top:.2f}", "k-top": k_top, "kkt-tol": f"{KKT_TOL:g}",
                 "cert-depths": ", ".join(map(str, cert_at[KKT_TOL])) or "none",
                 "uncert-depths": ", ".join(map(str, uncert)) or "none"}.items():
    glue(f"rank3-{key}", val, display=False)

n_sep = min(int(s.sum()) for s in sep_all.values())
ledger.holds("separating", "setup", f"at every depth at least {E - 1} of the {E} networks separate the training data",
             "separation", f"{n_sep} of {E} (worst depth)", n_sep >= E - 1, tolerance=f">= {E - 1}", items="lemma1",
             bearing="control", value=n_sep, lo=E - 1.5, origin="after-seeds: fixed after the pilot runs of this page")
ledger.above("lemma1-margin-grows", "Lemma 1 (Lyu & Li)", "the normalised margin grows for every separating "
             f"network (smallest ratio end / step {steps_rec[0]}); with the scale held at margin {P['margin_cap']:g} "
             "the steps ascend a smoothed margin by design, so this checks the steps, not Lemma 1",
             "non-decreasing along GF", nm_growth, 1.0, fmt=".3f", items="lemma1", bearing="control",
             origin="theory: non-decreasing along gradient flow")
ledger.below("lemma1-kkt-falls", "Lemma 1", f"the KKT residual of Problem 6 falls: mean at the end over mean at "
             f"step {steps_rec[0]} (end mean {float(eps_end.mean()):.3f}; runs with the scale held at margin "
             f"{P['margin_cap']:g}, a stand-in for late gradient flow)", "$\\to0$ (KKT point in the limit)",
             float(eps_end.mean() / eps_start.mean()), 0.5, fmt=".3f", items="lemma1", bearing="supports",
             proxy=True, origin="after-seeds: fixed after the pilot runs of this page",
             falsifier="the mean KKT residual at the end is more than half its value at the first checkpoint "
             "(the runs do not head to KKT points)")
ledger.holds("kkt-certified", "Lemma 1", f"convergence certificate: depths at which every separating network ends "
             f"within KKT stationarity and slackness {KKT_TOL:g} (the end states read below; the others are not "
             "resolved at this budget; on seed 1 of the seed sweep no depth is, and this control fails there)",
             "(a certificate, not a finding)",
             ", ".join(map(str, cert_at[KKT_TOL])) or "none", len(cdeep) >= 1, tolerance=">= 1 depth k' > 2",
             items="lemma1", bearing="control", value=len(cdeep), lo=0.5,
             # a count of depths whose residuals sit near KKT_TOL: another CPU's kernels certify one depth
             # more or fewer (2 instead of 1 under generic kernels); the verdict is compared exactly
             vtol=1.0,
             origin="prior: an (eps, delta)-KKT point with both residuals at most 5% (Lyu & Li's approximate KKT "
             "points), stated before the runs at 3x the steps")
THM5_NORM = "$\\lVert\\theta^*\\rVert\\le\\lVert\\theta'\\rVert$"
ledger.above("thm5-below-construction", "Thm 5 / App. E", "every certified direction (margin 1, balanced) has a "
             "smaller norm than Theorem 5's construction from the best depth-2 network, at every certified depth "
             "$k'>2$ (smallest ratio construction / trained). It needs a certified depth: on seed 1 of the seed sweep "
             "none is at this budget, the value is NaN and the row fails there (unresolved, not against Theorem 5)",
             THM5_NORM, float(ratio_k2.min()), 1.0, fmt=".4f", items="sec5-gf", bearing="qualifies", proxy=True,
             origin="theory: the certificate of the proof",
             falsifier="a certified direction whose balanced margin-1 norm exceeds the construction's (ratio "
             "below 1): Theorem 5's argument would then not cover it")
ledger.above("thm5-deeper-references", "Thm 5 / App. E", "the same against the construction from the best trained "
             "network of every smaller depth of the sweep (smallest ratio; as above, NaN and failing on seed 1, where no "
             "depth is certified)", THM5_NORM, float(ratio_best.min()), 1.0, fmt=".4f", items="sec5-gf",
             bearing="qualifies", proxy=True,
             origin="theory: the certificate of the proof",
             falsifier="a certified direction above the construction built from a trained network of a smaller "
             "depth (ratio below 1)")
n_early = int((early < 1).sum())
ledger.holds("thm5-test-early", "Thm 5", f"negative control: at step {steps_rec[0]} some networks fail the same "
             "test (count of networks above the construction's norm)", "(not about them)",
             f"{n_early} of {early.numel()}", n_early >= 1, tolerance=">= 1", items="thm5", bearing="control",
             value=n_early, lo=0.5, origin="prior")
ledger.above("thm5-srank-2", "Thm 5 (limit $1/\\sqrt2$)", f"hidden-to-hidden layers at the deepest certified depth "
             f"({k_top}) have mean stable rank well above 1: at most about 2 is all Theorem 5 allows (an upper "
             "bound), and these networks sit near that cap, not near rank 1", "harmonic mean of $\\mathrm{srank}^{1/2}\\lesssim\\sqrt2$",
             hid_top, 1.5, fmt=".2f", items="sec5-gf", bearing="qualifies", proxy=True,
             origin="after-seeds: fixed after the pilot runs of this page",
             falsifier="mean hidden stable rank below 1.5 at the deepest certified depth (the directions well "
             "below the cap, towards rank 1)")
falls_by = min(a - b for a, b in zip(falls, falls[1:]))
ledger.holds("depth-ratio-falls", "Sec. 5", "layer averaging: the mean ratio over layers falls with depth "
             "(towards the hidden layers' value near $1/\\sqrt2$) because the share of hidden layers, $(k'-2)/k'$, grows; "
             "it measures the averaging, not a change of any layer", "-",
             " -> ".join(f"{v:.3f}" for v in falls), falls_by > 0, tolerance="order", items="sec5-gf",
             bearing="control", value=falls_by, lo=0.0, origin="prior: the order only")
ledger.below("init-control", "setup", f"a Kaiming start at depth {kd} reaches the same mean ratio as the identity "
             "start (absolute difference of the means)", "-", abs(float(mg_kaiming["mean_r"][mg_kaiming["sep"]].mean())
                                                               - float(mg[kd]["mean_r"][sep_all[kd]].mean())), 0.02,
             fmt=".3f", items="sec5-gf", bearing="control", origin="after-seeds: fixed after the pilot runs of this page")

# %% [markdown]
# **Analysis settings.** Three settings of this section are choices of the analysis, not of the
# training: the KKT tolerance of the certificate, the cut-off "well above 1" for the hidden stable
# rank, and (square-loss section) the cut-off 1.05 for "stable rank 1". The table evaluates each
# at the value used and two neighbours on the same networks; a verdict that changed between
# neighbours would make the claim `qualifies`.

# %%
lines, settings_flip = dh.neighbour_settings(
    cert_at, lambda ks: nan_if_empty(ks, lambda k: construction_over_trained(k, -1, [2])),
    lambda k: float(mg[k]["hid"][sep_all[k]].mean()), hid_top, hid_max)
print("\n".join(lines))
glue("rank3-settings-flip", "changes" if settings_flip else "does not change", display=False)

# %% [markdown]
# At these settings the verdict {glue:text}`rank3-settings-flip` between neighbours.

# %%
fig = dh.depth_figure(sq, mg, B4, B5[2], steps_rec)
glue("rank3-fig-depth", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} rank3-fig-depth
# :name: fig-rank3-depth
# Left: the mean over layers of $\|W_l\|_2/\|W_l\|_F$ against depth, per network (dots) and
# averaged (line), for minimum-norm interpolants of the square loss (blue) and for the directions
# reached by gradient flow on the exponential loss (orange), with the bounds of Theorems 4 and 5
# for the measured $B$ (dashed); dotted: the bounds' limits 1 and $1/\sqrt2$. Right: the KKT
# residual of Problem 6 along the exponential-loss runs (mean over the separating networks of
# each depth).
# ```
#
# With the exponential loss the hidden-to-hidden layers at the deepest certified depth,
# {glue:text}`rank3-k-top`, have mean stable rank {glue:text}`rank3-lg-mid`, as the tail of
# Theorem 5's construction, which carries the positive and the negative part of the output in two
# channels (the page measures the stable rank, not whether the trained layers carry those two
# channels). Theorem 5 gives an *upper* bound: the harmonic mean of $\mathrm{srank}^{1/2}$ is at
# most about $\sqrt2$, so stable rank 1 would satisfy it as well; the trained directions sit near
# the cap, not below it (claim `thm5-srank-2`).
#
# **The mean ratio over layers is an average.** For a network with hidden layers of ratio $r_h$,
# a first layer of ratio $r_1$ and a last layer of one row (ratio 1), the mean ratio is
# $(r_1+1+(k'-2)r_h)/k'$, which moves towards $r_h$ as $k'$ grows whatever the layers do. For the
# square loss $r_h=1$ at every depth (claim `thm4-rank1`), so the mean rises towards 1
# (`thm4-ratio-rises`); for the exponential loss $r_h\approx1/\sqrt2$, so it falls towards
# $1/\sqrt2$ (`depth-ratio-falls`). Both are controls: depth does not move the two losses in
# opposite directions; it moves the average towards the value of the hidden layers in both. What
# does change from layer to layer is measured directly: the hidden stable rank of the
# exponential-loss directions by depth, read only where the end state is certified. At this
# budget one depth is certified, so whether the hidden stable rank changes with depth is **not
# resolved at this budget**; the runs at three times the steps below answer it.
#
# **At three times the steps.** The same page at `IMPLICIT_BIAS_BUDGET=3` (every step count x3:
# exponential-loss steps, descent steps):
#
# ```
# PYTHONPATH=$PWD/lib python -m implicit_bias.book execute chapters/rank_minimization/04_depth_helps.py --budget 3 --out-dir _build/runs/x3
# ```
#
# | at 3x the steps (seed 0) | value |
# |---|---|
# | depths certified as KKT points (tolerance 0.05; 0.025: 16; 0.1: 8, 16, 32) | 16, 32 |
# | mean KKT stationarity at the end, $k'=$ 2, 4, 8, 16, 32 | 0.126, 0.074, 0.033, 0.014, 0.017 |
# | hidden stable rank, $k'=$ 4, 8, 16, 32 (certified: 16, 32) | 1.70, 1.83, 1.92, 1.95 |
# | `thm5-below-construction` over the certified depths (smallest ratio) | 1.0341 |
# | square loss: norm / construction's over $k'>2$ (at $k'=32$) | 1.0003-1.0110 (1.0003-1.0011) |
#
# More steps certify one more depth (16), and there the reading is the same: the certified
# directions beat the construction and have hidden stable rank near 2, rising from 1.92 at depth
# 16 to 1.95 at depth 32. Below depth 16 the end state is not certified even at 3x the steps, so
# whether the hidden stable rank keeps rising from shallower depths is not resolved (the values
# there, 1.70 and 1.83, are the same at both budgets but are not read). For the square loss, more
# descent steps bring every interpolant closer to the construction's norm, still from above: none
# is at or below it at either budget, which is what one expects if the descent converges to a
# network like the construction; the theorem's argument covers such a limit, not these iterates.
#
# ## Conclusion
#
# The constructions behind Theorems 4 and 5 and the chain of inequalities of their proofs are
# exact. For the square loss, projected descent of the norm finds KKT points of Problem 2 with
# rank-1 hidden layers and mean ratios above Theorem 4's bound at every depth up to
# {glue:text}`rank3-deep`; but {glue:text}`rank3-sq-nc-phrase`: the bound holds on them as a
# measurement, not as a consequence of the theorem. For the exponential loss, the directions
# certified as KKT points of Problem 6 have smaller norms than the construction of Theorem 5, so
# its bound holds for them by the theorem's own argument; the directions not certified at this
# budget are not read (on seed 1 of the seed sweep none is certified). None of these networks
# is a global minimiser that the theorems are about. "Low rank" for classification means "stable
# rank at most about 2 in the hidden layers", as the remark after Theorem 5 says, and the
# certified directions sit at that cap, not below it; the trends of the mean ratio with depth are
# layer averaging.
#
# **How the tolerances are set.** The constructions are exact, so they are compared at
# $10^{-12}$. The norm comparisons and bound checks have no tolerance (the ratio must be at least
# 1, the mean ratio above the bound). The KKT residual of the minimum-norm interpolants must be
# below 0.1 (a loose convergence check, not a finding); the directions of the exponential loss are
# read where both KKT residuals of Problem 6 are at most 0.05 (fixed before the runs at 3x the
# steps; the table above shows 0.025 and 0.1). "Stable rank 1" is tested as at most 1.05
# and "well above 1" as above 1.5; the mean KKT residual of Problem 6 must fall by half between
# step {glue:text}`rank3-step0` and the end; two starts agree when their mean ratios differ by at
# most 0.02; the norms of the minimum-norm interpolants must lie within 10% of the construction's
# (a check of the stand-in, not a finding). These thresholds were fixed after the pilot runs that led to this version of the
# page and then checked on seeds 0-4 ({doc}`/book/robustness`); the trends in depth are tested
# by their order only. The negative controls (`thm4-bound-nearest`, `thm5-test-early`) show that
# the two bound tests can fail.
#
# ## Claims

# %% tags=["nbval-check-output"]
ledger.report()
