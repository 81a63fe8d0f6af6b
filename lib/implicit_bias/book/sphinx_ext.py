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

And three things for the reader who wants to re-run a page:

4. **The box "Re-run this page"** under the title of every chapter: its exact ``make execute``
   command, the parameters it declares (read from its ``.py`` with :func:`.sources.chapter_spec`,
   without running anything), how to run it with other values, and its ``.py`` and ``.ipynb``.
5. **The ``.py`` source for download** beside the ``.ipynb`` (the theme's download menu, and
   ``_sources/`` of the site).
6. **No nbval markers.** A ``# NBVAL_CHECK_OUTPUT`` comment line in a code cell means something to
   the test suite, not to a reader: it is dropped from the page (a cell tagged
   ``nbval-check-output`` shows nothing of the kind). Nothing else is hidden.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.transforms import SphinxTransform

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


CHAPTERS = "chapters/"
NBVAL_LINE = re.compile(r"^\s*# ?NBVAL_[A-Z_]+\s*$")


def chapter_source(srcdir: Path, docname: str) -> Path | None:
    """The ``.py`` of a chapter page (None for other pages, or when the tree has no ``.py``)."""
    if not docname.startswith(CHAPTERS):
        return None
    py = Path(srcdir) / (docname + ".py")
    return py if py.exists() else None


def _value_text(value: Any) -> str:
    from .sources import NOT_A_LITERAL

    return "(an expression)" if value is NOT_A_LITERAL else repr(value)


def rerun_commands(docname: str, parameters: dict[str, Any]) -> tuple[str, str]:
    """The command that re-executes a chapter as committed, and an example with other values
    (the profile ``full`` and, where the chapter has a switch of its own, that switch flipped;
    else another seed)."""
    again = f"make execute CHAPTER={docname}.py"
    switches = [name for name, value in parameters.items() if isinstance(value, bool)]
    option = (f"-p {switches[0]} {not parameters[switches[0]]}" if switches else "-p seed 1")
    return again, f'{again} PROFILE=full PARAMS="{option}"'


def rerun_box(docname: str, py: Path | None, nb_path: Path) -> nodes.container:
    """The box "Re-run this page" (docutils nodes): the command, the parameters, the sources."""
    from .sources import chapter_spec

    spec = chapter_spec(py if py is not None else nb_path)
    again, example = rerun_commands(docname, spec.parameters)
    code = lambda text, cls="rerun-command": nodes.literal(text, text, classes=[cls])
    box = nodes.container(classes=["rerun-box"])
    first = nodes.paragraph()
    first += nodes.strong(text="Re-run this page")
    first += nodes.Text(" as committed (profile ci), in the book's folder: ")
    first += code(again)
    box += first
    second = nodes.paragraph()
    if spec.parameters:
        second += nodes.Text("Its parameters (first code cell): ")
        for i, (name, value) in enumerate(spec.parameters.items()):
            if i:
                second += nodes.Text(", ")
            second += code(f"{name} = {_value_text(value)}", "rerun-parameter")
        if spec.profiles:
            second += nodes.Text("; profiles " + ", ".join(spec.profiles))
        second += nodes.Text(". Other values run into _build/runs/, e.g. ")
        second += code(example)
    else:
        second += nodes.Text("It declares no parameters.")
    box += second
    third = nodes.paragraph()
    third += nodes.Text("Interactively: ")
    third += code("make lab")
    third += nodes.Text(", then open the .py as a notebook. Source: ")
    up = "../" * docname.count("/")
    links = [(f"{Path(docname).name}.py", f"{up}_sources/{docname}.py")] if py is not None else []
    links.append((f"{Path(docname).name}.ipynb", f"{up}_sources/{docname}.ipynb"))
    for i, (text, uri) in enumerate(links):
        if i:
            third += nodes.Text(", ")
        ref = nodes.reference("", "", refuri=uri, classes=["rerun-download"])
        ref += nodes.literal(text, text)
        third += ref
    third += nodes.Text(".")
    box += third
    return box


class ChapterPage(SphinxTransform):
    """On a chapter's page: drop the nbval marker lines from the code shown, and put the box
    "Re-run this page" under the title."""

    default_priority = 500

    def apply(self, **kwargs: Any) -> None:
        docname = self.env.docname
        if not docname.startswith(CHAPTERS):
            return
        for block in list(self.document.traverse(nodes.literal_block)):
            text = block.astext()
            if "NBVAL_" in text:
                kept = "\n".join(ln for ln in text.splitlines() if not NBVAL_LINE.match(ln))
                if kept != text:
                    block.children = [nodes.Text(kept)]
                    block.rawsource = kept
        section = next(iter(self.document.traverse(nodes.section)), None)
        if section is None or not section.children or not isinstance(section[0], nodes.title):
            return
        nb_path = Path(self.env.doc2path(docname))
        try:
            box = rerun_box(docname, chapter_source(self.app.srcdir, docname), nb_path)
        except Exception as err:  # a page that cannot be parsed still builds; the warning says why
            from sphinx.util import logging

            logging.getLogger(__name__).warning(f"no re-run box on {docname}: {err}")
            return
        section.insert(1, box)


def _download_py_button(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    """Offer the chapter's ``.py`` in the theme's download menu, beside the ``.ipynb``."""
    if chapter_source(app.srcdir, pagename) is None:
        return
    for group in context.get("header_buttons", []):
        if group.get("label") != "download-buttons":
            continue
        button = {"type": "link", "url": f"{context['pathto']('_sources', 1)}/{pagename}.py",
                  "text": ".py", "icon": "fas fa-code", "label": "download-py-button",
                  "tooltip": "Download the jupytext source (.py)"}
        at = next((i + 1 for i, b in enumerate(group["buttons"])
                   if b.get("label") == "download-notebook-button"), 0)
        group["buttons"].insert(at, button)


def _copy_sources(app: Any, exception: Exception | None) -> None:
    """Put every chapter's ``.py`` into the site's ``_sources/``, beside its ``.ipynb``."""
    if exception is not None or app.builder.format != "html":
        return
    for docname in app.env.found_docs:
        py = chapter_source(app.srcdir, docname)
        if py is not None:
            target = Path(app.outdir) / "_sources" / (docname + ".py")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(py, target)


def setup(app: Any) -> dict[str, Any]:
    _register_authoryear_style()
    app.add_transform(ChapterPage)
    app.connect("html-page-context", _download_py_button, priority=502)
    app.connect("build-finished", _copy_sources)
    app.connect("doctree-read", _collect_titles)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("env-get-updated", _number_per_page, priority=900)
    app.connect("doctree-resolved", _name_unnumbered_references)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
