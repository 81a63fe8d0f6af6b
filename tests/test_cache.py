"""`implicit_bias.cache`: results stored by (name, config, library version), written atomically."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from implicit_bias import cache


class Counter:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> dict:
        self.calls += 1
        return {"w": torch.arange(3.0) * self.calls, "calls": self.calls}


def test_second_call_does_not_recompute(tmp_path: Path) -> None:
    f = Counter()
    first = cache.cached("run", {"lr": 0.1}, f, directory=tmp_path)
    second = cache.cached("run", {"lr": 0.1}, f, directory=tmp_path)
    assert f.calls == 1
    assert second["calls"] == 1 and torch.equal(second["w"], first["w"])
    assert len(list(tmp_path.iterdir())) == 1


def test_key_changes_with_name_config_and_version(monkeypatch: pytest.MonkeyPatch) -> None:
    k = cache.cache_key("run", {"lr": 0.1, "steps": 10})
    assert k == cache.cache_key("run", {"steps": 10, "lr": 0.1})  # order does not matter
    assert k.startswith("run-") and k.endswith(".pt")
    assert k != cache.cache_key("run", {"lr": 0.2, "steps": 10})
    assert k != cache.cache_key("other", {"lr": 0.1, "steps": 10})
    assert k != cache.cache_key("run", {"lr": 0.1, "steps": 10, "seed": 0})
    monkeypatch.setattr(cache, "__version__", "99.0.0")
    assert k != cache.cache_key("run", {"lr": 0.1, "steps": 10})


def test_new_version_recomputes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = Counter()
    cache.cached("run", {"a": 1}, f, directory=tmp_path)
    monkeypatch.setattr(cache, "__version__", "99.0.0")
    assert cache.cached("run", {"a": 1}, f, directory=tmp_path)["calls"] == 2
    cache.cached("run", {"a": 2}, f, directory=tmp_path)
    assert f.calls == 3


def test_atomic_write_leaves_no_tmp_file(tmp_path: Path) -> None:
    cache.cached("run", {"a": 1}, Counter(), directory=tmp_path)
    assert [p.suffix for p in tmp_path.iterdir()] == [".pt"]


def test_failed_write_leaves_no_entry_and_no_tmp(tmp_path: Path) -> None:
    def unpicklable():
        return lambda: 0  # torch.save cannot pickle a lambda

    with pytest.raises(Exception):
        cache.cached("bad", {}, unpicklable, directory=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_failed_compute_stores_nothing(tmp_path: Path) -> None:
    def boom():
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError, match="interrupted"):
        cache.cached("run", {}, boom, directory=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_disabled_always_computes(tmp_path: Path) -> None:
    f = Counter()
    for _ in range(3):
        cache.cached("run", {"a": 1}, f, enabled=False, directory=tmp_path)
    assert f.calls == 3
    assert list(tmp_path.iterdir()) == []


def test_environment_variable_sets_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "nested" / "cache"
    monkeypatch.setenv(cache.CACHE_ENV, str(folder))
    assert cache.cache_dir() == folder
    cache.cached("run", {"a": 1}, Counter())
    assert (folder / cache.cache_key("run", {"a": 1})).exists()
    monkeypatch.delenv(cache.CACHE_ENV)
    assert cache.cache_dir() == Path.home() / ".cache" / "implicit_bias"
