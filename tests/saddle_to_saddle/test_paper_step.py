"""The paper's-step study (saddle_to_saddle.paper_step), the plateau certificate and the
checkpoint spectra panels (saddle_to_saddle.training)."""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import torch

from implicit_bias import models
from implicit_bias.saddle_to_saddle import paper_step, training


def _data(n: int = 60, d: int = 12, K: int = 3):
    g = torch.Generator().manual_seed(0)
    X = torch.randn(n, d, generator=g)
    return X, torch.randint(0, K, (n,), generator=g)


def test_left_at_finds_the_first_step_below_the_level():
    assert paper_step._left_at([0, 10, 20, 30], [2.0, 1.95, 1.7, 1.5], 1.8) == 20
    assert paper_step._left_at([0, 10], [2.0, 1.99], 1.8) is None


def test_study_runs_and_is_described():
    X, y = _data()
    out = paper_step.paper_step_study(X, y, width=8, std=0.3, eta0=3.0, steps=20, runs=3, init_runs=2, factor=2,
                                      probe=30)
    sm = out["summary"]
    assert sm["init_runs"] == 2 and sm["init_steps"] == 40 and len(out["init"]) == 2
    assert sm["branch_runs"] == len(out["branches"]["runs"])
    text = paper_step.describe(out)
    assert "From the initialisation" in text and "paper's step" in text
    assert isinstance(paper_step.verdict(out), str) and "not been studied" in paper_step.verdict(None)


def test_verdict_says_not_resolved_only_when_no_branch_leaves():
    base = {"summary": {"branch_runs": 3, "branch_paper_left": 0, "branch_paper_steps": 100}}
    assert "not resolved" in paper_step.verdict(base)
    base["summary"]["branch_paper_left"] = 2
    base["summary"]["branch_paper_left_at"] = [40, 90]
    assert "2 of the 3" in paper_step.verdict(base) and "not resolved" not in paper_step.verdict(base)


def test_plateau_certificate_passes_at_the_origin_and_fails_in_a_drop():
    """A tiny network next to the saddle at the origin does not move at its fixed rate (certified);
    a network of usual scale trained at a large fixed rate moves its loss (not certified)."""
    X, y = _data()
    dims = [X.shape[1], 16, 16, 3]
    small = models.gaussian_weights(dims, 1e-3, (2,), generator=torch.Generator().manual_seed(1))
    big = models.gaussian_weights(dims, 1.0 / math.sqrt(16), (2,), generator=torch.Generator().manual_seed(1))
    # at the origin the rate eta0 (||theta|| / sqrt L)^(2-L) is huge, so use a small eta0 there
    cert_small = training.plateau_certificate(small, X, y, eta0=1e-6, window=50, tol=0.01)
    cert_big = training.plateau_certificate(big, X, y, eta0=1.0, window=50, tol=0.01)
    assert cert_small.all_certified
    assert not bool(cert_big.certified.any())


def test_checkpoint_spectra_panels_draw_one_line_per_layer_and_hide_missing_checkpoints():
    X, y = _data()
    config = training.RunConfig(depth=3, width=6, d_in=X.shape[1], d_out=3, std=0.1, eta0=1.0, steps=10, runs=2,
                                probe=20, record=3, uniform=2)
    result = training.train_runs(config, X, y)
    fig, axes = plt.subplots(1, 2)
    training.checkpoint_spectra_panels(result, 1, ((axes[0], 0, "start"), (axes[1], None, "none")))
    assert len(axes[0].lines) == 3 and not axes[1].axison
    plt.close(fig)
