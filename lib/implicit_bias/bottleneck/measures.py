"""Reading a depth sweep of Figure 1 network by network, and its collapse factorial.

- :func:`network_record` / :func:`sweep_records`: one record (a ``dict``) per trained network:
  train and test cost, ``||theta||^2``, convergence, Jacot's learned rank (the middle weight's
  count) and the rank of the learned function (the input Jacobian's numerical rank);
- :func:`theorem6_measures`: the per-network quantities of Theorem 6 and Corollary 8 for a rank
  ``k`` (budget, ``d_k`` per layer, ``s_{k+1}`` of the weights and of the pre-activations, the
  middle layer's representation);
- :func:`function_distance` / :func:`distance_groups`: root-mean-square distances between learned
  functions, grouped by depth;
- :func:`collapse_table`: for each cell of a factorial, how many members collapsed at each depth
  and the first depth at which most of them did;
- :func:`median_or_nan`: the median of a list, ``nan`` when it is empty.

Every measurement is in float64 on the CPU, on ``(weights, biases)`` lists.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .. import models, spectra
from . import bounds, jacobians, structure
from .tasks import Task
from .training import AdamRun

Tensors = Sequence[torch.Tensor]


def median_or_nan(values: Sequence[float]) -> float:
    """``float(np.median(values))``, or ``nan`` for an empty sequence."""
    return float(np.median(values)) if len(values) else math.nan


def network_record(W: Tensors, b: Tensors, task: Task, *, depth: int, seed: int, tail: float, fit: float = 0.1,
                   conv: float = 0.01, collapse: float = 0.5) -> dict[str, Any]:
    """The measures of one trained network of a depth sweep on ``task``.

    Keys: ``L``, ``seed``, ``W``, ``b``; ``cost`` and ``test``, the mean over samples of
    ``||f(x) - y||^2`` on the training and the test set, and ``out_test``, the test outputs;
    ``sqnorm`` (``||theta||^2``, biases included); ``tail`` (the relative change of ``||theta||^2``
    at the end of training, given); ``kW``, the number of singular values above 0.1 of the middle
    weight (Jacot's learned rank); ``kJ``, the median over the training points of the number of
    singular values of ``Jf(x)`` above 10% of the largest; ``spectra``, the singular values of every
    weight; the flags ``fits`` (``cost < fit``), ``converged`` (``tail < conv``) and ``collapsed``
    (``cost > collapse``); and, for a network that fits, ``logJ = 2 max_x log|Jf(x)|_{+,k}`` with
    ``k = max(kJ, 1)``."""
    out = models.mlp_trace(W, b, task.X).output
    J = jacobians.input_jacobians(W, b, task.X)
    row: dict[str, Any] = dict(
        L=depth, seed=seed, W=W, b=b, cost=float((out - task.Y).pow(2).sum(1).mean()),
        out_test=models.mlp_trace(W, b, task.X_test).output, sqnorm=float(models.param_sqnorm([*W, *b])),
        tail=float(tail), kW=int(structure.layer_ranks(W)[structure.middle_index(depth)]),
        kJ=int(spectra.thresholded_rank(J, 0.1, "rel").double().median()),
        spectra=[spectra.singular_values(w) for w in W])
    row["test"] = float((row["out_test"] - task.Y_test).pow(2).sum(1).mean())
    row["fits"], row["converged"] = row["cost"] < fit, row["tail"] < conv
    row["collapsed"] = row["cost"] > collapse
    if row["fits"]:
        row["logJ"] = float(2 * spectra.log_pseudo_determinant(J, k=max(row["kJ"], 1)).max())
    return row


def sweep_records(runs: Mapping[int, AdamRun], task: Task, *, fit: float = 0.1, conv: float = 0.01,
                  tail_fraction: float = 0.2, collapse: float = 0.5) -> list[dict[str, Any]]:
    """:func:`network_record` for every member of every depth (in the order of ``runs``, then of the
    members; ``seed`` is the member's index), with the convergence measured by
    :meth:`AdamRun.tail_change` over the last ``tail_fraction`` of the steps."""
    rows = []
    for L, run in runs.items():
        tail = run.tail_change(tail_fraction)
        for i in range(run.size):
            W, b = run.member(i)
            rows.append(network_record(W, b, task, depth=L, seed=i, tail=float(tail[i]), fit=fit, conv=conv,
                                       collapse=collapse))
    return rows


def theorem6_measures(W: Tensors, b: Tensors, X: torch.Tensor, k: int, k_ref: int) -> dict[str, Any]:
    """Theorem 6's and Corollary 8's quantities for one network at rank ``k`` on the inputs ``X``.

    Keys: ``chain`` and ``thm6``, whether Theorem 3's finite-depth chain and Theorem 6's inequality
    (sum and counting) hold (:mod:`.bounds`; controls); ``budget = min_x B_k(x)``; ``d``, the
    per-layer ``d_k(W_l)``; ``share``, the fraction of layers with ``d_k <= 0.1``; ``far``, their
    complement's count; ``s_next``, the median over layers of ``s_{k+1}(W_l)`` (0 for a layer with
    ``k`` or fewer singular values); ``pre_next``, the median over the hidden layers of
    ``s_{k+1}(pre_l / sqrt(N))``; in the middle layer (:func:`.structure.middle_index`):
    ``rep_ratio = s_{k+1} / s_1`` and ``rep_ref = s_{k_ref+1} / s_1`` of the pre-activations,
    their ``neg_mass`` (:func:`.structure.negative_mass`) and ``d_mid = d_k(W_mid)``."""
    L = len(W)
    chain = bounds.theorem3_chain(W, b, X, k)
    t6 = bounds.theorem6_check(W, b, X, k)
    svs = [spectra.singular_values(w) for w in W]
    trace = models.mlp_trace(W, b, X)
    mid = structure.middle_index(L)
    sv_mid = structure.representation_singular_values(trace.pre[mid])
    return dict(
        chain=chain.holds, thm6=t6.sum_holds and t6.counting_holds(), budget=t6.budget, d=t6.d,
        share=float((t6.d <= 0.1).double().mean()), far=int((t6.d > 0.1).sum()),
        s_next=float(np.median([float(sv[k]) if len(sv) > k else 0.0 for sv in svs])),
        pre_next=float(np.median([float(structure.representation_singular_values(trace.pre[l])[k])
                                  for l in range(L - 1)])),
        rep_ratio=float(sv_mid[k] / sv_mid[0]), rep_ref=float(sv_mid[k_ref] / sv_mid[0]),
        neg_mass=float(structure.negative_mass(trace.pre[mid])), d_mid=float(t6.d[mid]))


def function_distance(a: torch.Tensor, b: torch.Tensor) -> float:
    """Root-mean-square distance ``(mean_i ||a_i - b_i||^2)^(1/2)`` between two functions' outputs
    (samples as rows)."""
    return float((a - b).pow(2).sum(1).mean().sqrt())


def distance_groups(nets: Sequence[Mapping[str, Any]], others: Sequence[Mapping[str, Any]] = (),
                    key: str = "out_test") -> tuple[list[float], list[float], list[float]]:
    """Distances (:func:`function_distance` of the outputs ``net[key]``) between the records
    ``nets``: over the pairs at the same depth ``net["L"]``, over the pairs at different depths, and
    from every net to every record of ``others``."""
    pairs = [(a, c) for i, a in enumerate(nets) for c in nets[i + 1:]]
    same = [function_distance(a[key], c[key]) for a, c in pairs if a["L"] == c["L"]]
    across = [function_distance(a[key], c[key]) for a, c in pairs if a["L"] != c["L"]]
    other = [function_distance(a[key], c[key]) for a in nets for c in others]
    return same, across, other


@dataclass
class CollapseTable:
    """``counts[cell][L]``: members of ``cell`` whose cost exceeds the threshold at depth ``L``;
    ``first[cell]``: the first depth at which more than half of them do, ``never`` (one grid step
    beyond the last depth) when no depth does."""

    counts: dict[Hashable, dict[int, int]]
    first: dict[Hashable, int]
    never: int


def collapse_table(costs: Mapping[int, Sequence[float]], cells: Sequence[Hashable],
                   threshold: float = 0.5) -> CollapseTable:
    """Collapse depths of a factorial: ``costs[L][j]`` is the final train cost of member ``j`` at
    depth ``L`` (depths in increasing order, at least two), ``cells[j]`` the cell of member ``j``;
    cells are listed in the order of their first member."""
    depths = list(costs)
    never = depths[-1] + (depths[-1] - depths[-2])
    counts: dict[Hashable, dict[int, int]] = {}
    first: dict[Hashable, int] = {}
    for cell in dict.fromkeys(cells):
        idx = [j for j, c in enumerate(cells) if c == cell]
        counts[cell] = {L: sum(costs[L][j] > threshold for j in idx) for L in depths}
        first[cell] = next((L for L in depths if 2 * counts[cell][L] > len(idx)), never)
    return CollapseTable(counts, first, never)
