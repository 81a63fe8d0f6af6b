"""Reading the depth sweep of Figure 1 (``chapters/bottleneck/02_depth_sweep``) on a set of networks.

The page trains networks at many depths and reads end-state claims from them: the longest range
of depths whose middle weights have a constant rank and the affine law of ``||theta||^2`` over it
(Figure 1(a)), the rates of Theorem 6 and Corollary 8 across the depths where most seeds compute a
function of the same rank, and the fitting rank-underestimating minima. A claim about an end state
is only as good as the networks it is read on, so everything here reads a *set* of networks (the
records of :func:`.measures.sweep_records`): the page reads it on all of them and again on the
networks a stationarity certificate classes as certified (and as certified or undecided), under
every move of one network across an edge of the certificate's band
(:func:`implicit_bias.convergence.class_variants`), and calls a row *resolved* only when its
verdict is the same in every reading (:func:`verdict_checks`).

- :func:`read_sweep`: the ranges, the affine law, the function distances and the rates of one set;
- :func:`certify_sweep`: the stationarity certificate of every network, classed with a margin band;
- :class:`Region`, :func:`verdict_checks` and :func:`row_status`: a row's passing region, its
  verdict across readings, and whether it is resolved at this budget;
- :func:`cutoff_ranks` and :func:`collapse_orderings`: the rank cutoff's neighbours, the factorial;
- :func:`kernel_spread`: how far the certificate moves under another CPU kernel setting (committed
  in ``book/data/bottleneck_certificate_kernels.json``), which sets the width of its band;
- :func:`plot_norms` and :func:`plot_spectra`: Figure 1(a) and 1(b) redrawn.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import convergence, plotting
from . import measures, structure, training

Record = dict[str, Any]


@dataclass
class SweepReading:
    """What :func:`read_sweep` reads from a set of networks (see there for each field)."""

    nets: list[Record]
    fitting: list[Record]
    k_fun: int
    by_depth: dict[int, list[Record]]
    fun_depths: list[int]
    w_rank: dict[int, int]
    runs_w: list[list[int]]
    law_depths: list[int]
    k_law: int
    law: structure.AffineLaw | None
    range_nets: list[Record]
    other_rank: list[Record]
    distances: tuple[list[float], list[float], list[float]]
    rate: dict[str, dict[int, float]] = field(default_factory=dict)

    def median(self, key: str, L: int) -> float:
        """The median of ``key`` over the networks of depth ``L`` that qualify (:attr:`by_depth`)."""
        return measures.median_or_nan([r[key] for r in self.by_depth.get(L, [])])

    def slope(self, key: str) -> float:
        """Log-log slope in ``L`` of the depth medians :attr:`rate` ``[key]`` over :attr:`fun_depths`
        (``nan`` with fewer than two depths)."""
        if len(self.fun_depths) < 2:
            return math.nan
        return structure.loglog_slope(self.fun_depths, [self.rate[key][L] for L in self.fun_depths])

    def describe_rates(self) -> str:
        """Lines for the page: the depth medians of :attr:`rate` and their log-log slopes."""
        labels = {"budget": "min_x B_k(x)", "share": "share of layers with d_k <= 0.1",
                  "s_next": "median_l s_(k+1)(W_l)",
                  "far": "layers with d_k > 0.1", "pre_next": "sqrt(L) median_l s_(k+1)(pre_l)"}
        lines = [f"{labels[key]:34s}: " + ", ".join(f"L={L}: {v:.3f}" for L, v in self.rate[key].items())
                 for key in RATE_KEYS]
        return "\n".join(lines + ["log-log slopes: " + ", ".join(f"{labels[k]} {self.slope(k):.2f}"
                                                                 for k in ("budget", "s_next", "pre_next"))])


RATE_KEYS = ("budget", "share", "s_next", "far", "pre_next")
KERNELS_PATH = Path("book") / "data" / "bottleneck_certificate_kernels.json"


def kernel_spread(root: Path, band: float) -> dict[str, Any] | None:
    """The committed measurement of the certificate under two CPU kernel settings (``root /``
    :data:`KERNELS_PATH`: ``{"settings": {name: description}, "changes": {name: [per network]},
    "tol", "seed"}``, the same page and seed executed under each setting, training included),
    summarised: ``n`` networks, ``max_ratio`` and ``median_ratio`` of the larger to the smaller
    change per network, ``moved`` (networks whose class against ``tol`` with the margin ``band``
    differs between the settings), ``jumps`` (of those, certified under one and not certified under
    the other), ``single`` (networks on different sides of the single threshold ``tol``) and
    ``settings``; ``None`` when the file does not exist."""
    path = Path(root) / KERNELS_PATH
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    a, b = (data["changes"][name] for name in data["settings"])
    tol = data["tol"]
    ca, cb = convergence.band_classes(a, tol, band), convergence.band_classes(b, tol, band)
    ratios = [max(x, y) / min(x, y) for x, y in zip(a, b)]
    return {"n": len(ratios), "max_ratio": max(ratios), "median_ratio": float(np.median(ratios)),
            "moved": sum(x != y for x, y in zip(ca, cb)),
            "jumps": sum({x, y} == {convergence.CERTIFIED, convergence.NOT_CERTIFIED} for x, y in zip(ca, cb)),
            "single": sum((x < tol) != (y < tol) for x, y in zip(a, b)), "settings": data["settings"],
            "seed": data["seed"]}


@dataclass
class SweepCertificate:
    """:func:`certify_sweep`'s outcome, per network in the order of the records: ``changes``
    (relative change of ``||theta||^2`` over the certificate's window), ``classes``
    (:func:`implicit_bias.convergence.band_classes`), ``variants``
    (:func:`implicit_bias.convergence.class_variants`: the classes, then each one-network move by
    ``shift`` times the tolerance across an edge of the band), ``counts`` (of the three classes,
    overall and ``per_depth``) and ``edge`` (one line per such move)."""

    changes: list[float]
    classes: list[str]
    variants: list[list[str]]
    counts: dict[str, int]
    per_depth: dict[int, dict[str, int]]
    edge: list[str]


def certify_sweep(runs: Mapping[int, training.AdamRun], rows: Sequence[Record], X: Any, Y: Any, lam: float, *,
                  lr: float, window: int, tol: float, band: float, shift: float = 0.05) -> SweepCertificate:
    """:func:`.training.certify` every depth of ``runs`` (Adam continued at the fixed rate ``lr`` for
    ``window`` steps) and class each network of ``rows`` (records with ``L`` and ``seed``, the
    member's index) against ``tol`` with the margin ``band``; also sets ``r["cert"]`` and
    ``r["cls"]`` on every record."""
    by_depth = {L: training.certify(run, X, Y, lam, lr=lr, window=window).tolist() for L, run in runs.items()}
    changes = [by_depth[r["L"]][r["seed"]] for r in rows]
    classes = convergence.band_classes(changes, tol, band)
    for r, c, v in zip(rows, classes, changes):
        r["cert"], r["cls"] = v, c
    per_depth = {L: convergence.class_counts([r["cls"] for r in rows if r["L"] == L]) for L in runs}
    edge = [f"L = {rows[i]['L']}, seed {rows[i]['seed']} ({changes[i]:.2%}, could be {c})"
            for i, c in convergence.edge_moves(changes, tol, band, shift)]
    return SweepCertificate(changes, classes, convergence.class_variants(changes, tol, band, shift),
                            convergence.class_counts(classes), per_depth, edge)


def read_sweep(nets: Sequence[Record], depths: Sequence[int], seeds: int) -> SweepReading:
    """Read the networks ``nets`` (records of :func:`.measures.sweep_records`, those that fit
    carrying :func:`.measures.theorem6_measures`) of a sweep over ``depths`` with ``seeds``
    networks per depth.

    ``fitting``: the networks that fit; ``k_fun``: the most common rank of their functions; a depth
    *qualifies* (``fun_depths``, its networks ``by_depth``) when more than half of its ``seeds``
    networks fit, pass the change test (``converged``) and compute a rank-``k_fun`` function;
    ``w_rank``: the median count of the middle weight there (Jacot's rank); ``runs_w``: the runs of
    consecutive grid depths with the same ``w_rank``; ``law_depths``: the longest one, of rank
    ``k_law``, with the affine law through its depth medians of ``||theta||^2`` (``law``, ``None``
    below three depths); ``distances``: :func:`.measures.distance_groups` of the range's networks
    and the fitting ``other_rank`` ones; ``rate``: the depth medians of Theorem 6's and Corollary
    8's quantities (:data:`RATE_KEYS`, ``pre_next`` times ``sqrt(L)``)."""
    nets = list(nets)
    fitting = [r for r in nets if r["fits"]]
    k_fun = int(np.bincount([r["kJ"] for r in fitting]).argmax()) if fitting else 0
    by_depth = {L: [r for r in fitting if r["converged"] and r["kJ"] == k_fun and r["L"] == L] for L in depths}
    fun_depths = [L for L in depths if 2 * len(by_depth[L]) > seeds]
    w_rank = {L: int(round(float(np.median([r["kW"] for r in by_depth[L]])))) for L in fun_depths}
    runs_w = structure.constant_runs(list(depths), w_rank)
    law_depths = list(max(runs_w, key=len)) if runs_w else []
    k_law = w_rank[law_depths[0]] if law_depths else 0
    med_sq = [float(np.median([r["sqnorm"] for r in by_depth[L]])) for L in law_depths]
    law = structure.affine_law(law_depths, med_sq) if len(law_depths) >= 3 else None
    range_nets = [r for L in law_depths for r in by_depth[L]]
    other_rank = [r for r in fitting if r["kJ"] != k_fun]
    reading = SweepReading(nets, fitting, k_fun, by_depth, fun_depths, w_rank, runs_w, law_depths, k_law, law,
                           range_nets, other_rank, measures.distance_groups(range_nets, other_rank))
    reading.rate = {key: {L: reading.median(key, L) * (math.sqrt(L) if key == "pre_next" else 1.0)
                          for L in fun_depths} for key in RATE_KEYS}
    return reading


@dataclass(frozen=True)
class Region:
    """A row's passing region, as the ledger reads it: ``lo < value < hi`` (an open side when
    ``None``), or ``lo <= value <= hi`` when ``closed``; a non-finite value never passes."""

    lo: float | None = None
    hi: float | None = None
    closed: bool = False

    def passes(self, value: float) -> bool:
        """Whether ``value`` lies in the region."""
        if value is None or not math.isfinite(value):
            return False
        if self.closed:
            return (self.lo is None or value >= self.lo) and (self.hi is None or value <= self.hi)
        return (self.lo is None or value > self.lo) and (self.hi is None or value < self.hi)


@dataclass
class VerdictCheck:
    """One row read on every set (:func:`verdict_checks`): ``values[name]`` and ``verdicts[name]``
    per reading (``"all"``, then ``"certified or undecided"`` and ``"certified"`` of each class
    variant, the variants after the first suffixed ``" (move i)"``); ``enough``: whether more than
    ``min_share`` of the networks are certified in every variant. ``resolved`` when there are
    enough, every value is finite and every verdict is the first one's."""

    values: dict[str, float]
    verdicts: dict[str, bool]
    enough: bool = True

    @property
    def resolved(self) -> bool:
        first = self.verdicts["all"]
        finite = all(math.isfinite(v) for v in self.values.values())
        return self.enough and finite and all(v == first for v in self.verdicts.values())


# the readings of a row besides "all": the networks kept in each (by their class)
SUBSETS = {f"{convergence.CERTIFIED} or {convergence.UNDECIDED}": (convergence.CERTIFIED, convergence.UNDECIDED),
           convergence.CERTIFIED: (convergence.CERTIFIED,)}


def verdict_checks(nets: Sequence[Record], variants: Sequence[Sequence[str]],
                   read: Callable[[list[Record]], Mapping[str, tuple[float, Region]]],
                   min_share: float = 0.5) -> dict[str, VerdictCheck]:
    """Every row of ``read`` (a function of a set of networks returning, per row id, its value and
    its passing region) read on all of ``nets``, then, for every class assignment of
    ``variants`` (:func:`implicit_bias.convergence.class_variants`, one class per network in the
    order of ``nets``), on the networks of each of :data:`SUBSETS`. A row whose verdict is the
    same in every reading does not depend on which networks the certificate passes, nor on one
    network moving across an edge of its band; it is *resolved* (:attr:`VerdictCheck.resolved`)
    when, besides, more than ``min_share`` of the networks are certified in every variant (fewer,
    and the certified ones are a selection, not the sweep)."""
    base = read(list(nets))
    enough = all(sum(c == convergence.CERTIFIED for c in classes) > min_share * len(nets) for classes in variants)
    checks = {rid: VerdictCheck({"all": float(v)}, {"all": region.passes(v)}, enough)
              for rid, (v, region) in base.items()}
    for j, classes in enumerate(variants):
        if len(classes) != len(nets):
            raise ValueError(f"variant {j} has {len(classes)} classes for {len(nets)} networks")
        for name, keep in SUBSETS.items():
            label = name if j == 0 else f"{name} (move {j})"
            got = read([r for r, c in zip(nets, classes) if c in keep])
            for rid, (v, region) in got.items():
                checks[rid].values[label] = float(v)
                checks[rid].verdicts[label] = region.passes(v)
    return checks


def row_status(check: VerdictCheck, budget_runs: Mapping[str, Mapping[str, Mapping[str, Any]]], rid: str,
               bearing: str) -> tuple[str, str]:
    """``(prefix of the statement, bearing)`` of an end-state row: ``("", bearing)`` when it is
    resolved (:attr:`VerdictCheck.resolved`) and every committed budget run (``budget_runs[run][rid]``)
    gives its verdict; else ``("not resolved at this budget (why): ", "qualifies")``."""
    verdict = "PASS" if check.verdicts["all"] else "FAIL"
    why = ([] if check.enough else ["at most half the networks certified"]) + (
        [] if len(set(check.verdicts.values())) == 1 else ["the verdict depends on which networks are certified"]) + (
        [] if all(map(math.isfinite, check.values.values())) else ["not computable on the certified networks"]) + [
        f"{run}: {c[rid]['verdict']} {c[rid]['measured']}" for run, c in budget_runs.items()
        if c.get(rid, {}).get("verdict", verdict) != verdict]
    return (f"not resolved at this budget ({'; '.join(why)}): ", "qualifies") if why else ("", bearing)


def cutoff_ranks(rows: Sequence[Record], depths: Sequence[int], cuts: Sequence[float],
                 k: int) -> tuple[dict[float, dict[int, float]], dict[float, int]]:
    """The middle weight's count at other rank cutoffs (analysis only: the same networks):
    ``(ranks, under)``, ``ranks[t][L]`` the median count of singular values above ``t`` over the
    fitting networks of depth ``L``, ``under[t]`` the fitting networks with fewer than ``k``."""
    mid = lambda r, t: int(structure.layer_ranks(r["W"], t)[structure.middle_index(r["L"])])
    fit = [r for r in rows if r["fits"]]
    ranks = {t: {L: measures.median_or_nan([mid(r, t) for r in fit if r["L"] == L]) for L in depths} for t in cuts}
    return ranks, {t: sum(mid(r, t) < k for r in fit) for t in cuts}


def describe_collapse(table: measures.CollapseTable, per_cell: int) -> str:
    """Lines for the page: per cell of the factorial, the members (of ``per_cell``) that collapsed
    at each depth and the first collapse depth."""
    last = max(next(iter(table.counts.values())))
    return "\n".join(f"  {name:16s} lambda = {lam:g}: {n_col} (of {per_cell}); first collapse depth "
                     + (str(table.first[name, lam]) if table.first[name, lam] != table.never else f"none up to {last}")
                     for (name, lam), n_col in table.counts.items())


def collapse_orderings(table: measures.CollapseTable, scales: Sequence[str],
                       lams: Sequence[float]) -> tuple[list[int], list[int]]:
    """The collapse factorial's orderings, from its :class:`.measures.CollapseTable` over cells
    ``(scale, lambda)``: ``(init_gaps, lam_gaps)``, the first collapse depth of each scale minus
    that of the next smaller one at every ``lambda``, and, per scale, the first collapse depth at
    the first ``lambda`` minus at the last."""
    first = table.first
    init_gaps = [first[b, lam] - first[a, lam] for lam in lams for a, b in zip(scales, scales[1:])]
    return init_gaps, [first[name, lams[0]] - first[name, lams[-1]] for name in scales]


def verdict_table(checks: Mapping[str, VerdictCheck], budget_runs: Mapping[str, Mapping[str, Mapping[str, Any]]],
                  fmt: Callable[[float], str] = lambda v: f"{v:.3g}") -> str:
    """A text table, one line per row: its value and verdict on all networks, on the certified or
    undecided ones and on the certified ones (first class assignment), the number of readings in
    which the verdict differs, and the committed budget runs' measured value and verdict
    (``budget_runs[run][row id]``)."""
    names = ["all", *SUBSETS]
    head = f"{'row':32s}" + "".join(f"{n:>28s}" for n in names) + f"{'flips':>7s}" + "".join(
        f"{r:>16s}" for r in budget_runs)
    lines = [head]
    for rid, chk in checks.items():
        cells = [f"{fmt(chk.values[n])} {'PASS' if chk.verdicts[n] else 'FAIL'}" for n in names]
        flips = sum(v != chk.verdicts["all"] for v in chk.verdicts.values())
        runs = [budget_runs[r].get(rid, {}) for r in budget_runs]
        lines.append(f"{rid:32s}" + "".join(f"{c:>28s}" for c in cells) + f"{flips:>7d}"
                     + "".join(f"{str(x.get('measured', '-')) + ' ' + str(x.get('verdict', '')):>16s}" for x in runs))
    return "\n".join(lines)


def plot_norms(rows: Sequence[Record], reading: SweepReading, depths: Sequence[int], seeds: int, fit: float):
    """Figure 1(a) redrawn: ``||theta||^2`` at the end of training against depth, one marker per
    network (shifted by seed), coloured by the middle weight's rank, a dot when it fits and a cross
    otherwise, and the affine law of ``reading`` (dashed). Returns the figure."""
    fig, ax = plotting.subplots(1, height=3.4)
    ranks_present = sorted({r["kW"] for r in rows})
    cmap = {k: plotting.color(i) for i, k in enumerate(ranks_present)}
    for r in rows:
        ax.scatter(r["L"] + (r["seed"] - (seeds - 1) / 2) * 0.15, r["sqnorm"], marker="o" if r["fits"] else "x",
                   color=cmap[r["kW"]], s=28 if r["fits"] else 34, linewidths=1.2)
    for k in ranks_present:
        ax.scatter([], [], color=cmap[k], marker="s", label=f"rank $W_{{L/2}}$ = {k}")
    ax.scatter([], [], color="grey", marker="o", label=f"train cost < {fit}")
    ax.scatter([], [], color="grey", marker="x", label=f"train cost > {fit}")
    if reading.law:
        LL = np.linspace(min(reading.law_depths) - 1, max(reading.law_depths) + 1, 10)
        ax.plot(LL, reading.law.slope * LL + reading.law.intercept, "--", color="k", lw=1,
                label=f"affine law, slope {reading.law.slope:.2f}")
    ax.set_xlabel("depth $L$")
    ax.set_ylabel(r"$\|\theta\|^2$ at the end of training")
    ax.set_xticks(list(depths))
    ax.legend(fontsize=7, ncol=2)
    return fig


def plot_spectra(rows: Sequence[Record], show: Iterable[int]):
    """Figure 1(b) redrawn: the singular values of every layer's weight (``r["spectra"]``) of the
    networks of each depth in ``show``, one panel per depth, one colour per seed; the rank threshold
    0.1 dashed and 1 dotted. Returns the figure."""
    show = list(show)
    fig, axes = plotting.subplots(len(show), height=2.8, sharey=True)
    axes = np.atleast_1d(axes)
    for ax, L in zip(axes, show):
        for s, r in enumerate([r for r in rows if r["L"] == L]):
            for l, sv in enumerate(r["spectra"]):
                ax.scatter(np.full(len(sv), l + 1) + (s - 1) * 0.1, sv.numpy(), s=4, color=plotting.color(s), alpha=0.7)
        ax.axhline(1.0, color="k", lw=0.6, ls=":")
        ax.axhline(0.1, color="k", lw=0.6, ls="--")
        ax.set_yscale("log")
        ax.set_ylim(1e-3, 5)
        ax.set_xticks(range(1, L + 1, 1 if L <= 8 else 2))
        ax.set_xlabel("layer $\\ell$")
        ax.set_title(f"$L={L}$")
    axes[0].set_ylabel("singular values of $W_\\ell$")
    return fig
