"""Certified escape speeds of planar data: exact feature support, depth 2, depth-3 certificates."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from implicit_bias import models
from implicit_bias.saddle_to_saddle import certificates as cert
from implicit_bias.saddle_to_saddle import example1 as ex
from implicit_bias.saddle_to_saddle import localized as lo


def test_feature_support_is_the_maximum_over_angles() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(7, 2))
    phi = np.linspace(0, 2 * math.pi, 200_001)
    for _ in range(5):
        c = rng.normal(size=7)
        exact, at = cert.feature_support(c, X)
        dense = float(np.abs(cert.features(phi, X) @ c).max())
        assert dense <= exact + 1e-12
        assert exact - dense < 1e-4                      # a peak on a kink: O(grid step)
        assert abs(float(np.abs(cert.features(at, X) @ c)[0]) - exact) < 1e-12


def test_depth2_speed_of_example1_is_sqrt2_minus_1() -> None:
    X, G = ex.circle_data()
    assert cert.depth2_speed(X, G) == pytest.approx(ex.RANK_ONE_SPEED, abs=1e-14)


def test_symmetries_of_the_octagon() -> None:
    X, _ = ex.circle_data()
    perms = cert.symmetries(X)
    assert len(perms) == 16
    rng = np.random.default_rng(1)
    c = rng.normal(size=8)
    for p in perms:
        assert cert.feature_support(c[p], X)[0] == pytest.approx(cert.feature_support(c, X)[0], abs=1e-12)
    assert len(cert.symmetries(rng.normal(size=(6, 2)))) == 1     # generic data: the identity only


def test_depth3_certificate_of_example1_is_one_half() -> None:
    X, G = ex.circle_data()
    res = cert.depth3_certificate(X, G, grid=180)
    assert res.lower == pytest.approx(0.5, abs=1e-9)
    assert res.upper == pytest.approx(0.5, abs=1e-9)
    assert res.upper >= res.lower - 1e-12


def test_depth3_certificate_bounds_random_networks() -> None:
    rng = np.random.default_rng(2)
    X = torch.tensor(rng.normal(size=(5, 2)))
    G = torch.tensor(rng.normal(size=(5, 1)))
    res = cert.depth3_certificate(X, G, grid=120)
    assert res.upper >= res.lower - 1e-12
    assert res.upper >= cert.depth2_speed(X, G) - 1e-12            # depth 3 is at least as fast
    gen = torch.Generator().manual_seed(0)
    for width in (3, 12):
        Ws = lo.to_sphere(models.gaussian_weights([2, width, width, 1], 1.0, (256,), generator=gen))
        assert float(lo.speed(Ws, X, G).max()) <= res.upper + 1e-12
        assert float(lo.speed(Ws, X, -G).max()) <= res.upper + 1e-12
