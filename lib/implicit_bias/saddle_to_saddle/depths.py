"""Optimal escape directions across depths: the solver's cold restarts at each depth, warm starts
from the lifted optimum of the previous depth (Proposition 3.2's construction, perturbed and
optimised again), and the lifted network itself; and which depths' optima were found by the solver
rather than built by the lifting, and a summary of those optima's layer structure.

The lifted network's added layers are rank one and linear *by construction*, so a claim about the
structure of optima must not read a depth where the lift is the best network found:
:func:`cold_depths` lists the depths where the best cold restart (random start) reaches the best
speed, whose structure is the solver's finding; :func:`cold_structure` summarises it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from . import escape, lifting, structure
from .localized import speed, to_sphere


def optima_over_depths(X: torch.Tensor, G: torch.Tensor, depths: Sequence[int], *, width: int, restarts: int,
                       steps: int, warm_restarts: int, warm: bool = True, generator: torch.Generator | None = None,
                       **solver_kw: Any) -> dict[int, dict[str, Any]]:
    """The best escape direction found at each depth in ``depths`` (increasing). Per depth a dict
    with ``best`` (the network), ``speed``, ``structure`` (:func:`structure.layer_structure` on
    ``X``), ``source`` (``"cold"``, ``"warm"`` or ``"lift"``: where ``best`` comes from),
    ``cold_speed`` and ``cold_structure`` (the best cold restart's), ``speeds`` (all cold
    restarts) and ``result`` (the cold :class:`escape.EscapeDirections`); from the second depth on,
    with ``warm``, also ``lifted_speed`` and ``warm_speed``. ``solver_kw`` go to
    :func:`escape.solve_escape` (``lr``, ``lr_final``, ``normalized``, ...)."""
    out: dict[int, dict[str, Any]] = {}
    previous = None
    for L in depths:
        res = escape.solve_escape(X, G, depth=L, widths=width, restarts=restarts, steps=steps, generator=generator,
                                  **solver_kw)
        i = res.best()
        row: dict[str, Any] = dict(result=res, best=res.network(i), speed=float(res.speed[i]), speeds=res.speed,
                                   structure=structure.layer_structure(res.network(i), X), source="cold")
        row.update(cold_speed=row["speed"], cold_structure=row["structure"])
        if warm and previous is not None:
            lifted = lifting.lift(previous, X, G, L - len(previous))
            init = [W.unsqueeze(0).expand(warm_restarts, -1, -1).clone() for W in lifted]
            warm_res = escape.solve_escape(X, G, depth=L, widths=[lifted[0].shape[0]] * warm_restarts, init=init,
                                           jitter=1e-3, steps=steps, generator=generator, **solver_kw)
            row["lifted_speed"] = float(speed(lifted, X, G))
            row["warm_speed"] = float(warm_res.speed.max())
            if row["warm_speed"] > row["speed"]:
                j = warm_res.best()
                row.update(best=warm_res.network(j, trim=False), speed=row["warm_speed"], source="warm",
                           structure=structure.layer_structure(warm_res.network(j, trim=False), X))
            if row["lifted_speed"] > row["speed"]:             # re-optimising lost ground: keep the lift
                on_sphere = to_sphere(lifted)
                row.update(best=on_sphere, speed=float(speed(on_sphere, X, G)), source="lift",
                           structure=structure.layer_structure(on_sphere, X))
        out[L] = row
        previous = row["best"]
    return out


def cold_depths(rows: dict[int, dict[str, Any]], depths: Sequence[int], rtol: float = 2e-3) -> list[int]:
    """The depths among ``depths`` at which the best cold restart of :func:`optima_over_depths` is
    within a relative ``rtol`` of the best speed found: only there is the structure of an optimum
    (read from ``cold_structure``) the solver's finding rather than the lifting's construction."""
    return [L for L in depths if rows[L]["speed"] - rows[L]["cold_speed"] <= rtol * rows[L]["speed"]]


@dataclass
class ColdStructure:
    """The layer structure of the best cold restarts of :func:`optima_over_depths`, read at the
    depths where they reach the best speed (``depths``; :func:`cold_depths`). Maxima and minima
    over an empty set of depths are NaN.

    - ``first_tau``: the smallest ``tau(W_1)`` (a high-rank first layer when large);
    - ``later_tau``: the largest ``tau(W_l)``, ``l >= 2`` (rank one after the first layer when 0);
    - ``rank_tau``: the largest ``tau`` of any ``W_l`` or hidden ``Z^sigma_l`` (rank one everywhere);
    - ``linear_depths`` and ``later_nu``: the depths ``>= 4`` (those with a third hidden layer) and
      the largest ``nu_l``, ``l >= 3``, over them (the ReLU is the identity from layer 3 on when 0);
    - ``ratio_l14``: the largest ``l^(1/4) s_2/s_1`` of ``W_l``, ``l >= 2`` (at most 1 when
      ``s_1 >= l^(1/4) s_2``, the abstract's reading of Theorem 3.1);
    - ``slope12``: the largest log-log slope ``log(tau(W_2) / tau(W_1)) / log 2`` between the first
      two layers, with ``tau(W_2)`` floored at ``floor`` (compare Theorem 3.1's rate ``-1/2``), over
      the depths where the first layer is not rank one (``tau(W_1) > 0``; NaN if there is none).
    """

    depths: list[int]
    first_tau: float
    later_tau: float
    rank_tau: float
    linear_depths: list[int]
    later_nu: float
    ratio_l14: float
    slope12: float


def _quarter_powers(depth: int, dtype: torch.dtype) -> torch.Tensor:
    """``l^(1/4)`` for the layers ``l = 2..depth``."""
    return torch.arange(2, depth + 1, dtype=dtype).pow(0.25)


def cold_structure(rows: dict[int, dict[str, Any]], depths: Sequence[int], rtol: float = 2e-3,
                   floor: float = 1e-6) -> ColdStructure:
    """:class:`ColdStructure` of the rows of :func:`optima_over_depths` at the depths among
    ``depths`` that :func:`cold_depths` (with ``rtol``) keeps, read from ``cold_structure``."""
    cold = cold_depths(rows, depths, rtol)
    st = {L: rows[L]["cold_structure"] for L in cold}
    nan = float("nan")
    linear = [L for L in cold if L >= 4]
    return ColdStructure(
        depths=cold,
        first_tau=min((float(st[L].tau_W[0]) for L in cold), default=nan),
        later_tau=max((float(st[L].tau_W[1:].max()) for L in cold), default=nan),
        rank_tau=max((max(float(st[L].tau_W.max()), float(st[L].tau_Z.max())) for L in cold), default=nan),
        linear_depths=linear,
        later_nu=max((float(st[L].nu[2:].max()) for L in linear), default=nan),
        ratio_l14=max((float((st[L].ratio_W[1:] * _quarter_powers(L, st[L].ratio_W.dtype)).max()) for L in cold),
                      default=nan),
        slope12=max((math.log(max(float(st[L].tau_W[1]), floor) / float(st[L].tau_W[0])) / math.log(2)
                     for L in cold if float(st[L].tau_W[0]) > 0), default=nan))
