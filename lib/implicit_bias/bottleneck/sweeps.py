"""Depth sweeps of L2-regularised MLPs trained with the batched engine, one ensemble per depth.

Every depth trains its seeds as one ensemble (:func:`implicit_bias.ensembles.train_ensemble`):
full-batch gradient descent on ``(1/2) (C(f_theta) + lambda ||theta||^2)`` with
``C = mean_i ||f(x_i) - y_i||^2`` (the library's ``half_mse`` loss with ``weight_decay =
lambda``), learning rate ``lr_scale / L`` (Jacot's ``Theta(1/L)``). Biases are trained and
penalised like the weights. Results are cached per depth (:mod:`implicit_bias.cache`), so an
interrupted ``full`` run resumes at the first depth it has not finished.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from .. import cache, ensembles, models

D = torch.float64


@dataclass
class DepthRun:
    """The seeds of one depth after training, moved to the CPU in float64: ``weights[l]`` and
    ``biases[l]`` have a leading seed axis; ``cost`` is ``C(f_theta)`` per seed (training set);
    ``sqnorm`` is ``||theta||^2`` with biases; ``loss`` the training objective every
    ``len // points`` steps (seeds x points); ``diverged`` marks seeds whose loss became
    non-finite (frozen by the engine)."""

    depth: int
    weights: list[torch.Tensor]
    biases: list[torch.Tensor]
    cost: torch.Tensor
    sqnorm: torch.Tensor
    loss: torch.Tensor
    diverged: torch.Tensor

    def member(self, i: int) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """``(weights, biases)`` of seed ``i``."""
        return [W[i] for W in self.weights], [b[i] for b in self.biases]

    @property
    def seeds(self) -> int:
        return self.weights[0].shape[0]


def _fingerprint(*tensors: torch.Tensor) -> str:
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().cpu().contiguous().double().numpy().tobytes())
    return h.hexdigest()[:16]


def train_depth(X: torch.Tensor, Y: torch.Tensor, depth: int, seeds: Sequence[int], width: int, lam: float,
                steps: int, lr_scale: float, init_scale: float = 1.0, dtype: torch.dtype = torch.float32,
                device: torch.device | str = "cpu", points: int = 200) -> DepthRun:
    """Train ``len(seeds)`` networks of one depth as one ensemble (see the module docstring)."""
    d_in, d_out = X.shape[1], Y.shape[1]
    ens = ensembles.Ensemble.build(
        lambda s: models.MLP(d_in, d_out, width, depth, init_scale=init_scale).to(dtype), seeds=list(seeds),
        device=device)
    Xd, Yd = X.to(device=device, dtype=dtype), Y.to(device=device, dtype=dtype)
    hist = ensembles.train_ensemble(ens, Xd, Yd, loss="half_mse", steps=steps, lr=lr_scale / depth,
                                    weight_decay=lam, on_diverge="record", desc=f"depth {depth}")
    params = {k: v.detach().to("cpu", D) for k, v in ens.params.items()}
    W, b = models.mlp_weights_biases(params)
    out = models.mlp_trace(W, b, X.to(D)).output
    cost = (out - Y.to(D)).pow(2).sum(-1).mean(-1)
    every = max(1, steps // points)
    return DepthRun(depth, W, b, cost, models.param_sqnorm(params, batch_dims=1),
                    hist.loss[:, ::every].to(D), hist.diverged.clone())


def depth_sweep(X: torch.Tensor, Y: torch.Tensor, depths: Sequence[int], seeds: Sequence[int], width: int,
                lam: float, steps: int, lr_scale: float, init_scale: float = 1.0,
                dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu", use_cache: bool = False,
                name: str = "bottleneck-depth-sweep",
                on_depth: Callable[[DepthRun], None] | None = None) -> dict[int, DepthRun]:
    """:func:`train_depth` for every depth; with ``use_cache`` each depth is stored under a key of
    its settings and of the data, so an interrupted run resumes where it stopped."""
    runs: dict[int, DepthRun] = {}
    data_key = _fingerprint(X, Y)
    for L in depths:
        config = dict(depth=L, seeds=list(seeds), width=width, lam=lam, steps=steps, lr_scale=lr_scale,
                      init_scale=init_scale, dtype=str(dtype), data=data_key)
        runs[L] = cache.cached(f"{name}-L{L}", config,
                               lambda L=L: train_depth(X, Y, L, seeds, width, lam, steps, lr_scale, init_scale,
                                                       dtype, device),
                               enabled=use_cache)
        if on_depth is not None:
            on_depth(runs[L])
    return runs
