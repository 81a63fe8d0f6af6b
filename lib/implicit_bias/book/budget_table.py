"""The budget sweep's data and its part of the robustness page (:mod:`.budgets` runs the sweep).

``book/data/budget_sweep.json``: ``{"runs": ["x3/seed0", ...], "chapters": {chapter: {"source":
SHA-256 of the swept ``.py`` (16 hex digits), "budget_keys": [the profile's counts the multiplier
scales; empty: the page has no budget], "runs": {"x3/seed0": {"ok", "seconds", "run_info",
"claims": {id: {"measured", "verdict", "value"}}}}}}}``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .sources import ROOT

SWEEP_PATH = Path("book") / "data" / "budget_sweep.json"
# (budget multiplier, seed): x3 on seeds 0 and 1, x10 on seed 0
RUNS: tuple[tuple[int, int], ...] = ((3, 0), (3, 1), (10, 0))


def run_name(k: int, seed: int) -> str:
    """The key of a run in the sweep's file and on the page: ``x3/seed0``."""
    return f"x{k}/seed{seed}"


def run_folder(k: int, seed: int) -> Path:
    """Where the run's executed notebooks go (``_build/budgets/x<k>/seed<s>/``)."""
    return ROOT / "_build" / "budgets" / f"x{k}" / f"seed{seed}"


def source_digest(py: Path) -> str:
    """SHA-256 (16 hex digits) of a chapter's source: a changed page is swept again."""
    return hashlib.sha256(Path(py).read_bytes()).hexdigest()[:16]


def load(root: Path = ROOT) -> dict[str, Any]:
    """The committed budget sweep (an empty one when the file does not exist yet)."""
    path = root / SWEEP_PATH
    if path.exists():
        return json.loads(path.read_text())
    return {"runs": [run_name(k, s) for k, s in RUNS], "chapters": {}}


def committed_claims(chapter: str, root: Path = ROOT) -> tuple[dict[str, dict[str, dict[str, Any]]], bool]:
    """What the committed budget sweep gives for ``chapter`` (``chapters/<part>/NN_slug``), for a
    page to show beside its own run: ``({run name: {claim id: {"measured", "verdict", "value"}}},
    current)``, the runs that finished (in the order of :data:`RUNS`), and whether they were made
    on the chapter's current source (:func:`is_current`; else on an earlier version)."""
    entry = load(root)["chapters"].get(chapter, {})
    runs = {name: run["claims"] for k, s in RUNS
            if (run := entry.get("runs", {}).get(name := run_name(k, s))) and run.get("ok")}
    return runs, bool(entry) and is_current(chapter, entry, root)


def budget_readings(chapter: str, claim: str, root: Path = ROOT) -> str:
    """One line for a page's text: the verdict and measured value of ``claim`` in each finished run
    of the committed budget sweep (``"x3/seed0 FAIL 0.08, x3/seed1 FAIL 0.06"``), or ``"no
    committed budget run"``. Read from the file, so a statement never types a swept number."""
    runs, _ = committed_claims(chapter, root)
    parts = [f"{name} {row['verdict']} {row['measured']}" for name, claims in runs.items()
             if (row := claims.get(claim))]
    return ", ".join(parts) or "no committed budget run"


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


def is_current(chapter: str, entry: dict[str, Any], root: Path = ROOT) -> bool:
    """Whether a chapter's budget runs were made on its current source."""
    py = root / f"{chapter}.py"
    return py.exists() and entry.get("source") == source_digest(py)


def _verdict_cell(row: dict[str, Any]) -> str:
    """``VERDICT value`` for a table cell, the value on one line (a number like ``1.6e-15`` would
    otherwise break at its minus sign)."""
    measured = str(row["measured"]).replace("|", "\\|")
    return f'{row["verdict"]} <span class="nowrap">{measured}</span>'


def _cell(run: dict[str, Any] | None, cid: str) -> str:
    if run is None:
        return "·"
    if not run.get("ok"):
        return "failed"
    row = run.get("claims", {}).get(cid)
    if row is None:
        return "absent"
    return _verdict_cell(row)


def render_chapter(chapter: str, entry: dict[str, Any] | None, seed_entry: dict[str, Any]
                   ) -> tuple[list[str], dict[str, list[str]]]:
    """The budget table of one chapter's section and its verdicts that change (claim -> runs)."""
    if entry is None:
        return ([f"*Budget:* not swept yet (`make budgets CHAPTER={chapter}.py`).", ""], {})
    if not is_current(chapter, entry):
        return ([f"*Budget:* swept on an earlier version of this page; not swept since "
                 f"(`make budgets CHAPTER={chapter}.py`).", ""], {})
    from ..runtime import BUDGET_ENV  # here, not at the top: importing the book loads no torch

    keys = entry.get("budget_keys") or []
    if not keys:
        return (["*Budget:* this page has no step, epoch or iteration count to scale (closed-form "
                 "computations, or gradient-flow times that are part of what it states).", ""], {})
    runs = entry.get("runs", {})
    done = [run_name(k, s) for k, s in RUNS if run_name(k, s) in runs]
    named = [n + ("" if runs[n].get("ok") else " (failed)") for n in done]
    lines = [f"*Budget* (`{BUDGET_ENV}`) scales {', '.join(f'`{k}`' for k in keys)}; "
             + (f"runs {', '.join(named)}" if done else "no run yet")
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
            return _verdict_cell(r) if r else "·"

        cells = [base(0), _cell(runs.get(run_name(3, 0)), cid), _cell(runs.get(run_name(10, 0)), cid),
                 base(1), _cell(runs.get(run_name(3, 1)), cid)]
        mark = "**" + ", ".join(flips[cid]) + "** ⚑" if cid in flips else "-"
        lines.append(f"| `{cid}` | " + " | ".join(cells) + f" | {mark} |")
    lines.append("")
    return lines, flips


def render_summary(budget: dict[str, Any], changed: Sequence[tuple[str, str, list[str], str]],
                   seed_data: dict[str, Any]) -> str:
    """The budget paragraph at the top of the robustness page, and the list of changed verdicts."""
    from ..runtime import BUDGET_ENV

    chapters = {c: e for c, e in budget.get("chapters", {}).items() if is_current(c, e)}
    with_budget = [c for c, e in chapters.items() if e.get("budget_keys")]
    # a failed run (killed, timed out, an error in a cell) is no evidence: the chapter is partly swept
    complete = [c for c in with_budget
                if all((chapters[c].get("runs", {}).get(run_name(k, s)) or {}).get("ok") for k, s in RUNS)]
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
