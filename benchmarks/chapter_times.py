"""Time every chapter in a profile: wall-clock and CPU seconds (the kernel's user+sys time).

    .venv/bin/python benchmarks/chapter_times.py [CHAPTER ...] [--profile ci]

The budget of DESIGN.md is under ~2 minutes per chapter in profile ci on 2 CPU cores. Outputs go
to a scratch folder; the committed notebooks are not touched.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from implicit_bias import book


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("chapters", nargs="*")
    parser.add_argument("--profile", default="ci")
    args = parser.parse_args()
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
    print(f"\ntotal: wall {sum(r[1] for r in rows):.0f} s, cpu {sum(r[2] for r in rows):.0f} s, "
          f"slowest {max(rows, key=lambda r: r[1])[0] if rows else '-'}")


if __name__ == "__main__":
    main()
