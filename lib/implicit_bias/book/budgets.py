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

from .budget_table import (RUNS, SWEEP_PATH, load, run_folder, run_name, source_digest,  # noqa: F401
                           verdict_changes)
from .common import Outcome, write_atomic
from .sources import ROOT, all_chapters, profile_settings, relative



def chapter_budget(py: Path) -> list[str]:
    """The settings of the chapter's profile ``ci`` that the multiplier scales (empty: no budget).

    Read from the source without running it; a profile the reader cannot parse counts as having a
    budget (the run line of the executed page then says what was scaled)."""
    from ..runtime import budget_keys  # here, not at the top: the book's command line loads no torch

    settings = profile_settings(py).get("ci")
    if settings is None:
        return ["(not parsed)"]
    return budget_keys(settings)


def save(data: dict[str, Any], root: Path = ROOT) -> None:
    """Write the sweep atomically (a killed sweep never leaves half a file) in the toc's order."""
    order = [relative(p.with_suffix(""), root) for p in all_chapters(root)]
    chapters = data["chapters"]
    data["chapters"] = {n: chapters[n] for n in order if n in chapters}
    write_atomic(root / SWEEP_PATH, json.dumps(data, indent=1) + "\n")


def _execute_with_budget(k: int, seed: int, py: str, out: str, log_dir: str,
                         timeout: int | None) -> Any:
    """One chapter at budget ``k`` on ``seed`` (in a worker process: the kernel inherits the env)."""
    from ..runtime import BUDGET_ENV
    from .execute import execute_one

    before = os.environ.get(BUDGET_ENV)
    os.environ[BUDGET_ENV] = str(k)
    try:
        return execute_one(py, out, {"seed": seed}, log_dir, None, False, timeout)
    finally:  # leave the caller's environment as it was (with jobs=1 this is the caller's process)
        if before is None:
            os.environ.pop(BUDGET_ENV, None)
        else:
            os.environ[BUDGET_ENV] = before


def _ledger_of(k: int, seed: int, py: Path) -> dict[str, Any]:
    """The claims of one budget run, with the data it used. A run whose claims are marked ``proxy``
    where the committed page's are not (or the reverse) read other data than the page (e.g. the
    checkout that ran it has no local MNIST and the page fell back to its stand-in): it is recorded
    as failed, saying so, and is never compared with the page."""
    from .report import collect_ledgers

    led = collect_ledgers(run_folder(k, seed), [py])[0]
    if not led.executed or not led.claims:
        return {"ok": False, "claims": {}}
    claims = {}
    for c in led.claims:
        row: dict[str, Any] = {"measured": c.measured, "verdict": c.verdict}
        if c.value is not None:
            row["value"] = c.value
        if c.proxy:
            row["proxy"] = True
        claims[c.id] = row
    result = {"ok": True, "run_info": led.run, "claims": claims}
    if led.data:
        result["data"] = led.data
    committed = collect_ledgers(ROOT, [py])[0]
    page = {c.id: c.proxy for c in committed.claims}
    differ = sorted(c.id for c in led.claims if c.id in page and c.proxy != page[c.id])
    if differ:
        result.update(ok=False, error=(
            f"the run used other data than the committed page ({led.data or 'data not stated'}; "
            f"stand-in flags differ on {', '.join(differ)}): make the page's data available in the "
            "checkout that runs the sweep (`make data-mnist`), then run it again"))
    return result


def pending(data: dict[str, Any], chapters: Sequence[Path]) -> list[tuple[Path, int, int]]:
    """The (chapter, k, seed) runs still to do: missing, failed before, or of an older source.
    (``--force`` is :func:`run_sweep` emptying the chapters' runs first.)"""
    todo = []
    for py in chapters:
        name = relative(py.with_suffix(""))
        entry = data["chapters"].get(name, {})
        fresh = entry.get("source") == source_digest(py)
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
    todo = pending(data, chapters)
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
            py, k, seed = futures[fut]
            try:
                outcome = fut.result()
            except Exception as err:  # a worker killed (out of memory, a signal): record it, go on
                outcome = Outcome(relative(py), str(target(py, k, seed)), False, 0.0,
                                  error=f"the worker running it died: {type(err).__name__}: {err}")
            record(py, k, seed, outcome)
    return failed


def write_page(root: Path = ROOT) -> None:
    """Regenerate the robustness page from both committed sweeps (seeds and budgets)."""
    from . import seeds

    path = root / seeds.SWEEP_PATH
    if path.exists():
        seeds.write(json.loads(path.read_text()), root)


def staleness(root: Path = ROOT, chapters: Sequence[Path] | None = None) -> tuple[list[str], list[str]]:
    """``(problems, to do)``. Problems: runs of the current source whose claim ids differ from the
    committed notebook's (the sweep and the page disagree). To do: chapters with a budget whose runs
    are missing or failed, or were made on an earlier version of the page's source (the robustness
    page lists them; ``make budgets`` runs them)."""
    from .report import collect_ledgers

    data = load(root)
    problems: list[str] = []
    todo: list[str] = []
    chapters = list(chapters or all_chapters(root))
    current = {led.chapter: led for led in collect_ledgers(root, chapters)}
    for py in chapters:
        name = relative(py.with_suffix(""), root)
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
            elif not run.get("ok"):
                todo.append(f"{name}: {run_name(k, seed)} failed ({run.get('error') or 'no ledger'}; "
                            f"make budgets CHAPTER={name}.py runs it again)")
            elif run.get("ok") and list(run["claims"]) != ids_now:
                problems.append(f"{name}: claim ids of {run_name(k, seed)} differ from the committed "
                                f"notebook's (make budgets CHAPTER={name}.py FORCE=1)")
    return problems, todo


def _same_up_to_kernels(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether two x1 ledgers differ only as two machines' kernels may make them differ: the same
    claim ids in order, the same passing regions and verdicts, and every value within the current
    ledger's tolerance across machines (its ``vtol``, else :func:`~implicit_bias.claims.default_vtol`,
    the rule the test command applies to a re-executed notebook)."""
    from types import SimpleNamespace

    from ..claims import default_vtol

    rows = lambda glued: (glued.get("claims") or {}).get("claims", [])
    before, after = rows(old), rows(new)
    if [r["id"] for r in before] != [r["id"] for r in after]:
        return False
    for b, a in zip(before, after):
        if any(b.get(k) != a.get(k) for k in ("lo", "hi", "verdict")):
            return False
        if (b.get("value") is None) != (a.get("value") is None):
            return False
        if a.get("value") is not None:
            tol = a.get("vtol")
            if tol is None:
                tol = default_vtol(SimpleNamespace(value=a["value"], lo=a.get("lo"), hi=a.get("hi")))
            if not abs(a["value"] - b["value"]) <= tol:
                return False
    return True


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
    falsifiers), or differ only as another machine's kernels may make them differ
    (:func:`_same_up_to_kernels`: a page re-executed on a machine with other kernels). A run's
    verdicts then still stand. Returns the chapters adopted."""
    from .report import read_glued

    data = load(root)
    adopted = []
    for chapter, entry in data["chapters"].items():
        py = root / f"{chapter}.py"
        nb = py.with_suffix(".ipynb")
        if not py.exists() or not nb.exists() or entry.get("source") == source_digest(py):
            continue
        old = _swept_notebook(py, entry.get("source", ""), root)
        if old is None:
            continue
        current = read_glued(nb)
        if _numbers(old) == _numbers(current) or _same_up_to_kernels(old, current):
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
        print(f"  adopted {name}: its x1 ledger is unchanged (up to the tolerance across machines), "
              "so its budget runs stand")
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


