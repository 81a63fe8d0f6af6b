# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Reversion as the shift grows
#
# The central observation of {cite:t}`kang2024extrapolate` (Figs. 1-3): as test inputs become
# more out-of-distribution, the predictions of a trained network move towards the optimal constant
# solution $f^*_{\rm constant}$ (OCS, {prf:ref}`ocs-def-ocs`). This page trains networks with the
# paper's three losses, evaluates them on inputs corrupted with increasing severity, and plots the
# distance of their predictions to the OCS ({prf:ref}`ocs-def-distance`) against the OOD score of
# each evaluation set ({prf:ref}`ocs-def-ood-score`), both defined in
# {doc}`the previous chapter <01_optimal_constant_solution>`, with error bars over independently
# trained networks. In profile `ci` the data are scikit-learn's 8x8 digits; profile `full` uses
# MNIST {cite:p}`lecun1998gradient` with the official code's CNN.
#
# :::{admonition} What to take away
# - **Cross-entropy** networks (a CNN and an MLP) revert to the OCS, the label marginal, steadily
#   as blur, contrast reduction or noise grow: for every shift the KL to the OCS falls with the
#   severity.
# - **Squared error on rewards** reverts under mild shifts only: the distance to the OCS is
#   U-shaped, and under strong blur or contrast reduction it climbs back to about its clean value.
# - **Gaussian NLL** depends on the network: the CNN's predictions approach the OCS, the MLP's
#   move *away* from it (its predicted variance shrinks).
# - At this scale the OOD score of our stand-in featuriser hardly registers the two noise shifts,
#   so the claims are stated against the severity of the shift, not against the score.
# - The two findings against the paper are listed in the errata
#   ({doc}`/book/errata`); they are small-scale results, not a refutation.
# :::

# %% tags=["parameters"]
profile = "ci"   # "ci": digits on a CPU (about a minute); "full": MNIST with the official CNN (GPU)
seed = 0
device = "auto"
featurizer_weights = None  # TorchScript file of an ImageNet ResNet-18 featurizer (full profile)
data_root = None           # folder with MNIST / CIFAR-10 for profile "full" (default: $IMPLICIT_BIAS_DATA)
dataset = None             # None: the profile's; or "digits", "mnist", "cifar10" (CIFAR-10 + CIFAR-10-C)

# %%
PROFILES = {
    "ci": dict(data="digits", runs=5, epochs=30, batch_size=64, lr=2e-3, ood_repeats=10),
    "full": dict(data="mnist", runs=5, epochs=5, batch_size=64, lr=1e-3, ood_repeats=30),
}
# CIFAR-10 (dataset="cifar10"): ResNet-20, a short budget (the paper: 200 epochs of SGD, 5 runs)
CIFAR = dict(runs=2, epochs=30, batch_size=128, lr=1e-3)
# the shifts: two that remove signal (blur, contrast), then two noises; CIFAR-10-C's own for CIFAR-10
KINDS = ("blur", "contrast", "blend_noise", "clipped_noise")
CIFAR_KINDS = ("defocus_blur", "contrast", "impulse_noise", "shot_noise")
SEVERITIES = (0, 1, 2, 3, 4, 5)
K_SE = 2.0  # claims about a mean over runs hold when they hold by K_SE standard errors (fixed in advance)

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch
from myst_nb import glue
from torch import nn

from implicit_bias import data, models, plotting
from implicit_bias.extrapolation import ocs
from implicit_bias.chapter import start_chapter
from implicit_bias.claims import Ledger

P, dev = start_chapter(PROFILES, profile=profile, seed=seed, device=device)
if dataset is not None:
    if dataset not in ("digits", "mnist", "cifar10"):
        raise ValueError(f"dataset must be None, 'digits', 'mnist' or 'cifar10'; got {dataset!r}")
    P = {**P, "data": dataset}
ledger = Ledger("extrapolation/02_reversion_with_shift")
K = 10

# %% [markdown]
# ## Set-up
#
# - **Data.** The digits split (1347 training and 450 test images of $8\times8$ pixels in
#   $[0,1]$). The test images are corrupted by four shifts that remove signal, at severities
#   $0,\dots,5$ (`implicit_bias.data.shift`): Gaussian blur ($\sigma$ up to 2 pixels), contrast
#   reduction (up to 90%), blending with uniform noise (weight up to 0.6) and additive Gaussian
#   noise clipped to $[0,1]$ (std up to 0.7). These four are the ones for which a pilot on digits
#   found the effect; shifts that *add* energy to the input (unclipped noise, large rotations)
#   are the known counterexamples, treated in a later chapter of this part.
# - **Losses and targets.** Cross-entropy on the ten classes; squared error on the 11 rewards of
#   the paper's selective-classification task ($+1$ correct class, $-4$ wrong class, $0$ abstain),
#   which is the squared-error task of the paper's Fig. 3; Gaussian NLL on the digit value
#   $y\in\{0,\dots,9\}$ read as a real number (the paper does not say what its MNIST Gaussian
#   model regresses; the class index is the natural choice). The OCS of each is the closed form
#   of {prf:ref}`ocs-prop-closed-forms`, computed from the training labels.
# - **Models.** A small CNN (two $3\times3$ conv layers with 16 and 32 channels, each followed by
#   ReLU and $2\times2$ max-pooling, a hidden layer of 64 units, biases everywhere) and an MLP
#   ($64\to128\to128\to$ out). Adam, learning rate {glue:text}`ocs2-lr`, batches of 64,
#   {glue:text}`ocs2-epochs` epochs; the Gaussian model fits its mean with squared error for the
#   first 5 epochs, as the official code does. Each configuration is trained
#   {glue:text}`ocs2-runs` times from different seeds (the error bars).
# - **OOD score.** The paper's featuriser, an ImageNet-pretrained ResNet-18, cannot be downloaded
#   here. In profile `ci` the features are the 64 hidden units of a *separately trained* CNN
#   (same architecture, its own seed): like the paper's, a fixed network trained on natural data.
#   The test set is split in two halves: the first half, clean, stands for the training
#   distribution, the second half, corrupted, is the evaluation set, so that at severity 0 both
#   come from the same distribution. In profile `full`, pass `featurizer_weights` (a TorchScript
#   export of the ResNet-18 up to its average pool) to use the paper's featuriser.
# - **CIFAR-10.** With `dataset="cifar10"` (profile `full`, a GPU, and CIFAR-10 and CIFAR-10-C in
#   the data folder) the networks are the official code's ResNet-20 (`implicit_bias.extrapolation.ocs.ResNet20`)
#   and an MLP, trained for a short budget, and the shifts are CIFAR-10-C's defocus blur,
#   contrast, impulse noise and shot noise at its severities 1-5. This path has not been run for
#   the page; the figures and numbers shown are those of profile `ci`.

# %%
def load_task():
    """Training/test images and labels, and the image size."""
    global P, KINDS
    if P["data"] == "cifar10":
        try:
            Xtr, ytr = data.load_cifar10("train", root=data_root)
            Xte, yte = data.load_cifar10("test", root=data_root)
            for kind in CIFAR_KINDS:  # check the corrupted sets now, before any training
                data.load_cifar10c(kind, 1, root=data_root)
            P, KINDS = {**P, **CIFAR}, CIFAR_KINDS
            return data.Split(Xtr, ytr, Xte, yte), 32
        except data.DataNotFound as err:
            print(f"CIFAR-10 / CIFAR-10-C is not available; falling back to the digits of profile 'ci'.\n{err}")
    if P["data"] == "mnist":
        try:
            Xtr, ytr = data.load_mnist("train", root=data_root)
            Xte, yte = data.load_mnist("test", root=data_root)
            Xtr = Xtr.float().reshape(-1, 1, 28, 28) / (255.0 if Xtr.max() > 1 else 1.0)
            Xte = Xte.float().reshape(-1, 1, 28, 28) / (255.0 if Xte.max() > 1 else 1.0)
            return data.Split(Xtr, ytr.long(), Xte, yte.long()), 28
        except data.DataNotFound as err:
            print(f"MNIST is not available; falling back to the digits of profile 'ci'.\n{err}")
    return data.digits(seed=seed, image=True), 8


split, size = load_task()
split = split.to(dev)
Xtr, ytr, Xte, yte = split


def make_model(arch: str, d_out: int) -> nn.Module:
    if size == 32:  # CIFAR-10: the official code's ResNet-20
        return ocs.ResNet20(d_out) if arch == "cnn" else models.MLP(3 * 32 * 32, d_out, width=512, depth=3)
    if size == 28:  # the official code's MNIST network
        return ocs.MNISTNet(d_out) if arch == "cnn" else models.MLP(28 * 28, d_out, width=512, depth=3)
    if arch == "cnn":
        return models.ConvNet(1, 8, d_out, channels=(16, 32), hidden=(64,), bias=True)
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
                              warmup_mse_epochs=5)
        trained.update({(arch, loss, r): net for r, net in enumerate(runs)})
acc = np.mean([float((ocs.predict(trained["cnn", "ce", r], Xte).argmax(1) == yte).double().mean())
               for r in range(P["runs"])])
acc_mlp = np.mean([float((ocs.predict(trained["mlp", "ce", r], Xte).argmax(1) == yte).double().mean())
                   for r in range(P["runs"])])
print(f"clean test accuracy of the cross-entropy models: CNN {acc:.3f}, MLP {acc_mlp:.3f}")

# %% [markdown]
# ## Evaluation sets and their OOD scores

# %%
def featurizer():
    """The OOD-score featuriser: the paper's ResNet-18 from a local TorchScript file, or a
    separately trained CNN's hidden layer."""
    if featurizer_weights is not None:
        try:
            net = torch.jit.load(str(featurizer_weights), map_location=dev).eval()
            print("OOD-score features: the ResNet-18 featuriser from featurizer_weights")
            return lambda X: net(X.expand(-1, 3, -1, -1)).flatten(1)
        except (OSError, RuntimeError, ValueError) as err:
            print(f"could not load featurizer_weights ({type(err).__name__}: {err}); "
                  "it must be a TorchScript file mapping images (n, 3, h, w) to features. "
                  "Using a separately trained CNN instead.")
    torch.manual_seed(10_000 + seed)
    net = make_model("cnn", K).to(dev)
    ocs.train_model(net, Xtr, ytr, "ce", epochs=P["epochs"], batch_size=P["batch_size"], lr=P["lr"],
                    generator=torch.Generator().manual_seed(10_000 + seed))
    print("OOD-score features: hidden layer of a separately trained CNN (a stand-in for the paper's ResNet-18)")
    embed = net.embed if isinstance(net, ocs.ResNet20) else (lambda X: net.features(X)[-2])
    return lambda X: torch.cat([embed(X[i:i + 2048]) for i in range(0, len(X), 2048)]).detach()


featurize = featurizer()
half = len(Xte) // 2
F_reference = featurize(Xte[:half]).cpu()

shifted = {}
ood = np.zeros((len(KINDS), len(SEVERITIES)))
for a, kind in enumerate(KINDS):
    gen = torch.Generator().manual_seed(seed)
    for b, sev in enumerate(SEVERITIES):
        if size == 32:  # CIFAR-10-C's corrupted test set (same images and order)
            X = Xte if sev == 0 else data.load_cifar10c(kind, sev, root=data_root)[0].to(dev)
        else:
            X = data.shift(Xte.cpu(), kind, sev, generator=gen).to(dev)
        shifted[kind, sev] = X
        ood[a, b] = ocs.ood_score(featurize(X[half:]).cpu(), F_reference, repeats=P["ood_repeats"],
                                  generator=torch.Generator().manual_seed(seed))
print("OOD score of each evaluation set")
print(f"{'shift':<14}" + "".join(f"{'sev ' + str(s):>9}" for s in SEVERITIES))
for a, kind in enumerate(KINDS):
    print(f"{kind:<14}" + "".join(f"{v:>9.3f}" for v in ood[a]))
SIGNAL, NOISE = [0, 1], [2, 3]  # indices into KINDS: the blur and contrast shifts, the noises
ood_rho = min(ocs.spearman(SEVERITIES, ood[a]) for a in SIGNAL)
ledger.above("ood-blur-contrast", "Sec. 3.2", "OOD score grows with severity: min Spearman over blur, contrast",
             "scores grow with shift", ood_rho, 0.8, fmt=".2f")
glue("ocs2-ood-noise-max", float(ood[NOISE, -1].max()),
     display=False)
glue("ocs2-ood-max", float(ood.max()), display=False)

# %% [markdown]
# The stand-in featuriser registers blur and contrast reduction, but hardly the two noise shifts:
# at the strongest noise the score is at most {glue:text}`ocs2-ood-noise-max:.3f`, barely above
# the 0.5 of indistinguishable sets (the largest score of all is
# {glue:text}`ocs2-ood-max:.3f`; the paper's CIFAR-10-C scores reach about 0.7). A network
# trained to classify digits is built to ignore pixel noise, and the probe is deliberately weak
# (the paper's penalty $\alpha=10$ on 64 features). Rank correlations of the distance to the OCS
# *against this score* are therefore dominated by the score's noise for half of the shifts. This
# page shows the relation to the OOD score in the figures, as the paper does, but **states its
# claims against the severity of the shift**, which the experiment controls and which orders the
# evaluation sets by how far they are from the training data for all four shifts; the only claim
# on the score itself is that it grows with the severity where the featuriser can see the shift
# (blur and contrast; the margin, a Spearman correlation above 0.8 over the six severities, is the
# one of the reading guide's pilot).

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
six = (yte == 6).cpu()
cols = (0, 2, 4, 5)
grid = torch.linspace(-4, 14, 300, dtype=torch.float64)
fig, axes = plt.subplots(2, len(cols) + 1, figsize=(plotting.WIDTH, 3.6), sharey="row")
p_hat, (mu_s, sd_s) = OCS["ce"], OCS["gaussian_nll"]
kl_runs = np.array([[float(ocs.kl_categorical(
    torch.softmax(ocs.predict(trained["cnn", "ce", r], shifted[KINDS[0], sev][six.to(dev)]).double(), 1).mean(0).cpu(),
    p_hat)) for sev in SEVERITIES] for r in range(P["runs"])])  # (runs, severities)
for c, sev in enumerate([*cols, None]):
    ax_ce, ax_g = axes[0, c], axes[1, c]
    if sev is None:
        ax_ce.bar(range(K), p_hat.numpy(), color=plotting.color(1))
        dens = torch.exp(-0.5 * ((grid - mu_s) / sd_s) ** 2) / (sd_s * np.sqrt(2 * np.pi))
        ax_g.plot(grid.numpy(), dens.numpy(), color=plotting.color(1))
        ax_ce.set_title("OCS")
    else:
        X6 = shifted[KINDS[0], sev][six.to(dev)]
        pbar = torch.softmax(ocs.predict(trained["cnn", "ce", 0], X6).double(), 1).mean(0).cpu()
        ax_ce.bar(range(K), pbar.numpy(), color=plotting.color(0))
        out = ocs.predict(trained["cnn", "gaussian_nll", 0], X6).double().cpu()
        mu, sd = out[:, :1], torch.exp(0.5 * out[:, 1:])
        dens = (torch.exp(-0.5 * ((grid - mu) / sd) ** 2) / (sd * np.sqrt(2 * np.pi))).mean(0)
        ax_g.plot(grid.numpy(), dens.numpy(), color=plotting.color(0))
        ax_ce.set_title(f"blur severity {sev}")
    ax_ce.set_xticks([0, 6, 9])
    ax_g.set_xlabel("y")
axes[0, 0].set_ylabel("mean softmax")
axes[1, 0].set_ylabel("mean density")
glue("fig-ocs2-fig2", fig, display=False)
plt.close(fig)
glue("ocs2-kl6-0", float(kl_runs[:, 0].mean()), display=False)
glue("ocs2-kl6-5", float(kl_runs[:, -1].mean()), display=False)

# %% [markdown]
# ```{glue:figure} fig-ocs2-fig2
# :name: fig-ocs2-fig2
# Average predictions of the CNN on the test images of the digit 6 as the blur grows (left to
# right), and the OCS (right, orange), for the first of the independently trained networks. Top:
# the mean predicted class distribution of the cross-entropy model spreads from the digit 6 over
# several classes, towards the near-uniform label marginal. Bottom: the mean predicted density
# $\frac1n\sum_i\mathcal N(\mu_i,\sigma_i^2)$ of the Gaussian-NLL model (regressing the digit
# value) moves its centre from 6 towards $\bar y$; how much it widens towards the OCS
# $\mathcal N(\bar y,s^2)$ varies between networks and is not established (see below).
# ```
#
# Averaged over the {glue:text}`ocs2-runs` networks, the KL from the mean prediction to the label
# marginal is {glue:text}`ocs2-kl6-0:.2f` nats on clean 6s and {glue:text}`ocs2-kl6-5:.2f` at the
# strongest blur (claim `fig2-ce` below).

# %% [markdown]
# ## Distance to the OCS against the OOD score (Fig. 3)

# %%
dist = {}   # (arch, loss) -> array (runs, kinds, severities)
sigma = {}  # (arch,) -> mean predicted std of the Gaussian model, (runs, kinds, severities)
for arch in ("cnn", "mlp"):
    for loss in LOSSES:
        d = np.zeros((P["runs"], len(KINDS), len(SEVERITIES)))
        s = np.zeros_like(d)
        for r in range(P["runs"]):
            for a, kind in enumerate(KINDS):
                for b, sev in enumerate(SEVERITIES):
                    out = ocs.predict(trained[arch, loss, r], shifted[kind, sev]).cpu()
                    d[r, a, b] = float(ocs.distance_to_ocs(out, OCS[loss], loss).mean())
                    if loss == "gaussian_nll":
                        s[r, a, b] = float(torch.exp(0.5 * out[:, 1].double()).mean())
        dist[arch, loss] = d
        if loss == "gaussian_nll":
            sigma[arch] = s


YLABEL = {"ce": "mean KL to the OCS (nats)", "mse": r"mean $\|f-f^*\|^2$ to the OCS",
          "gaussian_nll": "mean KL to the OCS (nats)"}


def fig3(arch: str):
    fig, axes = plotting.subplots(3, height=2.6)
    for ax, loss in zip(axes, LOSSES):
        d = dist[arch, loss]
        for a, kind in enumerate(KINDS):
            ax.errorbar(ood[a], d[:, a].mean(0), yerr=d[:, a].std(0), marker="o", ms=3, capsize=2,
                        color=plotting.color(a), label=kind.replace("_", " "))
        ax.plot([ood[:, 0].mean()], [d[:, :, 0].mean()], marker="*", ms=12, color="red", ls="none")
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

# %% [markdown]
# ```{glue:figure} fig-ocs2-fig3-cnn
# :name: fig-ocs2-fig3-cnn
# CNN: distance of the predictions to the OCS ({prf:ref}`ocs-def-distance`) against the OOD score
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
# The same for the MLP. Cross-entropy and squared error behave as for the CNN; the Gaussian-NLL
# MLP moves *away* from the OCS: its predicted variance shrinks as the shift grows.
# ```

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
# hypothesis; the direction is what the paper claims. The statements, fixed from the paper and the
# reading guide's pilot before the runs of seeds 1-3 (seed 0 had been seen; seed 3 was run only
# once, after the rules were written), are:
# - **Cross-entropy**, both networks, every shift: the mean KL to the label marginal at severity 5
#   is below its clean value ($t_r=d_r(0)-d_r(5)$), and it decreases with the severity
#   ($t_r$ = Spearman correlation of severity and $d_r$ over the six severities, claimed negative).
#   On the blurred 6s of Fig. 2, the KL of the *mean* prediction to the marginal falls likewise.
# - **Squared error on rewards**: the distance is U-shaped (also in the pilot), so the paper's
#   claim is checked on the descending branch: for every shift, the distance at severity 2 is
#   below the clean one ($t_r=d_r(0)-d_r(2)$). The book's own finding, formed on seed 0 and
#   checked on the other seeds: for blur and contrast the distance *rises again*
#   ($t_r=d_r(5)-d_r(2)>0$), contrary to a monotone reversion; in the table above, at the
#   strongest blur and contrast the distance is back near its clean value (reported, not claimed).
# - **Gaussian NLL** (averaged over the four shifts, as the NLL was not piloted): for the CNN, the
#   KL to the OCS falls ($t_r$ = mean over shifts of $d_r(0)-d_r(5)>0$). For the MLP the book's
#   finding contradicts the hypothesis: the predicted standard deviation *shrinks*
#   ($t_r$ = mean over shifts of $\log\bar\sigma_r(5)/\bar\sigma_r(0)<0$) and the KL to the OCS
#   *grows* ($t_r=d_r(5)-d_r(0)>0$). The paper presents reversion as a tendency with
#   counterexamples (its App. A); this is one more, at this small scale.
# - **What is not established**: the paper's Fig. 2 shows the predicted standard deviation
#   *growing* under shift. The CNN's does on average (by a factor
#   {glue:text}`ocs2-sigma-cnn-avg:.2f` at severity 5, geometric mean over shifts and networks), but
#   the growth varies so much between networks that on seed 0 it was only just above zero at
#   $k=2$ standard errors, so it is not claimed. What is claimed is the weaker comparison: the
#   CNN's log-ratio exceeds the MLP's ($t_r$ = difference of the two, same seed $r$, $>0$).

# %%
glue("ocs2-kse", K_SE, display=False)
lb = lambda t: float(ocs.lower_bound(t, k=K_SE))
ub = lambda t: float(ocs.upper_bound(t, k=K_SE))
STAT = f"mean - {K_SE:g} SE"
ledger.above("fig2-ce", "Fig. 2", f"blurred 6s: KL(mean softmax || marginal), sev 0 minus sev 5 ({STAT})",
             "predictions move to the OCS", lb(kl_runs[:, 0] - kl_runs[:, -1]), 0.0)
for arch in ("cnn", "mlp"):
    d = dist[arch, "ce"]  # (runs, kinds, severities)
    drop = min(lb(d[:, a, 0] - d[:, a, -1]) for a in range(len(KINDS)))
    trend = max(ub([ocs.spearman(SEVERITIES, d[r, a]) for r in range(P["runs"])]) for a in range(len(KINDS)))
    ledger.above(f"{arch}-ce-drop", "Fig. 3", f"{arch.upper()} CE: KL sev 0 minus sev 5, worst shift ({STAT})",
                 "distance falls with OOD score", drop, 0.0)
    ledger.below(f"{arch}-ce-trend", "Fig. 3",
                 f"{arch.upper()} CE: Spearman(severity, KL), worst shift (mean + {K_SE:g} SE)",
                 "clear downward trend", trend, 0.0, fmt=".2f")
    d = dist[arch, "mse"]
    early = min(lb(d[:, a, 0] - d[:, a, 2]) for a in range(len(KINDS)))
    rise = min(lb(d[:, a, -1] - d[:, a, 2]) for a in SIGNAL)
    ledger.above(f"{arch}-mse-early", "Fig. 3", f"{arch.upper()} rewards: distance sev 0 minus sev 2, worst shift ({STAT})",
                 "distance falls with OOD score", early, 0.0)
    ledger.above(f"{arch}-mse-rise", "Fig. 3",
                 f"{arch.upper()} rewards: distance sev 5 minus sev 2, worse of blur/contrast ({STAT})",
                 "monotone fall (contradicted: U shape)", rise, 0.0)
log_sigma = {arch: np.log(sigma[arch][:, :, -1] / sigma[arch][:, :, 0]).mean(1) for arch in ("cnn", "mlp")}
kl_change = {arch: (dist[arch, "gaussian_nll"][:, :, -1] - dist[arch, "gaussian_nll"][:, :, 0]).mean(1)
             for arch in ("cnn", "mlp")}
ledger.above("cnn-nll-sigma", "Fig. 2", f"Gaussian: log std ratio sev 5 / sev 0, CNN minus MLP, mean over shifts ({STAT})",
             "predicted variance increases", lb(log_sigma["cnn"] - log_sigma["mlp"]), 0.0)
glue("ocs2-sigma-cnn-avg", float(np.exp(log_sigma["cnn"].mean())), display=False)
ledger.above("cnn-nll-kl", "Fig. 3", f"CNN Gaussian: KL sev 0 minus sev 5, mean over shifts ({STAT})",
             "distance falls with OOD score", lb(-kl_change["cnn"]), 0.0)
ledger.below("mlp-nll-sigma", "Fig. 2", f"MLP Gaussian: log std ratio sev 5 / sev 0, mean over shifts (mean + {K_SE:g} SE)",
             "variance increases (contradicted here)", ub(log_sigma["mlp"]), 0.0)
ledger.above("mlp-nll-kl", "Fig. 3", f"MLP Gaussian: KL sev 5 minus sev 0, mean over shifts ({STAT})",
             "distance falls (contradicted here)", lb(kl_change["mlp"]), 0.0)
s_cnn, s_mlp = sigma["cnn"].mean(0), sigma["mlp"].mean(0)
print("mean predicted std of the Gaussian models at severity 5 / severity 0, per shift")
for arch, s_ in (("cnn", s_cnn), ("mlp", s_mlp)):
    print(f"  {arch.upper()}: " + "  ".join(f"{k} {v:.2f}" for k, v in zip(KINDS, s_[:, -1] / s_[:, 0])))
glue("ocs2-sigma-cnn", float(s_cnn[0, -1] / s_cnn[0, 0]), display=False)
glue("ocs2-sigma-mlp", float(s_mlp[0, -1] / s_mlp[0, 0]), display=False)

# %% [markdown]
# Under the strongest blur the Gaussian CNN's mean predicted standard deviation is
# {glue:text}`ocs2-sigma-cnn:.2f` times its clean value, the Gaussian MLP's
# {glue:text}`ocs2-sigma-mlp:.2f` times. The next chapter looks inside the networks for the
# mechanism the paper proposes.
#
# ## Claims

# %%
# NBVAL_CHECK_OUTPUT
ledger.report()
