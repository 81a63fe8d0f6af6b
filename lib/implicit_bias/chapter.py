"""What every chapter does first: pick the profile, seed everything, choose the device, set the
figure style and say which run produced the page."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from . import plotting
from .runtime import describe_run, resolve_device, select_profile, set_seed

RUN_GLUE_KEY = "run_info"


def start_chapter(profiles: Mapping[str, Mapping[str, Any]], profile: str = "ci", seed: int = 0,
                  device: str = "auto", threads: int | None = 1) -> tuple[dict[str, Any], torch.device]:
    """Return ``(settings of the profile, device)`` after seeding and styling.

    Prints one line naming the profile, seed and device, and glues it under ``run_info`` so the
    reproduction report can say which profile and device produced each page.
    """
    settings = select_profile(profiles, profile)
    set_seed(seed, threads=threads)
    dev = resolve_device(device)
    plotting.use_style()
    line = describe_run(profile, seed, dev)
    print(line)
    try:
        from myst_nb import glue
    except ImportError:
        return settings, dev
    glue(RUN_GLUE_KEY, line, display=False)
    return settings, dev
