"""Time every chapter in a profile: wall-clock and CPU seconds (the kernel's user+sys time).

    .venv/bin/python benchmarks/chapter_times.py [CHAPTER ...] [--profile ci] [--write]

The budget (CONTRIBUTING.md) is under ~2 minutes per chapter in profile ci on 2 CPU cores. Outputs go
to a scratch folder; the committed notebooks are not touched. ``--write`` records the CPU seconds
of profile ci in book/data/chapter_times.json (merged with what is there), from which the book
estimates, before a ``full`` run on a machine without a GPU, how long it will take
(implicit_bias.book.estimate).
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

from implicit_bias import book


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("chapters", nargs="*")
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--write", action="store_true", help="record the ci CPU times (see above)")
    args = parser.parse_args()
    if args.write and args.profile != "ci":
        parser.error("--write records profile ci only")
    params = {} if args.profile == "ci" else {"profile": args.profile}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for py in book.resolve_chapters(args.chapters):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            out = book.execute_one(str(py), str(Path(tmp) / py.name), params, tmp)
            wall = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            rows.append((str(py.relative_to(book.ROOT)), wall, cpu, out.ok))
            print(f"{rows[-1][0]:60s} wall {wall:6.1f} s  cpu {cpu:6.1f} s  {'ok' if out.ok else 'FAILED'}", flush=True)
    if args.write:
        write_times({r[0].removesuffix(".py"): round(r[2], 1) for r in rows if r[3]})
    print(f"\ntotal: wall {sum(r[1] for r in rows):.0f} s, cpu {sum(r[2] for r in rows):.0f} s, "
          f"slowest {max(rows, key=lambda r: r[1])[0] if rows else '-'}")


def write_times(cpu_seconds: dict[str, float]) -> None:
    import json
    import platform

    from implicit_bias.book.estimate import TIMES_PATH

    path = book.ROOT / TIMES_PATH
    data = json.loads(path.read_text()) if path.exists() else {}
    chapters = data.get("chapters", {})
    for name, cpu in cpu_seconds.items():
        chapters[name] = {"cpu_s": cpu}
    order = [str(p.relative_to(book.ROOT).with_suffix("")) for p in book.all_chapters()]
    data = {"about": "CPU seconds (user+sys) of each chapter in profile ci, measured by "
                     "benchmarks/chapter_times.py --write; used for the estimate before a full run "
                     "without a GPU",
            "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "chapters": {n: chapters[n] for n in order if n in chapters}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {TIMES_PATH}")


if __name__ == "__main__":
    main()
