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
# `implicit_bias.rank_minimization`, the learned rank and input Jacobians of
# `implicit_bias.bottleneck`, and the escape directions of `implicit_bias.saddle_to_saddle`. The
# extrapolation lens (predictions P6 and P7, on digits) has its own page,
# {doc}`02_depth_and_reversion`; the {doc}`map </book/map>` shows how the papers' objects connect.
#
# The family: ReLU MLPs of width $w$ and depth $L$ (number of weight matrices), trained by full-batch
# gradient descent with the engines of `implicit_bias.train` and `implicit_bias.ensembles`.
#
# | arm | task | biases | initialisation | $L_2$ | depths (`ci`) | what it is for |
# |---|---|---|---|---|---|---|
# | **small** | synthetic, bottleneck rank $k=2$ | none | small (saddle-to-saddle regime) | none | 4, 6 | plateaus, order of the singular values, conserved quantities |
# | **reg** | same task | yes (as Jacot) | standard ($\times1.5$) | $\lambda$ small | 4, 6, 8, 10 | learned rank, bottleneck, norm against depth |
# | **plain** | same task | none | standard ($\times1.5$) | none | 4, 6, 8 | controls (no regularisation, no small init) |
#
# The synthetic task is Jacot's (Appendix E of {cite:t}`jacot2023bottleneck`, built by
# `implicit_bias.bottleneck.tasks`): inputs $x=g(z)\in\mathbb R^{20}$ of a latent
# $z\in\mathbb R^8$, targets $y=h(z_1,z_2)\in\mathbb R^{20}$, so the map $x\mapsto y$ factors
# through two dimensions.

# %% [markdown]
# :::{admonition} What this page shows
# SUMMARY-PLACEHOLDER
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
# **P4 (alignment and rank).** The top singular directions of adjacent middle layers align
# ($|\langle u_1(W_\ell),v_1(W_{\ell+1})\rangle|>0.9$, median over the middle layers and runs) in
# the small-initialisation runs and in the deep regularised runs, while at initialisation they do
# not ($<0.5$); and the stable rank of the middle layer of the regularised networks falls with
# depth. *Fails if* the median alignment is at most 0.9 in either arm, or the stable rank rises
# with depth (positive Spearman correlation).
#
# **P5 (norm against depth).** Over the regularised depths whose networks learn the same rank
# $k$, $\lVert\theta\rVert^2$ grows with depth with slope within $k\pm0.75$ (Jacot's $kL$ law).
# *Fails if* the slope leaves that band (or no two depths share a rank).
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

# %% [markdown]
# ## Added on 2026-11-26, after review
#
# A review of this page (issue #21) found that several of the failures above are artifacts of
# the way the predictions were measured, not of the predictions. The rows of the predictions and
# their verdicts stay as they were; the analyses below are **new rows**, each marked "added
# 2026-11-26", that measure the same prediction without the artifact:
#
# - **P1** compared counts taken with two thresholds (singular values above 0.5 from small
#   initialisation, above 0.1 with $L_2$). The new rows count both arms with **one** threshold, on
#   the part of the weights that training wrote: the update $W-W_0$ from small initialisation
#   (its random initial bulk, singular values up to about 0.2, is not learned), and $W$ itself with
#   $L_2$ (the initial weights decay by a factor below $e^{-8}$ over the run). Both thresholds of
#   P1, 0.1 and 0.5, are used.
# - **P2(b)** measured $s_2/s_1$ of $W$, whose second value is the random initial bulk when $s_1$
#   first reaches 0.5. The new row measures the update $W-W_0$, with records every few steps early
#   in the run (log-spaced), where the depth-4 runs escape. The saddle-to-saddle part's own test
#   of an escape, the KKT residual of the direction $\theta/\lVert\theta\rVert$ when the loss
#   has fallen by 5% (`saddle_to_saddle.localized.kkt_residual`: 0 on an escape direction of the
#   saddle at the origin, about 1 for a generic direction), says whether the runs are in the
#   regime of {cite:t}`bantzis2025saddle` at all.
# - **P3(a)** was tested with the step raised to $\eta_0=1.5$ at depth 6 (chosen so that the runs
#   escape in the CPU budget). Gradient descent conserves the differences of layer norms only up to
#   terms of order $\eta^2$ per step (Appendix F of {cite:t}`le2022training`). The new row repeats
#   the depth-6 small arm with $\eta_0=0.5$ and three times the steps (depth 4 already runs at
#   $\eta_0=0.3$) and applies P3(a)'s own bound.
# - **P3(b)** assumes a critical point of the regularised loss. The new row measures how far the
#   trained networks are from one: the norm of the gradient of the regularised objective, against
#   the size $\lambda\lVert\theta\rVert$ of the weight-decay term.
#
# Profile `ci` gives every row the thresholds written in the predictions; where a row's
# threshold or statistic was chosen knowing the reviewer's findings, its `origin` says so.
#
# **P8 (added 2026-11-26, written and committed before its first run: a question that needs two
# papers).** Does training from small initialisation (saddle-to-saddle) pause at the functions
# that the $L_2$-regularised networks of the same depth learn (bottleneck)? If it does, then at the
# end of the small-initialisation run (its last plateau, or the point it converged to) the small
# network and the regularised network of the same depth compute nearly the same function on the
# training inputs. Measure: at every training input $x$, the top-$k$ right singular subspaces
# ($k=2$, the task's bottleneck rank) of the two networks' input Jacobians $Jf(x)$
# (`bottleneck.jacobians.input_jacobians`), compared through the mean squared cosine of their
# principal angles, $\tfrac1k\lVert V_a(x)^\top V_b(x)\rVert_F^2\in[0,1]$ (1 for the same
# subspace, about $k/20=0.1$ for random subspaces of $\mathbb R^{20}$), averaged over the training
# inputs, median over the $3\times3$ pairs of networks. Prediction: (a) at each depth of the small
# arm (4 and 6) this similarity exceeds 0.8; (b) the training costs
# $C=\frac1N\sum_i\lVert f(x_i)-y_i\rVert^2$ of the two arms (median over networks) agree within a
# factor of 2. Control: the similarity between the regularised network and the network trained from
# standard initialisation without $L_2$ (the **plain** arm) at the same depth is below 0.8, otherwise
# the measure does not tell these functions apart. *Fails if* (a) or (b) fails at some depth while
# the control holds.

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
    # regularised arm (lr = 2 / L everywhere); plain_*: the unregularised standard-init control;
    # seeds: networks per cell
    "ci": dict(n=128, width=32, k=2, small_depths=(4, 6), small_std=0.02, small_eta=(0.3, 1.5), small_steps=8000,
               record=40, slow_eta=0.5, slow_factor=3, reg_depths=(4, 6, 8, 10), lam=5e-3, reg_steps=5000,
               reg_init=1.5, plain_depths=(4, 6, 8), plain_steps=3000, seeds=3, cache=False),
    "full": dict(n=1000, width=256, k=2, small_depths=(4, 6, 8), small_std=0.005, small_eta=(0.3, 1.5, 1.5),
                 small_steps=60_000, record=100, slow_eta=0.5, slow_factor=3, reg_depths=tuple(range(4, 25, 2)),
                 lam=1e-3, reg_steps=60_000, reg_init=1.5, plain_depths=(4, 6, 8, 12), plain_steps=20_000, seeds=5,
                 cache=True),
}

# %%
import math

import matplotlib.pyplot as plt
import numpy as np
import torch
from myst_nb import glue

from implicit_bias import cache, ensembles, models, plotting, spectra, train
from implicit_bias.bottleneck import jacobians, structure, sweeps, tasks
from implicit_bias.chapter import start_chapter
from implicit_bias.claims import Ledger
from implicit_bias.invariances import invariants
from implicit_bias.rank_minimization import deep_training
from implicit_bias.saddle_to_saddle import localized

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
# **not run** for this page (no GPU was available).
# :::
#
# ## The runs
#
# The **small** arm records the top singular values of the middle weight matrix
# $W_{\lceil L/2\rceil}$ and of its update $W-W_0$, the squared norms of Lemma 4's layer cuts
# (`invariances.invariants.cut_norms`: here the $\lVert W_\ell\rVert_F^2$) and the weights, at
# every few steps; the other arms are measured at the end.

# %%
def as_params(weights, biases=None) -> dict[str, torch.Tensor]:
    """Stacked weight lists as the parameter dict of `models.MLP` (what the invariances part reads)."""
    out = {f"layers.{i}.weight": W for i, W in enumerate(weights)}
    out.update({f"layers.{i}.bias": b for i, b in enumerate(biases or [])})
    return out


def train_small(L: int, eta0: float, steps: int, snapshots: bool = True) -> dict:
    """Bias-free ReLU MLPs from small Gaussian initialisation, no regularisation, trained together
    by gradient descent with the saddle-to-saddle part's norm-adaptive step
    ``eta0 (||theta|| / sqrt(L))^(2 - L)`` (`train.train_norm_adaptive`): the time change of
    Bantzis, Simon & Jacot, without which a depth-6 network does not leave the origin in a CPU
    budget. ``snapshots=False`` records only the first and last layer norms."""
    gen = torch.Generator().manual_seed(seed)
    dims = [d_in] + [P["width"]] * (L - 1) + [d_out]
    W = models.gaussian_weights(dims, P["small_std"], batch_shape=(len(seeds),), generator=gen,
                                dtype=torch.float32, device=dev)
    W0 = [w.clone() for w in W]
    m, cuts = mid(L), invariants.layer_cuts(models.MLP(d_in, d_out, P["width"], L, bias=False))
    metrics = {"norms": lambda Ws: invariants.cut_norms(as_params(Ws), cuts, batch_dims=1)}
    if snapshots:
        metrics |= {"s": lambda Ws: torch.linalg.svdvals(Ws[m])[:, :4],
                    "ds": lambda Ws: torch.linalg.svdvals(Ws[m] - W0[m])[:, :4],
                    "W": lambda Ws: [w.to("cpu", D) for w in Ws]}
    record = sorted(set(range(0, steps + 1, P["record"])) | set(train.log_spaced_steps(steps, 80))) if snapshots else [0]
    hist = train.train_norm_adaptive(W, X.float().to(dev), Y.float().to(dev), loss="half_mse", steps=steps,
                                     eta0=eta0, radius=L ** 0.5, record_steps=record, metrics=metrics,
                                     desc=f"small L={L}")
    out = dict(W0=[w.to("cpu", D) for w in W0], W=[w.detach().to("cpu", D) for w in W],
               steps=torch.tensor(hist.record_steps, dtype=D), loss=hist.loss[:, hist.record_steps].to(D),
               norms=hist.stacked("norms").to(D))
    if snapshots:
        out |= dict(s=hist.stacked("s").to(D), ds=hist.stacked("ds").to(D), snaps=hist.records["W"])
    return out


def train_plain(L: int) -> list[torch.Tensor]:
    """Bias-free ReLU MLPs from standard initialisation without regularisation (a control)."""
    ens = ensembles.Ensemble.build(
        lambda s: models.MLP(d_in, d_out, P["width"], L, bias=False, init_scale=P["reg_init"]), seeds=seeds,
        device=dev)
    init = [W.detach().to("cpu", D).clone() for W in ens.weight_matrices()]
    ensembles.train_ensemble(ens, X.float().to(dev), Y.float().to(dev), loss="half_mse", steps=P["plain_steps"],
                             lr=2.0 / L, on_diverge="record", progress=False)
    return init, [W.detach().to("cpu", D) for W in ens.weight_matrices()]


small_key = {k: P[k] for k in ("n", "width", "small_steps", "small_std", "record")}
small = {L: cache.cached("synthesis-small", dict(L=L, eta0=eta0, seeds=seeds, **small_key),
                         lambda L=L, eta0=eta0: train_small(L, eta0, P["small_steps"]), enabled=P["cache"])
         for L, eta0 in zip(P["small_depths"], P["small_eta"])}
L_slow = max(P["small_depths"])
slow = cache.cached("synthesis-small-slow", dict(L=L_slow, eta0=P["slow_eta"], factor=P["slow_factor"], seeds=seeds,
                                                 **small_key),
                    lambda: train_small(L_slow, P["slow_eta"], P["slow_factor"] * P["small_steps"], snapshots=False),
                    enabled=P["cache"])
reg = sweeps.depth_sweep(X, Y, P["reg_depths"], seeds, P["width"], P["lam"], P["reg_steps"], 2.0,
                         P["reg_init"], torch.float32, dev, use_cache=P["cache"], name="synthesis-reg")
plain = {L: cache.cached("synthesis-plain", dict(L=L, seeds=seeds, **{k: P[k] for k in
                         ("n", "width", "plain_steps", "reg_init")}), lambda L=L: train_plain(L),
                         enabled=P["cache"])
         for L in P["plain_depths"]}

# %% [markdown]
# ## Saddles and the bottleneck: P1 and P2
#
# For every small-initialisation run: the training loss, and the four largest singular values of
# the middle weight matrix against time. The plateau detector `train.detect_plateaus` counts the
# saddles on the loss curve; the crossing times of $s_i=0.5$ give the order in which the singular
# values appear. The rows of the predictions read the records every {glue:text}`syn-record` steps,
# as when they were written.

# %%
def crossings(s: torch.Tensor, level: float = 0.5) -> list[float]:
    """First record index at which each singular value exceeds ``level`` (inf if never)."""
    out = []
    for i in range(s.shape[-1]):
        hit = (s[:, i] > level).nonzero()
        out.append(float(hit[0]) if len(hit) else float("inf"))
    return out


def mode(values) -> int:
    vals, counts = torch.unique(torch.as_tensor(values), return_counts=True)
    return int(vals[counts.argmax()])


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
fig.tight_layout()
plt.show()

learned = {L: structure.layer_ranks(run.weights, 0.1)[:, mid(L)] for L, run in reg.items()}
fits = {L: run.cost < 0.1 for L, run in reg.items()}
for row in rows:
    print(f"L={row['L']} seed {row['r']}: saddles on the loss curve {row['saddles']}, singular values "
          f"acquired {row['acquired']}, gap s1->s2 {row['gap']:.2f} of the run, s2/s1 at first crossing "
          f"{row['ratio_at_first']:.2f}, final/initial loss {row['fit']:.3f}")
for L in P["reg_depths"]:
    print(f"regularised L={L}: learned ranks {learned[L].tolist()}, train cost {[round(float(c), 3) for c in reg[L].cost]}")

# %% [markdown]
# **P1** compares, depth by depth, the number of singular values the unregularised small-init
# network acquires with the learned rank of the regularised network of the same depth.

# %%
p1_pairs = []
for L in P["small_depths"]:
    acq = [row["acquired"] for row in rows if row["L"] == L]
    if L in learned:
        p1_pairs.append((L, mode(acq), mode(learned[L])))
p1_not_fewer = sum(a >= b for _, a, b in p1_pairs)
for L, a, b in p1_pairs:
    print(f"L={L}: acquired from small init (mode) {a}; learned rank with L2 (mode) {b}")
glue("syn-p1-pairs", "; ".join(f"$L={L}$: {a} against {b}" for L, a, b in p1_pairs), display=False)
ledger.below("p1-fewer-than-l2-rank", "P1", "depths where the small-init network acquires at least as many singular "
             "values (mode, > 0.5) as the L2 network of the same depth learns (mode, > 0.1); prediction P1 said equal "
             "at every depth; the two thresholds differ (see p1r-*)", "P1 fails: fewer at every depth", p1_not_fewer,
             0.5, fmt=".0f", items="p1", bearing="qualifies",
             origin="after-seeds: restated as P1's failure after seeds 0-4; relabelled qualifies after the review of "
                    "2026-11-26 (a threshold artifact)")

p2_gap = min(row["gap"] for row in rows)
p2_ratio = max(row["ratio_at_first"] for row in rows)
glue("syn-p2-gap", f"{p2_gap:.2f}", display=False)
glue("syn-p2-ratio", f"{p2_ratio:.2f}", display=False)
ledger.below("p2-not-one-at-a-time", "P2", "small init: time from s_1 to s_2 crossing 0.5, fraction of the run "
             "(smallest over runs); prediction P2 said > 0.05 in every run", "P2 fails: < 0.05 in some run", p2_gap,
             0.05, fmt=".2f", items="p2", bearing="qualifies",
             origin="after-seeds: restated as P2's failure after seed 0; the bound 0.05 is P2's")
ledger.above("p2-not-rank-one", "P2", "small init: s_2 / s_1 of the middle layer W when s_1 crosses 0.5 (largest "
             "over runs); prediction P2 said < 0.3 in every run (bound 0.2 set after seeds 0-4)",
             "P2 fails: second direction >= 0.2 of the first", p2_ratio, 0.2, fmt=".2f", items="p2",
             bearing="qualifies", origin="after-seeds: 0.2 set after seeds 0-4 (P2 said 0.3); relabelled qualifies "
                                         "after the review of 2026-11-26 (it measures the initial bulk)")
fit_small = max(row["fit"] for row in rows)
acquired_min = min(row["acquired"] for row in rows)
glue("syn-fit-small", f"{fit_small:.2f}", display=False)
ledger.above("small-arm-escapes", "control", "small init: singular values above 0.5 acquired by the middle layer "
             "(smallest over runs): every run leaves the origin (control restated after seeds 0-4)", ">= 1",
             acquired_min, 0.5, fmt=".0f", items="p2", bearing="control",
             origin="after-seeds: replaced a loss-ratio control after seeds 0-4 (some depth-6 runs end on a plateau)")

# %% [markdown]
# **P1 and P2 measured without the artifacts (added 2026-11-26).** One threshold for both arms,
# on the learned part of the weights; the update $W-W_0$ of the small arm at the first record where
# its top singular value reaches 0.5; and the saddle-to-saddle part's test of an escape direction,
# applied to each run when its loss has fallen by 5%.

# %%
TAUS = (0.1, 0.5)
G0 = localized.cost_gradient_at_zero(lambda out: 0.5 * (out - Y.to(D)).pow(2).sum(-1).mean(), Y.shape)
p1r = {}    # (tau, L) -> (mode over the small arm's updates, mode over the L2 networks)
p2r = []    # per small run: s2/s1 of the update at its first crossing, its step, KKT residuals
for L, run in small.items():
    update = [W - W0 for W, W0 in zip(run["W"], run["W0"])]
    for tau in TAUS:
        p1r[tau, L] = (mode(structure.layer_ranks(update, tau)[:, mid(L)]),
                       mode(structure.layer_ranks(reg[L].weights, tau)[:, mid(L)]))
    for r in range(len(seeds)):
        c = crossings(run["ds"][:, r])
        k = int(c[0]) if np.isfinite(c[0]) else len(run["steps"]) - 1
        k_esc = int((run["loss"][r] < 0.95 * run["loss"][r, 0]).nonzero()[0])
        theta = [W[r] for W in run["snaps"][k_esc]]
        p2r.append(dict(L=L, r=r, ratio=float(run["ds"][k, r, 1] / run["ds"][k, r, 0]), step=int(run["steps"][k]),
                        kkt=float(localized.kkt_residual(theta, X.to(D), G0)), esc=int(run["steps"][k_esc]),
                        r0=float(localized.squared_norm([W[r] for W in run["W0"]]).sqrt() / L ** 0.5)))
for (tau, L), (a, b) in p1r.items():
    print(f"threshold {tau}, L={L}: singular values of the middle update (small init, mode) {a}; of the middle "
          f"layer with L2 (mode) {b}")
for row in p2r:
    print(f"L={row['L']} seed {row['r']}: update s2/s1 {row['ratio']:.2f} when its s1 reaches 0.5 (step {row['step']}); "
          f"loss -5% at step {row['esc']}, KKT residual of the direction there {row['kkt']:.2f}; "
          f"||theta_0|| / sqrt(L) = {row['r0']:.2f}")
p1r_equal = {tau: sum(a == b for (t, _), (a, b) in p1r.items() if t == tau) for tau in TAUS}
p1r_more = sum(a > b for (a, b) in p1r.values())
p2r_ratio = max(row["ratio"] for row in p2r)
p2r_kkt = min(row["kkt"] for row in p2r)
glue("syn-p1r-table", "; ".join(f"threshold {tau}, $L={L}$: {a} against {b}" for (tau, L), (a, b) in p1r.items()),
     display=False)
glue("syn-p2r-ratio", f"{p2r_ratio:.2f}", display=False)
glue("syn-p2r-kkt", f"{p2r_kkt:.2f}", display=False)
glue("syn-p2r-r0", f"{max(row['r0'] for row in p2r):.2f}", display=False)
# P1R_CLAIMS: the rows of the corrected analysis (written after the seeds 0-4 prototype)
# P2R_CLAIMS: the rows of the corrected analysis (written after the seeds 0-4 prototype)

# %% [markdown]
# **P1 and P2, what the runs show.** The number of singular values acquired from small
# initialisation against the rank learned with $L_2$ at the same depth, as the prediction counted
# them: {glue:text}`syn-p1-pairs` (seed 0). P2's records say that the first two singular values of
# $W$ cross 0.5 within {glue:text}`syn-p2-gap` of the run of each other, and that $s_2/s_1$ reaches
# {glue:text}`syn-p2-ratio` when $s_1$ crosses. Counted with one threshold on what training wrote,
# the comparison reads {glue:text}`syn-p1r-table` (seed 0). P1R-TEXT
# P2R-TEXT

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
def relative_spread(norms: torch.Tensor) -> torch.Tensor:
    """(max - min) / mean of the layer norms of each network (last axis: layers)."""
    return (norms.max(-1).values - norms.min(-1).values) / norms.mean(-1)


def conserved_drift(norms: torch.Tensor) -> torch.Tensor:
    """Largest change of the cut invariants ||W_{l+1}||^2 - ||W_l||^2 over the run, relative to the mean final
    layer norm, per network (``norms``: records x networks x layers)."""
    return (norms[-1].diff(dim=-1) - norms[0].diff(dim=-1)).abs().max(-1).values / norms[-1].mean(-1)


spread_small = torch.cat([relative_spread(run["norms"][-1]) for run in small.values()])
drift = torch.cat([conserved_drift(run["norms"]) for run in small.values()])
cuts_plain = {L: invariants.layer_cuts(models.MLP(d_in, d_out, P["width"], L, bias=False)) for L in plain}
spread_plain_init = torch.cat([relative_spread(invariants.cut_norms(as_params(init), cuts_plain[L], batch_dims=1))
                               for L, (init, _) in plain.items()])
fitting = [L for L in P["reg_depths"] if bool(fits[L].all())]
L_deep = max(fitting) if fitting else max(P["reg_depths"])
run = reg[L_deep]
k_deep = mode(learned[L_deep])
mids = range(2, L_deep - 2)      # layers 3..L-2 (1-based): away from both ends
mid_norms = torch.stack([run.weights[l].pow(2).sum((-2, -1)) for l in mids], -1)   # (seeds, layers)
mid_norm_err = float(((mid_norms - k_deep).abs() / k_deep).max())
groups = invariants.neuron_groups(models.MLP(d_in, d_out, P["width"], L_deep), count_bias=True)
Q = invariants.neuron_invariants(as_params(run.weights, run.biases), groups, batch_dims=1)
bal_layers = torch.stack([q.sum(-1).abs() / (run.sqnorm / L_deep) for q in Q.values()], -1)   # (seeds, L - 1)
bal_rel = float(bal_layers.max())
# added 2026-11-26: the same spread at a step eta0 <= slow_eta (depth 4 as run above, the deepest depth rerun)
spread_slow = torch.cat([relative_spread(small[L]["norms"][-1]) for L, eta in zip(P["small_depths"], P["small_eta"])
                         if eta <= P["slow_eta"] and L != L_slow] + [relative_spread(slow["norms"][-1])])
drift_slow = float(conserved_drift(slow["norms"]).max())
fit_slow = float((slow["loss"][:, -1] / slow["loss"][:, 0]).max())
# added 2026-11-26: distance from a critical point of (1/2)(C + lambda ||theta||^2), relative to lambda ||theta||
Wg = [W.clone().requires_grad_(True) for W in run.weights]
bg = [b.clone().requires_grad_(True) for b in run.biases]
cost = (models.mlp_trace(Wg, bg, X.to(D)).output - Y.to(D)).pow(2).sum(-1).mean(-1)
objective = 0.5 * (cost + P["lam"] * models.param_sqnorm(Wg + bg, batch_dims=1))
grads = torch.autograd.grad(objective.sum(), Wg + bg)
grad_rel = float((sum(g.pow(2).flatten(1).sum(-1) for g in grads).sqrt() / (P["lam"] * run.sqnorm.sqrt())).min())
glue("syn-p3-spread", f"{float(spread_small.max()):.3f}", display=False)
glue("syn-p3-drift", f"{float(drift.max()):.1e}", display=False)
glue("syn-p3-Ldeep", L_deep, display=False)
glue("syn-p3-norm-err", f"{mid_norm_err:.2f}", display=False)
glue("syn-p3-bal", f"{bal_rel:.2f}", display=False)
glue("syn-p3-slow-spread", f"{float(spread_slow.max()):.3f}", display=False)
glue("syn-p3-slow-drift", f"{drift_slow:.1e}", display=False)
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
             "||W_l||_F^2 (largest over runs); prediction P3(a) said < 0.05", "P3(a) fails: >= 0.05 in some run",
             float(spread_small.max()), 0.05, fmt=".3f", items="p3", bearing="qualifies",
             origin="after-seeds: restated as P3(a)'s failure after seed 0 (bound 0.05 is P3(a)'s); relabelled "
                    "qualifies after the review of 2026-11-26 (it fails only at the raised step)")
ledger.above("p3a-control-spread", "control", "standard init: the same spread at initialisation (smallest) is "
             "far from 0, so the check can fail", "> 0.2", float(spread_plain_init.min()), 0.2, fmt=".2f",
             items="p3", bearing="control", origin="prior")
ledger.below("p3b-isometry-norms", "P3(b)", f"deepest fitting L2 depth: max relative error of ||W_l||_F^2 against "
             "the learned rank k, middle layers; prediction P3(b) said < 0.2 (holds on some seeds only; bound 0.4 "
             "set after seeds 0-4)", "qualified: < 0.4", mid_norm_err, 0.4, fmt=".2f", items="p3",
             bearing="qualifies", origin="after-seeds: 0.4 set after seeds 0-4 (P3(b) said 0.2)")
ledger.above("p3b-not-balanced", "P3(b)", "deepest fitting L2 depth: |sum of balancedness residuals| / "
             "(||theta||^2 / L), largest over layers and seeds; prediction P3(b) said < 0.05; the networks are not "
             "at a critical point (p3r-not-critical): not resolved at this scale", "P3(b) fails: >= 0.05", bal_rel,
             0.05, fmt=".3f", items="p3", bearing="qualifies",
             origin="after-seeds: restated as P3(b)'s failure after seed 0 (bound 0.05 is P3(b)'s); relabelled "
                    "qualifies on 2026-11-26 (the hypothesis, a critical point, does not hold)")
ledger.below("p3r-small-step-conserves", "P3(a)", f"added 2026-11-26: small init, no L2, eta0 <= {P['slow_eta']} "
             f"(depth {L_slow} rerun with {P['slow_factor']} x the steps): (max - min) / mean of the final layer norms "
             "(largest over runs)", "< 0.05 (prediction P3(a))", float(spread_slow.max()), 0.05, fmt=".3f",
             items="p3", bearing="supports",
             origin="after-seeds: P3(a)'s bound; the step 0.5 and 3 x the steps are the review's (2026-11-26)")
ledger.above("p3r-small-step-escapes", "control", f"added 2026-11-26: the rerun at eta0 = {P['slow_eta']} leaves the "
             "origin: 1 - final / initial loss (smallest over runs)", "> 0.5", 1 - fit_slow, 0.5, fmt=".2f",
             items="p3", bearing="control", origin="prior")
ledger.above("p3r-not-critical", "control", f"added 2026-11-26: deepest fitting L2 depth: norm of the gradient of "
             "(1/2)(C + lambda ||theta||^2) over lambda ||theta|| (smallest over seeds): far from a critical point, "
             "where it is 0", "> 1", grad_rel, 1.0, fmt=".1f", items="p3", bearing="control",
             origin="prior: 1 is the size of the weight-decay term itself")

# %% [markdown]
# **P3: what the runs show.** From small initialisation with the steps of the first runs, the final
# layer norms differ by up to {glue:text}`syn-p3-spread` of their mean (seed 0), and the
# "conserved" differences $\lVert W_{\ell+1}\rVert_F^2-\lVert W_\ell\rVert_F^2$ drift by up to
# {glue:text}`syn-p3-drift` of the mean layer norm. That is the step, not the invariance: rerun at
# $\eta_0=$ {glue:text}`syn-slow_eta` with {glue:text}`syn-slow_factor` times the steps, the drift
# falls to {glue:text}`syn-p3-slow-drift` and the layer norms agree within
# {glue:text}`syn-p3-slow-spread` of their mean, inside P3(a)'s 5%: the conserved quantity of
# {cite:t}`le2022training` survives gradient descent with a step small enough, as its Appendix F
# says. In the regularised networks of depth {glue:text}`syn-p3-Ldeep` the middle layers have
# $\lVert W_\ell\rVert_F^2$ within {glue:text}`syn-p3-norm-err` of the learned rank (relative
# error): the partial-isometry picture of the bottleneck holds roughly, not to the 20% predicted
# on every seed. Their balancedness residual ({glue:text}`syn-p3-bal` of the mean layer norm) does
# not test P3(b): the gradient of the regularised objective is still {glue:text}`syn-p3-grad` times
# the size of its weight-decay term (seed 0), so these networks are not at the critical points
# where balance is a theorem; gradient descent with the step $2/L$ keeps oscillating (its
# objective goes up and down over the last steps).

# %% [markdown]
# ## Alignment and rank: P4
#
# The alignment of adjacent layers is `spectra.alignment`, $|\langle u_1(W_\ell),
# v_1(W_{\ell+1})\rangle|$, the quantity of {cite:t}`le2022training`'s alignment theorem; the
# rank measure is the stable rank $\lVert W\rVert_F^2/\lVert W\rVert_2^2$ of the notation page,
# the inverse square of the ratio $\lVert W\rVert_2/\lVert W\rVert_F$ that
# {cite:t}`timor2023implicit` bound (`rank_minimization.deep_training.ratios`).

# %%
def mid_alignments(weights: list[torch.Tensor]) -> torch.Tensor:
    """Alignment of every adjacent pair of hidden-to-hidden layers, flattened over runs."""
    L = len(weights)
    return torch.cat([spectra.alignment(weights[l], weights[l + 1]).flatten() for l in range(1, L - 2)])


align_small_at = {L: mid_alignments(run["W"]) for L, run in small.items()}
align_small = torch.cat(list(align_small_at.values()))
align_reg = mid_alignments(reg[L_deep].weights)
align_init = torch.cat([mid_alignments(run["W0"]) for run in small.values()] +
                       [mid_alignments(init) for init, _ in plain.values()])
align_plain = torch.cat([mid_alignments(W) for _, W in plain.values()])
srank = {L: deep_training.ratios([reg[L].weights[mid(L)]])[:, 0] ** -2 for L in P["reg_depths"]}
for name, values in (("small", align_small), ("reg", align_reg), ("init", align_init), ("plain", align_plain)):
    glue(f"syn-p4-{name}", f"{float(values.median()):.2f}", display=False)
print(f"median alignment of adjacent middle layers: small init {float(align_small.median()):.2f}, "
      f"regularised L={L_deep} {float(align_reg.median()):.2f}, standard init without L2 {float(align_plain.median()):.2f}, "
      f"at initialisation {float(align_init.median()):.2f}")
print("small init, median alignment by depth:", {L: round(float(v.median()), 2) for L, v in align_small_at.items()})
print("stable rank of the middle layer, regularised arm:",
      {L: [round(float(v), 2) for v in srank[L]] for L in P["reg_depths"]})
ledger.above("p4-aligned-small", "P4", "small init: median alignment of adjacent middle layers; prediction P4 said "
             "> 0.9, which fails on most of seeds 0-4 (bound 0.6 set after them)", "qualified: > 0.6",
             float(align_small.median()), 0.6, fmt=".2f", items="p4", bearing="qualifies",
             origin="after-seeds: 0.6 set after seeds 0-4 (P4 said 0.9)")
ledger.above("p4-aligned-reg", "P4", f"L2, depth {L_deep}: median alignment of adjacent middle layers",
             "> 0.9 (prediction P4)", float(align_reg.median()), 0.9, fmt=".2f", items="p4", bearing="supports",
             origin="prior")
ledger.below("p4-init-control", "control", "at initialisation: median alignment of adjacent middle layers (the "
             "check can fail)", "< 0.5", float(align_init.median()), 0.5, fmt=".2f", items="p4", bearing="control",
             origin="prior")
srank_rise = float(srank[P["reg_depths"][1]].median() - srank[P["reg_depths"][0]].median())
glue("syn-p4-rise", f"{srank_rise:.2f}", display=False)
ledger.above("p4-srank-rises", "P4", f"L2: median stable rank of the middle layer at depth {P['reg_depths'][1]} minus "
             f"at depth {P['reg_depths'][0]}; prediction P4 said it falls with depth (claim set after seeds 0-4)",
             "P4 fails: it rises", srank_rise, 0.0, fmt=".2f", items="p4", bearing="contradicts",
             origin="after-seeds: replaced 'Spearman correlation < 0' after seeds 0-4")

# %% [markdown]
# **P4: what the runs show.** The median alignment of adjacent middle layers is
# {glue:text}`syn-p4-reg` in the deep regularised networks and {glue:text}`syn-p4-small` in the
# small-initialisation runs, against {glue:text}`syn-p4-init` at initialisation and
# {glue:text}`syn-p4-plain` after training from standard initialisation without $L_2$ (seed 0). The
# regularised networks align as predicted; the small-initialisation runs align on some seeds only
# (see the {doc}`robustness page </book/robustness>`), and less at depth 4, where the middle layers
# acquire several singular values of similar size (so that the top singular vector is poorly
# defined), than at depth 6 (the medians by depth are printed above). The stable rank of the middle
# layer *rises* from depth 4 to 6 (by {glue:text}`syn-p4-rise`, median), while the number of
# singular values above 0.1 falls: the two rank measures of the notation page move in opposite
# directions here, as in the logistic arm of the third rank-minimization chapter
# ({doc}`the map </book/map>` links every chapter).

# %% [markdown]
# ## Norm against depth: P5
#
# Jacot's Figure 1(a) law: within a range of depths where the networks learn rank $k$, the squared
# parameter norm grows like $kL$. This is the bottleneck paper's own law, measured on the
# networks of this page; it connects to no other paper.

# %%
# every network that fits (train cost < 0.1, the bottleneck part's threshold), grouped by its own learned
# rank; the law is tested on the rank whose fitting networks span at least two depths and are the most
# numerous (this grouping replaced a per-depth mode after seeds 0-4: see the end of the page)
fitted = [(L, int(learned[L][i]), float(reg[L].sqnorm[i])) for L in P["reg_depths"] for i in range(len(seeds))
          if float(reg[L].cost[i]) < 0.1]
spans = {r: {L for L, q, _ in fitted if q == r} for r in {q for _, q, _ in fitted}}
candidates = [r for r, Ls in spans.items() if len(Ls) >= 2]
k_shared = max(candidates, key=lambda r: sum(q == r for _, q, _ in fitted)) if candidates else -1
same_rank = sorted(spans.get(k_shared, ()))
if candidates:
    slope, intercept = structure.affine_fit([L for L, q, _ in fitted if q == k_shared],
                                            [v for _, q, v in fitted if q == k_shared])
else:
    slope, intercept = float("nan"), float("nan")
fig, ax = plotting.subplots(ncols=1, height=3.0)
for L in P["reg_depths"]:
    ax.scatter([L] * len(seeds), reg[L].sqnorm.numpy(), c=[plotting.color(int(r)) for r in learned[L]], s=18)
ax.set(xlabel="depth L", ylabel=r"$\|\theta\|^2$", title="regularised arm (colour: learned rank)")
plt.show()
glue("syn-p5-slope", f"{slope:.2f}", display=False)
glue("syn-p5-depths", ", ".join(map(str, same_rank)), display=False)
print(f"depths with learned rank {k_shared}: {same_rank}; slope of ||theta||^2 against L: {slope:.2f}")
ledger.between("p5-norm-slope", "P5", f"L2: slope of ||theta||^2 against depth over the fitting networks of learned "
               "rank k (grouping by each network's own rank set after seeds 0-4)",
               "within k +- 0.75 (prediction P5)", slope, k_shared - 0.75, k_shared + 0.75, fmt=".2f", items="p5",
               bearing="supports", origin="after-seeds: the band k +- 0.75 is P5's; the grouping of the networks "
                                          "by their own rank was chosen after seed 0")

# %% [markdown]
# **P5: what the runs show.** Over the depths {glue:text}`syn-p5-depths` the fitting networks share
# a learned rank, and $\lVert\theta\rVert^2$ grows with slope {glue:text}`syn-p5-slope` (seed 0),
# within $k\pm0.75$ as Jacot's $kL$ law says (after the grouping change disclosed below). This
# reproduces the bottleneck paper on these networks; it is not a link between two papers.

# %% [markdown]
# ## A question that needs two papers: P8
#
# Does small-initialisation training pause at the functions that the $L_2$-regularised networks of
# the same depth learn? The prediction P8 and its failing outcome are written above (added
# 2026-11-26, committed before this section's first run). Each network is read through its input
# Jacobians at the training inputs (`bottleneck.jacobians.input_jacobians`, biases 0 for the
# bias-free arms); two networks are compared through the principal angles between the top-$k$
# right singular subspaces of their Jacobians, input by input.

# %%
def jacobian_subspaces(weights: list[torch.Tensor], biases: list[torch.Tensor] | None = None) -> torch.Tensor:
    """Top-K right singular vectors of the input Jacobian of one network at every training input: (n, K, d_in)."""
    biases = biases if biases is not None else [torch.zeros(W.shape[-2], dtype=D) for W in weights]
    J = jacobians.input_jacobians(weights, biases, X.to(D))
    return torch.linalg.svd(J, full_matrices=False).Vh[:, :K]


def subspace_similarity(Va: torch.Tensor, Vb: torch.Tensor) -> float:
    """Mean over inputs of (1/K) ||Va Vb^T||_F^2: the mean squared cosine of the K principal angles."""
    return float((Va @ Vb.transpose(-1, -2)).pow(2).sum((-2, -1)).mean() / K)


p8 = {}
for L in P["small_depths"]:
    V_small = [jacobian_subspaces([W[i] for W in small[L]["W"]]) for i in range(len(seeds))]
    V_reg = [jacobian_subspaces(*reg[L].member(i)) for i in range(len(seeds))]
    V_plain = [jacobian_subspaces([W[i] for W in plain[L][1]]) for i in range(len(seeds))] if L in plain else []
    cost_small = (localized.outputs(small[L]["W"], X.to(D)) - Y.to(D)).pow(2).sum(-1).mean(-1)
    p8[L] = dict(small_reg=float(np.median([subspace_similarity(a, b) for a in V_small for b in V_reg])),
                 plain_reg=float(np.median([subspace_similarity(a, b) for a in V_plain for b in V_reg]))
                 if V_plain else float("nan"),
                 reg_reg=float(np.median([subspace_similarity(V_reg[i], V_reg[j]) for i in range(len(V_reg))
                                          for j in range(i + 1, len(V_reg))])),
                 cost_small=float(cost_small.median()), cost_reg=float(reg[L].cost.median()))
    print(f"L={L}: Jacobian-subspace similarity small-init vs L2 {p8[L]['small_reg']:.2f}, plain vs L2 "
          f"{p8[L]['plain_reg']:.2f}, L2 vs L2 (other seeds) {p8[L]['reg_reg']:.2f}; training cost C: small init "
          f"{p8[L]['cost_small']:.3f}, L2 {p8[L]['cost_reg']:.3f}")
fig, ax = plotting.subplots(ncols=1, height=3.0)
width = 0.25
for j, (key, label) in enumerate((("small_reg", "small init vs L2"), ("plain_reg", "plain vs L2"),
                                  ("reg_reg", "L2 vs L2 (other seeds)"))):
    ax.bar(np.arange(len(p8)) + (j - 1) * width, [p8[L][key] for L in p8], width, color=plotting.color(j), label=label)
ax.axhline(0.8, color="grey", ls=":", lw=1)
ax.axhline(K / d_in, color="grey", ls="--", lw=1)
ax.set(xticks=np.arange(len(p8)), xticklabels=[f"L={L}" for L in p8], ylim=(0, 1),
       ylabel="mean squared cosine of principal angles", title="top-2 input-Jacobian subspaces")
ax.legend(fontsize=8)
plt.show()
p8_sim = min(v["small_reg"] for v in p8.values())
p8_cost = max(abs(math.log(v["cost_small"] / v["cost_reg"])) for v in p8.values())
p8_ctrl = max(v["plain_reg"] for v in p8.values())
for key, val in (("sim", p8_sim), ("cost", math.exp(p8_cost)), ("ctrl", p8_ctrl)):
    glue(f"syn-p8-{key}", f"{val:.2f}", display=False)
ledger.above("p8-same-subspace", "P8", "added 2026-11-26: Jacobian-subspace similarity (top 2, mean squared cosine "
             "of principal angles) of the small-init network at the end of its run and the L2 network of the same "
             "depth, median over pairs, smallest over depths", "> 0.8 (prediction P8)", p8_sim, 0.8, fmt=".2f",
             items="p8", bearing="supports", origin="prior")
ledger.below("p8-same-cost", "P8", "added 2026-11-26: |log| of the ratio of training costs C, small init over L2 "
             "(medians over networks), largest over depths", "< log 2 (prediction P8)", p8_cost, math.log(2),
             fmt=".2f", items="p8", bearing="supports", origin="prior")
ledger.below("p8-control-plain", "control", "added 2026-11-26: the same similarity between the plain network "
             "(standard init, no L2) and the L2 network, largest over depths: the measure can tell functions apart",
             "< 0.8", p8_ctrl, 0.8, fmt=".2f", items="p8", bearing="control", origin="prior")

# %% [markdown]
# P8-TEXT

# %% [markdown]
# ## What the five lenses show together
#
# TOGETHER-PLACEHOLDER
#
# :::{admonition} What was changed after seeing runs
# :class: warning
# The predictions P1-P7 above are as committed before the first execution. After it: the small arm
# was switched from fixed-step gradient descent to the norm-adaptive step of the saddle-to-saddle
# part (with fixed steps the depth-6 networks did not leave the origin), and its step at depth 6
# raised from $\eta_0=1$ to 1.5 after seeds 1-4 showed unfinished runs; the code of P5 was aligned
# with the prediction's text (same learned rank rather than "deepest fitting"). After seeds 0-4: the
# failed predictions were rewritten as claims that state the failure, with these bounds set after
# seeing the seeds: $s_2/s_1\ge0.2$ at the first crossing (P2), relative norm error $<0.4$ (P3(b),
# bearing `qualifies`), median alignment $>0.6$ for the small arm (P4, `qualifies`), "the stable
# rank rises from the first to the second depth" replacing "Spearman correlation $<0$" (the
# correlation was negative on seeds 0-1 and positive on 2-4); P5 groups the fitting networks by
# their own learned rank (the per-depth mode picked a rank-2 range containing non-fitting networks
# on seed 0); the escape control counts acquired singular values instead of a loss ratio (some
# depth-6 runs sit on their second plateau at the end). On 2026-11-26, after review: the rows
# marked "added 2026-11-26" (the step 0.5 and the thresholds of the P1 and P2 rows follow the
# review, which had seen runs; P8 was written before its first run), the relabelling of rows whose
# failure was an artifact (`p1-fewer-than-l2-rank`, `p2-not-rank-one`, `p3a-norms-not-equal`,
# `p3b-not-balanced`: from `contradicts` to `qualifies`, their verdicts unchanged), the plain arm's
# depth 6 (for P8's control), and the digits arm moved to {doc}`02_depth_and_reversion`.
# :::
#
# ## Claims

# %% tags=["nbval-check-output"]
ledger.report()
