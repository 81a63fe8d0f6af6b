"""The paper's step size against the enlarged step of the MNIST page (Bantzis, Simon & Jacot,
Sec. 3.3; chapter 5 of the saddle-to-saddle part).

Chapter 5 trains at thirty times the paper's time-changed step ``eta0 = 10/36`` so that its runs
leave the origin within a CPU budget. :func:`paper_step_study` asks what the paper's own step
does for ten times the page's number of steps, in two ways:

- **from the initialisation**: the page's depth-6 networks (same seeds, data, width, scale),
  trained at the paper's step for ``factor * steps`` steps: which runs leave the origin, when, and
  whether any gets below the second plateau;
- **from the second plateau**: the page's own runs at the enlarged step, trained for its ``steps``;
  those on the second plateau at the end are continued for ``factor * steps`` steps at the
  paper's step (and, for comparison, for ``steps`` steps at the enlarged step). A run *leaves the
  second plateau* when its probe loss falls ``band`` below its loss at the branch point (chapter 5's
  10%); the step at which it does so is reported.

The result is a plain dictionary (JSON), written by ``python -m implicit_bias.saddle_to_saddle.paper_step``
to ``book/data/saddle_to_saddle_paper_step.json``, which the page reads and shows: the run takes
tens of CPU minutes, more than the page's ``ci`` budget.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import torch

from .. import models, train
from ..runtime import set_seed
from . import summaries, training

PAPER_ETA0 = 10 / 36          # the paper's 10 / ||theta||^4 at depth 6, in the units of training.RunConfig
OUTPUT = Path("book/data/saddle_to_saddle_paper_step.json")


def _branch(start: list[torch.Tensor], X: torch.Tensor, y: torch.Tensor, probe_rows: torch.Tensor, *, eta0: float,
            steps: int, batch: int, seed: int, n_records: int = 100) -> dict[str, Any]:
    """Continue stacked depth-6 networks from ``start`` for ``steps`` norm-adaptive SGD steps;
    record the probe loss and the mean ``s2/s1`` of layers 4-6 at ``n_records + 1`` steps."""
    Ws = [W.clone() for W in start]
    Xp, yp = X[probe_rows], y[probe_rows]
    R = Ws[0].shape[0]

    def probe(ws: list[torch.Tensor]) -> torch.Tensor:
        out = models.layer_activations(ws, Xp)[0][-1]
        return torch.nn.functional.cross_entropy(out.transpose(1, 2), yp.expand(R, -1),
                                                 reduction="none").mean(1).double().cpu()

    def deep(ws: list[torch.Tensor]) -> torch.Tensor:
        sv = [torch.linalg.svdvals(W.double()) for W in ws[3:]]
        return torch.stack([s[:, 1] / s[:, 0] for s in sv], -1).mean(-1).cpu()

    record = sorted({round(steps * i / n_records) for i in range(n_records + 1)})
    hist = train.train_norm_adaptive(Ws, X, y, loss="ce", steps=steps, eta0=eta0, radius=math.sqrt(6),
                                     batch_size=batch, generator=torch.Generator(device=X.device).manual_seed(seed),
                                     record_steps=record, metrics={"probe": probe, "deep": deep}, progress=False)
    return {"steps": list(hist.record_steps), "loss": hist.stacked("probe").double().T.tolist(),
            "deep": hist.stacked("deep").double().T.tolist()}


def _left_at(steps: list[int], loss: list[float], level: float) -> int | None:
    """First recorded step at which ``loss`` is below ``level`` (None if never)."""
    return next((s for s, v in zip(steps, loss) if v < level), None)


def paper_step_study(X: torch.Tensor, y: torch.Tensor, *, width: int = 64, std: float = 1 / 64, eta0: float = 300 / 36,
                     steps: int = 5000, runs: int = 16, init_runs: int = 4, branch_runs: int | None = None,
                     batch: int = 32, factor: int = 10, seed: int = 0, probe: int = 300,
                     band: float = 0.1) -> dict[str, Any]:
    """Run the two studies of the module docstring with chapter 5's ``ci`` settings (``eta0`` is
    the page's enlarged step, ``runs`` its number of depth-6 networks) and return their per-run
    results and a summary. The study from the initialisation trains ``init_runs`` networks (a
    new draw of the same seed: fewer networks, to fit the CPU time; 0 skips it); the branches
    continue the first ``branch_runs`` of the runs on the second plateau (all if None)."""
    K = int(y.max()) + 1
    log_k = math.log(K)
    t0 = time.time()

    def config(eta: float, n: int, r: int) -> training.RunConfig:
        return training.RunConfig(depth=6, width=width, d_in=X.shape[1], d_out=K, std=std, eta0=eta, steps=n,
                                  batch_size=batch, radius=math.sqrt(6), runs=r, seed=1000 * seed, probe=probe)

    # the page's runs at the enlarged step, then branches from the second plateau
    big = training.train_runs(config(eta0, steps, runs), X, y, progress=False)
    sb = summaries.summarize(big, deep=[4, 5, 6])
    on2_all = [r for r, s in enumerate(sb) if s.on_second_plateau]
    on2 = on2_all[:branch_runs] if branch_runs is not None else on2_all
    probe_rows = torch.randperm(len(X), generator=torch.Generator().manual_seed(1000 * seed))[:probe].to(X.device)
    branches: dict[str, Any] = {"runs": on2}
    if on2:
        start = [W[on2].clone() for W in big.weights]
        for name, eta, n in (("paper", PAPER_ETA0, factor * steps), ("enlarged", eta0, steps)):
            b = _branch(start, X, y, probe_rows, eta0=eta, steps=n, batch=batch, seed=10_000 * seed + 99)
            b["left_at"] = [_left_at(b["steps"], curve, (1 - band) * curve[0]) for curve in b["loss"]]
            b["eta0"] = eta
            branches[name] = b
    # from the initialisation, at the paper's step
    init = []
    if init_runs:
        paper = training.train_runs(config(PAPER_ETA0, factor * steps, init_runs), X, y, progress=False)
        sp = summaries.summarize(paper, deep=[4, 5, 6])
        init = [{"left_origin": s.left_origin,
                 "escape_step": paper.spectra_steps[s.k_escape] if s.k_escape is not None else None,
                 "deep_escape": s.deep_escape, "final_loss": s.final_loss, "on_second_plateau": s.on_second_plateau,
                 "deep_final": s.deep_final} for s in sp]
    left_init = [r["escape_step"] for r in init if r["left_origin"]]
    summary = {
        "init_runs": init_runs, "init_steps": factor * steps,
        "init_left_origin": len(left_init),
        "init_first_escape": min(left_init, default=None), "init_last_escape": max(left_init, default=None),
        "init_on_second_plateau": sum(r["on_second_plateau"] for r in init),
        "init_below_1.6": sum(r["final_loss"] < 1.6 for r in init),
        "on_second_plateau": len(on2_all), "branch_runs": len(on2), "branch_paper_steps": factor * steps, "branch_enlarged_steps": steps,
        "branch_paper_left": sum(s is not None for s in branches.get("paper", {}).get("left_at", [])),
        "branch_enlarged_left": sum(s is not None for s in branches.get("enlarged", {}).get("left_at", [])),
        "branch_paper_left_at": [s for s in branches.get("paper", {}).get("left_at", []) if s is not None],
        "branch_enlarged_left_at": [s for s in branches.get("enlarged", {}).get("left_at", []) if s is not None],
        "branch_paper_loss_drop": max((c[0] - min(c) for c in branches.get("paper", {}).get("loss", [])),
                                      default=None),
        "branch_paper_deep_max": max((max(c) for c in branches.get("paper", {}).get("deep", [])), default=None),
    }
    return {"settings": dict(width=width, std=std, eta0=eta0, paper_eta0=PAPER_ETA0, steps=steps, runs=runs,
                             init_runs=init_runs,
                             batch=batch, factor=factor, seed=seed, probe=probe, band=band, log_k=log_k),
            "summary": summary, "init": init, "branches": branches, "cpu_minutes": (time.time() - t0) / 60}


def load_study(root: Path) -> dict[str, Any] | None:
    """The committed study (``root / OUTPUT``), or None if it has not been run."""
    path = Path(root) / OUTPUT
    return json.loads(path.read_text()) if path.exists() else None


def describe(study: dict[str, Any]) -> str:
    """What the study shows, in sentences with its numbers (for the page)."""
    st, sm = study["settings"], study["summary"]
    ratio = st["eta0"] / st["paper_eta0"]
    steps = lambda xs: ", ".join(f"{x:,}" for x in xs) if xs else "none"
    out = []
    n = sm["branch_runs"]
    if n:
        same_s = round(sm["branch_paper_steps"] / ratio)      # enlarged steps covering the same s-time
        enl = sm["branch_enlarged_left_at"]
        out.append(
            f"Of the {sm['on_second_plateau']} runs on the second plateau at the end of this page's runs, the first "
            f"{n}, continued at the paper's step "
            f"for {sm['branch_paper_steps']:,} steps (ten times this page's budget), {sm['branch_paper_left']} left it "
            f"(probe loss {st['band']:.0%} below the branch point; steps: {steps(sm['branch_paper_left_at'])}); "
            f"the loss fell by at most {sm['branch_paper_loss_drop']:.3f} and the mean s2/s1 of layers 4-6 stayed at "
            f"most {sm['branch_paper_deep_max']:.2f}. Continued at this page's step ({ratio:.0f} times the paper's) "
            f"for {sm['branch_enlarged_steps']:,} steps, {sm['branch_enlarged_left']} of them left it (steps: "
            f"{steps(enl)}); {sum(x <= same_s for x in enl)} within the first {same_s:,}, the time s of Section 2.1 "
            f"that the paper's-step branch covers.")
    else:
        out.append("No run of this page was on the second plateau at the end, so no branch was continued.")
    left = [r["escape_step"] for r in study["init"] if r["left_origin"]]
    if sm["init_runs"]:
        out.append(
            f"From the initialisation, {sm['init_left_origin']} of {sm['init_runs']} depth-6 networks trained at "
            f"the paper's step for {sm['init_steps']:,} steps left the origin (steps: {steps(sorted(left))}), and "
            f"{sm['init_below_1.6']} got below loss 1.6.")
    return " ".join(out)


def verdict(study: dict[str, Any] | None) -> str:
    """One sentence: is the second plateau left at the paper's step within the study's budget?"""
    if study is None:
        return "the paper's step has not been studied on this checkout"
    sm = study["summary"]
    if not sm["branch_runs"]:
        return "no run was on the second plateau to continue at the paper's step"
    if sm["branch_paper_left"] == 0:
        return (f"at the paper's step none of the {sm['branch_runs']} runs on the second plateau leaves it within "
                f"{sm['branch_paper_steps']:,} steps (ten times this page's budget): not resolved at this budget")
    return (f"at the paper's step {sm['branch_paper_left']} of the {sm['branch_runs']} runs continued from the second "
            f"plateau left it within {sm['branch_paper_steps']:,} steps (ten times this page's budget), at steps "
            + ", ".join(f"{x:,}" for x in sm["branch_paper_left_at"]))


def main(argv: list[str] | None = None) -> None:
    """Command line: run :func:`paper_step_study` on chapter 5's MNIST subset and write the JSON."""
    from .. import data

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--factor", type=int, default=10, help="the paper's step runs factor * steps steps")
    parser.add_argument("--runs", type=int, default=16)
    parser.add_argument("--init-runs", type=int, default=4)
    parser.add_argument("--branch-runs", type=int, default=None)
    parser.add_argument("--out", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    set_seed(0, threads=1)
    split, copy = data.load_mnist_split(None)
    X = training.standardize(split.X_train.flatten(1))
    out = paper_step_study(X, split.y_train, runs=args.runs, init_runs=args.init_runs, branch_runs=args.branch_runs,
                           factor=args.factor)
    out["data"] = copy.description
    out["command"] = (f"python -m implicit_bias.saddle_to_saddle.paper_step --factor {args.factor} --runs {args.runs} "
                      f"--init-runs {args.init_runs}" + (f" --branch-runs {args.branch_runs}" if args.branch_runs else ""))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out["summary"], indent=1))


if __name__ == "__main__":
    main()
