"""The common networks of the synthesis pages ``01_five_lenses`` and ``04_alignment_and_depth``.

Three arms of bias-free (``small``, ``plain``) or biased (``reg``) ReLU MLPs on Jacot's
bottleneck-rank task, each trained as one batch of networks (one per seed of a cell):

- **small**: small Gaussian initialisation, no regularisation, the norm-adaptive step of the
  saddle-to-saddle part (:func:`train_small`);
- **reg**: standard initialisation with L2 regularisation (the bottleneck part's depth sweep);
- **plain**: standard initialisation without regularisation, a control (:func:`train_plain`).

:func:`build_arms` trains the three arms of a profile; the pages call it with the same
settings, so they read the same networks. :func:`certify_minima` asks whether the regularised
networks are at a minimum of their loss (the end state the bottleneck's claims are about).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from implicit_bias import cache, convergence, ensembles, models, spectra, train
from implicit_bias.bottleneck import structure, sweeps
from implicit_bias.invariances import invariants

D = torch.float64


def as_params(weights: Sequence[torch.Tensor], biases: Sequence[torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
    """Stacked weight lists as the parameter dict of `models.MLP` (what the invariances part reads)."""
    out = {f"layers.{i}.weight": W for i, W in enumerate(weights)}
    out.update({f"layers.{i}.bias": b for i, b in enumerate(biases or [])})
    return out


def mode(values: Any) -> int:
    """The most common integer of ``values`` (the smallest one on a tie)."""
    vals, counts = torch.unique(torch.as_tensor(values), return_counts=True)
    return int(vals[counts.argmax()])


def mid_alignments(weights: Sequence[torch.Tensor]) -> torch.Tensor:
    """Alignment |<u_1(W_l), v_1(W_l+1)>| of every adjacent pair of hidden-to-hidden layers
    (`spectra.alignment`), flattened over the batch of networks."""
    L = len(weights)
    return torch.cat([spectra.alignment(weights[l], weights[l + 1]).flatten() for l in range(1, L - 2)])


def train_small(X: torch.Tensor, Y: torch.Tensor, L: int, eta0: float, steps: int, *, width: int, std: float,
                seed: int, n_nets: int, record: int, device: torch.device | str = "cpu",
                snapshots: bool = True) -> dict[str, Any]:
    """Bias-free ReLU MLPs from small Gaussian initialisation, no regularisation, trained together
    by gradient descent with the saddle-to-saddle part's norm-adaptive step
    ``eta0 (||theta|| / sqrt(L))^(2 - L)`` (`train.train_norm_adaptive`): the time change of
    Bantzis, Simon & Jacot, without which a depth-6 network does not leave the origin in a CPU
    budget.

    Returns ``W0``, ``W`` (float64 lists of stacked weights), ``steps``, ``loss`` and ``norms``
    (Lemma 4's cut norms, here the ``||W_l||_F^2``) at the recorded steps; with ``snapshots`` the
    records are every ``record`` steps plus log-spaced ones early in the run and also hold ``s``
    and ``ds`` (the top four singular values of the middle layer and of its update) and
    ``snaps`` (the weights); without, only the first and last layer norms are recorded."""
    gen = torch.Generator().manual_seed(seed)
    d_in, d_out = X.shape[1], Y.shape[1]
    dims = [d_in] + [width] * (L - 1) + [d_out]
    W = models.gaussian_weights(dims, std, batch_shape=(n_nets,), generator=gen, dtype=torch.float32,
                                device=device)
    W0 = [w.clone() for w in W]
    m, cuts = structure.middle_index(L), invariants.layer_cuts(models.MLP(d_in, d_out, width, L, bias=False))
    metrics = {"norms": lambda Ws: invariants.cut_norms(as_params(Ws), cuts, batch_dims=1)}
    if snapshots:
        metrics |= {"s": lambda Ws: torch.linalg.svdvals(Ws[m])[:, :4],
                    "ds": lambda Ws: torch.linalg.svdvals(Ws[m] - W0[m])[:, :4],
                    "W": lambda Ws: [w.to("cpu", D) for w in Ws]}
    steps_kept = (sorted(set(range(0, steps + 1, record)) | set(train.log_spaced_steps(steps, 80)))
                  if snapshots else [0])
    hist = train.train_norm_adaptive(W, X.float().to(device), Y.float().to(device), loss="half_mse", steps=steps,
                                     eta0=eta0, radius=L ** 0.5, record_steps=steps_kept, metrics=metrics,
                                     desc=f"small L={L}")
    out = dict(W0=[w.to("cpu", D) for w in W0], W=[w.detach().to("cpu", D) for w in W],
               steps=torch.tensor(hist.record_steps, dtype=D), loss=hist.loss[:, hist.record_steps].to(D),
               norms=hist.stacked("norms").to(D))
    if snapshots:
        out |= dict(s=hist.stacked("s").to(D), ds=hist.stacked("ds").to(D), snaps=hist.records["W"])
    return out


def train_plain(X: torch.Tensor, Y: torch.Tensor, L: int, *, width: int, init_scale: float, steps: int,
                seeds: Sequence[int], device: torch.device | str = "cpu"
                ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Bias-free ReLU MLPs from standard initialisation without regularisation (a control), step
    ``2 / L``: ``(initial weights, final weights)``, float64."""
    d_in, d_out = X.shape[1], Y.shape[1]
    ens = ensembles.Ensemble.build(
        lambda s: models.MLP(d_in, d_out, width, L, bias=False, init_scale=init_scale), seeds=seeds, device=device)
    init = [W.detach().to("cpu", D).clone() for W in ens.weight_matrices()]
    ensembles.train_ensemble(ens, X.float().to(device), Y.float().to(device), loss="half_mse", steps=steps,
                             lr=2.0 / L, on_diverge="record", progress=False)
    return init, [W.detach().to("cpu", D) for W in ens.weight_matrices()]


def build_arms(P: Mapping[str, Any], X: torch.Tensor, Y: torch.Tensor, seed: int, seeds: Sequence[int],
               device: torch.device | str = "cpu", snapshots: bool = True, reg_depths: Sequence[int] | None = None
               ) -> tuple[dict[int, dict[str, Any]], dict[int, Any], dict[int, tuple[list, list]]]:
    """The ``small``, ``reg`` and ``plain`` arms of a profile ``P`` (keys of the pages' ``PROFILES``:
    ``width``, ``small_depths``, ``small_std``, ``small_eta``, ``small_steps``, ``record``,
    ``reg_depths``, ``lam``, ``reg_steps``, ``reg_init``, ``plain_depths``, ``plain_steps``,
    ``n``, ``cache``), each a dict by depth; cached under the settings when ``P["cache"]``.
    ``reg_depths``: the depths of the regularised arm a page reads (default ``P["reg_depths"]``);
    each depth is trained on its own, so a subset gives the same networks."""
    small_key = {k: P[k] for k in ("n", "width", "small_steps", "small_std", "record")}
    small = {L: cache.cached("synthesis-small", dict(L=L, eta0=eta0, seeds=list(seeds), **small_key),
                             lambda L=L, eta0=eta0: train_small(
                                 X, Y, L, eta0, P["small_steps"], width=P["width"], std=P["small_std"], seed=seed,
                                 n_nets=len(seeds), record=P["record"], device=device, snapshots=snapshots),
                             enabled=P["cache"] and snapshots)
             for L, eta0 in zip(P["small_depths"], P["small_eta"])}
    reg = sweeps.depth_sweep(X, Y, P["reg_depths"] if reg_depths is None else reg_depths, seeds, P["width"], P["lam"], P["reg_steps"], 2.0,
                             P["reg_init"], torch.float32, device, use_cache=P["cache"], name="synthesis-reg")
    plain = {L: cache.cached("synthesis-plain", dict(L=L, seeds=list(seeds), **{k: P[k] for k in
                             ("n", "width", "plain_steps", "reg_init")}),
                             lambda L=L: train_plain(X, Y, L, width=P["width"], init_scale=P["reg_init"],
                                                     steps=P["plain_steps"], seeds=seeds, device=device),
                             enabled=P["cache"])
             for L in P["plain_depths"]}
    return small, reg, plain


def certify_minima(run: sweeps.DepthRun, X: torch.Tensor, Y: torch.Tensor, lam: float, lr: float, window: int,
                   tol: float = 0.01, thresholds: Sequence[float] = (0.1, 0.5)
                   ) -> tuple[torch.Tensor, convergence.Certificate]:
    """Certify that the L2-regularised networks of one depth are at a minimum of
    ``(1/2)(C + lam ||theta||^2)`` (`convergence.stationarity`): training continues on a copy at the
    fixed rate ``lr`` for ``window`` steps, and a network is certified when its ``||theta||^2``
    changes by at most ``tol`` (relative) and the number of singular values of its middle layer
    above each of ``thresholds`` (what the pages read as a learned rank) does not change.

    A minimum stays put at every stable rate; an oscillation held by a large rate (a 2-cycle at
    the training step) moves once the rate is lowered, so the pages certify below the training
    rate. Returns ``(certified per network, the certificate of all monitored quantities)``."""
    L, n = run.depth, run.seeds
    Xd, Yd = X.to(D), Y.to(D)
    m = structure.middle_index(L)

    def loss(ps: list[torch.Tensor]) -> torch.Tensor:
        W, b = ps[:L], ps[L:]
        cost = (models.mlp_trace(W, b, Xd).output - Yd).pow(2).sum(-1).mean(-1)
        return (0.5 * (cost + lam * models.param_sqnorm(W + b, batch_dims=1))).sum()   # one gradient per network

    def quantity(ps: list[torch.Tensor]) -> torch.Tensor:
        ranks = [spectra.thresholded_rank(ps[m], t, "abs").to(D) for t in thresholds]
        return torch.stack([models.param_sqnorm(list(ps), batch_dims=1)] + ranks, -1)   # (networks, 1 + thresholds)

    cert = convergence.stationarity(loss, list(run.weights) + list(run.biases), lr, window, quantity=quantity,
                                    tol=tol)
    return cert.certified.view(n, -1).all(-1), cert
