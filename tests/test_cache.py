"""`implicit_bias.cache`: results stored by (name, config, the code that computes them), written
atomically, served with a provenance note; a changed library function is recomputed, never served
stale (checked in a fresh process on a copy of the library)."""

from __future__ import annotations

import os
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


CODE = {"library": "a" * 64, "chapter": "b" * 64, "torch": "2.13.0", "python": "3.11"}


def test_key_changes_with_name_config_and_code() -> None:
    k = cache.cache_key("run", {"lr": 0.1, "steps": 10}, CODE)
    assert k == cache.cache_key("run", {"steps": 10, "lr": 0.1}, CODE)  # order does not matter
    assert k.startswith("run-") and k.endswith(".pt")
    assert k != cache.cache_key("run", {"lr": 0.2, "steps": 10}, CODE)
    assert k != cache.cache_key("other", {"lr": 0.1, "steps": 10}, CODE)
    assert k != cache.cache_key("run", {"lr": 0.1, "steps": 10, "seed": 0}, CODE)
    for part in CODE:
        assert k != cache.cache_key("run", {"lr": 0.1, "steps": 10}, {**CODE, part: "c" * 64}), part
    assert cache.cache_key("run", {"lr": 0.1}) == cache.cache_key("run", {"lr": 0.1}, cache.code_fingerprint())


def test_other_code_recomputes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = Counter()
    cache.cached("run", {"a": 1}, f, directory=tmp_path)
    real = cache.code_fingerprint()
    monkeypatch.setattr(cache, "code_fingerprint", lambda modules=None: {**real, "chapter": "0" * 64})
    assert cache.cached("run", {"a": 1}, f, directory=tmp_path)["calls"] == 2
    assert cache.cached("run", {"a": 1}, f, directory=tmp_path)["calls"] == 2
    cache.cached("run", {"a": 2}, f, directory=tmp_path)
    assert f.calls == 3


def test_served_entry_says_where_it_came_from(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    f = Counter()
    cache.cached("run", {"a": 1}, f, directory=tmp_path)
    assert capsys.readouterr().out == ""  # a computed result says nothing
    n = len(cache.served())
    cache.cached("run", {"a": 1}, f, directory=tmp_path)
    line = capsys.readouterr().out.strip()
    code = cache.code_fingerprint()
    entry = cache.cache_key("run", {"a": 1})
    assert line.startswith(f"cache: 'run' loaded from {entry}, stored 20") and " UTC by library " in line
    assert f"library {code['library'][:12]} / chapter {code['chapter'][:12]}" in line
    assert "computing it took 0 s" in line and "\n" not in line
    assert [p.entry for p in cache.served()[n:]] == [entry]
    cache.cached("run", {"a": 1}, f, directory=tmp_path, note=False)
    assert capsys.readouterr().out == "" and len(cache.served()) == n + 2


def test_chapter_code_is_the_cells_run_so_far(monkeypatch: pytest.MonkeyPatch) -> None:
    class History:
        input_hist_raw = ["", "x = 1", "y = 2", "x = 1", "   "]

    class Shell:
        history_manager = History()

    import IPython

    monkeypatch.setattr(IPython, "get_ipython", lambda: Shell())
    assert cache.chapter_code() == "x = 1\n# --- cell ---\ny = 2"
    History.input_hist_raw.append("z = 3")
    assert cache.chapter_code().endswith("z = 3")


def test_chapter_imports_are_read_from_its_cells(monkeypatch: pytest.MonkeyPatch) -> None:
    """The library modules a chapter imports, from its cells (IPython's magics allowed, imports
    inside functions counted); a cell that is not Python makes every module count."""
    import IPython  # noqa: F401  (loaded, as in a kernel: magics are read as IPython reads them)

    cells = ["from implicit_bias import spectra\nimport implicit_bias.bottleneck.training as tr",
             "%time x = 1", "def f():\n    from implicit_bias.extrapolation import ocs\n    return ocs"]
    assert cache.chapter_imports(cells) == {"implicit_bias.spectra", "implicit_bias.bottleneck.training",
                                            "implicit_bias.extrapolation.ocs"}
    assert cache.chapter_imports(cells + ["x = ("]) is None
    monkeypatch.setattr(cache, "_chapter_cells", lambda: cells)
    reached = cache.depends_on()
    assert "implicit_bias.models" in reached  # through bottleneck.training
    assert not any(m.startswith(("implicit_bias.invariances", "implicit_bias.book")) for m in reached)
    monkeypatch.setattr(cache, "_chapter_cells", lambda: ["x = ("])
    assert cache.depends_on() is None
    assert cache.code_fingerprint()["library"] == cache._LIBRARY.fingerprint(cache._LIBRARY.files)


LIBRARY_RUN = """
import sys
from implicit_bias import cache, spectra
out = cache.cached("probe", {"n": 3}, lambda: {"value": spectra.probe_value(), "from": cache.__file__}, directory=sys.argv[1])
print("RESULT", out["value"], out["from"])
"""


def test_changed_library_function_is_recomputed_not_served(tmp_path: Path) -> None:
    """End to end, in fresh processes on a copy of the library: a result computed by a library
    function, the function changed, the same call again: the new value, not the stored one."""
    import shutil
    import subprocess
    import sys

    lib = tmp_path / "lib"
    shutil.copytree(cache.LIBRARY_DIR, lib / "implicit_bias",
                    ignore=shutil.ignore_patterns("__pycache__"))
    module = lib / "implicit_bias" / "spectra.py"
    source = module.read_text()
    script = tmp_path / "run.py"
    script.write_text(LIBRARY_RUN)
    env = {**os.environ, "PYTHONPATH": str(lib)}

    def run(value: int) -> str:
        module.write_text(source + f"\n\ndef probe_value() -> int:\n    return {value}\n")
        done = subprocess.run([sys.executable, str(script), str(tmp_path / "cache")], env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    first = run(1)
    assert f"RESULT 1 {lib}" in first and "loaded from" not in first  # the copy's code ran
    again = run(1)
    assert "RESULT 1" in again and "cache: 'probe' loaded from" in again
    changed = run(2)
    assert "RESULT 2" in changed and "loaded from" not in changed
    assert len(list((tmp_path / "cache").glob("probe-*.pt"))) == 2


PART_MODULE = """
from .. import spectra
from .. import cache


def compute():
    return {"value": spectra.probe_value()}


def run(folder):
    return cache.cached("part-probe", {"n": 1}, compute, directory=folder)
"""

PART_RUN = """
import sys
from implicit_bias.invariances import probe_mod
print("RESULT", probe_mod.run(sys.argv[1])["value"])
"""


def test_only_the_code_a_result_depends_on_invalidates_it(tmp_path: Path) -> None:
    """End to end, in fresh processes on a copy of the library: a result computed in a part's
    module that imports a toolkit module. A comment in another part, or in a toolkit module it
    does not import, keeps the entry; a comment in the toolkit module it imports, or in its own
    module, recomputes it."""
    import shutil
    import subprocess
    import sys

    from implicit_bias import dependencies

    lib = tmp_path / "lib"
    pkg = lib / "implicit_bias"
    shutil.copytree(cache.LIBRARY_DIR, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "spectra.py").write_text((pkg / "spectra.py").read_text() + "\n\ndef probe_value() -> int:\n    return 7\n")
    (pkg / "invariances" / "probe_mod.py").write_text(PART_MODULE)
    reached = dependencies.reached(dependencies.import_graph(pkg), ["implicit_bias.invariances.probe_mod"])
    assert "implicit_bias.spectra" in reached and "implicit_bias.plotting" not in reached
    assert not any(m.startswith("implicit_bias.extrapolation") for m in reached)
    script = tmp_path / "run.py"
    script.write_text(PART_RUN)
    env = {**os.environ, "PYTHONPATH": str(lib)}

    def run() -> bool:
        """Whether the run was served from the cache."""
        done = subprocess.run([sys.executable, str(script), str(tmp_path / "cache")], env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and "RESULT 7" in done.stdout, done.stdout + done.stderr
        return "cache: 'part-probe' loaded from" in done.stdout

    def comment(path: Path) -> None:
        path.write_text(path.read_text() + "\n# a comment\n")

    assert not run() and run()
    comment(pkg / "extrapolation" / "__init__.py")  # another part
    comment(pkg / "plotting.py")  # a toolkit module nothing on the way imports
    assert run()
    comment(pkg / "spectra.py")  # the toolkit module the part's module imports
    assert not run() and run()
    comment(pkg / "invariances" / "probe_mod.py")  # its own module
    assert not run() and run()
    assert len(list((tmp_path / "cache").glob("part-probe-*.pt"))) == 3


def test_library_changed_while_running_bypasses_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture) -> None:
    """A file the result depends on, edited while the process runs: the cache is bypassed, saying
    so. An edited file it does not depend on changes nothing."""
    lib, store = tmp_path / "implicit_bias", tmp_path / "store"
    lib.mkdir()
    (lib / "__init__.py").write_text("")
    (lib / "models.py").write_text("A = 1\n")
    (lib / "plotting.py").write_text("B = 1\n")
    monkeypatch.setattr(cache, "_LIBRARY", cache._Snapshot.take(lib))  # as if imported from lib
    f = Counter()
    f.__module__ = "implicit_bias.models"  # as if defined there
    cache.cached("run", {"a": 1}, f, directory=store)
    (lib / "plotting.py").write_text("B = 22\n")  # not a dependency: the entry is served
    assert cache.cached("run", {"a": 1}, f, directory=store, note=False)["calls"] == 1
    (lib / "models.py").write_text("A = 22\n")  # edited on disk while the process runs
    assert cache.cached("run", {"a": 1}, f, directory=store)["calls"] == 2
    assert "the library's files changed after this process imported it" in capsys.readouterr().out
    assert len(list(store.iterdir())) == 1


def test_fingerprint_covers_library_files_but_not_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "book").mkdir()
    (tmp_path / "part").mkdir()
    (tmp_path / "models.py").write_text("A = 1\n")
    (tmp_path / "part" / "mod.py").write_text("B = 1\n")
    (tmp_path / "book" / "cli.py").write_text("C = 1\n")
    first = cache.library_fingerprint(tmp_path)
    (tmp_path / "book" / "cli.py").write_text("C = 2\n")
    assert cache.library_fingerprint(tmp_path) == first
    (tmp_path / "part" / "mod.py").write_text("B = 2\n")
    assert cache.library_fingerprint(tmp_path) != first
    (tmp_path / "part" / "mod.py").write_text("B = 1\n")
    (tmp_path / "part" / "new.py").write_text("")
    assert cache.library_fingerprint(tmp_path) != first


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
