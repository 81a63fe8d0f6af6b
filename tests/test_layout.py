"""The library's layout mirrors the book: the toolkit and the book's machinery at the top of
``implicit_bias``, one subpackage per part (named like its folder under ``chapters/``). A part
never imports another part, the toolkit never imports a part, and a chapter imports only its own
part (the synthesis may import several). Each violation is reported with its file and line. And no
modules of the library import one another in a circle (imports inside functions count)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import implicit_bias
from implicit_bias import book, dependencies

LIB = Path(implicit_bias.__file__).resolve().parent
ROOT = book.ROOT
# packages that are not parts: the book's machinery
MACHINERY_PACKAGES = {"book"}
# chapter folders allowed to import several parts
SYNTHESIS_FOLDERS = {"synthesis"}


def parts() -> set[str]:
    return {p.name for p in LIB.iterdir()
            if p.is_dir() and (p / "__init__.py").exists() and p.name not in MACHINERY_PACKAGES}


def imported_parts(path: Path, package: str | None) -> list[tuple[int, str, str]]:
    """``(line, part, source line)`` for every import of a part in ``path``. ``package`` is the
    dotted package of the module (for relative imports), ``None`` for a chapter."""
    tree = ast.parse(path.read_text(), filename=str(path))
    lines = path.read_text().splitlines()
    known = parts()
    found = []
    for lineno, candidates in dependencies.import_targets(tree, package):
        for t in candidates:
            bits = t.split(".")
            if len(bits) >= 2 and bits[0] == "implicit_bias" and bits[1] in known:
                found.append((lineno, bits[1], lines[lineno - 1].strip()))
                break
    return found


def module_package(path: Path) -> str:
    rel = path.relative_to(LIB.parent).with_suffix("")
    bits = list(rel.parts)
    return ".".join(bits[:-1]) if bits[-1] != "__init__" else ".".join(bits[:-1])


def test_there_are_parts():
    assert {"invariances", "rank_minimization", "extrapolation"} <= parts()


def test_every_part_is_named_like_a_chapter_folder():
    folders = {p.name for p in (ROOT / "chapters").iterdir() if p.is_dir()}
    missing = sorted(parts() - folders)
    assert not missing, f"library subpackages with no chapters/<part>/ folder of that name: {missing}"


def test_toolkit_and_machinery_never_import_a_part():
    bad = []
    for path in sorted(LIB.rglob("*.py")):
        rel = path.relative_to(LIB)
        if rel.parts[0] in parts():
            continue
        for line, part, text in imported_parts(path, module_package(path)):
            bad.append(f"{rel}:{line}: imports part {part!r}: {text}")
    assert not bad, "the toolkit must not import a part (move what both need into the toolkit):\n" + "\n".join(bad)


def test_a_part_never_imports_another_part():
    bad = []
    for part in sorted(parts()):
        for path in sorted((LIB / part).rglob("*.py")):
            for line, other, text in imported_parts(path, module_package(path)):
                if other != part and part not in SYNTHESIS_FOLDERS:   # the synthesis reads every part
                    bad.append(f"{path.relative_to(LIB)}:{line}: part {part!r} imports part {other!r}: {text}")
    assert not bad, "a part must not import another part (move what both need into the toolkit):\n" + "\n".join(bad)


@pytest.mark.parametrize("py", book.all_chapters(), ids=lambda p: p.stem)
def test_a_chapter_imports_only_its_own_part(py: Path):
    folder = py.parent.name
    if folder in SYNTHESIS_FOLDERS:
        return
    bad = [f"{py.relative_to(ROOT)}:{line}: imports part {part!r}: {text}"
           for line, part, text in imported_parts(py, None) if part != folder]
    assert not bad, "\n".join(bad)


def test_the_checker_catches_a_cross_import(tmp_path: Path):
    """Negative control: an import of another part is found, relative or absolute."""
    f = tmp_path / "mod.py"
    f.write_text("from implicit_bias.extrapolation import ocs\nfrom ..rank_minimization import two_neuron\n")
    found = imported_parts(f, "implicit_bias.invariances")
    assert [(line, part) for line, part, _ in found] == [(1, "extrapolation"), (2, "rank_minimization")]


def test_no_circle_of_imports_in_the_library():
    """Modules that import one another (directly or through others, at their top or inside a
    function) cannot be read, tested or moved one at a time: what both sides need belongs in a
    module both import (as ``book/common.py`` holds what ``execute`` and ``executors`` share)."""
    found = dependencies.circles(dependencies.import_graph(LIB))
    assert not found, "modules that import one another:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_checker_catches_a_circle(tmp_path: Path):
    """Negative control: a circle through a function-level import, closed over three modules, is
    found; the same modules without the closing import are not a circle."""
    pkg = tmp_path / "implicit_bias"
    (pkg / "book").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "book" / "__init__.py").write_text("from .a import f\n")
    (pkg / "book" / "a.py").write_text("from .b import g\n\ndef f():\n    return g()\n")
    (pkg / "book" / "b.py").write_text("from .. import models\n\ndef g():\n    return models.h()\n")
    (pkg / "models.py").write_text("def h():\n    from .book.a import f  # the closing import\n    return f\n")
    assert dependencies.circles(dependencies.import_graph(pkg)) == [
        ["implicit_bias.book.a", "implicit_bias.book.b", "implicit_bias.models"]]
    (pkg / "models.py").write_text("def h():\n    return 1\n")
    assert dependencies.circles(dependencies.import_graph(pkg)) == []
