"""Results of expensive runs, stored under a key of (name, config, the code that computes them),
so that a stored result is never served to code that would compute something else.

**What the key covers.** ``sha256`` of the configuration and of a *code fingerprint*:

- the library code the result depends on: the ``.py`` files (paths and bytes) of the library
  modules reached, through the library's import graph (:mod:`implicit_bias.dependencies`: imports
  at a module's top and inside its functions, and the packages above each module), from the module
  that defines the computation, the module that calls :func:`cached`, and the library modules the
  chapter's code imports. A toolkit module the computation's part imports, or the part's own
  module, is in it; another part, or a toolkit module nothing on the way imports, is not. The
  command line ``implicit_bias/book/`` is never hashed (it builds pages and runs notebooks but
  computes no result);
- the chapter: in a Jupyter kernel (a chapter executed by papermill, or opened in JupyterLab),
  the source of every cell executed so far, each distinct cell once, in the order it first ran
  (the cell calling :func:`cached` included); in a plain Python process, the file of its
  ``__main__`` module;
- the versions of torch and Python.

Why modules and not the functions involved: a result depends on more than the function that
computes it (the data a chapter built three cells earlier, a helper the library calls, a
default changed in a toolkit module); following those dependencies by inspecting code objects
misses globals and data, while hashing whole modules cannot. The price is that a change anywhere
in a module reached, or in an earlier cell of the chapter, invalidates the entry: a rerun
recomputes it. An edit elsewhere in the library (a comment in an unrelated part, a toolkit module
the computation never imports) keeps it, so a long ``full`` run survives a pull that does not
touch its code. What the graph cannot see is code reached without an import statement (``import
implicit_bias`` and then ``implicit_bias.spectra``): import modules explicitly, as the package asks.
If a cell of the chapter cannot be read as Python, every module of the library counts.
(``implicit_bias.__version__`` is not used: it never changes.)

The library is fingerprinted once per process, when this module is first imported (which is
when the chapter imports the library): that is the code the process runs. If the files of the
modules a result depends on change on disk afterwards (an edit while a JupyterLab kernel is
running), the code in memory no longer matches the files, and :func:`cached` computes without
reading or writing the cache, saying so, until the kernel is restarted.

**Provenance.** Every entry stores, with its result, when it was computed, by which code
(the short library and chapter hashes) and how long it took. When :func:`cached` serves an entry
it prints one line saying so (``cache: '<name>' loaded from <entry>, stored <when> by library
<hash> / chapter <hash> ...``), which a page shows under the cell that used it; :func:`served`
lists them. Keep such cells out of nbval's checked cells (in a chapter only the final ledger cell
is checked).

Writes are atomic (a temporary file in the same folder, then ``os.replace``), so an interrupted
run never leaves a half-written entry: a run killed between two segments of a segmented
computation resumes after the last stored segment. The folder is ``$IMPLICIT_BIAS_CACHE`` or
``~/.cache/implicit_bias``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from . import dependencies

T = TypeVar("T")
CACHE_ENV = "IMPLICIT_BIAS_CACHE"
FORMAT = 2  # layout of an entry: {"format", "result", "provenance"}
LIBRARY_DIR = Path(__file__).resolve().parent
NOT_FINGERPRINTED = ("book",)  # subpackages of the library left out of the fingerprint
SHORT = 12  # characters of a hash shown in notes


def cache_dir() -> Path:
    """The cache folder (created on first use)."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "implicit_bias")


# --------------------------------------------------------------------------- the code fingerprint


def _library_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py")
                  if "__pycache__" not in p.parts
                  and p.relative_to(root).parts[0] not in NOT_FINGERPRINTED)


def library_fingerprint(root: Path = LIBRARY_DIR) -> str:
    """``sha256`` of the library's sources under ``root`` (paths and bytes; ``book/`` left out)."""
    h = hashlib.sha256()
    for p in _library_files(root):
        h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


class _Snapshot:
    """The library's sources as this process imported them: per module its file, the file's date
    and size, the ``sha256`` of its bytes and its text (the import graph is read from these texts,
    on first use)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: dict[str, tuple[Path, int, int, str]] = {}
        self.texts: dict[str, str] = {}
        fingerprinted = set(_library_files(root))
        for name, path in dependencies.module_names(root).items():
            if path in fingerprinted:
                data, st = path.read_bytes(), path.stat()
                self.files[name] = (path, st.st_mtime_ns, st.st_size, hashlib.sha256(data).hexdigest())
                self.texts[name] = data.decode(errors="replace")
        self._graph: dict[str, set[str]] | None = None

    @classmethod
    def take(cls, root: Path) -> "_Snapshot":
        return cls(root)

    def graph(self) -> dict[str, set[str]]:
        if self._graph is None:
            self._graph = dependencies.import_graph(self.root, self.texts)
        return self._graph

    def reached(self, roots: Iterable[str] | None) -> list[str]:
        """The fingerprinted modules ``roots`` reach (every module when ``roots`` is None)."""
        if roots is None:
            return sorted(self.files)
        return sorted(m for m in dependencies.reached(self.graph(), roots) if m in self.files)

    def fingerprint(self, modules: Iterable[str]) -> str:
        """``sha256`` of the modules' paths and bytes (as imported)."""
        h = hashlib.sha256()
        for name in sorted(modules):
            path, _, _, digest = self.files[name]
            h.update(f"{path.relative_to(self.root)}\0{digest}\0".encode())
        return h.hexdigest()

    def changed(self, modules: Iterable[str] | None = None) -> bool:
        """Whether the files of ``modules`` (default: all) differ on disk from those fingerprinted
        (date, size, or gone)."""
        for name in self.files if modules is None else modules:
            path, mtime, size, _ = self.files[name]
            try:
                st = path.stat()
            except OSError:
                return True
            if (st.st_mtime_ns, st.st_size) != (mtime, size):
                return True
        return False


_LIBRARY = _Snapshot.take(LIBRARY_DIR)  # the code this process runs (see the module docstring)


def _chapter_cells() -> list[str]:
    """The running chapter's code: in an IPython kernel the cells executed so far (each distinct
    cell once, in the order first run); otherwise the ``__main__`` file's source (none when there
    is no file, as in ``python -c``)."""
    shell = None
    if "IPython" in sys.modules:
        try:
            from IPython import get_ipython

            shell = get_ipython()
        except Exception:  # an IPython too old or half imported: no kernel to read
            shell = None
    if shell is not None and getattr(shell, "history_manager", None) is not None:
        cells = [c for c in shell.history_manager.input_hist_raw if c.strip()]
        return list(dict.fromkeys(cells))
    main = getattr(sys.modules.get("__main__"), "__file__", None)
    if main:
        try:
            return [Path(main).read_text(errors="replace")]
        except OSError:
            return []
    return []


def chapter_code() -> str:
    """The code of the running chapter (:func:`_chapter_cells`), the cells joined."""
    return "\n# --- cell ---\n".join(_chapter_cells())


def _python_of(cell: str) -> str:
    """A cell as Python: IPython's magics (``%time``, ``!ls``) turned into calls, when IPython is
    loaded."""
    if "IPython" in sys.modules:
        try:
            from IPython.core.inputtransformer2 import TransformerManager

            return TransformerManager().transform_cell(cell)
        except Exception:
            pass
    return cell


def chapter_imports(cells: Sequence[str] | None = None) -> set[str] | None:
    """The library modules the chapter's code imports (default: :func:`_chapter_cells`); None when
    a cell does not parse (then the whole library counts)."""
    known = frozenset(_LIBRARY.graph())
    found: set[str] = set()
    for cell in _chapter_cells() if cells is None else cells:
        imported = _cell_imports(cell, known)
        if imported is None:
            return None
        found |= imported
    return found


@functools.lru_cache(maxsize=4096)
def _cell_imports(cell: str, known: frozenset[str]) -> frozenset[str] | None:
    """The modules among ``known`` one cell imports (None: it does not parse); each cell is read
    once, however many results a chapter stores."""
    try:
        return frozenset(dependencies.imported_modules(_python_of(cell), None, known))
    except SyntaxError:
        return None


def depends_on(compute: Callable[..., Any] | None = None, caller: str | None = None) -> list[str] | None:
    """The library modules a result computed by ``compute`` may depend on: those that the module
    defining ``compute``, the module calling :func:`cached` (``caller``) and the chapter's code
    import, through the library's import graph (:mod:`implicit_bias.dependencies`); None when the
    chapter's code cannot be read as Python (then every module counts)."""
    roots = chapter_imports()
    if roots is None:
        return None
    target = getattr(compute, "func", compute)  # functools.partial
    for name in (getattr(target, "__module__", None), caller):
        if isinstance(name, str):
            roots.add(name)
    return _LIBRARY.reached(roots)


def code_fingerprint(modules: Iterable[str] | None = None) -> dict[str, str]:
    """What the key holds about the code: the ``sha256`` of the library modules the result depends
    on (default: those the running chapter imports, :func:`depends_on`) and of the chapter, and the
    versions of torch and Python."""
    import torch

    reached = depends_on() if modules is None else list(modules)
    return {"library": _LIBRARY.fingerprint(_LIBRARY.reached(None) if reached is None else reached),
            "chapter": hashlib.sha256(chapter_code().encode()).hexdigest(),
            "torch": torch.__version__,
            "python": f"{sys.version_info.major}.{sys.version_info.minor}"}


def cache_key(name: str, config: Mapping[str, Any], code: Mapping[str, str] | None = None) -> str:
    """A stable file name for ``name`` under ``config`` and ``code`` (default: the code running
    now, :func:`code_fingerprint`)."""
    code = dict(code_fingerprint() if code is None else code)
    blob = json.dumps({"config": config, "code": code, "format": FORMAT}, sort_keys=True, default=str)
    return f"{name}-{hashlib.sha256(blob.encode()).hexdigest()[:16]}.pt"


# --------------------------------------------------------------------------- entries and provenance


@dataclass(frozen=True)
class Provenance:
    """Where a stored result came from: its entry (file name), when it was stored (UTC), the
    code that computed it (short hashes) and how long that took."""

    name: str
    entry: str
    stored: str
    library: str
    chapter: str
    torch: str
    seconds: float

    def source(self) -> str:
        """``<entry>, stored <when> by library <hash> / chapter <hash> (torch <version>)``."""
        return (f"{self.entry}, stored {self.stored} by library {self.library} / chapter "
                f"{self.chapter} (torch {self.torch})")

    def note(self) -> str:
        """One line for the page: which entry, when, by which code."""
        s = self.seconds
        took = f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min" if s < 7200 else f"{s / 3600:.1f} h"
        return f"cache: {self.name!r} loaded from {self.source()}; computing it took {took}"


_SERVED: list[Provenance] = []


def served() -> list[Provenance]:
    """The entries :func:`cached` served in this process, in order."""
    return list(_SERVED)


def _write_atomic(path: Path, payload: Any) -> None:
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    os.close(fd)
    try:
        torch.save(payload, tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def cached(name: str, config: Mapping[str, Any], compute: Callable[[], T], *,
           enabled: bool = True, directory: str | Path | None = None, note: bool = True) -> T:
    """Return the stored result of ``compute()`` for ``(name, config)`` and the code running now
    (see the module docstring), computing and storing it first if needed. When the result comes
    from the cache, a one-line provenance note is printed (unless ``note=False``) and recorded
    (:func:`served`). With ``enabled=False`` it just calls ``compute()``."""
    import torch

    if not enabled:
        return compute()
    modules = depends_on(compute, sys._getframe(1).f_globals.get("__name__"))
    if _LIBRARY.changed(modules):
        print(f"cache: not used for {name!r}: the library's files changed after this process imported "
              "it, so its code may not be the code on disk (restart the kernel to use the cache)")
        return compute()
    code = code_fingerprint(_LIBRARY.reached(None) if modules is None else modules)
    folder = Path(directory) if directory is not None else cache_dir()
    path = folder / cache_key(name, config, code)
    if path.exists():
        stored = torch.load(path, weights_only=False)
        prov = Provenance(**stored["provenance"])
        _SERVED.append(prov)
        if note:
            print(prov.note())
        return stored["result"]
    start = time.perf_counter()
    result = compute()
    prov = Provenance(name=name, entry=path.name,
                      stored=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                      library=code["library"][:SHORT], chapter=code["chapter"][:SHORT],
                      torch=code["torch"], seconds=round(time.perf_counter() - start, 3))
    _write_atomic(path, {"format": FORMAT, "result": result, "provenance": asdict(prov)})
    return result
