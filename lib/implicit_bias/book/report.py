"""The pages generated from the executed chapters: the reproduction report (scorecards, then the
ledgers), the errata page and the intro's summary of results."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..claims import Claim
from . import scorecards
from .common import FAILED_KEY, literal_or_text
from .sources import ROOT, all_chapters


def read_glued(nb_path: Path) -> dict[str, Any]:
    """Values glued with ``myst_nb.glue`` in an executed notebook (``claims`` JSON, ``run_info``)."""
    import nbformat

    nb = nbformat.read(nb_path, as_version=4)
    found: dict[str, Any] = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            if name is None:
                continue
            data = out.get("data", {})
            text = data.get("application/papermill.record/text/plain")
            value = literal_or_text(text) if text is not None else None
            if name == "claims" and isinstance(value, str):
                value = json.loads(value)
            found[name] = value
    return found


def chapter_title(nb_path: Path) -> str:
    """The first markdown heading of a notebook."""
    import nbformat

    for cell in nbformat.read(nb_path, as_version=4).cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return nb_path.stem


def part_order(source_root: Path) -> tuple[list[str], dict[str, str]]:
    """Part folders in the order of the table of contents, and their captions."""
    import yaml

    toc = yaml.safe_load((source_root / "_toc.yml").read_text())
    captions: dict[str, str] = {}
    for part in toc.get("parts", []):
        for chapter in part.get("chapters", []):
            bits = chapter["file"].split("/")
            if bits[0] == "chapters":
                captions.setdefault(bits[1], part["caption"])
    return list(captions), captions


@dataclass
class ChapterLedger:
    """The ledger of one executed chapter (or why there is none)."""

    chapter: str  # chapters/<part>/<name>
    title: str
    run: str
    claims: list[Claim]
    executed: bool = True
    data: str = ""
    failed: dict[str, str] | None = None  # where and why the chapter failed in this build

    @property
    def n_pass(self) -> int:
        return sum(c.passed for c in self.claims)


def collect_ledgers(source_root: Path, chapters: Sequence[Path]) -> list[ChapterLedger]:
    """The ledgers glued in the executed notebooks of ``source_root``, in the given order."""
    out = []
    for py in chapters:
        rel = py.relative_to(ROOT).with_suffix("")
        nb = source_root / rel.with_suffix(".ipynb")
        if not nb.exists():
            out.append(ChapterLedger(str(rel), "not executed", "", [], executed=False))
            continue
        failed = _failure(nb)
        if failed is not None:
            out.append(ChapterLedger(str(rel), chapter_title(nb), "", [], executed=False, failed=failed))
            continue
        glued = read_glued(nb)
        ledger = glued.get("claims") or {}
        claims = [Claim.from_dict(r) for r in ledger.get("claims", [])]
        out.append(ChapterLedger(str(rel), chapter_title(nb), glued.get("run_info", "") or "", claims,
                                 data=ledger.get("data", "")))
    return out


def _failure(nb_path: Path) -> dict[str, str] | None:
    """The failure record of a failed chapter's page (see :func:`.site.failure_page`), or None."""
    import nbformat

    meta = nbformat.read(nb_path, as_version=4).metadata.get(FAILED_KEY, {})
    return meta.get("failed")


def cited_claims(ledgers: Sequence[ChapterLedger]) -> list[scorecards.CitedClaim]:
    return [scorecards.CitedClaim(led.chapter, c, led.data) for led in ledgers for c in led.claims]


REPORT_INTRO = """\
# Reproduction report

Every chapter ends with a ledger of claims: one statement of the page, the value the run
measured, the tolerance (whose origin, from the paper, the theory, a margin stated before the
claim's first run, or a value set after seeing seeds 0-4, the {doc}`robustness page
</book/robustness>` shows), a verdict, and what the claim
**bears on**: the items of the paper it tests and whether it `supports`, `contradicts` or
`qualifies` them, or is a `control` (a setup check, a negative control, the validation of a
construction). A verdict PASS means the page's statement held in this run; for a claim that
contradicts a paper, that statement is the book's finding against it.

The **scorecards** come first: for each paper, every checkable item (its numbered statements,
the unnumbered claims the chapters test, its figures and experiments; listed as data in
`book/items/<part>.yml`) with its status, computed from the **findings** that cite it (claims
that could have failed; a control, an identity or a bound that holds for any weights never
counts): *reproduced* (findings support it, not only through stand-ins), *qualified* (it holds
only under extra conditions or only at this scale, or where the paper tested it while a stand-in
contradicts it), *contradicted* (a finding shows it false as stated), *contradicted on stand-in
data* (a finding through a stand-in does, and none tests it directly), *proxy only*
(supported only through a stand-in), *only controls* (nothing that could disagree with the paper),
*not tested*. The ledgers of every
chapter follow. This page is generated by `python -m implicit_bias.book report` (run by
`make execute` and `make book`); do not edit it.
"""


def render_report(source_root: Path, chapters: Sequence[Path]) -> str:
    """The reproduction report (MyST markdown): scorecards per paper, then every ledger."""
    ledgers = collect_ledgers(source_root, chapters)
    papers = scorecards.load_papers(source_root)
    order, captions = part_order(source_root)
    cited = cited_claims(ledgers)
    executed = [led for led in ledgers if led.executed and led.claims]
    failed = [led for led in ledgers if led.failed is not None]
    total = sum(len(led.claims) for led in executed)
    passed = sum(led.n_pass for led in executed)
    title, _, intro = REPORT_INTRO.partition("\n")
    lines = [title, ""]
    if failed:
        names = ", ".join(f"{{doc}}`{led.title} </{led.chapter}>`" for led in failed)
        lines += [":::{admonition} A partial build", ":class: error", "",
                  f"**{len(failed)} of {len(ledgers)} chapters failed** in this build: {names}. "
                  "Their claims are missing from the counts and the scorecards below (their items "
                  "may show as not tested); each failed page says where it stopped.", ":::", ""]
    lines += [intro.lstrip("\n")]
    lines += [f"**{passed} of {total} claims hold** across {len(executed)} executed chapters "
              f"(by bearing: {_bearing_counts(cited)})"
              + (f"; {len(failed)} chapter(s) failed and are not counted." if failed else "."), ""]
    lines += ["## Scorecards", ""]
    for part in order:
        if part in papers:
            lines += scorecards.render_scorecard(papers[part], scorecards.statuses(papers[part], cited))
    lines += ["## Chapters", "", "| chapter | run | claims |", "|---|---|---|"]
    for led in ledgers:
        title = (f"{{doc}}`{led.title} </{led.chapter}>`" if led.executed or led.failed
                 else led.chapter)
        if led.failed is not None:
            run = f"**FAILED** (profile {led.failed.get('profile', '?')}) at {led.failed.get('where', '?')}: {led.failed.get('error', '')}"
            lines.append(f"| {title} | {_md_cell(run)} | - |")
            continue
        run = (led.run or "not executed") + (f" (data: {led.data})" if led.data else "")
        lines.append(f"| {title} | {_md_cell(run)} | {led.n_pass} / {len(led.claims)} |")
    lines.append("")
    lines += ["## Ledgers", ""]
    for led in executed:
        lines += [f"({scorecards.anchor(led.chapter)})=", f"### {led.title}", "",
                  f"Page: {{doc}}`/{led.chapter}`", ""]
        lines += [f"| {' | '.join(LEDGER_COLUMNS)} |", "|---" * len(LEDGER_COLUMNS) + "|"]
        lines += [_ledger_row(c) for c in led.claims]
        lines.append("")
    return "\n".join(lines)


# The report's ledgers put what a reader scans for first (the verdict, the value measured, the
# tolerance), so that it is in view at any width; the claim (id, source, statement and the paper's
# value) is folded into one cell that wraps.
LEDGER_COLUMNS = ("verdict", "measured", "tolerance", "claim", "bears on")


def _ledger_row(c: Claim) -> str:
    """One claim as a row of a report ledger (columns :data:`LEDGER_COLUMNS`)."""
    bearing = (c.bearing or "-") + (" (proxy)" if c.proxy else "")
    claim = f'{_md_code(c.id)} <span class="ib-source">{_md_cell(c.source)}</span><br>{_md_cell(c.statement)}'
    if c.paper:
        claim += f'<br><span class="ib-paper">the paper: {_md_cell(c.paper)}</span>'
    cells = [_md_cell(f"**{c.verdict}**"), _md_cell(c.measured), _md_cell(c.tolerance), claim,
             _md_cell(f"{', '.join(c.items) or '-'}: {bearing}")]
    return "| " + " | ".join(cells) + " |"


def _bearing_counts(cited: Sequence[scorecards.CitedClaim]) -> str:
    from ..claims import BEARINGS

    n = {b: sum(c.claim.bearing == b for c in cited) for b in BEARINGS}
    missing = sum(c.claim.bearing is None for c in cited)
    text = ", ".join(f"{v} {k}" for k, v in n.items())
    return text + (f", {missing} without a bearing yet" if missing else "")


def _md_cell(value: Any) -> str:
    """A table cell of generated Markdown (see :func:`.scorecards.md_text`); a leading
    ``**WORD**`` made by the generators (``**PASS**``, ``**FAILED** ...``) is kept as bold."""
    text = str(value).replace("\n", " ")
    bold = re.match(r"\*\*[^*]+\*\*", text)
    head = bold.group(0) if bold else ""
    return head + scorecards.md_text(text[len(head):])


def _md_code(value: Any) -> str:
    """An id as inline code in a table (kept on one line by the book's stylesheet)."""
    return "`" + str(value).replace("`", "'").replace("|", "\\|") + "`"


ERRATA_INTRO = """# Errata found

Places where the runs of this book disagree with a paper (or with a reading guide we used), each
with a link to the evidence. The first list is generated from the ledgers: every item of a paper
that a claim contradicts (see the scorecards of the {doc}`reproduction report </book/reproduction>`).
The sections after it discuss each erratum: what the paper says, what the run shows, the verdict.
An entry is added only after a chapter's notebook shows it. This page is assembled by
`python -m implicit_bias.book report` from the ledgers and `book/errata/*.md`.
"""


def render_errata(source_root: Path, chapters: Sequence[Path] | None = None) -> str:
    """The errata page: the generated list of contradicted items, then every
    ``book/errata/*.md`` fragment, included, grouped by part in the order of the book."""
    folders, captions = part_order(source_root)
    ledgers = collect_ledgers(source_root, all_chapters() if chapters is None else chapters)
    papers = scorecards.load_papers(source_root)
    contradicted = scorecards.render_contradicted(papers, cited_claims(ledgers), folders)

    def part_of(frag: Path) -> str | None:
        name = frag.stem.replace("-", "_")
        return next((f for f in folders if name.startswith(f)), None)

    frags = sorted((source_root / "book" / "errata").glob("*.md"),
                   key=lambda f: (folders.index(part_of(f)) if part_of(f) else len(folders), f.name))
    lines = [ERRATA_INTRO, "## Items the runs contradict", ""]
    lines += contradicted or ["No item is contradicted by a claim yet.", ""]
    if not frags:
        lines.append("No erratum has been written up yet.")
    current = None
    for frag in frags:
        part = part_of(frag)
        if part != current:
            lines += [f"## {captions.get(part, 'Other')}", ""]
            current = part
        lines += [f"```{{include}} errata/{frag.name}", ":heading-offset: 1", "```", ""]
    return "\n".join(lines)


SUMMARY_PATH = Path("book") / "generated" / "results_summary.md"


def render_intro_summary(source_root: Path, chapters: Sequence[Path] | None = None) -> str:
    """The intro's summary of results, included by ``book/intro.md``."""
    folders, _ = part_order(source_root)
    ledgers = collect_ledgers(source_root, all_chapters() if chapters is None else chapters)
    head = ("<!-- generated by python -m implicit_bias.book report from the ledgers and "
            "book/items/*.yml; do not edit -->\n")
    return head + scorecards.render_summary(scorecards.load_papers(source_root),
                                            cited_claims(ledgers), folders)


def write_report(source_root: Path = ROOT, target: Path | None = None) -> Path:
    """Regenerate the reproduction report, the errata page and the intro's summary of the tree
    ``source_root``."""
    target = target or source_root / "book" / "reproduction.md"
    chapters = all_chapters()
    target.write_text(render_report(source_root, chapters) + "\n")
    (source_root / "book" / "errata.md").write_text(render_errata(source_root, chapters) + "\n")
    summary = source_root / SUMMARY_PATH
    summary.parent.mkdir(parents=True, exist_ok=True)
    summary.write_text(render_intro_summary(source_root, chapters))
    return target


def claims_summary(source_root: Path, chapters: Sequence[Path] | None = None) -> list[str]:
    """The claims of the executed notebooks under ``source_root`` (the repository, a seed folder
    ``_build/seed3``, any ``--out-dir``), as lines to print: one per chapter found there, then the
    total. Chapters with no notebook there are skipped."""
    import re

    ledgers = collect_ledgers(source_root, all_chapters() if chapters is None else chapters)
    rows: list[str] = []
    runs: set[str] = set()
    passed = total = n = 0
    for led in ledgers:
        if led.failed is not None:
            rows.append(f"  FAILED {led.chapter}: {led.failed.get('where')}: {led.failed.get('error')}")
            continue
        if not led.executed:
            continue
        if not led.claims:
            rows.append(f"  ?      {led.chapter}: no claims ledger in the notebook (did it run to the end?)")
            continue
        n += 1
        bad = [c.id for c in led.claims if not c.passed]
        passed += led.n_pass
        total += len(led.claims)
        m = re.search(r"profile=(\S+)\s+seed=(\S+)", led.run)
        if m:
            runs.add(f"profile {m.group(1)}, seed {m.group(2)}")
        rows.append(f"  {'ok' if not bad else 'FAIL':6s} {led.chapter}: {led.n_pass} of "
                    f"{len(led.claims)} claims hold" + (f"; failing: {', '.join(bad)}" if bad else ""))
    if not rows:
        return [f"no executed chapter under {source_root}"]
    head = (f"{passed} of {total} claims hold in {n} chapter(s)"
            + (f" ({'; '.join(sorted(runs))})" if runs else ""))
    return [head, *rows]
