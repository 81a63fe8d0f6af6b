"""The command line behind ``make book``, ``make execute``, ``make sync`` and the page checks.

Usage (``python -m implicit_bias.book COMMAND --help`` for the options)::

    sync        [CHAPTER ...]                     regenerate .ipynb inputs from the .py sources
    execute     [CHAPTER ...] [--seed N] [-p K V] execute chapters in place (profile ci), or into --output
    report                                        regenerate book/reproduction.md from the ledgers
    book        [--profile ci|full] [--jobs N]    execute every chapter into _build/<profile>/ and build the site
    build       [--source DIR]                    strict Jupyter Book build of a source tree
    build-page  NOTEBOOK                          strict build of the front matter plus one part

Chapters are the jupytext ``.py`` files under ``chapters/``; the ``.py`` always wins over the
paired ``.ipynb``. ``execute`` in profile ``ci`` writes the committed notebooks; ``book`` never
does: it executes into a staged copy of the book (``_build/<profile>/src``) and builds that, so a
``full`` run on a GPU machine never overwrites the committed ``ci`` outputs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .runtime import QUIET_ENV



def find_root() -> Path:
    """The book's root: the nearest folder above the working directory holding ``_toc.yml``,
    else the checkout this library was installed from."""
    for folder in [Path.cwd(), *Path.cwd().parents]:
        if (folder / "_toc.yml").exists() and (folder / "chapters").is_dir():
            return folder
    return Path(__file__).resolve().parents[2]


ROOT = find_root()
# Cell metadata papermill and nbclient add on every run (timestamps): dropped from committed notebooks.
VOLATILE_CELL_METADATA = ("papermill", "execution")


# ----------------------------------------------------------------------------- chapters


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


# ----------------------------------------------------------------------------- execution


@dataclass
class Outcome:
    """Result of executing one chapter."""

    chapter: str
    output: str
    ok: bool
    seconds: float
    failed_cell: int | None = None
    error: str = ""
    log: str | None = None


def execute_one(py: str, output: str, parameters: dict[str, Any], log_dir: str,
                gpu: str | None = None, strip: bool = False, timeout: int | None = None) -> Outcome:
    """Execute one chapter with papermill into ``output``; never raises (failures are reported)."""
    import nbformat
    import papermill as pm

    os.environ.setdefault(QUIET_ENV, "1")
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    if gpu is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpu
    src = Path(py)
    rel = str(src.relative_to(ROOT)) if src.is_relative_to(ROOT) else str(src)
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        inp = Path(tmp) / src.with_suffix(".ipynb").name
        nbformat.write(notebook_from_source(src), inp)
        tmp_out = Path(tmp) / ("out-" + inp.name)
        try:
            pm.execute_notebook(
                str(inp), str(tmp_out), parameters=parameters or None, cwd=str(src.parent),
                kernel_name="python3", progress_bar=False, log_output=False,
                execution_timeout=timeout,
            )
            ok, cell, err = True, None, ""
        except Exception as exc:  # papermill raises PapermillExecutionError with the cell
            ok = False
            cell = getattr(exc, "exec_count", None)
            err = f"{getattr(exc, 'ename', type(exc).__name__)}: {getattr(exc, 'evalue', exc)}"
            tb = getattr(exc, "traceback", None)
            detail = "\n".join(tb) if tb else traceback.format_exc()
        seconds = time.perf_counter() - start
        log = None
        if tmp_out.exists():
            nb = nbformat.read(tmp_out, as_version=4)
            if strip:
                strip_volatile(nb)
            target = out if ok else Path(log_dir) / out.name
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, target)
            if not ok:
                log = str(target)
        if not ok:
            Path(log_dir).mkdir(parents=True, exist_ok=True)
            log_file = Path(log_dir) / (src.stem + ".traceback.txt")
            log_file.write_text(_strip_ansi(detail))
            log = str(log_file)
    return Outcome(rel, str(out), ok, seconds, cell, err, log)


def _strip_ansi(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def execute_many(jobs: list[tuple[Path, Path]], parameters: dict[str, Any], log_dir: Path,
                 n_jobs: int = 1, strip: bool = False, timeout: int | None = None) -> list[Outcome]:
    """Execute chapters (``(source, output)`` pairs), ``n_jobs`` at a time; with several GPUs,
    each job sees one (round robin over ``CUDA_VISIBLE_DEVICES``)."""
    from tqdm import tqdm

    gpus = _gpu_ids() if n_jobs > 1 else []
    outcomes: list[Outcome] = []
    bar = tqdm(total=len(jobs), desc="chapters", unit="chapter", file=sys.stdout,
               disable=not sys.stdout.isatty())
    if n_jobs <= 1:
        for py, out in jobs:
            bar.set_postfix_str(py.stem)
            outcomes.append(execute_one(str(py), str(out), parameters, str(log_dir), None, strip, timeout))
            _print_outcome(outcomes[-1])
            bar.update()
    else:
        with ProcessPoolExecutor(max_workers=n_jobs) as pool:
            futures = [
                pool.submit(execute_one, str(py), str(out), parameters, str(log_dir),
                            gpus[i % len(gpus)] if gpus else None, strip, timeout)
                for i, (py, out) in enumerate(jobs)
            ]
            for fut in as_completed(futures):
                outcomes.append(fut.result())
                _print_outcome(outcomes[-1])
                bar.update()
    bar.close()
    order = {str(py.relative_to(ROOT)) if py.is_relative_to(ROOT) else str(py): i for i, (py, _) in enumerate(jobs)}
    return sorted(outcomes, key=lambda o: order.get(o.chapter, 0))


def _gpu_ids() -> list[str]:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible:
        return [g for g in visible.split(",") if g]
    try:
        import torch

        return [str(i) for i in range(torch.cuda.device_count())]
    except Exception:
        return []


def _print_outcome(o: Outcome) -> None:
    status = "ok" if o.ok else "FAILED"
    print(f"  {status:6s} {o.chapter}  ({o.seconds:.0f} s)", flush=True)


def print_failures(outcomes: Iterable[Outcome]) -> int:
    """Print the failed chapters with the failing cell and the traceback file; return their count."""
    failed = [o for o in outcomes if not o.ok]
    if failed:
        print(f"\n{len(failed)} chapter(s) failed:")
        for o in failed:
            where = f"cell [{o.failed_cell}]" if o.failed_cell is not None else "before any cell ran"
            print(f"  {o.chapter}: {where}: {o.error}\n    traceback: {o.log}")
    return len(failed)


# ----------------------------------------------------------------------------- ledgers and report


def read_glued(nb_path: Path) -> dict[str, Any]:
    """Values glued with ``myst_nb.glue`` in an executed notebook (``claims`` JSON, ``run_info``)."""
    import nbformat

    nb = nbformat.read(nb_path, as_version=4)
    found: dict[str, Any] = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            if name is None:
                continue
            data = out.get("data", {})
            text = data.get("application/papermill.record/text/plain")
            value = _unrepr(text) if text is not None else None
            if name == "claims" and isinstance(value, str):
                value = json.loads(value)
            found[name] = value
    return found


def _unrepr(text: str) -> Any:
    import ast

    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def chapter_title(nb_path: Path) -> str:
    """The first markdown heading of a notebook."""
    import nbformat

    for cell in nbformat.read(nb_path, as_version=4).cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return nb_path.stem


def render_report(source_root: Path, chapters: Sequence[Path]) -> str:
    """The reproduction report (MyST markdown) gathered from the chapters' ledgers."""
    lines = [
        "# Reproduction report",
        "",
        "Every chapter ends with a ledger of claims: one statement of the page, the value the run",
        "measured, the tolerance fixed before looking at the result, and a verdict. This page",
        "gathers the ledgers of the executed chapters. It is generated by",
        "`python -m implicit_bias.book report` (run by `make execute` and `make book`); do not edit it.",
        "",
    ]
    rows, summary = [], []
    for py in chapters:
        rel = py.relative_to(ROOT).with_suffix("")
        nb = source_root / rel.with_suffix(".ipynb")
        if not nb.exists():
            summary.append((str(rel), "not executed", "", 0, 0))
            continue
        glued = read_glued(nb)
        ledger = glued.get("claims")
        run = glued.get("run_info", "")
        title = chapter_title(nb)
        if not ledger:
            summary.append((str(rel), title, run, 0, 0))
            continue
        claims = ledger["claims"]
        n_pass = sum(c["verdict"] == "PASS" for c in claims)
        summary.append((str(rel), title, run, n_pass, len(claims)))
        rows.append((str(rel), title, claims))
    total = sum(s[4] for s in summary)
    passed = sum(s[3] for s in summary)
    lines += [f"**{passed} of {total} claims hold** across {len(rows)} executed chapters.", ""]
    lines += ["| chapter | run | claims |", "|---|---|---|"]
    for rel, title, run, n_pass, n in summary:
        lines.append(f"| {{doc}}`{title} </{rel}>` | {run or 'not executed'} | {n_pass} / {n} |")
    lines.append("")
    for rel, title, claims in rows:
        lines += [f"## {title}", "", f"Page: {{doc}}`/{rel}`", ""]
        lines += ["| id | source | statement | paper | measured | tolerance | verdict |",
                  "|---|---|---|---|---|---|---|"]
        for c in claims:
            cells = [c["id"], c["source"], c["statement"], c["paper"], c["measured"], c["tolerance"],
                     f"**{c['verdict']}**"]
            lines.append("| " + " | ".join(_md_cell(v) for v in cells) + " |")
        lines.append("")
    return "\n".join(lines)


def _md_cell(value: Any) -> str:
    text = str(value).replace("|", "\\|").replace("\n", " ")
    return f"`{text}`" if any(ch in text for ch in "*_<>") and not text.startswith("**") else text


ERRATA_INTRO = """# Errata found

Places where the runs of this book disagree with a paper (or with a reading guide we used), each
with a link to the evidence. An entry is added only after a chapter's notebook shows it. This page
is assembled from `book/errata/*.md` by `python -m implicit_bias.book report`.
"""


def render_errata(source_root: Path) -> str:
    """The errata page: the intro, then every ``book/errata/*.md`` fragment, included."""
    import yaml

    toc = yaml.safe_load((source_root / "_toc.yml").read_text())
    # part folder -> caption, in the order of the table of contents
    captions: dict[str, str] = {}
    for part in toc.get("parts", []):
        for chapter in part.get("chapters", []):
            bits = chapter["file"].split("/")
            if bits[0] == "chapters":
                captions.setdefault(bits[1], part["caption"])
    folders = list(captions)

    def part_of(frag: Path) -> str | None:
        name = frag.stem.replace("-", "_")
        return next((f for f in folders if name.startswith(f)), None)

    frags = sorted((source_root / "book" / "errata").glob("*.md"),
                   key=lambda f: (folders.index(part_of(f)) if part_of(f) else len(folders), f.name))
    lines = [ERRATA_INTRO]
    if not frags:
        lines.append("No erratum has been found yet.")
    current = None
    for frag in frags:
        part = part_of(frag)
        if part != current:
            lines += [f"## {captions.get(part, 'Other')}", ""]
            current = part
        lines += [f"```{{include}} errata/{frag.name}", ":heading-offset: 1", "```", ""]
    return "\n".join(lines)


def write_report(source_root: Path = ROOT, target: Path | None = None) -> Path:
    """Regenerate the reproduction report and the errata page of the tree ``source_root``."""
    target = target or source_root / "book" / "reproduction.md"
    target.write_text(render_report(source_root, all_chapters()) + "\n")
    (source_root / "book" / "errata.md").write_text(render_errata(source_root) + "\n")
    return target


# ----------------------------------------------------------------------------- building


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


# ----------------------------------------------------------------------------- commands


def cmd_sync(args: argparse.Namespace) -> int:
    for py in resolve_chapters(args.chapters):
        sync(py)
        print(f"synced {py.relative_to(ROOT).with_suffix('.ipynb')}")
    return 0


def _parameters(args: argparse.Namespace) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if args.profile != "ci":
        params["profile"] = args.profile
    if args.seed is not None:
        params["seed"] = args.seed
    for key, value in args.param or []:
        params[key] = _unrepr(value) if value not in ("True", "False") else value == "True"
    return params


def cmd_execute(args: argparse.Namespace) -> int:
    chapters = resolve_chapters(args.chapters)
    params = _parameters(args)
    in_place = args.output is None and args.out_dir is None
    if in_place and params:
        raise SystemExit(
            "execute in place writes the committed notebooks, which hold the outputs of profile "
            "'ci' with the default parameters; pass --output FILE or --out-dir DIR for other "
            f"parameters ({params})"
        )
    if args.output and len(chapters) != 1:
        raise SystemExit("--output takes exactly one chapter; use --out-dir for several")
    jobs = []
    for py in chapters:
        if in_place:
            sync(py)
            out = py.with_suffix(".ipynb")
        elif args.output:
            out = Path(args.output).resolve()
        else:
            out = Path(args.out_dir).resolve() / py.relative_to(ROOT).with_suffix(".ipynb")
        jobs.append((py, out))
    log_dir = ROOT / "_build" / "logs"
    print(f"executing {len(jobs)} chapter(s), parameters {params or 'default (profile ci)'}")
    outcomes = execute_many(jobs, params, log_dir, args.jobs, strip=in_place, timeout=args.timeout)
    if in_place and not args.no_report:
        write_report()
    return 1 if print_failures(outcomes) else 0


def cmd_report(args: argparse.Namespace) -> int:
    path = write_report(Path(args.source).resolve() if args.source else ROOT)
    print(f"wrote {path}")
    return 0


def cmd_book(args: argparse.Namespace) -> int:
    profile = args.profile
    out_root = ROOT / "_build" / profile
    stage = out_root / "src"
    chapters = resolve_chapters(args.chapters)
    print(f"staging the book in {stage.relative_to(ROOT)}")
    stage_source(stage)
    params = _parameters(args)
    jobs = [(py, stage / py.relative_to(ROOT).with_suffix(".ipynb")) for py in chapters]
    print(f"executing {len(jobs)} chapter(s) in profile {profile!r} with {args.jobs} job(s)")
    outcomes = execute_many(jobs, params, out_root / "logs", args.jobs, timeout=args.timeout)
    write_report(stage)
    when = time.strftime("%Y-%m-%d")
    announce(stage, f"Executed with profile <b>{profile}</b> on {device_description()} ({when}).")
    if not use_local_mathjax(stage):
        print("MathJax is loaded from its CDN (run make vendor-mathjax for an offline site)")
    print("building the site (strict)")
    rc = jupyter_book_build(stage, out_root / "site", quiet=not args.verbose)
    index = out_root / "site" / "_build" / "html" / "index.html"
    n_failed = print_failures(outcomes)
    if rc != 0:
        print(f"\nthe site build failed (exit {rc}); re-run with --verbose to see the warnings")
    if index.exists():
        print(f"\nsite: {index}")
    return 1 if (n_failed or rc) else 0


def cmd_build(args: argparse.Namespace) -> int:
    source = Path(args.source).resolve() if args.source else ROOT
    output = Path(args.output).resolve() if args.output else None
    rc = jupyter_book_build(source, output, quiet=not args.verbose)
    index = (output or source) / "_build" / "html" / "index.html"
    if rc == 0:
        print(f"site: {index}")
    return rc


def cmd_build_page(args: argparse.Namespace) -> int:
    """Front matter plus one page and its part's other pages, strict: a quick check while
    writing a chapter."""
    import yaml

    page = Path(args.page).resolve().with_suffix("")
    rel = page.relative_to(ROOT)
    with tempfile.TemporaryDirectory() as tmp:
        stage = Path(tmp) / "src"
        stage_source(stage)
        toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
        front = [c for part in toc["parts"] for c in part["chapters"] if c["file"].startswith("book/")]
        # the page with the other pages of its part, so that references between them resolve
        part = sorted({str(p.relative_to(ROOT).with_suffix("")) for p in page.parent.glob("*.ipynb")} | {str(rel)})
        toc["parts"] = [{"caption": "Front matter", "chapters": front},
                        {"caption": "Part under test", "chapters": [{"file": f} for f in part]}]
        (stage / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
        # the report and errata pages link every chapter: replace them by stubs here
        (stage / "book" / "reproduction.md").write_text("# Reproduction report\n\n(stub)\n")
        (stage / "book" / "errata.md").write_text("# Errata found\n\n(stub)\n")
        rc = jupyter_book_build(stage, Path(tmp) / "out", quiet=False)
    print("page builds strictly" if rc == 0 else f"strict build failed (exit {rc})")
    return rc


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m implicit_bias.book", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("sync", help="regenerate .ipynb inputs from the .py sources")
    p.add_argument("chapters", nargs="*")
    p.set_defaults(func=cmd_sync)

    def exec_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("chapters", nargs="*", help="chapter paths or name fragments (default: all)")
        p.add_argument("--profile", default="ci", help="'ci' (CPU) or 'full' (GPU, the papers' settings)")
        p.add_argument("--seed", type=int, default=None)
        p.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"),
                       help="another chapter parameter (repeatable)")
        p.add_argument("--jobs", type=int, default=1, help="chapters executed in parallel")
        p.add_argument("--timeout", type=int, default=None, help="seconds per cell (default: none)")

    p = sub.add_parser("execute", help="execute chapters (in place: profile ci, default parameters)")
    exec_options(p)
    p.add_argument("--output", help="write the executed notebook here (one chapter)")
    p.add_argument("--out-dir", help="write executed notebooks under this folder")
    p.add_argument("--no-report", action="store_true", help="do not regenerate the report")
    p.set_defaults(func=cmd_execute)

    p = sub.add_parser("report", help="regenerate book/reproduction.md from the ledgers")
    p.add_argument("--source", help="book source tree holding executed notebooks (default: repo)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("book", help="execute all chapters into _build/<profile> and build the site")
    exec_options(p)
    p.add_argument("--verbose", action="store_true")
    p.set_defaults(func=cmd_book)

    p = sub.add_parser("build", help="strict build of the site from a source tree")
    p.add_argument("--source")
    p.add_argument("--output")
    p.add_argument("--verbose", action="store_true")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("build-page", help="strict build of the front matter plus one page")
    p.add_argument("page")
    p.set_defaults(func=cmd_build_page)

    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
