"""What a reader and a re-runner meet outside the browser: the commands' messages for misleading
inputs (a name that matches several chapters, a file that is not a chapter, a missing data set),
``make`` passing PROFILE and PARAMS through (or refusing them), ``build --help``, the nbval marker
kept off the site, the HTML of the ledgers (row ids, math, words kept whole), the Markdown of the
generated tables, and the documentation that points only inside the repository."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import nbformat
import pytest

from implicit_bias import book
from implicit_bias.book import cli, scorecards, site
from implicit_bias.book.execute import Outcome, print_failures
from implicit_bias.book.sources import ChapterNotFound, resolve_chapters
from implicit_bias.claims import Claim, Ledger

ROOT = book.ROOT


# --------------------------------------------------------------------------- choosing chapters

def test_a_name_matching_several_chapters_lists_them_and_asks_for_one():
    with pytest.raises(ChapterNotFound) as err:
        resolve_chapters(["02"])
    message = str(err.value)
    matching = [p for p in book.all_chapters() if "02" in str(p.relative_to(ROOT))]
    assert len(matching) > 1
    assert f"'02' matches {len(matching)} chapters" in message
    for p in matching:
        assert str(p.relative_to(ROOT)) in message
    assert "ALL=1" in message and "--all-matching" in message
    assert resolve_chapters(["02"], all_matching=True) == matching


def test_one_match_a_path_or_a_notebook_selects_that_chapter():
    first = book.all_chapters()[0]
    rel = first.relative_to(ROOT)
    assert resolve_chapters([str(rel)]) == [first]
    assert resolve_chapters([str(rel.with_suffix(".ipynb"))]) == [first]
    assert resolve_chapters([first.stem]) == [first]


@pytest.mark.parametrize("name, what", [("lib/implicit_bias/models.py", "is not a chapter"),
                                        ("chapters/invariances/99_nope.py", "does not exist"),
                                        ("nothing-like-a-chapter", "no chapter matches")])
def test_a_file_that_is_not_a_chapter_says_what_a_chapter_is(name: str, what: str):
    with pytest.raises(ChapterNotFound) as err:
        resolve_chapters([name])
    message = str(err.value)
    assert what in message and str(book.all_chapters()[0].relative_to(ROOT)) in message


def test_the_command_line_refuses_an_ambiguous_name_before_running(capsys: pytest.CaptureFixture):
    with pytest.raises(SystemExit) as err:
        cli.main(["execute", "02", "--profile", "full"])
    assert "matches" in str(err.value) and "nothing" not in capsys.readouterr().out


# --------------------------------------------------------------------------- make passes things through

def make_n(*args: str) -> str:
    done = subprocess.run(["make", "-n", "--no-print-directory", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    return done.stdout + done.stderr


def book_command(out: str, command: str) -> str:
    lines = out.replace("\\\n", " ").splitlines()
    return " ".join(next(ln for ln in lines if f"implicit_bias.book {command}" in ln).split())


@pytest.mark.skipif(subprocess.run(["make", "--version"], capture_output=True).returncode != 0,
                    reason="no make")
def test_make_execute_passes_profile_params_and_all_through():
    cmd = book_command(make_n("execute", "CHAPTER=01_conserved", "PROFILE=full", "PARAMS=-p seed 3"), "execute")
    assert "--profile full" in cmd and "-p seed 3" in cmd and "--out-dir _build/runs" in cmd
    cmd = book_command(make_n("execute", "CHAPTER=01_conserved", "SEED=2"), "execute")
    assert "--seed 2" in cmd and "--out-dir _build/seed2" in cmd
    cmd = book_command(make_n("execute", "CHAPTER=01_conserved"), "execute")
    assert "--out-dir" not in cmd and "--profile ci" in cmd  # in place: profile ci, defaults
    cmd = book_command(make_n("execute", "CHAPTER=02", "ALL=1", "OUT=_build/x", "PROFILE=full"), "execute")
    assert "--all-matching" in cmd and "--out-dir _build/x" in cmd
    cmd = book_command(make_n("book", "PROFILE=full", "PARAMS=-p seed 1"), "book")
    assert "--profile full" in cmd and "-p seed 1" in cmd
    assert "--yes" not in cmd  # without a GPU, such a run stops at its estimate: CONFIRM=1 goes ahead
    assert book_command(make_n("book", "PROFILE=full", "CONFIRM=1"), "book").endswith(" --yes")
    assert book_command(make_n("execute", "CHAPTER=02", "PROFILE=full", "CONFIRM=1"), "execute").endswith(" --yes")
    cmd = book_command(make_n("lab", "PORT=8899", "BROWSER=no"), "lab")
    assert cmd.endswith("lab --port 8899 --no-browser")
    assert "--no-browser" not in book_command(make_n("lab"), "lab")
    assert book_command(make_n("site"), "build").endswith("implicit_bias.book build")
    # BUDGET=k runs outside the committed notebooks (_build/runs); the budget sweep's switches
    cmd = book_command(make_n("execute", "CHAPTER=02", "ALL=1", "BUDGET=3"), "execute")
    assert "--budget 3" in cmd and "--out-dir _build/runs" in cmd
    cmd = book_command(make_n("budgets", "CHAPTER=02", "ALL=1", "FORCE=1", "JOBS=2"), "budgets")
    assert "--all-matching" in cmd and "--force" in cmd and "--jobs 2" in cmd and "--collect-only" not in cmd
    assert "--collect-only" in book_command(make_n("budgets", "COLLECT=1"), "budgets")
    refused = make_n("seeds", "PROFILE=full")
    assert "make seeds runs profile ci" in refused and "implicit_bias.book seeds" not in refused


def test_build_help_describes_its_options(capsys: pytest.CaptureFixture):
    with pytest.raises(SystemExit):
        cli.main(["build", "--help"])
    text = capsys.readouterr().out
    for option in ("--source", "--output", "--verbose"):
        assert re.search(re.escape(option) + r"(?: DIR)?\s+\S", text), option
    assert "committed notebooks" in text and "_build/site" in text
    with pytest.raises(SystemExit):
        cli.main(["lab", "--help"])
    text = capsys.readouterr().out
    assert "PORT" in text and "BROWSER=no" in text


# --------------------------------------------------------------------------- a missing data set

def test_the_fallback_hint_reaches_the_terminal(capsys: pytest.CaptureFixture):
    """The lines of a chapter's error after its first (a missing data set: where to get it, and
    -p allow_fallback True) are printed with the failure, not only kept in the traceback file."""
    from implicit_bias.book.execute import _error_rest

    class Failed(Exception):
        evalue = ("No MNIST file in data/mnist\nMNIST is not available, and this chapter does not fall "
                  "back to the digits unless asked: re-run with the parameter allow_fallback=True "
                  "(e.g. -p allow_fallback True)")

    more = _error_rest(Failed())
    outcome = Outcome("chapters/x/01_y", "out.ipynb", False, 1.0, 3, "DataNotFound: No MNIST file",
                      "_build/logs/01_y.traceback.txt", 2, 9, "data = load()", more)
    assert print_failures([outcome]) == 1
    printed = capsys.readouterr().out
    assert "-p allow_fallback True" in printed and "traceback:" in printed


# --------------------------------------------------------------------------- the nbval marker

def notebook_with_ledger_cell(marker: str | None, tag: bool) -> nbformat.NotebookNode:
    led = Ledger("part/01_x")
    led.below("small", "Eq. 1", "x is small", "p", 0.5, 1.0, items="eq1", bearing="supports")
    source = "\n".join(([marker] if marker else []) + ["ledger.report()"])
    cell = nbformat.v4.new_code_cell(source)
    if tag:
        cell.metadata["tags"] = ["nbval-check-output"]
    cell.outputs = [
        nbformat.v4.new_output("display_data", data={"text/plain": led.table(), "text/html": "<div class=\"claims-ledger\"><table class=\"claims-table\">old</table></div>"}),
        nbformat.v4.new_output("display_data", data={"application/papermill.record/text/plain": repr(led.to_json())},
                               metadata={"scrapbook": {"name": "claims"}}),
    ]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# A chapter"), nbformat.v4.new_code_cell("x = 1  # NBVAL_ in a comment stays"), cell]
    return nb


@pytest.mark.parametrize("marker, tag", [("# NBVAL_CHECK_OUTPUT", False), (None, True), ("# NBVAL_CHECK_OUTPUT", True)])
def test_the_site_drops_the_nbval_comment_and_hides_nothing_else(tmp_path: Path, marker, tag):
    stage = tmp_path / "stage"
    path = stage / "chapters" / "part" / "01_x.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(notebook_with_ledger_cell(marker, tag), path)
    site.prepare_notebooks(stage)
    nb = nbformat.read(path, as_version=4)
    assert nb.cells[2].source == "ledger.report()"
    assert nb.cells[1].source == "x = 1  # NBVAL_ in a comment stays"
    assert ("nbval-check-output" in nb.cells[2].metadata.get("tags", [])) == tag
    html = nb.cells[2].outputs[0]["data"]["text/html"]
    assert 'id="claim-part-01-x-small"' in html, "the ledger was not redrawn from its glued claims"
    assert nb.cells[2].outputs[0]["data"]["text/plain"].startswith("id ")


def test_without_nbval_markers():
    assert site.without_nbval_markers("# NBVAL_CHECK_OUTPUT\nledger.report()") == "ledger.report()"
    assert site.without_nbval_markers("a = 1\n  # NBVAL_SKIP\nb") == "a = 1\nb"
    assert site.without_nbval_markers("print('# NBVAL_ is text')") == "print('# NBVAL_ is text')"


def test_refresh_ledgers_command_redraws_only_the_ledger_html(tmp_path: Path, monkeypatch):
    nb = notebook_with_ledger_cell("# NBVAL_CHECK_OUTPUT", False)
    assert site.refresh_ledger_html(nb, "part/01_x")
    assert nb.cells[2].source.startswith("# NBVAL_CHECK_OUTPUT")  # the source is the chapter's
    assert not site.refresh_ledger_html(nb, "part/01_x"), "a second pass changes nothing"


# --------------------------------------------------------------------------- the ledger's HTML

def test_ledger_rows_have_ids_math_and_words_kept_whole():
    led = Ledger("invariances/01_conserved_quantities")
    led.below("lemma3-gf", "Lemma 3, Eq. (4)", r"the norm $\|W\|_2 < 1$ stays below 1e-3 on low-rank data",
              "drift 0; see (1/sqrt2)^(k/L)", 4.4e-16, 1e-3, items=("lemma3", "eq4-b"), bearing="supports")
    led.holds("long", "s", "t", "p", "gap 1e-16; stronger bound fails: True", True, "non-increasing",
              items="i", bearing="control")
    page = led.html()
    assert 'id="claim-invariances-01-conserved-quantities-lemma3-gf"' in page
    assert Ledger.row_id("invariances/01_conserved_quantities", "lemma3-gf") == \
        "claim-invariances-01-conserved-quantities-lemma3-gf"
    assert r'<span class="math notranslate nohighlight">\(\|W\|_2 &lt; 1\)</span>' in page
    assert '<span class="nowrap">1e-3</span>' in page and "low-rank" in page
    assert '<span class="nowrap">(1/sqrt2)^(k/L)</span>' in page
    assert '<code class="claim-id">lemma3-gf</code>' in page
    assert '<span class="claim-item">eq4-b</span>' in page
    assert '<code class="nowrap">4.4e-16</code>' in page
    assert '<span class="nowrap">1e-16;</span>' in page  # a long value wraps only at spaces
    assert r"$\|W\|_2 < 1$" in led.table()  # the plain text keeps what the chapter wrote


def test_generated_table_cells_escape_markdown_and_keep_math():
    text = scorecards.md_text(r"<in,g_in> |x| $\|W\|_2$ *a* 4.4e-16 low-rank")
    assert text.startswith(r"\<in,g\_in\>") and r"\|x\|" in text
    assert r"$\\|W\\|_2$" in text  # math kept (its bars escaped for the table)
    assert r"\*a\*" in text and '<span class="nowrap">4.4e-16</span>' in text and " low-rank" in text


def test_generated_running_text_keeps_math_verbatim():
    r"""Outside a table (the errata list, the results summary) nothing removes a backslash put
    before a ``|``, and MathJax reads ``\|`` as a double bar: math is kept as written there, while
    a bar in the text around it is still escaped."""
    text = scorecards.md_text(r"a|b $\lvert A\rvert_+ = |A|_+$ and $\|W\|_2$", table=False)
    assert r"$\lvert A\rvert_+ = |A|_+$" in text and r"$\|W\|_2$" in text
    assert text.startswith(r"a\|b")
    assert scorecards.md_text("$|A|_+$") == r"$\|A\|_+$"  # in a table cell, escaped as before


def test_errata_claim_ids_link_their_ledger_rows():
    claim = Claim("thm1-p2-relu", "Thm 1", "s", "p", "0", "0", True, items=("thm1",), bearing="contradicts")
    link = scorecards.claim_link(scorecards.CitedClaim("chapters/invariances/01_conserved_quantities", claim))
    assert link.startswith('<a class="claim-link') and "<code>thm1-p2-relu</code>" in link
    assert ('href="../chapters/invariances/01_conserved_quantities.html'
            '#claim-invariances-01-conserved-quantities-thm1-p2-relu"') in link


def test_rerun_commands_of_a_chapter():
    from implicit_bias.book.sphinx_ext import rerun_commands

    again, example = rerun_commands("chapters/p/01_x", {"profile": "ci", "seed": 0, "allow_fallback": False})
    assert again == "make execute CHAPTER=chapters/p/01_x.py"
    assert example == 'make execute CHAPTER=chapters/p/01_x.py PROFILE=full PARAMS="-p allow_fallback True"'
    assert rerun_commands("chapters/p/01_x", {"seed": 0})[1].endswith('PARAMS="-p seed 1"')


# --------------------------------------------------------------------------- documentation

def test_documentation_points_only_inside_the_repository():
    """CONTRIBUTING sends contributors to ARCHITECTURE.md (in the repository), which describes the
    layers, the import rule and the life of a claim; no page names a file outside the checkout."""
    contributing = (ROOT / "CONTRIBUTING.md").read_text()
    assert "ARCHITECTURE.md" in contributing and "DESIGN" not in contributing
    arch = (ROOT / "ARCHITECTURE.md").read_text()
    for words in ("toolkit", "machinery", "parts", "chapters", "import rule", "scorecard", "Ledger.html"):
        assert words in arch, words
    for doc in ("README.md", "CONTRIBUTING.md", "ARCHITECTURE.md", "book/how_to_run.md"):
        text = (ROOT / doc).read_text()
        assert "../shared" not in text and "/work/" not in text, doc
        for name in re.findall(r"`((?:lib|tests|book|chapters|benchmarks)/[\w./<>-]+)`", text):
            if "<" not in name and "*" not in name:
                assert (ROOT / name).exists(), f"{doc} names {name}, which is not in the repository"


def test_readme_documents_make_site_and_the_registries():
    readme = (ROOT / "README.md").read_text()
    assert "make site" in readme and "no network beyond PyPI" not in readme
    assert "npm" in readme and "PyPI" in readme
    assert "PORT=" in readme and "BROWSER=no" in readme and "ALL=1" in readme and "PARAMS=" in readme


def test_map_caption_speaks_to_readers():
    page = (ROOT / "book" / "map.md").read_text()
    caption = page[page.index("```{figure}"):]
    caption = caption[:caption.index("\n```", 3)]
    for note in ("python -m", "regenerate", "tests check"):
        assert note not in caption, f"the map's caption carries a maintainer note: {note!r}"


def test_jupyterlab_myst_is_pinned_everywhere():
    pins = dict(re.findall(r"^([\w-]+)==([\w.]+)", (ROOT / "requirements.txt").read_text(), re.M))
    assert "jupyterlab-myst" in pins and "jupyterlab" in pins
    env = (ROOT / "environment.yml").read_text()
    assert "-r requirements.txt" in env  # environment.yml installs the same pins
    from importlib.metadata import version

    assert version("jupyterlab-myst") == pins["jupyterlab-myst"], "run make install"
