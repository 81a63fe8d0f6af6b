"""The GPU check: one command that proves the book runs on CUDA, and measures it.

    make gpu-check [GPU_CHECK_ARGS="--jobs 12"] [GPU_CHECK_OUT=DIR]    # with the book's .venv
    PYTHONPATH=/tmp/site:lib python3 benchmarks/gpu_check.py --out DIR  # any Python with torch
    python benchmarks/gpu_check.py --dry-run --out DIR                  # no GPU: the plumbing only

Three steps, each with its own time budget (seconds of wall-clock time; the defaults fit one
H100 in 8 minutes, leaving room in a 10-minute command for installing the wheels: ``--budget``
480 in all, of which ``ci`` 250, ``bench`` 90, ``full`` 110, plus ~15 s of preflight and a
reserve of 10 s for the summary). A step that runs past its budget is
stopped (its processes and their kernels are ended) and what it finished is kept; a step whose
turn comes when the total budget is spent is skipped. The summary records both.

1. ``ci``: every chapter in profile ``ci`` with ``device=cuda`` (``-p device cuda``) through the
   book's execute machinery (:func:`implicit_bias.book.execute.execute_many`), ``--jobs`` at a
   time (default min(12, CPUs); one CPU thread each), longest first, into
   ``_build/gpu-check/ci/``. Per chapter: success, wall time, whether its ledger equals the
   committed (CPU) one by the test suite's machine-independent comparison
   (:func:`implicit_bias.claims.compare`: ids, bearings, items, verdicts exactly, values within
   ``vtol``), and whether it used the GPU: a probe in every kernel records the peak CUDA memory
   after each cell. Chapters whose ``device`` parameter says they run on the CPU (tiny float64
   models, by design) are counted as such.
2. ``bench``: ``benchmarks/ensemble_vs_loop.py`` on the GPU (cases tiny, 100 steps, and
   compute; E = 64 and 512; paths loop, vmap, stacked) with the GPU's float32 matmul peak
   measured in the same process; times are wall-clock between ``torch.cuda.synchronize()`` calls,
   after a warm-up, best of 2. The loop is not run at E = 512 in the tiny case (minutes); its time
   there is the E = 64 loop's times 8 (a loop's time is linear in E), and the table says so.
3. ``full``: one or two chapters (``--full-chapters``) in profile ``full`` with every step count
   scaled by ``--fractions`` (``IMPLICIT_BIAS_STEP_FRACTION``, read by
   :func:`implicit_bias.chapter.start_chapter`); from the wall times t1, t2 at fractions f1 < f2
   the full profile's time is extrapolated linearly in the number of steps, cell by cell (the
   kernel's probe times every cell): ``t1 + (t2 - t1) (1 - f1) / (f2 - f1)`` per cell, plus the
   kernel's start.

Outputs, under ``--out``: ``gpu-check.json`` (everything: GPU, versions, budget, per-chapter
results, benchmark tables, extrapolations, tracebacks), ``gpu-check.md`` (the same for reading),
``how_to_run_table.md`` (the time table of ``book/how_to_run.md``, rendered from the JSON by
:func:`render_time_table`; ``--render-table JSON`` renders it again, ``--update-how-to-run``
writes it into the page), and ``logs/`` (each failed chapter's traceback, kernel log and partly
executed notebook).

Exit status: 0 when every step ran and nothing failed; 1 when a chapter failed, a ledger differs
from the committed one, or the benchmark failed; 2 when the check could not start (no GPU without
``--dry-run``, packages missing: the message lists them); 3 when nothing failed but a step was
stopped or skipped for lack of time. A timing run that stops does not fail the check (with its
steps scaled down, a chapter's analysis may meet results it assumes away, such as no converged
run): its cells up to the stop are timed and extrapolated, the summary says from which cell on
the estimate is missing, and shows the traceback.

``--dry-run`` runs the same plumbing on the CPU (``device=cpu``, a tiny benchmark, tiny fractions)
so that it cannot rot while no GPU is around: by default on two of the book's fastest chapters and
one chapter's full profile at 1% and 2% of its steps (:data:`DRY_CHAPTERS`,
:data:`DRY_FULL_CHAPTERS`), every step in ~3-4 minutes on 2 cores (``make gpu-check-dry``); it
exits 0 when the plumbing works. The test suite runs it as it is, and on a small book of its own
(``tests/test_gpu_check.py``).

Without the book's ``.venv`` (a GPU machine without network): the packages the check needs beyond
torch, numpy, scipy, scikit-learn, matplotlib, tqdm and pyyaml travel as wheels (``make
gpu-wheels`` downloads them into ``.whl/``, listed in ``benchmarks/gpu_wheels.txt``), and::

    python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
    PYTHONPATH=/tmp/site:lib python3 benchmarks/gpu_check.py --out $OUT

The kernels that execute the chapters are started with this very interpreter (a kernelspec
``python3`` written into a scratch ``JUPYTER_PATH``), so they see the same packages.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LIB = HERE.parent / "lib"

STEPS = ("ci", "bench", "full")
STEP_BUDGETS = {"ci": 250.0, "bench": 90.0, "full": 110.0}
TOTAL_BUDGET = 480.0      # seconds: the whole check, preflight included (a lent H100: 10 min a command)
RESERVE = 10.0            # kept for the summary
MIN_STEP = 15.0           # a step that would get less than this is skipped
# name fragments (resolve_chapters), not numbers: chapters get renumbered
FULL_CHAPTERS = ("depth_sweep", "where_gradient_flow_goes")
FRACTIONS = (0.01, 0.02)
# A dry run (no GPU) checks the plumbing, not the book: by default a few of the fastest chapters
# (one that declares the CPU, one that does not; ~10 CPU-s each in profile ci), and one chapter's
# full profile at 1% and 2% of its 2,000 steps, so that every step runs on 2 cores in ~3-4 minutes
# (make gpu-check-dry; tests/test_gpu_check.py runs it). --chapters and --full-chapters override.
DRY_CHAPTERS = ("invariances/02_paths_and_trees", "invariances/04_reduced_alignment")
DRY_FULL_CHAPTERS = ("invariances/04_reduced_alignment",)
DRY_FRACTIONS = (0.01, 0.02)
DRY_JOBS = 2
# a dry run checks plumbing, not speed: budgets that a loaded 2-core machine does not cut (each
# kernel costs ~30 s of start and imports there)
DRY_STEP_BUDGETS = {"ci": 250.0, "bench": 120.0, "full": 200.0}
DRY_TOTAL_BUDGET = 600.0
PROBE_PARAMETER = "gpu_check_probe"   # injected with the parameters: where the kernel's probe writes
SUMMARY_JSON, SUMMARY_MD, TABLE_MD = "gpu-check.json", "gpu-check.md", "how_to_run_table.md"
TABLE_BEGIN = "% gpu-check table: begin (written by benchmarks/gpu_check.py --update-how-to-run)"
TABLE_END = "% gpu-check table: end"
EXIT_OK, EXIT_FAILED, EXIT_CANNOT_START, EXIT_INCOMPLETE = 0, 1, 2, 3

# What the check imports (module, what provides it); a module missing below one of them is named
REQUIRED = (
    ("torch", "torch"), ("numpy", "numpy"), ("scipy", "scipy"), ("sklearn", "scikit-learn"),
    ("matplotlib", "matplotlib"), ("yaml", "pyyaml"), ("tqdm", "tqdm"),
    ("papermill", "papermill"), ("nbformat", "nbformat"), ("nbclient", "nbclient"),
    ("jupyter_client", "jupyter-client"), ("ipykernel", "ipykernel"), ("IPython", "ipython"),
    ("matplotlib_inline.backend_inline", "matplotlib-inline"), ("jupytext", "jupytext"),
    ("myst_nb.ext.glue", "myst-nb"), ("mnist1d.data", "mnist1d"),
    ("implicit_bias.book.execute", "the book's library (PYTHONPATH=lib)"),
)
# import names whose distribution is named otherwise
DISTRIBUTIONS = {"zmq": "pyzmq", "yaml": "pyyaml", "dateutil": "python-dateutil",
                 "sklearn": "scikit-learn", "attr": "attrs", "jsonschema_specifications":
                 "jsonschema-specifications", "rpds": "rpds-py", "mdit_py_plugins": "mdit-py-plugins",
                 "markdown_it": "markdown-it-py", "prompt_toolkit": "prompt-toolkit",
                 "stack_data": "stack-data", "pure_eval": "pure-eval", "matplotlib_inline":
                 "matplotlib-inline", "jupyter_client": "jupyter-client", "jupyter_core": "jupyter-core",
                 "charset_normalizer": "charset-normalizer", "myst_nb": "myst-nb",
                 "ipython_pygments_lexers": "ipython-pygments-lexers", "IPython": "ipython"}

# Written into the kernels' IPython startup folder: after every cell, the kernel's peak CUDA memory,
# the time since the kernel started and each cell's time (by execution count) go to the file named
# by the injected parameter.
PROBE = '''\
import json as _json, os as _os, sys as _sys, time as _time

_GPU_CHECK = {"t0": _time.time(), "cell_start": None, "cells": []}


def _gpu_check_pre(info=None):
    _GPU_CHECK["cell_start"] = _time.time()


def _gpu_check_probe(result=None):
    now = _time.time()
    if _GPU_CHECK["cell_start"] is not None and result is not None:
        failed = bool(result.error_in_exec or result.error_before_exec)
        _GPU_CHECK["cells"].append([result.execution_count, now - _GPU_CHECK["cell_start"], not failed])
    path = get_ipython().user_ns.get("%s")
    if not path:
        return
    record = {"pid": _os.getpid(), "executable": _sys.executable, "seconds": now - _GPU_CHECK["t0"],
              "cells": _GPU_CHECK["cells"], "cuda_initialized": False, "cuda_peak_bytes": 0}
    torch = _sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            record["cuda_initialized"] = True
            record["cuda_peak_bytes"] = max(torch.cuda.max_memory_allocated(i)
                                            for i in range(torch.cuda.device_count()))
    except Exception as exc:  # never disturb the chapter
        record["error"] = repr(exc)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        _json.dump(record, f)
    _os.replace(tmp, path)


get_ipython().events.register("pre_run_cell", _gpu_check_pre)
get_ipython().events.register("post_run_cell", _gpu_check_probe)
''' % PROBE_PARAMETER


# ----------------------------------------------------------------------------- preflight


def import_problems(required: Iterable[tuple[str, str]] = REQUIRED) -> list[str]:
    """One line per requirement that cannot be imported, naming the module really missing (a
    dependency of the requirement, often) and what provides it."""
    import importlib

    problems = []
    for module, provider in required:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            missing = (exc.name or module).split(".")[0]
            dist = DISTRIBUTIONS.get(missing, missing)
            via = "" if missing == module.split(".")[0] else f" (for {provider})"
            problems.append(f"module {missing!r}{via}: install {dist}"
                            if not provider.startswith("the book") or missing != "implicit_bias"
                            else f"module 'implicit_bias': {provider}")
        except Exception as exc:  # a broken install: say so, with the error
            problems.append(f"{module} ({provider}) fails to import: {type(exc).__name__}: {exc}")
    return list(dict.fromkeys(problems))


def chapter_imports(chapters: Iterable[Path]) -> list[tuple[str, str]]:
    """``(module, "chapter <name>")`` for every module the chapters import (read from their
    sources, not run), so that a missing package is named before any kernel starts."""
    import ast

    from implicit_bias.book.sources import relative

    found: dict[str, str] = {}
    for py in chapters:
        text = "\n".join(ln for ln in Path(py).read_text().splitlines()
                         if not ln.lstrip().startswith(("%", "!")))  # IPython magics
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level
                     else [])
            for name in names:
                found.setdefault(name, f"chapter {relative(Path(py))}")
    return sorted(found.items())


def missing_message(problems: Sequence[str]) -> str:
    return ("error: the GPU check cannot start; this Python lacks what it needs:\n"
            + "".join(f"  - {p}\n" for p in problems)
            + "Without network, bring the wheels (on a machine with PyPI: make gpu-wheels), then\n"
              "  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl\n"
              "  PYTHONPATH=/tmp/site:lib python3 benchmarks/gpu_check.py --out DIR\n"
              "(benchmarks/README.md, 'gpu_check.py'). With network: make install && make gpu-check.")


NO_GPU = ("error: torch sees no CUDA GPU here (torch {torch}, {build}). The GPU check runs the "
          "chapters on CUDA: run it on a GPU machine, or pass --dry-run to check its plumbing on "
          "the CPU (device=cpu, a tiny benchmark).")


def machine_info(dry_run: bool) -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {
        "python": platform.python_version(), "executable": sys.executable,
        "platform": platform.platform(), "cpus": os.cpu_count(),
        "torch": torch.__version__, "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "gpus": [],
    }
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            info["gpus"].append({"name": p.name, "memory_gib": round(p.total_memory / 2**30, 1),
                                 "capability": f"{p.major}.{p.minor}"})
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=20)
            info["driver"] = out.stdout.strip().splitlines()[0] if out.returncode == 0 else None
        except (OSError, subprocess.SubprocessError, IndexError):
            info["driver"] = None
    info["device_name"] = info["gpus"][0]["name"] if info["gpus"] and not dry_run else "CPU (dry run)"
    info["versions"] = package_versions()
    return info


def package_versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in ("torch", "numpy", "scipy", "scikit-learn", "matplotlib", "papermill", "nbclient",
                 "ipykernel", "jupytext", "myst-nb", "mnist1d"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def pinned_versions(requirements: Path) -> dict[str, str]:
    """``name -> version`` of the ``name==version`` lines of a requirements file."""
    pins = {}
    if requirements.exists():
        for line in requirements.read_text().splitlines():
            m = re.match(r"^\s*([A-Za-z0-9_.-]+)==([^\s;#]+)", line)
            if m:
                pins[m.group(1).lower()] = m.group(2)
    return pins


def prepare_environment(scratch: Path) -> dict[str, str]:
    """The environment of the steps and their kernels: a kernelspec ``python3`` that starts this
    interpreter (first on ``JUPYTER_PATH``), the probe in the kernels' IPython startup folder, the
    library on ``PYTHONPATH`` when it came from there, and a scratch cache."""
    spec = scratch / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (gpu-check)", "language": "python",
        "metadata": {"debugger": False}}, indent=1))
    startup = scratch / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "50-gpu-check-probe.py").write_text(PROBE)
    env = {
        "JUPYTER_PATH": os.pathsep.join([str(scratch / "jupyter"),
                                         *filter(None, [os.environ.get("JUPYTER_PATH")])]),
        "IPYTHONDIR": str(scratch / "ipython"),
        "IMPLICIT_BIAS_CACHE": str(scratch / "cache"),
        "IMPLICIT_BIAS_QUIET": "1",
        "PYTHONUNBUFFERED": "1",
    }
    import implicit_bias

    # absolute paths: the kernels run in the chapters' folders (PYTHONPATH=lib would not reach)
    lib = str(Path(implicit_bias.__file__).resolve().parents[1])
    paths = [str(Path(p).resolve()) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys([*paths, lib]))
    env["CUBLAS_WORKSPACE_CONFIG"] = os.environ.get("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # determinism
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):  # one thread per kernel,
        env[var] = os.environ.get(var, "1")  # as the chapters' torch: --jobs kernels share the CPUs
    return env


# ----------------------------------------------------------------------------- budget and children


@dataclass
class Budget:
    """The check's time: ``total`` seconds from ``start``; each step asks for its share."""

    total: float
    start: float = field(default_factory=time.monotonic)

    def left(self) -> float:
        return self.total - (time.monotonic() - self.start)

    def for_step(self, wanted: float) -> float:
        """Seconds a step may run: its budget, cut to what is left (less the reserve); below
        :data:`MIN_STEP` the step is skipped (0)."""
        allowed = min(wanted, self.left() - RESERVE)
        return allowed if allowed >= MIN_STEP else 0.0


def descendants(pid: int) -> list[int]:
    """Processes started (directly or not) by ``pid``, read from ``/proc``; children first."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def end_process_tree(pid: int, grace: float = 3.0) -> None:
    """End a child process started by this check and everything it started (kernels included):
    SIGTERM, then SIGKILL after ``grace`` seconds."""
    pids = [*descendants(pid), pid]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in pids:
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.1)


def _alive(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def run_child(cmd: Sequence[str], env: Mapping[str, str], timeout: float, log: Path,
              prefix: str = "    ") -> tuple[int | None, float]:
    """Run a command with a wall-clock limit, echoing its output (indented) and keeping it in
    ``log``; returns ``(exit status, seconds)``, the status None when it was stopped at
    ``timeout``."""
    start = time.monotonic()
    log.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **env}, cwd=os.getcwd(), errors="replace")

    def pump() -> None:
        with open(log, "a") as f:
            for line in proc.stdout:  # type: ignore[union-attr]
                f.write(line)
                print(prefix + line.rstrip("\n"), flush=True)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        rc: int | None = proc.wait(timeout=max(timeout, 1.0))
    except subprocess.TimeoutExpired:
        print(f"{prefix}stopped: the step's budget of {timeout:.0f} s is spent", flush=True)
        end_process_tree(proc.pid)
        proc.wait()
        rc = None
    reader.join(10)
    return rc, time.monotonic() - start


def child_main(spec_path: str) -> int:
    """Inside a step's process: :func:`implicit_bias.book.execute.execute_many` on the spec's
    chapters; writes the outcomes as JSON."""
    import logging
    from dataclasses import asdict

    from implicit_bias.book.execute import execute_many

    class _NoProbeWarning(logging.Filter):  # the probe's parameter is not the chapter's: not news
        def filter(self, record: logging.LogRecord) -> bool:
            return PROBE_PARAMETER not in record.getMessage()

    logging.getLogger("papermill").addFilter(_NoProbeWarning())
    spec = json.loads(Path(spec_path).read_text())
    os.environ.update(spec.get("env", {}))
    jobs = [(Path(py), Path(out)) for py, out in spec["jobs"]]
    per_chapter = {Path(py): params for py, params in spec["params"].items()}
    outcomes = execute_many(jobs, {}, Path(spec["log_dir"]), spec["n_jobs"], timeout=spec["timeout"],
                            per_chapter=per_chapter)
    Path(spec["result"]).write_text(json.dumps([asdict(o) for o in outcomes], indent=1))
    return 0


_OUTCOME_LINE = re.compile(r"^\s*(ok|FAILED)\s+(\S+)\s+\((\d+) s\)\s*$")


def execute_step(name: str, jobs: Sequence[tuple[Path, Path]], params: Mapping[Path, dict[str, Any]],
                 log_dir: Path, n_jobs: int, timeout: float, env: Mapping[str, str],
                 scratch: Path) -> tuple[dict[str, dict[str, Any]], bool, float]:
    """Execute chapters in a child process stopped after ``timeout`` seconds. Returns each
    chapter's outcome (``Outcome`` fields; ``ok`` None for a chapter that had not finished),
    whether the step was stopped, and its seconds."""
    from implicit_bias.book.sources import relative

    spec_path = scratch / f"{name}.spec.json"
    result = scratch / f"{name}.outcomes.json"
    result.unlink(missing_ok=True)
    spec_path.write_text(json.dumps({
        "jobs": [[str(py), str(out)] for py, out in jobs],
        "params": {str(py): params.get(py, {}) for py, _ in jobs},
        "log_dir": str(log_dir), "n_jobs": n_jobs, "timeout": max(1, int(timeout)),
        "result": str(result), "env": dict(env)}, indent=1))
    rc, seconds = run_child([sys.executable, str(Path(__file__).resolve()), "--child", str(spec_path)],
                            env, timeout, scratch / f"{name}.log")
    outcomes: dict[str, dict[str, Any]] = {}
    if result.exists():
        for o in json.loads(result.read_text()):
            outcomes[o["chapter"]] = o
    else:  # stopped (or crashed): what its lines and files say
        done = {}
        log = scratch / f"{name}.log"
        for line in (log.read_text().splitlines() if log.exists() else []):
            m = _OUTCOME_LINE.match(line)
            if m:
                done[m.group(2)] = (m.group(1) == "ok", float(m.group(3)))
        for py, out in jobs:
            rel = relative(py)
            ok, secs = done.get(rel, (None, None))
            tb = log_dir / (py.stem + ".traceback.txt")
            if ok is None and out.exists():
                ok = True
            outcomes[rel] = {"chapter": rel, "output": str(out), "ok": ok, "seconds": secs,
                             "error": "" if ok is not False else "failed (see the traceback)",
                             "log": str(tb) if tb.exists() else None, "failed_cell": None,
                             "cell_index": None, "n_cells": None, "cell_line": ""}
        if rc is not None and rc != 0:
            for o in outcomes.values():
                if o["ok"] is None:
                    o["ok"], o["error"] = False, f"the step's process exited with status {rc}"
    return outcomes, rc is None, seconds


# ----------------------------------------------------------------------------- chapters


def declares_cpu(py: Path) -> bool:
    """Whether a chapter says, on its ``device`` parameter's line, that it runs on the CPU
    (``device = "auto"  # ... runs on the CPU``): tiny float64 models kept there by design."""
    for line in py.read_text().splitlines():
        m = re.match(r"^device\s*=\s*[^#]*#(.*)$", line)
        if m and re.search(r"\bCPU\b", m.group(1)):
            return True
    return False


def ci_times(root: Path) -> dict[str, float]:
    path = root / "book" / "data" / "chapter_times.json"
    if not path.exists():
        return {}
    return {k: float(v["cpu_s"]) for k, v in json.loads(path.read_text()).get("chapters", {}).items()}


def ledger_of(nb: Path) -> dict[str, Any] | None:
    from implicit_bias.book.report import read_glued

    claims = read_glued(nb).get("claims")
    return claims if isinstance(claims, dict) and "claims" in claims else None


def compare_with_committed(reference: Path, executed: Path) -> tuple[str, list[str], dict[str, int]]:
    """``(status, differences, counts)``: status ``same``, ``differs``, ``no committed ledger`` or
    ``no ledger in the run``, by :func:`implicit_bias.claims.compare` (the test suite's
    comparison)."""
    from implicit_bias.claims import compare

    new = ledger_of(executed)
    counts = {"claims": 0, "pass": 0}
    if new is not None:
        counts = {"claims": len(new["claims"]), "pass": sum(bool(c.get("passed")) for c in new["claims"])}
    ref = ledger_of(reference) if reference.exists() else None
    if ref is None:
        return "no committed ledger", [], counts
    if new is None:
        return "no ledger in the run", [], counts
    problems = compare(ref, new)
    return ("differs" if problems else "same"), problems, counts


def read_probe(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def device_use(probe: dict[str, Any] | None, declared_cpu: bool, device: str) -> str:
    """How a chapter used the device: ``GPU``, ``CPU by design`` (declared, no CUDA memory),
    ``CPU only (not declared)``, ``GPU (declared CPU)``, or ``unknown`` (no probe record)."""
    if device == "cpu":
        return "CPU (dry run)"
    if probe is None:
        return "unknown"
    used = probe.get("cuda_peak_bytes", 0) > 0
    if used:
        return "GPU (declared CPU)" if declared_cpu else "GPU"
    return "CPU by design" if declared_cpu else "CPU only (not declared)"


def tail(path: str | None, limit: int = 6000) -> str:
    if not path or not Path(path).exists():
        return ""
    text = Path(path).read_text(errors="replace")
    return text if len(text) <= limit else "...\n" + text[-limit:]


def step_ci(args: argparse.Namespace, budget: Budget, env: Mapping[str, str], scratch: Path,
            out: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from implicit_bias.book.params import plan
    from implicit_bias.book.sources import ROOT, chapter_spec, relative, resolve_chapters

    record: dict[str, Any] = {"name": "ci", "budget_s": args.budget_ci}
    chapters = resolve_chapters(args.chapters or [])
    times = ci_times(ROOT)
    chapters.sort(key=lambda py: -times.get(relative(py.with_suffix("")), 75.0))  # longest first
    device = args.device
    specs = [chapter_spec(py) for py in chapters]
    try:
        per_chapter, _ = plan(specs, {"device": device})
    except ValueError as err:  # ParameterError: a chapter without the parameter, say
        record["status"] = f"failed: {err}"
        return record, []
    probes = scratch / "ci" / "probes"
    shutil.rmtree(scratch / "ci", ignore_errors=True)
    probes.mkdir(parents=True)
    for py in chapters:
        per_chapter[py][PROBE_PARAMETER] = str(probes / (relative(py.with_suffix("")).replace("/", "__") + ".json"))
    jobs = [(py, scratch / "ci" / py.relative_to(ROOT).with_suffix(".ipynb")) for py in chapters]
    timeout = budget.for_step(args.budget_ci)
    record["timeout_s"] = timeout
    rows: list[dict[str, Any]] = []
    if not timeout:
        record["status"] = "skipped: the total budget is spent"
        return record, [{"chapter": relative(py), "ok": None, "status": "not run"} for py in chapters]
    print(f"[ci] {len(jobs)} chapter(s), profile ci, device={device}, {args.jobs} at a time, "
          f"budget {timeout:.0f} s", flush=True)
    outcomes, stopped, seconds = execute_step("ci", jobs, per_chapter, scratch / "ci" / "logs",
                                              args.jobs, timeout, env, scratch)
    record.update(seconds=round(seconds, 1), status="stopped: budget spent" if stopped else "done")
    order = {relative(py): i for i, py in enumerate(resolve_chapters(args.chapters or []))}
    for py, nb in jobs:
        rel = relative(py)
        o = outcomes.get(rel, {"ok": None})
        declared = declares_cpu(py)
        probe = read_probe(Path(per_chapter[py][PROBE_PARAMETER]))
        row: dict[str, Any] = {
            "chapter": rel, "ok": o.get("ok"), "seconds": _round(o.get("seconds")),
            "declared_cpu": declared, "device_use": device_use(probe, declared, device),
            "cuda_peak_mib": round(probe["cuda_peak_bytes"] / 2**20, 1) if probe else None,
            "kernel_executable": probe.get("executable") if probe else None,
        }
        if o.get("ok"):
            status, problems, counts = compare_with_committed(py.with_suffix(".ipynb"), nb)
            row.update(ledger=status, differences=problems, **counts)
        elif o.get("ok") is False:
            row.update(ledger="not compared (failed)", error=o.get("error", ""),
                       where=_where(o), traceback=tail(o.get("log")))
            _keep_logs(py, scratch / "ci" / "logs", out / "logs" / "ci")
        else:
            row.update(ledger="not run (budget spent)")
        rows.append(row)
    rows.sort(key=lambda r: order.get(r["chapter"], 0))
    return record, rows


def _round(x: Any, nd: int = 1) -> Any:
    return round(x, nd) if isinstance(x, (int, float)) else x


def _where(o: Mapping[str, Any]) -> str:
    if o.get("cell_index") is None:
        return "before any cell ran" if o.get("n_cells") is not None else ""
    count = f"[{o['failed_cell']}] " if o.get("failed_cell") is not None else ""
    return f"code cell {o['cell_index']} of {o['n_cells']} ({count}starts {o.get('cell_line', '')!r})"


def _keep_logs(py: Path, log_dir: Path, dest: Path) -> None:
    """Copy a failed chapter's traceback, kernel log and partly executed notebook to ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in (py.stem + ".traceback.txt", py.stem + ".kernel.log", py.stem + ".ipynb"):
        if (log_dir / name).exists():
            shutil.copy2(log_dir / name, dest / name)


# ----------------------------------------------------------------------------- benchmark


def bench_plan(dry_run: bool, device: str) -> list[list[str]]:
    """The benchmark runs (arguments of ``ensemble_vs_loop.py``), best of 2 timed runs each. On a
    GPU: compute at E = 64 and 512 with every path; tiny (100 steps instead of 300: the loop costs
    ~1 ms a step per network on a GPU) at E = 64 with every path and at E = 512 without the loop
    (see the module docstring)."""
    if dry_run:
        return [["--device", device, "--members", "3", "--steps", "2", "--repeats", "1", "--no-check"]]
    return [["--device", device, "--case", "tiny", "--members", "64", "--steps", "100", "--repeats", "2"],
            ["--device", device, "--case", "compute", "--members", "64", "512", "--repeats", "2"],
            ["--device", device, "--case", "tiny", "--members", "512", "--steps", "100", "--paths", "vmap",
             "stacked", "--repeats", "2"]]


def step_bench(args: argparse.Namespace, budget: Budget, env: Mapping[str, str],
               scratch: Path) -> dict[str, Any]:
    record: dict[str, Any] = {"name": "bench", "budget_s": args.budget_bench, "runs": [],
                              "tables": [], "peak_gflops": None}
    timeout = budget.for_step(args.budget_bench)
    record["timeout_s"] = timeout
    if not timeout:
        record["status"] = "skipped: the total budget is spent"
        return record
    deadline = time.monotonic() + timeout
    script = HERE / "ensemble_vs_loop.py"
    print(f"[bench] {script.name} on {args.device}, budget {timeout:.0f} s", flush=True)
    status = "done"
    for i, run_args in enumerate(bench_plan(args.dry_run, args.device)):
        left = deadline - time.monotonic()
        if left < 5:
            record["runs"].append({"args": run_args, "status": "skipped: budget spent"})
            status = "stopped: budget spent"
            continue
        path = scratch / f"bench{i}.json"
        path.unlink(missing_ok=True)
        rc, seconds = run_child([sys.executable, str(script), *run_args, "--json", str(path)], env,
                                left, scratch / "bench.log")
        run: dict[str, Any] = {"args": run_args, "seconds": round(seconds, 1), "exit": rc}
        if rc is None:
            run["status"], status = "stopped: budget spent", "stopped: budget spent"
        elif rc != 0:
            run["status"], status = f"failed (exit {rc})", "failed"
            run["output"] = tail(str(scratch / "bench.log"), 4000)
        else:
            run["status"] = "done"
        if path.exists():
            data = json.loads(path.read_text())
            record["peak_gflops"] = max(record["peak_gflops"] or 0.0, data["peak_gflops"])
            for key in ("device", "timing", "tf32_matmul", "dtype"):
                record[key] = data.get(key)
            for t in data["tables"]:
                t["peak_gflops"] = data["peak_gflops"]
            record["tables"] += data["tables"]
        record["runs"].append(run)
    record["status"] = status
    record["seconds"] = round(timeout - (deadline - time.monotonic()), 1)
    record["rows"] = bench_rows(record["tables"])
    return record


def bench_rows(tables: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per (case, E, path): seconds per step, GFLOP/s, fraction of the peak, speed-ups
    against the loop and vmap paths of the same case and E. Where the loop was not run at some E,
    its time is the loop's at the largest smaller E of that case scaled linearly (``loop_from``)."""
    loops = {(t["case"], t["members"]): r["seconds"] for t in tables for r in t["rows"]
             if r["path"] == "loop"}
    rows = []
    for t in tables:
        by = {r["path"]: r for r in t["rows"]}
        loop, loop_from = by["loop"]["seconds"] if "loop" in by else None, None
        if loop is None:
            smaller = sorted(E for (case, E) in loops if case == t["case"] and E < t["members"])
            if smaller:
                E0 = smaller[-1]
                loop, loop_from = loops[(t["case"], E0)] * t["members"] / E0, E0
        vmap = by["vmap"]["seconds"] if "vmap" in by else None
        for r in t["rows"]:
            rows.append({"case": t["case"], "members": t["members"], "path": r["path"],
                         "s_per_step": r["s_per_step"], "gflops": r["gflops"], "of_peak": r["of_peak"],
                         "vs_loop": loop / r["seconds"] if loop else None, "loop_from": loop_from,
                         "vs_vmap": vmap / r["seconds"] if vmap else None})
    return rows


# ----------------------------------------------------------------------------- full profile, capped


def extrapolate(points: Sequence[tuple[float, float]]) -> float | None:
    """The time at fraction 1 of the line through the two timed points ``(fraction, seconds)``
    with the smallest and largest fractions (never decreasing: noise may make a cell faster at the
    larger fraction); None with fewer than two distinct fractions."""
    pts = sorted(points)
    if len(pts) < 2 or pts[-1][0] == pts[0][0]:
        return None
    (f1, t1), (f2, t2) = pts[0], pts[-1]
    slope = max(0.0, (t2 - t1) / (f2 - f1))
    return t1 + slope * (1 - f1)


def extrapolate_cells(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The full time of a chapter from timing runs at two or more fractions, cell by cell.

    Each run is ``{"fraction", "seconds" (the whole run, kernel start included), "cells":
    [[execution count, seconds, ok], ...]}`` (from the kernel's probe). Every cell that completed
    in the runs of the smallest and the largest fraction is extrapolated on its own
    (:func:`extrapolate`); what is not in a cell (kernel start, papermill) is taken from the run
    of the smallest fraction. A run that stopped in a cell (the analysis of a scaled run may assume
    results that too few steps do not give) leaves that cell and the later ones untimed: the
    result is then partial and says from which cell. None with fewer than two runs."""
    timed = sorted((r for r in runs if r.get("cells") is not None and r.get("seconds") is not None),
                   key=lambda r: r["fraction"])
    if len(timed) < 2 or timed[0]["fraction"] == timed[-1]["fraction"]:
        return None
    lo, hi = timed[0], timed[-1]
    cells_lo = {c[0]: c[1] for c in lo["cells"] if c[2]}
    cells_hi = {c[0]: c[1] for c in hi["cells"] if c[2]}
    both = sorted(set(cells_lo) & set(cells_hi))
    per_cell = {n: extrapolate([(lo["fraction"], cells_lo[n]), (hi["fraction"], cells_hi[n])]) for n in both}
    df = hi["fraction"] - lo["fraction"]
    steps_s = sum(max(0.0, (cells_hi[n] - cells_lo[n]) / df) for n in both)  # the steps' share at f = 1
    overhead = max(0.0, lo["seconds"] - sum(c[1] for c in lo["cells"]))
    stopped = [c[0] for r in (lo, hi) for c in r["cells"] if not c[2]]
    slowest = max(per_cell, key=lambda n: per_cell[n]) if per_cell else None
    return {"seconds": overhead + sum(per_cell.values()), "overhead_s": overhead, "steps_s": steps_s,
            "cells_timed": len(both), "partial": bool(stopped) or not (lo.get("ok") and hi.get("ok")),
            "untimed_from_cell": min(stopped) if stopped else None,
            "slowest_cell": slowest, "slowest_cell_s": per_cell.get(slowest) if slowest else None}


def full_step_count(py: Path) -> int:
    """Sum of the ``full`` profile's step counts (what the fraction scales)."""
    from implicit_bias.book.sources import profile_settings
    from implicit_bias.runtime import scale_steps

    full = profile_settings(py).get("full", {})
    _, keys = scale_steps(full, 1.0)
    return sum(sum(v) if isinstance(v, (tuple, list)) else v for k, v in full.items() if k in keys)


def step_full(args: argparse.Namespace, budget: Budget, env: Mapping[str, str], scratch: Path,
              out: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from implicit_bias.book.params import plan
    from implicit_bias.book.sources import ROOT, chapter_spec, relative, resolve_chapters

    record: dict[str, Any] = {"name": "full", "budget_s": args.budget_full, "fractions": args.fractions}
    chapters = resolve_chapters(args.full_chapters)
    rows = [{"chapter": relative(py), "runs": [], "steps_full": full_step_count(py),
             "extrapolated_s": None} for py in chapters]
    timeout = budget.for_step(args.budget_full)
    record["timeout_s"] = timeout
    if not timeout:
        record["status"] = "skipped: the total budget is spent"
        return record, rows
    deadline = time.monotonic() + timeout
    try:
        per_chapter, _ = plan([chapter_spec(py) for py in chapters], {"profile": "full", "device": args.device})
    except ValueError as err:
        record["status"] = f"failed: {err}"
        return record, rows
    shutil.rmtree(scratch / "full", ignore_errors=True)
    (scratch / "full").mkdir(parents=True)
    status = "done"
    print(f"[full] {len(chapters)} chapter(s), profile full, step fractions {args.fractions}, "
          f"budget {timeout:.0f} s", flush=True)
    for fraction in args.fractions:
        left = deadline - time.monotonic()
        if left < MIN_STEP:
            status = "stopped: budget spent"
            for row in rows:
                row["runs"].append({"fraction": fraction, "ok": None, "status": "not run (budget spent)"})
            continue
        tag = f"f{fraction:g}"
        jobs = [(py, scratch / "full" / tag / py.relative_to(ROOT).with_suffix(".ipynb")) for py in chapters]
        probe = {py: scratch / "full" / f"{tag}-{relative(py.with_suffix('')).replace('/', '__')}.json"
                 for py in chapters}
        params = {py: {**per_chapter[py], PROBE_PARAMETER: str(probe[py])} for py in chapters}
        step_env = {**env, "IMPLICIT_BIAS_STEP_FRACTION": repr(fraction)}
        outcomes, stopped, _ = execute_step(f"full-{tag}", jobs, params, scratch / "full" / tag / "logs",
                                            min(args.jobs, len(jobs)), left, step_env, scratch)
        status = "stopped: budget spent" if stopped else status
        for py, row in zip(chapters, rows):
            o = outcomes.get(relative(py), {"ok": None})
            cells = (read_probe(probe[py]) or {}).get("cells")
            run = {"fraction": fraction, "ok": o.get("ok"), "seconds": _round(o.get("seconds")), "cells": cells}
            if o.get("ok") is False:
                run.update(error=o.get("error", ""), where=_where(o), traceback=tail(o.get("log")))
                _keep_logs(py, scratch / "full" / tag / "logs", out / "logs" / f"full-{tag}")
            row["runs"].append(run)
    for row in rows:
        est = extrapolate_cells([r for r in row["runs"] if r.get("ok") is not None])
        if est is not None:
            row.update(extrapolated_s=_round(est["seconds"], 0), partial=est["partial"],
                       untimed_from_cell=est["untimed_from_cell"], slowest_cell=est["slowest_cell"],
                       slowest_cell_s=_round(est["slowest_cell_s"], 0), overhead_s=_round(est["overhead_s"]))
            row["steps_s"] = _round(est["steps_s"], 0)
            if row["steps_full"]:
                row["s_per_step"] = est["steps_s"] / row["steps_full"]
    record["status"] = status
    record["seconds"] = round(timeout - (deadline - time.monotonic()), 1)
    return record, rows


# ----------------------------------------------------------------------------- summary


def exit_code(summary: Mapping[str, Any]) -> int:
    chapters = summary.get("chapters", [])
    failed = any(c.get("ok") is False or c.get("ledger") in ("differs", "no ledger in the run")
                 for c in chapters)
    failed |= any(str(summary.get(k, {}).get("status", "")).startswith("failed")
                  for k in ("ci_step", "bench", "full_step"))
    if failed:
        return EXIT_FAILED
    steps = [summary.get(k, {}) for k in ("ci_step", "bench", "full_step")]
    if any(s.get("status", "done") != "done" for s in steps if s.get("status") != "not requested"):
        return EXIT_INCOMPLETE
    return EXIT_OK


def _s(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.0f} s" if x >= 10 else f"{x:.1f} s"
    return str(x)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def render_markdown(summary: Mapping[str, Any]) -> str:
    m = summary["machine"]
    lines = [f"# GPU check: {summary['verdict']}", "",
             f"{summary['date']}, {'DRY RUN on the CPU' if summary['dry_run'] else m['device_name']}"
             f" (driver {m.get('driver') or '-'}), torch {m['torch']} (CUDA {m['cuda'] or '-'}, cuDNN "
             f"{m['cudnn'] or '-'}), Python {m['python']}, {m['cpus']} CPUs; exit status "
             f"{summary['exit_code']}.", ""]
    lines += ["## Budget", "", "| step | budget | ran | status |", "|---|---|---|---|"]
    for key in ("ci_step", "bench", "full_step"):
        s = summary.get(key, {})
        lines.append(f"| {s.get('name', key)} | {_s(s.get('timeout_s'))} | {_s(s.get('seconds'))} | "
                     f"{s.get('status', '-')} |")
    lines.append(f"\nTotal: {summary['seconds']:.0f} s of {summary['budget_s']:.0f} s.\n")
    chapters = summary.get("chapters", [])
    if chapters:
        n_ok = sum(c.get("ok") is True for c in chapters)
        same = sum(c.get("ledger") == "same" for c in chapters)
        lines += ["## Chapters (profile ci, device " + summary["device"] + ")", "",
                  f"{n_ok} of {len(chapters)} ran; {same} ledgers equal the committed ones "
                  "(`implicit_bias.claims.compare`).", "",
                  "| chapter | ran | wall | ledger | claims held | device use | peak CUDA MiB |",
                  "|---|---|---|---|---|---|---|"]
        for c in chapters:
            ran = {True: "ok", False: "**FAILED**", None: "not run"}[c.get("ok")]
            held = f"{c['pass']}/{c['claims']}" if c.get("claims") else "-"
            ledger = c.get("ledger", "-")
            lines.append(f"| {c['chapter']} | {ran} | {_s(c.get('seconds'))} | "
                         f"{'**differs**' if ledger == 'differs' else ledger} | {held} | {c.get('device_use', '-')} | "
                         f"{c.get('cuda_peak_mib') if c.get('cuda_peak_mib') is not None else '-'} |")
        for c in chapters:
            if c.get("differences"):
                lines += ["", f"**{c['chapter']}**: the ledger differs from the committed one:", ""]
                lines += [f"- {p}" for p in c["differences"]]
    b = summary.get("bench", {})
    if b.get("rows"):
        lines += ["", "## Ensemble engine (benchmarks/ensemble_vs_loop.py)", "",
                  f"Peak: float32 `torch.mm` {b['peak_gflops']:.0f} GFLOP/s (TF32 "
                  f"{'on' if b.get('tf32_matmul') else 'off'}); times: {b.get('timing')}.", "",
                  "| case | E | path | s/step | GFLOP/s | of peak | vs loop | vs vmap |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in b["rows"]:
            vs_loop = "-" if r["vs_loop"] is None else f"{r['vs_loop']:.1f}x" + (
                f" (loop from E={r['loop_from']})" if r["loop_from"] else "")
            vs_vmap = "-" if r["vs_vmap"] is None else f"{r['vs_vmap']:.1f}x"
            lines.append(f"| {r['case']} | {r['members']} | {r['path']} | {r['s_per_step']:.2e} | "
                         f"{r['gflops']:.1f} | {r['of_peak']:.0%} | {vs_loop} | {vs_vmap} |")
    for run in b.get("runs", []):
        if run.get("output"):
            lines += ["", f"Benchmark `{' '.join(run['args'])}` {run['status']}:", "", "```text",
                      run["output"], "```"]
    full = summary.get("full", [])
    if full:
        lines += ["", "## Profile full, capped (timing runs)", "",
                  "Every step count of the `full` profile times the fraction; each cell's time "
                  "extrapolated linearly to fraction 1 (`extrapolate_cells`).", "",
                  "| chapter | runs (fraction: wall) | steps in full | s per step | steps at full | "
                  "full, extrapolated | slowest cell |", "|---|---|---|---|---|---|---|"]
        for row in full:
            runs = ", ".join(f"{r['fraction']:g}: " + (_s(r.get("seconds")) if r.get("ok") else
                                                      (f"stopped ({_s(r.get('seconds'))})" if r.get("ok") is False
                                                       else "not run"))
                             for r in row["runs"])
            sps = f"{row['s_per_step']:.2e}" if row.get("s_per_step") is not None else "-"
            est = _duration(row.get("extrapolated_s"))
            if row.get("partial"):
                est += (f" (partial: cells from [{row['untimed_from_cell']}] not timed)"
                        if row.get("untimed_from_cell") else " (partial)")
            slow = (f"[{row['slowest_cell']}] {_duration(row.get('slowest_cell_s'))}"
                    if row.get("slowest_cell") is not None else "-")
            lines.append(f"| {row['chapter']} | {runs} | {row['steps_full']} | {sps} | "
                         f"{_duration(row.get('steps_s'))} | {est} | {slow} |")
    failures = [(c["chapter"], c) for c in chapters if c.get("ok") is False]
    stopped = [(f"{row['chapter']} (full, steps x{r['fraction']:g})", r) for row in full for r in row["runs"]
               if r.get("ok") is False]
    if failures:
        lines += ["", "## Failures"]
        for name, c in failures:
            lines += ["", f"### {name}", "", f"{c.get('where') or ''}: {c.get('error', '')}", "",
                      "```text", c.get("traceback") or "(no traceback file)", "```"]
    if stopped:
        lines += ["", "## Timing runs that stopped", "",
                  "A run with scaled steps may stop in analysis that assumes results the full steps "
                  "would give (converged runs, say); the cells before it are timed, the check does not "
                  "fail for it. A stop in training, or in every fraction at a cell unrelated to "
                  "convergence, deserves a look."]
        for name, c in stopped:
            lines += ["", f"### {name}", "", f"{c.get('where') or ''}: {c.get('error', '')}", "",
                      "```text", c.get("traceback") or "(no traceback file)", "```"]
    if summary.get("problems"):
        lines += ["", "## Problems", ""]
        for p in summary["problems"]:
            lines += [f"- {p}"] if "\n" not in p else ["```text", p, "```"]
    return "\n".join(lines) + "\n"


def render_time_table(summary: Mapping[str, Any], root: Path | None = None) -> str:
    """The table of ``book/how_to_run.md`` ("How long it takes"), from a summary: per part, the
    measured ci time on the GPU, and the ``full`` time: extrapolated from the timing runs where
    there were some, else a lower bound (the chapter's ci time on the GPU times the largest
    scale-up of one count from ci to full, :func:`implicit_bias.book.estimate.scale_up`)."""
    from implicit_bias.book.estimate import scale_up
    from implicit_bias.book.sources import ROOT, profile_settings

    root = root or ROOT
    m = summary["machine"]
    full = {row["chapter"]: row for row in summary.get("full", [])}
    parts: dict[str, dict[str, Any]] = {}
    chapters = list(summary.get("chapters", []))
    ci_names = {c["chapter"] for c in chapters}
    chapters += [{"chapter": name, "ok": None} for name in full if name not in ci_names]
    for c in chapters:
        part = c["chapter"].split("/")[1] if c["chapter"].startswith("chapters/") else c["chapter"]
        p = parts.setdefault(part, {"n": 0, "ci": 0.0, "ci_missing": 0, "measured": 0.0, "bound": 0.0,
                                    "n_measured": 0, "n_bound": 0, "unknown": 0})
        p["n"] += 1
        if c.get("ok") and c.get("seconds") is not None:
            p["ci"] += c["seconds"]
            p["n_ci"] = p.get("n_ci", 0) + 1
        elif c["chapter"] in ci_names:
            p["ci_missing"] += 1
        row = full.get(c["chapter"])
        if row and row.get("extrapolated_s") is not None:
            p["measured"] += row["extrapolated_s"]
            p["n_measured"] += 1
            p["n_partial"] = p.get("n_partial", 0) + bool(row.get("partial"))
        elif c.get("ok") and c.get("seconds") is not None and (root / c["chapter"]).exists():
            scale, _ = scale_up(profile_settings(root / c["chapter"]))
            p["bound"] += c["seconds"] * scale
            p["n_bound"] += 1
        else:
            p["unknown"] += 1
    date = summary["date"][:10]
    lines = [f"Measured on {m['device_name']} on {date} (torch {m['torch']}, CUDA {m['cuda'] or '-'}) "
             f"by `make gpu-check`: the ci column is the wall time of each part's chapters on the GPU, "
             f"one after another (the check ran {summary.get('jobs', 1)} at a time); the full column "
             "adds the times extrapolated from timing runs of the full profile (chapters marked "
             "*measured*) and, for the others, a lower bound: the chapter's ci time on the GPU times "
             "the largest scale-up of one count from ci to full.", "",
             "| part | chapters | ci on the GPU | full: extrapolated (measured) | full: lower bound (others) |",
             "|---|---|---|---|---|"]
    for part, p in parts.items():
        ci = (_duration(p["ci"]) if p.get("n_ci") else "-") + (f" ({p['ci_missing']} failed or not run)"
                                                              if p["ci_missing"] else "")
        partial = f", {p['n_partial']} of them partial" if p.get("n_partial") else ""
        meas = f"{_duration(p['measured'])} ({p['n_measured']} measured{partial})" if p["n_measured"] else "-"
        bound = f">= {_duration(p['bound'])} ({p['n_bound']} chapters)" if p["n_bound"] else "-"
        if p["unknown"]:
            bound += f", {p['unknown']} unknown"
        lines.append(f"| {part} | {p['n']} | {ci} | {meas} | {bound} |")
    return "\n".join(lines) + "\n"


def update_how_to_run(table: str, page: Path) -> bool:
    """Replace the text between the page's gpu-check markers with ``table``; False when the page
    has no markers."""
    text = page.read_text()
    if TABLE_BEGIN not in text or TABLE_END not in text:
        return False
    head, rest = text.split(TABLE_BEGIN, 1)
    _, after = rest.split(TABLE_END, 1)
    page.write_text(head + TABLE_BEGIN + "\n" + table + TABLE_END + after)
    return True


def write_summary(summary: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / SUMMARY_JSON).write_text(json.dumps(summary, indent=1, default=str) + "\n")
    (out / SUMMARY_MD).write_text(render_markdown(summary))
    if summary.get("chapters") or summary.get("full"):
        (out / TABLE_MD).write_text(render_time_table(summary))


# ----------------------------------------------------------------------------- main


def kernel_smoke_test(scratch: Path, env: Mapping[str, str], device: str) -> str | None:
    """Start one kernel as the steps will, run one cell; None when it works, else why not."""
    os.environ.update(env)
    from implicit_bias.book.execute import execute_one

    py = scratch / "smoke" / "kernel_smoke.py"
    py.parent.mkdir(parents=True, exist_ok=True)
    check = "import torch\nprint(torch.cuda.is_available())\n" if device != "cpu" else ""
    py.write_text(f"# %%\nimport sys\nimport implicit_bias\nprint(sys.executable)\n{check}")
    o = execute_one(str(py), str(py.with_suffix(".ipynb")), {}, str(scratch / "smoke"), timeout=120)
    if not o.ok:
        return f"a kernel cannot run a cell: {o.error} (log: {o.log}; kernel log next to it)"
    import nbformat

    text = "".join(x.get("text", "") for c in nbformat.read(py.with_suffix(".ipynb"), as_version=4).cells
                   for x in c.get("outputs", []))
    if sys.executable not in text:
        return f"the kernel runs another Python than this one: {text.strip()!r} (expected {sys.executable})"
    if device != "cpu" and "True" not in text:
        return "torch inside the kernel sees no CUDA GPU (CUDA_VISIBLE_DEVICES?)"
    return None


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="See the module docstring (python benchmarks/gpu_check.py --help-long).")
    ap.add_argument("--out", default="_build/gpu-check/out", help="folder of the summary (default %(default)s)")
    ap.add_argument("--dry-run", action="store_true", help="device=cpu: check the plumbing without a GPU")
    ap.add_argument("--jobs", type=int, default=None,
                    help=f"chapters at a time (default: min(12, CPUs) on a GPU, {DRY_JOBS} in a dry run)")
    ap.add_argument("--chapters", nargs="*", default=None,
                    help=f"chapters of step ci (default: all; dry run {' '.join(DRY_CHAPTERS)}; paths or "
                         "name fragments)")
    ap.add_argument("--full-chapters", nargs="*", default=None,
                    help=f"chapters of step full (default: {' '.join(FULL_CHAPTERS)}; dry run "
                         f"{' '.join(DRY_FULL_CHAPTERS)})")
    ap.add_argument("--fractions", type=float, nargs="+", default=None,
                    help=f"step fractions of step full (default {FRACTIONS}; dry run {DRY_FRACTIONS})")
    ap.add_argument("--skip", nargs="*", default=[], choices=STEPS, help="steps not to run")
    ap.add_argument("--budget", type=float, default=None,
                    help=f"seconds for the whole check (default {TOTAL_BUDGET:g}; dry run {DRY_TOTAL_BUDGET:g})")
    for step in STEPS:
        ap.add_argument(f"--budget-{step}", type=float, default=None,
                        help=f"seconds for step {step} (default {STEP_BUDGETS[step]:g}; dry run "
                             f"{DRY_STEP_BUDGETS[step]:g})")
    ap.add_argument("--render-table", metavar="JSON", help="only print the how_to_run table of a summary")
    ap.add_argument("--update-how-to-run", action="store_true",
                    help="with --render-table: write the table into book/how_to_run.md between its markers")
    ap.add_argument("--help-long", action="store_true", help="print the module docstring")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.device = "cpu" if args.dry_run else "cuda"
    if args.jobs is None:
        args.jobs = min(DRY_JOBS, os.cpu_count() or 1) if args.dry_run else max(1, min(12, os.cpu_count() or 1))
    if args.budget is None:
        args.budget = DRY_TOTAL_BUDGET if args.dry_run else TOTAL_BUDGET
    for step in STEPS:
        if getattr(args, f"budget_{step}") is None:
            setattr(args, f"budget_{step}", (DRY_STEP_BUDGETS if args.dry_run else STEP_BUDGETS)[step])
    if args.chapters is None and args.dry_run:
        args.chapters = list(DRY_CHAPTERS)
    if args.full_chapters is None:
        args.full_chapters = list(DRY_FULL_CHAPTERS if args.dry_run else FULL_CHAPTERS)
    if args.fractions is None:
        args.fractions = list(DRY_FRACTIONS if args.dry_run else FRACTIONS)
    if any(not 0 < f <= 1 for f in args.fractions):
        ap.error("--fractions must lie in (0, 1]")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.help_long:
        print(__doc__)
        return EXIT_OK
    if args.child:
        return child_main(args.child)
    if not _importable("implicit_bias") and LIB.is_dir():  # run from a checkout without install
        sys.path.insert(0, str(LIB))
    if args.render_table:
        summary = json.loads(Path(args.render_table).read_text())
        table = render_time_table(summary)
        if args.update_how_to_run:
            from implicit_bias.book.sources import ROOT

            page = ROOT / "book" / "how_to_run.md"
            if not update_how_to_run(table, page):
                print(f"error: {page} has no gpu-check markers", file=sys.stderr)
                return EXIT_CANNOT_START
            print(f"wrote the table into {page}")
        else:
            print(table, end="")
        return EXIT_OK
    budget = Budget(args.budget)
    os.environ.pop("IMPLICIT_BIAS_STEP_FRACTION", None)  # only the timing runs scale their steps
    problems = import_problems()
    if problems:
        print(missing_message(problems), file=sys.stderr)
        return EXIT_CANNOT_START
    import torch

    if not args.dry_run and not torch.cuda.is_available():
        build = f"built with CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
        print(NO_GPU.format(torch=torch.__version__, build=build), file=sys.stderr)
        return EXIT_CANNOT_START
    from implicit_bias.book.sources import ROOT, resolve_chapters

    try:
        chapters = [*resolve_chapters(args.chapters or []), *resolve_chapters(args.full_chapters)]
    except SystemExit as err:  # a name that matches no chapter: the message lists them
        print(f"error: {err}", file=sys.stderr)
        return EXIT_CANNOT_START
    problems = import_problems(chapter_imports(chapters))
    if problems:
        print(missing_message(problems), file=sys.stderr)
        return EXIT_CANNOT_START
    out = Path(args.out).resolve()
    scratch = ROOT / "_build" / "gpu-check"
    scratch.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out / "logs", ignore_errors=True)
    env = prepare_environment(scratch)
    summary: dict[str, Any] = {
        "check": "gpu-check", "version": 1, "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "dry_run": args.dry_run, "device": args.device, "jobs": args.jobs, "budget_s": args.budget,
        "machine": machine_info(args.dry_run), "problems": [], "argv": list(argv or sys.argv[1:]),
    }
    pins = pinned_versions(ROOT / "requirements.txt")
    for name, have in summary["machine"]["versions"].items():
        if have and pins.get(name) and have.split("+")[0] != pins[name]:
            summary["problems"].append(f"{name} {have} here, {pins[name]} pinned (requirements.txt)")
    print(f"GPU check on {summary['machine']['device_name']}: torch {torch.__version__}, "
          f"budget {args.budget:.0f} s, output {out}", flush=True)
    code = EXIT_FAILED
    try:
        why = kernel_smoke_test(scratch, env, args.device)
        if why:
            print(f"error: {why}", file=sys.stderr)
            summary["problems"].append(why)
            summary["verdict"], summary["exit_code"] = "could not start", EXIT_CANNOT_START
            return EXIT_CANNOT_START
        for key, step in (("ci_step", "ci"), ("bench", "bench"), ("full_step", "full")):
            summary[key] = {"name": step, "status": "not requested"}
        if "ci" not in args.skip:
            summary["ci_step"], summary["chapters"] = step_ci(args, budget, env, scratch, out)
        if "bench" not in args.skip:
            summary["bench"] = step_bench(args, budget, env, scratch)
        if "full" not in args.skip:
            summary["full_step"], summary["full"] = step_full(args, budget, env, scratch, out)
        code = exit_code(summary)
    except Exception:  # a bug of the check itself: the summary keeps its traceback
        import traceback

        summary["problems"].append("the check itself failed:\n" + traceback.format_exc())
        print(summary["problems"][-1], file=sys.stderr)
        code = EXIT_FAILED
    finally:
        summary["seconds"] = round(args.budget - budget.left(), 1)
        summary.setdefault("exit_code", code)
        summary.setdefault("verdict", {EXIT_OK: "passed", EXIT_FAILED: "FAILED",
                                       EXIT_INCOMPLETE: "incomplete (budget spent)"}.get(code, "FAILED"))
        write_summary(summary, out)
        print(f"\n{summary['verdict']} (exit {summary['exit_code']}); summary: {out / SUMMARY_MD}", flush=True)
    return summary["exit_code"]


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


if __name__ == "__main__":
    sys.exit(main())
