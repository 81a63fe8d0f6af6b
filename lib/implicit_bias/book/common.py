"""What several modules of the book's machinery share, kept here so that none of them imports
another that imports it back: a chapter to execute (:class:`Task`) and the result of executing it
(:class:`Outcome`, :func:`print_outcome`), used by :mod:`.execute` and :mod:`.executors`; the
metadata key of a failed chapter's page (:data:`FAILED_KEY`) and the reader of glued values
(:func:`literal_or_text`), used by :mod:`.report` and :mod:`.site`; the refusal of a budget
inherited from the shell (:func:`refuse_inherited_budget`), used by :mod:`.cli` and :mod:`.seeds`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

FAILED_KEY = "implicit_bias"  # notebook metadata of a failure page: {"failed": {...}}


@dataclass(frozen=True)
class Task:
    """One chapter to execute: its source, where the executed notebook goes, its parameters,
    and the folder of its failure logs."""

    py: Path
    out: Path
    params: dict[str, Any]
    log_dir: Path


@dataclass
class Outcome:
    """Result of executing one chapter.

    ``failed_cell`` is the execution count of the failing cell (as Jupyter shows it, ``[n]``),
    ``cell_index`` its position among the chapter's code cells (1-based) and ``cell_line`` its
    first line; all None when the run failed before any cell ran.
    """

    chapter: str
    output: str
    ok: bool
    seconds: float
    failed_cell: int | None = None
    error: str = ""
    log: str | None = None
    cell_index: int | None = None
    n_cells: int | None = None
    cell_line: str = ""
    more: str = ""  # the error message's lines after the first (what to do, e.g. allow_fallback)

    def where(self) -> str:
        """Where the run failed, for messages: ``cell 4 of 21 ([4] starts 'x = f(y)')``."""
        if self.cell_index is None:
            return "before any cell ran"
        count = f"[{self.failed_cell}] " if self.failed_cell is not None else ""
        return f"code cell {self.cell_index} of {self.n_cells} ({count}starts {self.cell_line!r})"


def print_outcome(o: Outcome) -> None:
    """The line a chapter's end prints: ``ok``/``FAILED``, the chapter, its seconds."""
    status = "ok" if o.ok else "FAILED"
    print(f"  {status:6s} {o.chapter}  ({o.seconds:.0f} s)", flush=True)


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file renamed over it: a process killed while
    writing (a sweep stopped by a signal) leaves the old file or the new one, never half of one."""
    import os

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def refuse_inherited_budget(why: str) -> str | None:
    """Why a run that must be at budget x1 (``why`` says which) refuses to start: the budget
    multiplier ``IMPLICIT_BIAS_BUDGET`` that its kernels would inherit from this shell is set to
    something other than 1, or is not a number; None when it may start."""
    from ..runtime import BUDGET_ENV, budget  # here: importing the book loads no torch

    try:
        k = budget()
    except ValueError as err:
        return f"{err}. nothing was executed."
    if k == 1:
        return None
    return f"{BUDGET_ENV}={k:g} is set in this shell, but {why}: unset {BUDGET_ENV}. nothing was executed."


def literal_or_text(text: str) -> Any:
    """``text`` read as a Python literal (a glued value, a ``-p`` parameter), else the text itself."""
    import ast

    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
