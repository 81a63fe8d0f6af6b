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
# # The mechanism
#
# Why should predictions revert to the OCS? {cite:t}`kang2024extrapolate` (Sec. 4.1, Fig. 4 and
# Figs. 10-12) propose two ingredients: (i) representations of OOD inputs have *smaller norms* in
# the later layers, because they overlap less with the dominant (low-dimensional) row space of
# the weights; (ii) the output is then dominated by the input-independent constants the network
# accumulates through its biases and normalisation shifts, and these constants are close to the
# OCS ({prf:ref}`definition of the OCS <ocs-def-ocs>`). This page measures each ingredient on small CNNs trained without
# normalisation, with BatchNorm and with LayerNorm.
#
# :::{admonition} What to take away
# - **Feature norms.** Without normalisation the paper's picture holds: under blur the feature
#   norms shrink, and more so in the later layers. With BatchNorm or LayerNorm the output layer
#   shrinks *less* than the first convolution, contrary to the paper's "same trends".
# - **Projection onto the top singular subspace.** The fraction of the hidden representation
#   inside the top right-singular subspace of the next weight does *not* fall with the shift here;
#   the paper's Fig. 4 (col. 2) is not reproduced at this scale.
# - **Accumulated constants.** Read where the paper reads them (the output bias for
#   cross-entropy, the last hidden layer for the reward models), the reward constant is much
#   nearer the OCS with LayerNorm than without normalisation; without normalisation and with
#   BatchNorm it is *farther* from the OCS than the in-distribution predictions. The cross-entropy bias is close to uniform on these
#   mildly imbalanced labels; {doc}`07_sharper_tests` tests it on strongly imbalanced ones.
# - **Mechanism and outcome on the same networks.** The reward networks' predictions move towards
#   their own accumulated constant as the blur grows, as the mechanism says, so they revert to the
#   OCS only where that constant *is* the OCS: without normalisation the output norms shrink and
#   yet the predictions move *away* from the OCS; with LayerNorm the output norms shrink much less
#   than without normalisation and yet the predictions revert. Shrinking output norms are neither necessary nor sufficient here.
# - So only part of the mechanism reproduces on 8x8 digits; the differences are listed in the
#   errata ({doc}`/book/errata`).
# :::

# %% tags=["parameters"]
profile = "ci"   # "ci": digits on a CPU (about a minute); "full": MNIST under rotation with the official CNN (GPU)
seed = 0
device = "auto"
shift_kind = None       # None: the profile's (blur on digits, rotation on MNIST); or contrast, blend_noise, clipped_noise
data_root = None        # folder with MNIST for profile "full" (default: $IMPLICIT_BIAS_DATA)
allow_fallback = False  # profile "full" without MNIST: stop (False) or use the digits and say so (True)

# %%
PROFILES = {
    "ci": dict(dataset="digits", shift="blur", runs=4, epochs=30, batch_size=64, lr=2e-3),
    "full": dict(dataset="mnist", shift="rotation", runs=5, epochs=5, batch_size=64, lr=1e-3),
}
SEVERITIES = (0, 1, 2, 3, 4, 5)
K_SE = 2.0  # claims about a mean over runs hold when they hold by K_SE standard errors (fixed in advance)
NORMS = (None, "batch", "layer")
NORM_NAMES = {None: "no norm", "batch": "BatchNorm", "layer": "LayerNorm"}

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch
from myst_nb import glue

from implicit_bias import plotting
from implicit_bias.extrapolation import ocs, tasks
from implicit_bias.chapter import start_chapter
from implicit_bias.claims import Ledger
from implicit_bias.book import budget_table

P, dev = start_chapter(PROFILES, profile=profile, seed=seed, device=device)
ledger = Ledger("extrapolation/03_mechanism")
K = 10
SHIFT_KINDS = ("blur", "contrast", "blend_noise", "clipped_noise", "rotation")
if shift_kind is not None and shift_kind not in SHIFT_KINDS:
    raise ValueError(f"shift_kind must be None or one of {', '.join(SHIFT_KINDS)}; got {shift_kind!r}")
shift_kind = shift_kind or P["shift"]

# %% [markdown]
# ## Notation
#
# Write the network as $f(x)=g_{i+1}\big(\sigma(W_i\phi_i(x)+b_i)\big)$: $\phi_i(x)$ is the input of
# weight layer $i$ (convolution or linear), $W_i$ its weights and $b_i$ its bias, $\sigma$ the
# nonlinearity (with the normalisation, when there is one) and $g_{i+1}$ the rest of the network.
# The paper's three measurements are:
#
# 1. the **feature-norm ratio** of layer $i$,
#    $\mathbb E_{P_{\rm OOD}}\|W_i\phi_i(x)\|^2\,/\,\mathbb E_{P_{\rm train}}\|W_i\phi_i(x)\|^2$
#    (the official code uses the ratio of mean *unsquared* norms; we follow the paper);
# 2. the **projection ratio** $\|\phi_j(x)^\top V_{\rm top}V_{\rm top}^\top\|^2/\|\phi_j(x)\|^2$, the
#    fraction of a representation inside the span of the top right singular vectors of the
#    following weight $W_j$; the paper does not say how many vectors; we keep the official code's
#    rule, the smallest $k$ with $\sqrt{\sum_{i\le k}s_i^2/\sum_is_i^2}\ge0.95$;
# 3. the **accumulated constant** at layer $k$, $g_{k+1}(\sigma(b_k))$: the output when the
#    input-dependent term $W_k\phi_k(x)$ is replaced by zero (normalisation layers in evaluation
#    mode contribute their shifts).
#
# ## Set-up
#
# The networks are the CNN of the previous chapter (two $3\times3$ convolutions with 16 and 32
# channels and max-pooling, a hidden layer of 64 units, an output layer), with nothing, BatchNorm
# or LayerNorm after each hidden weight layer (`implicit_bias.extrapolation.ocs.NormCNN`). They are trained on a
# **class-imbalanced** subset of the digits (digit $k$ keeps a fraction $(k+1)/10$ of its
# training images), so that the OCS is far from uniform and "the constant is close to the OCS"
# is not automatically true. Cross-entropy models and reward models (squared error on the 11
# rewards, OCS $5\hat p_k-4$ per class and $0$ for abstaining) are trained, each
# {glue:text}`ocs3-runs` times. In-distribution data are the clean test images of the same
# imbalanced distribution; OOD data are the same images under the shift `shift_kind`
# (default: blur in profile `ci`, rotation on MNIST in profile `full`, the paper's MNIST shift)
# at severities 0-5.
#
# **Scale.** The paper runs this analysis on MNIST and CIFAR-10 (Fig. 4), on a ResNet-50 trained
# on ImageNet and evaluated on ImageNet-Sketch and ImageNet-R (Fig. 10), and repeats it with and
# without normalisation on MNIST (Fig. 11) and on a CIFAR-10 AlexNet (Fig. 12). Profile `ci` runs
# one small version of the normalisation ablation, on digits: its claims cite Fig. 11, whose
# setting (a small four-layer network) it is closest to. Profile `full` runs it on MNIST under
# rotation. Fig. 10 (ImageNet, days of GPU training) and Fig. 12 (CIFAR-10 AlexNet) are not run in
# this book; they are listed as untested in the scorecard.

# %%
split, data_used = tasks.load_images(P["dataset"], data_root, seed=seed, allow_fallback=allow_fallback)
ledger.uses_data(data_used)
Xtr, ytr, Xte, yte = split
size = Xtr.shape[-1]
gen = torch.Generator().manual_seed(seed)
keep_tr = torch.rand(len(ytr), generator=gen) < (ytr.double() + 1) / 10
keep_te = torch.rand(len(yte), generator=gen) < (yte.double() + 1) / 10
Xtr, ytr, Xte, yte = Xtr[keep_tr].to(dev), ytr[keep_tr].to(dev), Xte[keep_te].to(dev), yte[keep_te].to(dev)
p_hat = ocs.ocs_cross_entropy(ytr.cpu(), K)
r_star = ocs.ocs_reward(ytr.cpu(), K)
print(f"training images: {len(ytr)}, test images: {len(yte)}")
print("label marginal (the CE OCS): " + " ".join(f"{v:.3f}" for v in p_hat))
glue("ocs3-runs", P["runs"], display=False)


def make(norm, d_out):
    if size == 28:
        return ocs.MNISTNet(d_out, norm=norm)
    return ocs.NormCNN(1, 8, d_out, channels=(16, 32), hidden=(64,), norm=norm)


targets = {"ce": ytr, "mse": ocs.reward_vectors(ytr, K).to(dev)}
nets = {}  # (norm, loss, run) -> network; run r is seeded with 1000 * seed + r (ocs.train_runs)
for norm in NORMS:
    for loss in ("ce", "mse"):
        runs = ocs.train_runs(lambda: make(norm, K if loss == "ce" else K + 1), Xtr, targets[loss], loss,
                              runs=P["runs"], seed=seed, epochs=P["epochs"], batch_size=P["batch_size"], lr=P["lr"])
        nets.update({(norm, loss, r): net for r, net in enumerate(runs)})
for norm in NORMS:
    acc = np.mean([float((ocs.predict(nets[norm, "ce", r], Xte).argmax(1) == yte).double().mean())
                   for r in range(P["runs"])])
    print(f"{NORM_NAMES[norm]:<10} clean test accuracy (CE): {acc:.3f}")

g_shift = torch.Generator().manual_seed(seed)
shifted = {s: tasks.shift(Xte.cpu(), shift_kind, s, generator=g_shift).to(dev) for s in SEVERITIES}

# %% [markdown]
# ## 1. Feature norms shrink in the later layers

# %%
LAYER_NAMES = ["input", "conv 1", "conv 2", "hidden", "output"]
ratios = {}  # norm -> mean over runs, (severities, layers)
ratios_runs = {}  # norm -> (runs, severities, layers)
with torch.no_grad():
    for norm in NORMS:
        R = np.zeros((P["runs"], len(SEVERITIES), len(LAYER_NAMES)))
        for r in range(P["runs"]):
            net = nets[norm, "ce", r]
            ref = [Xte, *net.linear_parts(Xte)]
            for b, s in enumerate(SEVERITIES):
                cur = [shifted[s], *net.linear_parts(shifted[s])]
                R[r, b] = [ocs.norm_ratio(c, a) for c, a in zip(cur, ref)]
        ratios[norm], ratios_runs[norm] = R.mean(0), R

fig, axes = plotting.subplots(3, height=2.6, sharey=True)
for ax, norm in zip(axes, NORMS):
    for b, s in enumerate(SEVERITIES[1:], start=1):
        ax.plot(range(len(LAYER_NAMES)), ratios[norm][b], marker="o", ms=3,
                color=plt.cm.viridis(b / len(SEVERITIES)), label=f"severity {s}")
    ax.axhline(1.0, color="gray", lw=0.8)
    ax.set(xticks=range(len(LAYER_NAMES)), title=NORM_NAMES[norm])
    ax.set_xticklabels(LAYER_NAMES, rotation=45)
axes[0].set_ylabel(r"$E_{OOD}\|W_i\phi_i\|^2 / E_{ID}\|W_i\phi_i\|^2$")
axes[-1].legend(fontsize=7)
glue("fig-ocs3-norms", fig, display=False)
plt.close(fig)
print("feature-norm ratio at the strongest severity, per layer")
for norm in NORMS:
    print(f"  {NORM_NAMES[norm]:<10}" + "".join(f"{n:>9}" for n in LAYER_NAMES))
    print(f"  {'':<10}" + "".join(f"{v:>9.3f}" for v in ratios[norm][-1]))

# %% [markdown]
# ```{glue:figure} fig-ocs3-norms
# :name: fig-ocs3-norms
# Feature-norm ratio $\mathbb E_{\rm OOD}\|W_i\phi_i(x)\|^2/\mathbb E_{\rm ID}\|W_i\phi_i(x)\|^2$ at
# each weight layer (input on the left, output on the right), one curve per severity of the
# shift (severity 0 would be 1 everywhere), for the cross-entropy CNN without normalisation, with
# BatchNorm and with LayerNorm (Fig. 4 col. 1 and Figs. 11-12 of the paper). Averaged over the
# runs. A value below the grey line means OOD features are smaller than in-distribution ones at
# that layer; the paper's mechanism predicts curves that fall from left to right.
# ```

# %% [markdown]
# ## 2. OOD representations leave the top singular subspace
#
# We take $j$ = the hidden fully connected layer: $\phi_j$ is the flattened output of the
# convolutions and $W_j$ the $64\times128$ weight that reads it.

# %%
proj = {}  # norm -> mean over runs of the mean ratio, (severities,)
proj_sd = {}
proj_runs = {}  # norm -> (runs, severities)
with torch.no_grad():
    for norm in NORMS:
        M, S = np.zeros((P["runs"], len(SEVERITIES))), np.zeros((P["runs"], len(SEVERITIES)))
        for r in range(P["runs"]):
            net = nets[norm, "ce", r]
            j = len(net.convs)
            V = ocs.top_subspace(net.weight_layers[j].weight, energy=0.95)
            for b, s in enumerate(SEVERITIES):
                rho = ocs.projection_ratio(net.layer_inputs(shifted[s])[j], V)
                rho = rho[torch.isfinite(rho)]
                M[r, b], S[r, b] = float(rho.mean()), float(rho.std())
        proj[norm], proj_sd[norm], proj_runs[norm] = M.mean(0), S.mean(0), M

fig, ax = plotting.subplots(1, height=2.6)
for i, norm in enumerate(NORMS):
    ax.errorbar(np.array(SEVERITIES) + 0.08 * (i - 1), proj[norm], yerr=proj_sd[norm], marker="o", ms=3,
                capsize=2, color=plotting.color(i), label=NORM_NAMES[norm])
ax.set(xlabel=f"severity of the shift ({shift_kind.replace('_', ' ')})",
       ylabel=r"$\|\phi_j^\top V_{top}V_{top}^\top\|^2/\|\phi_j\|^2$")
ax.legend()
glue("fig-ocs3-proj", fig, display=False)
plt.close(fig)
print("mean projection ratio per severity")
for norm in NORMS:
    print(f"  {NORM_NAMES[norm]:<10}" + "".join(f"{v:>8.3f}" for v in proj[norm]))

# %% [markdown]
# ```{glue:figure} fig-ocs3-proj
# :name: fig-ocs3-proj
# Fraction of the squared norm of the representation $\phi_j(x)$ inside the span of the top right
# singular vectors of the next weight $W_j$ (Fig. 4 col. 2), against the severity of the shift;
# error bars: standard deviation over the test distribution (as in the paper), averaged over
# runs.
# ```

# %% [markdown]
# ## 3. The accumulated constants and the OCS
#
# For the cross-entropy models we read the constant at the output layer, as the paper does for
# CIFAR-10: $\mathrm{softmax}(b_{\rm out})$. For the reward models the paper reads the constant
# "at one of the final layers" (its Fig. 13: for CIFAR-10, the last stage of the ResNet). We read
# it at the last hidden layer, $k$ = the fully connected layer of 64 units: its input-dependent term
# $W_k\phi_k(x)$ is replaced by zero, so the output is $W_{\rm out}\sigma(\nu(b_k))+b_{\rm out}$
# with $\nu$ the normalisation (in evaluation mode) if there is one. For comparison we also print
# the constant through the whole network (zeroing the first convolution's input-dependent term,
# $k=1$), where everything that reaches the output comes from biases and normalisation shifts. We
# compare each with the OCS and with two references: the uniform distribution (CE) and the mean
# distance of in-distribution predictions to the OCS.

# %%
const = {}
with torch.no_grad():
    for norm in NORMS:
        rows = []
        for r in range(P["runs"]):
            net_ce, net_mse = nets[norm, "ce", r], nets[norm, "mse", r]
            last = len(net_ce.weight_layers) - 1
            c_ce = net_ce(Xte[:1], zero_at=last)[0].cpu()
            c_mse = net_mse(Xte[:1], zero_at=last - 1)[0].cpu().double()      # the last hidden layer (paper)
            c_full = net_mse(Xte[:1], zero_at=0)[0].cpu().double()            # through the whole network
            kl_c = float(ocs.distance_to_ocs(c_ce[None], p_hat, "ce"))
            kl_id = float(ocs.distance_to_ocs(ocs.predict(net_ce, Xte).cpu(), p_hat, "ce").mean())
            d_c = float(ocs.distance_to_ocs(c_mse[None], r_star, "mse"))
            d_full = float(ocs.distance_to_ocs(c_full[None], r_star, "mse"))
            d_id = float(ocs.distance_to_ocs(ocs.predict(net_mse, Xte).cpu(), r_star, "mse").mean())
            rows.append(dict(kl_c=kl_c, kl_id=kl_id, d_c=d_c, d_full=d_full, d_id=d_id,
                             abstain=int(c_mse.argmax()) == K, abstain_full=int(c_full.argmax()) == K,
                             softmax=torch.softmax(c_ce.double(), 0), c=c_mse))
        const[norm] = rows
kl_uniform = float(ocs.kl_categorical(torch.full((K,), 1.0 / K, dtype=torch.float64), p_hat))
print(f"KL(uniform || label marginal) = {kl_uniform:.3f}")
print(f"{'':<10} {'KL(softmax(b)||p)':>18} {'mean ID KL':>11} {'|c_k - f*|^2':>13} {'|c_1 - f*|^2':>13} {'mean ID':>8} "
      f"{'abstain (k)':>12} {'abstain (1)':>12}")
for norm in NORMS:
    for row in const[norm]:
        print(f"{NORM_NAMES[norm]:<10} {row['kl_c']:>18.3f} {row['kl_id']:>11.3f} {row['d_c']:>13.2f} {row['d_full']:>13.2f} "
              f"{row['d_id']:>8.2f} {str(row['abstain']):>12} {str(row['abstain_full']):>12}")

fig, axes = plotting.subplots(2, height=2.6)
row0 = const[None][0]
axes[0].bar(np.arange(K) - 0.2, row0["softmax"].numpy(), width=0.4, color=plotting.color(0), label=r"softmax$(b_{out})$")
axes[0].bar(np.arange(K) + 0.2, p_hat.numpy(), width=0.4, color=plotting.color(1), label="OCS")
axes[0].axhline(1 / K, color="grey", lw=0.8, ls=":", label="uniform")
axes[0].set(xlabel="class", ylabel="probability", title="cross-entropy", xticks=range(K))
axes[1].bar(np.arange(K + 1) - 0.2, row0["c"].numpy(), width=0.4, color=plotting.color(0), label="accumulated constant")
axes[1].bar(np.arange(K + 1) + 0.2, r_star.numpy(), width=0.4, color=plotting.color(1), label="OCS")
axes[1].set(xlabel="action (10 = abstain)", ylabel="predicted reward", title="rewards (squared error)",
            xticks=range(K + 1))
axes[1].set_ylim(min(-5.8, float(row0["c"].min()) - 1.5), max(0.3, float(row0["c"].max()) + 0.3))
axes[0].legend()
axes[1].legend(loc="lower center", ncols=2)
glue("fig-ocs3-const", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} fig-ocs3-const
# :name: fig-ocs3-const
# Accumulated constants (blue) against the OCS (orange) for the networks without normalisation
# (first run; Fig. 4 cols. 3-4). Left: the softmax of the output bias against the label marginal
# and the uniform distribution (dotted). Right: the reward network's output with the last hidden
# layer's input-dependent term set to zero, against the mean rewards $5\hat p_k-4$ and 0.
# ```
#
# ## 4. Mechanism and outcome on the same networks
#
# The paper's argument is causal: smaller later-layer representations *make* the predictions
# revert. The networks above are measured for the mechanism; here the same networks, on the same
# shifted sets, are measured for the outcome, the distance of their predictions to the OCS
# ({prf:ref}`definition of the distance <ocs-def-distance>`), so that the two can be compared per normalisation choice.

# %%
outcome = {}  # (norm, loss) -> (runs, severities) distance to the OCS
with torch.no_grad():
    for norm in NORMS:
        for loss, ocs_value in (("ce", p_hat), ("mse", r_star)):
            D = np.zeros((P["runs"], len(SEVERITIES)))
            for r in range(P["runs"]):
                for b, s in enumerate(SEVERITIES):
                    D[r, b] = float(ocs.distance_to_ocs(ocs.predict(nets[norm, loss, r], shifted[s]).cpu(), ocs_value, loss).mean())
            outcome[norm, loss] = D
# how far the reward networks' predictions are from their own accumulated constant c_k (the last hidden layer's)
to_const = {norm: np.array([[float((ocs.predict(nets[norm, "mse", r], shifted[s]).cpu().double() - const[norm][r]["c"]).pow(2).sum(1).mean())
                             for s in SEVERITIES] for r in range(P["runs"])]) for norm in NORMS}
# the output-layer norm ratio of the reward networks too (the mechanism measured on them)
out_mse = {norm: np.array([[ocs.norm_ratios(nets[norm, "mse", r], shifted[s], Xte)[-1] for s in SEVERITIES]
                           for r in range(P["runs"])]) for norm in NORMS}  # (runs, severities)
print("distance to the OCS per severity, then the output-layer norm ratio per severity (means over networks)")
for norm in NORMS:
    for loss in ("ce", "mse"):
        R_out = ratios_runs[norm][:, :, -1] if loss == "ce" else out_mse[norm]
        print(f"  {NORM_NAMES[norm]:<10} {loss:<4} distance" + "".join(f"{v:>8.3f}" for v in outcome[norm, loss].mean(0)))
        print(f"  {'':<15} norm    " + "".join(f"{v:>8.3f}" for v in R_out.mean(0)))
        if loss == "mse":
            print(f"  {'':<15} to c_k  " + "".join(f"{v:>8.2f}" for v in to_const[norm].mean(0)))

fig, axes = plotting.subplots(2, height=2.6)
for i, norm in enumerate(NORMS):
    for ax, loss in zip(axes, ("ce", "mse")):
        D = outcome[norm, loss]
        ax.errorbar(SEVERITIES, D.mean(0), yerr=D.std(0), marker="o", ms=3, capsize=2, color=plotting.color(i),
                    label=NORM_NAMES[norm])
axes[0].set(xlabel=f"severity ({shift_kind.replace('_', ' ')})", ylabel="mean KL to the OCS", title="cross-entropy")
axes[1].set(xlabel=f"severity ({shift_kind.replace('_', ' ')})", ylabel=r"mean $\|f-f^*\|^2$", title="rewards (squared error)")
axes[0].legend()
glue("fig-ocs3-outcome", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} fig-ocs3-outcome
# :name: fig-ocs3-outcome
# The outcome on the networks of the mechanism plots: mean distance of the predictions to the OCS
# against the severity, for the three normalisation choices (error bars: standard deviation over
# the networks). Left: KL of the classifiers' predictions to the label marginal. Right: squared
# distance of the reward networks' predictions to the reward OCS.
# ```

# %% [markdown]
# ## What holds, and what does not
#
# **How the claims are checked.** Each network is trained {glue:text}`ocs3-runs` times from
# independent seeds; a claim is about the mean over these networks of a per-network statistic
# $t_r$, and "the mean is positive" holds when $\bar t-k\,\mathrm{SE}>0$ (SE the standard error
# over networks, $k=$ {glue:text}`ocs3-kse` fixed before running; the ledger prints
# $\bar t\mp k\,\mathrm{SE}$). Norm ratios are compared on a log scale. Every row is checked on
# seeds 0-4 ({doc}`/book/robustness`). History: the claims were first written from the paper and
# the reading guide's pilot for all three normalisation choices; the first version of this page
# found that only part reproduces and weakened three claims on further seeds (a projection claim
# for BN and LN, "every network abstains", and "the CE bias is closer to the marginal than
# uniform", which failed on two of four seeds). This second version reads the reward constant at
# the paper's layer (the last hidden layer, not the whole network) and adds the outcome on the same
# networks; the claims of sections 3 and 4 were written after seeing seed 0 and are tested on seeds
# 1-4 only. Two of them were changed after seeing seeds 1-4. One after seeds 1 and 2: "with LayerNorm the reward networks'
# output norm stays within 20% of its clean value" (a margin chosen on seed 0) failed on seed 1
# (a fall of up to about 20% at two standard errors). What holds is the comparison the argument
# needs: with LayerNorm the output norm shrinks much *less* than without normalisation
# (`mse-ln-shrinks-less`), and yet it is the LayerNorm networks that revert. The other,
# `const-mse-ln`, after seed 4 (see the constants below).
# - *Feature norms without normalisation* behave as in the paper: at severity 5 the output-layer
#   ratio is below 1 ($t_r=\log$ ratio $<0$; it is {glue:text}`ocs3-out-nn:.2f` on average), below
#   the first convolution's ratio ($t_r$ = difference of the logs $<0$), and it decreases with the
#   severity ($t_r$ = Spearman correlation $<0$). Blur itself lowers the squared norm of the
#   *input* (ratio {glue:text}`ocs3-in:.2f`): the later layers shrink beyond that.
# - *With BatchNorm and with LayerNorm* the shrinking is *not* more pronounced with depth, contrary
#   to the paper's Fig. 11 ("same trends"): the output-layer ratio exceeds the first
#   convolution's ($t_r$ = difference of the logs $>0$, for both). The output ratio is
#   {glue:text}`ocs3-out-bn:.2f` with BatchNorm and {glue:text}`ocs3-out-ln:.2f` with LayerNorm.
# - *The projection ratio* of the hidden layer does not fall with the severity without
#   normalisation: its fall from severity 0 to 5, $t_r=\rho_r(0)-\rho_r(5)$, is below 0.05 even at
#   the upper end ($\bar t+k\,\mathrm{SE}<0.05$), a margin fixed as a small fraction of the range
#   over which the paper's CIFAR-10 ratio moves (its axis spans 0.30-0.50). With LayerNorm the
#   ratio falls a little, in the paper's direction (from {glue:text}`ocs3-proj-ln-0:.3f` to
#   {glue:text}`ocs3-proj-ln-5:.3f` on this seed), and with BatchNorm it varies between networks;
#   nothing is claimed for them (the bounds are printed above).
# - *Accumulated constants.* The reward constant at the last hidden layer is farther from the OCS
#   than the in-distribution predictions without normalisation (squared distance
#   {glue:text}`ocs3-dc-nn:.0f` against {glue:text}`ocs3-did-nn:.1f`) and with BatchNorm
#   ({glue:text}`ocs3-dc-bn:.0f` against {glue:text}`ocs3-did-bn:.1f`) ($t_r$ = log of the ratio).
#   With LayerNorm it is much closer to the OCS than without normalisation ($t_r$ = difference of
#   the two log ratios $<0$); on this seed it is even closer than the in-distribution predictions
#   ({glue:text}`ocs3-dc-ln:.1f` against {glue:text}`ocs3-did-ln:.1f`), but a first version of this
#   page claimed that (`const-mse-ln`) and the claim failed on seed 4, so only the comparison with
#   no normalisation is claimed.
#   The cross-entropy output bias is about as far from the marginal as the uniform distribution is
#   (mean KL {glue:text}`ocs3-kl-bias:.3f` against {glue:text}`ocs3-kl-uniform:.3f`): on these
#   mildly imbalanced labels the check cannot tell "mirrors the OCS" from "is near uniform", so it
#   is not claimed here but in {doc}`07_sharper_tests`, on strongly imbalanced labels.
# - *Mechanism and outcome.* The classifiers revert without normalisation and with LayerNorm
#   (with BatchNorm the fall of the KL varies too much between networks to be claimed; so
#   `ce-reverts-nn-ln` *qualifies* Fig. 11's "same trends", as does `mse-ln-reverts`, the reward
#   networks reverting with LayerNorm only). Without
#   normalisation and with BatchNorm, the reward networks' predictions approach their own
#   accumulated constant ($t_r$ = fall of $\|f-c_k\|^2$ from severity 0 to 5 $>0$): the second
#   half of the paper's mechanism, the constants taking over, holds where the constant is far from
#   the OCS. (The claim first covered LayerNorm too; there the constant is near the OCS, the
#   predictions are near both, and the fall was within the noise on seed 1.) But reversion to the *OCS* follows only where the constant is
#   near the OCS. Without normalisation the reward networks' output norms shrink (ratio
#   {glue:text}`ocs3-mse-nn-out:.2f`) and yet their distance to the OCS grows from
#   {glue:text}`ocs3-dmse-nn-0:.1f` to {glue:text}`ocs3-dmse-nn-5:.1f`; with LayerNorm their output
#   norms shrink much less (ratio {glue:text}`ocs3-mse-ln-out:.2f`) and yet the
#   distance falls from {glue:text}`ocs3-dmse-ln-0:.1f` to {glue:text}`ocs3-dmse-ln-5:.1f`. With
#   BatchNorm the output norms grow ({glue:text}`ocs3-mse-bn-out:.2f`) and the distance ends at
#   {glue:text}`ocs3-dmse-bn-5:.1f` (from {glue:text}`ocs3-dmse-bn-0:.1f`).
#
# **Negative controls.** The statistics that support the paper here fail elsewhere on the same
# page: the depth comparison that holds without normalisation fails with BN and LN
# (`norm-depth-bnln`), the constant that is much nearer the OCS with LayerNorm is far from it
# without normalisation (`const-mse-nn-bn`, `const-mse-ln-vs-nn`), and the fall of the distance to the reward networks' own
# constant comes with a *rise* of the distance to the OCS without normalisation (`mse-nn-away`) at
# this budget. At three times the epochs the rise is no longer established on either swept seed
# (lower 2-SE end of the rise: {glue:text}`ocs3-away-x3`, committed budget sweep); that the distance
# falls there is not shown, which would need the upper 2-SE end below 0. Chapter 2's U shape of the
# reward models goes the same way ({glue:text}`ocs3-u-shape-x3`). So the rise is an effect of short
# training: the row qualifies Sec. 4.1 and is not a counterexample.

# %%
glue("ocs3-kse", K_SE, display=False)
lb = lambda t: float(ocs.lower_bound(t, k=K_SE))
ub = lambda t: float(ocs.upper_bound(t, k=K_SE))
LO, HI = f"mean - {K_SE:g} SE", f"mean + {K_SE:g} SE"
last = len(LAYER_NAMES) - 1
log_r = {norm: np.log(ratios_runs[norm]) for norm in NORMS}  # (runs, severities, layers)
nn_r = ratios[None]
glue("ocs3-out-nn", float(nn_r[-1, last]), display=False)
glue("ocs3-in", float(nn_r[-1, 0]), display=False)
glue("ocs3-out-bn", float(ratios["batch"][-1, last]), display=False)
glue("ocs3-out-ln", float(ratios["layer"][-1, last]), display=False)
glue("ocs3-kl-uniform", kl_uniform, display=False)
F4N = dict(items="fig4-norms", proxy=True, origin="prior")
ledger.below("norm-output-nn", "Fig. 4", f"no norm: log output-layer norm ratio at severity 5 ({HI})",
             "decreases with shift", ub(log_r[None][:, -1, last]), 0.0, fmt=".2f", bearing="supports", **F4N,
             falsifier="the output-layer norm ratio at severity 5 is not below 1 by 2 SE for the networks without normalisation")
ledger.below("norm-depth-nn", "Fig. 4", f"no norm: log output ratio minus log conv-1 ratio, severity 5 ({HI})",
             "more pronounced with depth", ub(log_r[None][:, -1, last] - log_r[None][:, -1, 1]), 0.0, fmt=".2f",
             bearing="supports", **F4N,
             falsifier="the output layer does not shrink more than the first convolution by 2 SE (no norm)")
ledger.below("norm-trend-nn", "Fig. 4", f"no norm: Spearman(severity, output ratio) ({HI})",
             "decreases with shift",
             ub([ocs.spearman(SEVERITIES, ratios_runs[None][r, :, last]) for r in range(P["runs"])]), 0.0, fmt=".2f",
             bearing="supports", **F4N,
             falsifier="the output norm ratio is not negatively rank-correlated with the severity by 2 SE (no norm)")
ledger.above("norm-depth-bnln", "Fig. 11",
             f"BN and LN: log output ratio minus log conv-1 ratio, severity 5, worse of the two ({LO})",
             "same trends with BN/LN (contradicted)",
             min(lb(log_r[n][:, -1, last] - log_r[n][:, -1, 1]) for n in ("batch", "layer")), 0.0, fmt=".2f",
             items="fig11", bearing="contradicts", proxy=True, origin="prior",
             falsifier="with BatchNorm and with LayerNorm the output layer shrinks at least as much as the first convolution (the paper's 'same trends')")
print(f"projection ratio, severity 0 minus severity 5, over networks: mean - {K_SE:g} SE, mean + {K_SE:g} SE")
for n in NORMS:
    t = proj_runs[n][:, 0] - proj_runs[n][:, -1]
    print(f"  {NORM_NAMES[n]:<10} {lb(t):>8.3f} {ub(t):>8.3f}")
ledger.below("proj-flat-nn", "Fig. 4", f"no norm: projection ratio, sev 0 minus sev 5 ({HI})",
             "decreases with shift (not reproduced)",
             ub(proj_runs[None][:, 0] - proj_runs[None][:, -1]), 0.05, fmt=".3f", items="fig4-proj",
             bearing="contradicts", proxy=True,
             origin="after-seeds: the first version also claimed BN and LN and was weakened on further seeds; 0.05 is a small fraction of the paper's axis",
             falsifier="the projection ratio falls from severity 0 to 5 by 0.05 or more at the upper 2-SE end (the paper's trend)")
glue("ocs3-proj-ln-0", float(proj["layer"][0]), display=False)
glue("ocs3-proj-ln-5", float(proj["layer"][-1]), display=False)
rows = [row for n in NORMS for row in const[n]]
n_abstain = sum(row["abstain"] for row in rows)
t_uniform = [kl_uniform - row["kl_c"] for row in rows]
print(f"KL(u||p) - KL(softmax(b)||p), pooled over the networks: mean - {K_SE:g} SE {lb(t_uniform):.4f}, "
      f"mean + {K_SE:g} SE {ub(t_uniform):.4f}")
glue("ocs3-kl-bias", float(np.mean([row["kl_c"] for row in rows])), display=False)
glue("ocs3-n-abstain", n_abstain, display=False)
glue("ocs3-n-nets", len(rows), display=False)
for n in NORMS:
    t = [np.log(row["d_c"] / row["d_id"]) for row in const[n]]
    print(f"  {NORM_NAMES[n]:<10} log(|c_k - f*|^2 / mean ID distance): {lb(t):.2f} .. {ub(t):.2f}")
log_const = {n: [np.log(row["d_c"] / row["d_id"]) for row in const[n]] for n in NORMS}
ledger.above("const-mse-nn-bn", "Fig. 4", rf"no norm and BN: $\log$($\lVert c_k - f^*\rVert^2$ / mean ID distance), worse of the two ({LO})",
             "constants mirror the OCS (contradicted)", min(lb(log_const[n]) for n in (None, "batch")), 0.0, fmt=".2f",
             items="fig4-const", bearing="contradicts", proxy=True, origin="after-seeds: written after seeing seed 0",
             falsifier="without normalisation or with BatchNorm the reward networks' constant is not farther from the OCS than their in-distribution predictions by 2 SE")
ledger.below("const-mse-ln-vs-nn", "Fig. 4", rf"$\log$($\lVert c_k - f^*\rVert^2$ / mean ID distance), LayerNorm minus no norm ({HI})",
             "constants mirror the OCS", ub(np.array(log_const["layer"]) - np.array(log_const[None])), 0.0, fmt=".2f",
             items="fig4-const", bearing="qualifies", proxy=True,
             origin="after-seeds: replaces const-mse-ln (closer than the in-distribution predictions), which failed on seed 4",
             falsifier="the LayerNorm constant is not closer to the OCS than the un-normalised one by 2 SE")
# the outcome on the same networks
for n in NORMS:
    print(f"  {NORM_NAMES[n]:<10} mse: log output norm ratio sev 5 {lb(np.log(out_mse[n][:, -1])):.3f} .. {ub(np.log(out_mse[n][:, -1])):.3f};"
          f" distance to c_k sev 0 minus sev 5 {lb(to_const[n][:, 0] - to_const[n][:, -1]):.2f} .. {ub(to_const[n][:, 0] - to_const[n][:, -1]):.2f}")
for n in NORMS:
    for loss in ("ce", "mse"):
        D = outcome[n, loss]
        print(f"  {NORM_NAMES[n]:<10} {loss}: distance sev 0 minus sev 5 {lb(D[:, 0] - D[:, -1]):.3f} .. {ub(D[:, 0] - D[:, -1]):.3f}")
drop = {key: D[:, 0] - D[:, -1] for key, D in outcome.items()}
log_out_mse = {n: np.log(out_mse[n][:, -1]) for n in NORMS}
ledger.above("ce-reverts-nn-ln", "Fig. 11", f"CE, no norm and LN: KL sev 0 minus sev 5, worse of the two ({LO})",
             "predictions revert with every normalisation (BN not resolved here)", min(lb(drop[n, "ce"]) for n in (None, "layer")), 0.0,
             fmt=".3f", items="fig11", bearing="qualifies", proxy=True, origin="after-seeds: written after seeing seed 0",
             falsifier="without normalisation or with LayerNorm the classifiers' KL at severity 5 is not below its clean value by 2 SE")
ledger.above("mse-toward-constant", "Sec. 4.1", rf"rewards, no norm and BN: $\lVert f - c_k\rVert^2$ sev 0 minus sev 5, the worse ({LO})",
             "outputs dominated by the constants", min(lb(to_const[n][:, 0] - to_const[n][:, -1]) for n in (None, "batch")), 0.0,
             fmt=".2f", items="mechanism", bearing="supports", proxy=True,
             origin="after-seeds: written after seed 0 for every norm; LayerNorm left out after its fall was within noise on seed 1",
             falsifier="without normalisation or with BatchNorm the reward predictions at severity 5 are not closer to their own constant than the clean ones by 2 SE")
ledger.below("mse-nn-norm-shrinks", "Fig. 4", f"rewards, no norm: log output norm ratio at sev 5 ({HI})",
             "decreases with shift", ub(log_out_mse[None]), 0.0, fmt=".2f", items="fig4-norms", bearing="supports",
             proxy=True, origin="after-seeds: written after seeing seed 0",
             falsifier="the reward networks' output norm ratio at severity 5 is not below 1 by 2 SE (no norm)")
away_x3 = budget_table.budget_readings("chapters/extrapolation/03_mechanism", "mse-nn-away")
glue("ocs3-away-x3", away_x3, display=False)
glue("ocs3-u-shape-x3", "; ".join(f"`{cid}`: " + budget_table.budget_readings("chapters/extrapolation/02_reversion_with_shift", cid)
                                  for cid in ("cnn-mse-rise", "mlp-mse-rise")), display=False)
ledger.above("mse-nn-away", "Sec. 4.1", f"rewards, no norm: distance to the OCS sev 5 minus sev 0 ({LO}). At 3x "
             "the epochs the rise is no longer established on either seed (lower 2-SE end: " + away_x3
             + ", committed budget sweep; a fall is not shown), like the reward models' U shape (chapter 2's "
             "`cnn-mse-rise`, `mlp-mse-rise` fail at 3x on both seeds): an effect of short training; it qualifies Sec. 4.1",
             "smaller norms, closer to the OCS (qualified)", lb(-drop[None, "mse"]), 0.0, fmt=".2f",
             items=["mechanism", "hypothesis"], bearing="qualifies", proxy=True, origin="after-seeds: written after seeing seed 0",
             falsifier="the un-normalised reward networks' distance to the OCS at severity 5 is not above its clean value by 2 SE (they revert)")
ledger.above("mse-ln-reverts", "Fig. 11", f"rewards, LN: distance to the OCS sev 0 minus sev 5 ({LO})",
             "predictions revert (here only with LN)", lb(drop["layer", "mse"]), 0.0, fmt=".2f", items=["fig11", "hypothesis"],
             bearing="qualifies", proxy=True, origin="after-seeds: written after seeing seed 0",
             falsifier="the LayerNorm reward networks' distance to the OCS at severity 5 is not below its clean value by 2 SE")
ledger.above("mse-ln-shrinks-less", "Fig. 11", f"rewards: log output norm ratio at sev 5, LN minus no norm ({LO})",
             "smaller norms, closer to the OCS (not needed here)", lb(log_out_mse["layer"] - log_out_mse[None]), 0.0,
             fmt=".2f", items=["mechanism", "fig11"], bearing="qualifies", proxy=True,
             origin="after-seeds: replaces 'LN output norm within 20% of clean', which failed on seed 1",
             falsifier="the LayerNorm reward networks' output norm does not shrink less than the un-normalised ones' by 2 SE")
glue("ocs3-mse-ln-out", float(out_mse["layer"][:, -1].mean()), display=False)
glue("ocs3-mse-nn-out", float(out_mse[None][:, -1].mean()), display=False)
glue("ocs3-mse-bn-out", float(out_mse["batch"][:, -1].mean()), display=False)
for n, tag in ((None, "nn"), ("batch", "bn"), ("layer", "ln")):
    glue(f"ocs3-dmse-{tag}-0", float(outcome[n, "mse"][:, 0].mean()), display=False)
    glue(f"ocs3-dmse-{tag}-5", float(outcome[n, "mse"][:, -1].mean()), display=False)
    glue(f"ocs3-dc-{tag}", float(np.mean([row["d_c"] for row in const[n]])), display=False)
    glue(f"ocs3-did-{tag}", float(np.mean([row["d_id"] for row in const[n]])), display=False)

# %% [markdown]
# ## Claims

# %% tags=["nbval-check-output"]
ledger.report()
