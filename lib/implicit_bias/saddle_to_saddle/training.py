"""Training from a small initialisation with the norm-adaptive step (Bantzis, Simon & Jacot,
Sec. 3.3 and App. B): stacked runs of a bias-free ReLU network, the loss curve, the singular
values of every layer over time, and resumable segments for long (``full``) runs.

The paper trains a depth-6, width-1000 network on MNIST with SGD (batch 32), initial weights
``N(0, 10^-6)`` and the step ``10 / ||theta||^4``, for 1000 epochs. :func:`train_runs` does the
same for ``R`` networks at once (different seeds), with any depth, width and data, and records:

- ``loss_curve``: the loss on a fixed probe set of ``probe`` training examples (the first ones
  of a seeded permutation) at the recorded steps: a smooth estimate of the training loss, free
  of the mini-batch noise that would hide slow plateaus;
- ``spectra``: all singular values of every ``W_l`` at the steps ``record_steps`` (log-spaced
  and uniform), for the figures and the rank measures.

A long run is split into segments of ``segment`` steps; each segment's result is stored with
:func:`implicit_bias.cache.cached` under a key made of the configuration and the segment index,
so an interrupted run restarts from the last finished segment; a run that loads segments from
the cache prints one line saying how many, from which entries and which code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from .. import cache, models, train


def standardize(X: torch.Tensor) -> torch.Tensor:
    """``(X - mean) / std`` with one scalar mean and standard deviation over all pixels, as the
    paper normalises MNIST (App. B)."""
    return (X - X.mean()) / X.std()


@dataclass(frozen=True)
class RunConfig:
    """One experiment: ``runs`` networks (seeds ``seed, seed+1, ...``) of the given ``depth`` and
    ``width`` on data with ``d_in`` inputs and ``d_out`` classes, initial weights ``N(0, std^2)``,
    cross-entropy, step ``eta0 * (||theta|| / radius)^(2 - depth)``, mini-batches of
    ``batch_size``, ``steps`` steps. ``record`` is the number of log-spaced steps at which the
    spectra are recorded, ``uniform`` the number of equally spaced ones."""

    depth: int
    width: int
    d_in: int
    d_out: int
    std: float
    eta0: float
    steps: int
    batch_size: int | None = 32
    radius: float = 1.0
    runs: int = 1
    seed: int = 0
    probe: int = 300
    record: int = 40
    uniform: int = 80
    segment: int | None = None

    def record_steps(self) -> list[int]:
        logs = train.log_spaced_steps(self.steps, self.record)
        unif = [round(i * self.steps / self.uniform) for i in range(self.uniform + 1)]
        return sorted(set(logs) | set(unif))


@dataclass
class RunResult:
    """``loss_curve`` ``(runs, K)``: the probe loss at the recorded steps ``spectra_steps``;
    ``batch_loss`` ``(runs, steps)``: the mini-batch loss of every step; ``spectra[k][l]`` the singular values ``(runs, min(d_l, d_{l-1}))`` of ``W_{l+1}`` at
    ``spectra_steps[k]``; ``norms`` ``(K, runs)`` ``||theta||`` there; ``weights`` the final ones."""

    config: RunConfig
    loss_curve: torch.Tensor
    batch_loss: torch.Tensor
    spectra_steps: list[int]
    spectra: list[list[torch.Tensor]]
    norms: torch.Tensor
    weights: list[torch.Tensor] = field(repr=False)

    def singular_values(self, layer: int) -> torch.Tensor:
        """``(K, runs, k)``: singular values of ``W_layer`` (1-based) at every recorded step."""
        return torch.stack([s[layer - 1] for s in self.spectra])

    def at(self, step: float) -> int:
        """Index of the first recorded step at or after ``step`` (the last one if none)."""
        for k, s in enumerate(self.spectra_steps):
            if s >= step:
                return k
        return len(self.spectra_steps) - 1


def _spectra(weights: list[torch.Tensor]) -> list[torch.Tensor]:
    return [torch.linalg.svdvals(W.double()).cpu() for W in weights]


def _norms(weights: list[torch.Tensor]) -> torch.Tensor:
    return sum(W.double().pow(2).flatten(1).sum(1) for W in weights).sqrt().cpu()


def train_runs(config: RunConfig, X: torch.Tensor, y: torch.Tensor, *, use_cache: bool = False,
               name: str = "saddle-training", progress: bool | None = None) -> RunResult:
    """Train ``config.runs`` networks on ``(X, y)`` (see the module docstring). The initial
    weights are drawn with a generator seeded by ``config.seed``; segment ``i`` draws its
    mini-batches with seed ``(config.seed, i)``, so a resumed run is identical to an
    uninterrupted one. With ``use_cache`` each finished segment is stored and reused."""
    c = config
    dims = [c.d_in] + [c.width] * (c.depth - 1) + [c.d_out]
    device = X.device
    gen = torch.Generator().manual_seed(c.seed)
    weights = [W.to(device) for W in models.gaussian_weights(dims, c.std, (c.runs,), generator=gen,
                                                             dtype=X.dtype)]
    segment = c.segment or c.steps
    bounds = list(range(0, c.steps, segment)) + [c.steps]
    wanted = c.record_steps()
    pg = torch.Generator().manual_seed(c.seed)
    probe = torch.randperm(len(X), generator=pg)[: c.probe].to(device)
    Xp, yp = X[probe], y[probe]

    def probe_loss(Ws: list[torch.Tensor]) -> torch.Tensor:
        out = models.layer_activations(Ws, Xp)[0][-1]                    # (runs, probe, d_out)
        return torch.nn.functional.cross_entropy(out.transpose(1, 2), yp.expand(c.runs, -1),
                                                 reduction="none").mean(1).double().cpu()

    pieces: list[dict[str, Any]] = []
    served_before = len(cache.served())
    for i, (start, stop) in enumerate(zip(bounds[:-1], bounds[1:])):
        state = [W.clone() for W in weights]

        def compute(state=state, start=start, stop=stop, i=i) -> dict[str, Any]:
            g = torch.Generator(device=device).manual_seed(10_000 * c.seed + i)
            hist = train.train_norm_adaptive(
                state, X, y, loss="ce", steps=stop - start, eta0=c.eta0, radius=c.radius,
                batch_size=c.batch_size, generator=g,
                record_steps=[s for s in wanted if start <= s < stop], step_offset=start,
                metrics={"spectra": _spectra, "norm": _norms, "probe_loss": probe_loss},
                progress=progress,
                desc=f"depth {c.depth}, steps {start}-{stop}")
            return {"weights": [W.cpu() for W in state], "loss": hist.loss[:, :-1],
                    "steps": hist.record_steps, "spectra": hist.records["spectra"],
                    "norm": hist.records["norm"], "probe_loss": hist.records["probe_loss"]}

        key = asdict(c) | {"segment_index": i, "segment_bounds": (start, stop)}
        piece = cache.cached(name, key, compute, enabled=use_cache, note=False)
        weights = [W.to(device) for W in piece["weights"]]
        pieces.append(piece)
    loaded = cache.served()[served_before:]
    if loaded:  # one line for the page, not one per segment
        print(f"cache: {len(loaded)} of {len(pieces)} segments of {name!r} (depth {c.depth}) loaded; "
              f"the first from {loaded[0].source()}")
    loss = torch.cat([p["loss"] for p in pieces], 1)                       # (runs, steps)
    steps_rec, spectra, norms, curve = [], [], [], []
    for p in pieces:
        for s, sv, nm, lo in zip(p["steps"], p["spectra"], p["norm"], p["probe_loss"]):
            if s in steps_rec or s not in wanted:   # segment ends: recorded twice, or only as a last step
                continue
            steps_rec.append(s)
            spectra.append(sv)
            norms.append(nm)
            curve.append(lo)
    return RunResult(c, torch.stack(curve, 1), loss, steps_rec, spectra, torch.stack(norms), weights)


def second_over_first(result: RunResult, layers: Sequence[int] | None = None) -> torch.Tensor:
    """``s_2 / s_1`` of each layer: ``(K, runs, L)`` over the recorded steps."""
    L = result.config.depth
    layers = list(layers) if layers is not None else list(range(1, L + 1))
    out = [result.singular_values(l)[..., 1] / result.singular_values(l)[..., 0] for l in layers]
    return torch.stack(out, -1)


def balanced_subset(X: torch.Tensor, y: torch.Tensor, per_class: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The first ``per_class`` examples of every class (classes in increasing order), standardised
    with :func:`standardize`: the small data sets of the escape-direction pages."""
    classes = torch.unique(y)
    idx = torch.cat([torch.nonzero(y == c)[:per_class, 0] for c in classes])
    if any(int((y == c).sum()) < per_class for c in classes):
        raise ValueError(f"some class has fewer than per_class={per_class} examples")
    return standardize(X[idx]), y[idx]
