"""Where the book lives and its chapters: the root, the chapter sources in table-of-contents
order, what a chapter declares (its parameters and profiles, read from the ``.py`` without
running it), and the pairing of each jupytext ``.py`` with its ``.ipynb``.

Pairing rules (``make sync``, ``make execute``):

- the ``.py`` is the source of truth: the ``.ipynb`` gets its inputs;
- a cell whose source is unchanged keeps its id, metadata and outputs; a code cell whose source
  changed keeps its id but loses its outputs (they belong to the old code); a new cell has none;
- nothing is written when nothing changes (a no-op leaves no diff, not even in metadata);
- an ``.ipynb`` whose inputs were edited (in a Jupyter without jupytext, say) is never
  overwritten silently: :func:`sync` raises :class:`NotebookEdited`, which names the file and the
  two ways out (carry the edits into the ``.py``, or discard them).
"""

from __future__ import annotations

import ast
import copy
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def find_root() -> Path:
    """The book's root: the nearest folder above the working directory holding ``_toc.yml``,
    else the checkout this library was installed from."""
    for folder in [Path.cwd(), *Path.cwd().parents]:
        if (folder / "_toc.yml").exists() and (folder / "chapters").is_dir():
            return folder
    return Path(__file__).resolve().parents[3]


ROOT = find_root()
# Cell metadata papermill and nbclient add on every run (timestamps): dropped from committed notebooks.
VOLATILE_CELL_METADATA = ("papermill", "execution")


def all_chapters(root: Path = ROOT) -> list[Path]:
    """Every chapter source ``chapters/<part>/<name>.py``, in the order of the table of contents
    (chapters missing from it come last, by name)."""
    import yaml

    order: dict[str, int] = {}
    toc_path = root / "_toc.yml"
    if toc_path.exists():
        toc = yaml.safe_load(toc_path.read_text())
        files = [c["file"] for part in toc.get("parts", []) for c in part.get("chapters", [])]
        order = {f: i for i, f in enumerate(files)}
    found = [p for p in (root / "chapters").glob("*/*.py") if not p.name.startswith("_")]
    key = lambda p: (order.get(str(p.relative_to(root).with_suffix("")), len(order)), str(p))
    return sorted(found, key=key)


class ChapterNotFound(SystemExit):
    """A chapter name or path that does not select what it says; the message lists the chapters."""


def resolve_chapters(names: Sequence[str], all_matching: bool = False, root: Path = ROOT) -> list[Path]:
    """Chapter sources from paths (``.py`` or ``.ipynb``) or fragments of their names.

    A fragment must select one chapter: one that matches several (``02`` matches the second
    chapter of every part) stops with the list of them, unless ``all_matching`` (``ALL=1``) says
    that all of them are meant. A path to a file that is not a chapter (not
    ``chapters/<part>/<name>.py``) stops with a message saying what a chapter is.
    """
    chapters = all_chapters(root)
    if not names:
        return chapters
    listing = lambda paths: "\n  ".join(relative(p, root) for p in paths)
    found: list[Path] = []
    for name in names:
        path = Path(name)
        if path.suffix in (".py", ".ipynb") or "/" in name or path.is_absolute():
            full = (path if path.is_absolute() else root / path)
            if path.suffix in (".py", ".ipynb"):
                full = full.with_suffix(".py")
            chapter = next((c for c in chapters if full.resolve() == c.resolve()), None)
            if chapter is not None:
                found.append(chapter)
                continue
            if path.suffix in (".py", ".ipynb") or full.is_file():
                what = "is not a chapter" if full.exists() or full.with_suffix(".ipynb").exists() else "does not exist"
                raise ChapterNotFound(
                    f"error: {name} {what}: a chapter is a source chapters/<part>/<NN_name>.py listed in "
                    f"_toc.yml (CHAPTER= takes its path or a part of its name). The chapters are:\n  "
                    f"{listing(chapters)}")
        matches = [p for p in chapters if name in relative(p, root)]
        if not matches:
            raise ChapterNotFound(f"error: no chapter matches {name!r}; the chapters are:\n  {listing(chapters)}")
        if len(matches) > 1 and not all_matching:
            raise ChapterNotFound(
                f"error: {name!r} matches {len(matches)} chapters:\n  {listing(matches)}\n"
                f"name one of them (CHAPTER=<its path>), or say that all are meant: ALL=1 with make "
                f"(--all-matching on the command line).")
        found.extend(m for m in matches if m not in found)
    return found


def relative(path: Path, root: Path = ROOT) -> str:
    """``path`` relative to the book's root when it is inside it (for messages)."""
    path = Path(path)
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def notebook_from_source(py: Path):
    """The notebook of a jupytext source, as an ``nbformat`` node (inputs only)."""
    import jupytext

    return jupytext.read(py)


# --------------------------------------------------------------------------- what a chapter declares

NOT_A_LITERAL = object()  # the default of a parameter that is an expression, not a literal


@dataclass(frozen=True)
class ChapterSpec:
    """What a chapter declares, read from its source without running it.

    ``parameters``: the names assigned in the cell tagged ``parameters`` with their default values
    (:data:`NOT_A_LITERAL` when the default is an expression); ``profiles``: the keys of its
    ``PROFILES`` dict, or None when the chapter defines none the reader can parse.
    """

    path: Path
    parameters: dict[str, Any] = field(default_factory=dict)
    profiles: tuple[str, ...] | None = None
    has_parameters_cell: bool = False

    @property
    def name(self) -> str:
        return relative(self.path.with_suffix(""))


def chapter_spec(py: Path) -> ChapterSpec:
    """Parse the parameters cell and the ``PROFILES`` dict of a chapter (``ast``, no execution)."""
    nb = notebook_from_source(py)
    params: dict[str, Any] = {}
    has_cell = False
    profiles: tuple[str, ...] | None = None
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        tree = _parse(cell.source)
        if tree is None:
            continue
        if "parameters" in cell.metadata.get("tags", []):
            has_cell = True
            for node in tree.body:
                for name, value in _assignments(node):
                    params[name] = _literal(value)
        for node in tree.body:
            for name, value in _assignments(node):
                if name == "PROFILES":
                    keys = _dict_keys(value)
                    if keys is not None:
                        profiles = keys
    return ChapterSpec(Path(py), params, profiles, has_cell)


def _parse(source: str) -> ast.Module | None:
    # IPython magics (%matplotlib, !cmd) are not Python: drop those lines before parsing
    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def _assignments(node: ast.stmt) -> list[tuple[str, ast.expr | None]]:
    if isinstance(node, ast.Assign):
        return [(t.id, node.value) for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [(node.target.id, node.value)]
    return []


def _literal(node: ast.expr | None) -> Any:
    if node is None:
        return NOT_A_LITERAL
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return NOT_A_LITERAL


def _dict_keys(node: ast.expr | None) -> tuple[str, ...] | None:
    """Keys of ``{"ci": ..., "full": ...}`` or ``dict(ci=..., full=...)``."""
    if isinstance(node, ast.Dict):
        keys = [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
        return tuple(keys) if len(keys) == len(node.keys) else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        if node.args:
            return None
        return tuple(k.arg for k in node.keywords if k.arg is not None)
    return None


def profile_settings(py: Path) -> dict[str, dict[str, Any]]:
    """The literal settings of each profile of a chapter (entries that are not literals are left
    out): ``{"ci": {"steps": 2000, ...}, "full": {...}}``. Used for the run-time estimate."""
    nb = notebook_from_source(py)
    for cell in nb.cells:
        tree = _parse(cell.source) if cell.cell_type == "code" else None
        for node in tree.body if tree else []:
            for name, value in _assignments(node):
                if name == "PROFILES":
                    return {key: {k: v for k, v in _pairs(expr) if v is not NOT_A_LITERAL}
                            for key, expr in _pairs(value, literal=False)}
    return {}


def _pairs(node: ast.expr | None, literal: bool = True) -> list[tuple[str, Any]]:
    """The string-keyed entries of ``{"a": ...}`` or ``dict(a=...)`` (values as literals, or as
    expressions with ``literal=False``)."""
    value = _literal if literal else (lambda e: e)
    if isinstance(node, ast.Dict):
        return [(k.value, value(v)) for k, v in zip(node.keys, node.values)
                if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        return [(kw.arg, value(kw.value)) for kw in node.keywords if kw.arg]
    return []


# --------------------------------------------------------------------------- pairing .py and .ipynb


class NotebookEdited(RuntimeError):
    """The ``.ipynb`` holds input edits that its ``.py`` does not have: syncing would lose them."""


def input_cells(nb: Any) -> list[tuple[str, str]]:
    """What the pairing compares: each cell's type and source (surrounding blank space ignored)."""
    return [(c.cell_type, c.source.strip()) for c in nb.cells]


def _same_source(a: str, b: str) -> bool:
    return a.strip() == b.strip()


def _meta_key(meta: dict) -> dict:
    """Cell metadata without what execution adds (timings, empty tag lists)."""
    out = {k: v for k, v in meta.items() if k not in VOLATILE_CELL_METADATA}
    if out.get("tags") == []:
        out.pop("tags")
    return out


def synced_notebook(py: Path, existing: Any | None = None) -> Any:
    """The notebook of ``py`` with what ``existing`` (the paired ``.ipynb``) can keep: ids and
    metadata of cells matched to it, and outputs of code cells whose source is unchanged. Cells are
    matched as jupytext matches them (same content first, then position)."""
    from jupytext.combine import map_outputs_to_inputs

    src = notebook_from_source(py)
    # jupytext's convention: a paired .ipynb does not repeat the .py's text_representation
    header = copy.deepcopy(dict(src.metadata))
    header.get("jupytext", {}).pop("text_representation", None)
    if existing is None:
        src.metadata = header
        return src
    nb = copy.deepcopy(existing)
    mapping = map_outputs_to_inputs(src.cells, existing.cells)
    cells = []
    for cell, j in zip(src.cells, mapping):
        if j is None:
            cells.append(cell)
            continue
        old = copy.deepcopy(existing.cells[j])
        if not _same_source(old.source, cell.source):
            old.source = cell.source
            if old.cell_type == "code":  # outputs of the old code would be stale
                old.outputs = []
                old.execution_count = None
        if _meta_key(old.metadata) != _meta_key(cell.metadata):
            old.metadata = cell.metadata
        cells.append(old)
    nb.cells = cells
    for key, value in header.items():  # the .py header (jupytext pairing, kernelspec)
        current = copy.deepcopy(nb.metadata.get(key))
        if key == "jupytext" and isinstance(current, dict):
            current.pop("text_representation", None)  # kept where it is, never added
        if current != value:
            nb.metadata[key] = value
    return nb


def notebook_text(nb: Any) -> str:
    """The file content ``nbformat.write`` would produce."""
    import nbformat

    text = nbformat.writes(nb, version=nbformat.NO_CONVERT)
    return text if text.endswith("\n") else text + "\n"


def write_if_changed(nb: Any, path: Path) -> bool:
    """Write ``nb`` to ``path`` unless the file already holds exactly that; True when written."""
    text = notebook_text(nb)
    if path.exists() and path.read_text() == text:
        return False
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text)
    tmp.replace(path)
    return True


def committed_text(path: Path, root: Path = ROOT) -> str | None:
    """The content of ``path`` at git's HEAD, or None (no git, not tracked, outside the repo)."""
    try:
        rel = Path(path).resolve().relative_to(root)
        done = subprocess.run(["git", "-C", str(root), "show", f"HEAD:{rel.as_posix()}"],
                              capture_output=True, text=True, timeout=30)
    except (ValueError, OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def notebook_edit_reason(py: Path, root: Path = ROOT) -> str | None:
    """Why the ``.ipynb`` paired with ``py`` seems to hold input edits of its own, or None.

    The inputs differ from the ``.py``'s, and either the notebook was saved after the ``.py``
    (file times), or git shows the ``.py`` unchanged since the last commit while the notebook's
    inputs changed (so the change can only come from the notebook). A notebook whose inputs are
    still those of the last commit holds no edit, whatever its file time.
    """
    import nbformat

    ipynb = py.with_suffix(".ipynb")
    if not ipynb.exists():
        return None
    nb = nbformat.read(ipynb, as_version=4)
    mine = input_cells(nb)
    if mine == input_cells(notebook_from_source(py)):
        return None
    head_nb = committed_text(ipynb, root)
    if head_nb is not None and mine == input_cells(nbformat.reads(head_nb, as_version=4)):
        return None
    if ipynb.stat().st_mtime > py.stat().st_mtime:
        return f"{relative(ipynb, root)} was saved after {relative(py, root)} and its cells differ"
    head_py = committed_text(py, root)
    if head_nb is not None and head_py is not None and head_py == py.read_text():
        return (f"{relative(ipynb, root)} has cells that changed since the last commit while "
                f"{relative(py, root)} did not")
    return None


def edited_notebook_message(py: Path, reason: str, root: Path = ROOT) -> str:
    rel_py, rel_nb = relative(py, root), relative(py.with_suffix(".ipynb"), root)
    return (
        f"{rel_nb} holds edits that {rel_py} does not have ({reason}).\n"
        f"The .py is the source of truth: syncing now would overwrite those edits. Either\n"
        f"  keep them:    make sync CHAPTER={rel_py} KEEP=notebook   (writes the notebook's cells into the .py)\n"
        f"  discard them: make sync CHAPTER={rel_py} KEEP=source     (the .py wins, as usual)\n"
        f"(or compare first: .venv/bin/jupytext --diff {rel_py} {rel_nb})"
    )


def write_source_from_notebook(py: Path) -> bool:
    """Carry the cells of the paired ``.ipynb`` into ``py`` (jupytext percent format, the ``.py``'s
    own header kept). True when the ``.py`` changed."""
    import jupytext
    import jupytext.header
    import nbformat

    nb = nbformat.read(py.with_suffix(".ipynb"), as_version=4)
    nb.metadata.update(notebook_from_source(py).metadata)  # keep the .py's header as it is
    previous = jupytext.header.INSERT_AND_CHECK_VERSION_NUMBER
    jupytext.header.INSERT_AND_CHECK_VERSION_NUMBER = False  # no version lines in the header
    try:
        text = jupytext.writes(nb, fmt="py:percent")
    finally:
        jupytext.header.INSERT_AND_CHECK_VERSION_NUMBER = previous
    if text == py.read_text():
        return False
    py.write_text(text)
    return True


def sync(py: Path, keep: str | None = None, root: Path = ROOT) -> bool:
    """Bring the paired ``.ipynb`` in line with ``py``; True when a file was written.

    ``keep=None`` refuses (:class:`NotebookEdited`) when the notebook holds edits of its own;
    ``keep="notebook"`` first carries them into the ``.py``; ``keep="source"`` discards them.
    """
    import nbformat

    if keep not in (None, "source", "notebook"):
        raise ValueError(f"keep must be 'source' or 'notebook', got {keep!r}")
    ipynb = py.with_suffix(".ipynb")
    changed = False
    if keep == "notebook" and ipynb.exists():
        changed = write_source_from_notebook(py)
    elif keep is None:
        reason = notebook_edit_reason(py, root)
        if reason:
            raise NotebookEdited(edited_notebook_message(py, reason, root))
    existing = nbformat.read(ipynb, as_version=4) if ipynb.exists() else None
    return write_if_changed(synced_notebook(py, existing), ipynb) or changed


def strip_volatile(nb: Any) -> Any:
    """Drop per-run timing metadata, and join consecutive stream outputs of a cell (stdout with
    stdout, stderr with stderr), so that re-executions give identical files: how a cell's prints are
    cut into stream messages depends on when the kernel flushed them (a timer), not on the code."""
    nb.metadata.pop("papermill", None)
    for cell in nb.cells:
        for key in VOLATILE_CELL_METADATA:
            cell.metadata.pop(key, None)
        if "outputs" in cell:
            cell.outputs = _join_streams(cell.outputs)
    return nb


def _join_streams(outputs: list[Any]) -> list[Any]:
    joined: list[Any] = []
    for out in outputs:
        prev = joined[-1] if joined else None
        if (out.get("output_type") == "stream" and prev is not None
                and prev.get("output_type") == "stream" and prev.get("name") == out.get("name")):
            prev["text"] = "".join(prev["text"]) + "".join(out["text"])
        else:
            joined.append(out)
    return joined
