"""The SLURM executor (``make book EXECUTOR=slurm``), tested against a real SLURM: a single-node
cluster (Debian's ``slurm-wlm`` and ``munge``) started for the session in a temporary folder,
and stopped by its PIDs at the end. On a small book of its own (tiny chapters: one runs, one
fails, one computes in cached segments), run as a user runs it (``python -m implicit_bias.book``
in the book's root):

- a build through SLURM gives the executed notebooks, the failure page and log (naming the SLURM
  job and its log) and the summary of a local build, with the same notebook as the local executor;
  run again, it keeps the chapter whose notebook is current and resubmits only the failed one;
- Ctrl-C cancels the submitted jobs; the rerun resumes from the chapter's cache; a job that SLURM
  warns of its time limit is requeued and resumes from the cache again, ending with the result of
  an uninterrupted run;
- bad settings (an unknown partition, a request sbatch refuses, no sbatch) stop before anything
  runs, saying what to do.

The cluster needs root and the packages: ``.ci/run`` installs them when it runs as root (as CI
does), and sets ``IMPLICIT_BIAS_TEST_SLURM=required`` so that a cluster that does not start fails
the tests instead of skipping them. Elsewhere those tests skip, saying how to enable them. The
settings, the "current" check and submitit's local executor are tested without a scheduler.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from implicit_bias import book
from implicit_bias.book import executors

DAEMONS = {"munged": "/usr/sbin/munged", "slurmctld": "/usr/sbin/slurmctld", "slurmd": "/usr/sbin/slurmd"}
REQUIRED_ENV = "IMPLICIT_BIAS_TEST_SLURM"
HOW_TO_ENABLE = ("run as root with Debian's packages installed (apt-get install slurm-wlm munge; "
                 ".ci/run installs them when it runs as root)")


# ----------------------------------------------------------------------------- the cluster


@dataclass
class Cluster:
    """A running single-node cluster: ``env`` points SLURM's commands at it (``SLURM_CONF``)."""

    folder: Path
    env: dict[str, str]
    pids: dict[str, int]

    def run(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(list(cmd), env=self.env, capture_output=True, text=True, timeout=60,
                              check=check)

    def jobs(self) -> dict[str, str]:
        """``{job id: state}`` of every job the cluster knows."""
        out = self.run("squeue", "--noheader", "--array", "--states=all", "--format=%i|%T").stdout
        return dict(line.strip().split("|", 1) for line in out.splitlines() if "|" in line)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _memory_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(int(line.split()[1]) / 1024 * 0.8)
    return 1024


def _unavailable() -> str | None:
    if not sys.platform.startswith("linux"):
        return "SLURM tests run on Linux"
    if os.geteuid() != 0:
        return f"starting munged, slurmctld and slurmd needs root: {HOW_TO_ENABLE}"
    missing = [name for name, path in DAEMONS.items() if not os.access(path, os.X_OK)]
    missing += [c for c in ("sbatch", "squeue", "sinfo", "scancel", "scontrol") if shutil.which(c) is None]
    if missing:
        return f"SLURM is not installed here (missing {', '.join(missing)}): {HOW_TO_ENABLE}"
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its parent) counts as stopped
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _stop(pids: dict[str, int]) -> None:
    """SIGTERM to the daemons (by their PIDs), SIGKILL to any still running 10 s later."""
    for pid in pids.values():
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids.values()) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in pids.values():
        if _alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _start(folder: Path) -> Cluster:
    for sub in ("state", "spool", "munge", "log"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(folder / "munge", 0o700)
    key = folder / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    os.chmod(key, 0o400)
    sock = folder / "munge" / "munge.socket"
    subprocess.run([DAEMONS["munged"], "--force", f"--key-file={key}", f"--socket={sock}",
                    f"--pid-file={folder / 'munge' / 'munged.pid'}", f"--log-file={folder / 'log' / 'munged.log'}",
                    f"--seed-file={folder / 'munge' / 'munged.seed'}"], check=True, timeout=30,
                   capture_output=True)
    host = socket.gethostname().split(".")[0]
    conf = folder / "slurm.conf"
    conf.write_text(textwrap.dedent(f"""\
        ClusterName=bookci
        SlurmctldHost={host}(127.0.0.1)
        SlurmctldPort={_free_port()}
        SlurmdPort={_free_port()}
        SlurmUser=root
        SlurmdUser=root
        AuthType=auth/munge
        CredType=cred/munge
        AuthInfo=socket={sock}
        StateSaveLocation={folder / 'state'}
        SlurmdSpoolDir={folder / 'spool'}
        SlurmctldPidFile={folder / 'slurmctld.pid'}
        SlurmdPidFile={folder / 'slurmd.pid'}
        SlurmctldLogFile={folder / 'log' / 'slurmctld.log'}
        SlurmdLogFile={folder / 'log' / 'slurmd.log'}
        ProctrackType=proctrack/linuxproc
        TaskPlugin=task/none
        SelectType=select/cons_tres
        SelectTypeParameters=CR_Core
        SchedulerType=sched/builtin
        MpiDefault=none
        ReturnToService=2
        JobAcctGatherType=jobacct_gather/none
        AccountingStorageType=accounting_storage/none
        JobCompType=jobcomp/none
        MinJobAge=600
        NodeName={host} NodeAddr=127.0.0.1 CPUs={os.cpu_count() or 1} RealMemory={_memory_mb()} State=UNKNOWN
        PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
        """))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    pids: dict[str, int] = {}
    try:
        pids["munged"] = int((folder / "munge" / "munged.pid").read_text())
        subprocess.run([DAEMONS["slurmctld"], "-f", str(conf)], env=env, check=True, timeout=30,
                       capture_output=True)
        subprocess.run([DAEMONS["slurmd"], "-f", str(conf), "-N", host], env=env, check=True, timeout=30,
                       capture_output=True)
        for name in ("slurmctld", "slurmd"):
            for _ in range(50):
                if (folder / f"{name}.pid").exists() and (folder / f"{name}.pid").read_text().strip():
                    pids[name] = int((folder / f"{name}.pid").read_text())
                    break
                time.sleep(0.1)
        cluster = Cluster(folder, env, pids)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            state = cluster.run("sinfo", "--noheader", "--format=%T", check=False).stdout.strip()
            if state == "idle":
                return cluster
            time.sleep(0.2)
        raise RuntimeError(f"the node did not become idle (sinfo: {state!r})")
    except Exception as exc:
        _stop(pids)
        logs = "\n".join(f"--- {p.name}\n{p.read_text()[-2000:]}" for p in sorted((folder / "log").glob("*.log")))
        raise RuntimeError(f"the test cluster did not start: {exc}\n{logs}") from exc


@pytest.fixture(scope="session")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A single-node SLURM cluster for the session (skips, saying how to enable it, where it
    cannot start; fails instead when ``IMPLICIT_BIAS_TEST_SLURM=required``)."""
    required = os.environ.get(REQUIRED_ENV) == "required"
    why = _unavailable()
    if why:
        if required:
            pytest.fail(f"{REQUIRED_ENV}=required but {why}")
        pytest.skip(why)
    try:
        cluster = _start(tmp_path_factory.mktemp("slurm"))
    except Exception as exc:
        if required:
            raise
        pytest.skip(f"could not start a test cluster: {exc}")
    yield cluster
    ids = sorted({j.split("_")[0] for j in cluster.jobs()})
    if ids:
        cluster.run("scancel", *ids, check=False)
        time.sleep(1)
    _stop(cluster.pids)


# ----------------------------------------------------------------------------- the book

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

OK = HEADER + textwrap.dedent('''
    # %% [markdown]
    # # A chapter that runs
    #
    # Twice the steps is {glue:text}`sl-twice`.

    # %% tags=["parameters"]
    profile = "ci"
    seed = 0

    # %%
    PROFILES = {"ci": dict(steps=10), "full": dict(steps=1000)}

    # %%
    from myst_nb import glue
    from implicit_bias.claims import Ledger

    ledger = Ledger("demo/01_ok")
    twice = 2 * PROFILES[profile]["steps"] + seed
    glue("sl-twice", twice, display=False)
    print("twice the steps:", twice)
    ledger.close("twice", "Lemma 7", "twice the steps", "2 steps", measured=twice,
                 target=2 * PROFILES[profile]["steps"] + seed, items="lemma7", bearing="supports")

    # %%
    # NBVAL_CHECK_OUTPUT
    ledger.report()
''')

BROKEN = HEADER + textwrap.dedent('''
    # %% [markdown]
    # # A chapter that fails

    # %% tags=["parameters"]
    profile = "ci"
    seed = 0

    # %%
    PROFILES = {"ci": {}, "full": {}}

    # %%
    raise RuntimeError("deliberately broken for the test")
''')

SEGMENTS = HEADER + textwrap.dedent('''
    # %% [markdown]
    # # A computation in cached segments

    # %% tags=["parameters"]
    profile = "ci"
    seed = 0
    segments = 5

    # %%
    PROFILES = {"ci": {}, "full": {}}

    # %%
    import os
    import time
    from implicit_bias import cache
    from implicit_bias.claims import Ledger

    GATE = os.environ.get("DEMO_SEGMENT_GATE")  # the test lets segment i start by creating GATE/i


    def advance(state, i):
        return (state * 31 + i) % 1_000_003


    ledger = Ledger("demo/03_segments")
    state = seed + 1
    for i in range(segments):
        def segment(state=state, i=i):
            while GATE and not os.path.exists(os.path.join(GATE, str(i))):
                time.sleep(0.05)
            return advance(state, i)
        state = cache.cached("demo-segment", {"seed": seed, "i": i, "state": state}, segment)
        print("segment", i, "done", flush=True)
    expected = seed + 1
    for i in range(segments):
        expected = advance(expected, i)
    print("final state", state)
    ledger.close("final", "Sec. 1", "the segments compose to the uninterrupted result", "a number",
                 measured=state, target=expected, items="s1", bearing="control")

    # %%
    # NBVAL_CHECK_OUTPUT
    ledger.report()
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


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A book of two chapters in its table of contents, and a third (the segments) outside it."""
    root = tmp_path_factory.mktemp("slurm_book")
    (root / "chapters" / "demo").mkdir(parents=True)
    for name, text in (("01_ok", OK), ("02_broken", BROKEN), ("03_segments", SEGMENTS)):
        (root / "chapters" / "demo" / f"{name}.py").write_text(text)
    shutil.copy(book.ROOT / "_config.yml", root / "_config.yml")
    (root / "_toc.yml").write_text(TOC)
    (root / "book" / "_static").mkdir(parents=True)
    shutil.copy(book.ROOT / "book" / "_static" / "book.css", root / "book" / "_static" / "book.css")
    (root / "book" / "intro.md").write_text("# Demo book\n\nA book run on SLURM.\n")
    for name in ("reproduction", "errata"):
        (root / "book" / f"{name}.md").write_text(f"# {name}\n")
    return root


def cli(root: Path, *args: str, env: dict[str, str] | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    full = {**(env or os.environ), "PYTHONUNBUFFERED": "1", "IMPLICIT_BIAS_CACHE": str(root / "cache")}
    return subprocess.run([sys.executable, "-m", "implicit_bias.book", *args], cwd=root, env=full,
                          capture_output=True, text=True, timeout=timeout)


def page_text(path: Path) -> str:
    """The text of an HTML page, tags dropped and spaces collapsed."""
    return " ".join(re.sub(r"<[^>]+>", " ", path.read_text()).split()).replace(" ,", ",")


def cells(path: Path) -> list[tuple[str, str, list]]:
    """What a reader sees of an executed notebook: each cell's type, source (without nbval's
    markers) and outputs."""
    nb = nbformat.read(path, as_version=4)
    out = []
    for c in nb.cells:
        source = "\n".join(ln for ln in c.source.splitlines() if not ln.strip().startswith("# NBVAL_"))
        out.append((c.cell_type, source.strip(), json.loads(json.dumps(c.get("outputs", [])))))
    return out


# ----------------------------------------------------------------------------- against SLURM


def test_book_on_slurm_gives_the_local_results_and_keeps_current_chapters(slurm: Cluster, demo: Path):
    done = cli(demo, "book", "01_ok", "02_broken", "--executor", "slurm", env=slurm.env)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "submitted 2 chapter job(s) as SLURM job array" in out
    assert "ok     chapters/demo/01_ok.py  (" in out and "FAILED chapters/demo/02_broken.py" in out
    # the failure names the cell, the SLURM job and its log; both files exist
    line = next(ln for ln in out.splitlines() if ln.startswith("  chapters/demo/02_broken.py: code cell 3 of 3"))
    assert "RuntimeError: deliberately broken for the test (SLURM job " in line
    job_log = line.split(", log ")[1].rstrip(")")
    assert (demo / job_log).is_file() and job_log.startswith("_build/ci/logs/slurm/")
    trace = demo / "_build" / "ci" / "logs" / "02_broken.traceback.txt"
    assert "deliberately broken" in trace.read_text() and "(ran as SLURM job" in trace.read_text()
    assert "PARTIAL site (1 of 2 chapters failed" in out
    html = demo / "_build" / "ci" / "site" / "_build" / "html"
    failed_page = page_text(html / "chapters" / "demo" / "02_broken.html")
    assert "This chapter failed in this build" in failed_page
    assert f"deliberately broken for the test (SLURM job {job_log.split('/')[-2]}, log {job_log})" in failed_page
    assert "twice the steps: 20" in page_text(html / "chapters" / "demo" / "01_ok.html")

    # the local executor writes the same notebook
    staged = demo / "_build" / "ci" / "src" / "chapters" / "demo" / "01_ok.ipynb"
    local = cli(demo, "execute", "01_ok", "--out-dir", "_build/local")
    assert local.returncode == 0, local.stdout + local.stderr
    assert cells(staged) == cells(demo / "_build" / "local" / "chapters" / "demo" / "01_ok.ipynb")

    # current: the recorded inputs match the sources and parameters of now, and only those
    py = demo / "chapters" / "demo" / "01_ok.py"
    task = executors.Task(py, staged, {}, demo / "_build" / "ci" / "logs")
    assert executors.is_current(task)
    assert not executors.is_current(executors.Task(py, staged, {"seed": 1}, task.log_dir))
    py.write_text(OK + "\n# an edit\n")
    try:
        assert not executors.is_current(task)
    finally:
        py.write_text(OK)

    again = cli(demo, "book", "01_ok", "02_broken", "--executor", "slurm", env=slurm.env)
    out = again.stdout + again.stderr
    assert again.returncode == 1, out
    assert "ok     chapters/demo/01_ok.py  (current: executed before" in out
    assert "submitted 1 chapter job(s) as SLURM job " in out and "FAILED chapters/demo/02_broken.py" in out
    assert "PARTIAL site (1 of 2 chapters failed" in out
    assert "twice the steps: 20" in page_text(html / "chapters" / "demo" / "01_ok.html")


def _wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_cancelled_and_requeued_jobs_resume_from_the_cache(slurm: Cluster, demo: Path, tmp_path: Path):
    """A chapter computing 5 cached segments, each of which waits for the test's go: killed by
    Ctrl-C (which cancels its job) after 2 segments; rerun, it loads them and computes the
    third; SLURM's warning of the time limit (SIGUSR2, sent here by hand) then requeues the job,
    which loads the 3 stored segments, computes the last 2 and ends with the uninterrupted
    result."""
    store, gate = demo / "cache", tmp_path / "gate"
    gate.mkdir()
    entries = lambda: len(list(store.glob("demo-segment-*.pt")))  # noqa: E731
    go = lambda *segments: [(gate / str(i)).touch() for i in segments]  # noqa: E731
    args = [sys.executable, "-m", "implicit_bias.book", "execute", "03_segments", "--out-dir",
            "_build/seg", "--executor", "slurm"]
    env = {**slurm.env, "PYTHONUNBUFFERED": "1", "IMPLICIT_BIAS_CACHE": str(store), "DEMO_SEGMENT_GATE": str(gate)}

    go(0, 1)
    known = set(slurm.jobs())
    # Ctrl-C must reach the run even when the test command itself runs in the background of a
    # non-interactive shell (which starts it with SIGINT ignored, inherited by every child)
    first = subprocess.Popen(args, cwd=demo, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        _wait_for(lambda: entries() == 2, 120, "two stored segments")
        (job,) = set(slurm.jobs()) - known
        first.send_signal(signal.SIGINT)  # Ctrl-C, while the job waits in segment 2
        out, _ = first.communicate(timeout=180)
    finally:
        first.kill()
    assert first.returncode == 130, out
    assert f"interrupted: cancelled 1 job(s) ({job}); 0 of 1 chapter(s) had finished" in out
    _wait_for(lambda: slurm.jobs().get(job) == "CANCELLED", 30, "the job to be cancelled")

    go(2)
    known = set(slurm.jobs())
    second = subprocess.Popen(args, cwd=demo, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _wait_for(lambda: entries() == 3, 120, "the third segment, stored by the second run")
        (job,) = set(slurm.jobs()) - known
        assert slurm.jobs()[job] == "RUNNING"
        slurm.run("scancel", "--signal=USR2", job)  # what SLURM sends before the time limit
        _wait_for(lambda: slurm.jobs().get(job) == "PENDING", 30, "the job to be requeued")
        go(3, 4)
        slurm.run("scontrol", "update", f"JobId={job}", "StartTime=now")  # skip SLURM's requeue delay
        out, _ = second.communicate(timeout=180)
    finally:
        second.kill()
    assert second.returncode == 0, out
    assert "ok     chapters/demo/03_segments.py" in out and "1 of 1 claims hold in 1 chapter(s)" in out
    text = "".join(o.get("text", "") for _, _, outs in cells(demo / "_build" / "seg" / "chapters" / "demo" /
                                                               "03_segments.ipynb") for o in outs)
    # the requeued run loaded the segments both earlier runs stored, and computed the others
    assert text.count("cache: 'demo-segment' loaded from demo-segment-") == 3, text
    assert "stored 20" in text and " by library " in text and entries() == 5
    expected = 1
    for i in range(5):
        expected = (expected * 31 + i) % 1_000_003
    assert f"final state {expected}" in text
    log = next((demo / "_build" / "logs" / "slurm").glob(f"{job}/*_log.out")).read_text()
    assert "Requeued job" in log



def test_bad_settings_stop_before_anything_runs(slurm: Cluster, demo: Path, run_cli_many):
    cases = [
        (["--partition", "nope"], "unknown SLURM partition 'nope' (from the command line); this cluster has debug"),
        (["--gpus", "1"], "sbatch refuses the chapter jobs with these settings:"),
        (["--sbatch=--qos-typo=x"], "sbatch: unrecognized option '--qos-typo=x'"),
    ]
    before = slurm.jobs()
    argv = [["book", "01_ok", "--executor", "slurm", *extra] for extra, _ in cases]
    for (extra, message), result in zip(cases, run_cli_many(argv, demo, env=slurm.env)):
        assert result["rc"] == 2, (extra, result)
        assert message in result["err"], (extra, result)
        assert "Nothing was executed." in result["err"] and "staging" not in result["out"], (extra, result)
        if extra == ["--gpus", "1"]:  # sbatch's own words, then the settings and their origins
            assert "Invalid generic resource" in result["err"]
            assert "gpus        1" in result["err"] and "from the command line" in result["err"]
    assert slurm.jobs() == before  # nothing was submitted


# ----------------------------------------------------------------------------- without a scheduler


def executor_args(**kw) -> argparse.Namespace:
    base = {k: None for k in executors.SETTINGS} | {"executor": "slurm", "rerun": False, "jobs": 1}
    return argparse.Namespace(**(base | kw))


def test_no_sbatch_on_path_says_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SystemExit) as stop:
        executors.from_args(executor_args(), "ci")
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "EXECUTOR=slurm needs SLURM's sbatch, and there is none on PATH" in err
    assert "use EXECUTOR=local" in err and "Nothing was executed." in err
    with pytest.raises(SystemExit):
        executors.from_args(executor_args(executor="local", partition="gpu", rerun=True), "ci")
    assert "--partition, --rerun only apply with --executor slurm" in capsys.readouterr().err
    assert executors.from_args(executor_args(executor="local"), "ci") is None


def test_settings_come_from_the_command_line_then_environment_then_pyproject(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent("""\
        [tool.implicit_bias.slurm]
        partition = "batch"
        time = "1-00:00:00"
        cpus = 8
        sbatch = ["--qos=long", "exclusive"]
        setup = ["module load cuda"]
        """))
    env = {"IMPLICIT_BIAS_SLURM_PARTITION": "gpu", "IMPLICIT_BIAS_SLURM_SBATCH": "--account=lab --qos=short"}
    s = executors.slurm_settings({"partition": "debug", "time": None}, "full", env=env, root=tmp_path)
    assert (s.partition, s.origin["partition"]) == ("debug", "the command line")
    assert s.sbatch == ["--account=lab", "--qos=short"] and s.origin["sbatch"] == "$IMPLICIT_BIAS_SLURM_SBATCH"
    assert s.time == 24 * 60 and s.cpus == 8 and s.origin["cpus"].startswith("pyproject.toml")
    assert s.gpus == 1 and s.origin["gpus"] == "default for profile full"
    params = s.submitit_parameters()
    assert params["additional_parameters"] == {"account": "lab", "qos": "short"}
    assert params["setup"] == ["module load cuda"] and params["gpus_per_node"] == 1
    ci = executors.slurm_settings({}, "ci", env={}, root=tmp_path)
    assert ci.partition == "batch" and ci.gpus == 0 and ci.sbatch == ["--qos=long", "exclusive"]
    assert ci.submitit_parameters()["additional_parameters"] == {"qos": "long", "exclusive": True}
    none = executors.slurm_settings({}, "ci", env={}, root=tmp_path / "nowhere")
    assert (none.partition, none.time, none.gpus, none.cpus) == (None, 60, 0, 2)


@pytest.mark.parametrize("text, minutes", [("90", 90), (90, 90), ("30:30", 31), ("2:00:00", 120),
                                           ("1-0", 1440), ("1-2:30", 1590), ("0-0:0:1", 1)])
def test_time_limits_in_slurm_formats(text, minutes):
    assert executors.parse_minutes(text) == minutes


@pytest.mark.parametrize("cli_args, message", [
    ({"time": "2h"}, "time='2h' (from the command line): write minutes"),
    ({"gpus": "one"}, "gpus='one' (from the command line): expected an integer >= 0"),
    ({"mem": "lots"}, "mem='lots' (from the command line): write a size such as 16G"),
    ({"sbatch": ["-q high"]}, "write long options, e.g. --qos=high"),
])
def test_bad_values_are_refused_with_their_origin(cli_args, message, tmp_path: Path):
    with pytest.raises(executors.ExecutorError, match=message.replace("(", r"\(").replace(")", r"\)")):
        executors.slurm_settings(cli_args, "ci", env={}, root=tmp_path)


def test_unknown_pyproject_key_is_named(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[tool.implicit_bias.slurm]\npartitoin = 'x'\n")
    with pytest.raises(executors.ExecutorError, match="unknown key.*partitoin"):
        executors.slurm_settings({}, "ci", env={}, root=tmp_path)


def test_submitit_local_executor_runs_records_and_keeps_current(demo: Path, tmp_path: Path):
    """The executor's machinery on submitit's local executor (jobs as processes here): outcomes
    and failures as from SLURM, the inputs recorded, current notebooks kept."""
    settings = executors.slurm_settings({}, "ci", env={}, root=tmp_path)
    ex = executors.SlurmExecutor(settings, cluster="local", poll=0.5)
    chapters = demo / "chapters" / "demo"
    tasks = [executors.Task(chapters / f"{name}.py", tmp_path / "out" / f"{name}.ipynb", {"seed": 2},
                            tmp_path / "logs") for name in ("01_ok", "02_broken")]
    ok, broken = ex.run(tasks)
    assert ok.ok and not broken.ok
    assert broken.error.startswith("RuntimeError: deliberately broken for the test (job log ")
    assert Path(broken.log).name == "02_broken.traceback.txt"
    assert executors.recorded_inputs(tasks[0].out) == executors.inputs_hash(tasks[0].py, {"seed": 2})
    assert "twice the steps: 22" in tasks[0].out.read_text()
    # current: kept, not run again
    mtime = tasks[0].out.stat().st_mtime_ns
    (ok2,) = ex.run(tasks[:1])
    assert ok2.ok and ok2.seconds == 0 and tasks[0].out.stat().st_mtime_ns == mtime
    with ex.keeping_current(tasks, tmp_path / "kept"):
        assert not tasks[0].out.exists()  # moved aside while a build folder is re-staged
    assert tasks[0].out.stat().st_mtime_ns == mtime
