"""The site as a reader meets it: a strict build of the committed notebooks (built once for this
file), its cross-references, figure numbers and reference list, and, in headless Chromium, its
ledgers, display equations, code and outputs (nothing clipped; what is wider than the column
scrolls with a visible scrollbar). The browser tests skip when no Chromium is installed."""

from __future__ import annotations

import html as html_module
import re
from pathlib import Path

import pytest

from implicit_bias import book
from implicit_bias.book import browser, checks, site

WIDTHS = (1280, 760)  # a laptop, and a narrow window (a tablet)


@pytest.fixture(scope="module")
def html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built strictly from the committed notebooks, as ``make book`` stages it."""
    tmp = tmp_path_factory.mktemp("site")
    stage = tmp / "src"
    book.stage_source(stage)
    site.use_local_mathjax(stage)  # served by the site when make vendored it
    rc = book.jupyter_book_build(stage, tmp / "site")
    assert rc == 0, "strict build failed: run python -m implicit_bias.book build --verbose"
    return tmp / "site" / "_build" / "html"


def pages(html: Path) -> list[str]:
    """The site's pages, without Sphinx's index/search pages and redirects (the root index.html
    only forwards to the intro: checking it races with the navigation it starts)."""
    return sorted(str(p.relative_to(html)) for p in html.rglob("*.html")
                  if not {"_static", "_sources", "_modules"} & set(p.relative_to(html).parts)
                  and p.name not in ("genindex.html", "search.html")
                  and 'http-equiv="Refresh"' not in p.read_text()[:300])


@pytest.mark.slow
def test_site_builds_strictly_from_committed_notebooks(html: Path):
    """The site builds with warnings as errors, with theorem boxes, figures and the report."""
    assert (html / "index.html").exists()
    texts = {p: (html / p).read_text() for p in pages(html)}
    assert any("proof" in t and "admonition" in t for t in texts.values()), "no theorem boxes rendered"
    assert any("<img" in t for k, t in texts.items() if k.startswith("chapters")), "no figures"
    assert "claims hold" in texts["book/reproduction.html"]
    for name, text in texts.items():
        assert "# NBVAL_" not in text, f"{name} shows an nbval marker"


@pytest.mark.slow
def test_no_cross_reference_reads_as_a_bare_lemma(html: Path):
    bare = checks.bare_references(html)
    assert not bare, "cross-references with neither a number nor a name:\n" + "\n".join(
        f"  {page}: {texts}" for page, texts in bare.items())


def test_bare_reference_check_finds_them(tmp_path: Path):
    """Negative control: the check flags what sphinx-proof writes for a reference to an unnumbered
    box, and not a link to a section that happens to be called "Notation"."""
    (tmp_path / "p.html").write_text(
        '<p>neither does <a class="reference internal" href="#x"><span class="std std-ref">Lemma </span></a>, '
        'nor <a class="reference internal" href="#y">Fig. </a>; see '
        '<a class="reference internal" href="#z">Lemma 9</a> and '
        '<a class="reference internal" href="#notation">Notation</a></p>')
    assert checks.bare_references(tmp_path) == {"p.html": ["Lemma ", "Fig. "]}


def test_reference_text_of_unnumbered_boxes():
    from implicit_bias.book.sphinx_ext import reference_text

    assert reference_text("lemma", " (Lemma 9 of {cite:t}`le2022training`)") == "Lemma 9"
    assert reference_text("theorem", " (Matrix-wise invariances (Theorem 1 of {cite:t}`le2022training`))") == "Theorem 1"
    assert reference_text("definition", " (Optimal constant solution (Sec. 3.1 of {cite:t}`kang2024extrapolate`))") \
        == "Definition (Optimal constant solution)"
    assert reference_text("remark", "") == "Remark"


@pytest.mark.slow
def test_figures_are_numbered_per_page(html: Path):
    assert not checks.misnumbered_figures(html), checks.misnumbered_figures(html)
    assert any(checks.figure_numbers((html / p).read_text()) for p in pages(html)), "no numbered figure"


def test_figure_number_check_finds_a_running_count(tmp_path: Path):
    (tmp_path / "p.html").write_text('<span class="caption-number">Fig. 20 </span><span class="caption-number">Fig. 21 </span>')
    assert checks.misnumbered_figures(tmp_path) == {"p.html": [20, 21]}


@pytest.mark.slow
def test_reference_list_is_author_year_like_the_citations(html: Path):
    labels = checks.reference_labels((html / "book" / "references.html").read_text())
    assert labels, "no bibliography entries found"
    assert all(re.fullmatch(r".+, (\d{4}[a-z]?|n\.d\.)", label) for label in labels), labels
    assert "Le and Jegelka, 2022" in labels
    # the text cites the same way: "Le and Jegelka [2022]", linked to the entry labelled as above
    intro = (html / "book" / "intro.html").read_text()
    assert re.search(r'Le and Jegelka \[<a class="reference internal" href="references.html#', intro)


chromium = pytest.mark.skipif(browser.find_chromium() is None,
                              reason="no Chromium: apt-get install chromium (or set $CHROMIUM)")


# Pages whose every table is generated from the ledgers (the report, the robustness page, the
# errata, the intro's summary): no word or number may break in any of their cells. Elsewhere the
# HTML ledgers are held to the same rule (hand-written tables may break after a hyphen).
GENERATED_TABLE_PAGES = ("book/reproduction.html", "book/robustness.html", "book/errata.html", "book/intro.html")
# Where colours are measured, in light and dark mode: the generated pages, one chapter per part,
# the how-to-run page (its figure caption)
CONTRAST_PAGES = (*GENERATED_TABLE_PAGES, "book/how_to_run.html")
MIN_CONTRAST = 4.5  # WCAG 2 AA for normal text


LEDGER_BOX_JS = """(() => Array.from(document.querySelectorAll('.claims-ledger')).map((l) => {
    const out = l.closest('div.output') || l;
    const bg = getComputedStyle(out).backgroundColor;
    return bg === 'rgba(0, 0, 0, 0)' || bg === 'transparent' || bg === getComputedStyle(document.body).backgroundColor;
  }).filter((ok) => !ok).length)()"""


def contrast_problems(chrome: browser.Chromium) -> list[str]:
    """Text of the ledgers, tables, captions and the re-run box below the contrast ratio (or, for
    captions, written thinner than a normal weight), in the page's current mode; and a ledger
    drawn inside an output box of another colour than the page (the theme's light box in dark
    mode)."""
    out = []
    boxed = chrome.evaluate(LEDGER_BOX_JS)
    if boxed:
        out.append(f"{boxed} ledger(s) inside an output box of another colour than the page")
    for c in chrome.evaluate(browser.CONTRAST_JS):
        if c["ratio"] < MIN_CONTRAST:
            out.append(f"{c['what']} {c['text']!r}: contrast {c['ratio']} ({c['color']} on {c['background']})")
        if c["what"] == "figure caption" and c["weight"] < 400:
            out.append(f"{c['what']} {c['text']!r}: font weight {c['weight']} (thin text reads faint)")
    return out


def contrast_pages(html: Path) -> list[str]:
    chapters = {}
    for page in pages(html):
        if page.startswith("chapters/"):
            chapters.setdefault(page.split("/")[1], page)
    return [*CONTRAST_PAGES, *chapters.values()]


@pytest.mark.slow
@chromium
def test_pages_show_everything_in_chromium(html: Path):
    """Every page at two widths: nothing clipped, wide content scrolls with a visible scrollbar,
    every ledger shows its bearing column and statements with the verdict column in view, no word,
    id or number is broken across lines inside a table cell (each token's Range rects sit on one
    line), a table wider than the column says so above it, and the text of ledgers, tables, captions and the re-run box keeps its contrast in light
    and dark mode."""
    if site.vendored_mathjax() is None:
        pytest.skip("MathJax is not vendored (make vendor-mathjax): equations would not render offline")
    problems, ledgers = [], 0
    measured = contrast_pages(html)
    with browser.serve(html) as base:
        for width in WIDTHS:
            with browser.Chromium(width=width, height=900) as chrome:
                for page in pages(html):
                    chrome.open(f"{base}/{page}")
                    for p in chrome.evaluate(browser.LAYOUT_CHECK_JS):
                        problems.append(f"{width}px {page}: {p['what']} {p['problem']} "
                                        f"({p['content']} px in {p['box']} px): {p['where']}")
                    for p in chrome.evaluate(browser.SCROLL_CUE_JS):
                        problems.append(f"{width}px {page}: a table {p['problem']}: {p['where']}")
                    for led in chrome.evaluate(browser.LEDGER_CHECK_JS):
                        ledgers += 1
                        assert "bears on" in led["head"] and "verdict" in led["head"], (page, led)
                        assert led["rows"] > 0 and led["bearings"] == led["rows"], (page, led)
                        assert led["statements"] == led["rows"], (page, led)
                        assert led["verdictVisible"], f"{width}px {page}: the verdict column is out of view"
                    for b in chrome.evaluate(browser.BROKEN_TOKENS_JS):
                        if page in GENERATED_TABLE_PAGES or b["ledger"]:
                            problems.append(f"{width}px {page}: {b['token']!r} broken over {b['lines']} "
                                            f"lines in the cell {b['cell']!r}")
                    if page in measured:
                        for theme in ("light", "dark"):
                            chrome.evaluate(browser.set_theme_js(theme))
                            problems += [f"{width}px {page} ({theme}): {p}" for p in contrast_problems(chrome)]
    assert not problems, "\n".join(problems)
    assert ledgers >= len(book.all_chapters()), "a chapter page shows no ledger"


def report_table_problems(chrome: browser.Chromium, label: str) -> tuple[list[str], dict[str, int]]:
    """What :data:`browser.REPORT_TABLES_JS` finds wrong on the open report page, and how many
    tables of each section it looked at."""
    problems, seen = [], {"scorecards": 0, "ledgers": 0}
    for t in chrome.evaluate(browser.REPORT_TABLES_JS):
        seen[t["section"]] += 1
        if t["rows"] == 0:
            problems.append(f"{label}: an empty {t['section']} table under #{t['where']}")
        if not t["keyVisible"]:
            problems.append(f"{label}: #{t['where']}: {t['head']}: the verdict/status column is out of view")
        if not t["fits"]:
            problems.append(f"{label}: #{t['where']}: the table scrolls sideways")
    return problems, seen


@pytest.mark.slow
@chromium
def test_report_tables_show_the_verdict_without_scrolling(html: Path):
    """Every scorecard and every ledger of the reproduction report, at both widths, in light and
    dark mode: a ledger's verdict and measured value (a scorecard's status and claims) are in view,
    and the whole table fits the column (no sideways scrolling). Negative controls: a claim column
    forced wide makes the table scroll, a wide first column pushes the verdict out of view."""
    from implicit_bias.book import report, scorecards

    text = (book.ROOT / "book" / "reproduction.md").read_text()
    expected = {"scorecards": len(scorecards.load_papers(book.ROOT)),
                "ledgers": text.count("| " + " | ".join(report.LEDGER_COLUMNS) + " |")}
    assert expected["ledgers"] == len(book.all_chapters()) and expected["scorecards"] >= 5, expected
    problems = []
    with browser.serve(html) as base:
        for width in WIDTHS:
            with browser.Chromium(width=width, height=900) as chrome:
                chrome.open(f"{base}/book/reproduction.html")
                for theme in ("light", "dark"):
                    chrome.evaluate(browser.set_theme_js(theme))
                    found, seen = report_table_problems(chrome, f"{width}px ({theme})")
                    problems += found
                    assert seen == expected, (width, theme, seen, expected)
                if width == WIDTHS[1]:
                    inject = lambda css: chrome.evaluate(
                        "(() => { const s = document.createElement('style'); s.textContent = " + repr(css)
                        + "; document.head.appendChild(s); return 1; })()")
                    inject("section#ledgers table td:nth-child(4) { min-width: 60em !important; }")
                    wide = "\n".join(report_table_problems(chrome, "control")[0])
                    assert "scrolls sideways" in wide and "out of view" not in wide, wide
                    inject("section#scorecards table td:nth-child(1) { min-width: 60em !important; }")
                    pushed = "\n".join(report_table_problems(chrome, "control")[0])
                    assert "out of view" in pushed, pushed
    assert not problems, "\n".join(problems)


@pytest.mark.slow
@chromium
def test_one_search_box(html: Path):
    """A reader sees one search control at either width (the theme's page header once added a
    second search field above the sidebar's at 1280 px); negative control: that header shown
    again is flagged."""
    with browser.serve(html) as base:
        for width in WIDTHS:
            with browser.Chromium(width=width, height=900) as chrome:
                for page in ("book/intro.html", "book/reproduction.html",
                             next(p for p in pages(html) if p.startswith("chapters/"))):
                    chrome.open(f"{base}/{page}")
                    boxes = chrome.evaluate(browser.SEARCH_BOXES_JS)
                    assert len(boxes) == 1, f"{width}px {page}: {len(boxes)} search controls: {boxes}"
                if width == WIDTHS[0]:
                    chrome.evaluate("(() => { const s = document.createElement('style'); s.textContent ="
                                    " 'header#pst-header.bd-header { display: flex !important; }';"
                                    " document.head.appendChild(s); return 1; })()")
                    assert len(chrome.evaluate(browser.SEARCH_BOXES_JS)) == 2


@pytest.mark.slow
@chromium
def test_table_checks_find_broken_words_low_contrast_and_overflow(html: Path):
    """Negative controls of the checks above, on the pages they pass: words broken anywhere (the
    old stylesheet's overflow-wrap: anywhere), the old dark-mode ledger (pink ids on light grey),
    thin faint captions, and a table that spills out of the column are each flagged."""
    chapter = next(p for p in pages(html) if p.startswith("chapters/"))
    with browser.serve(html) as base, browser.Chromium(width=WIDTHS[1], height=900) as chrome:
        inject = lambda css: chrome.evaluate(
            "(() => { const s = document.createElement('style'); s.textContent = " + repr(css)
            + "; document.head.appendChild(s); return 1; })()")
        chrome.open(f"{base}/book/reproduction.html")
        assert chrome.evaluate(browser.BROKEN_TOKENS_JS) == []
        inject("main table td, main table td * { overflow-wrap: anywhere !important; white-space: normal !important; }"
               " main table { table-layout: fixed !important; width: 100% !important; }")
        broken = chrome.evaluate(browser.BROKEN_TOKENS_JS)
        assert len(broken) > 10, broken

        # A plain-text formula may wrap after '|' or '(' (the browser's own break opportunities),
        # which splits no word; a word cut inside its letters is still found.
        chrome.open(f"{base}/book/reproduction.html")
        chrome.evaluate(
            "(() => { const t = document.createElement('table'); t.id = 'ib-probe';"
            " t.innerHTML = '<tr><td style=\"width: 3.2em; max-width: 3.2em\">s(2) = max_phi"
            " |<g,&nbsp;phi>|&nbsp;(x) 0.007 rank-two</td></tr>';"
            " document.querySelector('main').prepend(t); return 1; })()")
        assert chrome.evaluate(browser.BROKEN_TOKENS_JS) == []
        inject("#ib-probe td { overflow-wrap: anywhere !important; }")
        cut = [b["token"] for b in chrome.evaluate(browser.BROKEN_TOKENS_JS)]
        assert "max_phi" in cut or "0.007" in cut, cut

        chrome.open(f"{base}/{chapter}")
        chrome.evaluate(browser.set_theme_js("dark"))
        assert contrast_problems(chrome) == []
        inject(".claims-ledger, .claims-ledger table, html body div.cell_output div.output.text_html:has(.claims-ledger)"
               " { background: #ced6dd !important; }"
               " .claims-ledger code { color: #f3c7ee !important; }"
               " figcaption, figcaption p, figcaption .caption-text { font-weight: 300 !important; }")
        found = "\n".join(contrast_problems(chrome))
        assert "ledger id" in found and "ledger value" in found, found
        assert "output box of another colour" in found, found
        if chrome.evaluate("!!document.querySelector('figcaption')"):
            assert "font weight 300" in found, found

        chrome.open(f"{base}/book/robustness.html")
        assert chrome.evaluate(browser.LAYOUT_CHECK_JS) == []
        inject(".pst-scrollable-table-container { overflow: visible !important; }"
               " main table { min-width: 1400px; }")
        spilled = chrome.evaluate(browser.LAYOUT_CHECK_JS)
        assert any(p["what"] == "table" and "spills out" in p["problem"] for p in spilled), spilled
        inject(".pst-scrollable-table-container { overflow: auto !important; scrollbar-width: none; }"
               " .pst-scrollable-table-container::-webkit-scrollbar { display: none; height: 0; }")
        hidden = chrome.evaluate(browser.LAYOUT_CHECK_JS)
        assert any("without a visible scrollbar" in p["problem"] for p in hidden), hidden

        chrome.open(f"{base}/book/reproduction.html")
        assert chrome.evaluate(browser.SCROLL_CUE_JS) == []
        # the report's tables fit the column now: widen them, as a long unbreakable cell would
        inject("section#ledgers table { min-width: 1400px; }")
        chrome.evaluate("(() => { window.dispatchEvent(new Event('resize')); return 1; })()")
        assert chrome.evaluate(browser.SCROLL_CUE_JS) == []
        scrolling = chrome.evaluate("document.querySelectorAll('.ib-scroll-frame.ib-scrolls').length")
        assert scrolling > 0, "no table of the report scrolls at this width: the control shows nothing"
        inject(".ib-scroll-frame::before { display: none !important; } .ib-scroll-frame::after { opacity: 0 !important; }")
        cueless = chrome.evaluate(browser.SCROLL_CUE_JS)
        assert any("not shown" in p["problem"] for p in cueless) and any("shadow" in p["problem"] for p in cueless)


@pytest.mark.slow
@chromium
def test_math_written_in_a_ledger_renders(html: Path):
    """A statement written with $...$ is drawn by the site's MathJax: the markup Ledger.html gives
    it is what the page's MathJax configuration typesets (checked on a chapter page, whose cells
    MathJax otherwise ignores)."""
    from implicit_bias.claims import Ledger

    if site.vendored_mathjax() is None:
        pytest.skip("MathJax is not vendored (make vendor-mathjax): equations would not render offline")
    led = Ledger("part/01_x")
    led.below("norm", "Eq. 1", r"the ratio $\lVert W\rVert_2 / \lVert W\rVert_F$ stays below $1$", "p", 0.5, 1.0)
    assert r'<span class="math notranslate nohighlight">\(\lVert W' in led.html()
    assert r"$\lVert W\rVert_2" in led.table()  # the plain text keeps the dollars
    chapter = next(p for p in pages(html) if p.startswith("chapters/"))
    with browser.serve(html) as base, browser.Chromium(width=WIDTHS[0], height=900) as chrome:
        chrome.open(f"{base}/{chapter}")
        typeset = chrome.evaluate(
            "(() => { const out = document.querySelector('.claims-ledger').closest('.output');"
            " const d = document.createElement('div'); d.innerHTML = " + repr(led.html())
            + "; out.appendChild(d); return MathJax.typesetPromise([d]).then(() => "
            "d.querySelectorAll('td.claim-text mjx-container').length); })()")
        assert typeset == 2


@pytest.mark.slow
def test_errata_link_claim_ids_to_their_ledger_rows(html: Path):
    """Every claim id in the errata's generated list links to the row of its chapter's ledger
    (the row's HTML id exists on the page linked)."""
    errata = (html / "book" / "errata.html").read_text()
    links = re.findall(r'<a class="claim-link[^"]*" href="([^"#]+)#([^"]+)"', errata)
    assert links, "the errata link no claim id"
    ids: dict[Path, set[str]] = {}
    missing = []
    for target, anchor in links:
        page = (html / "book" / target).resolve()
        if page not in ids:
            ids[page] = set(re.findall(r'<tr id="([^"]+)"', page.read_text())) if page.exists() else set()
        if anchor not in ids[page]:
            missing.append(f"{target}#{anchor}")
    assert not missing, "errata links to no ledger row: " + ", ".join(missing[:10])


@pytest.mark.slow
def test_chapter_pages_say_how_to_rerun_them(html: Path):
    """Every chapter page shows its exact make execute command and the parameters its source
    declares, offers its .py beside its .ipynb, and shows its ledger cell's code without the nbval
    marker."""
    from implicit_bias.book.sources import chapter_spec

    for py in book.all_chapters():
        rel = py.relative_to(book.ROOT).with_suffix("")
        text = (html / rel.with_suffix(".html")).read_text()
        box = text[text.index('class="rerun-box'):]
        box = html_module.unescape(re.sub(r"<[^>]+>", "", box[:box.index("</div>")]))
        assert f"make execute CHAPTER={rel}.py" in box, rel
        for name in chapter_spec(py).parameters:
            assert f"{name} = " in box, f"{rel}: the re-run box lacks the parameter {name}"
        assert (html / "_sources" / rel.with_suffix(".py")).read_text() == py.read_text()
        assert f"_sources/{rel}.py" in text and f"_sources/{rel}.ipynb" in text
        assert "download-py-button" in text, f"{rel}: no .py in the download menu"
        assert "NBVAL_" not in text and "ledger" in text


@pytest.mark.slow
@chromium
def test_layout_check_finds_clipped_equations(html: Path):
    """Negative control: the same page with its display math forced to hide overflow is flagged."""
    if site.vendored_mathjax() is None:
        pytest.skip("MathJax is not vendored (make vendor-mathjax): equations would not render offline")
    with browser.serve(html) as base, browser.Chromium(width=WIDTHS[1], height=900) as chrome:
        chrome.open(f"{base}/book/notation.html")
        assert chrome.evaluate(browser.LAYOUT_CHECK_JS) == []
        chrome.evaluate("""(() => { const s = document.createElement('style');
            s.textContent = 'mjx-container[display="true"], div.math { overflow-x: hidden !important; }';
            document.head.appendChild(s); return 1; })()""")
        flagged = chrome.evaluate(browser.LAYOUT_CHECK_JS)
        assert any(p["what"] == "display math" and "clipped" in p["problem"] for p in flagged)
        chrome.evaluate("""(() => { const s = document.createElement('style');
            s.textContent = 'mjx-container[display="true"], div.math { overflow-x: auto !important; scrollbar-width: none; }'
              + ' mjx-container[display="true"]::-webkit-scrollbar, div.math::-webkit-scrollbar { display: none; height: 0; }';
            document.head.appendChild(s); return 1; })()""")
        hidden = chrome.evaluate(browser.LAYOUT_CHECK_JS)
        assert any("without a visible scrollbar" in p["problem"] for p in hidden), hidden
        chrome.evaluate(r"""(() => { const d = document.createElement('div');
            d.textContent = '\\[\\frac{1}{2}\\end{equation}\\]'; document.querySelector('main').appendChild(d);
            return MathJax.typesetPromise([d]).then(() => 1); })()""")
        assert chrome.wait_for("document.querySelectorAll('mjx-merror').length")
        assert any(p["problem"].startswith("MathJax error") for p in chrome.evaluate(browser.LAYOUT_CHECK_JS))


def test_build_uses_the_vendored_mathjax_when_there_is_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture):
    """``build`` (the fast build of a tree it must not modify) serves the vendored MathJax through a
    copy of the configuration, and says so when it falls back to the CDN."""
    import yaml

    from implicit_bias.book import cli

    source = tmp_path / "src"
    source.mkdir()
    (source / "_config.yml").write_text((book.ROOT / "_config.yml").read_text())
    monkeypatch.setattr(site, "ROOT", tmp_path)
    monkeypatch.setattr(cli, "ROOT", tmp_path)
    assert site.config_with_local_mathjax(source, tmp_path / "cfg.yml") is None
    monkeypatch.setattr(cli, "jupyter_book_build", lambda *a, **k: 0)
    assert cli.main(["build", "--source", str(source)]) == 0
    assert "MathJax is loaded from its CDN" in capsys.readouterr().out
    vendor = tmp_path / site.VENDORED_MATHJAX
    vendor.mkdir(parents=True)
    (vendor / "tex-mml-chtml.js").write_text("// MathJax")
    cfg = site.config_with_local_mathjax(source, tmp_path / "cfg.yml")
    conf = yaml.safe_load(cfg.read_text())["sphinx"]["config"]
    assert conf["mathjax_path"] == site.MATHJAX_PATH
    assert Path(conf["html_extra_path"][0]) == vendor.parent
    assert cli.main(["build", "--source", str(source)]) == 0
    assert "MathJax served by the site itself" in capsys.readouterr().out


# Inline formulas in the report's tables that scroll although the typeset formula fits its box (a
# pixel or two of overflow, from MathJax's hidden MathML for screen readers): [formula, overflow px].
SHORT_MATH_SCROLLS_JS = r"""
(() => Array.from(document.querySelectorAll('main table mjx-container:not([display="true"])'))
  .filter((m) => { const math = m.querySelector('mjx-math');
                   return m.scrollWidth > m.clientWidth && math && math.getBoundingClientRect().width <= m.clientWidth; })
  .map((m) => [(m.querySelector('mjx-assistive-mml') || m).textContent.slice(0, 40), m.scrollWidth - m.clientWidth]))()
"""


@pytest.mark.slow
@chromium
def test_short_formulas_in_report_tables_do_not_scroll(html: Path):
    """Only a formula longer than the cap of book.css scrolls in a report table: a short one ($L$,
    $R^{(1)}$ in an item title) shows no scrollbar. Negative control: MathJax's own width for its
    hidden MathML restored, short formulas scroll again."""
    if site.vendored_mathjax() is None:
        pytest.skip("MathJax is not vendored (make vendor-mathjax): equations would not render offline")
    with browser.serve(html) as base, browser.Chromium(width=WIDTHS[0], height=900) as chrome:
        chrome.open(f"{base}/book/reproduction.html")
        assert chrome.evaluate("document.querySelectorAll('main table mjx-container').length") > 100
        assert chrome.evaluate(SHORT_MATH_SCROLLS_JS) == []
        chrome.evaluate("""(() => { const s = document.createElement('style');
            s.textContent = 'main table mjx-container:not([display="true"]) > mjx-assistive-mml'
              + ' { max-width: none !important; }'; document.head.appendChild(s); return 1; })()""")
        assert len(chrome.evaluate(SHORT_MATH_SCROLLS_JS)) > 50
