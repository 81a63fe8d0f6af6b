"""Certified optimal escape speeds for data in the plane (depths 2 and 3), by a bound over the
sign patterns of the second layer: linear programs whose dual solutions are certificates.

Setting: inputs ``x_j = r_j (cos a_j, sin a_j)`` in the plane (rows of ``X``, ``N`` small), one
output, ``g = -G`` (``G = grad C(0)``, shape ``(N, 1)``), speed ``s = -L_0 = <g, f_theta(X)>`` on
the sphere ``||theta||^2 = L``.

**The first-layer features.** A unit first-layer neuron ``w_phi = (cos phi, sin phi)`` gives the
feature vector ``Phi(phi)_j = sigma(w_phi . x_j) = r_j sigma(cos(phi - a_j))``. For any ``c`` in
``R^N``, ``h(c) = max_phi |c . Phi(phi)|`` is computed exactly (:func:`feature_support`): between
consecutive kinks ``a_j +- pi/2`` the active set is fixed and ``c . Phi`` is a sinusoid, whose
largest modulus on the arc is at an end or at its peak.

**Depth 2** (:func:`depth2_speed`). ``s = sum_i W_2[i] ||W_1[i]|| <g, Phi(w_i)>`` and
``sum_i |W_2[i]| ||W_1[i]|| <= 1`` on the sphere (AM-GM), so ``s*(2) = h(g)`` exactly: one
neuron is optimal.

**Depth 3** (:func:`depth3_certificate`). Write the second-layer pre-activations of unit ``k`` as
``z_k = sum_i W_2[k, i] ||W_1[i]|| Phi(w_i) = P_k zt_k`` with ``P_k = sum_i |W_2[k, i]|
||W_1[i]||`` and ``zt_k`` in ``K``, the symmetric convex hull of the features. Since
``sum_k |W_3[k]| P_k <= ||W_3|| ||W_2||_F ||W_1||_F <= 1``, every width gives

    s*(3) <= V = max over zt in K of |<g, sigma(zt)>|,

with equality for wide enough networks. On the closed orthant ``C_S`` of a sign pattern ``S``
(``zt_j >= 0`` for ``j`` in ``S``, ``<= 0`` otherwise) ``<a, sigma(zt)> = <a_S, zt>`` is linear
(``a = +-g``, ``a_S`` zero outside ``S``). For any ``lambda >= 0``,
``<a_S, z> <= <a_S + lambda o s, z> <= h(a_S + lambda o s)`` on ``K`` cap ``C_S`` (``s_j = +-1``
the pattern's signs): every feasible ``c = a_S + lambda o s`` (``c_j >= a_j`` on ``S``,
``c_j <= 0`` off ``S``) is a **dual certificate**, and ``V <= max_{a, S} min_c h(c)``. The best
``c`` of each pattern is found by a linear program on a grid of angles (scipy's ``linprog``,
HiGHS; the grid contains the kinks), whose optimal value is also the exact optimum over the
polytope spanned by the grid's features: a lower bound on ``V`` attained by a network. The certificate itself is evaluated
exactly with :func:`feature_support`. A grid leaves the certificate slightly above the optimum;
symmetries of the data (orthogonal maps permuting the points) close the gap: the images of every
pattern's solution under them are certificates too (``h`` is invariant), and so is the average of
the feasible ones (``h`` is convex).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch


def _polar(X: torch.Tensor | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"the certificates need inputs in the plane, shape (N, 2); got {X.shape}")
    return np.hypot(X[:, 0], X[:, 1]), np.arctan2(X[:, 1], X[:, 0])


def features(phi: np.ndarray | float, X: torch.Tensor | np.ndarray) -> np.ndarray:
    """``Phi(phi)`` ``(len(phi), N)``: ``sigma(w_phi . x_j)`` for unit neurons at angles ``phi``."""
    r, a = _polar(X)
    phi = np.atleast_1d(np.asarray(phi, dtype=np.float64))
    return r[None, :] * np.maximum(np.cos(phi[:, None] - a[None, :]), 0.0)


def feature_support(c: np.ndarray, X: torch.Tensor | np.ndarray) -> tuple[float, float]:
    """``(max_phi |c . Phi(phi)|, an angle where it is reached)``, exactly (see the module
    docstring): the candidates are the kinks and the peaks of the sinusoid on each arc."""
    r, a = _polar(X)
    c = np.asarray(c, dtype=np.float64)
    kinks = np.sort(np.concatenate([(a + math.pi / 2) % (2 * math.pi), (a - math.pi / 2) % (2 * math.pi)]))
    ends = np.concatenate([kinks, kinks[:1] + 2 * math.pi])
    cands = list(kinks)
    for a0, a1 in zip(ends[:-1], ends[1:]):
        active = np.cos((a0 + a1) / 2 - a) > 0
        A = float(np.sum(c[active] * r[active] * np.cos(a[active])))
        B = float(np.sum(c[active] * r[active] * np.sin(a[active])))
        peak = math.atan2(B, A)
        for p in (peak, peak + math.pi):
            q = (p - a0) % (2 * math.pi) + a0
            if q <= a1:
                cands.append(q)
    phis = np.array(cands)
    vals = np.abs(features(phis, X) @ c)
    i = int(np.argmax(vals))
    return float(vals[i]), float(phis[i] % (2 * math.pi))


def depth2_speed(X: torch.Tensor | np.ndarray, G: torch.Tensor | np.ndarray) -> float:
    """The optimal escape speed at depth 2, exactly: ``s*(2) = max_phi |<g, Phi(phi)>|``."""
    g = -np.asarray(G, dtype=np.float64).reshape(-1)
    return feature_support(g, X)[0]


def symmetries(X: torch.Tensor | np.ndarray, tol: float = 1e-12) -> list[np.ndarray]:
    """Permutations ``p`` of the points induced by an orthogonal map ``Q`` of the plane
    (``Q x_j = x_{p(j)}``), found among the maps that send the first point onto another point:
    rotations, and reflections. For such ``p``, ``h(c[p]) = h(c)``."""
    Xn = np.asarray(X, dtype=np.float64)
    r, a = _polar(Xn)
    found = []
    for k in range(len(Xn)):
        if abs(r[k] - r[0]) > tol:
            continue
        for reflect in (False, True):
            # Q: rotation by t, or reflection phi -> t - phi; sends x_0 to x_k
            t = a[k] + a[0] if reflect else a[k] - a[0]
            new = (t - a) if reflect else (a + t)
            img = np.stack([r * np.cos(new), r * np.sin(new)], 1)
            dist = np.linalg.norm(img[:, None, :] - Xn[None, :, :], axis=-1)
            p = dist.argmin(1)
            if np.all(dist[np.arange(len(Xn)), p] < tol * max(1.0, float(r.max()))) and len(set(p)) == len(p):
                if not any(np.array_equal(p, q) for q in found):
                    found.append(p)
    return found


@dataclass
class Depth3Certificate:
    """Result of :func:`depth3_certificate`. ``upper``: the certified bound ``s*(3) <= upper``
    (any width); ``lower``: the linear programs' best value, ``s*(3) >= lower`` (the speed of a
    network built from the grid's features); ``per_pattern``: ``(sign, pattern, certified
    value)`` for each of the ``2 * 2^N`` problems; ``grid``: the number of angles."""

    upper: float
    lower: float
    per_pattern: list[tuple[int, tuple[int, ...], float]]
    grid: int

    @property
    def tight_patterns(self) -> int:
        """Number of (sign, pattern) problems whose certificate is within 1e-9 of ``upper``."""
        return sum(v >= self.upper - 1e-9 for *_, v in self.per_pattern)


def depth3_certificate(X: torch.Tensor | np.ndarray, G: torch.Tensor | np.ndarray, *, grid: int = 360,
                       perms: Sequence[np.ndarray] | None = None) -> Depth3Certificate:
    """Certify the optimal depth-3 escape speed of planar data (module docstring): one linear
    program per sign of the output and sign pattern of the second layer on the ``N`` points
    (``2 * 2^N`` programs; ``N <= 12``). ``perms``: symmetries of the data (default
    :func:`symmetries`), used to close the grid's gap."""
    from scipy.optimize import linprog

    g = -np.asarray(G, dtype=np.float64).reshape(-1)
    N = len(g)
    if N > 12:
        raise ValueError(f"2^N sign patterns: N = {N} is too many")
    perms = list(symmetries(X)) if perms is None else [np.asarray(p) for p in perms]
    _, angles = _polar(X)
    kinks = np.concatenate([(angles + math.pi / 2) % (2 * math.pi), (angles - math.pi / 2) % (2 * math.pi)])
    phi = np.concatenate([np.linspace(0.0, 2 * math.pi, grid, endpoint=False), kinks])
    F = features(phi, X)                                              # (angles, N)
    problems, lower = [], -math.inf
    cost = np.zeros(N + 1)
    cost[-1] = 1.0
    for sign in (1, -1):
        a = sign * g
        for pattern in itertools.product((0, 1), repeat=N):
            S = np.array(pattern)
            s = np.where(S == 1, 1.0, -1.0)
            aS = a * S
            # variables (lambda, t): minimise t subject to |(a_S + lambda o s) . Phi_m| <= t
            Fs = F * s[None, :]
            ones = np.ones((len(phi), 1))
            A_ub = np.vstack([np.hstack([Fs, -ones]), np.hstack([-Fs, -ones])])
            b_ub = np.concatenate([-F @ aS, F @ aS])
            res = linprog(cost, A_ub=A_ub, b_ub=b_ub, bounds=[(0, None)] * N + [(None, None)], method="highs")
            if res.status != 0:
                raise RuntimeError(f"linear program failed for pattern {pattern}: {res.message}")
            lower = max(lower, float(res.fun))
            problems.append((sign, pattern, a, S, aS + res.x[:N] * s))
    cands = np.array([c for *_, c in problems])
    images = np.concatenate([cands[:, p] for p in perms] or [cands])
    images = np.concatenate([images, -images])
    per_pattern, upper = [], -math.inf
    for sign, pattern, a, S, c in problems:
        lo = np.where(S == 1, a, -np.inf)
        hi = np.where(S == 1, np.inf, 0.0)
        best = feature_support(c, X)[0]
        feasible = images[np.all((images >= lo) & (images <= hi), axis=1)]
        if len(feasible):
            best = min(best, feature_support(np.clip(feasible.mean(0), lo, hi), X)[0])
        per_pattern.append((sign, pattern, best))
        upper = max(upper, best)
    return Depth3Certificate(upper=upper, lower=lower, per_pattern=per_pattern, grid=grid)
