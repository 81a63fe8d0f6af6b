"""What every chapter does first: pick the profile, seed everything, choose the device, set the
figure style and say which run produced the page."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from . import plotting
from .runtime import (BUDGET_ENV, STEP_FRACTION_ENV, budget, describe_run, resolve_device, scale_steps,
                      select_profile, set_seed, step_fraction)

RUN_GLUE_KEY = "run_info"


def start_chapter(profiles: Mapping[str, Mapping[str, Any]], profile: str = "ci", seed: int = 0,
                  device: str = "auto", threads: int | None = 1) -> tuple[dict[str, Any], torch.device]:
    """Return ``(settings of the profile, device)`` after seeding and styling.

    Prints one line naming the profile, seed and device, and glues it under ``run_info`` so the
    reproduction report can say which profile and device produced each page. With
    ``IMPLICIT_BIAS_BUDGET=k`` set (the budget multiplier, k >= 1), every step count of the profile
    is multiplied by k (:func:`.runtime.scale_steps`) and the line names k and the counts scaled
    (or says that the page has none). With ``IMPLICIT_BIAS_STEP_FRACTION`` set (timing runs only),
    the counts are scaled by that fraction too and the line says so.
    """
    settings = select_profile(profiles, profile)
    k = budget()
    fraction = step_fraction()
    scaled: list[str] = []
    if k != 1:
        settings, scaled = scale_steps(settings, k)
    if fraction is not None and fraction != 1:  # a timing run (benchmarks/gpu_check.py)
        settings, scaled = scale_steps(settings, fraction)
    set_seed(seed, threads=threads)
    dev = resolve_device(device)
    plotting.use_style()
    line = describe_run(profile, seed, dev)
    if k != 1:
        line += (f"  budget x{k:g}: {', '.join(scaled)} scaled ({BUDGET_ENV})" if scaled else
                 f"  budget x{k:g}: this page has no step counts to scale ({BUDGET_ENV})")
    if fraction is not None and fraction != 1:
        line += (f"  TIMING RUN: {', '.join(scaled)} x{fraction:g} ({STEP_FRACTION_ENV}; "
                 "not a result of this profile)")
    print(line)
    try:
        from myst_nb import glue
    except ImportError:
        return settings, dev
    glue(RUN_GLUE_KEY, line, display=False)
    return settings, dev


def glue_all(values: Mapping[str, Any]) -> None:
    """Glue every value of ``values`` under its key without displaying it (myst-nb's ``glue(key,
    value, display=False)``), for the ``{glue:text}`` roles of a page's text; outside a notebook
    without myst-nb nothing happens."""
    try:
        from myst_nb import glue
    except ImportError:
        return
    for key, value in values.items():
        glue(key, value, display=False)
