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
# # With constant probability, far from rank 1
#
# Theorem 2 of {cite:t}`timor2023implicit` (previous page, {doc}`01_two_points_two_neurons`) says
# that gradient flow never reaches a rank-1 zero-loss network of the two-neuron problem; Theorem 3
# says more: with probability at least $2(\theta/2\pi)^2$ it converges to a network whose rows
# have bounded norms and an angle bounded away from 0 and $\pi$, "not even approximately" rank 1.
# This page tests Theorem 3 and the lemmas of its proof on thousands of runs simulated as one
# batched computation, derives the stable rank that these runs reach as a closed form in the input
# angle $\theta$, and tests the paper's remark that the theorem should hold without its hypothesis
# $\mathbf v(0)=\mathbf 0$, by sweeping the ratio $\|\mathbf v_i(0)\|/\|\mathbf w_i(0)\|$.
#
# :::{admonition} What this page shows
# - Lemmas 10-13 hold along every run that starts split (one neuron active on each input only)
#   with $\mathbf v(0)=\mathbf 0$, and every such run ends in Theorem 3's event $E$, so the bound
#   $\Pr[E]\ge2(\theta/2\pi)^2$ holds on every dataset tested. It is nearly tight at wide angles.
# - Not in the paper: those runs reach stable rank $2/(1+|\cos\theta|)$ up to the initialisation
#   scale (a closed form derived from Lemmas 7, 9 and 13), which tends to 1 as $\theta\to\pi$:
#   "bounded away from 1" holds for each dataset, but not uniformly over datasets. Runs that end
#   with a neuron active on both inputs, covered by no theorem, reach lower stable ranks.
# - The remark after Theorem 3 (the bound "should hold also under weaker assumptions on the
#   initialization"): with $\|\mathbf v_i(0)\|=\|\mathbf w_i(0)\|$, the paper's own experimental
#   setup, it holds on the paper's dataset but fails at input
#   angles of $160^\circ$ and more, and with $\|\mathbf v_i(0)\|=3\|\mathbf w_i(0)\|$, still within
#   Theorem 2's assumptions, on the paper's dataset and at every angle from $120^\circ$
#   ({doc}`/book/errata`). A small ratio does not save it: with a tenth, it fails at $179.8^\circ$;
#   with a hundredth the grid up to $175^\circ$ does not reject it, but the mechanism below makes it
#   fail close enough to $180^\circ$ for every ratio above 0. Split starts with
#   $\mathbf w_i(0)^\top\mathbf x_j+\mathbf v_i(0)^\top\mathbf y_j<0$ die, for good: the failures
#   do not depend on the step or the horizon.
#
# **Take away:** Theorem 3 holds as stated, but "far from rank 1" degrades with the input angle,
# and its hypothesis $\mathbf v(0)=\mathbf 0$ cannot be weakened to a fixed ratio
# $\|\mathbf v_i(0)\|/\|\mathbf w_i(0)\|>0$: the bound becomes tight as $\theta\to\pi$ while a
# fixed fraction of split starts dies. The next page, {doc}`03_where_gradient_flow_goes`, maps which
# initialisations lead where.
# :::

# %% tags=["parameters"]
profile = "ci"   # "ci": CPU, about half a minute; "full": more runs and smaller steps (GPU)
seed = 0
device = "auto"

# %%
PROFILES = {
    # sweep: random datasets (n_data x n_init runs per initialisation kind); lr * steps = GF time
    # thm3: fixed input angles (degrees; the paper's dataset is added) x ratios ||v_i(0)|| / ||w_i(0)||
    #       x thm3_init runs, all in one batch; check: the split starts of ratio 1 at the wide angles
    #       again at step check_lr for a GF time check_T; near_pi: (angle in degrees, ratio, runs)
    #       cells close to 180 deg, for the question the erratum on the remark after Theorem 3 asks
    "ci": dict(sweep_data=150, sweep_init=20, sweep_lr=1e-2, sweep_steps=20_000,
               thm3_angles=(100, 120, 140, 160, 175), thm3_ratios=(0.0, 0.01, 0.1, 0.3, 1.0, 3.0), thm3_init=3000,
               thm3_lr=1e-2, thm3_steps=20_000, traj_runs=200, traj_every=100, check_lr=1e-3, check_T=60,
               near_pi=((179.8, 0.1, 10_000),)),
    "full": dict(sweep_data=1000, sweep_init=50, sweep_lr=1e-3, sweep_steps=300_000,
                 thm3_angles=(95, 100, 110, 120, 130, 140, 150, 160, 170, 175),
                 thm3_ratios=(0.0, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0), thm3_init=20_000,
                 thm3_lr=1e-3, thm3_steps=300_000, traj_runs=2000, traj_every=1000, check_lr=1e-4, check_T=60,
                 near_pi=((179.8, 0.1, 40_000), (179.9, 0.01, 80_000))),
}

# %%
import math

import matplotlib.pyplot as plt
import numpy as np
import torch
from myst_nb import glue

from implicit_bias import plotting, spectra
from implicit_bias.rank_minimization import constant_probability as cp, two_neuron as tn
from implicit_bias.chapter import start_chapter
from implicit_bias.claims import Ledger

P, dev = start_chapter(PROFILES, profile=profile, seed=seed, device=device)
ledger = Ledger("rank_minimization/02_constant_probability")
gen = torch.Generator().manual_seed(seed)
D = torch.float64
DEG = 180 / math.pi

# %% [markdown]
# ## The setting and the theorem
#
# As on the previous page: $N_{W,V}(\mathbf x)=V\sigma(W\mathbf x)$ with
# $W,V\in\mathbb R^{2\times2}$, rows $\mathbf w_i^\top$ of $W$ and columns $\mathbf v_i$ of $V$
# for hidden neuron $i$, the square loss $L=\frac12\sum_j\|N_{W,V}(\mathbf x_j)-\mathbf y_j\|^2$
# on two samples, gradient flow (GF) simulated by gradient descent with small steps, and the
# stable rank $\mathrm{srank}(W)=\|W\|_F^2/\|W\|_2^2$ ({prf:ref}`def-stable-rank`). Assumption 1:
# the labels $\mathbf y_1,\mathbf y_2$ are linearly independent unit vectors; Assumption 2: the
# inputs are unit vectors at an angle $\theta\in(\pi/2,\pi)$. A neuron is *dead* ($\mathcal D$)
# if it is active on no input, in $\mathcal S$ if active on both, in $\mathcal S_j$ if active on
# $\mathbf x_j$ only; a run is *split* when its neurons are one in $\mathcal S_1$ and one in
# $\mathcal S_2$ (Definition 1 of the paper; the cones $\mathcal S_1,\mathcal S_2$ have angular
# width $\theta$).
#
# ```{prf:theorem} Theorem 3
# :label: rank-thm3
# :nonumber:
# Under Assumptions 1-2, let $\mathbf v_i(0)=\mathbf 0$ and let the $\mathbf w_i(0)$ be drawn
# independently from a spherically symmetric distribution with
# $\|\mathbf w_i(0)\|\le\frac{\sqrt3}{2}\min\{\sin\frac{\pi-\theta}4,\sin(\theta-\frac\pi2)\}$.
# Let $E$ be the event that GF converges to zero loss with
# (i) $\measuredangle(\mathbf w_1(\infty),\mathbf w_2(\infty))\in[\pi-\theta,\frac{\pi+\theta}2]$
# and (ii) $\|\mathbf w_i(\infty)\|\in\big(\frac{\sqrt3}2,\sqrt{\frac14+\frac4{3\sin^2\theta}}\big)$.
# Then $\Pr[E]\ge2\left(\frac{\theta}{2\pi}\right)^2$.
# ```
#
# ```{prf:proof}
# (Sketch of Section 6.2.) With probability $2(\theta/2\pi)^2$ the neurons start one in each
# of $\operatorname{int}\mathcal S_1$ and $\operatorname{int}\mathcal S_2$ (two independent uniform
# directions, each cone of width $\theta$); from there GF stays split, each per-sample loss
# decreases, and the limit satisfies the intervals of Lemma 6 (Lemmas 10-13).
# ```
#
# :::{prf:lemma} Lemma 13
# :label: rank-lem13
# :nonumber:
# Under Assumptions 1-2, with $\mathbf v(0)=\mathbf 0$ and $\mathbf w_i(0)\in\operatorname{int}
# \mathcal S_i$ for $i=1,2$, GF converges to zero loss with
# $\mathbf w_i(\infty)\in\operatorname{int}\mathcal S_i$.
# :::
#
# ## The stable rank of split runs, as a function of the angle
#
# Lemma 9's invariant makes the limit of split runs explicit. While neuron $i$ is in
# $\mathcal S_i$ only $\mathbf x_i$ matters: $\mathbf w_i$ moves along $\mathbf x_i$ (Lemma 7)
# and $\mathbf v_i$ along $\mathbf y_i$ (Lemmas 11-12).
#
# ```{prf:proposition} Limit of split runs (derived from Lemmas 7, 9 and 13)
# :label: rank-prop-limit
# :nonumber:
# Under Assumptions 1-2, let $\mathbf v_i(0)=\mathbf 0$ and
# $\mathbf w_i(0)\in\operatorname{int}\mathcal S_i$ for $i=1,2$ (or with the inputs swapped),
# and let $p_i=\mathbf w_i(0)^\top\mathbf x_i$. Then GF converges to zero loss with
# $$\begin{aligned}\mathbf w_i(\infty)&=\mathbf w_i(0)+(s_i-p_i)\mathbf x_i,\qquad
# \mathbf v_i(\infty)=\mathbf y_i/s_i,\\ s_i^2&=\tfrac12\big(p_i^2+\sqrt{p_i^4+4}\big).\end{aligned}$$
# As $\mathbf w(0)\to0$, $W(\infty)\to X^\top$, so $\mathrm{srank}(W(\infty))\to2/(1+|\cos\theta|)$,
# which tends to 1 as $\theta\to\pi$.
# ```
#
# ```{prf:proof}
# Lemma 13 gives convergence to zero loss with $\mathbf w_i(\infty)\in\operatorname{int}\mathcal
# S_i$. Since $\dot{\mathbf w}_i\parallel\mathbf x_i$, $\mathbf w_i(\infty)=\mathbf w_i(0)+c\,
# \mathbf x_i$, and with $s_i=\mathbf w_i(\infty)^\top\mathbf x_i=p_i+c$ the component of
# $\mathbf w_i$ orthogonal to $\mathbf x_i$ is unchanged, so $\|\mathbf w_i(\infty)\|^2=
# \|\mathbf w_i(0)\|^2-p_i^2+s_i^2$. Zero loss on $\mathbf x_i$ needs $s_i\mathbf v_i=\mathbf y_i$,
# so $\|\mathbf v_i(\infty)\|=1/s_i$, and Lemma 9 with $\mathbf v_i(0)=0$ gives
# $\|\mathbf w_i(\infty)\|^2-\|\mathbf v_i(\infty)\|^2=\|\mathbf w_i(0)\|^2$, that is
# $s_i^2-p_i^2=1/s_i^2$, whose positive root is the formula.
# ```
#
# So for wide angles gradient flow *does* come close to rank 1 in the stable-rank sense,
# without contradicting Theorem 2 (the rank is still exactly 2). We test this on
# {glue:text}`rankp-sweep-n` random datasets: $\theta$ uniform in $(\pi/2+0.01,\pi-0.01)$,
# label angle $\psi$ uniform in $(0.2,\pi-0.2)$, random rotations, each with
# {glue:text}`rankp-sweep-init` initialisations of two kinds: Theorem 3's ($\mathbf v(0)=0$,
# $\|\mathbf w_i(0)\|=10^{-4}$, which also meets Theorem 2's bounds) and the paper's (rows and
# columns on the circle of radius $10^{-4}$).

# %%
nd, ni = P["sweep_data"], P["sweep_init"]
th_d = math.pi / 2 + 0.01 + (math.pi / 2 - 0.02) * torch.rand(nd, generator=gen, dtype=D)
psi_d = 0.2 + (math.pi - 0.4) * torch.rand(nd, generator=gen, dtype=D)
Xd, Yd = tn.datasets_with_angles(th_d, psi_d, gen)
Xs, Ys, th_s = Xd.repeat_interleave(ni, 0).to(dev), Yd.repeat_interleave(ni, 0).to(dev), th_d.repeat_interleave(ni)
sweep = {kind: cp.sweep_runs(Xs, Ys, zero_v, gen, lr=P["sweep_lr"], steps=P["sweep_steps"])  # Theorem 3's, the paper's
         for kind, zero_v in (("thm3", True), ("paper", False))}

ideal_s = tn.ideal_stable_rank(th_s)
A = sweep["thm3"]
m_split = A["init_split"]
Wcf, Vcf = tn.closed_form_limit(A["W0"], Xs, Ys)
cf_err = float(torch.maximum((A["sim"].W - Wcf)[m_split.to(dev)].abs().amax(),
                             (A["sim"].V - Vcf)[m_split.to(dev)].abs().amax()))
split_conv = float(A["conv"][m_split].double().mean())
sr_split_err = float((A["sr"] - ideal_s)[m_split].abs().max())
print(f"Theorem-3 initialisation: {int(m_split.sum())} runs start split; converged: {split_conv:.3f}; "
      f"max |limit - closed form| {cf_err:.1e}; max |srank - 2/(1+|cos theta|)| {sr_split_err:.1e}")

# Lemma 6 on runs that end split (exact intervals, no tolerance: Lemma 7 holds exactly for GD too);
# Theorem 2 on all converged runs
lem6, ratio_all = {}, []
for kind, S in sweep.items():
    L6 = lem6[kind] = cp.lemma6_check(S["W0"], S["sim"].W, S["angle"], S["end_split"], S["conv"], th_s)
    svs = spectra.singular_values(S["sim"].W.cpu())
    ratio_all.append(float((svs[:, 1] / svs[:, 0])[S["conv"]].min()))
    S["below_cf"] = float(((S["sr"] - ideal_s)[S["conv"] & ~S["end_split"]] < -0.05).double().mean())
    print(f"{kind:5s} init: converged {float(S['conv'].double().mean()):.3f}; runs ending split: largest share of "
          f"Lemma 6's angle slack used {L6['used']:.3f}, margins to the lower angle end {L6['low']:.3f} and "
          f"to the norm interval {L6['norm']:.3f}; converged runs ending with a neuron in S outside the angle "
          f"interval: {L6['outside_S']:.2f}, with srank more than 0.05 below 2/(1+|cos theta|): {S['below_cf']:.2f}; "
          f"min s2/s1 {ratio_all[-1]:.1e}")
lem6_used, lem6_out, lem6_viol = ([L6[k] for L6 in lem6.values()] for k in ("used", "outside_S", "violations"))

thr = 1.05
theta_star = math.pi - math.acos(2 / thr - 1)  # 2/(1+|cos theta|) = thr, cos theta < 0
low = {kind: S["conv"] & (S["sr"] < thr) for kind, S in sweep.items()}
wide = th_s > 160 / DEG
narrow = th_s <= 135 / DEG
frac_wide = {kind: float(low[kind][wide & S["conv"]].double().mean()) for kind, S in sweep.items()}
min_narrow = {kind: float(S["sr"][narrow & S["conv"]].min()) for kind, S in sweep.items()}
min_narrow_split = {kind: float(S["sr"][narrow & S["end_split"]].min()) for kind, S in sweep.items()}
print(f"closed form: srank < {thr} iff theta > {theta_star * DEG:.1f} deg")
for kind in sweep:
    print(f"{kind:5s} init: P(srank < {thr} | converged, theta > 160 deg) = {frac_wide[kind]:.3f};"
          f" min srank of converged runs with theta <= 135 deg: {min_narrow[kind]:.3f} (ending split:"
          f" {min_narrow_split[kind]:.3f})")

# the stable-rank floor that Lemma 6's intervals imply for runs ending split with theta up to a
# narrow-angle limit, at the runs' own initial row norm
r0_runs = max(float(S["W0"].norm(dim=-1).max()) for S in sweep.values())
lem6_floor = {deg: cp.lemma6_srank_floor_upto(deg / DEG, r0_runs) for deg in (125, 135, 145)}
srank_floor = lem6_floor[135]

# analysis settings (no retraining): the stable-rank cut-off 1.05 (the reading guide's), the angle
# limits 160 and 135 deg and the margin 0.05 of ends-in-S-lower, each with two neighbours
# (narrow-angle-not-low compares with Lemma 6's floor at its angle limit, whatever the cut-off)
print("setting                   | value | wide-angle-low-rank | narrow-angle-not-low | ends-in-S-lower")
settings_rows = []
for name, vals in (("srank cut-off", (1.02, 1.05, 1.1)), ("wide angle limit (deg)", (150, 160, 170)),
                   ("narrow angle limit (deg)", (125, 135, 145)), ("margin below split value", (0.02, 0.05, 0.1))):
    for v in vals:
        cut = v if name == "srank cut-off" else thr
        fw, fn, fs = cp.claim_statistics(sweep, th_s, ideal_s, cut, v if name.startswith("wide") else 160,
                                         v if name.startswith("narrow") else 135, v if name.startswith("margin") else 0.05)
        fn_ok = fn > lem6_floor[v if name.startswith("narrow") else 135]
        settings_rows.append((fw > 0.95, fn_ok, fs > 0.1))
        print(f"{name:25s} | {v:5g} | {fw:.3f} {'PASS' if fw > 0.95 else 'FAIL':4s}          | {fn:.3f} "
              f"{'PASS' if fn_ok else 'FAIL':4s}           | {fs:.2f} {'PASS' if fs > 0.1 else 'FAIL'}")
flips = [c for c, col in zip(("wide-angle-low-rank", "narrow-angle-not-low", "ends-in-S-lower"), zip(*settings_rows))
         if len(set(col)) > 1]
glue("rankp-settings-flips", ", ".join(f"`{c}`" for c in flips) if flips else "none", display=False)
print(f"verdicts that change between neighbouring settings: {', '.join(flips) or 'none'}")

glue("rankp-sweep-n", nd, display=False)
glue("rankp-sweep-init", ni, display=False)
glue("rankp-theta-star", f"{theta_star * DEG:.1f}", display=False)
glue("rankp-cf-err", f"{cf_err:.1e}", display=False)
glue("rankp-min-narrow", f"{min(min_narrow.values()):.3f}", display=False)
glue("rankp-below-cf", f"{min(S['below_cf'] for S in sweep.values()):.2f}", display=False)
glue("rankp-lem6-used", f"{max(lem6_used):.2f}", display=False)
glue("rankp-lem6-out", f"{min(lem6_out):.2f}", display=False)

n_split = int(m_split.sum())
split_fail = int((~A["conv"][m_split]).sum())
ledger.holds("lemma13-split-converge", "Lemma 13", "every run that starts split with $v(0)=0$ converges (count that "
             "do not)", "always", f"{split_fail} of {n_split}", split_fail == 0, tolerance="0", items="lemma13",
             bearing="verifies", value=split_fail, hi=0.5, origin="theory",
             falsifier="a split start with v(0) = 0 that does not converge")
ledger.below("closed-form", "Lemmas 7, 9, 13", "split runs end at the closed-form limit (max abs error; the "
             "cruder limit $W = X^\\top$ misses by the initialisation scale 1e-4)", "not stated", cf_err, 1e-5, fmt=".1e",
             items=["lemma7", "lemma9", "lemma13"], bearing="verifies", origin="prior: a tenth of the init scale",
             falsifier="a split run ending 1e-5 or more from the closed-form limit")
ledger.below("srank-theta", "Sec. 3", "split runs reach $\\mathrm{srank}(W) = 2/(1+|\\cos\\theta|)$ up to "
             "$O(\\mathrm{init})$, which tends to 1 as $\\theta\\to\\pi$ (max deviation)", "'large in general'", sr_split_err, 5e-3, fmt=".1e",
             items="sec3-approx", bearing="qualifies", origin="prior",
             falsifier="a split run whose stable rank misses $2/(1+|\\cos\\theta|)$ by 0.005 or more (the closed "
                       "form, which tends to 1 as $\\theta\\to\\pi$, would not describe gradient flow)")
ledger.holds("lemma6-angle", "Lemma 6", "converged runs ending split: row angle inside Lemma 6's interval "
             "$[\\pi - \\theta, \\theta + 2\\arcsin(2r/\\sqrt3))$ and row norms inside its norm interval, no tolerance (count "
             "outside, both inits; largest share of the angle slack used in the measured column)", "always",
             f"{sum(lem6_viol)} outside; slack used {max(lem6_used):.3f}", sum(lem6_viol) == 0, tolerance="0", items="lemma6",
             bearing="verifies", value=sum(lem6_viol), hi=0.5, origin="theory",
             falsifier="a converged run ending split with its row angle or row norms outside Lemma 6's intervals")
ledger.above("lemma6-control", "Lemma 6", "negative control: converged runs that end with a neuron in S (not "
             "covered by the lemma) fall outside its angle interval (fraction, smaller of the two inits)", "-",
             min(lem6_out), 0.0, fmt=".2f", items="lemma6", bearing="control", origin="prior")
# "rank 2" is a question of orders of magnitude (a rank-1 W gives s2/s1 near 1e-16), and the
# smallest s2/s1 is set by the widest angle drawn (about tan((pi - theta)/2) for a split run), so
# the claim compares its logarithm with log10(1e-4)
ledger.above("thm2-rank2-sweep", "Thm 2", "no converged run over random datasets has rank W = 1: log10 of the "
             "smallest s2/s1 of W (a rank-1 W gives about -16; the widest angle drawn sets the value, "
             "log10 tan(0.005) = -2.3 at the edge of the range)", "rank 2", math.log10(min(ratio_all)), -4.0,
             fmt=".2f", items="thm2", bearing="verifies",
             origin="after-seeds: the threshold 1e-4 was fixed before the first run (a rank-1 W gives s2/s1 at "
             "rounding level); compared on a log scale after seeds 0-4, where the smallest s2/s1, a minimum over "
             "random angles, spread about as much as its distance to 1e-4",
             falsifier="a converged run whose W has log10(s2/s1) at or below -4 (rank 1 to that accuracy)")
ledger.above("wide-angle-low-rank", "Sec. 3", f"for $\\theta > 160^\\circ$, $P(\\mathrm{{srank}} < {thr}\\mid\\text{{converged}})$ (both inits)",
             "not even approximately low rank", min(frac_wide.values()), 0.95, items="sec3-approx", bearing="qualifies",
             origin="after-seeds: 0.95 set after pilot runs of an earlier version, then checked on seeds 0-4",
             falsifier="fewer than 95% of the converged runs with $\\theta > 160^\\circ$ end with stable rank below "
                       "1.05, under either initialisation")
glue("rankp-lem6-floor", f"{srank_floor:.2f}", display=False)
# the stable rank of a 2 x 2 W is a function of its row norms and row angle, so a run inside Lemma 6's
# intervals (lemma6-angle, same runs) is above this floor: the row checks the floor's computation
ledger.above("narrow-angle-not-low", "Lemma 6", "for $\\theta\\le 135^\\circ$ no converged run ending split has "
             f"srank at or below {srank_floor:.2f}, the floor that Lemma 6's intervals imply (smallest srank, both inits; "
             "a control: srank is a function of the row norms and angle, so this follows from the row lemma6-angle on the "
             "same runs and checks the computation of the floor)", "bounded away from 1",
             min(min_narrow_split.values()), srank_floor, items="lemma6", bearing="control",
             origin="theory: the floor of Lemma 6's intervals for input angles up to 135 deg at the runs' initial row norm",
             falsifier="a converged run ending split with $\\theta\\le 135^\\circ$ and stable rank at or below the floor")
ledger.above("ends-in-S-lower", "Sec. 3", "converged runs ending with a neuron in S (covered by no theorem): "
             "fraction with srank more than 0.05 below the split value $2/(1+|\\cos\\theta|)$ (smaller of the two inits)",
             "not even approximately low rank", min(S["below_cf"] for S in sweep.values()), 0.1, fmt=".2f",
             items="sec3-approx", bearing="qualifies",
             origin="after-seeds: 0.1 set after pilot runs of an earlier version, then checked on seeds 0-4",
             falsifier="fewer than 10% of the converged runs ending with a neuron in S more than 0.05 below the split value, under either initialisation")

# %% [markdown]
# **Analysis settings.** The cut-off 1.05 for "approximately rank 1", the angle limits 160 and
# 135 degrees and the margin 0.05 are choices of the analysis; the table printed above evaluates
# the three claims at each and at two neighbours, on the same runs (`narrow-angle-not-low` against
# the floor that Lemma 6 implies up to each angle limit). Verdicts that change:
# {glue:text}`rankp-settings-flips`. A change is expected where the closed form says so: the
# cut-off is reached at the angle $\theta^*$, which moves with the cut-off (for 1.02 it lies
# above $160^\circ$), so `wide-angle-low-rank` is a statement about angles beyond $\theta^*$ of
# its cut-off, and it is `qualifies`.
#
# Runs that start split with $\mathbf v(0)=\mathbf 0$ converge to the closed-form limit
# (largest error {glue:text}`rankp-cf-err`), and their stable rank is $2/(1+|\cos\theta|)$ up to
# the initialisation scale, which falls below 1.05 when $\theta>\theta^*=$
# {glue:text}`rankp-theta-star` degrees. So the paper's "bounded away from 1" holds for each
# fixed dataset, but the bound degrades to 1 as $\theta\to\pi$. Every converged run that ends
# split, whatever its start, lies inside both intervals of Lemma 6 (previous page) with
# no tolerance (it uses at most {glue:text}`rankp-lem6-used` of the angle interval's slack
# above $\theta$), while {glue:text}`rankp-lem6-out` or more of the converged runs that end with a
# neuron in $\mathcal S$ fall outside it. Those runs are covered by no theorem, and they come
# closer to rank 1 than the split value: at least {glue:text}`rankp-below-cf` of them end more
# than 0.05 below $2/(1+|\cos\theta|)$, and the lowest converged run with $\theta\le135^\circ$
# has stable rank {glue:text}`rankp-min-narrow`, where Lemma 6 keeps runs that end split above
# {glue:text}`rankp-lem6-floor`.

# %%
fig, axes = plotting.subplots(2, height=3.0, sharey=True)
cp.plot_srank_against_angle(axes, sweep, th_s, thr)
glue("rankp-fig-theta", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} rankp-fig-theta
# :name: fig-rankp-theta
# Stable rank of the first layer at convergence against the input angle, for random two-point
# datasets, one dot per converged run; left: Theorem 3's initialisation ($\mathbf v(0)=\mathbf 0$),
# right: the paper's (both layers on a circle of radius $10^{-4}$). Blue: runs that start and end
# with one neuron in each of $\mathcal S_1,\mathcal S_2$ (each neuron active on one input only);
# in the left panel these are the runs the closed form covers, and they lie on
# $2/(1+|\cos\theta|)$ (black), which falls below 1.05 (dotted) for $\theta>\theta^*$. Green:
# runs that end split after another start; Lemma 6 bounds their row angle, not their stable rank
# exactly. Orange: runs that end with a neuron active on both inputs, covered by no theorem.
# ```
#
# ## Along the trajectories (Lemmas 10-12)
#
# The proof of Theorem 3 follows runs that start split with $\mathbf v(0)=\mathbf 0$ step by step.
#
# :::{prf:lemma} Lemmas 10-12
# :label: rank-lem10-12
# :nonumber:
# Let $\mathbf w_i(0)\in\operatorname{int}\mathcal S_i$ and $\mathbf v_i(0)=\mathbf 0$ for $i=1,2$,
# and write $\boldsymbol\phi_i=N_{W,V}(\mathbf x_i)-\mathbf y_i$ and $L^i=\frac12\|\boldsymbol
# \phi_i\|^2$, so that $L=L^1+L^2$. While both rows are inside their regions, each $L^i$ is
# non-increasing and decreases at first (Lemma 10); $\mathbf v_i$ stays on
# $\operatorname{span}\{\mathbf y_i\}$ with $\mathbf v_i^\top\boldsymbol\phi_i<0$ (Lemma 11); and
# the set where $\mathbf w_i=\mathbf w_i(t')+c\,\mathbf x_i$ with $c\ge0$, $\mathbf v_i\in
# \operatorname{span}\{\mathbf y_i\}$ and $\mathbf v_i^\top\boldsymbol\phi_i\le0$ is invariant,
# so $\mathbf w_i^\top\mathbf x_i$ never decreases (Lemma 12).
# :::
#
# We record {glue:text}`rankp-traj-n` runs of the sweep that start split with $\mathbf v(0)=0$
# at every {glue:text}`rankp-traj-every`-th step and check the three statements at every record:
# the largest increase of a per-sample loss, the largest component of $\mathbf v_i$ off
# $\operatorname{span}\{\mathbf y_i\}$, and the smallest change of $\mathbf w_i^\top\mathbf x_i$.
# As a negative control, the same checks on split starts of the paper's initialisation with
# $\mathbf v_i(0)^\top\mathbf y_i<0$ for some neuron, which Lemmas 11-12 do not cover.

# %%
idx_s = torch.nonzero(A["init_split"]).squeeze(-1)[: P["traj_runs"]]
traj = dict(lr=P["sweep_lr"], steps=P["sweep_steps"], every=P["traj_every"])
tc = cp.lemmas10_12_along(A["W0"][idx_s.to(dev)], torch.zeros_like(A["W0"][idx_s.to(dev)]), Xs[idx_s.to(dev)],
                          Ys[idx_s.to(dev)], **traj)
B_ = sweep["paper"]
_, yp = tn.served_pairs(B_["W0"].cpu(), Xs.cpu(), Ys.cpu())
qp = (B_["V0"].cpu().transpose(1, 2) * yp).sum(-1)                    # v_i(0).y_j for the input neuron i serves
idx_n = torch.nonzero(B_["init_split"] & (qp < 0).any(-1)).squeeze(-1)[: P["traj_runs"]]
tn_ = cp.lemmas10_12_along(B_["W0"][idx_n.to(dev)], B_["V0"][idx_n.to(dev)], Xs[idx_n.to(dev)], Ys[idx_n.to(dev)],
                           **traj)
print(f"v(0) = 0, {tc['runs']} split starts: largest rise of a per-sample loss {tc['rise']:.1e}; largest part of "
      f"v_i off span(y_i) {tc['off_span']:.1e}; smallest change of w_i.x_i between records {tc['drop']:.1e}")
print(f"control, paper's init with some v_i(0).y_i < 0, {tn_['runs']} split starts: w_i.x_i decreases at some "
      f"record in {tn_['dropped_frac']:.2f} of the runs; part of v_i off span(y_i) up to {tn_['off_span']:.1e}")
glue("rankp-traj-n", tc["runs"], display=False)
glue("rankp-traj-every", P["traj_every"], display=False)
glue("rankp-traj-drop", f"{tn_['dropped_frac']:.2f}", display=False)
ledger.below("lemma10-per-sample", "Lemma 10", "$v(0)=0$, split starts: each per-sample loss $L^i$ never rises "
             "between records (largest rise)", "non-increasing", tc["rise"], 1e-12, fmt=".1e", items="lemma10",
             bearing="verifies", origin="theory: 0 up to float64 rounding",
             falsifier="a per-sample loss that rises by 1e-12 or more between two records")
off_drop = max(tc["off_span"] / 1e-10, -tc["drop"] / 1e-12)
ledger.holds("lemmas11-12", "Lemmas 11-12", "$v(0)=0$, split starts: $v_i$ stays on $\\mathrm{span}(y_i)$ and $w_i^\\top x_i$ never "
             "decreases (largest part off the span over 1e-10 and largest decrease over 1e-12, the larger of the "
             "two; must be < 1)", "invariant set G", f"{tc['off_span']:.0e}; {tc['drop']:.0e}", off_drop < 1,
             tolerance="< 1e-10; > -1e-12", items=["lemma11", "lemma12"], bearing="verifies", value=off_drop, hi=1.0,
             origin="theory: 0 up to float64 rounding",
             falsifier="$v_i$ leaving $\\mathrm{span}(y_i)$ by 1e-10 or more, or $w_i^\\top x_i$ decreasing by 1e-12 "
                       "or more, on some record")
ledger.above("lemma12-control", "Lemma 12", "negative control: paper's init, split starts with some "
             "$v_i(0)^\\top y_i < 0$: fraction of runs in which $w_i^\\top x_i$ decreases", "(not covered)", tn_["dropped_frac"],
             0.5, fmt=".2f", items="lemma12", bearing="control", origin="prior")

# %% [markdown]
# Along every recorded run the three statements hold to rounding error. Without $\mathbf v(0)=0$
# they fail: in {glue:text}`rankp-traj-drop` of the paper-initialised split starts with some
# $\mathbf v_i(0)^\top\mathbf y_i<0$, $\mathbf w_i^\top\mathbf x_i$ first decreases, which is how
# such runs can reach $\mathcal D$ (last section).
#
# ## The probability bound, and the initialisation
#
# The paper adds after Theorem 3: "in Thm. 3 the weights in the second layer are initialized to
# zero, while in Thm. 2 the assumption on the initialization is weaker. This difference is for
# technical convenience, and we believe that Thm. 3 should hold also under weaker assumptions on
# the initialization, as the next empirical result demonstrates". That experiment (Figure 1,
# previous page) starts every column $\mathbf v_i(0)$ on the circle of radius $10^{-4}$, like the
# rows $\mathbf w_i(0)$; on its dataset the bound holds narrowly ({doc}`01_two_points_two_neurons`,
# claim `thm3-paper-data`). Here we vary the dataset and the ratio
# $\kappa=\|\mathbf v_i(0)\|/\|\mathbf w_i(0)\|$ at $\|\mathbf w_i(0)\|=10^{-4}$ (directions uniform,
# so $\kappa=0$ is Theorem 3's hypothesis and $\kappa=1$ the paper's experiment): the paper's
# dataset ($\theta\approx90.58^\circ$) and datasets with $\theta\in$ {glue:text}`rankp-thm3-angles`
# degrees (random rotations, labels at a right angle), $\kappa\in$ {glue:text}`rankp-thm3-ratios`,
# {glue:text}`rankp-thm3-n` runs each, all in one batch of {glue:text}`rankp-thm3-total` runs.
# Every $\|\mathbf w_i(0)\|=10^{-4}$ is within Theorem 3's bound at every angle used, and every
# $\|\mathbf v_i(0)\|\le3\cdot10^{-4}$ within Theorem 2's ($\|\mathbf v_i(0)\|<\frac12$).

# %%
angles, ratios, n3 = list(P["thm3_angles"]), list(P["thm3_ratios"]), P["thm3_init"]
X0, Y0 = tn.paper_dataset()
theta0 = float(tn.angle_between(X0[:, 0], X0[:, 1]))
names = ["paper's data"] + [f"{a} deg" for a in angles]
G, K = len(names), len(ratios)
th_g = torch.tensor([theta0] + [a / DEG for a in angles], dtype=D)
th3 = th_g.repeat_interleave(K * n3)
rho3 = torch.tensor(ratios, dtype=D).repeat_interleave(n3).repeat(G)
X3, Y3 = tn.datasets_with_angles(th3, torch.full_like(th3, math.pi / 2), gen)
X3[: K * n3], Y3[: K * n3] = X0, Y0                       # the paper's dataset itself, not rotated
assert bool((tn.thm3_init_bound(th_g) >= 1e-4).all()) and bool((tn.thm2_init_bound(th_g) > 1e-4).all())
assert 1e-4 * max(ratios) < 0.5                          # Theorem 2: each v_i(0) shorter than 1/2
W3, V3 = tn.paper_init(len(th3), 1e-4, gen, v_radius=1e-4 * rho3)
sim3 = tn.simulate(W3.to(dev), V3.to(dev), X3.to(dev), Y3.to(dev), lr=P["thm3_lr"], steps=P["thm3_steps"])
conv3 = sim3.converged.cpu()
E3 = tn.event_E(sim3.W.cpu(), conv3, th3).view(G, K, n3)
split3 = tn.is_split(tn.region_codes(W3, X3)).view(G, K, n3)
rule3 = tn.split_survives(W3, V3, X3, Y3).view(G, K, n3)
bound = tn.thm3_probability_bound(th_g).numpy()
kE = E3.sum(-1).numpy()
ci3 = np.array([[tn.binomial_interval(int(kE[g_, r_]), n3, 0.99) for r_ in range(K)] for g_ in range(G)])
p3 = kE / n3
n_split = split3.sum(-1).numpy()
split_out = (split3 & ~E3).sum(-1).numpy()                  # split starts that end outside E
rule_dies = (split3 & ~rule3).sum(-1).numpy()               # split starts the linearised rule says die
for g_ in range(G):
    print(f"{names[g_]:>12s} (bound {bound[g_]:.3f}): " + "  ".join(
        f"rho={r:g}: {p3[g_, r_]:.3f} [{ci3[g_, r_, 0]:.3f}, {ci3[g_, r_, 1]:.3f}]" for r_, r in enumerate(ratios)))
print("split starts ending outside E, by ratio (all datasets): " + ", ".join(
    f"rho={r:g}: {int(split_out[:, r_].sum())} of {int(n_split[:, r_].sum())}" for r_, r in enumerate(ratios)))

r0, r1, r3 = ratios.index(0.0), ratios.index(1.0), ratios.index(3.0)
small = [r_ for r_, r in enumerate(ratios) if 0 < r <= 0.01]
wide = [g_ for g_ in range(1, G) if angles[g_ - 1] >= 160]
not_100 = [0] + [g_ for g_ in range(1, G) if angles[g_ - 1] >= 120]      # the paper's dataset and >= 120 deg

# are the failures behind the two contradictions below (ratio 1 at the wide angles, ratio 3 on
# the paper's dataset and from 120 deg) permanent, and not an effect of the step or the horizon?
# The split starts there that end outside E must be settled (a dead neuron, or a flat stationary
# point short of zero loss: Lemma 5 and tn.stuck), and the same starts at a ten times smaller
# step must end in E or not alike
cell = torch.zeros(G, K, n3, dtype=torch.bool)
cell[wide, r1] = True
cell[not_100, r3] = True
chk = (cell & split3).reshape(-1)
lost = chk & ~E3.reshape(-1)
W3d, V3d, X3d, Y3d = sim3.W.cpu(), sim3.V.cpu(), X3, Y3
settled3 = sim3.dead.cpu() | tn.stuck(W3d, V3d, X3d, Y3d, 1e-12) | (sim3.loss.cpu() < 1e-12)
unsettled = int((lost & ~settled3).sum())
sim_chk = tn.simulate(W3[chk].to(dev), V3[chk].to(dev), X3[chk].to(dev), Y3[chk].to(dev), lr=P["check_lr"],
                      steps=round(P["check_T"] / P["check_lr"]))
E_chk = tn.event_E(sim_chk.W.cpu(), sim_chk.converged.cpu(), th3[chk])
n_chk = int(chk.sum())
disagree = int((E_chk != E3.reshape(-1)[chk]).sum())
print(f"ratio 1 at >= 160 deg and ratio 3 at the paper's angle and >= 120 deg: {n_chk} split starts, {int(lost.sum())} end outside E, of which {unsettled} "
      f"not settled (dead neuron or flat stationary point); at step {P['check_lr']:g} (GF time {P['check_T']:g}) "
      f"{disagree} of them change their outcome")
glue("rankp-chk-n", f"{n_chk:,}", display=False)
glue("rankp-chk-lost", f"{int(lost.sum()):,}", display=False)
# v(0) = 0: every split start must end in E; with P(split start) = bound exactly (two independent
# uniform directions), the count gives a one-sided 99% lower limit for P(E) / bound
fails0, ns0 = int(split_out[:, r0].sum()), int(n_split[:, r0].sum())
low_ratio = min(tn.binomial_interval(int(n_split[g_, r0] - split_out[g_, r0]), int(n_split[g_, r0]), 0.98,
                                     "exact")[0] for g_ in range(G))
# the linearised rule against the outcome, for split starts of the paper's initialisation
s1 = split3[:, r1]
agree_rule = float((rule3[:, r1] == conv3.view(G, K, n3)[:, r1])[s1].double().mean())
gap_paper = min(bound[g_] - ci3[g_, r1, 1] for g_ in wide)
gap_thm2 = min(bound[g_] - ci3[g_, r3, 1] for g_ in not_100)
gap_small = min(ci3[g_, r_, 1] - bound[g_] for g_ in range(G) for r_ in small)
for key, val in {"thm3-angles": "{" + ", ".join(map(str, angles)) + "}",
                 "thm3-ratios": "{" + ", ".join(f"{r:g}" for r in ratios) + "}", "thm3-n": f"{n3:,}",
                 "thm3-total": f"{G * K * n3:,}", "split-n": f"{ns0:,}", "split-fails": fails0,
                 "low-ratio": f"{low_ratio:.3f}", "wide": " and ".join(str(angles[g_ - 1]) for g_ in wide),
                 "p175-0": f"{p3[-1, r0]:.3f}", "b175": f"{bound[-1]:.3f}", "p175-1": f"{p3[-1, r1]:.3f}",
                 "p0-3": f"{p3[0, r3]:.3f}", "b0": f"{bound[0]:.3f}",
                 "low-angles": ", ".join(str(a) for a in angles if a < 120),
                 "plow-3": ", ".join(f"{p3[g_, r3]:.3f} [{ci3[g_, r3, 0]:.3f}, {ci3[g_, r3, 1]:.3f}] against {bound[g_]:.3f}"
                                     for g_ in range(1, G) if angles[g_ - 1] < 120),
                 "dead-small": f"{split_out[:, small].sum() / max(n_split[:, small].sum(), 1):.4f}",
                 "dead-1": f"{split_out[:, r1].sum() / n_split[:, r1].sum():.2f}",
                 "dead-3": f"{split_out[:, r3].sum() / n_split[:, r3].sum():.2f}",
                 "rule-agree": f"{agree_rule:.3f}"}.items():
    glue(f"rankp-{key}", val, display=False)

ledger.holds("thm3-bound", "Thm 3", "with $v(0)=0$, every run that starts split ends in the event $E$, at every "
             "angle (count that do not); with $P(\\text{split start}) = 2(\\theta/2\\pi)^2$ this gives $P(E)\\ge$ the bound",
             "$P(E)\\ge 2(\\theta/2\\pi)^2$", f"{fails0} of {ns0}; P(E) >= {low_ratio:.3f} x bound (99%)", fails0 == 0,
             tolerance="0", items="thm3", bearing="verifies", value=fails0, hi=0.5, origin="theory",
             falsifier="a split start with v(0) = 0 that ends outside the event E")
ledger.above("thm3-paper-init", "Thm 3 remark", "with $\\lVert v_i(0)\\rVert = \\lVert w_i(0)\\rVert$ (the paper's experiment), the 99% "
             "Wilson upper limit of $P(E)$ is below the bound at every angle $\\ge 160^\\circ$ (smallest bound minus upper "
             "limit)", "should hold under weaker init", gap_paper, 0.0, fmt=".3f", items="thm3-remark",
             bearing="contradicts", origin="paper: the bound of Theorem 3",
             vtol=0.01,
             falsifier="at some angle $\\ge 160^\\circ$ the 99% upper limit of $P(E)$ with $\\kappa = 1$ reaches "
                       "the bound")
ledger.above("thm3-thm2-init", "Thm 3 remark", "with $\\lVert v_i(0)\\rVert = 3\\lVert w_i(0)\\rVert$ (within Theorem 2's assumptions), "
             "the 99% upper limit of $P(E)$ is below the bound on the paper's dataset and at every angle $\\ge 120^\\circ$ "
             "(smallest bound minus upper limit)", "should hold under Thm 2's weaker init", gap_thm2, 0.0, fmt=".3f",
             items="thm3-remark", bearing="contradicts", vtol=0.01,
             origin="after-seeds: the bound is the paper's; 100 deg left out after seed 2, where the interval reached "
             "the bound",
             falsifier="with $\\kappa = 3$ the 99% upper limit of $P(E)$ reaches the bound on the paper's dataset or "
                       "at some angle $\\ge 120^\\circ$")
ledger.below("thm3-fail-settled", "Thm 3 remark", "control for the two claims above: the split starts of their "
             "cells that end outside E have a dead neuron or sit at a flat stationary point (none still moving at the "
             "end), and at a 10x smaller step they end in E or not alike (fraction of these starts that are unsettled "
             "or change their outcome)", "-", (unsettled + disagree) / n_chk, 0.01, fmt=".4f", items="thm3-remark",
             bearing="control", origin="after-seeds: 1%, a fraction of split starts too small to move the frequency "
             "of E by a tenth of its gap to the bound; chosen after a pilot on seed 0 with no exception")
ledger.above("thm3-small-ratio", "Thm 3 remark", "with $0 < \\lVert v_i(0)\\rVert\\le 0.01\\lVert w_i(0)\\rVert$, the bound is not rejected "
             "at any angle (smallest 99% upper limit of P(E) minus bound); not a proof that it holds: the samples "
             "resolve differences of about 0.02, and at wide angles the bound is nearly tight", "should hold under "
             "weaker init",
             gap_small, 0.0, fmt=".3f", items="thm3-remark", bearing="qualifies",
             origin="paper: the bound of Theorem 3", vtol=0.01,
             falsifier="for some $\\kappa\\le 0.01$ and some angle the 99% upper limit of $P(E)$ is below the "
                       "bound (the bound rejected)")
ledger.above("thm3-death-rule", "Thm 3 remark", "$\\lVert v_i(0)\\rVert = \\lVert w_i(0)\\rVert$, runs starting split: 'converges iff "
             "$w_i(0)^\\top x_j + v_i(0)^\\top y_j > 0$ for both neurons' agrees with the outcome (fraction, all datasets)",
             "($v(0) = 0$ makes every split start converge)", agree_rule, 0.9, fmt=".3f", items="thm3-remark",
             bearing="qualifies", origin="after-seeds: 0.9 set after pilot runs of an earlier version, then checked "
             "on seeds 0-4",
             falsifier="the linearised rule agrees with fewer than 90% of the outcomes of the split starts at "
                       "$\\kappa = 1$")

# %% [markdown]
# **Does a small ratio suffice at every angle?** No, and the runs above say why. The
# split starts are a fraction $2(\theta/2\pi)^2$ of all starts, exactly the bound; the room
# above the bound comes from starts with a neuron active on both inputs, which have probability
# about $2(\pi-\theta)/\pi$ and vanish as $\theta\to\pi$. The split starts that die, on the other
# hand, are those with a neuron close to the edge of its region ($p_i+q_i<0$ with
# $|q_i|\le\kappa\|\mathbf w_i(0)\|$), a fraction that grows with $\kappa$ and does not vanish
# as $\theta\to\pi$ (above: {glue:text}`rankp-dead-by-ratio`). So for every $\kappa>0$ the lost
# split starts outweigh the room at angles close enough to $\pi$. The cells below test this at
# two such angles, with $P(E)=2(\theta/2\pi)^2P(E\mid\text{split})+P(E,\text{not split})$: the first
# factor is exact, the two probabilities are estimated from the runs, and each gets a 99.5% upper
# limit (together a 99% upper limit for $P(E)$). Result: {glue:text}`rankp-near` (claim
# `thm3-near-pi`; every lost split start is settled, control `thm3-near-pi-settled`).

# %%
near_rows = []
for ang, kap, n_near in P["near_pi"]:
    th_n = torch.full((n_near,), ang / DEG, dtype=D)
    Xn, Yn = tn.datasets_with_angles(th_n, torch.full_like(th_n, math.pi / 2), gen)
    Wn, Vn = tn.paper_init(n_near, 1e-4, gen, v_radius=1e-4 * kap)
    assert bool((tn.thm3_init_bound(th_n[:1]) >= 1e-4).all())
    sim_n = tn.simulate(Wn.to(dev), Vn.to(dev), Xn.to(dev), Yn.to(dev), lr=P["thm3_lr"], steps=P["thm3_steps"])
    En = tn.event_E(sim_n.W.cpu(), sim_n.converged.cpu(), th_n)
    sp = tn.is_split(tn.region_codes(Wn, Xn))
    settled_n = sim_n.dead.cpu() | tn.stuck(sim_n.W.cpu(), sim_n.V.cpu(), Xn, Yn, 1e-12) | (sim_n.loss.cpu() < 1e-12)
    b_n = float(tn.thm3_probability_bound(ang / DEG))
    est = cp.split_decomposed_estimate(En, sp, b_n, 0.99)  # P(split) = b_n exactly
    near_rows.append(dict(est, angle=ang, kappa=kap, n=n_near, bound=b_n, unsettled=int((sp & ~En & ~settled_n).sum())))
    print(f"{ang:g} deg, kappa = {kap:g}, {n_near:,} runs ({est['split']:,} start split): P(E) = {est['p']:.4f} (raw frequency "
          f"{est['raw']:.4f}, its split share drawn at random) against the bound {b_n:.4f}; split starts that end outside E "
          f"{est['dead']:.4f} of {est['split']:,}; 99% upper limit of P(E) {est['upper']:.4f}; {near_rows[-1]['unsettled']} of the lost split starts not settled")
glue("rankp-near", "; ".join(f"{r['angle']:g} deg and $\\kappa={r['kappa']:g}$: $P(E)$ = {r['p']:.4f}, upper limit "
                             f"{r['upper']:.4f}, against the bound {r['bound']:.4f}, with {r['dead']:.3f} of the split "
                             "starts lost" for r in near_rows), display=False)
glue("rankp-dead-by-ratio", ", ".join(f"$\\kappa={r:g}$: {split_out[:, r_].sum() / max(n_split[:, r_].sum(), 1):.3f}"
                                      for r_, r in enumerate(ratios)), display=False)
near_gap = min(r["bound"] - r["upper"] for r in near_rows)
ledger.above("thm3-near-pi", "Thm 3 remark", "close to 180 deg the bound fails for small ratios too: at "
             + " and ".join(f"{r['angle']:g}° with $\\kappa = {r['kappa']:g}$" for r in near_rows)
             + ", the 99% upper limit of P(E) is below the bound (smallest bound minus upper limit)",
             "should hold under weaker init", near_gap, 0.0, fmt=".4f", items="thm3-remark", bearing="contradicts",
             origin="paper: the bound of Theorem 3", vtol=2e-3,
             falsifier="at one of the cells near 180 deg the 99% upper limit of P(E) reaches the bound")
n_unsettled = sum(r["unsettled"] for r in near_rows)
ledger.holds("thm3-near-pi-settled", "Thm 3 remark", "control for thm3-near-pi: every split start of those cells "
             "that ends outside E has a dead neuron or sits at a flat stationary point (count not settled)", "-",
             f"{n_unsettled}", n_unsettled == 0, tolerance="0", items="thm3-remark", bearing="control",
             value=n_unsettled, hi=0.5, origin="prior: 0, as for the failures of thm3-paper-init")

# %%
fig, axes = plotting.subplots(2, height=3.0)
cp.plot_event_against_ratio(axes, ratios, names, p3, ci3, bound, split_out, n_split, rule_dies)
glue("rankp-fig-thm3", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} rankp-fig-thm3
# :name: fig-rankp-thm3
# Left: frequency of Theorem 3's event $E$ (zero loss with rows of bounded norms at an angle
# bounded away from 0 and $\pi$) minus the theorem's bound, with 99% Wilson intervals, against the
# ratio of the initial norms of the two layers ($\kappa=0$ is Theorem 3's hypothesis, drawn at the
# left end; $\kappa=1$ is the paper's experiment), for the paper's dataset and five input angles.
# Below the black line the bound fails. Right: the fraction of runs starting split (one neuron in
# each of $\mathcal S_1,\mathcal S_2$) that end outside $E$ (solid), and the fraction that the
# linearised rule predicts to die (dotted).
# ```
#
# With $\mathbf v(0)=\mathbf 0$, {glue:text}`rankp-split-fails` of the
# {glue:text}`rankp-split-n` runs that start split end outside $E$ (claim `thm3-bound`). Since a
# start is split with probability exactly $2(\theta/2\pi)^2$, this is the theorem's bound, with
# $\Pr[E]\ge$ {glue:text}`rankp-low-ratio` times the bound at 99% confidence on every dataset; the
# bound is nearly tight at wide angles ({glue:text}`rankp-p175-0` against
# {glue:text}`rankp-b175` at $175^\circ$), where almost no other start ends in $E$.
#
# The hypothesis cannot be dropped. With $\kappa\le0.01$ the bound is not rejected at any angle
# of the grid, up to $175^\circ$ (claim `thm3-small-ratio`; {glue:text}`rankp-dead-small` of the split starts end outside $E$).
# With $\kappa=1$, the paper's experiment, the bound fails at {glue:text}`rankp-wide` degrees
# ({glue:text}`rankp-p175-1` against {glue:text}`rankp-b175` at $175^\circ$; claim
# `thm3-paper-init`), and with $\kappa=3$, which still meets Theorem 2's assumptions, on the paper's
# dataset ({glue:text}`rankp-p0-3` against {glue:text}`rankp-b0`) and at every angle from
# $120^\circ$ (claim `thm3-thm2-init`); at {glue:text}`rankp-low-angles` degrees the estimate is
# below the bound too ({glue:text}`rankp-plow-3`), but on some seeds its interval reaches the bound
# ({doc}`/book/robustness`), so the claim leaves that angle out. These failures are not an artefact
# of the simulation: of the {glue:text}`rankp-chk-n` split starts in the cells of the two
# claims, the {glue:text}`rankp-chk-lost` that end outside $E$ have a dead neuron or sit at a flat
# stationary point short of zero loss, and the same starts at a ten times smaller step end alike
# (control `thm3-fail-settled`). The mechanism is visible in the gradients of Lemma 7: for neuron $i$
# active on $\mathbf x_j$ only, with $p_i=\mathbf w_i^\top\mathbf x_j$,
# $q_i=\mathbf v_i^\top\mathbf y_j$ and $\boldsymbol\phi_j\approx-\mathbf y_j$ while the network is
# small, $\dot p_i\approx q_i$ and $\dot q_i\approx p_i$, so $p_i+q_i$ grows like $e^t$ and
# $p_i-q_i$ decays like $e^{-t}$. If $p_i(0)+q_i(0)<0$, $\mathbf w_i^\top\mathbf x_j$ reaches 0
# and the neuron leaves $\mathcal S_j$, usually into $\mathcal D$. The rule "a split start
# converges exactly when $p_i(0)+q_i(0)>0$ for both neurons" agrees with
# {glue:text}`rankp-rule-agree` of the outcomes at $\kappa=1$ (claim `thm3-death-rule`), and the
# fraction of split starts it predicts to die follows the measured one at every ratio (right
# panel): about proportional to $\kappa$ for small $\kappa$, {glue:text}`rankp-dead-1` at $\kappa=1$ and
# {glue:text}`rankp-dead-3` at $\kappa=3$. The deaths happen at every angle; what changes with the
# angle is the margin by which the bound is beaten with $\mathbf v(0)=\mathbf 0$. At the paper's
# angle, starts with a neuron in $\mathcal S$ (a cone of width $\pi-\theta\approx\pi/2$) often end
# in $E$ and make up for the dead split starts; at wide angles $\mathcal S$ is thin, the bound is
# nearly tight, and a few per cent of dead split starts break it. None of this rescues rank
# minimisation: the event fails because runs die, not because they become low-rank.
#
# ## Conclusion
#
# Theorem 3 and the lemmas of its proof hold on every run they cover: split starts with
# $\mathbf v(0)=\mathbf 0$ stay split with non-increasing per-sample losses (Lemmas 10-12),
# converge (Lemma 13), to the closed-form limit, inside Lemma 6's intervals and inside the event
# $E$, so the probability bound holds. Three things the paper does not say: the stable rank of
# these runs is $2/(1+|\cos\theta|)$, so the distance from rank 1 vanishes as $\theta\to\pi$; runs
# with a neuron active on both inputs are covered by no theorem and reach lower stable ranks; and
# the hypothesis $\mathbf v(0)=\mathbf 0$ cannot be weakened to the paper's experimental
# initialisation at wide angles, nor to Theorem 2's assumptions. With $\|\mathbf v(0)\|$ a
# hundredth of $\|\mathbf w(0)\|$ or less the runs do not reject the bound, but at wide angles,
# where it is nearly tight with $\mathbf v(0)=\mathbf 0$, even the few split starts that die
# could break it by less than these samples resolve: not resolved at this scale. The verdicts are collected in {doc}`/book/errata`; how they fare on
# other seeds is on {doc}`/book/robustness`.
#
# **How the tolerances were set.** Statements that hold "always" in the theory (Lemmas 6, 13,
# Theorem 3 for split starts) are counted, and a single exception fails the claim; Lemmas 10-12
# are tested with no tolerance beyond rounding ($10^{-12}$, $10^{-10}$). The closed form is
# compared at $10^{-5}$, below the initialisation scale $10^{-4}$ that a cruder limit would miss
# by, and the stable rank of split runs at $5\cdot10^{-3}$. "Rank 2" means $s_2/s_1$ above
# $10^{-4}$ over random datasets, a threshold fixed before the first run; the claim compares
# $\log_{10}$ of the smallest $s_2/s_1$ with $-4$, a scale chosen after seeds 0-4 (the smallest
# ratio is set by the widest angle drawn and spread over seeds about as much as its distance to
# $10^{-4}$ on a linear scale, while a rank-1 $W$ gives about $10^{-16}$); "approximately rank 1" is made concrete as "stable rank below
# 1.05", the cut-off our reading guide used, and $\theta^*$ is defined by the same number, while runs
# ending split at $\theta\le135^\circ$ are compared with the floor {glue:text}`rankp-lem6-floor` that Lemma 6's
# intervals imply at the runs' initial norm (a control of that computation: it follows from `lemma6-angle`). The
# comparisons with Theorem 3's bound use 99% Wilson intervals on {glue:text}`rankp-thm3-n` runs
# per dataset and ratio; on another CPU a few chaotic runs may change their outcome, so those claims
# allow their values to move by 0.01 (thirty runs) across machines. The claim for
# $\|\mathbf v_i(0)\|=3\|\mathbf w_i(0)\|$ first covered every angle; on seed 2 the interval at
# $100^\circ$ reached the bound, so that angle was left out of the claim (and the sample raised
# from 2,000 to 3,000 runs per cell) after seeing seeds. Three thresholds were set after
# pilot runs of an earlier version of this page and then checked on seeds 0-4
# ({doc}`/book/robustness`): at least 95% of converged wide-angle runs below 1.05, at least 10% of
# the runs that end with a neuron in $\mathcal S$ more than 0.05 below the split value (0 if they
# followed it), and at least 90% agreement for the rule that predicts which split starts die.
# The control that the failing split starts are settled and do not depend on the step allows 1%
# of exceptions, a fraction too small to move the frequency of $E$ by a tenth of its distance to
# the bound; it was chosen after a pilot run on seed 0 that had none.
#
# ## Claims

# %% tags=["nbval-check-output"]
ledger.report()
