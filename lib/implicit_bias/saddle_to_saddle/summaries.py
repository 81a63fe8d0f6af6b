"""Per-run summaries of saddle-to-saddle training (:func:`.training.train_runs`): where each run
leaves the saddle at the origin, how rank-one its layers are at fixed checkpoints, and whether it
still sits on the second plateau at the end.

The checkpoints of one run (indices into ``result.spectra_steps``):

- the **escape checkpoint**: the first recorded step at which the probe loss is a fraction
  ``drop`` below the initial loss ``log K`` (the run has just left the origin). Every run that
  leaves the origin has one, whether or not it stops on a second plateau;
- the **end of the first drop** after the plateau at the origin, as found by
  :func:`implicit_bias.train.detect_plateaus` (chapter 4's "after the first escape"). For a run
  that falls through the second plateau without stopping, this is after both escapes.

A run is **on the second plateau at the end** when it has left the origin, its final loss is
still above ``1 - band`` times the loss at the end of its first drop, and below the escape
checkpoint's level: it has not started the next drop.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .. import train
from .training import RunResult, second_over_first


@dataclass(frozen=True)
class RunSummary:
    """One run. Shares are fractions of the run's length; ratios are ``s_2/s_1`` (``W_1`` alone
    for ``w1_*``, the mean over the ``deep`` layers for ``deep_*``); NaN where a checkpoint does
    not exist."""

    origin_share: float      # length of the plateau at the origin (0 if the detector found none)
    origin_level: float      # mean loss on it (NaN if none)
    left_origin: bool        # the probe loss fell below (1 - drop) log K
    k_escape: int | None     # escape checkpoint
    w1_escape: float
    deep_escape: float
    k_first_drop: int | None  # end of the first drop after the origin plateau (detector)
    w1_first_drop: float
    deep_first_drop: float
    loss_first_drop: float
    deep_final: float
    final_loss: float
    on_second_plateau: bool
    saddle_at_origin: bool   # an origin plateau of at least min_length, followed by a drop


def summarize(result: RunResult, deep: Sequence[int], *, drop: float = 0.1, band: float = 0.1,
              min_length: float = 0.05) -> list[RunSummary]:
    """:class:`RunSummary` of every run of ``result``; ``deep`` lists the 1-based layers whose mean
    ``s_2/s_1`` is reported as ``deep_*`` (layers 4-6 at depth 6 in the paper's Fig. 1)."""
    ratio = second_over_first(result)                       # (K, runs, L)
    deep_idx = [l - 1 for l in deep]
    n_classes = result.config.d_out
    start_level = math.log(n_classes)
    T = result.config.steps
    nan = float("nan")
    out = []
    for r in range(result.config.runs):
        curve = result.loss_curve[r]
        found = train.detect_plateaus(result.spectra_steps, curve, min_length=min_length)
        origin = found.plateaus[0] if found.plateaus and found.plateaus[0][0] == 0 else None
        share = (origin[1] - origin[0]) / T if origin else 0.0
        k_esc = next((k for k, v in enumerate(curve.tolist()) if v < (1 - drop) * start_level), None)
        end = found.escapes[0] if origin is not None and found.escapes and found.saddles \
            and found.saddles[0][0] == origin[0] else None
        k_end = result.at(end) if end is not None else None
        at = lambda k, cols: float(ratio[k, r, cols].mean()) if k is not None else nan
        final = float(curve[-1])
        loss_end = float(curve[k_end]) if k_end is not None else nan
        plateau = k_esc is not None and k_end is not None and final >= (1 - band) * loss_end \
            and final < (1 - drop) * start_level
        out.append(RunSummary(share, found.levels[0] if origin else nan, k_esc is not None, k_esc,
                              at(k_esc, [0]), at(k_esc, deep_idx), k_end, at(k_end, [0]), at(k_end, deep_idx),
                              loss_end, float(ratio[-1, r, deep_idx].mean()), final, plateau,
                              origin is not None and share >= min_length and end is not None))
    return out
