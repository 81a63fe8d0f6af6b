"""The library's layout mirrors the book: the toolkit and the book's machinery at the top of
``implicit_bias``, one subpackage per part (named like its folder under ``chapters/``). A part
never imports another part, the toolkit never imports a part, and a chapter imports only its own
part (the synthesis may import several). Each violation is reported with its file and line."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import implicit_bias
from implicit_bias import book

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
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level and package is not None:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            targets = [mod] + [f"{mod}.{a.name}" for a in node.names]
        for t in targets:
            bits = t.split(".")
            if len(bits) >= 2 and bits[0] == "implicit_bias" and bits[1] in known:
                found.append((node.lineno, bits[1], lines[node.lineno - 1].strip()))
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
