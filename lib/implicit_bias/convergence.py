"""Convergence certificates: is a trained network at the end state a claim is about?

A claim about an end state (a minimum, a limit direction, a rank at convergence, the end of a
plateau) is read only where a certificate holds that **cannot pass by itself**. The usual change
test, "the relative change of ||theta||^2 over the last 20% of the steps is below 1%", passes by
itself under a decaying learning-rate schedule: once the rate has decayed, nothing moves, converged
or not. :func:`stationarity` instead continues training from the end point at a **fixed** learning
rate (the schedule's peak, or any rate the caller names) for a window of steps, on a copy, and
measures

- the relative change of a monitored quantity over the window (default ``||theta||^2``; a
  chapter may monitor the singular values it reads, a margin, a loss), and
- the relative gradient norm at the end point, ``||grad L|| * lr * window / ||theta||``: how far,
  relative to the parameters, gradient descent would move them over the window at that rate.

A run is certified when both are below their tolerances. Stationarity of a regularised loss at a
fixed rate is the right notion for minima (weight decay, L2); for directional limits of
homogeneous networks (unregularised, loss -> 0) monitor the normalised quantity (e.g. the
normalised margin or the direction ``theta / ||theta||``), which converges while ``||theta||``
grows. For KKT points of the max-margin problem see :mod:`implicit_bias.homogeneous`.

A single tolerance is itself a knife edge: a run whose change sits at 0.99 x ``tol`` on one machine
sits at 1.01 x ``tol`` on another. :func:`band_class` therefore reads a change against a **margin
band**: *certified* below ``tol / band``, *not certified* above ``tol * band``, *undecided* in
between; :func:`edge_moves` and :func:`class_variants` list the members a small move would put in
another class, so that a verdict read on the classes can be checked against every such move.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

Params = Sequence[torch.Tensor]


@dataclass(frozen=True)
class Certificate:
    """The outcome of :func:`stationarity` (one entry per member when ``quantity`` is a vector)."""

    certified: torch.Tensor  # bool, per member
    rel_change: torch.Tensor  # relative change of the quantity over the window, per member
    rel_grad: float  # ||grad L|| * lr * window / ||theta|| at the end point (all members together)
    lr: float
    window: int
    tol: float

    def classes(self, band: float = 2.0) -> list[str]:
        """The class of every member against ``tol`` with a margin ``band`` (:func:`band_class`)."""
        return band_classes(self.rel_change, self.tol, band)

    @property
    def all_certified(self) -> bool:
        """Whether every member is certified."""
        return bool(self.certified.all())

    def describe(self) -> str:
        """One line for the page: how many members are certified, at which rate and window, the
        worst relative change and the relative gradient."""
        n = int(self.certified.numel())
        return (f"{int(self.certified.sum())} of {n} certified at a fixed lr {self.lr:g} over {self.window} "
                f"steps (relative change <= {self.tol:g}; worst {float(self.rel_change.max()):.3g}; "
                f"relative gradient {self.rel_grad:.3g})")


def _sq_norm(params: Params) -> torch.Tensor:
    return sum((p.detach() ** 2).sum() for p in params)


def stationarity(loss: Callable[[list[torch.Tensor]], torch.Tensor], params: Params, lr: float,
                 window: int, *, quantity: Callable[[list[torch.Tensor]], torch.Tensor] | None = None,
                 tol: float = 0.01, grad_tol: float | None = None) -> Certificate:
    """Continue plain gradient descent on ``loss`` from ``params`` (copied; the originals are not
    touched) at the fixed rate ``lr`` for ``window`` steps, and certify the members whose
    ``quantity`` (default: ``||theta||^2``, a scalar) changes by at most ``tol`` relative to its
    size; with ``grad_tol``, also require the relative gradient ``||grad L|| * lr * window /
    ||theta||`` (all members together) to be at most ``grad_tol``.

    ``loss`` takes the list of parameter tensors and returns a scalar (the sum over members for an
    ensemble, so each member gets its own gradient); ``quantity`` returns a tensor (one value per
    member, or a scalar). A run whose learning rate had decayed to almost nothing is re-tested at
    ``lr``: a certificate never passes just because the schedule stopped the run.
    """
    if window < 1 or not lr > 0:
        raise ValueError(f"stationarity needs window >= 1 and lr > 0, got window={window}, lr={lr}")
    measure = quantity or (lambda ps: _sq_norm(ps))
    theta = [p.detach().clone().requires_grad_(True) for p in params]
    with torch.no_grad():
        start = measure(theta).detach().clone()
    grads = torch.autograd.grad(loss(theta), theta, allow_unused=True)
    grad_norm = float(torch.sqrt(sum((g ** 2).sum() for g in grads if g is not None)))
    rel_grad = grad_norm * lr * window / max(float(torch.sqrt(_sq_norm(theta))), 1e-30)
    for _ in range(window):
        grads = torch.autograd.grad(loss(theta), theta, allow_unused=True)
        with torch.no_grad():
            for p, g in zip(theta, grads):
                if g is not None:
                    p -= lr * g
    with torch.no_grad():
        end = measure(theta).detach()
    if not torch.isfinite(end).all():
        raise FloatingPointError(f"the certificate's run diverged at lr={lr:g}: choose a smaller fixed rate")
    rel = (end - start).abs() / start.abs().clamp_min(1e-30)
    certified = rel <= tol
    if grad_tol is not None:
        certified = certified & torch.tensor(rel_grad <= grad_tol)
    return Certificate(certified.reshape(-1), rel.reshape(-1), rel_grad, lr, window, tol)


# ---------------------------------------------------------------------------------------------
# A margin band: a certificate that does not flip on a knife edge
# ---------------------------------------------------------------------------------------------
CERTIFIED, UNDECIDED, NOT_CERTIFIED = "certified", "undecided", "not certified"
CLASSES = (CERTIFIED, UNDECIDED, NOT_CERTIFIED)


def band_class(change: float, tol: float, band: float = 2.0) -> str:
    """The class of one measured change against the tolerance ``tol`` with a margin ``band > 1``:
    :data:`CERTIFIED` below ``tol / band``, :data:`NOT_CERTIFIED` above ``tol * band``,
    :data:`UNDECIDED` in between (edges included), and :data:`NOT_CERTIFIED` for a non-finite
    change.

    A single threshold decides a network at 0.99 x ``tol`` one way and one at 1.01 x ``tol`` the
    other, so a change of the machine's kernels (which moves a trained network's change by a few
    percent of its size) can move it across. ``band`` should cover that variation (measure the
    change of the same runs under another kernel); only the networks clear of the band on either
    side are read as certified or not."""
    if not tol > 0 or not band > 1:
        raise ValueError(f"band_class needs tol > 0 and band > 1, got tol={tol}, band={band}")
    change = float(change)
    if not math.isfinite(change):
        return NOT_CERTIFIED
    if change < tol / band:
        return CERTIFIED
    if change > tol * band:
        return NOT_CERTIFIED
    return UNDECIDED


def band_classes(changes: Sequence[float] | torch.Tensor, tol: float, band: float = 2.0) -> list[str]:
    """:func:`band_class` of every change (a sequence or a tensor, flattened)."""
    values = changes.reshape(-1).tolist() if isinstance(changes, torch.Tensor) else list(changes)
    return [band_class(c, tol, band) for c in values]


def class_counts(classes: Sequence[str]) -> dict[str, int]:
    """How many of ``classes`` fall in each of :data:`CLASSES` (in that order, zeros included)."""
    return {c: sum(x == c for x in classes) for c in CLASSES}


def edge_moves(changes: Sequence[float] | torch.Tensor, tol: float, band: float = 2.0,
               shift: float = 0.05) -> list[tuple[int, str]]:
    """The members whose class changes when their change alone moves by ``shift * tol`` (up or
    down), with the class they would move to: ``[(index, class), ...]``. A verdict read on the
    classes is stable against one network moving by that much when it is the same under every
    move listed here (see :func:`class_variants`)."""
    values = changes.reshape(-1).tolist() if isinstance(changes, torch.Tensor) else list(changes)
    out = []
    for i, c in enumerate(values):
        here = band_class(c, tol, band)
        for moved in (c - shift * tol, c + shift * tol):
            other = band_class(moved, tol, band)
            if other != here and (i, other) not in out:
                out.append((i, other))
    return out


def class_variants(changes: Sequence[float] | torch.Tensor, tol: float, band: float = 2.0,
                   shift: float = 0.05) -> list[list[str]]:
    """The classes of ``changes`` (first), then one variant per entry of :func:`edge_moves`: the
    same classes with that one member moved to its neighbouring class."""
    base = band_classes(changes, tol, band)
    variants = [base]
    for i, other in edge_moves(changes, tol, band, shift):
        v = list(base)
        v[i] = other
        variants.append(v)
    return variants
