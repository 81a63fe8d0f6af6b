"""Checks of the book itself: notebooks in sync with their sources, every chapter in the table
of contents, ledgers present and passing, the report up to date, the CLI's failure reports. The
site build and what a reader sees are checked in test_book_site.py, the command line in
test_book_cli.py, the pairing of .py and .ipynb in test_book_sync.py, JupyterLab in
test_jupyter.py."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import nbformat
import pytest
import yaml

from implicit_bias import book
from implicit_bias.book import report, scorecards, seeds
from implicit_bias.claims import Claim

ROOT = book.ROOT
CHAPTERS = book.all_chapters()


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc["parts"]:
        files += [c["file"] for c in part["chapters"]]
    return files


def test_there_are_chapters():
    assert CHAPTERS, "no chapter sources under chapters/<part>/*.py"


@pytest.mark.parametrize("py", CHAPTERS, ids=lambda p: p.stem)
def test_notebook_inputs_match_source(py: Path):
    """Each committed .ipynb has exactly the cells (type and source) of its .py source."""
    ipynb = py.with_suffix(".ipynb")
    assert ipynb.exists(), f"{ipynb.relative_to(ROOT)} is missing: run make execute CHAPTER={py.relative_to(ROOT)}"
    src = [(c.cell_type, c.source.strip()) for c in book.notebook_from_source(py).cells]
    nb = [(c.cell_type, c.source.strip()) for c in nbformat.read(ipynb, as_version=4).cells]
    assert nb == src, f"{ipynb.relative_to(ROOT)} differs from its source: run make sync"


@pytest.mark.parametrize("py", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_has_parameters_and_passing_ledger(py: Path):
    nb = nbformat.read(py.with_suffix(".ipynb"), as_version=4)
    tags = [t for c in nb.cells for t in c.metadata.get("tags", [])]
    assert "parameters" in tags, "the chapter needs a cell tagged 'parameters'"
    unexecuted = [i for i, c in enumerate(nb.cells)
                  if c.cell_type == "code" and c.source.strip() and c.get("execution_count") is None]
    assert not unexecuted, (f"code cells {unexecuted} carry no output of the committed run (make sync clears "
                            f"the outputs of edited cells): make execute CHAPTER={py.relative_to(ROOT)}")
    glued = book.read_glued(py.with_suffix(".ipynb"))
    assert "claims" in glued, "the committed notebook has no claims ledger: execute it"
    failed = [c["id"] for c in glued["claims"]["claims"] if c["verdict"] != "PASS"]
    assert not failed, f"claims that do not hold in the committed run: {failed}"
    last_code = [c for c in nb.cells if c.cell_type == "code"][-1]
    assert "nbval-check-output" in last_code.metadata.get("tags", []), \
        "the claims cell (the last code cell) must be tagged nbval-check-output"
    assert "NBVAL_" not in last_code.source, "use the cell tag, not an nbval comment (it shows on the site)"
    checked = [c for c in nb.cells if c.cell_type == "code" and "nbval-check-output" in c.metadata.get("tags", [])]
    assert checked == [last_code], "only the claims cell is compared by nbval"
    assert nb.metadata.get("kernelspec", {}).get("name") == "implicit-bias", "the chapter runs on the book's kernel"


BROKEN_FENCE = re.compile(r"^\s*```+\s*\{[^}]+\}.*`")


DOLLAR_DISPLAY = re.compile(r"\$\$(.+?)\$\$", re.S)


@pytest.mark.parametrize("page", [*CHAPTERS, *sorted((ROOT / "book").rglob("*.md"))], ids=lambda p: p.stem)
def test_tagged_equations_are_numbered_once(page: Path):
    """JupyterLab's MyST renderer numbers every ``$$...$$`` display, so an equation tagged with the
    paper's number there reads "(4) (1)"; the site numbers none. A tagged equation is written as
    ``\\begin{equation*} ... \\tag{4} \\end{equation*}`` (MyST's amsmath block): unnumbered by both,
    so both show the paper's number alone."""
    cells = (book.notebook_from_source(page).cells if page.suffix == ".py"
             else [nbformat.v4.new_markdown_cell(page.read_text())])
    bad = [m.group(0)[:60] for c in cells if c.cell_type == "markdown"
           for m in DOLLAR_DISPLAY.finditer(c.source) if "\\tag{" in m.group(1)]
    assert not bad, f"tagged $$ displays (use equation*): {bad}"


@pytest.mark.parametrize("page", [*CHAPTERS, *sorted((ROOT / "book").rglob("*.md"))], ids=lambda p: p.stem)
def test_directive_titles_do_not_break_their_fence(page: Path):
    """CommonMark forbids backticks in the info string of a backtick fence, so a directive such as
    ```{prf:lemma} Title {cite:t}`key` silently renders as plain text: use a colon fence
    (:::{prf:lemma} ... :::) when the title holds a role."""
    cells = (book.notebook_from_source(page).cells if page.suffix == ".py"
             else [nbformat.v4.new_markdown_cell(page.read_text())])
    bad = [line for c in cells if c.cell_type == "markdown" for line in c.source.splitlines()
           if BROKEN_FENCE.match(line)]
    assert not bad, f"use ':::' fences for these directives: {bad}"


def test_every_chapter_is_in_the_toc_and_every_toc_file_exists():
    listed = set(toc_files())
    for py in CHAPTERS:
        rel = str(py.relative_to(ROOT).with_suffix(""))
        assert rel in listed, f"{rel} is not in _toc.yml"
    for f in listed:
        assert any((ROOT / f).with_suffix(s).exists() for s in (".md", ".ipynb")), f"{f} in _toc.yml does not exist"


def test_report_errata_and_intro_summary_are_up_to_date():
    assert (ROOT / "book" / "reproduction.md").read_text() == book.render_report(ROOT, CHAPTERS) + "\n", \
        "book/reproduction.md is stale: run make report"
    assert (ROOT / "book" / "errata.md").read_text() == book.render_errata(ROOT) + "\n", \
        "book/errata.md is stale: run make report"
    summary = ROOT / report.SUMMARY_PATH
    assert summary.exists() and summary.read_text() == report.render_intro_summary(ROOT), \
        f"{report.SUMMARY_PATH} is stale: run make report"


def test_claims_cite_items_of_their_paper_with_a_bearing():
    """Every claim of a part that has an items file bears on known items, with a bearing."""
    papers = scorecards.load_papers(ROOT)
    cited = [c for c in report.cited_claims(report.collect_ledgers(ROOT, CHAPTERS)) if c.part in papers]
    bad = scorecards.problems(papers, cited)
    assert not bad, "claims without items/bearing or citing unknown items:\n" + "\n".join(bad)


def test_every_claim_states_the_origin_of_its_threshold():
    """Every claim of a committed notebook says where its threshold comes from (one of
    ``claims.ORIGINS``; an ``after-seeds`` origin also says what was seen), so the robustness page
    can list the thresholds set after results were seen (CONTRIBUTING.md, Claims)."""
    from implicit_bias.claims import ORIGINS

    bad = []
    for ledger in report.collect_ledgers(ROOT, CHAPTERS):
        for c in ledger.claims:
            kind, _, what = (c.origin or "").partition(":")
            if kind.strip() not in ORIGINS or (kind.strip() == "after-seeds" and not what.strip()):
                bad.append(f"{ledger.chapter}: {c.id} (origin {c.origin!r})")
    assert not bad, "claims without a valid origin=:\n" + "\n".join(bad)


def test_seed_sweep_is_up_to_date():
    """book/robustness.md lists exactly the current claims (checked without re-running the sweep)."""
    stale = seeds.staleness(ROOT, CHAPTERS)
    assert not stale, ("the seed sweep is stale: run make seeds (or make seeds CHAPTER=... for the "
                       "chapters that changed)\n" + "\n".join(stale))
    data = json.loads((ROOT / seeds.SWEEP_PATH).read_text())
    titles = {str(p.relative_to(ROOT).with_suffix("")): book.chapter_title(p.with_suffix(".ipynb")) for p in CHAPTERS}
    from implicit_bias.book import budgets

    budget = budgets.load(ROOT)
    bearings = {led.chapter: {c.id: c.bearing or "" for c in led.claims}
                for led in report.collect_ledgers(ROOT, CHAPTERS)}
    assert (ROOT / seeds.PAGE_PATH).read_text() == seeds.render_page(data, titles, budget, bearings), \
        "book/robustness.md is stale: run make budgets COLLECT=1 (python -m implicit_bias.book budgets --collect-only)"


def test_budget_sweep_matches_the_claims():
    """book/data/budget_sweep.json: every run made on a chapter's current source lists exactly the
    claims of its committed notebook; chapters not swept yet are named on the robustness page."""
    from implicit_bias.book import budgets

    problems, todo = budgets.staleness(ROOT, CHAPTERS)
    assert not problems, ("the budget sweep disagrees with the committed notebooks: run make budgets "
                          "CHAPTER=... FORCE=1 for these chapters\n" + "\n".join(problems))
    page = (ROOT / seeds.PAGE_PATH).read_text()
    budget_part = page.split("## Robustness to the budget", 1)[-1]
    not_swept = next((ln for ln in budget_part.splitlines() if ln.startswith("Not swept yet")), "")
    for line in todo:
        chapter = line.split(":", 1)[0]
        # every chapter has a section ("Page: {doc}`/chapter`"): what is to do must be said in it
        # (its budget line) or in the summary's list, not merely the chapter be named somewhere
        section = budget_part.split(f"Page: {{doc}}`/{chapter}`", 1)[-1].split("\n## ", 1)[0]
        said = [m for m in ("not swept yet", "swept on an earlier version", "not yet run", "(failed)")
                if m in section]
        assert said or f"/{chapter}`" in not_swept, f"robustness page does not say: {line}"


def write_chapter(path: Path, body: str) -> Path:
    header = textwrap.dedent(
        """\
        # ---
        # jupyter:
        #   kernelspec:
        #     display_name: Python 3 (ipykernel)
        #     language: python
        #     name: python3
        # ---
        """
    )
    path.write_text(header + textwrap.dedent(body))
    return path


def test_execute_reports_the_failing_cell_and_traceback(tmp_path: Path):
    py = write_chapter(
        tmp_path / "broken.py",
        """
        # %% tags=["parameters"]
        x = 1

        # %%
        y = x + 1

        # %%
        raise ValueError("a deliberate failure")
        """,
    )
    out = book.execute_one(str(py), str(tmp_path / "out" / "broken.ipynb"), {}, str(tmp_path / "logs"))
    assert not out.ok
    assert out.failed_cell == 3
    assert "a deliberate failure" in out.error
    assert out.log and "ValueError" in Path(out.log).read_text()


def test_execute_injects_parameters(tmp_path: Path):
    py = write_chapter(
        tmp_path / "good.py",
        """
        # %% tags=["parameters"]
        seed = 0

        # %%
        print("seed is", seed)
        """,
    )
    target = tmp_path / "good.ipynb"
    out = book.execute_one(str(py), str(target), {"seed": 7}, str(tmp_path / "logs"))
    assert out.ok, out.error
    text = json.dumps(nbformat.read(target, as_version=4).cells[-1].outputs)
    assert "seed is 7" in text


def test_seed_sweep_parts_can_be_swept_on_different_seeds():
    """Sweeping one part on seeds 0-4 keeps another part's seed-0 entries, and the page says which
    chapters were swept on fewer seeds (their rows count only those)."""
    row = {"statement": "s", "runs": {}}
    old = {"chapters": {"chapters/a/01_x": {"seeds": [0], "claims": {"c": {**row, "runs": {"0": {"measured": "1", "verdict": "PASS"}}}}, "failed": []}}}
    runs = {str(s): {"measured": str(s), "verdict": "PASS" if s != 3 else "FAIL"} for s in range(5)}
    new = {"chapters": {"chapters/b/01_y": {"seeds": [0, 1, 2, 3, 4], "claims": {"d": {**row, "runs": runs}}, "failed": []}}}
    order = [seeds.ROOT / "chapters/a/01_x.py", seeds.ROOT / "chapters/b/01_y.py"]
    data = seeds.merge(old, new, order)
    assert list(data["chapters"]) == ["chapters/a/01_x", "chapters/b/01_y"]
    page = seeds.render_page(data, {})
    assert "seeds 0-4" in page and "1 chapter(s) were swept on fewer seeds" in page
    assert "| `c` | 1 / 1 | - |" in page and "| `d` | 4 / 5 | 3 |" in page
    assert "**1 of 2 claims hold on every seed**" in page


def test_every_part_has_an_items_file():
    """Every folder of chapters has its scorecard data (book/items/<part>.yml), so that no claim
    escapes the items/bearing check above."""
    parts = sorted(p.name for p in (ROOT / "chapters").iterdir() if p.is_dir() and any(p.glob("*.py")))
    missing = [p for p in parts if not (ROOT / scorecards.ITEMS_FOLDER / f"{p}.yml").exists()]
    assert parts and not missing, f"parts without book/items/<part>.yml: {missing}"


def test_a_part_without_a_paper_gets_a_scorecard(tmp_path: Path):
    """``paper: null`` (the synthesis part): the items load, and the scorecard and the errata list
    name the part without a citation."""
    folder = tmp_path / scorecards.ITEMS_FOLDER
    folder.mkdir(parents=True)
    (folder / "synthesis.yml").write_text(
        "paper: null\ntitle: Predictions\nshort: Synthesis\n"
        "items:\n  - {id: p1, title: A prediction, where: P1, kind: claim}\n")
    paper = scorecards.load_papers(tmp_path)["synthesis"]
    assert paper.key is None and paper.short == "Synthesis"
    card = "\n".join(scorecards.render_scorecard(paper, scorecards.statuses(paper, [])))
    assert "cite" not in card and "no paper" in card and "not tested" in card
    claim = Claim("p1-x", "P1", "s", "p", "0", "0", True, items=("p1",), bearing="contradicts")
    cited = [scorecards.CitedClaim("chapters/synthesis/01_x", claim)]
    lines = scorecards.render_contradicted({"synthesis": paper}, cited, ["synthesis"])
    assert lines[0] == "**Synthesis**" and "cite" not in "\n".join(lines)


def test_map_is_current_and_names_every_part():
    """book/generated/map.svg is the picture implicit_bias.book.map draws from its data, and the
    map has a box for every part of the book (the parts are the chapter folders)."""
    from implicit_bias.book import map as book_map

    path = ROOT / book_map.MAP_PATH
    assert path.exists() and path.read_text() == book_map.render_map_svg(), \
        "book/generated/map.svg is stale: run python -m implicit_bias.book.map"
    folders = {p.parent.name for p in CHAPTERS}
    assert folders == {n.part for n in book_map.NODES}, "the map's boxes do not match the parts"
    page = (ROOT / "book" / "map.md").read_text()
    for py in CHAPTERS:   # the map page links every chapter and every part's scorecard
        assert f"</{py.relative_to(ROOT).with_suffix('')}>" in page, f"book/map.md does not link {py.stem}"
    for part in folders:
        assert "{ref}`scorecard-" + part.replace("_", "-") + "`" in page, f"book/map.md lacks the {part} scorecard"


def _cited_claims() -> list[scorecards.CitedClaim]:
    return [scorecards.CitedClaim(led.chapter, c, led.data)
            for led in report.collect_ledgers(ROOT, CHAPTERS) for c in led.claims]


PARTS = sorted({p.parent.name for p in CHAPTERS})


@pytest.mark.parametrize("part", PARTS)
def test_every_finding_names_its_falsifier(part: str):
    """Every supports / contradicts / qualifies / verifies row states the outcome that would have
    made it FAIL (``falsifier=``), shown with the row (DESIGN.md, honesty rules)."""
    missing = [m for m in scorecards.missing_falsifiers(_cited_claims()) if m.startswith(f"chapters/{part}/")]
    assert not missing, f"{len(missing)} finding(s) without a falsifier:\n" + "\n".join(missing)


@pytest.mark.parametrize("part", PARTS)
def test_ledger_statements_write_math_as_inline_math(part: str):
    r"""A claim's statement, falsifier and paper text are shown with MathJax on the chapter page and
    in the report, so a symbol is written as inline math (``$\eta^2$``), never as ASCII
    (``eta^2``, ``||W||``, ``<=``, ``sqrt(2)``, ``lambda``: :func:`implicit_bias.claims.ascii_math`)."""
    from implicit_bias.claims import ascii_math

    bad = [f"{led.chapter}: {c.id} ({field}): {', '.join(hits)}"
           for led in report.collect_ledgers(ROOT, [p for p in CHAPTERS if p.parent.name == part])
           for c in led.claims
           for field, text in (("statement", c.statement), ("falsifier", c.falsifier or ""),
                               ("paper", c.paper or ""))
           if (hits := ascii_math(text))]
    assert not bad, "ASCII math in ledger texts (write it as $...$):\n" + "\n".join(bad)


def test_item_titles_write_math_as_inline_math():
    r"""An item's title (``book/items/<part>.yml``) is shown where MathJax renders it: in a
    scorecard's table, the errata's list and the intro's summary (``scorecards.md_text``), so a
    symbol is written as inline math (``$R^{(1)}$``, ``$\lVert W\rVert_F$``), never as ASCII."""
    from implicit_bias.claims import ascii_math

    bad = [f"book/items/{part}.yml: {item.id}: {', '.join(hits)}"
           for part, paper in scorecards.load_papers(ROOT).items() for item in paper.items
           if (hits := ascii_math(item.title))]
    assert not bad, "ASCII math in item titles (write it as $...$):\n" + "\n".join(bad)


@pytest.mark.parametrize("part", PARTS)
def test_errata_and_scorecards_agree(part: str):
    """An item the errata call wrong is contradicted or refuted on its scorecard, an item they find
    true is not, and every contradicted or refuted item is named by an erratum
    (``<!-- items: part/id -->`` in book/errata/*.md)."""
    papers = scorecards.load_papers(ROOT)
    found = [p for p in scorecards.errata_disagreements(ROOT, papers, _cited_claims())
             if p.startswith(f"{part}/") or f" {part}/" in p]
    assert not found, "\n".join(found)
