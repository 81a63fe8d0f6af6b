"""Selective classification with an abstain action (Kang et al., ICLR 2024, Sec. 5).

Actions are the ``K`` classes plus *abstain* (index ``K``). The reward of predicting the true
class is ``correct`` (+1 in the paper), of a wrong class ``wrong`` (-4) and of abstaining
``abstain`` (0). Three policies are compared:

- **reward prediction**: a network outputs the predicted reward of each of the ``K + 1``
  actions (trained with squared error on the reward vector, :func:`implicit_bias.extrapolation.ocs.reward_vectors`)
  and takes the argmax. Its OCS is the mean reward per action, ``(correct - wrong) p_k + wrong``
  per class and ``abstain`` for abstaining, so reverting to the OCS means abstaining whenever
  ``max_k p_k < (abstain - wrong) / (correct - wrong)``.
- **standard classification**: cross-entropy over ``K + 1`` logits where abstain is never a
  target; argmax.
- **oracle**: a ``K``-way classifier whose probabilities are temperature-scaled on the
  evaluation set itself (with its labels), abstaining when the largest probability is at most
  the Bayes threshold :func:`bayes_threshold`.
"""

from __future__ import annotations

import torch


def bayes_threshold(correct: float = 1.0, wrong: float = -4.0, abstain: float = 0.0) -> float:
    """The probability ``p`` of being right above which predicting beats abstaining:
    ``p * correct + (1 - p) * wrong > abstain`` iff ``p > (abstain - wrong) / (correct - wrong)``
    (0.8 for the paper's +1 / -4 / 0)."""
    if not correct > abstain > wrong:
        raise ValueError(f"need correct > abstain > wrong, got {correct}, {abstain}, {wrong}")
    return (abstain - wrong) / (correct - wrong)


def rewards(actions: torch.Tensor, labels: torch.Tensor, n_classes: int, correct: float = 1.0,
            wrong: float = -4.0, abstain: float = 0.0) -> torch.Tensor:
    """Reward of each action (``0..K-1`` a class, ``K`` abstain) for the true ``labels``;
    float64, same shape as ``actions``."""
    actions, labels = torch.as_tensor(actions), torch.as_tensor(labels)
    if actions.shape[-1] != labels.shape[-1]:
        raise ValueError(f"actions {tuple(actions.shape)} and labels {tuple(labels.shape)} do not match")
    if bool((actions < 0).any()) or bool((actions > n_classes).any()):
        raise ValueError(f"actions must lie in 0..{n_classes} ({n_classes} = abstain)")
    r = torch.where(actions == labels, correct, wrong).to(torch.float64)
    return torch.where(actions == n_classes, torch.full_like(r, abstain), r)


def fit_temperature(logits: torch.Tensor, labels: torch.Tensor, per_class: bool = False,
                    init: float = 1.5, steps: int = 200) -> torch.Tensor:
    """Temperature(s) ``T`` minimising the NLL of ``softmax(logits / T)`` on ``(logits, labels)``
    (L-BFGS on ``log T``, float64). ``per_class=True`` fits one temperature per class, as the
    official code does; the default is the scalar temperature of Guo et al. (2017)."""
    z = logits.detach().to(torch.float64)
    t = torch.full((z.shape[1] if per_class else 1,), float(init), dtype=torch.float64).log().requires_grad_(True)
    opt = torch.optim.LBFGS([t], lr=0.5, max_iter=steps, tolerance_grad=1e-10, tolerance_change=1e-12,
                            line_search_fn="strong_wolfe")
    y = labels.long()

    def closure() -> torch.Tensor:
        opt.zero_grad()
        value = torch.nn.functional.cross_entropy(z / t.exp(), y)
        value.backward()
        return value

    opt.step(closure)
    return t.detach().exp()


def reward_prediction_actions(outputs: torch.Tensor) -> torch.Tensor:
    """The reward-prediction policy: the action with the largest predicted reward."""
    return outputs.argmax(-1)


def classifier_actions(logits: torch.Tensor) -> torch.Tensor:
    """Standard classification: argmax over the ``K + 1`` logits (abstain is the last)."""
    return logits.argmax(-1)


def oracle_actions(logits: torch.Tensor, labels: torch.Tensor, threshold: float,
                   per_class: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """The oracle: temperature-scale the ``K``-way ``logits`` on this very set (using its
    ``labels``), predict the argmax class, and abstain (action ``K``) when the largest
    probability is at most ``threshold``. Returns ``(actions, temperature)``."""
    T = fit_temperature(logits, labels, per_class=per_class)
    p = torch.softmax(logits.to(torch.float64) / T, -1)
    conf, pred = p.max(-1)
    K = logits.shape[-1]
    return torch.where(conf <= threshold, torch.full_like(pred, K), pred), T


def summary(actions: torch.Tensor, labels: torch.Tensor, n_classes: int, **reward_kwargs: float
            ) -> dict[str, float]:
    """``abstain``: fraction of abstentions; ``reward``: mean reward; ``accuracy_answered``:
    accuracy on the inputs where the policy did not abstain (NaN if it always abstained)."""
    r = rewards(actions, labels, n_classes, **reward_kwargs)
    answered = actions != n_classes
    acc = (actions[answered] == labels[answered]).double().mean() if bool(answered.any()) else torch.tensor(float("nan"))
    return {"abstain": float((~answered).double().mean()), "reward": float(r.mean()), "accuracy_answered": float(acc)}
