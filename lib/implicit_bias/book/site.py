"""Building the static site: staging the source tree, the banner, offline MathJax and the strict
Jupyter Book build."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from .sources import ROOT


def jupyter_book_build(source: Path, output: Path | None = None, quiet: bool = True,
                       extra: Sequence[str] = ()) -> int:
    """Strict Jupyter Book build (``--all -W -n --keep-going``); returns the exit code."""
    exe = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(exe), "build", str(source), "--all", "-W", "-n", "--keep-going", *extra]
    if output is not None:
        cmd += ["--path-output", str(output)]
    if quiet:
        cmd.append("--quiet")
    return subprocess.run(cmd).returncode


def stage_source(stage: Path) -> None:
    """Copy what the site is built from (config, toc, front matter, chapters) into ``stage``."""
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir(parents=True)
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy2(ROOT / name, stage / name)
    ignore = shutil.ignore_patterns("_build", "__pycache__", ".ipynb_checkpoints", "*.py")
    shutil.copytree(ROOT / "book", stage / "book", ignore=shutil.ignore_patterns("_build", "__pycache__"))
    shutil.copytree(ROOT / "chapters", stage / "chapters", ignore=ignore)
    prepare_notebooks(stage)


NBVAL_MARKER = "# NBVAL_"


def prepare_notebooks(stage: Path) -> None:
    """Make the staged notebooks ready for the site: drop the nbval marker comments
    (``# NBVAL_CHECK_OUTPUT``), which mean something to the test suite, not to a reader."""
    import nbformat

    for path in sorted((stage / "chapters").rglob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        changed = False
        for cell in nb.cells:
            if cell.cell_type == "code" and NBVAL_MARKER in cell.source:
                lines = [ln for ln in cell.source.splitlines() if not ln.strip().startswith(NBVAL_MARKER)]
                cell.source = "\n".join(lines)
                changed = True
        if changed:
            nbformat.write(nb, path)


def announce(stage: Path, text: str) -> None:
    """Put a banner on every page of the staged site (which profile and device built it)."""
    import yaml

    cfg_path = stage / "_config.yml"
    cfg = yaml.safe_load(cfg_path.read_text())
    cfg.setdefault("html", {})["announcement"] = text
    cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False))


VENDORED_MATHJAX = "_build/vendor/mathjax"


def use_local_mathjax(stage: Path) -> bool:
    """Serve MathJax from the site itself when ``make`` vendored it (the site then shows math
    offline); otherwise the theme's default CDN is used."""
    import yaml

    src = ROOT / VENDORED_MATHJAX
    if not (src / "tex-mml-chtml.js").exists():
        return False
    shutil.copytree(src, stage / "book" / "_extra" / "mathjax", dirs_exist_ok=True)
    cfg_path = stage / "_config.yml"
    cfg = yaml.safe_load(cfg_path.read_text())
    conf = cfg.setdefault("sphinx", {}).setdefault("config", {})
    conf["mathjax_path"] = "../mathjax/tex-mml-chtml.js"  # relative to _static/
    conf["html_extra_path"] = ["book/_extra"]
    cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return True


def device_description() -> str:
    try:
        import torch

        if torch.cuda.is_available():
            return ", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
    except Exception:
        pass
    return "CPU"
