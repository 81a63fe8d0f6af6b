"""The optimal constant solution (OCS) and the measurements of Kang et al. (ICLR 2024).

Kang, Setlur, Tomlin & Levine, *Deep neural networks tend to extrapolate predictably*, define the
OCS of a loss ``L`` on training labels ``y_1..y_N`` as the input-independent prediction that
minimises the average training loss (Sec. 3.1),

    f*_constant = argmin_{f in R^m} (1/N) sum_i L(f, y_i),

and measure how far a network's predictions on an evaluation set are from it (Sec. 3.2) against
an *OOD score* of that set (App. B.3). This module holds, each defined once:

- the three losses of the paper, per example (:func:`per_example_loss`): cross-entropy on
  logits, squared error ``||f - y||^2`` and the Gaussian NLL ``log s^2 + (y - mu)^2 / s^2``
  (the paper's form, twice the usual NLL minus a constant: same minimisers);
- their OCS in closed form (:func:`ocs_cross_entropy`, :func:`ocs_mse`,
  :func:`ocs_gaussian_nll`, and :func:`ocs_reward` for the reward-prediction task of Sec. 5),
  and a numerical minimiser over constants (:func:`minimise_constant`) to check them;
- the paper's distance to the OCS (:func:`distance_to_ocs`) and OOD score (:func:`ood_score`);
- the quantities of the mechanism of Sec. 4.1 (:func:`norm_ratio`, :func:`top_subspace`,
  :func:`projection_ratio`);
- a small trainer shared by the chapters of the part (:func:`train_model`).

Output conventions: a cross-entropy model outputs ``K`` logits; an MSE model ``m`` values; a
Gaussian-NLL model outputs two columns ``(mu, log sigma^2)`` (the official code's
parameterisation; the paper writes ``[mu, sigma]``, the distribution is the same).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

Loss = Literal["ce", "mse", "gaussian_nll"]
LOSSES: tuple[str, ...] = ("ce", "mse", "gaussian_nll")


def _check_loss(loss: str) -> None:
    if loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; use one of {', '.join(map(repr, LOSSES))}")


# --- losses --------------------------------------------------------------------------------


def gaussian_nll(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Per-example Gaussian NLL in the paper's form (App. B.4), ``log s^2 + (y - mu)^2 / s^2``,
    for ``outputs = (mu, log s^2)`` of shape ``(n, 2)`` and targets ``(n,)``."""
    if outputs.dim() != 2 or outputs.shape[1] != 2:
        raise ValueError(f"Gaussian-NLL outputs must be (n, 2) = (mean, log variance), got {tuple(outputs.shape)}")
    mu, log_var = outputs[:, 0], outputs[:, 1]
    return log_var + (targets.reshape(mu.shape) - mu) ** 2 * torch.exp(-log_var)


def per_example_loss(outputs: torch.Tensor, targets: torch.Tensor, loss: Loss) -> torch.Tensor:
    """The paper's loss of each example, shape ``(n,)``.

    - ``'ce'``: ``-log softmax(f)_y`` with integer class targets;
    - ``'mse'``: ``||f - y||^2`` summed over outputs (targets ``(n,)`` for one output or
      ``(n, m)``);
    - ``'gaussian_nll'``: :func:`gaussian_nll`.
    """
    _check_loss(loss)
    if loss == "ce":
        return F.cross_entropy(outputs, targets, reduction="none")
    if loss == "mse":
        diff = outputs.reshape(len(outputs), -1) - targets.reshape(len(targets), -1).to(outputs.dtype)
        return diff.pow(2).sum(1)
    return gaussian_nll(outputs, targets)


def loss_fn(loss: Loss) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """``f(outputs, targets) -> scalar``: the mean of :func:`per_example_loss` (for training)."""
    _check_loss(loss)
    return lambda out, y: per_example_loss(out, y, loss).mean()


# --- closed forms --------------------------------------------------------------------------


def ocs_cross_entropy(labels: torch.Tensor, n_classes: int) -> torch.Tensor:
    """The cross-entropy OCS as a distribution: the training label marginal
    ``p_k = #{i : y_i = k} / N`` (float64, shape ``(n_classes,)``).

    Every logit vector ``f`` with ``softmax(f) = p`` is an OCS (``f = log p + c``); if a class
    never occurs the infimum is approached as its logit goes to ``-inf``, not attained.
    """
    labels = torch.as_tensor(labels).reshape(-1)
    if labels.numel() == 0:
        raise ValueError("need at least one label")
    if labels.min() < 0 or labels.max() >= n_classes:
        raise ValueError(f"labels must lie in 0..{n_classes - 1}")
    counts = torch.bincount(labels.long(), minlength=n_classes).to(torch.float64)
    return counts / counts.sum()


def ocs_mse(targets: torch.Tensor) -> torch.Tensor:
    """The squared-error OCS: the mean target (per output for ``(n, m)`` targets), float64."""
    targets = torch.as_tensor(targets, dtype=torch.float64)
    if targets.shape[0] == 0:
        raise ValueError("need at least one target")
    return targets.mean(0)


def ocs_gaussian_nll(targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The Gaussian-NLL OCS ``(mu*, sigma*)``: the sample mean and the **biased** (1/N) standard
    deviation of the training targets, the maximum-likelihood Gaussian. (The paper writes
    ``sigma* =`` for what is the variance ``(1/N) sum (y_i - mu*)^2``: a typo.)"""
    targets = torch.as_tensor(targets, dtype=torch.float64).reshape(-1)
    if targets.numel() == 0:
        raise ValueError("need at least one target")
    mu = targets.mean()
    return mu, ((targets - mu) ** 2).mean().sqrt()


def reward_vectors(labels: torch.Tensor, n_classes: int, correct: float = 1.0,
                   wrong: float = -4.0, abstain: float = 0.0) -> torch.Tensor:
    """The reward of every action for each example (Sec. 3.2 and 5): ``correct`` for the true
    class, ``wrong`` for the other classes and ``abstain`` for the extra last action; shape
    ``(n, n_classes + 1)``, float32."""
    labels = torch.as_tensor(labels).long().reshape(-1)
    r = torch.full((len(labels), n_classes + 1), float(wrong))
    r[torch.arange(len(labels)), labels] = float(correct)
    r[:, -1] = float(abstain)
    return r


def ocs_reward(labels: torch.Tensor, n_classes: int, correct: float = 1.0, wrong: float = -4.0,
               abstain: float = 0.0) -> torch.Tensor:
    """The MSE OCS of the reward-prediction task: the mean reward of each action,
    ``(correct - wrong) p_k + wrong`` per class and ``abstain`` for abstaining (float64)."""
    p = ocs_cross_entropy(labels, n_classes)
    return torch.cat([(correct - wrong) * p + wrong, torch.tensor([float(abstain)], dtype=torch.float64)])


def minimise_constant(targets: torch.Tensor, loss: Loss, n_outputs: int, steps: int = 200,
                      init: torch.Tensor | None = None) -> torch.Tensor:
    """The constant prediction ``f`` (shape ``(n_outputs,)``) minimising the average loss
    ``(1/N) sum_i L(f, y_i)``, found numerically (L-BFGS in float64, strong-Wolfe line search).
    Used to check the closed forms; for ``'gaussian_nll'`` the result is ``(mu, log s^2)``."""
    _check_loss(loss)
    y = torch.as_tensor(targets)
    y = y.long() if loss == "ce" else y.to(torch.float64)
    f = (torch.zeros(n_outputs, dtype=torch.float64) if init is None
         else torch.as_tensor(init, dtype=torch.float64).clone()).requires_grad_(True)
    opt = torch.optim.LBFGS([f], lr=1.0, max_iter=steps, tolerance_grad=1e-12,
                            tolerance_change=1e-15, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        value = per_example_loss(f.expand(len(y), n_outputs), y, loss).mean()
        value.backward()
        return value

    opt.step(closure)
    return f.detach()


# --- distance to the OCS -------------------------------------------------------------------


def kl_categorical(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """``KL(p || q) = sum_k p_k log(p_k / q_k)`` over the last axis (``0 log 0 = 0``)."""
    p, q = torch.broadcast_tensors(p, q)
    terms = torch.where(p > 0, p * (torch.log(p) - torch.log(q)), torch.zeros_like(p))
    return terms.sum(-1)


def kl_gaussian(mu: torch.Tensor, sigma: torch.Tensor, mu_star: torch.Tensor | float,
                sigma_star: torch.Tensor | float) -> torch.Tensor:
    """``KL(N(mu, sigma^2) || N(mu*, sigma*^2)) = log(sigma*/sigma) + (sigma^2 + (mu - mu*)^2)
    / (2 sigma*^2) - 1/2`` elementwise."""
    mu_star = torch.as_tensor(mu_star, dtype=mu.dtype)
    sigma_star = torch.as_tensor(sigma_star, dtype=mu.dtype)
    return (torch.log(sigma_star / sigma) + (sigma**2 + (mu - mu_star) ** 2) / (2 * sigma_star**2) - 0.5)


def distance_to_ocs(outputs: torch.Tensor, ocs: torch.Tensor | tuple[torch.Tensor, torch.Tensor],
                    loss: Loss, mse_reduction: Literal["sum", "mean"] = "sum") -> torch.Tensor:
    """Distance of each prediction to the OCS, shape ``(n,)`` (Sec. 3.2 of the paper); the
    paper reports the average over the evaluation set.

    - ``'ce'``: ``outputs`` are logits, ``ocs`` the label marginal ``p_hat``; the distance is
      ``KL(softmax(f(x)) || p_hat)``, the KL from the predicted distribution to the OCS
      distribution, as the paper writes ``D_KL(P_theta(y|x) || P_{f*}(y))``.
    - ``'gaussian_nll'``: ``outputs = (mu, log sigma^2)``, ``ocs = (mu*, sigma*)``; the distance
      is ``KL(N(mu, sigma^2) || N(mu*, sigma*^2))`` (:func:`kl_gaussian`).
    - ``'mse'``: ``||f(x) - f*||^2``, summed over outputs as in the paper
      (``mse_reduction='sum'``).

    Where the official code (github.com/katiekang1998/cautious_extrapolation) differs, this
    function follows the paper and offers the code's variant as an option or says so: for MSE
    the code averages over the outputs instead of summing (``mse_reduction='mean'``, i.e.
    divided by the number of outputs); for the Gaussian NLL the code takes ``mu*, sigma*`` from
    the labels of the *validation* split, while the paper's OCS (and this book) uses the training
    labels -- pass whichever ``ocs`` you want. For cross-entropy both agree.
    """
    _check_loss(loss)
    out = outputs.to(torch.float64)
    if loss == "ce":
        p_hat = torch.as_tensor(ocs, dtype=torch.float64)
        if p_hat.shape != out.shape[-1:]:
            raise ValueError(f"the OCS has {tuple(p_hat.shape)} classes, the outputs {out.shape[-1]}")
        log_p = torch.log_softmax(out, -1)
        p = log_p.exp()
        return (p * (log_p - torch.log(p_hat))).sum(-1)
    if loss == "gaussian_nll":
        if not isinstance(ocs, tuple | list) or len(ocs) != 2:
            raise ValueError("the Gaussian-NLL OCS is a pair (mu*, sigma*)")
        if out.shape[-1] != 2:
            raise ValueError("Gaussian-NLL outputs must have two columns (mean, log variance)")
        mu_star, sigma_star = ocs
        return kl_gaussian(out[..., 0], torch.exp(0.5 * out[..., 1]), mu_star, sigma_star)
    f_star = torch.as_tensor(ocs, dtype=torch.float64)
    diff = out.reshape(*out.shape[:-1], -1) if out.dim() > 1 else out.unsqueeze(-1)
    sq = (diff - f_star).pow(2)
    if mse_reduction == "sum":
        return sq.sum(-1)
    if mse_reduction == "mean":
        return sq.mean(-1)
    raise ValueError(f"mse_reduction must be 'sum' or 'mean', got {mse_reduction!r}")


# --- OOD score -----------------------------------------------------------------------------


def _fit_logistic(X: torch.Tensor, y: torch.Tensor, alpha: float, steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """L2-regularised logistic regression, ``mean log(1+exp(-s (Xw+b))) + alpha/2 ||w||^2``,
    solved to optimality by L-BFGS (float64). ``y`` in {0, 1}."""
    w = torch.zeros(X.shape[1], dtype=torch.float64, requires_grad=True)
    b = torch.zeros((), dtype=torch.float64, requires_grad=True)
    s = 2 * y.to(torch.float64) - 1
    opt = torch.optim.LBFGS([w, b], lr=1.0, max_iter=steps, tolerance_grad=1e-10,
                            tolerance_change=1e-14, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        value = F.softplus(-s * (X @ w + b)).mean() + 0.5 * alpha * w.pow(2).sum()
        value.backward()
        return value

    opt.step(closure)
    return w.detach(), b.detach()


def ood_score(features_eval: torch.Tensor, features_train: torch.Tensor, repeats: int = 5,
              alpha: float = 10.0, holdout: float = 0.1, aggregate: Literal["mean", "geometric"] = "mean",
              generator: torch.Generator | None = None, steps: int = 100) -> float:
    """The OOD score of an evaluation set relative to the training distribution (Sec. 3.2 and
    App. B.3): train a low-capacity linear classifier to tell features of the evaluation set from
    features of (held-out) training data, on a balanced 50/50 sample, and report the average
    predicted probability that held-out *evaluation* points come from the evaluation
    distribution. 0.5: indistinguishable; 1: perfectly separable.

    Procedure, per repeat: both sets are subsampled to ``n = min(len)`` points; a fraction
    ``holdout`` of each is kept aside; the features are standardised with the statistics of the
    classifier's training points; an L2-regularised logistic regression (penalty
    ``alpha/2 ||w||^2`` on the mean log-loss) is fit to optimality; the score is the predicted
    probability of "evaluation" on the held-out evaluation points. ``repeats`` random splits
    are averaged.

    ``aggregate='mean'`` (default) is the paper's "average predicted likelihood". The official
    code instead takes the *geometric* mean (``exp`` of the mean log-probability over points and
    repeats, ``aggregate='geometric'``), uses 30 repeats, and fits scikit-learn's
    ``SGDClassifier(loss='log', alpha=10, max_iter=20)``, a stochastic approximation of the
    same regularised problem that this function solves exactly. The featurizer (the paper's
    ImageNet ResNet-18) is the caller's business: pass features.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    if not 0 < holdout < 1:
        raise ValueError(f"holdout must be in (0, 1), got {holdout}")
    if aggregate not in ("mean", "geometric"):
        raise ValueError(f"aggregate must be 'mean' or 'geometric', got {aggregate!r}")
    A = torch.as_tensor(features_eval, dtype=torch.float64).flatten(1).cpu()
    B = torch.as_tensor(features_train, dtype=torch.float64).flatten(1).cpu()
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"feature dimensions differ: {A.shape[1]} vs {B.shape[1]}")
    n = min(len(A), len(B))
    n_test = max(1, int(round(holdout * n)))
    if n - n_test < 2:
        raise ValueError(f"need more points for an OOD score (have {n} per set)")
    gen = generator if generator is not None else torch.Generator().manual_seed(0)
    logs, probs = [], []
    for _ in range(repeats):
        ia = torch.randperm(len(A), generator=gen)[:n]
        ib = torch.randperm(len(B), generator=gen)[:n]
        a_fit, a_test = A[ia[n_test:]], A[ia[:n_test]]
        b_fit = B[ib[n_test:]]
        X = torch.cat([a_fit, b_fit])
        y = torch.cat([torch.ones(len(a_fit)), torch.zeros(len(b_fit))])
        mean, std = X.mean(0), X.std(0).clamp_min(1e-12)
        w, b = _fit_logistic((X - mean) / std, y, alpha, steps)
        logit = ((a_test - mean) / std) @ w + b
        logs.append(F.logsigmoid(logit))
        probs.append(torch.sigmoid(logit))
    if aggregate == "geometric":
        return float(torch.cat(logs).mean().exp())
    return float(torch.cat(probs).mean())


class RandomReLUFeatures:
    """A fixed random featurizer ``x -> relu(G x / sqrt(d))`` (``G`` Gaussian, seeded): a
    stand-in for a pretrained network when none is available offline. Inputs are flattened."""

    def __init__(self, d_in: int, n_features: int = 512, seed: int = 0) -> None:
        g = torch.Generator().manual_seed(seed)
        self.G = torch.randn(n_features, d_in, generator=g, dtype=torch.float64) / math.sqrt(d_in)

    def __call__(self, X: torch.Tensor) -> torch.Tensor:
        return torch.relu(X.flatten(1).to(torch.float64) @ self.G.T)


# --- mechanism (Sec. 4.1) ------------------------------------------------------------------


def norm_ratio(features_ood: torch.Tensor, features_train: torch.Tensor,
               squared: bool = True) -> float:
    """``E_OOD ||h(x)||^2 / E_train ||h(x)||^2`` (the paper's ratio, Sec. 4.1, Fig. 4 col. 1),
    with ``h`` one layer's features ``(n, ...)``. ``squared=False`` gives the official code's
    ratio of mean *unsquared* norms."""
    a = features_ood.flatten(1).to(torch.float64).norm(dim=1)
    b = features_train.flatten(1).to(torch.float64).norm(dim=1)
    if squared:
        a, b = a**2, b**2
    return float(a.mean() / b.mean())


def top_subspace(W: torch.Tensor, energy: float = 0.95) -> torch.Tensor:
    """Top right singular vectors of ``W`` (``(out, in)``) as the columns of ``V_top``
    ``(in, k)``, with ``k`` the smallest index such that ``sqrt(sum_{i<=k} s_i^2 / sum_i s_i^2)
    > energy`` (the official code's rule with ``energy=0.95``; the paper does not say how many
    vectors it keeps)."""
    if not 0 < energy <= 1:
        raise ValueError(f"energy must be in (0, 1], got {energy}")
    _, s, Vh = torch.linalg.svd(W.detach().to(torch.float64), full_matrices=False)
    frac = torch.sqrt(torch.cumsum(s**2, 0) / (s**2).sum())
    k = int((frac < energy - 1e-12).sum()) + 1
    return Vh[: min(k, len(s))].T


def projection_ratio(features: torch.Tensor, V_top: torch.Tensor) -> torch.Tensor:
    """``||phi^T V V^T||^2 / ||phi||^2`` per example (Sec. 4.1, Fig. 4 col. 2): the fraction of
    each feature vector's squared norm inside the span of the columns of ``V_top``. Zero
    vectors give NaN."""
    phi = features.flatten(1).to(torch.float64)
    proj = phi @ V_top.to(torch.float64)
    return proj.pow(2).sum(1) / phi.pow(2).sum(1)


# --- a small trainer -----------------------------------------------------------------------


@dataclass
class TrainResult:
    """What :func:`train_model` returns: the final training loss and a per-epoch loss curve."""

    final_loss: float
    losses: torch.Tensor


def train_model(model: nn.Module, X: torch.Tensor, y: torch.Tensor, loss: Loss, *, epochs: int = 30,
                batch_size: int = 64, lr: float = 1e-3, weight_decay: float = 0.0,
                warmup_mse_epochs: int = 0, generator: torch.Generator | None = None) -> TrainResult:
    """Train ``model`` with Adam on mini-batches for one of the paper's losses, then put it in
    eval mode (so BatchNorm uses its running statistics). ``warmup_mse_epochs`` trains a
    Gaussian-NLL model's mean with the squared error for the first epochs (the official code
    does this on UTKFace), which avoids the variance blowing up before the mean fits.
    Raises ``RuntimeError`` on a non-finite loss naming the epoch."""
    _check_loss(loss)
    if epochs < 1 or batch_size < 1:
        raise ValueError("epochs and batch_size must be >= 1")
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    gen = generator if generator is not None else torch.Generator().manual_seed(0)
    n = len(X)
    losses = torch.zeros(epochs, dtype=torch.float64)
    model.train()
    for epoch in range(epochs):
        perm = torch.randperm(n, generator=gen).to(X.device)
        total = torch.zeros((), dtype=torch.float64, device=X.device)
        for start in range(0, n, batch_size):
            idx = perm[start:start + batch_size]
            out = model(X[idx])
            if loss == "gaussian_nll" and epoch < warmup_mse_epochs:
                value = (out[:, 0] - y[idx]).pow(2).mean()
            else:
                value = per_example_loss(out, y[idx], loss).mean()
            opt.zero_grad(set_to_none=True)
            value.backward()
            opt.step()
            total += value.detach() * len(idx)
        losses[epoch] = total.cpu() / n
    model.eval()
    final = float(losses[-1])
    if not math.isfinite(final):
        bad = int((~torch.isfinite(losses)).nonzero()[0])
        raise RuntimeError(f"training diverged at epoch {bad} (lr {lr:g}); lower the learning rate")
    return TrainResult(final, losses)


@torch.no_grad()
def predict(model: nn.Module, X: torch.Tensor, batch_size: int = 2048) -> torch.Tensor:
    """Outputs of ``model`` in eval mode on ``X``, in batches (no gradients)."""
    was_training = model.training
    model.eval()
    out = torch.cat([model(X[i:i + batch_size]) for i in range(0, len(X), batch_size)])
    model.train(was_training)
    return out


def spearman(x: Sequence[float] | torch.Tensor, y: Sequence[float] | torch.Tensor) -> float:
    """Spearman rank correlation of two sequences (average ranks for ties)."""
    from scipy.stats import spearmanr

    return float(spearmanr(torch.as_tensor(x).tolist(), torch.as_tensor(y).tolist()).statistic)


def train_classifier(model: nn.Module, split, loss: Loss, targets: torch.Tensor | None = None,
                     **kwargs) -> TrainResult:
    """:func:`train_model` on ``split.X_train`` with ``split.y_train`` (or ``targets``, e.g.
    reward vectors or a regression target derived from the labels); keyword arguments as
    :func:`train_model`."""
    y = split.y_train if targets is None else targets
    return train_model(model, split.X_train, y, loss, **kwargs)
