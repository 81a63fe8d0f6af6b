"""The explicit networks of `implicit_bias.bottleneck.constructions`, checked exactly."""

from __future__ import annotations

import math

import pytest
import torch

from implicit_bias import models, spectra
from implicit_bias.bottleneck import constructions as C

D = torch.float64


def test_balanced_linear_factorization() -> None:
    g = torch.Generator().manual_seed(0)
    A = torch.randn(5, 3, generator=g, dtype=D) @ torch.randn(3, 6, generator=g, dtype=D)   # rank 3
    for L in (1, 2, 7):
        W = C.balanced_linear_factorization(A, L)
        P = W[0]
        for w in W[1:]:
            P = w @ P
        assert torch.allclose(P, A, atol=1e-10)
        cost = L * spectra.schatten_power(A, 2 / L).item()
        assert sum(w.pow(2).sum().item() for w in W) == pytest.approx(cost, rel=1e-10)


def test_paths_compute_A_on_the_orthant_and_their_norms() -> None:
    s = torch.tensor([3.0, 0.5, 1.7, 0.0], dtype=D)
    X = torch.rand(10, 4, generator=torch.Generator().manual_seed(1), dtype=D)
    k, logdet = 3, float(torch.log(s[:3]).sum())
    for L in (3, 10, 40):
        for path in (C.geometric_path(s, L), C.interpolation_path(s, L)):
            W, b = path
            assert torch.allclose(models.mlp_trace(W, b, X).output, X * s, atol=1e-12)
        geo = models.param_sqnorm(C.geometric_path(s, L)[0]).item()
        assert geo == pytest.approx(L * float((s[:3] ** (2 / L)).sum()), rel=1e-12)
        inter = models.param_sqnorm(C.interpolation_path(s, L)[0]).item()
        assert geo <= inter
    # 1/L coefficients: 2 sum (log s)^2 (geometric) and sum (s - 1/s)^2 / 2 (interpolation)
    L = 4000
    geo = models.param_sqnorm(C.geometric_path(s, L)[0]).item() - L * k - 2 * logdet
    inter = models.param_sqnorm(C.interpolation_path(s, L)[0]).item() - L * k - 2 * logdet
    assert L * geo == pytest.approx(2 * float((torch.log(s[:3]) ** 2).sum()), rel=1e-3)
    assert L * inter == pytest.approx(C.interpolation_path_coefficient(s), rel=1e-3)


def test_printed_interpolation_path_computes_the_wrong_map() -> None:
    s = torch.tensor([3.0, 0.5], dtype=D)
    X = torch.rand(6, 2, dtype=D) + 0.1
    W, b = C.interpolation_path(s, 8, printed=True)
    out = models.mlp_trace(W, b, X).output
    assert torch.allclose(out, X, atol=1e-12)                 # it outputs P x = x, not A x
    assert not torch.allclose(out, X * s)


def test_planar_identity() -> None:
    g = torch.Generator().manual_seed(2)
    Q, _ = torch.linalg.qr(torch.randn(5, 5, generator=g, dtype=D))
    O = Q[:, :2].T                                             # (2, 5): rows orthonormal, k = 2
    Z = torch.rand(8, 2, generator=g, dtype=D)
    X = Z @ O                                                  # points of a planar domain with O X >= 0
    for L in (2, 3, 9):
        W, b = C.planar_identity(O, L)
        assert torch.allclose(models.mlp_trace(W, b, X).output, X, atol=1e-12)
        assert models.param_sqnorm(W).item() == pytest.approx(2 * L, rel=1e-12)
    with pytest.raises(ValueError):
        C.planar_identity(O, 1)


@pytest.mark.parametrize("L", [4, 16, 256])
def test_example20(L: int) -> None:
    W, b = C.example20(L)
    X = torch.rand(50, 3, generator=torch.Generator().manual_seed(L), dtype=D)
    assert torch.allclose(models.mlp_trace(W, b, X).output, C.example20_target(X), atol=1e-11)
    assert models.param_sqnorm(W).item() - 3 * L == pytest.approx(C.example20_sqnorm(L), abs=1e-9)
    assert len(W) == L
    with pytest.raises(ValueError):
        C.example20(L + 1)


def test_example20_residual_rate() -> None:
    gamma = 0.75
    vals = [C.example20_sqnorm(L, gamma) * L ** (2 * gamma - 1) for L in (4096, 2**16, 2**20)]
    assert vals[-1] == pytest.approx(12.0, rel=2e-2)
    assert C.example20_sqnorm(2**20, gamma) * (2**20) ** (2 * gamma) > 1e5          # not O(L^{-2 gamma})


def test_parallel_sum_and_stack() -> None:
    g = torch.Generator().manual_seed(3)

    def net(dims):
        return ([torch.randn(dims[i + 1], dims[i], generator=g, dtype=D) for i in range(len(dims) - 1)],
                [torch.randn(dims[i + 1], generator=g, dtype=D) for i in range(len(dims) - 1)])

    f, h = net([3, 4, 5, 2]), net([3, 6, 2, 2])
    X = torch.randn(7, 3, generator=g, dtype=D)
    W, b = C.parallel_sum(f, h)
    out = models.mlp_trace(W, b, X).output
    assert torch.allclose(out, models.mlp_trace(*f, X).output + models.mlp_trace(*h, X).output)
    expected = (models.param_sqnorm(f[0] + f[1]) + models.param_sqnorm(h[0] + h[1])
                - f[1][-1].pow(2).sum() - h[1][-1].pow(2).sum() + (f[1][-1] + h[1][-1]).pow(2).sum())
    assert models.param_sqnorm(W + b).item() == pytest.approx(expected.item())
    # stacking: inner network with nonnegative outputs on X (a ReLU'd last layer plus a bias shift)
    inner = net([3, 4, 3])
    inner[1][-1] = inner[1][-1] + 100.0
    outer = net([3, 5, 2])
    W, b = C.stack(outer, inner)
    assert torch.allclose(models.mlp_trace(W, b, X).output,
                          models.mlp_trace(*outer, models.mlp_trace(*inner, X).output).output)
    assert models.param_sqnorm(W + b).item() == pytest.approx(
        (models.param_sqnorm(outer[0] + outer[1]) + models.param_sqnorm(inner[0] + inner[1])).item())
