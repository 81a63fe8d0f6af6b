"""`implicit_bias.book.budgets`: which runs are pending, which verdicts change, the page's rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from implicit_bias.book import budget_table, budgets
from implicit_bias.runtime import budget_keys


def _run(**claims: tuple[str, str]) -> dict:
    return {"ok": True, "claims": {cid: {"verdict": v, "measured": m} for cid, (v, m) in claims.items()}}


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
    py = tmp_path / "chapters" / "part" / "01_page.py"
    py.parent.mkdir(parents=True)
    py.write_text("x = 1\n")
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

    py = tmp_path / "chapters" / "part" / "01_page.py"
    py.parent.mkdir(parents=True)
    py.write_text("x = 1  # falsifier added\n")
    py.with_suffix(".ipynb").write_text("{}")
    name = "chapters/part/01_page"
    ledger = lambda value: {"claims": {"claims": [{"id": "a", "value": value, "lo": 0.5, "hi": None,
                                                    "measured": f"{value}"}]}}
    monkeypatch.setattr(budgets, "all_chapters", lambda *a: [py])
    monkeypatch.setattr(budgets, "relative", lambda p: str(Path(p).relative_to(tmp_path)))
    for swept_value, adopted in ((0.9, [name]), (0.8, [])):
        budgets.save({"chapters": {name: {"source": "old", "budget_keys": ["steps"], "runs": {}}}}, tmp_path)
        monkeypatch.setattr(budgets, "_swept_notebook", lambda *a, v=swept_value: ledger(v))
        monkeypatch.setattr(report, "read_glued", lambda nb: ledger(0.9))
        assert budgets.adopt(tmp_path) == adopted
        source = budgets.load(tmp_path)["chapters"][name]["source"]
        assert (source == budgets.source_digest(py)) == bool(adopted)
