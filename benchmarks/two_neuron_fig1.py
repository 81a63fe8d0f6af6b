"""Batched against one-by-one: the Figure 1 simulation of Timor, Vardi & Shamir (2023).

Runs the paper's two-point experiment (2-2-2 ReLU network, initialisation on the circle of
radius 1e-4) for ``--runs`` networks twice: once as one batch of (R, 2, 2) tensors with
hand-written gradients (``two_neuron.simulate``), once as a Python loop over runs with autograd
(``two_neuron.simulate_loop``), from the same initial weights and with the same early stopping.
Prints both CPU times, the speed-up and how far apart the results are.

    python benchmarks/two_neuron_fig1.py --runs 16 --steps 10000
"""

from __future__ import annotations

import argparse
import time

import torch

from implicit_bias.rank_minimization import two_neuron as tn


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=16, help="networks (the paper: 288)")
    ap.add_argument("--steps", type=int, default=10_000, help="GD steps (GF time = lr * steps)")
    ap.add_argument("--lr", type=float, default=1e-2, help="step size (the paper: 1e-4)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    X, Y = tn.paper_dataset()
    W0, V0 = tn.paper_init(args.runs, 1e-4, torch.Generator().manual_seed(args.seed))

    t0 = time.process_time()
    sim = tn.simulate(W0, V0, X, Y, lr=args.lr, steps=args.steps)
    t_batch = time.process_time() - t0

    t0 = time.process_time()
    W_loop, V_loop = tn.simulate_loop(W0, V0, X, Y, lr=args.lr, steps=args.steps)
    t_loop = time.process_time() - t0

    conv_loop = tn.loss(W_loop, V_loop, X.expand(args.runs, 2, 2), Y.expand(args.runs, 2, 2)) < 1e-4
    diff = max(float((sim.W - W_loop).abs().max()), float((sim.V - V_loop).abs().max()))
    print(f"{args.runs} runs, {args.steps} steps of size {args.lr:g} (GF time {args.lr * args.steps:g})")
    print(f"batched : {t_batch:8.2f} CPU-s   ({int(sim.converged.sum())} converged)")
    print(f"loop    : {t_loop:8.2f} CPU-s   ({int(conv_loop.sum())} converged)")
    print(f"speed-up: {t_loop / t_batch:8.1f}x   max |difference| of the final weights {diff:.1e}; "
          f"same outcome for {int((conv_loop == sim.converged).sum())} of {args.runs} runs")


if __name__ == "__main__":
    main()
