"""The seed sweep: every chapter executed on several seeds (profile ci), and the robustness page.

``python -m implicit_bias.book seeds`` (``make seeds``) executes the chapters on seeds 1-4 into
``_build/seeds/seed<N>/`` (the committed notebooks are the seed-0 run: nbval re-executes them in
every test run), gathers every ledger into ``book/data/seed_sweep.json`` and writes
``book/robustness.md``: per claim, on how many seeds it holds and the min / median / max of its
measured value. Both files are committed; the test suite checks that they list exactly the
claims of the committed notebooks, with seed 0's values equal to the committed ones, and names
the command to run when they are stale (without re-running the sweep).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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
              timeout: int | None = None) -> dict[int, list[str]]:
    """Execute ``chapters`` on every seed but 0 (the committed run) into :func:`seed_folder`.
    Returns the chapters that failed, by seed."""
    failed: dict[int, list[str]] = {}
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
                row["runs"][str(seed)] = {"measured": c.measured, "verdict": c.verdict}
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
holds, the seeds where it fails, and the min / median / max of its measured value (the values
themselves where they are not numbers). A claim that fails on some seed is a finding about the
claim: the chapter says what holds across seeds and what depends on the seed. Any statement in
the book about several seeds refers to this page.

**{held} of {total} claims hold on every seed**; {n_fail} fail on at least one.
"""


def _seed_names(seeds: Sequence[int]) -> str:
    seeds = list(seeds)
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(map(str, seeds))


def render_page(data: dict[str, Any], titles: dict[str, str]) -> str:
    entries = {ch: {**e, "seeds": e.get("seeds", data.get("seeds", [0]))}  # older sweeps: one seed set
               for ch, e in data["chapters"].items()}
    all_seeds = sorted({s for e in entries.values() for s in e["seeds"]})
    fewer = [ch for ch, e in entries.items() if e["seeds"] != all_seeds]
    total = held = 0
    body: list[str] = []
    for chapter, entry in entries.items():
        seeds = entry["seeds"]
        title = titles.get(chapter, chapter)
        body += [f"## {title}", "", f"Page: {{doc}}`/{chapter}`; seeds {_seed_names(seeds)}.", ""]
        if entry["failed"]:
            body += [f"**The chapter did not finish on seed(s) {', '.join(map(str, entry['failed']))}**: "
                     "its claims count as failing there.", ""]
        body += ["| claim | holds on | fails on | min | median | max |", "|---|---|---|---|---|---|"]
        for cid, row in entry["claims"].items():
            runs = row["runs"]
            ok = [s for s in seeds if runs.get(str(s), {}).get("verdict") == "PASS"]
            bad = [s for s in seeds if s not in ok]
            total += 1
            held += not bad
            lo, mid, hi = _spread([runs[str(s)]["measured"] for s in seeds if str(s) in runs])
            fails = ", ".join(map(str, bad)) if bad else "-"
            body.append(f"| `{cid}` | {len(ok)} / {len(seeds)} | {fails} | {_md_cell(lo)} | "
                        f"{_md_cell(mid)} | {_md_cell(hi)} |")
        body.append("")
    note = ""
    if fewer:
        note = (f" **{len(fewer)} chapter(s) were swept on fewer seeds** (named in their section): "
                "their rows count only those seeds.")
    head = PAGE_INTRO.format(seeds=_seed_names(all_seeds), fewer=note, held=held, total=total,
                             n_fail=total - held)
    return head + "\n" + "\n".join(body)


def write(data: dict[str, Any], root: Path = ROOT) -> None:
    from .report import chapter_title

    path = root / SWEEP_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    titles = {}
    for chapter in data["chapters"]:
        nb = root / f"{chapter}.ipynb"
        if nb.exists():
            titles[chapter] = chapter_title(nb)
    (root / PAGE_PATH).write_text(render_page(data, titles))


def staleness(root: Path = ROOT, chapters: Sequence[Path] | None = None) -> list[str]:
    """Why the committed sweep does not match the committed notebooks (empty when it does)."""
    path = root / SWEEP_PATH
    if not path.exists():
        return [f"{SWEEP_PATH} is missing"]
    data = json.loads(path.read_text())
    problems = []
    current = {led.chapter: led for led in collect_ledgers(root, chapters or all_chapters())}
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
    failed = {} if args.collect_only else run_sweep(seeds, chapters, args.jobs, args.timeout)
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
