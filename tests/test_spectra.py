"""Rank measures of `implicit_bias.spectra` on matrices whose answers are known by hand."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from implicit_bias import models, spectra

D = torch.float64


def orthogonal(n: int, k: int, seed: int) -> torch.Tensor:
    """An ``(n, k)`` matrix with orthonormal columns."""
    g = torch.Generator().manual_seed(seed)
    Q, _ = torch.linalg.qr(torch.randn(n, k, generator=g, dtype=D))
    return Q


def with_singular_values(m: int, n: int, s: list[float], seed: int = 0) -> torch.Tensor:
    """``U diag(s) V^T`` with orthonormal ``U (m, k)`` and ``V (n, k)``."""
    k = len(s)
    U, V = orthogonal(m, k, seed), orthogonal(n, k, seed + 100)
    return U @ torch.diag(torch.tensor(s, dtype=D)) @ V.T


# --- identity ----------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 5, 16])
def test_identity(n: int) -> None:
    I = torch.eye(n, dtype=D)
    assert spectra.stable_rank(I).item() == pytest.approx(n)
    assert spectra.effective_rank(I).item() == pytest.approx(n)
    assert spectra.spectral_frobenius_ratio(I).item() == pytest.approx(1 / math.sqrt(n))
    assert spectra.numerical_rank(I).item() == n
    assert torch.allclose(spectra.singular_values(I), torch.ones(n, dtype=D))


# --- rank one ----------------------------------------------------------------------------

def test_rank_one_outer_product() -> None:
    g = torch.Generator().manual_seed(0)
    u = torch.randn(7, generator=g, dtype=D)
    v = torch.randn(5, generator=g, dtype=D)
    W = torch.outer(u, v)
    assert spectra.stable_rank(W).item() == pytest.approx(1.0)
    assert spectra.spectral_frobenius_ratio(W).item() == pytest.approx(1.0)
    assert spectra.numerical_rank(W).item() == 1
    assert spectra.effective_rank(W).item() == pytest.approx(1.0, abs=1e-6)
    assert spectra.singular_values(W)[0].item() == pytest.approx(u.norm().item() * v.norm().item())


# --- diag(3, 4) and other hand examples -------------------------------------------------

def test_diag_3_4_hand_values() -> None:
    W = torch.diag(torch.tensor([3.0, 4.0], dtype=D))
    assert torch.allclose(spectra.singular_values(W), torch.tensor([4.0, 3.0], dtype=D))
    # ||W||_F^2 = 25, ||W||_2^2 = 16
    assert spectra.stable_rank(W).item() == pytest.approx(25 / 16)
    assert spectra.spectral_frobenius_ratio(W).item() == pytest.approx(4 / 5)
    # p = (4/7, 3/7), H = -(4/7) log(4/7) - (3/7) log(3/7)
    p = torch.tensor([4 / 7, 3 / 7], dtype=D)
    assert spectra.effective_rank(W).item() == pytest.approx(math.exp(float(-(p * p.log()).sum())))
    assert spectra.numerical_rank(W).item() == 2
    # a threshold between 3/4 and 1 drops the smaller value
    assert spectra.numerical_rank(W, tol=0.8).item() == 1
    assert spectra.numerical_rank(W, tol=0.7).item() == 2


def test_numerical_rank_threshold_is_relative_and_strict() -> None:
    W = torch.diag(torch.tensor([10.0, 1.0, 2e-2, 1e-5], dtype=D))
    assert spectra.numerical_rank(W, tol=1e-3).item() == 3  # 2e-2 > 1e-3 * 10, 1e-5 is not
    assert spectra.numerical_rank(W, tol=1e-1).item() == 1  # 1.0 is not > 0.1 * 10 (strict)
    assert spectra.numerical_rank(W, tol=2e-3).item() == 2  # 2e-2 is not > 2e-3 * 10 (strict)
    assert spectra.numerical_rank(100 * W, tol=1e-3).item() == 3  # scale invariant


def test_scale_invariance() -> None:
    W = with_singular_values(6, 4, [2.0, 1.0, 0.5])
    for f in (spectra.stable_rank, spectra.effective_rank, spectra.spectral_frobenius_ratio):
        assert f(37.5 * W).item() == pytest.approx(f(W).item())


@pytest.mark.parametrize("m,n", [(8, 5), (5, 8)])
def test_rank_k_with_chosen_singular_values(m: int, n: int) -> None:
    s = [5.0, 2.0, 1.0]
    W = with_singular_values(m, n, s, seed=3)
    sv = spectra.singular_values(W)
    assert torch.allclose(sv[:3], torch.tensor(s, dtype=D), atol=1e-12)
    assert torch.all(sv[3:].abs() < 1e-12)
    fro2 = sum(x * x for x in s)
    assert spectra.stable_rank(W).item() == pytest.approx(fro2 / 25)
    assert spectra.spectral_frobenius_ratio(W).item() == pytest.approx(5 / math.sqrt(fro2))
    assert spectra.numerical_rank(W).item() == 3
    p = torch.tensor(s, dtype=D) / sum(s)
    assert spectra.effective_rank(W).item() == pytest.approx(math.exp(float(-(p * p.log()).sum())))


def test_relations_between_measures() -> None:
    """rho = srank^{-1/2}; 1 <= srank <= erank <= rank; 1/sqrt(rank) <= rho <= 1 (notation page)."""
    g = torch.Generator().manual_seed(1)
    Ws = torch.randn(20, 6, 9, generator=g, dtype=D) * torch.rand(20, 1, 9, generator=g, dtype=D) ** 4
    sr, rho = spectra.stable_rank(Ws), spectra.spectral_frobenius_ratio(Ws)
    er, rk = spectra.effective_rank(Ws), torch.linalg.matrix_rank(Ws).to(D)
    assert torch.allclose(rho, sr.rsqrt())
    assert torch.all(sr >= 1 - 1e-12) and torch.all(sr <= rk + 1e-12)
    assert torch.all(rho <= 1 + 1e-12) and torch.all(rho >= rk.rsqrt() - 1e-12)
    assert torch.all(er >= 1 - 1e-12) and torch.all(er <= rk + 1e-9)
    # srank <= ||s||_1 / s_1 = 1 / p_1 <= exp(H(p)) = erank
    l1_ratio = spectra.singular_values(Ws).sum(-1) / spectra.singular_values(Ws)[..., 0]
    assert torch.all(sr <= l1_ratio + 1e-12) and torch.all(l1_ratio <= er + 1e-12)
    # both ends are attained: all equal singular values (identity) and rank one
    for W in (torch.eye(4, dtype=D), torch.ones(3, 5, dtype=D)):
        assert spectra.stable_rank(W).item() == pytest.approx(spectra.effective_rank(W).item())


def test_zero_matrix_conventions() -> None:
    Z = torch.zeros(3, 4, dtype=D)
    assert math.isnan(spectra.stable_rank(Z).item())
    assert spectra.numerical_rank(Z).item() == 0
    assert spectra.pseudo_determinant(Z).item() == 1.0


# --- batched inputs ---------------------------------------------------------------------

def test_batched_inputs_match_loop() -> None:
    g = torch.Generator().manual_seed(2)
    Ws = torch.randn(3, 4, 6, 5, generator=g, dtype=D)
    Ws[0, 0] = torch.outer(torch.ones(6, dtype=D), torch.arange(5, dtype=D))  # rank 1
    for f in (spectra.stable_rank, spectra.effective_rank, spectra.spectral_frobenius_ratio,
              spectra.numerical_rank, spectra.pseudo_determinant):
        out = f(Ws)
        assert out.shape == (3, 4)
        for i in range(3):
            for j in range(4):
                assert out[i, j].item() == pytest.approx(f(Ws[i, j]).item())
    assert spectra.numerical_rank(Ws)[0, 0].item() == 1
    assert spectra.singular_values(Ws).shape == (3, 4, 5)


# --- alignment --------------------------------------------------------------------------

def test_alignment_constructed_one_and_zero() -> None:
    g = torch.Generator().manual_seed(4)
    W_k = with_singular_values(6, 4, [3.0, 1.0, 0.5], seed=5)
    u1 = spectra.top_singular_vectors(W_k)[0]  # top left singular vector of W_k
    v = torch.randn(3, generator=g, dtype=D)
    aligned = torch.outer(v, u1)  # W_{k+1} = v u^T: its top right singular vector is u1
    assert spectra.alignment(W_k, aligned).item() == pytest.approx(1.0)
    # the top right singular vector orthogonal to u1 -> alignment 0
    w = torch.randn(6, generator=g, dtype=D)
    w = w - (w @ u1) * u1
    orthogonal_next = torch.outer(v, w)
    assert spectra.alignment(W_k, orthogonal_next).item() == pytest.approx(0.0, abs=1e-12)
    # sign of the SVD does not matter
    assert spectra.alignment(W_k, -aligned).item() == pytest.approx(1.0)


def test_alignment_batched() -> None:
    A = torch.stack([torch.diag(torch.tensor([2.0, 1.0], dtype=D))] * 2)
    B = torch.stack([torch.diag(torch.tensor([5.0, 1.0], dtype=D)), torch.diag(torch.tensor([1.0, 5.0], dtype=D))])
    assert torch.allclose(spectra.alignment(A, B), torch.tensor([1.0, 0.0], dtype=D), atol=1e-12)


# --- pseudo-determinant -----------------------------------------------------------------

def test_pseudo_determinant_hand_example() -> None:
    W = torch.diag(torch.tensor([3.0, 4.0], dtype=D))
    assert spectra.pseudo_determinant(W).item() == pytest.approx(12.0)
    # rank-deficient: diag(2, 5, 0) -> 10 (the zero singular value is left out)
    R = torch.diag(torch.tensor([2.0, 5.0, 0.0], dtype=D))
    assert spectra.pseudo_determinant(R).item() == pytest.approx(10.0)
    # rotated rank-2 matrix with singular values 5, 2 -> 10
    M = with_singular_values(5, 4, [5.0, 2.0], seed=7)
    assert spectra.pseudo_determinant(M).item() == pytest.approx(10.0)
    # rank 1: the norm product
    u, v = torch.tensor([3.0, 4.0], dtype=D), torch.tensor([1.0, 0.0, 0.0], dtype=D)
    assert spectra.pseudo_determinant(torch.outer(u, v)).item() == pytest.approx(5.0)


def test_pseudo_determinant_equals_abs_det_for_square_full_rank() -> None:
    g = torch.Generator().manual_seed(8)
    A = torch.randn(4, 4, generator=g, dtype=D)
    assert spectra.pseudo_determinant(A).item() == pytest.approx(torch.linalg.det(A).abs().item())


# --- Jacobians and NTK ------------------------------------------------------------------

def test_input_jacobian_of_linear_map_is_the_matrix() -> None:
    g = torch.Generator().manual_seed(9)
    A = torch.randn(3, 5, generator=g, dtype=D)
    X = torch.randn(7, 5, generator=g, dtype=D)
    J = spectra.input_jacobian(lambda x: A @ x, X)
    assert J.shape == (7, 3, 5)
    assert torch.allclose(J, A.expand(7, 3, 5))


def test_input_jacobian_of_relu_mlp_matches_autograd() -> None:
    torch.manual_seed(0)
    net = models.MLP(4, 3, width=8, depth=3).double()
    X = torch.randn(5, 4, dtype=D)
    J = spectra.input_jacobian(lambda x: net(x.unsqueeze(0)).squeeze(0), X)
    for i in range(5):
        ref = torch.autograd.functional.jacobian(lambda x: net(x.unsqueeze(0)).squeeze(0), X[i])
        assert torch.allclose(J[i], ref)


def test_empirical_ntk_of_linear_model() -> None:
    g = torch.Generator().manual_seed(10)
    lin = nn.Linear(5, 3, bias=False).double()
    X = torch.randn(4, 5, generator=g, dtype=D)
    K = spectra.empirical_ntk(lin, X)
    assert K.shape == (4, 4, 3, 3)
    expected = torch.einsum("ij,ab->ijab", X @ X.T, torch.eye(3, dtype=D))
    assert torch.allclose(K, expected)


def test_empirical_ntk_of_mlp_is_symmetric_psd() -> None:
    torch.manual_seed(1)
    net = models.MLP(4, 2, width=16, depth=3).double()
    X = torch.randn(6, 4, dtype=D)
    K = spectra.empirical_ntk(net, X)
    G = K.permute(0, 2, 1, 3).reshape(12, 12)  # (i a), (j b)
    assert torch.allclose(G, G.T)
    assert torch.linalg.eigvalsh(G).min().item() > -1e-10
    # the diagonal block of a sample is the squared norm of its parameter gradient
    out0 = net(X[:1])[0, 0]
    grads = torch.autograd.grad(out0, list(net.parameters()))
    assert K[0, 0, 0, 0].item() == pytest.approx(sum(float((g_**2).sum()) for g_ in grads))


# --- representation rank and layer table ------------------------------------------------

def test_representation_rank() -> None:
    g = torch.Generator().manual_seed(11)
    H = torch.randn(50, 3, generator=g, dtype=D) @ torch.randn(3, 20, generator=g, dtype=D)
    assert spectra.representation_rank(H).item() == 3
    # a constant offset adds a rank that centring removes
    H2 = H + torch.randn(1, 20, generator=g, dtype=D) * 10
    assert spectra.representation_rank(H2).item() == 4
    assert spectra.representation_rank(H2, center=True).item() == 3
    # image-like features are flattened per sample
    assert spectra.representation_rank(H.reshape(50, 4, 5)).item() == 3


def test_layer_table() -> None:
    net = models.MLP(4, 2, width=6, depth=3)
    rows = spectra.layer_table(models.weight_matrices(net))
    assert [r["layer"] for r in rows] == [1, 2, 3]
    assert [r["shape"] for r in rows] == [(6, 4), (6, 6), (2, 6)]
    for r in rows:
        assert r["rho"] == pytest.approx(r["stable_rank"] ** -0.5)
        assert r["spectral_norm"] <= r["frobenius_norm"] + 1e-12


# --- measures of the bottleneck part (thresholded rank, Schatten power, log-pdet, d_k, NTK) ---

def test_thresholded_rank_three_conventions() -> None:
    W = with_singular_values(6, 5, [3.0, 0.5, 0.05], seed=1)
    assert spectra.thresholded_rank(W, 0.1, "abs").item() == 2           # 3, 0.5 > 0.1
    assert spectra.thresholded_rank(W, 0.1, "rel").item() == 2           # > 0.3: 3, 0.5
    assert spectra.thresholded_rank(W, 0.2, "rel").item() == 1           # > 0.6: 3 only
    assert spectra.thresholded_rank(W, 0.1, "rel").item() == spectra.numerical_rank(W, 0.1).item()
    # scaled: s_i / sqrt(n) with n = 6 rows: 1.22, 0.20, 0.02
    assert spectra.thresholded_rank(W, 0.1, "scaled").item() == 2
    assert spectra.thresholded_rank(W, 0.1, "scaled", n_samples=100).item() == 1
    with pytest.raises(ValueError, match="unknown mode"):
        spectra.thresholded_rank(W, 0.1, "absolute")


def test_schatten_power_known_values() -> None:
    W = with_singular_values(5, 4, [4.0, 1.0, 0.25], seed=2)                    # rank 3: s_4 = 0
    assert spectra.schatten_power(W, 2.0).item() == pytest.approx(16 + 1 + 1 / 16)   # ||W||_F^2
    assert spectra.schatten_power(W, 1.0).item() == pytest.approx(5.25)             # nuclear norm
    assert spectra.schatten_power(W, 0.5).item() == pytest.approx(2 + 1 + 0.5)
    # p -> 0: L * ||W||_{2/L}^{2/L} - L * rank -> 2 log|W|_+ (the expansion of Section 3)
    L = 1e6
    val = L * spectra.schatten_power(W, 2 / L).item() - 3 * L
    assert val == pytest.approx(2 * math.log(4 * 1 * 0.25), abs=1e-4)
    with pytest.raises(ValueError):
        spectra.schatten_power(W, 0.0)


def test_log_pseudo_determinant_and_truncation() -> None:
    W = with_singular_values(5, 5, [2.0, 3.0, 0.5], seed=3)
    assert spectra.log_pseudo_determinant(W).item() == pytest.approx(math.log(3.0))
    assert spectra.log_pseudo_determinant(W, k=1).item() == pytest.approx(math.log(3.0))
    assert spectra.log_pseudo_determinant(W, k=2).item() == pytest.approx(math.log(6.0))
    assert spectra.log_pseudo_determinant(W, k=4).item() < math.log(6.0) - 30   # s_4 = 0 up to rounding
    assert torch.exp(spectra.log_pseudo_determinant(W)).item() == pytest.approx(spectra.pseudo_determinant(W).item())
    D2 = torch.diag(torch.tensor([3.0, 4.0], dtype=D))
    assert spectra.log_pseudo_determinant(D2).item() == pytest.approx(math.log(12.0))


def test_pseudo_log_gram() -> None:
    A = with_singular_values(6, 4, [math.e, 1.0, math.exp(-1)], seed=4)
    G = spectra.pseudo_log_gram(A)
    # eigenvalues 2 log s_i = 2, 0, -2 on Im A^T and 0 on the kernel
    ev = torch.linalg.eigvalsh(G)
    assert torch.allclose(ev.sort().values, torch.tensor([-2.0, 0.0, 0.0, 2.0], dtype=D), atol=1e-12)
    assert (G.norm() ** 2).item() == pytest.approx(8.0)                     # 4 sum (log s)^2
    assert torch.allclose(G, G.T)


def test_partial_isometry_distance() -> None:
    Q = with_singular_values(6, 5, [1.0, 1.0], seed=5)                       # a rank-2 partial isometry
    assert spectra.partial_isometry_distance(Q, 2).item() == pytest.approx(0.0, abs=1e-24)
    assert spectra.partial_isometry_distance(Q, 1).item() == pytest.approx(1.0)
    W = with_singular_values(6, 5, [1.5, 0.8, 0.3], seed=6)
    assert spectra.partial_isometry_distance(W, 2).item() == pytest.approx(0.25 + 0.04 + 0.09)
    # it is the distance to the nearest partial isometry, and no rank-2 partial isometry is closer
    P = spectra.nearest_partial_isometry(W, 2)
    assert ((W - P).norm() ** 2).item() == pytest.approx(spectra.partial_isometry_distance(W, 2).item())
    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        U, _ = torch.linalg.qr(torch.randn(6, 2, generator=g, dtype=D))
        V, _ = torch.linalg.qr(torch.randn(5, 2, generator=g, dtype=D))
        assert ((W - U @ V.T).norm() ** 2).item() >= spectra.partial_isometry_distance(W, 2).item() - 1e-12


def test_ntk_trace_and_operator_norm_match_the_full_kernel() -> None:
    torch.manual_seed(0)
    net = models.MLP(4, 3, width=[5, 6], depth=3).double()
    X = torch.randn(7, 4, dtype=D)
    K = spectra.empirical_ntk(net, X)                                         # (n, n, out, out)
    assert torch.allclose(spectra.ntk_trace(net, X), torch.einsum("iiaa->i", K))
    gram = K.permute(0, 2, 1, 3).reshape(21, 21)
    top = torch.linalg.eigvalsh(gram)[-1].item()
    value = spectra.ntk_operator_norm(net, X, iters=500, rtol=1e-12, generator=torch.Generator().manual_seed(1))
    assert value == pytest.approx(top, rel=1e-6)
    # a linear model has Theta(x, x') = (x^T x' + 1) I: top eigenvalue of (X X^T + 1)
    lin = models.MLP(4, 2, depth=1).double()
    lin_top = torch.linalg.eigvalsh(X @ X.T + 1)[-1].item()
    assert spectra.ntk_operator_norm(lin, X, iters=500, rtol=1e-12) == pytest.approx(lin_top, rel=1e-6)


def test_hessian_top_eigenvalue_matches_the_dense_hessian() -> None:
    torch.manual_seed(1)
    net = models.MLP(3, 2, width=4, depth=2).double()
    X, Y = torch.randn(6, 3, dtype=D), torch.randn(6, 2, dtype=D)
    loss = lambda f: 0.5 * (f(X) - Y).pow(2).sum(1).mean()
    params = {k: v.detach() for k, v in net.named_parameters()}
    flat = torch.cat([p.reshape(-1) for p in params.values()])
    shapes = [(k, p.shape, p.numel()) for k, p in params.items()]

    def unflat(v):
        out, i = {}, 0
        for k, s, n in shapes:
            out[k] = v[i : i + n].reshape(s)
            i += n
        return out

    from torch.func import functional_call as fc
    H = torch.autograd.functional.hessian(lambda v: loss(lambda Z: fc(net, unflat(v), (Z,))) + 0.05 * v.pow(2).sum(), flat)
    ev = torch.linalg.eigvalsh(H)
    top = ev[ev.abs().argmax()].item()
    value = spectra.hessian_top_eigenvalue(net, loss, weight_decay=0.1, iters=2000, rtol=1e-12,
                                           generator=torch.Generator().manual_seed(0))
    assert value == pytest.approx(top, rel=1e-5)

# --- tail energy (saddle-to-saddle part) --------------------------------------------------------

def test_tail_energy_known_matrices() -> None:
    D = torch.float64
    assert float(spectra.tail_energy(torch.diag(torch.tensor([3.0, 4.0], dtype=D)))) == pytest.approx(9 / 25)
    u, v = torch.randn(5, dtype=D), torch.randn(3, dtype=D)
    assert float(spectra.tail_energy(torch.outer(u, v))) == pytest.approx(0.0, abs=1e-12)
    assert float(spectra.tail_energy(torch.eye(4, dtype=D))) == pytest.approx(0.75)
    W = torch.randn(6, 4, dtype=D)
    assert float(spectra.tail_energy(W)) == pytest.approx(1 - 1 / float(spectra.stable_rank(W)))
    batch = torch.randn(3, 6, 4, dtype=D)
    assert torch.allclose(spectra.tail_energy(batch), torch.stack([spectra.tail_energy(b) for b in batch]))


def test_top_singular_values() -> None:
    W = torch.diag(torch.tensor([1.0, 5.0, 3.0]))
    assert spectra.top_singular_values(W, 2).tolist() == [5.0, 3.0]
    assert spectra.top_singular_values(W, 10).tolist() == [5.0, 3.0, 1.0]
    with pytest.raises(ValueError):
        spectra.top_singular_values(W, 0)
