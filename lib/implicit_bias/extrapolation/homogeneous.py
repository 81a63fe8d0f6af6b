"""Deep homogeneous ReLU networks for the theory of Kang et al. (ICLR 2024, Sec. 4.2, App. D).

The networks of the theory are bias-free ReLU MLPs ``f(W; x) = W_L s(W_{L-1} ... s(W_1 x))``,
optionally plus one scalar output bias ``b`` (the class ``F~`` of Prop. 4.2). Here a network is
a list of stacked weight matrices, ``W_l`` of shape ``(E, out, in)`` for an ensemble of ``E``
independent members (seeds), so a whole ensemble is a few batched matrix products; no ``vmap``
is needed. Their initialisation, forward pass, hidden features, norms and margin-one balanced
representative are the toolkit's :mod:`implicit_bias.homogeneous`.

Training is the gradient flow of the exponential loss, discretised in a scale-free way: gradient
descent on ``J(W) = log sum_i exp(-y_i f(W; x_i))`` (the log of the summed exponential loss; its
gradient is the loss gradient divided by the loss, so the trajectory is the gradient flow's up
to a change of time) with a *relative* step: ``W <- W - eta ||W|| G / ||G||`` per member. The
log-sum-exp form never underflows, however large the margins grow, so deep networks can be
followed far past separation in float64.

Also here: margins and the smoothed normalised margin of Lyu & Li (2020), the deterministic
inequalities behind Prop. 4.1 and
Thm. 4.1, margin points (Prop. 4.2), and the constants of Lemma D.4 as stated and as proved; and
the measurements the page ``04_theory`` makes of them (:func:`max_relative_drop`,
:func:`layer_balance`, :func:`prop41_check`, :func:`middle_singular_ratios`,
:func:`split_summary`, :func:`input_homogeneity_error`, :func:`bias_drift`, :func:`bias_share`,
:func:`bias_sign_agreement`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from ..homogeneous import Weights, features, forward, squared_norm


# --- data ----------------------------------------------------------------------------------


def sphere_clusters(n: int, d: int, n_clusters: int = 6, spread: float = 0.35,
                    positive_fraction: float = 0.5, seed: int = 0,
                    dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """Binary data on the unit sphere of ``R^d`` (the theory's ``||x|| <= 1``).

    ``n_clusters`` centres are drawn uniformly on the sphere; the first half of the clusters
    is labelled ``+1`` and the rest ``-1``. A point picks its label with probability
    ``positive_fraction`` for ``+1``, then a cluster of that label uniformly, and is
    ``normalise(centre + spread * z / sqrt(d))`` with ``z ~ N(0, I_d)``. Deterministic given
    ``seed``; returns ``(X, y)`` with ``y`` in {-1, +1} of dtype ``dtype``.
    """
    if n < 1 or d < 2:
        raise ValueError(f"need n >= 1 and d >= 2, got n={n}, d={d}")
    if n_clusters < 2 or n_clusters % 2:
        raise ValueError(f"n_clusters must be an even number >= 2, got {n_clusters}")
    if not 0.0 < positive_fraction < 1.0:
        raise ValueError(f"positive_fraction must be in (0, 1), got {positive_fraction}")
    g = torch.Generator().manual_seed(int(seed))
    centres = torch.randn(n_clusters, d, generator=g, dtype=torch.float64)
    centres = centres / centres.norm(dim=1, keepdim=True)
    half = n_clusters // 2
    positive = torch.rand(n, generator=g, dtype=torch.float64) < positive_fraction
    which = torch.randint(0, half, (n,), generator=g)
    cluster = torch.where(positive, which, which + half)
    X = centres[cluster] + spread * torch.randn(n, d, generator=g, dtype=torch.float64) / math.sqrt(d)
    X = X / X.norm(dim=1, keepdim=True)
    y = torch.where(positive, 1.0, -1.0).to(torch.float64)
    return X.to(dtype), y.to(dtype)


def sphere_uniform(n: int, d: int, seed: int = 0, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """``n`` points drawn uniformly on the unit sphere of ``R^d`` (an OOD set with the same norm
    as :func:`sphere_clusters`)."""
    g = torch.Generator().manual_seed(int(seed))
    X = torch.randn(n, d, generator=g, dtype=torch.float64)
    return (X / X.norm(dim=1, keepdim=True)).to(dtype)


# --- networks ------------------------------------------------------------------------------


def flat_norm(weights: Sequence[torch.Tensor], bias: torch.Tensor | None = None) -> torch.Tensor:
    """Euclidean norm of all parameters of each member, ``(E,)``."""
    sq = squared_norm(weights)
    if bias is not None:
        sq = sq + bias.pow(2)
    return sq.sqrt()


def log_exp_loss(weights: Sequence[torch.Tensor], X: torch.Tensor, y: torch.Tensor,
                 bias: torch.Tensor | None = None) -> torch.Tensor:
    """``J = log sum_i exp(-y_i f(x_i))`` per member, ``(E,)`` (computed with log-sum-exp)."""
    return torch.logsumexp(-y * forward(weights, X, bias), dim=-1)


# --- training ------------------------------------------------------------------------------


@dataclass
class FlowHistory:
    """Recorded every ``every`` steps (and at the last): ``steps``; ``J`` ``(T, E)``;
    ``norm`` (all parameters) ``(T, E)``; ``layer_sq`` squared Frobenius norms ``(T, E, L)``;
    ``min_margin`` ``(T, E)``; ``bias`` ``(T, E)`` (if trained with one); ``halfway``: the parameters at half the steps (for directional
    convergence)."""

    steps: list[int] = field(default_factory=list)
    J: list[torch.Tensor] = field(default_factory=list)
    norm: list[torch.Tensor] = field(default_factory=list)
    layer_sq: list[torch.Tensor] = field(default_factory=list)
    min_margin: list[torch.Tensor] = field(default_factory=list)
    bias: list[torch.Tensor] = field(default_factory=list)
    halfway: list[torch.Tensor] | None = None

    def stacked(self, name: str) -> torch.Tensor:
        return torch.stack(getattr(self, name))


def train_flow(weights: Weights, X: torch.Tensor, y: torch.Tensor, steps: int, eta: float = 0.003,
               bias: torch.Tensor | None = None, every: int = 50) -> FlowHistory:
    """Follow the gradient flow of the exponential loss (module docstring) for ``steps``
    relative steps of size ``eta``, in place on ``weights`` (and ``bias``, shape ``(E,)``).

    Raises ``RuntimeError`` naming the step if a value becomes non-finite.
    """
    if steps < 1 or not eta > 0:
        raise ValueError(f"need steps >= 1 and eta > 0, got {steps}, {eta}")
    params = list(weights) + ([bias] if bias is not None else [])
    for p in params:
        p.requires_grad_(True)
    hist = FlowHistory()
    E = weights[0].shape[0]

    def record(step: int, J: torch.Tensor) -> None:
        with torch.no_grad():
            hist.steps.append(step)
            hist.J.append(J.detach().clone())
            hist.norm.append(flat_norm(weights, bias))
            hist.layer_sq.append(torch.stack([W.pow(2).sum((1, 2)) for W in weights], -1))
            hist.min_margin.append((y * forward(weights, X, bias)).min(-1).values)
            if bias is not None:
                hist.bias.append(bias.detach().clone())

    for step in range(steps + 1):
        J = log_exp_loss(weights, X, y, bias)
        if step % every == 0 or step == steps:
            if not bool(torch.isfinite(J).all()):
                raise RuntimeError(f"train_flow: non-finite objective at step {step}; lower eta")
            record(step, J)
        if step == steps // 2:
            hist.halfway = [p.detach().clone() for p in params]
        if step == steps:
            break
        grads = torch.autograd.grad(J.sum(), params)
        with torch.no_grad():
            gnorm = torch.sqrt(sum(g.pow(2).reshape(E, -1).sum(1) for g in grads))
            if not bool((gnorm > 0).all()):
                dead = int((gnorm <= 0).nonzero()[0])
                raise RuntimeError(f"train_flow: member {dead} has a zero gradient at step {step} "
                                   "(every ReLU inactive); use a larger initialisation scale")
            scale = eta * flat_norm(weights, bias) / gnorm
            for p, g in zip(params, grads):
                p.sub_(scale.view(-1, *[1] * (p.dim() - 1)) * g)
    for p in params:
        p.requires_grad_(False)
    return hist


def smoothed_normalized_margin(J: torch.Tensor, norm: torch.Tensor, depth: int) -> torch.Tensor:
    """Lyu & Li's smoothed normalised margin ``-J / ||theta||^L`` (meaningful once ``J < 0``,
    i.e. the summed exponential loss is below 1); non-decreasing along gradient flow."""
    return -J / norm.pow(depth)


def direction_cosine(a: Sequence[torch.Tensor], b: Sequence[torch.Tensor]) -> torch.Tensor:
    """Cosine between two parameter vectors of every member, ``(E,)``."""
    E = a[0].shape[0]
    va = torch.cat([t.reshape(E, -1) for t in a], 1)
    vb = torch.cat([t.reshape(E, -1) for t in b], 1)
    return (va * vb).sum(1) / (va.norm(dim=1) * vb.norm(dim=1))


def max_relative_drop(hist: FlowHistory, depth: int) -> torch.Tensor:
    """Largest relative decrease of the smoothed normalised margin between two consecutive
    records, counted only once the summed loss is below 1 (``J < 0``), per member ``(E,)``.

    Gradient flow never decreases the margin there (Lyu & Li 2020), so a positive value is a
    discretisation effect; a member with fewer than two such records gets 0."""
    J, norm = hist.stacked("J"), hist.stacked("norm")
    g = smoothed_normalized_margin(J, norm, depth)
    drops = []
    for e in range(J.shape[1]):
        s = g[J[:, e] < 0, e]
        drops.append(float(((s[:-1] - s[1:]).clamp_min(0) / s[:-1]).max()) if len(s) > 1 else 0.0)
    return torch.tensor(drops, dtype=torch.float64)


def layer_balance(hist: FlowHistory) -> torch.Tensor:
    """``max_l ||W_l||_F / min_l ||W_l||_F`` at the last record, per member ``(E,)``: 1 for
    balanced layers (gradient flow conserves ``||W_{l+1}||_F^2 - ||W_l||_F^2``)."""
    sq = hist.stacked("layer_sq")[-1]
    return (sq.max(-1).values / sq.min(-1).values).sqrt()


# --- the inequalities of Prop. 4.1 and Thm. 4.1 ---------------------------------------------


def op_norms(weights: Sequence[torch.Tensor]) -> torch.Tensor:
    """Spectral norms ``||W_l||_op`` of every layer, ``(E, L)``."""
    return torch.stack([torch.linalg.matrix_norm(W, ord=2) for W in weights], -1)


def chain_bound(weights: Sequence[torch.Tensor], X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The deterministic core of Prop. 4.1 (App. D.1): for every layer ``j = 1..L-1``,
    ``E|f(x)| <= prod_{k>j} ||W_k||_op * E||f_j(x)||`` over the rows of ``X``.
    Returns ``(lhs, rhs)``, each ``(E, L-1)`` (``lhs`` repeated over ``j``)."""
    feats = features(weights, X)
    ops = op_norms(weights)
    lhs = forward(weights, X).abs().mean(-1)
    rhs = []
    for j in range(1, len(weights)):
        tail = ops[:, j:].prod(-1)
        rhs.append(tail * feats[j - 1].norm(dim=-1).mean(-1))
    return lhs.unsqueeze(-1).expand(-1, len(rhs)), torch.stack(rhs, -1)


def top_right_singular(W: torch.Tensor, k: int = 1) -> torch.Tensor:
    """Top-``k`` right singular vectors of each ``(E, out, in)`` matrix, ``(E, in, k)``."""
    _, _, Vh = torch.linalg.svd(W, full_matrices=False)
    return Vh[:, :k, :].transpose(-1, -2)


def split_bound(weights: Sequence[torch.Tensor], X: torch.Tensor, j: int, k: int = 1
                ) -> dict[str, torch.Tensor]:
    """Per-sample form of Thm. 4.1's argument at hidden layer ``j`` (1-based, ``j <= L-1``).

    With ``A`` the projection on the top-``k`` right singular vectors of ``W_{j+1}`` and
    ``s_1 >= s_2 >= ...`` its singular values, for every input
    ``|f(x)| <= prod_{l >= j+2} ||W_l||_op * (s_1 ||A f_j(x)|| + s_{k+1} ||(I - A) f_j(x)||)``.
    Returns ``abs_f``, ``bound``, ``proj`` (``||A f_j||``), ``rest`` (``||(I-A) f_j||``),
    ``norm`` (``||f_j||``), each ``(E, n)``.
    """
    L = len(weights)
    if not 1 <= j <= L - 1:
        raise ValueError(f"j must be a hidden layer in 1..{L - 1}, got {j}")
    fj = features(weights, X)[j - 1]
    W = weights[j]  # W_{j+1}
    s = torch.linalg.svdvals(W)
    V = top_right_singular(W, k)
    coef = fj @ V  # (E, n, k)
    proj = coef.norm(dim=-1)
    total = fj.norm(dim=-1)
    rest = (total.pow(2) - proj.pow(2)).clamp_min(0).sqrt()
    tail = op_norms(weights[j + 1:]).prod(-1) if j + 1 < L else torch.ones(W.shape[0], dtype=W.dtype)
    s_next = s[:, k] if s.shape[1] > k else torch.zeros_like(s[:, 0])
    bound = tail.unsqueeze(-1) * (s[:, :1] * proj + s_next.unsqueeze(-1) * rest)
    return {"abs_f": forward(weights, X).abs(), "bound": bound, "proj": proj, "rest": rest, "norm": total}


def prop41_check(weights: Sequence[torch.Tensor], X_tr: torch.Tensor, y_tr: torch.Tensor,
                 X_te: torch.Tensor, y_te: torch.Tensor, X_ood: torch.Tensor
                 ) -> dict[str, torch.Tensor]:
    """The measurements of Prop. 4.1 on trained weights, per member.

    With ``gamma`` the smallest training margin:

    - ``frac`` ``(E,)``: the fraction of held-out points with margin ``>= gamma``;
    - ``R`` ``(E, L-1)``: ``R_j = E_test||f_j|| prod_{k>j} ||W_k||_op / gamma`` for layers
      ``j = 1..L-1`` (the proposition's conclusion in normalised form; by the chain inequality
      ``R_j >= frac``);
    - ``ood_ratio`` ``(E, L-1)``: ``E_OOD||f_j|| / E_test||f_j||`` per hidden layer;
    - ``slack`` ``(E,)``: the smallest relative slack ``(rhs - lhs) / rhs`` of
      :func:`chain_bound` over every layer, on the held-out and on the OOD inputs (``>= 0``
      for any weights).
    """
    L = len(weights)
    gamma = (y_tr * forward(weights, X_tr)).min(-1).values
    frac = ((y_te * forward(weights, X_te)) >= gamma[:, None]).double().mean(-1)
    slack = []
    for Xe in (X_te, X_ood):
        lhs, rhs = chain_bound(weights, Xe)
        slack.append(((rhs - lhs) / rhs).amin(-1))
    ops = op_norms(weights)
    f_te, f_ood = features(weights, X_te), features(weights, X_ood)
    R = torch.stack([f_te[j - 1].norm(dim=-1).mean(-1) * ops[:, j:].prod(-1) / gamma
                     for j in range(1, L)], -1)
    ratio = torch.stack([f_ood[j].norm(dim=-1).mean(-1) / f_te[j].norm(dim=-1).mean(-1)
                         for j in range(L - 1)], -1)
    return {"frac": frac, "R": R, "ood_ratio": ratio, "slack": torch.minimum(*slack)}


def middle_singular_ratios(weights: Sequence[torch.Tensor], k: int = 3) -> torch.Tensor:
    """``s_{i+1} / s_1`` for the ``k`` largest singular values of the middle layers
    ``W_2 .. W_{L-1}`` (the square ones), shape ``(k, E, L-2)``: entry ``[i, e, l]`` is layer
    ``W_{l+2}`` of member ``e``. Rank one gives ``(1, 0, 0, ...)`` along the first axis; two
    equal singular values give ``(1, 1, 0, ...)``."""
    if len(weights) < 3:
        raise ValueError(f"need depth >= 3 for middle layers, got {len(weights)}")
    sv = [torch.linalg.svdvals(W) for W in weights[1:-1]]
    if min(s.shape[-1] for s in sv) < k:
        raise ValueError(f"k = {k} exceeds the width of a middle layer")
    return torch.stack([torch.stack([s[:, i] / s[:, 0] for s in sv], -1) for i in range(k)])


@dataclass
class SplitSummary:
    """The measurements of Thm. 4.1's per-sample split (:func:`split_summary`).

    ``violation``: the largest ``(|f| - bound) / max bound`` over members, inputs and ``k``
    (``<= 0`` up to round-off for any weights); ``tightness[k]``: mean of ``|f| / bound`` over
    members and held-out inputs; ``out_ratio`` ``(E,)``: ``E_OOD|f| / E_test|f|``;
    ``proj_ratio[k]`` ``(E,)``: the OOD / held-out ratio of ``E||A f_j|| / E||f_j||``;
    ``energy_share[k]`` ``(E,)``: ``sum ||A f_j||^2 / sum ||f_j||^2`` over the held-out inputs."""

    violation: float
    tightness: dict[int, float]
    out_ratio: torch.Tensor
    proj_ratio: dict[int, torch.Tensor]
    energy_share: dict[int, torch.Tensor]


def split_summary(weights: Sequence[torch.Tensor], X_te: torch.Tensor, X_ood: torch.Tensor, j: int,
                  ks: Sequence[int] = (1, 2)) -> SplitSummary:
    """Evaluate :func:`split_bound` at hidden layer ``j`` for each rank ``k`` in ``ks`` on
    held-out inputs ``X_te`` and OOD inputs ``X_ood``, and summarise (:class:`SplitSummary`)."""
    te = {k: split_bound(weights, X_te, j, k) for k in ks}
    ood = {k: split_bound(weights, X_ood, j, k) for k in ks}
    viol = max(float(((s["abs_f"] - s["bound"]) / s["bound"].amax(-1, keepdim=True)).max())
               for part in (te, ood) for s in part.values())
    tight = {k: float((te[k]["abs_f"] / te[k]["bound"]).mean()) for k in ks}
    out_ratio = forward(weights, X_ood).abs().mean(-1) / forward(weights, X_te).abs().mean(-1)
    proj_ratio = {k: (ood[k]["proj"].mean(-1) / ood[k]["norm"].mean(-1))
                  / (te[k]["proj"].mean(-1) / te[k]["norm"].mean(-1)) for k in ks}
    energy = {k: te[k]["proj"].pow(2).sum(-1) / te[k]["norm"].pow(2).sum(-1) for k in ks}
    return SplitSummary(viol, tight, out_ratio, proj_ratio, energy)


# --- Prop. 4.2 ------------------------------------------------------------------------------


def margin_points(margins: torch.Tensor, eps: float = 0.05) -> torch.Tensor:
    """Mask of the approximate margin points: ``q_i <= (1 + eps) min_j q_j`` per member
    (``margins`` ``(E, n)``, positive after separation)."""
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    qmin = margins.min(-1, keepdim=True).values
    return margins <= qmin * (1 + eps)


def input_homogeneity_error(weights: Sequence[torch.Tensor], X: torch.Tensor, bias: torch.Tensor,
                            lams: Sequence[float] | torch.Tensor = (1.0, 0.5, 0.1)) -> float:
    """Largest relative error of ``f~(lam x) - b = lam (f~(x) - b)`` (``f~ = f + b``, degree 1 in
    the input for ``lam >= 0``) over ``lams``, members and the rows of ``X``; round-off for any
    weights."""
    f_full = forward(weights, X, bias)
    b = bias[:, None]
    errors = []
    for lam in torch.as_tensor(lams, dtype=X.dtype):
        scaled, expected = forward(weights, lam * X, bias) - b, lam * (f_full - b)
        errors.append(float((scaled - expected).abs().max() / expected.abs().max()))
    return max(errors)


def bias_drift(b_hist: torch.Tensor, start: int) -> torch.Tensor:
    """How much the bias moved after record ``start``: ``|b_T - b_start| / max(1, |b_T|)`` per
    member, from the recorded biases ``b_hist`` ``(T, E)``."""
    return (b_hist[-1] - b_hist[start]).abs() / b_hist[-1].abs().clamp_min(1.0)


def bias_share(weights: Sequence[torch.Tensor], X: torch.Tensor,
               bias: torch.Tensor) -> torch.Tensor:
    """``|b| / E|f~(x) - b|`` over the rows of ``X``, per member ``(E,)``: the size of the output
    bias against the bias-free outputs."""
    return bias.abs() / (forward(weights, X, bias) - bias[:, None]).abs().mean(-1)


@dataclass
class SignAgreement:
    """Counts of :func:`bias_sign_agreement`: ``margin`` members whose ``sign b`` equals the sign
    of their margin points' label sum, among the ``decided`` members where that sum is not 0;
    ``ocs`` members (of ``members``) whose ``sign b`` equals ``ocs_sign``, the sign of the
    exponential-loss OCS ``(1/2) log(N+/N-)`` (0 for balanced labels)."""

    margin: int
    decided: int
    ocs: int
    members: int
    ocs_sign: float


def bias_sign_agreement(bias: torch.Tensor, margins: torch.Tensor, y: torch.Tensor,
                        eps: float = 0.05) -> SignAgreement:
    """Compare the sign of each member's output bias ``bias`` ``(E,)`` with what Prop. 4.2
    predicts: the label sum of the margin points (:func:`margin_points` of ``margins``
    ``(E, n)`` with tolerance ``eps``) and the sign of the OCS of the labels ``y`` ``(n,)``."""
    M = margin_points(margins, eps)
    E = bias.shape[0]
    sum_M = torch.stack([y[M[e]].sum() for e in range(E)])
    ocs_sign = float(torch.sign((y > 0).sum() - (y < 0).sum()))
    decided = sum_M != 0
    agree_M = int((torch.sign(bias) == torch.sign(sum_M))[decided].sum())
    agree_ocs = int((torch.sign(bias) == ocs_sign).sum())
    return SignAgreement(agree_M, int(decided.sum()), agree_ocs, E, ocs_sign)


# --- Lemma D.4's constants ------------------------------------------------------------------


def lemma_d4_bound(depth: int, shallow_depth: int, C: float, form: str = "proof") -> float:
    """Lower bound on ``(1/L) sum_i ||W_i||_op / ||W_i||_F`` for the min-norm deep network.

    ``form='statement'``: Kang et al.'s Lemma D.4 as printed, ``C_1^{1/L} sqrt(L/(L+1))`` with
    ``C_1 = (1/sqrt 2)(sqrt 2 / C)^{L'}`` (the constant their proof names); tends to 1 as
    ``L -> inf``. ``form='proof'``: what the proof derives (its eq. 7, Timor et al. 2023,
    Thm. 5), ``(1/sqrt 2)(sqrt 2 / C)^{L'/L} sqrt(L/(L+1))``; tends to ``1/sqrt 2``.
    """
    L, Lp = depth, shallow_depth
    if L <= Lp or Lp < 2 or not C > 0:
        raise ValueError(f"need depth > shallow_depth >= 2 and C > 0, got {L}, {Lp}, {C}")
    tail = math.sqrt(L / (L + 1))
    if form == "statement":
        C1 = (math.sqrt(2) / C) ** Lp / math.sqrt(2)
        return C1 ** (1.0 / L) * tail
    if form == "proof":
        return (math.sqrt(2) / C) ** (Lp / L) / math.sqrt(2) * tail
    raise ValueError(f"form must be 'statement' or 'proof', got {form!r}")


# --- Lemma D.2 (Bartlett, Foster & Telgarsky 2017) -------------------------------------------


def spectral_complexity(weights: Sequence[torch.Tensor]) -> torch.Tensor:
    """The spectral complexity ``R_W`` of Bartlett et al. (2017, Thm 1.1) with reference matrices
    ``A_i = 0`` and 1-Lipschitz activations, per member ``(E,)``:

        R_W = (prod_i ||W_i||_op) * (sum_i (||W_i^T||_{2,1} / ||W_i||_op)^{2/3})^{3/2},

    where ``||W^T||_{2,1}`` sums the Euclidean norms of the *columns* of ``W`` (rows of ``W^T``).
    Kang et al.'s Lemma D.2 prints this quantity without the exponents ``2/3`` and ``3/2`` and
    with ``||W_i||^{2/3}`` alone in the denominator."""
    ops = op_norms(weights)  # (E, L)
    l21 = torch.stack([W.norm(dim=-2).sum(-1) for W in weights], -1)  # column norms of W = rows of W^T
    return ops.prod(-1) * (l21 / ops).pow(2.0 / 3.0).sum(-1).pow(1.5)


def margin_bound_term(weights: Sequence[torch.Tensor], X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The leading term of the spectrally normalised margin bound at the network's own training
    margin ``gamma = min_i y_i f(x_i)``, without its hidden constants and log factors other than
    ``ln(width)``: ``||X||_F R_W ln(m) / (gamma n)`` per member ``(E,)``, with ``m`` the largest
    width. The generalisation gap it bounds is a probability, so a value above 1 makes the bound
    vacuous. Scale-invariant: multiplying the weights scales ``R_W`` and ``gamma`` alike."""
    gamma = (y * forward(weights, X)).min(-1).values
    width = max(max(W.shape[-2], W.shape[-1]) for W in weights)
    return X.norm() * spectral_complexity(weights) * math.log(width) / (gamma * X.shape[0])


def plot_rank_against_depth(axes: Sequence, depths: Sequence[int], rho_bar: dict[int, torch.Tensor], c_mean: float,
                            s_ratio: torch.Tensor, L_max: int, shallow_depth: int = 2) -> None:
    """Lemma D.4's figure on two axes: left, the measured mean spectral-to-Frobenius ratio
    $\\bar\\rho_L$ against depth (mean and std over members) with the bound as printed and as the
    proof gives it (:func:`lemma_d4_bound`, witness constant ``c_mean``); right, $s_k/s_1$
    (``s_ratio``: k x members x middle layers) across the middle layers of the depth-``L_max`` networks."""
    import matplotlib.pyplot as plt
    import numpy as np

    from .. import plotting

    axes[0].errorbar(np.array(depths), [float(rho_bar[L].mean()) for L in depths],
                     yerr=[float(rho_bar[L].std()) for L in depths], marker="o", color=plotting.color(0),
                     label=r"measured $\bar\rho_L$")
    Lg = np.arange(3, 65)
    for i, (form, label) in enumerate((("statement", "bound as stated"), ("proof", "bound the proof gives"))):
        axes[0].plot(Lg, [lemma_d4_bound(int(L), shallow_depth, c_mean, form) for L in Lg], color=plotting.color(i + 1),
                     ls="--", label=label)
    axes[0].axhline(1 / math.sqrt(2), color="grey", lw=0.8)
    axes[0].set(xscale="log", xlabel="depth L", ylabel=r"$\bar\rho_L=\frac{1}{L}\sum_i \|W_i\|_{op}/\|W_i\|_F$",
                ylim=(0.4, 1.02))
    ticks = [2, 4, 8, 16, 32, 64]
    axes[0].set_xticks(ticks, [str(t) for t in ticks])
    axes[0].xaxis.set_minor_formatter(plt.NullFormatter())  # no overlapping minor labels on the log axis
    axes[0].legend(loc="lower right")
    for k in range(s_ratio.shape[0]):
        axes[1].plot(np.arange(2, L_max), s_ratio[k].mean(0).numpy(), marker="o", color=plotting.color(k),
                     label=f"$s_{k + 1}/s_1$")
    axes[1].set(xlabel=f"layer i (depth {L_max})", ylabel="singular value ratio", ylim=(0, 1.05))
    axes[1].legend()
