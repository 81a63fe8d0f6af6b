"""The claims ledger: every statement a chapter makes, checked by the run.

A claim has an id, its source (paper and statement or figure), what the paper says, the value
measured by the run, the tolerance (fixed before looking at the result) and a verdict. It also
says what it **bears on**: the ids of the paper's checkable items (listed as data in
``book/items/<part>.yml``) and how:

- ``supports``: the run agrees with the item as the paper states it;
- ``contradicts``: the run shows the item false as stated (the claim states the book's finding,
  so its verdict is PASS when the contradiction is reproduced);
- ``qualifies``: the item holds only under extra conditions, or only at this scale;
- ``control``: a setup check, a negative control, or the validation of a construction: it bears
  on no finding of the paper.

``proxy=True`` marks a claim that tests the item through a stand-in (weight decay for a minimum
norm, a small data set for the paper's, ...). The chapter's last cell calls
:meth:`Ledger.report`, which shows the ledger as an HTML table on the site, keeps a plain-text
table (rounded, so nbval can compare it exactly) as the output's ``text/plain``, and glues the
rows as JSON under the key ``claims`` for the reproduction report and the scorecards.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Literal

GLUE_KEY = "claims"
BEARINGS = ("supports", "contradicts", "qualifies", "control")
Bearing = Literal["supports", "contradicts", "qualifies", "control"]
Items = str | Sequence[str] | None


@dataclass(frozen=True)
class Claim:
    """One checked statement."""

    id: str
    source: str
    statement: str
    paper: str
    measured: str
    tolerance: str
    passed: bool
    items: tuple[str, ...] = field(default=())
    bearing: str | None = None
    proxy: bool = False

    @property
    def verdict(self) -> str:
        return "PASS" if self.passed else "FAIL"

    @classmethod
    def from_dict(cls, row: dict) -> Claim:
        """A claim from its JSON row (as glued by :meth:`Ledger.report`)."""
        known = {k: v for k, v in row.items() if k in cls.__dataclass_fields__}
        known["items"] = tuple(known.get("items") or ())
        return cls(**known)


def _fmt(x: float, fmt: str) -> str:
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return format(x, fmt)


class Ledger:
    """Collects a chapter's claims; see the module docstring."""

    def __init__(self, chapter: str) -> None:
        self.chapter = chapter
        self.claims: list[Claim] = []
        self.data: str | None = None

    def uses_data(self, description: str) -> None:
        """Say which data the run really used (e.g. the second value of
        :func:`implicit_bias.data.load_or_fallback`); the ledger prints it under the table."""
        self.data = description

    def _add(self, id: str, source: str, statement: str, paper: str, measured: str,
             tolerance: str, passed: bool, items: Items, bearing: Bearing | None,
             proxy: bool) -> None:
        if any(c.id == id for c in self.claims):
            raise ValueError(f"duplicate claim id {id!r}")
        if bearing is not None and bearing not in BEARINGS:
            raise ValueError(f"claim {id!r}: bearing must be one of {BEARINGS}, got {bearing!r}")
        item_ids = (items,) if isinstance(items, str) else tuple(items or ())
        claim = Claim(id, source, statement, paper, measured, tolerance, bool(passed),
                      item_ids, bearing, bool(proxy))
        self.claims.append(claim)
        # nothing is returned, so a check as the last line of a cell prints nothing on the page;
        # ``ledger[id]`` gives the claim back
        return None

    def __getitem__(self, id: str) -> Claim:
        for c in self.claims:
            if c.id == id:
                return c
        raise KeyError(f"no claim {id!r} in the ledger of {self.chapter}")

    def close(self, id: str, source: str, statement: str, paper: str, measured: float,
              target: float, atol: float = 0.0, rtol: float = 0.0, fmt: str = ".3g", *,
              items: Items = None, bearing: Bearing | None = None, proxy: bool = False) -> None:
        """``|measured - target| <= atol + rtol * |target|``."""
        measured, target = float(measured), float(target)
        bound = atol + rtol * abs(target)
        ok = math.isfinite(measured) and abs(measured - target) <= bound
        tol = f"|x - {_fmt(target, fmt)}| <= {_fmt(bound, '.2g')}"
        return self._add(id, source, statement, paper, _fmt(measured, fmt), tol, ok,
                         items, bearing, proxy)

    def below(self, id: str, source: str, statement: str, paper: str, measured: float,
              bound: float, fmt: str = ".3g", *, items: Items = None,
              bearing: Bearing | None = None, proxy: bool = False) -> None:
        """``measured < bound``."""
        measured = float(measured)
        ok = math.isfinite(measured) and measured < bound
        return self._add(id, source, statement, paper, _fmt(measured, fmt),
                         f"< {_fmt(bound, '.3g')}", ok, items, bearing, proxy)

    def above(self, id: str, source: str, statement: str, paper: str, measured: float,
              bound: float, fmt: str = ".3g", *, items: Items = None,
              bearing: Bearing | None = None, proxy: bool = False) -> None:
        """``measured > bound``."""
        measured = float(measured)
        ok = math.isfinite(measured) and measured > bound
        return self._add(id, source, statement, paper, _fmt(measured, fmt),
                         f"> {_fmt(bound, '.3g')}", ok, items, bearing, proxy)

    def between(self, id: str, source: str, statement: str, paper: str, measured: float,
                lo: float, hi: float, fmt: str = ".3g", *, items: Items = None,
                bearing: Bearing | None = None, proxy: bool = False) -> None:
        """``lo <= measured <= hi``."""
        measured = float(measured)
        ok = math.isfinite(measured) and lo <= measured <= hi
        tol = f"in [{_fmt(lo, '.3g')}, {_fmt(hi, '.3g')}]"
        return self._add(id, source, statement, paper, _fmt(measured, fmt), tol, ok,
                         items, bearing, proxy)

    def holds(self, id: str, source: str, statement: str, paper: str, measured: str,
              condition: bool, tolerance: str = "exact", *, items: Items = None,
              bearing: Bearing | None = None, proxy: bool = False) -> None:
        """A statement whose check is a boolean computed by the run (e.g. a count, an order)."""
        return self._add(id, source, statement, paper, measured, tolerance, bool(condition),
                         items, bearing, proxy)

    @property
    def all_passed(self) -> bool:
        return all(c.passed for c in self.claims)

    def table(self) -> str:
        """The ledger as a fixed-width text table (the output nbval compares)."""
        head = ("id", "source", "bearing", "paper", "measured", "tolerance", "verdict")
        rows = [(c.id, c.source, _bearing_label(c), c.paper, c.measured, c.tolerance, c.verdict)
                for c in self.claims]
        widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
        line = lambda r: "  ".join(str(v).ljust(w) for v, w in zip(r, widths)).rstrip()
        out = [line(head), line(tuple("-" * w for w in widths))]
        out += [line(r) for r in rows]
        n_pass = sum(c.passed for c in self.claims)
        out.append(f"{n_pass} of {len(self.claims)} claims hold.")
        if self.data:
            out.append(f"Data: {self.data}")
        statements = [f"  {c.id}: {c.statement}" for c in self.claims]
        return "\n".join(out + ["", "Statements:", *statements])

    def html(self) -> str:
        """The ledger as an HTML table for the rendered page: statement, what it bears on, the
        paper's value, the measured value, the tolerance and the verdict, one row per claim.

        Each row carries the HTML id :meth:`row_id` (``claim-<part>-<chapter>-<claim id>``), so that
        other pages (the errata) link to it. Text written as ``$...$`` (a statement, a source, the
        paper's value) is marked as inline math, which the site renders with MathJax; the plain
        text table keeps the dollars. Ids, item ids and short values carry the classes the book's
        stylesheet keeps on one line (``claim-id``, ``claim-item``, ``nowrap``)."""
        esc = html.escape
        head = ("claim", "bears on", "the paper", "measured", "tolerance", "verdict")
        out = ['<div class="claims-ledger">', '<table class="claims-table">', "<thead><tr>"]
        out += [f'<th class="col-{h.split()[-1]}">{h}</th>' for h in head] + ["</tr></thead>", "<tbody>"]
        for c in self.claims:
            items = (", ".join(f'<span class="claim-item">{esc(i)}</span>' for i in c.items)
                     if c.items else "&mdash;")
            bearing = esc(_bearing_label(c))
            verdict = "pass" if c.passed else "fail"
            out.append(
                f'<tr id="{self.row_id(self.chapter, c.id)}" class="claim-{verdict}">'
                f'<td class="claim-text"><code class="claim-id">{esc(c.id)}</code>'
                f'<br><span class="claim-source">{_html_with_math(c.source)}</span>'
                f"<br>{_html_with_math(c.statement)}</td>"
                f'<td class="claim-bearing"><span class="bearing bearing-{esc(c.bearing or "none")}">'
                f"{bearing}</span><br><small>{items}</small></td>"
                f'<td class="claim-paper">{_html_with_math(c.paper)}</td>'
                f'<td class="claim-measured">{_html_value(c.measured)}</td>'
                f'<td class="claim-tolerance">{_html_value(c.tolerance)}</td>'
                f'<td class="verdict verdict-{verdict}"><b>{c.verdict}</b></td></tr>')
        n_pass = sum(c.passed for c in self.claims)
        out += ["</tbody></table>",
                f'<p class="claims-summary">{n_pass} of {len(self.claims)} claims hold.'
                + (f" Data: {esc(self.data)}." if self.data else "") + "</p>", "</div>"]
        return "\n".join(out)

    @staticmethod
    def row_id(chapter: str, claim_id: str) -> str:
        """The HTML id of a claim's row in its chapter's ledger: ``claim-`` then the chapter
        (``invariances/01_conserved_quantities``) and the claim id, lower case, every run of other
        characters than letters and digits written ``-``."""
        slug = lambda text: re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
        return f"claim-{slug(chapter)}-{slug(claim_id)}"

    def to_json(self) -> str:
        rows = [asdict(c) | {"verdict": c.verdict, "items": list(c.items)} for c in self.claims]
        payload = {"chapter": self.chapter, "claims": rows}
        if self.data:
            payload["data"] = self.data
        return json.dumps(payload, sort_keys=True)

    def report(self) -> None:
        """Show the ledger (HTML on the site, the text table for nbval and terminals) and glue the
        JSON rows under ``claims`` (for the reproduction report and the scorecards)."""
        try:
            from IPython import get_ipython
            from IPython.display import display
            from myst_nb import glue
        except ImportError:  # outside Jupyter: printing is enough
            get_ipython = None
        if get_ipython is None or get_ipython() is None:
            print(self.table())
            return
        display({"text/plain": self.table(), "text/html": self.html()}, raw=True)
        glue(GLUE_KEY, self.to_json(), display=False)


def _bearing_label(c: Claim) -> str:
    if c.bearing is None:
        return "-"
    return c.bearing + (" (proxy)" if c.proxy else "")


_INLINE_MATH = re.compile(r"(?<![\\$])\$(?!\$)(?P<tex>[^$\n]+?)(?<![\\\s])\$(?!\$)")
SHORT_VALUE = 24  # values up to this many characters are kept on one line in the HTML ledger


_BREAKS_AFTER = re.compile(r"[-/\u2010-\u2014^+=]")  # a browser may break after these ...
_BREAKS_BEFORE = re.compile(r"[(\[{]")                 # ... and before these
_HYPHENATED_WORDS = re.compile(r"[^\W\d_]+(?:[-/\u2010-\u2014][^\W\d_]+)*")


def keep_whole(text: str, wrap, words_too: bool = False) -> str:
    """``text`` with every whitespace-separated token that a browser could break inside (one that
    holds a hyphen, a slash, a bracket, ... and is not words joined by hyphens, such as
    ``low-rank``) passed through ``wrap``: ids (``thm1-p2``), numbers (``4.4e-16``), ranges
    (``1-2``), formulas written as text (``(1/sqrt2)^(k/L)``). The book's pages keep such a token
    on one line (``wrap`` puts it in a ``nowrap`` span). ``words_too``: hyphenated words as well
    (in values and tolerances, which are code: nothing in them breaks but at a space)."""
    def one(m: re.Match) -> str:
        token = m.group(0)
        core = token.lstrip("([{\"'").rstrip(".,;:!?)]}\"'")
        breakable = _BREAKS_AFTER.search(token[:-1]) or _BREAKS_BEFORE.search(token[1:])
        if len(token) < 2 or not breakable or (not words_too and _HYPHENATED_WORDS.fullmatch(core)):
            return token
        return wrap(token)

    return re.sub(r"\S+", one, text)


def _nowrap_span(token: str) -> str:
    return f'<span class="nowrap">{token}</span>'


def _html_with_math(text: str) -> str:
    """``text`` as HTML, with each ``$...$`` as inline math for MathJax (as Sphinx marks it), and
    the tokens a browser could break inside kept whole (:func:`keep_whole`)."""
    out, at = [], 0
    for m in _INLINE_MATH.finditer(text):
        out.append(keep_whole(html.escape(text[at:m.start()]), _nowrap_span))
        out.append(f'<span class="math notranslate nohighlight">\\({html.escape(m.group("tex"))}\\)</span>')
        at = m.end()
    out.append(keep_whole(html.escape(text[at:]), _nowrap_span))
    return "".join(out)


def _html_value(text: str) -> str:
    """A measured value or a tolerance as code, kept on one line when short."""
    if len(text) <= SHORT_VALUE:
        return f'<code class="nowrap">{html.escape(text)}</code>'
    return f"<code>{keep_whole(html.escape(text), _nowrap_span, words_too=True)}</code>"
