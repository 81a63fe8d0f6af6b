"""Executing chapters with papermill: one at a time or in parallel jobs (one GPU each), never
raising, every failure reported with its cell and traceback file."""

from __future__ import annotations

import os
import sys
import tempfile
import time
import traceback
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..runtime import QUIET_ENV
from .sources import ROOT, notebook_from_source, strip_volatile


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
