"""Comparing two runs: exactly the expected changes on crafted pairs, each case's outputs and their
diff, the per-metric statistics and verdicts, the regression gates."""

from __future__ import annotations

import json
import statistics

import pytest

from localeval.data.dataset import DatasetSource
from localeval.data.results import CaseResult, MetricResult, MetricSummary, RunReport
from localeval.errors import InputError
from localeval.reports import Change, Comparison, compare
from localeval.reports.compare import COMPARISON_FORMAT, case_output
from localeval.reports.verdict import NO_DIFFERENCE
from localeval.stats import paired_mean_change

#: A cell of a crafted run: a score (passes at >= 0.5) or "error".
Cell = float | str


def result(metric: str, cell: Cell, lower_is_better: bool = False) -> MetricResult:
    if cell == "error":
        return MetricResult(metric=metric, kind="k", threshold=0.5, error="BackendError: judge down")
    assert isinstance(cell, float)
    passed = cell <= 0.5 if lower_is_better else cell >= 0.5
    return MetricResult(metric=metric, kind="k", score=cell, passed=passed, threshold=0.5,
                        lower_is_better=lower_is_better)


def run(run_id: str, rows: list[tuple[str | None, dict[str, Cell]]], dataset: DatasetSource | None = None,
        outputs: list[str] | None = None, lower_is_better: bool = False) -> RunReport:
    """A run whose cases are ``(name, {metric: cell})`` in order, with ``outputs`` as their actual outputs."""
    cases = [
        CaseResult(index=i, name=name, results=[result(m, c, lower_is_better) for m, c in cells.items()],
                   inputs={"input": f"q{i}", "actual_output": outputs[i]} if outputs else {})
        for i, (name, cells) in enumerate(rows)
    ]
    metrics = list(dict.fromkeys(m for _, cells in rows for m in cells))
    summary = [MetricSummary.of(m, [r for c in cases for r in c.results if r.metric == m]) for m in metrics]
    return RunReport(run_id=run_id, created_at="2026-11-01T00:00:00+00:00", localeval_version="0.1.0",
                     cases=cases, summary=summary, dataset=dataset)


def scores(run_id: str, values: list[float], lower_is_better: bool = False) -> RunReport:
    """A run of cases c0, c1, … with one metric "m" scoring ``values``."""
    return run(run_id, [(f"c{i}", {"m": v}) for i, v in enumerate(values)], lower_is_better=lower_is_better)


def kinds(changes: list[Change]) -> list[tuple[str, str, str | None]]:
    return [(c.kind, c.case, c.metric) for c in changes]


def test_a_run_compared_with_itself_has_no_changes() -> None:
    a = run("a", [("x", {"m": 0.75}), ("y", {"m": "error"})], outputs=["one", "two"])
    comparison = compare(a, a)
    assert comparison.changes == []
    assert not any(case.changed for case in comparison.cases)
    assert comparison.outputs_changed == [] and comparison.gate_failures("any") == []
    assert (comparison.matched_by, comparison.cases_compared) == ("name", 2)
    (m,) = comparison.metrics
    assert (m.compared, m.scored, m.mean_a, m.mean_b, m.verdict) == (2, 1, 0.75, 0.75, NO_DIFFERENCE)
    assert m.mean_change is None  # one case scored in both: no interval


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
    assert comparison.gate_failures("flip") == ["reg: m went from pass to fail", "breaks: m went from pass to error"]
    (m,) = comparison.metrics
    assert (m.compared, m.scored, m.regressions, m.fixes, m.score_changes, m.errored, m.recovered) == (
        7, 4, 1, 1, 1, 1, 1)
    # over the four cases scored in both runs: A .75 .25 .75 .5, B .25 .5 1 .5
    assert (m.mean_a, m.mean_b, m.pass_rate_a, m.pass_rate_b) == (0.5625, 0.5625, 0.75, 0.75)
    assert m.mean_change is None  # four pairs: too few for an interval (stats.MIN_VALUES), so no mean verdict


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


# -- matching ------------------------------------------------------------------------------------


def test_cases_are_matched_by_name_whatever_their_order() -> None:
    a = run("a", [("x", {"m": 1.0}), ("y", {"m": 0.0})])
    b = run("b", [("y", {"m": 0.0}), ("x", {"m": 1.0})])
    comparison = compare(a, b)
    assert (comparison.matched_by, comparison.changes) == ("name", [])
    assert [(c.label, c.index_a, c.index_b) for c in comparison.cases] == [("x", 0, 1), ("y", 1, 0)]


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


def test_cases_of_several_targets_are_matched_by_name_and_target() -> None:
    def targets(run_id: str, cells: dict[tuple[str, str], float]) -> RunReport:
        cases = [CaseResult(index=i, name=name, target=target, results=[result("m", score)])
                 for i, ((name, target), score) in enumerate(cells.items())]
        return RunReport(run_id=run_id, created_at="now", localeval_version="0", cases=cases,
                         summary=[MetricSummary.of("m", [c.results[0] for c in cases])])

    a = targets("a", {("fr", "small"): 1.0, ("fr", "big"): 1.0, ("sum", "small"): 0.0})
    b = targets("b", {("fr", "big"): 0.0, ("fr", "small"): 1.0, ("sum", "big"): 1.0})
    comparison = compare(a, b)
    assert comparison.matched_by == "name"
    assert kinds(comparison.changes) == [("regression", "fr @ big", "m"), ("removed", "sum @ small", None),
                                         ("added", "sum @ big", None)]
    assert [(c.name, c.target) for c in comparison.cases] == [("fr", "small"), ("fr", "big")]


def test_cases_only_in_one_run_are_listed() -> None:
    a = run("a", [("kept", {"m": 1.0}), ("gone", {"m": 1.0})])
    b = run("b", [("new", {"m": 0.0}), ("kept", {"m": 1.0})])
    comparison = compare(a, b)
    assert kinds(comparison.changes) == [("removed", "gone", None), ("added", "new", None)]
    assert (comparison.cases_only_in_a, comparison.cases_only_in_b) == (["gone"], ["new"])
    assert comparison.cases_compared == 1 and comparison.gate_failures("any") == []


def test_unnamed_cases_only_in_one_run_are_matched_by_index() -> None:
    a = run("a", [(None, {"m": 1.0})])
    b = run("b", [(None, {"m": 1.0}), (None, {"m": 0.0})])
    comparison = compare(a, b)
    assert kinds(comparison.changes) == [("added", "#2", None)]


def test_runs_with_no_case_in_common_are_refused_in_one_line() -> None:
    a = run("a", [("x", {"m": 1.0}), ("y", {"m": 1.0})])
    b = run("b", [("p", {"m": 1.0}), ("q", {"m": 1.0}), ("r", {"m": 1.0})])
    with pytest.raises(InputError) as info:
        compare(a, b)
    assert str(info.value) == "runs a (2 cases) and b (3 cases) have no case in common by name: nothing to compare"


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


# -- outputs -------------------------------------------------------------------------------------


def test_an_output_rewritten_with_the_same_scores_is_a_change() -> None:
    """The case of issue 26: v2 rewrote answers, the scores stayed, and compare said nothing changed."""
    rows: list[tuple[str | None, dict[str, Cell]]] = [("dose", {"m": 1.0}), ("capital", {"m": 1.0})]
    a = run("v1", rows, outputs=["Take two pills a day.", "Paris"])
    b = run("v2", rows, outputs=["Take twenty pills at once.", "Paris"])
    comparison = compare(a, b)
    assert comparison.changes == []  # no score moved
    dose, capital = comparison.cases
    assert (dose.changed, dose.output_changed, capital.changed) == (True, True, False)
    assert (dose.output_a, dose.output_b) == ("Take two pills a day.", "Take twenty pills at once.")
    assert [(s.op, s.text) for s in dose.diff] == [
        ("same", "Take "), ("removed", "two"), ("added", "twenty"), ("same", " pills "),
        ("removed", "a day"), ("added", "at once"), ("same", "."),
    ]
    assert capital.diff == [] and comparison.outputs_changed == [dose]


def test_the_output_of_a_conversation_is_its_turns() -> None:
    case = CaseResult(index=0, results=[], inputs={"turns": [{"role": "user", "content": "Hi"},
                                                              {"role": "assistant", "content": "Hello!"}]})
    assert case_output(case) == "user: Hi\nassistant: Hello!"
    assert case_output(CaseResult(index=0, results=[], inputs={"input": "q"})) is None


# -- per metric: the mean change, the flips, the verdict ------------------------------------------


def test_the_numbers_of_a_metric_are_those_of_its_paired_cases() -> None:
    before = [0.9, 0.8, 0.7, 0.6, 0.55, 0.9] * 2
    after = [0.4, 0.45, 0.3, 0.6, 0.5, 0.95] * 2
    (m,) = compare(scores("a", before), scores("b", after)).metrics
    assert (m.scored, m.mean_a, m.mean_b) == (12, statistics.fmean(before), statistics.fmean(after))
    assert (m.pass_rate_a, m.pass_rate_b) == (1.0, 0.5)
    assert (m.regressions, m.fixes) == (6, 0)
    assert m.mcnemar_p == 0.03125  # 6 flips all one way: 2 × (1/2)^6
    expected = paired_mean_change(before, after)
    assert expected is not None and m.mean_change is not None
    assert (m.mean_change.estimate, m.mean_change.low, m.mean_change.high) == tuple(expected)
    assert m.mean_change.estimate == pytest.approx(statistics.fmean(b - a for a, b in zip(before, after)))


#: Twenty cases each; the scores pass at >= 0.5.
STEADY_FALL = ([0.9] * 20, [0.9 - 0.01 * (i % 5 + 1) for i in range(20)])  # every case a bit lower, all still pass
FLIPS_ONLY = ([0.51] * 8 + [0.1] * 6 + [0.9] * 6, [0.49] * 8 + [0.4] * 6 + [0.6] * 6)  # 8 pass → fail; mean ~ 0
BOTH_WAYS = ([0.6, 0.4] * 10, [0.7, 0.3] * 10)  # up and down alike, no flip
MIXED = ([0.51] * 10 + [0.1] * 10, [0.49] * 10 + [0.2] * 10)  # the mean rose; 10 cases fell below the threshold


@pytest.mark.parametrize(("pair", "verdict", "mean_speaks", "p_below"), [
    (STEADY_FALL, "worse", True, False),
    ((STEADY_FALL[1], STEADY_FALL[0]), "better", True, False),
    (FLIPS_ONLY, "worse", False, True),
    ((FLIPS_ONLY[1], FLIPS_ONLY[0]), "better", False, True),
    (BOTH_WAYS, NO_DIFFERENCE, False, False),
    (MIXED, "mixed", True, True),
])
def test_the_verdict_follows_the_documented_rule(pair: tuple[list[float], list[float]], verdict: str,
                                                  mean_speaks: bool, p_below: bool) -> None:
    (m,) = compare(scores("a", pair[0]), scores("b", pair[1])).metrics
    assert m.mean_change is not None
    assert (m.mean_change.excludes_zero(), m.mcnemar_p < 0.05, m.verdict) == (mean_speaks, p_below, verdict)


def test_a_metric_that_passes_low_is_worse_when_its_scores_rise() -> None:
    before, after = STEADY_FALL  # lower is better: falling scores are better, rising ones worse
    assert compare(scores("a", before, True), scores("b", after, True)).metrics[0].verdict == "better"
    (m,) = compare(scores("a", after, True), scores("b", before, True)).metrics
    assert (m.lower_is_better, m.verdict, m.worse_beyond_interval) == (True, "worse", True)


def test_the_reason_names_what_the_verdict_rests_on() -> None:
    (m,) = compare(scores("a", FLIPS_ONLY[0]), scores("b", FLIPS_ONLY[1])).metrics
    assert m.mean_change is not None
    change = m.mean_change
    assert m.reason() == (f"mean {change.estimate:+.3f}, 95% CI {change.low:+.3f} to {change.high:+.3f}, includes 0; "
                          "0 fail → pass, 8 pass → fail, McNemar p = 0.00781")
    (few,) = compare(scores("a", [0.9]), scores("b", [0.1])).metrics
    assert few.reason() == ("1 case scored in both runs: too few for an interval; 0 fail → pass, 1 pass → fail, "
                            "McNemar p = 1")


# -- the regression gates ------------------------------------------------------------------------


def test_the_flip_gate_fails_on_a_pass_that_fails_or_errors_and_the_mean_gate_on_a_worse_mean() -> None:
    flips = compare(scores("a", FLIPS_ONLY[0]), scores("b", FLIPS_ONLY[1]))
    assert flips.gate_failures("mean") == []
    assert flips.gate_failures("flip")[:2] == ["c0: m went from pass to fail", "c1: m went from pass to fail"]
    assert len(flips.gate_failures("flip")) == 8 and len(flips.gate_failures("any")) == 8
    falls = compare(scores("a", STEADY_FALL[0]), scores("b", STEADY_FALL[1]))
    (m,) = falls.metrics
    assert falls.gate_failures("flip") == []
    assert falls.gate_failures("mean") == falls.gate_failures("any") == [
        f"m: the mean got worse beyond its 95% interval ({m.reason()})"]
    errored = compare(run("a", [("x", {"m": 0.9}), ("y", {"m": 0.1})]), run("b", [("x", {"m": "error"}),
                                                                                   ("y", {"m": "error"})]))
    assert errored.gate_failures("flip") == ["x: m went from pass to error"]  # y failed before: no flip
    assert compare(scores("a", BOTH_WAYS[0]), scores("b", BOTH_WAYS[1])).gate_failures("any") == []


# -- which data the runs judged ------------------------------------------------------------------

FILE_1 = DatasetSource(path="cases.jsonl", sha256="1" * 64)
FILE_1_MOVED = DatasetSource(path="elsewhere/cases.jsonl", sha256="1" * 64)
FILE_2 = DatasetSource(path="cases-v2.jsonl", sha256="2" * 64)
UNNAMED: list[tuple[str | None, dict[str, Cell]]] = [(None, {"m": 0.75}), (None, {"m": 0.25})]


def test_runs_over_the_same_data_have_no_note_wherever_the_file_was() -> None:
    comparison = compare(run("a", UNNAMED, FILE_1), run("b", UNNAMED, FILE_1_MOVED))
    assert (comparison.same_dataset, comparison.dataset_note()) == (True, None)


def test_runs_over_different_data_are_still_matched_by_name_with_a_warning() -> None:
    a = run("a", [("x", {"m": 0.75}), ("y", {"m": 0.25})], FILE_1)
    b = run("b", [("y", {"m": 0.25}), ("x", {"m": 0.75})], FILE_2)
    comparison = compare(a, b)
    assert (comparison.same_dataset, comparison.matched_by, comparison.cases_compared) == (False, "name", 2)
    assert comparison.dataset_note() == ("warning", (
        f"the runs judged different datasets (A: 2 cases of cases.jsonl, sha256 {'1' * 64}; "
        f"B: 2 cases of cases-v2.jsonl, sha256 {'2' * 64}); each row compares the cases at the same name."))


def test_an_older_report_without_its_dataset_cannot_be_checked() -> None:
    comparison = compare(run("a", UNNAMED), run("b", UNNAMED, FILE_1))
    assert comparison.same_dataset is None
    assert comparison.dataset_note() == ("note", "cannot tell whether both runs judged the same dataset: the report "
                                                 "of A does not record it (written by an older localeval).")


def test_without_dataset_records_a_different_case_count_is_still_a_difference() -> None:
    comparison = compare(run("a", UNNAMED), run("b", UNNAMED[:1]))
    assert comparison.same_dataset is False
    assert comparison.dataset_note() == ("warning", "the runs judged different datasets (A: 2 cases; B: 1 case); "
                                                    "each row compares the cases at the same position.")


# -- the JSON ------------------------------------------------------------------------------------


def test_the_json_is_versioned_and_reads_back_as_the_same_comparison() -> None:
    a = run("a", [("x", {"m": 1.0}), ("y", {"m": 0.75})], FILE_1, outputs=["Paris", "Rome"])
    b = run("b", [("x", {"m": 0.25}), ("y", {"m": 0.75})], FILE_1, outputs=["Lyon", "Rome"])
    comparison = compare(a, b)
    dumped = json.loads(comparison.to_json())
    assert list(dumped)[:2] == ["format_version", "localeval_version"]
    assert dumped["format_version"] == COMPARISON_FORMAT == 1
    x = dumped["cases"][0]
    assert (x["label"], x["output_a"], x["output_b"]) == ("x", "Paris", "Lyon")
    assert x["diff"] == [{"op": "removed", "text": "Paris"}, {"op": "added", "text": "Lyon"}]
    assert x["results"] == [{"metric": "m", "score_a": 1.0, "score_b": 0.25, "passed_a": True, "passed_b": False,
                             "error_a": None, "error_b": None, "kind": "regression"}]
    assert dumped["metrics"][0]["verdict"] == NO_DIFFERENCE
    assert Comparison.model_validate_json(comparison.to_json()) == comparison
