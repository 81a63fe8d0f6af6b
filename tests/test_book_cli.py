"""The book's command line on a small book of its own (two chapters: one runs, one fails), run as a
user runs it (``python -m implicit_bias.book ...`` in the book's root): bad parameters are refused
before any kernel starts, a build where a chapter fails announces a partial site whose pages say so,
a seed folder prints its claims, and a ``full`` run without a GPU stops at its estimate unless
confirmed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from implicit_bias import book

HEADER = """\
# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---
"""

OK_CHAPTER = HEADER + textwrap.dedent('''
    # %% [markdown]
    # # A chapter that runs
    #
    # Twice the steps is {glue:text}`demo-twice`. The definition of the other chapter:
    # {prf:ref}`demo-broken-def`; the lemma below: {prf:ref}`demo-lemma`.
    #
    # :::{prf:lemma} A lemma (Lemma 7 of {cite:t}`demo2020`)
    # :label: demo-lemma
    # :nonumber:
    # A statement.
    # :::

    # %% tags=["parameters"]
    profile = "ci"
    seed = 0
    device = "auto"
    steps_scale = 1

    # %%
    PROFILES = {"ci": dict(steps=10, width=4), "full": dict(steps=1000, width=8)}

    # %%
    from myst_nb import glue
    from implicit_bias.chapter import start_chapter
    from implicit_bias.claims import Ledger

    P, dev = start_chapter(PROFILES, profile=profile, seed=seed, device=device)
    ledger = Ledger("demo/01_ok")
    twice = 2 * P["steps"] * steps_scale
    glue("demo-twice", twice, display=False)
    ledger.close("twice", "Lemma 7", "twice the steps", "2 steps", measured=twice,
                 target=2 * P["steps"] * steps_scale, items="lemma7", bearing="supports")

    # %% tags=["nbval-check-output"]
    ledger.report()
''')

BROKEN_CHAPTER = HEADER + textwrap.dedent('''
    # %% [markdown]
    # # A chapter that fails
    #
    # :::{prf:definition} Broken thing (Sec. 2 of {cite:t}`demo2020`)
    # :label: demo-broken-def
    # :nonumber:
    # A definition.
    # :::
    #
    # The value is {glue:text}`demo-broken`.

    # %% tags=["parameters"]
    profile = "ci"
    seed = 0
    device = "auto"

    # %%
    PROFILES = {"ci": {}, "full": {}}

    # %%
    x = 1

    # %%
    raise RuntimeError("deliberately broken for the test")
''')

TOC = """\
format: jb-book
root: book/intro
parts:
  - caption: Demo part
    chapters:
      - file: chapters/demo/01_ok
      - file: chapters/demo/02_broken
  - caption: Reproduction
    chapters:
      - file: book/reproduction
      - file: book/errata
"""

BIB = """\
@article{demo2020,
  title = {A Demo},
  author = {Doe, Jane and Roe, Richard},
  journal = {Demo Journal},
  year = {2020}
}
"""


@pytest.fixture(scope="module")
def demo_book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A book of two chapters with the repository's configuration."""
    root = tmp_path_factory.mktemp("demo_book")
    (root / "chapters" / "demo").mkdir(parents=True)
    (root / "chapters" / "demo" / "01_ok.py").write_text(OK_CHAPTER)
    (root / "chapters" / "demo" / "02_broken.py").write_text(BROKEN_CHAPTER)
    shutil.copy(book.ROOT / "_config.yml", root / "_config.yml")
    (root / "_toc.yml").write_text(TOC)
    (root / "book" / "_static").mkdir(parents=True)
    shutil.copy(book.ROOT / "book" / "_static" / "book.css", root / "book" / "_static" / "book.css")
    (root / "book" / "intro.md").write_text("# Demo book\n\nCites {cite:t}`demo2020`.\n\n"
                                            "```{bibliography}\n```\n")
    (root / "book" / "references.bib").write_text(BIB)
    for name in ("reproduction", "errata"):
        (root / "book" / f"{name}.md").write_text(f"# {name}\n")
    return root


def run_cli(root: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run([sys.executable, "-m", "implicit_bias.book", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=timeout)


BAD_INPUTS = [
    (["book", "--profile", "nope"], "unknown profile 'nope': the valid profiles are 'ci', 'full'"),
    (["execute", "01_ok", "-p", "stepz", "3", "--out-dir", "out"],
     "unknown parameter 'stepz': chapters/demo/01_ok declares profile, seed, device, steps_scale"),
    (["execute", "-p", "sed", "3", "--out-dir", "out"], "unknown parameter 'sed' (did you mean 'seed'?)"),
    (["execute", "01_ok", "-p", "seed", "abc", "--out-dir", "out"],
     "parameter seed='abc': chapters/demo/01_ok expects an integer (its default is 0)"),
    (["execute", "01_ok", "--seed", "-2", "--out-dir", "out"], "seed must be a non-negative integer, got -2"),
    (["book", "-p", "steps_scale", "two"], "parameter steps_scale='two': chapters/demo/01_ok expects an integer"),
    (["execute", "01_ok", "--seed", "1"], "pass --out-dir DIR"),
    (["execute", "01_ok", "-p", "device", "tpu", "--out-dir", "out"], "device 'tpu' is not a device torch knows"),
    (["execute", "01_ok", "--output", "a.ipynb", "--out-dir", "X"],
     "--output FILE and --out-dir DIR both given"),
    (["execute", "01_ok", "--out-dir", "/proc/nope"], "--out-dir /proc/nope: nothing can be created in /proc"),
    (["execute", "01_ok", "--out-dir", "_config.yml/runs"], "_config.yml is a file, not a folder"),
    (["execute", "01_ok", "--output", "/proc/nope/a.ipynb"], "--output /proc/nope/a.ipynb: nothing can be created in /proc"),
    (["execute", "01_ok", "--budget", "3"], "pass --out-dir DIR to run with --budget"),  # never in place
    (["execute", "01_ok", "--budget", "0.5", "--out-dir", "out"],
     "argument --budget: expected a number >= 1 (e.g. 3 or 10: every step count of the profile times it), "
     "got '0.5'"),
    (["book", "--budget", "inf"], "argument --budget: expected a number >= 1"),
    (["lab", "--port", "99999"], "argument --port: expected a port number (1-65535), got 99999"),
    (["lab", "--port", "0"], "argument --port: expected a port number (1-65535), got 0"),
] + ([] if torch.cuda.is_available() else [
    (["execute", "01_ok", "-p", "device", "cuda", "--out-dir", "out"], "torch sees no CUDA GPU"),
    # a profile other than ci without a GPU stops after its estimate, saying how to go ahead
    (["execute", "01_ok", "--profile", "full", "--out-dir", "out"], "add CONFIRM=1 to the make command (on the "
                                                                     "command line: --yes)"),
    (["book", "--profile", "full"], "profile 'full' without a GPU needs a confirmation: nothing was executed"),
])


def test_bad_parameters_are_refused_before_any_kernel_starts(demo_book: Path, run_cli_many):
    before = sorted(demo_book.rglob("*"))
    for (args, message), result in zip(BAD_INPUTS, run_cli_many([a for a, _ in BAD_INPUTS], demo_book)):
        assert result["rc"] == 2, (args, result)
        assert message in result["err"], (args, result)
        assert "executing" not in result["out"] and "staging" not in result["out"], (args, result)
    assert not (demo_book / "_build" / "nope").exists() and not (demo_book / "_build" / "full").exists()
    for written in ("out", "X", "a.ipynb"):
        assert not (demo_book / written).exists(), written
    assert not Path("/proc/nope").exists()
    assert sorted(demo_book.rglob("*")) == before  # nothing was written anywhere in the book


def test_a_budget_inherited_from_the_shell_never_reaches_the_committed_runs(demo_book: Path, run_cli_many):
    """``IMPLICIT_BIAS_BUDGET`` exported in the shell would multiply the steps of every kernel: an
    in-place execute (the committed notebooks) and the seed sweep (runs recorded at x1) refuse to
    start under it, saying what to do; a value that is not a number is refused too."""
    before = sorted(demo_book.rglob("*"))
    argv = [["execute", "01_ok"], ["seeds", "01_ok", "--seeds", "0-1"]]
    for value, message in (("3", "IMPLICIT_BIAS_BUDGET=3 is set in this shell"),
                           ("abc", "expected a number >= 1")):
        results = run_cli_many(argv, demo_book, env={**os.environ, "IMPLICIT_BIAS_BUDGET": value})
        for args, result in zip(argv, results):
            assert result["rc"] == 2 and message in result["err"], (value, args, result)
            assert "nothing was executed" in result["err"], (value, args, result)
    assert sorted(demo_book.rglob("*")) == before


def test_parameter_only_some_chapters_declare_goes_to_those(demo_book: Path):
    done = run_cli(demo_book, "execute", "-p", "steps_scale", "3", "--out-dir", "_build/scaled")
    assert "parameter 'steps_scale' goes to the 1 chapter(s) that declare it: chapters/demo/01_ok" in done.stdout
    glued = book.read_glued(demo_book / "_build" / "scaled" / "chapters" / "demo" / "01_ok.ipynb")
    assert glued["claims"]["claims"][0]["measured"] == "60"


def test_failed_chapters_make_a_visibly_partial_site(demo_book: Path):
    done = run_cli(demo_book, "book")
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "ok     chapters/demo/01_ok.py" in out and "FAILED chapters/demo/02_broken.py" in out
    assert "chapters/demo/02_broken.py: code cell 4 of 4 ([4] starts 'raise RuntimeError" in out
    assert "RuntimeError: deliberately broken for the test" in out
    assert "PARTIAL site (1 of 2 chapters failed" in out
    html = demo_book / "_build" / "ci" / "site" / "_build" / "html"
    failed_page = (html / "chapters" / "demo" / "02_broken.html").read_text()
    assert "This chapter failed in this build" in failed_page
    assert "deliberately broken for the test" in failed_page
    assert "02_broken.traceback.txt" in failed_page
    assert "demo-broken" not in failed_page.split("This chapter failed")[1].split("</main>")[0] or \
        "[not computed]" in failed_page
    report = (html / "book" / "reproduction.html").read_text()
    assert "1 of 2 chapters failed" in report and "FAILED" in report
    assert "1 of 1 claims hold" in report
    ok_page = (html / "chapters" / "demo" / "01_ok.html").read_text()
    assert "PARTIAL SITE: 1 chapter(s) FAILED" in ok_page  # the banner, on every page
    assert "1 of 2 chapters executed with profile" in ok_page
    # references into the failed page still resolve, and name the boxes (no bare "Definition ")
    assert "Definition (Broken thing)" in ok_page and "Lemma 7" in ok_page


def test_every_chapter_failing_builds_no_site(demo_book: Path):
    done = run_cli(demo_book, "book", "02_broken")
    assert done.returncode == 1
    assert "every chapter failed: no site was built" in done.stderr
    assert "site:" not in done.stdout
    # and the site of the earlier (partial) build is gone: nothing is left that looks like a result
    assert not (demo_book / "_build" / "ci" / "site").exists()


def test_seed_folder_prints_its_claims(demo_book: Path):
    done = run_cli(demo_book, "execute", "01_ok", "--seed", "3", "--out-dir", "_build/seed3")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 of 1 claims hold in 1 chapter(s) (profile ci, seed 3)" in done.stdout
    again = run_cli(demo_book, "report", "--source", "_build/seed3", timeout=120)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[0] == "1 of 1 claims hold in 1 chapter(s) (profile ci, seed 3)"
    assert "ok     chapters/demo/01_ok: 1 of 1 claims hold" in again.stdout
    (demo_book / "_build" / "empty").mkdir(exist_ok=True)
    empty = run_cli(demo_book, "report", "--source", "_build/empty", timeout=120)
    assert empty.returncode == 1 and "no executed chapter under" in empty.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="the warning is for machines without a GPU")
def test_full_profile_without_gpu_warns_with_an_estimate_first(demo_book: Path):
    """Confirmed (--yes; make: CONFIRM=1), the run starts after its estimate; without the
    confirmation it stops there (BAD_INPUTS)."""
    done = run_cli(demo_book, "execute", "01_ok", "--profile", "full", "--out-dir", "_build/full1", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    warning = done.stdout.index("WARNING: no GPU here")
    assert warning < done.stdout.index("executing 1 chapter(s)")
    # 75 CPU-s (the ci budget: no measured time here) x 100 (steps 10 -> 1000)
    assert "Estimate, a lower bound: at least 2.1 h of CPU time for 1 chapter(s)" in done.stdout
    assert "x100 (steps)" in done.stdout


# ----------------------------------------------------------------------------- units


def spec(name: str, profiles=("ci", "full"), **parameters) -> book.sources.ChapterSpec:
    return book.sources.ChapterSpec(Path(book.ROOT / "chapters" / "p" / f"{name}.py"),
                                    {"profile": "ci", "seed": 0, "device": "auto", **parameters},
                                    profiles, True)


def test_plan_gives_each_chapter_what_it_declares():
    from implicit_bias.book.params import plan

    a, b = spec("a", data_root=None), spec("b", widths=(4, 8))
    per, notes = plan([a, b], {"profile": "full", "data_root": "/d", "widths": [16, 32], "seed": 2})
    assert per[a.path] == {"profile": "full", "data_root": "/d", "seed": 2}
    assert per[b.path] == {"profile": "full", "widths": [16, 32], "seed": 2}
    assert any("'data_root' goes to the 1 chapter(s)" in n for n in notes)


@pytest.mark.parametrize("params, message", [
    ({"profile": "gpu"}, "unknown profile 'gpu': the valid profiles are 'ci', 'full'"),
    ({"sede": 1}, "unknown parameter 'sede' (did you mean 'seed'?)"),
    ({"seed": 1.5}, "expects an integer"),
    ({"seed": True}, "expects an integer"),
    ({"device": "tpu"}, "device 'tpu' is not a device torch knows"),
    ({"widths": 3}, "expects a tuple or list"),
])
def test_plan_refuses_what_the_chapters_do_not_take(params, message):
    from implicit_bias.book.params import ParameterError, plan

    with pytest.raises(ParameterError, match=re_escape(message)):
        plan([spec("a", widths=(4, 8))], params)


def test_plan_names_chapters_without_a_profile():
    from implicit_bias.book.params import ParameterError, plan

    with pytest.raises(ParameterError, match="profile 'full' is not defined by chapters/p/b"):
        plan([spec("a"), spec("b", profiles=("ci",))], {"profile": "full"})


def re_escape(text: str) -> str:
    import re

    return re.escape(text)


def test_estimate_is_the_measured_ci_time_times_the_largest_scale_up(tmp_path: Path):
    from implicit_bias.book import estimate

    profiles = {"ci": {"steps": 100, "widths": (16, 32), "record_every": 10, "lr": 0.1, "data": "digits"},
                "full": {"steps": 1000, "widths": (64, 128, 256), "record_every": 500, "lr": 0.01,
                         "data": "mnist"}}
    assert estimate.scale_up(profiles) == (10.0, "steps")  # widths: 448/48 = 9.3; record_every: less work
    assert estimate.scale_up({"ci": {"n": 5}, "full": {"n": 5}}) == (1.0, "")
    text = estimate.no_gpu_warning([book.all_chapters()[0]], "full", jobs=1)
    assert text.startswith("WARNING: no GPU here") and "a lower bound" in text
    assert "ci (measured)" in text or "budget, not measured" in text
