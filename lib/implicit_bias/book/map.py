"""The map of the book: how the five papers' objects and results connect, drawn as an SVG.

``python -m implicit_bias.book.map`` (or :func:`write_map`) redraws ``book/generated/map.svg``
from :data:`NODES` and :data:`EDGES` with matplotlib; ``tests/test_book.py`` checks that the
committed file is the one this module draws, so the picture cannot drift from its data. The page
``book/map.md`` shows it with links to every part's chapters and scorecards.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

from .sources import ROOT

MAP_PATH = Path("book") / "generated" / "map.svg"


@dataclass(frozen=True)
class Node:
    """One paper (or the synthesis) as a box: its part folder, title and the objects it studies;
    ``own``: the synthesis predictions that are this paper's own statement, tested on the common
    networks without another paper's measure (written in the box, not drawn as arrows)."""

    part: str
    title: str
    objects: str
    xy: tuple[float, float]
    own: str = ""


@dataclass(frozen=True)
class Edge:
    """A connection between two parts, labelled with what links them (and the synthesis
    prediction that tests it, ``P1``..``P8`` of chapters/synthesis/). ``cross`` is False for a
    prediction that is one paper's own conjecture measured with another paper's object (drawn
    dashed: P1, the saddle paper's conjecture counted with the bottleneck's learned rank); a
    paper's own statement that uses no other paper's measure is no arrow (see ``Node.own``).
    ``bend`` curves the arrow (matplotlib's ``arc3`` radius) so that two arrows between the same
    boxes stay apart."""

    a: str
    b: str
    label: str
    at: float = 0.5   # where the label sits along the arrow, from a (0) to b (1)
    cross: bool = True
    bend: float = 0.0


NODES: tuple[Node, ...] = (
    Node("invariances", "Invariances & alignment\n(Le & Jegelka)",
         "conserved $\\|W_{\\ell+1}\\|_F^2-\\|W_\\ell\\|_F^2$\nbalanced, aligned layers", (0.18, 0.82)),
    Node("rank_minimization", "Rank minimization\n(Timor, Vardi & Shamir)",
         "$\\|W\\|_2/\\|W\\|_F$, stable rank\ndepth lowers the rank", (0.82, 0.82)),
    Node("bottleneck", "Bottleneck structure\n(Jacot)",
         "learned rank $k$, $\\|\\theta\\|^2\\approx kL$\nrank-$k$ partial isometries", (0.50, -0.08),
         own="P5 tests its own law"),
    Node("saddle_to_saddle", "Saddle-to-saddle\n(Bantzis, Simon & Jacot)",
         "small init: plateaus,\nrank-one escapes, rank grows", (0.90, 0.30),
         own="P2 tests its own statement"),
    Node("extrapolation", "Reversion to the OCS\n(Kang et al.)",
         "shifted inputs: late-layer norms\nshrink, predictions $\\to$ OCS", (0.10, 0.30),
         own="P7 tests its own mechanism"),
    Node("synthesis", "One family of deep ReLU MLPs\ntrained by gradient descent",
         "(the synthesis: all five\nlenses on the same runs)", (0.50, 0.47)),
)

EDGES: tuple[Edge, ...] = (
    Edge("invariances", "bottleneck", "P3: balanced layers,\n$\\|W_\\ell\\|_F^2\\approx k$", 0.6),
    Edge("invariances", "rank_minimization", "P4: alignment of adjacent layers"),
    Edge("saddle_to_saddle", "bottleneck", "P8: pauses at the\n$L_2$ functions?", 0.5, bend=-0.4),
    Edge("saddle_to_saddle", "bottleneck", "P1: escapes = learned rank?\n(saddle paper's conjecture)", 0.66,
         cross=False, bend=0.3),
    Edge("bottleneck", "extrapolation", "P6: deeper = faster\nreversion?"),
)


def draw_map():
    """The map as a matplotlib figure (boxes for the parts, labelled arrows for the links)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    where = {n.part: n for n in NODES}
    fig, ax = plt.subplots(figsize=(9.0, 6.4))
    ax.set(xlim=(-0.05, 1.05), ylim=(-0.2, 0.95))
    ax.axis("off")
    centre = where["synthesis"].xy
    for n in NODES:   # the synthesis looks at every paper's object on the same runs
        if n.part != "synthesis":
            ax.annotate("", xy=n.xy, xytext=centre,
                        arrowprops=dict(arrowstyle="-", color="#c58b00", lw=0.8, ls=":", shrinkA=30, shrinkB=30))
    for e in EDGES:
        (x0, y0), (x1, y1) = where[e.a].xy, where[e.b].xy
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                    arrowprops=dict(arrowstyle="<->", color="#7a7a7a", lw=1.2, shrinkA=38, shrinkB=38,
                                    ls="-" if e.cross else "--",
                                    connectionstyle=f"arc3,rad={e.bend}"))
        tx, ty = x0 + e.at * (x1 - x0), y0 + e.at * (y1 - y0)
        if e.bend:   # the label on the curve: half the way to arc3's control point, in display coordinates
            (px0, py0), (px1, py1) = ax.transData.transform([(x0, y0), (x1, y1)])
            ptx, pty = ax.transData.transform((tx, ty))
            tx, ty = ax.transData.inverted().transform((ptx + 0.5 * e.bend * (py1 - py0),
                                                        pty - 0.5 * e.bend * (px1 - px0)))
        ax.text(tx, ty, e.label, ha="center", va="center", fontsize=7.5, color="#303030", zorder=4,
                bbox=dict(boxstyle="round,pad=0.2", fc="white", ec="none", alpha=0.9))
    for n in NODES:
        centre = n.part == "synthesis"
        own = f"\n({n.own})" if n.own else ""
        ax.text(*n.xy, f"{n.title}\n\n{n.objects}{own}", ha="center", va="center", fontsize=8.5,
                fontweight="bold" if centre else "normal", zorder=3,
                bbox=dict(boxstyle="round,pad=0.45", fc="#fff4d6" if centre else "#e8f0fb",
                          ec="#c58b00" if centre else "#3b6db3", lw=1.2))
    return fig


def render_map_svg() -> str:
    """The SVG text of the map, deterministic (fixed hash salt, no date, text kept as paths)."""
    import matplotlib
    import matplotlib.pyplot as plt

    # from matplotlib's defaults, whatever style the process set before (the book's house style, a
    # test that applied it): the picture must not depend on what ran earlier
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        matplotlib.rcParams.update({"svg.hashsalt": "implicit-bias-map", "svg.fonttype": "path",
                                    "font.family": "DejaVu Sans"})
        fig = draw_map()
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
        plt.close(fig)
    return buf.getvalue()


def write_map(root: Path = ROOT) -> Path:
    """Redraw ``book/generated/map.svg``."""
    path = root / MAP_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_map_svg())
    return path


if __name__ == "__main__":
    print(write_map().relative_to(ROOT))
