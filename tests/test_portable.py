"""Portable verdicts: the kernels the test suite computes with, and how ledger cells are compared."""

from __future__ import annotations

import json
import math

import nbformat
import pytest

from implicit_bias.book import portable, seeds
from implicit_bias.claims import Ledger

AMD = {"aten": "AVX512", "mkl_cbwr": "AUTO", "machine": "x86_64"}


def test_tests_step_away_from_the_committed_kernels() -> None:
    levels = ["AVX512", "AVX2", "DEFAULT"]
    # committed with AVX-512 and MKL's own path: the tests use AVX2, a fixed MKL branch, and
    # oneDNN (the convolutions) capped at AVX2
    assert portable.other_kernels_env([AMD], levels, "x86_64") == {
        "ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
    # committed on an AVX2 machine: this AVX-512 machine's own ATen kernels already differ
    avx2 = {**AMD, "aten": "AVX2"}
    assert portable.other_kernels_env([avx2], levels, "x86_64") == {"MKL_CBWR": "AVX2",
                                                                   "ONEDNN_MAX_CPU_ISA": "AVX"}
    # committed with MKL_CBWR=AVX2 (e.g. by a test environment): MKL's own path differs from it
    assert portable.other_kernels_env([{**AMD, "mkl_cbwr": "AVX2"}], levels, "x86_64") == {
        "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
    # an AVX2-only machine reading AVX2 notebooks falls back to the generic kernels
    assert portable.other_kernels_env([avx2], ["AVX2", "DEFAULT"], "x86_64")["ATEN_CPU_CAPABILITY"] == "default"
    # ARM: no MKL, no x86 oneDNN; nothing recorded: nothing to differ from
    assert not {"MKL_CBWR", "ONEDNN_MAX_CPU_ISA"} & set(portable.other_kernels_env([AMD], ["DEFAULT"], "aarch64"))
    assert portable.other_kernels_env([], levels, "x86_64") == {}


def test_onednn_steps_down_with_the_committed_aten_level() -> None:
    """oneDNN is capped one instruction set below the one that goes with the narrowest committed
    ATen level, skipping caps the notebooks recorded; a notebook without the field (executed before
    oneDNN was recorded) counts as oneDNN's own choice."""
    cap = portable.onednn_cap
    assert cap([AMD]) == "AVX2"
    assert cap([{**AMD, "aten": "AVX2"}]) == "AVX"
    assert cap([{**AMD, "aten": "DEFAULT"}]) == "SSE41"
    assert cap([AMD, {**AMD, "aten": "AVX2"}]) == "AVX"  # below the narrowest of them
    assert cap([{**AMD, "onednn": "ALL"}]) == "AVX2"  # recorded as oneDNN's own choice
    assert cap([{**AMD, "onednn": "AVX2"}]) == "AVX"  # committed with that cap already: one more down
    assert cap([{**AMD, "aten": "DEFAULT", "onednn": "SSE41"}]) is None  # nothing narrower is left
    assert cap([{**AMD, "aten": "SVE256"}]) is None and cap([]) is None  # not an x86 level


def test_onednn_cap_is_recorded_and_a_users_cap_is_kept(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    monkeypatch.delenv("DNNL_MAX_CPU_ISA", raising=False)
    monkeypatch.delenv(portable.OPT_OUT_ENV, raising=False)
    assert portable.kernel_signature()["onednn"] == "ALL"
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "avx2")
    sig = portable.kernel_signature()
    assert sig["onednn"] == "AVX2" and set(sig) == {"aten", "mkl_cbwr", "onednn", "machine"}
    nb = nbformat.v4.new_notebook()
    portable.record_kernels(nb)
    (tmp_path / "chapters").mkdir()
    nbformat.write(nb, tmp_path / "chapters" / "a.ipynb")
    assert portable.committed_kernels([tmp_path / "chapters" / "a.ipynb"]) == [sig]
    # the tests' choice yields to a cap the user set, under either of oneDNN's names
    monkeypatch.setattr(portable, "other_kernels_env", lambda committed, available: {
        "ONEDNN_MAX_CPU_ISA": portable.onednn_cap(committed) or "none left"})
    assert portable.test_kernels_env(tmp_path) == {}  # ONEDNN_MAX_CPU_ISA is set (to avx2)
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA")
    expected = portable.onednn_cap([sig])
    assert portable.test_kernels_env(tmp_path) == {"ONEDNN_MAX_CPU_ISA": expected}
    monkeypatch.setenv("DNNL_MAX_CPU_ISA", "SSE41")
    assert portable.test_kernels_env(tmp_path) == {}


def test_kernels_are_read_from_committed_notebooks(tmp_path) -> None:
    nb = nbformat.v4.new_notebook()
    portable.record_kernels(nb, AMD)
    nbformat.write(nb, tmp_path / "a.ipynb")
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "b.ipynb")  # nothing recorded
    assert portable.committed_kernels([tmp_path / "a.ipynb", tmp_path / "b.ipynb"]) == [AMD]


def test_every_committed_chapter_records_its_kernels() -> None:
    from implicit_bias.book import all_chapters

    missing = [str(p) for p in all_chapters()
               if not portable.committed_kernels([p.with_suffix(".ipynb")])]
    assert not missing, f"re-execute these chapters (make execute CHAPTER=...): {missing}"


def _outputs(led: Ledger) -> list[dict]:
    """A ledger cell's outputs as Jupyter stores them (the glue is a Python string literal)."""
    return [{"output_type": "display_data", "metadata": {}, "data": {"text/plain": led.table()}},
            {"output_type": "display_data",
             "metadata": {"scrapbook": {"name": "claims", "mime_prefix": "application/papermill.record/"}},
             "data": {portable.GLUE_MIME: repr(led.to_json())}}]


def test_ledger_cells_compare_verdicts_exactly_and_values_within_tolerance() -> None:
    def led(x: float) -> Ledger:
        out = Ledger("p/01")
        out.above("gap", "s", "st", "p", x, 1.0)
        return out

    assert portable.compare_ledger_outputs(_outputs(led(2.0)), _outputs(led(2.05))) == []
    assert portable.compare_ledger_outputs(_outputs(led(2.0)), _outputs(led(2.6)))  # value moved
    flipped = portable.compare_ledger_outputs(_outputs(led(1.05)), _outputs(led(0.95)))
    assert any("verdict" in p for p in flipped)  # a verdict that moves with the CPU fails CI
    assert portable.compare_ledger_outputs(_outputs(led(2.0)), []) == [
        "the re-executed cell glued no ledger (did ledger.report() run?)"]


def test_margin_in_spreads() -> None:
    runs = lambda values, lo=None, hi=None: [{"value": v, "lo": lo, "hi": hi} for v in values]
    z = seeds.margin_in_spreads(runs([0.50, 0.52, 0.49, 0.51, 0.50], lo=0.45))
    assert z == pytest.approx(0.05 / 0.0114, rel=0.01)
    assert seeds.margin_in_spreads(runs([1, 2, 3, 4, 5], lo=2.5)) < 1  # knife's edge
    assert seeds.margin_in_spreads(runs([3, 3, 3], hi=4)) == math.inf  # deterministic
    assert seeds.margin_in_spreads([{"measured": "yes"}]) is None  # boolean claim
    assert seeds.margin_in_spreads(runs([1, 2])[:1] + [{"measured": "nan"}]) is None


def test_robustness_page_lists_knife_edges_and_after_seed_thresholds() -> None:
    def row(values, origin, lo):
        return {"statement": "s", "origin": origin,
                "runs": {str(i): {"measured": str(v), "verdict": "PASS", "value": v, "lo": lo, "hi": None}
                         for i, v in enumerate(values)}}

    data = {"chapters": {"chapters/p/01_a": {"seeds": [0, 1, 2, 3, 4], "failed": [], "claims": {
        "edge": row([1.6, 2, 2.5, 4, 6], "after-seeds: lowered from 3 after seed 1", 1.5),
        "safe": row([10, 10.1, 9.9, 10, 10], "paper", 1.0),
        "count": {"statement": "s", "origin": None,
                  "runs": {str(i): {"measured": "ok", "verdict": "PASS"} for i in range(5)}}}}}}
    page = seeds.render_page(data, {})
    assert "1 claim(s)\nsit within one spread" in page
    assert "| {doc}`/chapters/p/01_a` | `edge` | 0.56 |" in page
    assert "| {doc}`/chapters/p/01_a` | `edge` | lowered from 3 after seed 1 |" in page
    assert "| `safe` | 5 / 5 | - | 9.9 | 10 | 10.1 | 127.3 | paper |" in page
    assert "| `edge` | 5 / 5 | - | 1.6 | 2.5 | 6 | 0.6 ⚠ | after-seeds |" in page
    assert "| `count` | 5 / 5 | - |" in page and "| boolean | *not stated* |" in page
    json.dumps(data)  # the sweep's data stays JSON


def test_importing_the_book_loads_no_torch() -> None:
    """The root ``conftest.py`` imports :mod:`implicit_bias.book.portable` and sets the other
    kernels' variables (``ATEN_CPU_CAPABILITY``, ...) before torch is imported, since torch reads
    them once, at import: the book's package (its command line included) must not import torch at
    its top. (The budget sweep's modules once did, through ``implicit_bias.runtime``, so the unit
    tests computed with this machine's own kernels, and every command paid torch's import.)"""
    import os
    import subprocess
    import sys

    code = ("import sys, implicit_bias.book.portable, implicit_bias.book.cli; "
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.'))[:3])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", f"importing the book imported {done.stdout.strip()}"
