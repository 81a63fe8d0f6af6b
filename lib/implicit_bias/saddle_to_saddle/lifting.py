"""The depth-lifting construction of Proposition 3.2 (App. A.3): from a depth-``L`` network to a
depth-``(L+k)`` one with no larger squared norm (up to ``+k``) and no larger localized loss.

Collapse the last hidden layer onto its single best neuron ``i*`` (the one whose normalised
contribution ``Tr[G^T w_out sigma(w_in . z)]`` is most negative), scale it by ``sqrt(S)`` on each
side with ``S = sum_i ||W_L[:, i]|| ||W_{L-1}[i, :]||``, and pass the non-negative scalar through
``k`` identity-like layers ``e_1 e_1^T`` (on which ReLU is the identity). Then
``L_0(lifted) = S * min_i(...) <= L_0(theta)`` and ``||lifted||^2 = sum_{l<=L-2} ||W_l||^2 + 2S + k
<= ||theta||^2 + k`` by ``2ab <= a^2 + b^2``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch

from ..models import layer_activations
from .localized import localized_loss, squared_norm
from .structure import layer_structure


def lift(weights: Sequence[torch.Tensor], X: torch.Tensor, G: torch.Tensor, k: int = 1
         ) -> list[torch.Tensor]:
    """The depth-``(L+k)`` network of Proposition 3.2 built from ``weights`` (one network,
    ``(out, in)`` matrices, ``L >= 2``); the added hidden layers have the width of layer
    ``L-1`` (only their first unit is used)."""
    Ws = [W.detach() for W in weights]
    L = len(Ws)
    if L < 2 or k < 1:
        raise ValueError(f"need depth >= 2 and k >= 1, got depth {L}, k {k}")
    if any(W.dim() != 2 for W in Ws):
        raise ValueError("lift takes one network: (out, in) matrices")
    Z = X if L == 2 else layer_activations(Ws[: L - 2], X)[1][-1]    # Z^sigma_{L-2}, (N, n_{L-2})
    Z = torch.relu(Z) if L > 2 else Z
    W_in, W_out = Ws[L - 2], Ws[L - 1]                                # (n, n_{L-2}), (d_out, n)
    a = W_out.norm(dim=0)                                             # ||W_L[:, i]||
    b = W_in.norm(dim=1)                                              # ||W_{L-1}[i, :]||
    S = float((a * b).sum())
    alive = (a > 0) & (b > 0)
    if not bool(alive.any()):
        raise ValueError("every hidden neuron of the last layer has zero weight: nothing to lift")
    u = W_out / torch.where(a > 0, a, torch.ones_like(a))             # normalised columns
    v = W_in / torch.where(b > 0, b, torch.ones_like(b))[:, None]     # normalised rows
    act = torch.relu(Z @ v.T)                                         # (N, n)
    value = torch.einsum("nd,di,ni->i", G.to(Z.dtype), u, act)        # Tr[G^T u_i sigma(v_i z)]
    value = torch.where(alive, value, torch.full_like(value, float("inf")))
    i = int(torch.argmin(value))
    n = W_in.shape[0]
    e = torch.zeros(n, dtype=W_in.dtype)
    e[0] = 1.0
    new = Ws[: L - 2]
    new.append(S ** 0.5 * torch.outer(e, v[i]))
    new += [torch.outer(e, e) for _ in range(k)]
    new.append(S ** 0.5 * torch.outer(u[:, i], e))
    return new


@dataclass
class LiftCheck:
    """The largest deviations from Proposition 3.2 over the networks :func:`lift_check` lifted:
    ``rise``, of ``L_0(lifted) - L_0(theta)`` (``<= 0`` by the proposition); ``excess``, of
    ``||lifted||^2 - ||theta||^2 - k`` (``<= 0``); ``tail``, of ``tau(W_l)`` over the added layers
    and the last one and, for ``k >= 2``, ``nu_l`` over the added hidden layers (0: rank one, ReLU
    the identity); ``networks``, how many networks were lifted (each with every ``k``)."""

    rise: float
    excess: float
    tail: float
    networks: int


def lift_check(cases: Iterable[tuple[Sequence[torch.Tensor], torch.Tensor, torch.Tensor]],
               ks: Sequence[int] = (1, 2)) -> LiftCheck:
    """Apply :func:`lift` with every ``k`` in ``ks`` to each ``(weights, X, G)`` of ``cases`` (one
    network each) and measure the three properties of :class:`LiftCheck`."""
    rise, excess, tail, count = -float("inf"), -float("inf"), 0.0, 0
    for Ws, X, G in cases:
        L = len(Ws)
        count += 1
        for k in ks:
            new_w = lift(Ws, X, G, k)
            rise = max(rise, float(localized_loss(new_w, X, G) - localized_loss(Ws, X, G)))
            excess = max(excess, float(squared_norm(new_w)) - float(squared_norm(Ws)) - k)
            st = layer_structure(new_w, X)
            tail = max(tail, float(st.tau_W[L - 1:].max()), float(st.nu[L - 1:].max()) if k > 1 else 0.0)
    return LiftCheck(rise, excess, tail, count)
