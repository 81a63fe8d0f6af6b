"""The featuriser of the OOD score, one per profile, documented once (Kang et al., App. B.3).

The paper scores an evaluation set by training a low-capacity linear probe on the features of an
ImageNet-pretrained ResNet-18 (:func:`implicit_bias.extrapolation.ocs.ood_score` is the probe).
Every chapter of the part that reports an OOD score takes its features from :func:`featurizer`:

- profile ``ci``: **fixed random ReLU features of the pixels**, ``x -> relu(G x / sqrt(d))`` with
  ``N_FEATURES`` = 512 Gaussian directions drawn from the fixed seed ``FEATURIZER_SEED`` (the same
  features for every chapter and every chapter seed). No pretrained network can be downloaded
  here; a network trained on the task itself would be built to ignore the very corruptions the
  score must see (pixel noise), while random features register every change of the pixels, and on
  8x8 digits their scores span about 0.5 to 0.8 over the shifts of the part, the range of the
  paper's CIFAR-10-C scores.
- profile ``full``: **the paper's featuriser**, a ResNet-18 with ImageNet weights up to its global
  average pool (512 features), read from a local weights file (:data:`WEIGHTS_FILE` in the data
  folder, or the ``weights`` argument). Pre-processing, as the official code does for CIFAR-10 and
  UTKFace: images in ``[0, 1]``, grey images repeated to three channels, normalised with the
  ImageNet mean and standard deviation, at their own resolution (no resizing). A missing file
  stops the run with what to do, unless ``allow_fallback=True`` (then the random features of
  profile ``ci`` are used and the description says so).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from .. import data
from .ocs import RandomReLUFeatures

FEATURIZER_SEED = 2024
N_FEATURES = 512
WEIGHTS_FILE = "resnet18_imagenet.pt"
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

HOW_TO_GET_WEIGHTS = (
    "On a machine with internet access and torchvision, save the ImageNet weights of ResNet-18 as a "
    "plain state dict: python -c \"import torch, torchvision; torch.save(torchvision.models.resnet18("
    "weights='IMAGENET1K_V1').state_dict(), '" + WEIGHTS_FILE + "')\" and copy the file (about 45 MB) "
    "into the data folder (the environment variable " + data.DATA_ENV + ", else ./data), or pass its "
    "path as the chapter parameter featurizer_weights."
)


class _BasicBlock(nn.Module):
    """The basic residual block of ResNet-18 (module names as torchvision's, so its weights load)."""

    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.downsample = None
        if stride != 1 or c_in != c_out:
            self.downsample = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        return self.relu(h + (x if self.downsample is None else self.downsample(x)))


class ResNet18Features(nn.Module):
    """ResNet-18 (He et al. 2016) up to its global average pool: ``(n, 3, h, w) -> (n, 512)``.

    The layers carry torchvision's names (``conv1``, ``bn1``, ``layer1``..``layer4``, ``fc``), so a
    state dict saved from ``torchvision.models.resnet18`` loads with ``strict=True`` (the final
    ``fc`` layer is kept for that reason and not used)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        stages, c_prev = [], 64
        for i, c in enumerate((64, 128, 256, 512)):
            stride = 1 if i == 0 else 2
            stages.append(nn.Sequential(_BasicBlock(c_prev, c, stride), _BasicBlock(c, c, 1)))
            c_prev = c
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, 1000)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        h = self.layer4(self.layer3(self.layer2(self.layer1(h))))
        return self.avgpool(h).flatten(1)


def load_resnet18(path: str | os.PathLike) -> ResNet18Features:
    """A :class:`ResNet18Features` in eval mode with the weights of a local file: a state dict of
    ``torchvision.models.resnet18`` (optionally under a ``'state_dict'`` key). Raises
    :class:`implicit_bias.data.DataNotFound` if the file is missing and ``ValueError`` if it does
    not hold ResNet-18 weights."""
    path = Path(path)
    if not path.is_file():
        raise data.DataNotFound(f"ResNet-18 weights not found at {path}. {HOW_TO_GET_WEIGHTS}")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - any unpickling error means: not a weights file
        raise ValueError(f"{path} is not a readable PyTorch weights file ({type(err).__name__}: {err})") from err
    if isinstance(state, dict) and "state_dict" in state:
        state = state["state_dict"]
    net = ResNet18Features()
    try:
        net.load_state_dict(state, strict=True)
    except (RuntimeError, TypeError, AttributeError) as err:
        raise ValueError(f"{path} does not hold the weights of torchvision's ResNet-18 ({err})".split("\n")[0]) from err
    return net.eval()


def imagenet_preprocess(images: torch.Tensor) -> torch.Tensor:
    """Images ``(n, c, h, w)`` in [0, 1] with ``c`` in {1, 3} to the input of the ImageNet
    ResNet-18: grey images repeated to three channels, then normalised channel-wise."""
    if images.dim() != 4 or images.shape[1] not in (1, 3):
        raise ValueError(f"expected images (n, 1 or 3, h, w), got shape {tuple(images.shape)}")
    x = images.expand(-1, 3, -1, -1) if images.shape[1] == 1 else images
    mean = torch.tensor(IMAGENET_MEAN, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
    std = torch.tensor(IMAGENET_STD, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
    return (x - mean) / std


def random_features(image_shape: tuple[int, ...]) -> RandomReLUFeatures:
    """The featuriser of profile ``ci``: :data:`N_FEATURES` random ReLU features of the flattened
    pixels, drawn from the fixed seed :data:`FEATURIZER_SEED`."""
    return RandomReLUFeatures(math.prod(image_shape), N_FEATURES, seed=FEATURIZER_SEED)


def featurizer(profile: str, image_shape: tuple[int, ...], *, weights: str | os.PathLike | None = None,
               root: str | os.PathLike | None = None, allow_fallback: bool = False,
               device: torch.device | str = "cpu", batch_size: int = 1024
               ) -> tuple[Callable[[torch.Tensor], torch.Tensor], str]:
    """The OOD-score featuriser of a profile (see the module docstring) for images of shape
    ``image_shape`` ``(c, h, w)``. Returns ``(featurize, description)``: ``featurize`` maps images
    ``(n, c, h, w)`` to features ``(n, k)`` on the CPU (float64), and the description names what is
    used, for the page and the ledger."""
    if profile != "full":
        feat = random_features(image_shape)
        return (lambda X: feat(X.detach().cpu())), f"{N_FEATURES} fixed random ReLU features of the pixels (seed {FEATURIZER_SEED})"
    path = Path(weights) if weights is not None else data.data_root(root) / WEIGHTS_FILE
    try:
        net = load_resnet18(path).to(device)
    except data.DataNotFound as err:
        if not allow_fallback:
            raise data.DataNotFound(
                f"{err}\nProfile 'full' scores OOD sets with the paper's ImageNet ResNet-18 and does not fall "
                "back to random features unless asked: re-run with the parameter allow_fallback=True "
                "(e.g. -p allow_fallback True) and the page says so.") from None
        print(f"OOD featuriser: random ReLU features (fallback; allow_fallback=True was given).\n{err}")
        feat = random_features(image_shape)
        return (lambda X: feat(X.detach().cpu())), (f"{N_FEATURES} fixed random ReLU features of the pixels "
                                                   "(fallback: ResNet-18 weights not found)")

    @torch.no_grad()
    def featurize(X: torch.Tensor) -> torch.Tensor:
        out = [net(imagenet_preprocess(X[i:i + batch_size].to(device))) for i in range(0, len(X), batch_size)]
        return torch.cat(out).double().cpu()

    return featurize, "ImageNet ResNet-18 up to the average pool (the paper's featuriser)"
