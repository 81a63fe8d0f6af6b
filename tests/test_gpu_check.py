"""``benchmarks/gpu_check.py`` (``make gpu-check``): its dry run on the CPU, on a book of tiny
chapters, so that the check's plumbing cannot rot while no GPU is around; and its pieces (ledger
comparison, budget, extrapolation, benchmark rows, tables, messages) on made-up data. The dry run
costs ~35 CPU-s: four kernels (the smoke test, one chapter in profile ci, two timing runs of its
full profile) and one small benchmark process."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import nbformat
import pytest

from implicit_bias.claims import Ledger

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_check.py"


def _load():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module
    spec.loader.exec_module(module)
    return module


gc = _load()

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

CHAPTER = HEADER + textwrap.dedent('''
    # %% [markdown]
    # # A tiny chapter

    # %% tags=["parameters"]
    profile = "ci"
    seed = 0
    device = "auto"{comment}

    # %%
    PROFILES = {{"ci": dict(steps=30), "full": dict(steps=3000)}}

    # %%
    import torch

    from implicit_bias.chapter import start_chapter
    from implicit_bias.claims import Ledger

    P, dev = start_chapter(PROFILES, profile=profile, seed=seed, device=device)
    x = torch.zeros(4, device=dev)
    for _ in range(P["steps"]):
        x = x + 1
    ledger = Ledger("demo/{name}")
    ledger.below("small", "Lemma 1", "the count stays small", "< 10^6", float(x.sum()), 1e6,
                 items="lemma1", bearing="supports", origin="prior")

    # %%
    ledger.report()
''')

TOC = """\
format: jb-book
root: book/intro
parts:
  - caption: Demo part
    chapters:
      - file: chapters/demo/01_gpu
      - file: chapters/demo/02_cpu
"""


def committed(name: str, passed: bool) -> nbformat.NotebookNode:
    """A committed notebook holding only the glued ledger, as ``Ledger.report`` glues it."""
    ledger = Ledger(f"demo/{name}")
    ledger.below("small", "Lemma 1", "the count stays small", "< 10^6", 120.0 if passed else 2e6, 1e6,
                 items="lemma1", bearing="supports", origin="prior")
    glued = {"output_type": "display_data", "metadata": {"scrapbook": {"name": "claims", "data": True,
                                                                       "display": False}},
             "data": {"application/papermill.record/text/plain": repr(ledger.to_json())}}
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("ledger.report()", outputs=[nbformat.from_dict(glued)])]
    return nb


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gpu_check_book")
    (root / "chapters" / "demo").mkdir(parents=True)
    (root / "chapters").joinpath("demo", "01_gpu.py").write_text(CHAPTER.format(name="01_gpu", comment=""))
    (root / "chapters").joinpath("demo", "02_cpu.py").write_text(
        CHAPTER.format(name="02_cpu", comment="  # tiny float64 work: it runs on the CPU"))
    nbformat.write(committed("01_gpu", passed=True), root / "chapters" / "demo" / "01_gpu.ipynb")
    nbformat.write(committed("02_cpu", passed=False), root / "chapters" / "demo" / "02_cpu.ipynb")
    (root / "_toc.yml").write_text(TOC)
    (root / "book").mkdir()
    (root / "book" / "how_to_run.md").write_text(f"# How\n\n{gc.TABLE_BEGIN}\nold\n{gc.TABLE_END}\n\nafter\n")
    return root


@pytest.fixture(scope="module")
def dry_run(demo: Path) -> tuple[subprocess.CompletedProcess, dict, Path]:
    out = demo / "out"
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, str(SCRIPT), "--dry-run", "--out", str(out), "--budget", "400",
                           "--chapters", "demo/01", "--full-chapters", "demo/01", "--fractions", "0.01", "0.1"],
                          cwd=demo, capture_output=True, text=True, timeout=600)
    print(f"dry run: {time.perf_counter() - start:.0f} s")
    summary = json.loads((out / gc.SUMMARY_JSON).read_text()) if (out / gc.SUMMARY_JSON).exists() else {}
    return proc, summary, out


def test_dry_run_executes_compares_benchmarks_and_times(dry_run, demo: Path) -> None:
    proc, summary, out = dry_run
    assert summary, proc.stdout + proc.stderr
    assert proc.returncode == gc.EXIT_OK, proc.stdout + proc.stderr
    assert summary["verdict"] == "passed" and summary["exit_code"] == gc.EXIT_OK
    assert [s["status"] for s in (summary["ci_step"], summary["bench"], summary["full_step"])] == ["done"] * 3
    (row,) = summary["chapters"]
    assert row["chapter"] == "chapters/demo/01_gpu.py"
    assert row["ok"] and row["ledger"] == "same" and row["claims"] == 1 and row["pass"] == 1
    assert not row["declared_cpu"] and row["device_use"] == "CPU (dry run)"
    # the kernel ran this interpreter, and its probe reported (no CUDA on the CPU)
    assert row["kernel_executable"] == sys.executable and row["cuda_peak_mib"] == 0
    # a committed verdict that differs is found by the test suite's comparison
    executed = demo / "_build" / "gpu-check" / "ci" / "chapters" / "demo" / "01_gpu.ipynb"
    status, problems, _ = gc.compare_with_committed(demo / "chapters" / "demo" / "02_cpu.ipynb", executed)
    assert status == "differs" and any("verdict is 'PASS', committed 'FAIL'" in p for p in problems)
    # the benchmark ran and its tables came back with the peak
    bench = summary["bench"]
    assert bench["peak_gflops"] > 0
    assert {(r["case"], r["path"]) for r in bench["rows"]} >= {("tiny", "loop"), ("compute", "stacked")}
    # two timing runs of the full profile, and an extrapolation from them
    full = summary["full"][0]
    assert [r["fraction"] for r in full["runs"]] == [0.01, 0.1] and all(r["ok"] for r in full["runs"])
    assert full["steps_full"] == 3000 and full["extrapolated_s"] is not None and not full["partial"]
    assert all(len(r["cells"]) >= 4 for r in full["runs"])     # the probe timed every cell
    timing = nbformat.read(demo / "_build" / "gpu-check" / "full" / "f0.1" / "chapters" / "demo" / "01_gpu.ipynb",
                           as_version=4)
    assert "TIMING RUN: steps x0.1" in json.dumps([c.get("outputs", []) for c in timing.cells])
    # the Markdown summary and the how_to_run table
    md = (out / gc.SUMMARY_MD).read_text()
    assert "# GPU check: passed" in md and "| chapters/demo/01_gpu.py | ok |" in md and "## Ensemble engine" in md
    assert "| demo | 1 |" in (out / gc.TABLE_MD).read_text()


# the dry run on the book itself (make gpu-check-dry) must cost less than this, in CPU seconds of
# all its processes (user + sys: the measure of CONTRIBUTING's budget, since other jobs may share
# the machine), which is its wall-clock time on 2 free cores at most
DRY_RUN_LIMIT_S = 300


@pytest.mark.slow
def test_dry_run_on_the_book_exercises_every_step(tmp_path: Path) -> None:
    """``make gpu-check-dry``: the check with the dry run's defaults on the book's own chapters
    (benchmarks/README.md) runs every step (chapters in profile ci compared with their committed
    ledgers, the small benchmark, two timing runs of a full profile and their extrapolation) and
    exits 0, in less than :data:`DRY_RUN_LIMIT_S` CPU seconds (and 10 minutes of wall-clock time
    on a loaded machine)."""
    import resource

    out = tmp_path / "out"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, str(SCRIPT), "--dry-run", "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"dry run on the book: {time.perf_counter() - start:.0f} s wall, {cpu:.0f} CPU-s")
    log = proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.returncode == gc.EXIT_OK, log
    summary = json.loads((out / gc.SUMMARY_JSON).read_text())
    assert [summary[k]["status"] for k in ("ci_step", "bench", "full_step")] == ["done"] * 3, log
    assert sorted(r["chapter"].split("/", 1)[1].removesuffix(".py") for r in summary["chapters"]) \
        == sorted(gc.DRY_CHAPTERS)
    assert all(r["ok"] and r["ledger"] == "same" for r in summary["chapters"]), summary["chapters"]
    assert any(r["declared_cpu"] for r in summary["chapters"]) and not all(r["declared_cpu"] for r in summary["chapters"])
    assert summary["bench"]["peak_gflops"] > 0 and summary["bench"]["rows"]
    (full,) = summary["full"]
    assert [r["fraction"] for r in full["runs"]] == list(gc.DRY_FRACTIONS) and all(r["ok"] for r in full["runs"])
    assert full["extrapolated_s"] is not None and not full["partial"]
    assert cpu < DRY_RUN_LIMIT_S, f"the dry run cost {cpu:.0f} CPU-s (limit {DRY_RUN_LIMIT_S})"


def test_render_table_updates_how_to_run(dry_run, demo: Path) -> None:
    _, _, out = dry_run
    proc = subprocess.run([sys.executable, str(SCRIPT), "--render-table", str(out / gc.SUMMARY_JSON),
                           "--update-how-to-run"], cwd=demo, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    page = (demo / "book" / "how_to_run.md").read_text()
    assert "old" not in page and "| demo | 1 |" in page and page.endswith(f"{gc.TABLE_END}\n\nafter\n")
    assert "Measured on CPU (dry run)" in page


def test_no_gpu_without_dry_run_says_what_to_do(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert gc.main(["--out", str(tmp_path)]) == gc.EXIT_CANNOT_START
    err = capsys.readouterr().err
    assert "torch sees no CUDA GPU here" in err and "--dry-run" in err


def test_missing_packages_are_named_with_what_provides_them(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "needs_zmq_fake.py").write_text("import zmq_not_installed_here\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    problems = gc.import_problems([("json", "python"), ("nope_not_a_module", "nope"),
                                   ("needs_zmq_fake", "fake-package")])
    assert problems == ["module 'nope_not_a_module': install nope_not_a_module",
                        "module 'zmq_not_installed_here' (for fake-package): install zmq_not_installed_here"]
    message = gc.missing_message(problems)
    assert "make gpu-wheels" in message and "--target /tmp/site" in message


def test_budget_cuts_and_skips_steps() -> None:
    budget = gc.Budget(100.0, start=time.monotonic() - 50)   # 50 s left
    assert budget.for_step(20) == 20
    assert 39 < budget.for_step(300) <= 40                   # what is left, less the reserve
    assert gc.Budget(100.0, start=time.monotonic() - 80).for_step(300) == 0   # 10 s left: skipped


def test_exit_codes() -> None:
    done = {k: {"status": "done"} for k in ("ci_step", "bench", "full_step")}
    assert gc.exit_code({**done, "chapters": [{"ok": True, "ledger": "same"}]}) == gc.EXIT_OK
    assert gc.exit_code({**done, "chapters": [{"ok": False}]}) == gc.EXIT_FAILED
    assert gc.exit_code({**done, "chapters": [{"ok": True, "ledger": "differs"}]}) == gc.EXIT_FAILED
    assert gc.exit_code({**done, "full": [{"runs": [{"ok": False}]}]}) == gc.EXIT_OK   # a timing run
    stopped = {**done, "ci_step": {"status": "stopped: budget spent"}}
    assert gc.exit_code({**stopped, "chapters": [{"ok": None}]}) == gc.EXIT_INCOMPLETE
    assert gc.exit_code({**done, "bench": {"status": "not requested"}}) == gc.EXIT_OK


def test_extrapolation_cell_by_cell() -> None:
    lo = {"fraction": 0.01, "ok": True, "seconds": 10.0, "cells": [[1, 1.0, True], [2, 2.0, True], [3, 1.0, True]]}
    hi = {"fraction": 0.02, "ok": True, "seconds": 13.0, "cells": [[1, 1.0, True], [2, 4.0, True], [3, 2.0, True]]}
    est = gc.extrapolate_cells([hi, lo])
    # overhead 6 s; cell 1 flat; cell 2: 2 + 200 * 0.99; cell 3: 1 + 100 * 0.99
    assert est["seconds"] == pytest.approx(6 + 1 + (2 + 200 * 0.99) + (1 + 100 * 0.99))
    assert est["steps_s"] == pytest.approx(300) and est["slowest_cell"] == 2 and not est["partial"]
    # a run that stopped in cell 3: cells 1-2 are timed, the estimate says it is partial
    stopped = {**hi, "ok": False, "cells": [[1, 1.0, True], [2, 4.0, True], [3, 0.1, False]]}
    est = gc.extrapolate_cells([lo, stopped])
    assert est["partial"] and est["untimed_from_cell"] == 3 and est["cells_timed"] == 2
    assert gc.extrapolate_cells([lo]) is None


def test_extrapolation_and_benchmark_rows() -> None:
    assert gc.extrapolate([(0.02, 14.0), (0.01, 12.0)]) == pytest.approx(12 + 200 * 0.99)
    assert gc.extrapolate([(0.01, 12.0)]) is None
    assert gc.extrapolate([(0.01, 12.0), (0.02, 11.0)]) == 12.0      # noise: no negative slope
    row = lambda path, s: {"path": path, "seconds": s, "s_per_step": s / 10, "gflops": 1.0, "of_peak": 0.5}
    tables = [{"case": "tiny", "members": 64, "rows": [row("loop", 8.0), row("vmap", 2.0), row("stacked", 1.0)]},
              {"case": "tiny", "members": 512, "rows": [row("vmap", 4.0), row("stacked", 2.0)]}]
    rows = {(r["members"], r["path"]): r for r in gc.bench_rows(tables)}
    assert rows[(64, "stacked")]["vs_loop"] == 8.0 and rows[(64, "stacked")]["loop_from"] is None
    assert rows[(512, "stacked")]["vs_loop"] == 32.0 and rows[(512, "stacked")]["loop_from"] == 64
    assert rows[(512, "stacked")]["vs_vmap"] == 2.0


def test_the_chapters_that_declare_cpu_work(tmp_path: Path) -> None:
    declared = [py.relative_to(ROOT).as_posix() for py in sorted((ROOT / "chapters").glob("*/*.py"))
                if gc.declares_cpu(py)]
    assert "chapters/invariances/02_paths_and_trees.py" in declared
    assert gc.device_use({"cuda_peak_bytes": 0}, True, "cuda") == "CPU by design"
    assert gc.device_use({"cuda_peak_bytes": 0}, False, "cuda") == "CPU only (not declared)"
    assert gc.device_use({"cuda_peak_bytes": 5}, True, "cuda") == "GPU (declared CPU)"
    assert gc.device_use(None, False, "cuda") == "unknown"


def test_wheel_list_pins_what_the_environment_has() -> None:
    """benchmarks/gpu_wheels.txt pins the versions of this environment (the requirements' and
    their dependencies'), so the wheels carried to a GPU machine are the tested ones."""
    from importlib.metadata import version

    pins = gc.pinned_versions(ROOT / "benchmarks" / "gpu_wheels.txt")
    assert {"papermill", "ipykernel", "jupytext", "myst-nb", "mnist1d", "nbclient"} <= set(pins)
    required = gc.pinned_versions(ROOT / "requirements.txt")
    for name, pinned in pins.items():
        assert version(name) == pinned, f"{name}: {version(name)} installed, {pinned} in gpu_wheels.txt"
        if name in required:
            assert required[name] == pinned


def test_how_to_run_has_the_table_markers_and_the_check() -> None:
    """--update-how-to-run writes between these markers; the page documents the check."""
    page = (ROOT / "book" / "how_to_run.md").read_text()
    assert page.count(gc.TABLE_BEGIN) == 1 and page.count(gc.TABLE_END) == 1
    assert page.index(gc.TABLE_BEGIN) < page.index(gc.TABLE_END)
    assert "(gpu-check)=" in page and "make gpu-check" in page


def test_a_step_past_its_budget_is_stopped_with_what_it_started(tmp_path: Path) -> None:
    """run_child ends the step's process and its descendants (the kernels, in a real step)."""
    code = ("import subprocess, sys, time\n"
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
            "print(p.pid, flush=True)\n"
            "time.sleep(120)\n")
    start = time.monotonic()
    rc, seconds = gc.run_child([sys.executable, "-c", code], {}, 3.0, tmp_path / "step.log")
    assert rc is None and seconds < 30 and time.monotonic() - start < 30
    grandchild = int((tmp_path / "step.log").read_text().split()[0])
    assert not gc._alive(grandchild)
