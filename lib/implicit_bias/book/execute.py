"""Executing chapters with papermill: one at a time or in parallel jobs (one GPU each), never
raising, every failure reported with its cell and traceback file.

The kernel's own process output (its log lines, and the ZMQ tracebacks a kernel prints when it is
stopped in the middle of a cell) goes to ``<log dir>/<chapter>.kernel.log``, not to the terminal;
what the chapter's cells print is in the executed notebook, as usual.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import traceback
from collections.abc import Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from .common import Outcome, Task, print_outcome
from .portable import record_kernels
from .sources import relative, strip_volatile, synced_notebook


def _kernel_manager_logging_to(log_path: Path) -> type:
    """A kernel manager whose kernel process writes its own stdout/stderr to ``log_path``."""
    from jupyter_client import AsyncKernelManager

    class LoggedKernelManager(AsyncKernelManager):
        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            with open(log_path, "ab") as log:  # the kernel keeps its own copy of the descriptor
                kw.setdefault("stdout", log)
                kw.setdefault("stderr", log)
                await super()._async_launch_kernel(kernel_cmd, **kw)

    return LoggedKernelManager


def execute_one(py: str, output: str, parameters: dict[str, Any], log_dir: str,
                gpu: str | None = None, strip: bool = False, timeout: int | None = None,
                template: str | None = None) -> Outcome:
    """Execute one chapter with papermill into ``output``; never raises (failures are reported).

    The notebook executed is the ``.py``'s, with the cell ids of ``template`` (default: the paired
    ``.ipynb`` next to the ``.py``, when there is one), so re-executing an unchanged chapter
    rewrites no ids.
    """
    import nbformat
    import papermill as pm

    from ..runtime import QUIET_ENV

    os.environ.setdefault(QUIET_ENV, "1")
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    if gpu is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpu
    src = Path(py)
    rel = relative(src)
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    logs = Path(log_dir)
    kernel_log = logs / (src.stem + ".kernel.log")
    kernel_log.unlink(missing_ok=True)
    start = time.perf_counter()
    template_path = Path(template) if template else src.with_suffix(".ipynb")
    existing = nbformat.read(template_path, as_version=4) if template_path.exists() else None
    nb_in = synced_notebook(src, existing)
    for cell in nb_in.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    with tempfile.TemporaryDirectory() as tmp:
        inp = Path(tmp) / src.with_suffix(".ipynb").name
        nbformat.write(nb_in, inp)
        tmp_out = Path(tmp) / ("out-" + inp.name)
        detail = ""
        try:
            pm.execute_notebook(
                str(inp), str(tmp_out), parameters=parameters or None, cwd=str(src.parent),
                kernel_name="python3", progress_bar=False, log_output=False,
                execution_timeout=timeout, kernel_manager_class=_kernel_manager_logging_to(kernel_log),
            )
            ok, err, more = True, "", ""
        except Exception as exc:  # papermill raises PapermillExecutionError with the cell
            ok = False
            err = _error_line(exc, timeout)
            more = _error_rest(exc)
            tb = getattr(exc, "traceback", None)
            detail = "\n".join(tb) if tb else traceback.format_exc()
        seconds = time.perf_counter() - start
        log = None
        where: tuple[int | None, int | None, int | None, str] = (None, None, None, "")
        if tmp_out.exists():
            nb = nbformat.read(tmp_out, as_version=4)
            if not ok:
                where = _failed_cell(nb)
            if strip:
                strip_volatile(nb)
                record_kernels(nb)  # which CPU kernels wrote the committed outputs (portable.py)
            target = out if ok else logs / out.name
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, target)
        if not ok:
            logs.mkdir(parents=True, exist_ok=True)
            log_file = logs / (src.stem + ".traceback.txt")
            log_file.write_text(_strip_ansi(detail))
            log = str(log_file)
    count, index, n_cells, line = where
    return Outcome(rel, str(out), ok, seconds, count, err, log, index, n_cells, line, more)


def _error_line(exc: BaseException, timeout: int | None) -> str:
    name = getattr(exc, "ename", type(exc).__name__)
    if name == "CellTimeoutError" or type(exc).__name__ == "CellTimeoutError":
        return f"CellTimeoutError: the cell ran longer than the timeout of {timeout} s (--timeout)"
    if name == "DeadKernelError" or type(exc).__name__ == "DeadKernelError":
        return ("DeadKernelError: the kernel died (out of memory? see the kernel log "
                "next to the traceback file)")
    value = str(getattr(exc, "evalue", exc)).strip().splitlines()
    return f"{name}: {value[0] if value else ''}"


def _error_rest(exc: BaseException, max_lines: int = 8) -> str:
    """The lines of the error message after its first: where a chapter's error says what to do
    (a missing data file: where to put it, or ``-p allow_fallback True``), the terminal shows it."""
    lines = [ln for ln in str(getattr(exc, "evalue", "") or "").strip().splitlines()[1:] if ln.strip()]
    if len(lines) > max_lines:
        lines = lines[:max_lines] + ["... (the rest is in the traceback file)"]
    return "\n".join(lines)


def _failed_cell(nb: Any) -> tuple[int | None, int | None, int | None, str]:
    """``(execution count, index among the chapter's code cells, their number, first line)`` of
    the cell where a run stopped: the cell papermill marked as failed, else (a timeout, a dead
    kernel) the last cell that started."""
    code = [c for c in nb.cells if c.cell_type == "code"
            and "injected-parameters" not in c.metadata.get("tags", [])]
    failed = None
    for cell in code:
        meta = cell.metadata.get("papermill", {})
        if meta.get("exception"):
            failed = cell
            break
        if meta.get("start_time"):
            failed = cell
    if failed is None:
        return None, None, len(code), ""
    first = next((ln for ln in failed.source.splitlines() if ln.strip()), "")
    first = first if len(first) <= 60 else first[:57] + "..."
    return failed.get("execution_count"), code.index(failed) + 1, len(code), first


def _strip_ansi(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def execute_many(jobs: list[tuple[Path, Path]], parameters: dict[str, Any], log_dir: Path,
                 n_jobs: int = 1, strip: bool = False, timeout: int | None = None,
                 per_chapter: Mapping[Path, dict[str, Any]] | None = None,
                 executor: Any = None) -> list[Outcome]:
    """Execute chapters (``(source, output)`` pairs), ``n_jobs`` at a time; with several GPUs,
    each job sees one (round robin over ``CUDA_VISIBLE_DEVICES``). ``per_chapter`` maps a source
    to its own parameters (as checked by :func:`.params.plan`); others get ``parameters``.
    ``executor`` (an :class:`.executors.SlurmExecutor`) runs them as cluster jobs instead."""
    from tqdm import tqdm

    def params_of(py: Path) -> dict[str, Any]:
        return dict(per_chapter[py]) if per_chapter is not None and py in per_chapter else parameters

    if executor is not None:
        return executor.run([Task(py, out, params_of(py), log_dir) for py, out in jobs],
                            strip=strip, timeout=timeout)

    gpus = _gpu_ids() if n_jobs > 1 else []
    outcomes: list[Outcome] = []
    bar = tqdm(total=len(jobs), desc="chapters", unit="chapter", file=sys.stdout,
               disable=not sys.stdout.isatty())
    if n_jobs <= 1:
        for py, out in jobs:
            bar.set_postfix_str(py.stem)
            outcomes.append(execute_one(str(py), str(out), params_of(py), str(log_dir), None, strip, timeout))
            print_outcome(outcomes[-1])
            bar.update()
    else:
        with ProcessPoolExecutor(max_workers=n_jobs) as pool:
            futures = [
                pool.submit(execute_one, str(py), str(out), params_of(py), str(log_dir),
                            gpus[i % len(gpus)] if gpus else None, strip, timeout)
                for i, (py, out) in enumerate(jobs)
            ]
            for fut in as_completed(futures):
                outcomes.append(fut.result())
                print_outcome(outcomes[-1])
                bar.update()
    bar.close()
    order = {relative(py): i for i, (py, _) in enumerate(jobs)}
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


def print_failures(outcomes: Iterable[Outcome]) -> int:
    """Print the failed chapters with the failing cell and the traceback file; return their count."""
    failed = [o for o in outcomes if not o.ok]
    if failed:
        print(f"\n{len(failed)} chapter(s) failed:")
        for o in failed:
            print(f"  {o.chapter}: {o.where()}: {o.error}")
            for line in o.more.splitlines():
                print(f"    {line}")
            print(f"    traceback: {relative(Path(o.log)) if o.log else '-'}")
    return len(failed)
