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

import math
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
    spectra are recorded, ``uniform`` the number of equally spaced ones. ``scales``: optional
    per-run multipliers of the initial weights (one per run: several initial scales in one
    batched computation)."""

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
    scales: tuple[float, ...] | None = None

    def record_steps(self) -> list[int]:
        logs = train.log_spaced_steps(self.steps, self.record)
        unif = [round(i * self.steps / self.uniform) for i in range(self.uniform + 1)]
        return sorted(set(logs) | set(unif))


@dataclass
class RunResult:
    """``loss_curve`` ``(runs, K)``: the probe loss at the recorded steps ``spectra_steps``;
    ``batch_loss`` ``(runs, steps)``: the mini-batch loss of every step; ``spectra[k][l]`` the singular values ``(runs, min(d_l, d_{l-1}))`` of ``W_{l+1}`` at
    ``spectra_steps[k]``; ``norms`` ``(K, runs)`` ``||theta||`` there; ``weights`` the final ones,
    ``initial`` the initial ones."""

    config: RunConfig
    loss_curve: torch.Tensor
    batch_loss: torch.Tensor
    spectra_steps: list[int]
    spectra: list[list[torch.Tensor]]
    norms: torch.Tensor
    weights: list[torch.Tensor] = field(repr=False)
    initial: list[torch.Tensor] | None = field(default=None, repr=False)

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
    if c.scales is not None:
        if len(c.scales) != c.runs:
            raise ValueError(f"scales needs one entry per run ({c.runs}), got {len(c.scales)}")
        sc = torch.as_tensor(c.scales, dtype=X.dtype, device=device)
        weights = [W * sc[:, None, None] for W in weights]
    initial = [W.clone().cpu() for W in weights]
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
    return RunResult(c, torch.stack(curve, 1), loss, steps_rec, spectra, torch.stack(norms), weights, initial)


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


@dataclass
class FirstEscape:
    """Result of :func:`train_until_escape`, per run ``r``: ``escaped[r]``; ``step[r]``, the last
    step at which the probe loss was still above ``(1 - drop) log K`` (the end of the first
    plateau; the last step trained if the run never left); ``weights``: the weights there, stacked
    ``(R, out, in)`` per layer; ``norm_growth[r]``: ``||theta||`` at the end over its initial value;
    ``out_max[r]``: the largest output entry (in absolute value) on the probe set at the end;
    ``curve_steps``, ``curve``: the probe loss ``(R, K)`` at every checkpoint; ``steps``: steps
    trained (all runs train together until every run has left, or ``max_steps``)."""

    escaped: torch.Tensor
    step: torch.Tensor
    weights: list[torch.Tensor]
    norm_growth: torch.Tensor
    out_max: torch.Tensor
    curve_steps: list[int]
    curve: torch.Tensor
    steps: int


def train_until_escape(scales: Sequence[float], X: torch.Tensor, y: torch.Tensor, *, depth: int, width: int,
                       std: float, eta0: float, batch_size: int = 32, max_steps: int = 20_000, chunk: int = 250,
                       drop: float = 0.01, probe: int = 300, seed: int = 0) -> FirstEscape:
    """Train one network per entry of ``scales`` from the *same* Gaussian draw (entries
    ``N(0, std^2)``) multiplied by that scale, with the norm-adaptive SGD of
    :func:`implicit_bias.train.train_norm_adaptive` (radius ``sqrt(depth)``), until every run's
    probe loss has fallen below ``(1 - drop) log K`` (or ``max_steps``), and keep each run's
    weights at the last step before that (see :class:`FirstEscape`).

    The runs train in chunks of ``chunk`` steps with the probe loss checked after each; a chunk in
    which some run leaves is replayed (same mini-batches, from the saved generator state) with the
    probe loss recorded at every step, and replayed once more up to the step found, to read the
    weights there. Near a small initialisation the direction aligns with an escape direction only
    in the last steps before the loss moves, so the checkpoint must be exact. Use float64 data for
    scales far below 1: the outputs scale like ``scale^depth`` and underflow in float32."""
    R = len(scales)
    K = int(y.max()) + 1
    dims = [X.shape[1]] + [width] * (depth - 1) + [K]
    gen = torch.Generator().manual_seed(seed)
    sc = torch.as_tensor(list(scales), dtype=X.dtype, device=X.device)
    Ws = [W.to(X.device) * sc[:, None, None] for W in
          models.gaussian_weights(dims, std, (R,), generator=gen, dtype=X.dtype)]
    rows = torch.randperm(len(X), generator=torch.Generator().manual_seed(seed))[:probe].to(X.device)
    Xp, yp = X[rows], y[rows]

    def probe_loss(weights: list[torch.Tensor]) -> torch.Tensor:
        out = models.layer_activations(weights, Xp)[0][-1]
        return torch.nn.functional.cross_entropy(out.transpose(1, 2), yp.expand(R, -1),
                                                 reduction="none").mean(1).double().cpu()

    def run(weights: list[torch.Tensor], n: int, offset: int, state: torch.Tensor, record: Sequence[int] = (),
            metrics: dict | None = None) -> train.StackedHistory:
        g.set_state(state)
        return train.train_norm_adaptive(weights, X, y, loss="ce", steps=n, eta0=eta0, radius=math.sqrt(depth),
                                         batch_size=batch_size, generator=g, record_steps=record,
                                         step_offset=offset, metrics=metrics, progress=False)

    threshold = (1 - drop) * math.log(K)
    keep = [W.clone() for W in Ws]
    norm0 = sum(W.double().pow(2).flatten(1).sum(1) for W in Ws).sqrt().cpu()
    step_at = torch.zeros(R, dtype=torch.long)
    escaped = torch.zeros(R, dtype=torch.bool)
    curve_steps, curve = [0], [probe_loss(Ws)]
    g = torch.Generator(device=X.device).manual_seed(10_000 * seed + 1)
    done = 0
    while done < max_steps and not bool(escaped.all()):
        n = min(chunk, max_steps - done)
        state, start = g.get_state(), [W.clone() for W in Ws]
        run(Ws, n, done, state)
        loss = probe_loss(Ws)
        left = (loss < threshold) & ~escaped
        if bool(left.any()):
            # replay the chunk: the probe loss at every step, then the weights at each run's last
            # step above the threshold
            replay = [W.clone() for W in start]
            hist = run(replay, n, done, state, record=range(done, done + n + 1), metrics={"probe": probe_loss})
            per_step = torch.stack(hist.records["probe"])                 # (n + 1, R)
            last = {}
            for r in torch.nonzero(left).flatten().tolist():
                above = torch.nonzero(per_step[:, r] >= threshold).flatten()
                last[r] = done + int(above[-1]) if len(above) else done
            want = sorted(set(last.values()))
            grab = run([W.clone() for W in start], n, done, state, record=want,
                       metrics={"weights": lambda ws: [w.clone() for w in ws]})
            for r, k in last.items():
                snap = grab.records["weights"][grab.record_steps.index(k)]
                for l in range(depth):
                    keep[l][r] = snap[l][r]
                step_at[r] = k
        still = (loss >= threshold) & ~escaped
        for l, W in enumerate(Ws):
            keep[l][still] = W[still]
        step_at[still] = done + n
        escaped |= left
        done += n
        curve_steps.append(done)
        curve.append(loss)
    out_max = models.layer_activations(Ws, Xp)[0][-1].abs().flatten(1).amax(1).double().cpu()
    growth = sum(W.double().pow(2).flatten(1).sum(1) for W in Ws).sqrt().cpu() / norm0
    return FirstEscape(escaped=escaped, step=step_at, weights=keep, norm_growth=growth, out_max=out_max,
                       curve_steps=curve_steps, curve=torch.stack(curve, 1), steps=done)


def layer_spectra_figure(result: RunResult, run: int, depth: int, top: int = 10):
    """The top ``top`` singular values of every layer ``W_1 .. W_depth`` of one run of ``result``
    against the recorded step (one panel per layer, log scale; the first two values drawn
    strongly, the others faint): the right-hand panels of the paper's Figure 1."""
    import matplotlib.pyplot as plt
    import numpy as np

    from .. import plotting

    rows = 2 if depth > 3 else 1
    fig, axes = plotting.subplots(3, nrows=rows, height=2.0 * rows, sharex=True)
    axes = np.atleast_1d(axes).ravel()
    for layer in range(1, depth + 1):
        ax = axes[layer - 1]
        sv = result.singular_values(layer)[:, run, :top].numpy()
        for i in range(sv.shape[1]):
            ax.plot(result.spectra_steps, sv[:, i], color=plotting.color(i if i < 2 else 7),
                    lw=1.2 if i < 2 else 0.6, alpha=1.0 if i < 2 else 0.4)
        ax.set_title(f"$W_{layer}$", fontsize=8)
        ax.set_yscale("log")
        ax.yaxis.set_minor_formatter(plt.NullFormatter())
    for ax in axes[depth:]:
        ax.set_axis_off()
    axes[0].set_ylabel(f"top-{top} singular values")
    axes[depth - 1].set_xlabel("SGD step")
    return fig


def plateau_certificate(weights: Sequence[torch.Tensor], X: torch.Tensor, y: torch.Tensor, *, eta0: float,
                        window: int, tol: float):
    """Is each stacked network ``weights`` (``(R, out, in)`` per layer) sitting on a plateau?

    :func:`implicit_bias.convergence.stationarity` at a **fixed** rate: full-batch gradient descent
    on the cross-entropy on ``(X, y)`` (the probe examples) for ``window`` steps, each network at
    the norm-adaptive rate its own weights give at the start, ``eta0 (||theta|| / sqrt L)^(2-L)``,
    held fixed (the rates enter as weights of the summed loss, with ``lr = 1``). A network is
    certified when its probe loss changes by at most ``tol`` (relative) over the window. The rate
    does not decay, so a network that is leaving a plateau is not certified by a vanishing step."""
    from .. import convergence

    L = len(weights)
    Ws = [W.detach().double() for W in weights]
    norm = sum(W.pow(2).flatten(1).sum(1) for W in Ws).sqrt()
    rate = eta0 * (norm / math.sqrt(L)) ** (2 - L)                               # (R,)
    Xd = X.double()
    R = Ws[0].shape[0]

    def per_run(ws: list[torch.Tensor]) -> torch.Tensor:
        out = models.layer_activations(ws, Xd)[0][-1]                            # (R, n, K)
        return torch.nn.functional.cross_entropy(out.transpose(1, 2), y.expand(R, -1), reduction="none").mean(1)

    return convergence.stationarity(lambda ws: (rate * per_run(ws)).sum(), Ws, 1.0, window,
                                    quantity=per_run, tol=tol)


def checkpoint_spectra_panels(result: RunResult, run: int, panels: Sequence[tuple[Any, int | None, str]],
                              top: int = 10) -> None:
    """Draw, on each ``(axis, k, title)`` of ``panels``, the top ``top`` singular values of every
    layer of one run of ``result`` at the recorded step index ``k`` (one line per layer, log
    scale; the axis is hidden when ``k`` is None): the centre and right panels of Figure 1."""
    from .. import plotting

    for ax, k, title in panels:
        if k is None:
            ax.set_axis_off()
            continue
        for layer in range(1, result.config.depth + 1):
            sv = result.singular_values(layer)[k, run, :top].numpy()
            ax.plot(range(1, len(sv) + 1), sv, "o-", ms=3, color=plotting.color(layer - 1), label=f"$W_{layer}$")
        ax.set_yscale("log")
        ax.set(xlabel="index $i$", ylabel="$s_i(W_\\ell)$")
        ax.set_title(title, fontsize=8)


def finish_figure1(axes: Sequence[Any], deep6: RunResult, deep4: RunResult, run: int, escape_k: int | None,
                   escape_title: str) -> tuple[Any, Any]:
    """Finish the paper's Figure 1 at a page's scale, shared by the digits and MNIST pages.

    ``axes[0]`` already holds the loss curves: this marks the escape checkpoint ``escape_k``
    (dotted; none when None) and the last recorded step (dashed), labels it, and draws on
    ``axes[1]`` and ``axes[2]`` the spectra of every layer of depth-6 run ``run`` at those two
    checkpoints (:func:`checkpoint_spectra_panels`, the first titled ``escape_title``). Returns the
    per-layer spectra figures (:func:`layer_spectra_figure`) of that depth-6 run and of the first
    depth-4 run, for the page to glue and close."""
    ax = axes[0]
    steps = deep6.spectra_steps
    k_end = len(steps) - 1
    if escape_k is not None:
        ax.axvline(steps[escape_k], color="k", ls=":", lw=0.8)
    ax.axvline(steps[k_end], color="k", ls="--", lw=0.8)
    ax.set(xlabel="SGD step", ylabel="training loss (probe set)")
    ax.legend(fontsize=7)
    checkpoint_spectra_panels(deep6, run, ((axes[1], escape_k, escape_title), (axes[2], k_end, "last step")))
    axes[1].legend(fontsize=6, ncol=2)
    return layer_spectra_figure(deep6, run, 6), layer_spectra_figure(deep4, 0, 4)
