"""What each paper got right: its checkable items (data in ``book/items/<part>.yml``), the claims
that bear on each item, and the item's status.

An items file lists every numbered statement of a paper, the unnumbered claims the chapters test,
and every figure, table and experiment::

    paper: le2022training            # BibTeX key (null for a part without a paper, e.g. the
                                     # synthesis, whose items are the book's own predictions)
    title: Training invariances and the low-rank phenomenon ...
    short: Le & Jegelka
    items:
      - id: lemma3                   # unique within the part; claims cite it
        title: Vertex-wise invariance under gradient flow
        where: Sec. 3, Lemma 3, Eq. (4)
        kind: lemma                  # theorem | lemma | proposition | corollary | definition |
                                     # equation | example | algorithm | remark (statements) |
                                     # claim | figure | table | experiment (empirical)
        nature: statement            # optional: statement | empirical (default: from the kind)
        note: why it is not tested   # optional

**Two kinds of items.** A *mathematical statement* (an identity, a lemma, a bound, a theorem: the
kinds in :data:`STATEMENT_KINDS`) is **verified numerically**, **refuted**, **qualified** or **not
checked**; an *empirical claim* about trained networks or data (a claim, a figure, a table, an
experiment) is **reproduced**, **qualified**, **contradicted**, ... by findings from runs. An item
may override its kind's default with ``nature:``. A row bearing ``verifies`` (a formula checked on
instances, e.g. to round-off) may cite statements only: an identity never reproduces an empirical
claim. The scorecards count the two kinds apart.

A claim bears on items with a bearing (``supports``, ``contradicts``, ``qualifies``, ``control``;
see :mod:`implicit_bias.claims`). Only **findings** count: claims that could have failed, i.e. any
bearing but ``control``. A row that holds for any weights, any data or by construction (an
identity, a bound that holds for every network, a filter that guarantees its result, a setup
check) is a ``control`` and never makes an item reproduced. The status of an item, from the claims
citing it, first rule that applies:

- **failing**: some claim's verdict is FAIL: the run did not show what the page says;
- **contradicted**: some finding contradicts it on the paper's own kind of setting (not a proxy);
- **contradicted on stand-in data**: some finding contradicts it through a stand-in (a smaller
  data set, weight decay for a minimum norm, ...) and no finding tests it directly: a
  contradiction all the same, listed with the others in the intro and on the errata page;
- **qualified**: some finding qualifies it (holds only under extra conditions or at this scale),
  or a stand-in contradicts it while the direct findings (on the paper's own kind of setting, such
  as real MNIST for an MNIST figure) support it: it holds where the paper tested it, not on every
  stand-in. Such stand-in contradictions are still listed in the intro and on the errata page;
- **reproduced**: findings that are not proxies support it, and none qualifies or contradicts it;
- **proxy only**: every finding supports it through a stand-in;
- **only controls**: claims cite it, but every one is a control: nothing that could disagree with
  the paper;
- **not tested**: no claim cites it.

For a statement, the same rules with its own words: **refuted** (a direct finding contradicts
it), **qualified** (a finding qualifies it or a stand-in contradicts it), **verified numerically**
(direct findings support or verify it), **proxy only**, **only controls**, **not checked**.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..claims import BEARINGS, FINDINGS, Claim, keep_whole

ITEMS_FOLDER = Path("book") / "items"
KINDS = ("theorem", "lemma", "proposition", "corollary", "definition", "equation", "claim",
         "figure", "table", "experiment", "example", "algorithm", "remark")
STATUSES = ("reproduced", "qualified", "contradicted", "contradicted on stand-in data", "proxy only",
            "only controls", "not tested", "failing")
CONTRADICTED = ("contradicted", "contradicted on stand-in data")
# a mathematical statement's statuses (the empirical ones, renamed: see the module docstring)
STATEMENT_STATUSES = ("verified numerically", "qualified", "refuted", "proxy only", "only controls",
                      "not checked", "failing")
STATEMENT_KINDS = ("theorem", "lemma", "proposition", "corollary", "definition", "equation", "example",
                   "algorithm", "remark")
NATURES = ("statement", "empirical")
_AS_STATEMENT = {"reproduced": "verified numerically", "contradicted": "refuted",
                 "contradicted on stand-in data": "qualified", "not tested": "not checked"}


@dataclass(frozen=True)
class Item:
    """One checkable item of a paper."""

    id: str
    title: str
    where: str
    kind: str
    note: str = ""
    nature: str = ""  # "statement" or "empirical"; empty: from the kind (:data:`STATEMENT_KINDS`)

    @property
    def is_statement(self) -> bool:
        """A mathematical statement (``nature``, else its ``kind``: :data:`STATEMENT_KINDS`), not an
        empirical claim about trained networks or data."""
        return (self.nature or ("statement" if self.kind in STATEMENT_KINDS else "empirical")) == "statement"


@dataclass
class Paper:
    """A part's paper and its checkable items."""

    part: str
    key: str | None  # BibTeX key; None for a part without a paper (the synthesis)
    title: str
    short: str
    items: list[Item]

    def item(self, id: str) -> Item | None:
        return next((i for i in self.items if i.id == id), None)


@dataclass
class CitedClaim:
    """A claim of a chapter, with where it comes from."""

    chapter: str  # chapters/<part>/<name>, no suffix
    claim: Claim
    data: str = ""  # what the chapter's run trained on (its ledger's data line)

    @property
    def part(self) -> str:
        return self.chapter.split("/")[1]


@dataclass
class ItemStatus:
    item: Item
    status: str
    claims: list[CitedClaim] = field(default_factory=list)

    @property
    def findings(self) -> list[CitedClaim]:
        return [c for c in self.claims if c.claim.bearing != "control"]


def load_papers(root: Path) -> dict[str, Paper]:
    """Every ``book/items/<part>.yml``, by part, validated (clear errors on a malformed file)."""
    import yaml

    papers: dict[str, Paper] = {}
    for path in sorted((root / ITEMS_FOLDER).glob("*.yml")):
        data = yaml.safe_load(path.read_text()) or {}
        where = path.relative_to(root)
        for key in ("paper", "title", "short", "items"):
            if key not in data:
                raise ValueError(f"{where}: missing top-level key {key!r}")
        items, seen = [], set()
        for n, raw in enumerate(data["items"]):
            missing = [k for k in ("id", "title", "where", "kind") if k not in raw]
            if missing:
                raise ValueError(f"{where}: item {n} ({raw.get('id', '?')}) lacks {missing}")
            if raw["id"] in seen:
                raise ValueError(f"{where}: duplicate item id {raw['id']!r}")
            if raw["kind"] not in KINDS:
                raise ValueError(f"{where}: item {raw['id']!r} has kind {raw['kind']!r}; "
                                 f"use one of {', '.join(KINDS)}")
            if raw.get("nature", "statement") not in NATURES:
                raise ValueError(f"{where}: item {raw['id']!r} has nature {raw['nature']!r}; use one of "
                                 f"{', '.join(NATURES)}")
            seen.add(raw["id"])
            items.append(Item(str(raw["id"]), str(raw["title"]), str(raw["where"]), raw["kind"],
                              str(raw.get("note", "") or ""), str(raw.get("nature", "") or "")))
        papers[path.stem] = Paper(path.stem, data["paper"], data["title"], data["short"], items)
    return papers


def item_status(claims: Sequence[CitedClaim], statement: bool = False) -> str:
    """The status of an item from the claims that cite it (rules in the module docstring); for a
    mathematical ``statement``, in the statements' words (:data:`STATEMENT_STATUSES`)."""
    status = _status(claims)
    return _AS_STATEMENT.get(status, status) if statement else status


def _status(claims: Sequence[CitedClaim]) -> str:
    if any(not c.claim.passed for c in claims):
        return "failing"
    findings = [c.claim for c in claims if c.claim.bearing != "control"]
    if not findings:
        return "only controls" if claims else "not tested"
    if any(c.bearing == "contradicts" and not c.proxy for c in findings):
        return "contradicted"
    standin_contradiction = any(c.bearing == "contradicts" for c in findings)
    if standin_contradiction and all(c.proxy for c in findings):
        return "contradicted on stand-in data"
    if standin_contradiction or any(c.bearing == "qualifies" for c in findings):
        return "qualified"
    if any(c.bearing in ("supports", "verifies") and not c.proxy for c in findings):
        return "reproduced"
    return "proxy only"


def standin_contradictions(row: ItemStatus) -> list[CitedClaim]:
    """The findings that contradict the item through a stand-in, for an item that no direct
    finding contradicts (listed in the intro and the errata whatever the item's status)."""
    if row.status in ("contradicted", "refuted", "failing"):
        return []
    return [c for c in row.claims if c.claim.bearing == "contradicts" and c.claim.proxy]


def statuses(paper: Paper, claims: Iterable[CitedClaim]) -> list[ItemStatus]:
    by_item: dict[str, list[CitedClaim]] = {i.id: [] for i in paper.items}
    for c in claims:
        if c.part != paper.part:
            continue
        for item in c.claim.items:
            if item in by_item:
                by_item[item].append(c)
    return [ItemStatus(i, item_status(by_item[i.id], i.is_statement), by_item[i.id]) for i in paper.items]


def problems(papers: dict[str, Paper], claims: Iterable[CitedClaim]) -> list[str]:
    """Claims without items or bearing, citing unknown items, or in a part with no items file."""
    out = []
    for c in claims:
        where = f"{c.chapter}: claim {c.claim.id!r}"
        paper = papers.get(c.part)
        if paper is None:
            out.append(f"{where}: no items file book/items/{c.part}.yml")
            continue
        if c.claim.bearing not in BEARINGS:
            out.append(f"{where}: no bearing (one of {', '.join(BEARINGS)})")
        if not c.claim.items:
            out.append(f"{where}: bears on no item of book/items/{c.part}.yml")
        unknown = [i for i in c.claim.items if paper.item(i) is None]
        if unknown:
            out.append(f"{where}: unknown item(s) {unknown} (not in book/items/{c.part}.yml)")
        empirical = [i for i in c.claim.items if paper.item(i) is not None and not paper.item(i).is_statement]
        if c.claim.bearing == "verifies" and empirical:
            out.append(f"{where}: bears 'verifies' (a check of a formula) on empirical item(s) {empirical}: "
                       "only runs reproduce an empirical claim (make it a control, or cite the statement)")
    return out


def missing_falsifiers(claims: Iterable[CitedClaim]) -> list[str]:
    """The findings (bearings :data:`implicit_bias.claims.FINDINGS`) that do not name the outcome
    that would have made them FAIL."""
    return [f"{c.chapter}: claim {c.claim.id!r} ({c.claim.bearing})" for c in claims
            if c.claim.bearing in FINDINGS and not (c.claim.falsifier or "").strip()]


_MD_SPECIAL = re.compile(r"([\\`*_<>\[\]{}#~])")
_MD_MATH = re.compile(r"(?<![\\$])\$(?!\$)[^$\n]+?(?<![\\\s])\$(?!\$)")


def md_text(value: Any, *, table: bool = True) -> str:
    """Text for generated Markdown: as written (its Markdown characters escaped, so that nothing
    turns into emphasis, code or HTML, and ``|`` does not end a table cell), with ``$...$`` kept as
    math, and ids, numbers and ranges kept on one line (a ``nowrap`` span: see
    :func:`implicit_bias.claims.keep_whole`). In a table cell (``table``) a ``|`` inside math is
    escaped too (the table's cell splitting removes that backslash again); in running text (a list,
    a paragraph) math is kept verbatim, since nothing would remove it there and MathJax would read
    ``\\|`` as a double bar."""
    text = str(value).replace("\n", " ")
    plain = lambda part: keep_whole(_MD_SPECIAL.sub(r"\\\1", part),
                                    lambda token: f'<span class="nowrap">{token}</span>').replace("|", "\\|")
    out, at = [], 0
    for m in _MD_MATH.finditer(text):
        out.append(plain(text[at:m.start()]))
        out.append(m.group(0).replace("|", "\\|") if table else m.group(0))
        at = m.end()
    out.append(plain(text[at:]))
    return "".join(out)


_md = md_text


STATUS_BADGE = {
    "verified numerically": "verified numerically", "refuted": "**refuted**",
    "not checked": "*not checked*",
    "reproduced": "reproduced", "qualified": "qualified", "contradicted": "**contradicted**",
    "contradicted on stand-in data": "**contradicted** (on stand-in data)",
    "proxy only": "proxy only", "only controls": "*only controls*", "not tested": "*not tested*",
    "failing": "**FAILING**",
}


def counts(rows: Sequence[ItemStatus]) -> dict[str, int]:
    return {s: sum(r.status == s for r in rows) for s in (*STATUSES, *STATEMENT_STATUSES)}


def headline(rows: Sequence[ItemStatus]) -> str:
    """``"12 mathematical statements (5 verified numerically, 1 refuted, ...); 20 empirical claims
    (3 reproduced, ...)"``: the two kinds of items counted apart."""
    parts = []
    for name, statuses_, pick in (("mathematical statement", STATEMENT_STATUSES, True),
                                  ("empirical claim", STATUSES, False)):
        kind = [r for r in rows if r.item.is_statement == pick]
        n = counts(kind)
        said = ", ".join(f"{n[s]} {s}" for s in statuses_ if n[s])
        parts.append(f"{len(kind)} {name}{'s' if len(kind) != 1 else ''}" + (f" ({said})" if said else ""))
    return "; ".join(parts)


def share_with_finding(rows: Sequence[ItemStatus]) -> float:
    return sum(bool(r.findings) for r in rows) / max(len(rows), 1)


def data_badge(c: CitedClaim) -> str:
    """``", on MNIST (10k real digits)"`` for a direct (non-proxy) claim of a chapter that ran on real
    MNIST (its ledger's data line starts with "MNIST"; the name is the part before the colon), so
    the scorecard says what data a finding stands on; empty otherwise."""
    if c.claim.proxy or not c.data.startswith("MNIST"):
        return ""
    return f", on {c.data.split(':', 1)[0].strip()}"


def claim_refs(cited: Sequence[CitedClaim]) -> str:
    """Claim ids linked to their ledgers in the report (anchors ``claims-<part>-<name>``)."""
    parts = []
    for c in cited:
        label = f"`{c.claim.id}` ({c.claim.bearing or '?'}{', proxy' if c.claim.proxy else ''}{data_badge(c)})"
        parts.append(f"[{label}](#{anchor(c.chapter)})")
    return "; ".join(parts) if parts else ""


def anchor(chapter: str) -> str:
    return "claims-" + chapter.split("/", 1)[1].replace("/", "-").replace("_", "-")


def render_scorecard(paper: Paper, rows: Sequence[ItemStatus]) -> list[str]:
    lines = [
        f"(scorecard-{paper.part.replace('_', '-')})=",   # target of {ref} links (the map page)
        f"### {paper.short}: {paper.title}",
        "",
        f"{len(rows)} checkable items: {headline(rows)}; "
        f"{share_with_finding(rows):.0%} have at least one falsifiable finding "
        + (f"({{cite:t}}`{paper.key}`)." if paper.key else "(the book's own predictions, no paper)."),
        "",
        # the status first, the item's place in the paper folded under its title: in view at any width
        "| status | item | claims |",
        "|---|---|---|",
    ]
    for r in rows:
        claims = claim_refs(r.claims) or _md(r.item.note or "")
        status = STATUS_BADGE[r.status]
        if r.status != "contradicted on stand-in data" and standin_contradictions(r):
            status += " (a stand-in contradicts it)"
        nature = "statement" if r.item.is_statement else "empirical claim"
        item = (f'**`{r.item.id}`** {_md(r.item.title)}<br><span class="ib-source">{_md(r.item.where)}; '
                f'{nature}</span>')
        lines.append(f"| {status} | {item} | {claims} |")
    lines.append("")
    return lines


def _item_in_text(r: ItemStatus) -> str:
    """An item as running Markdown text: its title, then where it is in the paper."""
    return f"{md_text(r.item.title, table=False)} ({md_text(r.item.where, table=False)})"


def render_summary(papers: dict[str, Paper], claims: Sequence[CitedClaim],
                   order: Sequence[str]) -> str:
    """The intro's summary of results: per paper, the counts of item statuses, mathematical
    statements and empirical claims apart, and the items the runs contradict or refute (generated,
    so it cannot drift from the ledgers)."""
    # one column per status, so that each row's columns add up to its total
    stmt = ["| paper | statements | " + " | ".join(STATEMENT_STATUSES) + " |",
            "|---|---|" + "---|" * len(STATEMENT_STATUSES)]
    emp = ["| paper | empirical claims | " + " | ".join(STATUSES) + " |",
           "|---|---|" + "---|" * len(STATUSES)]
    bullets = []
    for part in order:
        paper = papers.get(part)
        if paper is None:
            continue
        rows = statuses(paper, claims)
        name = f"{paper.short} ({{ref}}`scorecard <scorecard-{paper.part.replace('_', '-')}>`)"
        s_rows = [r for r in rows if r.item.is_statement]
        e_rows = [r for r in rows if not r.item.is_statement]
        n, m = counts(s_rows), counts(e_rows)
        stmt.append(f"| {name} | {len(s_rows)} | " + " | ".join(str(n[k]) for k in STATEMENT_STATUSES) + " |")
        emp.append(f"| {name} | {len(e_rows)} | " + " | ".join(str(m[k]) for k in STATUSES) + " |")
        refuted = [r for r in rows if r.status == "refuted"]
        direct = [r for r in rows if r.status == "contradicted"]
        standin = [r for r in rows if standin_contradictions(r)]
        said = []
        if refuted:
            said.append("the checks refute "
                        + "; ".join(_item_in_text(r) for r in refuted))
        if direct:
            said.append("the runs contradict "
                        + "; ".join(_item_in_text(r) for r in direct))
        if standin:
            said.append("on stand-in data they contradict "
                        + "; ".join(_item_in_text(r) for r in standin))
        if said:
            bullets.append(f"- **{paper.short}**: " + "; ".join(said) + ".")
    lines = (["**Mathematical statements** (identities, lemmas, bounds, theorems: checked numerically)", ""]
             + stmt + ["", "**Empirical claims** (about trained networks or data: reproduced only by runs)", ""]
             + emp)
    return "\n".join(lines + [""] + bullets) + "\n"


def claim_link(cited: CitedClaim, page_folder: str = "book") -> str:
    """A claim's id linked to its row in its chapter's ledger (the row's HTML id is
    :meth:`implicit_bias.claims.Ledger.row_id`), from a page in ``page_folder``. Raw HTML: MyST
    cannot link to an id inside a notebook's output (the site checks test that each target exists)."""
    import html

    from ..claims import Ledger

    up = "../" * len(Path(page_folder).parts)
    target = f"{up}{cited.chapter}.html#{Ledger.row_id(cited.chapter.split('/', 1)[1], cited.claim.id)}"
    return (f'<a class="claim-link reference internal" href="{html.escape(target)}">'
            f"<code>{html.escape(cited.claim.id)}</code></a>")


def render_contradicted(papers: dict[str, Paper], claims: Sequence[CitedClaim],
                        order: Sequence[str], page_folder: str = "book") -> list[str]:
    """The errata page's generated list: every contradicted item, with the claims that show it
    (each linked to its row in its chapter's ledger)."""
    lines: list[str] = []
    for part in order:
        paper = papers.get(part)
        if paper is None:
            continue
        rows = [r for r in statuses(paper, claims)
                if r.status in ("contradicted", "refuted") or standin_contradictions(r)]
        if not rows:
            continue
        lines += [f"**{paper.short}** ({{cite:t}}`{paper.key}`)" if paper.key else f"**{paper.short}**", ""]
        for r in rows:
            direct = r.status in ("contradicted", "refuted")
            against = [c for c in r.claims if c.claim.bearing == "contradicts" and c.claim.proxy != direct]
            pages = sorted({c.chapter for c in against})
            links = ", ".join(f"{{doc}}`/{p}`" for p in pages)
            ids = ", ".join(claim_link(c, page_folder) for c in against)
            how = ("refuted by" if r.status == "refuted" else "contradicted by" if direct
                   else "contradicted on stand-in data by")
            where = "" if direct or r.status == "contradicted on stand-in data" else f" (status: {r.status}, from the direct findings)"
            lines.append(f"- {md_text(r.item.where, table=False)}, {md_text(r.item.title, table=False)}: {how} {ids} ({links}){where}.")
        lines.append("")
    return lines


# An erratum names the items it is about in a comment of its fragment (book/errata/*.md):
#   <!-- items: invariances/lemma4, invariances/eq71 -->      the paper is wrong there
#   <!-- items-hold: invariances/lemma4 -->                   the book finds it true (e.g. a guide erred)
_ERRATA_MARK = re.compile(r"<!--\s*items(-hold)?:\s*(.*?)\s*-->", re.S)
WRONG = ("contradicted", "refuted", "contradicted on stand-in data")


def errata_marks(root: Path) -> list[tuple[str, str, str, bool]]:
    """``(fragment, part, item, wrong)`` for every item an erratum names (see the comment above)."""
    out = []
    for frag in sorted((root / "book" / "errata").glob("*.md")):
        for m in _ERRATA_MARK.finditer(frag.read_text()):
            for ref in filter(None, (r.strip() for r in m.group(2).split(","))):
                part, _, item = ref.partition("/")
                out.append((frag.name, part, item, m.group(1) is None))
    return out


def errata_disagreements(root: Path, papers: dict[str, Paper], claims: Sequence[CitedClaim]) -> list[str]:
    """Where the errata and the scorecards disagree: an item an erratum calls wrong that is not
    contradicted or refuted (nor contradicted on a stand-in), an item an erratum finds true that
    the scorecard lists as wrong, an unknown item, and a contradicted or refuted item no erratum
    names."""
    status = {(part, r.item.id): r for part, paper in papers.items() for r in statuses(paper, claims)}
    problems, named = [], set()
    for frag, part, item, wrong in errata_marks(root):
        row = status.get((part, item))
        if row is None:
            problems.append(f"book/errata/{frag}: unknown item {part}/{item}")
            continue
        named.add((part, item))
        is_wrong = row.status in WRONG or bool(standin_contradictions(row))
        if wrong and not is_wrong:
            problems.append(f"book/errata/{frag}: calls {part}/{item} wrong, but its scorecard status is "
                            f"{row.status!r}")
        if not wrong and row.status in WRONG:
            problems.append(f"book/errata/{frag}: finds {part}/{item} true, but its scorecard status is "
                            f"{row.status!r}")
    for (part, item), row in status.items():
        if (row.status in WRONG or standin_contradictions(row)) and (part, item) not in named:
            problems.append(f"{part}/{item} is {row.status} (or contradicted on a stand-in), but no "
                            "erratum names it (<!-- items: ... --> in book/errata/)")
    return problems
