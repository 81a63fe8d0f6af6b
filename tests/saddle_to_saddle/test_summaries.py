"""Per-run summaries of saddle-to-saddle training: checkpoints on synthetic loss curves and spectra."""

from __future__ import annotations

import math

import pytest
import torch

from implicit_bias.saddle_to_saddle import summaries, training


def fake_result(curves: list[list[float]], ratios: list[list[list[float]]], steps: int = 1000) -> training.RunResult:
    """A RunResult with the given probe-loss curves ``(runs, K)`` and s2/s1 ratios ``(K, runs, L)``
    (singular values (1, ratio))."""
    runs, K = len(curves), len(curves[0])
    L = len(ratios[0][0])
    config = training.RunConfig(depth=L, width=4, d_in=4, d_out=10, std=0.01, eta0=1.0, steps=steps, runs=runs)
    rec = [round(i * steps / (K - 1)) for i in range(K)]
    spectra = [[torch.tensor([[1.0, ratios[k][r][l]] for r in range(runs)], dtype=torch.float64) for l in range(L)]
               for k in range(K)]
    return training.RunResult(config, torch.tensor(curves, dtype=torch.float64), torch.zeros(runs, steps), rec,
                              spectra, torch.ones(K, runs), [])


def staircase(K: int, t1: int, level: float, t2: int | None = None, level2: float = 0.5) -> list[float]:
    top = math.log(10)
    out = []
    for k in range(K):
        v = top if k < t1 else level
        if k in (t1, t1 + 1):  # a two-record drop
            v = top - (top - level) * (k - t1 + 1) / 3
        if t2 is not None and k >= t2:
            v = level2
        out.append(v)
    return out


def test_checkpoints_on_a_staircase() -> None:
    K = 101
    c0 = staircase(K, 30, 1.9)                   # origin, drop at 30-32, second plateau to the end
    c1 = [math.log(10)] * K                      # never leaves the origin
    c2 = staircase(K, 20, 1.9, t2=70, level2=0.6)  # leaves the second plateau at 70
    ratios = []
    for k in range(K):
        r0 = [0.9, 0.9, 0.9] if k < 30 else [0.6, 0.1, 0.2]
        r1 = [0.95, 0.95, 0.95]
        r2 = [0.9, 0.9, 0.9] if k < 20 else ([0.5, 0.15, 0.15] if k < 70 else [0.7, 0.6, 0.6])
        ratios.append([r0, r1, r2])
    res = fake_result([c0, c1, c2], ratios)
    s0, s1, s2 = summaries.summarize(res, deep=[2, 3])
    # run 0: plateau at the origin for about 30% of the run, then a saddle; the escape checkpoint
    # is the first record 10% below log 10
    assert 0.25 < s0.origin_share < 0.35 and abs(s0.origin_level - math.log(10)) < 1e-2
    assert s0.left_origin and s0.k_escape == 31 and s0.saddle_at_origin  # 2.17 at record 30, 1.99 at 31
    assert s0.deep_escape == pytest.approx(0.15) and s0.w1_escape == pytest.approx(0.6)
    assert s0.k_first_drop is not None and s0.k_first_drop >= 31
    assert s0.deep_first_drop == pytest.approx(0.15) and s0.on_second_plateau
    assert s0.deep_final == pytest.approx(0.15) and s0.final_loss == pytest.approx(1.9)
    # run 1: never leaves; no checkpoint, a plateau over the whole run but no saddle
    assert s1.origin_share == pytest.approx(1.0) and not s1.left_origin and s1.k_escape is None
    assert math.isnan(s1.deep_escape) and not s1.saddle_at_origin and not s1.on_second_plateau
    # run 2: left the second plateau at the end
    assert s2.left_origin and s2.k_escape == 21 and not s2.on_second_plateau
    assert s2.deep_final == pytest.approx(0.6)


def test_a_run_without_plateau_at_the_origin() -> None:
    K = 51
    curve = [math.log(10) * math.exp(-k / 5) + 0.01 for k in range(K)]  # leaves at once
    res = fake_result([curve], [[[0.9, 0.9]] for _ in range(K)])
    (s,) = summaries.summarize(res, deep=[2])
    assert s.origin_share == 0.0 and math.isnan(s.origin_level) and not s.saddle_at_origin
    assert s.left_origin and s.k_escape == 1 and s.k_first_drop is None and not s.on_second_plateau


def test_on_real_training_runs() -> None:
    g = torch.Generator().manual_seed(0)
    y = torch.arange(90) % 3
    X = 2 * torch.randn(3, 6, generator=g)[y] + torch.randn(90, 6, generator=g)
    cfg = training.RunConfig(depth=3, width=8, d_in=6, d_out=3, std=0.1, eta0=0.5, steps=60, batch_size=8,
                             radius=3 ** 0.5, runs=2, seed=1, probe=20, record=5, uniform=6)
    out = summaries.summarize(training.train_runs(cfg, X, y, progress=False), deep=[2, 3])
    assert len(out) == 2 and all(0 <= s.origin_share <= 1 for s in out)
