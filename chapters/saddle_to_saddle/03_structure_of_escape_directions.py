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
# # The structure of optimal escape directions
#
# The main result of {cite:t}`bantzis2025saddle` (Theorem 3.1) is that the deeper layers of an
# optimal escape direction are close to rank one and close to linear, with a bound that decays
# like $\ell^{-1/2}$ in the layer index $\ell$. Its proof combines three results of independent
# interest: the optimal speed does not decrease with depth (Proposition 3.2), nearly rank-one
# non-negative inputs make every layer nearly rank one (Proposition 3.3), and any fast enough
# escape has many nearly rank-one layers (Proposition 3.4). This page computes optimal escape
# directions with the solver of {doc}`01_escape_directions` for three kinds of data (Example 1 of
# {doc}`02_rank_two_escape`, digits, and synthetic nearly rank-one data), measures the quantities
# the results bound, evaluates the bounds, and checks the constructions.
#
# ```{admonition} What to take away
# - The optima have the structure the paper describes, more sharply than its bounds: on Example 1
#   only the first layer is rank two and every later layer is exactly rank one, and from the third
#   layer on the ReLU acts as the identity; on digits every layer is rank one. (Read on optima that
#   the solver finds from random starts; the lifted networks of Proposition 3.2 have this
#   structure by construction and are not counted.)
# - Where more than one path is needed ({glue:text}`sts3-gon-n` points with alternating
#   gradients), the first layer is high-rank and every later layer is rank one: the tail energy
#   collapses after one layer instead of decaying like the theorem's $\ell^{-1/2}$ (at the depths,
#   {glue:text}`sts3-gon-cold`, where the solver reaches the optimum from random starts).
# - The optimal speed does not decrease with depth (strictly increasing from depth 2 to 3 on
#   Example 1), and it is flat from then on, as Section 5's second conjecture expects.
# - Theorem 3.1's bound is **vacuous** on Example 1 and on digits: it provably says nothing below
#   layer {glue:text}`sts3-rig-dig` on digits and {glue:text}`sts3-rig-ex1` on Example 1 (the
#   thresholds computed from the solver's speed, {glue:text}`sts3-v-dig` and
#   {glue:text}`sts3-v-ex1`, overstate this by orders of magnitude).
#   It becomes informative only on data that are
#   themselves nearly rank one with gradients aligned to them ($\kappa=$ {glue:text}`sts3-k-syn` in our instance);
#   there the optima are exactly rank one and the bound holds with room to spare.
# - Proposition 3.3 and the key inequality of Proposition 3.4 hold on every point we tried; the
#   inequality is tight for rank-one data and fails, as it should, outside the ball
#   $\lVert\theta\rVert^2\le L$. The inequality holds for *every* network in the ball, so these
#   checks are controls of the library, not findings about the paper.
# ```

# %% tags=["parameters"]
profile = "ci"   # "ci": CPU, about half a minute; "full": more depths, wider nets, more restarts
seed = 0
device = "auto"

# %%
PROFILES = {
    # ex1_*: Example 1, one batched solve per depth (restarts, width, steps), plus warm starts
    # from the lifted optimum of the previous depth; digits_*: digits (per_class examples of each
    # class, cross-entropy G), normalised steps; synth_*: nearly rank-one synthetic data
    # (Theorem 3.1's non-vacuous instance at depth synth_depth; Proposition 3.3 at depth 4 for
    # each eps); random_points: random parameters for Proposition 3.4; gon_*: gon_n points on the
    # circle with alternating gradients (Theorem 3.1's rate on data that need several paths)
    "ci": dict(ex1_depths=(2, 3, 4, 5, 6), ex1_width=16, ex1_restarts=16, ex1_steps=1500, warm_restarts=4,
               digits_depths=(2, 3, 4, 6, 8), per_class=10, digits_width=16, digits_restarts=4, digits_steps=1000,
               synth_depth=10, synth_eps=0.1, prop33_eps=(0.0, 1e-3, 1e-2, 3e-2), synth_restarts=4,
               synth_steps=1500, random_points=64, gon_n=16, gon_depths=(2, 3, 4, 6, 8, 12), gon_restarts=16),
    "full": dict(ex1_depths=(2, 3, 4, 5, 6, 8, 10), ex1_width=64, ex1_restarts=64, ex1_steps=10_000, warm_restarts=16,
                 digits_depths=(2, 3, 4, 6, 8, 10, 12), per_class=100, digits_width=64, digits_restarts=16,
                 digits_steps=5000, synth_depth=16, synth_eps=0.1, prop33_eps=(0.0, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1),
                 synth_restarts=32, synth_steps=10_000, random_points=1024, gon_n=16,
                 gon_depths=(2, 3, 4, 5, 6, 8, 10, 12, 16), gon_restarts=32),
}

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch
from myst_nb import glue

from implicit_bias import data, plotting
from implicit_bias.chapter import start_chapter
from implicit_bias.claims import Ledger
from implicit_bias.saddle_to_saddle import bounds, escape, lifting, structure, training
from implicit_bias.saddle_to_saddle import depths as sd
from implicit_bias.saddle_to_saddle import example1 as ex
from implicit_bias.saddle_to_saddle import localized as lo

P, dev = start_chapter(PROFILES, profile=profile, seed=seed, device=device)
ledger = Ledger("saddle_to_saddle/03_structure_of_escape_directions")
gen = torch.Generator().manual_seed(seed)
D = torch.float64


def glue_all(values: dict[str, object]) -> None:
    """Glue each value under `sts3-<key>` (text only, not displayed)."""
    for key, val in values.items():
        glue(f"sts3-{key}", val, display=False)

# %% [markdown]
# ## The statements
#
# Notation of the {doc}`notation page </book/notation>`: $Z_\ell$ and $Z^\sigma_\ell=\sigma(Z_\ell)$
# are the pre- and post-activations of layer $\ell$ on the data ($Z^\sigma_0=X$), $\tau$ is the
# tail energy ({prf:ref}`def-tail-energy`), the share of a matrix's squared Frobenius norm outside
# its top singular direction, and $\nu_\ell=\lVert Z^\sigma_\ell-Z_\ell\rVert_F^2/\lVert Z_\ell
# \rVert_F^2$ measures how much the ReLU changes layer $\ell$.
#
# :::{prf:theorem} Theorem 3.1 (= A.7) of {cite:t}`bantzis2025saddle`
# :label: sts-thm31
# :nonumber:
# Let $\theta^\star$ be an optimal escape direction ({prf:ref}`sts-def21`) with speed $s^*$, and
# $$\kappa=\frac{\lVert X\rVert_F\lVert G\rVert_F}{s^*},\qquad c=\kappa\sqrt{2\log\kappa}.$$
# Then for every layer $\ell$ with $c\,\ell^{-1/2}<1$,
# $$\max\big\{\tau(W_\ell),\ \tau(Z^\sigma_\ell),\ \nu_\ell\big\}\ \le\ \frac{8c}{1-c\,\ell^{-1/2}}\,\ell^{-1/2}=:B(\ell).$$
# :::
#
# The appendix writes the bound as $8c'\ell^{-1/2}/(s^*-c'\ell^{-1/2})$ with
# $c'=\sqrt2\lVert X\rVert_F\lVert G\rVert_F\sqrt{\log\lVert X\rVert_F+\log\lVert G\rVert_F-\log s^*}$,
# the same bound since $c'=s^*c$ (`bounds.theorem31_appendix_bound`, unit-tested), and the main
# text writes $s^*=\min\operatorname{Tr}[\cdot]$ where $-\min$ is meant. Since
# $\lvert\mathcal L_0\rvert\le\lVert X\rVert_F\lVert G\rVert_F$ on the sphere, $\kappa\ge1$, and
# $B(\ell)<1$ exactly when $\ell>81c^2$. The abstract's reading, "the first singular value of the
# $\ell$-th layer is at least $\ell^{1/4}$ larger than any other", follows from
# $s_2/s_1\le\sqrt{\tau/(1-\tau)}$ up to the constant $(8c)^{1/2}$.
#
# :::{prf:proposition} Proposition 3.2 (= A.3) of {cite:t}`bantzis2025saddle`
# :label: sts-prop32
# :nonumber:
# From a depth-$L$ network with $\lVert\theta\rVert^2=L$ and $\mathcal L_0(\theta)=-s_0<0$ one can
# build, for every $k\ge1$, a depth-$(L+k)$ network with $\lVert\theta'\rVert^2\le L+k$ and
# $\mathcal L_0(\theta')\le\mathcal L_0(\theta)$, whose last $k+1$ layers are rank one and on whose
# added layers the ReLU is the identity. Hence the optimal speed $s^*(L)$ is non-decreasing in
# $L$. (The statement says $\lVert\theta'\rVert^2=L+k$; the construction gives $\le$, and rescaling
# onto the sphere only lowers $\mathcal L_0$.)
# :::
#
# ```{prf:proof}
# Write the last two layers neuron by neuron, $\operatorname{Tr}[G^\top Z_L]=\sum_i a_ib_i\,
# \operatorname{Tr}[G^\top\bar u_i\sigma(\bar v_i^\top Z^\sigma_{L-2})]$ with $a_i=\lVert
# W_L[:,i]\rVert$, $b_i=\lVert W_{L-1}[i,:]\rVert$; keep only the neuron $i^*$ with the most
# negative normalised term, scaled by $\sqrt S$ on both sides ($S=\sum_ia_ib_i$), and pass its
# non-negative output through $k$ layers $e_1e_1^\top$. The trace becomes $S$ times the minimum,
# at most the original; the norm becomes $\sum_{\ell\le L-2}\lVert W_\ell\rVert^2+2S+k\le
# \lVert\theta\rVert^2+k$ since $2a_ib_i\le a_i^2+b_i^2$ (`lifting.lift`).
# ```
#
# :::{prf:proposition} Proposition 3.3 (= A.5) of {cite:t}`bantzis2025saddle`
# :label: sts-prop33
# :nonumber:
# Let $u\in\mathbb R^{d_0}_{\ge0}$, $v\in\mathbb R^N_{\ge0}$, $\lVert E\rVert_F\le\epsilon$, and
# $\theta^\star$ a minimiser of $\operatorname{Tr}[G^\top Y_\theta(vu^\top+E)]$ over
# $\lVert\theta\rVert^2\le L$ (inputs $vu^\top+E$, one sample per row), with optimal speed $s^*$.
# Then every layer has $\tau(W_\ell),\tau(Z^\sigma_\ell),\nu_\ell\le8\lVert G\rVert_F\epsilon/
# (s^*-\lVert G\rVert_F\epsilon)$. For $\epsilon=0$ the optimal speed is
# $\lVert G^\top v\rVert\lVert u\rVert$.
# :::
#
# :::{prf:proposition} Proposition 3.4 (= A.4) of {cite:t}`bantzis2025saddle`
# :label: sts-prop34
# :nonumber:
# If $\lVert\theta\rVert^2\le L$ and $\operatorname{Tr}[G^\top Z_L]\le-s_0<0$, then
# $$\sum_{\ell=0}^{L-1}\log\operatorname{srank}(Z^\sigma_\ell)\ \le\ 2\log\frac{\lVert X\rVert_F
# \lVert G\rVert_F}{s_0},$$
# so for every $p\in(0,1)$ at least $(1-p)L$ of the layers $\ell\in\{0,\dots,L-1\}$ have
# $\tau(Z^\sigma_\ell)\le\frac{2}{pL}\log\frac{\lVert X\rVert_F\lVert G\rVert_F}{s_0}$.
# :::
#
# ```{prf:proof}
# (Proposition 3.4.) Telescope $\lVert X\rVert_F^2/\lVert Z_L\rVert_F^2$ into the stable ranks
# $\operatorname{srank}(Z^\sigma_\ell)$ times ratios $\lVert Z^\sigma_{\ell-1}\rVert_{op}^2/
# \lVert Z_\ell\rVert_F^2\ge\lVert W_\ell\rVert_F^{-2}$; AM-GM gives $\prod_\ell\lVert W_\ell
# \rVert_F^2\le1$, and Cauchy-Schwarz $\lvert\operatorname{Tr}[G^\top Z_L]\rvert\le\lVert G\rVert_F
# \lVert Z_L\rVert_F$. Pigeonhole on the sum, and $\tau=1-1/\operatorname{srank}\le\log
# \operatorname{srank}$. Theorem 3.1 follows: Proposition 3.4 gives an early layer $\ell_0\le\ell$
# that is nearly rank one, Lemma A.6 makes its top singular vectors non-negative, and
# Proposition 3.3 applied to the rest of the network (optimal for its input) bounds layer $\ell$.
# ```
#
# ## Example 1 across depths
#
# On the eight points of {doc}`02_rank_two_escape` we solve for the optimal escape direction at
# each depth $L\in$ {glue:text}`sts3-ex1-depths` ({glue:text}`sts3-ex1-restarts` restarts of
# width {glue:text}`sts3-ex1-width` per depth, one batched computation each), and, from the
# second depth on, also from the lifted optimum of the previous depth (Proposition 3.2's
# construction, perturbed by $10^{-3}$ and optimised again).

# %%
X1, G1 = ex.circle_data()
glue_all({"ex1-depths": "{" + ", ".join(str(v) for v in P["ex1_depths"]) + "}", "ex1-restarts": P["ex1_restarts"],
          "ex1-width": P["ex1_width"]})


def solve_depths(X, G, depths, width, restarts, steps, warm: bool, **kw):
    """`depths.optima_over_depths` with this page's generator and warm restarts."""
    return sd.optima_over_depths(X, G, depths, width=width, restarts=restarts, steps=steps,
                                 warm_restarts=P["warm_restarts"], warm=warm, generator=gen, **kw)


COLD_ORIGIN = ("after-seeds: threshold {} as before; restated after a review on the cold restarts within 0.2% of "
               "the best speed (lifted optima have the structure by construction), 0.2% chosen after a prototype "
               "on seeds 0-1")
ex1 = solve_depths(X1, G1, P["ex1_depths"], P["ex1_width"], P["ex1_restarts"], P["ex1_steps"], warm=True,
                   lr=0.3, lr_final=1e-3)
for L, row in ex1.items():
    st = row["structure"]
    extra = (f"; lifted from the previous depth: {row['lifted_speed']:.6f}, re-optimised {row['warm_speed']:.6f}"
             if "warm_speed" in row else "")
    print(f"L = {L}: s* ~ {row['speed']:.6f} ({row['source']}; best cold restart {row['cold_speed']:.6f}){extra}\n   tau(W_l) {[round(float(v), 4) for v in st.tau_W]}  "
          f"nu_l {[round(float(v), 4) for v in st.nu]}")

# %% [markdown]
# At depth 2 the best speed is $\sqrt2-1$; this is exact, a fact we derive (it is not in the
# paper): for two layers $\mathcal L_0=\sum_iW_2[i]\,S(W_1[i,:])$ with $S(w)=\sum_jG_j\sigma(w\cdot
# x_j)=\lVert w\rVert S(\hat w)$ and $\lvert S(\hat w)\rvert\le\sqrt2-1$ (Eq. (6)), so
# $\lvert\mathcal L_0\rvert\le(\sqrt2-1)\sum_i\lvert W_2[i]\rvert\lVert W_1[i,:]\rVert\le\sqrt2-1$
# on the sphere. From depth 3 on it is $1/2$ (the solver finds Eq. (2) again), at every depth tried:
# the speed increases strictly from depth 2 to 3 and is then flat. The structure is the same at
# every depth $\ge3$: $\tau(W_1)\approx1/2$ (two equal singular values) and $\tau(W_\ell)=0$ for
# $\ell\ge2$; the ReLU acts on the first two layers ($\nu_1,\nu_2\approx1/2$) and is the identity
# from the third on ($\nu_\ell=0$). This is the "half bottleneck" of the paper's discussion: a
# finite number of high-rank layers at the start, then rank-one identity layers, the structure of
# the second conjecture of Section 5. Re-optimised warm starts from the lifted network end where
# the cold restarts do (to about $10^{-4}$), and the lift of the depth-2 optimum is a one-neuron
# network that re-optimisation does not leave (it stays at $\sqrt2-1$).
#
# **What is measured, and what is built.** Where the lift of the previous depth's optimum is the
# best network found (here at depths {glue:text}`sts3-lifted1`), its added layers are rank one and
# linear *by construction* (Proposition 3.2), so reading the structure there would test nothing.
# The structure claims below therefore read the best **cold** restart (random start, no lift), at
# the depths where it reaches the best speed to within 0.2% (here {glue:text}`sts3-cold1`): its
# rank-one, linear tail is found by the solver, not built in.

# %%
depths1 = list(P["ex1_depths"])
s_ex1 = np.array([ex1[L]["speed"] for L in depths1])
deep1 = [L for L in depths1 if L >= 3]
# the structure claims read the best *cold* restart, at the depths where it reaches the best speed:
# where the lift of the previous depth wins, its added layers are rank one and linear by construction
c1 = sd.cold_structure(ex1, deep1)
cold1, cold1_lin = c1.depths, c1.linear_depths          # nu_l for l >= 3 needs a third hidden layer
first_tau, later_tau, later_nu, ratio_l14 = c1.first_tau, c1.later_tau, c1.later_nu, c1.ratio_l14
plateau = float(s_ex1[depths1.index(3):].max() - s_ex1[depths1.index(3):].min())
lifted1 = [L for L in deep1 if ex1[L]["source"] == "lift"]
glue_all({"first-tau": f"{first_tau:.3f}", "later-tau": f"{later_tau:.0e}", "cold1": ", ".join(str(L) for L in cold1),
          "lifted1": ", ".join(str(L) for L in lifted1) if lifted1 else "none"})
ledger.close("ex1-depth2", "Prop. 3.2 (Example 1)", r"the best depth-2 speed is $\sqrt2 - 1$ (derived: one neuron is "
             "optimal at depth 2)", "-", s_ex1[0], ex.RANK_ONE_SPEED, atol=1e-3, fmt=".6f", items="prop32",
             bearing="control", origin="theory: s*(2) = sqrt(2) - 1; 1e-3 for the solver")
ledger.above("prop32-strict", "Prop. 3.2, Example 1", "the optimal speed increases strictly from depth 2 to 3 "
             "($s^*(3) - s^*(2)$)", "non-decreasing", s_ex1[1] - s_ex1[0], 0.08, fmt=".4f", items=["prop32", "ex1"],
             bearing="supports", origin="paper: 1/2 - (sqrt(2) - 1) = 0.086, less a margin",
             falsifier="$s^*(3) - s^*(2)$ of 0.08 or less from the solver's best optima")
ledger.below("conj2-plateau", "Sec. 5 (2)", f"on Example 1 the optimal speed is flat from depth 3 to {depths1[-1]} "
             "(max - min of the best speeds)", "s* plateaus after some depth (conjecture)", plateau, 2e-3,
             fmt=".1e", items="conj2", bearing="supports", origin="prior",
             falsifier="the best speeds at depths 3 to 6 spreading by 0.002 or more")
ledger.above("ex1-first-rank-two", "Example 1, Sec. 5 (2)", r"at every depth $\ge 3$ where a cold restart reaches the "
             r"best speed, the first layer of its optimum is rank two (smallest $\tau(W_1)$; two equal singular values "
             "give 0.5)", "a high-rank first layer", first_tau, 0.4, fmt=".3f", items=["ex1", "conj2"],
             bearing="supports", origin="prior",
             falsifier=r"an optimum at depth $\ge 3$ whose first layer has $\tau(W_1)$ of 0.4 or less (rank one)")
ledger.holds("ex1-half-bottleneck", "Thm. 3.1, Sec. 5 (2)", "... and every later layer is rank one (largest "
             r"$\tau(W_\ell)$, $\ell \ge 2$, over the cold-restart optima; depths used, at least 2)", "deep layers nearly rank one",
             f"{later_tau:.1e}; {len(cold1)} of {len(deep1)}", later_tau < 1e-3 and len(cold1) >= 2,
             tolerance="< 1e-3; >= 2", items=["thm31", "conj2"], bearing="supports", value=later_tau, hi=1e-3,
             origin=COLD_ORIGIN.format("1e-3"),
             falsifier=r"a later layer ($\ell \ge 2$) of a cold-restart optimum with $\tau$ of 1e-3 or more, or fewer than 2 depths where a cold restart reaches the best speed")
ledger.holds("ex1-linear-deep", "Thm. 3.1", r"from the third layer on the ReLU is the identity (largest $\nu_\ell$, $\ell \ge 3$, "
             r"over the cold-restart optima of depth $\ge 4$; depths used, at least 1)", "deeper layers nearly linear",
             f"{later_nu:.1e}; {len(cold1_lin)}", len(cold1_lin) >= 1 and later_nu < 1e-3, tolerance="< 1e-3; >= 1",
             items="thm31", bearing="supports", value=later_nu, hi=1e-3,
             origin=COLD_ORIGIN.format("1e-3"),
             falsifier=r"a layer $\ell \ge 3$ of a depth $\ge 4$ optimum with nonlinearity $\nu$ of 1e-3 or more")
ledger.below("abstract-l14", "Abstract, Sec. 1.3", r"on Example 1, $s_1$ of every layer $\ell \ge 2$ is more than $\ell^{1/4}$ "
             r"times $s_2$ (largest $\ell^{1/4} s_2/s_1$ over layers and the cold-restart optima)",
             r"$s_1\ge\ell^{1/4} s_2$ up to a constant", ratio_l14, 1.0, fmt=".1e", items="abstract-l14",
             bearing="control", origin="paper")

# %% [markdown]
# ## Digits across depths
#
# The same on digits ({glue:text}`sts3-digits-n` examples, {glue:text}`sts3-per-class` per class,
# standardised; $G$ of the mean cross-entropy at zero output), with width
# {glue:text}`sts3-digits-width`, {glue:text}`sts3-digits-restarts` restarts and fixed-angle steps
# (`normalized=True`; from a random direction a deep network's $\mathcal L_0$ and its gradient are
# tiny, and fixed-size steps leave that flat region), again with warm starts from the lifted
# optimum of the previous depth. Here the optimum is a single neuron passed through rank-one
# layers at every depth: every layer is rank one and the speed is the same at every depth (the
# plateau starts at depth 2). The cold restarts alone can miss it: the largest shortfall of their
# best against the best speed at the same depth is {glue:text}`sts3-cold-short` (at depth
# {glue:text}`sts3-cold-depth`), a local optimum of the solver. Proposition 3.2 is about the true
# optima, which the lifted warm starts track; the shortfall measures the solver, not the
# proposition. As for Example 1, the claim that every layer is rank one reads the cold restarts
# that reach the best speed to within 0.2% (depths {glue:text}`sts3-cold2`), not the lifted
# networks.

# %%
digits = data.digits(seed=seed, dtype=D)
Xd, yd = training.balanced_subset(digits.X_train, digits.y_train, P["per_class"])
Gd = lo.cross_entropy_gradient(yd, 10)
glue_all({"digits-n": len(yd), "per-class": P["per_class"], "digits-width": P["digits_width"],
          "digits-restarts": P["digits_restarts"]})
dig = solve_depths(Xd, Gd, P["digits_depths"], P["digits_width"], P["digits_restarts"], P["digits_steps"], warm=True,
                   lr=0.05, lr_final=0.01, normalized=True)
depths2 = list(P["digits_depths"])
s_dig = np.array([dig[L]["speed"] for L in depths2])
for L in depths2:
    st = dig[L]["structure"]
    print(f"L = {L}: s* ~ {dig[L]['speed']:.6f}; largest tau(W_l) {float(st.tau_W.max()):.1e}, "
          f"tau(Z_l) {float(st.tau_Z.max()):.1e}; nu_l {[round(float(v), 4) for v in st.nu]}")
c2 = sd.cold_structure(dig, depths2)
cold2, dig_tau = c2.depths, c2.rank_tau
print(f"digits: cold restarts within 0.2% of the best speed at depths {cold2}; sources "
      f"{[dig[L]['source'] for L in depths2]}")
spread_dig = float((s_dig.max() - s_dig.min()) / s_dig.min())
cold = np.array([float(dig[L]["speeds"].max()) for L in depths2])
short = (s_dig - cold) / s_dig
i_short = int(np.argmax(short))
unit = np.array([lo.unit_sphere_speed(s, L) for s, L in zip(s_dig, depths2)])
glue_all({"cold2": ", ".join(str(L) for L in cold2), "cold-depth": depths2[i_short],
          "cold-short": f"{100 * short[i_short]:.1f}%", "dig-tau": f"{dig_tau:.0e}"})
ledger.holds("digits-rank-one", "Thm. 3.1", f"on digits every layer of the optimum is rank one (largest $\\tau$ of $W_\\ell$ "
             "and $Z_\\ell$ over the cold-restart optima that reach the best speed; depths used, at least 2)",
             "deep layers nearly rank one", f"{dig_tau:.1e}; {len(cold2)} of {len(depths2)}",
             dig_tau < 1e-3 and len(cold2) >= 2, tolerance="< 1e-3; >= 2", items="thm31", bearing="supports",
             value=dig_tau, hi=1e-3,
             origin=COLD_ORIGIN.format("1e-3"),
             falsifier=r"a layer of a digits optimum with $\tau(W_\ell)$ or $\tau(Z_\ell)$ of 1e-3 or more")
ledger.below("digits-plateau", "Sec. 5 (2)", f"on digits no depth up to {depths2[-1]} escapes faster than depth "
             f"{depths2[0]}: the best speeds agree within 2% (relative spread)", "s* plateaus after some depth "
             "(conjecture)", spread_dig, 0.02, fmt=".1e", items="conj2", bearing="supports",
             origin="prior: the guide's 2%",
             falsifier="a depth up to 8 whose best speed differs by 2% or more from depth 2's")
ledger.below("prop32-unit-control", "Prop. 3.2, negative control", "measured on the unit sphere, $L^{-L/2} s^*(L)$, "
             "the same speeds fall with depth (ratio deepest / shallowest)", "-", unit[-1] / unit[0], 0.1, fmt=".1e",
             items="prop32", bearing="control", origin="prior")

# %% [markdown]
# **The lifting construction, exactly.** Applied with $k\in\{1,2\}$ to every optimum above and to
# {glue:text}`sts3-random-n` random points of the sphere per data set, Proposition 3.2's
# construction never raises $\mathcal L_0$ (largest increase {glue:text}`sts3-lift-rise`), never
# exceeds the norm budget $L+k$ (largest excess {glue:text}`sts3-lift-norm`), and its added layers
# are rank one with the ReLU acting as the identity on them (largest $\tau$ and $\nu$ there:
# {glue:text}`sts3-lift-tail`).

# %%
cases = [(row["best"], X1, G1) for row in ex1.values()] + [(row["best"], Xd, Gd) for row in dig.values()]
for X, G, dims in ((X1, G1, [2, 8, 8, 1]), (Xd, Gd, [64, 16, 16, 10])):
    Wr = lo.random_directions(dims, P["random_points"], generator=gen)
    cases += [([W[i] for W in Wr], X, G) for i in range(P["random_points"])]
lc = lifting.lift_check(cases, ks=(1, 2))
rise, excess, tail = lc.rise, lc.excess, lc.tail
print(f"lifting on {lc.networks} networks, k = 1, 2: largest change of L_0 {rise:+.1e}; largest norm excess over "
      f"||theta||^2 + k {excess:+.1e}; largest tau / nu of the added layers {tail:.1e}")
glue_all({"lift-rise": f"{rise:+.0e}", "lift-norm": f"{excess:+.0e}", "lift-tail": f"{tail:.0e}"})
ledger.holds("lift-exact", "Prop. 3.2 / App. A.3", r"the lifting never raises $\mathcal L_0$, stays within $\lVert\theta\rVert^2 + k$, and "
             r"adds rank-one identity layers (largest rise of $\mathcal L_0$; norm excess; tail $\tau/\nu$)", "construction",
             f"{rise:.1e}; {excess:.1e}; {tail:.1e}", rise <= 1e-12 and excess <= 1e-12 and tail <= 1e-12,
             tolerance="each <= 1e-12", items="prop32", bearing="control", value=max(rise, excess, tail), hi=1e-12,
             origin="theory")

# %% [markdown]
# ## Theorem 3.1's bound on these data
#
# For both data sets we evaluate $\kappa$, $c$ and the vacuity threshold $81c^2$ with the best
# speed found: on Example 1 $\hat\kappa=$ {glue:text}`sts3-k-ex1` and $81c^2=$
# {glue:text}`sts3-v-ex1`; on digits $\hat\kappa=$ {glue:text}`sts3-k-dig` and $81c^2=$
# {glue:text}`sts3-v-dig`. Since $\hat s\le s^*$, $\hat\kappa\ge\kappa$: the bound computed
# from it is conservative when we *check* the bound, but it overstates how far the bound is
# vacuous. A rigorous statement needs an upper bound on $s^*$. On the sphere
# $\prod_\ell\lVert W_\ell\rVert_F\le1$, and peeling the first or the last layer gives
# $s^*\le\min(\lVert X\rVert_{op}\lVert G\rVert_F,\lVert X\rVert_F\lVert G\rVert_{op})$
# (`bounds.speed_upper_bound`), so
# $\kappa\ge\max(\lVert X\rVert_F/\lVert X\rVert_{op},\lVert G\rVert_F/\lVert G\rVert_{op})$:
# $\kappa\ge$ {glue:text}`sts3-klo-ex1` on Example 1 and $\ge$ {glue:text}`sts3-klo-dig` on
# digits, so the bound says nothing below layer {glue:text}`sts3-rig-ex1` and
# {glue:text}`sts3-rig-dig` respectively, whatever the true optimum is. These thresholds are
# far lower than the solver-based ones (which overstate the vacuity by orders of magnitude) but
# still above the depth of any network one would train. The theorem's content is asymptotic; at these depths it is the
# measured structure above, not the bound, that shows the low-rank bias.
#
# **A non-vacuous instance.** The bound is informative only when $\kappa$ is close to 1, that is
# when $\lvert\mathcal L_0\rvert$ can nearly reach $\lVert X\rVert_F\lVert G\rVert_F$: when the
# data are nearly rank one and $G$ is aligned with them. We take $X=vu^\top+\epsilon E$ with
# $u,v\ge0$ (normalised, $E$ Gaussian of unit Frobenius norm, $\epsilon=$
# {glue:text}`sts3-synth-eps`) and $G=-vg^\top$ ($g\ge0$), and solve at depth
# {glue:text}`sts3-synth-depth`: $\kappa=$ {glue:text}`sts3-k-syn`, $c=$ {glue:text}`sts3-c-syn`,
# so $B(\ell)<1$ for every $\ell>$ {glue:text}`sts3-v-syn`. The optimum is exactly rank one and
# linear (largest $\tau$ or $\nu$: {glue:text}`sts3-syn-max`), far below
# $B(\ell)\ge$ {glue:text}`sts3-syn-bmin`. As a negative control, a random point of the sphere
# violates the bound at {glue:text}`sts3-syn-control` of its layers where the bound is below 1.

# %%
k_ex1, c_ex1, v_ex1 = bounds.theorem31_constants(X1, G1, max(s_ex1))
k_dig, c_dig, v_dig = bounds.theorem31_constants(Xd, Gd, max(s_dig))
# rigorous: kappa >= max(||X||_F / ||X||_op, ||G||_F / ||G||_op) whatever the solver finds
rig = {name: bounds.vacuity_depth(bounds.theorem31_c(bounds.kappa_lower_bound(Xa, Ga)))
       for name, Xa, Ga in (("ex1", X1, G1), ("dig", Xd, Gd))}
kap_lo = {"ex1": bounds.kappa_lower_bound(X1, G1), "dig": bounds.kappa_lower_bound(Xd, Gd)}
nr1 = bounds.NearlyRankOne.sample(24, 6, 2, generator=gen)      # u, v, g >= 0 unit vectors, E of unit norm
Xs, Gs = nr1.X(P["synth_eps"]), nr1.G
Ls = P["synth_depth"]
syn = escape.solve_escape(Xs, Gs, depth=Ls, widths=8, restarts=P["synth_restarts"], steps=P["synth_steps"], lr=0.05,
                          lr_final=0.01, normalized=True, generator=gen)
k_syn, c_syn, v_syn = bounds.theorem31_constants(Xs, Gs, float(syn.speed.max()))
st_syn = structure.layer_structure(syn.network(syn.best()), Xs)
layers = torch.arange(1, Ls + 1)
B = bounds.theorem31_bound(layers, c_syn)
measured = structure.worst_per_layer(st_syn)
informative = B < 1
slack = float((measured[informative] / B[informative]).max())
rand_pt = lo.random_directions([6] + [8] * (Ls - 1) + [2], generator=gen)
st_rand = structure.layer_structure(rand_pt, Xs)
violated = int((st_rand.tau_W[informative] > B[informative]).sum())
print(f"Example 1: kappa {k_ex1:.2f}, c {c_ex1:.1f}, 81c^2 {v_ex1:.0f} (rigorous: kappa >= {kap_lo['ex1']:.3f}, "
      f"81c^2 >= {rig['ex1']:.0f}); digits: kappa {k_dig:.2f}, c {c_dig:.1f}, 81c^2 {v_dig:.0f} (rigorous: kappa >= "
      f"{kap_lo['dig']:.3f}, 81c^2 >= {rig['dig']:.0f})")
print(f"synthetic (eps {P['synth_eps']}, depth {Ls}): kappa {k_syn:.4f}, c {c_syn:.3f}, 81c^2 {v_syn:.2f}; bound "
      f"{[round(float(b), 3) for b in B]}; largest measured / bound {slack:.1e}; random point violates at "
      f"{violated} of {int(informative.sum())} layers")
glue_all({"k-ex1": f"{k_ex1:.1f}", "v-ex1": f"{v_ex1:,.0f}", "k-dig": f"{k_dig:.1f}", "v-dig": f"{v_dig:,.0f}",
          "klo-ex1": f"{kap_lo['ex1']:.3f}", "rig-ex1": f"{rig['ex1']:,.0f}", "klo-dig": f"{kap_lo['dig']:.2f}",
          "rig-dig": f"{rig['dig']:,.0f}", "synth-eps": f"{P['synth_eps']:g}", "synth-depth": Ls, "k-syn": f"{k_syn:.4f}",
          "c-syn": f"{c_syn:.3f}", "v-syn": f"{v_syn:.2f}", "syn-max": f"{float(measured.max()):.0e}",
          "syn-bmin": f"{float(B[informative].min()):.2f}",
          "syn-control": f"{violated} of {int(informative.sum())}"})
ledger.above("thm31-vacuous", "Thm. 3.1", "on Example 1 and digits the bound is vacuous below layer $81c^2$, "
             r"computed from the rigorous $\kappa \ge \max(\lVert X\rVert_F/\lVert X\rVert_\mathrm{op}, \lVert G\rVert_F/\lVert G\rVert_\mathrm{op})$ (smaller of the two)",
             r"bound decays like $\ell^{-1/2}$", min(rig.values()), 100.0, fmt=".0f", items="thm31", bearing="qualifies",
             origin="prior: 100, an order of magnitude above the deepest network of the book",
             falsifier="a rigorous lower bound $81c^2$ of 100 layers or less (the bound non-vacuous at practical depths)")
ledger.holds("thm31-nonvacuous", "Thm. 3.1", rf"on nearly rank-one aligned data ($\kappa$ near 1) the optimum "
             "satisfies the bound at every layer where it is below 1 (largest measured / bound; layers with $B < 1$)",
             r"$\tau(W_\ell), \tau(Z^\sigma_\ell), \nu_\ell\le B(\ell)$", f"{slack:.1e}; {int(informative.sum())} of {Ls}",
             bool(informative.sum() >= Ls // 2) and slack <= 1.0, tolerance="<= 1; >= half the layers",
             items="thm31", bearing="control", value=slack, hi=1.0, origin="theory")
ledger.above("thm31-control", "Thm. 3.1, negative control", "a random point of the sphere violates the bound "
             "(share of the informative layers)", "-", violated / max(int(informative.sum()), 1), 0.5, fmt=".2f",
             items="thm31", bearing="control", origin="prior")

# %% [markdown]
# ## Theorem 3.1's rate on data that need more than one path
#
# On digits the optimum is a single path, and on the synthetic data above the bound is met
# trivially (the optimum is exactly rank one). Example 1 needs two paths in its first layer. A
# harder case is {glue:text}`sts3-gon-n` points on the circle with alternating gradients (the
# same construction with twice the points), where one neuron fits the alternation even worse.
# We solve it at depths {glue:text}`sts3-gon-depths`
# ({glue:text}`sts3-gon-restarts` restarts, width {glue:text}`sts3-ex1-width`, warm starts from
# the lifted optimum of the previous depth) and measure, layer by layer, $\tau(W_\ell)$ and
# $s_2/s_1$, whose decay the theorem bounds by $\ell^{-1/2}$ and $\ell^{-1/4}$ (up to its
# vacuous constant). Result: the optimal speed rises from depth 2 ({glue:text}`sts3-gon-s2`) to
# depth 3 ({glue:text}`sts3-gon-s3`) and is then flat (largest spread from depth 3 on
# {glue:text}`sts3-gon-spread`); the first layer is high-rank ($\tau(W_1)\ge$
# {glue:text}`sts3-gon-first`) and **every later layer is rank one** in the optima that the
# solver finds from random starts (largest $\tau(W_\ell)$, $\ell\ge2$: {glue:text}`sts3-gon-later`,
# the solver's accuracy, at depths {glue:text}`sts3-gon-cold`, where a cold restart reaches the
# best speed to within 0.2%). Deeper, the cold restarts reach at most
# {glue:text}`sts3-gon-cold-deep` of the best speed (from a random start a deep network's
# $\mathcal L_0$ is nearly flat), and the best network is the lift of a shallower optimum,
# re-optimised: rank one after the first layer largely by construction, so those depths are not
# evidence. So the decay is a step after the first layer, not a power law: the log-log slope
# between layers 1 and 2, $\log(\tau(W_2)/\tau(W_1))/\log2$, is at most
# {glue:text}`sts3-gon-slope` (with $\tau$ floored at $10^{-6}$, the solver's accuracy), against
# the theorem's $-1/2$. The optima satisfy the bound's rate with an enormous margin; what limits
# the rank is not the slow $\ell^{-1/2}$ decay that the proof gives but an exact collapse to rank
# one, the structure of Section 5's second conjecture, seen here at depths up to
# {glue:text}`sts3-gon-cold` only.

# %%
Xg, Gg = ex.circle_data(P["gon_n"])
gon = solve_depths(Xg, Gg, P["gon_depths"], P["ex1_width"], P["gon_restarts"], P["ex1_steps"], warm=True,
                   lr=0.3, lr_final=1e-3)
gdepths = list(P["gon_depths"])
s_gon = np.array([gon[L]["speed"] for L in gdepths])
deep_g = [L for L in gdepths if L >= 3]
gon_first = min(float(gon[L]["structure"].tau_W[0]) for L in deep_g)
gon_spread = float(max(gon[L]["speed"] for L in deep_g) - min(gon[L]["speed"] for L in deep_g))
# rank and rate read on the cold restarts that reach the best speed (not on lifted networks)
cg = sd.cold_structure(gon, deep_g, floor=1e-6)
cold_g, gon_later, gon_slope = cg.depths, cg.later_tau, cg.slope12
gon_cold_deep = max(float(gon[L]["cold_speed"]) / gon[L]["speed"] for L in deep_g if L >= 6)
for L in gdepths:
    st = gon[L]["structure"]
    print(f"{P['gon_n']}-gon, L = {L}: s* ~ {gon[L]['speed']:.6f}; tau(W_l) {[f'{float(v):.1e}' for v in st.tau_W]}; "
          f"s2/s1 {[round(float(v), 3) for v in st.ratio_W]}; {gon[L]['source']}, best cold restart "
          f"{gon[L]['cold_speed']:.6f}")
glue_all({"gon-n": P["gon_n"], "gon-depths": "{" + ", ".join(str(v) for v in gdepths) + "}",
          "gon-restarts": P["gon_restarts"], "gon-s2": f"{s_gon[0]:.4f}", "gon-s3": f"{s_gon[1]:.4f}",
          "gon-spread": f"{gon_spread:.0e}", "gon-first": f"{gon_first:.2f}", "gon-later": f"{gon_later:.0e}",
          "gon-slope": f"{gon_slope:.0f}", "gon-cold": ", ".join(str(L) for L in cold_g),
          "gon-cold-deep": f"{gon_cold_deep:.2f}"})
ledger.above("gon-first-high-rank", "Thm. 3.1 (setting)", f"on {P['gon_n']} alternating points the optimum needs more "
             r"than one path: its first layer is high-rank at every depth $\ge 3$ (smallest $\tau(W_1)$)",
             "-", gon_first, 0.1, fmt=".2f", items="thm31", bearing="control", origin="prior")
ledger.holds("gon-rate", "Thm. 3.1", "... and the tail energy collapses after it: the log-log slope "
             r"$\log(\tau(W_2)/\tau(W_1))/\log 2$ is far below the theorem's $-1/2$ (largest slope over the cold-restart optima "
             r"that reach the best speed; $\tau$ floored at 1e-6, the solver's accuracy; depths used, at least 2)",
             r"$\tau(W_\ell) = O(\ell^{-1/2})$", f"{gon_slope:.1f}; {len(cold_g)}", gon_slope < -2.0 and len(cold_g) >= 2,
             tolerance="< -2; >= 2", items="thm31", bearing="qualifies", value=gon_slope, hi=-2.0,
             origin=COLD_ORIGIN.format("-2 (four times the theorem's rate)"),
             falsifier=r"a log-log slope of $\tau$ from layer 1 to 2 of -2 or more (no collapse beyond the theorem's rate)")
ledger.holds("gon-rank-one", "Sec. 5 (2)", r"every layer after the first is rank one (largest $\tau(W_\ell)$, $\ell \ge 2$, over the "
             "cold-restart optima that reach the best speed; depths used, at least 2)",
             "finitely many high-rank layers, then rank one (conjecture)", f"{gon_later:.1e}; {len(cold_g)}",
             gon_later < 1e-3 and len(cold_g) >= 2, tolerance="< 1e-3; >= 2", items="conj2", bearing="supports",
             value=gon_later, hi=1e-3,
             origin=COLD_ORIGIN.format("1e-3"),
             falsifier=r"a layer $\ell \ge 2$ of a polygon optimum with $\tau$ of 1e-3 or more")

# %% [markdown]
# ## Proposition 3.3: nearly rank-one non-negative inputs
#
# With the same $u,v\ge0$ and inputs $vu^\top+\epsilon E$, now with
# $G=-vg^\top+0.3\,\Xi$ ($\Xi$ Gaussian of unit norm, so that $G$ is not aligned with the data),
# we solve at depth 4 for $\epsilon\in$ {glue:text}`sts3-eps-list`. At $\epsilon=0$ the solver's
# speed is $\lVert G^\top v\rVert\lVert u\rVert$ to a relative {glue:text}`sts3-p33-exact` and the
# optimum is exactly rank one; for $\epsilon>0$ the largest of $\tau(W_\ell),\tau(Z^\sigma_\ell),
# \nu_\ell$ over the layers stays below the bound $8\lVert G\rVert_F\epsilon/(\hat s-\lVert G
# \rVert_F\epsilon)$ (largest ratio {glue:text}`sts3-p33-ratio`). The optima are again exactly
# rank one (measured ratios at rounding level), so the bound, which grows linearly in $\epsilon$,
# is far from tight here. A random point of the sphere breaks it at $\epsilon=$
# {glue:text}`sts3-p33-eps-control` (ratio {glue:text}`sts3-p33-control`).

# %%
Xi = torch.randn(24, 2, generator=gen, dtype=D)
G33 = nr1.G + 0.3 * Xi / Xi.norm()
exact_speed = float((G33.T @ nr1.v).norm() * nr1.u.norm())
p33_rows = []
for eps in P["prop33_eps"]:
    Xe = nr1.X(eps)
    res = escape.solve_escape(Xe, G33, depth=4, widths=16, restarts=P["synth_restarts"], steps=P["synth_steps"],
                              lr=0.05, lr_final=0.01, normalized=True, generator=gen)
    st = structure.layer_structure(res.network(res.best()), Xe)
    s_hat = float(res.speed.max())
    worst = float(structure.worst_per_layer(st).max())
    p33_rows.append(dict(eps=eps, s=s_hat, worst=worst, bound=bounds.prop33_bound(G33, s_hat, eps)))
    print(f"eps {eps:g}: speed {s_hat:.9f}; largest tau / nu {worst:.1e}; bound {p33_rows[-1]['bound']:.3g}")
exact_err = abs(p33_rows[0]["s"] - exact_speed) / exact_speed
p33_ratio = max(r["worst"] / r["bound"] for r in p33_rows if r["eps"] > 0)
eps_c = max(P["prop33_eps"])
Xc = nr1.X(eps_c)
st_c = structure.layer_structure(lo.random_directions([6, 16, 16, 16, 2], generator=gen), Xc)
p33_control = float(st_c.tau_W.max()) / p33_rows[-1]["bound"]
glue_all({"eps-list": "{" + ", ".join(f"{e:g}" for e in P["prop33_eps"]) + "}", "p33-exact": f"{exact_err:.0e}",
          "p33-ratio": f"{p33_ratio:.0e}", "p33-eps-control": f"{eps_c:g}", "p33-control": f"{p33_control:.1f}"})
ledger.below("prop33-exact", "Prop. 3.3", r"for rank-one non-negative inputs the optimal speed is $\lVert G^\top v\rVert\,\lVert u\rVert$ "
             "(relative error of the solver's best)", r"$\lVert G^\top v\rVert\,\lVert u\rVert$", exact_err, 1e-6, fmt=".1e", items="prop33",
             bearing="supports", origin="theory: the closed form; 1e-6 for the solver",
             falsifier=r"the solver's best speed off $\lVert G^\top v\rVert\,\lVert u\rVert$ by 1e-6 or more (relative)")
ledger.below("prop33-bound", "Prop. 3.3", r"for $\varepsilon > 0$ every layer satisfies the bound (largest measured / bound)",
             r"$\le 8\lVert G\rVert_F\varepsilon / (s^* - \lVert G\rVert_F\varepsilon)$", p33_ratio, 1.0, fmt=".1e", items="prop33", bearing="control",
             origin="theory")
ledger.above("prop33-control", "Prop. 3.3, negative control", "a random point of the sphere breaks the bound "
             rf"at $\varepsilon$ = {eps_c:g} (largest $\tau(W_\ell)$ / bound)", "-", p33_control, 1.0, fmt=".2f", items="prop33",
             bearing="control", origin="theory")

# %% [markdown]
# ## Proposition 3.4: the key inequality on every point we have
#
# The inequality $\sum_{\ell<L}\log\operatorname{srank}(Z^\sigma_\ell)\le2\log(\lVert X\rVert_F
# \lVert G\rVert_F/s_0)$ is claimed for **every** $\theta$ in the ball with negative
# $\mathcal L_0$, optimal or not. We evaluate both sides on all restarts of all solves above
# ({glue:text}`sts3-p34-n` points, including the non-converged ones), on
# {glue:text}`sts3-random-n` random points of the sphere per data set (with the sign of the last
# layer chosen so that $\mathcal L_0<0$), and on rank-one data with its closed-form optimum, where
# both sides are 0 (the inequality is tight there: its constant cannot be improved). The largest
# value of left minus right side is {glue:text}`sts3-p34-gap`; at the tight point the two sides
# differ by {glue:text}`sts3-p34-tight`. The count of Proposition 3.4 holds on every point for
# $p\in\{0.25,0.5,0.75\}$ ({glue:text}`sts3-p34-count`). Outside the ball the inequality is not
# promised, and the tight point scaled by 1.1 violates it by {glue:text}`sts3-p34-out`.

# %%
sources = [(row["result"].weights, X1, G1) for row in ex1.values()] + [(row["result"].weights, Xd, Gd) for row in dig.values()]
sources += [(syn.weights, Xs, Gs)]
sources += [(lo.random_directions(dims, P["random_points"], X=X, G=G, generator=gen), X, G)
            for X, G, dims in ((X1, G1, [2, 16, 16, 1]), (Xd, Gd, [64, 16, 16, 16, 10]))]
checks = [bounds.prop34_check(Ws, X, G) for Ws, X, G in sources]     # key inequality and count, p = 1/4, 1/2, 3/4
gaps, bads, total = [c.gap for c in checks], sum(c.failures for c in checks), sum(c.points for c in checks)
X_t, G_t = nr1.rank_one, nr1.G
rho_t, s_t = lo.closed_form_escape(X_t, G_t, 4, width=4)
lhs_t, rhs_t = bounds.prop34_sides(structure.layer_structure(rho_t, X_t).srank_Z, X_t, G_t, s_t)
tight = abs(float(lhs_t) - float(rhs_t))
big = [1.1 * W for W in rho_t]
lhs_b, rhs_b = bounds.prop34_sides(structure.layer_structure(big, X_t).srank_Z, X_t, G_t, float(lo.speed(big, X_t, G_t)))
out_gap = float(lhs_b - rhs_b)
print(f"Prop. 3.4 on {total} points: largest lhs - rhs {max(gaps):.2f}; count failures {bads}; tight point: "
      f"|lhs - rhs| = {tight:.1e}; scaled by 1.1: lhs - rhs = {out_gap:+.3f}")
glue_all({"p34-n": total, "random-n": P["random_points"], "p34-gap": f"{max(gaps):.1e}",
          "p34-tight": f"{tight:.0e}", "p34-count": f"{bads} failures", "p34-out": f"{out_gap:.2f}"})
ledger.below("prop34-key", "Prop. 3.4", f"the key inequality holds on all {total} points (largest lhs - rhs; a "
             "bound valid for every network in the ball: a check of the library)",
             r"$\le 0$ for every $\theta$ in the ball with $\mathcal L_0 < 0$", max(gaps), 1e-9, fmt=".1e", items="prop34",
             bearing="control", origin="theory")
ledger.below("prop34-tight", "Prop. 3.4", "it is tight for rank-one data at the closed-form optimum (|lhs - rhs|; "
             "both sides are 0 by construction)", "-", tight, 1e-9, fmt=".1e", items="prop34", bearing="control",
             origin="theory")
ledger.holds("prop34-count", "Prop. 3.4", r"at least $(1-p)L$ layers meet the threshold, $p \in \{0.25, 0.5, 0.75\}$ "
             "(points where the count fails; implied by the key inequality)", r"$\ge (1-p)L$ layers", str(bads), bads == 0,
             tolerance="0", items="prop34", bearing="control", value=bads, hi=0.5, origin="theory")
ledger.above("prop34-control", "Prop. 3.4, negative control", "outside the ball (the tight point scaled by 1.1) the "
             "inequality fails (lhs - rhs)", "-", out_gap, 0.1, fmt=".3f", items="prop34", bearing="control",
             origin="theory: 2 L log 1.1 = 0.76 at depth 4")
p = 0.5
thr_ex1 = bounds.prop34_threshold(X1, G1, max(s_ex1), p, depths1[-1])
glue("sts3-p34-thr", f"{thr_ex1:.2f}", display=False)

# %%
fig, axes = plotting.subplots(3, height=2.6)
ax = axes[0]
ax.plot(depths1, s_ex1, "o-", color=plotting.color(0), label="Example 1")
ax.plot(depths2, s_dig, "s-", color=plotting.color(1), label="digits")
ax.axhline(ex.RANK_ONE_SPEED, color="k", lw=0.6, ls=":")
ax.set_xlabel("depth $L$")
ax.set_ylabel(r"best speed $\hat s^*(L)$")
ax.legend(fontsize=7)
ax = axes[1]
for i, L in enumerate(deep1):
    st = ex1[L]["structure"]
    ax.plot(range(1, L + 1), st.tau_W.clamp_min(1e-17).numpy(), "o-", color=plotting.color(i), ms=3, label=f"L = {L}")
ax.set_yscale("log")
ax.set_ylim(1e-17, 1)
ax.set_xlabel(r"layer $\ell$")
ax.set_ylabel(r"$\tau(W_\ell)$ (Example 1)")
ax.legend(fontsize=6)
ax = axes[2]
ax.plot(layers, B.clamp_max(10).numpy(), "k--", label=r"bound $B(\ell)$")
ax.plot(layers, measured.clamp_min(1e-17).numpy(), "o-", color=plotting.color(0), ms=3, label="optimum")
ax.plot(layers, st_rand.tau_W.numpy(), "s-", color=plotting.color(1), ms=3, label="random point")
ax.set_yscale("log")
ax.set_ylim(1e-17, 10)
ax.set_xlabel(r"layer $\ell$")
ax.set_ylabel(r"$\max(\tau(W_\ell),\tau(Z^\sigma_\ell),\nu_\ell)$")
ax.legend(fontsize=6)
glue("sts3-fig-structure", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} sts3-fig-structure
# :name: fig-sts3-structure
# Left: the best speed found against depth (Example 1: $\sqrt2-1$ dotted at depth 2, then $1/2$;
# digits: flat). Centre: tail energy of every layer of the Example 1 optima (values below
# $10^{-16}$ are exact zeros): the first layer is rank two, the others rank one. Right: Theorem
# 3.1 on the nearly rank-one synthetic data at depth {glue:text}`sts3-synth-depth` (bound dashed,
# infinite where not drawn; the optimum's largest ratio at rounding level; a random point of the
# sphere above the bound).
# ```
#
# ## Conclusion
#
# The optimal escape directions we can compute have the structure Theorem 3.1 describes, and
# sharper: rank one from the second layer on (Example 1) or everywhere (digits), and linear deep
# layers; on {glue:text}`sts3-gon-n` alternating points, which need a high-rank first layer, the
# tail energy collapses to rank one right after it, far faster than the theorem's $\ell^{-1/2}$.
# Proposition 3.2 holds in the form "flat or increasing", with a strict increase on
# Example 1; Propositions 3.3 and 3.4 hold on every point we tried, and the key inequality of 3.4
# is tight. What the bounds add at these sizes is little: Theorem 3.1 is vacuous on both real
# data sets, and in the non-vacuous regime the optima are exactly rank one anyway. So three rows
# are controls, not findings: the abstract's $\ell^{1/4}$ gap (`abstract-l14`) is read on layers
# that are exactly rank one ($s_2=0$ passes any rate, so no rate is tested and the item counts as
# unchecked), and the non-vacuous instance (`thm31-nonvacuous`) and Proposition 3.3's bound
# (`prop33-bound`) are met with a ratio of 0 by exactly rank-one optima. These are
# solver optima, not certified global minimisers (the theorem's hypothesis); the restarts agree
# with each other and with the closed forms where those exist. The next page,
# {doc}`04_saddle_to_saddle_training`, asks whether training from a small initialisation shows
# the same structure.
#
# **How the tolerances are set.** Exact constructions and identities at $10^{-9}$-$10^{-12}$;
# "rank one" means a tail energy below $10^{-3}$ (the solver's optima are at $10^{-15}$ or exactly
# 0), "rank two" a tail energy above 0.4 (two equal singular values give 0.5); the 2% allowance for
# speeds across depths is the guide's proposal and covers restarts that stop short of the optimum;
# the strict-increase threshold 0.08 is $1/2-(\sqrt2-1)$ less a margin; the vacuity threshold
# (100) is an order of magnitude above the deepest network trained in the book. The solver
# settings were fixed before the runs of this page, as were these thresholds. For the
# {glue:text}`sts3-gon-n`-point data, "high-rank" means $\tau(W_1)>0.1$ and the slope threshold
# $-2$ is four times the theorem's rate, both stated before the first run; the first run used 8
# restarts, whose best at depth 3 was a worse local optimum (speed 0.27 instead of 0.29), so the
# page uses 16 (the thresholds did not move).
#
# ## Claims

# %% tags=["nbval-check-output"]
ledger.report()
