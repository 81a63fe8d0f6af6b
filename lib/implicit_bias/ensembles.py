"""Many small networks trained as one batched computation.

The networks' parameters are stacked along a leading *ensemble* axis with
``torch.func.stack_module_state``; one functional forward (``functional_call``) is vectorised
over that axis with ``vmap``. Seeds, widths of the same architecture, learning rates and even
datasets become a batch dimension, so an experiment of hundreds of runs costs a few large
tensor operations per step instead of a Python loop over runs.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch import nn
from torch.func import functional_call, grad_and_value, stack_module_state, vmap
from tqdm.auto import tqdm

from .models import as_matrix, weight_specs
from .runtime import quiet
from .train import LossFn, LossName, TrainingDiverged, loss_function

Params = dict[str, torch.Tensor]


@dataclass
class Ensemble:
    """Stacked parameters of ``size`` networks sharing the architecture of ``template``."""

    template: nn.Module
    params: Params
    buffers: Params

    @classmethod
    def from_models(cls, models: Sequence[nn.Module]) -> Ensemble:
        if not models:
            raise ValueError("need at least one model")
        params, buffers = stack_module_state(list(models))
        params = {k: v.detach().clone() for k, v in params.items()}
        template = copy.deepcopy(models[0]).to("meta")
        return cls(template, params, buffers)

    @classmethod
    def build(cls, factory: Callable[[int], nn.Module], seeds: Sequence[int],
              device: torch.device | str = "cpu") -> Ensemble:
        """One network per seed: ``torch.manual_seed(seed); factory(seed)``."""
        models = []
        for seed in seeds:
            torch.manual_seed(seed)
            models.append(factory(seed).to(device))
        return cls.from_models(models)

    @property
    def size(self) -> int:
        return next(iter(self.params.values())).shape[0]

    def forward(self, X: torch.Tensor, batched_inputs: bool = False) -> torch.Tensor:
        """Outputs of every member: ``(size, n, out)``. ``X`` is shared ``(n, ...)`` or, with
        ``batched_inputs``, one dataset per member ``(size, n, ...)``."""
        f = lambda p, b, x: functional_call(self.template, (p, b), (x,))
        return vmap(f, in_dims=(0, 0, 0 if batched_inputs else None))(self.params, self.buffers, X)

    __call__ = forward

    def weight_matrices(self) -> list[torch.Tensor]:
        """Weight matrices in forward order, each stacked: ``(size, out, in)``."""
        return [as_matrix(self.params[name], kind, batch_dims=1) for name, kind in weight_specs(self.template)]

    def member(self, i: int) -> nn.Module:
        """The ``i``-th network as an ordinary module (a copy)."""
        device = next(iter(self.params.values())).device
        model = copy.deepcopy(self.template).to_empty(device=device)
        state = {k: v[i] for k, v in {**self.params, **self.buffers}.items()}
        model.load_state_dict(state)
        return model


@dataclass
class EnsembleHistory:
    """``loss``: ``(size, steps + 1)`` losses of every member at every step (CPU).
    ``records[name]``: values of each metric at ``record_steps``. ``diverged``: members whose
    loss became non-finite (only with ``on_diverge='record'``; their parameters are frozen)."""

    loss: torch.Tensor
    record_steps: list[int] = field(default_factory=list)
    records: dict[str, list[Any]] = field(default_factory=dict)
    diverged: torch.Tensor | None = None

    def stacked(self, name: str) -> torch.Tensor:
        """A recorded metric as one tensor, time first."""
        return torch.stack([torch.as_tensor(v) for v in self.records[name]])


EnsembleMetric = Callable[[Ensemble], Any]


def train_ensemble(
    ens: Ensemble,
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    loss: LossName | LossFn = "ce",
    steps: int = 1000,
    lr: float | torch.Tensor = 0.1,
    weight_decay: float = 0.0,
    batched_data: bool = False,
    record_every: int | None = None,
    metrics: Mapping[str, EnsembleMetric] | None = None,
    on_diverge: Literal["raise", "record"] = "raise",
    check_every: int = 100,
    progress: bool | None = None,
    desc: str = "ensemble",
) -> EnsembleHistory:
    """Full-batch gradient descent on every member at once (in place on ``ens.params``).

    ``lr`` is a float or one rate per member (``(size,)``): a learning-rate sweep is a batch
    dimension too. With ``batched_data`` every member has its own dataset: ``X`` is
    ``(size, n, ...)`` and ``y`` is ``(size, n, ...)``. ``metrics`` maps names to
    ``f(ensemble) -> value`` recorded every ``record_every`` steps (and at the first and last).
    A non-finite loss raises :class:`TrainingDiverged` naming the member, the step and its
    learning rate, or with ``on_diverge='record'`` freezes that member and marks it.
    """
    loss_fn = loss_function(loss)
    E = ens.size
    device = next(iter(ens.params.values())).device
    rates = torch.as_tensor(lr, dtype=next(iter(ens.params.values())).dtype, device=device)
    rates = rates.expand(E) if rates.dim() == 0 else rates
    if rates.shape != (E,):
        raise ValueError(f"lr must be a float or have shape ({E},), got {tuple(rates.shape)}")

    def member_loss(p: Params, b: Params, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return loss_fn(functional_call(ens.template, (p, b), (x,)), t)

    data_dim = 0 if batched_data else None
    step_fn = vmap(grad_and_value(member_loss), in_dims=(0, 0, data_dim, data_dim))
    losses = torch.full((E, steps + 1), float("nan"), dtype=torch.float64, device=device)
    alive = torch.ones(E, dtype=torch.bool, device=device)
    history = EnsembleHistory(loss=losses)
    show = (not quiet()) if progress is None else progress
    checked = 0

    def record() -> None:
        with torch.no_grad():
            for name, fn in (metrics or {}).items():
                value = fn(ens)
                history.records.setdefault(name, []).append(
                    value.detach().cpu() if isinstance(value, torch.Tensor) else value)

    def check(upto: int) -> None:
        nonlocal checked
        window = losses[:, checked : upto + 1]
        bad = ~torch.isfinite(window)
        if on_diverge == "raise" and bool(bad.any()):
            member, offset = (int(v) for v in bad.nonzero()[0])
            raise TrainingDiverged(
                f"training diverged: member {member} of the ensemble has loss "
                f"{float(window[member, offset])} at step {checked + offset} (learning rate "
                f"{float(rates[member]):g}). Lower its learning rate or initialisation scale, "
                "or pass on_diverge='record' to freeze diverging members and go on."
            )
        checked = upto + 1

    for step in tqdm(range(steps + 1), disable=not show, desc=desc, mininterval=1.0):
        grads, values = step_fn(ens.params, ens.buffers, X, y)
        losses[:, step] = values.detach()
        if record_every and metrics and (step % record_every == 0 or step == steps):
            history.record_steps.append(step)
            record()
        if step % check_every == 0 or step == steps:
            check(step)
        if step == steps:
            break
        with torch.no_grad():
            if on_diverge == "record":
                alive &= torch.isfinite(values)
            scale = torch.where(alive, rates, torch.zeros_like(rates))
            for name, p in ens.params.items():
                g = grads[name]
                if weight_decay:
                    g = g + weight_decay * p
                shape = (-1, *[1] * (p.dim() - 1))
                # where(), not 0 * g: a diverged member's gradient may be inf/NaN (0 * inf = NaN)
                p.sub_(torch.where(alive.view(shape), scale.view(shape) * g, torch.zeros_like(g)))
    history.loss = losses.cpu()
    history.diverged = (~alive).cpu()
    return history
