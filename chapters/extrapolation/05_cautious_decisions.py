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
# # Cautious decisions: selective classification by reward prediction
#
# If the OCS of a loss is a *cautious* action, reversion to the OCS makes a model act
# cautiously on unfamiliar inputs, with no OOD data and no uncertainty estimate. Section 5
# of {cite:t}`kang2024extrapolate` shows this on selective classification. The agent either
# names a class (reward $+1$ if right, $-4$ if wrong) or abstains (reward $0$). We compare
# three agents under growing distribution shift, as in the paper's Figs. 5 to 7:
# - a network that predicts the reward of every action;
# - a standard classifier;
# - an oracle calibrated on the shifted data itself.
#
# :::{admonition} What to take away
# - The two trained agents differ only in their loss, hence in their OCS
#   ({prf:ref}`definition of the OCS <ocs-def-ocs>`): the reward model's OCS is "abstain", the classifier's is the label
#   marginal, a class.
# - On 8x8 digits under blur, contrast reduction and two kinds of noise, the reward model abstains
#   more and more as the shift grows and, at strong shift, earns much more than the classifier,
#   which never abstains and keeps paying $-4$ for its mistakes. On clean data the two earn the
#   same. At three times the epochs (committed budget sweep) the abstentions hold on seed 1 but
#   not on seed 0, where the reward model abstains much less far OOD: the two abstention rows
#   therefore qualify Fig. 6 rather than support it.
# - The price can be over-caution: at the mildest shift the reward model earned less than the
#   classifier on the run shown (reported below, not a claim). The oracle, which sees labelled
#   shifted data, is an upper reference.
# - This safety net rests on reversion to the OCS. For shifts under which the reward models do
#   not revert ({doc}`06_when_reversion_fails`: adversarial inputs, unclipped noise) it cannot be
#   relied on; this page does not measure the agents' decisions under those shifts.
# :::

# %% tags=["parameters"]
profile = "ci"  # "ci": 8x8 digits on the CPU; "full": CIFAR-10 and CIFAR-10-C with ResNet-20 (local files; GPU)
seed = 0
device = "auto"
dataset = None          # None: the profile's ("digits" in ci, "cifar10" in full); or "mnist"
data_root = None        # folder with MNIST / CIFAR-10 / CIFAR-10-C (default: $IMPLICIT_BIAS_DATA)
allow_fallback = False  # profile "full" without its data: stop (False) or use the digits and say so (True)

# %%
PROFILES = {
    "ci": dict(dataset="digits", members=3, epochs=100, batch_size=64, lr=1e-3,
               kinds=("blur", "contrast", "clipped_noise", "blend_noise"), severities=(0, 1, 2, 3, 4, 5)),
    # the paper's Figs. 6-7: CIFAR-10-C's five corruptions of the official code, ResNet-20, 5 seeds
    "full": dict(dataset="cifar10", members=5, epochs=30, batch_size=128, lr=1e-3,
                 kinds=("impulse_noise", "shot_noise", "speckle_noise", "defocus_blur", "motion_blur"),
                 severities=(0, 1, 2, 3, 4, 5)),
}
MNIST_KINDS = ("rotation", "blur", "contrast", "clipped_noise", "impulse_noise")  # with dataset="mnist"

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch
from myst_nb import glue

from implicit_bias import data, models, plotting
from implicit_bias.extrapolation import ocs, tasks
from implicit_bias.extrapolation import selective as S
from implicit_bias.chapter import start_chapter
from implicit_bias.claims import Ledger
from implicit_bias.book import budget_table

P, dev = start_chapter(PROFILES, profile=profile, seed=seed, device=device)
ledger = Ledger("extrapolation/05_cautious_decisions")
if dataset is not None:
    if dataset not in tasks.DATASETS:
        raise ValueError(f"dataset must be None or one of {', '.join(tasks.DATASETS)}; got {dataset!r}")
    P = {**P, "dataset": dataset, **({"kinds": MNIST_KINDS} if dataset == "mnist" else {})}

# %% [markdown]
# ## The task and its OCS
#
# The actions are the $K$ classes and *abstain*. A **reward-prediction** agent has a network
# $f_\theta:\mathbb R^d\to\mathbb R^{K+1}$ that predicts the reward of each action. It is
# trained with squared error and takes $\pi(x)=\arg\max_af_\theta(x)_a$. The paper writes the
# loss on a logged action $(f_\theta(x_i)_{a_i}-r_i)^2$. Like the official code, we regress
# the whole reward vector $r(x,\cdot)=5\,\mathrm{onehot}(y)-4$ with a 0 appended for
# abstaining. Its OCS is the mean reward of each action ({prf:ref}`closed forms of the OCS <ocs-prop-closed-forms>`, item 4):
# $$f^*_k=5\hat p_k-4\ \ (k\le K),\qquad f^*_{\rm abstain}=0 .$$
# For balanced classes $f^*_k=-3.5$, so **the OCS policy abstains**. It abstains whenever
# $\max_k\hat p_k<0.8$. A **standard classifier** is trained with cross-entropy on $K+1$
# logits, abstain never being a label. Its OCS is the label marginal, whose argmax is a
# class, so reversion never makes it abstain. The **oracle** is a $K$-way classifier whose
# temperature is fitted on each *shifted evaluation set with its labels*. It abstains when
# the top probability is at most $0.8$, the Bayes threshold: predicting is worth
# $p\cdot1+(1-p)(-4)>0$ iff $p>0.8$. The oracle sees what no deployed agent sees, so it is an
# upper reference, not a competitor. (The official code fits one temperature per class; we
# fit one scalar temperature.)

# %%
split, data_used = tasks.load_images(P["dataset"], data_root, seed=seed, allow_fallback=allow_fallback)
ledger.uses_data(data_used)
size, K = split.X_train.shape[-1], 10
if size == 32:
    tasks.check_cifar10c(P["kinds"], root=data_root)  # stop before training if a corruption is missing
    make = lambda d_out: ocs.ResNet20(d_out)
elif size == 28:
    make = lambda d_out: ocs.MNISTNet(d_out)
else:
    if P["dataset"] != "digits":  # the fallback to the digits: use the shifts of profile ci
        P = {**P, "kinds": PROFILES["ci"]["kinds"]}
    make = lambda d_out: models.MLP(64, d_out, width=128, depth=3)
Xtr, ytr, Xte, yte = (t.to(dev) for t in split)


def shifted_set(kind: str, severity: int, generator: torch.Generator) -> torch.Tensor:
    """The test set under a shift: CIFAR-10-C's own corrupted images on CIFAR-10, else the shifts of
    `implicit_bias.extrapolation.tasks` (blur scaled to the image size)."""
    if severity == 0:
        return Xte
    if size == 32:
        return data.load_cifar10c(kind, severity, root=data_root)[0].to(dev)
    return tasks.shift(Xte, kind, severity, generator=generator)

f_star = ocs.ocs_reward(ytr.cpu(), K)
threshold = S.bayes_threshold()
R_tr = ocs.reward_vectors(ytr.cpu(), K).to(dev)
print("reward OCS:", np.round(f_star.numpy(), 3), " OCS policy:", "abstain" if int(f_star.argmax()) == K else f"class {int(f_star.argmax())}")
print(f"Bayes threshold on the top probability: {threshold:.2f}")

# %% [markdown]
# Each member of the ensemble trains the three networks with its own seed: an MLP with two
# hidden layers of 128 units on 8x8 digits, or the official code's ResNet-20 on CIFAR-10 in
# profile `full` (its MNIST network with `dataset="mnist"`; the `full` path has not been run for
# this page: no GPU and no data here). We use Adam
# and the same number of epochs for all three. The networks come from `implicit_bias.extrapolation.ocs.train_runs`,
# as in the previous chapters: member $m$ of every agent is seeded alike, so the reward model and
# the standard classifier of a member start from the same initial weights and see the same
# mini-batches, and differ only in their loss.

# %%
trained = {name: ocs.train_runs(lambda d_out=d_out: make(d_out), Xtr, target, loss, runs=P["members"], seed=seed,
                                epochs=P["epochs"], batch_size=P["batch_size"], lr=P["lr"])
           for name, d_out, loss, target in (("reward", K + 1, "mse", R_tr), ("standard", K + 1, "ce", ytr),
                                             ("oracle", K, "ce", ytr))}
members = [{name: nets[m] for name, nets in trained.items()} for m in range(P["members"])]

kinds, sevs = tuple(P["kinds"]), tuple(P["severities"])
methods = ("reward", "standard", "oracle")
abstain = np.zeros((len(methods), len(kinds), len(sevs), len(members)))
reward = np.zeros_like(abstain)
for ki, kind in enumerate(kinds):
    for si, s in enumerate(sevs):
        Xs = shifted_set(kind, s, torch.Generator(device=Xte.device).manual_seed(10_000 * seed + 100 * ki + si))
        for mi, nets in enumerate(members):
            acts = {"reward": S.reward_prediction_actions(ocs.predict(nets["reward"], Xs)),
                    "standard": S.classifier_actions(ocs.predict(nets["standard"], Xs)),
                    "oracle": S.oracle_actions(ocs.predict(nets["oracle"], Xs).cpu(), yte.cpu(), threshold)[0]}
            for qi, name in enumerate(methods):
                res = S.summary(acts[name].cpu(), yte.cpu(), K)
                abstain[qi, ki, si, mi], reward[qi, ki, si, mi] = res["abstain"], res["reward"]

print("mean over members; rows: severity; columns: reward prediction, standard, oracle")
for ki, kind in enumerate(kinds):
    print(f"{kind}:")
    for si, s in enumerate(sevs):
        print(f"  sev {s}: abstain {np.round(abstain[:, ki, si].mean(-1), 2)}  reward {np.round(reward[:, ki, si].mean(-1), 2)}")

# %%
fig, axes = plotting.subplots(len(kinds), 2, height=4.6, sharex=True)
axes = np.asarray(axes).reshape(2, len(kinds))
labels = {"reward": "reward prediction", "standard": "standard classification", "oracle": "oracle"}
for ki, kind in enumerate(kinds):
    for qi, name in enumerate(methods):
        for row, arr in enumerate((abstain, reward)):
            axes[row, ki].errorbar(sevs, arr[qi, ki].mean(-1), yerr=arr[qi, ki].std(-1), marker="o", ms=3,
                                   color=plotting.color(qi), label=labels[name] if ki == 0 and row == 0 else None)
    axes[0, ki].set(title=kind.replace("_", " "), ylim=(-0.05, 1.05))
    axes[1, ki].set(xlabel="severity", ylim=(-4.1, 1.1))
axes[0, 0].set_ylabel("abstain ratio")
axes[1, 0].set_ylabel("mean reward")
fig.legend(loc="outside lower center", ncols=3)
glue("fig-cd-compare", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} fig-cd-compare
# :name: fig-ocs-cd-compare
# Abstain ratio (top) and mean reward (bottom) against shift severity (0 = clean test set),
# for the three agents. Points are the mean over the ensemble members, bars their standard
# deviation. Reward ranges from $-4$ (always wrong) to $+1$; abstaining always gives 0. The
# paper's Figs. 6 and 7 show the same comparison on CIFAR-10-C, OfficeHome and BREEDS.
# ```
#
# What we check, with margins fixed from the reading guide's pilot before this run:
# - the standard classifier essentially never abstains (at most 1% at every level);
# - the reward-prediction agent abstains more as the shift grows (Spearman correlation of the
#   abstain ratio with the severity at least 0.8, for every shift and every member) and abstains
#   on most inputs at the two top levels (at least 0.5, mean over members, worst shift);
# - on clean data the two agents earn the same mean reward (within 0.05, averaged over shifts and
#   members);
# - at the two top levels of blur, contrast and clipped noise, reward prediction earns at
#   least 0.5 more than standard classification (mean over members, worst shift and level;
#   blend noise is left out because the reading guide's pilot found almost no gap there);
# - the oracle's mean reward is never below reward prediction's by more than 0.05, at any shift
#   and level.
#
# The pilot found reward prediction *worse* at mild shifts, where it over-abstains, so we do
# not claim it wins at every level. Every claim is checked on seeds 0-4 ({doc}`/book/robustness`).
#
# **Negative control.** The standard classifier is the same network, from the same initial
# weights and on the same mini-batches, with another loss and so another OCS. The abstention
# statistics that hold for the reward model fail for it: its abstain ratio does not rise with the
# shift and stays near 0 (`sc-never-abstains`, a `control` row: abstain is never a training label,
# so its logit is pushed down whatever the shift). So the abstentions come from the loss's OCS, not
# from the data or the architecture. Likewise the oracle, calibrated on each labelled shifted set,
# is an upper reference by construction (`oracle-upper`, a `control` row), not a finding. That the reward OCS itself is "abstain" whenever
# $\max_k\hat p_k<0.8$ is algebra ({prf:ref}`closed forms of the OCS <ocs-prop-closed-forms>`), checked by the library's unit
# tests rather than claimed here.

# %%
def spearman_abstain(ki):
    return min(ocs.spearman(list(sevs), abstain[0, ki, :, m].tolist()) for m in range(len(members)))

sc_max = float(abstain[1].max())
top = slice(len(sevs) - 2, len(sevs))
rp_top = abstain[0, :, top].mean(-1).mean(-1)  # (kinds,) mean over top two levels and members
rho_min = min(spearman_abstain(ki) for ki in range(len(kinds)))
clean_gap = float(abs(reward[0, :, 0].mean() - reward[1, :, 0].mean()))
gap_kinds = [k for k in ("blur", "contrast", "clipped_noise") if k in kinds] or list(kinds)
gap_top = {k: float((reward[0, kinds.index(k), top] - reward[1, kinds.index(k), top]).mean(-1).min()) for k in gap_kinds}
oracle_margin = float((reward[2].mean(-1) - reward[0].mean(-1)).min())
mild_gap = float((reward[0, :, 1] - reward[1, :, 1]).mean())
glue("cd-sc-max", sc_max, display=False)
glue("cd-rp-top", float(rp_top.min()), display=False)
glue("cd-clean-rp", float(reward[0, :, 0].mean()), display=False)
glue("cd-clean-sc", float(reward[1, :, 0].mean()), display=False)
glue("cd-clean-abstain", float(abstain[0, :, 0].mean()), display=False)
glue("cd-gap-top", min(gap_top.values()), display=False)
glue("cd-mild-gap", mild_gap, display=False)
glue("cd-oracle-margin", oracle_margin, display=False)

ledger.below("sc-never-abstains", "Fig. 6", "standard classification: largest abstain ratio over shifts, levels, members",
             "almost never abstains", sc_max, 0.01, items="fig6", bearing="control", proxy=True,
             origin="prior: abstain is never a label, so its logit is pushed down by construction")
CHAPTER = "chapters/extrapolation/05_cautious_decisions"
AT_X3 = (", committed budget sweep): after longer training the reward model abstains less far OOD on one seed; "
         "not resolved at this budget, so the row qualifies Fig. 6")
ledger.above("rp-abstain-rises", "Fig. 6", "reward prediction: Spearman(severity, abstain ratio), worst shift and member. "
             "At 3x the epochs it holds on one seed of two (" + budget_table.budget_readings(CHAPTER, "rp-abstain-rises")
             + AT_X3,
             "abstains more with shift", rho_min, 0.8, items=["fig6", "sec5-design"], bearing="qualifies", proxy=True,
             origin="prior",
             falsifier="for some shift or member the reward policy's abstain ratio has a rank correlation with the severity below 0.8")
ledger.above("rp-abstain-top", "Fig. 6", "reward prediction: abstain ratio at the two top levels (worst shift). "
             "At 3x the epochs it holds on one seed of two (" + budget_table.budget_readings(CHAPTER, "rp-abstain-top")
             + AT_X3,
             "mostly abstains far OOD", float(rp_top.min()), 0.5, items="fig6", bearing="qualifies", proxy=True,
             origin="prior",
             falsifier="for some shift the reward policy abstains on less than half of the inputs at the two top severities")
ledger.below("clean-equal", "Fig. 7", "clean data: |reward(RP) - reward(SC)|", "similar on the training distribution",
             clean_gap, 0.05, items="fig7", bearing="supports", proxy=True, origin="prior",
             falsifier="on clean data the two policies' rewards differ by 0.05 or more")
ledger.above("rp-beats-sc-far", "Fig. 7", f"reward(RP) - reward(SC) at the two top levels ({', '.join(gap_kinds)}; worst)",
             "RP increasingly outperforms SC", min(gap_top.values()), 0.5, items=["fig7", "sec5-design"],
             bearing="supports", proxy=True, origin="prior",
             falsifier="for some of blur, contrast and clipped noise the reward policy beats standard classification by less than 0.5 at the two top severities")
ledger.above("oracle-upper", "Fig. 7", "reward(oracle) - reward(RP), worst shift and level", "oracle is the upper reference",
             oracle_margin, -0.05, items="fig7", bearing="control", proxy=True,
             origin="prior: the oracle is calibrated on the labelled shifted set itself")

# %% [markdown]
# On clean test data reward prediction earns {glue:text}`cd-clean-rp:.2f` and standard
# classification {glue:text}`cd-clean-sc:.2f`. Reward prediction already abstains on a
# fraction {glue:text}`cd-clean-abstain:.2f` of the clean inputs, the ones it is unsure
# about. As the inputs degrade it abstains more. At the two top levels it abstains on at
# least {glue:text}`cd-rp-top:.2f` of the inputs and earns at least
# {glue:text}`cd-gap-top:.2f` more reward than standard classification, which never abstains
# (at most {glue:text}`cd-sc-max:.3f`) and keeps paying $-4$ for its mistakes. At the
# mildest level the reward difference (reward prediction minus standard classification, mean
# over shifts and members) is {glue:text}`cd-mild-gap:+.2f`; a negative value means the reward
# model's caution costs it there, as the pilot found (this is reported, not claimed). The
# smallest margin of the oracle over reward prediction, over all shifts and levels, is
# {glue:text}`cd-oracle-margin:.2f` (0 where both abstain on every input), but the oracle needs
# labelled shifted data.
#
# ## One class under blur (the paper's Fig. 5)
#
# The mean predicted reward vector for the test images of one digit moves to the OCS
# $(-3.5,\dots,-3.5,0)$ as blur grows, and the chosen action moves to *abstain* with it.

# %%
digit = 1 if size == 32 else 6  # the paper's Fig. 5: automobiles (class 1) on CIFAR-10; a 6 on digits
sel = yte == digit
nets0 = members[0]["reward"]
show_sevs = (0, 2, 4)
fig, axes = plotting.subplots(len(show_sevs) + 1, 2, height=3.6, sharey="row")
axes = np.asarray(axes).reshape(2, len(show_sevs) + 1)
dist, abst_digit = [], []
for i, s in enumerate(show_sevs):
    Xs = tasks.shift(Xte[sel], "blur", s) if size != 32 else shifted_set(kinds[0], s, None)[sel]
    out = ocs.predict(nets0, Xs).cpu().double()
    acts = S.reward_prediction_actions(out)
    dist.append(float(((out.mean(0) - f_star) ** 2).sum()))
    abst_digit.append(float((acts == K).double().mean()))
    axes[0, i].bar(np.arange(K + 1), out.mean(0).numpy(), color=plotting.color(0))
    axes[1, i].bar(np.arange(K + 1), np.bincount(acts.numpy(), minlength=K + 1) / len(acts), color=plotting.color(1))
    axes[0, i].set_title(f"blur severity {s}")
axes[0, -1].bar(np.arange(K + 1), f_star.numpy(), color="grey")
axes[1, -1].bar([K], [1.0], color="grey")
axes[0, -1].set_title("OCS")
for ax in axes[1]:
    ax.set_xticks(np.arange(K + 1), [str(k) for k in range(K)] + ["A"], fontsize=6)
axes[0, 0].set_ylabel("mean predicted reward")
axes[1, 0].set_ylabel("fraction of actions")
glue("fig-cd-digit", fig, display=False)
plt.close(fig)
print(f"digit {digit}, member 0: ||mean f - f*||^2 = {np.round(dist, 2)}, abstain = {np.round(abst_digit, 2)} at blur severities {show_sevs}")
glue("cd-digit-d0", dist[0], display=False)
glue("cd-digit-dlast", dist[-1], display=False)
glue("cd-digit-a0", abst_digit[0], display=False)
glue("cd-digit-alast", abst_digit[-1], display=False)
ledger.below("fig5-toward-ocs", "Fig. 5", rf"digit {digit} under blur: $\lVert \operatorname{{mean}} f - f^*\rVert^2$ at severity {show_sevs[-1]} / at 0",
             "mean prediction approaches the OCS", dist[-1] / dist[0], 1.0, items="fig5", bearing="supports", proxy=True,
             origin="theory: 1 = no change",
             falsifier="the mean prediction on blurred 6s at severity 4 is not closer to the OCS than the clean one (ratio 1 or more)")
ledger.above("fig5-abstain", "Fig. 5", f"digit {digit}: abstain fraction at blur {show_sevs[-1]} minus at 0",
             "the policy shifts to abstain", abst_digit[-1] - abst_digit[0], 0.0, items="fig5", bearing="supports",
             proxy=True, origin="prior",
             falsifier="the policy does not abstain more often on blurred 6s at severity 4 than on clean ones")

# %% [markdown]
# ```{glue:figure} fig-cd-digit
# :name: fig-ocs-cd-digit
# Reward prediction on the test images of digit 6 (one member). Top: mean predicted reward
# of each action (classes 0 to 9, "A" = abstain). Bottom: how often each action is chosen.
# Right: the OCS and the OCS policy.
# ```
#
# The squared distance of the mean prediction to the OCS goes from
# {glue:text}`cd-digit-d0:.1f` on clean images to {glue:text}`cd-digit-dlast:.1f` at blur
# severity 4. The abstain fraction goes from {glue:text}`cd-digit-a0:.2f` to
# {glue:text}`cd-digit-alast:.2f`.
#
# ## What to take away
#
# The only difference between the two trained agents is the loss, and so the OCS. Reward
# regression reverts towards "abstain" and turns unfamiliar inputs into cautious decisions.
# Cross-entropy reverts towards the label marginal, a class, and keeps guessing. The price is
# over-caution under mild shift. Some shifts (adversarial inputs, unclipped noise, large rotations) give no
# reversion for the reward models ({doc}`06_when_reversion_fails`, App. A of the paper), so the
# safety net cannot be relied on there; how the agents decide under those shifts is not measured here.
#
# ## Claims

# %% tags=["nbval-check-output"]
ledger.report()
