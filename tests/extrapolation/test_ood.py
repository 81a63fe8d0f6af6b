"""Tests of implicit_bias.extrapolation.ood: the featuriser of the OOD score, one per profile."""

from __future__ import annotations

import pytest
import torch

from implicit_bias import data
from implicit_bias.extrapolation import ood


def test_ci_featuriser_is_fixed_and_documented():
    feat, used = ood.featurizer("ci", (1, 8, 8))
    X = torch.rand(5, 1, 8, 8)
    F = feat(X)
    assert F.shape == (5, ood.N_FEATURES) and F.dtype == torch.float64
    feat2, _ = ood.featurizer("ci", (1, 8, 8))
    assert torch.equal(F, feat2(X))  # the same features for every page and every seed
    assert str(ood.FEATURIZER_SEED) in used


def test_resnet18_loads_torchvision_names_and_maps_images_to_512_features(tmp_path):
    torch.manual_seed(0)
    net = ood.ResNet18Features()
    state = net.state_dict()
    for key in ("conv1.weight", "bn1.running_var", "layer2.0.downsample.0.weight", "layer4.1.bn2.bias", "fc.weight"):
        assert key in state
    path = tmp_path / ood.WEIGHTS_FILE
    torch.save(state, path)
    loaded = ood.load_resnet18(path)
    x = ood.imagenet_preprocess(torch.rand(2, 1, 28, 28))
    assert x.shape == (2, 3, 28, 28)
    assert torch.allclose(loaded(x), net.eval()(x))
    assert loaded(x).shape == (2, 512)
    feat, used = ood.featurizer("full", (1, 28, 28), root=tmp_path)
    assert feat(torch.rand(3, 1, 28, 28)).shape == (3, 512) and "ResNet-18" in used


def test_missing_or_bad_weights_give_clear_messages(tmp_path, capsys):
    with pytest.raises(data.DataNotFound, match="allow_fallback"):
        ood.featurizer("full", (1, 28, 28), root=tmp_path)
    feat, used = ood.featurizer("full", (1, 28, 28), root=tmp_path, allow_fallback=True)
    assert "fallback" in used and feat(torch.rand(2, 1, 28, 28)).shape == (2, ood.N_FEATURES)
    assert "fallback" in capsys.readouterr().out
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a weights file")
    with pytest.raises(ValueError, match="not a readable"):
        ood.load_resnet18(bad)
    torch.save({"conv1.weight": torch.zeros(1)}, tmp_path / "wrong.pt")
    with pytest.raises(ValueError, match="ResNet-18"):
        ood.load_resnet18(tmp_path / "wrong.pt")
    with pytest.raises(ValueError, match="expected images"):
        ood.imagenet_preprocess(torch.rand(2, 2, 8, 8))
