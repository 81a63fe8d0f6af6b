"""The command line behind ``make book``, ``make execute``, ``make sync`` and the page checks.

Usage (``python -m implicit_bias.book COMMAND --help`` for the options)::

    sync        [CHAPTER ...]                     regenerate .ipynb inputs from the .py sources
    execute     [CHAPTER ...] [--seed N] [-p K V] execute chapters in place (profile ci), or into --output
    report                                        regenerate the report, errata and intro summary from the ledgers
    seeds       [CHAPTER ...] [--seeds 0-4]       seed sweep: execute on seeds 1-4, write book/robustness.md
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
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import seeds
from .execute import execute_many, print_failures
from .report import literal_or_text, write_report
from .site import (announce, device_description, jupyter_book_build, prepare_notebooks,
                   stage_source, use_local_mathjax)
from .sources import ROOT, resolve_chapters, sync


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
        params[key] = literal_or_text(value) if value not in ("True", "False") else value == "True"
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
    prepare_notebooks(stage)
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
        (stage / "book" / "robustness.md").write_text("# Robustness across seeds\n\n(stub)\n")
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

    p = sub.add_parser("seeds", help="execute chapters on several seeds and write the robustness page")
    p.add_argument("chapters", nargs="*", help="chapter paths or name fragments (default: all)")
    p.add_argument("--seeds", default="0-4", help="seeds, e.g. 0-4 or 0,3,7 (seed 0 is the committed run)")
    p.add_argument("--jobs", type=int, default=1, help="chapters executed in parallel")
    p.add_argument("--timeout", type=int, default=None, help="seconds per cell (default: none)")
    p.add_argument("--collect-only", action="store_true",
                   help="do not execute: gather the notebooks already under _build/seeds/")
    p.set_defaults(func=seeds.cmd_seeds)

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
