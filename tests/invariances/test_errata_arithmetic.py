"""The counterexamples behind the errata of Le & Jegelka (2022) that are pure arithmetic.

Chapter 04 shows these numbers as control rows of its ledger (they are the same on every seed and
every machine, so they are not findings of a run); the facts themselves are checked here.
"""

from __future__ import annotations

import math

import torch

D = torch.float64


def sq_norm2(M: torch.Tensor) -> float:
    return float(torch.linalg.matrix_norm(M, 2) ** 2)


def test_lemma10_proof_constant_fails_on_a_small_block() -> None:
    # U = (sqrt(eps)), Y = 0, Z = 0: C0 = U^T U, ||B||_2^2 = 0, but the proof's right-hand side
    # ||A||_2^2 / 8 - ||C0||_2^2 / 4 = eps / 8 - eps^2 / 4 is positive for eps < 1/2
    eps = 0.1
    U = torch.tensor([[math.sqrt(eps)]], dtype=D)
    Y, Z = torch.zeros(1, 2, dtype=D), torch.zeros(1, 2, dtype=D)
    C0 = U.T @ U - Y @ Y.T
    rhs = sq_norm2(torch.cat([U, Z], 1)) / 8 - float(torch.linalg.matrix_norm(C0, 2)) ** 2 / 4
    assert sq_norm2(torch.cat([Y, Z], 0)) == 0.0
    assert math.isclose(rhs, eps / 8 - eps**2 / 4, rel_tol=1e-12)
    assert rhs > 0
    # the corrected constant D' = ||C0||_2 / 2 with the factor 1/2 holds on the same block
    assert 0.0 >= sq_norm2(torch.cat([U, Z], 1)) / 2 - float(torch.linalg.matrix_norm(C0, 2)) / 2 - 1e-15


def test_lemma10_constant_one_half_is_attained() -> None:
    U = torch.tensor([[1.0]], dtype=D)
    Y = torch.tensor([[1.0, 0.0]], dtype=D)
    Z = torch.tensor([[0.0, 1.0]], dtype=D)
    assert torch.equal(U.T @ U, Y @ Y.T)                      # the block is balanced, C0 = 0
    ratio = sq_norm2(torch.cat([Y, Z], 0)) / sq_norm2(torch.cat([U, Z], 1))
    assert math.isclose(ratio, 0.5, rel_tol=1e-15)


def test_eq71_printed_constant_fails_and_the_norm_holds() -> None:
    eps = 0.1
    W_next = torch.tensor([[math.sqrt(eps), 0.0]], dtype=D)   # ||W_next||_2^2 = eps
    W_l = torch.zeros(2, 3, dtype=D)
    C = W_next.T @ W_next - W_l @ W_l.T                       # the invariance holds with this C
    c = float(torch.linalg.matrix_norm(C, 2))
    printed = sq_norm2(W_next) - c**2 - sq_norm2(W_l)         # > 0: ||W_l||^2 >= ... - c^2 fails
    corrected = sq_norm2(W_next) - c - sq_norm2(W_l)          # = 0: equality
    assert math.isclose(printed, eps - eps**2, rel_tol=1e-12) and printed > 0
    assert abs(corrected) < 1e-15


def test_lemma9_extremal_tensor_attains_the_bound() -> None:
    a, b, c = 3, 4, 2
    w = torch.tensor([0.3, -1.2], dtype=D)
    T = torch.zeros(a, b, c, dtype=D)
    for k in range(min(a, b)):
        T[k, k] = w
    T1 = T.movedim(-1, 0).reshape(c, a * b)                   # output-channel flattening
    T2 = T.movedim(0, -1).reshape(b * c, a)                   # input-channel flattening
    assert math.isclose(sq_norm2(T1) / (min(a, b) * sq_norm2(T2)), 1.0, rel_tol=1e-12)


def test_alexnet_count_is_not_an_integer() -> None:
    paper = ((224 - (11 - 4)) / 4) ** 2
    assert paper == 2943.0625
    out = lambda size: torch.nn.functional.conv2d(torch.empty(1, 3, size, size, device="meta"),
                                                   torch.empty(96, 3, 11, 11, device="meta"),
                                                   stride=4).shape[-1]
    assert out(224) ** 2 == 2916 and out(227) ** 2 == 3025
    assert (math.floor((224 - 11) / 4) + 1) ** 2 == 2916
