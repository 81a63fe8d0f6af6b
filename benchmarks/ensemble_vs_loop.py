"""How near the machine's arithmetic peak the ensemble engine trains many small MLPs.

For each case, E ReLU MLPs (one initialisation per seed) are trained on scikit-learn's digits
with full-batch gradient descent and cross-entropy, three ways, from the same initialisations:

- ``loop``:    a Python loop calling ``implicit_bias.train.train`` on one network after another;
- ``vmap``:    ``train_ensemble(..., engine="vmap")``: ``torch.func`` + ``vmap`` over the stacked
               parameters, autograd backward (the engine of ``main`` before the stacked engine);
- ``stacked``: ``train_ensemble(..., engine="stacked")``: batched products on the stacked
               weights and a hand-derived backward (what ``engine="auto"`` picks for MLPs).

Cases (``--case``): ``tiny`` = 64 MLPs 64-16-16-10 on the first 100 training digits, 300 steps
(per-network overhead dominates); ``compute`` = 64 MLPs 64-256-256-10 on all 1347 training
digits, 10 steps (the matrix products dominate).

Time. On the CPU a path's time is the CPU time of this process (``time.process_time``) with
torch on ``--threads`` threads (default 1): on a machine shared with other jobs it counts only
the time this process ran, where wall-clock time would count the waiting too. On a GPU it is
wall-clock time between ``torch.cuda.synchronize()`` calls. Each path runs ``--repeats`` times
(default 3) from fresh copies of the same initial weights after an untimed warm-up, and the
table keeps the best run (the least disturbed by the other jobs).

FLOP count. Only the matrix products, the O(n d^2) part of a step, are counted; elementwise
work (activations, loss, bias, update) is not. Per member and layer l (``d_in x d_out`` weight,
``n`` samples): the forward product ``2 n d_in d_out``, the weight gradient ``2 n d_in d_out``,
and the gradient with respect to the layer's input ``2 n d_in d_out`` for every layer but the
first (the data needs no gradient; no path computes it). A run of S steps evaluates S+1
forwards and S backwards. GFLOP/s = counted flops / time; all three paths do the same counted
work, so their GFLOP/s compare like their speeds.

Peak. In the same run, on the same threads, the best over ``--repeats`` of ``torch.mm`` of two
2048 x 2048 float32 matrices (``2 * 2048^3`` flops; 1024 x 1024 is also measured and the higher
of the two is the peak). ``fraction`` = GFLOP/s / peak.

Correctness. Every path's final losses are compared with a float64 run of the ``vmap`` path
(autograd, independent of the stacked engine's hand-written backward). In float32 the loop's
and the engines' roundings differ and some trajectories amplify them (a network near a saddle),
so the check is that the stacked engine's float32 error is at most twice the loop's own float32
error plus 1e-5; the script exits with an error otherwise.

    python benchmarks/ensemble_vs_loop.py                        # both cases, CPU, one thread
    python benchmarks/ensemble_vs_loop.py --case tiny --repeats 5
    python benchmarks/ensemble_vs_loop.py --case tiny --width 64 --paths stacked   # other sizes
    python benchmarks/ensemble_vs_loop.py --device cuda --members 64 512
    python benchmarks/ensemble_vs_loop.py --json bench.json     # also the tables as JSON
"""

from __future__ import annotations

import argparse
import copy
import inspect
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise

import torch

from implicit_bias import ensembles, models, train
from implicit_bias.runtime import describe_run, resolve_device, set_seed

CASES = {
    "tiny": {"width": 16, "depth": 3, "samples": 100, "steps": 300},
    "compute": {"width": 256, "depth": 3, "samples": 0, "steps": 10},
}
PATHS = ("loop", "vmap", "stacked")


def load_digits(device: torch.device, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Training split of the digits (inputs ``(1347, 64)`` in [0, 1], integer labels)."""
    from implicit_bias.data import digits

    split = digits(seed=0, dtype=dtype, device=device)
    return split.X_train, split.y_train


def clock(device: torch.device) -> float:
    """CPU time of this process on the CPU; wall-clock time on a GPU (after a synchronize)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        return time.perf_counter()
    return time.process_time()


def best_time(fn: Callable[[], object], device: torch.device, repeats: int) -> tuple[float, object]:
    """Best of ``repeats`` timed calls (and the last call's result)."""
    best, out = float("inf"), None
    for _ in range(repeats):
        start = clock(device)
        out = fn()
        best = min(best, clock(device) - start)
    return best, out


def matmul_peak(device: torch.device, repeats: int) -> float:
    """GFLOP/s of the best float32 ``torch.mm`` of 1024^2 and 2048^2 matrices."""
    peak = 0.0
    for size, reps in ((1024, 8), (2048, 2)):
        a, b = (torch.randn(size, size, device=device) for _ in range(2))
        out = torch.empty(size, size, device=device)

        def products(a=a, b=b, out=out, reps=reps) -> None:
            for _ in range(reps):
                torch.mm(a, b, out=out)

        products()
        seconds, _ = best_time(products, device, max(repeats, 3))
        peak = max(peak, reps * 2 * size**3 / seconds / 1e9)
    return peak


def step_flops(dims: list[int], n: int) -> int:
    """Counted flops of one forward + backward of one member (see the module docstring)."""
    per_layer = [2 * n * a * b for a, b in pairwise(dims)]
    return 3 * sum(per_layer) - per_layer[0]


def run_flops(dims: list[int], n: int, steps: int) -> int:
    """Counted flops of ``steps`` steps of one member (``steps + 1`` forwards, ``steps``
    backwards)."""
    forward = sum(2 * n * a * b for a, b in pairwise(dims))
    return (steps + 1) * forward + steps * (step_flops(dims, n) - forward)


def products_only(dims: list[int], n: int, members: int, steps: int, device: torch.device,
                  dtype: torch.dtype, repeats: int) -> float:
    """Best time of ``steps`` repetitions of the batched matrix products of one stacked-engine
    step alone: the same calls on the same shapes (features first, shared data, sample axis
    padded and members grouped as the engine does), without activations, loss, bias gradients
    or bookkeeping. Any implementation built on these kernels is at most this fast."""
    m = n + ensembles._padding(n, device)
    opts = {"device": device, "dtype": dtype}
    XT = torch.randn(dims[0], m, **opts)
    per_member = max(dims[1:]) * m * XT.element_size()
    groups = []
    for members in ensembles._member_groups(members, per_member, device):
        E = members.stop - members.start
        groups.append(([torch.randn(E, b, a, **opts) / a**0.5 for a, b in pairwise(dims)],
                       [torch.zeros(E, b, 1, **opts) for b in dims[1:]]))

    def step(Ws: list[torch.Tensor], bs: list[torch.Tensor]) -> None:
        E = Ws[0].shape[0]
        acts = [XT]
        for i, (W, b) in enumerate(zip(Ws, bs)):
            if i == 0:
                acts.append(torch.addmm(b.view(-1, 1), W.view(-1, dims[0]), XT).view(E, -1, m))
            else:
                acts.append(torch.baddbmm(b, W, acts[-1]))
        dZ = acts.pop()
        for i in range(len(Ws) - 1, -1, -1):
            W = Ws[i]
            dA = torch.bmm(W.transpose(1, 2), dZ) if i > 0 else None
            if i == 0:
                W.view(-1, dims[0]).addmm_(dZ.view(-1, m), XT.t(), alpha=-1e-12)
            else:
                W.baddbmm_(dZ, acts[i].transpose(1, 2), alpha=-1e-12)
            dZ = dA

    def run() -> None:
        for _ in range(steps):
            for Ws, bs in groups:
                step(Ws, bs)

    step(*groups[0])
    seconds, _ = best_time(run, device, repeats)
    return seconds


def op_table(runner: Callable[[int], object], steps: int, top: int) -> None:
    """Run ``runner(steps)`` under ``torch.profiler`` and print the ``top`` operators by self CPU
    time, with their calls per step. The profiler adds a few microseconds to every operator, so
    the absolute times are inflated; the counts and the order are what it is for."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        runner(steps)
    ops = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
    total = sum(e.self_cpu_time_total for e in ops)
    print(f"operators of the stacked path under torch.profiler ({steps} steps; self CPU, profiler "
          f"overhead included): {sum(e.count for e in ops) / steps:.0f} operator calls per step, "
          f"{total / steps:.0f} us per step")
    print(f"{'operator':32s}{'calls/step':>11s}{'us/call':>9s}{'share':>7s}")
    for e in ops[:top]:
        print(f"{e.key[:32]:32s}{e.count / steps:11.1f}{e.self_cpu_time_total / e.count:9.1f}"
              f"{e.self_cpu_time_total / total:7.0%}")


@dataclass
class Row:
    path: str
    seconds: float       # best run
    gflops: float
    final: torch.Tensor  # final losses of the members


def has_engine_switch() -> bool:
    """False on a library without the stacked engine (to measure the code before it)."""
    return "engine" in inspect.signature(ensembles.train_ensemble).parameters


def bench_case(name: str, members: int, args: argparse.Namespace, device: torch.device,
               dtype: torch.dtype, X_all: torch.Tensor, y_all: torch.Tensor,
               peak: float, record: list[dict] | None = None) -> list[Row]:
    """Time the paths on one case and print its table; returns the rows (and appends the table,
    as a dict, to ``record``)."""
    cfg = {**CASES[name], **{k: v for k, v in (("width", args.width), ("samples", args.samples)) if v}}
    steps = args.steps or cfg["steps"]
    X, y = (X_all[: cfg["samples"]], y_all[: cfg["samples"]]) if cfg["samples"] else (X_all, y_all)
    dims = [X.shape[1], *[cfg["width"]] * (cfg["depth"] - 1), 10]
    flops = run_flops(dims, len(X), steps) * members
    print(f"\n== {name}: {members} MLPs {'-'.join(map(str, dims))}, {len(X)} digits, {steps} "
          f"full-batch GD steps, lr {args.lr}, {args.dtype}; "
          f"{flops / steps / members / 1e6:.2f} MFLOP per member-step")

    def make(seed: int) -> torch.nn.Module:
        torch.manual_seed(seed)
        net = models.MLP(dims[0], 10, width=cfg["width"], depth=cfg["depth"])
        return net.to(device=device, dtype=dtype)

    inits = [make(seed) for seed in range(members)]
    switch = has_engine_switch()

    def ensemble_run(engine: str, nets: list[torch.nn.Module], Xd: torch.Tensor,
                     n_steps: int) -> torch.Tensor:
        ens = ensembles.Ensemble.from_models(nets)
        kw = {"engine": engine} if switch else {}
        hist = ensembles.train_ensemble(ens, Xd, y, loss="ce", steps=n_steps, lr=args.lr,
                                        progress=False, **kw)
        return hist.loss[:, -1]

    def loop_run(n_steps: int) -> torch.Tensor:
        finals = []
        for net in inits:
            h = train.train(copy.deepcopy(net), X, y, loss="ce", steps=n_steps, lr=args.lr,
                            optimizer="gd", progress=False)
            finals.append(h.loss[-1])
        return torch.stack(finals)

    runners: dict[str, Callable[[int], torch.Tensor]] = {
        "loop": loop_run,
        "vmap": lambda n_steps: ensemble_run("vmap", inits, X, n_steps),
        "stacked": lambda n_steps: ensemble_run("stacked", inits, X, n_steps),
    }
    paths = [p for p in args.paths if switch or p != "stacked"]
    rows = []
    for path in paths:
        runner = runners[path]
        runner(2)  # warm-up: allocations, vmap's first trace
        seconds, final = best_time(lambda runner=runner: runner(steps), device, args.repeats)
        rows.append(Row(path, seconds, flops / seconds / 1e9, final))
    if switch and "stacked" in paths:
        seconds = products_only(dims, len(X), members, steps, device, dtype, args.repeats)
        rows.append(Row("products", seconds, flops / seconds / 1e9, torch.empty(0)))

    if args.ops and "stacked" in paths:
        op_table(lambda n_steps: ensemble_run("stacked", inits, X, n_steps), steps, args.ops)

    by = {r.path: r for r in rows}
    base = [p for p in ("loop", "vmap") if p in by]
    print(f"{'path':10s}{'s/step':>11s}{'GFLOP/s':>9s}{'of peak':>9s}"
          + "".join(f"{'vs ' + p:>10s}" for p in base))
    for r in rows:
        ups = "".join(f"{by[p].seconds / r.seconds:9.1f}x" for p in base)
        print(f"{r.path:10s}{r.seconds / steps:11.2e}{r.gflops:9.1f}{r.gflops / peak:9.0%}{ups}")
    if "products" in by:
        print("(products: the stacked step's batched matrix products alone, "
              "the ceiling of these kernels)")

    table = {"case": name, "members": members, "steps": steps, "dims": dims, "samples": len(X),
             "flops": flops, "errors": None,
             "rows": [{"path": r.path, "seconds": r.seconds, "s_per_step": r.seconds / steps,
                       "gflops": r.gflops, "of_peak": r.gflops / peak,
                       **{f"speedup_vs_{p}": by[p].seconds / r.seconds for p in base}}
                      for r in rows]}
    if record is not None:
        record.append(table)
    if args.check:
        # float64 reference: the vmap path (autograd), independent of the hand-written backward
        ref = ensemble_run("vmap", [copy.deepcopy(m).double() for m in inits], X.double(), steps)
        err = {r.path: float((r.final.double() - ref.double()).abs().max())
               for r in rows if r.path in PATHS}
        print("max |final loss - float64 vmap reference|: "
              + ", ".join(f"{p} {e:.1e}" for p, e in err.items()))
        table["errors"] = err
        if "stacked" in err and dtype == torch.float64 and err["stacked"] > 1e-10:
            raise SystemExit(f"the stacked engine is off by {err['stacked']:.1e} in float64")
        if "stacked" in err and "loop" in err and err["stacked"] > 2 * err["loop"] + 1e-5:
            raise SystemExit(f"the stacked engine's float32 error {err['stacked']:.1e} exceeds "
                             f"twice the loop's ({err['loop']:.1e}) + 1e-5")
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", choices=(*CASES, "all"), default="all")
    ap.add_argument("--members", type=int, nargs="+", default=[64],
                    help="ensemble sizes E (default 64)")
    ap.add_argument("--steps", type=int, default=0, help="override the case's number of steps")
    ap.add_argument("--width", type=int, default=0, help="override the case's hidden width")
    ap.add_argument("--samples", type=int, default=0,
                    help="override the case's number of training digits (at most 1347)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="timed runs per path; the best is kept (default 3)")
    ap.add_argument("--paths", nargs="+", choices=PATHS, default=list(PATHS))
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--device", default="cpu", help="'cpu' (default), 'cuda' or 'auto'")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch CPU threads (default 1, the book's setting; 0: torch's default)")
    ap.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    ap.add_argument("--no-check", dest="check", action="store_false",
                    help="skip the comparison with a float64 reference")
    ap.add_argument("--ops", type=int, default=0, metavar="N",
                    help="also profile the stacked path with torch.profiler and print its N costliest operators")
    ap.add_argument("--json", metavar="PATH", help="also write the tables (and the peak) here")
    args = ap.parse_args(argv)
    if args.repeats < 1 or min(args.members) < 1 or min(args.steps, args.width, args.samples) < 0:
        ap.error("--repeats and --members must be >= 1, --steps, --width and --samples >= 0")

    set_seed(0, threads=args.threads or None)
    device = resolve_device(args.device)
    dtype = getattr(torch, args.dtype)
    X, y = load_digits(device, dtype)
    peak = matmul_peak(device, args.repeats)
    print(describe_run("benchmark", 0, device), f"threads={torch.get_num_threads()}",
          "" if has_engine_switch() else "(library without the stacked engine)")
    print(f"peak: float32 matmul {peak:.1f} GFLOP/s (best of 1024^2 and 2048^2, best of "
          f"{max(args.repeats, 3)} runs); times: {'CPU' if device.type == 'cpu' else 'wall-clock'} "
          f"seconds, best of {args.repeats} runs")
    tables: list[dict] = []
    for case in CASES if args.case == "all" else [args.case]:
        for E in args.members:
            try:
                bench_case(case, E, args, device, dtype, X, y, peak, tables)
            finally:  # after every case, and when a check fails: what was measured is kept
                if args.json:
                    write_json(args.json, device, dtype, peak, tables)


def write_json(path: str, device: torch.device, dtype: torch.dtype, peak: float,
               tables: list[dict]) -> None:
    """The tables measured so far, with the peak and the device, as JSON."""
    meta = {"device": describe_run("benchmark", 0, device), "dtype": str(dtype).removeprefix("torch."),
            "timing": "CPU time (process_time)" if device.type == "cpu"
            else "wall-clock between torch.cuda.synchronize() calls",
            "threads": torch.get_num_threads(), "peak_gflops": peak,
            "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32), "tables": tables}
    with open(path, "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    main()
