"""Building the static site: staging the source tree, pages of chapters that failed, the banner,
offline MathJax and the strict Jupyter Book build."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .common import FAILED_KEY, literal_or_text
from .sources import ROOT, notebook_from_source, relative

# The book's Sphinx extension (cross-reference text, figure numbers per page, author-year
# reference list): see implicit_bias.book.sphinx_ext; listed in _config.yml.


def jupyter_book_build(source: Path, output: Path | None = None, quiet: bool = True,
                       extra: Sequence[str] = (), config: Path | None = None) -> int:
    """Strict Jupyter Book build (``--all -W -n --keep-going``); returns the exit code.
    ``config`` replaces the source's ``_config.yml`` (see :func:`config_with_local_mathjax`)."""
    exe = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(exe), "build", str(source), "--all", "-W", "-n", "--keep-going", *extra]
    if output is not None:
        cmd += ["--path-output", str(output)]
    if config is not None:
        cmd += ["--config", str(config)]
    if quiet:
        cmd.append("--quiet")
    return subprocess.run(cmd).returncode


def stage_source(stage: Path, root: Path = ROOT) -> None:
    """Copy what the site is built from (config, toc, front matter, chapters) from the book at
    ``root`` into ``stage``, and make the notebooks ready for the site (:func:`prepare_notebooks`).
    The chapters' ``.py`` sources come along (the build skips them; the site offers them for
    download and reads their parameters for the box "Re-run this page")."""
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir(parents=True)
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy2(root / name, stage / name)
    ignore = shutil.ignore_patterns("_build", "__pycache__", ".ipynb_checkpoints")
    shutil.copytree(root / "book", stage / "book", ignore=shutil.ignore_patterns("_build", "__pycache__"))
    shutil.copytree(root / "chapters", stage / "chapters", ignore=ignore)
    for py in (stage / "chapters").rglob("*.py"):
        if not py.with_suffix(".ipynb").exists():  # helpers, or sources never executed
            py.unlink()
    prepare_notebooks(stage)


# The cell whose outputs nbval compares is marked by the comment ``# NBVAL_CHECK_OUTPUT`` (older
# chapters) or by the cell tag ``nbval-check-output``; the tag is invisible on the site, the
# comment is dropped from what the site shows (it means something to the test suite, not to a
# reader). Nothing else is hidden.
NBVAL_MARKER = "# NBVAL_"
NBVAL_LINE = re.compile(r"^\s*# ?NBVAL_[A-Z_]+\s*$")


def without_nbval_markers(source: str) -> str:
    """``source`` without its nbval marker lines (``# NBVAL_CHECK_OUTPUT`` and the like)."""
    if NBVAL_MARKER not in source:
        return source
    return "\n".join(ln for ln in source.splitlines() if not NBVAL_LINE.match(ln))


def prepare_notebooks(stage: Path) -> None:
    """Make the staged notebooks ready for the site: drop the nbval marker comments, and draw each
    ledger anew from its glued claims with the current :meth:`implicit_bias.claims.Ledger.html`
    (so that the site shows the ledgers as the library renders them now, with row ids and math,
    whenever the notebook was executed)."""
    import nbformat

    for path in sorted((stage / "chapters").rglob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        changed = False
        for cell in nb.cells:
            if cell.cell_type == "code" and NBVAL_MARKER in cell.source:
                cell.source = without_nbval_markers(cell.source)
                changed = True
        chapter = str(path.relative_to(stage / "chapters").with_suffix(""))
        changed = refresh_ledger_html(nb, chapter) or changed
        if changed:
            nbformat.write(nb, path)


def refresh_ledger_html(nb: Any, chapter: str) -> bool:
    """Replace the HTML of the ledger shown by ``ledger.report()`` with the one the library draws
    now, from the claims glued in the same cell (``chapter``: ``<part>/<name>``, which names the
    rows' ids). True when something changed. Nothing else of the notebook is touched."""
    import json

    from ..claims import GLUE_KEY, Claim, Ledger

    changed = False
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        outputs = cell.get("outputs", [])
        payload = None
        for out in outputs:
            if out.get("metadata", {}).get("scrapbook", {}).get("name") == GLUE_KEY:
                text = out.get("data", {}).get("application/papermill.record/text/plain")
                value = literal_or_text(text) if text is not None else None
                try:
                    payload = json.loads(value) if isinstance(value, str) else None
                except ValueError:
                    payload = None
        if not payload:
            continue
        ledger = Ledger(chapter)
        ledger.claims = [Claim.from_dict(row) for row in payload.get("claims", [])]
        ledger.data = payload.get("data") or None
        fresh = ledger.html()
        for out in outputs:
            data = out.get("data", {})
            if "claims-table" in data.get("text/html", "") and data["text/html"] != fresh:
                data["text/html"] = fresh
                changed = True
    return changed


# --------------------------------------------------------------------------- pages of failed chapters

_GLUE_ROLE = re.compile(r"\{glue(?::[\w-]+)?\}`[^`]*`")
_GLUE_FENCE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{glue(?::[\w-]+)?\}")


def _without_glue(markdown: str) -> str:
    """``markdown`` with glued values replaced by a marker, glued figures by a note (their label
    kept as a target)."""
    out: list[str] = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        m = _GLUE_FENCE.match(lines[i])
        if not m:
            out.append(_GLUE_ROLE.sub("**[not computed]**", lines[i]))
            i += 1
            continue
        fence, name = m.group("fence"), None
        i += 1
        while i < len(lines) and lines[i].strip() != fence:
            opt = re.match(r"^:name:\s*(\S+)", lines[i].strip())
            name = opt.group(1) if opt else name
            i += 1
        i += 1  # the closing fence
        if name:
            out += [f"({name})=", ""]
        out += [":::{note}", "Figure not computed: this chapter failed in this build.", ":::"]
    return "\n".join(out)


def failure_page(nb: Any, chapter: str, where: str, error: str, log: str | None,
                 profile: str) -> Any:
    """The page of a chapter that failed: its title, a box saying where it failed and where the
    traceback is, then its text (statements, explanations) without any computed value, figure or
    code. Marked in the notebook's metadata so the report counts it as failed."""
    import nbformat

    page = nbformat.v4.new_notebook(metadata=dict(nb.metadata))
    box = [":::{admonition} This chapter failed in this build", ":class: error", "",
           f"The run with profile `{profile}` stopped at {where}:",
           "", f"`{error}`", ""]
    if log:
        box += [f"Traceback: `{log}` (in the folder of the build). "]
    box += ["Nothing on this page was computed: the text below is the chapter's, its numbers "
            "and figures are missing, and its claims are not counted in the reproduction report.",
            ":::"]
    cells = [c for c in nb.cells if c.cell_type == "markdown"]
    first = cells[0].source.splitlines() if cells else [f"# {chapter}"]
    title_at = next((i for i, ln in enumerate(first) if ln.startswith("# ")), None)
    if title_at is None:
        head, rest = [f"# {chapter}"], first
    else:
        head, rest = first[: title_at + 1], first[title_at + 1:]
    md = ["\n".join(head + [""] + box + [""] + rest)] + [c.source for c in cells[1:]]
    page.cells = [nbformat.v4.new_markdown_cell(_without_glue(text)) for text in md]
    page.metadata[FAILED_KEY] = {"failed": {"where": where, "error": error, "log": log or "",
                                            "profile": profile}}
    return page


def write_failure_pages(stage: Path, outcomes: Sequence[Any], profile: str, logs: Path) -> list[str]:
    """Replace the staged notebook of every failed chapter by its failure page; the chapters."""
    import nbformat

    failed = []
    for o in outcomes:
        if o.ok:
            continue
        rel = Path(o.chapter).with_suffix(".ipynb")
        staged = stage / rel
        committed = ROOT / rel
        nb = (nbformat.read(committed, as_version=4) if committed.exists()
              else notebook_from_source(ROOT / rel.with_suffix(".py")))
        log = relative(Path(o.log), logs.parent) if o.log else None
        page = failure_page(nb, str(rel.with_suffix("")), o.where(), o.error, log, profile)
        staged.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(page, staged)
        failed.append(str(rel.with_suffix("")))
    return failed


# --------------------------------------------------------------------------- banner, MathJax, device


def announce(stage: Path, text: str) -> None:
    """Put a banner on every page of the staged site (which profile and device built it)."""
    import yaml

    cfg_path = stage / "_config.yml"
    cfg = yaml.safe_load(cfg_path.read_text())
    cfg.setdefault("html", {})["announcement"] = text
    cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False))


def banner_text(profile: str, device: str, when: str, executed: Sequence[str],
                failed: Sequence[str], n_chapters: int) -> str:
    """What the banner says: only what really ran in this build."""
    ran = [c for c in executed if c not in failed]
    def short(names: Sequence[str]) -> str:
        return ", ".join(Path(n).name for n in names)
    text = f"Built {when} on {device}. "
    if len(ran) == n_chapters:
        text += f"All {n_chapters} chapters executed with profile <b>{profile}</b>."
    elif ran:
        text += f"{len(ran)} of {n_chapters} chapters executed with profile <b>{profile}</b>"
        others = n_chapters - len(executed)
        text += (f"; the other {others} show the committed <b>ci</b> outputs." if others else ".")
    else:
        text += f"No chapter executed with profile <b>{profile}</b>."
    if failed:
        text += (f" <b>PARTIAL SITE: {len(failed)} chapter(s) FAILED</b> ({short(failed)}): "
                 "their pages say where.")
    return text


VENDORED_MATHJAX = "_build/vendor/mathjax"
MATHJAX_PATH = "../mathjax/tex-mml-chtml.js"  # relative to _static/


def vendored_mathjax() -> Path | None:
    """The folder of the MathJax ``make vendor-mathjax`` downloaded, or None."""
    src = ROOT / VENDORED_MATHJAX
    return src if (src / "tex-mml-chtml.js").exists() else None


def use_local_mathjax(stage: Path) -> bool:
    """Serve MathJax from the site itself when ``make`` vendored it (the site then shows math
    offline); otherwise the theme's default CDN is used."""
    import yaml

    src = vendored_mathjax()
    if src is None:
        return False
    shutil.copytree(src, stage / "book" / "_extra" / "mathjax", dirs_exist_ok=True)
    cfg_path = stage / "_config.yml"
    cfg = yaml.safe_load(cfg_path.read_text())
    conf = cfg.setdefault("sphinx", {}).setdefault("config", {})
    conf["mathjax_path"] = MATHJAX_PATH
    conf["html_extra_path"] = ["book/_extra"]
    cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return True


def config_with_local_mathjax(source: Path, target: Path) -> Path | None:
    """A copy of ``source``'s ``_config.yml`` at ``target`` that serves the vendored MathJax (for
    builds of a tree that must not be modified, such as the repository itself); None when MathJax
    was not vendored."""
    import yaml

    src = vendored_mathjax()
    if src is None:
        return None
    cfg = yaml.safe_load((source / "_config.yml").read_text())
    conf = cfg.setdefault("sphinx", {}).setdefault("config", {})
    conf["mathjax_path"] = MATHJAX_PATH
    conf["html_extra_path"] = [str(src.parent)]  # holds mathjax/: copied to the site's root
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return target


def device_description() -> str:
    try:
        import torch

        if torch.cuda.is_available():
            return ", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
    except Exception:
        pass
    return "CPU"
