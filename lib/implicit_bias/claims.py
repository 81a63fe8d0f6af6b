"""The claims ledger: every statement a chapter makes, checked by the run.

A claim has an id, its source (paper and statement or figure), what the paper says, the value
measured by the run, the tolerance (with its :data:`ORIGINS`: the paper, the theory, a margin
stated before the run, or set after seeing seeds) and a verdict. It also
says what it **bears on**: the ids of the paper's checkable items (listed as data in
``book/items/<part>.yml``) and how:

- ``supports``: the run agrees with the item as the paper states it;
- ``contradicts``: the run shows the item false as stated (the claim states the book's finding,
  so its verdict is PASS when the contradiction is reproduced);
- ``qualifies``: the item holds only under extra conditions, or only at this scale;
- ``verifies``: a numerical check of a mathematical statement (an identity, a lemma, a bound)
  on instances where its hypotheses hold, e.g. to round-off: it verifies a *statement* item and
  never reproduces an *empirical* one (``book/items``: each item is a statement or an empirical
  claim about trained networks or data);
- ``control``: a setup check, a negative control, or the validation of a construction: it bears
  on no finding of the paper.

Every finding (any bearing but ``control``) names its **falsifier** (``falsifier=``): the outcome
of the run that would have made it FAIL, in words ("a depth-16 network with two singular values
above 0.1"), shown with the row on the page and in the report.

``proxy=True`` marks a claim that tests the item through a stand-in (weight decay for a minimum
norm, a small data set for the paper's, ...). The chapter's last cell calls
:meth:`Ledger.report`, which shows the ledger as an HTML table on the site, a plain-text table
for terminals, and glues the rows as JSON under the key ``claims`` for the reproduction report,
the scorecards, the seed sweep and the test suite.

**Numbers behind a verdict.** A numeric claim (``close``, ``below``, ``above``, ``between``, or
``holds`` given ``value=``) records its raw ``value`` and the region ``[lo, hi]`` where it passes,
so the seed sweep can say how far each seed's value sits from the threshold (:attr:`Claim.margin`).
``origin`` says where the threshold comes from (:data:`ORIGINS`): the paper, the theory, a margin
stated before the run, or a value set after seeing seeds (which the robustness page lists).

**Portable verdicts** (:func:`compare`). Torch and MKL do not give the same bits on every CPU, so
the test suite does not compare a re-executed ledger with the committed one character by
character: ids, bearings, items, proxy flags and verdicts must be equal, and each numeric value
must lie within ``vtol`` of the committed one (default :func:`default_vtol`: 10% of the larger
magnitude plus 10% of the threshold's scale). A claim whose value legitimately moves more across
machines (a count over chaotic runs, say) states its own ``vtol``.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Literal

GLUE_KEY = "claims"
BEARINGS = ("supports", "contradicts", "qualifies", "verifies", "control")
Bearing = Literal["supports", "contradicts", "qualifies", "verifies", "control"]
FINDINGS = ("supports", "contradicts", "qualifies", "verifies")  # bearings that could disagree
Items = str | Sequence[str] | None
# Where a threshold comes from. "paper": the paper's own value or statement; "theory": implied by
# the mathematics (a bound, zero up to floating-point error); "prior": a margin stated before the
# first run of the claim; "after-seeds": set or moved after results were seen (write what was seen,
# e.g. "after-seeds: lowered from 0.9 after seed 3"). Text after a colon is a free-form note.
ORIGINS = ("paper", "theory", "prior", "after-seeds")
REL_VTOL = 0.1  # book-wide default for values compared across machines (see default_vtol)


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
    value: float | None = None  # the raw measured number (None: checked by a boolean, or not finite)
    lo: float | None = None  # the value passes inside [lo, hi] (None: unbounded on that side)
    hi: float | None = None
    origin: str | None = None  # where the threshold comes from: see ORIGINS
    vtol: float | None = None  # allowed difference of value across machines (None: default_vtol)
    falsifier: str | None = None  # the outcome that would have made a finding FAIL

    @property
    def verdict(self) -> str:
        return "PASS" if self.passed else "FAIL"

    @property
    def origin_kind(self) -> str | None:
        """The kind of :attr:`origin` (one of :data:`ORIGINS`), without its note."""
        return None if self.origin is None else self.origin.split(":", 1)[0].strip()

    @property
    def margin(self) -> float | None:
        """Signed distance from :attr:`value` to the nearest edge of the passing region ``[lo,
        hi]``: positive inside, negative outside; None for a claim without a numeric value or
        region."""
        return margin(self.value, self.lo, self.hi)

    @classmethod
    def from_dict(cls, row: dict) -> Claim:
        """A claim from its JSON row (as glued by :meth:`Ledger.report`)."""
        known = {k: v for k, v in row.items() if k in cls.__dataclass_fields__}
        known["items"] = tuple(known.get("items") or ())
        return cls(**known)


def margin(value: float | None, lo: float | None, hi: float | None) -> float | None:
    """Signed distance from ``value`` to the nearest finite edge of ``[lo, hi]`` (positive
    inside); None when there is no value or no finite edge."""
    if value is None or not math.isfinite(value):
        return None
    edges = []
    if lo is not None and math.isfinite(lo):
        edges.append(value - lo)
    if hi is not None and math.isfinite(hi):
        edges.append(hi - value)
    return min(edges) if edges else None


def default_vtol(claim: Claim) -> float:
    """How far a claim's value may move between machines by default: :data:`REL_VTOL` of the value's
    magnitude plus :data:`REL_VTOL` of the threshold's scale (the passing interval's width, or the
    one-sided bound's magnitude), so that values near zero are compared on the threshold's scale."""
    finite = [e for e in (claim.lo, claim.hi) if e is not None and math.isfinite(e)]
    if len(finite) == 2:
        scale = finite[1] - finite[0]
        if scale == 0:
            scale = abs(finite[0])
    else:
        scale = abs(finite[0]) if finite else 0.0
    return REL_VTOL * (abs(claim.value or 0.0) + scale)


def compare(reference: dict, test: dict) -> list[str]:
    """What differs between two ledgers (JSON payloads as glued by :meth:`Ledger.report`) beyond
    what machines may change: the ids (in order), and per claim its bearing, items, proxy flag and
    verdict exactly; its value within the reference's ``vtol`` (or :func:`default_vtol`). Values of
    claims without a numeric value (``holds`` without ``value=``) are not compared. Returns one
    line per difference (empty when the ledgers agree)."""
    ref = [Claim.from_dict(r) for r in reference.get("claims", [])]
    new = [Claim.from_dict(r) for r in test.get("claims", [])]
    problems: list[str] = []
    ref_ids, new_ids = [c.id for c in ref], [c.id for c in new]
    if ref_ids != new_ids:
        missing = [i for i in ref_ids if i not in new_ids]
        extra = [i for i in new_ids if i not in ref_ids]
        problems.append(f"claim ids differ: missing {missing}, new {extra}"
                        + (" (same ids, other order)" if not missing and not extra else ""))
    by_id = {c.id: c for c in new}
    for r in ref:
        t = by_id.get(r.id)
        if t is None:
            continue
        for attr in ("bearing", "items", "proxy", "verdict"):
            if getattr(r, attr) != getattr(t, attr):
                problems.append(f"{r.id}: {attr} is {getattr(t, attr)!r}, committed {getattr(r, attr)!r}"
                                + (f" (measured {t.measured}, committed {r.measured}; tolerance "
                                   f"{r.tolerance})" if attr == "verdict" else ""))
        if r.value is not None and t.value is not None:
            tol = r.vtol if r.vtol is not None else default_vtol(r)
            if not abs(t.value - r.value) <= tol:
                problems.append(f"{r.id}: value {t.value:.6g} is not within {tol:.3g} of the committed "
                                f"{r.value:.6g}")
        elif (r.value is None) != (t.value is None):
            problems.append(f"{r.id}: value is {t.value}, committed {r.value}")
    return problems


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
             proxy: bool, value: float | None = None, lo: float | None = None,
             hi: float | None = None, origin: str | None = None,
             vtol: float | None = None, falsifier: str | None = None) -> None:
        if any(c.id == id for c in self.claims):
            raise ValueError(f"duplicate claim id {id!r}")
        if bearing is not None and bearing not in BEARINGS:
            raise ValueError(f"claim {id!r}: bearing must be one of {BEARINGS}, got {bearing!r}")
        if origin is not None and origin.split(":", 1)[0].strip() not in ORIGINS:
            raise ValueError(f"claim {id!r}: origin must start with one of {ORIGINS} (then ': a note'), "
                             f"got {origin!r}")
        if vtol is not None and not vtol >= 0:
            raise ValueError(f"claim {id!r}: vtol must be a non-negative number, got {vtol!r}")
        item_ids = (items,) if isinstance(items, str) else tuple(items or ())
        value = None if value is None else float(value)
        if value is not None and not math.isfinite(value):
            value = None  # the measured text says "nan" / "inf"; JSON has no such numbers
        claim = Claim(id, source, statement, paper, measured, tolerance, bool(passed),
                      item_ids, bearing, bool(proxy), value,
                      None if lo is None else float(lo), None if hi is None else float(hi),
                      origin, None if vtol is None else float(vtol), falsifier or None)
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
              items: Items = None, bearing: Bearing | None = None, proxy: bool = False,
              origin: str | None = None, vtol: float | None = None,
              falsifier: str | None = None) -> None:
        """``|measured - target| <= atol + rtol * |target|``."""
        measured, target = float(measured), float(target)
        bound = atol + rtol * abs(target)
        ok = math.isfinite(measured) and abs(measured - target) <= bound
        tol = f"|x - {_fmt(target, fmt)}| <= {_fmt(bound, '.2g')}"
        return self._add(id, source, statement, paper, _fmt(measured, fmt), tol, ok,
                         items, bearing, proxy, measured, target - bound, target + bound,
                         origin, vtol, falsifier)

    def below(self, id: str, source: str, statement: str, paper: str, measured: float,
              bound: float, fmt: str = ".3g", *, items: Items = None,
              bearing: Bearing | None = None, proxy: bool = False,
              origin: str | None = None, vtol: float | None = None,
              falsifier: str | None = None) -> None:
        """``measured < bound``."""
        measured = float(measured)
        ok = math.isfinite(measured) and measured < bound
        return self._add(id, source, statement, paper, _fmt(measured, fmt),
                         f"< {_fmt(bound, '.3g')}", ok, items, bearing, proxy, measured, None, bound,
                         origin, vtol, falsifier)

    def above(self, id: str, source: str, statement: str, paper: str, measured: float,
              bound: float, fmt: str = ".3g", *, items: Items = None,
              bearing: Bearing | None = None, proxy: bool = False,
              origin: str | None = None, vtol: float | None = None,
              falsifier: str | None = None) -> None:
        """``measured > bound``."""
        measured = float(measured)
        ok = math.isfinite(measured) and measured > bound
        return self._add(id, source, statement, paper, _fmt(measured, fmt),
                         f"> {_fmt(bound, '.3g')}", ok, items, bearing, proxy, measured, bound, None,
                         origin, vtol, falsifier)

    def between(self, id: str, source: str, statement: str, paper: str, measured: float,
                lo: float, hi: float, fmt: str = ".3g", *, items: Items = None,
                bearing: Bearing | None = None, proxy: bool = False,
                origin: str | None = None, vtol: float | None = None,
                falsifier: str | None = None) -> None:
        """``lo <= measured <= hi``."""
        measured = float(measured)
        ok = math.isfinite(measured) and lo <= measured <= hi
        tol = f"in [{_fmt(lo, '.3g')}, {_fmt(hi, '.3g')}]"
        return self._add(id, source, statement, paper, _fmt(measured, fmt), tol, ok,
                         items, bearing, proxy, measured, lo, hi, origin, vtol, falsifier)

    def holds(self, id: str, source: str, statement: str, paper: str, measured: str,
              condition: bool, tolerance: str = "exact", *, items: Items = None,
              bearing: Bearing | None = None, proxy: bool = False,
              value: float | None = None, lo: float | None = None, hi: float | None = None,
              origin: str | None = None, vtol: float | None = None,
              falsifier: str | None = None) -> None:
        """A statement whose check is a boolean computed by the run (e.g. a count, an order).

        Give ``value`` (and the region ``[lo, hi]`` where the condition holds, when it is a
        threshold on that value: a count of seeds, the worst of several ratios) so that the seed
        sweep can measure the claim's margin and the test suite can compare the value across
        machines."""
        return self._add(id, source, statement, paper, measured, tolerance, bool(condition),
                         items, bearing, proxy, value, lo, hi, origin, vtol, falsifier)

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
        statements = [f"  {c.id}: {c.statement}" + (f" [fails if: {c.falsifier}]" if c.falsifier else "")
                      for c in self.claims]
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
                f"<br>{_html_with_math(c.statement)}"
                + (f'<br><small class="claim-falsifier"><em>Fails if:</em> {_html_with_math(c.falsifier)}'
                   "</small>" if c.falsifier else "") + "</td>"
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
        rows = [{k: v for k, v in asdict(c).items() if not (k == "falsifier" and v is None)}
                | {"verdict": c.verdict, "items": list(c.items)} for c in self.claims]
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


def keep_whole(text: str, wrap: Callable[[str], str], words_too: bool = False) -> str:
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


# ASCII math that a statement or falsifier should write as inline math ($...$, which the pages
# render): a conservative list, so that ordinary English never matches (tests/test_claims.py).
_GREEK = ("alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta", "kappa",
          "lambda", "mu", "nu", "xi", "pi", "rho", "sigma", "tau", "phi", "psi", "omega",
          "Gamma", "Delta", "Theta", "Lambda", "Sigma", "Phi", "Psi", "Omega")
ASCII_MATH = {
    "a power written with ^": r"\w\^[\w({+-]",
    "a norm written with ||": r"\|\|",
    "a comparison written <=, >= or !=": r"<=|>=|!=",
    "sqrt(...)": r"\bsqrt\s*\(",
    # a Greek letter spelled out, as a word of its own (not in a compound such as "beta-version")
    "a Greek letter spelled out": r"(?<!-)\b(?:" + "|".join(_GREEK) + r")(?:_\w+)?\b(?!-)",
    "a subscript written with _": r"\b[A-Za-z]_\{?[A-Za-z0-9]",
}
_ASCII_MATH = re.compile("|".join(f"(?:{p})" for p in ASCII_MATH.values()))


def ascii_math(text: str) -> list[str]:
    r"""The pieces of ``text`` outside its ``$...$`` spans that look like math written in ASCII
    (``eta^2``, ``||W||``, ``<=``, ``sqrt(2)``, ``lambda``, ``W_1``: :data:`ASCII_MATH`); empty when
    there are none. A ledger's statements and falsifiers are rendered with MathJax, so a symbol is
    written as inline math there (``$\eta^2$``)."""
    return [m.group(0) for m in _ASCII_MATH.finditer(_INLINE_MATH.sub(" ", text))]


def _html_value(text: str) -> str:
    """A measured value or a tolerance as code, kept on one line when short."""
    if len(text) <= SHORT_VALUE:
        return f'<code class="nowrap">{html.escape(text)}</code>'
    return f"<code>{keep_whole(html.escape(text), _nowrap_span, words_too=True)}</code>"
