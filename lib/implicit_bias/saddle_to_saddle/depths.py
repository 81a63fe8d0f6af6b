"""Optimal escape directions across depths: the solver's cold restarts at each depth, warm starts
from the lifted optimum of the previous depth (Proposition 3.2's construction, perturbed and
optimised again), and the lifted network itself; and which depths' optima were found by the solver
rather than built by the lifting.

The lifted network's added layers are rank one and linear *by construction*, so a claim about the
structure of optima must not read a depth where the lift is the best network found:
:func:`cold_depths` lists the depths where the best cold restart (random start) reaches the best
speed, whose structure is the solver's finding.
"""

from __future__ import annotations

from collections.abc import Sequence
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
