"""Pairing a chapter's .py with its .ipynb: no-op commands leave no diff, stale outputs go, and
edits made in a notebook are never overwritten silently. Also: executing an unchanged chapter
keeps its cell ids, a timeout names its cell, and kernels run quietly."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import nbformat
import pytest

from implicit_bias import book
from implicit_bias.book import sources

ROOT = book.ROOT
CHAPTERS = book.all_chapters()

SMALL = textwrap.dedent("""\
    # ---
    # jupyter:
    #   jupytext:
    #     formats: ipynb,py:percent
    #     text_representation:
    #       extension: .py
    #       format_name: percent
    #   kernelspec:
    #     display_name: Python 3 (ipykernel)
    #     language: python
    #     name: python3
    # ---

    # %% [markdown]
    # # A small chapter

    # %% tags=["parameters"]
    seed = 0

    # %%
    print("first", seed)

    # %%
    print("second")
    """)


def executed_pair(folder: Path, text: str = SMALL) -> Path:
    """A .py and its executed .ipynb (outputs faked, as papermill would leave them)."""
    py = folder / "small.py"
    py.write_text(text)
    nb = book.notebook_from_source(py)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.execution_count = 1
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"out of {cell.source!r}\n")]
    nbformat.write(nb, py.with_suffix(".ipynb"))
    return py


def edit_last_cell_in_jupyter(py: Path) -> Path:
    """Edit the paired notebook's last cell as a Jupyter without jupytext would; the .ipynb."""
    ipynb = py.with_suffix(".ipynb")
    nb = nbformat.read(ipynb, as_version=4)
    nb.cells[-1].source = 'print("edited in Jupyter")'
    nbformat.write(nb, ipynb)
    return ipynb


def age(path: Path, seconds: float) -> None:
    """Make ``path`` look ``seconds`` older than now."""
    t = path.stat().st_mtime - seconds
    os.utime(path, (t, t))


@pytest.mark.parametrize("py", CHAPTERS, ids=lambda p: p.stem)
def test_sync_of_a_committed_chapter_changes_nothing(py: Path, tmp_path: Path):
    """``make sync`` on a clean clone: every notebook is already in sync, byte for byte (a copy is
    synced here, so the test never writes into the repository)."""
    copy = tmp_path / py.name
    shutil.copy(py, copy)
    shutil.copy(py.with_suffix(".ipynb"), copy.with_suffix(".ipynb"))
    before = copy.with_suffix(".ipynb").read_bytes()
    assert not book.sync(copy, root=tmp_path), f"sync would rewrite {py.with_suffix('.ipynb').name}"
    assert copy.with_suffix(".ipynb").read_bytes() == before


def test_sync_keeps_outputs_and_ids_of_unchanged_cells_and_drops_stale_outputs(tmp_path: Path):
    py = executed_pair(tmp_path)
    old = nbformat.read(py.with_suffix(".ipynb"), as_version=4)
    age(py.with_suffix(".ipynb"), 60)  # the .py is the newer edit
    py.write_text(py.read_text().replace('print("second")', 'print("second, edited")'))
    assert book.sync(py, root=tmp_path)
    new = nbformat.read(py.with_suffix(".ipynb"), as_version=4)
    assert [c.id for c in new.cells] == [c.id for c in old.cells]
    first, second = [c for c in new.cells if c.cell_type == "code"][1:]
    assert first.outputs == [c for c in old.cells if c.cell_type == "code"][1].outputs
    assert second.source == 'print("second, edited")'
    assert second.outputs == [] and second.execution_count is None  # the old output was stale
    assert not book.sync(py, root=tmp_path)  # and a second sync is a no-op


def test_sync_refuses_to_overwrite_edits_made_in_the_notebook(tmp_path: Path):
    py = executed_pair(tmp_path)
    ipynb = edit_last_cell_in_jupyter(py)
    age(py, 60)  # the notebook is the newer file
    with pytest.raises(book.NotebookEdited) as err:
        book.sync(py, root=tmp_path)
    message = str(err.value)
    assert "small.ipynb holds edits that" in message and "small.py" in message
    assert "KEEP=notebook" in message and "KEEP=source" in message
    assert nbformat.read(ipynb, as_version=4).cells[-1].source == 'print("edited in Jupyter")'
    # keeping the notebook's edits writes them into the .py, header and other cells unchanged
    book.sync(py, keep="notebook", root=tmp_path)
    text = py.read_text()
    assert 'print("edited in Jupyter")' in text and text.replace('print("edited in Jupyter")', 'print("second")') == SMALL
    assert not book.sync(py, root=tmp_path)


def test_sync_can_discard_the_notebooks_edits(tmp_path: Path):
    py = executed_pair(tmp_path)
    ipynb = edit_last_cell_in_jupyter(py)
    age(py, 60)
    book.sync(py, keep="source", root=tmp_path)
    assert nbformat.read(ipynb, as_version=4).cells[-1].source == 'print("second")'
    assert py.read_text() == SMALL


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_sync_uses_git_when_file_times_mislead(tmp_path: Path):
    """A notebook edited after the last commit while its .py was not is refused even when the
    .py looks newer (a checkout, a touch); a notebook still holding the committed cells is not an
    edit even when it looks newer."""
    py = executed_pair(tmp_path)
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "pair")
    ipynb = edit_last_cell_in_jupyter(py)
    age(ipynb, 60)  # the .py looks newer, but git shows it unchanged
    with pytest.raises(book.NotebookEdited, match="changed since the last commit"):
        book.sync(py, root=tmp_path)
    # the other way: the .py was edited, the notebook holds the committed cells but looks newer
    git(tmp_path, "checkout", "--", "small.ipynb")
    py.write_text(SMALL.replace('print("second")', 'print("second, from the .py")'))
    age(py, 60)
    assert book.sync(py, root=tmp_path)
    assert nbformat.read(ipynb, as_version=4).cells[-1].source == 'print("second, from the .py")'


def test_executing_an_unchanged_chapter_keeps_its_cell_ids(tmp_path: Path):
    """``make execute`` of an unchanged chapter rewrites nothing but outputs: ids and metadata stay."""
    py = executed_pair(tmp_path)
    ipynb = py.with_suffix(".ipynb")
    ids = [c.id for c in nbformat.read(ipynb, as_version=4).cells]
    first = book.execute_one(str(py), str(ipynb), {}, str(tmp_path / "logs"), strip=True)
    assert first.ok, first.error
    text = ipynb.read_text()
    second = book.execute_one(str(py), str(ipynb), {}, str(tmp_path / "logs"), strip=True)
    assert second.ok, second.error
    assert ipynb.read_text() == text
    assert [c.id for c in nbformat.read(ipynb, as_version=4).cells] == ids


def test_prints_cut_by_the_kernels_flush_timer_are_joined():
    """A cell's prints reach the notebook as one stream output per stream, however the kernel's
    flush timer cut them into messages (a print, a pause past the timer, another print gave two
    outputs, so an unchanged chapter re-executed on a loaded machine gave another file)."""
    def stream(name: str, text: str):
        return nbformat.v4.new_output("stream", name=name, text=text)

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x", outputs=[
        stream("stdout", "a\n"), stream("stdout", "b\n"), stream("stderr", "w\n"), stream("stdout", "c\n"),
        nbformat.v4.new_output("execute_result", data={"text/plain": "1"}, execution_count=1),
        stream("stdout", "d\n"), stream("stdout", "e\n")])]
    outs = sources.strip_volatile(nb).cells[0].outputs
    assert [(o.output_type, o.get("name"), o.get("text")) for o in outs] == [
        ("stream", "stdout", "a\nb\n"), ("stream", "stderr", "w\n"), ("stream", "stdout", "c\n"),
        ("execute_result", None, None), ("stream", "stdout", "d\ne\n")]


def test_a_pause_between_prints_gives_one_output(tmp_path: Path):
    """The same through a kernel: two prints half a second apart (past ipykernel's flush timer)."""
    py = executed_pair(tmp_path, SMALL.replace('print("second")',
                                               'import time\nprint("second")\ntime.sleep(0.6)\nprint("third")'))
    ipynb = py.with_suffix(".ipynb")
    assert book.execute_one(str(py), str(ipynb), {}, str(tmp_path / "logs"), strip=True).ok
    outs = nbformat.read(ipynb, as_version=4).cells[-1].outputs
    assert [(o.output_type, o.text) for o in outs] == [("stream", "second\nthird\n")]


def test_a_timeout_names_its_cell_and_leaks_no_kernel_traceback(tmp_path: Path, capfd: pytest.CaptureFixture):
    py = tmp_path / "slow.py"
    py.write_text(SMALL.replace('print("second")', "import time\ntime.sleep(60)"))
    out = book.execute_one(str(py), str(tmp_path / "slow.ipynb"), {}, str(tmp_path / "logs"), timeout=3)
    assert not out.ok
    assert out.where() == "code cell 3 of 3 ([3] starts 'import time')"
    assert out.error == "CellTimeoutError: the cell ran longer than the timeout of 3 s (--timeout)"
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err and "ZMQError" not in captured.err
    kernel_log = tmp_path / "logs" / "slow.kernel.log"
    assert kernel_log.exists()  # what the kernel process printed went there


def test_kernels_start_quietly(tmp_path: Path, capfd: pytest.CaptureFixture):
    """The kernel configuration installed by ``make install`` drops the TCP warning ipykernel 7
    prints at every start (see implicit_bias.book.jupyter)."""
    from implicit_bias.book import jupyter

    import sys

    assert jupyter.kernel_config_path(sys.prefix).exists(), "run make install (install-kernel)"
    py = executed_pair(tmp_path)
    out = book.execute_one(str(py), str(tmp_path / "out.ipynb"), {}, str(tmp_path / "logs"))
    assert out.ok
    log = (tmp_path / "logs" / "small.kernel.log").read_text()
    assert "without encryption" not in log + capfd.readouterr().err


def test_chapter_spec_reads_parameters_and_profiles(tmp_path: Path):
    py = tmp_path / "c.py"
    py.write_text(SMALL.replace("seed = 0", 'seed = 0\nprofile = "ci"\nwidths: tuple = (4, 8)\nlr = 2 ** -3')
                  + '\n# %%\nPROFILES = dict(ci=dict(steps=10), full=dict(steps=100, n=(1, 2)))\n')
    spec = book.chapter_spec(py)
    assert spec.has_parameters_cell
    assert spec.parameters["seed"] == 0 and spec.parameters["widths"] == (4, 8)
    assert spec.parameters["lr"] is sources.NOT_A_LITERAL  # an expression: its kind is not checked
    assert spec.profiles == ("ci", "full")
    assert sources.profile_settings(py) == {"ci": {"steps": 10}, "full": {"steps": 100, "n": (1, 2)}}
    real = book.chapter_spec(CHAPTERS[0])
    assert {"profile", "seed", "device"} <= set(real.parameters) and real.profiles == ("ci", "full")
