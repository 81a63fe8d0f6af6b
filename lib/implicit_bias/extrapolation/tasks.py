"""Data of the extrapolation part: the image sets of each profile, their distribution shifts at
every resolution, and class-imbalanced subsets.

- :func:`load_images`: scikit-learn's 8x8 digits (profile ``ci``), MNIST at 28x28 or CIFAR-10 from
  local files (profile ``full``). A missing data set stops the run with what to do unless
  ``allow_fallback=True``, in which case the digits are used and the description says so.
- :func:`shift`: the shifts of :func:`implicit_bias.data.shift` with their physical parameter
  scaled to the image: the blur's standard deviation grows with the side of the image (the
  severity table of the toolkit is calibrated for 8x8 digits), the other parameters (noise levels,
  blend weights, contrast amounts, rotation angles, impulse fractions) do not depend on the size.
  MNIST's shift in the paper is rotation (Figs. 2, 4, 11; the angles are not given), so the
  ``full`` profiles use rotation by 0, 15, 30, 45, 60 and 90 degrees on MNIST.
- :data:`CIFAR10C_KINDS`: the five CIFAR-10-C corruptions of the paper's official code (Figs. 3, 6, 7).
- :func:`imbalanced_subset` / :func:`geometric_weights`: keep class ``k`` with probability
  ``w_k``, so that the OCS (the label marginal) is far from uniform.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import torch

from .. import data

DATASETS = ("digits", "mnist", "cifar10")
#: The CIFAR-10-C corruptions of the official code's CIFAR-10 experiments (severities 1-5).
CIFAR10C_KINDS = ("impulse_noise", "shot_noise", "speckle_noise", "defocus_blur", "motion_blur")
#: Blur severities are calibrated on 8x8 digits; a blur of the same relative size on an s x s
#: image has a standard deviation s / 8 times larger.
BASE_SIZE = 8


def load_images(dataset: str, root: str | os.PathLike | None = None, *, seed: int = 0,
                allow_fallback: bool = False) -> tuple[data.Split, str]:
    """Training and test images ``(n, c, h, w)`` in [0, 1] and int64 labels of ``dataset``:

    - ``'digits'``: scikit-learn's 8x8 digits (1347 training and 450 test images, split by ``seed``);
    - ``'mnist'``: MNIST from local IDX files (60000 / 10000 images of 28x28);
    - ``'cifar10'``: CIFAR-10 from the local python batches (50000 / 10000 images of 3x32x32).

    Returns ``(split, description)``. A missing MNIST or CIFAR-10 raises
    :class:`implicit_bias.data.DataNotFound` (where to put the files, how to get them, how to opt
    in to the fallback) unless ``allow_fallback=True``; then the digits are returned and the
    description says it is a fallback."""
    if dataset not in DATASETS:
        raise ValueError(f"unknown dataset {dataset!r}; use one of {', '.join(DATASETS)}")
    digits = lambda: data.digits(seed=seed, image=True)
    if dataset == "digits":
        return digits(), "scikit-learn 8x8 digits"

    def load() -> data.Split:
        loader = data.load_mnist if dataset == "mnist" else data.load_cifar10
        Xtr, ytr = loader("train", root=root)
        Xte, yte = loader("test", root=root)
        return data.Split(Xtr, ytr.long(), Xte, yte.long())

    name = "MNIST (28x28)" if dataset == "mnist" else "CIFAR-10"
    return data.load_or_fallback(load, digits, name=name, fallback_name="scikit-learn 8x8 digits",
                                 allow_fallback=allow_fallback)


def check_cifar10c(kinds: Sequence[str] = CIFAR10C_KINDS, root: str | os.PathLike | None = None) -> None:
    """Raise :class:`implicit_bias.data.DataNotFound` now (before any training) if a corruption
    file of CIFAR-10-C is missing."""
    for kind in kinds:
        data.load_cifar10c(kind, 1, root=root)


def shift_parameter(kind: str, severity: float, size: int = BASE_SIZE) -> float:
    """The physical parameter of shift ``kind`` at ``severity`` on ``size`` x ``size`` images:
    the toolkit's table (:data:`implicit_bias.data.SEVERITY_TABLE`), the blur's standard deviation
    scaled by ``size / 8``."""
    p = data.shift_parameter(kind, severity)
    return p * size / BASE_SIZE if kind == "blur" else p


def shift(images: torch.Tensor, kind: str, severity: float, generator: torch.Generator | None = None) -> torch.Tensor:
    """:func:`implicit_bias.data.shift` at any resolution: the same shifts and severities 0-5,
    with the blur scaled to the image side (:func:`shift_parameter`). For 8x8 images this is
    exactly the toolkit's function."""
    size = images.shape[-1]
    if kind != "blur" or size == BASE_SIZE:
        return data.shift(images, kind, severity, generator=generator)
    return data.blur(images, shift_parameter(kind, severity, size))


def geometric_weights(n_classes: int, ratio: float) -> torch.Tensor:
    """Keep-probabilities ``w_k = ratio ** (-k / (K - 1))``: class 0 kept whole, the last class
    kept with probability ``1 / ratio``, geometric in between (float64)."""
    if n_classes < 2 or ratio < 1:
        raise ValueError("need at least two classes and ratio >= 1")
    k = torch.arange(n_classes, dtype=torch.float64)
    return ratio ** (-k / (n_classes - 1))


def imbalanced_subset(labels: torch.Tensor, keep: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """A boolean mask keeping each example of class ``k`` with probability ``keep[k]``."""
    labels = torch.as_tensor(labels).long().cpu()
    keep = torch.as_tensor(keep, dtype=torch.float64)
    if labels.numel() and int(labels.max()) >= len(keep):
        raise ValueError(f"labels go up to {int(labels.max())} but keep has {len(keep)} entries")
    if bool((keep < 0).any()) or bool((keep > 1).any()):
        raise ValueError("keep probabilities must lie in [0, 1]")
    return torch.rand(len(labels), generator=generator, dtype=torch.float64) < keep[labels]


def severity_table(kind: str, size: int = BASE_SIZE) -> list[float]:
    """The physical parameters of ``kind`` at severities 0-5 on ``size`` x ``size`` images."""
    return [shift_parameter(kind, s, size) for s in range(6)]



# --- high-dimensional inputs whose classes live on a low-dimensional subspace ----------------


class SubspaceTask:
    """A synthetic classification task in ``R^d`` whose classes live on a ``k``-dimensional
    subspace (``k << d``): the setting in which Kang et al. expect reversion (high-dimensional
    inputs, low-dimensional learned features).

    An input is ``x = U z + noise * P_perp g``: ``U`` is a random ``d x k`` matrix with
    orthonormal columns, the latent ``z = mu_y + e`` has class mean ``mu_y`` (random, norm
    ``separation``) plus standard normal noise ``e`` in ``R^k``, and a small isotropic component
    ``noise * g`` lives in the orthogonal complement (``P_perp = I - U U^T``, ``g ~ N(0, I_d)``).
    Labels are drawn with probabilities ``class_probs``. Every draw is seeded.

    Two shifts of severity ``lam`` in [0, 1], both keeping the mean squared norm of the inputs:

    - :meth:`off_subspace`: ``sqrt(1 - lam) x + sqrt(lam) r`` with ``r`` isotropic Gaussian of the
      same mean squared norm: the input moves *off* the data subspace (the paper's mechanism: OOD
      inputs overlap less with the learned features);
    - :meth:`in_subspace`: the latent is replaced by ``sqrt(1 - lam) z + sqrt(lam) z'`` with ``z'``
      isotropic in the *subspace* and of the same mean squared norm: the input stays on the learned
      subspace but leaves the class structure (a negative control of the mechanism).
    """

    def __init__(self, d: int = 1024, k: int = 8, n_classes: int = 10, separation: float = 4.0,
                 noise: float = 0.05, class_probs: torch.Tensor | None = None, seed: int = 0) -> None:
        if not 1 <= k < d:
            raise ValueError(f"need 1 <= k < d, got k={k}, d={d}")
        if n_classes < 2:
            raise ValueError("need at least two classes")
        g = torch.Generator().manual_seed(int(seed))
        self.d, self.k, self.n_classes, self.noise = d, k, n_classes, float(noise)
        self.U = torch.linalg.qr(torch.randn(d, k, generator=g, dtype=torch.float64))[0]
        mu = torch.randn(n_classes, k, generator=g, dtype=torch.float64)
        self.means = separation * mu / mu.norm(dim=1, keepdim=True)
        probs = torch.full((n_classes,), 1.0 / n_classes, dtype=torch.float64) if class_probs is None \
            else torch.as_tensor(class_probs, dtype=torch.float64)
        if probs.shape != (n_classes,) or bool((probs < 0).any()) or not float(probs.sum()) > 0:
            raise ValueError("class_probs must be n_classes non-negative numbers with a positive sum")
        self.class_probs = probs / probs.sum()

    def _embed(self, z: torch.Tensor, g: torch.Generator) -> torch.Tensor:
        iso = torch.randn(len(z), self.d, generator=g, dtype=torch.float64)
        perp = iso - (iso @ self.U) @ self.U.T
        return z @ self.U.T + self.noise * perp

    def sample(self, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``n`` inputs ``(n, d)`` (float32) and labels ``(n,)``, seeded."""
        g = torch.Generator().manual_seed(int(seed))
        y = torch.multinomial(self.class_probs, n, replacement=True, generator=g)
        z = self.means[y] + torch.randn(n, self.k, generator=g, dtype=torch.float64)
        return self._embed(z, g).float(), y

    def latent(self, X: torch.Tensor) -> torch.Tensor:
        """The subspace coordinates ``U^T x`` of inputs ``(n, d)``."""
        return X.double() @ self.U

    def off_subspace(self, X: torch.Tensor, lam: float, seed: int) -> torch.Tensor:
        """Mix the inputs with isotropic noise of the same mean squared norm (see the class doc)."""
        if not 0.0 <= lam <= 1.0:
            raise ValueError(f"lam must be in [0, 1], got {lam}")
        g = torch.Generator().manual_seed(int(seed))
        X = X.double()
        r = torch.randn(X.shape, generator=g, dtype=torch.float64)
        r = r * (X.pow(2).sum(1).mean() / r.pow(2).sum(1).mean()).sqrt()
        return (math.sqrt(1 - lam) * X + math.sqrt(lam) * r).float()

    def in_subspace(self, X: torch.Tensor, lam: float, seed: int) -> torch.Tensor:
        """Mix the latent coordinates with isotropic latent noise of the same mean squared norm,
        keeping the off-subspace part (see the class doc)."""
        if not 0.0 <= lam <= 1.0:
            raise ValueError(f"lam must be in [0, 1], got {lam}")
        g = torch.Generator().manual_seed(int(seed))
        X = X.double()
        z = X @ self.U
        rest = X - z @ self.U.T
        r = torch.randn(z.shape, generator=g, dtype=torch.float64)
        r = r * (z.pow(2).sum(1).mean() / r.pow(2).sum(1).mean()).sqrt()
        z_new = math.sqrt(1 - lam) * z + math.sqrt(lam) * r
        return (z_new @ self.U.T + rest).float()
