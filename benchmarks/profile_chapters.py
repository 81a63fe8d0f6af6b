"""Where a chapter's CPU time goes: a sampling profile of its kernel, summed by kind of work.

    PYTHONPATH=lib .venv/bin/python benchmarks/profile_chapters.py [CHAPTER ...] [--profile ci]
    PYTHONPATH=lib .venv/bin/python benchmarks/profile_chapters.py --summary   # table only
    PYTHONPATH=lib .venv/bin/python benchmarks/profile_chapters.py --sweep     # sweep's wall time

Each chapter is executed as ``make execute`` would (papermill, its own kernel, one CPU thread,
``IMPLICIT_BIAS_QUIET=1``), into a scratch folder with an empty cache (so nothing is served), and
with a probe in the kernel's IPython startup folder: a thread that every few milliseconds reads
the stack of the kernel's main thread and credits the CPU time that thread used since the last
sample (``time.pthread_getcpuclockid``, so time spent waiting for a shared CPU is not counted) to
the kind of work on the stack:

- ``engine``: under ``implicit_bias/ensembles.py`` (many networks as one batched computation);
- ``train.py``: under ``implicit_bias/train.py`` (one network, or a vectorised group, at a time);
- ``loops off engine``: training written elsewhere (a part's module or the chapter's cell): the
  nearest library function or chapter line names a training loop (``train``, ``fit``, ``descent``,
  ``step``, ``backward``, ``optimizer``, ...);
- ``analysis``: the rest of the library and the chapter's cells (SVDs, Hessians, attacks, KKT
  fits, certificates, data);
- ``plotting``: under matplotlib or ``implicit_bias/plotting.py`` (figures drawn and rendered);
- ``startup``: imports and the kernel's own work outside the chapter's code.

The classification is by names on the stack (``classify``); the hot spots (the nearest library
function or chapter line, with their seconds) are kept so that a reader can judge it. Each chapter's
result goes to ``benchmarks/profiles/<part>__<name>.json``; ``--summary`` (run after every chapter)
writes ``benchmarks/profiles/README.md``. ``--sweep`` writes ``benchmarks/profiles/sweep.md``: the
budget sweep's wall time per chapter, measured where ``book/data/budget_sweep.json`` has runs and
estimated from the x1 CPU time otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "profiles"
KINDS = ("engine", "train.py", "loops off engine", "analysis", "plotting", "startup")
PROBE_ENV = "IMPLICIT_BIAS_PROFILE_OUT"

# Training written outside the engine and train.py: names of functions, or words of a chapter line.
TRAINING = re.compile(r"train|fit_|_fit\b|descen|sgd|adam|optimi[sz]|\bstep|backward|gradient_flow|"
                      r"run_flow|\bflow\b|epoch|warm_?up|anneal|_gd\b|\bgd_", re.I)
# Hot spots the name rule puts among the training loops that are analyses: the OOD score's
# logistic regression and the optimal constant solution, both fitted by L-BFGS (their closures).
# ``write_summary`` moves them to ``analysis``.
ANALYSIS_SPOTS = ("extrapolation.ocs._fit_logistic", "extrapolation.ocs.closure")

# The probe, written into the kernel's IPython startup folder. It stores raw samples: per
# (kind hint, hot spot) the CPU seconds of the main thread; ``classify`` runs here, in the kernel,
# because the stack is only there.
PROBE = r'''
import json as _json, os as _os, re as _re, sys as _sys, threading as _threading, time as _time, linecache as _lc

_PROF_OUT = _os.environ.get("%(env)s")
_PROF_TRAIN = _re.compile(%(train)r)
_PROF = {"samples": {}, "n": 0}


def _prof_key(frame):
    """(kind, hot spot) of a stack, innermost frame first."""
    frames = []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    files = [f.f_code.co_filename.replace("\\", "/") for f in frames]
    if any(p.startswith("<frozen importlib") for p in files):
        return "startup", "imports"
    if any("/matplotlib/" in p or "/matplotlib_inline/" in p or "/PIL/" in p
           or p.endswith("implicit_bias/plotting.py") for p in files):
        hot = next((f"plotting: {f.f_code.co_name}" for f, p in zip(frames, files)
                    if "/implicit_bias/" in p or _re.search(r"/ipykernel_[0-9]+/", p)), "plotting")
        return "plotting", hot
    for kind, tail in (("engine", "implicit_bias/ensembles.py"), ("train.py", "implicit_bias/train.py")):
        for f, p in zip(frames, files):
            if p.endswith(tail):
                return kind, f"{tail.split('/')[-1]}: {f.f_code.co_name}"
    hot = None
    for f, p in zip(frames, files):  # innermost first
        if "/implicit_bias/" in p and "/implicit_bias/book/" not in p:
            mod = p.split("/implicit_bias/", 1)[1].removesuffix(".py").replace("/", ".")
            if mod in ("claims", "chapter", "runtime", "cache", "dependencies"):
                continue
            name = f"{mod}.{f.f_code.co_name}"
            hot = hot or name
            if _PROF_TRAIN.search(f.f_code.co_name):
                return "loops off engine", hot
        elif _re.search(r"/ipykernel_[0-9]+/", p) or p.startswith("<ipython-input"):
            line = _lc.getline(f.f_code.co_filename, f.f_lineno).strip()[:70]
            if line.startswith("app.launch_new_instance"):
                continue  # the kernel's own loop, not a cell
            hot = hot or f"cell: {line}"
            if _PROF_TRAIN.search(line):
                return "loops off engine", hot
            return "analysis", hot  # the cell itself decides (outer cells only call it)
    return ("analysis", hot) if hot else ("startup", "kernel / imports")


def _prof_dump(result=None):
    if not _PROF_OUT:
        return
    with open(_PROF_OUT + ".tmp", "w") as f:
        _json.dump({"n": _PROF["n"], "samples": [[k[0], k[1], v] for k, v in _PROF["samples"].items()]}, f)
    _os.replace(_PROF_OUT + ".tmp", _PROF_OUT)


def _prof_loop():
    main = _threading.main_thread().ident
    clock = _time.pthread_getcpuclockid(main)
    last = _time.clock_gettime(clock)
    while True:
        _time.sleep(0.004)
        frame = _sys._current_frames().get(main)
        now = _time.clock_gettime(clock)
        if frame is None:
            continue
        key = _prof_key(frame)
        _PROF["samples"][key] = _PROF["samples"].get(key, 0.0) + (now - last)
        _PROF["n"] += 1
        last = now


if _PROF_OUT:
    _threading.Thread(target=_prof_loop, daemon=True, name="chapter-profile").start()
    get_ipython().events.register("post_run_cell", _prof_dump)
''' % {"env": PROBE_ENV, "train": TRAINING.pattern}


def profile_chapter(py: Path, params: dict[str, Any], scratch: Path) -> dict[str, Any]:
    """Execute one chapter with the probe; its CPU time by kind and its hot spots."""
    from implicit_bias import book

    raw = scratch / (py.stem + ".samples.json")
    os.environ[PROBE_ENV] = str(raw)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    outcome = book.execute_one(str(py), str(scratch / py.name.replace(".py", ".ipynb")), params,
                               str(scratch))
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    samples = json.loads(raw.read_text()) if raw.exists() else {"n": 0, "samples": []}
    kinds = dict.fromkeys(KINDS, 0.0)
    hot: dict[str, float] = {}
    for kind, spot, seconds in samples["samples"]:
        kinds[kind] += seconds
        hot[f"{kind} | {spot}"] = hot.get(f"{kind} | {spot}", 0.0) + seconds
    sampled = sum(kinds.values())
    top = sorted(hot.items(), key=lambda kv: -kv[1])
    return {"chapter": str(py.relative_to(ROOT).with_suffix("")), "ok": outcome.ok,
            "profile": params.get("profile", "ci"), "wall_s": round(wall, 1),
            "kernel_cpu_s": round(cpu, 1), "sampled_cpu_s": round(sampled, 1),
            "samples": samples["n"],
            "share": {k: round(v / sampled, 3) if sampled else 0.0 for k, v in kinds.items()},
            "hot_spots": [[k, round(v, 2)] for k, v in top],
            "machine": f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end"}


def reclassify(r: dict[str, Any]) -> dict[str, Any]:
    """``r`` with the hot spots of ``ANALYSIS_SPOTS`` moved from ``loops off engine`` to
    ``analysis`` (in the shares and the hot spots; a profile keeps at least its 8 hottest spots,
    so a spot below those stays where the name rule put it)."""
    moved = 0.0
    spots = []
    for key, seconds in r["hot_spots"]:
        kind, spot = key.split(" | ", 1)
        if kind == "loops off engine" and spot in ANALYSIS_SPOTS:
            moved += seconds
            key = f"analysis | {spot}"
        spots.append([key, seconds])
    share = dict(r["share"])
    if moved and r["sampled_cpu_s"]:
        share["loops off engine"] -= moved / r["sampled_cpu_s"]
        share["analysis"] += moved / r["sampled_cpu_s"]
    return {**r, "share": share, "hot_spots": sorted(spots, key=lambda kv: -kv[1])}


def write_summary() -> Path:
    """benchmarks/profiles/README.md: one row per profiled chapter, costliest first."""
    rows = [reclassify(json.loads(p.read_text())) for p in sorted(OUT.glob("*.json"))]
    rows.sort(key=lambda r: -r["kernel_cpu_s"])
    lines = ["# Chapter profiles (profile `ci`, one CPU thread)", "",
             "Made by `benchmarks/profile_chapters.py` (its docstring says how the kinds are "
             "told apart). CPU seconds of the chapter's kernel; the shares are of the sampled CPU "
             "time of its main thread.", "",
             "| chapter | kernel CPU s | engine | train.py | loops off engine | analysis | plotting "
             "| startup | hottest spots (CPU s) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        spots = "; ".join(f"{k} {v:.1f}" for k, v in r["hot_spots"][:4]).replace("|", "/")
        shares = " | ".join(f"{100 * r['share'][k]:.0f}%" for k in KINDS)
        lines.append(f"| {r['chapter'].removeprefix('chapters/')}{'' if r['ok'] else ' (FAILED)'} "
                     f"| {r['kernel_cpu_s']:.1f} | {shares} | {spots} |")
    total = sum(r["kernel_cpu_s"] for r in rows)
    if total:
        mean = {k: sum(r["share"][k] * r["kernel_cpu_s"] for r in rows) / total for k in KINDS}
        lines.append(f"| **all, weighted by CPU** | {total:.0f} | "
                     + " | ".join(f"{100 * mean[k]:.0f}%" for k in KINDS) + " | |")
    path = OUT / "README.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def sweep_table() -> str:
    """The budget sweep's wall time per chapter on 2 cores: measured runs and estimates.

    A run of budget k on seed s is *measured* (m) when ``book/data/budget_sweep.json`` has its
    ``seconds`` (wall time of the run, on whatever load that session had); otherwise it is
    *estimated* (e) as k times the chapter's x1 CPU seconds plus 10 s for the kernel's start. The
    x1 time is that of ``book/data/chapter_times.json`` (an idle machine), else this script's
    profile (the main thread's sampled CPU seconds) divided by the median ratio of profile to
    ``chapter_times.json`` over the chapters that have both (the profiles ran on a loaded
    machine). A step count scaled by k costs at most k times as much,
    since the part that does not scale (imports, analysis of fixed size) is counted k times too:
    on an idle core the estimate is an upper bound. Two cores run two chapters at once
    (``JOBS=2``), so the sweep's wall time is about half the sum. Every run is also estimated,
    measured or not, for a total on an idle machine.
    """
    from implicit_bias import book
    from implicit_bias.book import budgets

    sweep = json.loads((ROOT / "book/data/budget_sweep.json").read_text())["chapters"]
    times = {n: (t["cpu_s"], "times") for n, t in
             json.loads((ROOT / "book/data/chapter_times.json").read_text())["chapters"].items()}
    profiled = {r["chapter"]: r["sampled_cpu_s"] for r in (json.loads(p.read_text()) for p in OUT.glob("*.json"))
                if r.get("profile") == "ci" and r.get("ok")}
    # the profiles ran on a loaded machine: their CPU seconds are scaled to those of chapter_times.json
    # by the median ratio over the chapters both have
    ratios = sorted(v / times[n][0] for n, v in profiled.items() if n in times)
    ratio = ratios[len(ratios) // 2] if ratios else 1.0
    for n, v in profiled.items():
        times.setdefault(n, (v / ratio, f"profile / {ratio:.2f}"))
    runs = (("x3/seed0", 3), ("x3/seed1", 3), ("x10/seed0", 10))
    lines = ["| chapter | x1 CPU s (from) | x3 seed 0 | x3 seed 1 | x10 seed 0 | all three, estimated |",
             "|---|---|---|---|---|---|"]
    mixed = {key: [0.0, 0.0] for key, _ in runs}     # per budget: measured, estimated seconds
    all_est = {key: 0.0 for key, _ in runs}
    unknown = []
    for py in book.all_chapters():
        name = str(py.relative_to(ROOT).with_suffix(""))
        if not budgets.chapter_budget(py):
            continue
        x1, src = times.get(name, (None, ""))
        cells, est_total = [], 0.0
        for key, k in runs:
            run = sweep.get(name, {}).get("runs", {}).get(key)
            est = k * x1 + 10 if x1 is not None else None
            if est is not None:
                all_est[key] += est
                est_total += est
            if run and run.get("seconds") is not None:
                cells.append(f"{run['seconds']:.0f} (m)")
                mixed[key][0] += run["seconds"]
            elif est is not None:
                cells.append(f"{est:.0f} (e)")
                mixed[key][1] += est
            else:
                cells.append("?")
                unknown.append(f"{name.removeprefix('chapters/')} {key}")
        lines.append(f"| {name.removeprefix('chapters/')} | {f'{x1:.1f} ({src})' if x1 is not None else '?'} | "
                     + " | ".join(cells) + f" | {est_total:.0f} |")

    def hours(seconds: float) -> str:
        return f"{seconds:,.0f} s = {seconds / 3600:.1f} h on one core, {seconds / 7200:.1f} h on 2 cores"

    x3 = [sum(mixed[k][i] for k in ("x3/seed0", "x3/seed1")) for i in (0, 1)]
    x10 = mixed["x10/seed0"]
    lines += ["", "| budget | measured (m) | estimated (e) | sum | all estimated |", "|---|---|---|---|---|",
              f"| x3, seeds 0-1 | {x3[0]:,.0f} s | {x3[1]:,.0f} s | {hours(sum(x3))} | "
              f"{hours(all_est['x3/seed0'] + all_est['x3/seed1'])} |",
              f"| x10, seed 0 | {x10[0]:,.0f} s | {x10[1]:,.0f} s | {hours(sum(x10))} | {hours(all_est['x10/seed0'])} |",
              f"| all | {x3[0] + x10[0]:,.0f} s | {x3[1] + x10[1]:,.0f} s | {hours(sum(x3) + sum(x10))} | "
              f"{hours(sum(all_est.values()))} |"]
    if unknown:
        lines += ["", f"No x1 time, not counted: {', '.join(unknown)}."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("chapters", nargs="*")
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--summary", action="store_true", help="only rewrite profiles/README.md")
    parser.add_argument("--sweep", action="store_true", help="only rewrite profiles/sweep.md")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    if args.sweep:
        (OUT / "sweep.md").write_text(sweep_table())
        print((OUT / "sweep.md").read_text())
        return
    if not args.summary:
        from implicit_bias import book

        params = {} if args.profile == "ci" else {"profile": args.profile}
        with tempfile.TemporaryDirectory() as tmp:
            scratch = Path(tmp)
            startup = scratch / "ipython" / "profile_default" / "startup"
            startup.mkdir(parents=True)
            (startup / "50-chapter-profile.py").write_text(PROBE)
            os.environ.update({"IPYTHONDIR": str(scratch / "ipython"),
                               "IMPLICIT_BIAS_CACHE": str(scratch / "cache"),
                               "IMPLICIT_BIAS_QUIET": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
            os.environ.pop("IMPLICIT_BIAS_BUDGET", None)
            lib = str(ROOT / "lib")  # absolute: the kernels run in the chapters' folders
            os.environ["PYTHONPATH"] = os.pathsep.join(
                dict.fromkeys([lib, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]))
            for py in book.resolve_chapters(args.chapters):
                r = profile_chapter(py, params, scratch)
                name = r["chapter"].removeprefix("chapters/").replace("/", "__")
                (OUT / f"{name}.json").write_text(json.dumps(r, indent=1) + "\n")
                print(f"{r['chapter']:60s} cpu {r['kernel_cpu_s']:6.1f} s "
                      + " ".join(f"{k} {100 * v:.0f}%" for k, v in r["share"].items()), flush=True)
    print(f"wrote {write_summary().relative_to(ROOT)}")


if __name__ == "__main__":
    sys.exit(main())
