"""The house style of the book's figures: one palette (Okabe-Ito, safe for colour-blind
readers), sizes that fit the page, labelled axes."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

#: Okabe & Ito (2008) palette: distinguishable under the common colour-vision deficiencies.
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]
WIDTH = 7.0  # inches: the text width of the book theme


def use_style() -> None:
    """Apply the house style to matplotlib (call once per chapter)."""
    mpl.rcParams.update(
        {
            "figure.dpi": 100,
            "savefig.dpi": 150,
            "figure.figsize": (WIDTH, WIDTH * 0.45),
            "figure.constrained_layout.use": True,
            "font.size": 10,
            "axes.titlesize": 10,
            "axes.labelsize": 10,
            "legend.fontsize": 8,
            "legend.frameon": False,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.prop_cycle": mpl.cycler(color=PALETTE),
            "lines.linewidth": 1.6,
            "image.cmap": "viridis",
        }
    )


def subplots(ncols: int = 1, nrows: int = 1, height: float | None = None, **kwargs):
    """``plt.subplots`` at the book's width; ``height`` in inches (default: 0.4 of the width
    per row, at most 3 inches)."""
    h = height if height is not None else nrows * min(3.0, WIDTH * 0.4)
    fig, axes = plt.subplots(nrows, ncols, figsize=(WIDTH, h), squeeze=False, **kwargs)
    return fig, (axes[0, 0] if nrows * ncols == 1 else axes.ravel())


def color(i: int) -> str:
    """The ``i``-th colour of the palette (cycling)."""
    return PALETTE[i % len(PALETTE)]


def band(ax, x: Sequence[float], runs: np.ndarray, label: str | None = None, i: int = 0,
         quantiles: tuple[float, float] = (0.1, 0.9)) -> None:
    """Median over runs (rows of ``runs``) with a shaded quantile band."""
    runs = np.asarray(runs)
    lo, hi = np.quantile(runs, quantiles, axis=0)
    ax.plot(x, np.median(runs, axis=0), color=color(i), label=label)
    ax.fill_between(x, lo, hi, color=color(i), alpha=0.2, linewidth=0)
