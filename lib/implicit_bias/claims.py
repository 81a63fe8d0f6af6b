"""The claims ledger: every statement a chapter makes, checked by the run.

A claim has an id, its source (paper and statement or figure), what the paper says, the value
measured by the run, the tolerance (fixed before looking at the result) and a verdict. The
chapter's last cell calls :meth:`Ledger.report`, which prints the table (rounded, so nbval can
compare it exactly) and glues the rows as JSON under the key ``claims`` for the reproduction
report. A ``PASS`` means the page's own statement holds in this run; where the page says a paper
is wrong, the claim states the book's finding (and its ``paper`` column what the paper says).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass

GLUE_KEY = "claims"


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

    @property
    def verdict(self) -> str:
        return "PASS" if self.passed else "FAIL"


def _fmt(x: float, fmt: str) -> str:
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return format(x, fmt)


class Ledger:
    """Collects a chapter's claims; see the module docstring."""

    def __init__(self, chapter: str) -> None:
        self.chapter = chapter
        self.claims: list[Claim] = []

    def _add(self, claim: Claim) -> Claim:
        if any(c.id == claim.id for c in self.claims):
            raise ValueError(f"duplicate claim id {claim.id!r}")
        self.claims.append(claim)
        return claim

    def close(self, id: str, source: str, statement: str, paper: str, measured: float,
              target: float, atol: float = 0.0, rtol: float = 0.0, fmt: str = ".3g") -> Claim:
        """``|measured - target| <= atol + rtol * |target|``."""
        measured, target = float(measured), float(target)
        bound = atol + rtol * abs(target)
        ok = math.isfinite(measured) and abs(measured - target) <= bound
        tol = f"|x - {_fmt(target, fmt)}| <= {_fmt(bound, '.2g')}"
        return self._add(Claim(id, source, statement, paper, _fmt(measured, fmt), tol, ok))

    def below(self, id: str, source: str, statement: str, paper: str, measured: float,
              bound: float, fmt: str = ".3g") -> Claim:
        """``measured < bound``."""
        measured = float(measured)
        ok = math.isfinite(measured) and measured < bound
        return self._add(Claim(id, source, statement, paper, _fmt(measured, fmt), f"< {_fmt(bound, '.3g')}", ok))

    def above(self, id: str, source: str, statement: str, paper: str, measured: float,
              bound: float, fmt: str = ".3g") -> Claim:
        """``measured > bound``."""
        measured = float(measured)
        ok = math.isfinite(measured) and measured > bound
        return self._add(Claim(id, source, statement, paper, _fmt(measured, fmt), f"> {_fmt(bound, '.3g')}", ok))

    def between(self, id: str, source: str, statement: str, paper: str, measured: float,
                lo: float, hi: float, fmt: str = ".3g") -> Claim:
        """``lo <= measured <= hi``."""
        measured = float(measured)
        ok = math.isfinite(measured) and lo <= measured <= hi
        tol = f"in [{_fmt(lo, '.3g')}, {_fmt(hi, '.3g')}]"
        return self._add(Claim(id, source, statement, paper, _fmt(measured, fmt), tol, ok))

    def holds(self, id: str, source: str, statement: str, paper: str, measured: str,
              condition: bool, tolerance: str = "exact") -> Claim:
        """A statement whose check is a boolean computed by the run (e.g. a count, an order)."""
        return self._add(Claim(id, source, statement, paper, measured, tolerance, bool(condition)))

    @property
    def all_passed(self) -> bool:
        return all(c.passed for c in self.claims)

    def table(self) -> str:
        """The ledger as a fixed-width text table."""
        head = ("id", "source", "paper", "measured", "tolerance", "verdict")
        rows = [(c.id, c.source, c.paper, c.measured, c.tolerance, c.verdict) for c in self.claims]
        widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
        line = lambda r: "  ".join(str(v).ljust(w) for v, w in zip(r, widths)).rstrip()
        out = [line(head), line(tuple("-" * w for w in widths))]
        out += [line(r) for r in rows]
        n_pass = sum(c.passed for c in self.claims)
        out.append(f"{n_pass} of {len(self.claims)} claims hold.")
        statements = [f"  {c.id}: {c.statement}" for c in self.claims]
        return "\n".join(out + ["", "Statements:", *statements])

    def to_json(self) -> str:
        rows = [asdict(c) | {"verdict": c.verdict} for c in self.claims]
        return json.dumps({"chapter": self.chapter, "claims": rows}, sort_keys=True)

    def report(self) -> None:
        """Print the table and glue the JSON rows under ``claims`` (for the reproduction report)."""
        print(self.table())
        try:
            from myst_nb import glue
        except ImportError:  # outside Jupyter: printing is enough
            return
        glue(GLUE_KEY, self.to_json(), display=False)
