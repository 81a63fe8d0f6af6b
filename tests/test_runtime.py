"""`implicit_bias.runtime` and `chapter.start_chapter`: profiles, devices, seeds."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from implicit_bias import runtime
from implicit_bias.chapter import start_chapter

PROFILES = {"ci": {"steps": 10}, "full": {"steps": 1000}}


@pytest.fixture(autouse=True)
def restore_threads():
    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)


def test_select_profile_returns_a_copy() -> None:
    p = runtime.select_profile(PROFILES, "ci")
    assert p == {"steps": 10}
    p["steps"] = 0
    assert PROFILES["ci"]["steps"] == 10


def test_unknown_profile_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown profile 'gpu'; valid profiles are 'ci', 'full'"):
        runtime.select_profile(PROFILES, "gpu")


def test_resolve_device() -> None:
    assert runtime.resolve_device("cpu") == torch.device("cpu")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert runtime.resolve_device("auto").type == expected


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_cuda_without_gpu_gives_advice() -> None:
    with pytest.raises(RuntimeError, match=r"no CUDA GPU.*device='auto'.*device='cpu'"):
        runtime.resolve_device("cuda")
    with pytest.raises(RuntimeError, match="no CUDA GPU"):
        runtime.resolve_device("cuda:0")


def test_set_seed_is_deterministic() -> None:
    def draw():
        return random.random(), np.random.rand(), torch.rand(3), torch.randn(2, generator=gen)

    gen = runtime.set_seed(3)
    a = draw()
    gen = runtime.set_seed(3)
    b = draw()
    assert a[0] == b[0] and a[1] == b[1] and torch.equal(a[2], b[2]) and torch.equal(a[3], b[3])
    gen = runtime.set_seed(4)
    assert not torch.equal(draw()[2], a[2])
    assert isinstance(gen, torch.Generator)


def test_set_seed_sets_threads() -> None:
    runtime.set_seed(0, threads=1)
    assert torch.get_num_threads() == 1
    runtime.set_seed(0, threads=None)  # leaves the count alone
    assert torch.get_num_threads() == 1


@pytest.mark.parametrize("bad", [-1, 1.5, "0", None])
def test_bad_seed_raises(bad) -> None:
    with pytest.raises(ValueError, match="seed must be a non-negative int"):
        runtime.set_seed(bad)


def test_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(runtime.QUIET_ENV, "1")
    assert runtime.quiet()
    monkeypatch.setenv(runtime.QUIET_ENV, "0")
    assert not runtime.quiet()
    monkeypatch.delenv(runtime.QUIET_ENV)
    assert not runtime.quiet()


def test_describe_run() -> None:
    line = runtime.describe_run("ci", 2, "cpu")
    assert line.startswith("profile=ci  seed=2  device=CPU  torch=")


def test_start_chapter(capsys) -> None:
    settings, dev = start_chapter(PROFILES, profile="full", seed=1, device="cpu")
    assert settings == {"steps": 1000} and dev == torch.device("cpu")
    assert "profile=full  seed=1  device=CPU" in capsys.readouterr().out
    with pytest.raises(ValueError, match="valid profiles"):
        start_chapter(PROFILES, profile="nope")


def test_scale_steps_scales_step_counts_only() -> None:
    settings = {"steps": 60_000, "fig1_steps": 300, "steps4": 1000, "epochs": 30,
                "lams": (1e-3,), "steps_pair": (6000, 8000), "descent_step": 0.3, "rel_step": 2e-3,
                "record_every": 50, "runs": 5, "flag_steps": True}
    out, scaled = runtime.scale_steps(settings, 0.01)
    assert out == {**settings, "steps": 600, "fig1_steps": 3, "steps4": 10, "epochs": 1}
    assert scaled == ["steps", "fig1_steps", "steps4", "epochs"]
    out, scaled = runtime.scale_steps({"steps": (6000, 8000), "max_steps": 3}, 0.001)
    assert out == {"steps": (6, 8), "max_steps": 1} and scaled == ["steps", "max_steps"]


def test_step_fraction_env(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.delenv(runtime.STEP_FRACTION_ENV, raising=False)
    assert runtime.step_fraction() is None
    for bad in ("0", "1.5", "abc"):
        monkeypatch.setenv(runtime.STEP_FRACTION_ENV, bad)
        with pytest.raises(ValueError, match="expected a number in"):
            runtime.step_fraction()
    monkeypatch.setenv(runtime.STEP_FRACTION_ENV, "0.02")
    settings, _ = start_chapter(PROFILES, profile="full", seed=0, device="cpu")
    assert settings == {"steps": 20}
    assert "TIMING RUN: steps x0.02" in capsys.readouterr().out


def test_budget_env(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.delenv(runtime.STEP_FRACTION_ENV, raising=False)
    monkeypatch.delenv(runtime.BUDGET_ENV, raising=False)
    assert runtime.budget() == 1.0
    for bad in ("0.5", "0", "abc", "inf", "nan"):
        monkeypatch.setenv(runtime.BUDGET_ENV, bad)
        with pytest.raises(ValueError, match="expected a number >= 1"):
            runtime.budget()
    monkeypatch.setenv(runtime.BUDGET_ENV, "3")
    profiles = {"ci": {"steps": 100, "epochs": 7, "warmup": 10, "lr": 0.1, "pair_T": 1.0,
                       "steps_per_layer": 20, "record_every": 5}}
    settings, _ = start_chapter(profiles, profile="ci", seed=0, device="cpu")
    assert settings == {"steps": 300, "epochs": 21, "warmup": 30, "lr": 0.1, "pair_T": 1.0,
                        "steps_per_layer": 60, "record_every": 5}
    assert "budget x3: steps, epochs, warmup, steps_per_layer scaled" in capsys.readouterr().out
    # a page without step counts says so instead of pretending to scale
    settings, _ = start_chapter({"ci": {"n": 4, "pair_T": 1.0}}, profile="ci", seed=0, device="cpu")
    assert settings == {"n": 4, "pair_T": 1.0}
    assert "budget x3: this page has no step counts to scale" in capsys.readouterr().out
    assert runtime.budget_keys({"n": 4, "pair_T": 1.0}) == []
    # unset: the run line is the one of the committed notebooks
    monkeypatch.delenv(runtime.BUDGET_ENV)
    start_chapter(profiles, profile="ci", seed=0, device="cpu")
    assert "budget" not in capsys.readouterr().out
