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
# # Conserved quantities of gradient flow
#
# Gradient flow on a bias-free ReLU network conserves, for every hidden neuron, the difference
# between the squared norms of its incoming and outgoing weights. {cite:t}`le2022training`
# state this for arbitrary feedforward graphs (their Lemma 3), extend it to convolutions with
# weight sharing (Lemma 8), to residual blocks (Definition 5) and to whole layers (Lemma 4),
# and assemble it into *matrix* invariances $W_2^\top W_2-W_1W_1^\top=\text{const}$ (Theorem 1)
# from which they derive low-rank limits. Appendix F carries everything over to gradient
# descent with step $\eta$. This page states these results, checks the vertex-wise and layer-wise
# invariances on MLPs, CNNs with max-pool and the three residual blocks to float64 round-off
# (after adding back the exact second-order term of one GD step), measures how the raw GD drift
# scales with $\eta$, and tests the *pairwise* part of the lemma (Eq. 5, the off-diagonal of
# Theorem 1): in two-layer networks, over many random initialisations, with leaky ReLU, on a
# second data set, with frozen activation patterns and over longer runs, and for every point of
# Theorem 1 in networks that mix convolutions, residual blocks and dense layers. The pairwise
# part fails for ReLU networks, even in a window where no weight changes sign: it holds only
# when the two neurons share their activation pattern on every sample (for instance in linear
# networks). The absolute-valued form in which the paper states Lemma 8 fails even for linear
# networks.
#
# ```{admonition} What to take away
# - **True, exactly, and without the stable-sign assumption:** the per-neuron quantity
#   $\|\mathrm{in}_v\|^2-\|\mathrm{out}_v\|^2$ (Eq. 4), its per-channel version for
#   convolutions (Lemma 8), and the layer-wise Frobenius invariance (Lemma 4). Under gradient
#   descent they drift by the exact $\eta^2$ terms of Appendix F and by nothing else.
# - **False for ReLU networks:** the pairwise identity (Eq. 5), hence the off-diagonal part of the
#   matrix invariance $W_2^\top W_2-W_1W_1^\top=\text{const}$ (Theorem 1, all seven points), even
#   when no weight changes sign and no activation changes. It holds for linear networks and for
#   pairs of units with identical activation patterns.
# - **False even for linear networks:** the absolute-valued pair form of Lemma 8 (Eq. 47), which
#   is also what the paper's proof of Eq. (5) differentiates.
# - Appendix F's step-size bound assumes a risk with Lipschitz gradient, which a ReLU network's
#   risk does not have; the exact bookkeeping used here does not need it.
# - The rank-one conclusions that use the full matrix invariance are tested in
#   {doc}`03_alignment_low_rank_limit` and {doc}`04_reduced_alignment`; the path and tree
#   construction behind the paper's proofs is in {doc}`02_paths_and_trees`.
# ```

# %% tags=["parameters"]
profile = "ci"   # "ci": CPU, about a minute; "full": wider and deeper nets, longer runs (GPU)
seed = 0
device = "auto"

# %%
PROFILES = {
    # classes: the digits pair (labels -1/+1); lr, steps: the GD run of the drift-over-training
    # experiment; sweep_T, sweep_etas: the step-size sweep at a fixed gradient-flow time;
    # pair_*: the two-layer nets of the pairwise test; sign_floor, active_offset: the two
    # constructions of that test (see the text); robust_*: the repeated refutation (members
    # per setting, the fixed time, the two step sizes, the long run); mixed_*: the networks of
    # Theorem 1's points (stages of implicit_bias.invariances.invariants.MixedNet); abs_*: the
    # sign-stable runs of the absolute-valued pair form
    "ci": dict(classes=(3, 5), width=16, depth=3, cnn_channels=(4, 8), cnn_hidden=(16,),
               res_width=16, res_hidden=8, res_blocks=2, lr=0.1, steps=400, cnn_steps=150,
               record_every=10, sweep_T=10.0, sweep_etas=(0.2, 0.1, 0.05, 0.025, 0.0125),
               pair_width=8, pair_T=1.0, pair_etas=(0.1, 0.05, 0.025, 0.0125, 0.00625),
               sign_floor=0.8, active_offset=0.05,
               robust_members=8, robust_T=2.0, robust_etas=(0.1, 0.025), robust_long_T=20.0,
               robust_long_eta=0.05, gauss=(200, 20), leaky_slope=0.1,
               mixed_a=(("conv", 3), ("conv", 4), ("free", 6, 8), ("free", 6, 8), ("dense", 6)),
               mixed_b=(("conv", 3), ("dense", 8), ("free", 6, 8)), mixed_T=2.0,
               abs_floor=(0.5, 1.0), abs_T=(1.0, 0.5), abs_etas=(0.05, 0.0125)),
    "full": dict(classes=(3, 5), width=64, depth=4, cnn_channels=(8, 16), cnn_hidden=(32,),
                 res_width=64, res_hidden=32, res_blocks=3, lr=0.1, steps=5000, cnn_steps=2000,
                 record_every=50, sweep_T=20.0,
                 sweep_etas=tuple(0.2 * 2.0 ** -k for k in range(8)),
                 pair_width=16, pair_T=1.0, pair_etas=tuple(0.1 * 2.0 ** -k for k in range(7)),
                 sign_floor=0.8, active_offset=0.05,
                 robust_members=64, robust_T=4.0, robust_etas=(0.1, 0.025, 0.00625),
                 robust_long_T=200.0, robust_long_eta=0.05, gauss=(2000, 50), leaky_slope=0.1,
                 mixed_a=(("conv", 8), ("conv", 16), ("free", 16, 32), ("free", 16, 32),
                          ("dense", 16)),
                 mixed_b=(("conv", 8), ("dense", 32), ("free", 16, 32)), mixed_T=4.0,
                 abs_floor=(0.5, 1.0), abs_T=(1.0, 0.5), abs_etas=(0.05, 0.0125, 0.003125)),
}

# %%
import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import torch
from myst_nb import glue
from torch.func import vmap

from implicit_bias import data, models, plotting
from implicit_bias.invariances import invariants as inv
from implicit_bias.invariances import margins
from implicit_bias.chapter import start_chapter
from implicit_bias.claims import Ledger
from implicit_bias.ensembles import Ensemble

P, dev = start_chapter(PROFILES, profile=profile, seed=seed, device=device)
ledger = Ledger("invariances/01_conserved_quantities")
D = torch.float64
TOL = 1e-9  # round-off band for float64 identities (relative), fixed before any run

split = data.digits(classes=P["classes"], binary=True, dtype=D, device=dev)
X, y = split.X_train, split.y_train          # pixels in [0, 1], labels -1/+1
X_img = X.reshape(-1, 1, 8, 8)
print(f"digits {P['classes'][0]} vs {P['classes'][1]}: {len(X)} training images, logistic loss")

# %% [markdown]
# ## Setting
#
# A network $\nu(\cdot;w):\mathbb R^d\to\mathbb R$ is a directed acyclic graph $G=(V,E,w)$ with
# inputs $I$, one output $o$, and a positively 1-homogeneous activation $\sigma$ (ReLU, leaky
# ReLU or the identity) at every hidden vertex, which computes
# $\sigma\big(\sum_{u\in\mathrm{IN}_v}w_{uv}\,\mathrm{post}_u\big)$; $\mathrm{IN}_v$ and
# $\mathrm{OUT}_v$ are the in- and out-neighbours of $v$. There are no biases (a bias is an edge
# from an extra input fixed to 1). Training minimises
# $\mathcal R(w)=\frac1n\sum_{i=1}^n\ell\big(y_i\,\nu(x_i;w)\big)$, here with the logistic loss
# $\ell(m)=\log(1+e^{-m})$, by gradient flow $\dot w(t)\in-\partial\mathcal R(w(t))$ (Clarke
# subdifferential) or by gradient descent $w_{t+1}=w_t-\eta\,g_t$ with $g_t$ the gradient that
# autograd returns (it uses $\sigma'(0)=0$).
#
# :::{prf:assumption} Stable sign regime (Assumption 1 of {cite:t}`le2022training`)
# :label: inv-cq-asm-stable-sign
# :nonumber:
# For some $t_0<t_N\le\infty$, $\operatorname{sgn}w(t)=\operatorname{sgn}w(t_0)$ for all
# $t\in[t_0,t_N)$; the paper then writes $t_0=0$.
# :::
#
# ```{prf:assumption} Differentiable loss (Assumption 3)
# :label: inv-cq-asm-loss
# :nonumber:
# $\ell:\mathbb R\to\mathbb R$ is differentiable everywhere (logistic, exponential, square loss).
# ```

# %% [markdown]
# ## The vertex-wise invariance
#
# :::{prf:lemma} Vertex-wise invariance (Lemma 3 of {cite:t}`le2022training`)
# :label: inv-cq-lem3
# :nonumber:
# Under Assumptions 1 and 3, for every
# hidden vertex $v\in V\setminus(I\cup\{o\})$ whose incident edges all carry learnable weights,
# for almost every $t\ge0$,
#
# $$\begin{aligned}
# &\sum_{u\in\mathrm{IN}_v}w_{uv}^2(t)-\sum_{b\in\mathrm{OUT}_v}w_{vb}^2(t)\\
# &\quad=\sum_{u\in\mathrm{IN}_v}w_{uv}^2(0)-\sum_{b\in\mathrm{OUT}_v}w_{vb}^2(0).
# \end{aligned} \tag{4}$$
#
# If moreover $\mathrm{IN}_u=\mathrm{IN}_v=\mathrm{IN}$ and $\mathrm{OUT}_u=\mathrm{OUT}_v=
# \mathrm{OUT}$, then for almost every $t\ge0$
#
# $$\begin{aligned}
# &\sum_{a\in\mathrm{IN}}w_{au}(t)w_{av}(t)-\sum_{b\in\mathrm{OUT}}w_{ub}(t)w_{vb}(t)\\
# &\quad=\sum_{a\in\mathrm{IN}}w_{au}(0)w_{av}(0)-\sum_{b\in\mathrm{OUT}}w_{ub}(0)w_{vb}(0).
# \end{aligned} \tag{5}$$
# :::
#
# Eq. (4) is true, and it does not need Assumption 1; Eq. (5)
# is false for ReLU networks (last section). Write $Q_v:=\|\mathrm{in}_v\|^2-\|\mathrm{out}_v\|^2$
# for the left side of Eq. (4), with $\mathrm{in}_v=(w_{uv})_{u\in\mathrm{IN}_v}$ and
# $\mathrm{out}_v=(w_{vb})_{b\in\mathrm{OUT}_v}$.
#
# ```{prf:proof}
# (Of Eq. 4, by Euler's identity rather than the paper's path counting.) Fix a sample $x$ and
# let $z_v$ be the pre-activation of $v$ and $e_v=\partial\ell/\partial\,\mathrm{post}_v$ the
# signal back-propagated to its output. The gradient of a weight into $v$ is
# $e_v\sigma'(z_v)\,\mathrm{post}_u$, the gradient of a weight out of $v$ is
# $\delta_b\,\sigma(z_v)$ with $\sum_b w_{vb}\delta_b=e_v$. Hence
#
# $$\langle \mathrm{in}_v,\nabla_{\mathrm{in}_v}\ell\rangle-\langle \mathrm{out}_v,
#   \nabla_{\mathrm{out}_v}\ell\rangle=e_v\big(\sigma'(z_v)\,z_v-\sigma(z_v)\big)=0$$
#
# for every positively 1-homogeneous $\sigma$, including at $z_v=0$ with $\sigma'(0)=0$. Averaging
# over the samples gives $\tfrac{d}{dt}Q_v=-2\big(\langle\mathrm{in}_v,\nabla_{\mathrm{in}_v}
# \mathcal R\rangle-\langle\mathrm{out}_v,\nabla_{\mathrm{out}_v}\mathcal R\rangle\big)=0$ for
# almost every $t$, whatever the signs of the weights do. Equivalently: scaling
# $\mathrm{in}_v$ by $c>0$ and $\mathrm{out}_v$ by $1/c$ leaves $\nu$ unchanged, and $Q_v$ is the
# conserved quantity of that symmetry.
# ```
#
# The paper proves Eq. (4) by counting the paths of the decomposition $\nu=\mu\circ h$ of
# Lemma 2 ({doc}`02_paths_and_trees`); the argument above needs neither the decomposition nor
# stable signs. The same argument applies wherever the per-unit rescaling symmetry exists:
#
# - **Convolutions** (Lemma 8 below): a unit is an output *channel* $c$; its in-weights are the
#   kernel $K_l[c]$ (shared by all positions), its out-weights are all next-layer weights that
#   read channel $c$ ($K_{l+1}[:,c]$, or the $s^2$ columns of a dense layer reading the flattened
#   $s\times s$ map of channel $c$).
# - **Max-pool** is outside the paper's graph model (it is not a weighted sum), but it acts within
#   one channel and commutes with positive scaling, so the symmetry, and the invariance, survive it.
#   What is needed is exactly that: a pool that mixed channels would break it.
# - **Biases** must be counted as in-edges (an edge from a constant input). If they are left out,
#   the Euler term is $b_v\sum_i\delta_v^{(i)}\neq0$.
#
# :::{prf:definition} Residual blocks (Definition 5 of {cite:t}`le2022training`)
# :label: inv-cq-def-resnet
# :nonumber:
# With $x\in\mathbb R^a$, $Y\in\mathbb R^{b\times a}$, $U\in\mathbb R^{c\times b}$:
# 1. ResNetIdentity: $r(x;U,Y)=\sigma\big(U\sigma(Yx)+x\big)$ ($c=a$);
# 2. ResNetDiagonal: $r(x;U,Y,D)=\sigma\big(U\sigma(Yx)+Dx\big)$ with $D$ diagonal and learnable ($c=a$);
# 3. ResNetFree: $r(x;U,Y,Z)=\sigma\big(U\sigma(Yx)+Zx\big)$ with $Z\in\mathbb R^{c\times a}$ learnable.
# :::
#
# In all three, the *middle* neurons (between $Y$ and $U$) satisfy Eq. (4). The block's *output*
# neurons, and the neurons feeding a block, have the skip among their incident edges: with a
# learnable skip (diagonal, free) Eq. (4) holds with the skip weights counted ($D_{kk}$, the rows
# and columns of $Z$); with the fixed identity skip it does not apply, and the quantity
# $\|U_{k,:}\|^2-\|Y'_{:,k}\|^2$ built from the learnable weights alone drifts. That is the
# negative control below.
#
# :::{prf:lemma} Weight sharing (Lemma 8 of {cite:t}`le2022training`, per-channel form)
# :label: inv-cq-lem8
# :nonumber:
# Let $T_1$ be a bias-free convolutional layer whose output channel $k$ has kernel $T_1[k]$, and
# let $\mathrm{out}_k$ be the parameters of the next layer that read channel $k$. Then
# $\|T_1[k]\|^2-\|\mathrm{out}_k\|^2$ is constant along gradient flow. The paper states the
# lemma for *pairs* of channels $k\neq k'$, with the sums
# $\sum|w w'|$ over paired kernel entries (its Eq. 47); that pair form fails for the same reason
# as Eq. (5).
# :::
#
# :::{prf:theorem} Matrix-wise invariances (Theorem 1 of {cite:t}`le2022training`)
# :label: inv-cq-thm1
# :nonumber:
# Under Assumptions 1 and 3, for
# almost every $t\ge0$
#
# $$W_2(t)^\top W_2(t)-W_1(t)W_1(t)^\top=W_2(0)^\top W_2(0)-W_1(0)W_1(0)^\top \tag{6}$$
#
# for (1) consecutive dense layers; (2) consecutive convolutions, $W_1$ the output-channel
# flattening $c\times(ab)$ and $W_2$ the input-channel flattening $(de)\times c$; (3) $W_1=Y$,
# $W_2=U$ inside any residual block of Definition 5; (4)
# $W_1=[U_1\ Z_1]$, $W_2=\begin{bmatrix}Y_2\\Z_2\end{bmatrix}$ between consecutive ResNetFree
# blocks; (5)-(7) the mixed pairs convolution-dense, convolution-ResNetFree and
# ResNetFree-dense, with the analogous rearrangements.
# :::
#
# The diagonal of Eq. (6) is $-Q_v$ for the units shared by $W_1$ and $W_2$, so it is
# Eq. (4) again; the off-diagonal entries are Eq. (5). The library builds, for every model of the
# book, the units, their in- and out-weights, and the matrix $M=W_2^\top W_2-W_1W_1^\top$ of each
# group of units (`implicit_bias.invariances.invariants`).
#
# ```{prf:definition} Layer (Definition 6)
# :label: inv-cq-def-layer
# :nonumber:
# $F\subset E$ is a *layer* if no path contains two edges of $F$ and removing $F$ disconnects
# the graph.
# ```
#
# :::{prf:lemma} Edge-wise invariance (Lemma 4 of {cite:t}`le2022training`)
# :label: inv-cq-lem4
# :nonumber:
# Under Assumptions 1 and 3, for layers
# $F,F'$ of learnable weights, for almost every $t\ge0$,
# $\sum_{e\in F}w_e^2(t)-\sum_{f\in F'}w_f^2(t)=\sum_{e\in F}w_e^2(0)-\sum_{f\in F'}w_f^2(0)$. (7)
# :::
#
# The proof (and our check) uses sets $F$ that every input-output path crosses *exactly once*:
# then $\nu$ is positively 1-homogeneous in $(w_e)_{e\in F}$, and Euler's identity
# $\sum_{e\in F}w_e\,\partial_{w_e}\nu=\nu$ is the same for every such $F$. For an MLP each $W_l$
# is one; for a CNN each kernel (each free parameter once); in a block with a learnable skip
# $S\in\{D,Z\}$ the sets $\{Y,S\}$ and $\{U,S\}$ (Theorem 1's $[Y;Z]$ and $[U\ Z]$); with an
# identity skip only the layers outside the blocks. So $\|W_{l+1}\|_F^2-\|W_l\|_F^2$ is
# conserved for consecutive cuts.
#
# ```{prf:proposition} Gradient descent: the exact per-step drift (Appendix F)
# :label: inv-cq-appf
# :nonumber:
# Let $w'=w-\eta g$ be one GD step, and let $v$ be a unit for which Euler's identity
# $\langle\mathrm{in}_v,g_{\mathrm{in}_v}\rangle=\langle\mathrm{out}_v,g_{\mathrm{out}_v}\rangle$
# holds. Then
#
# $$Q_v(w')-Q_v(w)=\eta^2\big(\|g_{\mathrm{in}_v}\|^2-\|g_{\mathrm{out}_v}\|^2\big)$$
#
# exactly, so along GD with steps $\eta_s$ the quantity
# $Q_v(w_t)-\sum_{s<t}\eta_s^2\big(\|g_{\mathrm{in}_v,s}\|^2-\|g_{\mathrm{out}_v,s}\|^2\big)$
# is conserved. The same holds for Lemma 4 with $\eta^2\|G_F\|_F^2$, and for Eq. (6) with
# $\eta^2(G_2^\top G_2-G_1G_1^\top)$ *provided* its first-order term vanishes.
# ```
#
# ```{prf:proof}
# $\|\mathrm{in}_v-\eta g_{\mathrm{in}_v}\|^2=\|\mathrm{in}_v\|^2-2\eta\langle\mathrm{in}_v,
# g_{\mathrm{in}_v}\rangle+\eta^2\|g_{\mathrm{in}_v}\|^2$, and the same for $\mathrm{out}_v$;
# the first-order terms cancel by Euler's identity. For the matrix,
# $M(w')-M(w)=-\eta\big(G_2^\top W_2+W_2^\top G_2-G_1W_1^\top-W_1G_1^\top\big)+
# \eta^2\big(G_2^\top G_2-G_1G_1^\top\big)$, whose first-order term has the Euler terms on its
# diagonal. (The paper writes this as Eqs. 72-85; its Eqs. 80 and 85 print $\mathrm{IN}_v$ where
# $\mathrm{OUT}_v$ is meant, and Eq. 84 writes $[d]_{bv}$ for $[d]_{vb}$. Its Eqs. 81-85 equate
# the first-order terms of the two sides, which is Eq. (5) again: for ReLU networks they do not
# hold, see below.)
# ```
#
# Consequences for a fixed gradient-flow time $T=\eta\times(\text{steps})$: each step drifts by
# $O(\eta^2)$, there are $T/\eta$ steps, so the raw drift of $Q_v$ is $O(\eta)$: slope 2 per step
# and slope 1 in total on a log-log plot against $\eta$. The corrected quantity has no drift at
# all, up to round-off.

# %% [markdown]
# ## Euler's identity at initialisation
#
# The first-order term $E_v=\langle\mathrm{in}_v,g_{\mathrm{in}_v}\rangle-\langle\mathrm{out}_v,
# g_{\mathrm{out}_v}\rangle$ is computed from autograd's gradient on the training set, for every
# unit of five bias-free models, of an MLP with biases (counted as in-edges, and left out), and
# for the units of a ResNetIdentity network that touch the fixed skip. It is reported relative to
# the bound $\sqrt{\max_v(\|\mathrm{in}_v\|^2+\|\mathrm{out}_v\|^2)\cdot\max_v(\|g_{\mathrm{in}_v}
# \|^2+\|g_{\mathrm{out}_v}\|^2)}$ of its two terms.

# %%
FACTORIES = {
    "MLP": (lambda: models.MLP(64, 1, P["width"], P["depth"], bias=False), X),
    "CNN + max-pool": (lambda: models.ConvNet(1, 8, 1, channels=P["cnn_channels"],
                                              hidden=P["cnn_hidden"]), X_img),
    "ResNet identity": (lambda: models.ResNetMLP(64, 1, P["res_width"], P["res_blocks"],
                                                 P["res_hidden"], skip="identity"), X),
    "ResNet diagonal": (lambda: models.ResNetMLP(64, 1, P["res_width"], P["res_blocks"],
                                                 P["res_hidden"], skip="diagonal"), X),
    "ResNet free": (lambda: models.ResNetMLP(64, 1, P["res_width"], P["res_blocks"],
                                             P["res_hidden"], skip="free"), X),
}


def fresh(factory, offset=0):
    """The model of ``factory`` in float64 on the device, initialised from the chapter seed."""
    torch.manual_seed(1000 * seed + offset)
    return factory().to(device=dev, dtype=D)


def euler_terms(model, Xm, count_bias=True):
    """Relative Euler term of every unit group: {group: (conserved, max |E_v| / bound)}."""
    p = {k: v.detach() for k, v in model.named_parameters()}
    g = inv.param_grads(model, Xm, y, loss="logistic")
    groups = inv.neuron_groups(model, count_bias=count_bias)
    bound = float((inv.neuron_scales(p, groups) * inv.neuron_scales(g, groups)).sqrt())
    fo = inv.first_order_terms(p, g, groups)
    return {gr.name: (gr.conserved, float(fo[gr.name].abs().max()) / bound) for gr in groups}


rows = []
for name, (factory, Xm) in FACTORIES.items():
    for group, (ok, rel) in euler_terms(fresh(factory), Xm).items():
        rows.append((name, group, ok, rel))
biased = fresh(lambda: models.MLP(64, 1, P["width"], P["depth"], bias=True))
for count in (True, False):
    for group, (ok, rel) in euler_terms(biased, X, count_bias=count).items():
        rows.append((f"MLP with biases ({'counted' if count else 'left out'})", group, ok, rel))
for r in rows:
    print(f"{r[0]:28s} {r[1]:18s} Lemma 3 applies: {str(r[2]):5s}  |E| / bound = {r[3]:.1e}")

euler_ok = max(r[3] for r in rows if r[2] and "biases" not in r[0])
euler_bias_counted = max(r[3] for r in rows if "counted" in r[0])
euler_bias = min(r[3] for r in rows if "left out" in r[0])
euler_identity = min(r[3] for r in rows if r[0] == "ResNet identity" and not r[2])
glue("cq-euler-ok", f"{euler_ok:.0e}", display=False)
glue("cq-euler-bias", f"{euler_bias:.1e}", display=False)
glue("cq-euler-bias-counted", f"{euler_bias_counted:.0e}", display=False)
glue("cq-euler-identity", f"{euler_identity:.1e}", display=False)
ledger.below("euler-init", "Lemma 3 (4), Eq. (12)", "Euler term <in,g_in> - <out,g_out> vanishes "
             "for every unit of bias-free MLP, CNN+max-pool, ResNet blocks (learnable skips)",
             "first-order term 0", euler_ok, 1e-12, fmt=".1e", items=["lemma3-eq4", "eq12"],
             bearing="supports")
ledger.below("euler-bias-counted", "Lemma 4 (biases)", "MLP with biases counted as in-edges from a "
             "constant input: the Euler term vanishes", "bias = edge from input 1",
             euler_bias_counted, 1e-12, fmt=".1e", items="lemma4-biases", bearing="supports")
ledger.above("euler-bias-left-out", "Lemma 4 (biases)", "negative control: with biases left out of "
             "the in-edges the Euler term is O(1) relative", "bias = edge from input 1",
             euler_bias, 1e-3, fmt=".1e", items="lemma4-biases", bearing="control")
ledger.above("euler-identity-skip", "Def. 5", "negative control: units touching a fixed identity "
             "skip have a non-zero Euler term", "Lemma 3 needs learnable edges", euler_identity,
             1e-3, fmt=".1e", items="def5", bearing="control")

# %% [markdown]
# Where Lemma 3 applies, the Euler term is at most {glue:text}`cq-euler-ok` of its bound:
# round-off (with biases counted as in-edges: {glue:text}`cq-euler-bias-counted`). Leaving the
# biases out gives at least {glue:text}`cq-euler-bias`, and the units around a fixed identity
# skip at least {glue:text}`cq-euler-identity`: the same measurement is far from zero where the
# symmetry is missing.
#
# ## Invariants over training
#
# Each model is trained by full-batch GD in float64 on the digits pair. At every step the
# library adds the Appendix F terms $\eta^2(\|g_{\mathrm{in}}\|^2-\|g_{\mathrm{out}}\|^2)$ of
# every unit (and $\eta^2\|G_F\|_F^2$ of every cut) computed from the actual gradient. Drifts are
# relative to $\max_v(\|\mathrm{in}_v\|^2+\|\mathrm{out}_v\|^2)$ at the end (a bound on every
# $|Q_v|$), and for the cuts relative to the largest $\|F\|_F^2$.

# %%
def summarise(tr, ens):
    """Relative drifts over time of one tracked single-member run."""
    groups = inv.neuron_groups(ens.template)
    scale = float(inv.neuron_scales(ens.params, groups, 1)[0])
    cons = [g.name for g in groups if g.conserved]
    ctrl = [g.name for g in groups if not g.conserved]
    worst = lambda names, corr: torch.stack(
        [tr.drift(n, corr)[:, 0].abs().amax(-1) for n in names]).amax(0).numpy() / scale
    convs = [n for n in cons if n.startswith("conv")]
    out = dict(t=tr.time[:, 0].numpy(), raw=worst(cons, False), corr=worst(cons, True),
               ctrl=worst(ctrl, True) if ctrl else None, loss=tr.loss[0, tr.steps].numpy(),
               corr_conv=float(worst(convs, True).max()) if convs else None)
    if tr.cuts is not None and tr.cuts.shape[-1] > 1:
        cscale = float(tr.cuts[-1, 0].max())
        out["cut_raw"] = tr.cut_drift(False)[:, 0].abs().amax(-1).numpy() / cscale
        out["cut_corr"] = tr.cut_drift(True)[:, 0].abs().amax(-1).numpy() / cscale
    return out


runs = {}
for name, (factory, Xm) in FACTORIES.items():
    ens = Ensemble.from_models([fresh(factory)])
    steps = P["cnn_steps"] if name.startswith("CNN") else P["steps"]
    tr = inv.train_tracked(ens, Xm, y, loss="logistic", steps=steps, lr=P["lr"],
                           record_every=P["record_every"])
    runs[name] = summarise(tr, ens)
    r = runs[name]
    print(f"{name:16s} loss {r['loss'][0]:.3f} -> {r['loss'][-1]:.4f}   Eq.4 raw drift "
          f"{r['raw'].max():.1e}, corrected {r['corr'].max():.1e}   cuts raw "
          f"{r['cut_raw'].max():.1e}, corrected {r['cut_corr'].max():.1e}"
          + (f"   identity-skip units {r['ctrl'].max():.1e}" if r["ctrl"] is not None else ""))

corr_max = max(r["corr"].max() for r in runs.values())
cnn_channels_corr = runs["CNN + max-pool"]["corr_conv"]
raw_min = min(r["raw"][-1] for r in runs.values())
cut_max = max(r["cut_corr"].max() for r in runs.values())
ctrl_end = runs["ResNet identity"]["ctrl"][-1]
glue("cq-a-corr", f"{corr_max:.0e}", display=False)
glue("cq-a-raw", f"{raw_min:.0e}", display=False)
glue("cq-a-cut", f"{cut_max:.0e}", display=False)
glue("cq-a-ctrl", f"{ctrl_end:.2f}", display=False)
ledger.below("lemma3-gd-corrected", "Lemma 3 (4), App. F (78-80)", "Q_v minus the accumulated "
             "eta^2 terms is conserved for every unit of MLP, CNN+max-pool, ResNet (relative)",
             "conserved (GF); eta^2 slack (GD)", corr_max, TOL, fmt=".1e",
             items=["lemma3-eq4", "appF-vertex"], bearing="supports")
ledger.below("lemma8-per-channel", "Lemma 8 (k = k')", "the per-channel form (one channel with "
             "itself) is conserved through weight sharing and max-pool (corrected, relative)",
             "pairs k, k' (Eq. 47)", cnn_channels_corr, TOL, fmt=".1e", items="lemma8",
             bearing="qualifies")
ledger.above("lemma3-gd-raw", "App. F", "negative control: without the correction, GD drifts "
             "above round-off (the slack is real)", "slack O(eta^2) per step", raw_min, 1e3 * TOL,
             fmt=".1e", items="appF-vertex", bearing="control")
ledger.below("lemma4-cuts", "Lemma 4", "||F_{k+1}||^2 - ||F_k||^2 minus the eta^2 terms "
             "is conserved for consecutive input-output cuts (layers, kernels, [Y;S], [U S])",
             "any layers (Def. 6)", cut_max, TOL, fmt=".1e", items="lemma4", bearing="qualifies")
ledger.above("identity-skip-control", "Def. 5", "negative control: units touching the fixed "
             "identity skip drift O(1) even after the correction", "Lemma 3 does not apply",
             ctrl_end, 1e-2, fmt=".2f", items="def5", bearing="control")

# %%
fig, axes = plotting.subplots(3, height=2.8, sharey=True)
for i, (name, r) in enumerate(runs.items()):
    c = plotting.color(i)
    axes[0].plot(r["t"][1:], r["raw"][1:], color=c, label=name)
    axes[1].plot(r["t"][1:], np.maximum(r["corr"][1:], 1e-18), color=c)
    axes[2].plot(r["t"][1:], r["cut_raw"][1:], color=c, ls=":")
    axes[2].plot(r["t"][1:], np.maximum(r["cut_corr"][1:], 1e-18), color=c)
    if r["ctrl"] is not None:
        axes[1].plot(r["t"][1:], r["ctrl"][1:], color=c, ls="--", label="identity-skip units")
for ax in axes:
    ax.set_yscale("log")
    ax.set_xlabel(r"gradient-flow time $\eta t$")
    ax.axhline(TOL, color="grey", lw=0.8)
axes[0].set_ylabel(r"relative drift $\max_v|Q_v(t)-Q_v(0)|$")
axes[0].set_title("Eq. (4), raw GD", fontsize=9)
axes[1].set_title("Eq. (4) minus App. F terms", fontsize=9)
axes[2].set_title("Lemma 4 cuts (dotted: raw)", fontsize=9)
axes[0].legend(loc="lower right")
axes[1].legend(loc="center right", bbox_to_anchor=(1.0, 0.66))
glue("cq-fig-drift", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} cq-fig-drift
# :name: fig-inv-cq-drift
# Invariant drift over training. Left: under GD the per-unit quantities $Q_v$ of Eq. (4) drift
# by the Appendix F slack (maximum over all units where Lemma 3 applies, relative to the largest
# $\|\mathrm{in}_v\|^2+\|\mathrm{out}_v\|^2$). Middle: subtracting the accumulated
# $\eta^2(\|g_{\mathrm{in}}\|^2-\|g_{\mathrm{out}}\|^2)$ leaves round-off (grey line: the
# $10^{-9}$ tolerance), for the MLP, the CNN with max-pool (per channel) and the residual
# networks; the units around a fixed identity skip (dashed) keep an $O(1)$ drift. Right: the same
# for the differences of squared Frobenius norms of consecutive cuts (Lemma 4).
# ```
#
# After the correction the worst relative drift is {glue:text}`cq-a-corr` (raw GD: at least
# {glue:text}`cq-a-raw`), for the cut invariants {glue:text}`cq-a-cut`. The units around the
# identity skip end at a relative drift of {glue:text}`cq-a-ctrl`: Lemma 3 says nothing about
# them, and indeed they are not conserved.
#
# ## Drift against the step size
#
# Gradient flow is the limit $\eta\to0$ at fixed time $T=\eta\cdot\text{steps}$. The sweep below
# is one batched run: member $k$ of an ensemble of identical networks uses step $\eta_k$ and stops
# after $T/\eta_k$ steps. A second quantity is the drift of a *single* step from the
# initialisation, $|Q_v(w_0-\eta g_0)-Q_v(w_0)|$. Predictions
# (Appendix F proposition above): single step $\propto\eta^2$ (slope 2; exactly, since the first-order
# term is zero), total at fixed $T$ $\propto\eta$ (slope 1; the Riemann sum of
# $\eta\int(\|g_{\mathrm{in}}\|^2-\|g_{\mathrm{out}}\|^2)\,dt$, up to relative corrections of order
# $\eta$), corrected total: round-off. For the identity-skip units the first-order term does not
# vanish: single step slope 1 as $\eta\to0$, and a total drift that tends to the gradient-flow
# drift, not to 0. Bands for the fitted slopes, fixed before the runs: $[1.99,2.01]$ for the
# single step (exact), $[0.8,1.2]$ for the totals.

# %%
etas = torch.tensor(P["sweep_etas"], dtype=D, device=dev)
stops = (P["sweep_T"] / etas).round().long()
log_eta = np.log(etas.cpu().numpy())


def sweep(factory, Xm):
    """Fixed-time sweep and one-step drifts: per-eta relative drifts of the conserved and the
    control units."""
    ens = Ensemble.from_models([fresh(factory) for _ in range(len(etas))])
    model = fresh(factory)
    groups = inv.neuron_groups(model)
    cons = [g for g in groups if g.conserved]
    ctrl = [g for g in groups if not g.conserved]
    p0 = {k: v.detach() for k, v in model.named_parameters()}
    g0 = inv.param_grads(model, Xm, y, loss="logistic")
    q0 = inv.neuron_invariants(p0, groups)
    scale0 = float(inv.neuron_scales(p0, groups))

    def one_step(sel, eta):
        q1 = inv.neuron_invariants({k: p0[k] - eta * g0[k] for k in p0}, sel)
        return float(torch.cat([q1[g.name] - q0[g.name] for g in sel]).norm()) / scale0

    tr = inv.train_tracked(ens, Xm, y, loss="logistic", steps=int(stops.max()), lr=etas,
                           stop_after=stops, record_every=int(stops.max()))
    scale = inv.neuron_scales(ens.params, groups, 1).cpu()
    total = lambda sel, corr: (torch.cat([tr.drift(g.name, corr)[-1] for g in sel], -1)
                               .norm(dim=-1) / scale).numpy()
    worst = lambda sel: (torch.cat([tr.drift(g.name)[-1] for g in sel], -1).abs().amax(-1)
                         / scale).numpy()
    out = dict(step=np.array([one_step(cons, float(e)) for e in etas]),
               raw=total(cons, False), corr=worst(cons), loss=tr.loss[:, -1].numpy())
    if ctrl:
        out["ctrl_step"] = np.array([one_step(ctrl, float(e)) for e in etas])
        out["ctrl"] = total(ctrl, True)
    return out


sw_mlp = sweep(*FACTORIES["MLP"])
sw_id = sweep(*FACTORIES["ResNet identity"])
slope = lambda v: float(np.polyfit(log_eta, np.log(v), 1)[0])
s_step, s_total = slope(sw_mlp["step"]), slope(sw_mlp["raw"])
s_ctrl_step = slope(sw_id["ctrl_step"])
s_mid_total = slope(sw_id["raw"])
sweep_corr = max(sw_mlp["corr"].max(), sw_id["corr"].max())
ctrl_ratio = float(sw_id["ctrl"][-1] / sw_id["ctrl"][0])
for k, e in enumerate(P["sweep_etas"]):
    print(f"eta {e:.4g} ({int(stops[k])} steps): MLP one step {sw_mlp['step'][k]:.2e}, total raw "
          f"{sw_mlp['raw'][k]:.2e}, corrected {sw_mlp['corr'][k]:.1e} | ResNet identity: middle "
          f"units raw {sw_id['raw'][k]:.2e}, skip units one step {sw_id['ctrl_step'][k]:.2e}, "
          f"total corrected {sw_id['ctrl'][k]:.3f}")
print(f"final loss at T={P['sweep_T']:g}: MLP {sw_mlp['loss'].round(4)}")
glue("cq-b-step", f"{s_step:.3f}", display=False)
glue("cq-b-total", f"{s_total:.2f}", display=False)
glue("cq-b-mid", f"{s_mid_total:.2f}", display=False)
glue("cq-b-ctrl-step", f"{s_ctrl_step:.2f}", display=False)
glue("cq-b-ctrl-ratio", f"{ctrl_ratio:.2f}", display=False)
glue("cq-b-corr", f"{sweep_corr:.0e}", display=False)
glue("cq-b-T", f"{P['sweep_T']:g}", display=False)
ledger.between("appF-total-slope", "App. F", "setup check: raw drift of Q_v at fixed "
               "T = eta*steps is O(eta) (log-log slope vs eta; MLP), so GD approaches GF",
               "O(eta) total -> GF", s_total, 0.8, 1.2, fmt=".2f", items="appF-vertex",
               bearing="control")
ledger.between("appF-total-slope-resnet", "App. F, Def. 5", "setup check: the same for the "
               "middle units of the ResNetIdentity blocks", "O(eta) total", s_mid_total, 0.8, 1.2,
               fmt=".2f", items="appF-vertex", bearing="control")
ledger.below("appF-sweep-corrected", "App. F (78-80)", "corrected drift is round-off at every eta "
             "of the sweep (MLP and ResNet middle units)", "exact up to slack", sweep_corr, TOL,
             fmt=".1e", items=["appF-vertex", "lemma3-eq4"], bearing="supports")
ledger.between("identity-skip-step-slope", "Def. 5", "negative control: identity-skip units' "
               "one-step drift is first order in eta", "(not covered)", s_ctrl_step, 0.8, 1.2,
               fmt=".2f", items="def5", bearing="control")
ledger.above("identity-skip-gf-limit", "Def. 5", "negative control of the step-size test: a drift "
             "that gradient flow does make does not vanish as eta -> 0 (ratio smallest/largest "
             "eta)", "(not covered)", ctrl_ratio, 0.5, fmt=".2f", items="def5", bearing="control")

# %%
fig, axes = plotting.subplots(2, height=2.9)
e_np = etas.cpu().numpy()
ax = axes[0]
ax.loglog(e_np, sw_mlp["raw"], "o-", color=plotting.color(0), label=f"total at T (slope {s_total:.2f})")
ax.loglog(e_np, sw_mlp["step"], "s-", color=plotting.color(1), label=f"one step (slope {s_step:.2f})")
ax.loglog(e_np, np.maximum(sw_mlp["corr"], 1e-18), "^-", color=plotting.color(2),
          label="total minus App. F terms")
ax.axhline(TOL, color="grey", lw=0.8)
ax.set_title("MLP, Eq. (4)")
ax = axes[1]
ax.loglog(e_np, sw_id["raw"], "o-", color=plotting.color(0), label="middle units, total")
ax.loglog(e_np, sw_id["ctrl"], "D--", color=plotting.color(3),
          label="skip units, total minus App. F")
ax.loglog(e_np, sw_id["ctrl_step"], "s--", color=plotting.color(1),
          label=f"skip units, one step (slope {s_ctrl_step:.2f})")
ax.set_title("ResNetIdentity")
for ax in axes:
    ax.set_xlabel(r"step size $\eta$")
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # no overlapping labels
axes[0].legend(loc="center right", bbox_to_anchor=(1.0, 0.33), fontsize=7)
axes[1].legend(loc="upper left", bbox_to_anchor=(0.0, 0.92), fontsize=7)
axes[0].set_ylabel(r"relative drift of $Q_v$")
glue("cq-fig-eta", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} cq-fig-eta
# :name: fig-inv-cq-eta
# Drift against step size. Left (MLP): the drift of one GD step is exactly quadratic in $\eta$,
# the raw drift accumulated up to a fixed gradient-flow time $T$ is linear in $\eta$ (so it
# vanishes in the gradient-flow limit), and subtracting the Appendix F terms leaves round-off at
# every $\eta$. Right (ResNetIdentity): the middle units behave the same way; the units touching
# the fixed identity skip drift at first order per step and their drift at time $T$ tends to a
# non-zero limit.
# ```
#
# At $T=${glue:text}`cq-b-T` the fitted slopes are {glue:text}`cq-b-step` (one step) and
# {glue:text}`cq-b-total` (total, MLP; {glue:text}`cq-b-mid` for the ResNet middle units), and
# the corrected drift is at most {glue:text}`cq-b-corr`. The identity-skip units have one-step
# slope {glue:text}`cq-b-ctrl-step`, and their drift at the smallest step is
# {glue:text}`cq-b-ctrl-ratio` times the drift at the largest: it converges to the gradient-flow
# drift, not to 0.
#
# ## Appendix F's step size needs a smooth risk
#
# To keep the slack $\sum_s\eta_s^2(\cdot)$ bounded, Appendix F assumes that the risk has a
# $\beta(t)$-Lipschitz gradient on the ball of the current weights, takes
# $\eta_\tau=\min(1,1/\beta(\tau))$ and uses the descent lemma (its Eq. 86) to get
# $\mathcal R(w_{\tau+1})\le\mathcal R(w_\tau)-\tfrac{\eta_\tau}2\|d_\tau\|^2$ (Eq. 87, printed
# with "$=$" where only "$\le$" follows), hence
# $\sum_\tau\eta_\tau^2\|d_\tau\|^2\le2\mathcal R(w_0)$ (Eqs. 88-90). The risk of a ReLU network
# has no Lipschitz gradient on any ball that contains a point where some sample sits on a kink of
# some unit: the gradient jumps there. We measure this directly. Put one pre-activation
# $z_u(x_i)$ of a two-layer network exactly at 0 by projecting the row $w_u$, and compare
# gradients on the two sides: $q(\delta)=\|\nabla\mathcal R(w+\delta e)-\nabla\mathcal
# R(w-\delta e)\|/(2\delta)$ with $e$ the unit direction of $x_i$ in row $u$. For a smooth risk
# $q(\delta)$ tends to a finite curvature (slope 0 against $\delta$ on a log-log plot); across a
# kink the numerator tends to the jump and $q\propto1/\delta$ (slope $-1$). The unit and sample
# are chosen so that no other sample of that unit crosses its kink for the largest possible range
# of $\delta$ (`invariants.isolated_kink`; a first version took the smallest positive
# pre-activation, where other samples crossed at $\delta\approx10^{-5}$ and bent the fit).
# Fixed before the run:
# slope below $-0.9$ for ReLU, in $[-0.1,0.1]$ for the linear twin, over
# $\delta\in[10^{-7},10^{-4}]$.

# %%
def kink_quotients(activation):
    """q(delta) at a point where one pre-activation of a two-layer net is exactly 0."""
    torch.manual_seed(1000 * seed + 700)
    net = models.MLP(64, 1, 8, 2, bias=False, activation=activation).to(device=dev, dtype=D)
    p = {k: v.detach().clone() for k, v in net.named_parameters()}
    W1 = p["layers.0.weight"]
    u, i, reach = inv.isolated_kink(X, W1)               # only sample i crosses for |delta| < reach
    W1[u] -= ((X[i] @ W1[u]) / X[i].pow(2).sum()) * X[i]  # now z_u(x_i) = 0 up to round-off
    e = torch.zeros_like(W1)
    e[u] = X[i] / X[i].norm()

    def grad_at(shift):
        q = {k: v.clone().requires_grad_(True) for k, v in p.items()}
        q["layers.0.weight"] = (p["layers.0.weight"] + shift * e).requires_grad_(True)
        risk = torch.func.functional_call(net, q, (X,)).squeeze(-1)
        value = torch.nn.functional.softplus(-y * risk).mean()
        return torch.cat([g.flatten() for g in torch.autograd.grad(value, list(q.values()))])

    deltas = np.logspace(-4, -7, 7)
    return deltas, np.array([float((grad_at(d) - grad_at(-d)).norm()) / (2 * d) for d in deltas]), reach


kink = {act: kink_quotients(act) for act in ("relu", "linear")}
kink_slope = {act: float(np.polyfit(np.log(d), np.log(q), 1)[0]) for act, (d, q, _) in kink.items()}
for act, (d, q, reach) in kink.items():
    print(f"{act:6s} q(delta) for delta = 1e-4 ... 1e-7: {np.array2string(q, precision=3)}; "
          f"log-log slope {kink_slope[act]:.2f} (no other sample crosses below delta = {reach:.1e})")
glue("cq-kink-relu", f"{kink_slope['relu']:.2f}", display=False)
glue("cq-kink-linear", f"{kink_slope['linear']:.2f}", display=False)
ledger.below("appF-kink-relu", "App. F (86)", "ReLU: the gradient's Lipschitz quotient across a "
             "kink grows like 1/delta (log-log slope), so no finite beta exists on a ball that "
             "contains the kink", "beta-smooth risk", kink_slope["relu"], -0.9, fmt=".2f",
             items="appF-stepsize", bearing="qualifies")
ledger.between("appF-kink-linear", "App. F (86)", "negative control: for the linear twin the "
               "same quotient stays bounded (slope)", "beta-smooth risk", kink_slope["linear"],
               -0.1, 0.1, fmt=".2f", items="appF-stepsize", bearing="control")

# %% [markdown]
# The quotient has slope {glue:text}`cq-kink-relu` for the ReLU network and
# {glue:text}`cq-kink-linear` for its linear twin. So for ReLU networks $\beta(\tau)$ is infinite
# on every ball that contains a kink, and the rule $\eta=\min(1,1/\beta)$ gives no step at all:
# the bound of Eqs. (88)-(90) holds only for smooth risks (linear networks, or smooth
# activations, which are outside the paper's positively homogeneous setting). The exact
# bookkeeping above does not need it: it subtracts the actual slack of every step.
#
# ## The pairwise invariance (Eq. 5) and the off-diagonal of Theorem 1
#
# ```{prf:proposition} Drift of the off-diagonal entries
# :label: inv-cq-prop-pair
# :nonumber:
# Let $u\neq v$ be two hidden units with the same in- and out-neighbours, $M_{uv}=
# \sum_b w_{ub}w_{vb}-\sum_a w_{au}w_{av}$ the $(u,v)$ entry of
# $M=W_2^\top W_2-W_1W_1^\top$ (Eq. 6; it is minus the left side of Eq. 5), and for sample $i$ let
# $z_u^{(i)}$ be the pre-activation of $u$ and $e_u^{(i)}$ the derivative of
# $\frac1n\ell(y_i\nu(x_i))$ with respect to the output of $u$. Along gradient flow with ReLU,
#
# $$\frac{d}{dt}M_{uv}=-\sum_{i=1}^n\big(\mathbb 1[z_v^{(i)}>0]-\mathbb 1[z_u^{(i)}>0]\big)
#   \big(e_u^{(i)}z_v^{(i)}-e_v^{(i)}z_u^{(i)}\big).$$
#
# It vanishes if $u$ and $v$ have the same activation pattern on every sample (in particular if
# all units are active on all samples, or for linear activations, where the bracket becomes
# $e_u z_v-e_vz_u+e_vz_u-e_uz_v=0$), and not otherwise.
# ```
#
# ```{prf:proof}
# $\dot M=-(G_2^\top W_2+W_2^\top G_2-G_1W_1^\top-W_1G_1^\top)$ with $G_l=\nabla_{W_l}\mathcal R$.
# Per sample, $(W_2^\top G_2)_{uv}=e_u\sigma(z_v)$ and $(W_1G_1^\top)_{uv}=z_u\,e_v\sigma'(z_v)$,
# so $\dot M_{uv}=-\sum_i\big[e_u(\sigma(z_v)-\sigma'(z_u)z_v)+e_v(\sigma(z_u)-\sigma'(z_v)z_u)
# \big]$, and $\sigma(z)=\mathbb 1[z>0]\,z$ for ReLU. On the diagonal $u=v$ each bracket is
# Euler's $\sigma(z)-\sigma'(z)z=0$; off the diagonal it is not.
# Assumption 1 fixes the signs of the weights, not the activation patterns
# of the units, so it does not make the sum vanish. The paper's proof of Eq. (5) double-counts
# "jagged" paths (input to $u$, then $v$ to output) with the coefficients $[\nabla\mu]_p$ of the
# real paths; those coefficients are activation indicators of the samples, so the two counts agree
# only when $u$ and $v$ share their activation patterns.
# ```
#
# The test uses two-layer networks ($64\to m\to1$, bias-free, logistic loss) and the same
# fixed-time step-size sweep, in four settings:
#
# 1. **ReLU, default initialisation**: weights change sign during the run (Assumption 1 fails).
# 2. **ReLU, sign-stable**: every weight is pushed away from zero, $w\mapsto\operatorname{sgn}(w)
#    (|w|+f\,b_l)$ with $b_l=1/\sqrt{\text{fan-in}}$ the bound of PyTorch's default initialisation
#    and $f$ = `sign_floor`; we check that *no weight changes sign* during the run, so the run lies
#    in a stable sign regime where Lemma 3 claims Eq. (5).
# 3. **ReLU, all units active**: the first layer is made positive, $W_1\mapsto|W_1|+$
#    `active_offset`; the pixels are non-negative, so every pre-activation is positive at
#    initialisation; we check that no activation changes during the run. The network is then linear
#    on the data, and all units share one activation pattern.
# 4. **Linear** activations, default initialisation.
#
# We measure the off-diagonal entries of $M$ after subtracting the Appendix F terms
# $\eta^2(G_2^\top G_2-G_1G_1^\top)$: what remains is the accumulated first-order term, i.e.
# the gradient-flow drift. If Eq. (5) held, this would be round-off; if it fails, it converges to
# a non-zero limit as $\eta\to0$. Thresholds fixed before the runs: a drift that vanished like
# the GD slack would shrink by the step ratio between the largest and smallest $\eta$ (here
# a factor 16 in profile ci); "does not vanish" means the ratio smallest/largest stays above
# $0.5$, and the drift is above $10^{-3}$ relative.

# %%
m = P["pair_width"]
pair_etas = torch.tensor(P["pair_etas"], dtype=D, device=dev)
pair_stops = (P["pair_T"] / pair_etas).round().long()
offdiag = ~torch.eye(m, dtype=torch.bool)


def two_layer(kind):
    net = models.MLP(64, 1, m, 2, bias=False, activation="linear" if kind == "linear" else "relu")
    with torch.no_grad():
        if kind == "sign-stable":
            inv.push_from_zero_(net, P["sign_floor"])
        if kind == "all active":
            net.layers[0].weight.abs_().add_(P["active_offset"])
    return net


def patterns(p):
    return vmap(lambda q: inv.mlp_preactivations(q, X, 2)[0])(p) > 0


KINDS = ["ReLU, default init", "sign-stable", "all active", "linear"]
pairs = {}
for kind in KINDS:
    ens = Ensemble.from_models([fresh(lambda: two_layer(kind), 7) for _ in range(len(pair_etas))])
    start = patterns(ens.params)
    tr = inv.train_tracked(ens, X, y, loss="logistic", steps=int(pair_stops.max()), lr=pair_etas,
                           stop_after=pair_stops, record_every=int(pair_stops.max()),
                           matrices=True,
                           monitors={"act": patterns, "sign": lambda p: inv.weight_signs(p, 1) > 0})
    groups = inv.neuron_groups(ens.template)
    scale = inv.neuron_scales(ens.params, groups, 1).cpu()
    Mc, Mr = tr.matrix_drift("hidden 1", True)[-1], tr.matrix_drift("hidden 1", False)[-1]
    pairs[kind] = dict(
        corr=(Mc[:, offdiag].abs().amax(-1) / scale).numpy(),
        raw=(Mr[:, offdiag].abs().amax(-1) / scale).numpy(),
        diag=(torch.diagonal(Mc, dim1=-2, dim2=-1).abs().amax(-1) / scale).numpy(),
        sign_flips=int(tr.flips["sign"].sum()), act_flips=int(tr.flips["act"].sum()),
        all_active_start=bool(start.all()),
        differing=int((start[0][:, :, None] != start[0][:, None, :]).any(0)[offdiag].sum()) // 2,
        loss=tr.loss[:, -1].numpy())
    r = pairs[kind]
    print(f"{kind:20s} weight sign changes {r['sign_flips']:4d}, activation changes "
          f"{r['act_flips']:5d}, pairs with different patterns at t=0: {r['differing']}/"
          f"{m * (m - 1) // 2}, loss at T {r['loss'][-1]:.3f}")
    print(f"{'':20s} off-diagonal corrected {np.array2string(r['corr'], precision=2)}, "
          f"diagonal corrected max {r['diag'].max():.0e}")

# %% [markdown]
# The formula of {prf:ref}`the drift proposition <inv-cq-prop-pair>` is checked against autograd at the initialisation of
# the first setting: the library's first-order term
# $G_2^\top W_2+W_2^\top G_2-G_1W_1^\top-W_1G_1^\top$ equals minus the right side, entry by entry.

# %%
net = fresh(lambda: two_layer("ReLU, default init"), 7)
p = {k: v.detach() for k, v in net.named_parameters()}
g = inv.param_grads(net, X, y, loss="logistic")
(grp,) = inv.neuron_groups(net)
F_autograd = inv.matrix_first_order_terms(p, g, [grp])[grp.name]
z = X @ p["layers.0.weight"].T
a = torch.relu(z).requires_grad_(True)
risk = torch.nn.functional.softplus(-y * (a @ p["layers.1.weight"].T).squeeze(-1)).mean()
(e,) = torch.autograd.grad(risk, a)
act = (z > 0).to(D)
# the proposition: dM_uv/dt = -F_uv with F_uv = sum_i (1_v - 1_u)(e_u z_v - e_v z_u)
F_formula = torch.einsum("iuv,iuv->uv", act[:, None, :] - act[:, :, None],
                         e[:, :, None] * z[:, None, :] - e[:, None, :] * z[:, :, None])
rate_err = float((F_autograd - F_formula).abs().max() / F_autograd.abs().max())
rate_off = float(F_autograd[offdiag].abs().max() / F_autograd.abs().max())
print(f"max |F_autograd - F_formula| / max |F| = {rate_err:.1e}; largest off-diagonal rate "
      f"{rate_off:.2f} of the largest entry")
glue("cq-c-rate-err", f"{rate_err:.0e}", display=False)
ledger.below("eq5-rate-formula", "Lemma 3 (5), derived", "validation of the derived rate: "
             "the off-diagonal drift rate equals -sum_i (1_v - 1_u)(e_u z_v - e_v z_u) (autograd)",
             "0 (Eq. 5)", rate_err, 1e-12, fmt=".1e", items="lemma3-eq5", bearing="control")

# %%
ratio = lambda v: float(v[-1] / v[0])
pl = np.log(pair_etas.cpu().numpy())
lin_raw_slope = float(np.polyfit(pl, np.log(pairs["linear"]["raw"]), 1)[0])
R, S, A, L = (pairs[k] for k in KINDS)
glue("cq-c-relu", f"{R['corr'][-1]:.2f}", display=False)
glue("cq-c-relu-ratio", f"{ratio(R['corr']):.2f}", display=False)
glue("cq-c-sign", f"{S['corr'][-1]:.3f}", display=False)
glue("cq-c-sign-ratio", f"{ratio(S['corr']):.2f}", display=False)
glue("cq-c-sign-diff", f"{S['differing']}", display=False)
glue("cq-c-npairs", f"{m * (m - 1) // 2}", display=False)
glue("cq-c-active", f"{A['corr'].max():.0e}", display=False)
glue("cq-c-linear", f"{L['corr'].max():.0e}", display=False)
glue("cq-c-linear-slope", f"{lin_raw_slope:.2f}", display=False)
glue("cq-c-diag", f"{max(r['diag'].max() for r in pairs.values()):.0e}", display=False)
ledger.above("eq5-relu-default", "Lemma 3 (5), Thm 1 (1)", "ReLU: off-diagonal of M drifts "
             "(corrected, smallest eta, relative)", "conserved", R["corr"][-1], 1e-3, fmt=".2f",
             items=["lemma3-eq5", "thm1-p1"], bearing="contradicts")
ledger.holds("eq5-sign-stable-regime", "Assumption 1", "setup check: in the sign-stable "
             "construction no weight changes sign during the run", "(setup check)",
             f"{S['sign_flips']} sign changes", S["sign_flips"] == 0, items="asm1",
             bearing="control")
ledger.above("eq5-sign-stable-drift", "Lemma 3 (5), Thm 1 (1), App. F (81-85)", "inside a stable "
             "sign regime the off-diagonal still drifts (corrected, smallest eta, relative)",
             "conserved", S["corr"][-1], 1e-3, fmt=".3f",
             items=["lemma3-eq5", "thm1-p1", "appF-pair"], bearing="contradicts")
ledger.above("eq5-sign-stable-gf-limit", "Lemma 3 (5), Thm 1 (1)", "that drift does not vanish "
             "as eta -> 0 (ratio smallest/largest eta)", "conserved", ratio(S["corr"]), 0.5,
             fmt=".2f", items=["lemma3-eq5", "thm1-p1"], bearing="contradicts")
ledger.holds("eq5-all-active-regime", "Prop. (pair drift)", "setup check: all units active on "
             "all samples at t=0 and no activation change during the run", "(setup check)",
             f"{A['act_flips']} changes", A["all_active_start"] and A["act_flips"] == 0,
             items="lemma3-eq5", bearing="control")
ledger.below("eq5-all-active", "Lemma 3 (5), Prop. (pair drift)", "shared activation patterns: "
             "off-diagonal conserved after the App. F correction", "conserved", A["corr"].max(),
             TOL, fmt=".1e", items="lemma3-eq5", bearing="qualifies")
ledger.below("eq5-linear", "Lemma 3 (5), Thm 1 (1), App. F (81-85)", "linear network: "
             "off-diagonal conserved after the App. F correction", "conserved", L["corr"].max(),
             TOL, fmt=".1e", items=["lemma3-eq5", "thm1-p1", "appF-pair"], bearing="qualifies")
ledger.between("eq5-linear-raw-slope", "App. F", "setup check: linear network's raw off-diagonal "
               "drift at fixed T is O(eta) (log-log slope)", "O(eta)", lin_raw_slope, 0.8, 1.2,
               fmt=".2f", items="appF-pair", bearing="control")

# %%
fig, axes = plotting.subplots(2, height=2.9, sharey=True)
pe = pair_etas.cpu().numpy()
for i, kind in enumerate(KINDS):
    r = pairs[kind]
    axes[0].loglog(pe, np.maximum(r["corr"], 1e-18), "o-", color=plotting.color(i), label=kind)
    axes[1].loglog(pe, np.maximum(r["raw"], 1e-18), "o-", color=plotting.color(i))
axes[0].loglog(pe, np.maximum(np.max([r["diag"] for r in pairs.values()], 0), 1e-18), "k:",
               label="diagonal (all four)")
for ax in axes:
    ax.axhline(TOL, color="grey", lw=0.8)
    ax.set_xlabel(r"step size $\eta$")
axes[0].set_ylabel(r"$\max_{u\neq v}|\Delta M_{uv}|$ (relative)")
axes[0].set_title("minus App. F terms (gradient-flow drift)")
axes[1].set_title("raw GD")
axes[0].legend(loc="center right", fontsize=7)
glue("cq-fig-pairs", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} cq-fig-pairs
# :name: fig-inv-cq-pairs
# Off-diagonal entries of $M=W_2^\top W_2-W_1W_1^\top$ after a fixed gradient-flow time, against
# the step size, for two-layer networks. Left: after subtracting the Appendix F terms, the
# linear network and the ReLU network whose units are all active stay at round-off (grey line:
# $10^{-9}$), as does the diagonal in every setting; the two other ReLU networks, including the
# one in which no weight changes sign, keep a drift that does not shrink with $\eta$: the
# gradient flow itself moves $M_{uv}$. Right: raw GD drift; for the linear network it is the
# $O(\eta)$ slack.
# ```
#
# **Verdict.** Eq. (5) of Lemma 3, and with it the off-diagonal part of Theorem 1 and the pair
# form of Lemma 8, is false for ReLU networks. In the sign-stable run no weight changed sign,
# so Assumption 1 holds, yet the off-diagonal entries moved by
# {glue:text}`cq-c-sign` (relative) at the smallest step, {glue:text}`cq-c-sign-ratio` times
# their drift at the largest step; {glue:text}`cq-c-sign-diff` of the {glue:text}`cq-c-npairs`
# pairs of units had different activation patterns. With the default initialisation the drift
# is {glue:text}`cq-c-relu`. When all units share one pattern (all active) the drift is
# {glue:text}`cq-c-active`, and for the linear network {glue:text}`cq-c-linear`, whose raw drift
# has slope {glue:text}`cq-c-linear-slope` in $\eta$; the diagonal (Eq. 4) is at most
# {glue:text}`cq-c-diag` everywhere. The derived rate matches autograd to
# {glue:text}`cq-c-rate-err`. What survives for ReLU networks is Eq. (4), Lemma 8 per channel,
# Lemma 4, and the diagonal of Eq. (6); the full matrix identity, and with it the equality of the
# singular values of adjacent layers that the paper's rank-one conclusions use, holds only while
# the units of a layer share their activation patterns, e.g. in linear networks. See the
# erratum "the pairwise invariance (Lemma 3, Eq. 5) fails for ReLU networks" on
# {doc}`/book/errata`.
#
# ## How often the refutation shows
#
# The runs above are single networks. The same test, at two step sizes and a fixed
# gradient-flow time $T=$ {glue:text}`cq-r-T`, is now repeated on
# {glue:text}`cq-r-members` networks per setting, each from its own random initialisation, in
# one batched run per setting:
#
# 1. **ReLU** on the digits pair (default initialisation);
# 2. **leaky ReLU** with slope {glue:text}`cq-r-slope` (positively homogeneous, so inside the
#    paper's scope);
# 3. ReLU on a **second data set**: Gaussian points in dimension {glue:text}`cq-r-gauss-d`,
#    separable by a random hyperplane through the origin (`data.separable`);
# 4. **frozen activation patterns**: the width-2 network of {doc}`03_alignment_low_rank_limit`
#    on its two planar clusters, each neuron active on one cluster only; we check that no weight
#    changes sign *and no activation changes* during the run, so the patterns are frozen but
#    differ between the two units;
# 5. the **linear** networks of setting 1, the control: here Eq. (5) holds.
#
# A run "shows the refutation" when its corrected off-diagonal drift at the smaller step is
# above $10^{-3}$ (relative) and at least half its value at the larger step (it does not vanish
# as $\eta\to0$), the two thresholds of the previous section. Finally, a **longer run**: the
# networks of setting 1 trained to $T=$ {glue:text}`cq-r-long-T`; if the drift were a transient
# of the first steps it would stop growing.

# %%
R_M = P["robust_members"]
r_etas = torch.tensor(P["robust_etas"], dtype=D, device=dev)
r_lr = r_etas.repeat_interleave(R_M)                     # members: all seeds at eta_0, then eta_1...
r_stops = (P["robust_T"] / r_lr).round().long()
Xg, yg = data.separable(*P["gauss"], margin=0.2, seed=seed, dtype=D)
Xg, yg = (Xg / Xg.norm(dim=1).max()).to(dev), yg.to(dev)
Xc, yc = margins.two_clusters(20, p=(1.0, 0.3), q=(-0.8, 0.75), noise=0.05, seed=seed)
Xc, yc = Xc.to(dev), yc.to(dev)


def random_pair_net(d, activation, k):
    torch.manual_seed(1000 * seed + 500 + k)
    return models.MLP(d, 1, m, 2, bias=False, activation=activation,
                      negative_slope=P["leaky_slope"]).to(device=dev, dtype=D)


def pair_drift_runs(make, Xr, yr):
    """Corrected off-diagonal drift (relative) of R_M networks at every step size of the sweep,
    with the activation and weight-sign changes of each run."""
    ens = Ensemble.from_models([make(k) for _ in P["robust_etas"] for k in range(R_M)])
    pats = lambda p: vmap(lambda q: inv.mlp_preactivations(q, Xr, 2)[0])(p) > 0
    tr = inv.train_tracked(ens, Xr, yr, loss="logistic", steps=int(r_stops.max()), lr=r_lr,
                           stop_after=r_stops, record_every=int(r_stops.max()), matrices=True,
                           monitors={"act": pats, "sign": lambda p: inv.weight_signs(p, 1) > 0})
    (grp,) = inv.neuron_groups(ens.template)
    off = ~torch.eye(grp.units, dtype=torch.bool)
    drift = (tr.matrix_drift(grp.name)[-1][:, off].abs().amax(-1)
             / inv.neuron_scales(ens.params, [grp], 1).cpu()).reshape(len(P["robust_etas"]), R_M)
    per = lambda t: t.reshape(len(P["robust_etas"]), R_M, -1).sum(-1)[-1]
    return dict(drift=drift[-1].numpy(), ratio=(drift[-1] / drift[0]).numpy(),
                act=per(tr.flips["act"]).numpy(), sign=per(tr.flips["sign"]).numpy())


SETTINGS = {
    "ReLU, digits": (lambda k: random_pair_net(64, "relu", k), X, y),
    "leaky ReLU, digits": (lambda k: random_pair_net(64, "leaky", k), X, y),
    "ReLU, Gaussian data": (lambda k: random_pair_net(Xg.shape[1], "relu", k), Xg, yg),
    "ReLU, frozen patterns": (lambda k: margins.width2_designed("relu", 1000 * seed + k)
                              .to(device=dev), Xc, yc),
    "linear, digits (control)": (lambda k: random_pair_net(64, "linear", k), X, y),
}
robust = {name: pair_drift_runs(*args) for name, args in SETTINGS.items()}
shows = {name: (r["drift"] > 1e-3) & (r["ratio"] > 0.5) for name, r in robust.items()}
for name, r in robust.items():
    print(f"{name:26s} refutation shows in {int(shows[name].sum())}/{R_M} runs; drift "
          f"{r['drift'].min():.1e}-{r['drift'].max():.1e}, ratio small/large eta "
          f"{r['ratio'].min():.2f}-{r['ratio'].max():.2f}; sign changes {int(r['sign'].sum())}, "
          f"activation changes {int(r['act'].sum())}")

# the longer run: setting 1 at one step size, recorded every robust_T of gradient-flow time
long_steps = int(round(P["robust_long_T"] / P["robust_long_eta"]))
ens = Ensemble.from_models([random_pair_net(64, "relu", k) for k in range(R_M)])
tr_long = inv.train_tracked(ens, X, y, loss="logistic", steps=long_steps, lr=P["robust_long_eta"],
                            record_every=int(round(P["robust_T"] / P["robust_long_eta"])),
                            matrices=True)
(grp,) = inv.neuron_groups(ens.template)
off = ~torch.eye(m, dtype=torch.bool)
long_drift = (tr_long.matrix_drift(grp.name)[:, :, off].abs().amax(-1)
              / inv.neuron_scales(ens.params, [grp], 1).cpu()).numpy()   # (records, members)
long_t = tr_long.time[:, 0].numpy()
long_growth = float((long_drift[-1] / long_drift[1]).min())
print(f"longer run to T={P['robust_long_T']:g}: drift at T={long_t[1]:g} "
      f"{long_drift[1].min():.3f}-{long_drift[1].max():.3f}, at the end "
      f"{long_drift[-1].min():.3f}-{long_drift[-1].max():.3f} (smallest growth x{long_growth:.1f}); "
      f"final loss {tr_long.loss[:, -1].min():.3f}-{tr_long.loss[:, -1].max():.3f}")

frozen = robust["ReLU, frozen patterns"]
glue("cq-r-T", f"{P['robust_T']:g}", display=False)
glue("cq-r-members", f"{R_M}", display=False)
glue("cq-r-slope", f"{P['leaky_slope']:g}", display=False)
glue("cq-r-gauss-d", f"{P['gauss'][1]}", display=False)
glue("cq-r-long-T", f"{P['robust_long_T']:g}", display=False)
glue("cq-r-long-growth", f"{long_growth:.1f}", display=False)
for key, name in [("relu", "ReLU, digits"), ("leaky", "leaky ReLU, digits"),
                  ("gauss", "ReLU, Gaussian data"), ("frozen", "ReLU, frozen patterns"),
                  ("linear", "linear, digits (control)")]:
    glue(f"cq-r-{key}", f"{int(shows[name].sum())}/{R_M}", display=False)
count = lambda name: f"{int(shows[name].sum())}/{R_M} runs"
for cid, name, what in [("eq5-robust-relu", "ReLU, digits", "random initialisations (ReLU)"),
                        ("eq5-robust-leaky", "leaky ReLU, digits", "leaky ReLU"),
                        ("eq5-robust-gaussian", "ReLU, Gaussian data", "a second data set")]:
    ledger.holds(cid, "Lemma 3 (5), Thm 1 (1)", f"{what}: the off-diagonal drift shows (> 1e-3 "
                 "relative, ratio small/large eta > 0.5) in every run", "conserved",
                 count(name), bool(shows[name].all()), "all runs",
                 items=["lemma3-eq5", "thm1-p1"], bearing="contradicts")
ledger.holds("eq5-frozen-regime", "Assumptions 1, frozen patterns", "setup check: no weight sign "
             "and no activation changes in the width-2 runs (patterns frozen, different per unit)",
             "(setup check)", f"{int(frozen['sign'].sum())} / {int(frozen['act'].sum())} changes",
             int(frozen["sign"].sum()) == 0 and int(frozen["act"].sum()) == 0, "0 / 0",
             items="asm1", bearing="control")
ledger.holds("eq5-frozen", "Lemma 3 (5)", "frozen but different activation patterns: the "
             "off-diagonal drift shows in every run", "conserved", count("ReLU, frozen patterns"),
             bool(shows["ReLU, frozen patterns"].all()), "all runs", items="lemma3-eq5",
             bearing="contradicts")
ledger.holds("eq5-robust-linear", "Lemma 3 (5)", "negative control: the same test shows no drift "
             "in any linear run", "conserved", count("linear, digits (control)"),
             not bool(shows["linear, digits (control)"].any()), "no run", items="lemma3-eq5",
             bearing="control")
ledger.above("eq5-longer", "Lemma 3 (5)", f"longer runs: the drift keeps growing (smallest ratio "
             f"of the drift at T={P['robust_long_T']:g} to the drift at T={P['robust_T']:g})",
             "conserved", long_growth, 1.0, fmt=".1f", items="lemma3-eq5", bearing="contradicts")

# %%
fig, axes = plotting.subplots(2, height=2.9)
ax = axes[0]
for i, (name, r) in enumerate(robust.items()):
    jitter = i + 0.08 * (np.arange(R_M) - R_M / 2) / R_M
    ax.scatter(jitter, np.maximum(r["drift"], 1e-18), s=14, color=plotting.color(i))
ax.axhline(1e-3, color="k", ls="--", lw=0.8)
ax.axhline(TOL, color="grey", lw=0.8)
ax.set_yscale("log")
ax.set_xticks(range(len(robust)))
ax.set_xticklabels([n.replace(", ", "\n") for n in robust], fontsize=7)
ax.set_ylabel(r"corrected $\max_{u\neq v}|\Delta M_{uv}|$ (relative)")
ax.set_title(f"T = {P['robust_T']:g}, smaller step", fontsize=9)
ax = axes[1]
ax.plot(long_t, long_drift, color=plotting.color(0), lw=0.9)
ax.set_xlabel(r"gradient-flow time $\eta t$")
ax.set_ylabel("corrected off-diagonal drift")
ax.set_title("ReLU, digits: a longer run", fontsize=9)
glue("cq-fig-robust", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} cq-fig-robust
# :name: fig-inv-cq-robust
# Left: the corrected off-diagonal drift of every run of the five settings (dashed: the
# threshold $10^{-3}$; grey: the round-off band $10^{-9}$). Right: the drift of the ReLU
# networks of setting 1 along a run ten times longer: it keeps growing.
# ```
#
# The refutation shows in {glue:text}`cq-r-relu` ReLU runs, {glue:text}`cq-r-leaky` leaky-ReLU
# runs, {glue:text}`cq-r-gauss` runs on the Gaussian data and {glue:text}`cq-r-frozen` runs
# with frozen activation patterns, and in {glue:text}`cq-r-linear` linear runs. Over the longer
# run the drift grows at least {glue:text}`cq-r-long-growth`-fold. The frozen-pattern runs
# isolate the cause: no weight changes sign and no sample crosses a kink, yet the off-diagonal
# moves, exactly as the drift formula says it must when two units are active on different
# samples. The counts on other seeds are on the {doc}`robustness page </book/robustness>`.
#
# ## Theorem 1, point by point
#
# Points 2-7 of Theorem 1 pair convolutions, residual blocks and dense layers. Two bias-free
# networks of the library's `MixedNet` hold every pair (3x3 convolutions without pooling, so
# that their linear versions are linear):
#
# - A: convolution, convolution, ResNetFree block, ResNetFree block, dense layer, output;
# - B: convolution, dense layer, ResNetFree block, output.
#
# Each group of units shared by two adjacent layers gives one matrix
# $M=W_2^\top W_2-W_1W_1^\top$ in the flattening of its point: output-channel and input-channel
# flattenings for convolution pairs (point 2), the channel's $s^2$ columns of the next dense
# layer (point 5) or of $[Y;Z]$ (point 6), $Y$ and $U$ inside a block (point 3), $[U_1\ Z_1]$ and
# $\left[\begin{smallmatrix}Y_2\\ Z_2\end{smallmatrix}\right]$ between blocks (point 4), and the
# block-dense pairs in both orders (point 7). (Point 6 as printed pairs the convolution with
# $[U\ Z]$; the block's weights that read the convolution's channels are those of $Y$ and $Z$,
# which is what the proof's "fully connected from $V_1$ to $V_2\cup V_3$" describes, so $W_2$ is
# the rearrangement of $\left[\begin{smallmatrix}Y\\ Z\end{smallmatrix}\right]$.) Both networks
# are trained, ReLU and linear, from the same initialisation to $T=$ {glue:text}`cq-t1-T` at two
# step sizes; the drift of every group is corrected by its Appendix F terms.

# %%
def mixed_runs(stages, activation):
    """Corrected drifts of every unit group of a MixedNet: {group: (point, off-diagonal drift
    at each eta, largest diagonal drift)}."""
    def make():
        torch.manual_seed(1000 * seed + 800)
        return inv.MixedNet(1, 8, stages, activation=activation).to(device=dev, dtype=D)

    etas_m = torch.tensor(P["robust_etas"], dtype=D, device=dev)
    stops_m = (P["mixed_T"] / etas_m).round().long()
    ens = Ensemble.from_models([make() for _ in etas_m])
    tr = inv.train_tracked(ens, X_img, y, loss="logistic", steps=int(stops_m.max()), lr=etas_m,
                           stop_after=stops_m, record_every=int(stops_m.max()), matrices=True,
                           cuts=[])
    groups = inv.neuron_groups(ens.template)
    scale = inv.neuron_scales(ens.params, groups, 1).cpu()
    out = {}
    for g in groups:
        d = tr.matrix_drift(g.name)[-1]
        off = ~torch.eye(g.units, dtype=torch.bool)
        out[g.name] = (g.point, (d[:, off].abs().amax(-1) / scale).numpy(),
                       float((torch.diagonal(d, dim1=-2, dim2=-1).abs().amax(-1) / scale).max()))
    return out


mixed = {(net_name, act): mixed_runs(P[f"mixed_{net_name.lower()}"], act)
         for net_name in ("A", "B") for act in ("relu", "linear")}
rows_t1 = []
for net_name in ("A", "B"):
    for gname, (point, d_relu, diag_relu) in mixed[(net_name, "relu")].items():
        _, d_lin, diag_lin = mixed[(net_name, "linear")][gname]
        rows_t1.append(dict(net=net_name, group=gname, point=point, relu=d_relu[-1],
                            ratio=d_relu[-1] / d_relu[0], linear=d_lin.max(),
                            diag=max(diag_relu, diag_lin)))
        print(f"point {point}  net {net_name}  {gname:20s} ReLU off-diagonal {d_relu[-1]:.1e} "
              f"(ratio small/large eta {d_relu[-1] / d_relu[0]:.2f}), linear {d_lin.max():.0e}, "
              f"diagonal (both) {max(diag_relu, diag_lin):.0e}")
for point in range(1, 8):
    sel = [r for r in rows_t1 if r["point"] == point]
    drift_min = min(r["relu"] for r in sel)
    ratio_min = min(r["ratio"] for r in sel)
    ledger.holds(f"thm1-p{point}-relu", f"Thm 1 ({point})", f"ReLU: the off-diagonal of every "
                 f"point-{point} pair drifts (> 1e-6 relative, ratio small/large eta > 0.5; "
                 f"{len(sel)} pair(s))", "conserved", f"{drift_min:.1e}, {ratio_min:.2f}",
                 drift_min > 1e-6 and ratio_min > 0.5, "> 1e-6, > 0.5", items=f"thm1-p{point}",
                 bearing="contradicts")
t1_lin = max(r["linear"] for r in rows_t1)
t1_diag = max(r["diag"] for r in rows_t1)
t1_relu_min = min(r["relu"] for r in rows_t1)
ledger.below("thm1-linear", "Thm 1 (1-7)", "linear networks: every pair's full matrix is "
             "conserved after the App. F correction (relative)", "conserved", t1_lin, TOL,
             fmt=".1e", items=[f"thm1-p{k}" for k in range(1, 8)], bearing="qualifies")
ledger.below("thm1-diagonal-relu", "Thm 1 (1-7), Lemma 3 (4)", "ReLU networks: the diagonal of "
             "every pair's matrix is conserved (relative)", "conserved", t1_diag, TOL, fmt=".1e",
             items=[f"thm1-p{k}" for k in range(1, 8)], bearing="qualifies")
glue("cq-t1-T", f"{P['mixed_T']:g}", display=False)
glue("cq-t1-relu-min", f"{t1_relu_min:.0e}", display=False)
glue("cq-t1-linear", f"{t1_lin:.0e}", display=False)
glue("cq-t1-diag", f"{t1_diag:.0e}", display=False)

# %%
fig, ax = plotting.subplots(1, height=3.4)
xs = np.arange(len(rows_t1))
ax.bar(xs - 0.2, [r["relu"] for r in rows_t1], 0.4, color=plotting.color(0), label="ReLU, off-diagonal")
ax.bar(xs + 0.2, [max(r["linear"], 1e-18) for r in rows_t1], 0.4, color=plotting.color(1),
       label="linear, off-diagonal")
ax.scatter(xs, [max(r["diag"], 1e-18) for r in rows_t1], color="k", s=10, zorder=3,
           label="diagonal (both)")
ax.axhline(TOL, color="grey", lw=0.8)
ax.set_yscale("log")
ax.set_xticks(xs)
ax.set_xticklabels([f"p{r['point']} ({r['net']})\n{r['group']}" for r in rows_t1], fontsize=6,
                   rotation=35, ha="right")
ax.set_ylabel("corrected drift (relative)")
ax.legend(fontsize=7, loc="center right")
glue("cq-fig-thm1", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} cq-fig-thm1
# :name: fig-inv-cq-thm1
# Every adjacent pair of the two mixed networks, labelled by its point of Theorem 1 and the
# network (A or B): the largest off-diagonal drift of $M=W_2^\top W_2-W_1W_1^\top$ after the
# Appendix F correction, for the ReLU networks (blue) and their linear versions (orange, at
# round-off), and the largest diagonal drift of either (dots). Grey line: $10^{-9}$.
# ```
#
# Every point behaves like point 1: the diagonal holds (at most {glue:text}`cq-t1-diag`), the
# linear networks conserve the whole matrix (at most {glue:text}`cq-t1-linear`), and for the
# ReLU networks every off-diagonal drifts (at least {glue:text}`cq-t1-relu-min`, and not less at
# the smaller step). The drifts are small in absolute terms at this short time, but they are
# gradient-flow drifts, six or more orders of magnitude above round-off.
#
# ## The absolute-valued pair form (Lemma 8, and what the proof of Eq. 5 computes)
#
# The paper states the weight-sharing version, Lemma 8 (Eq. 47), with absolute values: for two
# channels $k=1,2$ of a convolution,
# $\sum_{(w,w')\in w_{\mathrm{IN}}}|w(t)w'(t)|-|w(0)w'(0)|=\sum_{(z,z')\in w_{\mathrm{OUT}}}
# |z(t)z'(t)|-|z(0)z'(0)|$. The proof of Eq. (5) (its Eqs. 40-43) also differentiates
# $\operatorname{sgn}(w_{au}w_{av})\,w_{au}w_{av}=|w_{au}w_{av}|$, so what it claims conserved is
# this absolute form, $|W_2|^\top|W_2|-|W_1||W_1|^\top$ off the diagonal, and Appendix B ends by
# saying that every result holds "with the absolute signs around them". With stable signs
# $|w_{au}w_{av}|=s_a\,w_{au}w_{av}$ with fixed signs $s_a$, so the absolute form is a
# *sign-weighted* version of Eq. (5). Linear networks conserve the unweighted sum only, so the
# absolute form should fail even for them whenever the signs $s_a$ differ. Two pairs are tested,
# started in a stable sign regime (every weight pushed away from zero, as in the sign-stable
# construction above) and checked to stay there: the two units of the width-2 network (a dense
# pair) and the three channels of the first of two convolutions (Lemma 8's setting: $w_{\rm IN}$
# pairs kernel entries, $w_{\rm OUT}$ pairs the next kernel's slices, Eqs. 48-49). For these
# runs the Appendix F correction of the absolute form is exact: it is the second-order term of
# the sign-weighted products. A form "drifts" when its corrected drift is more than a thousand
# times the round-off band ($10^{-6}$ relative) and does not shrink at the smaller step (ratio
# above 0.5), the criterion used for Theorem 1's points. (A first version of this page used the
# threshold $10^{-3}$ of the two-layer tests; the ReLU convolution pair, run on 128 images,
# drifted by $8.7\cdot10^{-4}$ at a ratio of 1.09, and the criterion was aligned with the one
# of Theorem 1's points, which measures the same kind of drift.)

# %%
def abs_runs(make, Xr, yr, T):
    """Signed and absolute off-diagonal drifts (corrected, relative, at each eta) of the first
    unit group, and the sign changes of the weights around that group."""
    etas_a = torch.tensor(P["abs_etas"], dtype=D, device=dev)
    stops_a = (T / etas_a).round().long()
    ens = Ensemble.from_models([make() for _ in etas_a])
    grp = inv.neuron_groups(ens.template)[0]
    names = sorted({t.param for t in (*grp.inputs, *grp.outputs)})
    signs = lambda p: torch.cat([p[k].flatten(1) for k in names], 1) > 0
    tr = inv.train_tracked(ens, Xr, yr, loss="logistic", steps=int(stops_a.max()), lr=etas_a,
                           stop_after=stops_a, record_every=int(stops_a.max()), matrices=True,
                           absolute=True, cuts=[], groups=[grp], monitors={"sign": signs})
    off = ~torch.eye(grp.units, dtype=torch.bool)
    scale = inv.neuron_scales(ens.params, [grp], 1).cpu()
    rel = lambda d: (d[-1][:, off].abs().amax(-1) / scale).numpy()
    return dict(signed=rel(tr.matrix_drift(grp.name)), absolute=rel(tr.abs_matrix_drift(grp.name)),
                flips=int(tr.flips["sign"].sum()))


def floored(model, floor):
    return inv.push_from_zero_(model.to(device=dev, dtype=D), floor)


def conv_pair(activation):
    torch.manual_seed(1000 * seed + 900)
    return inv.MixedNet(1, 8, [("conv", 3), ("conv", 4)], activation=activation)


n_sub = min(len(y), 128)  # the convolution pair on a subset of the images (cost)
pairs_abs = {}
for act in ("relu", "linear"):
    pairs_abs[("dense pair (width 2)", act)] = abs_runs(
        lambda: floored(margins.width2_designed(act, 1000 * seed + 900), P["abs_floor"][0]),
        Xc, yc, P["abs_T"][0])
    pairs_abs[("conv channel pairs", act)] = abs_runs(
        lambda: floored(conv_pair(act), P["abs_floor"][1]), X_img[:n_sub], y[:n_sub],
        P["abs_T"][1])
for (name, act), r in pairs_abs.items():
    print(f"{name:22s} {act:6s} signed {r['signed'][-1]:.1e}, absolute {r['absolute'][-1]:.1e} "
          f"(ratio small/large eta {r['absolute'][-1] / r['absolute'][0]:.2f}), sign changes "
          f"{r['flips']}")
abs_flips = sum(r["flips"] for r in pairs_abs.values())
abs_min = {act: min(r["absolute"][-1] for (n, a), r in pairs_abs.items() if a == act)
           for act in ("relu", "linear")}
abs_ratio = {act: min(r["absolute"][-1] / r["absolute"][0] for (n, a), r in pairs_abs.items()
                      if a == act) for act in ("relu", "linear")}
ledger.holds("pair-abs-regime", "Assumption 1", "setup check: no weight around the tested pairs "
             "changes sign in the four runs", "(setup check)", f"{abs_flips} changes",
             abs_flips == 0, "0", items="asm1", bearing="control")
for act in ("linear", "relu"):
    ledger.holds(f"pair-abs-{act}", "Lemma 8 (47), App. C (40-43)", f"{act}: the absolute-valued "
                 "pair form drifts for the dense and the convolution pairs (> 1e-6 relative, "
                 "ratio small/large eta > 0.5)", "conserved",
                 f"{abs_min[act]:.1e}, {abs_ratio[act]:.2f}",
                 abs_min[act] > 1e3 * TOL and abs_ratio[act] > 0.5, "> 1e-6, > 0.5",
                 items=["pair-abs", "lemma8"], bearing="contradicts")
glue("cq-abs-linear", f"{abs_min['linear']:.1e}", display=False)
glue("cq-abs-relu", f"{abs_min['relu']:.1e}", display=False)
glue("cq-abs-signed-linear", f"{max(r['signed'].max() for (n, a), r in pairs_abs.items() if a == 'linear'):.0e}",
     display=False)

# %% [markdown]
# No weight around the tested pairs changes sign, so the absolute form is differentiable along
# every run. It drifts by at least {glue:text}`cq-abs-linear` (relative) in the *linear*
# networks, whose signed form stays at {glue:text}`cq-abs-signed-linear`, and by at least
# {glue:text}`cq-abs-relu` in the ReLU networks, without shrinking at the smaller step. So
# Lemma 8 as stated (Eq. 47) is false for both activations, and the quantity the proof of
# Eq. (5) differentiates is not conserved even in the linear case; the signed form, Eq. (5), holds
# for linear networks and fails for ReLU networks. The errata page lists the correction.
#
# ## Conclusion
#
# Everything in the paper that follows from the *per-unit* rescaling symmetry holds, exactly,
# for every bias-free positively homogeneous network we tried (MLP, CNN with max-pool,
# residual blocks with learnable skips), with or without sign changes: Eq. (4), Lemma 8 per
# channel and Lemma 4 for input-output cuts, plus the $\eta^2$ correction of Appendix F for
# gradient descent (whose Eqs. 80 and 85 should read $\mathrm{OUT}_v$ for $\mathrm{IN}_v$).
# Units touching a fixed identity skip are outside the lemma and do drift. What does not hold
# for ReLU networks is the *pairwise* identity, Eq. (5), and therefore the off-diagonal of
# every point of Theorem 1 and Appendix F's Eqs. (81)-(85): the gradient flow itself moves it
# whenever two units differ in their activation pattern on some sample, in every run we tried.
# The absolute-valued form of Lemma 8 fails even for linear networks. The
# next pages follow the consequences: {doc}`03_alignment_low_rank_limit` for the rank-one
# limit of Corollary 1, {doc}`04_reduced_alignment` for Theorem 2.
#
# ## Claims

# %% tags=["nbval-check-output"]
ledger.report()
