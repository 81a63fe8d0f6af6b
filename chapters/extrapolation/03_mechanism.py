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
# # The mechanism
#
# Why should predictions revert to the OCS? {cite:t}`kang2024extrapolate` (Sec. 4.1, Fig. 4 and
# Figs. 10-12) propose two ingredients: (i) representations of OOD inputs have *smaller norms* in
# the later layers, because they overlap less with the dominant (low-dimensional) row space of
# the weights; (ii) the output is then dominated by the input-independent constants the network
# accumulates through its biases and normalisation shifts, and these constants are close to the
# OCS ({prf:ref}`ocs-def-ocs`). This page measures each ingredient on small CNNs trained without
# normalisation, with BatchNorm and with LayerNorm.
#
# :::{admonition} What to take away
# - **Feature norms.** Without normalisation the paper's picture holds: under blur the feature
#   norms shrink, and more so in the later layers. With BatchNorm or LayerNorm the output layer
#   shrinks *less* than the first convolution, contrary to the paper's "same trends".
# - **Projection onto the top singular subspace.** The fraction of the hidden representation
#   inside the top right-singular subspace of the next weight does *not* fall with the shift here;
#   the paper's Fig. 4 (col. 2) is not reproduced at this scale.
# - **Accumulated constants.** The softmax of the cross-entropy output bias is much closer to the
#   label marginal than the in-distribution predictions are, and the reward network's constant
#   picks "abstain", as the paper says. That the bias is closer to the imbalanced marginal than the
#   uniform distribution is, is not established; without normalisation the reward constant is
#   *farther* from the OCS than the in-distribution predictions.
# - So only part of the mechanism reproduces on 8x8 digits; the differences are listed in the
#   errata ({doc}`/book/errata`).
# :::

# %% tags=["parameters"]
profile = "ci"   # "ci": digits on a CPU (about a minute); "full": MNIST with the official CNN (GPU)
seed = 0
device = "auto"
shift_kind = "blur"  # one of the shifts of the previous chapter: blur, contrast, blend_noise, clipped_noise
data_root = None     # folder with MNIST for profile "full" (default: $IMPLICIT_BIAS_DATA)

# %%
PROFILES = {
    "ci": dict(data="digits", runs=4, epochs=30, batch_size=64, lr=2e-3),
    "full": dict(data="mnist", runs=5, epochs=5, batch_size=64, lr=1e-3),
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

from implicit_bias import data, plotting
from implicit_bias.extrapolation import ocs
from implicit_bias.chapter import start_chapter
from implicit_bias.claims import Ledger

P, dev = start_chapter(PROFILES, profile=profile, seed=seed, device=device)
ledger = Ledger("extrapolation/03_mechanism")
K = 10
if shift_kind not in ("blur", "contrast", "blend_noise", "clipped_noise"):
    raise ValueError(f"shift_kind must be one of blur, contrast, blend_noise, clipped_noise; got {shift_kind!r}")

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
# (default: blur) at severities 0-5.

# %%
def load_images():
    if P["data"] == "mnist":
        try:
            Xtr, ytr = data.load_mnist("train", root=data_root)
            Xte, yte = data.load_mnist("test", root=data_root)
            scale = lambda X: X.float().reshape(-1, 1, 28, 28) / (255.0 if X.max() > 1 else 1.0)
            return scale(Xtr), ytr.long(), scale(Xte), yte.long(), 28
        except data.DataNotFound as err:
            print(f"MNIST is not available; falling back to the digits of profile 'ci'.\n{err}")
    s = data.digits(seed=seed, image=True)
    return s.X_train, s.y_train, s.X_test, s.y_test, 8


Xtr, ytr, Xte, yte, size = load_images()
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
shifted = {s: data.shift(Xte.cpu(), shift_kind, s, generator=g_shift).to(dev) for s in SEVERITIES}

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
# CIFAR-10: $\mathrm{softmax}(b_{\rm out})$. For the reward models we read it through the whole
# network, zeroing the first convolution's input-dependent term ($k=1$): then everything that
# reaches the output comes from biases and normalisation shifts. We compare each with the OCS and
# with two references: the uniform distribution (CE) and the mean distance of in-distribution
# predictions to the OCS.

# %%
const = {}
with torch.no_grad():
    for norm in NORMS:
        rows = []
        for r in range(P["runs"]):
            net_ce, net_mse = nets[norm, "ce", r], nets[norm, "mse", r]
            last = len(net_ce.weight_layers) - 1
            c_ce = net_ce(Xte[:1], zero_at=last)[0].cpu()
            c_mse = net_mse(Xte[:1], zero_at=0)[0].cpu().double()
            kl_c = float(ocs.distance_to_ocs(c_ce[None], p_hat, "ce"))
            kl_id = float(ocs.distance_to_ocs(ocs.predict(net_ce, Xte).cpu(), p_hat, "ce").mean())
            d_c = float(ocs.distance_to_ocs(c_mse[None], r_star, "mse"))
            d_id = float(ocs.distance_to_ocs(ocs.predict(net_mse, Xte).cpu(), r_star, "mse").mean())
            rows.append((kl_c, kl_id, d_c, d_id, int(c_mse.argmax()) == K, torch.softmax(c_ce.double(), 0), c_mse))
        const[norm] = rows
kl_uniform = float(ocs.kl_categorical(torch.full((K,), 1.0 / K, dtype=torch.float64), p_hat))
print(f"KL(uniform || label marginal) = {kl_uniform:.3f}")
print(f"{'':<10} {'KL(softmax(b)||p)':>18} {'mean ID KL':>11} {'|c - f*|^2':>11} {'mean ID':>9} {'argmax = abstain':>17}")
for norm in NORMS:
    for r, (kl_c, kl_id, d_c, d_id, abst, _, _) in enumerate(const[norm]):
        print(f"{NORM_NAMES[norm]:<10} {kl_c:>18.3f} {kl_id:>11.3f} {d_c:>11.2f} {d_id:>9.2f} {str(abst):>17}")

fig, axes = plotting.subplots(2, height=2.6)
_, _, _, _, _, sm, cm = const[None][0]
axes[0].bar(np.arange(K) - 0.2, sm.numpy(), width=0.4, color=plotting.color(0), label=r"softmax$(b_{out})$")
axes[0].bar(np.arange(K) + 0.2, p_hat.numpy(), width=0.4, color=plotting.color(1), label="OCS")
axes[0].set(xlabel="class", ylabel="probability", title="cross-entropy", xticks=range(K))
axes[1].bar(np.arange(K + 1) - 0.2, cm.numpy(), width=0.4, color=plotting.color(0), label="accumulated constant")
axes[1].bar(np.arange(K + 1) + 0.2, r_star.numpy(), width=0.4, color=plotting.color(1), label="OCS")
axes[1].set(xlabel="action (10 = abstain)", ylabel="predicted reward", title="rewards (squared error)",
            xticks=range(K + 1))
axes[1].set_ylim(-5.8, 0.3)  # room below the bars for the legend
axes[0].legend()
axes[1].legend(loc="lower center", ncols=2)
glue("fig-ocs3-const", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} fig-ocs3-const
# :name: fig-ocs3-const
# Accumulated constants (blue) against the OCS (orange) for the networks without normalisation
# (first run; Fig. 4 cols. 3-4). Left: the softmax of the output bias against the label marginal.
# Right: the reward network's output with the first layer's input-dependent term set to zero,
# against the mean rewards $5\hat p_k-4$ and 0.
# ```

# %% [markdown]
# ## What holds, and what does not
#
# **How the claims are checked.** Each network is trained {glue:text}`ocs3-runs` times from
# independent seeds; a claim is about the mean over these networks of a per-network statistic
# $t_r$, and "the mean is positive" holds when $\bar t-k\,\mathrm{SE}>0$ (SE the standard error
# over networks, $k=$ {glue:text}`ocs3-kse` fixed before running; the ledger prints
# $\bar t\mp k\,\mathrm{SE}$). Norm ratios are compared on a log scale. The claims were first
# written from the paper and the pilot of the reading guide, for all three normalisation
# choices; seed 0 showed that only part of it reproduces at this scale, so the claims below state
# what seed 0 showed, with the rule above, and were then checked on seeds 1-3. Two of them
# failed on some of those seeds and were replaced by the weaker statements that hold (said so
# below); the set was then checked on a fresh seed 4, where one more claim failed and was
# weakened, and the final set on a fresh seed 5. The `paper` column says what the
# paper says (see the errata page).
# - *Without normalisation*, the paper's picture holds for the norms: at severity 5 the
#   output-layer ratio is below 1 ($t_r=\log$ ratio $<0$; it is {glue:text}`ocs3-out-nn:.2f` on
#   average), below the first convolution's ratio ($t_r$ = difference of the logs $<0$), and it
#   decreases with the severity ($t_r$ = Spearman correlation $<0$). Note that blur itself lowers
#   the squared norm of the *input* (ratio {glue:text}`ocs3-in:.2f`): the later layers shrink
#   beyond that.
# - *With BatchNorm and with LayerNorm* the shrinking is *not* more pronounced with depth, contrary
#   to the paper's Fig. 11 ("same trends"): the output-layer ratio exceeds the first
#   convolution's ($t_r$ = difference of the logs $>0$, for both). The output ratio is
#   {glue:text}`ocs3-out-bn:.2f` with BatchNorm and {glue:text}`ocs3-out-ln:.2f` with LayerNorm.
# - The projection ratio of the hidden layer does *not* fall with the severity without
#   normalisation. The claim is that its fall from severity 0 to 5,
#   $t_r=\rho_r(0)-\rho_r(5)$, is below 0.05 even at the upper end ($\bar t+k\,\mathrm{SE}<0.05$),
#   a margin fixed as a small fraction of the range over which the paper's CIFAR-10 ratio moves
#   (its axis spans 0.30-0.50). The claim was first made for all three networks. With LayerNorm
#   it failed on two of the four seeds tested: there the ratio falls a little, in the paper's
#   direction (from {glue:text}`ocs3-proj-ln-0:.3f` to {glue:text}`ocs3-proj-ln-5:.3f` on this
#   seed). With BatchNorm it then failed on one seed: the mean hardly moves, but from network to
#   network the ratio moves up or down by several hundredths. So the claim is now made only
#   without normalisation, and nothing is claimed with BatchNorm or LayerNorm (the bounds for all
#   three are printed below).
# - The CE output bias gives a distribution much closer to the OCS than the in-distribution
#   predictions are (every network). The reward constant's best action is abstain for a majority
#   of the networks, as the paper says; the claim was first "for every network", but on the fresh
#   seed 4 one LayerNorm network of twelve had a class as the best action of its constant, so the
#   claim is now the weaker "for more than half" (on this seed: {glue:text}`ocs3-n-abstain` of
#   {glue:text}`ocs3-n-nets`). That the output bias is closer to the OCS than the *uniform* distribution is, the
#   non-trivial part of "the constant mirrors the OCS" on imbalanced classes, is **not
#   established**: the check
#   ($t_r=\mathrm{KL}(u\|\hat p)-\mathrm{KL}(\mathrm{softmax}(b)\|\hat p)>0$ at two standard
#   errors, pooled over the three normalisation choices) failed on two of the four seeds tested
#   and was dropped. On this seed the mean KL of the bias's softmax to the marginal is
#   {glue:text}`ocs3-kl-bias:.3f`, against {glue:text}`ocs3-kl-uniform:.3f` for the uniform
#   distribution. The reward constant's squared distance to the OCS, compared with the mean distance of the
#   in-distribution predictions ($t_r$ = log of the ratio), is *larger* without normalisation
#   (contrary to the paper) and smaller with LayerNorm.

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
ledger.below("norm-output-nn", "Fig. 4", f"no norm: log output-layer norm ratio at severity 5 ({HI})",
             "decreases with shift", ub(log_r[None][:, -1, last]), 0.0, fmt=".2f")
ledger.below("norm-depth-nn", "Fig. 4", f"no norm: log output ratio minus log conv-1 ratio, severity 5 ({HI})",
             "more pronounced with depth", ub(log_r[None][:, -1, last] - log_r[None][:, -1, 1]), 0.0, fmt=".2f")
ledger.below("norm-trend-nn", "Fig. 4", f"no norm: Spearman(severity, output ratio) ({HI})",
             "decreases with shift",
             ub([ocs.spearman(SEVERITIES, ratios_runs[None][r, :, last]) for r in range(P["runs"])]), 0.0, fmt=".2f")
ledger.above("norm-depth-bnln", "Fig. 11",
             f"BN and LN: log output ratio minus log conv-1 ratio, severity 5, worse of the two ({LO})",
             "same trends with BN/LN (contradicted)",
             min(lb(log_r[n][:, -1, last] - log_r[n][:, -1, 1]) for n in ("batch", "layer")), 0.0, fmt=".2f")
print(f"projection ratio, severity 0 minus severity 5, over networks: mean - {K_SE:g} SE, mean + {K_SE:g} SE")
for n in NORMS:
    t = proj_runs[n][:, 0] - proj_runs[n][:, -1]
    print(f"  {NORM_NAMES[n]:<10} {lb(t):>8.3f} {ub(t):>8.3f}")
ledger.below("proj-flat-nn", "Fig. 4", f"no norm: projection ratio, sev 0 minus sev 5 ({HI})",
             "decreases with shift (not reproduced)",
             ub(proj_runs[None][:, 0] - proj_runs[None][:, -1]), 0.05, fmt=".3f")
glue("ocs3-proj-ln-0", float(proj["layer"][0]), display=False)
glue("ocs3-proj-ln-5", float(proj["layer"][-1]), display=False)
rows = [row for n in NORMS for row in const[n]]
n_abstain = sum(row[4] for row in rows)
ledger.below("const-ce-id", "Fig. 4", "KL(softmax(b_out)||p) / mean ID KL (max over norms, runs)",
             "constants mirror the OCS", max(row[0] / row[1] for row in rows), 1.0, fmt=".2f")
glue("ocs3-kl-bias", float(np.mean([row[0] for row in rows])), display=False)
glue("ocs3-n-abstain", n_abstain, display=False)
glue("ocs3-n-nets", len(rows), display=False)
ledger.holds("const-mse-abstain", "Fig. 4", "reward constant's best action is abstain (majority of all networks)",
             "constants = (-3.5 x10, 0)", f"{n_abstain} of {len(rows)}", n_abstain > len(rows) / 2, "> half")
ledger.above("const-mse-nn", "Fig. 4", f"no norm: log(|c - f*|^2 / mean ID distance) ({LO})",
             "constants mirror the OCS (contradicted)", lb([np.log(row[2] / row[3]) for row in const[None]]), 0.0,
             fmt=".2f")
ledger.below("const-mse-ln", "Fig. 4", f"LayerNorm: log(|c - f*|^2 / mean ID distance) ({HI})",
             "constants mirror the OCS", ub([np.log(row[2] / row[3]) for row in const["layer"]]), 0.0, fmt=".2f")

# %% [markdown]
# ## Claims

# %%
# NBVAL_CHECK_OUTPUT
ledger.report()
