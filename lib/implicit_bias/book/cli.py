"""The command line behind ``make book``, ``make execute``, ``make sync``, ``make lab`` and the page
checks.

Usage (``python -m implicit_bias.book COMMAND --help`` for the options)::

    sync        [CHAPTER ...] [--keep source|notebook]  .ipynb inputs from the .py sources (refuses to
                                                  overwrite edits made in a notebook)
    execute     [CHAPTER ...] [--seed N] [-p K V] execute chapters in place (profile ci), or into --out-dir
    report      [--source DIR]                    regenerate the report, errata and intro summary; on a
                                                  folder of executed notebooks (a seed folder), print its claims
    seeds       [CHAPTER ...] [--seeds 0-4]       seed sweep: execute on seeds 1-4, write book/robustness.md
    budgets     [CHAPTER ...] [--jobs N]          budget sweep: x3 (seeds 0, 1) and x10 (seed 0), resumable,
                                                  into book/data/budget_sweep.json and book/robustness.md
    book        [--profile ci|full] [--jobs N]    execute every chapter into _build/<profile>/ and build the site
    build       [--source DIR] [--output DIR]     the site from the committed notebooks, executing nothing
                                                  (make site); or a strict build of the tree DIR
    refresh-ledgers [CHAPTER ...]                 redraw the ledgers' HTML in executed notebooks (no execution)
    build-page  NOTEBOOK                          strict build of the front matter plus one part
    lab         [--port N] [--no-browser]         JupyterLab in the book's root (the project's kernel, jupytext)
    install-kernel                                register the kernel 'implicit-bias' in this environment

``execute``, ``seeds`` and ``book`` take ``--executor local|slurm``: chapters run here (``--jobs``
at a time) or as SLURM jobs, one per chapter, with the options ``--partition``, ``--time``,
``--gpus``, ``--cpus``, ``--mem``, ``--sbatch``, ``--max-running``, ``--rerun``
(:mod:`implicit_bias.book.executors`).

Chapters are the jupytext ``.py`` files under ``chapters/``; the ``.py`` always wins over the
paired ``.ipynb``. ``execute`` in profile ``ci`` writes the committed notebooks; ``book`` never
does: it executes into a staged copy of the book (``_build/<profile>/src``) and builds that, so a
``full`` run on a GPU machine never overwrites the committed ``ci`` outputs. The profile and every
``-p`` parameter are checked against the chapters' sources before any kernel starts.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import budgets, executors, seeds
from .common import refuse_inherited_budget
from .estimate import no_gpu_warning
from .execute import execute_many, print_failures
from .params import ParameterError, plan
from .report import claims_summary, literal_or_text, write_report
from .site import (announce, banner_text, config_with_local_mathjax, device_description,
                   jupyter_book_build, prepare_notebooks, stage_source, use_local_mathjax,
                   write_failure_pages)
from .sources import (ROOT, NotebookEdited, chapter_spec, edited_notebook_message, notebook_edit_reason,
                      relative, resolve_chapters, sync)


def fail(message: str, code: int = 2) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


def cmd_sync(args: argparse.Namespace) -> int:
    written, refused = 0, []
    chapters = resolve_chapters(args.chapters, args.all_matching)
    for py in chapters:
        try:
            if sync(py, keep=args.keep):
                written += 1
                print(f"synced {relative(py.with_suffix('.ipynb'))}")
        except NotebookEdited as err:
            refused.append(str(err))
    print(f"{written} notebook(s) updated, {len(chapters) - written - len(refused)} already in sync"
          + (f", {len(refused)} refused" if refused else ""))
    for message in refused:
        print(f"\nrefused: {message}", file=sys.stderr)
    return 1 if refused else 0


def _requested(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The profile and the other parameters asked for on the command line (values parsed)."""
    params: dict[str, Any] = {}
    if args.seed is not None:
        params["seed"] = args.seed
    for key, value in args.param or []:
        params[key] = literal_or_text(value)
    profile = params.pop("profile", None)
    if profile is not None and args.profile not in ("ci", profile):
        raise ParameterError(f"--profile {args.profile} and -p profile {profile} disagree")
    return str(profile if profile is not None else args.profile), params


def _checked(args: argparse.Namespace, chapters: Sequence[Path]) -> tuple[str, dict[Path, dict[str, Any]]]:
    """Check the profile and parameters against the chapters; exits with the reasons if they do
    not fit. Returns the profile and each chapter's parameters (the profile included unless ci)."""
    try:
        profile, params = _requested(args)
        specs = [chapter_spec(py) for py in chapters]
        no_cell = [s.name for s in specs if not s.has_parameters_cell]
        if no_cell and (params or profile != "ci"):
            raise ParameterError("these chapters have no cell tagged 'parameters': " + ", ".join(no_cell))
        per_chapter, notes = plan(specs, {"profile": profile, **params})
    except ParameterError as err:
        raise SystemExit(fail(f"{err}\nnothing was executed."))
    for note in notes:
        if not note.startswith("parameter 'profile'"):
            print(note)
    if profile == "ci":
        for p in per_chapter.values():
            p.pop("profile", None)
    return profile, per_chapter


def _warn_without_gpu(profile: str, chapters: Sequence[Path], jobs: int,
                      per_chapter: dict[Path, dict[str, Any]], executor: Any = None,
                      confirmed: bool = False) -> bool:
    """Whether the run may start. A profile other than ``ci`` on a machine without a GPU (and not
    on the CPU by ``-p device cpu``, nor on a cluster) prints what it would cost; it starts only
    when ``confirmed`` (``--yes``, ``make ... CONFIRM=1``), else says how to go ahead."""
    if profile == "ci" or all(p.get("device") == "cpu" for p in per_chapter.values() if p):
        return True
    if executor is not None:  # the chapters run on the cluster's nodes, not here
        return True
    import torch

    if torch.cuda.is_available():
        return True
    print(no_gpu_warning(chapters, profile, jobs), flush=True)
    if confirmed:
        return True
    fail(f"profile {profile!r} without a GPU needs a confirmation: nothing was executed. To run it "
         "on this CPU anyway (the estimate above), add CONFIRM=1 to the make command (on the "
         "command line: --yes)")
    return False


def _unwritable(folder: Path) -> str | None:
    """Why ``folder`` cannot be created and written to, or None if it can; the check leaves
    nothing behind (a folder made and removed in its nearest existing parent)."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is a file, not a folder"
    try:
        tempfile.TemporaryDirectory(dir=existing).cleanup()
    except OSError as err:
        return f"nothing can be created in {existing} ({err.strerror or err})"
    return None


def cmd_execute(args: argparse.Namespace) -> int:
    if args.output and args.out_dir:
        return fail("--output FILE and --out-dir DIR both given: --output writes one chapter's notebook "
                    "to FILE, --out-dir writes every chapter's under DIR; pass one of them. "
                    "nothing was executed.")
    chapters = resolve_chapters(args.chapters, args.all_matching)
    profile, per_chapter = _checked(args, chapters)
    in_place = args.output is None and args.out_dir is None
    if in_place and args.budget not in (None, 1):
        return fail("execute in place writes the committed notebooks, which hold the runs at budget x1; "
                    "pass --out-dir DIR to run with --budget (make execute ... BUDGET=k does this: into "
                    "_build/runs/)")
    refused = in_place and refuse_inherited_budget(
        "execute in place writes the committed notebooks, which hold the runs at budget x1 (pass "
        "--out-dir DIR to run at a budget)")
    if refused:
        return fail(refused)
    if in_place and any(per_chapter.values()):
        wanted = sorted({k for p in per_chapter.values() for k in p})
        return fail(
            "execute in place writes the committed notebooks, which hold the outputs of profile "
            f"'ci' with the default parameters; pass --out-dir DIR (or --output FILE) to run with "
            f"{', '.join(wanted)} (make execute does this: SEED=n into _build/seed<n>/, PROFILE=... or "
            f"PARAMS=\"-p NAME VALUE\" into _build/runs/)")
    if args.output and len(chapters) != 1:
        return fail("--output takes exactly one chapter; use --out-dir for several")
    if not in_place:
        target = Path(args.output).resolve().parent if args.output else Path(args.out_dir).resolve()
        why = _unwritable(target)
        if why is not None:
            return fail(f"{'--output' if args.output else '--out-dir'} {args.output or args.out_dir}: "
                        f"{why}; choose a folder that can be written (make: OUT=dir). nothing was executed.")
    executor = executors.from_args(args, profile)
    _use_budget(args)
    if in_place:  # the notebooks are written: never over edits made in them (checked for all first)
        refused = [edited_notebook_message(py, reason) for py in chapters
                   for reason in [notebook_edit_reason(py)] if reason]
        if refused:
            return fail("\n".join(refused) + "\nnothing was executed.", 1)
        for py in chapters:
            sync(py, keep="source")
    jobs = []
    for py in chapters:
        if in_place:
            out = py.with_suffix(".ipynb")
        elif args.output:
            out = Path(args.output).resolve()
        else:
            out = Path(args.out_dir).resolve() / py.relative_to(ROOT).with_suffix(".ipynb")
        jobs.append((py, out))
    if not _warn_without_gpu(profile, chapters, args.jobs, per_chapter, executor, args.yes):
        return 2
    log_dir = ROOT / "_build" / "logs"
    distinct = {repr(p) for p in per_chapter.values()}
    shown = next(iter(distinct)) if len(distinct) == 1 else "per chapter (see above)"
    print(f"executing {len(jobs)} chapter(s), parameters {shown if shown != '{}' else 'default (profile ci)'}")
    outcomes = execute_many(jobs, {}, log_dir, args.jobs, strip=in_place, timeout=args.timeout,
                            per_chapter=per_chapter, executor=executor)
    if in_place and not args.no_report:
        write_report()
    n_failed = print_failures(outcomes)
    if not args.output:
        where = ROOT if in_place else Path(args.out_dir).resolve()
        print(f"\nclaims ({relative(where) if where != ROOT else 'committed notebooks'}):")
        print("\n".join(claims_summary(where, [py for py, _ in jobs])))
    return 1 if n_failed else 0


def cmd_report(args: argparse.Namespace) -> int:
    source = Path(args.source).resolve() if args.source else ROOT
    if not source.is_dir():
        return fail(f"--source {args.source}: no such folder")
    if not (source / "_toc.yml").exists():
        # a folder of executed notebooks (a seed folder, an --out-dir): its claims, printed
        lines = claims_summary(source)
        if lines[0].startswith("no executed chapter"):
            return fail(f"{lines[0]} (expected chapters/<part>/<name>.ipynb there)", 1)
        print("\n".join(lines))
        return 0
    path = write_report(source)
    print(f"wrote {relative(path)}")
    return 0


def cmd_book(args: argparse.Namespace) -> int:
    chapters = resolve_chapters(args.chapters, args.all_matching)
    profile, per_chapter = _checked(args, chapters)
    out_root = ROOT / "_build" / (profile + (f"-x{args.budget:g}" if args.budget not in (None, 1) else ""))
    stage = out_root / "src"
    executor = executors.from_args(args, profile)
    _use_budget(args)
    if not _warn_without_gpu(profile, chapters, args.jobs, per_chapter, executor, args.yes):
        return 2
    print(f"staging the book in {relative(stage)}")
    # the site and the logs of an earlier build must not linger (a stale site looks like a result,
    # a stale traceback like a failure)
    shutil.rmtree(out_root / "site", ignore_errors=True)
    shutil.rmtree(out_root / "logs", ignore_errors=True)
    jobs = [(py, stage / py.relative_to(ROOT).with_suffix(".ipynb")) for py in chapters]
    logs = out_root / "logs"
    with executors.keeping_current(executor, jobs, per_chapter, logs, out_root / "kept"):
        stage_source(stage)
    print(f"executing {len(jobs)} chapter(s) in profile {profile!r} "
          + (f"with {args.jobs} job(s)" if executor is None else "as SLURM jobs"))
    outcomes = execute_many(jobs, {}, logs, args.jobs, timeout=args.timeout, per_chapter=per_chapter,
                            executor=executor)
    failed = write_failure_pages(stage, outcomes, profile, logs)
    prepare_notebooks(stage)
    write_report(stage)
    executed = [str(Path(o.chapter).with_suffix("")) for o in outcomes]
    n_all = len(resolve_chapters([]))
    if len(failed) == len(outcomes):
        print_failures(outcomes)
        return fail(f"every chapter failed: no site was built (logs in {relative(logs)})", 1)
    announce(stage, banner_text(profile, device_description(), time.strftime("%Y-%m-%d"),
                                executed, failed, n_all))
    if not use_local_mathjax(stage):
        print("MathJax is loaded from its CDN (run make vendor-mathjax for an offline site)")
    print("building the site (strict)")
    rc = jupyter_book_build(stage, out_root / "site", quiet=not args.verbose)
    index = out_root / "site" / "_build" / "html" / "index.html"
    n_failed = print_failures(outcomes)
    if rc != 0:
        why = (" (references into the failed chapters' pages cannot resolve)" if failed else "")
        print(f"\nthe strict site build reported problems (exit {rc}){why}; "
              "re-run with --verbose to see them")
    if index.exists():
        if n_failed:
            print(f"\nPARTIAL site ({n_failed} of {len(outcomes)} chapters failed; their pages and the "
                  f"banner say so): {index}")
        elif rc:
            print(f"\nsite, built with warnings: {index}")
        else:
            print(f"\nsite: {index}")
    return 1 if (n_failed or rc) else 0


SITE_DIR = Path("_build") / "site"
BUILD_HELP = """\
The site from the committed notebooks, executing nothing (make site): the way to read the book.
The committed notebooks hold the outputs of profile ci. The book is staged into _build/site/src as
make book stages it (the nbval markers dropped, each ledger drawn by the current library, the
chapters' .py offered for download), then built strictly (warnings are errors) into _build/site;
the site is _build/site/_build/html/index.html. MathJax is served by the site itself when
make vendor-mathjax fetched it (make site does), else loaded from its CDN.

With --source DIR, the tree DIR is built as it is (one staged by make book or by CI)."""


def cmd_build(args: argparse.Namespace) -> int:
    """The site without executing anything: by default the repository's book as committed (its
    notebooks hold the outputs of profile ci), staged into ``_build/site/src`` as ``make book``
    stages it (nbval markers dropped, ledgers drawn by the current library, the chapters' ``.py``
    offered for download) and built strictly into ``_build/site``. With ``--source``, the tree
    given is built as it is (one staged by ``make book`` or by CI)."""
    started = time.monotonic()
    if args.source is None:
        out = Path(args.output).resolve() if args.output else ROOT / SITE_DIR
        source = ROOT / SITE_DIR / "src" if not args.output else out / "src"
        print(f"staging the committed book in {relative(source)} (nothing is executed)")
        stage_source(source)
        if use_local_mathjax(source):
            print("MathJax served by the site itself (from _build/vendor/mathjax)")
        else:
            print("MathJax is loaded from its CDN: math needs a network to show "
                  "(run make vendor-mathjax for an offline site)")
        print("building the site (strict)")
        rc = jupyter_book_build(source, out, quiet=not args.verbose)
        index = out / "_build" / "html" / "index.html"
    else:
        source = Path(args.source).resolve()
        if not (source / "_config.yml").exists():
            return fail(f"{source} holds no _config.yml: --source must be the root of a book")
        output = Path(args.output).resolve() if args.output else None
        config = config_with_local_mathjax(source, ROOT / "_build" / "config" / "_config.yml")
        if config is None:
            print("MathJax is loaded from its CDN: math needs a network to show "
                  "(run make vendor-mathjax for an offline site)")
        else:
            print(f"MathJax served by the site itself (from {relative(config.parent.parent / 'vendor' / 'mathjax')})")
        rc = jupyter_book_build(source, output, quiet=not args.verbose, config=config)
        index = (output or source) / "_build" / "html" / "index.html"
    if rc == 0:
        print(f"site ({time.monotonic() - started:.0f} s): {index}")
    else:
        print(f"the strict build failed (exit {rc}); re-run with --verbose to see the warnings")
    return rc


def cmd_refresh_ledgers(args: argparse.Namespace) -> int:
    """Redraw the HTML of the ledgers in executed notebooks from their glued claims."""
    import nbformat

    from .site import refresh_ledger_html

    chapters = resolve_chapters(args.chapters, args.all_matching)
    written = 0
    for py in chapters:
        path = py.with_suffix(".ipynb")
        if not path.exists():
            continue
        nb = nbformat.read(path, as_version=4)
        if refresh_ledger_html(nb, str(py.relative_to(ROOT / "chapters").with_suffix(""))):
            nbformat.write(nb, path)
            written += 1
            print(f"redrew the ledger of {relative(path)}")
    print(f"{written} notebook(s) changed, {len(chapters) - written} already current")
    return 0


def cmd_build_page(args: argparse.Namespace) -> int:
    """Front matter plus one page and its part's other pages, strict: a quick check while
    writing a chapter."""
    import yaml

    page = Path(args.page).resolve().with_suffix("")
    if not page.with_suffix(".ipynb").exists():
        return fail(f"{args.page}: no such notebook (run make execute CHAPTER=... first)")
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
        # the report, errata and map pages link every chapter: replace them by stubs here
        anchors = "".join(f"(scorecard-{part.replace('_', '-')})=\n## {part}\n\n"  # the intro links them
                          for part in sorted(p.stem for p in (ROOT / "book" / "items").glob("*.yml")))
        (stage / "book" / "reproduction.md").write_text("# Reproduction report\n\n(stub)\n\n" + anchors)
        (stage / "book" / "errata.md").write_text("# Errata found\n\n(stub)\n")
        (stage / "book" / "robustness.md").write_text("# Robustness across seeds\n\n(stub)\n")
        (stage / "book" / "map.md").write_text("# A map of the five papers\n\n(stub)\n")  # links every part
        rc = jupyter_book_build(stage, Path(tmp) / "out", quiet=False)
    print("page builds strictly" if rc == 0 else f"strict build failed (exit {rc})")
    return rc


def cmd_lab(args: argparse.Namespace) -> int:
    from . import jupyter

    root = Path(args.root).resolve() if args.root else ROOT
    if not root.is_dir():
        return fail(f"--root {args.root}: no such folder")
    extra = [a for a in args.extra if a != "--"]
    return jupyter.lab(root, port=args.port, token=args.token, open_browser=not args.no_browser,
                       extra=extra)


def cmd_install_kernel(args: argparse.Namespace) -> int:
    from . import jupyter

    for path in jupyter.install_kernel():
        print(f"wrote {path}")
    print(f"kernel {jupyter.KERNEL_NAME!r} ({jupyter.KERNEL_DISPLAY_NAME}) registered in {sys.prefix}")
    return 0


def _budget(text: str) -> float:
    """``--budget K``: the check of :func:`implicit_bias.runtime.parse_budget`, for argparse."""
    from ..runtime import parse_budget

    try:
        return parse_budget(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _use_budget(args: argparse.Namespace) -> None:
    """Hand ``--budget K`` to the kernels (they inherit the environment; so do SLURM jobs)."""
    from ..runtime import BUDGET_ENV

    if getattr(args, "budget", None) not in (None, 1):
        os.environ[BUDGET_ENV] = f"{args.budget:g}"
        print(f"budget x{args.budget:g}: every step, epoch and warm-up count of the profile times "
              f"{args.budget:g} ({BUDGET_ENV})")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number (1-65535), got {text!r}")
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number (1-65535), got {value}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m implicit_bias.book", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    all_matching = dict(action="store_true", help="a name that matches several chapters selects all "
                        "of them (make: ALL=1); without it, such a name stops with their list")

    p = sub.add_parser("sync", help="regenerate .ipynb inputs from the .py sources")
    p.add_argument("chapters", nargs="*", help="chapter paths or name fragments (default: all)")
    p.add_argument("--all-matching", **all_matching)
    p.add_argument("--keep", choices=("source", "notebook"), default=None,
                   help="when a notebook holds edits of its own: 'notebook' carries them into the "
                        ".py, 'source' discards them (default: refuse, naming the file)")
    p.set_defaults(func=cmd_sync)

    def exec_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("chapters", nargs="*", help="chapter paths or name fragments (default: all)")
        p.add_argument("--all-matching", **all_matching)
        p.add_argument("--profile", default="ci", help="'ci' (CPU) or 'full' (GPU, the papers' settings)")
        p.add_argument("--seed", type=int, default=None)
        p.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"),
                       help="another chapter parameter, declared in its 'parameters' cell (repeatable)")
        p.add_argument("--jobs", type=_positive, default=1, help="chapters executed in parallel")
        p.add_argument("--timeout", type=_positive, default=None, help="seconds per cell (default: none)")
        p.add_argument("--budget", type=_budget, default=None, metavar="K",
                       help="multiply every step, epoch and warm-up count of the profile by K >= 1 "
                            "(IMPLICIT_BIAS_BUDGET; make: BUDGET=K)")
        p.add_argument("--yes", action="store_true",
                       help="run a profile other than ci on a machine without a GPU (make: CONFIRM=1); "
                            "without it such a run stops after printing its estimated cost")
        executors.add_options(p)

    p = sub.add_parser("execute", help="execute chapters (in place: profile ci, default parameters)")
    exec_options(p)
    p.add_argument("--output", help="write the executed notebook here (one chapter)")
    p.add_argument("--out-dir", help="write executed notebooks under this folder")
    p.add_argument("--no-report", action="store_true", help="do not regenerate the report")
    p.set_defaults(func=cmd_execute)

    p = sub.add_parser("seeds", help="execute chapters on several seeds and write the robustness page")
    p.add_argument("chapters", nargs="*", help="chapter paths or name fragments (default: all)")
    p.add_argument("--all-matching", **all_matching)
    p.add_argument("--seeds", default="0-4", help="seeds, e.g. 0-4 or 0,3,7 (seed 0 is the committed run)")
    p.add_argument("--jobs", type=_positive, default=1, help="chapters executed in parallel")
    p.add_argument("--timeout", type=_positive, default=None, help="seconds per cell (default: none)")
    p.add_argument("--collect-only", action="store_true",
                   help="do not execute: gather the notebooks already under _build/seeds/")
    executors.add_options(p)
    p.set_defaults(func=seeds.cmd_seeds)

    p = sub.add_parser("budgets", help="budget sweep: execute chapters at x3 and x10 their step counts "
                                       "and show the verdicts that change on the robustness page")
    p.add_argument("chapters", nargs="*", help="chapter paths or name fragments (default: all)")
    p.add_argument("--all-matching", **all_matching)
    p.add_argument("--jobs", type=_positive, default=1, help="runs executed in parallel")
    p.add_argument("--timeout", type=_positive, default=None, help="seconds per cell (default: none)")
    p.add_argument("--force", action="store_true",
                   help="run the chapters again even where their source did not change (e.g. after a "
                        "change in the library they use)")
    p.add_argument("--collect-only", action="store_true",
                   help="do not execute: regenerate the robustness page and list what is missing")
    p.set_defaults(func=budgets.cmd_budgets)

    p = sub.add_parser("report", help="regenerate book/reproduction.md from the ledgers, or print "
                                      "the claims of a folder of executed notebooks")
    p.add_argument("--source", help="book source tree (default: the repository), or a folder of "
                                    "executed notebooks such as _build/seed3 (then its claims are printed)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("book", help="execute all chapters into _build/<profile> and build the site")
    exec_options(p)
    p.add_argument("--verbose", action="store_true")
    p.set_defaults(func=cmd_book)

    p = sub.add_parser(
        "build", help="the site from the committed notebooks, executing nothing (make site, ~30 s)",
        description=BUILD_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--source", metavar="DIR",
                   help="build this book tree as it is (one staged by make book or by CI) instead of "
                        "staging the repository's book")
    p.add_argument("--output", metavar="DIR",
                   help="where to build (the site is DIR/_build/html); default _build/site, or the "
                        "source tree itself with --source")
    p.add_argument("--verbose", action="store_true", help="show Jupyter Book's output and every warning")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("refresh-ledgers", help="redraw the HTML of the ledgers in the executed "
                                               "notebooks from their glued claims (no execution)")
    p.add_argument("chapters", nargs="*", help="chapter paths or name fragments (default: all)")
    p.add_argument("--all-matching", **all_matching)
    p.set_defaults(func=cmd_refresh_ledgers)

    p = sub.add_parser("build-page", help="strict build of the front matter plus one page")
    p.add_argument("page")
    p.set_defaults(func=cmd_build_page)

    p = sub.add_parser("lab", help="JupyterLab in the book's root, with the project's kernel")
    p.add_argument("--port", type=_port, default=None,
                   help="port to listen on (make lab PORT=N; default: 8888, or the next free one)")
    p.add_argument("--token", default=None, help="access token (default: JupyterLab makes one)")
    p.add_argument("--no-browser", action="store_true",
                   help="do not open a browser; open the URL JupyterLab prints (make lab BROWSER=no)")
    p.add_argument("--root", help="folder JupyterLab serves (default: the book's root)")
    p.add_argument("extra", nargs=argparse.REMAINDER,
                   help="after --: more JupyterLab options, e.g. -- --ServerApp.ip=0.0.0.0")
    p.set_defaults(func=cmd_lab)

    p = sub.add_parser("install-kernel", help="register the kernel 'implicit-bias' in this environment")
    p.set_defaults(func=cmd_install_kernel)

    args = parser.parse_args(argv)
    return args.func(args)
