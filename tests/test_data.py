"""Tests of implicit_bias.data: digits, shifts, generated data and the local readers."""

from __future__ import annotations

import gzip
import pickle
import socket
import struct
from pathlib import Path

import numpy as np
import pytest
import torch

from implicit_bias import data as D

# --------------------------------------------------------------------------------------------
# Split, data_root, digits
# --------------------------------------------------------------------------------------------


def test_data_root_priority(tmp_path, monkeypatch):
    monkeypatch.delenv(D.DATA_ENV, raising=False)
    assert D.data_root() == Path("data")
    monkeypatch.setenv(D.DATA_ENV, str(tmp_path / "env"))
    assert D.data_root() == tmp_path / "env"
    assert D.data_root(tmp_path / "arg") == tmp_path / "arg"


def test_digits_shapes_ranges_split():
    s = D.digits(seed=0)
    assert s.X_train.shape == (1347, 64) and s.X_test.shape == (450, 64)
    assert s.X_train.dtype == torch.float32 and s.y_train.dtype == torch.int64
    for X in (s.X_train, s.X_test):
        assert X.min() >= 0 and X.max() <= 1 and X.max() == 1
    assert s.n_classes == 10
    # stratified: every class is present in both parts in proportion
    counts_tr = torch.bincount(s.y_train, minlength=10).double()
    counts_te = torch.bincount(s.y_test, minlength=10).double()
    ratio = counts_te / (counts_tr + counts_te)
    assert torch.all((ratio - 0.25).abs() < 0.02)
    # no example in both parts (rows of digits are distinct up to a few duplicates)
    assert len(s.X_train) + len(s.X_test) == 1797
    # seeds change the split, same seed reproduces it
    assert torch.equal(D.digits(seed=0).X_test, s.X_test)
    assert not torch.equal(D.digits(seed=1).X_test, s.X_test)
    X, y, Xt, yt = s
    assert X is s.X_train and yt is s.y_test


def test_digits_image_dtype_device():
    s = D.digits(image=True, dtype=torch.float64, test_size=0.3)
    assert s.X_train.shape[1:] == (1, 8, 8) and s.X_train.dtype == torch.float64
    assert s.X_test.shape[0] == pytest.approx(0.3 * 1797, abs=1)
    s2 = s.to("cpu", dtype=torch.float32)
    assert s2.X_train.dtype == torch.float32 and s2.y_train.dtype == torch.int64


def test_digits_classes_and_binary():
    s = D.digits(classes=(3, 8, 1))
    assert set(s.y_train.tolist()) == {0, 1, 2} and s.n_classes == 3
    full = D.digits()
    assert len(s.X_train) + len(s.X_test) == int(
        sum((torch.cat([full.y_train, full.y_test]) == c).sum() for c in (3, 8, 1)))
    b = D.digits(classes=(3, 8), binary=True)
    assert b.y_train.dtype == torch.float32
    assert set(b.y_train.tolist()) == {-1.0, 1.0} and b.n_classes == 2
    # first class -> -1: digit 3 examples equal the -1 examples of the multiclass call
    m = D.digits(classes=(3, 8))
    assert torch.equal((m.y_train == 0), (b.y_train == -1))
    with pytest.raises(ValueError, match="exactly two classes"):
        D.digits(binary=True)
    with pytest.raises(ValueError, match="classes"):
        D.digits(classes=(3, 3))
    with pytest.raises(ValueError, match="test_size"):
        D.digits(test_size=1.5)


# --------------------------------------------------------------------------------------------
# Shifts
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def images() -> torch.Tensor:
    return D.digits(image=True, seed=0).X_test[:200]


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_shift_names():
    assert set(D.SHIFTS) == {"gaussian_noise", "blur", "contrast", "rotation", "impulse_noise",
                             "blend_noise", "clipped_noise"}
    for kind in D.SHIFTS:
        table = D.SEVERITY_TABLE[kind]
        assert len(table) == 6 and table[0] == 0 and all(np.diff(table) > 0)


@pytest.mark.parametrize("kind", D.SHIFTS)
def test_shift_identity_range_monotone_determinism(kind, images):
    assert torch.equal(D.shift(images, kind, 0, _gen()), images)
    assert torch.equal(D.shift(images, kind, 0.0), images)
    severities = [0, 0.5, 1, 2, 2.5, 3, 4, 5]
    outs = [D.shift(images, kind, s, _gen()) for s in severities]
    dist = [float((o - images).norm()) for o in outs]
    assert all(b > a for a, b in zip(dist, dist[1:])), (kind, dist)
    for o in outs:
        assert o.shape == images.shape and o.dtype == images.dtype
        if kind != "gaussian_noise":
            assert o.min() >= 0 and o.max() <= 1, kind
    if kind == "gaussian_noise":  # unclipped by design
        assert outs[-1].min() < 0 and outs[-1].max() > 1
    # deterministic given the generator
    assert torch.equal(D.shift(images, kind, 3.3, _gen(7)), D.shift(images, kind, 3.3, _gen(7)))
    if kind in ("gaussian_noise", "clipped_noise", "blend_noise", "impulse_noise"):
        assert not torch.equal(D.shift(images, kind, 3, _gen(1)), D.shift(images, kind, 3, _gen(2)))
    # vectorised per image: shifting a sub-batch gives the same as the deterministic full batch
    if kind in ("blur", "contrast", "rotation"):
        assert torch.allclose(D.shift(images[:5], kind, 4), outs[-2][:5], atol=1e-6)


def test_shift_bad_arguments(images):
    with pytest.raises(ValueError, match="unknown shift kind 'fog'.*blur"):
        D.shift(images, "fog", 1)
    for bad in (-0.1, 5.01, float("nan"), True, "2"):
        with pytest.raises(ValueError, match="severity"):
            D.shift(images, "blur", bad)
    with pytest.raises(ValueError, match=r"\(n, c, h, w\)"):
        D.shift(images[0], "blur", 1)
    with pytest.raises(ValueError, match="floating"):
        D.shift((images * 16).to(torch.uint8), "blur", 1)


def test_shift_parameter_interpolates():
    assert D.shift_parameter("blur", 2) == 0.75
    assert D.shift_parameter("blur", 3.5) == pytest.approx(1.25)
    assert D.shift_parameter("rotation", 5) == 90.0


def test_primitives_semantics():
    x = torch.rand(4, 3, 9, 7, generator=_gen(3))
    # blur keeps constant images and per-image mass roughly; contrast keeps channel means
    const = torch.full((2, 1, 8, 8), 0.3)
    assert torch.allclose(D.blur(const, 1.7), const, atol=1e-6)
    assert torch.allclose(D.contrast(x, 0.7).mean((2, 3)), x.mean((2, 3)), atol=1e-6)
    assert torch.allclose(D.contrast(x, 1.0), x.mean((2, 3), keepdim=True).expand_as(x), atol=1e-6)
    # blur agrees with scipy's gaussian_filter (nearest borders, truncate 3)
    from scipy.ndimage import gaussian_filter
    ref = gaussian_filter(x[0, 0].double().numpy(), 1.2, mode="nearest", truncate=3.0)
    assert np.allclose(D.blur(x.double(), 1.2)[0, 0].numpy(), ref, atol=1e-10)
    # rotation by 90 degrees turns right-of-centre into above-centre (counter-clockwise)
    img = torch.zeros(1, 1, 5, 5)
    img[0, 0, 2, 4] = 1
    out = D.rotation(img, 90)
    assert out[0, 0, 0, 2] == pytest.approx(1, abs=1e-5) and out.sum() == pytest.approx(1, abs=1e-5)
    # four quarter turns of an odd square image give it back
    y = x[:, :, :7, :7]
    assert torch.allclose(D.rotation(y, 360), y, atol=1e-5)
    assert torch.allclose(D.rotation(y, 180), y.flip(-1, -2), atol=1e-5)
    # impulse noise: corrupted values are 0/1, fraction about `amount`, nested in amount
    big = torch.full((50, 1, 20, 20), 0.5)
    small_, large_ = D.impulse_noise(big, 0.1, _gen()), D.impulse_noise(big, 0.3, _gen())
    hit_s, hit_l = small_ != 0.5, large_ != 0.5
    assert abs(hit_s.double().mean() - 0.1) < 0.01 and abs(hit_l.double().mean() - 0.3) < 0.01
    assert torch.all(hit_l[hit_s]) and set(large_[hit_l].unique().tolist()) == {0.0, 1.0}
    # blend and noise statistics
    assert abs(float((D.gaussian_noise(big, 0.2, _gen()) - big).std()) - 0.2) < 0.01
    b = D.blend_noise(torch.zeros_like(big), 0.4, _gen())
    assert b.min() >= 0 and b.max() <= 0.4 and abs(float(b.mean()) - 0.2) < 0.01
    assert torch.equal(D.clipped_noise(x, 0.3, _gen()), D.gaussian_noise(x, 0.3, _gen(), clip=True))
    with pytest.raises(ValueError, match="blend weight"):
        D.blend_noise(x, 1.5)
    with pytest.raises(ValueError, match="sigma"):
        D.blur(x, -1)


def test_shift_global_generator_is_seeded(images):
    torch.manual_seed(5)
    a = D.shift(images, "blend_noise", 2)
    torch.manual_seed(5)
    assert torch.equal(a, D.shift(images, "blend_noise", 2))


# --------------------------------------------------------------------------------------------
# mnist1d and separable
# --------------------------------------------------------------------------------------------


def test_mnist1d_offline_shape_determinism(monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("mnist1d tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    D._mnist1d_arrays.cache_clear()
    np.random.seed(11)
    expected_next = np.random.rand()
    np.random.seed(11)
    s = D.mnist1d(seed=3, n_samples=200, test_fraction=0.25)
    assert np.random.rand() == expected_next  # global numpy state restored
    assert s.X_train.shape == (150, 40) and s.X_test.shape == (50, 40)
    assert s.y_train.dtype == torch.int64 and s.n_classes == 10
    X_all = torch.cat([s.X_train, s.X_test])
    assert abs(float(X_all.mean())) < 1e-5 and abs(float(X_all.std(unbiased=False)) - 1) < 1e-4
    assert torch.bincount(torch.cat([s.y_train, s.y_test])).tolist() == [20] * 10
    D._mnist1d_arrays.cache_clear()
    s2 = D.mnist1d(seed=3, n_samples=200, test_fraction=0.25, channel=True)
    assert s2.X_train.shape == (150, 1, 40)
    assert torch.equal(s2.X_train[:, 0], s.X_train)
    assert not torch.equal(D.mnist1d(seed=4, n_samples=200, test_fraction=0.25).X_train,
                           s.X_train)
    with pytest.raises(ValueError, match="multiple of 10"):
        D.mnist1d(n_samples=205)
    with pytest.raises(ValueError, match="unknown mnist1d"):
        D.mnist1d(n_samples=200, url="x")


def test_separable_margin():
    X, y, u = D.separable(500, 20, margin=0.3, seed=1, dtype=torch.float64, return_direction=True)
    assert X.shape == (500, 20) and y.shape == (500,)
    assert set(y.tolist()) == {-1.0, 1.0}
    assert float(u.norm()) == pytest.approx(1.0)
    assert float((y * (X @ u)).min()) >= 0.3 - 1e-12
    X2, y2 = D.separable(500, 20, margin=0.3, seed=1, dtype=torch.float64)
    assert torch.equal(X, X2) and torch.equal(y, y2)
    assert not torch.equal(D.separable(500, 20, margin=0.3, seed=2)[0], X.float())
    with pytest.raises(ValueError, match="margin"):
        D.separable(10, 2, margin=-1)


# --------------------------------------------------------------------------------------------
# Local readers on small files written in the real formats
# --------------------------------------------------------------------------------------------


def _idx_bytes(arr: np.ndarray, magic: int | None = None) -> bytes:
    magic = 0x800 + arr.ndim if magic is None else magic
    head = struct.pack(">I", magic) + struct.pack(f">{arr.ndim}I", *arr.shape)
    return head + arr.astype(np.uint8).tobytes()


def _write_mnist(folder, split: str, n: int, gz: bool, rng, magic: int | None = None):
    folder.mkdir(parents=True, exist_ok=True)
    prefix = "train" if split == "train" else "t10k"
    imgs = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
    labs = rng.integers(0, 10, size=n, dtype=np.uint8)
    for name, arr, m in ((f"{prefix}-images-idx3-ubyte", imgs, magic),
                         (f"{prefix}-labels-idx1-ubyte", labs, None)):
        raw = _idx_bytes(arr, m)
        if gz:
            (folder / (name + ".gz")).write_bytes(gzip.compress(raw))
        else:
            (folder / name).write_bytes(raw)
    return imgs, labs


def test_load_mnist_plain_and_gz_root_and_env(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    imgs, labs = _write_mnist(tmp_path / "mnist", "train", 7, gz=False, rng=rng)
    timgs, tlabs = _write_mnist(tmp_path / "mnist", "test", 3, gz=True, rng=rng)
    X, y = D.load_mnist("train", root=tmp_path)
    assert X.shape == (7, 1, 28, 28) and X.dtype == torch.float32 and y.dtype == torch.int64
    assert torch.allclose(X[:, 0] * 255, torch.from_numpy(imgs).float(), atol=1e-4)
    assert y.tolist() == labs.tolist() and X.min() >= 0 and X.max() <= 1
    monkeypatch.setenv(D.DATA_ENV, str(tmp_path))
    Xt, yt = D.load_mnist("test")
    assert Xt.shape == (3, 1, 28, 28) and yt.tolist() == tlabs.tolist()
    # torchvision's layout
    other = tmp_path / "tv"
    _write_mnist(other / "MNIST" / "raw", "test", 2, gz=False, rng=rng)
    assert D.load_mnist("test", root=other)[0].shape == (2, 1, 28, 28)
    with pytest.raises(ValueError, match="split"):
        D.load_mnist("val", root=tmp_path)


def test_load_mnist_missing_and_corrupt(tmp_path, monkeypatch):
    monkeypatch.setenv(D.DATA_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(D.DataNotFound) as err:
        D.load_mnist("train")
    msg = str(err.value)
    assert "train-images-idx3-ubyte" in msg and str(tmp_path / "nowhere") in msg
    assert D.DATA_ENV in msg and "LeCun" in msg
    assert isinstance(err.value, FileNotFoundError)
    rng = np.random.default_rng(1)
    _write_mnist(tmp_path / "bad" / "mnist", "train", 4, gz=True, rng=rng, magic=0x00000801)
    with pytest.raises(ValueError, match="magic number"):
        D.load_mnist("train", root=tmp_path / "bad")
    # truncated file
    folder = tmp_path / "trunc" / "mnist"
    _write_mnist(folder, "train", 4, gz=False, rng=rng)
    path = folder / "train-images-idx3-ubyte"
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(ValueError, match="truncated"):
        D.load_mnist("train", root=tmp_path / "trunc")


def _write_cifar_batch(path, n: int, rng) -> tuple[np.ndarray, list[int]]:
    data = rng.integers(0, 256, size=(n, 3072), dtype=np.uint8)
    labels = rng.integers(0, 10, size=n).tolist()
    with open(path, "wb") as f:
        pickle.dump({b"batch_label": b"x", b"labels": labels, b"data": data,
                     b"filenames": [b"f"] * n}, f)
    return data, labels


def test_load_cifar10(tmp_path, monkeypatch):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    rng = np.random.default_rng(2)
    batches = [_write_cifar_batch(folder / f"data_batch_{i}", 2, rng) for i in range(1, 6)]
    tdata, tlabels = _write_cifar_batch(folder / "test_batch", 3, rng)
    X, y = D.load_cifar10("train", root=tmp_path)
    assert X.shape == (10, 3, 32, 32) and y.dtype == torch.int64
    assert y.tolist() == sum((b[1] for b in batches), [])
    # channel-major layout: the first 1024 values are the red plane
    red = torch.from_numpy(batches[0][0][0, :1024]).float()
    assert torch.allclose(X[0, 0].flatten() * 255, red, atol=1e-4)
    monkeypatch.setenv(D.DATA_ENV, str(tmp_path))
    Xt, yt = D.load_cifar10("test")
    assert Xt.shape == (3, 3, 32, 32) and yt.tolist() == tlabels
    assert Xt.min() >= 0 and Xt.max() <= 1
    (folder / "data_batch_4").unlink()
    with pytest.raises(D.DataNotFound) as err:
        D.load_cifar10("train")
    msg = str(err.value)
    assert "data_batch_4" in msg and str(folder) in msg and D.DATA_ENV in msg
    assert "Krizhevsky" in msg


def test_load_cifar10c(tmp_path, monkeypatch):
    folder = tmp_path / "CIFAR-10-C"
    folder.mkdir()
    rng = np.random.default_rng(3)
    imgs = rng.integers(0, 256, size=(10, 32, 32, 3), dtype=np.uint8)  # 2 per severity
    labels = rng.integers(0, 10, size=10).astype(np.uint8)
    np.save(folder / "impulse_noise.npy", imgs)
    np.save(folder / "labels.npy", labels)
    X, y = D.load_cifar10c("impulse_noise", 3, root=tmp_path)
    assert X.shape == (2, 3, 32, 32) and y.dtype == torch.int64
    assert y.tolist() == labels[4:6].tolist()
    assert torch.allclose(X * 255, torch.from_numpy(imgs[4:6]).permute(0, 3, 1, 2).float(),
                          atol=1e-4)
    monkeypatch.setenv(D.DATA_ENV, str(tmp_path))
    assert torch.equal(D.load_cifar10c("impulse_noise", 3)[0], X)
    assert len(D.CIFAR10C_CORRUPTIONS) == 19 == len(set(D.CIFAR10C_CORRUPTIONS))
    with pytest.raises(D.DataNotFound) as err:
        D.load_cifar10c("fog", 1)
    msg = str(err.value)
    assert "fog.npy" in msg and str(folder) in msg and D.DATA_ENV in msg and "Zenodo" in msg
    with pytest.raises(ValueError, match="corruption"):
        D.load_cifar10c("rain", 1)
    with pytest.raises(ValueError, match="severity"):
        D.load_cifar10c("impulse_noise", 0)
    np.save(folder / "fog.npy", imgs[:, :, :, :1])
    with pytest.raises(ValueError, match="expected"):
        D.load_cifar10c("fog", 1)


def test_load_or_fallback_stops_unless_asked(tmp_path, capsys):
    """A missing data set stops the run with what to do, unless the fallback is opted in; the
    description then says what was used."""
    def missing():
        return D.load_mnist("train", root=tmp_path)

    with pytest.raises(D.DataNotFound, match="allow_fallback=True"):
        D.load_or_fallback(missing, lambda: "digits", name="MNIST", fallback_name="the digits")
    value, used = D.load_or_fallback(missing, lambda: "digits", name="MNIST",
                                     fallback_name="the digits", allow_fallback=True)
    assert value == "digits" and used == "the digits (fallback: MNIST not found)"
    assert "allow_fallback=True was given" in capsys.readouterr().out
    assert D.load_or_fallback(lambda: 1, lambda: 2, name="A", fallback_name="B") == (1, "A")
