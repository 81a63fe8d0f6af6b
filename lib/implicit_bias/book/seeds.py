"""The seed sweep: every chapter executed on several seeds (profile ci), and the robustness page.

``python -m implicit_bias.book seeds`` (``make seeds``) executes the chapters on seeds 1-4 into
``_build/seeds/seed<N>/`` (the committed notebooks are the seed-0 run: nbval re-executes them in
every test run), gathers every ledger into ``book/data/seed_sweep.json`` and writes
``book/robustness.md``: per claim, on how many seeds it holds, the min / median / max of its
measured value, its **margin** (how far the seeds' values sit from the threshold, in units of
their spread: :func:`margin_in_spreads`) and where its threshold comes from. Claims within one
spread of their threshold, and thresholds set after seeing seeds, are listed at the top. Both
files are committed; the test suite checks that they list exactly the claims of the committed
notebooks, with seed 0's values equal to the committed ones, and names the command to run when
they are stale (without re-running the sweep).

Thresholds are tuned on seeds 0-4 only: the book's claims are judged on seeds it never ran.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .common import refuse_inherited_budget, write_atomic
from .execute import execute_many, print_failures
from .report import _md_cell, collect_ledgers
from .sources import ROOT, all_chapters

SWEEP_PATH = Path("book") / "data" / "seed_sweep.json"
PAGE_PATH = Path("book") / "robustness.md"
DEFAULT_SEEDS = (0, 1, 2, 3, 4)


def parse_seeds(text: str) -> list[int]:
    """``"0-4"``, ``"0,2,5"`` or ``"1-3,7"`` as a sorted list of distinct seeds."""
    seeds: set[int] = set()
    for chunk in text.split(","):
        chunk = chunk.strip()
        if not chunk:
            continue
        try:
            if "-" in chunk:
                lo, hi = (int(v) for v in chunk.split("-", 1))
                if hi < lo:
                    raise ValueError
                seeds.update(range(lo, hi + 1))
            else:
                seeds.add(int(chunk))
        except ValueError:
            raise SystemExit(f"--seeds {text!r}: write seeds as 0-4 or 0,1,2 (non-negative integers)")
    if not seeds or min(seeds) < 0:
        raise SystemExit(f"--seeds {text!r}: give at least one non-negative seed")
    return sorted(seeds)


def seed_folder(seed: int) -> Path:
    return ROOT / "_build" / "seeds" / f"seed{seed}"


def run_sweep(seeds: Sequence[int], chapters: Sequence[Path], jobs: int = 1,
              timeout: int | None = None, executor: Any = None) -> dict[int, list[str]]:
    """Execute ``chapters`` on every seed but 0 (the committed run) into :func:`seed_folder`.
    Returns the chapters that failed, by seed. With ``executor`` (SLURM), every chapter x seed
    is one job of a single job array."""
    failed: dict[int, list[str]] = {}
    if executor is not None:
        from .common import Task

        swept = [s for s in seeds if s != 0]
        tasks = [Task(py, seed_folder(s) / py.relative_to(ROOT).with_suffix(".ipynb"), {"seed": s},
                      seed_folder(s) / "logs") for s in swept for py in chapters]
        print(f"seeds {', '.join(map(str, swept))}: executing {len(tasks)} chapter x seed job(s) into "
              f"{seed_folder(0).parent.relative_to(ROOT)}/seed<N>")
        outcomes = executor.run(tasks, timeout=timeout)
        for k, s in enumerate(swept):
            chunk = outcomes[k * len(chapters):(k + 1) * len(chapters)]
            print_failures(chunk)
            failed[s] = [o.chapter for o in chunk if not o.ok]
        return failed
    for seed in seeds:
        if seed == 0:
            continue
        out = seed_folder(seed)
        jobs_list = [(py, out / py.relative_to(ROOT).with_suffix(".ipynb")) for py in chapters]
        print(f"seed {seed}: executing {len(jobs_list)} chapter(s) into {out.relative_to(ROOT)}")
        outcomes = execute_many(jobs_list, {"seed": seed}, out / "logs", jobs, timeout=timeout)
        print_failures(outcomes)
        failed[seed] = [o.chapter for o in outcomes if not o.ok]
    return failed


def gather(seeds: Sequence[int], chapters: Sequence[Path],
           failed: dict[int, list[str]] | None = None) -> dict[str, Any]:
    """The sweep as data: ``{"chapters": {chapter: {"seeds": [...], "claims": {id: {"statement",
    "runs": {seed: {"measured", "verdict"}}}}, "failed": [seed, ...]}}}`` (each chapter records
    the seeds it was swept on, so parts can be swept one at a time)."""
    data: dict[str, Any] = {"chapters": {}}

    def new_entry() -> dict[str, Any]:
        return {"seeds": list(seeds), "claims": {}, "failed": []}

    for seed in seeds:
        root = ROOT if seed == 0 else seed_folder(seed)
        for led in collect_ledgers(root, chapters):
            entry = data["chapters"].setdefault(led.chapter, new_entry())
            if not led.executed or not led.claims:
                entry["failed"].append(seed)
                continue
            for c in led.claims:
                row = entry["claims"].setdefault(c.id, {"statement": c.statement, "runs": {}})
                if seed == 0 or "origin" not in row:
                    row["origin"] = c.origin
                run = {"measured": c.measured, "verdict": c.verdict}
                if c.value is not None:
                    run.update(value=c.value, lo=c.lo, hi=c.hi)
                row["runs"][str(seed)] = run
    for seed, names in (failed or {}).items():
        for name in names:
            chap = data["chapters"].setdefault(str(Path(name).with_suffix("")), new_entry())
            if seed not in chap["failed"]:
                chap["failed"].append(seed)
    return data


def _number(text: str) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


KNIFE_EDGE = 1.0  # a claim whose margin is below one spread over seeds must be restated


def margin_in_spreads(runs: Sequence[dict[str, Any]]) -> float | None:
    """How far a claim's values sit from its threshold, in units of their spread over seeds: the
    median over seeds of the signed margin (:func:`implicit_bias.claims.margin`: distance to the
    nearest edge of the passing region, negative where it fails) divided by the standard deviation
    of the values. ``inf`` when every seed gives the same value inside the region; None for a
    claim without numeric values and a finite threshold (checked by a boolean)."""
    from ..claims import margin

    pts = [(r["value"], margin(r["value"], r.get("lo"), r.get("hi"))) for r in runs
           if r.get("value") is not None]
    if not pts or len(pts) < len(runs) or any(m is None for _, m in pts):
        return None
    values = [v for v, _ in pts]
    mid = statistics.median(m for _, m in pts)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    if sd == 0:
        return math.inf if mid > 0 else (-math.inf if mid < 0 else 0.0)
    return mid / sd


def _margin_text(z: float | None) -> str:
    if z is None:
        return "boolean"
    if math.isinf(z):
        return "exact" if z > 0 else "fails"
    return f"{z:.1f}" + (" ⚠" if z < KNIFE_EDGE else "")


def _spread(values: Sequence[str]) -> tuple[str, str, str]:
    nums = [_number(v) for v in values]
    if values and all(n is not None for n in nums):
        return (f"{min(nums):.3g}", f"{statistics.median(nums):.3g}", f"{max(nums):.3g}")
    distinct = sorted(set(values))
    if len(distinct) == 1:
        return (distinct[0], distinct[0], distinct[0])
    return ("", "; ".join(distinct[:4]) + (" ..." if len(distinct) > 4 else ""), "")


PAGE_INTRO = """\
# Robustness across seeds

Every chapter executed on seeds {seeds} (profile `ci`).{fewer} The committed notebooks are the seed-0
run; the other seeds are executed by `make seeds` (`python -m implicit_bias.book seeds`), which
also regenerates this page from `book/data/seed_sweep.json`. Per claim: on how many seeds it
holds, the seeds where it fails, the min / median / max of its measured value (the values
themselves where they are not numbers), its **margin** and the **origin** of its threshold. A claim
that fails on some seed is a finding about the claim: the chapter says what holds across seeds and
what depends on the seed. Any statement in the book about several seeds refers to this page.

**Margin**: the median over seeds of the distance from the value to the threshold (negative on
the failing side), in units of the values' standard deviation over seeds. A claim within one
spread of its threshold (margin below {edge:g}, marked ⚠) could flip on a seed the book never ran;
such a claim must be restated (a statistic over several seeds, a larger sample, the paper's
threshold) or carry the bearing `qualifies`. *exact*: every seed gives the same value;
*boolean*: the claim is checked by a condition without a numeric value, so only the count of
seeds speaks for it. **Origin** of the threshold: `paper` (the paper's value), `theory` (implied
by the mathematics), `prior` (a margin stated before the claim's first run), `after-seeds` (set or
moved after results were seen; listed below), or *not stated*. Thresholds are tuned on seeds 0-4
only; the claims are judged on seeds the book never ran.

**{held} of {total} claims hold on every seed**; {n_fail} fail on at least one. {n_edge} claim(s)
sit within one spread of their threshold; {n_bool} are boolean; {n_after} thresholds were set
after seeing seeds; {n_unstated} claims do not state the origin of their threshold.
"""


def _seed_names(seeds: Sequence[int]) -> str:
    seeds = list(seeds)
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(map(str, seeds))


def render_page(data: dict[str, Any], titles: dict[str, str], budget: dict[str, Any] | None = None,
                bearings: dict[str, dict[str, str]] | None = None) -> str:
    """The robustness page: the seed sweep ``data`` and, where given, the budget sweep ``budget``
    (:mod:`.budgets`) with the claims' ``bearings`` (chapter -> claim id -> bearing)."""
    from . import budget_table as bud

    entries = {ch: {**e, "seeds": e.get("seeds", data.get("seeds", [0]))}  # older sweeps: one seed set
               for ch, e in data["chapters"].items()}
    all_seeds = sorted({s for e in entries.values() for s in e["seeds"]})
    fewer = [ch for ch, e in entries.items() if e["seeds"] != all_seeds]
    total = held = n_bool = n_unstated = 0
    edge: list[tuple[str, str, float]] = []
    after: list[tuple[str, str, str]] = []
    changed: list[tuple[str, str, list[str], str]] = []
    body: list[str] = []
    for chapter, entry in entries.items():
        seeds = entry["seeds"]
        title = titles.get(chapter, chapter)
        body += [f"## {title}", "", f"Page: {{doc}}`/{chapter}`; seeds {_seed_names(seeds)}.", ""]
        if entry["failed"]:
            body += [f"**The chapter did not finish on seed(s) {', '.join(map(str, entry['failed']))}**: "
                     "its claims count as failing there.", ""]
        body += ["| claim | holds on | fails on | min | median | max | margin | origin |",
                 "|---|---|---|---|---|---|---|---|"]
        for cid, row in entry["claims"].items():
            runs = row["runs"]
            ok = [s for s in seeds if runs.get(str(s), {}).get("verdict") == "PASS"]
            bad = [s for s in seeds if s not in ok]
            total += 1
            held += not bad
            lo, mid, hi = _spread([runs[str(s)]["measured"] for s in seeds if str(s) in runs])
            fails = ", ".join(map(str, bad)) if bad else "-"
            z = margin_in_spreads([runs[str(s)] for s in seeds if str(s) in runs])
            origin = row.get("origin")
            kind = origin.split(":", 1)[0].strip() if origin else None
            if z is None:
                n_bool += 1
            elif z < KNIFE_EDGE:
                edge.append((chapter, cid, z))
            if kind == "after-seeds":
                after.append((chapter, cid, origin.split(":", 1)[1].strip() if ":" in origin else ""))
            n_unstated += kind is None
            body.append(f"| `{cid}` | {len(ok)} / {len(seeds)} | {fails} | {_md_cell(lo)} | "
                        f"{_md_cell(mid)} | {_md_cell(hi)} | {_margin_text(z)} | {kind or '*not stated*'} |")
        body.append("")
        if budget is not None:
            lines, flips = bud.render_chapter(chapter, budget["chapters"].get(chapter), entry)
            body += lines
            changed += [(chapter, cid, runs, (bearings or {}).get(chapter, {}).get(cid, ""))
                        for cid, runs in flips.items()]
    note = ""
    if fewer:
        note = (f" **{len(fewer)} chapter(s) were swept on fewer seeds** (named in their section): "
                "their rows count only those seeds.")
    head = PAGE_INTRO.format(seeds=_seed_names(all_seeds), fewer=note, held=held, total=total,
                             n_fail=total - held, edge=KNIFE_EDGE, n_edge=len(edge), n_bool=n_bool,
                             n_after=len(after), n_unstated=n_unstated)
    lists: list[str] = []
    if budget is not None:
        head += "\n" + bud.render_summary(budget, changed, data)
    if edge:
        lists += ["## Claims within one spread of their threshold", "",
                  "| chapter | claim | margin |", "|---|---|---|"]
        lists += [f"| {{doc}}`/{ch}` | `{cid}` | {z:.2f} |" for ch, cid, z in edge] + [""]
    if after:
        lists += ["## Thresholds set after seeing seeds", "",
                  "Each was set or moved after results on seeds 0-4 were seen; the note says what was seen. "
                  "They have not been tested on unseen seeds by the book.", "",
                  "| chapter | claim | note |", "|---|---|---|"]
        lists += [f"| {{doc}}`/{ch}` | `{cid}` | {_md_cell(n) if n else '-'} |" for ch, cid, n in after] + [""]
    return head + "\n" + "\n".join(lists + body)


def write(data: dict[str, Any], root: Path = ROOT) -> None:
    from .report import chapter_title

    path = root / SWEEP_PATH
    write_atomic(path, json.dumps(data, indent=1, sort_keys=False) + "\n")
    from . import budget_table as budgets
    from .report import collect_ledgers
    from .sources import all_chapters

    titles = {}
    for chapter in data["chapters"]:
        nb = root / f"{chapter}.ipynb"
        if nb.exists():
            titles[chapter] = chapter_title(nb)
    budget = budgets.load(root)
    bearings = {led.chapter: {c.id: c.bearing or "" for c in led.claims}
                for led in collect_ledgers(root, all_chapters(root))}
    write_atomic(root / PAGE_PATH, render_page(data, titles, budget, bearings))


def staleness(root: Path = ROOT, chapters: Sequence[Path] | None = None) -> list[str]:
    """Why the committed sweep does not match the committed notebooks (empty when it does)."""
    path = root / SWEEP_PATH
    if not path.exists():
        return [f"{SWEEP_PATH} is missing"]
    data = json.loads(path.read_text())
    problems = []
    current = {led.chapter: led for led in collect_ledgers(root, chapters or all_chapters(root))}
    swept = data.get("chapters", {})
    for chapter in sorted(set(current) - set(swept)):
        problems.append(f"{chapter}: not in the sweep")
    for chapter in sorted(set(swept) - set(current)):
        problems.append(f"{chapter}: in the sweep but no longer a chapter")
    for chapter, led in current.items():
        if chapter not in swept:
            continue
        ids_now = [c.id for c in led.claims]
        ids_swept = list(swept[chapter]["claims"])
        if ids_now != ids_swept:
            problems.append(f"{chapter}: claim ids differ (now {ids_now}, swept {ids_swept})")
            continue
        for c in led.claims:
            run0 = swept[chapter]["claims"][c.id]["runs"].get("0")
            if run0 is None or run0["measured"] != c.measured or run0["verdict"] != c.verdict:
                problems.append(f"{chapter}: claim {c.id!r} on seed 0 is {c.measured} {c.verdict} in the "
                                f"committed notebook but {run0} in the sweep")
    return problems


def merge(old: dict[str, Any] | None, new: dict[str, Any], order: Sequence[Path]) -> dict[str, Any]:
    """``new``'s chapters replace ``old``'s (each chapter keeps the seeds it was swept on); the
    result follows ``order`` (the table of contents) and drops chapters that no longer exist."""
    old_chapters = dict((old or {}).get("chapters", {}))
    for entry in old_chapters.values():  # sweeps written before seeds were recorded per chapter
        entry.setdefault("seeds", (old or {}).get("seeds", [0]))
    chapters = {**old_chapters, **new["chapters"]}
    names = [str(p.relative_to(ROOT).with_suffix("")) for p in order]
    return {"chapters": {n: chapters[n] for n in names if n in chapters}}


def cmd_seeds(args: Any) -> int:
    """``seeds [CHAPTER ...] [--seeds 0-4] [--jobs N] [--collect-only]``."""
    from .sources import resolve_chapters

    seeds = parse_seeds(args.seeds)
    chapters = resolve_chapters(args.chapters, getattr(args, "all_matching", False))
    from .executors import from_args

    if not args.collect_only:  # the sweep records runs at x1: a budget inherited from the shell would lie
        refused = refuse_inherited_budget("the seed sweep records runs at budget x1 (the budget sweep is "
                                          "`make budgets`)")
        if refused:
            print(f"error: {refused}", file=sys.stderr)
            return 2

    executor = None if args.collect_only else from_args(args, "ci")
    failed = {} if args.collect_only else run_sweep(seeds, chapters, args.jobs, args.timeout, executor)
    new = gather(seeds, chapters, failed)
    path = ROOT / SWEEP_PATH
    old = json.loads(path.read_text()) if path.exists() else None
    data = merge(old, new, all_chapters())
    write(data)
    total = sum(len(e["claims"]) for e in data["chapters"].values())
    bad = [(ch, cid) for ch, e in data["chapters"].items() for cid, row in e["claims"].items()
           if any(row["runs"].get(str(s), {}).get("verdict") != "PASS" for s in e["seeds"])]
    print(f"wrote {SWEEP_PATH} and {PAGE_PATH}: {total - len(bad)} of {total} claims hold on every seed "
          f"their chapter was swept on")
    for ch, cid in bad:
        print(f"  fails on some seed: {ch}: {cid}")
    return 0
