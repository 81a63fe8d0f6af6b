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
- a small trainer shared by the chapters of the part (:func:`train_model`), and
  :func:`train_runs` for several independently seeded networks of one configuration.

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


def closer_to_ocs_than_uniform(probs: torch.Tensor, p_hat: torch.Tensor) -> torch.Tensor:
    """``mean_x [KL(p(x) || u) - KL(p(x) || p_hat)]`` for predicted distributions ``probs``
    ``(n, K)``, ``u`` uniform: positive when the predictions are on average closer (in KL) to the
    label marginal ``p_hat`` (the cross-entropy OCS) than to the uniform distribution, negative when
    closer to uniform. It separates reversion to the OCS from a mere loss of confidence when
    ``p_hat`` is far from uniform. The statistic is linear in the mean prediction ``pbar``:
    it equals ``sum_k pbar_k log(K p_hat_k)``; for ``probs = p_hat`` it is ``KL(p_hat || u) >= 0``,
    for uniform predictions ``-KL(u || p_hat) <= 0``."""
    probs = torch.as_tensor(probs, dtype=torch.float64)
    p_hat = torch.as_tensor(p_hat, dtype=torch.float64)
    u = torch.full_like(p_hat, 1.0 / len(p_hat))
    return (kl_categorical(probs, u) - kl_categorical(probs, p_hat)).mean()


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
    >= energy`` (up to round-off; the official code's rule with ``energy=0.95``; the paper does not say how many
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


def linear_parts(net: nn.Module, X: torch.Tensor) -> list[torch.Tensor]:
    """The input, then ``W_i phi_i(x)`` for every weight layer ``i`` in order (each weight layer's
    output *without* its bias; the last is the output minus the output bias): the quantities whose
    norms the paper's Fig. 4 (column 1) compares. Works for :class:`NormCNN` (and
    :func:`MNISTNet`), :class:`ResNet20` (the layers of the paper's Fig. 4, row 2, via
    :meth:`ResNet20.stages`) and ``implicit_bias.models.MLP``."""
    if isinstance(net, NormCNN):
        return [X, *net.linear_parts(X)]
    if isinstance(net, ResNet20):
        return [X, *net.stages(X)]
    layers = getattr(net, "layers", None)
    if layers is None or not all(isinstance(l, nn.Linear) for l in layers):
        raise TypeError(f"linear_parts supports NormCNN, ResNet20 and MLPs, not {type(net).__name__}")
    out, h = [X], X.flatten(1)
    for i, layer in enumerate(layers):
        z = layer(h)
        out.append(z if layer.bias is None else z - layer.bias)
        if i < len(layers) - 1:
            h = net.act(z)
    return out


def norm_ratios(net: nn.Module, X_ood: torch.Tensor, X_id: torch.Tensor, batch_size: int = 2048) -> list[float]:
    """:func:`norm_ratio` of the input and of every weight layer (:func:`linear_parts`):
    ``E_OOD ||W_i phi_i||^2 / E_ID ||W_i phi_i||^2``, input first, output last."""
    with torch.no_grad():
        def sq_norms(X: torch.Tensor) -> torch.Tensor:
            chunks = [torch.stack([p.flatten(1).double().pow(2).sum(1) for p in linear_parts(net, X[i:i + batch_size])])
                      for i in range(0, len(X), batch_size)]
            return torch.cat(chunks, 1).mean(1)
        return (sq_norms(X_ood) / sq_norms(X_id)).tolist()


# --- a small trainer -----------------------------------------------------------------------


@dataclass
class TrainResult:
    """What :func:`train_model` returns: the final training loss, a per-epoch loss curve and, with
    a validation set, the per-epoch validation loss and the epoch whose weights were kept."""

    final_loss: float
    losses: torch.Tensor
    val_losses: torch.Tensor | None = None
    kept_epoch: int | None = None


def _batch_loss(out: torch.Tensor, y: torch.Tensor, loss: Loss, mse_warmup: bool) -> torch.Tensor:
    """Mean loss over the batch axis (the last axis before the outputs): a scalar for outputs
    ``(B, d)``, one value per network for stacked outputs ``(R, B, d)`` with targets ``(R, B, ...)``.
    During a Gaussian model's warm-up, the squared error of its mean."""
    lead = out.shape[:-1]
    if loss == "gaussian_nll" and mse_warmup:
        return (out[..., 0] - y.to(out.dtype).reshape(lead)).pow(2).mean(-1)
    flat = per_example_loss(out.reshape(-1, out.shape[-1]), y.reshape(-1, *y.shape[len(lead):]), loss)
    return flat.reshape(lead).mean(-1)


def _check_training(epochs: int, batch_size: int, val: tuple | None, keep: str) -> None:
    if epochs < 1 or batch_size < 1:
        raise ValueError("epochs and batch_size must be >= 1")
    if keep not in ("last", "best_val"):
        raise ValueError(f"keep must be 'last' or 'best_val', got {keep!r}")
    if keep == "best_val" and val is None:
        raise ValueError("keep='best_val' needs a validation set: pass val=(X_val, y_val)")


def train_model(model: nn.Module, X: torch.Tensor, y: torch.Tensor, loss: Loss, *, epochs: int = 30,
                batch_size: int = 64, lr: float = 1e-3, weight_decay: float = 0.0,
                warmup_mse_epochs: int = 0, generator: torch.Generator | None = None,
                val: tuple[torch.Tensor, torch.Tensor] | None = None,
                keep: Literal["last", "best_val"] = "last") -> TrainResult:
    """Train ``model`` with Adam on mini-batches for one of the paper's losses, then put it in
    eval mode (so BatchNorm uses its running statistics).

    - ``weight_decay``: Adam's (coupled) L2 penalty, as ``torch.optim.Adam(weight_decay=...)``
      (the paper's MNIST recipe, App. B.2: Adam, ``weight_decay=0.01``).
    - ``warmup_mse_epochs``: a Gaussian-NLL model fits its mean with the squared error for the
      first epochs (the official code does this on UTKFace), so the variance does not blow up
      before the mean fits.
    - ``val=(X_val, y_val)`` records the validation loss after every epoch; with
      ``keep='best_val'`` the weights of the epoch with the lowest validation loss are restored
      at the end (the official code keeps the best-validation checkpoint). Epochs of the MSE
      warm-up are not candidates (as in the official code).

    Raises ``RuntimeError`` on a non-finite loss naming the epoch."""
    _check_loss(loss)
    _check_training(epochs, batch_size, val, keep)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    gen = generator if generator is not None else torch.Generator().manual_seed(0)
    n = len(X)
    losses = torch.zeros(epochs, dtype=torch.float64)
    val_losses = torch.full((epochs,), math.nan, dtype=torch.float64) if val is not None else None
    best, best_state = math.inf, None
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(n, generator=gen).to(X.device)
        total = torch.zeros((), dtype=torch.float64, device=X.device)
        warm = epoch < warmup_mse_epochs
        for start in range(0, n, batch_size):
            idx = perm[start:start + batch_size]
            value = _batch_loss(model(X[idx]), y[idx], loss, warm)
            opt.zero_grad(set_to_none=True)
            value.backward()
            opt.step()
            total += value.detach() * len(idx)
        losses[epoch] = total.cpu() / n
        if val is not None:
            model.eval()
            with torch.no_grad():
                v = float(_batch_loss(predict(model, val[0]), val[1], loss, warm))
            val_losses[epoch] = v
            if keep == "best_val" and not warm and v < best:
                best, best_state = v, {k: t.detach().clone() for k, t in model.state_dict().items()}
    model.eval()
    final = float(losses[-1])
    if not math.isfinite(final):
        bad = int((~torch.isfinite(losses)).nonzero()[0])
        raise RuntimeError(f"training diverged at epoch {bad} (lr {lr:g}); lower the learning rate")
    kept = epochs - 1
    if keep == "best_val" and best_state is not None:
        model.load_state_dict(best_state)
        kept = int(torch.nan_to_num(val_losses, nan=math.inf)[warmup_mse_epochs:].argmin()) + warmup_mse_epochs
    return TrainResult(final, losses, val_losses, kept)


def _has_batchnorm(model: nn.Module) -> bool:
    return any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules())


def _train_stacked(nets: list[nn.Module], seeds: Sequence[int], X: torch.Tensor, y: torch.Tensor, loss: Loss, *,
                   epochs: int = 30, batch_size: int = 64, lr: float = 1e-3, weight_decay: float = 0.0,
                   warmup_mse_epochs: int = 0, val: tuple[torch.Tensor, torch.Tensor] | None = None,
                   keep: Literal["last", "best_val"] = "last",
                   per_network_targets: bool = False) -> list[TrainResult]:
    """:func:`train_model` for several networks of one architecture as one computation.

    The parameters are stacked along a leading axis (``torch.func.stack_module_state``), one
    functional forward is vectorised over it with ``vmap`` (network ``r`` sees its own mini-batch,
    drawn from a generator seeded ``seeds[r]``), and one Adam steps all of them: Adam and its L2
    penalty act elementwise and the summed loss separates over networks, so every network follows
    exactly the updates :func:`train_model` would give it (up to floating-point summation order).
    The trained weights are written back into ``nets``. With ``per_network_targets``, ``y`` has a
    leading axis of length ``len(nets)``: network ``r`` regresses ``y[r]`` (several target
    families in one computation, :func:`train_arms`; no validation set then)."""
    import copy

    from torch.func import functional_call, stack_module_state, vmap

    _check_loss(loss)
    _check_training(epochs, batch_size, val, keep)
    R, n = len(nets), len(X)
    if per_network_targets:
        if val is not None:
            raise ValueError("per_network_targets does not take a validation set")
        if y.shape[0] != R or y.shape[1] != n:
            raise ValueError(f"per-network targets must have shape ({R}, {n}, ...), got {tuple(y.shape)}")
    rows = torch.arange(R, device=X.device)[:, None]
    params, buffers = stack_module_state(nets)
    params = {k: v.detach().clone().requires_grad_(True) for k, v in params.items()}
    template = copy.deepcopy(nets[0]).to("meta")
    forward = vmap(lambda p, b, x: functional_call(template, (p, b), (x,)), in_dims=(0, 0, 0))
    shared = vmap(lambda p, b, x: functional_call(template, (p, b), (x,)), in_dims=(0, 0, None))
    opt = torch.optim.Adam(list(params.values()), lr=lr, weight_decay=weight_decay)
    gens = [torch.Generator().manual_seed(int(s)) for s in seeds]
    losses = torch.zeros(R, epochs, dtype=torch.float64)
    val_losses = torch.full((R, epochs), math.nan, dtype=torch.float64) if val is not None else None
    best = torch.full((R,), math.inf, dtype=torch.float64)
    best_params = {k: v.detach().clone() for k, v in params.items()}
    for epoch in range(epochs):
        for net in nets:
            net.train()
        template.train()
        perms = torch.stack([torch.randperm(n, generator=g) for g in gens]).to(X.device)
        total = torch.zeros(R, dtype=torch.float64, device=X.device)
        warm = epoch < warmup_mse_epochs
        for start in range(0, n, batch_size):
            idx = perms[:, start:start + batch_size]
            targets = y[rows, idx] if per_network_targets else y[idx]
            values = _batch_loss(forward(params, buffers, X[idx]), targets, loss, warm)
            opt.zero_grad(set_to_none=True)
            values.sum().backward()
            opt.step()
            total += values.detach() * idx.shape[1]
        losses[:, epoch] = total.cpu() / n
        if val is not None:
            template.eval()
            with torch.no_grad():
                Xv, yv = val
                out = torch.cat([shared(params, buffers, Xv[i:i + 2048]) for i in range(0, len(Xv), 2048)], 1)
                v = _batch_loss(out, yv.expand(R, *yv.shape), loss, warm).double().cpu()
            val_losses[:, epoch] = v
            if keep == "best_val" and not warm:
                better = v < best
                best = torch.where(better, v, best)
                with torch.no_grad():
                    for k, p in params.items():
                        mask = better.to(p.device).view(-1, *[1] * (p.dim() - 1))
                        best_params[k] = torch.where(mask, p.detach(), best_params[k])
    bad = ~torch.isfinite(losses[:, -1])
    if bool(bad.any()):
        r = int(bad.nonzero()[0])
        e = int((~torch.isfinite(losses[r])).nonzero()[0])
        raise RuntimeError(f"training diverged: network {r} at epoch {e} (lr {lr:g}); lower the learning rate")
    use_best = keep == "best_val" and bool(torch.isfinite(best).all())
    final = best_params if use_best else {k: v.detach() for k, v in params.items()}
    results = []
    for r, net in enumerate(nets):
        state = {k: v[r] for k, v in final.items()}
        with torch.no_grad():
            for name, p in net.named_parameters():
                p.copy_(state[name])
        net.eval()
        kept = epochs - 1
        if use_best:
            kept = int(torch.nan_to_num(val_losses[r], nan=math.inf)[warmup_mse_epochs:].argmin()) + warmup_mse_epochs
        results.append(TrainResult(float(losses[r, -1]), losses[r], None if val_losses is None else val_losses[r], kept))
    return results


def train_runs(make: Callable[[], nn.Module], X: torch.Tensor, y: torch.Tensor, loss: Loss, *,
               runs: int, seed: int = 0, batched: bool | None = None,
               results: list[TrainResult] | None = None, **train_kwargs) -> list[nn.Module]:
    """Train ``runs`` independent networks ``make()`` on ``(X, y)`` with the recipe of
    :func:`train_model` (keyword arguments passed on) and return them, in eval mode, in the order
    of the runs.

    Run ``r`` is seeded with ``1000 * seed + r``: ``torch.manual_seed`` just before ``make()``
    draws the initial weights, and a generator with the same seed orders the mini-batches. So
    run ``r`` of a configuration does not depend on which other configurations or runs were
    trained before it, and two configurations trained with the same ``seed`` share their
    initial weights whenever ``make()`` builds the same architecture. The network is moved to
    ``X.device``. These are the "several networks per configuration" whose spread gives the
    error bars and standard errors of the chapters.

    ``batched`` (default: yes unless the network has BatchNorm, whose running statistics are
    updated in place) trains all runs as one vectorised computation (:func:`_train_stacked`):
    the same updates as one :func:`train_model` per run, in a fraction of the time for small
    networks. ``results``, if a list is given, receives each run's :class:`TrainResult`."""
    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    if "generator" in train_kwargs:
        raise ValueError("train_runs seeds each run itself; do not pass a generator")
    seeds = [1000 * seed + r for r in range(runs)]
    nets = []
    for s in seeds:
        torch.manual_seed(s)
        nets.append(make().to(X.device))
    if batched is None:
        batched = not _has_batchnorm(nets[0])
    if batched:
        out = _train_stacked(nets, seeds, X, y, loss, **train_kwargs)
    else:
        out = [train_model(net, X, y, loss, generator=torch.Generator().manual_seed(s), **train_kwargs)
               for net, s in zip(nets, seeds)]
    if results is not None:
        results.extend(out)
    return nets


def train_arms(makes: Sequence[Callable[[], nn.Module]], X: torch.Tensor, targets: Sequence[torch.Tensor],
               loss: Loss, *, runs: int, seed: int = 0, **train_kwargs) -> list[list[nn.Module]]:
    """Several configurations ("arms") of one architecture, each ``runs`` times, trained as one
    vectorised computation: arm ``a`` builds its networks with ``makes[a]()`` (same output size for
    every arm) and regresses ``targets[a]`` (one tensor of shape ``(len(X), ...)`` per arm).

    Run ``r`` of every arm is seeded ``1000 * seed + r`` as in :func:`train_runs`, so each arm gets
    the networks :func:`train_runs` would give it (the same initial weights whenever ``makes[a]``
    draws them alike, the same mini-batches), up to floating-point summation order; a factorial
    experiment whose arms differ in the targets or the initial biases is then paired run by run.
    Returns one list of networks (eval mode) per arm. Keyword arguments as :func:`train_model`
    (no validation set, no ``generator``)."""
    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    if len(makes) != len(targets) or not makes:
        raise ValueError("need one target tensor per arm, and at least one arm")
    if "generator" in train_kwargs or "val" in train_kwargs:
        raise ValueError("train_arms seeds each run itself and takes no validation set")
    seeds = [1000 * seed + r for r in range(runs)]
    nets, ys = [], []
    for make, y in zip(makes, targets):
        for s in seeds:
            torch.manual_seed(s)
            nets.append(make().to(X.device))
            ys.append(y)
    if _has_batchnorm(nets[0]):
        raise ValueError("train_arms stacks networks; BatchNorm networks must be trained one at a time")
    _train_stacked(nets, seeds * len(makes), X, torch.stack(ys), loss, per_network_targets=True, **train_kwargs)
    return [nets[a * runs:(a + 1) * runs] for a in range(len(makes))]


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


def mean_se(values: Sequence[float] | torch.Tensor, axis: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and standard error ``sd / sqrt(n)`` (sample sd, ``ddof=1``) of ``values`` along
    ``axis`` (float64). The statistic of a claim about an average over independently trained
    networks; a single value gives an infinite standard error (nothing can be claimed)."""
    x = torch.as_tensor(values, dtype=torch.float64)
    n = x.shape[axis]
    if n < 1:
        raise ValueError("need at least one value")
    mean = x.mean(axis)
    if n == 1:
        return mean, torch.full_like(mean, math.inf)
    return mean, x.std(axis, correction=1) / math.sqrt(n)


def lower_bound(values: Sequence[float] | torch.Tensor, k: float = 2.0, axis: int = 0) -> torch.Tensor:
    """``mean - k * standard error`` along ``axis`` (:func:`mean_se`): a claim "the mean is
    positive" is checked as ``lower_bound > 0`` with ``k`` fixed in advance."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    mean, se = mean_se(values, axis)
    return mean - k * se


def upper_bound(values: Sequence[float] | torch.Tensor, k: float = 2.0, axis: int = 0) -> torch.Tensor:
    """``mean + k * standard error`` along ``axis`` (:func:`mean_se`)."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    mean, se = mean_se(values, axis)
    return mean + k * se


def binomial_interval(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a proportion: ``successes`` out of ``trials`` independent trials
    (e.g. networks trained from independent seeds), at ``z`` standard normal quantiles (1.96: a 95%
    interval). Returns ``(lo, hi)`` within [0, 1]; a claim "the rate is below r" is checked as
    ``hi < r`` and "above r" as ``lo > r``."""
    if trials < 1 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials and trials >= 1, got {successes}, {trials}")
    if z < 0:
        raise ValueError(f"z must be >= 0, got {z}")
    p, n = successes / trials, trials
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def train_classifier(model: nn.Module, split, loss: Loss, targets: torch.Tensor | None = None,
                     **kwargs) -> TrainResult:
    """:func:`train_model` on ``split.X_train`` with ``split.y_train`` (or ``targets``, e.g.
    reward vectors or a regression target derived from the labels); keyword arguments as
    :func:`train_model`."""
    y = split.y_train if targets is None else targets
    return train_model(model, split.X_train, y, loss, **kwargs)


# --- networks with optional normalisation (Sec. 4.1, App. C.1) -----------------------------

Norm = Literal["batch", "layer"] | None


def _norm_layer(norm: Norm, channels: int, conv: bool) -> nn.Module:
    if norm is None:
        return nn.Identity()
    if norm == "batch":
        return nn.BatchNorm2d(channels) if conv else nn.BatchNorm1d(channels)
    if norm == "layer":
        return nn.GroupNorm(1, channels) if conv else nn.LayerNorm(channels)
    raise ValueError(f"unknown norm {norm!r}; use None, 'batch' or 'layer'")


class NormCNN(nn.Module):
    """A CNN with biases and an optional normalisation after every hidden weight layer:
    ``[conv -> norm -> ReLU (-> max-pool)]*`` then ``[linear -> norm -> ReLU]*`` then a linear
    output. ``norm``: None, ``'batch'`` (BatchNorm) or ``'layer'`` (LayerNorm over all of a
    layer's units; ``GroupNorm(1, c)`` for conv layers). ``pool_after`` lists the conv layers
    followed by a 2x2 max-pool.

    For the mechanism of Sec. 4.1, :meth:`linear_parts` returns ``W_i phi_i(x)`` (each weight
    layer's output *without* its bias) and :meth:`layer_inputs` the ``phi_i(x)``; ``forward(x,
    zero_at=k)`` sets ``W_k phi_k(x) = 0`` at weight layer ``k``, so the output is the
    accumulated constant ``g_{k+1}(sigma(b_k))`` of the paper (norm layers in eval mode add their
    shifts).
    """

    def __init__(self, in_channels: int, image_size: int, d_out: int, channels: Sequence[int] = (16, 32),
                 hidden: Sequence[int] = (64,), kernel_size: int = 3, padding: int = 1,
                 pool_after: Sequence[int] = (0, 1), norm: Norm = None) -> None:
        super().__init__()
        _norm_layer(norm, 1, False)  # validates norm
        self.convs, self.conv_norms = nn.ModuleList(), nn.ModuleList()
        self.pool_after = set(pool_after)
        size, c_prev = image_size, in_channels
        for i, c in enumerate(channels):
            self.convs.append(nn.Conv2d(c_prev, c, kernel_size, padding=padding))
            self.conv_norms.append(_norm_layer(norm, c, True))
            size = size + 2 * padding - kernel_size + 1
            if i in self.pool_after:
                size //= 2
            c_prev = c
        if size < 1:
            raise ValueError(f"image_size {image_size} is too small for this architecture")
        dims = [c_prev * size * size, *hidden, d_out]
        self.fcs = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.fc_norms = nn.ModuleList(_norm_layer(norm, b, False) for b in dims[1:-1])
        self.pool = nn.MaxPool2d(2)

    @property
    def weight_layers(self) -> list[nn.Module]:
        return [*self.convs, *self.fcs]

    def _run(self, x: torch.Tensor, zero_at: int | None = None, record: list | None = None,
             inputs: list | None = None) -> torch.Tensor:
        h, idx = x, 0
        layers = [(conv, nrm, i in self.pool_after) for i, (conv, nrm) in enumerate(zip(self.convs, self.conv_norms))]
        layers += [(fc, nrm, False) for fc, nrm in zip(self.fcs, [*self.fc_norms, None])]
        for layer, nrm, pool in layers:
            if isinstance(layer, nn.Linear) and h.dim() > 2:
                h = h.flatten(1)
            if inputs is not None:
                inputs.append(h)
            bias = layer.bias
            z = layer(h) if bias is None else layer(h) - (bias.view(1, -1, 1, 1) if h.dim() == 4 else bias)
            if record is not None:
                record.append(z)
            if zero_at == idx:
                z = torch.zeros_like(z)
            if bias is not None:
                z = z + (bias.view(1, -1, 1, 1) if z.dim() == 4 else bias)
            if nrm is None:
                return z
            h = torch.relu(nrm(z))
            if pool:
                h = self.pool(h)
            idx += 1
        raise AssertionError("unreachable")

    def forward(self, x: torch.Tensor, zero_at: int | None = None) -> torch.Tensor:
        return self._run(x, zero_at=zero_at)

    def linear_parts(self, x: torch.Tensor) -> list[torch.Tensor]:
        """``W_i phi_i(x)`` for every weight layer, in order (the last is the output minus its bias)."""
        rec: list[torch.Tensor] = []
        self._run(x, record=rec)
        return rec

    def layer_inputs(self, x: torch.Tensor) -> list[torch.Tensor]:
        """``phi_i(x)``: the input of every weight layer (the first is ``x``)."""
        inp: list[torch.Tensor] = []
        self._run(x, inputs=inp)
        return inp

    def features(self, x: torch.Tensor) -> list[torch.Tensor]:
        """The inputs of the fully connected layers after the first, then the output (the
        second to last entry is the last hidden representation)."""
        inp = self.layer_inputs(x)
        return [*inp[len(self.convs) + 1:], self(x)]


def MNISTNet(d_out: int = 10, norm: Norm = None) -> NormCNN:
    """The official code's MNIST network: conv 3x3 (1->32) -> ReLU -> conv 3x3 (32->64) -> ReLU
    -> max-pool 2 -> FC 9216->128 -> ReLU -> FC 128->d_out (no padding, no dropout)."""
    return NormCNN(1, 28, d_out, channels=(32, 64), hidden=(128,), padding=0, pool_after=(1,), norm=norm)


# --- ResNet-20 for CIFAR-10 (profile "full") -----------------------------------------------


class _BasicBlock(nn.Module):
    """Two 3x3 convolutions with BatchNorm and a parameter-free shortcut ("option A" of He et
    al. 2016: identity, or stride-2 subsampling with zero-padded extra channels)."""

    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.stride, self.pad = stride, c_out - c_in

    def shortcut(self, x: torch.Tensor) -> torch.Tensor:
        if self.stride != 1:
            x = x[:, :, :: self.stride, :: self.stride]
        if self.pad:
            x = F.pad(x, (0, 0, 0, 0, self.pad // 2, self.pad - self.pad // 2))
        return x

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(h)) + self.shortcut(x))


class ResNet20(nn.Module):
    """The CIFAR-10 ResNet-20 of He et al. (2016), Sec. 4.2, used by the official code of Kang
    et al. for CIFAR-10: a 3x3 convolution (16 channels) with BatchNorm, three stages of three
    basic blocks with 16, 32 and 64 channels (the 2nd and 3rd stages start with stride 2),
    global average pooling and a linear layer; "option A" shortcuts (no parameters), Kaiming-normal
    initialisation of convolutions and the linear layer. 0.27M parameters for 10 classes.

    :meth:`stages` returns the representations the paper's Fig. 4 reads for CIFAR-10 (the first
    convolution's output before BatchNorm, the outputs of the three stages, and the output minus
    the linear layer's bias).
    """

    def __init__(self, d_out: int = 10, in_channels: int = 3, blocks: int = 3,
                 channels: Sequence[int] = (16, 32, 64)) -> None:
        super().__init__()
        if blocks < 1 or len(channels) < 1:
            raise ValueError("need at least one stage and one block per stage")
        self.conv1 = nn.Conv2d(in_channels, channels[0], 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels[0])
        layers, c_prev = [], channels[0]
        for i, c in enumerate(channels):
            stage = [_BasicBlock(c_prev if b == 0 else c, c, 2 if (b == 0 and i > 0) else 1)
                     for b in range(blocks)]
            layers.append(nn.Sequential(*stage))
            c_prev = c
        self.layers = nn.ModuleList(layers)
        self.linear = nn.Linear(c_prev, d_out)
        for m in self.modules():
            if isinstance(m, nn.Conv2d | nn.Linear):
                nn.init.kaiming_normal_(m.weight)

    def _features(self, x: torch.Tensor) -> list[torch.Tensor]:
        c1 = self.conv1(x)
        h = torch.relu(self.bn1(c1))
        out = [c1]
        for stage in self.layers:
            h = stage(h)
            out.append(h)
        out.append(F.adaptive_avg_pool2d(h, 1).flatten(1))
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(self._features(x)[-1])

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """The 64 average-pooled features read by the linear layer."""
        return self._features(x)[-1]

    def stages(self, x: torch.Tensor) -> list[torch.Tensor]:
        """``[conv1(x), stage 1, stage 2, stage 3, W_out h]``: the layers of the paper's Fig. 4
        (row 2), the last being the output without the linear layer's bias."""
        feats = self._features(x)
        return [*feats[:-1], feats[-1] @ self.linear.weight.T]
