"""Where the book lives and its chapters: the root, the chapter sources in table-of-contents
order, and the pairing of each jupytext ``.py`` with its ``.ipynb``."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
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


def resolve_chapters(names: Sequence[str]) -> list[Path]:
    """Chapter sources from paths (``.py`` or ``.ipynb``) or substrings of their names."""
    if not names:
        return all_chapters()
    found: list[Path] = []
    for name in names:
        path = Path(name)
        if path.suffix in (".py", ".ipynb") and (ROOT / path).with_suffix(".py").exists():
            found.append((ROOT / path).with_suffix(".py").resolve())
            continue
        matches = [p for p in all_chapters() if name in str(p.relative_to(ROOT))]
        if not matches:
            known = "\n  ".join(str(p.relative_to(ROOT)) for p in all_chapters())
            raise SystemExit(f"no chapter matches {name!r}; the chapters are:\n  {known}")
        found.extend(matches)
    return found


def notebook_from_source(py: Path):
    """The notebook of a jupytext source, as an ``nbformat`` node (inputs only)."""
    import jupytext

    return jupytext.read(py)


def sync(py: Path) -> Path:
    """Write the paired ``.ipynb`` of ``py`` with its inputs, keeping outputs of unchanged cells
    (``jupytext --to ipynb --update``: the ``.py`` always wins)."""
    ipynb = py.with_suffix(".ipynb")
    cmd = [sys.executable, "-m", "jupytext", "--quiet", "--to", "ipynb"]
    if ipynb.exists():
        cmd.append("--update")
    subprocess.run([*cmd, str(py)], check=True)
    return ipynb


def strip_volatile(nb: Any) -> Any:
    """Drop per-run timing metadata so re-executions give clean diffs."""
    nb.metadata.pop("papermill", None)
    for cell in nb.cells:
        for key in VOLATILE_CELL_METADATA:
            cell.metadata.pop(key, None)
    return nb
