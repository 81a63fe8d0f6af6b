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
# # The motivating experiment: reduced alignment in a CNN
#
# {cite:t}`le2022training` cite one experiment as motivation: {cite:t}`ji2019gradient` trained
# AlexNet ({cite:t}`krizhevsky2012imagenet`) on CIFAR-10 ({cite:t}`krizhevsky2009learning`)
# and plotted $\|W\|_2/\|W\|_F$ for its three dense layers, of shapes $4096\times1024$,
# $4096\times4096$ and $10\times4096$. The ratios were "much larger" than the trivial lower
# bounds $1/\sqrt{\operatorname{rank}W}$ (about $0.031$, $0.016$, $0.316$) but did not reach 1:
# alignment happens "in a reduced form". Le & Jegelka offer their Theorem 2 as an explanation.
# The paper itself has no experiment, so this page re-runs the observation: in profile `ci` a
# small bias-free CNN on two classes of 8x8 digits, in profile `full` an AlexNet-sized CNN on
# two CIFAR-10 classes read from local files. Each network is trained next to its *linear
# control*, the same network with the identity as activation, whose dense layers provably align
# completely in the limit: the control tells a reduced alignment from a run that is not
# finished.
#
# ```{admonition} What this page shows
# - The measure is the spectral-to-Frobenius ratio $\rho(W)=\|W\|_2/\|W\|_F$
#   ({prf:ref}`def-spectral-frobenius-ratio`) of every layer during training.
# - "Much larger than $1/\sqrt{\operatorname{rank}}$" is not evidence of training: a random
#   square matrix already sits at about twice that bound, and the run's dense layers start
#   there.
# - Training raises the ratios of the hidden dense layers, and they end well below 1, as J&T19
#   saw. But the linear control ends at about the same ratios, although its limit is 1: at this
#   scale the final ratio cannot tell a reduced alignment from an unfinished run.
# - What separates them is where the late growth goes. In the linear control the growth of
#   $\|W\|_F^2$ after the data are fitted goes almost entirely into the top singular direction;
#   in the ReLU network a share of it goes elsewhere (at least {glue:text}`motiv-min-share` in
#   every hidden dense layer here; seeds 0-4 on the {doc}`robustness page </book/robustness>`),
#   as for a limit of rank larger than one. This is a trend in a finite run on stand-in data, not
#   a limit.
# - Weights keep changing sign after the fit, so Theorem 2's stable-sign hypothesis fails in
#   this run: the theorem does not cover it, and where it applies it predicts a rank-one limit
#   for these dense layers. It does not explain the reduced alignment seen here.
# ```

# %% tags=["parameters"]
profile = "ci"   # "ci": CPU, about a minute; "full": CIFAR-10 two classes with AlexNet-sized dense layers (GPU)
seed = 0
device = "auto"
allow_fallback = False  # profile "full" without local CIFAR-10: stop (False) or run the fallback task (True)

# %%
PROFILES = {
    # dataset: "digits" (8x8, in the library) or "cifar10" (local files, see how_to_run)
    # channels / kernel: conv blocks (conv -> act -> 2x2 max-pool); hidden: dense widths
    # optimizer "gd" uses loss-scaled full-batch steps lr / R(w), capped at max_lr
    # growth, offtop, same: thresholds of the claims (see the end of the page)
    "ci": dict(dataset="digits", classes=(3, 5), channels=(8, 16), kernel=3, hidden=(64, 64),
               optimizer="gd", steps=600, lr=0.05, max_lr=2.0, batch_size=None,
               record_every=12, growth=1.25, offtop=0.1, same=0.1),
    "full": dict(dataset="cifar10", classes=(0, 1), channels=(64, 128, 64), kernel=5,
                 hidden=(4096, 4096), optimizer="sgd", steps=20_000, lr=0.01, max_lr=None,
                 batch_size=128, record_every=500, growth=1.25, offtop=0.1, same=0.1,
                 fallback=dict(dataset="digits", classes=(3, 5), channels=(16, 32), kernel=3,
                               hidden=(256, 256), steps=5000, batch_size=None, optimizer="gd",
                               lr=0.05, max_lr=2.0, record_every=100)),
}

# %%
import math

import matplotlib.pyplot as plt
import numpy as np
import torch
from myst_nb import glue

from implicit_bias import data, models, plotting, train
from implicit_bias.chapter import start_chapter
from implicit_bias.claims import Ledger

P, dev = start_chapter(PROFILES, profile=profile, seed=seed, device=device)
ledger = Ledger("invariances/05_motivating_experiment")

# %% [markdown]
# ## What is measured
#
# For a matrix $W$ of rank $r$, $1/\sqrt r\le\|W\|_2/\|W\|_F\le1$: the lower end is a flat
# spectrum, the upper end rank 1. A convolution kernel of shape $(c_{\rm out},c_{\rm in},k,k)$
# is flattened to the $c_{\rm out}\times c_{\rm in}k^2$ matrix (the output-channel flattening
# of {cite:t}`le2022training`, Definition 7). We train with the logistic loss on two classes
# (labels $\pm1$, a scalar output, which is the setting of the theory; J&T19's network had 10
# outputs and biases, ours has one output and no biases) and record every layer's ratio and
# $Q=\|W\|_F^2-\|W\|_2^2$, the squared norm outside the top singular direction. The "trivial
# bound" of a layer is $1/\sqrt{\min(\text{its shape})}$.
#
# A random $m\times n$ matrix with independent entries is far from that bound: its largest
# singular value is close to $\sigma(\sqrt m+\sqrt n)$ and its Frobenius norm to
# $\sigma\sqrt{mn}$, so $\rho\approx1/\sqrt m+1/\sqrt n$, twice the trivial bound for a square
# matrix (the edge of the Marchenko-Pastur law). J&T19's "much larger than the trivial bound"
# therefore says little until the ratio is compared with its value at initialisation.
#
# ```{prf:remark} What the theory says about this experiment
# :label: inv-motiv-remark
# :nonumber:
# {cite:t}`ji2019gradient` prove ratio $\to1$ for deep *linear* networks (see
# {doc}`03_alignment_low_rank_limit`); the linear control below is such a network after its
# convolutions. In a network of the form of Theorem 2 with no ResNetFree block, every dense
# layer after the convolutions has $N_r=0$ and $V_c=1$, so Eqs. (14)-(15) predict ratio $\to1$
# for *all* of them: Theorem 2's lower bounds fall below 1 only for convolutions and for layers
# before ResNetFree blocks. Corollary 1 makes the same prediction for fully connected ReLU
# networks, and {doc}`03_alignment_low_rank_limit` shows it to be false. So neither result
# explains a reduced alignment of these dense layers; the page checks the *observation* of
# J&T19, with thresholds stated before running.
# ```

# %%
def load_task(cfg):
    """The binary task of a profile: a data.Split with +-1 labels and images (n, c, s, s)."""
    if cfg["dataset"] == "digits":
        return data.digits(seed=seed, classes=cfg["classes"], binary=True, image=True)
    if cfg["dataset"] == "cifar10":
        Xtr, ytr = data.load_cifar10("train")
        Xte, yte = data.load_cifar10("test")
        a, b = cfg["classes"]

        def pick(X, y_):
            keep = (y_ == a) | (y_ == b)
            return X[keep], torch.where(y_[keep] == b, 1.0, -1.0)

        return data.Split(*pick(Xtr, ytr), *pick(Xte, yte))
    raise ValueError(f"unknown dataset {cfg['dataset']!r}; use 'digits' or 'cifar10'")


cfg = dict(P)
if cfg["dataset"] == "cifar10":
    fell_back = []

    def fallback_task():
        fell_back.append(True)
        return load_task(cfg | cfg["fallback"])

    fb = cfg["fallback"]
    split, used = data.load_or_fallback(
        lambda: load_task(cfg), fallback_task, name=f"CIFAR-10 classes {cfg['classes']}",
        fallback_name=f"digits classes {fb['classes']} with a smaller CNN",
        allow_fallback=allow_fallback)
    if fell_back:
        cfg.update(fb)
else:
    split, used = load_task(cfg), f"digits classes {cfg['classes']} (8x8, scikit-learn)"
ledger.uses_data(used)
split = split.to(dev)
X, y = split.X_train, split.y_train
print(f"task: {used}, {len(y)} training images of shape {tuple(X.shape[1:])}")

# %% [markdown]
# ## Training the network and its linear control
#
# Both networks start from the same weights and are trained with the same steps.

# %%
def norms(model):
    """(layers, 2): ||W||_F^2 and ||W||_2^2 of every weight matrix, in float64."""
    out = []
    for W in models.weight_matrices(model):
        W = W.detach().double()
        out.append(torch.stack([W.pow(2).sum(), torch.linalg.matrix_norm(W, 2) ** 2]))
    return torch.stack(out).cpu()


class SignChanges:
    """Recorder metric: how many weight entries changed sign since the previous record, summed
    over the run so far (Assumption 1's monitor, read at every record)."""

    def __init__(self) -> None:
        self.prev: list[torch.Tensor] | None = None
        self.total = 0

    def __call__(self, model) -> int:
        now = [W.detach() > 0 for W in models.weight_matrices(model)]
        if self.prev is not None:
            self.total += sum(int((a != b).sum()) for a, b in zip(now, self.prev))
        self.prev = now
        return self.total


runs = {}
for act in ("relu", "linear"):
    torch.manual_seed(seed)
    net = models.ConvNet(X.shape[1], X.shape[-1], 1, channels=cfg["channels"],
                         kernel_size=cfg["kernel"], hidden=cfg["hidden"], activation=act).to(dev)
    recorder = train.Recorder(cfg["record_every"], {
        "norms": norms, "margin": lambda m: float((y * m(X).reshape(-1)).min()),
        "signs": SignChanges()})
    gen = torch.Generator().manual_seed(seed)
    kw = dict(loss="logistic", steps=cfg["steps"], lr=cfg["lr"], recorder=recorder, generator=gen)
    if cfg["optimizer"] == "gd":
        kw.update(loss_scaled_lr=True, max_lr=cfg["max_lr"])
    else:
        kw.update(optimizer="sgd", batch_size=cfg["batch_size"])
    hist = train.train(net, X, y, **kw, desc=act)
    N = hist.stacked("norms")                                    # (records, layers, 2)
    margin = np.array(hist["margin"])
    with torch.no_grad():  # on the whole training set (with SGD, hist.loss holds mini-batch losses)
        final_loss = float(train.loss_function("logistic")(net(X), y))
    runs[act] = dict(F=N[..., 0].numpy(), S=N[..., 1].numpy(), ratio=(N[..., 1] / N[..., 0]).sqrt().numpy(),
                     steps=np.array(hist.record_steps), margin=margin, loss=final_loss,
                     fit=int(np.argmax(margin > 0)) if (margin > 0).any() else len(margin) - 1,
                     signs=np.array(hist["signs"]), train_acc=train.accuracy(net, X, y),
                     test_acc=train.accuracy(net, split.X_test, split.y_test))
    r = runs[act]
    print(f"{act:6s}: final training loss {final_loss:.2e}, training accuracy {r['train_acc']:.3f}, "
          f"test accuracy {r['test_acc']:.3f}; every sample classified from step {r['steps'][r['fit']]}; "
          f"weight-sign changes between records {r['signs'][-1]} ({r['signs'][-1] - r['signs'][r['fit']]} "
          "after the fit)")
shapes = [tuple(W.shape) for W in models.weight_matrices(net)]
n_conv = len(cfg["channels"])
names = [f"conv{i + 1}" for i in range(n_conv)] + [f"dense{i + 1}" for i in range(len(shapes) - n_conv)]
trivial = [1 / math.sqrt(min(s)) for s in shapes]
random_ratio = [1 / math.sqrt(s[0]) + 1 / math.sqrt(s[1]) for s in shapes]
dense = [i for i, nm in enumerate(names) if nm.startswith("dense") and shapes[i][0] > 1]

# %%
R, Rl = runs["relu"], runs["linear"]


def offtop_share(run, i):
    """Share of the growth of ||W_i||_F^2 after the fit that goes off the top direction."""
    Q = run["F"][:, i] - run["S"][:, i]
    f = run["fit"]
    return float((Q[-1] - Q[f]) / (run["F"][-1, i] - run["F"][f, i]))


print("layer    shape       trivial  random   initial  ReLU end  linear end  share off top (ReLU, linear)")
for i, nm in enumerate(names):
    extra = (f"   {offtop_share(R, i):.3f}, {offtop_share(Rl, i):.3f}" if i in dense else "")
    print(f"{nm:7s}  {shapes[i][0]:4d} x {shapes[i][1]:4d}  {trivial[i]:.3f}    "
          f"{random_ratio[i]:.3f}    {R['ratio'][0, i]:.3f}    {R['ratio'][-1, i]:.3f}     "
          f"{Rl['ratio'][-1, i]:.3f}{extra}")
init_vs_random = max(abs(R["ratio"][0, i] / random_ratio[i] - 1) for i in dense)
growth = {i: float(R["ratio"][-1, i] / R["ratio"][0, i]) for i in dense}
same = {i: abs(float(R["ratio"][-1, i] - Rl["ratio"][-1, i])) for i in dense}
share = {i: offtop_share(R, i) for i in dense}
share_lin = max(offtop_share(Rl, i) for i in dense)
glue("motiv-init-random", f"{init_vs_random:.2f}", display=False)
glue("motiv-min-growth", f"{min(growth.values()):.2f}", display=False)
glue("motiv-max-final", f"{max(R['ratio'][-1, i] for i in dense):.3f}", display=False)
glue("motiv-max-same", f"{max(same.values()):.3f}", display=False)
glue("motiv-min-share", f"{min(share.values()):.2f}", display=False)
glue("motiv-share-lin", f"{share_lin:.3f}", display=False)
glue("motiv-test-acc", f"{R['test_acc']:.3f}", display=False)
glue("motiv-offtop", f"{cfg['offtop']:g}", display=False)
glue("motiv-maxlr", f"{cfg['max_lr']:g}", display=False)
glue("motiv-signs-fit", f"{int(R['signs'][-1] - R['signs'][R['fit']])}", display=False)

# %%
fig, axes = plotting.subplots(2)
ax = axes[0]
for c, i in enumerate(dense):
    for act, ls in (("relu", "-"), ("linear", "--")):
        r = runs[act]
        ax.plot(np.maximum(r["steps"], 1), r["ratio"][:, i], ls=ls, color=plotting.color(c),
                label=f"{names[i]} ({act})")
    ax.axhline(trivial[i], color=plotting.color(c), ls=":", lw=1)
ax.set_xscale("log")
ax.set_ylim(0, 1.02)
ax.set_xlabel("training step")
ax.set_ylabel(r"$\|W\|_2/\|W\|_F$")
ax.set_title("dense layers (dotted: trivial bound)", fontsize=9)
ax.legend(fontsize=7)
ax = axes[1]
for c, i in enumerate(dense):
    for act, ls in (("relu", "-"), ("linear", "--")):
        r = runs[act]
        f = r["fit"]
        Q = r["F"][:, i] - r["S"][:, i]
        ax.plot(r["F"][f:, i] - r["F"][f, i], Q[f:] - Q[f], ls=ls, color=plotting.color(c))
ax.set_xlabel(r"growth of $\|W\|_F^2$ after the fit")
ax.set_ylabel(r"growth of $Q=\|W\|_F^2-\|W\|_2^2$")
ax.set_title("where the late growth goes", fontsize=9)
glue("fig-motiv-ratio", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} fig-motiv-ratio
# :name: fig-inv-motiv-ratio
# Left: spectral-to-Frobenius ratio of the hidden dense layers during training (log step
# axis), for the ReLU network (solid) and its linear control (dashed), with each layer's trivial
# bound $1/\sqrt{\min\text{dim}}$ (dotted); the scalar output layer is a vector, ratio 1, not
# shown. Right: after every sample is classified, the growth of $Q=\|W\|_F^2-\|W\|_2^2$ against
# the growth of $\|W\|_F^2$: flat for the linear control (all growth enters the top singular
# direction), rising for the ReLU network.
# ```
#
# At initialisation the hidden dense layers are within {glue:text}`motiv-init-random` (relative)
# of the random-matrix value $1/\sqrt m+1/\sqrt n$. Training raises every hidden dense ratio by
# a factor of at least {glue:text}`motiv-min-growth`, to at most {glue:text}`motiv-max-final`
# (test accuracy {glue:text}`motiv-test-acc`): J&T19's "reduced alignment", at a small scale.
# But the linear control ends within {glue:text}`motiv-max-same` of the same ratios, although
# its ratios tend to 1: at the end of this run the ratio does not distinguish a reduced limit
# from a run that is not finished. The late growth does. After the fit, at least
# {glue:text}`motiv-min-share` of the growth of $\|W\|_F^2$ of each ReLU dense layer goes off
# the top singular direction, against at most {glue:text}`motiv-share-lin` for the linear
# control. The ReLU layers look headed for a limit of rank larger than one, the linear ones for
# rank one; this is a trend measured in a finite run, not a limit, and how large the ReLU share
# is depends on the run (seeds 0-4 on the {doc}`robustness page </book/robustness>`). Weights
# keep changing sign after the fit ({glue:text}`motiv-signs-fit` changes between records in the
# ReLU network), so Theorem 2's stable-sign hypothesis does not hold in this run: the theorem
# does not apply here, and where it does apply it predicts a rank-one limit for these layers.
# Either way it does not explain the reduced alignment seen here.
#
# ## Conclusion
#
# The observation that motivated {cite:t}`le2022training` is reproduced at CPU scale, on
# stand-in data, once it is measured against a linear control: the dense layers of a bias-free
# ReLU CNN trained on separable data align, but part of their late growth stays off the top
# direction, while the same network with linear activations puts nearly all of it there. The run
# changes weight signs after the fit, so it lies outside Theorem 2's hypotheses; and where the
# theorem applies it predicts a rank-one limit for exactly these layers ($N_r=0$, $V_c=1$), a
# conclusion that is false for fully connected ReLU networks whose hypotheses are verified
# ({doc}`03_alignment_low_rank_limit`), as is the matrix invariance its proof rests on
# ({doc}`06_pairwise_invariance`). The reduced alignment is therefore an observation without a
# proof for ReLU networks: Theorem 2 neither covers this run nor, for these layers, predicts a
# reduction.

# %% [markdown]
# ## Claims
#
# Fixed before the run: the training data must be fitted (loss below $\log 2/n$: every sample
# correctly classified); the initial dense ratios within 15% of the random-matrix value; each
# hidden dense ratio grows by at least 25%; the ReLU and linear end ratios within 0.1 of each
# other; after the fit, less than {glue:text}`motiv-offtop` of the growth off the top direction
# for the linear control and more than that for each ReLU dense layer. Three changes are
# disclosed. This page replaced a claim "final ratio above twice the trivial bound" of an
# earlier version: a random square matrix already sits there, so that claim could not fail.
# The runs first capped the loss-scaled step at 10. With that cap the late phase is chaotic: the
# share of one seed's dense1 moved between 0.07 and 0.43 across CPU kernels (float32 and float64
# alike), and on seed 2 it was 0.08 here, so the share threshold had been lowered from 0.1 to
# 0.05 to pass. A value that moves that much between machines supports nothing, so the cap is
# now {glue:text}`motiv-maxlr`: on seeds 0-4 and three CPU kernels the ReLU shares then stay
# between 0.18 and 0.37 and the linear ones below 0.01, and the threshold is back at the 0.1
# fixed before the first run; they are compared across machines with a tolerance of 0.1 (the
# largest move seen between kernels was 0.07). The difference of the final ratios of the two
# networks is compared with a tolerance of 0.05 (it moved by about 0.02 between kernels). The
# last row, on Theorem 2's explanation, counted first as a contradiction, then as a
# qualification because the run is outside the theorem's stable-sign hypothesis. It counts as a
# contradiction on stand-in data again: the item it bears on is the paper's claim that the
# theorem *explains* the reduced alignment, and a reduction that shows where the theorem does not
# apply, in layers for which, where it applies, it predicts none, is what that claim rules out
# (the errata page says so). It would have failed had no weight changed sign after the fit, or
# had the ReLU layers put no more of their late growth off the top direction than the linear
# control.

# %% tags=["nbval-check-output"]
n_train = len(y)
share_gap = min(share[i] - offtop_share(Rl, i) for i in dense)
ledger.below("fit", "J&T19 setting", "setup check: training loss below log(2)/n (all samples "
             "classified)", "separable, risk $\\to 0$", R["loss"], math.log(2) / n_train, fmt=".2e",
             items="jt19-alexnet", bearing="control", origin="theory")
ledger.below("init-random-matrix", "J&T19 setting", "setup check: at initialisation the hidden "
             "dense ratios equal the random-matrix value $1/\\sqrt m + 1/\\sqrt n$ within 15%",
             "(not discussed)", init_vs_random, 0.15, fmt=".3f", items="jt19-alexnet",
             bearing="control", origin="prior")
for i in dense:
    ledger.above(f"{names[i]}-grows", "J&T19 Fig. (AlexNet)", f"{names[i]}: final ratio > "
                 f"{cfg['growth']:g} x initial ratio", "increases in training", growth[i],
                 cfg["growth"], fmt=".2f", items="jt19-alexnet", bearing="supports",
                 falsifier=f"the dense layer's final ratio at most {cfg['growth']:g} times its "
                            "initial ratio", proxy=True,
                 origin="prior")
    ledger.below(f"{names[i]}-same-as-linear", "J&T19 Fig. (AlexNet)", f"{names[i]}: the final "
                 f"ratio is within {cfg['same']:g} of the linear control's, whose limit is 1",
                 "< 1 (reduced alignment)", same[i], cfg["same"], fmt=".3f",
                 items="jt19-alexnet", bearing="qualifies",
                 falsifier=f"the ReLU layer's final ratio more than {cfg['same']:g} from the "
                            "linear control's", proxy=True, origin="prior",
                 vtol=0.05)  # a difference of two float32 runs: it moves by about 0.02 between
    #                        CPU kernels
    ledger.above(f"{names[i]}-offtop", "J&T19 Fig. (AlexNet)", f"{names[i]}: share of the growth "
                 f"of $\\lVert W\\rVert_F^2$ after the fit that goes off the top direction > {cfg['offtop']:g}",
                 "reduced alignment", share[i], cfg["offtop"], fmt=".3f", items="jt19-alexnet",
                 bearing="supports",
                 falsifier=f"at most {cfg['offtop']:g} of the growth of $\\lVert W\\rVert_F^2$ "
                            "after the fit going off the top direction", proxy=True,
                 origin="after-seeds: the step cap was lowered from 10 to 2 after the share "
                        "proved chaotic across CPU kernels (0.07-0.43 on one seed); the "
                        "threshold is the 0.1 fixed before the first run",
                 vtol=0.1)  # on seeds 0-4 the share moved by at most 0.07 between CPU kernels
ledger.below("linear-offtop", "J&T19 (linear)", "negative control: for the linear control that "
             f"share is below {cfg['offtop']:g} in every hidden dense layer", "rank-one limit",
             share_lin, cfg["offtop"], fmt=".3f", items="jt19-alexnet", bearing="control",
             origin="after-seeds: the threshold of the ReLU shares (0.1, fixed before the first "
                    "run), with the step cap lowered from 10 to 2")
signs_fit = int(R["signs"][-1] - R["signs"][R["fit"]])
ledger.holds("thm2-explains", "Thm 2 (N_r = 0, V_c = 1), Assumption 1", "the reduction shows "
             "outside Theorem 2's hypotheses: weights change sign after the fit (Assumption 1 "
             "fails), and in layers where the theorem, where it applies, bounds the ratio by 1, "
             "the ReLU layers put more of their late growth off the top direction than the "
             f"linear control, by more than {cfg['offtop']:g} (smallest difference over the dense "
             "layers; the sign changes after the fit)", "Thm 2 explains the reduction",
             f"{share_gap:.3f} ({signs_fit} sign changes after the fit)",
             share_gap > cfg["offtop"] and signs_fit > 0, f"> {cfg['offtop']:g}, > 0",
             items="thm2-explains-jt19", bearing="contradicts",
             falsifier="no weight changing sign after the fit (the run inside Theorem 2's "
                       "hypotheses), or the ReLU layers putting at most 0.1 more of their late "
                       "growth off the top direction than the linear control",
             proxy=True, value=share_gap,
             lo=cfg["offtop"], origin="after-seeds: the threshold of the share claims (0.1, fixed "
             "before the first run), applied to the difference, with the step cap lowered from "
             "10 to 2", vtol=0.1)  # the difference of two shares (see above)
ledger.report()
