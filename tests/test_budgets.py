"""`implicit_bias.book.budgets`: which runs are pending, which verdicts change, the page's rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from implicit_bias.book import budget_table, budgets
from implicit_bias.runtime import budget_keys


def _run(**claims: tuple[str, str]) -> dict:
    return {"ok": True, "claims": {cid: {"verdict": v, "measured": m} for cid, (v, m) in claims.items()}}


def _chapter(root: Path, text: str = "x = 1\n") -> Path:
    """A chapter source ``chapters/part/01_page.py`` under ``root``."""
    py = root / "chapters" / "part" / "01_page.py"
    py.parent.mkdir(parents=True)
    py.write_text(text)
    return py


def test_budget_keys_name_counts_not_times_or_sizes() -> None:
    assert budget_keys({"steps": 10, "epochs": 3, "lr": 0.1, "pair_T": 1.0, "record": 5, "warmup": 2,
                        "steps_per_layer": 4, "descent_step": 0.3}) == [
        "steps", "epochs", "warmup", "steps_per_layer"]
    assert budget_keys({"n_nets": 120}) == []


def test_verdict_changes_compares_each_run_with_x1_on_its_seed() -> None:
    seed_entry = {"claims": {"a": {"runs": {"0": {"verdict": "PASS"}, "1": {"verdict": "FAIL"}}},
                             "b": {"runs": {"0": {"verdict": "PASS"}, "1": {"verdict": "PASS"}}}}}
    entry = {"runs": {"x3/seed0": _run(a=("PASS", "1"), b=("PASS", "2")),
                      "x3/seed1": _run(a=("PASS", "1"), b=("PASS", "2")),  # a: FAIL -> PASS on seed 1
                      "x10/seed0": _run(a=("PASS", "1"), b=("FAIL", "0"))}}
    assert budget_table.verdict_changes(entry, seed_entry) == {"a": ["x3/seed1"], "b": ["x10/seed0"]}
    # a claim missing at a budget counts as changed; a failed run is not read
    entry["runs"]["x3/seed0"] = _run(a=("PASS", "1"))
    entry["runs"]["x3/seed1"] = {"ok": False, "claims": {}}
    assert budget_table.verdict_changes(entry, seed_entry) == {"b": ["x3/seed0", "x10/seed0"]}


def test_pending_resumes_and_reruns_changed_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    py = _chapter(tmp_path)
    monkeypatch.setattr(budgets, "ROOT", tmp_path)
    monkeypatch.setattr(budgets, "relative", lambda p: str(Path(p).relative_to(tmp_path)))
    name = "chapters/part/01_page"
    data = {"chapters": {name: {"source": budgets.source_digest(py), "budget_keys": ["steps"],
                                "runs": {"x3/seed0": _run(a=("PASS", "1")),
                                         "x3/seed1": {"ok": False, "claims": {}}}}}}
    todo = [(k, s) for _, k, s in budgets.pending(data, [py])]
    assert todo == [(3, 1), (10, 0)]  # the finished run is kept, the failed one and the missing one run
    py.write_text("x = 2\n")  # an edited page is swept again
    assert [(k, s) for _, k, s in budgets.pending(data, [py])] == list(budgets.RUNS)
    data["chapters"][name].update(source=budgets.source_digest(py), budget_keys=[])
    assert budgets.pending(data, [py]) == []  # a page without a budget runs nothing


def test_render_chapter_marks_changes_and_pages_without_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(budget_table, "is_current", lambda chapter, entry: True)
    seed_entry = {"claims": {"a": {"runs": {"0": {"verdict": "PASS", "measured": "0.9"},
                                            "1": {"verdict": "PASS", "measured": "0.8"}}}}}
    entry = {"budget_keys": ["steps"], "runs": {"x3/seed0": _run(a=("FAIL", "0.4"))}}
    lines, flips = budget_table.render_chapter("chapters/p/x", entry, seed_entry)
    assert flips == {"a": ["x3/seed0"]}
    row = next(ln for ln in lines if ln.startswith("| `a`"))
    nowrap = '<span class="nowrap">{}</span>'  # a value like 1.6e-15 must not break at its minus sign
    assert f"PASS {nowrap.format('0.9')}" in row and f"FAIL {nowrap.format('0.4')}" in row and "⚑" in row
    assert "not yet run: x3/seed1, x10/seed0" in lines[0]
    lines, flips = budget_table.render_chapter("chapters/p/x", {"budget_keys": [], "runs": {}}, seed_entry)
    assert "no step, epoch or iteration count" in lines[0] and flips == {}
    summary = budget_table.render_summary({"chapters": {"chapters/p/x": entry}},
                                     [("chapters/p/x", "a", ["x3/seed0"], "supports")], {"chapters": {}})
    assert "**1 verdict(s) change with the budget** (1 of them" in summary


def test_adopt_keeps_runs_only_when_the_edit_changed_no_number(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from implicit_bias.book import report

    py = _chapter(tmp_path, "x = 1  # falsifier added\n")
    py.with_suffix(".ipynb").write_text("{}")
    name = "chapters/part/01_page"
    ledger = lambda value: {"claims": {"claims": [{"id": "a", "value": value, "lo": 0.5, "hi": None,
                                                    "measured": f"{value}"}]}}
    for swept_value, adopted in ((0.9, [name]), (0.6, [])):  # 0.6: beyond the tolerance across machines
        budgets.save({"chapters": {name: {"source": "old", "budget_keys": ["steps"], "runs": {}}}}, tmp_path)
        monkeypatch.setattr(budgets, "_swept_notebook", lambda *a, v=swept_value: ledger(v))
        monkeypatch.setattr(report, "read_glued", lambda nb: ledger(0.9))
        assert budgets.adopt(tmp_path) == adopted
        source = budgets.load(tmp_path)["chapters"][name]["source"]
        assert (source == budgets.source_digest(py)) == bool(adopted)


def test_adopt_accepts_values_moved_within_the_kernel_tolerance(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A page re-executed under other kernels keeps its budget runs when its values moved by no more
    than the tolerance across machines and no verdict or passing region changed; a larger move, a
    changed verdict or a changed threshold drops them."""
    from implicit_bias.book import report

    py = _chapter(tmp_path, "x = 1\n")
    py.with_suffix(".ipynb").write_text("{}")
    name = "chapters/part/01_page"

    def ledger(value: float, verdict: str = "PASS", lo: float = 0.5) -> dict:
        return {"claims": {"claims": [{"id": "a", "origin": "paper", "statement": "s", "value": value,
                                        "lo": lo, "hi": None, "vtol": 0.01, "verdict": verdict,
                                        "measured": f"{value}"}]}}

    cases = ((ledger(0.905), [name]), (ledger(0.95), []), (ledger(0.905, "FAIL"), []),
             (ledger(0.905, lo=0.6), []))
    for swept, adopted in cases:
        budgets.save({"chapters": {name: {"source": "old", "budget_keys": ["steps"], "runs": {}}}}, tmp_path)
        monkeypatch.setattr(budgets, "_swept_notebook", lambda *a, v=swept: v)
        monkeypatch.setattr(report, "read_glued", lambda nb: ledger(0.9))
        assert budgets.adopt(tmp_path) == adopted


def test_a_run_on_other_data_than_the_page_is_recorded_as_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A budget run whose page fell back to its stand-in data (the sweep's checkout has no local
    MNIST) while the committed page ran on the real data must not enter the comparison."""
    from types import SimpleNamespace

    from implicit_bias.book import report
    from implicit_bias.claims import Ledger

    def ledger(proxy: bool, data: str) -> SimpleNamespace:
        led = Ledger("p")
        led.above("a", "Fig. 1", "s", "-", 0.9, 0.5, bearing="supports", items="fig1", proxy=proxy,
                  origin="prior", falsifier="f")
        return SimpleNamespace(executed=True, claims=led.claims, run="profile=ci", data=data)

    page = ledger(False, "10,000 real MNIST digits")
    for run, ok in ((ledger(False, "10,000 real MNIST digits"), True), (ledger(True, "8x8 digits"), False)):
        monkeypatch.setattr(report, "collect_ledgers",
                            lambda root, chapters, run=run: [page if root == budgets.ROOT else run])
        result = budgets._ledger_of(3, 0, budgets.ROOT / "chapters/p/01_x.py")
        assert result["ok"] is ok and result["data"] == run.data
        assert ok or "other data than the committed page" in result["error"]
        assert result["claims"]["a"].get("proxy", False) is (not ok)


def test_save_keeps_the_chapters_of_its_own_root(tmp_path: Path) -> None:
    """``save(data, root)`` orders by the chapters under ``root``, not the repository's: written to
    another tree, a sweep must keep its chapters (it once dropped every one of them)."""
    py = _chapter(tmp_path)
    name = "chapters/part/01_page"
    budgets.save({"chapters": {"chapters/gone/99_removed": {}, name: {"source": "s"}}}, tmp_path)
    assert list(budgets.load(tmp_path)["chapters"]) == [name]  # a chapter no longer in the tree goes


def _swept_entry(py: Path, x10: dict) -> dict:
    return {"source": budgets.source_digest(py), "budget_keys": ["steps"],
            "runs": {"x3/seed0": _run(a=("PASS", "1")), "x3/seed1": _run(a=("PASS", "1")), "x10/seed0": x10}}


def test_a_failed_run_is_to_do_and_not_a_complete_sweep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that failed (killed, timed out) is listed as to do, and its chapter is not counted
    among those swept at every budget; the same chapter with all runs finished is."""
    from implicit_bias.book import report

    py = _chapter(tmp_path)
    name = "chapters/part/01_page"
    from types import SimpleNamespace

    ledger = SimpleNamespace(chapter=name, claims=[SimpleNamespace(id="a")])
    monkeypatch.setattr(report, "collect_ledgers", lambda root, chapters: [ledger])
    failed = {"ok": False, "claims": {}, "error": "timeout"}
    for x10, complete in ((failed, False), (_run(a=("PASS", "1")), True)):
        budgets.save({"runs": [], "chapters": {name: _swept_entry(py, x10)}}, tmp_path)
        problems, todo = budgets.staleness(tmp_path, [py])
        assert problems == []
        assert (todo == [f"{name}: x10/seed0 failed (timeout; make budgets CHAPTER={name}.py runs it again)"]) \
            != complete
        monkeypatch.setattr(budget_table, "is_current", lambda chapter, entry: True)
        summary = budget_table.render_summary(budgets.load(tmp_path), [], {"chapters": {}})
        counted = "**1 chapter(s) swept at every budget**, 0 partly" in summary
        assert counted == complete, summary
        lines, _ = budget_table.render_chapter(name, budgets.load(tmp_path)["chapters"][name],
                                               {"claims": {}})
        assert ("x10/seed0 (failed)" in lines[0]) != complete


def test_a_sweep_leaves_the_callers_budget_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``--jobs 1`` a run executes in the caller's process: the multiplier it sets is in force
    during the run and the caller's own value (or its absence) comes back after it."""
    import os

    from implicit_bias.book import execute
    from implicit_bias.runtime import BUDGET_ENV

    seen = []
    monkeypatch.setattr(execute, "execute_one", lambda *a: seen.append(os.environ.get(BUDGET_ENV)))
    for before in (None, "2"):
        if before is None:
            monkeypatch.delenv(BUDGET_ENV, raising=False)
        else:
            monkeypatch.setenv(BUDGET_ENV, before)
        budgets._execute_with_budget(10, 0, "p.py", "out.ipynb", "logs", None)
        assert os.environ.get(BUDGET_ENV) == before
    assert seen == ["10", "10"]


def test_a_write_killed_halfway_leaves_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sweeps rewrite committed files (budget_sweep.json, seed_sweep.json, robustness.md) after
    every run; a write that dies halfway must leave the old file whole, not half of the new one."""
    from implicit_bias.book import common

    path = tmp_path / "book" / "data" / "sweep.json"
    common.write_atomic(path, '{"old": 1}\n')
    real = Path.write_text

    def dies_halfway(self: Path, text: str, *a, **kw) -> int:
        real(self, text[: len(text) // 2])
        raise KeyboardInterrupt("killed")

    monkeypatch.setattr(Path, "write_text", dies_halfway)
    with pytest.raises(KeyboardInterrupt):
        common.write_atomic(path, '{"new": 22222222}\n')
    monkeypatch.undo()
    assert path.read_text() == '{"old": 1}\n'


def test_committed_claims_gives_a_page_the_finished_runs_and_whether_they_are_current(tmp_path: Path) -> None:
    py = _chapter(tmp_path)
    name = "chapters/part/01_page"
    failed = {"ok": False, "error": "killed"}
    budgets.save({"chapters": {name: _swept_entry(py, failed)}}, tmp_path)
    runs, current = budget_table.committed_claims(name, tmp_path)
    assert list(runs) == ["x3/seed0", "x3/seed1"] and current  # the failed x10 run is left out
    assert runs["x3/seed0"]["a"] == {"verdict": "PASS", "measured": "1"}
    py.write_text("x = 2\n")  # the page changed since the sweep
    assert budget_table.committed_claims(name, tmp_path)[1] is False
    assert budget_table.committed_claims("chapters/part/02_none", tmp_path) == ({}, False)


def test_budget_readings_reads_a_claims_runs_from_the_file(tmp_path: Path) -> None:
    name = "chapters/part/01_x"
    (tmp_path / "chapters" / "part").mkdir(parents=True)
    (tmp_path / f"{name}.py").write_text("x = 1\n")
    (tmp_path / "book" / "data").mkdir(parents=True)
    row = {"measured": "0.08", "verdict": "FAIL", "value": 0.08}
    data = {"runs": [], "chapters": {name: {"source": "old", "runs": {
        "x3/seed0": {"ok": True, "claims": {"c": row}}, "x3/seed1": {"ok": False, "claims": {}}}}}}
    (tmp_path / budget_table.SWEEP_PATH).write_text(json.dumps(data))
    assert budget_table.budget_readings(name, "c", tmp_path) == "x3/seed0 FAIL 0.08"
    assert budget_table.budget_readings(name, "other", tmp_path) == "no committed budget run"
