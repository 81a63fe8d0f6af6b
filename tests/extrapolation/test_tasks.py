"""Tests of implicit_bias.extrapolation.tasks: the data of the extrapolation part."""

from __future__ import annotations

import math

import pytest
import torch

from implicit_bias import data
from implicit_bias.extrapolation import tasks


def test_digits_and_unknown_dataset():
    split, used = tasks.load_images("digits")
    assert split.X_train.shape[1:] == (1, 8, 8) and "digits" in used
    with pytest.raises(ValueError, match="unknown dataset"):
        tasks.load_images("imagenet")


@pytest.mark.parametrize("name", ["mnist", "cifar10"])
def test_missing_data_stops_unless_the_fallback_is_asked_for(name, tmp_path, capsys):
    with pytest.raises(data.DataNotFound, match="allow_fallback"):
        tasks.load_images(name, tmp_path)
    split, used = tasks.load_images(name, tmp_path, allow_fallback=True)
    assert split.X_train.shape[-1] == 8 and "fallback" in used
    assert "allow_fallback=True" in capsys.readouterr().out


def test_cifar10c_check_names_the_missing_file(tmp_path):
    with pytest.raises(data.DataNotFound, match="impulse_noise.npy"):
        tasks.check_cifar10c(root=tmp_path)


def test_shift_scales_the_blur_with_the_image_size():
    assert tasks.shift_parameter("blur", 5, 8) == pytest.approx(2.0)
    assert tasks.shift_parameter("blur", 5, 28) == pytest.approx(7.0)
    assert tasks.shift_parameter("rotation", 5, 28) == pytest.approx(90.0)
    assert tasks.severity_table("contrast", 28) == [0.0, 0.2, 0.4, 0.6, 0.8, 0.9]
    X = torch.rand(2, 1, 8, 8)
    assert torch.equal(tasks.shift(X, "blur", 3), data.shift(X, "blur", 3))
    big = torch.rand(2, 1, 28, 28)
    assert torch.allclose(tasks.shift(big, "blur", 5), data.blur(big, 7.0))


def test_imbalanced_subset_follows_the_keep_probabilities():
    w = tasks.geometric_weights(10, 20.0)
    assert float(w[0]) == 1.0 and float(w[-1]) == pytest.approx(1 / 20)
    assert bool((w[1:] < w[:-1]).all())
    labels = torch.arange(10).repeat(2000)
    mask = tasks.imbalanced_subset(labels, w, torch.Generator().manual_seed(0))
    kept = torch.bincount(labels[mask], minlength=10).double() / 2000
    assert torch.allclose(kept, w, atol=0.03)
    with pytest.raises(ValueError):
        tasks.imbalanced_subset(labels, w[:5], torch.Generator())
    with pytest.raises(ValueError):
        tasks.geometric_weights(10, 0.5)


def test_subspace_task_and_its_two_shifts():
    task = tasks.SubspaceTask(d=64, k=4, n_classes=5, class_probs=tasks.geometric_weights(5, 4.0), seed=0)
    X, y = task.sample(400, seed=1)
    assert X.shape == (400, 64) and int(y.max()) < 5
    assert torch.allclose(task.U.T @ task.U, torch.eye(4, dtype=torch.float64), atol=1e-10)
    inside = lambda Z: float((task.latent(Z).pow(2).sum(1) / Z.double().pow(2).sum(1)).mean())
    assert inside(X) > 0.95  # the classes live on the subspace
    off, within = task.off_subspace(X, 1.0, seed=2), task.in_subspace(X, 1.0, seed=2)
    ms = lambda Z: float(Z.double().pow(2).sum(1).mean())
    assert ms(off) == pytest.approx(ms(X), rel=0.02) and ms(within) == pytest.approx(ms(X), rel=0.02)
    assert inside(off) < 0.2 and inside(within) > 0.95
    assert torch.equal(task.off_subspace(X, 0.0, seed=3), X)
    with pytest.raises(ValueError):
        task.off_subspace(X, 1.5, seed=0)
    with pytest.raises(ValueError):
        tasks.SubspaceTask(d=4, k=4)
    assert math.isclose(float(task.class_probs.sum()), 1.0)
