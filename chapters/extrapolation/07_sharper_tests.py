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
# # Sharper tests: imbalanced labels, high dimension, the training recipe
#
# The earlier chapters of this part test reversion to the OCS ({prf:ref}`definition of the OCS <ocs-def-ocs>`) the way
# {cite:t}`kang2024extrapolate` do, on nearly balanced classes, and find it for classifiers under
# shifts that remove signal. Three questions remain that the paper's own experiments cannot
# answer. (1) On balanced classes the OCS of cross-entropy *is* the uniform distribution, so
# "moving to the OCS" cannot be told apart from "losing confidence": do predictions move to the
# label marginal when it is far from uniform? (2) The paper targets high-dimensional inputs
# whose learned features span a low-dimensional subspace; 8x8 digits have 64 pixels. What happens
# in $d=1024$, where the paper's mechanism (OOD inputs overlap less with the learned features) can
# be switched on and off? (3) The two failures found in {doc}`02_reversion_with_shift` (the reward
# models' U shape, the Gaussian-NLL MLP moving away) come from networks trained without weight
# decay and kept at the last epoch, while the paper uses weight decay and the best validation
# checkpoint: is the recipe the cause?
#
# :::{admonition} What to take away
# - **Imbalanced labels.** On digits whose rarest class is 20 times rarer than the commonest, the
#   classifiers' distance to the OCS falls with blur and contrast reduction, as in the paper's
#   metric, but their predictions do *not* move towards the label marginal: as the shift grows they
#   move away from it, towards the classes that are rare in training (they are closer to the uniform
#   distribution than to the OCS already on the balanced clean test images, and move further that
#   way). Their
#   output bias is uniform, not the marginal. On balanced data the paper's metric cannot see this.
# - **High dimension.** On inputs in $d=1024$ whose classes live on an 8-dimensional subspace, the
#   paper's mechanism appears in full when inputs leave the subspace (their projection onto the
#   first layer's top singular subspace collapses, the output norm vanishes, the predictions
#   converge to the network's own constant), and not when they move within it (these follow from
#   the construction). But that constant is again nearer uniform than the imbalanced OCS.
# - **The recipe.** With the paper's weight decay and best-validation checkpoint, the reward
#   models' U shape remains at this training length; it is no longer established at three times
#   the epochs (committed budget sweep, `recipe-mse-rise`) nor after 100 epochs of weight decay
#   ({doc}`10_which_constant`): an effect of short training. The Gaussian-NLL MLP still does not
#   revert at this budget (its predicted spread shrinks, its KL rises at strong shifts; that rise
#   holds on one seed of two at three times the epochs), though weight decay makes its drift much
#   smaller. Where the U shape comes from, the reward model's accumulated constant, is
#   shown in {doc}`10_which_constant`.
# - So at this scale "reversion to a constant" is robust where inputs lose signal; "the constant
#   is the OCS" holds only where the OCS is (nearly) uniform. The errata list the findings.
# :::

# %% tags=["parameters"]
profile = "ci"  # "ci": CPU, under a minute; "full": more networks, larger inputs and data (GPU)
seed = 0
device = "auto"

# %%
PROFILES = {
    # runs: networks per configuration; ratio: how much rarer the rarest class is than the commonest
    "ci": dict(runs=5, imb_runs=10, epochs=30, batch_size=64, lr=2e-3, ratio=20.0, weight_decay=0.01,
               val_fraction=0.2, d=1024, k=8, n_hd=600, hd_width=128, hd_lr=1e-3),
    "full": dict(runs=10, imb_runs=20, epochs=60, batch_size=64, lr=2e-3, ratio=20.0, weight_decay=0.01,
                 val_fraction=0.2, d=4096, k=16, n_hd=5000, hd_width=512, hd_lr=1e-3),
}
KINDS = ("blur", "contrast")  # the two shifts under which every classifier of chapter 02 reverts
SEVERITIES = (0, 1, 2, 3, 4, 5)
LAMBDAS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)  # severity of the synthetic shifts of section 2
K_SE = 2.0  # claims about a mean over runs hold when they hold by K_SE standard errors (fixed in advance)

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch
from myst_nb import glue

from implicit_bias import data, models, plotting
from implicit_bias.extrapolation import ocs, ood, tasks
from implicit_bias.chapter import start_chapter
from implicit_bias.claims import Ledger
from implicit_bias.book import budget_table

P, dev = start_chapter(PROFILES, profile=profile, seed=seed, device=device)
ledger = Ledger("extrapolation/07_sharper_tests")
K = 10
lb = lambda t: float(ocs.lower_bound(t, k=K_SE))
ub = lambda t: float(ocs.upper_bound(t, k=K_SE))
LO, HI = f"mean - {K_SE:g} SE", f"mean + {K_SE:g} SE"
glue("ocs7-runs", P["runs"], display=False)
glue("ocs7-imb-runs", P["imb_runs"], display=False)
glue("ocs7-kse", K_SE, display=False)

# %% [markdown]
# ## 1. Imbalanced labels: the OCS or the uniform distribution?
#
# We train on a **strongly imbalanced** subset of the digits: class $k$ keeps each training image
# with probability $r^{-k/9}$, $r=$ {glue:text}`ocs7-ratio:g` (all of the 0s, a fraction $1/r$ of
# the 9s). The label marginal $\hat p$, the cross-entropy OCS, is then far from uniform. We
# evaluate on the **balanced** clean test set under blur and contrast reduction: on balanced test
# data a good classifier's *mean* prediction is close to uniform, so the two hypotheses now
# predict different things as the shift grows. Reversion to the OCS moves the predictions towards
# $\hat p$; a mere loss of confidence moves them towards the uniform distribution $u$. The
# statistic that tells them apart is
# $$\begin{aligned}t&=\frac1n\sum_i\Big[\mathrm{KL}\big(p(x_i)\,\|\,u\big)-\mathrm{KL}\big(p(x_i)\,\|\,\hat p\big)\Big]\\
# &=\sum_k\bar p_k\log(K\hat p_k),\end{aligned}$$
# positive when the predictions are closer to the OCS than to uniform
# (`implicit_bias.extrapolation.ocs.closer_to_ocs_than_uniform`): it is $\mathrm{KL}(\hat p\|u)>0$ for
# predictions equal to the OCS and $-\mathrm{KL}(u\|\hat p)<0$ for uniform ones (both cases are unit
# tests of the library, so the check can come out either way). We also track the paper's own
# distance (the mean KL to $\hat p$), the KL of the *mean* prediction $\bar p$ to $\hat p$, and the
# accumulated constant at the output, $\mathrm{softmax}(b_{\rm out})$. The networks are the CNN and
# the MLP of {doc}`02_reversion_with_shift` with its recipe, and the MLP with the paper's recipe
# (weight decay and the best validation checkpoint, section 3).

# %%
digits = data.digits(seed=seed, image=True)
g = torch.Generator().manual_seed(seed)
keep = tasks.imbalanced_subset(digits.y_train, tasks.geometric_weights(K, P["ratio"]), g)
X_imb, y_imb = digits.X_train[keep].to(dev), digits.y_train[keep].to(dev)
n_val = int(P["val_fraction"] * len(y_imb))
order = torch.randperm(len(y_imb), generator=g).to(dev)
X_fit, y_fit, X_val, y_val = X_imb[order[n_val:]], y_imb[order[n_val:]], X_imb[order[:n_val]], y_imb[order[:n_val]]
p_imb = ocs.ocs_cross_entropy(y_imb.cpu(), K)
uniform = torch.full((K,), 1.0 / K, dtype=torch.float64)
Xte, yte = digits.X_test.to(dev), digits.y_test.to(dev)
glue("ocs7-ratio", P["ratio"], display=False)
glue("ocs7-n-imb", len(y_imb), display=False)
glue("ocs7-kl-u-p", float(ocs.kl_categorical(uniform, p_imb)), display=False)
print(f"imbalanced training set: {len(y_imb)} images; label marginal (the OCS): " + " ".join(f"{v:.3f}" for v in p_imb))
print(f"KL(u || p_hat) = {float(ocs.kl_categorical(uniform, p_imb)):.3f}, KL(p_hat || u) = {float(ocs.kl_categorical(p_imb, uniform)):.3f}")

make_cnn = lambda: ocs.NormCNN(1, 8, K, channels=(16, 32), hidden=(64,))
make_mlp = lambda: models.MLP(64, K, width=128, depth=3)
plain = dict(epochs=P["epochs"], batch_size=P["batch_size"], lr=P["lr"])
paper = dict(plain, weight_decay=P["weight_decay"], val=(X_val, y_val), keep="best_val")
imb_nets = {
    "CNN": ocs.train_runs(make_cnn, X_imb, y_imb, "ce", runs=P["imb_runs"], seed=seed, **plain),
    "MLP": ocs.train_runs(make_mlp, X_imb, y_imb, "ce", runs=P["imb_runs"], seed=seed, **plain),
    "MLP, paper's recipe": ocs.train_runs(make_mlp, X_fit, y_fit, "ce", runs=P["imb_runs"], seed=seed, **paper),
}
shifted = {(kind, s): tasks.shift(Xte, kind, s) for kind in KINDS for s in SEVERITIES}


def bias_softmax(net) -> torch.Tensor:
    last = net.fcs[-1] if isinstance(net, ocs.NormCNN) else net.layers[-1]
    return torch.softmax(last.bias.detach().double().cpu(), 0)


imb = {}  # name -> dict of arrays (runs, kinds, severities)
for name, nets in imb_nets.items():
    T = np.zeros((len(nets), len(KINDS), len(SEVERITIES)))
    KL, KLbar = np.zeros_like(T), np.zeros_like(T)
    for r, net in enumerate(nets):
        for a, kind in enumerate(KINDS):
            for b, s in enumerate(SEVERITIES):
                prob = torch.softmax(ocs.predict(net, shifted[kind, s]).double().cpu(), 1)
                T[r, a, b] = float(ocs.closer_to_ocs_than_uniform(prob, p_imb))
                KL[r, a, b] = float(ocs.kl_categorical(prob, p_imb).mean())
                KLbar[r, a, b] = float(ocs.kl_categorical(prob.mean(0), p_imb))
    acc = np.mean([float((ocs.predict(n, Xte).argmax(1) == yte).double().mean()) for n in nets])
    bias = [bias_softmax(n) for n in nets]
    imb[name] = dict(t=T, kl=KL, klbar=KLbar, acc=acc,
                     bias_u=np.array([float(ocs.kl_categorical(b_, uniform)) for b_ in bias]),
                     bias_p=np.array([float(ocs.kl_categorical(b_, p_imb)) for b_ in bias]))
    print(f"{name}: balanced clean test accuracy {acc:.3f}")
    for a, kind in enumerate(KINDS):
        print(f"  {kind:<9} t (OCS vs uniform)" + "".join(f"{v:>8.3f}" for v in T[:, a].mean(0)))
        print(f"  {'':<9} mean KL to OCS    " + "".join(f"{v:>8.3f}" for v in KL[:, a].mean(0)))
        print(f"  {'':<9} KL(pbar || OCS)   " + "".join(f"{v:>8.3f}" for v in KLbar[:, a].mean(0)))
    print(f"  output bias: KL(softmax(b) || u) {imb[name]['bias_u'].mean():.4f}, KL(softmax(b) || p_hat) {imb[name]['bias_p'].mean():.3f}")

# %%
fig, axes = plotting.subplots(2, height=2.8)
for i, (name, res) in enumerate(imb.items()):
    for a, kind in enumerate(KINDS):
        axes[0].errorbar(np.array(SEVERITIES) + 0.05 * (i - 1), res["t"][:, a].mean(0), yerr=res["t"][:, a].std(0),
                         marker="o" if a == 0 else "s", ms=3, capsize=2, ls="-" if a == 0 else "--",
                         color=plotting.color(i), label=f"{name}, {kind}")
axes[0].axhline(float(ocs.kl_categorical(p_imb, uniform)), color=plotting.color(1), lw=0.8, ls=":")
axes[0].axhline(-float(ocs.kl_categorical(uniform, p_imb)), color="grey", lw=0.8, ls=":")
axes[0].axhline(0.0, color="grey", lw=0.6)
axes[0].set(xlabel="severity", ylabel=r"$t$: >0 closer to the OCS, <0 to uniform")
axes[0].legend(fontsize=6, loc="lower left")
res0 = imb_nets["CNN"]
pbar5 = torch.stack([torch.softmax(ocs.predict(n, shifted["blur", SEVERITIES[-1]]).double().cpu(), 1).mean(0) for n in res0]).mean(0)
axes[1].bar(np.arange(K) - 0.2, pbar5.numpy(), width=0.4, color=plotting.color(0), label="mean prediction, blur 5 (CNN)")
axes[1].bar(np.arange(K) + 0.2, p_imb.numpy(), width=0.4, color=plotting.color(1), label="OCS (label marginal)")
axes[1].axhline(1 / K, color="grey", lw=0.8, ls=":", label="uniform")
axes[1].set(xlabel="class", ylabel="probability", xticks=range(K))
axes[1].legend(fontsize=7)
glue("fig-ocs7-imbalance", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} fig-ocs7-imbalance
# :name: fig-ocs7-imbalance
# Left: the statistic $t$ against the severity for the three kinds of networks (solid: blur,
# dashed: contrast; mean and standard deviation over {glue:text}`ocs7-imb-runs` networks). The upper
# dotted line is the value for predictions equal to the OCS, the lower one for uniform
# predictions. Right: the mean predicted distribution of the CNNs on the strongest blur, against
# the OCS and the uniform distribution.
# ```
#
# The paper's distance, the mean KL of the predictions to $\hat p$, falls with the shift as in
# {doc}`02_reversion_with_shift`. But on these labels it falls because the predictions lose
# confidence, not because they approach the OCS: the statistic $t$ does not rise towards
# $\mathrm{KL}(\hat p\|u)=$ {glue:text}`ocs7-kl-p-u:.3f`, the value of predictions equal to the
# OCS; under blur it *falls* as the shift grows (its change from clean to the strongest blur is at
# most {glue:text}`ocs7-t-change:.3f`, upper end of two standard errors, worst network type;
# `imb-t-falls`; under contrast reduction it hardly moves for the networks trained without the
# recipe, see the table above; with 3 times the epochs, in the committed budget sweep, the fall is
# no longer established on seed 1 (upper 2-SE end of the change: {glue:text}`ocs7-t-x3`), which
# does not show that $t$ rises there, so the row qualifies the hypothesis rather than contradicts
# it), and at the strongest shift it is at most
# {glue:text}`ocs7-t5-max:.3f` (the same bound, worst type and shift), so the predictions end closer
# to the uniform distribution than to the OCS. (Being
# closer to uniform at the strongest shift is not claimed on its own: on balanced test images it
# also holds for any classifier that still follows the labels.) The mean prediction moves
# *away* from the OCS (its KL to $\hat p$ grows) and puts its mass on classes that are rare in
# training. The accumulated constant at the output, $\mathrm{softmax}(b_{\rm out})$, is almost
# exactly uniform (mean KL to $u$ {glue:text}`ocs7-bias-u:.4f`, to $\hat p$
# {glue:text}`ocs7-bias-p:.3f`): the networks store the class prior in their weights, not in the
# output bias. So the test the paper's near-balanced data sets could not make comes out against
# the hypothesis at this scale, with either training recipe.

# %%
names = list(imb)
t5_max = max(ub(imb[n]["t"][:, a, -1]) for n in names for a in range(len(KINDS)))
away = min(lb(imb[n]["klbar"][:, a, -1] - imb[n]["klbar"][:, a, 0]) for n in names for a in range(len(KINDS)))
kl_drop = min(lb(imb[n]["kl"][:, a, 0] - imb[n]["kl"][:, a, -1]) for n in names for a in range(len(KINDS)))
bias_gap = max(ub(imb[n]["bias_u"] - imb[n]["bias_p"]) for n in names)
glue("ocs7-kl-p-u", float(ocs.kl_categorical(p_imb, uniform)), display=False)
glue("ocs7-t5-max", t5_max, display=False)
glue("ocs7-bias-u", float(np.mean([imb[n]["bias_u"].mean() for n in names])), display=False)
glue("ocs7-bias-p", float(np.mean([imb[n]["bias_p"].mean() for n in names])), display=False)
PILOT = "after-seeds: written after the pilot runs of seed 0 that designed this page"
IMB = dict(items="hypothesis", proxy=True, origin=PILOT)
BLUR = KINDS.index("blur")  # under contrast reduction t hardly moves for the plain networks (printed below)
t_change = max(ub(imb[n]["t"][:, BLUR, -1] - imb[n]["t"][:, BLUR, 0]) for n in names)
glue("ocs7-t-change", t_change, display=False)
x3 = lambda cid: budget_table.budget_readings("chapters/extrapolation/07_sharper_tests", cid)  # committed x3 runs
glue("ocs7-t-x3", x3("imb-t-falls"), display=False)
print("per network type and shift (mean - 2 SE of the KL fall; mean + 2 SE of the change of t):")
for n in names:
    for a, kind in enumerate(KINDS):
        print(f"  {n:<22} {kind:<9} {lb(imb[n]['kl'][:, a, 0] - imb[n]['kl'][:, a, -1]):7.3f} "
              f"{ub(imb[n]['t'][:, a, -1] - imb[n]['t'][:, a, 0]):7.3f}")
# the paper's distance falls here too; with imb-t-falls and imb-mean-away it shows that this distance does not
# tell reversion to the OCS from a loss of confidence: a finding about the measurement, not the hypothesis
pooled_drop = lb(np.concatenate([imb[n]["kl"][:, a, 0] - imb[n]["kl"][:, a, -1] for n in names for a in range(len(KINDS))]))
glue("ocs7-kl-drop-pooled", pooled_drop, display=False)
print(f"imbalanced labels, mean KL to the OCS, sev 0 minus sev 5: worst cell {kl_drop:.3f}; pooled over net types and "
      f"shifts {pooled_drop:.3f} (mean - 2 SE)")
ledger.above("imb-kl-falls", "Sec. 3.2 / App. B.3", f"imbalanced labels: mean KL to the OCS, sev 0 minus sev 5, worst net type and shift ({LO}); failed on an unseen seed (-0.42): not a robust fall",
             "the distance to the OCS measures reversion", kl_drop, 0.0, fmt=".3f", items="def-distance", bearing="qualifies",
             proxy=True, origin=PILOT + "; networks per type raised from 5 to 10 after it failed on a seed beyond 0-4",
             falsifier="for some net type and shift the mean per-sample KL to the OCS at severity 5 is not below its clean value by 2 SE")
ledger.below("imb-t-falls", "Sec. 3.1", f"imbalanced labels, blur: $t$ ($t>0$: nearer the OCS than uniform) at sev 5 minus at sev 0, worst net type ({HI}). "
             "At 3x the epochs (" + x3("imb-t-falls") + ", committed budget sweep) the fall is no longer established on "
             "seed 1 (a rise of $t$ is not shown: that would need the lower 2-SE end above 0)",
             "predictions approach the OCS (contradicted at x1; qualified: at 3 x the epochs the fall of $t$ is not established on seed 1)",
             t_change, 0.0, fmt=".3f", bearing="qualifies",
             **{**IMB, "origin": "after-seeds: replaces imb-closer-to-uniform (t < 0 at sev 5) after review; restricted to "
                                 "blur after seed 0 showed t nearly unchanged under contrast for the plain networks; "
                                 "bearing qualifies after the budget sweep (x3, seed 1 FAIL; readings in the statement)"},
             falsifier="under blur some net type's $t$ at severity 5 is not below its clean value by 2 SE (the predictions do not move towards uniform rather than the OCS)")
ledger.above("imb-mean-away", "Sec. 3.1", rf"imbalanced labels: $\mathrm{{KL}}(\text{{mean prediction}}\,\|\,\text{{OCS}})$, sev 5 minus sev 0, worst net type and shift ({LO})",
             "predictions approach the OCS (contradicted)", away, 0.0, fmt=".3f", bearing="contradicts", **IMB,
             falsifier="for some net type and shift the KL of the mean prediction to the OCS at severity 5 is not above its clean value by 2 SE")
ledger.below("imb-bias-uniform", "Fig. 4", rf"imbalanced labels: $\mathrm{{KL}}(\mathrm{{softmax}}(b_{{\rm out}})\,\|\,u) - \mathrm{{KL}}(\mathrm{{softmax}}(b_{{\rm out}})\,\|\,\text{{OCS}})$ ($u$ uniform), worst net type ({HI})",
             "constants mirror the OCS (contradicted)", bias_gap, 0.0, fmt=".3f", items="fig4-const",
             bearing="contradicts", proxy=True, origin=PILOT,
             falsifier=r"for some net type $\mathrm{softmax}(b_{\rm out})$ is not nearer uniform than the OCS by 2 SE")

# %% [markdown]
# ## 2. High-dimensional inputs with low-dimensional classes
#
# The paper expects reversion for high-dimensional inputs, whose learned features occupy a
# low-dimensional subspace. We build such a task (`implicit_bias.extrapolation.tasks.SubspaceTask`):
# inputs in $\mathbb R^{d}$, $d=$ {glue:text}`ocs7-d`, whose ten classes are Gaussian clusters on a
# random $k=$ {glue:text}`ocs7-k`-dimensional subspace (plus a small isotropic component), with the
# same imbalanced class probabilities as above. An MLP ($d\to$ {glue:text}`ocs7-hd-width` $\to$
# {glue:text}`ocs7-hd-width` $\to10$, biases, Adam) is trained on {glue:text}`ocs7-n-hd` inputs,
# {glue:text}`ocs7-runs` times. Two shifts of severity $\lambda\in[0,1]$ keep the mean squared norm
# of the inputs fixed, so neither adds energy:
# - **off the subspace**: $\sqrt{1-\lambda}\,x+\sqrt\lambda\,r$ with $r$ isotropic noise: the inputs
#   leave the span of the learned features, the situation of the paper's mechanism;
# - **within the subspace** (the negative control of the mechanism): the subspace coordinates are
#   mixed with isotropic noise *inside* the subspace, so the inputs leave the class clusters but
#   not the span of the learned features.
#
# We measure the paper's distance to the OCS, the statistic $t$ of section 1 (on balanced test
# inputs), the distance of the predictions to the network's own constant
# $c=\mathrm{softmax}(f(0))$, the output-layer feature-norm ratio, the fraction of the input inside
# the top right singular subspace of the first weight (the paper's projection ratio, 95% energy
# rule of {doc}`03_mechanism`), and the OOD score with the part's featuriser.

# %%
hd_task = tasks.SubspaceTask(d=P["d"], k=P["k"], n_classes=K, class_probs=tasks.geometric_weights(K, P["ratio"]), seed=seed)
X_hd, y_hd = hd_task.sample(P["n_hd"], seed=1000 + seed)
X_hd, y_hd = X_hd.to(dev), y_hd.to(dev)
balanced = tasks.SubspaceTask(d=P["d"], k=P["k"], n_classes=K, seed=seed)  # the same subspace and class means
X_bal, y_bal = balanced.sample(P["n_hd"], seed=2000 + seed)
X_bal, y_bal = X_bal.to(dev), y_bal.to(dev)
p_hd = ocs.ocs_cross_entropy(y_hd.cpu(), K)
hd_nets = ocs.train_runs(lambda: models.MLP(P["d"], K, width=P["hd_width"], depth=3), X_hd, y_hd, "ce", runs=P["runs"],
                         seed=seed, epochs=P["epochs"], batch_size=P["batch_size"], lr=P["hd_lr"])
hd_acc = np.mean([float((ocs.predict(n, X_bal).argmax(1) == y_bal).double().mean()) for n in hd_nets])
featurize, feat_used = ood.featurizer(profile, (P["d"],))
half = len(X_bal) // 2
F_ref = featurize(X_bal[:half])
SHIFTS = {"off the subspace": hd_task.off_subspace, "within the subspace": hd_task.in_subspace}
hd = {}
for name, fn in SHIFTS.items():
    res = {key: np.zeros((len(hd_nets), len(LAMBDAS))) for key in ("kl", "t", "to_c", "c_t", "out", "proj")}
    score = np.zeros(len(LAMBDAS))
    for b, lam in enumerate(LAMBDAS):
        Xs = fn(X_bal.cpu(), lam, seed=3000 + seed).to(dev)
        score[b] = ocs.ood_score(featurize(Xs[half:]), F_ref, repeats=5, generator=torch.Generator().manual_seed(seed))
        for r, net in enumerate(hd_nets):
            prob = torch.softmax(ocs.predict(net, Xs).double().cpu(), 1)
            c = torch.softmax(ocs.predict(net, torch.zeros(1, P["d"], device=dev)).double().cpu(), 1)[0]
            res["kl"][r, b] = float(ocs.kl_categorical(prob, p_hd).mean())
            res["t"][r, b] = float(ocs.closer_to_ocs_than_uniform(prob, p_hd))
            res["to_c"][r, b] = float(ocs.kl_categorical(prob, c).mean())
            res["c_t"][r, b] = float(ocs.closer_to_ocs_than_uniform(c[None], p_hd))
            res["out"][r, b] = ocs.norm_ratios(net, Xs, X_bal)[-1]
            V = ocs.top_subspace(net.layers[0].weight, energy=0.95)
            res["proj"][r, b] = float(ocs.projection_ratio(Xs, V).mean())
    res["score"] = score
    hd[name] = res
print(f"high-dimensional task: balanced test accuracy {hd_acc:.3f}; OOD features: {feat_used}")
print(f"label marginal: " + " ".join(f"{v:.3f}" for v in p_hd))
for name, res in hd.items():
    print(name)
    for key, label in (("score", "OOD score"), ("kl", "mean KL to OCS"), ("t", "t (OCS vs u)"), ("to_c", "KL to own constant"),
                       ("c_t", "t of the constant"),
                       ("out", "output norm ratio"), ("proj", "projection ratio")):
        vals = res[key] if key == "score" else res[key].mean(0)
        print(f"  {label:<20}" + "".join(f"{v:>8.3f}" for v in vals))
glue("ocs7-d", P["d"], display=False)
glue("ocs7-k", P["k"], display=False)
glue("ocs7-hd-width", P["hd_width"], display=False)
glue("ocs7-n-hd", P["n_hd"], display=False)
glue("ocs7-hd-acc", hd_acc, display=False)

# %%
fig, axes = plotting.subplots(3, height=2.6)
for i, (name, res) in enumerate(hd.items()):
    for ax, key, label in zip(axes, ("kl", "proj", "t"), ("mean KL to the OCS", "projection ratio (first layer)", r"$t$ (OCS vs uniform)")):
        ax.errorbar(LAMBDAS, res[key].mean(0), yerr=res[key].std(0), marker="o", ms=3, capsize=2,
                    color=plotting.color(i), label=name)
        ax.set(xlabel=r"severity $\lambda$", ylabel=label)
axes[2].axhline(float(ocs.kl_categorical(p_hd, uniform)), color=plotting.color(1), lw=0.8, ls=":")
axes[2].axhline(-float(ocs.kl_categorical(uniform, p_hd)), color="grey", lw=0.8, ls=":")
axes[0].legend(fontsize=7)
glue("fig-ocs7-hd", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} fig-ocs7-hd
# :name: fig-ocs7-hd
# The high-dimensional task. Left: mean KL of the predictions to the OCS. Middle: fraction of the
# input's squared norm inside the top right singular subspace of the first weight matrix. Right:
# the statistic $t$ of section 1 (dotted: its values for predictions equal to the OCS, above, and
# for uniform predictions, below). Blue: inputs moved off the data subspace; orange: moved within
# it. Mean and standard deviation over the networks.
# ```
#
# Off the subspace, the paper's mechanism appears in full (as it must: at $\lambda=1$ the inputs
# are isotropic noise, so these rows of the ledger are `control`s of the construction): the fraction of the input inside the
# first layer's top singular subspace falls from {glue:text}`ocs7-proj-0:.2f` to
# {glue:text}`ocs7-proj-1:.2f`, the output-layer feature norm collapses (ratio
# {glue:text}`ocs7-out-1:.3f` at $\lambda=1$), and the predictions converge to the network's own
# constant $c=\mathrm{softmax}(f(0))$ (mean KL {glue:text}`ocs7-to-c-0:.2f` at $\lambda=0$,
# {glue:text}`ocs7-to-c-1:.3f` at $\lambda=1$). The paper's distance to the OCS falls from
# {glue:text}`ocs7-kl-0:.2f` to {glue:text}`ocs7-kl-1:.2f`. Within the subspace, at OOD scores of
# the same order (printed above; the weak probe barely separates either shift), none of this happens (projection ratio {glue:text}`ocs7-proj-in-1:.2f` at
# $\lambda=1$). But the constant the predictions converge to is not the OCS: the statistic $t$ of
# the constant itself is negative (`hd-constant-not-ocs`), and so is that of the predictions at
# $\lambda=1$ ({glue:text}`ocs7-hd-t1:.3f`, upper end of two standard errors; reported: at
# $\lambda=1$ the predictions are the constant), so the predictions far off the subspace are closer
# to the uniform distribution than to the imbalanced label marginal. In high dimension the mechanism of the paper holds, and produces reversion to a
# constant; that this constant is the OCS is not what these networks learn.

# %%
off, inn = hd["off the subspace"], hd["within the subspace"]
for key, arr in (("proj-0", off["proj"][:, 0]), ("proj-1", off["proj"][:, -1]), ("out-1", off["out"][:, -1]),
                 ("to-c-0", off["to_c"][:, 0]), ("to-c-1", off["to_c"][:, -1]), ("kl-0", off["kl"][:, 0]),
                 ("kl-1", off["kl"][:, -1]), ("proj-in-1", inn["proj"][:, -1])):
    glue(f"ocs7-{key}", float(np.mean(arr)), display=False)
glue("ocs7-hd-t1", ub(off["t"][:, -1]), display=False)
# the off-subspace shift at lambda = 1 is pure isotropic noise in d dimensions: that its projection onto a
# k-dimensional top subspace, its output norm and its distance to the network's constant fall is the
# construction working (control rows); the findings are the distance to the OCS and where the constant is
HD = dict(items="mechanism", bearing="control", origin=PILOT)
ledger.above("hd-kl-falls", "Fig. 3", rf"$d={P['d']}$, off the subspace: mean KL to the OCS, $\lambda=0$ minus $\lambda=1$ ({LO})",
             "distance falls as inputs become OOD", lb(off["kl"][:, 0] - off["kl"][:, -1]), 0.0, fmt=".3f",
             items="fig3", bearing="supports", proxy=True, origin=PILOT,
             falsifier=r"off the subspace the mean KL to the OCS at $\lambda=1$ is not below its value at $\lambda=0$ by 2 SE")  # a synthetic stand-in for Fig. 3's data sets
ledger.above("hd-proj-falls", "Sec. 4", rf"$d={P['d']}$, off the subspace: projection ratio, $\lambda=0$ minus $\lambda=1$ ({LO})",
             "OOD inputs leave the weights' top subspace", lb(off["proj"][:, 0] - off["proj"][:, -1]), 0.0, fmt=".3f",
             **HD)
ledger.below("hd-outnorm", "Sec. 4", rf"$d={P['d']}$, off the subspace: log output-layer norm ratio at $\lambda=1$ ({HI})",
             "OOD feature norms shrink", ub(np.log(off["out"][:, -1])), 0.0, fmt=".2f", **HD)
ledger.above("hd-to-constant", "Sec. 4.1", rf"$d={P['d']}$, off the subspace: KL to the network's constant, $\lambda=0$ minus $\lambda=1$ ({LO})",
             "outputs dominated by the constants", lb(off["to_c"][:, 0] - off["to_c"][:, -1]), 0.0, fmt=".3f", **HD)
ledger.below("hd-constant-not-ocs", "Fig. 4", rf"$d={P['d']}$: $t$ of the network's constant $\mathrm{{softmax}}(f(0))$ ({HI})",
             "constants mirror the OCS (contradicted)", ub(off["c_t"][:, 0]), 0.0, fmt=".3f", items="fig4-const",
             bearing="contradicts", proxy=True, origin=PILOT,
             falsifier=r"$t$ of the network's constant $\mathrm{softmax}(f(0))$ is not negative by 2 SE (the constant is nearer the OCS than uniform)")
ledger.below("hd-within-control", "control", rf"$d={P['d']}$, within the subspace: projection ratio, $\lambda=0$ minus $\lambda=1$ ({HI})",
             "no fall without leaving the subspace", ub(inn["proj"][:, 0] - inn["proj"][:, -1]), 0.1, fmt=".3f",
             items="mechanism", bearing="control", origin="after-seeds: the margin 0.1 was set after seeing seed 0")

# %% [markdown]
# ## 3. The training recipe: weight decay and the best validation checkpoint
#
# The paper trains with weight decay (App. B.2; for MNIST, Adam with weight decay 0.01) and its
# official code keeps the checkpoint with the lowest validation loss. The networks of
# {doc}`02_reversion_with_shift` have neither. Here the same networks are trained on 80% of the
# digits' training split, with the remaining 20% as a validation set, for the same
# {glue:text}`ocs7-epochs` epochs: the Gaussian-NLL MLP under four recipes, as in chapter 02
# ("plain"), with weight decay {glue:text}`ocs7-wd:g` (Adam's L2 penalty, the paper's MNIST value),
# with the best-validation checkpoint, and with both ("paper"); the reward models (MLP and CNN)
# under the paper's recipe. What decides the reward models' U shape, the constant the network has
# accumulated and how long it is trained, is the factorial experiment of {doc}`10_which_constant`.

# %%
bal = data.digits(seed=seed, image=True)
g = torch.Generator().manual_seed(seed + 1)
order = torch.randperm(len(bal.y_train), generator=g)
n_val = int(P["val_fraction"] * len(order))
Xf, yf = bal.X_train[order[n_val:]].to(dev), bal.y_train[order[n_val:]].to(dev)
Xv, yv = bal.X_train[order[:n_val]].to(dev), bal.y_train[order[:n_val]].to(dev)
TARGETS = {"rewards": (lambda y: ocs.reward_vectors(y, K).to(dev), "mse", K + 1),
           "Gaussian NLL": (lambda y: y.float(), "gaussian_nll", 2)}
OCS_OF = {"rewards": ocs.ocs_reward(yf.cpu(), K), "Gaussian NLL": ocs.ocs_gaussian_nll(yf.float().cpu())}
RECIPES = {"plain": {}, "weight decay": dict(weight_decay=P["weight_decay"]),
           "best validation": dict(keep="best_val"), "paper": dict(weight_decay=P["weight_decay"], keep="best_val")}
ARMS = [("MLP", "rewards", "paper"), ("CNN", "rewards", "paper"),
        ("MLP", "Gaussian NLL", "plain"), ("MLP", "Gaussian NLL", "weight decay"),
        ("MLP", "Gaussian NLL", "best validation"), ("MLP", "Gaussian NLL", "paper")]
shifted_bal = {(kind, s): tasks.shift(bal.X_test.to(dev), kind, s) for kind in KINDS for s in SEVERITIES}
rec = {}
for arch, target, recipe in ARMS:
    to_target, loss, d_out = TARGETS[target]
    make = (lambda: ocs.NormCNN(1, 8, d_out, channels=(16, 32), hidden=(64,))) if arch == "CNN" else \
        (lambda: models.MLP(64, d_out, width=128, depth=3))
    kw = dict(plain, warmup_mse_epochs=5 if loss == "gaussian_nll" else 0, val=(Xv, to_target(yv)), **RECIPES[recipe])
    results = []
    nets = ocs.train_runs(make, Xf, to_target(yf), loss, runs=P["runs"], seed=seed, results=results, **kw)
    D = np.zeros((len(nets), len(KINDS), len(SEVERITIES)))
    S = np.zeros_like(D)
    for r, net in enumerate(nets):
        for a, kind in enumerate(KINDS):
            for b, s in enumerate(SEVERITIES):
                out = ocs.predict(net, shifted_bal[kind, s]).cpu()
                D[r, a, b] = float(ocs.distance_to_ocs(out, OCS_OF[target], loss).mean())
                if loss == "gaussian_nll":
                    S[r, a, b] = float(torch.exp(0.5 * out[:, 1].double()).mean())
    rec[arch, target, recipe] = dict(d=D, sigma=S, kept=[res.kept_epoch for res in results])
print("mean distance to the OCS per severity (blur | contrast); kept epochs")
for (arch, target, recipe), res in rec.items():
    print(f"{arch} {target:<13} {recipe:<16}" + " | ".join("".join(f"{v:>7.2f}" for v in res["d"][:, a].mean(0))
                                                         for a in range(len(KINDS))) + f"   kept {res['kept']}")
glue("ocs7-wd", P["weight_decay"], display=False)
glue("ocs7-epochs", P["epochs"], display=False)

# %%
fig, axes = plotting.subplots(2, height=2.6)
panels = (("rewards", [("MLP", "paper"), ("CNN", "paper")]), ("Gaussian NLL", [("MLP", r) for r in RECIPES]))
for ax, (target, arms) in zip(axes, panels):
    for i, (arch, recipe) in enumerate(arms):
        d = rec[arch, target, recipe]["d"].mean(1)  # mean over the two shifts
        ax.errorbar(SEVERITIES, d.mean(0), yerr=d.std(0), marker="o", ms=3, capsize=2, color=plotting.color(i),
                    label=f"{arch}, {recipe}")
    ax.set(xlabel="severity (mean of blur and contrast)", ylabel="distance to the OCS", title=target)
    ax.legend(fontsize=6)
glue("fig-ocs7-recipe", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} fig-ocs7-recipe
# :name: fig-ocs7-recipe
# Distance to the OCS against the severity (averaged over blur and contrast reduction) under the
# training recipes. Left: squared distance of the reward models to the reward OCS, with the
# paper's recipe. Right: KL of the Gaussian-NLL MLP to the Gaussian OCS under the four recipes.
# Mean and standard deviation over the networks.
# ```
#
# **The reward models' U shape** survives the paper's recipe at this training length: with weight
# decay and the best checkpoint the distance still rises from severity 2 to 5, for the MLP and for
# the CNN (`recipe-mse-rise`; the MLP ends at {glue:text}`ocs7-mse-paper-5:.1f` against
# {glue:text}`ocs7-mse-paper-0:.1f` clean, mean of the two shifts). It is not a property of the
# squared error or of the reward targets as such: {doc}`10_which_constant` shows that the reward
# model reverts to the constant it has accumulated, that starting its output bias at the OCS removes
# the rise, and that longer training with weight decay (100 epochs) removes it too: the U shape
# belongs to the short training, so `recipe-mse-rise` qualifies Fig. 3 and does not contradict it.
# This page's own runs at 3 times the epochs go the same way: the rise is no longer established on
# either seed (lower 2-SE end: {glue:text}`ocs7-mse-rise-x3`, committed budget sweep), which does
# not yet show a fall (that would need the upper end below 0).
#
# **The Gaussian-NLL MLP** does not revert under the paper's recipe either: its predicted standard
# deviation still shrinks, and its KL to the OCS still rises from severity 2 to 5. Weight decay
# makes the rise much smaller (from severity 0 to 5 it is {glue:text}`ocs7-nll-rise-plain:.2f`
# plain, {glue:text}`ocs7-nll-rise-wd:.2f` with weight decay, {glue:text}`ocs7-nll-rise-best:.2f`
# with the best checkpoint alone, {glue:text}`ocs7-nll-rise-paper:.2f` with both), so small that
# with the full recipe the KL at severity 5 is not reliably above its clean value: a first version
# of this page claimed that it is (`recipe-nll-away`), and the claim failed on seed 2; it now claims
# the rise from severity 2 (`recipe-nll-rises`), i.e. that the distance does not keep falling at
# strong shifts. That holds at this training length only: with 3 times the epochs, in the
# committed budget sweep, the rise is still established on seed 0 and no longer on seed 1 (lower
# 2-SE end: {glue:text}`ocs7-nll-rises-x3`; a fall is not shown either), so `recipe-nll-rises`
# qualifies Fig. 3 rather than contradicts it. The best-validation
# checkpoint changes little here because the validation loss is still falling at the last epoch
# for most networks (kept epochs printed above).
#
# So at this training length neither failure of {doc}`02_reversion_with_shift` is an artefact of the
# missing recipe; the recipe softens them, and for the Gaussian-NLL MLP it turns "moves away" into
# "does not revert".

# %%
dmean = {key: res["d"].mean(1) for key, res in rec.items()}  # (runs, severities), mean over the shifts
rise_rewards = min(lb(rec[a, "rewards", "paper"]["d"][:, k, -1] - rec[a, "rewards", "paper"]["d"][:, k, 2])
                   for a in ("MLP", "CNN") for k in range(len(KINDS)))
nll_rise = {r: dmean["MLP", "Gaussian NLL", r][:, -1] - dmean["MLP", "Gaussian NLL", r][:, 0] for r in RECIPES}
nll_sigma = np.log(rec["MLP", "Gaussian NLL", "paper"]["sigma"][:, :, -1] / rec["MLP", "Gaussian NLL", "paper"]["sigma"][:, :, 0]).mean(1)
for r, tag in zip(RECIPES, ("plain", "wd", "best", "paper")):
    glue(f"ocs7-nll-rise-{tag}", float(nll_rise[r].mean()), display=False)
glue("ocs7-mse-paper-0", float(dmean["MLP", "rewards", "paper"][:, 0].mean()), display=False)
glue("ocs7-mse-paper-5", float(dmean["MLP", "rewards", "paper"][:, -1].mean()), display=False)
glue("ocs7-mse-rise-x3", x3("recipe-mse-rise"), display=False)
glue("ocs7-nll-rises-x3", x3("recipe-nll-rises"), display=False)
# under the paper's recipe the failures of chapter 02 remain: contradictions of Fig. 3 (the recipe itself,
# Table B.2, is qualified: it changes the outcome, recipe-nll-wd-helps and 10_which_constant)
RECIPE = dict(items="fig3", proxy=True, origin=PILOT)
ledger.above("recipe-mse-rise", "Fig. 3 / App. B.2", f"rewards, weight decay and best checkpoint at {P['epochs']} epochs: distance sev 5 minus sev 2, worst of MLP/CNN x blur/contrast ({LO}). "
             "At 3x the epochs (" + x3("recipe-mse-rise") + ", committed budget sweep) the rise is no longer established "
             "on either seed (a fall is not shown: that would need the upper 2-SE end below 0): an effect of short training",
             "monotone fall (a U shape after short training)", rise_rewards, 0.0, fmt=".2f", bearing="qualifies",
             **{**RECIPE, "origin": PILOT + "; bearing 'qualifies' (was 'contradicts') after review: with 100 epochs of "
                                           "weight decay the U disappears (10_which_constant, sq-long-training)"},
             falsifier="for some of MLP/CNN x blur/contrast the distance at severity 5 is not above its value at "
                       "severity 2 by 2 SE (the U is gone under weight decay at this length)")
nll_late = dmean["MLP", "Gaussian NLL", "paper"][:, -1] - dmean["MLP", "Gaussian NLL", "paper"][:, 2]
ledger.above("recipe-nll-rises", "Fig. 3 / App. B.2", f"Gaussian NLL MLP, paper's recipe: KL sev 5 minus sev 2, mean of the shifts ({LO}). "
             "At 3x the epochs (" + x3("recipe-nll-rises") + ", committed budget sweep) the rise holds on seed 0 and is no "
             "longer established on seed 1 (a fall is not shown)",
             "distance falls (contradicted at x1; qualified: at 3 x the epochs the rise is not established on seed 1)",
             lb(nll_late), 0.0, fmt=".3f", bearing="qualifies",
             **{**RECIPE, "origin": "after-seeds: replaces recipe-nll-away (sev 5 above clean), which failed on seed 2; "
                                    "bearing qualifies after the budget sweep (x3, seed 1 FAIL; readings in the statement)"},
             falsifier="under the paper's recipe the Gaussian MLP's KL at severity 5 is not above its value at severity 2 by 2 SE")
ledger.below("recipe-nll-sigma", "Fig. 2 / App. B.2", f"Gaussian NLL MLP, paper's recipe: log std ratio sev 5 / sev 0, mean of the shifts ({HI})",
             "predicted variance increases (contradicted)", ub(nll_sigma), 0.0, fmt=".2f",
             items="claim-not-shrinking", bearing="contradicts", proxy=True, origin=PILOT,
             falsifier="under the paper's recipe the Gaussian MLP's predicted std at severity 5 is not below its clean value by 2 SE")
ledger.above("recipe-nll-wd-helps", "App. B.2", f"Gaussian NLL MLP: rise of the KL, plain minus weight decay ({LO})",
             "the paper's recipe", lb(nll_rise["plain"] - nll_rise["weight decay"]), 0.0, fmt=".3f",
             items="table-b2", bearing="qualifies", proxy=True, origin=PILOT,
             vtol=0.1,
             falsifier="the rise of the Gaussian MLP's KL with weight decay is not smaller than without by 2 SE")  # trained Gaussian-NLL networks: 0.30 here, 0.25 with generic CPU kernels (verdict unchanged)

# %% [markdown]
# ## How the claims are checked
#
# As in the earlier chapters: each configuration is trained {glue:text}`ocs7-runs` times from
# independent seeds ({glue:text}`ocs7-imb-runs` for the imbalanced labels of section 1), a claim is
# about the mean over these networks of a per-network statistic, and "the mean is positive" holds
# when it does by $k=$ {glue:text}`ocs7-kse` standard errors; "worst" is the least favourable of the
# networks and shifts named. All the claims of this page were written after the pilot runs of seed
# 0 that designed it (the statistics, the imbalance ratio $r=20$, the high-dimensional task, the
# recipes) and are tested on seeds 1-4 ({doc}`/book/robustness`); the margin of
# `hd-within-control` (a fall of the projection ratio below 0.1) was set after seeing seed 0. Two
# claims were changed after seeds 1 and 2 (said where they are discussed): `recipe-mse-wd-helps`
# was dropped and `recipe-nll-away` became `recipe-nll-rises`. After review: `imb-kl-falls` failed
# on a seed beyond 0-4, so section 1 now trains ten networks per type instead of five, and the row
# bears on the *definition of the distance* (it falls while the predictions move away from the OCS).
# With ten networks it failed again on an unseen seed (-0.42 for the worst net type and shift), so
# the fall of the paper's distance in *every* cell is not robust and the row is read as such; pooled
# over the net types and shifts (every network of every cell) the fall is
# {glue:text}`ocs7-kl-drop-pooled:.3f` at mean $-$ 2 SE on this seed (printed, not yet a row checked
# on seeds 0-4);
# "closer to uniform than to the OCS at severity 5" (`imb-closer-to-uniform`) also holds for any
# classifier that still follows the balanced test labels, so it was replaced by the *change* of $t$
# with the shift (`imb-t-falls`, for blur: under contrast reduction $t$ barely moved on seed 0, so
# that shift was left out after seeing it); the high-dimensional rows whose outcome is fixed by the
# construction (isotropic noise at $\lambda=1$) are `control`s, and `hd-closer-to-uniform` was
# removed (at $\lambda=1$ the predictions are the network's constant, which `hd-constant-not-ocs`
# tests); the one-hot control of the U shape moved to the factorial of {doc}`10_which_constant`.
# Negative controls: the statistic $t$ is positive for predictions equal to the OCS and negative for
# uniform ones (library unit tests); the within-subspace shift is the control of the mechanism
# (`hd-within-control`).
#
# ## Claims

# %% tags=["nbval-check-output"]
ledger.report()
