"""The book's Sphinx extension (listed in ``_config.yml`` under ``sphinx.extra_extensions``).

Three things Jupyter Book 1.x does not do the way this book needs:

1. **References to unnumbered boxes.** The boxes carry the papers' numbering in their titles and
   no automatic number (``:nonumber:``, e.g. ``Matrix-wise invariances (Theorem 1 of ...)``), so
   sphinx-proof renders a reference to them as a bare "Theorem " with nothing after it. Here such
   a reference reads as the paper's numbering found in the title ("Theorem 1"), or else as the
   box's name ("Definition (Optimal constant solution)").
2. **Figure numbers per page.** Without numbered sections, Sphinx counts figures (and tables,
   code listings, numbered boxes) across the whole book, so a chapter could open at "Fig. 20".
   Here every page counts from 1.
3. **An author-year reference list.** The text cites author-year ("Le and Jegelka [2022]");
   the bibliography labels its entries the same way ("[Le and Jegelka, 2022]") instead of
   numbering them (the style ``authoryear``).
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes

TITLE_KEY = "implicit_bias_proof_titles"  # env attribute: {label: (type, raw title)}
BOX_TYPES = ("Theorem", "Lemma", "Proposition", "Corollary", "Definition", "Assumption", "Remark",
             "Conjecture", "Example", "Algorithm", "Axiom", "Property", "Observation", "Criterion",
             "Notation")
_NUMBERING = re.compile(r"\b(" + "|".join(BOX_TYPES) + r")s?\s+([A-Z]?\d+(?:\.\d+)*[a-z]?)\b")
_ROLE = re.compile(r"\{[\w:-]+\}`[^`]*`")


def reference_text(realtype: str, title: str) -> str:
    """The text of a reference to an unnumbered box of type ``realtype`` titled ``title`` (the
    title's MyST source): the paper's numbering it holds, else the box's name."""
    plain = " ".join(_ROLE.sub("", title).split())
    while plain.startswith("(") and plain.endswith(")"):  # sphinx-proof's title format " (%t)"
        plain = plain[1:-1].strip()
    found = _NUMBERING.search(plain)
    if found:
        return f"{found.group(1)} {found.group(2)}"
    name = re.sub(r"\s*\([^()]*\)\s*$", "", plain).strip(" ,;:") or plain
    kind = realtype.title()
    return f"{kind} ({name})" if name else kind


def _collect_titles(app: Any, doctree: nodes.document) -> None:
    env = app.env
    titles = getattr(env, TITLE_KEY, {})
    for node in doctree.traverse(nodes.Element):
        if "realtype" in node.attributes and "label" in node.attributes and "title" in node.attributes:
            titles[node["label"]] = (env.docname, node["realtype"], node["title"])
    setattr(env, TITLE_KEY, titles)


def _purge(app: Any, env: Any, docname: str) -> None:
    titles = getattr(env, TITLE_KEY, {})
    setattr(env, TITLE_KEY, {k: v for k, v in titles.items() if v[0] != docname})


def _merge(app: Any, env: Any, docnames: Any, other: Any) -> None:
    setattr(env, TITLE_KEY, {**getattr(env, TITLE_KEY, {}), **getattr(other, TITLE_KEY, {})})


def _name_unnumbered_references(app: Any, doctree: nodes.document, docname: str) -> None:
    """Give references to unnumbered boxes their text (after sphinx-proof resolved them)."""
    env = app.env
    titles = getattr(env, TITLE_KEY, {})
    proofs = getattr(env, "proof_list", {})
    for ref in list(doctree.traverse(nodes.reference)):
        target = ref.get("refid") or (ref.get("refuri", "").rsplit("#", 1)[-1] if "#" in ref.get("refuri", "") else None)
        if not target or target not in proofs or not proofs[target].get("nonumber"):
            continue
        text = ref.astext()
        realtype = proofs[target]["realtype"]
        if text.strip() != realtype.title():  # an explicit text, or something else: keep it
            continue
        _, _, title = titles.get(target, (None, realtype, ""))
        ref.children = [nodes.Text(reference_text(realtype, title))]


def _number_per_page(app: Any, env: Any) -> list[str]:
    """Restart figure (table, box, ...) numbers at 1 on every page that has no section numbers."""
    for docname, by_type in getattr(env, "toc_fignumbers", {}).items():
        for figtype, numbers in by_type.items():
            if not numbers or any(len(n) != 1 for n in numbers.values()):
                continue  # numbered sections: Sphinx's numbers already restart per section
            ordered = sorted(numbers, key=lambda k: numbers[k])
            by_type[figtype] = {k: (i + 1,) for i, k in enumerate(ordered)}
    return []


def _register_authoryear_style() -> None:
    """The pybtex style ``authoryear``: entries as in ``plain`` (sorted by author, year, title),
    labelled "Author, year", "A and B, year" or "A et al., year" (a, b, ... when two clash)."""
    from pybtex.plugin import register_plugin
    from pybtex.richtext import Text
    from pybtex.style.formatting.plain import Style as PlainStyle
    from pybtex.style.labels import BaseLabelStyle

    class AuthorYearLabels(BaseLabelStyle):
        def format_labels(self, sorted_entries):
            labels = [self._label(e) for e in sorted_entries]
            seen: dict[str, int] = {}
            clash = {lab for lab in labels if labels.count(lab) > 1}
            for lab in labels:
                if lab in clash:
                    seen[lab] = seen.get(lab, 0) + 1
                    yield lab + "abcdefghijklmnopqrstuvwxyz"[seen[lab] - 1]
                else:
                    yield lab

        @staticmethod
        def _label(entry) -> str:
            people = entry.persons.get("author") or entry.persons.get("editor") or []
            last = [Text.from_latex(" ".join(p.last_names)).render_as("text") for p in people]
            if not last:
                who = entry.fields.get("key", entry.key)
            elif len(last) == 1:
                who = last[0]
            elif len(last) == 2:
                who = f"{last[0]} and {last[1]}"
            else:
                who = f"{last[0]} et al."
            return f"{who}, {entry.fields.get('year', 'n.d.')}"

    class AuthorYearStyle(PlainStyle):
        default_label_style = "authoryear"

    register_plugin("pybtex.style.labels", "authoryear", AuthorYearLabels)
    register_plugin("pybtex.style.formatting", "authoryear", AuthorYearStyle)


def setup(app: Any) -> dict[str, Any]:
    _register_authoryear_style()
    app.connect("doctree-read", _collect_titles)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("env-get-updated", _number_per_page, priority=900)
    app.connect("doctree-resolved", _name_unnumbered_references)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
