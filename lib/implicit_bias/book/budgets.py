"""The budget sweep: every chapter that has a budget executed with more compute.

``python -m implicit_bias.book budgets`` (``make budgets``) executes each chapter whose profile
``ci`` has step counts (:func:`implicit_bias.runtime.budget_keys`) with the budget multiplier
``IMPLICIT_BIAS_BUDGET`` at x3 on seeds 0 and 1 and at x10 on seed 0 (:data:`RUNS`), into
``_build/budgets/x<k>/seed<s>/``. Each finished run is written at once into
``book/data/budget_sweep.json`` (atomically), keyed by chapter and by the SHA-256 of the chapter's
source: a sweep that stops resumes where it stopped, and a chapter whose ``.py`` changed is run
again (``--force`` re-runs chapters anyway, e.g. after a change in the library they use). The
robustness page (``book/robustness.md``) shows, per claim, its verdict and value at x1 (from the
seed sweep) / x3 / x10 and marks every verdict that changes with the budget.

A verdict that changes with the budget is not a finding at x1: the chapter restates it to what
the largest budget shows, or makes it ``qualifies`` (DESIGN.md, "Verdicts survive compute").
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from ..runtime import BUDGET_ENV, budget_keys
from .sources import ROOT, all_chapters, profile_settings, relative

SWEEP_PATH = Path("book") / "data" / "budget_sweep.json"
# (budget multiplier, seed): x3 on seeds 0 and 1, x10 on seed 0
RUNS: tuple[tuple[int, int], ...] = ((3, 0), (3, 1), (10, 0))


def run_name(k: int, seed: int) -> str:
    return f"x{k}/seed{seed}"


def run_folder(k: int, seed: int) -> Path:
    return ROOT / "_build" / "budgets" / f"x{k}" / f"seed{seed}"


def source_digest(py: Path) -> str:
    """SHA-256 (16 hex digits) of a chapter's source: a changed page is swept again."""
    return hashlib.sha256(Path(py).read_bytes()).hexdigest()[:16]


def chapter_budget(py: Path) -> list[str]:
    """The settings of the chapter's profile ``ci`` that the multiplier scales (empty: no budget).

    Read from the source without running it; a profile the reader cannot parse counts as having a
    budget (the run line of the executed page then says what was scaled)."""
    settings = profile_settings(py).get("ci")
    if settings is None:
        return ["(not parsed)"]
    return budget_keys(settings)


def load(root: Path = ROOT) -> dict[str, Any]:
    path = root / SWEEP_PATH
    if path.exists():
        return json.loads(path.read_text())
    return {"runs": [run_name(k, s) for k, s in RUNS], "chapters": {}}


def save(data: dict[str, Any], root: Path = ROOT) -> None:
    """Write the sweep atomically (a killed sweep never leaves half a file) in the toc's order."""
    order = [relative(p.with_suffix("")) for p in all_chapters()]
    chapters = data["chapters"]
    data["chapters"] = {n: chapters[n] for n in order if n in chapters}
    path = root / SWEEP_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, path)


def _execute_with_budget(k: int, seed: int, py: str, out: str, log_dir: str,
                         timeout: int | None) -> Any:
    """One chapter at budget ``k`` on ``seed`` (in a worker process: the kernel inherits the env)."""
    from .execute import execute_one

    os.environ[BUDGET_ENV] = str(k)
    try:
        return execute_one(py, out, {"seed": seed}, log_dir, None, False, timeout)
    finally:
        os.environ.pop(BUDGET_ENV, None)


def _ledger_of(k: int, seed: int, py: Path) -> dict[str, Any]:
    from .report import collect_ledgers

    led = collect_ledgers(run_folder(k, seed), [py])[0]
    if not led.executed or not led.claims:
        return {"ok": False, "claims": {}}
    claims = {}
    for c in led.claims:
        row: dict[str, Any] = {"measured": c.measured, "verdict": c.verdict}
        if c.value is not None:
            row["value"] = c.value
        claims[c.id] = row
    return {"ok": True, "run_info": led.run, "claims": claims}


def pending(data: dict[str, Any], chapters: Sequence[Path], force: bool = False
            ) -> list[tuple[Path, int, int]]:
    """The (chapter, k, seed) runs still to do: missing, failed before, or of an older source."""
    todo = []
    for py in chapters:
        name = relative(py.with_suffix(""))
        entry = data["chapters"].get(name, {})
        fresh = entry.get("source") == source_digest(py) and not force
        if fresh and not entry.get("budget_keys"):
            continue  # a page without a budget
        for k, seed in RUNS:
            done = entry.get("runs", {}).get(run_name(k, seed))
            if not (fresh and done and done.get("ok")):
                todo.append((py, k, seed))
    return todo


def run_sweep(chapters: Sequence[Path], jobs: int = 1, timeout: int | None = None,
              force: bool = False) -> int:
    """Execute the pending runs ``jobs`` at a time, cheapest first within each chapter's order,
    writing each result as it finishes. Returns the number of failed runs."""
    data = load()
    data["runs"] = [run_name(k, s) for k, s in RUNS]
    for py in chapters:  # pages without a budget are recorded without running anything
        name = relative(py.with_suffix(""))
        keys = chapter_budget(py)
        entry = data["chapters"].setdefault(name, {})
        if entry.get("source") != source_digest(py) or force:
            entry.update(source=source_digest(py), budget_keys=keys, runs={})
        entry["budget_keys"] = keys
    save(data)
    todo = pending(data, chapters, force=False)
    # x3 before x10 for every chapter: the cheap evidence arrives first
    todo.sort(key=lambda t: (t[1], [p for p in chapters].index(t[0]), t[2]))
    print(f"budget sweep: {len(todo)} run(s) to do ({', '.join(run_name(k, s) for k, s in RUNS)}), "
          f"{jobs} at a time; results go to {SWEEP_PATH} as they finish", flush=True)
    failed = 0
    log_dir = ROOT / "_build" / "budgets" / "logs"

    def record(py: Path, k: int, seed: int, outcome: Any) -> None:
        nonlocal failed
        name = relative(py.with_suffix(""))
        result = _ledger_of(k, seed, py) if outcome.ok else {"ok": False, "claims": {},
                                                              "error": outcome.error}
        result["seconds"] = round(outcome.seconds, 1)
        fresh = load()  # another sweep (a parallel invocation) may have written in the meantime
        entry = fresh["chapters"].setdefault(name, {"source": source_digest(py),
                                                    "budget_keys": chapter_budget(py), "runs": {}})
        entry.setdefault("runs", {})[run_name(k, seed)] = result
        save(fresh)
        write_page()
        failed += not result["ok"]
        status = "ok" if result["ok"] else "FAILED"
        print(f"  {status:6s} {name} x{k} seed {seed} ({outcome.seconds:.0f} s)", flush=True)

    def target(py: Path, k: int, seed: int) -> Path:
        return run_folder(k, seed) / py.relative_to(ROOT).with_suffix(".ipynb")

    if jobs <= 1:
        for py, k, seed in todo:
            record(py, k, seed, _execute_with_budget(k, seed, str(py), str(target(py, k, seed)),
                                                     str(log_dir / run_name(k, seed)), timeout))
        return failed
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(_execute_with_budget, k, seed, str(py), str(target(py, k, seed)),
                               str(log_dir / run_name(k, seed)), timeout): (py, k, seed)
                   for py, k, seed in todo}
        for fut in as_completed(futures):
            record(*futures[fut], fut.result())
    return failed


def write_page(root: Path = ROOT) -> None:
    """Regenerate the robustness page from both committed sweeps (seeds and budgets)."""
    from . import seeds

    path = root / seeds.SWEEP_PATH
    if path.exists():
        seeds.write(json.loads(path.read_text()), root)


def verdict_changes(entry: dict[str, Any], seed_entry: dict[str, Any] | None) -> dict[str, list[str]]:
    """Per claim id: the runs (``x3/seed0``, ...) whose verdict differs from the x1 run on the same
    seed (the seed sweep's), or where the claim is missing."""
    out: dict[str, list[str]] = {}
    x1 = {cid: row.get("runs", {}) for cid, row in (seed_entry or {}).get("claims", {}).items()}
    for k, seed in RUNS:
        run = entry.get("runs", {}).get(run_name(k, seed))
        if not run or not run.get("ok"):
            continue
        for cid, base in x1.items():
            ref = base.get(str(seed), {}).get("verdict")
            got = run["claims"].get(cid, {}).get("verdict")
            if ref is not None and got != ref:
                out.setdefault(cid, []).append(run_name(k, seed))
    return out


def staleness(root: Path = ROOT, chapters: Sequence[Path] | None = None) -> tuple[list[str], list[str]]:
    """``(problems, to do)``. Problems: runs of the current source whose claim ids differ from the
    committed notebook's (the sweep and the page disagree). To do: chapters with a budget whose runs
    are missing, or were made on an earlier version of the page's source (the robustness page lists
    both; ``make budgets`` runs them)."""
    from .report import collect_ledgers

    data = load(root)
    problems: list[str] = []
    todo: list[str] = []
    chapters = list(chapters or all_chapters(root))
    current = {led.chapter: led for led in collect_ledgers(root, chapters)}
    for py in chapters:
        name = relative(py.with_suffix(""))
        entry = data["chapters"].get(name)
        if entry is None:
            todo.append(f"{name}: not in the budget sweep")
            continue
        if entry.get("source") != source_digest(py):
            todo.append(f"{name}: swept on an earlier version of its source")
            continue
        if not entry.get("budget_keys"):
            continue
        ids_now = [c.id for c in current[name].claims] if name in current else []
        for k, seed in RUNS:
            run = entry.get("runs", {}).get(run_name(k, seed))
            if not run:
                todo.append(f"{name}: {run_name(k, seed)} not run yet")
            elif run.get("ok") and list(run["claims"]) != ids_now:
                problems.append(f"{name}: claim ids of {run_name(k, seed)} differ from the committed "
                                f"notebook's (make budgets CHAPTER={name}.py FORCE=1)")
    return problems, todo


def _numbers(glued: dict[str, Any]) -> list[tuple[Any, ...]]:
    """What a chapter's x1 run computed: per claim, its id, value, passing region and measured text."""
    rows = (glued.get("claims") or {}).get("claims", [])
    return [(r["id"], r.get("value"), r.get("lo"), r.get("hi"), r.get("measured")) for r in rows]


def _swept_notebook(py: Path, digest: str, root: Path) -> dict[str, Any] | None:
    """The glued values of the notebook committed with the version of ``py`` whose source has
    ``digest`` (searched in the git history), or None."""
    import subprocess
    import tempfile

    from .report import read_glued

    rel = py.relative_to(root).as_posix()
    git = lambda *a: subprocess.run(["git", "-C", str(root), *a], capture_output=True, check=False)
    for commit in git("log", "--format=%H", "--", rel).stdout.decode().split():
        blob = git("show", f"{commit}:{rel}")
        if blob.returncode or hashlib.sha256(blob.stdout).hexdigest()[:16] != digest:
            continue
        nb = git("show", f"{commit}:{Path(rel).with_suffix('.ipynb').as_posix()}")
        if nb.returncode:
            return None
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "swept.ipynb"
            path.write_bytes(nb.stdout)
            return read_glued(path)
    return None


def adopt(root: Path = ROOT) -> list[str]:
    """Carry budget runs over to a chapter's new source when the edit did not change what the page
    computes: the committed x1 ledger of the swept source and of the current one have the same claim
    ids, values, passing regions and measured texts (an edit of prose, statements, bearings or
    falsifiers). A run's verdicts then still stand. Returns the chapters adopted."""
    from .report import read_glued

    data = load(root)
    adopted = []
    for chapter, entry in data["chapters"].items():
        py = root / f"{chapter}.py"
        nb = py.with_suffix(".ipynb")
        if not py.exists() or not nb.exists() or entry.get("source") == source_digest(py):
            continue
        old = _swept_notebook(py, entry.get("source", ""), root)
        if old is not None and _numbers(old) == _numbers(read_glued(nb)):
            entry["source"] = source_digest(py)
            entry["budget_keys"] = chapter_budget(py)
            adopted.append(chapter)
    if adopted:
        save(data, root)
    return adopted


def cmd_budgets(args: Any) -> int:
    """``budgets [CHAPTER ...] [--jobs N] [--timeout S] [--force] [--collect-only]``."""
    from .sources import resolve_chapters

    chapters = resolve_chapters(args.chapters, getattr(args, "all_matching", False))
    for name in adopt():
        print(f"  adopted {name}: its edit changed no number of its x1 ledger, so its budget runs stand")
    if not args.collect_only:
        start = time.perf_counter()
        failed = run_sweep(chapters, args.jobs, args.timeout, args.force)
        print(f"budget sweep: done in {time.perf_counter() - start:.0f} s, {failed} run(s) failed",
              flush=True)
    write_page()
    problems, missing = staleness(chapters=chapters)
    for line in problems + missing:
        print("  " + line, file=sys.stderr)
    return 1 if problems else 0


def is_current(chapter: str, entry: dict[str, Any], root: Path = ROOT) -> bool:
    """Whether a chapter's budget runs were made on its current source."""
    py = root / f"{chapter}.py"
    return py.exists() and entry.get("source") == source_digest(py)


def _cell(run: dict[str, Any] | None, cid: str) -> str:
    if run is None:
        return "·"
    if not run.get("ok"):
        return "failed"
    row = run.get("claims", {}).get(cid)
    if row is None:
        return "absent"
    return f"{row['verdict']} {row['measured']}".replace("|", "\\|")


def render_chapter(chapter: str, entry: dict[str, Any] | None, seed_entry: dict[str, Any]
                   ) -> tuple[list[str], dict[str, list[str]]]:
    """The budget table of one chapter's section and its verdicts that change (claim -> runs)."""
    if entry is None:
        return ([f"*Budget:* not swept yet (`make budgets CHAPTER={chapter}.py`).", ""], {})
    if not is_current(chapter, entry):
        return ([f"*Budget:* swept on an earlier version of this page; not swept since "
                 f"(`make budgets CHAPTER={chapter}.py`).", ""], {})
    keys = entry.get("budget_keys") or []
    if not keys:
        return (["*Budget:* this page has no step, epoch or iteration count to scale (closed-form "
                 "computations, or gradient-flow times that are part of what it states).", ""], {})
    runs = entry.get("runs", {})
    done = [run_name(k, s) for k, s in RUNS if run_name(k, s) in runs]
    lines = [f"*Budget* (`{BUDGET_ENV}`) scales {', '.join(f'`{k}`' for k in keys)}; "
             + (f"runs {', '.join(done)}" if done else "no run yet")
             + (f"; not yet run: {', '.join(run_name(k, s) for k, s in RUNS if run_name(k, s) not in runs)}"
                if len(done) < len(RUNS) else "") + ".", ""]
    if not done:
        return lines, {}
    flips = verdict_changes(entry, seed_entry)
    lines += ["| claim | x1, seed 0 | x3, seed 0 | x10, seed 0 | x1, seed 1 | x3, seed 1 | changes |",
              "|---|---|---|---|---|---|---|"]
    for cid, row in seed_entry.get("claims", {}).items():
        x1 = row.get("runs", {})

        def base(seed: int) -> str:
            r = x1.get(str(seed))
            return f"{r['verdict']} {r['measured']}".replace("|", "\\|") if r else "·"

        cells = [base(0), _cell(runs.get(run_name(3, 0)), cid), _cell(runs.get(run_name(10, 0)), cid),
                 base(1), _cell(runs.get(run_name(3, 1)), cid)]
        mark = "**" + ", ".join(flips[cid]) + "** ⚑" if cid in flips else "-"
        lines.append(f"| `{cid}` | " + " | ".join(cells) + f" | {mark} |")
    lines.append("")
    return lines, flips


def render_summary(budget: dict[str, Any], changed: Sequence[tuple[str, str, list[str], str]],
                   seed_data: dict[str, Any]) -> str:
    """The budget paragraph at the top of the robustness page, and the list of changed verdicts."""
    chapters = {c: e for c, e in budget.get("chapters", {}).items() if is_current(c, e)}
    with_budget = [c for c, e in chapters.items() if e.get("budget_keys")]
    complete = [c for c in with_budget
                if all(chapters[c].get("runs", {}).get(run_name(k, s)) for k, s in RUNS)]
    partial = [c for c in with_budget if c not in complete and chapters[c].get("runs")]
    none = [c for c in seed_data.get("chapters", {}) if c not in chapters
            or (chapters[c].get("budget_keys") and not chapters[c].get("runs"))]
    no_budget = [c for c, e in chapters.items() if not e.get("budget_keys")]
    findings = [c for c in changed if c[3] in ("supports", "contradicts")]
    out = ["## Robustness to the budget", "",
           f"`make budgets` (`python -m implicit_bias.book budgets`) executes every chapter that has a "
           f"budget with `{BUDGET_ENV}` = 3 on seeds 0 and 1 and = 10 on seed 0 (every step, epoch and "
           "warm-up count of profile `ci` multiplied), resumably, into `book/data/budget_sweep.json`; "
           "the x1 columns are the seed sweep's. A verdict that changes with the budget is a statement "
           "about the budget, not about the networks: the chapter must restate the claim to what the "
           "largest budget shows, or mark it `qualifies`.", "",
           f"**{len(complete)} chapter(s) swept at every budget**, {len(partial)} partly, "
           f"{len(none)} not yet; {len(no_budget)} have no budget. **{len(changed)} verdict(s) change "
           f"with the budget** ({len(findings)} of them `supports` or `contradicts` findings).", ""]
    if none:
        out += ["Not swept yet (or swept on an earlier version of the page): " + ", ".join(f"{{doc}}`/{c}`" for c in none) + ".", ""]
    if changed:
        out += ["| chapter | claim | bearing | changes at |", "|---|---|---|---|"]
        out += [f"| {{doc}}`/{ch}` | `{cid}` | {bearing or '-'} | {', '.join(runs)} |"
                for ch, cid, runs, bearing in changed] + [""]
    return "\n".join(out) + "\n"
