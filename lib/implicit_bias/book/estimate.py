"""How long a run will take, said before it starts: the warning before a ``full`` run on a machine
without a GPU.

The estimate is deliberately simple and says so. Per chapter:

    (CPU seconds of its ``ci`` run, measured) x (the largest scale-up of one count from ``ci`` to ``full``)

The measured ``ci`` times are in ``book/data/chapter_times.json`` (written by
``benchmarks/chapter_times.py --write``; a chapter missing there counts as the ``ci`` budget of
75 CPU-s). The scale-up is read from the chapter's ``PROFILES``: for every setting that is a count
(an integer, or a tuple of integers, summed) in both profiles, ``full / ci``; the largest one.
Settings whose growth means *less* work (``record_every``, ``batch_size``, ...) are left out. Since
a ``full`` profile usually grows several counts at once (steps *and* widths *and* runs) and uses
larger data sets, the true cost is higher: the estimate is a lower bound, and is printed as one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .sources import ROOT, profile_settings, relative

TIMES_PATH = Path("book") / "data" / "chapter_times.json"
CI_BUDGET_S = 75.0
# counts whose growth means less work, not more
INVERSE_COUNTS = ("record_every", "batch_size", "log_every", "eval_every", "every")


@dataclass(frozen=True)
class ChapterEstimate:
    chapter: str
    ci_seconds: float
    measured: bool
    scale: float
    scale_key: str

    @property
    def seconds(self) -> float:
        return self.ci_seconds * self.scale


def _counts(value: Any) -> list[int] | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return [value]
    if isinstance(value, (tuple, list)):
        out: list[int] = []
        for v in value:
            inner = _counts(v)
            if inner is None:
                return None
            out += inner
        return out
    return None


def scale_up(profiles: dict[str, dict[str, Any]], profile: str = "full") -> tuple[float, str]:
    """The largest ``profile / ci`` ratio of one count setting, and its name (``(1.0, "")`` if none)."""
    base, big = profiles.get("ci", {}), profiles.get(profile, {})
    best, best_key = 1.0, ""
    for key, value in base.items():
        if key not in big or any(word in key for word in INVERSE_COUNTS):
            continue
        a, b = _counts(value), _counts(big[key])
        if a is None or b is None or sum(a) <= 0:
            continue
        ratio = sum(b) / sum(a)
        if ratio > best:
            best, best_key = ratio, key
    return best, best_key


def measured_ci_seconds(root: Path = ROOT) -> dict[str, float]:
    path = root / TIMES_PATH
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    return {name: float(row["cpu_s"]) for name, row in data.get("chapters", {}).items()}


def estimate(chapters: Sequence[Path], profile: str = "full", root: Path = ROOT) -> list[ChapterEstimate]:
    times = measured_ci_seconds(root)
    rows = []
    for py in chapters:
        name = relative(Path(py).with_suffix(""), root)
        scale, key = scale_up(profile_settings(py), profile)
        ci = times.get(name)
        rows.append(ChapterEstimate(name, ci if ci is not None else CI_BUDGET_S, ci is not None, scale, key))
    return rows


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def no_gpu_warning(chapters: Sequence[Path], profile: str = "full", jobs: int = 1,
                   root: Path = ROOT) -> str:
    """The warning printed before a non-``ci`` run on a machine without a GPU."""
    rows = estimate(chapters, profile, root)
    total = sum(r.seconds for r in rows)
    wall = total / max(1, min(jobs, len(rows)))
    lines = [
        f"WARNING: no GPU here (torch sees no CUDA device): profile {profile!r} will run the papers' "
        f"settings on the CPU.",
        f"Estimate, a lower bound: at least {_duration(total)} of CPU time for {len(rows)} chapter(s)"
        + (f" (about {_duration(wall)} with {jobs} jobs)" if jobs > 1 else "") + ".",
        "  (per chapter: its measured ci CPU time x the largest scale-up of one count from ci to "
        f"{profile}; several counts and the data sets grow at once, so expect more; see "
        "implicit_bias.book.estimate)",
    ]
    for r in sorted(rows, key=lambda r: -r.seconds)[:5]:
        why = f"x{r.scale:.3g} ({r.scale_key})" if r.scale_key else "x1 (no count grows)"
        src = "measured" if r.measured else "budget, not measured"
        lines.append(f"    {r.chapter}: {r.ci_seconds:.0f} CPU-s ci ({src}) {why} -> >= {_duration(r.seconds)}")
    if len(rows) > 5:
        lines.append(f"    ... and {len(rows) - 5} more")
    lines.append("Run on a GPU machine (see 'How to run the book'), or use profile 'ci' here.")
    return "\n".join(lines)
