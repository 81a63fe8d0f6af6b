"""Checking a run's parameters against what the chapters declare, before any kernel starts.

A chapter declares its parameters in the cell tagged ``parameters`` and its profiles in its
``PROFILES`` dict (read by :func:`.sources.chapter_spec`, without running anything). A run's
``--profile``, ``--seed`` and ``-p NAME VALUE`` options are checked here:

- a parameter no selected chapter declares is an error naming the parameters they do declare
  (with the closest name, for typos); one that only some chapters declare goes to those only;
- a value of the wrong kind for the chapter's default (text for an int, ...) is an error;
- a profile missing from a chapter's ``PROFILES`` is an error naming the valid ones;
- ``seed`` must be a non-negative integer, ``device`` a device torch knows, present here.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .sources import NOT_A_LITERAL, ChapterSpec


class ParameterError(ValueError):
    """Parameters that the chapters do not accept; the message says what they accept."""


def _kind(default: Any) -> tuple[tuple[type, ...], str] | None:
    if default is NOT_A_LITERAL or default is None:
        return None
    if isinstance(default, bool):
        return (bool,), "True or False"
    if isinstance(default, int):
        return (int,), "an integer"
    if isinstance(default, float):
        return (int, float), "a number"
    if isinstance(default, str):
        return (str,), "a text"
    if isinstance(default, (tuple, list)):
        return (tuple, list), "a tuple or list, e.g. (1, 2)"
    if isinstance(default, dict):
        return (dict,), "a dict"
    return None


def _fits(value: Any, default: Any) -> tuple[bool, str]:
    kind = _kind(default)
    if kind is None:
        return True, ""
    types, words = kind
    ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
    return ok, words


def _names(specs: Sequence[ChapterSpec]) -> list[str]:
    seen: dict[str, None] = {}
    for s in specs:
        for name in s.parameters:
            seen.setdefault(name, None)
    return list(seen)


def plan(specs: Sequence[ChapterSpec], params: dict[str, Any]) -> tuple[dict[Path, dict[str, Any]], list[str]]:
    """The parameters each chapter gets, and notes to print; raises :class:`ParameterError`
    (every problem found, one per line) when the run should not start."""
    errors: list[str] = []
    notes: list[str] = []
    per_chapter: dict[Path, dict[str, Any]] = {s.path: {} for s in specs}
    one = len(specs) == 1
    for name, value in params.items():
        takers = [s for s in specs if name in s.parameters]
        if not takers:
            known = _names(specs)
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            whose = f"{specs[0].name} declares" if one else f"the {len(specs)} chapters declare"
            errors.append(f"unknown parameter {name!r}{hint}: {whose} "
                          + (", ".join(known) if known else "no parameters")
                          + " (see the cell tagged 'parameters')")
            continue
        if len(takers) < len(specs):
            notes.append(f"parameter {name!r} goes to the {len(takers)} chapter(s) that declare it: "
                         + ", ".join(s.name for s in takers))
        for s in takers:
            ok, words = _fits(value, s.parameters[name])
            if not ok:
                errors.append(f"parameter {name}={value!r}: {s.name} expects {words} "
                              f"(its default is {s.parameters[name]!r})")
                break
        else:
            problem = _check_value(name, value, takers)
            if problem:
                errors.append(problem)
                continue
            for s in takers:
                per_chapter[s.path][name] = value
    if errors:
        raise ParameterError("\n".join(errors))
    return per_chapter, notes


def _check_value(name: str, value: Any, takers: Sequence[ChapterSpec]) -> str | None:
    if name == "profile":
        lacking = [s for s in takers if s.profiles is not None and value not in s.profiles]
        if lacking:
            valid = sorted({p for s in takers if s.profiles for p in s.profiles},
                           key=lambda p: (p != "ci", p != "full", p))
            if len(lacking) == len(takers):
                return f"unknown profile {value!r}: the valid profiles are " + ", ".join(map(repr, valid))
            return (f"profile {value!r} is not defined by " + ", ".join(s.name for s in lacking)
                    + "; their profiles are " + ", ".join(repr(p) for p in lacking[0].profiles or ()))
    if name == "seed" and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        return f"seed must be a non-negative integer, got {value!r}"
    if name == "device" and isinstance(value, str):
        return device_problem(value)
    return None


def device_problem(device: str) -> str | None:
    """Why ``device`` cannot be used on this machine, or None."""
    if device == "auto":
        return None
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError):
        return f"device {device!r} is not a device torch knows: use 'auto', 'cpu', 'cuda' or 'cuda:N'"
    if dev.type == "cuda" and not torch.cuda.is_available():
        return (f"device {device!r} was asked for, but torch sees no CUDA GPU on this machine: "
                "use device 'auto' (the GPU when there is one) or 'cpu'")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        return f"device {device!r}: this machine has {torch.cuda.device_count()} GPU(s)"
    return None
