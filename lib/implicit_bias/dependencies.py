"""The library's import graph, read from its sources without importing anything: which modules of
the library a module imports (at its top or inside a function), the modules a piece of code reaches
through them, and the circles of the graph.

Two users: :mod:`implicit_bias.cache` keys a stored result by the sources of the modules its code
reaches (not the whole library), and ``tests/test_layout.py`` fails on any circle between modules
of the library.

**Edges.** ``import a.b`` and ``from a import b`` draw an edge to the module ``a.b`` when it is a
module of the library, else (``b`` a name defined in ``a``) to ``a``; relative imports are resolved
against the importing module's package. The packages above an imported module, whose
``__init__.py`` Python runs first, are not edges of the graph (every submodule would otherwise form
a circle with a package that imports it); :func:`reached` adds them, since their code runs.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path


def module_names(root: Path) -> dict[str, Path]:
    """The modules of the package folder ``root`` by dotted name (``root``'s folder name first; a
    package is named by its ``__init__.py``)."""
    out: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        bits = [root.name, *path.relative_to(root).with_suffix("").parts]
        if bits[-1] == "__init__":
            bits = bits[:-1]
        out[".".join(bits)] = path
    return out


def import_targets(tree: ast.AST, package: str | None) -> list[tuple[int, list[str]]]:
    """``(line, candidates)`` for every import statement of ``tree``, anywhere in it: the dotted
    names it may load, most specific first (``from a import b``: ``a.b``, then ``a``). ``package``
    is the importing module's package, for relative imports (None: relative imports are skipped,
    as in a chapter, which is no package)."""
    found: list[tuple[int, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append((node.lineno, [alias.name]))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if package is None:
                    continue
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for alias in node.names:
                found.append((node.lineno, [f"{mod}.{alias.name}", mod]))
    return found


def imported_modules(source: str, module: str | None, known: Iterable[str],
                     is_package: bool = False) -> set[str]:
    """The modules among ``known`` that ``source`` (the code of ``module``; None for code outside
    the library) imports, at its top or inside functions. Raises SyntaxError if it does not parse."""
    known = set(known)
    package = None
    if module is not None:
        package = module if is_package else module.rpartition(".")[0]
    out = set()
    for _, candidates in import_targets(ast.parse(source), package):
        hit = next((c for c in candidates if c in known), None)
        if hit is not None:
            out.add(hit)
    return out


def import_graph(root: Path, sources: Mapping[str, str] | None = None) -> dict[str, set[str]]:
    """``{module: the library modules it imports}`` for every module under the package folder
    ``root``. ``sources`` (module -> text) replaces the files' text where given (the code a
    process imported, when the files changed since)."""
    names = module_names(root)
    graph = {}
    for name, path in names.items():
        text = sources[name] if sources is not None and name in sources else path.read_text()
        found = imported_modules(text, name, names, is_package=path.name == "__init__.py")
        graph[name] = found - {name}
    return graph


def reached(graph: Mapping[str, Iterable[str]], roots: Iterable[str]) -> set[str]:
    """The modules ``roots`` reach through the graph, the roots included, with every package above
    each of them (their ``__init__.py`` runs on import, and may import more)."""
    todo = [r for r in roots if r in graph]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parents = [name.rsplit(".", k)[0] for k in range(1, name.count(".") + 1)]
        todo += [m for m in [*graph[name], *parents] if m in graph and m not in seen]
    return seen


def circles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The circles of the graph: each set of modules that import one another, directly or through
    others (a strongly connected component of more than one module, or a module importing itself),
    sorted. Tarjan's algorithm, iterative."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            nxt = next((m for m in edges if m in graph), None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    found.append(sorted(component))
    return sorted(found)
