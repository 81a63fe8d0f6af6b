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
# # Depth and reversion to the OCS
#
# The fifth lens of {doc}`01_five_lenses`: the predictions of a network fall back to the optimal
# constant solution (OCS) as its inputs leave the training distribution
# {cite:p}`kang2024extrapolate`. This page tests the two predictions of the synthesis that
# connect it to the other papers, P6 (depth, hence a longer low-rank bottleneck
# {cite:p}`jacot2023bottleneck`, makes reversion faster) and P7 (late-layer feature norms shrink
# under shifts that remove signal, the mechanism of {cite:t}`kang2024extrapolate`), with the
# measuring tools of `implicit_bias.extrapolation`. Both predictions, as quoted below, were
# written and committed before the first run (they were then on the page {doc}`01_five_lenses`,
# whose git history is the evidence); the analyses marked "added 2026-11-26" follow a review
# (issue #21).
#
# :::{admonition} What this page shows
# - **P6 fails, also when compared fairly.** After the same number of steps the deeper networks
#   revert to the OCS *more slowly* under blur, contrast and clipped noise. Part of that is
#   confidence: compared at the same training loss and after temperature scaling the difference
#   shrinks, but the deeper network still reverts faster under fewer than two of the three shifts.
# - **P7 fails narrowly, on clipped noise; not resolved at this scale.** As written, P7 covered
#   blur, contrast and clipped noise. Late-layer norms shrink under blur and contrast (that part
#   holds); under clipped noise the largest ratio over the networks is above 1 on every seed 0-4,
#   so P7's own criterion fails, but by less than the ratio varies from seed to seed (within one
#   spread of the threshold); the mean ratio is near 0.9.
# - Small scale: 8x8 digits, width 48, depth at most 8 (seeds 0-4 on the
#   {doc}`robustness page </book/robustness>`).
# :::
#
# ## The predictions, as written before the runs
#
# **P6 (deeper networks revert to the OCS faster).** On digits, as the shift severity grows from 0
# to 5, the mean KL divergence from the predicted distribution to the OCS shrinks by a larger
# factor for depth 8 than for depth 2 (deeper networks have a longer low-rank bottleneck, so
# shifted inputs project less onto the few directions the network uses). *Fails if* this holds for
# fewer than two of the three shifts (blur, contrast, clipped noise).
#
# **P7 (late-layer norms shrink).** For the same shifts at severity 5, the mean squared norm of the
# last hidden layer's features is smaller than on the training set at every depth (the mechanism
# of {cite:t}`kang2024extrapolate`). *Fails if* the ratio is $\ge1$ for any depth and shift. A
# negative control: unclipped Gaussian noise, a known failure mode, should raise the ratio above 1.
#
# ## Added on 2026-11-26, after review
#
# - **P6** compares networks that differ in confidence as well as in depth: after the same number
#   of steps the deeper networks fit the training set far better and are more confident on every
#   input. The new rows compare the depths **at the same training loss** (each network at the
#   first of its checkpoints, every {glue:text}`dg-every` steps, whose training cross-entropy is
#   at most the largest final one over all networks, so that every network reaches it) and
#   **after temperature scaling** (one temperature per network, fitted on half of the clean test
#   images with `extrapolation.selective.fit_temperature`; the KL divergences are measured on the
#   other half), with P6's own criterion.
# - **P7**'s row for clipped noise (mean ratio $>0.8$) passes whether or not P7 holds. The new row
#   applies P7's own criterion to clipped noise: the largest ratio over depths and networks, P7
#   failing if it is $\ge1$.

# %% tags=["parameters"]
profile = "ci"   # "ci": CPU, about half a minute; "full": deeper and wider networks (GPU, cached, resumable)
seed = 0
device = "auto"

# %%
PROFILES = {
    # dg_*: width, depths, L2, SGD steps, batch, learning rate, seeds (networks per depth) and checkpoint
    # interval of the digits MLPs
    "ci": dict(dg_width=48, dg_depths=(2, 4, 8), dg_lam=1e-4, dg_steps=1500, dg_batch=128, dg_lr=0.05, dg_seeds=3,
               dg_every=100, cache=False),
    "full": dict(dg_width=256, dg_depths=(2, 4, 8, 12, 16, 24), dg_lam=1e-4, dg_steps=20_000, dg_batch=128,
                 dg_lr=0.05, dg_seeds=5, dg_every=500, cache=True),
}

# %%
import matplotlib.pyplot as plt
import torch
from myst_nb import glue

from implicit_bias import cache, data, ensembles, models, plotting, train
from implicit_bias.chapter import start_chapter
from implicit_bias.claims import Ledger
from implicit_bias.extrapolation import ocs, selective

P, dev = start_chapter(PROFILES, profile=profile, seed=seed, device=device)
ledger = Ledger("synthesis/02_depth_and_reversion")
D = torch.float64
seeds = [100 * seed + s for s in range(P["dg_seeds"])]
glue("dg-depths", ", ".join(map(str, P["dg_depths"])), display=False)
glue("dg-every", P["dg_every"], display=False)
glue("dg-steps", P["dg_steps"], display=False)
glue("dg-width", P["dg_width"], display=False)

# %% [markdown]
# ## The runs
#
# Biased ReLU MLPs of width {glue:text}`dg-width` and depths {glue:text}`dg-depths`
# (He-normal initialisation, $L_2$ $10^{-4}$), trained with cross-entropy by mini-batch SGD for
# {glue:text}`dg-steps` steps on scikit-learn's 8x8 digits, all depths and seeds in one call of
# `ensembles.train_models`, which also keeps a checkpoint of every network every
# {glue:text}`dg-every` steps. The test images are then shifted at severities 0 to 5
# (`data.shift`); we measure the mean KL divergence from the predicted distribution to the OCS,
# the label marginal (`ocs.distance_to_ocs`), and the ratio of mean squared norms of the last
# hidden features, shifted over training (`ocs.norm_ratio`). Profile `full` (depth up to 24, width
# 256) needs a GPU and was **not run** for this page.

# %%
split = data.digits(seed=0, dtype=D)
Xtr, ytr, Xte, yte = split
gen = torch.Generator().manual_seed(seed)


def make_digits(L: int) -> list[torch.nn.Module]:
    out = []
    for s in seeds:
        torch.manual_seed(s)
        out.append(models.MLP(64, 10, P["dg_width"], L, init_std=(2 / P["dg_width"]) ** 0.5).to(D))
    return out


def train_digits() -> tuple[list[torch.nn.Module], list[tuple[int, list[int], list[dict]]]]:
    """The networks after training, and per depth (depth, checkpoint steps, stacked parameters at each)."""
    nets = [m for L in P["dg_depths"] for m in make_digits(L)]
    snapshot = {"params": lambda ens: {k: v.detach().clone() for k, v in ens.params.items()}}
    hist = ensembles.train_models(nets, Xtr.to(dev), ytr.to(dev), loss="ce", steps=P["dg_steps"], lr=P["dg_lr"],
                                  weight_decay=P["dg_lam"], batch_size=P["dg_batch"], generator=gen, progress=False,
                                  metrics=snapshot, record_every=P["dg_every"])
    checkpoints = [(len(nets[idx[0]].layers), h.record_steps, [{k: v.to("cpu") for k, v in p.items()}
                                                               for p in h.records["params"]]) for idx, _, h in hist.groups]
    return nets, checkpoints


nets, checkpoints = cache.cached("synthesis-digits", dict(seeds=seeds, **{k: P[k] for k in P if k.startswith("dg_")}),
                                 train_digits, enabled=P["cache"])
p_hat = ocs.ocs_cross_entropy(ytr, 10)
images = Xte.reshape(-1, 1, 8, 8)
SHIFTS = ("blur", "contrast", "clipped_noise")
sev = list(range(6))
kl = {}      # (shift, depth) -> (severities, seeds) mean KL to the OCS
ratio = {}   # (shift, depth) -> (seeds,) norm ratio at severity 5
acc = []
shifted = {}
with torch.no_grad():
    for kind in SHIFTS + ("gaussian_noise",):
        shifted[kind] = [data.shift(images, kind, s, generator=torch.Generator().manual_seed(seed)).reshape(len(Xte), -1)
                         for s in sev]
        for L in P["dg_depths"]:
            group = [m for m in nets if len(m.layers) == L]
            kl[kind, L] = torch.tensor([[float(ocs.distance_to_ocs(m(x), p_hat, "ce").mean()) for m in group]
                                        for x in shifted[kind]])
            ratio[kind, L] = torch.tensor([ocs.norm_ratio(m.features(shifted[kind][-1])[-2], m.features(Xtr)[-2])
                                           for m in group])
    for m in nets:
        acc.append(train.accuracy(m, Xte, yte))
fig, axes = plotting.subplots(ncols=len(SHIFTS), height=3.0)
for ax, kind in zip(axes, SHIFTS):
    for j, L in enumerate(P["dg_depths"]):
        plotting.band(ax, sev, kl[kind, L].T.numpy(), label=f"L={L}", i=j)
    ax.set(title=kind, xlabel="severity", ylabel="KL(prediction || OCS)")
axes[0].legend(fontsize=8)
plt.show()

L_lo, L_hi = min(P["dg_depths"]), max(P["dg_depths"])
shrink = {(kind, L): float(kl[kind, L][-1].mean() / kl[kind, L][0].mean()) for kind in SHIFTS for L in P["dg_depths"]}
p6_count = sum(shrink[kind, L_hi] < shrink[kind, L_lo] for kind in SHIFTS)
p6_opposite = sum(shrink[kind, L_hi] > shrink[kind, L_lo] for kind in SHIFTS)
for kind in SHIFTS:
    print(f"{kind}: KL at severity 5 / KL at severity 0: " +
          ", ".join(f"L={L} {shrink[kind, L]:.2f}" for L in P["dg_depths"]) +
          "; norm ratio at severity 5: " + ", ".join(f"L={L} {float(ratio[kind, L].max()):.2f}" for L in P["dg_depths"]))
print("control, unclipped Gaussian noise: norm ratio at severity 5:",
      ", ".join(f"L={L} {float(ratio['gaussian_noise', L].min()):.2f}" for L in P["dg_depths"]))
print(f"test accuracy (smallest over networks): {min(acc):.3f}")
p7_max = max(float(ratio[kind, L].max()) for kind in ("blur", "contrast") for L in P["dg_depths"])
p7_noise = float(torch.cat([ratio["clipped_noise", L] for L in P["dg_depths"]]).mean())
p7_ctrl = min(float(ratio["gaussian_noise", L].min()) for L in P["dg_depths"])
glue("syn-p6-count", p6_count, display=False)
glue("syn-p7-max", f"{p7_max:.2f}", display=False)
glue("syn-p7-noise", f"{p7_noise:.2f}", display=False)
glue("syn-p7-ctrl", f"{p7_ctrl:.2f}", display=False)
glue("syn-acc", f"{min(acc):.3f}", display=False)
ledger.above("digits-trained", "control", "digits: test accuracy of every network", "> 0.85", min(acc), 0.85,
             fmt=".3f", items="p6", bearing="control", origin="prior")
ledger.above("p6-deeper-reverts-slower", "P6", f"digits: shifts (of 3) where KL-to-OCS shrinks by a *smaller* factor "
             f"at depth {L_hi} than at depth {L_lo}; prediction P6 said larger for at least 2",
             "P6 fails: smaller for at least 2", p6_opposite, 1.5, fmt=".0f", items="p6", bearing="contradicts",
             origin="after-seeds: restated as P6's failure after seed 0 (the count 2 is P6's)",
             falsifier=f"the KL to the OCS shrinks by a smaller factor at depth {L_hi} than at depth {L_lo} under at "
                       "most one of the three shifts (depth does not slow reversion)")
ledger.below("p7-late-norms-shrink", "P7", "digits, blur and contrast: last-hidden-layer norm ratio, shifted "
             "(severity 5) over train, largest over both shifts, depths and seeds", "< 1 (prediction P7)", p7_max, 1.0,
             fmt=".2f", items="p7", bearing="supports",
             origin="after-seeds: P7's bound; restricted to blur and contrast after seed 0 (clipped noise failed)",
             falsifier=r"a ratio $\ge 1$ under blur or contrast at some depth and seed (the norms do not shrink)")
ledger.above("p7-noise-does-not-shrink", "P7", "digits, clipped noise: the same ratio, mean over depths and seeds, "
             "above the 0.4 of blur and contrast: noise barely shrinks the norms (a bound that P7 itself would also "
             "pass: see p7r-noise-own-criterion)", "clipped noise shrinks little: > 0.8", p7_noise, 0.8, fmt=".2f",
             items="p7", bearing="qualifies",
             origin="after-seeds: 0.8 set after seeds 0-4; relabelled qualifies after the review of 2026-11-26",
             falsifier=r"a mean ratio $\le 0.8$: clipped noise shrinks the late-layer norms as blur and contrast do "
                       "(their ratios are near 0.4)")
ledger.above("p7-noise-control", "control", "unclipped Gaussian noise at severity 5: the same ratio (smallest): "
             "the check can fail", "> 1", p7_ctrl, 1.0, fmt=".2f", items="p7", bearing="control", origin="prior")

# %% [markdown]
# **What the runs show, as the predictions measured them.** The deeper network reverts to the OCS
# faster in {glue:text}`syn-p6-count` of the three shifts: for blur, contrast and clipped noise
# alike the KL divergence to the OCS shrinks *less* at depth 8 than at depth 2. Late-layer norms
# shrink under blur and contrast (ratio at most {glue:text}`syn-p7-max`), as the mechanism of
# {cite:t}`kang2024extrapolate` says; under clipped noise the mean ratio is
# {glue:text}`syn-p7-noise`, and unclipped noise, the negative control, raises the norms (ratio at
# least {glue:text}`syn-p7-ctrl`). All networks reach at least {glue:text}`syn-acc` test accuracy.
#
# ## Depths compared at the same training loss, after temperature scaling (added 2026-11-26)

# %%
calib = torch.randperm(len(Xte), generator=torch.Generator().manual_seed(seed))
cal, ev = calib[: len(Xte) // 2], calib[len(Xte) // 2:]


def logits(params: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """Outputs of the stacked networks of one checkpoint: (networks, n, 10)."""
    return models.mlp_trace(*models.mlp_weights_biases(params), x).output


train_ce = {L: torch.stack([torch.nn.functional.cross_entropy(logits(p, Xtr).transpose(1, 2),
                                                              ytr.expand(len(seeds), -1), reduction="none").mean(-1)
                            for p in snaps]) for L, _, snaps in checkpoints}      # (checkpoints, seeds)
target = max(float(ce[-1].max()) for ce in train_ce.values())
matched, temps = {}, {}
for L, steps, snaps in checkpoints:
    first = [int((train_ce[L][:, j] <= target).nonzero()[0]) for j in range(len(seeds))]
    params = {k: torch.stack([snaps[i][k][j] for j, i in enumerate(first)]) for k in snaps[0]}
    T = torch.stack([selective.fit_temperature(z[cal], yte[cal]) for z in logits(params, Xte)]).view(-1, 1, 1)
    temps[L] = ([steps[i] for i in first], T.flatten())
    for kind in SHIFTS:
        kl0, kl5 = (ocs.distance_to_ocs(logits(params, shifted[kind][s][ev]) / T, p_hat, "ce").mean(-1) for s in (0, 5))
        matched[kind, L] = float((kl5 / kl0).mean())
gap_raw = sum(shrink[kind, L_hi] - shrink[kind, L_lo] for kind in SHIFTS) / len(SHIFTS)
gap_matched = sum(matched[kind, L_hi] - matched[kind, L_lo] for kind in SHIFTS) / len(SHIFTS)
p6r_count = sum(matched[kind, L_hi] < matched[kind, L_lo] for kind in SHIFTS)
print(f"training cross-entropy matched at {target:.3f} (the largest final one)")
for L, (steps, T) in temps.items():
    print(f"L={L}: checkpoints at steps {steps}, temperatures {[round(float(t), 2) for t in T]}")
for kind in SHIFTS:
    print(f"{kind}: KL at severity 5 / KL at severity 0, matched loss and temperature: " +
          ", ".join(f"L={L} {matched[kind, L]:.2f}" for L in P["dg_depths"]))
print(f"depth {L_hi} minus depth {L_lo}, mean over shifts: {gap_raw:.2f} as trained, {gap_matched:.2f} matched")
p7r_noise = max(float(ratio["clipped_noise", L].max()) for L in P["dg_depths"])
glue("p6r-target", f"{target:.3f}", display=False)
glue("p6r-count", p6r_count, display=False)
glue("p6r-gap-raw", f"{gap_raw:.2f}", display=False)
glue("p6r-gap", f"{gap_matched:.2f}", display=False)
glue("p7r-noise", f"{p7r_noise:.2f}", display=False)
share = gap_matched / gap_raw
glue("p6r-share", f"{share:.2f}", display=False)
ledger.below("p6r-own-criterion", "P6", f"added 2026-11-26: shifts (of 3) where, at the same training loss and after "
             f"temperature scaling, KL-to-OCS shrinks by a larger factor at depth {L_hi} than at depth {L_lo}; "
             "prediction P6 said at least 2", "P6 fails: fewer than 2", p6r_count, 1.5, fmt=".0f", items="p6",
             bearing="contradicts", origin="after-seeds: P6's count; matched loss and temperature as the review "
                                           "asked (2026-11-26)",
             falsifier=f"at the same loss and temperature, depth {L_hi} reverts faster than depth {L_lo} under at "
                       "least 2 of the 3 shifts (P6 holds)")
ledger.between("p6r-confidence-share", "P6", f"added 2026-11-26: depth {L_hi} minus depth {L_lo} in the shrink "
               "factor (mean over shifts), at the same training loss and after temperature scaling, as a fraction "
               "of the same difference as trained: 1 if confidence explained none of it, 0 if all",
               "part of the gap is confidence: in (0, 1)", share, 0.0, 1.0, fmt=".2f", items="p6",
               bearing="qualifies", origin="prior: the edges 0 and 1 are the two extreme explanations",
               falsifier=r"a fraction $\le 0$ (matching loss and temperature reverses or removes the gap) or $\ge 1$ "
                         "(confidence explains none of it)")
ledger.above("p7r-noise-own-criterion", "P7", "added 2026-11-26: digits, clipped noise at severity 5: last-hidden-"
             "layer norm ratio, largest over depths and networks (the statistic of P7's first row); prediction P7 "
             r"failed if $\ge 1$: it does, but by a few percent on seeds 0-4 (margin below one spread): not resolved "
             "at this scale", "P7's criterion for clipped noise: $\\ge 1$", p7r_noise, 1.0, fmt=".2f", items="p7",
             bearing="qualifies", origin="prior: P7's own criterion, as committed before the first run; "
                                         "bearing qualifies after seeds 0-4",
             falsifier="every ratio under clipped noise below 1 (P7 holds for clipped noise)")

# %% [markdown]
# **What the runs show, compared fairly.** The deeper networks fit the training set much faster:
# the training cross-entropy that every network reaches, {glue:text}`p6r-target`, is reached by
# depth 8 after a few hundred steps and by depth 2 only at the end (checkpoints printed above),
# and they need larger temperatures (they are more confident for their accuracy). Compared at
# that loss and after temperature scaling, the deeper network still reverts faster in only
# {glue:text}`p6r-count` of the three shifts: P6 fails, the artifact-free way too. Confidence
# explains part of the first result, not all: the depth-8 minus depth-2 difference in the shrink
# factor, {glue:text}`p6r-gap-raw` as trained (mean over shifts), is {glue:text}`p6r-gap` at the
# same loss and temperature, a fraction {glue:text}`p6r-share` of it (seed 0; the
# {doc}`robustness page </book/robustness>` gives seeds 0-4; the shrink factors of each shift
# are printed above).
# By P7's own criterion clipped noise fails it, but only just: the largest ratio over depths and
# networks is {glue:text}`p7r-noise` (seed 0), above 1 on every seed 0-4 but within one spread of
# the threshold (robustness page); the mean ratio, {glue:text}`syn-p7-noise` on seed 0, says that
# clipped noise moves the late-layer norms little either way, far from the shrinkage under blur
# and contrast and from the growth under unclipped noise. P7 as written (all three shifts) fails on
# each seed run, narrowly; we do not count that as settled at this scale (the row qualifies P7),
# and we do not count the blur and contrast rows as support for the clipped-noise part.

# %% [markdown]
# ## Claims

# %% tags=["nbval-check-output"]
ledger.report()
