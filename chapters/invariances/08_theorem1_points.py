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
# # Theorem 1 point by point, and the absolute-valued pair form
#
# {doc}`06_pairwise_invariance` shows that the pairwise invariance of Lemma 3, Eq. (5), the
# off-diagonal of the matrix invariance $W_2^\top W_2-W_1W_1^\top=\text{const}$, fails for
# two-layer ReLU networks in the stable sign regime. Theorem 1 of {cite:t}`le2022training`
# states the matrix invariance for seven kinds of adjacent layers: dense, convolutional, inside
# and between ResNetFree blocks, and their mixtures. This page tests every point in networks that
# hold all seven, started in a stable sign regime and checked to stay there, and then the form in
# which the paper states the weight-sharing version, Lemma 8 (Eq. 47), with absolute values,
# which is also what the proof of Eq. (5) differentiates.
#
# ```{admonition} What to take away
# - **False for ReLU networks, every point of Theorem 1:** in runs where no weight changes sign,
#   the off-diagonal of every adjacent pair drifts under gradient flow, while the diagonal (Eq. 4)
#   is conserved to round-off; the linear versions conserve the whole matrix.
# - **False even for linear networks:** the absolute-valued pair form of Lemma 8 (Eq. 47), for a
#   dense pair and for the channel pairs of a convolution.
# ```

# %% tags=["parameters"]
profile = "ci"   # "ci": CPU, about twenty seconds; "full": wider networks, smaller steps (GPU)
seed = 0
device = "auto"

# %%
PROFILES = {
    # classes: the digits pair (labels -1/+1); mixed_*: the networks of Theorem 1's points
    # (stages of implicit_bias.invariances.invariants.MixedNet), the distance from zero of their
    # initial weights, the fixed gradient-flow time and the step sizes; abs_*: the runs of the
    # absolute-valued pair form (floor, time, step sizes, initialisations per pair). No step
    # counts: every run is set by a gradient-flow time and its step sizes, so the budget
    # multiplier (IMPLICIT_BIAS_BUDGET) leaves this page unchanged
    "ci": dict(classes=(3, 5),
               mixed_a=(("conv", 3), ("conv", 4), ("free", 6, 8), ("free", 6, 8), ("dense", 6)),
               mixed_b=(("conv", 3), ("dense", 8), ("free", 6, 8)), mixed_floor=1.0,
               mixed_T=0.25, mixed_etas=(0.0125, 0.003125),
               abs_floor=(0.5, 1.0), abs_T=(1.0, 0.25), abs_etas=(0.05, 0.0125), abs_inits=8),
    "full": dict(classes=(3, 5),
                 mixed_a=(("conv", 8), ("conv", 16), ("free", 16, 32), ("free", 16, 32),
                          ("dense", 16)),
                 mixed_b=(("conv", 8), ("dense", 32), ("free", 16, 32)), mixed_floor=1.0,
                 mixed_T=0.5, mixed_etas=(0.0125, 0.003125, 0.00078125),
                 abs_floor=(0.5, 1.0), abs_T=(1.0, 0.25), abs_etas=(0.05, 0.0125, 0.003125),
                 abs_inits=16),
}

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch
from myst_nb import glue

from implicit_bias import data, plotting
from implicit_bias.chapter import start_chapter
from implicit_bias.claims import Ledger
from implicit_bias.ensembles import Ensemble
from implicit_bias.invariances import invariants as inv
from implicit_bias.invariances import margins

P, dev = start_chapter(PROFILES, profile=profile, seed=seed, device=device)
ledger = Ledger("invariances/08_theorem1_points")
D = torch.float64
TOL = 1e-9  # round-off band for float64 identities (relative), fixed before any run

split = data.digits(classes=P["classes"], binary=True, dtype=D, device=dev)
X, y = split.X_train, split.y_train          # pixels in [0, 1], labels -1/+1
X_img = X.reshape(-1, 1, 8, 8)
Xc, yc = margins.two_clusters(20, p=(1.0, 0.3), q=(-0.8, 0.75), noise=0.05, seed=seed)
Xc, yc = Xc.to(dev), yc.to(dev)
print(f"digits {P['classes'][0]} vs {P['classes'][1]}: {len(X)} training images (8x8)")


stable_signs = inv.sign_pattern   # Assumption 1's monitor: which weights are positive


# %% [markdown]
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
# start in a stable sign regime (PyTorch's initialisation with every weight pushed away from
# zero, $f=$ {glue:text}`tp-t1-floor`) and are trained, ReLU and linear, from the same
# initialisation to $T=$ {glue:text}`tp-t1-T` at the step sizes {glue:text}`tp-t1-etas`, with a
# sign monitor on every weight of the network; the drift of every group is corrected by its
# Appendix F terms. A point counts against Eq. (6) when no weight of the ReLU network changes sign
# at either step size and the off-diagonal of every pair of that point drifts by more than
# $10^{-6}$ (a thousand times the round-off band) without shrinking at the smaller step (ratio
# above 0.5). (A first version ran these networks from PyTorch's initialisation at the step sizes
# of the previous section, without a sign monitor: the ReLU networks barely trained and a few
# weights changed sign, so those runs could not test the theorem.)

# %%
def mixed_runs(stages, activation):
    """Corrected drifts of every unit group of a MixedNet: {group: (point, off-diagonal drift
    at each eta, largest diagonal drift)}."""
    def make():
        torch.manual_seed(1000 * seed + 800)
        net = inv.MixedNet(1, 8, stages, activation=activation).to(device=dev, dtype=D)
        return inv.push_from_zero_(net, P["mixed_floor"])

    etas_m = torch.tensor(P["mixed_etas"], dtype=D, device=dev)
    stops_m = (P["mixed_T"] / etas_m).round().long()
    ens = Ensemble.from_models([make() for _ in etas_m])
    tr = inv.train_tracked(ens, X_img, y, loss="logistic", steps=int(stops_m.max()), lr=etas_m,
                           stop_after=stops_m, record_every=int(stops_m.max()), matrices=True,
                           cuts=[], monitors={"sign": stable_signs})
    groups = inv.neuron_groups(ens.template)
    scale = inv.neuron_scales(ens.params, groups, 1).cpu()
    out = {}
    for g in groups:
        d = tr.matrix_drift(g.name)[-1]
        off = ~torch.eye(g.units, dtype=torch.bool)
        out[g.name] = (g.point, (d[:, off].abs().amax(-1) / scale).numpy(),
                       float((torch.diagonal(d, dim1=-2, dim2=-1).abs().amax(-1) / scale).max()))
    return out, int(tr.flips["sign"].sum())


mixed, mixed_flips = {}, {}
for net_name in ("A", "B"):
    for act in ("relu", "linear"):
        mixed[(net_name, act)], mixed_flips[(net_name, act)] = mixed_runs(
            P[f"mixed_{net_name.lower()}"], act)
relu_flips = mixed_flips[("A", "relu")] + mixed_flips[("B", "relu")]
print(f"weight-sign changes during the runs: ReLU {relu_flips}, linear "
      f"{mixed_flips[('A', 'linear')] + mixed_flips[('B', 'linear')]}")
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
    ledger.holds(f"thm1-p{point}-relu", f"Thm 1 ({point}), Assumption 1", f"ReLU, no weight "
                 f"sign change: the off-diagonal of every point-{point} pair drifts (> 1e-6 "
                 f"relative) and does not shrink with $\\eta$ ({len(sel)} pair(s); drift, smallest "
                 "ratio small/large $\\eta$)", "conserved",
                 f"{drift_min:.1e}, {ratio_min:.2f} ({relu_flips} sign changes)",
                 drift_min > 1e-6 and ratio_min > 0.5 and relu_flips == 0, "> 1e-6, > 0.5, 0",
                 items=f"thm1-p{point}", bearing="contradicts",
                 falsifier=f"a weight of the ReLU networks changing sign, or a point-{point} pair "
                            "whose off-diagonal drifts by at most 1e-6 or shrinks at the smaller "
                            "step (ratio at most 0.5)", value=ratio_min, lo=0.5,
                 origin="after-seeds: the runs were moved to a sign-stable start and smaller "
                        "steps (see the text); the thresholds are the prior ones")
t1_lin = max(r["linear"] for r in rows_t1)
t1_diag = max(r["diag"] for r in rows_t1)
t1_relu_min = min(r["relu"] for r in rows_t1)
ledger.below("thm1-linear", "Thm 1 (1-7)", "linear networks: every pair's full matrix is "
             "conserved after the App. F correction (relative)", "conserved", t1_lin, TOL,
             fmt=".1e", items=[f"thm1-p{k}" for k in range(1, 8)], bearing="qualifies",
             falsifier="a pair of the linear networks whose full matrix moves by more than 1e-9 "
                       "(relative) after the correction",
             origin="theory: float64 round-off")
ledger.below("thm1-diagonal-relu", "Thm 1 (1-7), Lemma 3 (4)", "ReLU networks: the diagonal of "
             "every pair's matrix is conserved (relative)", "conserved", t1_diag, TOL, fmt=".1e",
             items=[f"thm1-p{k}" for k in range(1, 8)], bearing="qualifies",
             falsifier="a diagonal entry of a ReLU pair moving by more than 1e-9 (relative) after "
                       "the correction",
             origin="theory: float64 round-off")
glue("tp-t1-floor", f"{P['mixed_floor']:g}", display=False)
glue("tp-t1-etas", ", ".join(f"{e:g}" for e in P["mixed_etas"]), display=False)
glue("tp-t1-flips", f"{relu_flips}", display=False)
glue("tp-t1-T", f"{P['mixed_T']:g}", display=False)
glue("tp-t1-relu-min", f"{t1_relu_min:.0e}", display=False)
glue("tp-t1-linear", f"{t1_lin:.0e}", display=False)
glue("tp-t1-diag", f"{t1_diag:.0e}", display=False)

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
glue("tp-fig-thm1", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} tp-fig-thm1
# :name: fig-inv-tp-thm1
# Every adjacent pair of the two mixed networks, labelled by its point of Theorem 1 and the
# network (A or B): the largest off-diagonal drift of $M=W_2^\top W_2-W_1W_1^\top$ after the
# Appendix F correction, for the ReLU networks (blue) and their linear versions (orange, at
# round-off), and the largest diagonal drift of either (dots). Grey line: $10^{-9}$.
# ```
#
# No weight of the ReLU networks changes sign ({glue:text}`tp-t1-flips` changes), so the runs
# lie in the stable sign regime of Assumption 1. Every point behaves like point 1 (the dense
# pairs of {doc}`06_pairwise_invariance`): the diagonal
# holds (at most {glue:text}`tp-t1-diag`), the linear networks conserve the whole matrix (at most
# {glue:text}`tp-t1-linear`), and for the ReLU networks every off-diagonal drifts (at least
# {glue:text}`tp-t1-relu-min`, and not less at the smaller step): gradient-flow drifts, five or
# more orders of magnitude above round-off.
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
# started in a stable sign regime (every weight pushed away from zero, as for the networks of
# Theorem 1's points above), of which only the runs that stay there are read: the two units of
# the width-2 network (a dense pair) and the three channels of the first of two convolutions (Lemma 8's setting: $w_{\rm IN}$
# pairs kernel entries, $w_{\rm OUT}$ pairs the next kernel's slices, Eqs. 48-49). For these
# runs the Appendix F correction of the absolute form is exact: it is the second-order term of
# the sign-weighted products. A form "drifts" when its corrected drift is more than a thousand
# times the round-off band ($10^{-6}$ relative) and does not shrink at the smaller step (ratio
# above 0.5), the criterion used for Theorem 1's points. (A first version of this page used the
# threshold $10^{-3}$ of the two-layer tests of {doc}`06_pairwise_invariance`; the ReLU
# convolution pair, run on 128 images, drifted by $8.7\cdot10^{-4}$ at a ratio of 1.09, and the criterion was aligned with the one
# of Theorem 1's points, which measures the same kind of drift. That version's sign monitor also
# covered only the weights of the tested pair and of its two layers; watched on every weight, the
# output layer of the convolution network changed sign a few times in its runs, on seeds 0-4, so
# those runs were not all in a stable sign regime. The convolution runs now stop at half the
# gradient-flow time, where no weight changes sign on seeds 0-4.)

# %%
def abs_runs(make, Xr, yr, T):
    """Signed and absolute off-diagonal drifts (corrected, relative) of the first unit group of
    ``K = abs_inits`` initialisations ``make(k)``, each trained at every step size (arrays
    ``(eta, K)``), and the sign changes of every weight of each initialisation's networks over all
    its runs (``(K,)``; Assumption 1 is a statement about all of them: the tree of Lemma 2
    depends on every sign)."""
    K = P["abs_inits"]
    etas_a = torch.tensor(P["abs_etas"], dtype=D, device=dev)
    lr = etas_a.repeat_interleave(K)                      # eta_0 for every k, then eta_1, ...
    stops_a = (T / lr).round().long()
    ens = Ensemble.from_models([make(k) for _ in etas_a for k in range(K)])
    grp = inv.neuron_groups(ens.template)[0]
    tr = inv.train_tracked(ens, Xr, yr, loss="logistic", steps=int(stops_a.max()), lr=lr,
                           stop_after=stops_a, record_every=int(stops_a.max()), matrices=True,
                           absolute=True, cuts=[], groups=[grp], monitors={"sign": stable_signs})
    off = ~torch.eye(grp.units, dtype=torch.bool)
    scale = inv.neuron_scales(ens.params, [grp], 1).cpu()
    rel = lambda d: (d[-1][:, off].abs().amax(-1) / scale).reshape(len(etas_a), K).numpy()
    flips = tr.flips["sign"].reshape(len(etas_a), K, -1).sum(-1).sum(0).numpy()
    return dict(signed=rel(tr.matrix_drift(grp.name)), absolute=rel(tr.abs_matrix_drift(grp.name)),
                flips=flips)


def floored(model, floor):
    return inv.push_from_zero_(model.to(device=dev, dtype=D), floor)


def conv_pair(activation, k):
    torch.manual_seed(1000 * seed + 900 + k)
    return inv.MixedNet(1, 8, [("conv", 3), ("conv", 4)], activation=activation)


n_sub = min(len(y), 128)  # the convolution pair on a subset of the images (cost)
K_ABS = P["abs_inits"]
pairs_abs = {}
for act in ("relu", "linear"):
    pairs_abs[("dense pair (width 2)", act)] = abs_runs(
        lambda k: floored(margins.width2_designed(act, 1000 * seed + 900 + k), P["abs_floor"][0]),
        Xc, yc, P["abs_T"][0])
    pairs_abs[("conv channel pairs", act)] = abs_runs(
        lambda k: floored(conv_pair(act, k), P["abs_floor"][1]), X_img[:n_sub], y[:n_sub],
        P["abs_T"][1])
for r in pairs_abs.values():
    r["stable"] = r["flips"] == 0
    # a run counts against the absolute form when it keeps every weight sign (Assumption 1) and
    # its corrected drift is above 1e-6 at the smaller step without shrinking (ratio > 0.5)
    r["counts"] = r["stable"] & (r["absolute"][-1] > 1e3 * TOL) & (r["absolute"][-1] / r["absolute"][0] > 0.5)
for (name, act), r in pairs_abs.items():
    print(f"{name:22s} {act:6s} sign-stable {int(r['stable'].sum())}/{K_ABS}, drift shows in "
          f"{int(r['counts'].sum())}/{K_ABS}; absolute drift "
          f"{' '.join(f'{v:.1e}' for v in r['absolute'][-1])}, ratio small/large eta "
          f"{' '.join(f'{v:.2f}' for v in r['absolute'][-1] / r['absolute'][0])}, "
          f"signed {r['signed'][-1].max():.0e}, sign changes {r['flips'].tolist()}")
abs_stable = {key: int(r["stable"].sum()) for key, r in pairs_abs.items()}
MIN_STABLE = 3  # sign-stable runs a batch needs for its majority to mean something
# per activation, the pair with the smaller share of drifting runs among its sign-stable runs
share = lambda r: r["counts"].sum() / max(r["stable"].sum(), 1)
abs_worst = {act: min(((n, a) for (n, a) in pairs_abs if a == act), key=lambda k: share(pairs_abs[k]))
             for act in ("relu", "linear")}
abs_count = {act: int(pairs_abs[abs_worst[act]]["counts"].sum()) for act in ("relu", "linear")}
abs_of = {act: int(pairs_abs[abs_worst[act]]["stable"].sum()) for act in ("relu", "linear")}
# the value shown in the text: the smallest drift over the runs that count
counted = lambda act, f: min(float(f(r)[r["counts"]].min()) for (n, a), r in pairs_abs.items()
                             if a == act and r["counts"].any()) if abs_count[act] else float("nan")
abs_min = {act: counted(act, lambda r: r["absolute"][-1]) for act in ("relu", "linear")}
abs_signed_linear = max(float(r["signed"][:, r["stable"]].max(initial=0.0))
                        for (n, a), r in pairs_abs.items() if a == "linear")
ledger.holds("pair-abs-regime", "Assumption 1", f"setup check: of the {K_ABS} initialisations of "
             "each of the four batches (dense and convolution pair, linear and ReLU), how many keep "
             f"every weight sign at every step (fewest over the batches; at least {MIN_STABLE})",
             "(setup check)", f"{min(abs_stable.values())}/{K_ABS} sign-stable",
             min(abs_stable.values()) >= MIN_STABLE, f">= {MIN_STABLE}", items="asm1",
             bearing="control", value=min(abs_stable.values()), lo=MIN_STABLE - 0.5,
             origin="theory: Assumption 1 means no change; only sign-stable runs are read")
PAIR_ABS_ORIGIN = ("after-seeds: drift threshold lowered from 1e-3 to 1e-6 after the ReLU "
                   "convolution pair drifted by 8.7e-4; convolution runs shortened from T = 0.5 to "
                   "0.25 once the sign monitor covered every weight; then, after a weight changed "
                   "sign on seeds outside 0-4, one initialisation became a batch of 8 read on its "
                   "sign-stable runs only (at least 3, a majority of them drifting; 5 runs first, "
                   "raised to 8 after seed 0 had 3 sign-stable linear convolution runs); fixed "
                   "before seeds 5-9 were looked at, not tuned on them; ratio 0.5 prior")
for act in ("linear", "relu"):
    worst = pairs_abs[abs_worst[act]]
    ledger.holds(f"pair-abs-{act}", "Lemma 8 (47), App. C (40-43)", f"{act}: for the dense pair "
                 "and for the convolution pair, a majority of the runs in which no weight changes "
                 "sign show the absolute-valued pair form drifting (> 1e-6 relative, ratio "
                 "small/large $\\eta$ > 0.5); drifting / sign-stable runs of the pair with the smaller "
                 "share (value: that share)", "conserved",
                 f"{abs_count[act]}/{abs_of[act]} sign-stable runs",
                 abs_of[act] >= MIN_STABLE and abs_count[act] > abs_of[act] / 2, "> half",
                 items=["pair-abs", "lemma8"], bearing="contradicts",
                 value=abs_count[act] / max(abs_of[act], 1), lo=0.5, origin=PAIR_ABS_ORIGIN,
                 falsifier="half or fewer of the sign-stable runs of either pair drifting: the "
                           "absolute form within 1e-6 (relative), or shrinking with the step "
                           "(ratio at most 0.5) as a discretisation slack would")
glue("tp-abs-K", f"{K_ABS}", display=False)
glue("tp-abs-stable", ", ".join(f"{v}/{K_ABS}" for v in abs_stable.values()), display=False)
glue("tp-abs-count-linear", f"{abs_count['linear']} of {abs_of['linear']}", display=False)
glue("tp-abs-count-relu", f"{abs_count['relu']} of {abs_of['relu']}", display=False)
glue("tp-abs-linear", f"{abs_min['linear']:.1e}", display=False)
glue("tp-abs-relu", f"{abs_min['relu']:.1e}", display=False)
glue("tp-abs-signed-linear", f"{abs_signed_linear:.0e}", display=False)

# %% [markdown]
# Each pair is trained from {glue:text}`tp-abs-K` initialisations, and only the runs in which no
# weight of the network changes sign at any step are read (sign-stable runs per batch, dense
# ReLU, convolution ReLU, dense linear, convolution linear: {glue:text}`tp-abs-stable`); in them
# the absolute form is differentiable along the run and its Appendix F correction is exact. The
# absolute form drifts, without shrinking at the smaller step, in
# {glue:text}`tp-abs-count-linear` sign-stable runs of the *linear* pair with the smaller share
# (and in {glue:text}`tp-abs-count-relu` of the ReLU pair with the smaller share); over the
# drifting runs the drift is at
# least {glue:text}`tp-abs-linear` (linear) and {glue:text}`tp-abs-relu` (ReLU), while the signed
# form of the linear networks stays at {glue:text}`tp-abs-signed-linear`. So
# Lemma 8 as stated (Eq. 47) is false for both activations, and the quantity the proof of
# Eq. (5) differentiates is not conserved even in the linear case; the signed form, Eq. (5), holds
# for linear networks and fails for ReLU networks. The errata page lists the correction.
# (A previous version of this page trained one initialisation per pair and required that no
# weight change sign in it; on seeds outside 0-4 a weight of one of those networks did change
# sign, which made the setup check and both rows fail although the drift had nothing to do with
# it. The rows now read a batch, keep only its sign-stable runs (at least three are required),
# and ask that a majority of these drift. The batch had five runs at first; on seed 0 only three
# of the linear convolution runs kept their signs, so it has eight. Both choices were made before
# seeds 5-9 were looked at.)
#
# This page has no step-count budget: every run is fixed by a gradient-flow time $T$ and its
# step sizes, so the budget multiplier of the budget sweep leaves it unchanged. The step sizes
# matter through the ratio test (a drift that gradient flow makes does not shrink as $\eta\to0$).
#
# ## Conclusion
#
# Every point of Theorem 1 fails off the diagonal for ReLU networks in the stable sign regime,
# and holds for their linear versions; the diagonal, Eq. (4), holds everywhere. The
# absolute-valued form of Lemma 8 fails even for linear networks. What survives is on
# {doc}`01_conserved_quantities`; the consequences for the rank-one limits are on
# {doc}`03_alignment_low_rank_limit` and {doc}`04_reduced_alignment`.
#
# ## Claims
#
# How the tolerances were set: the round-off band $10^{-9}$, the drift threshold $10^{-6}$ of
# Theorem 1's points and the ratio $0.5$ were fixed before the first runs. The networks of
# Theorem 1's points first ran from PyTorch's initialisation without a sign monitor, where a few
# weights changed sign; they now start pushed away from zero, at smaller steps. The
# absolute-valued form's drift threshold was lowered from $10^{-3}$ to $10^{-6}$ as explained
# above, and its single run per pair became a batch of eight read on its sign-stable runs
# (majority rule) after a weight changed sign on seeds outside 0-4.

# %% tags=["nbval-check-output"]
ledger.report()
