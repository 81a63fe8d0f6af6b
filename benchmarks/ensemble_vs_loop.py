"""Batched ensemble training against a Python loop over the same networks.

Trains ``--models`` ReLU MLPs (width ``--width``, depth ``--depth``) on scikit-learn's digits with
full-batch gradient descent for ``--steps`` steps, once as one batched computation
(``implicit_bias.ensembles.train_ensemble``: ``torch.func`` + ``vmap``) and once one network
after another with ``implicit_bias.train.train``. Both start from the same initialisations, so
their final losses must agree (to float rounding); the script prints the largest difference,
the wall-clock and CPU times of each path and the speed-up.

    python benchmarks/ensemble_vs_loop.py                    # 64 models, 200 steps, CPU or GPU
    python benchmarks/ensemble_vs_loop.py --device cpu --threads 2 --steps 500
"""

from __future__ import annotations

import argparse
import copy
import time

import torch

from implicit_bias import ensembles, models, train
from implicit_bias.runtime import describe_run, resolve_device, set_seed


def load_digits(device: torch.device, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Training split of the digits (inputs ``(n, 64)`` in [0, 1], integer labels)."""
    try:
        from implicit_bias.data import digits
    except ImportError:  # the data module is optional for this script
        from sklearn.datasets import load_digits as sk_digits

        X, y = sk_digits(return_X_y=True)
        return (torch.as_tensor(X / 16.0, dtype=dtype, device=device),
                torch.as_tensor(y, dtype=torch.int64, device=device))
    split = digits(seed=0, dtype=dtype, device=device)
    return split.X_train, split.y_train


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn, device: torch.device):
    sync(device)
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    sync(device)
    return out, time.perf_counter() - wall, time.process_time() - cpu


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=int, default=64, help="number of networks (default 64)")
    ap.add_argument("--width", type=int, default=32, help="hidden width (default 32)")
    ap.add_argument("--depth", type=int, default=3, help="number of weight layers (default 3)")
    ap.add_argument("--steps", type=int, default=200, help="GD steps (default 200)")
    ap.add_argument("--lr", type=float, default=0.1, help="learning rate (default 0.1)")
    ap.add_argument("--device", default="auto", help="'auto' (GPU if present), 'cpu' or 'cuda'")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch CPU threads (default 1, the book's setting; 0 leaves torch's default)")
    ap.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    ap.add_argument("--samples", type=int, default=0,
                    help="use only the first N training digits (default 0: all 1347)")
    args = ap.parse_args(argv)
    for name in ("models", "width", "depth", "steps"):
        if getattr(args, name) < 1:
            ap.error(f"--{name} must be >= 1")

    set_seed(0, threads=args.threads or None)
    device = resolve_device(args.device)
    dtype = getattr(torch, args.dtype)
    X, y = load_digits(device, dtype)
    if args.samples:
        if args.samples < 0:
            ap.error("--samples must be >= 0")
        X, y = X[: args.samples], y[: args.samples]
    print(describe_run("benchmark", 0, device), f"threads={torch.get_num_threads()}")
    print(f"{args.models} MLPs 64-{'-'.join([str(args.width)] * (args.depth - 1))}-10, "
          f"{len(X)} digits, {args.steps} full-batch GD steps, lr {args.lr}, {args.dtype}")

    def make(seed: int) -> torch.nn.Module:
        torch.manual_seed(seed)
        return models.MLP(64, 10, width=args.width, depth=args.depth).to(device=device, dtype=dtype)

    inits = [make(seed) for seed in range(args.models)]

    # warm-up of both paths (allocations, vmap tracing caches), not timed
    ensembles.train_ensemble(ensembles.Ensemble.from_models(inits[:2]), X, y, steps=2, lr=args.lr,
                             progress=False)
    train.train(copy.deepcopy(inits[0]), X, y, steps=2, lr=args.lr, progress=False)

    ens = ensembles.Ensemble.from_models(inits)
    hist, ens_wall, ens_cpu = timed(
        lambda: ensembles.train_ensemble(ens, X, y, loss="ce", steps=args.steps, lr=args.lr,
                                         progress=False), device)

    def loop() -> torch.Tensor:
        finals = []
        for net in inits:
            net = copy.deepcopy(net)
            h = train.train(net, X, y, loss="ce", steps=args.steps, lr=args.lr, optimizer="gd",
                            progress=False)
            finals.append(h.loss[-1])
        return torch.stack(finals)

    loop_final, loop_wall, loop_cpu = timed(loop, device)

    ens_final = hist.loss[:, -1]
    diff = (ens_final - loop_final).abs().max().item()
    print(f"final loss: mean {ens_final.mean().item():.4f} (from {hist.loss[:, 0].mean().item():.4f}); "
          f"max |ensemble - loop| = {diff:.2e}")
    print(f"{'':10s}{'wall s':>10s}{'CPU s':>10s}")
    print(f"{'ensemble':10s}{ens_wall:10.2f}{ens_cpu:10.2f}")
    print(f"{'loop':10s}{loop_wall:10.2f}{loop_cpu:10.2f}")
    print(f"speed-up (wall): {loop_wall / ens_wall:.1f}x   (CPU time): {loop_cpu / max(ens_cpu, 1e-9):.1f}x")
    tol = 1e-4 if dtype == torch.float32 else 1e-10
    if not diff <= tol:
        raise SystemExit(f"the two paths disagree: max difference {diff:.2e} > {tol:g}")


if __name__ == "__main__":
    main()
