"""Seeds, devices and profiles: the first lines of every chapter."""

from __future__ import annotations

import math
import os
import random
import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

QUIET_ENV = "IMPLICIT_BIAS_QUIET"
# Timing runs (benchmarks/gpu_check.py): every step count of the profile times this fraction
STEP_FRACTION_ENV = "IMPLICIT_BIAS_STEP_FRACTION"
# The budget multiplier k >= 1 (make execute/book/budgets ... BUDGET=k): every step count times k
BUDGET_ENV = "IMPLICIT_BIAS_BUDGET"
# a profile setting that counts optimizer steps, epochs or warm-up steps: steps, fig1_steps, steps4,
# epochs, warmup, digits_warmup, steps_per_layer, ... (not step sizes: descent_step, rel_step; not
# gradient-flow times such as pair_T, nor record intervals or detector windows, which are part of
# what a page measures, not of how long it trains)
STEP_COUNT_KEY = re.compile(r"^(?:\w+_)?(?:steps|epochs|warmup)\d*$|^steps_per_\w+$")


def set_seed(seed: int, threads: int | None = 1) -> torch.Generator:
    """Seed python, numpy and torch, make torch deterministic and fix the CPU thread count.

    One thread makes CPU results bitwise reproducible across machines with different core
    counts (the thread count changes the low bits of reductions). Returns a fresh
    ``torch.Generator`` seeded with ``seed`` for code that wants its own stream.
    """
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    if threads is not None:
        torch.set_num_threads(threads)
    return torch.Generator().manual_seed(seed)


def resolve_device(device: str = "auto") -> torch.device:
    """Turn the chapters' ``device`` parameter into a ``torch.device``.

    ``"auto"`` picks the first CUDA GPU when there is one and the CPU otherwise. Asking for
    CUDA on a machine without a GPU raises an error that says what to do instead.
    """
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(
            f"device={device!r} was requested but torch sees no CUDA GPU on this machine. "
            "Use device='auto' (GPU when present, else CPU) or device='cpu'; "
            "profile 'full' on a CPU is possible but slow."
        )
    return dev


def select_profile(profiles: Mapping[str, Mapping[str, Any]], profile: str) -> dict[str, Any]:
    """Return a copy of ``profiles[profile]``, or raise a clear error naming the valid profiles."""
    if profile not in profiles:
        valid = ", ".join(repr(p) for p in profiles)
        raise ValueError(f"unknown profile {profile!r}; valid profiles are {valid}")
    return dict(profiles[profile])


def step_fraction() -> float | None:
    """The fraction of ``IMPLICIT_BIAS_STEP_FRACTION`` (a number in (0, 1]), or None when unset.

    Set only by timing runs (``benchmarks/gpu_check.py``, which extrapolates a chapter's time from
    runs at a few fractions of its steps): a run with it is not a result of the profile, and the
    run line says so."""
    text = os.environ.get(STEP_FRACTION_ENV, "").strip()
    if not text:
        return None
    try:
        fraction = float(text)
    except ValueError:
        fraction = float("nan")
    if not 0 < fraction <= 1:
        raise ValueError(f"{STEP_FRACTION_ENV}={text!r}: expected a number in (0, 1]")
    return fraction


def budget() -> float:
    """The budget multiplier ``IMPLICIT_BIAS_BUDGET`` (a number >= 1; 1 when unset).

    Every step, epoch and warm-up count of the chosen profile (:data:`STEP_COUNT_KEY`) is
    multiplied by it, so that a verdict can be checked against more compute (``make budgets``, the
    budget sweep). The timing runs' :func:`step_fraction` is its case below 1."""
    text = os.environ.get(BUDGET_ENV, "").strip()
    if not text:
        return 1.0
    try:
        return parse_budget(text)
    except ValueError as err:
        raise ValueError(f"{BUDGET_ENV}={text!r}: {err}; for fewer steps (timing runs only) use "
                         f"{STEP_FRACTION_ENV}") from None


def parse_budget(text: str) -> float:
    """A budget multiplier from text (the environment, ``--budget``): a finite number >= 1, else
    ``ValueError`` saying what is expected."""
    try:
        k = float(text)
    except ValueError:
        k = float("nan")
    if not (k >= 1 and math.isfinite(k)):
        raise ValueError(f"expected a number >= 1 (e.g. 3 or 10: every step count of the profile "
                         f"times it), got {text!r}")
    return k


def budget_keys(settings: Mapping[str, Any]) -> list[str]:
    """The settings of a profile that the budget multiplier scales (empty: the page has no budget)."""
    return scale_steps(settings, 1.0)[1]


def scale_steps(settings: Mapping[str, Any], fraction: float) -> tuple[dict[str, Any], list[str]]:
    """A copy of a profile's settings with every step count (:data:`STEP_COUNT_KEY`: an int, or a
    tuple/list of ints) times ``fraction``, rounded, at least 1; and the names of the keys scaled."""
    out, scaled = dict(settings), []
    for key, value in settings.items():
        if not STEP_COUNT_KEY.match(key):
            continue
        if isinstance(value, int) and not isinstance(value, bool):
            out[key] = max(1, round(value * fraction))
        elif isinstance(value, (tuple, list)) and value and all(
                isinstance(v, int) and not isinstance(v, bool) for v in value):
            out[key] = type(value)(max(1, round(v * fraction)) for v in value)
        else:
            continue
        scaled.append(key)
    return out, scaled


def quiet() -> bool:
    """True when progress bars should stay silent (set by the book CLI and the test suite)."""
    return os.environ.get(QUIET_ENV, "") not in ("", "0")


def describe_run(profile: str, seed: int, device: torch.device | str) -> str:
    """One line saying which profile, seed and device produced a page (printed by chapters)."""
    dev = torch.device(device)
    name = "CPU" if dev.type == "cpu" else torch.cuda.get_device_name(dev)
    return f"profile={profile}  seed={seed}  device={name}  torch={torch.__version__.split('+')[0]}"
