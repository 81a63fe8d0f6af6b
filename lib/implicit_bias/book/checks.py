"""Checks of the built HTML that need no browser: cross-references that read as a bare "Lemma "
(no number, no name), figure numbers that do not start at 1 on their page, a numbered reference
list. The test suite runs them over a strict build of the committed notebooks
(``tests/test_book_site.py``); they take a folder of HTML pages and return what they find.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

REFERENCE_WORDS = ("Theorem", "Lemma", "Proposition", "Corollary", "Definition", "Assumption",
                   "Remark", "Conjecture", "Example", "Algorithm", "Axiom", "Property",
                   "Observation", "Criterion", "Notation", "Fig.", "Figure", "Table", "Equation",
                   "Eq.", "Section", "Listing")
# the kind word and nothing after it but blank space, as Sphinx writes a reference whose number
# is missing ("Lemma " + ""); a section titled "Notation" is not one
_BARE = re.compile(r"^\s*(?:" + "|".join(re.escape(w) for w in REFERENCE_WORDS) + r")\s+$")


class _Links(HTMLParser):
    """Texts of internal links (``<a class="reference internal">``) and of figure caption numbers."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.captions: list[str] = []
        self._stack: list[tuple[str, list[str]]] = []  # ("link" | "caption", text parts)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if tag == "a" and "reference" in classes and "internal" in classes and "nav-link" not in classes:
            self._stack.append(("link", []))
        elif tag == "span" and "caption-number" in classes:
            self._stack.append(("caption", []))
        elif self._stack:
            self._stack.append(("", []))

    def handle_endtag(self, tag: str) -> None:
        if not self._stack:
            return
        kind, parts = self._stack.pop()
        text = "".join(parts)
        if self._stack:
            self._stack[-1][1].append(text)
        if kind == "link":
            self.links.append(text)
        elif kind == "caption":
            self.captions.append(text)

    def handle_data(self, data: str) -> None:
        if self._stack:
            self._stack[-1][1].append(data)


def _parse(html: str) -> _Links:
    parser = _Links()
    parser.feed(html)
    return parser


def bare_references(html_dir: Path) -> dict[str, list[str]]:
    """Pages (relative paths) with cross-references whose whole text is a bare kind word ("Lemma ",
    "Fig. "), i.e. a reference to something with neither a number nor a name; the link texts."""
    found: dict[str, list[str]] = {}
    for page in sorted(Path(html_dir).rglob("*.html")):
        if "_static" in page.parts or "_sources" in page.parts:
            continue
        bad = [t for t in _parse(page.read_text()).links if _BARE.match(t)]
        if bad:
            found[str(page.relative_to(html_dir))] = bad
    return found


def figure_numbers(html: str) -> list[int]:
    """The figure numbers of a page, in order ("Fig. 3" -> 3)."""
    return [int(m.group(1)) for t in _parse(html).captions for m in [re.match(r"Fig\.\s*(\d+)", t.strip())] if m]


def misnumbered_figures(html_dir: Path) -> dict[str, list[int]]:
    """Pages whose figures are not numbered 1, 2, ... in order."""
    out = {}
    for page in sorted(Path(html_dir).rglob("*.html")):
        if "_static" in page.parts or "_sources" in page.parts:
            continue
        numbers = figure_numbers(page.read_text())
        if numbers and numbers != list(range(1, len(numbers) + 1)):
            out[str(page.relative_to(html_dir))] = numbers
    return out


def reference_labels(html: str) -> list[str]:
    """The labels of a bibliography's entries, in order (``[Le and Jegelka, 2022]`` -> the text inside)."""
    return re.findall(r'<span class="label"><span class="fn-bracket">\[</span>(.*?)<span class="fn-bracket">\]', html)
