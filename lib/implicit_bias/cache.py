"""Results of expensive runs, stored under a key of (name, config, library version).

Writes are atomic (a temporary file in the same folder, then ``os.replace``), so an
interrupted full-profile run never leaves a half-written entry and can simply be restarted.
The folder is ``$IMPLICIT_BIAS_CACHE`` or ``~/.cache/implicit_bias``.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import torch

from . import __version__

T = TypeVar("T")
CACHE_ENV = "IMPLICIT_BIAS_CACHE"


def cache_dir() -> Path:
    """The cache folder (created on first use)."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "implicit_bias")


def cache_key(name: str, config: Mapping[str, Any]) -> str:
    """A stable file name for ``name`` under ``config`` and this library version."""
    blob = json.dumps({"config": config, "version": __version__}, sort_keys=True, default=str)
    return f"{name}-{hashlib.sha256(blob.encode()).hexdigest()[:16]}.pt"


def cached(name: str, config: Mapping[str, Any], compute: Callable[[], T], *,
           enabled: bool = True, directory: str | Path | None = None) -> T:
    """Return the stored result of ``compute()`` for ``(name, config)``, computing and storing
    it first if needed. With ``enabled=False`` it just calls ``compute()``."""
    if not enabled:
        return compute()
    folder = Path(directory) if directory is not None else cache_dir()
    path = folder / cache_key(name, config)
    if path.exists():
        return torch.load(path, weights_only=False)
    result = compute()
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    os.close(fd)
    try:
        torch.save(result, tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return result
