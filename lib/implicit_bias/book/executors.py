"""Where chapters run: ``local`` (this machine, a process pool: :func:`.execute.execute_many`) or
``slurm`` (a SLURM cluster: one job per chapter, or per chapter and seed of a sweep, submitted
with ``submitit`` as one job array).

``make book``, ``make seeds`` and ``make execute`` take ``EXECUTOR=local`` (the default) or
``EXECUTOR=slurm``; ``SLURM_ARGS`` passes the options below to the command line. With ``slurm``
the results come back as in local mode: executed notebooks where local mode writes them, a
failure page and a traceback file for each failed chapter (naming its SLURM job and that job's
log), the same lines per chapter and the same summary. The site is built once every job has
ended. Ctrl-C cancels the jobs still queued or running (``scancel``).

**Settings** of the jobs, each taken from the first of these that sets it:

1. the command line: ``--partition``, ``--time``, ``--gpus``, ``--cpus``, ``--mem``,
   ``--sbatch`` (repeatable), ``--max-running``;
2. the environment: ``IMPLICIT_BIAS_SLURM_PARTITION``, ``..._TIME``, ``..._GPUS``, ``..._CPUS``,
   ``..._MEM``, ``..._SBATCH`` (options, split like a shell line), ``..._SETUP`` (one shell
   line run before the job), ``..._MAX_RUNNING``;
3. the table ``[tool.implicit_bias.slurm]`` of the book's ``pyproject.toml`` (keys
   ``partition``, ``time``, ``gpus``, ``cpus``, ``mem``, ``sbatch`` (a list), ``setup`` (a
   list of shell lines), ``max_running``);
4. the defaults: the cluster's default partition and memory, 2 CPUs, and for profile ``ci``
   60 minutes without a GPU, for the other profiles 12 hours with one GPU.

A time is minutes (``90``) or one of SLURM's formats (``2:00:00``, ``1-12:00:00``). The settings
are checked with ``sbatch --test-only`` before anything is staged or submitted: an unknown
partition, a missing ``sbatch`` or an option sbatch refuses stops at once with sbatch's own
words, the settings and where each came from, and what to change.

**Time limits.** A chapter job is requeued when SLURM warns it that its time is up (submitit's
checkpointing, at most 3 times): the chapter runs again from its first cell, and the results it
stored with :func:`implicit_bias.cache.cached` are loaded instead of computed, so a long run
resumes after its last stored segment. A job that ends without a result (cancelled, out of
memory, out of requeues) becomes a failed chapter.

**Current outputs are not redone.** An executed notebook written by a SLURM job records (in its
metadata, ``implicit_bias.run``) the hash of what it was computed from: the chapter's ``.py``,
the library's sources (:func:`implicit_bias.cache.library_fingerprint`), the parameters (profile
included) and the versions of torch and Python (not the data sets, which are read-only inputs).
A notebook is *current* when that hash equals the hash of the same things now; ``book``, ``seeds`` and ``execute --out-dir`` with
``--executor slurm`` keep current notebooks and submit only the other chapters (``--rerun``
submits every chapter). Execution in place (the committed notebooks) always re-executes.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .common import Outcome, Task, print_outcome
from .execute import execute_one
from .sources import ROOT, relative

EXECUTORS = ("local", "slurm")
ENV_PREFIX = "IMPLICIT_BIAS_SLURM_"
PYPROJECT_TABLE = "tool.implicit_bias.slurm"
RUN_KEY = "run"  # notebook metadata implicit_bias.run: what an executed notebook was computed from
SETTINGS = ("partition", "time", "gpus", "cpus", "mem", "sbatch", "setup", "max_running")
# job states after which a job will not run again (squeue's long names)
FINAL_STATES = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
                "BOOT_FAIL", "DEADLINE", "PREEMPTED", "SPECIAL_EXIT", "REVOKED"}


class ExecutorError(Exception):
    """Settings or a cluster that cannot run the chapters; the message says what to do."""


# --------------------------------------------------------------------------- tasks and "current"


def inputs_hash(py: Path, params: Mapping[str, Any]) -> str:
    """``sha256`` of what an executed chapter is computed from: its source, the library's
    sources, its parameters and the versions of torch and Python (see the module docstring)."""
    from importlib.metadata import version

    from .. import cache

    blob = json.dumps({"chapter": hashlib.sha256(Path(py).read_bytes()).hexdigest(),
                       "library": cache.library_fingerprint(), "parameters": dict(params),
                       "torch": version("torch"),
                       "python": f"{sys.version_info.major}.{sys.version_info.minor}"},
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def recorded_inputs(notebook: Path) -> str | None:
    """The inputs hash an executed notebook records (None: not recorded, or not a notebook)."""
    import nbformat

    try:
        nb = nbformat.read(notebook, as_version=4)
    except Exception:
        return None
    return nb.metadata.get("implicit_bias", {}).get(RUN_KEY, {}).get("inputs")


def is_current(task: Task) -> bool:
    """Whether ``task.out`` was executed from exactly the sources and parameters of now."""
    return task.out.exists() and recorded_inputs(task.out) == inputs_hash(task.py, task.params)


def record_inputs(notebook: Path, inputs: str, job: str | None) -> None:
    """Write into an executed notebook what it was computed from (and by which SLURM job)."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    meta = nb.metadata.setdefault("implicit_bias", {})
    meta[RUN_KEY] = {"inputs": inputs, **({"slurm_job": job} if job else {})}
    nbformat.write(nb, notebook)


# --------------------------------------------------------------------------- the job


def _job_id() -> str | None:
    try:
        import submitit

        return str(submitit.JobEnvironment().job_id)
    except Exception:  # not inside a submitit job
        return None


class ChapterJob:
    """What one job runs: :func:`.execute.execute_one`, then (unless executing in place) the
    record of its inputs. Checkpointable in submitit's sense (it has a ``checkpoint`` method, as
    ``submitit.helpers.Checkpointable`` does): when SLURM signals the end of the time limit,
    submitit requeues the job with the same arguments, and the chapter's cache makes the rerun
    resume."""

    def __call__(self, py: str, out: str, params: dict[str, Any], log_dir: str, strip: bool,
                 timeout: int | None) -> Outcome:
        inputs = None if strip else inputs_hash(Path(py), params)
        outcome = execute_one(py, out, params, log_dir, None, strip, timeout)
        if outcome.ok and inputs is not None:
            record_inputs(Path(out), inputs, _job_id())
        return outcome

    def checkpoint(self, *args: Any, **kwargs: Any) -> Any:
        """The same call again (submitit requeues it)."""
        from submitit.helpers import DelayedSubmission

        return DelayedSubmission(self, *args, **kwargs)


# --------------------------------------------------------------------------- settings


def parse_minutes(text: str | int) -> int:
    """Minutes of a SLURM time: ``90``, ``MM:SS``, ``H:MM:SS``, ``D-H``, ``D-H:MM``, ``D-H:MM:SS``
    (seconds round up)."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 1:
            raise ValueError(text)
        return text
    s = str(text).strip()
    m = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", s)
    if not m:
        raise ValueError(s)
    days, a, b, c = m.groups()
    if days is not None:  # D-H[:MM[:SS]]
        seconds = int(days) * 86400 + int(a) * 3600 + int(b or 0) * 60 + int(c or 0)
    elif c is not None:  # H:MM:SS
        seconds = int(a) * 3600 + int(b) * 60 + int(c)
    elif b is not None:  # MM:SS
        seconds = int(a) * 60 + int(b)
    else:
        seconds = int(a) * 60
    minutes = -(-seconds // 60)
    if minutes < 1:
        raise ValueError(s)
    return minutes


def _sbatch_options(options: Sequence[str]) -> dict[str, Any]:
    """``["--qos=high", "exclusive"]`` as submitit's ``additional_parameters``
    (``{"qos": "high", "exclusive": True}``)."""
    out: dict[str, Any] = {}
    for opt in options:
        body = opt.strip().lstrip("-")
        if not body or (opt.strip().startswith("-") and not opt.strip().startswith("--")):
            raise ExecutorError(f"sbatch option {opt!r}: write long options, e.g. --qos=high or "
                                "qos=high (not -q high)")
        key, sep, value = body.partition("=")
        out[key] = value if sep else True
    return out


@dataclass
class SlurmSettings:
    """The resources and options of every chapter job (see the module docstring), with where
    each setting came from (``origin``: 'command line', an environment variable, pyproject.toml,
    'default')."""

    partition: str | None = None
    time: int = 60
    gpus: int = 0
    cpus: int = 2
    mem: str | None = None
    sbatch: list[str] = field(default_factory=list)
    setup: list[str] = field(default_factory=list)
    max_running: int | None = None
    origin: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        """The settings and their origins, one per line, for messages."""
        def shown(key: str) -> str:
            value = getattr(self, key)
            if key == "time":
                return f"{value} min"
            if value in (None, []):
                return "(cluster default)" if key in ("partition", "mem") else "(none)"
            return " ".join(value) if isinstance(value, list) else str(value)

        return "\n".join(f"  {key:11s} {shown(key):28s} from {self.origin.get(key, 'default')}"
                         for key in SETTINGS)

    def submitit_parameters(self) -> dict[str, Any]:
        """The parameters of ``submitit.SlurmExecutor.update_parameters``."""
        params: dict[str, Any] = {"time": self.time, "cpus_per_task": self.cpus,
                                  "job_name": "implicit-bias-book"}
        if self.partition:
            params["partition"] = self.partition
        if self.gpus:
            params["gpus_per_node"] = self.gpus
        if self.mem:
            params["mem"] = self.mem
        if self.sbatch:
            params["additional_parameters"] = _sbatch_options(self.sbatch)
        if self.setup:
            params["setup"] = list(self.setup)
        if self.max_running:
            params["array_parallelism"] = self.max_running
        return params


def _pyproject_table(root: Path) -> dict[str, Any]:
    import tomllib

    path = root / "pyproject.toml"
    if not path.exists():
        return {}
    table: Any = tomllib.loads(path.read_text())
    for part in PYPROJECT_TABLE.split("."):
        table = table.get(part, {}) if isinstance(table, dict) else {}
    unknown = sorted(set(table) - set(SETTINGS))
    if unknown:
        raise ExecutorError(f"pyproject.toml [{PYPROJECT_TABLE}]: unknown key(s) {', '.join(unknown)}; "
                            f"the keys are {', '.join(SETTINGS)}")
    return dict(table)


def slurm_settings(cli: Mapping[str, Any], profile: str, env: Mapping[str, str] | None = None,
                   root: Path = ROOT) -> SlurmSettings:
    """The settings of the jobs: each from the command line (``cli``, None where not given), else
    the environment, else ``[tool.implicit_bias.slurm]`` in ``root/pyproject.toml``, else the
    defaults (which depend on ``profile``). Raises :class:`ExecutorError` on a bad value."""
    env = os.environ if env is None else env
    table = _pyproject_table(root)
    defaults: dict[str, Any] = {"partition": None, "time": 60 if profile == "ci" else 720,
                                "gpus": 0 if profile == "ci" else 1, "cpus": 2, "mem": None,
                                "sbatch": [], "setup": [], "max_running": None}
    values: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for key in SETTINGS:
        var = ENV_PREFIX + key.upper()
        if cli.get(key) not in (None, []):
            values[key], origin[key] = cli[key], "the command line"
        elif env.get(var, "").strip():
            raw = env[var].strip()
            values[key] = (shlex.split(raw) if key == "sbatch" else [raw] if key == "setup" else raw)
            origin[key] = f"${var}"
        elif key in table:
            values[key], origin[key] = table[key], f"pyproject.toml [{PYPROJECT_TABLE}]"
        else:
            values[key] = defaults[key]
            origin[key] = "default" + (f" for profile {profile}" if key in ("time", "gpus") else "")

    def bad(key: str, what: str) -> ExecutorError:
        return ExecutorError(f"slurm setting {key}={values[key]!r} (from {origin[key]}): {what}")

    try:
        values["time"] = parse_minutes(values["time"])
    except (ValueError, TypeError):
        raise bad("time", "write minutes (90) or a SLURM time (2:00:00, 1-12:00:00)")
    for key, low in (("gpus", 0), ("cpus", 1), ("max_running", 1)):
        if values[key] is None:
            continue
        try:
            values[key] = int(values[key])
            if values[key] < low or isinstance(values[key], bool):
                raise ValueError
        except (ValueError, TypeError):
            raise bad(key, f"expected an integer >= {low}")
    if values["mem"] is not None:
        values["mem"] = str(values["mem"]).strip()
        if not re.fullmatch(r"\d+[KMGT]?", values["mem"], re.IGNORECASE):
            raise bad("mem", "write a size such as 16G or 16000M (per job)")
    for key in ("sbatch", "setup"):
        if isinstance(values[key], str):
            values[key] = shlex.split(values[key]) if key == "sbatch" else [values[key]]
        if not isinstance(values[key], list) or not all(isinstance(v, str) for v in values[key]):
            raise bad(key, "expected a list of strings")
    _sbatch_options(values["sbatch"])  # checks their form
    if values["partition"] is not None:
        values["partition"] = str(values["partition"]).strip() or None
    return SlurmSettings(**values, origin=origin)


# --------------------------------------------------------------------------- the executor


class SlurmExecutor:
    """Chapters as SLURM jobs through ``submitit`` (``cluster="local"``: submitit's local
    executor, jobs as processes of this machine, for tests without a scheduler).

    ``reuse``: keep executed notebooks that are current (:func:`is_current`) instead of
    submitting their chapters again. ``poll``: seconds between two looks at the jobs."""

    name = "slurm"

    def __init__(self, settings: SlurmSettings, *, reuse: bool = True, cluster: str = "slurm",
                 poll: float = 2.0, max_queue_interval: float = 30.0) -> None:
        self.settings = settings
        self.reuse = reuse
        self.cluster = cluster
        self.poll = poll
        self.max_queue_interval = max_queue_interval  # squeue: at most every this many seconds
        self._labels: dict[int, str] = {}  # what tells apart tasks of one chapter (a sweep's seeds)

    # ------------------------------------------------------------------ checks before anything runs

    def check(self, profile: str) -> None:
        """Raise :class:`ExecutorError` (saying what to do) unless this cluster accepts the jobs:
        ``sbatch`` on PATH, the controller reachable, ``sbatch --test-only`` content with the
        settings. Nothing is submitted."""
        if self.cluster != "slurm":
            return
        advice = ("set them on the command line (make ... SLURM_ARGS='--partition NAME --time 2:00:00'), "
                  f"in {ENV_PREFIX}* variables, or in [{PYPROJECT_TABLE}] of pyproject.toml")
        if shutil.which("sbatch") is None:
            raise ExecutorError(
                "EXECUTOR=slurm needs SLURM's sbatch, and there is none on PATH. Run the command on a "
                "login node of the cluster (where sbatch works), load SLURM first (e.g. module load "
                "slurm), or use EXECUTOR=local. Nothing was executed.")
        partitions = self._partitions()
        s = self.settings
        if s.partition and partitions and s.partition not in partitions:
            raise ExecutorError(
                f"unknown SLURM partition {s.partition!r} (from {s.origin.get('partition')}); this "
                f"cluster has {', '.join(partitions)} (sinfo). Choose one of them: {advice}. "
                "Nothing was executed.")
        refusal = self._test_only()
        if refusal:
            raise ExecutorError(
                f"sbatch refuses the chapter jobs with these settings:\n  {refusal}\nThe settings:\n"
                f"{s.describe()}\nChange them: {advice}. Nothing was executed.")
        if profile != "ci" and s.gpus == 0:
            print(f"WARNING: profile {profile!r} on SLURM jobs without a GPU (gpus=0, from "
                  f"{s.origin.get('gpus')}): pass --gpus 1 unless the chapters should run on CPUs.")

    def _partitions(self) -> list[str]:
        done = subprocess.run(["sinfo", "--all", "--noheader", "--format=%R"], capture_output=True, text=True,
                              timeout=60)
        if done.returncode != 0:
            raise ExecutorError(
                "cannot reach the SLURM controller (sinfo says: "
                f"{(done.stderr or done.stdout).strip().splitlines()[-1:] or '?'}). Run on a node of "
                "the cluster, check SLURM_CONF, or use EXECUTOR=local. Nothing was executed.")
        return sorted({p.strip() for p in done.stdout.split() if p.strip()})

    def _test_only(self) -> str:
        """sbatch's refusal of a job with exactly the settings of the chapter jobs ('' if none)."""
        from submitit.slurm.slurm import _make_sbatch_string

        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "test.sh"
            params = {k: v for k, v in self.settings.submitit_parameters().items()
                      if k != "array_parallelism"}
            script.write_text(_make_sbatch_string(command="true", folder=Path(tmp) / "%j", **params))
            done = subprocess.run(["sbatch", "--test-only", str(script)], capture_output=True,
                                  text=True, timeout=60)
        if done.returncode == 0:
            return ""
        return "\n  ".join(ln for ln in (done.stderr + done.stdout).strip().splitlines() if ln.strip())

    # ------------------------------------------------------------------ keeping current notebooks

    @contextlib.contextmanager
    def keeping_current(self, tasks: Sequence[Task], scratch: Path) -> Iterator[None]:
        """Around the re-staging of a build folder (which deletes it): move the current executed
        notebooks among ``tasks``' outputs aside into ``scratch``, and back afterwards."""
        kept: list[tuple[Path, Path]] = []
        shutil.rmtree(scratch, ignore_errors=True)
        if self.reuse:
            for i, task in enumerate(tasks):
                if is_current(task):
                    aside = scratch / f"{i}.ipynb"
                    aside.parent.mkdir(parents=True, exist_ok=True)
                    shutil.move(task.out, aside)
                    kept.append((aside, task.out))
        try:
            yield
        finally:
            for aside, out in kept:
                out.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(aside, out)
            shutil.rmtree(scratch, ignore_errors=True)

    # ------------------------------------------------------------------ running

    def _submitit_executor(self, folder: Path) -> Any:
        import submitit

        if self.cluster == "local":
            ex: Any = submitit.LocalExecutor(folder=str(folder / "%j"))
            ex.update_parameters(timeout_min=self.settings.time)
        else:
            ex = submitit.SlurmExecutor(folder=str(folder / "%j"))
            ex.update_parameters(**self.settings.submitit_parameters())
        return ex

    def run(self, tasks: Sequence[Task], *, strip: bool = False,
            timeout: int | None = None) -> list[Outcome]:
        """Execute ``tasks`` as jobs (current ones kept, see ``reuse``), wait for all of them,
        and return their outcomes in the order of ``tasks``. Never raises for a failed chapter;
        Ctrl-C cancels the jobs and exits."""
        import logging

        logging.getLogger("submitit").setLevel(logging.ERROR)  # e.g. "sacct disabled", handled here
        outcomes: dict[int, Outcome] = {}
        todo: list[int] = []
        names = [t.py for t in tasks]
        self._labels = {i: ("  " + ", ".join(f"{k}={v}" for k, v in t.params.items())
                            if names.count(t.py) > 1 else "") for i, t in enumerate(tasks)}
        for i, task in enumerate(tasks):
            if self.reuse and not strip and is_current(task):
                outcomes[i] = Outcome(relative(task.py), str(task.out), True, 0.0)
                print(f"  ok     {relative(task.py)}  (current: executed before from the same sources "
                      f"and parameters){self._labels[i]}", flush=True)
            else:
                todo.append(i)
        if not todo:
            return [outcomes[i] for i in range(len(tasks))]
        folder = Path(os.path.commonpath([str(tasks[i].log_dir) for i in todo])) / "slurm"
        ex = self._submitit_executor(folder)
        try:
            with ex.batch():
                jobs = {i: ex.submit(ChapterJob(), str(tasks[i].py), str(tasks[i].out),
                                     dict(tasks[i].params), str(tasks[i].log_dir), strip, timeout)
                        for i in todo}
        except Exception as exc:  # sbatch refused after the check passed (e.g. a quota)
            print(f"error: sbatch refused the chapter jobs: {_first_lines(str(exc))}\nThe settings:\n"
                  f"{self.settings.describe()}\nNothing was submitted.", file=sys.stderr)
            raise SystemExit(2)
        ids = [jobs[i].job_id for i in todo]
        if self.cluster != "slurm":
            what = "local processes (submitit)"
        elif len(ids) > 1:
            what = f"SLURM job array {ids[0].split('_')[0]}"
        else:
            what = f"SLURM job {ids[0]}"
        s = self.settings
        print(f"submitted {len(ids)} chapter job(s) as {what}: partition "
              f"{s.partition or '(default)'}, {s.time} min, {s.gpus} GPU, {s.cpus} CPU each; logs in "
              f"{relative(folder)}/<job id>/ (Ctrl-C cancels them)", flush=True)
        try:
            self._wait(tasks, jobs, outcomes)
        except KeyboardInterrupt:
            left = [j for i, j in jobs.items() if i not in outcomes]
            for job in left:
                with contextlib.suppress(Exception):
                    job.cancel(check=False)
            names = ", ".join(j.job_id for j in left)
            print(f"\ninterrupted: cancelled {len(left)} job(s) ({names}); "
                  f"{len(outcomes)} of {len(tasks)} chapter(s) had finished", file=sys.stderr, flush=True)
            raise SystemExit(130)
        return [outcomes[i] for i in range(len(tasks))]

    def _wait(self, tasks: Sequence[Task], jobs: Mapping[int, Any], outcomes: dict[int, Outcome]) -> None:
        """Until every job has ended: a job has ended when it left its result (submitit's result
        file), or squeue shows it in a final state or no longer lists it. (submitit's own check
        asks sacct, which clusters without accounting do not have; it is the fallback when squeue
        cannot answer.) A requeued job is pending, not ended."""
        from tqdm import tqdm

        started = asked = time.monotonic()
        states = self._queue_states([j.job_id for j in jobs.values()])
        bar = tqdm(total=len(jobs), desc="chapter jobs", unit="job", file=sys.stdout,
                   disable=not sys.stdout.isatty())
        while any(i not in outcomes for i in jobs):
            # result files are looked at every poll; the scheduler is asked less and less often
            # (every 2 s at first, then up to every max_queue_interval s)
            now = time.monotonic()
            if now - asked >= min(self.max_queue_interval, max(self.poll, (now - started) / 10)):
                states, asked = self._queue_states([j.job_id for i, j in jobs.items() if i not in outcomes]), now
            for i, job in jobs.items():
                if i in outcomes:
                    continue
                state = states.get(job.job_id) if states is not None else None
                if job.paths.result_pickle.exists():
                    ended = True
                elif states is not None:
                    ended = state in FINAL_STATES or (state is None and time.monotonic() - started > 5)
                else:
                    ended = job.done()
                if ended:
                    outcomes[i] = self._collect(tasks[i], job, state)
                    if self._labels.get(i):  # a sweep: which seed
                        o = outcomes[i]
                        print(f"  {'ok' if o.ok else 'FAILED':6s} {o.chapter}  ({o.seconds:.0f} s)"
                              f"{self._labels[i]}", flush=True)
                    else:
                        print_outcome(outcomes[i])
                    bar.update()
            if any(i not in outcomes for i in jobs):
                time.sleep(self.poll)
        bar.close()

    def _queue_states(self, ids: Sequence[str]) -> dict[str, str] | None:
        """``{job id: state}`` from squeue (None when there is no scheduler to ask)."""
        if self.cluster != "slurm" or not ids:
            return None
        arrays = sorted({i.split("_")[0] for i in ids})
        done = subprocess.run(["squeue", "--noheader", "--array", "--states=all", "--format=%i|%T",
                               "--jobs=" + ",".join(arrays)], capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            if "Invalid job id" in done.stderr:  # every job gone from the queue
                return {}
            return None
        states = {}
        for line in done.stdout.splitlines():
            job_id, _, state = line.strip().partition("|")
            if job_id:
                states[job_id] = state.strip()
        return states

    def _final_state(self, job_id: str, wait: float = 20.0) -> str | None:
        """The job's state once SLURM has finished with it (a job is COMPLETING while its
        processes are stopped); None without a scheduler to ask or when it takes longer."""
        deadline = time.monotonic() + wait
        while True:
            states = self._queue_states([job_id])
            if states is None:
                return None
            if states.get(job_id) in FINAL_STATES or time.monotonic() > deadline:
                return states.get(job_id)
            time.sleep(1)

    def _collect(self, task: Task, job: Any, state: str | None) -> Outcome:
        """The outcome of a job that ended: the one it returned, or a failure saying how it ended;
        a failure names the job and its log (on the failure page and in the summary)."""
        log = _job_log(job)
        where = f"SLURM job {job.job_id}, log {log}" if self.cluster == "slurm" else f"job log {log}"
        # a shared filesystem may show the result file late (submitit waits as long)
        deadline = time.monotonic() + getattr(job, "_results_timeout_s", 15)
        while not job.paths.result_pickle.exists() and time.monotonic() < deadline:
            time.sleep(1)
        problem = ""
        if job.paths.result_pickle.exists():
            try:
                outcome: Outcome = job.result()
            except Exception as exc:  # the job's own code raised
                problem = str(exc)
        else:  # never ask submitit for the result: without sacct it would wait for ever
            problem = "it left no result"
        if problem:
            task.log_dir.mkdir(parents=True, exist_ok=True)
            trace = task.log_dir / (task.py.stem + ".traceback.txt")
            how = state or _safe_state(job)
            tail = _tail(Path(job.paths.stderr))
            trace.write_text(f"The job of {relative(task.py)} ended without a result ({where}, "
                             f"state {how}): {problem}\n\nThe end of its log:\n{tail}\n")
            return Outcome(relative(task.py), str(task.out), False, 0.0,
                           error=f"the job ended without a result (state {how}; {where})", log=str(trace))
        if not outcome.ok:
            # a job SLURM cancels or stops at its time limit gets SIGTERM, its kernel dies, and the
            # chapter reports a dead kernel: say what SLURM did
            now = self._final_state(job.job_id) or state
            if now in FINAL_STATES and now != "COMPLETED":
                where = where.replace(f"SLURM job {job.job_id}", f"SLURM job {job.job_id} {now}")
            outcome.error = f"{outcome.error} ({where})"
            if outcome.log and Path(outcome.log).exists():
                with open(outcome.log, "a") as f:
                    f.write(f"\n(ran as {where})\n")
        return outcome


def _tail(path: Path, n: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log)"


def _safe_state(job: Any) -> str:
    """submitit's idea of the state (sacct; UNKNOWN without accounting)."""
    try:
        return str(job.state)
    except Exception:
        return "UNKNOWN"


def _job_log(job: Any) -> str:
    try:
        return relative(Path(job.paths.stderr))
    except Exception:
        return "?"


def _first_lines(text: str, n: int = 6) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return "\n  ".join(lines[:n])


# --------------------------------------------------------------------------- the command line


def keeping_current(executor: SlurmExecutor | None, jobs: Sequence[tuple[Path, Path]],
                    per_chapter: Mapping[Path, dict[str, Any]], log_dir: Path,
                    scratch: Path) -> contextlib.AbstractContextManager[None]:
    """:meth:`SlurmExecutor.keeping_current` for ``(source, output)`` pairs with their parameters;
    nothing to keep without an executor (local mode re-executes every chapter)."""
    if executor is None:
        return contextlib.nullcontext()
    tasks = [Task(py, out, dict(per_chapter.get(py, {})), log_dir) for py, out in jobs]
    return executor.keeping_current(tasks, scratch)


def add_options(parser: argparse.ArgumentParser) -> None:
    """The executor's options (``--executor`` and the SLURM settings) on a subcommand."""
    g = parser.add_argument_group("where chapters run (see book/how_to_run.md, On a SLURM cluster)")
    g.add_argument("--executor", choices=EXECUTORS, default="local",
                   help="local: processes of this machine (--jobs at a time); slurm: one SLURM job "
                        "per chapter, submitted with submitit")
    g.add_argument("--partition", help="slurm: partition of the jobs")
    g.add_argument("--time", help="slurm: time limit per job, minutes or H:MM:SS (requeued when it runs out)")
    g.add_argument("--gpus", help="slurm: GPUs per job")
    g.add_argument("--cpus", help="slurm: CPUs per job")
    g.add_argument("--mem", help="slurm: memory per job, e.g. 16G")
    g.add_argument("--sbatch", action="append", metavar="OPTION",
                   help="slurm: another sbatch option, e.g. --sbatch qos=high (repeatable)")
    g.add_argument("--max-running", help="slurm: at most this many jobs of the array at once")
    g.add_argument("--rerun", action="store_true",
                   help="slurm: also submit chapters whose executed notebook is current")


def _exit(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def from_args(args: argparse.Namespace, profile: str) -> SlurmExecutor | None:
    """The executor the options ask for (None: local), checked against the cluster; exits with a
    message saying what to do when the settings cannot work."""
    given = [f"--{k.replace('_', '-')}" for k in SETTINGS
             if k not in ("setup",) and getattr(args, k, None) not in (None, [])]
    if getattr(args, "rerun", False):
        given.append("--rerun")
    if args.executor == "local":
        if given:
            _exit(f"{', '.join(given)} only apply with --executor slurm (make ... EXECUTOR=slurm)")
        return None
    try:
        settings = slurm_settings({k: getattr(args, k, None) for k in SETTINGS}, profile)
        executor = SlurmExecutor(settings, reuse=not getattr(args, "rerun", False))
        executor.check(profile)
    except ExecutorError as err:
        _exit(str(err))
    if getattr(args, "jobs", 1) > 1:
        print("note: --jobs does not apply to SLURM jobs (the scheduler runs them; --max-running "
              "limits how many at once)")
    return executor
