"""Comparing two runs: exactly the expected changes on crafted pairs, and the terminal view."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from localeval.data.dataset import DatasetSource
from localeval.data.results import CaseResult, MetricResult, MetricSummary, RunReport
from localeval.errors import InputError
from localeval.reports import Change, Comparison, compare, print_comparison

#: A cell of a crafted run: a score (passes at >= 0.5) or "error".
Cell = float | str


def result(metric: str, cell: Cell) -> MetricResult:
    if cell == "error":
        return MetricResult(metric=metric, kind="k", threshold=0.5, error="BackendError: judge down")
    assert isinstance(cell, float)
    return MetricResult(metric=metric, kind="k", score=cell, passed=cell >= 0.5, threshold=0.5)


def run(run_id: str, rows: list[tuple[str | None, dict[str, Cell]]], dataset: DatasetSource | None = None) -> RunReport:
    """A run whose cases are ``(name, {metric: cell})`` in order; metrics as the first case has them."""
    cases = [
        CaseResult(index=i, name=name, results=[result(m, c) for m, c in cells.items()])
        for i, (name, cells) in enumerate(rows)
    ]
    metrics = list(dict.fromkeys(m for _, cells in rows for m in cells))
    summary = [MetricSummary.of(m, [r for c in cases for r in c.results if r.metric == m]) for m in metrics]
    return RunReport(run_id=run_id, created_at="2026-11-01T00:00:00+00:00", localeval_version="0.1.0",
                     cases=cases, summary=summary, dataset=dataset)


def kinds(changes: list[Change]) -> list[tuple[str, str, str | None]]:
    return [(c.kind, c.case, c.metric) for c in changes]


def test_a_run_compared_with_itself_has_no_changes() -> None:
    a = run("a", [("x", {"m": 0.75}), ("y", {"m": "error"})])
    comparison = compare(a, a)
    assert comparison.changes == []
    assert not comparison.has_regressions and not comparison.has_new_errors
    assert (comparison.matched_by, comparison.cases_compared) == ("name", 2)
    (m,) = comparison.metrics
    assert (m.compared, m.mean_a, m.mean_b, m.mean_delta) == (2, 0.75, 0.75, 0.0)


def test_every_kind_of_change_is_found_once() -> None:
    a = run("a", [("reg", {"m": 0.75}), ("fix", {"m": 0.25}), ("moved", {"m": 0.75}), ("same", {"m": 0.5}),
                  ("breaks", {"m": 0.5}), ("heals", {"m": "error"}), ("both-err", {"m": "error"})])
    b = run("b", [("reg", {"m": 0.25}), ("fix", {"m": 0.5}), ("moved", {"m": 1.0}), ("same", {"m": 0.5}),
                  ("breaks", {"m": "error"}), ("heals", {"m": 0.0}), ("both-err", {"m": "error"})])
    comparison = compare(a, b)
    assert kinds(comparison.changes) == [
        ("regression", "reg", "m"), ("fix", "fix", "m"), ("score", "moved", "m"),
        ("errored", "breaks", "m"), ("recovered", "heals", "m"),
    ]
    regression, fix, moved, errored, recovered = comparison.changes
    assert (regression.score_a, regression.score_b, regression.delta) == (0.75, 0.25, -0.5)
    assert (fix.delta, moved.delta) == (0.25, 0.25)
    assert (errored.score_a, errored.score_b, errored.delta) == (0.5, None, None)
    assert errored.error == "BackendError: judge down"
    assert recovered.score_b == 0.0
    assert comparison.has_regressions and comparison.has_new_errors
    (m,) = comparison.metrics
    assert (m.compared, m.regressions, m.fixes, m.score_changes, m.errored, m.recovered) == (7, 1, 1, 1, 1, 1)
    # mean over the four cases scored in both runs: A .75 .25 .75 .5, B .25 .5 1 .5
    assert (m.mean_a, m.mean_b, m.mean_delta) == (0.5625, 0.5625, 0.0)


def test_a_verdict_change_counts_whatever_the_tolerance() -> None:
    a = run("a", [("x", {"m": 0.5})])
    b = run("b", [("x", {"m": 0.375})])
    assert kinds(compare(a, b, tolerance=1.0).changes) == [("regression", "x", "m")]


def test_tolerance_is_exclusive() -> None:
    a = run("a", [("at", {"m": 0.5}), ("over", {"m": 0.5}), ("down", {"m": 1.0})])
    b = run("b", [("at", {"m": 0.75}), ("over", {"m": 0.875}), ("down", {"m": 0.625})])
    comparison = compare(a, b, tolerance=0.25)
    assert kinds(comparison.changes) == [("score", "over", "m"), ("score", "down", "m")]
    assert [c.delta for c in comparison.changes] == [0.375, -0.375]
    assert kinds(compare(a, b).changes) == [("score", "at", "m"), ("score", "over", "m"), ("score", "down", "m")]


@pytest.mark.parametrize("tolerance", [-0.125, 1.5])
def test_tolerance_outside_the_unit_interval_is_refused(tolerance: float) -> None:
    a = run("a", [("x", {"m": 0.5})])
    with pytest.raises(InputError, match="tolerance must be between 0 and 1"):
        compare(a, a, tolerance=tolerance)


def test_cases_are_matched_by_name_whatever_their_order() -> None:
    a = run("a", [("x", {"m": 1.0}), ("y", {"m": 0.0})])
    b = run("b", [("y", {"m": 0.0}), ("x", {"m": 1.0})])
    comparison = compare(a, b)
    assert (comparison.matched_by, comparison.changes) == ("name", [])


@pytest.mark.parametrize("names", [["x", "x"], ["x", None]])
def test_cases_are_matched_by_index_unless_every_name_is_distinct(names: list[str | None]) -> None:
    a = run("a", [(names[0], {"m": 1.0}), (names[1], {"m": 0.0})])
    b = run("b", [(names[0], {"m": 1.0}), (names[1], {"m": 1.0})])
    comparison = compare(a, b)
    assert comparison.matched_by == "index"
    label = "#2" + (f" {names[1]}" if names[1] else "")
    assert kinds(comparison.changes) == [("fix", label, "m")]


def test_names_must_be_distinct_in_both_runs_to_match_by_name() -> None:
    a = run("a", [("x", {"m": 1.0}), ("y", {"m": 1.0})])
    b = run("b", [("y", {"m": 1.0}), ("y", {"m": 0.0})])
    assert kinds(compare(a, b).changes) == [("regression", "#2 y", "m")]


def test_cases_only_in_one_run() -> None:
    a = run("a", [("kept", {"m": 1.0}), ("gone", {"m": 1.0})])
    b = run("b", [("new", {"m": 0.0}), ("kept", {"m": 1.0})])
    comparison = compare(a, b)
    assert kinds(comparison.changes) == [("removed", "gone", None), ("added", "new", None)]
    assert (comparison.cases_only_in_a, comparison.cases_only_in_b) == (["gone"], ["new"])
    assert comparison.cases_compared == 1 and not comparison.has_regressions


def test_unnamed_cases_only_in_one_run_are_matched_by_index() -> None:
    a = run("a", [(None, {"m": 1.0})])
    b = run("b", [(None, {"m": 1.0}), (None, {"m": 0.0})])
    comparison = compare(a, b)
    assert kinds(comparison.changes) == [("added", "#2", None)]


def test_metrics_only_in_one_run_are_listed_not_compared() -> None:
    a = run("a", [("x", {"old": 1.0, "both": 1.0})])
    b = run("b", [("x", {"both": 0.0, "new": 1.0})])
    comparison = compare(a, b)
    assert kinds(comparison.changes) == [("regression", "x", "both")]
    assert (comparison.metrics_only_in_a, comparison.metrics_only_in_b) == (["old"], ["new"])
    assert [m.metric for m in comparison.metrics] == ["both"]


def test_a_result_missing_from_one_case_is_a_change() -> None:
    a = run("a", [("x", {"m": 1.0}), ("y", {"m": 1.0})])
    b = run("b", [("x", {"m": 1.0}), ("y", {})])
    assert kinds(compare(a, b).changes) == [("removed", "y", "m")]


def test_the_comparison_dumps_to_json() -> None:
    a = run("a", [("x", {"m": 1.0})])
    b = run("b", [("x", {"m": 0.25})])
    dumped = compare(a, b).model_dump(mode="json")
    assert dumped["changes"] == [
        {"kind": "regression", "case": "x", "metric": "m", "score_a": 1.0, "score_b": 0.25, "error": None}
    ]
    assert (dumped["run_a"], dumped["run_b"], dumped["tolerance"]) == ("a", "b", 0.0)


def test_print_comparison_shows_changes_and_a_summary_line() -> None:
    a = run("a", [("x", {"m": 0.75}), ("y", {"m": 0.25}), ("z", {"m": 0.5})])
    b = run("b", [("x", {"m": 0.25}), ("y", {"m": 0.75}), ("w", {"m": 0.5})])
    console = Console(record=True, width=140, color_system=None)
    print_comparison(console, compare(a, b))
    text = console.export_text()
    for expected in ("pass → fail", "fail → pass", "only in A", "only in B", "-0.500", "+0.500", "Per metric"):
        assert expected in text, expected
    assert text.strip().endswith(
        "2 cases matched by name: 1 regression, 1 fix, 1 case only in A, 1 case only in B."
    )


def test_print_comparison_without_changes() -> None:
    a = run("a", [("x", {"m": 0.75})])
    console = Console(record=True, width=120, color_system=None)
    print_comparison(console, compare(a, a, tolerance=0.125))
    text = console.export_text()
    assert text.startswith("No changes.")
    assert text.strip().endswith("1 case matched by name, tolerance 0.125: nothing changed.")


# -- which data the runs judged ----------------------------------------------------------------

FILE_1 = DatasetSource(path="cases.jsonl", sha256="1" * 64)
FILE_1_MOVED = DatasetSource(path="elsewhere/cases.jsonl", sha256="1" * 64)
FILE_2 = DatasetSource(path="cases-v2.jsonl", sha256="2" * 64)
UNNAMED = [(None, {"m": 0.75}), (None, {"m": 0.25})]


def printed(comparison: Comparison) -> str:
    console = Console(record=True, width=200, color_system=None)
    print_comparison(console, comparison)
    return console.export_text()


def test_runs_over_the_same_data_say_nothing_about_it_wherever_the_file_was() -> None:
    comparison = compare(run("a", UNNAMED, FILE_1), run("b", UNNAMED, FILE_1_MOVED))
    assert comparison.same_dataset is True
    assert (comparison.dataset_a, comparison.dataset_b) == (FILE_1, FILE_1_MOVED)
    text = printed(comparison)
    assert "dataset" not in text


def test_runs_over_different_data_are_matched_but_the_output_says_so() -> None:
    a = run("a", UNNAMED, FILE_1)
    b = run("b", [*UNNAMED, (None, {"m": 1.0})], FILE_2)
    comparison = compare(a, b)
    assert comparison.same_dataset is False
    assert (comparison.matched_by, comparison.cases_compared, comparison.cases_in_a, comparison.cases_in_b) == (
        "index", 2, 2, 3
    )
    assert comparison.model_dump(mode="json")["dataset_b"] == {"path": "cases-v2.jsonl", "sha256": "2" * 64}
    lines = printed(comparison).splitlines()
    assert lines[-2] == (
        f"Warning: the runs judged different datasets (A: 2 cases of cases.jsonl, sha256 {'1' * 64}; "
        f"B: 3 cases of cases-v2.jsonl, sha256 {'2' * 64}); each row compares the cases at the same position."
    )
    assert lines[-1] == "2 cases matched by index: 1 case only in B."


def test_same_case_count_different_files_is_a_difference() -> None:
    comparison = compare(run("a", UNNAMED, FILE_1), run("b", UNNAMED, FILE_2))
    assert comparison.same_dataset is False
    assert "different datasets" in printed(comparison)


def test_an_older_report_without_its_dataset_cannot_be_checked() -> None:
    comparison = compare(run("a", UNNAMED), run("b", UNNAMED, FILE_1))
    assert comparison.same_dataset is None
    assert printed(comparison).splitlines()[-2] == (
        "Note: cannot tell whether both runs judged the same dataset: the report of A does not record it "
        "(written by an older localeval)."
    )
    neither = printed(compare(run("a", UNNAMED), run("b", UNNAMED)))
    assert "the same dataset: neither report records it (written by an older localeval)." in neither


def test_without_dataset_records_a_different_case_count_is_still_a_difference() -> None:
    comparison = compare(run("a", UNNAMED), run("b", UNNAMED[:1]))
    assert comparison.same_dataset is False
    assert "different datasets (A: 2 cases; B: 1 case); each row compares the cases at the same position" in (
        printed(comparison)
    )


# -- output read in CI logs and pipes ----------------------------------------------------------


def test_outside_a_terminal_tables_are_as_wide_as_their_values() -> None:
    """`localeval compare A B | cat`: rich assumes 80 columns there, and used to cut "exact_match" to "exac…"."""
    metrics = {"exact_match": 0.75, "answer_relevancy (logprobs)": 0.125, "contextual_precision": 0.5}
    moved = {"exact_match": 0.25, "answer_relevancy (logprobs)": 0.3125, "contextual_precision": 0.5}
    a = run("20261101-aaaaaaaaaaaa", [("a case with a fairly long name", metrics)])
    b = run("20261101-bbbbbbbbbbbb", [("a case with a fairly long name", moved)])
    out = io.StringIO()
    console = Console(file=out, width=80, color_system=None)  # what a pipe gets
    assert not console.is_terminal
    print_comparison(console, compare(a, b))
    text = out.getvalue()
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) > 80  # the tables did not fit 80 columns
    row = next(line for line in text.splitlines() if "answer_relevancy (logprobs)" in line and "score moved" in line)
    assert "a case with a fairly long name" in row and "+0.188" in row
    summary = next(line for line in text.splitlines() if line.startswith("│ exact_match"))
    cells = [cell.strip() for cell in summary.split("│")[1:-1]]
    assert cells == ["exact_match", "1", "1", "0", "0", "0", "0", "0.750", "0.250", "-0.500"]


def test_in_a_terminal_tables_still_fit_its_width() -> None:
    metrics = {"exact_match": 0.75, "answer_relevancy (logprobs)": 0.125, "contextual_precision": 0.5}
    a = run("a", [("x", metrics)])
    out = io.StringIO()
    console = Console(file=out, width=60, force_terminal=True, color_system=None)
    print_comparison(console, compare(a, run("b", [("x", {**metrics, "exact_match": 0.25})])))
    tables = [line for line in out.getvalue().splitlines() if line[:1] in "┏┃┡│└"]
    assert tables and max(len(line) for line in tables) <= 60
