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
# # Five lenses on one family of networks
#
# Each of the five papers of this book looks at deep ReLU networks trained by gradient methods
# and sees one face of a bias toward low-dimensional structure: conserved quantities that keep
# the layers balanced and aligned {cite:p}`le2022training`, low-rank weights
# {cite:p}`timor2023implicit`, a bottleneck of rank-$k$ partial isometries in the middle of deep
# regularised networks {cite:p}`jacot2023bottleneck`, plateaus from small initialisation that are
# escaped one rank at a time {cite:p}`bantzis2025saddle`, and predictions that fall back to the
# optimal constant solution (OCS) as inputs leave the training distribution
# {cite:p}`kang2024extrapolate`. None of the papers measures the other faces. This page trains
# **one family** of multilayer perceptrons, as a few batched computations, and reads the faces off
# the same runs with the measuring tools of the parts: the conserved quantities and neuron
# invariants of `implicit_bias.invariances`, the ratio $\lVert W\rVert_2/\lVert W\rVert_F$ of
# `implicit_bias.rank_minimization`, the learned rank of `implicit_bias.bottleneck`, and the
# escape directions of `implicit_bias.saddle_to_saddle`. The alignment of adjacent layers and the
# norm against depth (P4 and P5) are read off the same networks on the next page,
# {doc}`04_alignment_and_depth`. The extrapolation lens (predictions P6 and P7, on digits) has its
# own page, {doc}`02_depth_and_reversion`, and so has a question that
# needs two papers (P8), {doc}`03_pauses_and_minima`; the {doc}`map </book/map>` shows how the
# papers' objects connect.
#
# The family: ReLU MLPs of width $w$ and depth $L$ (number of weight matrices), trained by full-batch
# gradient descent with the engines of `implicit_bias.train` and `implicit_bias.ensembles`.
#
# | arm | task | biases | initialisation | $L_2$ | depths (`ci`) | what it is for |
# |---|---|---|---|---|---|---|
# | **small** | synthetic, bottleneck rank $k=2$ | none | small (saddle-to-saddle regime) | none | 4, 6 | plateaus, order of the singular values, conserved quantities |
# | **reg** | same task | yes (as Jacot) | standard ($\times1.5$) | $\lambda$ small | 4, 6, 8, 10 | learned rank, bottleneck, norm against depth |
# | **plain** | same task | none | standard ($\times1.5$) | none | 4, 8 | controls (no regularisation, no small init) |
#
# The synthetic task is Jacot's (Appendix E of {cite:t}`jacot2023bottleneck`, built by
# `implicit_bias.bottleneck.tasks`): inputs $x=g(z)\in\mathbb R^{20}$ of a latent
# $z\in\mathbb R^8$, targets $y=h(z_1,z_2)\in\mathbb R^{20}$, so the map $x\mapsto y$ factors
# through two dimensions.

# %% [markdown]
# :::{admonition} What this page shows
# Seven predictions were written before the runs (P3, P4 and P6 connect two papers; P1 is the
# saddle-to-saddle paper's own conjecture, that the plateaus climb in bottleneck rank, measured
# with the bottleneck paper's learned rank; P2, P5 and P7 are one paper's own statement measured on
# these networks); a review (2026-11-26) found that several first failures were artifacts of how
# they were measured, and a second review (the same day) that some verdicts rested on a setting
# chosen after seeing the runs. The rows as first written stay; rows added after the review
# measure the same predictions without the artifacts. On seeds 0-4
# ({doc}`robustness page </book/robustness>`):
# - **The regularised networks are not certified minima, at this budget or at 3 times it.** P1 and
#   P3(b) are about the end state of $L_2$ training, a minimum of the regularised loss. Continued at
#   half their training step (`synthesis.arms.certify_minima`), these networks still move (their
#   squared norm by 3-4% over 1000 steps at depths 4 and 6), so those readings are **not resolved
#   at this budget**; the numbers below describe the networks as trained.
# - **P1 is not resolved.** The first report, "fewer at every depth", compared two thresholds. With
#   P1's own threshold 0.5 in both arms, at every depth where both arms fit, the counts differ on
#   seeds 0, 1, 2 and 4, not on seed 3; at depth 6 the small-initialisation networks have the task's
#   bottleneck rank, 2, and the regularised ones 3.
# - **P2 is not resolved at this scale.** The update $W-W_0$ is close to rank one when it first
#   grows (the first row's second direction was the random initial bulk), but at depth 4 the first
#   two directions appear almost together, and the runs do not leave along an escape direction of
#   the saddle at the origin: the initialisation is not small enough for the theory.
# - **P3(a) fails at the runs' own step and, by its own 5% criterion, holds at a smaller step on
#   seeds 0 and 1 only** (spread 0.09 to 0.13 on seeds 2-4; the step was chosen after the failure,
#   so the row qualifies P3); the conservation law behind it holds at that step on every seed (a
#   control). **P3(b) is not resolved**: by its own bound (within 20% of the learned rank) the
#   middle layers pass on seeds 0, 3 and 4 and fail on seeds 1 and 2, and the networks are neither
#   certified minima nor critical points, where balance is a theorem.
# - **P4 and P5**, on the same networks: {doc}`04_alignment_and_depth`.
# - P6 and P7 (digits): {doc}`02_depth_and_reversion`; P8, a question that needs two papers:
#   {doc}`03_pauses_and_minima`.
# :::

# %% [markdown]
# ## Predictions, written before the runs
#
# These predictions were written (and committed) before this chapter was executed for the first
# time; the git history of this file is the evidence. Pilot runs on seed 0's synthetic task, done
# while choosing the settings of the **small** arm (initialisation scale and number of steps, so
# that training escapes the origin within the CPU budget), had shown that at depth 4 the
# singular values of the middle layer rise one after the other while the loss curve shows only one
# long plateau. Each prediction names the outcome that makes it **fail**; a failed prediction
# stays on this page, with the claim rewritten to state what the runs show (bearing
# `contradicts`).
#
# **P1 (saddles and bottleneck count the same thing).** From small initialisation without
# regularisation, the middle weight matrix acquires its singular values one at a time; the number
# of values it acquires (singular values above 0.5 at the end, Jacot's threshold 0.1 being too
# low for an unregularised network) equals the rank that the regularised network of the *same
# depth* learns (the number of singular values above 0.1 of its middle weight matrix, the most
# common value over seeds). *Fails if* the two numbers differ at a depth where both arms fit.
#
# **P2 (one direction per plateau).** From small initialisation the singular values of the middle
# layer appear in order, separated in time: $s_1$ crosses $0.5$ at least 5% of the run before
# $s_2$ does, and when $s_1$ crosses, the layer is close to rank one ($s_2/s_1<0.3$), the
# rank-one escape of {cite:t}`bantzis2025saddle`. *Fails if* in any run two values cross within
# 5% of the run or $s_2/s_1\ge0.3$ at the first crossing.
#
# **P3 (the layer norms gradient flow keeps equal are the ones the bottleneck theory predicts).**
# (a) Without regularisation, gradient descent keeps every difference
# $\lVert W_{\ell+1}\rVert_F^2-\lVert W_\ell\rVert_F^2$ at its initial value (a conserved
# quantity of bias-free ReLU networks): from small initialisation the final layer norms agree to
# within 5% of their mean. (b) With $L_2$ regularisation the critical points are balanced, and in
# the bottleneck the layers are rank-$k$ partial isometries, so $\lVert W_\ell\rVert_F^2\approx k$:
# in the deepest regularised networks that fit, the middle layers have
# $\lVert W_\ell\rVert_F^2$ within 20% of the learned rank, and the summed balancedness residual
# is below 5% of $\lVert\theta\rVert^2/L$. *Fails if* any of these bounds is exceeded.
#
# **P4** (alignment and rank) and **P5** (norm against depth) are quoted as written, and tested on
# the same networks, on {doc}`04_alignment_and_depth`.
#
# **P6** and **P7**, on digits, are quoted as written on {doc}`02_depth_and_reversion`, which
# tests them.

# %% [markdown]
# ## Added on 2026-11-26, after review
#
# A review (issue #21) found that several failures above are artifacts of how the predictions
# were measured. Their rows and verdicts stay; **new rows**, marked "added 2026-11-26", measure the
# same predictions without the artifact, each in the section of its prediction: P1 counted with
# **one** threshold in both arms, on what training wrote (the update $W-W_0$ from small
# initialisation, whose random initial bulk reaches about 0.2, and $W$ with $L_2$, whose initial
# weights decay by a factor below $e^{-8}$ at depths 4 and 6); P2(b) on the update, with
# log-spaced records early in the run, and the saddle-to-saddle part's test of an escape direction
# (`saddle_to_saddle.localized.kkt_residual`); P3(a) with a smaller step, since gradient descent
# conserves the differences of layer norms only up to terms of order $\eta^2$ per step (Appendix F
# of {cite:t}`le2022training`); P3(b) checked against its hypothesis, a critical point of the
# regularised loss. Where a new row's threshold or statistic was chosen knowing the reviewer's
# findings, its `origin` says so.
#
# A question that needs two papers, **P8** (added 2026-11-26, written and committed before its
# first run), has its own page: {doc}`03_pauses_and_minima`.

# %% tags=["parameters"]
profile = "ci"   # "ci": CPU, about a minute; "full": deeper and wider networks (GPU, cached, resumable)
seed = 0
device = "auto"

# %%
PROFILES = {
    # n: synthetic training points; width: hidden width; k: bottleneck rank of the task; small_*:
    # depths, initial N(0, std^2) weights, norm-adaptive step eta0 (per depth), GD steps of the small
    # arm; record: its uniform record interval (plus log-spaced records early in the run); slow_*:
    # the small arm repeated at the deepest small depth with step eta0 = slow_eta and slow_factor
    # times the steps (P3(a), added 2026-11-26); reg_*: depths, lambda, steps, init scale of the
    # regularised arm (lr = 2 / L everywhere); reg_fixed: the depth at which P3(b) and P4 read the
    # regularised arm (restated on 2026-11-26: it was "the deepest depth where every network fits", which
    # changes with the CPU kernel); plain_*: the unregularised standard-init control; seeds: networks per cell;
    # cert_rate, cert_window: the regularised arm's minimum certificate (arms.certify_minima) at the fixed rate
    # cert_rate x the training rate 2 / L over cert_window steps (not scaled by the budget)
    "ci": dict(n=128, width=32, k=2, small_depths=(4, 6), small_std=0.02, small_eta=(0.3, 1.5), small_steps=8000,
               record=40, slow_eta=0.5, slow_factor=3, reg_depths=(4, 6, 8, 10), lam=5e-3, reg_steps=5000,
               reg_init=1.5, reg_fixed=6, plain_depths=(4, 8), plain_steps=3000, seeds=3, cert_rate=0.5,
               cert_window=1000, cache=False),
    "full": dict(n=1000, width=256, k=2, small_depths=(4, 6, 8), small_std=0.005, small_eta=(0.3, 1.5, 1.5),
                 small_steps=60_000, record=100, slow_eta=0.5, slow_factor=3, reg_depths=tuple(range(4, 25, 2)),
                 lam=1e-3, reg_steps=60_000, reg_init=1.5, reg_fixed=12, plain_depths=(4, 8, 12), plain_steps=20_000, seeds=5,
                 cert_rate=0.5, cert_window=5000, cache=True),
}

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch
from myst_nb import glue

from implicit_bias import cache, models, plotting, train
from implicit_bias.bottleneck import structure, tasks
from implicit_bias.chapter import start_chapter
from implicit_bias.claims import Ledger
from implicit_bias.invariances import invariants
from implicit_bias.synthesis import arms
from implicit_bias.synthesis.arms import as_params, mode
from implicit_bias.synthesis.lenses import (conserved_drift, crossings, fit_cost, objective_gradient_ratio,
                                            relative_spread, update_counts_and_escapes)

P, dev = start_chapter(PROFILES, profile=profile, seed=seed, device=device)
ledger = Ledger("synthesis/01_five_lenses")
D = torch.float64
K = P["k"]
task = tasks.bottleneck_rank_task(P["n"], 256, k=K, seed=seed)
X, Y = task.X, task.Y
d_in, d_out = X.shape[1], Y.shape[1]
seeds = [100 * seed + s for s in range(P["seeds"])]
mid = structure.middle_index
for key in ("n", "width", "seeds", "lam", "small_steps", "reg_steps", "slow_eta", "slow_factor"):
    glue(f"syn-{key}", P[key], display=False)
glue("syn-small-depths", ", ".join(map(str, P["small_depths"])), display=False)
glue("syn-reg-depths", ", ".join(map(str, P["reg_depths"])), display=False)

# %% [markdown]
# :::{important}
# **What profile `ci` cuts.** Width {glue:text}`syn-width`, $N=$ {glue:text}`syn-n` synthetic
# points, {glue:text}`syn-seeds` seeds per cell; the small arm at depths
# {glue:text}`syn-small-depths` ({glue:text}`syn-small_steps` steps), the regularised arm at depths
# {glue:text}`syn-reg-depths` with $\lambda=$ {glue:text}`syn-lam` ({glue:text}`syn-reg_steps`
# steps; Jacot uses $\lambda=10^{-3}$ and depths past 20). Profile `full` goes to depth 24 with
# width 256 and five seeds; it needs a GPU, is resumable through `implicit_bias.cache`, and was
# **not run** for this page (no GPU was available). This page trains the regularised arm only at
# the depths it reads (those of the small arm); {doc}`04_alignment_and_depth` reads all of them.
# :::
#
# ## The runs
#
# The **small** arm records the top singular values of the middle weight matrix
# $W_{\lceil L/2\rceil}$ and of its update $W-W_0$, the squared norms of Lemma 4's layer cuts
# (`invariances.invariants.cut_norms`: here the $\lVert W_\ell\rVert_F^2$) and the weights, at
# every few steps; the other arms are measured at the end.

# %%
# the regularised arm at the depths this page reads: those of the small arm (P1) and the fixed depth (P3(b));
# its other depths are read on 04_alignment_and_depth
reg_read = sorted(set(P["small_depths"]) | {P["reg_fixed"]})
small, reg, plain = arms.build_arms(P, X, Y, seed, seeds, dev, reg_depths=reg_read)
L_slow = max(P["small_depths"])
slow = cache.cached("synthesis-small-slow", dict(L=L_slow, eta0=P["slow_eta"], factor=P["slow_factor"], seeds=seeds,
                                                 **{k: P[k] for k in ("n", "width", "small_steps", "small_std",
                                                                      "record")}),
                    lambda: arms.train_small(X, Y, L_slow, P["slow_eta"], P["slow_factor"] * P["small_steps"],
                                             width=P["width"], std=P["small_std"], seed=seed, n_nets=len(seeds),
                                             record=P["record"], device=dev, snapshots=False),
                    enabled=P["cache"])

# %% [markdown]
# ## Saddles and the bottleneck: P1 and P2
#
# For every small-initialisation run: the training loss, and the four largest singular values of
# the middle weight matrix against time. The plateau detector `train.detect_plateaus` counts the
# saddles on the loss curve; the crossing times of $s_i=0.5$ give the order in which the singular
# values appear. The rows of the predictions read the records every {glue:text}`syn-record` steps,
# as when they were written.

# %%
glue("syn-record", P["record"], display=False)
rows = []
fig, axes = plotting.subplots(ncols=2, nrows=len(small), height=2.6 * len(small))
axes = np.asarray(axes).reshape(len(small), 2)
for j, (L, run) in enumerate(small.items()):
    uni = run["steps"] % P["record"] == 0          # the records of the predictions' rows
    T, loss_u, s_u = run["steps"][uni], run["loss"][:, uni], run["s"][uni]
    for r in range(len(seeds)):
        cross = crossings(s_u[:, r])
        first = int(cross[0]) if np.isfinite(cross[0]) else len(T) - 1
        found = train.detect_plateaus(T, loss_u[r], floor=0.0)
        acquired = int(structure.layer_ranks([run["W"][mid(L)][r]], 0.5)[0])
        rows.append(dict(L=L, r=r, saddles=found.n_saddles, acquired=acquired, gap=(cross[1] - cross[0]) / len(T),
                         ratio_at_first=float(s_u[first, r, 1] / s_u[first, r, 0]),
                         fit=float(loss_u[r, -1] / loss_u[r, 0])))
        axes[j, 0].semilogy(T, loss_u[r], color=plotting.color(r), lw=1)
        for i in range(4):
            axes[j, 1].plot(T, s_u[:, r, i], color=plotting.color(i), lw=1, alpha=0.8,
                            label=f"$s_{i + 1}$" if r == 0 else None)
    axes[j, 0].set(title=f"small init, L={L}: training loss", xlabel="step")
    axes[j, 1].axhline(0.5, color="grey", ls=":", lw=1)
    axes[j, 1].set(title=f"L={L}: top singular values of the middle layer", xlabel="step")
axes[0, 1].legend(fontsize=8)
plt.show()

learned = {L: structure.layer_ranks(run.weights, 0.1)[:, mid(L)] for L, run in reg.items()}
# added (issue 28): are the regularised networks at a minimum? continue each at a fixed rate below the training rate
certified = {L: arms.certify_minima(run, X, Y, P["lam"], P["cert_rate"] * 2.0 / L, P["cert_window"]) for L, run in reg.items()}
for row in rows:
    print(f"L={row['L']} seed {row['r']}: saddles on the loss curve {row['saddles']}, singular values "
          f"acquired {row['acquired']}, gap s1->s2 {row['gap']:.2f} of the run, s2/s1 at first crossing "
          f"{row['ratio_at_first']:.2f}, final/initial loss {row['fit']:.3f}")
for L in reg:
    print(f"regularised L={L}: learned ranks {learned[L].tolist()}, train cost {[round(float(c), 3) for c in reg[L].cost]}; "
          f"minimum certificate: {certified[L][1].describe()}")
n_cert = {L: int(ok.sum()) for L, (ok, _) in certified.items()}
glue("syn-cert", "; ".join(f"$L={L}$: {n} of {len(seeds)}" for L, n in n_cert.items()), display=False)
glue("syn-cert-worst", f"{max(float(c.rel_change.view(len(seeds), -1)[:, 0].max()) for _, c in certified.values()):.3f}",
     display=False)

# %% [markdown]
# **P1** compares, depth by depth, the singular values the small-init network acquires with the
# learned rank of the regularised network of the same depth; the rows added on 2026-11-26 count
# both arms with one threshold on what training wrote, measure P2(b) on the update $W-W_0$, and
# apply the saddle-to-saddle part's test of an escape direction when each loss has fallen by 5%.

# %%
p1_pairs = [(L, mode([row["acquired"] for row in rows if row["L"] == L]), mode(learned[L]))
            for L in P["small_depths"] if L in learned]
p1_not_fewer = sum(a >= b for _, a, b in p1_pairs)
glue("syn-p1-pairs", "; ".join(f"$L={L}$: {a} against {b}" for L, a, b in p1_pairs), display=False)
ledger.below("p1-fewer-than-l2-rank", "P1", "depths where the small-init network acquires at least as many singular "
             "values (mode, > 0.5) as the L2 network of the same depth learns (mode, > 0.1); prediction P1 said equal "
             "at every depth; the two thresholds differ (see p1r-*)", "P1 fails: fewer at every depth", p1_not_fewer,
             0.5, fmt=".0f", items="p1", bearing="qualifies",
             origin="after-seeds: restated as P1's failure after seeds 0-4; relabelled qualifies after the review of "
                    "2026-11-26 (a threshold artifact)",
             falsifier="at some depth the small-init network acquires at least as many values (> 0.5) as the L2 "
                       "network learns (> 0.1)")
p2_gap = min(row["gap"] for row in rows)
p2_ratio = max(row["ratio_at_first"] for row in rows)
glue("syn-p2-gap", f"{p2_gap:.2f}", display=False)
glue("syn-p2-ratio", f"{p2_ratio:.2f}", display=False)
ledger.below("p2-not-one-at-a-time", "P2", "small init: time from $s_1$ to $s_2$ crossing 0.5, fraction of the run "
             "(smallest over runs); prediction P2 said > 0.05 in every run; the runs are not in P2's regime "
             "(p2r-no-escape-direction)", "P2 fails: < 0.05 in some run", p2_gap, 0.05, fmt=".2f", items="p2",
             bearing="qualifies", origin="after-seeds: restated as P2's failure after seed 0 (the bound 0.05 is "
                                         "P2's); relabelled qualifies on 2026-11-26",
             falsifier="in every run $s_2$ crosses 0.5 at least 5% of the run after $s_1$ (P2(a) holds)")
ledger.above("p2-not-rank-one", "P2", "small init: $s_2/s_1$ of the middle layer $W$ when $s_1$ crosses 0.5 (largest "
             "over runs); prediction P2 said < 0.3 in every run (bound 0.2 set after seeds 0-4)",
             "P2 fails: second direction $\\ge 0.2$ of the first", p2_ratio, 0.2, fmt=".2f", items="p2",
             bearing="qualifies", origin="after-seeds: 0.2 set after seeds 0-4 (P2 said 0.3); relabelled qualifies "
                                         "after the review of 2026-11-26 (it measures the initial bulk)",
             falsifier="$s_2/s_1$ < 0.2 at the first crossing in every run (the layer is close to rank one)")
ledger.above("small-arm-escapes", "control", "small init: singular values above 0.5 acquired by the middle layer "
             "(smallest over runs): every run leaves the origin (control restated after seeds 0-4)", "$\\ge 1$",
             min(row["acquired"] for row in rows), 0.5, fmt=".0f", items="p2", bearing="control",
             origin="after-seeds: replaced a loss-ratio control after seeds 0-4 (some depth-6 runs end on a plateau)")

TAUS, L_top = (0.1, 0.5), min(P["small_depths"])
# (tau, L) -> (mode of the small arm's update counts, of the L2 counts); one dict per small run
p1r, p2r = update_counts_and_escapes(small, reg, X, Y, TAUS, len(seeds))
for L in small:
    print(f"L={L}: update s2/s1 when its s1 reaches 0.5, per run {[round(x['ratio'], 2) for x in p2r if x['L'] == L]}; "
          f"KKT residual at loss -5% {[round(x['kkt'], 2) for x in p2r if x['L'] == L]}")
small_cost = max(fit_cost(small[L_top]["W"], X, Y), float(reg[L_top].cost.max()))
p1r_shallow = min(p1r[tau, L_top][0] - p1r[tau, L_top][1] for tau in TAUS)
p1r_jacot = p1r[0.1, L_top][0] - p1r[0.1, L_top][1]
# added 2026-11-26, second review: P1's criterion (the counts differ at a depth where both arms fit) at every depth
# of the small arm, one threshold for both arms; "fit": training cost C < 0.1 for every network of both arms
cost_max = {L: max(fit_cost(small[L]["W"], X, Y), float(reg[L].cost.max())) for L in small}
both_fit = [L for L in small if cost_max[L] < 0.1]
p1r_fails = [tau for tau in TAUS if any(p1r[tau, L][0] != p1r[tau, L][1] for L in both_fit)]
glue("syn-p1r-fit", ", ".join(map(str, both_fit)) or "none", display=False)
glue("syn-p1r-nfail", len(p1r_fails), display=False)
print(f"largest training cost C over both arms, by depth: { {L: round(c, 3) for L, c in cost_max.items()} }; "
      f"both arms fit at depths {both_fit}; thresholds at which P1's counts differ at such a depth: {p1r_fails}")
p2r_median = float(np.median([row["ratio"] for row in p2r]))
for key, val in (("p1r-table", "; ".join(f"threshold {t}, $L={L}$: {a} against {b}" for (t, L), (a, b) in p1r.items())),
                 ("p2r-ratio", f"{max(row['ratio'] for row in p2r):.2f}"), ("p2r-median", f"{p2r_median:.2f}"),
                 ("p2r-kkt", f"{min(row['kkt'] for row in p2r):.2f}"), ("p1-top", L_top),
                 ("p2r-r0", f"{max(row['r0'] for row in p2r):.2f}")):
    glue(f"syn-{key}", val, display=False)
print("one threshold for both arms (small init: update; L2: weights), modes (small, L2):", p1r)
ledger.above("p1r-shallow-not-fewer", "P1", f"added 2026-11-26: one threshold for both arms (0.1 and 0.5), on what "
             f"training wrote: at depth {L_top}, singular values of the small-init update minus those of the L2 "
             "network (modes), smallest over the two thresholds: the first row's 'fewer' is a threshold artifact",
             "not fewer: $\\ge 0$", p1r_shallow, -0.5, fmt=".0f", items="p1", bearing="qualifies",
             origin="after-seeds: the review (2026-11-26) had seen that one threshold reverses the first row",
             falsifier=f"with one of the two thresholds the small-init update has fewer values than the L2 network at "
                       f"depth {L_top}")
ledger.above("p1r-jacot-threshold-differs", "P1", f"added 2026-11-26: Jacot's threshold 0.1 for both arms: at depth "
             f"{L_top}, where both fit, singular values of the small-init update minus those of the L2 network "
             "(modes); prediction P1 said equal, but counted the unregularised arm above 0.5, 0.1 being too low for "
             "it; with 0.5 in both arms the counts are equal on some seeds (relabelled qualifies on 2026-11-26, "
             "second review)", "more from small init (at 0.1)", p1r_jacot, 0.5, fmt=".0f",
             items="p1", bearing="qualifies",
             origin="after-seeds: 0.1 chosen for this row because with 0.5 the depth-4 counts are equal on some "
                    "seeds (review prototypes, seeds 0-3); the bound, equal counts, is P1's",
             falsifier=f"at 0.1 the small-init update has no more values than the L2 network at depth {L_top}")
# restated (issue 29): the row counted the thresholds under which P1 fails, and with 0.1, which P1 had ruled out for the
# unregularised arm, the counts always differ, so it passed whether or not P1 held; now P1's own threshold 0.5 alone,
# read only where the L2 networks are certified minima (P1 is about the rank the regularised network learns)
p1r_differ_05 = [L for L in both_fit if p1r[0.5, L][0] != p1r[0.5, L][1]]
p1_cert = all(n_cert[L] == len(seeds) for L in both_fit)
glue("syn-p1r-differ", ", ".join(map(str, p1r_differ_05)) or "none", display=False)
ledger.above("p1r-differs-some-depth", "P1", "P1's own criterion with P1's own threshold, 0.5, in both arms (restated "
             "under issue 29: it counted the thresholds, 0.1 included, under which the counts differ, and passed "
             "whether or not P1 held): depths where both arms fit ($C < 0.1$ for every network) at which the counts "
             "(modes, small-init update against L2 weights) differ; " + (
                 "the L2 networks are certified minima there" if p1_cert else
                 "not resolved at this budget: the L2 networks are not certified minima (arms.certify_minima)") +
             "; over seeds 0-4 the counts differ on seeds 0-2 and 4, not on seed 3 (robustness page)",
             "P1 fails: counts differ at $\\ge 1$ depth", len(p1r_differ_05), 0.5, fmt=".0f", items="p1",
             bearing="qualifies",   # fails on seed 3 of the sweep: qualifies even where the minima are certified
             origin="after-seeds: P1's criterion and threshold; depth 6 included after seeing seed 0's depth-6 "
                    "costs and counts (second review, 2026-11-26); restated to the threshold 0.5 alone under issue 29",
             falsifier="with 0.5 in both arms the counts are equal at every depth where both arms fit (P1 holds)")
ledger.below("p1r-both-fit", "control", f"added 2026-11-26: depth {L_top}: training cost $C$ of both arms (largest over "
             "networks): both fit, as P1's test requires", "< 0.1 (the bottleneck part's fit)", small_cost, 0.1,
             fmt=".3f", items="p1", bearing="control", origin="prior: the bottleneck part's threshold")
ledger.below("p2r-update-rank-one", "P2", "added 2026-11-26: small init: $s_2/s_1$ of the middle layer's update "
             "$W-W_0$ when its $s_1$ first reaches 0.5 (fine records), median over runs; P2(b) said < 0.3 in every "
             "run (the runs are printed above)", "rank one in most runs: < 0.3", p2r_median, 0.3, fmt=".2f",
             items="p2", bearing="qualifies",
             origin="after-seeds: P2(b)'s bound; the median over runs chosen after the review's runs (2026-11-26)",
             falsifier="median $s_2/s_1 \\ge 0.3$: the update is not close to rank one when it first grows")
ledger.above("p2r-no-escape-direction", "control", "added 2026-11-26: small init: KKT residual of the direction "
             "$\\theta/\\lVert\\theta\\rVert$ when the loss has fallen by 5% (saddle part's test: 0 on an escape direction), "
             "smallest over runs: the runs are not in the regime of Bantzis et al.", "> 0.5",
             min(row["kkt"] for row in p2r), 0.5, fmt=".2f", items="p2", bearing="control",
             origin="after-seeds: seed 0 gave 0.69 to 1.14")

# %% [markdown]
# **P1 and P2, what the runs show.** As the prediction counted them, the singular values acquired
# from small initialisation against the rank learned with $L_2$: {glue:text}`syn-p1-pairs` (seed
# 0). Counted with one threshold on what training wrote: {glue:text}`syn-p1r-table` (seed 0). At
# depth {glue:text}`syn-p1-top`, where both arms fit, the small-initialisation network has *at
# least as many* directions as the regularised one with either threshold (seeds 0-4 on the
# {doc}`robustness page </book/robustness>`): the first row's "fewer at every depth" came from
# counting the two arms with different thresholds. Whether the counts are *equal*, as P1 says, is
# not resolved at this scale, though the runs lean against it. At depth 4, with P1's own threshold
# for the unregularised arm, 0.5, in both arms, they are equal on some of seeds 0-4 and differ by
# one on the others (`p1r-shallow-not-fewer` keeps the smaller difference of the two thresholds;
# the difference at 0.1 is the larger on every seed, so its values, 0 or 1, are the differences at
# 0.5). With Jacot's threshold 0.1 the small-initialisation update has more values
# (`p1r-jacot-threshold-differs`), but P1 had ruled that threshold out for an unregularised
# network, whose update has many small directions, and the row chose it after seeing the 0.5
# counts; it qualifies P1, it does not contradict it. P1's criterion is not about depth 4 alone:
# it fails if the counts differ at *any* depth where both arms fit. On seed 0 both arms fit at
# depths {glue:text}`syn-p1r-fit` (largest training cost $C$ below 0.1, printed above). With P1's
# own threshold 0.5 in both arms the counts differ at depths {glue:text}`syn-p1r-differ` (seed 0):
# at depth 6 the small network has 2 values above 0.5, the task's bottleneck rank, and the
# regularised one 3. Over seeds 0-4 (`p1r-differs-some-depth`) they differ on seeds 0, 1, 2 and
# 4, not on seed 3 (there a depth-6 small run is still on a plateau, so depth 6 does not count, and
# the depth-4 counts agree). That row used to count the thresholds, 0.1 included, under which the
# counts differ; with 0.1 they always differ (the unregularised update has many small directions),
# so it passed whether or not P1 held; it now reads 0.5 alone and fails where the counts agree. The
# regularised networks of depth 4 are themselves far from the task's bottleneck rank 2 (seed 0:
# their learned ranks are printed above), so at this scale neither count is the bottleneck rank
# that P1 (and the saddle paper's conjecture behind it) is about.
#
# **Are the regularised networks at a minimum?** P1 counts the rank the regularised network
# *learns*, an end state. `synthesis.arms.certify_minima` continues each network on a copy at a
# fixed rate, half the training step $2/L$, for 1000 steps, and certifies it when its squared norm
# moves by less than 1% and the counts of its middle singular values above 0.1 and 0.5 do not
# change. Certified, by depth: {glue:text}`syn-cert` (seed 0; largest change of the squared norm
# {glue:text}`syn-cert-worst`; the certificates are printed above). A targeted run outside this
# page (seed 0: the regularised arm built as here by `bottleneck.sweeps.depth_sweep`, then
# `convergence.stationarity` on the squared norm alone, window 1000) shows why the rate is below the
# training step: at $2/L$ itself the same networks pass (their norm changes by at most 0.4% at
# depths 4 and 6), with a relative gradient of 26 to 45, so gradient descent at $2/L$ holds them
# in an oscillation, not at a minimum (the rate was chosen after seeing that). More steps at the
# same rate do not resolve it: with 3 times the steps (`reg_steps` 15000, what
# `IMPLICIT_BIAS_BUDGET=3` gives) the networks still move at half the step by 3.2-4.0% at depth 4
# and 2.5-2.9% at depth 6, and 1 of 3 is certified at depth 8 (that run too is outside this page,
# seed 0 only). The committed budget sweep ({doc}`robustness page </book/robustness>`) has no run of
# the synthesis pages yet, so it adds nothing here. Plainly: too few regularised networks are
# certified minima, at this budget or at 3 times it, for any prediction about their end state (P1,
# P3(b), the $L_2$ half of P4, P5, P8) to be decided; P1's rows therefore **qualify** P1: not
# resolved at this budget.
#
# P2's records say that the first two singular values of $W$ cross 0.5 within
# {glue:text}`syn-p2-gap` of the run of each other, and that $s_2/s_1$ reaches
# {glue:text}`syn-p2-ratio` when $s_1$ crosses. The update $W-W_0$ is close to rank one when it
# first reaches 0.5 (median $s_2/s_1$ {glue:text}`syn-p2r-median` over the runs, the largest
# {glue:text}`syn-p2r-ratio`, seed 0): the first row's $s_2$ was mostly the initial bulk. But the
# runs are not in the regime where P2 is a theorem: when the loss has fallen by 5%, the direction
# of the parameters has a KKT residual of at least {glue:text}`syn-p2r-kkt` as an escape direction
# of the saddle at the origin (0 on one, about 1 for a generic direction), because the
# initialisation is not small on the theory's scale ($\lVert\theta_0\rVert\approx$
# {glue:text}`syn-p2r-r0` $\sqrt L$). The rows of P2 therefore qualify it (not resolved at this
# scale) rather than contradict it.

# %% [markdown]
# ## Conserved quantities and balancedness: P3
#
# For a bias-free ReLU network, gradient flow conserves
# $\lVert W_{\ell+1}\rVert_F^2-\lVert W_\ell\rVert_F^2$ for every $\ell$, the invariant of Lemma 4's
# layer cuts (`invariances.invariants.cut_norms`); gradient descent with a finite step conserves it
# up to terms of order the step squared. With $L_2$ regularisation, every critical point is
# balanced neuron by neuron: the invariant $Q_v=\lVert\mathrm{in}_v\rVert^2-\lVert\mathrm{out}_v\rVert^2$
# of every hidden neuron, biases counted as in-weights (`invariances.invariants.neuron_invariants`),
# is 0; and Jacot's bottleneck layers are rank-$k$ partial isometries, whose squared Frobenius
# norm is $k$.

# %%
spread_small = torch.cat([relative_spread(run["norms"][-1]) for run in small.values()])
drift = torch.cat([conserved_drift(run["norms"]) for run in small.values()])
cuts_plain = {L: invariants.layer_cuts(models.MLP(d_in, d_out, P["width"], L, bias=False)) for L in plain}
spread_plain_init = torch.cat([relative_spread(invariants.cut_norms(as_params(init), cuts_plain[L], batch_dims=1))
                               for L, (init, _) in plain.items()])
# restated 2026-11-26: a depth fixed in the profile, no longer "the deepest depth where every network fits", a
# selection that moved from 6 to 8 with the CPU kernel (seed 0) and took the rows below with it
L_deep = P["reg_fixed"]
run = reg[L_deep]
k_deep = mode(learned[L_deep])
k_own = learned[L_deep].to(D)[:, None]     # each network's own learned rank (restated 2026-11-26, was the mode)
mids = range(2, L_deep - 2)      # layers 3..L-2 (1-based): away from both ends
mid_norms = torch.stack([run.weights[l].pow(2).sum((-2, -1)) for l in mids], -1)   # (seeds, layers)
mid_norm_err = float(((mid_norms - k_own).abs() / k_own).max())
groups = invariants.neuron_groups(models.MLP(d_in, d_out, P["width"], L_deep), count_bias=True)
Q = invariants.neuron_invariants(as_params(run.weights, run.biases), groups, batch_dims=1)
bal_layers = torch.stack([q.sum(-1).abs() / (run.sqnorm / L_deep) for q in Q.values()], -1)   # (seeds, L - 1)
bal_rel = float(bal_layers.max())
# added 2026-11-26: the same spread at a step eta0 <= slow_eta (depth 4 as run above, the deepest depth rerun)
spread_slow = torch.cat([relative_spread(small[L]["norms"][-1]) for L, eta in zip(P["small_depths"], P["small_eta"])
                         if eta <= P["slow_eta"] and L != L_slow] + [relative_spread(slow["norms"][-1])])
drift_slow = float(conserved_drift(slow["norms"]).max())
drift_small_step = max([drift_slow] + [float(conserved_drift(small[L]["norms"]).max())
                                       for L, eta in zip(P["small_depths"], P["small_eta"])
                                       if eta <= P["slow_eta"] and L != L_slow])
fit_slow = float((slow["loss"][:, -1] / slow["loss"][:, 0]).max())
slow_escaped = int((structure.layer_ranks([slow["W"][mid(L_slow)]], 0.5) >= 1).sum())
# added 2026-11-26: distance from a critical point of (1/2)(C + lambda ||theta||^2), relative to lambda ||theta||
grad_rel = objective_gradient_ratio(run, X, Y, P["lam"])
glue("syn-p3-spread", f"{float(spread_small.max()):.3f}", display=False)
glue("syn-p3-drift", f"{float(drift.max()):.1e}", display=False)
glue("syn-p3-Ldeep", L_deep, display=False)
glue("syn-p3-norm-err", f"{mid_norm_err:.2f}", display=False)
glue("syn-p3-bal", f"{bal_rel:.2f}", display=False)
glue("syn-p3-slow-spread", f"{float(spread_slow.max()):.3f}", display=False)
glue("syn-p3-slow-drift", f"{drift_small_step:.1e}", display=False)
glue("syn-p3-grad", f"{grad_rel:.0f}", display=False)
print(f"small init: final layer-norm spread (largest) {float(spread_small.max()):.3f}; drift of the conserved "
      f"differences relative to the mean layer norm (largest) {float(drift.max()):.2e}")
print(f"small init at eta0 <= {P['slow_eta']} (depth {L_slow}: {P['slow_factor']} x the steps): spread (largest) "
      f"{float(spread_slow.max()):.3f}; drift at depth {L_slow} {drift_slow:.2e}; final/initial loss {fit_slow:.3f}")
print(f"control, standard init: layer-norm spread at initialisation (smallest) {float(spread_plain_init.min()):.2f}")
print(f"regularised L={L_deep} (learned rank {k_deep}): middle-layer ||W||_F^2 per seed "
      f"{mid_norms.numpy().round(2).tolist()}, balancedness residual / (||theta||^2/L) {bal_rel:.3f}; per layer "
      f"(largest over seeds) {bal_layers.max(0).values.numpy().round(3).tolist()}; gradient of the objective / "
      f"(lambda ||theta||) (smallest over seeds) {grad_rel:.1f}")
ledger.above("p3a-norms-not-equal", "P3(a)", "small init, no L2: (max - min) / mean of the final layer norms "
             "$\\lVert W_l\\rVert_F^2$ (largest over runs); prediction P3(a) said < 0.05", "P3(a) fails: $\\ge 0.05$ in some run",
             float(spread_small.max()), 0.05, fmt=".3f", items="p3", bearing="qualifies",
             origin="after-seeds: restated as P3(a)'s failure after seed 0 (bound 0.05 is P3(a)'s); relabelled "
                    "qualifies after the review of 2026-11-26 (it fails only at the raised step)",
             falsifier="the final layer norms agree within 5% of their mean in every run (P3(a) holds)")
ledger.above("p3a-control-spread", "control", "standard init: the same spread at initialisation (smallest) is "
             "far from 0, so the check can fail", "> 0.2", float(spread_plain_init.min()), 0.2, fmt=".2f",
             items="p3", bearing="control", origin="prior")
ledger.below("p3b-fixed-depth-fits", "control", f"restated 2026-11-26: L2 depth {L_deep}, where P3(b) (and P4, "
             "04_alignment_and_depth) read the regularised arm: training cost $C$ (largest over networks): every "
             "network fits, as P3(b) requires",
             "< 0.1 (the bottleneck part's fit)", float(reg[L_deep].cost.max()), 0.1, fmt=".3f", items="p3",
             bearing="control", origin="prior: the bottleneck part's threshold",
             # the largest training cost of chaotic L2 runs moves with the CPU kernels as with the seed
             # (0.035-0.097 over seeds 0-4): across machines only its verdict is compared (issue 32)
             vtol=0.1)
# restated (issue 29): P3(b)'s own bound 0.2 against the learned rank (the mode over seeds, as written) decides; the
# readings chosen after seeing runs (each network's own rank, the bound 0.4) are shown beside it, not as the verdict
mid_err_mode = float(((mid_norms - k_deep).abs() / k_deep).max())
readings = [("P3(b) as written: learned rank (mode), bound 0.2", mid_err_mode, 0.2),
            ("each network's own learned rank, bound 0.2", mid_norm_err, 0.2),
            ("each network's own learned rank, bound 0.4 (set after seeds 0-4)", mid_norm_err, 0.4)]
print(f"P3(b) at L2 depth {L_deep}, middle layers: largest relative error of ||W_l||_F^2 against the learned rank")
for name, v, b in readings:
    print(f"  {name:<66} {v:.2f}  {'holds' if v < b else 'fails'}")
glue("syn-p3b-cert", f"{n_cert[L_deep]} of {len(seeds)}", display=False)
ledger.below("p3b-isometry-norms", "P3(b)", f"L2 depth {L_deep}: max relative error of $\\lVert W_l\\rVert_F^2$ against the learned "
             "rank (the mode over seeds, as P3(b) was written), middle layers; P3(b)'s own bound 0.2 (restated under "
             "issue 29: the row read each network's own rank with a bound 0.4 set after seeds 0-4; both readings are "
             "in the table of the page); not resolved at this budget: the networks are not certified minima "
             "(arms.certify_minima) and the bound holds on seeds 0, 3 and 4, not on 1 and 2 (0.30, 0.22)", "P3(b): < 0.2", mid_err_mode, 0.2,
             fmt=".2f", items="p3", bearing="qualifies",
             origin="prior: P3(b)'s bound and rank, as committed; depth fixed at 6 on 2026-11-26 (the deepest fitting "
                    "depth changed with the CPU kernel); bearing qualifies after seeds 0-4 (0.30 and 0.22 on seeds 1 and 2)",
             falsifier="an error $\\ge 0.2$: some middle layer's squared norm is not within 20% of the learned rank")
ledger.above("p3b-not-balanced", "P3(b)", f"L2 depth {L_deep} (restated 2026-11-26, was the deepest fitting depth): "
             "|sum of balancedness residuals| / "
             "($\\lVert\\theta\\rVert^2/L$), largest over layers and seeds; prediction P3(b) said < 0.05; the networks are not "
             "at a critical point (p3r-not-critical): not resolved at this scale", "P3(b) fails: $\\ge 0.05$", bal_rel,
             0.05, fmt=".3f", items="p3", bearing="qualifies",
             origin="after-seeds: restated as P3(b)'s failure after seed 0 (bound 0.05 is P3(b)'s); relabelled "
                    "qualifies on 2026-11-26 (the hypothesis, a critical point, does not hold); depth fixed at 6 on "
                    "2026-11-26 (the deepest fitting depth changed with the CPU kernel)",
             falsifier="every residual < 0.05 of $\\lVert\\theta\\rVert^2/L$ (the networks are balanced, as P3(b) says)")
ledger.below("p3r-small-step-conserves", "control", f"added 2026-11-26: small init, no L2, $\\eta_0\\le{P['slow_eta']}$ "
             f"(depth {L_slow} rerun with {P['slow_factor']} x the steps): largest change of the conserved "
             "differences $\\lVert W_{l+1}\\rVert^2-\\lVert W_l\\rVert^2$ over the run, relative to the mean final layer norm: the law of "
             "gradient flow that P3(a) rests on holds at this step (relabelled control under issue 29: it checks the "
             "conservation law, a theorem, not P3(a)'s 5% criterion on the layer norms, p3r-small-step-own-criterion)",
             "conserved: < 0.05", drift_small_step, 0.05, fmt=".3f", items="p3", bearing="control",
             origin="after-seeds: P3(a)'s 5%, applied to the conserved differences; the step 0.5 and 3 x the steps "
                    "are the review's (2026-11-26)")
ledger.below("p3r-small-step-own-criterion", "P3(a)", f"added under issue 29: P3(a)'s own criterion at the smaller "
             f"step: small init, no L2, $\\eta_0\\le{P['slow_eta']}$ (the depth-4 runs; depth {L_slow} rerun with "
             f"{P['slow_factor']} x the steps): (max - min) / mean of the final layer norms $\\lVert W_l\\rVert_F^2$, largest over runs; the step was chosen "
             "after P3(a) failed at the runs' own step; it holds on seeds 0 and 1, not on 2-4 (0.09-0.13)",
             "P3(a): < 0.05", float(spread_slow.max()), 0.05, fmt=".3f",
             items="p3", bearing="qualifies",
             origin="prior: P3(a)'s own 5%, as committed; the step 0.5 and 3 x the steps are the review's "
                    "(2026-11-26), chosen after the failure at the raised step",
             falsifier="a spread $\\ge 0.05$ in some run at the smaller step (a run still on its first plateau keeps "
                       "its initial differences)")
ledger.above("p3r-raised-step-drifts", "control", f"added 2026-11-26: the same drift in the runs at the steps of "
             "the first rows (largest over runs): the measure can fail", "> 0.05", float(drift.max()), 0.05,
             fmt=".3f", items="p3", bearing="control", origin="prior: the same 5%")
ledger.above("p3r-small-step-escapes", "control", f"added 2026-11-26: the rerun at $\\eta_0={P['slow_eta']}$ leaves the "
             "origin: runs whose middle layer acquires a singular value above 0.5 (restated after seeds 0-4 as a "
             "count of runs)", f"all {len(seeds)}", slow_escaped, len(seeds) - 0.5, fmt=".0f", items="p3",
             bearing="control", origin="after-seeds: the smallest count of acquired values had margin 0.9")
ledger.above("p3r-not-critical", "control", f"added 2026-11-26: L2 depth {L_deep}: norm of the gradient of "
             "$\\frac12(C+\\lambda\\lVert\\theta\\rVert^2)$ over $\\lambda\\lVert\\theta\\rVert$ (smallest over seeds): far from a critical point, "
             "where it is 0", "> 1", grad_rel, 1.0, fmt=".1f", items="p3", bearing="control",
             origin="prior: 1 is the size of the weight-decay term itself",
             vtol=15.0)   # the gradient at the last step of an oscillating run moves with the CPU (13 to 19 seen)

# %% [markdown]
# **P3: what the runs show.** From small initialisation with the steps of the first runs, the final
# layer norms differ by up to {glue:text}`syn-p3-spread` of their mean (seed 0), and the
# "conserved" differences $\lVert W_{\ell+1}\rVert_F^2-\lVert W_\ell\rVert_F^2$ drift by up to
# {glue:text}`syn-p3-drift` of the mean layer norm. At $\eta_0\le$ {glue:text}`syn-slow_eta` (depth 6
# rerun with {glue:text}`syn-slow_factor` times the steps) the drift is at most
# {glue:text}`syn-p3-slow-drift`, as Appendix F of {cite:t}`le2022training` says for a small step: the
# law is a theorem of gradient flow, so that row is a control, not P3(a). P3(a)'s own criterion, the
# final layer norms within 5% of their mean, gives {glue:text}`syn-p3-slow-spread` at that step
# (seed 0, `p3r-small-step-own-criterion`). It holds on seeds 0 and 1 and fails on seeds 2, 3 and 4
# (spread 0.09 to 0.13, {doc}`robustness page </book/robustness>`): on those seeds a rerun is still
# on its first plateau at the end, its norms have not grown past their initial differences. The step was chosen after P3(a) failed at the runs'
# own step, so the row qualifies P3.
#
# P3(b) is read in the regularised networks of depth {glue:text}`syn-p3-Ldeep` (a fixed depth: P3(b)
# named the deepest depth where every network fits, which changed from 6 to 8 with the CPU kernel on
# seed 0). P3(b)'s own reading, the middle layers' $\lVert W_\ell\rVert_F^2$ within 20% of the
# learned rank, decides the row; the readings chosen after seeing seeds 0-4 (each network's own
# rank, a bound of 0.4) are printed beside it in the table above. P3(b)'s bound holds on seeds 0, 3
# and 4 and fails on seeds 1 and 2 (0.30 and 0.22; {doc}`robustness page </book/robustness>`), and
# {glue:text}`syn-p3b-cert` networks are certified minima: not resolved at this budget. Their
# balancedness residual ({glue:text}`syn-p3-bal` of the mean layer norm) does not test P3(b) either:
# the gradient of the regularised objective is {glue:text}`syn-p3-grad` times the size of its
# weight-decay term (seed 0), so these networks are not at the critical points where balance is a
# theorem (with the step $2/L$ the objective oscillates at the end).

# %% [markdown]
# ## What the five lenses show together
#
# (Written after the runs; every number is computed above, statements about several seeds are read
# off the {doc}`robustness page </book/robustness>`.) Measured with one instrument each, the
# lenses agree more than the first rows said: gradient descent keeps the invariants of gradient
# flow when its step is small (by P3(a)'s own 5%, on seeds 0 and 1 only), and the update from
# small initialisation starts close to rank one. Every link that reads the regularised networks'
# end state (P1, P3(b), P4's regularised part, P5, P8) is not resolved at this budget: those
# networks are not certified minima, and 3 times the steps at the same rate (a targeted run; the
# budget sweep has no synthesis run) does not certify them. The small-initialisation runs are not
# in the asymptotic regime of the saddle theory, and they align less than P4 said on four of seeds
# 0-4, not on seed 3 ({doc}`04_alignment_and_depth`). Where a link was tested without an end state,
# it failed: depth does not speed up reversion to the OCS ({doc}`02_depth_and_reversion`). All at
# CPU scale (width 32, depth at most 10; the `full` profile, not run, is the test at larger scale).
#
# :::{admonition} What was changed after seeing runs
# :class: warning
# The predictions P1-P3 above are as committed before the first execution (P4 and P5, and their
# changes, are on {doc}`04_alignment_and_depth`). After it: the small arm
# was switched from fixed-step gradient descent to the norm-adaptive step of the saddle-to-saddle
# part (with fixed steps the depth-6 networks did not leave the origin), and its step at depth 6
# raised from $\eta_0=1$ to 1.5 after seeds 1-4 showed unfinished runs. After seeds 0-4: the
# failed predictions were rewritten as claims that state the failure, with these bounds set after
# seeing the seeds: $s_2/s_1\ge0.2$ at the first crossing (P2), relative norm error $<0.4$ (P3(b),
# bearing `qualifies`); the escape control counts acquired singular values instead of a loss ratio (some
# depth-6 runs sit on their second plateau at the end). On 2026-11-26, after review: the rows
# marked "added 2026-11-26" (the step 0.5 follows the review, which had seen runs; the rows were
# designed on prototype runs of seeds 0-3, which chose the median over runs for P2(b)'s update
# row, since one run of seed 1 exceeds 0.3; the drift rather than the spread for P3(a), since
# reruns still on their first plateau keep a spread above 5%; Jacot's threshold 0.1 for P1's
# contradiction, since with 0.5 the depth-4 counts are equal on some seeds; and the bound 0.5 of
# the escape-direction control), the relabelling of rows whose failure was an artifact or outside
# the prediction's setting (`p1-fewer-than-l2-rank`, `p2-not-one-at-a-time`, `p2-not-rank-one`,
# `p3a-norms-not-equal`, `p3b-not-balanced`: from `contradicts` to `qualifies`, their verdicts
# unchanged; `p1-fewer-than-l2-rank` now exposes its count with a half-integer bound), and the
# digits arm moved to {doc}`02_depth_and_reversion`. A second review the same day relabelled, from
# `contradicts` or `supports` to `qualifies`, the rows whose verdict rested on a setting chosen
# after seeing runs, their values and verdicts unchanged: `p1r-jacot-threshold-differs` (the
# threshold 0.1, which P1 had ruled out for the unregularised arm, chosen because 0.5 gives equal
# counts on some seeds; its origin had said `prior`) and `p3r-small-step-conserves` (the step,
# chosen after the failure). The same review added `p1r-differs-some-depth`: the rows of the first
# review had read P1 at depth 4 only, on the belief that the depth-6 small runs do not fit; they
# do on seed 0 (their largest cost is printed), so P1's criterion was applied at both depths, a
# choice made after seeing seed 0's depth-6 costs and counts. Its first bound (P1 fails with both
# thresholds, bearing `contradicts`) failed on one of seeds 1-4 and was lowered to "with at least
# one" (bearing `qualifies`) after the sweep. Later the same day, re-executing the page on other CPU
# kernels (`MKL_CBWR=COMPATIBLE ATEN_CPU_CAPABILITY=default`) flipped a verdict through a discrete
# choice inside the measurement, so P3(b)'s rows were restated, thresholds unchanged: they read a
# fixed depth, 6 (`reg_fixed` of the profile; the rows had read "the deepest depth where every
# network fits", 6 on this machine and 8 on those kernels for seed 0, and `p3b-isometry-norms` went
# from 0.16 to 0.78), with a control that every network fits there (`p3b-fixed-depth-fits`) and
# each network's own learned rank instead of the mode. The same day P4 and P5 moved to
# {doc}`04_alignment_and_depth` (a page a reader finishes in one sitting).
#
# Under issues 28 and 29 (after seeds 0-4 had been seen): every finding names the outcome that
# would have failed it; the regularised arm is read only as certified minima
# (`synthesis.arms.certify_minima` at half the training step, a rate chosen after seeing that the
# training step certifies an oscillation), and P1's and P3(b)'s rows that read it say "not
# resolved at this budget"; `p1r-differs-some-depth` reads P1's own threshold 0.5 alone (it
# counted thresholds including 0.1, under which it could not fail); `p3r-small-step-conserves` is a
# control (it checks the conservation law, a theorem) and `p3r-small-step-own-criterion` tests
# P3(a)'s own 5% on the layer norms at the smaller step; `p3b-isometry-norms` reads P3(b) as
# written (the mode of the learned rank, bound 0.2), the later readings printed beside it.
# :::
#
# ## Claims

# %% tags=["nbval-check-output"]
ledger.report()
