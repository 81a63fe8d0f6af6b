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
# # The first escape and the initial scale (Section 5, first conjecture)
#
# The first conjecture of Section 5 of {cite:t}`bantzis2025saddle` is that gradient descent on a
# wide network, started small, leaves the origin along the *optimal* escape direction. The
# paper's evidence is the projected-gradient runs of Figure 2 ({doc}`02_rank_two_escape`), which
# optimise the localized loss directly; {doc}`01_escape_directions` found that full-batch
# descent from a start $10^8$ times below the unit scale leaves near the best escape direction,
# and from the unit scale does not. This page asks the question of the training runs of
# {doc}`04_saddle_to_saddle_training`: for the same depth-6 network on digits, trained with
# norm-adaptive SGD from one random draw scaled by $\alpha\in$ {glue:text}`sts6-alphas` (times the
# standard deviation 1/width; the paper's is 1/1000 at width 1000), where is the direction $\rho=\sqrt L\,\theta/\lVert\theta
# \rVert$ at the **end of the first plateau** (the last step before the loss falls 1% below
# $\log10$)? Is it an escape direction (KKT residual), how fast is it against the best escape
# direction the solver finds, and where does the solver go when started from it?
#
# ```{admonition} What to take away
# - **From standard deviation 1/width the conjecture fails here.** From $\alpha=1$ (entries of
#   standard deviation 1/width, as the paper's 1/1000 at width 1000) the loss starts to fall while
#   $\rho$ is far from any escape direction (KKT residual {glue:text}`sts6-kkt-1`, speed
#   {glue:text}`sts6-ratio-1` of the best). This is not quite the paper's start: at width 64 each
#   layer's gain $\sigma_0\sqrt w$ is 1/8, against 1/32 in the paper; the paper's gain is
#   $\alpha\approx$ {glue:text}`sts6-alpha-paper` here, between the first two scales (from
#   $\alpha=0.1$: KKT residual {glue:text}`sts6-kkt-01`, speed {glue:text}`sts6-ratio-01` of the
#   best, mean $s_2/s_1$ of $W_2..W_6$ {glue:text}`sts6-deep-01`).
# - **From smaller starts it holds in part.** For $\alpha\le$ {glue:text}`sts6-alpha-small` the
#   direction at the end of the plateau always has rank-one layers and is much faster than from
#   $\alpha=1$, but it is not reliably an escape direction, nor reliably in the basin of the best
#   one: on this draw {glue:text}`sts6-n-near` of {glue:text}`sts6-n-small` small starts are near
#   an escape direction, and other draws differ (seeds 0-4: {doc}`robustness page </book/robustness>`).
# - **The step matters.** The chapter uses three times the paper's step (the paper's own would
#   need three times as many steps). At ten times the paper's step, the step of
#   {doc}`04_saddle_to_saddle_training`, runs from $\alpha=10^{-2}$ and $10^{-8}$ often freeze at
#   the origin: their norm is inflated by the large steps, the norm-adaptive step collapses, and
#   the loss stays at $\log10$.
# ```

# %% tags=["parameters"]
profile = "ci"   # "ci": digits, width 64, 3x the paper's step (CPU, about a minute); "full": the paper's step
seed = 0
device = "auto"

# %%
PROFILES = {
    # alphas: scales of the one random draw (entries N(0, (alpha/width)^2)); eta: the time-changed
    # step eta0 (10/36 is the paper's 10/||theta||^4 at depth 6); max_steps, chunk: training until
    # every run has left the origin, checked every chunk steps; warm_steps: solver steps from each
    # run's direction; cold_*: random restarts of the solver; dead_*: the runs at the step of
    # chapter 4 (10x the paper's)
    "ci": dict(width=64, depth=6, alphas=(1.0, 1e-1, 1e-2, 1e-4, 1e-8), eta=30 / 36, max_steps=16_000, chunk=250,
               warm_steps=150, cold_restarts=2, cold_steps=300, dead_alphas=(1e-2, 1e-8), dead_eta=100 / 36,
               dead_steps=3000),
    "full": dict(width=64, depth=6, alphas=(1.0, 1e-1, 1e-2, 1e-4, 1e-8, 1e-16), eta=10 / 36, max_steps=60_000,
                 chunk=500, warm_steps=2000, cold_restarts=16, cold_steps=4000, dead_alphas=(1e-2, 1e-4, 1e-8),
                 dead_eta=100 / 36, dead_steps=10_000),
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
from implicit_bias.saddle_to_saddle import escape, structure, training
from implicit_bias.saddle_to_saddle import localized as lo

P, dev = start_chapter(PROFILES, profile=profile, seed=seed, device=device)
ledger = Ledger("saddle_to_saddle/06_first_escape_and_initial_scale")
split = data.digits(seed=0)
X = training.standardize(torch.cat([split.X_train, split.X_test])).double().to(dev)
y = torch.cat([split.y_train, split.y_test]).to(dev)
N, K, L = len(y), int(y.max()) + 1, P["depth"]
G = lo.cross_entropy_gradient(y.cpu(), K).to(dev)
ledger.uses_data("scikit-learn digits (1797 images, 8x8)")

# %% [markdown]
# ## The runs
#
# The network, data and optimiser of {doc}`04_saddle_to_saddle_training` (depth
# {glue:text}`sts6-depth`, width {glue:text}`sts6-width`, all 1797 digits standardised with one
# scalar, cross-entropy, SGD with mini-batches of 32 and the step
# $\eta_0(\lVert\theta\rVert/\sqrt L)^{2-L}$), with $\eta_0=$ {glue:text}`sts6-eta` (three times
# the paper's $10/36$) and float64 arithmetic (from $\alpha=10^{-8}$ the outputs start near
# $10^{-52}$, below the range of float32). All runs start from the **same** draw, scaled, and
# train as one batched computation (`training.train_until_escape`): after every
# {glue:text}`sts6-chunk` steps the probe loss (300 fixed examples) is checked, and a chunk in
# which a run leaves is replayed with the same mini-batches to find the last step at which its
# loss was still within 1% of $\log10$ and read its weights there. We evaluate there, on all the
# training data with $G=\nabla C(0)$ of the mean cross-entropy:
#
# - the KKT residual $\lVert\nabla\mathcal L_0(\rho)+s\rho\rVert/(s\sqrt L)$ of $\rho$ (0 at an
#   escape direction, {doc}`01_escape_directions`) and its speed $s=-\mathcal L_0(\rho)$;
# - the speed that projected gradient descent on the sphere reaches when started **from** $\rho$
#   ({glue:text}`sts6-warm-steps` normalised steps), and the best speed over these and
#   {glue:text}`sts6-cold` random restarts of the solver: the reference "best escape direction";
# - $s_2/s_1$ of every layer of $\rho$.

# %%
glue("sts6-alphas", "{" + ", ".join(f"{a:g}" for a in P["alphas"]) + "}", display=False)
for key in ("depth", "width", "chunk", "warm_steps"):
    glue(f"sts6-{key.replace('_', '-')}", P[key], display=False)
glue("sts6-eta", f"{P['eta']:.3g}", display=False)
glue("sts6-cold", P["cold_restarts"], display=False)
alphas = list(P["alphas"])
fe = training.train_until_escape(alphas, X, y, depth=L, width=P["width"], std=1 / P["width"], eta0=P["eta"],
                                 max_steps=P["max_steps"], chunk=P["chunk"], seed=seed)
rho = lo.to_sphere([W.double() for W in fe.weights])
kkt = lo.kkt_residual(rho, X, G)
speed = lo.speed(rho, X, G)
Xf, Gf = X.float(), G.float()
warm = escape.solve_escape(Xf, Gf, depth=L, widths=[P["width"]] * len(alphas), init=[W.float() for W in rho],
                           steps=P["warm_steps"], lr=0.05, lr_final=0.01, normalized=True, dtype=torch.float32)
cold = escape.solve_escape(Xf, Gf, depth=L, widths=P["width"], restarts=P["cold_restarts"], steps=P["cold_steps"],
                           lr=0.05, lr_final=0.01, normalized=True, generator=torch.Generator().manual_seed(seed),
                           dtype=torch.float32)
s_best = max(float(warm.speed.max()), float(cold.speed.max()))
ratio = (speed / s_best).cpu()
warm_ratio = (warm.speed.double() / s_best).cpu()
st = structure.layer_structure(rho, X)
ratios_W = st.ratio_W.cpu()                                              # (runs, L)
for r, a in enumerate(alphas):
    print(f"alpha = {a:g}: leaves after step {int(fe.step[r])} ({'left' if fe.escaped[r] else 'never left'}); "
          f"KKT residual {float(kkt[r]):.2f}, speed {float(speed[r]):.4f} = {float(ratio[r]):.3f} x best; solver "
          f"from there {float(warm.speed[r]):.4f} = {float(warm_ratio[r]):.3f} x best; s2/s1 of W_1..W_{L} "
          f"{[round(float(v), 2) for v in ratios_W[r]]}")
print(f"best escape speed found {s_best:.4f} (cold restarts: {[round(float(v), 4) for v in cold.speed]})")

# %% [markdown]
# ## At standard deviation 1/width, and below it

# %%
small = [r for r, a in enumerate(alphas) if a <= 1e-2]
unit = alphas.index(1.0)
near = [r for r in small if float(kkt[r]) < 0.5]
at_best = [r for r in small if float(warm_ratio[r]) >= 0.99]
ratio_small = float(ratio[small].median())
closer = math.log10(ratio_small / float(ratio[unit]))
deep_small = float(ratios_W[small][:, 1:].mean(-1).max())
deep_unit = float(ratios_W[unit, 1:].mean())
for key, val in {"kkt-1": f"{float(kkt[unit]):.2f}", "ratio-1": f"{float(ratio[unit]):.2f}",
                 "alpha-small": f"{alphas[small[0]]:g}", "n-small": len(small), "n-near": len(near),
                 "n-best": len(at_best), "kkt-small": ", ".join(f"{float(kkt[r]):.2f}" for r in small),
                 "ratio-small": ", ".join(f"{float(ratio[r]):.2f}" for r in small), "ratio-med": f"{ratio_small:.2f}",
                 "closer": f"{10 ** closer:.0f}", "deep-small": f"{deep_small:.2f}", "deep-unit": f"{deep_unit:.2f}",
                 "best": f"{s_best:.4f}", "cold-best": f"{float(cold.speed.max()):.4f}",
                 "steps-lo": f"{int(fe.step[fe.escaped].min()):,}", "steps-hi": f"{int(fe.step[fe.escaped].max()):,}",
                 "n-left": f"{int(fe.escaped.sum())} of {len(alphas)}",
                 # the paper's sigma_0 sqrt(w) = 1000^(-1/2); here alpha / sqrt(width)
                 "alpha-paper": f"{math.sqrt(P['width'] / 1000):.2f}",
                 "kkt-01": f"{float(kkt[alphas.index(0.1)]):.2f}" if 0.1 in alphas else "-",
                 "ratio-01": f"{float(ratio[alphas.index(0.1)]):.2f}" if 0.1 in alphas else "-",
                 "deep-01": f"{float(ratios_W[alphas.index(0.1), 1:].mean()):.2f}" if 0.1 in alphas else "-"}.items():
    glue(f"sts6-{key}", val, display=False)
ledger.above("conj1-unit-scale", "Sec. 5 (1)", r"from std 1/width ($\alpha = 1$) the loss leaves the "
             r"origin before the direction is an escape direction (KKT residual of $\rho$ at the end of the plateau)",
             "GD finds the optimal escape direction (conjecture)", float(kkt[unit]), 1.0, fmt=".2f", items="conj1",
             bearing="qualifies", proxy=True, origin="after-seeds: chapter 1's control gave 1.3-1.5 at alpha = 1",
             falsifier=r"a KKT residual of $\rho$ of 1 or less at the end of the plateau from $\alpha = 1$ (near an escape direction)")
ledger.below("conj1-unit-speed", "Sec. 5 (1)", r"... and far slower than the best escape direction (speed of $\rho$ / "
             "best speed found)", "GD finds the optimal escape direction (conjecture)", float(ratio[unit]), 0.5,
             fmt=".3f", items="conj1", bearing="qualifies", proxy=True, origin="prior",
             falsifier=r"a speed of $\rho$ of half the best or more from $\alpha = 1$")
ledger.above("conj1-small-closer", "Sec. 5 (1)", rf"from $\alpha \le {alphas[small[0]]:g}$ the direction at the end of "
             r"the plateau is much faster than from $\alpha = 1$ ($\log_{10}$ of the median speed ratio over the small scales "
             r"over that of $\alpha = 1$), but it is not reliably an escape direction (see the text)",
             "GD finds the optimal escape direction (conjecture)", closer, 0.3, fmt=".2f", items="conj1",
             bearing="qualifies", proxy=True, origin="after-seeds: restated from 'KKT < 0.5' and 'speed > 0.8 of the "
             "best' (seed 0), which failed on seed 4",
             falsifier=r"the small-scale directions less than $10^{0.3}$ (2x) faster than $\alpha = 1$'s (median speed ratio)")
ledger.below("conj1-small-rank-one", "Fig. 1(b)", rf"from $\alpha \le {alphas[small[0]]:g}$, the layers $W_2, \dots, W_6$ of the "
             "direction at the end of the plateau are rank one (largest mean $s_2/s_1$ over the small scales)",
             "one dominant singular value", deep_small, 0.1, fmt=".3f", items="fig1", bearing="supports", proxy=True,
             origin="prior",
             falsifier=r"a mean $s_2/s_1$ of $W_2, \dots, W_6$ of 0.1 or more at the end of the plateau from some $\alpha \le 0.01$")
ledger.above("conj1-unit-not-rank-one", "Fig. 1(b), control", r"from $\alpha = 1$ the layers $W_2, \dots, W_6$ are not yet rank "
             "one there (mean $s_2/s_1$)", "-", deep_unit, 0.2, fmt=".2f", items="fig1", bearing="control",
             origin="prior")

# %% [markdown]
# The runs that leave the origin ({glue:text}`sts6-n-left`) do so between steps
# {glue:text}`sts6-steps-lo` and {glue:text}`sts6-steps-hi`: the length of the plateau hardly depends on $\alpha$, because the
# time is spent turning the direction away from the random start, where $\mathcal L_0$ is nearly
# flat, and the norm-adaptive step makes that turning independent of the scale (Section 2.2);
# only the last, explosive stretch of the plateau, in which the norm grows by about $1/\alpha$,
# gets longer as $\alpha$ shrinks, and that stretch is where the direction can settle. From
# $\alpha=1$ the outputs reach order one before it does: at the end of the plateau the KKT
# residual is {glue:text}`sts6-kkt-1`, the speed {glue:text}`sts6-ratio-1` of the best found
# ({glue:text}`sts6-best`), and the layers are far from rank one (mean $s_2/s_1$ of
# $W_2..W_6$: {glue:text}`sts6-deep-unit`). From $\alpha\le$ {glue:text}`sts6-alpha-small` the
# layers $W_2..W_6$ of the direction there are rank one ($s_2/s_1\le$
# {glue:text}`sts6-deep-small`) and its speed is far higher (median {glue:text}`sts6-ratio-med` of
# the best, {glue:text}`sts6-closer` times that of $\alpha=1$), but it is not reliably an escape
# direction: on this draw {glue:text}`sts6-n-near` of the {glue:text}`sts6-n-small` small starts
# have a KKT residual below 0.5 (residuals {glue:text}`sts6-kkt-small`; speeds
# {glue:text}`sts6-ratio-small` of the best), and the solver started from
# {glue:text}`sts6-n-best` of them ends at the best escape direction found, the others at a
# slower local optimum (the cold restarts' best: {glue:text}`sts6-cold-best`). Over the seeds of
# the {doc}`robustness page </book/robustness>` this varies: the value of `conj1-small-closer` is
# lowest on draws where no small start had settled. So in these runs the first conjecture fails
# at the paper's scale, and from smaller starts it holds only in part: the rank-one structure is
# always there, the escape direction often, the optimal one sometimes. Settling it needs many
# draws and wide networks (the conjecture is about width), which is beyond this page's budget.
# Where the paper's own start falls on this scale is not sharp: matching the per-layer gain
# $\sigma_0\sqrt w$ of its width-1000 network gives $\alpha\approx$ {glue:text}`sts6-alpha-paper`,
# between $\alpha=1$ and $0.1$ (see the takeaway box for $\alpha=0.1$ on this draw).

# %%
fig, axes = plotting.subplots(3, height=2.6)
ax = axes[0]
for r, a in enumerate(alphas):
    ax.plot(fe.curve_steps, fe.curve[r].numpy(), color=plotting.color(r), label=rf"$\alpha$ = {a:g}")
    ax.axvline(int(fe.step[r]), color=plotting.color(r), lw=0.6, ls=":")
ax.set_xlabel("SGD step")
ax.set_ylabel("training loss (probe set)")
ax.legend(fontsize=6)
ax = axes[1]
ax.semilogx(alphas, kkt.cpu().numpy(), "o-", color=plotting.color(0), label="KKT residual")
ax.semilogx(alphas, ratio.numpy(), "s-", color=plotting.color(1), label="speed / best")
ax.semilogx(alphas, warm_ratio.numpy(), "^--", color=plotting.color(2), label="solver from rho / best")
ax.axhline(1, color="k", lw=0.6, ls=":")
ax.set_xlabel(r"initial scale $\alpha$")
ax.legend(fontsize=6)
ax = axes[2]
for r, a in enumerate(alphas):
    ax.plot(range(1, L + 1), ratios_W[r].numpy(), "o-", ms=3, color=plotting.color(r))
ax.set_xlabel(r"layer $\ell$")
ax.set_ylabel(r"$s_2/s_1(W_\ell)$ of $\rho$")
glue("sts6-fig-scale", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} sts6-fig-scale
# :name: fig-sts6-scale
# Left: the probe loss of the five runs (one random draw scaled by $\alpha$); dotted: the end of
# each run's first plateau. Centre: at that step, the KKT residual of the direction $\rho$, its
# speed as a fraction of the best escape speed found, and the speed the solver reaches from
# $\rho$. Right: $s_2/s_1$ of every layer of $\rho$ (colours as on the left).
# ```
#
# ## The step of chapter 4 freezes small starts
#
# {doc}`04_saddle_to_saddle_training` uses ten times the paper's step, so that its runs get past
# the first plateau within the CPU budget. From the unit scale that works. From smaller starts it
# does not. With the norm-adaptive step $\eta_0(\lVert\theta\rVert/\sqrt L)^{2-L}$ each step moves
# the parameters by a fixed fraction of their norm, so a step that is too large inflates the norm
# in directions that do not raise the outputs (we read it as the $\eta^2\lVert\nabla\mathcal L
# \rVert^2$ term of $\lVert\theta-\eta\nabla\mathcal L\rVert^2$); the step then shrinks like
# $\lVert\theta\rVert^{-4}$ and training freezes with tiny outputs, at the loss $\log10$. Of
# {glue:text}`sts6-dead-n` runs from $\alpha\in$ {glue:text}`sts6-dead-alphas` at that step (the
# same draw as above), {glue:text}`sts6-dead` are frozen after {glue:text}`sts6-dead-steps` steps
# (not left, norm grown more than 100-fold, outputs below $10^{-6}$); at three times the paper's
# step {glue:text}`sts6-frozen3` of the {glue:text}`sts6-n-alphas` runs above are. This is not a
# claim of the ledger: how many small starts freeze, and when, varies from draw to draw (in our
# pilots, from none to all of them within this budget); it is why this page does not use the
# step of chapter 4.

# %%
stuck_runs = training.train_until_escape(list(P["dead_alphas"]), X, y, depth=L, width=P["width"], std=1 / P["width"],
                                         eta0=P["dead_eta"], max_steps=P["dead_steps"], chunk=P["dead_steps"],
                                         seed=seed)
frozen = lambda res: ~res.escaped & (res.norm_growth > 100) & (res.out_max < 1e-6)
stuck = frozen(stuck_runs)
n_stuck = int(stuck.sum())
n_frozen3 = int(frozen(fe).sum())
print(f"at eta0 = {P['dead_eta']:.3g}: {n_stuck} of {len(P['dead_alphas'])} runs frozen at the origin (norm growth "
      f"{[f'{float(v):.2g}' for v in stuck_runs.norm_growth]}, largest output "
      f"{[f'{float(v):.1e}' for v in stuck_runs.out_max]}); at eta0 = {P['eta']:.3g}: {int(fe.escaped.sum())} of "
      f"{len(alphas)} runs left")
for key, val in {"dead-n": len(P["dead_alphas"]), "dead-alphas": "{" + ", ".join(f"{a:g}" for a in P["dead_alphas"]) + "}",
                 "dead": n_stuck, "dead-steps": f"{P['dead_steps']:,}",
                 "dead-growth": f"{float(stuck_runs.norm_growth.min()):.0f}",
                 "frozen3": n_frozen3, "n-alphas": len(alphas)}.items():
    glue(f"sts6-{key}", val, display=False)

# %% [markdown]
# ## Conclusion
#
# In these runs the first conjecture of Section 5 fails from standard deviation 1/width (the
# direction in which SGD leaves the origin is a generic, slow one; the paper's start, matched by
# its per-layer gain, lies between $\alpha=1$ and $0.1$ here) and holds only in part from
# starts a hundred times smaller or more (rank-one, fast, often but not always an escape
# direction, sometimes the best one). These are
# proxies (digits, width 64, three times the paper's step); the `full` profile uses the paper's
# step.
#
# **How the tolerances are set.** The threshold 1 for "not an escape direction" comes from the
# control of {doc}`01_escape_directions` ($\alpha=1$: 1.3-1.5); the speed threshold 0.5 and
# 0.1 / 0.2 for rank one / not rank one were stated before the first run of this page. **Restated
# after the seed sweep:** the first version claimed that from $\alpha\le10^{-2}$ the median KKT
# residual is below 0.5, the median speed above 0.8 of the best, and that the solver started there
# ends at the best escape direction (0.99 of it); all held on seed 0, and on seeds 1-4 the last
# failed on four draws and the first two on one. They are replaced by `conj1-small-closer` (the
# small starts are at least twice as fast as the unit one, a factor set after seeing the seeds).
# A control claiming that small starts freeze at 10x and not at 3x held on seed 0 and was
# dropped after seeds 1-4 (it failed on one of them; see the text above). The step ($3\times$ the paper's) was chosen after a pilot on seed 0 at
# $1\times$, $3\times$, $6\times$ and $10\times$: the runs from small starts freeze at $6\times$ and
# $10\times$, and $1\times$ needs about three times as many steps as $3\times$.
#
# ## Claims

# %% tags=["nbval-check-output"]
ledger.report()
