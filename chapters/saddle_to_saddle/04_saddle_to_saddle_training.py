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
# 1000, with initial standard deviation 1/width (the paper's 1/1000 at width 1000; at width 64
# each layer's gain $\sigma_0\sqrt w$ is 1/8 instead of the paper's 1/32, so the start is larger
# relative to the network than the paper's); {glue:text}`sts4-steps` SGD steps
# of batch 32 instead of 1000 epochs (about 1.9 million steps); and a step ten times the paper's
# in the time-changed units of Section 2.1 (below), so that the first escape happens within the
# budget ({doc}`06_first_escape_and_initial_scale` shows what this step does to smaller starts).
# The control runs are shorter. The `full` profile uses the paper's settings on real MNIST read from the local data
# folder (it needs a GPU; no GPU was available when this page was written, so its results are
# not shown here).
# :::
#
# ```{admonition} What to take away
# - **Figure 1's picture, not its mechanism.** Every depth-6 run sits on a plateau at the initial
#   loss $\log10$ (the saddle at the origin) for at least {glue:text}`sts4-origin-min` of the run
#   ({glue:text}`sts4-origin-t0` times the `ci` step count $T_0$), then drops to a second plateau.
#   With three times the steps that share falls ({glue:text}`sts4-origin-x3`), mostly because the
#   plateau detector's thresholds scale with the run; in units of $T_0$ the plateau is about as long
#   as at this budget ({glue:text}`sts4-origin-x3-t0`; somewhat shorter, as a plateau must be
#   flatter to count in a longer run). So the plateau is reproduced, its length as a share of the
#   run is a property of the budget (`origin-plateau` qualifies Fig. 1(a)). At the end of that
#   first drop the hidden layers are close to rank one, and the deeper ones more than the first,
#   as in Figure 1(b). But these runs do not leave the origin along an escape direction: from this
#   initial scale,
#   {doc}`06_first_escape_and_initial_scale` finds the direction far from any escape direction
#   when the loss starts to fall, with layers not yet rank one; the rank-one layers form during
#   the drop. So the observation of Figure 1(b) is reproduced, the paper's reading of it (an
#   escape along an optimal escape direction, Theorem 3.1) is not tested by these runs.
# - **On the second plateau** the deep layers stay rank one throughout, as Section 5's third
#   conjecture says of the layers an escape makes rank one; here they were made rank one by the
#   drop, not by an escape. That holds at this budget: with three times the steps it does not hold
#   on every seed ({glue:text}`sts4-conj3-x3`; why is not yet explained). Weak balancedness, the
#   paper's reason for the conjecture, holds at this step at the middle junctions (to
#   {glue:text}`sts4-junction-deep` between $W_3$ and $W_4$ and between $W_4$ and $W_5$) but is
#   broken at the first and the last junction: a qualified reproduction.
# - **Depth matters for the plateau at the origin, by how much depends on the detector.** At the
#   same entry scale depth-4 networks start with much larger outputs and leave the origin at
#   once. Started from the scale that matches depth 6's initial output norm they have a saddle at
#   the origin less often than depth 6 at every plateau window we tried, but how much less
#   depends on the window, and how staircase-like their loss is depends on the smoothing (tables
#   below): both comparisons are qualified.
# - **Not settled here.** The second escape and the second singular value that comes with it
#   (Figure 1(c)) happen in some runs within the budget and not in others, at ten times the
#   paper's step; what the paper's step does on the second plateau is measured on MNIST, for ten
#   times that page's budget, in {doc}`05_mnist` (section "The paper's step size").
# ```

# %% tags=["parameters"]
profile = "ci"          # "ci": digits, width 64, 7000 steps (CPU, under a minute); "full": the paper's MNIST run (GPU)
seed = 0
device = "auto"
allow_fallback = False  # profile "full" only: train on generated MNIST-1D if MNIST is not in the data folder

# %%
PROFILES = {
    # data: "digits" or "mnist"; width, std: hidden width and initial N(0, std^2); steps, batch;
    # steps4: steps of the depth-4 runs; eta: the time-changed step eta0 in (||theta|| / sqrt(L))^(2-L)
    # (10/36 is the paper's 10 / ||theta||^4 at depth 6); runs6: depth-6 networks (seeds, batched);
    # runs4: depth-4 networks at the scale of depth 6's entries, at the scale that matches depth
    # 6's initial output norm, and a third of that (one batched computation); min_plateau: the
    # shortest plateau, in steps; branch: steps of the 10x branch on the second plateau (the
    # paper's step runs ten times as many); control_*: the large-initialisation negative control;
    # probe: examples of the loss curve; record, uniform: log-spaced and equally spaced spectrum
    # records; segment: steps per cached segment (resumable full runs); windows: plateau windows
    # evaluated, as multiples of min_plateau (1.0 is the page's setting); smoothings: staircase
    # smoothings evaluated, in decades (0.05 is the page's setting)
    "ci": dict(data="digits", width=64, std=1 / 64, steps=7000, steps4=7000, batch=32, eta=100 / 36, runs6=8,
               runs4=(2, 4, 4), min_plateau=500, branch=300, control_std=2 ** 0.5 / 8, control_runs=2,
               control_steps=2000, probe=300, record=40, uniform=80, segment=None,
               windows=(0.2, 0.4, 1.0, 2.0), smoothings=(0.05, 0.1, 0.2)),
    "full": dict(data="mnist", width=1000, std=1e-3, steps=1_875_000, steps4=1_875_000, batch=32, eta=10 / 36,
                 runs6=1, runs4=(1, 1, 1), min_plateau=20_000, branch=20_000, control_std=2 ** 0.5 / 1000 ** 0.5,
                 control_runs=1, control_steps=200_000, probe=2000, record=300, uniform=200, segment=100_000,
                 windows=(0.2, 0.4, 1.0, 2.0), smoothings=(0.05, 0.1, 0.2)),
}

# %%
import json
import math

import matplotlib.pyplot as plt
import numpy as np
import torch
from myst_nb import glue

from implicit_bias import data, models, plotting, train
from implicit_bias.chapter import start_chapter
from implicit_bias.claims import Ledger
from implicit_bias.book import budget_table
from implicit_bias.saddle_to_saddle import bounds, staircase, structure, training
from implicit_bias.saddle_to_saddle import localized as lo

P, dev = start_chapter(PROFILES, profile=profile, seed=seed, device=device)
ledger = Ledger("saddle_to_saddle/04_saddle_to_saddle_training")
CHAPTER = "chapters/saddle_to_saddle/04_saddle_to_saddle_training"  # its key in the committed budget sweep
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
# take the same step in the time-changed dynamics near the origin. The depth-6 networks (seeds)
# and the depth-4 networks (below) train as one batched computation per depth, each run with
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
def run(depth: int, runs: int, std: float, steps: int, seed_offset: int = 0, scales=None) -> training.RunResult:
    config = training.RunConfig(depth=depth, width=P["width"], d_in=d_in, d_out=K, std=std, eta0=P["eta"],
                                steps=steps, batch_size=P["batch"], radius=math.sqrt(depth), runs=runs,
                                seed=1000 * seed + seed_offset, probe=P["probe"], record=P["record"],
                                uniform=P["uniform"], segment=P["segment"], scales=scales)
    return training.train_runs(config, X, y, use_cache=profile == "full", progress=False)


def initial_output_norm(depth: int) -> float:
    """Median ||Y|| on the probe examples of 64 draws at the entry scale std (depth d_0 -> w -> ... -> K)."""
    dims = [d_in] + [P["width"]] * (depth - 1) + [K]
    Ws = [W.to(dev) for W in models.gaussian_weights(dims, P["std"], (64,), generator=torch.Generator().manual_seed(seed),
                                                     dtype=X.dtype)]
    return float(models.layer_activations(Ws, X[probe_rows])[0][-1].flatten(1).norm(dim=1).median())


probe_rows = torch.randperm(N, generator=torch.Generator().manual_seed(seed))[: P["probe"]].to(dev)
out6, out4 = initial_output_norm(6), initial_output_norm(4)
alpha_match = (out6 / out4) ** 0.25                  # depth-4 outputs scale like alpha^4
groups4 = [(1.0, P["runs4"][0]), (alpha_match, P["runs4"][1]), (alpha_match / 3, P["runs4"][2])]
scales4 = tuple(a for a, n in groups4 for _ in range(n))
deep6 = run(6, P["runs6"], P["std"], P["steps"])
deep4 = run(4, len(scales4), P["std"], P["steps4"], seed_offset=4, scales=scales4)
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
rowsL = analyse(large, [3, 4, 5])
for name, rows in (("depth 6", rows6), ("depth 6, large init", rowsL)):
    for r, row in enumerate(rows):
        esc = f"escape ends at step {row['escape']:.0f} (loss {row['loss_at']:.3f}), s2/s1 there: W_1 " \
              f"{row['w1_at']:.2f}, deep layers {row['deep_at']:.2f}" if row["escape"] is not None else "no saddle at the origin"
        print(f"{name}, run {r}: origin plateau {row['origin_len']:.2f} of the run; {esc}; final loss "
              f"{row['final']:.3f}, deep s2/s1 {row['deep_end']:.2f}")

# %% [markdown]
# ## The plateau at the origin and the first escape
#
# Every depth-6 run stays at the initial loss $\log10\approx2.303$ for a long stretch (from
# {glue:text}`sts4-origin-min` to {glue:text}`sts4-origin-max` of the run; the shortest is
# {glue:text}`sts4-origin-t0` times $T_0=$ {glue:text}`sts4-t0` steps, the `ci` step count before
# any budget multiplier). The detector's thresholds scale with the run: a plateau's rate is
# measured against the initial loss over the whole run, and it must last 5% of the run after a
# smoothing over 2% of it. So with three times the steps a plateau must be three times flatter to
# count, and its share of the run falls ({glue:text}`sts4-origin-x3` in the committed budget
# sweep) while its length in units of $T_0$ changes much less ({glue:text}`sts4-origin-x3-t0`):
# the claim below reads the share, and qualifies Fig. 1(a) for that reason. Then the loss drops to
# a second plateau (at the end of the drop the loss is between {glue:text}`sts4-level-lo` and
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
frac_deeper = float(np.mean(w1_at > deep_at))          # NaN (no escape) counts as not deeper
levels_at = [row["loss_at"] for row in rows6 if row["escape"] is not None]
for key, val in {"origin-min": f"{min(origin6):.2f}", "origin-max": f"{max(origin6):.2f}",
                 "level-lo": f"{min(levels_at):.2f}", "level-hi": f"{max(levels_at):.2f}",
                 "control-runs": P["control_runs"],
                 "deep-med": f"{np.nanmedian(deep_at):.2f}", "w1-med": f"{np.nanmedian(w1_at):.2f}",
                 "init-ratio": f"{init_ratio:.2f}", "merged": merged, "runs6": P["runs6"]}.items():
    glue(f"sts4-{key}", val, display=False)
level_dev = max(abs(v - math.log(K)) for v in levels6) / math.log(K)
# the shortest origin plateau in units of T0, the profile's step count before the budget multiplier:
# the detector's thresholds scale with the run, so a share of the run falls with the budget even where
# the plateau keeps its length in steps; the committed budget runs (k times T0 steps) read the same way
T0 = PROFILES[profile]["steps"]
origin_t0 = min(origin6) * P["steps"] / T0
swept_runs, _ = budget_table.committed_claims(CHAPTER)
seed_sweep = budget_table.ROOT / "book" / "data" / "seed_sweep.json"       # the x1 runs of seeds 0-4
x1_runs = (json.loads(seed_sweep.read_text())["chapters"].get(CHAPTER, {}).get("claims", {})
           .get("origin-plateau", {}).get("runs", {}) if seed_sweep.exists() else {})
swept_origin = []                                  # per budget run: its shortest origin plateau in units of T0
for k_run, s_run in budget_table.RUNS:
    run_claims = swept_runs.get(budget_table.run_name(k_run, s_run), {})
    if "origin-plateau" in run_claims:
        x1 = x1_runs.get(str(s_run), {}).get("value")
        swept_origin.append(f"{budget_table.run_name(k_run, s_run)} {k_run * run_claims['origin-plateau']['value']:.2f} T0"
                            + (f" (x1: {x1:.2f} T0)" if x1 is not None else ""))
origin_x3_t0 = ", ".join(swept_origin) or "no committed budget run"
for key, val in {"t0": f"{T0:,}", "origin-t0": f"{origin_t0:.2f}", "origin-x3-t0": origin_x3_t0,
                 "origin-x3": budget_table.budget_readings(CHAPTER, "origin-plateau")}.items():
    glue(f"sts4-{key}", val, display=False)
ledger.above("origin-plateau", "Fig. 1(a)", "every depth-6 run sits on a plateau for at least 10% of the run "
             "before its first drop (shortest plateau as a share of the run). At 3x the steps the share falls below 0.1 "
             f"({budget_table.budget_readings(CHAPTER, 'origin-plateau')}, committed budget sweep), mostly because the "
             "detector's thresholds scale with the run (a rate against the initial loss over the run, a length of 5% "
             "and a smoothing of 2% of it), so at 3x a plateau must be three times flatter to count; in units of the "
             f"ci step count T0 = {T0:,} steps the shortest plateau is about as long, somewhat shorter as a flatter "
             f"plateau is asked for ({origin_x3_t0}; this run: {origin_t0:.2f} T0). It qualifies Fig. 1(a): the "
             "plateau is there, its share of the run is a property of the budget",
             "a plateau at the saddle at the origin",
             min(origin6), 0.1, fmt=".2f", items="fig1", bearing="qualifies", proxy=True, vtol=0.12,
             origin="after-seeds: pilots on seeds 0-4 gave 0.23 or more",
             falsifier="a depth-6 run whose plateau at the origin lasts less than 10% of the run (or is not found)")
ledger.below("origin-level", "Fig. 1(a)", "... at the initial loss $\\log 10$ (largest relative gap of a plateau's level "
             "to $\\log 10$; a plateau from step 0 of outputs of order 1e-5 sits there by construction: a check of the "
             "detector)", "the saddle at the origin", level_dev, 0.01, fmt=".1e", items="fig1", bearing="control",
             origin="prior")
ledger.below("rank-one-escape", "Fig. 1(b)", "after the first escape one singular value dominates the deep layers "
             "(median over runs of the mean $s_2/s_1$ of $W_4,\\dots,W_6$)", "a single dominant singular value in every layer",
             np.nanmedian(deep_at), 0.3, fmt=".2f", items=["fig1", "fig3"], bearing="supports", proxy=True, vtol=0.06,
             origin="after-seeds: pilots on seeds 0-4 gave about 0.15; random matrices about 0.95",
             falsifier="a median mean $s_2/s_1$ of $W_4,\\dots,W_6$ of 0.3 or more at the end of the first drop")
ledger.holds("deeper-more-rank-one", "Fig. 1(b), Fig. 3", "... more than in the first layer: in most runs $s_2/s_1(W_1)$ "
             "exceeds the mean over $W_4,\\dots,W_6$ (share of runs; their median difference)",
             "particularly pronounced in layers 4-6", f"{frac_deeper:.2f}; {np.nanmedian(w1_at - deep_at):.2f}",
             frac_deeper >= 0.75, tolerance="share >= 0.75", items=["fig1", "fig3"], bearing="supports", proxy=True,
             value=frac_deeper, lo=0.75, vtol=0.25,
             origin="after-seeds: first the median difference > 0.1 (pilots 0.2-0.3; margin 1.4 over seeds 0-4); "
             "restated as a share of runs after a review",
             falsifier="fewer than three quarters of the runs with $s_2/s_1(W_1)$ above the mean of $W_4,\\dots,W_6$ there")
large_saddles = sum(row["found"].n_saddles for row in rowsL)
large_origin = max(row["origin_len"] for row in rowsL)
large_deep = min(row["deep_end"] for row in rowsL)
ledger.holds("large-init-control", "Fig. 1, negative control", "from the usual initial scale there is no plateau "
             "at the origin and the deep layers stay far from rank one (longest origin plateau; smallest final "
             "deep $s_2/s_1$)", "-", f"{large_origin:.2f}; {large_deep:.2f}", large_origin == 0.0 and large_deep > 0.5,
             tolerance="0; > 0.5", items="fig1", bearing="control", value=large_deep, lo=0.5, origin="prior")

# %% [markdown]
# ## On the second plateau, and after it
#
# Section 5's third conjecture: the rank-one layers of the first escape stay rank one until the
# next saddle. We take, for every run, the second plateau as the detector finds it (the plateau
# after the first drop; {glue:text}`sts4-n-p2` of the {glue:text}`sts4-runs6` runs have one) and
# the **largest** mean $s_2/s_1$ of layers 4-6 over all the spectra recorded on it, not only its
# end: {glue:text}`sts4-p2-max` at most, against about {glue:text}`sts4-init-ratio` at
# initialisation. The deep layers stay rank one over the whole plateau, and the first layer is
# the least rank-one (second figure below). This is a reading at this budget: with three times
# the steps, the committed budget sweep gives {glue:text}`sts4-conj3-x3`, and where it fails a
# record on the second plateau has a mean $s_2/s_1$ of layers 4-6 above 0.3 (a second singular
# value has grown while the detector still counts the run as on that plateau); why is not yet
# explained. The conjecture is about the layers that an escape along an escape direction makes
# rank one; in these runs the layers became rank one during the
# drop ({doc}`06_first_escape_and_initial_scale`), so the claim below qualifies it rather than
# reproducing it.
#
# Figure 1(c) of the paper shows a second dominant singular value at the end of training, after
# a second drop. Here, {glue:text}`sts4-escaped-text` How many runs escape the second saddle
# within {glue:text}`sts4-steps` steps depends on the seed, so this half of Figure 1(c) is not
# checked at this scale (no claim rests on it); the `full` profile trains long enough for it.

# %%
p2_max, n_p2 = [], 0
ratio6 = training.second_over_first(deep6)                               # (K, runs, L)
steps_arr = torch.tensor(deep6.spectra_steps, dtype=torch.float64)
for r, row in enumerate(rows6):
    if row["escape"] is None:
        continue
    later = [(a, b) for a, b in row["found"].plateaus if a >= row["escape"]]
    if not later:
        continue
    a, b = later[0]
    inside = (steps_arr >= a) & (steps_arr <= b)
    if bool(inside.any()):
        n_p2 += 1
        p2_max.append(float(ratio6[inside, r][:, [3, 4, 5]].mean(-1).max()))
plateau_max = max(p2_max, default=float("nan"))
escaped = [row for row in rows6 if row["final"] <= 1.2]
escaped_ratio = min((row["deep_end"] for row in escaped), default=float("nan"))
escaped_text = (f"{len(escaped)} of the {P['runs6']} networks got below loss 1.2 within the budget, and at the end "
                f"their deep layers have s2/s1 of at least {escaped_ratio:.2f}."
                if escaped else f"none of the {P['runs6']} networks got below loss 1.2 within the budget.")
for key, val in {"n-p2": n_p2, "p2-max": f"{plateau_max:.2f}", "escaped-text": escaped_text,
                 "conj3-x3": budget_table.budget_readings(CHAPTER, "conj3-stays-rank-one")}.items():
    glue(f"sts4-{key}", val, display=False)
ledger.holds("conj3-stays-rank-one", "Sec. 5 (3)", "on the second plateau the deep layers stay rank one throughout "
             "(runs with a second plateau; largest mean $s_2/s_1$ of $W_4,\\dots,W_6$ over every record on it); their rank one "
             "formed during the drop, not at an escape direction (chapter 6). At 3x the steps: "
             + budget_table.budget_readings(CHAPTER, "conj3-stays-rank-one")
             + " (committed budget sweep): where it fails, a record on the second plateau has a mean $s_2/s_1$ of "
             "$W_4,\\dots,W_6$ above 0.3, so with more steps the deep layers do not stay rank one over the whole "
             "detected plateau in every run; why is not yet explained",
             "rank-one layers remain rank one until the next saddle", f"{n_p2}; {plateau_max:.2f}",
             n_p2 >= 1 and plateau_max <= 0.3, tolerance=">= 1; <= 0.3", items="conj3",
             bearing="qualifies", proxy=True, value=plateau_max, hi=0.3, vtol=0.08,
             origin="after-seeds: 0.3, as for rank-one-escape (first 0.2 on the end point; seed 3 gave 0.19)",
             falsifier="no run with a second plateau, or a record on one with mean $s_2/s_1$ of $W_4,\\dots,W_6$ above 0.3")

# %% [markdown]
# ## Weak balancedness, and the step size
#
# The paper's argument for the third conjecture rests on *weak balancedness*: gradient flow
# conserves, for every hidden neuron $i$ of layer $\ell$, the difference
# $\lVert W_{\ell+1}[:,i]\rVert^2-\lVert W_\ell[i,:]\rVert^2$. One step of gradient descent with
# step $\eta$ changes it by exactly $\eta^2(\lVert g_{\ell+1}[:,i]\rVert^2-\lVert
# g_\ell[i,:]\rVert^2)$ (`staircase.neuron_imbalance`; unit-tested), so it drifts by
# $O(\eta^2)$ per step. How much does it drift in these runs, whose step is ten times the paper's?
# From initialisation to the end, the largest change of a neuron's difference over all
# junctions is {glue:text}`sts4-drift-lo` to {glue:text}`sts4-drift-hi` times the mean squared
# norm of a neuron's incoming weights (one value per run). That maximum hides where the drift
# happens. Junction by junction (the hidden layer between $W_\ell$ and $W_{\ell+1}$; the largest
# change of a neuron's difference over the mean squared incoming norm of that layer, median over
# runs; `staircase.junction_imbalance_drift`): {glue:text}`sts4-junction-table`. So weak
# balancedness is broken most at {glue:text}`sts4-junction-worst` (median
# {glue:text}`sts4-junction-worst-val`) and at the first junction, and holds to
# {glue:text}`sts4-junction-deep` at the middle junctions, $W_3|W_4$ and $W_4|W_5$. The deep
# layers that stay rank one on the second plateau, $W_4$ to $W_6$, are thus tied to each other by
# a junction where it holds and one where it does not: at this step the run neither shows the
# paper's mechanism at work nor rules it out.
#
# **A step-size control.** From the end of the runs that are still on the second plateau
# ({glue:text}`sts4-n-branch` of them), we continue training for the same time $s$ of Section 2.1
# in two ways: {glue:text}`sts4-branch` steps at this step, and ten times as many at the paper's
# step. Over the same $s$-time the imbalance drifts {glue:text}`sts4-drift-ratio` times less at
# the paper's step (median over the runs), more than the factor 10 that the $\eta^2$ per step
# alone predicts (ten times fewer $s$-units per step); the loss moves by at most {glue:text}`sts4-branch-move` in either branch,
# and the largest mean $s_2/s_1$ of layers 4-6 is {glue:text}`sts4-branch-big` at ten times the
# paper's step and {glue:text}`sts4-branch-small` at the paper's. So over this window the step
# size does not decide whether a run leaves the second plateau; why the runs at ten times the
# paper's step leave it within a few thousand steps is not resolved. On MNIST
# ({doc}`05_mnist`, last section) runs continued from the second plateau at the paper's step for
# ten times that page's budget are the measurement of what the paper's step does there.

# %%
drift6 = staircase.relative_imbalance_drift([W.double() for W in deep6.initial], [W.double().cpu() for W in deep6.weights])
jdrift6 = staircase.junction_imbalance_drift([W.double() for W in deep6.initial], [W.double().cpu() for W in deep6.weights])
jmed = jdrift6.median(0).values                                          # (L-1,): junction W_l|W_l+1, median over runs
print("per junction W_l|W_l+1, median over runs of the largest change / mean squared incoming norm:",
      [f"{float(v):.3g}" for v in jmed])
jnames = [f"W{l + 1}|W{l + 2}" for l in range(len(jmed))]          # plain text: glued into prose
glue("sts4-junction-table", "; ".join(f"{n}: {float(v):.3g}" for n, v in zip(jnames, jmed)), display=False)
glue("sts4-junction-worst", jnames[int(jmed.argmax())], display=False)
glue("sts4-junction-worst-val", f"{float(jmed.max()):.1f}", display=False)
glue("sts4-junction-deep", f"{100 * float(jmed[2:4].max()):.1f}%", display=False)
on2 = torch.tensor([row["final"] >= 1.6 for row in rows6])
start = [W[on2.to(W.device)].clone() for W in deep6.weights]
branch = {}
for name, eta, n in (("big", P["eta"], P["branch"]), ("small", P["eta"] / 10, 10 * P["branch"])):
    Wb = [W.clone() for W in start]
    hist = train.train_norm_adaptive(Wb, X, y, loss="ce", steps=n, eta0=eta, radius=math.sqrt(6), batch_size=P["batch"],
                                     generator=torch.Generator(device=dev).manual_seed(seed + 77),
                                     record_steps=[round(n * f / 10) for f in range(11)],
                                     metrics={"probe": lambda ws: torch.nn.functional.cross_entropy(
                                         models.layer_activations(ws, X[probe_rows])[0][-1].transpose(1, 2),
                                         y[probe_rows].expand(ws[0].shape[0], -1), reduction="none").mean(1),
                                         "deep": lambda ws: torch.stack([torch.linalg.svdvals(W.double())[:, 1]
                                                                         / torch.linalg.svdvals(W.double())[:, 0]
                                                                         for W in ws[3:]], -1).mean(-1)},
                                     progress=False)
    curve = hist.stacked("probe").double()
    branch[name] = dict(drift=staircase.relative_imbalance_drift([W.double().cpu() for W in start],
                                                                 [W.double().cpu() for W in Wb]),
                        move=float((curve - curve[0]).abs().max()), deep=float(hist.stacked("deep").max()))
drift_ratio = float((branch["big"]["drift"] / branch["small"]["drift"]).median()) if bool(on2.any()) else float("nan")
print(f"imbalance drift from init to the end (depth 6): {[f'{float(v):.2g}' for v in drift6]}; branches on the second "
      f"plateau ({int(on2.sum())} runs): drift {[f'{float(v):.1e}' for v in branch['big']['drift']]} (10x) and "
      f"{[f'{float(v):.1e}' for v in branch['small']['drift']]} (paper's step), median ratio {drift_ratio:.1f}; "
      f"largest loss change {branch['big']['move']:.3f} / {branch['small']['move']:.3f}; largest deep s2/s1 "
      f"{branch['big']['deep']:.3f} / {branch['small']['deep']:.3f}")
for key, val in {"drift-lo": f"{float(drift6.min()):.1f}", "drift-hi": f"{float(drift6.max()):.1f}",
                 "n-branch": int(on2.sum()), "branch": f"{P['branch']:,}", "drift-ratio": f"{drift_ratio:.0f}",
                 "branch-move": f"{max(branch['big']['move'], branch['small']['move']):.2f}",
                 "branch-big": f"{branch['big']['deep']:.2f}", "branch-small": f"{branch['small']['deep']:.2f}"}.items():
    glue(f"sts4-{key}", val, display=False)
ledger.above("weak-balance-broken", "Sec. 5 (3), setting", "at ten times the paper's step, weak balancedness is not "
             "maintained at every junction: at the junction where it drifts most, the largest change of a neuron's "
             "imbalance exceeds the mean squared incoming norm of that layer (median over runs)",
             "weak balancedness (conserved by gradient flow)", float(jmed.max()), 1.0,
             fmt=".2f", items="conj3", bearing="control", origin="prior", vtol=5.0,
             falsifier="every junction's median drift below the mean squared incoming norm")
ledger.below("weak-balance-deep-junctions", "Sec. 5 (3), setting", "... but at the middle junctions (between $W_3$ and $W_4$, "
             "and between $W_4$ and $W_5$) it holds: the largest change of a neuron's imbalance is below 5% "
             "of the mean squared incoming norm (larger median over runs of the two junctions)",
             "weak balancedness (conserved by gradient flow)", float(jmed[2:4].max()), 0.05, fmt=".3f", items="conj3",
             bearing="control", vtol=0.05,
             origin="after-seeds: 5%; a reading of about 1.3% at these junctions on seed 0 was known when it was set",
             falsifier="a median drift of 5% or more at either middle junction")
ledger.above("balance-step-control", "Sec. 5 (3), control", "over the same s-time on the second plateau the imbalance "
             "drifts several times less at the paper's step (median ratio 10x step / paper's step)", "$O(\\eta^2)$ per step",
             drift_ratio, 3.0, fmt=".1f", items="conj3", bearing="control",
             origin="prior: 3, below the 10 that $\\eta^2$ per step alone predicts",
             vtol=15.0)

# %% [markdown]
# ## Depth 4 against depth 6 (Figure 4), deconfounded
#
# With the same entry scale (standard deviation 1/width) a depth-4 network starts with much larger
# outputs than a depth-6 one (median initial output norm {glue:text}`sts4-out4` against
# {glue:text}`sts4-out6` on the probe examples: two fewer layers that each shrink the signal). So
# besides {glue:text}`sts4-n4-1` depth-4 runs at that scale, we train, in the same batched
# computation and for as many steps as the depth-6 runs, {glue:text}`sts4-n4-m` from the scale
# $\alpha=$ {glue:text}`sts4-alpha-m` that matches depth 6's initial output norm, and
# {glue:text}`sts4-n4-s` from a third of it. Two measures that do not depend on the length of the
# run:
#
# - a **plateau of absolute length**: the loss falls by less than 1% of its first value over
#   {glue:text}`sts4-min-plateau` steps (`staircase.plateaus_abs`), and a saddle at the origin is
#   such a plateau from step 0 followed by a drop of at least 5%;
# - the **staircase share**: the share of the loss decrease that happens inside drops shorter
#   than 0.3 decade on a log-step axis (`staircase.staircase_share`; 1 for sudden drops between
#   plateaus, below 0.2 for exponential or power-law decays in the unit tests).
#
# Both measures rest on an analysis setting that the paper does not have (it judges plateaus by
# eye): the plateau window and the smoothing. The tables printed below evaluate them, on the same
# runs, at the page's setting and its neighbours (windows {glue:text}`sts4-windows` steps;
# smoothings {glue:text}`sts4-smoothings` decade), and the claims read every column.
#
# Every depth-6 run has a saddle at the origin at every window (shortest plateau
# {glue:text}`sts4-d6-plat` steps), and at the same entry scale no depth-4 run has one. **With the
# initial output norm matched, fewer depth-4 runs have one, and how many depends on the window**
# (at {glue:text}`sts4-min-plateau` steps: {glue:text}`sts4-d4m-sad`; share of runs with one at
# the windows of the table: {glue:text}`sts4-d4m-row`): the depth-4 runs leave the origin within
# {glue:text}`sts4-d4m-leave` steps, so a short window counts their brief plateau and a long one
# does not. The staircase shares (medians, at 0.05 decade) are {glue:text}`sts4-share6` at depth 6
# and {glue:text}`sts4-share4` at depth 4 (entry scale 1, matched, a third). Whether depth 4's
# drops count as sudden is decided by the smoothing: at the matched scale its median share is
# {glue:text}`sts4-share4m-row` at smoothings {glue:text}`sts4-smoothings`, against
# {glue:text}`sts4-share6-row` at depth 6. So depth 6 has the longer plateau at the origin and the
# more staircase-like loss at every setting we tried, as the paper says, but the size of both
# gaps is a property of the detector, not only of the networks. From a third of the matched
# scale, {glue:text}`sts4-d4s-text`

# %%
def origin_saddle(result: training.RunResult, r: int, window: float | None = None) -> float:
    """Length in steps of the run's saddle at the origin (0 if none), with the absolute detector
    and the plateau window ``window`` steps (default: the page's min_plateau)."""
    found = staircase.plateaus_abs(result.spectra_steps, result.loss_curve[r], min_steps=window or P["min_plateau"])
    return next((b - a for a, b in found.saddles if a == 0), 0.0)


def share(result: training.RunResult, r: int, smooth: float = 0.05) -> float:
    return min(1.0, staircase.staircase_share(result.spectra_steps, result.loss_curve[r], smooth=smooth).share)


leave = lambda res, r: next((s for s, v in zip(res.spectra_steps, res.loss_curve[r]) if v < 0.99 * math.log(K)), None)
sad6 = [origin_saddle(deep6, r) for r in range(P["runs6"])]
share6 = [share(deep6, r) for r in range(P["runs6"])]
bounds4 = np.cumsum([0] + [n for _, n in groups4])
g4 = [list(range(bounds4[i], bounds4[i + 1])) for i in range(3)]
sad4 = [[origin_saddle(deep4, r) for r in g] for g in g4]
left4 = [[leave(deep4, r) is not None for r in g] for g in g4]
share4 = [[share(deep4, r) for r, ok in zip(g, lf) if ok] for g, lf in zip(g4, left4)]
frac = lambda xs: float(np.mean([x > 0 for x in xs]))
small_left = sum(left4[2])
small_sad = sum(1 for x, ok in zip(sad4[2], left4[2]) if ok and x > 0)
d4s_text = (f"{small_left} of {len(g4[2])} runs leave the origin within the budget, {small_sad} of them after a saddle "
            f"of at least {P['min_plateau']} steps" + (
                "." if small_left == len(g4[2]) else " (the others stay at log 10: the step, ten times the paper's, "
                "can freeze small starts, see the page on the first escape and the initial scale)."))
print(f"initial output norms: depth 6 {out6:.2e}, depth 4 {out4:.2e}: matched scale {alpha_match:.3f}")
print(f"depth 6: origin saddles {[round(v) for v in sad6]} steps, staircase shares {[round(v, 2) for v in share6]}")
for (a, n), sd, lf, sh in zip(groups4, sad4, left4, share4):
    print(f"depth 4, alpha {a:.3g}: origin saddles {[round(v) for v in sd]} steps; left the origin {lf}; "
          f"staircase shares {[round(v, 2) for v in sh]}")
med = lambda xs: float(np.median(xs)) if xs else float("nan")
# the analysis settings and their neighbours, on the same runs (no retraining)
windows = [round(f * P["min_plateau"]) for f in P["windows"]]
win_tab = {w: (frac([origin_saddle(deep6, r, w) for r in range(P["runs6"])]),
               [frac([origin_saddle(deep4, r, w) for r in g]) for g in g4]) for w in windows}
smooth_tab = {sm: (med([share(deep6, r, sm) for r in range(P["runs6"])]),
                   [med([share(deep4, r, sm) for r, ok in zip(g, lf) if ok]) for g, lf in zip(g4, left4)])
              for sm in P["smoothings"]}
print("share of runs with a saddle at the origin, by plateau window (steps):")
print(f"{'window':>8}{'depth 6':>10}" + "".join(f"{'d4, a=' + format(a, '.2g'):>12}" for a, _ in groups4))
for w, (f6, f4) in win_tab.items():
    print(f"{w:>8}{f6:>10.2f}" + "".join(f"{v:>12.2f}" for v in f4) + ("   <- page" if w == P["min_plateau"] else ""))
print("median staircase share, by smoothing (decades):")
print(f"{'smooth':>8}{'depth 6':>10}" + "".join(f"{'d4, a=' + format(a, '.2g'):>12}" for a, _ in groups4))
for sm, (m6, m4) in smooth_tab.items():
    print(f"{sm:>8.2f}{m6:>10.2f}" + "".join(f"{v:>12.2f}" for v in m4) + ("   <- page" if sm == 0.05 else ""))
entry_gap = min(f6 - f4[0] for f6, f4 in win_tab.values())
matched_gaps = {w: f6 - f4[1] for w, (f6, f4) in win_tab.items()}
stair_gaps = {sm: m6 - m4[1] for sm, (m6, m4) in smooth_tab.items()}
d4m_leave = max(((leave(deep4, r) or P["steps4"]) for r, x in zip(g4[1], sad4[1]) if x == 0), default=0)
for key, val in {"out6": f"{out6:.1e}", "out4": f"{out4:.1e}", "alpha-m": f"{alpha_match:.2f}", "n4-1": len(g4[0]),
                 "n4-m": len(g4[1]), "n4-s": len(g4[2]), "min-plateau": P["min_plateau"],
                 "d6-plat": f"{min(sad6):,.0f}", "d4m-leave": d4m_leave,
                 "d4m-sad": f"{sum(x > 0 for x in sad4[1])} of {len(g4[1])}", "share6": f"{med(share6):.2f}",
                 "share4": ", ".join(f"{med(x):.2f}" for x in share4), "d4s-text": d4s_text,
                 "windows": ", ".join(str(w) for w in windows),
                 "smoothings": ", ".join(f"{sm:g}" for sm in P["smoothings"]),
                 "d4m-row": ", ".join(f"{f4[1]:.2f}" for _, f4 in win_tab.values()),
                 "share4m-row": ", ".join(f"{m4[1]:.2f}" for _, m4 in smooth_tab.values()),
                 "share6-row": ", ".join(f"{m6:.2f}" for m6, _ in smooth_tab.values())}.items():
    glue(f"sts4-{key}", val, display=False)
ledger.holds("depth-distinct-plateaus", "Sec. 5, Fig. 4", "at the same entry scale every depth-6 run has a saddle at "
             f"the origin and no depth-4 run has one, at every plateau window from {min(windows)} to {max(windows)} "
             "steps (smallest over the windows of the share with one at depth 6 minus that at depth 4); confounded "
             "with the initial output scale", "plateaus more distinct at depth 6 than at depth 4",
             f"{entry_gap:.2f}", entry_gap == 1.0, tolerance="1 at every window", items=["sec5-depth", "fig4"],
             bearing="qualifies", proxy=True, value=entry_gap, lo=0.99, vtol=0.3, origin="prior",
             falsifier="at some window, a depth-4 run at the entry scale with a saddle at the origin or a depth-6 run "
                       "without one")
ledger.holds("depth-matched-output", "Sec. 5, Fig. 4", "with depth 4's initial output norm matched to depth 6's, "
             "depth-6 runs have a saddle at the origin more often than depth-4 runs at every plateau window (smallest "
             "difference of the shares with one over the windows; the difference at each window, from "
             f"{min(windows)} to {max(windows)} steps); how much more depends on the window",
             "ReLU networks need depth for distinct plateaus",
             f"{min(matched_gaps.values()):.2f}; " + ", ".join(f"{v:.2f}" for v in matched_gaps.values()),
             min(matched_gaps.values()) > 0, tolerance="> 0 at every window", items=["sec5-depth", "fig4"],
             bearing="qualifies", proxy=True, value=min(matched_gaps.values()), lo=0.0, vtol=0.3,
             origin="after-seeds: first 'none at depth 4' (seed 0), then a difference >= 0.5 at 500 steps; a review "
                    "found that on its threshold at 200 steps and failing at 100, so it is read at every window",
             falsifier="at some window, depth-4 runs at the matched scale with a saddle at the origin at least as "
                       "often as depth-6 runs")
ledger.above("depth-staircase", "Sec. 5, Fig. 4", "depth 6 is more staircase-like than depth 4 at the matched output "
             "scale at every smoothing, by a margin the smoothing decides (smallest over the smoothings of the median "
             "staircase share, depth 6 minus depth 4; the table shows each)", "plateaus more distinct at depth 6",
             min(stair_gaps.values()), 0.0, fmt=".2f", items=["sec5-depth", "fig4"], bearing="qualifies", proxy=True,
             vtol=0.15, origin="prior",
             falsifier="at some smoothing, a median staircase share at depth 4 (matched scale) at least depth 6's")

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
             "sphere (largest lhs - rhs)", "$\\le0$ for every $\\theta$ in the ball", max(gaps) if gaps else float("nan"),
             1e-9, fmt=".2f", items="prop34", bearing="control", origin="theory")

# %%
r0 = 0
row0 = rows6[r0]
steps6 = np.array(deep6.spectra_steps)
fig, axes = plotting.subplots(3, height=2.7)
ax = axes[0]
for r in range(P["runs6"]):
    ax.plot(steps6, deep6.loss_curve[r].numpy(), color=plotting.color(0), lw=0.9, alpha=0.5 if r else 1.0)
for r, a in enumerate(scales4):
    ax.plot(deep4.spectra_steps, deep4.loss_curve[r].numpy(), color=plotting.color(1 + [g[0] for g in groups4].index(a)),
            lw=0.9, alpha=0.5)
ax.plot([], [], color=plotting.color(0), label="depth 6")
for i, (a, _) in enumerate(groups4):
    ax.plot([], [], color=plotting.color(1 + i), label=rf"depth 4, $\alpha$ = {a:.2g}")
fig_spectra, fig_depth4 = training.finish_figure1(axes, deep6, deep4, r0, row0["k1"], "after the first escape")
for key, one_fig in (("loss", fig), ("spectra", fig_spectra), ("depth4", fig_depth4)):
    glue(f"sts4-fig-{key}", one_fig, display=False)
    plt.close(one_fig)

# %% [markdown]
# ```{glue:figure} sts4-fig-loss
# :name: fig-sts4-loss
# Figure 1 of the paper at this scale. Left: the training loss (on the probe examples) of the
# depth-6 runs (blue; the first run darker) and of the depth-4 runs (other colours: entry
# scale 1, the scale matching depth 6's initial output norm, and a third of it). Centre
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
# At this scale the loss curve and spectra of the first saddle-to-saddle step of the paper's
# MNIST experiment are seen on digits: a long plateau at the origin (whose share of the run falls
# with more steps because the detector's thresholds scale with the run, while its length in steps
# changes much less), a drop, a second plateau on which the deep layers are nearly rank one throughout
# (more than the first layer; with three times the steps not in every run, not yet explained). The
# mechanism the paper attaches to them is not: the runs do not leave the origin along an escape
# direction, and their layers become rank one during the drop
# ({doc}`06_first_escape_and_initial_scale`), so Figure 1(b)'s observation is reproduced and the
# third conjecture only qualified. Depth 4 has no plateau at the origin at the same entry scale;
# at the same initial output norm it has one less often than depth 6 at every plateau window, and
# a less staircase-like loss at every smoothing, by margins the window and the smoothing decide (a
# smaller start gives more depth-4 runs a plateau). The large step breaks weak balancedness at
# the first and the last junction ({glue:text}`sts4-junction-worst` most), while at the middle
# junctions $W_3|W_4$ and $W_4|W_5$ it holds to {glue:text}`sts4-junction-deep`. The second escape and its second singular
# value are seen only in the runs that get there within the budget. These are proxies: digits
# instead of MNIST, width 64
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
# first run of this page: they do, briefly, as they leave the origin. **Restated after a third
# review:** `depth-matched-output` first asked for a difference of at least 0.5 between the shares
# of depth-6 and depth-4 runs with a saddle at the origin at the 500-step window; at 200 steps it
# sat on that threshold and at 100 it failed, so it now asks for a positive difference at every
# window of the table and is `qualifies`; `depth-staircase` said depth 4 is "only slightly" less
# staircase-like, true at 0.05 decade and false at 0.1 and 0.2, so it now reads every smoothing.
# `conj3-stays-rank-one` is `qualifies`: the layers it follows were made rank one by the drop,
# not by an escape along an escape direction. Chaotic SGD runs give a
# different trajectory on another CPU, as another seed would, so the claims on them compare values
# across machines with a tolerance (`vtol`) about the spread over seeds 0-4 rather than the
# default 10%. **Added after a review**
# (thresholds stated before their first run): the absolute plateau length
# ({glue:text}`sts4-min-plateau` steps, a little under a tenth of the depth-6 runs' shortest
# origin plateau in the pilots), the staircase share's parameters (drops faster than twice the
# average rate and shorter than 0.3 decade; set on synthetic curves in the unit tests), "weak
# balancedness broken" as a drift above the mean squared neuron norm, and the step-size control's
# factor 3 (the $\eta^2$ scaling predicts 10). `conj3-stays-rank-one` now takes the largest ratio
# over the whole second plateau instead of its end point, with the same threshold. **Restated in
# a second review:** `deeper-more-rank-one` first required the median difference of $s_2/s_1$
# between the first layer and layers 4-6 to exceed 0.1 (pilots: 0.2-0.3); over seeds 0-4 it sat
# 1.4 spreads from that threshold, so it now counts the runs in which the first layer is less
# rank-one than layers 4-6 (at least three quarters of them). `origin-level` and
# `weak-balance-broken` are now controls: the first holds by construction for a plateau that
# starts from outputs of order $10^{-5}$, the second is a fact about this step, not about the
# paper. **Restated in the specialist review** (issue 29): `weak-balance-broken` first read the
# largest change over all junctions (above the mean squared neuron norm), and the page concluded
# that weak balancedness is far from maintained; junction by junction it holds at the middle
# junctions, so that row now reads the junction where it breaks, and `weak-balance-deep-junctions`
# (5%, set knowing a reading of about 1.3% on seed 0) records where it holds. **Restated after the
# budget sweep** (issue 28; no threshold or value changed): `origin-plateau` says why its share
# falls with three times the steps (the detector's thresholds scale with the run) and gives the
# plateau's length in units of $T_0$, and `conj3-stays-rank-one` reads the budget sweep, where it
# does not pass on every seed.
#
# ## Claims

# %% tags=["nbval-check-output"]
ledger.report()
